#include "loop_analysis.h"

#include <map>
#include <vector>

#include "tessera/ir_equality.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

/// Finds whether an Expr mentions any of a set of variable names.
class MentionsAny : public IRVisitor {
public:
    explicit MentionsAny(const std::set<std::string> &names) : names_(names) {}
    bool found = false;
    void visit(const Variable *op) override {
        if (names_.count(op->name)) found = true;
    }

private:
    const std::set<std::string> &names_;
};

bool mentions_any(const Expr &e, const std::set<std::string> &names) {
    MentionsAny m(names);
    m.include(e);
    return m.found;
}

/// Walks a vectorized loop body, tracking which names vary across its lanes (the loop
/// variable and lets computed from it), and records the first reason the lanes could
/// interfere.
class VectorSafety : public IRVisitor {
public:
    explicit VectorSafety(const std::string &var) { varying_.insert(var); }

    std::string reason;

    void finish() {
        if (!reason.empty()) return;
        // A lane may only read the element of a stored buffer that it writes itself.
        for (const auto &[buffer, indices] : stores_) {
            const Expr &first = indices.front();
            for (const Expr &index : indices)
                if (!equal(index, first)) {
                    reason = "stores to '" + buffer + "' at different indices";
                    return;
                }
            auto loads = loads_.find(buffer);
            if (loads == loads_.end()) continue;
            for (const Expr &index : loads->second)
                if (!equal(index, first)) {
                    reason = "'" + buffer + "' is read at " + to_string(index) + " and written at " + to_string(first);
                    return;
                }
        }
    }

    void visit(const Let *op) override {
        include(op->value);
        bind(op->name, op->value);
        include(op->body);
    }
    void visit(const LetStmt *op) override {
        include(op->value);
        bind(op->name, op->value);
        include(op->body);
    }
    void visit(const For *op) override {
        if (mentions_any(op->min, varying_) || mentions_any(op->extent, varying_))
            note("the bounds of the inner loop '" + op->name + "' vary across lanes");
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        note("it allocates '" + op->name + "'");
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        if (!mentions_any(op->index, varying_))
            note("every lane stores to the same element of '" + op->name + "'");
        stores_[op->name].push_back(op->index);
        IRVisitor::visit(op);
    }
    void visit(const Load *op) override {
        loads_[op->name].push_back(op->index);
        IRVisitor::visit(op);
    }

private:
    void bind(const std::string &name, const Expr &value) {
        if (mentions_any(value, varying_)) varying_.insert(name);
    }
    void note(const std::string &why) {
        if (reason.empty()) reason = why;
    }

    std::set<std::string> varying_;
    std::map<std::string, std::vector<Expr>> stores_, loads_;
};

class CollectNames : public IRVisitor {
public:
    NamesUsed names;
    void visit(const Variable *op) override { names.variables.insert(op->name); }
    void visit(const Load *op) override {
        names.buffers.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        names.buffers.insert(op->name);
        IRVisitor::visit(op);
    }
    void visit(const Allocate *op) override {
        names.buffers.insert(op->name);
        IRVisitor::visit(op);
    }
};

/// Variables that appear in indices, and the values of all lets, for index_lets().
class IndexUses : public IRVisitor {
public:
    std::set<std::string> in_index;
    std::map<std::string, std::vector<Expr>> let_values;
    void visit(const Load *op) override {
        add_names(op->index);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        add_names(op->index);
        IRVisitor::visit(op);
    }
    void visit(const LetStmt *op) override {
        let_values[op->name].push_back(op->value);
        IRVisitor::visit(op);
    }
    void visit(const Let *op) override {
        let_values[op->name].push_back(op->value);
        IRVisitor::visit(op);
    }
    void add_names(const Expr &e) {
        CollectNames c;
        c.include(e);
        in_index.insert(c.names.variables.begin(), c.names.variables.end());
    }
};

class ContainsLoad : public IRVisitor {
public:
    bool found = false;
    void visit(const Load *) override { found = true; }
};

} // namespace

std::string why_not_vectorizable(const For *loop) {
    VectorSafety safety(loop->name);
    safety.include(loop->body);
    safety.finish();
    return safety.reason;
}

NamesUsed names_used(const Stmt &s) {
    CollectNames c;
    c.include(s);
    return c.names;
}

std::set<std::string> index_lets(const Stmt &s) {
    IndexUses uses;
    uses.include(s);
    // Close over lets: a let used in an index makes the variables of its value index variables.
    std::set<std::string> result;
    std::vector<std::string> work(uses.in_index.begin(), uses.in_index.end());
    while (!work.empty()) {
        std::string name = work.back();
        work.pop_back();
        auto it = uses.let_values.find(name);
        if (it == uses.let_values.end() || !result.insert(name).second) continue;
        for (const Expr &v : it->second) {
            CollectNames c;
            c.include(v);
            for (const std::string &n : c.names.variables) work.push_back(n);
        }
    }
    return result;
}

bool contains_load(const Expr &e) {
    ContainsLoad c;
    c.include(e);
    return c.found;
}

bool mentions(const Expr &e, const std::string &name) {
    std::set<std::string> names{name};
    return mentions_any(e, names);
}

} // namespace tessera::internal
