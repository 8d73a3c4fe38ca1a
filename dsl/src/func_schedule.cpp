// The fluent scheduling methods of Func, Stage and Pipeline (func.h, "Scheduling" sections).
// They only record Directives into the Func's FuncSchedule; what can be checked with the Func
// alone — that the loops a directive names exist and factors are positive — is checked here,
// at once, so the error points at the offending call. lower() checks the rest.
#include <algorithm>
#include <set>

#include "tessera/error.h"
#include "tessera/func.h"
#include "tessera/internal/function.h"
#include "tessera/schedule.h"

namespace tessera {

namespace internal {

std::string stage_display_name(const std::string &func, int stage) {
    return stage == 0 ? func : func + ".update(" + std::to_string(stage - 1) + ")";
}

StageLoopNames initial_loop_names(const FunctionContents &f, int stage) {
    if (!f.defined()) throw Error("Func " + f.name + " has no definition yet; define it before scheduling it");
    if (stage < 0 || stage >= f.num_stages())
        throw Error("Func " + f.name + " has no stage " + std::to_string(stage) + "; it has the pure definition" +
                    (f.updates.empty() ? std::string()
                                       : " and updates 0.." + std::to_string(f.updates.size() - 1)));
    StageLoopNames n;
    if (stage == 0) {
        n.loops = f.args;
        n.is_reduction.assign(f.args.size(), false);
        return n;
    }
    const Definition &d = f.stage(stage);
    for (size_t i = 0; i < d.args.size() && i < f.args.size(); ++i) {
        const auto *v = d.args[i].as<Variable>();
        if (v && v->kind == VariableKind::Pure && v->name == f.args[i]) {
            n.loops.push_back(v->name);
            n.is_reduction.push_back(false);
        }
    }
    if (d.rdom)
        for (auto it = d.rdom->vars.rbegin(); it != d.rdom->vars.rend(); ++it) {
            n.loops.push_back(it->name);
            n.is_reduction.push_back(true);
        }
    return n;
}

} // namespace internal

namespace {

using internal::FunctionContents;

std::vector<std::string> names_of(const std::vector<VarOrRVar> &vs) {
    std::vector<std::string> out;
    for (const auto &v : vs) out.push_back(v.name());
    return out;
}

// Records a loop directive on (f, stage) after replaying it on the stage's loops.
void record_loop(const std::shared_ptr<FunctionContents> &f, int stage, Directive d) {
    if (!f) throw Error("cannot schedule an undefined Func");
    const std::string stage_name = internal::stage_display_name(f->name, stage);
    auto names = internal::initial_loop_names(*f, stage);
    names = internal::replay_loop_names(stage_name, names, f->schedule.stage(stage));
    internal::apply_loop_names(stage_name, names, d);
    f->schedule.stages[stage].push_back(std::move(d));
}

Directive loop_directive(DirectiveKind kind, std::vector<std::string> vars, std::vector<int64_t> factors = {},
                         TailStrategy tail = TailStrategy::Auto) {
    Directive d;
    d.kind = kind;
    d.vars = std::move(vars);
    d.factors = std::move(factors);
    d.tail = tail;
    return d;
}

Directive split_d(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor, TailStrategy t) {
    return loop_directive(DirectiveKind::Split, {old.name(), outer.name(), inner.name()}, {factor}, t);
}

Directive tile_d(const std::vector<VarOrRVar> &vars, const std::vector<VarOrRVar> &outers,
                 const std::vector<VarOrRVar> &inners, const std::vector<int> &factors, TailStrategy t) {
    std::vector<std::string> all = names_of(vars);
    for (const auto &v : outers) all.push_back(v.name());
    for (const auto &v : inners) all.push_back(v.name());
    return loop_directive(DirectiveKind::Tile, all, std::vector<int64_t>(factors.begin(), factors.end()), t);
}

Directive tensorize_d(const std::string &unit, const std::vector<VarOrRVar> &vars) {
    Directive d = loop_directive(DirectiveKind::Tensorize, names_of(vars));
    d.unit = unit;
    return d;
}

// Func-level directives go on stage 0.
void record_func(const std::shared_ptr<FunctionContents> &f, Directive d) {
    if (!f) throw Error("cannot schedule an undefined Func");
    if (!f->defined())
        throw Error("Func " + f->name + " has no definition yet; define it before " + d.to_string());
    f->schedule.stages[0].push_back(std::move(d));
}

Directive at_d(DirectiveKind kind, const std::shared_ptr<FunctionContents> &consumer, int consumer_stage,
               const VarOrRVar &var) {
    if (!consumer || !consumer->defined())
        throw Error(std::string(directive_kind_name(kind)) + "(" + var.name() + "): the consumer Func is undefined");
    Directive d;
    d.kind = kind;
    d.func = consumer->name;
    d.consumer_stage = consumer_stage;
    d.vars = {var.name()};
    return d;
}

Directive stage_d(const std::shared_ptr<FunctionContents> &consumer, int consumer_stage, const VarOrRVar &var,
                  MemoryKind memory, const Layout &layout) {
    Directive d = at_d(DirectiveKind::Stage, consumer, consumer_stage, var);
    d.memory = memory;
    d.layout = layout;
    return d;
}

} // namespace

VarOrRVar::VarOrRVar(const RDom &r) : name_(r.dimensions() == 1 ? r[0].name() : std::string()), is_rvar_(true) {
    if (r.dimensions() != 1)
        throw Error("RDom " + r.name() + " has " + std::to_string(r.dimensions()) +
                    " dimensions; name one of them (r.x, r.y, ...) in a scheduling directive");
}

// ---- Stage ----------------------------------------------------------------------------------

Stage &Stage::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor,
                    TailStrategy tail) {
    record_loop(func_, stage_index_, split_d(old, outer, inner, factor, tail));
    return *this;
}
Stage &Stage::fuse(const VarOrRVar &a, const VarOrRVar &b, const VarOrRVar &fused) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Fuse, {a.name(), b.name(), fused.name()}));
    return *this;
}
Stage &Stage::reorder(const std::vector<VarOrRVar> &vars) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Reorder, names_of(vars)));
    return *this;
}
Stage &Stage::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                   const VarOrRVar &xi, const VarOrRVar &yi, int xfactor, int yfactor, TailStrategy tail) {
    record_loop(func_, stage_index_, tile_d({x, y}, {xo, yo}, {xi, yi}, {xfactor, yfactor}, tail));
    return *this;
}
Stage &Stage::tile(const std::vector<VarOrRVar> &vars, const std::vector<VarOrRVar> &outers,
                   const std::vector<VarOrRVar> &inners, const std::vector<int> &factors, TailStrategy tail) {
    if (vars.size() != outers.size() || vars.size() != inners.size() || vars.size() != factors.size())
        throw Error("schedule of " + internal::stage_display_name(func_name(), stage_index_) +
                    ": tile needs as many outer names, inner names and factors as loops");
    record_loop(func_, stage_index_, tile_d(vars, outers, inners, factors, tail));
    return *this;
}
Stage &Stage::vectorize(const VarOrRVar &v) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Vectorize, {v.name()}));
    return *this;
}
Stage &Stage::vectorize(const VarOrRVar &v, int factor, TailStrategy tail) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Vectorize, {v.name()}, {factor}, tail));
    return *this;
}
Stage &Stage::unroll(const VarOrRVar &v) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Unroll, {v.name()}));
    return *this;
}
Stage &Stage::unroll(const VarOrRVar &v, int factor, TailStrategy tail) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Unroll, {v.name()}, {factor}, tail));
    return *this;
}
Stage &Stage::parallel(const VarOrRVar &v) {
    record_loop(func_, stage_index_, loop_directive(DirectiveKind::Parallel, {v.name()}));
    return *this;
}
Stage &Stage::tensorize(const std::string &unit, const std::vector<VarOrRVar> &vars) {
    record_loop(func_, stage_index_, tensorize_d(unit, vars));
    return *this;
}
const std::vector<Directive> &Stage::directives() const { return func_->schedule.stage(stage_index_); }

