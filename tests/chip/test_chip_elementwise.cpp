// Element-wise pipelines without a matmul on both chips' VXM, against the reference: broadcasts
// along rows and along lanes (read with stride 0 by the DMA), transcendental ops, rank 1 and 3,
// odd extents (padded lanes), and the forms the VXM cannot compute exactly.
#include "chip_test_util.h"

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

class ChipElementwise : public ::testing::TestWithParam<std::string> {};

TEST_P(ChipElementwise, BroadcastAddReluInt32IsExact) {
    const std::string chip = GetParam();
    Input A(Int(32), {37, 1}, "A"), B(Int(32), {1, 45}, "B"); // a column and a row
    Func y = ops::relu(ops::add(A, B));
    ChipResult r = test::expect_matches_reference_within(
        Pipeline(y), {37, 45}, {{A, test::random_buffer(Int(32), {37, 1}, 1)}, {B, test::random_buffer(Int(32), {1, 45}, 2)}}, chip,
        Tolerance{});
    EXPECT_NE(r.program.summary.find("element-wise on the VXM"), std::string::npos) << r.program.summary;
    EXPECT_EQ(r.report.macs, 0);
}

TEST_P(ChipElementwise, GeluTanhAndSigmoidFp32) {
    const std::string chip = GetParam();
    Input X(Float(32), {2, 9, 40}, "X");
    Func g = ops::gelu(X, ops::GeluApproximation::Tanh);
    Func s = ops::sigmoid(X);
    const Bindings bind{{X, test::random_buffer(Float(32), {2, 9, 40}, 3)}};
    test::expect_matches_reference_within(Pipeline(g), {2, 9, 40}, bind, chip, Tolerance::for_type(Float(32)));
    ChipResult r = test::expect_matches_reference_within(Pipeline(s), {2, 9, 40}, bind, chip, Tolerance::for_type(Float(32)));
    EXPECT_NE(r.program.assembly().find("exp"), std::string::npos);
}

TEST_P(ChipElementwise, ScaleShiftRank1WithAParameterVector) {
    const std::string chip = GetParam();
    Input X(Float(32), {1000}, "X"), W(Float(32), {1000}, "W");
    Func y("scaled");
    Var i("i");
    y(i) = X(i) * W(i) + 0.5f;
    test::expect_matches_reference_within(
        Pipeline(y), {1000}, {{X, test::random_buffer(Float(32), {1000}, 4)}, {W, test::random_buffer(Float(32), {1000}, 5)}}, chip,
        Tolerance::for_type(Float(32)));
}

TEST_P(ChipElementwise, WideRowsSplitIntoSeveralBlocks) {
    const std::string chip = GetParam();
    Input X(Float(32), {3, 9000}, "X"), b(Float(32), {9000}, "b");
    Func y = ops::add(X, b);
    test::expect_matches_reference_within(
        Pipeline(y), {3, 9000}, {{X, test::random_buffer(Float(32), {3, 9000}, 6)}, {b, test::random_buffer(Float(32), {9000}, 7)}},
        chip, Tolerance::for_type(Float(32)));
}

TEST_P(ChipElementwise, TwoOperandsLargerThanMemoryStayOnDifferentSlices) {
    // ResNet-50's residual add at 56x56x256 fp32: 6.4 MB of operands stream through tsp-mini's
    // 4 MiB in 256 blocks; once MEM is full, each block's two operand tiles still go to different
    // slices (one read port each), or the add reading both at once is a bank conflict.
    const std::string chip = GetParam();
    const std::vector<int64_t> shape{1, 256, 56, 56};
    Input A(Float(32), test::extents(shape), "A"), B(Float(32), test::extents(shape), "B");
    Func y = ops::add(A, B);
    test::expect_matches_reference_within(Pipeline(y), shape,
                                          {{A, test::random_buffer(Float(32), shape, 8)}, {B, test::random_buffer(Float(32), shape, 9)}},
                                          chip, Tolerance::for_type(Float(32)));
}

TEST_P(ChipElementwise, NarrowArithmeticAndGathersWiderThanARowAreRejectedWithTheReason) {
    const std::string chip = GetParam();
    Input A(Int(8), {8, 16}, "A"), B(Int(8), {8, 16}, "B"), C(Float(32), {8, 48}, "C");
    test::expect_chip_error(Pipeline(ops::add(A, B)), {8, 16}, chip, "int8 arithmetic wraps at 8 bits");
    // Every third element, clamped at the row's end: no strided run (the clamp breaks it) and
    // more than a row apart, so no window of one row holds the lanes.
    Func strided("strided");
    Var i("i"), j("j");
    strided(i, j) = C(i, min(j * 3, 40));
    test::expect_chip_error(Pipeline(strided), {8, 16}, chip, "more than a row");
}

