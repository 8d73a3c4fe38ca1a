#pragma once
// The host CPU as the host cost model sees it: its cache sizes (from the C library) and its
// peaks, measured once per process by small calibrated kernels compiled by the JIT itself — an
// register-tiled matmul and copies whose working sets sit in L1, in L2, in L3 and beyond.
// Nothing here is a figure of a particular machine.
#include <cstdint>
#include <string>

namespace tessera::internal::autotune {

struct HostMachine {
    int cores = 1;
    int lanes = 4;                 ///< fp32 lanes of the widest vector the JIT uses
    int vector_registers = 16;     ///< architectural vector registers (32 with AVX-512)
    int64_t l1_bytes = 32 << 10, l2_bytes = 1 << 20, l3_bytes = 8 << 20; ///< per the C library
    double core_flops = 0;         ///< measured fp32 flops/s of one core (an FMA counts 2)
    double l1_bandwidth = 0;       ///< measured bytes/s read + written by one core, L1-resident
    double l2_bandwidth = 0;       ///< the same with an L2-resident working set
    double l3_bandwidth = 0;       ///< every core together, a working set past L2 within L3
    double memory_bandwidth = 0;   ///< every core together, a working set past the caches
    double calibration_seconds = 0;
    /// "4.1e+10 flop/s/core, L1 1.2e+11 B/s, L2 5e+10 B/s, memory 1.6e+10 B/s (all cores)".
    std::string to_string() const;
};

/// The host, measured on first use (a few tens of milliseconds) and cached for the process.
const HostMachine &host_machine();

} // namespace tessera::internal::autotune
