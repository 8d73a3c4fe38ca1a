// Depthwise conv2d (groups == channels) from the operator library on both chips' VXM, against
// the reference: int8 exactly, floats within fp32's tolerance (same products, same order);
// channel counts that are not a multiple of 16 (padded lanes), strides, dilation, bias.
#include "chip_test_util.h"

namespace tessera {
namespace {

struct DwCase {
    int n, c, h, w, k, stride, pad, dilation;
    ops::Layout layout;
    Type type;
    bool bias;
};
/// How ctest and failure messages name a case.
void PrintTo(const DwCase &c, std::ostream *os) {
    *os << c.n << "x" << c.c << "x" << c.h << "x" << c.w << " " << c.k << "x" << c.k << " stride " << c.stride << " pad "
        << c.pad << " dilation " << c.dilation << (c.layout == ops::Layout::NCHW ? " NCHW " : " NHWC ")
        << c.type.to_string() << (c.bias ? " +bias" : "");
}

class ChipDepthwise : public ::testing::TestWithParam<std::tuple<std::string, DwCase>> {};

TEST_P(ChipDepthwise, EqualsReference) {
    const auto &[chip, dc] = GetParam();
    const bool nchw = dc.layout == ops::Layout::NCHW;
    const std::vector<int64_t> xs = nchw ? std::vector<int64_t>{dc.n, dc.c, dc.h, dc.w} : std::vector<int64_t>{dc.n, dc.h, dc.w, dc.c};
    const std::vector<int64_t> ws = nchw ? std::vector<int64_t>{dc.c, 1, dc.k, dc.k} : std::vector<int64_t>{dc.k, dc.k, 1, dc.c};
    const Type acc = dc.type == Int(8) ? Int(32) : Float(32);
    Input X(dc.type, test::extents(xs), "X"), Wt(dc.type, test::extents(ws), "W"), bias(acc, {dc.c}, "bias");
    ops::Conv2dOptions o;
    o.stride = {dc.stride, dc.stride};
    o.padding = dc.pad;
    o.dilation = {dc.dilation, dc.dilation};
    o.groups = dc.c;
    o.layout = dc.layout;
    Func conv = dc.bias ? ops::conv2d(X, Wt, bias, o) : ops::conv2d(X, Wt, o);
    const int64_t span = int64_t(dc.dilation) * (dc.k - 1) + 1;
    const int64_t oh = (dc.h + 2 * dc.pad - span) / dc.stride + 1, ow = (dc.w + 2 * dc.pad - span) / dc.stride + 1;
    const std::vector<int64_t> shape = nchw ? std::vector<int64_t>{dc.n, dc.c, oh, ow} : std::vector<int64_t>{dc.n, oh, ow, dc.c};
    Bindings bind{{X, test::random_buffer(dc.type, xs, 21)}, {Wt, test::random_buffer(dc.type, ws, 22)}};
    if (dc.bias) bind.push_back({bias, test::random_buffer(acc, {dc.c}, 23)});
    const Tolerance tol = dc.type == Int(8) ? Tolerance{} : Tolerance::for_type(Float(32), int64_t(dc.k) * dc.k);
    ChipResult r = test::expect_matches_reference_within(Pipeline(conv), shape, bind, chip, tol);
    EXPECT_NE(r.program.summary.find("depthwise conv2d"), std::string::npos) << r.program.summary;
    EXPECT_EQ(r.report.macs, 0) << "a depthwise conv runs on the VXM, not the MXM";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChipDepthwise,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(DwCase{1, 7, 9, 10, 3, 1, 1, 1, ops::Layout::NCHW, Int(8), false},
                                         DwCase{2, 32, 8, 8, 3, 2, 1, 1, ops::Layout::NHWC, Int(8), true},
                                         DwCase{1, 20, 7, 9, 3, 1, 2, 2, ops::Layout::NCHW, Float(32), true},
                                         DwCase{1, 16, 6, 6, 5, 1, 0, 1, ops::Layout::NHWC, BFloat(16), false})),
    [](const auto &info) {
        const DwCase &c = std::get<1>(info.param);
        return test::test_name(std::get<0>(info.param) + "_c" + std::to_string(c.c) + "_k" + std::to_string(c.k) + "_s" +
                               std::to_string(c.stride) + "_d" + std::to_string(c.dilation) + "_" + c.type.to_string() +
                               (c.layout == ops::Layout::NCHW ? "_nchw" : "_nhwc") + (c.bias ? "_bias" : ""));
    });

TEST(ChipDepthwise, AnIntegerConvsZeroPointPaddingIsWrittenByTheHost) {
    // A quantised depthwise conv (MobileNet's) whose padding holds the image's zero point: the
    // host writes it into the padded image the VXM kernel reads; exact on both chips, and not
    // what zero padding gives.
    for (const char *chip : {"tsp-mini", "npu-edge"}) {
        Input X(Int(8), {1, 24, 9, 9}, "X"), Wt(Int(8), {24, 1, 3, 3}, "W");
        ops::Conv2dOptions o;
        o.padding = 1;
        o.groups = 24;
        o.pad_value = -28;
        const Pipeline p(ops::conv2d(X, Wt, o).func());
        const Bindings bind{{X, test::random_buffer(Int(8), {1, 24, 9, 9}, 24)}, {Wt, test::random_buffer(Int(8), {24, 1, 3, 3}, 25)}};
        ChipResult r = test::expect_matches_reference_within(p, {1, 24, 9, 9}, bind, chip, Tolerance{});
        EXPECT_NE(r.program.summary.find("depthwise conv2d"), std::string::npos) << r.program.summary;
        o.pad_value = 0;
        const Pipeline zero(ops::conv2d(X, Wt, o).func());
        EXPECT_FALSE(compare(r.outputs[0], zero.realize({{1, 24, 9, 9}}, bind, Target::reference())[0], Tolerance{}).equal) << chip;
    }
}

TEST(ChipDepthwise, MobileNetLayerCompiles) {
    // 56 x 56 x 64 (a MobileNet layer): many output rows in flight; on tsp-mini every product
    // must land on a slice apart from the sum it joins (compile only: the values are checked
    // at the smaller shapes above).
    Input X(Int(8), {1, 64, 56, 56}, "X"), Wt(Int(8), {64, 1, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.groups = 64;
    o.padding = 1;
    for (const char *chip : {"tsp-mini", "npu-edge"})
        EXPECT_NO_THROW(compile_for_chip(Pipeline(ops::conv2d(X, Wt, o)), Target::named(chip), {{1, 64, 56, 56}})) << chip;
}

TEST(ChipDepthwise, AChannelMultiplierCompilesAsAGroupedConv) {
    // groups == channels but two filters per channel: not the depthwise kernel's form, so it
    // compiles as any grouped conv does (it used to be refused by the depthwise recogniser).
    Input X(Int(8), {1, 4, 6, 6}, "X"), Wt(Int(8), {8, 1, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.groups = 4;
    Func conv = ops::conv2d(X, Wt, o);
    const Bindings b{{X, test::random_buffer(Int(8), {1, 4, 6, 6}, 5)}, {Wt, test::random_buffer(Int(8), {8, 1, 3, 3}, 6)}};
    for (const char *chip : {"tsp-mini", "npu-edge"}) {
        const ChipResult r = test::expect_matches_reference_within(Pipeline(conv), {1, 8, 4, 4}, b, chip, Tolerance::for_type(Int(32)));
        EXPECT_EQ(r.program.summary.find("depthwise"), std::string::npos) << r.program.summary;
    }
}

} // namespace
} // namespace tessera
