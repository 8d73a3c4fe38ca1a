// Element-wise ops: binary arithmetic with NumPy broadcasting and the common activations.
#include <cmath>
#include <functional>

#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/elementwise.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

std::vector<Expr> broadcast_shapes(const std::vector<Expr> &a, const std::vector<Expr> &b, const std::string &op) {
    return broadcast_shape(a, b, "operand", op, op);
}

namespace {

using BinaryFn = std::function<Expr(const Expr &, const Expr &)>;
using UnaryFn = std::function<Expr(const Expr &)>;

Tensor binary(const Tensor &a, const Tensor &b, const std::string &op, const std::string &name, const BinaryFn &fn) {
    require_defined(a, "the first operand", op, name);
    require_defined(b, "the second operand", op, name);
    const std::vector<Expr> shape = broadcast_shape(a.shape(), b.shape(), "operand", op, name);
    const std::vector<Var> vars = make_vars(static_cast<int>(shape.size()));
    const std::vector<Expr> coords = as_exprs(vars);
    Expr value;
    try {
        value = fn(broadcast_read(a, coords, shape), broadcast_read(b, coords, shape));
    } catch (const Error &e) {
        // The DSL's promotion rules refused the operand types; say which op and operands.
        fail(op, name, "cannot combine '" + a.name() + "' (" + a.type().to_string() + ") and '" + b.name() + "' (" +
                           b.type().to_string() + "): " + e.what());
    }
    Func out(name);
    out(coords) = value;
    return Tensor(out, shape);
}

/// An element-wise op whose `fn` sees the value converted to `ct` and whose result is
/// converted back to x's type.
Tensor unary(const Tensor &x, const std::string &op, const std::string &name, Type ct, const UnaryFn &fn) {
    const std::vector<Var> vars = make_vars(x.dimensions());
    const std::vector<Expr> coords = as_exprs(vars);
    Func out(name);
    out(coords) = cast(x.type(), fn(cast(ct, x(coords))));
    return Tensor(out, x.shape());
}

/// A float activation computed in compute_type(x.type()).
Tensor float_unary(const Tensor &x, const std::string &op, const std::string &name, const std::function<Expr(const Expr &, Type)> &fn) {
    require_float(x, "input", op, name);
    const Type ct = compute_type(x.type());
    return unary(x, op, name, ct, [&](const Expr &v) { return fn(v, ct); });
}

} // namespace

Tensor add(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "add", name, [](const Expr &x, const Expr &y) { return x + y; });
}
Tensor sub(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "sub", name, [](const Expr &x, const Expr &y) { return x - y; });
}
Tensor mul(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "mul", name, [](const Expr &x, const Expr &y) { return x * y; });
}
Tensor div(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "div", name, [](const Expr &x, const Expr &y) { return x / y; });
}

Tensor relu(const Tensor &x, const std::string &name) {
    require_defined(x, "input", "relu", name);
    if (x.type().is_bool()) fail("relu", name, "input '" + x.name() + "' is bool; relu needs a numeric tensor");
    return unary(x, "relu", name, x.type(), [&](const Expr &v) { return max(v, typed_const(v.type(), 0)); });
}

Tensor leaky_relu(const Tensor &x, double alpha, const std::string &name) {
    return float_unary(x, "leaky_relu", name, [&](const Expr &v, Type ct) {
        return select(v >= typed_const(ct, 0), v, typed_const(ct, alpha) * v);
    });
}

Tensor gelu(const Tensor &x, GeluApproximation approximation, const std::string &name) {
    return float_unary(x, "gelu", name, [&](const Expr &v, Type ct) {
        const Expr half = typed_const(ct, 0.5), one = typed_const(ct, 1.0);
        if (approximation == GeluApproximation::Tanh) {
            const Expr inner = typed_const(ct, std::sqrt(2.0 / M_PI)) * (v + typed_const(ct, 0.044715) * v * v * v);
            return half * v * (one + tessera::tanh(inner));
        }
        return half * v * (one + erf(v * typed_const(ct, M_SQRT1_2)));
    });
}

Tensor sigmoid(const Tensor &x, const std::string &name) {
    return float_unary(x, "sigmoid", name, [](const Expr &v, Type) { return tessera::sigmoid(v); });
}

Tensor tanh(const Tensor &x, const std::string &name) {
    return float_unary(x, "tanh", name, [](const Expr &v, Type) { return tessera::tanh(v); });
}

Tensor exp(const Tensor &x, const std::string &name) {
    return float_unary(x, "exp", name, [](const Expr &v, Type) { return tessera::exp(v); });
}

Tensor sqrt(const Tensor &x, const std::string &name) {
    return float_unary(x, "sqrt", name, [](const Expr &v, Type) { return tessera::sqrt(v); });
}

Tensor clip(const Tensor &x, double lo, double hi, const std::string &name) {
    const std::string op = "clip";
    require_defined(x, "input", op, name);
    const Type t = x.type();
    if (t.is_bool()) fail(op, name, "input '" + x.name() + "' is bool; clip needs a numeric tensor");
    if (!(lo <= hi)) fail(op, name, "lower bound " + std::to_string(lo) + " is above the upper bound " + std::to_string(hi));
    if (t.is_integer() && (lo != std::floor(lo) || hi != std::floor(hi) || lo < t.min_value() || hi > t.max_value()))
        fail(op, name, "bounds [" + std::to_string(lo) + ", " + std::to_string(hi) + "] are not integers representable in " +
                           t.to_string() + " (the type of '" + x.name() + "')");
    return unary(x, op, name, t, [&](const Expr &v) { return min(max(v, typed_const(t, lo)), typed_const(t, hi)); });
}

} // namespace tessera::ops
