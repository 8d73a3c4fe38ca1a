// Matmuls on both chips, end to end: lowering of the algorithm onto the MXM, placement, the
// instruction schedule and chipsim's run must reproduce the reference evaluator.
#include "chip_test_util.h"

#include <tessera/chipsim/assembler.h>

namespace tessera {
namespace {

using test::expect_matches_reference;

struct MatmulCase {
    int64_t m, n, k;
    Type type;
};

class ChipMatmul : public ::testing::TestWithParam<std::tuple<std::string, MatmulCase>> {};

TEST_P(ChipMatmul, EqualsReference) {
    const std::string &chip = std::get<0>(GetParam());
    const MatmulCase &mc = std::get<1>(GetParam());
    Input A(mc.type, {int(mc.m), int(mc.k)}, "A"), B(mc.type, {int(mc.k), int(mc.n)}, "B");
    Func C = ops::matmul(A, B);
    Buffer<> a(mc.type, {mc.m, mc.k}), b(mc.type, {mc.k, mc.n});
    a.fill_random(11);
    b.fill_random(12);
    ChipResult r = expect_matches_reference(Pipeline(C), {mc.m, mc.n}, {{A, a}, {B, b}}, chip, mc.type, mc.k);
    EXPECT_GE(r.report.macs, mc.m * mc.n * mc.k) << "every MAC goes through the MXM";
    EXPECT_GT(r.report.cycles, 0);
    // The program text round-trips through chipsim's assembler.
    const chipsim::Program back = chipsim::assemble(r.program.assembly);
    ASSERT_EQ(back.instructions.size(), r.program.program.instructions.size());
    for (size_t i = 0; i < back.instructions.size(); ++i)
        ASSERT_EQ(back.instructions[i], r.program.program.instructions[i])
            << "instruction " << i << ": " << chipsim::disassemble(r.program.program.instructions[i]);
    EXPECT_EQ(back, r.program.program);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChipMatmul,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(MatmulCase{128, 128, 128, Int(8)}, MatmulCase{64, 256, 192, Int(8)},
                                         MatmulCase{37, 50, 70, Int(8)},       // padding in every dimension
                                         MatmulCase{300, 64, 64, Int(8)},      // rows over one tile
                                         MatmulCase{64, 64, 96, BFloat(16)}, MatmulCase{45, 33, 40, BFloat(16)},
                                         MatmulCase{96, 64, 32, Float(32)})), // fp32 rounds to bf16 on the way in
    [](const auto &info) {
        const std::string &chip = std::get<0>(info.param);
        const MatmulCase &mc = std::get<1>(info.param);
        std::string s = chip + "_" + std::to_string(mc.m) + "x" + std::to_string(mc.n) + "x" + std::to_string(mc.k) + "_" +
                        mc.type.to_string();
        for (auto &c : s)
            if (!isalnum(static_cast<unsigned char>(c))) c = '_';
        return s;
    });

TEST(ChipMatmulStreamed, OperandsLargerThanMemEqualReference) {
    // B alone is over 4 MiB, so tsp-mini cannot preload it: tiles stream in during the kernel
    // (B in panels of several K blocks per DMA; 33 K blocks leave a short last panel).
    for (Type t : {Int(8), BFloat(16)}) {
        const int m = 3, k = t == Int(8) ? 2112 : 1056, n = 2048;
        Input A(t, {m, k}, "A"), B(t, {k, n}, "B");
        Func c = ops::matmul(A, B);
        Buffer<> a(t, {m, k}), b(t, {k, n});
        a.fill_random(51);
        b.fill_random(52);
        ChipResult r = test::expect_matches_reference(Pipeline(c), {m, n}, {{A, a}, {B, b}}, "tsp-mini", t, k);
        EXPECT_NE(r.program.summary.find("streamed"), std::string::npos) << r.program.summary;
    }
}

} // namespace
} // namespace tessera
