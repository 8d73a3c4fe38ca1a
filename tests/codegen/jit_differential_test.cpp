// The scheduler's differential suite through the host JIT: the same random legal schedules
// (tests/scheduler/differential_cases.h) on the same operator cases, the same oracle (the
// reference evaluator, exact for integers, Tolerance::for_type for floats), realized with
// Target::host() instead of the interpreter — vectorized, unrolled and parallel loops, odd
// extents and tails included.
//
// TESSERA_JIT_DIFF_SEEDS (default 10 per op, each one a JIT compilation) runs more;
// TESSERA_DIFF_FIRST_SEED moves the window.
#include "differential_cases.h"

#include "tessera/codegen/jit.h"

using namespace tessera;

TEST(JitDifferential, RandomLegalSchedulesMatchTheReferenceOnTheHost) {
    difftest::check_random_schedules(Target::host(),
                                     difftest::env_int("TESSERA_JIT_DIFF_SEEDS", 10),
                                     difftest::env_int("TESSERA_DIFF_FIRST_SEED", 0));
}
