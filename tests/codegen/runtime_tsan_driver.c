/* The host thread pool (codegen/cpu/runtime/tessera_runtime.c) under ThreadSanitizer: loops of
 * every extent up to 97 at 1 to 4 threads, back to back and after pauses that put the workers
 * to sleep, each iteration run exactly once; an error from one iteration comes back from the
 * loop. ThreadSanitizer reports any data race in the pool's hand-off (the spinning workers,
 * the per-thread chunks, the mutex taken by trylock) and fails the test. */
#include <stdio.h>
#include <unistd.h>

#include "tessera_runtime.h"

static int runs[128];

static int32_t count_run(void *closure, int32_t i) {
    (void)closure;
    __atomic_fetch_add(&runs[i], 1, __ATOMIC_RELAXED);
    return 0;
}

static int32_t fail_at_three(void *closure, int32_t i) {
    (void)closure;
    return i == 3 ? 7 : 0;
}

int main(void) {
    for (int threads = 1; threads <= 4; ++threads) {
        tessera_rt_set_num_threads(threads);
        for (int loop = 0; loop < 2000; ++loop) {
            const int extent = 1 + loop % 97;
            for (int i = 0; i < extent; ++i) runs[i] = 0;
            if (tessera_rt_parallel_for(count_run, NULL, 0, extent) != 0) {
                printf("%d threads, loop %d: an error from a loop that has none\n", threads, loop);
                return 1;
            }
            for (int i = 0; i < extent; ++i)
                if (runs[i] != 1) {
                    printf("%d threads, loop %d: iteration %d ran %d times\n", threads, loop, i, runs[i]);
                    return 1;
                }
            if (loop % 400 == 399) usleep(2000); /* longer than the workers spin */
        }
        if (tessera_rt_parallel_for(fail_at_three, NULL, 0, 16) != 7) {
            printf("%d threads: the failing iteration's code did not come back\n", threads);
            return 1;
        }
    }
    printf("every iteration ran once at 1 to 4 threads\n");
    return 0;
}
