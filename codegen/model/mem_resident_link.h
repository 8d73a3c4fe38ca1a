#pragma once
// Linking a model's kernels on a chip without DRAM (tsp-mini): the values kernels pass each
// other stay in the chip's memory (mem_resident_link.cpp).
#include <optional>
#include <string>
#include <vector>

#include "tessera/codegen/chip_model.h"

namespace tessera::internal {

/// A model's kernels (recompiled where they leave rows to resident values) and the programs
/// that run them.
struct MemLinkedModel {
    std::vector<ChipModelKernel> kernels;
    std::vector<ChipModelSegment> programs;
};

/// On a chip without DRAM, links consecutive kernels into one statically scheduled program
/// wherever a value one of them stores is read by a later one (same dtype, both dense): in the
/// same bytes, or in another layout whose tile rows are whole rows of the writer's, or columns
/// of blocks of them (region_layout.h: the reader's rows are then copied in another order, or
/// turned by one sxm.transpose a block — the layout changes on chip). The value lives in a region of on-chip memory from its producer to
/// its last reader. Regions take the same rows at the top of every bank of the data memory
/// (row i of a region interleaved over a hemisphere's slices, in one bank of each, the next
/// part in the next hemisphere and bank), placed by lifetime so that regions of values never
/// alive together share rows; each kernel is compiled again leaving the rows of every region
/// alive while it runs (ChipLayoutRequests::reserved_rows). The producer's host stores of the
/// value become mem.copy instructions into its region (the store to the host stays when a later
/// program or the caller takes the value) and the readers' host loads copies out of it; all
/// kernels' instructions are then scheduled again as one program by the list scheduler, which
/// orders them by the rows they touch (one kernel's tail runs beside the next one's start).
/// A value whose transfers do not move whole memory rows, whose region does not fit, or that
/// leaves a reader too few rows to compile in stays on the host, and a kernel that reads such
/// a value from an earlier kernel of its program starts a new program.
/// `requests` are the layout requests each kernel was compiled with. nullopt: no value can
/// stay on chip (or the target has DRAM), nothing to link.
std::optional<MemLinkedModel> link_in_mem(const std::vector<ChipModelKernel> &kernels, const std::vector<ChipLayoutRequests> &requests,
                                          const std::vector<std::string> &outputs, const Target &target);

} // namespace tessera::internal
