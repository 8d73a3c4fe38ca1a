// The `tessera` CLI over the op registry: every op runs by name with its defaults, its --help
// is generated from the registry, `lower` prints loop nests, every report says which check ran,
// and one kernel reports one cycle count in `tessera run`, bench_chip and the demo.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include <nlohmann/json.hpp>
#include <tessera/ops.h>
#include <tessera/ops/registry.h>
#include <tessera/workload.h>

#include <filesystem>

#include "test_support.h"

namespace {

using tessera_test::CommandResult;

CommandResult run_tessera(const std::string &args) { return tessera_test::run_command(std::string("'") + TESSERA_CLI + "' " + args); }

std::vector<std::string> op_names() {
    std::vector<std::string> names;
    for (const tessera::ops::OpSpec &spec : tessera::ops::op_registry()) names.push_back(spec.name);
    return names;
}

class EveryOp : public testing::TestWithParam<std::string> {};

} // namespace

TEST_P(EveryOp, RunsOnTheHostWithItsDefaultsVerifiedInFull) {
    const CommandResult r = run_tessera("run " + GetParam() + " --target host --verify full --repeats 1 --json");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["op"], GetParam());
    EXPECT_EQ(j["verify"]["mode"], "full");
    EXPECT_TRUE(j["verify"]["passed"].get<bool>());
    EXPECT_EQ(j["verify"]["points_checked"], j["verify"]["points_total"]);
    EXPECT_GT(j["verify"]["points_total"].get<int64_t>(), 0);
}

/// Ops that do not run on the chips yet, with why: each must still fail with a clear chip error
/// (so this list shrinks as the chip compiler grows, issue 13).
const std::map<std::string, std::string> &not_on_chips_yet() {
    static const std::map<std::string, std::string> m{}; // none: lstm_cell's two matmuls became matrix stages
    return m;
}

TEST_P(EveryOp, RunsOnBothChipsVerified) {
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        const CommandResult r = run_tessera("run " + GetParam() + " --target " + chip + " --json");
        if (not_on_chips_yet().count(GetParam())) {
            EXPECT_NE(r.status, 0) << GetParam() << " now runs on " << chip << ": take it off not_on_chips_yet()";
            EXPECT_NE(r.err.find("tessera: error: chip backend"), std::string::npos) << r.err;
            continue;
        }
        ASSERT_EQ(r.status, 0) << chip << ": " << r.err << r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out);
        EXPECT_TRUE(j["verify"]["passed"].get<bool>()) << chip << ": " << r.out;
        EXPECT_GT(j["verify"]["points_checked"].get<int64_t>(), 0) << chip;
    }
}

TEST_P(EveryOp, HelpListsEveryParameterWithItsDefault) {
    const CommandResult r = run_tessera("run " + GetParam() + " --help");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const tessera::ops::OpParam &p : tessera::ops::find_op(GetParam()).params)
        EXPECT_NE(r.out.find("  " + p.name + "=" + p.default_value + " "), std::string::npos) << p.name << " missing in\n" << r.out;
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryOp, testing::ValuesIn(op_names()), [](const testing::TestParamInfo<std::string> &i) { return i.param; });

TEST(CliOps, RunListsTheOpsAndRefusesBadWordsAsUsageErrors) {
    const CommandResult help = run_tessera("run --help");
    ASSERT_EQ(help.status, 0);
    for (const std::string &op : op_names()) EXPECT_NE(help.out.find("  " + op + " "), std::string::npos) << op;
    struct Bad {
        std::string args, message;
    };
    for (const Bad &b : std::vector<Bad>{
             {"run", "name the op, e.g. 'tessera run matmul"},
             {"run matmull M=4", "unknown op 'matmull'; the ops are matmul, gemm"},
             {"run matmul M=0 N=0 K=0 --target tsp-mini", "op matmul: parameter M=0 must be at least 1"},
             {"run matmul M=99999999999 N=99999999 K=2 --target tsp-mini", "M=99999999999 is out of range: allowed 1 to 2147483647"},
             {"run matmul P=2", "op matmul has no parameter 'P'"},
             {"run matmul --verify most", "--verify: most not in {full,sample,none}"},
             {"run matmul --repeats 0", "--repeats: Value 0 not in range"},
             {"lower softmax rows=x", "parameter rows=x is not an integer"},
         }) {
        const CommandResult r = run_tessera(b.args);
        EXPECT_EQ(r.status, 2) << b.args << ": " << r.err;
        EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << b.args << ": " << r.err;
        EXPECT_NE(r.err.find(b.message), std::string::npos) << b.args << ": " << r.err;
        EXPECT_NE(r.err.find("--help')"), std::string::npos) << b.args << ": " << r.err;
    }
}

