#pragma once
// Just-in-time compilation of loop nests to host machine code (LLVM ORC).
#include "tessera/codegen/compiled_kernel.h"

namespace tessera {

/// Generates, optimizes and loads machine code for `source` on the host. Throws
/// tessera::Error if the loop nest uses something the host backend cannot run (e.g. an
/// unflattened Provide), naming the node.
CompiledKernel compile_jit(const KernelSource &source, const CpuOptions &options = {});

} // namespace tessera
