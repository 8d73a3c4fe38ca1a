// The host library schedules (host_schedules.h). Sizes are chosen for the vector width of the
// CPU they are made for (16 fp32 lanes with AVX-512, 8 with AVX2).
#include "tessera/codegen/host_schedules.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tessera/codegen/host_features.h"
#include "tessera/fusion.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_visitor.h"

namespace tessera::host_schedules {

Func find_func(const Pipeline &p, const std::string &name) {
    std::string names;
    for (const Func &f : p.functions()) {
        if (f.name() == name) return f;
        names += (names.empty() ? "" : ", ") + f.name();
    }
    throw Error("host schedule: the pipeline has no Func '" + name + "' (it has " + names + ")");
}

namespace {

/// The largest of `candidates` that divides n, or n itself.
int64_t dividing_block(int64_t n, std::initializer_list<int64_t> candidates) {
    for (int64_t c : candidates)
        if (c <= n && n % c == 0) return c;
    return n;
}

} // namespace

std::optional<Input> input_read_by_column(const Func &f, const std::string &column, int update) {
    struct Finder : IRVisitor {
        const std::string &column;
        std::optional<Input> found;
        explicit Finder(const std::string &c) : column(c) {}
        using IRVisitor::visit;
        void visit(const Call *c) override {
            if (c->call_type == CallType::Input && !c->args.empty() && c->input) {
                const auto *v = c->args.back().as<Variable>();
                if (v && v->name == column) found = Input(c->input);
            }
            IRVisitor::visit(c);
        }
    } finder(column);
    f.contents()->updates.at(size_t(update)).value.accept(&finder);
    return finder.found;
}

void matmul(const Pipeline &p, int64_t M, int64_t N, int64_t K, const std::string &name, const HostFeatures &cpu) {
    Func C = find_func(p, name);
    const int lanes = cpu.float_lanes();
    // The micro-kernel: mr rows x nr = 2 vectors of columns, 12 (AVX2: of 16 registers) or 16
    // (AVX-512: of 32) accumulators, enough independent FMAs to cover their latency.
    const int nr = 2 * lanes, mr = lanes >= 16 ? 8 : 6;
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji"), jc("jc"), jr("jr");
    const VarOrRVar k("k"), ko("ko"), ki("ki");
    // Small products (up to 512³): the row-tile loop below gives each thread too little work per
    // parallel loop, and B is packed by one thread before it. Instead, column strips run in
    // parallel and each packs its own panels of B (inside the parallel loop). 16 strips where N
    // allows, so that a thread on a vCPU that runs slower for a while (the host's other
    // guests) has its last strips taken by the other: on the 2-core EPYC, 2 threads, medians
    // of 10 interleaved repetitions in three runs, 256³ 0.259 / 0.232 / 0.255 ms with 16 strips
    // against 0.295 / 0.234 / 0.289 with 4 (Halide's manual schedule 0.309 / 0.250 / 0.305);
    // 512³ 2.36 / 1.86 / 2.15 against 2.46 / 1.80 / 2.33.
    int strips = 16;
    while (strips > 4 && N % (strips * nr) != 0) strips /= 2;
    const bool by_strips = M * N * K <= int64_t{512} * 512 * 512 && N % (strips * nr) == 0;
    Var ib("ib"), ir("ir");
    if (by_strips) {
        // The zero fill by the same column strips: the pool gives a thread the same part of
        // every parallel loop, so each core zeroes the block of C it then accumulates into.
        C.split(j, ib, ir, static_cast<int>(N / strips)).reorder({ib, i, ir}).vectorize(ir, lanes).parallel(ib);
    } else {
        // The zero fill in blocks of rows of at least 32 KiB: one task per row (1 KiB at N = 256)
        // costs less than the atomic increment that hands it out, which moves between the cores
        // with every task (at 256³ on 2 threads the fill took ~20 µs of a ~220 µs call).
        const int64_t min_rows = std::clamp<int64_t>((32 * 1024 / 4 + N - 1) / N, 1, M);
        const int64_t fill_blocks = (M + min_rows - 1) / min_rows;
        const int64_t fill_rows = (M + fill_blocks - 1) / fill_blocks; // equal blocks: a small overlap
        C.split(i, ib, ir, static_cast<int>(fill_rows)).vectorize(j, lanes).parallel(ib);
    }
    Stage u = C.update();
    if (N < nr || M < mr) {
        // Too small to tile: vectorize the rows, k inside.
        u.vectorize(j, lanes).parallel(i);
        return;
    }
    // k blocks of kc: a kc x nr panel of B (16 KiB at kc = 256, AVX2) stays in L1 while a
    // sliver of mr rows of A is multiplied with it. Column strips of up to 1024 columns: the
    // fewer the strips, the fewer times A is read (on a 2-core EPYC, strips of 256 to 1024
    // measured alike within the noise at 1024 and 2048). Row tiles run in parallel inside the
    // k block, sharing its packed B (column strips in parallel for small products, above).
    const int64_t kc = dividing_block(K, {256, 512, 384, 192, 128, 64});
    // Strips of at most 1024 columns whatever the vector width: the packed kc x nc block of B
    // (1 MiB at kc = 256) then stays within a core's L2 with AVX-512 too, and a library
    // schedule makes as many parallel loops on either ISA (2048³: 16 row-tile loops + the fill).
    // On a 2-core AVX-512 EPYC, 1 thread, 2048³ ran at 0.98× OpenBLAS's time with 1024 columns
    // as with 2048 (medians of 5).
    int64_t nc = by_strips ? N / strips : N;
    if (!by_strips)
        for (int64_t w = 1024; w >= nr; w /= 2)
            if (w % nr == 0 && N % w == 0) {
                nc = w;
                break;
            }
    u.split(j, jo, jc, static_cast<int>(nc)).split(jc, jr, ji, nr).split(i, io, ii, mr);
    if (kc < K) {
        u.split(k, ko, ki, static_cast<int>(kc));
        u.reorder({jo, ko, io, jr, ki, ii, ji});
    } else {
        u.reorder({jo, io, jr, k, ii, ji});
    }
    u.vectorize(ji, lanes).unroll(ji).unroll(ii);
    if (by_strips) u.parallel(jo); else u.parallel(io);
    // B packed per (strip, k block) into [nc / nr][kc][nr] panels: the micro-kernel then reads
    // B contiguously instead of kc rows N apart (which conflict in the caches and the TLB).
    if (std::optional<Input> B = input_read_by_column(C, "j"); B && B->dimensions() == 2)
        B->stage(u, kc < K ? ko : VarOrRVar(jo), MemoryKind::Auto, Layout{{"d1", "d0"}, {{"d1", nr}}, {}});
}

void conv2d(const Pipeline &p, bool nhwc, int64_t out_channels, int64_t out_height, int64_t out_width, bool depthwise,
            const std::string &name, const HostFeatures &cpu) {
    Func out = find_func(p, name);
    for (const Func &f : p.functions())
        if (f.name() == name + "_padded") {
            // Pad once, row by row; the convolution then reads plain memory.
            Func padded = f;
            std::vector<std::string> args = padded.args();
            padded.compute_root().parallel(Var(args[1])).vectorize(Var(args.back()), cpu.float_lanes());
        }
    const int lanes = cpu.float_lanes();
    Var n("n"), c("c"), y("y"), x("x"), co("co"), ci("ci"), xo("xo"), xi("xi");
    const VarOrRVar rx("r.x"), ry("r.y"), rz("r.z");
    if (nhwc) {
        out.vectorize(c, lanes).parallel(y);
        Stage u = out.update();
        if (!depthwise && out_channels % lanes == 0 && out_width % 4 == 0) {
            // Pixels × channel vectors: 4 pixels × up to 4 vectors of channels in registers.
            const int64_t cb = std::min<int64_t>(out_channels, 4 * lanes);
            u.split(c, co, ci, static_cast<int>(cb)).split(x, xo, xi, 4);
            u.reorder({n, y, co, xo, rz, ry, rx, xi, ci});
            u.vectorize(ci, lanes).unroll(ci).unroll(xi).parallel(y);
        } else {
            u.vectorize(c, lanes).parallel(y);
        }
        return;
    }
    // NCHW
    const int width = out_width % 8 == 0 && lanes >= 8 ? 8 : lanes;
    out.vectorize(x, width).parallel(c);
    Stage u = out.update();
    // The register tile: `channels` output channels × 2 rows × one vector of pixels, summed over
    // every input channel and tap before it is stored. A tap loads 2 input vectors and
    // broadcasts `channels` weights for 2 × `channels` FMAs. AVX2: 8 accumulators, 2 inputs and
    // a weight in 16 registers; AVX-512: 16 accumulators of 32. (The tile was 2 channels × a
    // whole row of up to 8 vectors; at 56 pixels its 14 accumulators spilled: ResNet 3×3
    // 64 → 64 at 56², 1 thread of the 2-core EPYC, 36-39 GFLOP/s against 58-75 now.)
    const int channels = lanes >= 16 ? 8 : 4, rows = 2;
    if (!depthwise && out_channels % channels == 0 && out_width % width == 0 && out_height >= rows) {
        Var yo("yo"), yi("yi");
        u.split(c, co, ci, channels).split(y, yo, yi, rows).split(x, xo, xi, width);
        u.reorder({n, co, yo, xo, rx, ry, rz, ci, yi, xi});
        u.vectorize(xi).unroll(yi).unroll(ci).parallel(co);
    } else {
        u.vectorize(x, width).parallel(c);
    }
}

void rowwise(const Pipeline &p, const HostFeatures &cpu) {
    const int lanes = cpu.float_lanes();
    for (const Func &f0 : p.functions()) {
        Func f = f0;
        bool is_output = false;
        for (const Func &o : p.outputs()) is_output |= o.name() == f.name();
        if (!is_output && f.num_updates() == 0) continue; // pure helpers stay inlined
        std::vector<std::string> args = f.args();
        if (!is_output) f.compute_root();
        if (args.empty()) continue;
        f.parallel(Var(args[0]));
        if (args.size() >= 2) f.vectorize(Var(args.back()), lanes);
        for (int u = 0; u < f.num_updates(); ++u) {
            f.update(u).parallel(Var(args[0]));
            if (args.size() >= 2) f.update(u).vectorize(Var(args.back()), lanes);
        }
    }
}

void model(const Pipeline &p, const HostFeatures &cpu) {
    apply_fusion_schedule(p);
    const int lanes = cpu.float_lanes();
    std::set<std::string> outputs;
    for (const Func &o : p.outputs()) outputs.insert(o.name());
    for (const Func &f0 : p.functions()) {
        Func f = f0;
        const internal::FunctionContents &c = *f.contents();
        bool inlined = false, at_root = outputs.count(f.name()) > 0;
        for (const Directive &d : c.schedule.stage(0)) {
            inlined = d.kind == DirectiveKind::ComputeInline;
            at_root = at_root || d.kind == DirectiveKind::ComputeRoot;
        }
        if (inlined || c.args.empty()) continue;
        auto schedule_stage = [&](auto &&stage) {
            // A 1-D Func's one loop is vectorized, not split between threads as well.
            if (at_root && c.args.size() >= 2) stage.parallel(Var(c.args.front()));
            stage.vectorize(Var(c.args.back()), lanes, TailStrategy::GuardWithIf);
        };
        schedule_stage(f);
        for (size_t u = 0; u < c.updates.size(); ++u)
            if (internal::writes_its_own_point(c, c.updates[u])) schedule_stage(f.update(int(u)));
    }
}

void library_schedule(const ops::OpInstance &op, const HostFeatures &cpu) {
    const auto &z = op.sizes;
    const Pipeline &p = op.pipeline;
    if (op.op == "matmul") {
        matmul(p, z.at("M"), z.at("N"), z.at("K"), "matmul", cpu);
    } else if (op.op == "gemm") {
        // The product as a matmul; the scaled sum of the terms row-parallel and vectorized.
        matmul(p, z.at("M"), z.at("N"), z.at("K"), "gemm_product", cpu);
        Func product = find_func(p, "gemm_product"), out = find_func(p, "gemm");
        product.compute_root();
        out.parallel(Var("i")).vectorize(Var("j"), cpu.float_lanes());
    } else if (op.op == "conv2d" || op.op == "depthwise_conv2d") {
        conv2d(p, op.params.at("layout") == "nhwc", z.at("O"), z.at("OH"), z.at("OW"),
               op.op == "depthwise_conv2d" || (z.count("groups") && z.at("groups") > 1), op.op, cpu);
    } else if (op.op != "transpose" && op.op != "nchw_to_nhwc" && op.op != "reshape" && op.op != "flatten" && op.op != "concat") {
        rowwise(p, cpu);
    }
}

} // namespace tessera::host_schedules
