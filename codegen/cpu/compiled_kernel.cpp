// CompiledKernel: calling loaded host code through the C ABI of buffer_abi.h.
#include "tessera/codegen/compiled_kernel.h"

#include <cstring>

#include "compiled_kernel_state.h"
#include "tessera/codegen/buffer_abi.h"
#include "tessera/half.h"

namespace tessera {

CompiledKernel::CompiledKernel(std::shared_ptr<const internal::CompiledKernelState> state) : state_(std::move(state)) {}

static const internal::CompiledKernelState &require(const std::shared_ptr<const internal::CompiledKernelState> &s) {
    if (!s) throw Error("CompiledKernel: this kernel is empty (default-constructed); get one from compile_jit()");
    return *s;
}

const std::string &CompiledKernel::name() const { return require(state_).name; }
const std::vector<KernelArgument> &CompiledKernel::arguments() const { return require(state_).arguments; }
double CompiledKernel::compile_ms() const { return require(state_).compile_ms; }
const std::string &CompiledKernel::cpu() const { return require(state_).cpu; }
const std::string &CompiledKernel::features() const { return require(state_).features; }
const std::string &CompiledKernel::llvm_ir() const { return require(state_).llvm_ir; }
const std::string &CompiledKernel::assembly() const { return require(state_).assembly; }

int CompiledKernel::call_argv(void **args) const { return require(state_).argv_entry(args); }

namespace {

/// A scalar argument's bytes, in the storage type the kernel reads it as.
void encode_scalar(Type t, const KernelValue &v, uint64_t *slot) {
    *slot = 0;
    auto put = [&](const auto &x) { std::memcpy(slot, &x, sizeof x); };
    switch (t.code()) {
    case TypeCode::Bool: put(static_cast<uint8_t>(v.int_value != 0)); break;
    case TypeCode::Int:
    case TypeCode::UInt:
        // Little-endian: the low bytes of the 64-bit value are the narrower integer.
        put(v.int_value);
        break;
    case TypeCode::BFloat: put(bfloat16(v.float_value).bits); break;
    case TypeCode::Float:
        if (t.bits() == 16) put(float16(v.float_value).bits);
        else if (t.bits() == 32) put(static_cast<float>(v.float_value));
        else put(v.float_value);
        break;
    }
}

} // namespace

int CompiledKernel::call(const std::vector<KernelValue> &values) const {
    const internal::CompiledKernelState &s = require(state_);
    if (values.size() != s.arguments.size())
        throw Error("kernel '" + s.name + "': called with " + std::to_string(values.size()) + " values for " +
                    std::to_string(s.arguments.size()) + " arguments");
    std::vector<tessera_buffer_t> buffers(values.size());
    std::vector<uint64_t> scalars(values.size());
    std::vector<void *> args(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
        const KernelArgument &a = s.arguments[i];
        const KernelValue &v = values[i];
        if (a.is_buffer() != !v.is_scalar)
            throw Error("kernel '" + s.name + "': argument '" + a.name + "' is a " + (a.is_buffer() ? "buffer" : "scalar") +
                        " but was given a " + (v.is_scalar ? "scalar" : "buffer"));
        if (v.is_scalar) {
            encode_scalar(a.type, v, &scalars[i]);
            args[i] = &scalars[i];
            continue;
        }
        if (!v.buffer.defined()) {
            args[i] = nullptr; // the kernel reports a null buffer
            continue;
        }
        tessera_buffer_t &b = buffers[i];
        b.data = v.buffer.data();
        b.shape = v.buffer.shape().data();
        b.strides = v.buffer.strides().empty() ? nullptr : v.buffer.strides().data();
        b.dimensions = v.buffer.dimensions();
        b.type_code = static_cast<uint8_t>(v.buffer.type().code());
        b.type_bits = static_cast<uint8_t>(v.buffer.type().bits());
        b.reserved = 0;
        args[i] = &b;
    }
    return s.argv_entry(args.data());
}

void CompiledKernel::run(const std::vector<KernelValue> &values) const {
    int code = call(values);
    if (code != 0) throw Error(error_message(code));
}

std::string CompiledKernel::error_message(int code) const {
    const internal::CompiledKernelState &s = require(state_);
    return s.message_entry(code);
}

} // namespace tessera
