// The chip library schedules (chip_schedules.h).
#include "tessera/codegen/chip_schedules.h"

#include <algorithm>
#include <tuple>

#include "gemm_codegen.h"
#include "gemm_pattern.h"
#include "loop_nest_codegen.h"
#include "op_recognizer.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"

namespace tessera {

void apply_chip_library_schedule(const Pipeline &pipeline, const Target &target,
                                 const std::vector<std::vector<int64_t>> &output_shapes) {
    const chipsim::Target t = chip_target_description(target);
    if (auto v = internal::chip::recognize_vector_op(pipeline)) {
        // softmax, layernorm and depthwise conv2d tile themselves on the VXM (16-row or
        // 16-channel blocks); attention's two matmuls are the MXM's.
        if (v->kind == internal::chip::VectorOp::Kind::Attention) {
            const Func out = pipeline.outputs()[0];
            for (const Func &f : pipeline.functions())
                if (f.name() == out.name() || f.name() == out.name() + "_scores") {
                    Func m = f;
                    RDom k(std::const_pointer_cast<internal::ReductionDomainContents>(m.contents()->updates[0].rdom));
                    m.update().tensorize("mxm", {Var("i"), Var("j"), k.x});
                }
        }
        return;
    }
    // Vector stages compile from their loop nests under the chip's default rule (vector_lanes.h);
    // a product the GEMM matcher hands back (a weighted stencil) too.
    if (!internal::chip::may_need_matrix_unit(pipeline)) return;
    std::optional<internal::chip::GemmPattern> matched;
    try {
        matched = internal::chip::match_gemm(pipeline);
    } catch (const Error &) {
        if (internal::chip::needs_matrix_unit(pipeline)) throw;
        return;
    }
    const internal::chip::GemmPattern &g = *matched;
    if (g.conv) { // the implicit GEMM picks whole output rows per tile itself
        Func out = g.product;
        out.store_in(MemoryKind::ACC);
        return;
    }
    const std::vector<int64_t> &shape = output_shapes.at(0);
    const int bd = g.batch_dims;
    const int64_t M = shape.at(size_t(bd)), N = shape.at(size_t(bd + 1));
    const bool int8 = g.a->type() == Int(8);
    const chipsim::MxmShape &unit = t.mxm_shape(int8 ? chipsim::DType::Int8 : chipsim::DType::BF16);
    const bool streaming = t.issue == chipsim::IssueKind::Static;
    int64_t tm = std::min<int64_t>(M, 512), tn = unit.n;
    if (!streaming) {
        const auto &as = g.a->shape();
        const std::optional<int64_t> K = as_const_int(as.at(as.size() - (g.a_transposed ? 2 : 1)));
        std::tie(tm, tn) = internal::chip::npu_default_tile(M, N, K.value_or(0), int8 ? chipsim::DType::Int8 : chipsim::DType::BF16, t);
    }
    tm = std::max<int64_t>(tm, 1);
    Func c = g.product;
    if (streaming) {
        // A and B that do not fit MEM together stream over the host link on a plan
        // (stream_plan.h) whose cost model chooses the row chunk of each job; a tile here would
        // pin it (int8 2048³: 796,679 cycles on the plan's 256-row chunks, 803,767 at 512).
        auto elements = [](const Input &in) {
            int64_t n = 1;
            for (const Expr &d : in.shape()) n *= as_const_int(d).value_or(0);
            return n;
        };
        const int64_t element_bytes = int8 ? 1 : 2; // fp32 operands enter the chip as bf16
        const chipsim::MemoryDesc *mem = t.memory("MEM");
        if (mem && (elements(*g.a) + elements(*g.b)) * element_bytes > mem->capacity_bytes()) {
            c.store_in(MemoryKind::ACC).double_buffer();
            return;
        }
    }
    const std::vector<std::string> args = c.args();
    Var i(args[size_t(bd)]), j(args[size_t(bd + 1)]);
    const std::string k = c.contents()->updates[0].rdom->vars[0].name;
    Var io("io"), jo("jo"), ii("ii"), ji("ji"), ko("ko"), ki("ki");
    Stage s = c.update();
    s.split(k, ko, ki, unit.k)
        .tile(i, j, io, jo, ii, ji, int(tm), int(tn))
        .reorder({io, jo, ko, ii, ji, ki})
        .tensorize("mxm", {ii, ji, ki});
    c.store_in(MemoryKind::ACC).double_buffer();
}

ChipResult realize_library_kernel_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                          const Bindings &bindings, const Target &target, const ChipRunOptions &options) {
    apply_chip_library_schedule(pipeline, target, output_shapes);
    return realize_on_chip(pipeline, output_shapes, bindings, target, options);
}

} // namespace tessera
