// The chip tuner: the Z3 model of a target refuses what the backend refuses (with the reason in
// words) and approves what it accepts; the tuned chip schedule matches the reference evaluator
// and is no slower than the library schedule in exact cycles; an edited target with fewer
// accumulator banks changes what is feasible; the search is the same whatever the threads.
#include <gtest/gtest.h>

#include <fstream>

#include "chip_constraints.h"
#include "tessera/autotune.h"
#include "tessera/chipsim/target.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/ops.h"
#include "tessera/verify.h"
#include "test_support.h"

namespace {

using namespace tessera;
using tessera::internal::autotune::ChipConstraintModel;
using tessera::internal::autotune::ChipMatmulChoice;

struct Matmul {
    Input a, b;
    Func c;
    Pipeline p;
    std::vector<std::vector<int64_t>> shapes;
    Bindings bindings;
    Matmul(int64_t m, int64_t n, int64_t k)
        : a(Int(8), {int(m), int(k)}, "A"), b(Int(8), {int(k), int(n)}, "B"), c(ops::matmul(a, b).func()), p(c), shapes{{m, n}} {
        Buffer<> av(Int(8), {m, k}), bv(Int(8), {k, n});
        av.fill_random(11);
        bv.fill_random(12);
        bindings = {{a, av}, {b, bv}};
    }
    /// The matmul's chip schedule written by hand: tile rows x cols, accumulator bank.
    void schedule(int64_t rows, int64_t cols, int bank, int mxm_depth) {
        p.set_schedule(Schedule{});
        Var i(c.args()[0]), j(c.args()[1]), io("io"), jo("jo"), ii("ii"), ji("ji"), ko("ko"), ki("ki");
        const std::string k = c.contents()->updates[0].rdom->vars[0].name;
        c.update().split(k, ko, ki, mxm_depth).tile(i, j, io, jo, ii, ji, int(rows), int(cols))
            .reorder({io, jo, ko, ii, ji, ki})
            .tensorize("mxm", {ii, ji, ki});
        c.store_in(MemoryKind::ACC, bank).double_buffer();
    }
};

const chipsim::MemoryDesc &accumulator(const chipsim::Target &t) {
    for (const chipsim::MemoryDesc &m : t.memories)
        if (m.accumulator) return m;
    throw Error("no accumulator");
}

/// tsp-mini with two accumulator banks of 256 rows (and so two MXM planes, one per bank), as a
/// target JSON file: the path Target::named takes.
std::string tsp_with_two_small_accumulator_banks(const std::filesystem::path &dir) {
    chipsim::Target t = chipsim::load_target("tsp-mini");
    t.name = "tsp-mini-2acc";
    t.mxm.count = 2;
    for (chipsim::MemoryDesc &m : t.memories)
        if (m.accumulator) m.banks = 2, m.rows_per_bank = 256;
    const std::string path = (dir / "tsp-mini-2acc.json").string();
    std::ofstream(path) << t.to_json();
    return path;
}

TEST(ChipConstraints, InfeasibleChoicesComeBackWithTheRuleAndItsNumbers) {
    const chipsim::Target tsp = chipsim::load_target("tsp-mini");
    const chipsim::MemoryDesc &acc = accumulator(tsp);
    const ChipConstraintModel model(tsp, chipsim::DType::Int8, 256);
    const int64_t too_tall = 2 * acc.rows_per_bank;
    const std::optional<std::string> rows = model.why_infeasible({too_tall, 0, -1});
    ASSERT_TRUE(rows);
    EXPECT_NE(rows->find("an output tile of " + std::to_string(too_tall) + " rows"), std::string::npos) << *rows;
    EXPECT_NE(rows->find("holds " + std::to_string(acc.rows_per_bank)), std::string::npos) << *rows;
    const std::optional<std::string> bank = model.why_infeasible({0, 0, acc.total_banks()});
    ASSERT_TRUE(bank);
    EXPECT_NE(bank->find("ACC bank " + std::to_string(acc.total_banks()) + " does not exist"), std::string::npos) << *bank;
    // Both broken at once: the unsat core names both.
    const std::optional<std::string> both = model.why_infeasible({too_tall, 0, acc.total_banks()});
    ASSERT_TRUE(both);
    EXPECT_NE(both->find("rows"), std::string::npos);
    EXPECT_NE(both->find("does not exist"), std::string::npos);
    EXPECT_FALSE(model.why_infeasible({acc.rows_per_bank, 0, acc.total_banks() - 1}));

    const chipsim::Target npu = chipsim::load_target("npu-edge");
    const ChipConstraintModel npu_model(npu, chipsim::DType::Int8, 256);
    const std::optional<std::string> interleaved = npu_model.why_infeasible({0, 0, 0});
    ASSERT_TRUE(interleaved);
    EXPECT_NE(interleaved->find("interleaves rows"), std::string::npos) << *interleaved;
    const int64_t width = npu.mxm_shape(chipsim::DType::Int8).n, total = accumulator(npu).total_rows();
    EXPECT_FALSE(npu_model.why_infeasible({total / 2, 2 * width, -1})) << "exactly fills the accumulator";
    const std::optional<std::string> over = npu_model.why_infeasible({total / 2, 4 * width, -1});
    ASSERT_TRUE(over);
    EXPECT_NE(over->find("needs " + std::to_string(2 * total) + " accumulator rows"), std::string::npos) << *over;
    const std::optional<std::string> ragged = npu_model.why_infeasible({64, width + 1, -1});
    ASSERT_TRUE(ragged);
    EXPECT_NE(ragged->find("not a multiple of the MXM width"), std::string::npos) << *ragged;
}

// Z3's verdict against the backend's, in both directions, over a grid of choices that crosses
// every rule's edge on both chips.
TEST(ChipConstraints, AgreesWithTheBackendBothWays) {
    Matmul mm(2048, 128, 64);
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        const chipsim::Target t = chipsim::load_target(chip);
        const chipsim::MemoryDesc &acc = accumulator(t);
        const ChipConstraintModel model(t, chipsim::DType::Int8, 128);
        const int64_t width = t.mxm_shape(chipsim::DType::Int8).n, depth = t.mxm_shape(chipsim::DType::Int8).k;
        int accepted = 0, refused = 0;
        for (int64_t rows : {int64_t(64), acc.rows_per_bank, 2 * acc.rows_per_bank})
            for (int64_t cols : {width, int64_t(128)})
                for (int bank : {-1, 0, acc.total_banks() - 1, acc.total_banks()}) {
                    const std::optional<std::string> why = model.why_infeasible({rows, cols, bank});
                    mm.schedule(rows, cols, bank, int(depth));
                    bool compiles = true;
                    std::string error;
                    try {
                        compile_for_chip(mm.p, Target::named(chip), mm.shapes);
                    } catch (const Error &e) {
                        compiles = false;
                        error = e.what();
                    }
                    EXPECT_EQ(!why, compiles) << chip << " tile " << rows << "x" << cols << " bank " << bank << ": Z3 says "
                                              << why.value_or("feasible") << "; the backend " << (compiles ? "compiles it" : error);
                    (compiles ? accepted : refused) += 1;
                }
        EXPECT_GT(accepted, 0) << chip;
        EXPECT_GT(refused, 0) << chip;
    }
}

