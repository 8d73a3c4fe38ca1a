#pragma once
// Recognises what the chip backend can tensorize: a canonical matmul (ops::matmul's form,
// batched or not) followed by element-wise Funcs of the product (the epilogue). The epilogue is
// returned as one Expr of the product's value (the Variable kAccName) and of Input elements, so
// the vector code generator can turn it into VXM instructions.
#include <optional>
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/func.h"

namespace tessera::internal::chip {

/// Name of the Variable that stands for the product's value in an epilogue Expr.
inline constexpr const char *kAccName = "__mxm_acc";

/// One Input read by the epilogue, and how its coordinates follow the output's.
struct EpilogueOperand {
    Input input;
    /// For each Input dimension, the output dimension whose coordinate it takes (-1: constant 0).
    std::vector<int> output_dim;
};

/// A 2-D convolution computed as an implicit GEMM: one matmul per filter tap, the rows being
/// the output pixels (n, y, x) and the columns the output channels.
struct ConvParams {
    bool nchw = true;
    int64_t kh = 1, kw = 1;
    int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
    int64_t pad_top = 0, pad_left = 0; ///< Input coordinate = out * stride + tap * dilation - pad.
    double pad_value = 0;              ///< What the padding holds (an integer conv's zero point).
    /// Channel groups: output channel o reads input channels [o / (O / groups) * Cg, + Cg),
    /// Cg = C / groups (ops::conv2d's groups; 1 for an ordinary conv).
    int64_t groups = 1;
};

/// A matmul the MXM can compute, and what follows it.
struct GemmPattern {
    /// Set for conv2d (ops::conv2d, depthwise ones excepted): then `a` is the image, `b` the filter, and the
    /// product's own initial value (a bias) is part of the epilogue.
    std::optional<ConvParams> conv;
    Func output;                 ///< The pipeline's output.
    Func product;                ///< The canonical matmul Func.
    std::optional<Input> a, b; ///< Set by match_gemm (Input has no empty state).
    bool a_transposed = false;   ///< A is read A(.., k, i).
    bool b_transposed = false;   ///< B is read B(.., j, k).
    /// For each batch dimension of A (resp. B), the output batch dimension it follows, or -1
    /// when it is broadcast (its argument is the constant 0).
    std::vector<int> a_batch, b_batch;
    int batch_dims = 0;          ///< Batch dimensions of the output.
    Type acc_type;               ///< Int(32) or Float(32).
    /// The epilogue: the output's value in terms of Variable kAccName (type acc_type) and Input
    /// calls whose arguments are the output's Vars; undefined when the output is the product.
    Expr epilogue;
    std::vector<EpilogueOperand> operands;
    std::vector<std::string> output_vars;
    /// The one output batch dimension a library matmul kernel iterates over — the only one of
    /// extent above 1 (the others index 0 only: ONNX's [1, heads, L, L]) — or -1 when every
    /// batch dimension has extent 1 (or there is none); nullopt when two or more exceed 1.
    std::optional<int> library_batch_dim(const std::vector<int64_t> &output_shape) const;
    /// Whether a library kernel (gemm_codegen.h) takes this product: a conv, or a matmul of at
    /// most one batch dimension of extent above 1. The loop-nest compiler takes the others under
    /// its own default rule.
    bool fits_library_kernel(const std::vector<int64_t> &output_shape) const {
        return conv.has_value() || library_batch_dim(output_shape).has_value();
    }
    /// A conv's loops a chip tile cuts, as the product names them, and their output dimensions:
    /// the output rows (y; a tile takes whole ones) and the output channels.
    struct ConvTileLoops {
        std::string rows, channels;
        int rows_dim = 0, channels_dim = 0;
    };
    ConvTileLoops conv_tile_loops() const {
        const int rows_dim = conv->nchw ? 2 : 1, channels_dim = conv->nchw ? 1 : 3;
        const std::vector<std::string> args = product.args();
        return {args.at(size_t(rows_dim)), args.at(size_t(channels_dim)), rows_dim, channels_dim};
    }
};

/// Matches `p`'s single output against the form above. Throws tessera::Error saying which part
/// of the nest does not match and why.
GemmPattern match_gemm(const Pipeline &p);

/// An element-wise pipeline — pure Funcs only, the output's value in terms of Input elements
/// read at the output's coordinates (or 0 in broadcast dimensions) — as a pattern with no
/// product: `epilogue` is the whole computation (it never reads kAccName) and `operands` the
/// Inputs. nullopt when some Func has an update (a reduction). Throws tessera::Error when an
/// Input is read at other coordinates (a stencil, a gather), saying where.
std::optional<GemmPattern> match_elementwise(const Pipeline &p);

/// Substitutes Variables by name (helper shared with the vector code generator).
Expr substitute_vars(const Expr &e, const std::vector<std::string> &names, const std::vector<Expr> &values);

} // namespace tessera::internal::chip
