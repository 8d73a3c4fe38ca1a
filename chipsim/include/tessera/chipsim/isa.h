#pragma once
// The chip ISA as C++ values: tile operands, off-chip views, instructions and programs.
//
// Assembly text (one instruction a line, `#` starts a comment):
//
//   .target tsp-mini                              optional; must match the target it runs on
//   .input  A int8 [256,256] file=A.npy           a host tensor the program reads (file relative
//                                                 to the program; --input A=x.npy overrides)
//   .output C int32 [256,256] file=C.npy          a host tensor the program writes
//   .buffer T fp32 [128,768]                      a DRAM tensor the program writes and reads,
//                                                 never crossing the host link (DRAM chips)
//   @12 mxm.mm.int8.acc m0.w1, ACC.b0[0:64], MEM.e0.b0[0:64]
//
// Operands
//   tile      MEM.e3.b1[base:count(:stride)]   memory, hemisphere+slice, bank, rows. `e*`/`w*`
//             MEM.w*.b0[0:64]                  interleaves rows over the hemisphere's slices
//             SPAD[0:64:8]  ACC[0:32]          (row i -> slice i mod slices). Memories marked
//             ACC.b2[0:64]                     `interleaved` take no location: bank = row mod banks.
//   view      A@4096[64:256, 64]               host tensor (or DRAM) + byte offset, then up to
//             DRAM@0[4096]                     max_dims dimensions "count:stride" (bytes),
//                                              outermost first; the last is contiguous bytes.
//   mxm       m0.w1                            MXM plane/array 0, weight buffer 1
//   imm       #1.5  #-3                        immediate
//
// Instructions (dtype suffixes: int8 uint8 int16 int32 bf16 fp16 fp32)
//   dma.load   TILE, VIEW                      off-chip -> on-chip
//   dma.store  VIEW, TILE                      on-chip -> off-chip
//   mem.copy   TILE, TILE                      on-chip -> on-chip through a stream
//   mxm.lw.<in>            mK.wB, TILE         install K weight rows (N elements each)
//   mxm.mm.<in>[.acc]      mK.wB, ACC, TILE    stream activation rows; .acc accumulates
//   mxm.drain.<acc>.<out>  TILE, ACC[, scale=S][, relu][, streams=N]   accumulators -> tile
//                          (acc: int32|fp32; streams: output rows written per cycle, default the
//                          most the target allows; fewer leaves streams to other instructions)
//   vxm.<op>.<in>[.<out>]  TILE, TILE[, TILE|#imm] [| op [#imm]]...   element-wise, chained
//                          (each row's lanes: vector bytes / the wider dtype; a narrowing op
//                          whose destination has in/out-bytes times fewer rows packs that many
//                          source rows into each destination row, in order: vxm_rows_packed;
//                          a widening op whose destination has out/in-bytes times more rows
//                          unpacks each source row into that many: vxm_rows_unpacked)
//   vxm.reduce.<sum|max>.<rows|lanes>.<in>[.<out>] TILE, TILE
//   sxm.transpose.<dt> TILE, TILE     sxm.permute.<dt> TILE, TILE, [i,j,...]
//   sxm.shift.<dt> TILE, TILE, #k
//   sync.signal.<queue> S   sync.wait.<queue> S   nop[.<queue>] N   repeat N, D
// On static targets every instruction line starts with `@<cycle>`; on dynamic targets none does.
#include "tessera/chipsim/dtype.h"
#include "tessera/limits.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// Every instruction of the ISA.
enum class Opcode : uint8_t {
    DmaLoad, DmaStore, MemCopy,
    MxmLw, MxmMm, MxmDrain,
    Vxm, VxmReduce,
    SxmTranspose, SxmPermute, SxmShift,
    SyncSignal, SyncWait, Nop, Repeat,
};
/// The mnemonic ("dma.load", "mxm.mm", "vxm", ...).
const char *opcode_name(Opcode op);

