// Common subexpressions: a node equal to an earlier one (op type, domain, inputs, attributes)
// is dropped and its outputs renamed to the earlier node's everywhere after it.
#include <map>
#include <set>

#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

/// The node without its name and outputs, serialised: equal keys compute equal values.
std::string node_key(const ::onnx::NodeProto &node) {
    ::onnx::NodeProto n = node;
    n.clear_name();
    n.clear_output();
    n.clear_doc_string();
    std::string key;
    n.SerializeToString(&key);
    return key;
}

} // namespace

int eliminate_common_subexpressions(::onnx::GraphProto &graph) {
    std::set<std::string> graph_outputs;
    for (const auto &out : graph.output()) graph_outputs.insert(out.name());
    std::map<std::string, int> first;          // key -> index of the node kept
    std::map<std::string, std::string> rename; // dropped output -> kept output
    ::onnx::GraphProto kept;
    int removed = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        ::onnx::NodeProto node = graph.node(k);
        for (std::string &in : *node.mutable_input()) {
            const auto it = rename.find(in);
            if (it != rename.end()) in = it->second;
        }
        const std::string key = node_key(node);
        const auto same = first.find(key);
        bool outputs_are_graph_outputs = false;
        for (const std::string &out : node.output()) outputs_are_graph_outputs |= graph_outputs.count(out) > 0;
        if (same != first.end() && !outputs_are_graph_outputs) {
            const auto &earlier = kept.node(same->second);
            for (int o = 0; o < node.output_size() && o < earlier.output_size(); ++o) rename[node.output(o)] = earlier.output(o);
            ++removed;
            continue;
        }
        first.emplace(key, kept.node_size());
        *kept.add_node() = node;
    }
    graph.mutable_node()->Swap(kept.mutable_node());
    return removed;
}

} // namespace tessera::onnx::internal
