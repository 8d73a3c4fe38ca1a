// Interval arithmetic over Exprs (interval.h). Bounds fold to constants whenever the operands'
// bounds are constants, and stay symbolic (Min/Max/Add... nodes) otherwise, so the same code
// serves the reference evaluator (everything constant) and bounds inference (loop variables
// and Params symbolic).
#include "tessera/interval.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_printer.h"

namespace tessera {

namespace {

// Constant arithmetic is done in 128 bits so that overflow of any 64-bit type is detected
// before it is folded.
using i128 = __int128;

struct IntLimits {
    i128 lo, hi;
};

IntLimits int_limits(Type t) {
    if (t.is_bool()) return {0, 1};
    if (t.is_uint()) return {0, (i128(1) << t.bits()) - 1};
    return {-(i128(1) << (t.bits() - 1)), (i128(1) << (t.bits() - 1)) - 1};
}

bool is_integral(Type t) { return t.is_integer() || t.is_bool(); }

std::optional<i128> const_int(const Expr &e) {
    if (!e.defined()) return std::nullopt;
    if (const auto *i = e.as<IntImm>()) return i128(i->value);
    if (const auto *u = e.as<UIntImm>()) return i128(u->value);
    return std::nullopt;
}

std::optional<double> const_float(const Expr &e) {
    if (!e.defined()) return std::nullopt;
    if (const auto *f = e.as<FloatImm>()) return f->value;
    return std::nullopt;
}

/// Any numeric constant as a double (for comparisons that decide a condition).
std::optional<double> const_number(const Expr &e) {
    if (auto i = const_int(e)) return static_cast<double>(*i);
    return const_float(e);
}

Expr make_bool(bool v) { return Expr(v); }

/// Thrown (and caught inside this file) when constant folding overflows the type: the true
/// value would wrap, so the whole interval is unknown.
struct Overflow {};

Expr make_int(Type t, i128 v) {
    const IntLimits lim = int_limits(t);
    if (v < lim.lo || v > lim.hi) throw Overflow{};
    if (t.is_bool()) return make_bool(v != 0);
    if (t.is_uint()) return UIntImm::make(t, static_cast<uint64_t>(v));
    return IntImm::make(t, static_cast<int64_t>(v));
}

Expr make_float(Type t, double v) { return FloatImm::make(t, v); }

Expr type_min(Type t) {
    if (is_integral(t)) return make_int(t, int_limits(t).lo);
    return Expr();
}
Expr type_max(Type t) {
    if (is_integral(t)) return make_int(t, int_limits(t).hi);
    return Expr();
}

/// The range of a value nothing is known about: narrow integer types are worth bounding by
/// their type (a uint8 value indexes 256 entries); anything wider is effectively unbounded.
Interval unknown_value(Type t) {
    if (t.is_bool() || (t.is_integer() && t.bits() <= 16)) return Interval(type_min(t), type_max(t));
    return Interval::everything();
}

// Endpoint arithmetic: fold constants, otherwise build the node. Undefined (infinite)
// endpoints are handled by the callers, which know which infinity they stand for.
Expr add_e(const Expr &a, const Expr &b) {
    auto ia = const_int(a), ib = const_int(b);
    if (ia && ib) return make_int(a.type(), *ia + *ib);
    auto fa = const_float(a), fb = const_float(b);
    if (fa && fb) return make_float(a.type(), *fa + *fb);
    if ((ib && *ib == 0) || (fb && *fb == 0)) return a;
    if ((ia && *ia == 0) || (fa && *fa == 0)) return b;
    return Add::make(a, b);
}
Expr sub_e(const Expr &a, const Expr &b) {
    auto ia = const_int(a), ib = const_int(b);
    if (ia && ib) return make_int(a.type(), *ia - *ib);
    auto fa = const_float(a), fb = const_float(b);
    if (fa && fb) return make_float(a.type(), *fa - *fb);
    if ((ib && *ib == 0) || (fb && *fb == 0)) return a;
    if (a.same_as(b)) return is_integral(a.type()) ? make_int(a.type(), 0) : make_float(a.type(), 0);
    return Sub::make(a, b);
}
Expr mul_e(const Expr &a, const Expr &b) {
    auto ia = const_int(a), ib = const_int(b);
    if (ia && ib) {
        // |a|, |b| < 2^64, so the product fits in 128 bits.
        return make_int(a.type(), *ia * *ib);
    }
    auto fa = const_float(a), fb = const_float(b);
    if (fa && fb) return make_float(a.type(), *fa * *fb);
    if ((ib && *ib == 1) || (fb && *fb == 1)) return a;
    if ((ia && *ia == 1) || (fa && *fa == 1)) return b;
    return Mul::make(a, b);
}

/// Euclidean division, as the IR defines it: the remainder is always in [0, |b|); x / 0 == 0.
i128 div_euclid(i128 a, i128 b) {
    if (b == 0) return 0;
    i128 q = a / b, r = a % b;
    if (r < 0) q += b > 0 ? -1 : 1;
    return q;
}

Expr div_e(const Expr &a, const Expr &b) {
    auto ia = const_int(a), ib = const_int(b);
    if (ia && ib) return make_int(a.type(), div_euclid(*ia, *ib));
    auto fa = const_float(a), fb = const_float(b);
    if (fa && fb) return make_float(a.type(), *fb == 0 ? 0.0 : *fa / *fb);
    if ((ib && *ib == 1) || (fb && *fb == 1)) return a;
    return Div::make(a, b);
}

bool provably_le(const Expr &a, const Expr &b) {
    if (a.same_as(b)) return true;
    auto na = const_number(a), nb = const_number(b);
    return na && nb && *na <= *nb;
}

Expr min_e(const Expr &a, const Expr &b) {
    if (provably_le(a, b)) return a;
    if (provably_le(b, a)) return b;
    return Min::make(a, b);
}
Expr max_e(const Expr &a, const Expr &b) {
    if (provably_le(a, b)) return b;
    if (provably_le(b, a)) return a;
    return Max::make(a, b);
}

// Lower and upper endpoints where undefined means -inf / +inf respectively.
Expr min_lower(const Expr &a, const Expr &b) { return a.defined() && b.defined() ? min_e(a, b) : Expr(); }
Expr max_upper(const Expr &a, const Expr &b) { return a.defined() && b.defined() ? max_e(a, b) : Expr(); }

bool is_const_zero(const Expr &e) {
    auto n = const_number(e);
    return n && *n == 0;
}
/// Whether e is a constant >= 0 (> 0 when strict).
bool const_nonneg(const Expr &e, bool strict = false) {
    auto n = const_number(e);
    return n && (strict ? *n > 0 : *n >= 0);
}
bool const_nonpos(const Expr &e, bool strict = false) {
    auto n = const_number(e);
    return n && (strict ? *n < 0 : *n <= 0);
}

/// Bounds of a non-decreasing function applied to an interval.
template <typename F> Interval monotone(const Interval &a, F f) {
    return Interval(a.min.defined() ? f(a.min) : Expr(), a.max.defined() ? f(a.max) : Expr());
}

class Bounds {
public:
    explicit Bounds(const IntervalScope &scope) : scope_(scope) {}

