// Loop partitioning (Halide's PartitionLoops, in small): a serial or parallel loop whose tail guards hold in
// every iteration but the last — the partial tile of a GuardWithIf split — runs as a guard-free
// steady state followed by that last iteration. A guard left inside a register-tiled reduction
// makes every accumulator update conditional, so LLVM cannot keep the accumulators in
// registers; partitioning takes the guards out of the hot loop at the cost of one more copy of
// the loop body.
#include "lowering.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

class CountIfs : public IRVisitor {
public:
    using IRVisitor::visit;
    void visit(const IfThenElse *op) override {
        ++count;
        IRVisitor::visit(op);
    }
    int count = 0;
};

class PartitionLoops : public IRMutator {
protected:
    using IRMutator::visit;
    Stmt visit(const For *op, const Stmt &s) override {
        auto min = as_const_int(op->min), extent = as_const_int(op->extent);
        if (!min || !extent) return IRMutator::visit(op, s);
        const Interval range(Expr(static_cast<int>(*min)), Expr(static_cast<int>(*min + *extent - 1)));
        Stmt body = with_binding(scope_, op->name, range, [&] { return mutate(op->body); });
        // Serial and parallel loops (a parallel loop's iterations are independent, so any two
        // ranges of them are too); vectorized and unrolled loops are fully expanded anyway.
        const bool splittable = op->kind == ForKind::Serial || op->kind == ForKind::Parallel;
        const int ifs = splittable && *extent >= 2 ? count_ifs(body) : 0;
        if (ifs > 0) {
            const Interval steady(Expr(static_cast<int>(*min)), Expr(static_cast<int>(*min + *extent - 2)));
            Stmt steady_body = with_binding(scope_, op->name, steady, [&] { return simplify_with_bounds(body, scope_); });
            if (count_ifs(steady_body) < ifs)
                return Block::make({For::make(op->name, op->min, Expr(static_cast<int>(*extent - 1)), op->kind, steady_body),
                                    For::make(op->name, Expr(static_cast<int>(*min + *extent - 1)), Expr(1), ForKind::Serial, body)});
        }
        if (body.same_as(op->body)) return s;
        return For::make(op->name, op->min, op->extent, op->kind, body);
    }

private:
    IntervalScope scope_;
};

} // namespace

int count_ifs(const Stmt &s) {
    CountIfs c;
    s.accept(&c);
    return c.count;
}

Stmt partition_loops(const Stmt &s) {
    PartitionLoops p;
    return p.mutate(s);
}

} // namespace tessera::internal
