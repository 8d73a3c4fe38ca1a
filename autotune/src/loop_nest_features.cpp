// The learned model's features (loop_nest_features.h).
#include "loop_nest_features.h"

#include <algorithm>
#include <cmath>

namespace tessera::internal::autotune {

namespace {

float log2p(double v) { return float(std::log2(1.0 + std::max(0.0, v))); }

} // namespace

std::vector<float> loop_nest_features(const LoopNestSummary &nest, const AnalyticEstimate &e, const HostMachine &m) {
    std::vector<float> f;
    f.reserve(kLoopNestFeatures);
    f.push_back(log2p(e.flops));
    f.push_back(log2p(e.seconds * 1e9));
    f.push_back(log2p(e.compute_seconds * 1e9));
    f.push_back(log2p(e.memory_seconds * 1e9));
    f.push_back(log2p(e.l1_bytes));
    f.push_back(log2p(e.l2_bytes));
    f.push_back(log2p(e.beyond_bytes));
    f.push_back(log2p(e.flops / std::max(1.0, e.beyond_bytes))); // arithmetic intensity past L2
    f.push_back(float(e.vector_fraction));
    f.push_back(float(e.mean_vector_width));
    f.push_back(float(e.parallel_speedup / m.cores));
    f.push_back(log2p(e.parallel_launches));
    f.push_back(float(e.tile_loads_per_op));
    f.push_back(float(e.tile_registers / m.vector_registers));
    f.push_back(float(nest.allocations));
    f.push_back(log2p(nest.allocated_bytes));
    f.push_back(float(nest.loops));
    f.push_back(float(nest.max_depth));
    f.push_back(float(nest.stores.size()));
    // The heaviest store's innermost loops, innermost first; absent levels read as extent 1.
    const StoreNest *heaviest = nullptr;
    for (const StoreNest &s : nest.stores)
        if (!heaviest || s.points() * s.ops_per_point > heaviest->points() * heaviest->ops_per_point) heaviest = &s;
    for (int level = 0; level < 8; ++level) {
        const bool present = heaviest && size_t(level) < heaviest->loops.size();
        const NestLoop *l = present ? &heaviest->loops[heaviest->loops.size() - 1 - size_t(level)] : nullptr;
        f.push_back(l ? log2p(double(l->extent) - 1) : 0.0f);
        f.push_back(l ? float(int(l->kind) + 1) : 0.0f);
    }
    f.push_back(heaviest ? float(heaviest->ops_per_point) : 0.0f);
    while (f.size() < size_t(kLoopNestFeatures)) f.push_back(0.0f);
    f.resize(kLoopNestFeatures);
    return f;
}

} // namespace tessera::internal::autotune
