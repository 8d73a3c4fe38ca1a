#pragma once
// Ops that move elements without computing: transpose/permute, reshape/flatten, concat. Each
// result keeps its input's type; their Funcs have pure Vars "d0", "d1", ... (outermost first).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Swaps the last two dimensions (rank >= 2): [..., M, N] → [..., N, M].
Tensor transpose(const Tensor &x, const std::string &name = "transpose");

/// Reorders dimensions: result dimension d is input dimension perm[d] (NumPy's transpose(axes),
/// PyTorch's permute). perm must be a permutation of 0 .. rank-1 (negative entries count
/// from the end), else tessera::Error naming "permute".
Tensor permute(const Tensor &x, const std::vector<int> &perm, const std::string &name = "permute");

/// The same elements, in row-major order, under a new shape. One entry may be -1 (inferred).
/// The input's shape must be constant (known when the op is built). Throws tessera::Error
/// naming "reshape" if the element counts differ, more than one entry is -1, or an entry is
/// below -1 or 0 where the count is non-zero.
Tensor reshape(const Tensor &x, const std::vector<int64_t> &shape, const std::string &name = "reshape");

/// ONNX Flatten: [d0 .. d(axis-1)] and [d(axis) .. d(rank-1)] each collapse into one dimension,
/// giving a 2-D tensor (axis in [0, rank]; negative counts from the end; an empty product is 1).
Tensor flatten(const Tensor &x, int axis = 1, const std::string &name = "flatten");

/// Joins tensors along `axis` (negative counts from the end). Every operand has the same rank,
/// the same type, and the same extents except along the axis; otherwise tessera::Error naming
/// "concat", the operand's position and the dimension.
Tensor concat(const std::vector<Tensor> &xs, int axis, const std::string &name = "concat");

} // namespace tessera::ops
