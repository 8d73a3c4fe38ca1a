#pragma once
// The VXM epilogue: the element-wise Expr that follows a matmul (bias add, ReLU, GELU, scaling,
// clamping, ...) compiled to a short list of vxm instructions over row tiles in the drained
// accumulator's layout, with unary and immediate steps fused into chains so that a value goes
// through several ops without a round trip to memory.
#include <string>
#include <vector>

#include "gemm_pattern.h"
#include "tessera/chipsim/isa.h"

namespace tessera::internal::chip {

/// One vxm instruction of the epilogue on value ids: 0 is the drained accumulator tile,
/// 1..operands are the Input tiles, the rest are temporaries.
struct VectorStep {
    chipsim::Instruction proto; ///< op, dtypes, immediate and chain; tiles are filled per tile.
    std::vector<int> srcs;
    int dst = 0;
};

/// An Input the epilogue reads, loaded in the accumulator's row layout.
struct VectorOperand {
    EpilogueOperand source;
    chipsim::DType dtype = chipsim::DType::FP32; ///< On chip (the host converts exactly).
};

/// The compiled epilogue.
struct VectorProgram {
    std::vector<VectorStep> steps;
    std::vector<VectorOperand> operands;
    int num_values = 1;
    int result = 0;                              ///< Value id holding the output.
    chipsim::DType out_dtype = chipsim::DType::Int32;
    /// Readable form for the summary ("add(acc, bias) | max #0").
    std::string description;
    bool empty() const { return steps.empty(); }
};

/// Compiles the pattern's epilogue for an accumulator of dtype `acc` (int32 or fp32). Throws
/// tessera::Error naming the output Func and the operation that has no VXM form.
/// `bf16_values`: a pipeline without a matmul may have bf16 values; each bf16 operation's
/// result is rounded to bf16, as the reference rounds it. When every value is bf16 they compute
/// in bf16 lanes (each op its own instruction, rounding on the way out; out_dtype bf16);
/// otherwise in fp32 lanes, a cast to bf16 and back after each bf16 operation (bf16 inputs
/// widened exactly by the host, a bf16 result kept in fp32 lanes: out_dtype fp32).
VectorProgram compile_epilogue(const GemmPattern &pattern, chipsim::DType acc, bool bf16_values = false);

} // namespace tessera::internal::chip
