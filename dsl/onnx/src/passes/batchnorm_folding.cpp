// BatchNorm into the conv before it: W'[o] = W[o] · f[o], B'[o] = (B[o] - mean[o]) · f[o] + bias[o]
// with f = scale / sqrt(var + epsilon), when every operand is an fp32 initializer.
#include <cmath>
#include <map>
#include <optional>

#include "../onnx_internal.h"
#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

std::optional<Buffer<>> fp32_initializer(const ::onnx::GraphProto &graph, const std::string &name) {
    for (const auto &t : graph.initializer()) {
        if (t.name() != name) continue;
        if (t.data_type() != ::onnx::TensorProto::FLOAT) return std::nullopt;
        try {
            return tensor_to_buffer(t, "initializer '" + name + "'");
        } catch (const Error &) {
            return std::nullopt; // the converter reports a bad initializer by name
        }
    }
    return std::nullopt;
}

::onnx::TensorProto to_initializer(const Buffer<> &b, const std::string &name) {
    ::onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : b.shape()) t.add_dims(d);
    t.set_raw_data(std::string(static_cast<const char *>(b.data()), static_cast<size_t>(b.number_of_elements()) * 4));
    return t;
}

bool plain_inference_batchnorm(const ::onnx::NodeProto &bn) {
    if (bn.op_type() != "BatchNormalization" || !bn.domain().empty() || bn.input_size() != 5 || bn.output_size() != 1) return false;
    for (const auto &a : bn.attribute())
        if ((a.name() == "training_mode" && a.i() != 0) || (a.name() == "spatial" && a.i() != 1)) return false;
    return true;
}

} // namespace

int fold_batchnorm_into_conv(::onnx::GraphProto &graph) {
    const std::map<std::string, int> uses = value_uses(graph);
    std::map<std::string, int> producer;
    std::vector<bool> drop(static_cast<size_t>(graph.node_size()), false);
    int folded = 0;
    for (int k = 0; k < graph.node_size(); ++k) {
        const ::onnx::NodeProto &bn = graph.node(k);
        const auto from = bn.input_size() ? producer.find(bn.input(0)) : producer.end();
        for (const std::string &out : bn.output()) producer[out] = k;
        if (from == producer.end() || !plain_inference_batchnorm(bn)) continue;
        ::onnx::NodeProto &conv = *graph.mutable_node(from->second);
        if (conv.op_type() != "Conv" || !conv.domain().empty() || conv.output_size() != 1 || uses.at(conv.output(0)) != 1) continue;
        float epsilon = 1e-5f;
        for (const auto &a : bn.attribute())
            if (a.name() == "epsilon") epsilon = a.f();
        const auto w = fp32_initializer(graph, conv.input(1));
        std::vector<std::optional<Buffer<>>> p;
        for (int i = 1; i < 5; ++i) p.push_back(fp32_initializer(graph, bn.input(i)));
        if (!w || w->dimensions() != 4 || !p[0] || !p[1] || !p[2] || !p[3]) continue;
        const int64_t out_channels = w->dim(0), per_channel = w->number_of_elements() / std::max<int64_t>(1, out_channels);
        bool shapes_fit = true;
        for (const auto &b : p) shapes_fit = shapes_fit && b->number_of_elements() == out_channels;
        std::optional<Buffer<>> bias;
        if (conv.input_size() > 2 && !conv.input(2).empty()) {
            bias = fp32_initializer(graph, conv.input(2));
            shapes_fit = shapes_fit && bias && bias->number_of_elements() == out_channels;
        }
        if (!shapes_fit) continue;
        Buffer<> w2 = w->copy(), b2(Float(32), {out_channels});
        float *wd = static_cast<float *>(w2.data()), *bd = static_cast<float *>(b2.data());
        auto at = [](const Buffer<> &b, int64_t o) { return static_cast<const float *>(b.data())[o]; };
        for (int64_t o = 0; o < out_channels; ++o) {
            const float f = at(*p[0], o) / std::sqrt(at(*p[3], o) + epsilon);
            for (int64_t e = 0; e < per_channel; ++e) wd[o * per_channel + e] *= f;
            bd[o] = ((bias ? at(*bias, o) : 0.0f) - at(*p[2], o)) * f + at(*p[1], o);
        }
        const std::string stem = bn.output(0) + "_folded";
        *graph.add_initializer() = to_initializer(w2, stem + "_W");
        *graph.add_initializer() = to_initializer(b2, stem + "_B");
        conv.set_input(1, stem + "_W");
        if (conv.input_size() > 2) conv.set_input(2, stem + "_B");
        else conv.add_input(stem + "_B");
        conv.set_output(0, bn.output(0));
        drop[static_cast<size_t>(k)] = true;
        ++folded;
    }
    ::onnx::GraphProto kept;
    for (int k = 0; k < graph.node_size(); ++k)
        if (!drop[static_cast<size_t>(k)]) *kept.add_node() = graph.node(k);
    graph.mutable_node()->Swap(kept.mutable_node());
    return folded;
}

} // namespace tessera::onnx::internal
