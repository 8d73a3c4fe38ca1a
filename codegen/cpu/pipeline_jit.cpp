// Pipelines on the host: lowering → KernelSource → JIT, behind a cache keyed by the structural
// hash of (pipeline, schedule, shapes, target, options); and the realizer of Target::host().
#include <cctype>
#include <map>
#include <mutex>
#include <sstream>

#include "tessera/codegen/jit.h"
#include "tessera/error.h"
#include "tessera/ir_equality.h"
#include "tessera/realize.h"

namespace tessera {

KernelSource kernel_source(const LoweredModule &m, const std::string &name) {
    KernelSource s;
    s.name = name;
    if (s.name.empty()) {
        for (char c : m.name) s.name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        if (s.name.empty() || std::isdigit(static_cast<unsigned char>(s.name[0]))) s.name = "k_" + s.name;
    }
    for (const LoweredBuffer &in : m.inputs) s.arguments.push_back({in.name, KernelArgument::Kind::Input, in.type, in.shape});
    for (const auto &[pname, ptype] : m.params) s.arguments.push_back({pname, KernelArgument::Kind::Scalar, ptype, {}});
    for (const LoweredBuffer &out : m.outputs) s.arguments.push_back({out.name, KernelArgument::Kind::Output, out.type, out.shape});
    // Symbolic output regions start at 0 (the extents come from the buffers, see codegen).
    Stmt body = m.body;
    for (const LoweredBuffer &out : m.outputs)
        for (const Expr &min : out.min)
            if (const Variable *v = min.as<Variable>()) body = LetStmt::make(v->name, 0, body);
    s.body = body;
    return s;
}

namespace {

struct PipelineCache {
    std::mutex mutex;
    std::map<std::string, CompiledKernel> kernels;
    JitCacheStats stats;
};

PipelineCache &cache() {
    static PipelineCache c;
    return c;
}

uint64_t fnv1a(const std::string &s) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

std::string cache_key(const Pipeline &p, const std::vector<std::vector<int64_t>> *shapes, const Target &target,
                      const CpuOptions &o) {
    std::ostringstream k;
    k << std::hex << hash(p) << ':' << fnv1a(p.schedule().to_json(-1)) << std::dec << ':';
    if (shapes)
        for (const auto &shape : *shapes) {
            k << '[';
            for (int64_t e : shape) k << e << ',';
            k << ']';
        }
    else k << "symbolic";
    k << ':' << target.name() << ':' << o.reassociate << o.fma << o.opt_level << o.keep_listing << ':' << o.cpu << ':' << o.features;
    return k.str();
}

CompiledKernel compile_cached(const Pipeline &p, const std::vector<std::vector<int64_t>> *shapes, const Target &target,
                              const CpuOptions &options) {
    if (target.kind() != Target::Kind::Host)
        throw Error("compile_jit: target '" + target.name() + "' is not the host; use Target::host()");
    const std::string key = cache_key(p, shapes, target, options);
    PipelineCache &c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto it = c.kernels.find(key);
        if (it != c.kernels.end()) {
            ++c.stats.hits;
            return it->second;
        }
    }
    LoweredModule m = shapes ? lower(p, target, *shapes) : lower(p, target);
    CompiledKernel k = compile_jit(kernel_source(m), options);
    std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.misses;
    // Two threads may have compiled the same pipeline at once; the first one stored wins.
    auto [it, inserted] = c.kernels.emplace(key, k);
    return it->second;
}

} // namespace

CompiledKernel compile_jit(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                           const CpuOptions &options) {
    return compile_cached(p, &output_shapes, target, options);
}

CompiledKernel compile_jit(const Pipeline &p, const Target &target, const CpuOptions &options) {
    return compile_cached(p, nullptr, target, options);
}

JitCacheStats jit_cache_stats() {
    PipelineCache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    JitCacheStats s = c.stats;
    s.entries = static_cast<int64_t>(c.kernels.size());
    return s;
}

void clear_jit_cache() {
    PipelineCache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.kernels.clear();
    c.stats = JitCacheStats{};
}

std::vector<Buffer<>> run_pipeline_kernel(const CompiledKernel &kernel, const std::vector<std::vector<int64_t>> &output_shapes,
                                          const Bindings &bindings) {
    std::vector<KernelValue> values;
    std::vector<Buffer<>> outputs;
    size_t output_index = 0;
    for (const KernelArgument &a : kernel.arguments()) {
        if (a.kind == KernelArgument::Kind::Output) {
            if (output_index >= output_shapes.size())
                throw Error("kernel '" + kernel.name() + "': no shape given for output '" + a.name + "'");
            outputs.emplace_back(a.type, output_shapes[output_index++]);
            values.emplace_back(outputs.back());
            continue;
        }
        const Binding *found = nullptr;
        for (const Binding &b : bindings)
            if (b.name == a.name) found = &b;
        if (!found)
            throw Error("realize on host: " + std::string(a.is_buffer() ? "Input " : "Param ") + a.name + " has no binding; bind it ({" +
                        a.name + (a.is_buffer() ? ", buffer})" : ", value})"));
        if (a.is_buffer()) {
            if (found->is_param) throw Error("realize on host: Input " + a.name + " is bound to a scalar; bind a buffer");
            // Kernels read dense row-major buffers; a strided view is copied first.
            values.emplace_back(found->buffer.defined() && !found->buffer.is_dense() ? found->buffer.copy() : found->buffer);
        } else {
            if (!found->is_param) throw Error("realize on host: Param " + a.name + " is bound to a buffer; bind a value");
            if (found->param_type.is_float()) values.emplace_back(found->float_value);
            else values.emplace_back(found->int_value);
        }
    }
    kernel.run(values);
    return outputs;
}

namespace {

std::vector<Buffer<>> realize_on_host(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const Bindings &bindings,
                                      const Target &target) {
    internal::check_realize_request(p, shapes);
    CompiledKernel k = compile_jit(p, shapes, target);
    return run_pipeline_kernel(k, shapes, bindings);
}

const internal::RealizerRegistration registration(Target::Kind::Host, realize_on_host);

} // namespace

} // namespace tessera
