// The analytic host cost model (analytic_cost_model.h).
#include "analytic_cost_model.h"

#include <algorithm>
#include <cmath>

namespace tessera::internal::autotune {

namespace {

bool depends_on(const NestAccess &a, size_t loop) { return (a.depends >> loop) & 1; }

/// Elements of `a` touched by one iteration of loop `level - 1` (the loops from `level` inward).
double footprint(const NestAccess &a, const StoreNest &s, size_t level) {
    double n = 1;
    for (size_t k = level; k < s.loops.size(); ++k)
        if (depends_on(a, k)) n *= double(s.loops[k].extent);
    return n;
}

/// Bytes crossing into a cache of `capacity` bytes for store `s`: where the working set of the
/// loops inside level j first fits, every access brings its footprint once per outer trip.
double traffic_into(const StoreNest &s, double capacity) {
    for (size_t level = 0; level <= s.loops.size(); ++level) {
        double working_set = 0;
        for (const NestAccess &a : s.accesses) working_set += footprint(a, s, level) * a.bytes;
        if (working_set > capacity && level < s.loops.size()) continue;
        double outer = 1;
        for (size_t k = 0; k < level; ++k) outer *= double(s.loops[k].extent);
        double bytes = 0;
        for (const NestAccess &a : s.accesses) bytes += footprint(a, s, level) * a.bytes * (a.read && a.written ? 2 : 1);
        return bytes * outer;
    }
    return 0; // unreachable: the innermost level always returns
}

} // namespace

AnalyticEstimate estimate_host_seconds(const LoopNestSummary &nest, const HostMachine &m) {
    AnalyticEstimate e;
    double weighted_width = 0, weighted_speedup = 0, heaviest = -1;
    const double vector_instructions_per_second = m.core_flops / (2.0 * m.lanes);
    for (const StoreNest &s : nest.stores) {
        const double points = s.points();
        const double flops = points * std::max(1.0, s.ops_per_point); // a copy still costs an op
        // The vector loop: the innermost vectorized one.
        int64_t width = 1;
        for (const NestLoop &l : s.loops)
            if (l.kind == ForKind::Vectorized) width = l.extent;
        const double efficiency = double(std::min<int64_t>(width, m.lanes)) / m.lanes;
        double compute = flops / (m.core_flops * efficiency);
        // The register tile: the trailing unrolled and vectorized loops.
        size_t tile_begin = s.loops.size();
        while (tile_begin > 0 && (s.loops[tile_begin - 1].kind == ForKind::Unrolled || s.loops[tile_begin - 1].kind == ForKind::Vectorized))
            --tile_begin;
        auto tile_registers_of = [&](const NestAccess &a) {
            double n = 1;
            for (size_t k = tile_begin; k < s.loops.size(); ++k)
                if (depends_on(a, k))
                    n *= s.loops[k].kind == ForKind::Vectorized ? std::ceil(double(s.loops[k].extent) / m.lanes) : double(s.loops[k].extent);
            return n;
        };
        double tile_points = 1;
        for (size_t k = tile_begin; k < s.loops.size(); ++k) tile_points *= double(s.loops[k].extent);
        double loads = 0, registers = 0;
        // The stored element stays in registers across the loop outside the tile when that loop
        // does not move it (a reduction's accumulators); otherwise it is loaded and stored each time.
        const bool accumulates = tile_begin > 0 && !depends_on(s.accesses.back(), tile_begin - 1);
        for (const NestAccess &a : s.accesses) {
            const double r = tile_registers_of(a);
            if (a.written) {
                registers += r;
                if (!accumulates) loads += r * (a.read ? 2 : 1);
            } else {
                loads += r;
                registers += std::min(r, 2.0); // operands are loaded as they are used
            }
        }
        const double tiles = points / tile_points;
        compute = std::max(compute, tiles * loads / vector_instructions_per_second);
        if (registers > m.vector_registers) compute *= 1.0 + (registers - m.vector_registers) / m.vector_registers;
        // Parallelism: the outermost parallel loop, its iterations dealt to the cores.
        double speedup = 1, launches = 0;
        for (size_t k = 0; k < s.loops.size(); ++k)
            if (s.loops[k].kind == ForKind::Parallel) {
                const double ext = double(s.loops[k].extent), threads = m.cores;
                speedup = ext / std::ceil(ext / threads);
                launches = 1;
                for (size_t o = 0; o < k; ++o) launches *= double(s.loops[o].extent);
                break;
            }
        // L1 serves the register tile's loads (the issue term above) at its own bandwidth.
        const double from_l1 = tiles * loads * m.lanes * 4.0, into_l1 = traffic_into(s, double(m.l1_bytes)),
                     into_l2 = traffic_into(s, double(m.l2_bytes));
        const double into_l3 = traffic_into(s, double(m.l3_bytes));
        const double core_memory = std::max(from_l1 / m.l1_bandwidth, into_l1 / m.l2_bandwidth);
        const double shared_memory = std::max(into_l2 / m.l3_bandwidth, into_l3 / m.memory_bandwidth);
        e.seconds += std::max({compute / speedup, core_memory / speedup, shared_memory});
        e.flops += flops;
        e.compute_seconds += compute;
        e.memory_seconds += std::max(core_memory, shared_memory);
        e.l1_bytes += from_l1;
        e.l2_bytes += into_l1;
        e.beyond_bytes += into_l2;
        if (width > 1) e.vector_fraction += flops;
        weighted_width += flops * efficiency;
        weighted_speedup += flops * speedup;
        e.parallel_launches += launches;
        if (flops > heaviest) {
            heaviest = flops;
            e.tile_loads_per_op = loads / std::max(1.0, tile_points / std::min<double>(double(width), m.lanes) * s.ops_per_point / 2);
            e.tile_registers = registers;
        }
    }
    if (e.flops > 0) {
        e.vector_fraction /= e.flops;
        e.mean_vector_width = weighted_width / e.flops;
        e.parallel_speedup = weighted_speedup / e.flops;
    }
    return e;
}

} // namespace tessera::internal::autotune
