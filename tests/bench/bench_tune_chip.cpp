// The chip autotuner on pipelines written by hand, which the library does not schedule (the
// chip's default rule is their baseline): an MLP block (two matmuls with bias and ReLU between:
// matrix stages of the loop-nest compiler) in fp32 and int8 (requantised between the layers),
// and an RMSNorm, on both chips. Exact simulated cycles, so one run is the figure; printed as a
// Markdown table (the README's). Budget 64, 2 threads unless given:
//   build/tests/bench/bench_tune_chip [--budget=N] [--threads=N]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tessera/autotune.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"

namespace {

using namespace tessera;

struct Row {
    std::string name;
    std::function<Pipeline()> build;
    std::vector<std::vector<int64_t>> shapes;
};

Pipeline mlp_fp32(int n) {
    Input x(Float(32), {n, n}, "x"), w1(Float(32), {n, n}, "w1"), b1(Float(32), {n}, "b1"), w2(Float(32), {n, n}, "w2");
    Var i("i"), j("j");
    RDom k(0, n, "k"), h(0, n, "h");
    Func hidden("hidden"), act("act"), y("y");
    hidden(i, j) = 0.0f;
    hidden(i, j) += x(i, k) * w1(k, j);
    act(i, j) = max(hidden(i, j) + b1(j), 0.0f);
    y(i, j) = 0.0f;
    y(i, j) += act(i, h) * w2(h, j);
    return Pipeline(y);
}

Pipeline mlp_int8(int n) {
    // int8 layers, the hidden layer's int32 sums plus bias, ReLU and requantised to int8.
    Input x(Int(8), {n, n}, "x"), w1(Int(8), {n, n}, "w1"), b1(Int(32), {n}, "b1"), w2(Int(8), {n, n}, "w2");
    Var i("i"), j("j");
    RDom k(0, n, "k"), h(0, n, "h");
    Func l1("l1"), q("q"), l2("l2");
    l1(i, j) = 0;
    l1(i, j) += cast(Int(32), x(i, k)) * cast(Int(32), w1(k, j));
    q(i, j) = cast(Int(8), clamp(round(cast(Float(32), max(l1(i, j) + b1(j), 0)) * 0.015625f), -128.0f, 127.0f));
    l2(i, j) = 0;
    l2(i, j) += cast(Int(32), q(i, h)) * cast(Int(32), w2(h, j));
    return Pipeline(l2);
}

Pipeline rmsnorm(int rows, int cols) {
    Input x(Float(32), {rows, cols}, "x"), gain(Float(32), {cols}, "gain");
    Var i("i"), j("j");
    RDom k(0, cols, "k");
    Func sum_squares("sum_squares"), scale("scale"), out("out");
    sum_squares(i) = 0.0f;
    sum_squares(i) += x(i, k) * x(i, k);
    scale(i) = 1.0f / sqrt(sum_squares(i) / float(cols) + 1e-6f);
    out(i, j) = x(i, j) * scale(i) * gain(j);
    return Pipeline(out);
}

int flag(int argc, char **argv, const char *name, int fallback) {
    const std::string prefix = std::string("--") + name + "=";
    for (int a = 1; a < argc; ++a)
        if (std::strncmp(argv[a], prefix.c_str(), prefix.size()) == 0) return std::atoi(argv[a] + prefix.size());
    return fallback;
}

} // namespace

int main(int argc, char **argv) {
    TuneOptions o;
    o.budget = flag(argc, argv, "budget", 64);
    o.threads = flag(argc, argv, "threads", 2);
    const std::vector<Row> rows = {
        {"MLP block 128 fp32 (bf16 MXM)", [] { return mlp_fp32(128); }, {{128, 128}}},
        {"MLP block 128 int8", [] { return mlp_int8(128); }, {{128, 128}}},
        {"RMSNorm 256×512 fp32", [] { return rmsnorm(256, 512); }, {{256, 512}}},
        {"RMSNorm 1024×256 fp32", [] { return rmsnorm(1024, 256); }, {{1024, 256}}},
    };
    std::printf("| chip | pipeline | default-rule cycles | tuned cycles | tuned / default | bound (limiter) | tuned / bound | measured | "
                "Z3 refused | backend refused | tuning s | winner |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int status = 0;
    for (const char *chip : {"tsp-mini", "npu-edge"})
        for (const Row &row : rows) {
            const Pipeline p = row.build();
            const auto t0 = std::chrono::steady_clock::now();
            try {
                const TuneResult r = autotune(p, row.shapes, Target::named(chip), o);
                const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                std::printf("| %s | %s | %lld | %lld | %.3f | %.0f (%s) | %.2f | %d of %d | %d | %d | %.1f | %s |\n", chip, row.name.c_str(),
                            (long long)r.library_cycles, (long long)r.best_cycles, double(r.best_cycles) / double(r.library_cycles),
                            r.bound_cycles, r.bound_limiter.c_str(), double(r.best_cycles) / r.bound_cycles, r.measured, r.ranked,
                            r.proven_infeasible, r.infeasible, s, r.best_candidate.c_str());
            } catch (const Error &e) {
                std::printf("| %s | %s | error: %s |\n", chip, row.name.c_str(), e.what());
                status = 1;
            }
            std::fflush(stdout);
        }
    return status;
}
