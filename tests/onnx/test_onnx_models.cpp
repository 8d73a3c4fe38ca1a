// Small real models built by tests/onnx/small_models.py with Debian's python3-onnx: a ResNet
// basic block (BatchNorm, symbolic batch), an MLP with PyTorch's GELU (Erf) pattern and a
// Softmax, a MobileNetV2 inverted residual (depthwise conv, ReLU6 as Clip), a QDQ-quantised conv,
// a BERT encoder layer (attention, LayerNorm, GELU's tanh form), an LSTM layer (the LSTM op) and
// an LSTM cell unrolled into MatMul, Slice, Sigmoid and Tanh.
// Each is imported and run on the host, checked against the reference evaluator and, where the
// script computed it with NumPy, against that independent result; `tessera run-model` writes the
// same output as a .npy.
#include <algorithm>
#include <filesystem>

#include "onnx_test_util.h"
#include "tessera/codegen/backends.h"
#include "tessera/onnx.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

fs::path build_models() {
    const fs::path dir = tessera_test::unique_temp_dir();
    const auto r = tessera_test::run_command("/usr/bin/python3 '" TESSERA_SOURCE_DIR "/tests/onnx/small_models.py' '" + dir.string() + "'");
    EXPECT_EQ(r.status, 0) << r.err;
    return dir;
}

class SmallModel : public testing::TestWithParam<std::string> {};

TEST_P(SmallModel, RunsOnTheHostAsTheReferenceAndNumPy) {
    const fs::path dir = build_models();
    const std::string name = GetParam();
    const onnx::Model m = tessera::onnx::import((dir / (name + ".onnx")).string(), {.dims = {{"N", 2}}});
    ASSERT_EQ(m.inputs.size(), 1u);
    std::map<std::string, Buffer<>> inputs{{m.inputs[0].name, Buffer<>::load_npy((dir / (name + ".in_0.npy")).string())}};
    const std::vector<Buffer<>> host = m.run(inputs, Target::host());
    const std::vector<Buffer<>> reference = m.run(inputs, Target::reference());
    ASSERT_EQ(host.size(), 1u);
    EXPECT_EQ(onnx_test::compare(host[0], reference[0]), "") << "host vs reference evaluator";
    const fs::path numpy = dir / (name + ".out_0.npy");
    if (fs::exists(numpy)) EXPECT_EQ(onnx_test::compare(host[0], Buffer<>::load_npy(numpy.string())), "") << "host vs NumPy";
}

INSTANTIATE_TEST_SUITE_P(Models, SmallModel, testing::Values("resnet_block", "mlp_gelu", "inverted_residual", "qdq_conv", "cleanup", "shape_arithmetic", "mlp", "conv_net",
                                                           "bert_layer", "lstm", "lstm_cell", "mlp_gelu_tanh", "mlp_gelu_tanh_near_miss", "qdq_matmul",
                                                           "qdq_matmul_per_row", "qdq_conv_per_channel", "qdq_matmul_symmetric",
                                                           "qdq_matmul_asymmetric", "qdq_conv_asymmetric"));

TEST(OnnxModels, ConstantFoldingComputesShapeArithmeticAtImport) {
    const fs::path dir = build_models();
    // Without folding, the Reshape's shape is a computed value, not a constant: refused by name.
    try {
        tessera::onnx::import((dir / "shape_arithmetic.onnx").string(), {.optimize = false});
        ADD_FAILURE() << "expected the Reshape to need a constant shape";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("node 'view' (Reshape): input 1 'target' must be a constant"), std::string::npos) << e.what();
    }
    const tessera::onnx::Model m = tessera::onnx::import((dir / "shape_arithmetic.onnx").string());
    EXPECT_EQ(m.outputs[0].shape, (std::vector<int64_t>{2, 12}));
    // Only the data path is computed by the pipeline: the reshape and the relu.
    EXPECT_EQ(m.pipeline.functions().size(), 2u);
}

