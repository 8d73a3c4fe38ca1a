#pragma once
// The chip backend (DESIGN.md §5, CHIP.md): an algorithm plus its schedule becomes a chipsim
// program — memory placement, tensorization onto the MXM, vector epilogues on the VXM, DMA data
// movement and a static (tsp-mini) or semaphore-ordered (npu-edge) instruction schedule — which
// chipsim then runs functionally and in time.
//
//   Func C = ops::matmul(A, B);                       // int8 x int8 -> int32
//   chip::apply_library_schedule(C, "tsp-mini");      // or a hand schedule (see below)
//   ChipResult r = realize_on_chip(C, {{256, 256}}, {{A, a}, {B, b}}, Target::named("tsp-mini"));
//   r.outputs[0];            // the values
//   r.report.to_text();      // cycles, utilisation, stalls
//   r.program.assembly();    // the generated assembly text
//
// `Func::realize(..., Target::named("tsp-mini"))` goes through the same path (the backend
// registers itself as the realizer of Target::Kind::Chip); the report of the latest chip realize
// on this thread is available from last_chip_result().
//
// What the backend accepts (anything else is a tessera::Error saying which part and why):
// - The output Func is a canonical matmul (ops::matmul: `C(.., i, j) = 0; C(.., i, j) +=
//   cast(A(.., i, k)) * cast(B(.., k, j))`, batched or not, A/B int8 or bf16 — fp32 operands are
//   rounded to bf16 on their way into the chip), optionally followed by element-wise Funcs of
//   the product (bias add, ReLU, GELU with the tanh form, scaling, clamping, requantising:
//   cast<int8>(clamp(round(x * scale), -128, 127)) — rounded half to even by the VXM's
//   float -> int32 cast, the int8 result kept in int32 lanes and narrowed exactly on the way out)
//   that become a VXM epilogue fused before the store.
// - ops::conv2d (NCHW or NHWC, groups = 1, any stride/padding/dilation, optional bias) as an
//   implicit GEMM: one matmul per filter tap over strided DMA windows of the image, which the
//   host zero-pads into the chip's NHWC layout (or pads with Conv2dOptions::pad_value, an
//   integer conv's zero point); the bias joins the VXM epilogue.
// - Directives read on the matmul's update stage: `tile(i, j, io, jo, ii, ji, TM, TN)` (output
//   tile: TM accumulator rows, TN a multiple of the MXM width), `split(k, ko, ki, KT)`,
//   `tensorize("mxm", {ii, ji, ki})` (checked against the MXM shape), and on the Func
//   `store_in(MemoryKind::ACC | MEM | SPAD, bank)` (explicit banks are honoured or rejected)
//   and `double_buffer()`. CPU-only directives (parallel, vectorize, unroll) are ignored.
//   Without a tensorize directive the backend tensorizes with its default tiling.
// - ops::softmax (last axis) and ops::layernorm (last dimension, optional gamma/beta) as VXM
//   kernels: the host lays the input out transposed, so 16 rows share a vector (one per lane)
//   and the reductions run over vector rows in time (vxm.reduce.rows).
// - ops::conv2d with groups == channels (depthwise) as VXM multiply-adds, one per filter tap,
//   over strided on-chip windows of the image (the MXM would use 1/64 of its array).
// - ops::scaled_dot_product_attention (causal or not) on [heads, L, D]: Kᵀ·... scores on the
//   MXM (keys as accumulator rows), the softmax over keys on the VXM, the product with V on the
//   MXM; Q, K, V are rounded to bf16 on their way in, as for matmul.
// - ops::transpose and ops::permute that change the innermost dimension ([.., M, N] -> [.., N, M],
//   NCHW <-> NHWC, ...) as SXM transposes of 64-byte-lane blocks between strided DMA loads and
//   stores: the layout change happens on chip, in any dtype, bit-exact.
// - Any other element-wise pipeline of int32/fp32 values (add, mul, ReLU, GELU-tanh, sigmoid,
//   clamps, requantise; Inputs broadcast along rows or lanes) as the same VXM program on blocks
//   of rows, broadcast operands read with stride 0 by the DMA.
// - Any other pipeline compiles from its lowered loop nest (loop_nest_codegen.h): vector and
//   reduction stages on the VXM, and matrix stages — an update f += a * b whose factors each
//   read a loop the other lacks, b an Input read — on the MXM, so several matmuls with vector
//   work between them (an MLP block, lstm_cell) are one program.
// - Inputs are brought into the chip's layout (zero-padded to the MXM shape, cast to the
//   chip's dtype) on the host side of the link; outputs are cropped back.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/report.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"
#include "tessera/func.h"
#include "tessera/target.h"

