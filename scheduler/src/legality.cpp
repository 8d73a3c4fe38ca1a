// Legality of loop directives that depend on the definition (the record-time checks in
// func_schedule.cpp cover names and factors):
// - reduction loops keep their relative order (including the order of the pieces a split
//   makes), unless the update is recognised as associative and commutative — f(args) op e with
//   op one of +, *, min, max and e not reading f — in which case any order gives the same
//   result (up to float reassociation, which the user asked for);
// - parallel or vectorize over a reduction loop races unless different iterations write
//   different points: accepted only when the reduction variable is itself a coordinate of the
//   update's left-hand side and the update reads itself only at that point;
// - after lowering, vectorized and unrolled loops (and loops a unit is tensorized onto) have
//   constant extents.
#include <algorithm>
#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

/// Whether e is a call to f at exactly `args`.
bool is_self_call_at(const Expr &e, const std::string &f, const std::vector<Expr> &args) {
    const Call *c = e.as<Call>();
    if (!c || c->call_type != CallType::Func || c->name != f || c->args.size() != args.size()) return false;
    for (size_t i = 0; i < args.size(); ++i)
        if (!equal(c->args[i], args[i])) return false;
    return true;
}

bool is_associative_commutative(const FunctionContents &fc, int s) {
    const Definition &d = fc.stage(s);
    const Expr &v = d.value;
    auto check = [&](const Expr &a, const Expr &b) {
        return (is_self_call_at(a, fc.name, d.args) && !calls_func(b, fc.name)) ||
               (is_self_call_at(b, fc.name, d.args) && !calls_func(a, fc.name));
    };
    if (const auto *o = v.as<Add>()) return check(o->a, o->b);
    if (const auto *o = v.as<Mul>()) return check(o->a, o->b);
    if (const auto *o = v.as<Min>()) return check(o->a, o->b);
    if (const auto *o = v.as<Max>()) return check(o->a, o->b);
    return false;
}

/// Every self-call of the update is at its own left-hand side.
class SelfCallsOnlyAt : public IRVisitor {
public:
    SelfCallsOnlyAt(const std::string &f, const std::vector<Expr> &args) : f_(f), args_(args) {}
    using IRVisitor::visit;
    void visit(const Call *c) override {
        if (c->call_type == CallType::Func && c->name == f_) {
            bool same = c->args.size() == args_.size();
            for (size_t i = 0; same && i < args_.size(); ++i) same = equal(c->args[i], args_[i]);
            ok = ok && same;
        }
        IRVisitor::visit(c);
    }
    bool ok = true;

private:
    const std::string &f_;
    const std::vector<Expr> &args_;
};

bool writes_distinct_points_over(const FunctionContents &fc, int s, const std::string &rvar) {
    const Definition &d = fc.stage(s);
    bool coordinate = false;
    for (const auto &a : d.args)
        if (const auto *v = a.as<Variable>(); v && v->name == rvar) coordinate = true;
    if (!coordinate) return false;
    SelfCallsOnlyAt self(fc.name, d.args);
    d.value.accept(&self);
    return self.ok;
}

struct KeyedLoop {
    std::string name;
    bool is_reduction;
    std::vector<int> key;   ///< order of iteration over the reduction domain
    std::string origin;     ///< the RVar this loop comes from
};

} // namespace

