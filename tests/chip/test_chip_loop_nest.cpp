// Pipelines a kernel writer writes by hand — none built with tessera::ops — compiled for both
// chips from their loop nests (loop_nest_codegen.h) and checked against the reference
// evaluator: norms, reductions along each axis, stencils, multi-stage pipelines, compute_at,
// odd shapes. The default chip rule picks the lanes where the schedule does not.
#include "chip_test_util.h"
#include "hand_written_pipelines.h"
#include "test_support.h"

#include <tessera/chipsim/target.h>
#include <tessera/codegen/chip_schedules.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

class ChipLoopNest : public ::testing::TestWithParam<std::string> {};

std::string chip_target(const std::string &variant) { return test::edited_chip_target(variant); }

const Tolerance kFp32 = Tolerance::for_type(Float(32));

/// Compiles `p` for the chip, checks it went through the loop-nest compiler, runs it and
/// compares every output with the reference evaluator.
ChipResult expect_loop_nest_matches(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const Bindings &b,
                                    const std::string &chip, Tolerance tol = kFp32) {
    const std::vector<Buffer<>> ref = p.realize(shapes, b, Target::reference());
    ChipProgram cp = compile_for_chip(p, Target::named(chip), shapes, b);
    EXPECT_NE(cp.summary.find("compiled from the loop nest"), std::string::npos) << cp.summary;
    ChipResult r = run_on_chip(cp, b);
    for (size_t o = 0; o < ref.size(); ++o) {
        Comparison c = compare(r.outputs.at(o), ref[o], tol);
        EXPECT_TRUE(c.equal) << chip << ", output " << o << ": " << c.message << "\n" << cp.summary << cp.assembly();
    }
    return r;
}

TEST_P(ChipLoopNest, RmsNormWrittenByHand) {
    const std::string chip = chip_target(GetParam());
    const int rows = 37, cols = 50;
    Input X(Float(32), {rows, cols}, "X"), W(Float(32), {cols}, "W");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func ss("sum_squares"), norm("rms_normalized");
    ss(y) = 0.0f;
    ss(y) += X(y, r) * X(y, r);
    norm(y, x) = X(y, x) * rsqrt(ss(y) / float(cols) + 1e-6f) * W(x);
    expect_loop_nest_matches(Pipeline(norm), {{rows, cols}},
                             {{X, test::random_buffer(Float(32), {rows, cols}, 1)}, {W, test::random_buffer(Float(32), {cols}, 2)}}, chip);
}

TEST_P(ChipLoopNest, ProfileAttributesEveryInstructionToAStage) {
    // An RMSNorm written by hand: the report's profile has the reduction's two stages, the
    // normalization and the input loads, every instruction in one of them, and each unit's busy
    // cycles split among the stages without a cycle lost or counted twice.
    const std::string chip = chip_target(GetParam());
    const int rows = 24, cols = 40;
    Input X(Float(32), {rows, cols}, "X");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func ss("sum_squares"), norm("rms_normalized");
    ss(y) = 0.0f;
    ss(y) += X(y, r) * X(y, r);
    norm(y, x) = X(y, x) * rsqrt(ss(y) / float(cols) + 1e-6f);
    ss.compute_root();
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 3)}};
    ChipResult result = expect_loop_nest_matches(Pipeline(norm), {{rows, cols}}, b, chip);
    const chipsim::Report &report = result.report;
    std::map<std::string, const chipsim::StageReport *> by_name;
    int64_t instructions = 0;
    std::map<std::string, int64_t> busy;
    for (const chipsim::StageReport &s : report.stages) {
        by_name[s.name] = &s;
        instructions += s.instructions;
        EXPECT_LE(s.first_cycle, s.last_cycle) << s.name;
        for (const auto &[unit, cycles] : s.busy_cycles) busy[unit] += cycles;
    }
    for (const char *stage : {"sum_squares", "sum_squares.update(0)", "rms_normalized"})
        EXPECT_TRUE(by_name.count(stage)) << "no stage " << stage << " in\n" << report.to_text();
    EXPECT_EQ(instructions, report.instructions) << report.to_text();
    for (const chipsim::UnitReport &u : report.units) EXPECT_EQ(busy[u.name], u.busy_cycles) << u.name;
    EXPECT_GT(by_name.at("sum_squares.update(0)")->busy_cycles.at("VXM"), 0);
    EXPECT_NE(report.to_json().find("\"stages\""), std::string::npos);
    EXPECT_NE(report.to_text().find("rms_normalized"), std::string::npos);
    // The Chrome trace names each box's stage.
    ChipProgram cp = compile_for_chip(Pipeline(norm), Target::named(chip), {{rows, cols}}, b);
    ChipRunOptions traced;
    traced.trace = true;
    const std::string trace = run_on_chip(cp, b, traced).trace_json;
    EXPECT_NE(trace.find("\"stage\":\"sum_squares.update(0)\""), std::string::npos);
}

TEST(ChipLoopNestFusion, AReductionComputedAtItsConsumersRowsReadsTheInputOnce) {
    // An RMSNorm whose input (512 KiB) is too large to preload: computed at the root, the sum of
    // squares reads X from DRAM and the normalization reads it again; computed at 32-row blocks
    // of the output, each block's X tiles stay on chip between the two, so X crosses DRAM once.
    const int rows = 256, cols = 512;
    Input X(Float(32), {rows, cols}, "X");
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 4)}};
    auto rmsnorm = [&](bool fused) {
        Var y("y"), x("x"), yo("yo"), yi("yi");
        RDom r(0, cols, "r");
        Func ss("sum_squares"), norm("rms_normalized");
        ss(y) = 0.0f;
        ss(y) += X(y, r) * X(y, r);
        norm(y, x) = X(y, x) * rsqrt(ss(y) / float(cols) + 1e-6f);
        if (fused) {
            norm.split(y, yo, yi, 32).vectorize(yi);
            ss.compute_at(norm, yo);
        }
        return expect_loop_nest_matches(Pipeline(norm), {{rows, cols}}, b, "npu-edge").report;
    };
    const chipsim::Report root = rmsnorm(false), fused = rmsnorm(true);
    const int64_t x_and_out = 2 * int64_t(rows) * cols * 4;
    EXPECT_GT(root.bytes.at("DRAM"), x_and_out + x_and_out / 4) << "the root schedule re-reads X";
    EXPECT_LT(fused.bytes.at("DRAM"), x_and_out + 4096) << "X and the output cross DRAM once (plus constants)";
    EXPECT_LT(fused.cycles, root.cycles);
}

TEST(ChipLibrarySchedules, RowReductionsOfInputsTooLargeToPreloadRunAtRowBlocks) {
    // ops::rmsnorm of a 1 MiB input: on npu-edge (512 KiB scratchpad) the library schedule
    // computes the mean square at blocks of rows, and X crosses DRAM once; on tsp-mini, whose
    // MEM preloads X whole, the schedule records nothing.
    Input X(Float(32), {256, 1024}, "X");
    const Bindings b{{X, test::random_buffer(Float(32), {256, 1024}, 6)}};
    const Pipeline npu(ops::rmsnorm(X).func());
    apply_chip_library_schedule(npu, Target::named("npu-edge"), {{256, 1024}});
    const std::string schedule = npu.schedule().to_json();
    EXPECT_NE(schedule.find("compute_at"), std::string::npos) << schedule;
    const ChipResult r = run_on_chip(compile_for_chip(npu, Target::named("npu-edge"), {{256, 1024}}, b), b);
    const Buffer<> ref = npu.realize({{256, 1024}}, b, Target::reference())[0];
    EXPECT_TRUE(compare(r.outputs[0], ref, kFp32).equal);
    EXPECT_LT(r.report.bytes.at("DRAM"), 2 * 256 * 1024 * 4 + 4096) << "X and the output cross DRAM once";
    const Pipeline tsp(ops::rmsnorm(X).func());
    apply_chip_library_schedule(tsp, Target::named("tsp-mini"), {{256, 1024}});
    EXPECT_TRUE(tsp.schedule() == Schedule{}) << tsp.schedule().to_json();
}