TEST(OnnxModels, ImportReportsNodesShapesAndMacs) {
    const fs::path dir = build_models();
    const tessera::onnx::Model m = tessera::onnx::import((dir / "resnet_block.onnx").string(), {.dims = {{"N", 3}}, .optimize = false});
    EXPECT_EQ(m.inputs[0].shape, (std::vector<int64_t>{3, 8, 10, 10}));
    EXPECT_EQ(m.outputs[0].shape, (std::vector<int64_t>{3, 8, 10, 10}));
    ASSERT_EQ(m.nodes.size(), 7u);
    EXPECT_EQ(m.nodes[0].op_type, "Conv");
    EXPECT_EQ(m.nodes[0].macs, 3 * 8 * 10 * 10 * (8 * 3 * 3)); // output points x (Cin x KH x KW)
    EXPECT_EQ(m.nodes[2].macs, 0);
    EXPECT_EQ(m.constants.size(), 10u); // two weights, two BatchNorms of four tensors each
    EXPECT_EQ(m.nodes_removed, 0);
}

TEST(OnnxModels, GraphPassesFoldBatchNormAndRemoveRedundantNodes) {
    const fs::path dir = build_models();
    // Each BatchNorm folds into its conv: two nodes fewer, and only the folded weights and
    // biases stay constants. The values stay those NumPy computed (SmallModel checks them).
    const tessera::onnx::Model resnet = tessera::onnx::import((dir / "resnet_block.onnx").string(), {.dims = {{"N", 1}}});
    EXPECT_EQ(resnet.nodes_removed, 2);
    std::vector<std::string> ops;
    for (const auto &n : resnet.nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Relu", "Conv", "Add", "Relu"}));
    EXPECT_EQ(resnet.constants.size(), 4u);

    const tessera::onnx::Model plain = tessera::onnx::import((dir / "cleanup.onnx").string(), {.optimize = false});
    const tessera::onnx::Model clean = tessera::onnx::import((dir / "cleanup.onnx").string());
    EXPECT_EQ(plain.nodes.size(), 8u);
    EXPECT_EQ(clean.nodes_removed, 4);
    ops.clear();
    for (const auto &n : clean.nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"Identity", "Relu", "Add", "Reshape"}));
    // GELU's five-node Erf form becomes one Gelu node (SmallModel checks its values).
    const tessera::onnx::Model mlp = tessera::onnx::import((dir / "mlp_gelu.onnx").string());
    ops.clear();
    for (const auto &n : mlp.nodes) ops.push_back(n.op_type);
    EXPECT_EQ(ops, (std::vector<std::string>{"MatMul", "Add", "Gelu", "MatMul", "Softmax"}));
    const Buffer<> x = Buffer<>::load_npy((dir / "cleanup.in_0.npy").string());
    EXPECT_EQ(onnx_test::compare(clean.run({{"x", x}}, Target::host())[0], plain.run({{"x", x}}, Target::reference())[0]), "");
}

std::vector<std::string> op_types(const tessera::onnx::Model &m) {
    std::vector<std::string> ops;
    for (const auto &n : m.nodes) ops.push_back(n.op_type);
    return ops;
}

/// The model's output on the host after the passes against the reference evaluator on the graph
/// as the file has it (no passes): "" when they agree within fp32's tolerance.
std::string passes_keep_values(const fs::path &dir, const std::string &name) {
    const tessera::onnx::Model plain = tessera::onnx::import((dir / (name + ".onnx")).string(), {.optimize = false});
    const tessera::onnx::Model optimized = tessera::onnx::import((dir / (name + ".onnx")).string());
    const Buffer<> x = Buffer<>::load_npy((dir / (name + ".in_0.npy")).string());
    return onnx_test::compare(optimized.run({{"x", x}}, Target::host())[0], plain.run({{"x", x}}, Target::reference())[0]);
}

