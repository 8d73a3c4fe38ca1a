// The host autotuner from the algorithm alone against the library schedules and the peers, in
// one binary and run (issue 14's host performance goals):
//   <row>/<impl>   rows: matmul/256 matmul/512 matmul/1024 matmul/2048 (M = N = K),
//                  conv3x3 (ResNet 3x3, 64 -> 64 channels, 56x56, NCHW), blur (3x3 box blur of
//                  a 2048x2048 image, written by hand), rmsnorm and softmax (4096 rows of 1024)
//                  impl: tuned, library, openblas (matmul), onednn (conv3x3), halide_adams2019
//                  and halide_mullapudi2016 (every row: matmul and conv3x3 the algorithms of
//                  bench_cpu, blur, rmsnorm and softmax the same algorithms in Halide)
// Every row is tuned first, with all cores (--tune_budget=N measurements, --tune_time=S seconds
// per row; the tuner's own flags, taken out before Google Benchmark sees the command line); the
// tuning counts — measurements, seconds, measurements until the best so far was within 2 % of
// the run's best, each cost model's accuracy — go to the benchmark context. After the
// benchmarks, a table of ratios (median times of this run) is printed.
//   build/tests/bench/bench_tune --tune_time=60 --benchmark_repetitions=5 --benchmark_filter='matmul/512|conv3x3'
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <regex>

#include "host_peers.h"
#include "tessera/autotune.h"
#include "tessera/codegen/host_schedules.h"