TEST(ChipLibrarySchedules, RowReductionsOfABatchOfHeadsRunAtBlocksOfTheirLastRowDimension) {
    // ops::rmsnorm over the last axis of [2, 4, 128, 256] (1 MiB, BERT's scores have this form):
    // the rows are the first three dimensions; the blocks cut the third, the batch's and the
    // heads' loops outside them, and X crosses DRAM once, as for a matrix of rows.
    const std::vector<int64_t> shape{2, 4, 128, 256};
    Input X(Float(32), test::extents(shape), "X");
    const Bindings b{{X, test::random_buffer(Float(32), shape, 7)}};
    const Pipeline blocked(ops::rmsnorm(X).func()), root(ops::rmsnorm(X).func());
    apply_chip_library_schedule(blocked, Target::named("npu-edge"), {shape});
    const std::string schedule = blocked.schedule().to_json();
    EXPECT_NE(schedule.find("compute_at"), std::string::npos) << schedule;
    const ChipResult r = run_on_chip(compile_for_chip(blocked, Target::named("npu-edge"), {shape}, b), b);
    const ChipResult at_root = run_on_chip(compile_for_chip(root, Target::named("npu-edge"), {shape}, b), b);
    const Buffer<> ref = blocked.realize({shape}, b, Target::reference())[0];
    EXPECT_TRUE(compare(r.outputs[0], ref, kFp32).equal);
    const int64_t x_and_out = 2 * 2 * 4 * 128 * 256 * 4;
    EXPECT_LE(r.report.bytes.at("DRAM"), x_and_out + 4096) << "X and the output cross DRAM once (plus constants)";
    EXPECT_GT(at_root.report.bytes.at("DRAM"), x_and_out + x_and_out / 4) << "at the root, X crosses again";
    EXPECT_LT(r.report.cycles, at_root.report.cycles);
    // A last row dimension narrower than the lanes ([96, 1, 1024], sequence first): blocks
    // along it would leave most lanes idle, so the schedule records nothing.
    Input Y(Float(32), {96, 1, 1024}, "Y");
    const Pipeline narrow(ops::rmsnorm(Y).func());
    apply_chip_library_schedule(narrow, Target::named("npu-edge"), {{96, 1, 1024}});
    EXPECT_TRUE(narrow.schedule() == Schedule{}) << narrow.schedule().to_json();
}

TEST(ChipLibrarySchedules, AMaximumReadByASumAndByTheOutputRunsAtTheirRowBlocks) {
    // ops::log_softmax of a 1 MiB input on npu-edge: its maximum is read by the sum of
    // exponentials and by the output, both at blocks of the output's rows, so the maximum is
    // computed there too and X crosses DRAM once (at the root it crossed twice).
    Input X(Float(32), {256, 1024}, "X");
    const Bindings b{{X, test::random_buffer(Float(32), {256, 1024}, 8)}};
    const Pipeline blocked(ops::log_softmax(X).func()), root(ops::log_softmax(X).func());
    apply_chip_library_schedule(blocked, Target::named("npu-edge"), {{256, 1024}});
    const Schedule schedule = blocked.schedule();
    for (const char *f : {"log_softmax_max", "log_softmax_sum"}) {
        ASSERT_TRUE(schedule.funcs.count(f)) << schedule.to_string();
        const std::vector<Directive> &d = schedule.funcs.at(f).stage(0);
        ASSERT_EQ(d.size(), 1u) << schedule.to_string();
        EXPECT_EQ(d[0].kind, DirectiveKind::ComputeAt);
        EXPECT_EQ(d[0].func, "log_softmax") << schedule.to_string();
    }
    const ChipResult r = run_on_chip(compile_for_chip(blocked, Target::named("npu-edge"), {{256, 1024}}, b), b);
    const ChipResult at_root = run_on_chip(compile_for_chip(root, Target::named("npu-edge"), {{256, 1024}}, b), b);
    const Buffer<> ref = blocked.realize({{256, 1024}}, b, Target::reference())[0];
    EXPECT_TRUE(compare(r.outputs[0], ref, kFp32).equal);
    const int64_t x_and_out = 2 * 256 * 1024 * 4;
    EXPECT_LE(r.report.bytes.at("DRAM"), x_and_out + 4096) << "X and the output cross DRAM once (plus constants)";
    EXPECT_GT(at_root.report.bytes.at("DRAM"), x_and_out + x_and_out / 4) << "at the root, X crosses again";
    EXPECT_LT(r.report.cycles, at_root.report.cycles);
}

TEST_P(ChipLoopNest, RowSumsAndColumnSums) {
    const std::string chip = chip_target(GetParam());
    const int rows = 45, cols = 70;
    Input X(Float(32), {rows, cols}, "X");
    Var i("i");
    RDom rc(0, cols, "c"), rr(0, rows, "r");
    Func row_sum("row_sum"), col_sum("col_sum");
    row_sum(i) = 0.0f;
    row_sum(i) += X(i, rc);
    col_sum(i) = 0.0f;
    col_sum(i) += X(rr, i);
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 3)}};
    expect_loop_nest_matches(Pipeline(row_sum), {{rows}}, b, chip, Tolerance::for_type(Float(32), cols));
    expect_loop_nest_matches(Pipeline(col_sum), {{cols}}, b, chip, Tolerance::for_type(Float(32), rows));
}

TEST_P(ChipLoopNest, SoftmaxWrittenByHand) {
    const std::string chip = chip_target(GetParam());
    const int rows = 20, cols = 33;
    Input X(Float(32), {rows, cols}, "logits");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func mx("row_max"), e("shifted_exp"), total("total"), prob("prob");
    mx(y) = -1e30f;
    mx(y) = max(mx(y), X(y, r));
    e(y, x) = exp(X(y, x) - mx(y));
    total(y) = 0.0f;
    total(y) += e(y, r);
    prob(y, x) = e(y, x) / total(y);
    e.compute_root();
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 4)}};
    expect_loop_nest_matches(Pipeline(prob), {{rows, cols}}, b, chip);
    // The exponentials inlined, and the maximum, read by the total and by the output, computed
    // with the total at blocks of 16 rows of the output (48 rows: three blocks).
    Input X2(Float(32), {48, cols}, "logits");
    tessera_test::SoftmaxByRows s2(X2);
    Var io("io"), ii("ii");
    s2.prob.split(s2.i, io, ii, 16).vectorize(ii);
    s2.total.compute_at(s2.prob, io);
    s2.row_max.compute_at(s2.prob, io);
    expect_loop_nest_matches(Pipeline(s2.prob), {{48, cols}}, {{X2, test::random_buffer(Float(32), {48, cols}, 5)}}, chip);
}

