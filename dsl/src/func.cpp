// The front end: Var, RVar, RDom, Param, Input, Func, Stage and Pipeline, and the checks that
// turn every misuse of a definition into a tessera::Error naming the Func and what to do.
#include "tessera/func.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <map>
#include <set>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera {

using internal::Definition;
using internal::FunctionContents;
using internal::InputContents;
using internal::ReductionDomainContents;
using internal::ReductionVariable;

namespace {

/// A fresh name that user names are unlikely to collide with ("_v0", "_f3", ...).
std::string unique_name(char prefix) {
    static std::atomic<int> counter{0};
    return std::string("_") + prefix + std::to_string(counter++);
}

std::string join(const std::vector<std::string> &names) {
    std::string s;
    for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
    return s;
}

std::string join(const std::vector<Expr> &exprs) {
    std::string s;
    for (size_t i = 0; i < exprs.size(); ++i) s += (i ? ", " : "") + to_string(exprs[i]);
    return s;
}

/// `e` as an Int(32) coordinate. Narrower integer types widen; integer constants adapt if they
/// fit; anything else is an error that says what to write instead.
Expr to_coordinate(const Expr &e, const std::string &what) {
    if (!e.defined()) throw Error(what + " is an undefined Expr (declared but never given a value)");
    const Type t = e.type();
    if (t == Int(32)) return e;
    if (t.is_float())
        throw Error(what + " is " + to_string(e) + " of type " + t.to_string() +
                    "; it must be an integer: write cast<int>(...) (after floor() or round() if needed)");
    if (t.is_bool())
        throw Error(what + " is " + to_string(e) + " of type bool; it must be an integer: write select(c, 1, 0)");
    if (auto v = as_const_int(e)) {
        if (Int(32).can_represent(*v) && !(t == UInt(64) && static_cast<uint64_t>(*v) > INT64_MAX))
            return IntImm::make(Int(32), *v);
        throw Error(what + " is the constant " + to_string(e) + ", which does not fit int32");
    }
    if (Int(32).can_represent(t)) return Cast::make(Int(32), e);
    throw Error(what + " is " + to_string(e) + " of type " + t.to_string() +
                ", which may not fit int32 coordinates; write cast<int>(...) explicitly");
}

/// What a definition's expressions refer to.
class ReferenceCollector : public IRVisitor {
public:
    struct Use {
        std::string name;
        VariableKind kind;
        std::shared_ptr<const ReductionDomainContents> rdom;
    };
    std::vector<Use> variables; ///< free Pure/Loop/Let variables and RVars, each once, in order
    std::vector<std::shared_ptr<FunctionContents>> funcs;

