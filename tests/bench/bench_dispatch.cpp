// What shape dispatch costs (issue 17): a host library generated at build time by
// `tessera gen-lib` (bench_dispatch_spec.json: fp32 matmul, M = 1..64 at N = K = 64 and
// M = 1..512 at N = K = 256), its one entry point per op against the specialised kernel of the
// same bucket called directly, in the same run:
//   direct      the bucket's kernel (mm_small_M64, ...) on buffers of its shape;
//   dispatch    the entry point on the same buffers (checks, table look-up, no copy);
//   padded      the entry point at a shape between buckets (M = 48 -> the M = 64 kernel,
//               M = 384 -> 512): the zero-padded copies of the inputs and the cropped output
//               on top of the larger kernel — compare with `direct` of that bucket.
// And a derived extent: an unpadded 3x3 fp32 conv2d (N = 1, C = O = 16, W = 32) over
// H = 8..64 (buckets 32, 64), whose output has H - 2 rows: the entry point derives H from X,
// checks the output's H - 2 and crops it (conv_direct / conv_dispatch at H = 64, conv_padded
// at H = 48 -> the H = 64 kernel).
// The ratios dispatch / direct and padded / direct are the figures (README, "Shape dispatch").
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "conv.h"
#include "conv_H64.h"
#include "mm_large.h"
#include "mm_large_M1.h"
#include "mm_large_M512.h"
#include "mm_small.h"
#include "mm_small_M1.h"
#include "mm_small_M64.h"

namespace {

using Kernel = int (*)(const tessera_buffer_t *, const tessera_buffer_t *, tessera_buffer_t *);

/// fp32 M x K times K x N buffers, filled with small values.
struct Operands {
    int64_t a_shape[2], b_shape[2], c_shape[2];
    std::vector<float> a, b, c;
    tessera_buffer_t A{}, B{}, C{};
    Operands(int64_t m, int64_t n, int64_t k)
        : a_shape{m, k}, b_shape{k, n}, c_shape{m, n}, a(size_t(m * k), 0.5f), b(size_t(k * n), 0.25f), c(size_t(m * n)) {
        auto fill = [](tessera_buffer_t &t, void *data, const int64_t *shape) {
            std::memset(&t, 0, sizeof t);
            t.data = data;
            t.shape = shape;
            t.dimensions = 2;
            t.type_code = TESSERA_TYPE_FLOAT;
            t.type_bits = 32;
        };
        fill(A, a.data(), a_shape);
        fill(B, b.data(), b_shape);
        fill(C, c.data(), c_shape);
    }
};

void run(benchmark::State &state, Kernel kernel, int64_t m, int64_t n, int64_t k) {
    Operands o(m, n, k);
    for (auto _ : state) {
        if (kernel(&o.A, &o.B, &o.C) != 0) {
            state.SkipWithError("the kernel returned an error");
            return;
        }
        benchmark::DoNotOptimize(o.c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(m * n * k), benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::kIs1000);
}

// Tiny: per-call overhead dominates.
BENCHMARK_CAPTURE(run, small_M1_direct, mm_small_M1, 1, 64, 64)->UseRealTime();
BENCHMARK_CAPTURE(run, small_M1_dispatch, mm_small, 1, 64, 64)->UseRealTime();
// Small: 64 x 64 x 64.
BENCHMARK_CAPTURE(run, small_M64_direct, mm_small_M64, 64, 64, 64)->UseRealTime();
BENCHMARK_CAPTURE(run, small_M64_dispatch, mm_small, 64, 64, 64)->UseRealTime();
BENCHMARK_CAPTURE(run, small_M48_padded, mm_small, 48, 64, 64)->UseRealTime();
// Large: 512 x 256 x 256.
BENCHMARK_CAPTURE(run, large_M1_direct, mm_large_M1, 1, 256, 256)->UseRealTime();
BENCHMARK_CAPTURE(run, large_M1_dispatch, mm_large, 1, 256, 256)->UseRealTime();
BENCHMARK_CAPTURE(run, large_M512_direct, mm_large_M512, 512, 256, 256)->UseRealTime();
BENCHMARK_CAPTURE(run, large_M512_dispatch, mm_large, 512, 256, 256)->UseRealTime();
BENCHMARK_CAPTURE(run, large_M384_padded, mm_large, 384, 256, 256)->UseRealTime();

/// conv over fp32 X[1, 16, h, 32] and W[16, 16, 3, 3] into Y[1, 16, h - 2, 30].
void run_conv(benchmark::State &state, Kernel kernel, int64_t h) {
    const int64_t x_shape[4] = {1, 16, h, 32}, w_shape[4] = {16, 16, 3, 3}, y_shape[4] = {1, 16, h - 2, 30};
    std::vector<float> x(size_t(16 * h * 32), 0.5f), w(16 * 16 * 9, 0.25f), y(size_t(16 * (h - 2) * 30));
    auto buffer = [](void *data, const int64_t *shape) {
        tessera_buffer_t t;
        std::memset(&t, 0, sizeof t);
        t.data = data;
        t.shape = shape;
        t.dimensions = 4;
        t.type_code = TESSERA_TYPE_FLOAT;
        t.type_bits = 32;
        return t;
    };
    const tessera_buffer_t X = buffer(x.data(), x_shape), W = buffer(w.data(), w_shape);
    tessera_buffer_t Y = buffer(y.data(), y_shape);
    for (auto _ : state) {
        if (kernel(&X, &W, &Y) != 0) {
            state.SkipWithError("the kernel returned an error");
            return;
        }
        benchmark::DoNotOptimize(y.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(16 * (h - 2) * 30 * 16 * 9), benchmark::Counter::kIsIterationInvariantRate,
                                                   benchmark::Counter::kIs1000);
}

// Derived extent: the output is H - 2.
BENCHMARK_CAPTURE(run_conv, conv_H64_direct, conv_H64, 64)->UseRealTime();
BENCHMARK_CAPTURE(run_conv, conv_H64_dispatch, conv, 64)->UseRealTime();
BENCHMARK_CAPTURE(run_conv, conv_H48_padded, conv, 48)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
