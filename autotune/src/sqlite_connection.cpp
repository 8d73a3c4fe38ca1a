// The SQLite layer of the tuning database (sqlite_connection.h).
#include "sqlite_connection.h"

#include "tessera/error.h"

namespace tessera::internal {

namespace {

/// What to tell the user for the SQLite result codes a user can cause.
std::string advice(int rc) {
    switch (rc & 0xff) {
    case SQLITE_NOTADB: return " — it is not an SQLite file, so not a tuning database; give another --db path";
    case SQLITE_CORRUPT: return " — the file is damaged; restore it from an export or start a new database";
    case SQLITE_READONLY:
        return " — the file or its directory is read-only; make it writable or open the database read-only";
    case SQLITE_CANTOPEN: return " — check that the directory exists and is writable";
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return " — another process held the database for longer than the busy timeout; retry";
    case SQLITE_FULL: return " — the disk is full";
    default: return "";
    }
}

} // namespace

SqliteConnection::SqliteConnection(const std::string &path, bool read_only, bool create, int busy_timeout_ms)
    : path_(path), busy_timeout_ms_(busy_timeout_ms) {
    int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
    if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
    // NOMUTEX: a connection is used by one thread at a time (documented on TuningDatabase).
    flags |= SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw Error("tuning database " + path + ": cannot open it: " + msg + advice(rc));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, busy_timeout_ms);
}

SqliteConnection::~SqliteConnection() { sqlite3_close(db_); }

std::string SqliteConnection::journal_mode_wal() {
    constexpr int kPauseMs = 5;
    for (int waited = 0;; waited += kPauseMs) {
        std::string mode;
        char *err = nullptr;
        const int rc = sqlite3_exec(
            db_, "PRAGMA journal_mode = WAL",
            [](void *out, int, char **values, char **) {
                *static_cast<std::string *>(out) = values[0] ? values[0] : "";
                return 0;
            },
            &mode, &err);
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        if (rc == SQLITE_OK) return mode;
        if (((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) || waited >= busy_timeout_ms_)
            throw Error("tuning database " + path_ + ": switching to WAL journaling: " + msg + advice(rc));
        sqlite3_sleep(kPauseMs);
    }
}

void SqliteConnection::fail(int rc, const std::string &what) const {
    throw Error("tuning database " + path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)) +
                advice(rc));
}

void SqliteConnection::exec(const std::string &sql) {
    char *err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
        std::string msg = err ? err : sqlite3_errstr(rc);
        sqlite3_free(err);
        throw Error("tuning database " + path_ + ": " + msg + advice(rc));
    }
}

Statement::Statement(const SqliteConnection &db, const std::string &sql) : db_(db), sql_(sql) {
    const int rc = sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, "cannot prepare a query");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement &Statement::bind(int i, int64_t v) {
    const int rc = sqlite3_bind_int64(stmt_, i, v);
    if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value");
    return *this;
}

Statement &Statement::bind(int i, double v) {
    const int rc = sqlite3_bind_double(stmt_, i, v);
    if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value");
    return *this;
}

Statement &Statement::bind(int i, const std::string &v) {
    const int rc = sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value");
    return *this;
}

Statement &Statement::bind_null(int i) {
    const int rc = sqlite3_bind_null(stmt_, i);
    if (rc != SQLITE_OK) db_.fail(rc, "cannot bind a value");
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    db_.fail(rc, "query failed");
}

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int64_t Statement::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }

std::string Statement::text(int col) const {
    const auto *p = reinterpret_cast<const char *>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
}

std::optional<std::string> Statement::optional_text(int col) const {
    if (is_null(col)) return std::nullopt;
    return text(col);
}

WriteTransaction::WriteTransaction(SqliteConnection &db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }

WriteTransaction::~WriteTransaction() {
    if (!done_) sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void WriteTransaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

} // namespace tessera::internal
