#ifndef TESSERA_CPU_RUNTIME_H
#define TESSERA_CPU_RUNTIME_H
/* The runtime that generated host kernels call: a thread pool for parallel loops and aligned
 * heap allocation. Plain C with pthreads, so an ahead-of-time kernel library (which embeds a
 * copy of this runtime's object file) links into a C program with no C++ runtime. Every
 * definition is weak: several kernel libraries and libtessera_codegen may each carry a copy,
 * and the linker keeps one. */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One iteration of a parallel loop: returns 0, or a kernel error code that stops the loop. */
typedef int32_t (*tessera_rt_task_fn)(void *closure, int32_t index);

/** Runs task(closure, i) for every i in [min, min + extent) on the pool's threads (the caller
 * takes part). Returns 0, or the first nonzero code a task returned. A parallel loop started
 * from inside a task runs serially on that task's thread. */
int32_t tessera_rt_parallel_for(tessera_rt_task_fn task, void *closure, int32_t min, int32_t extent);

/** Sets how many threads parallel loops use (the caller included); n <= 0 restores the
 * default: $TESSERA_NUM_THREADS if set, else the number of online cores. */
void tessera_rt_set_num_threads(int32_t n);

/** The number of threads parallel loops use. */
int32_t tessera_rt_get_num_threads(void);

/** A 64-byte aligned allocation of at least `bytes` bytes, or NULL when memory is exhausted. */
void *tessera_rt_malloc(int64_t bytes);

/** Frees what tessera_rt_malloc returned (NULL is ignored). */
void tessera_rt_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
