// Ops that only move elements: transpose/permute, reshape/flatten, concat, slice, gather,
// expand and pad.
#include <algorithm>
#include <limits>

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

Tensor slice(const Tensor &x, const std::vector<int64_t> &starts, const std::vector<int64_t> &ends,
             const std::vector<int64_t> &axes_in, const std::vector<int64_t> &steps_in, const std::string &name) {
    const std::string op = "slice";
    require_defined(x, "input", op, name);
    const std::vector<int64_t> in_shape = constant_shape(x, op, name);
    const int rank = x.dimensions();
    std::vector<int64_t> axes = axes_in, steps = steps_in;
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        fail(op, name, "starts, ends, axes and steps have " + std::to_string(starts.size()) + ", " +
                           std::to_string(ends.size()) + ", " + std::to_string(axes.size()) + " and " +
                           std::to_string(steps.size()) + " entries; they must have one per sliced axis");
    std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), extent = in_shape;
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < starts.size(); ++i) {
        if (axes[i] < -rank || axes[i] >= rank)
            fail(op, name, "axis " + std::to_string(axes[i]) + " is out of range for rank " + std::to_string(rank));
        const size_t a = static_cast<size_t>(normalize_axis(static_cast<int>(axes[i]), rank, op, name));
        if (seen[a]) fail(op, name, "axis " + std::to_string(axes[i]) + " is sliced twice");
        seen[a] = true;
        if (steps[i] == 0) fail(op, name, "step of axis " + std::to_string(axes[i]) + " is 0; it must be non-zero");
        const int64_t n = in_shape[a];
        auto norm = [&](int64_t v, int64_t lo, int64_t hi) {
            if (v < 0) v = v < -n ? -1 - n : v + n; // keep below 0 to clamp; no overflow for INT64_MIN
            return std::clamp(v, lo, hi);
        };
        int64_t start, end;
        if (steps[i] > 0) {
            start = norm(starts[i], 0, n);
            end = norm(ends[i], 0, n);
        } else {
            start = norm(starts[i], -1, n - 1);
            end = norm(ends[i], -1, n - 1);
        }
        const int64_t span = steps[i] > 0 ? end - start : start - end;
        const int64_t st = steps[i] > 0 ? steps[i] : -steps[i];
        const int64_t count = span <= 0 ? 0 : (span + st - 1) / st;
        if (count == 0) fail(op, name, "axis " + std::to_string(axes[i]) + " of '" + x.name() + "' " + join(in_shape) + " slices to nothing");
        first[a] = start;
        step[a] = steps[i];
        extent[a] = count;
    }
    const std::vector<Var> vars = make_vars(rank);
    std::vector<Expr> args, shape;
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        Expr c = vars[d];
        if (step[d] != 1) c = c * int_const(step[d]);
        if (first[d] != 0) c = c + int_const(first[d]);
        args.push_back(c);
        shape.push_back(int_const(extent[d]));
    }
    Func out(name);
    out(as_exprs(vars)) = x(args);
    return Tensor(out, shape);
}

Tensor gather(const Tensor &x, const Tensor &indices, int axis, const std::string &name) {
    const std::string op = "gather";
    require_defined(x, "input", op, name);
    require_defined(indices, "indices", op, name);
    if (!indices.type().is_integer())
        fail(op, name, "indices '" + indices.name() + "' are " + indices.type().to_string() + "; they must be integers");
    const int rank = x.dimensions();
    const size_t a = static_cast<size_t>(normalize_axis(axis, rank, op, name));
    const int out_rank = rank - 1 + indices.dimensions();
    const std::vector<Var> vars = make_vars(out_rank);
    std::vector<Expr> shape, index_args, args;
    for (size_t d = 0; d < a; ++d) shape.push_back(x.dim(static_cast<int>(d)));
    for (int d = 0; d < indices.dimensions(); ++d) {
        shape.push_back(indices.dim(d));
        index_args.push_back(vars[a + static_cast<size_t>(d)]);
    }
    for (int d = static_cast<int>(a) + 1; d < rank; ++d) shape.push_back(x.dim(d));
    const Expr n = x.dim(static_cast<int>(a));
    const Expr raw = tessera::cast(Int(32), indices(index_args));
    const Expr index = clamp(select(raw < 0, raw + n, raw), 0, n - 1);
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        if (d < a) args.push_back(vars[d]);
        else if (d == a) args.push_back(index);
        else args.push_back(vars[d - 1 + static_cast<size_t>(indices.dimensions())]);
    }
    Func out(name);
    out(as_exprs(vars)) = x(args);
    return Tensor(out, shape);
}

Tensor expand(const Tensor &x, const std::vector<int64_t> &target, const std::string &name) {
    const std::string op = "expand";
    require_defined(x, "input", op, name);
    std::vector<Expr> target_shape;
    for (int64_t e : target) {
        if (e < 1 || e > std::numeric_limits<int32_t>::max()) fail(op, name, "target shape " + join(target) + " has the extent " + std::to_string(e) + "; extents are 1 .. 2^31-1");
        target_shape.push_back(int_const(e));
    }
    const std::vector<Expr> shape = broadcast_shape(x.shape(), target_shape, "operand", op, name);
    const std::vector<Expr> coords = as_exprs(make_vars(static_cast<int>(shape.size())));
    Func out(name);
    out(coords) = broadcast_read(x, coords, shape);
    return Tensor(out, shape);
}

Tensor pad(const Tensor &x, const std::vector<int64_t> &pads, PadMode mode, double value, const std::string &name) {
    const std::string op = "pad";
    require_defined(x, "input", op, name);
    const std::vector<int64_t> in_shape = constant_shape(x, op, name);
    const size_t rank = in_shape.size();
    if (pads.size() != 2 * rank)
        fail(op, name, "pads has " + std::to_string(pads.size()) + " entries; '" + x.name() + "' " + join(in_shape) +
                           " needs " + std::to_string(2 * rank) + " (before each dimension, then after each)");
    const std::vector<Var> vars = make_vars(static_cast<int>(rank));
    std::vector<Expr> args, shape;
    Expr inside = tessera::cast(Bool(), int_const(1));
    for (size_t d = 0; d < rank; ++d) {
        const int64_t before = pads[d], after = pads[d + rank], n = in_shape[d];
        if (before < 0 || after < 0 || before > std::numeric_limits<int32_t>::max() - n - after)
            fail(op, name, "pads of dimension " + std::to_string(d) + " are " + std::to_string(before) + " and " +
                               std::to_string(after) + "; each must be >= 0 and the result fit in 2^31-1");
        if (mode == PadMode::Reflect && (before >= n || after >= n))
            fail(op, name, "reflect pads of dimension " + std::to_string(d) + " (" + std::to_string(before) + ", " +
                               std::to_string(after) + ") must be below its extent " + std::to_string(n));
        const Expr c = Expr(vars[d]) - int_const(before);
        shape.push_back(int_const(n + before + after));
        if (mode == PadMode::Reflect) {
            const Expr last = int_const(n - 1);
            args.push_back(select(c < 0, -c, select(c > last, last - (c - last), c)));
        } else {
            args.push_back(clamp(c, 0, n - 1));
        }
        inside = inside && in_range(c, int_const(n));
    }
    Func out(name);
    const Expr v = x(args);
    out(as_exprs(vars)) = mode == PadMode::Constant ? select(inside, v, typed_const(x.type(), value)) : v;
    return Tensor(out, shape);
}

} // namespace tessera::ops
