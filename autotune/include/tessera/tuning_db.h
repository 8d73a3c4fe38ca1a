#pragma once
// The tuning database (DESIGN.md §6): every schedule the autotuner measures, kept in one SQLite
// file so that a later compile reuses the best one for its workload and target.
//
// - One file, WAL journal, a busy timeout: several processes may read and write it at once
//   (each write waits for the others instead of failing), and a reader never blocks a writer.
// - Every record is its own transaction, committed (synchronous=FULL) before add() returns,
//   so a tuner killed at any moment loses nothing it was told had been stored.
// - Records are keyed by workload (workload.h: a hash of the algorithm and shapes, not of its
//   names) and target (its name and a hash of its whole JSON description, so an edited target
//   file is a new target). A query for one target never returns another target's records,
//   nor records of the same name measured with a different description.
// - Schedules are stored in the workload's canonical names (workload.h).
// - The schema carries a version (SQLite's user_version); opening an older file migrates it
//   in place, opening a newer one is refused. See tuning_db_schema.cpp for the versions.
//
// No SQLite header here: users of the database need only this file.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/schedule.h"
#include "tessera/target.h"
#include "tessera/workload.h"

namespace tessera {

/// The version of this build of Tessera, recorded with each measurement ("0.1.0").
const std::string &compiler_version();

/// A target as the database identifies it: its name and its whole description.
struct TargetIdentity {
    std::string name;   ///< "tsp-mini", "npu-edge", the name inside a target file, or "host".
    std::string json;   ///< The whole description, normalised (chipsim's Target::to_json; for
                        ///< the host: CPU, features, vector width, cores). May be empty for
                        ///< records migrated from schema 1, which kept only the hash.
    std::string hash;   ///< fnv1a_hex(json): 16 hex digits.
    bool chip = false;  ///< Chips are measured in cycles, the host in seconds.

    /// The identity of a host or chip Target (a built-in chip name or a JSON path, loaded
    /// through chipsim). Throws tessera::Error for the reference and interpreter targets,
    /// which nothing is tuned for, and for a chip file that does not load.
    static TargetIdentity of(const Target &target);
};

/// What was measured: cycles on a chip (exact, repeatable) or seconds on the host (the median
/// of several repetitions, each kept).
struct Measurement {
    enum class Kind { Cycles, Seconds };
    Kind kind = Kind::Cycles;
    int64_t cycles = 0;          ///< Kind::Cycles
    double seconds = 0.0;        ///< Kind::Seconds: the median of `samples`
    std::vector<double> samples; ///< Kind::Seconds: one per repetition, in the order run
                                 ///< (empty for host records migrated from schema 1)
    int repetitions = 1;         ///< Runs measured: 1 for cycles, the samples for seconds

    /// A chip measurement; throws tessera::Error if cycles <= 0.
    static Measurement chip_cycles(int64_t cycles);
    /// A host measurement from its repetitions; throws tessera::Error if there are none or one
    /// is not a finite positive number.
    static Measurement host_seconds(std::vector<double> samples);

    /// What "best" minimises: cycles, or the median seconds.
    double cost() const { return kind == Kind::Cycles ? double(cycles) : seconds; }
    /// "18342 cycles" or "1.234 ms (median of 5)".
    std::string to_string() const;
};

/// One stored measurement of one schedule: enough to replay it (the schedule, the target's
/// whole description, the compiler version, the seed and the tuner's options).
struct TuningRecord {
    int64_t id = 0;                   ///< Assigned by the database, increasing.
    std::string workload_key;         ///< Workload::key()
    std::string workload_description; ///< Workload::description()
    std::string target_name;          ///< TargetIdentity::name
    std::string target_hash;          ///< TargetIdentity::hash
    Schedule schedule;                ///< In the workload's canonical names.
    Measurement measurement;
    std::string compiler_version;
    uint64_t seed = 0;
    std::string tuner_options = "{}"; ///< A JSON object, as the tuner wrote it.
    std::string created_at;           ///< UTC, ISO 8601, set when stored.
    /// The operator-library words that rebuild the workload ("matmul K=64 M=64 N=64
    /// dtype=int8"); empty when it was built in C++ (replay then needs them some other way).
    std::string op_words;
    /// Chips: FNV-1a (16 hex digits) of the program's binary encoding; empty when unknown.
    std::string program_hash;
    std::string details = "{}";       ///< A JSON object of further figures (see MeasuredSchedule).
};

/// What a tuner hands to the database for one measured candidate.
struct MeasuredSchedule {
    Schedule schedule;                ///< In the pipeline's own names (add() renames it).
    Measurement measurement;
    uint64_t seed = 0;
    std::string tuner_options = "{}"; ///< Must be a JSON object.
    /// The operator-library words that rebuild the workload, when it came from the registry
    /// (ops::OpInstance::description()); kept with the workload for `tessera db replay`.
    std::string op_words;
    /// Chips: chip_program_hash() of the measured program (replay compares it).
    std::string program_hash;
    /// A JSON object of further figures: on chips "macs", "roofline_cycles",
    /// "roofline_limiter", "peak_macs_per_cycle", "bytes" (per memory level), "dram_bytes" and
    /// "dram_bytes_per_cycle" from chipsim's report and target (what plots draw).
    std::string details = "{}";
};

/// Which records a query or an export covers; empty fields match everything.
struct RecordFilter {
    std::string workload_key;
    std::string target_name;
    std::string target_hash;
    int64_t limit = 0;               ///< 0: no limit
};

/// What import_json() did.
struct ImportSummary {
    int64_t added = 0;
    int64_t duplicates = 0; ///< Records already present (same content), skipped.
};

/// How a tuning database is opened.
struct TuningDatabaseOptions {
    bool read_only = false;       ///< Open without write access (no migration, no add).
    int busy_timeout_ms = 30000;  ///< How long a write waits for another writer.
};

/// A tuning database file. Not copyable; one object may be used from one thread at a time
/// (open one per thread or process — SQLite coordinates them).
class TuningDatabase {
public:
    /// The schema this build writes (SQLite user_version).
    static constexpr int kSchemaVersion = 3;

