#pragma once
// Runs independent pieces of the tuner's work (ranking, compiling, simulating) on threads.
#include <cstddef>
#include <functional>

namespace tessera::internal::autotune {

/// Runs fn(0) ... fn(n - 1) on up to `threads` threads; rethrows the first exception after all
/// have finished.
void parallel_for(size_t n, int threads, const std::function<void(size_t)> &fn);

} // namespace tessera::internal::autotune
