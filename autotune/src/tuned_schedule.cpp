// Applying the best tuned schedule to a pipeline (tuned_schedule.h).
#include "tessera/tuned_schedule.h"

#include <cstdlib>
#include <mutex>

#include "tessera/error.h"
#include "tessera/realize.h"

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

namespace {

std::mutex database_mutex;
std::string database_path; // set_tuning_database's; empty: the environment's
thread_local ScheduleChoice last_choice;

/// The chooser realize() and compile_to_library() call (realize.h).
std::string choose_from_database(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &shapes,
                                 const Target &target) {
    std::string path;
    {
        std::lock_guard<std::mutex> lock(database_mutex);
        path = database_path;
    }
    if (path.empty())
        if (const char *env = std::getenv("TESSERA_TUNING_DB")) path = env;
    last_choice = ScheduleChoice();
    if (path.empty()) return "";
    const TuningDatabase db(path, {.read_only = true});
    last_choice = apply_best_schedule(pipeline, shapes, target, &db);
    return last_choice.source == ScheduleChoice::Source::Tuned ? last_choice.to_string() : "";
}

[[maybe_unused]] const bool registered = [] {
    internal::register_schedule_chooser(choose_from_database);
    return true;
}();

} // namespace

void set_tuning_database(const std::string &path) {
    std::lock_guard<std::mutex> lock(database_mutex);
    database_path = path;
}

ScheduleChoice last_schedule_choice() { return last_choice; }

namespace internal {
int link_schedule_chooser() { return 0; }
} // namespace internal

} // namespace tessera
