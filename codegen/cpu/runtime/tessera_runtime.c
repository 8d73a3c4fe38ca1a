/* The host kernel runtime: a persistent thread pool and aligned allocation (see
 * tessera_runtime.h). One parallel loop runs on the pool at a time. Its iterations are cut into
 * one contiguous chunk per thread, handed out one by one from each chunk through an atomic
 * counter: a thread runs its own chunk first, then takes what is left of the others'. So a
 * thread gets the same part of a loop on every call, and the data that part touches (rows of
 * the output, panels of an operand) stays in its core's caches from one call, or one parallel
 * loop of a kernel, to the next; and a thread that comes late or runs slow has its share taken
 * by the others, so uneven iterations still balance themselves.
 *
 * Waiting spins briefly before it sleeps. Waking a thread asleep on a futex takes tens of
 * microseconds (more on a virtual machine, where the idle vCPU has halted), which is as long as
 * a whole 256^3 matmul; kernels called back to back (and the several parallel loops of one
 * kernel) find the workers still spinning. The spin is bounded in time and ends as soon as
 * another thread has had the CPU (see spin_until), so on a loaded machine a waiting thread soon
 * sleeps as it did before. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tessera_runtime.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TESSERA_WEAK __attribute__((weak))
#define TESSERA_MAX_THREADS 256
/* How long a thread waiting for work (a worker) or for the other threads to finish (the caller)
 * checks before it sleeps. */
#define TESSERA_SPIN_NS 100000
/* A pause between two checks this long means another thread had the CPU (see spin_until). */
#define TESSERA_PREEMPTED_NS 20000

/* One thread's part of a loop: iterations [next, end) not yet handed out. */
typedef struct tessera_rt_chunk {
    int32_t next, end;
    char padding[56]; /* a cache line each: the threads take from their own chunks at once */
} tessera_rt_chunk;

/* The loop the pool is running. The chunks' `next` and `error` are touched atomically; the
 * rest is set by the caller before the workers are woken and is read-only while the loop runs. */
typedef struct tessera_rt_job {
    tessera_rt_task_fn task;
    void *closure;
    int32_t min, extent;
    int32_t error;
    int32_t chunks;
    tessera_rt_chunk chunk[TESSERA_MAX_THREADS];
} tessera_rt_job;

typedef struct tessera_rt_pool {
    pthread_mutex_t mutex;     /* guards everything below except the job's atomics */
    pthread_cond_t wake;       /* a new job was posted (generation changed) */
    pthread_cond_t done;       /* a thread left the job */
    pthread_mutex_t job_mutex; /* one job at a time when several user threads call in */
    int32_t num_threads;       /* the setting, caller included; 0 = not yet decided */
    int32_t workers_started;
    uint64_t generation; /* written under the mutex, read atomically by spinning workers */
    int job_open;        /* workers may still join the current job */
    int32_t active;      /* threads (caller included) inside the current job; as generation */
    tessera_rt_job job;
} tessera_rt_pool;

/* Tentative definitions are common symbols in old C dialects; the explicit initializer keeps
 * it a single weak definition shared by every copy of the runtime that is linked in. */
TESSERA_WEAK tessera_rt_pool tessera_rt_pool_state = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, {0}};

/* Set on pool workers and on a caller while it runs a job's tasks: nested loops run serially. */
static __thread int tessera_rt_in_task = 0;

