#pragma once
// The pipelines of the kernel library, scheduled with Tessera's host library schedules. The
// generator (kernels.cpp) compiles them; Tessera's AOT test builds the same pipelines to
// compute the reference results. Sizes are fixed here and in main.c.
#include <tessera/codegen/chip_schedules.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/tessera.h>

namespace kernel_library {

constexpr int kM = 96, kN = 80, kK = 64;                           // matmul [M,K]·[K,N]
constexpr int kBatch = 1, kChannels = 8, kSize = 16, kOut = 16;    // conv2d NCHW 3×3, pad 1
constexpr int kRows = 16, kCols = 100;                             // softmax over rows

/// The matmul's algorithm, shared by the host and the chip library.
inline tessera::Pipeline matmul_algorithm() {
    using namespace tessera;
    Input A(Float(32), {kM, kK}, "A"), B(Float(32), {kK, kN}, "B");
    return Pipeline(ops::matmul(A, B).func());
}

inline tessera::Pipeline matmul() {
    tessera::Pipeline p = matmul_algorithm();
    tessera::host_schedules::matmul(p, kM, kN, kK);
    return p;
}

/// The matmul with M rows (any M in 1..kM): the dispatching library kl_matmul_rows compiles it
/// at each bucket's M and serves every M between.
inline tessera::Pipeline matmul_rows(int64_t m) {
    using namespace tessera;
    Input A(Float(32), {m, kK}, "A"), B(Float(32), {kK, kN}, "B");
    Pipeline p(ops::matmul(A, B).func());
    host_schedules::matmul(p, m, kN, kK);
    return p;
}

/// The same matmul for a simulated chip (tsp-mini unless named), with the chip's library schedule
/// (fp32 operands are rounded to bf16 on their way into the MXM: equal within bf16's tolerance).
inline tessera::Pipeline matmul_chip(const std::string &chip = "tsp-mini") {
    tessera::Pipeline p = matmul_algorithm();
    tessera::apply_chip_library_schedule(p, tessera::Target::named(chip), {{kM, kN}});
    return p;
}

inline tessera::Pipeline conv2d() {
    using namespace tessera;
    Input X(Float(32), {kBatch, kChannels, kSize, kSize}, "X"), W(Float(32), {kOut, kChannels, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.padding = ops::Padding2d(1);
    Pipeline p(ops::conv2d(X, W, o).func());
    host_schedules::conv2d(p, false, kOut, kSize, kSize, false);
    return p;
}

inline tessera::Pipeline softmax() {
    using namespace tessera;
    Input X(Float(32), {kRows, kCols}, "X");
    Pipeline p(ops::softmax(X).func());
    host_schedules::rowwise(p);
    return p;
}

} // namespace kernel_library
