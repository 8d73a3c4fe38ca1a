#pragma once
// Runs independent pieces of the tuner's work (ranking, compiling, simulating) on threads.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::internal::autotune {

/// Runs fn(0) ... fn(n - 1) on up to `threads` threads; rethrows the first exception after all
/// have finished.
void parallel_for(size_t n, int threads, const std::function<void(size_t)> &fn);

/// Tasks run on `workers` threads as they are pushed, while the pushing thread goes on with
/// work only it can do (the chip tuner compiles on one thread and estimates on the others).
/// finish() lends the calling thread to what is left, waits for all, and rethrows the first
/// exception; the destructor finishes too (swallowing it).
class BackgroundTasks {
public:
    explicit BackgroundTasks(int workers);
    ~BackgroundTasks();
    BackgroundTasks(const BackgroundTasks &) = delete;
    BackgroundTasks &operator=(const BackgroundTasks &) = delete;

    void push(std::function<void()> task);
    void finish();

private:
    void work();

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> tasks_;
    bool closed_ = false;
    std::exception_ptr failure_;
    std::vector<std::thread> workers_;
};

} // namespace tessera::internal::autotune