    Interval of(const Expr &e) {
        try {
            return visit(e);
        } catch (const Overflow &) {
            return e.defined() ? unknown_value(e.type()) : Interval::everything();
        }
    }

    IntervalScope &scope() { return scope_; }

private:
    IntervalScope scope_;

    Interval visit(const Expr &e) {
        if (!e.defined()) throw InternalError("bounds_of_expr: undefined Expr");
        switch (e.node_type()) {
        case IRNodeType::IntImm:
        case IRNodeType::UIntImm:
        case IRNodeType::FloatImm: return Interval::single_point(e);
        case IRNodeType::Variable: {
            const auto *v = e.as<Variable>();
            auto it = scope_.find(v->name);
            return it == scope_.end() ? Interval::single_point(e) : it->second;
        }
        case IRNodeType::Cast: return visit_cast(e.type(), e.as<Cast>()->value);
        case IRNodeType::Add: return add(e.as<Add>());
        case IRNodeType::Sub: return sub(e.as<Sub>());
        case IRNodeType::Mul: return mul(e.as<Mul>());
        case IRNodeType::Div: return div(e.as<Div>());
        case IRNodeType::Mod: return mod(e.as<Mod>());
        case IRNodeType::Min: {
            const auto *op = e.as<Min>();
            Interval a = of(op->a), b = of(op->b);
            return Interval(min_lower(a.min, b.min), a.max.defined()   ? (b.max.defined() ? min_e(a.max, b.max) : a.max)
                                                     : b.max);
        }
        case IRNodeType::Max: {
            const auto *op = e.as<Max>();
            Interval a = of(op->a), b = of(op->b);
            return Interval(a.min.defined() ? (b.min.defined() ? max_e(a.min, b.min) : a.min) : b.min,
                            max_upper(a.max, b.max));
        }
        case IRNodeType::EQ: case IRNodeType::NE: case IRNodeType::LT:
        case IRNodeType::LE: case IRNodeType::GT: case IRNodeType::GE: return comparison(e);
        case IRNodeType::And: {
            const auto *op = e.as<And>();
            auto a = decided(of(op->a)), b = decided(of(op->b));
            if ((a && !*a) || (b && !*b)) return Interval::single_point(make_bool(false));
            if (a && b) return Interval::single_point(make_bool(true));
            return boolean_range();
        }
        case IRNodeType::Or: {
            const auto *op = e.as<Or>();
            auto a = decided(of(op->a)), b = decided(of(op->b));
            if ((a && *a) || (b && *b)) return Interval::single_point(make_bool(true));
            if (a && b) return Interval::single_point(make_bool(false));
            return boolean_range();
        }
        case IRNodeType::Not: {
            auto a = decided(of(e.as<Not>()->a));
            return a ? Interval::single_point(make_bool(!*a)) : boolean_range();
        }
        case IRNodeType::Select: {
            const auto *op = e.as<Select>();
            auto c = decided(of(op->condition));
            if (c) return of(*c ? op->true_value : op->false_value);
            return interval_union(of(op->true_value), of(op->false_value));
        }
        case IRNodeType::Let: {
            const auto *op = e.as<Let>();
            Interval value = of(op->value);
            auto saved = scope_.find(op->name) != scope_.end() ? std::optional<Interval>(scope_[op->name]) : std::nullopt;
            scope_[op->name] = value;
            Interval body = of(op->body);
            if (saved) scope_[op->name] = *saved; else scope_.erase(op->name);
            return body;
        }
        case IRNodeType::Call: return call(e);
        case IRNodeType::Load: return unknown_value(e.type());
        default: throw InternalError("bounds_of_expr: not an expression node");
        }
    }

