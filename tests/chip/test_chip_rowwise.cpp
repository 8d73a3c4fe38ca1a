// softmax and layernorm from the operator library on both chips' VXM, against the reference
// evaluator: odd row counts (padded lanes), odd column counts, bf16 rounding, gamma/beta, and
// the forms the kernels do not take.
#include "chip_test_util.h"

#include <tessera/chipsim/assembler.h>

namespace tessera {
namespace {

struct RowCase {
    std::vector<int64_t> shape;
    Type type;
    bool gamma = false, beta = false;
};
/// How ctest and failure messages name a case.
void PrintTo(const RowCase &c, std::ostream *os) {
    for (size_t i = 0; i < c.shape.size(); ++i) *os << (i ? "x" : "") << c.shape[i];
    *os << " " << c.type.to_string() << (c.gamma ? " +gamma" : "") << (c.beta ? " +beta" : "");
}

/// fp32 results are held to fp32's tolerance (the VXM computes in fp32, as the reference does);
/// bf16 results to bf16's.
Tolerance tolerance_for(Type t, int64_t reduction) { return Tolerance::for_type(t == BFloat(16) ? t : Float(32), reduction); }

std::string case_name(const std::string &chip, const RowCase &c) {
    std::string s = chip;
    for (auto v : c.shape) s += "_" + std::to_string(v);
    return test::test_name(s + "_" + c.type.to_string() + (c.gamma ? "_gamma" : "") + (c.beta ? "_beta" : ""));
}

class ChipSoftmax : public ::testing::TestWithParam<std::tuple<std::string, RowCase>> {};

TEST_P(ChipSoftmax, EqualsReference) {
    const auto &[chip, rc] = GetParam();
    Input X(rc.type, test::extents(rc.shape), "X");
    Func y = ops::softmax(X);
    ChipResult r = test::expect_matches_reference_within(Pipeline(y), rc.shape, {{X, test::random_buffer(rc.type, rc.shape, 7)}}, chip,
                                                         tolerance_for(rc.type, rc.shape.back()));
    EXPECT_NE(r.program.summary.find("softmax over the last axis on the VXM"), std::string::npos) << r.program.summary;
    EXPECT_GT(r.report.cycles, 0);
    EXPECT_EQ(chipsim::assemble(r.program.assembly()), r.program.program); // stride-0 broadcasts round-trip
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChipSoftmax,
                         ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                                            ::testing::Values(RowCase{{37, 100}, Float(32)}, RowCase{{16, 64}, BFloat(16)},
                                                              RowCase{{2, 5, 33}, Float(32)}, RowCase{{3, 1}, Float(32)})),
                         [](const auto &info) { return case_name(std::get<0>(info.param), std::get<1>(info.param)); });

class ChipLayernorm : public ::testing::TestWithParam<std::tuple<std::string, RowCase>> {};

TEST_P(ChipLayernorm, EqualsReference) {
    const auto &[chip, rc] = GetParam();
    const int64_t cols = rc.shape.back();
    Input X(rc.type, test::extents(rc.shape), "X"), G(rc.type, {int(cols)}, "gamma"), B(rc.type, {int(cols)}, "beta");
    Func y = ops::layernorm(X, rc.gamma ? ops::Tensor(G) : ops::Tensor(), rc.beta ? ops::Tensor(B) : ops::Tensor());
    Bindings bind{{X, test::random_buffer(rc.type, rc.shape, 11)}};
    if (rc.gamma) bind.push_back({G, test::random_buffer(rc.type, {cols}, 12)});
    if (rc.beta) bind.push_back({B, test::random_buffer(rc.type, {cols}, 13)});
    ChipResult r = test::expect_matches_reference_within(Pipeline(y), rc.shape, bind, chip, tolerance_for(rc.type, cols));
    EXPECT_NE(r.program.summary.find("layernorm over the last axis on the VXM"), std::string::npos) << r.program.summary;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChipLayernorm,
                         ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                                            ::testing::Values(RowCase{{37, 100}, Float(32)}, RowCase{{20, 64}, Float(32), true, true},
                                                              RowCase{{16, 48}, BFloat(16), true, false},
                                                              RowCase{{5, 7}, Float(32), false, true})),
                         [](const auto &info) { return case_name(std::get<0>(info.param), std::get<1>(info.param)); });