void check_stage_legality(const LoweredFunc &f, int s) {
    const FunctionContents &fc = f.contents;
    if (s == 0) return; // pure definitions: every order, split and kind is legal
    const std::string prefix = schedule_error_prefix(fc.name, s);
    StageLoopNames initial = initial_loop_names(fc, s);
    std::vector<KeyedLoop> loops;
    int rank = 0;
    for (size_t i = 0; i < initial.loops.size(); ++i)
        loops.push_back({initial.loops[i], initial.is_reduction[i],
                         initial.is_reduction[i] ? std::vector<int>{rank++} : std::vector<int>{}, initial.loops[i]});
    const bool assoc = is_associative_commutative(fc, s);
    auto find = [&](const std::string &n) {
        for (size_t i = 0; i < loops.size(); ++i)
            if (loops[i].name == n) return static_cast<int>(i);
        return -1;
    };
    auto split = [&](const std::string &old, const std::string &outer, const std::string &inner) {
        int i = find(old);
        if (i < 0) return;
        KeyedLoop o = loops[static_cast<size_t>(i)], in = o;
        o.name = outer;
        in.name = inner;
        if (o.is_reduction) {
            o.key.push_back(0);
            in.key.push_back(1);
        }
        loops[static_cast<size_t>(i)] = o;
        loops.insert(loops.begin() + i + 1, in);
    };
    auto reorder = [&](const std::vector<std::string> &vars) {
        std::vector<int> slots;
        for (const auto &v : vars) slots.push_back(find(v));
        if (std::find(slots.begin(), slots.end(), -1) != slots.end()) return;
        std::vector<int> sorted = slots;
        std::sort(sorted.begin(), sorted.end());
        auto old = loops;
        for (size_t j = 0; j < sorted.size(); ++j) loops[static_cast<size_t>(sorted[j])] = old[static_cast<size_t>(slots[j])];
    };
    auto reduction_order_kept = [&]() {
        const std::vector<int> *prev = nullptr;
        for (const auto &l : loops) {
            if (!l.is_reduction) continue;
            if (prev && !(*prev < l.key)) return false;
            prev = &l.key;
        }
        return true;
    };
    auto reduction_loops = [&]() {
        std::vector<std::string> r;
        for (const auto &l : loops)
            if (l.is_reduction) r.push_back(l.name);
        return join_names(r);
    };
    auto check_kind = [&](const Directive &d, const std::string &v) {
        int i = find(v);
        if (i < 0 || !loops[static_cast<size_t>(i)].is_reduction) return;
        if (!writes_distinct_points_over(fc, s, loops[static_cast<size_t>(i)].origin))
            throw Error(prefix + d.to_string() + ": " + v + " is a reduction loop; running its iterations " +
                        (d.kind == DirectiveKind::Parallel ? "in parallel" : "as vector lanes") +
                        " would race on the same point of " + fc.name +
                        ". Parallelize or vectorize a pure loop instead (or split the reduction with rfactor-style "
                        "intermediate Funcs)");
    };
    for (const auto &d : fc.schedule.stage(s)) {
        std::string before = reduction_loops();
        switch (d.kind) {
        case DirectiveKind::Split:
            split(d.vars[0], d.vars[1], d.vars[2]);
            break;
        case DirectiveKind::Tile: {
            size_t k = d.factors.size();
            for (size_t j = 0; j < k; ++j) split(d.vars[j], d.vars[k + j], d.vars[2 * k + j]);
            std::vector<std::string> order;
            for (size_t j = 0; j < k; ++j) order.push_back(d.vars[k + j]);
            for (size_t j = 0; j < k; ++j) order.push_back(d.vars[2 * k + j]);
            reorder(order);
            break;
        }
        case DirectiveKind::Fuse: {
            int a = find(d.vars[0]), b = find(d.vars[1]);
            if (a < 0 || b < 0) break;
            int outer = std::min(a, b);
            KeyedLoop fused = loops[static_cast<size_t>(outer)];
            fused.name = d.vars[2];
            loops[static_cast<size_t>(outer)] = fused;
            loops.erase(loops.begin() + outer + 1);
            break;
        }
        case DirectiveKind::Reorder:
            reorder(d.vars);
            break;
        case DirectiveKind::Vectorize:
        case DirectiveKind::Parallel:
            if (d.kind == DirectiveKind::Vectorize && !d.factors.empty()) {
                split(d.vars[0], d.vars[0], d.vars[0] + ".v");
                check_kind(d, d.vars[0] + ".v");
            } else {
                check_kind(d, d.vars[0]);
            }
            break;
        case DirectiveKind::Unroll:
            if (!d.factors.empty()) split(d.vars[0], d.vars[0], d.vars[0] + ".u");
            break;
        default:
            break;
        }
        if (!assoc && !reduction_order_kept())
            throw Error(prefix + d.to_string() + ": changes the order of the reduction loops (" + before + " → " +
                        reduction_loops() + "). The update " + fc.name + " = " + to_string(fc.stage(s).value) +
                        " is not recognised as associative and commutative (f = f + e, f * e, min(f, e), max(f, e)), "
                        "so its reduction loops must keep their relative order; reorder pure loops freely");
    }
}

namespace {

class CheckLoops : public IRVisitor {
public:
    explicit CheckLoops(const LoweringEnv &env) : env_(env) {}
    using IRVisitor::visit;
    void visit(const For *op) override {
        if ((op->kind == ForKind::Vectorized || op->kind == ForKind::Unrolled) && !as_const_int(op->extent)) {
            std::string where = "schedule: ";
            const LoopDim *ld = find(op->name, &where);
            throw Error(where + (ld ? ld->kind_directive : for_kind_name(op->kind)) + ": loop " +
                        (ld ? ld->name : op->name) + " has extent " + to_string(op->extent) +
                        ", which is not a constant; a vectorized or unrolled loop needs a constant extent — pass a "
                        "factor (vectorize(x, 8)) or split by a constant first");
        }
        if (auto c = as_const_int(op->extent)) const_extent[op->name] = *c;
        IRVisitor::visit(op);
    }
    /// The loop of a stage with this IR name; sets `where` to "schedule of <stage>: ".
    const LoopDim *find(const std::string &ir, std::string *where) const {
        for (const auto &[n, f] : env_.funcs)
            for (size_t st = 0; st < f.stage_loops.size(); ++st)
                for (const auto &l : f.stage_loops[st])
                    if (l.ir_name == ir) {
                        *where = schedule_error_prefix(n, static_cast<int>(st));
                        return &l;
                    }
        return nullptr;
    }
    std::map<std::string, int64_t> const_extent;

private:
    const LoweringEnv &env_;
};

} // namespace

void check_lowered_legality(const Stmt &s, const LoweringEnv &env) {
    CheckLoops c(env);
    s.accept(&c);
    for (const auto &name : env.order) {
        const LoweredFunc &f = env.at(name);
        for (int st = 0; st < f.contents.num_stages(); ++st)
            for (const auto &d : f.contents.schedule.stage(st)) {
                if (d.kind != DirectiveKind::Tensorize) continue;
                for (const auto &v : d.vars) {
                    const auto &loops = f.stage_loops[static_cast<size_t>(st)];
                    auto it = std::find_if(loops.begin(), loops.end(), [&](const LoopDim &l) { return l.name == v; });
                    if (it == loops.end()) continue;
                    if (!c.const_extent.count(it->ir_name))
                        throw Error(schedule_error_prefix(name, st) + d.to_string() + ": loop " + v +
                                    " does not have a constant extent; a unit computes a fixed-shape tile — split "
                                    "the loops by the unit's shape first");
                }
            }
    }
}

} // namespace tessera::internal
