// `tessera tune` reports what the model-guided search did: each cost model's accuracy on the
// randomly sampled trials, both predictions of every trial, the problem bound; --threads and
// --population reach the search, and bad values are refused naming the option.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace {

tessera_test::CommandResult run_tessera(const std::string &args) {
    return tessera_test::run_command(std::string("'") + TESSERA_CLI + "' " + args);
}

} // namespace

TEST(CliTuneModels, JsonCarriesTheModelsAccuracyAndEachTrialsPredictions) {
    const tessera_test::CommandResult r =
        run_tessera("tune matmul M=64 N=48 K=80 --budget 12 --repetitions 1 --threads 2 --population 24 --quiet --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["cost_models"].size(), 2u);
    EXPECT_EQ(j["cost_models"][0]["model"], "analytic");
    EXPECT_EQ(j["cost_models"][1]["model"], "learned");
    for (const auto &m : j["cost_models"]) {
        EXPECT_GE(m["spearman"].get<double>(), -1.0);
        EXPECT_LE(m["spearman"].get<double>(), 1.0);
        EXPECT_GE(m["mean_relative_error"].get<double>(), 0.0);
    }
    EXPECT_GT(j["cost_models"][0]["samples"].get<int>(), 0) << "two random candidates per batch of eight";
    EXPECT_GE(j["counts"]["ranked"].get<int>(), j["counts"]["measured"].get<int>());
    EXPECT_GT(j["bound"]["seconds"].get<double>(), 0);
    ASSERT_EQ(j["history"].size(), 12u);
    int sampled = 0;
    for (const auto &t : j["history"]) {
        EXPECT_GT(t["predicted_analytic"].get<double>(), 0);
        sampled += t["sampled"].get<bool>();
    }
    EXPECT_EQ(sampled, j["cost_models"][0]["samples"].get<int>());
    // The table for people names both models.
    const tessera_test::CommandResult table = run_tessera("tune matmul M=32 N=32 K=32 --budget 4 --repetitions 1 --quiet");
    ASSERT_EQ(table.status, 0) << table.err;
    EXPECT_NE(table.out.find("cost model analytic"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("problem bound"), std::string::npos) << table.out;
}

TEST(CliTuneModels, RefusesBadThreadAndPopulationCounts) {
    const tessera_test::CommandResult threads = run_tessera("tune matmul --threads -1");
    EXPECT_EQ(threads.status, 2);
    EXPECT_NE(threads.err.find("--threads"), std::string::npos) << threads.err;
    const tessera_test::CommandResult population = run_tessera("tune matmul --population 0");
    EXPECT_EQ(population.status, 2);
    EXPECT_NE(population.err.find("--population"), std::string::npos) << population.err;
}
