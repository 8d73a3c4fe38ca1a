#pragma once
// Reusing tuned schedules: a later compile of a tuned workload takes the best record for its
// target from the tuning database.
//
// dsl and codegen cannot depend on autotune (DESIGN.md §2), so realize() and
// compile_to_library() do not open databases themselves: they call the schedule chooser hook
// of realize.h, which this library registers when it is loaded (tessera/tessera.h makes sure it
// is). With a database — set_tuning_database(path), or else the environment variable
// TESSERA_TUNING_DB — each realize on a host or chip target and each fixed-shape
// compile_to_library uses the best record for its workload and target for that call only (the
// pipeline keeps its own schedule), else the pipeline's schedule (the library schedule its
// builder recorded). last_schedule_choice() and LibraryFiles::schedule say which was used:
//
//     set_tuning_database("tuning.db");
//     auto out = p.realize({{M, N}}, bindings, Target::named("tsp-mini"));
//     std::cout << last_schedule_choice().to_string() << "\n";   // "tuned record #12 (...)"
//
// apply_best_schedule() does the same explicitly (the CLI's `run --db`), changing the
// pipeline's schedule.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/target.h"
#include "tessera/tuning_db.h"

namespace tessera {

/// Which schedule a compile used.
struct ScheduleChoice {
    enum class Source { Tuned, Library };
    Source source = Source::Library;
    int64_t record_id = 0;    ///< Source::Tuned: the record applied.
    Measurement measurement;  ///< Source::Tuned: what that record measured.
    /// "tuned record #12 (18342 cycles)" or "library schedule".
    std::string to_string() const;
};

/// Replaces `pipeline`'s schedule with the best record of its workload (at these output shapes)
/// on `target` in `db`, renamed into the pipeline's names, and says so. Without a record — or
/// with no database (`db` null) — the pipeline keeps the schedule it has (the library schedule
/// its builder recorded, or the caller's) and the choice says "library schedule". Throws
/// tessera::Error naming the record when its schedule does not apply to the pipeline (the
/// pipeline's schedule is then unchanged), and for targets nothing is tuned for.
ScheduleChoice apply_best_schedule(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                   const Target &target, const TuningDatabase *db);

/// The tuning database realize() and compile_to_library() consult from now on, in every thread;
/// "" goes back to TESSERA_TUNING_DB (unset or empty: none). The file is opened read-only at
/// each call, so records a tuner adds meanwhile are seen.
void set_tuning_database(const std::string &path);

/// What the latest realize (host or chip target) or fixed-shape compile_to_library on this
/// thread used: a tuned record, or the library schedule when no database or no record for the
/// workload and target was found.
ScheduleChoice last_schedule_choice();

namespace internal {
/// Defined beside the chooser's registration; referenced below so that every program including
/// this header loads libtessera_autotune, and its chooser is registered (see backends.h).
int link_schedule_chooser();
[[maybe_unused]] inline const int schedule_chooser_linked = link_schedule_chooser();
} // namespace internal

} // namespace tessera
