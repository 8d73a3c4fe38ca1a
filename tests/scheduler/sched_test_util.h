#pragma once
// Helpers for the scheduler tests: facts about a lowered statement read with an IRVisitor
// (loops, their kinds and constant extents, where each Func is produced, allocations), so the
// tests check the IR's structure rather than its text.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/expr.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"
#include "tessera/lower.h"
#include "tessera/reference.h"

namespace tessera::test {

struct LoopInfo {
    std::string name;
    ForKind kind;
    std::optional<int64_t> extent;
    /// The loops enclosing this one, outermost first.
    std::vector<std::string> enclosing;
};

struct AllocInfo {
    std::string name;
    MemoryKind memory;
    int bank;
    std::vector<std::optional<int64_t>> extents;
    std::vector<std::string> enclosing;
};

/// Every loop, allocation and producer of a statement, in order of appearance.
class StmtFacts : public IRVisitor {
public:
    explicit StmtFacts(const Stmt &s) { s.accept(this); }
    std::vector<LoopInfo> loops;
    std::vector<AllocInfo> allocs;
    /// Producer name → enclosing loops where it is produced.
    std::vector<std::pair<std::string, std::vector<std::string>>> produces;
    int stores = 0, ifs = 0;

    using IRVisitor::visit;
    void visit(const For *op) override {
        loops.push_back({op->name, op->kind, as_const_int(op->extent), stack_});
        stack_.push_back(op->name);
        IRVisitor::visit(op);
        stack_.pop_back();
    }
    void visit(const Allocate *op) override {
        AllocInfo a{op->name, op->memory, op->bank, {}, stack_};
        for (const auto &e : op->extents) a.extents.push_back(as_const_int(e));
        allocs.push_back(a);
        IRVisitor::visit(op);
    }
    void visit(const ProducerConsumer *op) override {
        if (op->is_producer) produces.emplace_back(op->name, stack_);
        IRVisitor::visit(op);
    }
    void visit(const Store *op) override {
        ++stores;
        IRVisitor::visit(op);
    }
    void visit(const IfThenElse *op) override {
        ++ifs;
        IRVisitor::visit(op);
    }

    /// The loop whose name ends with `suffix` (e.g. "C.s0.xi"); fails the test if absent.
    const LoopInfo *loop(const std::string &name) const {
        for (const auto &l : loops)
            if (l.name == name) return &l;
        return nullptr;
    }
    /// Loop names (in order of appearance) of the loops whose names start with `prefix`.
    std::vector<std::string> loop_names(const std::string &prefix) const {
        std::vector<std::string> out;
        for (const auto &l : loops)
            if (l.name.rfind(prefix, 0) == 0) out.push_back(l.name);
        return out;
    }
    const std::vector<std::string> *produced_in(const std::string &f) const {
        for (const auto &[n, s] : produces)
            if (n == f) return &s;
        return nullptr;
    }
    const AllocInfo *alloc(const std::string &name) const {
        for (const auto &a : allocs)
            if (a.name == name) return &a;
        return nullptr;
    }

private:
    std::vector<std::string> stack_;
};

/// Realizes on the interpreter and on the reference and expects equality (exact for integers,
/// Tolerance::for_type for floats).
inline void expect_matches_reference(const Func &f, const std::vector<int64_t> &shape, const Bindings &b,
                                     int64_t reduction_length = 1) {
    Buffer<> ref = evaluate_reference(f, shape, b);
    Buffer<> got = f.realize(shape, b, Target::interpreter());
    Comparison c = compare(got, ref, Tolerance::for_type(ref.type(), reduction_length));
    EXPECT_TRUE(c.equal) << c.message;
}

} // namespace tessera::test
