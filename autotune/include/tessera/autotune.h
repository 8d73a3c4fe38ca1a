#pragma once
// The autotuner (DESIGN.md §6): searches the schedules of a pipeline for a target and returns
// the fastest it measured. This first step tunes for the host CPU: the search space is generated
// from the algorithm (fusion of each producer, parallel and vector loops, register tiles and
// reduction blocks of every stage), candidates are measured by the JIT (interleaved repetitions,
// medians) and each measured candidate is checked against the reference evaluator on a sample of
// points; small spaces are searched exhaustively, larger ones by an evolutionary search (random
// candidates, then mutations of the best). Chips, Z3 feasibility, cost models and the tuning
// database join in later steps (issue 14).
//
//     TuneOptions o;
//     o.budget = 48;
//     TuneResult r = autotune(pipeline, {{M, N}}, Target::host(), o);
//     pipeline.set_schedule(r.best);   // or save r.best.to_json() for `tessera run --schedule`
//
// No Z3, XGBoost or LLVM header here.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/schedule.h"
#include "tessera/target.h"

namespace tessera {

class TuningDatabase;

/// Options of autotune().
struct TuneOptions {
    /// Candidates measured at most.
    int budget = 64;
    /// Wall-clock seconds at most (0: no limit). Host timings, and so a search stopped by time,
    /// are not reproducible run to run.
    double time_budget_s = 0;
    /// Seed of every random choice: the same pipeline, target, seed and budget generate the
    /// same candidates in the same order.
    uint64_t seed = 1;
    /// Host: timed calls per candidate (interleaved across a batch of candidates; the median
    /// counts).
    int repetitions = 5;
    /// Where every correct measurement is recorded as it is made (tuning_db.h), or none.
    TuningDatabase *database = nullptr;
    /// Reports each measured trial as it completes (e.g. a progress bar); may be empty.
    std::function<void(int trial, int budget, double best_seconds)> progress;
};

/// One measured candidate.
struct TuneTrial {
    int trial = 0;          ///< 0, 1, ... in the order measured
    std::string candidate;  ///< the knob values, e.g. "matmul.s1: tile 4x32 k/256 parallel"
    double seconds = 0;     ///< the median of its repetitions
    double best_so_far = 0; ///< seconds
};

/// What autotune() found.
struct TuneResult {
    Schedule best;             ///< the fastest schedule measured
    std::string best_candidate;
    double best_seconds = 0;   ///< its median time
    std::vector<double> best_samples; ///< its timed repetitions, in the order run
    /// The algorithm's useful flops (2 per point of each reduction) per second at the best
    /// schedule. (The problem bound against the host's measured peaks is the next step.)
    double gflops = 0;
    int64_t space_size = 0;    ///< candidates in the search space
    int generated = 0;         ///< candidates drawn (duplicates removed)
    int infeasible = 0;        ///< refused by lowering or compilation
    int measured = 0;
    int wrong = 0;             ///< measured but not equal to the reference (never the best)
    int64_t best_record = 0;   ///< the best's id in TuneOptions::database (0: none)
    bool exhaustive = false;   ///< every candidate of the space was measured
    std::vector<TuneTrial> history;
    /// A table of the history and the best, for people.
    std::string to_string() const;
};

/// Tunes `pipeline` (its outputs of `output_shapes`) for `target` with random inputs. Records
/// nothing on the pipeline: apply the result with `pipeline.set_schedule(result.best)`. Throws
/// tessera::Error for a target it cannot tune yet (chips: issue 14's next step), and when no
/// candidate compiles.
TuneResult autotune(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                    const TuneOptions &options = {});

} // namespace tessera
