// Ahead-of-time libraries: the kernel's object file (the same code the JIT loads) and a copy
// of the host runtime's object file, archived as lib<name>.a, plus the C header.
#include <filesystem>
#include <fstream>

#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>

#include "codegen_llvm.h"
#include "llvm_compile.h"
#include "tessera/codegen/aot.h"
#include "tessera/realize.h"
#include "tessera/codegen/jit.h"
#include "tessera/error.h"
#include "tessera/lower.h"

namespace tessera {

namespace internal {
extern const unsigned char embedded_runtime_object[];
extern const size_t embedded_runtime_object_size;
} // namespace internal

namespace {

void write_file(const std::filesystem::path &path, const std::string &bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("compile_to_library: cannot write '" + path.string() + "'; check that the directory is writable");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error("compile_to_library: writing '" + path.string() + "' failed");
}

} // namespace

LibraryFiles compile_to_library(const KernelSource &source, const std::string &dir, const CpuOptions &options) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("compile_to_library: cannot create directory '" + dir + "': " + ec.message());

    const internal::LLVMTarget target = internal::resolve_llvm_target(options);
    std::string object;
    {
        llvm::LLVMContext context;
        std::unique_ptr<llvm::Module> module = internal::codegen_llvm(source, context, target, options);
        std::unique_ptr<llvm::TargetMachine> machine = internal::make_target_machine(target, options);
        internal::optimize_module(*module, *machine, options);
        object = internal::emit_object(*module, *machine);
    }
    const std::string runtime(reinterpret_cast<const char *>(internal::embedded_runtime_object),
                              internal::embedded_runtime_object_size);

    LibraryFiles files;
    files.library = (fs::path(dir) / ("lib" + source.name + ".a")).string();
    files.header = (fs::path(dir) / (source.name + ".h")).string();
    const std::string kernel_member = source.name + ".o";
    std::vector<llvm::NewArchiveMember> members;
    members.emplace_back(llvm::MemoryBufferRef(object, kernel_member));
    members.emplace_back(llvm::MemoryBufferRef(runtime, "tessera_runtime.o"));
    if (llvm::Error e = llvm::writeArchive(files.library, members, true, llvm::object::Archive::K_GNU, true, false)) {
        std::string message;
        llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) { message = info.message(); });
        throw Error("compile_to_library: cannot write '" + files.library + "': " + message);
    }
    write_file(files.header, c_header(source));
    return files;
}

LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir, const Target &target,
                                const CpuOptions &options) {
    if (target.kind() != Target::Kind::Host)
        throw Error("compile_to_library: target '" + target.name() + "' is not the host; use Target::host()");
    return compile_to_library(kernel_source(lower(p, target), name), dir, options);
}

LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir,
                                const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                                const CpuOptions &options) {
    if (target.kind() != Target::Kind::Host)
        throw Error("compile_to_library: target '" + target.name() + "' is not the host; use Target::host()");
    const internal::ChosenSchedule chosen(p, output_shapes, target);
    LibraryFiles files = compile_to_library(kernel_source(lower(p, target, output_shapes), name), dir, options);
    if (!chosen.description().empty()) files.schedule = chosen.description();
    return files;
}

} // namespace tessera
