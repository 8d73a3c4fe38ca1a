// Hand-computed cycle counts for small programs of each family, the documented cost of a bank
// conflict, DRAM bandwidth shared by the DMA engines, static conflicts, determinism.
#include "chipsim_test_util.h"

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

using namespace chipsim_test;

namespace {

Instruction one(const std::string &line) { return assemble(line).instructions.at(0); }

SimResult timing_only(const std::string &text, const std::string &target, bool trace = false) {
    SimOptions o;
    o.functional = false;
    o.trace = trace;
    return simulate(assemble(text), model(target), o);
}

} // namespace

TEST(Timing, TspMatmulLatencyIsRowsPlusDfuncPlusStreamDistance) {
    // MEM.w0 sits 10 positions east of MXM0: T = 64 rows + d_func 4 + delta 10.
    ResourceUse u = model("tsp-mini").resources(one("@0 mxm.mm.int8 m0.w0, ACC.b0[0:64], MEM.w0.b0[0:64]"));
    EXPECT_EQ(u.issue_cycles, 64);
    EXPECT_EQ(u.latency, 78);
    EXPECT_EQ(u.macs, 64 * 64 * 64);
    // MXM3 is the last slot; MEM.e7 is 3 positions west of it.
    EXPECT_EQ(model("tsp-mini").latency(one("@0 mxm.mm.int8 m3.w0, ACC.b3[0:10], MEM.e7.b1[0:10]")), 10 + 4 + 3);
}

TEST(Timing, TspReductionOverRowsWritesItsOneRowInItsLastCycle) {
    const TimingModel &m = model("tsp-mini");
    const Instruction reduce = one("@0 vxm.reduce.sum.rows.fp32 MEM.e0.b1[0:1], MEM.w0.b0[0:64]");
    const ResourceUse u = m.resources(reduce);
    ASSERT_EQ(u.issue_cycles, 64);
    // Its outgoing stream (VXM -> MEM.e0, eastward) carries one row, in the last cycle, not 64.
    int east = -1;
    for (size_t r = 0; r < m.resource_table().size(); ++r)
        if (m.resource_table()[r].name == "stream.east") east = int(r);
    int64_t out_offset = -1, out_cycles = 0;
    for (const ResourceHold &h : u.holds)
        if (h.resource == east && h.offset > 0) out_offset = h.offset, out_cycles = h.duration;
    EXPECT_EQ(out_cycles, 1);
    EXPECT_EQ(out_offset, u.latency - 1 - 1); // one position (delta) before the row lands in MEM.e0
    // A reader of the sum may not start while the 64 source rows still stream in...
    const std::string prefix = "@0 vxm.reduce.sum.rows.fp32 MEM.e0.b1[0:1], MEM.w0.b0[0:64]\n";
    expect_error([&] { timing_only(prefix + "@40 mem.copy MEM.e1.b0[0:1], MEM.e0.b1[0:1]\n", "tsp-mini"); },
                 {"data hazard with instruction 0", "MEM row"});
    // ...and may once it has landed.
    EXPECT_NO_THROW(timing_only(prefix + "@" + std::to_string(u.latency) + " mem.copy MEM.e1.b0[0:1], MEM.e0.b1[0:1]\n", "tsp-mini"));
}

TEST(Timing, TspOneTileNamedAsTwoOperandsStreamsOnce) {
    const TimingModel &m = model("tsp-mini");
    // x * x from one tile costs what x * 2 does: one read of MEM.w0's port a row, one stream in.
    const ResourceUse square = m.resources(one("@0 vxm.mul.fp32 MEM.e0.b1[0:64], MEM.w0.b0[0:64], MEM.w0.b0[0:64]"));
    const ResourceUse twice = m.resources(one("@0 vxm.mul.fp32 MEM.e0.b1[0:64], MEM.w0.b0[0:64], #2"));
    EXPECT_EQ(square.issue_cycles, 64);
    EXPECT_EQ(square.latency, twice.latency);
    EXPECT_EQ(square.internal_bank_conflicts, 0);
    EXPECT_EQ(square.bytes, twice.bytes);
    // Two different tiles of one slice still take turns on its read port.
    const ResourceUse turns = m.resources(one("@0 vxm.mul.fp32 MEM.e0.b1[0:64], MEM.w0.b0[0:64], MEM.w0.b0[64:64]"));
    EXPECT_EQ(turns.issue_cycles, 128);
}