namespace tessera {

/// How one program tensor (.input / .output) relates to a pipeline buffer: the program's
/// tensor is the pipeline buffer in the chip's layout — dimensions permuted/padded, dtype
/// converted.
struct ChipTensorMap {
    std::string tensor;               ///< Name in the program (.input / .output).
    std::string source;               ///< The Input or output Func it holds.
    bool is_output = false;
    std::vector<int64_t> chip_shape;  ///< Shape in the program (padded).
    std::vector<int64_t> source_shape;///< Shape of the pipeline buffer.
    /// For each source dimension, the chip dimension whose index it takes (-1: index 0, a
    /// broadcast dimension). Chip elements outside the source (padding) are zero on input and
    /// dropped on output; chip dimensions no source dimension takes must be 0 for a source element.
    std::vector<int> chip_dim_of_source;
    /// Per source dimension, added to its index to give the chip index (zero padding before,
    /// e.g. a conv's top/left padding); empty = all 0.
    std::vector<int64_t> chip_offset;
    /// Per chip dimension, the index a source element must stay below to be mapped (a slice
    /// of the source, e.g. one conv group's channels); empty = the chip shape.
    std::vector<int64_t> chip_limit;
    /// A table the compiler made (e.g. attention's causal mask), in the chip's layout; such a
    /// tensor needs no binding. Empty for tensors that hold a pipeline buffer.
    std::vector<float> constant;
    /// What an input's chip elements outside the source (padding) hold: 0, or an integer
    /// conv's zero point (its padding is then 0 once the zero point is subtracted).
    double pad_value = 0;
};

/// A compiled chip kernel: the program, its text, and how to marshal host buffers.
struct ChipProgram {
    chipsim::Target target;
    chipsim::Program program;
    std::vector<ChipTensorMap> tensors;    ///< One per .input / .output, in program order.
    std::vector<std::string> outputs;      ///< Output Func names, in pipeline order.
    std::vector<std::vector<int64_t>> output_shapes;
    std::vector<Type> output_types;        ///< The outputs' dtypes in the pipeline (what realize returns).
    /// disassemble(program): what a user reads. Written on request, not by every compile: an
    /// autotuner compiles thousands of programs no one reads (a tenth of a compile).
    std::string assembly() const;
    std::string summary;                   ///< What was generated: tiles, placement, epilogue.
    /// The loop nest the loop-nest compiler took (the schedule with the chip's default rules
    /// applied, storage not flattened); empty for a library kernel.
    std::string loop_nest;
    /// The algorithm's size, for the report's problem bound (chipsim::TimingModel::problem_bound).
    chipsim::ProblemSize problem;
    /// Outputs the program also stores narrower in the chip's DRAM (ChipLayoutRequests::copy_dtype):
    /// one map each, its tensor a .buffer, which no caller's buffer meets and run_on_chip does
    /// not read back; a later kernel of a linked program reads it (link_chip_model).
    std::vector<ChipTensorMap> copies;
};

/// Options of a chip run.
struct ChipRunOptions {
    bool trace = false;        ///< Keep the Chrome trace JSON in the result.
    bool functional = true;    ///< Compute values (false: timing only; outputs are zero).
};

/// The outcome of running a ChipProgram.
struct ChipResult {
    std::vector<Buffer<>> outputs;   ///< One per pipeline output, in the output Func's type.
    chipsim::Report report;
    ChipProgram program;
    std::string trace_json;          ///< Chrome trace when ChipRunOptions::trace.
};

/// Layouts a caller asks a kernel's values to have on the chip — the graph compiler asks a
/// kernel to read a value in the layout and dtype the kernel before wrote it in, so that the
/// value can stay in the chip's DRAM (link_chip_model). The backend takes what its kernel can
/// do and keeps its own choice otherwise; the program's ChipTensorMaps and declarations say
/// which one each value got.
struct ChipLayoutRequests {
    /// Input name -> the order of its dimensions in chip memory, outermost first. Taken today:
    /// a conv2d's NCHW image as NHWC ({0, 2, 3, 1}), where the chip's layout pass builds the
    /// image on chip.
    std::map<std::string, std::vector<int>> order;
    /// Output Func name -> the dtype to store it in, for a value whose every reader rounds it to
    /// that dtype anyway (the stored values are then those the readers read). Taken today, on
    /// either chip: bf16 for an fp32 matmul or conv, packed by the drain or the epilogue's last
    /// VXM step (gemm_packs_output); for an fp32 output of a kernel compiled from its loop nest,
    /// and for the library softmax and layernorm (in the chip's own layout; row-major only with
    /// an even number of vectors a row), packed by the VXM op that computes a stored tile or by a
    /// cast. The value then crosses DRAM (npu-edge) or the host link (tsp-mini) at half the bytes.
    std::map<std::string, chipsim::DType> output_dtype;
    /// Output Func name -> a dtype to store a second copy of it in, in the chip's DRAM, for
    /// later kernels that round it to that dtype where other readers (or the caller) take it
    /// whole (ChipProgram::copies). Taken today: bf16 for an fp32 matmul or conv on npu-edge,
    /// packed by one more VXM step.
    std::map<std::string, chipsim::DType> copy_dtype;
    /// Input name -> a narrower dtype to read it in, rounded once by whoever supplies it (the
    /// host, or the kernel that stores it so: ChipLayoutRequests::output_dtype). Taken today:
    /// bf16 for an fp32 operand of a matmul's or conv's element-wise epilogue (a residual add)
    /// on a chip with static issue (tsp-mini), whose VXM widens each bf16 row into the two fp32
    /// rows of the drained accumulator's layout (an unpacking vxm.cast, chipsim's
    /// vxm_rows_unpacked) before the epilogue reads it. The operand is then rounded to bf16
    /// (relative error at most 2^-9 of it), within the chips' tolerance of the reference; a
    /// linked tsp-mini program keeps such a value in MEM at half the rows.
    std::map<std::string, chipsim::DType> input_dtype;
    /// Rows at the top of every bank of the chip's on-chip data memories (tsp-mini's MEM,
    /// npu-edge's SPAD; never an accumulator) that the kernel leaves alone: it is compiled as
    /// if each bank held that many rows fewer. A linked program on a chip without DRAM keeps
    /// the values its kernels pass each other there (link_chip_model). 0: the whole memory.
    int64_t reserved_rows = 0;
};

/// Compiles `pipeline` for the chip target (Target::named: "tsp-mini", "npu-edge" or a JSON
/// path) for outputs of these shapes. `bindings` give Param values (Inputs may be absent).
/// Throws tessera::Error naming the Func, stage or directive when the pipeline or its schedule
/// cannot run on the chip.
ChipProgram compile_for_chip(const Pipeline &pipeline, const Target &target,
                             const std::vector<std::vector<int64_t>> &output_shapes,
                             const Bindings &bindings = {}, const ChipLayoutRequests &layouts = {});
/// Runs a compiled program on chipsim with these Input buffers.
ChipResult run_on_chip(const ChipProgram &program, const Bindings &bindings, const ChipRunOptions &options = {});
/// compile_for_chip then run_on_chip.
ChipResult realize_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                           const Bindings &bindings, const Target &target, const ChipRunOptions &options = {});
/// The result of the latest chip realize (through Func/Pipeline::realize or realize_on_chip) on
/// this thread; throws tessera::Error if there was none.
const ChipResult &last_chip_result();

