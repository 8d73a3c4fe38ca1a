// ONNX's backend node tests (Debian's libonnx-testdata: data/node/<test>/model.onnx with
// test_data_set_0/input_N.pb and output_N.pb) for the ops issue 16 lists, imported and run on
// the host (LLVM JIT) and compared with output_N.pb. Every directory of a listed op must pass
// unless it is excluded below with its reason; an excluded one that passes fails the test too,
// so the list stays honest. The same directories run on both chips through the graph compiler
// (as `run-model` runs them): a directory whose op or dtype the chip does not have is refused
// with a tessera::Error and counted so, and every one the chip compiles must give output_N.pb
// within the chips' bound. The per-op counts are printed for the README's tables.
#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <onnx/onnx_pb.h>

#include "onnx_test_util.h"
#include "tessera/codegen/backends.h"
#include "tessera/codegen/chip_model.h"
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

/// One test directory's model and inputs, imported as `tessera run-model` imports them.
struct NodeTest {
    tessera::onnx::Model model;
    std::map<std::string, Buffer<>> inputs;
    std::vector<Buffer<>> expected;
};

NodeTest load_node_test(const fs::path &dir, const ::onnx::ModelProto &proto) {
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
    NodeTest t{tessera::onnx::import((dir / "model.onnx").string(), options), inputs, {}};
    for (int i = 0; i < proto.graph().output_size(); ++i)
        t.expected.push_back(as_declared(tessera::onnx::read_tensor_file((data / ("output_" + std::to_string(i) + ".pb")).string()),
                                         proto.graph().output(i).type().tensor_type().elem_type()));
    return t;
}

/// Runs one test directory on the host; "" when the outputs match.
std::string run_node_test(const fs::path &dir, const ::onnx::ModelProto &proto) {
    const NodeTest t = load_node_test(dir, proto);
    // As `tessera run-model` compiles it: the graph compiler's host schedule (fusion, vectors, threads).
    tessera::host_schedules::model(t.model.pipeline);
    const std::vector<Buffer<>> out = t.model.run(t.inputs, Target::host());
    for (size_t i = 0; i < out.size(); ++i) {
        const std::string diff = onnx_test::compare(out[i], t.expected.at(i));
        if (!diff.empty()) return "output " + std::to_string(i) + ": " + diff;
    }
    return "";
}

/// The directories of listed ops, sorted, with their op.
std::vector<std::pair<fs::path, std::string>> listed_directories() {
    std::vector<fs::path> dirs;
    for (const auto &e : fs::directory_iterator(kNodeTests)) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    std::vector<std::pair<fs::path, std::string>> out;
    for (const fs::path &dir : dirs)
        if (const std::string op = listed_op(load_model(dir / "model.onnx")); !op.empty()) out.emplace_back(dir, op);
    return out;
}

TEST(OnnxNodeTests, ListedOpsPassOnTheHost) {
    ASSERT_TRUE(fs::is_directory(kNodeTests)) << "libonnx-testdata is not installed (cmake/debian-packages.txt)";
    std::map<std::string, std::pair<int, int>> per_op; // op -> (passed, directories)
    std::set<std::string> seen_excluded;
    int passed = 0, total = 0;
    for (const auto &[dir, op] : listed_directories()) {
        const ::onnx::ModelProto proto = load_model(dir / "model.onnx");
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

/// On a chip: every directory the host passes either runs within the chips' bound (fp32 and
/// fp16 through the bf16 MXM and fp32 VXM: 3e-2 × max(1, max|y|), as `run-model` checks;
/// integers exactly) or is refused with a tessera::Error (the op or dtype is not on the chip).
class OnnxNodeTestsOnChip : public testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTestsOnChip, RunWithinTheChipsBoundOrAreRefused) {
    ASSERT_TRUE(fs::is_directory(kNodeTests)) << "libonnx-testdata is not installed (cmake/debian-packages.txt)";
    const Target chip = Target::named(GetParam());
    std::map<std::string, std::array<int, 3>> per_op; // op -> (passed, refused, directories)
    std::map<std::string, int> reasons;               // the refusals' first words -> count
    int passed = 0, refused = 0, total = 0;
    for (const auto &[dir, op] : listed_directories()) {
        const std::string name = dir.filename().string();
        if (kExcluded.count(name)) continue; // not even the host runs it
        ++total;
        ++per_op[op][2];
        const ::onnx::ModelProto proto = load_model(dir / "model.onnx");
        const NodeTest t = load_node_test(dir, proto);
        ChipModelProgram program;
        try {
            program = compile_model_for_chip(t.model.pipeline, t.model.values, chip);
        } catch (const Error &e) {
            ++refused;
            ++per_op[op][1];
            // Why, without the node's name: "... cannot run on npu-edge even as a kernel of its own: <why>".
            std::string why = e.what();
            if (const size_t at = why.find("of its own: "); at != std::string::npos) why = op + ": " + why.substr(at + 12);
            ++reasons[why.substr(0, std::min<size_t>(why.size(), 110))];
            continue;
        }
        std::string failure;
        try {
            const ChipModelResult r = run_model_on_chip(program, t.model.bindings(t.inputs));
            for (size_t i = 0; i < r.outputs.size() && failure.empty(); ++i) {
                const Buffer<> &want = t.expected.at(i);
                const std::string diff = want.type().is_float() ? onnx_test::within(r.outputs[i], want, 3e-2) : onnx_test::compare(r.outputs[i], want);
                if (!diff.empty()) failure = "output " + std::to_string(i) + ": " + diff;
            }
        } catch (const Error &e) {
            failure = std::string("compiled, then failed to run: ") + e.what();
        }
        EXPECT_EQ(failure, "") << name << " on " << GetParam();
        if (failure.empty()) ++passed, ++per_op[op][0];
    }
    std::cout << "| op | " << GetParam() << ": passed / refused / directories |\n|---|---|\n";
    for (const auto &[op, c] : per_op) std::cout << "| " << op << " | " << c[0] << " / " << c[1] << " / " << c[2] << " |\n";
    std::cout << "| **all** | **" << passed << " / " << refused << " / " << total << "** |\n";
    for (const auto &[why, n] : reasons) std::cout << "refused " << n << "x: " << why << "\n";
}

INSTANTIATE_TEST_SUITE_P(Chips, OnnxNodeTestsOnChip, testing::Values("tsp-mini", "npu-edge"));

} // namespace
