// conv2d as an implicit GEMM (one matmul per filter tap) on both chips, against the reference.
#include "chip_test_util.h"

#include <tessera/chipsim/dtype.h>
#include <tessera/reference.h>

namespace tessera {
namespace {

struct ConvCase {
    int n, c, h, w, o, k, stride, pad;
    ops::Layout layout;
    Type type;
    bool bias;
    int dilation = 1, groups = 1;
    double pad_value = 0; ///< What the padding holds (an integer conv's zero point).
};
/// How ctest and failure messages name a case.
void PrintTo(const ConvCase &c, std::ostream *os) {
    *os << c.n << "x" << c.c << "x" << c.h << "x" << c.w << " -> " << c.o << " " << c.k << "x" << c.k << " stride "
        << c.stride << " pad " << c.pad << " dilation " << c.dilation << " groups " << c.groups
        << (c.layout == ops::Layout::NCHW ? " NCHW " : " NHWC ") << c.type.to_string() << (c.bias ? " +bias" : "");
}

std::string case_name(const std::string &chip, const ConvCase &c) {
    return test::test_name(chip + "_n" + std::to_string(c.n) + "_c" + std::to_string(c.c) + "_" + std::to_string(c.h) + "x" +
                           std::to_string(c.w) + "_o" + std::to_string(c.o) + "_k" + std::to_string(c.k) + "_s" +
                           std::to_string(c.stride) + "_p" + std::to_string(c.pad) + "_d" + std::to_string(c.dilation) + "_g" +
                           std::to_string(c.groups) + (c.layout == ops::Layout::NCHW ? "_nchw_" : "_nhwc_") +
                           c.type.to_string() + (c.bias ? "_bias" : ""));
}

/// The conv of a case, its bindings (random data) and output shape.
struct ConvProblem {
    Pipeline pipeline;
    Bindings bindings;
    std::vector<int64_t> image_shape, shape;
};

ConvProblem make_conv(const ConvCase &cc) {
    const bool nchw = cc.layout == ops::Layout::NCHW;
    const int cg = cc.c / cc.groups;
    std::vector<int64_t> xs = nchw ? std::vector<int64_t>{cc.n, cc.c, cc.h, cc.w} : std::vector<int64_t>{cc.n, cc.h, cc.w, cc.c};
    std::vector<int64_t> ws = nchw ? std::vector<int64_t>{cc.o, cg, cc.k, cc.k} : std::vector<int64_t>{cc.k, cc.k, cg, cc.o};
    Input X(cc.type, test::extents(xs), "X"), Wt(cc.type, test::extents(ws), "Wt");
    Input bias(cc.type == Int(8) ? Int(32) : Float(32), {cc.o}, "bias");
    ops::Conv2dOptions opt;
    opt.stride = {cc.stride, cc.stride};
    opt.padding = cc.pad;
    opt.dilation = {cc.dilation, cc.dilation};
    opt.groups = cc.groups;
    opt.layout = cc.layout;
    opt.pad_value = cc.pad_value;
    Func conv = cc.bias ? ops::conv2d(X, Wt, bias, opt) : ops::conv2d(X, Wt, opt);
    const int64_t span = int64_t(cc.dilation) * (cc.k - 1) + 1;
    const int64_t oh = (cc.h + 2 * cc.pad - span) / cc.stride + 1, ow = (cc.w + 2 * cc.pad - span) / cc.stride + 1;
    ConvProblem p{Pipeline(conv), {{X, test::random_buffer(cc.type, xs, 41)}, {Wt, test::random_buffer(cc.type, ws, 42)}}, xs,
                  nchw ? std::vector<int64_t>{cc.n, cc.o, oh, ow} : std::vector<int64_t>{cc.n, oh, ow, cc.o}};
    if (cc.bias) p.bindings.push_back({bias, test::random_buffer(bias.type(), {cc.o}, 43)});
    return p;
}

/// Whether the chip builds the image's layout itself: always but for an NHWC image whose
/// (group's) channels are not whole 64-byte rows.
bool layout_on_chip(const ConvCase &c) {
    const int bytes = c.type.bytes() * (c.c / c.groups);
    return c.layout == ops::Layout::NCHW || bytes % 64 == 0;
}

int64_t elements(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (auto v : shape) n *= v;
    return n;
}

class ChipConv : public ::testing::TestWithParam<std::tuple<std::string, ConvCase>> {};

TEST_P(ChipConv, EqualsReference) {
    const std::string &chip = std::get<0>(GetParam());
    const ConvCase &cc = std::get<1>(GetParam());
    ConvProblem p = make_conv(cc);
    ChipResult r = test::expect_matches_reference(p.pipeline, p.shape, p.bindings, chip, cc.type, int64_t(cc.c / cc.groups) * cc.k * cc.k);
    EXPECT_NE(r.program.summary.find("implicit GEMM"), std::string::npos);
    if (cc.groups > 1) EXPECT_NE(r.program.summary.find(std::to_string(cc.groups) + " implicit GEMMs, one per group"), std::string::npos);
    if (!layout_on_chip(cc)) {
        EXPECT_NE(r.program.summary.find("image padded on the host"), std::string::npos) << r.program.summary;
        return;
    }
    // The raw image crosses the link as it is: its program tensor has the image's shape, no
    // padded copy exists, and the chip reformats it.
    const chipsim::TensorDecl *x = r.program.program.tensor("X");
    ASSERT_NE(x, nullptr) << r.program.assembly();
    EXPECT_EQ(x->shape, p.image_shape);
    EXPECT_EQ(r.program.program.tensor("A"), nullptr);
    EXPECT_NE(r.program.summary.find("layout on chip"), std::string::npos) << r.program.summary;
    const int64_t raw = elements(p.image_shape) * cc.type.bytes();
    int64_t loaded = 0, transposes = 0, dram_stores = 0;
    for (const auto &in : r.program.program.instructions) {
        if (in.op == chipsim::Opcode::DmaLoad && in.view.tensor == "X") loaded += in.view.total_bytes();
        if (in.op == chipsim::Opcode::SxmTranspose) ++transposes;
        if (in.op == chipsim::Opcode::DmaStore && in.view.tensor == "DRAM") ++dram_stores;
    }
    if (cc.layout == ops::Layout::NCHW) EXPECT_GT(transposes, 0) << "an NCHW image becomes pixel rows on the SXM";
    else EXPECT_EQ(transposes, 0);
    const bool padded = cc.pad > 0 || cc.groups > 1 || cc.layout == ops::Layout::NCHW || (cc.c * cc.type.bytes()) % 64 != 0;
    if (chip == "npu-edge") {
        // npu-edge: the host fills DRAM with the raw tensor; the chip writes the padded image,
        // but for an NHWC image of one group, which it reads by bands as it is (zeroing each
        // band's padding in the scratchpad).
        const bool as_it_is = cc.layout == ops::Layout::NHWC && cc.groups == 1;
        EXPECT_EQ(r.program.summary.find("read as it is, by bands") != std::string::npos, as_it_is) << r.program.summary;
        EXPECT_EQ(dram_stores > 0, padded && !as_it_is) << r.program.summary;
    } else {
        // tsp-mini: what the DMA reads of X is what crosses the link. An NCHW channel plane
        // that is not whole vectors is read in whole vectors (a few bytes of the next plane).
        const int lanes = 64 / cc.type.bytes();
        if (cc.layout == ops::Layout::NHWC || (cc.h * cc.w) % lanes == 0) EXPECT_EQ(loaded, raw);
        else {
            EXPECT_GE(loaded, raw);
            EXPECT_LT(loaded, raw + int64_t(cc.n) * cc.c * 64);
        }
        EXPECT_EQ(r.report.bytes.at("HOST") >= raw, true);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChipConv,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(ConvCase{1, 8, 9, 11, 16, 3, 1, 1, ops::Layout::NCHW, Int(8), false},
                                         ConvCase{2, 64, 7, 7, 64, 3, 1, 1, ops::Layout::NHWC, Int(8), true},
                                         ConvCase{1, 16, 10, 10, 24, 3, 2, 1, ops::Layout::NCHW, Int(8), true},
                                         ConvCase{1, 32, 6, 6, 40, 1, 1, 0, ops::Layout::NHWC, BFloat(16), true},
                                         // dilation, odd channels and sizes, padding 2
                                         ConvCase{1, 5, 13, 7, 12, 3, 1, 2, ops::Layout::NCHW, Int(8), false, 2},
                                         ConvCase{1, 64, 10, 12, 16, 3, 1, 2, ops::Layout::NHWC, Int(8), true, 2},
                                         // NHWC stride 2, two images, odd width
                                         ConvCase{2, 64, 9, 5, 8, 3, 2, 1, ops::Layout::NHWC, Int(8), false},
                                         // bf16 NCHW (32 lanes), channels padded to a block
                                         ConvCase{1, 20, 11, 9, 36, 3, 1, 1, ops::Layout::NCHW, BFloat(16), true},
                                         // two channel blocks; planes shorter than a vector (the tensor's
                                         // last vector is read and shifted into place)
                                         ConvCase{1, 70, 5, 6, 33, 3, 1, 1, ops::Layout::NCHW, Int(8), false},
                                         // two images of NCHW planes shorter than a vector
                                         ConvCase{2, 3, 4, 5, 8, 3, 1, 1, ops::Layout::NCHW, Int(8), true},
                                         // NHWC bf16, four vector rows a pixel
                                         ConvCase{1, 128, 4, 5, 16, 1, 1, 0, ops::Layout::NHWC, BFloat(16), false},
                                         // NHWC channels not whole vectors: padded on the host
                                         ConvCase{1, 3, 8, 8, 16, 3, 1, 1, ops::Layout::NHWC, Int(8), false})),
    [](const auto &info) { return case_name(std::get<0>(info.param), std::get<1>(info.param)); });

INSTANTIATE_TEST_SUITE_P(
    Grouped, ChipConv,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(ConvCase{1, 8, 6, 7, 8, 3, 1, 1, ops::Layout::NCHW, Int(8), false, 1, 2},
                                         // odd channels per group, in and out
                                         ConvCase{1, 12, 5, 5, 20, 3, 1, 1, ops::Layout::NCHW, Int(8), true, 1, 4},
                                         ConvCase{1, 10, 6, 6, 6, 3, 2, 1, ops::Layout::NCHW, BFloat(16), true, 1, 2},
                                         ConvCase{2, 9, 7, 5, 6, 1, 1, 0, ops::Layout::NCHW, Int(8), false, 1, 3},
                                         // NHWC: each group's channels are whole vector rows
                                         ConvCase{1, 128, 6, 6, 32, 3, 1, 1, ops::Layout::NHWC, Int(8), true, 1, 2},
                                         ConvCase{1, 256, 5, 4, 12, 3, 1, 1, ops::Layout::NHWC, Int(8), false, 2, 4})),
    [](const auto &info) { return case_name(std::get<0>(info.param), std::get<1>(info.param)); });

TEST(ChipConv, AnIntegerConvsZeroPointPaddingIsWrittenByTheHost) {
    // The padding holds the image's zero point (ONNX ConvInteger once uint8 is shifted to int8,
    // so that x - zero point is 0 there): the host writes it into the padded image ("A"); the
    // chip's layout pass, which pads with zero rows, is not used.
    for (const char *chip : {"tsp-mini", "npu-edge"})
        for (ops::Layout layout : {ops::Layout::NCHW, ops::Layout::NHWC}) {
            ConvCase cc{1, 8, 7, 7, 16, 3, 2, 1, layout, Int(8), true};
            cc.pad_value = -28;
            ConvProblem p = make_conv(cc);
            const ChipResult r = test::expect_matches_reference(p.pipeline, p.shape, p.bindings, chip, cc.type, int64_t(cc.c) * cc.k * cc.k);
            const auto padded = std::find_if(r.program.tensors.begin(), r.program.tensors.end(), [](const ChipTensorMap &m) { return m.tensor == "A"; });
            ASSERT_NE(padded, r.program.tensors.end()) << r.program.summary;
            EXPECT_EQ(padded->pad_value, -28.0);
            // The value matters: the conv padded with zeros gives other sums at the edges.
            cc.pad_value = 0;
            ConvProblem zero = make_conv(cc);
            const Buffer<> edge_zero = evaluate_reference(zero.pipeline, {zero.shape}, zero.bindings)[0];
            EXPECT_FALSE(compare(r.outputs[0], edge_zero, Tolerance::for_type(Int(32), 1)).equal) << chip;
        }
}

// ChipLayoutRequests: the graph compiler asks an NCHW conv to read its image in NHWC (the layout the
// conv before it wrote), so the image needs no layout change on the way; the program's map says
// it took it, and the values are the reference's. A request the kernel cannot take (the
// weights' order) leaves its layout as it was.
TEST(ChipConv, AnNchwConvReadsItsImageInNhwcWhenAsked) {
    for (const char *chip : {"tsp-mini", "npu-edge"})
        for (Type type : {Int(8), Float(32)}) {
            SCOPED_TRACE(std::string(chip) + " " + type.to_string());
            const ConvCase cc{1, 64, 9, 7, 32, 3, 1, 1, ops::Layout::NCHW, type, true};
            const ConvProblem p = make_conv(cc);
            const Buffer<> ref = p.pipeline.realize({p.shape}, p.bindings, Target::reference())[0];
            ChipLayoutRequests ask;
            ask.order["X"] = {0, 2, 3, 1};
            ask.order["Wt"] = {2, 3, 1, 0};
            const ChipProgram asked = compile_for_chip(p.pipeline, Target::named(chip), {p.shape}, {}, ask);
            const ChipProgram plain = compile_for_chip(p.pipeline, Target::named(chip), {p.shape});
            auto map_of = [](const ChipProgram &cp, const std::string &source) {
                for (const ChipTensorMap &m : cp.tensors)
                    if (m.source == source) return m;
                ADD_FAILURE() << "no tensor holds " << source;
                return ChipTensorMap{};
            };
            const ChipTensorMap image = map_of(asked, "X");
            EXPECT_EQ(image.chip_shape, (std::vector<int64_t>{1, 9, 7, 64}));
            EXPECT_EQ(image.chip_dim_of_source, (std::vector<int>{0, 3, 1, 2}));
            EXPECT_EQ(map_of(plain, "X").chip_dim_of_source, (std::vector<int>{0, 1, 2, 3}));
            EXPECT_EQ(map_of(asked, "Wt").chip_dim_of_source, map_of(plain, "Wt").chip_dim_of_source);
            const Tolerance tol = type.is_integer() ? Tolerance{} : Tolerance::for_type(BFloat(16), int64_t(cc.c) * cc.k * cc.k);
            const Comparison c = compare(run_on_chip(asked, p.bindings).outputs.at(0), ref, tol);
            EXPECT_TRUE(c.equal) << c.message;
        }
}

// ChipLayoutRequests::output_dtype: the graph compiler asks a kernel whose every reader rounds
// its fp32 result to bf16 to store bf16. Both chips pack the rows — the drain without an
// epilogue, the epilogue's last VXM step with one — and store the values the readers would
// read, bit for bit: npu-edge in no more cycles, moving half the bytes to DRAM; tsp-mini with
// half of C's bytes over the host link, in fewer cycles end to end.
TEST(ChipConv, AKernelStoresBf16WhenAskedAndEveryValueIsTheRoundedOne) {
    Input A(Float(32), {96, 128}, "A"), B(Float(32), {128, 160}, "B"), mb(Float(32), {160}, "mb");
    const Pipeline matmul(ops::relu(ops::add(ops::matmul(A, B), mb)));
    struct Case {
        std::string name;
        Pipeline pipeline;
        Bindings bindings;
        std::vector<int64_t> shape;
    };
    std::vector<Case> cases;
    for (bool bias : {false, true}) {
        const ConvProblem p = make_conv({1, 64, 9, 7, 96, 3, 1, 1, ops::Layout::NCHW, Float(32), bias});
        cases.push_back({bias ? "conv + bias" : "conv", p.pipeline, p.bindings, p.shape});
    }
    const Bindings mm_bindings{{A, test::random_buffer(Float(32), {96, 128}, 51)},
                               {B, test::random_buffer(Float(32), {128, 160}, 52)},
                               {mb, test::random_buffer(Float(32), {160}, 53)}};
    cases.push_back({"matmul + bias + relu", matmul, mm_bindings, {96, 160}});
    // An epilogue of several VXM steps (GELU's tanh form): the last one packs.
    cases.push_back({"matmul + bias + gelu", Pipeline(ops::gelu(ops::add(ops::matmul(A, B), mb), ops::GeluApproximation::Tanh)),
                     mm_bindings, {96, 160}});
    // B of 8.6 MB in fp32 (4.3 MB at bf16), over tsp-mini's 4 MiB of MEM: its streamed plan,
    // with the drain packing (no epilogue) and with the epilogue's last step packing.
    Input SA(Float(32), {8, 1056}, "SA"), SB(Float(32), {1056, 2048}, "SB"), sb(Float(32), {2048}, "sb");
    const Bindings streamed_bindings{{SA, test::random_buffer(Float(32), {8, 1056}, 54)},
                                     {SB, test::random_buffer(Float(32), {1056, 2048}, 55)},
                                     {sb, test::random_buffer(Float(32), {2048}, 56)}};
    cases.push_back({"streamed matmul", Pipeline(ops::matmul(SA, SB)), streamed_bindings, {8, 2048}});
    cases.push_back({"streamed matmul + bias + relu", Pipeline(ops::relu(ops::add(ops::matmul(SA, SB), sb))), streamed_bindings, {8, 2048}});
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const std::string out = c.pipeline.outputs()[0].name();
        ChipLayoutRequests ask;
        ask.output_dtype[out] = chipsim::DType::BF16;
        auto stored = [&](const ChipProgram &cp) { return test::stored_dtype(cp, out); };
        const ChipProgram tsp_plain = compile_for_chip(c.pipeline, Target::named("tsp-mini"), {c.shape});
        const ChipProgram tsp_asked = compile_for_chip(c.pipeline, Target::named("tsp-mini"), {c.shape}, {}, ask);
        EXPECT_EQ(stored(tsp_plain), chipsim::DType::FP32);
        ASSERT_EQ(stored(tsp_asked), chipsim::DType::BF16);
        EXPECT_NE(tsp_asked.summary.find("C stored as bf16, packed by the"), std::string::npos) << tsp_asked.summary;
        if (c.name.rfind("streamed", 0) == 0)
            EXPECT_NE(tsp_asked.summary.find("streamed on a plan"), std::string::npos) << tsp_asked.summary;
        const ChipResult tp = run_on_chip(tsp_plain, c.bindings), tq = run_on_chip(tsp_asked, c.bindings);
        test::expect_rounded_to_bf16(tq.outputs.at(0), tp.outputs.at(0));
        // tsp-mini's static schedule places the narrower results a little differently: the
        // kernel may take a few cycles more, the kernel with its host I/O fewer.
        EXPECT_LE(tq.report.cycles, tp.report.cycles + tp.report.cycles / 100);
        EXPECT_LT(tq.report.total_cycles, tp.report.total_cycles);
        EXPECT_LT(tq.report.bytes.at("HOST"), tp.report.bytes.at("HOST"));

        const ChipProgram plain = compile_for_chip(c.pipeline, Target::named("npu-edge"), {c.shape});
        const ChipProgram asked = compile_for_chip(c.pipeline, Target::named("npu-edge"), {c.shape}, {}, ask);
        EXPECT_EQ(stored(plain), chipsim::DType::FP32);
        ASSERT_EQ(stored(asked), chipsim::DType::BF16);
        EXPECT_NE(asked.summary.find("C stored as bf16, packed by the"), std::string::npos) << asked.summary;
        const ChipResult p = run_on_chip(plain, c.bindings), q = run_on_chip(asked, c.bindings);
        test::expect_rounded_to_bf16(q.outputs.at(0), p.outputs.at(0)); // the pipeline's type comes back, each value rounded
        EXPECT_LE(q.report.cycles, p.report.cycles);
        EXPECT_LT(q.report.bytes.at("DRAM"), p.report.bytes.at("DRAM"));
        EXPECT_LT(q.report.host_link_out_cycles, p.report.host_link_out_cycles);
    }
}

