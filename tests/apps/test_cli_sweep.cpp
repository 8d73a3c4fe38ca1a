// `tessera sweep` and `tessera db replay` on chip targets: every point recorded once, a rerun
// skips completed points, a sweep killed with SIGKILL resumes to the same database as an
// uninterrupted run, concurrent sweeps on one database lose nothing, the records replay exactly,
// and (when built with MPI) two ranks store what one process stores.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sqlite3.h>
#include <thread>
#include <tuple>

#include "tessera/tuning_db.h"
#include "test_support.h"

using namespace tessera;
using tessera_test::CommandResult;

namespace {

CommandResult tessera_cli(const std::string &args) {
    return tessera_test::run_command("'" + std::string(TESSERA_CLI) + "' " + args);
}

/// What a record says, without what differs between two runs of one sweep (its id and time).
using RecordContent = std::tuple<std::string, std::string, std::string, int64_t, std::string, std::string, std::string,
                                 std::string, uint64_t>;

std::vector<RecordContent> contents(const std::string &path) {
    TuningDatabase db(path, {.read_only = true});
    std::vector<RecordContent> out;
    for (const TuningRecord &r : db.list())
        out.emplace_back(r.workload_key, r.target_hash, r.schedule.to_json(-1), r.measurement.cycles, r.program_hash,
                         r.details, r.op_words, r.tuner_options, r.seed);
    std::sort(out.begin(), out.end());
    return out;
}

/// `count` distinct chip points (matmuls of several shapes on both chips), big enough that a
/// sweep of them takes a while.
std::string write_spec(const std::filesystem::path &dir, const std::string &name, const std::vector<int> &ms) {
    nlohmann::json m = nlohmann::json::array();
    for (int v : ms) m.push_back(v);
    const nlohmann::json spec = {
        {"name", name},
        {"ops", {{{"op", "matmul"}, {"grid", {{"M", m}, {"N", {256, 512, 1024}}, {"K", {256, 512}}}}, {"dtypes", {"int8"}}}}},
        {"targets", {"tsp-mini", "npu-edge"}}};
    const std::string path = (dir / (name + ".json")).string();
    std::ofstream(path) << spec.dump(2);
    return path;
}

class CliSweep : public testing::Test {
protected:
    void SetUp() override { dir_ = tessera_test::unique_temp_dir(); }
    std::string db(const std::string &name) const { return (dir_ / name).string(); }
    std::filesystem::path dir_;
};

} // namespace

TEST_F(CliSweep, RecordsEveryPointOnceAndARerunSkipsThem) {
    const std::string spec = write_spec(dir_, "small", {64, 128});
    const CommandResult first = tessera_cli("sweep '" + spec + "' --db '" + db("a.db") + "' --json --quiet");
    ASSERT_EQ(first.status, 0) << first.err;
    const auto j = nlohmann::json::parse(first.out);
    EXPECT_EQ(j["total"], 2 * 3 * 2 * 2);
    EXPECT_EQ(j["measured"], 24);
    EXPECT_EQ(j["failed"], 0);
    const auto records = contents(db("a.db"));
    ASSERT_EQ(records.size(), 24u);

    // A chip point's cycles are those `tessera run` reports for the same op and chip.
    const CommandResult run = tessera_cli("run matmul M=128 N=512 K=256 dtype=int8 --target npu-edge --verify none --json");
    ASSERT_EQ(run.status, 0) << run.err;
    bool found = false;
    TuningDatabase d(db("a.db"), {.read_only = true});
    for (const TuningRecord &r : d.list())
        if (r.target_name == "npu-edge" && r.op_words.find("M=128 N=512") != std::string::npos &&
            r.op_words.find("K=256") != std::string::npos) {
            EXPECT_EQ(r.measurement.cycles, nlohmann::json::parse(run.out)["cycles"].get<int64_t>());
            found = true;
        }
    EXPECT_TRUE(found);

    const CommandResult again = tessera_cli("sweep '" + spec + "' --db '" + db("a.db") + "' --json --quiet");
    ASSERT_EQ(again.status, 0) << again.err;
    const auto k = nlohmann::json::parse(again.out);
    EXPECT_EQ(k["measured"], 0);
    EXPECT_EQ(k["done_before"], 24);
    EXPECT_EQ(contents(db("a.db")), records);
}

