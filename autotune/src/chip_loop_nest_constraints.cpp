// The chip loop-nest constraints (chip_loop_nest_constraints.h) in Z3: each rule is a named
// Boolean the solver assumes, so a refused choice comes back with the rules of the unsat core.
#include "chip_loop_nest_constraints.h"

#include <z3++.h>

#include <functional>
#include <vector>

#include "tessera/error.h"

namespace tessera::internal::autotune {

struct ChipLoopNestConstraints::Impl {
    z3::context ctx;
    z3::solver solver{ctx};
    z3::expr block = ctx.int_const("lane_row_block");
    struct Rule {
        z3::expr literal;
        std::function<std::string(int64_t)> explain;
    };
    std::vector<Rule> rules;

    Impl(const chipsim::Target &t, int element_bytes) {
        const int64_t lanes = std::max(1, t.vector_bytes / std::max(1, element_bytes));
        solver.add(block >= 0);
        z3::expr whole_chunks = ctx.bool_const("lane_block_whole_chunks");
        solver.add(z3::implies(whole_chunks, block % ctx.int_val(lanes) == 0));
        rules.push_back({whole_chunks, [=, name = t.name](int64_t b) {
                             return "a row block of " + std::to_string(b) + " rows in the VXM's lanes is not a multiple of " + name + "'s " +
                                    std::to_string(lanes) + " lanes of " + std::to_string(element_bytes) +
                                    "-byte elements (a lane chunk would start inside a block)";
                         }});
    }
};

ChipLoopNestConstraints::ChipLoopNestConstraints(const chipsim::Target &target, int element_bytes)
    : impl_(std::make_unique<Impl>(target, element_bytes)) {}
ChipLoopNestConstraints::~ChipLoopNestConstraints() = default;

std::optional<std::string> ChipLoopNestConstraints::why_infeasible(int64_t lane_row_block) const {
    Impl &m = *impl_;
    m.solver.push();
    m.solver.add(m.block == m.ctx.int_val(lane_row_block));
    z3::expr_vector assumptions(m.ctx);
    for (const Impl::Rule &r : m.rules) assumptions.push_back(r.literal);
    const z3::check_result r = m.solver.check(assumptions);
    std::optional<std::string> why;
    if (r == z3::unsat) {
        const z3::expr_vector core = m.solver.unsat_core();
        std::string text;
        for (const Impl::Rule &rule : m.rules)
            for (unsigned i = 0; i < core.size(); ++i)
                if (z3::eq(core[i], rule.literal)) text += (text.empty() ? "" : "; ") + rule.explain(lane_row_block);
        why = text.empty() ? "the target allows no such schedule" : text;
    }
    m.solver.pop();
    if (r == z3::unknown) throw Error("autotune: Z3 could not decide a row block of " + std::to_string(lane_row_block) + " rows");
    return why;
}

} // namespace tessera::internal::autotune
