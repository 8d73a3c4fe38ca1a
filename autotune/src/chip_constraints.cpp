// The chip constraint model (chip_constraints.h) in Z3: each rule is a named Boolean the solver
// assumes, so an unsatisfiable choice comes back with the rules it breaks (the unsat core).
#include "chip_constraints.h"

#include <z3++.h>

#include <algorithm>
#include <functional>
#include <tuple>
#include <map>

#include "tessera/error.h"

namespace tessera::internal::autotune {

bool ChipMatmulChoice::operator<(const ChipMatmulChoice &o) const {
    return std::tie(tile_m, tile_n, acc_bank, blocks_per_row, tile_order, double_buffer) <
           std::tie(o.tile_m, o.tile_n, o.acc_bank, o.blocks_per_row, o.tile_order, o.double_buffer);
}
bool ChipMatmulChoice::operator==(const ChipMatmulChoice &o) const {
    return tile_m == o.tile_m && tile_n == o.tile_n && acc_bank == o.acc_bank && blocks_per_row == o.blocks_per_row &&
           tile_order == o.tile_order && double_buffer == o.double_buffer;
}
std::string ChipMatmulChoice::to_string() const {
    std::string s = tile_m > 0 || tile_n > 0
                        ? "tile " + (tile_m > 0 ? std::to_string(tile_m) : std::string("lib")) + "x" +
                              (tile_n > 0 ? std::to_string(tile_n) : std::string("lib"))
                        : std::string("library tile");
    return s + (acc_bank >= 0 ? ", ACC bank " + std::to_string(acc_bank) : ", ACC bank any") +
           (blocks_per_row > 0 ? ", " + std::to_string(blocks_per_row) + " blocks/row" : std::string()) +
           (tile_order.empty() ? std::string() : ", " + tile_order + " order") +
           (double_buffer == 0 ? ", one ACC buffer" : std::string());
}

namespace {
const chipsim::MemoryDesc &accumulator_of(const chipsim::Target &t) {
    for (const chipsim::MemoryDesc &m : t.memories)
        if (m.accumulator) return m;
    throw Error("autotune: target " + t.name + " has no accumulator memory; its matmuls cannot be tuned");
}
} // namespace

struct ChipConstraintModel::Impl {
    chipsim::Target target;
    chipsim::MemoryDesc acc;
    chipsim::MxmShape unit;
    int64_t n = 0;
    z3::context ctx;
    z3::expr tm = ctx.int_const("tile_m"), tn = ctx.int_const("tile_n"), bank = ctx.int_const("acc_bank");
    /// The named rules: the literal the solver assumes, and the rule in words for a choice.
    struct Rule {
        z3::expr literal;
        std::function<std::string(const ChipMatmulChoice &)> explain;
    };
    std::vector<Rule> rules;
    z3::solver solver{ctx};

    Impl(const chipsim::Target &t, chipsim::DType in_dtype, int64_t columns)
        : target(t), acc(accumulator_of(t)), unit(t.mxm_shape(in_dtype)), n(columns) {
        solver.add(tm >= 1 && tn >= 1 && bank >= -1);
        const std::string acc_name = acc.name + " of " + t.name, acc_bank_name = acc.name + " bank of " + t.name;
        auto rule = [&](const char *name, const z3::expr &holds, std::function<std::string(const ChipMatmulChoice &)> explain) {
            z3::expr literal = ctx.bool_const(name);
            solver.add(z3::implies(literal, holds));
            rules.push_back({literal, std::move(explain)});
        };
        const int64_t width = unit.n;
        rule("unit_width", tn % ctx.int_val(width) == 0 || tn >= ctx.int_val(n), [=](const ChipMatmulChoice &c) {
            return "a tile of " + std::to_string(c.tile_n) + " columns is not a multiple of the MXM width " + std::to_string(width);
        });
        if (t.issue == chipsim::IssueKind::Static) {
            // One output tile per MXM plane, in that plane's accumulator bank.
            const int64_t rows = acc.rows_per_bank;
            rule("acc_bank_rows", tm <= ctx.int_val(rows), [=](const ChipMatmulChoice &c) {
                return "an output tile of " + std::to_string(c.tile_m) + " rows needs " + std::to_string(c.tile_m) +
                       " accumulator rows; an " + acc_bank_name + " holds " + std::to_string(rows);
            });
        } else {
            // The whole accumulator holds one tile: a row per output row per MXM-wide column block.
            const int64_t rows = acc.total_rows();
            rule("acc_total_rows", tm * ((tn + ctx.int_val(width - 1)) / ctx.int_val(width)) <= ctx.int_val(rows),
                 [=](const ChipMatmulChoice &c) {
                     const int64_t blocks = (c.tile_n + width - 1) / width;
                     return "an output tile of " + std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + " needs " +
                            std::to_string(c.tile_m * blocks) + " accumulator rows; the " + acc_name + " holds " + std::to_string(rows);
                 });
        }
        const int banks = acc.total_banks();
        if (acc.interleaved)
            rule("acc_interleaved", bank == -1, [=](const ChipMatmulChoice &) {
                return "the " + acc_name + " interleaves rows over its " + std::to_string(banks) +
                       " banks, so store_in(ACC, bank) cannot pick one";
            });
        else
            rule("acc_bank_exists", bank < ctx.int_val(banks), [=](const ChipMatmulChoice &c) {
                return "ACC bank " + std::to_string(c.acc_bank) + " does not exist; the " + acc_name + " has banks 0.." +
                       std::to_string(banks - 1);
            });
    }

