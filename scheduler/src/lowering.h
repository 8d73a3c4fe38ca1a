#pragma once
// What the lowering passes share (private to the scheduler library): the pipeline's Funcs as
// lowering sees them, with their fusion decisions resolved, and the entry point of each pass.
// Every pass lives in its own file and exposes one function here.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/internal/function.h"
#include "tessera/interval.h"
#include "tessera/schedule.h"

namespace tessera::internal {

/// Where a Func is computed or stored.
enum class LevelKind { Inline, Root, At };

/// A loop level of a consumer: the loop named `var` of stage `stage` of Func `func`.
struct LoopLevel {
    LevelKind kind = LevelKind::Root;
    std::string func;
    int stage = -1;
    std::string var;
    /// The directive that chose this level ("" for the default), for error messages.
    std::string directive;
};

/// One loop of a stage after its directives.
struct LoopDim {
    std::string name;    ///< the user's name (as directives write it)
    std::string ir_name; ///< the loop variable in the IR ("C.s1.io"), unique in the pipeline
    bool is_reduction = false;
    ForKind kind = ForKind::Serial;
    Expr min, extent;
    /// The directive that set the kind (for error messages).
    std::string kind_directive;
};

/// A Func as lowering sees it: a private copy of its definitions (inlining and staging rewrite
/// calls in them), its schedule, and its resolved fusion and storage decisions.
struct LoweredFunc {
    FunctionContents contents; ///< a copy; Exprs are shared (immutable)
    bool is_output = false;
    LoopLevel compute, store;
    MemoryKind memory = MemoryKind::Auto;
    int bank = -1;
    Layout layout;
    bool double_buffer = false;
    /// The loops of each stage after the loop directives (filled by build_produce).
    std::vector<std::vector<LoopDim>> stage_loops;
    /// Ranges of loop and let variables that hold by construction but that interval arithmetic
    /// cannot see (filled by build_produce): a pure variable stays within the Func's region
    /// (its split tails are guarded or shifted inwards), and the variables a fuse defines
    /// (outer = min + fused / inner extent, inner = min + fused % inner extent) within their
    /// loops' ranges.
    IntervalScope defined_ranges;

    const std::string &name() const { return contents.name; }
    /// The variables holding the region this Func is computed over, per pure dimension.
    std::string region_min(size_t d) const { return contents.name + "." + contents.args[d] + ".min"; }
    std::string region_extent(size_t d) const { return contents.name + "." + contents.args[d] + ".extent"; }
    /// The last point of the region (defined for Funcs other than outputs).
    std::string region_max(size_t d) const { return contents.name + "." + contents.args[d] + ".max"; }
};

/// All Funcs of a pipeline in topological order (producers first), by name.
struct LoweringEnv {
    std::vector<std::string> order;
    std::map<std::string, LoweredFunc> funcs;
    std::vector<Input> inputs;
    std::vector<ParamInfo> params;
    std::vector<std::string> outputs;

