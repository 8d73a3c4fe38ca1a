// The `tessera` binary: `targets` and `sim`, their --help and --json, and the error contract
// (`tessera: error: ...` on stderr, non-zero exit).
#include <tessera/npy.h>

#include <gtest/gtest.h>

#include "test_support.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace {

using CliRun = tessera_test::CommandResult;

CliRun run_tessera(const std::string &args) { return tessera_test::run_command(std::string("'") + TESSERA_CLI + "' " + args); }

const std::string kPrograms = std::string(TESSERA_SOURCE_DIR) + "/apps/chip_programs/";

} // namespace

TEST(Cli, TargetsListsBuiltinsWithPeaks) {
    CliRun r = run_tessera("targets --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 2u);
    EXPECT_EQ(j[1]["name"], "tsp-mini");
    EXPECT_EQ(j[1]["peak_macs_per_cycle"]["int8"], 16384.0);
    EXPECT_EQ(j[0]["peak_macs_per_cycle"]["bf16"], 512.0);
    CliRun text = run_tessera("targets");
    EXPECT_NE(text.out.find("tsp-mini"), std::string::npos);
    CliRun one = run_tessera("targets npu-edge --json");
    EXPECT_EQ(nlohmann::json::parse(one.out)["semaphores"], 16);
}

TEST(Cli, SimReportsJsonAndWritesOutputs) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string out = (dir / "out").string(), trace = (dir / "trace.json").string();
    CliRun r = run_tessera("sim '" + kPrograms + "npu_bank_spread.tasm' --target npu-edge --json --check --output-dir '" + out +
                    "' --trace '" + trace + "'");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    for (const char *key : {"target", "cycles", "macs", "mxm_utilization", "stall_cycles", "bank_conflicts", "units"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["target"], "npu-edge");
    EXPECT_EQ(j["check"], "pass");
    EXPECT_TRUE(j["units"].contains("MXM0"));
    tessera::NpyArray z = tessera::read_npy(out + "/Z.npy");
    EXPECT_EQ(z.descr, "<u2");
    EXPECT_EQ(z.data, tessera::read_npy(kPrograms + "npu_bank_Z_expected.npy").data);
    std::ifstream t(trace);
    auto tj = nlohmann::json::parse(t);
    EXPECT_GT(tj["traceEvents"].size(), 10u);
}

TEST(Cli, InputsCanBeOverridden) {
    // Feeding Y as X changes the result, so --check fails with exit status 1.
    CliRun r = run_tessera("sim '" + kPrograms + "npu_bank_spread.tasm' --check --input X='" + kPrograms + "npu_bank_Y.npy'");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("tessera: error: output Z"), std::string::npos) << r.err;
}

TEST(Cli, BinaryProgramsRunToo) {
    const std::string bin = (tessera_test::unique_temp_dir() / "program.tbin").string();
    CliRun save = run_tessera("sim '" + kPrograms + "npu_bank_spread.tasm' --timing-only --json --save-binary '" + bin + "'");
    ASSERT_EQ(save.status, 0) << save.err;
    // The binary lives elsewhere, so file= paths do not resolve: run timing only.
    CliRun r = run_tessera("sim '" + bin + "' --timing-only --json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["cycles"], nlohmann::json::parse(save.out)["cycles"]);
}

TEST(Cli, EveryCommandHasHelp) {
    for (const std::string cmd : {"targets", "sim", "run", "lower"}) {
        CliRun r = run_tessera(cmd + " --help");
        EXPECT_EQ(r.status, 0) << cmd;
        EXPECT_NE(r.out.find("Usage: tessera " + cmd), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("--json"), std::string::npos) << r.out;
    }
    EXPECT_EQ(run_tessera("--help").status, 0);
}

TEST(Cli, ErrorsGoToStderrWithThePrefix) {
    struct Case {
        std::string args, message;
        int status;
    };
    const Case cases[] = {
        {"frobnicate", "unknown command 'frobnicate'; the commands of 'tessera' are targets, sim, run, lower", 2},
        {"targets --bogus", "argument was not expected: --bogus", 2},
        {"targets no-such-chip", "unknown target 'no-such-chip'", 1},
        {"sim", "program is required", 2},
        {"sim /nonexistent.tasm --target tsp-mini", "cannot open program '/nonexistent.tasm'", 1},
        {"sim '" + kPrograms + "npu_bank_spread.tasm' --target tsp-mini", "is for target 'npu-edge' (.target) but runs on 'tsp-mini'", 1},
        {"sim '" + kPrograms + "npu_bank_spread.tasm' --input X=/nonexistent.npy", "npy file '/nonexistent.npy': cannot open", 1},
    };
    for (const Case &c : cases) {
        CliRun r = run_tessera(c.args);
        EXPECT_EQ(r.status, c.status) << c.args;
        EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << c.args << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << c.args;
    }
}
