#pragma once
// tessera::onnx — reads an ONNX model into a Pipeline of tessera::ops Funcs (no second graph IR):
// the model's named inputs and outputs, and its constants (initializers and Constant nodes) as
// Inputs bound to their values. Lives in its own library, tessera_onnx, so that the DSL library
// does not link protobuf; this header includes neither ONNX nor protobuf.
//
//     onnx::Model m = onnx::import("resnet_block.onnx", {.dims = {{"batch", 4}}});
//     std::vector<Buffer<>> y = m.run({{"x", x}}, Target::host());
//
// ONNX's own checker and shape inference run first. Every refusal — a malformed or truncated
// file, an unsupported op or attribute, an unbound symbolic dimension, a missing input, a cycle,
// an initializer whose bytes do not match its shape, a tensor beyond tessera/limits.h — is a
// tessera::Error that names the file, the node (name and op_type), the attribute or input, and
// what is supported.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/func.h"
#include "tessera/graph_value.h"
#include "tessera/target.h"

namespace tessera::onnx {

/// What the caller decides at import time.
struct ImportOptions {
    /// Values of the model's symbolic dimensions (dim_param), e.g. {"batch", 4}. Every symbolic
    /// dimension of a graph input must be bound here.
    std::map<std::string, int64_t> dims;
    /// Graph inputs fixed to values at import, by name: they become constants, so an op that
    /// needs a value at import time (a Reshape's shape, a Slice's starts) may read them.
    std::map<std::string, Buffer<>> constant_inputs;
    /// Run the target-independent graph passes before conversion: BatchNorm folded into the
    /// conv before it, Transpose pairs and Reshape chains composed, common subexpressions and
    /// dead nodes removed. They keep every output's value (within fp32 rounding for the fold).
    bool optimize = true;
};

/// A tensor the model reads or writes.
struct ModelTensor {
    std::string name;           ///< the ONNX name
    Type type;
    std::vector<int64_t> shape; ///< ONNX's shape ([] for a scalar), symbolic dims bound
};

/// One ONNX node as imported, for reports (`tessera import`).
struct ModelNode {
    std::string name, op_type;
    std::vector<ModelTensor> outputs;
    /// Multiply-accumulates of the node (Conv, ConvTranspose, MatMul, Gemm, ...); 0 for others.
    int64_t macs = 0;
    /// How reports name it, as its graph values' labels do: "node 'fc1' (Gemm)".
    std::string label;
};

/// An imported model.
struct Model {
    /// One output Func per model output, in the model's order.
    Pipeline pipeline;
    /// The Inputs the caller binds, in the model's order (initializers and constant_inputs
    /// are not among them).
    std::vector<ModelTensor> inputs;
    std::vector<ModelTensor> outputs;
    /// The Input each of `inputs` is read through, in the same order.
    std::vector<Input> input_params;
    /// Constants: Inputs of the pipeline bound to their values on every run.
    std::vector<Binding> constants;
    std::vector<ModelNode> nodes;
    /// Every node output computed by a Func (and each output copy), producers first: where the
    /// graph compiler may place kernel boundaries (compile_model_for_chip).
    std::vector<GraphValue> values;
    /// The default domain's opset the model imports.
    int64_t opset = 0;
    /// Nodes of the file the graph passes removed or folded away (`nodes` lists those left).
    int64_t nodes_removed = 0;

    /// The realize shapes of the pipeline's outputs (a scalar output is realized as [1]).
    std::vector<std::vector<int64_t>> realize_shapes() const;
    /// Bindings for a run: the constants and `values` (by input name). Throws tessera::Error
    /// naming the input for a missing or unknown name or a wrong type or shape.
    Bindings bindings(const std::map<std::string, Buffer<>> &values) const;
    /// Runs the model on `target`, returning each output with its ONNX shape, in order.
    std::vector<Buffer<>> run(const std::map<std::string, Buffer<>> &values, const Target &target) const;
};

/// Imports the model in the file `path`.
Model import(const std::string &path, const ImportOptions &options = {});
/// Imports a serialised ModelProto; `origin` names it in messages.
Model import(const std::vector<uint8_t> &bytes, const ImportOptions &options = {}, const std::string &origin = "<bytes>");

/// Reads a serialised ONNX TensorProto (the backend tests' input_N.pb / output_N.pb) into a
/// buffer of its type and shape. Errors name the file.
Buffer<> read_tensor_file(const std::string &path);
/// The same from bytes.
Buffer<> parse_tensor(const std::vector<uint8_t> &bytes, const std::string &origin);
/// The ONNX name of a serialised TensorProto file (empty when it has none).
std::string tensor_file_name(const std::string &path);

} // namespace tessera::onnx
