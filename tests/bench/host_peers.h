#pragma once
// What the host benchmarks share (bench_cpu, bench_tune): the host's theoretical fp32 peak and
// the counters every benchmark reports, a runner of Tessera kernels on raw buffers, and the
// peers measured in the same binary and run — OpenBLAS, Halide 14 (manual schedules and the
// Adams2019 and Mullapudi2016 autoschedulers) and oneDNN.
#include <benchmark/benchmark.h>

#include <Halide.h>
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "tessera/codegen/buffer_abi.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/tessera.h"

namespace tessera_bench {

// ---------------------------------------------------------------------------------------------
// The host's theoretical fp32 peak: cores x clock x FMA pipes x lanes per pipe x 2.

struct Peak {
    double ghz = 0;
    int flops_per_cycle = 0;
    std::string how;
};

const Peak &peak() {
    static const Peak p = [] {
        Peak r;
        std::ifstream f("/proc/cpuinfo");
        std::string line;
        bool amd = false;
        while (std::getline(f, line)) {
            if (line.rfind("vendor_id", 0) == 0 && line.find("AuthenticAMD") != std::string::npos) amd = true;
            if (line.rfind("cpu MHz", 0) == 0 && r.ghz == 0) r.ghz = std::atof(line.substr(line.find(':') + 1).c_str()) / 1000.0;
        }
        const tessera::HostFeatures &h = tessera::host_features();
        // Two FMA pipes as wide as the widest vectors (an upper bound on Zen 4, whose 256-bit
        // pipes run 512-bit FMAs at a higher issue rate than AVX2 code reaches). The clock is
        // /proc/cpuinfo's, so boost clocks can still push results past 1.0.
        (void)amd;
        const int pipe_lanes = h.avx512f ? 16 : h.avx2 ? 8 : 4;
        r.flops_per_cycle = 2 * pipe_lanes * 2;
        std::ostringstream how;
        how << r.ghz << " GHz x 2 FMA pipes x " << pipe_lanes << " fp32 lanes x 2 = " << r.ghz * r.flops_per_cycle
            << " GFLOP/s per core (" << h.to_string() << ")";
        r.how = how.str();
        return r;
    }();
    return p;
}

inline void report(benchmark::State &state, double flops, int threads) {
    state.counters["gflops"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    const double peak_gflops = peak().ghz * peak().flops_per_cycle * threads;
    state.counters["peak_fraction"] = benchmark::Counter(flops / 1e9 / peak_gflops, benchmark::Counter::kIsIterationInvariantRate);
}

inline std::vector<float> random_floats(size_t n, unsigned seed) {
    std::vector<float> v(n);
    unsigned s = seed;
    for (float &x : v) {
        s = s * 1664525u + 1013904223u;
        x = static_cast<float>((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

// ---------------------------------------------------------------------------------------------
// Tessera

/// Runs a compiled kernel on dense fp32 buffers with the raw C ABI (no per-call allocation).
struct TesseraRun {
    tessera::CompiledKernel kernel;
    std::vector<std::vector<float>> data;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<tessera_buffer_t> buffers;
    std::vector<void *> args;

    void prepare() {
        buffers.resize(data.size());
        for (size_t i = 0; i < data.size(); ++i) {
            tessera_buffer_t &b = buffers[i];
            b.data = data[i].data();
            b.shape = shapes[i].data();
            b.strides = nullptr;
            b.dimensions = static_cast<int32_t>(shapes[i].size());
            b.type_code = TESSERA_TYPE_FLOAT;
            b.type_bits = 32;
            b.reserved = 0;
            args.push_back(&b);
        }
    }
    void run() {
        if (int code = kernel.call_argv(args.data())) throw tessera::Error(kernel.error_message(code));
    }
};


// ---------------------------------------------------------------------------------------------
// OpenBLAS

inline void openblas_matmul(benchmark::State &state, int n, int threads) {
    openblas_set_num_threads(threads);
    const size_t nn = static_cast<size_t>(n) * n;
    std::vector<float> a = random_floats(nn, 1), b = random_floats(nn, 2), c(nn);
    for (auto _ : state)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    report(state, 2.0 * n * n * n, threads);
}

// ---------------------------------------------------------------------------------------------
// Halide 14

/// Halide's JIT runtime reads HL_NUM_THREADS when its thread pool starts; switching thread
/// counts releases the shared runtime so the next compiled pipeline starts a new pool.
inline void halide_threads(int threads) {
    static int current = -1;
    if (current == threads) return;
    setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
    Halide::Internal::JITSharedRuntime::release_all();
    current = threads;
}

inline void load_autoschedulers() {
    static bool loaded = [] {
        Halide::load_plugin("/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_adams2019.so");
        Halide::load_plugin("/usr/lib/x86_64-linux-gnu/halide14/libautoschedule_mullapudi2016.so");
        return true;
    }();
    (void)loaded;
}

enum class HalideSchedule { Manual, Adams2019, Mullapudi2016 };

inline Halide::MachineParams machine(int threads) { return Halide::MachineParams(threads, 32 * 1024 * 1024, 40); }

inline void halide_autoschedule(Halide::Pipeline &p, HalideSchedule s, int threads) {
    load_autoschedulers();
    p.auto_schedule(s == HalideSchedule::Adams2019 ? "Adams2019" : "Mullapudi2016", Halide::get_host_target(), machine(threads));
}

/// Compiles `p`, binds each input to random floats of its shape (seeds 1, 2, ...) and times
/// realizing an output of `out_shape`.
inline void halide_time(benchmark::State &state, Halide::Pipeline &p, std::vector<std::pair<Halide::ImageParam, std::vector<int>>> inputs,
                        const std::vector<int> &out_shape, double flops, int threads) {
    p.compile_jit(Halide::get_host_target());
    unsigned seed = 1;
    for (auto &[param, shape] : inputs) {
        Halide::Buffer<float> b(shape);
        const std::vector<float> r = random_floats(b.number_of_elements(), seed++);
        std::copy(r.begin(), r.end(), b.data());
        param.set(b);
    }
    Halide::Buffer<float> out(out_shape);
    p.realize(out);
    for (auto _ : state) p.realize(out);
    report(state, flops, threads);
}

inline void halide_matmul(benchmark::State &state, int n, int threads, HalideSchedule s) {
    using namespace Halide;
    halide_threads(threads);
    const Target target = get_host_target();
    const int vec = target.natural_vector_size<float>();
    ImageParam A(Float(32), 2, "A"), B(Float(32), 2, "B"); // A(k, y), B(x, k): x innermost
    Var x("x"), y("y"), xi("xi"), yi("yi"), yii("yii"), xy("xy");
    Func prod("prod"), out("out");
    RDom k(0, n);
    prod(x, y) += A(k, y) * B(x, k);
    out(x, y) = prod(x, y);
    Pipeline p(out);
    if (s == HalideSchedule::Manual) {
        // Halide's test/performance/matrix_multiplication.cpp, widened to the host's vectors.
        out.tile(x, y, xi, yi, 3 * vec, 32).fuse(x, y, xy).parallel(xy).split(yi, yi, yii, 4).vectorize(xi, vec).unroll(xi).unroll(yii);
        prod.compute_at(out, yi).vectorize(x, vec).unroll(y);
        prod.update().reorder(x, y, k).vectorize(x, vec).unroll(x).unroll(y).unroll(k, 2);
    } else {
        A.set_estimates({{0, n}, {0, n}});
        B.set_estimates({{0, n}, {0, n}});
        out.set_estimates({{0, n}, {0, n}});
        halide_autoschedule(p, s, threads);
    }
    halide_time(state, p, {{A, {n, n}}, {B, {n, n}}}, {n, n}, 2.0 * n * n * n, threads);
}

inline void halide_conv3x3(benchmark::State &state, int threads, HalideSchedule s) {
    using namespace Halide;
    halide_threads(threads);
    const Target target = get_host_target();
    const int vec = target.natural_vector_size<float>();
    const int C = 64, H = 56, W = 56;
    // Channels innermost (Halide's conv_layer layout): input(ci, x, y), filter(co, ci, kx, ky).
    ImageParam input(Float(32), 3, "input"), filter(Float(32), 4, "filter");
    Var c("c"), x("x"), y("y"), xo("xo"), xi("xi");
    Func padded = BoundaryConditions::constant_exterior(input, 0.0f);
    Func conv("conv"), out("out");
    RDom r(0, C, 0, 3, 0, 3);
    conv(c, x, y) = 0.0f;
    conv(c, x, y) += filter(c, r.x, r.y, r.z) * padded(r.x, x + r.y - 1, y + r.z - 1);
    out(c, x, y) = conv(c, x, y);
    out.bound(c, 0, C).bound(x, 0, W).bound(y, 0, H);
    Pipeline p(out);
    if (s == HalideSchedule::Manual) {
        // 4 pixels x 64 channels (4 vectors) of accumulators, reduction inside, rows in parallel.
        out.split(x, xo, xi, 4).reorder(c, xi, xo, y).vectorize(c, vec).unroll(xi).parallel(y);
        conv.compute_at(out, xo).vectorize(c, vec).unroll(c).unroll(x);
        conv.update().reorder(c, x, r.x, r.y, r.z).vectorize(c, vec).unroll(c).unroll(x);
    } else {
        input.set_estimates({{0, C}, {0, W}, {0, H}});
        filter.set_estimates({{0, C}, {0, C}, {0, 3}, {0, 3}});
        out.set_estimates({{0, C}, {0, W}, {0, H}});
        halide_autoschedule(p, s, threads);
    }
    halide_time(state, p, {{input, {C, W, H}}, {filter, {C, C, 3, 3}}}, {C, W, H}, 2.0 * C * H * W * C * 9, threads);
}

/// The row-wise pipelines of bench_tune written in Halide, as its rows write them in the DSL
/// (Halide's first dimension is the innermost): a separable 3x3 box blur of a 2050² image to
/// 2048², RMSNorm with a gain and softmax over rows of 1024 (4096 rows).
enum class HalideRowwise { Blur, RmsNorm, Softmax };

inline void halide_rowwise(benchmark::State &state, HalideRowwise op, int threads, HalideSchedule s) {
    using namespace Halide;
    halide_threads(threads);
    const int cols = op == HalideRowwise::Blur ? 2048 : 1024, rows = op == HalideRowwise::Blur ? 2048 : 4096;
    const int in_cols = op == HalideRowwise::Blur ? cols + 2 : cols, in_rows = op == HalideRowwise::Blur ? rows + 2 : rows;
    ImageParam in(Float(32), 2, "in"), gain(Float(32), 1, "gain");
    Var x("x"), y("y");
    RDom r(0, cols);
    Func out("out");
    double flops = 0;
    if (op == HalideRowwise::Blur) {
        Func blur_x("blur_x");
        blur_x(x, y) = (in(x, y) + in(x + 1, y) + in(x + 2, y)) * (1.0f / 3);
        out(x, y) = (blur_x(x, y) + blur_x(x, y + 1) + blur_x(x, y + 2)) * (1.0f / 3);
        flops = double(rows) * cols * 6;
    } else if (op == HalideRowwise::RmsNorm) {
        Func mean_square("mean_square");
        mean_square(y) = sum(in(r, y) * in(r, y)) / float(cols);
        out(x, y) = in(x, y) / sqrt(mean_square(y) + 1e-6f) * gain(x);
        flops = double(rows) * cols * 4;
    } else {
        Func row_max("row_max"), total("total");
        row_max(y) = maximum(in(r, y));
        total(y) = sum(exp(in(r, y) - row_max(y)));
        out(x, y) = exp(in(x, y) - row_max(y)) / total(y);
        flops = double(rows) * cols * 5;
    }
    Pipeline p(out);
    if (s == HalideSchedule::Manual) throw std::invalid_argument("halide_rowwise: the rows compare with the autoschedulers only");
    in.set_estimates({{0, in_cols}, {0, in_rows}});
    gain.set_estimates({{0, cols}});
    out.set_estimates({{0, cols}, {0, rows}});
    halide_autoschedule(p, s, threads);
    halide_time(state, p, {{in, {in_cols, in_rows}}, {gain, {cols}}}, {cols, rows}, flops, threads);
}

// ---------------------------------------------------------------------------------------------
// oneDNN

inline void onednn_conv3x3(benchmark::State &state, int threads) {
    using namespace dnnl;
    omp_set_num_threads(threads);
    engine eng(engine::kind::cpu, 0);
    stream st(eng);
    const memory::dims src{1, 64, 56, 56}, wei{64, 64, 3, 3}, dst{1, 64, 56, 56}, strides{1, 1}, pad{1, 1};
    using dt = memory::data_type;
    using tag = memory::format_tag;
    // Let oneDNN pick its blocked layouts; inputs are reordered into them once, outside timing.
    memory::desc src_any(src, dt::f32, tag::any), wei_any(wei, dt::f32, tag::any), dst_any(dst, dt::f32, tag::any);
    convolution_forward::desc desc(prop_kind::forward_inference, algorithm::convolution_direct, src_any, wei_any, dst_any,
                                   strides, pad, pad);
    convolution_forward::primitive_desc pd(desc, eng);
    std::vector<float> rs = random_floats(64 * 56 * 56, 1), rw = random_floats(64 * 64 * 9, 2);
    memory src_user({src, dt::f32, tag::nchw}, eng, rs.data()), wei_user({wei, dt::f32, tag::oihw}, eng, rw.data());
    memory src_m(pd.src_desc(), eng), wei_m(pd.weights_desc(), eng), dst_m(pd.dst_desc(), eng);
    reorder(src_user, src_m).execute(st, src_user, src_m);
    reorder(wei_user, wei_m).execute(st, wei_user, wei_m);
    st.wait();
    convolution_forward conv(pd);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_m}, {DNNL_ARG_WEIGHTS, wei_m}, {DNNL_ARG_DST, dst_m}};
    for (auto _ : state) {
        conv.execute(st, args);
        st.wait();
    }
    report(state, 2.0 * 64 * 56 * 56 * 64 * 9, threads);
}

inline void add(const std::string &name, std::function<void(benchmark::State &)> fn) {
    benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State &s) { fn(s); })
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
}


/// Runs the registered benchmarks (reported by `reporter`, or the console). Repetitions of the different benchmarks run in a random
/// order unless the command line says otherwise: on a shared, noisy machine a slow spell then
/// falls on every implementation alike instead of on whichever ran during it, so the ratios hold.
inline int run_interleaved(int argc, char **argv, benchmark::BenchmarkReporter *reporter = nullptr) {
    std::vector<char *> args(argv, argv + argc);
    std::string interleave = "--benchmark_enable_random_interleaving=true";
    if (std::none_of(args.begin(), args.end(), [](const char *a) {
            return std::string(a).rfind("--benchmark_enable_random_interleaving", 0) == 0;
        }))
        args.push_back(interleave.data());
    argc = static_cast<int>(args.size());
    args.push_back(nullptr);
    argv = args.data();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    if (reporter) benchmark::RunSpecifiedBenchmarks(reporter);
    else benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}

} // namespace tessera_bench
