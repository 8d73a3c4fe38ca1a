// The timing model's queries for the code generator: DMA and MXM step costs, instruction
// queues, row accesses, the address map and vector lanes. The backend plans with these numbers
// instead of copies of its own, so each is checked against what the simulator measures for a
// small program (or resolves, for the address map): a query that drifted from the simulator
// fails here, not as a slower or refused kernel.
#include "chipsim_test_util.h"

#include <algorithm>
#include <set>

using namespace chipsim_test;

namespace {

/// Start and end of program instruction `index` in a run.
std::pair<int64_t, int64_t> interval(const SimResult &r, int32_t index) {
    for (auto &t : r.timings)
        if (t.index == index) return {t.start, t.end};
    ADD_FAILURE() << "instruction " << index << " did not run";
    return {0, 0};
}

SimResult timing_only(const Program &p, const std::string &target, bool trace = false) {
    SimOptions o;
    o.functional = false;
    o.trace = trace;
    return simulate(p, model(target), o);
}

Instruction one(const std::string &line) { return assemble(line).instructions.at(0); }

} // namespace

TEST(BackendQueries, DmaCyclesAreWhatOneTransferTakesInTheSimulator) {
    // npu-edge: DRAM at 16 B/cycle, 8 cycles of set-up, 120 of latency; tsp-mini: the host link
    // at 32 B/cycle, no set-up, 400 of latency.
    EXPECT_EQ(model("npu-edge").dma_cycles(4096), 8 + 256 + 120);
    EXPECT_EQ(model("tsp-mini").dma_cycles(4096), 0 + 128 + 400);
    for (int64_t rows : {1, 7, 64}) {
        const std::string n = std::to_string(rows * 64), r = std::to_string(rows);
        SimResult npu = timing_only(assemble(".input A int8 [" + n + "]\ndma.load SPAD[0:" + r + "], A@0[" + n + "]\n"), "npu-edge");
        auto [s, e] = interval(npu, 0);
        EXPECT_EQ(e - s, model("npu-edge").dma_cycles(rows * 64)) << rows << " rows";
        Program tsp = schedule_asap(assemble(".input A int8 [" + n + "]\ndma.load MEM.e0.b0[0:" + r + "], A@0[" + n + "]\n"),
                                    model("tsp-mini"));
        auto [ts, te] = interval(timing_only(tsp, "tsp-mini"), 0);
        EXPECT_EQ(te - ts, model("tsp-mini").dma_cycles(rows * 64)) << rows << " rows";
    }
    const DmaCost c = model("npu-edge").dma_cost(100);
    EXPECT_EQ(c.setup, 8);
    EXPECT_EQ(c.transfer, 7); // ceil(100 / 16): a partial cycle of the bus is a whole one
    EXPECT_EQ(c.link_latency, 120);
    EXPECT_EQ(c.granule, 4); // a 64-byte burst at 16 B/cycle
}

TEST(BackendQueries, MxmStepCostsAreTheSpacingOfBackToBackInstructions) {
    // npu-edge issues the execute queue in order: the next matmul starts when the array has
    // accepted the previous one's rows, the next weight install when the previous rows are in.
    for (const char *dt : {"int8", "bf16"}) {
        SimResult r = timing_only(assemble(std::string("mxm.mm.") + dt + " m0.w0, ACC[0:64], SPAD[0:64]\n" + "mxm.mm." + dt +
                                           " m0.w0, ACC[64:64], SPAD[64:64]\n"),
                                  "npu-edge");
        const DType d = std::string(dt) == "int8" ? DType::Int8 : DType::BF16;
        EXPECT_EQ(interval(r, 1).first - interval(r, 0).first, model("npu-edge").mxm_rows_cycles(d, 64)) << dt;
    }
    EXPECT_EQ(model("npu-edge").mxm_rows_cycles(DType::BF16, 64), 128); // half rate
    SimResult lw = timing_only(assemble("mxm.lw.int8 m0.w0, SPAD[0:32]\nmxm.lw.int8 m0.w1, SPAD[32:32]\n"), "npu-edge");
    EXPECT_EQ(interval(lw, 1).first - interval(lw, 0).first, model("npu-edge").weight_install_cycles(32));
    // tsp-mini installs four rows a cycle (from four slices at once): the ASAP schedule puts the
    // second install on the plane's load port when the first one's rows are in.
    Program p = schedule_asap(assemble("mxm.lw.int8 m0.w0, MEM.w*.b0[0:64]\nmxm.lw.int8 m0.w1, MEM.w*.b1[0:64]\n"), model("tsp-mini"));
    EXPECT_EQ(p.instructions[1].cycle - p.instructions[0].cycle, model("tsp-mini").weight_install_cycles(64));
    EXPECT_EQ(model("tsp-mini").weight_install_cycles(64), 16);
    EXPECT_EQ(model("tsp-mini").weight_install_cycles(61), 16); // a partial cycle is a whole one
}

