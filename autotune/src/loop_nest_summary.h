#pragma once
// What the host cost models read from a lowered loop nest: for every store, the loops around
// it (extent and kind, outermost first), its arithmetic per point, and each buffer access with
// the loops its index depends on. Footprints, reuse and traffic per cache level follow from
// that (analytic_cost_model.h); so do the learned model's features (loop_nest_features.h).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/lower.h"

namespace tessera::internal::autotune {

struct NestLoop {
    std::string name;
    int64_t extent = 1; ///< constant extent, or an estimate where lowering left it symbolic
    ForKind kind = ForKind::Serial;
};

struct NestAccess {
    std::string buffer;
    int bytes = 4;
    uint64_t depends = 0; ///< bit k: the index changes with loop k of the store's nest
    bool written = false; ///< the store itself (read too when the value loads the same element)
    bool read = true;
};

struct StoreNest {
    std::string buffer;
    std::vector<NestLoop> loops; ///< outermost first
    double ops_per_point = 0;    ///< arithmetic of the stored value (a multiply-add counts 2)
    std::vector<NestAccess> accesses;
    /// Points stored: the product of the loops' extents.
    double points() const;
};

struct LoopNestSummary {
    std::vector<StoreNest> stores;
    int allocations = 0;        ///< buffers the nest allocates (intermediates, staged copies)
    double allocated_bytes = 0;
    int loops = 0;              ///< For nodes in the statement
    int max_depth = 0;
};

/// Summarises `module.body`. Nests deeper than 64 loops are refused with tessera::Error.
LoopNestSummary summarize_loop_nest(const LoweredModule &module);

} // namespace tessera::internal::autotune