TEST_P(ChipLoopNest, ThreeTapBlurAndSeparableBlur) {
    const std::string chip = chip_target(GetParam());
    const int h = 30, w = 41;
    Input in(Float(32), {h + 2, w + 2}, "image");
    Var x("x"), y("y");
    Func blur3("blur3"), bx("blur_x"), by("blur_y");
    blur3(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    bx(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    by(y, x) = (bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3.0f;
    bx.compute_root();
    const Bindings b{{in, test::random_buffer(Float(32), {h + 2, w + 2}, 5)}};
    expect_loop_nest_matches(Pipeline(blur3), {{h + 2, w}}, b, chip);
    expect_loop_nest_matches(Pipeline(by), {{h, w}}, b, chip);
}

TEST_P(ChipLoopNest, Int32RowMaxAndColumnMinAreExact) {
    const std::string chip = chip_target(GetParam());
    Input A(Int(32), {19, 23}, "A");
    Var i("i");
    RDom rc(0, 23, "c"), rr(0, 19, "r");
    Func hi("row_max"), lo("col_min");
    hi(i) = A(i, 0);
    hi(i) = max(hi(i), A(i, rc));
    lo(i) = A(0, i);
    lo(i) = min(lo(i), A(rr, i));
    const Bindings b{{A, test::random_buffer(Int(32), {19, 23}, 6)}};
    expect_loop_nest_matches(Pipeline(hi), {{19}}, b, chip, Tolerance{});
    expect_loop_nest_matches(Pipeline(lo), {{23}}, b, chip, Tolerance{});
}

TEST_P(ChipLoopNest, AReductionThatIsNotAProductRunsOnTheVxm) {
    // Once refused ("not a product"): the sum of a row and a column read, reduced in time.
    const std::string chip = chip_target(GetParam());
    Input X(Int(32), {40, 40}, "X");
    Func S("S");
    Var i("i"), j("j");
    RDom k(0, 40, "k");
    S(i, j) = 0;
    S(i, j) += X(i, k) + X(k, j);
    expect_loop_nest_matches(Pipeline(S), {{40, 40}}, {{X, test::random_buffer(Int(32), {40, 40}, 7)}}, chip, Tolerance{});
}

TEST_P(ChipLoopNest, MeanDividesByAConvertedCount) {
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {6, 20}, "X");
    Var i("i");
    RDom r(0, 20, "r");
    Func sum("sum"), mean("mean");
    sum(i) = 0.0f;
    sum(i) += X(i, r);
    mean(i) = sum(i) / cast(Float(32), Expr(20));
    expect_loop_nest_matches(Pipeline(mean), {{6}}, {{X, test::random_buffer(Float(32), {6, 20}, 8)}}, chip, Tolerance::for_type(Float(32), 20));
}

TEST_P(ChipLoopNest, LibraryOpsWithoutAChipKernel) {
    // log_softmax (once refused as a softmax lookalike), the erf form of GELU (erf and log are
    // expanded into VXM sequences: vxm_expansions.h), rmsnorm, max pooling, leaky ReLU (a
    // comparison and a select) and a mean over the last axis.
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {9, 40}, "X"), I(Float(32), {1, 3, 9, 11}, "I");
    const Bindings b{{X, test::random_buffer(Float(32), {9, 40}, 9)}, {I, test::random_buffer(Float(32), {1, 3, 9, 11}, 10)}};
    expect_loop_nest_matches(Pipeline(ops::log_softmax(X)), {{9, 40}}, b, chip, Tolerance::for_type(Float(32), 40));
    expect_loop_nest_matches(Pipeline(ops::gelu(X)), {{9, 40}}, b, chip);
    expect_loop_nest_matches(Pipeline(ops::rmsnorm(X)), {{9, 40}}, b, chip, Tolerance::for_type(Float(32), 40));
    expect_loop_nest_matches(Pipeline(ops::leaky_relu(X, 0.1f)), {{9, 40}}, b, chip);
    ops::Pool2dOptions pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    expect_loop_nest_matches(Pipeline(ops::max_pool2d(I, pool)), {{1, 3, 4, 5}}, b, chip, Tolerance{});
}

TEST_P(ChipLoopNest, Int8RequantizationChainIsExact) {
    // int32 accumulators → scale, round, clamp to int8 → dequantize, ReLU, requantize.
    const std::string chip = chip_target(GetParam());
    Input acc(Int(32), {13, 70}, "acc");
    Var y("y"), x("x");
    Func q1("q1"), q2("q2");
    q1(y, x) = cast(Int(8), clamp(round(cast(Float(32), acc(y, x)) * 0.01f), -128.0f, 127.0f));
    q2(y, x) = cast(Int(8), clamp(max(cast(Float(32), q1(y, x)) * 0.5f, 0.0f) * 1.5f, -128.0f, 127.0f));
    q1.compute_root();
    Buffer<> a(Int(32), {13, 70});
    a.fill_random(11);
    for (int64_t i = 0; i < 13; ++i)
        for (int64_t j = 0; j < 70; ++j) a.set_from_int({i, j}, a.get_as_int({i, j}) % 20000);
    expect_loop_nest_matches(Pipeline(q2), {{13, 70}}, {{acc, a}}, chip, Tolerance{});
}

TEST_P(ChipLoopNest, Bf16InputsSummedInFp32) {
    const std::string chip = chip_target(GetParam());
    Input X(BFloat(16), {21, 34}, "X");
    Var i("i");
    RDom r(0, 34, "r");
    Func s("s");
    s(i) = 0.0f;
    s(i) += cast(Float(32), X(i, r)) * cast(Float(32), X(i, r));
    expect_loop_nest_matches(Pipeline(s), {{21}}, {{X, test::random_buffer(BFloat(16), {21, 34}, 12)}}, chip, Tolerance::for_type(Float(32), 34));
}

TEST_P(ChipLoopNest, ProducerComputedAtTheConsumersRows) {
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {18, 40}, "X");
    Var y("y"), x("x");
    Func sq("sq"), out("vertical_pair");
    sq(y, x) = X(y, x) * X(y, x) + 1.0f;
    out(y, x) = sq(y, x) + sq(y + 1, x);
    sq.compute_at(out, y);
    expect_loop_nest_matches(Pipeline(out), {{17, 40}}, {{X, test::random_buffer(Float(32), {18, 40}, 13)}}, chip);
}

TEST_P(ChipLoopNest, ReductionsAlongEachAxisOfA3dTensor) {
    const std::string chip = chip_target(GetParam());
    const int A = 5, B = 7, C = 19;
    Input T(Float(32), {A, B, C}, "T");
    Var u("u"), v("v");
    RDom ra(0, A, "ra"), rb(0, B, "rb"), rc(0, C, "rc");
    Func s0("sum_axis0"), s1("sum_axis1"), s2("sum_axis2");
    s0(u, v) = 0.0f;
    s0(u, v) += T(ra, u, v);
    s1(u, v) = 0.0f;
    s1(u, v) += T(u, rb, v);
    s2(u, v) = 0.0f;
    s2(u, v) += T(u, v, rc);
    const Bindings b{{T, test::random_buffer(Float(32), {A, B, C}, 14)}};
    expect_loop_nest_matches(Pipeline(s0), {{B, C}}, b, chip, Tolerance::for_type(Float(32), A));
    expect_loop_nest_matches(Pipeline(s1), {{A, C}}, b, chip, Tolerance::for_type(Float(32), B));
    expect_loop_nest_matches(Pipeline(s2), {{A, B}}, b, chip, Tolerance::for_type(Float(32), C));
}

TEST_P(ChipLoopNest, TwoDimensionalReductionDomain) {
    const std::string chip = chip_target(GetParam());
    Input img(Float(32), {3, 9, 11}, "img");
    Var c("c");
    RDom r(0, 9, 0, 11, "r");
    Func mean("channel_mean");
    mean(c) = 0.0f;
    mean(c) += img(c, r.x, r.y) / 99.0f;
    expect_loop_nest_matches(Pipeline(mean), {{3}}, {{img, test::random_buffer(Float(32), {3, 9, 11}, 15)}}, chip,
                             Tolerance::for_type(Float(32), 99));
}

