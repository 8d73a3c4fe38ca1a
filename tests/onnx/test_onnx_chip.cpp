// Whole models on the chips and the graph compiler's fusion (issue 16): the small models of
// small_models.py partitioned into fused chip kernels (compile_model_for_chip), run in sequence
// on chipsim and checked against the reference evaluator on the unfused graph, within the chips'
// bf16 tolerance 3e-2 × max(1, max|y|); and the fusion schedule on the host, which must not
// change any value.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "onnx_test_util.h"
#include "tessera/codegen/backends.h"
#include "tessera/codegen/chip_model.h"
#include "tessera/fusion.h"
#include "tessera/onnx.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

const fs::path &models_dir() {
    static const fs::path dir = [] {
        const fs::path d = tessera_test::unique_temp_dir();
        const auto r = tessera_test::run_command("/usr/bin/python3 '" TESSERA_SOURCE_DIR "/tests/onnx/small_models.py' '" + d.string() + "'");
        EXPECT_EQ(r.status, 0) << r.err;
        return d;
    }();
    return dir;
}

onnx::Model import_model(const std::string &name) {
    return onnx::import((models_dir() / (name + ".onnx")).string(), {.dims = {{"N", 2}}});
}

std::map<std::string, Buffer<>> model_inputs(const onnx::Model &m, const std::string &name) {
    return {{m.inputs.at(0).name, Buffer<>::load_npy((models_dir() / (name + ".in_0.npy")).string())}};
}

/// "" when `actual` is within `relative` × max(1, max|expected|) of `expected` everywhere.
std::string within(const Buffer<> &actual, const Buffer<> &expected, double relative) {
    if (actual.shape() != expected.shape()) return "shapes differ";
    const std::vector<double> a = onnx_test::flat_values(actual), e = onnx_test::flat_values(expected);
    double scale = 1;
    for (double v : e) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i)
        if (!(std::fabs(a[i] - e[i]) <= relative * scale))
            return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs reference " + std::to_string(e[i]);
    return "";
}

using ChipCase = std::tuple<std::string, std::string>; // model, target

class ModelOnChip : public testing::TestWithParam<ChipCase> {};

TEST_P(ModelOnChip, RunsAsFusedKernelsWithinBf16ToleranceOfTheReference) {
    const auto &[name, target] = GetParam();
    const onnx::Model m = import_model(name);
    const Bindings bindings = m.bindings(model_inputs(m, name));
    const ChipModelProgram program = compile_model_for_chip(m.pipeline, m.values, Target::named(target));
    const ChipModelResult r = run_model_on_chip(program, bindings);
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    ASSERT_EQ(r.outputs.size(), reference.size());
    for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(within(r.outputs[i], reference[i], 3e-2), "") << "output " << i;
    ASSERT_EQ(r.kernels.size(), program.kernels.size());
    int64_t sum = 0;
    size_t fused = 0;
    for (size_t k = 0; k < r.kernels.size(); ++k) {
        EXPECT_GT(r.kernels[k].report.cycles, 0) << r.kernels[k].label;
        sum += r.kernels[k].report.cycles;
        fused += program.kernels[k].fused.size();
    }
    EXPECT_EQ(r.cycles, sum);
    EXPECT_EQ(fused, m.values.size()) << "every graph value is computed in exactly one kernel";
}

INSTANTIATE_TEST_SUITE_P(Models, ModelOnChip,
                         testing::Combine(testing::Values("mlp", "mlp_gelu", "conv_net", "resnet_block", "cleanup"),
                                          testing::Values("tsp-mini", "npu-edge")),
                         [](const testing::TestParamInfo<ChipCase> &i) {
                             std::string s = std::get<0>(i.param) + "_" + std::get<1>(i.param);
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

TEST(ModelOnChip, AnMlpBecomesOneKernelPerLayerWithItsBiasAndReluFused) {
    const onnx::Model m = import_model("mlp");
    const ChipModelProgram program = compile_model_for_chip(m.pipeline, m.values, Target::named("tsp-mini"));
    ASSERT_EQ(program.kernels.size(), 3u);
    EXPECT_EQ(program.kernels[0].fused, (std::vector<std::string>{"node 'fc1' (MatMul)", "node 'bias1' (Add)", "node 'relu1' (Relu)"}));
    EXPECT_EQ(program.kernels[2].label, "node 'fc3' (Gemm)");
}

TEST(ModelOnChip, AHostTargetIsRefused) {
    const onnx::Model m = import_model("mlp");
    try {
        compile_model_for_chip(m.pipeline, m.values, Target::host());
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("is not a chip"), std::string::npos) << e.what();
    }
}

class FusionSchedule : public testing::TestWithParam<std::string> {};

TEST_P(FusionSchedule, KeepsEveryValueOnTheHost) {
    const std::string name = GetParam();
    const onnx::Model m = import_model(name);
    const Bindings bindings = m.bindings(model_inputs(m, name));
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    apply_fusion_schedule(m.pipeline);
    const std::vector<Buffer<>> fused = m.pipeline.realize(m.realize_shapes(), bindings, Target::host());
    for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(onnx_test::compare(fused[i], reference[i]), "") << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, FusionSchedule,
                         testing::Values("resnet_block", "mlp_gelu", "inverted_residual", "qdq_conv", "cleanup", "shape_arithmetic", "mlp", "conv_net"));

TEST(FusionSchedule, FusesTheMatmulIntoItsEpilogueAndInlinesElementwiseChains) {
    const onnx::Model m = import_model("mlp");
    apply_fusion_schedule(m.pipeline);
    const std::string s = m.pipeline.schedule().to_json();
    EXPECT_NE(s.find("compute_at"), std::string::npos) << s;
    EXPECT_NE(s.find("compute_inline"), std::string::npos) << s;
}

} // namespace
