// The chip backend's benchmark: simulated cycles (exact and repeatable) of the library's hand
// schedules on each chip (realize_library_kernel_on_chip, as `tessera run` and the demo run them), as MXM utilisation and as the fraction of the roofline bound (the
// timing model's analytic bound for the MACs and bytes the kernel moves). One table per chip.
//
//   build-*/tests/bench/bench_chip [--quick] [--only TEXT] [--dump PREFIX] [--cli PATH]
//   (--only: rows whose "chip kernel" contains TEXT; --dump: each row's assembly and trace;
//   --cli: time `PATH run ...` on each row — goal <= 10 s, verification included — and check
//   that it reports the row's cycles)
#include <tessera/codegen/chip_backend.h>
#include <tessera/codegen/chip_schedules.h>
#include <tessera/ops.h>
#include <tessera/ops/registry.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
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
    double cli_seconds = 0;   ///< --cli: wall time of `tessera run` on the row
    int64_t cli_cycles = -1;  ///< --cli: the cycles it reported (-1: it failed)
};

/// --only TEXT: measure only the rows whose "chip kernel" contains TEXT.
std::string only;
/// --dump PREFIX: write each measured row's assembly and Chrome trace to PREFIX<row>.tasm / .json.
std::string dump;

/// A row: an op of the registry (ops/registry.h) with its parameters, so `tessera run` builds
/// exactly the same kernel from the same words.
struct RowSpec {
    std::string name, op;
    std::vector<std::string> words;
};

/// --cli PATH: also time `PATH run <op words> --target <chip> --json` per row (its default
/// verification included) and check it reports the same cycles.
std::string cli;

std::string joined(const std::vector<std::string> &words) {
    std::string s;
    for (const std::string &w : words) s += " " + w;
    return s;
}

/// Runs the row's op with its library schedule in timing-only mode (no values move), the one
/// way every tool measures a kernel (realize_library_kernel_on_chip).
Row measure(const RowSpec &spec, const std::string &chip) {
    Row row;
    row.name = spec.name;
    if (!only.empty() && (chip + " " + spec.name).find(only) == std::string::npos) {
        row.skipped = true;
        return row;
    }
    try {
        ops::OpInstance op = ops::build_op_from_words(spec.op, spec.words);
        ChipRunOptions o;
        o.functional = false;
        o.trace = !dump.empty();
        row.result = realize_library_kernel_on_chip(op.pipeline, op.output_shapes, {}, Target::named(chip), o);
        const ChipProgram &p = row.result.program;
        row.ok = true;
        if (!dump.empty()) {
            std::string file = dump + chip + " " + spec.name;
            for (char &c : file)
                if (c == ' ') c = '_';
            std::ofstream(file + ".tasm") << p.assembly();
            std::ofstream(file + ".json") << row.result.trace_json;
            std::fprintf(stderr, "wrote %s.tasm and .json\n", file.c_str());
        }
        if (!cli.empty()) {
            const std::string command = "'" + cli + "' run " + spec.op + joined(spec.words) + " --target " + chip + " --json";
            const auto start = std::chrono::steady_clock::now();
            FILE *pipe = popen(command.c_str(), "r");
            std::string out;
            char buf[4096];
            while (size_t n = pipe ? fread(buf, 1, sizeof buf, pipe) : 0) out.append(buf, n);
            const int status = pipe ? pclose(pipe) : -1;
            row.cli_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const size_t at = out.find("\"cycles\":");
            row.cli_cycles = status == 0 && at != std::string::npos ? std::atoll(out.c_str() + at + 9) : -1;
        }
    } catch (const std::exception &e) {
        row.error = e.what();
    }
    return row;
}

Row run_matmul(const std::string &chip, int64_t m, int64_t n, int64_t k, Type type) {
    return measure({"matmul " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " + type.to_string(), "matmul",
                    {"M=" + std::to_string(m), "N=" + std::to_string(n), "K=" + std::to_string(k), "dtype=" + type.to_string()}},
                   chip);
}

