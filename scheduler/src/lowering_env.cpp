// The first step of lowering: the pipeline's Funcs as lowering sees them. stage() directives
// become copy Funcs that the consumer reads instead; the fusion directives are resolved into a
// compute level and a storage level per Func; inlined Funcs are substituted into their
// consumers, so that later passes see every remaining call explicitly.
#include <algorithm>
#include <functional>
#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

std::string schedule_error_prefix(const std::string &func, int stage) {
    return "schedule of " + stage_display_name(func, stage) + ": ";
}

Expr loop_var(const std::string &name) { return Variable::make(Int(32), name, VariableKind::Loop); }

namespace {

class Substitute : public IRMutator {
public:
    explicit Substitute(const std::map<std::string, Expr> &r) : r_(r) {}

protected:
    using IRMutator::visit;
    Expr visit(const Variable *v, const Expr &e) override {
        auto it = r_.find(v->name);
        return it == r_.end() ? e : it->second;
    }

private:
    const std::map<std::string, Expr> &r_;
};

class FindCall : public IRVisitor {
public:
    FindCall(const std::string &name, CallType type) : name_(name), type_(type) {}
    using IRVisitor::visit;
    void visit(const Call *c) override {
        if (c->call_type == type_ && c->name == name_) found = true;
        IRVisitor::visit(c);
    }
    bool found = false;

private:
    const std::string &name_;
    CallType type_;
};

/// Replaces calls to the Func (or Input) `name` by `replacement(args)`.
class ReplaceCalls : public IRMutator {
public:
    ReplaceCalls(const std::string &name, std::function<Expr(const std::vector<Expr> &)> replacement,
                 CallType type = CallType::Func)
        : name_(name), replacement_(std::move(replacement)), type_(type) {}

protected:
    using IRMutator::visit;
    Expr visit(const Call *c, const Expr &e) override {
        Expr rebuilt = IRMutator::visit(c, e);
        const Call *nc = rebuilt.as<Call>();
        if (nc && nc->call_type == type_ && nc->name == name_) return replacement_(nc->args);
        return rebuilt;
    }

private:
    std::string name_;
    std::function<Expr(const std::vector<Expr> &)> replacement_;
    CallType type_;
};

void rewrite_definitions(FunctionContents &f, IRMutator &m) {
    auto rewrite = [&](Definition &d) {
        for (auto &a : d.args) a = m.mutate(a);
        d.value = m.mutate(d.value);
        if (d.rdom) {
            auto rd = std::make_shared<ReductionDomainContents>(*d.rdom);
            for (auto &v : rd->vars) {
                v.min = m.mutate(v.min);
                v.extent = m.mutate(v.extent);
            }
            if (rd->predicate.defined()) rd->predicate = m.mutate(rd->predicate);
            d.rdom = rd;
        }
    };
    rewrite(f.init);
    for (auto &u : f.updates) rewrite(u);
}

const char *level_name(LevelKind k) {
    switch (k) {
    case LevelKind::Inline: return "inline";
    case LevelKind::Root: return "root";
    case LevelKind::At: return "at";
    }
    return "?";
}

// Resolves the fusion and data directives recorded on stage 0 of `lf` (the last of each kind
// wins, as in Halide).
void resolve_levels(LoweredFunc &lf) {
    const FunctionContents &f = lf.contents;
    const std::string prefix = schedule_error_prefix(f.name, 0);
    bool explicit_compute = false, wants_storage = false;
    lf.compute = LoopLevel{};
    lf.compute.kind = (f.updates.empty() && !lf.is_output) ? LevelKind::Inline : LevelKind::Root;
    lf.store = LoopLevel{};
    bool explicit_store = false;
    for (const auto &d : f.schedule.stage(0)) {
        switch (d.kind) {
        case DirectiveKind::ComputeInline:
        case DirectiveKind::ComputeRoot:
        case DirectiveKind::ComputeAt:
            explicit_compute = true;
            lf.compute = LoopLevel{d.kind == DirectiveKind::ComputeInline ? LevelKind::Inline
                                   : d.kind == DirectiveKind::ComputeRoot ? LevelKind::Root
                                                                          : LevelKind::At,
                                   d.func, d.consumer_stage, d.vars.empty() ? "" : d.vars[0], d.to_string()};
            break;
        case DirectiveKind::StoreRoot:
        case DirectiveKind::StoreAt:
            explicit_store = true;
            lf.store = LoopLevel{d.kind == DirectiveKind::StoreRoot ? LevelKind::Root : LevelKind::At, d.func,
                                 d.consumer_stage, d.vars.empty() ? "" : d.vars[0], d.to_string()};
            break;
        case DirectiveKind::StoreIn:
            lf.memory = d.memory;
            lf.bank = d.bank;
            wants_storage = true;
            break;
        case DirectiveKind::SetLayout:
            lf.layout = d.layout;
            wants_storage = true;
            break;
        case DirectiveKind::DoubleBuffer:
            lf.double_buffer = d.factors.empty() || d.factors[0] != 0;
            wants_storage = true;
            break;
        default:
            break;
        }
    }
    if (lf.is_output && lf.compute.kind != LevelKind::Root)
        throw Error(prefix + lf.compute.directive + ": " + f.name +
                    " is an output of the pipeline; outputs are computed at root (remove the directive)");
    if (lf.is_output && explicit_store && lf.store.kind != LevelKind::Root)
        throw Error(prefix + lf.store.directive + ": " + f.name + " is an output; its storage is the output buffer");
    if (lf.is_output && wants_storage && !lf.layout.is_default())
        throw Error(prefix + "layout(" + lf.layout.to_string() + "): " + f.name +
                    " is an output; its layout is the output buffer's (dense row-major). Give the layout to an "
                    "intermediate Func");
    if (lf.compute.kind == LevelKind::Inline) {
        if (!f.updates.empty())
            throw Error(prefix + "compute_inline(): " + f.name +
                        " has update definitions and cannot be inlined; use compute_root() or compute_at()");
        if (wants_storage || explicit_store) {
            if (explicit_compute)
                throw Error(prefix + "compute_inline() with storage directives (store_in, layout, double_buffer, "
                                     "store_at): an inlined Func has no storage; compute it at root or at a loop");
            lf.compute.kind = LevelKind::Root; // storage directives on a default-inline Func ask for storage
        }
    }
    if (explicit_store) {
        if (lf.compute.kind == LevelKind::Root && lf.store.kind == LevelKind::At)
            throw Error(prefix + lf.store.directive + ": " + f.name +
                        " is computed at root, so it must be stored at root; compute it at a loop inside the "
                        "storage loop (compute_at)");
        if (lf.compute.kind == LevelKind::At && lf.store.kind == LevelKind::At && lf.store.func != lf.compute.func)
            throw Error(prefix + lf.store.directive + ": the storage loop must be a loop of " + lf.compute.func +
                        ", where " + f.name + " is computed (" + lf.compute.directive + ")");
    } else {
        lf.store = lf.compute;
    }
    if (lf.store.kind == LevelKind::At && lf.store.stage < 0) lf.store.stage = lf.compute.stage;
    for (const auto &d : f.schedule.stage(0))
        if (d.kind == DirectiveKind::Tensorize || is_loop_directive(d.kind)) {
            if (lf.compute.kind == LevelKind::Inline)
                throw Error(prefix + d.to_string() + ": " + f.name +
                            " is inlined (the default for a pure Func), so it has no loops to schedule; add "
                            "compute_root() or compute_at()");
        }
    for (size_t s = 1; s < static_cast<size_t>(f.num_stages()); ++s) (void)s;
    (void)level_name;
}

/// What a stage() directive copies: a Func of the pipeline or an Input.
struct StagedProducer {
    std::string name;
    CallType call_type;
    Type type;
    std::vector<std::string> args;
    /// A read of the producer at `args` (the copy's definition).
    std::function<Expr(const std::vector<Expr> &)> read;
    /// "schedule of p: " or "schedule of Input B: ".
    std::string error_prefix;
};

/// The loop a stage() directive names must be a loop of the consumer's stage that reads the
/// producer; checked here so the error names the stage() directive rather than the copy.
void check_staging_loop(const LoweringEnv &env, const StagedProducer &p, const Directive &d,
                        const std::string &prefix) {
    const FunctionContents &c = env.at(d.func).contents;
    std::vector<int> stages = env.stages_calling(d.func, p.name, p.call_type);
    int stage = d.consumer_stage;
    if (stage < 0) {
        if (stages.size() != 1) return; // several reading stages: compute_at's error explains it
        stage = stages[0];
    }
    if (stage >= c.num_stages()) return;
    const std::string stage_name = stage_display_name(d.func, stage);
    StageLoopNames loops = replay_loop_names(stage_name, initial_loop_names(c, stage), c.schedule.stage(stage));
    if (std::find(loops.loops.begin(), loops.loops.end(), d.vars.at(0)) == loops.loops.end())
        throw Error(prefix + stage_name + " has no loop '" + d.vars[0] + "'; the loops " + p.name +
                    " can be staged at are " + join_names(loops.loops));
}

/// The loops of a copy with a non-default layout, in its storage order: each blocked dimension
/// split by its block (tails guarded), the loops ordered as the storage dimensions, and the
/// innermost block vectorized. A copy is a pure gather, so any order is legal, and writing
/// the storage contiguously (rather than scattering blocks from argument order) is what makes
/// packing cheap. None when a dimension is blocked twice (left in argument order).
std::vector<Directive> copy_loops_in_storage_order(const std::vector<std::string> &args, const Layout &layout) {
    std::vector<Directive> out;
    if (layout.blocks.empty()) {
        if (layout.order.empty()) return out;
        Directive reorder;
        reorder.kind = DirectiveKind::Reorder;
        reorder.vars = layout.order;
        return {reorder};
    }
    std::set<std::string> blocked;
    for (const auto &b : layout.blocks)
        if (!blocked.insert(b.dim).second || b.factor < 1) return {};
    Directive reorder;
    reorder.kind = DirectiveKind::Reorder;
    for (const auto &dim : layout.order.empty() ? args : layout.order)
        reorder.vars.push_back(blocked.count(dim) ? dim + ".o" : dim);
    for (const auto &b : layout.blocks) {
        Directive split;
        split.kind = DirectiveKind::Split;
        split.vars = {b.dim, b.dim + ".o", b.dim + ".i"};
        split.factors = {b.factor};
        split.tail = TailStrategy::GuardWithIf;
        out.push_back(split);
        reorder.vars.push_back(b.dim + ".i");
    }
    out.push_back(reorder);
    if (layout.blocks.back().factor > 1) {
        Directive vectorize;
        vectorize.kind = DirectiveKind::Vectorize;
        vectorize.vars = {layout.blocks.back().dim + ".i"};
        out.push_back(vectorize);
    }
    return out;
}

/// stage(consumer, var, memory, layout): a copy Func "<P>_in_<C>" computed at that loop, stored
/// in that memory with that layout, which the consumer reads instead of P.
void add_staged_copy(LoweringEnv &env, const StagedProducer &p, const Directive &d) {
    const std::string prefix = p.error_prefix + d.to_string() + ": ";
    const std::string what = p.call_type == CallType::Input ? "Input " : "";
    if (!env.funcs.count(d.func)) throw Error(prefix + "Func " + d.func + " is not in this pipeline");
    if (env.stages_calling(d.func, p.name, p.call_type).empty()) {
        std::vector<std::string> consumers;
        for (const auto &n : env.order)
            if (n != p.name && !env.stages_calling(n, p.name, p.call_type).empty()) consumers.push_back(n);
        throw Error(prefix + d.func + " does not read " + what + p.name + "; its consumers are " +
                    join_names(consumers));
    }
    check_staging_loop(env, p, d, prefix);
    const std::string sname = p.name + "_in_" + d.func;
    if (env.funcs.count(sname)) throw Error(prefix + what + p.name + " is already staged for " + d.func);
    auto sc = std::make_shared<FunctionContents>();
    sc->name = sname;
    sc->type = p.type;
    sc->args = p.args;
    std::vector<Expr> args;
    for (const auto &a : p.args) args.push_back(Variable::make(Int(32), a));
    sc->init.args = args;
    sc->init.value = p.read(args);
    Directive at;
    at.kind = DirectiveKind::ComputeAt;
    at.func = d.func;
    at.consumer_stage = d.consumer_stage;
    at.vars = d.vars;
    sc->schedule.stages[0].push_back(at);
    Directive in;
    in.kind = DirectiveKind::StoreIn;
    in.memory = d.memory;
    sc->schedule.stages[0].push_back(in);
    if (!d.layout.is_default()) {
        Directive layout;
        layout.kind = DirectiveKind::SetLayout;
        layout.layout = d.layout;
        sc->schedule.stages[0].push_back(layout);
        for (auto &loop : copy_loops_in_storage_order(p.args, d.layout)) sc->schedule.stages[0].push_back(loop);
    }
    // The consumer reads the copy.
    FunctionRef sref(sc);
    ReplaceCalls redirect(
        p.name, [&](const std::vector<Expr> &a) { return Call::make_func(sc->type, sref, a); }, p.call_type);
    rewrite_definitions(env.at(d.func).contents, redirect);
    LoweredFunc sl;
    sl.contents = *sc;
    env.funcs.emplace(sname, std::move(sl));
    auto cpos = std::find(env.order.begin(), env.order.end(), d.func);
    env.order.insert(cpos, sname);
}

std::vector<Directive> stagings(const FuncSchedule &s) {
    std::vector<Directive> out;
    for (const auto &d : s.stage(0))
        if (d.kind == DirectiveKind::Stage) out.push_back(d);
    return out;
}

} // namespace

