#pragma once
// The plan of a tsp-mini matmul whose operands do not fit MEM together, so that they stream in
// over the host link while the kernel runs. Decided from the shapes and the target alone (MEM
// geometry, host link bandwidth and latency, MXM shape and rate), by a small cost model, before
// any instruction is emitted:
//
//  - A stays on chip a *band* at a time: `band_chunks` row chunks of R rows with all of K, in
//    the west hemisphere, in regions of one K block per slice (the planes read consecutive K
//    blocks at once, so each reads its own slice);
//  - a *wave* runs one job per MXM plane: the band's chunks x `wave_cols` column blocks; its B
//    (those columns, all of K) is one DMA into an east buffer, its drained results one east
//    buffer and one store per chunk: DMAs are few and long, as the link's latency is paid per
//    DMA;
//  - waves walk a band's column groups, snaking (every other band backwards), so the B buffers
//    left at the end of a band are the first ones the next band needs;
//  - the next band's A loads into west regions the current band does not use, then into its
//    regions as they die, in the order they die, for the K groups in the order they are needed;
//  - a fused VXM epilogue gets east slots for a wave's drained tiles and operands and one per
//    step; its result lands in the wave's result buffer.
//
// The cost model: per candidate chunk height (the most rows, halved while the schedule leaves
// them free) and band size, the host link cycles of every DMA issued during the
// kernel (transfer + latency; the first band and first B buffers load before it, the last
// wave's results leave after it) against the MXM cycles; the plan with the fewest estimated
// cycles (the larger of the two) wins.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::chip {

/// A matmul as the streamed plan sees it (N and K padded to the MXM shape).
struct StreamedGemmShape {
    int64_t groups = 1, m = 0, n = 0, k = 0;
    bool b_batched = false; ///< Each batch has its own B (a batched A changes nothing here).
    int64_t rows = 0;        ///< Rows of a job (accumulator rows per plane and buffer), at most.
    bool rows_fixed = false; ///< The schedule set them: the plan may not take fewer.
    int64_t ku = 0, nu = 0;  ///< MXM shape (K and N of a weight tile).
    int64_t in_bytes = 1;    ///< Input element bytes.
    chipsim::DType in_dtype = chipsim::DType::Int8; ///< Input dtype: the MXM's rate.
    int64_t drain_rows = 1;  ///< MEM rows per drained accumulator row.
    int64_t epilogue_operands = 0; ///< Tiles a fused VXM epilogue reads besides the result.
    int64_t epilogue_steps = 0;    ///< Its instructions (each writes one tile).
};

struct StreamedGemmPlan {
    int64_t rows = 0; ///< Rows of a job (a row chunk of A): fewer than the most when a chunk of all
                      ///< K does not fit.
    int64_t band_chunks =
        1; ///< Row chunks of A on chip together; a wave has band_chunks x wave_cols jobs.
    int64_t wave_cols = 1;    ///< Column blocks per wave.
    int64_t group_blocks = 1; ///< K blocks per A region (= MEM slices: one block per slice).
    /// Interleaved MEM regions: A (west, each group_blocks x rows rows), B buffers and drained
    /// result buffers (east). A has at least one band's worth.
    std::vector<chipsim::TileRef> a_regions, b_buffers, c_buffers;
    /// With a fused epilogue (east too, each a slot of one job's drained rows per use): the
    /// drained tiles of a wave, the epilogue's operands for a wave, one slot per epilogue step.
    chipsim::TileRef drained, operands, scratch;
    int64_t mxm_cycles = 0;  ///< The cost model's MXM cycles (every wave back to back).
    int64_t link_cycles = 0; ///< The cost model's host link cycles during the kernel.
    std::string describe() const;
};

/// One wave: batch `g`, band `band` (row chunks band * band_chunks ..), column group `cols`
/// (column blocks cols * wave_cols ..); `b_buffer` holds its B, loaded for it when `b_load`.
struct StreamedWave {
    int64_t g = 0, band = 0, cols = 0;
    int b_buffer = 0;
    bool b_load = true;
};

/// The plan's waves in order (bands in order, column groups snaking), with the B buffer of
/// each: B for a wave loads while the previous wave runs, so into a buffer that wave does not
/// read; of those, the one whose B is needed again last (Belady).
std::vector<StreamedWave> streamed_waves(const StreamedGemmShape &shape, int64_t band_chunks,
                                         int64_t wave_cols, int b_buffers);

/// The cheapest feasible plan, or nullopt when no band of A fits the west hemisphere beside
/// nothing else (then the caller keeps its general scheme).
std::optional<StreamedGemmPlan> plan_streamed_gemm(const StreamedGemmShape &shape,
                                                   const chipsim::TimingModel &model);

} // namespace tessera::internal::chip
