#ifndef TESSERA_CHIPRT_H
#define TESSERA_CHIPRT_H
/* libtessera_chiprt: loads a Tessera chip artifact (a compiled chip kernel, chip_artifact.h)
 * and runs it on chipsim with the caller's buffers. Plain C; link with -ltessera_chiprt.
 *
 *   tessera_chip_kernel_t *k;
 *   if (tessera_chip_load("out/mm.tchip", "tsp-mini", &k)) puts(tessera_chip_last_error());
 *   const tessera_buffer_t *in[2] = {&A, &B};
 *   tessera_buffer_t *out[1] = {&C};
 *   tessera_chip_report_t report;
 *   int code = tessera_chip_run(k, in, out, &report);   (0, or a code; see below)
 *   tessera_chip_free(k);
 *
 * Every failure is a return code (TESSERA_ERROR_KIND(code) is a TESSERA_ERROR_* kind) with a
 * message naming the argument or the file, never a crash. */
#include <stddef.h>
#include <stdint.h>

#include "tessera/codegen/buffer_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds beyond the buffer ABI's, for artifacts. */
#define TESSERA_ERROR_ARTIFACT 8  /* not an artifact, truncated, corrupt, or an unsupported version */
#define TESSERA_ERROR_TARGET 9    /* the artifact is for another target than the one asked for */
#define TESSERA_ERROR_IO 10       /* the file cannot be read */
#define TESSERA_ERROR_RUNTIME 11  /* chipsim refused the program, or another internal failure */
#define TESSERA_ERROR_ARGUMENT 12 /* a NULL kernel, name or report pointer */

typedef struct tessera_chip_kernel tessera_chip_kernel_t;

/* What one run cost on the simulated chip. */
typedef struct tessera_chip_report_t {
    int64_t cycles;              /* kernel cycles (host I/O apart) */
    int64_t host_io_cycles;      /* cycles moving inputs in and outputs out over the host link */
    int64_t macs;                /* multiply-accumulates executed */
    double utilisation;          /* achieved MACs per cycle / the target's peak (0..1) */
    double problem_bound_cycles; /* the algorithm's lower bound on this target */
    char target[64];             /* the target's name */
} tessera_chip_report_t;

/* Loads an artifact file (or bytes). expected_target: the target name the caller wants, or
 * NULL for any. On success *kernel is set (free it with tessera_chip_free). */
int tessera_chip_load(const char *path, const char *expected_target, tessera_chip_kernel_t **kernel);
int tessera_chip_load_memory(const void *bytes, size_t size, const char *expected_target, tessera_chip_kernel_t **kernel);
void tessera_chip_free(tessera_chip_kernel_t *kernel);

/* About a loaded kernel (static storage owned by the kernel; NULL or -1 for a NULL kernel). */
const char *tessera_chip_name(const tessera_chip_kernel_t *kernel);
const char *tessera_chip_target(const tessera_chip_kernel_t *kernel);
const char *tessera_chip_manifest(const tessera_chip_kernel_t *kernel);
int tessera_chip_num_inputs(const tessera_chip_kernel_t *kernel);
int tessera_chip_num_outputs(const tessera_chip_kernel_t *kernel);

/* Runs the kernel: inputs and outputs in the manifest's order, dense row-major, of the dtypes
 * and shapes it lists. Outputs are written only on success. report may be NULL. Thread-safe. */
int tessera_chip_run(tessera_chip_kernel_t *kernel, const tessera_buffer_t *const *inputs, tessera_buffer_t *const *outputs,
                     tessera_chip_report_t *report);

/* The message of the latest failure on this thread (never NULL). */
const char *tessera_chip_last_error(void);
/* Words for a code: the latest failure's message when it returned this code, else the kind's. */
const char *tessera_chip_error_message(int code);

/* For generated chip libraries: runs the artifact `bytes` (loaded once into *slot, which must
 * start NULL) with args = inputs then outputs (tessera_buffer_t pointers). */
int tessera_chip_library_call(const void *bytes, uint64_t size, const char *expected_target, void **slot, void **args);
/* The report of the latest successful call through `slot` (zeros before any). */
const tessera_chip_report_t *tessera_chip_library_report(void **slot);

#ifdef __cplusplus
}
#endif

#endif
