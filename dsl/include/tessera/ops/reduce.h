#pragma once
// Reductions over any set of axes. Each result Func has pure Vars "d0", "d1", ... over the
// result's shape and one update over an RDom named "r" whose dimensions run over the reduced
// axes, the innermost reduced axis as r.x (the RDom's innermost dimension).
#include <string>
#include <vector>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Sum over `axes` (negative entries count from the end; an empty list reduces every axis;
/// duplicates are an error). With keepdims the reduced axes stay as extent 1, else they are
/// removed (reducing every axis without keepdims gives a 1-D tensor of extent 1, since a Func
/// has at least one dimension here). Accumulates and returns accumulator_type(x.type()):
/// int8 sums are int32, bf16 sums fp32.
Tensor reduce_sum(const Tensor &x, const std::vector<int> &axes, bool keepdims = false, const std::string &name = "reduce_sum");
/// Mean over `axes` of a float tensor: a sum in compute_type divided by the count, returned
/// in x's type (bf16 in, bf16 out). The sum is the Func `name + "_sum"`.
Tensor reduce_mean(const Tensor &x, const std::vector<int> &axes, bool keepdims = false, const std::string &name = "reduce_mean");
/// Maximum over `axes`, any numeric type, same type as x.
Tensor reduce_max(const Tensor &x, const std::vector<int> &axes, bool keepdims = false, const std::string &name = "reduce_max");
/// Minimum over `axes`, any numeric type, same type as x.
Tensor reduce_min(const Tensor &x, const std::vector<int> &axes, bool keepdims = false, const std::string &name = "reduce_min");

} // namespace tessera::ops
