// Max, average and global average pooling over the two spatial dimensions of a 4-D tensor.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/conv.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

namespace {

/// What max and average pooling share: the checked geometry, the Vars, the RDom over the
/// window and the coordinates it reads.
struct PoolWindow {
    Expr height, width, out_h, out_w;
    Var n{"n"}, c{"c"}, y{"y"}, x{"x"};
    RDom r;
    Expr iy, ix;
    std::vector<Expr> out_args;
    std::vector<Expr> shape;

    /// The input coordinates of window point (r.y, r.x) for output (n, c, y, x), in the layout.
    std::vector<Expr> in_args(bool nchw) const {
        return nchw ? std::vector<Expr>{n, c, iy, ix} : std::vector<Expr>{n, iy, ix, c};
    }
};

PoolWindow make_window(const Tensor &input, const Pool2dOptions &o, const std::string &op, const std::string &name) {
    require_rank(input, 4, "input", op, name);
    check_window(o.stride, o.dilation, o.padding, op, name);
    for (int k : o.kernel)
        if (k < 1) fail(op, name, "kernel size " + std::to_string(k) + " must be >= 1");
    // PyTorch's rule: padding at most half the dilated window, so no window lies entirely in
    // the padding (a max over nothing, an average over nothing).
    const int span_h = o.dilation[0] * (o.kernel[0] - 1) + 1, span_w = o.dilation[1] * (o.kernel[1] - 1) + 1;
    const Padding2d &p = o.padding;
    if (2 * std::max(p.top, p.bottom) > span_h || 2 * std::max(p.left, p.right) > span_w)
        fail(op, name, "padding (" + std::to_string(p.top) + ", " + std::to_string(p.left) + ", " +
                           std::to_string(p.bottom) + ", " + std::to_string(p.right) +
                           ") must be at most half of the window " + std::to_string(span_h) + "x" +
                           std::to_string(span_w));

    const bool nchw = o.layout == Layout::NCHW;
    PoolWindow w;
    w.height = input.dim(nchw ? 2 : 1);
    w.width = input.dim(nchw ? 3 : 2);
    w.out_h = window_extent(w.height, p.top + p.bottom, int_const(o.kernel[0]), o.dilation[0], o.stride[0]);
    w.out_w = window_extent(w.width, p.left + p.right, int_const(o.kernel[1]), o.dilation[1], o.stride[1]);
    for (const Expr &e : {w.out_h, w.out_w})
        if (auto v = const_int(e); v && *v < 1)
            fail(op, name, "the output would be empty: input " + shape_string(input.shape()) + " with a " +
                               std::to_string(o.kernel[0]) + "x" + std::to_string(o.kernel[1]) + " window");
    w.r = RDom(0, o.kernel[1], 0, o.kernel[0], "r");
    w.iy = window_coord(w.y, o.stride[0], w.r.y, o.dilation[0], p.top);
    w.ix = window_coord(w.x, o.stride[1], w.r.x, o.dilation[1], p.left);
    w.out_args = nchw ? std::vector<Expr>{w.n, w.c, w.y, w.x} : std::vector<Expr>{w.n, w.y, w.x, w.c};
    w.shape = nchw ? std::vector<Expr>{input.dim(0), input.dim(1), w.out_h, w.out_w}
                   : std::vector<Expr>{input.dim(0), w.out_h, w.out_w, input.dim(3)};
    return w;
}

bool has_padding(const Padding2d &p) { return p.top || p.left || p.bottom || p.right; }

/// The input at the window point: through a Func `name + "_padded"` holding `outside` beyond
/// the input when there is padding, else straight from the input.
Expr read_window(const Tensor &input, const PoolWindow &w, const Pool2dOptions &o, const Expr &outside,
                 const std::string &name) {
    const std::vector<Expr> args = w.in_args(o.layout == Layout::NCHW);
    if (!has_padding(o.padding)) return input(args);
    return pad_with(input, outside, name + "_padded")(args);
}

/// Number of taps k in [0, kernel) whose coordinate out·stride + k·dilation - pad lies in
/// [0, extent): the divisor of an average that leaves the padding out.
Expr taps_inside(const Expr &out, int stride, int kernel, int dilation, int pad, const Expr &extent) {
    const Expr start = out * stride - pad;
    // first tap with start + k·d >= 0, last with start + k·d <= extent - 1 (floor division)
    const Expr first = max((dilation - 1 - start) / dilation, 0);
    const Expr last = min((extent - 1 - start) / dilation, kernel - 1);
    return max(last - first + 1, 0);
}

} // namespace

Tensor max_pool2d(const Tensor &input, const Pool2dOptions &options) {
    const std::string op = "max_pool2d", name = options.name.empty() ? op : options.name;
    PoolWindow w = make_window(input, options, op, name);
    const Type t = input.type();
    const Expr lowest = typed_const(t, t.min_value());
    const Expr value = read_window(input, w, options, lowest, name);
    Func out(name);
    out(w.out_args) = lowest;
    out(w.out_args) = max(Expr(out(w.out_args)), value);
    return Tensor(out, w.shape);
}

Tensor avg_pool2d(const Tensor &input, const Pool2dOptions &options) {
    const std::string op = "avg_pool2d", name = options.name.empty() ? op : options.name;
    require_float(input, "input", op, name);
    PoolWindow w = make_window(input, options, op, name);
    const Type t = input.type(), ct = compute_type(t);
    const Padding2d &p = options.padding;
    const Expr value = read_window(input, w, options, typed_const(t, 0), name);
    Func sum(name + "_sum");
    sum(w.out_args) = typed_const(ct, 0);
    sum(w.out_args) += cast(ct, value);

    Expr count = int_const(options.kernel[0] * options.kernel[1]);
    if (!options.count_include_pad && has_padding(p))
        count = taps_inside(w.y, options.stride[0], options.kernel[0], options.dilation[0], p.top, w.height) *
                taps_inside(w.x, options.stride[1], options.kernel[1], options.dilation[1], p.left, w.width);
    Func out(name);
    out(w.out_args) = cast(t, Expr(sum(w.out_args)) / cast(ct, count));
    return Tensor(out, w.shape);
}

Tensor global_avg_pool2d(const Tensor &input, Layout layout, const std::string &name) {
    const std::string op = "global_avg_pool2d";
    require_rank(input, 4, "input", op, name);
    require_float(input, "input", op, name);
    const bool nchw = layout == Layout::NCHW;
    const Expr height = input.dim(nchw ? 2 : 1), width = input.dim(nchw ? 3 : 2);
    const Type t = input.type(), ct = compute_type(t);
    Var n("n"), c("c"), y("y"), x("x");
    RDom r(0, width, 0, height, "r");
    const std::vector<Expr> out_args = nchw ? std::vector<Expr>{n, c, y, x} : std::vector<Expr>{n, y, x, c};
    const Expr value = nchw ? input(n, c, r.y, r.x) : input(n, r.y, r.x, c);
    Func sum(name + "_sum");
    sum(out_args) = typed_const(ct, 0);
    sum(out_args) += cast(ct, value);
    Func out(name);
    out(out_args) = cast(t, Expr(sum(out_args)) / cast(ct, height * width));
    const Expr one = int_const(1);
    const std::vector<Expr> shape = nchw ? std::vector<Expr>{input.dim(0), input.dim(1), one, one}
                                         : std::vector<Expr>{input.dim(0), one, one, input.dim(3)};
    return Tensor(out, shape);
}

} // namespace tessera::ops
