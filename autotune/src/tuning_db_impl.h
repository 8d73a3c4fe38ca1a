#pragma once
// What tuning_db.cpp and tuning_db_export.cpp share: the open connection and how a record is
// read from a row.
#include <optional>
#include <string>
#include <vector>

#include "sqlite_connection.h"
#include "tessera/tuning_db.h"

namespace tessera {

class TuningDatabase::Impl {
public:
    Impl(const std::string &path, const Options &options);

    /// Throws unless the database was opened writable.
    void require_writable(const char *what) const;

    internal::SqliteConnection db;
    bool read_only;
    int opened_version;
};

namespace internal {

/// The columns every record query selects, in the order read_record() reads them. Joined with
/// the workload and target tables as `r`, `w`, `t`.
extern const char *const kRecordColumns;
/// FROM clause joining records with their workloads and targets.
extern const char *const kRecordJoin;
/// What "best" orders by: cycles or median seconds, then the earlier record.
extern const char *const kRecordCostOrder;

/// The record in the current row of a statement that selected kRecordColumns.
TuningRecord read_record(const Statement &s, const std::string &path);

/// " AND ..." conditions for a filter, with their values bound from parameter `first` on.
struct FilterClause {
    std::string sql;
    std::vector<std::string> values;
    void bind(Statement &s, int first) const;
};
FilterClause filter_clause(const RecordFilter &f);

/// Stores a workload row unless present (filling in a missing canonical form); throws on a key
/// stored for another canonical form.
void store_workload_row(SqliteConnection &db, const std::string &key, const std::optional<std::string> &canonical,
                        const std::string &description, const std::optional<std::string> &op);
/// Stores a target row unless present (filling in a missing description); throws on a hash
/// stored for another description.
void store_target_row(SqliteConnection &db, const std::string &hash, const std::string &name, bool chip,
                      const std::optional<std::string> &json);
/// Inserts one record row (its workload and target rows must exist); returns its id.
/// `created_at` empty: now.
int64_t insert_record(SqliteConnection &db, const std::string &workload_key, const std::string &target_hash,
                      const std::string &schedule_json, const Measurement &m, const std::string &version,
                      uint64_t seed, const std::string &options, const std::optional<std::string> &created_at,
                      const std::optional<std::string> &program_hash, const std::optional<std::string> &details);

} // namespace internal

} // namespace tessera