static int32_t default_num_threads(void) {
    const char *env = getenv("TESSERA_NUM_THREADS");
    if (env && *env) {
        int n = atoi(env);
        if (n > 0) return n > TESSERA_MAX_THREADS ? TESSERA_MAX_THREADS : n;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    return cores > TESSERA_MAX_THREADS ? TESSERA_MAX_THREADS : (int32_t)cores;
}

/* Runs the iterations of chunk `self` (the caller is 0, worker w is w + 1), then those left in
 * the other chunks. Every iteration is handed out once by its chunk's counter, whoever takes it. */
static void run_tasks(tessera_rt_job *job, int32_t self) {
    for (int32_t c = 0; c < job->chunks; ++c) {
        tessera_rt_chunk *chunk = &job->chunk[(self + c) % job->chunks];
        for (;;) {
            int32_t i = __atomic_fetch_add(&chunk->next, 1, __ATOMIC_RELAXED);
            if (i >= chunk->end) break;
            /* After an error the remaining iterations are skipped, not run. */
            if (__atomic_load_n(&job->error, __ATOMIC_RELAXED) != 0) continue;
            int32_t rc = job->task(job->closure, job->min + i);
            if (rc != 0) {
                int32_t expected = 0;
                __atomic_compare_exchange_n(&job->error, &expected, rc, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
            }
        }
    }
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Takes a mutex that is only ever held for a few instructions, spinning on trylock first. A
 * thread that blocks in pthread_mutex_lock sleeps on a futex, and waking it takes as long as
 * waking a sleeping worker (tens to hundreds of microseconds on a virtual machine). A worker
 * that sees a new job while spinning does so within nanoseconds of the caller posting it, while
 * the caller still holds the mutex; with a plain lock it slept there every time, arrived after
 * the caller had run the whole loop alone, and 256^3 on 2 threads took as long as on 1. */
static void lock_briefly_held(pthread_mutex_t *mutex) {
    for (int i = 0; i < 4096; ++i) {
        if (pthread_mutex_trylock(mutex) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(mutex);
}

static int new_generation(tessera_rt_pool *pool, uint64_t seen) {
    return __atomic_load_n(&pool->generation, __ATOMIC_ACQUIRE) != seen;
}

static int job_finished(tessera_rt_pool *pool, uint64_t unused) {
    (void)unused;
    return __atomic_load_n(&pool->active, __ATOMIC_ACQUIRE) == 0;
}

/* Called without the mutex: checks ready(pool, arg) until it holds or TESSERA_SPIN_NS have
 * passed, and returns whether it holds. When the time between two checks is long, another
 * thread ran on this CPU: the machine is loaded, and a spinning thread there is only
 * rescheduled at the end of the other's time slice, while one asleep on a futex preempts it
 * when woken. So it stops spinning and lets the caller sleep.
 *
 * It does not yield between checks: sched_yield hands the CPU to any runnable thread, even a
 * nice 19 build, for a whole time slice, after which the check above sends the thread to sleep.
 * With two nice 19 busy loops beside it on the 2-core VM, 2 threads, medians of 8 interleaved
 * repetitions: 256³ 0.36 ms with the yield, 0.28 ms without (Halide's manual schedule 0.32);
 * 512³ 3.12 and 2.08 ms (Halide 2.47); 1024³ 21.0 and 16.9 ms (OpenBLAS 17.8). Idle, the two
 * are alike. */
static int spin_until(int (*ready)(tessera_rt_pool *, uint64_t), tessera_rt_pool *pool, uint64_t arg) {
    const uint64_t start = now_ns();
    uint64_t last = start;
    for (;;) {
        if (ready(pool, arg)) return 1;
        for (int i = 0; i < 16; ++i) cpu_relax();
        const uint64_t now = now_ns();
        if (now - start > TESSERA_SPIN_NS || now - last > TESSERA_PREEMPTED_NS) return ready(pool, arg);
        last = now;
    }
}

static void *worker_main(void *arg) {
    tessera_rt_pool *pool = &tessera_rt_pool_state;
    int32_t worker_index = (int32_t)(intptr_t)arg; /* 0-based; the caller is not a worker */
    tessera_rt_in_task = 1;
    lock_briefly_held(&pool->mutex);
    /* Generations start at 1, so a worker created while its first job is being posted joins it. */
    uint64_t seen = 0;
    /* Whether this worker is within the thread-count setting of the last job it was woken for:
     * then the next job is likely soon. Also when it came too late to join that job (its
     * iterations were all taken): sleeping then would make it late again for the next. */
    int eligible = 0;
    for (;;) {
        if (pool->generation == seen) {
            if (eligible) {
                pthread_mutex_unlock(&pool->mutex);
                spin_until(new_generation, pool, seen);
                lock_briefly_held(&pool->mutex);
            }
            while (pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->mutex);
        }
        seen = pool->generation;
        /* Workers beyond the current setting stay asleep. */
        eligible = worker_index + 1 < pool->num_threads;
        if (!pool->job_open || !eligible) continue;
        __atomic_store_n(&pool->active, pool->active + 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&pool->mutex);
        run_tasks(&pool->job, worker_index + 1);
        lock_briefly_held(&pool->mutex);
        __atomic_store_n(&pool->active, pool->active - 1, __ATOMIC_RELEASE);
        if (pool->active == 0) pthread_cond_broadcast(&pool->done);
    }
    return NULL;
}

TESSERA_WEAK int32_t tessera_rt_parallel_for(tessera_rt_task_fn task, void *closure, int32_t min, int32_t extent) {
    tessera_rt_pool *pool = &tessera_rt_pool_state;
    if (extent <= 0) return 0;
    int32_t threads = tessera_rt_get_num_threads();
    if (tessera_rt_in_task || threads <= 1 || extent == 1) {
        for (int32_t i = 0; i < extent; ++i) {
            int32_t rc = task(closure, min + i);
            if (rc != 0) return rc;
        }
        return 0;
    }

    pthread_mutex_lock(&pool->job_mutex);
    lock_briefly_held(&pool->mutex);
    while (pool->workers_started < threads - 1) {
        pthread_t thread;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attr, worker_main, (void *)(intptr_t)pool->workers_started);
        pthread_attr_destroy(&attr);
        if (failed) break; /* fewer workers than asked: the loop still completes */
        pool->workers_started++;
    }
    pool->job.task = task;
    pool->job.closure = closure;
    pool->job.min = min;
    pool->job.extent = extent;
    /* A chunk per thread of the setting, even when fewer workers could be started (then the
     * others take the missing ones' chunks). */
    pool->job.chunks = threads < extent ? threads : extent;
    for (int32_t c = 0; c < pool->job.chunks; ++c) {
        pool->job.chunk[c].next = (int32_t)((int64_t)extent * c / pool->job.chunks);
        pool->job.chunk[c].end = (int32_t)((int64_t)extent * (c + 1) / pool->job.chunks);
    }
    pool->job.error = 0;
    pool->job_open = 1;
    __atomic_store_n(&pool->active, 1, __ATOMIC_RELAXED);
    /* Release: a worker that sees the new generation while spinning sees the job too. */
    __atomic_store_n(&pool->generation, pool->generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mutex);

    tessera_rt_in_task = 1;
    run_tasks(&pool->job, 0);
    tessera_rt_in_task = 0;

    lock_briefly_held(&pool->mutex);
    pool->job_open = 0;
    __atomic_store_n(&pool->active, pool->active - 1, __ATOMIC_RELAXED);
    if (pool->active > 0) {
        pthread_mutex_unlock(&pool->mutex);
        spin_until(job_finished, pool, 0);
        lock_briefly_held(&pool->mutex);
        while (pool->active > 0) pthread_cond_wait(&pool->done, &pool->mutex);
    }
    int32_t error = pool->job.error;
    pthread_mutex_unlock(&pool->mutex);
    pthread_mutex_unlock(&pool->job_mutex);
    return error;
}

TESSERA_WEAK void tessera_rt_set_num_threads(int32_t n) {
    tessera_rt_pool *pool = &tessera_rt_pool_state;
    lock_briefly_held(&pool->mutex);
    pool->num_threads = n <= 0 ? default_num_threads() : (n > TESSERA_MAX_THREADS ? TESSERA_MAX_THREADS : n);
    pthread_mutex_unlock(&pool->mutex);
}

TESSERA_WEAK int32_t tessera_rt_get_num_threads(void) {
    tessera_rt_pool *pool = &tessera_rt_pool_state;
    lock_briefly_held(&pool->mutex);
    if (pool->num_threads == 0) pool->num_threads = default_num_threads();
    int32_t n = pool->num_threads;
    pthread_mutex_unlock(&pool->mutex);
    return n;
}

TESSERA_WEAK void *tessera_rt_malloc(int64_t bytes) {
    if (bytes < 0) return NULL;
    void *p = NULL;
    /* Round up so that a vector access at the end of the buffer stays inside it. */
    size_t size = (size_t)((bytes + 63) & ~(int64_t)63);
    if (size == 0) size = 64;
    if (posix_memalign(&p, 64, size) != 0) return NULL;
    return p;
}

TESSERA_WEAK void tessera_rt_free(void *p) { free(p); }