TEST_P(ChipLoopNest, FourStagePipelineAndVariance) {
    const std::string chip = chip_target(GetParam());
    const int rows = 11, cols = 29;
    Input X(Float(32), {rows, cols}, "X"), G(Float(32), {cols}, "G");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func mean("mean"), centered("centered"), var("var"), out("standardized");
    mean(y) = 0.0f;
    mean(y) += X(y, r) / float(cols);
    centered(y, x) = X(y, x) - mean(y);
    var(y) = 0.0f;
    var(y) += centered(y, r) * centered(y, r) / float(cols);
    out(y, x) = centered(y, x) / sqrt(var(y) + 1e-5f) * G(x) + 0.25f;
    centered.compute_root();
    expect_loop_nest_matches(Pipeline(out), {{rows, cols}},
                             {{X, test::random_buffer(Float(32), {rows, cols}, 16)}, {G, test::random_buffer(Float(32), {cols}, 17)}}, chip,
                             Tolerance::for_type(Float(32), cols));
}

TEST_P(ChipLoopNest, OddShapesDownToOneElement) {
    const std::string chip = chip_target(GetParam());
    for (const std::vector<int64_t> shape : {std::vector<int64_t>{1, 1}, {1, 17}, {17, 1}, {3, 65}}) {
        Input X(Float(32), test::extents(shape), "X");
        Var y("y"), x("x");
        Func f("odd");
        f(y, x) = exp(X(y, x)) * 0.5f - X(y, x);
        Func g("odd_max");
        RDom r(0, int(shape[1]), "r");
        g(y) = -1e30f;
        g(y) = max(g(y), f(y, r));
        f.compute_root();
        expect_loop_nest_matches(Pipeline(g), {{shape[0]}}, {{X, test::random_buffer(Float(32), shape, 18)}}, chip);
    }
}

TEST_P(ChipLoopNest, HandWrittenMatmulWithAnEpilogueTakesTheMxm) {
    const std::string chip = chip_target(GetParam());
    Input A(BFloat(16), {32, 64}, "A"), B(BFloat(16), {64, 48}, "B"), bias(Float(32), {48}, "bias");
    Var i("i"), j("j");
    RDom k(0, 64, "k");
    Func acc("acc"), out("out");
    acc(i, j) = 0.0f;
    acc(i, j) += cast(Float(32), A(i, k)) * cast(Float(32), B(k, j));
    out(i, j) = max(acc(i, j) + bias(j), 0.0f);
    const Bindings b{{A, test::random_buffer(BFloat(16), {32, 64}, 19)},
                     {B, test::random_buffer(BFloat(16), {64, 48}, 20)},
                     {bias, test::random_buffer(Float(32), {48}, 21)}};
    ChipResult r = test::expect_matches_reference(Pipeline(out), {32, 48}, b, chip, BFloat(16), 64);
    EXPECT_GT(r.report.macs, 0) << "the MXM computed it";
}

TEST_P(ChipLoopNest, WeightedStencilTheGemmMatcherHandsBack) {
    const std::string chip = chip_target(GetParam());
    Input in(Float(32), {12, 40}, "in"), w(Float(32), {5}, "w");
    Var y("y"), x("x");
    RDom r(0, 5, "r");
    Func conv("conv1d");
    conv(y, x) = 0.0f;
    conv(y, x) += in(y, x + r) * w(r);
    expect_loop_nest_matches(Pipeline(conv), {{12, 36}},
                             {{in, test::random_buffer(Float(32), {12, 40}, 22)}, {w, test::random_buffer(Float(32), {5}, 23)}}, chip,
                             Tolerance::for_type(Float(32), 5));
}

TEST_P(ChipLoopNest, Int32BoxFilterAndWhereOfTwoInputs) {
    const std::string chip = chip_target(GetParam());
    Input a(Int(32), {20, 30}, "a"), b(Int(32), {20, 30}, "b");
    Var y("y"), x("x");
    Func bx("box_x"), box("box"), pick("pick");
    bx(y, x) = a(y, x) + a(y, x + 1) + a(y, x + 2);
    box(y, x) = bx(y, x) + bx(y + 1, x) + bx(y + 2, x);
    bx.compute_root();
    pick(y, x) = select(a(y, x) > b(y, x), a(y, x) - b(y, x), min(b(y, x), 7) * 3);
    Buffer<> ba(Int(32), {20, 30}), bb(Int(32), {20, 30});
    ba.fill_random(24);
    bb.fill_random(25);
    for (int64_t i = 0; i < 20; ++i)
        for (int64_t j = 0; j < 30; ++j) {
            ba.set_from_int({i, j}, ba.get_as_int({i, j}) % 100000);
            bb.set_from_int({i, j}, bb.get_as_int({i, j}) % 100000);
        }
    expect_loop_nest_matches(Pipeline(box), {{18, 28}}, {{a, ba}}, chip, Tolerance{});
    expect_loop_nest_matches(Pipeline(pick), {{20, 30}}, {{a, ba}, {b, bb}}, chip, Tolerance{});
}

TEST_P(ChipLoopNest, SequentialUpdateThatIsNotAReductionRunsInOrder) {
    // f = 0.5 f + x: not associative, so each step of r is its own vector statement, in order.
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {6, 25}, "X");
    Var i("i");
    RDom r(0, 6, "r");
    Func ema("ema");
    ema(i) = 0.0f;
    ema(i) = ema(i) * 0.5f + X(r, i);
    expect_loop_nest_matches(Pipeline(ema), {{25}}, {{X, test::random_buffer(Float(32), {6, 25}, 26)}}, chip);
}

TEST_P(ChipLoopNest, ColumnSoftmaxGeluTanhAndL2Distance) {
    const std::string chip = chip_target(GetParam());
    const int rows = 24, cols = 10;
    Input X(Float(32), {rows, cols}, "X"), Y(Float(32), {rows, cols}, "Y");
    Var y("y"), x("x");
    RDom r(0, rows, "r"), c(0, cols, "c");
    Func mx("col_max"), sum("col_sum"), e("col_exp"), sm("col_softmax");
    mx(x) = -1e30f;
    mx(x) = max(mx(x), X(r, x));
    e(y, x) = exp(X(y, x) - mx(x));
    sum(x) = 0.0f;
    sum(x) += e(r, x);
    sm(y, x) = e(y, x) / sum(x);
    e.compute_root();
    Func gelu("gelu_tanh");
    gelu(y, x) = 0.5f * X(y, x) * (1.0f + tanh(0.7978845608f * (X(y, x) + 0.044715f * X(y, x) * X(y, x) * X(y, x))));
    Func d2("dist2"), dist("dist");
    d2(y) = 0.0f;
    d2(y) += (X(y, c) - Y(y, c)) * (X(y, c) - Y(y, c));
    dist(y) = sqrt(d2(y));
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 27)}, {Y, test::random_buffer(Float(32), {rows, cols}, 28)}};
    expect_loop_nest_matches(Pipeline(sm), {{rows, cols}}, b, chip, Tolerance::for_type(Float(32), rows));
    test::expect_matches_reference_within(Pipeline(gelu), {rows, cols}, b, chip, kFp32);
    expect_loop_nest_matches(Pipeline(dist), {{rows}}, b, chip, Tolerance::for_type(Float(32), cols));
}

TEST_P(ChipLoopNest, FloorCeilAndTruncatingConversions) {
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {7, 33}, "X");
    Var y("y"), x("x");
    Func f("rounding");
    f(y, x) = floor(X(y, x) * 10.0f) + ceil(X(y, x) * 3.0f) * 100.0f + cast(Float(32), cast(Int(32), X(y, x) * 7.0f)) * 1000.0f;
    expect_loop_nest_matches(Pipeline(f), {{7, 33}}, {{X, test::random_buffer(Float(32), {7, 33}, 29)}}, chip, Tolerance{});
}

