// Replay through the library: a record of a registry op replays exactly on its chip once the
// database knows the op words that rebuild its workload; without them it says what is missing.
#include <gmock/gmock.h>

#include "tessera/codegen/chip_schedules.h"
#include "tessera/ops/registry.h"
#include "tessera/tuning_replay.h"
#include "tuning_db_test_util.h"

using namespace tessera;
using namespace tessera_test;
using testing::HasSubstr;

TEST(TuningDbReplay, ARecordReplaysOnceItsOpWordsAreKnown) {
    const std::string path = (unique_temp_dir() / "tuning.db").string();
    ops::OpInstance op = ops::build_op("matmul", {{"M", "128"}, {"N", "64"}, {"K", "64"}, {"dtype", "int8"}});
    const Target npu = Target::named("npu-edge");
    apply_chip_library_schedule(op.pipeline, npu, op.output_shapes);
    const MeasuredSchedule m = measure_on_chip(op.pipeline, op.output_shapes, npu);
    EXPECT_EQ(m.program_hash.size(), 16u);

    TuningDatabase db(path);
    // Stored as a tuner working on a pipeline would: no op words, a description of its own.
    const Workload w = Workload::of(op.pipeline, op.output_shapes);
    const int64_t id = db.add(w, TargetIdentity::of(npu), m);
    EXPECT_THAT(error_of([&] { replay_record(db, id); }), HasSubstr("does not say which operator-library op"));

    db.record_op_words(w, op.description());
    const ReplayResult r = replay_record(db, id);
    EXPECT_TRUE(r.reproduced) << r.to_string();
    EXPECT_EQ(r.measured.cycles, m.measurement.cycles);
    EXPECT_EQ(r.program_hash, m.program_hash);
    EXPECT_EQ(r.ratio, 1.0);
    EXPECT_THAT(r.to_string(), HasSubstr("reproduced exactly"));
    EXPECT_THAT(error_of([&] { db.record_op_words(w, ""); }), HasSubstr("needs the op's words"));
}
