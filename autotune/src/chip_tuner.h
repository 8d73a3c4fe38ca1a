#pragma once
// The chip half of autotune() (autotune.h): the search over the directives the chip backend
// honours, Z3-checked, measured in simulated cycles.
#include "tessera/autotune.h"

namespace tessera::internal::autotune {

TuneResult autotune_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                         const TuneOptions &options);

} // namespace tessera::internal::autotune