    static Interval boolean_range() { return Interval(make_bool(false), make_bool(true)); }

    static std::optional<bool> decided(const Interval &i) {
        if (!i.is_bounded()) return std::nullopt;
        auto lo = const_int(i.min), hi = const_int(i.max);
        if (lo && hi && *lo == *hi) return *lo != 0;
        return std::nullopt;
    }

    Interval visit_cast(Type to, const Expr &value) {
        const Type from = value.type();
        Interval a = of(value);
        if (to.is_bool()) {
            // Casting to Bool is "!= 0".
            if (a.is_bounded() && is_const_zero(a.min) && is_const_zero(a.max))
                return Interval::single_point(make_bool(false));
            if ((a.min.defined() && const_nonneg(a.min, true)) || (a.max.defined() && const_nonpos(a.max, true)))
                return Interval::single_point(make_bool(true));
            return boolean_range();
        }
        if (to.is_float() || to.code() == TypeCode::Float) {
            // Conversion to a float type is non-decreasing (rounding is monotone).
            return monotone(a, [&](const Expr &x) -> Expr {
                if (auto i = const_int(x)) return make_float(to, static_cast<double>(*i));
                if (auto f = const_float(x)) return make_float(to, *f);
                return Cast::make(to, x);
            });
        }
        // To an integer type.
        const IntLimits lim = int_limits(to);
        if (from.is_float() || from.code() == TypeCode::Float) {
            // Truncation towards zero with saturation: non-decreasing, and within the type.
            auto convert = [&](const Expr &x) -> Expr {
                if (auto f = const_float(x)) {
                    if (std::isnan(*f)) throw Overflow{};
                    double t = std::trunc(*f);
                    t = std::max(static_cast<double>(lim.lo), std::min(static_cast<double>(lim.hi), t));
                    return make_int(to, static_cast<i128>(t));
                }
                return Cast::make(to, x);
            };
            Interval r = monotone(a, convert);
            Interval limits = unknown_value(to);
            if (!r.min.defined()) r.min = limits.min;
            if (!r.max.defined()) r.max = limits.max;
            return r;
        }
        // Integer (or Bool) to integer: exact when every value fits, otherwise it may wrap.
        auto lo = const_int(a.min), hi = const_int(a.max);
        if (lo && hi) {
            if (*lo >= lim.lo && *hi <= lim.hi) return Interval(make_int(to, *lo), make_int(to, *hi));
            return unknown_value(to);
        }
        if (to.can_represent(from)) return monotone(a, [&](const Expr &x) -> Expr {
            if (auto i = const_int(x)) return make_int(to, *i);
            return Cast::make(to, x);
        });
        return unknown_value(to);
    }