void expect_tuned_beats_library(const std::string &chip, int64_t m, int64_t n, int64_t k) {
    SCOPED_TRACE(chip);
    Matmul mm(m, n, k);
    const Target target = Target::named(chip);
    TuneOptions o;
    o.budget = 64;
    o.threads = 2;
    const TuneResult r = autotune(mm.p, mm.shapes, target, o);
    ASSERT_GT(r.best_cycles, 0);
    // The library schedule, run on its own, has the cycles the tuner recorded for it.
    mm.p.set_schedule(Schedule{});
    ChipRunOptions timing;
    timing.functional = false;
    const int64_t library = realize_library_kernel_on_chip(mm.p, mm.shapes, mm.bindings, target, timing).report.cycles;
    EXPECT_EQ(r.library_cycles, library);
    EXPECT_LE(r.best_cycles, library);
    EXPECT_EQ(r.wrong, 0);
    EXPECT_EQ(r.approved_but_refused, 0) << "Z3 approved a candidate the backend refused";
    EXPECT_GT(r.bound_cycles, 0);
    EXPECT_LE(r.bound_cycles, double(r.best_cycles));
    // The winner, run functionally, equals the reference evaluator everywhere.
    mm.p.set_schedule(r.best);
    const ChipResult run = realize_on_chip(mm.p, mm.shapes, mm.bindings, target);
    EXPECT_EQ(run.report.cycles, r.best_cycles);
    VerifyOptions full;
    full.mode = VerifyMode::Full;
    const Verification v = verify_outputs(mm.p, mm.shapes, mm.bindings, run.outputs, full);
    EXPECT_TRUE(v.passed) << v.mismatch;
}

