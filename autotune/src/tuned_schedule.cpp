// Applying the best tuned schedule to a pipeline (tuned_schedule.h).
#include "tessera/tuned_schedule.h"

#include "tessera/error.h"

namespace tessera {

std::string ScheduleChoice::to_string() const {
    if (source == Source::Library) return "library schedule";
    return "tuned record #" + std::to_string(record_id) + " (" + measurement.to_string() + ")";
}

ScheduleChoice apply_best_schedule(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                   const Target &target, const TuningDatabase *db) {
    ScheduleChoice choice;
    if (!db) return choice;
    const TargetIdentity id = TargetIdentity::of(target);
    const Workload workload = Workload::of(pipeline, output_shapes);
    const std::optional<TuningRecord> best = db->best(workload, id);
    if (!best) return choice;
    try {
        pipeline.set_schedule(workload.from_canonical(best->schedule));
    } catch (const Error &e) {
        throw Error("tuning database " + db->path() + ": record #" + std::to_string(best->id) + " (" +
                    best->workload_description + " on " + best->target_name +
                    ") does not apply to this pipeline: " + e.what() +
                    "; it may come from another Tessera version (" + best->compiler_version + ")");
    }
    choice.source = ScheduleChoice::Source::Tuned;
    choice.record_id = best->id;
    choice.measurement = best->measurement;
    return choice;
}

} // namespace tessera
