// The JIT: a loop nest → LLVM module → optimized object code → loaded by an ORC LLJIT
// instance that the CompiledKernel keeps alive. The object is produced by the same path the
// ahead-of-time writer uses, so JIT and AOT kernels are the same machine code.
#include "tessera/codegen/jit.h"

#include <chrono>

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/Mangling.h>
#include <llvm/Support/MemoryBuffer.h>

#include "codegen_llvm.h"
#include "compiled_kernel_state.h"
#include "llvm_compile.h"
#include "runtime/tessera_runtime.h"
#include "tessera/error.h"

namespace tessera {

namespace {

std::string to_message(llvm::Error e) {
    std::string s;
    llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) { s += info.message(); });
    return s;
}

template <typename T> T check(llvm::Expected<T> v, const std::string &what) {
    if (!v) throw InternalError("host JIT: " + what + ": " + to_message(v.takeError()));
    return std::move(*v);
}

} // namespace

CompiledKernel compile_jit(const KernelSource &source, const CpuOptions &options) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    internal::initialize_llvm();
    const internal::LLVMTarget target = internal::resolve_llvm_target(options);

    auto state = std::make_shared<internal::CompiledKernelState>();
    state->name = source.name;
    state->arguments = source.arguments;
    state->cpu = target.cpu;
    state->features = target.features;

    std::string object;
    {
        llvm::LLVMContext context;
        std::unique_ptr<llvm::Module> module = internal::codegen_llvm(source, context, target, options);
        std::unique_ptr<llvm::TargetMachine> machine = internal::make_target_machine(target, options);
        internal::optimize_module(*module, *machine, options);
        if (options.keep_listing) {
            state->llvm_ir = internal::module_text(*module);
            state->assembly = internal::emit_assembly(*module, *machine);
        }
        object = internal::emit_object(*module, *machine);
    }

    std::unique_ptr<llvm::orc::LLJIT> jit = check(llvm::orc::LLJITBuilder().create(), "cannot start LLJIT");
    llvm::orc::JITDylib &dylib = jit->getMainJITDylib();
    // The runtime the kernel calls is this library's copy; libm and libc come from the process.
    llvm::orc::MangleAndInterner mangle(jit->getExecutionSession(), jit->getDataLayout());
    llvm::orc::SymbolMap runtime;
    auto add = [&](const char *name, void *address) {
        runtime[mangle(name)] = llvm::JITEvaluatedSymbol(llvm::pointerToJITTargetAddress(address), llvm::JITSymbolFlags::Exported);
    };
    add("tessera_rt_parallel_for", reinterpret_cast<void *>(&tessera_rt_parallel_for));
    add("tessera_rt_malloc", reinterpret_cast<void *>(&tessera_rt_malloc));
    add("tessera_rt_free", reinterpret_cast<void *>(&tessera_rt_free));
    if (llvm::Error e = dylib.define(llvm::orc::absoluteSymbols(runtime)))
        throw InternalError("host JIT: cannot define runtime symbols: " + to_message(std::move(e)));
    dylib.addGenerator(check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit->getDataLayout().getGlobalPrefix()),
                             "cannot search the process for symbols"));
    if (llvm::Error e = jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, source.name + ".o")))
        throw InternalError("host JIT: cannot add the object of '" + source.name + "': " + to_message(std::move(e)));
    auto argv = check(jit->lookup(source.name + "_argv"), "kernel '" + source.name + "' has no entry point");
    auto message = check(jit->lookup(source.name + "_error_message"), "kernel '" + source.name + "' has no message table");
    state->argv_entry = reinterpret_cast<int32_t (*)(void **)>(argv.getAddress());
    state->message_entry = reinterpret_cast<const char *(*)(int32_t)>(message.getAddress());
    state->code_owner = std::shared_ptr<llvm::orc::LLJIT>(std::move(jit));
    state->compile_ms = std::chrono::duration<double, std::milli>(clock::now() - start).count();
    return CompiledKernel(std::move(state));
}

} // namespace tessera
