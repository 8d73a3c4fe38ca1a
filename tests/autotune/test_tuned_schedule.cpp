// Reuse: a compile given a database takes the best record of its workload and target, renamed
// into its own names, and says which schedule it used.
#include <gmock/gmock.h>

#include "tessera/error.h"
#include "tessera/tuned_schedule.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;
using testing::HasSubstr;

TEST(TunedSchedule, TheBestRecordIsAppliedToAPipelineWithOtherNames) {
    const std::string path = (unique_temp_dir() / "tuning.db").string();
    TuningDatabase db(path);
    const Target tsp = Target::named("tsp-mini");
    // Tuned on a matmul named C(i, j) over k...
    const Func tuned = small_matmul(32, 32, 16);
    const Workload w = Workload::of(Pipeline(tuned), {{32, 32}});
    db.add(w, TargetIdentity::of(tsp), measured(tiled(tuned, 16), 900));
    const int64_t best = db.add(w, TargetIdentity::of(tsp), measured(tiled(tuned, 8), 500));

    // ...used by a matmul named Out(row, col) over red.
    const Func mine = small_matmul(32, 32, 16, "Out", "row", "col", "red");
    const Pipeline p(mine);
    const ScheduleChoice none = apply_best_schedule(p, {{32, 32}}, tsp, nullptr);
    EXPECT_EQ(none.to_string(), "library schedule");
    EXPECT_TRUE(p.schedule().empty());

    const ScheduleChoice on_npu = apply_best_schedule(p, {{32, 32}}, Target::named("npu-edge"), &db);
    EXPECT_EQ(on_npu.source, ScheduleChoice::Source::Library); // tuned for another chip only
    EXPECT_TRUE(p.schedule().empty());
    EXPECT_EQ(apply_best_schedule(p, {{16, 32}}, tsp, &db).source, ScheduleChoice::Source::Library); // other shape

    const ScheduleChoice used = apply_best_schedule(p, {{32, 32}}, tsp, &db);
    EXPECT_EQ(used.source, ScheduleChoice::Source::Tuned);
    EXPECT_EQ(used.record_id, best);
    EXPECT_EQ(used.to_string(), "tuned record #" + std::to_string(best) + " (500 cycles)");
    EXPECT_EQ(p.schedule().to_string(), "Out.update(0): tile(row, col, t0, t1, t2, t3, 8, 8)\n")
        << p.schedule().to_string();

    // And it computes what the algorithm means.
    Buffer<float> a({32, 16}), b({16, 32});
    a.fill_random(1);
    b.fill_random(2);
    const auto inputs = p.inputs();
    const Bindings bindings = {{inputs[0], a}, {inputs[1], b}};
    const Buffer<> ref = p.realize({{32, 32}}, bindings, Target::reference())[0];
    const Buffer<> got = p.realize({{32, 32}}, bindings, Target::interpreter())[0];
    for (int64_t i = 0; i < 32; ++i)
        for (int64_t j = 0; j < 32; ++j) ASSERT_NEAR(ref.get_as_double({i, j}), got.get_as_double({i, j}), 1e-4);
}

TEST(TunedSchedule, ARecordThatDoesNotApplyIsAnErrorAndChangesNothing) {
    const std::string path = (unique_temp_dir() / "tuning.db").string();
    const Target tsp = Target::named("tsp-mini");
    const Func c = small_matmul(32, 32, 16);
    const Workload w = Workload::of(Pipeline(c), {{32, 32}});
    int64_t id = 0;
    {
        TuningDatabase db(path);
        id = db.add(w, TargetIdentity::of(tsp), measured(tiled(c, 8), 500));
    }
    // A stored schedule that splits a loop the algorithm does not have (a damaged record, or
    // one from a Tessera whose schedules meant something else).
    raw_sql(path, R"(UPDATE records SET schedule = '{"version":1,"funcs":[{"name":"f0","stages":[{"stage":1,)"
                  R"("directives":[{"op":"parallel","vars":["x9"]}]}]}]}')");
    TuningDatabase db(path);
    const Pipeline p(c);
    const Schedule before = p.schedule();
    const std::string e = error_of([&] { apply_best_schedule(p, {{32, 32}}, tsp, &db); });
    EXPECT_THAT(e, HasSubstr("record #" + std::to_string(id)));
    EXPECT_THAT(e, HasSubstr("does not apply to this pipeline"));
    EXPECT_EQ(p.schedule(), before);
    EXPECT_THAT(error_of([&] { apply_best_schedule(p, {{32, 32}}, Target::reference(), &db); }), HasSubstr("not tuned"));
}
