#pragma once
// Settings of the host runtime that compiled kernels run on.

namespace tessera {

/// Sets how many threads parallel loops of host kernels use (the calling thread included).
/// n <= 0 restores the default: $TESSERA_NUM_THREADS if set, else the number of cores.
void set_num_threads(int n);

/// How many threads parallel loops of host kernels use.
int num_threads();

} // namespace tessera
