// The chip backend's benchmark: simulated cycles (exact and repeatable) of the library's hand
// schedules on each chip, as MXM utilisation and as the fraction of the roofline bound (the
// timing model's analytic bound for the MACs and bytes the kernel moves). One table per chip.
//
//   build-*/tests/bench/bench_chip [--quick] [--only TEXT] [--dump PREFIX]
//   (--only: rows whose "chip kernel" contains TEXT; --dump: each row's assembly and trace)
#include <tessera/codegen/chip_backend.h>
#include <tessera/ops.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace tessera;

namespace {

struct Row {
    std::string name;
    ChipResult result;
    bool ok = false, skipped = false;
    std::string error;
};

/// --only TEXT: measure only the rows whose "chip kernel" contains TEXT.
std::string only;
/// --dump PREFIX: write each measured row's assembly and Chrome trace to PREFIX<row>.tasm / .json.
std::string dump;

/// Compiles `output` for `chip` and runs it in timing-only mode (no values move).
Row measure(const std::string &name, const Func &output, const std::vector<int64_t> &shape, const std::string &chip) {
    Row row;
    row.name = name;
    if (!only.empty() && (chip + " " + name).find(only) == std::string::npos) {
        row.skipped = true;
        return row;
    }
    try {
        ChipProgram p = compile_for_chip(Pipeline(output), Target::named(chip), {shape});
        ChipRunOptions o;
        o.functional = false;
        o.trace = !dump.empty();
        row.result = run_on_chip(p, {}, o);
        row.ok = true;
        if (!dump.empty()) {
            std::string file = dump + chip + " " + name;
            for (char &c : file)
                if (c == ' ') c = '_';
            std::ofstream(file + ".tasm") << p.assembly;
            std::ofstream(file + ".json") << row.result.trace_json;
            std::fprintf(stderr, "wrote %s.tasm and .json\n", file.c_str());
        }
    } catch (const std::exception &e) {
        row.error = e.what();
    }
    return row;
}

Row run_matmul(const std::string &chip, int64_t m, int64_t n, int64_t k, Type type) {
    Input A(type, {int(m), int(k)}, "A"), B(type, {int(k), int(n)}, "B");
    return measure("matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + type.to_string(),
                   ops::matmul(A, B), {m, n}, chip);
}

Row run_conv(const std::string &chip, int64_t hw, int64_t c, int64_t o, int64_t k, ops::Layout layout = ops::Layout::NHWC) {
    const bool nchw = layout == ops::Layout::NCHW;
    const int h = int(hw), ci = int(c), co = int(o), kk = int(k);
    Input X(Int(8), nchw ? std::vector<Expr>{1, ci, h, h} : std::vector<Expr>{1, h, h, ci}, "X");
    Input W(Int(8), nchw ? std::vector<Expr>{co, ci, kk, kk} : std::vector<Expr>{kk, kk, ci, co}, "W");
    ops::Conv2dOptions opt;
    opt.layout = layout;
    opt.padding = int(k / 2);
    return measure("conv " + std::to_string(k) + "x" + std::to_string(k) + " " + std::to_string(c) + "->" + std::to_string(o) + " @" +
                       std::to_string(hw) + "x" + std::to_string(hw) + " int8" + (nchw ? " NCHW" : ""),
                   ops::conv2d(X, W, opt), nchw ? std::vector<int64_t>{1, o, hw, hw} : std::vector<int64_t>{1, hw, hw, o}, chip);
}

Row run_attention(const std::string &chip, int64_t seq, int64_t head_dim, bool causal) {
    const std::vector<Expr> shape{1, int(seq), int(head_dim)};
    Input Q(BFloat(16), shape, "Q"), K(BFloat(16), shape, "K"), V(BFloat(16), shape, "V");
    ops::AttentionOptions o;
    o.causal = causal;
    return measure("attention seq " + std::to_string(seq) + " d " + std::to_string(head_dim) + (causal ? " causal" : "") + " bf16",
                   ops::scaled_dot_product_attention(Q, K, V, o), {1, seq, head_dim}, chip);
}

void print_table(const std::string &chip, const std::vector<Row> &rows) {
    std::printf("\n%s\n", chip.c_str());
    // "host link": on tsp-mini, a kernel whose operands do not fit MEM streams them in (and its
    // results out) over the 32 B/cycle host link while it runs; the roofline leaves host I/O
    // out (CHIP.md), so this column gives that bound too: host bytes / link bytes per cycle.
    std::printf("| kernel | cycles | MACs/cycle | MXM util | roofline cycles | of roofline | limiter | host link |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---|---:|\n");
    for (auto &r : rows) {
        if (r.skipped) continue;
        if (!r.ok) {
            std::printf("| %s | — | — | — | — | — | not supported: %.80s | — |\n", r.name.c_str(), r.error.c_str());
            continue;
        }
        const auto &rep = r.result.report;
        std::string link = "—";
        const auto host = rep.bytes.find("HOST");
        if (r.result.program.summary.find("streamed") != std::string::npos && host != rep.bytes.end()) {
            const double bound = double(host->second) / r.result.program.target.host_link.bytes_per_cycle;
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.0f (%.1f %%)", bound, 100.0 * bound / double(rep.cycles));
            link = buf;
        }
        std::printf("| %s | %lld | %.0f | %.1f %% | %.0f | %.1f %% | %s | %s |\n", r.name.c_str(), (long long)rep.cycles,
                    rep.macs_per_cycle, 100.0 * rep.mxm_utilization, rep.roofline_cycles,
                    rep.cycles > 0 ? 100.0 * rep.roofline_cycles / double(rep.cycles) : 0.0, rep.roofline_limiter.c_str(), link.c_str());
    }
}

} // namespace

int main(int argc, char **argv) {
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) dump = argv[++i];
    }
    std::vector<int64_t> sizes = quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{256, 512, 1024, 2048};
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        std::vector<Row> rows;
        for (Type t : {Int(8), BFloat(16)})
            for (int64_t s : sizes) rows.push_back(run_matmul(chip, s, s, s, t));
        // ResNet-50's bottleneck convolutions: the 3x3 and the reducing 1x1 of each stage.
        const int64_t stages[4][2] = {{56, 64}, {28, 128}, {14, 256}, {7, 512}};
        for (auto &st : stages) {
            if (quick && st[0] > 28) continue;
            rows.push_back(run_conv(chip, st[0], st[1], st[1], 3));
            rows.push_back(run_conv(chip, st[0], 4 * st[1], st[1], 1));
        }
        // The same 3x3 convolutions from NCHW images: the chip turns the channel planes into
        // pixel rows (SXM transposes) before the matmuls read them.
        for (auto &st : stages) {
            if (quick && st[0] > 28) continue;
            rows.push_back(run_conv(chip, st[0], st[1], st[1], 3, ops::Layout::NCHW));
        }
        // One head of scaled dot-product attention (the MXM's MACs are Q·Kᵀ and P·V; the
        // softmax between them runs on the VXM and is what keeps MXM utilisation down).
        for (int64_t seq : {128, 256, 512}) {
            if (quick && seq > 256) continue;
            rows.push_back(run_attention(chip, seq, 64, false));
        }
        rows.push_back(run_attention(chip, 512, 64, true));
        print_table(chip, rows);
    }
    return 0;
}
