// The tuning database: opening, storing and querying records (tuning_db.h).
#include "tessera/tuning_db.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "tessera/error.h"
#include "tessera/internal/json_text.h"
#include "tuning_db_impl.h"
#include "tuning_db_schema.h"

namespace tessera {

using internal::Statement;
using internal::WriteTransaction;

namespace {

/// `path`, after checking that a database opened read-only exists (SQLite's own message for a
/// missing file talks about directories and permissions).
const std::string &existing_if_read_only(const std::string &path, bool read_only) {
    if (read_only && !std::filesystem::exists(path))
        throw Error("tuning database " + path + " does not exist; tune something into it first, or check the path");
    return path;
}

} // namespace

TuningDatabase::Impl::Impl(const std::string &path, const Options &options)
    : db(existing_if_read_only(path, options.read_only), options.read_only, /*create=*/true, options.busy_timeout_ms), read_only(options.read_only),
      opened_version(internal::prepare_tuning_schema(db, options.read_only)) {}

void TuningDatabase::Impl::require_writable(const char *what) const {
    if (read_only)
        throw Error("tuning database " + db.path() + " was opened read-only; cannot " + what);
}

namespace internal {

const char *const kRecordColumns =
    "r.id, r.workload_key, w.description, t.name, r.target_hash, r.schedule, r.cycles, r.seconds, r.repetitions, "
    "r.samples, r.compiler_version, r.seed, r.tuner_options, r.created_at, w.op, r.program_hash, r.details";
const char *const kRecordJoin =
    " FROM records r JOIN workloads w ON w.key = r.workload_key JOIN targets t ON t.hash = r.target_hash";
const char *const kRecordCostOrder = "COALESCE(r.cycles, r.seconds), r.id";

TuningRecord read_record(const Statement &s, const std::string &path) {
    TuningRecord r;
    r.id = s.int64(0);
    r.workload_key = s.text(1);
    r.workload_description = s.text(2);
    r.target_name = s.text(3);
    r.target_hash = s.text(4);
    try {
        r.schedule = Schedule::from_json(s.text(5));
    } catch (const Error &e) {
        throw Error("tuning database " + path + ": record #" + std::to_string(r.id) +
                    " holds a schedule this build cannot read: " + e.what());
    }
    if (!s.is_null(6)) {
        r.measurement.kind = Measurement::Kind::Cycles;
        r.measurement.cycles = s.int64(6);
    } else {
        r.measurement.kind = Measurement::Kind::Seconds;
        r.measurement.seconds = s.real(7);
    }
    r.measurement.repetitions = static_cast<int>(s.int64(8));
    // Checked as they are read, like the JSON columns below: a damaged or hand-edited file must
    // give an error naming the record, not an exception in whoever prints it.
    auto damaged_measure = [&](const std::string &what) {
        return Error("tuning database " + path + ": record #" + std::to_string(r.id) + " is damaged: " + what);
    };
    if (r.measurement.kind == Measurement::Kind::Cycles && r.measurement.cycles <= 0)
        throw damaged_measure("its cycles are not a positive count");
    if (r.measurement.kind == Measurement::Kind::Seconds && !(std::isfinite(r.measurement.seconds) && r.measurement.seconds > 0))
        throw damaged_measure("its seconds are not a positive time");
    if (r.measurement.repetitions < 1) throw damaged_measure("its repetitions are fewer than 1");
    // The JSON columns are checked as they are read: a damaged or hand-edited file must give an
    // error naming the record, not an exception of the JSON library in whoever prints it.
    auto damaged = [&](const std::string &column, const std::string &expected) {
        return Error("tuning database " + path + ": record #" + std::to_string(r.id) + " is damaged: its " + column +
                     " is not " + expected);
    };
    auto parsed = [&](const std::string &text, const std::string &column, const std::string &expected) {
        try {
            return internal::parse_json_text(text, column); // nesting bounded
        } catch (const Error &) {
            throw damaged(column, expected);
        }
    };
    auto json_object = [&](const std::string &text, const std::string &column) {
        if (!parsed(text, column, "a JSON object").is_object()) throw damaged(column, "a JSON object");
        return text;
    };
    if (auto samples = s.optional_text(9)) {
        const nlohmann::json j = parsed(*samples, "samples", "a JSON array of seconds");
        if (!j.is_array()) throw damaged("samples", "a JSON array of seconds");
        for (const nlohmann::json &x : j) {
            if (!x.is_number() || !(x.get<double>() > 0) || !std::isfinite(x.get<double>()))
                throw damaged("samples", "a JSON array of seconds");
            r.measurement.samples.push_back(x.get<double>());
        }
    }
    r.compiler_version = s.text(10);
    r.seed = static_cast<uint64_t>(s.int64(11));
    r.tuner_options = json_object(s.text(12), "tuner options");
    r.created_at = s.text(13);
    r.op_words = s.optional_text(14).value_or("");
    r.program_hash = s.optional_text(15).value_or("");
    r.details = json_object(s.optional_text(16).value_or("{}"), "details");
    return r;
}

FilterClause filter_clause(const RecordFilter &f) {
    FilterClause c;
    if (!f.workload_key.empty()) {
        c.sql += " AND r.workload_key = ?";
        c.values.push_back(f.workload_key);
    }
    if (!f.target_name.empty()) {
        c.sql += " AND t.name = ?";
        c.values.push_back(f.target_name);
    }
    if (!f.target_hash.empty()) {
        c.sql += " AND r.target_hash = ?";
        c.values.push_back(f.target_hash);
    }
    return c;
}

void FilterClause::bind(Statement &s, int first) const {
    for (size_t i = 0; i < values.size(); ++i) s.bind(first + static_cast<int>(i), values[i]);
}

} // namespace internal

TuningDatabase::TuningDatabase(const std::string &path, const Options &options)
    : impl_(std::make_unique<Impl>(path, options)) {}
TuningDatabase::~TuningDatabase() = default;
TuningDatabase::TuningDatabase(TuningDatabase &&) noexcept = default;
TuningDatabase &TuningDatabase::operator=(TuningDatabase &&) noexcept = default;

std::optional<TuningDatabase> TuningDatabase::open_from_environment(const Options &options) {
    const char *path = std::getenv("TESSERA_TUNING_DB");
    if (!path || !*path) return std::nullopt;
    return TuningDatabase(path, options);
}

const std::string &TuningDatabase::path() const { return impl_->db.path(); }
int TuningDatabase::opened_schema_version() const { return impl_->opened_version; }

namespace {

/// Stores the workload unless present; refuses a key already stored for another canonical form.
void store_workload(internal::SqliteConnection &db, const std::string &key, const std::optional<std::string> &canonical,
                    const std::string &description, const std::optional<std::string> &op) {
    Statement q(db, "SELECT canonical, op FROM workloads WHERE key = ?");
    q.bind(1, key);
    if (!q.step()) {
        Statement ins(db, "INSERT INTO workloads(key, canonical, description, op) VALUES (?, ?, ?, ?)");
        ins.bind(1, key).bind(2, canonical).bind(3, description).bind(4, op).run();
        return;
    }
    if (op && !q.optional_text(1)) {
        // A workload first stored from C++ learns the op words that rebuild it.
        Statement up(db, "UPDATE workloads SET op = ? WHERE key = ?");
        up.bind(1, *op).bind(2, key).run();
    }
    const std::optional<std::string> stored = q.optional_text(0);
    if (stored && canonical && *stored != *canonical)
        throw Error("tuning database " + db.path() + ": workload key " + key +
                    " is already stored for a different algorithm (a hash collision); this record cannot be "
                    "kept under that key — please report it");
    if (!stored && canonical) {
        // A workload migrated from schema 1 learns its canonical form.
        Statement up(db, "UPDATE workloads SET canonical = ? WHERE key = ?");
        up.bind(1, *canonical).bind(2, key).run();
    }
}

/// Stores the target unless present; refuses a hash already stored for another description.
void store_target(internal::SqliteConnection &db, const std::string &hash, const std::string &name, bool chip,
                  const std::optional<std::string> &json) {
    Statement q(db, "SELECT json FROM targets WHERE hash = ?");
    q.bind(1, hash);
    if (!q.step()) {
        Statement ins(db, "INSERT INTO targets(hash, name, chip, json) VALUES (?, ?, ?, ?)");
        ins.bind(1, hash).bind(2, name).bind(3, int64_t{chip}).bind(4, json).run();
        return;
    }
    const std::optional<std::string> stored = q.optional_text(0);
    if (stored && json && *stored != *json)
        throw Error("tuning database " + db.path() + ": target hash " + hash +
                    " is already stored for a different target description (a hash collision)");
    if (!stored && json) {
        Statement up(db, "UPDATE targets SET json = ?, name = ? WHERE hash = ?");
        up.bind(1, *json).bind(2, name).bind(3, hash).run();
    }
}

std::string normalised_options(const std::string &text) {
    nlohmann::json j;
    j = internal::parse_json_text(text, "tuning record: the tuner options");
    if (!j.is_object()) throw Error("tuning record: the tuner options must be a JSON object, got " + text);
    return j.dump();
}

} // namespace

namespace internal {
int64_t insert_record(SqliteConnection &db, const std::string &workload_key, const std::string &target_hash,
                      const std::string &schedule_json, const Measurement &m, const std::string &version,
                      uint64_t seed, const std::string &options, const std::optional<std::string> &created_at,
                      const std::optional<std::string> &program_hash, const std::optional<std::string> &details) {
    Statement ins(db, "INSERT INTO records(workload_key, target_hash, schedule, cycles, seconds, repetitions, samples, "
                      "compiler_version, seed, tuner_options, created_at, program_hash, details) VALUES (?, ?, ?, ?, ?, "
                      "?, ?, ?, ?, ?, COALESCE(?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), ?, ?)");
    ins.bind(1, workload_key).bind(2, target_hash).bind(3, schedule_json);
    if (m.kind == Measurement::Kind::Cycles) ins.bind(4, m.cycles).bind_null(5).bind_null(7);
    else {
        ins.bind_null(4).bind(5, m.seconds);
        if (m.samples.empty()) ins.bind_null(7);
        else ins.bind(7, nlohmann::json(m.samples).dump());
    }
    ins.bind(6, int64_t{m.repetitions}).bind(8, version).bind(9, static_cast<int64_t>(seed)).bind(10, options);
    ins.bind(11, created_at).bind(12, program_hash).bind(13, details);
    ins.run();
    return sqlite3_last_insert_rowid(db.get());
}

void store_workload_row(SqliteConnection &db, const std::string &key, const std::optional<std::string> &canonical,
                        const std::string &description, const std::optional<std::string> &op) {
    store_workload(db, key, canonical, description, op);
}
void store_target_row(SqliteConnection &db, const std::string &hash, const std::string &name, bool chip,
                      const std::optional<std::string> &json) {
    store_target(db, hash, name, chip, json);
}
} // namespace internal

namespace {

std::optional<std::string> unless_empty(const std::string &s) { return s.empty() ? std::nullopt : std::optional(s); }

/// Checks a measurement and stores it (with its workload and target rows) inside the caller's
/// transaction; returns its id.
int64_t store_measured(internal::SqliteConnection &db, const Workload &workload, const TargetIdentity &target,
                       const MeasuredSchedule &measured) {
    const Measurement &m = measured.measurement;
    if (target.chip && m.kind != Measurement::Kind::Cycles)
        throw Error("tuning record: target " + target.name + " is a chip, measured in cycles, but the measurement is " +
                    m.to_string());
    if (!target.chip && m.kind != Measurement::Kind::Seconds)
        throw Error("tuning record: target " + target.name + " is measured in seconds, but the measurement is " +
                    m.to_string());
    // Checked here as well as in the factories: a Measurement is a plain struct.
    if (m.kind == Measurement::Kind::Cycles) Measurement::chip_cycles(m.cycles);
    else if (!m.samples.empty()) Measurement::host_seconds(m.samples);
    else throw Error("tuning record: a host measurement needs its timed repetitions (Measurement::host_seconds)");
    if (target.hash.empty() || target.json.empty())
        throw Error("tuning record: the target has no description; make it with TargetIdentity::of");
    const std::string options = normalised_options(measured.tuner_options);
    const std::string details = normalised_options(measured.details);
    const std::string schedule = workload.to_canonical(measured.schedule).to_json(-1);
    store_workload(db, workload.key(), workload.canonical_form(), workload.description(), unless_empty(measured.op_words));
    store_target(db, target.hash, target.name, target.chip, target.json);
    return internal::insert_record(db, workload.key(), target.hash, schedule, m, compiler_version(), measured.seed,
                                   options, std::nullopt, unless_empty(measured.program_hash),
                                   details == "{}" ? std::nullopt : std::optional(details));
}

std::optional<int64_t> find_sweep_point(const internal::SqliteConnection &db, const std::string &key) {
    Statement q(db, "SELECT record_id FROM sweep_points WHERE key = ?");
    q.bind(1, key);
    if (!q.step()) return std::nullopt;
    return q.is_null(0) ? 0 : q.int64(0);
}

void insert_sweep_point(internal::SqliteConnection &db, const std::string &key, const std::string &description,
                        int64_t record_id) {
    Statement ins(db, "INSERT INTO sweep_points(key, description, record_id, completed_at) "
                      "VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))");
    ins.bind(1, key).bind(2, description);
    if (record_id > 0) ins.bind(3, record_id);
    else ins.bind_null(3);
    ins.run();
}

} // namespace

int64_t TuningDatabase::add(const Workload &workload, const TargetIdentity &target, const MeasuredSchedule &measured) {
    impl_->require_writable("add a record");
    WriteTransaction tx(impl_->db);
    const int64_t id = store_measured(impl_->db, workload, target, measured);
    tx.commit();
    return id;
}

void TuningDatabase::record_op_words(const Workload &workload, const std::string &op_words) {
    impl_->require_writable("record op words");
    if (op_words.empty()) throw Error("tuning database: record_op_words needs the op's words, got none");
    WriteTransaction tx(impl_->db);
    store_workload(impl_->db, workload.key(), workload.canonical_form(), workload.description(), op_words);
    tx.commit();
}

std::optional<int64_t> TuningDatabase::sweep_point(const std::string &point_key) const {
    return find_sweep_point(impl_->db, point_key);
}

int64_t TuningDatabase::add_sweep_point(const std::string &point_key, const std::string &description,
                                        const Workload &workload, const TargetIdentity &target,
                                        const MeasuredSchedule &measured) {
    impl_->require_writable("record a sweep point");
    WriteTransaction tx(impl_->db);
    // Inside the write transaction: another process completing the same point waits for us,
    // then finds the mark.
    if (auto done = find_sweep_point(impl_->db, point_key)) return *done;
    const int64_t id = store_measured(impl_->db, workload, target, measured);
    insert_sweep_point(impl_->db, point_key, description, id);
    tx.commit();
    return id;
}

void TuningDatabase::mark_sweep_point(const std::string &point_key, const std::string &description, int64_t record_id) {
    impl_->require_writable("record a sweep point");
    WriteTransaction tx(impl_->db);
    if (find_sweep_point(impl_->db, point_key)) return;
    insert_sweep_point(impl_->db, point_key, description, record_id);
    tx.commit();
}

namespace {

/// Whether the stored workload and target behind (key, hash) are really these: a different
/// canonical form or description under the same hash is a collision and must not match.
bool stored_group_matches(const internal::SqliteConnection &db, const Workload &w, const TargetIdentity &t) {
    Statement q(db, "SELECT w.canonical, t.json FROM workloads w, targets t WHERE w.key = ? AND t.hash = ?");
    q.bind(1, w.key()).bind(2, t.hash);
    if (!q.step()) return false;
    const auto canonical = q.optional_text(0);
    const auto json = q.optional_text(1);
    return (!canonical || *canonical == w.canonical_form()) && (!json || *json == t.json);
}

} // namespace

std::vector<TuningRecord> TuningDatabase::top_k(const Workload &workload, const TargetIdentity &target, int k) const {
    if (k < 1) throw Error("tuning database: top_k needs k >= 1, got " + std::to_string(k));
    if (!stored_group_matches(impl_->db, workload, target)) return {};
    Statement s(impl_->db, std::string("SELECT ") + internal::kRecordColumns + internal::kRecordJoin +
                               " WHERE r.workload_key = ? AND r.target_hash = ? ORDER BY " +
                               internal::kRecordCostOrder + " LIMIT ?");
    s.bind(1, workload.key()).bind(2, target.hash).bind(3, int64_t{k});
    std::vector<TuningRecord> out;
    while (s.step()) out.push_back(internal::read_record(s, path()));
    return out;
}

std::optional<TuningRecord> TuningDatabase::best(const Workload &workload, const TargetIdentity &target) const {
    auto top = top_k(workload, target, 1);
    if (top.empty()) return std::nullopt;
    return top.front();
}

namespace {

/// Runs a record query whose text `sql(where)` is built around the filter's conditions.
std::vector<TuningRecord> filtered_records(const internal::SqliteConnection &db, const RecordFilter &filter,
                                           const std::function<std::string(const std::string &)> &sql) {
    const auto where = internal::filter_clause(filter);
    std::string text = sql(where.sql);
    if (filter.limit > 0) text += " LIMIT " + std::to_string(filter.limit);
    Statement s(db, text);
    where.bind(s, 1);
    std::vector<TuningRecord> out;
    while (s.step()) out.push_back(internal::read_record(s, db.path()));
    return out;
}

} // namespace

std::vector<TuningRecord> TuningDatabase::best_per_group(const RecordFilter &filter) const {
    return filtered_records(impl_->db, filter, [](const std::string &where) {
        return std::string("SELECT * FROM (SELECT ") + internal::kRecordColumns +
               ", ROW_NUMBER() OVER (PARTITION BY r.workload_key, r.target_hash ORDER BY " +
               internal::kRecordCostOrder + ") AS rank" + internal::kRecordJoin + " WHERE 1" + where +
               ") WHERE rank = 1 ORDER BY workload_key, name, target_hash";
    });
}

std::vector<TuningRecord> TuningDatabase::list(const RecordFilter &filter) const {
    return filtered_records(impl_->db, filter, [](const std::string &where) {
        return std::string("SELECT ") + internal::kRecordColumns + internal::kRecordJoin + " WHERE 1" + where +
               " ORDER BY r.id";
    });
}

std::optional<TuningRecord> TuningDatabase::find(int64_t id) const {
    Statement s(impl_->db, std::string("SELECT ") + internal::kRecordColumns + internal::kRecordJoin + " WHERE r.id = ?");
    s.bind(1, id);
    if (!s.step()) return std::nullopt;
    return internal::read_record(s, path());
}

TuningRecord TuningDatabase::get(int64_t id) const {
    if (auto r = find(id)) return *r;
    throw Error("tuning database " + path() + " has no record #" + std::to_string(id) + " (" +
                std::to_string(size()) + " records; `tessera db list` shows them)");
}

int64_t TuningDatabase::size() const {
    Statement s(impl_->db, "SELECT COUNT(*) FROM records");
    s.step();
    return s.int64(0);
}

std::optional<TargetIdentity> TuningDatabase::target(const std::string &hash) const {
    Statement s(impl_->db, "SELECT name, chip, json FROM targets WHERE hash = ?");
    s.bind(1, hash);
    if (!s.step() || s.is_null(2)) return std::nullopt;
    TargetIdentity t;
    t.name = s.text(0);
    t.chip = s.int64(1) != 0;
    t.json = s.text(2);
    t.hash = hash;
    return t;
}

std::optional<std::string> TuningDatabase::workload_canonical_form(const std::string &key) const {
    Statement s(impl_->db, "SELECT canonical FROM workloads WHERE key = ?");
    s.bind(1, key);
    if (!s.step()) return std::nullopt;
    return s.optional_text(0);
}

int64_t TuningDatabase::gc(int keep) {
    impl_->require_writable("collect garbage");
    if (keep < 1) throw Error("tuning database: gc must keep at least 1 record per workload and target, got " +
                              std::to_string(keep));
    WriteTransaction tx(impl_->db);
    Statement del(impl_->db, "DELETE FROM records WHERE id IN (SELECT id FROM (SELECT r.id AS id, ROW_NUMBER() OVER "
                             "(PARTITION BY r.workload_key, r.target_hash ORDER BY COALESCE(r.cycles, r.seconds), "
                             "r.id) AS rank FROM records r) WHERE rank > ?)");
    del.bind(1, int64_t{keep}).run();
    const int64_t removed = sqlite3_changes(impl_->db.get());
    // A sweep point whose record went is no longer complete: a rerun measures it again.
    impl_->db.exec("DELETE FROM sweep_points WHERE record_id IS NOT NULL AND record_id NOT IN (SELECT id FROM records);"
                   "DELETE FROM workloads WHERE key NOT IN (SELECT workload_key FROM records);"
                   "DELETE FROM targets WHERE hash NOT IN (SELECT target_hash FROM records);");
    tx.commit();
    return removed;
}

} // namespace tessera
