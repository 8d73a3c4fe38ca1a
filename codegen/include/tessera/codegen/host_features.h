#pragma once
// What the host CPU offers the code generator, detected once through LLVM.
#include <string>

#include "tessera/codegen/compiled_kernel.h"

namespace tessera {

/// The host CPU as the code generator sees it.
struct HostFeatures {
    std::string cpu;      ///< LLVM's name for it, e.g. "znver3", "skylake-avx512"
    std::string features; ///< LLVM feature string of everything it supports ("+avx2,+fma,...")
    bool sse41 = false, avx = false, avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512bf16 = false;
    /// The widest vector registers the code generator uses: 512, 256 or 128 bits.
    int vector_bits = 128;
    /// Online cores (the default thread count of parallel loops).
    int cores = 1;

    /// fp32 lanes of one vector register.
    int float_lanes() const { return vector_bits / 32; }
    /// One line to read back: "znver3 avx2 fma avx512f (512-bit vectors), 2 cores".
    std::string to_string() const;
};

/// The host's features (detected on first use, then cached).
const HostFeatures &host_features();

/// The features of an x86-64 ISA level whatever this machine has: "avx2" (Haswell: AVX2, FMA,
/// F16C; 256-bit vectors) or "avx512" (Skylake-AVX512: AVX-512 F/BW/VL/DQ; 512-bit). Library
/// schedules take one (host_schedules.h) and cpu_options_for() compiles for it, so a schedule
/// made for the other ISA is lowered and compiled on every machine and run where
/// host_supports() says so. Throws tessera::Error naming the known levels otherwise.
HostFeatures isa_features(const std::string &isa);

/// Options that make the code generator target `f`'s CPU and features instead of the host's.
CpuOptions cpu_options_for(const HostFeatures &f);

/// Whether this machine runs code compiled for `f` (every vector extension of `f` is here).
bool host_supports(const HostFeatures &f);

} // namespace tessera
