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

// On a chip: exact cycles, the library's and the bound's, Z3's refusals with their reasons, the
// gap in the progress bar; `tessera run --schedule` then runs the winner in the same cycles,
// verified against the reference.
TEST(CliTuneChip, TunesOnTspMiniAndTheWinnerRunsInTheSameCycles) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string best = (dir / "best.json").string();
    const std::string op = "matmul M=2048 N=64 K=64 dtype=int8";
    const std::string db = (dir / "tuning.db").string();
    const tessera_test::CommandResult r =
        run_tessera("tune " + op + " --target tsp-mini --threads 2 --json -o '" + best + "' --db '" + db + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("x the bound)"), std::string::npos) << "the progress bar shows the gap: " << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const int64_t cycles = j["best"]["cycles"].get<int64_t>();
    EXPECT_GT(cycles, 0);
    EXPECT_LE(cycles, j["best"]["library_cycles"].get<int64_t>());
    EXPECT_GT(j["bound"]["cycles"].get<double>(), 0);
    EXPECT_LE(j["bound"]["cycles"].get<double>(), double(cycles));
    EXPECT_GT(j["counts"]["proven_infeasible"].get<int>(), 0) << "2048-row tiles do not fit a 1024-row accumulator bank";
    ASSERT_FALSE(j["infeasible_reasons"].empty());
    EXPECT_NE(j["infeasible_reasons"][0].get<std::string>().find("accumulator rows"), std::string::npos);
    EXPECT_EQ(j["counts"]["approved_but_refused"].get<int>(), 0);
    EXPECT_EQ(j["counts"]["wrong"].get<int>(), 0);

    const tessera_test::CommandResult run = run_tessera("run " + op + " --target tsp-mini --schedule '" + best + "' --json");
    ASSERT_EQ(run.status, 0) << run.err;
    const nlohmann::json rj = nlohmann::json::parse(run.out);
    EXPECT_TRUE(rj["verified"].get<bool>());
    EXPECT_EQ(rj["cycles"].get<int64_t>(), cycles);
    // The verified winner is the database's record, and `tessera run --db` uses it.
    EXPECT_GT(j["best"]["record"].get<int64_t>(), 0);
    const tessera_test::CommandResult from_db = run_tessera("run " + op + " --target tsp-mini --db '" + db + "' --json");
    ASSERT_EQ(from_db.status, 0) << from_db.err;
    EXPECT_EQ(nlohmann::json::parse(from_db.out)["cycles"].get<int64_t>(), cycles);
    std::filesystem::remove_all(dir);
}