TEST(AutotuneChip, TunedMatmulMatchesTheReferenceAndIsNoSlowerThanTheLibrary) {
    expect_tuned_beats_library("tsp-mini", 256, 128, 128);
    expect_tuned_beats_library("npu-edge", 256, 128, 128);
}

// A conv's npu-edge tile (whole output rows by channels) is searched: Z3 counts a row of the
// tile as the output's width of accumulator rows, so tiles too tall for the ACC are proven
// infeasible and never compiled, and no approved tile is refused; the most rows that fill the
// accumulator are among the candidates (9 rows of 28 pixels at 64 channels: 504 of 1024 rows,
// double-buffered); the winner beats the library's tile and equals the reference.
TEST(AutotuneChip, AConvsTileIsSearchedInWholeOutputRows) {
    Input X(Int(8), {1, 28, 28, 64}, "X"), Wt(Int(8), {3, 3, 64, 64}, "Wt");
    ops::Conv2dOptions opt;
    opt.padding = 1;
    opt.layout = ops::Layout::NHWC;
    Pipeline p(ops::conv2d(X, Wt, opt));
    const std::vector<std::vector<int64_t>> shapes{{1, 28, 28, 64}};
    Buffer<> x(Int(8), {1, 28, 28, 64}), w(Int(8), {3, 3, 64, 64});
    x.fill_random(21);
    w.fill_random(22);
    const Bindings bindings{{X, x}, {Wt, w}};
    TuneOptions o;
    o.budget = 24;
    o.threads = 2;
    const TuneResult r = autotune(p, shapes, Target::named("npu-edge"), o);
    EXPECT_EQ(r.approved_but_refused, 0);
    EXPECT_EQ(r.wrong, 0);
    EXPECT_LT(r.best_cycles, r.library_cycles);
    bool too_tall = false, fills_half = false;
    for (const std::string &why : r.infeasible_reasons) too_tall |= why.find("accumulator rows") != std::string::npos;
    for (const TuneTrial &t : r.history) fills_half |= t.candidate.find("tile 9x") != std::string::npos;
    EXPECT_TRUE(too_tall) << "28 rows of 28 pixels at 64 channels need 1568 accumulator rows";
    EXPECT_TRUE(fills_half);
    p.set_schedule(r.best);
    const ChipResult run = realize_on_chip(p, shapes, bindings, Target::named("npu-edge"));
    EXPECT_EQ(run.report.cycles, r.best_cycles);
    VerifyOptions full;
    full.mode = VerifyMode::Full;
    const Verification v = verify_outputs(p, shapes, bindings, run.outputs, full);
    EXPECT_TRUE(v.passed) << v.mismatch;
}

TEST(AutotuneChip, ProvenInfeasibleCandidatesAreCountedWithReasonsAndNeverMeasured) {
    Matmul mm(2048, 64, 64);
    TuneOptions o;
    o.budget = 64;
    o.threads = 2;
    const TuneResult r = autotune(mm.p, mm.shapes, Target::named("tsp-mini"), o);
    // Rows 2048 cannot fit one 1024-row accumulator bank: every such choice is proven infeasible.
    EXPECT_GT(r.proven_infeasible, 0);
    ASSERT_FALSE(r.infeasible_reasons.empty());
    EXPECT_NE(r.infeasible_reasons.front().find("accumulator rows"), std::string::npos) << r.infeasible_reasons.front();
    for (const TuneTrial &t : r.history) EXPECT_EQ(t.candidate.find("tile 2048x"), std::string::npos) << t.candidate;
    EXPECT_EQ(r.approved_but_refused, 0);
    EXPECT_EQ(r.measured + r.proven_infeasible, r.generated + 1) << "every candidate is either measured or proven infeasible";
}