namespace {

using namespace tessera_bench;

/// One benchmarked pipeline: the algorithm, its output shapes and its library schedule.
struct Row {
    std::string name;
    std::function<tessera::Pipeline()> build;
    std::vector<std::vector<int64_t>> output_shapes;
    std::function<void(const tessera::Pipeline &)> library_schedule;
    double flops = 0;
};

tessera::Pipeline matmul(int n) {
    using namespace tessera;
    Input A(Float(32), {n, n}, "A"), B(Float(32), {n, n}, "B");
    return Pipeline(ops::matmul(A, B).func());
}

tessera::Pipeline conv3x3() {
    using namespace tessera;
    Input X(Float(32), {1, 64, 56, 56}, "X"), W(Float(32), {64, 64, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.padding = ops::Padding2d(1);
    return Pipeline(ops::conv2d(X, W, o).func());
}

/// A separable 3x3 box blur written with the DSL (no tessera::ops): a horizontal pass, then a
/// vertical one over it.
tessera::Pipeline blur() {
    using namespace tessera;
    Input in(Float(32), {2050, 2050}, "in");
    Var y("y"), x("x");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) * (1.0f / 3);
    blur_y(y, x) = (blur_x(y, x) + blur_x(y + 1, x) + blur_x(y + 2, x)) * (1.0f / 3);
    return Pipeline(blur_y);
}

tessera::Pipeline rmsnorm() {
    using namespace tessera;
    Input X(Float(32), {4096, 1024}, "X"), g(Float(32), {1024}, "g");
    return Pipeline(ops::rmsnorm(X, g).func());
}

tessera::Pipeline softmax() {
    using namespace tessera;
    Input X(Float(32), {4096, 1024}, "X");
    return Pipeline(ops::softmax(X).func());
}

std::vector<Row> rows() {
    using namespace tessera;
    std::vector<Row> r;
    for (int n : {256, 512, 1024, 2048})
        r.push_back({"matmul/" + std::to_string(n), [n] { return matmul(n); }, {{n, n}},
                     [n](const Pipeline &p) { host_schedules::matmul(p, n, n, n); }, 2.0 * n * n * n});
    r.push_back({"conv3x3", conv3x3, {{1, 64, 56, 56}},
                 [](const Pipeline &p) { host_schedules::conv2d(p, false, 64, 56, 56, false); }, 2.0 * 64 * 56 * 56 * 64 * 9});
    auto rowwise = [](const Pipeline &p) { host_schedules::rowwise(p); };
    r.push_back({"blur", blur, {{2048, 2048}}, rowwise, 2048.0 * 2048 * 6});
    r.push_back({"rmsnorm", rmsnorm, {{4096, 1024}}, rowwise, 4096.0 * 1024 * 4});
    r.push_back({"softmax", softmax, {{4096, 1024}}, rowwise, 4096.0 * 1024 * 5});
    return r;
}

/// A compiled schedule of a row on random inputs, ready to call through the raw ABI.
std::shared_ptr<TesseraRun> prepare(const Row &row, const tessera::Pipeline &p) {
    auto r = std::make_shared<TesseraRun>();
    r->kernel = tessera::compile_jit(p, row.output_shapes);
    unsigned seed = 1;
    for (const tessera::Input &in : p.inputs()) {
        std::vector<int64_t> shape;
        size_t n = 1;
        for (const tessera::Expr &d : in.shape()) shape.push_back(*tessera::as_const_int(d)), n *= size_t(shape.back());
        r->data.push_back(random_floats(n, seed++));
        r->shapes.push_back(shape);
    }
    for (const auto &shape : row.output_shapes) {
        size_t n = 1;
        for (int64_t d : shape) n *= size_t(d);
        r->data.emplace_back(n);
        r->shapes.push_back(shape);
    }
    r->prepare();
    return r;
}

/// Takes "--name=value" out of the command line; `fallback` when absent.
double take_flag(int &argc, char **argv, const std::string &name, double fallback) {
    const std::string prefix = "--" + name + "=";
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind(prefix, 0) == 0) {
            const double v = std::atof(argv[i] + prefix.size());
            for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
            --argc;
            return v;
        }
    return fallback;
}

/// Keeps each benchmark's time per iteration (seconds), by name — every repetition's, or the
/// median aggregate where only aggregates are reported — and prints as usual.
class RecordingReporter : public benchmark::ConsoleReporter {
public:
    std::map<std::string, std::vector<double>> seconds, medians;
    void ReportRuns(const std::vector<Run> &runs) override {
        for (const Run &r : runs) {
            if (r.run_type == Run::RT_Iteration && r.iterations > 0)
                seconds[r.run_name.function_name].push_back(r.real_accumulated_time / double(r.iterations));
            if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median")
                medians[r.run_name.function_name].push_back(r.GetAdjustedRealTime() / time_unit_multiplier(r.time_unit));
        }
        ConsoleReporter::ReportRuns(runs);
    }
    double median_seconds(const std::string &name) {
        if (!medians[name].empty()) return medians[name].back();
        std::vector<double> v = seconds[name];
        std::sort(v.begin(), v.end());
        return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
    }

private:
    static double time_unit_multiplier(benchmark::TimeUnit u) {
        return u == benchmark::kSecond ? 1 : u == benchmark::kMillisecond ? 1e3 : u == benchmark::kMicrosecond ? 1e6 : 1e9;
    }
};

} // namespace