    void visit(const Variable *op) override {
        if (op->kind == VariableKind::Param) return;
        if (bound_.count(op->name) && (op->kind == VariableKind::Let || op->kind == VariableKind::Pure)) return;
        for (const Use &u : variables)
            if (u.name == op->name && u.kind == op->kind) return;
        variables.push_back({op->name, op->kind, op->rdom});
    }
    void visit(const Let *op) override {
        include(op->value);
        const bool was_bound = bound_.count(op->name) > 0;
        bound_.insert(op->name);
        include(op->body);
        if (!was_bound) bound_.erase(op->name);
    }
    void visit(const Call *op) override {
        if (op->call_type == CallType::Func) {
            auto f = op->func.get();
            bool seen = false;
            for (const auto &g : funcs) seen = seen || g == f;
            if (!seen) funcs.push_back(f);
        }
        IRVisitor::visit(op);
    }

private:
    std::set<std::string> bound_;
};

ReferenceCollector collect(const std::vector<Expr> &exprs) {
    ReferenceCollector c;
    for (const Expr &e : exprs) c.include(e);
    return c;
}

/// Rejects variables that may not appear in RDom bounds or Input shapes (which may use only
/// constants and Params).
void require_static(const Expr &e, const std::string &what) {
    ReferenceCollector c;
    c.include(e);
    if (!c.variables.empty())
        throw Error(what + " is " + to_string(e) + ", which uses " +
                    (c.variables[0].kind == VariableKind::Reduction ? "RVar " : "Var ") + c.variables[0].name +
                    "; it may use only constants and Params");
    if (!c.funcs.empty() || !internal::find_inputs(e).empty())
        throw Error(what + " is " + to_string(e) + ", which reads a Func or an Input; it may use only constants and Params");
    if (auto v = as_const_int(e); v && *v < 0) throw Error(what + " is negative (" + std::to_string(*v) + ")");
}

/// Replaces strong Calls to `self` with weak ones, so a Func's updates do not keep it alive.
class WeakenSelfCalls : public IRMutator {
public:
    explicit WeakenSelfCalls(const std::shared_ptr<FunctionContents> &self) : self_(self) {}

protected:
    using IRMutator::visit;
    Expr visit(const Call *op, const Expr &e) override {
        std::vector<Expr> args;
        const bool changed = mutate_all(op->args, args);
        if (op->call_type == CallType::Func && op->func.strong == self_)
            return Call::make_func(op->type, FunctionRef::make_weak(self_), std::move(args));
        if (!changed) return e;
        switch (op->call_type) {
        case CallType::Func: return Call::make_func(op->type, op->func, std::move(args));
        case CallType::Input: return Call::make_input(op->input, std::move(args));
        case CallType::Intrinsic: break;
        }
        return Call::make_intrinsic(op->intrinsic, std::move(args));
    }

private:
    std::shared_ptr<FunctionContents> self_;
};

/// Strips the domain pointer from this domain's RVars (for storing a where-predicate inside
/// the domain without a reference cycle); RVars of any other domain are an error.
class DetachRVars : public IRMutator {
public:
    DetachRVars(const ReductionDomainContents *dom) : dom_(dom) {}

protected:
    using IRMutator::visit;
    Expr visit(const Variable *op, const Expr &e) override {
        if (op->kind != VariableKind::Reduction) return e;
        if (op->rdom.get() != dom_)
            throw Error("RDom " + dom_->name + ": the where() predicate uses RVar " + op->name +
                        ", which belongs to another RDom; a predicate may use only its own RDom's RVars");
        return Variable::make(op->type, op->name, VariableKind::Reduction);
    }

private:
    const ReductionDomainContents *dom_;
};

const char *const kDimensionNames[] = {"x", "y", "z", "w"};

} // namespace

// ---------------------------------------------------------------------------------------------
// Var, RVar, RDom

Var::Var() : name_(unique_name('v')) {}

Var::Var(const std::string &name) : name_(name) {
    if (name.empty()) throw Error("Var: the name is empty; give it a name, or use Var() for a fresh unique one");
}

Var::operator Expr() const { return Variable::make(Int(32), name_, VariableKind::Pure); }

RVar::RVar(std::shared_ptr<ReductionDomainContents> dom, int index) : dom_(std::move(dom)), index_(index) {}

namespace {
const ReductionVariable &rvar_of(const std::shared_ptr<ReductionDomainContents> &dom, int index) {
    if (!dom) throw Error("RVar: this RVar belongs to no RDom; take RVars from an RDom (r.x, r[0])");
    if (index < 0 || index >= static_cast<int>(dom->vars.size())) {
        const std::string dim = index >= 0 && index < 4 ? kDimensionNames[index] : std::to_string(index);
        throw Error("RDom " + dom->name + " has " + std::to_string(dom->vars.size()) + " dimension" +
                    (dom->vars.size() == 1 ? "" : "s") + ", so " + dom->name + "." + dim + " does not exist");
    }
    return dom->vars[static_cast<size_t>(index)];
}
} // namespace

const std::string &RVar::name() const { return rvar_of(dom_, index_).name; }
Expr RVar::min() const { return rvar_of(dom_, index_).min; }
Expr RVar::extent() const { return rvar_of(dom_, index_).extent; }

RDom RVar::domain() const {
    if (!dom_) throw Error("RVar: this RVar belongs to no RDom");
    return RDom(dom_);
}

RVar::operator Expr() const {
    return Variable::make(Int(32), name(), VariableKind::Reduction, dom_);
}

RDom::RDom(Expr min0, Expr extent0, const std::string &name) : RDom(std::vector<Range>{{min0, extent0}}, name) {}

RDom::RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, const std::string &name)
    : RDom(std::vector<Range>{{min0, extent0}, {min1, extent1}}, name) {}

