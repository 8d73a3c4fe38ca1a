#pragma once
// The chip compiler's path from the lowered loop nest (DESIGN.md §5): any composition of
// element-wise and reduction stages — the user's own norms, reductions on any axis, stencils,
// producers computed at a consumer's loops — compiles from lower_unflattened(pipeline, chip)
// into VXM, DMA and on-chip copy instructions, scheduled on chipsim's timing model. Nothing
// here reads a Func's name to decide what to emit; the schedule (which loop is vectorized,
// where each producer is computed) decides.
//
// The vector model: a vectorized loop runs across the VXM's lanes (chunks of L 32-bit lanes);
// one other loop of the same nest runs down the rows of a tile, in time; every further loop is
// unrolled at compile time into separate instructions. A Func stored on chip keeps the
// dimension its vectorized loops index in the lanes (padded to L) and its other dimensions as
// vector rows; a reduction whose loop runs down the rows becomes vxm.reduce.rows. Inputs stay
// in their own layout (zero-padded on the host) and every read of one is a DMA that gathers
// exactly the tile the instruction needs — shifted for a stencil, strided for a transposed
// read, repeated for a broadcast.
#include <cstdint>
#include <vector>

#include "tessera/codegen/chip_backend.h"

namespace tessera::internal::chip {

/// Whether a stage of `p` may be one for the matrix unit: a tensorize directive, or an update
/// that multiplies two reads sharing a reduction variable, one with an output variable the
/// other lacks (acc[i, j] += a[i, k] * b[k, j], convolutions, weighted stencils). Those try
/// the MXM path first.
bool may_need_matrix_unit(const Pipeline &p);
/// Whether the matrix unit is the only way: a tensorize directive, or a product whose two
/// reads each have an output variable the other lacks (no vector stage computes it well).
bool needs_matrix_unit(const Pipeline &p);

/// Compiles `p` for cp.target from its loop nest. Stages without a vectorized loop get the
/// default chip rule (vector_lanes.h). Throws tessera::Error naming the stage, the loop and
/// the unit that lacks what the nest needs. Of `layouts` it takes a bf16 store or a bf16 copy
/// of an fp32 output on a dynamically issued chip with DRAM (npu-edge), packed by one VXM cast
/// per stored tile, where every stored tile has an even number of rows (else it stores fp32).
void compile_loop_nest(ChipProgram &cp, const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes,
                       const ChipLayoutRequests &layouts = {});

/// Vector rows of Input tiles loaded once, before the kernel, when all of them fit (half the
/// vector memory); above it each statement loads its own tiles. A kernel compiled within the
/// rows a linked program leaves it (`reserved_rows` of every bank taken by values kept on chip,
/// ChipLayoutRequests::reserved_rows) preloads what it would on the whole memory while that
/// leaves it a quarter of its own rows: a value kept beside it does not turn its preload into
/// thousands of loads, each paying the host link's latency.
int64_t preload_limit_rows(const chipsim::Target &t, int64_t reserved_rows = 0);
/// Vector rows of Input tiles kept on chip for a later statement that reads them again (a
/// quarter of the vector memory); the rest are loaded again.
int64_t kept_tiles_limit_rows(const chipsim::Target &t);

} // namespace tessera::internal::chip
