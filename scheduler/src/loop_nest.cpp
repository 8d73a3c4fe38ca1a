// Loop construction: the loop nest of each stage of a Func, from its loop directives (split,
// fuse, reorder, tile, vectorize, unroll, parallel), as in Halide's ScheduleFunctions.
//
// Each stage's loops start as its pure variables, ranging over the Func's region (the
// variables <F>.<x>.min / <F>.<x>.extent that bounds inference defines where the Func is
// computed), and its reduction variables, ranging over the RDom. A split makes two zero-based
// loops and defines the old variable from them; a fuse makes one loop and defines both old
// ones. Those definitions become lets just inside the innermost loop (the latest split
// outermost, as it defines what earlier ones read), then tail guards and the RDom predicate,
// then the Provide.
#include <algorithm>
#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

namespace tessera::internal {

namespace {

struct VarDefinition {
    std::string ir_name;
    Expr value;
};

struct StageBuilder {
    LoweredFunc &f;
    int stage;
    std::string prefix;   // "C.s1."
    std::string err;      // "schedule of C.update(0): "
    std::vector<LoopDim> dims;
    std::vector<std::vector<VarDefinition>> definitions; // per split/fuse, in order
    std::vector<Expr> guards;                            // per definition; undefined if none
    std::set<std::string> used_ir_names;

    StageBuilder(LoweredFunc &f, int s)
        : f(f), stage(s), prefix(f.name() + ".s" + std::to_string(s) + "."), err(schedule_error_prefix(f.name(), s)) {}

    std::string fresh_ir_name(const std::string &user) {
        // A split may reuse the old loop's name for its outer loop (split(x, x, xi, 8)); the IR
        // keeps the old variable's name for the let that defines it, so the loop gets ".o".
        std::string base = prefix + user, n = base;
        for (int i = 1; used_ir_names.count(n); ++i) n = base + std::string(static_cast<size_t>(i), 'o').insert(0, ".");
        used_ir_names.insert(n);
        return n;
    }

    int find(const std::string &name, const Directive &d) const {
        for (size_t i = 0; i < dims.size(); ++i)
            if (dims[i].name == name) return static_cast<int>(i);
        // replay_loop_names already rejected unknown names; this is a bug if reached.
        throw InternalError(err + d.to_string() + ": loop " + name + " not found");
    }

    static Expr ceil_div(const Expr &a, int64_t f) { return (a + static_cast<int>(f - 1)) / static_cast<int>(f); }

    TailStrategy resolve_tail(TailStrategy t) const {
        if (t != TailStrategy::Auto) return t;
        return stage == 0 ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf;
    }

    void split(const Directive &d, const std::string &old, const std::string &outer, const std::string &inner,
               int64_t factor, TailStrategy requested) {
        int i = find(old, d);
        LoopDim od = dims[static_cast<size_t>(i)];
        TailStrategy tail = resolve_tail(requested);
        const auto const_extent = as_const_int(od.extent);
        const bool divides = const_extent && *const_extent % factor == 0;
        if (od.is_reduction && !divides && (tail == TailStrategy::ShiftInwards || tail == TailStrategy::RoundUp))
            throw Error(err + d.to_string() + ": " + tail_strategy_name(tail) + " on the reduction loop " + old +
                        " would " + (tail == TailStrategy::RoundUp ? "reduce over points outside the RDom"
                                                                    : "reduce some points twice") +
                        "; use guard_with_if");
        if (stage > 0 && !divides && tail == TailStrategy::ShiftInwards)
            throw Error(err + d.to_string() + ": shift_inwards recomputes points, which an update definition "
                                              "cannot do (it would apply the update twice); use guard_with_if or round_up");
        if (!divides && tail == TailStrategy::RoundUp) f.defined_ranges.erase(od.ir_name); // it runs past the end
        if (f.is_output && !divides && tail == TailStrategy::RoundUp)
            throw Error(err + d.to_string() + ": round_up would write past the end of the output " + f.name() +
                        " unless its extent (" + to_string(od.extent) + ") is a multiple of " +
                        std::to_string(factor) + "; use guard_with_if or shift_inwards");
        LoopDim o, in;
        o.name = outer;
        o.ir_name = fresh_ir_name(outer);
        o.is_reduction = od.is_reduction;
        o.min = Expr(0);
        o.extent = ceil_div(od.extent, factor);
        in.name = inner;
        in.ir_name = fresh_ir_name(inner);
        in.is_reduction = od.is_reduction;
        in.min = Expr(0);
        in.extent = Expr(static_cast<int>(factor));
        Expr ov = loop_var(o.ir_name), iv = loop_var(in.ir_name);
        Expr f_e = Expr(static_cast<int>(factor));
        Expr base = ov * f_e;
        Expr guard;
        if (!divides) {
            if (tail == TailStrategy::ShiftInwards) {
                // The last tile ends at the end; if the extent is below the factor there is
                // nothing to shift, so the guard stays as well.
                base = min(base, max(od.extent - f_e, Expr(0)));
                if (!(const_extent && *const_extent >= factor)) guard = loop_var(od.ir_name) < od.min + od.extent;
            } else if (tail == TailStrategy::GuardWithIf) {
                guard = loop_var(od.ir_name) < od.min + od.extent;
            }
        }
        definitions.push_back({{od.ir_name, od.min + base + iv}});
        guards.push_back(guard);
        dims[static_cast<size_t>(i)] = o;
        dims.insert(dims.begin() + i + 1, in);
    }

