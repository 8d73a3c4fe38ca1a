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
    explicit FindCall(const std::string &name) : name_(name) {}
    using IRVisitor::visit;
    void visit(const Call *c) override {
        if (c->call_type == CallType::Func && c->name == name_) found = true;
        IRVisitor::visit(c);
    }
    bool found = false;

private:
    const std::string &name_;
};

/// Replaces calls to Func `name`: by `replacement(args)`.
class ReplaceCalls : public IRMutator {
public:
    ReplaceCalls(const std::string &name, std::function<Expr(const std::vector<Expr> &)> replacement)
        : name_(name), replacement_(std::move(replacement)) {}

protected:
    using IRMutator::visit;
    Expr visit(const Call *c, const Expr &e) override {
        Expr rebuilt = IRMutator::visit(c, e);
        const Call *nc = rebuilt.as<Call>();
        if (nc && nc->call_type == CallType::Func && nc->name == name_) return replacement_(nc->args);
        return rebuilt;
    }

private:
    std::string name_;
    std::function<Expr(const std::vector<Expr> &)> replacement_;
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
            lf.double_buffer = true;
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

bool calls_func(const Expr &e, const std::string &name) {
    if (!e.defined()) return false;
    FindCall f(name);
    e.accept(&f);
    return f.found;
}

bool stage_calls(const FunctionContents &f, int s, const std::string &name) {
    for (const auto &e : definition_exprs(f.stage(s)))
        if (calls_func(e, name)) return true;
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

std::vector<int> LoweringEnv::stages_calling(const std::string &consumer, const std::string &producer) const {
    std::vector<int> out;
    const auto &f = funcs.at(consumer).contents;
    for (int s = 0; s < f.num_stages(); ++s)
        if (stage_calls(f, s, producer)) out.push_back(s);
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

    // stage(consumer, var, memory): a copy Func "<P>_in_<C>" computed at that loop and stored in
    // that memory, which the consumer reads instead of P.
    for (size_t i = 0; i < env.order.size(); ++i) {
        const std::string pname = env.order[i];
        std::vector<Directive> stagings;
        for (const auto &d : env.at(pname).contents.schedule.stage(0))
            if (d.kind == DirectiveKind::Stage) stagings.push_back(d);
        for (const auto &d : stagings) {
            LoweredFunc &pf = env.at(pname);
            const std::string prefix = schedule_error_prefix(pname, 0) + d.to_string() + ": ";
            if (!env.funcs.count(d.func))
                throw Error(prefix + "Func " + d.func + " is not in this pipeline");
            if (env.stages_calling(d.func, pname).empty())
                throw Error(prefix + d.func + " does not read " + pname + "; its consumers are " +
                            join_names(env.consumers_of(pname)));
            const std::string sname = pname + "_in_" + d.func;
            if (env.funcs.count(sname)) throw Error(prefix + pname + " is already staged for " + d.func);
            auto sc = std::make_shared<FunctionContents>();
            sc->name = sname;
            sc->type = pf.contents.type;
            sc->args = pf.contents.args;
            std::vector<Expr> args;
            for (const auto &a : pf.contents.args) args.push_back(Variable::make(Int(32), a));
            sc->init.args = args;
            FunctionRef pref(std::make_shared<FunctionContents>(pf.contents));
            sc->init.value = Call::make_func(pf.contents.type, pref, args);
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
            // The consumer reads the copy.
            FunctionRef sref(sc);
            ReplaceCalls redirect(pname, [&](const std::vector<Expr> &a) {
                return Call::make_func(sc->type, sref, a);
            });
            rewrite_definitions(env.at(d.func).contents, redirect);
            LoweredFunc sl;
            sl.contents = *sc;
            env.funcs.emplace(sname, std::move(sl));
            auto cpos = std::find(env.order.begin(), env.order.end(), d.func);
            env.order.insert(cpos, sname);
        }
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
