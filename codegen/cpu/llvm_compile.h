#pragma once
// From an LLVM module to optimized machine code for a target, shared by the JIT and the
// ahead-of-time library writer. Internal to codegen/cpu (includes LLVM).
#include <memory>
#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen_llvm.h"

namespace tessera::internal {

/// Registers LLVM's native target with LLVM (once per process).
void initialize_llvm();

/// A TargetMachine for `target` producing position-independent code.
std::unique_ptr<llvm::TargetMachine> make_target_machine(const LLVMTarget &target, const CpuOptions &options);

/// Runs LLVM's optimization pipeline (-O<options.opt_level>) over the module.
void optimize_module(llvm::Module &module, llvm::TargetMachine &machine, const CpuOptions &options);

/// The module as an ELF object file, or as assembly text.
std::string emit_object(llvm::Module &module, llvm::TargetMachine &machine);
std::string emit_assembly(llvm::Module &module, llvm::TargetMachine &machine);

/// The module as LLVM IR text.
std::string module_text(const llvm::Module &module);

} // namespace tessera::internal
