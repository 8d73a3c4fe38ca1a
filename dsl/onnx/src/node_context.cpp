// NodeContext: attribute and operand access for one ONNX node, with messages that name it.
#include "node_context.h"

#include <cctype>

#include "onnx_internal.h"
#include "tessera/error.h"

namespace tessera::onnx::internal {

using ::onnx::AttributeProto;

NodeContext::NodeContext(const ::onnx::NodeProto &node, int64_t opset, std::vector<std::optional<Value>> inputs,
                         std::string func_prefix)
    : node_(node), opset_(opset), inputs_(std::move(inputs)), func_prefix_(std::move(func_prefix)) {}

std::string NodeContext::where() const {
    const std::string name = node_.name().empty() ? (node_.output_size() ? "producing '" + node_.output(0) + "'" : "(unnamed)")
                                                  : "'" + node_.name() + "'";
    return "node " + name + " (" + node_.op_type() + ")";
}

void NodeContext::fail(const std::string &message) const { throw Error(where() + ": " + message); }

void NodeContext::allow_attributes(const std::set<std::string> &supported) const {
    for (const AttributeProto &a : node_.attribute()) {
        if (supported.count(a.name())) continue;
        std::string list;
        for (const std::string &s : supported) list += (list.empty() ? "" : ", ") + s;
        fail("attribute '" + a.name() + "' is not supported; supported attributes: " + (list.empty() ? "none" : list));
    }
}

const AttributeProto *NodeContext::attribute(const std::string &name, int type) const {
    for (const AttributeProto &a : node_.attribute()) {
        if (a.name() != name) continue;
        if (a.type() != type)
            fail("attribute '" + name + "' has type " + AttributeProto::AttributeType_Name(a.type()) + "; expected " +
                 AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(type)));
        return &a;
    }
    return nullptr;
}

bool NodeContext::has_attribute(const std::string &name) const {
    for (const AttributeProto &a : node_.attribute())
        if (a.name() == name) return true;
    return false;
}

int64_t NodeContext::attr_int(const std::string &name, int64_t fallback) const {
    const AttributeProto *a = attribute(name, AttributeProto::INT);
    return a ? a->i() : fallback;
}
double NodeContext::attr_float(const std::string &name, double fallback) const {
    const AttributeProto *a = attribute(name, AttributeProto::FLOAT);
    return a ? a->f() : fallback;
}
std::string NodeContext::attr_string(const std::string &name, const std::string &fallback) const {
    const AttributeProto *a = attribute(name, AttributeProto::STRING);
    return a ? a->s() : fallback;
}
std::vector<int64_t> NodeContext::attr_ints(const std::string &name, const std::vector<int64_t> &fallback) const {
    const AttributeProto *a = attribute(name, AttributeProto::INTS);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
}
Buffer<> NodeContext::attr_tensor(const std::string &name) const {
    const AttributeProto *a = attribute(name, AttributeProto::TENSOR);
    if (!a) fail("attribute '" + name + "' is missing");
    return tensor_to_buffer(a->t(), where() + ": attribute '" + name + "'");
}

bool NodeContext::has_input(int i) const {
    return i < static_cast<int>(inputs_.size()) && inputs_[static_cast<size_t>(i)].has_value();
}

const Value &NodeContext::input(int i) const {
    if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
    return *inputs_[static_cast<size_t>(i)];
}

const Buffer<> &NodeContext::constant(int i) const {
    const Value &v = input(i);
    if (!v.constant)
        fail("input " + std::to_string(i) + " '" + node_.input(i) +
             "' must be a constant (an initializer, a Constant node, or an input fixed at import with "
             "constant_inputs / run-model --input): it decides a shape or an attribute");
    return *v.constant;
}

std::vector<int64_t> NodeContext::constant_ints(int i) const {
    const Buffer<> &b = constant(i);
    if (!b.type().is_integer()) fail("input " + std::to_string(i) + " '" + node_.input(i) + "' must be integers");
    std::vector<int64_t> v;
    const Buffer<> flat = reshaped(b, {b.number_of_elements()});
    for (int64_t k = 0; k < flat.number_of_elements(); ++k) v.push_back(flat.get_as_int({k}));
    return v;
}

double NodeContext::constant_scalar(int i) const {
    const Buffer<> &b = constant(i);
    if (b.number_of_elements() != 1) fail("input " + std::to_string(i) + " '" + node_.input(i) + "' must be a single value");
    return reshaped(b, {1}).get_as_double({0});
}

void NodeContext::require_arity(int lo, int hi, int outputs) const {
    const int n = node_.input_size();
    if (n < lo || n > hi)
        fail("has " + std::to_string(n) + " inputs; supported: " + std::to_string(lo) +
             (hi != lo ? " to " + std::to_string(hi) : ""));
    for (int k = outputs; k < node_.output_size(); ++k)
        if (!node_.output(k).empty())
            fail("output " + std::to_string(k) + " '" + node_.output(k) + "' is not supported; only the first " +
                 std::to_string(outputs) + " output" + (outputs == 1 ? "" : "s") + " may be used");
}

std::string NodeContext::func_name(int output) const {
    std::string s = output < node_.output_size() ? node_.output(output) : node_.op_type();
    for (char &c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return func_prefix_ + s;
}

} // namespace tessera::onnx::internal