    void fuse(const Directive &d) {
        int a = find(d.vars[0], d), b = find(d.vars[1], d);
        int outer = std::min(a, b);
        LoopDim od = dims[static_cast<size_t>(outer)], id = dims[static_cast<size_t>(outer + 1)];
        LoopDim fd;
        fd.name = d.vars[2];
        fd.ir_name = fresh_ir_name(fd.name);
        fd.is_reduction = od.is_reduction;
        fd.min = Expr(0);
        fd.extent = od.extent * id.extent;
        Expr fv = loop_var(fd.ir_name);
        definitions.push_back({{od.ir_name, od.min + fv / id.extent}, {id.ir_name, id.min + fv % id.extent}});
        // A pure variable's own range (the Func's region, [min, max]) is tighter; keep it.
        f.defined_ranges.emplace(od.ir_name, Interval(od.min, od.min + od.extent - 1));
        f.defined_ranges.emplace(id.ir_name, Interval(id.min, id.min + id.extent - 1));
        guards.push_back(Expr());
        dims[static_cast<size_t>(outer)] = fd;
        dims.erase(dims.begin() + outer + 1);
    }

    void reorder(const std::vector<std::string> &vars, const Directive &d) {
        std::vector<int> slots;
        for (const auto &v : vars) slots.push_back(find(v, d));
        std::vector<int> sorted = slots;
        std::sort(sorted.begin(), sorted.end());
        auto old = dims;
        for (size_t j = 0; j < sorted.size(); ++j) dims[static_cast<size_t>(sorted[j])] = old[static_cast<size_t>(slots[j])];
    }

    void mark(const std::string &v, ForKind kind, const Directive &d) {
        LoopDim &ld = dims[static_cast<size_t>(find(v, d))];
        if (ld.kind != ForKind::Serial && ld.kind != kind)
            throw Error(err + d.to_string() + ": loop " + v + " is already " + for_kind_name(ld.kind) + " (" +
                        ld.kind_directive + "); a loop has one kind");
        ld.kind = kind;
        ld.kind_directive = d.to_string();
    }

