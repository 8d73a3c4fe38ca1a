#pragma once
// 2-D convolution and pooling on 4-D image tensors, in NCHW or NHWC layout.
#include <array>
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Zero (or, for max pooling, "ignore") padding around the two spatial dimensions.
/// `{p}` pads every side by p, `{ph, pw}` pads top and bottom by ph and left and right by pw,
/// `{top, left, bottom, right}` gives each side (ONNX's pads order for 2-D).
struct Padding2d {
    int top = 0, left = 0, bottom = 0, right = 0;
    Padding2d() = default;
    Padding2d(int p) : top(p), left(p), bottom(p), right(p) {}
    Padding2d(int ph, int pw) : top(ph), left(pw), bottom(ph), right(pw) {}
    Padding2d(int t, int l, int b, int r) : top(t), left(l), bottom(b), right(r) {}
};

/// Options of conv2d.
struct Conv2dOptions {
    /// Step between windows, {height, width}; >= 1.
    std::array<int, 2> stride{1, 1};
    /// Padding of the input; each side >= 0.
    Padding2d padding;
    /// The value the padding holds: 0, or an integer convolution's zero point (then the padding
    /// is 0 once the zero point is subtracted).
    double pad_value = 0;
    /// Spacing between kernel taps, {height, width}; >= 1.
    std::array<int, 2> dilation{1, 1};
    /// Channel groups: input and output channels both divide by groups; groups == channels is
    /// a depthwise convolution.
    int groups = 1;
    /// Layout of the input and output. The weights' layout follows it (see conv2d).
    Layout layout = Layout::NCHW;
    /// The name of the result Func; a padded copy of the input, when padding is non-zero, is the
    /// Func `name + "_padded"`.
    std::string name = "conv2d";
};

/// 2-D convolution (cross-correlation, as in every framework), with an optional bias.
///
/// Shapes (Cg = C / groups input channels per group, O output channels):
/// - NCHW: input [N, C, H, W], weights OIHW [O, Cg, KH, KW], result [N, O, OH, OW].
/// - NHWC: input [N, H, W, C], weights HWIO [KH, KW, Cg, O] (TensorFlow's filter layout),
///   result [N, OH, OW, O].
/// - bias: [O] or an undefined Tensor for none.
/// OH = (H + top + bottom - dilation_h·(KH - 1) - 1) / stride_h + 1, likewise OW; both >= 1.
///
/// The result Func, with pure Vars "n","c","y","x" (NCHW) or "n","y","x","c" (NHWC) and one
/// RDom "r" whose dimensions r.x, r.y, r.z run over (input channel within the group, ky, kx),
/// r.x innermost:
///
///     out(n, c, y, x)  = bias ? cast(acc, bias(c)) : cast(acc, 0);
///     out(n, c, y, x) += cast(acc, in(n, g·Cg + r.x, y·sh + r.y·dh - top, x·sw + r.z·dw - left))
///                      * cast(acc, w(c, r.x, r.y, r.z));        // g = c / (O / groups)
///
/// where `in` is the input, or — when padding is non-zero — the Func `name + "_padded"`, the
/// DSL's constant_exterior(input, 0) (boundary.h).
///
/// Types: acc = accumulator_type(input type) (int8 → int32, bf16 → fp32), which the weights'
/// and the bias's accumulator types must equal; the result has type acc.
///
/// Throws tessera::Error naming "conv2d" and the name when ranks are not 4, channels do not
/// match the weights, groups do not divide the channels, the bias is not [O], a stride,
/// dilation or padding is out of range, or the output would be empty.
Tensor conv2d(const Tensor &input, const Tensor &weights, const Tensor &bias, const Conv2dOptions &options = {});
/// conv2d without bias.
Tensor conv2d(const Tensor &input, const Tensor &weights, const Conv2dOptions &options = {});

