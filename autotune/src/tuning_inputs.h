#pragma once
// What every tuner (host and chip) measures and checks candidates with.
#include <cstdint>

#include "tessera/func.h"

namespace tessera::internal::autotune {

/// Random inputs for every Input of the pipeline (floats in [-1, 1), small integers); throws
/// tessera::Error for an Input of symbolic shape.
Bindings random_tuning_inputs(const Pipeline &p, uint64_t seed);
/// The largest reduction any stage runs (for the float tolerance of the reference check).
int64_t longest_reduction(const Pipeline &p);

} // namespace tessera::internal::autotune