/// Element-wise vector operations (the VXM's op list).
enum class VxmOp : uint8_t { Add, Sub, Mul, Div, Max, Min, Exp, Tanh, Rsqrt, Recip, Relu, Cast, Select };
/// The op's name ("add", ...).
const char *vxm_op_name(VxmOp op);
/// Number of tile/immediate inputs the op takes (1 unary, 2 binary, 3 select).
int vxm_op_arity(VxmOp op);

/// A tile of on-chip memory: rows base, base+stride, ... (count rows).
struct TileRef {
    std::string memory;          ///< "MEM", "SPAD", "ACC".
    char side = 0;               ///< 'w' (west), 'e' (east), 's' (one-hemisphere memory), 0 = no slice.
    int slice = -1;              ///< Slice in the hemisphere; -1 = interleaved over slices ('*').
    int bank = -1;               ///< Bank in the slice; -1 for interleaved memories.
    int64_t base = 0;            ///< First row (bank-local; slice-local for '*').
    int64_t count = 0;           ///< Rows.
    int64_t stride = 1;          ///< Row step.
    bool operator==(const TileRef &) const = default;
};

/// One strided dimension of an off-chip view.
struct ViewDim {
    int64_t count = 1;
    int64_t stride = 0; ///< Bytes.
    bool operator==(const ViewDim &) const = default;
};

/// Bytes of a host tensor (or raw DRAM) gathered by up to 4 nested strided loops.
struct OffchipView {
    std::string tensor;          ///< A declared tensor name, or "DRAM".
    int64_t offset = 0;          ///< Bytes from the tensor's start.
    std::vector<ViewDim> outer;  ///< Outer dimensions, outermost first.
    int64_t inner_bytes = 0;     ///< Contiguous bytes of the innermost dimension.
    /// Bytes moved: product of counts times inner_bytes.
    int64_t total_bytes() const;
    bool operator==(const OffchipView &) const = default;
};

/// One step of a VXM chain after the first: a unary op or a binary op with an immediate.
struct ChainStep {
    VxmOp op = VxmOp::Relu;
    bool has_imm = false;
    double imm = 0.0;
    bool operator==(const ChainStep &) const = default;
};

/// Reduction direction for vxm.reduce.
enum class ReduceAxis : uint8_t { Rows, Lanes };

/// Which in-order queue a dynamic instruction runs in.
enum class Queue : uint8_t { None, Load, Exec, Store, Vector };
/// "load", "exec", "store", "vector" ("" for None).
const char *queue_name(Queue q);

/// One instruction. Fields not used by an opcode stay at their defaults, so equality (and hence
/// the round-trip tests) is plain member-wise comparison.
struct Instruction {
    Opcode op = Opcode::Nop;
    int64_t cycle = -1;              ///< Issue cycle on static targets; -1 when absent.
    DType dtype = DType::Int8;       ///< Input dtype (MXM, VXM, SXM); accumulator dtype for drain.
    DType out_dtype = DType::Int8;   ///< Output dtype (drain, VXM; equals dtype when not given).
    bool has_out_dtype = false;      ///< The text spelled the output dtype.
    std::vector<TileRef> tiles;      ///< Tile operands in text order (dst first).
    OffchipView view;                ///< dma.load source / dma.store destination.
    int mxm = 0, buffer = 0;         ///< mK.wB.
    bool accumulate = false;         ///< mxm.mm .acc.
    bool relu = false;               ///< mxm.drain relu.
    bool has_scale = false;          ///< mxm.drain scale=.
    double scale = 1.0;
    VxmOp vop = VxmOp::Add;          ///< First VXM op; the reduce kind (Add = sum, Max = max).
    ReduceAxis axis = ReduceAxis::Rows;
    bool has_imm = false;            ///< The first VXM op's last input is an immediate.
    double imm = 0.0;                ///< That immediate; the shift of sxm.shift.
    std::vector<ChainStep> chain;    ///< Further VXM steps.
    std::vector<int32_t> permutation;///< sxm.permute map.
    Queue queue = Queue::None;       ///< sync/nop queue suffix.
    int64_t count = 0;               ///< Semaphore (sync), cycles (nop), repetitions (repeat), streams (drain; 0 = default).
    int64_t distance = 0;            ///< repeat: cycles between repetitions.
    int line = 0;                    ///< Source line (1-based), 0 when built in C++; not compared.
    /// The schedule stage it belongs to (index in Program::stages), -1 for none: a label for the
    /// per-stage profile, set by the compiler; not compared, not in the text or binary form.
    int32_t stage = -1;
    bool operator==(const Instruction &o) const;
};