TEST(BackendQueries, QueueOfIsTheQueueTheSimulatorIssuesFrom) {
    // npu-edge issues each queue in order. An instruction behind a long one of its own queue
    // waits for it when it needs the same unit, or when the long one is a DMA (an engine takes
    // one transfer at a time); one for another unit of the queue goes ahead, as does one of
    // another queue (its rows and banks are apart from the long one's, which holds each bank
    // far shorter than its unit).
    const std::string decl = ".input A int8 [4096]\n.output C int8 [4096]\n";
    const std::string lw = "mxm.lw.int8 m0.w1, SPAD[4096:32]", drain = "mxm.drain.int32.int32 SPAD[4200:4], ACC[512:2]",
                      vxm = "vxm.add.fp32 SPAD[4300:4], SPAD[4310:4], SPAD[4320:4]", sxm = "sxm.transpose.fp32 SPAD[4400:16], SPAD[4416:16]",
                      copy = "mem.copy SPAD[4500:8], SPAD[4600:8]", store = "dma.store C@0[4096], SPAD[4700:64]",
                      load = "dma.load SPAD[4800:64], A@0[4096]";
    struct Long {
        std::string text;
        int64_t busy;
        std::set<std::string> waiting;
    };
    const std::vector<Long> longs = {
        {"mxm.mm.int8 m0.w0, ACC[0:256], SPAD[0:256]", 256, {}},                          // exec: 256 rows into the array
        {"dma.load SPAD[256:64], A@0[4096]", 384, {copy, load}},                           // load: until the transfer ends
        {"vxm.add.fp32 SPAD[1024:512], SPAD[2048:512], SPAD[3072:512]", 256, {vxm}},      // vector: 512 rows at 128 B/cycle
    };
    int same = 0;
    for (const Long &first : longs)
        for (const std::string &x : {lw, drain, vxm, sxm, copy, store, load}) {
            const Program p = assemble(decl + first.text + "\n" + x + "\n");
            const bool queued = queue_of(p.instructions[0]) == queue_of(p.instructions[1]);
            same += queued;
            const int64_t start = interval(timing_only(p, "npu-edge"), 1).first;
            EXPECT_EQ(start >= first.busy, first.waiting.count(x) == 1) << first.text << " then " << x << ": starts at " << start;
            if (queued) EXPECT_GE(start, 1) << "in order: one instruction a cycle";
        }
    EXPECT_EQ(same, 6) << "exec: lw, drain; load: mem.copy, dma.load; vector: vxm, sxm";
    EXPECT_EQ(queue_of(assemble("dma.store C@0[64], SPAD[0:1]").instructions[0]), Queue::Store);
    EXPECT_EQ(queue_of(assemble("nop.vector 3").instructions[0]), Queue::Vector); // nop and sync name theirs
}

