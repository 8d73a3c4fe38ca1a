#pragma once
// Code generation for a tensorized matmul: tiling of the output over MXM planes (tsp-mini) or
// the systolic array (npu-edge), placement of every operand tile, the DMA loads that bring A and
// B tiles on chip, mxm.lw / mxm.mm / mxm.drain, the fused VXM epilogue and the dma.store of each
// output tile. Instructions come out in priority order, ready for instruction_scheduler.h.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "instruction_scheduler.h"
#include "vector_epilogue.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::chip {

/// A matmul as the chip computes it: C[g, m, n] = sum_k A[g?, m, k] * B[g?, k, n] (+ epilogue),
/// with the program tensors "A" [G?, M, K], "B" [G?, K, N], "C" [G, M, N] and "E<i>" (epilogue
/// operands), N and K already padded to the MXM shape.
struct GemmKernel {
    chipsim::DType in_dtype = chipsim::DType::Int8;
    chipsim::DType acc_dtype = chipsim::DType::Int32;
    int64_t groups = 1, m = 0, n = 0, k = 0;
    bool a_batched = false, b_batched = false;
    /// A's off-chip home: program tensor "A", or a conv's image — on npu-edge the DRAM region
    /// the on-chip pre-pass wrote the padded image to, or the image itself ("X") where it needs
    /// no padding or is read as it is (Conv::raw_image).
    std::string a_tensor = "A";
    int64_t a_offset = 0;
    /// Output tile rows (accumulator rows per job) and columns; 0 picks the default.
    int64_t tile_m = 0, tile_n = 0;
    /// Accumulators double-buffered where two output tiles fit (double_buffer(false): one).
    bool double_buffer = true;
    /// npu-edge: the order of the output tiles (tile_order_values); empty: "rows_snake".
    std::string tile_order;
    /// npu-edge: bring two MXM blocks of A and B in each scratchpad row (npu_packs_operand_rows);
    /// -1 by the default rule (wherever the rows hold two), 0 never, 1 always (an error where
    /// they cannot).
    int pack_rows = -1;
    int acc_bank = -1;   ///< Explicit accumulator bank (tsp-mini: the plane), -1 any.
    int stage_bank = -1; ///< Explicit flat MEM bank of the drained tile, -1 any.
    int out_bank = -1;   ///< Explicit flat MEM bank of the epilogue's result, -1 any.
    VectorProgram epilogue;
    /// Implicit GEMM for conv2d: A is the image [G=N, Hp, Wp, Cp] (zero-padded), rows are the
    /// output pixels (oh, ow) and K runs over (ky, kx, c); B is the filter [KH*KW*Cp, N].
    struct Conv {
        int64_t hp = 0, wp = 0, cp = 0, oh = 0, ow = 0, kh = 1, kw = 1;
        int64_t sh = 1, sw = 1, dh = 1, dw = 1;
        /// tsp-mini: the image stays in MEM as the pre-pass (conv_image_codegen.h) left it,
        /// unpadded: pixel (y, x) of image g, channel block b is row
        /// ((y * w + x) * pixel_rows + first_block + b) of image[g]. The matmuls then stream each
        /// tap's window straight from it, one output row per mxm.mm, and the padding costs no
        /// memory: an output pixel whose tap falls outside the image reads zero_row.
        std::vector<chipsim::TileRef> image;
        chipsim::TileRef zero_row;
        int64_t h = 0, w = 0, pad_top = 0, pad_left = 0, pixel_rows = 1, first_block = 0;
        /// MEM tiles the pre-pass holds; the kernel places nothing there.
        std::vector<chipsim::TileRef> reserved;
        /// npu-edge, where it reads the image by bands (npu_reads_image_bands): A is the
        /// unpadded NHWC image [N, h, w, cp] and each band's padding is zeroed on chip, so no
        /// padded copy is written to DRAM first.
        bool raw_image = false;
    };
    std::optional<Conv> conv;
    /// Appended to the names of the program tensors B, C and E<i> (one kernel per conv group).
    std::string tensor_suffix;
    /// For each epilogue operand: which of (g, m, n) its chip tensor has.
    std::vector<std::array<bool, 3>> operand_dims;
    /// C's dtype in DRAM when narrower than the epilogue's result (set where gemm_packs_output
    /// allows): bf16 rows packed by the drain, or by the epilogue's last VXM step.
    std::optional<chipsim::DType> packed_out;
    /// A second store of C in this dtype, to program tensor "Cb" (set where gemm_packs_output
    /// allows; never with packed_out): one more VXM step packs the result's rows.
    std::optional<chipsim::DType> copy_out;
    /// The dtype C is stored in.
    chipsim::DType out_dtype() const { return packed_out.value_or(epilogue.out_dtype); }
};

