// chipsim's speed.
//
//   build/tests/bench/bench_chipsim
//
// - BM_SimulateTspMatmul / BM_SimulateNpuMatmul: whole simulations (timing + values) of large
//   matmul programs; counters instructions/s and simulated MACs/s.
// - BM_MxmKernel: the functional MXM hot loop (fp32, see mxm_kernel.h) on 1024 rows against a
//   64x64 / 32x32 weight tile; counters MACs/s, and the fraction of the host's fp32 peak:
//     host_peak_measured: the rate of a loop of 12 independent vector FMAs (multiply + add) at
//                         the same ISA level the kernel runs at, i.e. what this core can do;
//     host_peak_theory:   lanes (16 with AVX-512, 8 with AVX2, 4 otherwise) x 2 FMA pipes x the
//                         clock, measured as the rate of a dependent chain of integer adds
//                         (1 cycle each).
//   frac_of_measured_peak and frac_of_theoretical_peak are the kernel's MACs/s over those.
#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/mxm_kernel.h>
#include <tessera/chipsim/simulator.h>

#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <cstring>
#include <random>
#include <sstream>

using namespace tessera::chipsim;

namespace {

TensorData random_tensor(DType d, std::vector<int64_t> shape, uint32_t seed) {
    TensorData t{d, shape, {}};
    int64_t n = dtype_bytes(d);
    for (auto s : shape) n *= s;
    t.bytes.resize(size_t(n));
    std::mt19937 rng(seed);
    if (d == DType::BF16) {
        for (int64_t i = 0; i < n / 2; ++i) {
            uint16_t h = float_to_bf16(float(int(rng() % 33) - 16) / 8.0f);
            std::memcpy(t.bytes.data() + 2 * i, &h, 2);
        }
    } else {
        for (auto &b : t.bytes) b = uint8_t(rng());
    }
    return t;
}

void run_program(benchmark::State &state, const Program &p, const TimingModel &m, const SimOptions &o) {
    int64_t instructions = 0, macs = 0;
    for (auto _ : state) {
        SimResult r = simulate(p, m, o);
        instructions += r.report.instructions;
        macs += r.report.macs;
        benchmark::DoNotOptimize(r);
    }
    state.counters["instructions/s"] = benchmark::Counter(double(instructions), benchmark::Counter::kIsRate);
    state.counters["sim_MACs/s"] = benchmark::Counter(double(macs), benchmark::Counter::kIsRate);
}

void BM_SimulateTspMatmul(benchmark::State &state) {
    // The example program: C[512,256] int32 = A[512,256] x B[256,256] int8 on four planes.
    static const TimingModel m(load_target("tsp-mini"));
    Program p = assemble_file(std::string(TESSERA_SOURCE_DIR) + "/apps/chip_programs/tsp_matmul_int8.tasm");
    SimOptions o;
    o.functional = state.range(0);
    o.inputs["A"] = random_tensor(DType::Int8, {512, 256}, 1);
    o.inputs["B"] = random_tensor(DType::Int8, {256, 256}, 2);
    run_program(state, p, m, o);
}
BENCHMARK(BM_SimulateTspMatmul)->Arg(1)->Arg(0)->ArgName("functional")->Unit(benchmark::kMillisecond);

void BM_SimulateNpuMatmul(benchmark::State &state) {
    // C[256,256] bf16 = A[256,256] x B[256,256] bf16: 8 K chunks x 8 N tiles of 32x32 weights.
    static const TimingModel m(load_target("npu-edge"));
    const int M = 256, K = 256, N = 256;
    std::ostringstream s;
    s << ".input A bf16 [256,256]\n.input B bf16 [256,256]\n.output C bf16 [256,256]\n";
    for (int kc = 0; kc < K / 32; ++kc) s << "dma.load SPAD[" << kc * M << ":" << M << "], A@" << kc * 64 << "[" << M << ":512,64]\n";
    for (int kc = 0; kc < K / 32; ++kc)
        for (int nc = 0; nc < N / 32; ++nc)
            s << "dma.load SPAD[" << 2048 + (kc * 8 + nc) * 32 << ":32], B@" << kc * 32 * 512 + nc * 64 << "[32:512,64]\n";
    s << "sync.signal.load 0\nsync.wait.exec 0\n";
    int wbuf = 0;
    for (int nc = 0; nc < N / 32; ++nc) {
        for (int kc = 0; kc < K / 32; ++kc) {
            s << "mxm.lw.bf16 m0.w" << wbuf << ", SPAD[" << 2048 + (kc * 8 + nc) * 32 << ":32]\n";
            s << "mxm.mm.bf16" << (kc ? ".acc" : "") << " m0.w" << wbuf << ", ACC[" << (nc % 4) * M << ":" << M << "], SPAD[" << kc * M << ":" << M << "]\n";
            wbuf ^= 1;
        }
        s << "mxm.drain.fp32.bf16 SPAD[" << 4096 + nc * M << ":" << M << "], ACC[" << (nc % 4) * M << ":" << M << "]\n";
    }
    s << "sync.signal.exec 1\nsync.wait.store 1\n";
    for (int nc = 0; nc < N / 32; ++nc) s << "dma.store C@" << nc * 64 << "[" << M << ":512,64], SPAD[" << 4096 + nc * M << ":" << M << "]\n";
    Program p = assemble(s.str(), "bench_npu_matmul");
    SimOptions o;
    o.functional = state.range(0);
    o.inputs["A"] = random_tensor(DType::BF16, {M, K}, 3);
    o.inputs["B"] = random_tensor(DType::BF16, {K, N}, 4);
    run_program(state, p, m, o);
}
BENCHMARK(BM_SimulateNpuMatmul)->Arg(1)->Arg(0)->ArgName("functional")->Unit(benchmark::kMillisecond);

// ---- host peak -------------------------------------------------------------------------------

/// Seconds of CPU time this thread used: the machine may be shared, and a thread's CPU time
/// counts only the cycles it ran (Google Benchmark's rates use CPU time too).
double thread_seconds() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/// Cycles per second, from a chain of dependent integer adds (one per cycle on every x86-64).
double measure_clock_hz() {
    const int64_t n = 200'000'000;
    uint64_t x = 0;
    double t0 = thread_seconds();
    for (int64_t i = 0; i < n; i += 4) {
        asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
    }
    double s = thread_seconds() - t0;
    benchmark::DoNotOptimize(x);
    return double(n) / s;
}

typedef float V16 __attribute__((vector_size(64)));
typedef float V8 __attribute__((vector_size(32)));
typedef float V4 __attribute__((vector_size(16)));

template <typename V, int W> struct FmaLoop {
    /// 12 independent accumulators hide the FMA latency; returns FMAs (per lane) done.
    static inline __attribute__((always_inline)) int64_t run(int64_t iters, float *sink) {
        V acc[12];
        static volatile float one = 1.0000001f, almost = 0.9999999f; // opaque: nothing folds
        V a, b;
        for (int l = 0; l < W; ++l) {
            a[l] = one;
            b[l] = almost;
        }
        for (auto &v : acc) v = a;
        for (int64_t i = 0; i < iters; ++i) {
            for (auto &v : acc) v = v * a + b;
        }
        V total = acc[0];
        for (int i = 1; i < 12; ++i) total += acc[i];
        *sink = total[0];
        return iters * 12 * W;
    }
};

__attribute__((target("avx512f,fma"))) int64_t fma512(int64_t n, float *s) { return FmaLoop<V16, 16>::run(n, s); }
__attribute__((target("avx2,fma"))) int64_t fma256(int64_t n, float *s) { return FmaLoop<V8, 8>::run(n, s); }
int64_t fma128(int64_t n, float *s) { return FmaLoop<V4, 4>::run(n, s); }

struct HostPeak {
    double measured = 0, theory = 0;
    int lanes = 4;
};

const HostPeak &host_peak() {
    static const HostPeak peak = [] {
        HostPeak p;
        std::string isa = mxm_kernel_isa();
        auto fn = isa == "avx512" ? fma512 : isa == "avx2" ? fma256 : fma128;
        p.lanes = isa == "avx512" ? 16 : isa == "avx2" ? 8 : 4;
        float sink;
        fn(1'000'000, &sink); // warm up
        double t0 = thread_seconds();
        int64_t fmas = fn(50'000'000, &sink);
        p.measured = double(fmas) / (thread_seconds() - t0);
        p.theory = double(p.lanes) * 2 * measure_clock_hz();
        return p;
    }();
    return peak;
}

void BM_MxmKernel(benchmark::State &state) {
    const int n = int(state.range(0)), k = n; // int8 tiles are 64x64, bf16 32x32 on tsp-mini
    const int64_t rows = 1024;
    std::vector<float> a(size_t(rows * k)), w(size_t(k * n)), out(size_t(rows * n));
    std::mt19937 rng(5);
    for (auto &x : a) x = float(int(rng() % 256) - 128);
    for (auto &x : w) x = float(int(rng() % 256) - 128);
    const HostPeak &peak = host_peak();
    int64_t macs = 0;
    double cpu = 0;
    for (auto _ : state) {
        double t0 = thread_seconds();
        mxm_rows(a.data(), w.data(), out.data(), rows, k, n);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
        cpu += thread_seconds() - t0;
        macs += rows * k * n;
    }
    const double rate = double(macs) / cpu;
    state.counters["MACs/s"] = rate;
    state.counters["host_peak_measured"] = peak.measured;
    state.counters["host_peak_theory"] = peak.theory;
    state.counters["frac_of_measured_peak"] = rate / peak.measured;
    state.counters["frac_of_theoretical_peak"] = rate / peak.theory;
    state.SetLabel(std::string("isa=") + mxm_kernel_isa());
}
BENCHMARK(BM_MxmKernel)->Arg(64)->Arg(32)->ArgName("n");

} // namespace

BENCHMARK_MAIN();
