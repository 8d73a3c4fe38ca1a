#pragma once
// The operator registry: every op of tessera::ops by name, with its parameters (name, kind,
// default, meaning), built from `key=value` words into a pipeline with concrete shapes and
// random inputs. It is the one list the `tessera` CLI (run, lower, tune, sweep), the benchmarks
// and the tests walk, so a new op added here is at once runnable, documented in --help, and
// covered by the tests that iterate the registry.
//
//     ops::OpInstance mm = ops::build_op("matmul", {{"M", "512"}, {"dtype", "int8"}});
//     std::vector<Buffer<>> out = mm.pipeline.realize(mm.output_shapes, mm.random_inputs(1));
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/type.h"

namespace tessera::ops {

/// One parameter of a registered op.
struct OpParam {
    enum class Kind {
        Extent,  ///< a size >= 1 (at most max_extent())
        Count,   ///< an integer >= 0 (padding, a flag)
        Integer, ///< any integer in [min, max] (an axis)
        Real,    ///< a floating-point number
        Dtype,   ///< a dtype name: int8 uint8 int16 int32 bf16 fp16 fp32
        Choice,  ///< one of `choices`
    };
    std::string name;
    Kind kind = Kind::Extent;
    std::string default_value;
    std::string help;
    std::vector<std::string> choices; ///< Choice: the allowed words
    int64_t min = 0, max = 0;         ///< Integer: the allowed range
    /// "M=256 (rows of A and C)" as --help lists it.
    std::string describe() const;
};

/// The largest extent a parameter may give one dimension: shapes are Int(32) expressions.
int64_t max_extent();

/// One input of an op instance and how its random data is drawn.
struct OpInput {
    Input input;
    std::vector<int64_t> shape;
    /// Values drawn >= 0.5 (floats) or >= 1 (integers): a divisor, a variance, a square root's
    /// argument — so the op's meaning is defined everywhere and the results compare.
    bool positive = false;
};

/// An op built with concrete parameters: what running, lowering, tuning and checking it need.
struct OpInstance {
    std::string op;
    /// Every parameter as text, defaults filled in, keyed by name.
    std::map<std::string, std::string> params;
    /// Integer parameters by name (M, N, K, rows, ...), after validation.
    std::map<std::string, int64_t> sizes;
    /// The element type the op was asked for (its inputs'; an output may be wider).
    Type dtype;
    Pipeline pipeline;
    std::vector<OpInput> inputs;
    std::vector<std::vector<int64_t>> output_shapes;
    /// Useful arithmetic (2 per multiply-add), for GFLOP/s.
    double flops = 0;
    /// The longest chain of additions an output sums (K of a matmul, a row of a softmax): the
    /// float tolerance grows with it (Tolerance::for_type).
    int64_t reduction_length = 1;

    /// Every input bound to random data drawn from `seed` (input i from seed + i).
    Bindings random_inputs(uint64_t seed = 1) const;
    /// "matmul K=256 M=256 N=256 dtype=fp32".
    std::string description() const;
};

/// A registered op.
struct OpSpec {
    std::string name;
    std::string summary;
    std::vector<OpParam> params;
    /// Builds the op from validated parameters into `instance` (pipeline, inputs, shapes, flops).
    std::function<void(OpInstance &instance)> build;
};

/// Every op, in the order --help lists them.
const std::vector<OpSpec> &op_registry();

/// The op called `name`; throws tessera::Error listing the known ops otherwise.
const OpSpec &find_op(const std::string &name);

/// Builds op `name` from `params` (key -> value as text; absent keys take their defaults).
/// Throws tessera::Error naming the op and the parameter for an unknown op or key, a value that
/// is not of the parameter's kind or out of its range (naming the value and the limit), and for
/// whatever the op itself refuses (shapes that do not fit together).
OpInstance build_op(const std::string &name, const std::map<std::string, std::string> &params = {});

/// The same from `key=value` words, as the command line gives them.
OpInstance build_op_from_words(const std::string &name, const std::vector<std::string> &key_values);

} // namespace tessera::ops