/// npu-edge's default conv tile in whole output rows: at most `pixels` pixels (at least one
/// row), the rows spread evenly over the fewest tiles. A short last tile multiplies each weight
/// block by few rows, shorter than its install (28x28: 4 tiles of 7 rows, not 3 of 9 and one of
/// 1; 3x3 128->128 int8 133,946 -> 130,209 cycles). A 1x1 conv computed as a matmul over its
/// pixels takes the matmul's own default where the conv's tile is this one.
int64_t npu_conv_tile_rows(int64_t output_rows, int64_t output_width, int64_t pixels);

/// npu-edge's default output tile (rows, columns) for an m x n matmul over k. 256 rows: a
/// weight install holds the execute queue for 32 cycles, so each should feed many activation
/// rows (256: 11 % of int8 time goes to installs) while the A band of a tile still mostly fits
/// the scratchpad. As many 32-wide column blocks as fill the accumulators once (4 x 256 rows:
/// fewer tiles, so each A band streams in fewer times), except for small problems whose A band
/// fits easily and that would have fewer than 4 tiles: 2 blocks there, so the last tile's
/// stores, which nothing overlaps, are short. And where one row of tiles covers all m rows and
/// B's bytes take longer to cross DRAM than the whole product takes to multiply (a conv's weights
/// over a 7x7 image): every column block the accumulator holds, in one tile.
std::pair<int64_t, int64_t> npu_default_tile(int64_t m, int64_t n, int64_t k, chipsim::DType in_dtype, const chipsim::Target &t);

/// Whether the kernel's A and B tiles are loaded two MXM blocks to a scratchpad row. The
/// 32-wide int8 array reads 32 bytes of each 64-byte npu-edge row, so one block a row moves every
/// byte of A and B twice over DRAM; two a row move it once, and an sxm.shift (on the vector
/// queue, beside the matmuls) brings the second block to the lanes the array reads. The rule:
/// wherever a row holds exactly two blocks (int8 on npu-edge) unless `pack_rows` is 0. Throws
/// when `pack_rows` is 1 and the rows cannot.
bool npu_packs_operand_rows(const GemmKernel &kernel, const chipsim::Target &t);

/// Whether the kernel can store C as `dtype` instead of its epilogue's result dtype (`copy`:
/// store a copy of C in `dtype` beside it): bf16 for an fp32 result whose bf16 accumulator rows
/// are whole vector rows (npu-edge, tsp-mini), where the fp32 result would otherwise cross DRAM
/// or the host link at twice the bytes its bf16 readers take. The drain packs an empty
/// epilogue's rows (mxm.drain.fp32.bf16); otherwise the epilogue's last step packs two result
/// rows into one (vxm_rows_packed), so it must compute the result. A copy is packed by a cast of
/// its own, into the chip's DRAM (emit_npu only; one kernel a conv).
bool gemm_packs_output(const GemmKernel &kernel, chipsim::DType dtype, const chipsim::Target &t, bool copy);

/// npu-edge: whether the kernel reads its conv image by bands (the padded rows one output tile's
/// windows read, brought into the scratchpad once, every tap's window rows of them) rather than
/// each tap's window from DRAM: where a pixel's K blocks fall on whole scratchpad rows and the
/// two band buffers take at most half the scratchpad.
bool npu_reads_image_bands(const GemmKernel &kernel, const chipsim::TimingModel &model);

/// chip_blocks_per_row_values (chip_backend.h): 1, and 2 where npu_packs_operand_rows can.
std::vector<int64_t> blocks_per_row_values(const chipsim::Target &t, chipsim::DType in_dtype);

/// chip_tile_order_values (chip_backend.h): npu-edge walks its output tiles in any of the four
/// orders, "rows_snake" first (the rule); tsp-mini's waves of planes fix the order (none).
std::vector<std::string> tile_order_values(const chipsim::Target &t);

/// One output tile in a walk: its group, row tile and column tile.
struct TileWalkStep {
    int64_t group = 0, row_tile = 0, column_tile = 0;
    bool operator==(const TileWalkStep &) const = default;
};

/// The order npu-edge's kernel computes its output tiles in under tile order `order`: groups
/// one after another; "rows" orders walk each row of tiles across its columns, "columns" orders
/// each column down its rows, and the "_snake" ones walk every other line backwards (so a line
/// starts with the operand tiles the line before ended with).
std::vector<TileWalkStep> tile_walk(const std::string &order, int64_t groups, int64_t row_tiles, int64_t column_tiles);

/// chip_tile_order_values for a grid of row_tiles x column_tiles output tiles: the orders whose
/// walks differ there, the first of each alike ones kept (on one row or column of tiles, two).
std::vector<std::string> tile_order_values(const chipsim::Target &t, int64_t row_tiles, int64_t column_tiles);

/// Emits the kernel's instructions; appends what it decided (tiles, placement) to `summary`.
/// Throws tessera::Error when a tile or an explicit placement cannot fit the target.
std::vector<ChipOp> emit_gemm(const GemmKernel &kernel, const chipsim::TimingModel &model, std::string &summary);

} // namespace tessera::internal::chip
