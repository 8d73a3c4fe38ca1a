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

} // namespace tessera::internal::autotune
