// Compiled at -O3 (see CMakeLists.txt) and once per ISA level through target attributes, so the
// library stays runnable on any x86-64 while the simulator uses AVX-512/AVX2 where present.
// The loops keep k outermost per row block and n innermost and contiguous: GCC vectorises n and
// keeps the summation order over k, so every level computes bit-identical results.
#include "tessera/chipsim/mxm_kernel.h"

#include <cstring>

namespace tessera::chipsim {

namespace {

/// A block of RB rows against all of w, accumulators for RB x N held in registers.
template <int N, int RB>
inline __attribute__((always_inline)) void block_fixed(const float *a, const float *w, float *out, int k) {
    float acc[RB][N];
    for (int r = 0; r < RB; ++r)
        for (int j = 0; j < N; ++j) acc[r][j] = 0.0f;
    for (int kk = 0; kk < k; ++kk) {
        const float *wr = w + int64_t(kk) * N;
        for (int r = 0; r < RB; ++r) {
            const float av = a[int64_t(r) * k + kk];
            for (int j = 0; j < N; ++j) acc[r][j] += av * wr[j];
        }
    }
    for (int r = 0; r < RB; ++r) std::memcpy(out + int64_t(r) * N, acc[r], sizeof(float) * N);
}

template <int N>
inline __attribute__((always_inline)) void rows_fixed(const float *a, const float *w, float *out, int64_t rows, int k) {
    constexpr int RB = N >= 64 ? 2 : 4;
    int64_t r = 0;
    for (; r + RB <= rows; r += RB) block_fixed<N, RB>(a + r * k, w, out + r * N, k);
    for (; r < rows; ++r) block_fixed<N, 1>(a + r * k, w, out + r * N, k);
}

inline __attribute__((always_inline)) void rows_generic(const float *a, const float *w, float *out, int64_t rows, int k, int n) {
    for (int64_t r = 0; r < rows; ++r) {
        float *o = out + r * n;
        for (int j = 0; j < n; ++j) o[j] = 0.0f;
        for (int kk = 0; kk < k; ++kk) {
            const float av = a[r * k + kk];
            const float *wr = w + int64_t(kk) * n;
            for (int j = 0; j < n; ++j) o[j] += av * wr[j];
        }
    }
}

inline __attribute__((always_inline)) void dispatch_n(const float *a, const float *w, float *out, int64_t rows, int k, int n) {
    if (n == 64) rows_fixed<64>(a, w, out, rows, k);
    else if (n == 32) rows_fixed<32>(a, w, out, rows, k);
    else if (n == 16) rows_fixed<16>(a, w, out, rows, k);
    else rows_generic(a, w, out, rows, k, n);
}

// fp-contract stays off (ISO C++ mode), so a*b+c is never fused: identical rounding at every
// level (and the products are exact anyway).
__attribute__((target("avx512f,avx512vl,avx512dq,avx512bw")))
void mxm_avx512(const float *a, const float *w, float *out, int64_t rows, int k, int n) { dispatch_n(a, w, out, rows, k, n); }

__attribute__((target("avx2,fma")))
void mxm_avx2(const float *a, const float *w, float *out, int64_t rows, int k, int n) { dispatch_n(a, w, out, rows, k, n); }

void mxm_baseline(const float *a, const float *w, float *out, int64_t rows, int k, int n) { dispatch_n(a, w, out, rows, k, n); }

using Kernel = void (*)(const float *, const float *, float *, int64_t, int, int);

struct Chosen {
    Kernel kernel;
    const char *isa;
};

Chosen choose() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq"))
        return {mxm_avx512, "avx512"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {mxm_avx2, "avx2"};
    return {mxm_baseline, "baseline"};
}

const Chosen &chosen() {
    static const Chosen c = choose();
    return c;
}

} // namespace

void mxm_rows(const float *a, const float *w, float *out, int64_t rows, int k, int n) {
    chosen().kernel(a, w, out, rows, k, n);
}

const char *mxm_kernel_isa() { return chosen().isa; }

} // namespace tessera::chipsim
