// Matrix stages compiled from the loop nest (loop_nest_codegen.h): updates that multiply two
// reads, written by hand under the user's own names, reach the MXM stage by stage — several of
// them in one program with vector work between (an MLP block, an int8 requantisation chain,
// nn.Linear's transposed weights, a batch of matmuls), checked against the reference evaluator
// on both chips and on edited targets.
#include "chip_test_util.h"
#include "test_support.h"

#include <tessera/chipsim/target.h>

#include <fstream>
#include <map>

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

class ChipMatrixStages : public ::testing::TestWithParam<std::string> {};

std::string chip_target(const std::string &variant) { return test::edited_chip_target(variant); }

/// Compiles `p`, checks the loop-nest compiler took it and the MXM did the products, runs it
/// and compares every output with the reference evaluator.
ChipResult expect_mxm_loop_nest(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const Bindings &b,
                                const std::string &chip, Tolerance tol) {
    const std::vector<Buffer<>> ref = p.realize(shapes, b, Target::reference());
    ChipProgram cp = compile_for_chip(p, Target::named(chip), shapes, b);
    EXPECT_NE(cp.summary.find("compiled from the loop nest"), std::string::npos) << cp.summary;
    EXPECT_NE(cp.assembly().find("mxm.mm"), std::string::npos) << "the products go to the MXM";
    EXPECT_NE(cp.summary.find("matrix stages on the MXM"), std::string::npos) << cp.summary;
    ChipResult r = run_on_chip(cp, b);
    EXPECT_GT(r.report.macs, 0);
    for (size_t o = 0; o < ref.size(); ++o) {
        Comparison c = compare(r.outputs.at(o), ref[o], tol);
        EXPECT_TRUE(c.equal) << chip << ", output " << o << ": " << c.message << "\n" << cp.summary;
    }
    return r;
}

TEST_P(ChipMatrixStages, MlpBlockOfTwoMatmulsInOneProgram) {
    // y = relu(x·W1 + b1)·W2: the hidden activations stay on chip between the two matmuls.
    const std::string chip = chip_target(GetParam());
    const int M = 40, K = 72, H = 48, N = 40;
    Input x(Float(32), {M, K}, "x"), w1(Float(32), {K, H}, "w1"), b1(Float(32), {H}, "b1"), w2(Float(32), {H, N}, "w2");
    Var i("i"), j("j");
    RDom k(0, K, "k"), h(0, H, "h");
    Func hidden("hidden"), act("act"), y("y");
    hidden(i, j) = 0.0f;
    hidden(i, j) += x(i, k) * w1(k, j);
    act(i, j) = max(hidden(i, j) + b1(j), 0.0f);
    y(i, j) = 0.0f;
    y(i, j) += act(i, h) * w2(h, j);
    const Bindings b{{x, test::random_buffer(Float(32), {M, K}, 1)},
                     {w1, test::random_buffer(Float(32), {K, H}, 2)},
                     {b1, test::random_buffer(Float(32), {H}, 3)},
                     {w2, test::random_buffer(Float(32), {H, N}, 4)}};
    // Operands are rounded to bf16 on their way into the MXM, twice in a row here.
    expect_mxm_loop_nest(Pipeline(y), {{M, N}}, b, chip, Tolerance::for_type(BFloat(16), K + H));
}

TEST_P(ChipMatrixStages, ActivationLanesPastTheReductionDoNotPoisonTheProduct) {
    // 1 / (h² + b) is finite on every real element (b = 1.5) but infinite on the lanes past the
    // 40 hidden features, where h and b are zero padding; those lanes meet zero weight rows.
    const std::string chip = chip_target(GetParam());
    const int M = 24, K = 32, H = 40, N = 20;
    Input x(Float(32), {M, K}, "x"), w1(Float(32), {K, H}, "w1"), b(Float(32), {H}, "b"), w2(Float(32), {H, N}, "w2");
    Var i("i"), j("j");
    RDom k(0, K, "k"), h(0, H, "h");
    Func hidden("hidden"), y("y");
    hidden(i, j) = 0.0f;
    hidden(i, j) += x(i, k) * w1(k, j);
    y(i, j) = 0.0f;
    y(i, j) += 1.0f / (hidden(i, h) * hidden(i, h) + b(h)) * w2(h, j);
    Buffer<> bias(Float(32), {H});
    bias.fill(1.5);
    const Bindings bindings{{x, test::random_buffer(Float(32), {M, K}, 13)},
                            {w1, test::random_buffer(Float(32), {K, H}, 14)},
                            {b, bias},
                            {w2, test::random_buffer(Float(32), {H, N}, 15)}};
    expect_mxm_loop_nest(Pipeline(y), {{M, N}}, bindings, chip, Tolerance::for_type(BFloat(16), K + H));
}