    LoweredFunc &at(const std::string &name) { return funcs.at(name); }
    const LoweredFunc &at(const std::string &name) const { return funcs.at(name); }
    /// The Funcs whose definitions call `name` (after inlining and staging).
    std::vector<std::string> consumers_of(const std::string &name) const;
    /// The stages of `consumer` whose definitions call `producer` (a Func, or an Input).
    std::vector<int> stages_calling(const std::string &consumer, const std::string &producer,
                                    CallType type = CallType::Func) const;
};

/// lowering_env.cpp: copies the pipeline's Funcs, applies stage() directives of Funcs and
/// Inputs (as copy Funcs),
/// resolves compute and store levels (defaults: inline a pure single-stage Func, compute a Func
/// with updates at root) and inlines what is inlined. Throws for illegal fusion directives.
LoweringEnv build_lowering_env(const Pipeline &p);

/// Whether expression `e` calls Func `name` (or the Input, with CallType::Input).
bool calls_func(const Expr &e, const std::string &name, CallType type = CallType::Func);
/// Whether any definition of stage `s` (args, value, RDom) calls Func (or Input) `name`.
bool stage_calls(const FunctionContents &f, int s, const std::string &name, CallType type = CallType::Func);

/// loop_nest.cpp: the loop nest that computes every stage of `f` over its region (the
/// variables region_min/region_extent), wrapped in a producer marker; fills f.stage_loops.
Stmt build_produce(LoweredFunc &f);

/// bounds_inference.cpp: the box of `name` touched inside `s` — by its Provides (`provides`)
/// and/or by Calls to it (`calls`) — in terms of the variables free in `s`. Loops and lets
/// inside `s` range over their bounds; simple if-conditions on them narrow the range.
/// `known` gives ranges of variables free in `s` (e.g. output extents known to lower()).
/// `hints` gives ranges of let-defined variables to use where the let's value cannot be bounded.
Box region_touched(const Stmt &s, const std::string &name, bool provides, bool calls,
                   const IntervalScope &known = {}, const IntervalScope &hints = {});
/// bounds_inference.cpp: the region `f` must be computed over when its consumers need
/// `required`: also what its updates write and read of itself.
Box func_compute_region(const LoweredFunc &f, const Box &required);

/// inject_producers.cpp: the whole pipeline's statement: every Func computed at its level with
/// its region defined by bounds inference, storage (Realize) at its storage level.
Stmt schedule_functions(LoweringEnv &env, const IntervalScope &known = {});

/// storage_flattening.cpp: Realize → Allocate with extents by layout, Provide → Store, Func and
/// Input calls → Load, with the index arithmetic of each buffer's layout.
/// `known` gives ranges of free variables (the output extents when the shapes are known), so
/// storage inside loops can be sized by its largest constant extent.
Stmt flatten_storage(const Stmt &s, const LoweringEnv &env, const IntervalScope &known = {});

/// legality.cpp: checks the loop directives of stage `s` of `f` that need the definition
/// (reduction order, parallel/vectorize over reduction loops, tail strategies).
void check_stage_legality(const LoweredFunc &f, int s);
/// legality.cpp: checks on the final statement (vectorized and unrolled loops have constant
/// extents).
void check_lowered_legality(const Stmt &s, const LoweringEnv &env);

/// "schedule of C.update(0): " — the start of every scheduling error about a stage.
std::string schedule_error_prefix(const std::string &func, int stage);

/// Substitutes Variables by name (any kind) in `e` / `s`.
Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e);
Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &s);

/// simplify.cpp: simplify() knowing the ranges of variables.
Expr simplify_with_bounds(const Expr &e, const IntervalScope &scope);
Stmt simplify_with_bounds(const Stmt &s, const IntervalScope &scope);

/// simplify.cpp: whether `s` does nothing (undefined, or the evaluation of a constant).
bool is_no_op(const Stmt &s);

/// trim_no_op_iterations.cpp: each loop of constant extent whose last iterations provably do
/// nothing (a guarded split whose factor exceeds the extent) stops before them.
Stmt trim_no_op_iterations(const Stmt &s);

/// partition_loops.cpp: how many IfThenElse statements `s` holds.
int count_ifs(const Stmt &s);

/// partition_loops.cpp: each serial loop of constant extent whose tail guards hold in all but
/// its last iteration becomes a guard-free loop over those iterations plus the last one.
Stmt partition_loops(const Stmt &s);

/// Runs `body` with `name` bound to `range` in `scope`, then restores the outer binding (a
/// let or loop may shadow an outer variable of the same name). Returns what body returns.
template <typename F> auto with_binding(IntervalScope &scope, const std::string &name, const Interval &range, F body) {
    auto it = scope.find(name);
    const bool had = it != scope.end();
    const Interval outer = had ? it->second : Interval();
    scope[name] = range;
    struct Restore {
        IntervalScope &scope;
        const std::string &name;
        bool had;
        const Interval &outer;
        ~Restore() {
            if (had)
                scope[name] = outer;
            else
                scope.erase(name);
        }
    } restore{scope, name, had, outer};
    return body();
}

/// An Int(32) loop variable.
Expr loop_var(const std::string &name);

} // namespace tessera::internal
