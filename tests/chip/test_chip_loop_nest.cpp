// Pipelines a kernel writer writes by hand — none built with tessera::ops — compiled for both
// chips from their loop nests (loop_nest_codegen.h) and checked against the reference
// evaluator: norms, reductions along each axis, stencils, multi-stage pipelines, compute_at,
// odd shapes. The default chip rule picks the lanes where the schedule does not.
#include "chip_test_util.h"

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

class ChipLoopNest : public ::testing::TestWithParam<std::string> {};

const Tolerance kFp32 = Tolerance::for_type(Float(32));

/// Compiles `p` for the chip, checks it went through the loop-nest compiler, runs it and
/// compares every output with the reference evaluator.
ChipResult expect_loop_nest_matches(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const Bindings &b,
                                    const std::string &chip, Tolerance tol = kFp32) {
    const std::vector<Buffer<>> ref = p.realize(shapes, b, Target::reference());
    ChipProgram cp = compile_for_chip(p, Target::named(chip), shapes, b);
    EXPECT_NE(cp.summary.find("compiled from the loop nest"), std::string::npos) << cp.summary;
    ChipResult r = run_on_chip(cp, b);
    for (size_t o = 0; o < ref.size(); ++o) {
        Comparison c = compare(r.outputs.at(o), ref[o], tol);
        EXPECT_TRUE(c.equal) << chip << ", output " << o << ": " << c.message << "\n" << cp.summary << cp.assembly;
    }
    return r;
}

TEST_P(ChipLoopNest, RmsNormWrittenByHand) {
    const std::string chip = GetParam();
    const int rows = 37, cols = 50;
    Input X(Float(32), {rows, cols}, "X"), W(Float(32), {cols}, "W");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func ss("sum_squares"), norm("rms_normalized");
    ss(y) = 0.0f;
    ss(y) += X(y, r) * X(y, r);
    norm(y, x) = X(y, x) * rsqrt(ss(y) / float(cols) + 1e-6f) * W(x);
    expect_loop_nest_matches(Pipeline(norm), {{rows, cols}},
                             {{X, test::random_buffer(Float(32), {rows, cols}, 1)}, {W, test::random_buffer(Float(32), {cols}, 2)}}, chip);
}

TEST_P(ChipLoopNest, RowSumsAndColumnSums) {
    const std::string chip = GetParam();
    const int rows = 45, cols = 70;
    Input X(Float(32), {rows, cols}, "X");
    Var i("i");
    RDom rc(0, cols, "c"), rr(0, rows, "r");
    Func row_sum("row_sum"), col_sum("col_sum");
    row_sum(i) = 0.0f;
    row_sum(i) += X(i, rc);
    col_sum(i) = 0.0f;
    col_sum(i) += X(rr, i);
    const Bindings b{{X, test::random_buffer(Float(32), {rows, cols}, 3)}};
    expect_loop_nest_matches(Pipeline(row_sum), {{rows}}, b, chip, Tolerance::for_type(Float(32), cols));
    expect_loop_nest_matches(Pipeline(col_sum), {{cols}}, b, chip, Tolerance::for_type(Float(32), rows));
}

TEST_P(ChipLoopNest, SoftmaxWrittenByHand) {
    const std::string chip = GetParam();
    const int rows = 20, cols = 33;
    Input X(Float(32), {rows, cols}, "logits");
    Var y("y"), x("x");
    RDom r(0, cols, "r");
    Func mx("row_max"), e("shifted_exp"), total("total"), prob("prob");
    mx(y) = -1e30f;
    mx(y) = max(mx(y), X(y, r));
    e(y, x) = exp(X(y, x) - mx(y));
    total(y) = 0.0f;
    total(y) += e(y, r);
    prob(y, x) = e(y, x) / total(y);
    e.compute_root();
    expect_loop_nest_matches(Pipeline(prob), {{rows, cols}}, {{X, test::random_buffer(Float(32), {rows, cols}, 4)}}, chip);
}