// ---- Func -----------------------------------------------------------------------------------

Func &Func::split(const VarOrRVar &old, const VarOrRVar &outer, const VarOrRVar &inner, int factor,
                  TailStrategy tail) {
    record_loop(contents_, 0, split_d(old, outer, inner, factor, tail));
    return *this;
}
Func &Func::fuse(const VarOrRVar &a, const VarOrRVar &b, const VarOrRVar &fused) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Fuse, {a.name(), b.name(), fused.name()}));
    return *this;
}
Func &Func::reorder(const std::vector<VarOrRVar> &vars) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Reorder, names_of(vars)));
    return *this;
}
Func &Func::tile(const VarOrRVar &x, const VarOrRVar &y, const VarOrRVar &xo, const VarOrRVar &yo,
                 const VarOrRVar &xi, const VarOrRVar &yi, int xfactor, int yfactor, TailStrategy tail) {
    record_loop(contents_, 0, tile_d({x, y}, {xo, yo}, {xi, yi}, {xfactor, yfactor}, tail));
    return *this;
}
Func &Func::tile(const std::vector<VarOrRVar> &vars, const std::vector<VarOrRVar> &outers,
                 const std::vector<VarOrRVar> &inners, const std::vector<int> &factors, TailStrategy tail) {
    if (vars.size() != outers.size() || vars.size() != inners.size() || vars.size() != factors.size())
        throw Error("schedule of " + name() + ": tile needs as many outer names, inner names and factors as loops");
    record_loop(contents_, 0, tile_d(vars, outers, inners, factors, tail));
    return *this;
}
Func &Func::vectorize(const VarOrRVar &v) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Vectorize, {v.name()}));
    return *this;
}
Func &Func::vectorize(const VarOrRVar &v, int factor, TailStrategy tail) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Vectorize, {v.name()}, {factor}, tail));
    return *this;
}
Func &Func::unroll(const VarOrRVar &v) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Unroll, {v.name()}));
    return *this;
}
Func &Func::unroll(const VarOrRVar &v, int factor, TailStrategy tail) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Unroll, {v.name()}, {factor}, tail));
    return *this;
}
Func &Func::parallel(const VarOrRVar &v) {
    record_loop(contents_, 0, loop_directive(DirectiveKind::Parallel, {v.name()}));
    return *this;
}
Func &Func::tensorize(const std::string &unit, const std::vector<VarOrRVar> &vars) {
    record_loop(contents_, 0, tensorize_d(unit, vars));
    return *this;
}

