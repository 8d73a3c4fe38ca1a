// ops::conv2d against a direct seven-loop convolution: NCHW/OIHW and NHWC/HWIO, stride,
// asymmetric padding, dilation, groups and depthwise, bias; int8 (exact), fp32 and bf16;
// names and shape errors.
#include "ops_test_util.h"
#include "tessera/internal/function.h"

namespace {

using namespace tessera;
using namespace ops_test;

struct ConvCase {
    int64_t n, c, h, w, o, kh, kw;
    ops::Conv2dOptions options;
    bool bias = false;
};

/// Logical [N, C, H, W] input and [O, C/groups, KH, KW] weights, whatever the storage layout.
std::vector<int64_t> input_shape(const ConvCase &p) {
    return p.options.layout == ops::Layout::NCHW ? std::vector<int64_t>{p.n, p.c, p.h, p.w}
                                                 : std::vector<int64_t>{p.n, p.h, p.w, p.c};
}
std::vector<int64_t> weight_shape(const ConvCase &p) {
    const int64_t cg = p.c / p.options.groups;
    return p.options.layout == ops::Layout::NCHW ? std::vector<int64_t>{p.o, cg, p.kh, p.kw}
                                                 : std::vector<int64_t>{p.kh, p.kw, cg, p.o};
}

/// The convolution by its definition, in double.
std::vector<double> conv_loops(const ConvCase &p, const Buffer<> &in, const Buffer<> &wt, const Buffer<> *bias,
                               std::vector<int64_t> &out_shape) {
    const auto &o = p.options;
    const bool nchw = o.layout == ops::Layout::NCHW;
    const auto iv = values(in), wv = values(wt);
    const std::vector<double> bv = bias ? values(*bias) : std::vector<double>();
    const int64_t cg = p.c / o.groups, og = p.o / o.groups;
    const int64_t oh = (p.h + o.padding.top + o.padding.bottom - o.dilation[0] * (p.kh - 1) - 1) / o.stride[0] + 1;
    const int64_t ow = (p.w + o.padding.left + o.padding.right - o.dilation[1] * (p.kw - 1) - 1) / o.stride[1] + 1;
    out_shape = nchw ? std::vector<int64_t>{p.n, p.o, oh, ow} : std::vector<int64_t>{p.n, oh, ow, p.o};
    auto in_at = [&](int64_t n, int64_t c, int64_t y, int64_t x) {
        return iv[static_cast<size_t>(nchw ? ((n * p.c + c) * p.h + y) * p.w + x : ((n * p.h + y) * p.w + x) * p.c + c)];
    };
    auto w_at = [&](int64_t oc, int64_t ic, int64_t ky, int64_t kx) {
        return wv[static_cast<size_t>(nchw ? ((oc * cg + ic) * p.kh + ky) * p.kw + kx : ((ky * p.kw + kx) * cg + ic) * p.o + oc)];
    };
    std::vector<double> out(static_cast<size_t>(count(out_shape)));
    for (int64_t n = 0; n < p.n; ++n)
        for (int64_t oc = 0; oc < p.o; ++oc)
            for (int64_t y = 0; y < oh; ++y)
                for (int64_t x = 0; x < ow; ++x) {
                    double s = bias ? bv[static_cast<size_t>(oc)] : 0.0;
                    const int64_t g = oc / og;
                    for (int64_t ic = 0; ic < cg; ++ic)
                        for (int64_t ky = 0; ky < p.kh; ++ky)
                            for (int64_t kx = 0; kx < p.kw; ++kx) {
                                const int64_t iy = y * o.stride[0] + ky * o.dilation[0] - o.padding.top;
                                const int64_t ix = x * o.stride[1] + kx * o.dilation[1] - o.padding.left;
                                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                                s += in_at(n, g * cg + ic, iy, ix) * w_at(oc, ic, ky, kx);
                            }
                    const std::vector<int64_t> c = nchw ? std::vector<int64_t>{n, oc, y, x} : std::vector<int64_t>{n, y, x, oc};
                    out[static_cast<size_t>(offset(out_shape, c))] = s;
                }
    return out;
}

void run_conv(const ConvCase &p, Type type, uint64_t seed) {
    const auto is = input_shape(p), ws = weight_shape(p);
    Input I(type, std::vector<Expr>(is.begin(), is.end()), "I"), W(type, std::vector<Expr>(ws.begin(), ws.end()), "W");
    const Type acc = ops::accumulator_type(type);
    Input Bias(acc, {static_cast<int>(p.o)}, "bias");
    const ops::Tensor out = p.bias ? ops::conv2d(I, W, Bias, p.options) : ops::conv2d(I, W, p.options);
    EXPECT_EQ(out.type(), acc);
    Buffer<> in = random_buffer(type, is, seed), wt = random_buffer(type, ws, seed + 1), b = random_buffer(acc, {p.o}, seed + 2);
    std::vector<int64_t> shape;
    const auto expected = conv_loops(p, in, wt, p.bias ? &b : nullptr, shape);
    Bindings bindings{{I, in}, {W, wt}};
    if (p.bias) bindings.emplace_back(Bias, b);
    expect_matches(out.realize(bindings), shape, expected, acc, p.c / p.options.groups * p.kh * p.kw);
}

ops::Conv2dOptions opts(std::array<int, 2> stride, ops::Padding2d pad, std::array<int, 2> dil, int groups, ops::Layout layout) {
    ops::Conv2dOptions o;
    o.stride = stride;
    o.padding = pad;
    o.dilation = dil;
    o.groups = groups;
    o.layout = layout;
    return o;
}

const std::vector<ConvCase> &cases() {
    using L = ops::Layout;
    static const std::vector<ConvCase> c = {
        {1, 1, 1, 1, 1, 1, 1, opts({1, 1}, {0}, {1, 1}, 1, L::NCHW)},
        {2, 3, 7, 9, 5, 3, 3, opts({1, 1}, {0}, {1, 1}, 1, L::NCHW), true},
        {1, 3, 9, 7, 4, 3, 2, opts({2, 1}, {1, 0, 2, 1}, {1, 1}, 1, L::NCHW)},
        {1, 2, 11, 10, 3, 3, 3, opts({1, 2}, {2, 2}, {2, 1}, 1, L::NCHW), true},
        {2, 4, 7, 7, 6, 3, 3, opts({1, 1}, {1}, {1, 1}, 2, L::NCHW)},
        {1, 5, 8, 6, 5, 3, 3, opts({2, 2}, {1}, {1, 1}, 5, L::NCHW), true}, // depthwise
        {2, 3, 7, 9, 5, 3, 3, opts({1, 1}, {0}, {1, 1}, 1, L::NHWC), true},
        {1, 3, 9, 7, 4, 3, 2, opts({2, 1}, {1, 0, 2, 1}, {1, 1}, 1, L::NHWC)},
        {1, 2, 11, 10, 3, 3, 3, opts({1, 2}, {2, 2}, {2, 1}, 1, L::NHWC)},
        {2, 4, 7, 7, 6, 3, 3, opts({1, 1}, {1}, {1, 1}, 2, L::NHWC), true},
        {1, 6, 7, 5, 6, 3, 3, opts({1, 1}, {1}, {1, 1}, 6, L::NHWC)}, // depthwise
    };
    return c;
}

TEST(OpsConv2d, Fp32MatchesLoops) {
    uint64_t seed = 100;
    for (const ConvCase &p : cases()) {
        SCOPED_TRACE("case with C=" + std::to_string(p.c) + " O=" + std::to_string(p.o) + " groups=" +
                     std::to_string(p.options.groups) + " layout=" + ops::layout_name(p.options.layout));
        run_conv(p, Float(32), seed += 3);
    }
}

TEST(OpsConv2d, Int8IsExact) {
    uint64_t seed = 200;
    for (size_t i : {1u, 3u, 5u, 9u}) run_conv(cases()[i], Int(8), seed += 3);
}

TEST(OpsConv2d, Bf16WithinTolerance) {
    run_conv(cases()[2], BFloat(16), 300);
    run_conv(cases()[10], BFloat(16), 303);
}

TEST(OpsConv2d, NamesOfFuncsVarsAndRDom) {
    Input I(Float(32), {1, 4, 6, 6}, "I"), W(Float(32), {2, 4, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.padding = {1};
    o.name = "conv1";
    const Func f = ops::conv2d(I, W, o);
    EXPECT_EQ(f.name(), "conv1");
    EXPECT_EQ(f.args(), (std::vector<std::string>{"n", "c", "y", "x"}));
    ASSERT_EQ(f.num_updates(), 1);
    const auto &rdom = f.contents()->updates[0].rdom;
    ASSERT_NE(rdom, nullptr);
    EXPECT_EQ(rdom->name, "r");
    ASSERT_EQ(rdom->vars.size(), 3u);
    ASSERT_EQ(internal::topological_order({f}).size(), 2u);
    EXPECT_EQ(internal::topological_order({f})[0].name(), "conv1_padded");

    Input In(Float(32), {1, 6, 6, 4}, "In"), Wn(Float(32), {3, 3, 4, 2}, "Wn");
    ops::Conv2dOptions on;
    on.layout = ops::Layout::NHWC;
    const Func g = ops::conv2d(In, Wn, on);
    EXPECT_EQ(g.name(), "conv2d");
    EXPECT_EQ(g.args(), (std::vector<std::string>{"n", "y", "x", "c"}));
    EXPECT_EQ(internal::topological_order({g}).size(), 1u) << "no padding: the Input is read directly";
}

TEST(OpsConv2d, Errors) {
    Input I(Float(32), {1, 4, 6, 6}, "I"), W(Float(32), {2, 3, 3, 3}, "W"), W8(Int(8), {2, 4, 3, 3}, "W8");
    Input Wok(Float(32), {2, 4, 3, 3}, "Wok"), I3(Float(32), {4, 6, 6}, "I3"), Big(Float(32), {2, 4, 9, 9}, "big");
    Input B(Float(32), {3}, "b");
    EXPECT_OPS_ERROR(ops::conv2d(I, W), "ops::conv2d 'conv2d'", "input has 4 channels", "weights need 4", "have 3", "OIHW");
    EXPECT_OPS_ERROR(ops::conv2d(I, W8), "ops::conv2d", "accumulate in different types");
    EXPECT_OPS_ERROR(ops::conv2d(I3, Wok), "ops::conv2d", "'I3'", "rank 4");
    EXPECT_OPS_ERROR(ops::conv2d(I, Big), "ops::conv2d", "output would be empty");
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, B), "ops::conv2d", "bias 'b'", "[3]", "[2]");
    ops::Conv2dOptions o;
    o.groups = 3;
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d", "not divisible by groups");
    o = {};
    o.stride = {0, 1};
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d", "stride 0");
    o = {};
    o.padding = {-1};
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d", "padding -1");
    // Found by fuzz_op_words (UBSan): top + bottom of a padding near 2^31 overflowed int.
    o.padding = {1627446635};
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d", "padding 1627446635 must be in 0..16777216");
    o = {};
    o.dilation = {1 << 30, 1};
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d", "dilation 1073741824 must be in 1..16777216");
    o = {};
    o.layout = ops::Layout::NHWC;
    o.name = "nhwc";
    EXPECT_OPS_ERROR(ops::conv2d(I, Wok, o), "ops::conv2d 'nhwc'", "HWIO");
}

} // namespace
