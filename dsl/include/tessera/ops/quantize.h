#pragma once
// Linear (de)quantisation, ONNX's QuantizeLinear / DequantizeLinear: a scale and a zero point,
// one for the whole tensor (shape [1]) or one per entry of `axis` (shape [extent of axis]).
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// y = (float(x) - float(zero_point)) · scale, in scale's type (fp32). x is an 8-, 16- or 32-bit
/// integer tensor; zero_point (x's type) may be undefined (0). Funcs "d0".. as the unary ops.
/// Errors name "dequantize_linear" and the operand whose shape fits neither form.
Tensor dequantize_linear(const Tensor &x, const Tensor &scale, const Tensor &zero_point = Tensor(), int axis = 1,
                         const std::string &name = "dequantize_linear");

/// y = saturate(round_half_even(x / scale) + zero_point) in zero_point's type (int8 or uint8;
/// uint8 when zero_point is undefined). x and scale are float.
Tensor quantize_linear(const Tensor &x, const Tensor &scale, const Tensor &zero_point = Tensor(), int axis = 1,
                       const std::string &name = "quantize_linear");

} // namespace tessera::ops
