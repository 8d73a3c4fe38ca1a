#pragma once
// What a CompiledKernel holds: the entry points of loaded machine code and the object that
// keeps the code in memory. LLVM-free.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/codegen/compiled_kernel.h"

namespace tessera::internal {

struct CompiledKernelState {
    std::string name;
    std::vector<KernelArgument> arguments;
    double compile_ms = 0;
    std::string cpu, features;
    std::string llvm_ir, assembly;
    int32_t (*argv_entry)(void **) = nullptr;
    const char *(*message_entry)(int32_t) = nullptr;
    /// Owns the loaded code (the JIT instance); the entry points live as long as it does.
    std::shared_ptr<void> code_owner;
};

} // namespace tessera::internal
