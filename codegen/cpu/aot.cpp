// Ahead-of-time libraries: the kernel's object file (the same code the JIT loads) and a copy
// of the host runtime's object file, archived as lib<name>.a, plus the C header.
#include <filesystem>
#include <fstream>

#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>

#include "codegen_llvm.h"
#include "llvm_compile.h"
#include "tessera/codegen/aot.h"
#include "tessera/codegen/chip_artifact.h"
#include "tessera/realize.h"
#include "tessera/codegen/jit.h"
#include "tessera/error.h"
#include "tessera/lower.h"

namespace tessera {

namespace internal {
extern const unsigned char embedded_runtime_object[];
extern const size_t embedded_runtime_object_size;
std::string emit_chip_library_object(const ChipArtifact &artifact, const std::vector<uint8_t> &bytes, const CpuOptions &options);
} // namespace internal

namespace {

void write_file(const std::filesystem::path &path, const std::string &bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("compile_to_library: cannot write '" + path.string() + "'; check that the directory is writable");
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw Error("compile_to_library: writing '" + path.string() + "' failed");
}

void write_archive(const std::string &path, const std::vector<std::pair<std::string, const std::string *>> &objects) {
    std::vector<llvm::NewArchiveMember> members;
    for (const auto &[member, bytes] : objects) members.emplace_back(llvm::MemoryBufferRef(*bytes, member));
    if (llvm::Error e = llvm::writeArchive(path, members, true, llvm::object::Archive::K_GNU, true, false)) {
        std::string message;
        llvm::handleAllErrors(std::move(e), [&](const llvm::ErrorInfoBase &info) { message = info.message(); });
        throw Error("compile_to_library: cannot write '" + path + "': " + message);
    }
}

/// A chip library: the artifact (and its manifest) in `dir`, an archive of the object that
/// embeds it, and the header.
LibraryFiles compile_chip_library(const Pipeline &p, const std::string &name, const std::string &dir,
                                  const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                                  const CpuOptions &options) {
    const ChipArtifact artifact = compile_chip_artifact(p, name, target, output_shapes);
    LibraryFiles files;
    files.artifact = write_chip_artifact(artifact, dir);
    files.schedule = artifact.schedule_source;
    files.tuning_record_id = artifact.tuning_record_id;
    const std::string object = internal::emit_chip_library_object(artifact, encode_chip_artifact(artifact), options);
    files.library = (std::filesystem::path(dir) / ("lib" + name + ".a")).string();
    files.header = (std::filesystem::path(dir) / (name + ".h")).string();
    write_archive(files.library, {{name + ".o", &object}});
    write_file(files.header, c_header(artifact));
    return files;
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
    write_archive(files.library, {{source.name + ".o", &object}, {"tessera_runtime.o", &runtime}});
    write_file(files.header, c_header(source));
    return files;
}

LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir, const Target &target,
                                const CpuOptions &options) {
    if (target.kind() == Target::Kind::Chip)
        throw Error("compile_to_library: a chip library (target '" + target.name() +
                    "') has fixed shapes; give the output shapes (the overload with output_shapes)");
    if (target.kind() != Target::Kind::Host)
        throw Error("compile_to_library: target '" + target.name() + "' is not the host; use Target::host()");
    return compile_to_library(kernel_source(lower(p, target), name), dir, options);
}

LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir,
                                const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                                const CpuOptions &options) {
    if (target.kind() == Target::Kind::Chip) return compile_chip_library(p, name, dir, output_shapes, target, options);
    if (target.kind() != Target::Kind::Host)
        throw Error("compile_to_library: target '" + target.name() + "' is neither the host nor a chip; use Target::host() or a chip target");
    const internal::ChosenSchedule chosen(p, output_shapes, target);
    LibraryFiles files = compile_to_library(kernel_source(lower(p, target, output_shapes), name), dir, options);
    if (!chosen.description().empty()) files.schedule = chosen.description();
    return files;
}

} // namespace tessera