    Interval add(const Add *op) {
        Interval a = of(op->a), b = of(op->b);
        return Interval(a.min.defined() && b.min.defined() ? add_e(a.min, b.min) : Expr(),
                        a.max.defined() && b.max.defined() ? add_e(a.max, b.max) : Expr());
    }

    Interval sub(const Sub *op) {
        Interval a = of(op->a), b = of(op->b);
        return Interval(a.min.defined() && b.max.defined() ? sub_e(a.min, b.max) : Expr(),
                        a.max.defined() && b.min.defined() ? sub_e(a.max, b.min) : Expr());
    }

    /// a * b where b is a single point k (possibly symbolic, then its sign must be known).
    static std::optional<Interval> scale(const Interval &a, const Expr &k) {
        if (is_const_zero(k)) return Interval::single_point(k);
        auto times = [&](const Expr &x) { return x.defined() ? mul_e(x, k) : Expr(); };
        if (const_nonneg(k)) return Interval(times(a.min), times(a.max));
        if (const_nonpos(k)) return Interval(times(a.max), times(a.min));
        return std::nullopt;
    }

    Interval mul(const Mul *op) {
        Interval a = of(op->a), b = of(op->b);
        if (b.is_single_point())
            if (auto r = scale(a, b.min)) return *r;
        if (a.is_single_point())
            if (auto r = scale(b, a.min)) return *r;
        if (!a.is_bounded() || !b.is_bounded()) {
            // Unbounded times something of known sign still has a known sign.
            bool a_nonneg = a.min.defined() && const_nonneg(a.min), b_nonneg = b.min.defined() && const_nonneg(b.min);
            if (a_nonneg && b_nonneg) {
                return Interval(mul_e(a.min, b.min), a.max.defined() && b.max.defined() ? mul_e(a.max, b.max) : Expr());
            }
            return Interval::everything();
        }
        if (const_nonneg(a.min) && const_nonneg(b.min)) return Interval(mul_e(a.min, b.min), mul_e(a.max, b.max));
        Expr p[4] = {mul_e(a.min, b.min), mul_e(a.min, b.max), mul_e(a.max, b.min), mul_e(a.max, b.max)};
        return Interval(min_e(min_e(p[0], p[1]), min_e(p[2], p[3])), max_e(max_e(p[0], p[1]), max_e(p[2], p[3])));
    }

    Interval div(const Div *op) {
        Interval a = of(op->a), b = of(op->b);
        const Type t = op->type;
        auto div_by = [&](const Expr &x, const Expr &k) { return x.defined() ? div_e(x, k) : Expr(); };
        // A divisor of known sign that excludes zero: the quotient is monotone in the dividend
        // (non-decreasing for positive divisors, non-increasing for negative ones — Euclidean
        // division flips the order with the sign).
        if (b.is_single_point() && !is_const_zero(b.min)) {
            if (const_nonneg(b.min, true)) return Interval(div_by(a.min, b.min), div_by(a.max, b.min));
            if (const_nonpos(b.min, true)) return Interval(div_by(a.max, b.min), div_by(a.min, b.min));
        }
        if (a.is_bounded() && b.is_bounded()) {
            auto la = const_number(a.min), ha = const_number(a.max), lb = const_number(b.min), hb = const_number(b.max);
            if (la && ha && lb && hb) {
                if (*lb > 0 || *hb < 0) {
                    // Extremes are at the corners.
                    Expr p[4] = {div_e(a.min, b.min), div_e(a.min, b.max), div_e(a.max, b.min), div_e(a.max, b.max)};
                    return Interval(min_e(min_e(p[0], p[1]), min_e(p[2], p[3])),
                                    max_e(max_e(p[0], p[1]), max_e(p[2], p[3])));
                }
                if (is_integral(t)) {
                    // The divisor may be zero (x / 0 == 0) or of either sign: |x / y| <= |x|
                    // for integers, and 0 is possible.
                    i128 m = std::max(*const_int(a.min) < 0 ? -*const_int(a.min) : *const_int(a.min),
                                      *const_int(a.max) < 0 ? -*const_int(a.max) : *const_int(a.max));
                    return Interval(make_int(t, t.is_uint() ? 0 : -m), make_int(t, m));
                }
            }
        }
        if (t.is_uint() && a.is_bounded()) return Interval(make_int(t, 0), a.max);
        return is_integral(t) ? unknown_value(t) : Interval::everything();
    }

