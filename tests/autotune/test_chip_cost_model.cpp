// The analytic chip cost model (chip_cost_model.h): on a fixed set of matmul schedules it ranks
// the candidates as the simulator does, far better than chance, on both chips, and it never
// predicts fewer cycles than the problem bound.
#include <gtest/gtest.h>

#include <vector>

#include "chip_cost_model.h"
#include "rank_statistics.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/internal/function.h"
#include "tessera/ops.h"

namespace {

using namespace tessera;
using tessera::internal::autotune::estimate_chip_cycles;
using tessera::internal::autotune::spearman;

/// Spearman's rank correlation of the estimate with the simulated cycles over tile rows x
/// columns x accumulator bank of a 512x512x256 int8 matmul.
double rank_correlation_on(const std::string &chip, int &candidates) {
    const int64_t m = 512, n = 512, k = 256;
    Input a(Int(8), {int(m), int(k)}, "A"), b(Int(8), {int(k), int(n)}, "B");
    Func c = ops::matmul(a, b).func();
    Pipeline p(c);
    const chipsim::Target t = chipsim::load_target(chip);
    const chipsim::TimingModel model(t);
    const int64_t width = t.mxm_shape(chipsim::DType::Int8).n, depth = t.mxm_shape(chipsim::DType::Int8).k;
    std::vector<double> estimated, simulated;
    Buffer<> av(Int(8), {m, k}), bv(Int(8), {k, n});
    const Bindings bindings{{a, av}, {b, bv}};
    std::vector<int64_t> columns{width};
    if (t.issue == chipsim::IssueKind::Dynamic) columns = {width, 2 * width, 4 * width};
    for (int64_t rows : {32, 64, 128, 256, 512})
        for (int64_t cols : columns)
            for (int bank : {-1, 0}) {
                p.set_schedule(Schedule{});
                Var i(c.args()[0]), j(c.args()[1]), io("io"), jo("jo"), ii("ii"), ji("ji"), ko("ko"), ki("ki");
                const std::string kv = c.contents()->updates[0].rdom->vars[0].name;
                c.update().split(kv, ko, ki, int(depth)).tile(i, j, io, jo, ii, ji, int(rows), int(cols))
                    .reorder({io, jo, ko, ii, ji, ki}).tensorize("mxm", {ii, ji, ki});
                c.store_in(MemoryKind::ACC, bank).double_buffer();
                ChipProgram program;
                try {
                    program = compile_for_chip(p, Target::named(chip), {{m, n}});
                } catch (const Error &) {
                    continue; // a tile this chip does not take: not a candidate
                }
                const auto e = estimate_chip_cycles(program.program, model, program.problem);
                EXPECT_GE(e.cycles, model.problem_bound(program.problem).bound_cycles) << chip;
                EXPECT_EQ(e.features.size(), size_t(tessera::internal::autotune::kChipFeatures));
                ChipRunOptions timing_only;
                timing_only.functional = false;
                estimated.push_back(e.cycles);
                simulated.push_back(double(run_on_chip(program, bindings, timing_only).report.cycles));
            }
    candidates = int(estimated.size());
    return spearman(estimated, simulated);
}

// Chance gives a correlation near 0: for 10-14 candidates, rho above 0.65 has a probability
// under 1 % at random. Measured when this test was written: 1.000 on tsp-mini over 10 (the
// static schedule is the timing model's own) and 0.861 on npu-edge over 14 (the busiest
// resource or queue misses semaphore waits); 0.7 sits above chance's 1 % line and 0.16 below
// the weaker chip's measurement.
TEST(ChipCostModel, RanksMatmulTilesAsTheSimulatorDoes) {
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(chip);
        int candidates = 0;
        const double rho = rank_correlation_on(chip, candidates);
        EXPECT_GE(candidates, 8);
        EXPECT_GT(rho, 0.7);
        std::printf("%s: Spearman %.3f over %d candidates\n", chip.c_str(), rho, candidates);
    }
}

} // namespace
