// The host runtime's thread pool (codegen/cpu/runtime/tessera_runtime.h), driven directly and
// through a JIT kernel: every iteration of a parallel loop runs exactly once and the loop
// returns only when all have finished, whether the workers are still spinning from the loop
// before or have gone to sleep; the thread-count setting is how many threads run a loop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/ops.h"
#include "tessera/reference.h"
#include "tessera_runtime.h"

using namespace tessera;

namespace {

/// Restores the default thread count when a test ends, pass or fail.
struct ThreadCountGuard {
    ~ThreadCountGuard() { set_num_threads(0); }
};

struct Counts {
    std::vector<std::atomic<int>> runs;
    explicit Counts(int n) : runs(n) {}
};

int32_t count_run(void *closure, int32_t i) {
    static_cast<Counts *>(closure)->runs[i].fetch_add(1);
    return 0;
}

/// The threads a loop ran on; each task waits (up to 20 s) until `expected` threads have
/// arrived, so one thread cannot take every iteration before the others wake.
struct Arrivals {
    std::mutex mutex;
    std::set<std::thread::id> threads;
    size_t expected = 0;
};

int32_t arrive_and_wait(void *closure, int32_t) {
    auto *a = static_cast<Arrivals *>(closure);
    {
        std::lock_guard<std::mutex> lock(a->mutex);
        a->threads.insert(std::this_thread::get_id());
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        {
            std::lock_guard<std::mutex> lock(a->mutex);
            if (a->threads.size() >= a->expected) return 0;
        }
        std::this_thread::yield();
    }
    return 7; // the setting's threads never all took part
}

} // namespace

/// Which thread ran each iteration of one loop.
struct RunBy {
    std::vector<std::thread::id> thread;
    explicit RunBy(int n) : thread(n) {}
};

int32_t record_thread_after_work(void *closure, int32_t i) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    static_cast<RunBy *>(closure)->thread[i] = std::this_thread::get_id();
    return 0;
}

TEST(Runtime, EachThreadRunsItsOwnPartOfTheLoop) {
    // The pool cuts a loop into one contiguous part per thread, the caller's first, so the same
    // thread touches the same data in every call (a pool handing out iterations one by one
    // from a single counter interleaves them between the threads). A thread kept off its CPU
    // has its part taken by the other, which on a busy machine happens now and then.
    ThreadCountGuard guard;
    set_num_threads(2);
    const int loops = 200, extent = 8;
    int caller_ran_its_part = 0;
    for (int loop = 0; loop < loops; ++loop) {
        RunBy by(extent);
        ASSERT_EQ(tessera_rt_parallel_for(record_thread_after_work, &by, 0, extent), 0);
        bool all = true;
        for (int i = 0; i < extent / 2; ++i) all = all && by.thread[i] == std::this_thread::get_id();
        caller_ran_its_part += all;
    }
    EXPECT_GE(caller_ran_its_part, loops / 2) << "of " << loops << " loops";
}

TEST(Runtime, BackToBackLoopsRunEveryIterationOnce) {
    ThreadCountGuard guard;
    for (int threads : {2, 4}) {
        set_num_threads(threads);
        for (int loop = 0; loop < 3000; ++loop) {
            const int extent = 1 + loop % 64;
            Counts c(extent);
            ASSERT_EQ(tessera_rt_parallel_for(count_run, &c, 0, extent), 0);
            for (int i = 0; i < extent; ++i) ASSERT_EQ(c.runs[i].load(), 1) << "loop " << loop << ", iteration " << i;
            // Now and then a pause longer than the workers spin, so they fall asleep and the
            // next loop wakes them.
            if (loop % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
}

TEST(Runtime, ThreadCountSettingIsHowManyThreadsRunALoop) {
    ThreadCountGuard guard;
    for (int threads : {3, 1, 2, 4, 1}) {
        set_num_threads(threads);
        ASSERT_EQ(num_threads(), threads);
        // As many iterations as threads, each waiting for the others: all of them take part.
        Arrivals a;
        a.expected = static_cast<size_t>(threads);
        ASSERT_EQ(tessera_rt_parallel_for(arrive_and_wait, &a, 0, threads), 0) << threads << " threads";
        EXPECT_EQ(a.threads.size(), a.expected);
        if (threads == 1) EXPECT_EQ(*a.threads.begin(), std::this_thread::get_id());
        // More iterations than threads: never more threads than the setting.
        Arrivals b;
        b.expected = 1;
        ASSERT_EQ(tessera_rt_parallel_for(arrive_and_wait, &b, 0, 64), 0);
        EXPECT_LE(b.threads.size(), static_cast<size_t>(threads));
    }
}

TEST(Runtime, KernelCalledBackToBackWithChangingThreadCounts) {
    // The library matmul (a parallel zero fill, then column strips in parallel) called many
    // times in a row, alternating inputs and thread counts: each result is the reference's.
    ThreadCountGuard guard;
    const int m = 64, n = 128, kk = 64;
    Input A(Float(32), {m, kk}, "A"), B(Float(32), {kk, n}, "B");
    ops::Tensor out = ops::matmul(A, B);
    Pipeline p(out.func());
    host_schedules::matmul(p, m, n, kk);
    CompiledKernel k = compile_jit(p, {{m, n}}, Target::host());
    Buffer<float> a[2] = {Buffer<float>({m, kk}), Buffer<float>({m, kk})}, b({kk, n}), got({m, n});
    a[0].fill_random(1);
    a[1].fill_random(2);
    b.fill_random(3);
    Buffer<> ref[2] = {evaluate_reference(out.func(), {m, n}, {{A, a[0]}, {B, b}}),
                       evaluate_reference(out.func(), {m, n}, {{A, a[1]}, {B, b}})};
    for (int call = 0; call < 400; ++call) {
        set_num_threads(1 + call % 3);
        ASSERT_EQ(k.call({a[call % 2], b, got}), 0);
        Comparison c = compare(got, ref[call % 2], Tolerance::for_type(Float(32), kk));
        ASSERT_TRUE(c.equal) << "call " << call << ": " << c.message;
    }
}
