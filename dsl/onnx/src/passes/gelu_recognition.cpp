// GELU as PyTorch exports nn.GELU(): y = (x · (erf(x / √2) + 1)) · 0.5, five nodes, recognised
// and replaced by one node ai.tessera::Gelu, converted to ops::gelu (one Func instead of five).
// Accepted spellings: Div by √2 or Mul by 1/√2; either operand order of Add and Mul; the 0.5
// applied to x first or last.
#include <cmath>
#include <map>
#include <optional>

#include "../onnx_internal.h"
#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

/// A scalar float constant (an initializer or a Constant node's value) named `name`.
std::optional<double> scalar(const ::onnx::GraphProto &graph, const std::map<std::string, int> &producer, const std::string &name) {
    const ::onnx::TensorProto *t = nullptr;
    for (const auto &init : graph.initializer())
        if (init.name() == name) t = &init;
    const auto p = producer.find(name);
    if (!t && p != producer.end() && graph.node(p->second).op_type() == "Constant")
        for (const auto &a : graph.node(p->second).attribute())
            if (a.name() == "value" && a.has_t()) t = &a.t();
    if (!t || t->data_type() != ::onnx::TensorProto::FLOAT) return std::nullopt;
    try {
        const Buffer<> b = tensor_to_buffer(*t, name);
        if (b.number_of_elements() != 1) return std::nullopt;
        return reshaped(b, {1}).get_as_double({0});
    } catch (const Error &) {
        return std::nullopt;
    }
}

bool near(std::optional<double> v, double expected) { return v && std::fabs(*v - expected) <= 1e-4 * std::fabs(expected); }

} // namespace

int recognise_gelu(::onnx::GraphProto &graph) {
    std::map<std::string, int> producer;
    for (int k = 0; k < graph.node_size(); ++k)
        for (const std::string &out : graph.node(k).output()) producer[out] = k;
    const std::map<std::string, int> uses = value_uses(graph);
    auto single_use = [&](const std::string &v) { return uses.count(v) && uses.at(v) == 1; };
    auto node_of = [&](const std::string &v, const char *op) -> const ::onnx::NodeProto * {
        const auto p = producer.find(v);
        if (p == producer.end()) return nullptr;
        const ::onnx::NodeProto &n = graph.node(p->second);
        return n.op_type() == op && n.domain().empty() ? &n : nullptr;
    };
    // The operand of a binary node that is not the constant `c`, if the other one is.
    auto other = [&](const ::onnx::NodeProto &n, double c) -> std::optional<std::string> {
        if (n.input_size() != 2) return std::nullopt;
        if (near(scalar(graph, producer, n.input(1)), c)) return n.input(0);
        if (near(scalar(graph, producer, n.input(0)), c)) return n.input(1);
        return std::nullopt;
    };
    std::vector<bool> drop(static_cast<size_t>(graph.node_size()), false);
    int replaced = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        ::onnx::NodeProto &last = *graph.mutable_node(k);
        if (last.op_type() != "Mul" || !last.domain().empty() || last.input_size() != 2) continue;
        // Form A: Mul(Mul(x, Add(Erf(x/√2), 1)), 0.5). Form B: Mul(Mul(x, 0.5), Add(...)).
        std::string x;
        std::vector<std::string> inner; // values the pattern consumes, each used once
        const ::onnx::NodeProto *add = nullptr;
        if (auto m = other(last, 0.5); m && node_of(*m, "Mul") && single_use(*m)) {
            const ::onnx::NodeProto &mul = *node_of(*m, "Mul");
            for (int side = 0; side < 2 && !add; ++side)
                if (const auto *a = node_of(mul.input(side), "Add"); a && single_use(mul.input(side))) {
                    add = a;
                    x = mul.input(1 - side);
                    inner = {*m, mul.input(side)};
                }
        } else {
            for (int side = 0; side < 2 && !add; ++side) {
                const ::onnx::NodeProto *half = node_of(last.input(side), "Mul");
                const ::onnx::NodeProto *a = node_of(last.input(1 - side), "Add");
                if (!half || !a || !single_use(last.input(side)) || !single_use(last.input(1 - side))) continue;
                if (auto hx = other(*half, 0.5)) {
                    add = a;
                    x = *hx;
                    inner = {last.input(side), last.input(1 - side)};
                }
            }
        }
        if (!add) continue;
        const auto e = other(*add, 1.0);
        const ::onnx::NodeProto *erf = e ? node_of(*e, "Erf") : nullptr;
        if (!erf || !single_use(*e)) continue;
        const ::onnx::NodeProto *scale = node_of(erf->input(0), "Div");
        std::optional<std::string> scaled;
        if (scale && near(scalar(graph, producer, scale->input(1)), std::sqrt(2.0))) scaled = scale->input(0);
        if (!scale && (scale = node_of(erf->input(0), "Mul"))) scaled = other(*scale, std::sqrt(0.5));
        if (!scaled || *scaled != x || !single_use(erf->input(0))) continue;
        inner.push_back(*e);
        inner.push_back(erf->input(0));
        for (const std::string &v : inner) drop[static_cast<size_t>(producer.at(v))] = true;
        const std::string y = last.output(0), name = last.name();
        last.Clear();
        last.set_op_type("Gelu");
        last.set_domain(kTesseraDomain);
        last.set_name(name.empty() ? y + "_gelu" : name);
        last.add_input(x);
        last.add_output(y);
        ++replaced;
    }
    ::onnx::GraphProto kept;
    for (int k = 0; k < graph.node_size(); ++k)
        if (!drop[static_cast<size_t>(k)]) *kept.add_node() = graph.node(k);
    graph.mutable_node()->Swap(kept.mutable_node());
    return replaced;
}

} // namespace tessera::onnx::internal
