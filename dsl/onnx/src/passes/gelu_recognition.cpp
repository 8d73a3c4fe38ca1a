// GELU as PyTorch exports it, recognised and replaced by one node ai.tessera::Gelu, converted to
// ops::gelu (one Func instead of five to ten):
// - nn.GELU(): y = (x · (erf(x / √2) + 1)) · 0.5, five nodes; Div by √2 or Mul by 1/√2.
// - nn.GELU(approximate='tanh') and HF's gelu_new: y = 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 ·
//   x³))), eight or nine nodes, x³ as Pow(x, 3) or x · (x · x); the node gets approximation="tanh".
// Either operand order of every Add and Mul; the 0.5 applied to x first or last. Constants must
// match within 1e-4 (relative): a pattern with another constant is some other function and stays.
#include <cmath>
#include <map>
#include <optional>

#include "../onnx_internal.h"
#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

/// A scalar float constant (an initializer or a Constant node's value) named `name`.
std::optional<double> scalar(const ::onnx::GraphProto &graph, const std::string &name) {
    const ::onnx::TensorProto *t = constant_tensor(graph, name);
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
        if (near(scalar(graph, n.input(1)), c)) return n.input(0);
        if (near(scalar(graph, n.input(0)), c)) return n.input(1);
        return std::nullopt;
    };
    // erf(x / √2) (or erf(x · 1/√2)) producing `e`; the values it consumes go to `consumed`.
    auto erf_branch = [&](const std::string &e, const std::string &x, std::vector<std::string> &consumed) {
        const ::onnx::NodeProto *erf = node_of(e, "Erf");
        if (!erf) return false;
        const ::onnx::NodeProto *scale = node_of(erf->input(0), "Div");
        std::optional<std::string> scaled;
        if (scale && near(scalar(graph, scale->input(1)), std::sqrt(2.0))) scaled = scale->input(0);
        if (!scale && (scale = node_of(erf->input(0), "Mul"))) scaled = other(*scale, std::sqrt(0.5));
        if (!scaled || *scaled != x || !single_use(erf->input(0))) return false;
        consumed = {erf->input(0)};
        return true;
    };
    // x³ as Pow(x, 3) or x · (x · x), in either order.
    auto cube_of = [&](const std::string &v, const std::string &x, std::vector<std::string> &consumed) {
        if (const ::onnx::NodeProto *pow = node_of(v, "Pow"))
            return pow->input_size() == 2 && pow->input(0) == x && near(scalar(graph, pow->input(1)), 3.0);
        const ::onnx::NodeProto *mul = node_of(v, "Mul");
        if (!mul || mul->input_size() != 2) return false;
        for (int side = 0; side < 2; ++side) {
            const ::onnx::NodeProto *square = node_of(mul->input(side), "Mul");
            if (mul->input(1 - side) == x && square && square->input_size() == 2 && square->input(0) == x && square->input(1) == x &&
                single_use(mul->input(side))) {
                consumed.push_back(mul->input(side));
                return true;
            }
        }
        return false;
    };
    // tanh(√(2/π) · (x + 0.044715 · x³)) producing `t`.
    auto tanh_branch = [&](const std::string &t, const std::string &x, std::vector<std::string> &consumed) {
        const ::onnx::NodeProto *tanh = node_of(t, "Tanh");
        const ::onnx::NodeProto *beta = tanh ? node_of(tanh->input(0), "Mul") : nullptr;
        const auto sum = beta ? other(*beta, std::sqrt(2.0 / M_PI)) : std::nullopt;
        const ::onnx::NodeProto *add = sum ? node_of(*sum, "Add") : nullptr;
        if (!add || add->input_size() != 2 || !single_use(tanh->input(0)) || !single_use(*sum)) return false;
        const int x_side = add->input(0) == x ? 0 : add->input(1) == x ? 1 : -1;
        if (x_side < 0) return false;
        const std::string &kc = add->input(1 - x_side);
        const ::onnx::NodeProto *kappa = node_of(kc, "Mul");
        const auto cube = kappa ? other(*kappa, 0.044715) : std::nullopt;
        if (!cube || !single_use(kc) || !single_use(*cube)) return false;
        consumed = {tanh->input(0), *sum, kc, *cube};
        return cube_of(*cube, x, consumed);
    };
    std::vector<bool> drop(static_cast<size_t>(graph.node_size()), false);
    int replaced = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        ::onnx::NodeProto &last = *graph.mutable_node(k);
        if (last.op_type() != "Mul" || !last.domain().empty() || last.input_size() != 2) continue;
        // Form A: Mul(Mul(x, Add(Erf(x/√2), 1)), 0.5). Form B: Mul(Mul(x, 0.5), Add(...)). Tanh for Erf likewise.
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
        if (!e || !single_use(*e)) continue;
        std::vector<std::string> branch;
        const bool is_erf = erf_branch(*e, x, branch), is_tanh = !is_erf && tanh_branch(*e, x, branch);
        if (!is_erf && !is_tanh) continue;
        inner.push_back(*e);
        inner.insert(inner.end(), branch.begin(), branch.end());
        for (const std::string &v : inner) drop[static_cast<size_t>(producer.at(v))] = true;
        const std::string y = last.output(0), name = last.name();
        last.Clear();
        last.set_op_type("Gelu");
        last.set_domain(kTesseraDomain);
        last.set_name(name.empty() ? y + "_gelu" : name);
        last.add_input(x);
        last.add_output(y);
        if (is_tanh) {
            ::onnx::AttributeProto *a = last.add_attribute();
            a->set_name("approximation");
            a->set_type(::onnx::AttributeProto::STRING);
            a->set_s("tanh");
        }
        ++replaced;
    }
    ::onnx::GraphProto kept;
    for (int k = 0; k < graph.node_size(); ++k)
        if (!drop[static_cast<size_t>(k)]) *kept.add_node() = graph.node(k);
    graph.mutable_node()->Swap(kept.mutable_node());
    return replaced;
}

} // namespace tessera::onnx::internal