int main(int argc, char **argv) {
    using namespace tessera;
    const int budget = int(take_flag(argc, argv, "tune_budget", 64));
    const double time_s = take_flag(argc, argv, "tune_time", 60);
    std::string filter;
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]).rfind("--benchmark_filter=", 0) == 0) filter = argv[i] + std::string("--benchmark_filter=").size();
    const int threads = host_features().cores;
    set_num_threads(threads);
    std::map<std::string, std::string> tuning; // row -> its tuning summary
    for (const Row &row : rows()) {
        // Rows the filter cannot select are not tuned (a regex match on "<row>/tuned").
        if (!filter.empty() && !std::regex_search(row.name + "/tuned", std::regex(filter)) &&
            !std::regex_search(row.name + "/library", std::regex(filter)))
            continue;
        const Pipeline tuned = row.build(), library = row.build();
        TuneOptions o;
        o.budget = budget;
        o.time_budget_s = time_s;
        const auto t0 = std::chrono::steady_clock::now();
        const TuneResult r = autotune(tuned, row.output_shapes, Target::host(), o);
        const double tune_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        tuned.set_schedule(r.best);
        row.library_schedule(library);
        const std::shared_ptr<TesseraRun> tuned_run = prepare(row, tuned), library_run = prepare(row, library);
        const double flops = row.flops;
        add(row.name + "/tuned", [=](benchmark::State &s) {
            for (auto _ : s) tuned_run->run();
            report(s, flops, threads);
        });
        add(row.name + "/library", [=](benchmark::State &s) {
            for (auto _ : s) library_run->run();
            report(s, flops, threads);
        });
        char summary[512];
        std::snprintf(summary, sizeof summary,
                      "%d measured in %.1f s (%d ranked), within 2%% of the run's best after %d; best %.4f ms; "
                      "analytic Spearman %.2f MRE %.0f%%, learned Spearman %.2f MRE %.0f%%; %s",
                      r.measured, tune_s, r.ranked, r.trials_to_reach(1.02 * r.best_seconds), r.best_seconds * 1e3,
                      r.model_accuracy[0].spearman, 100 * r.model_accuracy[0].mean_relative_error, r.model_accuracy[1].spearman,
                      100 * r.model_accuracy[1].mean_relative_error, r.best_candidate.c_str());
        tuning[row.name] = summary;
        benchmark::AddCustomContext("tune " + row.name, summary);
        std::fprintf(stderr, "tuned %s: %s\n", row.name.c_str(), summary);
    }
    for (int n : {256, 512, 1024, 2048}) {
        const std::string row = "matmul/" + std::to_string(n);
        add(row + "/openblas", [=](benchmark::State &s) { openblas_matmul(s, n, threads); });
        add(row + "/halide_adams2019", [=](benchmark::State &s) { halide_matmul(s, n, threads, HalideSchedule::Adams2019); });
        add(row + "/halide_mullapudi2016", [=](benchmark::State &s) { halide_matmul(s, n, threads, HalideSchedule::Mullapudi2016); });
    }
    add("conv3x3/onednn", [=](benchmark::State &s) { onednn_conv3x3(s, threads); });
    add("conv3x3/halide_adams2019", [=](benchmark::State &s) { halide_conv3x3(s, threads, HalideSchedule::Adams2019); });
    add("conv3x3/halide_mullapudi2016", [=](benchmark::State &s) { halide_conv3x3(s, threads, HalideSchedule::Mullapudi2016); });
    for (const std::pair<std::string, HalideRowwise> &row :
         {std::pair{std::string("blur"), HalideRowwise::Blur}, std::pair{std::string("rmsnorm"), HalideRowwise::RmsNorm},
          std::pair{std::string("softmax"), HalideRowwise::Softmax}}) {
        const HalideRowwise op = row.second;
        add(row.first + "/halide_adams2019", [=](benchmark::State &s) { halide_rowwise(s, op, threads, HalideSchedule::Adams2019); });
        add(row.first + "/halide_mullapudi2016", [=](benchmark::State &s) { halide_rowwise(s, op, threads, HalideSchedule::Mullapudi2016); });
    }
    benchmark::AddCustomContext("fp32_peak", peak().how);
    RecordingReporter reporter;
    const int status = run_interleaved(argc, argv, &reporter);
    // Ratios of medians from this run: > 1 means the tuned schedule is faster.
    std::printf("\n%-12s %12s %10s %10s %10s %10s\n", "row", "tuned ms", "/library", "/blas|dnn", "/adams", "/mullapudi");
    for (const auto &[name, summary] : tuning) {
        (void)summary;
        const double t = reporter.median_seconds(name + "/tuned");
        auto ratio = [&](const std::string &impl) {
            const double other = reporter.median_seconds(name + "/" + impl);
            return t > 0 && other > 0 ? other / t : 0.0;
        };
        const std::string peer = name == "conv3x3" ? "onednn" : "openblas";
        std::printf("%-12s %12.4f %10.3f %10.3f %10.3f %10.3f\n", name.c_str(), t * 1e3, ratio("library"), ratio(peer),
                    ratio("halide_adams2019"), ratio("halide_mullapudi2016"));
    }
    return status;
}