TEST_F(CliSweep, ChipRecordsReplayExactly) {
    const std::string spec = write_spec(dir_, "replay", {64});
    ASSERT_EQ(tessera_cli("sweep '" + spec + "' --db '" + db("r.db") + "' --quiet").status, 0);
    TuningDatabase d(db("r.db"), {.read_only = true});
    ASSERT_EQ(d.size(), 12);
    for (const TuningRecord &r : d.list()) {
        EXPECT_EQ(r.program_hash.size(), 16u);
        const CommandResult replay = tessera_cli("db replay " + std::to_string(r.id) + " --db '" + db("r.db") + "' --json");
        ASSERT_EQ(replay.status, 0) << replay.out << replay.err;
        const auto j = nlohmann::json::parse(replay.out);
        EXPECT_EQ(j["reproduced"], true);
        EXPECT_EQ(j["replayed"]["cycles"], r.measurement.cycles);
        EXPECT_EQ(j["replayed"]["program_hash"], r.program_hash);
    }
}

TEST_F(CliSweep, ATamperedRecordIsNotReproducedAndSaysWhy) {
    const std::string spec = write_spec(dir_, "tamper", {64});
    ASSERT_EQ(tessera_cli("sweep '" + spec + "' --db '" + db("t.db") + "' --quiet").status, 0);
    // As if the simulator had changed since: the stored cycles and program no longer match.
    {
        sqlite3 *raw = nullptr;
        ASSERT_EQ(sqlite3_open(db("t.db").c_str(), &raw), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(raw, "UPDATE records SET cycles = cycles + 1, program_hash = '0000000000000000' WHERE id = 1",
                               nullptr, nullptr, nullptr),
                  SQLITE_OK);
        sqlite3_close(raw);
    }
    const CommandResult replay = tessera_cli("db replay 1 --db '" + db("t.db") + "'");
    EXPECT_EQ(replay.status, 1);
    EXPECT_NE(replay.out.find("NOT reproduced"), std::string::npos) << replay.out;
    EXPECT_NE(replay.out.find("the program differs"), std::string::npos) << replay.out;
    EXPECT_NE(replay.out.find("cycles differ"), std::string::npos) << replay.out;
    EXPECT_NE(replay.err.find("tessera: error: record #1 was not reproduced"), std::string::npos) << replay.err;
}

TEST_F(CliSweep, AKilledSweepResumesToTheSameDatabaseAsAnUninterruptedOne) {
    const std::string spec = write_spec(dir_, "kill", {256, 512, 768, 1024});
    ASSERT_EQ(tessera_cli("sweep '" + spec + "' --db '" + db("whole.db") + "' --quiet").status, 0);
    const auto whole = contents(db("whole.db"));
    ASSERT_EQ(whole.size(), 48u);

    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const std::string out = (dir_ / "killed.out").string();
        freopen(out.c_str(), "w", stdout);
        freopen(out.c_str(), "a", stderr);
        execl(TESSERA_CLI, TESSERA_CLI, "sweep", spec.c_str(), "--db", db("killed.db").c_str(), "--quiet", (char *)nullptr);
        _exit(127);
    }
    // Kill it as soon as a few points are committed: mid-sweep, at whatever it was doing.
    int64_t stored = 0;
    for (int i = 0; i < 20000 && stored < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        try {
            stored = TuningDatabase(db("killed.db"), {.read_only = true}).size();
        } catch (const Error &) {
            // not created yet
        }
    }
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it was killed";
    const auto partial = contents(db("killed.db"));
    EXPECT_GE(partial.size(), 3u);
    EXPECT_LT(partial.size(), 48u);

    const CommandResult resumed = tessera_cli("sweep '" + spec + "' --db '" + db("killed.db") + "' --json --quiet");
    ASSERT_EQ(resumed.status, 0) << resumed.err;
    const auto j = nlohmann::json::parse(resumed.out);
    EXPECT_EQ(j["done_before"].get<size_t>() + j["measured"].get<size_t>(), 48u);
    EXPECT_EQ(j["done_before"].get<size_t>(), partial.size());
    const auto final_records = contents(db("killed.db"));
    EXPECT_EQ(final_records, whole); // the same records, none twice
    EXPECT_EQ(std::set<RecordContent>(final_records.begin(), final_records.end()).size(), final_records.size());
}

