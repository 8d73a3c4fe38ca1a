#include "llvm_compile.h"

#include <mutex>

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/PassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include "tessera/error.h"

namespace tessera::internal {

void initialize_llvm() {
    static std::once_flag once;
    std::call_once(once, [] {
        llvm::InitializeNativeTarget();
        llvm::InitializeNativeTargetAsmPrinter();
        llvm::InitializeNativeTargetAsmParser();
    });
}

std::unique_ptr<llvm::TargetMachine> make_target_machine(const LLVMTarget &target, const CpuOptions &options) {
    initialize_llvm();
    std::string error;
    const llvm::Target *t = llvm::TargetRegistry::lookupTarget(target.triple, error);
    if (!t) throw Error("host codegen: LLVM has no target for '" + target.triple + "': " + error);
    llvm::TargetOptions to;
    // Fuse only where the IR allows it (the `contract` flag that CpuOptions::fma sets).
    to.AllowFPOpFusion = llvm::FPOpFusion::Standard;
    to.UnsafeFPMath = options.reassociate;
    llvm::CodeGenOpt::Level level = options.opt_level >= 3 ? llvm::CodeGenOpt::Aggressive
                                    : options.opt_level == 2 ? llvm::CodeGenOpt::Default
                                    : options.opt_level == 1 ? llvm::CodeGenOpt::Less
                                                             : llvm::CodeGenOpt::None;
    std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(target.triple, target.cpu, target.features, to,
                                                                   llvm::Reloc::PIC_, llvm::CodeModel::Small, level));
    if (!tm) throw Error("host codegen: LLVM cannot generate code for CPU '" + target.cpu + "'");
    return tm;
}

void optimize_module(llvm::Module &module, llvm::TargetMachine &machine, const CpuOptions &options) {
    module.setDataLayout(machine.createDataLayout());
    if (options.opt_level <= 0) return;
    llvm::LoopAnalysisManager lam;
    llvm::FunctionAnalysisManager fam;
    llvm::CGSCCAnalysisManager cgam;
    llvm::ModuleAnalysisManager mam;
    llvm::PipelineTuningOptions pto;
    pto.LoopVectorization = true;
    pto.SLPVectorization = true;
    pto.LoopUnrolling = true;
    llvm::PassBuilder pb(&machine, pto);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    llvm::OptimizationLevel level = options.opt_level >= 3 ? llvm::OptimizationLevel::O3
                                    : options.opt_level == 2 ? llvm::OptimizationLevel::O2
                                                             : llvm::OptimizationLevel::O1;
    llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
    mpm.run(module, mam);
}

static std::string emit(llvm::Module &module, llvm::TargetMachine &machine, llvm::CodeGenFileType type) {
    module.setDataLayout(machine.createDataLayout());
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if (machine.addPassesToEmitFile(pm, os, nullptr, type))
        throw InternalError("host codegen: LLVM cannot emit this file type for " + machine.getTargetTriple().str());
    pm.run(module);
    return std::string(buffer.begin(), buffer.end());
}

std::string emit_object(llvm::Module &module, llvm::TargetMachine &machine) {
    return emit(module, machine, llvm::CGFT_ObjectFile);
}

std::string emit_assembly(llvm::Module &module, llvm::TargetMachine &machine) {
    return emit(module, machine, llvm::CGFT_AssemblyFile);
}

std::string module_text(const llvm::Module &module) {
    std::string s;
    llvm::raw_string_ostream os(s);
    module.print(os, nullptr);
    return os.str();
}

} // namespace tessera::internal