    z3::expr_vector assumptions() {
        z3::expr_vector a(ctx);
        for (const Rule &r : rules) a.push_back(r.literal);
        return a;
    }
    /// The choice's fixed values as constraints (0 / -1 for a size: left to the solver).
    void fix(const ChipMatmulChoice &c, bool fix_bank) {
        if (c.tile_m > 0) solver.add(tm == ctx.int_val(c.tile_m));
        if (c.tile_n > 0) solver.add(tn == ctx.int_val(c.tile_n));
        if (fix_bank) solver.add(bank == ctx.int_val(c.acc_bank));
    }
};

ChipConstraintModel::ChipConstraintModel(const chipsim::Target &target, chipsim::DType in_dtype, int64_t n)
    : impl_(std::make_unique<Impl>(target, in_dtype, n)) {}
ChipConstraintModel::~ChipConstraintModel() = default;

std::optional<std::string> ChipConstraintModel::why_infeasible(const ChipMatmulChoice &choice) const {
    Impl &m = *impl_;
    m.solver.push();
    m.fix(choice, true);
    const z3::check_result r = m.solver.check(m.assumptions());
    std::optional<std::string> why;
    if (r == z3::unsat) {
        // The core is one sufficient set of broken rules; each rule that alone refuses the
        // choice is named, so a person sees every limit the choice crosses.
        const z3::expr_vector core = m.solver.unsat_core();
        std::string text;
        for (const Impl::Rule &rule : m.rules) {
            bool in_core = false;
            for (unsigned i = 0; i < core.size(); ++i) in_core |= z3::eq(core[i], rule.literal);
            z3::expr_vector alone(m.ctx);
            alone.push_back(rule.literal);
            if (in_core || m.solver.check(alone) == z3::unsat) text += (text.empty() ? "" : "; ") + rule.explain(choice);
        }
        why = text.empty() ? "the target allows no such schedule" : text;
    } else if (r == z3::unknown) {
        m.solver.pop();
        throw Error("autotune: Z3 could not decide " + choice.to_string() + ": " + m.solver.reason_unknown());
    }
    m.solver.pop();
    return why;
}

std::vector<int> ChipConstraintModel::feasible_banks(int64_t tile_m, int64_t tile_n) const {
    Impl &m = *impl_;
    std::vector<int> banks;
    m.solver.push();
    m.fix({tile_m, tile_n, -1}, false);
    const z3::expr_vector rules = m.assumptions();
    // Each model gives one bank; blocking it asks for the next (-1, "any", is one of them).
    while (m.solver.check(rules) == z3::sat) {
        const int b = m.solver.get_model().eval(m.bank, true).get_numeral_int();
        banks.push_back(b);
        m.solver.add(m.bank != m.ctx.int_val(b));
    }
    m.solver.pop();
    std::sort(banks.begin(), banks.end());
    return banks;
}

} // namespace tessera::internal::autotune
