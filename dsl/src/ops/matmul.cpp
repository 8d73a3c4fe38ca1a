// matmul and gemm. The product is always built in the one canonical form
//     C(.., i, j) = 0;  C(.., i, j) += cast(acc, A(.., i, k)) * cast(acc, B(.., k, j))
// because the chip backend's tensorizer pattern-matches exactly that, and the scheduler's
// tile/compute_at directives refer to its Vars "i", "j" and RDom "k".
#include <cmath>

#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/linear.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor matmul(const Tensor &a, const Tensor &b, const MatmulOptions &options) {
    const std::string op = "matmul", &name = options.name;
    require_defined(a, "A", op, name);
    require_defined(b, "B", op, name);
    for (const auto &[t, what] : {std::pair{&a, "A"}, std::pair{&b, "B"}})
        if (t->dimensions() < 2)
            fail(op, name, std::string(what) + " '" + t->name() + "' has shape " + shape_string(t->shape()) +
                               "; matmul needs rank >= 2 (use reshape to make a vector a matrix)");
    const Type acc = accumulator_type(a.type());
    if (accumulator_type(b.type()) != acc)
        fail(op, name, "A '" + a.name() + "' (" + a.type().to_string() + ") and B '" + b.name() + "' (" +
                           b.type().to_string() + ") accumulate in different types (" + acc.to_string() + " vs " +
                           accumulator_type(b.type()).to_string() + "); cast one operand");

    const Expr m = options.transpose_a ? a.dim(-1) : a.dim(-2);
    const Expr ka = options.transpose_a ? a.dim(-2) : a.dim(-1);
    const Expr kb = options.transpose_b ? b.dim(-1) : b.dim(-2);
    const Expr n = options.transpose_b ? b.dim(-2) : b.dim(-1);
    if (dims_differ(ka, kb))
        fail(op, name, "inner dimensions differ: A '" + a.name() + "' " + shape_string(a.shape()) +
                           (options.transpose_a ? " (transposed)" : "") + " has K = " + dim_string(ka) + " but B '" +
                           b.name() + "' " + shape_string(b.shape()) + (options.transpose_b ? " (transposed)" : "") +
                           " has K = " + dim_string(kb));

    const std::vector<Expr> a_batch(a.shape().begin(), a.shape().end() - 2);
    const std::vector<Expr> b_batch(b.shape().begin(), b.shape().end() - 2);
    const std::vector<Expr> batch = broadcast_shape(a_batch, b_batch, "batch", op, name);

    std::vector<Var> batch_vars;
    if (batch.size() == 1) batch_vars.emplace_back("b");
    else batch_vars = make_vars(static_cast<int>(batch.size()), "b");
    const std::vector<Expr> batch_coords = as_exprs(batch_vars);
    Var i("i"), j("j");
    RDom k(0, ka, "k");

    std::vector<Expr> a_args = broadcast_args(a_batch, batch_coords, batch);
    std::vector<Expr> b_args = broadcast_args(b_batch, batch_coords, batch);
    if (options.transpose_a) a_args.insert(a_args.end(), {Expr(k), Expr(i)});
    else a_args.insert(a_args.end(), {Expr(i), Expr(k)});
    if (options.transpose_b) b_args.insert(b_args.end(), {Expr(j), Expr(k)});
    else b_args.insert(b_args.end(), {Expr(k), Expr(j)});

    std::vector<Expr> lhs = batch_coords;
    lhs.insert(lhs.end(), {Expr(i), Expr(j)});
    Func c(name);
    c(lhs) = typed_const(acc, 0);
    c(lhs) += cast(acc, a(a_args)) * cast(acc, b(b_args));

    std::vector<Expr> shape = batch;
    shape.insert(shape.end(), {m, n});
    return Tensor(c, shape);
}

Tensor gemm(const Tensor &a, const Tensor &b, const Tensor &c, const GemmOptions &options) {
    const std::string op = "gemm", &name = options.name;
    require_rank(a, 2, "A", op, name);
    require_rank(b, 2, "B", op, name);
    const Tensor product = matmul(a, b, {options.transpose_a, options.transpose_b, name + "_product"});
    const Type acc = product.type();
    if (acc.is_integer() && (options.alpha != std::floor(options.alpha) || options.beta != std::floor(options.beta)))
        fail(op, name, "alpha and beta must be integers for an integer gemm (it computes in " + acc.to_string() + ")");

    Var i("i"), j("j");
    Expr value = product(i, j);
    if (options.alpha != 1.0) value = typed_const(acc, options.alpha) * value;
    if (c.defined()) {
        const std::vector<Expr> out_shape = product.shape();
        const std::vector<Expr> shape = broadcast_shape(c.shape(), out_shape, "C '" + c.name() + "' and A·B", op, name);
        if (shape.size() != 2 || dims_differ(shape[0], out_shape[0]) || dims_differ(shape[1], out_shape[1]))
            fail(op, name, "C '" + c.name() + "' " + shape_string(c.shape()) + " must broadcast to the product's shape " +
                               shape_string(out_shape));
        Expr term = cast(acc, broadcast_read(c, {i, j}, out_shape));
        if (options.beta != 1.0) term = typed_const(acc, options.beta) * term;
        value = value + term;
    }
    Func y(name);
    y(i, j) = value;
    return Tensor(y, product.shape());
}

} // namespace tessera::ops
