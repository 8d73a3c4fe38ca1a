// The scheduler's differential suite through the host JIT: the same random legal schedules
// (tests/scheduler/test_differential.cpp's ScheduleGenerator) on the same operator cases, the
// same oracle (the reference evaluator, exact for integers, Tolerance::for_type for floats),
// realized with Target::host() instead of the interpreter — vectorized, unrolled and parallel
// loops, odd extents and tails included.
//
// The scheduler's file is compiled into this one, so the generator is shared rather than
// copied; its own TEST is renamed into an unused function here (it runs in test_scheduler).
// TESSERA_JIT_DIFF_SEEDS (default 10 per op, each one a JIT compilation) runs more.
#include <gtest/gtest.h>

#define TEST(suite, name) [[maybe_unused]] static void scheduler_suite_##suite##_##name()
#include "../scheduler/test_differential.cpp"
#undef TEST
#define TEST(suite, name) GTEST_TEST(suite, name)

#include "tessera/codegen/jit.h"

TEST(JitDifferential, RandomLegalSchedulesMatchTheReferenceOnTheHost) {
    const int seeds = env_int("TESSERA_JIT_DIFF_SEEDS", 10);
    const int first = env_int("TESSERA_DIFF_FIRST_SEED", 0);
    int checked = 0;
    for (const auto &make : op_cases()) {
        OpCase op = make();
        SCOPED_TRACE(op.name);
        Pipeline p(op.out);
        p.set_schedule(Schedule{});
        Buffer<> ref = evaluate_reference(op.out, op.shape, op.bindings);
        const Tolerance tol = Tolerance::for_type(ref.type(), op.reduction_length);
        int failures = 0;
        for (int seed = first; seed < first + seeds && failures < 3; ++seed) {
            ScheduleGenerator gen(static_cast<uint64_t>(seed) * 7919 + std::hash<std::string>{}(op.name));
            std::string json;
            try {
                gen.apply(p);
                json = p.schedule().to_json(-1);
                Buffer<> got = op.out.realize(op.shape, op.bindings, Target::host());
                Comparison c = compare(got, ref, tol);
                if (!c.equal) {
                    ++failures;
                    ADD_FAILURE() << op.name << " seed " << seed << ": " << c.message << "\nschedule: " << json << "\n"
                                  << lower(p, Target::host(), {op.shape}).to_string();
                }
            } catch (const std::exception &e) {
                ++failures;
                if (json.empty()) json = p.schedule().to_json(-1);
                ADD_FAILURE() << op.name << " seed " << seed << ": " << e.what() << "\nschedule: " << json;
            }
            ++checked;
        }
    }
    EXPECT_GE(checked, 12 * std::min(seeds, 1));
}