TEST(OnnxModels, GeluTanhFormBecomesOneNodeWithTheSameValues) {
    const fs::path dir = build_models();
    // PyTorch's approximate='tanh' export (x · (x · x), constants as Constant nodes, 0.5 last):
    // nine nodes become one Gelu, and the four Constants it read are dead.
    const tessera::onnx::Model mlp = tessera::onnx::import((dir / "mlp_gelu_tanh.onnx").string());
    EXPECT_EQ(op_types(mlp), (std::vector<std::string>{"MatMul", "Add", "Gelu", "MatMul"}));
    EXPECT_EQ(mlp.nodes_removed, 12);
    EXPECT_EQ(passes_keep_values(dir, "mlp_gelu_tanh"), "");
    // The tanh approximation, not the erf form: SmallModel compares with NumPy's tanh form, which
    // differs from the erf form by 1.1e-3 here, above the 4.5e-4 tolerance.
    const auto cli = tessera_test::run_command("'" TESSERA_BINARY_DIR "/apps/cli/tessera' import '" + (dir / "mlp_gelu_tanh.onnx").string() + "' --json");
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_NE(cli.out.find("\"op_type\": \"Gelu\""), std::string::npos) << cli.out;
    EXPECT_EQ(cli.out.find("\"op_type\": \"Tanh\""), std::string::npos) << cli.out;

    // HF's gelu_new in the BERT layer (Pow(x, 3), 0.5 first): eight nodes become one.
    const tessera::onnx::Model bert = tessera::onnx::import((dir / "bert_layer.onnx").string());
    const std::vector<std::string> ops = op_types(bert);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Gelu"), 1);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Tanh"), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "Pow"), 0);
    EXPECT_EQ(bert.nodes_removed, 7);
    EXPECT_EQ(passes_keep_values(dir, "bert_layer"), "");

    // The same graph with 0.05 for 0.044715 is another function: left as it is.
    const tessera::onnx::Model near_miss = tessera::onnx::import((dir / "mlp_gelu_tanh_near_miss.onnx").string());
    const std::vector<std::string> kept = op_types(near_miss);
    EXPECT_EQ(std::count(kept.begin(), kept.end(), "Gelu"), 0);
    EXPECT_EQ(std::count(kept.begin(), kept.end(), "Tanh"), 1);
    EXPECT_EQ(near_miss.nodes_removed, 0);
    EXPECT_EQ(passes_keep_values(dir, "mlp_gelu_tanh_near_miss"), "");
}

/// The node of `m` named `name`; fails the test when there is none.
const tessera::onnx::ModelNode *node_named(const tessera::onnx::Model &m, const std::string &name) {
    for (const auto &n : m.nodes)
        if (n.name == name) return &n;
    ADD_FAILURE() << "no node '" << name << "'";
    return nullptr;
}

