// The static list scheduler's two placements (instruction_scheduler.h): in emission order and
// free. schedule_static_either_order keeps whichever program ends first, and chipsim accepts
// what it keeps.
#include "instruction_scheduler.h"

#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/chipsim/target.h>

#include <gtest/gtest.h>

namespace tessera {
namespace {

using internal::chip::ChipOp;

const chipsim::TimingModel &tsp_mini() {
    static const chipsim::TimingModel model(chipsim::load_target("tsp-mini"));
    return model;
}

std::vector<ChipOp> ops_of(const std::string &assembly) {
    std::vector<ChipOp> ops;
    for (const chipsim::Instruction &in : chipsim::assemble(assembly, "placement.tasm").instructions)
        ops.push_back({in, false, chipsim::disassemble(in)});
    return ops;
}

/// Simulated cycles of a placed program (timing only: the rows hold no data).
int64_t cycles_of(const std::vector<chipsim::Instruction> &placed) {
    chipsim::Program p;
    p.instructions = placed;
    chipsim::SimOptions o;
    o.functional = false;
    return chipsim::simulate(p, tsp_mini(), o).report.cycles;
}

TEST(ChipPlacement, FreePlacementLetsIndependentWorkPassAWaitingInstruction) {
    // Copy 1 waits for the last row copy 0 writes; copy 2 reads and writes banks of its own.
    // In emission order it cannot start before copy 1 does; placed freely it runs beside copy 0.
    const std::vector<ChipOp> ops = ops_of("mem.copy MEM.e1.b0[0:64], MEM.e0.b0[0:64]\n"
                                           "mem.copy MEM.e2.b0[0:1], MEM.e1.b0[63:1]\n"
                                           "mem.copy MEM.e4.b1[0:64], MEM.e3.b1[0:64]\n");
    const auto in_order = internal::chip::schedule_static(ops, tsp_mini(), /*in_order=*/true);
    const auto free = internal::chip::schedule_static(ops, tsp_mini(), /*in_order=*/false);
    const auto kept = internal::chip::schedule_static_either_order(ops, tsp_mini());
    const int64_t in_order_cycles = cycles_of(in_order), free_cycles = cycles_of(free), kept_cycles = cycles_of(kept);
    EXPECT_LT(free_cycles, in_order_cycles);
    EXPECT_EQ(kept_cycles, free_cycles);
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_EQ(kept.front().cycle, 0);
    EXPECT_NE(chipsim::disassemble(kept[1]).find("MEM.e3.b1"), std::string::npos)
        << "the independent copy runs second: " << chipsim::disassemble(kept[1]);
}

TEST(ChipPlacement, EitherOrderKeepsTheShorterPlacementOnLongerPrograms) {
    // Chains of copies through two slices of each hemisphere, several independent, emitted
    // chain by chain: both placements are accepted by chipsim and the kept one is the shorter.
    std::string assembly;
    for (int chain = 0; chain < 6; ++chain) {
        const int bank = chain % 2, row = 64 * (chain / 2);
        for (int step = 0; step < 4; ++step) {
            const int from = (chain + step) % 8, to = (chain + step + 1) % 8;
            assembly += "mem.copy MEM.e" + std::to_string(to) + ".b" + std::to_string(bank) + "[" + std::to_string(row) +
                        ":32], MEM.e" + std::to_string(from) + ".b" + std::to_string(bank) + "[" + std::to_string(row) + ":32]\n";
        }
    }
    const std::vector<ChipOp> ops = ops_of(assembly);
    const int64_t in_order = cycles_of(internal::chip::schedule_static(ops, tsp_mini(), true));
    const int64_t free = cycles_of(internal::chip::schedule_static(ops, tsp_mini(), false));
    EXPECT_EQ(cycles_of(internal::chip::schedule_static_either_order(ops, tsp_mini())), std::min(in_order, free));
}

} // namespace
} // namespace tessera
