// Matmul with fused VXM epilogues (bias add, ReLU, GELU) and batched matmul, on both chips.
#include "chip_test_util.h"

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

using test::expect_matches_reference;

class ChipFused : public ::testing::TestWithParam<std::string> {};

TEST_P(ChipFused, Int8MatmulBiasRelu) {
    const std::string chip = GetParam();
    Input A(Int(8), {70, 96}, "A"), B(Int(8), {96, 80}, "B"), bias(Int(32), {80}, "bias");
    Func out = ops::relu(ops::add(ops::matmul(A, B), bias));
    Buffer<> a(Int(8), {70, 96}), b(Int(8), {96, 80}), c(Int(32), {80});
    a.fill_random(1);
    b.fill_random(2);
    c.fill_random(3);
    ChipResult r = expect_matches_reference(Pipeline(out), {70, 80}, {{A, a}, {B, b}, {bias, c}}, chip, Int(8));
    EXPECT_NE(r.program.assembly().find("vxm.add.int32"), std::string::npos) << r.program.assembly();
    EXPECT_NE(r.program.summary.find("VXM epilogue"), std::string::npos);
}

TEST_P(ChipFused, Int8MatmulBiasReluOverSeveralRowBands) {
    // 600 rows: several bands of output rows, each reading every column block's bias tile again
    // (on npu-edge those tiles share the scratchpad's slots with A, B and the drained tiles).
    const std::string chip = GetParam();
    const int m = 600, k = 256, n = 512;
    Input A(Int(8), {m, k}, "A"), B(Int(8), {k, n}, "B"), bias(Int(32), {n}, "bias");
    Func out = ops::relu(ops::add(ops::matmul(A, B), bias));
    Buffer<> a(Int(8), {m, k}), b(Int(8), {k, n}), c(Int(32), {n});
    a.fill_random(11);
    b.fill_random(12);
    c.fill_random(13);
    expect_matches_reference(Pipeline(out), {m, n}, {{A, a}, {B, b}, {bias, c}}, chip, Int(8));
}

TEST_P(ChipFused, Int8MatmulResidualAddWhoseLastRowBandIsShort) {
    // A residual operand with the output's shape (ResNet's shortcut add): 600 rows are a 512-row
    // band and an 88-row one, and the short band reads only its own rows of the operand (reading
    // a whole band's worth ran past the tensor's end on tsp-mini).
    const std::string chip = GetParam();
    const int m = 600, k = 64, n = 256;
    Input A(Int(8), {m, k}, "A"), B(Int(8), {k, n}, "B"), shortcut(Int(32), {m, n}, "shortcut");
    Func out = ops::relu(ops::add(ops::matmul(A, B), shortcut));
    Buffer<> a(Int(8), {m, k}), b(Int(8), {k, n}), s(Int(32), {m, n});
    a.fill_random(17);
    b.fill_random(18);
    s.fill_random(19);
    expect_matches_reference(Pipeline(out), {m, n}, {{A, a}, {B, b}, {shortcut, s}}, chip, Int(8));
}

TEST_P(ChipFused, StreamedBf16MatmulBiasRelu) {
    // B is 4.3 MB, over tsp-mini's 4 MiB of MEM: the streamed plan with a fused epilogue, whose
    // drained tiles and operands take east space the B buffers would otherwise use.
    const std::string chip = GetParam();
    const int m = 8, k = 1056, n = 2048;
    Input A(BFloat(16), {m, k}, "A"), B(BFloat(16), {k, n}, "B"), bias(Float(32), {n}, "bias");
    Func out = ops::relu(ops::add(ops::matmul(A, B), bias));
    Buffer<> a(BFloat(16), {m, k}), b(BFloat(16), {k, n}), c(Float(32), {n});
    a.fill_random(14);
    b.fill_random(15);
    c.fill_random(16);
    ChipResult r = expect_matches_reference(Pipeline(out), {m, n}, {{A, a}, {B, b}, {bias, c}}, chip, BFloat(16), k);
    if (chip == "tsp-mini") EXPECT_NE(r.program.summary.find("streamed on a plan"), std::string::npos) << r.program.summary;
}

TEST_P(ChipFused, MatmulSquaredReadsOneValueTwice) {
    // An epilogue step whose two operands are one value (p * p): on tsp-mini one tile read twice
    // at once would need its bank's port twice.
    const std::string chip = GetParam();
    Input A(Int(8), {40, 64}, "A"), B(Int(8), {64, 64}, "B");
    ops::Tensor p = ops::matmul(A, B);
    Func out = ops::mul(p, p);
    Buffer<> a(Int(8), {40, 64}), b(Int(8), {64, 64});
    a.fill_random(17);
    b.fill_random(18);
    expect_matches_reference(Pipeline(out), {40, 64}, {{A, a}, {B, b}}, chip, Int(8));
}

