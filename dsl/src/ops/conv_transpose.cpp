// conv_transpose2d: conv2d over the zero-upsampled input with the flipped, regrouped weights, so
// every backend and schedule of conv2d serves it.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/conv.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor conv_transpose2d(const Tensor &input, const Tensor &weights, const Tensor &bias, const ConvTranspose2dOptions &o) {
    const std::string op = "conv_transpose2d", &name = o.name;
    require_defined(input, "input", op, name);
    require_defined(weights, "weights", op, name);
    require_rank(input, 4, "input", op, name);
    require_rank(weights, 4, "weights", op, name);
    check_window(o.stride, o.dilation, o.padding, op, name);
    const std::vector<int64_t> xs = input.concrete_shape(), ws = weights.concrete_shape();
    if (o.groups < 1 || xs[1] % o.groups != 0)
        fail(op, name, "groups " + std::to_string(o.groups) + " does not divide the input's " + std::to_string(xs[1]) + " channels");
    if (ws[0] != xs[1])
        fail(op, name, "weights '" + weights.name() + "' " + shape_string(weights.shape()) + " have " + std::to_string(ws[0]) +
                           " input channels but the input '" + input.name() + "' has " + std::to_string(xs[1]));
    const int64_t groups = o.groups, cg = xs[1] / groups, og = ws[1], out_channels = og * groups;
    const int pad_before[2] = {o.padding.top, o.padding.left}, pad_after[2] = {o.padding.bottom, o.padding.right};
    int64_t up_extent[2], out_extent[2], shift[2];
    for (int d = 0; d < 2; ++d) {
        const int64_t k = ws[size_t(2 + d)], span = int64_t(o.dilation[size_t(d)]) * (k - 1);
        if (o.output_padding[size_t(d)] < 0 || o.output_padding[size_t(d)] >= std::max(o.stride[size_t(d)], o.dilation[size_t(d)]))
            fail(op, name, "output padding " + std::to_string(o.output_padding[size_t(d)]) + " must be in [0, max(stride, dilation))");
        out_extent[d] = int64_t(o.stride[size_t(d)]) * (xs[size_t(2 + d)] - 1) + o.output_padding[size_t(d)] + span + 1 -
                        pad_before[d] - pad_after[d];
        if (out_extent[d] < 1) fail(op, name, "the output would be empty (padding larger than the full output)");
        up_extent[d] = out_extent[d] + span;
        shift[d] = span - pad_before[d];
    }
    // up(n, c, y, x): input(n, c, (y - shift) / stride, ...) where that is an input point, else 0.
    Var n("n"), c("c"), y("y"), x("x");
    Expr inside = in_range(Expr(y) - int_const(shift[0]), int_const(int64_t(o.stride[0]) * (xs[2] - 1) + 1)) &&
                  in_range(Expr(x) - int_const(shift[1]), int_const(int64_t(o.stride[1]) * (xs[3] - 1) + 1));
    std::vector<Expr> at{n, c};
    for (int d = 0; d < 2; ++d) {
        const Expr v = d == 0 ? Expr(y) : Expr(x);
        const Expr rel = v - int_const(shift[d]);
        inside = inside && (rel % int_const(o.stride[size_t(d)]) == int_const(0));
        at.push_back(clamp(rel / int_const(o.stride[size_t(d)]), 0, int(xs[size_t(2 + d)] - 1)));
    }
    Func up(name + "_upsampled");
    up(n, c, y, x) = select(inside, input(at), make_zero(input.type()));
    // flipped(o, c, ky, kx) = w(g·Cg + c, o - g·Og, KH-1-ky, KW-1-kx), g = o / Og.
    Var oc("o"), ic("c"), ky("ky"), kx("kx");
    const Expr g = Expr(oc) / int_const(og);
    Func flipped(name + "_flipped");
    flipped(oc, ic, ky, kx) = weights(g * int_const(cg) + ic, Expr(oc) - g * int_const(og), int_const(ws[2] - 1) - ky,
                                      int_const(ws[3] - 1) - kx);
    Conv2dOptions co;
    co.dilation = o.dilation;
    co.groups = o.groups;
    co.name = name;
    return conv2d(Tensor(up, {input.dim(0), input.dim(1), int_const(up_extent[0]), int_const(up_extent[1])}),
                  Tensor(flipped, {int_const(out_channels), int_const(cg), weights.dim(2), weights.dim(3)}), bias, co);
}

} // namespace tessera::ops
