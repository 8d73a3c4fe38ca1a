#pragma once
// Merging the preload's host DMAs on a streaming chip: loads of one Input into consecutive rows
// of one bank whose sources step by a constant offset become one DMA with one more view
// dimension (a weight matrix's tiles of one K block across its column blocks). Placement is
// untouched; only the number of transfers, each paying the host link's latency, drops.
#include <vector>

#include "instruction_scheduler.h"

namespace tessera::internal::chip {

/// `ops` with the host loads that come before any other instruction merged into as few DMAs as
/// the rule above allows (DRAM chips, or a preload writing some row twice: unchanged).
std::vector<ChipOp> merge_preload_loads(const std::vector<ChipOp> &ops, const chipsim::TimingModel &model);

} // namespace tessera::internal::chip
