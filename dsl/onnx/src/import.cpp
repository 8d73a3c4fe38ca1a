// tessera::onnx::import: parse, ONNX's checker, one converter per node (convert_node.cpp) in the
// graph's order into a Pipeline of tessera::ops Funcs, then ONNX's shape inference must agree.
#include <cctype>
#include <fstream>
#include <iterator>
#include <set>

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "constant_folding.h"
#include "node_context.h"
#include "passes/graph_passes.h"
#include "onnx_internal.h"
#include "tessera/error.h"
#include "tessera/limits.h"
#include "tessera/onnx.h"

namespace tessera::onnx {

namespace {

using internal::Value;

/// The oldest and newest opsets of the default domain the converters follow.
constexpr int64_t kMinOpset = 1, kMaxOpset = 17;

/// How reports and errors name a node: "node 'fc1' (Gemm)", or by position when it has no name.
std::string node_label(const ::onnx::NodeProto &node, int index) {
    return "node " + (node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'") + " (" + node.op_type() + ")";
}

std::string sanitize(const std::string &s) {
    std::string out = s;
    for (char &c : out)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return out;
}

/// The bound shape of a graph input's type; symbolic dimensions come from `dims`.
std::vector<int64_t> bound_shape(::onnx::ValueInfoProto &info, const std::map<std::string, int64_t> &dims,
                                 const std::string &origin) {
    const std::string where = origin + ": graph input '" + info.name() + "'";
    if (!info.type().has_tensor_type()) throw Error(where + " is not a tensor; only tensor inputs are supported");
    auto *tensor_type = info.mutable_type()->mutable_tensor_type();
    if (!tensor_type->has_shape()) throw Error(where + " has no shape; every model input needs one");
    std::vector<int64_t> shape;
    for (int d = 0; d < tensor_type->shape().dim_size(); ++d) {
        auto *dim = tensor_type->mutable_shape()->mutable_dim(d);
        if (dim->has_dim_value()) {
            shape.push_back(dim->dim_value());
            continue;
        }
        const std::string symbol = dim->has_dim_param() ? dim->dim_param() : "";
        const auto it = symbol.empty() ? dims.end() : dims.find(symbol);
        if (it == dims.end())
            throw Error(where + " dimension " + std::to_string(d) +
                        (symbol.empty() ? " is unknown (no value, no name)" : " is the symbol '" + symbol + "'") +
                        ", unbound; bind it with --dim " + (symbol.empty() ? "NAME" : symbol) + "=N (ImportOptions::dims)");
        if (it->second < 1 || it->second > limits::kMaxExtent)
            throw Error(origin + ": dimension '" + symbol + "' is bound to " + std::to_string(it->second) + "; supported: 1 .. " +
                        std::to_string(limits::kMaxExtent));
        dim->set_dim_value(it->second);
        shape.push_back(it->second);
    }
    return shape;
}

/// ONNX's shape of a value ([] for a scalar).
std::vector<int64_t> onnx_shape(const Value &v) { return v.scalar ? std::vector<int64_t>{} : v.tensor.concrete_shape(); }

/// The fully known shapes ONNX's inference gave each value, by name.
std::map<std::string, std::vector<int64_t>> inferred_shapes(const ::onnx::GraphProto &g) {
    std::map<std::string, std::vector<int64_t>> shapes;
    auto add = [&](const ::onnx::ValueInfoProto &info) {
        if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) return;
        std::vector<int64_t> s;
        for (const auto &d : info.type().tensor_type().shape().dim()) {
            if (!d.has_dim_value()) return;
            s.push_back(d.dim_value());
        }
        shapes[info.name()] = s;
    };
    for (const auto &v : g.value_info()) add(v);
    for (const auto &v : g.output()) add(v);
    return shapes;
}

using internal::shape_text;

Model import_model(::onnx::ModelProto &model, const ImportOptions &options, const std::string &origin) {
    // The opset of the default domain decides each op's attributes and inputs.
    int64_t opset = -1;
    for (const auto &o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (opset < kMinOpset || opset > kMaxOpset)
        throw Error(origin + ": the model imports opset " + (opset < 0 ? std::string("(none)") : std::to_string(opset)) +
                    " of the default ONNX domain; supported: " + std::to_string(kMinOpset) + " .. " + std::to_string(kMaxOpset));
    ::onnx::GraphProto &graph = *model.mutable_graph();

    std::set<std::string> initializer_names;
    for (const auto &t : graph.initializer()) initializer_names.insert(t.name());
    for (const auto &[name, buffer] : options.constant_inputs) {
        bool found = false;
        for (const auto &in : graph.input()) found = found || in.name() == name;
        if (!found) throw Error(origin + ": constant input '" + name + "' is not an input of the model");
    }

    Model m;
    m.opset = opset;
    std::map<std::string, Value> values;
    auto add_constant = [&](const std::string &name, Buffer<> contents, bool scalar) {
        if (scalar) contents = internal::reshaped(contents, {1});
        // An empty constant (no axes, no pads) is only ever read at import, never computed with.
        if (contents.number_of_elements() == 0) return Value{ops::Tensor(), scalar, contents};
        std::vector<Expr> shape;
        for (int64_t e : contents.shape()) shape.push_back(Expr(static_cast<int>(e)));
        Input input(contents.type(), shape, "c" + std::to_string(m.constants.size()) + "_" + sanitize(name));
        m.constants.emplace_back(input, contents);
        return Value{ops::Tensor(input), scalar, contents};
    };

    // Graph inputs: bind symbolic dimensions, then check and infer the whole model.
    std::map<std::string, std::vector<int64_t>> input_shapes;
    for (auto &in : *graph.mutable_input()) {
        if (initializer_names.count(in.name()) || options.constant_inputs.count(in.name())) continue;
        input_shapes[in.name()] = bound_shape(in, options.dims, origin);
    }
    try {
        ::onnx::checker::check_model(model);
    } catch (const std::exception &e) {
        throw Error(origin + ": ONNX's checker refuses the model: " + e.what());
    }
    if (options.optimize) {
        const int before = graph.node_size();
        internal::fold_batchnorm_into_conv(graph);
        if (internal::recognise_gelu(graph) > 0) { // ONNX's inference skips ops of a domain it has no schemas for
            auto *tessera_ops = model.add_opset_import();
            tessera_ops->set_domain(internal::kTesseraDomain);
            tessera_ops->set_version(1);
        }
        internal::fuse_qdq_into_integer_kernels(graph);
        internal::fold_transposes_and_reshapes(graph);
        internal::eliminate_common_subexpressions(graph);
        internal::eliminate_dead_nodes(graph);
        m.nodes_removed = before - graph.node_size();
        graph.clear_value_info(); // shapes of values that may be gone; inference recomputes them
    }
    const std::map<std::string, int> uses = internal::value_uses(graph);

    for (const auto &t : graph.initializer()) {
        if (!uses.count(t.name())) continue; // read by no node (or only by nodes a pass removed)
        Buffer<> b = internal::tensor_to_buffer(t, origin + ": initializer '" + t.name() + "'");
        values[t.name()] = add_constant(t.name(), b, b.dimensions() == 0);
    }
    for (const auto &in : graph.input()) {
        if (initializer_names.count(in.name())) continue;
        const std::optional<Type> type = internal::element_type(in.type().tensor_type().elem_type());
        if (!type)
            throw Error(origin + ": graph input '" + in.name() + "' has the element type " +
                        internal::data_type_name(in.type().tensor_type().elem_type()) +
                        "; supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8..INT64, UINT8..UINT64, BOOL");
        const auto fixed = options.constant_inputs.find(in.name());
        if (fixed != options.constant_inputs.end()) {
            if (fixed->second.type() != *type)
                throw Error(origin + ": constant input '" + in.name() + "' is " + fixed->second.type().to_string() + "; the model declares " + type->to_string());
            values[in.name()] = add_constant(in.name(), fixed->second, fixed->second.dimensions() == 0);
            continue;
        }
        const std::vector<int64_t> &shape = input_shapes.at(in.name());
        std::string problem;
        if (!limits::tensor_size(shape, type->bytes(), &problem))
            throw Error(origin + ": graph input '" + in.name() + "' " + shape_text(shape) + ": " + problem);
        std::vector<Expr> extents;
        for (int64_t e : shape) extents.push_back(Expr(static_cast<int>(e)));
        if (extents.empty()) extents.push_back(Expr(1));
        Input input(*type, extents, "in_" + sanitize(in.name()));
        values[in.name()] = Value{ops::Tensor(input), shape.empty(), std::nullopt};
        m.inputs.push_back(ModelTensor{in.name(), *type, shape});
        m.input_params.push_back(input);
    }

    for (int k = 0; k < graph.node_size(); ++k) {
        const ::onnx::NodeProto &node = graph.node(k);
        std::vector<std::optional<Value>> inputs;
        for (const std::string &name : node.input()) {
            if (name.empty()) {
                inputs.emplace_back();
                continue;
            }
            const auto it = values.find(name);
            if (it == values.end())
                throw Error(origin + ": node " + (node.name().empty() ? "#" + std::to_string(k) : "'" + node.name() + "'") + " (" +
                            node.op_type() + "): input '" + name +
                            "' is produced by no earlier node, initializer or graph input (a missing input or a cycle)");
            inputs.emplace_back(it->second);
        }
        internal::NodeContext ctx(node, opset, inputs, "n" + std::to_string(k) + "_");
        ctx.set_constant_sink([&](const std::string &name, Buffer<> contents) { return add_constant(name, std::move(contents), false).tensor; });
        std::vector<Value> outs;
        try {
            outs = internal::convert_node(ctx);
            if (options.optimize) internal::fold_constants(inputs, outs, m.constants);
        } catch (const Error &e) {
            throw Error(origin + ": " + e.what()); // the node is named; say which file too
        }
        ModelNode info{node.name(), node.op_type(), {}, ctx.macs, node_label(node, k)};
        for (int o = 0; o < node.output_size() && o < static_cast<int>(outs.size()); ++o) {
            if (node.output(o).empty()) continue;
            Value v = outs[static_cast<size_t>(o)];
            if (v.constant && !v.tensor.defined()) v = add_constant(node.output(o), *v.constant, v.scalar);
            const std::vector<int64_t> shape = onnx_shape(v);
            info.outputs.push_back(ModelTensor{node.output(o), v.tensor.type(), shape});
            if (v.tensor.defined() && !v.tensor.is_input())
                m.values.push_back(GraphValue{v.tensor.func(), v.tensor.concrete_shape(), node_label(node, k)});
            values[node.output(o)] = v;
        }
        m.nodes.push_back(info);
    }

    // ONNX's shape inference, with the symbolic dimensions bound, must agree with every shape
    // the converters gave. It runs after them: ONNX 1.12's inference dereferences unchecked
    // ranks (a Conv whose input is not 4-D crashes convPoolShapeInference), which the
    // converters refuse with a clear message first.
    try {
        ::onnx::ShapeInferenceOptions inference{true, 1, false};
        ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), inference);
    } catch (const std::exception &e) {
        throw Error(origin + ": ONNX's shape inference refuses the model: " + e.what());
    }
    const std::map<std::string, std::vector<int64_t>> inferred = inferred_shapes(graph);
    for (const ModelNode &node : m.nodes)
        for (const ModelTensor &t : node.outputs) {
            const auto expected = inferred.find(t.name);
            if (expected != inferred.end() && expected->second != t.shape)
                throw Error(origin + ": node " + (node.name.empty() ? "producing '" + t.name + "'" : "'" + node.name + "'") + " (" +
                            node.op_type + "): output '" + t.name + "' has the shape " + shape_text(t.shape) + " here but ONNX infers " +
                            shape_text(expected->second) + " (an unsupported case of this op)");
        }

