// Q/DQ pairs around convs and matmuls into integer kernels. Quantisation tools export a
// quantised Conv as Conv(DequantizeLinear(xq, xs, xz), DequantizeLinear(wq, ws, wz)) — the
// "QDQ" format — where the float conv only simulates the integer one. Since
// dequantize(q) = (q - z) · s, the conv of two dequantised operands equals
//   ConvInteger(xq, wq, xz, wz) · xs · ws   (ws one value or one per output channel),
// computed exactly in int32 and scaled once per output instead of once per operand element. The
// MatMul form is the same with MatMulInteger (ws one value or one per column). A QuantizeLinear
// after the conv then requantises the scaled accumulator, which is QLinearConv's arithmetic.
// The DequantizeLinear nodes stay; dead-node elimination removes those nothing else reads.
//
// A uint8 operand quantised in the graph is quantised to int8 instead, with its zero point
// shifted down by 128 — saturate(round(x/s) + z) - 128 == saturate(round(x/s) + z - 128) in
// int8's range, exactly — since the chips' MXM multiplies int8: the integer kernel then reads a
// QuantizeLinear's int8 output, and a zero point of 128 (the usual uint8 one) becomes 0.
#include <optional>

#include "../onnx_internal.h"
#include "graph_passes.h"

namespace tessera::onnx::internal {

namespace {

/// A DequantizeLinear feeding one operand: its quantised input, scale and zero point.
struct Dequantized {
    std::string q, scale, zero_point;
    bool per_axis = false;
    int64_t axis = 1;
};

int64_t elements(const ::onnx::TensorProto &t) {
    int64_t n = 1;
    for (int64_t d : t.dims()) n *= d;
    return n;
}

/// The rank of a quantised operand when it is a constant, or a QuantizeLinear of one.
std::optional<int> constant_rank(const ::onnx::GraphProto &graph, const std::map<std::string, int> &producer, const std::string &q) {
    if (const ::onnx::TensorProto *t = constant_tensor(graph, q)) return t->dims_size();
    const auto p = producer.find(q);
    if (p == producer.end() || graph.node(p->second).op_type() != "QuantizeLinear") return std::nullopt;
    if (const ::onnx::TensorProto *t = constant_tensor(graph, graph.node(p->second).input(0))) return t->dims_size();
    return std::nullopt;
}

/// `value` as a DequantizeLinear's output whose scale and zero point are constants and whose
/// zero point is int8 or uint8 (what ConvInteger and MatMulInteger take).
std::optional<Dequantized> dequantized(const ::onnx::GraphProto &graph, const std::map<std::string, int> &producer, const std::string &value) {
    const auto p = producer.find(value);
    if (p == producer.end()) return std::nullopt;
    const ::onnx::NodeProto &dq = graph.node(p->second);
    if (dq.op_type() != "DequantizeLinear" || !dq.domain().empty() || dq.input_size() != 3) return std::nullopt;
    const ::onnx::TensorProto *scale = constant_tensor(graph, dq.input(1)), *zero = constant_tensor(graph, dq.input(2));
    if (!scale || !zero || scale->data_type() != ::onnx::TensorProto::FLOAT) return std::nullopt;
    if (zero->data_type() != ::onnx::TensorProto::INT8 && zero->data_type() != ::onnx::TensorProto::UINT8) return std::nullopt;
    Dequantized d{dq.input(0), dq.input(1), dq.input(2)};
    d.per_axis = elements(*scale) != 1;
    if (d.per_axis != (elements(*zero) != 1)) return std::nullopt;
    for (const auto &a : dq.attribute())
        if (a.name() == "axis") d.axis = a.i();
    return d;
}

/// The name of an int8 QuantizeLinear equal to the uint8 one producing `d.q` minus 128, added to
/// `rewritten` (its zero point a new initializer of `graph`), with that zero point's name; or
/// nothing when d.q is not a uint8 QuantizeLinear's output whose zero point is d's.
std::optional<std::pair<std::string, std::string>> quantized_to_int8(::onnx::GraphProto &graph, const std::map<std::string, int> &producer,
                                                                     const Dequantized &d, const std::string &base,
                                                                     ::onnx::GraphProto &rewritten) {
    const auto p = producer.find(d.q);
    if (p == producer.end()) return std::nullopt;
    const ::onnx::NodeProto q = graph.node(p->second);
    if (q.op_type() != "QuantizeLinear" || !q.domain().empty() || q.input_size() != 3 || q.input(2) != d.zero_point) return std::nullopt;
    const ::onnx::TensorProto *zero = constant_tensor(graph, d.zero_point);
    if (!zero || zero->data_type() != ::onnx::TensorProto::UINT8 || elements(*zero) != 1) return std::nullopt;
    const Buffer<> zero_value = tensor_to_buffer(*zero, "zero point '" + d.zero_point + "'");
    const int64_t z = reshaped(zero_value, {1}).get_as_int({0});
    ::onnx::TensorProto *shifted = graph.add_initializer();
    shifted->set_name(base + "_x_zero_int8");
    shifted->set_data_type(::onnx::TensorProto::INT8);
    for (int64_t dim : zero->dims()) shifted->add_dims(dim);
    shifted->add_int32_data(int32_t(z - 128));
    ::onnx::NodeProto signed_q = q;
    signed_q.set_name(base + "_quantize_int8");
    signed_q.set_input(2, shifted->name());
    signed_q.set_output(0, base + "_x_int8");
    *rewritten.add_node() = signed_q;
    return std::make_pair(signed_q.output(0), shifted->name());
}

::onnx::NodeProto make_node(const std::string &op, std::vector<std::string> inputs, const std::string &output, const std::string &name) {
    ::onnx::NodeProto n;
    n.set_op_type(op);
    n.set_name(name);
    for (std::string &in : inputs) n.add_input(std::move(in));
    n.add_output(output);
    return n;
}

} // namespace

int fuse_qdq_into_integer_kernels(::onnx::GraphProto &graph) {
    std::map<std::string, int> producer;
    for (int k = 0; k < graph.node_size(); ++k)
        for (const std::string &out : graph.node(k).output()) producer[out] = k;
    ::onnx::GraphProto rewritten;
    int fused = 0;
    std::map<std::string, std::pair<std::string, std::string>> int8_of; // uint8 operand -> its int8 QuantizeLinear and zero point
    for (int k = 0; k < graph.node_size(); ++k) {
        const ::onnx::NodeProto &node = graph.node(k);
        const bool conv = node.op_type() == "Conv", matmul = node.op_type() == "MatMul";
        std::optional<Dequantized> x, w;
        if ((conv || matmul) && node.domain().empty() && node.input_size() >= 2) {
            x = dequantized(graph, producer, node.input(0));
            w = dequantized(graph, producer, node.input(1));
        }
        // The operand per tensor; the weight per tensor or per output channel (Conv: axis 0 of
        // [O, I, k...]; MatMul: the last axis of a 2-D [K, N] weight, so it broadcasts as is). A
        // conv's per-channel vectors (scale, bias) are reshaped to [O, 1...] by the weight's rank.
        const bool bias = node.input_size() > 2 && !node.input(2).empty();
        const std::optional<int> rank = x && w ? constant_rank(graph, producer, w->q) : std::nullopt;
        bool fits = x && w && !x->per_axis;
        if (fits && w->per_axis) fits = conv ? w->axis == 0 && rank : rank == 2 && (w->axis == 1 || w->axis == -1);
        if (fits && conv && bias) fits = rank.has_value();
        if (!fits) {
            *rewritten.add_node() = node;
            continue;
        }
        const std::string y = node.output(0), base = (node.name().empty() ? y : node.name()) + "_qdq";
        std::pair<std::string, std::string> operand{x->q, x->zero_point};
        if (const auto known = int8_of.find(x->q); known != int8_of.end()) operand = known->second; // read by an earlier kernel too
        else if (auto int8 = quantized_to_int8(graph, producer, *x, base, rewritten)) operand = int8_of[x->q] = *int8;
        ::onnx::NodeProto integer = make_node(conv ? "ConvInteger" : "MatMulInteger", {operand.first, w->q, operand.second, w->zero_point}, base + "_acc", base + "_integer");
        if (conv) *integer.mutable_attribute() = node.attribute(); // ConvInteger takes every Conv attribute
        *rewritten.add_node() = integer;
        ::onnx::NodeProto cast = make_node("Cast", {base + "_acc"}, base + "_real", base + "_cast");
        ::onnx::AttributeProto *to = cast.add_attribute();
        to->set_name("to");
        to->set_type(::onnx::AttributeProto::INT);
        to->set_i(::onnx::TensorProto::FLOAT);
        *rewritten.add_node() = cast;
        const std::string shape = base + "_channel_shape";
        auto per_channel = [&](const std::string &v, const std::string &suffix) {
            if (!conv) return v;
            if (!constant_tensor(graph, shape)) {
                ::onnx::TensorProto *t = graph.add_initializer();
                t->set_name(shape);
                t->set_data_type(::onnx::TensorProto::INT64);
                t->add_dims(*rank - 1);
                t->add_int64_data(-1);
                for (int d = 2; d < *rank; ++d) t->add_int64_data(1);
            }
            *rewritten.add_node() = make_node("Reshape", {v, shape}, base + suffix, base + suffix);
            return base + suffix;
        };
        *rewritten.add_node() = make_node("Mul", {base + "_real", x->scale}, base + "_scaled_x", base + "_scale_x");
        const std::string w_scale = w->per_axis ? per_channel(w->scale, "_w_scale") : w->scale;
        *rewritten.add_node() = make_node("Mul", {base + "_scaled_x", w_scale}, bias ? base + "_scaled" : y, base + "_scale_w");
        if (bias) {
            const std::string b = per_channel(node.input(2), "_bias");
            *rewritten.add_node() = make_node("Add", {base + "_scaled", b}, y, base + "_bias");
        }
        ++fused;
    }
    graph.mutable_node()->Swap(rewritten.mutable_node());
    return fused;
}

} // namespace tessera::onnx::internal
