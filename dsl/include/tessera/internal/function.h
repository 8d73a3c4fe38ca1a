#pragma once
// What a Func, an Input and an RDom are underneath their user-facing handles (func.h): the
// definitions as data, for the reference evaluator, lowering, hashing and the printer.
// Handles share these contents; a Func's contents change only while it is being defined.
#include <memory>
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/schedule.h"
#include "tessera/type.h"

namespace tessera::internal {

/// One dimension of a reduction domain: the RVar's name and its range [min, min + extent).
struct ReductionVariable {
    std::string name;
    Expr min, extent;
};

/// A reduction domain. Its dimensions iterate with the first one innermost (as in Halide).
/// `predicate` is the and of every where() clause, undefined when there is none; the RVars in
/// it are plain Variables of kind Reduction (not tied back to this domain, which would form a
/// reference cycle).
struct ReductionDomainContents {
    std::string name;
    std::vector<ReductionVariable> vars;
    Expr predicate;
    /// Set when a definition first uses the domain; where() is refused after that, since it
    /// would silently change a definition already made.
    mutable bool used_in_definition = false;
};

/// One definition of a Func: f(args) = value, over `rdom` when it is an update that reduces.
/// For the pure definition, args are the pure Vars (as Variables) and rdom is null. For an
/// update, args are Int(32) Exprs of the pure Vars (each at its pure position) and the RVars.
struct Definition {
    std::vector<Expr> args;
    Expr value;
    std::shared_ptr<const ReductionDomainContents> rdom;

    bool defined() const { return value.defined(); }
};

/// The contents of a Func.
struct FunctionContents {
    std::string name;
    /// The element type, set by the pure definition.
    Type type;
    /// The names of the pure arguments, outermost first.
    std::vector<std::string> args;
    /// The pure definition; undefined until the Func is defined.
    Definition init;
    /// Update definitions, applied in order after the pure definition.
    std::vector<Definition> updates;
    /// The first Func whose definition called this one (empty if none). Once another Func
    /// uses it, its definition is final: a later update would silently change the consumer.
    std::string used_by;
    /// The schedule directives recorded on this Func's stages (scheduler; see schedule.h).
    FuncSchedule schedule;

    bool defined() const { return init.defined(); }
    /// Stage i: 0 is the pure definition, i + 1 is update i.
    const Definition &stage(int i) const { return i == 0 ? init : updates.at(static_cast<size_t>(i - 1)); }
    int num_stages() const { return 1 + static_cast<int>(updates.size()); }
};

/// The contents of an Input: a named tensor with a dtype and a shape (outermost first). Shape
/// entries are Int(32) constants or Exprs of Params.
struct InputContents {
    std::string name;
    Type type;
    std::vector<Expr> shape;
    /// The stage() directives recorded on this Input (stage 0). Mutable because Calls share
    /// the contents as const, and a schedule never changes what an Input holds.
    mutable FuncSchedule schedule;
};

/// A scalar Param read by an Expr: its name and type.
struct ParamInfo {
    std::string name;
    Type type;
};

/// Every Func called in `e`, each once, in order of first appearance (depth-first, left to
/// right). Weak self-references of an update are included.
std::vector<Func> called_functions(const Expr &e);

/// The Funcs `f` calls directly in any of its definitions (arguments, values, RDom bounds and
/// predicates), excluding f itself, each once, in order of first appearance.
std::vector<Func> direct_producers(const Func &f);

/// Every Func in the definitions of `outputs` and the Funcs they call, transitively, with each
/// producer before all of its consumers (a deterministic topological order: depth-first,
/// producers in order of first appearance). The outputs are included.
std::vector<Func> topological_order(const std::vector<Func> &outputs);

/// Every Input read by `e`, each once, in order of first appearance.
std::vector<Input> find_inputs(const Expr &e);
/// Every Input read by these Funcs' definitions and by the shapes of those Inputs.
std::vector<Input> find_inputs(const std::vector<Func> &funcs);

/// Every Param read by `e`, each once, in order of first appearance.
std::vector<ParamInfo> find_params(const Expr &e);
/// Every Param read by these Funcs' definitions (RDom bounds included) and by the shapes of
/// the Inputs they read.
std::vector<ParamInfo> find_params(const std::vector<Func> &funcs);

/// Every Expr that belongs to a definition — args, value, RDom mins, extents and predicate —
/// for passes that need to look at all of them.
std::vector<Expr> definition_exprs(const Definition &d);

/// Whether update `u` of `f` writes f(pure vars...) at its own point — a matmul's or a conv's
/// sum, not a scan or a histogram: then its pure loops may be parallel, split and reordered
/// around the reduction.
bool writes_its_own_point(const FunctionContents &f, const Definition &u);

} // namespace tessera::internal
