// conv2d in NCHW/OIHW and NHWC/HWIO, as one Func with a pure initial value (bias or zero) and
// one update over RDom r = (input channel in group, ky, kx) — the form the scheduler tiles and
// the chip tensorizer maps onto the matrix unit (an implicit GEMM over r.x).
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/conv.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor conv2d(const Tensor &input, const Tensor &weights, const Tensor &bias, const Conv2dOptions &options) {
    const std::string op = "conv2d", &name = options.name;
    require_rank(input, 4, "input", op, name);
    require_rank(weights, 4, "weights", op, name);
    check_window(options.stride, options.dilation, options.padding, op, name);
    if (options.groups < 1) fail(op, name, "groups " + std::to_string(options.groups) + " must be >= 1");
    const bool nchw = options.layout == Layout::NCHW;
    const char *w_layout = nchw ? "OIHW" : "HWIO";

    const int y_dim = nchw ? 2 : 1, x_dim = nchw ? 3 : 2, c_dim = nchw ? 1 : 3;
    const Expr batch = input.dim(0), channels = input.dim(c_dim), height = input.dim(y_dim), width = input.dim(x_dim);
    const Expr out_channels = nchw ? weights.dim(0) : weights.dim(3);
    const Expr group_channels = nchw ? weights.dim(1) : weights.dim(2);
    const Expr kh = nchw ? weights.dim(2) : weights.dim(0), kw = nchw ? weights.dim(3) : weights.dim(1);
    const Expr groups = int_const(options.groups);

    auto channels_error = [&](const std::string &what) {
        fail(op, name, what + " (input '" + input.name() + "' " + shape_string(input.shape()) + " in " +
                           layout_name(options.layout) + ", weights '" + weights.name() + "' " +
                           shape_string(weights.shape()) + " in " + w_layout + ", groups = " +
                           std::to_string(options.groups) + ")");
    };
    if (auto c = const_int(channels); c && *c % options.groups != 0)
        channels_error("input channels " + std::to_string(*c) + " are not divisible by groups");
    if (auto o = const_int(out_channels); o && *o % options.groups != 0)
        channels_error("output channels " + std::to_string(*o) + " are not divisible by groups");
    if (dims_differ(dim_div(channels, groups), group_channels))
        channels_error("input has " + dim_string(channels) + " channels, so the weights need " +
                       dim_string(dim_div(channels, groups)) + " input channels per group, but have " +
                       dim_string(group_channels));

    const Type acc = accumulator_type(input.type());
    if (accumulator_type(weights.type()) != acc)
        fail(op, name, "input (" + input.type().to_string() + ") and weights (" + weights.type().to_string() +
                           ") accumulate in different types; cast one of them");
    if (bias.defined()) {
        if (bias.dimensions() != 1 || dims_differ(bias.dim(0), out_channels))
            fail(op, name, "bias '" + bias.name() + "' has shape " + shape_string(bias.shape()) + " but must be [" +
                               dim_string(out_channels) + "] (one value per output channel)");
        if (accumulator_type(bias.type()) != acc && !(acc.is_float() && bias.type().is_float()))
            fail(op, name, "bias (" + bias.type().to_string() + ") does not match the accumulator type " + acc.to_string());
    }

    const Padding2d &pad = options.padding;
    const Expr out_h = window_extent(height, pad.top + pad.bottom, kh, options.dilation[0], options.stride[0]);
    const Expr out_w = window_extent(width, pad.left + pad.right, kw, options.dilation[1], options.stride[1]);
    for (const Expr &e : {out_h, out_w})
        if (auto v = const_int(e); v && *v < 1)
            fail(op, name, "the output would be empty: input " + shape_string(input.shape()) + " with kernel " +
                               dim_string(kh) + "x" + dim_string(kw) + ", padding and dilation gives " +
                               dim_string(out_h) + "x" + dim_string(out_w));

    // Read through a padded copy only when there is padding, so that an unpadded
    // convolution reads its Input directly.
    const bool padded = pad.top || pad.left || pad.bottom || pad.right;
    Func padded_input;
    if (padded) padded_input = pad_with(input, typed_const(input.type(), options.pad_value), name + "_padded");
    auto read_input = [&](const std::vector<Expr> &args) -> Expr {
        return padded ? Expr(padded_input(args)) : input(args);
    };

    Var n("n"), c("c"), y("y"), x("x");
    RDom r(0, group_channels, 0, kh, 0, kw, "r");
    Expr in_channel = r.x;
    // dim_div folds constant extents, so that bounds inference sees a constant divisor (a
    // materialised padded input needs the region the channel index spans).
    if (options.groups != 1) in_channel = (c / dim_div(out_channels, groups)) * group_channels + r.x;
    const Expr iy = window_coord(y, options.stride[0], r.y, options.dilation[0], pad.top);
    const Expr ix = window_coord(x, options.stride[1], r.z, options.dilation[1], pad.left);

    const std::vector<Expr> out_args = nchw ? std::vector<Expr>{n, c, y, x} : std::vector<Expr>{n, y, x, c};
    const Expr in_value = nchw ? read_input({n, in_channel, iy, ix}) : read_input({n, iy, ix, in_channel});
    const Expr w_value = nchw ? weights(c, r.x, r.y, r.z) : weights(r.y, r.z, r.x, c);

    Func out(name);
    out(out_args) = bias.defined() ? cast(acc, bias(c)) : typed_const(acc, 0);
    out(out_args) += cast(acc, in_value) * cast(acc, w_value);

    const std::vector<Expr> shape = nchw ? std::vector<Expr>{batch, out_channels, out_h, out_w}
                                         : std::vector<Expr>{batch, out_h, out_w, out_channels};
    return Tensor(out, shape);
}

Tensor conv2d(const Tensor &input, const Tensor &weights, const Conv2dOptions &options) {
    return conv2d(input, weights, Tensor(), options);
}

} // namespace tessera::ops