RDom::RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, const std::string &name)
    : RDom(std::vector<Range>{{min0, extent0}, {min1, extent1}, {min2, extent2}}, name) {}

RDom::RDom(Expr min0, Expr extent0, Expr min1, Expr extent1, Expr min2, Expr extent2, Expr min3, Expr extent3,
           const std::string &name)
    : RDom(std::vector<Range>{{min0, extent0}, {min1, extent1}, {min2, extent2}, {min3, extent3}}, name) {}

RDom::RDom(const std::vector<Range> &ranges, const std::string &name) {
    auto dom = std::make_shared<ReductionDomainContents>();
    dom->name = name.empty() ? unique_name('r') : name;
    if (ranges.empty()) throw Error("RDom " + dom->name + ": a reduction domain needs at least one dimension");
    for (size_t i = 0; i < ranges.size(); ++i) {
        // A one-dimensional domain's RVar carries the domain's own name, so `RDom k(0, 256, "k")`
        // reads as k everywhere; several dimensions are named k.x, k.y, k.z, k.w, k.4, ...
        const std::string var_name =
            ranges.size() == 1 ? dom->name
                               : dom->name + "." + (i < 4 ? std::string(kDimensionNames[i]) : std::to_string(i));
        const std::string where = "RDom " + dom->name + ": the ";
        const std::string dim = " of dimension " + std::to_string(i) + " (" + var_name + ")";
        if (!ranges[i].min.defined()) throw Error(where + "min" + dim + " is an undefined Expr");
        if (!ranges[i].extent.defined()) throw Error(where + "extent" + dim + " is an undefined Expr; give it a value (a constant or an Expr of Params)");
        Expr mn = to_coordinate(ranges[i].min, where + "min" + dim);
        Expr ext = to_coordinate(ranges[i].extent, where + "extent" + dim);
        require_static(ext, where + "extent" + dim);
        if (auto v = as_const_int(mn); !v) require_static(mn, where + "min" + dim);
        dom->vars.push_back({var_name, mn, ext});
    }
    dom_ = std::move(dom);
    init_dimension_names();
}

RDom::RDom(std::shared_ptr<ReductionDomainContents> dom) : dom_(std::move(dom)) {
    if (!dom_) throw Error("RDom: constructed from empty contents");
    init_dimension_names();
}

void RDom::init_dimension_names() {
    x = RVar(dom_, 0);
    y = RVar(dom_, 1);
    z = RVar(dom_, 2);
    w = RVar(dom_, 3);
}

void RDom::where(Expr predicate) {
    if (!dom_) throw Error("RDom::where: this RDom has no dimensions; construct it with bounds first");
    if (!predicate.defined()) throw Error("RDom " + dom_->name + ": the where() predicate is an undefined Expr");
    if (!predicate.type().is_bool())
        throw Error("RDom " + dom_->name + ": the where() predicate " + to_string(predicate) + " has type " +
                    predicate.type().to_string() + " but must be bool (a comparison such as " + dom_->vars[0].name +
                    " < 10)");
    if (dom_->used_in_definition)
        throw Error("RDom " + dom_->name +
                    ": where() is called after a definition already uses this RDom; restrict the RDom before "
                    "using it (the earlier definition would otherwise change silently)");
    Expr detached = DetachRVars(dom_.get()).mutate(predicate);
    dom_->predicate = dom_->predicate.defined() ? (dom_->predicate && detached) : detached;
}

int RDom::dimensions() const { return dom_ ? static_cast<int>(dom_->vars.size()) : 0; }

RVar RDom::operator[](int i) const {
    rvar_of(dom_, i); // checks i
    return RVar(dom_, i);
}

const std::string &RDom::name() const {
    if (!dom_) throw Error("RDom: this RDom was default-constructed and has no name or dimensions");
    return dom_->name;
}

RDom::operator RVar() const {
    if (dimensions() != 1)
        throw Error("RDom " + name() + " has " + std::to_string(dimensions()) + " dimensions; use " + name() + ".x, " +
                    name() + ".y, ... rather than the RDom itself");
    return RVar(dom_, 0);
}

RDom::operator Expr() const { return Expr(static_cast<RVar>(*this)); }

// ---------------------------------------------------------------------------------------------
// Param, Input

