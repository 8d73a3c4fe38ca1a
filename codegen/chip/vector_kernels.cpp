// Dispatch to the non-GEMM chip kernels and the schedule checks they share (vector_kernels.h).
#include "vector_kernels.h"

#include <algorithm>
#include <cctype>

#include "tessera/error.h"
#include "tessera/internal/function.h"

namespace tessera::internal::chip {

void compile_vector_op(ChipProgram &cp, const VectorOp &op, const std::vector<int64_t> &output_shape, const ChipLayoutRequests &layouts) {
    switch (op.kind) {
    case VectorOp::Kind::Softmax:
    case VectorOp::Kind::Layernorm: compile_rowwise(cp, op, output_shape, layouts); return;
    case VectorOp::Kind::DepthwiseConv: compile_depthwise(cp, *op.depthwise, output_shape); return;
    case VectorOp::Kind::Attention: compile_attention(cp, *op.attention, output_shape); return;
    case VectorOp::Kind::Permute: compile_permute(cp, *op.permute, output_shape); return;
    case VectorOp::Kind::Elementwise: compile_elementwise(cp, *op.elementwise, output_shape); return;
    }
}

void check_vector_op_schedule(const Pipeline &p, const VectorOp &op) {
    const std::string out = p.outputs()[0].name();
    // The attention kernel runs its two matmuls (the update stages of `name_scores` and `name`)
    // on the MXM; no other stage of these ops is a matmul.
    auto mxm_stage = [&](const std::string &func, int stage) {
        return op.kind == VectorOp::Kind::Attention && stage == 1 && (func == out || func == out + "_scores");
    };
    for (const Func &f : p.functions())
        for (auto &[stage, directives] : f.contents()->schedule.stages)
            for (const Directive &d : directives) {
                const std::string where = stage_display_name(f.name(), stage) + ": " + d.to_string();
                if (d.kind == DirectiveKind::Tensorize) {
                    std::string unit = d.unit;
                    std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return char(std::tolower(c)); });
                    if (unit != "mxm" || !mxm_stage(f.name(), stage))
                        throw Error("chip backend: " + where + ": this nest is not a matmul (acc[i, j] += a[i, k] * b[k, j])" +
                                    (op.kind == VectorOp::Kind::Attention
                                         ? "; only the update stages of " + out + "_scores and " + out + " run on the MXM"
                                         : "; " + out + " runs on the VXM, drop the tensorize"));
                }
                if (d.kind == DirectiveKind::StoreIn && d.bank >= 0)
                    throw Error("chip backend: " + where + ": the chip kernel of " + out +
                                " places its own tiles (conflict-free by construction); drop the bank");
            }
}

} // namespace tessera::internal::chip
