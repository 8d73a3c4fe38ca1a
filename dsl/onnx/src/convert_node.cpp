// One converter per ONNX op type: each reads its node's operands and attributes through
// NodeContext, refuses what it does not support by name, and builds tessera::ops Tensors.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "node_context.h"
#include "onnx_internal.h"
#include "passes/graph_passes.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"

namespace tessera::onnx::internal {

namespace {

using Converter = std::function<std::vector<Value>(NodeContext &)>;

std::vector<Value> one(const ops::Tensor &t, bool scalar = false) { return {Value{t, scalar, std::nullopt}}; }

/// ONNX's shape of a value (a scalar is []).
std::vector<int64_t> onnx_shape(const Value &v) {
    if (v.scalar) return {};
    return v.tensor.concrete_shape();
}

std::string join(const std::vector<int64_t> &v) { return shape_text(v); }

/// A tensor under a new ONNX shape; a rank-0 shape becomes a [1] scalar.
std::vector<Value> reshape_to(NodeContext &ctx, const Value &v, const std::vector<int64_t> &shape) {
    if (shape.empty()) return one(ops::reshape(v.tensor, {1}, ctx.func_name()), true);
    return one(ops::reshape(v.tensor, shape, ctx.func_name()));
}

int normalize_axis(NodeContext &ctx, int64_t axis, int rank, const std::string &what = "axis") {
    if (axis < -rank || axis >= rank)
        ctx.fail("attribute '" + what + "' is " + std::to_string(axis) + "; supported: " + std::to_string(-rank) + " .. " +
                 std::to_string(rank - 1) + " for rank " + std::to_string(rank));
    return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// ---- element-wise ------------------------------------------------------------------------------

Converter unary(std::function<ops::Tensor(NodeContext &, const ops::Tensor &, const std::string &)> fn,
                std::set<std::string> attributes = {}) {
    return [fn, attributes](NodeContext &ctx) {
        ctx.allow_attributes(attributes);
        ctx.require_arity(1, 1, 1);
        const Value &x = ctx.input(0);
        return one(fn(ctx, x.tensor, ctx.func_name()), x.scalar);
    };
}

Converter binary(std::function<ops::Tensor(const ops::Tensor &, const ops::Tensor &, const std::string &)> fn) {
    return [fn](NodeContext &ctx) {
        ctx.allow_attributes({"broadcast", "axis"}); // opset < 7 spelled broadcasting out
        if (ctx.has_attribute("axis")) ctx.fail("attribute 'axis' (legacy broadcasting) is not supported; supported: NumPy broadcasting (opset >= 7)");
        ctx.require_arity(2, 2, 1);
        return one(fn(ctx.tensor(0), ctx.tensor(1), ctx.func_name()), ctx.input(0).scalar && ctx.input(1).scalar);
    };
}

Converter variadic(std::function<ops::Tensor(const ops::Tensor &, const ops::Tensor &, const std::string &)> fn) {
    return [fn](NodeContext &ctx) {
        ctx.allow_attributes({});
        ctx.require_arity(1, 64, 1);
        ops::Tensor acc = ctx.tensor(0);
        bool scalar = ctx.input(0).scalar;
        if (ctx.input_count() == 1) return one(ops::reshape(acc, acc.concrete_shape(), ctx.func_name()), scalar);
        for (int i = 1; i < ctx.input_count(); ++i) {
            acc = fn(acc, ctx.tensor(i), ctx.func_name() + (i + 1 < ctx.input_count() ? "_" + std::to_string(i) : ""));
            scalar = scalar && ctx.input(i).scalar;
        }
        return one(acc, scalar);
    };
}

std::vector<Value> clip(NodeContext &ctx) {
    ctx.require_arity(1, 3, 1);
    const Value &x = ctx.input(0);
    const Type t = x.tensor.type();
    if (ctx.opset() < 11) {
        ctx.allow_attributes({"min", "max"});
        const double lo = ctx.attr_float("min", t.is_float() ? -INFINITY : t.min_value());
        const double hi = ctx.attr_float("max", t.is_float() ? INFINITY : t.max_value());
        return one(ops::clip(x.tensor, lo, hi, ctx.func_name()), x.scalar);
    }
    ctx.allow_attributes({});
    ops::Tensor y = x.tensor;
    const bool lo = ctx.has_input(1), hi = ctx.has_input(2);
    if (lo) y = ops::maximum(y, ctx.tensor(1), ctx.func_name() + (hi ? "_lo" : ""));
    if (hi) y = ops::minimum(y, ctx.tensor(2), ctx.func_name());
    if (!lo && !hi) y = ops::reshape(y, y.concrete_shape(), ctx.func_name());
    return one(y, x.scalar);
}

std::vector<Value> where(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(3, 3, 1);
    return one(ops::where(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.func_name()),
               ctx.input(0).scalar && ctx.input(1).scalar && ctx.input(2).scalar);
}

std::vector<Value> cast(NodeContext &ctx) {
    ctx.allow_attributes({"to", "saturate"});
    ctx.require_arity(1, 1, 1);
    const int64_t to = ctx.attr_int("to", 0);
    const std::optional<Type> t = element_type(static_cast<int>(to));
    if (!t)
        ctx.fail("attribute 'to' is " + data_type_name(static_cast<int>(to)) +
                 "; supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8..INT64, UINT8..UINT64, BOOL");
    return one(ops::cast(ctx.tensor(0), *t, ctx.func_name()), ctx.input(0).scalar);
}

// ---- linear algebra ----------------------------------------------------------------------------

std::vector<Value> matmul(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(2, 2, 1);
    ops::Tensor a = ctx.tensor(0), b = ctx.tensor(1);
    if (ctx.input(0).scalar || ctx.input(1).scalar) ctx.fail("operands must have rank >= 1; a scalar operand is not supported");
    const bool vec_a = a.dimensions() == 1, vec_b = b.dimensions() == 1;
    if (vec_a) a = ops::reshape(a, {1, a.concrete_shape()[0]}, ctx.func_name() + "_a");
    if (vec_b) b = ops::reshape(b, {b.concrete_shape()[0], 1}, ctx.func_name() + "_b");
    ops::Tensor y = ops::matmul(a, b, {.name = (vec_a || vec_b) ? ctx.func_name() + "_2d" : ctx.func_name()});
    std::vector<int64_t> shape = y.concrete_shape();
    const int64_t k = a.concrete_shape().back();
    ctx.macs = product(shape) * k;
    if (vec_a || vec_b) {
        if (vec_b) shape.erase(shape.end() - 1);
        if (vec_a) shape.erase(shape.end() - (vec_b ? 1 : 2));
        if (shape.empty()) return one(ops::reshape(y, {1}, ctx.func_name()), true);
        y = ops::reshape(y, shape, ctx.func_name());
    }
    return one(y);
}

std::vector<Value> gemm(NodeContext &ctx) {
    ctx.allow_attributes({"alpha", "beta", "transA", "transB", "broadcast"});
    ctx.require_arity(2, 3, 1);
    ops::GemmOptions o;
    o.alpha = ctx.attr_float("alpha", 1.0);
    o.beta = ctx.attr_float("beta", 1.0);
    o.transpose_a = ctx.attr_int("transA", 0) != 0;
    o.transpose_b = ctx.attr_int("transB", 0) != 0;
    o.name = ctx.func_name();
    const ops::Tensor c = ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor();
    ops::Tensor y = ops::gemm(ctx.tensor(0), ctx.tensor(1), c, o);
    const std::vector<int64_t> sa = ctx.tensor(0).concrete_shape();
    ctx.macs = product(y.concrete_shape()) * (o.transpose_a ? sa.front() : sa.back());
    return one(y);
}

/// ONNX auto_pad and pads for the two spatial dimensions of a 4-D tensor, as Padding2d.
ops::Padding2d spatial_padding(NodeContext &ctx, const std::vector<int64_t> &in, const std::vector<int64_t> &kernel,
                               const std::array<int, 2> &stride, const std::array<int, 2> &dilation) {
    const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
    if (auto_pad == "NOTSET") {
        const std::vector<int64_t> pads = ctx.attr_ints("pads", {0, 0, 0, 0});
        if (pads.size() != 4) ctx.fail("attribute 'pads' has " + std::to_string(pads.size()) + " entries; supported: 4 (2-D)");
        for (int64_t p : pads)
            if (p < 0 || p > 1 << 20) ctx.fail("attribute 'pads' " + join(pads) + " has an entry outside 0 .. 2^20");
        return ops::Padding2d(int(pads[0]), int(pads[1]), int(pads[2]), int(pads[3]));
    }
    if (auto_pad == "VALID") return ops::Padding2d(0);
    if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
        ctx.fail("attribute 'auto_pad' is '" + auto_pad + "'; supported: NOTSET, VALID, SAME_UPPER, SAME_LOWER");
    int before[2], after[2];
    for (int d = 0; d < 2; ++d) {
        const int64_t out = (in[size_t(d)] + stride[size_t(d)] - 1) / stride[size_t(d)];
        const int64_t total = std::max<int64_t>(0, (out - 1) * stride[size_t(d)] + (kernel[size_t(d)] - 1) * dilation[size_t(d)] + 1 - in[size_t(d)]);
        const int64_t small = total / 2, big = total - small;
        before[d] = int(auto_pad == "SAME_UPPER" ? small : big);
        after[d] = int(auto_pad == "SAME_UPPER" ? big : small);
    }
    return ops::Padding2d(before[0], before[1], after[0], after[1]);
}

std::array<int, 2> pair_attr(NodeContext &ctx, const std::string &name, int fallback) {
    const std::vector<int64_t> v = ctx.attr_ints(name, {fallback, fallback});
    if (v.size() != 2) ctx.fail("attribute '" + name + "' has " + std::to_string(v.size()) + " entries; supported: 2 (2-D)");
    for (int64_t e : v)
        if (e < 1 || e > 1 << 20) ctx.fail("attribute '" + name + "' " + join(v) + " has an entry outside 1 .. 2^20");
    return {int(v[0]), int(v[1])};
}

void require_4d(NodeContext &ctx, const ops::Tensor &x, const std::string &what) {
    if (x.dimensions() != 4)
        ctx.fail(what + " has rank " + std::to_string(x.dimensions()) + "; supported: 2-D spatial (a 4-D NCHW tensor)");
}

/// ONNX Conv of x and w (+ bias) as conv() reads the attributes; the padding holds
/// `pad_value` (an integer conv's shifted zero point, so the padding stays a centred 0).
ops::Tensor conv_of(NodeContext &ctx, const ops::Tensor &x, const ops::Tensor &w, const ops::Tensor &bias,
                    const std::string &name, int64_t pad_value = 0) {
    require_4d(ctx, x, "input X");
    require_4d(ctx, w, "weight W");
    const std::vector<int64_t> ws = w.concrete_shape(), xs = x.concrete_shape();
    ops::Conv2dOptions o;
    o.stride = pair_attr(ctx, "strides", 1);
    o.dilation = pair_attr(ctx, "dilations", 1);
    const int64_t group = ctx.attr_int("group", 1);
    if (group < 1 || group > xs[1]) ctx.fail("attribute 'group' is " + std::to_string(group) + "; supported: 1 .. channels (" + std::to_string(xs[1]) + ")");
    o.groups = int(group);
    if (ctx.has_attribute("kernel_shape") && ctx.attr_ints("kernel_shape") != std::vector<int64_t>{ws[2], ws[3]})
        ctx.fail("attribute 'kernel_shape' " + join(ctx.attr_ints("kernel_shape")) + " differs from the weight's " + join({ws[2], ws[3]}));
    o.padding = spatial_padding(ctx, {xs[2], xs[3]}, {ws[2], ws[3]}, o.stride, o.dilation);
    o.name = name;
    o.pad_value = double(pad_value);
    ops::Tensor y = ops::conv2d(x, w, bias, o);
    ctx.macs = product(y.concrete_shape()) * ws[1] * ws[2] * ws[3];
    return y;
}

std::vector<Value> conv(NodeContext &ctx) {
    ctx.allow_attributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    ctx.require_arity(2, 3, 1);
    return one(conv_of(ctx, ctx.tensor(0), ctx.tensor(1), ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor(), ctx.func_name()));
}

ops::Tensor centred(NodeContext &ctx, int x_index, int zp_index, int axis, const std::string &suffix);

/// An operand of an integer kernel in the form the chips' MXM multiplies: int8 values (a uint8
/// operand shifted down by 128, exactly) and its zero point shifted the same way, so that
/// x - x_zero_point == values - zero_point. The zero point is one value, or one per entry of
/// the operand's quantisation axis.
struct Int8Operand {
    ops::Tensor values;
    std::vector<int64_t> zero_point;
    bool zero_point_is_zero() const {
        return std::all_of(zero_point.begin(), zero_point.end(), [](int64_t z) { return z == 0; });
    }
};

/// The elements of constant input `index` (int8 or uint8), row-major, as int8 values: a uint8
/// one shifted down by 128.
std::vector<int64_t> int8_values(NodeContext &ctx, int index) {
    const Buffer<> &raw = ctx.constant(index);
    const int64_t shift = raw.type() == UInt(8) ? 128 : 0;
    const Buffer<> flat = reshaped(raw, {raw.number_of_elements()});
    std::vector<int64_t> v(size_t(flat.number_of_elements()));
    for (int64_t i = 0; i < flat.number_of_elements(); ++i) v[size_t(i)] = flat.get_as_int({i}) - shift;
    return v;
}

/// The int8 form of input x_index with zero point zp_index, or nothing when the zero point is
/// not known at import (or no constant can be added): the kernel then subtracts it in int32.
/// A constant operand is shifted at import; a computed one by a cast and a subtraction the
/// VXM does (in int32, so uint8 255 - 128 is exact).
std::optional<Int8Operand> int8_operand(NodeContext &ctx, int x_index, int zp_index, const std::string &suffix) {
    const ops::Tensor &x = ctx.tensor(x_index);
    const Type type = x.type();
    if (type != Int(8) && type != UInt(8)) return std::nullopt;
    if (ctx.has_input(zp_index) && !ctx.input(zp_index).constant) return std::nullopt;
    const int64_t shift = type == UInt(8) ? 128 : 0;
    Int8Operand op;
    op.zero_point = ctx.has_input(zp_index) ? ctx.constant_ints(zp_index) : std::vector<int64_t>{0};
    for (int64_t &z : op.zero_point) z -= shift;
    if (shift == 0) {
        op.values = x;
        return op;
    }
    if (!ctx.can_add_constants()) return std::nullopt;
    const std::string name = ctx.func_name() + suffix + "_int8";
    if (ctx.input(x_index).constant) {
        const std::vector<int64_t> values = int8_values(ctx, x_index);
        Buffer<> shifted(Int(8), {int64_t(values.size())});
        for (size_t i = 0; i < values.size(); ++i) shifted.set_from_int({int64_t(i)}, values[i]);
        op.values = ctx.add_constant(name, reshaped(shifted, x.concrete_shape()));
        return op;
    }
    Buffer<> amount(Int(32), {1});
    amount.set_from_int({0}, shift);
    const ops::Tensor wide = ops::cast(x, Int(32), name + "_i32");
    // The clamp never binds (0..255 - 128 fits int8); it states the range, so the chips' VXM
    // narrows without wrapping.
    const ops::Tensor shifted = ops::sub(wide, ctx.add_constant(name + "_shift", amount), name + "_shifted");
    op.values = ops::cast(ops::clip(shifted, -128, 127, name + "_clamped"), Int(8), name);
    return op;
}

/// An int32 constant holding `values` (one, or one per entry) in `shape`.
ops::Tensor int32_constant(NodeContext &ctx, const std::string &name, const std::vector<int64_t> &values, std::vector<int64_t> shape) {
    Buffer<> b(Int(32), {int64_t(values.size())});
    for (size_t i = 0; i < values.size(); ++i) b.set_from_int({int64_t(i)}, values[i]);
    return ctx.add_constant(name, reshaped(b, shape));
}

/// The integer convolution of x - x_zp with w - w_zp (+ an int32 bias), for ConvInteger and
/// QLinearConv; the Conv attributes as conv() reads them. With int8 operands (uint8 shifted)
/// and a weight zero point of 0 it is the int8 conv the chips' MXM maps:
///   Σ (x - zx)·w = conv(x padded with zx, w) - zx·Σ w[o]
/// (the second term joins the bias; a constant when w is one). Otherwise the operands are
/// centred in int32 (the host's form).
ops::Tensor integer_conv(NodeContext &ctx, int x, int x_zp, int w, int w_zp, int bias) {
    require_4d(ctx, ctx.tensor(x), "input X");
    const ops::Tensor b = bias >= 0 && ctx.has_input(bias) ? ctx.tensor(bias) : ops::Tensor();
    const std::string name = ctx.func_name() + (bias >= 0 ? "_acc" : "");
    const std::optional<Int8Operand> x8 = int8_operand(ctx, x, x_zp, "_x"), w8 = int8_operand(ctx, w, w_zp, "_w");
    if (x8 && w8 && w8->zero_point_is_zero() && x8->zero_point.size() == 1) {
        const int64_t zx = x8->zero_point[0];
        if (zx == 0) return conv_of(ctx, x8->values, w8->values, b, name);
        if (ctx.can_add_constants() && ctx.input(w).constant && (!b.defined() || ctx.input(bias).constant)) {
            const std::vector<int64_t> weights = int8_values(ctx, w);
            const int64_t outs = ctx.tensor(w).concrete_shape()[0], per_out = int64_t(weights.size()) / outs;
            std::vector<int64_t> folded(size_t(outs), 0);
            if (b.defined()) folded = ctx.constant_ints(bias);
            for (int64_t o = 0; o < outs; ++o) {
                int64_t sum = 0;
                for (int64_t e = 0; e < per_out; ++e) sum += weights[size_t(o * per_out + e)];
                folded[size_t(o)] -= zx * sum;
            }
            const ops::Tensor folded_bias = int32_constant(ctx, name + "_bias_zp", folded, {outs});
            return conv_of(ctx, x8->values, w8->values, folded_bias, name, zx);
        }
    }
    const ops::Tensor xc = centred(ctx, x, x_zp, 1, "_x"), wc = centred(ctx, w, w_zp, 0, "_w");
    return conv_of(ctx, xc, wc, b, name);
}

/// A 1-D window op (pool, transposed conv) as its 2-D form over [N, C, 1, W]: the window
/// attributes gain a leading height entry (pads {0, begin, 0, end}), the input (and the weight,
/// input `weight`, when >= 0) a height of 1, and the result loses it again.
std::vector<Value> as_2d(NodeContext &ctx, const std::function<std::vector<Value>(NodeContext &)> &convert, int weight);

ops::Tensor pool(NodeContext &ctx, const ops::Tensor &x, ops::Pool2dOptions o, bool is_max);
ops::Tensor max_pool_indices(NodeContext &ctx, const ops::Tensor &x, const ops::Tensor &y, const ops::Pool2dOptions &o);

std::vector<Value> pool(NodeContext &ctx, bool is_max) {
    ctx.allow_attributes(is_max ? std::set<std::string>{"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"}
                                : std::set<std::string>{"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"});
    ctx.require_arity(1, 1, is_max ? 2 : 1);
    if (!ctx.has_attribute("kernel_shape")) ctx.fail("attribute 'kernel_shape' is missing");
    const bool with_indices = ctx.node().output_size() > 1 && !ctx.node().output(1).empty();
    if (with_indices && ctx.tensor(0).dimensions() != 4) ctx.fail("output 1 (Indices) is supported for 2-D pools only");
    if (ctx.tensor(0).dimensions() == 3) return as_2d(ctx, [is_max](NodeContext &c) { return pool(c, is_max); }, -1);
    const ops::Tensor &x = ctx.tensor(0);
    require_4d(ctx, x, "input X");
    const int64_t storage_order = ctx.attr_int("storage_order", 0);
    if (storage_order != 0 && !(storage_order == 1 && with_indices))
        ctx.fail("attribute 'storage_order' is " + std::to_string(storage_order) +
                 "; supported: 0 (row-major), or 1 (column-major) when output 1 (Indices) is used");
    const std::vector<int64_t> xs = x.concrete_shape();
    ops::Pool2dOptions o;
    o.kernel = pair_attr(ctx, "kernel_shape", 1);
    o.stride = pair_attr(ctx, "strides", 1);
    o.dilation = pair_attr(ctx, "dilations", 1);
    o.count_include_pad = ctx.attr_int("count_include_pad", 0) != 0;
    o.padding = spatial_padding(ctx, {xs[2], xs[3]}, {o.kernel[0], o.kernel[1]}, o.stride, o.dilation);
    if (ctx.attr_int("ceil_mode", 0) != 0) {
        // Ceil rounding is floor rounding over an input padded at the end by what the last,
        // partial window needs (ONNX drops a window that would start in the end padding).
        if (!is_max && o.count_include_pad) ctx.fail("attribute 'ceil_mode' = 1 with count_include_pad = 1 is not supported");
        int *after[2] = {&o.padding.bottom, &o.padding.right};
        const int before[2] = {o.padding.top, o.padding.left};
        for (int d = 0; d < 2; ++d) {
            const int64_t span = xs[size_t(2 + d)] + before[d] + *after[d] - (int64_t(o.kernel[size_t(d)]) - 1) * o.dilation[size_t(d)] - 1;
            int64_t out = (span + o.stride[size_t(d)] - 1) / o.stride[size_t(d)] + 1;
            if ((out - 1) * o.stride[size_t(d)] >= xs[size_t(2 + d)] + before[d]) --out;
            const int64_t need = (out - 1) * o.stride[size_t(d)] + (int64_t(o.kernel[size_t(d)]) - 1) * o.dilation[size_t(d)] + 1;
            *after[d] += int(std::max<int64_t>(0, need - (xs[size_t(2 + d)] + before[d] + *after[d])));
        }
    }
    o.name = ctx.func_name();
    if (with_indices) {
        const ops::Tensor y = pool(ctx, x, o, true);
        return {Value{y, false, std::nullopt}, Value{max_pool_indices(ctx, x, y, o), false, std::nullopt}};
    }
    return one(pool(ctx, x, o, is_max));
}

ops::Tensor pool(NodeContext &ctx, const ops::Tensor &x, ops::Pool2dOptions o, bool is_max) {
    const int span_h = o.dilation[0] * (o.kernel[0] - 1) + 1, span_w = o.dilation[1] * (o.kernel[1] - 1) + 1;
    const ops::Padding2d p = o.padding;
    if (2 * std::max(p.top, p.bottom) <= span_h && 2 * std::max(p.left, p.right) <= span_w)
        return is_max ? ops::max_pool2d(x, o) : ops::avg_pool2d(x, o);
    // ONNX allows more padding than the op library's pools (at most half the window): pad
    // explicitly, then pool without padding.
    const std::vector<int64_t> pads{0, 0, p.top, p.left, 0, 0, p.bottom, p.right};
    o.padding = ops::Padding2d(0);
    if (is_max) return ops::max_pool2d(ops::pad(x, pads, ops::PadMode::Constant, x.type().min_value(), ctx.func_name() + "_padded"), o);
    o.count_include_pad = true;
    o.name = ctx.func_name() + "_sum";
    const ops::Tensor sum = ops::avg_pool2d(ops::pad(x, pads, ops::PadMode::Constant, 0, ctx.func_name() + "_padded"), o);
    if (ctx.attr_int("count_include_pad", 0) != 0) return ops::reshape(sum, sum.concrete_shape(), ctx.func_name());
    // Without count_include_pad the divisor is the number of input elements in the window:
    // the same pool over a padded tensor of ones.
    Func ones(ctx.func_name() + "_ones");
    Var n("n"), c("c"), yv("y"), xv("x");
    ones(n, c, yv, xv) = make_one(x.type());
    o.name = ctx.func_name() + "_count";
    const ops::Tensor count = ops::avg_pool2d(ops::pad(ops::Tensor(ones, x.shape()), pads, ops::PadMode::Constant, 0, ctx.func_name() + "_ones_padded"), o);
    return ops::div(sum, count, ctx.func_name());
}

ops::Tensor max_pool_indices(NodeContext &ctx, const ops::Tensor &x, const ops::Tensor &y, const ops::Pool2dOptions &o) {
    // The flat NCHW index of the first window element equal to the maximum (ONNX's Indices with
    // storage_order 0): a min-reduction over the window of the indices where x equals y.
    const std::vector<int64_t> xs = x.concrete_shape();
    Var n("n"), c("c"), oy("y"), ox("x");
    RDom r(0, o.kernel[1], 0, o.kernel[0], "r");
    const Expr iy = Expr(oy) * o.stride[0] + r.y * o.dilation[0] - o.padding.top;
    const Expr ix = Expr(ox) * o.stride[1] + r.x * o.dilation[1] - o.padding.left;
    const Expr inside = iy >= 0 && iy < int(xs[2]) && ix >= 0 && ix < int(xs[3]);
    const Expr v = x(n, c, clamp(iy, 0, int(xs[2] - 1)), clamp(ix, 0, int(xs[3] - 1)));
    // storage_order 1 numbers the spatial positions column-major (h + w·H).
    const Expr plane = (cast(Int(64), n) * xs[1] + cast(Int(64), c)) * (xs[2] * xs[3]);
    const Expr flat = ctx.attr_int("storage_order", 0) == 0 ? plane + cast(Int(64), iy) * xs[3] + cast(Int(64), ix)
                                                             : plane + cast(Int(64), ix) * xs[2] + cast(Int(64), iy);
    const Expr none = make_const(Int(64), std::numeric_limits<int64_t>::max());
    Func idx(ctx.func_name(1));
    idx(n, c, oy, ox) = none;
    idx(n, c, oy, ox) = min(idx(n, c, oy, ox), select(inside && v == y(n, c, oy, ox), flat, none));
    return ops::Tensor(idx, y.shape());
}

std::vector<Value> as_2d(NodeContext &ctx, const std::function<std::vector<Value>(NodeContext &)> &convert, int weight) {
    ::onnx::NodeProto node = ctx.node();
    for (auto &a : *node.mutable_attribute()) {
        const std::string &n = a.name();
        if (n != "kernel_shape" && n != "strides" && n != "dilations" && n != "pads" && n != "output_padding" && n != "output_shape")
            continue;
        std::vector<int64_t> v(a.ints().begin(), a.ints().end());
        if (n == "pads" && v.size() == 2) v = {0, v[0], 0, v[1]};
        else if (v.size() == 1) v.insert(v.begin(), n == "output_padding" ? 0 : 1);
        else ctx.fail("attribute '" + n + "' " + join(v) + " does not fit a 1-D window");
        a.clear_ints();
        for (int64_t e : v) a.add_ints(e);
    }
    std::vector<std::optional<Value>> inputs;
    for (int i = 0; i < ctx.input_count(); ++i) {
        if (!ctx.has_input(i)) {
            inputs.emplace_back();
            continue;
        }
        Value v = ctx.input(i);
        if (i == 0 || i == weight) {
            const std::vector<int64_t> s3 = v.tensor.concrete_shape();
            if (s3.size() != 3) ctx.fail("input " + std::to_string(i) + " has rank " + std::to_string(s3.size()) + "; a 1-D window op needs 3");
            v.tensor = ops::reshape(v.tensor, {s3[0], s3[1], 1, s3[2]}, ctx.func_name() + "_2d_" + std::to_string(i));
        }
        inputs.emplace_back(v);
    }
    NodeContext inner(node, ctx.opset(), std::move(inputs), ctx.func_name() + "_");
    const ops::Tensor y = convert(inner)[0].tensor;
    ctx.macs = inner.macs;
    const std::vector<int64_t> ys = y.concrete_shape();
    return one(ops::reshape(y, {ys[0], ys[1], ys[3]}, ctx.func_name()));
}

std::vector<Value> global_average_pool(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(1, 1, 1);
    require_4d(ctx, ctx.tensor(0), "input X");
    return one(ops::global_avg_pool2d(ctx.tensor(0), ops::Layout::NCHW, ctx.func_name()));
}

// ---- normalisation -----------------------------------------------------------------------------

/// A [1] tensor holding `value`, for the scalar factors of a formula.
ops::Tensor scalar_tensor(Type type, double value, const std::string &name) {
    Func f(name);
    Var i("i");
    f(i) = make_const(type, value);
    return ops::Tensor(f, {Expr(1)});
}

/// BatchNormalization in training mode: normalised with the batch's own statistics (mean and
/// biased variance over every axis but the channels), and the running statistics updated as
/// input · momentum + batch · (1 - momentum).
std::vector<Value> batch_normalization_training(NodeContext &ctx) {
    const ops::Tensor &x = ctx.tensor(0);
    const int rank = x.dimensions();
    const std::string base = ctx.func_name();
    std::vector<int> axes{0};
    std::vector<int64_t> channel_shape{x.concrete_shape()[1]};
    for (int d = 2; d < rank; ++d) {
        axes.push_back(d);
        channel_shape.push_back(1);
    }
    const ops::Tensor mean = ops::reduce_mean(x, axes, false, base + "_mean");
    const ops::Tensor centred = ops::sub(x, ops::reshape(mean, channel_shape, base + "_mean_c"), base + "_centred");
    const ops::Tensor var = ops::reduce_mean(ops::mul(centred, centred, base + "_sq"), axes, false, base + "_var");
    const double momentum = ctx.attr_float("momentum", 0.9);
    const Type t = x.type();
    auto running = [&](int input, const ops::Tensor &batch, int output) {
        const ops::Tensor kept = ops::mul(ctx.tensor(input), scalar_tensor(t, momentum, base + "_m" + std::to_string(output)),
                                          base + "_kept" + std::to_string(output));
        const ops::Tensor fresh = ops::mul(batch, scalar_tensor(t, 1 - momentum, base + "_1m" + std::to_string(output)),
                                           base + "_fresh" + std::to_string(output));
        return Value{ops::add(kept, fresh, ctx.func_name(output)), false, std::nullopt};
    };
    std::vector<Value> outs =
        one(ops::batchnorm(x, ctx.tensor(1), ctx.tensor(2), mean, var, ctx.attr_float("epsilon", 1e-5), 1, base));
    if (ctx.node().output_size() > 1) outs.push_back(running(3, mean, 1));
    if (ctx.node().output_size() > 2) outs.push_back(running(4, var, 2));
    return outs;
}

std::vector<Value> batch_normalization(NodeContext &ctx) {
    ctx.allow_attributes({"epsilon", "momentum", "spatial", "training_mode", "is_test"});
    const bool training = ctx.attr_int("training_mode", 0) != 0;
    ctx.require_arity(5, 5, training ? 3 : 1);
    if (ctx.attr_int("spatial", 1) != 1) ctx.fail("attribute 'spatial' is 0; supported: 1");
    if (ctx.tensor(0).dimensions() < 2) ctx.fail("input X has rank " + std::to_string(ctx.tensor(0).dimensions()) + "; supported: rank >= 2 (N, C, ...)");
    if (training) return batch_normalization_training(ctx);
    return one(ops::batchnorm(ctx.tensor(0), ctx.tensor(1), ctx.tensor(2), ctx.tensor(3), ctx.tensor(4),
                              ctx.attr_float("epsilon", 1e-5), 1, ctx.func_name()));
}

std::vector<Value> layer_normalization(NodeContext &ctx) {
    ctx.allow_attributes({"axis", "epsilon", "stash_type"});
    ctx.require_arity(2, 3, 3);
    if (ctx.attr_int("stash_type", 1) != 1) ctx.fail("attribute 'stash_type' is not 1; supported: 1 (fp32 statistics)");
    const ops::Tensor &x = ctx.tensor(0);
    const int axis = normalize_axis(ctx, ctx.attr_int("axis", -1), x.dimensions());
    const ops::Tensor beta = ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor();
    // Scale and bias may broadcast (a lower rank than the normalised dimensions): expand them.
    const std::vector<int64_t> xs = x.concrete_shape();
    const std::vector<int64_t> norm_shape(xs.begin() + axis, xs.end());
    auto full = [&](const ops::Tensor &t, const std::string &suffix) {
        if (!t.defined() || t.concrete_shape() == norm_shape) return t;
        return ops::expand(t, norm_shape, ctx.func_name() + suffix);
    };
    const double epsilon = ctx.attr_float("epsilon", 1e-5);
    const ops::Tensor y = ops::layernorm(x, full(ctx.tensor(1), "_scale"), full(beta, "_bias"), x.dimensions() - axis, epsilon,
                                         ctx.func_name());
    std::vector<Value> outs = one(y);
    if (ctx.node().output_size() < 2) return outs;
    // Mean and InvStdDev: the layernorm's own statistics Funcs, shaped as ONNX keeps them
    // (the normalised dimensions as 1s).
    std::vector<int64_t> stat_shape(xs.begin(), xs.begin() + axis), onnx_stat_shape = stat_shape;
    if (stat_shape.empty()) stat_shape.push_back(1);
    onnx_stat_shape.resize(xs.size(), 1);
    std::vector<Expr> stat_extents;
    for (int64_t e : stat_shape) stat_extents.push_back(Expr(static_cast<int>(e)));
    Func mean, var;
    for (const Func &f : Pipeline(Func(y)).functions()) {
        if (f.name() == ctx.func_name() + "_mean") mean = f;
        if (f.name() == ctx.func_name() + "_var") var = f;
    }
    if (!mean.defined() || !var.defined()) ctx.fail("internal: layernorm's statistics Funcs not found");
    std::vector<Var> vars;
    std::vector<Expr> args;
    for (size_t d = 0; d < stat_shape.size(); ++d) {
        vars.emplace_back("d" + std::to_string(d));
        args.push_back(vars.back());
    }
    Func inv(ctx.func_name(2) + "_stat");
    inv(args) = make_one(var.type()) / sqrt(Expr(var(args)) + make_const(var.type(), epsilon));
    outs.push_back(Value{ops::reshape(ops::Tensor(mean, stat_extents), onnx_stat_shape, ctx.func_name(1)), false, std::nullopt});
    outs.push_back(Value{ops::reshape(ops::Tensor(inv, stat_extents), onnx_stat_shape, ctx.func_name(2)), false, std::nullopt});
    return outs;
}

Converter softmax(bool log) {
    return [log](NodeContext &ctx) {
        ctx.allow_attributes({"axis"});
        ctx.require_arity(1, 1, 1);
        const ops::Tensor &x = ctx.tensor(0);
        const int rank = x.dimensions();
        const bool legacy = ctx.opset() < 13;
        const int axis = normalize_axis(ctx, ctx.attr_int("axis", legacy ? 1 : -1), rank);
        auto fn = [&](const ops::Tensor &t, int a, const std::string &name) {
            return log ? ops::log_softmax(t, a, name) : ops::softmax(t, a, name);
        };
        if (!legacy || axis == rank - 1) return one(fn(x, axis, ctx.func_name()));
        // Before opset 13 the input is coerced to 2-D at `axis` and normalised over the rows.
        const std::vector<int64_t> xs = x.concrete_shape();
        const int64_t outer = product({xs.begin(), xs.begin() + axis}), inner = product({xs.begin() + axis, xs.end()});
        const ops::Tensor flat = ops::reshape(x, {outer, inner}, ctx.func_name() + "_2d");
        return one(ops::reshape(fn(flat, 1, ctx.func_name() + "_rows"), xs, ctx.func_name()));
    };
}

// ---- reductions --------------------------------------------------------------------------------

Converter reduce(std::function<ops::Tensor(const ops::Tensor &, const std::vector<int> &, bool, const std::string &)> fn,
                 bool axes_input_from_13) {
    return [fn, axes_input_from_13](NodeContext &ctx) {
        const bool axes_as_input = axes_input_from_13 && ctx.opset() >= 13;
        ctx.allow_attributes(axes_as_input ? std::set<std::string>{"keepdims", "noop_with_empty_axes"}
                                           : std::set<std::string>{"axes", "keepdims"});
        ctx.require_arity(1, axes_as_input ? 2 : 1, 1);
        const Value &x = ctx.input(0);
        const int rank = x.scalar ? 0 : x.tensor.dimensions();
        std::vector<int64_t> axes = axes_as_input ? (ctx.has_input(1) ? ctx.constant_ints(1) : std::vector<int64_t>{})
                                                  : ctx.attr_ints("axes");
        const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
        if (axes.empty() && ctx.attr_int("noop_with_empty_axes", 0) != 0)
            return one(ops::reshape(x.tensor, x.tensor.concrete_shape(), ctx.func_name()), x.scalar);
        if (rank == 0) return one(ops::reshape(x.tensor, {1}, ctx.func_name()), true);
        std::vector<int> ax;
        for (int64_t a : axes) ax.push_back(normalize_axis(ctx, a, rank, "axes"));
        const bool all = ax.empty() || int(std::set<int>(ax.begin(), ax.end()).size()) == rank;
        return one(fn(x.tensor, ax, keepdims, ctx.func_name()), all && !keepdims);
    };
}

// ---- shapes ------------------------------------------------------------------------------------

std::vector<Value> reshape(NodeContext &ctx) {
    ctx.allow_attributes({"allowzero"});
    ctx.require_arity(2, 2, 1);
    const Value &x = ctx.input(0);
    const std::vector<int64_t> in = onnx_shape(x);
    std::vector<int64_t> shape = ctx.constant_ints(1);
    if (ctx.attr_int("allowzero", 0) == 0)
        for (size_t d = 0; d < shape.size(); ++d)
            if (shape[d] == 0) {
                if (d >= in.size()) ctx.fail("shape " + join(shape) + " copies dimension " + std::to_string(d) + " (0) that the input " + join(in) + " lacks");
                shape[d] = in[d];
            }
    for (int64_t e : shape)
        if (e < -1 || e > std::numeric_limits<int32_t>::max()) ctx.fail("shape " + join(shape) + " has the entry " + std::to_string(e));
    return reshape_to(ctx, x, shape);
}

std::vector<Value> flatten(NodeContext &ctx) {
    ctx.allow_attributes({"axis"});
    ctx.require_arity(1, 1, 1);
    const Value &x = ctx.input(0);
    const std::vector<int64_t> in = onnx_shape(x);
    const int rank = int(in.size());
    int64_t axis = ctx.attr_int("axis", 1);
    if (axis < -rank || axis > rank) ctx.fail("attribute 'axis' is " + std::to_string(axis) + "; supported: " + std::to_string(-rank) + " .. " + std::to_string(rank));
    if (axis < 0) axis += rank;
    return one(ops::reshape(x.tensor, {product({in.begin(), in.begin() + axis}), product({in.begin() + axis, in.end()})}, ctx.func_name()));
}

std::vector<Value> transpose(NodeContext &ctx) {
    ctx.allow_attributes({"perm"});
    ctx.require_arity(1, 1, 1);
    const Value &x = ctx.input(0);
    const int rank = x.tensor.dimensions();
    std::vector<int64_t> perm = ctx.attr_ints("perm");
    if (perm.empty())
        for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
    if (int(perm.size()) != rank) ctx.fail("attribute 'perm' " + join(perm) + " has " + std::to_string(perm.size()) + " entries; the input has rank " + std::to_string(rank));
    std::vector<int> p;
    for (int64_t e : perm) p.push_back(normalize_axis(ctx, e, rank, "perm"));
    return one(ops::permute(x.tensor, p, ctx.func_name()), x.scalar);
}

std::vector<Value> squeeze(NodeContext &ctx, bool unsqueeze) {
    const bool axes_input = ctx.opset() >= 13;
    ctx.allow_attributes(axes_input ? std::set<std::string>{} : std::set<std::string>{"axes"});
    ctx.require_arity(1, axes_input ? 2 : 1, 1);
    const Value &x = ctx.input(0);
    const std::vector<int64_t> in = onnx_shape(x);
    const std::vector<int64_t> axes = axes_input ? (ctx.has_input(1) ? ctx.constant_ints(1) : std::vector<int64_t>{}) : ctx.attr_ints("axes");
    std::vector<int64_t> out;
    if (unsqueeze) {
        const int rank = int(in.size() + axes.size());
        std::vector<bool> inserted(size_t(rank), false);
        for (int64_t a : axes) {
            const int n = normalize_axis(ctx, a, rank, "axes");
            if (inserted[size_t(n)]) ctx.fail("axes " + join(axes) + " name axis " + std::to_string(n) + " twice");
            inserted[size_t(n)] = true;
        }
        if (axes.empty()) ctx.fail("axes are empty; Unsqueeze needs at least one");
        size_t k = 0;
        for (int d = 0; d < rank; ++d) out.push_back(inserted[size_t(d)] ? 1 : in[k++]);
    } else {
        std::vector<bool> drop(in.size(), axes.empty());
        for (int64_t a : axes) {
            const int n = normalize_axis(ctx, a, int(in.size()), "axes");
            if (in[size_t(n)] != 1) ctx.fail("axis " + std::to_string(a) + " has extent " + std::to_string(in[size_t(n)]) + "; only extent-1 axes can be squeezed");
            drop[size_t(n)] = true;
        }
        for (size_t d = 0; d < in.size(); ++d)
            if (!(drop[d] && in[d] == 1)) out.push_back(in[d]);
    }
    return reshape_to(ctx, x, out);
}

std::vector<Value> concat(NodeContext &ctx) {
    ctx.allow_attributes({"axis"});
    ctx.require_arity(1, 1024, 1);
    std::vector<ops::Tensor> xs;
    for (int i = 0; i < ctx.input_count(); ++i) xs.push_back(ctx.tensor(i));
    const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), xs[0].dimensions());
    return one(ops::concat(xs, axis, ctx.func_name()));
}

std::vector<Value> slice(NodeContext &ctx) {
    const bool legacy = ctx.opset() < 10;
    ctx.allow_attributes(legacy ? std::set<std::string>{"starts", "ends", "axes"} : std::set<std::string>{});
    ctx.require_arity(legacy ? 1 : 3, legacy ? 1 : 5, 1);
    const Value &x = ctx.input(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (legacy) {
        starts = ctx.attr_ints("starts");
        ends = ctx.attr_ints("ends");
        axes = ctx.attr_ints("axes");
    } else {
        starts = ctx.constant_ints(1);
        ends = ctx.constant_ints(2);
        if (ctx.has_input(3)) axes = ctx.constant_ints(3);
        if (ctx.has_input(4)) steps = ctx.constant_ints(4);
    }
    return one(ops::slice(x.tensor, starts, ends, axes, steps, ctx.func_name()));
}

std::vector<Value> gather(NodeContext &ctx) {
    ctx.allow_attributes({"axis"});
    ctx.require_arity(2, 2, 1);
    const Value &x = ctx.input(0), &indices = ctx.input(1);
    const int rank = x.tensor.dimensions();
    const int axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank);
    if (!indices.scalar) return one(ops::gather(x.tensor, indices.tensor, axis, ctx.func_name()));
    ops::Tensor g = ops::gather(x.tensor, indices.tensor, axis, ctx.func_name() + "_1");
    std::vector<int64_t> shape = g.concrete_shape();
    shape.erase(shape.begin() + axis);
    if (shape.empty()) return one(ops::reshape(g, {1}, ctx.func_name()), true);
    return one(ops::reshape(g, shape, ctx.func_name()));
}

std::vector<Value> expand(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(2, 2, 1);
    return one(ops::expand(ctx.tensor(0), ctx.constant_ints(1), ctx.func_name()));
}

std::vector<Value> pad(NodeContext &ctx) {
    const bool legacy = ctx.opset() < 11;
    ctx.allow_attributes(legacy ? std::set<std::string>{"mode", "pads", "value"} : std::set<std::string>{"mode"});
    ctx.require_arity(1, legacy ? 1 : 3, 1);
    const std::string mode = ctx.attr_string("mode", "constant");
    ops::PadMode m = ops::PadMode::Constant;
    if (mode == "edge") m = ops::PadMode::Edge;
    else if (mode == "reflect") m = ops::PadMode::Reflect;
    else if (mode != "constant") ctx.fail("attribute 'mode' is '" + mode + "'; supported: constant, edge, reflect");
    const std::vector<int64_t> pads = legacy ? ctx.attr_ints("pads") : ctx.constant_ints(1);
    const double value = legacy ? ctx.attr_float("value", 0) : (ctx.has_input(2) ? ctx.constant_scalar(2) : 0.0);
    return one(ops::pad(ctx.tensor(0), pads, m, value, ctx.func_name()));
}

std::vector<Value> conv_transpose(NodeContext &ctx);
std::vector<Value> conv_transpose(NodeContext &ctx) {
    ctx.allow_attributes({"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
    ctx.require_arity(2, 3, 1);
    if (ctx.tensor(0).dimensions() == 3) return as_2d(ctx, conv_transpose, 1);
    const ops::Tensor &x = ctx.tensor(0), &w = ctx.tensor(1);
    require_4d(ctx, x, "input X");
    require_4d(ctx, w, "weight W");
    const std::vector<int64_t> xs = x.concrete_shape(), ws = w.concrete_shape();
    ops::ConvTranspose2dOptions o;
    o.stride = pair_attr(ctx, "strides", 1);
    o.dilation = pair_attr(ctx, "dilations", 1);
    const int64_t group = ctx.attr_int("group", 1);
    if (group < 1 || group > xs[1]) ctx.fail("attribute 'group' is " + std::to_string(group) + "; supported: 1 .. channels");
    o.groups = int(group);
    const std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", {0, 0});
    if (out_pad.size() != 2) ctx.fail("attribute 'output_padding' has " + std::to_string(out_pad.size()) + " entries; supported: 2 (2-D)");
    o.output_padding = {int(std::clamp<int64_t>(out_pad[0], -1, 1 << 20)), int(std::clamp<int64_t>(out_pad[1], -1, 1 << 20))};
    const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
    const std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
    if (!output_shape.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        // The padding that gives the requested output (ONNX: total = stride·(in-1) + output_padding
        // + dilation·(k-1) + 1 - out, split as auto_pad says).
        int before[2], after[2];
        for (int d = 0; d < 2; ++d) {
            const int64_t in = xs[size_t(2 + d)], k = ws[size_t(2 + d)];
            int64_t out = in * o.stride[size_t(d)];
            if (!output_shape.empty()) {
                if (output_shape.size() != 2 && output_shape.size() != 4) ctx.fail("attribute 'output_shape' " + join(output_shape) + " must have 2 entries");
                out = output_shape[output_shape.size() - 2 + size_t(d)];
            }
            int64_t total = o.stride[size_t(d)] * (in - 1) + o.output_padding[size_t(d)] + (k - 1) * o.dilation[size_t(d)] + 1 - out;
            if (total < 0 && -total < std::max(o.stride[size_t(d)], o.dilation[size_t(d)]) - o.output_padding[size_t(d)]) {
                // A larger output than the full one: the rows beyond it are output padding.
                o.output_padding[size_t(d)] += int(-total);
                total = 0;
            }
            if (total < 0 || total > 1 << 20) ctx.fail("attribute 'output_shape' " + join(output_shape) + " does not fit the input " + join(xs));
            const int64_t half = total / 2;
            before[d] = int(auto_pad == "SAME_UPPER" ? half : total - half);
            after[d] = int(total - before[d]);
        }
        o.padding = ops::Padding2d(before[0], before[1], after[0], after[1]);
    } else {
        o.padding = spatial_padding(ctx, {xs[2], xs[3]}, {ws[2], ws[3]}, o.stride, o.dilation);
    }
    o.name = ctx.func_name();
    ops::Tensor y = ops::conv_transpose2d(x, w, ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor(), o);
    ctx.macs = product(xs) * ws[1] * ws[2] * ws[3];
    return one(y);
}

std::vector<Value> einsum(NodeContext &ctx) {
    ctx.allow_attributes({"equation"});
    ctx.require_arity(1, 16, 1);
    std::vector<ops::Tensor> xs;
    for (int i = 0; i < ctx.input_count(); ++i) xs.push_back(ctx.tensor(i));
    const std::string equation = ctx.attr_string("equation", "");
    const ops::Tensor y = ops::einsum(equation, xs, ctx.func_name());
    // A scalar result: an explicit empty output, or an implicit one with no letter seen once.
    const size_t arrow = equation.find("->");
    bool scalar = arrow != std::string::npos && equation.find_first_not_of(' ', arrow + 2) == std::string::npos;
    if (arrow == std::string::npos) {
        std::map<char, int> seen;
        for (char ch : equation)
            if (std::isalpha(static_cast<unsigned char>(ch))) ++seen[ch];
        scalar = std::none_of(seen.begin(), seen.end(), [](const auto &p) { return p.second == 1; });
    }
    return one(y, scalar);
}

/// ONNX LSTM, one layer, forward: the sequence unrolled into ops::lstm_cell steps. ONNX orders the
/// gates i, o, f, c; lstm_cell (PyTorch) i, f, g, o, so the weights' row blocks are reordered.
std::vector<Value> lstm(NodeContext &ctx) {
    ctx.allow_attributes({"activations", "direction", "hidden_size", "layout", "input_forget", "clip", "activation_alpha", "activation_beta"});
    ctx.require_arity(3, 7, 3);
    if (ctx.attr_string("direction", "forward") != "forward")
        ctx.fail("attribute 'direction' is '" + ctx.attr_string("direction", "") + "'; supported: forward");
    if (ctx.has_attribute("clip")) ctx.fail("attribute 'clip' is not supported; supported: no clipping");
    if (ctx.attr_int("input_forget", 0) != 0) ctx.fail("attribute 'input_forget' is 1; supported: 0");
    if (ctx.has_attribute("activations") || ctx.has_attribute("activation_alpha") || ctx.has_attribute("activation_beta"))
        ctx.fail("attributes 'activations', 'activation_alpha', 'activation_beta' are not supported; supported: the default Sigmoid, Tanh, Tanh");
    if (ctx.has_input(4)) ctx.fail("input 4 'sequence_lens' is not supported; supported: every sequence of full length");
    if (ctx.input_count() > 7 || (ctx.node().input_size() == 8 && !ctx.node().input(7).empty()))
        ctx.fail("input 7 'P' (peepholes) is not supported");
    const int64_t layout = ctx.attr_int("layout", 0);
    if (layout != 0 && layout != 1) ctx.fail("attribute 'layout' is " + std::to_string(layout) + "; supported: 0, 1");
    const ops::Tensor &X = ctx.tensor(0), &W = ctx.tensor(1), &R = ctx.tensor(2);
    if (X.dimensions() != 3) ctx.fail("input X has rank " + std::to_string(X.dimensions()) + "; supported: 3");
    // ONNX's shape inference runs after the converters, so W's and R's shapes are checked here.
    if (W.dimensions() != 3 || R.dimensions() != 3)
        ctx.fail("inputs W and R have ranks " + std::to_string(W.dimensions()) + " and " + std::to_string(R.dimensions()) +
                 "; supported: 3 ([directions, 4*hidden, input] and [directions, 4*hidden, hidden])");
    const std::vector<int64_t> xs = X.concrete_shape(), wsh = W.concrete_shape(), rsh = R.concrete_shape();
    const int64_t seq = layout ? xs[1] : xs[0], batch = layout ? xs[0] : xs[1], in = xs[2], H = wsh[1] / 4;
    if (wsh[0] != 1) ctx.fail("weight W has " + std::to_string(wsh[0]) + " directions; supported: 1 (forward)");
    if (H < 1 || wsh[1] != 4 * H || wsh[2] != in || rsh != std::vector<int64_t>{1, 4 * H, H})
        ctx.fail("weights W " + shape_text(wsh) + " and R " + shape_text(rsh) + " do not match input X " + shape_text(xs) +
                 "; expected W [1, 4*hidden, " + std::to_string(in) + "] and R [1, 4*hidden, hidden]");
    if (ctx.has_attribute("hidden_size") && ctx.attr_int("hidden_size", 0) != H)
        ctx.fail("attribute 'hidden_size' " + std::to_string(ctx.attr_int("hidden_size", 0)) + " differs from W's " + std::to_string(H));
    const std::string base = ctx.func_name();
    // Rows [i, o, f, c] of a [4H, K] matrix (or [4H] vector) → [i, f, c, o]. Constant weights
    // (the usual case) are reordered here, once, so the matmuls read a plain constant (the chip
    // backends map only that onto their matrix units); others by slices and a concat.
    auto reorder = [&](const ops::Tensor &m, int64_t row0, const std::string &suffix, const std::optional<Buffer<>> &contents) {
        const int64_t k = m.dimensions() == 2 ? m.concrete_shape()[1] : 0;
        if (contents && ctx.can_add_constants()) {
            const Buffer<> dense = contents->copy();
            const int64_t row_bytes = std::max<int64_t>(k, 1) * dense.type().bytes(), block_bytes = H * row_bytes;
            Buffer<> out(dense.type(), k ? std::vector<int64_t>{4 * H, k} : std::vector<int64_t>{4 * H});
            const auto *from = static_cast<const uint8_t *>(dense.data()) + row0 * row_bytes;
            auto *to = static_cast<uint8_t *>(out.data());
            int64_t at = 0;
            for (int64_t block : {0, 2, 3, 1}) std::memcpy(to + block_bytes * at++, from + block * block_bytes, size_t(block_bytes));
            return ctx.add_constant(base + suffix, out);
        }
        std::vector<ops::Tensor> parts;
        for (int64_t block : {0, 2, 3, 1}) {
            const std::string n = base + suffix + "_" + std::to_string(block);
            parts.push_back(k ? ops::slice(m, {row0 + block * H, 0}, {row0 + (block + 1) * H, k}, {0, 1}, {}, n)
                              : ops::slice(m, {row0 + block * H}, {row0 + (block + 1) * H}, {0}, {}, n));
        }
        return ops::concat(parts, 0, base + suffix);
    };
    const ops::Tensor w_ih = reorder(ops::reshape(W, {4 * H, in}, base + "_w2d"), 0, "_wih", ctx.input(1).constant);
    const ops::Tensor w_hh = reorder(ops::reshape(R, {4 * H, H}, base + "_r2d"), 0, "_whh", ctx.input(2).constant);
    ops::Tensor b_ih, b_hh;
    if (ctx.has_input(3)) {
        const ops::Tensor b = ops::reshape(ctx.tensor(3), {8 * H}, base + "_b1d");
        b_ih = reorder(b, 0, "_bih", ctx.input(3).constant);
        b_hh = reorder(b, 4 * H, "_bhh", ctx.input(3).constant);
    }
    auto initial = [&](int index, const std::string &suffix) {
        if (ctx.has_input(index)) return ops::reshape(ctx.tensor(index), {batch, H}, base + suffix);
        Func zero(base + suffix);
        Var n("n"), u("u");
        zero(n, u) = make_zero(X.type());
        return ops::Tensor(zero, {Expr(int(batch)), Expr(int(H))});
    };
    ops::Tensor h = initial(5, "_h0"), c = initial(6, "_c0");
    std::vector<ops::Tensor> hs;
    for (int64_t t = 0; t < seq; ++t) {
        const std::string step = base + "_t" + std::to_string(t);
        const ops::Tensor x_t = layout ? ops::reshape(ops::slice(X, {t}, {t + 1}, {1}, {}, step + "_xs"), {batch, in}, step + "_x")
                                       : ops::reshape(ops::slice(X, {t}, {t + 1}, {0}, {}, step + "_xs"), {batch, in}, step + "_x");
        const ops::LstmState s = ops::lstm_cell(x_t, h, c, w_ih, w_hh, b_ih, b_hh, step);
        h = s.h;
        c = s.c;
        hs.push_back(layout ? ops::reshape(h, {batch, 1, 1, H}, step + "_y") : ops::reshape(h, {1, 1, batch, H}, step + "_y"));
    }
    ctx.macs = seq * batch * 4 * H * (in + H);
    std::vector<Value> outs;
    outs.push_back(Value{hs.size() == 1 ? hs[0] : ops::concat(hs, layout ? 1 : 0, ctx.func_name(0)), false, std::nullopt});
    const std::vector<int64_t> state_shape = layout ? std::vector<int64_t>{batch, 1, H} : std::vector<int64_t>{1, batch, H};
    outs.push_back(Value{ops::reshape(h, state_shape, ctx.func_name(1)), false, std::nullopt});
    outs.push_back(Value{ops::reshape(c, state_shape, ctx.func_name(2)), false, std::nullopt});
    return outs;
}

// ---- quantised ops -----------------------------------------------------------------------------

/// The axis of a per-axis scale; ignored (0) for a per-tensor one, as ONNX does.
int quantization_axis(NodeContext &ctx, const Value &x) {
    const bool per_tensor = ctx.input(1).scalar || product(ctx.tensor(1).concrete_shape()) == 1;
    if (x.scalar || per_tensor) return 0;
    return normalize_axis(ctx, ctx.attr_int("axis", 1), x.tensor.dimensions());
}

std::vector<Value> dequantize_linear(NodeContext &ctx) {
    ctx.allow_attributes({"axis"});
    ctx.require_arity(2, 3, 1);
    const Value &x = ctx.input(0);
    const int axis = quantization_axis(ctx, x);
    return one(ops::dequantize_linear(x.tensor, ctx.tensor(1), ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor(), axis,
                                      ctx.func_name()),
               x.scalar);
}

std::vector<Value> quantize_linear(NodeContext &ctx) {
    ctx.allow_attributes({"axis"});
    ctx.require_arity(2, 3, 1);
    const Value &x = ctx.input(0);
    const int axis = quantization_axis(ctx, x);
    return one(ops::quantize_linear(x.tensor, ctx.tensor(1), ctx.has_input(2) ? ctx.tensor(2) : ops::Tensor(), axis,
                                    ctx.func_name()),
               x.scalar);
}

/// x - zero_point in int32 (the zero point broadcast as ONNX gives it: one value, or one per
/// entry of `axis` of x), so the integer kernels see exact, centred operands.
ops::Tensor centred(NodeContext &ctx, int x_index, int zp_index, int axis, const std::string &suffix) {
    const ops::Tensor &x = ctx.tensor(x_index);
    const ops::Tensor x32 = ops::cast(x, Int(32), ctx.func_name() + suffix + "_i32");
    if (!ctx.has_input(zp_index)) return x32;
    // A zero point known to be 0 (symmetric quantisation) subtracts nothing: the product then
    // reads the operand only cast, the form the chips' MXM maps.
    if (ctx.input(zp_index).constant) {
        const std::vector<int64_t> zps = ctx.constant_ints(zp_index);
        if (std::all_of(zps.begin(), zps.end(), [](int64_t z) { return z == 0; })) return x32;
    }
    ops::Tensor zp = ops::cast(ctx.tensor(zp_index), Int(32), ctx.func_name() + suffix + "_zp");
    const std::vector<int64_t> zs = zp.concrete_shape(), xs = x.concrete_shape();
    if (zp.dimensions() == 1 && zs[0] != 1) { // per-axis: shape it to broadcast along axis
        std::vector<int64_t> shape(xs.size() - size_t(axis), 1);
        shape[0] = zs[0];
        zp = ops::reshape(zp, shape, ctx.func_name() + suffix + "_zp_axis");
    }
    return ops::sub(x32, zp, ctx.func_name() + suffix + "_centred");
}

/// Σ_k (a - za)·(b - zb) for MatMulInteger and QLinearMatMul, named `name`. With int8
/// operands (uint8 shifted) and zero points known at import it is the int8 product the chips'
/// MXM maps, corrected where a zero point is not 0:
///   Σ a·b - zb[j]·Σ_k a[i, k] - za[i]·Σ_k (b[k, j] - zb[j])
/// (the last sum a constant when b is one: weights). Otherwise the operands are centred in
/// int32 (the host's form).
ops::Tensor integer_matmul(NodeContext &ctx, int a_index, int za_index, int b_index, int zb_index, const std::string &name) {
    const int rank_a = ctx.tensor(a_index).dimensions(), rank_b = ctx.tensor(b_index).dimensions();
    const int64_t k = ctx.tensor(a_index).concrete_shape().back();
    ctx.macs = 0;
    const std::optional<Int8Operand> a = int8_operand(ctx, a_index, za_index, "_a"), b = int8_operand(ctx, b_index, zb_index, "_b");
    const bool vector_zero_points = !(a && b) || (ctx.has_input(za_index) && ctx.tensor(za_index).dimensions() > 1) ||
                                    (ctx.has_input(zb_index) && ctx.tensor(zb_index).dimensions() > 1);
    if (a && b && !vector_zero_points && (ctx.can_add_constants() || (a->zero_point_is_zero() && b->zero_point_is_zero()))) {
        const bool exact = a->zero_point_is_zero() && b->zero_point_is_zero();
        ops::Tensor y = ops::matmul(a->values, b->values, {.name = exact ? name : name + "_int8"});
        ctx.macs = product(y.concrete_shape()) * k;
        if (exact) return y;
        if (!b->zero_point_is_zero()) {
            const ops::Tensor row_sums = ops::reduce_sum(ops::cast(a->values, Int(32), name + "_a_i32"), {rank_a - 1}, true, name + "_a_row_sums");
            const ops::Tensor zb = int32_constant(ctx, name + "_zb", b->zero_point, {int64_t(b->zero_point.size())});
            y = ops::sub(y, ops::mul(row_sums, zb, name + "_zb_rows"), a->zero_point_is_zero() ? name : name + "_zb_corrected");
        }
        if (!a->zero_point_is_zero()) {
            const std::vector<int64_t> za_shape = a->zero_point.size() == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{int64_t(a->zero_point.size()), 1};
            const ops::Tensor za = int32_constant(ctx, name + "_za", a->zero_point, za_shape);
            ops::Tensor column_sums;
            if (ctx.input(b_index).constant) { // weights: Σ_k (b[.., k, j] - zb[j]) once, at import
                const std::vector<int64_t> weights = int8_values(ctx, b_index);
                std::vector<int64_t> shape = ctx.tensor(b_index).concrete_shape();
                const int64_t n = shape.back(), depth = shape[shape.size() - 2], batches = int64_t(weights.size()) / (n * depth);
                std::vector<int64_t> sums(size_t(batches * n), 0);
                for (int64_t bt = 0; bt < batches; ++bt)
                    for (int64_t kk = 0; kk < depth; ++kk)
                        for (int64_t j = 0; j < n; ++j)
                            sums[size_t(bt * n + j)] += weights[size_t((bt * depth + kk) * n + j)] -
                                                        b->zero_point[b->zero_point.size() == 1 ? 0 : size_t(j)];
                shape[shape.size() - 2] = 1;
                column_sums = int32_constant(ctx, name + "_b_column_sums", sums, shape);
            } else {
                const ops::Tensor zb = int32_constant(ctx, name + "_zb_cols", b->zero_point, {int64_t(b->zero_point.size())});
                const ops::Tensor bc = ops::sub(ops::cast(b->values, Int(32), name + "_b_i32"), zb, name + "_b_centred");
                column_sums = ops::reduce_sum(bc, {rank_b - 2}, true, name + "_b_column_sums");
            }
            y = ops::sub(y, ops::mul(za, column_sums, name + "_za_columns"), name);
        }
        return y;
    }
    const ops::Tensor ac = centred(ctx, a_index, za_index, rank_a - 2, "_a"), bc = centred(ctx, b_index, zb_index, rank_a - 1, "_b");
    ops::Tensor y = ops::matmul(ac, bc, {.name = name});
    ctx.macs = product(y.concrete_shape()) * k;
    return y;
}

std::vector<Value> matmul_integer(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(2, 4, 1);
    return one(integer_matmul(ctx, 0, 2, 1, 3, ctx.func_name()));
}

std::vector<Value> conv_integer(NodeContext &ctx) {
    ctx.allow_attributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    ctx.require_arity(2, 4, 1);
    return one(integer_conv(ctx, 0, 2, 1, 3, -1));
}

/// requantises an int32 accumulator: quantize(float(acc) · scale_a · scale_b, y_scale, y_zp).
ops::Tensor requantize(NodeContext &ctx, const ops::Tensor &acc, int scale_a, int scale_b, int y_scale, int y_zp,
                       bool per_channel_b) {
    ops::Tensor real = ops::cast(acc, Float(32), ctx.func_name() + "_real");
    real = ops::mul(real, ctx.tensor(scale_a), ctx.func_name() + "_scaled_a");
    ops::Tensor sb = ctx.tensor(scale_b);
    if (per_channel_b && sb.concrete_shape()[0] != 1) sb = ops::reshape(sb, {sb.concrete_shape()[0], 1, 1}, ctx.func_name() + "_scale_b");
    real = ops::mul(real, sb, ctx.func_name() + "_scaled");
    return ops::quantize_linear(real, ctx.tensor(y_scale), ctx.tensor(y_zp), 0, ctx.func_name());
}

std::vector<Value> qlinear_matmul(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(8, 8, 1);
    const ops::Tensor acc = integer_matmul(ctx, 0, 2, 3, 5, ctx.func_name() + "_acc");
    return one(requantize(ctx, acc, 1, 4, 6, 7, false));
}

std::vector<Value> qlinear_conv(NodeContext &ctx) {
    ctx.allow_attributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
    ctx.require_arity(8, 9, 1);
    const ops::Tensor acc = integer_conv(ctx, 0, 2, 3, 5, 8);
    return one(requantize(ctx, acc, 1, 4, 6, 7, true));
}

/// ai.tessera::Gelu, made by recognise_gelu from the Erf form or (approximation="tanh") the Tanh form.
std::vector<Value> gelu(NodeContext &ctx) {
    ctx.allow_attributes({"approximation"});
    ctx.require_arity(1, 1, 1);
    const std::string approximation = ctx.attr_string("approximation", "none");
    if (approximation != "none" && approximation != "tanh")
        ctx.fail("attribute 'approximation' is '" + approximation + "'; supported: none, tanh");
    return one(ops::gelu(ctx.tensor(0), approximation == "tanh" ? ops::GeluApproximation::Tanh : ops::GeluApproximation::None, ctx.func_name()),
               ctx.input(0).scalar);
}

std::vector<Value> identity(NodeContext &ctx) {
    ctx.allow_attributes({});
    ctx.require_arity(1, 1, 1);
    return {ctx.input(0)};
}

/// Shape: the input's shape, a constant (Tessera's shapes are known at import).
std::vector<Value> shape(NodeContext &ctx) {
    ctx.allow_attributes({"start", "end"});
    ctx.require_arity(1, 1, 1);
    const std::vector<int64_t> s = onnx_shape(ctx.input(0));
    const int64_t rank = static_cast<int64_t>(s.size());
    auto clamp_axis = [&](int64_t a) { return std::clamp<int64_t>(a < 0 ? a + rank : a, 0, rank); };
    const int64_t start = clamp_axis(ctx.attr_int("start", 0)), end = clamp_axis(ctx.attr_int("end", rank));
    if (end <= start) ctx.fail("attributes 'start' and 'end' select no dimension; Tessera's tensors have extents >= 1");
    Buffer<> b(Int(64), {end - start});
    for (int64_t d = start; d < end; ++d) b.set_from_int({d - start}, s[static_cast<size_t>(d)]);
    return {Value{ops::Tensor(), false, b}};
}

std::vector<Value> constant(NodeContext &ctx) {
    ctx.allow_attributes({"value"});
    ctx.require_arity(0, 0, 1);
    Buffer<> b = ctx.attr_tensor("value");
    const bool scalar = b.dimensions() == 0;
    if (scalar) b = reshaped(b, {1});
    return {Value{ops::Tensor(), scalar, b}};
}

const std::map<std::string, Converter> &converters() {
    static const std::map<std::string, Converter> table = {
        {"Add", binary([](auto &a, auto &b, auto &n) { return ops::add(a, b, n); })},
        {"Sub", binary([](auto &a, auto &b, auto &n) { return ops::sub(a, b, n); })},
        {"Mul", binary([](auto &a, auto &b, auto &n) { return ops::mul(a, b, n); })},
        {"Div", binary([](auto &a, auto &b, auto &n) { return ops::div(a, b, n); })},
        {"Pow", binary([](auto &a, auto &b, auto &n) { return ops::pow(a, b, n); })},
        {"Max", variadic([](auto &a, auto &b, auto &n) { return ops::maximum(a, b, n); })},
        {"Min", variadic([](auto &a, auto &b, auto &n) { return ops::minimum(a, b, n); })},
        {"Where", where},
        {"Relu", unary([](auto &, auto &x, auto &n) { return ops::relu(x, n); })},
        {"LeakyRelu", unary([](auto &c, auto &x, auto &n) { return ops::leaky_relu(x, c.attr_float("alpha", 0.01), n); }, {"alpha"})},
        {"Sigmoid", unary([](auto &, auto &x, auto &n) { return ops::sigmoid(x, n); })},
        {"HardSigmoid", unary([](auto &c, auto &x, auto &n) { return ops::hard_sigmoid(x, c.attr_float("alpha", 0.2), c.attr_float("beta", 0.5), n); }, {"alpha", "beta"})},
        {"Tanh", unary([](auto &, auto &x, auto &n) { return ops::tanh(x, n); })},
        {"Erf", unary([](auto &, auto &x, auto &n) { return ops::erf(x, n); })},
        {"Softplus", unary([](auto &, auto &x, auto &n) { return ops::softplus(x, n); })},
        {"Exp", unary([](auto &, auto &x, auto &n) { return ops::exp(x, n); })},
        {"Sqrt", unary([](auto &, auto &x, auto &n) { return ops::sqrt(x, n); })},
        {"Clip", clip},
        {"Cast", cast},
        {"Identity", identity},
        {"QuantizeLinear", quantize_linear},
        {"DequantizeLinear", dequantize_linear},
        {"MatMulInteger", matmul_integer},
        {"ConvInteger", conv_integer},
        {"QLinearMatMul", qlinear_matmul},
        {"QLinearConv", qlinear_conv},
        {"Constant", constant},
        {"Shape", shape},
        {"MatMul", matmul},
        {"Gemm", gemm},
        {"Conv", conv},
        {"ConvTranspose", conv_transpose},
        {"Einsum", einsum},
        {"LSTM", lstm},
        {"MaxPool", [](NodeContext &c) { return pool(c, true); }},
        {"AveragePool", [](NodeContext &c) { return pool(c, false); }},
        {"GlobalAveragePool", global_average_pool},
        {"BatchNormalization", batch_normalization},
        {"LayerNormalization", layer_normalization},
        {"Softmax", softmax(false)},
        {"LogSoftmax", softmax(true)},
        {"ReduceSum", reduce([](auto &x, auto &a, bool k, auto &n) { return ops::reduce_sum(x, a, k, n); }, true)},
        {"ReduceMean", reduce([](auto &x, auto &a, bool k, auto &n) { return ops::reduce_mean(x, a, k, n); }, false)},
        {"ReduceMax", reduce([](auto &x, auto &a, bool k, auto &n) { return ops::reduce_max(x, a, k, n); }, false)},
        {"Reshape", reshape},
        {"Flatten", flatten},
        {"Transpose", transpose},
        {"Squeeze", [](NodeContext &c) { return squeeze(c, false); }},
        {"Unsqueeze", [](NodeContext &c) { return squeeze(c, true); }},
        {"Concat", concat},
        {"Slice", slice},
        {"Gather", gather},
        {"Expand", expand},
        {"Pad", pad},
    };
    return table;
}

} // namespace

const std::vector<std::string> &supported_op_types() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const auto &[name, fn] : converters()) v.push_back(name);
        return v;
    }();
    return names;
}

std::vector<Value> convert_node(NodeContext &ctx) {
    const std::string &op = ctx.node().op_type();
    if (ctx.node().domain() == kTesseraDomain && op == "Gelu") return gelu(ctx);
    if (!ctx.node().domain().empty() && ctx.node().domain() != "ai.onnx")
        ctx.fail("domain '" + ctx.node().domain() + "' is not supported; supported: the default ONNX domain");
    const auto it = converters().find(op);
    if (it == converters().end()) {
        std::string list;
        for (const std::string &s : supported_op_types()) list += (list.empty() ? "" : " ") + s;
        ctx.fail("op type '" + op + "' is not supported; supported: " + list);
    }
    try {
        return it->second(ctx);
    } catch (const Error &e) {
        const std::string what = e.what();
        if (what.rfind(ctx.where(), 0) == 0) throw;
        ctx.fail(what); // an ops:: refusal: say which node
    }
}

} // namespace tessera::onnx::internal
