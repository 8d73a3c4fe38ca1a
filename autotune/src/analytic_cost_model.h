#pragma once
// The analytic host cost model: a roofline per store of the lowered loop nest, against the
// machine's measured peaks (host_machine.h). For each store it takes the slowest of
//  - arithmetic: its flops at the measured per-core rate, scaled by the vector width used;
//  - issue of the register tile: the loads of the unrolled/vectorized innermost loops, at the
//    rate vector FMAs issue, and a spill penalty when the tile's accumulators and operands
//    need more vector registers than the ISA has;
//  - traffic at each cache level: for each access the elements it touches inside each loop,
//    summed over the accesses of the store; the outermost loop whose working set fits a cache
//    is where reuse ends, so the accesses' footprints there times the trips of the loops
//    outside it cross into that cache (L1 from L2, L2 from L3, L3 from memory), at the
//    measured bandwidths;
// divided by the parallel loop's speed-up (its extent balanced over the cores; the bandwidth
// past L2 is shared and is not). A ranking device, not a simulator: the learned model
// (learned_cost_model.h) corrects what it misses.
#include "host_machine.h"
#include "loop_nest_summary.h"

namespace tessera::internal::autotune {

struct AnalyticEstimate {
    double seconds = 0;
    double flops = 0;
    double compute_seconds = 0;  ///< arithmetic and issue, before parallelism
    double memory_seconds = 0;   ///< cache and memory traffic, before parallelism
    double l1_bytes = 0, l2_bytes = 0, beyond_bytes = 0; ///< bytes from L1, into L1, into L2
    double vector_fraction = 0;  ///< of the flops, in vectorized loops
    double mean_vector_width = 0; ///< lanes used / lanes available, flop-weighted
    double parallel_speedup = 1; ///< flop-weighted
    double parallel_launches = 0; ///< times a parallel loop starts
    double tile_loads_per_op = 0; ///< of the heaviest store's register tile
    double tile_registers = 0;    ///< vector registers its tile needs
};

AnalyticEstimate estimate_host_seconds(const LoopNestSummary &nest, const HostMachine &machine);

} // namespace tessera::internal::autotune
