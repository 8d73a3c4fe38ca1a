// Producer injection (Halide's ScheduleFunctions + the placement half of BoundsInference):
// builds the statement of the whole pipeline. Root Funcs are produced in topological order at
// the top; a compute_at Func is produced at the start of its consumer's loop body, after lets
// that define its region from what the rest of that body reads; its storage (Realize) wraps
// the storage loop's body. Funcs are placed consumers first, so every call to a Func is
// already in the statement when its region is inferred.
#include <algorithm>
#include <functional>
#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

/// Rewrites the body of the loop named `loop`.
class RewriteLoopBody : public IRMutator {
public:
    RewriteLoopBody(const std::string &loop, std::function<Stmt(const Stmt &)> f) : loop_(loop), f_(std::move(f)) {}
    bool found = false;

protected:
    using IRMutator::visit;
    Stmt visit(const For *op, const Stmt &s) override {
        if (op->name == loop_) {
            found = true;
            return For::make(op->name, op->min, op->extent, op->kind, f_(op->body));
        }
        return IRMutator::visit(op, s);
    }

private:
    std::string loop_;
    std::function<Stmt(const Stmt &)> f_;
};

/// The Funcs that read `producer` outside every loop named `loop` (a read outside the loop a
/// Func is computed at would read what is not computed yet, or no longer there).
class ReadersOutsideLoop : public IRVisitor {
public:
    ReadersOutsideLoop(const std::string &producer, const std::string &loop) : producer_(producer), loop_(loop) {}
    std::set<std::string> readers;

protected:
    using IRVisitor::visit;
    void visit(const For *op) override {
        if (op->name != loop_) IRVisitor::visit(op);
    }
    void visit(const ProducerConsumer *op) override {
        if (!op->is_producer) return IRVisitor::visit(op);
        producing_.push_back(op->name);
        IRVisitor::visit(op);
        producing_.pop_back();
    }
    void visit(const Call *op) override {
        if (op->call_type == CallType::Func && op->name == producer_ && !producing_.empty()) readers.insert(producing_.back());
        IRVisitor::visit(op);
    }

private:
    std::string producer_, loop_;
    std::vector<std::string> producing_;
};

std::string describe_loops(const LoweredFunc &c, int stage) {
    std::vector<std::string> names;
    for (const auto &d : c.stage_loops[static_cast<size_t>(stage)]) names.push_back(d.name);
    return join_names(names);
}

/// The ir name of the loop a level names, with the errors compute_at and store_at give.
std::string resolve_loop(const LoweringEnv &env, const LoweredFunc &p, LoopLevel &level) {
    const std::string prefix = schedule_error_prefix(p.name(), 0) + level.directive + ": ";
    auto consumers = env.consumers_of(p.name());
    if (!env.funcs.count(level.func))
        throw Error(prefix + "Func " + level.func + " is not in this pipeline; " + p.name() + " is read by " +
                    join_names(consumers));
    const LoweredFunc &c = env.at(level.func);
    if (c.compute.kind == LevelKind::Inline)
        throw Error(prefix + level.func + " is inlined, so it has no loops; compute " + level.func +
                    " at root or at a loop first (compute_root())");
    auto stages = env.stages_calling(level.func, p.name());
    if (stages.empty())
        throw Error(prefix + level.func + " does not read " + p.name() + "; compute_at must name a loop of a consumer (" +
                    p.name() + " is read by " + (consumers.empty() ? std::string("nothing") : join_names(consumers)) + ")");
    if (level.stage < 0) {
        if (stages.size() > 1) {
            std::vector<std::string> names;
            for (int s : stages) names.push_back(stage_display_name(level.func, s));
            throw Error(prefix + p.name() + " is read by several stages (" + join_names(names) +
                        "), and no loop of one stage encloses the others; compute it at root");
        }
        level.stage = stages[0];
    } else if (level.stage >= c.contents.num_stages() ||
               std::find(stages.begin(), stages.end(), level.stage) == stages.end() || stages.size() > 1) {
        std::vector<std::string> names;
        for (int s : stages) names.push_back(stage_display_name(level.func, s));
        throw Error(prefix + "the loop must be in the stage of " + level.func + " that reads " + p.name() + " (" +
                    join_names(names) + "), and enclose every read");
    }
    for (const auto &d : c.stage_loops[static_cast<size_t>(level.stage)])
        if (d.name == level.var) return d.ir_name;
    throw Error(prefix + stage_display_name(level.func, level.stage) + " has no loop '" + level.var +
                "'; the loops " + p.name() + " can be computed at are " + describe_loops(c, level.stage) +
                " (or use compute_root())");
}