TEST(Timing, TspWeightInstallReadsFourRowsPerCycle) {
    // 64 rows interleaved over the 8 west slices: 16 cycles at 4 streams, + d_func 2 + delta 10 (w0).
    ResourceUse u = model("tsp-mini").resources(one("@0 mxm.lw.int8 m0.w0, MEM.w*.b0[0:64]"));
    EXPECT_EQ(u.issue_cycles, 16);
    EXPECT_EQ(u.latency, 28);
    // From one slice the slice's single read port serialises the rows: 64 cycles.
    EXPECT_EQ(model("tsp-mini").resources(one("@0 mxm.lw.int8 m0.w0, MEM.w0.b0[0:64]")).issue_cycles, 64);
}

TEST(Timing, TspVectorOpCrossesTheVxm) {
    // 16 rows, add d_func 2, in from w0 (1 position), out to e0 (1 position).
    EXPECT_EQ(model("tsp-mini").latency(one("@0 vxm.add.fp32 MEM.e0.b1[0:16], MEM.w0.b0[0:16], MEM.e0.b0[0:16]")), 20);
    // A chain adds each op's d_func: add 2 + mul 3 + relu 1.
    EXPECT_EQ(model("tsp-mini").latency(one("@0 vxm.add.fp32 MEM.e0.b1[0:16], MEM.w0.b0[0:16], #1 | mul #2 | relu")), 16 + 6 + 2);
}

TEST(Timing, NpuSystolicFillAndDrain) {
    // M + K + N - 1 with K = N = 32; bf16 runs at half rate.
    EXPECT_EQ(model("npu-edge").latency(one("mxm.mm.int8 m0.w0, ACC[0:64], SPAD[0:64]")), 64 + 32 + 32 - 1);
    EXPECT_EQ(model("npu-edge").latency(one("mxm.mm.bf16 m0.w0, ACC[0:64], SPAD[0:64]")), 128 + 63);
    EXPECT_EQ(model("npu-edge").peak_macs_per_cycle(DType::BF16), 512);
}

TEST(Timing, NpuDmaIsSetupPlusTransferPlusLatency) {
    // 4096 bytes at 16 B/cycle = 256, + setup 8 + DRAM latency 120.
    auto r = timing_only(".input A int8 [4096]\ndma.load SPAD[0:64], A@0[4096]\n", "npu-edge");
    EXPECT_EQ(r.report.cycles, 384);
    EXPECT_EQ(r.report.bytes.at("DRAM"), 4096);
}

TEST(Timing, DmaEnginesShareDramBandwidth) {
    // Alone each takes 384 cycles; together the bus serves 8192 bytes: the second finishes 256
    // cycles later, and the report books those cycles as a bandwidth stall.
    auto r = timing_only(".input A int8 [4096]\n.output B int8 [4096]\n"
                         "dma.load SPAD[0:64], A@0[4096]\n"
                         "dma.store B@0[4096], SPAD[512:64]\n",
                         "npu-edge");
    EXPECT_EQ(r.report.cycles, 384 + 256);
    EXPECT_EQ(r.report.stall_cycles_by_cause.at("bandwidth"), 256);
    EXPECT_EQ(r.report.units[2].name, "DRAM");
    EXPECT_EQ(r.report.units[2].busy_cycles, 512);
}

TEST(Timing, BankConflictCostsTheBusiestBanksRows) {
    // Documented cost: an instruction lasts at least as long as the rows its busiest bank serves.
    // Spread (stride 1): 32 rows over 8 banks, 12 turns per bank < 16 VXM cycles: no cost.
    // One bank (stride 8): 32 + 32 reads + 32 writes on SPAD bank 0 = 96 cycles instead of 16.
    const TimingModel &m = model("npu-edge");
    ResourceUse spread = m.resources(one("vxm.add.bf16 SPAD[512:32], SPAD[0:32], SPAD[256:32]"));
    ResourceUse bank0 = m.resources(one("vxm.add.bf16 SPAD[4096:32:8], SPAD[0:32:8], SPAD[2048:32:8]"));
    EXPECT_EQ(spread.issue_cycles, 16);
    EXPECT_EQ(spread.latency, 16 + 2);
    EXPECT_EQ(spread.internal_bank_conflicts, 0);
    EXPECT_EQ(bank0.issue_cycles, 96);
    EXPECT_EQ(bank0.latency, 96 + 2);
    EXPECT_EQ(bank0.internal_bank_conflicts, 1);
}

