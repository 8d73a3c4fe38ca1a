#pragma once
// The chip kernels of the ops that are not a single matmul (op_recognizer.h): each compiles
// a recognised op into the program's tensors (in the chip's layout, with their host maps) and
// its instructions, scheduled for the target.
//
// - softmax / layernorm (rowwise_codegen.cpp): VXM only, 16 rows per vector (one per lane).
// - depthwise conv2d (depthwise_codegen.cpp): VXM multiply-adds per filter tap.
// - attention (attention_codegen.cpp): MXM, VXM softmax, MXM.
// - permute / transpose (layout_codegen.cpp): SXM transposes between strided DMA loads and stores.
// - other element-wise pipelines (elementwise_codegen.cpp): the VXM epilogue program on row blocks.
#include <cstdint>
#include <string>
#include <vector>

#include "op_recognizer.h"
#include "tessera/codegen/chip_backend.h"

namespace tessera::internal::chip {

class VectorEmitter;

/// Compiles `op` for cp.target into cp.program (tensors, instructions) and cp.tensors; appends
/// to cp.summary what it generated. Of `layouts` the softmax and layernorm kernels take x in its
/// own order and their result in bf16 or a bf16 copy of it on npu-edge (rowwise_codegen.cpp);
/// the others take nothing.
void compile_vector_op(ChipProgram &cp, const VectorOp &op, const std::vector<int64_t> &output_shape, const ChipLayoutRequests &layouts);

/// Throws tessera::Error for directives these kernels cannot honour (a tensorize on a Func the
/// kernel does not run on the MXM, an explicit bank); the rest of the schedule has no effect
/// on them (they tile themselves).
void check_vector_op_schedule(const Pipeline &p, const VectorOp &op);

void compile_rowwise(ChipProgram &cp, const VectorOp &op, const std::vector<int64_t> &output_shape, const ChipLayoutRequests &layouts);
void compile_depthwise(ChipProgram &cp, const DepthwiseConvOp &op, const std::vector<int64_t> &output_shape);
void compile_attention(ChipProgram &cp, const AttentionOp &op, const std::vector<int64_t> &output_shape);
void compile_permute(ChipProgram &cp, const PermuteOp &op, const std::vector<int64_t> &output_shape);
void compile_elementwise(ChipProgram &cp, const GemmPattern &g, const std::vector<int64_t> &output_shape);

/// sxm.transpose of `src` into `dst`: each block of L rows (L lanes of `dt` a row) comes out
/// transposed, row j of a block holding lane j of the block's rows (layout_codegen.cpp).
void emit_sxm_transpose(VectorEmitter &e, chipsim::DType dt, const chipsim::TileRef &dst, const chipsim::TileRef &src,
                        const std::string &what);

/// The chip dtype that holds values of `t` unchanged; throws tessera::Error naming `what`.
chipsim::DType chip_storage_dtype(Type t, const std::string &what);

} // namespace tessera::internal::chip
