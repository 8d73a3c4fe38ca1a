// The VXM expansions of math it has no instruction for (vxm_expansions.h).
#include "vxm_expansions.h"

#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"

#include <utility>
#include <vector>

namespace tessera::internal::chip {

namespace {

Expr f32(float v) { return make_const(Float(32), double(v)); }

/// erf on fp32 values (A&S 7.1.26): 1 - (a1 t + ... + a5 t^5) e^(-x^2), t = 1 / (1 + p|x|).
Expr erf_f32(const Expr &x) {
    const Expr ax = max(x, x * f32(-1.0f));
    const Expr t = f32(1.0f) / (ax * f32(0.3275911f) + f32(1.0f));
    Expr poly = f32(1.061405429f);
    for (float a : {-1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f}) poly = poly * t + f32(a);
    poly = poly * t;
    const Expr magnitude = f32(1.0f) - poly * exp(ax * ax * f32(-1.0f));
    return select(x < f32(0.0f), magnitude * f32(-1.0f), magnitude);
}

/// log on positive fp32 values: s = x^(1/256) by square roots; log s = 2 atanh((s-1)/(s+1))
/// by four terms of its series; y = 256 log s, then y += 2 (x - e^y) / (x + e^y) twice
/// (Halley's method, cubic: the series' 1e-4 becomes fp32 rounding).
Expr log_f32(const Expr &x) {
    Expr s = x;
    for (int k = 0; k < 8; ++k) s = sqrt(s);
    const Expr t = (s - f32(1.0f)) / (s + f32(1.0f));
    const Expr t2 = t * t;
    Expr y = t * (f32(1.0f) + t2 * (f32(1.0f / 3) + t2 * (f32(1.0f / 5) + t2 * f32(1.0f / 7)))) * f32(512.0f);
    for (int k = 0; k < 2; ++k) {
        const Expr e = exp(y);
        y = y + f32(2.0f) * (x - e) / (x + e);
    }
    return y;
}

/// floor and ceil from round (the VXM's conversion to int32 and back, round-half-even).
Expr floor_f32(const Expr &x) {
    const Expr r = round(x);
    return r - select(r > x, f32(1.0f), f32(0.0f));
}
Expr ceil_f32(const Expr &x) {
    const Expr r = round(x);
    return r + select(x > r, f32(1.0f), f32(0.0f));
}

class Expand : public IRMutator {
public:
    using IRMutator::visit;
    /// A float converted to an integer truncates toward zero: made integral first, so the
    /// VXM's round-to-nearest conversion is exact.
    Expr visit(const Cast *op, const Expr &e) override {
        Expr value = mutate(op->value);
        if (!(op->type.is_int() || op->type.is_uint()) || !value.type().is_float()) return cast(op->type, value);
        // A clamp to integral constants commutes with truncation; it stays outermost, where the
        // chip compiler sees that the narrowing is safe.
        std::vector<std::pair<bool, Expr>> clamps; // (is min, bound)
        Expr x = value;
        while (true) {
            const Min *mn = x.as<Min>();
            const Max *mx = x.as<Max>();
            if (mn && as_const_float(mn->b)) clamps.emplace_back(true, mn->b), x = mn->a;
            else if (mx && as_const_float(mx->b)) clamps.emplace_back(false, mx->b), x = mx->a;
            else break;
        }
        if (x.type() != Float(32)) x = cast(Float(32), x);
        Expr t = select(x < f32(0.0f), ceil_f32(x), floor_f32(x));
        for (auto it = clamps.rbegin(); it != clamps.rend(); ++it) {
            const Expr bound = cast(Float(32), it->second);
            t = it->first ? min(t, bound) : max(t, bound);
        }
        return cast(op->type, t);
    }
    Expr visit(const Call *op, const Expr &e) override {
        Expr call = IRMutator::visit(op, e);
        const Call *c = call.as<Call>();
        if (c->call_type != CallType::Intrinsic || !c->type.is_float()) return call;
        auto in_f32 = [&](auto fn) {
            const Type t = c->type;
            Expr r = fn(t == Float(32) ? c->args[0] : cast(Float(32), c->args[0]));
            return t == Float(32) ? r : cast(t, r);
        };
        switch (c->intrinsic) {
        case Intrinsic::Erf: return in_f32(erf_f32);
        case Intrinsic::Log: return in_f32(log_f32);
        case Intrinsic::Abs: return max(c->args[0], c->args[0] * make_const(c->type, -1.0));
        case Intrinsic::Floor: return in_f32(floor_f32);
        case Intrinsic::Ceil: return in_f32(ceil_f32);
        case Intrinsic::Pow: {
            const Type t = c->type;
            auto to32 = [&](const Expr &v) { return t == Float(32) ? v : cast(Float(32), v); };
            const Expr r = exp(to32(c->args[1]) * log_f32(to32(c->args[0])));
            return t == Float(32) ? r : cast(t, r);
        }
        default: return call;
        }
    }
};

} // namespace

Expr expand_for_vxm(const Expr &e) { return Expand().mutate(e); }

} // namespace tessera::internal::chip
