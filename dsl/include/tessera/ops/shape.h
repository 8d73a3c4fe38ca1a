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

/// NumPy's x[start:end:step] along `axes` (ONNX Slice): negative starts and ends count from the
/// end, and both are clamped into the dimension as NumPy does; a step may be negative but not 0.
/// starts, ends, axes (default 0, 1, ...) and steps (default 1) have one entry per sliced axis.
/// The input's shape must be constant. Errors name "slice", the axis and the bad entry.
Tensor slice(const Tensor &x, const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
             const std::vector<int64_t> &axes = {}, const std::vector<int64_t> &steps = {},
             const std::string &name = "slice");

/// ONNX Gather: the entries of x along `axis` at the integer tensor `indices` (negative entries
/// count from the end). The result has shape x.shape[:axis] + indices.shape + x.shape[axis+1:].
/// An index outside [-n, n) reads the clamped entry (ONNX leaves it undefined; clamping keeps
/// every read inside x).
Tensor gather(const Tensor &x, const Tensor &indices, int axis = 0, const std::string &name = "gather");

/// ONNX Expand: x broadcast (NumPy's rule) against `shape`; the result has the broadcast shape.
Tensor expand(const Tensor &x, const std::vector<int64_t> &shape, const std::string &name = "expand");

/// How pad fills the border.
enum class PadMode {
    Constant, ///< with a value
    Edge,     ///< with the nearest edge element
    Reflect,  ///< mirrored without repeating the edge (NumPy's "reflect"); pad < extent
};
/// ONNX Pad: `pads` lists the elements added before each dimension, then after each one
/// (2·rank entries, >= 0). Errors name "pad".
Tensor pad(const Tensor &x, const std::vector<int64_t> &pads, PadMode mode = PadMode::Constant, double value = 0,
           const std::string &name = "pad");

} // namespace tessera::ops
