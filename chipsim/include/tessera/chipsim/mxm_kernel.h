#pragma once
// The functional MXM hot loop (public so the benchmark can measure it against the host peak): out[r][n] = sum over k (in order) of a[r][k] * w[k][n], in fp32.
// Products of int8, bf16 or fp16 values are exact in fp32, and int8 sums over k <= 1024 stay
// below 2^24, so this one fp32 kernel is bit-exact for int8 and gives the chip's fp32
// accumulation for floats, whatever ISA level the host runs it at.
#include <cstdint>

namespace tessera::chipsim {

/// out (rows x n) = a (rows x k, row-major) * w (k x n, row-major). Picks the widest vector ISA
/// the host supports at first call.
void mxm_rows(const float *a, const float *w, float *out, int64_t rows, int k, int n);

/// The ISA level mxm_rows runs at ("avx512", "avx2", "baseline").
const char *mxm_kernel_isa();

} // namespace tessera::chipsim
