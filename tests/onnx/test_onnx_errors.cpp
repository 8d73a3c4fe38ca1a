// The importer's refusals through the library API (the CLI's are in tests/bad_inputs): each a
// tessera::Error naming what is wrong and what is supported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include "tessera/onnx.h"

namespace {

using namespace tessera;
using testing::HasSubstr;

/// A one-node model: y = op(x) with x of `shape` (symbolic entries as names).
std::vector<uint8_t> one_node_model(const std::string &op, const std::vector<std::string> &shape, int opset = 13) {
    ::onnx::ModelProto m;
    m.set_ir_version(8);
    auto *o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    auto *g = m.mutable_graph();
    g->set_name("g");
    auto *n = g->add_node();
    n->set_op_type(op);
    n->set_name("node1");
    n->add_input("x");
    n->add_output("y");
    for (const char *name : {"x", "y"}) {
        auto *v = name[0] == 'x' ? g->add_input() : g->add_output();
        v->set_name(name);
        auto *t = v->mutable_type()->mutable_tensor_type();
        t->set_elem_type(::onnx::TensorProto::FLOAT);
        for (const std::string &d : shape) {
            auto *dim = t->mutable_shape()->add_dim();
            if (std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
            else dim->set_dim_param(d);
        }
    }
    const std::string bytes = m.SerializeAsString();
    return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::string import_error(const std::vector<uint8_t> &bytes, const tessera::onnx::ImportOptions &options = {}) {
    try {
        tessera::onnx::import(bytes, options, "m.onnx");
    } catch (const Error &e) {
        return e.what();
    }
    return "(no error)";
}

TEST(OnnxErrors, SymbolicDimensionsAreBoundByTheCaller) {
    const auto bytes = one_node_model("Relu", {"batch", "3"});
    EXPECT_THAT(import_error(bytes), HasSubstr("'batch', unbound; bind it with --dim batch=N"));
    EXPECT_THAT(import_error(bytes, {.dims = {{"batch", 0}}}), HasSubstr("'batch' is bound to 0; supported: 1 .. "));
    const tessera::onnx::Model m = tessera::onnx::import(bytes, {.dims = {{"batch", 5}}}, "m.onnx");
    EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{5, 3}));
    Buffer<> x(Float(32), {5, 3});
    x.fill(-2);
    const std::vector<Buffer<>> y = m.run({{"x", x}}, Target::reference());
    EXPECT_EQ(y[0].shape(), (std::vector<int64_t>{5, 3}));
    EXPECT_EQ(y[0].get_as_double({4, 2}), 0.0);
}

TEST(OnnxErrors, RunChecksTheInputsByName) {
    const tessera::onnx::Model m = tessera::onnx::import(one_node_model("Relu", {"2", "3"}), {}, "m.onnx");
    EXPECT_THROW(m.bindings({}), Error);
    try {
        m.bindings({{"x", Buffer<>(Float(32), {3, 2})}});
        ADD_FAILURE();
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("model input 'x' has the shape [3, 2]; the model declares [2, 3]"));
    }
    try {
        m.bindings({{"x", Buffer<>(Float(32), {2, 3})}, {"z", Buffer<>(Float(32), {1})}});
        ADD_FAILURE();
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("model input 'z' does not exist; the model's inputs are x"));
    }
}

TEST(OnnxErrors, UnsupportedOpsAndOpsetsNameTheNode) {
    EXPECT_THAT(import_error(one_node_model("Hardmax", {"2", "3"})),
                HasSubstr("m.onnx: node 'node1' (Hardmax): op type 'Hardmax' is not supported; supported: Add "));
    EXPECT_THAT(import_error(one_node_model("Relu", {"2"}, 18)), HasSubstr("imports opset 18 of the default ONNX domain; supported: 1 .. 17"));
    EXPECT_THAT(import_error(one_node_model("Relu", {"2"}), {.constant_inputs = {{"w", Buffer<>(Float(32), {1})}}}),
                HasSubstr("constant input 'w' is not an input of the model"));
}

TEST(OnnxErrors, TruncatedModelsAndTensorsAreRefused) {
    const auto bytes = one_node_model("Relu", {"2", "3"});
    for (size_t cut : {size_t(1), bytes.size() / 3, bytes.size() - 1}) {
        const std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
        EXPECT_THAT(import_error(part), HasSubstr("m.onnx")) << cut;
    }
    EXPECT_THAT(import_error({}), HasSubstr("the file is empty"));
    EXPECT_THROW(tessera::onnx::parse_tensor({0x08, 0x02, 0x08}, "t.pb"), Error);
    ::onnx::TensorProto t;
    t.set_data_type(::onnx::TensorProto::FLOAT);
    t.add_dims(1000000);
    t.add_dims(1000000);
    const std::string s = t.SerializeAsString();
    try {
        tessera::onnx::parse_tensor(std::vector<uint8_t>(s.begin(), s.end()), "t.pb");
        ADD_FAILURE();
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("more than 2147483647 elements"));
    }
}

} // namespace