/// Compiling `p` for either chip throws a tessera::Error whose message contains `needle`.
void expect_chip_error(const Pipeline &p, const std::vector<int64_t> &shape, const std::string &needle) {
    for (const char *chip : {"tsp-mini", "npu-edge"}) test::expect_chip_error(p, shape, chip, needle);
}

// Asked to read x in its own row-major order (the layout a matmul before it wrote), the softmax
// and layernorm keep x and y row-major off chip and turn each block of rows into columns and
// back on the SXM, on both chips (tsp-mini takes it since its linked programs keep values in
// MEM in their writer's layout); the values are the reference's, a bf16 copy asked beside y
// (npu-edge's DRAM; tsp-mini has none to keep it in) holds y rounded, and y asked in bf16 is y
// rounded. The host-transposed layout stays where a row is not whole vector rows (40 columns).
TEST(ChipRowwise, RowsReadInTheirOwnOrderTurnOnTheSxm) {
    for (const std::vector<int64_t> &shape : {std::vector<int64_t>{1, 48, 128}, std::vector<int64_t>{40, 64}, std::vector<int64_t>{32, 40}})
        for (bool softmax : {true, false}) {
            const int64_t cols = shape.back();
            Input X(Float(32), test::extents(shape), "X"), G(Float(32), {int(cols)}, "gamma"), B(Float(32), {int(cols)}, "beta");
            const Pipeline p(softmax ? ops::softmax(X).func() : ops::layernorm(X, G, B).func());
            SCOPED_TRACE(p.outputs()[0].name() + " " + std::to_string(cols) + " columns");
            Bindings bind{{X, test::random_buffer(Float(32), shape, 31)}};
            if (!softmax) bind.insert(bind.end(), {{G, test::random_buffer(Float(32), {cols}, 32)}, {B, test::random_buffer(Float(32), {cols}, 33)}});
            std::vector<int> identity(shape.size());
            for (size_t d = 0; d < shape.size(); ++d) identity[d] = int(d);
            ChipLayoutRequests ask;
            ask.order["X"] = identity;
            const std::string out = p.outputs()[0].name();
            ChipLayoutRequests with_copy = ask;
            with_copy.copy_dtype[out] = chipsim::DType::BF16;
            const bool taken = cols % 16 == 0;
            {
                const ChipProgram tsp = compile_for_chip(p, Target::named("tsp-mini"), {shape}, {}, ask);
                EXPECT_EQ(tsp.summary.find("turned into columns and back by the SXM") != std::string::npos, taken) << tsp.summary;
                EXPECT_TRUE(compile_for_chip(p, Target::named("tsp-mini"), {shape}, {}, with_copy).copies.empty());
                const Buffer<> ref = p.realize({shape}, bind, Target::reference()).at(0);
                const Comparison c = compare(run_on_chip(tsp, bind).outputs.at(0), ref, tolerance_for(Float(32), cols));
                EXPECT_TRUE(c.equal) << "tsp-mini: " << c.message;
            }
            const ChipProgram asked = compile_for_chip(p, Target::named("npu-edge"), {shape}, {}, ask);
            const bool turned = asked.summary.find("turned into columns and back by the SXM") != std::string::npos;
            EXPECT_EQ(turned, taken) << asked.summary;
            std::vector<int> x_dims;
            for (const ChipTensorMap &m : asked.tensors)
                if (m.source == "X") x_dims = m.chip_dim_of_source;
            EXPECT_EQ(x_dims == identity, taken);
            const Buffer<> ref = p.realize({shape}, bind, Target::reference()).at(0);
            const ChipResult r = run_on_chip(asked, bind);
            const Comparison c = compare(r.outputs.at(0), ref, tolerance_for(Float(32), cols));
            EXPECT_TRUE(c.equal) << c.message;
            const ChipProgram copied = compile_for_chip(p, Target::named("npu-edge"), {shape}, {}, with_copy);
            if (!taken || cols % 32 != 0) {
                EXPECT_TRUE(copied.copies.empty());
                continue;
            }
            EXPECT_EQ(compare(run_on_chip(copied, bind).outputs.at(0), r.outputs.at(0), Tolerance{}).equal, true) << "y is unchanged";
            test::expect_copy_holds_the_rounded_output(copied, bind, out, shape);
            // Asked for y in bf16 (every reader rounds it): y itself is stored packed.
            ChipLayoutRequests narrow = ask;
            narrow.output_dtype[out] = chipsim::DType::BF16;
            const ChipProgram packed = compile_for_chip(p, Target::named("npu-edge"), {shape}, {}, narrow);
            ASSERT_EQ(test::stored_dtype(packed, out), chipsim::DType::BF16) << packed.summary;
            const ChipResult q = run_on_chip(packed, bind);
            test::expect_rounded_to_bf16(q.outputs.at(0), r.outputs.at(0));
            EXPECT_LT(q.report.bytes.at("DRAM"), r.report.bytes.at("DRAM"));
        }
}

