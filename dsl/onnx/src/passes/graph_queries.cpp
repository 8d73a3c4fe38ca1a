// Questions the passes ask of a graph before it is converted (declared in graph_passes.h).
#include "graph_passes.h"

namespace tessera::onnx::internal {

const ::onnx::TensorProto *constant_tensor(const ::onnx::GraphProto &graph, const std::string &name) {
    for (const auto &init : graph.initializer())
        if (init.name() == name) return &init;
    for (const auto &node : graph.node()) {
        if (node.op_type() != "Constant" || !node.domain().empty() || node.output_size() != 1 || node.output(0) != name) continue;
        for (const auto &a : node.attribute())
            if (a.name() == "value" && a.has_t()) return &a.t();
    }
    return nullptr;
}

} // namespace tessera::onnx::internal
