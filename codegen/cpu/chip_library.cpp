// The object file of a chip kernel library: the artifact's bytes as a constant and three C
// functions that hand them to libtessera_chiprt, so a chip library is called exactly like a
// host one (same signature, same error codes) plus <name>_last_report().
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "codegen_llvm.h"
#include "llvm_compile.h"
#include "tessera/codegen/chip_artifact.h"

namespace tessera::internal {

std::string emit_chip_library_object(const ChipArtifact &artifact, const std::vector<uint8_t> &bytes, const CpuOptions &options) {
    const LLVMTarget target = resolve_llvm_target(options);
    llvm::LLVMContext context;
    llvm::Module module(artifact.name, context);
    module.setTargetTriple(target.triple);
    llvm::IRBuilder<> b(context);
    llvm::Type *i8p = b.getInt8PtrTy(), *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
    llvm::Type *i8pp = i8p->getPointerTo();

    llvm::Constant *data = llvm::ConstantDataArray::get(context, llvm::ArrayRef<uint8_t>(bytes.data(), bytes.size()));
    auto *blob = new llvm::GlobalVariable(module, data->getType(), true, llvm::GlobalValue::PrivateLinkage, data, artifact.name + ".artifact");
    blob->setAlignment(llvm::Align(16));
    // The kernel the runtime loads on the first call (null until then).
    auto *slot = new llvm::GlobalVariable(module, i8p, false, llvm::GlobalValue::InternalLinkage,
                                          llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i8p)), artifact.name + ".kernel");

    llvm::FunctionCallee call = module.getOrInsertFunction("tessera_chip_library_call", i32, i8p, i64, i8p, i8pp, i8pp);
    llvm::FunctionCallee message = module.getOrInsertFunction("tessera_chip_error_message", i8p, i32);
    llvm::FunctionCallee report = module.getOrInsertFunction("tessera_chip_library_report", i8p, i8pp);

    const size_t n = artifact.arguments.size();
    std::vector<llvm::Type *> params(n, i8p);
    auto *kernel = llvm::Function::Create(llvm::FunctionType::get(i32, params, false), llvm::Function::ExternalLinkage, artifact.name, module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", kernel));
    llvm::Value *args = b.CreateAlloca(i8p, b.getInt64(n), "args");
    for (size_t i = 0; i < n; ++i) b.CreateStore(kernel->getArg(unsigned(i)), b.CreateConstGEP1_64(i8p, args, i));
    llvm::Value *target_name = b.CreateGlobalStringPtr(artifact.program.target.name, artifact.name + ".target");
    b.CreateRet(b.CreateCall(call, {b.CreatePointerCast(blob, i8p), b.getInt64(bytes.size()), target_name, slot, args}));

    auto *error_message = llvm::Function::Create(llvm::FunctionType::get(i8p, {i32}, false), llvm::Function::ExternalLinkage,
                                                 artifact.name + "_error_message", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", error_message));
    b.CreateRet(b.CreateCall(message, {error_message->getArg(0)}));

    auto *last_report = llvm::Function::Create(llvm::FunctionType::get(i8p, {}, false), llvm::Function::ExternalLinkage,
                                               artifact.name + "_last_report", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", last_report));
    b.CreateRet(b.CreateCall(report, {slot}));

    std::unique_ptr<llvm::TargetMachine> machine = make_target_machine(target, options);
    module.setDataLayout(machine->createDataLayout());
    return emit_object(module, *machine);
}

std::string emit_string_object(const std::string &function, const std::string &text, const CpuOptions &options) {
    const LLVMTarget target = resolve_llvm_target(options);
    llvm::LLVMContext context;
    llvm::Module module(function, context);
    module.setTargetTriple(target.triple);
    llvm::IRBuilder<> b(context);
    auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getInt8PtrTy(), {}, false), llvm::Function::ExternalLinkage, function, module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", f));
    b.CreateRet(b.CreateGlobalStringPtr(text, function + ".text"));
    std::unique_ptr<llvm::TargetMachine> machine = make_target_machine(target, options);
    module.setDataLayout(machine->createDataLayout());
    return emit_object(module, *machine);
}

} // namespace tessera::internal
