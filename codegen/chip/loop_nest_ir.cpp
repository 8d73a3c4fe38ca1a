// Queries on the unflattened loop nest shared by the chip compiler's loop-nest passes.
#include "loop_nest_ir.h"

#include "tessera/ir_mutator.h"
#include "tessera/ir_visitor.h"

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

} // namespace

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

} // namespace tessera::internal::chip
