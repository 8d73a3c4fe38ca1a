// libtessera_chiprt (chiprt.h): the C entry points over chip artifacts. Every exception stops
// here and becomes a code plus a thread-local message; nothing escapes into C.
#include "tessera/chiprt.h"

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "tessera/codegen/chip_artifact.h"
#include "tessera/error.h"

struct tessera_chip_kernel {
    tessera::ChipArtifact artifact;
    std::string manifest;
    int inputs = 0, outputs = 0;
    std::mutex report_mutex;
    tessera_chip_report_t last_report{};
};

namespace {

thread_local std::string t_message = "no error";
thread_local int t_code = TESSERA_OK;

int failure(int code, const std::string &message) {
    t_code = code;
    t_message = message;
    return code;
}

/// Runs `f`, turning exceptions into codes: a tessera::Error becomes `kind`.
template <typename F> int guarded(int kind, F &&f) {
    try {
        return f();
    } catch (const std::bad_alloc &) {
        return failure(TESSERA_ERROR_OUT_OF_MEMORY, "out of memory");
    } catch (const tessera::Error &e) {
        return failure(kind, e.what());
    } catch (const std::exception &e) {
        return failure(TESSERA_ERROR_RUNTIME, std::string("internal error: ") + e.what());
    } catch (...) {
        return failure(TESSERA_ERROR_RUNTIME, "internal error: an unknown exception");
    }
}

int load(const uint8_t *bytes, size_t size, const std::string &origin, const char *expected_target, tessera_chip_kernel_t **kernel) {
    if (!kernel) return failure(TESSERA_ERROR_ARGUMENT, "tessera_chip_load: the kernel pointer is NULL");
    *kernel = nullptr;
    if (!bytes && size) return failure(TESSERA_ERROR_ARGUMENT, "tessera_chip_load_memory: the bytes are NULL");
    return guarded(TESSERA_ERROR_ARTIFACT, [&] {
        auto k = std::make_unique<tessera_chip_kernel>();
        k->artifact = tessera::decode_chip_artifact(bytes, size, origin);
        const std::string &target = k->artifact.program.target.name;
        if (expected_target && target != expected_target)
            return failure(TESSERA_ERROR_TARGET, origin + ": the artifact is for target '" + target + "', not '" + expected_target +
                                                     "'; rebuild it for " + expected_target);
        k->manifest = tessera::chip_artifact_manifest(k->artifact);
        for (const auto &a : k->artifact.arguments) ++(a.is_output ? k->outputs : k->inputs);
        std::strncpy(k->last_report.target, target.c_str(), sizeof k->last_report.target - 1);
        *kernel = k.release();
        return TESSERA_OK;
    });
}

/// The code of a check on argument `index` (its kind in the low byte, the argument above it).
int argument_code(int kind, size_t index) { return kind | int(index + 1) << 8; }

int64_t element_bytes(const tessera::Type &t) { return (t.bits() + 7) / 8; }

/// Checks one caller buffer against the artifact's argument; TESSERA_OK or a failure.
int check_buffer(const tessera_chip_kernel_t *k, size_t index, const tessera_buffer_t *b) {
    const tessera::ChipArtifactArgument &arg = k->artifact.arguments[index];
    const std::string who = k->artifact.name + ": " + (arg.is_output ? "output " : "input ") + arg.name;
    if (!b || !b->data || (!b->shape && b->dimensions > 0))
        return failure(argument_code(TESSERA_ERROR_NULL_BUFFER, index), who + ": the buffer, its data or its shape is NULL");
    if (b->type_code != uint8_t(arg.type.code()) || b->type_bits != arg.type.bits())
        return failure(argument_code(TESSERA_ERROR_TYPE, index), who + ": expects " + arg.type.to_string() + " elements (type_code " +
                                                                    std::to_string(int(arg.type.code())) + ", type_bits " + std::to_string(arg.type.bits()) +
                                                                    "), got type_code " + std::to_string(b->type_code) + ", type_bits " + std::to_string(b->type_bits));
    if (b->dimensions != int32_t(arg.shape.size()))
        return failure(argument_code(TESSERA_ERROR_DIMENSIONS, index),
                       who + ": expects " + std::to_string(arg.shape.size()) + " dimensions, got " + std::to_string(b->dimensions));
    auto shape_text = [](const int64_t *s, size_t n) {
        std::string t = "[";
        for (size_t d = 0; d < n; ++d) t += (d ? ", " : "") + std::to_string(s[d]);
        return t + "]";
    };
    for (size_t d = 0; d < arg.shape.size(); ++d)
        if (b->shape[d] != arg.shape[d])
            return failure(argument_code(TESSERA_ERROR_SHAPE, index), who + ": expects shape " + shape_text(arg.shape.data(), arg.shape.size()) +
                                                                         ", got " + shape_text(b->shape, arg.shape.size()));
    if (b->strides) {
        int64_t expected = 1;
        for (int d = int(arg.shape.size()) - 1; d >= 0; --d) {
            if (arg.shape[size_t(d)] != 1 && b->strides[d] != expected)
                return failure(argument_code(TESSERA_ERROR_STRIDES, index), who + ": the buffer is not dense row-major (dimension " +
                                                                               std::to_string(d) + " has stride " + std::to_string(b->strides[d]) +
                                                                               ", expected " + std::to_string(expected) + ")");
            expected *= arg.shape[size_t(d)];
        }
    }
    return TESSERA_OK;
}

int64_t byte_size(const tessera::ChipArtifactArgument &arg) {
    int64_t n = element_bytes(arg.type);
    for (int64_t e : arg.shape) n *= e;
    return n;
}

int run(tessera_chip_kernel_t *k, const tessera_buffer_t *const *inputs, tessera_buffer_t *const *outputs, tessera_chip_report_t *report) {
    if (!k) return failure(TESSERA_ERROR_ARGUMENT, "tessera_chip_run: the kernel is NULL; load one with tessera_chip_load");
    if ((k->inputs && !inputs) || !outputs) return failure(TESSERA_ERROR_NULL_BUFFER, "tessera_chip_run: the inputs or outputs array is NULL");
    const auto &args = k->artifact.arguments;
    std::vector<const tessera_buffer_t *> buffers;
    for (size_t i = 0; i < args.size(); ++i) {
        const tessera_buffer_t *b = args[i].is_output ? outputs[i - size_t(k->inputs)] : inputs[i];
        if (int code = check_buffer(k, i, b)) return code;
        buffers.push_back(b);
    }
    for (size_t o = size_t(k->inputs); o < args.size(); ++o)
        for (size_t i = 0; i < args.size(); ++i) {
            if (i == o) continue;
            const char *a = static_cast<const char *>(buffers[o]->data), *b = static_cast<const char *>(buffers[i]->data);
            if (a < b + byte_size(args[i]) && b < a + byte_size(args[o]))
                return failure(argument_code(TESSERA_ERROR_ALIASING, o),
                               k->artifact.name + ": output " + args[o].name + " overlaps " + args[i].name + "; pass separate buffers");
        }
    return guarded(TESSERA_ERROR_RUNTIME, [&] {
        tessera::Bindings bindings;
        for (size_t i = 0; i < size_t(k->inputs); ++i) {
            tessera::Buffer<> copy(args[i].type, args[i].shape);
            std::memcpy(copy.data(), buffers[i]->data, size_t(byte_size(args[i])));
            std::vector<tessera::Expr> shape;
            for (int64_t e : args[i].shape) shape.emplace_back(static_cast<int>(e));
            bindings.emplace_back(tessera::Input(args[i].type, shape, args[i].name), copy);
        }
        tessera::ChipResult r = tessera::run_on_chip(k->artifact.program, bindings);
        for (size_t o = 0; o < r.outputs.size(); ++o) {
            const size_t arg = size_t(k->inputs) + o;
            std::memcpy(buffers[arg]->data, r.outputs[o].data(), size_t(byte_size(args[arg])));
        }
        tessera_chip_report_t rep{};
        rep.cycles = r.report.cycles;
        rep.host_io_cycles = r.report.host_io_cycles;
        rep.macs = r.report.macs;
        rep.utilisation = r.report.mxm_utilization;
        rep.problem_bound_cycles = r.report.problem_bound_cycles;
        std::strncpy(rep.target, k->artifact.program.target.name.c_str(), sizeof rep.target - 1);
        {
            std::lock_guard<std::mutex> lock(k->report_mutex);
            k->last_report = rep;
        }
        if (report) *report = rep;
        return TESSERA_OK;
    });
}

} // namespace

