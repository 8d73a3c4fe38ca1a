#pragma once
// Sweeps (DESIGN.md §6): every point of a grid of operator-library ops, shapes, dtypes and
// targets, tuned (or run with its library schedule) and recorded in the tuning database.
//
// A spec is a JSON file:
//   {"name": "matmul-shapes",                               (optional, kept in the records)
//    "ops": [{"op": "matmul",                                a registry op (ops/registry.h)
//             "grid": {"M": [64, 128], "N": [64], "K": [64]}, values per parameter
//             "dtypes": ["int8", "fp32"]}],                  (optional: the "dtype" parameter)
//    "targets": ["tsp-mini", "npu-edge", "host"],            built-in chips, target files, host
//    "tuner": {"budget": 16, "repetitions": 3, "seed": 1, "time_s": 0}}   (optional)
// The points are every op entry x the product of its grid x every target, in that order.
//
// How a point is measured: on the host with autotune() (or, without tuning, the host library
// schedule timed `repetitions` times); on a chip, where no chip tuner exists yet, the library
// schedule simulated by chipsim (exact cycles). Each point is one record, stored together with
// the point's completion mark in one transaction (TuningDatabase::add_sweep_point): a sweep
// killed at any moment resumes by skipping completed points, and loses nothing it stored.
// A point's result does not depend on where or when it ran: it reads nothing from the database
// (the tuners here start from the algorithm and the seed alone), so ranks and orders agree.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/tuning_db.h"

namespace tessera {

/// The tuner settings of a sweep.
struct SweepTuner {
    int budget = 16;        ///< host: candidates measured per point
    int repetitions = 3;    ///< host: timed runs per candidate (the median counts)
    uint64_t seed = 1;      ///< of the search and the random inputs
    double time_s = 0;      ///< host: seconds per point at most (0: no limit)
};

/// One point of a sweep.
struct SweepPoint {
    std::string op;                            ///< a registry op
    std::map<std::string, std::string> params; ///< as the spec gives them
    std::string target;                        ///< as the spec names it
    std::string words;                         ///< the op's words with defaults filled in
    bool chip = false;
    bool tune = true;                          ///< host only: autotune (false: library schedule)
    std::string key;                           ///< what completion marks are keyed by
    /// "matmul K=64 M=64 N=64 dtype=int8 on tsp-mini".
    std::string description() const { return words + " on " + target; }
};

/// A parsed spec: its points in order.
struct SweepSpec {
    std::string name;
    SweepTuner tuner;
    std::vector<SweepPoint> points;

    /// Parses a spec; `tune` false runs every point's library schedule (`--no-tune`). Throws
    /// tessera::Error as "<origin>:<line>:<column>: <field>: why" for malformed JSON, unknown
    /// fields, ops, parameters, dtypes and targets, and empty grids.
    static SweepSpec parse(const std::string &text, const std::string &origin, bool tune = true);
    /// parse() of a file's text.
    static SweepSpec load(const std::string &path, bool tune = true);
};

/// Measures one point (compiles, tunes or simulates); stores nothing. Throws tessera::Error
/// when the point cannot run on its target.
MeasuredSchedule measure_sweep_point(const SweepSpec &spec, const SweepPoint &point);

/// Stores a point's measurement and marks it complete (one transaction); returns the record id
/// (the existing one when another process completed the point first).
int64_t store_sweep_point(TuningDatabase &db, const SweepPoint &point, const MeasuredSchedule &measured);

} // namespace tessera
