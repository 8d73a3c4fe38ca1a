#pragma once
// The one-spec library of `tessera gen-lib` and its plain C consumer, shared by the test that
// runs the build tree's CLI (tests/apps/test_cli_gen_lib.cpp) and the one that runs an installed
// package's (tests/codegen/aot_kernel_library_test.cpp): the spec, the consumer's source, its
// inputs and the reference evaluator's answers, computed here in the test process.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tessera/ops/registry.h"
#include "tessera/reference.h"

namespace tessera_test {

inline const char *kGenLibSpec = R"({"name": "demo", "kernels": [
  {"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"}, "targets": ["host", "tsp-mini", "npu-edge"]},
  {"op": "softmax", "name": "sm", "params": {"rows": 16, "cols": 100}, "targets": ["host", "tsp-mini", "npu-edge"]}
]})";

/// What the plain C consumers share, after their #includes: slurp(dir, name, bytes) reads a raw
/// file, spill(dir, name, data, bytes) writes one, buf(...) makes a 2-D tessera_buffer_t.
inline const char *kConsumerHelpers = R"(static void *slurp(const char *dir, const char *name, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    void *p = malloc(bytes);
    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fclose(f);
    return p;
}
static void spill(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
    fclose(f);
}
static tessera_buffer_t buf(void *data, const int64_t *shape, uint8_t code, uint8_t bits) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 2; b.type_code = code; b.type_bits = bits;
    return b;
}
)";

/// The consumer: reads raw inputs, calls both kernels through their headers, writes raw outputs,
/// and checks that a wrong shape is an error code, never a crash. The same file for every target.
inline const std::string kGenLibConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm.h"
#include "sm.h"
#include "demo_provenance.h"

)" + std::string(kConsumerHelpers) + R"(int main(int argc, char **argv) {
    const char *dir = argv[1];
    const int64_t a_shape[2] = {32, 48}, b_shape[2] = {48, 64}, c_shape[2] = {32, 64}, x_shape[2] = {16, 100};
    tessera_buffer_t A = buf(slurp(dir, "A.bin", 32 * 48), a_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t B = buf(slurp(dir, "B.bin", 48 * 64), b_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t C = buf(calloc(32 * 64, 4), c_shape, TESSERA_TYPE_INT, 32);
    tessera_buffer_t X = buf(slurp(dir, "X.bin", 16 * 100 * 4), x_shape, TESSERA_TYPE_FLOAT, 32);
    tessera_buffer_t Y = buf(calloc(16 * 100, 4), x_shape, TESSERA_TYPE_FLOAT, 32);
    int code = mm(&A, &B, &C);
    if (code) { fprintf(stderr, "mm: %s\n", mm_error_message(code)); return 1; }
    code = sm(&X, &Y);
    if (code) { fprintf(stderr, "sm: %s\n", sm_error_message(code)); return 1; }
    spill(dir, "C.bin", C.data, 32 * 64 * 4);
    spill(dir, "Y.bin", Y.data, 16 * 100 * 4);
    const int64_t wrong[2] = {32, 47};
    A.shape = wrong;
    code = mm(&A, &B, &C);
    if (TESSERA_ERROR_KIND(code) != TESSERA_ERROR_SHAPE) { fprintf(stderr, "wrong shape gave code %d\n", code); return 1; }
    printf("wrong shape: %s\n", mm_error_message(code));
    printf("provenance: %s\n", demo_provenance());
    free(A.data); free(B.data); free(C.data); free(X.data); free(Y.data);
    return 0;
}
)";

template <typename T> tessera::Buffer<> read_raw(const std::filesystem::path &path, tessera::Type type, std::vector<int64_t> shape) {
    tessera::Buffer<> b(type, shape);
    std::ifstream f(path, std::ios::binary);
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    f.read(static_cast<char *>(b.data()), std::streamsize(n * int64_t(sizeof(T))));
    EXPECT_TRUE(bool(f)) << "cannot read " << path;
    return b;
}

inline void write_raw(const std::filesystem::path &path, const tessera::Buffer<> &b) {
    int64_t n = (b.type().bits() + 7) / 8;
    for (int64_t e : b.shape()) n *= e;
    std::ofstream(path, std::ios::binary) << std::string(static_cast<const char *>(b.data()), size_t(n));
}

/// The reference evaluator's outputs for the consumer's inputs.
struct GenLibExpected {
    tessera::Buffer<> mm, sm;
};

/// Writes the consumer's inputs (A.bin, B.bin, X.bin) into `dir` and returns the reference's
/// outputs for them: the same inputs for every target.
inline GenLibExpected write_gen_lib_inputs(const std::filesystem::path &dir) {
    using namespace tessera;
    const ops::OpInstance mm = ops::build_op("matmul", {{"M", "32"}, {"N", "64"}, {"K", "48"}, {"dtype", "int8"}});
    const ops::OpInstance sm = ops::build_op("softmax", {{"rows", "16"}, {"cols", "100"}});
    const Bindings mm_in = mm.random_inputs(5), sm_in = sm.random_inputs(6);
    write_raw(dir / "A.bin", mm_in[0].name == "A" ? mm_in[0].buffer : mm_in[1].buffer);
    write_raw(dir / "B.bin", mm_in[0].name == "A" ? mm_in[1].buffer : mm_in[0].buffer);
    write_raw(dir / "X.bin", sm_in[0].buffer);
    return {evaluate_reference(mm.pipeline, mm.output_shapes, mm_in)[0], evaluate_reference(sm.pipeline, sm.output_shapes, sm_in)[0]};
}

/// The consumer's outputs in `dir` (C.bin, Y.bin) against the reference: the int8 matmul exact,
/// softmax within fp32's tolerance on the host and bf16's on a chip (the VXM's fp32 exp, as
/// `tessera run` checks chips).
inline void expect_gen_lib_outputs(const std::filesystem::path &dir, const std::string &target, const GenLibExpected &expected) {
    using namespace tessera;
    const Buffer<> c = read_raw<int32_t>(dir / "C.bin", Int(32), {32, 64});
    const Comparison mm_cmp = compare(c, expected.mm, Tolerance::for_type(Int(32)));
    EXPECT_TRUE(mm_cmp.equal) << target << ": int8 matmul must be exact: " << mm_cmp.message;
    const Buffer<> y = read_raw<float>(dir / "Y.bin", Float(32), {16, 100});
    const Comparison sm_cmp = compare(y, expected.sm, Tolerance::for_type(target == "host" ? Float(32) : BFloat(16), 100));
    EXPECT_TRUE(sm_cmp.equal) << target << ": " << sm_cmp.message;
}

} // namespace tessera_test
