// QuantizeLinear / DequantizeLinear with per-tensor or per-axis scale and zero point.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/quantize.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

namespace {

/// Reads a per-tensor ([1] or scalar) or per-axis ([extent of axis]) parameter at `coords`.
Expr read_param(const Tensor &p, const Tensor &x, int axis, const std::vector<Expr> &coords, const std::string &what,
                const std::string &op, const std::string &name) {
    if (p.dimensions() == 1 && is_one(p.dim(0))) return p(int_const(0));
    if (p.dimensions() == 1 && !dims_differ(p.dim(0), x.dim(axis))) return p(coords[static_cast<size_t>(axis)]);
    fail(op, name, what + " '" + p.name() + "' " + shape_string(p.shape()) + " is neither one value nor one per entry of axis " +
                       std::to_string(axis) + " of '" + x.name() + "' " + shape_string(x.shape()));
}

} // namespace

Tensor dequantize_linear(const Tensor &x, const Tensor &scale, const Tensor &zero_point, int axis, const std::string &name) {
    const std::string op = "dequantize_linear";
    require_defined(x, "input", op, name);
    require_defined(scale, "scale", op, name);
    require_float(scale, "scale", op, name);
    if (!x.type().is_integer()) fail(op, name, "input '" + x.name() + "' is " + x.type().to_string() + "; it must be integers");
    const int a = normalize_axis(axis, x.dimensions(), op, name);
    const std::vector<Expr> coords = as_exprs(make_vars(x.dimensions()));
    const Type t = scale.type();
    Expr v = cast(t, x(coords));
    if (zero_point.defined()) v = v - cast(t, read_param(zero_point, x, a, coords, "zero point", op, name));
    Func out(name);
    out(coords) = v * read_param(scale, x, a, coords, "scale", op, name);
    return Tensor(out, x.shape());
}

Tensor quantize_linear(const Tensor &x, const Tensor &scale, const Tensor &zero_point, int axis, const std::string &name) {
    const std::string op = "quantize_linear";
    require_defined(x, "input", op, name);
    require_defined(scale, "scale", op, name);
    require_float(x, "input", op, name);
    require_float(scale, "scale", op, name);
    const Type qt = zero_point.defined() ? zero_point.type() : UInt(8);
    if (!qt.is_integer() || qt.bits() != 8) fail(op, name, "zero point type " + qt.to_string() + "; supported: int8, uint8");
    const int a = normalize_axis(axis, x.dimensions(), op, name);
    const std::vector<Expr> coords = as_exprs(make_vars(x.dimensions()));
    const Type ct = Float(32);
    Expr v = round(cast(ct, x(coords)) / cast(ct, read_param(scale, x, a, coords, "scale", op, name)));
    if (zero_point.defined()) v = v + cast(ct, read_param(zero_point, x, a, coords, "zero point", op, name));
    Func out(name);
    out(coords) = cast(qt, clamp(v, typed_const(ct, qt.min_value()), typed_const(ct, qt.max_value())));
    return Tensor(out, x.shape());
}

} // namespace tessera::ops
