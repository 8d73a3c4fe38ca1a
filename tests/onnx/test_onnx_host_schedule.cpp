// The graph compiler's host schedule (host_schedules::model): fusion decisions that never
// recompute a value per reduction step, vectors and threads on every computed Func — and the
// same values as the reference evaluator on every small model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "onnx_test_util.h"
#include "tessera/codegen/chip_model.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/fusion.h"
#include "tessera/internal/function.h"
#include "tessera/onnx.h"
#include "test_support.h"

namespace {

using namespace tessera;

onnx::Model import_model(const std::string &name) {
    return onnx::import((onnx_test::small_models_dir() / (name + ".onnx")).string(), {.dims = {{"N", 2}}});
}

bool has_directive(const Func &f, int stage, DirectiveKind kind) {
    for (const Directive &d : f.contents()->schedule.stage(stage))
        if (d.kind == kind) return true;
    return false;
}

const std::vector<std::string> kModels = {"resnet_block", "mlp_gelu",   "inverted_residual", "qdq_conv",           "cleanup",
                                           "shape_arithmetic", "mlp",   "conv_net",          "bert_layer",         "lstm",
                                           "lstm_cell",  "mlp_gelu_tanh", "qdq_matmul",      "qdq_matmul_per_row", "qdq_conv_per_channel",
                                           "qdq_matmul_symmetric"};

class HostModelSchedule : public testing::TestWithParam<std::string> {};

TEST_P(HostModelSchedule, GivesTheReferenceValues) {
    const std::string name = GetParam();
    const onnx::Model m = import_model(name);
    const Bindings bindings =
        m.bindings({{m.inputs.at(0).name, Buffer<>::load_npy((onnx_test::small_models_dir() / (name + ".in_0.npy")).string())}});
    const std::vector<Buffer<>> reference = m.pipeline.realize(m.realize_shapes(), bindings, Target::reference());
    host_schedules::model(m.pipeline);
    const std::vector<Buffer<>> scheduled = m.pipeline.realize(m.realize_shapes(), bindings, Target::host());
    for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(onnx_test::compare(scheduled[i], reference[i]), "") << "output " << i;
}

INSTANTIATE_TEST_SUITE_P(Models, HostModelSchedule, testing::ValuesIn(kModels));

TEST(HostModelSchedule, NoValueIsInlinedIntoAReductionStep) {
    // The MLP's first ReLU is read by the second layer's matmul inside its sum: inlined, it would
    // be computed once per step of that sum (64 times per element).
    for (const std::string &name : kModels) {
        const onnx::Model m = import_model(name);
        apply_fusion_schedule(m.pipeline);
        int reduction_reads = 0;
        for (const Func &f : m.pipeline.functions())
            for (const internal::Definition &u : f.contents()->updates) {
                if (!u.rdom) continue;
                for (const Expr &e : internal::definition_exprs(u))
                    for (const Func &producer : internal::called_functions(e)) {
                        if (producer.name() == f.name()) continue;
                        ++reduction_reads;
                        EXPECT_FALSE(has_directive(producer, 0, DirectiveKind::ComputeInline))
                            << name << ": " << producer.name() << " is inlined into " << f.name() << "'s reduction";
                    }
            }
        if (name == "mlp") EXPECT_GE(reduction_reads, 2) << "the second and third layers read the layer before in their sums";
    }
}

TEST(HostModelSchedule, VectorizesEveryComputedFuncAtTheHostsWidthAndThreadsTheRootOnes) {
    const onnx::Model m = import_model("mlp");
    host_schedules::model(m.pipeline);
    const int lanes = host_features().float_lanes();
    int computed = 0, parallel = 0;
    for (const Func &f : m.pipeline.functions()) {
        if (has_directive(f, 0, DirectiveKind::ComputeInline)) continue;
        ++computed;
        bool vectorized = false;
        for (const Directive &d : f.contents()->schedule.stage(0))
            vectorized = vectorized || (d.kind == DirectiveKind::Vectorize && !d.factors.empty() && d.factors[0] == lanes);
        EXPECT_TRUE(vectorized) << f.name() << " is not vectorized at " << lanes << " lanes:\n" << m.pipeline.schedule().to_string();
        parallel += has_directive(f, 0, DirectiveKind::Parallel);
        for (int u = 0; u < f.num_updates(); ++u)
            EXPECT_TRUE(has_directive(f, u + 1, DirectiveKind::Vectorize)) << f.name() << " update " << u;
    }
    EXPECT_GE(computed, 4) << "three matmuls and the model's output are computed";
    EXPECT_GE(parallel, 2) << "the root Funcs run their rows in parallel:\n" << m.pipeline.schedule().to_string();
}

TEST(ModelFusionGroups, PutEachConvWithItsEpilogueAndCoverEveryValueOnce) {
    // resnet_block after the passes: conv1 (BatchNorm folded) + ReLU, conv2 + residual Add + ReLU.
    const onnx::Model m = import_model("resnet_block");
    const std::vector<ModelFusionGroup> groups = model_fusion_groups(m.pipeline, m.values);
    std::map<std::string, std::string> label_of;
    for (const GraphValue &v : m.values) label_of[v.func.name()] = v.label;
    std::vector<std::vector<std::string>> seen;
    size_t members = 0;
    for (const ModelFusionGroup &g : groups) {
        ASSERT_FALSE(g.members.empty());
        EXPECT_EQ(g.members.back(), g.head) << "the head is computed last";
        std::vector<std::string> ops;
        for (const std::string &v : g.members) ops.push_back(label_of.at(v).substr(label_of.at(v).rfind('(')));
        seen.push_back(ops);
        members += g.members.size();
    }
    EXPECT_EQ(members, m.values.size()) << "every graph value is in exactly one group";
    const std::vector<std::vector<std::string>> expected = {{"(Conv)", "(Relu)"}, {"(Conv)", "(Add)", "(Relu)"}};
    EXPECT_EQ(seen, expected);
}

TEST(ModelFusionGroups, TesseraImportListsThemWithTheirMacs) {
    const std::string cli = TESSERA_BINARY_DIR "/apps/cli/tessera";
    const auto r = tessera_test::run_command("'" + cli + "' import '" + (onnx_test::small_models_dir() / "mlp.onnx").string() +
                                             "' --dim N=2 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const onnx::Model m = import_model("mlp");
    int64_t node_macs = 0, group_macs = 0, matmul_groups = 0;
    for (const onnx::ModelNode &n : m.nodes) node_macs += n.macs;
    ASSERT_TRUE(j.contains("fusion_groups")) << r.out;
    for (const nlohmann::json &g : j.at("fusion_groups")) {
        group_macs += g.at("macs").get<int64_t>();
        matmul_groups += g.at("macs").get<int64_t>() > 0;
        EXPECT_EQ(g.at("values").back(), g.at("head"));
    }
    EXPECT_GT(node_macs, 0);
    EXPECT_EQ(group_macs, node_macs) << "the groups' MACs are the nodes' MACs, each counted once";
    EXPECT_EQ(matmul_groups, 3) << "three fully connected layers, three groups with MACs:\n" << r.out;
}

} // namespace