TEST_F(CliSweep, ConcurrentSweepsOnOneDatabaseLoseNothing) {
    const std::string a = write_spec(dir_, "a", {64, 128, 192});
    const std::string b = write_spec(dir_, "b", {256, 320});
    ASSERT_EQ(tessera_cli("sweep '" + a + "' --db '" + db("ref_a.db") + "' --quiet").status, 0);
    ASSERT_EQ(tessera_cli("sweep '" + b + "' --db '" + db("ref_b.db") + "' --quiet").status, 0);
    // Three processes at once: two of them run the same spec (each point must still be stored
    // once), the third another spec, with two threads each.
    const std::string cli = "'" + std::string(TESSERA_CLI) + "'";
    const std::string shared = " --db '" + db("shared.db") + "' --quiet --jobs 2 >/dev/null";
    const CommandResult all = tessera_test::run_command("(" + cli + " sweep '" + a + "'" + shared + " & " + cli + " sweep '" + a +
                                                        "'" + shared + " & " + cli + " sweep '" + b + "'" + shared +
                                                        " & wait %1 && wait %2 && wait %3) && echo ok");
    ASSERT_NE(all.out.find("ok"), std::string::npos) << all.err;
    auto expected = contents(db("ref_a.db"));
    const auto rb = contents(db("ref_b.db"));
    expected.insert(expected.end(), rb.begin(), rb.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(contents(db("shared.db")), expected);
}

#ifdef TESSERA_HAVE_MPI
TEST_F(CliSweep, TwoMpiRanksStoreWhatOneProcessStores) {
    const std::string spec = write_spec(dir_, "mpi", {64, 128});
    ASSERT_EQ(tessera_cli("sweep '" + spec + "' --db '" + db("one.db") + "' --quiet").status, 0);
    const CommandResult mpi = tessera_test::run_command(std::string(TESSERA_MPIEXEC) +
                                                        " -n 2 --oversubscribe --allow-run-as-root '" + TESSERA_CLI +
                                                        "' sweep '" + spec + "' --db '" + db("two.db") + "' --json --quiet");
    ASSERT_EQ(mpi.status, 0) << mpi.out << mpi.err;
    const auto j = nlohmann::json::parse(mpi.out);
    EXPECT_EQ(j["ranks"], 2);
    EXPECT_EQ(j["measured"], 24);
    EXPECT_EQ(contents(db("two.db")), contents(db("one.db")));
}
#endif

TEST_F(CliSweep, HostRecordsReplayAsARatioOfTimes) {
    const nlohmann::json spec = {{"ops", {{{"op", "matmul"}, {"grid", {{"M", {16}}, {"N", {16}}, {"K", {16}}}}}}},
                                 {"targets", {"host"}},
                                 {"tuner", {{"repetitions", 3}}}};
    std::ofstream(dir_ / "host.json") << spec.dump();
    const CommandResult sweep = tessera_cli("sweep '" + (dir_ / "host.json").string() + "' --db '" + db("h.db") + "' --no-tune --json --quiet");
    ASSERT_EQ(sweep.status, 0) << sweep.err;
    const int64_t id = nlohmann::json::parse(sweep.out)["points"][0]["record"];
    const CommandResult replay = tessera_cli("db replay " + std::to_string(id) + " --db '" + db("h.db") + "' --json");
    ASSERT_EQ(replay.status, 0) << replay.err;
    const auto j = nlohmann::json::parse(replay.out);
    EXPECT_EQ(j["reproduced"], true);
    EXPECT_EQ(j["same_machine"], true);
    EXPECT_EQ(j["replayed"]["samples"].size(), 3u); // as many repetitions as the record
    EXPECT_GT(j["ratio"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), j["replayed"]["seconds"].get<double>() / j["stored"]["seconds"].get<double>());
}

TEST_F(CliSweep, AFailingSweepLosesNothingStored) {
    const std::string spec = write_spec(dir_, "keep", {64});
    ASSERT_EQ(tessera_cli("sweep '" + spec + "' --db '" + db("k.db") + "' --quiet").status, 0);
    const auto before = contents(db("k.db"));
    // A spec naming an unknown target is refused before anything runs...
    std::ofstream(dir_ / "bad.json") << R"({"ops": [{"op": "matmul"}], "targets": ["tsp-mini", "nowhere"]})";
    const CommandResult bad = tessera_cli("sweep '" + (dir_ / "bad.json").string() + "' --db '" + db("k.db") + "'");
    EXPECT_EQ(bad.status, 1);
    EXPECT_EQ(bad.err.rfind("tessera: error: ", 0), 0u) << bad.err;
    EXPECT_NE(bad.err.find("nowhere"), std::string::npos) << bad.err;
    // ...and a point that cannot run on its chip (an int32 matmul: the MXM takes no int32) fails
    // alone: the others are stored.
    std::ofstream(dir_ / "mixed.json")
        << R"({"ops": [{"op": "matmul", "grid": {"M": [96], "N": [64], "K": [64]}, "dtypes": ["int8"]}, {"op": "matmul", "grid": {"M": [96], "N": [64], "K": [64]}, "dtypes": ["int32"]}], "targets": ["tsp-mini"]})";
    const CommandResult mixed = tessera_cli("sweep '" + (dir_ / "mixed.json").string() + "' --db '" + db("k.db") + "' --json --quiet");
    EXPECT_EQ(mixed.status, 1);
    EXPECT_NE(mixed.err.find("tessera: error: 1 of 2 sweep points failed"), std::string::npos) << mixed.err;
    const auto after = contents(db("k.db"));
    EXPECT_EQ(after.size(), before.size() + 1);
    for (const RecordContent &r : before) EXPECT_NE(std::find(after.begin(), after.end(), r), after.end());
}