internal::ParamBase::ParamBase(Type type, const std::string &name) : type_(type), name_(name) {
    if (name.empty()) throw Error("Param: the name is empty; a Param is bound by name at realize time, so it needs one");
}

internal::ParamBase::operator Expr() const { return Variable::make(type_, name_, VariableKind::Param); }

Input::Input(Type type, std::vector<Expr> shape, const std::string &name) {
    if (name.empty()) throw Error("Input: the name is empty; an Input is bound by name, so it needs one");
    auto c = std::make_shared<InputContents>();
    c->name = name;
    c->type = type;
    for (size_t d = 0; d < shape.size(); ++d) {
        const std::string what = "Input " + name + ": the extent of dimension " + std::to_string(d);
        Expr e = to_coordinate(shape[d], what);
        require_static(e, what);
        c->shape.push_back(std::move(e));
    }
    contents_ = std::move(c);
}

Input::Input(std::shared_ptr<const InputContents> contents) : contents_(std::move(contents)) {
    if (!contents_) throw Error("Input: constructed from empty contents");
}

const std::string &Input::name() const { return contents_->name; }
Type Input::type() const { return contents_->type; }
int Input::dimensions() const { return static_cast<int>(contents_->shape.size()); }
const std::vector<Expr> &Input::shape() const { return contents_->shape; }

Expr Input::operator()(std::vector<Expr> args) const {
    if (args.size() != contents_->shape.size())
        throw Error("Input " + name() + " has " + std::to_string(contents_->shape.size()) + " dimension" +
                    (contents_->shape.size() == 1 ? "" : "s") + " but is read with " + std::to_string(args.size()) +
                    " coordinate" + (args.size() == 1 ? "" : "s") + " " + name() + "(" + join(args) +
                    "); give one coordinate per dimension, outermost first");
    for (size_t i = 0; i < args.size(); ++i)
        args[i] = to_coordinate(args[i], "coordinate " + std::to_string(i) + " of Input " + name());
    return Call::make_input(contents_, std::move(args));
}

// ---------------------------------------------------------------------------------------------
// Definitions

