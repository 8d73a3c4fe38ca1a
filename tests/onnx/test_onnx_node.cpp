// ONNX's backend node tests (Debian's libonnx-testdata: data/node/<test>/model.onnx with
// test_data_set_0/input_N.pb and output_N.pb) for the ops issue 16 lists, imported and run on
// the host (LLVM JIT) and compared with output_N.pb. Every directory of a listed op must pass
// unless it is excluded below with its reason; an excluded one that passes fails the test too,
// so the list stays honest. The per-op counts are printed for the README's table.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "onnx_test_util.h"
#include "tessera/codegen/backends.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/onnx.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

const fs::path kNodeTests = "/usr/share/libonnx-testdata/data/node";

/// The ops issue 16 lists.
const std::set<std::string> kListedOps = {
    "Conv", "ConvTranspose", "MatMul", "Gemm", "BatchNormalization", "LayerNormalization", "Softmax", "LogSoftmax",
    "Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "Tanh", "Erf", "Softplus", "Clip", "Add", "Sub", "Mul", "Div",
    "Pow", "Sqrt", "Exp", "Max", "Min", "Where", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Flatten",
    "Transpose", "Squeeze", "Unsqueeze", "Concat", "Slice", "Gather", "Expand", "Pad", "Cast", "Identity",
    "ReduceMean", "ReduceSum", "ReduceMax", "QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
    "MatMulInteger", "ConvInteger", "Einsum", "LSTM"};

/// Ops whose inputs after the first decide shapes or attributes: the backend tests feed them as
/// graph inputs, so the test fixes them at import (ImportOptions::constant_inputs), as a model
/// exporter would have made them initializers.
const std::set<std::string> kShapeInputOps = {"Reshape", "Slice", "Expand", "Squeeze", "Unsqueeze", "ReduceSum", "Pad"};

/// Directories of listed ops that are not expected to pass on the host, each with its reason.
const std::map<std::string, std::string> kExcluded = {
#include "node_test_exclusions.inc"
};

::onnx::ModelProto load_model(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    ::onnx::ModelProto m;
    EXPECT_TRUE(m.ParseFromIstream(&in)) << path;
    return m;
}

/// The op a single-op test directory exercises, or "" when its graph is not one listed op.
std::string listed_op(const ::onnx::ModelProto &m) {
    if (m.graph().node_size() != 1) return "";
    const std::string &op = m.graph().node(0).op_type();
    return kListedOps.count(op) ? op : "";
}

/// libonnx-testdata (ONNX 1.12's numpy_helper) stores bfloat16 tensors as UINT16 bit patterns:
/// read them as the bfloat16 the model declares.
Buffer<> as_declared(const Buffer<> &b, int declared) {
    if (declared != ::onnx::TensorProto::BFLOAT16 || b.type() != UInt(16)) return b;
    Buffer<> out(BFloat(16), b.shape());
    std::memcpy(out.data(), b.data(), static_cast<size_t>(b.number_of_elements()) * 2);
    return out;
}

/// Runs one test directory; "" when the outputs match.
std::string run_node_test(const fs::path &dir, const ::onnx::ModelProto &proto) {
    const fs::path data = dir / "test_data_set_0";
    std::map<std::string, Buffer<>> inputs;
    tessera::onnx::ImportOptions options;
    const ::onnx::NodeProto &node = proto.graph().node(0);
    std::set<std::string> shape_inputs;
    if (kShapeInputOps.count(node.op_type()))
        for (int i = 1; i < node.input_size(); ++i) shape_inputs.insert(node.input(i));
    std::set<std::string> initializers;
    for (const auto &t : proto.graph().initializer()) initializers.insert(t.name());
    int k = 0;
    for (const auto &in : proto.graph().input()) {
        if (initializers.count(in.name())) continue;
        const fs::path file = data / ("input_" + std::to_string(k++) + ".pb");
        Buffer<> b = as_declared(tessera::onnx::read_tensor_file(file.string()), in.type().tensor_type().elem_type());
        if (shape_inputs.count(in.name())) options.constant_inputs[in.name()] = b;
        else inputs[in.name()] = b;
    }
    const tessera::onnx::Model model = tessera::onnx::import((dir / "model.onnx").string(), options);
    // As `tessera run-model` compiles it: the graph compiler's host schedule (fusion, vectors, threads).
    tessera::host_schedules::model(model.pipeline);
    const std::vector<Buffer<>> out = model.run(inputs, Target::host());
    for (size_t i = 0; i < out.size(); ++i) {
        const Buffer<> expected =
            as_declared(tessera::onnx::read_tensor_file((data / ("output_" + std::to_string(i) + ".pb")).string()),
                        proto.graph().output(static_cast<int>(i)).type().tensor_type().elem_type());
        const std::string diff = onnx_test::compare(out[i], expected);
        if (!diff.empty()) return "output " + std::to_string(i) + ": " + diff;
    }
    return "";
}

TEST(OnnxNodeTests, ListedOpsPassOnTheHost) {
    ASSERT_TRUE(fs::is_directory(kNodeTests)) << "libonnx-testdata is not installed (cmake/debian-packages.txt)";
    std::map<std::string, std::pair<int, int>> per_op; // op -> (passed, directories)
    std::set<std::string> seen_excluded;
    int passed = 0, total = 0;
    std::vector<fs::path> dirs;
    for (const auto &e : fs::directory_iterator(kNodeTests)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const fs::path &dir : dirs) {
        const ::onnx::ModelProto proto = load_model(dir / "model.onnx");
        const std::string op = listed_op(proto);
        if (op.empty()) continue;
        const std::string name = dir.filename().string();
        ++total;
        ++per_op[op].second;
        std::string failure;
        try {
            failure = run_node_test(dir, proto);
        } catch (const Error &e) {
            failure = std::string("tessera::Error: ") + e.what();
        }
        const auto excluded = kExcluded.find(name);
        if (excluded != kExcluded.end()) {
            seen_excluded.insert(name);
            EXPECT_FALSE(failure.empty()) << name << " passes now: remove it from node_test_exclusions.inc";
            if (failure.empty()) ++passed, ++per_op[op].first;
            continue;
        }
        EXPECT_EQ(failure, "") << name;
        if (failure.empty()) ++passed, ++per_op[op].first;
    }
    for (const auto &[name, reason] : kExcluded) EXPECT_TRUE(seen_excluded.count(name)) << "excluded " << name << " is not a listed op's test";
    std::cout << "| op | passed / directories |\n|---|---|\n";
    for (const auto &[op, counts] : per_op) std::cout << "| " << op << " | " << counts.first << " / " << counts.second << " |\n";
    std::cout << "| **all** | **" << passed << " / " << total << "** |\n";
}

} // namespace
