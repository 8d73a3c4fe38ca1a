// BackgroundTasks (autotune/src/parallel_for.h): the chip tuner estimates compiled candidates on
// worker threads while it compiles the next; every task runs once, and a failure comes back.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "parallel_for.h"

using tessera::internal::autotune::BackgroundTasks;

TEST(BackgroundTasks, RunsEveryTaskOnceWhateverTheWorkers) {
    for (int workers : {0, 1, 3}) {
        std::vector<int> runs(200, 0);
        BackgroundTasks tasks(workers);
        for (size_t i = 0; i < runs.size(); ++i) tasks.push([&runs, i] { ++runs[i]; });
        tasks.finish();
        for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], 1) << "task " << i << " with " << workers << " workers";
    }
}

TEST(BackgroundTasks, FinishRethrowsAFailureAfterTheOthersRan) {
    std::atomic<int> ran{0};
    BackgroundTasks tasks(2);
    for (int i = 0; i < 10; ++i)
        tasks.push([&ran, i] {
            if (i == 4) throw std::runtime_error("estimate failed");
            ++ran;
        });
    EXPECT_THROW(tasks.finish(), std::runtime_error);
    EXPECT_EQ(ran.load(), 9);
}