/// How many source rows a vxm packs into each destination row: in/out element bytes when the
/// output dtype is narrower and the destination has fewer rows than the first source (fp32 ->
/// bf16: two rows of 16 lanes become one dense row of 32, the layout mxm.drain.fp32.bf16
/// writes), 1 otherwise (each row's lanes stay at the start of the row, the rest zero).
int64_t vxm_rows_packed(const Instruction &in);

/// How many destination rows a vxm unpacks each source row into: out/in element bytes when the
/// output dtype is wider and the destination has more rows than the first source (bf16 -> fp32:
/// a dense row of 32 becomes two rows of 16, lanes 0..15 then 16..31; the inverse of packing),
/// 1 otherwise (only the first vector bytes / out-bytes lanes of each source row are read).
int64_t vxm_rows_unpacked(const Instruction &in);

/// A tensor of a program: one the host gives (.input) or takes back (.output) over the host
/// link, or (.buffer, chips with DRAM only) one that lives in the chip's DRAM for the program's
/// run — written and read by its DMAs, never crossing the link: what one kernel of a linked
/// model program leaves for the next. A buffer starts unwritten; reading a byte no DMA stored
/// is an error, as for an output.
struct TensorDecl {
    std::string name;
    DType dtype = DType::Int8;
    std::vector<int64_t> shape;
    std::string file;                ///< Relative to the program's folder; may be empty (never for a buffer).
    bool is_output = false;
    bool is_buffer = false;          ///< A .buffer (then is_output is false).
    /// Bytes: product(shape) * dtype_bytes.
    int64_t bytes() const;
    bool operator==(const TensorDecl &) const = default;
};

/// The most dimensions a program's tensor may have.
constexpr int kMaxTensorRank = 8;

/// Why the declaration `t` is refused — more than kMaxTensorRank dimensions, an extent outside
/// 1..limits::kMaxExtent, more than limits::kMaxTensorBytes, a .buffer with a file — or "" when
/// it is fine.
/// The assembler, the binary reader and the simulator all ask this one function, so the text
/// and the binary form accept the same programs and no reader allocates for a bad declaration.
std::string tensor_shape_problem(const TensorDecl &t);

/// Why a `repeat` of `count` copies is refused when `expanded` instructions (every repeat
/// expanded) precede it — count outside 1..limits::kMaxRepeat, or a program longer than
/// limits::kMaxExpandedInstructions once expanded — or "" when it is fine.
std::string repeat_problem(int64_t count, int64_t expanded);

/// Why an instruction holds a number its assembly text could not spell — a negative row,
/// count, offset, MXM or buffer index, a cycle or semaphore out of range — or "" when every
/// field is within the text's bounds. The binary reader applies it (the text's grammar already
/// does), so a binary program is always one that has an assembly form. A `repeat`'s count is
/// checked by repeat_problem (it depends on the instructions before it), its other fields here.
std::string instruction_problem(const Instruction &in);

/// A chip program: declarations and instructions.
struct Program {
    std::string target;                    ///< The .target directive ("" when absent).
    std::vector<TensorDecl> tensors;       ///< In declaration order.
    std::vector<Instruction> instructions;
    std::string source_dir;                ///< Folder of the file it came from, for input files.
    /// Names of the stages instructions are labelled with (Instruction::stage); not compared.
    std::vector<std::string> stages;
    /// The declaration named `name`, or nullptr.
    const TensorDecl *tensor(const std::string &name) const;
    bool operator==(const Program &o) const {
        return target == o.target && tensors == o.tensors && instructions == o.instructions;
    }
};

} // namespace tessera::chipsim
