// Reuse through the library API: with a tuning database (set_tuning_database or
// TESSERA_TUNING_DB), realize() and compile_to_library() use the best record of the workload
// and target for that call and say so; without one, or without a record, the pipeline's own
// schedule. The pipeline's schedule is the caller's again afterwards.
#include <gmock/gmock.h>

#include <cstdlib>

#include "tessera/codegen/aot.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/tuned_schedule.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;
using testing::HasSubstr;

namespace {

MeasuredSchedule host_measured(const Schedule &s, double seconds) {
    MeasuredSchedule m;
    m.schedule = s;
    m.measurement = Measurement::host_seconds({seconds, seconds, seconds});
    return m;
}

/// Restores the process-wide database setting whatever a test did.
class TunedReuse : public testing::Test {
protected:
    void SetUp() override {
        unsetenv("TESSERA_TUNING_DB");
        set_tuning_database("");
        path_ = (unique_temp_dir() / "tuning.db").string();
    }
    void TearDown() override {
        unsetenv("TESSERA_TUNING_DB");
        set_tuning_database("");
    }
    std::string path_;
};

} // namespace

TEST_F(TunedReuse, RealizeOnTheHostUsesTheBestRecordForThatCallOnly) {
    const Func tuned = small_matmul(32, 32, 16);
    const Workload w = Workload::of(Pipeline(tuned), {{32, 32}});
    int64_t best = 0;
    {
        TuningDatabase db(path_);
        db.add(w, TargetIdentity::of(Target::host()), host_measured(tiled(tuned, 4), 2e-3));
        best = db.add(w, TargetIdentity::of(Target::host()), host_measured(tiled(tuned, 8), 1e-3));
    }
    const Func mine = small_matmul(32, 32, 16, "Out", "row", "col", "red");
    const Pipeline p(mine);
    Buffer<float> a({32, 16}), b({16, 32});
    a.fill_random(1);
    b.fill_random(2);
    const auto inputs = p.inputs();
    const Bindings bindings = {{inputs[0], a}, {inputs[1], b}};
    const Buffer<> ref = p.realize({{32, 32}}, bindings, Target::reference())[0];

    // No database: the pipeline's schedule.
    p.realize({{32, 32}}, bindings, Target::host());
    EXPECT_EQ(last_schedule_choice().source, ScheduleChoice::Source::Library);

    set_tuning_database(path_);
    const Buffer<> got = p.realize({{32, 32}}, bindings, Target::host())[0];
    EXPECT_EQ(last_schedule_choice().source, ScheduleChoice::Source::Tuned);
    EXPECT_EQ(last_schedule_choice().record_id, best);
    EXPECT_TRUE(p.schedule().empty()) << "the caller's schedule is restored: " << p.schedule().to_string();
    for (int64_t i = 0; i < 32; ++i)
        for (int64_t j = 0; j < 32; ++j) ASSERT_NEAR(ref.get_as_double({i, j}), got.get_as_double({i, j}), 1e-4);

    // Another shape has no record: the pipeline's schedule again.
    p.realize({{16, 32}}, bindings, Target::host());
    EXPECT_EQ(last_schedule_choice().source, ScheduleChoice::Source::Library);

    // The environment variable serves when nothing was set.
    set_tuning_database("");
    setenv("TESSERA_TUNING_DB", path_.c_str(), 1);
    p.realize({{32, 32}}, bindings, Target::host());
    EXPECT_EQ(last_schedule_choice().record_id, best);
}

TEST_F(TunedReuse, CompileToLibrarySaysWhichScheduleItCompiled) {
    const Func tuned = small_matmul(32, 32, 16);
    int64_t best = 0;
    {
        TuningDatabase db(path_);
        best = db.add(Workload::of(Pipeline(tuned), {{32, 32}}), TargetIdentity::of(Target::host()),
                      host_measured(tiled(tuned, 8), 1e-3));
    }
    const std::string dir = (std::filesystem::path(path_).parent_path() / "lib").string();
    const Pipeline p(small_matmul(32, 32, 16, "Mm", "x", "y", "r"));
    EXPECT_EQ(compile_to_library(p, "mm", dir, {{32, 32}}).schedule, "the pipeline's schedule");
    set_tuning_database(path_);
    const LibraryFiles files = compile_to_library(p, "mm", dir, {{32, 32}});
    EXPECT_THAT(files.schedule, HasSubstr("tuned record #" + std::to_string(best)));
    EXPECT_TRUE(p.schedule().empty());
    // A missing database is an error naming it, not a silent fallback.
    set_tuning_database(path_ + ".missing");
    EXPECT_THAT(error_of([&] { compile_to_library(p, "mm", dir, {{32, 32}}); }), HasSubstr("does not exist"));
}

TEST_F(TunedReuse, RealizeOnAChipUsesTheChipsRecordNotTheHosts) {
    const Func c = small_matmul(64, 64, 64);
    const Pipeline p(c);
    const Workload w = Workload::of(p, {{64, 64}});
    int64_t chip_record = 0;
    {
        TuningDatabase db(path_);
        db.add(w, TargetIdentity::of(Target::host()), host_measured(tiled(c, 8), 1e-3));
        // The default schedule (the backend's own tiling) as the chip's record.
        chip_record = db.add(w, TargetIdentity::of(Target::named("tsp-mini")), measured(Schedule(), 1234));
    }
    Buffer<float> a({64, 64}), b({64, 64});
    a.fill_random(1);
    b.fill_random(2);
    const auto inputs = p.inputs();
    set_tuning_database(path_);
    p.realize({{64, 64}}, {{inputs[0], a}, {inputs[1], b}}, Target::named("tsp-mini"));
    EXPECT_EQ(last_schedule_choice().record_id, chip_record);
    EXPECT_GT(last_chip_result().report.cycles, 0);
    p.realize({{64, 64}}, {{inputs[0], a}, {inputs[1], b}}, Target::named("npu-edge"));
    EXPECT_EQ(last_schedule_choice().source, ScheduleChoice::Source::Library);
}
