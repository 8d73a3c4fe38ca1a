#pragma once
// The importer's view of one ONNX node while it is turned into ops: its operands (as
// ops::Tensors, with their constant values when known at import), its attributes, and the
// messages every refusal uses. Private to tessera_onnx.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "tessera/buffer.h"
#include "tessera/ops.h"

namespace tessera::onnx::internal {

/// A value of the graph: the tensor that computes it, its ONNX rank-0-ness (a scalar is a
/// [1] tensor here, since a Func has at least one dimension), and its contents when it is a
/// constant.
struct Value {
    ops::Tensor tensor;
    bool scalar = false;
    std::optional<Buffer<>> constant;
};

/// One node being converted.
class NodeContext {
public:
    NodeContext(const ::onnx::NodeProto &node, int64_t opset, std::vector<std::optional<Value>> inputs,
                std::string func_prefix);

    const ::onnx::NodeProto &node() const { return node_; }
    int64_t opset() const { return opset_; }
    /// "node 'conv1' (Conv)".
    std::string where() const;
    /// Throws tessera::Error("<where>: <message>").
    [[noreturn]] void fail(const std::string &message) const;

    /// Refuses any attribute not in `supported`, naming it and listing the supported ones.
    void allow_attributes(const std::set<std::string> &supported) const;
    bool has_attribute(const std::string &name) const;
    int64_t attr_int(const std::string &name, int64_t fallback) const;
    double attr_float(const std::string &name, double fallback) const;
    std::string attr_string(const std::string &name, const std::string &fallback) const;
    std::vector<int64_t> attr_ints(const std::string &name, const std::vector<int64_t> &fallback = {}) const;
    /// The tensor attribute `name` (Constant's value); fails when absent.
    Buffer<> attr_tensor(const std::string &name) const;

    int input_count() const { return static_cast<int>(inputs_.size()); }
    /// Whether input i is given (present and not the empty name).
    bool has_input(int i) const;
    /// Input i; fails naming it when absent.
    const Value &input(int i) const;
    const ops::Tensor &tensor(int i) const { return input(i).tensor; }
    /// Input i's contents, which must be known at import (an initializer, a Constant node or a
    /// constant_input); fails naming the input otherwise.
    const Buffer<> &constant(int i) const;
    /// A constant input as integers (shapes, axes, pads).
    std::vector<int64_t> constant_ints(int i) const;
    /// A constant scalar input as a double.
    double constant_scalar(int i) const;
    /// Requires between lo and hi inputs and exactly `outputs` outputs (beyond that only
    /// empty names).
    void require_arity(int lo, int hi, int outputs) const;

    /// A unique Func name for output `i` of this node ("<prefix><output name>", sanitised).
    std::string func_name(int output = 0) const;

    /// Multiply-accumulates of the node, set by its converter.
    int64_t macs = 0;

    /// Makes `contents`, computed by a converter at import from constant inputs (an LSTM's
    /// weights with their gate blocks reordered), a constant of the model: an Input bound at
    /// run time, like an initializer.
    using ConstantSink = std::function<ops::Tensor(const std::string &name, Buffer<> contents)>;
    void set_constant_sink(ConstantSink sink) { constant_sink_ = std::move(sink); }
    /// Whether add_constant may be called (the importer sets a sink; without one a converter
    /// computes the tensor in the graph instead).
    bool can_add_constants() const { return bool(constant_sink_); }
    ops::Tensor add_constant(const std::string &name, Buffer<> contents) const { return constant_sink_(name, std::move(contents)); }

private:
    const ::onnx::AttributeProto *attribute(const std::string &name, int type) const;

    const ::onnx::NodeProto &node_;
    int64_t opset_;
    std::vector<std::optional<Value>> inputs_;
    std::string func_prefix_;
    ConstantSink constant_sink_;
};

/// Converts one node to its output values (one per ONNX output, in order). Unknown op types
/// fail listing the supported ones.
std::vector<Value> convert_node(NodeContext &ctx);

/// The op types convert_node supports, for messages and --help.
const std::vector<std::string> &supported_op_types();

} // namespace tessera::onnx::internal