    Interval mod(const Mod *op) {
        Interval a = of(op->a), b = of(op->b);
        const Type t = op->type;
        if (is_integral(t)) {
            auto lb = const_int(b.min), hb = const_int(b.max);
            if (lb && hb) {
                const i128 largest = std::max(*lb < 0 ? -*lb : *lb, *hb < 0 ? -*hb : *hb);
                const i128 smallest_abs = (*lb > 0) ? *lb : (*hb < 0 ? -*hb : 0);
                // A dividend already inside [0, |b|) is its own remainder.
                auto la = const_int(a.min), ha = const_int(a.max);
                if (smallest_abs > 0 && la && ha && *la >= 0 && *ha < smallest_abs) return a;
                // A non-negative dividend is never exceeded by its remainder.
                if (smallest_abs > 0 && a.min.defined() && const_nonneg(a.min) && a.max.defined())
                    return Interval(make_int(t, 0), min_e(a.max, make_int(t, largest - 1)));
                return Interval(make_int(t, 0), make_int(t, largest == 0 ? 0 : largest - 1));
            }
            // Euclidean remainders are never negative.
            return Interval(make_int(t, 0), b.max.defined() && b.min.defined() && const_nonneg(b.min, true)
                                                ? sub_e(b.max, make_int(t, 1))
                                                : Expr());
        }
        // Floats: x - y * floor(x / y) lies in [0, y) for y > 0.
        if (b.is_bounded() && const_nonneg(b.min, true)) return Interval(make_float(t, 0), b.max);
        return Interval::everything();
    }

    Interval comparison(const Expr &e) {
        const Expr *ea = nullptr, *eb = nullptr;
        switch (e.node_type()) {
        case IRNodeType::EQ: ea = &e.as<EQ>()->a; eb = &e.as<EQ>()->b; break;
        case IRNodeType::NE: ea = &e.as<NE>()->a; eb = &e.as<NE>()->b; break;
        case IRNodeType::LT: ea = &e.as<LT>()->a; eb = &e.as<LT>()->b; break;
        case IRNodeType::LE: ea = &e.as<LE>()->a; eb = &e.as<LE>()->b; break;
        case IRNodeType::GT: ea = &e.as<GT>()->a; eb = &e.as<GT>()->b; break;
        case IRNodeType::GE: ea = &e.as<GE>()->a; eb = &e.as<GE>()->b; break;
        default: break;
        }
        Interval a = of(*ea), b = of(*eb);
        auto num = [](const Expr &x) { return x.defined() ? const_number(x) : std::nullopt; };
        auto amin = num(a.min), amax = num(a.max), bmin = num(b.min), bmax = num(b.max);
        // lt: every a < every b; ge: every a >= every b; and so on.
        const bool a_lt_b = amax && bmin && *amax < *bmin;
        const bool a_le_b = amax && bmin && *amax <= *bmin;
        const bool a_gt_b = amin && bmax && *amin > *bmax;
        const bool a_ge_b = amin && bmax && *amin >= *bmax;
        const bool equal_points = amin && amax && bmin && bmax && *amin == *amax && *bmin == *bmax && *amin == *bmin;
        std::optional<bool> r;
        switch (e.node_type()) {
        case IRNodeType::EQ: if (equal_points) r = true; else if (a_lt_b || a_gt_b) r = false; break;
        case IRNodeType::NE: if (equal_points) r = false; else if (a_lt_b || a_gt_b) r = true; break;
        case IRNodeType::LT: if (a_lt_b) r = true; else if (a_ge_b) r = false; break;
        case IRNodeType::LE: if (a_le_b) r = true; else if (a_gt_b) r = false; break;
        case IRNodeType::GT: if (a_gt_b) r = true; else if (a_le_b) r = false; break;
        case IRNodeType::GE: if (a_ge_b) r = true; else if (a_lt_b) r = false; break;
        default: break;
        }
        return r ? Interval::single_point(make_bool(*r)) : boolean_range();
    }

