// Queries over Func definitions: which Funcs, Inputs and Params an algorithm uses, and the
// producers-first order in which its Funcs are computed.
#include <functional>
#include <set>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

/// Collects Calls to Funcs and Inputs and Param variables, each once, in order of appearance.
class UseCollector : public IRVisitor {
public:
    std::vector<Func> funcs;
    std::vector<Input> inputs;
    std::vector<ParamInfo> params;

    void visit(const Call *op) override {
        if (op->call_type == CallType::Func) {
            auto f = op->func.get();
            if (seen_funcs_.insert(f.get()).second) funcs.emplace_back(f);
        } else if (op->call_type == CallType::Input) {
            if (seen_inputs_.insert(op->input.get()).second) {
                inputs.emplace_back(op->input);
                // An Input's shape may read Params.
                for (const Expr &e : op->input->shape) include(e);
            }
        }
        IRVisitor::visit(op);
    }
    void visit(const Variable *op) override {
        if (op->kind == VariableKind::Param && seen_params_.insert(op->name).second)
            params.push_back({op->name, op->type});
    }

private:
    std::set<const FunctionContents *> seen_funcs_;
    std::set<const InputContents *> seen_inputs_;
    std::set<std::string> seen_params_;
};

std::vector<Expr> all_definition_exprs(const FunctionContents &f) {
    std::vector<Expr> all;
    for (int s = 0; s < f.num_stages(); ++s) {
        if (!f.stage(s).defined()) continue;
        std::vector<Expr> d = definition_exprs(f.stage(s));
        all.insert(all.end(), d.begin(), d.end());
    }
    return all;
}

} // namespace

bool writes_its_own_point(const FunctionContents &f, const Definition &u) {
    if (u.args.size() != f.args.size()) return false;
    for (size_t d = 0; d < u.args.size(); ++d) {
        const auto *v = u.args[d].as<Variable>();
        if (!v || v->name != f.args[d]) return false;
    }
    return true;
}

std::vector<Expr> definition_exprs(const Definition &d) {
    std::vector<Expr> all = d.args;
    all.push_back(d.value);
    if (d.rdom) {
        for (const ReductionVariable &v : d.rdom->vars) {
            all.push_back(v.min);
            all.push_back(v.extent);
        }
        if (d.rdom->predicate.defined()) all.push_back(d.rdom->predicate);
    }
    return all;
}

std::vector<Func> called_functions(const Expr &e) {
    UseCollector c;
    c.include(e);
    return c.funcs;
}

std::vector<Func> direct_producers(const Func &f) {
    UseCollector c;
    for (const Expr &e : all_definition_exprs(*f.contents())) c.include(e);
    std::vector<Func> result;
    for (const Func &g : c.funcs)
        if (g.contents() != f.contents()) result.push_back(g);
    return result;
}

std::vector<Func> topological_order(const std::vector<Func> &outputs) {
    std::vector<Func> order;
    std::set<const FunctionContents *> done, in_progress;
    // Depth-first, post-order: every producer is appended before the first consumer that
    // reaches it. Definitions cannot form cycles (a Func can only call Funcs already defined,
    // and a used Func takes no more updates), but a cycle would be a bug worth reporting.
    std::function<void(const Func &)> visit = [&](const Func &f) {
        const FunctionContents *key = f.contents().get();
        if (done.count(key)) return;
        if (!f.defined()) throw Error("Func " + f.name() + " is used but has no definition; define it first");
        if (!in_progress.insert(key).second)
            throw InternalError("the definitions of Func " + f.name() + " form a cycle");
        for (const Func &g : direct_producers(f)) visit(g);
        in_progress.erase(key);
        done.insert(key);
        order.push_back(f);
    };
    for (const Func &f : outputs) visit(f);
    return order;
}

std::vector<Input> find_inputs(const Expr &e) {
    UseCollector c;
    c.include(e);
    return c.inputs;
}

std::vector<Input> find_inputs(const std::vector<Func> &funcs) {
    UseCollector c;
    for (const Func &f : funcs)
        for (const Expr &e : all_definition_exprs(*f.contents())) c.include(e);
    return c.inputs;
}

std::vector<ParamInfo> find_params(const Expr &e) {
    UseCollector c;
    c.include(e);
    return c.params;
}

std::vector<ParamInfo> find_params(const std::vector<Func> &funcs) {
    UseCollector c;
    for (const Func &f : funcs)
        for (const Expr &e : all_definition_exprs(*f.contents())) c.include(e);
    return c.params;
}

} // namespace tessera::internal