TEST(CliOps, EveryReportSaysWhichCheckRan) {
    // Above the documented work a run samples; --verify chooses; `none` runs chips timing-only.
    const nlohmann::json big = nlohmann::json::parse(run_tessera("run matmul M=512 N=512 K=512 dtype=int8 --target tsp-mini --json").out);
    EXPECT_EQ(big["verify"]["mode"], "sample");
    EXPECT_TRUE(big["verified"].get<bool>());
    EXPECT_LT(big["verify"]["points_checked"].get<int64_t>(), big["verify"]["points_total"].get<int64_t>());
    const nlohmann::json full = nlohmann::json::parse(run_tessera("run matmul M=96 N=64 K=64 --target npu-edge --verify full --json").out);
    EXPECT_EQ(full["verify"]["mode"], "full");
    EXPECT_EQ(full["verify"]["points_checked"], 96 * 64);
    const nlohmann::json none = nlohmann::json::parse(run_tessera("run matmul M=512 N=512 K=512 dtype=int8 --target tsp-mini --verify none --json").out);
    EXPECT_EQ(none["verify"]["mode"], "none");
    EXPECT_EQ(none["cycles"], big["cycles"]);
    const CommandResult text = run_tessera("run softmax rows=8 cols=16");
    EXPECT_NE(text.out.find("verified:      yes, full (128 points)"), std::string::npos) << text.out;
}

TEST(CliOps, LowerPrintsTheLoopNestForTheHostAndTheChips) {
    const CommandResult host = run_tessera("lower matmul M=64 N=64 K=64 --target host");
    ASSERT_EQ(host.status, 0) << host.err;
    EXPECT_NE(host.out.find("// matmul, lowered for host"), std::string::npos) << host.out;
    EXPECT_NE(host.out.find("parallel"), std::string::npos) << "the library schedule's parallel loop:\n" << host.out;
    const CommandResult chip = run_tessera("lower matmul M=64 N=64 K=64 dtype=int8 --target tsp-mini --json");
    ASSERT_EQ(chip.status, 0) << chip.err;
    const nlohmann::json j = nlohmann::json::parse(chip.out);
    EXPECT_EQ(j["target"], "tsp-mini");
    EXPECT_NE(j["loop_nest"].get<std::string>().find("produce matmul"), std::string::npos);
    EXPECT_NE(j["schedule"].dump().find("tensorize"), std::string::npos) << j["schedule"].dump();
    EXPECT_EQ(j["compiled_from"], "library kernel");
    EXPECT_NE(j["program"].get<std::string>().find("mxm.mm.int8"), std::string::npos) << j["program"];
}

TEST(CliOps, LowerOnAChipPrintsTheNestItCompiledAndItsProgramByStage) {
    // rmsnorm reaches npu-edge through the loop-nest compiler: the nest it took has the chip's
    // default vectorized loops, and the program follows, each stage's instructions under it.
    const CommandResult r = run_tessera("lower rmsnorm rows=16 cols=32 --target npu-edge");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("the loop nest the chip compiler took"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(") vectorized {"), std::string::npos) << r.out;
    const size_t reduce = r.out.find("; stage rmsnorm_ms.update(0)"), normalize = r.out.find("; stage rmsnorm\n");
    ASSERT_NE(reduce, std::string::npos) << r.out;
    ASSERT_NE(normalize, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("vxm.reduce.sum.rows.fp32", reduce), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("dma.store", normalize), std::string::npos) << "the normalized rows leave the chip:\n" << r.out;
}

