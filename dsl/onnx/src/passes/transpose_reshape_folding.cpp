// Transpose pairs and Reshape chains: the second of two reads the first's input directly.
#include <algorithm>
#include <map>
#include <optional>

#include "../onnx_internal.h"
#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

std::vector<int64_t> perm_of(const ::onnx::NodeProto &node) {
    for (const auto &a : node.attribute())
        if (a.name() == "perm") return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    return {};
}

/// The int64 initializer `name` as integers, if it is one.
std::optional<std::vector<int64_t>> constant_ints(const ::onnx::GraphProto &graph, const std::string &name) {
    for (const auto &t : graph.initializer()) {
        if (t.name() != name) continue;
        if (t.data_type() != ::onnx::TensorProto::INT64 || t.dims_size() != 1) return std::nullopt;
        try {
            const Buffer<> b = tensor_to_buffer(t, "initializer '" + name + "'");
            std::vector<int64_t> v;
            for (int64_t i = 0; i < b.number_of_elements(); ++i) v.push_back(b.get_as_int({i}));
            return v;
        } catch (const Error &) {
            return std::nullopt; // the converter reports a bad initializer by name
        }
    }
    return std::nullopt;
}

bool allows_zero(const ::onnx::NodeProto &node) {
    for (const auto &a : node.attribute())
        if (a.name() == "allowzero") return a.i() != 0;
    return false;
}

} // namespace

int fold_transposes_and_reshapes(::onnx::GraphProto &graph) {
    std::map<std::string, int> producer;
    int folded = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        ::onnx::NodeProto &node = *graph.mutable_node(k);
        const auto from = node.input_size() ? producer.find(node.input(0)) : producer.end();
        if (from != producer.end()) {
            const ::onnx::NodeProto &first = graph.node(from->second);
            if (node.op_type() == "Transpose" && first.op_type() == "Transpose" && node.domain().empty() && first.domain().empty()) {
                const std::vector<int64_t> a = perm_of(first), b = perm_of(node);
                bool valid = !a.empty() && a.size() == b.size();
                for (int64_t e : b) valid = valid && e >= 0 && e < static_cast<int64_t>(a.size());
                if (valid) { // out[d] = first_out[b[d]] = in[a[b[d]]]
                    std::vector<int64_t> composed;
                    bool identity = true;
                    for (size_t d = 0; d < b.size(); ++d) {
                        composed.push_back(a[static_cast<size_t>(b[d])]);
                        identity = identity && composed.back() == static_cast<int64_t>(d);
                    }
                    node.set_input(0, first.input(0));
                    node.clear_attribute();
                    if (identity) {
                        node.set_op_type("Identity");
                    } else {
                        auto *perm = node.add_attribute();
                        perm->set_name("perm");
                        perm->set_type(::onnx::AttributeProto::INTS);
                        for (int64_t e : composed) perm->add_ints(e);
                    }
                    ++folded;
                }
            } else if (node.op_type() == "Reshape" && first.op_type() == "Reshape" && node.domain().empty() &&
                       first.domain().empty() && node.input_size() == 2) {
                // The second shape alone decides the result unless it copies a dimension (0).
                const auto shape = constant_ints(graph, node.input(1));
                if (shape && (allows_zero(node) || std::find(shape->begin(), shape->end(), 0) == shape->end())) {
                    node.set_input(0, first.input(0));
                    ++folded;
                }
            }
        }
        for (const std::string &out : node.output()) producer[out] = k;
    }
    return folded;
}

} // namespace tessera::onnx::internal
