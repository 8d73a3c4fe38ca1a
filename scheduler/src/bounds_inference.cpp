// Bounds inference: which region of a Func a piece of the loop nest touches, by interval
// arithmetic (interval.h) over the index expressions, with symbolic bounds. Walking a
// statement, every loop and let inside it ranges over its bounds (computed in the scope of the
// loops around it), while variables bound outside stay symbolic — so the region a consumer
// needs inside a loop level comes out in terms of the loops outside that level, which is what
// compute_at needs. An if-condition `v < e` (the guard of a split's tail) narrows v's range in
// its then-branch, so a guarded tail does not inflate the producer's region.
#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

class RegionTouched : public IRVisitor {
public:
    RegionTouched(const std::string &name, bool provides, bool calls, const IntervalScope &known,
                  const IntervalScope &hints)
        : name_(name), provides_(provides), calls_(calls), scope_(known), hints_(hints) {}

    Box box;
    bool touched = false;

    using IRVisitor::visit;

    void visit(const For *op) override {
        include_expr(op->min);
        include_expr(op->extent);
        Interval lo = bounds_of_expr(simplify_with_bounds(op->min, scope_), scope_);
        Interval hi = bounds_of_expr(simplify_with_bounds(op->min + op->extent - 1, scope_), scope_);
        internal::with_binding(scope_, op->name, with_hint(op->name, Interval(lo.min, hi.max)), [&] { include(op->body); });
    }
    void visit(const LetStmt *op) override {
        include_expr(op->value);
        // Simplified first, so that correlated terms cancel (min(x + 4, 8) - x → min(4, 8 - x)).
        Interval i = bounds_of_expr(simplify_with_bounds(op->value, scope_), scope_);
        internal::with_binding(scope_, op->name, with_hint(op->name, i), [&] { include(op->body); });
    }
    void visit(const IfThenElse *op) override {
        include_expr(op->condition);
        IntervalScope saved = scope_;
        narrow(op->condition);
        include(op->then_case);
        scope_ = saved;
        include(op->else_case);
    }
    void visit(const Provide *op) override {
        include_expr(op->value);
        for (const auto &a : op->args) include_expr(a);
        if (provides_ && op->name == name_) {
            Box b;
            for (const auto &a : op->args) b.push_back(bounds_of_expr(a, scope_));
            add(b);
        }
    }
    void visit(const Store *op) override {
        include_expr(op->value);
        include_expr(op->index);
    }
    void visit(const Evaluate *op) override { include_expr(op->value); }
    void visit(const ProducerConsumer *op) override {
        // A Func's reads of itself (in its updates) are not demands on its region from outside.
        if (calls_ && !provides_ && op->is_producer && op->name == name_) return;
        include(op->body);
    }
    void visit(const Realize *op) override {
        for (const auto &r : op->bounds) {
            include_expr(r.min);
            include_expr(r.extent);
        }
        include(op->body);
    }
    void visit(const Allocate *op) override {
        for (const auto &e : op->extents) include_expr(e);
        include(op->body);
    }

private:
    // Narrows a computed range by what holds by construction (LoweredFunc::defined_ranges);
    // the hint is in terms of region variables, which may themselves be in scope.
    Interval with_hint(const std::string &name, Interval i) {
        auto h = hints_.find(name);
        if (h == hints_.end()) return i;
        Interval lo = bounds_of_expr(h->second.min, scope_), hi = bounds_of_expr(h->second.max, scope_);
        Interval hint(lo.min, hi.max);
        // What consumers read is narrowed (computing points nobody reads could read an Input
        // out of bounds); a producer's storage only takes the hint where it is unbounded
        // otherwise, since narrowing it makes its size harder to bound by a constant.
        if (provides_) {
            if (!i.has_lower_bound()) i.min = hint.min;
            if (!i.has_upper_bound()) i.max = hint.max;
            return i;
        }
        if (!i.has_lower_bound()) i.min = hint.min;
        else if (hint.has_lower_bound()) i.min = simplify_with_bounds(max(i.min, hint.min), scope_);
        if (!i.has_upper_bound()) i.max = hint.max;
        else if (hint.has_upper_bound()) i.max = simplify_with_bounds(min(i.max, hint.max), scope_);
        return i;
    }

    void add(const Box &b) {
        box = touched ? box_union(box, b) : b;
        touched = true;
    }

    void include_expr(const Expr &e) {
        if (!calls_ || !e.defined() || !calls_func(e, name_)) return;
        for (const auto &cr : call_regions(e, scope_))
            if (cr.call_type == CallType::Func && cr.name == name_) add(cr.box);
    }


    // Narrows the range of a variable in scope by a condition on it (conjunctions of v < e,
    // v <= e, v > e, v >= e and the mirrored forms).
    void narrow(const Expr &c) {
        if (const auto *a = c.as<And>()) {
            narrow(a->a);
            narrow(a->b);
            return;
        }
        auto apply = [&](const Expr &var, const Expr &bound, bool upper, int64_t adjust) {
            const auto *v = var.as<Variable>();
            if (!v) return;
            auto it = scope_.find(v->name);
            if (it == scope_.end()) return;
            Interval b = bounds_of_expr(bound, scope_);
            Interval limit = upper ? Interval(Expr(), b.max.defined() ? b.max + static_cast<int>(adjust) : Expr())
                                   : Interval(b.min.defined() ? b.min + static_cast<int>(adjust) : Expr(), Expr());
            it->second = interval_intersection(it->second, limit);
        };
        if (const auto *o = c.as<LT>()) {
            apply(o->a, o->b, true, -1);
            apply(o->b, o->a, false, 1);
        } else if (const auto *o = c.as<LE>()) {
            apply(o->a, o->b, true, 0);
            apply(o->b, o->a, false, 0);
        } else if (const auto *o = c.as<GT>()) {
            apply(o->a, o->b, false, 1);
            apply(o->b, o->a, true, -1);
        } else if (const auto *o = c.as<GE>()) {
            apply(o->a, o->b, false, 0);
            apply(o->b, o->a, true, 0);
        }
    }

    const std::string &name_;
    bool provides_, calls_;
    IntervalScope scope_;
    const IntervalScope &hints_;
};

} // namespace

Box region_touched(const Stmt &s, const std::string &name, bool provides, bool calls, const IntervalScope &known,
                   const IntervalScope &hints) {
    RegionTouched r(name, provides, calls, known, hints);
    if (s.defined()) s.accept(&r);
    return r.touched ? r.box : Box{};
}

Box func_compute_region(const LoweredFunc &f, const Box &required) {
    const FunctionContents &fc = f.contents;
    Box region = required;
    for (int s = 1; s < fc.num_stages(); ++s) {
        const Definition &d = fc.stage(s);
        IntervalScope scope;
        for (size_t i = 0; i < fc.args.size() && i < required.size(); ++i) scope[fc.args[i]] = required[i];
        if (d.rdom)
            for (const auto &rv : d.rdom->vars) {
                Interval lo = bounds_of_expr(rv.min, scope), hi = bounds_of_expr(rv.min + rv.extent - 1, scope);
                scope[rv.name] = Interval(lo.min, hi.max);
            }
        Box written;
        for (const auto &a : d.args) written.push_back(bounds_of_expr(a, scope));
        region = box_union(region, written);
        for (const auto &e : definition_exprs(d))
            for (const auto &cr : call_regions(e, scope))
                if (cr.call_type == CallType::Func && cr.name == fc.name) region = box_union(region, cr.box);
    }
    return region;
}

} // namespace tessera::internal
