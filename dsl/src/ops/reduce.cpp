// Reductions over any set of axes: sum, mean, max, min. Each is one Func with a pure initial
// value and one update over the RDom "r" of the reduced axes.
#include <functional>

#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/reduce.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

namespace {

/// out = init; out = combine(out, x(r)) over the reduction.
Tensor fold(const Tensor &x, const std::vector<int> &axes, bool keepdims, const std::string &op, const std::string &name,
            Type type, const Expr &init, const std::function<Expr(const Expr &, const Expr &)> &combine) {
    require_defined(x, "input", op, name);
    if (x.type().is_bool()) fail(op, name, "input '" + x.name() + "' is bool; reductions need a numeric tensor");
    const Reduction red = make_reduction(x, axes, keepdims, op, name);
    const std::vector<Expr> args = as_exprs(red.vars);
    Func out(name);
    out(args) = init;
    out(args) = combine(Expr(out(args)), cast(type, x(red.in_args)));
    return Tensor(out, red.shape);
}

} // namespace

Tensor reduce_sum(const Tensor &x, const std::vector<int> &axes, bool keepdims, const std::string &name) {
    require_defined(x, "input", "reduce_sum", name);
    const Type acc = accumulator_type(x.type());
    return fold(x, axes, keepdims, "reduce_sum", name, acc, typed_const(acc, 0),
                [](const Expr &a, const Expr &b) { return a + b; });
}

Tensor reduce_mean(const Tensor &x, const std::vector<int> &axes, bool keepdims, const std::string &name) {
    const std::string op = "reduce_mean";
    require_float(x, "input", op, name);
    const Type ct = compute_type(x.type());
    const Tensor sum = fold(x, axes, keepdims, op, name + "_sum", ct, typed_const(ct, 0),
                            [](const Expr &a, const Expr &b) { return a + b; });
    const Reduction red = make_reduction(x, axes, keepdims, op, name);
    const std::vector<Expr> args = as_exprs(red.vars);
    Func out(name);
    out(args) = cast(x.type(), sum(args) / cast(ct, red.count));
    return Tensor(out, red.shape);
}

Tensor reduce_max(const Tensor &x, const std::vector<int> &axes, bool keepdims, const std::string &name) {
    require_defined(x, "input", "reduce_max", name);
    const Type t = x.type();
    return fold(x, axes, keepdims, "reduce_max", name, t, typed_const(t, t.min_value()),
                [](const Expr &a, const Expr &b) { return max(a, b); });
}

Tensor reduce_min(const Tensor &x, const std::vector<int> &axes, bool keepdims, const std::string &name) {
    require_defined(x, "input", "reduce_min", name);
    const Type t = x.type();
    return fold(x, axes, keepdims, "reduce_min", name, t, typed_const(t, t.max_value()),
                [](const Expr &a, const Expr &b) { return min(a, b); });
}

} // namespace tessera::ops