/// Options of conv_transpose2d (ONNX ConvTranspose, PyTorch ConvTranspose2d).
struct ConvTranspose2dOptions {
    std::array<int, 2> stride{1, 1};
    /// Removed from the full output at each side ({top, left, bottom, right}), each >= 0.
    Padding2d padding;
    std::array<int, 2> dilation{1, 1};
    /// Added at the bottom and right of the output, each in [0, max(stride, dilation)).
    std::array<int, 2> output_padding{0, 0};
    int groups = 1;
    /// The result Func; `name + "_upsampled"` is the input with stride - 1 zeros between
    /// elements and the border the kernel needs, `name + "_flipped"` the weights as conv2d's.
    std::string name = "conv_transpose2d";
};

/// The transposed 2-D convolution of an NCHW input [N, C, H, W] with weights [C, O/groups, KH,
/// KW] (ONNX's layout) and an optional bias [O]: the gradient of conv2d with respect to its
/// input, computed as conv2d over the zero-upsampled input with the flipped weights.
/// OH = stride·(H - 1) + output_padding + dilation·(KH - 1) + 1 - top - bottom (>= 1), likewise
/// OW. Float or integer types as conv2d. Errors name "conv_transpose2d".
Tensor conv_transpose2d(const Tensor &input, const Tensor &weights, const Tensor &bias,
                        const ConvTranspose2dOptions &options = {});

/// Options of max_pool2d and avg_pool2d (ONNX MaxPool/AveragePool semantics, floor rounding).
struct Pool2dOptions {
    /// Window size {height, width}; >= 1.
    std::array<int, 2> kernel{2, 2};
    /// Step between windows; >= 1. Default 1, as in ONNX (set it to the kernel for the usual
    /// non-overlapping pooling).
    std::array<int, 2> stride{1, 1};
    /// Padding; each side at most half the (dilated) kernel, so every window sees the input.
    Padding2d padding;
    std::array<int, 2> dilation{1, 1};
    /// avg_pool2d only: divide by the full window size (true) or only by the number of window
    /// elements inside the input (false, the ONNX default).
    bool count_include_pad = false;
    Layout layout = Layout::NCHW;
    /// The result Func's name; default "max_pool2d" or "avg_pool2d".
    std::string name;
};

/// Max pooling of a 4-D tensor; padding never wins (padded positions are ignored). Result
/// [N, C, OH, OW] (NCHW) or [N, OH, OW, C] (NHWC) with OH as for conv2d; same type as the
/// input (any numeric type). The Func has Vars "n","c","y","x" / "n","y","x","c" and an RDom
/// "r" with r.x over kx (innermost) and r.y over ky:
///     out = lowest(type); out = max(out, in(window point))
/// where `in` is the input, or with padding the Func `name + "_padded"` =
/// constant_exterior(input, lowest) — so a padded position never wins.
Tensor max_pool2d(const Tensor &input, const Pool2dOptions &options = {});

/// Average pooling of a 4-D float tensor, padded positions counted as zeros when
/// count_include_pad, else left out of the divisor. Sums in compute_type (fp32 for bf16); the
/// result has the input's type. Func "avg_pool2d" (or the name) divides the sum Func
/// `name + "_sum"` (same Vars and RDom "r" as max_pool2d).
Tensor avg_pool2d(const Tensor &input, const Pool2dOptions &options = {});

/// Mean over the spatial dimensions of a 4-D float tensor, keeping them as size 1:
/// [N, C, 1, 1] (NCHW) or [N, 1, 1, C] (NHWC). Same type as the input (fp32 accumulation for
/// bf16). The sum Func `name + "_sum"` has conv2d's Vars and an RDom "r" with r.x over the
/// width (innermost) and r.y over the height; the result Func `name` divides it by H·W.
Tensor global_avg_pool2d(const Tensor &input, Layout layout = Layout::NCHW, const std::string &name = "global_avg_pool2d");

} // namespace tessera::ops