TEST_P(ChipFused, Bf16MatmulBiasGelu) {
    const std::string chip = GetParam();
    Input A(BFloat(16), {64, 64}, "A"), B(BFloat(16), {64, 96}, "B"), bias(Float(32), {96}, "bias");
    Func out = ops::gelu(ops::add(ops::matmul(A, B), bias), ops::GeluApproximation::Tanh);
    Buffer<> a(BFloat(16), {64, 64}), b(BFloat(16), {64, 96}), c(Float(32), {96});
    a.fill_random(4);
    b.fill_random(5);
    c.fill_random(6);
    ChipResult r = expect_matches_reference(Pipeline(out), {64, 96}, {{A, a}, {B, b}, {bias, c}}, chip, BFloat(16), 64);
    EXPECT_NE(r.program.assembly().find("tanh"), std::string::npos);
}

TEST_P(ChipFused, Int8MatmulRequantisedToInt8) {
    // int32 accumulator + bias, scaled in fp32, rounded half to even, clamped into int8: the
    // requantise step of an int8 network, fused on the VXM; exact against the reference.
    const std::string chip = GetParam();
    Input A(Int(8), {50, 96}, "A"), B(Int(8), {96, 70}, "B"), bias(Int(32), {70}, "bias");
    Func acc = ops::add(ops::matmul(A, B), bias);
    Func q("requantised");
    Var i("i"), j("j");
    q(i, j) = cast(Int(8), clamp(round(cast(Float(32), acc(i, j)) * 0.3f), -128, 127));
    Buffer<> a(Int(8), {50, 96}), b(Int(8), {96, 70}), c(Int(32), {70});
    a.fill_random(11);
    b.fill_random(12);
    c.fill_random(13);
    ChipResult r = expect_matches_reference(Pipeline(q), {50, 70}, {{A, a}, {B, b}, {bias, c}}, chip, Int(8));
    EXPECT_EQ(r.outputs.at(0).type(), Int(8));
    // Some results clamp and some do not, or the test would not see both paths.
    int clamped = 0, inside = 0;
    for (int64_t y = 0; y < 50; ++y)
        for (int64_t x = 0; x < 70; ++x) {
            const int64_t v = r.outputs.at(0).get_as_int({y, x});
            (v == 127 || v == -128 ? clamped : inside)++;
        }
    EXPECT_GT(clamped, 0);
    EXPECT_GT(inside, 0);
    EXPECT_NE(r.program.assembly().find("vxm.cast.fp32.int32"), std::string::npos) << r.program.assembly();
}

TEST_P(ChipFused, Int32ClampNarrowsToInt8) {
    // An integer clamp proves the range as well: both bounds of clamp(acc, -128, 127) reach the
    // narrowing cast.
    const std::string chip = GetParam();
    Input A(Int(8), {24, 64}, "A"), B(Int(8), {64, 40}, "B");
    Func acc = ops::matmul(A, B);
    Func q("saturated");
    Var i("i"), j("j");
    q(i, j) = cast(Int(8), clamp(acc(i, j), -128, 127));
    Buffer<> a(Int(8), {24, 64}), b(Int(8), {64, 40});
    a.fill_random(14);
    b.fill_random(15);
    ChipResult r = expect_matches_reference(Pipeline(q), {24, 40}, {{A, a}, {B, b}}, chip, Int(8));
    EXPECT_EQ(r.outputs.at(0).type(), Int(8));
}