Expr substitute(const std::map<std::string, Expr> &replacements, const Expr &e) {
    if (replacements.empty()) return e;
    Substitute s(replacements);
    return s.mutate(e);
}

Stmt substitute(const std::map<std::string, Expr> &replacements, const Stmt &st) {
    if (replacements.empty()) return st;
    Substitute s(replacements);
    return s.mutate(st);
}

bool calls_func(const Expr &e, const std::string &name, CallType type) {
    if (!e.defined()) return false;
    FindCall f(name, type);
    e.accept(&f);
    return f.found;
}

bool stage_calls(const FunctionContents &f, int s, const std::string &name, CallType type) {
    for (const auto &e : definition_exprs(f.stage(s)))
        if (calls_func(e, name, type)) return true;
    return false;
}

std::vector<std::string> LoweringEnv::consumers_of(const std::string &name) const {
    std::vector<std::string> out;
    for (const auto &n : order) {
        if (n == name) continue;
        const auto &f = funcs.at(n).contents;
        for (int s = 0; s < f.num_stages(); ++s)
            if (stage_calls(f, s, name)) {
                out.push_back(n);
                break;
            }
    }
    return out;
}

std::vector<int> LoweringEnv::stages_calling(const std::string &consumer, const std::string &producer,
                                             CallType type) const {
    std::vector<int> out;
    const auto &f = funcs.at(consumer).contents;
    for (int s = 0; s < f.num_stages(); ++s)
        if (stage_calls(f, s, producer, type)) out.push_back(s);
    return out;
}

