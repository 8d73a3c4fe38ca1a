#pragma once
// fp32 exp, tanh and erf for the host code generator as polynomial approximations in plain LLVM
// IR, on scalars and vectors alike. libm has no vector entry points we can rely on, and LLVM
// scalarizes llvm.exp on a vector into one expf call per lane, so softmax, GELU, layernorm and
// attention loops would otherwise not vectorize. Scalar code uses the same formulas, so a
// vectorized loop and its scalar tail agree bit for bit.
//
// Accuracy against libm in double precision (tests/codegen/vector_math_test.cpp checks these
// bounds on a dense sweep of the float range and on the edge cases; measured maxima on an AVX2
// host in parentheses; an ulp is the fp32 spacing at the exact result, denormal spacing below
// the normal range):
//   exp:  <= 2 ulp (0.97) over the whole range, denormal results included; +inf above 88.73,
//         0 below -103.98; exp(±inf) = +inf, 0; NaN → NaN.
//   tanh: <= 2 ulp (1.17); ±1 once the result rounds to 1; ±0 and NaN preserved.
//   erf:  <= 3 ulp (2.28); ±1 once the result rounds to 1; ±0 and NaN preserved.
//   sigmoid = 1 / (1 + exp(-x)): <= 3 ulp where the result is normal; it underflows to 0 below
//         x = -88.7, where exp(-x) overflows (as with libm).
// Only codegen/cpu includes this header (it names LLVM types).
#include <llvm/IR/IRBuilder.h>

namespace tessera::internal {

/// e^x for an fp32 scalar or vector: x = n ln 2 + r with |r| <= ln 2 / 2, a degree-7 polynomial
/// for e^r (Cephes expf), and 2^n applied in two halves so denormal and overflowing results
/// round once.
llvm::Value *emit_exp_f32(llvm::IRBuilderBase &b, llvm::Value *x);

/// tanh(x) for an fp32 scalar or vector: an odd polynomial for |x| < 0.625 (Cephes tanhf),
/// 1 - 2 / (e^{2|x|} + 1) above, with x's sign.
llvm::Value *emit_tanh_f32(llvm::IRBuilderBase &b, llvm::Value *x);

/// erf(x) for an fp32 scalar or vector: x P(x^2) for |x| < 1, 1 - e^{-x^2} Q(1/|x|) for
/// 1 <= |x| <= 4 (least-squares fits, relative error of P and Q below 4e-8 in exact arithmetic),
/// with x's sign; |x| is clamped to 4, where erf rounds to 1 in fp32.
llvm::Value *emit_erf_f32(llvm::IRBuilderBase &b, llvm::Value *x);

} // namespace tessera::internal