TEST_P(ChipFused, NarrowingWithoutAClampIsRejected) {
    const std::string chip = GetParam();
    Input A(Int(8), {16, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func acc = ops::matmul(A, B);
    Func q("narrowed"), t("truncated");
    Var i("i"), j("j");
    q(i, j) = cast(Int(8), acc(i, j));
    test::expect_chip_error(Pipeline(q), {16, 64}, chip, "clamp into that range first");
    t(i, j) = cast(Int(32), cast(Float(32), acc(i, j)) * 0.5f);
    test::expect_chip_error(Pipeline(t), {16, 64}, chip, "round first");
}

TEST_P(ChipFused, BatchedMatmul) {
    const std::string chip = GetParam();
    Input A(Int(8), {3, 40, 64}, "A"), B(Int(8), {3, 64, 72}, "B");
    Func C = ops::matmul(A, B);
    Buffer<> a(Int(8), {3, 40, 64}), b(Int(8), {3, 64, 72});
    a.fill_random(7);
    b.fill_random(8);
    expect_matches_reference(Pipeline(C), {3, 40, 72}, {{A, a}, {B, b}}, chip, Int(8));
}

TEST_P(ChipFused, BatchedMatmulSharedWeights) {
    const std::string chip = GetParam();
    Input A(BFloat(16), {2, 33, 32}, "A"), B(BFloat(16), {32, 40}, "B");
    Func C = ops::matmul(A, B);
    Buffer<> a(BFloat(16), {2, 33, 32}), b(BFloat(16), {32, 40});
    a.fill_random(9);
    b.fill_random(10);
    expect_matches_reference(Pipeline(C), {2, 33, 40}, {{A, a}, {B, b}}, chip, BFloat(16), 32);
}

TEST_P(ChipFused, FuncRealizeGoesThroughTheChip) {
    const std::string chip = GetParam();
    Input A(Int(8), {32, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Buffer<> a(Int(8), {32, 64}), b(Int(8), {64, 64});
    a.fill_random(21);
    b.fill_random(22);
    Buffer<> got = C.realize({32, 64}, {{A, a}, {B, b}}, Target::named(chip));
    Buffer<> ref = C.realize({32, 64}, {{A, a}, {B, b}}, Target::reference());
    EXPECT_TRUE(compare(got, ref).equal);
    EXPECT_EQ(last_chip_result().report.target, chip);
    EXPECT_GT(last_chip_result().report.macs, 0);
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipFused, ::testing::Values("tsp-mini", "npu-edge"),
                         [](const auto &info) { return info.param == "tsp-mini" ? "tsp_mini" : "npu_edge"; });

} // namespace
} // namespace tessera

#include <tessera/codegen/chip_schedules.h>

namespace tessera {
namespace {

TEST(ChipLibrarySchedule, MatmulScheduleIsRecordedAndHonoured) {
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        Input A(Int(8), {200, 128}, "A"), B(Int(8), {128, 96}, "B");
        Func C = ops::matmul(A, B);
        apply_chip_library_schedule(Pipeline(C), Target::named(chip), {{200, 96}});
        const std::string text = C.schedule().to_string();
        EXPECT_NE(text.find("tensorize"), std::string::npos) << text;
        Buffer<> a(Int(8), {200, 128}), b(Int(8), {128, 96});
        a.fill_random(31);
        b.fill_random(32);
        test::expect_matches_reference(Pipeline(C), {200, 96}, {{A, a}, {B, b}}, chip, Int(8));
        // The schedule survives its JSON form.
        Schedule back = Schedule::from_json(C.schedule().to_json());
        EXPECT_EQ(back, C.schedule());
    }
}

TEST(ChipLibrarySchedule, AMatmulOfTwoBatchDimensionsKeepsTheLoopNestRule) {
    // [2, 3, L, L]: no library kernel takes two batch dimensions above 1, so the library
    // schedule leaves the product to the loop-nest compiler's own rule rather than split its
    // reduction into two loops that compiler cannot map.
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        Input Q(Float(32), {2, 3, 40, 64}, "Q"), K(Float(32), {2, 3, 64, 40}, "K");
        Func S = ops::matmul(Q, K);
        apply_chip_library_schedule(Pipeline(S), Target::named(chip), {{2, 3, 40, 40}});
        EXPECT_EQ(S.schedule().to_string().find("split"), std::string::npos) << S.schedule().to_string();
        Buffer<> q(Float(32), {2, 3, 40, 64}), k(Float(32), {2, 3, 64, 40});
        q.fill_random(33);
        k.fill_random(34);
        test::expect_matches_reference(Pipeline(S), {2, 3, 40, 40}, {{Q, q}, {K, k}}, chip, Float(32), 64);
    }
}

TEST(ChipLibrarySchedule, AttentionScoresOfOneSequenceAreALibraryMatmulOverTheHeads) {
    // ONNX's [1, heads, L, L]: the batch of 1 indexes 0 only, so the library kernel iterates over
    // the heads under the library schedule (the loop-nest compiler would hold the whole output
    // on chip: BERT-base's 12 x 128 x 128 fp32 scores are larger than npu-edge's scratchpad).
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        Input Q(Float(32), {1, 12, 128, 64}, "Q"), K(Float(32), {1, 12, 64, 128}, "K");
        Func S = ops::matmul(Q, K);
        apply_chip_library_schedule(Pipeline(S), Target::named(chip), {{1, 12, 128, 128}});
        EXPECT_NE(S.schedule().to_string().find("tensorize"), std::string::npos) << S.schedule().to_string();
        Buffer<> q(Float(32), {1, 12, 128, 64}), k(Float(32), {1, 12, 64, 128});
        q.fill_random(35);
        k.fill_random(36);
        ChipResult r = test::expect_matches_reference(Pipeline(S), {1, 12, 128, 128}, {{Q, q}, {K, k}}, chip, Float(32), 64);
        EXPECT_TRUE(r.program.loop_nest.empty()) << r.program.summary;
    }
}

} // namespace
} // namespace tessera