// ChipLayoutRequests::copy_dtype: a kernel whose value some readers round to bf16 and others
// take whole stores a bf16 copy in the chip's DRAM beside it (npu-edge; a .buffer, mapped in
// ChipProgram::copies). Read back as an output, the copy holds every value rounded to bf16; the
// output itself is unchanged. tsp-mini does not take the request.
TEST(ChipConv, AKernelStoresABf16CopyBesideItsOutputWhenAsked) {
    Input A(Float(32), {80, 64}, "A"), B(Float(32), {64, 96}, "B"), mb(Float(32), {96}, "mb");
    std::vector<ConvProblem> problems;
    for (bool bias : {false, true}) problems.push_back(make_conv({1, 64, 9, 7, 96, 3, 1, 1, ops::Layout::NCHW, Float(32), bias}));
    // A matmul whose epilogue has several VXM steps (GELU's tanh form), the copy cast after them.
    problems.push_back({Pipeline(ops::gelu(ops::add(ops::matmul(A, B), mb), ops::GeluApproximation::Tanh)),
                        {{A, test::random_buffer(Float(32), {80, 64}, 61)},
                         {B, test::random_buffer(Float(32), {64, 96}, 62)},
                         {mb, test::random_buffer(Float(32), {96}, 63)}},
                        {80, 64},
                        {80, 96}});
    for (const ConvProblem &p : problems) {
        SCOPED_TRACE(p.pipeline.outputs()[0].name());
        const std::string out = p.pipeline.outputs()[0].name();
        ChipLayoutRequests ask;
        ask.copy_dtype[out] = chipsim::DType::BF16;
        const ChipProgram tsp = compile_for_chip(p.pipeline, Target::named("tsp-mini"), {p.shape}, {}, ask);
        EXPECT_TRUE(tsp.copies.empty());
        EXPECT_EQ(tsp.assembly(), compile_for_chip(p.pipeline, Target::named("tsp-mini"), {p.shape}).assembly());

        const ChipProgram plain = compile_for_chip(p.pipeline, Target::named("npu-edge"), {p.shape});
        ChipProgram asked = compile_for_chip(p.pipeline, Target::named("npu-edge"), {p.shape}, {}, ask);
        EXPECT_TRUE(plain.copies.empty());
        ASSERT_EQ(asked.copies.size(), 1u);
        EXPECT_NE(asked.summary.find("a bf16 copy of C stored to DRAM too"), std::string::npos) << asked.summary;
        const ChipResult p_run = run_on_chip(plain, p.bindings), q_run = run_on_chip(asked, p.bindings);
        const Comparison same = compare(q_run.outputs.at(0), p_run.outputs.at(0), Tolerance{});
        EXPECT_TRUE(same.equal) << "the output is unchanged: " << same.message;
        test::expect_copy_holds_the_rounded_output(asked, p.bindings, out, p.shape);
    }
}

