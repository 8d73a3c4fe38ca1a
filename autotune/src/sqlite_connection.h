#pragma once
// A thin RAII layer over SQLite's C API for the tuning database: a connection, prepared
// statements with typed binds and reads, and transactions. Private to tessera_autotune (the
// public headers include no SQLite header). Every failure becomes a tessera::Error that names
// the database file and says what SQLite said.
#include <sqlite3.h>

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::internal {

/// One open SQLite connection.
class SqliteConnection {
public:
    /// Opens `path` (creating it when `create`); read-only when `read_only`.
    SqliteConnection(const std::string &path, bool read_only, bool create, int busy_timeout_ms);
    ~SqliteConnection();
    SqliteConnection(const SqliteConnection &) = delete;
    SqliteConnection &operator=(const SqliteConnection &) = delete;

    sqlite3 *get() const { return db_; }
    const std::string &path() const { return path_; }

    /// Runs SQL without results (may hold several statements).
    void exec(const std::string &sql);
    /// Throws the tessera::Error for SQLite result `rc` while doing `what`.
    [[noreturn]] void fail(int rc, const std::string &what) const;
    /// Switches the file to WAL journaling and returns the mode SQLite reports. Retried until the
    /// busy timeout: two processes creating one file race for the exclusive lock the switch needs,
    /// and SQLite answers the loser SQLITE_BUSY at once instead of calling the busy handler.
    std::string journal_mode_wal();

private:
    sqlite3 *db_ = nullptr;
    std::string path_;
    int busy_timeout_ms_ = 0;
};

/// A prepared statement; bind parameters are 1-based, columns 0-based (as in SQLite).
class Statement {
public:
    Statement(const SqliteConnection &db, const std::string &sql);
    ~Statement();
    Statement(const Statement &) = delete;
    Statement &operator=(const Statement &) = delete;

    Statement &bind(int i, int64_t v);
    Statement &bind(int i, double v);
    Statement &bind(int i, const std::string &v);
    Statement &bind_null(int i);
    Statement &bind(int i, const std::optional<std::string> &v) { return v ? bind(i, *v) : bind_null(i); }

    /// Advances to the next row: true when there is one, false when done.
    bool step();
    /// Runs a statement that returns no rows.
    void run() {
        while (step()) {}
    }

    bool is_null(int col) const;
    int64_t int64(int col) const;
    double real(int col) const;
    std::string text(int col) const;
    std::optional<std::string> optional_text(int col) const;

private:
    const SqliteConnection &db_;
    sqlite3_stmt *stmt_ = nullptr;
    std::string sql_;
};

/// BEGIN IMMEDIATE ... COMMIT, rolled back when destroyed uncommitted (an exception). IMMEDIATE
/// takes the write lock up front: a deferred transaction that reads and then writes can fail
/// with SQLITE_BUSY at once, without waiting, when another writer went first.
class WriteTransaction {
public:
    explicit WriteTransaction(SqliteConnection &db);
    ~WriteTransaction();
    void commit();

private:
    SqliteConnection &db_;
    bool done_ = false;
};

} // namespace tessera::internal
