// The tuning database as a tuner and a compiler use it: records go in as they are measured and
// the best one for a workload and target comes back — never one of another target.
#include <gmock/gmock.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/chipsim/target.h"
#include "tessera/error.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;
using testing::HasSubstr;

namespace {

class TuningDb : public TuningDbTest {
protected:
    TargetIdentity npu_ = TargetIdentity::of(Target::named("npu-edge"));
};

} // namespace

TEST_F(TuningDb, StoresRecordsAndFindsTheBest) {
    TuningDatabase db(path_);
    EXPECT_EQ(db.opened_schema_version(), 0); // a new file
    const int64_t a = db.add(w_, tsp_, measured(tiled(c_, 16), 300, 7));
    const int64_t b = db.add(w_, tsp_, measured(tiled(c_, 8), 100, 8));
    const int64_t c = db.add(w_, tsp_, measured(tiled(c_, 4), 200, 9));
    EXPECT_LT(a, b);
    EXPECT_LT(b, c);
    EXPECT_EQ(db.size(), 3);

    const auto best = db.best(w_, tsp_);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->id, b);
    EXPECT_EQ(best->measurement.cycles, 100);
    EXPECT_EQ(best->seed, 8u);
    EXPECT_EQ(best->workload_key, w_.key());
    EXPECT_EQ(best->workload_description, "matmul M=64 N=48 K=32 dtype=fp32");
    EXPECT_EQ(best->target_name, "tsp-mini");
    EXPECT_EQ(best->target_hash, tsp_.hash);
    EXPECT_EQ(best->compiler_version, compiler_version());
    EXPECT_EQ(best->tuner_options, R"({"budget":64,"strategy":"evolutionary"})");
    EXPECT_THAT(best->created_at, testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T.*Z"));
    // Stored in canonical names, and back in the pipeline's names it is what was measured.
    EXPECT_EQ(best->schedule, w_.to_canonical(tiled(c_, 8)));
    EXPECT_EQ(w_.to_canonical(w_.from_canonical(best->schedule)), best->schedule);

    const auto top = db.top_k(w_, tsp_, 2);
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].id, b);
    EXPECT_EQ(top[1].id, c);
    const auto all = db.list();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].id, a);
    EXPECT_EQ(db.get(c).measurement.cycles, 200);
    EXPECT_FALSE(db.find(999));
    EXPECT_THAT(error_of([&] { db.get(999); }), HasSubstr("no record #999"));
    EXPECT_THAT(error_of([&] { db.top_k(w_, tsp_, 0); }), HasSubstr("k >= 1"));
    // A tie keeps the earlier record.
    const int64_t d = db.add(w_, tsp_, measured(tiled(c_, 2), 100));
    EXPECT_EQ(db.best(w_, tsp_)->id, b);
    EXPECT_GT(d, c);
}

TEST_F(TuningDb, RecordsNeverAnswerForAnotherTarget) {
    TuningDatabase db(path_);
    db.add(w_, tsp_, measured(tiled(c_, 8), 100));
    EXPECT_TRUE(db.best(w_, tsp_));
    EXPECT_FALSE(db.best(w_, npu_)); // another chip

    // tsp-mini's description in a file: the same target, wherever it is loaded from.
    const std::string same = (dir_ / "tsp_copy.json").string();
    std::ofstream(same) << chipsim::load_target("tsp-mini").to_json();
    const TargetIdentity copy = TargetIdentity::of(Target::named(same));
    EXPECT_EQ(copy.hash, tsp_.hash);
    EXPECT_TRUE(db.best(w_, copy));

    // The same name with one number changed: a new target, with no records.
    nlohmann::json j = nlohmann::json::parse(chipsim::load_target("tsp-mini").to_json());
    j["clock_ghz"] = 1.25;
    const std::string edited = (dir_ / "tsp_edited.json").string();
    std::ofstream(edited) << j.dump(2);
    const TargetIdentity changed = TargetIdentity::of(Target::named(edited));
    EXPECT_EQ(changed.name, "tsp-mini");
    EXPECT_NE(changed.hash, tsp_.hash);
    EXPECT_FALSE(db.best(w_, changed));
    EXPECT_TRUE(db.list({.target_hash = changed.hash}).empty());
    EXPECT_EQ(db.list({.target_name = "tsp-mini"}).size(), 1u);

    // Another shape of the same algorithm is another workload.
    const Func other = small_matmul(64, 48, 16);
    EXPECT_FALSE(db.best(Workload::of(Pipeline(other), {{64, 48}}), tsp_));
    // The target's whole description is kept for replay.
    const auto stored = db.target(tsp_.hash);
    ASSERT_TRUE(stored);
    EXPECT_EQ(stored->json, tsp_.json);
    EXPECT_TRUE(stored->chip);
}

