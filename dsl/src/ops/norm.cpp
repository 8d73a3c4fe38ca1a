// Normalisations: batchnorm (inference, fixed statistics), layernorm and rmsnorm over the
// innermost dimensions. Statistics are computed in compute_type (fp32 for bf16) and the result
// is rounded to the input's type once.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/norm.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

namespace {

/// Throws unless `p` is 1-D with `extent` elements.
void require_vector(const Tensor &p, const std::string &what, const Expr &extent, const std::string &op,
                    const std::string &name) {
    require_float(p, what, op, name);
    if (p.dimensions() != 1 || dims_differ(p.dim(0), extent))
        fail(op, name, what + " '" + p.name() + "' has shape " + shape_string(p.shape()) + " but must be [" +
                           dim_string(extent) + "]");
}

/// The statistics layout of layernorm/rmsnorm: a reduction over the last `k` dimensions.
struct InnerNorm {
    Reduction red;
    std::vector<Expr> coords;    ///< the result's pure Vars (x's shape)
    std::vector<Expr> stat_args; ///< where the statistics are read for `coords`
    std::vector<Expr> param_args; ///< where gamma/beta are read for `coords`
    std::vector<Expr> inner_shape;
};

InnerNorm inner_norm(const Tensor &x, int k, const std::string &op, const std::string &name) {
    require_float(x, "input", op, name);
    const int rank = x.dimensions();
    if (k < 1 || k > rank)
        fail(op, name, "normalized_dims " + std::to_string(k) + " must be in [1, " + std::to_string(rank) +
                           "] for '" + x.name() + "' " + shape_string(x.shape()));
    std::vector<int> axes;
    for (int d = rank - k; d < rank; ++d) axes.push_back(d);
    InnerNorm n;
    n.red = make_reduction(x, axes, /*keepdims=*/false, op, name);
    n.coords = as_exprs(make_vars(rank));
    n.stat_args.assign(n.coords.begin(), n.coords.begin() + (rank - k));
    if (n.stat_args.empty()) n.stat_args.push_back(int_const(0));
    n.param_args.assign(n.coords.begin() + (rank - k), n.coords.end());
    n.inner_shape.assign(x.shape().begin() + (rank - k), x.shape().end());
    return n;
}

void require_param_shape(const Tensor &p, const std::string &what, const InnerNorm &n, const std::string &op,
                         const std::string &name) {
    require_float(p, what, op, name);
    bool ok = p.dimensions() == static_cast<int>(n.inner_shape.size());
    for (int d = 0; ok && d < p.dimensions(); ++d) ok = !dims_differ(p.dim(d), n.inner_shape[static_cast<size_t>(d)]);
    if (!ok)
        fail(op, name, what + " '" + p.name() + "' has shape " + shape_string(p.shape()) +
                           " but must match the normalised dimensions " + shape_string(n.inner_shape));
}

} // namespace

Tensor batchnorm(const Tensor &x, const Tensor &scale, const Tensor &bias, const Tensor &mean, const Tensor &var,
                 double epsilon, int channel_axis, const std::string &name) {
    const std::string op = "batchnorm";
    require_float(x, "input", op, name);
    const int a = normalize_axis(channel_axis, x.dimensions(), op, name);
    const Expr channels = x.dim(a);
    require_vector(scale, "scale", channels, op, name);
    require_vector(bias, "bias", channels, op, name);
    require_vector(mean, "mean", channels, op, name);
    require_vector(var, "var", channels, op, name);
    const Type ct = compute_type(x.type());
    const std::vector<Expr> coords = as_exprs(make_vars(x.dimensions()));
    const Expr c = coords[static_cast<size_t>(a)];
    const Expr normalised = (cast(ct, x(coords)) - cast(ct, mean(c))) /
                            sqrt(cast(ct, var(c)) + typed_const(ct, epsilon));
    Func out(name);
    out(coords) = cast(x.type(), normalised * cast(ct, scale(c)) + cast(ct, bias(c)));
    return Tensor(out, x.shape());
}

Tensor layernorm(const Tensor &x, const Tensor &gamma, const Tensor &beta, int normalized_dims, double epsilon,
                 const std::string &name) {
    const std::string op = "layernorm";
    const InnerNorm n = inner_norm(x, normalized_dims, op, name);
    if (gamma.defined()) require_param_shape(gamma, "gamma", n, op, name);
    if (beta.defined()) require_param_shape(beta, "beta", n, op, name);
    const Type ct = compute_type(x.type());
    const std::vector<Expr> stat = as_exprs(n.red.vars);
    const Expr count = cast(ct, n.red.count);

    Func mean(name + "_mean");
    mean(stat) = typed_const(ct, 0);
    mean(stat) += cast(ct, x(n.red.in_args));
    mean(stat) = Expr(mean(stat)) / count;
    Func var(name + "_var");
    var(stat) = typed_const(ct, 0);
    const Expr centred = cast(ct, x(n.red.in_args)) - Expr(mean(stat));
    var(stat) += centred * centred;
    var(stat) = Expr(var(stat)) / count;

    Expr y = (cast(ct, x(n.coords)) - Expr(mean(n.stat_args))) / sqrt(Expr(var(n.stat_args)) + typed_const(ct, epsilon));
    if (gamma.defined()) y = y * cast(ct, gamma(n.param_args));
    if (beta.defined()) y = y + cast(ct, beta(n.param_args));
    Func out(name);
    out(n.coords) = cast(x.type(), y);
    return Tensor(out, x.shape());
}

Tensor rmsnorm(const Tensor &x, const Tensor &gamma, int normalized_dims, double epsilon, const std::string &name) {
    const std::string op = "rmsnorm";
    const InnerNorm n = inner_norm(x, normalized_dims, op, name);
    if (gamma.defined()) require_param_shape(gamma, "gamma", n, op, name);
    const Type ct = compute_type(x.type());
    const std::vector<Expr> stat = as_exprs(n.red.vars);

    Func ms(name + "_ms");
    ms(stat) = typed_const(ct, 0);
    const Expr v = cast(ct, x(n.red.in_args));
    ms(stat) += v * v;
    ms(stat) = Expr(ms(stat)) / cast(ct, n.red.count);

    Expr y = cast(ct, x(n.coords)) / sqrt(Expr(ms(n.stat_args)) + typed_const(ct, epsilon));
    if (gamma.defined()) y = y * cast(ct, gamma(n.param_args));
    Func out(name);
    out(n.coords) = cast(x.type(), y);
    return Tensor(out, x.shape());
}

} // namespace tessera::ops