    using Options = TuningDatabaseOptions;

    /// Opens `path`, creating it (and its schema) when absent unless read_only. Migrates an
    /// older schema in place. Throws tessera::Error naming the file when it is not an SQLite
    /// file, is an SQLite file of something else, has a newer schema than this build, needs a
    /// migration but was opened read-only, or cannot be opened.
    explicit TuningDatabase(const std::string &path, const Options &options);
    explicit TuningDatabase(const std::string &path) : TuningDatabase(path, Options()) {}
    ~TuningDatabase();
    TuningDatabase(TuningDatabase &&) noexcept;
    TuningDatabase &operator=(TuningDatabase &&) noexcept;
    TuningDatabase(const TuningDatabase &) = delete;
    TuningDatabase &operator=(const TuningDatabase &) = delete;

    /// The database named by the environment variable TESSERA_TUNING_DB, or nothing when it is
    /// unset or empty.
    static std::optional<TuningDatabase> open_from_environment(const Options &options = {});

    const std::string &path() const;
    /// The schema version the file had when it was opened (before any migration).
    int opened_schema_version() const;

    /// Stores one measurement of `workload` on `target` and commits it; returns its id.
    /// Throws tessera::Error when the measurement kind does not suit the target (cycles for
    /// chips, seconds for the host), the tuner options are not a JSON object, the schedule
    /// names something the workload lacks, the workload's key is already stored for a
    /// different canonical form (a hash collision), or the file cannot be written.
    int64_t add(const Workload &workload, const TargetIdentity &target, const MeasuredSchedule &measured);

    /// The best record (lowest cost, then lowest id) of `workload` on exactly this target.
    std::optional<TuningRecord> best(const Workload &workload, const TargetIdentity &target) const;
    /// The `k` best records of `workload` on exactly this target, best first.
    std::vector<TuningRecord> top_k(const Workload &workload, const TargetIdentity &target, int k) const;
    /// The best record of every (workload, target) pair the filter covers, by workload key then
    /// target name and hash.
    std::vector<TuningRecord> best_per_group(const RecordFilter &filter = {}) const;
    /// Records the filter covers, by id.
    std::vector<TuningRecord> list(const RecordFilter &filter = {}) const;
    /// The record `id`; throws tessera::Error naming the file when there is none.
    TuningRecord get(int64_t id) const;
    /// The record `id`, or nothing.
    std::optional<TuningRecord> find(int64_t id) const;
    /// Number of records.
    int64_t size() const;
    /// The stored description of a target by hash (replay needs it after the file changed);
    /// nothing when unknown or when the record came from schema 1 without one.
    std::optional<TargetIdentity> target(const std::string &hash) const;
    /// The stored canonical form of a workload by key (empty for schema 1 records).
    std::optional<std::string> workload_canonical_form(const std::string &key) const;

    /// Stores the operator-library words that rebuild `workload` ("matmul K=64 M=64 N=64
    /// dtype=int8"), so that its records can be replayed (tessera db replay) — for records a
    /// tuner stored through add() without them, e.g. `tessera tune`. Keeps words already stored.
    void record_op_words(const Workload &workload, const std::string &op_words);

    /// The record stored for a completed sweep point (see sweep.h), 0 when the point completed
    /// without a record of its own, nothing when it is not complete.
    std::optional<int64_t> sweep_point(const std::string &point_key) const;
    /// Stores `measured` and marks the sweep point complete in one transaction, so a process
    /// killed at any moment leaves both or neither. When the point is already complete (another
    /// process finished it first) nothing is stored and its existing record id is returned.
    int64_t add_sweep_point(const std::string &point_key, const std::string &description, const Workload &workload,
                            const TargetIdentity &target, const MeasuredSchedule &measured);
    /// Marks a sweep point complete whose records were stored already (a tuner adds them one
    /// by one), naming its best record (0: none). Does nothing when it is complete.
    void mark_sweep_point(const std::string &point_key, const std::string &description, int64_t record_id);

    /// Keeps the `keep` best records of each (workload, target) and deletes the rest, with the
    /// workloads and targets no record refers to any more; returns how many records went.
    /// Throws tessera::Error if keep < 1.
    int64_t gc(int keep);

    /// The records the filter covers, with their workloads' canonical forms and their targets'
    /// descriptions, as one JSON document that import_json() reads back.
    std::string export_json(const RecordFilter &filter = {}) const;
    /// The records the filter covers as CSV (RFC 4180, a header line, one line per record;
    /// the schedule and options as JSON text in quoted fields).
    std::string export_csv(const RecordFilter &filter = {}) const;
    /// Adds the records of an export_json() document in one transaction (all or nothing),
    /// skipping those already present; ids are assigned anew. Throws tessera::Error naming
    /// the field (e.g. "records[3].schedule") on malformed input, and on a workload key whose
    /// canonical form differs from the one stored here.
    ImportSummary import_json(const std::string &json_text, const std::string &origin = "tuning records import");

    class Impl;

private:
    std::unique_ptr<Impl> impl_;
};

} // namespace tessera