TEST(OnnxModels, QdqPairsAroundConvsAndMatmulsBecomeIntegerKernels) {
    const fs::path dir = build_models();
    // Conv(DQ(xq), DQ(wq)) -> ConvInteger of the uint8 input and the int8 weights (an int32
    // accumulator), then Cast and the two scales; both DequantizeLinear nodes are gone.
    const tessera::onnx::Model conv = tessera::onnx::import((dir / "qdq_conv.onnx").string());
    EXPECT_EQ(op_types(conv), (std::vector<std::string>{"QuantizeLinear", "QuantizeLinear", "ConvInteger", "Cast", "Mul", "Mul", "Relu"}));
    // The uint8 operand is quantised to int8 with its zero point less 128 (the MXM's operand).
    if (const auto *q = node_named(conv, "conv_qdq_quantize_int8")) EXPECT_EQ(q->outputs.at(0).type, Int(8));
    else ADD_FAILURE() << "no int8 QuantizeLinear for the conv's operand";
    if (const auto *n = node_named(conv, "conv_qdq_integer")) {
        EXPECT_EQ(n->outputs.at(0).type, Int(32));
        EXPECT_EQ(n->macs, 4 * 6 * 6 * (3 * 3 * 3));
    }
    EXPECT_EQ(passes_keep_values(dir, "qdq_conv"), "");
    // Per-output-channel weight scales and a float bias: each reshaped to [C, 1, 1] for NCHW.
    const tessera::onnx::Model per_channel = tessera::onnx::import((dir / "qdq_conv_per_channel.onnx").string());
    EXPECT_EQ(op_types(per_channel),
              (std::vector<std::string>{"QuantizeLinear", "ConvInteger", "Cast", "Mul", "Reshape", "Mul", "Reshape", "Add"}));
    EXPECT_EQ(passes_keep_values(dir, "qdq_conv_per_channel"), "");
    // MatMul with per-column weight scales and a bias, requantised after: MatMulInteger, the
    // scales, the bias, then the model's own QuantizeLinear (QLinearMatMul's arithmetic).
    const tessera::onnx::Model matmul = tessera::onnx::import((dir / "qdq_matmul.onnx").string());
    EXPECT_EQ(op_types(matmul), (std::vector<std::string>{"QuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul", "Add", "QuantizeLinear",
                                                          "DequantizeLinear", "Relu"}));
    if (const auto *n = node_named(matmul, "fc_qdq_integer")) EXPECT_EQ(n->outputs.at(0).type, Int(32));
    EXPECT_EQ(passes_keep_values(dir, "qdq_matmul"), "");
    const tessera::onnx::Model symmetric = tessera::onnx::import((dir / "qdq_matmul_symmetric.onnx").string());
    EXPECT_EQ(op_types(symmetric), op_types(matmul));
    EXPECT_EQ(passes_keep_values(dir, "qdq_matmul_symmetric"), "");
    // Per-row weight scales (axis 0 of [K, N]) vary along the sum: left as a float MatMul.
    const tessera::onnx::Model per_row = tessera::onnx::import((dir / "qdq_matmul_per_row.onnx").string());
    const std::vector<std::string> kept = op_types(per_row);
    EXPECT_EQ(std::count(kept.begin(), kept.end(), "MatMul"), 1);
    EXPECT_EQ(std::count(kept.begin(), kept.end(), "MatMulInteger"), 0);
    EXPECT_EQ(per_row.nodes_removed, 0);

    // The quantised models against the same models unquantised (float_0, NumPy): within the
    // quantisation tolerance README states, 2e-2 x max(1, max|y|) (measured: 1.2e-2, 0.9e-2, 1.4e-2).
    for (const std::string name : {"qdq_conv", "qdq_conv_per_channel", "qdq_matmul"}) {
        const tessera::onnx::Model m = tessera::onnx::import((dir / (name + ".onnx")).string());
        const Buffer<> x = Buffer<>::load_npy((dir / (name + ".in_0.npy")).string());
        const Buffer<> unquantised = Buffer<>::load_npy((dir / (name + ".float_0.npy")).string());
        EXPECT_EQ(onnx_test::within(m.run({{"x", x}}, Target::host())[0], unquantised, 2e-2), "") << name;
    }
}

TEST(OnnxModels, RunModelWritesVerifiedOutputs) {
    const fs::path dir = build_models();
    const fs::path out = dir / "out";
    const auto r = tessera_test::run_command("'" TESSERA_BINARY_DIR "/apps/cli/tessera' run-model '" + (dir / "mlp_gelu.onnx").string() +
                                             "' --target host --input x='" + (dir / "mlp_gelu.in_0.npy").string() +
                                             "' --output-dir '" + out.string() + "' --json");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\"verified\": true"), std::string::npos) << r.out;
    EXPECT_EQ(onnx_test::compare(Buffer<>::load_npy((out / "y.npy").string()), Buffer<>::load_npy((dir / "mlp_gelu.out_0.npy").string())), "");
}

} // namespace
