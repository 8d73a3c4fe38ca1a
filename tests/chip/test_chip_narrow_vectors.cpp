// The vector kernels on chips with 32-byte vectors, written as target files: softmax, layernorm
// and attention take their lanes from the target (8 fp32 lanes here, 16 on the built-in chips),
// so the same kernels run, and equal the reference evaluator, on either width.
#include "chip_test_util.h"
#include "test_support.h"

#include <tessera/chipsim/target.h>

#include <filesystem>
#include <fstream>

namespace tessera {
namespace {

/// A built-in chip with 32-byte vectors (MEM/SPAD rows of 32 bytes, an MXM whose rows are one
/// vector: int8 32x32, bf16 16x16), written to a file of this test's own.
std::string narrow_vector_chip(const std::string &builtin) {
    chipsim::Target t = test::with_32_byte_vectors(chipsim::load_target(builtin));
    t.name = builtin + "-v32";
    const std::string path = (tessera_test::unique_temp_dir() / (t.name + ".json")).string();
    std::ofstream(path) << t.to_json();
    return path;
}

class NarrowVectors : public ::testing::TestWithParam<std::string> {
protected:
    const std::string chip = narrow_vector_chip(GetParam());
};

TEST_P(NarrowVectors, SoftmaxTakesEightLanesAndEqualsReference) {
    // 37 rows: 5 blocks of 8 lanes (3 padded); 100 columns reduced over vector rows.
    Input X(Float(32), {37, 100}, "X");
    ChipResult r = test::expect_matches_reference_within(Pipeline(ops::softmax(X)), {37, 100},
                                                         {{X, test::random_buffer(Float(32), {37, 100}, 7)}}, chip,
                                                         Tolerance::for_type(Float(32), 100));
    EXPECT_NE(r.program.summary.find("5 blocks of 8 rows"), std::string::npos) << r.program.summary;
    Input Y(BFloat(16), {16, 64}, "Y");
    test::expect_matches_reference_within(Pipeline(ops::softmax(Y)), {16, 64}, {{Y, test::random_buffer(BFloat(16), {16, 64}, 8)}},
                                          chip, Tolerance::for_type(BFloat(16), 64));
}

TEST_P(NarrowVectors, LayernormWithGammaAndBetaEqualsReference) {
    Input X(Float(32), {20, 48}, "X"), G(Float(32), {48}, "gamma"), B(Float(32), {48}, "beta");
    ChipResult r = test::expect_matches_reference_within(Pipeline(ops::layernorm(X, G, B)), {20, 48},
                                                         {{X, test::random_buffer(Float(32), {20, 48}, 11)},
                                                          {G, test::random_buffer(Float(32), {48}, 12)},
                                                          {B, test::random_buffer(Float(32), {48}, 13)}},
                                                         chip, Tolerance::for_type(Float(32), 48));
    EXPECT_NE(r.program.summary.find("3 blocks of 8 rows"), std::string::npos) << r.program.summary;
}

TEST_P(NarrowVectors, AttentionBlocksOfSixteenQueriesEqualReference) {
    // Blocks of 16 queries (the bf16 MXM's width, one bf16 vector), halves of 8 fp32 lanes;
    // causal and not, padded lengths.
    for (bool causal : {false, true}) {
        const std::vector<int64_t> qs{2, 40, 24}, ks{2, 50, 24};
        Input Q(Float(32), test::extents(qs), "Q"), K(Float(32), test::extents(ks), "K"), V(Float(32), test::extents(ks), "V");
        ops::AttentionOptions o;
        o.causal = causal;
        Func y = ops::scaled_dot_product_attention(Q, K, V, o);
        ChipResult r = test::expect_matches_reference(Pipeline(y), qs,
                                                      {{Q, test::random_buffer(Float(32), qs, 31)},
                                                       {K, test::random_buffer(Float(32), ks, 32)},
                                                       {V, test::random_buffer(Float(32), ks, 33)}},
                                                      chip, Float(32), 50);
        EXPECT_NE(r.program.summary.find("jobs (head x 16 queries)"), std::string::npos) << r.program.summary;
    }
}

INSTANTIATE_TEST_SUITE_P(Chips, NarrowVectors, ::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                         [](const auto &info) { return test::test_name(info.param); });

TEST(NarrowVectorErrors, AttentionNeedsTheBf16MxmAsWideAsAVector) {
    // 32-byte vectors hold 16 bf16 lanes; a 32-wide bf16 MXM does not pack into one.
    chipsim::Target t = chipsim::load_target(narrow_vector_chip("npu-edge"));
    t.mxm.floating.k = t.mxm.floating.n = 32;
    t.memories[1].row_bytes = 128;
    const std::string path = (tessera_test::unique_temp_dir() / "npu-edge-v32-wide.json").string();
    std::ofstream(path) << t.to_json();
    Input Q(Float(32), {32, 32}, "Q"), K(Float(32), {32, 32}, "K"), V(Float(32), {32, 32}, "V");
    test::expect_chip_error(Pipeline(ops::scaled_dot_product_attention(Q, K, V)), {32, 32}, path, "bf16 MXM of 16x16");
}

} // namespace
} // namespace tessera
