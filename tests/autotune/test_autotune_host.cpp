// The host autotuner: its search space comes from the algorithm, every measured candidate is
// checked against the reference, a small space is searched exhaustively, and what it returns
// runs and matches the reference — for library ops and for pipelines written by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "host_machine.h"
#include "host_search_space.h"
#include "tessera/autotune.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/ir_operator.h"
#include "tessera/ops.h"
#include "tessera/reference.h"
#include "tessera/tuning_db.h"
#include "test_support.h"

using namespace tessera;

namespace {

/// Runs `p` under `schedule` on the host and compares it with the reference on random inputs.
void expect_matches_reference(const Pipeline &p, const Schedule &schedule, const std::vector<std::vector<int64_t>> &shapes,
                              int64_t reduction) {
    const Schedule before = p.schedule();
    p.set_schedule(schedule);
    Bindings b;
    uint64_t seed = 11;
    for (const Input &in : p.inputs()) {
        std::vector<int64_t> shape;
        for (const Expr &d : in.shape()) shape.push_back(d.as<IntImm>()->value);
        Buffer<> data(in.type(), shape);
        data.fill_random(++seed);
        b.emplace_back(in, data);
    }
    CompiledKernel k = compile_jit(p, shapes, Target::host());
    const std::vector<Buffer<>> got = run_pipeline_kernel(k, shapes, b);
    const std::vector<Buffer<>> want = evaluate_reference(p, shapes, b);
    for (size_t i = 0; i < want.size(); ++i) {
        Comparison c = compare(got[i], want[i], Tolerance::for_type(want[i].type(), reduction));
        EXPECT_TRUE(c.equal) << c.message;
    }
    p.set_schedule(before);
}

} // namespace

TEST(AutotuneHost, ASmallSpaceIsSearchedExhaustivelyAndTheBestIsTheFastestMeasured) {
    // GELU after a bias: the bias add may be inlined or computed at the root, and each Func at
    // the root has a parallel and a vector knob: 2 x (2 x 3) x (2 x 3) = 72 candidates at most.
    Input X(Float(32), {64, 96}, "X"), b(Float(32), {96}, "b");
    Pipeline p(ops::gelu(ops::add(X, b, "biased"), ops::GeluApproximation::Tanh, "act").func());
    TuneOptions o;
    o.budget = 100;
    o.repetitions = 2;
    const TuneResult r = autotune(p, {{64, 96}}, Target::host(), o);
    EXPECT_TRUE(r.exhaustive);
    EXPECT_LE(r.space_size, 72);
    EXPECT_EQ(r.generated, r.space_size);
    EXPECT_EQ(r.measured + r.infeasible, r.space_size);
    EXPECT_EQ(r.wrong, 0);
    double fastest = 1e30;
    for (const TuneTrial &t : r.history) fastest = std::min(fastest, t.seconds);
    EXPECT_EQ(r.best_seconds, fastest);
    EXPECT_EQ(r.history.back().best_so_far, r.best_seconds);
    EXPECT_TRUE(p.schedule().funcs.empty()) << "autotune must leave the pipeline's own schedule as it was";
    expect_matches_reference(p, r.best, {{64, 96}}, 1);
}

TEST(AutotuneHost, MatmulSpaceHasRegisterTilesAndReductionBlocksAndItsBestIsCorrect) {
    Input A(Float(32), {96, 320}, "A"), B(Float(32), {320, 128}, "B");
    Pipeline p(ops::matmul(A, B).func());
    TuneOptions o;
    o.budget = 12;
    o.repetitions = 2;
    o.seed = 3;
    int progress_calls = 0;
    o.progress = [&](int trial, int budget, double best, double) {
        ++progress_calls;
        EXPECT_LE(trial, budget);
        EXPECT_GT(best, 0);
    };
    const TuneResult r = autotune(p, {{96, 128}}, Target::host(), o);
    EXPECT_FALSE(r.exhaustive);
    EXPECT_GT(r.space_size, 12);
    EXPECT_EQ(r.measured, 12);
    EXPECT_EQ(progress_calls, 12);
    EXPECT_EQ(r.wrong, 0);
    EXPECT_GT(r.gflops, 0);
    // The knobs come from the algorithm: the update over k gets rows and a block of k (K = 320).
    bool rows = false, kblock = false;
    for (const TuneTrial &t : r.history) {
        rows |= t.candidate.find("matmul.s1.rows=") != std::string::npos;
        kblock |= t.candidate.find("matmul.s1.kblock=") != std::string::npos;
    }
    EXPECT_TRUE(rows && kblock) << r.to_string();
    std::set<std::string> distinct;
    for (const TuneTrial &t : r.history) distinct.insert(t.candidate);
    EXPECT_EQ(distinct.size(), r.history.size()) << "a candidate was measured twice";
    expect_matches_reference(p, r.best, {{96, 128}}, 320);
}

