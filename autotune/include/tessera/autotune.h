#pragma once
// The autotuner (DESIGN.md §6): searches the schedules of a pipeline for a target and returns
// the fastest it measured. It tunes for the host CPU: the search space is generated from the
// algorithm (fusion of each producer, parallel and vector loops, register tiles, reduction
// blocks, column strips, tile-loop order and packing of every stage). Small spaces are measured
// exhaustively. Larger ones are searched multi-fidelity: each round lowers a population of
// candidates, ranks them by two cost models — an analytic roofline of the loop nest against the
// machine's measured peaks, and gradient-boosted trees (XGBoost) trained on this run's
// measurements and the tuning database's earlier ones — measures the best few plus a few drawn
// at random (so the models' accuracy is known on candidates they did not pick), retrains, and
// evolves the population by mutation and crossover of the fastest. Candidates are measured by
// the JIT (interleaved repetitions, medians), and each is checked against the reference
// evaluator on a sample of points.
//
// On a chip target (tsp-mini, npu-edge, a target JSON) it searches the directives the chip
// backend honours, measured in exact simulated cycles (timing-only runs in threads; the winner
// is then run functionally and checked against the reference evaluator): the library schedule
// first, then for a matmul (or conv) product its output tile (accumulator rows, and columns on
// a dynamically issued chip) and its accumulator bank (store_in(ACC, bank)); every such
// candidate is first checked by a Z3 model of the target built from chipsim's facts (bank and
// accumulator capacity, the MXM's unit width, banks that exist and can be chosen), and the ones
// Z3 proves infeasible are counted, their reasons kept, and never compiled. Other pipelines
// (the chip's vector/loop-nest path) search the loop knobs of the host space with the chip's
// vector lanes. Chip searches are deterministic: same pipeline, target, seed and budget, same
// result, whatever the thread count.
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
    /// Threads that compile candidates and compute their model features (0: one per core).
    /// Timing always runs alone.
    int threads = 0;
    /// Candidates lowered and ranked by the cost models per round of the search.
    int population = 192;
    /// Measures a candidate instead of compiling and timing it on the host: a simulator, or a
    /// test's own cost function (then the search is deterministic). Returns the cost the search
    /// minimises, in "seconds"; must be positive. Such candidates are not run, so not verified.
    std::function<double(const Schedule &)> measure;
    /// Reports each measured trial as it completes (e.g. a progress bar); may be empty.
    /// bound_seconds is the problem bound (TuneResult::bound_seconds), 0 while unknown.
    std::function<void(int trial, int budget, double best_seconds, double bound_seconds)> progress;
};

/// One measured candidate.
struct TuneTrial {
    int trial = 0;          ///< 0, 1, ... in the order measured
    std::string candidate;  ///< the knob values, e.g. "matmul.s1: tile 4x32 k/256 parallel"
    double seconds = 0;     ///< the median of its repetitions (chips: cycles at the chip's clock)
    int64_t cycles = 0;     ///< chips: its exact simulated kernel cycles
    double best_so_far = 0; ///< seconds
    /// The models' predictions, made before it was measured (0: that model had none yet).
    double predicted_analytic = 0, predicted_learned = 0;
    /// Drawn at random from the ranked population (not for its rank): these trials measure
    /// the models' accuracy.
    bool sampled = false;
};

/// How well one cost model predicted the sampled trials of a run.
struct CostModelAccuracy {
    std::string model;             ///< "analytic" or "learned"
    int samples = 0;               ///< sampled trials it had a prediction for
    double spearman = 0;           ///< rank correlation of predicted and measured seconds
    double mean_relative_error = 0; ///< mean |predicted - measured| / measured
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
    int ranked = 0;            ///< lowered and ranked by the cost models
    int measured = 0;
    int wrong = 0;             ///< measured but not equal to the reference (never the best)
    int64_t best_record = 0;   ///< the best's id in TuneOptions::database (0: none)
    bool exhaustive = false;   ///< every candidate of the space was measured
    /// The problem bound: the algorithm's flops (each Func's arithmetic once per point it must
    /// compute) at the measured peak of every core, or its inputs and outputs crossing memory
    /// once at the measured bandwidth, whichever is longer.
    double bound_seconds = 0;
    /// Chips: the best's exact kernel cycles, the library schedule's (0: the op has none), and
    /// the problem bound in cycles (chipsim::TimingModel::problem_bound) with its limiter.
    int64_t best_cycles = 0, library_cycles = 0;
    double bound_cycles = 0;
    std::string bound_limiter;
    /// Chips: candidates the Z3 model of the target proved infeasible (never compiled), and
    /// its reasons, each once, in the order first met.
    int proven_infeasible = 0;
    std::vector<std::string> infeasible_reasons;
    /// Chips: candidates Z3 approved that the backend still refused (Z3's misses; 0 expected).
    int approved_but_refused = 0;
    /// Chips: candidates whose program was one compiled already (directives the compiler
    /// ignores there): neither ranked nor measured.
    int same_program = 0;
    double gap_to_bound() const { return bound_seconds > 0 ? best_seconds / bound_seconds : 0; }
    /// One entry per model: "analytic", then "learned".
    std::vector<CostModelAccuracy> model_accuracy;
    int database_samples = 0;  ///< earlier records the learned model was trained on
    std::string machine;       ///< the measured peaks, in words
    std::vector<TuneTrial> history;
    /// Measurements until the best so far was within `seconds` (the count of trials; 0: never).
    int trials_to_reach(double seconds) const;
    /// A table of the history and the best, for people.
    std::string to_string() const;
};

/// Tunes `pipeline` (its outputs of `output_shapes`) for `target` with random inputs. Records
/// nothing on the pipeline: apply the result with `pipeline.set_schedule(result.best)`. Throws
/// tessera::Error for a target it cannot tune (the reference and interpreter targets), and when
/// no candidate compiles.
TuneResult autotune(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                    const TuneOptions &options = {});

} // namespace tessera