LoweringEnv build_lowering_env(const Pipeline &p) {
    LoweringEnv env;
    if (p.outputs().empty()) throw Error("lower: the pipeline has no outputs");
    std::vector<Func> funcs = topological_order(p.outputs());
    for (const auto &o : p.outputs()) {
        if (!o.defined()) throw Error("lower: output Func " + o.name() + " has no definition");
        env.outputs.push_back(o.name());
    }
    for (const auto &f : funcs) {
        if (env.funcs.count(f.name()))
            throw Error("lower: two different Funcs are named " + f.name() + "; give them distinct names");
        LoweredFunc lf;
        lf.contents = *f.contents();
        lf.is_output = std::find(env.outputs.begin(), env.outputs.end(), f.name()) != env.outputs.end();
        env.order.push_back(f.name());
        env.funcs.emplace(f.name(), std::move(lf));
    }
    env.inputs = find_inputs(funcs);
    env.params = find_params(funcs);

    // stage() directives on Funcs, then on Inputs (a copy of an Input reads the Input itself,
    // so staging an Input for a Func that is a staged copy is not possible; stage the original).
    for (size_t i = 0; i < env.order.size(); ++i) {
        const std::string pname = env.order[i];
        for (const auto &d : stagings(env.at(pname).contents.schedule)) {
            const FunctionContents pc = env.at(pname).contents;
            FunctionRef pref(std::make_shared<FunctionContents>(pc));
            StagedProducer p{pname, CallType::Func, pc.type, pc.args,
                             [&](const std::vector<Expr> &a) { return Call::make_func(pc.type, pref, a); },
                             schedule_error_prefix(pname, 0)};
            add_staged_copy(env, p, d);
        }
    }
    for (const Input &input : env.inputs) {
        std::vector<std::string> args;
        for (int a = 0; a < input.dimensions(); ++a) args.push_back("d" + std::to_string(a));
        const auto contents = input.contents();
        StagedProducer p{input.name(), CallType::Input, input.type(), args,
                         [&](const std::vector<Expr> &a) { return Call::make_input(contents, a); },
                         "schedule of Input " + input.name() + ": "};
        for (const auto &d : stagings(contents->schedule)) add_staged_copy(env, p, d);
    }

    for (auto &[name, lf] : env.funcs) resolve_levels(lf);

    // Inline, producers first, into every Func that is not itself inlined away.
    for (const auto &name : env.order) {
        const LoweredFunc &pf = env.at(name);
        if (pf.compute.kind != LevelKind::Inline) continue;
        const FunctionContents pc = pf.contents;
        ReplaceCalls inliner(name, [&](const std::vector<Expr> &a) {
            std::map<std::string, Expr> r;
            for (size_t d = 0; d < pc.args.size(); ++d) r[pc.args[d]] = a[d];
            return substitute(r, pc.init.value);
        });
        for (auto &[other, of] : env.funcs)
            if (other != name) rewrite_definitions(of.contents, inliner);
    }
    // Drop inlined Funcs from the order: nothing calls them any more.
    std::vector<std::string> kept;
    for (const auto &name : env.order)
        if (env.at(name).compute.kind != LevelKind::Inline) kept.push_back(name);
    env.order = kept;
    return env;
}

} // namespace tessera::internal
