// Dead-node elimination: walk back from the graph outputs; a node that nothing reached goes.
#include <set>

#include "graph_passes.h"

namespace tessera::onnx::internal {

std::map<std::string, int> value_uses(const ::onnx::GraphProto &graph) {
    std::map<std::string, int> uses;
    for (const auto &node : graph.node())
        for (const std::string &in : node.input())
            if (!in.empty()) ++uses[in];
    for (const auto &out : graph.output()) ++uses[out.name()];
    return uses;
}

int eliminate_dead_nodes(::onnx::GraphProto &graph) {
    std::set<std::string> live;
    for (const auto &out : graph.output()) live.insert(out.name());
    std::vector<bool> keep(static_cast<size_t>(graph.node_size()), false);
    // Nodes are in topological order, so one backward sweep sees every consumer first.
    for (int k = graph.node_size() - 1; k >= 0; --k) {
        const auto &node = graph.node(k);
        for (const std::string &out : node.output())
            if (live.count(out)) keep[static_cast<size_t>(k)] = true;
        if (keep[static_cast<size_t>(k)])
            for (const std::string &in : node.input()) live.insert(in);
    }
    ::onnx::GraphProto kept;
    int removed = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        if (keep[static_cast<size_t>(k)]) *kept.add_node() = graph.node(k);
        else ++removed;
    }
    graph.mutable_node()->Swap(kept.mutable_node());
    return removed;
}

} // namespace tessera::onnx::internal