Func &Func::compute_inline() {
    Directive d;
    d.kind = DirectiveKind::ComputeInline;
    record_func(contents_, d);
    return *this;
}
Func &Func::compute_root() {
    Directive d;
    d.kind = DirectiveKind::ComputeRoot;
    record_func(contents_, d);
    return *this;
}
Func &Func::compute_at(const Func &consumer, const VarOrRVar &var) {
    record_func(contents_, at_d(DirectiveKind::ComputeAt, consumer.contents(), -1, var));
    return *this;
}
Func &Func::compute_at(const Stage &consumer, const VarOrRVar &var) {
    record_func(contents_, at_d(DirectiveKind::ComputeAt, consumer.function(), consumer.index(), var));
    return *this;
}
Func &Func::store_root() {
    Directive d;
    d.kind = DirectiveKind::StoreRoot;
    record_func(contents_, d);
    return *this;
}
Func &Func::store_at(const Func &consumer, const VarOrRVar &var) {
    record_func(contents_, at_d(DirectiveKind::StoreAt, consumer.contents(), -1, var));
    return *this;
}
Func &Func::store_at(const Stage &consumer, const VarOrRVar &var) {
    record_func(contents_, at_d(DirectiveKind::StoreAt, consumer.function(), consumer.index(), var));
    return *this;
}
Func &Func::stage(const Func &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout) {
    Directive d = stage_d(consumer.contents(), -1, var, memory, layout);
    if (consumer.contents() == contents_) throw Error("schedule of " + name() + ": " + d.to_string() + ": a Func cannot stage itself");
    record_func(contents_, d);
    return *this;
}
Func &Func::store_in(MemoryKind memory, int bank) {
    Directive d;
    d.kind = DirectiveKind::StoreIn;
    d.memory = memory;
    d.bank = bank;
    if (bank < -1) throw Error("schedule of " + name() + ": " + d.to_string() + ": a bank is >= 0 (or -1 for any)");
    record_func(contents_, d);
    return *this;
}
Func &Func::layout(const Layout &layout) {
    Directive d;
    d.kind = DirectiveKind::SetLayout;
    d.layout = layout;
    record_func(contents_, d);
    return *this;
}
Func &Func::double_buffer(bool on) {
    Directive d;
    d.kind = DirectiveKind::DoubleBuffer;
    if (!on) d.factors = {0};
    record_func(contents_, d);
    return *this;
}
Func &Func::blocks_per_row(int n) {
    if (n < 1) throw Error(name() + ".blocks_per_row(" + std::to_string(n) + "): needs at least one block a row");
    Directive d;
    d.kind = DirectiveKind::BlocksPerRow;
    d.factors = {n};
    record_func(contents_, d);
    return *this;
}

Func &Func::tile_order(const std::string &order) {
    if (order.empty()) throw Error(name() + ".tile_order(\"\"): name an order (\"rows_snake\", \"rows\", \"columns_snake\", \"columns\")");
    Directive d;
    d.kind = DirectiveKind::TileOrder;
    d.vars = {order};
    record_func(contents_, d);
    return *this;
}

Schedule Func::schedule() const {
    Schedule s;
    if (contents_ && !contents_->schedule.empty()) s.funcs[contents_->name] = contents_->schedule;
    return s;
}