extern "C" {

int tessera_chip_load(const char *path, const char *expected_target, tessera_chip_kernel_t **kernel) {
    if (!path) return failure(TESSERA_ERROR_ARGUMENT, "tessera_chip_load: the path is NULL");
    std::ifstream f(path, std::ios::binary);
    if (!f) return failure(TESSERA_ERROR_IO, std::string("tessera_chip_load: cannot open '") + path + "'");
    std::vector<uint8_t> bytes;
    try {
        bytes.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    } catch (const std::exception &) {
        return failure(TESSERA_ERROR_IO, std::string("tessera_chip_load: cannot read '") + path + "'");
    }
    return load(bytes.data(), bytes.size(), path, expected_target, kernel);
}

int tessera_chip_load_memory(const void *bytes, size_t size, const char *expected_target, tessera_chip_kernel_t **kernel) {
    return load(static_cast<const uint8_t *>(bytes), size, "<chip artifact in memory>", expected_target, kernel);
}

void tessera_chip_free(tessera_chip_kernel_t *kernel) { delete kernel; }

const char *tessera_chip_name(const tessera_chip_kernel_t *k) { return k ? k->artifact.name.c_str() : nullptr; }
const char *tessera_chip_target(const tessera_chip_kernel_t *k) { return k ? k->artifact.program.target.name.c_str() : nullptr; }
const char *tessera_chip_manifest(const tessera_chip_kernel_t *k) { return k ? k->manifest.c_str() : nullptr; }
int tessera_chip_num_inputs(const tessera_chip_kernel_t *k) { return k ? k->inputs : -1; }
int tessera_chip_num_outputs(const tessera_chip_kernel_t *k) { return k ? k->outputs : -1; }

int tessera_chip_run(tessera_chip_kernel_t *kernel, const tessera_buffer_t *const *inputs, tessera_buffer_t *const *outputs,
                     tessera_chip_report_t *report) {
    return run(kernel, inputs, outputs, report);
}

const char *tessera_chip_last_error(void) { return t_message.c_str(); }

const char *tessera_chip_error_message(int code) {
    if (code == t_code) return t_message.c_str();
    switch (TESSERA_ERROR_KIND(code)) {
    case TESSERA_OK: return "success";
    case TESSERA_ERROR_NULL_BUFFER: return "a buffer pointer or its data/shape pointer is NULL";
    case TESSERA_ERROR_TYPE: return "a buffer's element type differs from the compiled one";
    case TESSERA_ERROR_DIMENSIONS: return "a buffer's number of dimensions differs from the compiled one";
    case TESSERA_ERROR_SHAPE: return "a buffer's extent differs from the compiled one";
    case TESSERA_ERROR_STRIDES: return "a buffer is not dense row-major";
    case TESSERA_ERROR_ALIASING: return "an output overlaps another argument";
    case TESSERA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case TESSERA_ERROR_ARTIFACT: return "the chip artifact is not valid";
    case TESSERA_ERROR_TARGET: return "the chip artifact is for another target";
    case TESSERA_ERROR_IO: return "the chip artifact cannot be read";
    case TESSERA_ERROR_RUNTIME: return "the chip simulator failed";
    case TESSERA_ERROR_ARGUMENT: return "a NULL kernel or pointer argument";
    }
    return "unknown error code";
}

int tessera_chip_library_call(const void *bytes, uint64_t size, const char *expected_target, void **slot, void **args) {
    if (!slot || !args) return failure(TESSERA_ERROR_ARGUMENT, "tessera_chip_library_call: NULL slot or arguments");
    std::atomic_ref<void *> ref(*slot);
    auto *k = static_cast<tessera_chip_kernel_t *>(ref.load(std::memory_order_acquire));
    if (!k) {
        tessera_chip_kernel_t *fresh = nullptr;
        if (int code = tessera_chip_load_memory(bytes, size_t(size), expected_target, &fresh)) return code;
        void *expected = nullptr;
        if (ref.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) k = fresh;
        else {
            tessera_chip_free(fresh); // another thread loaded it first
            k = static_cast<tessera_chip_kernel_t *>(expected);
        }
    }
    auto *const *buffers = reinterpret_cast<tessera_buffer_t *const *>(args);
    return run(k, buffers, buffers + k->inputs, nullptr);
}

const tessera_chip_report_t *tessera_chip_library_report(void **slot) {
    static const tessera_chip_report_t none{};
    if (!slot) return &none;
    auto *k = static_cast<tessera_chip_kernel_t *>(std::atomic_ref<void *>(*slot).load(std::memory_order_acquire));
    if (!k) return &none;
    thread_local tessera_chip_report_t copy;
    std::lock_guard<std::mutex> lock(k->report_mutex);
    copy = k->last_report;
    return &copy;
}

} // extern "C"