TEST(Timing, DynamicIssueStallsOnABusyBank) {
    // The vector op reads SPAD bank 0 over [0, 32); the load engine's write to bank 0 waits.
    auto r = timing_only(".input A int8 [2048]\n"
                         "vxm.relu.bf16 SPAD[1:32:8], SPAD[0:32:8]\n"
                         "mem.copy SPAD[512:32:8], SPAD[2048:32:8]\n",
                         "npu-edge");
    EXPECT_GT(r.report.stall_cycles_by_cause.at("bank"), 0);
    EXPECT_GT(r.report.stall_cycles_by_bank.at("SPAD.b0"), 0);
    EXPECT_GE(r.report.bank_conflicts, 1);
}

TEST(Timing, DynamicWeightInstallRunsUnderTheMultiplyBeforeIt) {
    // The exec queue hands each instruction to its unit and goes on: the install into w1 runs
    // while the multiply by w0 streams its 256 rows, so the MXM multiplies back to back. The
    // install into w0 waits for the multiply reading w0, and the queue behind it, in order.
    const std::string text = ".input A int8 [1]\n"
                             "mxm.lw.int8 m0.w0, SPAD[0:32]\n"
                             "mxm.mm.int8 m0.w0, ACC[0:256], SPAD[512:256]\n"
                             "mxm.lw.int8 m0.w1, SPAD[32:32]\n"
                             "mxm.mm.int8 m0.w1, ACC[256:256], SPAD[768:256]\n"
                             "mxm.lw.int8 m0.w0, SPAD[64:32]\n"
                             "mxm.mm.int8 m0.w0, ACC[512:256], SPAD[1024:256]\n";
    const SimResult r = timing_only(text, "npu-edge");
    std::map<int32_t, InstructionTiming> at;
    for (const InstructionTiming &t : r.timings) at[t.index] = t;
    const TimingModel &m = model("npu-edge");
    const int64_t mm_rows = m.resources(one("mxm.mm.int8 m0.w0, ACC[0:256], SPAD[512:256]")).issue_cycles;
    ASSERT_EQ(mm_rows, 256);
    EXPECT_LT(at[2].start, at[1].start + mm_rows); // w1's install under the first multiply
    EXPECT_EQ(at[3].start, at[1].start + mm_rows); // multiplies back to back
    EXPECT_GE(at[4].start, at[1].start + mm_rows); // w0 is read to the first multiply's last row
    // Instructions of one queue still start in program order.
    for (int32_t i = 1; i < 6; ++i) EXPECT_GT(at[i].start, at[i - 1].start) << i;
}

TEST(Timing, StaticConflictNamesBothInstructions) {
    expect_error(
        [] {
            timing_only("@0 mxm.mm.int8 m0.w0, ACC.b0[0:64], MEM.e0.b0[0:64]\n"
                        "@10 mxm.mm.int8 m0.w1, ACC.b0[64:64], MEM.e1.b0[0:64]\n",
                        "tsp-mini");
        },
        {"instruction 1 (line 2) `@10 mxm.mm.int8 m0.w1", "resource conflict with instruction 0 (line 1) `@0 mxm.mm.int8 m0.w0",
         "on MXM0", "held over [0, 64)"});
    // Back to back on the plane is fine.
    auto r = timing_only("@0 mxm.mm.int8 m0.w0, ACC.b0[0:64], MEM.e0.b0[0:64]\n"
                         "@64 mxm.mm.int8 m0.w1, ACC.b0[64:64], MEM.e1.b0[0:64]\n",
                         "tsp-mini");
    EXPECT_EQ(r.report.cycles, 64 + 64 + 4 + 13);
    EXPECT_DOUBLE_EQ(r.report.mxm_utilization, double(2 * 64 * 4096) / 16384 / r.report.cycles);
}