    std::vector<Func> outputs;
    std::set<std::string> used;
    for (const auto &out : graph.output()) {
        const auto it = values.find(out.name());
        if (it == values.end()) throw Error(origin + ": graph output '" + out.name() + "' is produced by no node");
        const Value &v = it->second;
        Func f = v.tensor.is_input() ? v.tensor.func() : Func(v.tensor);
        if (!used.insert(f.name()).second) f = ops::reshape(v.tensor, v.tensor.concrete_shape(), "out_" + sanitize(out.name())).func();
        if (v.tensor.is_input() || f.name() != v.tensor.name())
            m.values.push_back(GraphValue{f, v.tensor.concrete_shape(), "graph output '" + out.name() + "'"});
        outputs.push_back(f);
        m.outputs.push_back(ModelTensor{out.name(), v.tensor.type(), onnx_shape(v)});
    }
    if (outputs.empty()) throw Error(origin + ": the graph has no outputs");
    m.pipeline = Pipeline(outputs);
    return m;
}

} // namespace

Model import(const std::vector<uint8_t> &bytes, const ImportOptions &options, const std::string &origin) {
    ::onnx::ModelProto model;
    if (bytes.empty()) throw Error(origin + ": the file is empty; not an ONNX model");
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()))
        throw Error(origin + ": " + std::to_string(bytes.size()) + " bytes; models above 2 GiB (protobuf's limit) are not supported");
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw Error(origin + ": not an ONNX model (truncated or malformed protobuf)");
    return import_model(model, options, origin);
}

