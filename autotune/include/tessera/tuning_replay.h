#pragma once
// Measuring operator-library workloads for the tuning database, and replaying stored records.
//
// A record is replayable when it says how to rebuild its workload (the op words of the operator
// registry, TuningRecord::op_words — or a description that is such words) and its target's
// whole description is stored. Replay rebuilds the op, applies the stored schedule, compiles
// and measures again:
//   - on a chip the program bytes (their hash) and the cycles must come out exactly as stored;
//     any difference is a failed replay (the code generator or the simulator changed);
//   - on the host the time is measured again and compared as a ratio (timings vary).
//
//     TuningDatabase db("tuning.db", {.read_only = true});
//     ReplayResult r = replay_record(db, 12);
//     if (!r.reproduced) std::cerr << r.to_string();
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/ops/registry.h"
#include "tessera/target.h"
#include "tessera/tuning_db.h"

namespace tessera {

/// Compiles `pipeline` with the schedule it has for a chip target and simulates its timing
/// (timing only: the cycles of a functional run, without computing values). The result holds
/// the cycles, the program's hash and chipsim's figures (details), ready for the database.
MeasuredSchedule measure_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const Target &target);

/// Compiles `pipeline` with its schedule for the host (JIT) and times `repetitions` runs with
/// these inputs (after one untimed warm-up run).
MeasuredSchedule measure_on_host(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const Target &target, const Bindings &bindings, int repetitions);

/// Rebuilds an op of the registry from its words ("matmul K=64 M=64 N=64 dtype=int8", as
/// OpInstance::description() writes them). Throws tessera::Error naming `what` when the words
/// name no op or a bad parameter.
ops::OpInstance op_from_words(const std::string &words, const std::string &what);

/// The Target a stored target identity names: the built-in chip of that name when its
/// description is unchanged, else the stored description (written to a temporary file that
/// lives as long as the process needs it). The host is the host. Throws tessera::Error when
/// the description is not stored (schema 1 records).
Target target_of_identity(const TargetIdentity &identity);

/// What replaying a record found.
struct ReplayResult {
    TuningRecord record;
    Measurement measured;          ///< now
    std::string program_hash;      ///< chips: the program's hash now
    bool reproduced = false;       ///< chips: same program hash (when stored) and cycles; host: true
    /// measured / stored: cycles on chips (1 when reproduced), median seconds on the host.
    double ratio = 0;
    bool same_machine = true;      ///< host: this CPU is the one the record was measured on
    std::vector<std::string> differences; ///< what differed, for people
    std::string to_string() const;
};

/// Replays record `id` of `db`. Throws tessera::Error naming the record when it cannot be
/// replayed (no op words, no stored target description, a schedule that no longer applies).
ReplayResult replay_record(const TuningDatabase &db, int64_t id);

} // namespace tessera