int loop_position(const LoweredFunc &c, int stage, const std::string &ir) {
    const auto &loops = c.stage_loops[static_cast<size_t>(stage)];
    for (size_t i = 0; i < loops.size(); ++i)
        if (loops[i].ir_name == ir) return static_cast<int>(i);
    return -1;
}

std::vector<Range> realize_bounds(const LoweredFunc &p, const Box &b, const std::string &where) {
    std::vector<Range> out;
    for (size_t d = 0; d < p.contents.args.size(); ++d) {
        if (d >= b.size() || !b[d].is_bounded())
            throw Error("lower: cannot bound the storage of " + p.name() + " in dimension " + p.contents.args[d] + " " +
                        where + "; its index expressions are unbounded (clamp them, e.g. clamp(x, 0, n - 1))");
        out.push_back({b[d].min, b[d].max - b[d].min + 1});
    }
    return out;
}

/// The lets that define p's region from the box its consumers require.
std::vector<std::pair<std::string, Expr>> region_lets(const LoweredFunc &p, const Box &required,
                                                       const std::string &consumers) {
    if (required.empty())
        throw Error("lower: " + p.name() + " is computed but nothing reads it there (" + consumers + ")");
    Box region = func_compute_region(p, required);
    std::vector<std::pair<std::string, Expr>> lets;
    for (size_t d = 0; d < p.contents.args.size(); ++d) {
        if (d >= region.size() || !region[d].is_bounded())
            throw Error("lower: cannot infer the region of " + p.name() + " that " + consumers + " reads in dimension " +
                        p.contents.args[d] + " (" + (d < region.size() ? region[d].to_string() : "?") +
                        "); its index is unbounded — clamp it (clamp(e, 0, n - 1)) or bound it with a select");
        lets.emplace_back(p.region_min(d), region[d].min);
        lets.emplace_back(p.region_max(d), region[d].max);
        // A region is empty where a consumer's guarded tail reads nothing; its extent is then
        // clamped to 0 (a negative one would make a fused loop's extent positive again).
        lets.emplace_back(p.region_extent(d), max(region[d].max - region[d].min + 1, 0));
    }
    return lets;
}

Stmt wrap_lets(const std::vector<std::pair<std::string, Expr>> &lets, Stmt body) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = LetStmt::make(it->first, it->second, body);
    return body;
}

} // namespace