TEST(BackendQueries, RowAccessesAreTheRowsAndTimesTheHazardCheckerSees) {
    const TimingModel &m = model("tsp-mini");
    // A matmul: its activation rows read one a cycle from its start, its accumulator rows
    // written after the pipeline's latency, and its weight buffer read from the first row to
    // the last.
    const Instruction mm = one("@0 mxm.mm.int8 m1.w1, ACC.b1[0:4], MEM.w0.b0[8:4]");
    const ResourceUse use = m.resources(mm);
    const std::vector<RowAccess> acc = m.row_accesses(mm, use);
    const int mem = 0, accm = 1;
    std::vector<RowAccess> reads, writes, weights;
    for (auto &a : acc) (a.space == m.weight_space() ? weights : a.write ? writes : reads).push_back(a);
    ASSERT_EQ(reads.size(), 4u);
    ASSERT_EQ(writes.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(reads[size_t(i)].space, mem);
        EXPECT_EQ(reads[size_t(i)].row, 8 + i); // bank w0.b0 is flat bank 0: rows 0..2047
        EXPECT_EQ(reads[size_t(i)].offset, i);
        EXPECT_EQ(writes[size_t(i)].space, accm);
        EXPECT_EQ(writes[size_t(i)].row, 1024 + i); // ACC.b1: the second bank's rows
        EXPECT_EQ(writes[size_t(i)].offset, use.latency - use.issue_cycles + i);
    }
    ASSERT_EQ(weights.size(), 2u);
    EXPECT_EQ(weights[0].row, 1 * 2 + 1); // plane 1, buffer 1 of 2
    EXPECT_EQ(weights[1].offset, use.issue_cycles - 1);
    EXPECT_FALSE(weights[0].write);
    // The ASAP schedule starts a reader of rows as early as each row it reads has landed when it
    // reads it: a drain of the accumulator rows above.
    Program p = schedule_asap(assemble("mxm.mm.int8 m1.w1, ACC.b1[0:4], MEM.w0.b0[8:4]\n"
                                       "mxm.drain.int32.int32 MEM.e1.b0[0:16], ACC.b1[0:4]\n"),
                              m);
    const Instruction drain = p.instructions[1];
    int64_t landed = 0; // the earliest start at which every accumulator row it reads has landed
    for (auto &a : m.row_accesses(drain, m.resources(drain)))
        if (a.space == accm) landed = std::max(landed, writes.at(size_t(a.row - 1024)).offset + 1 - a.offset);
    EXPECT_EQ(drain.cycle, landed);
    EXPECT_GT(landed, 0);
    // DRAM granules, for a program that writes DRAM and reads it back: a strided store of two
    // 32-byte pieces at bytes 48 and 176 touches granules 0, 1 (48..79) and 2, 3 (176..207).
    const TimingModel &npu = model("npu-edge");
    const Instruction st = one("dma.store DRAM@48[2:128,32], SPAD[0:1]");
    std::vector<int64_t> granules;
    for (auto &a : npu.row_accesses(st, npu.resources(st), /*dram_granules=*/true))
        if (a.space == npu.dram_space()) {
            granules.push_back(a.row);
            EXPECT_TRUE(a.write && a.at_end);
        }
    EXPECT_EQ(granules, (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(npu.dram_granule_bytes(), 64);
    for (auto &a : npu.row_accesses(st, npu.resources(st))) EXPECT_NE(a.space, npu.dram_space()) << "only when asked";
}

TEST(BackendQueries, TheAddressMapsTilesResolveToTheBanksTheyName) {
    const TimingModel &m = model("tsp-mini");
    const MemoryDesc &mem = m.target().memories[0];
    // Every flat bank: a tile built for it resolves to rows of that bank alone.
    for (int h = 0; h < mem.hemispheres; ++h)
        for (int s = 0; s < mem.slices; ++s)
            for (int b = 0; b < mem.banks; ++b) {
                const int fb = mem.flat_bank(h, s, b);
                const TileRef t = bank_tile(mem, fb, 100, 3);
                EXPECT_EQ(t.side, h ? 'e' : 'w');
                const ResolvedTile rt = m.resolve(t);
                for (int i = 0; i < 3; ++i) {
                    EXPECT_EQ(rt.banks[size_t(i)], fb);
                    EXPECT_EQ(rt.slices[size_t(i)], mem.flat_slice(h, s));
                    EXPECT_EQ(rt.rows[size_t(i)], int64_t(fb) * mem.rows_per_bank + 100 + i);
                }
                const std::vector<BankSpan> spans = bank_spans(mem, t);
                ASSERT_EQ(spans.size(), 1u);
                EXPECT_EQ(spans[0].bank, fb);
                EXPECT_EQ(spans[0].begin, 100);
                EXPECT_EQ(spans[0].end, 103);
            }
    // Interleaved over the east slices at bank 1 from local row 5: row i in slice i mod slices,
    // at local row 5 + i / slices; the spans cover exactly the local rows the rows land on.
    const TileRef il = slice_interleaved_tile(mem, 1, 1, 5, 19);
    const ResolvedTile rt = m.resolve(il);
    const std::vector<BankSpan> spans = bank_spans(mem, il);
    ASSERT_EQ(spans.size(), size_t(mem.slices));
    EXPECT_EQ(mem.rows_per_slice(19), 3);
    for (int i = 0; i < 19; ++i) {
        const int fb = mem.flat_bank(1, i % mem.slices, 1);
        EXPECT_EQ(rt.banks[size_t(i)], fb);
        const int64_t local = rt.rows[size_t(i)] - int64_t(fb) * mem.rows_per_bank;
        EXPECT_EQ(local, 5 + i / mem.slices);
        const BankSpan &sp = spans[size_t(i % mem.slices)];
        EXPECT_EQ(sp.bank, fb);
        EXPECT_TRUE(sp.begin <= local && local < sp.end);
    }
    // npu-edge's SPAD interleaves rows over its banks (bank = row mod banks): one flat space.
    const MemoryDesc &spad = model("npu-edge").target().memories[0];
    TileRef flat;
    flat.memory = spad.name;
    flat.base = 10;
    flat.count = 6;
    const std::vector<BankSpan> fs = bank_spans(spad, flat);
    ASSERT_EQ(fs.size(), 1u);
    EXPECT_EQ(fs[0].bank, -1);
    EXPECT_EQ(fs[0].begin, 10);
    EXPECT_EQ(fs[0].end, 16);
    EXPECT_EQ(model("npu-edge").resolve(flat).banks[0], 10 % spad.banks);
}

TEST(BackendQueries, LanesAreVectorBytesOverElementBytes) {
    Target t = load_target("tsp-mini");
    EXPECT_EQ(t.lanes(DType::FP32), 16);
    EXPECT_EQ(t.lanes(DType::BF16), 32);
    EXPECT_EQ(t.lanes(DType::Int8), 64);
    // The simulator agrees: a lane reduction's tree is log2(lanes) levels deep, and a transpose
    // works on blocks of `lanes` rows.
    t.vector_bytes = 32;
    for (auto &mem : t.memories)
        if (!mem.accumulator) mem.row_bytes = 32;
    t.mxm.int8 = {32, 32, 1};
    t.mxm.floating = {16, 16, 1};
    const Target narrow = load_target_json(t.to_json(), "narrow.json");
    EXPECT_EQ(narrow.lanes(DType::FP32), 8);
    const TimingModel nm(narrow);
    const int64_t reduce = nm.latency(one("@0 vxm.reduce.max.lanes.fp32 MEM.e0.b0[0:1], MEM.w0.b0[0:1]"));
    const int64_t reduce64 = model("tsp-mini").latency(one("@0 vxm.reduce.max.lanes.fp32 MEM.e0.b0[0:1], MEM.w0.b0[0:1]"));
    EXPECT_EQ(reduce64 - reduce, 1) << "log2(16) - log2(8)";
    expect_error([&] { nm.resources(one("@0 sxm.transpose.fp32 MEM.w0.b0[0:12], MEM.w1.b0[0:12]")); }, {"blocks of 8 rows"});
}