Model import(const std::string &path, const ImportOptions &options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open ONNX model '" + path + "'");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return import(bytes, options, path);
}

// ---- Model ------------------------------------------------------------------------------------

std::vector<std::vector<int64_t>> Model::realize_shapes() const {
    std::vector<std::vector<int64_t>> shapes;
    for (const ModelTensor &o : outputs) shapes.push_back(o.shape.empty() ? std::vector<int64_t>{1} : o.shape);
    return shapes;
}

Bindings Model::bindings(const std::map<std::string, Buffer<>> &values) const {
    Bindings b = constants;
    std::string names;
    for (const ModelTensor &in : inputs) names += (names.empty() ? "" : ", ") + in.name;
    for (const auto &[name, buffer] : values) {
        bool known = false;
        for (const ModelTensor &in : inputs) known = known || in.name == name;
        if (!known) throw Error("model input '" + name + "' does not exist; the model's inputs are " + (names.empty() ? "none" : names));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        const ModelTensor &in = inputs[i];
        const auto it = values.find(in.name);
        if (it == values.end()) throw Error("model input '" + in.name + "' is not given; the model's inputs are " + names);
        const Buffer<> &v = it->second;
        if (v.type() != in.type)
            throw Error("model input '" + in.name + "' is " + v.type().to_string() + "; the model declares " + in.type.to_string());
        const bool scalar_ok = in.shape.empty() && v.number_of_elements() == 1 && v.dimensions() <= 1;
        if (v.shape() != in.shape && !scalar_ok)
            throw Error("model input '" + in.name + "' has the shape " + shape_text(v.shape()) + "; the model declares " + shape_text(in.shape));
        b.emplace_back(input_params[i], in.shape.empty() ? internal::reshaped(v, {1}) : v);
    }
    return b;
}

std::vector<Buffer<>> Model::run(const std::map<std::string, Buffer<>> &values, const Target &target) const {
    std::vector<Buffer<>> out = pipeline.realize(realize_shapes(), bindings(values), target);
    for (size_t i = 0; i < out.size(); ++i)
        if (outputs[i].shape.empty()) out[i] = internal::reshaped(out[i], {});
    return out;
}

} // namespace tessera::onnx
