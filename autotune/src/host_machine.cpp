// The host's measured peaks (host_machine.h). The kernels are Tessera pipelines compiled by the
// same JIT as the candidates, so the peaks are what generated code reaches, not a datasheet's.
#include "host_machine.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "tessera/codegen/buffer_abi.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/error.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/ir_operator.h"
#include "tessera/ops.h"

namespace tessera::internal::autotune {

namespace {

using Clock = std::chrono::steady_clock;

/// The fastest of `calls` runs of a kernel of one fp32 input and one fp32 output of `n`
/// elements (after a warm-up), in seconds. Called through the raw ABI on buffers allocated
/// once, so that the time is the kernel's alone. The fastest, not the median: a peak is what
/// the machine reaches when nothing else runs on it.
double fastest_call(const CompiledKernel &kernel, int64_t n, int calls) {
    std::vector<float> in(size_t(n), 0.5f), out(static_cast<size_t>(n));
    int64_t shape[1] = {n};
    tessera_buffer_t buffers[2];
    void *args[2];
    for (int b = 0; b < 2; ++b) {
        buffers[b] = tessera_buffer_t{};
        buffers[b].data = b == 0 ? in.data() : out.data();
        buffers[b].shape = shape;
        buffers[b].dimensions = 1;
        buffers[b].type_code = TESSERA_TYPE_FLOAT;
        buffers[b].type_bits = 32;
        args[b] = &buffers[b];
    }
    double best = 1e30;
    for (int c = 0; c <= calls; ++c) {
        const auto t0 = Clock::now();
        if (int code = kernel.call_argv(args)) throw Error("host calibration: " + kernel.error_message(code));
        if (c > 0) best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

int64_t cache_size(int name, int64_t fallback) {
    const long v = sysconf(name);
    return v > 0 ? int64_t(v) : fallback;
}

/// flop/s of one core: the library's register-tiled matmul (host_schedules.h) on operands
/// that stay in L2, on one thread. (A polynomial per element reached ~40 % of that: its FMA
/// chains, emitted one after another, did not overlap.)
double measure_core_flops(int lanes) {
    const int64_t m = 96, n = 8 * lanes, k = 256;
    Input a(Float(32), {m, k}, "a"), b(Float(32), {k, n}, "b");
    Pipeline p(ops::matmul(a, b).func());
    host_schedules::matmul(p, m, n, k);
    const CompiledKernel kernel = compile_jit(p, {{m, n}});
    std::vector<float> av(size_t(m * k), 0.5f), bv(size_t(k * n), 0.25f), cv(size_t(m * n));
    int64_t shapes[3][2] = {{m, k}, {k, n}, {m, n}};
    float *data[3] = {av.data(), bv.data(), cv.data()};
    tessera_buffer_t buffers[3];
    void *args[3];
    for (int i = 0; i < 3; ++i) {
        buffers[i] = tessera_buffer_t{};
        buffers[i].data = data[i];
        buffers[i].shape = shapes[i];
        buffers[i].dimensions = 2;
        buffers[i].type_code = TESSERA_TYPE_FLOAT;
        buffers[i].type_bits = 32;
        args[i] = &buffers[i];
    }
    const int threads = num_threads();
    set_num_threads(1);
    double best = 1e30;
    for (int c = 0; c <= 100; ++c) {
        const auto t0 = Clock::now();
        kernel.call_argv(args);
        if (c > 0) best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    set_num_threads(threads);
    return 2.0 * double(m * n * k) / best;
}

/// Bytes/s read and written by a vectorized copy of `bytes` (each way), `parallel` or on one core.
double measure_copy_bandwidth(int lanes, int64_t bytes, bool parallel) {
    const int64_t n = std::max<int64_t>(bytes / 4 / (16 * lanes) * (16 * lanes), 16 * lanes);
    Input x(Float(32), {n}, "x");
    Var i("i"), io("io"), ii("ii");
    Func copy("copy");
    copy(i) = x(i) * 2.0f;
    copy.split(i, io, ii, 16 * lanes).vectorize(ii, lanes);
    if (parallel) copy.parallel(io);
    Pipeline p(copy);
    // Small working sets repeat more calls: the call overhead then matters less than the copy.
    const double s = fastest_call(compile_jit(p, {{n}}), n, bytes < (1 << 20) ? 500 : 10);
    return 2.0 * 4.0 * double(n) / s;
}

} // namespace

std::string HostMachine::to_string() const {
    char s[256];
    std::snprintf(s, sizeof s, "%d cores x %d lanes, %.3g flop/s/core, L1 %.3g B/s, L2 %.3g B/s, L3 %.3g B/s, memory %.3g B/s (all cores)",
                  cores, lanes, core_flops, l1_bandwidth, l2_bandwidth, l3_bandwidth, memory_bandwidth);
    return s;
}

const HostMachine &host_machine() {
    static const HostMachine machine = [] {
        const auto t0 = Clock::now();
        HostMachine m;
        const HostFeatures &f = host_features();
        m.cores = std::max(1, num_threads());
        m.lanes = f.float_lanes();
        m.vector_registers = f.avx512f ? 32 : 16;
        m.l1_bytes = cache_size(_SC_LEVEL1_DCACHE_SIZE, m.l1_bytes);
        m.l2_bytes = cache_size(_SC_LEVEL2_CACHE_SIZE, m.l2_bytes);
        m.l3_bytes = cache_size(_SC_LEVEL3_CACHE_SIZE, m.l2_bytes);
        m.core_flops = measure_core_flops(m.lanes);
        // Half of each cache for the copy's source and destination together.
        m.l1_bandwidth = measure_copy_bandwidth(m.lanes, m.l1_bytes / 4, false);
        m.l2_bandwidth = measure_copy_bandwidth(m.lanes, m.l2_bytes / 4, false);
        // Past L2 within L3: a quarter of L3, at least 2 L2s, at most 16 MiB (the C library
        // reports the whole L3 of a socket, of which one VM's cores may see a slice).
        m.l3_bandwidth = measure_copy_bandwidth(m.lanes, std::clamp<int64_t>(m.l3_bytes / 4, 2 * m.l2_bytes, int64_t{16} << 20), true);
        // Past a private L2: 64 MiB each way, or four L2s where they are larger.
        m.memory_bandwidth = measure_copy_bandwidth(m.lanes, std::max<int64_t>(int64_t{64} << 20, 4 * m.l2_bytes), true);
        m.calibration_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        return m;
    }();
    return machine;
}

} // namespace tessera::internal::autotune
