// A shape-dispatching kernel library (shape_dispatch.h): the entry point's object file (the
// table as constants and thin C functions handing it to the dispatch runtime,
// runtime/tessera_dispatch.c), merged with the runtime's object and every bucket's library
// into one archive, and its header.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/MemoryBuffer.h>

#include "codegen_llvm.h"
#include "llvm_compile.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/error.h"

namespace tessera {

namespace internal {
extern const unsigned char embedded_dispatch_object[];
extern const size_t embedded_dispatch_object_size;
extern const unsigned char embedded_buffer_abi_h[];
extern const size_t embedded_buffer_abi_h_size;
} // namespace internal

namespace {

constexpr size_t kMaxArguments = 8, kMaxDimensions = 8, kMaxParams = 8; // tessera_dispatch.c's limits
// Bounds on an extent's map (real ones are 1..4 and a few window sizes); with the buckets'
// extents checked below, the runtime's scale * bucket + offset cannot overflow.
constexpr int64_t kMaxScale = 1 << 16, kMaxOffset = int64_t(1) << 40;

void check_table(const DispatchTable &t) {
    const std::string where = "dispatch library '" + t.name + "': ";
    if (t.buckets.empty()) throw Error(where + "no kernels");
    if (t.params.empty() || t.params.size() > kMaxParams) throw Error(where + "dispatches on 1 to 8 parameters");
    if (t.arguments.empty() || t.arguments.size() > kMaxArguments) throw Error(where + "takes 1 to 8 buffers");
    for (const DispatchArgument &a : t.arguments) {
        if (a.param.size() != a.extent.size() || a.param.empty() || a.param.size() > kMaxDimensions)
            throw Error(where + "argument " + a.name + " needs 1 to 8 dimensions, each a parameter or an extent");
        if ((!a.scale.empty() && a.scale.size() != a.param.size()) || (!a.offset.empty() && a.offset.size() != a.param.size()))
            throw Error(where + "argument " + a.name + " needs a scale and an offset per dimension, or none");
        for (size_t d = 0; d < a.param.size(); ++d) {
            const int p = a.param[d];
            if (p >= int(t.params.size())) throw Error(where + "argument " + a.name + " names a parameter the table lacks");
            if (p < 0) continue;
            // The runtime inverts the map and pads up to the bucket: it must grow with the value.
            if (a.scale_of(d) < 1 || a.scale_of(d) > kMaxScale || std::abs(a.offset_of(d)) > kMaxOffset)
                throw Error(where + "argument " + a.name + "'s dimension " + std::to_string(d) + " (" + dispatch_extent_text(t, a, d) +
                            ") needs a scale of 1 to " + std::to_string(kMaxScale) + " and an offset of at most " + std::to_string(kMaxOffset));
            if (a.extent_at(d, [&] {
                    std::vector<int64_t> lo;
                    for (const DispatchParam &q : t.params) lo.push_back(q.lo);
                    return lo;
                }()) < 1)
                throw Error(where + "argument " + a.name + "'s dimension " + std::to_string(d) + " (" + dispatch_extent_text(t, a, d) +
                            ") is below 1 at " + t.params[size_t(p)].name + " = " + std::to_string(t.params[size_t(p)].lo) +
                            "; start the range higher");
        }
    }
    // The entry point reads each parameter from the buffers' extents.
    for (size_t p = 0; p < t.params.size(); ++p) {
        bool carried = false;
        for (const DispatchArgument &a : t.arguments) carried |= std::count(a.param.begin(), a.param.end(), int(p)) > 0;
        if (!carried) throw Error(where + "parameter " + t.params[p].name + " is no argument's extent");
    }
    for (const DispatchBucket &b : t.buckets) {
        if (b.values.size() != t.params.size()) throw Error(where + "kernel " + b.kernel + " has no value for every parameter");
        for (const DispatchArgument &a : t.arguments)
            for (size_t d = 0; d < a.param.size(); ++d) {
                int64_t extent = 0;
                if (a.param[d] >= 0 && (__builtin_mul_overflow(a.scale_of(d), b.values[size_t(a.param[d])], &extent) ||
                                        __builtin_add_overflow(extent, a.offset_of(d), &extent)))
                    throw Error(where + "kernel " + b.kernel + ": " + a.name + "'s dimension " + std::to_string(d) + " (" +
                                dispatch_extent_text(t, a, d) + ") overflows");
            }
    }
    // The corner of the range needs a bucket covering it; then every call in range has one.
    for (size_t p = 0; p < t.params.size(); ++p) {
        bool covered = false;
        for (const DispatchBucket &b : t.buckets) {
            bool all = true;
            for (size_t q = 0; q < t.params.size(); ++q) all &= b.values[q] >= t.params[q].hi;
            covered |= all;
        }
        if (!covered) throw Error(where + "no kernel covers the largest shape of the range (" + t.params[p].name + " = " +
                                  std::to_string(t.params[p].hi) + ")");
    }
}

std::vector<int64_t> encode_table(const DispatchTable &t) {
    std::vector<int64_t> v = {int64_t(t.arguments.size()), int64_t(t.params.size()), int64_t(t.buckets.size())};
    for (const DispatchParam &p : t.params) v.insert(v.end(), {p.lo, p.hi});
    for (const DispatchArgument &a : t.arguments) {
        v.insert(v.end(), {a.is_output ? 1 : 0, int64_t(a.param.size()), int64_t(static_cast<int>(a.type.code())), int64_t(a.type.bits())});
        for (size_t d = 0; d < a.param.size(); ++d) {
            if (a.param[d] < 0) v.insert(v.end(), {-1, 0, a.extent[d]});
            else v.insert(v.end(), {int64_t(a.param[d]), a.scale_of(d), a.offset_of(d)});
        }
    }
    for (const DispatchBucket &b : t.buckets) v.insert(v.end(), b.values.begin(), b.values.end());
    return v;
}

std::string emit_dispatch_object(const DispatchTable &t, const CpuOptions &options) {
    const internal::LLVMTarget target = internal::resolve_llvm_target(options);
    llvm::LLVMContext context;
    llvm::Module module(t.name, context);
    module.setTargetTriple(target.triple);
    llvm::IRBuilder<> b(context);
    llvm::Type *i8p = b.getInt8PtrTy(), *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
    llvm::Type *i8pp = i8p->getPointerTo(), *i64p = i64->getPointerTo();

    const std::vector<int64_t> encoded = encode_table(t);
    llvm::Constant *table_data = llvm::ConstantDataArray::get(context, llvm::ArrayRef<uint64_t>(reinterpret_cast<const uint64_t *>(encoded.data()), encoded.size()));
    auto *table = new llvm::GlobalVariable(module, table_data->getType(), true, llvm::GlobalValue::PrivateLinkage, table_data, t.name + ".table");
    auto pointer_array = [&](const std::vector<llvm::Constant *> &items, const std::string &name) {
        auto *type = llvm::ArrayType::get(i8p, items.size());
        return new llvm::GlobalVariable(module, type, true, llvm::GlobalValue::PrivateLinkage, llvm::ConstantArray::get(type, items), name);
    };
    auto string_constant = [&](const std::string &text, const std::string &name) {
        return llvm::ConstantExpr::getPointerCast(b.CreateGlobalString(text, name, 0, &module), i8p);
    };
    // Functions of the bucket kernels, declared with the kernel's signature (buffer pointers).
    std::vector<llvm::Constant *> kernels, messages, reports, names;
    const std::vector<llvm::Type *> buffer_params(t.arguments.size(), i8p);
    for (const DispatchBucket &k : t.buckets) {
        kernels.push_back(llvm::cast<llvm::Constant>(
            b.CreatePointerCast(module.getOrInsertFunction(k.kernel, llvm::FunctionType::get(i32, buffer_params, false)).getCallee(), i8p)));
        messages.push_back(llvm::cast<llvm::Constant>(
            b.CreatePointerCast(module.getOrInsertFunction(k.kernel + "_error_message", i8p, i32).getCallee(), i8p)));
        if (t.chip)
            reports.push_back(llvm::cast<llvm::Constant>(b.CreatePointerCast(module.getOrInsertFunction(k.kernel + "_last_report", i8p).getCallee(), i8p)));
        names.push_back(string_constant(k.kernel, t.name + ".name"));
    }
    std::vector<llvm::Constant *> arg_names, param_names;
    for (const DispatchArgument &a : t.arguments) arg_names.push_back(string_constant(a.name, t.name + ".arg"));
    for (const DispatchParam &p : t.params) param_names.push_back(string_constant(p.name, t.name + ".param"));
    auto *kernel_table = pointer_array(kernels, t.name + ".kernels");
    auto *message_table = pointer_array(messages, t.name + ".messages");
    auto *name_table = pointer_array(names, t.name + ".names");
    auto *arg_table = pointer_array(arg_names, t.name + ".args");
    auto *param_table = pointer_array(param_names, t.name + ".params");
    // The bucket the latest call on this thread went to (for <name>_last_report).
    auto *last = new llvm::GlobalVariable(module, i64, false, llvm::GlobalValue::InternalLinkage, b.getInt64(0), t.name + ".last");
    last->setThreadLocal(true); // each thread's latest call, like the error message
    auto as = [&](llvm::Value *v, llvm::Type *type) { return b.CreatePointerCast(v, type); };

    llvm::FunctionCallee call = module.getOrInsertFunction("tessera_dispatch_call", i32, i64p, i8pp, i8pp, i8pp, i8pp, i8pp, i64p, i8pp);
    auto *entry = llvm::Function::Create(llvm::FunctionType::get(i32, buffer_params, false), llvm::Function::ExternalLinkage, t.name, module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", entry));
    llvm::Value *args = b.CreateAlloca(i8p, b.getInt64(t.arguments.size()), "args");
    for (size_t i = 0; i < t.arguments.size(); ++i) b.CreateStore(entry->getArg(unsigned(i)), b.CreateConstGEP1_64(i8p, args, i));
    b.CreateRet(b.CreateCall(call, {as(table, i64p), as(kernel_table, i8pp), as(message_table, i8pp), as(name_table, i8pp), as(arg_table, i8pp),
                                    as(param_table, i8pp), last, args}));

    llvm::FunctionCallee message = module.getOrInsertFunction("tessera_dispatch_error_message", i8p, i32);
    auto *error_message = llvm::Function::Create(llvm::FunctionType::get(i8p, {i32}, false), llvm::Function::ExternalLinkage, t.name + "_error_message", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", error_message));
    b.CreateRet(b.CreateCall(message, {error_message->getArg(0)}));

    llvm::FunctionCallee select = module.getOrInsertFunction("tessera_dispatch_select", i8p, i64p, i8pp, i64p);
    auto *dispatch = llvm::Function::Create(llvm::FunctionType::get(i8p, {i64p}, false), llvm::Function::ExternalLinkage, t.name + "_dispatch", module);
    b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", dispatch));
    b.CreateRet(b.CreateCall(select, {as(table, i64p), as(name_table, i8pp), dispatch->getArg(0)}));

    if (t.chip) {
        // <name>_last_report(): the report of the bucket the latest call went to.
        auto *report_table = pointer_array(reports, t.name + ".reports");
        auto *last_report = llvm::Function::Create(llvm::FunctionType::get(i8p, {}, false), llvm::Function::ExternalLinkage, t.name + "_last_report", module);
        b.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", last_report));
        llvm::Value *fn = b.CreateLoad(i8p, b.CreateGEP(i8p, as(report_table, i8pp), b.CreateLoad(i64, last)));
        b.CreateRet(b.CreateCall(llvm::FunctionType::get(i8p, {}, false), b.CreatePointerCast(fn, llvm::FunctionType::get(i8p, {}, false)->getPointerTo())));
    }

    std::unique_ptr<llvm::TargetMachine> machine = internal::make_target_machine(target, options);
    module.setDataLayout(machine->createDataLayout());
    return internal::emit_object(module, *machine);
}

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("write_dispatch_library: cannot read the kernel library '" + path + "'");
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

} // namespace

std::string dispatch_extent_text(const DispatchTable &table, const DispatchArgument &argument, size_t dim) {
    if (argument.param[dim] < 0) return std::to_string(argument.extent[dim]);
    const int64_t scale = argument.scale_of(dim), offset = argument.offset_of(dim);
    const size_t p = size_t(argument.param[dim]);
    std::string text = (scale != 1 ? std::to_string(scale) + "*" : "") + (p < table.params.size() ? table.params[p].name : "?");
    if (offset != 0) text += (offset < 0 ? " - " : " + ") + std::to_string(offset < 0 ? -offset : offset);
    return text;
}

std::string dispatch_c_header(const DispatchTable &t) {
    std::string upper;
    for (char c : t.name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::ostringstream h;
    h << "/* " << t.name << ".h: a shape-dispatching kernel library generated by Tessera. Do not edit. */\n"
      << "#ifndef TESSERA_KERNEL_" << upper << "_H\n#define TESSERA_KERNEL_" << upper << "_H\n\n";
    if (t.chip) h << "#include \"tessera/chiprt.h\" /* the buffer ABI, error codes and tessera_chip_report_t */\n";
    else h << std::string(reinterpret_cast<const char *>(internal::embedded_buffer_abi_h), internal::embedded_buffer_abi_h_size);
    h << "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
    h << "/* " << t.name << ": " << t.description << ", for every shape in\n *  ";
    for (size_t p = 0; p < t.params.size(); ++p) h << (p ? ", " : " ") << t.params[p].name << " = " << t.params[p].lo << ".." << t.params[p].hi;
    h << "\n * (the values are read from the buffers' extents: from the first argument carrying each, the\n"
      << " * others must agree). Arguments, in order:\n";
    for (const DispatchArgument &a : t.arguments) {
        h << " *   " << a.name << ": " << (a.is_output ? "output" : "input") << " buffer, " << a.type.to_string() << " [";
        for (size_t d = 0; d < a.param.size(); ++d) h << (d ? ", " : "") << dispatch_extent_text(t, a, d);
        h << "]\n";
    }
    h << " * A call goes to the first kernel below whose bucket covers it (every value <= the\n"
      << " * kernel's). When the bucket is larger than the call, the buffers it enlarges are copied\n"
      << " * (inputs with zero padding) into the bucket's shape and the outputs cropped back: a copy per\n"
      << " * call, into buffers each thread keeps for its next call (the largest it needed so far).\n"
      << " * Kernels, in the order they are tried:\n";
    for (const DispatchBucket &k : t.buckets) {
        h << " *   " << k.kernel << ":";
        for (size_t p = 0; p < t.params.size(); ++p) h << " " << t.params[p].name << "=" << k.values[p];
        if (!k.note.empty()) h << " (" << k.note << ")";
        h << "\n";
    }
    h << " * Buffers must be dense row-major. Returns TESSERA_OK (0) or an error code without\n"
      << " * touching any output: TESSERA_ERROR_KIND(code) is TESSERA_ERROR_SHAPE when a value is\n"
      << " * outside its range, buffers disagree on it or a fixed extent differs; _NULL_BUFFER,\n"
      << " * _DIMENSIONS, _TYPE, _STRIDES for such a buffer (code >> 8 is the argument's position + 1);\n"
      << " * _OUT_OF_MEMORY when padding buffers cannot be allocated; otherwise the kernel's own code.\n"
      << " * " << t.name << "_error_message(code) describes the latest failure in words. Thread-safe."
      << (t.chip ? " Link with -ltessera_chiprt." : " Link with -lpthread -lm.") << " */\n";
    h << "int " << t.name << "(";
    for (size_t i = 0; i < t.arguments.size(); ++i)
        h << (i ? ", " : "") << (t.arguments[i].is_output ? "tessera_buffer_t *" : "const tessera_buffer_t *") << t.arguments[i].name;
    h << ");\n\n/* Words for a code " << t.name << " returned (never NULL). */\nconst char *" << t.name << "_error_message(int code);\n\n"
      << "/* The kernel a call with these values (";
    for (size_t p = 0; p < t.params.size(); ++p) h << (p ? ", " : "") << t.params[p].name;
    h << ", in this order) goes to, or NULL when one is\n * outside its range. */\nconst char *" << t.name << "_dispatch(const int64_t *values);\n\n";
    if (t.chip)
        h << "/* The simulated cost of the kernel this thread's latest call ran (the report of its latest\n"
          << " * successful run, at the bucket's shape; zeros before any). */\n"
          << "const tessera_chip_report_t *" << t.name << "_last_report(void);\n\n";
    h << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
    return h.str();
}

LibraryFiles write_dispatch_library(const DispatchTable &table, const std::string &dir, const CpuOptions &options) {
    namespace fs = std::filesystem;
    check_table(table);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("write_dispatch_library: cannot create directory '" + dir + "': " + ec.message());
    // Every member of the bucket libraries once: the runtimes they share are identical copies.
    std::vector<std::pair<std::string, std::string>> members = {
        {table.name + ".o", emit_dispatch_object(table, options)},
        {"tessera_dispatch.o", std::string(reinterpret_cast<const char *>(internal::embedded_dispatch_object), internal::embedded_dispatch_object_size)}};
    std::set<std::string> seen = {table.name + ".o", "tessera_dispatch.o"};
    std::vector<std::string> archives;
    for (const DispatchBucket &k : table.buckets) archives.push_back(read_file(k.library));
    for (size_t i = 0; i < archives.size(); ++i) {
        llvm::Error error = llvm::Error::success();
        llvm::object::Archive archive(llvm::MemoryBufferRef(archives[i], table.buckets[i].library), error);
        if (error) {
            llvm::consumeError(std::move(error));
            throw Error("write_dispatch_library: '" + table.buckets[i].library + "' is not an archive");
        }
        llvm::Error walk = llvm::Error::success();
        for (const llvm::object::Archive::Child &child : archive.children(walk)) {
            llvm::Expected<llvm::StringRef> name = child.getName();
            llvm::Expected<llvm::StringRef> data = child.getBuffer();
            if (!name || !data) {
                if (!name) llvm::consumeError(name.takeError());
                if (!data) llvm::consumeError(data.takeError());
                throw Error("write_dispatch_library: cannot read a member of '" + table.buckets[i].library + "'");
            }
            if (seen.insert(name->str()).second) members.emplace_back(name->str(), data->str());
        }
        if (walk) {
            llvm::consumeError(std::move(walk));
            throw Error("write_dispatch_library: cannot read '" + table.buckets[i].library + "'");
        }
    }
    std::vector<llvm::NewArchiveMember> archive_members;
    for (const auto &[name, bytes] : members) archive_members.emplace_back(llvm::MemoryBufferRef(bytes, name));
    LibraryFiles files;
    files.library = (fs::path(dir) / ("lib" + table.name + ".a")).string();
    files.header = (fs::path(dir) / (table.name + ".h")).string();
    if (llvm::Error e = llvm::writeArchive(files.library, archive_members, true, llvm::object::Archive::K_GNU, true, false)) {
        llvm::consumeError(std::move(e));
        throw Error("write_dispatch_library: cannot write '" + files.library + "'");
    }
    std::ofstream h(files.header, std::ios::trunc);
    h << dispatch_c_header(table);
    if (!h) throw Error("write_dispatch_library: cannot write '" + files.header + "'");
    files.schedule = "dispatch over " + std::to_string(table.buckets.size()) + " kernels";
    return files;
}

} // namespace tessera
