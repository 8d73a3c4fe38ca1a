// npu-edge's matmul schedule: operand tiles live in equal scratchpad slots planned ahead of the
// kernel (which tiles stay, and the slot each load goes to), and loads run ahead of the
// matmuls across output tiles. Correct when tiles must be reloaded, and as fast as the
// benchmark says (simulated cycles are exact, so the figures are pinned, not sampled).
#include "chip_test_util.h"
#include "test_support.h"

#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/chipsim/target.h>
#include <tessera/codegen/chip_schedules.h>

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <fstream>

namespace tessera {
namespace {

/// npu-edge with a 64 KiB scratchpad (1024 rows instead of 8192), written as a target file: a
/// small matmul then has the pressure of a large one (an A band larger than the scratchpad).
std::string small_scratchpad_npu() {
    chipsim::Target t = chipsim::load_target("npu-edge");
    t.name = "npu-edge-64k";
    for (auto &m : t.memories)
        if (!m.accumulator) m.rows_per_bank = 128;
    const std::string path = (tessera_test::unique_temp_dir() / "npu-edge-64k.json").string();
    std::ofstream(path) << t.to_json();
    return path;
}

int64_t loads_of(const ChipResult &r, const std::string &tensor) {
    int64_t n = 0;
    for (auto &in : r.program.program.instructions)
        if (in.op == chipsim::Opcode::DmaLoad && in.view.tensor == tensor) ++n;
    return n;
}

TEST(ChipMatmulNpu, TilesReloadedUnderScratchpadPressureEqualReference) {
    // 256-row tiles over K = 352 (11 K blocks, A in groups of 2: 6 groups per row band) with two
    // slots of 512 rows: no A band stays, so every tile reloads its A groups. Two row bands (the
    // second partial), column tiles of 4 blocks then 3 (N padded to 224), snaking between bands.
    const std::string chip = small_scratchpad_npu();
    const int m = 300, n = 200, k = 330;
    Input A(Int(8), {m, k}, "A"), B(Int(8), {k, n}, "B");
    Func c = ops::matmul(A, B);
    ChipResult r = test::expect_matches_reference(Pipeline(c), {m, n},
                                                  {{A, test::random_buffer(Int(8), {m, k}, 71)},
                                                   {B, test::random_buffer(Int(8), {k, n}, 72)}},
                                                  chip, Int(8));
    EXPECT_NE(r.program.summary.find("2 SPAD slots"), std::string::npos) << r.program.summary;
    EXPECT_EQ(loads_of(r, "A"), 4 * 6) << "each of the 4 output tiles loads its band's 6 A groups";
}

TEST(ChipMatmulNpu, EpilogueTemporariesShareTheSlotsAndEqualReference) {
    // bias + GELU (9 vxm steps) on 8 slots of 128 rows: a drain step needs its tile, the bias
    // and the GELU temporaries that are still to be read in slots at once, beside the operand
    // tiles the loads have run ahead with; a temporary's slot is reused once it has been read
    // (never while it still has a reader: it cannot be loaded back), and the A band (5
    // groups) does not stay.
    const std::string chip = small_scratchpad_npu();
    Input A(BFloat(16), {64, 300}, "A"), B(BFloat(16), {300, 96}, "B"), bias(Float(32), {96}, "bias");
    Func out = ops::gelu(ops::add(ops::matmul(A, B), bias), ops::GeluApproximation::Tanh);
    ChipResult r = test::expect_matches_reference(Pipeline(out), {64, 96},
                                                  {{A, test::random_buffer(BFloat(16), {64, 300}, 73)},
                                                   {B, test::random_buffer(BFloat(16), {300, 96}, 74)},
                                                   {bias, test::random_buffer(Float(32), {96}, 75)}},
                                                  chip, BFloat(16), 300);
    EXPECT_NE(r.program.assembly().find("tanh"), std::string::npos);
    EXPECT_NE(r.program.summary.find("8 SPAD slots"), std::string::npos) << r.program.summary;
    // Too many live GELU values for 5 slots of 200 rows (100-row tiles): an error, not a wrong result.
    Input A2(BFloat(16), {100, 300}, "A");
    Func out2 = ops::gelu(ops::add(ops::matmul(A2, B), bias), ops::GeluApproximation::Tanh);
    test::expect_chip_error(Pipeline(out2), {100, 96}, chip, "use a smaller tile");
}

/// Simulated cycles of the library matmul on npu-edge, timing only (no values move).
chipsim::Report npu_matmul_timing(int64_t s, Type t) {
    Input A(t, {int(s), int(s)}, "A"), B(t, {int(s), int(s)}, "B");
    Func c = ops::matmul(A, B);
    apply_chip_library_schedule(Pipeline(c), Target::named("npu-edge"), {{s, s}});
    ChipProgram p = compile_for_chip(Pipeline(c), Target::named("npu-edge"), {{s, s}});
    ChipRunOptions o;
    o.functional = false;
    return run_on_chip(p, {}, o).report;
}

TEST(ChipMatmulNpu, LargeMatmulsReachTheirRoofline) {
    // 1024^3 does not fit the scratchpad (an A band of 256 rows is the whole of it): the loads
    // run ahead across output tiles, and the kernel stays within 10 % of its roofline bound
    // (bf16: the MXM). int8 packs two K blocks a scratchpad row, so A and B cross DRAM once per
    // load and the roofline is the MXM's too; measured 82.6 % of the problem bound (77.3 % when
    // every byte travelled twice).
    const chipsim::Report bf16 = npu_matmul_timing(1024, BFloat(16));
    EXPECT_EQ(bf16.roofline_limiter, "compute");
    EXPECT_GE(bf16.roofline_cycles / double(bf16.cycles), 0.90) << bf16.cycles << " cycles";
    const chipsim::Report int8 = npu_matmul_timing(1024, Int(8));
    EXPECT_EQ(int8.problem_bound_limiter, "compute");
    EXPECT_GE(int8.problem_bound_cycles / double(int8.cycles), 0.82) << int8.cycles << " cycles";
    EXPECT_GE(int8.mxm_utilization, 0.82) << int8.cycles << " cycles";
}

TEST(ChipMatmulNpu, HalfSizeMatmulsReachEightyFivePercentOfTheirRoofline) {
    // 512^3: the A band stays, the next band's comes in under the current band's last tile,
    // and the last tile goes one column block at a time so that its stores overlap its
    // matmuls. bf16 measured 88.0 % of its (MXM) roofline; int8, its operands packed two
    // blocks a row, 79.5 % of the problem bound (74.3 % unpacked): with 256-row tiles each
    // 32-cycle weight install and each drain holds the in-order execute queue, so at most
    // 16 x 256 / (16 x 288 + 256) = 84.2 % of the MXM is reachable.
    const chipsim::Report bf16 = npu_matmul_timing(512, BFloat(16));
    EXPECT_GE(bf16.roofline_cycles / double(bf16.cycles), 0.85) << bf16.cycles << " cycles";
    const chipsim::Report int8 = npu_matmul_timing(512, Int(8));
    EXPECT_GE(int8.problem_bound_cycles / double(int8.cycles), 0.79) << int8.cycles << " cycles";
}

/// npu-edge's int8 matmul with the library schedule plus `edit` applied to its JSON form (the
/// way a tuned schedule reaches the backend), run functionally.
ChipResult npu_int8_matmul_with(const std::function<void(std::string &json)> &edit, int m, int n, int k,
                                const std::string &chip = "npu-edge") {
    Input A(Int(8), {m, k}, "A"), B(Int(8), {k, n}, "B");
    Func c = ops::matmul(A, B);
    Pipeline p(c);
    apply_chip_library_schedule(p, Target::named(chip), {{m, n}});
    std::string json = p.schedule().to_json(-1); // one line: {"memory":"ACC","op":"store_in"}
    edit(json);
    p.set_schedule(Schedule::from_json(json, "edited schedule"));
    return test::expect_matches_reference(p, {m, n},
                                          {{A, test::random_buffer(Int(8), {m, k}, 81)}, {B, test::random_buffer(Int(8), {k, n}, 82)}},
                                          chip, Int(8));
}

/// Adds `directive` (its JSON) to the directives of the Func that stores in ACC (the matmul's product).
std::function<void(std::string &)> add_to_product(const std::string &directive) {
    return [directive](std::string &json) {
        const std::string acc = "\"memory\":\"ACC\",\"op\":\"store_in\"}";
        const size_t at = json.find(acc);
        ASSERT_NE(at, std::string::npos) << json;
        json.insert(at + acc.size(), "," + directive);
    };
}

/// Adds blocks_per_row(n) to the product's directives.
std::function<void(std::string &)> blocks_per_row(int n) {
    return add_to_product("{\"factors\":[" + std::to_string(n) + "],\"op\":\"blocks_per_row\"}");
}

/// Adds tile_order(order) to the product's directives.
std::function<void(std::string &)> tile_order(const std::string &order) {
    return add_to_product("{\"op\":\"tile_order\",\"vars\":[\"" + order + "\"]}");
}

/// Replaces the library's double_buffer() on the product by double_buffer with these factors.
std::function<void(std::string &)> double_buffer(const std::string &factors) {
    return [factors](std::string &json) {
        const std::string on = "{\"op\":\"double_buffer\"}";
        const size_t at = json.find(on);
        ASSERT_NE(at, std::string::npos) << json;
        json.replace(at, on.size(), "{\"factors\":[" + factors + "],\"op\":\"double_buffer\"}");
    };
}

int64_t dram_bytes_loaded(const ChipResult &r) {
    int64_t bytes = 0;
    for (auto &in : r.program.program.instructions)
        if (in.op == chipsim::Opcode::DmaLoad) bytes += in.view.total_bytes();
    return bytes;
}

TEST(ChipMatmulNpu, BlocksPerRowDirectiveChangesTheProgramAndTheCycles) {
    // An int8 block is 32 bytes of a 64-byte scratchpad row. One a row: A and B cross DRAM
    // twice (the DMA repeats each 32 bytes); two a row: once, and an sxm.shift brings the
    // second block to the lanes the array reads. Unset, the rule packs.
    const int m = 128, n = 128, k = 256;
    const ChipResult one = npu_int8_matmul_with(blocks_per_row(1), m, n, k);
    const ChipResult two = npu_int8_matmul_with(blocks_per_row(2), m, n, k);
    const ChipResult rule = npu_int8_matmul_with([](std::string &) {}, m, n, k);
    EXPECT_EQ(one.program.assembly().find("sxm.shift"), std::string::npos);
    EXPECT_NE(two.program.assembly().find("sxm.shift"), std::string::npos);
    EXPECT_NE(two.program.summary.find("packed two blocks a row"), std::string::npos) << two.program.summary;
    EXPECT_EQ(dram_bytes_loaded(one), 2 * (m * k + k * n)) << "every operand byte twice";
    EXPECT_EQ(dram_bytes_loaded(two), m * k + k * n) << "every operand byte once";
    EXPECT_LT(two.report.cycles, one.report.cycles);
    EXPECT_EQ(rule.program.assembly(), two.program.assembly());
    EXPECT_EQ(rule.report.cycles, two.report.cycles);
}

TEST(ChipMatmulNpu, PackedRowsWithOddBlockCountsEqualReference) {
    // K = 96 (3 K blocks: A cannot pair its blocks and keeps one a row) and N = 160 (5 column
    // blocks: tiles of an even count pack B, the odd last one does not), under the rule.
    const ChipResult r = npu_int8_matmul_with([](std::string &) {}, 100, 160, 96);
    EXPECT_NE(r.program.summary.find("; B rows packed"), std::string::npos) << r.program.summary;
    EXPECT_NE(r.program.assembly().find("sxm.shift"), std::string::npos);
}

TEST(ChipMatmulNpu, BlocksPerRowLegalValuesAndRefusals) {
    const chipsim::Target npu = chipsim::load_target("npu-edge"), tsp = chipsim::load_target("tsp-mini");
    EXPECT_EQ(chip_blocks_per_row_values(npu, chipsim::DType::Int8), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(chip_blocks_per_row_values(npu, chipsim::DType::BF16), (std::vector<int64_t>{1})) << "a bf16 block fills a row";
    EXPECT_EQ(chip_blocks_per_row_values(tsp, chipsim::DType::Int8), (std::vector<int64_t>{1}));
    EXPECT_EQ(chip_blocks_per_row_values(test::with_32_byte_vectors(npu), chipsim::DType::Int8), (std::vector<int64_t>{1}));

    Input A(BFloat(16), {64, 64}, "A"), B(BFloat(16), {64, 64}, "B");
    Func c = ops::matmul(A, B);
    apply_chip_library_schedule(Pipeline(c), Target::named("npu-edge"), {{64, 64}});
    c.blocks_per_row(2);
    test::expect_chip_error(Pipeline(c), {64, 64}, "npu-edge", "npu-edge takes 1 bf16 MXM block(s) per SPAD row");
    Input A8(Int(8), {64, 64}, "A"), B8(Int(8), {64, 64}, "B");
    Func c8 = ops::matmul(A8, B8);
    apply_chip_library_schedule(Pipeline(c8), Target::named("tsp-mini"), {{64, 64}});
    c8.blocks_per_row(2);
    test::expect_chip_error(Pipeline(c8), {64, 64}, "tsp-mini", "tsp-mini takes 1 int8 MXM block(s) per MEM row");
    Func c3 = ops::matmul(A8, B8);
    apply_chip_library_schedule(Pipeline(c3), Target::named("npu-edge"), {{64, 64}});
    c3.blocks_per_row(3);
    test::expect_chip_error(Pipeline(c3), {64, 64}, "npu-edge", "npu-edge takes 1 or 2 int8 MXM block(s) per SPAD row");
    EXPECT_THROW(c3.blocks_per_row(0), Error);
}

/// The output tiles' order of a chip's (tile m, tile n) pairs, read from the drains' ACC reads
/// is hard; the stores' C offsets say it: each output tile's first store, in program order.
std::vector<int64_t> c_store_offsets(const ChipResult &r) {
    std::vector<int64_t> offsets;
    for (auto &in : r.program.program.instructions)
        if (in.op == chipsim::Opcode::DmaStore && in.view.tensor == "C") offsets.push_back(in.view.offset);
    return offsets;
}

TEST(ChipMatmulNpu, TileOrderDirectiveChangesTheProgramAndTheCycles) {
    // 512 x 512 int8 over K = 256: two row bands of 256 rows and several column tiles. Every
    // order computes the same result (each equals the reference evaluator); the rule snakes
    // the rows, "columns" walks down each column of tiles first, so the stores come in
    // another order and the operands are reused differently.
    const int m = 512, n = 512, k = 256;
    const ChipResult rule = npu_int8_matmul_with([](std::string &) {}, m, n, k);
    std::map<std::string, ChipResult> by_order;
    for (const std::string &order : chip_tile_order_values(chipsim::load_target("npu-edge")))
        by_order.emplace(order, npu_int8_matmul_with(tile_order(order), m, n, k));
    ASSERT_EQ(by_order.size(), 4u);
    EXPECT_EQ(rule.program.assembly(), by_order.at("rows_snake").program.assembly()) << "unset: rows_snake";
    EXPECT_EQ(rule.report.cycles, by_order.at("rows_snake").report.cycles);
    EXPECT_NE(by_order.at("columns").program.summary.find("in columns order"), std::string::npos)
        << by_order.at("columns").program.summary;
    std::set<std::vector<int64_t>> store_orders;
    std::set<int64_t> cycles;
    for (const auto &[order, r] : by_order) {
        store_orders.insert(c_store_offsets(r));
        cycles.insert(r.report.cycles);
    }
    EXPECT_EQ(store_orders.size(), 4u) << "each order stores its tiles in another order";
    EXPECT_GE(cycles.size(), 2u) << "the order changes the cycles";
}

// Orders that walk a grid of output tiles alike make one program; the legal values for a grid
// keep the first of them, so the tuner compiles one. A single tile has one walk; on one row or
// column of tiles the order is the same in every group (a batch's matmuls) but for a snaking
// one, whose every other group walks backwards.
TEST(ChipMatmulNpu, OrdersThatWalkTheTilesAlikeAreOneValue) {
    const chipsim::Target npu = chipsim::load_target("npu-edge");
    EXPECT_EQ(chip_tile_order_values(npu, 1, 1), (std::vector<std::string>{"rows_snake"}));
    EXPECT_EQ(chip_tile_order_values(npu, 1, 4), (std::vector<std::string>{"rows_snake", "rows"}));
    EXPECT_EQ(chip_tile_order_values(npu, 3, 1), (std::vector<std::string>{"rows_snake", "columns_snake"}));
    EXPECT_EQ(chip_tile_order_values(npu, 2, 2), chip_tile_order_values(npu));
    EXPECT_TRUE(chip_tile_order_values(chipsim::load_target("tsp-mini"), 1, 4).empty());
    // One row band of 256 rows, four column tiles of 128: every order, one program.
    std::set<std::string> programs;
    for (const std::string &order : chip_tile_order_values(npu)) programs.insert(npu_int8_matmul_with(tile_order(order), 256, 512, 64).program.assembly());
    EXPECT_EQ(programs.size(), 1u);
    // Two matmuls in a batch, one row band of four column tiles each: rows_snake walks the
    // second one's tiles backwards, the other orders as rows does.
    Input A(Int(8), {2, 256, 64}, "A"), B(Int(8), {2, 64, 512}, "B");
    const Bindings bind{{A, test::random_buffer(Int(8), {2, 256, 64}, 101)}, {B, test::random_buffer(Int(8), {2, 64, 512}, 102)}};
    std::map<std::string, std::string> by_order;
    for (const std::string &order : chip_tile_order_values(npu)) {
        Pipeline p(ops::matmul(A, B));
        apply_chip_library_schedule(p, Target::named("npu-edge"), {{2, 256, 512}});
        std::string json = p.schedule().to_json(-1);
        tile_order(order)(json);
        p.set_schedule(Schedule::from_json(json, "edited schedule"));
        by_order[order] = test::expect_matches_reference(p, {2, 256, 512}, bind, "npu-edge", Int(8)).program.assembly();
    }
    EXPECT_TRUE(by_order.at("rows_snake") != by_order.at("rows")) << "the second matmul's tiles walked backwards";
    EXPECT_TRUE(by_order.at("rows") == by_order.at("columns"));
    EXPECT_TRUE(by_order.at("rows") == by_order.at("columns_snake"));
}

TEST(ChipMatmulNpu, TileOrderLegalValuesAndRefusals) {
    const chipsim::Target npu = chipsim::load_target("npu-edge"), tsp = chipsim::load_target("tsp-mini");
    EXPECT_EQ(chip_tile_order_values(npu), (std::vector<std::string>{"rows_snake", "rows", "columns_snake", "columns"}));
    EXPECT_TRUE(chip_tile_order_values(tsp).empty()) << "tsp-mini's plane waves fix the order";
    Input A8(Int(8), {64, 64}, "A"), B8(Int(8), {64, 64}, "B");
    Func c = ops::matmul(A8, B8);
    apply_chip_library_schedule(Pipeline(c), Target::named("npu-edge"), {{64, 64}});
    c.tile_order("diagonal");
    test::expect_chip_error(Pipeline(c), {64, 64}, "npu-edge",
                            "tile_order(diagonal): npu-edge orders output tiles as \"rows_snake\", \"rows\", \"columns_snake\", \"columns\"");
    Func t = ops::matmul(A8, B8);
    apply_chip_library_schedule(Pipeline(t), Target::named("tsp-mini"), {{64, 64}});
    t.tile_order("rows");
    test::expect_chip_error(Pipeline(t), {64, 64}, "tsp-mini", "in one fixed order: drop tile_order");
    EXPECT_THROW(t.tile_order(""), Error);
}

TEST(ChipMatmulNpu, DoubleBufferOffIsOneAccumulatorBufferOnBothChips) {
    // Unset or on, the accumulators hold two output tiles where they fit, so the next tile
    // accumulates while the last drains; double_buffer(false) keeps one. tsp-mini 1024 x 256:
    // two 512-row jobs per plane, the second then waits for the first's drain; npu-edge 256^2:
    // two 256 x 64 tiles fit its ACC.
    EXPECT_EQ(chip_double_buffer_values(chipsim::load_target("tsp-mini")), (std::vector<int64_t>{0, 1}));
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(chip);
        const int m = chip == "tsp-mini" ? 1024 : 256, n = 256, k = 256;
        const ChipResult on = npu_int8_matmul_with([](std::string &) {}, m, n, k, chip);
        const ChipResult off = npu_int8_matmul_with(double_buffer("0"), m, n, k, chip);
        const ChipResult on1 = npu_int8_matmul_with(double_buffer("1"), m, n, k, chip);
        EXPECT_NE(on.program.summary.find("double-buffered"), std::string::npos) << on.program.summary;
        EXPECT_NE(off.program.summary.find("single-buffered"), std::string::npos) << off.program.summary;
        EXPECT_NE(off.program.assembly(), on.program.assembly());
        EXPECT_EQ(on1.program.assembly(), on.program.assembly());
        if (chip == "tsp-mini") EXPECT_GT(off.report.cycles, on.report.cycles);
    }
    Input A8(Int(8), {64, 64}, "A"), B8(Int(8), {64, 64}, "B");
    Func c = ops::matmul(A8, B8);
    Pipeline p(c);
    apply_chip_library_schedule(p, Target::named("npu-edge"), {{64, 64}});
    std::string json = p.schedule().to_json(-1);
    double_buffer("2")(json);
    p.set_schedule(Schedule::from_json(json, "edited schedule"));
    test::expect_chip_error(p, {64, 64}, "npu-edge", "factors [] or [1] (on) or [0] (off)");
    // The DSL's off state is that JSON, and prints as it.
    Func d = ops::matmul(A8, B8);
    d.double_buffer(false);
    EXPECT_NE(d.schedule().to_json(-1).find("{\"factors\":[0],\"op\":\"double_buffer\"}"), std::string::npos)
        << d.schedule().to_json(-1);
    EXPECT_NE(d.schedule().to_string().find("double_buffer(0)"), std::string::npos) << d.schedule().to_string();
}

// npu-edge reads a conv's image by bands: the padded image rows one output tile's windows read
// come into the scratchpad once, and every tap's window is rows of them (one matmul per output
// row), where each tap's window used to come from DRAM on its own (3x3: the image nine times).
// So the padded image crosses DRAM about once: a band's extra rows are the kernel's height less
// the stride. Several bands (two buffers, the next loading as one is read), both tile orders
// (bands reloaded per column tile), int8 packed two blocks a row (the odd block from a
// shifted copy) and one a row (repeated), bf16 with stride 2, half-row pixels with dilation 2,
// and two images: all equal the reference.
TEST(ChipConvNpu, TheImageComesInByBandsAndCrossesDramAboutOnce) {
    struct Case {
        std::string name;
        int n, c, h, w, o, stride, pad, dilation;
        Type type;
        ops::Layout layout;
        std::function<void(std::string &)> edit;
        double at_most; // DRAM image bytes loaded, in padded images (a repeated half row counts twice)
    };
    const std::function<void(std::string &)> rule = [](std::string &) {};
    const std::vector<Case> cases{
        {"int8 packed", 1, 64, 30, 30, 64, 1, 1, 1, Int(8), ops::Layout::NHWC, rule, 1.25},
        {"int8 a block a row", 1, 64, 30, 30, 64, 1, 1, 1, Int(8), ops::Layout::NHWC, blocks_per_row(1), 2 * 1.25},
        {"two images, column tiles outermost", 2, 64, 20, 20, 256, 1, 1, 1, Int(8), ops::Layout::NHWC, tile_order("columns"), 2 * 1.25},
        {"bf16 stride 2", 1, 32, 48, 48, 48, 2, 1, 1, BFloat(16), ops::Layout::NHWC, rule, 1.1},
        {"half-row pixels, dilation 2", 2, 16, 33, 33, 32, 1, 2, 2, Int(8), ops::Layout::NCHW, rule, 2 * 1.5},
    };
    for (const Case &cc : cases) {
        SCOPED_TRACE(cc.name);
        const bool nchw = cc.layout == ops::Layout::NCHW;
        const std::vector<int64_t> xs = nchw ? std::vector<int64_t>{cc.n, cc.c, cc.h, cc.w} : std::vector<int64_t>{cc.n, cc.h, cc.w, cc.c};
        const std::vector<int64_t> ws = nchw ? std::vector<int64_t>{cc.o, cc.c, 3, 3} : std::vector<int64_t>{3, 3, cc.c, cc.o};
        Input X(cc.type, test::extents(xs), "X"), Wt(cc.type, test::extents(ws), "Wt");
        ops::Conv2dOptions opt;
        opt.stride = {cc.stride, cc.stride};
        opt.padding = cc.pad;
        opt.dilation = {cc.dilation, cc.dilation};
        opt.layout = cc.layout;
        Pipeline p(ops::conv2d(X, Wt, opt));
        const int64_t span = 2 * cc.dilation + 1, oh = (cc.h + 2 * cc.pad - span) / cc.stride + 1, ow = (cc.w + 2 * cc.pad - span) / cc.stride + 1;
        const std::vector<int64_t> shape = nchw ? std::vector<int64_t>{cc.n, cc.o, oh, ow} : std::vector<int64_t>{cc.n, oh, ow, cc.o};
        apply_chip_library_schedule(p, Target::named("npu-edge"), {shape});
        std::string json = p.schedule().to_json(-1);
        cc.edit(json);
        p.set_schedule(Schedule::from_json(json, "edited schedule"));
        const ChipResult r = test::expect_matches_reference(
            p, shape, {{X, test::random_buffer(cc.type, xs, 91)}, {Wt, test::random_buffer(cc.type, ws, 92)}}, "npu-edge", cc.type, cc.c * 9);
        EXPECT_NE(r.program.summary.find("the image by bands of"), std::string::npos) << r.program.summary;
        // Every case's output is taller than one tile: several bands, two buffers.
        EXPECT_NE(r.program.summary.find("2 band buffer(s)"), std::string::npos) << r.program.summary;
        // The bands come from the padded image the pre-pass wrote to DRAM ([N, Hp, Wp, channels
        // a whole number of blocks]), or, NHWC, from the image itself (X), the padding zeroed on
        // chip: at least the image once, at most a little more than the padded image once.
        const bool as_it_is = !nchw;
        EXPECT_EQ(r.program.summary.find("read from the unpadded image") != std::string::npos, as_it_is) << r.program.summary;
        const int64_t hp = std::max<int64_t>((oh - 1) * cc.stride + span, cc.h + cc.pad), wp = std::max<int64_t>((ow - 1) * cc.stride + span, cc.w + cc.pad);
        const chipsim::DType dtype = cc.type == Int(8) ? chipsim::DType::Int8 : chipsim::DType::BF16;
        const int64_t block = chipsim::load_target("npu-edge").mxm_shape(dtype).k, cp = (cc.c + block - 1) / block * block;
        const double padded = double(cc.n * hp * wp * cp * cc.type.bytes());
        int64_t loaded = 0;
        for (const auto &in : r.program.program.instructions)
            if (in.op == chipsim::Opcode::DmaLoad && in.view.tensor == (as_it_is ? "X" : "DRAM")) loaded += in.view.total_bytes();
        EXPECT_GE(loaded, int64_t(cc.n) * cc.h * cc.w * cc.c * cc.type.bytes());
        EXPECT_LE(double(loaded), padded * cc.at_most) << loaded << " bytes for a padded image of " << padded;
    }
}

// An unpadded 1x1 conv of stride 1 whose bands would take more than half the scratchpad (1024
// int8 channels of 14x14 pixels, two images) is a matmul over each image's pixels: its A rows
// are the image's as they are, K blocks packed two a row (each image byte loaded once) or, with
// blocks_per_row(1), one a row (twice), and it equals the reference either way.
TEST(ChipConvNpu, AnUnpaddedOneByOneConvWithoutBandsIsAMatmulOverThePixels) {
    const int n = 2, h = 14, w = 14, c = 1024, o = 64;
    Input X(Int(8), {n, h, w, c}, "X"), Wt(Int(8), {1, 1, c, o}, "Wt");
    ops::Conv2dOptions opt;
    opt.padding = 0;
    opt.layout = ops::Layout::NHWC;
    for (int per_row : {2, 1}) {
        SCOPED_TRACE(std::to_string(per_row) + " blocks a row");
        Pipeline p(ops::conv2d(X, Wt, opt));
        apply_chip_library_schedule(p, Target::named("npu-edge"), {{n, h, w, o}});
        std::string json = p.schedule().to_json(-1);
        blocks_per_row(per_row)(json);
        p.set_schedule(Schedule::from_json(json, "edited schedule"));
        const ChipResult r = test::expect_matches_reference(
            p, {n, h, w, o}, {{X, test::random_buffer(Int(8), {n, h, w, c}, 93)}, {Wt, test::random_buffer(Int(8), {1, 1, c, o}, 94)}},
            "npu-edge", Int(8), c);
        EXPECT_NE(r.program.summary.find("a 1x1 conv as a matmul over the image's pixels"), std::string::npos) << r.program.summary;
        EXPECT_EQ(r.program.summary.find("the image by bands"), std::string::npos) << r.program.summary;
        int64_t loaded = 0;
        for (const auto &in : r.program.program.instructions)
            if (in.op == chipsim::Opcode::DmaLoad && in.view.tensor == "X") loaded += in.view.total_bytes();
        EXPECT_EQ(loaded, int64_t(n) * h * w * c * (3 - per_row));
    }
}

// npu-edge's conv tile is a directive: the library schedule tiles the product's update over
// its output rows y and channels c with the backend's default (at most 256 accumulator rows as
// whole output rows, spread evenly: 7 of 28 pixels; all 64 channels), and an edited tile — 4 rows of 32 channels —
// changes the program and the cycles and still equals the reference. A tile whose accumulator
// rows exceed the ACC is refused, naming them.
TEST(ChipConvNpu, ItsTileIsADirectiveOverOutputRowsAndChannels) {
    Input X(Int(8), {1, 28, 28, 64}, "X"), Wt(Int(8), {3, 3, 64, 64}, "Wt");
    ops::Conv2dOptions opt;
    opt.padding = 1;
    opt.layout = ops::Layout::NHWC;
    const Bindings bind{{X, test::random_buffer(Int(8), {1, 28, 28, 64}, 95)}, {Wt, test::random_buffer(Int(8), {3, 3, 64, 64}, 96)}};
    const std::vector<int64_t> shape{1, 28, 28, 64};
    auto with_tile = [&](const std::string &factors) {
        Pipeline p(ops::conv2d(X, Wt, opt));
        apply_chip_library_schedule(p, Target::named("npu-edge"), {shape});
        std::string json = p.schedule().to_json(-1);
        const std::string library = "{\"factors\":[7,64],\"op\":\"tile\",\"vars\":[\"y\",\"c\",\"yo\",\"co\",\"yi\",\"ci\"]}";
        const size_t at = json.find(library);
        EXPECT_NE(at, std::string::npos) << json;
        if (at != std::string::npos && !factors.empty()) json.replace(at + 12, 4, factors); // "7,64"
        p.set_schedule(Schedule::from_json(json, "edited schedule"));
        return p;
    };
    const ChipResult library = test::expect_matches_reference(with_tile(""), shape, bind, "npu-edge", Int(8), 64 * 9);
    const ChipResult edited = test::expect_matches_reference(with_tile("4,32"), shape, bind, "npu-edge", Int(8), 64 * 9);
    EXPECT_NE(library.program.summary.find("output tiles of 196x64"), std::string::npos) << library.program.summary;
    EXPECT_NE(edited.program.summary.find("output tiles of 112x32"), std::string::npos) << edited.program.summary;
    EXPECT_NE(edited.program.assembly(), library.program.assembly());
    EXPECT_NE(edited.report.cycles, library.report.cycles);
    test::expect_chip_error(with_tile("28,64"), shape, "npu-edge", "accumulator rows");
}

/// A 3x3 int8 NHWC conv (padding 1) of `channels` channels in and out over a side x side image
/// on npu-edge, under its library schedule with the tile's factors ("rows,channels") replaced by
/// `tile` unless empty, checked against the reference; `library_tile` gets the library's factors.
ChipResult npu_conv3x3_with_tile(int64_t side, int64_t channels, const std::string &tile, std::string *library_tile) {
    const std::vector<int64_t> xs{1, side, side, channels}, ws{3, 3, channels, channels}, shape{1, side, side, channels};
    Input X(Int(8), test::extents(xs), "X"), Wt(Int(8), test::extents(ws), "Wt");
    ops::Conv2dOptions opt;
    opt.padding = 1;
    opt.layout = ops::Layout::NHWC;
    Pipeline p(ops::conv2d(X, Wt, opt));
    apply_chip_library_schedule(p, Target::named("npu-edge"), {shape});
    std::string json = p.schedule().to_json(-1);
    const size_t at = json.find("\"op\":\"tile\"");
    EXPECT_NE(at, std::string::npos) << json;
    const size_t open = json.rfind('[', at), close = json.find(']', open);
    *library_tile = json.substr(open + 1, close - open - 1);
    if (!tile.empty()) json.replace(open + 1, close - open - 1, tile);
    p.set_schedule(Schedule::from_json(json, "edited schedule"));
    return test::expect_matches_reference(p, shape, {{X, test::random_buffer(Int(8), xs, 99)}, {Wt, test::random_buffer(Int(8), ws, 100)}},
                                          "npu-edge", Int(8), 9 * channels);
}

// The default conv tile spreads its whole output rows evenly over the fewest tiles of at most
// 256 pixels: 28 rows of 28 pixels go in four tiles of 7 rows, not three of 9 and a last of one
// row, whose short matmuls wait on their weight installs. Faster than 9 rows.
TEST(ChipConvNpu, ItsDefaultTileSpreadsTheRowsEvenly) {
    std::string library;
    const ChipResult even = npu_conv3x3_with_tile(28, 64, "", &library), uneven = npu_conv3x3_with_tile(28, 64, "9,64", &library);
    EXPECT_EQ(library, "7,64");
    EXPECT_NE(even.program.summary.find("output tiles of 196x64"), std::string::npos) << even.program.summary;
    EXPECT_LT(even.report.cycles, uneven.report.cycles);
}

// Where one row of tiles covers every output pixel and the weights take longer to cross DRAM
// than the conv takes to multiply, the default tile holds every output channel the accumulator
// can: one tile (3x3 256->256 at 4x4: 590 KB of weights, 16 pixels), faster than the narrower
// tiles of the rule for compute-bound convs (which a 9x9 image of 128 channels keeps).
TEST(ChipConvNpu, AWeightBoundConvTakesEveryChannelInOneTile) {
    std::string weight_bound, compute_bound;
    const ChipResult whole = npu_conv3x3_with_tile(4, 256, "", &weight_bound), narrow = npu_conv3x3_with_tile(4, 256, "4,64", &weight_bound);
    EXPECT_EQ(weight_bound, "4,256");
    EXPECT_LT(whole.report.cycles, narrow.report.cycles) << "one tile of every channel against tiles of 64";
    npu_conv3x3_with_tile(9, 128, "", &compute_bound);
    EXPECT_EQ(compute_bound, "9,64") << "a compute-bound conv keeps the narrower tiles";
}

// A 3x3 conv over 14-pixel rows multiplies each weight block by 14-row matmuls, shorter than
// the 32 cycles an install takes. Each install is emitted a block ahead of its matmuls (where
// its weights are on chip by then), so it runs under the matmuls of the block before: at a
// change of weight block the array does not wait for the install.
TEST(ChipConvNpu, ItsWeightInstallsRunUnderTheMatmulsOfTheBlockBefore) {
    const std::vector<int64_t> xs{1, 14, 14, 128}, ws{3, 3, 128, 128}, shape{1, 14, 14, 128};
    Input X(Int(8), test::extents(xs), "X"), Wt(Int(8), test::extents(ws), "Wt");
    ops::Conv2dOptions opt;
    opt.padding = 1;
    opt.layout = ops::Layout::NHWC;
    const Pipeline p(ops::conv2d(X, Wt, opt));
    const ChipResult r = test::expect_matches_reference(
        p, shape, {{X, test::random_buffer(Int(8), xs, 97)}, {Wt, test::random_buffer(Int(8), ws, 98)}}, "npu-edge", Int(8), 128 * 9);
    const std::vector<chipsim::Instruction> &program = r.program.program.instructions;
    const chipsim::TimingModel model(chipsim::load_target("npu-edge"));
    const int64_t install_cycles = model.resources(chipsim::assemble("mxm.lw.int8 m0.w0, SPAD[0:32]").instructions.at(0)).issue_cycles;
    chipsim::SimOptions timing_only;
    timing_only.functional = false;
    const chipsim::SimResult sim = chipsim::simulate(r.program.program, model, timing_only);
    std::map<int32_t, chipsim::InstructionTiming> at;
    for (const chipsim::InstructionTiming &it : sim.timings) at[it.index] = it;
    int64_t changes = 0, installed_in_time = 0, short_matmuls = 0;
    std::map<int, int32_t> last_install; // weight buffer -> its latest install
    int32_t previous_mm = -1;
    for (int32_t i = 0; i < int32_t(program.size()); ++i) {
        const chipsim::Instruction &in = program[size_t(i)];
        if (in.op == chipsim::Opcode::MxmLw) last_install[in.buffer] = i;
        if (in.op != chipsim::Opcode::MxmMm) continue;
        short_matmuls += model.resources(in).issue_cycles < install_cycles;
        if (previous_mm >= 0 && program[size_t(previous_mm)].buffer != in.buffer) {
            ++changes;
            const chipsim::InstructionTiming &before = at.at(previous_mm), &install = at.at(last_install.at(in.buffer));
            installed_in_time += install.end <= before.start + model.resources(program[size_t(previous_mm)]).issue_cycles;
        }
        previous_mm = i;
    }
    EXPECT_GT(short_matmuls, 100) << "the case is one of matmuls shorter than an install";
    ASSERT_GT(changes, 50);
    EXPECT_GE(double(installed_in_time), 0.9 * double(changes)) << installed_in_time << " of " << changes << " installs were in by the change of block";
}

} // namespace
} // namespace tessera