TEST(ChipConvErrors, AGroupedConvPaddedWithAValueSaysWhy) {
    ConvCase cc{1, 128, 6, 6, 32, 3, 1, 1, ops::Layout::NHWC, Int(8), false, 1, 2};
    cc.pad_value = 5;
    ConvProblem p = make_conv(cc);
    for (const char *chip : {"tsp-mini", "npu-edge"}) test::expect_chip_error(p.pipeline, p.shape, chip, "pads its image with 5");
}

TEST(ChipConvErrors, GroupedNhwcWithPartialRowsSaysWhy) {
    // 8 int8 channels a group: a group's slice of an NHWC pixel is not a whole 64-byte row.
    ConvProblem p = make_conv(ConvCase{1, 16, 6, 6, 16, 3, 1, 1, ops::Layout::NHWC, Int(8), false, 1, 2});
    for (const char *chip : {"tsp-mini", "npu-edge"}) test::expect_chip_error(p.pipeline, p.shape, chip, "grouped conv2d");
}

TEST(ChipConvErrors, GroupedNchwPlanesTooLargeForNpuStagingSaysWhy) {
    // 70 x 70 = 4900 pixels a channel plane: more than npu-edge's pre-pass stages at once (the
    // host cannot cut a group's channels out instead).
    ConvProblem p = make_conv(ConvCase{1, 4, 70, 70, 4, 1, 1, 0, ops::Layout::NCHW, Int(8), false, 1, 2});
    test::expect_chip_error(p.pipeline, p.shape, "npu-edge", "channel planes of 4900 pixels");
}