TEST_P(ChipLoopNest, SchedulesTheChipCannotRunSayWhy) {
    // Each pipeline sums over a row, so no hand-written kernel takes it: the loop nest decides.
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {8, 40}, "X");
    Var y("y"), x("x");
    RDom r(0, 8, "r");
    // A lane loop of half the VXM's lanes: its second chunk starts mid-vector.
    const int lanes = chipsim::load_target(chip).lanes(chipsim::DType::FP32);
    Func a("half_vectors"), b("column_sum");
    a(y, x) = X(y, x) * 2.0f;
    b(x) = 0.0f;
    b(x) += a(r, x);
    a.compute_root().vectorize(x, lanes / 2);
    test::expect_chip_error(Pipeline(b), {40}, chip, "multiple of " + std::to_string(lanes));
    // A Func read with its lanes along another dimension (a transpose the VXM cannot do).
    Func c("c_rows"), d("d_sum");
    c(y, x) = X(y, x) + 1.0f;
    d(y) = 0.0f;
    d(y) += c(y, r * 5);
    c.compute_root().vectorize(x);
    d.update().vectorize(y);
    test::expect_chip_error(Pipeline(d), {8}, chip, "lanes");
    // Two vectorized loops in one stage.
    Func e("two_vectors"), f("e_sum");
    e(y, x) = X(y, x) * 3.0f;
    f(x) = 0.0f;
    f(x) += e(r, x);
    e.compute_root().vectorize(x).vectorize(y);
    test::expect_chip_error(Pipeline(f), {40}, chip, "vectorizes two loops");
}

TEST_P(ChipLoopNest, IndexArithmeticAffineOnlyInsideATile) {
    // A concat written as a select on the index, a reshape through i / n and i % n, and a
    // flatten whose lanes run through two dimensions of the input (nested strided DMA runs).
    const std::string chip = chip_target(GetParam());
    Input A(Float(32), {6, 32}, "A"), B(Float(32), {6, 16}, "B"), C(Float(32), {4, 8, 8}, "C");
    Var y("y"), x("x");
    Func cat("cat"), reshaped("reshaped"), flat("flat");
    cat(y, x) = select(x < 32, A(y, min(x, 31)), B(y, max(x - 32, 0)) * 2.0f);
    reshaped(y, x) = A((y * 16 + x) / 32, (y * 16 + x) % 32) + 1.0f;
    flat(y, x) = C(y, x / 8, x % 8) * 3.0f;
    const Bindings b{{A, test::random_buffer(Float(32), {6, 32}, 33)},
                     {B, test::random_buffer(Float(32), {6, 16}, 34)},
                     {C, test::random_buffer(Float(32), {4, 8, 8}, 35)}};
    expect_loop_nest_matches(Pipeline(cat), {{6, 48}}, b, chip);
    expect_loop_nest_matches(Pipeline(reshaped), {{12, 16}}, b, chip);
    expect_loop_nest_matches(Pipeline(flat), {{4, 64}}, b, chip);
}

TEST_P(ChipLoopNest, AFlattenWhoseLastChunkEndsInsideARowStillGathersByOneDma) {
    // ONNX's Flatten of [2, 3, 4, 5] at axis 1: rows of 60, so the last chunk of lanes ends
    // mid-vector. Its lanes past the end would index back to the start of the row's slab (x % 5
    // wraps), which no strided DMA gathers; they continue the run instead, into padding after
    // the input's last element (the last row's read would otherwise leave the tensor). Also
    // rows of 20 (axis 2) and of 5, shorter than a vector.
    const std::string chip = chip_target(GetParam());
    Input C(Float(32), {2, 3, 4, 5}, "C");
    Var y("y"), x("x");
    Func rows60("rows60"), rows20("rows20"), rows5("rows5");
    Expr i = y * 60 + x; // the flat index, as ops::flatten writes it
    rows60(y, x) = C(i / 60, (i / 20) % 3, (i / 5) % 4, i % 5) * 3.0f;
    Expr j = y * 20 + x;
    rows20(y, x) = C(j / 60, (j / 20) % 3, (j / 5) % 4, j % 5) - 1.0f;
    rows5(y, x) = C(y / 12, (y / 4) % 3, y % 4, x) + 2.0f;
    const Bindings b{{C, test::random_buffer(Float(32), {2, 3, 4, 5}, 41)}};
    expect_loop_nest_matches(Pipeline(rows60), {{2, 60}}, b, chip);
    expect_loop_nest_matches(Pipeline(rows20), {{6, 20}}, b, chip);
    expect_loop_nest_matches(Pipeline(rows5), {{24, 5}}, b, chip);
}

TEST_P(ChipLoopNest, APoolWindowClampedAtTheImageEdgeGathersItsLanesOnChip) {
    // ONNX's MaxPool and AveragePool over an NCHW image: the window runs along the innermost
    // dimension, its taps clamped at the edges (the select drops them). Each tap's lanes are a
    // window of the row that an sxm.permute puts in place; the edge test compares the lane loop
    // itself, and the average divides by the count of taps inside the image, a value of the
    // row loop (each from the constant table). Rows of 21 here: a full chunk and a partial one
    // on 16 lanes, three chunks on 8.
    const std::string chip = chip_target(GetParam());
    Input X(Float(32), {6, 21}, "X");
    Var y("y"), x("x");
    RDom t(0, 3, "t");
    Func mx("mx"), total("total"), count("count"), avg("avg");
    auto inside = [&](Expr at) { return at >= 0 && at < 21; };
    mx(y, x) = -1e30f;
    mx(y, x) = max(mx(y, x), select(inside(x + t - 1), X(y, clamp(x + t - 1, 0, 20)), -1e30f));
    total(y, x) = 0.0f;
    total(y, x) += select(inside(x + t - 1), X(y, clamp(x + t - 1, 0, 20)), 0.0f);
    count(y, x) = 0.0f;
    count(y, x) += select(inside(y + t - 1), 1.0f, 0.0f); // taps of a window down the rows
    avg(y, x) = total(y, x) / count(y, x);
    const Bindings b{{X, test::random_buffer(Float(32), {6, 21}, 42)}};
    const ChipResult r = expect_loop_nest_matches(Pipeline(mx), {{6, 21}}, b, chip);
    EXPECT_NE(r.program.assembly().find("sxm.permute"), std::string::npos) << r.program.assembly();
    expect_loop_nest_matches(Pipeline(avg), {{6, 21}}, b, chip);
}

TEST_P(ChipLoopNest, AConcatAlongAnOuterDimensionSplitsTheRowTilesAtItsSeams) {
    // ONNX's Concat of an LSTM's steps, [steps, 1, batch, hidden], each step computed on chip:
    // a select on the outermost index. Tiles of rows start at each seam, so every tile reads
    // one side of each select (the VXM cannot compute the index itself).
    const std::string chip = chip_target(GetParam());
    Input A(Float(32), {2, 16}, "A"), B(Float(32), {2, 16}, "B"), C(Float(32), {2, 16}, "C");
    Var s("s"), o("o"), n("n"), h("h");
    Func a("a"), bb("bb"), c("c"), cat("cat");
    a(n, h) = A(n, h) * 2.0f;
    bb(n, h) = B(n, h) + a(n, h);
    c(n, h) = C(n, h) - bb(n, h);
    cat(s, o, n, h) = select(s < 1, a(n, h), select(s < 2, bb(n, h), c(n, h)));
    const Bindings b{{A, test::random_buffer(Float(32), {2, 16}, 38)},
                     {B, test::random_buffer(Float(32), {2, 16}, 39)},
                     {C, test::random_buffer(Float(32), {2, 16}, 40)}};
    expect_loop_nest_matches(Pipeline(cat), {{3, 1, 2, 16}}, b, chip);
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipLoopNest, ::testing::Values("tsp-mini", "npu-edge"));
INSTANTIATE_TEST_SUITE_P(EditedTargets, ChipLoopNest, ::testing::Values("tsp-mini-v32", "npu-edge-v32", "npu-edge-4banks"),
                         [](const ::testing::TestParamInfo<std::string> &i) { return test::test_name(i.param); });

} // namespace
} // namespace tessera

