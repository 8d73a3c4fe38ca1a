// Schema versions of the tuning database, kept in SQLite's user_version.
//
// Schema 1 — the first layout: one flat `records` table that named each record's workload by
//   key and description and its target by name and hash.
// Schema 2 — workloads and targets get tables of their own, and records refer to them:
//   * targets keep their whole JSON description. With only a name and a hash, a record could
//     not be replayed once its target file was edited or deleted — the hash said the target
//     had changed but nothing could rebuild the old one.
//   * workloads keep their canonical form (workload.h), so a 64-bit key collision is detected
//     on insert instead of handing one workload another's schedule.
//   * host records keep every repetition's time (`samples`), not only the median, so that a
//     regression gate can report noise.
//   Migrating 1 -> 2 moves the names, descriptions and hashes into the new tables and leaves
//   what schema 1 never had as NULL: a migrated target has no JSON (replay refuses it and says
//   why), a migrated workload no canonical form (no collision check), a host record no samples.
// Schema 3 — what `tessera db replay` and sweeps need:
//   * workloads.op: the operator-library words that rebuild the workload ("matmul K=64 M=64
//     N=64 dtype=int8"); replay rebuilds the pipeline from them. NULL for workloads built in C++.
//   * records.program_hash: FNV-1a of a chip program's binary encoding, so replay can tell a
//     changed code generator (different bytes) from a changed simulator (same bytes, other
//     cycles). NULL for host records and for chip records stored without one.
//   * records.details: a JSON object of further figures of the measurement (chips: MACs, the
//     roofline bound and peak from chipsim's report, which `tessera plot` draws). NULL: none.
//   * sweep_points: the points of `tessera sweep` that are complete, keyed by a hash of the
//     point (op words, target hash, tuner options), so a rerun skips them. A chip point's
//     record and its completion are one transaction: a killed sweep never leaves a record
//     without its mark (which would be measured again, a duplicate) or a mark without a record.
//   Migrating 2 -> 3 adds the columns as NULL and the empty table.
//
// Foreign keys are not enforced (PRAGMA foreign_keys stays off, SQLite's default): the
// REFERENCES clauses document the layout; add(), import and gc keep it consistent inside their
// transactions.
#include "tuning_db_schema.h"

#include <string>

#include "tessera/error.h"
#include "tessera/tuning_db.h"

namespace tessera::internal {

const char *const kTuningSchemaV1 = R"sql(
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
)sql";

namespace {

/// Schema 2's tables other than records.
const char *const kWorkloadsAndTargetsV2 = R"sql(
CREATE TABLE workloads(
  key TEXT PRIMARY KEY,
  canonical TEXT,
  description TEXT NOT NULL);
CREATE TABLE targets(
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  chip INTEGER NOT NULL,
  json TEXT);
)sql";

/// Schema 2's records table, created under `name`.
std::string records_v2(const std::string &name) {
    return "CREATE TABLE " + name + R"sql((
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
)sql";
}

const char *const kRecordsIndexV2 = "CREATE INDEX records_by_workload_target ON records(workload_key, target_hash);";

/// What schema 3 adds to schema 2.
const char *const kAdditionsV3 = R"sql(
ALTER TABLE workloads ADD COLUMN op TEXT;
ALTER TABLE records ADD COLUMN program_hash TEXT;
ALTER TABLE records ADD COLUMN details TEXT;
CREATE TABLE sweep_points(
  key TEXT PRIMARY KEY,
  description TEXT NOT NULL,
  record_id INTEGER,
  completed_at TEXT NOT NULL);
)sql";

void create_v3(SqliteConnection &db) {
    db.exec(kWorkloadsAndTargetsV2);
    db.exec(records_v2("records"));
    db.exec(kRecordsIndexV2);
    db.exec(kAdditionsV3);
}

void migrate_2_to_3(SqliteConnection &db) { db.exec(kAdditionsV3); }

void migrate_1_to_2(SqliteConnection &db) {
    db.exec(kWorkloadsAndTargetsV2);
    db.exec(R"sql(
INSERT INTO workloads(key, canonical, description)
  SELECT workload_key, NULL, MIN(workload) FROM records GROUP BY workload_key;
INSERT INTO targets(hash, name, chip, json)
  SELECT target_hash, MIN(target_name), MAX(cycles IS NOT NULL), NULL FROM records GROUP BY target_hash;
)sql");
    // SQLite cannot add a foreign key to a table: build the new one and swap (ids kept, so
    // record numbers users wrote down stay valid).
    db.exec(records_v2("records_v2"));
    db.exec(R"sql(
INSERT INTO records_v2(id, workload_key, target_hash, schedule, cycles, seconds, repetitions, samples,
                       compiler_version, seed, tuner_options, created_at)
  SELECT id, workload_key, target_hash, schedule, cycles, seconds, repetitions, NULL,
         compiler_version, seed, tuner_options, created_at FROM records ORDER BY id;
DROP TABLE records;
ALTER TABLE records_v2 RENAME TO records;
)sql");
    db.exec(kRecordsIndexV2);
}

int user_version(SqliteConnection &db) {
    Statement s(db, "PRAGMA user_version");
    s.step();
    return static_cast<int>(s.int64(0));
}

std::vector<std::string> table_names(SqliteConnection &db) {
    Statement s(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name");
    std::vector<std::string> names;
    while (s.step()) names.push_back(s.text(0));
    return names;
}

std::string joined(const std::vector<std::string> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
}

} // namespace

int prepare_tuning_schema(SqliteConnection &db, bool read_only) {
    const std::string &path = db.path();
    const int current = TuningDatabase::kSchemaVersion;
    if (read_only) {
        const int v = user_version(db);
        if (v > current)
            throw Error("tuning database " + path + " has schema " + std::to_string(v) +
                        ", newer than this build of Tessera reads (" + std::to_string(current) +
                        "); use a newer Tessera");
        if (v == 0)
            throw Error("tuning database " + path + " holds no tuning records (no tuning schema); "
                        "open it writable to create one");
        if (v < current)
            throw Error("tuning database " + path + " has the older schema " + std::to_string(v) +
                        "; open it writable once to migrate it to schema " + std::to_string(current));
        return v;
    }
    // WAL: readers and one writer at a time never block each other, and a commit is one append.
    // Setting it needs the file to itself; it persists in the file, so later opens find it set.
    if (const std::string mode = db.journal_mode_wal(); mode != "wal")
        throw Error("tuning database " + path + ": cannot switch it to WAL journaling (SQLite kept '" + mode +
                    "'); the file system may not support shared memory — put the database on a local disk");
    // FULL: a commit reaches the disk before add() returns, so a record survives a power loss
    // too, not only a killed process. Measuring a schedule costs far more than the sync.
    db.exec("PRAGMA synchronous = FULL");

    WriteTransaction tx(db);
    const int v = user_version(db);
    if (v > current)
        throw Error("tuning database " + path + " has schema " + std::to_string(v) +
                    ", newer than this build of Tessera reads (" + std::to_string(current) +
                    "); use a newer Tessera, or another --db file");
    if (v == 0) {
        const std::vector<std::string> tables = table_names(db);
        if (!tables.empty())
            throw Error("tuning database " + path + " is an SQLite database of something else (tables " +
                        joined(tables) + ", no tuning schema); give another --db file");
        create_v3(db);
    } else {
        if (v == 1) migrate_1_to_2(db);
        if (v <= 2) migrate_2_to_3(db);
    }
    if (v != current) db.exec("PRAGMA user_version = " + std::to_string(current));
    tx.commit();
    return v;
}

} // namespace tessera::internal