    void apply(const Directive &d) {
        switch (d.kind) {
        case DirectiveKind::Split:
            split(d, d.vars[0], d.vars[1], d.vars[2], d.factors[0], d.tail);
            break;
        case DirectiveKind::Fuse:
            fuse(d);
            break;
        case DirectiveKind::Reorder:
            reorder(d.vars, d);
            break;
        case DirectiveKind::Tile: {
            size_t k = d.factors.size();
            for (size_t j = 0; j < k; ++j) split(d, d.vars[j], d.vars[k + j], d.vars[2 * k + j], d.factors[j], d.tail);
            std::vector<std::string> order;
            for (size_t j = 0; j < k; ++j) order.push_back(d.vars[k + j]);
            for (size_t j = 0; j < k; ++j) order.push_back(d.vars[2 * k + j]);
            reorder(order, d);
            break;
        }
        case DirectiveKind::Vectorize:
        case DirectiveKind::Unroll: {
            const ForKind kind = d.kind == DirectiveKind::Vectorize ? ForKind::Vectorized : ForKind::Unrolled;
            std::string v = d.vars[0];
            if (!d.factors.empty()) {
                std::string inner = v + (d.kind == DirectiveKind::Vectorize ? ".v" : ".u");
                split(d, v, v, inner, d.factors[0], d.tail);
                v = inner;
            }
            mark(v, kind, d);
            break;
        }
        case DirectiveKind::Parallel:
            mark(d.vars[0], ForKind::Parallel, d);
            break;
        case DirectiveKind::Tensorize: {
            // Recorded for the chip backend; here only its shape is checked: the covered loops
            // must have constant extents (checked once the extents are known, in legality).
            break;
        }
        default:
            break;
        }
    }
};

} // namespace

Stmt build_produce(LoweredFunc &f) {
    const FunctionContents &fc = f.contents;
    f.stage_loops.assign(static_cast<size_t>(fc.num_stages()), {});
    std::vector<Stmt> stages;
    for (int s = 0; s < fc.num_stages(); ++s) {
        StageBuilder b(f, s);
        const Definition &def = fc.stage(s);
        StageLoopNames initial = initial_loop_names(fc, s);
        // Validate all directive names once more (schedules set from JSON bypass the fluent
        // checks); throws naming the stage and the directive.
        replay_loop_names(stage_display_name(fc.name, s), initial, fc.schedule.stage(s));
        check_stage_legality(f, s);
        std::map<std::string, Expr> qualify;
        for (size_t i = 0; i < initial.loops.size(); ++i) {
            LoopDim d;
            d.name = initial.loops[i];
            d.ir_name = b.fresh_ir_name(d.name);
            d.is_reduction = initial.is_reduction[i];
            if (!d.is_reduction) {
                auto pos = std::find(fc.args.begin(), fc.args.end(), d.name) - fc.args.begin();
                d.min = loop_var(f.region_min(static_cast<size_t>(pos)));
                d.extent = loop_var(f.region_extent(static_cast<size_t>(pos)));
                f.defined_ranges[d.ir_name] =
                    Interval(d.min, f.is_output ? d.min + d.extent - 1 : loop_var(f.region_max(static_cast<size_t>(pos))));
            } else {
                for (const auto &rv : def.rdom->vars)
                    if (rv.name == d.name) {
                        d.min = rv.min;
                        d.extent = rv.extent;
                    }
            }
            qualify[d.name] = loop_var(d.ir_name);
            b.dims.push_back(d);
        }
        // RDom bounds may name earlier RVars? Not in Tessera: they are Params or constants.
        for (const auto &d : fc.schedule.stage(s))
            if (is_loop_directive(d.kind)) b.apply(d);

        // The innermost statement: the Provide, under the RDom predicate and the tail guards.
        std::vector<Expr> args;
        for (const auto &a : def.args) args.push_back(substitute(qualify, a));
        Stmt body = Provide::make(fc.name, substitute(qualify, def.value), args);
        if (def.rdom && def.rdom->predicate.defined())
            body = IfThenElse::make(substitute(qualify, def.rdom->predicate), body);
        // Each split's tail guard sits right inside the let of the variable it tests, before
        // the lets of earlier splits that derive other variables from it, so that bounds
        // inference sees the narrowed range when it bounds those.
        for (size_t r = 0; r < b.definitions.size(); ++r) {
            if (b.guards[r].defined()) body = IfThenElse::make(b.guards[r], body);
            const auto &defs = b.definitions[r];
            for (auto it = defs.rbegin(); it != defs.rend(); ++it) body = LetStmt::make(it->ir_name, it->value, body);
        }
        for (auto it = b.dims.rbegin(); it != b.dims.rend(); ++it)
            body = For::make(it->ir_name, it->min, it->extent, it->kind, body);
        f.stage_loops[static_cast<size_t>(s)] = b.dims;
        stages.push_back(body);
    }
    return ProducerConsumer::make(fc.name, true, Block::make(stages));
}

} // namespace tessera::internal