// Asked for y in bf16 (every reader rounds it so) in the chip's own layout, where a vector row
// is one column of a block's rows: the op that computes the block's result packs columns two by
// two (no cast of its own), y is stored as bf16 on both chips, every value is the plain
// program's rounded, and fewer bytes leave the chip (tsp-mini's host link, npu-edge's DRAM).
// An odd column count cannot pair its columns: y stays fp32.
TEST(ChipRowwise, YAskedInBf16IsPackedByTheOpThatComputesIt) {
    for (const std::vector<int64_t> &shape : {std::vector<int64_t>{37, 100}, std::vector<int64_t>{2, 5, 34}, std::vector<int64_t>{16, 33}})
        for (bool softmax : {true, false})
            for (const char *chip : {"tsp-mini", "npu-edge"}) {
                const int64_t cols = shape.back();
                Input X(Float(32), test::extents(shape), "X"), G(Float(32), {int(cols)}, "gamma"), B(Float(32), {int(cols)}, "beta");
                const Pipeline p(softmax ? ops::softmax(X).func() : ops::layernorm(X, G, B).func());
                const std::string out = p.outputs()[0].name();
                SCOPED_TRACE(out + " " + std::to_string(cols) + " columns on " + chip);
                Bindings bind{{X, test::random_buffer(Float(32), shape, 41)}};
                if (!softmax) bind.insert(bind.end(), {{G, test::random_buffer(Float(32), {cols}, 42)}, {B, test::random_buffer(Float(32), {cols}, 43)}});
                ChipLayoutRequests ask;
                ask.output_dtype[out] = chipsim::DType::BF16;
                const ChipProgram plain = compile_for_chip(p, Target::named(chip), {shape});
                const ChipProgram asked = compile_for_chip(p, Target::named(chip), {shape}, {}, ask);
                if (cols % 2 != 0) {
                    EXPECT_EQ(asked.assembly(), plain.assembly());
                    continue;
                }
                ASSERT_EQ(test::stored_dtype(asked, out), chipsim::DType::BF16) << asked.summary;
                EXPECT_EQ(asked.program.instructions.size(), plain.program.instructions.size()) << "packed by the result's own op";
                EXPECT_NE(asked.assembly().find(softmax ? "vxm.div.fp32.bf16" : "vxm.add.fp32.bf16"), std::string::npos);
                const ChipResult r = run_on_chip(plain, bind), q = run_on_chip(asked, bind);
                const Buffer<> ref = p.realize({shape}, bind, Target::reference()).at(0);
                EXPECT_TRUE(compare(r.outputs.at(0), ref, tolerance_for(Float(32), cols)).equal);
                test::expect_rounded_to_bf16(q.outputs.at(0), r.outputs.at(0));
                const std::string off_chip = std::string(chip) == "tsp-mini" ? "HOST" : "DRAM";
                EXPECT_LT(q.report.bytes.at(off_chip), r.report.bytes.at(off_chip));
                EXPECT_LT(q.report.total_cycles, r.report.total_cycles);
            }
}