/// Loads the chipsim description of a chip Target (built-in name or JSON path); throws
/// tessera::Error for non-chip targets.
chipsim::Target chip_target_description(const Target &target);

/// The legal values of `blocks_per_row` (Func::blocks_per_row) for a matmul or conv whose
/// operands are `in_dtype` on chip `t`: 1 everywhere; 2 where one on-chip row holds exactly two
/// of the matrix unit's operand blocks and the chip can shift the second into place (int8 on
/// npu-edge). Unset, the backend takes the largest. The contract the chip autotuner searches.
std::vector<int64_t> chip_blocks_per_row_values(const chipsim::Target &t, chipsim::DType in_dtype);

/// The legal values of `tile_order` (Func::tile_order) for a matmul or conv on chip `t`, the
/// backend's rule first (what it does when the directive is unset): npu-edge "rows_snake",
/// "rows", "columns_snake", "columns"; none on tsp-mini, whose waves over the planes fix the
/// order (the directive is refused there). The contract the chip autotuner searches.
std::vector<std::string> chip_tile_order_values(const chipsim::Target &t);

/// The values above that compute a grid of row_tiles x column_tiles output tiles (per group) in
/// different orders, the rule first; of orders that walk the grid alike (every order of a single
/// tile; on one row or column of tiles, all but one snaking order) only the first listed. The
/// autotuner compiles one program for the orders that would give the same one.
std::vector<std::string> chip_tile_order_values(const chipsim::Target &t, int64_t row_tiles, int64_t column_tiles);

/// The legal values of `double_buffer` for a matmul's or conv's accumulators on chip `t`: 0 (one
/// buffer: `double_buffer(false)`) and 1 (two, wherever two output tiles fit the accumulators;
/// also the rule when unset).
std::vector<int64_t> chip_double_buffer_values(const chipsim::Target &t);

} // namespace tessera