TEST(AutotuneHost, TheFirstMeasuredCandidateIsTheMachinesRegisterAndCacheRule) {
    using namespace tessera::internal::autotune;
    Input A(Float(32), {256, 512}, "A"), B(Float(32), {512, 2048}, "B");
    Pipeline p(ops::matmul(A, B).func());
    const HostMachine &m = host_machine();
    const HostSearchSpace space(p, m.lanes, {{256, 2048}});
    const std::string rule = space.describe(space.register_and_cache_rule(m));
    // The rule from this machine's facts: two vectors of columns and as many rows as leave
    // the column operand's vector and a broadcast free in the vector registers.
    const int64_t rows_that_fit = (m.vector_registers - 3) / 2;
    int64_t rows = 0;
    for (int r : {1, 2, 4, 6, 8})
        if (r <= rows_that_fit) rows = r;
    EXPECT_NE(rule.find("matmul.s1.vector=" + std::to_string(2 * m.lanes)), std::string::npos) << rule;
    EXPECT_NE(rule.find("matmul.s1.rows=" + std::to_string(rows) + " "), std::string::npos) << rule;
    EXPECT_NE(rule.find("matmul.s1.pack=on"), std::string::npos) << rule;
    EXPECT_NE(rule.find("matmul.s1.parallel=tiles"), std::string::npos) << rule;
    EXPECT_EQ(rule.find("matmul.s1.kblock=off"), std::string::npos) << "K = 512 is blocked for L1: " << rule;
    EXPECT_EQ(rule.find("matmul.s1.strip=off"), std::string::npos) << "2048 columns are stripped for L2: " << rule;
    TuneOptions o;
    o.budget = 3;
    o.repetitions = 1;
    o.seed = 5;
    const TuneResult r = autotune(p, {{256, 2048}}, Target::host(), o);
    ASSERT_FALSE(r.exhaustive);
    ASSERT_FALSE(r.history.empty());
    EXPECT_EQ(r.history[0].candidate, rule) << r.to_string();
    EXPECT_FALSE(r.history[0].sampled);
    expect_matches_reference(p, r.best, {{256, 2048}}, 512);
}

TEST(AutotuneHost, TheSameSeedDrawsTheSameFirstCandidates) {
    // Later candidates mutate the fastest measured ones, and host timings vary run to run; the
    // random first generation does not.
    Input A(Float(32), {64, 64}, "A"), B(Float(32), {64, 64}, "B");
    Pipeline p(ops::matmul(A, B).func());
    TuneOptions o;
    o.budget = 8;
    o.repetitions = 1;
    o.seed = 9;
    const TuneResult a = autotune(p, {{64, 64}}, Target::host(), o), b = autotune(p, {{64, 64}}, Target::host(), o);
    ASSERT_EQ(a.history.size(), b.history.size());
    for (size_t i = 0; i < a.history.size(); ++i) EXPECT_EQ(a.history[i].candidate, b.history[i].candidate);
    o.seed = 10;
    const TuneResult c = autotune(p, {{64, 64}}, Target::host(), o);
    bool differs = false;
    for (size_t i = 0; i < c.history.size(); ++i) differs |= c.history[i].candidate != a.history[i].candidate;
    EXPECT_TRUE(differs);
}

