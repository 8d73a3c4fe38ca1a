// The simplifier (Halide's Simplify, in small): bottom-up constant folding and algebraic
// identities on integer index arithmetic, with the bounds of enclosing loop and let variables
// used to decide min, max, comparisons and hence selects and if-branches. Integer folding
// wraps at the type's width and divides Euclidean, exactly as the evaluators compute, so a
// folded expression means what the original meant. Floats are not folded.
#include "tessera/simplify.h"

#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/interval.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera {

namespace internal {

bool is_no_op(const Stmt &s) {
    if (!s.defined()) return true;
    const Evaluate *e = s.as<Evaluate>();
    return e && is_const(e->value);
}

} // namespace internal

namespace {

using internal::is_no_op;

bool foldable(Type t) { return t.is_int() || (t.is_uint() && t.bits() <= 32) || t.is_bool(); }

int64_t wrap_to(Type t, int64_t v) {
    if (t.is_bool()) return v != 0;
    const int bits = t.bits();
    if (bits >= 64) return v;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (bits - 1)) & 1) u |= ~mask;
    return static_cast<int64_t>(u);
}

std::optional<int64_t> const_of(const Expr &e) {
    if (!e.defined() || !foldable(e.type())) return std::nullopt;
    return as_const_int(e);
}

Expr make_int(Type t, int64_t v) { return make_const(t, wrap_to(t, v)); }

int64_t euclid_div(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t q = a / b, r = a % b;
    if (r < 0) q = b > 0 ? q - 1 : q + 1;
    return q;
}
int64_t euclid_mod(int64_t a, int64_t b) {
    if (b == 0) return 0;
    int64_t r = a % b;
    if (r < 0) r += b > 0 ? b : -b;
    return r;
}


Stmt no_op() { return Evaluate::make(Expr(0)); }

class UsesVar : public IRVisitor {
public:
    explicit UsesVar(const std::string &n) : n_(n) {}
    using IRVisitor::visit;
    void visit(const Variable *v) override { found = found || v->name == n_; }
    bool found = false;

private:
    const std::string &n_;
};

bool uses_var(const Stmt &s, const std::string &n) {
    UsesVar u(n);
    s.accept(&u);
    return u.found;
}

class Simplifier : public IRMutator {
public:
    Simplifier() = default;
    explicit Simplifier(IntervalScope scope) : scope_(std::move(scope)) {}
    using IRMutator::mutate;

protected:
    using IRMutator::visit;

    // ---- bounds -------------------------------------------------------------------------
    std::optional<std::pair<int64_t, int64_t>> const_bounds(const Expr &e) {
        if (!e.defined() || !e.type().is_int()) return std::nullopt;
        if (auto c = const_of(e)) return std::make_pair(*c, *c);
        Interval i = bounds_of_expr(e, scope_);
        if (!i.is_constant()) return std::nullopt;
        return std::make_pair(i.const_min(), i.const_max());
    }


