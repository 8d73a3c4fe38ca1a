// The differential test of the project's core idea — one algorithm, many schedules, identical
// results: for each of a dozen operators of tessera::ops on odd shapes, random legal schedules
// (splits, tiles, reorders, fuses, vectorize/unroll/parallel, inline/root/compute_at/store_at,
// staging of Funcs and Inputs, store_in, layouts) run by the loop-IR interpreter must reproduce
// the reference evaluator (differential_cases.h).
//
// CI runs 50 fixed seeds per op. TESSERA_DIFF_SEEDS=1000 runs more; TESSERA_DIFF_FIRST_SEED
// moves the window.
#include "differential_cases.h"

using namespace tessera;

TEST(Differential, RandomLegalSchedulesMatchTheReference) {
    difftest::check_random_schedules(Target::interpreter(),
                                     difftest::env_int("TESSERA_DIFF_SEEDS", 50),
                                     difftest::env_int("TESSERA_DIFF_FIRST_SEED", 0));
}