namespace tessera {
namespace {

/// The dma.load instructions of `cp` that read program tensor `tensor`.
int64_t loads_of(const ChipProgram &cp, const std::string &tensor) {
    return std::count_if(cp.program.instructions.begin(), cp.program.instructions.end(),
                         [&](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::DmaLoad && in.view.tensor == tensor; });
}

/// The number before " input tiles" in the loop-nest compiler's summary.
int64_t input_tiles(const std::string &summary) {
    const size_t at = summary.find(" input tiles");
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(summary[begin - 1]))) --begin;
    return at == std::string::npos || begin == at ? -1 : std::stoll(summary.substr(begin, at - begin));
}

TEST(ChipLoopNestLoads, AnInputsRegularTilesComeInByAFewDmasOnAStreamingChip) {
    // Stride-2 3x3 max pooling reads its image as a thousand three-row tiles whose offsets form
    // progressions (two: one per 32-column block of a row). On tsp-mini each DMA holds the
    // engine for the host link's latency, so the tiles come in by a few DMAs a progression
    // (dealt round-robin, so that consecutive tiles sit on different slices); values are the
    // reference's.
    const chipsim::Target t = chipsim::load_target("tsp-mini");
    Input X(Float(32), {1, 16, 40, 40}, "X");
    ops::Pool2dOptions o;
    o.kernel = {3, 3};
    o.stride = {2, 2};
    const Pipeline p(ops::max_pool2d(X, o).func());
    const ChipResult r = expect_loop_nest_matches(p, {{1, 16, 19, 19}}, {{X, test::random_buffer(Float(32), {1, 16, 40, 40}, 7)}}, "tsp-mini");
    const int64_t tiles = input_tiles(r.program.summary), dmas = loads_of(r.program, r.program.tensors.at(0).tensor);
    ASSERT_GT(tiles, 100) << r.program.summary;
    const chipsim::MemoryDesc &mem = *t.memory("MEM");
    EXPECT_LE(dmas, 2 * int64_t(mem.hemispheres) * mem.slices) << r.program.summary;
    EXPECT_LT(dmas * 10, tiles) << r.program.summary;
    EXPECT_NE(r.program.summary.find("by " + std::to_string(dmas) + " DMAs"), std::string::npos) << r.program.summary;
    // A DMA a tile would have spent the link's latency once per tile.
    EXPECT_LT(r.report.host_io_cycles, tiles * t.host_link.latency / 10) << r.report.to_text();
}

TEST(ChipLoopNestWaves, ALongElementWiseChainRunsSeveralTilesAtOnce) {
    // The erf GELU is a chain of 44 values a tile of 256 rows, 4 of them read more than once. A wave piece
    // reuses the tiles its own chain gave back, so a wave holds several pieces (it held one when
    // every value of a chain counted as alive till the wave's end, and the VXM ran one
    // instruction at a time): on tsp-mini at least four VXM instructions run at once (one at a time before),
    // and the values are the reference's.
    Input X(Float(32), {256, 1024}, "X");
    const Pipeline p(ops::gelu(X).func());
    const ChipResult r = expect_loop_nest_matches(p, {{256, 1024}}, {{X, test::random_buffer(Float(32), {256, 1024}, 9)}}, "tsp-mini");
    std::vector<std::pair<int64_t, int64_t>> vxm; // [start, end of its rows' issue) of each VXM instruction
    for (const chipsim::Instruction &in : r.program.program.instructions)
        if (in.op == chipsim::Opcode::Vxm) vxm.emplace_back(in.cycle, in.cycle + in.tiles.at(0).count);
    // The most VXM instructions running at one cycle.
    std::vector<std::pair<int64_t, int>> events;
    for (const auto &[start, end] : vxm) events.insert(events.end(), {{start, 1}, {end, -1}});
    std::sort(events.begin(), events.end());
    int running = 0, most = 0;
    for (const auto &[cycle, change] : events) most = std::max(most, running += change);
    EXPECT_GE(most, 4) << r.program.assembly();
}

/// The most instructions with opcode `op` whose source rows stream at one cycle.
int most_at_once(const chipsim::Program &program, chipsim::Opcode op) {
    std::vector<std::pair<int64_t, int>> events;
    for (const chipsim::Instruction &in : program.instructions)
        if (in.op == op) events.insert(events.end(), {{in.cycle, 1}, {in.cycle + in.tiles.at(1).count, -1}});
    std::sort(events.begin(), events.end());
    int running = 0, most = 0;
    for (const auto &[cycle, change] : events) most = std::max(most, running += change);
    return most;
}

TEST(ChipLoopNestWaves, AWavesRowSumsRunSideBySideAndASquareStreamsItsTileOnce) {
    // Each sum of a wave's reductions, one row, goes to the roomier bank of its slice, away
    // from the preloaded input the other reductions stream (a slice reads and writes in one
    // cycle only on different banks), and the zero each accumulator starts from is copied on
    // chip from one kept row (a DMA of it for each accumulator held the one engine for the host
    // link's latency): the row sums run within 2x of the problem bound on tsp-mini (8x before),
    // with at least 8 reductions at once. And x · x names one tile twice: tsp-mini
    // streams it once for both operands, so no operand is copied to another slice first (every
    // 512-row tile was).
    const int rows = 256, cols = 1024;
    Input X(Float(32), {rows, cols}, "X");
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 4)}};
    Var y("y");
    RDom r(0, cols, "r");
    Func sum("row_sum"), ss("sum_squares");
    sum(y) = 0.0f;
    sum(y) += X(y, r);
    const Tolerance sum_of_cols = Tolerance::for_type(Float(32), cols);
    const ChipResult sums = expect_loop_nest_matches(Pipeline(sum), {{rows}}, b, "tsp-mini", sum_of_cols);
    EXPECT_LE(sums.report.cycles, 2 * sums.report.problem_bound_cycles) << sums.report.to_text();
    EXPECT_GE(most_at_once(sums.program.program, chipsim::Opcode::VxmReduce), 8) << sums.program.assembly();
    ss(y) = 0.0f;
    ss(y) += X(y, r) * X(y, r);
    const ChipResult squares = expect_loop_nest_matches(Pipeline(ss), {{rows}}, b, "tsp-mini", sum_of_cols);
    const auto &code = squares.program.program.instructions;
    EXPECT_EQ(std::count_if(code.begin(), code.end(),
                            [](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::MemCopy && in.tiles.at(0).count > 1; }),
              0)
        << squares.program.assembly();
}

TEST(ChipLoopNestLoads, AFewRowsComeInByOneDmaAndLeaveByOne) {
    // Merging BERT's heads ([1, 16, 2, 16] -> [1, 16, 32]) reads and writes one row per
    // (position, head): 32 rows, less than a DMA's fixed cost is worth in transfer time, so the
    // input comes in by one DMA and the output, kept on chip, leaves by one.
    Input X(Float(32), {1, 16, 2, 16}, "X");
    const Pipeline p(ops::reshape(X, {1, 16, 32}).func());
    const ChipResult r = expect_loop_nest_matches(p, {{1, 16, 32}}, {{X, test::random_buffer(Float(32), {1, 16, 2, 16}, 8)}}, "tsp-mini");
    EXPECT_GT(input_tiles(r.program.summary), 1) << r.program.summary;
    EXPECT_EQ(loads_of(r.program, r.program.tensors.at(0).tensor), 1) << r.program.assembly();
    EXPECT_EQ(std::count_if(r.program.program.instructions.begin(), r.program.program.instructions.end(),
                            [](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::DmaStore; }),
              1)
        << r.program.assembly();
}