TEST_F(TuningDb, HostRecordsKeepEveryRepetition) {
    const TargetIdentity host = TargetIdentity::of(Target::host());
    EXPECT_FALSE(host.chip);
    EXPECT_THAT(host.json, HasSubstr("\"cores\""));
    TuningDatabase db(path_);
    MeasuredSchedule m;
    m.schedule = tiled(c_, 8);
    m.measurement = Measurement::host_seconds({3e-3, 1e-3, 2e-3, 9e-3});
    const int64_t id = db.add(w_, host, m);
    const TuningRecord r = db.get(id);
    EXPECT_EQ(r.measurement.kind, Measurement::Kind::Seconds);
    EXPECT_DOUBLE_EQ(r.measurement.seconds, 2.5e-3); // the median, not the mean
    EXPECT_EQ(r.measurement.repetitions, 4);
    EXPECT_EQ(r.measurement.samples, (std::vector<double>{3e-3, 1e-3, 2e-3, 9e-3}));
    EXPECT_EQ(r.measurement.to_string(), "2.500 ms (median of 4)");
    EXPECT_FALSE(db.best(w_, tsp_));
}

TEST_F(TuningDb, MisuseIsRefusedAndStoresNothing) {
    TuningDatabase db(path_);
    const TargetIdentity host = TargetIdentity::of(Target::host());
    EXPECT_THAT(error_of([&] { db.add(w_, host, measured(tiled(c_, 8), 100)); }), HasSubstr("measured in seconds"));
    MeasuredSchedule secs;
    secs.measurement = Measurement::host_seconds({1.0});
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, secs); }), HasSubstr("is a chip, measured in cycles"));
    MeasuredSchedule bad = measured(tiled(c_, 8), 100);
    bad.tuner_options = "[1, 2]";
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, bad); }), HasSubstr("must be a JSON object"));
    bad.tuner_options = "{budget";
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, bad); }), HasSubstr("tuning record: the tuner options:1:2: not valid JSON"));
    MeasuredSchedule raw = measured(tiled(c_, 8), 100);
    raw.measurement.cycles = -5; // a plain struct, filled in by hand
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, raw); }), HasSubstr("positive cycle count"));
    EXPECT_THAT(error_of([] { Measurement::chip_cycles(0); }), HasSubstr("positive"));
    EXPECT_THAT(error_of([] { Measurement::host_seconds({}); }), HasSubstr("at least one"));
    EXPECT_THAT(error_of([] { Measurement::host_seconds({1.0, -2.0}); }), HasSubstr("repetition 1"));
    EXPECT_THAT(error_of([] { TargetIdentity::of(Target::reference()); }), HasSubstr("not tuned"));
    EXPECT_THAT(error_of([] { TargetIdentity::of(Target::interpreter()); }), HasSubstr("not tuned"));
    EXPECT_THROW(TargetIdentity::of(Target::named("no-such-chip")), Error);
    // A schedule naming a Func of another pipeline.
    const Func other = small_matmul(8, 8, 8, "D");
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, measured(tiled(other, 4), 10)); }), HasSubstr("'D'"));
    EXPECT_THAT(error_of([&] { db.gc(0); }), HasSubstr("at least 1"));
    EXPECT_EQ(db.size(), 0);
}

TEST_F(TuningDb, GcKeepsTheBestOfEachWorkloadAndTarget) {
    TuningDatabase db(path_);
    const Func small = small_matmul(8, 8, 8);
    const Workload w2 = Workload::of(Pipeline(small), {{8, 8}});
    for (int64_t cycles : {500, 100, 400, 300, 200}) db.add(w_, tsp_, measured(tiled(c_, 8), cycles));
    for (int64_t cycles : {50, 40}) db.add(w_, npu_, measured(tiled(c_, 8), cycles));
    db.add(w2, tsp_, measured(tiled(small, 4), 7));
    EXPECT_EQ(db.best_per_group().size(), 3u);
    EXPECT_EQ(db.gc(2), 3); // the three worst on (w_, tsp-mini)
    std::vector<int64_t> left;
    for (const auto &r : db.list({.workload_key = w_.key(), .target_hash = tsp_.hash})) left.push_back(r.measurement.cycles);
    EXPECT_EQ(left, (std::vector<int64_t>{100, 200}));
    EXPECT_EQ(db.list({.target_name = "npu-edge"}).size(), 2u);
    EXPECT_EQ(db.list({.workload_key = w2.key()}).size(), 1u);
    EXPECT_EQ(db.gc(1), 2);
    const auto best = db.best_per_group();
    ASSERT_EQ(best.size(), 3u);
    EXPECT_EQ(db.size(), 3);
}