namespace {

/// Adds the pure definition f(args) = value.
Stage define_pure(const std::shared_ptr<FunctionContents> &f, const std::vector<Expr> &args, const Expr &value) {
    const std::string lhs = f->name + "(" + join(args) + ")";
    std::vector<std::string> names;
    for (size_t i = 0; i < args.size(); ++i) {
        const Expr &a = args[i];
        if (!a.defined()) throw Error("Func " + f->name + ": argument " + std::to_string(i) + " of " + lhs + " is an undefined Expr");
        const Variable *v = a.as<Variable>();
        if (v && v->kind == VariableKind::Reduction)
            throw Error("the pure definition of Func " + f->name + " has RVar " + v->name + " on its left (" + lhs +
                        "); a pure definition ranges over Vars: define " + f->name +
                        " over Vars first, then add a reduction as an update");
        if (!v || v->kind != VariableKind::Pure)
            throw Error("the pure definition of Func " + f->name + " needs Vars as arguments, but argument " +
                        std::to_string(i) + " of " + lhs + " is " + to_string(a) + "; define " + f->name +
                        " everywhere first (with Vars), then write to particular points in an update");
        for (const std::string &n : names)
            if (n == v->name)
                throw Error("Var " + v->name + " appears twice on the left of the pure definition " + lhs +
                            " of Func " + f->name + "; each argument needs its own Var");
        names.push_back(v->name);
    }
    if (!value.defined())
        throw Error("the value of the pure definition " + lhs + " of Func " + f->name + " is an undefined Expr");
    const ReferenceCollector refs = collect({value});
    for (const auto &u : refs.variables) {
        if (u.kind == VariableKind::Reduction)
            throw Error("the pure definition " + lhs + " of Func " + f->name + " uses RVar " + u.name +
                        "; a reduction needs an update definition: " + f->name + "(...) = <initial value>; then " +
                        f->name + "(...) += ...");
        bool bound = false;
        for (const std::string &n : names) bound = bound || n == u.name;
        if (!bound)
            throw Error("the definition " + lhs + " = " + to_string(value) + " of Func " + f->name + " uses Var " +
                        u.name + ", which does not appear on its left-hand side; add " + u.name +
                        " as an argument of " + f->name + " or replace it");
    }
    for (const auto &g : refs.funcs)
        if (g->used_by.empty()) g->used_by = f->name;
    f->type = value.type();
    f->args = names;
    f->init = Definition{args, value, nullptr};
    return Stage(f, 0);
}

/// The left-hand side of the next update of f, checked: f may still take updates, there is one
/// Int(32) coordinate per dimension, and each pure Var stands as itself in its own position.
std::vector<Expr> checked_update_args(const FunctionContents &f, std::vector<Expr> args) {
    const std::string which = "update " + std::to_string(f.updates.size()) + " of Func " + f.name;
    const std::string lhs = f.name + "(" + join(args) + ")";
    if (!f.used_by.empty())
        throw Error("Func " + f.name + " is already used by Func " + f.used_by + ", so it cannot get another update (" +
                    lhs + " = ...): it would silently change " + f.used_by + "; give " + f.name +
                    " all its updates before using it");
    if (args.size() != f.args.size())
        throw Error(which + " (" + lhs + ") has " + std::to_string(args.size()) + " argument" +
                    (args.size() == 1 ? "" : "s") + " but Func " + f.name + " has " + std::to_string(f.args.size()) +
                    " (" + f.name + "(" + join(f.args) + ")); give one coordinate per dimension");
    for (size_t i = 0; i < args.size(); ++i) {
        args[i] = to_coordinate(args[i], "argument " + std::to_string(i) + " of " + which + " (" + lhs + ")");
        if (const Variable *v = args[i].as<Variable>(); v && v->kind == VariableKind::Pure) {
            if (v->name != f.args[i])
                throw Error("in " + which + " (" + lhs + "), Var " + v->name + " is argument " + std::to_string(i) +
                            ", but the pure definition has " + f.args[i] +
                            " there; an update uses each pure Var only in its own position");
            continue;
        }
        for (const auto &u : collect({args[i]}).variables)
            if (u.kind == VariableKind::Pure)
                throw Error("in " + which + " (" + lhs + "), argument " + std::to_string(i) + " is " +
                            to_string(args[i]) + ", an expression of pure Var " + u.name +
                            "; pure Vars may appear on the left of an update only as themselves, in their own position");
    }
    return args;
}

/// Adds the update f(args) = value.
Stage define_update(const std::shared_ptr<FunctionContents> &f, std::vector<Expr> args, Expr value) {
    const int index = static_cast<int>(f->updates.size());
    const std::string which = "update " + std::to_string(index) + " of Func " + f->name;
    args = checked_update_args(*f, std::move(args));
    const std::string lhs = f->name + "(" + join(args) + ")";
    if (!value.defined()) throw Error("the value of " + which + " (" + lhs + " = ...) is an undefined Expr");
    value = convert_for_assignment(value, f->type, which + " (" + lhs + " = " + to_string(value) + ")");

    // Which variables the update may use: the pure Vars that stand bare on its left, and the
    // RVars of one RDom.
    std::set<std::string> bound_vars;
    for (const Expr &a : args)
        if (const Variable *v = a.as<Variable>(); v && v->kind == VariableKind::Pure) bound_vars.insert(v->name);
    std::vector<Expr> exprs = args;
    exprs.push_back(value);
    ReferenceCollector refs = collect(exprs);
    std::shared_ptr<const ReductionDomainContents> rdom;
    for (const auto &u : refs.variables) {
        if (u.kind != VariableKind::Reduction) continue;
        if (!u.rdom)
            throw Error(which + " uses RVar " + u.name +
                        ", which is not attached to an RDom; take RVars from an RDom (r.x, r[0])");
        if (rdom && rdom != u.rdom)
            throw Error(which + " uses RVars of two RDoms, " + rdom->name + " and " + u.rdom->name +
                        "; one update reduces over one RDom: make one RDom with several dimensions");
        rdom = u.rdom;
    }
    if (rdom) {
        for (const auto &rv : rdom->vars)
            if (std::find(f->args.begin(), f->args.end(), rv.name) != f->args.end())
                throw Error(which + ": RVar " + rv.name + " has the same name as a pure Var of " + f->name +
                            "; rename one of them");
        if (rdom->predicate.defined()) {
            for (const auto &u : collect({rdom->predicate}).variables)
                if (u.kind != VariableKind::Reduction) refs.variables.push_back(u);
            for (const auto &g : collect({rdom->predicate}).funcs) refs.funcs.push_back(g);
        }
    }
    for (const auto &u : refs.variables) {
        if (u.kind == VariableKind::Reduction) continue;
        if (!bound_vars.count(u.name))
            throw Error(which + " (" + lhs + " = " + to_string(value) + ") uses Var " + u.name +
                        ", which does not stand on its left-hand side; an update may use only the pure Vars that "
                        "appear as themselves among its arguments (and RVars)");
    }
    for (const auto &g : refs.funcs)
        if (g != f && g->used_by.empty()) g->used_by = f->name;
    if (rdom) rdom->used_in_definition = true;

    WeakenSelfCalls weaken(f);
    std::vector<Expr> weak_args;
    weaken.mutate_all(args, weak_args);
    f->updates.push_back(Definition{std::move(weak_args), weaken.mutate(value), rdom});
    return Stage(f, index + 1);
}

/// The pure argument names for a Func first defined by `f(args) op= value`: a bare Var keeps
/// its name (so the update's Vars name the pure loops too); other positions get "_i".
std::vector<Expr> implicit_pure_args(const std::vector<Expr> &args) {
    std::vector<Expr> pure;
    std::set<std::string> used;
    for (size_t i = 0; i < args.size(); ++i) {
        const Variable *v = args[i].defined() ? args[i].as<Variable>() : nullptr;
        if (v && v->kind == VariableKind::Pure && used.insert(v->name).second)
            pure.push_back(args[i]);
        else
            pure.push_back(Variable::make(Int(32), "_" + std::to_string(i), VariableKind::Pure));
    }
    return pure;
}

} // namespace

