// Schema versions: a database written with the previous schema opens and migrates, a newer one
// and files that are not tuning databases are refused with a clear error and left untouched.
#include <gmock/gmock.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/error.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;
using testing::HasSubstr;

namespace {

/// A database as schema 1 wrote it (the flat layout: one records table naming workload and
/// target by key and hash), with one chip and one host record. Written here, not taken from the
/// library, so a change to the library's idea of schema 1 cannot pass unnoticed.
void write_schema_v1(const std::string &path, const Workload &w, const std::string &schedule_json) {
    raw_sql(path, R"sql(
CREATE TABLE records(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workload_key TEXT NOT NULL,
  workload TEXT NOT NULL,
  target_name TEXT NOT NULL,
  target_hash TEXT NOT NULL,
  schedule TEXT NOT NULL,
  cycles INTEGER,
  seconds REAL,
  repetitions INTEGER NOT NULL,
  compiler_version TEXT NOT NULL,
  seed INTEGER NOT NULL,
  tuner_options TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE INDEX records_by_key ON records(workload_key, target_hash);
PRAGMA user_version = 1;
)sql");
    const std::string key = w.key();
    raw_sql(path, "INSERT INTO records VALUES (5, '" + key + "', 'matmul 64x48x32', 'tsp-mini', '" +
                      TargetIdentity::of(Target::named("tsp-mini")).hash + "', '" + schedule_json +
                      "', 1234, NULL, 1, '0.0.9', 42, '{}', '2024-01-02T03:04:05.000Z');"
                      "INSERT INTO records VALUES (9, '" + key + "', 'matmul 64x48x32', 'host', 'feedfacefeedface', '" +
                      schedule_json + "', NULL, 0.002, 5, '0.0.9', 43, '{\"budget\":8}', '2024-01-02T03:04:06.000Z');");
}

/// A database as schema 2 wrote it (workloads and targets in tables of their own, no op words,
/// program hashes or sweep points), with one chip record. Written here for the same reason.
void write_schema_v2(const std::string &path, const Workload &w, const TargetIdentity &t, const std::string &schedule_json) {
    raw_sql(path, R"sql(
CREATE TABLE workloads(key TEXT PRIMARY KEY, canonical TEXT, description TEXT NOT NULL);
CREATE TABLE targets(hash TEXT PRIMARY KEY, name TEXT NOT NULL, chip INTEGER NOT NULL, json TEXT);
CREATE TABLE records(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  workload_key TEXT NOT NULL REFERENCES workloads(key),
  target_hash TEXT NOT NULL REFERENCES targets(hash),
  schedule TEXT NOT NULL,
  cycles INTEGER,
  seconds REAL,
  repetitions INTEGER NOT NULL,
  samples TEXT,
  compiler_version TEXT NOT NULL,
  seed INTEGER NOT NULL,
  tuner_options TEXT NOT NULL,
  created_at TEXT NOT NULL,
  CHECK ((cycles IS NULL) <> (seconds IS NULL)));
CREATE INDEX records_by_workload_target ON records(workload_key, target_hash);
PRAGMA user_version = 2;
)sql");
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt *s = nullptr;
    auto run = [&](const char *sql, std::vector<std::string> values) {
        ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK);
        for (size_t i = 0; i < values.size(); ++i)
            sqlite3_bind_text(s, int(i + 1), values[i].c_str(), -1, SQLITE_TRANSIENT);
        ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
        sqlite3_finalize(s);
    };
    run("INSERT INTO workloads VALUES (?, ?, ?)", {w.key(), w.canonical_form(), w.description()});
    run("INSERT INTO targets VALUES (?, ?, 1, ?)", {t.hash, t.name, t.json});
    run("INSERT INTO records VALUES (4, ?, ?, ?, 777, NULL, 1, NULL, '0.0.9', 3, '{}', '2025-01-02T03:04:05.000Z')",
        {w.key(), t.hash, schedule_json});
    sqlite3_close(db);
}

class TuningDbSchema : public TuningDbTest {
};

} // namespace

TEST_F(TuningDbSchema, ASchemaOneDatabaseIsMigratedAndKeepsItsRecords) {
    const Schedule canonical = w_.to_canonical(tiled(c_, 8));
    write_schema_v1(path_, w_, canonical.to_json(-1));
    // Read-only cannot migrate: it says so and changes nothing.
    EXPECT_THAT(error_of([&] { TuningDatabase(path_, {.read_only = true}); }),
                HasSubstr("older schema 1; open it writable once"));
    {
        TuningDatabase db(path_);
        EXPECT_EQ(db.opened_schema_version(), 1);
        ASSERT_EQ(db.size(), 2);
        const TuningRecord chip = db.get(5); // ids survive the migration
        EXPECT_EQ(chip.measurement.cycles, 1234);
        EXPECT_EQ(chip.compiler_version, "0.0.9");
        EXPECT_EQ(chip.seed, 42u);
        EXPECT_EQ(chip.schedule, canonical);
        EXPECT_EQ(chip.workload_description, "matmul 64x48x32");
        const TuningRecord host = db.get(9);
        EXPECT_EQ(host.measurement.kind, Measurement::Kind::Seconds);
        EXPECT_EQ(host.measurement.repetitions, 5);
        EXPECT_TRUE(host.measurement.samples.empty()); // schema 1 kept the median only
        // The migrated record still answers queries for its workload and target...
        const auto best = db.best(w_, tsp_);
        ASSERT_TRUE(best);
        EXPECT_EQ(best->id, 5);
        // ...though schema 1 never stored the target's description or the canonical form.
        EXPECT_FALSE(db.target(tsp_.hash));
        EXPECT_EQ(db.workload_canonical_form(w_.key()), std::nullopt);
        // New records continue the numbering and fill in what the migration lacked.
        const int64_t id = db.add(w_, tsp_, measured(tiled(c_, 4), 1000));
        EXPECT_GT(id, 9);
        EXPECT_EQ(db.best(w_, tsp_)->id, id);
        EXPECT_EQ(db.target(tsp_.hash)->json, tsp_.json);
        EXPECT_EQ(db.workload_canonical_form(w_.key()), w_.canonical_form());
    }
    TuningDatabase again(path_, {.read_only = true});
    EXPECT_EQ(again.opened_schema_version(), TuningDatabase::kSchemaVersion);
    EXPECT_EQ(again.size(), 3);
}

