// softmax and log_softmax along any axis, numerically stable: the maximum along the axis is
// subtracted before exponentiating, so no exp overflows and the largest term is exactly 1.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/norm.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

namespace {

/// The Funcs both ops share: `name_max` and `name_sum` (of exp(x - max)), both with the axis
/// kept as extent 1 and read at coordinate 0.
struct SoftmaxParts {
    std::vector<Expr> coords;  ///< the result's pure Vars
    std::vector<Expr> reduced; ///< the same with 0 along the axis
    Expr x, max, sum;          ///< x(coords), max and sum at `reduced`, all in compute_type
    Type type;                 ///< x's type
};

SoftmaxParts softmax_parts(const Tensor &x, int axis, const std::string &op, const std::string &name) {
    require_float(x, "input", op, name);
    const int a = normalize_axis(axis, x.dimensions(), op, name);
    const Type ct = compute_type(x.type());
    const Reduction red = make_reduction(x, {a}, /*keepdims=*/true, op, name);
    SoftmaxParts p;
    p.type = x.type();
    p.coords = as_exprs(red.vars);
    p.reduced = p.coords;
    p.reduced[static_cast<size_t>(a)] = int_const(0);

    Func max_f(name + "_max");
    max_f(p.coords) = typed_const(ct, ct.min_value());
    max_f(p.coords) = max(Expr(max_f(p.coords)), cast(ct, x(red.in_args)));
    Func sum_f(name + "_sum");
    sum_f(p.coords) = typed_const(ct, 0);
    sum_f(p.coords) += exp(cast(ct, x(red.in_args)) - Expr(max_f(p.reduced)));

    p.x = cast(ct, x(p.coords));
    p.max = Expr(max_f(p.reduced));
    p.sum = Expr(sum_f(p.reduced));
    return p;
}

} // namespace

Tensor softmax(const Tensor &x, int axis, const std::string &name) {
    const SoftmaxParts p = softmax_parts(x, axis, "softmax", name);
    Func out(name);
    out(p.coords) = cast(p.type, exp(p.x - p.max) / p.sum);
    return Tensor(out, x.shape());
}

Tensor log_softmax(const Tensor &x, int axis, const std::string &name) {
    const SoftmaxParts p = softmax_parts(x, axis, "log_softmax", name);
    Func out(name);
    out(p.coords) = cast(p.type, p.x - p.max - log(p.sum));
    return Tensor(out, x.shape());
}

} // namespace tessera::ops