FuncRef::FuncRef(std::shared_ptr<FunctionContents> func, std::vector<Expr> args)
    : func_(std::move(func)), args_(std::move(args)) {}

Stage FuncRef::operator=(Expr value) {
    if (!func_->defined()) return define_pure(func_, args_, value);
    return define_update(func_, args_, std::move(value));
}

Stage FuncRef::operator=(const FuncRef &other) { return (*this) = Expr(other); }

namespace {
/// f(args) op= value: defines f(...) = identity of value's type first if f has no definition.
Stage define_compound(const std::shared_ptr<FunctionContents> &f, const std::vector<Expr> &args, const Expr &value,
                      int identity, const char *op, Expr (*combine)(Expr, Expr)) {
    if (!value.defined())
        throw Error("the value of " + f->name + "(" + join(args) + ") " + op + " ... is an undefined Expr");
    const bool was_defined = f->defined();
    if (!was_defined) define_pure(f, implicit_pure_args(args), make_const(value.type(), int64_t{identity}));
    try {
        // Check the left-hand side before reading f there, so its errors speak of the update.
        const std::vector<Expr> coords = checked_update_args(*f, args);
        return define_update(f, coords, combine(FuncRef(f, coords), value));
    } catch (const Error &) {
        // A failed `f(...) += v` leaves f as it was, so a caller that catches can go on.
        if (!was_defined) {
            f->init = Definition{};
            f->args.clear();
            f->type = Type();
        }
        throw;
    }
}
} // namespace

Stage FuncRef::operator+=(Expr value) {
    return define_compound(func_, args_, value, 0, "+=", [](Expr a, Expr b) { return a + b; });
}
Stage FuncRef::operator-=(Expr value) {
    return define_compound(func_, args_, value, 0, "-=", [](Expr a, Expr b) { return a - b; });
}
Stage FuncRef::operator*=(Expr value) {
    return define_compound(func_, args_, value, 1, "*=", [](Expr a, Expr b) { return a * b; });
}
Stage FuncRef::operator/=(Expr value) {
    return define_compound(func_, args_, value, 1, "/=", [](Expr a, Expr b) { return a / b; });
}