TEST(AutotuneHost, TunesAPipelineWrittenByHand) {
    // A two-stage separable blur with a clamped border and a row sum of its square: none of it
    // from tessera::ops, Funcs and Vars under the user's own names.
    Input img(Float(32), {48, 70}, "img");
    Var y("y"), x("x");
    Func clamped("clamped"), blur_x("blur_x"), blur_y("blur_y"), energy("energy");
    clamped(y, x) = img(clamp(y, 0, 47), clamp(x, 0, 69));
    blur_x(y, x) = (clamped(y, x - 1) + clamped(y, x) + clamped(y, x + 1)) / 3.0f;
    blur_y(y, x) = (blur_x(y - 1, x) + blur_x(y, x) + blur_x(y + 1, x)) / 3.0f;
    RDom r(0, 70, "r");
    energy(y) = 0.0f;
    energy(y) += blur_y(y, r) * blur_y(y, r);
    Pipeline p(energy);
    TuneOptions o;
    o.budget = 16;
    o.repetitions = 2;
    const TuneResult res = autotune(p, {{48}}, Target::host(), o);
    EXPECT_EQ(res.wrong, 0);
    EXPECT_GT(res.measured, 0);
    bool fusion = false;
    for (const TuneTrial &t : res.history) fusion |= t.candidate.find("blur_x.compute=") != std::string::npos;
    EXPECT_TRUE(fusion) << "each producer's fusion is a knob";
    expect_matches_reference(p, res.best, {{48}}, 70);
}

