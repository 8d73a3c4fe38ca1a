// Host CPU benchmarks: Tessera's library schedules against peers in the same binary and run.
//   matmul/<impl>/<N>/<threads>  impl: tessera, openblas, halide_manual, halide_adams2019,
//                                halide_mullapudi2016; N = M = K in {256, 512, 1024, 2048}
//   conv3x3/<impl>/<threads>     ResNet 3x3, 64 -> 64 channels, 56x56, batch 1; impl: tessera
//                                (NCHW), halide_manual, halide_mullapudi2016, halide_adams2019,
//                                onednn
// Every benchmark reports `gflops` and `peak_fraction` (of the host's theoretical fp32 peak for
// its thread count; the context lists the peak and how it was derived).
//   build-cpu/tests/bench/bench_cpu --benchmark_filter='matmul/.*/1024/2' --benchmark_min_time=1
#include "host_peers.h"
#include "tessera/codegen/host_schedules.h"

namespace {

using namespace tessera_bench;

void tessera_matmul(benchmark::State &state, int n, int threads) {
    using namespace tessera;
    set_num_threads(threads);
    Input A(Float(32), {n, n}, "A"), B(Float(32), {n, n}, "B");
    Pipeline p(ops::matmul(A, B).func());
    host_schedules::matmul(p, n, n, n);
    TesseraRun r;
    r.kernel = compile_jit(p, {{n, n}});
    const size_t nn = static_cast<size_t>(n) * n;
    r.data = {random_floats(nn, 1), random_floats(nn, 2), std::vector<float>(nn)};
    r.shapes = {{n, n}, {n, n}, {n, n}};
    r.prepare();
    for (auto _ : state) r.run();
    state.counters["compile_ms"] = r.kernel.compile_ms();
    report(state, 2.0 * n * n * n, threads);
}

void tessera_conv3x3(benchmark::State &state, int threads) {
    using namespace tessera;
    set_num_threads(threads);
    Input X(Float(32), {1, 64, 56, 56}, "X"), W(Float(32), {64, 64, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.padding = ops::Padding2d(1);
    Pipeline p(ops::conv2d(X, W, o).func());
    host_schedules::conv2d(p, false, 64, 56, 56, false);
    TesseraRun r;
    r.kernel = compile_jit(p, {{1, 64, 56, 56}});
    r.data = {random_floats(64 * 56 * 56, 1), random_floats(64 * 64 * 9, 2), std::vector<float>(64 * 56 * 56)};
    r.shapes = {{1, 64, 56, 56}, {64, 64, 3, 3}, {1, 64, 56, 56}};
    r.prepare();
    for (auto _ : state) r.run();
    state.counters["compile_ms"] = r.kernel.compile_ms();
    report(state, 2.0 * 64 * 56 * 56 * 64 * 9, threads);
}

} // namespace

int main(int argc, char **argv) {
    for (int threads : {1, 2}) {
        for (int n : {256, 512, 1024, 2048}) {
            const std::string suffix = "/" + std::to_string(n) + "/" + std::to_string(threads);
            add("matmul/tessera" + suffix, [=](benchmark::State &s) { tessera_matmul(s, n, threads); });
            add("matmul/openblas" + suffix, [=](benchmark::State &s) { openblas_matmul(s, n, threads); });
            add("matmul/halide_manual" + suffix, [=](benchmark::State &s) { halide_matmul(s, n, threads, HalideSchedule::Manual); });
            add("matmul/halide_adams2019" + suffix,
                [=](benchmark::State &s) { halide_matmul(s, n, threads, HalideSchedule::Adams2019); });
            add("matmul/halide_mullapudi2016" + suffix,
                [=](benchmark::State &s) { halide_matmul(s, n, threads, HalideSchedule::Mullapudi2016); });
        }
        const std::string t = "/" + std::to_string(threads);
        add("conv3x3/tessera" + t, [=](benchmark::State &s) { tessera_conv3x3(s, threads); });
        add("conv3x3/halide_manual" + t, [=](benchmark::State &s) { halide_conv3x3(s, threads, HalideSchedule::Manual); });
        add("conv3x3/halide_mullapudi2016" + t, [=](benchmark::State &s) { halide_conv3x3(s, threads, HalideSchedule::Mullapudi2016); });
        add("conv3x3/halide_adams2019" + t, [=](benchmark::State &s) { halide_conv3x3(s, threads, HalideSchedule::Adams2019); });
        add("conv3x3/onednn" + t, [=](benchmark::State &s) { onednn_conv3x3(s, threads); });
    }
    benchmark::AddCustomContext("fp32_peak", peak().how);
    return tessera_bench::run_interleaved(argc, argv);
}