    Interval call(const Expr &e) {
        const auto *op = e.as<Call>();
        const Type t = e.type();
        if (op->call_type != CallType::Intrinsic) return unknown_value(t);
        if (op->args.empty()) return Interval::everything();
        Interval a = of(op->args[0]);
        // Folds a float function at a constant endpoint, or leaves the call symbolic.
        auto apply = [&](double (*f)(double)) {
            return [=](const Expr &x) -> Expr {
                if (auto v = const_number(x)) return make_float(t, f(*v));
                return Call::make_intrinsic(op->intrinsic, {x});
            };
        };
        switch (op->intrinsic) {
        case Intrinsic::Exp: {
            Interval r = monotone(a, apply([](double x) { return std::exp(x); }));
            if (!r.min.defined()) r.min = make_float(t, 0);
            return r;
        }
        case Intrinsic::Log:
            if (a.min.defined() && const_nonneg(a.min, true)) return monotone(a, apply([](double x) { return std::log(x); }));
            return Interval(Expr(), a.max.defined() && const_nonneg(a.max, true) ? apply([](double x) { return std::log(x); })(a.max) : Expr());
        case Intrinsic::Sqrt:
            if (a.min.defined() && const_nonneg(a.min)) return monotone(a, apply([](double x) { return std::sqrt(x); }));
            return Interval(make_float(t, 0), a.max.defined() && const_nonneg(a.max) ? apply([](double x) { return std::sqrt(x); })(a.max) : Expr());
        case Intrinsic::Rsqrt:
            // Decreasing on (0, inf).
            if (a.is_bounded() && const_nonneg(a.min, true))
                return Interval(apply([](double x) { return 1 / std::sqrt(x); })(a.max),
                                apply([](double x) { return 1 / std::sqrt(x); })(a.min));
            return Interval(make_float(t, 0), Expr());
        case Intrinsic::Tanh: return clamp_fill(monotone(a, apply([](double x) { return std::tanh(x); })), t, -1, 1);
        case Intrinsic::Erf: return clamp_fill(monotone(a, apply([](double x) { return std::erf(x); })), t, -1, 1);
        case Intrinsic::Sigmoid:
            return clamp_fill(monotone(a, apply([](double x) { return 1 / (1 + std::exp(-x)); })), t, 0, 1);
        case Intrinsic::Floor:
        case Intrinsic::Ceil:
        case Intrinsic::Round: {
            auto fold = [&](const Expr &x) -> Expr {
                if (auto v = const_float(x)) {
                    double r = op->intrinsic == Intrinsic::Floor ? std::floor(*v)
                               : op->intrinsic == Intrinsic::Ceil ? std::ceil(*v)
                                                                  : std::nearbyint(*v);
                    return make_float(t, r);
                }
                if (const_int(x)) return x;
                return Call::make_intrinsic(op->intrinsic, {x});
            };
            return monotone(a, fold);
        }
        case Intrinsic::Abs: {
            if (a.min.defined() && const_nonneg(a.min)) return a;
            auto lo = const_number(a.min.defined() ? a.min : Expr()), hi = const_number(a.max.defined() ? a.max : Expr());
            auto zero = is_integral(t) ? make_int(t, 0) : make_float(t, 0);
            if (lo && hi) {
                double m = std::max(std::fabs(*lo), std::fabs(*hi));
                Expr top = is_integral(t) ? make_int(t, static_cast<i128>(m)) : make_float(t, m);
                if (*hi <= 0) return Interval(is_integral(t) ? make_int(t, static_cast<i128>(-*hi)) : make_float(t, -*hi), top);
                return Interval(zero, top);
            }
            return Interval(zero, Expr());
        }
        case Intrinsic::Pow:
        default: return is_integral(t) ? unknown_value(t) : Interval::everything();
        }
    }