TEST(ChipConvErrors, GroupsNotDividingChannels) {
    Input X(Int(8), {1, 6, 5, 5}, "X"), Wt(Int(8), {8, 2, 3, 3}, "Wt");
    ops::Conv2dOptions opt;
    opt.groups = 4;
    EXPECT_THROW(ops::conv2d(X, Wt, opt), Error);
    try {
        ops::conv2d(X, Wt, opt);
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("not divisible by groups"), std::string::npos) << e.what();
    }
}

TEST(ChipConv, NpuStemConvFromNchwDoesNoMoreMacsThanFromNhwc) {
    // 3 channels: the NCHW image's DRAM copy pads them to the array's 32, as the host pads the
    // NHWC one, not to a whole 64-byte row (which would double the MACs).
    auto macs = [](ops::Layout layout) {
        ConvProblem p = make_conv(ConvCase{1, 3, 20, 21, 16, 7, 2, 3, layout, Int(8), false});
        ChipRunOptions timing;
        timing.functional = false;
        return run_on_chip(compile_for_chip(p.pipeline, Target::named("npu-edge"), {p.shape}), {}, timing).report.macs;
    };
    EXPECT_EQ(macs(ops::Layout::NCHW), macs(ops::Layout::NHWC));
}

TEST(ChipConv, ResNetLayerImageCrossesTheLinkOnce) {
    // 56x56x64 NHWC 3x3: before, the host padded the image and every tap's window crossed the
    // link (9 times); now the raw image crosses once and the chip reads windows from MEM.
    ConvProblem p = make_conv(ConvCase{1, 64, 56, 56, 64, 3, 1, 1, ops::Layout::NHWC, Int(8), false});
    ChipProgram cp = compile_for_chip(p.pipeline, Target::named("tsp-mini"), {p.shape});
    int64_t image = 0;
    for (const auto &in : cp.program.instructions)
        if (in.op == chipsim::Opcode::DmaLoad && in.view.tensor == "X") image += in.view.total_bytes();
    EXPECT_EQ(image, 56 * 56 * 64);
}

} // namespace
} // namespace tessera
