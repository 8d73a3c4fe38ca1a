/* Calls the generated kernels through their C headers: fills inputs with a deterministic
 * pattern, runs matmul, conv2d and softmax, writes inputs and outputs as .npy files into the
 * directory given, checks that bad arguments come back as error codes, and writes each
 * library's provenance (what it was compiled from, how fast it ran) as <library>.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_conv2d.h"
#include "kl_matmul.h"
#include "kl_matmul_chip.h"
#include "kl_matmul_chip_provenance.h"
#include "kl_matmul_custom.h"
#include "kl_matmul_npu.h"
#include "kl_matmul_npu_provenance.h"
#include "kl_matmul_provenance.h"
#include "kl_matmul_rows.h"
#include "kl_matmul_rows_provenance.h"
#include "kl_softmax.h"

static float *make(int64_t n, unsigned seed) {
    float *p = (float *)malloc((size_t)n * sizeof(float));
    unsigned s = seed;
    for (int64_t i = 0; i < n; ++i) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

/* Writes a library's provenance JSON (its <name>_provenance() text) as DIR/<name>.provenance.json. */
static int save_provenance(const char *dir, const char *name, const char *json) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.provenance.json", dir, name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(json, f) < 0) {
        fprintf(stderr, "cannot write %s\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

static tessera_buffer_t buffer(float *data, const int64_t *shape, int dims) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data;
    b.shape = shape;
    b.strides = NULL;
    b.dimensions = dims;
    b.type_code = TESSERA_TYPE_FLOAT;
    b.type_bits = 32;
    return b;
}

/* A float32 .npy file (format version 1.0). */
static int save_npy(const char *dir, const char *name, const float *data, const int64_t *shape, int dims) {
    char path[4096], header[256], dims_text[128] = "";
    int64_t n = 1;
    for (int d = 0; d < dims; ++d) {
        char part[32];
        snprintf(part, sizeof part, "%lld%s", (long long)shape[d], dims == 1 ? "," : (d + 1 < dims ? ", " : ""));
        strcat(dims_text, part);
        n *= shape[d];
    }
    snprintf(path, sizeof path, "%s/%s.npy", dir, name);
    int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }", dims_text);
    int total = 10 + len + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    unsigned short hlen = (unsigned short)(len + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hlen & 0xff, f);
    fputc(hlen >> 8, f);
    fwrite(header, 1, (size_t)len, f);
    for (int i = 0; i < pad; ++i) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, sizeof(float), (size_t)n, f);
    return fclose(f) != 0;
}

static int expect_error(int code, int kind, const char *what, const char *message) {
    if (TESSERA_ERROR_KIND(code) != kind) {
        fprintf(stderr, "%s: expected error kind %d, got code %d (%s)\n", what, kind, code, message);
        return 1;
    }
    printf("%s: error as expected: %s\n", what, message);
    return 0;
}

/* Runs a chip library's matmul C[96, 80] = A[96, 64] · B[64, 80], saves C as <output>.npy and
 * checks that a wrong shape and a wrong type are error codes. Returns the number of failures. */
