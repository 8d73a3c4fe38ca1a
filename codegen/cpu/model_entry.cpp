// The entry point of a whole model's host library (compile_model_to_library, aot.h): the model
// compiles to one kernel, <name>_graph, whose arguments include the model's constants (weights,
// biases); this object embeds the constants' bytes and defines <name>(inputs..., outputs...),
// which passes them to <name>_graph with the caller's buffers, so a C caller never sees a weight.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>

#include "codegen_llvm.h"
#include "llvm_compile.h"
#include "model_entry.h"

namespace tessera::internal {

namespace {

/// A tessera_buffer_t (buffer_abi.h) in static storage describing `constant`'s bytes.
llvm::GlobalVariable *constant_buffer(llvm::Module &module, llvm::StructType *buffer_type, const std::string &name, const Buffer<> &constant) {
    llvm::LLVMContext &context = module.getContext();
    const Buffer<> dense = constant.copy();
    const size_t bytes = size_t(dense.number_of_elements()) * size_t(dense.type().bytes());
    const auto *data = static_cast<const uint8_t *>(dense.data());
    llvm::Constant *init = llvm::ConstantDataArray::get(context, llvm::ArrayRef<uint8_t>(data, bytes));
    auto *data_global = new llvm::GlobalVariable(module, init->getType(), true, llvm::GlobalValue::PrivateLinkage, init, name + ".data");
    data_global->setAlignment(llvm::Align(64));
    llvm::Type *i8p = llvm::Type::getInt8PtrTy(context), *i64p = llvm::Type::getInt64PtrTy(context);
    llvm::Constant *shape = llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i64p));
    if (!dense.shape().empty()) {
        std::vector<uint64_t> extents(dense.shape().begin(), dense.shape().end());
        llvm::Constant *s = llvm::ConstantDataArray::get(context, llvm::ArrayRef<uint64_t>(extents));
        auto *shape_global = new llvm::GlobalVariable(module, s->getType(), true, llvm::GlobalValue::PrivateLinkage, s, name + ".shape");
        shape = llvm::ConstantExpr::getPointerCast(shape_global, i64p);
    }
    const Type t = dense.type();
    llvm::Constant *fields[] = {
        llvm::ConstantExpr::getPointerCast(data_global, i8p),
        shape,
        llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(i64p)), // dense row-major
        llvm::ConstantInt::get(llvm::Type::getInt32Ty(context), dense.shape().size()),
        llvm::ConstantInt::get(llvm::Type::getInt8Ty(context), uint8_t(t.code())), // TESSERA_TYPE_* follow TypeCode
        llvm::ConstantInt::get(llvm::Type::getInt8Ty(context), t.is_bool() ? 1 : t.bits()),
        llvm::ConstantInt::get(llvm::Type::getInt16Ty(context), 0),
    };
    return new llvm::GlobalVariable(module, buffer_type, true, llvm::GlobalValue::PrivateLinkage,
                                    llvm::ConstantStruct::get(buffer_type, fields), name + ".buffer");
}

} // namespace

std::string emit_model_entry_object(const std::string &name, size_t entry_arguments, const std::vector<ModelKernelArgument> &graph_arguments,
                                    const CpuOptions &options) {
    const LLVMTarget target = resolve_llvm_target(options);
    llvm::LLVMContext context;
    llvm::Module module(name, context);
    module.setTargetTriple(target.triple);
    llvm::IRBuilder<> b(context);
    llvm::Type *i8p = b.getInt8PtrTy(), *i32 = b.getInt32Ty();
    llvm::Type *i8pp = i8p->getPointerTo();
    // tessera_buffer_t: data, shape, strides, dimensions, type_code, type_bits, reserved.
    llvm::StructType *buffer_type = llvm::StructType::create(context, {i8p, b.getInt64Ty()->getPointerTo(), b.getInt64Ty()->getPointerTo(), i32,
                                                                       b.getInt8Ty(), b.getInt8Ty(), b.getInt16Ty()},
                                                             "tessera_buffer_t");

    // <name>_argv(void **args): the entry's arguments by address, the constants added in the
    // graph kernel's order.
    llvm::FunctionCallee graph_argv = module.getOrInsertFunction(name + "_graph_argv", i32, i8pp);
    auto *argv = llvm::Function::Create(llvm::FunctionType::get(i32, {i8pp}, false), llvm::Function::ExternalLinkage, name + "_argv", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", argv));
    llvm::Value *graph_args = b.CreateAlloca(i8p, b.getInt64(graph_arguments.size()), "graph_args");
    for (size_t i = 0; i < graph_arguments.size(); ++i) {
        const ModelKernelArgument &a = graph_arguments[i];
        llvm::Value *v = a.entry_index >= 0
                             ? static_cast<llvm::Value *>(b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, argv->getArg(0), uint64_t(a.entry_index))))
                             : b.CreatePointerCast(constant_buffer(module, buffer_type, name + ".constant" + std::to_string(i), a.constant), i8p);
        b.CreateStore(v, b.CreateConstGEP1_64(i8p, graph_args, i));
    }
    b.CreateRet(b.CreateCall(graph_argv, {graph_args}));

    // <name>(inputs..., outputs...): the C entry point.
    auto *entry = llvm::Function::Create(llvm::FunctionType::get(i32, std::vector<llvm::Type *>(entry_arguments, i8p), false),
                                         llvm::Function::ExternalLinkage, name, module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
    llvm::Value *args = b.CreateAlloca(i8p, b.getInt64(std::max<size_t>(1, entry_arguments)), "args");
    for (size_t i = 0; i < entry_arguments; ++i) b.CreateStore(entry->getArg(unsigned(i)), b.CreateConstGEP1_64(i8p, args, i));
    b.CreateRet(b.CreateCall(argv, {args}));

    // <name>_error_message: the graph kernel's words (they name the argument).
    llvm::FunctionCallee graph_message = module.getOrInsertFunction(name + "_graph_error_message", i8p, i32);
    auto *message = llvm::Function::Create(llvm::FunctionType::get(i8p, {i32}, false), llvm::Function::ExternalLinkage, name + "_error_message", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", message));
    b.CreateRet(b.CreateCall(graph_message, {message->getArg(0)}));

    std::unique_ptr<llvm::TargetMachine> machine = make_target_machine(target, options);
    module.setDataLayout(machine->createDataLayout());
    return emit_object(module, *machine);
}

} // namespace tessera::internal
