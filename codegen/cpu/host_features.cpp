#include "tessera/codegen/host_features.h"

#include <thread>

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/Host.h>

#include "codegen_llvm.h"
#include "tessera/error.h"

namespace tessera {

static HostFeatures detect() {
    HostFeatures h;
    internal::LLVMTarget t = internal::resolve_llvm_target(CpuOptions{});
    h.cpu = t.cpu;
    h.features = t.features;
    llvm::StringMap<bool> f;
    llvm::sys::getHostCPUFeatures(f);
    auto has = [&](const char *name) { return f.lookup(name); };
    h.sse41 = has("sse4.1");
    h.avx = has("avx");
    h.avx2 = has("avx2");
    h.fma = has("fma");
    h.f16c = has("f16c");
    h.avx512f = has("avx512f");
    h.avx512bw = has("avx512bw");
    h.avx512vl = has("avx512vl");
    h.avx512bf16 = has("avx512bf16");
    h.vector_bits = t.vector_bits;
    h.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return h;
}

const HostFeatures &host_features() {
    static const HostFeatures h = detect();
    return h;
}

HostFeatures isa_features(const std::string &isa) {
    HostFeatures h;
    h.sse41 = h.avx = h.avx2 = h.fma = h.f16c = true;
    h.cores = host_features().cores;
    if (isa == "avx2") {
        h.cpu = "haswell";
        h.features = "+sse4.1,+avx,+avx2,+fma,+f16c,-avx512f";
        h.vector_bits = 256;
    } else if (isa == "avx512") {
        h.cpu = "skylake-avx512";
        h.features = "+sse4.1,+avx,+avx2,+fma,+f16c,+avx512f,+avx512bw,+avx512vl,+avx512dq";
        h.avx512f = h.avx512bw = h.avx512vl = true;
        h.vector_bits = 512;
    } else {
        throw Error("isa_features: unknown ISA level '" + isa + "'; the known ones are avx2 and avx512");
    }
    return h;
}

CpuOptions cpu_options_for(const HostFeatures &f) {
    CpuOptions o;
    o.cpu = f.cpu;
    o.features = f.features;
    return o;
}

bool host_supports(const HostFeatures &f) {
    const HostFeatures &h = host_features();
    return (!f.sse41 || h.sse41) && (!f.avx || h.avx) && (!f.avx2 || h.avx2) && (!f.fma || h.fma) && (!f.f16c || h.f16c) &&
           (!f.avx512f || h.avx512f) && (!f.avx512bw || h.avx512bw) && (!f.avx512vl || h.avx512vl) &&
           (!f.avx512bf16 || h.avx512bf16);
}

std::string HostFeatures::to_string() const {
    std::string s = cpu;
    if (sse41) s += " sse4.1";
    if (avx2) s += " avx2";
    if (fma) s += " fma";
    if (f16c) s += " f16c";
    if (avx512f) s += " avx512f";
    if (avx512bw) s += " avx512bw";
    if (avx512bf16) s += " avx512bf16";
    s += " (" + std::to_string(vector_bits) + "-bit vectors), " + std::to_string(cores) + (cores == 1 ? " core" : " cores");
    return s;
}

} // namespace tessera
