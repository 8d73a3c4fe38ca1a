// Ops that only move elements: transpose/permute, reshape/flatten and concat.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/shape.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor permute(const Tensor &x, const std::vector<int> &perm, const std::string &name) {
    const std::string op = "permute";
    require_defined(x, "input", op, name);
    const int rank = x.dimensions();
    if (static_cast<int>(perm.size()) != rank)
        fail(op, name, "permutation has " + std::to_string(perm.size()) + " entries but '" + x.name() + "' " +
                           shape_string(x.shape()) + " has rank " + std::to_string(rank));
    std::vector<int> source(perm.size());
    std::vector<bool> seen(perm.size(), false);
    for (size_t d = 0; d < perm.size(); ++d) {
        const int a = normalize_axis(perm[d], rank, op, name);
        if (seen[static_cast<size_t>(a)]) fail(op, name, "axis " + std::to_string(perm[d]) + " appears twice in the permutation");
        seen[static_cast<size_t>(a)] = true;
        source[d] = a;
    }
    const std::vector<Var> vars = make_vars(rank);
    std::vector<Expr> in_args(static_cast<size_t>(rank));
    std::vector<Expr> shape;
    for (int d = 0; d < rank; ++d) {
        in_args[static_cast<size_t>(source[static_cast<size_t>(d)])] = vars[static_cast<size_t>(d)];
        shape.push_back(x.dim(source[static_cast<size_t>(d)]));
    }
    Func out(name);
    out(as_exprs(vars)) = x(in_args);
    return Tensor(out, shape);
}

Tensor transpose(const Tensor &x, const std::string &name) {
    require_defined(x, "input", "transpose", name);
    if (x.dimensions() < 2)
        fail("transpose", name, "'" + x.name() + "' " + shape_string(x.shape()) + " has rank " +
                                    std::to_string(x.dimensions()) + "; transpose swaps the last two dimensions of a rank >= 2 tensor");
    std::vector<int> perm;
    for (int d = 0; d < x.dimensions(); ++d) perm.push_back(d);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return permute(x, perm, name);
}

namespace {

/// The input's extents as integers; reshape needs them to compute strides.
std::vector<int64_t> constant_shape(const Tensor &x, const std::string &op, const std::string &name) {
    std::vector<int64_t> shape;
    for (int d = 0; d < x.dimensions(); ++d) {
        auto v = const_int(x.dim(d));
        if (!v)
            fail(op, name, "'" + x.name() + "' has the symbolic shape " + shape_string(x.shape()) +
                               "; this op needs a constant shape");
        shape.push_back(*v);
    }
    return shape;
}

int64_t product(const std::vector<int64_t> &v) {
    int64_t p = 1;
    for (int64_t e : v) p *= e;
    return p;
}

std::string join(const std::vector<int64_t> &v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
}

} // namespace

Tensor reshape(const Tensor &x, const std::vector<int64_t> &new_shape, const std::string &name) {
    const std::string op = "reshape";
    require_defined(x, "input", op, name);
    if (new_shape.empty()) fail(op, name, "the new shape is empty; use [1] for a single element");
    const std::vector<int64_t> in_shape = constant_shape(x, op, name);
    const int64_t count = product(in_shape);
    std::vector<int64_t> shape = new_shape;
    int inferred = -1;
    int64_t known = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
        if (shape[d] == -1) {
            if (inferred >= 0) fail(op, name, "more than one -1 in the new shape " + join(new_shape));
            inferred = static_cast<int>(d);
        } else if (shape[d] < 0) {
            fail(op, name, "extent " + std::to_string(shape[d]) + " in the new shape " + join(new_shape) + " is negative");
        } else {
            known *= shape[d];
        }
    }
    if (inferred >= 0) {
        if (known == 0 || count % known != 0)
            fail(op, name, "cannot infer the -1 in " + join(new_shape) + " for the " + std::to_string(count) +
                               " elements of '" + x.name() + "' " + join(in_shape));
        shape[static_cast<size_t>(inferred)] = count / known;
    }
    if (product(shape) != count)
        fail(op, name, "'" + x.name() + "' " + join(in_shape) + " has " + std::to_string(count) +
                           " elements but the new shape " + join(new_shape) + " has " + std::to_string(product(shape)));

    // Row-major linear index of the output point, then the input coordinates of that index.
    const std::vector<Var> vars = make_vars(static_cast<int>(shape.size()));
    Expr linear = int_const(0);
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        if (shape[d] != 1) linear = linear + Expr(vars[d]) * int_const(stride);
        stride *= shape[d];
    }
    std::vector<Expr> in_args(in_shape.size());
    stride = 1;
    for (size_t d = in_shape.size(); d-- > 0;) {
        Expr coord = stride == 1 ? linear : linear / int_const(stride);
        if (d > 0) coord = coord % int_const(in_shape[d]);
        in_args[d] = in_shape[d] == 1 ? int_const(0) : coord;
        stride *= in_shape[d];
    }
    std::vector<Expr> out_shape;
    for (int64_t e : shape) out_shape.push_back(int_const(e));
    Func out(name);
    out(as_exprs(vars)) = x(in_args);
    return Tensor(out, out_shape);
}