Row run_conv(const std::string &chip, int64_t hw, int64_t c, int64_t o, int64_t k, ops::Layout layout = ops::Layout::NHWC) {
    const bool nchw = layout == ops::Layout::NCHW;
    const std::string name = "conv " + std::to_string(k) + "x" + std::to_string(k) + " " + std::to_string(c) + "->" +
                             std::to_string(o) + " @" + std::to_string(hw) + "x" + std::to_string(hw) + " int8" + (nchw ? " NCHW" : "");
    return measure({name, "conv2d",
                    {"N=1", "C=" + std::to_string(c), "H=" + std::to_string(hw), "W=" + std::to_string(hw), "O=" + std::to_string(o),
                     "KH=" + std::to_string(k), "KW=" + std::to_string(k), "pad=" + std::to_string(k / 2),
                     std::string("layout=") + (nchw ? "nchw" : "nhwc"), "dtype=int8"}},
                   chip);
}

Row run_attention(const std::string &chip, int64_t seq, int64_t head_dim, bool causal) {
    return measure({"attention seq " + std::to_string(seq) + " d " + std::to_string(head_dim) + (causal ? " causal" : "") + " bf16",
                    "attention",
                    {"heads=1", "L=" + std::to_string(seq), "D=" + std::to_string(head_dim), causal ? "causal=1" : "causal=0",
                     "dtype=bf16"}},
                   chip);
}

void print_table(const std::string &chip, const std::vector<Row> &rows) {
    std::printf("\n%s\n", chip.c_str());
    // "host link": on tsp-mini, a kernel whose operands do not fit MEM streams them in (and its
    // results out) over the 32 B/cycle host link while it runs; the roofline leaves host I/O
    // out (CHIP.md), so this column gives that bound too: host bytes / link bytes per cycle.
    // "problem bound": the algorithm's MACs at peak and its inputs and outputs crossing each
    // level once (TimingModel::problem_bound), whatever the schedule; goals are against it.
    std::printf("| kernel | cycles | MACs/cycle | MXM util | roofline cycles | of roofline | limiter | problem bound | of problem bound | host link |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n");
    for (auto &r : rows) {
        if (r.skipped) continue;
        if (!r.ok) {
            std::printf("| %s | — | — | — | — | — | not supported: %.80s | — | — | — |\n", r.name.c_str(), r.error.c_str());
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
        std::printf("| %s | %lld | %.0f | %.1f %% | %.0f | %.1f %% | %s | %.0f (%s) | %.1f %% | %s |", r.name.c_str(), (long long)rep.cycles,
                    rep.macs_per_cycle, 100.0 * rep.mxm_utilization, rep.roofline_cycles,
                    rep.cycles > 0 ? 100.0 * rep.roofline_cycles / double(rep.cycles) : 0.0, rep.roofline_limiter.c_str(),
                    rep.problem_bound_cycles, rep.problem_bound_limiter.c_str(),
                    rep.cycles > 0 ? 100.0 * rep.problem_bound_cycles / double(rep.cycles) : 0.0, link.c_str());
        if (!cli.empty())
            std::printf(" tessera run: %.2f s%s |", r.cli_seconds,
                        r.cli_cycles == rep.cycles ? "" : (" (reported " + std::to_string(r.cli_cycles) + " cycles)").c_str());
        std::printf("\n");
    }
}

} // namespace

int main(int argc, char **argv) {
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        else if (std::strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
        else if (std::strcmp(argv[i], "--dump") == 0 && i + 1 < argc) dump = argv[++i];
        else if (std::strcmp(argv[i], "--cli") == 0 && i + 1 < argc) cli = argv[++i];
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
        // Vector kernels: softmax and layernorm by their hand-written kernels; the rest compiled
        // from their loop nests (loop_nest_codegen.h) under the chip's default vector rule.
        for (const RowSpec &v : std::vector<RowSpec>{
                 {"softmax 256x1024 fp32 (hand-written kernel)", "softmax", {"rows=256", "cols=1024"}},
                 {"layernorm 256x1024 fp32 (hand-written kernel)", "layernorm", {"rows=256", "cols=1024"}},
                 {"rmsnorm 256x1024 fp32", "rmsnorm", {"rows=256", "cols=1024"}},
                 {"log_softmax 256x1024 fp32", "log_softmax", {"rows=256", "cols=1024"}},
                 {"row sums 256x1024 fp32", "reduce_sum", {"rows=256", "cols=1024"}},
                 {"max_pool2d 3x3/2 64@56x56 fp32", "max_pool2d", {"N=1", "C=64", "H=56", "W=56", "kernel=3", "stride=2"}},
                 {"gelu (erf) 256x1024 fp32", "gelu", {"rows=256", "cols=1024"}},
             })
            rows.push_back(measure(v, chip));
        print_table(chip, rows);
    }
    return 0;
}
