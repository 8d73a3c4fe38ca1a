#pragma once
// The learned model's features of a candidate (TVM's idea, on our loop nest): the analytic
// model's terms (flops, traffic per cache level, arithmetic intensity, vector and parallel use,
// the register tile's loads and registers, its own estimate), the nest's shape (loops, depth,
// allocations and their bytes — staging and packing), and the innermost eight loops of the
// heaviest store, each as log2 extent and kind. Logarithms keep sizes comparable across
// problems. A fixed length: kLoopNestFeatures.
#include <vector>

#include "analytic_cost_model.h"

namespace tessera::internal::autotune {

constexpr int kLoopNestFeatures = 36;

std::vector<float> loop_nest_features(const LoopNestSummary &nest, const AnalyticEstimate &estimate, const HostMachine &machine);

} // namespace tessera::internal::autotune
