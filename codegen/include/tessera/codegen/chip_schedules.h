#pragma once
// The chip backend's library schedules: the best hand schedules we know per op and chip,
// recorded on the pipeline's Funcs as ordinary directives (so they print, serialise to JSON and
// can be edited like any other schedule).
//
// matmul (and everything that ends in one: batched matmul, matmul + bias + GELU/ReLU):
//   C.update().split(k, ko, ki, KU)
//             .tile(i, j, io, jo, ii, ji, TM, TN)
//             .reorder(io, jo, ko, ii, ji, ki)
//             .tensorize("mxm", {ii, ji, ki});
//   C.store_in(MemoryKind::ACC).double_buffer();
// with KU the MXM depth and, on tsp-mini, TM = min(M, 512) rows per plane job (two jobs fit a
// plane's 1024 accumulator rows) and TN = the MXM width (one plane per column block, four
// planes side by side) — except where A and B together do not fit MEM: those stream on a plan
// (stream_plan.h) that picks its own row chunks, so the schedule records no tile; on npu-edge TM = min(M, 256), TN = min(N, 64) — a 256 x 64 int32 tile
// double-buffered fills exactly the 128 KiB ACC (measured better than 128 x 128: the systolic
// fill is amortised over more rows per weight install).
//
// conv2d: `out.store_in(MemoryKind::ACC)`; the implicit GEMM takes whole output rows per tile
// (as many as fit 512 accumulator rows on tsp-mini, 256 on npu-edge) and one matmul per tap.
//
// attention: `tensorize("mxm", {i, j, k})` on the update stages of `name_scores` and `name`
// (the two matmuls); softmax, layernorm and depthwise conv2d record nothing — their VXM kernels
// tile themselves (16 rows, or 16 channels, per vector; blocks interleaved in waves on tsp-mini).
//
// Other vector pipelines (compiled from their loop nests) whose Inputs are too large to preload:
// each reduction along the output's rows that only the output reads (rmsnorm's mean square,
// log_softmax's sum) is computed at blocks of the output's rows,
//   out.split(d0, d0_block, d0_lane, B).vectorize(d0_lane);  r.compute_at(out, d0_block);
// with B lane chunks of rows as many as keep a block's Input tiles on chip between the
// reduction and the output (loop_nest_codegen.h), so those Inputs cross off-chip memory once.
#include <cstdint>
#include <vector>

#include "tessera/codegen/chip_backend.h"
#include "tessera/func.h"
#include "tessera/target.h"

namespace tessera {

/// Records the library schedule for `pipeline` on `target` (a chip) for these output shapes.
/// Throws tessera::Error naming the output when no chip schedule exists for the pipeline.
void apply_chip_library_schedule(const Pipeline &pipeline, const Target &target,
                                 const std::vector<std::vector<int64_t>> &output_shapes);

/// How every Tessera tool runs an operator-library kernel on a chip — `tessera run`, bench_chip,
/// the demo — so that one kernel reports one cycle count everywhere: the library schedule
/// recorded on `pipeline` (apply_chip_library_schedule), then realize_on_chip. With
/// options.functional false only time is simulated (the same cycles; outputs are zero).
ChipResult realize_library_kernel_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                          const Bindings &bindings, const Target &target, const ChipRunOptions &options = {});

} // namespace tessera