Stmt schedule_functions(LoweringEnv &env, const IntervalScope &known) {
    std::map<std::string, Stmt> produce;
    IntervalScope hints;
    for (const auto &name : env.order) {
        produce[name] = build_produce(env.at(name));
        for (const auto &[v, i] : env.at(name).defined_ranges) hints[v] = i;
    }

    std::vector<Stmt> root;
    for (const auto &name : env.order)
        if (env.at(name).compute.kind == LevelKind::Root) root.push_back(produce[name]);
    Stmt stmt = Block::make(root);

    std::vector<std::vector<std::pair<std::string, Expr>>> root_lets; // consumers first
    std::vector<std::string> root_storage;                            // stored at root, not outputs
    for (auto it = env.order.rbegin(); it != env.order.rend(); ++it) {
        LoweredFunc &p = env.at(*it);
        if (p.is_output) continue;
        if (p.compute.kind == LevelKind::Root) {
            Box required = region_touched(stmt, p.name(), false, true, known, hints);
            root_lets.push_back(region_lets(p, required, join_names(env.consumers_of(p.name()))));
            root_storage.push_back(p.name());
            continue;
        }
        // compute_at: inject at the start of the consumer's loop body.
        const std::string loop = resolve_loop(env, p, p.compute);
        const bool store_here = p.store.kind == LevelKind::At && p.store.var == p.compute.var;
        RewriteLoopBody inject(loop, [&](const Stmt &body) {
            Box required = region_touched(body, p.name(), false, true, known, hints);
            auto lets = region_lets(p, required, stage_display_name(p.compute.func, p.compute.stage) + " inside loop " +
                                                     p.compute.var);
            Stmt inner = Block::make({produce[p.name()], ProducerConsumer::make(p.name(), false, body)});
            if (store_here) {
                // Storage bounds in terms of the region lets, which wrap it.
                Box written = region_touched(inner, p.name(), true, false, known, hints);
                inner = Realize::make(p.name(), p.contents.type, p.memory,
                                      realize_bounds(p, written, "inside loop " + p.compute.var), inner);
            }
            return wrap_lets(lets, inner);
        });
        stmt = inject.mutate(stmt);
        if (!inject.found)
            throw InternalError("lower: loop " + loop + " of " + p.compute.func + " is not in the statement");
        // A Func read by several consumers may be computed at a loop that encloses all of their
        // reads: the other readers computed inside it (softmax's max at the output's row loop,
        // where its sum of exponentials is computed too).
        ReadersOutsideLoop outside(p.name(), loop);
        stmt.accept(&outside);
        if (!outside.readers.empty()) {
            std::vector<std::string> names(outside.readers.begin(), outside.readers.end());
            throw Error(schedule_error_prefix(p.name(), 0) + p.compute.directive + ": " + p.name() + " is read by " +
                        join_names(env.consumers_of(p.name())) + ", and " + join_names(names) +
                        (names.size() > 1 ? " read" : " reads") + " it outside loop " + p.compute.var + " of " +
                        p.compute.func + "; compute " + join_names(names) + " inside that loop too (compute_at " +
                        p.compute.func + ", " + p.compute.var + " or a loop inside it), or compute " + p.name() +
                        " at root");
        }
        if (store_here) continue;
        if (p.store.kind == LevelKind::Root) {
            root_storage.push_back(p.name());
            continue;
        }
        LoopLevel store = p.store;
        store.directive = p.store.directive;
        const std::string store_loop = resolve_loop(env, p, store);
        const LoweredFunc &c = env.at(p.compute.func);
        if (store.stage != p.compute.stage ||
            loop_position(c, store.stage, store_loop) > loop_position(c, p.compute.stage, loop))
            throw Error(schedule_error_prefix(p.name(), 0) + p.store.directive + ": the storage loop " + store.var +
                        " must enclose the compute loop " + p.compute.var + " (" + p.compute.directive +
                        "); the loops of " + stage_display_name(c.name(), p.compute.stage) + " are " +
                        describe_loops(c, p.compute.stage));
        RewriteLoopBody wrap(store_loop, [&](const Stmt &body) {
            Box written = region_touched(body, p.name(), true, false, known, hints);
            return Realize::make(p.name(), p.contents.type, p.memory,
                                 realize_bounds(p, written, "inside loop " + store.var), body);
        });
        stmt = wrap.mutate(stmt);
    }
    for (const auto &name : root_storage) {
        const LoweredFunc &p = env.at(name);
        Box written = region_touched(stmt, name, true, false, known, hints);
        stmt = Realize::make(name, p.contents.type, p.memory, realize_bounds(p, written, "at root"), stmt);
    }
    // Root regions: a consumer's lets come before (outside) its producers'.
    for (auto it = root_lets.rbegin(); it != root_lets.rend(); ++it) stmt = wrap_lets(*it, stmt);
    return stmt;
}

} // namespace tessera::internal