    // ---- linear forms -------------------------------------------------------------------
    /// An integer expression as sum(coefficient * term) + constant, with the lets of enclosing
    /// LetStmts expanded, so that terms shared through lets cancel: the index of a blocked
    /// storage dimension, ((jo * 128 + jr * 16 + ji) - jo * 128) / 16, is then seen to be jr.
    struct Linear {
        std::vector<std::pair<Expr, int64_t>> terms;
        int64_t constant = 0;
    };
    void linearize(const Expr &e, int64_t scale, Linear &out, int depth) {
        if (auto c = const_of(e)) {
            out.constant += scale * *c;
            return;
        }
        if (const Add *a = e.as<Add>()) {
            linearize(a->a, scale, out, depth);
            linearize(a->b, scale, out, depth);
            return;
        }
        if (const Sub *a = e.as<Sub>()) {
            linearize(a->a, scale, out, depth);
            linearize(a->b, -scale, out, depth);
            return;
        }
        if (const Mul *m = e.as<Mul>()) {
            if (auto c = const_of(m->b)) return linearize(m->a, scale * *c, out, depth);
            if (auto c = const_of(m->a)) return linearize(m->b, scale * *c, out, depth);
        }
        if (const Variable *v = e.as<Variable>(); v && depth < 8) {
            auto it = lets_.find(v->name);
            if (it != lets_.end() && it->second.type() == e.type()) return linearize(it->second, scale, out, depth + 1);
        }
        for (auto &[term, coeff] : out.terms)
            if (equal(term, e)) {
                coeff += scale;
                return;
            }
        out.terms.emplace_back(e, scale);
    }
    std::optional<Linear> linear_form(const Expr &e) {
        if (!e.defined() || e.type() != Int(32)) return std::nullopt;
        Linear l;
        linearize(e, 1, l, 0);
        return l;
    }
    Expr rebuild(Type t, const std::vector<std::pair<Expr, int64_t>> &terms, int64_t constant) {
        Expr r;
        for (const auto &[term, coeff] : terms) {
            if (coeff == 0) continue;
            Expr x = coeff == 1 ? term : Mul::make(term, make_int(t, coeff));
            r = r.defined() ? Add::make(r, x) : x;
        }
        if (!r.defined()) return make_int(t, constant);
        return constant == 0 ? r : Add::make(r, make_int(t, constant));
    }
    /// x / c and x % c (c > 0) when the terms of x whose coefficients are not multiples of c
    /// stay within one multiple of c: x = c q + r with r's range inside [m c, m c + c).
    std::optional<std::pair<Expr, Expr>> div_mod_by_bounds(const Expr &x, int64_t c) {
        auto l = linear_form(x);
        if (!l) return std::nullopt;
        std::vector<std::pair<Expr, int64_t>> quotient, rest;
        for (const auto &[term, coeff] : l->terms) {
            if (coeff == 0) continue;
            if (coeff % c == 0)
                quotient.emplace_back(term, coeff / c);
            else
                rest.emplace_back(term, coeff);
        }
        const Type t = x.type();
        Expr r = rebuild(t, rest, euclid_mod(l->constant, c));
        auto br = const_bounds(r);
        if (!br || euclid_div(br->first, c) != euclid_div(br->second, c)) return std::nullopt;
        const int64_t m = euclid_div(br->first, c);
        return std::make_pair(mutate(rebuild(t, quotient, euclid_div(l->constant, c) + m)),
                              mutate(m == 0 ? r : Sub::make(r, make_int(t, m * c))));
    }

