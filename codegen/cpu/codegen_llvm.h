#pragma once
// Flattened loop nest → LLVM IR for the host CPU. Internal to codegen/cpu (includes LLVM).
#include <memory>
#include <string>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "tessera/codegen/compiled_kernel.h"

namespace tessera::internal {

/// The machine the code is for: an LLVM triple, CPU and feature string, and the vector width
/// the code generator aims for.
struct LLVMTarget {
    std::string triple, cpu, features;
    int vector_bits = 128;
};

/// The host (or the host restricted/extended by options.cpu and options.features).
LLVMTarget resolve_llvm_target(const CpuOptions &options);

/// Emits one module with three external functions:
///   int32_t <name>(tessera_buffer_t *..., <scalars>...)  — the kernel, arguments in order;
///   int32_t <name>_argv(void **args)                      — the same, arguments by pointer;
///   const char *<name>_error_message(int32_t code)        — words for a returned code.
/// The kernel checks every buffer against the argument list before touching memory.
std::unique_ptr<llvm::Module> codegen_llvm(const KernelSource &source, llvm::LLVMContext &context,
                                           const LLVMTarget &target, const CpuOptions &options);

} // namespace tessera::internal