TEST_P(ChipElementwise, StencilsAlongTheLanesClampedAtTheEdgesRun) {
    // A 3-tap blur along the rows, clamped at both edges, over rows of 40 (three chunks of
    // lanes, the last one partial), a one-step shift of int8, and a concat along the lanes:
    // each tap's lanes are a window of the row that an sxm.permute puts in place, the
    // concat's seam a comparison with the lane loop's own values.
    const std::string chip = GetParam();
    Input X(Float(32), {8, 40}, "X"), A(Int(8), {8, 16}, "A"), B(Float(32), {8, 3}, "B");
    Var i("i"), j("j");
    Func blur("blur"), shifted("shifted"), cat("cat");
    blur(i, j) = (X(i, clamp(j - 1, 0, 39)) + X(i, j) + X(i, clamp(j + 1, 0, 39))) * (1.0f / 3.0f);
    shifted(i, j) = A(i, clamp(j + 1, 0, 15));
    cat(i, j) = select(j < 40, X(i, min(j, 39)), B(i, max(j - 40, 0)));
    const Bindings bind{{X, test::random_buffer(Float(32), {8, 40}, 31)},
                        {A, test::random_buffer(Int(8), {8, 16}, 32)},
                        {B, test::random_buffer(Float(32), {8, 3}, 33)}};
    const ChipResult r = test::expect_matches_reference_within(Pipeline(blur), {8, 40}, bind, chip, Tolerance::for_type(Float(32), 3));
    EXPECT_NE(r.program.assembly().find("sxm.permute"), std::string::npos) << r.program.assembly();
    test::expect_matches_reference_within(Pipeline(shifted), {8, 16}, bind, chip, Tolerance::for_type(Int(8)));
    test::expect_matches_reference_within(Pipeline(cat), {8, 43}, bind, chip, Tolerance::for_type(Float(32)));
}

TEST_P(ChipElementwise, NarrowIntegerMinMaxAndSelectRunExactly) {
    // min, max and select never leave their operands' range, so the 32-bit lanes compute them
    // exactly and the store narrows them back: int8, uint8, int16 and uint16 run bit-exact, as
    // a user's clamp written by hand and a library max, where + would be refused.
    const std::string chip = GetParam();
    Var i("i"), j("j");
    for (Type t : {Int(8), UInt(8), Int(16), UInt(16)}) {
        SCOPED_TRACE(t.to_string());
        Input A(t, {8, 48}, "A"), B(t, {8, 48}, "B");
        Func clamped("clamped"), picked("picked");
        clamped(i, j) = min(max(A(i, j), B(i, j)), cast(t, 100));
        picked(i, j) = select(A(i, j) > B(i, j), B(i, j), A(i, j));
        const Bindings bind{{A, test::random_buffer(t, {8, 48}, 21)}, {B, test::random_buffer(t, {8, 48}, 22)}};
        for (const Func &f : {clamped, picked, ops::maximum(A, B).func(), ops::clip(A, 3, 90).func()})
            test::expect_matches_reference_within(Pipeline(f), {8, 48}, bind, chip, Tolerance::for_type(t));
    }
}

TEST_P(ChipElementwise, Bf16RoundsAfterEveryOpLikeTheReference) {
    // Every op rounds its fp32 result to bf16, on the chip as in the reference: + - * / min max
    // and relu are then bit-exact (double rounding through fp32 is harmless for them).
    const std::string chip = GetParam();
    Input A(BFloat(16), {7, 75}, "A"), B(BFloat(16), {7, 75}, "B"), C(BFloat(16), {75}, "C");
    Var i("i"), j("j");
    Func y("y");
    const Expr a = A(i, j), b = B(i, j), c = C(j);
    y(i, j) = max(a * b + c, a - b) / (max(c * c, Expr(bfloat16(0.5f))) + Expr(bfloat16(1.0f))) - min(a, c) * Expr(bfloat16(0.375f));
    const Bindings bind{{A, test::random_buffer(BFloat(16), {7, 75}, 8)},
                        {B, test::random_buffer(BFloat(16), {7, 75}, 9)},
                        {C, test::random_buffer(BFloat(16), {75}, 10)}};
    ChipResult r = test::expect_matches_reference_within(Pipeline(y), {7, 75}, bind, chip, Tolerance{});
    EXPECT_NE(r.program.assembly().find("vxm.mul.bf16 "), std::string::npos) << "computed in bf16 lanes\n" << r.program.assembly();
    EXPECT_EQ(r.program.assembly().find(" | "), std::string::npos) << "no chained ops: a chain rounds once";
}

TEST_P(ChipElementwise, Bf16TranscendentalsWithinOneRounding) {
    // exp and tanh: the VXM's fp32 functions against the reference's, both rounded to bf16.
    const std::string chip = GetParam();
    Input X(BFloat(16), {3, 5, 33}, "X");
    Func g = ops::gelu(X, ops::GeluApproximation::Tanh);
    test::expect_matches_reference_within(Pipeline(g), {3, 5, 33}, {{X, test::random_buffer(BFloat(16), {3, 5, 33}, 11)}}, chip,
                                          Tolerance::for_type(BFloat(16)));
}

TEST_P(ChipElementwise, Bf16MixedWithFp32RoundsEachBf16Op) {
    // bf16 and fp32 values together compute in fp32 lanes; the bf16 product is still rounded
    // to bf16 before the fp32 add (a cast there and back), so the result is bit-exact.
    const std::string chip = GetParam();
    Input A(BFloat(16), {4, 40}, "A"), B(Float(32), {4, 40}, "B");
    Var i("i"), j("j");
    Func y("y");
    y(i, j) = cast(Float(32), A(i, j) * A(i, j)) + B(i, j);
    ChipResult r = test::expect_matches_reference_within(
        Pipeline(y), {4, 40}, {{A, test::random_buffer(BFloat(16), {4, 40}, 12)}, {B, test::random_buffer(Float(32), {4, 40}, 13)}}, chip,
        Tolerance{});
    EXPECT_NE(r.program.assembly().find("cast.fp32.bf16"), std::string::npos) << r.program.assembly();
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipElementwise, ::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                         [](const auto &info) { return test::test_name(info.param); });

} // namespace
} // namespace tessera
