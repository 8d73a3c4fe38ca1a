// parallel_for (parallel_for.h): a pool of `threads` workers pulling indices from a counter.
#include "parallel_for.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::internal::autotune {

void parallel_for(size_t n, int threads, const std::function<void(size_t)> &fn) {
    const size_t workers = std::min<size_t>(n, size_t(std::max(1, threads)));
    if (workers <= 1) {
        for (size_t i = 0; i < n; ++i) fn(i);
        return;
    }
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    std::exception_ptr failure;
    std::mutex failure_mutex;
    for (size_t w = 0; w < workers; ++w)
        pool.emplace_back([&] {
            for (size_t i; (i = next++) < n;) {
                try {
                    fn(i);
                } catch (...) {
                    std::lock_guard<std::mutex> lock(failure_mutex);
                    if (!failure) failure = std::current_exception();
                }
            }
        });
    for (std::thread &t : pool) t.join();
    if (failure) std::rethrow_exception(failure);
}

BackgroundTasks::BackgroundTasks(int workers) {
    for (int w = 0; w < workers; ++w) workers_.emplace_back([this] { work(); });
}

BackgroundTasks::~BackgroundTasks() {
    try {
        finish();
    } catch (...) {
        // finish() was not called: the caller is unwinding from an error of its own
    }
}

void BackgroundTasks::push(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        tasks_.push_back(std::move(task));
    }
    ready_.notify_one();
}

void BackgroundTasks::work() {
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            ready_.wait(lock, [this] { return closed_ || !tasks_.empty(); });
            if (tasks_.empty()) return; // closed and drained
            task = std::move(tasks_.front());
            tasks_.pop_front();
        }
        try {
            task();
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!failure_) failure_ = std::current_exception();
        }
    }
}

void BackgroundTasks::finish() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
    }
    ready_.notify_all();
    work();
    for (std::thread &t : workers_) t.join();
    workers_.clear();
    std::exception_ptr failure;
    std::swap(failure, failure_);
    if (failure) std::rethrow_exception(failure);
}

} // namespace tessera::internal::autotune
