#include "op_util.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "tessera/boundary.h"
#include "tessera/ir_operator.h"
#include "tessera/limits.h"

namespace tessera::internal::oputil {

namespace {
/// Integer division as the DSL defines it: rounding towards negative infinity, x / 0 == 0.
int64_t floor_div(int64_t x, int64_t y) {
    if (y == 0) return 0;
    int64_t q = x / y;
    if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
    return q;
}
} // namespace

void fail(const std::string &op, const std::string &name, const std::string &message) {
    throw Error("ops::" + op + " '" + name + "': " + message);
}

void require_defined(const Tensor &t, const std::string &what, const std::string &op, const std::string &name) {
    if (!t.defined()) fail(op, name, what + " is undefined; pass an Input or a Tensor(func, shape)");
}

void require_float(const Tensor &t, const std::string &what, const std::string &op, const std::string &name) {
    require_defined(t, what, op, name);
    if (!t.type().is_float())
        fail(op, name, what + " '" + t.name() + "' has type " + t.type().to_string() +
                           "; this op needs a floating-point tensor (cast it first)");
}

void require_rank(const Tensor &t, int rank, const std::string &what, const std::string &op, const std::string &name) {
    require_defined(t, what, op, name);
    if (t.dimensions() != rank)
        fail(op, name, what + " '" + t.name() + "' has shape " + ops::shape_string(t.shape()) + " (rank " +
                           std::to_string(t.dimensions()) + "); expected rank " + std::to_string(rank));
}

std::optional<int64_t> const_int(const Expr &e, const std::map<std::string, int64_t> &params) {
    if (!e.defined()) return std::nullopt;
    if (const auto *i = e.as<IntImm>()) return i->value;
    if (const auto *u = e.as<UIntImm>()) return static_cast<int64_t>(u->value);
    if (const auto *var = e.as<Variable>()) {
        auto it = params.find(var->name);
        if (it == params.end()) return std::nullopt;
        return it->second;
    }
    if (const auto *c = e.as<Cast>()) {
        if (c->type.is_integer()) return const_int(c->value, params);
        return std::nullopt;
    }
    auto binary = [&](const Expr &a, const Expr &b, auto op) -> std::optional<int64_t> {
        auto x = const_int(a, params), y = const_int(b, params);
        if (!x || !y) return std::nullopt;
        return op(*x, *y);
    };
    if (const auto *n = e.as<Add>()) return binary(n->a, n->b, [](int64_t x, int64_t y) { return x + y; });
    if (const auto *n = e.as<Sub>()) return binary(n->a, n->b, [](int64_t x, int64_t y) { return x - y; });
    if (const auto *n = e.as<Mul>()) return binary(n->a, n->b, [](int64_t x, int64_t y) { return x * y; });
    if (const auto *n = e.as<Min>()) return binary(n->a, n->b, [](int64_t x, int64_t y) { return std::min(x, y); });
    if (const auto *n = e.as<Max>()) return binary(n->a, n->b, [](int64_t x, int64_t y) { return std::max(x, y); });
    if (const auto *n = e.as<Div>()) return binary(n->a, n->b, floor_div);
    return std::nullopt;
}

Expr int_const(int64_t v) { return IntImm::make(Int(32), v); }

Expr typed_const(Type t, double v) {
    if (t.is_float()) return make_const(t, v);
    // max_value() of a 64-bit integer type rounds up as a double (2^63, 2^64): it means the
    // type's own maximum (a min-reduction's identity), exactly. Any other double outside int64
    // (or NaN) converts to no integer at all — an error, not undefined behaviour.
    if (t.bits() == 64 && v == t.max_value())
        return t.is_int() ? IntImm::make(t, std::numeric_limits<int64_t>::max()) : UIntImm::make(t, std::numeric_limits<uint64_t>::max());
    if (!(v >= -0x1p63 && v < 0x1p63)) throw Error("the constant " + std::to_string(v) + " does not fit " + t.to_string());
    return make_const(t, static_cast<int64_t>(v));
}


namespace {
template <typename Fold, typename Build>
Expr dim_op(const Expr &a, const Expr &b, Fold fold, Build build) {
    auto x = const_int(a), y = const_int(b);
    if (x && y) return int_const(fold(*x, *y));
    return build(a, b);
}
} // namespace

Expr dim_add(const Expr &a, const Expr &b) {
    return dim_op(a, b, [](int64_t x, int64_t y) { return x + y; }, [](const Expr &x, const Expr &y) { return x + y; });
}
Expr dim_sub(const Expr &a, const Expr &b) {
    return dim_op(a, b, [](int64_t x, int64_t y) { return x - y; }, [](const Expr &x, const Expr &y) { return x - y; });
}
Expr dim_mul(const Expr &a, const Expr &b) {
    return dim_op(a, b, [](int64_t x, int64_t y) { return x * y; }, [](const Expr &x, const Expr &y) { return x * y; });
}
Expr dim_div(const Expr &a, const Expr &b) {
    return dim_op(a, b, floor_div, [](const Expr &x, const Expr &y) { return x / y; });
}

bool dims_differ(const Expr &a, const Expr &b) {
    auto x = const_int(a), y = const_int(b);
    return x && y && *x != *y;
}

bool is_one(const Expr &e) {
    auto v = const_int(e);
    return v && *v == 1;
}

std::string dim_string(const Expr &e) {
    if (auto v = const_int(e)) return std::to_string(*v);
    if (const auto *var = e.as<Variable>()) return var->name;
    return "?";
}

int normalize_axis(int axis, int rank, const std::string &op, const std::string &name) {
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        fail(op, name, "axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                           std::to_string(rank) + " (valid: " + std::to_string(-rank) + " .. " +
                           std::to_string(rank - 1) + ")");
    return a;
}

std::vector<Var> make_vars(int n, const std::string &prefix) {
    std::vector<Var> vars;
    for (int d = 0; d < n; ++d) vars.emplace_back(prefix + std::to_string(d));
    return vars;
}

std::vector<Expr> as_exprs(const std::vector<Var> &vars) {
    return std::vector<Expr>(vars.begin(), vars.end());
}

std::vector<Expr> broadcast_shape(const std::vector<Expr> &a, const std::vector<Expr> &b, const std::string &what,
                                  const std::string &op, const std::string &name) {
    const size_t rank = std::max(a.size(), b.size());
    std::vector<Expr> out(rank);
    for (size_t i = 0; i < rank; ++i) {
        // i counts from the innermost dimension.
        const bool has_a = i < a.size(), has_b = i < b.size();
        const Expr ea = has_a ? a[a.size() - 1 - i] : Expr(), eb = has_b ? b[b.size() - 1 - i] : Expr();
        Expr r;
        if (!has_a) r = eb;
        else if (!has_b) r = ea;
        else if (is_one(ea)) r = eb;
        else if (is_one(eb) || !dims_differ(ea, eb)) r = ea;
        else
            fail(op, name, what + " shapes " + ops::shape_string(a) + " and " + ops::shape_string(b) +
                               " do not broadcast: dimension " + std::to_string(i) + " from the innermost is " +
                               dim_string(ea) + " vs " + dim_string(eb) + " (each pair must be equal or one of them 1)");
        out[rank - 1 - i] = r;
    }
    return out;
}

std::vector<Expr> broadcast_args(const std::vector<Expr> &shape, const std::vector<Expr> &coords,
                                 const std::vector<Expr> &out_shape) {
    const size_t offset = coords.size() - shape.size();
    std::vector<Expr> args;
    for (size_t d = 0; d < shape.size(); ++d) {
        const bool broadcast = is_one(shape[d]) && !is_one(out_shape[d + offset]);
        args.push_back(broadcast ? int_const(0) : coords[d + offset]);
    }
    return args;
}

Expr broadcast_read(const Tensor &t, const std::vector<Expr> &coords, const std::vector<Expr> &out_shape) {
    return t(broadcast_args(t.shape(), coords, out_shape));
}

Expr window_coord(const Expr &out, int stride, const Expr &tap, int dilation, int pad_before) {
    Expr e = stride == 1 ? out : out * stride;
    e = e + (dilation == 1 ? tap : tap * dilation);
    if (pad_before != 0) e = e - pad_before;
    return e;
}

Expr window_extent(const Expr &in, int pad_total, const Expr &kernel, int dilation, int stride) {
    const Expr span = dim_add(dim_mul(int_const(dilation), dim_sub(kernel, int_const(1))), int_const(1));
    return dim_add(dim_div(dim_sub(dim_add(in, int_const(pad_total)), span), int_const(stride)), int_const(1));
}

void check_window(const std::array<int, 2> &stride, const std::array<int, 2> &dilation, const ops::Padding2d &padding,
                  const std::string &op, const std::string &name) {
    const std::string most = std::to_string(limits::kMaxWindowParameter);
    for (int s : stride)
        if (s < 1 || s > limits::kMaxWindowParameter) fail(op, name, "stride " + std::to_string(s) + " must be in 1.." + most);
    for (int d : dilation)
        if (d < 1 || d > limits::kMaxWindowParameter) fail(op, name, "dilation " + std::to_string(d) + " must be in 1.." + most);
    for (int p : {padding.top, padding.left, padding.bottom, padding.right})
        if (p < 0 || p > limits::kMaxWindowParameter) fail(op, name, "padding " + std::to_string(p) + " must be in 0.." + most);
}


Reduction make_reduction(const Tensor &x, std::vector<int> axes, bool keepdims, const std::string &op,
                         const std::string &name) {
    const int rank = x.dimensions();
    std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
    for (int axis : axes) {
        const int a = normalize_axis(axis, rank, op, name);
        if (reduced[static_cast<size_t>(a)]) fail(op, name, "axis " + std::to_string(axis) + " is listed twice");
        reduced[static_cast<size_t>(a)] = true;
    }
    Reduction red;
    std::vector<Range> ranges; // innermost reduced axis first: it becomes r.x
    for (int d = rank - 1; d >= 0; --d)
        if (reduced[static_cast<size_t>(d)]) ranges.push_back({int_const(0), x.dim(d)});
    red.r = RDom(ranges, "r");
    red.count = int_const(1);
    int next_var = 0, next_rvar = static_cast<int>(ranges.size()) - 1;
    for (int d = 0; d < rank; ++d) {
        if (reduced[static_cast<size_t>(d)]) {
            red.count = dim_mul(red.count, x.dim(d));
            red.in_args.push_back(red.r[next_rvar--]);
            if (keepdims) {
                red.vars.emplace_back("d" + std::to_string(next_var++));
                red.shape.push_back(int_const(1));
            }
        } else {
            red.vars.emplace_back("d" + std::to_string(next_var++));
            red.in_args.push_back(red.vars.back());
            red.shape.push_back(x.dim(d));
        }
    }
    if (red.vars.empty()) {
        red.vars.emplace_back("d0");
        red.shape.push_back(int_const(1));
    }
    return red;
}

Expr in_range(const Expr &coord, const Expr &extent) { return coord >= 0 && coord < extent; }

Func pad_with(const Tensor &t, const Expr &outside, const std::string &name) {
    if (t.is_input()) return constant_exterior(t.input(), outside, name);
    std::vector<Range> bounds;
    for (const Expr &extent : t.shape()) bounds.push_back({int_const(0), extent});
    return constant_exterior(t.func(), bounds, outside, name);
}

} // namespace tessera::internal::oputil
