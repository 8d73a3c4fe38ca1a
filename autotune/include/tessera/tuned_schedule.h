#pragma once
// Reusing tuned schedules: a later compile of a tuned workload takes the best record for its
// target from the tuning database.
//
// dsl cannot depend on autotune (DESIGN.md §2), so realize() does not open databases itself.
// The hook is this function, called before realize or compile_to_library — by the CLI, by
// library builds and by user code — with the database from --db or TESSERA_TUNING_DB:
//
//     ScheduleChoice used = apply_best_schedule(p, {{M, N}}, target, db);
//     auto out = p.realize({{M, N}}, bindings, target);
//     std::cout << "schedule: " << used.to_string() << "\n";   // "tuned record #12 (...)"
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

} // namespace tessera
