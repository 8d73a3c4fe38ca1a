// The example programs of apps/chip_programs run as they are and reproduce their expected
// outputs, and their performance claims hold.
#include "chipsim_test_util.h"

using namespace chipsim_test;

namespace {

const std::string kDir = std::string(TESSERA_SOURCE_DIR) + "/apps/chip_programs/";

SimResult run_example(const std::string &name) {
    Program p = assemble_file(kDir + name + ".tasm");
    SimOptions o;
    for (auto &d : p.tensors)
        if (!d.is_output) o.inputs[d.name] = from_npy(kDir + d.file, d.dtype);
    SimResult r = simulate(p, model(p.target), o);
    for (auto &d : p.tensors) {
        if (!d.is_output) continue;
        tessera::NpyArray want = tessera::read_npy(kDir + d.file);
        EXPECT_EQ(want.shape, d.shape) << name << " " << d.name;
        EXPECT_TRUE(want.data == r.outputs.at(d.name).bytes) << name << ": output " << d.name << " differs from " << d.file;
    }
    return r;
}

} // namespace

TEST(Examples, TspMatmulInt8KeepsAllFourPlanesBusy) {
    SimResult r = run_example("tsp_matmul_int8");
    EXPECT_GE(r.report.mxm_utilization, 0.9);
    EXPECT_EQ(r.report.macs, int64_t(512) * 256 * 256);
    EXPECT_EQ(r.report.bank_conflicts, 0);
    EXPECT_GT(r.report.host_io_cycles, 0);
}

TEST(Examples, NpuDoubleBufferOverlapsDmaAndCompute) {
    SimResult r = run_example("npu_double_buffer");
    // Overlap: the kernel takes less than loading, computing and storing one after another.
    int64_t dram = 0, mxm = 0;
    for (auto &u : r.report.units) {
        if (u.name == "DRAM") dram = u.busy_cycles;
        if (u.name == "MXM0") mxm = u.busy_cycles;
    }
    EXPECT_LT(r.report.cycles, dram + mxm);
    EXPECT_GT(r.report.mxm_utilization, 0.3);
}

TEST(Examples, BankConflictCostsCyclesTheSpreadLayoutSaves) {
    SimResult conflict = run_example("npu_bank_conflict"), spread = run_example("npu_bank_spread");
    EXPECT_EQ(conflict.report.macs, spread.report.macs);
    EXPECT_GT(conflict.report.bank_conflicts, spread.report.bank_conflicts);
    EXPECT_GT(conflict.report.cycles, spread.report.cycles);
    EXPECT_GT(conflict.report.stall_cycles_by_bank.at("SPAD.b0"), spread.report.stall_cycles_by_bank["SPAD.b0"]);
}