TEST(Timing, StreamHoldsFitByCountNotByTheLanesTheyHappenedToTake) {
    // Two lanes: lane 0 holds [0, 10) and [20, 30), lane 1 holds [10, 20) — as holds arriving
    // in issue order, not in order of their starts, can leave them. A hold of [5, 15) finds no
    // single lane free over it, yet no cycle has two holds: it fits, and the lanes are
    // re-assigned (a drain's write-back, which starts cycles after its issue, did this on
    // tsp-mini's streams; chipsim refused programs the list scheduler had placed).
    ReservationTable table({2});
    table.add(0, 0, {0, 10, 1});
    table.add(0, 0, {20, 30, 2});
    table.add(0, 1, {10, 20, 3});
    EXPECT_EQ(table.free_lane(0, 5, 15), -1);
    EXPECT_EQ(table.holders(0, 5, 15), 1);
    EXPECT_FALSE(table.blocker(0, 5, 15).has_value());
    EXPECT_EQ(table.next_free(0, 5, 10), 5);
    table.add_to_any_lane(0, {5, 15, 4});
    EXPECT_EQ(table.holders(0, 0, 30), 2);
    std::vector<Interval> all;
    for (int lane = 0; lane < 2; ++lane) {
        const auto &iv = table.intervals(0, lane);
        for (size_t i = 1; i < iv.size(); ++i) EXPECT_LE(iv[i - 1].end, iv[i].begin) << "lane " << lane << " overlaps itself";
        all.insert(all.end(), iv.begin(), iv.end());
    }
    EXPECT_EQ(all.size(), 4u);
    // Now [8, 12) meets two holds at cycle 8 ([0, 10) and [5, 15)): full until 10, when the
    // first of them ends; then [10, 20) and [5, 15) fill both lanes until 15.
    EXPECT_EQ(table.holders(0, 8, 12), 2);
    ASSERT_TRUE(table.blocker(0, 8, 12).has_value());
    EXPECT_EQ(table.blocker(0, 8, 12)->end, 10);
    EXPECT_EQ(table.next_free(0, 8, 4), 15);
    // Two lanes at once (a weight install's 4 streams, here 2 of 2) wait for both.
    EXPECT_EQ(table.next_free(0, 0, 5, 2), 30);
}

TEST(Timing, NextFreeIsTheFirstWindowWithRoomOnRandomTables) {
    // next_free sweeps the holds once; checked against the definition (every cycle of the
    // window has fewer than lanes - needed + 1 holders) on random multi-lane tables, holds
    // added out of start order as the list scheduler adds them.
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const int lanes = 2 + int(rng() % 4);
        ReservationTable table({lanes});
        std::vector<int> count(200, 0);
        for (int h = 0; h < 40; ++h) {
            const int64_t begin = rng() % 150, end = begin + 1 + rng() % 20;
            bool room = true;
            for (int64_t c = begin; c < end; ++c) room = room && count[c] < lanes;
            if (!room) continue;
            table.add_to_any_lane(0, {begin, end, h});
            for (int64_t c = begin; c < end; ++c) ++count[c];
        }
        for (int q = 0; q < 20; ++q) {
            const int64_t from = rng() % 160, duration = 1 + rng() % 12;
            const int needed = 1 + int(rng() % lanes);
            int64_t expected = from;
            auto fits = [&](int64_t t) {
                for (int64_t c = t; c < t + duration; ++c)
                    if (c < int64_t(count.size()) && count[c] + needed > lanes) return false;
                return true;
            };
            while (!fits(expected)) ++expected;
            EXPECT_EQ(table.next_free(0, from, duration, needed), expected)
                << "trial " << trial << ": " << lanes << " lanes, from " << from << " for " << duration << ", needing " << needed;
        }
    }
}

TEST(Timing, StaticReadBeforeDataLandsIsRejected) {
    expect_error(
        [] {
            // The host link lands 8 rows at 16 + 400 cycles; the bank port is free from 408 on.
            timing_only(".input A int8 [8,64]\n"
                        "@0 dma.load MEM.e0.b0[0:8], A@0[512]\n"
                        "@410 mem.copy MEM.e1.b0[0:8], MEM.e0.b0[0:8]\n",
                        "tsp-mini");
        },
        {"instruction 1", "data hazard with instruction 0", "MEM row", "reads it at cycle 410 but the data lands at cycle 416"});
}