TEST(ChipLoopNestLoads, AHeadMergeRunsDownItsRowsOnADramChip) {
    // BERT's head merge [1, L, heads, D] -> [1, L, heads·D] reads x(0, (768·s + h) / 768, ...):
    // the row coefficients divide the divisors, so a tile runs down all L positions (one DMA a
    // lane chunk); before, a tile took one row and npu-edge paid a DRAM round trip for each of
    // the L × chunks rows (BERT-base's merge: 817,288 cycles, now 49,538 at its DRAM bound).
    const int64_t L = 32, heads = 4, D = 16;
    Input X(Float(32), {1, L, heads, D}, "X");
    const Pipeline p(ops::reshape(X, {1, L, heads * D}).func());
    const ChipResult r = expect_loop_nest_matches(p, {{1, L, heads * D}}, {{X, test::random_buffer(Float(32), {1, L, heads, D}, 9)}}, "npu-edge");
    const int64_t lanes = chipsim::load_target("npu-edge").lanes(chipsim::DType::FP32);
    EXPECT_LE(loads_of(r.program, r.program.tensors.at(0).tensor), heads * D / lanes) << r.program.assembly();
    EXPECT_LE(r.report.cycles, 2 * r.report.problem_bound_cycles) << r.report.to_text();
}

TEST(ChipLoopNestLoads, ATooLargeInputsSmallTilesComeInGroupedOnADramChip) {
    // Stride-2 3x3 max pooling of 16 x 56 x 56 reads 5,280 rows of three-row tiles: more than
    // npu-edge preloads (half its scratchpad). A DMA a tile held the load engine for its set-up
    // and DRAM latency each (64 channels: 7,040 DMAs, 1,110,998 cycles); the tiles of a window
    // of the loads that form progressions now come in by one DMA, issued when the first of them
    // is read, and the max accumulates in place (no copy on the load queue). Values are the
    // reference's.
    Input X(Float(32), {1, 16, 56, 56}, "X");
    ops::Pool2dOptions o;
    o.kernel = {3, 3};
    o.stride = {2, 2};
    const Pipeline p(ops::max_pool2d(X, o).func());
    const ChipResult r = expect_loop_nest_matches(p, {{1, 16, 27, 27}}, {{X, test::random_buffer(Float(32), {1, 16, 56, 56}, 10)}}, "npu-edge");
    const int64_t tiles = input_tiles(r.program.summary), dmas = loads_of(r.program, r.program.tensors.at(0).tensor);
    ASSERT_GT(tiles, 1000) << r.program.summary;
    EXPECT_EQ(r.program.summary.find("preloaded once"), std::string::npos) << "too large to preload: " << r.program.summary;
    EXPECT_NE(r.program.summary.find("DMAs of a few each"), std::string::npos) << r.program.summary;
    EXPECT_LT(dmas * 10, tiles) << r.program.summary;
    const std::vector<std::string> &stages = r.program.program.stages;
    EXPECT_EQ(std::count_if(r.program.program.instructions.begin(), r.program.program.instructions.end(),
                            [&](const chipsim::Instruction &in) {
                                return in.op == chipsim::Opcode::MemCopy && in.stage >= 0 &&
                                       stages.at(size_t(in.stage)).find(".update") != std::string::npos;
                            }),
              0)
        << "the max accumulates in place";
    EXPECT_LE(r.report.cycles, 3 * r.report.problem_bound_cycles) << r.report.to_text();
}

// ChipLayoutRequests on a loop-nest kernel (npu-edge): asked to store an fp32 output as bf16,
// every stored tile is packed by a VXM cast — two fp32 rows into one bf16 row, the store's
// offsets and strides halved — and the values are the plain program's rounded, bit for bit,
// with fewer DRAM bytes and no more cycles; asked for a bf16 copy, the output is unchanged and
// the copy holds it rounded. Stored tiles of an odd number of rows cannot be packed: the
// request is then not taken. tsp-mini, which has no DRAM to keep a copy in, takes the narrower
// store (half the bytes cross the host link) and no copy.
TEST(ChipLoopNestStores, AnFp32OutputIsStoredAsBf16OrCopiedWhenAsked) {
    const int64_t seq = 32, heads = 4, D = 32, rows = 24, cols = 64;
    Input X(Float(32), {1, seq, heads * D}, "X"), S(Float(32), {rows, cols}, "S");
    Var b("b"), h("h"), s("s"), d("d"), y("y"), x("x"), i("i");
    RDom r(0, cols, "r"), rr(0, rows, "rr");
    // BERT's head split, one statement a lane chunk down the positions (rows strided in C).
    Func split("split_heads");
    split(b, h, s, d) = X(b, s, h * int(D) + d);
    // A scaled softmax written by hand (the tile rows run down y).
    Func mx("row_max"), e("shifted_exp"), total("total"), prob("prob");
    mx(y) = -1e30f;
    mx(y) = max(mx(y), S(y, r) * 0.125f);
    e(y, x) = exp(S(y, x) * 0.125f - mx(y));
    total(y) = 0.0f;
    total(y) += e(y, r);
    prob(y, x) = e(y, x) / total(y);
    e.compute_root();
    // Column sums: an output with an update, kept whole on chip and stored once (4 rows).
    Func col_sum("col_sum");
    col_sum(i) = 0.0f;
    col_sum(i) += S(rr, i);
    const Bindings bx{{X, test::random_buffer(Float(32), {1, seq, heads * D}, 21)}}, bs{{S, test::random_buffer(Float(32), {rows, cols}, 22)}};
    struct Case {
        Pipeline pipeline;
        std::vector<int64_t> shape;
        Bindings bindings;
    };
    for (const Case &c : {Case{Pipeline(split), {1, heads, seq, D}, bx}, Case{Pipeline(prob), {rows, cols}, bs}, Case{Pipeline(col_sum), {cols}, bs}}) {
        const std::string out = c.pipeline.outputs()[0].name();
        SCOPED_TRACE(out);
        ChipLayoutRequests narrow, copy;
        narrow.output_dtype[out] = chipsim::DType::BF16;
        copy.copy_dtype[out] = chipsim::DType::BF16;
        const ChipProgram tsp_plain = compile_for_chip(c.pipeline, Target::named("tsp-mini"), {c.shape});
        const ChipProgram tsp_copy = compile_for_chip(c.pipeline, Target::named("tsp-mini"), {c.shape}, {}, copy);
        EXPECT_EQ(tsp_copy.assembly(), tsp_plain.assembly());
        EXPECT_TRUE(tsp_copy.copies.empty());
        const ChipProgram tsp_packed = compile_for_chip(c.pipeline, Target::named("tsp-mini"), {c.shape}, {}, narrow);
        ASSERT_EQ(test::stored_dtype(tsp_packed, out), chipsim::DType::BF16) << tsp_packed.summary;
        const ChipResult tp = run_on_chip(tsp_plain, c.bindings), tq = run_on_chip(tsp_packed, c.bindings);
        test::expect_rounded_to_bf16(tq.outputs.at(0), tp.outputs.at(0));
        EXPECT_LT(tq.report.bytes.at("HOST"), tp.report.bytes.at("HOST"));

        const ChipProgram plain = compile_for_chip(c.pipeline, Target::named("npu-edge"), {c.shape});
        const ChipProgram packed = compile_for_chip(c.pipeline, Target::named("npu-edge"), {c.shape}, {}, narrow);
        EXPECT_EQ(test::stored_dtype(plain, out), chipsim::DType::FP32);
        ASSERT_EQ(test::stored_dtype(packed, out), chipsim::DType::BF16) << packed.summary;
        EXPECT_NE(packed.summary.find(out + " stored as bf16"), std::string::npos) << packed.summary;
        if (out == "prob") // its quotient is computed by the VXM right before the store: that op packs
            EXPECT_NE(packed.assembly().find("vxm.div.fp32.bf16"), std::string::npos) << packed.assembly();
        const ChipResult p = run_on_chip(plain, c.bindings), q = run_on_chip(packed, c.bindings);
        const Comparison ref = compare(p.outputs.at(0), c.pipeline.realize({c.shape}, c.bindings, Target::reference()).at(0), kFp32);
        EXPECT_TRUE(ref.equal) << ref.message;
        test::expect_rounded_to_bf16(q.outputs.at(0), p.outputs.at(0));
        EXPECT_LE(q.report.cycles, p.report.cycles);
        EXPECT_LT(q.report.bytes.at("DRAM"), p.report.bytes.at("DRAM"));
        // The bound counts the output at the width it crosses in.
        int64_t elements = 1;
        for (int64_t e : c.shape) elements *= e;
        EXPECT_EQ(packed.problem.output_bytes, plain.problem.output_bytes - 2 * elements);
        EXPECT_EQ(packed.problem.input_bytes, plain.problem.input_bytes);

        const ChipProgram copied = compile_for_chip(c.pipeline, Target::named("npu-edge"), {c.shape}, {}, copy);
        EXPECT_EQ(test::stored_dtype(copied, out), chipsim::DType::FP32);
        EXPECT_NE(copied.summary.find("a bf16 copy of " + out), std::string::npos) << copied.summary;
        const Comparison same = compare(run_on_chip(copied, c.bindings).outputs.at(0), p.outputs.at(0), Tolerance{});
        EXPECT_TRUE(same.equal) << "the output is unchanged: " << same.message;
        test::expect_copy_holds_the_rounded_output(copied, c.bindings, out, c.shape);
    }
    // Row sums of 40 rows: an output of 3 rows of 16 lanes, which no packing halves.
    Input T(Float(32), {40, cols}, "T");
    Func row_sum("row_sum");
    row_sum(i) = 0.0f;
    row_sum(i) += T(i, r);
    ChipLayoutRequests odd;
    odd.output_dtype["row_sum"] = odd.copy_dtype["row_sum"] = chipsim::DType::BF16;
    const ChipProgram declined = compile_for_chip(Pipeline(row_sum), Target::named("npu-edge"), {{40}}, {}, odd);
    EXPECT_EQ(declined.assembly(), compile_for_chip(Pipeline(row_sum), Target::named("npu-edge"), {{40}}).assembly());
    EXPECT_EQ(test::stored_dtype(declined, "row_sum"), chipsim::DType::FP32);
    EXPECT_TRUE(declined.copies.empty());
}

