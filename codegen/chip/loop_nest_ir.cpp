// Queries on the unflattened loop nest shared by the chip compiler's loop-nest passes.
#include "loop_nest_ir.h"

#include "tessera/ir_operator.h"

#include "tessera/ir_mutator.h"
#include "tessera/ir_visitor.h"

#include <algorithm>
#include <functional>
#include <set>

namespace tessera::internal::chip {

namespace {

class Substitute : public IRMutator {
public:
    explicit Substitute(std::map<std::string, Expr> values) : values_(std::move(values)) {}
    using IRMutator::visit;
    Expr visit(const Variable *op, const Expr &e) override {
        auto it = values_.find(op->name);
        return it == values_.end() ? e : it->second;
    }
    Expr visit(const Let *op, const Expr &) override {
        std::map<std::string, Expr> outer = values_;
        values_[op->name] = mutate(op->value);
        Expr body = mutate(op->body);
        values_ = std::move(outer);
        return body;
    }

private:
    std::map<std::string, Expr> values_;
};

class CollectSites : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const For *op) override {
        loops_.push_back({op->name, op->kind});
        op->body.accept(this);
        loops_.pop_back();
    }
    void visit(const LetStmt *op) override {
        auto saved = lets_;
        lets_[op->name] = substitute_vars(op->value, lets_);
        op->body.accept(this);
        lets_ = std::move(saved);
    }
    void visit(const Provide *op) override {
        ProvideSite s;
        s.func = op->name;
        for (const Expr &a : op->args) s.args.push_back(substitute_vars(a, lets_));
        s.value = substitute_vars(op->value, lets_);
        s.loops = loops_;
        for (const SiteLoop &l : loops_)
            if (int st = stage_of_loop(op->name, l.name); st >= 0) {
                s.stage = st;
                break;
            }
        sites.push_back(std::move(s));
    }
    std::vector<ProvideSite> sites;

private:
    std::vector<SiteLoop> loops_;
    std::map<std::string, Expr> lets_;
};

class Mentions : public IRVisitor {
public:
    explicit Mentions(const std::string &name) : name_(name) {}
    using IRVisitor::visit;
    void visit(const Variable *op) override { found |= op->name == name_; }
    bool found = false;

private:
    const std::string &name_;
};

/// Records every Call to a Func it meets (a mutator that changes nothing: it sees every node).
class FuncCalls : public IRMutator {
public:
    using IRMutator::visit;
    Expr visit(const Call *op, const Expr &e) override {
        if (op->call_type == CallType::Func) calls.push_back(e);
        return IRMutator::visit(op, e);
    }
    std::vector<Expr> calls;
};

/// Whether a multiplication of two reads shares a reduction variable, one read with a pure
/// variable the other lacks: acc[i, j] += a[i, k] * b[k, j], convolutions — and weighted
/// stencils, which the GEMM path hands back when it cannot tensorize them.
void collect_products(const Expr &e, bool strict, std::vector<const Mul *> &out) {
    if (const Mul *m = e.as<Mul>()) {
        auto strip = [](Expr x) {
            while (const Cast *c = x.as<Cast>()) x = c->value;
            return x;
        };
        const Call *a = strip(m->a).as<Call>(), *b = strip(m->b).as<Call>();
        if (a && b && a->call_type != CallType::Intrinsic && b->call_type != CallType::Intrinsic) {
            auto vars = [](const Call *c, VariableKind kind) {
                std::set<std::string> out;
                std::function<void(const Expr &)> go = [&](const Expr &x) {
                    if (const Variable *v = x.as<Variable>()) {
                        if (v->kind == kind) out.insert(v->name);
                        return;
                    }
                    for (const Expr &k : operands_of(x)) go(k);
                };
                for (const Expr &x : c->args) go(x);
                return out;
            };
            const auto ra = vars(a, VariableKind::Reduction), rb = vars(b, VariableKind::Reduction);
            const auto pa = vars(a, VariableKind::Pure), pb = vars(b, VariableKind::Pure);
            auto has_other = [](const std::set<std::string> &x, const std::set<std::string> &y) {
                return std::any_of(x.begin(), x.end(), [&](const std::string &v) { return !y.count(v); });
            };
            const bool shared = std::any_of(ra.begin(), ra.end(), [&](const std::string &v) { return rb.count(v) > 0; });
            if (shared && (strict ? has_other(pa, pb) && has_other(pb, pa) : has_other(pa, pb) || has_other(pb, pa))) {
                out.push_back(m);
                return;
            }
        }
    }
    for (const Expr &k : operands_of(e)) collect_products(k, strict, out);
}

} // namespace