TEST(Timing, AsapScheduleIsAccepted) {
    Program p = schedule_asap(assemble("nop 1\n"
                                       "mxm.mm.int8 m0.w0, ACC.b0[0:64], MEM.e0.b0[0:64]\n"
                                       "mxm.mm.int8 m0.w1, ACC.b0[64:64], MEM.e1.b0[0:64]\n"
                                       "mem.copy MEM.e2.b0[0:8], MEM.e0.b0[0:8]\n"),
                              model("tsp-mini"));
    EXPECT_EQ(p.instructions[1].cycle, 0);
    EXPECT_EQ(p.instructions[2].cycle, 64);
    EXPECT_EQ(p.instructions[3].cycle, 64); // MEM.e0's read port is busy with the first mm until 64
    SimOptions o;
    o.functional = false;
    EXPECT_NO_THROW(simulate(p, model("tsp-mini"), o));
}

TEST(Timing, StageProfileSplitsEachUnitsBusyCycles) {
    // The double-buffered npu-edge program, its instructions labelled with two stages by hand
    // (a compiler's labels): each unit's busy cycles are the sum of the stages' shares, and a
    // program without labels reports no stages.
    const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/apps/chip_programs/";
    Program p = assemble_file(dir + "npu_double_buffer.tasm");
    SimOptions o;
    o.inputs["A"] = from_npy(dir + "npu_double_buffer_A.npy", DType::BF16);
    o.inputs["B"] = from_npy(dir + "npu_double_buffer_B.npy", DType::BF16);
    EXPECT_TRUE(simulate(p, model("npu-edge"), o).report.stages.empty());
    p.stages = {"moves", "compute"};
    for (Instruction &in : p.instructions)
        in.stage = (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) ? 0 : 1;
    const Report r = simulate(p, model("npu-edge"), o).report;
    ASSERT_EQ(r.stages.size(), 2u);
    EXPECT_EQ(r.stages[0].name, "moves");
    EXPECT_EQ(r.stages[0].instructions + r.stages[1].instructions, r.instructions);
    EXPECT_EQ(r.stages[1].macs, r.macs);
    EXPECT_EQ(r.stages[0].macs, 0);
    EXPECT_GT(r.stages[0].busy_cycles.at("DRAM"), 0);
    for (const UnitReport &u : r.units) {
        int64_t sum = 0;
        for (const StageReport &s : r.stages)
            if (s.busy_cycles.count(u.name)) sum += s.busy_cycles.at(u.name);
        EXPECT_EQ(sum, u.busy_cycles) << u.name;
    }
}

TEST(Timing, SameProgramSameReportAndTrace) {
    const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/apps/chip_programs/";
    Program p = assemble_file(dir + "npu_double_buffer.tasm");
    SimOptions o;
    o.trace = true;
    o.inputs["A"] = from_npy(dir + "npu_double_buffer_A.npy", DType::BF16);
    o.inputs["B"] = from_npy(dir + "npu_double_buffer_B.npy", DType::BF16);
    SimResult a = simulate(p, model("npu-edge"), o), b = simulate(p, model("npu-edge"), o);
    EXPECT_EQ(a.report.to_json(), b.report.to_json());
    EXPECT_EQ(a.report.to_text(), b.report.to_text());
    EXPECT_EQ(chrome_trace_json(a, p, model("npu-edge")), chrome_trace_json(b, p, model("npu-edge")));
    EXPECT_EQ(a.outputs.at("C").bytes, b.outputs.at("C").bytes);
}

TEST(Timing, TraceHasATrackPerUnitAndBank) {
    auto r = timing_only(".input A int8 [4096]\ndma.load SPAD[0:64], A@0[4096]\nsync.signal.load 0\nsync.wait.exec 0\n"
                         "mxm.mm.int8 m0.w0, ACC[0:64], SPAD[0:64]\n",
                         "npu-edge", true);
    std::set<std::string> tracks;
    for (auto &e : r.trace) tracks.insert(e.track);
    for (const char *t : {"DMA.load", "DRAM", "SPAD.b0", "SPAD.b7", "MXM0", "ACC.b3.w"}) EXPECT_TRUE(tracks.count(t)) << t;
}