TEST(AutotuneChip, AnEditedTargetWithFewerBanksChangesWhatIsFeasible) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string edited = tsp_with_two_small_accumulator_banks(dir);
    // The model of each target: bank 3 and a 512-row tile exist on tsp-mini only.
    const ChipConstraintModel original_model(chipsim::load_target("tsp-mini"), chipsim::DType::Int8, 128);
    const ChipConstraintModel edited_model(chipsim::load_target(edited), chipsim::DType::Int8, 128);
    EXPECT_FALSE(original_model.why_infeasible({512, 0, 3}));
    const std::optional<std::string> why = edited_model.why_infeasible({512, 0, 3});
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("has banks 0..1"), std::string::npos) << *why;
    EXPECT_NE(why->find("holds 256"), std::string::npos) << *why;

    Matmul mm(512, 128, 128);
    TuneOptions o;
    o.budget = 64;
    o.threads = 2;
    const TuneResult four = autotune(mm.p, mm.shapes, Target::named("tsp-mini"), o);
    const TuneResult two = autotune(mm.p, mm.shapes, Target::named(edited), o);
    EXPECT_EQ(four.proven_infeasible, 0) << four.to_string();
    EXPECT_GT(two.proven_infeasible, 0) << two.to_string();
    auto measured = [](const TuneResult &r, const std::string &what) {
        for (const TuneTrial &t : r.history)
            if (t.candidate.find(what) != std::string::npos) return true;
        return false;
    };
    EXPECT_TRUE(measured(four, "ACC bank 3"));
    // On tsp-mini the library's tile is the 512-row one (a choice naming 512 rows builds the
    // library schedule itself: one candidate, always measured first); the edited target refuses
    // it and every other 512-row tile.
    mm.p.set_schedule(Schedule{});
    apply_chip_library_schedule(mm.p, Target::named("tsp-mini"), mm.shapes);
    bool library_tile_512_rows = false;
    const Schedule library = mm.p.schedule();
    for (const Directive &d : library.funcs.at("matmul").stage(1))
        library_tile_512_rows |= d.kind == DirectiveKind::Tile && d.factors.at(0) == 512;
    EXPECT_TRUE(library_tile_512_rows);
    ASSERT_FALSE(four.history.empty());
    EXPECT_EQ(four.history.front().candidate, "library schedule");
    EXPECT_GT(four.library_cycles, 0);
    EXPECT_EQ(two.library_cycles, 0);
    EXPECT_FALSE(measured(two, "library schedule"));
    EXPECT_FALSE(measured(two, "ACC bank 3"));
    EXPECT_FALSE(measured(two, "tile 512x"));
    bool named = false;
    for (const std::string &reason : two.infeasible_reasons) named |= reason.find("holds 256") != std::string::npos;
    EXPECT_TRUE(named);
    EXPECT_EQ(two.wrong, 0);
    EXPECT_EQ(two.approved_but_refused, 0);
    std::filesystem::remove_all(dir);
}

// When nothing fits (a target file with tiny accumulator banks), the error says why in words.
TEST(AutotuneChip, NothingFeasibleIsAnErrorNamingTheLimit) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    chipsim::Target t = chipsim::load_target("tsp-mini");
    t.name = "tsp-mini-tiny-acc";
    for (chipsim::MemoryDesc &m : t.memories)
        if (m.accumulator) m.rows_per_bank = 16;
    const std::string path = (dir / "tiny.json").string();
    std::ofstream(path) << t.to_json();
    Matmul mm(256, 64, 64);
    try {
        autotune(mm.p, mm.shapes, Target::named(path), TuneOptions{});
        ADD_FAILURE() << "expected an error";
    } catch (const Error &e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("proven infeasible"), std::string::npos) << what;
        EXPECT_NE(what.find("an ACC bank of tsp-mini-tiny-acc holds 16"), std::string::npos) << what;
    }
    std::filesystem::remove_all(dir);
}

