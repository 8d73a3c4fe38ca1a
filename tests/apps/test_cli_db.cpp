// `tessera db`: the tuning database from the command line, on records a tuner stored through the
// library — listing, the best per workload and target, one record in full, export and import,
// gc, the database from --db or TESSERA_TUNING_DB, and clear errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessera/ir_operator.h"
#include "tessera/tuning_db.h"
#include "test_support.h"

using namespace tessera;
using tessera_test::CommandResult;

namespace {

CommandResult tessera_cli(const std::string &args, const std::string &env = "") {
    return tessera_test::run_command(env + " '" + std::string(TESSERA_CLI) + "' " + args);
}

class CliDb : public testing::Test {
protected:
    void SetUp() override {
        dir_ = tessera_test::unique_temp_dir();
        path_ = (dir_ / "tuning.db").string();
        Input A(Float(32), {16, 8}, "A"), B(Float(32), {8, 16}, "B");
        Var i("i"), j("j");
        RDom k(0, 8, "k");
        Func C("C");
        C(i, j) = 0.0f;
        C(i, j) += A(i, k) * B(k, j);
        const Workload w = Workload::of(Pipeline(C), {{16, 16}}, "matmul M=16 N=16 K=8 dtype=fp32");
        TuningDatabase db(path_);
        const TargetIdentity tsp = TargetIdentity::of(Target::named("tsp-mini"));
        const TargetIdentity npu = TargetIdentity::of(Target::named("npu-edge"));
        for (int64_t cycles : {300, 100, 200}) {
            MeasuredSchedule m;
            m.schedule = Pipeline(C).schedule(); // the default schedule: the seed tells them apart
            m.measurement = Measurement::chip_cycles(cycles);
            m.seed = uint64_t(cycles);
            ids_.push_back(db.add(w, tsp, m));
        }
        MeasuredSchedule m;
        m.measurement = Measurement::chip_cycles(70);
        ids_.push_back(db.add(w, npu, m));
        key_ = w.key();
    }
    std::filesystem::path dir_;
    std::string path_, key_;
    std::vector<int64_t> ids_;
};

} // namespace

TEST_F(CliDb, ListsShowsAndFindsTheBest) {
    const CommandResult list = tessera_cli("db list --db '" + path_ + "' --json");
    ASSERT_EQ(list.status, 0) << list.err;
    const auto all = nlohmann::json::parse(list.out);
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0]["workload"]["key"], key_);
    EXPECT_EQ(all[0]["measurement"]["cycles"], 300);

    // The database from the environment; the best of each (workload, target).
    const CommandResult best = tessera_cli("db best --json", "TESSERA_TUNING_DB='" + path_ + "'");
    ASSERT_EQ(best.status, 0) << best.err;
    const auto b = nlohmann::json::parse(best.out);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(b[0]["target"]["name"], "npu-edge");
    EXPECT_EQ(b[0]["measurement"]["cycles"], 70);
    EXPECT_EQ(b[1]["target"]["name"], "tsp-mini");
    EXPECT_EQ(b[1]["id"], ids_[1]);
    const CommandResult only = tessera_cli("db best --target tsp-mini --db '" + path_ + "'");
    ASSERT_EQ(only.status, 0) << only.err;
    EXPECT_NE(only.out.find("100 cycles"), std::string::npos) << only.out;
    EXPECT_EQ(only.out.find("npu-edge"), std::string::npos) << only.out;

    const CommandResult show = tessera_cli("db show " + std::to_string(ids_[2]) + " --db '" + path_ + "'");
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("record #" + std::to_string(ids_[2])), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("200 cycles"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("matmul M=16 N=16 K=8 dtype=fp32"), std::string::npos) << show.out;
    const CommandResult shown = tessera_cli("db show " + std::to_string(ids_[2]) + " --json --db '" + path_ + "'");
    ASSERT_EQ(shown.status, 0) << shown.err;
    const auto s = nlohmann::json::parse(shown.out);
    EXPECT_EQ(s["seed"], 200);
    EXPECT_EQ(s["compiler_version"], compiler_version());
}

TEST_F(CliDb, ExportImportAndGc) {
    const std::string json_file = (dir_ / "records.json").string();
    const CommandResult ex = tessera_cli("db export --json -o '" + json_file + "' --db '" + path_ + "'");
    ASSERT_EQ(ex.status, 0) << ex.err;
    const CommandResult csv = tessera_cli("db export --csv --db '" + path_ + "'");
    ASSERT_EQ(csv.status, 0) << csv.err;
    EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5);

    const std::string copy = (dir_ / "copy.db").string();
    const CommandResult im = tessera_cli("db import '" + json_file + "' --json --db '" + copy + "'");
    ASSERT_EQ(im.status, 0) << im.err;
    EXPECT_EQ(nlohmann::json::parse(im.out), (nlohmann::json{{"added", 4}, {"duplicates", 0}}));
    const CommandResult again = tessera_cli("db import '" + json_file + "' --db '" + copy + "'");
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("imported 0 records (4 already present)"), std::string::npos) << again.out;

    const CommandResult gc = tessera_cli("db gc --keep 1 --json --db '" + copy + "'");
    ASSERT_EQ(gc.status, 0) << gc.err;
    EXPECT_EQ(nlohmann::json::parse(gc.out), (nlohmann::json{{"removed", 2}, {"kept", 2}}));
}

TEST_F(CliDb, MistakesAreClearErrors) {
    struct Case {
        std::string args, env, message;
        int status;
    };
    const std::string db = " --db '" + path_ + "'";
    const std::string text_file = (dir_ / "notes.txt").string();
    tessera_test::run_command("echo 'not a database, just some notes that are long enough for sqlite to look at' > '" +
                              text_file + "'");
    for (const Case &c : std::vector<Case>{
             {"db list", "TESSERA_TUNING_DB=", "no tuning database: give --db FILE or set TESSERA_TUNING_DB", 2},
             {"db", "", "A subcommand is required", 2},
             {"db show 999" + db, "", "has no record #999", 1},
             {"db show" + db, "", "id is required", 2},
             {"db list --db '" + (dir_ / "missing.db").string() + "'", "", "does not exist", 1},
             {"db list --db '" + text_file + "'", "", "not an SQLite file", 1},
             {"db export --json --csv" + db, "", "give one of --json and --csv", 2},
             {"db gc --keep 0" + db, "", "--keep", 2},
             {"db import '" + text_file + "'" + db, "", "notes.txt:1:2: not valid JSON", 1},
         }) {
        const CommandResult r = tessera_cli(c.args, c.env);
        EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find("tessera: error: "), std::string::npos) << c.args << "\n" << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    }
    // Nothing stored was lost.
    EXPECT_EQ(TuningDatabase(path_).size(), 4);
}