TEST(AutotuneHost, RefusesWhatItCannotTuneSayingWhy) {
    Input A(Float(32), {8, 8}, "A"), B(Float(32), {8, 8}, "B");
    Pipeline p(ops::matmul(A, B).func());
    auto expect_error = [&](const Target &t, const TuneOptions &o, const std::string &part) {
        try {
            autotune(p, {{8, 8}}, t, o);
            ADD_FAILURE() << "expected an error containing '" << part << "'";
        } catch (const Error &e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    expect_error(Target::reference(), {}, "target '" + Target::reference().name() + "' cannot be tuned; the host and the chips can");
    TuneOptions zero;
    zero.budget = 0;
    expect_error(Target::host(), zero, "the budget must be at least 1");
    TuneOptions reps;
    reps.repetitions = 0;
    expect_error(Target::host(), reps, "repetitions must be at least 1");
    TuneOptions threads;
    threads.threads = -1;
    expect_error(Target::host(), threads, "threads must be 0 (one per core) or more");
    TuneOptions population;
    population.population = 0;
    expect_error(Target::host(), population, "the population must be at least 1");
    TuneOptions time;
    time.time_budget_s = -1;
    expect_error(Target::host(), time, "the time budget must be 0 (none) or positive");
    TuneOptions measure;
    measure.measure = [](const Schedule &) { return 0.0; };
    expect_error(Target::host(), measure, "a cost must be a positive number");
    try {
        autotune(p, {{8, 8}, {8, 8}}, Target::host(), {});
        ADD_FAILURE() << "two output shapes for one output";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("the pipeline has 1 outputs but 2 output shapes were given"), std::string::npos) << e.what();
    }
}

namespace {

/// A cost the test controls, from the schedule's directives alone (so a search is
/// deterministic): best with a register tile of 4 rows x 2 vectors, parallel tiles, the rows
/// outside the columns, and a plain zero fill.
double synthetic_cost(const Schedule &s, int lanes) {
    const nlohmann::json j = nlohmann::json::parse(s.to_json());
    double cost = 1.0;
    bool split_i = false, split_j = false, parallel = false;
    for (const auto &f : j["funcs"])
        for (const auto &stage : f["stages"])
            for (const auto &d : stage["directives"]) {
                const std::string op = d["op"];
                if (stage["stage"] == 0) {
                    cost += op == "parallel" ? 0.1 : op == "vectorize" ? 0.05 : 0.0;
                    continue;
                }
                if (op == "split" && d["vars"][0] == "j") {
                    split_j = true;
                    cost += 0.5 * std::abs(std::log2(d["factors"][0].get<double>() / (2 * lanes)));
                }
                if (op == "split" && d["vars"][0] == "i") {
                    split_i = true;
                    cost += 0.1 * std::abs(d["factors"][0].get<double>() - 4);
                }
                if (op == "parallel") parallel = true;
                if (op == "reorder" && d["vars"][0] == "j_o") cost += 0.3;
            }
    return cost + (split_j ? 0 : 2) + (split_i ? 0 : 0.5) + (parallel ? 0 : 0.7);
}

} // namespace

TEST(AutotuneHost, TheModelGuidedSearchFindsTheExhaustiveOptimumOfASmallSpace) {
    Input A(Float(32), {64, 64}, "A"), B(Float(32), {64, 64}, "B");
    Pipeline p(ops::matmul(A, B).func());
    const int lanes = host_features().float_lanes();
    TuneOptions o;
    o.measure = [&](const Schedule &s) { return synthetic_cost(s, lanes); };
    o.budget = 100000;
    const TuneResult all = autotune(p, {{64, 64}}, Target::host(), o);
    ASSERT_TRUE(all.exhaustive);
    EXPECT_EQ(all.measured + all.infeasible, all.space_size);
    // A sixth of the space, chosen by the models and evolved from the fastest.
    o.budget = int(all.space_size / 6);
    o.seed = 5;
    const TuneResult some = autotune(p, {{64, 64}}, Target::host(), o);
    EXPECT_FALSE(some.exhaustive);
    EXPECT_LE(some.measured, o.budget);
    EXPECT_LE(some.best_seconds, 1.02 * all.best_seconds) << some.to_string();
    // The learned model, trained on what the run measured, ranks the cost's random samples.
    ASSERT_EQ(some.model_accuracy.size(), 2u);
    EXPECT_GT(some.model_accuracy[1].samples, 4);
    EXPECT_GT(some.model_accuracy[1].spearman, 0.5) << some.to_string();
    expect_matches_reference(p, some.best, {{64, 64}}, 64);
}

TEST(AutotuneHost, ReportsEachCostModelsAccuracyOnRandomlySampledTrials) {
    Input A(Float(32), {96, 320}, "A"), B(Float(32), {320, 128}, "B");
    Pipeline p(ops::matmul(A, B).func());
    TuneOptions o;
    o.budget = 24;
    o.repetitions = 2;
    o.population = 64;
    o.threads = 2;
    const TuneResult r = autotune(p, {{96, 128}}, Target::host(), o);
    EXPECT_EQ(r.wrong, 0);
    EXPECT_GE(r.ranked, r.measured);
    EXPECT_GT(r.bound_seconds, 0);
    EXPECT_GE(r.gap_to_bound(), 0.5) << "no schedule runs at twice the measured peak: " << r.machine;
    int sampled = 0, learned = 0;
    for (const TuneTrial &t : r.history) {
        EXPECT_GT(t.predicted_analytic, 0) << "trial " << t.trial;
        sampled += t.sampled;
        learned += t.predicted_learned > 0;
    }
    EXPECT_GE(sampled, 4) << "two random candidates per batch of eight";
    EXPECT_GT(learned, 0) << "the learned model predicts once a batch has trained it";
    ASSERT_EQ(r.model_accuracy.size(), 2u);
    EXPECT_EQ(r.model_accuracy[0].model, "analytic");
    EXPECT_EQ(r.model_accuracy[1].model, "learned");
    EXPECT_EQ(r.model_accuracy[0].samples, sampled);
    for (const CostModelAccuracy &a : r.model_accuracy) {
        EXPECT_GE(a.spearman, -1.0);
        EXPECT_LE(a.spearman, 1.0);
        EXPECT_GE(a.mean_relative_error, 0.0);
        EXPECT_TRUE(std::isfinite(a.mean_relative_error));
    }
    EXPECT_NE(r.to_string().find("cost model analytic"), std::string::npos);
    EXPECT_EQ(r.trials_to_reach(r.best_seconds) - 1, [&] {
        for (const TuneTrial &t : r.history)
            if (t.seconds == r.best_seconds) return t.trial;
        return -1;
    }());
    expect_matches_reference(p, r.best, {{96, 128}}, 320);
}

TEST(AutotuneHost, RowReductionsAreComputedAtBlocksOfTheOutputsRows) {
    // RMSNorm's mean square and softmax's maximum and sum (the maximum read by the sum and the
    // output) are read only at their readers' rows: the space computes them at the root or at
    // blocks of the output's rows, vectorized across the block. Every block size is correct
    // (130 rows: a tail block), and a column sum read at every row gets no such knob.
    const int rows = 130, cols = 96;
    Input X(Float(32), {rows, cols}, "X");
    for (const Pipeline &p : {Pipeline(ops::rmsnorm(X).func()), Pipeline(ops::softmax(X).func())}) {
        const std::string out = p.outputs()[0].name();
        SCOPED_TRACE(out);
        const internal::autotune::HostSearchSpace space(p, host_features().float_lanes(), {{rows, cols}});
        int knob = -1;
        for (size_t k = 0; k < space.knobs().size(); ++k)
            if (space.knobs()[k].name == out + ".reductions") knob = int(k);
        ASSERT_GE(knob, 0) << "no row-block knob";
        EXPECT_EQ(space.knobs()[size_t(knob)].values, (std::vector<std::string>{"root", "rows/64"}));
        internal::autotune::Candidate c(space.knobs().size(), 0);
        c[size_t(knob)] = 1;
        space.apply(c, p);
        const Schedule blocked = p.schedule();
        int at_blocks = 0;
        for (const auto &[name, fs] : blocked.funcs)
            for (const Directive &d : fs.stage(0)) at_blocks += d.kind == DirectiveKind::ComputeAt && d.func == out;
        EXPECT_EQ(at_blocks, out == "softmax" ? 2 : 1) << blocked.to_string();
        expect_matches_reference(p, blocked, {{rows, cols}}, cols);
        p.set_schedule(Schedule{});
    }
    Input Y(Float(32), {rows, cols}, "Y");
    Var i("i"), j("j");
    RDom r(0, rows, "r");
    Func col_sum("col_sum"), centered("centered");
    col_sum(j) = 0.0f;
    col_sum(j) += Y(r, j);
    centered(i, j) = Y(i, j) - col_sum(j) / float(rows);
    const internal::autotune::HostSearchSpace columns(Pipeline(centered), host_features().float_lanes(), {{rows, cols}});
    for (const internal::autotune::Knob &k : columns.knobs()) EXPECT_NE(k.name, "centered.reductions");
}

TEST(AutotuneHost, TheProblemBoundCountsTheArithmeticEachFuncDoesOnce) {
    // A matmul does 2·M·N·K flops. An RMSNorm's reduction runs along each row once, not once per
    // output element: counted per output element it would claim 2·rows·cols² flops and a bound
    // the tuned schedule "beats".
    TuneOptions o;
    o.budget = 4;
    o.repetitions = 2;
    o.threads = 2;
    Input A(Float(32), {64, 96}, "A"), B(Float(32), {96, 80}, "B");
    const TuneResult mm = autotune(Pipeline(ops::matmul(A, B).func()), {{64, 80}}, Target::host(), o);
    EXPECT_NEAR(mm.gflops * mm.best_seconds * 1e9, 2.0 * 64 * 80 * 96, 1.0);
    // 64 MiB in and out, more than any cache holds: the bound's memory term is the measured
    // bandwidth of memory, which a cache-resident run could beat (under the sanitizers, whose
    // runs are many times slower, a smaller input).
    const int rows = tessera_test::kSanitized ? 256 : 8192, cols = 1024;
    Input X(Float(32), {rows, cols}, "X");
    const TuneResult norm = autotune(Pipeline(ops::rmsnorm(X).func()), {{rows, cols}}, Target::host(), o);
    const double flops = norm.gflops * norm.best_seconds * 1e9;
    EXPECT_GE(flops, 2.0 * rows * cols) << "the sum of squares: a multiply and an add per element";
    EXPECT_LE(flops, 8.0 * rows * cols) << "a few operations per element, not a reduction per element";
    EXPECT_GE(norm.gap_to_bound(), 0.5) << "no schedule runs at twice the bound: " << norm.to_string();
}

TEST(AutotuneHost, EarlierRecordsOfTheSameWorkloadTrainTheLearnedModel) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    TuningDatabase db((dir / "tuning.db").string());
    Input A(Float(32), {32, 64}, "A"), B(Float(32), {64, 96}, "B");
    Pipeline p(ops::matmul(A, B).func());
    TuneOptions o;
    o.budget = 10;
    o.repetitions = 1;
    o.database = &db;
    const TuneResult first = autotune(p, {{32, 96}}, Target::host(), o);
    EXPECT_EQ(first.database_samples, 0);
    o.seed = 2;
    const TuneResult second = autotune(p, {{32, 96}}, Target::host(), o);
    EXPECT_EQ(second.database_samples, first.measured - first.wrong);
    // Trained before its first batch, the learned model predicts every trial of the second run.
    for (const TuneTrial &t : second.history) EXPECT_GT(t.predicted_learned, 0) << "trial " << t.trial;
}