TEST_F(TuningDb, ExportsAndImportsEveryRecord) {
    const std::string copy_path = (dir_ / "copy.db").string();
    std::string exported;
    {
        TuningDatabase db(path_);
        db.add(w_, tsp_, measured(tiled(c_, 8), 100, 3));
        db.add(w_, npu_, measured(tiled(c_, 4), 90, 4));
        MeasuredSchedule host;
        host.schedule = tiled(c_, 8);
        host.measurement = Measurement::host_seconds({2e-3, 1e-3, 3e-3});
        db.add(w_, TargetIdentity::of(Target::host()), host);
        exported = db.export_json();
        const std::string csv = db.export_csv();
        EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
        EXPECT_THAT(csv, testing::StartsWith("id,workload_key,workload,target_name,target_hash,cycles,seconds,"));
        // Fields with commas and quotes are quoted, quotes doubled.
        EXPECT_THAT(csv, HasSubstr(R"("{""budget"":64,""strategy"":""evolutionary""}")"));
        EXPECT_THAT(csv, HasSubstr(",100,,1,"));
        EXPECT_EQ(db.export_json({.target_name = "npu-edge"}).find("tsp-mini"), std::string::npos);
    }
    TuningDatabase copy(copy_path);
    const ImportSummary first = copy.import_json(exported);
    EXPECT_EQ(first.added, 3);
    EXPECT_EQ(first.duplicates, 0);
    const ImportSummary again = copy.import_json(exported);
    EXPECT_EQ(again.added, 0);
    EXPECT_EQ(again.duplicates, 3);
    // The imported records answer the same queries, with everything replay needs.
    const auto best = copy.best(w_, tsp_);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->measurement.cycles, 100);
    EXPECT_EQ(best->seed, 3u);
    EXPECT_EQ(best->schedule, w_.to_canonical(tiled(c_, 8)));
    EXPECT_EQ(copy.target(tsp_.hash)->json, tsp_.json);
    EXPECT_EQ(copy.workload_canonical_form(w_.key()), w_.canonical_form());
    const auto host = copy.best(w_, TargetIdentity::of(Target::host()));
    ASSERT_TRUE(host);
    EXPECT_EQ(host->measurement.samples, (std::vector<double>{2e-3, 1e-3, 3e-3}));
    // Export of the copy is the same document but for the ids.
    nlohmann::json a = nlohmann::json::parse(exported), b = nlohmann::json::parse(copy.export_json());
    for (auto *doc : {&a, &b})
        for (auto &r : (*doc)["records"]) r.erase("id");
    EXPECT_EQ(a, b);
}

TEST_F(TuningDb, MalformedImportsNameTheFieldAndAddNothing) {
    std::string exported;
    {
        TuningDatabase db(path_);
        db.add(w_, tsp_, measured(tiled(c_, 8), 100));
        exported = db.export_json();
    }
    TuningDatabase copy((dir_ / "copy.db").string());
    auto with = [&](const std::function<void(nlohmann::json &)> &edit) {
        nlohmann::json j = nlohmann::json::parse(exported);
        edit(j);
        return j.dump();
    };
    EXPECT_THAT(error_of([&] { copy.import_json("{not json"); }), HasSubstr("tuning records import:1:3: not valid JSON"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["format"] = "csv"; })); }),
                HasSubstr("document.format"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["version"] = 9; })); }),
                HasSubstr("document.version 9"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["records"][0].erase("cycles"); })); }),
                HasSubstr("records[0]"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["records"][0]["cycles"] = -1; })); }),
                HasSubstr("records[0]: tuning record: a chip measurement needs a positive cycle count"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["records"][0]["schedule"]["version"] = 99; })); }),
                HasSubstr("records[0].schedule"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["records"][0]["tuner_options"] = 3; })); }),
                HasSubstr("records[0].tuner_options must be an object"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["records"][0]["target"] = "0000"; })); }),
                HasSubstr("records[0].target"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["targets"][0]["chip"] = false; })); }),
                HasSubstr("records[0] must be measured in seconds"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["targets"][0]["json"] = "{}"; })); }),
                HasSubstr("targets[0].hash"));
    EXPECT_THAT(error_of([&] { copy.import_json(with([](auto &j) { j["workloads"][0]["canonical"] = "x"; })); }),
                HasSubstr("workloads[0].key"));
    // All or nothing: nothing of the failed imports stayed.
    EXPECT_EQ(copy.size(), 0);
    EXPECT_FALSE(copy.target(tsp_.hash));
}

TEST_F(TuningDb, AKeyCollisionNeverReturnsAnotherWorkloadsSchedule) {
    {
        TuningDatabase db(path_);
        db.add(w_, tsp_, measured(tiled(c_, 8), 100));
    }
    // Pretend another algorithm hashed to the same key: its stored canonical form differs.
    raw_sql(path_, "UPDATE workloads SET canonical = 'another algorithm'");
    TuningDatabase db(path_);
    EXPECT_FALSE(db.best(w_, tsp_));
    EXPECT_THAT(error_of([&] { db.add(w_, tsp_, measured(tiled(c_, 8), 50)); }), HasSubstr("hash collision"));
    EXPECT_EQ(db.size(), 1);
}