// Forms the row kernels do not take compile from the loop nest instead of being refused: a
// softmax down the columns, a layernorm over the last two dimensions, and one over every
// dimension, whose single mean and deviation each element reads (the SXM spreads that one lane
// over the lanes of every row).
TEST(ChipRowwise, FormsTheRowKernelsDoNotTakeRunFromTheLoopNest) {
    Input X(Float(32), {4, 8, 20}, "X"), G(Float(32), {8, 20}, "gamma");
    struct Case {
        std::string name;
        Func f;
        int64_t reduction;
    };
    const std::vector<Case> cases{{"softmax over axis 0", ops::softmax(X, 0), 4},
                                  {"layernorm over 2 dimensions", ops::layernorm(X, ops::Tensor(G), ops::Tensor(), 2), 160},
                                  {"layernorm over every dimension", ops::layernorm(X, ops::Tensor(), ops::Tensor(), 3), 640}};
    for (const char *chip : {"tsp-mini", "npu-edge"})
        for (const Case &c : cases) {
            SCOPED_TRACE(c.name + " on " + chip);
            Bindings bind{{X, test::random_buffer(Float(32), {4, 8, 20}, 5)}, {G, test::random_buffer(Float(32), {8, 20}, 6)}};
            const ChipResult r = test::expect_matches_reference_within(Pipeline(c.f), {4, 8, 20}, bind, chip,
                                                                       tolerance_for(Float(32), c.reduction));
            EXPECT_NE(r.program.summary.find("compiled from the loop nest"), std::string::npos) << r.program.summary;
            if (c.reduction == 640) EXPECT_NE(r.program.assembly().find("sxm.permute"), std::string::npos) << r.program.assembly();
        }
}

TEST(ChipRowwiseErrors, TensorizeOnSoftmaxIsNotAMatmul) {
    Input X(Float(32), {8, 16}, "X");
    Func y = ops::softmax(X);
    y.tensorize("mxm", {Var("d0"), Var("d1")});
    expect_chip_error(Pipeline(y), {8, 16}, "not a matmul");
}

TEST(ChipRowwiseErrors, ExplicitBankIsRejected) {
    Input X(Float(32), {8, 16}, "X");
    Func y = ops::layernorm(X);
    y.store_in(MemoryKind::MEM, 3);
    expect_chip_error(Pipeline(y), {8, 16}, "drop the bank");
}

TEST(ChipRowwiseErrors, TooManyColumnsForOneTile) {
    Input X(Float(32), {16, 20000}, "X");
    expect_chip_error(Pipeline(ops::softmax(X)), {16, 20000}, "use a smaller shape");
}

TEST(ChipRowwise, LongRowsFitNpuScratchpad) {
    // npu-edge's 512 KiB scratchpad holds one block's tiles at a time (no waves, values
    // overwrite dead ones in place): 129 rows x 333 checked, 2048 columns of bf16 compiled.
    Input X(Float(32), {129, 333}, "X");
    test::expect_matches_reference_within(Pipeline(ops::layernorm(X)), {129, 333}, {{X, test::random_buffer(Float(32), {129, 333}, 9)}},
                                          "npu-edge", Tolerance::for_type(Float(32), 333));
    Input Y(BFloat(16), {64, 2048}, "Y");
    EXPECT_NO_THROW(compile_for_chip(Pipeline(ops::softmax(Y)), Target::named("npu-edge"), {{64, 2048}}));
    EXPECT_NO_THROW(compile_for_chip(Pipeline(ops::layernorm(Y)), Target::named("npu-edge"), {{64, 2048}}));
}

TEST(ChipRowwise, RealizeThroughFuncRealize) {
    // Func::realize with a chip target goes through the same backend.
    Input X(Float(32), {17, 40}, "X");
    Func y = ops::softmax(X);
    Buffer<> x = test::random_buffer(Float(32), {17, 40}, 3);
    Buffer<> chip = y.realize({17, 40}, {{X, x}}, Target::named("tsp-mini"));
    Buffer<> ref = y.realize({17, 40}, {{X, x}}, Target::reference());
    EXPECT_TRUE(compare(chip, ref, Tolerance::for_type(Float(32), 40)).equal);
    EXPECT_GT(last_chip_result().report.cycles, 0);
}

} // namespace
} // namespace tessera
