#pragma once
// Just-in-time compilation to host machine code (LLVM ORC): of a hand-made or lowered loop
// nest, or of a whole Pipeline with its schedule. Pipeline compilations are cached, so
// `f.realize(shape, bindings, Target::host())` compiles once and then reuses the code.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/compiled_kernel.h"
#include "tessera/func.h"
#include "tessera/lower.h"
#include "tessera/target.h"

namespace tessera {

/// Generates, optimizes and loads machine code for `source` on the host (uncached). Throws
/// tessera::Error if the loop nest uses something the host backend cannot run (e.g. an
/// unflattened Provide), naming the node.
CompiledKernel compile_jit(const KernelSource &source, const CpuOptions &options = {});

/// The kernel for a lowered module: arguments are the module's inputs, then its Params, then
/// its outputs. Output extents that lowering left symbolic ("<F>.<arg>.extent") are read from
/// the output buffers at call time, and their mins are 0. `name` must be a C identifier;
/// empty means the module's name with other characters replaced by '_'.
KernelSource kernel_source(const LoweredModule &module, const std::string &name = "");

/// Lowers `p` (with its schedule) for outputs of these shapes and compiles it for the host
/// target `target` (Target::host()). Cached by the structural hash of the pipeline, its
/// schedule, the shapes, the target and the options: a second call with an equal pipeline
/// returns the same kernel without compiling.
CompiledKernel compile_jit(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes,
                           const Target &target = Target::host(), const CpuOptions &options = {});

/// As above, with symbolic output shapes: the kernel takes its output extents from the output
/// buffers, so one compilation serves every size. Cached the same way.
CompiledKernel compile_jit(const Pipeline &p, const Target &target = Target::host(), const CpuOptions &options = {});

/// How the pipeline cache has been used since the process started (or the last clear).
struct JitCacheStats {
    int64_t hits = 0, misses = 0, entries = 0;
};
JitCacheStats jit_cache_stats();
/// Drops every cached kernel (kernels already handed out stay valid).
void clear_jit_cache();

/// Runs a compiled pipeline kernel with the bindings realize() takes (Inputs and Params by
/// name) and fresh output buffers of `output_shapes`, which it returns. Throws tessera::Error
/// with the kernel's message if it reports an error, or naming a missing binding.
std::vector<Buffer<>> run_pipeline_kernel(const CompiledKernel &kernel, const std::vector<std::vector<int64_t>> &output_shapes,
                                          const Bindings &bindings);

} // namespace tessera