#ifdef TESSERA_BENCH_CHIP
TEST(OneCycleCount, RunBenchChipAndTheDemoReportTheSameCycles) {
    // The demo's first kernel: matmul 512³ int8 on tsp-mini with the library schedule.
    const nlohmann::json run = nlohmann::json::parse(run_tessera("run matmul M=512 N=512 K=512 dtype=int8 --target tsp-mini --json").out);
    const int64_t cycles = run["cycles"].get<int64_t>();
    ASSERT_GT(cycles, 0);

    const CommandResult bench = tessera_test::run_command(std::string("'") + TESSERA_BENCH_CHIP + "' --only 'tsp-mini matmul 512x512x512 int8'");
    ASSERT_EQ(bench.status, 0) << bench.err;
    std::smatch row;
    ASSERT_TRUE(std::regex_search(bench.out, row, std::regex(R"(\| matmul 512x512x512 int8 \| (\d+) \|)"))) << bench.out;
    EXPECT_EQ(std::stoll(row[1]), cycles);

    // The demo writes its trace and program into the working directory: one of this test's own.
    const CommandResult demo = tessera_test::run_command("cd '" + tessera_test::unique_temp_dir().string() + "' && '" + TESSERA_DEMO + "'");
    ASSERT_EQ(demo.status, 0) << demo.err << demo.out;
    std::smatch first;
    ASSERT_TRUE(std::regex_search(demo.out, first, std::regex(R"(matmul 512x512x512 int8 on tsp-mini[^\n]*\n(?:[^\n]*\n)*?\s+(\d+) kernel cycles)")))
        << demo.out;
    EXPECT_EQ(std::stoll(first[1]), cycles);
}
#endif

TEST(CliTune, TunesAnOpWritesTheBestForRunAndRecordsItUnderTheWorkloadOfTheCppOp) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string best = (dir / "best.json").string(), db = (dir / "tuning.db").string();
    const CommandResult tune = run_tessera("tune matmul M=64 N=48 K=80 --budget 6 --repetitions 2 --quiet --json -o '" + best +
                                           "' --db '" + db + "'");
    ASSERT_EQ(tune.status, 0) << tune.err;
    const nlohmann::json j = nlohmann::json::parse(tune.out);
    EXPECT_EQ(j["counts"]["measured"], 6);
    EXPECT_EQ(j["history"].size(), 6u);
    EXPECT_EQ(j["counts"]["wrong"], 0);
    EXPECT_GT(j["best"]["record"].get<int64_t>(), 0);
    // The winner runs, verified in full, from the file.
    const nlohmann::json run = nlohmann::json::parse(run_tessera("run matmul M=64 N=48 K=80 --verify full --json --schedule '" + best + "'").out);
    EXPECT_TRUE(run["verified"].get<bool>());
    EXPECT_EQ(run["schedule"], best);
    // The record's workload is the one ops::matmul gives in C++, whatever the names.
    tessera::Input A(tessera::Float(32), {64, 80}, "lhs"), B(tessera::Float(32), {80, 48}, "rhs");
    tessera::ops::MatmulOptions mo;
    mo.name = "product";
    const std::string key = tessera::Workload::of(tessera::Pipeline(tessera::ops::matmul(A, B, mo).func()), {{64, 48}}).key();
    const nlohmann::json records = nlohmann::json::parse(run_tessera("db list --json --db '" + db + "'").out);
    ASSERT_EQ(records.size(), 6u);
    for (const nlohmann::json &r : records) EXPECT_EQ(r["workload"]["key"], key);
    const nlohmann::json best_record = nlohmann::json::parse(run_tessera("db best --json --db '" + db + "'").out);
    EXPECT_EQ(best_record.dump().find(std::to_string(j["best"]["record"].get<int64_t>())) != std::string::npos, true);
    // A later run of the same workload takes the best record; another shape the library schedule.
    const nlohmann::json reused = nlohmann::json::parse(run_tessera("run matmul M=64 N=48 K=80 --json --db '" + db + "'").out);
    EXPECT_EQ(reused["schedule"].get<std::string>().rfind("tuned record #" + std::to_string(j["best"]["record"].get<int64_t>()) + " ", 0), 0u)
        << reused["schedule"];
    EXPECT_TRUE(reused["verified"].get<bool>());
    const nlohmann::json other = nlohmann::json::parse(run_tessera("run matmul M=64 N=48 K=96 --json --db '" + db + "'").out);
    EXPECT_EQ(other["schedule"], "library");
}

TEST(CliTune, RefusesWhatItCannotTune) {
    const CommandResult reference = run_tessera("tune matmul M=64 --target reference --quiet");
    EXPECT_EQ(reference.status, 1);
    EXPECT_NE(reference.err.find("target 'reference' cannot be tuned; the host and the chips can"), std::string::npos) << reference.err;
    const CommandResult budget = run_tessera("tune matmul --budget 0");
    EXPECT_EQ(budget.status, 2);
    EXPECT_NE(budget.err.find("--budget"), std::string::npos) << budget.err;
}
