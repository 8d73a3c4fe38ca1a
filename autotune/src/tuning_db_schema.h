#pragma once
// The tuning database's schema versions and migrations (tuning_db_schema.cpp).
#include "sqlite_connection.h"

namespace tessera::internal {

/// Brings the file behind `db` to the current schema: sets WAL and synchronous=FULL, creates
/// the schema in an empty file, migrates an older one, and refuses a newer one or an SQLite
/// file that is not a tuning database. Read-only connections are only checked. Returns the
/// schema version the file had before.
int prepare_tuning_schema(SqliteConnection &db, bool read_only);

/// The DDL of schema 1, the first layout, which migrations start from (kept verbatim: a test
/// fixture writes the same layout to check the migration).
extern const char *const kTuningSchemaV1;

} // namespace tessera::internal
