#include "tessera/codegen/host_features.h"

#include <thread>

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/Host.h>

#include "codegen_llvm.h"

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