Tensor flatten(const Tensor &x, int axis, const std::string &name) {
    const std::string op = "flatten";
    require_defined(x, "input", op, name);
    const int rank = x.dimensions();
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a > rank)
        fail(op, name, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank) +
                           " (valid: " + std::to_string(-rank) + " .. " + std::to_string(rank) + ")");
    const std::vector<int64_t> in_shape = constant_shape(x, op, name);
    const std::vector<int64_t> outer(in_shape.begin(), in_shape.begin() + a), inner(in_shape.begin() + a, in_shape.end());
    return reshape(x, {product(outer), product(inner)}, name);
}

Tensor concat(const std::vector<Tensor> &xs, int axis, const std::string &name) {
    const std::string op = "concat";
    if (xs.empty()) fail(op, name, "no operands to concatenate");
    for (size_t i = 0; i < xs.size(); ++i) require_defined(xs[i], "operand " + std::to_string(i), op, name);
    const Tensor &first = xs[0];
    const int rank = first.dimensions();
    const int a = normalize_axis(axis, rank, op, name);
    for (size_t i = 1; i < xs.size(); ++i) {
        const Tensor &t = xs[i];
        if (t.dimensions() != rank)
            fail(op, name, "operand " + std::to_string(i) + " '" + t.name() + "' " + shape_string(t.shape()) +
                               " has rank " + std::to_string(t.dimensions()) + " but operand 0 '" + first.name() +
                               "' " + shape_string(first.shape()) + " has rank " + std::to_string(rank));
        if (t.type() != first.type())
            fail(op, name, "operand " + std::to_string(i) + " '" + t.name() + "' has type " + t.type().to_string() +
                               " but operand 0 has " + first.type().to_string());
        for (int d = 0; d < rank; ++d)
            if (d != a && dims_differ(t.dim(d), first.dim(d)))
                fail(op, name, "operand " + std::to_string(i) + " '" + t.name() + "' " + shape_string(t.shape()) +
                                   " differs from operand 0 " + shape_string(first.shape()) + " in dimension " +
                                   std::to_string(d) + " (only the concat axis " + std::to_string(a) + " may differ)");
    }
    const std::vector<Var> vars = make_vars(rank);
    const Expr along = vars[static_cast<size_t>(a)];
    // A chain of selects on the position along the axis; each operand is read with that
    // coordinate shifted to its own start and clamped into its extent, so no branch ever reads
    // outside its operand, whichever branches an evaluator computes.
    std::vector<Expr> offsets{int_const(0)};
    for (const Tensor &t : xs) offsets.push_back(dim_add(offsets.back(), t.dim(a)));
    Expr value;
    for (size_t i = xs.size(); i-- > 0;) {
        std::vector<Expr> args = as_exprs(vars);
        args[static_cast<size_t>(a)] = clamp(along - offsets[i], 0, xs[i].dim(a) - 1);
        const Expr v = xs[i](args);
        value = value.defined() ? select(along < offsets[i + 1], v, value) : v;
    }
    std::vector<Expr> shape = first.shape();
    shape[static_cast<size_t>(a)] = offsets.back();
    Func out(name);
    out(as_exprs(vars)) = value;
    return Tensor(out, shape);
}

} // namespace tessera::ops