FuncRef::operator Expr() const {
    const FunctionContents &f = *func_;
    if (!f.defined())
        throw Error("Func " + f.name + " is called (" + f.name + "(" + join(args_) +
                    ")) before it has a definition; define it first, e.g. " + f.name + "(x, ...) = ...");
    if (args_.size() != f.args.size())
        throw Error("Func " + f.name + " has " + std::to_string(f.args.size()) + " argument" +
                    (f.args.size() == 1 ? "" : "s") + " (" + f.name + "(" + join(f.args) + ")) but is called with " +
                    std::to_string(args_.size()) + ": " + f.name + "(" + join(args_) + ")");
    std::vector<Expr> coords;
    for (size_t i = 0; i < args_.size(); ++i)
        coords.push_back(to_coordinate(args_[i], "argument " + std::to_string(i) + " of the call " + f.name + "(" +
                                                     join(args_) + ")"));
    return Call::make_func(f.type, FunctionRef(func_), std::move(coords));
}

// ---------------------------------------------------------------------------------------------
// Stage, Func, Pipeline

Stage::Stage(std::shared_ptr<FunctionContents> func, int stage_index) : func_(std::move(func)), stage_index_(stage_index) {}

const std::string &Stage::func_name() const { return func_->name; }

std::string Stage::name() const {
    return stage_index_ == 0 ? func_->name : func_->name + ".update(" + std::to_string(stage_index_ - 1) + ")";
}

Func::Func() : Func(unique_name('f')) {}

Func::Func(const std::string &name) : contents_(std::make_shared<FunctionContents>()) {
    if (name.empty()) throw Error("Func: the name is empty; give it a name, or use Func() for a fresh unique one");
    contents_->name = name;
}

Func::Func(std::shared_ptr<FunctionContents> contents) : contents_(std::move(contents)) {
    if (!contents_) throw Error("Func: constructed from empty contents");
}

const std::string &Func::name() const { return contents_->name; }

namespace {
const FunctionContents &defined_contents(const std::shared_ptr<FunctionContents> &c, const char *what) {
    if (!c->defined())
        throw Error("Func " + c->name + " has no definition yet, so it has no " + what + "; define it first, e.g. " +
                    c->name + "(x, ...) = ...");
    return *c;
}
} // namespace

Type Func::type() const { return defined_contents(contents_, "type").type; }
bool Func::defined() const { return contents_->defined(); }
int Func::dimensions() const { return static_cast<int>(defined_contents(contents_, "dimensions").args.size()); }
std::vector<std::string> Func::args() const { return defined_contents(contents_, "arguments").args; }
int Func::num_updates() const { return static_cast<int>(contents_->updates.size()); }
Expr Func::value() const { return defined_contents(contents_, "value").init.value; }

FuncRef Func::operator()(std::vector<Expr> args) const { return FuncRef(contents_, std::move(args)); }

Stage Func::update(int i) const {
    const int n = num_updates();
    if (i < 0 || i >= n)
        throw Error("Func " + name() + " has " + std::to_string(n) + " update definition" + (n == 1 ? "" : "s") +
                    ", so update(" + std::to_string(i) + ") does not exist" +
                    (n == 0 ? "; schedule the pure definition on the Func itself" : ""));
    return Stage(contents_, i + 1);
}

Pipeline::Pipeline(Func output) : Pipeline(std::vector<Func>{std::move(output)}) {}

Pipeline::Pipeline(std::vector<Func> outputs) : outputs_(std::move(outputs)) {
    if (outputs_.empty()) throw Error("Pipeline: no outputs given; a Pipeline needs at least one Func");
    for (size_t i = 0; i < outputs_.size(); ++i) {
        if (!outputs_[i].defined())
            throw Error("Pipeline: output Func " + outputs_[i].name() + " has no definition; define it first");
        for (size_t j = 0; j < i; ++j)
            if (outputs_[j].name() == outputs_[i].name())
                throw Error("Pipeline: Func " + outputs_[i].name() + " is listed twice as an output");
    }
}

std::vector<Func> Pipeline::functions() const { return internal::topological_order(outputs_); }

std::vector<Input> Pipeline::inputs() const {
    std::vector<Input> inputs = internal::find_inputs(functions());
    for (size_t i = 0; i < inputs.size(); ++i)
        for (size_t j = 0; j < i; ++j)
            if (inputs[i].name() == inputs[j].name())
                throw Error("Pipeline: two different Inputs are both named " + inputs[i].name() +
                            "; Inputs are bound by name, so give them distinct names");
    return inputs;
}

} // namespace tessera
