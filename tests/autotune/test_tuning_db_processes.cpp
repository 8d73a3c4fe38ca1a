// Several processes on one database file: concurrent writers lose nothing, and a writer killed
// with SIGKILL loses no record it had been told was committed.
#include <gmock/gmock.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "tessera/error.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;

namespace {

class TuningDbProcesses : public TuningDbTest {
protected:
    Schedule schedule_ = tiled(c_, 8);
};

/// Waits for a child and returns its exit status (-1 when it did not exit normally).
int wait_for(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

TEST_F(TuningDbProcesses, TwoWritersAtOnceLoseNothing) {
    constexpr int kPerWriter = 60;
    // Both children open the file that does not exist yet — creating the schema races too.
    std::vector<pid_t> children;
    for (int writer = 0; writer < 2; ++writer) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int status = 0;
            try {
                TuningDatabase db(path_);
                for (int i = 0; i < kPerWriter; ++i)
                    db.add(w_, tsp_, measured(schedule_, 1000 + i, uint64_t(writer * 1000 + i)));
            } catch (const std::exception &e) {
                fprintf(stderr, "writer %d: %s\n", writer, e.what());
                status = 1;
            }
            _exit(status);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) EXPECT_EQ(wait_for(pid), 0);

    TuningDatabase db(path_);
    const auto records = db.list();
    ASSERT_EQ(records.size(), size_t(2 * kPerWriter));
    std::set<uint64_t> seeds;
    std::set<int64_t> ids;
    for (const auto &r : records) {
        seeds.insert(r.seed);
        ids.insert(r.id);
    }
    EXPECT_EQ(seeds.size(), size_t(2 * kPerWriter)); // every record of both writers, once
    EXPECT_EQ(ids.size(), size_t(2 * kPerWriter));
    EXPECT_TRUE(seeds.count(0) && seeds.count(kPerWriter - 1) && seeds.count(1000) && seeds.count(1000 + kPerWriter - 1));
}

TEST_F(TuningDbProcesses, AWriterKilledMidWriteLosesNoCommittedRecord) {
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        close(pipe_fds[0]);
        try {
            TuningDatabase db(path_);
            // Writes until killed, reporting each id once add() has returned (= committed).
            for (uint64_t i = 0;; ++i) {
                const int64_t id = db.add(w_, tsp_, measured(schedule_, int64_t(100 + i % 50), i));
                if (write(pipe_fds[1], &id, sizeof id) != sizeof id) _exit(2);
            }
        } catch (const std::exception &e) {
            fprintf(stderr, "writer: %s\n", e.what());
        }
        _exit(1);
    }
    close(pipe_fds[1]);
    std::vector<int64_t> committed;
    int64_t id = 0;
    while (committed.size() < 40 && read(pipe_fds[0], &id, sizeof id) == sizeof id) committed.push_back(id);
    // Killed in the middle of whatever it was doing: most likely inside the next add().
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    // Ids it wrote to the pipe before dying but we had not read yet were committed too.
    while (read(pipe_fds[0], &id, sizeof id) == sizeof id) committed.push_back(id);
    close(pipe_fds[0]);
    ASSERT_GE(committed.size(), 40u);

    TuningDatabase db(path_);
    for (int64_t c : committed) EXPECT_TRUE(db.find(c)) << "record #" << c << " was committed and is lost";
    EXPECT_GE(db.size(), int64_t(committed.size()));
    // The file is whole, and takes new records.
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &raw), SQLITE_OK);
    sqlite3_stmt *check = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "PRAGMA integrity_check", -1, &check, nullptr), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(check), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char *>(sqlite3_column_text(check, 0)), "ok");
    sqlite3_finalize(check);
    sqlite3_close(raw);
    EXPECT_GT(db.add(w_, tsp_, measured(schedule_, 1)), committed.back());
}
