// The chip backend's entry points: compile (pattern -> kernel description -> instructions ->
// schedule -> program), run on chipsim with host-side layout marshalling, and the realizer for
// Target::Kind::Chip (chip_backend.h).
#include "tessera/codegen/chip_backend.h"

#include <algorithm>
#include <iterator>
#include <cctype>
#include <map>
#include <sstream>

#include "conv_image_codegen.h"
#include "gemm_codegen.h"
#include "gemm_pattern.h"
#include "instruction_scheduler.h"
#include "loop_nest_codegen.h"
#include "problem_size.h"
#include "op_recognizer.h"
#include "program_tensors.h"
#include "vector_kernels.h"
#include "vector_epilogue.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/simulator.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/realize.h"

namespace tessera {

namespace {

using internal::chip::GemmKernel;
using internal::chip::GemmPattern;

int64_t const_extent(const Expr &e, const std::string &what) {
    if (auto v = as_const_int(e)) return *v;
    throw Error("chip backend: " + what + " is not a constant; chip kernels are compiled for fixed shapes");
}

std::string lower_case(std::string s) {
    for (auto &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// Where each loop of the matmul's update came from: its original variable and extent.
struct LoopOrigin {
    std::string var;
    int64_t extent = 0;
    bool innermost = true; ///< The inner part of every split on its way.
    bool split = false;    ///< Made by a split (not an original loop).
};

/// blocks_per_row(n) on the product: checked against chip_blocks_per_row_values.
void apply_blocks_per_row(const std::string &product, const Directive &d, const chipsim::Target &t, GemmKernel &kk) {
    const std::vector<int64_t> legal = chip_blocks_per_row_values(t, kk.in_dtype);
    if (d.factors.size() != 1 || std::find(legal.begin(), legal.end(), d.factors[0]) == legal.end()) {
        std::string values;
        for (int64_t v : legal) values += (values.empty() ? "" : " or ") + std::to_string(v);
        throw Error("chip backend: " + product + ": " + d.to_string() + ": " + t.name + " takes " + values + " " +
                    chipsim::dtype_name(kk.in_dtype) + " MXM block(s) per " + t.memories[0].name + " row");
    }
    kk.pack_rows = d.factors[0] == 2 ? 1 : 0;
}

/// double_buffer([false]) on the product: factors {} or {1} two accumulator buffers, {0} one.
void apply_double_buffer(const std::string &product, const Directive &d, const chipsim::Target &t, GemmKernel &kk) {
    if (d.factors.size() > 1 || (d.factors.size() == 1 && d.factors[0] != 0 && d.factors[0] != 1))
        throw Error("chip backend: " + product + ": " + d.to_string() + ": " + t.name +
                    " double-buffers the accumulators or not: factors [] or [1] (on) or [0] (off)");
    kk.double_buffer = d.factors.empty() || d.factors[0] != 0;
}

/// tile_order(order) on the product: checked against chip_tile_order_values.
void apply_tile_order(const std::string &product, const Directive &d, const chipsim::Target &t, GemmKernel &kk) {
    const std::vector<std::string> legal = chip_tile_order_values(t);
    if (d.vars.size() != 1 || std::find(legal.begin(), legal.end(), d.vars[0]) == legal.end()) {
        if (legal.empty())
            throw Error("chip backend: " + product + ": " + d.to_string() + ": " + t.name +
                        "'s matmuls run their output tiles in waves over the planes, in one fixed order: drop tile_order");
        std::string values;
        for (const std::string &v : legal) values += (values.empty() ? "\"" : "\", \"") + v;
        throw Error("chip backend: " + product + ": " + d.to_string() + ": " + t.name + " orders output tiles as " + values + "\"");
    }
    kk.tile_order = d.vars[0];
}

/// The product's directives that shape the kernel itself (not its tiles or banks).
void apply_kernel_directive(const std::string &product, const Directive &d, const chipsim::Target &t, GemmKernel &kk) {
    if (d.kind == DirectiveKind::BlocksPerRow) apply_blocks_per_row(product, d, t, kk);
    if (d.kind == DirectiveKind::DoubleBuffer) apply_double_buffer(product, d, t, kk);
    if (d.kind == DirectiveKind::TileOrder) apply_tile_order(product, d, t, kk);
}

/// Reads the directives of the matmul's update (tile/split sizes, tensorize) and of the Funcs
/// (store_in, double_buffer) into the kernel description, checking what the chip can do.
void apply_directives(const GemmPattern &g, const chipsim::Target &t, int64_t m, int64_t n, int64_t k, GemmKernel &kk,
                      const Pipeline &p) {
    const std::string i = g.product.args()[size_t(g.batch_dims)], j = g.product.args()[size_t(g.batch_dims + 1)];
    const auto &u = g.product.contents()->updates[0];
    const std::string kv = u.rdom->vars[0].name;
    const std::string stage = internal::stage_display_name(g.product.name(), 1);
    const auto &shape = t.mxm_shape(kk.in_dtype);
    std::map<std::string, LoopOrigin> loops;
    for (int d = 0; d < g.batch_dims; ++d) loops[g.product.args()[size_t(d)]] = {g.product.args()[size_t(d)], 0};
    loops[i] = {i, m};
    loops[j] = {j, n};
    loops[kv] = {kv, k};
    bool tensorized = false;
    for (const Directive &d : g.product.contents()->schedule.stage(1)) {
        auto split = [&](const std::string &old, const std::string &outer, const std::string &inner, int64_t f) {
            auto it = loops.find(old);
            if (it == loops.end()) return;
            LoopOrigin o = it->second;
            loops.erase(it);
            loops[outer] = {o.var, (o.extent + f - 1) / f, false, true};
            loops[inner] = {o.var, f, o.innermost, true};
        };
        switch (d.kind) {
        case DirectiveKind::Split: split(d.vars[0], d.vars[1], d.vars[2], d.factors[0]); break;
        case DirectiveKind::Tile: {
            const size_t nv = d.factors.size();
            for (size_t x = 0; x < nv; ++x) split(d.vars[x], d.vars[nv + x], d.vars[2 * nv + x], d.factors[x]);
            break;
        }
        case DirectiveKind::Tensorize: {
            if (lower_case(d.unit) != "mxm")
                throw Error("chip backend: " + stage + ": " + d.to_string() + " names the unit '" + d.unit +
                            "'; a matmul nest tensorizes onto \"mxm\"");
            std::map<std::string, LoopOrigin> covered;
            for (auto &v : d.vars) {
                auto it = loops.find(v);
                if (it == loops.end())
                    throw Error("chip backend: " + stage + ": " + d.to_string() + " names loop " + v + ", which is not a loop of the stage");
                if (!it->second.innermost)
                    throw Error("chip backend: " + stage + ": " + d.to_string() + " covers " + v +
                                ", an outer part of a split; the MXM takes the innermost tile of " + it->second.var);
                if (covered.count(it->second.var))
                    throw Error("chip backend: " + stage + ": " + d.to_string() + " covers two loops of " + it->second.var);
                covered[it->second.var] = it->second;
            }
            for (auto &[var, what] : std::vector<std::pair<std::string, const char *>>{{i, "rows i"}, {j, "columns j"}, {kv, "reduction k"}})
                if (!covered.count(var))
                    throw Error("chip backend: " + stage + ": " + d.to_string() + " does not cover the " + what + " (" + var +
                                "); the MXM nest is acc[i, j] += a[i, k] * b[k, j] and needs one loop of each");
            if (covered.size() != 3)
                throw Error("chip backend: " + stage + ": " + d.to_string() + " covers a batch loop; tensorize the inner i, j, k only");
            const int64_t je = covered[j].extent, ke = covered[kv].extent, ie = covered[i].extent;
            if (je % shape.n != 0 && je < n)
                throw Error("chip backend: " + stage + ": " + d.to_string() + ": the tensorized j extent " + std::to_string(je) +
                            " is not a multiple of the " + t.name + " MXM width " + std::to_string(shape.n) + " for " +
                            chipsim::dtype_name(kk.in_dtype));
            if (ke % shape.k != 0 && ke < k)
                throw Error("chip backend: " + stage + ": " + d.to_string() + ": the tensorized k extent " + std::to_string(ke) +
                            " is not a multiple of the " + t.name + " MXM depth " + std::to_string(shape.k));
            kk.tile_m = std::min(ie, m);
            kk.tile_n = je;
            tensorized = true;
            break;
        }
        default: break; // parallel, vectorize, unroll, reorder: CPU loop shapes, no meaning on the MXM
        }
    }
    if (!tensorized) // tile/split sizes without tensorize still shape the output tiles
        for (auto &[name, o] : loops) {
            if (!o.innermost || !o.split || o.extent <= 0) continue;
            if (o.var == i) kk.tile_m = std::min(o.extent, m);
            if (o.var == j) kk.tile_n = std::min(o.extent, n);
        }
    for (const Directive &d : g.product.contents()->schedule.stage(0)) {
        if (d.kind == DirectiveKind::StoreIn) {
            if (d.memory == MemoryKind::ACC) kk.acc_bank = d.bank;
            else if (d.memory == MemoryKind::MEM || d.memory == MemoryKind::SPAD) kk.stage_bank = d.bank;
            else if (d.memory != MemoryKind::Auto)
                throw Error("chip backend: " + g.product.name() + ": " + d.to_string() + ": " + t.name +
                            " keeps a matmul's result in ACC and drains it to " + t.memories[0].name);
            if (d.memory == MemoryKind::ACC && d.bank >= 0) {
                const chipsim::MemoryDesc *acc = t.memory("ACC");
                if (acc && !acc->interleaved && d.bank >= acc->banks)
                    throw Error("chip backend: " + g.product.name() + ": " + d.to_string() + ": " + t.name + " has ACC banks 0.." +
                                std::to_string(acc->banks - 1));
            }
        }
        apply_kernel_directive(g.product.name(), d, t, kk);
    }
    if (g.output.name() != g.product.name())
        for (const Directive &d : g.output.contents()->schedule.stage(0))
            if (d.kind == DirectiveKind::StoreIn && d.bank >= 0) kk.out_bank = d.bank;
    // tensorize on any other Func is a nest the MXM cannot take.
    for (const Func &f : p.functions()) {
        for (auto &[s, ds] : f.contents()->schedule.stages)
            for (const Directive &d : ds)
                if (d.kind == DirectiveKind::Tensorize && (f.name() != g.product.name() || s != 1) && lower_case(d.unit) == "mxm")
                    throw Error("chip backend: " + internal::stage_display_name(f.name(), s) + ": " + d.to_string() +
                                ": this nest is not a matmul (acc[i, j] += a[i, k] * b[k, j]); " +
                                (f.name() == g.product.name() ? "tensorize the update stage, not the pure definition"
                                                              : "only " + g.product.name() + ".update(0) can use the MXM"));
    }
    if (kk.tile_n > 0 && kk.tile_n % shape.n != 0) kk.tile_n = (kk.tile_n + shape.n - 1) / shape.n * shape.n;
}

/// The epilogue operands the caller asked to read narrower (ChipLayoutRequests::input_dtype):
/// bf16 for an fp32 operand of an fp32 accumulator, on a static-issue chip, whose kernels widen
/// it on chip; any other request is not taken.
void read_operands_narrower(GemmKernel &kk, const ChipLayoutRequests &layouts, const chipsim::Target &t) {
    if (t.issue != chipsim::IssueKind::Static || kk.acc_dtype != chipsim::DType::FP32) return;
    for (internal::chip::VectorOperand &op : kk.epilogue.operands) {
        const auto ask = layouts.input_dtype.find(op.source.input.name());
        if (ask != layouts.input_dtype.end() && ask->second == chipsim::DType::BF16 && op.dtype == chipsim::DType::FP32)
            op.dtype = chipsim::DType::BF16;
    }
}

thread_local std::unique_ptr<ChipResult> g_last_result;

} // namespace

std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int d = int(shape.size()) - 2; d >= 0; --d) s[size_t(d)] = s[size_t(d + 1)] * shape[size_t(d + 1)];
    return s;
}

std::vector<int64_t> constant_shape(const Input &in) {
    std::vector<int64_t> s;
    for (size_t d = 0; d < in.shape().size(); ++d) s.push_back(const_extent(in.shape()[d], "dimension " + std::to_string(d) + " of Input " + in.name()));
    return s;
}

void declare(ChipProgram &cp, const std::string &name, const std::string &source, chipsim::DType dt,
             std::vector<int64_t> chip_shape, std::vector<int64_t> source_shape, std::vector<int> dims,
             std::vector<int64_t> offset, bool output) {
    ChipTensorMap mp;
    mp.tensor = name;
    mp.source = source;
    mp.is_output = output;
    mp.chip_shape = chip_shape;
    mp.source_shape = std::move(source_shape);
    mp.chip_dim_of_source = std::move(dims);
    mp.chip_offset = std::move(offset);
    cp.program.tensors.push_back({name, dt, std::move(chip_shape), "", output});
    cp.tensors.push_back(std::move(mp));
}

/// conv2d as implicit GEMMs, one per channel group: the filter as [KH, KW, Cp, Og] = a
/// [KH*KW*Cp, Og] matrix per group, the result [N, OH, OW, Og] per group. The image crosses the
/// link as it is and the chip builds the layout the matmuls read (conv_image_codegen.h); only
/// an NHWC image whose channels are not whole 64-byte rows is still padded into [N, Hp, Wp, Cp]
/// on the host (groups = 1 only).
/// The dtype the caller asked `output` to be stored in (`copy`: a copy of it), when the kernel
/// can store it so.
std::optional<chipsim::DType> packed_output(const GemmKernel &kernel, const ChipLayoutRequests &layouts, const std::string &output,
                                            const chipsim::Target &t, bool copy) {
    const std::map<std::string, chipsim::DType> &requests = copy ? layouts.copy_dtype : layouts.output_dtype;
    const auto asked = requests.find(output);
    if (asked == requests.end() || asked->second == kernel.epilogue.out_dtype ||
        !internal::chip::gemm_packs_output(kernel, asked->second, t, copy))
        return std::nullopt;
    return asked->second;
}

void declare_copy(ChipProgram &cp, const ChipTensorMap &of, const std::string &name, chipsim::DType dtype) {
    ChipTensorMap copy = of;
    copy.tensor = name;
    chipsim::TensorDecl decl{name, dtype, of.chip_shape, "", false};
    decl.is_buffer = true;
    cp.program.tensors.push_back(std::move(decl));
    cp.copies.push_back(std::move(copy));
}

ChipProgram compile_conv(ChipProgram &cp, const GemmPattern &g, const std::vector<int64_t> &shape, const Pipeline &p,
                         const ChipLayoutRequests &layouts) {
    using internal::chip::ConvImageSource;
    const chipsim::Target &t = cp.target;
    const internal::chip::ConvParams &cv = *g.conv;
    const std::vector<int64_t> xs = constant_shape(*g.a), ws = constant_shape(*g.b);
    const int64_t N = xs[0], C = cv.nchw ? xs[1] : xs[3], H = cv.nchw ? xs[2] : xs[1], W = cv.nchw ? xs[3] : xs[2];
    const int64_t O = cv.nchw ? shape[1] : shape[3], OH = cv.nchw ? shape[2] : shape[1], OW = cv.nchw ? shape[3] : shape[2];
    const int64_t G = cv.groups, Cg = C / G, Og = O / G;
    GemmKernel base;
    base.in_dtype = g.a->type() == Int(8) ? chipsim::DType::Int8 : chipsim::DType::BF16;
    base.acc_dtype = g.acc_type == Int(32) ? chipsim::DType::Int32 : chipsim::DType::FP32;
    if (!t.mxm_supports(base.in_dtype)) throw Error(std::string("chip backend: the MXM of ") + t.name + " does not take " + chipsim::dtype_name(base.in_dtype));
    const auto &unit = t.mxm_shape(base.in_dtype);
    const int64_t lanes = t.lanes(base.in_dtype);
    auto round_up = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
    // An NCHW image the caller has in NHWC already (the result of a conv before it): the chip's
    // layout pass reads it as an NHWC image, when it can.
    const auto asked = layouts.order.find(g.a->name());
    const bool read_nhwc = cv.nchw && asked != layouts.order.end() && asked->second == std::vector<int>{0, 2, 3, 1} &&
                           internal::chip::conv_image_on_chip({"X", base.in_dtype, false, N, C, H, W, 0, Cg}, t);
    const bool image_nchw = cv.nchw && !read_nhwc;
    std::vector<ConvImageSource> sources;
    bool on_chip = true;
    for (int64_t gi = 0; gi < G; ++gi) {
        sources.push_back({"X", base.in_dtype, image_nchw, N, C, H, W, gi * Cg, Cg});
        on_chip = on_chip && internal::chip::conv_image_on_chip(sources.back(), t);
    }
    if (cv.pad_value != 0) {
        // The chip's layout pass pads with zero rows; a padding of another value (an integer
        // conv's zero point) is written by the host into the padded image.
        std::ostringstream value;
        value << cv.pad_value;
        if (G > 1)
            throw Error("chip backend: grouped conv2d " + g.output.name() + " pads its image with " + value.str() +
                        " (an integer conv's zero point); the chip's layout pass pads with zeros, and a grouped conv needs it");
        on_chip = false;
    }
    if (!on_chip && G > 1)
        throw Error("chip backend: grouped conv2d " + g.output.name() + ": " +
                    (cv.nchw ? "the NCHW image " + g.a->name() + "'s channel planes of " + std::to_string(H * W) +
                                   " pixels are more than the chip's layout pass stages at once on " + t.name + "; use smaller tiles of the image"
                             : "each group's " + std::to_string(Cg) + " channels of the NHWC image " + g.a->name() + " are not whole " +
                                   std::to_string(t.vector_bytes) + "-byte rows, which the chip's layout pass needs to cut out a "
                                   "group's channels; use NCHW, or a multiple of " + std::to_string(lanes) + " channels per group"));
    // On chip, a pixel's channels are whole vector rows (the transposes' and DMA rows' unit),
    // except in npu-edge's DRAM image of an NCHW image, which pads them to the array's depth
    // only (32 int8 channels: half a row; conv_image_codegen.cpp doubles such rows).
    const bool dram_image = on_chip && image_nchw && t.issue != chipsim::IssueKind::Static;
    const int64_t Cp = on_chip && !dram_image ? round_up(Cg, lanes) : round_up(dram_image ? Cg : C, unit.k), Op = round_up(Og, unit.n);
    GemmKernel::Conv geo;
    geo.hp = std::max((OH - 1) * cv.stride_h + (cv.kh - 1) * cv.dilation_h + 1, cv.pad_top + H);
    geo.wp = std::max((OW - 1) * cv.stride_w + (cv.kw - 1) * cv.dilation_w + 1, cv.pad_left + W);
    geo.cp = Cp;
    geo.oh = OH;
    geo.ow = OW;
    geo.kh = cv.kh;
    geo.kw = cv.kw;
    geo.sh = cv.stride_h;
    geo.sw = cv.stride_w;
    geo.dh = cv.dilation_h;
    geo.dw = cv.dilation_w;
    geo.h = H;
    geo.w = W;
    geo.pad_top = cv.pad_top;
    geo.pad_left = cv.pad_left;
    base.groups = N;
    base.m = OH * OW;
    base.n = Op;
    base.k = cv.kh * cv.kw * Cp;
    base.a_batched = true;
    base.b_batched = false;
    for (const Directive &d : g.product.contents()->schedule.stage(0)) {
        if (d.kind == DirectiveKind::StoreIn && d.memory == MemoryKind::ACC && d.bank >= 0) base.acc_bank = d.bank;
        apply_kernel_directive(g.product.name(), d, t, base);
    }
    // npu-edge's output tile from a split or tile of the update's output rows y (R whole rows:
    // R * OW accumulator rows) and output channels (whole MXM columns); tsp-mini's waves of
    // planes cut the rows themselves.
    if (t.issue == chipsim::IssueKind::Dynamic) {
        const GemmPattern::ConvTileLoops loops = g.conv_tile_loops();
        auto split = [&](const std::string &var, int64_t factor) {
            if (var == loops.rows) base.tile_m = std::min(factor, OH) * OW;
            if (var == loops.channels) base.tile_n = std::min(round_up(factor, unit.n), Op);
        };
        for (const Directive &d : g.product.contents()->schedule.stage(1)) {
            if (d.kind == DirectiveKind::Split) split(d.vars.at(0), d.factors.at(0));
            if (d.kind == DirectiveKind::Tile)
                for (size_t x = 0; x < d.factors.size(); ++x) split(d.vars.at(x), d.factors[x]);
        }
    }
    base.epilogue = internal::chip::compile_epilogue(g, base.acc_dtype);
    read_operands_narrower(base, layouts, cp.target);
    base.packed_out = packed_output(base, layouts, g.output.name(), t, false);
    if (!base.packed_out && G == 1) base.copy_out = packed_output(base, layouts, g.output.name(), t, true);

    chipsim::TimingModel model(t);
    const std::vector<int> nchw_to_nhwc{0, 3, 1, 2};
    const std::vector<int> image_dims = cv.nchw ? nchw_to_nhwc : std::vector<int>{0, 1, 2, 3};
    // npu-edge reads an NHWC image (one group) by bands straight from the tensor where it reads
    // by bands at all, zeroing each band's padding itself: the pre-pass's padded copy in DRAM,
    // which the first band waited for, is not made.
    bool raw_bands = false;
    if (on_chip && !image_nchw && G == 1) {
        GemmKernel probe = base;
        probe.conv = geo;
        probe.conv->raw_image = true;
        raw_bands = internal::chip::npu_reads_image_bands(probe, model);
    }
    internal::chip::ConvPrepass pre;
    if (raw_bands) pre.summary = "image " + g.a->name() + " (NHWC) read as it is, by bands; ";
    if (on_chip && read_nhwc) {
        declare(cp, "X", g.a->name(), base.in_dtype, {N, H, W, C}, xs, nchw_to_nhwc, {}, false);
        if (!raw_bands) pre = internal::chip::emit_conv_images(sources, {geo.hp, geo.wp, cv.pad_top, cv.pad_left, Cp}, model);
    } else if (on_chip) {
        declare(cp, "X", g.a->name(), base.in_dtype, xs, xs, {0, 1, 2, 3}, {}, false);
        if (!raw_bands) pre = internal::chip::emit_conv_images(sources, {geo.hp, geo.wp, cv.pad_top, cv.pad_left, Cp}, model);
    } else {
        declare(cp, "A", g.a->name(), base.in_dtype, {N, geo.hp, geo.wp, Cp}, xs, image_dims,
                cv.nchw ? std::vector<int64_t>{0, 0, cv.pad_top, cv.pad_left} : std::vector<int64_t>{0, cv.pad_top, cv.pad_left, 0}, false);
        cp.tensors.back().pad_value = cv.pad_value;
    }
    // A group's slice of a tensor whose channel dimension (source dimension `cdim`, chip
    // dimension `chip_c`) holds all groups' channels.
    auto slice_of_group = [&](int64_t gi, int cdim, int chip_c, int64_t per_group) {
        ChipTensorMap &mp = cp.tensors.back();
        if (G == 1) return;
        mp.chip_offset.assign(mp.source_shape.size(), 0);
        mp.chip_offset[size_t(cdim)] = -gi * per_group;
        mp.chip_limit = mp.chip_shape;
        mp.chip_limit[size_t(chip_c)] = per_group;
    };
    const int cdim = cv.nchw ? 1 : 3;
    std::vector<internal::chip::ChipOp> kernel_ops;
    std::string summaries;
    for (int64_t gi = 0; gi < G; ++gi) {
        GemmKernel kk = base;
        kk.conv = geo;
        kk.tensor_suffix = G > 1 ? "_g" + std::to_string(gi) : "";
        const std::string sfx = kk.tensor_suffix;
        if (raw_bands) {
            kk.conv->raw_image = true;
            kk.a_tensor = "X";
        } else if (on_chip) {
            const internal::chip::ConvImage &img = pre.images[size_t(gi)];
            kk.conv->image = img.tiles;
            kk.conv->zero_row = pre.zero_row;
            kk.conv->pixel_rows = img.pixel_rows;
            kk.conv->first_block = img.first_block;
            kk.conv->reserved = pre.placed;
            kk.a_tensor = img.tensor;
            kk.a_offset = img.offset;
        }
        declare(cp, "B" + sfx, g.b->name(), kk.in_dtype, {cv.kh, cv.kw, Cp, Op}, ws,
                cv.nchw ? std::vector<int>{3, 2, 0, 1} : std::vector<int>{0, 1, 2, 3}, {}, false);
        slice_of_group(gi, cv.nchw ? 0 : 3, 3, Og);
        for (size_t i = 0; i < kk.epilogue.operands.size(); ++i) {
            const auto &op = kk.epilogue.operands[i];
            const auto &od = op.source.output_dim;
            bool has_c = false, has_n = false, has_y = false, has_x = false;
            int c_source = -1;
            for (size_t d = 0; d < od.size(); ++d) {
                if (od[d] == cdim) c_source = int(d);
                has_c |= od[d] == cdim;
                has_n |= od[d] == 0;
                has_y |= od[d] == (cv.nchw ? 2 : 1);
                has_x |= od[d] == (cv.nchw ? 3 : 2);
            }
            if (!has_c || has_y != has_x)
                throw Error("chip backend: the epilogue of " + g.output.name() + " reads Input " + op.source.input.name() +
                            " in a way the VXM epilogue cannot broadcast (per channel, or per pixel and channel)");
            if (gi == 0) base.operand_dims.push_back({has_n, has_y, true});
            std::vector<int64_t> cs;
            int idx[4] = {-1, -1, -1, -1}; // chip dims: n, oh, ow, c
            if (has_n) { idx[0] = int(cs.size()); cs.push_back(N); }
            if (has_y) { idx[1] = int(cs.size()); cs.push_back(OH); idx[2] = int(cs.size()); cs.push_back(OW); }
            idx[3] = int(cs.size());
            cs.push_back(Op);
            std::vector<int> dims;
            for (int d : od) {
                int role = d < 0 ? -1 : d == 0 ? 0 : d == cdim ? 3 : d == (cv.nchw ? 2 : 1) ? 1 : 2;
                dims.push_back(role < 0 ? -1 : idx[role]);
            }
            declare(cp, "E" + std::to_string(i) + sfx, op.source.input.name(), op.dtype, cs, constant_shape(op.source.input), dims, {}, false);
            slice_of_group(gi, c_source, idx[3], Og);
        }
        kk.operand_dims = base.operand_dims;
        declare(cp, "C" + sfx, g.output.name(), kk.out_dtype(), {N, OH, OW, Op}, shape, image_dims, {}, true);
        slice_of_group(gi, cdim, 3, Og);
        if (kk.copy_out) declare_copy(cp, cp.tensors.back(), "Cb" + sfx, *kk.copy_out);
        std::string summary;
        std::vector<internal::chip::ChipOp> ops = internal::chip::emit_gemm(kk, model, summary);
        summaries += (G > 1 ? "group " + std::to_string(gi) + ": " : std::string()) + summary;
        kernel_ops.insert(kernel_ops.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
    }
    // The raw image first; the pre-pass's work after the kernel's preloads (it starts the
    // kernel's cycles, as its matmuls do), ahead of the matmuls, which read what it writes.
    std::vector<internal::chip::ChipOp> ops = std::move(pre.host_loads); // (moved: a conv's ops are many)
    auto first_compute = std::find_if(kernel_ops.begin(), kernel_ops.end(), [](const internal::chip::ChipOp &op) {
        return op.in.op != chipsim::Opcode::DmaLoad;
    });
    if (t.issue != chipsim::IssueKind::Static) first_compute = kernel_ops.begin();
    ops.reserve(ops.size() + kernel_ops.size() + pre.ops.size());
    ops.insert(ops.end(), std::make_move_iterator(kernel_ops.begin()), std::make_move_iterator(first_compute));
    ops.insert(ops.end(), std::make_move_iterator(pre.ops.begin()), std::make_move_iterator(pre.ops.end()));
    ops.insert(ops.end(), std::make_move_iterator(first_compute), std::make_move_iterator(kernel_ops.end()));
    cp.summary = "conv2d " + std::to_string(cv.kh) + "x" + std::to_string(cv.kw) + " as " +
                 (G > 1 ? std::to_string(G) + " implicit GEMMs, one per group (" : "an implicit GEMM (") + std::to_string(cv.kh * cv.kw) +
                 " taps, one matmul each) -> " + (on_chip ? "layout on chip: " + pre.summary : "image padded on the host; ") + summaries;
    cp.program.target = t.name;
    cp.program.instructions = t.issue == chipsim::IssueKind::Static ? internal::chip::schedule_static(ops, model)
                                                                    : internal::chip::insert_semaphores(std::move(ops), model);
    cp.outputs = {g.output.name()};
    cp.output_shapes = {shape};
    (void)p;
    return std::move(cp); // cp is the caller's: a plain return would copy every instruction
}

chipsim::Target chip_target_description(const Target &target) {
    if (target.kind() != Target::Kind::Chip)
        throw Error("chip backend: target '" + target.name() + "' is not a chip; use Target::named(\"tsp-mini\"), "
                    "Target::named(\"npu-edge\") or a chip JSON path");
    return chipsim::load_target(target.name());
}

std::vector<int64_t> chip_blocks_per_row_values(const chipsim::Target &t, chipsim::DType in_dtype) {
    return internal::chip::blocks_per_row_values(t, in_dtype);
}

std::vector<std::string> chip_tile_order_values(const chipsim::Target &t) { return internal::chip::tile_order_values(t); }

std::vector<std::string> chip_tile_order_values(const chipsim::Target &t, int64_t row_tiles, int64_t column_tiles) {
    return internal::chip::tile_order_values(t, row_tiles, column_tiles);
}

std::vector<int64_t> chip_double_buffer_values(const chipsim::Target &) { return {0, 1}; }

/// The pipelines with a matmul-shaped stage: matmuls with epilogues and convolutions on the MXM.
ChipProgram compile_matrix_pipeline(ChipProgram &cp, const Pipeline &pipeline, const GemmPattern &g,
                                    const std::vector<std::vector<int64_t>> &output_shapes, const ChipLayoutRequests &layouts);

namespace {

ChipProgram compile_pipeline(const Pipeline &pipeline, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes,
                             const ChipLayoutRequests &layouts);

} // namespace

std::string ChipProgram::assembly() const { return chipsim::disassemble(program); }

ChipProgram compile_for_chip(const Pipeline &pipeline, const Target &target,
                             const std::vector<std::vector<int64_t>> &output_shapes, const Bindings &bindings,
                             const ChipLayoutRequests &layouts) {
    (void)bindings;
    ChipProgram cp = compile_pipeline(pipeline, target, output_shapes, layouts);
    // Compiled within the rows the caller left it; it runs on the whole chip.
    if (layouts.reserved_rows > 0) cp.target = chip_target_description(target);
    cp.problem = internal::chip::problem_size(pipeline, output_shapes);
    // An output stored narrower at the caller's request (ChipLayoutRequests::output_dtype: every
    // reader rounds it so) crosses at that width, as an Input the MXM rounds does: its bytes
    // count so, and the kernel does not beat its bound by the bytes it was allowed to drop.
    for (size_t o = 0; o < cp.outputs.size() && o < output_shapes.size(); ++o) {
        if (!layouts.output_dtype.count(cp.outputs[o])) continue;
        const int64_t wide = cp.output_types.at(o).bytes();
        int64_t stored = wide; // the widest of its maps (a grouped conv writes one a group)
        bool mapped = false;
        for (const ChipTensorMap &m : cp.tensors)
            if (m.is_output && m.source == cp.outputs[o]) {
                const int64_t bytes = chipsim::dtype_bytes(cp.program.tensor(m.tensor)->dtype);
                stored = mapped ? std::max(stored, bytes) : bytes;
                mapped = true;
            }
        int64_t elements = 1;
        for (int64_t e : output_shapes[o]) elements *= e;
        if (stored < wide) cp.problem.output_bytes -= elements * (wide - stored);
    }
    // The loop-nest compiler labels each stage's instructions; a hand-written library kernel's
    // are one stage of the profile, named after what it computes.
    auto &instructions = cp.program.instructions;
    if (std::any_of(instructions.begin(), instructions.end(), [](const chipsim::Instruction &in) { return in.stage < 0; })) {
        std::string name;
        for (const std::string &o : cp.outputs) name += (name.empty() ? "" : ", ") + o;
        cp.program.stages.push_back(name + " (library kernel)");
        for (chipsim::Instruction &in : instructions)
            if (in.stage < 0) in.stage = int32_t(cp.program.stages.size() - 1);
    }
    return cp;
}

namespace {

/// Chooses how the pipeline reaches the chip (README "How a pipeline reaches a chip").
ChipProgram compile_pipeline(const Pipeline &pipeline, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes,
                             const ChipLayoutRequests &layouts) {
    internal::check_realize_request(pipeline, output_shapes);
    ChipProgram cp;
    cp.target = chip_target_description(target);
    if (layouts.reserved_rows > 0)
        for (chipsim::MemoryDesc &m : cp.target.memories) {
            if (m.accumulator) continue;
            if (layouts.reserved_rows >= m.rows_per_bank)
                throw Error("chip backend: " + std::to_string(layouts.reserved_rows) + " rows reserved in every bank of " + m.name +
                            " leave the kernel none (a bank holds " + std::to_string(m.rows_per_bank) + ")");
            m.rows_per_bank -= layouts.reserved_rows;
        }
    for (const Func &o : pipeline.outputs()) cp.output_types.push_back(o.type());
    if (auto v = internal::chip::recognize_vector_op(pipeline)) {
        internal::chip::check_vector_op_schedule(pipeline, *v);
        cp.outputs = {pipeline.outputs()[0].name()};
        internal::chip::compile_vector_op(cp, *v, output_shapes[0], layouts);
        cp.output_shapes = output_shapes;
        return cp;
    }
    if (!internal::chip::may_need_matrix_unit(pipeline)) {
        internal::chip::compile_loop_nest(cp, pipeline, target, output_shapes, layouts);
        return cp;
    }
    // A product the GEMM matcher may take (a grouped conv) or hand back (a weighted stencil,
    // which then runs on the VXM). Only the pattern decides: once matched, a matmul's or a
    // conv's limits are errors, never a quiet move to another unit.
    std::optional<GemmPattern> g;
    try {
        g = internal::chip::match_gemm(pipeline);
        if (!g->fits_library_kernel(output_shapes.at(0)))
            throw Error("chip backend: " + g->product.name() + " has " + std::to_string(g->batch_dims) +
                        " batch dimensions of extent above 1; the library matmul kernel takes at most one");
    } catch (const Error &library_form) {
        // Not a library kernel's form: the loop-nest compiler takes it, matrix stages included
        // (an update that multiplies two reads goes to the MXM stage by stage).
        const bool needs_mxm = internal::chip::needs_matrix_unit(pipeline);
        try {
            internal::chip::compile_loop_nest(cp, pipeline, target, output_shapes, layouts);
        } catch (const Error &loop_nest) {
            if (!needs_mxm) throw;
            throw Error(std::string(loop_nest.what()) + " (as a library matmul: " + library_form.what() + ")");
        }
        // A matrix product that reached no matrix stage (a matrix-vector product, whose rows
        // are one loop iteration) would be VXM work of one instruction per step: refused as before.
        const auto &ins = cp.program.instructions;
        if (needs_mxm && std::none_of(ins.begin(), ins.end(), [](const chipsim::Instruction &in) { return in.op == chipsim::Opcode::MxmMm; }))
            throw;
        return cp;
    }
    return compile_matrix_pipeline(cp, pipeline, *g, output_shapes, layouts);
}

} // namespace

ChipProgram compile_matrix_pipeline(ChipProgram &cp, const Pipeline &pipeline, const GemmPattern &g,
                                    const std::vector<std::vector<int64_t>> &output_shapes, const ChipLayoutRequests &layouts) {
    const chipsim::Target &t = cp.target;
    const std::vector<int64_t> &shape = output_shapes[0];
    if (g.conv) return compile_conv(cp, g, shape, pipeline, layouts);
    // Batch dimensions of extent 1 index 0 only: the chip tensors leave them out (-1 in
    // chip_dim_of_source), and the kernel iterates over the one batch dimension left, if any.
    const std::optional<int> batch = g.library_batch_dim(shape);
    if (!batch)
        throw Error("chip backend: " + g.product.name() + " has " + std::to_string(g.batch_dims) +
                    " batch dimensions of extent above 1; chip kernels take at most one (reshape the batch)");
    const int bd = g.batch_dims, eb = *batch;
    const int64_t G = eb >= 0 ? shape[size_t(eb)] : 1, M = shape[size_t(bd)], N = shape[size_t(bd + 1)];
    const int64_t K = const_extent(g.product.contents()->updates[0].rdom->vars[0].extent, "the reduction extent of " + g.product.name());

    GemmKernel kk;
    const Type ta = g.a->type(), tb = g.b->type();
    kk.in_dtype = ta == Int(8) ? chipsim::DType::Int8
                  : (ta == Float(16) && tb == Float(16)) ? chipsim::DType::FP16
                                                          : chipsim::DType::BF16;
    if (!t.mxm_supports(kk.in_dtype))
        throw Error(std::string("chip backend: the MXM of ") + t.name + " does not take " + chipsim::dtype_name(kk.in_dtype));
    kk.acc_dtype = g.acc_type == Int(32) ? chipsim::DType::Int32 : chipsim::DType::FP32;
    const auto &unit = t.mxm_shape(kk.in_dtype);
    const int64_t Kp = (K + unit.k - 1) / unit.k * unit.k, Np = (N + unit.n - 1) / unit.n * unit.n;
    kk.groups = G;
    kk.m = M;
    kk.n = Np;
    kk.k = Kp;
    apply_directives(g, t, M, N, K, kk, pipeline);
    kk.epilogue = internal::chip::compile_epilogue(g, kk.acc_dtype);
    read_operands_narrower(kk, layouts, t);
    kk.packed_out = packed_output(kk, layouts, g.output.name(), t, false);
    if (!kk.packed_out) kk.copy_out = packed_output(kk, layouts, g.output.name(), t, true);

    // Program tensors in the chip's layout and how they map to the pipeline's buffers.
    auto input_shape = [](const Input &in) { return constant_shape(in); };
    auto operand_map = [&](const std::string &name, const Input &in, const std::vector<int> &batch, bool transposed,
                           int64_t rows, int64_t cols, chipsim::DType dt, bool &batched) {
        ChipTensorMap mp;
        mp.tensor = name;
        mp.source = in.name();
        mp.source_shape = input_shape(in);
        batched = eb >= 0 && std::find(batch.begin(), batch.end(), eb) != batch.end();
        if (batched) mp.chip_shape.push_back(G);
        mp.chip_shape.push_back(rows);
        mp.chip_shape.push_back(cols);
        const int base = batched ? 1 : 0;
        for (int x : batch) mp.chip_dim_of_source.push_back(eb >= 0 && x == eb ? 0 : -1);
        mp.chip_dim_of_source.push_back(transposed ? base + 1 : base);
        mp.chip_dim_of_source.push_back(transposed ? base : base + 1);
        chipsim::TensorDecl decl{name, dt, mp.chip_shape, "", false};
        cp.program.tensors.push_back(decl);
        cp.tensors.push_back(mp);
    };
    operand_map("A", *g.a, g.a_batch, g.a_transposed, M, Kp, kk.in_dtype, kk.a_batched);
    operand_map("B", *g.b, g.b_batch, g.b_transposed, Kp, Np, kk.in_dtype, kk.b_batched);
    for (size_t i = 0; i < kk.epilogue.operands.size(); ++i) {
        const auto &op = kk.epilogue.operands[i];
        // An operand's output dimension as the kernel's: 0 the batch, 1 the rows, 2 the
        // columns, -1 a batch dimension of extent 1 (index 0 only).
        auto kernel_dim = [&](int od) { return od < 0 ? -1 : od < bd ? (od == eb ? 0 : -1) : od == bd ? 1 : 2; };
        std::array<bool, 3> dims{false, false, false};
        for (int od : op.source.output_dim)
            if (kernel_dim(od) >= 0) dims[size_t(kernel_dim(od))] = true;
        // An operand constant along the columns (a scalar, a column vector) holds one element a
        // row; its loads repeat it across the lanes (GemmKernel::operand_dims).
        kk.operand_dims.push_back(dims);
        ChipTensorMap mp;
        mp.tensor = "E" + std::to_string(i);
        mp.source = op.source.input.name();
        mp.source_shape = input_shape(op.source.input);
        const int64_t ext[3] = {G, M, Np};
        int chip_index[3] = {-1, -1, -1};
        for (int x = 0; x < 3; ++x)
            if (dims[size_t(x)]) {
                chip_index[x] = int(mp.chip_shape.size());
                mp.chip_shape.push_back(ext[x]);
            }
        for (int od : op.source.output_dim) mp.chip_dim_of_source.push_back(kernel_dim(od) < 0 ? -1 : chip_index[kernel_dim(od)]);
        if (mp.chip_shape.empty()) mp.chip_shape.push_back(1); // a scalar
        cp.program.tensors.push_back({mp.tensor, op.dtype, mp.chip_shape, "", false});
        cp.tensors.push_back(mp);
    }
    {
        ChipTensorMap mp;
        mp.tensor = "C";
        mp.source = g.output.name();
        mp.is_output = true;
        mp.chip_shape = {G, M, Np};
        mp.source_shape = shape;
        for (int d = 0; d < bd; ++d) mp.chip_dim_of_source.push_back(d == eb ? 0 : -1);
        mp.chip_dim_of_source.push_back(1);
        mp.chip_dim_of_source.push_back(2);
        cp.program.tensors.push_back({"C", kk.out_dtype(), mp.chip_shape, "", true});
        cp.tensors.push_back(mp);
        if (kk.copy_out) declare_copy(cp, mp, "Cb", *kk.copy_out);
    }

    chipsim::TimingModel model(t);
    std::vector<internal::chip::ChipOp> ops = internal::chip::emit_gemm(kk, model, cp.summary);
    cp.program.target = t.name;
    cp.program.instructions = t.issue == chipsim::IssueKind::Static ? internal::chip::schedule_static(ops, model)
                                                                    : internal::chip::insert_semaphores(std::move(ops), model);
    cp.outputs = {g.output.name()};
    cp.output_shapes = output_shapes;
    return std::move(cp); // cp is the caller's: a plain return would copy every instruction
}

namespace {

/// The host dtype of a chip tensor's values.
Type host_type(chipsim::DType dt) {
    switch (dt) {
    case chipsim::DType::Int8: return Int(8);
    case chipsim::DType::UInt8: return UInt(8);
    case chipsim::DType::Int16: return Int(16);
    case chipsim::DType::Int32: return Int(32);
    case chipsim::DType::BF16: return BFloat(16);
    case chipsim::DType::FP16: return Float(16);
    case chipsim::DType::FP32: return Float(32);
    }
    return Float(32);
}

int64_t product(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (auto v : shape) n *= v;
    return n;
}

/// Visits every source element with its chip flat index.
template <typename Fn> void for_each_mapped(const ChipTensorMap &mp, Fn fn) {
    // Only the source box that lands inside the chip tensor (a group's channel slice of a
    // grouped conv's operands is a small part of the source): per dimension, the indices whose
    // shifted chip index is in [0, limit); a source dimension with no chip dimension: index 0.
    const std::vector<int64_t> cs = row_major_strides(mp.chip_shape);
    const std::vector<int64_t> &limit = mp.chip_limit.empty() ? mp.chip_shape : mp.chip_limit;
    const size_t rank = mp.source_shape.size();
    std::vector<int64_t> lo(rank), hi(rank), offset(rank, 0);
    for (size_t d = 0; d < rank; ++d) {
        const int cd = mp.chip_dim_of_source[d];
        if (!mp.chip_offset.empty()) offset[d] = mp.chip_offset[d];
        lo[d] = cd >= 0 ? std::max<int64_t>(0, -offset[d]) : 0;
        hi[d] = std::min(mp.source_shape[d], cd >= 0 ? limit[size_t(cd)] - offset[d] : 1);
        if (hi[d] <= lo[d]) return;
    }
    std::vector<int64_t> idx = lo;
    for (;;) {
        int64_t chip = 0;
        for (size_t d = 0; d < rank; ++d)
            if (const int cd = mp.chip_dim_of_source[d]; cd >= 0) chip += (idx[d] + offset[d]) * cs[size_t(cd)];
        fn(idx, chip);
        int d = int(rank) - 1;
        for (; d >= 0; --d) {
            if (++idx[size_t(d)] < hi[size_t(d)]) break;
            idx[size_t(d)] = lo[size_t(d)];
        }
        if (d < 0) return;
    }
}

} // namespace

ChipResult run_on_chip(const ChipProgram &cp, const Bindings &bindings, const ChipRunOptions &options) {
    chipsim::SimOptions so;
    so.functional = options.functional;
    so.trace = options.trace;
    for (size_t i = 0; i < cp.tensors.size(); ++i) {
        const ChipTensorMap &mp = cp.tensors[i];
        if (mp.is_output || !options.functional) continue; // timing only: no values move
        const chipsim::TensorDecl *decl = cp.program.tensor(mp.tensor);
        if (!mp.constant.empty()) { // a table the compiler made, already in the chip's layout
            chipsim::TensorData td;
            td.dtype = decl->dtype;
            td.shape = mp.chip_shape;
            const int es = chipsim::dtype_bytes(td.dtype);
            td.bytes.assign(mp.constant.size() * size_t(es), 0);
            for (size_t e = 0; e < mp.constant.size(); ++e) chipsim::store_from_float(td.dtype, td.bytes.data() + e * size_t(es), mp.constant[e]);
            so.inputs[mp.tensor] = std::move(td);
            continue;
        }
        const Binding *b = nullptr;
        for (auto &x : bindings)
            if (!x.is_param && x.name == mp.source) b = &x;
        if (!b) throw Error("chip backend: no buffer bound to Input " + mp.source + "; pass {" + mp.source + ", buffer}");
        if (b->buffer.shape() != mp.source_shape)
            throw Error("chip backend: the buffer bound to Input " + mp.source + " has the wrong shape");
        chipsim::TensorData td;
        td.dtype = decl->dtype;
        td.shape = mp.chip_shape;
        const int es = chipsim::dtype_bytes(td.dtype);
        td.bytes.assign(size_t(product(mp.chip_shape) * es), 0);
        const bool is_float = chipsim::dtype_is_float(td.dtype);
        if (mp.pad_value != 0)
            for (size_t e = 0; e < td.bytes.size(); e += size_t(es)) chipsim::store_from_float(td.dtype, td.bytes.data() + e, float(mp.pad_value));
        const Buffer<> &buf = b->buffer;
        if (options.functional)
            for_each_mapped(mp, [&](const std::vector<int64_t> &src, int64_t chip) {
                uint8_t *p = td.bytes.data() + chip * es;
                if (is_float) chipsim::store_from_float(td.dtype, p, float(buf.get_as_double(src)));
                else chipsim::store_from_int(td.dtype, p, buf.get_as_int(src));
            });
        so.inputs[mp.tensor] = std::move(td);
    }
    chipsim::TimingModel model(cp.target);
    chipsim::SimResult sim;
    try {
        sim = chipsim::simulate(cp.program, model, so);
    } catch (const Error &e) {
        throw Error(std::string("chip backend: the generated program failed on chipsim (a code generator bug): ") + e.what());
    }
    ChipResult r;
    r.report = sim.report;
    if (cp.problem.macs > 0 || cp.problem.input_bytes + cp.problem.output_bytes > 0) {
        const chipsim::Roofline bound = model.problem_bound(cp.problem);
        r.report.problem_bound_cycles = bound.bound_cycles;
        r.report.problem_bound_limiter = bound.limiter;
    }
    r.program = cp;
    if (options.trace) r.trace_json = chipsim::chrome_trace_json(sim, cp.program, model);
    for (size_t o = 0; o < cp.outputs.size(); ++o) {
        std::vector<const ChipTensorMap *> maps; // several when kernels compute slices of it (conv groups)
        for (auto &x : cp.tensors)
            if (x.is_output && x.source == cp.outputs[o]) maps.push_back(&x);
        const chipsim::TensorDecl *decl = cp.program.tensor(maps[0]->tensor);
        // The pipeline's dtype when known (a requantised int8 result travels in int32 lanes,
        // every value in range by construction), else the chip tensor's own.
        const Type type = o < cp.output_types.size() ? cp.output_types[o] : host_type(decl->dtype);
        Buffer<> out(type, maps[0]->source_shape);
        for (const ChipTensorMap *mp : maps) {
            if (!options.functional) break;
            const chipsim::TensorData &td = sim.outputs.at(mp->tensor);
            const int es = chipsim::dtype_bytes(td.dtype);
            const bool is_float = chipsim::dtype_is_float(td.dtype);
            for_each_mapped(*mp, [&](const std::vector<int64_t> &src, int64_t chip) {
                const uint8_t *p = td.bytes.data() + chip * es;
                if (is_float) out.set_from_double(src, chipsim::load_as_float(td.dtype, p));
                else out.set_from_int(src, chipsim::load_as_int(td.dtype, p));
            });
        }
        r.outputs.push_back(out);
    }
    return r;
}

ChipResult realize_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                           const Bindings &bindings, const Target &target, const ChipRunOptions &options) {
    ChipProgram cp = compile_for_chip(pipeline, target, output_shapes, bindings);
    ChipResult r = run_on_chip(cp, bindings, options);
    g_last_result = std::make_unique<ChipResult>(r);
    return r;
}

const ChipResult &last_chip_result() {
    if (!g_last_result) throw Error("chip backend: no chip realize has run on this thread yet");
    return *g_last_result;
}

namespace {

const internal::RealizerRegistration chip_realizer(
    Target::Kind::Chip, [](const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const Bindings &bindings,
                           const Target &target) { return realize_on_chip(p, shapes, bindings, target).outputs; });

} // namespace

} // namespace tessera
