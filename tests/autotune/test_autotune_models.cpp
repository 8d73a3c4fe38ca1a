// The host cost models on their own: rank statistics, the loop-nest summary of a lowered
// matmul, the analytic model's ranking of schedules whose order is not in doubt, and the
// learned model on a synthetic dataset with a known monotone cost.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "analytic_cost_model.h"
#include "host_machine.h"
#include "learned_cost_model.h"
#include "loop_nest_features.h"
#include "loop_nest_summary.h"
#include "rank_statistics.h"
#include "tessera/error.h"
#include "tessera/lower.h"
#include "tessera/ops.h"

using namespace tessera;
using namespace tessera::internal::autotune;

TEST(RankStatistics, SpearmanAndMeanRelativeErrorOfKnownSeries) {
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
    EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {40, 30, 20, 10}), -1.0);
    // Only ranks matter: any monotone transform of the predictions correlates perfectly.
    EXPECT_DOUBLE_EQ(spearman({1, 4, 9, 1000}, {0.1, 0.2, 0.3, 0.4}), 1.0);
    // One swap in five: 1 - 6 * 2 / (5 * 24) = 0.9.
    EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {1, 2, 3, 5, 4}), 0.9, 1e-12);
    EXPECT_DOUBLE_EQ(spearman({1}, {1}), 0.0);
    EXPECT_DOUBLE_EQ(mean_relative_error({2, 1}, {1, 2}), 0.75); // (1/1 + 1/2) / 2
    EXPECT_DOUBLE_EQ(mean_relative_error({3, 3}, {3, 3}), 0.0);
    EXPECT_THROW(spearman({1, 2}, {1}), Error);
}

TEST(LoopNestSummary, AMatmulsAccessesDependOnTheirOwnLoops) {
    Input A(Float(32), {32, 48}, "A"), B(Float(32), {48, 64}, "B");
    Pipeline p(ops::matmul(A, B).func());
    const LoopNestSummary s = summarize_loop_nest(lower(p, Target::host(), {{32, 64}}));
    // The zero fill and the update.
    ASSERT_EQ(s.stores.size(), 2u);
    const StoreNest &update = s.stores[1];
    ASSERT_EQ(update.loops.size(), 3u); // i, j, k (the reduction innermost by default)
    EXPECT_EQ(update.points(), 32.0 * 64 * 48);
    EXPECT_EQ(update.ops_per_point, 2); // one multiply, one add
    const uint64_t i = 1, j = 2, k = 4;
    for (const NestAccess &a : update.accesses) {
        if (a.written) EXPECT_EQ(a.depends, i | j) << a.buffer;
        else if (a.buffer == "A") EXPECT_EQ(a.depends, i | k);
        else if (a.buffer == "B") EXPECT_EQ(a.depends, k | j);
        else ADD_FAILURE() << "unexpected access of " << a.buffer;
    }
    EXPECT_EQ(update.accesses.back().written, true);
    EXPECT_EQ(update.accesses.back().read, true) << "C(i, j) += ... reads the element it writes";
}

TEST(AnalyticCostModel, PrefersVectorsRegisterTilesAndParallelLoops) {
    const HostMachine &m = host_machine();
    EXPECT_GT(m.core_flops, 1e8);
    EXPECT_GT(m.memory_bandwidth, 1e7);
    EXPECT_GE(m.l2_bandwidth, m.memory_bandwidth / m.cores) << m.to_string();
    const int64_t n = 256;
    Input A(Float(32), {n, n}, "A"), B(Float(32), {n, n}, "B");
    Func C = ops::matmul(A, B).func();
    Pipeline p(C);
    auto estimate = [&] { return estimate_host_seconds(summarize_loop_nest(lower(p, Target::host(), {{n, n}})), m); };
    const AnalyticEstimate naive = estimate();
    EXPECT_NEAR(naive.flops, 2.0 * n * n * n + n * n, 1.0); // the update's multiply-adds + the zero fill
    Var i("i"), j("j"), io("io"), ii("ii"), jo("jo"), ji("ji");
    const VarOrRVar k("k");
    // A register tile: 4 rows x 2 vectors, k inside it.
    C.update().split(i, io, ii, 4).split(j, jo, ji, 2 * m.lanes).reorder({io, jo, k, ii, ji}).vectorize(ji, m.lanes).unroll(ji).unroll(ii);
    const AnalyticEstimate tiled = estimate();
    EXPECT_LT(tiled.seconds, naive.seconds / 2) << "naive " << naive.seconds << " s, tiled " << tiled.seconds << " s";
    EXPECT_GT(tiled.vector_fraction, 0.9);
    if (m.cores > 1) {
        C.update().parallel(io);
        const AnalyticEstimate parallel = estimate();
        EXPECT_LT(parallel.seconds, tiled.seconds);
        EXPECT_GT(parallel.parallel_speedup, 1.0);
    }
    const std::vector<float> f = loop_nest_features(summarize_loop_nest(lower(p, Target::host(), {{n, n}})), tiled, m);
    EXPECT_EQ(f.size(), size_t(kLoopNestFeatures));
    for (float v : f) EXPECT_TRUE(std::isfinite(v));
}

TEST(LearnedCostModel, RanksAKnownMonotoneCostOnUnseenSamples) {
    // cost = exp(3 a + 2 b - c + 0.5 d) with a fifth, irrelevant feature: the trees must rank
    // held-out samples in nearly the true order.
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0, 1);
    auto cost = [](const std::vector<float> &f) { return std::exp(3.0 * f[0] + 2.0 * f[1] - f[2] + 0.5 * f[3]) * 1e-3; };
    LearnedCostModel model;
    EXPECT_FALSE(model.train()) << "no samples yet";
    EXPECT_THROW(model.predict_seconds({{0, 0, 0, 0, 0}}), Error);
    for (int s = 0; s < 300; ++s) {
        std::vector<float> f = {u(rng), u(rng), u(rng), u(rng), u(rng)};
        model.add(f, cost(f));
    }
    ASSERT_TRUE(model.train());
    std::vector<std::vector<float>> test;
    std::vector<double> truth;
    for (int s = 0; s < 100; ++s) {
        test.push_back({u(rng), u(rng), u(rng), u(rng), u(rng)});
        truth.push_back(cost(test.back()));
    }
    const std::vector<double> predicted = model.predict_seconds(test);
    EXPECT_GT(spearman(predicted, truth), 0.9);
    EXPECT_LT(mean_relative_error(predicted, truth), 0.3);
    EXPECT_THROW(model.add({1, 2}, 1.0), Error) << "a sample with another number of features";
    EXPECT_THROW(model.add({0, 0, 0, 0, 0}, 0.0), Error) << "a time must be positive";
}