/// The operands of an arithmetic node (none for leaves and Calls).
std::vector<Expr> operands_of(const Expr &e) {
    std::vector<Expr> out;
    if (const Cast *c = e.as<Cast>()) out.push_back(c->value);
#define TESSERA_BINARY(T) \
if (const T *op = e.as<T>()) out = {op->a, op->b};
    TESSERA_BINARY(Add) TESSERA_BINARY(Sub) TESSERA_BINARY(Mul) TESSERA_BINARY(Div) TESSERA_BINARY(Mod)
    TESSERA_BINARY(Min) TESSERA_BINARY(Max) TESSERA_BINARY(EQ) TESSERA_BINARY(NE) TESSERA_BINARY(LT) TESSERA_BINARY(LE)
    TESSERA_BINARY(GT) TESSERA_BINARY(GE) TESSERA_BINARY(And) TESSERA_BINARY(Or)
#undef TESSERA_BINARY
    if (const Select *s = e.as<Select>()) out = {s->condition, s->true_value, s->false_value};
    if (const Not *n = e.as<Not>()) out = {n->a};
    return out;
}

std::vector<const Mul *> matmul_products(const Expr &e, bool strict) {
    std::vector<const Mul *> out;
    collect_products(e, strict, out);
    return out;
}

std::optional<std::string> ProvideSite::vectorized_loop() const {
    for (const SiteLoop &l : loops)
        if (l.kind == ForKind::Vectorized && stage_of_loop(func, l.name) == stage) return l.name;
    return std::nullopt;
}

std::vector<ProvideSite> provide_sites(const Stmt &s) {
    CollectSites c;
    s.accept(&c);
    return std::move(c.sites);
}

std::string loop_prefix(const std::string &func, int stage) { return func + ".s" + std::to_string(stage) + "."; }

int stage_of_loop(const std::string &func, const std::string &loop) {
    const std::string p = func + ".s";
    if (loop.rfind(p, 0) != 0) return -1;
    size_t i = p.size(), j = i;
    while (j < loop.size() && loop[j] >= '0' && loop[j] <= '9') ++j;
    if (j == i || j >= loop.size() || loop[j] != '.') return -1;
    return std::stoi(loop.substr(i, j - i));
}

Expr substitute_vars(const Expr &e, const std::map<std::string, Expr> &values) { return Substitute(values).mutate(e); }

bool mentions(const Expr &e, const std::string &name) {
    Mentions m(name);
    e.accept(&m);
    return m.found;
}

std::vector<Expr> func_calls(const Expr &e) {
    FuncCalls f;
    f.mutate(e);
    return std::move(f.calls);
}

/// The value of a constant (an immediate of any type, or one converted to another type).
std::optional<double> immediate(const Expr &e) {
    if (const FloatImm *f = e.as<FloatImm>()) return f->value;
    if (auto i = as_const_int(e)) return double(*i);
    if (const UIntImm *u = e.as<UIntImm>()) return double(u->value);
    if (const Cast *c = e.as<Cast>())
        if (auto v = immediate(c->value)) {
            if (c->type.is_float()) return c->type.bits() == 16 ? std::nullopt : std::optional<double>(float(*v));
            if (c->value.type().is_float()) return std::nullopt; // truncation: leave it to the VXM's rules
            return v;
        }
    return std::nullopt;
}

} // namespace tessera::internal::chip
