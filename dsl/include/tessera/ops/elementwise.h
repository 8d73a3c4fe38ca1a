#pragma once
// Element-wise ops. Binary ops broadcast as NumPy does; unary float ops compute in
// compute_type (fp32 for bf16/fp16) and round to the input type once.
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// The shape two operands broadcast to, NumPy's rule: align from the innermost dimension,
/// each pair equal or one of them 1 (a missing dimension counts as 1). Throws tessera::Error
/// naming `op` and both shapes otherwise. A symbolic dimension is taken to be non-1.
std::vector<Expr> broadcast_shapes(const std::vector<Expr> &a, const std::vector<Expr> &b, const std::string &op);

/// Binary element-wise arithmetic with NumPy broadcasting. The result type follows the DSL's
/// promotion rules for the operands' types (int8 + int8 is int8 and wraps; bf16 + fp32 is
/// fp32); an implicit narrowing is reported as a tessera::Error naming the op. Integer
/// division rounds towards negative infinity and x / 0 == 0 (DESIGN: expr.h). The result Func
/// `name` has pure Vars "d0", "d1", ... (outermost first) over the broadcast shape.
Tensor add(const Tensor &a, const Tensor &b, const std::string &name = "add");
Tensor sub(const Tensor &a, const Tensor &b, const std::string &name = "sub");
Tensor mul(const Tensor &a, const Tensor &b, const std::string &name = "mul");
Tensor div(const Tensor &a, const Tensor &b, const std::string &name = "div");

/// max(x, 0), any numeric type. Vars "d0", "d1", ... as for every unary op here.
Tensor relu(const Tensor &x, const std::string &name = "relu");
/// x >= 0 ? x : alpha · x, float types.
Tensor leaky_relu(const Tensor &x, double alpha = 0.01, const std::string &name = "leaky_relu");

/// GELU's two standard forms.
enum class GeluApproximation {
    None, ///< exact: x · ½ · (1 + erf(x / √2))
    Tanh, ///< x · ½ · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))
};
/// Gaussian error linear unit, float types.
Tensor gelu(const Tensor &x, GeluApproximation approximation = GeluApproximation::None, const std::string &name = "gelu");
/// 1 / (1 + exp(-x)), float types.
Tensor sigmoid(const Tensor &x, const std::string &name = "sigmoid");
/// Hyperbolic tangent, float types.
Tensor tanh(const Tensor &x, const std::string &name = "tanh");
/// e^x, float types.
Tensor exp(const Tensor &x, const std::string &name = "exp");
/// √x (NaN for x < 0), float types.
Tensor sqrt(const Tensor &x, const std::string &name = "sqrt");
/// min(max(x, lo), hi), any numeric type; lo <= hi, both representable in x's type (an
/// integer tensor needs integral bounds), else tessera::Error naming "clip".
Tensor clip(const Tensor &x, double lo, double hi, const std::string &name = "clip");

/// The Gauss error function, float types.
Tensor erf(const Tensor &x, const std::string &name = "erf");
/// log(1 + e^x), computed as max(x, 0) + log(1 + e^-|x|) so large |x| neither overflows nor
/// loses the linear part; float types.
Tensor softplus(const Tensor &x, const std::string &name = "softplus");
/// max(0, min(1, alpha · x + beta)) (ONNX HardSigmoid), float types.
Tensor hard_sigmoid(const Tensor &x, double alpha = 0.2, double beta = 0.5, const std::string &name = "hard_sigmoid");

/// a^b element-wise with NumPy broadcasting (ONNX Pow): computed in Float(64) and returned in
/// a's type (an integer base truncates the power towards zero, as ONNX Runtime does).
Tensor pow(const Tensor &a, const Tensor &b, const std::string &name = "pow");
/// The larger (smaller) of two operands element-wise, NumPy broadcasting, any numeric type;
/// the result type follows the DSL's promotion rules as for add.
Tensor maximum(const Tensor &a, const Tensor &b, const std::string &name = "maximum");
Tensor minimum(const Tensor &a, const Tensor &b, const std::string &name = "minimum");
/// condition ? a : b element-wise (ONNX Where, NumPy's where), the three operands broadcast
/// together; condition is Bool, a and b have the same type, which the result keeps.
Tensor where(const Tensor &condition, const Tensor &a, const Tensor &b, const std::string &name = "where");
/// x converted to `type` element-wise: floats to integers truncate towards zero, integers wrap,
/// anything to Bool is "!= 0" (ONNX Cast).
Tensor cast(const Tensor &x, Type type, const std::string &name = "cast");

} // namespace tessera::ops
