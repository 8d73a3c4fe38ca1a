// Layout changes on chip: ops::transpose and ops::permute (NCHW <-> NHWC, batched transposes)
// as SXM transposes between strided DMA loads and stores, on both chips, against the reference
// (a permutation moves values, so every dtype must come back bit-exact); odd extents exercise
// the padding of the two transposed dimensions.
#include "chip_test_util.h"

#include <tessera/chipsim/assembler.h>

namespace tessera {
namespace {

struct PermCase {
    std::vector<int64_t> shape;
    std::vector<int> perm; ///< Empty: ops::transpose.
    Type type;
};
/// How ctest and failure messages name a case.
void PrintTo(const PermCase &c, std::ostream *os) {
    for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "x" : "") << c.shape[i];
    *os << " perm";
    if (c.perm.empty()) *os << " transpose";
    for (int d : c.perm) *os << " " << d;
    *os << " " << c.type.to_string();
}

class ChipPermute : public ::testing::TestWithParam<std::tuple<std::string, PermCase>> {};

TEST_P(ChipPermute, MovesEveryValueExactly) {
    const auto &[chip, pc] = GetParam();
    Input X(pc.type, test::extents(pc.shape), "X");
    ops::Tensor y = pc.perm.empty() ? ops::transpose(X) : ops::permute(X, pc.perm);
    const std::vector<int64_t> shape = y.concrete_shape();
    Bindings bind{{X, test::random_buffer(pc.type, pc.shape, 51)}};
    const Buffer<> ref = Pipeline(y).realize({shape}, bind, Target::reference())[0];
    ChipResult r = realize_on_chip(Pipeline(y), {shape}, bind, Target::named(chip));
    const Comparison c = compare(r.outputs.at(0), ref, Tolerance{});
    EXPECT_TRUE(c.equal) << chip << ": " << c.message;
    EXPECT_EQ(r.outputs.at(0).type(), pc.type) << "a permutation keeps the dtype";
    EXPECT_NE(r.program.summary.find("on the SXM"), std::string::npos) << r.program.summary;
    EXPECT_NE(r.program.assembly().find("sxm.transpose"), std::string::npos);
    EXPECT_EQ(r.report.macs, 0);
    EXPECT_GT(r.report.cycles, 0);
    EXPECT_EQ(chipsim::assemble(r.program.assembly()), r.program.program);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChipPermute,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(PermCase{{37, 29}, {}, Float(32)}, PermCase{{70, 130}, {}, Int(8)},
                                         PermCase{{3, 33, 40}, {}, BFloat(16)},
                                         PermCase{{2, 5, 7, 9}, {0, 2, 3, 1}, Int(8)},      // NCHW -> NHWC
                                         PermCase{{1, 6, 5, 20}, {0, 3, 1, 2}, BFloat(16)}, // NHWC -> NCHW
                                         PermCase{{300, 18}, {1, 0}, Int(32)},              // more rows than one strip
                                         PermCase{{4, 3, 17}, {2, 0, 1}, Float(32)})),
    [](const auto &info) {
        const PermCase &c = std::get<1>(info.param);
        std::string s = std::get<0>(info.param);
        for (auto v : c.shape) s += "_" + std::to_string(v);
        s += c.perm.empty() ? "_t" : "_p";
        for (int d : c.perm) s += std::to_string(d);
        return test::test_name(s + "_" + c.type.to_string());
    });

struct RowPermCase {
    std::vector<int64_t> shape;
    std::vector<int> perm;
    Type type;
};

TEST(ChipPermute, KeepingTheInnermostDimensionGathersRowsByDma) {
    // ONNX attention's head split [1, L, heads, D] -> [1, heads, L, D], a batched row swap, and a
    // row longer than one strip allows; odd innermost extents exercise the lane padding.
    for (const RowPermCase &pc : {RowPermCase{{1, 40, 3, 24}, {0, 2, 1, 3}, Float(32)}, RowPermCase{{4, 6, 9}, {1, 0, 2}, Int(8)},
                                  RowPermCase{{5, 300, 7}, {1, 0, 2}, BFloat(16)}, RowPermCase{{2, 3, 4, 5}, {2, 0, 1, 3}, Int(32)}})
        for (const char *chip : {"tsp-mini", "npu-edge"}) {
            Input X(pc.type, test::extents(pc.shape), "X");
            ops::Tensor y = ops::permute(X, pc.perm);
            const std::vector<int64_t> shape = y.concrete_shape();
            const Bindings bind{{X, test::random_buffer(pc.type, pc.shape, 53)}};
            ChipResult r = test::expect_matches_reference_within(Pipeline(y), shape, bind, chip, Tolerance{});
            EXPECT_EQ(r.program.assembly().find("sxm."), std::string::npos) << chip;
            EXPECT_EQ(r.program.assembly().find("vxm."), std::string::npos) << chip;
            EXPECT_NE(r.program.summary.find("keeping the innermost dimension"), std::string::npos) << r.program.summary;
        }
}

TEST(ChipPermute, TheIdentityCropIsACopyWithoutTheSxm) {
    // y(i, j) = x(i, j) over a smaller output: ONNX's Slice from index 0 (an LSTM cell's first
    // gate). No layout changes, so no SXM: the element-wise kernel copies it.
    Input X(Float(32), {5, 64}, "X");
    Var i("i"), j("j");
    Func y("y");
    y(i, j) = X(i, j);
    const Bindings bind{{X, test::random_buffer(Float(32), {5, 64}, 52)}};
    for (const char *chip : {"tsp-mini", "npu-edge"}) {
        ChipResult r = test::expect_matches_reference_within(Pipeline(y), {5, 16}, bind, chip, Tolerance{});
        EXPECT_EQ(r.program.assembly().find("sxm.transpose"), std::string::npos) << chip;
        EXPECT_NE(r.program.summary.find("a copy"), std::string::npos) << r.program.summary;
    }
}

TEST(ChipPermuteErrors, AnExplicitBankIsRejected) {
    Input X(Float(32), {16, 16}, "X");
    Func y = ops::transpose(X);
    y.store_in(MemoryKind::MEM, 3);
    test::expect_chip_error(Pipeline(y), {16, 16}, "tsp-mini", "places its own tiles");
}

} // namespace
} // namespace tessera
