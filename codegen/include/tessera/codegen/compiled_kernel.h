#pragma once
// What the host code generator consumes (KernelSource: a flattened loop nest and its argument
// list) and what it produces (CompiledKernel: machine code you can call many times). Both are
// free of LLVM types; codegen/cpu keeps LLVM to itself.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/type.h"

namespace tessera {

/// One argument of a kernel, in call order.
struct KernelArgument {
    enum class Kind : uint8_t {
        Input,  ///< a buffer the kernel reads
        Output, ///< a buffer the kernel writes (it may also read it)
        Scalar, ///< a scalar Param passed by value
    };
    std::string name; ///< the buffer name that Loads/Stores use, or the Param's Variable name
    Kind kind = Kind::Input;
    Type type;        ///< element type of a buffer, or the scalar's type
    /// A buffer's extents, outermost first: Int(32) constants or Exprs of Scalar arguments.
    /// The kernel's prologue checks every buffer passed against them.
    std::vector<Expr> shape;

    bool is_buffer() const { return kind != Kind::Scalar; }
};

/// A flattened loop nest ready for code generation: Allocate/Store/Load over flat buffers and
/// For loops of every ForKind, reading and writing the buffers named by `arguments`.
struct KernelSource {
    std::string name; ///< a C identifier: the kernel's symbol
    std::vector<KernelArgument> arguments;
    Stmt body;
};

/// Choices of the host code generator. Results never change with these, except where a field
/// says so.
struct CpuOptions {
    /// Allow LLVM to reassociate floating-point arithmetic (fast-math `reassoc`), e.g. to
    /// vectorize a float sum over a serial loop. Changes rounding; off by default.
    bool reassociate = false;
    /// Contract a * b + c into a fused multiply-add where the CPU has one. Rounds once instead
    /// of twice (within the fp32 tolerance); on by default, as in Halide and C compilers.
    bool fma = true;
    /// LLVM optimization level, 0..3.
    int opt_level = 3;
    /// LLVM CPU name to generate code for; empty means the host's (see host_features()).
    std::string cpu;
    /// LLVM feature string such as "+avx2,+fma,-avx512f"; empty means the host's features.
    /// Restricting features lets one test the AVX2 or SSE code paths on a bigger machine.
    std::string features;
    /// Keep the optimized LLVM IR and the assembly text in the CompiledKernel (for reading).
    bool keep_listing = false;
};

namespace internal {
struct CompiledKernelState;
}

/// A scalar or buffer value for one kernel argument.
struct KernelValue {
    KernelValue(Buffer<> b) : buffer(std::move(b)) {}
    KernelValue(int v) : is_scalar(true), int_value(v), float_value(v) {}
    KernelValue(int64_t v) : is_scalar(true), int_value(v), float_value(static_cast<double>(v)) {}
    KernelValue(double v) : is_scalar(true), int_value(static_cast<int64_t>(v)), float_value(v) {}
    KernelValue(float v) : KernelValue(static_cast<double>(v)) {}
    Buffer<> buffer;
    bool is_scalar = false;
    int64_t int_value = 0;
    double float_value = 0;
};

/// Machine code for one kernel on the host, loaded and ready: call it as often as you like;
/// it never recompiles. Copies share the code. Thread-safe to call concurrently.
class CompiledKernel {
public:
    CompiledKernel() = default;
    explicit CompiledKernel(std::shared_ptr<const internal::CompiledKernelState> state);

    bool defined() const { return state_ != nullptr; }
    const std::string &name() const;
    const std::vector<KernelArgument> &arguments() const;
    /// Wall time spent generating, optimizing and loading the code, in milliseconds.
    double compile_ms() const;
    /// The CPU and feature string the code was generated for.
    const std::string &cpu() const;
    const std::string &features() const;
    /// The optimized LLVM IR and assembly, when CpuOptions::keep_listing was set (else empty).
    const std::string &llvm_ir() const;
    const std::string &assembly() const;

    /// Runs the kernel with one value per argument, in order. Returns 0, or the kernel's error
    /// code (see buffer_abi.h) when a buffer is undefined or has the wrong type or shape, or a
    /// temporary cannot be allocated; never crashes on such input. Throws tessera::Error only
    /// when the number of values or a scalar/buffer kind does not match the arguments.
    int call(const std::vector<KernelValue> &values) const;
    /// Runs the kernel with raw C ABI arguments: args[i] points to a tessera_buffer_t for a
    /// buffer argument and to the scalar's value (of its type) for a scalar argument.
    int call_argv(void **args) const;
    /// As call(), but throws tessera::Error naming the kernel and the failed check.
    void run(const std::vector<KernelValue> &values) const;
    /// Describes an error code returned by call().
    std::string error_message(int code) const;

private:
    std::shared_ptr<const internal::CompiledKernelState> state_;
};

} // namespace tessera