typedef int (*matmul_fn)(const tessera_buffer_t *, const tessera_buffer_t *, tessera_buffer_t *);
static int run_chip_matmul(const char *dir, const char *output, matmul_fn kernel, const char *(*error_message)(int),
                           const tessera_chip_report_t *(*last_report)(void), float *a, float *b) {
    const int64_t a_shape[2] = {96, 64}, b_shape[2] = {64, 80}, c_shape[2] = {96, 80}, bad_shape[2] = {96, 63};
    float *c = make(96 * 80, 9);
    tessera_buffer_t A = buffer(a, a_shape, 2), B = buffer(b, b_shape, 2), C = buffer(c, c_shape, 2);
    int failures = 0, code = kernel(&A, &B, &C);
    if (code) {
        fprintf(stderr, "%s failed: %s\n", output, error_message(code));
        free(c);
        return 1;
    }
    const tessera_chip_report_t *report = last_report();
    printf("%s on %s: %lld cycles, utilisation %.3f\n", output, report->target, (long long)report->cycles, report->utilisation);
    if (report->cycles <= 0) failures += 1;
    failures += save_npy(dir, output, c, c_shape, 2);
    tessera_buffer_t wrong_shape = buffer(a, bad_shape, 2);
    code = kernel(&wrong_shape, &B, &C);
    failures += expect_error(code, TESSERA_ERROR_SHAPE, "chip: wrong shape", error_message(code));
    tessera_buffer_t wrong_type = A;
    wrong_type.type_code = TESSERA_TYPE_INT;
    code = kernel(&wrong_type, &B, &C);
    failures += expect_error(code, TESSERA_ERROR_TYPE, "chip: int32 buffer", error_message(code));
    free(c);
    return failures;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    int failures = 0;

    /* matmul: C[96, 80] = A[96, 64] · B[64, 80] */
    const int64_t a_shape[2] = {96, 64}, b_shape[2] = {64, 80}, c_shape[2] = {96, 80};
    float *a = make(96 * 64, 1), *b = make(64 * 80, 2), *c = make(96 * 80, 3);
    tessera_buffer_t A = buffer(a, a_shape, 2), B = buffer(b, b_shape, 2), C = buffer(c, c_shape, 2);
    int code = kl_matmul(&A, &B, &C);
    if (code) {
        fprintf(stderr, "kl_matmul failed: %s\n", kl_matmul_error_message(code));
        return 1;
    }
    failures += save_npy(dir, "matmul_A", a, a_shape, 2) + save_npy(dir, "matmul_B", b, b_shape, 2) +
                save_npy(dir, "matmul_C", c, c_shape, 2);

    /* The same matmul on the simulated chips, through the same signature: tsp-mini, npu-edge
     * and tsp-custom (tsp-mini's hardware from this project's targets/tsp-custom.json). */
    failures += run_chip_matmul(dir, "matmul_chip_C", kl_matmul_chip, kl_matmul_chip_error_message, kl_matmul_chip_last_report, a, b);
    failures += run_chip_matmul(dir, "matmul_npu_C", kl_matmul_npu, kl_matmul_npu_error_message, kl_matmul_npu_last_report, a, b);
    failures += run_chip_matmul(dir, "matmul_custom_C", kl_matmul_custom, kl_matmul_custom_error_message, kl_matmul_custom_last_report, a, b);

    /* One entry point for any M in 1..96 (kl_matmul_rows): the first M rows of A at several M,
     * each call going to the smallest of the kernels for M = 8, 32, 96 that covers it. */
    const int64_t rows[] = {1, 5, 8, 9, 32, 61, 96};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; ++i) {
        const int64_t m = rows[i], rows_a[2] = {m, 64}, rows_c[2] = {m, 80};
        float *c_rows = make(m * 80, 10);
        tessera_buffer_t A_rows = buffer(a, rows_a, 2), C_rows = buffer(c_rows, rows_c, 2);
        code = kl_matmul_rows(&A_rows, &B, &C_rows);
        if (code) {
            fprintf(stderr, "kl_matmul_rows M=%lld failed: %s\n", (long long)m, kl_matmul_rows_error_message(code));
            return 1;
        }
        printf("kl_matmul_rows M=%lld -> %s\n", (long long)m, kl_matmul_rows_dispatch(&m));
        char name[64];
        snprintf(name, sizeof name, "matmul_rows_C_%lld", (long long)m);
        failures += save_npy(dir, name, c_rows, rows_c, 2);
        free(c_rows);
    }
    const int64_t rows_beyond_a[2] = {97, 64}, rows_beyond_c[2] = {97, 80};
    tessera_buffer_t A_beyond = buffer(a, rows_beyond_a, 2), C_beyond = buffer(c, rows_beyond_c, 2);
    code = kl_matmul_rows(&A_beyond, &B, &C_beyond);
    failures += expect_error(code, TESSERA_ERROR_SHAPE, "rows: M = 97", kl_matmul_rows_error_message(code));

    /* conv2d NCHW: Y[1, 16, 16, 16] = conv(X[1, 8, 16, 16], W[16, 8, 3, 3]), padding 1 */
    const int64_t x_shape[4] = {1, 8, 16, 16}, w_shape[4] = {16, 8, 3, 3}, y_shape[4] = {1, 16, 16, 16};
    float *x = make(8 * 16 * 16, 4), *w = make(16 * 8 * 9, 5), *y = make(16 * 16 * 16, 6);
    tessera_buffer_t X = buffer(x, x_shape, 4), Wt = buffer(w, w_shape, 4), Y = buffer(y, y_shape, 4);
    code = kl_conv2d(&X, &Wt, &Y);
    if (code) {
        fprintf(stderr, "kl_conv2d failed: %s\n", kl_conv2d_error_message(code));
        return 1;
    }
    failures += save_npy(dir, "conv2d_X", x, x_shape, 4) + save_npy(dir, "conv2d_W", w, w_shape, 4) +
                save_npy(dir, "conv2d_Y", y, y_shape, 4);

    /* softmax over the rows of S[16, 100] */
    const int64_t s_shape[2] = {16, 100};
    float *s = make(16 * 100, 7), *p = make(16 * 100, 8);
    tessera_buffer_t S = buffer(s, s_shape, 2), P = buffer(p, s_shape, 2);
    code = kl_softmax(&S, &P);
    if (code) {
        fprintf(stderr, "kl_softmax failed: %s\n", kl_softmax_error_message(code));
        return 1;
    }
    failures += save_npy(dir, "softmax_X", s, s_shape, 2) + save_npy(dir, "softmax_Y", p, s_shape, 2);

    /* Misuse is an error code with a message, never a crash. */
    code = kl_matmul(NULL, &B, &C);
    failures += expect_error(code, TESSERA_ERROR_NULL_BUFFER, "NULL buffer", kl_matmul_error_message(code));
    tessera_buffer_t wrong_type = A;
    wrong_type.type_code = TESSERA_TYPE_INT;
    code = kl_matmul(&wrong_type, &B, &C);
    failures += expect_error(code, TESSERA_ERROR_TYPE, "int32 buffer", kl_matmul_error_message(code));
    const int64_t bad_shape[2] = {95, 64};
    tessera_buffer_t wrong_shape = buffer(a, bad_shape, 2);
    code = kl_matmul(&wrong_shape, &B, &C);
    failures += expect_error(code, TESSERA_ERROR_SHAPE, "wrong shape", kl_matmul_error_message(code));

    /* Each library says what it holds: the compiler, the target's hash, each kernel's schedule,
     * tuning record and measured cycles (chips) or median time (host). */
    failures += save_provenance(dir, "kl_matmul", kl_matmul_provenance());
    failures += save_provenance(dir, "kl_matmul_chip", kl_matmul_chip_provenance());
    failures += save_provenance(dir, "kl_matmul_npu", kl_matmul_npu_provenance());
    failures += save_provenance(dir, "kl_matmul_rows", kl_matmul_rows_provenance());

    free(a), free(b), free(c), free(x), free(w), free(y), free(s), free(p);
    if (failures) fprintf(stderr, "%d failures\n", failures);
    else printf("kernel_demo: all kernels ran\n");
    return failures ? 1 : 0;
}
