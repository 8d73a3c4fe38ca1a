// No-op iteration trimming (Halide's TrimNoOps, in small): a loop of constant extent whose guards
// (the ifs anywhere in its body) the enclosing loops' ranges prove false for its last iterations
// stops before them. This is the split whose factor exceeds the extent it splits —
// a 16-wide tile of a 12-wide output, or split(x, 1 << 30) of a 16-point loop, which would
// otherwise run 2^30 guarded iterations (or vectorize 2^30 lanes). Trimming only ever removes
// iterations that do nothing, so results never change; a loop whose guard the simplifier cannot
// decide from constant ranges is left as it is.
#include "lowering.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"

namespace tessera::internal {

namespace {

class TrimNoOpIterations : public IRMutator {
protected:
    using IRMutator::visit;
    Stmt visit(const For *op, const Stmt &s) override {
        const auto min = as_const_int(op->min), extent = as_const_int(op->extent);
        if (!min || !extent) return IRMutator::visit(op, s);
        int64_t kept = *extent;
        if (*extent >= 2 && count_ifs(op->body) > 0 && does_nothing(op, *min + *extent - 1)) {
            // The smallest `kept` whose iterations [min + kept, min + extent) all do nothing. The
            // guard of a split is monotone in the loop variable, and the answer is checked below
            // whatever it is, so a binary search is exact where it matters and safe everywhere.
            int64_t lo = 1, hi = *extent - 1; // iterations [min + hi, ...) are known to do nothing
            while (lo < hi) {
                const int64_t mid = lo + (hi - lo) / 2;
                if (does_nothing(op, *min + mid)) hi = mid;
                else lo = mid + 1;
            }
            kept = hi;
        }
        const Interval range(Expr(static_cast<int>(*min)), Expr(static_cast<int>(*min + kept - 1)));
        // A trimmed loop's guards may now hold in every iteration it keeps: simplify them away.
        Stmt body = with_binding(scope_, op->name, range, [&] {
            return mutate(kept < *extent ? simplify_with_bounds(op->body, scope_) : op->body);
        });
        if (kept == *extent && body.same_as(op->body)) return s;
        return For::make(op->name, op->min, Expr(static_cast<int>(kept)), op->kind, body);
    }

private:
    /// Whether the iterations [first, min + extent) of `op` all do nothing.
    bool does_nothing(const For *op, int64_t first) {
        const int64_t last = *as_const_int(op->min) + *as_const_int(op->extent) - 1;
        const Interval tail(Expr(static_cast<int>(first)), Expr(static_cast<int>(last)));
        return with_binding(scope_, op->name, tail, [&] { return is_no_op(simplify_with_bounds(op->body, scope_)); });
    }

    IntervalScope scope_;
};

} // namespace

Stmt trim_no_op_iterations(const Stmt &s) { return TrimNoOpIterations().mutate(s); }

} // namespace tessera::internal