TEST(ProblemBound, ComesFromTheAlgorithmNotTheSchedule) {
    // On npu-edge a matmul's bound is A, B and C crossing DRAM once (int8 in, int32 out); on
    // tsp-mini, whose host I/O is outside a kernel's cycles, its MACs at the MXM's peak.
    auto matmul = [](Input &A, Input &B) { return Pipeline(ops::matmul(A, B)); };
    Input A(Int(8), {128, 256}, "A"), B(Int(8), {256, 96}, "B");
    const Bindings b{{A, test::random_buffer(Int(8), {128, 256}, 36)}, {B, test::random_buffer(Int(8), {256, 96}, 37)}};
    ChipResult npu = realize_library_kernel_on_chip(matmul(A, B), {{128, 96}}, b, Target::named("npu-edge"));
    EXPECT_DOUBLE_EQ(npu.report.problem_bound_cycles,
                     double(128 * 256 + 256 * 96 + 128 * 96 * 4) / chipsim::load_target("npu-edge").dram.bytes_per_cycle);
    EXPECT_EQ(npu.report.problem_bound_limiter, "DRAM");
    EXPECT_LE(npu.report.problem_bound_cycles, double(npu.report.cycles));
    EXPECT_NE(npu.report.to_json().find("\"problem_bound\""), std::string::npos);
    // A library kernel's profile is one stage holding every instruction.
    ASSERT_EQ(npu.report.stages.size(), 1u);
    EXPECT_EQ(npu.report.stages[0].instructions, npu.report.instructions);
    ChipResult tsp = realize_library_kernel_on_chip(matmul(A, B), {{128, 96}}, b, Target::named("tsp-mini"));
    EXPECT_EQ(tsp.report.problem_bound_limiter, "compute");
    EXPECT_DOUBLE_EQ(tsp.report.problem_bound_cycles,
                     double(128 * 256 * 96) / chipsim::load_target("tsp-mini").peak_macs_per_cycle(chipsim::DType::Int8));
    // A row sum under two schedules: lanes across the rows (the default: the input is gathered
    // 4 bytes at a time, which raises the program's roofline) and the same with the lane loop
    // split in two chunks of 16; the bound is the input and output crossing DRAM once, for both.
    Input X(Float(32), {32, 100}, "X");
    const Bindings bx{{X, test::random_buffer(Float(32), {32, 100}, 38)}};
    auto row_sum = [&](bool split) {
        Func s("row_sum");
        Var i("i");
        RDom r(0, 100, "r");
        s(i) = 0.0f;
        s(i) += X(i, r);
        if (split) s.update().vectorize(i, 16);
        return realize_on_chip(Pipeline(s), {{32}}, bx, Target::named("npu-edge"));
    };
    const ChipResult plain = row_sum(false), split = row_sum(true);
    const double bound = double(32 * 100 * 4 + 32 * 4) / chipsim::load_target("npu-edge").dram.bytes_per_cycle;
    EXPECT_DOUBLE_EQ(plain.report.problem_bound_cycles, bound);
    EXPECT_DOUBLE_EQ(split.report.problem_bound_cycles, bound);
    EXPECT_LT(plain.report.problem_bound_cycles, plain.report.roofline_cycles) << "the gathered reads raise the program's roofline only";
}

TEST(ProblemBound, CountsAnFp32OperandOfTheMxmAtBf16Width) {
    // The host rounds an fp32 matmul operand to bf16 before the link, so it crosses DRAM at 2
    // bytes an element; counted at 4, the bound was above what BERT-base's projections ran in.
    // A bias read by the VXM stays at 4 bytes; the fp32 output too.
    Input A(Float(32), {8, 768}, "A"), W(Float(32), {768, 768}, "W"), bias(Float(32), {768}, "bias");
    const Pipeline p(ops::add(ops::matmul(A, W), bias).func());
    const Bindings b{{A, test::random_buffer(Float(32), {8, 768}, 39)},
                     {W, test::random_buffer(Float(32), {768, 768}, 40)},
                     {bias, test::random_buffer(Float(32), {768}, 41)}};
    const ChipResult npu = realize_library_kernel_on_chip(p, {{8, 768}}, b, Target::named("npu-edge"));
    EXPECT_EQ(npu.report.problem_bound_limiter, "DRAM");
    EXPECT_DOUBLE_EQ(npu.report.problem_bound_cycles,
                     double((8 * 768 + 768 * 768) * 2 + 768 * 4 + 8 * 768 * 4) / chipsim::load_target("npu-edge").dram.bytes_per_cycle);
    EXPECT_LE(npu.report.problem_bound_cycles, double(npu.report.cycles));
}

} // namespace
} // namespace tessera