TEST_P(ChipMatrixStages, Int8RequantisedTwoLayerChainIsExact) {
    const std::string chip = chip_target(GetParam());
    const int M = 33, K = 80, H = 40, N = 24;
    Input x(Int(8), {M, K}, "x"), w1(Int(8), {K, H}, "w1"), w2(Int(8), {H, N}, "w2");
    Var i("i"), j("j");
    RDom k(0, K, "k"), h(0, H, "h");
    Func l1("l1"), q("q"), l2("l2");
    l1(i, j) = 0;
    l1(i, j) += cast(Int(32), x(i, k)) * cast(Int(32), w1(k, j));
    q(i, j) = cast(Int(8), clamp(round(cast(Float(32), l1(i, j)) * 0.015625f), -128.0f, 127.0f));
    l2(i, j) = 0;
    l2(i, j) += cast(Int(32), q(i, h)) * cast(Int(32), w2(h, j));
    const Bindings b{{x, test::random_buffer(Int(8), {M, K}, 5)},
                     {w1, test::random_buffer(Int(8), {K, H}, 6)},
                     {w2, test::random_buffer(Int(8), {H, N}, 7)}};
    expect_mxm_loop_nest(Pipeline(l2), {{M, N}}, b, chip, Tolerance{});
}

TEST_P(ChipMatrixStages, LinearLayerWithTransposedWeightsAndTwoOutputs) {
    // nn.Linear: y = x·Wᵀ (W stored [out, in]); the host lays W out for the MXM. A second
    // output, the column sums of y, is vector work on the product.
    const std::string chip = chip_target(GetParam());
    const int M = 24, K = 50, N = 36;
    Input x(Float(32), {M, K}, "x"), w(Float(32), {N, K}, "w");
    Var i("i"), j("j");
    RDom k(0, K, "k"), r(0, M, "r");
    Func y("y"), cols("column_sums");
    y(i, j) = 0.0f;
    y(i, j) += x(i, k) * w(j, k);
    cols(j) = 0.0f;
    cols(j) += y(r, j);
    const Bindings b{{x, test::random_buffer(Float(32), {M, K}, 8)}, {w, test::random_buffer(Float(32), {N, K}, 9)}};
    expect_mxm_loop_nest(Pipeline({y, cols}), {{M, N}, {N}}, b, chip, Tolerance::for_type(BFloat(16), K * M));
}

TEST_P(ChipMatrixStages, ChainedBatchedMatmulsUnrollTheBatch) {
    // (A·B)·C per batch: two batched products, the first kept on chip for the second.
    const std::string chip = chip_target(GetParam());
    const int G = 3, M = 20, K = 40, N = 32, P = 24;
    Input a(BFloat(16), {G, M, K}, "a"), bm(BFloat(16), {G, K, N}, "bm"), cm(BFloat(16), {G, N, P}, "cm");
    Var g("g"), i("i"), j("j");
    RDom k(0, K, "k"), n(0, N, "n");
    Func ab("ab"), abc("abc");
    ab(g, i, j) = 0.0f;
    ab(g, i, j) += cast(Float(32), a(g, i, k)) * cast(Float(32), bm(g, k, j));
    abc(g, i, j) = 0.0f;
    abc(g, i, j) += ab(g, i, n) * cast(Float(32), cm(g, n, j));
    const Bindings b{{a, test::random_buffer(BFloat(16), {G, M, K}, 10)},
                     {bm, test::random_buffer(BFloat(16), {G, K, N}, 11)},
                     {cm, test::random_buffer(BFloat(16), {G, N, P}, 12)}};
    expect_mxm_loop_nest(Pipeline(abc), {{G, M, P}}, b, chip, Tolerance::for_type(BFloat(16), K * N));
}

TEST_P(ChipMatrixStages, MatmulWithTwoBatchDimensionsUnrollsBoth) {
    // Attention's per-head product as ONNX has it: [batch, heads, M, N], one plain matmul of two
    // Inputs. The library matmul kernel takes one batch dimension; this reaches the matrix stages.
    const std::string chip = chip_target(GetParam());
    const int B = 2, H = 3, M = 17, K = 40, N = 24;
    Input p(Float(32), {B, H, M, K}, "p"), v(Float(32), {B, H, K, N}, "v");
    Var b0("b0"), h("h"), i("i"), j("j");
    RDom k(0, K, "k");
    Func ctx("ctx");
    ctx(b0, h, i, j) = 0.0f;
    ctx(b0, h, i, j) += p(b0, h, i, k) * v(b0, h, k, j);
    const Bindings b{{p, test::random_buffer(Float(32), {B, H, M, K}, 13)},
                     {v, test::random_buffer(Float(32), {B, H, K, N}, 14)}};
    expect_mxm_loop_nest(Pipeline(ctx), {{B, H, M, N}}, b, chip, Tolerance::for_type(BFloat(16), K));
}

TEST_P(ChipMatrixStages, WeightsComputedOnChipAreRefusedByName) {
    const std::string chip = chip_target(GetParam());
    Input x(Float(32), {16, 32}, "x"), w(Float(32), {32, 16}, "w");
    Var i("i"), j("j");
    RDom k(0, 32, "k");
    Func scaled("scaled_w"), y("y");
    scaled(i, j) = w(i, j) * 2.0f;
    scaled.compute_root();
    y(i, j) = 0.0f;
    y(i, j) += x(i, k) * scaled(k, j);
    test::expect_chip_error(Pipeline(y), {16, 16}, chip, "scaled_w as the MXM's weights");
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipMatrixStages, ::testing::Values("tsp-mini", "npu-edge"));
INSTANTIATE_TEST_SUITE_P(EditedTargets, ChipMatrixStages, ::testing::Values("tsp-mini-v32", "npu-edge-v32", "tsp-mini-2planes"),
                         [](const auto &info) { return test::test_name(info.param); });

} // namespace
} // namespace tessera