void Func::set_schedule(const Schedule &s) {
    for (const auto &[name, fs] : s.funcs)
        if (name != contents_->name && !fs.empty())
            throw Error("set_schedule on Func " + contents_->name + ": the schedule names Func " + name +
                        ", which is not this Func; use Pipeline::set_schedule for several Funcs");
    // Validate against the pipeline this Func heads, but change only this Func.
    Schedule mine;
    auto it = s.funcs.find(contents_->name);
    if (it != s.funcs.end()) mine.funcs[contents_->name] = it->second;
    Schedule whole = Pipeline(*this).schedule();
    whole.funcs.erase(contents_->name);
    for (const auto &[n, fs] : mine.funcs) whole.funcs[n] = fs;
    Pipeline(*this).set_schedule(whole);
}

// ---- Input ----------------------------------------------------------------------------------

Input &Input::stage(const Func &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout) {
    contents_->schedule.stages[0].push_back(stage_d(consumer.contents(), -1, var, memory, layout));
    return *this;
}
Input &Input::stage(const Stage &consumer, const VarOrRVar &var, MemoryKind memory, const Layout &layout) {
    contents_->schedule.stages[0].push_back(stage_d(consumer.function(), consumer.index(), var, memory, layout));
    return *this;
}

Schedule Input::schedule() const {
    Schedule s;
    if (!contents_->schedule.empty()) s.funcs[contents_->name] = contents_->schedule;
    return s;
}

// ---- Pipeline -------------------------------------------------------------------------------

Schedule Pipeline::schedule() const {
    Schedule s;
    for (const auto &f : functions())
        if (!f.contents()->schedule.empty()) s.funcs[f.name()] = f.contents()->schedule;
    for (const auto &in : inputs())
        if (!in.contents()->schedule.empty()) s.funcs[in.name()] = in.contents()->schedule;
    return s;
}

namespace {

// An Input's entry may only stage it (an Input has no loops, storage or computation of its own).
void check_input_schedule(const std::string &name, const FuncSchedule &fs, const std::vector<std::string> &funcs) {
    for (const auto &[stage, ds] : fs.stages)
        for (const auto &d : ds) {
            if (stage != 0 || d.kind != DirectiveKind::Stage)
                throw Error("set_schedule: Input " + name + ": " + d.to_string() +
                            ": an Input takes only stage(consumer, loop, memory[, layout]), on stage 0");
            if (std::find(funcs.begin(), funcs.end(), d.func) == funcs.end())
                throw Error("set_schedule: Input " + name + ": " + d.to_string() + " names Func " + d.func +
                            ", which is not in this pipeline; its Funcs are " + internal::join_names(funcs));
        }
}

} // namespace

void Pipeline::set_schedule(const Schedule &s) const {
    std::vector<Func> funcs = functions();
    std::vector<Input> ins = inputs();
    std::vector<std::string> names, input_names;
    for (const auto &f : funcs) names.push_back(f.name());
    for (const auto &in : ins) input_names.push_back(in.name());
    // Validate everything before changing anything.
    for (const auto &[name, fs] : s.funcs) {
        auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) {
            if (fs.empty()) continue;
            if (std::find(input_names.begin(), input_names.end(), name) != input_names.end()) {
                check_input_schedule(name, fs, names);
                continue;
            }
            throw Error("set_schedule: the schedule names Func " + name + ", which is not in this pipeline; its Funcs are " +
                        internal::join_names(names) + (input_names.empty() ? "" : " and its Inputs " +
                        internal::join_names(input_names)));
        }
        const FunctionContents &f = *funcs[static_cast<size_t>(it - names.begin())].contents();
        for (const auto &[stage, ds] : fs.stages) {
            if (ds.empty()) continue;
            auto loops = internal::initial_loop_names(f, stage);
            internal::replay_loop_names(internal::stage_display_name(name, stage), loops, ds);
            for (const auto &d : ds) {
                if (!is_loop_directive(d.kind) && stage != 0)
                    throw Error("set_schedule: " + internal::stage_display_name(name, stage) + ": " + d.to_string() +
                                " applies to the whole Func and belongs to stage 0");
                if (!d.func.empty() && std::find(names.begin(), names.end(), d.func) == names.end())
                    throw Error("set_schedule: " + internal::stage_display_name(name, stage) + ": " + d.to_string() +
                                " names Func " + d.func + ", which is not in this pipeline; its Funcs are " +
                                internal::join_names(names));
            }
        }
    }
    for (auto &f : funcs) {
        auto it = s.funcs.find(f.name());
        f.contents()->schedule = it == s.funcs.end() ? FuncSchedule{} : it->second;
    }
    for (auto &in : ins) {
        if (std::find(names.begin(), names.end(), in.name()) != names.end()) continue; // the Func's entry
        auto it = s.funcs.find(in.name());
        in.contents()->schedule = it == s.funcs.end() ? FuncSchedule{} : it->second;
    }
}

} // namespace tessera
