#pragma once
// Normalisations (batchnorm for inference, layernorm, rmsnorm) and softmax / log_softmax.
// All take float tensors, compute in compute_type (fp32 for bf16/fp16) and return the input's
// type. Their Funcs have pure Vars "d0", "d1", ... (outermost first).
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Batch normalisation with fixed statistics (inference):
///   y = (x - mean[c]) / sqrt(var[c] + epsilon) · scale[c] + bias[c]
/// with c the index along `channel_axis` (1 for NCHW; -1 for NHWC). scale, bias, mean, var are
/// 1-D of the channel count. Errors name "batchnorm" and the mismatching operand.
Tensor batchnorm(const Tensor &x, const Tensor &scale, const Tensor &bias, const Tensor &mean,
                 const Tensor &var, double epsilon = 1e-5, int channel_axis = 1,
                 const std::string &name = "batchnorm");

/// Layer normalisation over the last `normalized_dims` dimensions (mean and biased variance,
/// two passes): y = (x - mean) / sqrt(var + epsilon) · gamma + beta. gamma and beta, when
/// defined, have the shape of those last dimensions. Funcs: `name + "_mean"` and
/// `name + "_var"` (pure Vars "d0".. over the leading dimensions — one Var of extent 1 when
/// every dimension is normalised — each a sum over RDom "r" of the normalised dimensions,
/// innermost as r.x, then a second update dividing by the count), then `name`.
Tensor layernorm(const Tensor &x, const Tensor &gamma = Tensor(), const Tensor &beta = Tensor(),
                 int normalized_dims = 1, double epsilon = 1e-5, const std::string &name = "layernorm");

/// RMS normalisation over the last `normalized_dims` dimensions:
/// y = x / sqrt(mean(x²) + epsilon) · gamma. Funcs `name + "_ms"` (mean square, built as
/// layernorm's `_mean`) and `name`.
Tensor rmsnorm(const Tensor &x, const Tensor &gamma = Tensor(), int normalized_dims = 1,
               double epsilon = 1e-6, const std::string &name = "rmsnorm");

/// Numerically stable softmax along `axis` (negative counts from the end):
/// y = exp(x - max) / Σ exp(x - max). Funcs `name + "_max"`, `name + "_sum"` (pure Vars over the
/// other dimensions, RDom "r" along the axis) and `name`.
Tensor softmax(const Tensor &x, int axis = -1, const std::string &name = "softmax");

/// log(softmax(x)) computed stably as x - max - log(Σ exp(x - max)). Funcs as softmax's.
Tensor log_softmax(const Tensor &x, int axis = -1, const std::string &name = "log_softmax");

} // namespace tessera::ops
