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

Tensor erf(const Tensor &x, const std::string &name) {
    return float_unary(x, "erf", name, [](const Expr &v, Type) { return tessera::erf(v); });
}

Tensor softplus(const Tensor &x, const std::string &name) {
    return float_unary(x, "softplus", name, [](const Expr &v, Type ct) {
        return max(v, typed_const(ct, 0)) + log(typed_const(ct, 1) + tessera::exp(-abs(v)));
    });
}

Tensor hard_sigmoid(const Tensor &x, double alpha, double beta, const std::string &name) {
    return float_unary(x, "hard_sigmoid", name, [&](const Expr &v, Type ct) {
        return clamp(typed_const(ct, alpha) * v + typed_const(ct, beta), typed_const(ct, 0), typed_const(ct, 1));
    });
}

Tensor pow(const Tensor &a, const Tensor &b, const std::string &name) {
    const std::string op = "pow";
    for (const Tensor *t : {&a, &b})
        if (t->defined() && t->type().is_bool()) fail(op, name, "operand '" + t->name() + "' is bool; pow needs numbers");
    const Type result = a.type();
    return binary(a, b, op, name, [&](const Expr &x, const Expr &y) {
        return cast(result, tessera::pow(cast(Float(64), x), cast(Float(64), y)));
    });
}

Tensor maximum(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "maximum", name, [](const Expr &x, const Expr &y) { return max(x, y); });
}
Tensor minimum(const Tensor &a, const Tensor &b, const std::string &name) {
    return binary(a, b, "minimum", name, [](const Expr &x, const Expr &y) { return min(x, y); });
}

Tensor where(const Tensor &condition, const Tensor &a, const Tensor &b, const std::string &name) {
    const std::string op = "where";
    require_defined(condition, "the condition", op, name);
    require_defined(a, "the first value operand", op, name);
    require_defined(b, "the second value operand", op, name);
    if (!condition.type().is_bool())
        fail(op, name, "condition '" + condition.name() + "' is " + condition.type().to_string() + "; it must be bool");
    if (a.type() != b.type())
        fail(op, name, "value operands '" + a.name() + "' (" + a.type().to_string() + ") and '" + b.name() + "' (" +
                           b.type().to_string() + ") differ in type");
    const std::vector<Expr> shape =
        broadcast_shape(broadcast_shape(condition.shape(), a.shape(), "operand", op, name), b.shape(), "operand", op, name);
    const std::vector<Expr> coords = as_exprs(make_vars(static_cast<int>(shape.size())));
    Func out(name);
    out(coords) = select(broadcast_read(condition, coords, shape), broadcast_read(a, coords, shape),
                         broadcast_read(b, coords, shape));
    return Tensor(out, shape);
}

Tensor cast(const Tensor &x, Type type, const std::string &name) {
    require_defined(x, "input", "cast", name);
    const std::vector<Expr> coords = as_exprs(make_vars(x.dimensions()));
    Func out(name);
    const Expr v = x(coords);
    out(coords) = type.is_bool() ? (v != make_zero(x.type())) : tessera::cast(type, v);
    return Tensor(out, x.shape());
}

} // namespace tessera::ops
