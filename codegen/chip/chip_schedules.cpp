// The chip library schedules (chip_schedules.h).
#include "tessera/codegen/chip_schedules.h"

#include <algorithm>
#include <tuple>

#include "gemm_codegen.h"
#include "gemm_pattern.h"
#include "loop_nest_codegen.h"
#include "loop_nest_ir.h"
#include "op_recognizer.h"
#include "program_tensors.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"

namespace tessera {

namespace {

/// The reads of `name` in definition `d` (its value and its left-hand side's arguments).
std::vector<const Call *> reads_of(const internal::Definition &d, const std::string &name) {
    std::vector<Expr> calls = internal::chip::func_calls(d.value);
    for (const Expr &a : d.args) {
        std::vector<Expr> in_args = internal::chip::func_calls(a);
        calls.insert(calls.end(), in_args.begin(), in_args.end());
    }
    std::vector<const Call *> out;
    for (const Expr &e : calls)
        if (e.as<Call>()->name == name) out.push_back(e.as<Call>());
    return out;
}

/// Whether a read indexes its first `lead` dimensions by its definition's own first pure
/// variables and the others by constants (a reduction's update reading its own point: by its own
/// arguments): the row of the caller it is computed for.
bool reads_by_row(const internal::Definition &d, const Call *c, bool own_point, size_t lead) {
    if (c->args.size() < lead || d.args.size() < lead) return false;
    for (size_t i = 0; i < lead; ++i)
        if (!d.args[i].as<Variable>() || !equal(c->args[i], d.args[i])) return false;
    for (size_t i = lead; i < c->args.size(); ++i)
        if (!as_const_int(c->args[i]) && !(own_point && i < d.args.size() && equal(c->args[i], d.args[i]))) return false;
    return true;
}

/// The default tiling of a vector pipeline whose Inputs are too large to preload: reductions
/// along the output's rows (a norm's statistics, a softmax's max and sum; the rows of an output
/// of rank r are its first r - 1 dimensions, the blocks cut along the last of them, a batch's
/// and a head's loops outside) are computed at blocks of the output's rows, as many rows as keep one block's Input tiles on chip between
/// the reduction and its reader (loop_nest_codegen.h), so each Input crosses off-chip memory
/// once rather than once per stage. Where the Inputs are preloaded (tsp-mini's 4 MiB) nothing
/// changes: they are read once already, and whole-row stages interleave better.
void block_row_reductions(const Pipeline &p, const chipsim::Target &t, const std::vector<std::vector<int64_t>> &shapes) {
    if (p.outputs().size() != 1 || shapes.at(0).size() < 2 || !(p.schedule() == Schedule{})) return;
    Func out = p.outputs()[0];
    if (!out.contents()->updates.empty()) return;
    const std::vector<int64_t> &shape = shapes[0];
    const size_t lead = shape.size() - 1; // the row dimensions
    int64_t all_rows = 1;
    for (size_t d = 0; d < lead; ++d) all_rows *= shape[d];
    const int64_t rows = shape[lead - 1];
    // Vector rows of Input tiles: all of them, and one lane chunk of output rows' worth of those
    // read row by row (an Input whose leading dimensions are the output's rows).
    int64_t input_rows = 0, chunk_rows = 0;
    for (const Input &in : p.inputs()) {
        int64_t elements = 1;
        for (const Expr &d : in.shape()) elements *= as_const_int(d).value_or(0);
        input_rows += (elements * in.type().bytes() + t.vector_bytes - 1) / t.vector_bytes;
        bool by_rows = in.shape().size() >= lead;
        for (size_t d = 0; by_rows && d < lead; ++d) by_rows = as_const_int(in.shape()[d]) == shape[d];
        if (by_rows) chunk_rows += elements / all_rows;
    }
    if (input_rows <= internal::chip::preload_limit_rows(t) || chunk_rows == 0) return;
    // The blocks' rows run across the lanes: a last row dimension narrower than the lanes
    // ([128, 1, 768]) would leave most of them idle.
    if (lead > 1 && rows < t.lanes(chipsim::DType::FP32)) return;
    // Reductions read only row by row, by the output or by other reductions computed with them
    // (softmax's max, read by its sum of exponentials and by the output): every read is then
    // inside the output's row block. A reduction read otherwise leaves the set, and so may
    // its producers; what remains is the largest such set.
    std::vector<Func> blocked;
    for (const Func &f : p.functions())
        if (f.name() != out.name() && !f.contents()->updates.empty()) blocked.push_back(f);
    auto in_block = [&](const std::string &name) {
        return name == out.name() || std::any_of(blocked.begin(), blocked.end(), [&](const Func &b) { return b.name() == name; });
    };
    auto read_by_row_inside_the_block = [&](const Func &f) {
        for (const Func &caller : p.functions())
            for (int s = 0; s < caller.contents()->num_stages(); ++s) {
                const internal::Definition &d = caller.contents()->stage(s);
                for (const Call *c : reads_of(d, f.name()))
                    if (!in_block(caller.name()) || !reads_by_row(d, c, caller.name() == f.name(), lead)) return false;
            }
        return true;
    };
    for (size_t before = 0; before != blocked.size();) {
        before = blocked.size();
        std::vector<Func> kept;
        for (const Func &f : blocked)
            if (read_by_row_inside_the_block(f)) kept.push_back(f);
        blocked = kept;
    }
    if (blocked.empty()) return;
    const int64_t chunks = internal::chip::kept_tiles_limit_rows(t) / chunk_rows;
    if (chunks < 1) return; // one chunk's tiles would not stay on chip: no block reads less
    const int64_t block = std::min(rows, t.lanes(chipsim::DType::FP32) * chunks);
    const std::string row = out.contents()->args[lead - 1];
    out.split(Var(row), Var(row + "_block"), Var(row + "_lane"), int(block)).vectorize(Var(row + "_lane"));
    for (Func &f : blocked) f.compute_at(out, Var(row + "_block"));
}

} // namespace

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
    // so do a product the GEMM matcher hands back (a weighted stencil) and pipelines of several
    // matmuls (their matrix stages).
    if (!internal::chip::may_need_matrix_unit(pipeline)) return block_row_reductions(pipeline, t, output_shapes);
    std::optional<internal::chip::GemmPattern> matched;
    try {
        matched = internal::chip::match_gemm(pipeline);
    } catch (const Error &) {
        return; // not a library kernel's form: the loop-nest compiler's default rule (matrix stages included)
    }
    const internal::chip::GemmPattern &g = *matched;
    if (!g.fits_library_kernel(output_shapes.at(0))) return; // the loop-nest compiler's default rule
    if (g.conv) { // the implicit GEMM's rows are output pixels: whole output rows per tile
        Func out = g.product;
        out.store_in(MemoryKind::ACC);
        // npu-edge: the tile as output rows and channels (the tuner resizes it), the backend's
        // default; tsp-mini's waves of planes cut the rows themselves.
        if (t.issue == chipsim::IssueKind::Dynamic) {
            const std::vector<int64_t> &shape = output_shapes.at(0);
            const internal::chip::ConvParams &cv = *g.conv;
            const internal::chip::GemmPattern::ConvTileLoops loops = g.conv_tile_loops();
            const std::string &y = loops.rows, &c = loops.channels;
            const int64_t ow = shape.at(size_t(loops.rows_dim + 1)), oh = shape.at(size_t(loops.rows_dim));
            const std::vector<int64_t> image = constant_shape(*g.a);
            const int64_t cg = image.at(size_t(loops.channels_dim)) / cv.groups, og = shape.at(size_t(loops.channels_dim)) / cv.groups;
            const chipsim::DType dtype = g.a->type() == Int(8) ? chipsim::DType::Int8 : chipsim::DType::BF16;
            const chipsim::MxmShape &unit = t.mxm_shape(dtype);
            auto round_up = [](int64_t v, int64_t m) { return (v + m - 1) / m * m; };
            const auto [tm, tn] = internal::chip::npu_default_tile(oh * ow, round_up(og, unit.n), cv.kh * cv.kw * round_up(cg, unit.k), dtype, t);
            out.update().tile(Var(y), Var(c), Var(y + "o"), Var(c + "o"), Var(y + "i"), Var(c + "i"), int(internal::chip::npu_conv_tile_rows(oh, ow, tm)), int(tn));
        }
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