    /// Fills missing bounds of a function whose range is [lo, hi].
    static Interval clamp_fill(Interval r, Type t, double lo, double hi) {
        if (!r.min.defined()) r.min = make_float(t, lo);
        if (!r.max.defined()) r.max = make_float(t, hi);
        return r;
    }
};

} // namespace

bool Interval::is_constant() const { return is_bounded() && const_int(min) && const_int(max); }

int64_t Interval::const_min() const {
    auto v = const_int(min);
    if (!v) throw InternalError("Interval::const_min: lower bound " + to_string() + " is not an integer constant");
    return static_cast<int64_t>(*v);
}

int64_t Interval::const_max() const {
    auto v = const_int(max);
    if (!v) throw InternalError("Interval::const_max: upper bound " + to_string() + " is not an integer constant");
    return static_cast<int64_t>(*v);
}

std::string Interval::to_string() const {
    return (min.defined() ? "[" + tessera::to_string(min) : "(-inf") + ", " + (max.defined() ? tessera::to_string(max) + "]" : "+inf)");
}

Interval interval_union(const Interval &a, const Interval &b) {
    try {
        return Interval(min_lower(a.min, b.min), max_upper(a.max, b.max));
    } catch (const Overflow &) {
        return Interval::everything();
    }
}

Interval interval_intersection(const Interval &a, const Interval &b) {
    Expr lo = !a.min.defined() ? b.min : !b.min.defined() ? a.min : max_e(a.min, b.min);
    Expr hi = !a.max.defined() ? b.max : !b.max.defined() ? a.max : min_e(a.max, b.max);
    return Interval(lo, hi);
}

Interval bounds_of_expr(const Expr &e, const IntervalScope &scope) { return Bounds(scope).of(e); }

namespace {

/// Tightens `range` by one comparison `var op e` (op already turned so var is on the left).
Interval tighten(Interval range, IRNodeType op, const Interval &e) {
    const Type t = range.min.defined() ? range.min.type() : range.max.defined() ? range.max.type() : Int(32);
    auto lower_to = [&](const Expr &lo) {
        if (lo.defined()) range.min = range.min.defined() ? max_e(range.min, lo) : lo;
    };
    auto upper_to = [&](const Expr &hi) {
        if (hi.defined()) range.max = range.max.defined() ? min_e(range.max, hi) : hi;
    };
    // Bounds of e in another integer type than the variable's are left alone.
    if ((e.min.defined() && e.min.type() != t) || (e.max.defined() && e.max.type() != t)) return range;
    const Expr one = make_int(t, 1);
    switch (op) {
    case IRNodeType::LT: upper_to(e.max.defined() ? sub_e(e.max, one) : Expr()); break;
    case IRNodeType::LE: upper_to(e.max); break;
    case IRNodeType::GT: lower_to(e.min.defined() ? add_e(e.min, one) : Expr()); break;
    case IRNodeType::GE: lower_to(e.min); break;
    case IRNodeType::EQ:
        lower_to(e.min);
        upper_to(e.max);
        break;
    default: break;
    }
    return range;
}

/// The comparison `a op b` seen from b's side: a < b is b > a.
IRNodeType mirrored(IRNodeType op) {
    switch (op) {
    case IRNodeType::LT: return IRNodeType::GT;
    case IRNodeType::LE: return IRNodeType::GE;
    case IRNodeType::GT: return IRNodeType::LT;
    case IRNodeType::GE: return IRNodeType::LE;
    default: return op;
    }
}

template <typename Cmp> bool comparison_operands(const Expr &c, Expr &a, Expr &b) {
    if (const auto *op = c.as<Cmp>()) {
        a = op->a;
        b = op->b;
        return true;
    }
    return false;
}

} // namespace

Interval narrow_by_condition(const std::string &var, const Interval &range, const Expr &condition,
                             const IntervalScope &scope) {
    if (!condition.defined()) return range;
    if (const auto *op = condition.as<And>())
        return narrow_by_condition(var, narrow_by_condition(var, range, op->a, scope), op->b, scope);
    Expr a, b;
    if (!(comparison_operands<LT>(condition, a, b) || comparison_operands<LE>(condition, a, b) ||
          comparison_operands<GT>(condition, a, b) || comparison_operands<GE>(condition, a, b) ||
          comparison_operands<EQ>(condition, a, b)))
        return range;
    if (!is_integral(a.type())) return range;
    auto is_var = [&](const Expr &e) {
        const auto *v = e.as<Variable>();
        return v && v->name == var;
    };
    try {
        // Where `var op e` holds, var is within e's bounds shifted by op; e's bounds may use
        // var's own range, which only makes the narrowing weaker, never wrong.
        if (is_var(a) && !is_var(b)) return tighten(range, condition.node_type(), bounds_of_expr(b, scope));
        if (is_var(b) && !is_var(a)) return tighten(range, mirrored(condition.node_type()), bounds_of_expr(a, scope));
    } catch (const Overflow &) {
    }
    return range;
}

Box box_union(const Box &a, const Box &b) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    if (a.size() != b.size())
        throw InternalError("box_union: boxes of " + std::to_string(a.size()) + " and " + std::to_string(b.size()) +
                            " dimensions");
    Box r(a.size());
    for (size_t i = 0; i < a.size(); ++i) r[i] = interval_union(a[i], b[i]);
    return r;
}