    // ---- expressions --------------------------------------------------------------------
    Expr visit(const Add *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t)) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, *ca + *cb);
            if (cb && *cb == 0) return a;
            if (ca && *ca == 0) return b;
            if (ca) std::swap(a, b), std::swap(ca, cb);
            if (cb) {
                if (const Add *aa = a.as<Add>())
                    if (auto c1 = const_of(aa->b)) return mutate(Add::make(aa->a, make_int(t, *c1 + *cb)));
                if (const Sub *as = a.as<Sub>())
                    if (auto c1 = const_of(as->a)) return mutate(Sub::make(make_int(t, *c1 + *cb), as->b));
            }
            // (x - y) + y → x
            if (const Sub *as = a.as<Sub>(); as && equal(as->b, b)) return as->a;
            if (const Sub *bs = b.as<Sub>(); bs && equal(bs->b, a)) return bs->a;
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Add::make(a, b);
    }

    Expr visit(const Sub *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t)) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, *ca - *cb);
            if (cb && *cb == 0) return a;
            if (equal(a, b)) return make_int(t, 0);
            const Add *aa = a.as<Add>();
            const Add *ba = b.as<Add>();
            if (aa && equal(aa->a, b)) return aa->b;
            if (aa && equal(aa->b, b)) return aa->a;
            if (ba && equal(ba->a, a)) return mutate(Sub::make(make_int(t, 0), ba->b));
            // (x + z) - y → (x - y) + z when x - y cancels (z may be a constant or not).
            if (aa && !const_of(b)) {
                Expr d = mutate(Sub::make(aa->a, b));
                if (!d.as<Sub>()) return mutate(Add::make(d, aa->b));
            }
            // x - (y + c) → (x - y) - c when x - y cancels.
            if (ba && const_of(ba->b)) {
                Expr d = mutate(Sub::make(a, ba->a));
                if (!d.as<Sub>()) return mutate(Sub::make(d, ba->b));
            }
            if (aa && ba) {
                if (equal(aa->a, ba->a)) return mutate(Sub::make(aa->b, ba->b));
                if (equal(aa->b, ba->b)) return mutate(Sub::make(aa->a, ba->a));
            }
            // min(x + c, y) - x → min(c, y - x), and the like: keeps extents of clamped
            // regions (max - min + 1) free of the variable they shift with.
            auto shifted_by = [&](const Expr &e, const Expr &x) -> std::optional<Expr> {
                if (equal(e, x)) return make_int(t, 0);
                if (const Add *ea = e.as<Add>(); ea && equal(ea->a, x)) return ea->b;
                return std::nullopt;
            };
            if (const Min *am = a.as<Min>()) {
                if (auto d = shifted_by(am->a, b)) return mutate(Min::make(*d, Sub::make(am->b, b)));
                if (auto d = shifted_by(am->b, b)) return mutate(Min::make(Sub::make(am->a, b), *d));
            }
            if (const Max *am = a.as<Max>()) {
                if (auto d = shifted_by(am->a, b)) return mutate(Max::make(*d, Sub::make(am->b, b)));
                if (auto d = shifted_by(am->b, b)) return mutate(Max::make(Sub::make(am->a, b), *d));
            }
            if (cb && t.is_int()) return mutate(Add::make(a, make_int(t, -*cb)));
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Sub::make(a, b);
    }

    Expr visit(const Mul *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t)) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, *ca * *cb);
            if (ca) std::swap(a, b), std::swap(ca, cb);
            if (cb && *cb == 1) return a;
            if (cb && *cb == 0) return make_int(t, 0);
            if (cb)
                if (const Mul *am = a.as<Mul>())
                    if (auto c1 = const_of(am->b)) return Mul::make(am->a, make_int(t, *c1 * *cb));
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Mul::make(a, b);
    }

    Expr visit(const Div *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t) && !t.is_bool()) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, euclid_div(*ca, *cb));
            if (cb && *cb == 1) return a;
            if (ca && *ca == 0) return a;
            if (cb && *cb > 0) {
                if (const Mul *am = a.as<Mul>())
                    if (auto c1 = const_of(am->b); c1 && *c1 % *cb == 0) return mutate(Mul::make(am->a, make_int(t, *c1 / *cb)));
                // x / c when 0 <= x < c → 0 (from bounds)
                if (auto bnd = const_bounds(a); bnd && bnd->first >= 0 && bnd->second < *cb) return make_int(t, 0);
                if (auto qr = div_mod_by_bounds(a, *cb)) return qr->first;
            }
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Div::make(a, b);
    }

    Expr visit(const Mod *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t) && !t.is_bool()) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, euclid_mod(*ca, *cb));
            if (cb && *cb == 1) return make_int(t, 0);
            if (cb && *cb > 0) {
                if (const Mul *am = a.as<Mul>())
                    if (auto c1 = const_of(am->b); c1 && *c1 % *cb == 0) return make_int(t, 0);
                if (auto bnd = const_bounds(a); bnd && bnd->first >= 0 && bnd->second < *cb) return a;
                if (auto qr = div_mod_by_bounds(a, *cb)) return qr->second;
            }
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Mod::make(a, b);
    }

    template <typename Node> Expr min_max(const Node *op, const Expr &e, bool is_min) {
        Expr a = mutate(op->a), b = mutate(op->b);
        Type t = op->type;
        if (foldable(t)) {
            auto ca = const_of(a), cb = const_of(b);
            if (ca && cb) return make_int(t, is_min ? std::min(*ca, *cb) : std::max(*ca, *cb));
            if (equal(a, b)) return a;
            // Absorption: max(a, min(b, a)) → a, min(a, max(b, a)) → a.
            for (int side = 0; side < 2; ++side) {
                const Expr &self = side ? b : a, &other = side ? a : b;
                const Expr *oa = nullptr, *ob = nullptr;
                if (is_min) {
                    if (const Max *m = other.as<Max>()) oa = &m->a, ob = &m->b;
                } else {
                    if (const Min *m = other.as<Min>()) oa = &m->a, ob = &m->b;
                }
                if (oa && (equal(*oa, self) || equal(*ob, self))) return self;
            }
            // min(x + c1, x + c2) → x + min(c1, c2) (x alone counts as x + 0).
            auto split_const = [&](const Expr &e) -> std::pair<Expr, int64_t> {
                if (const Add *ea = e.as<Add>())
                    if (auto c = const_of(ea->b)) return {ea->a, *c};
                return {e, 0};
            };
            auto [xa, ka] = split_const(a);
            auto [xb, kb] = split_const(b);
            if (equal(xa, xb)) return (is_min ? ka <= kb : ka >= kb) ? a : b;
            // min(a, min(b, c)): if min(a, b) or min(a, c) folds to one operand, re-associate.
            for (int side = 0; side < 2; ++side) {
                const Expr &outer = side ? b : a, &nested = side ? a : b;
                const Node *n = nested.template as<Node>();
                if (!n) continue;
                for (int k = 0; k < 2; ++k) {
                    const Expr &m = k ? n->b : n->a, &rest = k ? n->a : n->b;
                    Expr folded = mutate(is_min ? Min::make(outer, m) : Max::make(outer, m));
                    if (!folded.template as<Node>())
                        return mutate(is_min ? Min::make(folded, rest) : Max::make(folded, rest));
                }
            }
            auto ba = const_bounds(a), bb = const_bounds(b);
            if (ba && bb) {
                if (ba->second <= bb->first) return is_min ? a : b;
                if (bb->second <= ba->first) return is_min ? b : a;
            }
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return is_min ? Min::make(a, b) : Max::make(a, b);
    }
    Expr visit(const Min *op, const Expr &e) override { return min_max(op, e, true); }
    Expr visit(const Max *op, const Expr &e) override { return min_max(op, e, false); }

    // Comparisons: decided when the operand bounds do not overlap.
    template <typename Node> Expr compare(const Node *op, const Expr &e, int kind) {
        Expr a = mutate(op->a), b = mutate(op->b);
        if (foldable(a.type())) {
            auto ba = const_bounds(a), bb = const_bounds(b);
            if (!ba) {
                if (auto c = const_of(a)) ba = std::make_pair(*c, *c);
            }
            if (!bb) {
                if (auto c = const_of(b)) bb = std::make_pair(*c, *c);
            }
            if (ba && bb) {
                auto [amin, amax] = *ba;
                auto [bmin, bmax] = *bb;
                std::optional<bool> r;
                switch (kind) {
                case 0: if (amin == amax && bmin == bmax) r = amin == bmin; else if (amax < bmin || bmax < amin) r = false; break;
                case 1: if (amin == amax && bmin == bmax) r = amin != bmin; else if (amax < bmin || bmax < amin) r = true; break;
                case 2: if (amax < bmin) r = true; else if (amin >= bmax) r = false; break;
                case 3: if (amax <= bmin) r = true; else if (amin > bmax) r = false; break;
                case 4: if (amin > bmax) r = true; else if (amax <= bmin) r = false; break;
                case 5: if (amin >= bmax) r = true; else if (amax < bmin) r = false; break;
                }
                if (r) return make_const(Bool(), static_cast<int64_t>(*r));
            }
            // Decide by the sign of the difference, which cancels shared symbolic terms
            // (x.min + xo * 4 + xi < x.min + 8).
            if (a.type().is_int() && kind >= 2) {
                auto decide = [&](std::optional<std::pair<int64_t, int64_t>> bd) -> std::optional<bool> {
                    if (!bd) return std::nullopt;
                    auto [dmin, dmax] = *bd;
                    switch (kind) {
                    case 2: if (dmax < 0) return true; if (dmin >= 0) return false; break;
                    case 3: if (dmax <= 0) return true; if (dmin > 0) return false; break;
                    case 4: if (dmin > 0) return true; if (dmax <= 0) return false; break;
                    case 5: if (dmin >= 0) return true; if (dmax < 0) return false; break;
                    }
                    return std::nullopt;
                };
                // The linear form first: terms shared through lets cancel exactly.
                std::optional<bool> r;
                if (auto l = linear_form(Sub::make(a, b))) r = decide(const_bounds(rebuild(a.type(), l->terms, l->constant)));
                if (!r && (!ba || !bb)) {
                    Expr da = a, db = b;
                    for (int depth = 0; depth < 4; ++depth) { // lets defined from lets
                        da = internal::substitute(lets_, da);
                        db = internal::substitute(lets_, db);
                    }
                    r = decide(const_bounds(mutate(Sub::make(da, db))));
                }
                if (r) return make_const(Bool(), static_cast<int64_t>(*r));
            }
        }
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Node::make(a, b);
    }
    Expr visit(const EQ *op, const Expr &e) override { return compare(op, e, 0); }
    Expr visit(const NE *op, const Expr &e) override { return compare(op, e, 1); }
    Expr visit(const LT *op, const Expr &e) override { return compare(op, e, 2); }
    Expr visit(const LE *op, const Expr &e) override { return compare(op, e, 3); }
    Expr visit(const GT *op, const Expr &e) override { return compare(op, e, 4); }
    Expr visit(const GE *op, const Expr &e) override { return compare(op, e, 5); }

    Expr visit(const And *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        auto ca = const_of(a), cb = const_of(b);
        if (ca) return *ca ? b : a;
        if (cb) return *cb ? a : b;
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return And::make(a, b);
    }
    Expr visit(const Or *op, const Expr &e) override {
        Expr a = mutate(op->a), b = mutate(op->b);
        auto ca = const_of(a), cb = const_of(b);
        if (ca) return *ca ? a : b;
        if (cb) return *cb ? b : a;
        if (a.same_as(op->a) && b.same_as(op->b)) return e;
        return Or::make(a, b);
    }
    Expr visit(const Not *op, const Expr &e) override {
        Expr a = mutate(op->a);
        if (auto c = const_of(a)) return make_const(Bool(), static_cast<int64_t>(!*c));
        if (a.same_as(op->a)) return e;
        return Not::make(a);
    }
    Expr visit(const Select *op, const Expr &e) override {
        Expr c = mutate(op->condition);
        if (auto cc = const_of(c)) return mutate(*cc ? op->true_value : op->false_value);
        Expr t = mutate(op->true_value), f = mutate(op->false_value);
        if (equal(t, f)) return t;
        if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
        return Select::make(c, t, f);
    }
    Expr visit(const Cast *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (foldable(op->type) && !op->type.is_bool())
            if (auto c = const_of(v)) return make_int(op->type, *c);
        if (v.type() == op->type) return v;
        if (v.same_as(op->value)) return e;
        return Cast::make(op->type, v);
    }
    Expr visit(const Let *op, const Expr &e) override {
        Expr v = mutate(op->value);
        if (is_const(v) || v.as<Variable>()) return mutate(internal::substitute({{op->name, v}}, op->body));
        Expr body = internal::with_binding(scope_, op->name, bounds_of_expr(v, scope_), [&] { return mutate(op->body); });
        if (v.same_as(op->value) && body.same_as(op->body)) return e;
        return Let::make(op->name, v, body);
    }

    // ---- statements ---------------------------------------------------------------------
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Expr v = mutate(op->value);
        if (is_const(v) || v.as<Variable>()) return mutate(internal::substitute({{op->name, v}}, op->body));
        const bool had = lets_.count(op->name) > 0;
        Expr saved = had ? lets_[op->name] : Expr();
        lets_[op->name] = v;
        Stmt body = internal::with_binding(scope_, op->name, bounds_of_expr(v, scope_), [&] { return mutate(op->body); });
        if (had)
            lets_[op->name] = saved;
        else
            lets_.erase(op->name);
        if (!uses_var(body, op->name)) return body;
        if (v.same_as(op->value) && body.same_as(op->body)) return s;
        return LetStmt::make(op->name, v, body);
    }

    Stmt visit(const For *op, const Stmt &s) override {
        Expr mn = mutate(op->min), ext = mutate(op->extent);
        if (auto c = const_of(ext)) {
            if (*c <= 0) return no_op();
            if (*c == 1) return mutate(internal::substitute({{op->name, mn}}, op->body));
        }
        Interval lo = bounds_of_expr(mn, scope_), hi = bounds_of_expr(mn + ext - 1, scope_);
        Stmt body = internal::with_binding(scope_, op->name, Interval(lo.min, hi.max), [&] { return mutate(op->body); });
        if (is_no_op(body)) return no_op();
        if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return s;
        return For::make(op->name, mn, ext, op->kind, body);
    }

    Stmt visit(const IfThenElse *op, const Stmt &s) override {
        Expr c = mutate(op->condition);
        if (auto cc = const_of(c)) {
            if (*cc) return mutate(op->then_case);
            return op->else_case.defined() ? mutate(op->else_case) : no_op();
        }
        Stmt t = mutate(op->then_case);
        Stmt f = op->else_case.defined() ? mutate(op->else_case) : Stmt();
        if (f.defined() && is_no_op(f)) f = Stmt();
        if (is_no_op(t) && !f.defined()) return no_op();
        if (c.same_as(op->condition) && t.same_as(op->then_case) && f.same_as(op->else_case)) return s;
        return IfThenElse::make(c, t, f);
    }

    Stmt visit(const Block *op, const Stmt &s) override {
        Stmt a = mutate(op->first), b = mutate(op->rest);
        if (is_no_op(a)) return b;
        if (is_no_op(b)) return a;
        if (a.same_as(op->first) && b.same_as(op->rest)) return s;
        return Block::make(a, b);
    }

private:
    IntervalScope scope_;
    /// Values of the enclosing integer lets, to compare a let variable with its definition.
    std::map<std::string, Expr> lets_;
};

} // namespace

Expr simplify(const Expr &e) {
    Simplifier s;
    return s.mutate(e);
}

Stmt simplify(const Stmt &st) {
    Simplifier s;
    return s.mutate(st);
}

namespace internal {
Expr simplify_with_bounds(const Expr &e, const IntervalScope &scope) {
    Simplifier s(scope);
    return s.mutate(e);
}
Stmt simplify_with_bounds(const Stmt &st, const IntervalScope &scope) {
    Simplifier s(scope);
    return s.mutate(st);
}
} // namespace internal

} // namespace tessera