// A pipeline written by hand (not from tessera::ops) goes the vector / loop-nest path: its loop
// knobs are searched on both chips and the winner matches the reference.
TEST(AutotuneChip, AHandWrittenSeparableBlurTunesOnBothChips) {
    const int h = 30, w = 41;
    Input in(Float(32), {h + 2, w + 2}, "image");
    Var x("x"), y("y");
    Func bx("blur_x"), by("blur_y");
    bx(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    by(y, x) = (bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3.0f;
    Pipeline p(by);
    Buffer<> image(Float(32), {h + 2, w + 2});
    image.fill_random(5);
    const Bindings b{{in, image}};
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(chip);
        TuneOptions o;
        o.budget = 12;
        o.threads = 2;
        const TuneResult r = autotune(p, {{h, w}}, Target::named(chip), o);
        EXPECT_EQ(r.wrong, 0);
        // Every candidate is compiled before it is ranked: the ones the backend refuses are
        // counted, never ranked nor measured, so they cannot use up the budget; candidates are
        // compiled until a population is ranked or the space runs out, one whose program is
        // another's counted apart; the ranked ones are measured up to the budget unless the
        // cost model shows nothing left can win.
        const int population = std::max(o.population, o.budget);
        EXPECT_LE(r.ranked, population);
        if (r.ranked < population) EXPECT_GE(r.ranked + r.infeasible + r.same_program, r.space_size);
        EXPECT_LE(r.measured, std::min<int64_t>(o.budget, r.ranked));
        EXPECT_GE(r.measured, std::min<int64_t>(8, r.ranked)) << "the first round measures a full batch";
        EXPECT_LE(r.best_cycles, r.library_cycles);
        EXPECT_GT(r.best_cycles, 0);
        EXPECT_GT(r.bound_cycles, 0);
        p.set_schedule(r.best);
        const ChipResult run = realize_on_chip(p, {{h, w}}, b, Target::named(chip));
        EXPECT_EQ(run.report.cycles, r.best_cycles);
        VerifyOptions full;
        full.mode = VerifyMode::Full;
        const Verification v = verify_outputs(p, {{h, w}}, b, run.outputs, full);
        EXPECT_TRUE(v.passed) << v.mismatch;
        p.set_schedule(Schedule{});
    }
}

// Every chip trial carries the analytic model's prediction, made before it was measured; the
// run reports both models' accuracy on its randomly sampled trials; ranked by the model, the
// search simulates fewer candidates than the space holds yet finds the exhaustive optimum.
TEST(AutotuneChip, RanksByTheCostModelAndReportsItsAccuracy) {
    Matmul mm(512, 256, 256);
    TuneOptions o;
    o.budget = 64;
    o.threads = 2;
    const TuneResult r = autotune(mm.p, mm.shapes, Target::named("tsp-mini"), o);
    ASSERT_EQ(r.model_accuracy.size(), 2u);
    EXPECT_EQ(r.model_accuracy[0].model, "analytic");
    EXPECT_GE(r.model_accuracy[0].samples, 2);
    EXPECT_GT(r.model_accuracy[0].spearman, 0.7);
    for (const TuneTrial &t : r.history) EXPECT_GT(t.predicted_analytic, 0) << t.candidate;
    EXPECT_LT(r.measured, r.ranked) << "the model stops the search before every candidate is simulated";
    // The exhaustive optimum: every tile row count and accumulator bank the tuner chooses from,
    // simulated here.
    const chipsim::Target t = chipsim::load_target("tsp-mini");
    const int64_t width = t.mxm_shape(chipsim::DType::Int8).n, depth = t.mxm_shape(chipsim::DType::Int8).k;
    int64_t optimum = INT64_MAX;
    for (int64_t rows : {32, 64, 128, 256, 512})
        for (int bank = -1; bank < accumulator(t).total_banks(); ++bank) {
            mm.schedule(rows, width, bank, int(depth));
            ChipRunOptions timing_only;
            timing_only.functional = false;
            try {
                const ChipProgram program = compile_for_chip(mm.p, Target::named("tsp-mini"), mm.shapes);
                optimum = std::min(optimum, run_on_chip(program, mm.bindings, timing_only).report.cycles);
            } catch (const Error &) {
            }
        }
    mm.p.set_schedule(Schedule{});
    EXPECT_LE(r.best_cycles, optimum);
}

TEST(AutotuneChip, SameResultWhateverTheThreads) {
    Matmul mm(256, 128, 128);
    TuneOptions one, two;
    one.budget = two.budget = 16;
    one.threads = 1;
    two.threads = 2;
    const TuneResult a = autotune(mm.p, mm.shapes, Target::named("npu-edge"), one);
    const TuneResult b = autotune(mm.p, mm.shapes, Target::named("npu-edge"), two);
    EXPECT_EQ(a.best.to_json(), b.best.to_json());
    EXPECT_EQ(a.to_string(), b.to_string());
}

} // namespace
