#pragma once
// What the tuning database tests share: a workload to record, targets, raw SQL on the file.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include <string>

#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/tuning_db.h"
#include "test_support.h"

namespace tessera_test {

/// C = A · B by hand, with Vars i, j and RDom k (or other names).
inline tessera::Func small_matmul(int M, int N, int K, const std::string &c = "C", const std::string &i = "i",
                                  const std::string &j = "j", const std::string &k = "k") {
    using namespace tessera;
    Input A(Float(32), {M, K}, c + "_A"), B(Float(32), {K, N}, c + "_B");
    Var vi(i), vj(j);
    RDom rk(0, K, k);
    Func C(c);
    C(vi, vj) = 0.0f;
    C(vi, vj) += A(vi, rk) * B(rk, vj);
    return C;
}

/// A schedule of small_matmul's update in its own names, tiled by `tile`.
inline tessera::Schedule tiled(const tessera::Func &c, int tile, const std::string &i = "i", const std::string &j = "j") {
    using namespace tessera;
    Func f = c;
    Schedule before = Pipeline(f).schedule();
    f.update().tile(Var(i), Var(j), Var("io"), Var("jo"), Var("ii"), Var("ji"), tile, tile);
    Schedule s = Pipeline(f).schedule();
    Pipeline(f).set_schedule(before);
    return s;
}

/// A chip measurement with a seed and options.
inline tessera::MeasuredSchedule measured(const tessera::Schedule &s, int64_t cycles, uint64_t seed = 1) {
    tessera::MeasuredSchedule m;
    m.schedule = s;
    m.measurement = tessera::Measurement::chip_cycles(cycles);
    m.seed = seed;
    m.tuner_options = R"({"budget": 64, "strategy": "evolutionary"})";
    return m;
}

/// A fresh database path and a 64 x 48 x 32 matmul workload on tsp-mini.
class TuningDbTest : public testing::Test {
protected:
    void SetUp() override {
        dir_ = unique_temp_dir();
        path_ = (dir_ / "tuning.db").string();
    }
    std::filesystem::path dir_;
    std::string path_;
    tessera::Func c_ = small_matmul(64, 48, 32);
    tessera::Workload w_ = tessera::Workload::of(tessera::Pipeline(c_), {{64, 48}}, "matmul M=64 N=48 K=32 dtype=fp32");
    tessera::TargetIdentity tsp_ = tessera::TargetIdentity::of(tessera::Target::named("tsp-mini"));
};

/// Runs SQL on a database file with SQLite directly (fixtures and tampering).
inline void raw_sql(const std::string &path, const std::string &sql) {
    sqlite3 *db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char *err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string msg = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << msg;
}

/// The message of the tessera::Error `f` throws (fails the test when it throws none).
template <typename F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const tessera::Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "expected a tessera::Error";
    return "";
}

} // namespace tessera_test
