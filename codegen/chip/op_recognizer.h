#pragma once
// Recognises the operator-library pipelines that the chip backend compiles with hand-written
// VXM, SXM (and MXM) kernels rather than through the GEMM matcher: softmax, layernorm, depthwise
// conv2d, scaled dot-product attention, permutations (transpose, NCHW <-> NHWC) and any other
// element-wise pipeline (match_elementwise: the VXM epilogue compiler without a matmul).
//
// A pipeline is recognised by reconstruction: the candidate's parameters (Inputs, axis,
// epsilon, scale, causal, window) are read off its Funcs, the op is rebuilt with tessera::ops
// from the same Inputs under the same names, and every Func of the two pipelines must have
// identical definitions. So a kernel only ever runs for exactly the algorithm it implements; a
// pipeline that merely looks similar is not recognised (and then gets the GEMM matcher's error,
// or the specific error below when its Funcs carry the op's names).
#include <optional>
#include <string>
#include <vector>

#include "gemm_pattern.h"
#include "tessera/func.h"

namespace tessera::internal::chip {

/// ops::softmax(x, -1) — over the last axis.
struct SoftmaxOp {
    Input x;
};

/// ops::layernorm(x, gamma?, beta?, normalized_dims = 1, epsilon).
struct LayernormOp {
    Input x;
    std::optional<Input> gamma, beta;
    double epsilon = 1e-5;
};

/// ops::conv2d with groups == channels == output channels (one filter per channel).
struct DepthwiseConvOp {
    Input image, weights;
    std::optional<Input> bias;
    bool nchw = true;
    int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
    double pad_value = 0; ///< What the padding holds (an integer conv's zero point), written by the host.
};

/// ops::scaled_dot_product_attention(q, k, v) on [heads, L, D] (or [L, D]) tensors.
struct AttentionOp {
    Input q, k, v;
    bool causal = false;
    double scale = 1.0;
};

/// ops::permute / ops::transpose: output dimension d is input dimension perm[d].
struct PermuteOp {
    Input x;
    std::vector<int> perm;
};

/// What recognize_vector_op found.
struct VectorOp {
    enum class Kind { Softmax, Layernorm, DepthwiseConv, Attention, Permute, Elementwise } kind = Kind::Softmax;
    std::optional<SoftmaxOp> softmax;
    std::optional<LayernormOp> layernorm;
    std::optional<DepthwiseConvOp> depthwise;
    std::optional<AttentionOp> attention;
    std::optional<PermuteOp> permute;
    std::optional<GemmPattern> elementwise; ///< match_elementwise's pattern.
};

/// The op `p` computes, or nullopt when it is none of them (then the GEMM matcher decides).
/// Throws tessera::Error when the output carries an op's Func names (e.g. `name_max` and
/// `name_sum`) but is not that op in the form the chip supports, saying what differs.
std::optional<VectorOp> recognize_vector_op(const Pipeline &p);

/// True when the two Funcs and all the Funcs they call have identical definitions (names,
/// types, arguments, values, reduction domains) — schedules are not compared.
bool same_algorithm(const Func &a, const Func &b);

} // namespace tessera::internal::chip