TEST_P(ChipLoopNest, ThreeTapBlurAndSeparableBlur) {
    const std::string chip = GetParam();
    const int h = 30, w = 41;
    Input in(Float(32), {h + 2, w + 2}, "image");
    Var x("x"), y("y");
    Func blur3("blur3"), bx("blur_x"), by("blur_y");
    blur3(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    bx(y, x) = (in(y, x) + in(y, x + 1) + in(y, x + 2)) / 3.0f;
    by(y, x) = (bx(y, x) + bx(y + 1, x) + bx(y + 2, x)) / 3.0f;
    bx.compute_root();
    const Bindings b{{in, test::random_buffer(Float(32), {h + 2, w + 2}, 5)}};
    expect_loop_nest_matches(Pipeline(blur3), {{h + 2, w}}, b, chip);
    expect_loop_nest_matches(Pipeline(by), {{h, w}}, b, chip);
}

TEST_P(ChipLoopNest, Int32RowMaxAndColumnMinAreExact) {
    const std::string chip = GetParam();
    Input A(Int(32), {19, 23}, "A");
    Var i("i");
    RDom rc(0, 23, "c"), rr(0, 19, "r");
    Func hi("row_max"), lo("col_min");
    hi(i) = A(i, 0);
    hi(i) = max(hi(i), A(i, rc));
    lo(i) = A(0, i);
    lo(i) = min(lo(i), A(rr, i));
    const Bindings b{{A, test::random_buffer(Int(32), {19, 23}, 6)}};
    expect_loop_nest_matches(Pipeline(hi), {{19}}, b, chip, Tolerance{});
    expect_loop_nest_matches(Pipeline(lo), {{23}}, b, chip, Tolerance{});
}

TEST_P(ChipLoopNest, AReductionThatIsNotAProductRunsOnTheVxm) {
    // Once refused ("not a product"): the sum of a row and a column read, reduced in time.
    const std::string chip = GetParam();
    Input X(Int(32), {40, 40}, "X");
    Func S("S");
    Var i("i"), j("j");
    RDom k(0, 40, "k");
    S(i, j) = 0;
    S(i, j) += X(i, k) + X(k, j);
    expect_loop_nest_matches(Pipeline(S), {{40, 40}}, {{X, test::random_buffer(Int(32), {40, 40}, 7)}}, chip, Tolerance{});
}

TEST_P(ChipLoopNest, MeanDividesByAConvertedCount) {
    const std::string chip = GetParam();
    Input X(Float(32), {6, 20}, "X");
    Var i("i");
    RDom r(0, 20, "r");
    Func sum("sum"), mean("mean");
    sum(i) = 0.0f;
    sum(i) += X(i, r);
    mean(i) = sum(i) / cast(Float(32), Expr(20));
    expect_loop_nest_matches(Pipeline(mean), {{6}}, {{X, test::random_buffer(Float(32), {6, 20}, 8)}}, chip, Tolerance::for_type(Float(32), 20));
}

TEST_P(ChipLoopNest, LibraryOpsWithoutAChipKernel) {
    // log_softmax (once refused as a softmax lookalike), the erf form of GELU (erf and log are
    // expanded into VXM sequences: vxm_expansions.h), rmsnorm, max pooling, leaky ReLU (a
    // comparison and a select) and a mean over the last axis.
    const std::string chip = GetParam();
    Input X(Float(32), {9, 40}, "X"), I(Float(32), {1, 3, 9, 11}, "I");
    const Bindings b{{X, test::random_buffer(Float(32), {9, 40}, 9)}, {I, test::random_buffer(Float(32), {1, 3, 9, 11}, 10)}};
    expect_loop_nest_matches(Pipeline(ops::log_softmax(X)), {{9, 40}}, b, chip, Tolerance::for_type(Float(32), 40));
    expect_loop_nest_matches(Pipeline(ops::gelu(X)), {{9, 40}}, b, chip);
    expect_loop_nest_matches(Pipeline(ops::rmsnorm(X)), {{9, 40}}, b, chip, Tolerance::for_type(Float(32), 40));
    expect_loop_nest_matches(Pipeline(ops::leaky_relu(X, 0.1f)), {{9, 40}}, b, chip);
    ops::Pool2dOptions pool;
    pool.kernel = {3, 3};
    pool.stride = {2, 2};
    expect_loop_nest_matches(Pipeline(ops::max_pool2d(I, pool)), {{1, 3, 4, 5}}, b, chip, Tolerance{});
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipLoopNest, ::testing::Values("tsp-mini", "npu-edge"));

} // namespace
} // namespace tessera