TEST_F(TuningDbSchema, ASchemaTwoDatabaseIsMigratedToThreeAndKeepsItsRecords) {
    const Schedule canonical = w_.to_canonical(tiled(c_, 8));
    write_schema_v2(path_, w_, tsp_, canonical.to_json(-1));
    EXPECT_THAT(error_of([&] { TuningDatabase(path_, {.read_only = true}); }),
                HasSubstr("older schema 2; open it writable once"));
    {
        TuningDatabase db(path_);
        EXPECT_EQ(db.opened_schema_version(), 2);
        const TuningRecord r = db.get(4);
        EXPECT_EQ(r.measurement.cycles, 777);
        EXPECT_EQ(r.schedule, canonical);
        EXPECT_EQ(r.compiler_version, "0.0.9");
        // Schema 2 knew no op words, program hash or details.
        EXPECT_EQ(r.op_words, "");
        EXPECT_EQ(r.program_hash, "");
        EXPECT_EQ(r.details, "{}");
        EXPECT_EQ(db.sweep_point("any"), std::nullopt);
        // What schema 3 adds is stored from now on, and a workload learns its op words.
        MeasuredSchedule m = measured(tiled(c_, 4), 700);
        m.op_words = "matmul K=32 M=64 N=48 dtype=fp32";
        m.program_hash = "0123456789abcdef";
        m.details = R"({"macs": 98304})";
        const int64_t id = db.add_sweep_point("point-1", "a point", w_, tsp_, m);
        EXPECT_GT(id, 4);
        const TuningRecord added = db.get(id);
        EXPECT_EQ(added.program_hash, "0123456789abcdef");
        EXPECT_EQ(nlohmann::json::parse(added.details)["macs"], 98304);
        EXPECT_EQ(db.get(4).op_words, "matmul K=32 M=64 N=48 dtype=fp32");
        EXPECT_EQ(db.sweep_point("point-1"), id);
        // Completing it again stores nothing.
        EXPECT_EQ(db.add_sweep_point("point-1", "a point", w_, tsp_, measured(tiled(c_, 2), 10)), id);
        EXPECT_EQ(db.size(), 2);
    }
    TuningDatabase again(path_, {.read_only = true});
    EXPECT_EQ(again.opened_schema_version(), 3);
    EXPECT_EQ(again.best(w_, tsp_)->measurement.cycles, 700);
}

TEST_F(TuningDbSchema, ANewerSchemaIsRefusedUntouched) {
    raw_sql(path_, "CREATE TABLE records(x); PRAGMA user_version = 7;");
    EXPECT_THAT(error_of([&] { TuningDatabase db(path_); }), HasSubstr("schema 7, newer than this build"));
    EXPECT_THAT(error_of([&] { TuningDatabase(path_, {.read_only = true}); }), HasSubstr("schema 7"));
}

TEST_F(TuningDbSchema, FilesThatAreNotTuningDatabasesAreRefused) {
    {
        std::ofstream f(path_);
        f << "this is a plain text file, not SQLite, and long enough to have a header of a hundred bytes or so;"
             " SQLite reads the first hundred bytes to decide\n";
    }
    const std::string not_sqlite = error_of([&] { TuningDatabase db(path_); });
    EXPECT_THAT(not_sqlite, HasSubstr(path_));
    EXPECT_THAT(not_sqlite, HasSubstr("not an SQLite file"));
    std::ifstream still(path_);
    std::string first;
    std::getline(still, first);
    EXPECT_THAT(first, testing::StartsWith("this is a plain text file")); // left as it was

    const std::string other = path_ + ".other";
    raw_sql(other, "CREATE TABLE users(name TEXT); INSERT INTO users VALUES ('ada');");
    EXPECT_THAT(error_of([&] { TuningDatabase db(other); }), HasSubstr("SQLite database of something else (tables users"));

    const std::string missing = path_ + ".missing";
    EXPECT_THAT(error_of([&] { TuningDatabase(missing, {.read_only = true}); }), HasSubstr("does not exist"));
    EXPECT_FALSE(std::filesystem::exists(missing));
    EXPECT_THAT(error_of([&] { TuningDatabase db("/nonexistent-dir/x/tuning.db"); }), HasSubstr("cannot open"));
}

TEST_F(TuningDbSchema, ReadOnlyDatabasesAnswerQueriesButTakeNoWrites) {
    {
        TuningDatabase db(path_);
        db.add(w_, tsp_, measured(tiled(c_, 8), 100));
    }
    TuningDatabase db(path_, {.read_only = true});
    EXPECT_TRUE(db.best(w_, tsp_));
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, measured(tiled(c_, 8), 50)); }), HasSubstr("opened read-only"));
    EXPECT_THAT(error_of([&] { db.gc(1); }), HasSubstr("opened read-only"));
    EXPECT_THAT(error_of([&] { db.import_json("{}"); }), HasSubstr("opened read-only"));
    EXPECT_EQ(db.size(), 1);
}