bool box_is_bounded(const Box &b) {
    return std::all_of(b.begin(), b.end(), [](const Interval &i) { return i.is_bounded(); });
}

std::string box_to_string(const Box &b) {
    std::string s = "{";
    for (size_t i = 0; i < b.size(); ++i) s += (i ? ", " : "") + b[i].to_string();
    return s + "}";
}

namespace {

/// Walks an expression collecting Func and Input calls, keeping Let-bound variables in scope.
class CallCollector {
public:
    explicit CallCollector(const IntervalScope &scope) : bounds_(scope) {}

    void visit(const Expr &e) {
        if (!e.defined()) return;
        switch (e.node_type()) {
        case IRNodeType::IntImm: case IRNodeType::UIntImm: case IRNodeType::FloatImm:
        case IRNodeType::Variable: return;
        case IRNodeType::Cast: return visit(e.as<Cast>()->value);
#define TESSERA_BINARY(N) case IRNodeType::N: visit(e.as<N>()->a); visit(e.as<N>()->b); return;
        TESSERA_BINARY(Add) TESSERA_BINARY(Sub) TESSERA_BINARY(Mul) TESSERA_BINARY(Div) TESSERA_BINARY(Mod)
        TESSERA_BINARY(Min) TESSERA_BINARY(Max) TESSERA_BINARY(EQ) TESSERA_BINARY(NE) TESSERA_BINARY(LT)
        TESSERA_BINARY(LE) TESSERA_BINARY(GT) TESSERA_BINARY(GE) TESSERA_BINARY(And) TESSERA_BINARY(Or)
#undef TESSERA_BINARY
        case IRNodeType::Not: return visit(e.as<Not>()->a);
        case IRNodeType::Select: {
            const auto *op = e.as<Select>();
            visit(op->condition);
            visit(op->true_value);
            visit(op->false_value);
            return;
        }
        case IRNodeType::Let: {
            const auto *op = e.as<Let>();
            visit(op->value);
            IntervalScope &scope = bounds_.scope();
            auto saved = scope.find(op->name) != scope.end() ? std::optional<Interval>(scope[op->name]) : std::nullopt;
            scope[op->name] = bounds_.of(op->value);
            visit(op->body);
            if (saved) scope[op->name] = *saved; else scope.erase(op->name);
            return;
        }
        case IRNodeType::Call: {
            const auto *op = e.as<Call>();
            for (const Expr &a : op->args) visit(a);
            if (op->call_type == CallType::Intrinsic) return;
            CallRegion region;
            region.call = e;
            region.name = op->name;
            region.call_type = op->call_type;
            for (const Expr &a : op->args) region.box.push_back(bounds_.of(a));
            regions.push_back(std::move(region));
            return;
        }
        case IRNodeType::Load: return visit(e.as<Load>()->index);
        default: throw InternalError("call_regions: not an expression node");
        }
    }

    std::vector<CallRegion> regions;

private:
    Bounds bounds_;
};

} // namespace

std::vector<CallRegion> call_regions(const Expr &e, const IntervalScope &scope) {
    CallCollector c(scope);
    c.visit(e);
    return std::move(c.regions);
}

std::map<std::string, Box> boxes_required(const Expr &e, const IntervalScope &scope) {
    std::map<std::string, Box> boxes;
    for (const CallRegion &r : call_regions(e, scope)) boxes[r.name] = box_union(boxes[r.name], r.box);
    return boxes;
}

} // namespace tessera
