#pragma once
// Math the VXM has no instruction for, rewritten into what it has (exp, rsqrt, recip, +, -, *,
// /, min, max, select and comparisons) before the chip compiler emits a stage, so that
// ops::gelu (erf form), log_softmax and ONNX's Erf-form GELU run on the chips. Each expansion
// computes in fp32 and states its error bound against the exact function:
//
//   erf(x)  Abramowitz & Stegun 7.1.26 on |x|, sign restored:   |error| <= 1.5e-7 + 4 ulp(1)
//   log(x)  x>0: eight square roots and an atanh series for a
//           first value, then two Halley steps on exp(y) = x:  |error| <= 4 ulp(log x) + 1e-7
//   abs(x)  max(x, -x): exact
//   pow(x, y) = exp(y · log(x)) for x > 0 (x <= 0 gives NaN, as the chip's log does there)
//   floor, ceil, float → int (truncation): from round (the VXM's conversion to int32 and back,
//           round-half-even like the reference's round): exact for |x| < 2^31
#include "tessera/expr.h"

namespace tessera::internal::chip {

/// `e` with erf, log, abs, pow, floor, ceil and float-to-integer conversions rewritten into
/// VXM operations (other calls unchanged).
Expr expand_for_vxm(const Expr &e);

} // namespace tessera::internal::chip
