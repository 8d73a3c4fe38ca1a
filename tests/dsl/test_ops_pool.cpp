// ops::max_pool2d, ops::avg_pool2d and ops::global_avg_pool2d against direct loops: both
// layouts, stride, asymmetric padding, dilation, count_include_pad, odd shapes; errors.
#include <limits>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

enum class Kind { Max, Avg };

/// Pooling by definition over a logical [N, C, H, W] view of `in`; padded taps are skipped by
/// max and by avg unless count_include_pad (then they count as zeros).
std::vector<double> pool_loops(Kind kind, const ops::Pool2dOptions &o, const Buffer<> &in, std::vector<int64_t> &out_shape) {
    const bool nchw = o.layout == ops::Layout::NCHW;
    const auto &s = in.shape();
    const int64_t n = s[0], c = nchw ? s[1] : s[3], h = nchw ? s[2] : s[1], w = nchw ? s[3] : s[2];
    const int64_t oh = (h + o.padding.top + o.padding.bottom - o.dilation[0] * (o.kernel[0] - 1) - 1) / o.stride[0] + 1;
    const int64_t ow = (w + o.padding.left + o.padding.right - o.dilation[1] * (o.kernel[1] - 1) - 1) / o.stride[1] + 1;
    out_shape = nchw ? std::vector<int64_t>{n, c, oh, ow} : std::vector<int64_t>{n, oh, ow, c};
    const auto iv = values(in);
    std::vector<double> out(static_cast<size_t>(count(out_shape)));
    for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t y = 0; y < oh; ++y)
                for (int64_t x = 0; x < ow; ++x) {
                    double best = -std::numeric_limits<double>::infinity(), sum = 0;
                    int64_t inside = 0;
                    for (int64_t ky = 0; ky < o.kernel[0]; ++ky)
                        for (int64_t kx = 0; kx < o.kernel[1]; ++kx) {
                            const int64_t iy = y * o.stride[0] + ky * o.dilation[0] - o.padding.top;
                            const int64_t ix = x * o.stride[1] + kx * o.dilation[1] - o.padding.left;
                            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                            const std::vector<int64_t> ic = nchw ? std::vector<int64_t>{b, ch, iy, ix}
                                                                 : std::vector<int64_t>{b, iy, ix, ch};
                            const double v = iv[static_cast<size_t>(offset(s, ic))];
                            best = std::max(best, v);
                            sum += v;
                            ++inside;
                        }
                    const std::vector<int64_t> oc = nchw ? std::vector<int64_t>{b, ch, y, x} : std::vector<int64_t>{b, y, x, ch};
                    const double divisor = o.count_include_pad ? static_cast<double>(o.kernel[0] * o.kernel[1])
                                                               : static_cast<double>(inside);
                    out[static_cast<size_t>(offset(out_shape, oc))] = kind == Kind::Max ? best : sum / divisor;
                }
    return out;
}

ops::Pool2dOptions pool(std::array<int, 2> k, std::array<int, 2> s, ops::Padding2d p, std::array<int, 2> d, bool include,
                        ops::Layout layout) {
    ops::Pool2dOptions o;
    o.kernel = k;
    o.stride = s;
    o.padding = p;
    o.dilation = d;
    o.count_include_pad = include;
    o.layout = layout;
    return o;
}

void run_pool(Kind kind, const ops::Pool2dOptions &o, std::vector<int64_t> shape, Type type, uint64_t seed) {
    Input X(type, std::vector<Expr>(shape.begin(), shape.end()), "X");
    const ops::Tensor out = kind == Kind::Max ? ops::max_pool2d(X, o) : ops::avg_pool2d(X, o);
    EXPECT_EQ(out.type(), type);
    Buffer<> x = random_buffer(type, shape, seed);
    std::vector<int64_t> out_shape;
    const auto expected = pool_loops(kind, o, x, out_shape);
    expect_matches(out.realize({{X, x}}), out_shape, expected, type, kind == Kind::Avg ? o.kernel[0] * o.kernel[1] : 1);
}

const std::vector<std::pair<ops::Pool2dOptions, std::vector<int64_t>>> &cases() {
    using L = ops::Layout;
    static const std::vector<std::pair<ops::Pool2dOptions, std::vector<int64_t>>> c = {
        {pool({1, 1}, {1, 1}, {0}, {1, 1}, false, L::NCHW), {1, 1, 1, 1}},
        {pool({2, 2}, {2, 2}, {0}, {1, 1}, false, L::NCHW), {2, 3, 7, 9}},
        {pool({3, 3}, {2, 2}, {1}, {1, 1}, false, L::NCHW), {1, 3, 7, 8}},
        {pool({3, 3}, {2, 2}, {1}, {1, 1}, true, L::NCHW), {1, 3, 7, 8}},
        {pool({3, 2}, {1, 2}, {1, 0, 0, 1}, {1, 1}, false, L::NCHW), {2, 2, 6, 7}},
        {pool({3, 3}, {1, 1}, {2, 1}, {2, 1}, false, L::NCHW), {1, 2, 9, 7}},
        {pool({2, 2}, {2, 2}, {0}, {1, 1}, false, L::NHWC), {2, 7, 9, 3}},
        {pool({3, 3}, {2, 2}, {1}, {1, 1}, false, L::NHWC), {1, 7, 8, 3}},
        {pool({3, 3}, {2, 1}, {1}, {1, 1}, true, L::NHWC), {1, 37, 5, 2}},
    };
    return c;
}

TEST(OpsPool, MaxPoolFp32AndInt8) {
    uint64_t seed = 1;
    for (const auto &[o, shape] : cases()) {
        run_pool(Kind::Max, o, shape, Float(32), ++seed);
        run_pool(Kind::Max, o, shape, Int(8), ++seed);
    }
}

TEST(OpsPool, AvgPoolFp32AndBf16) {
    uint64_t seed = 50;
    for (const auto &[o, shape] : cases()) run_pool(Kind::Avg, o, shape, Float(32), ++seed);
    run_pool(Kind::Avg, cases()[3].first, cases()[3].second, BFloat(16), 70);
    run_pool(Kind::Avg, cases()[7].first, cases()[7].second, BFloat(16), 71);
}

TEST(OpsPool, PaddingNeverWinsAMax) {
    // All-negative input: a zero from the padding would win a max if padding were read as 0.
    Input X(Float(32), {1, 1, 3, 3}, "X");
    ops::Pool2dOptions o;
    o.kernel = {3, 3};
    o.padding = {1};
    Buffer<float> x({1, 1, 3, 3});
    for (int i = 0; i < 9; ++i) x.data()[i] = -1.0f - static_cast<float>(i);
    const Buffer<float> out = ops::max_pool2d(X, o).realize({{X, x}});
    EXPECT_EQ(out(0, 0, 0, 0), -1.0f);
    EXPECT_EQ(out(0, 0, 2, 2), -5.0f);
    EXPECT_EQ(out(0, 0, 2, 0), -4.0f);
}

TEST(OpsPool, GlobalAveragePool) {
    for (ops::Layout layout : {ops::Layout::NCHW, ops::Layout::NHWC}) {
        const bool nchw = layout == ops::Layout::NCHW;
        const std::vector<int64_t> shape = nchw ? std::vector<int64_t>{2, 3, 7, 5} : std::vector<int64_t>{2, 7, 5, 3};
        Input X(Float(32), std::vector<Expr>(shape.begin(), shape.end()), "X");
        Buffer<> x = random_buffer(Float(32), shape, 90);
        const auto xv = values(x);
        std::vector<double> expected;
        std::vector<int64_t> out_shape = nchw ? std::vector<int64_t>{2, 3, 1, 1} : std::vector<int64_t>{2, 1, 1, 3};
        for (int64_t n = 0; n < 2; ++n)
            for (int64_t c = 0; c < 3; ++c) {
                double s = 0;
                for (int64_t y = 0; y < 7; ++y)
                    for (int64_t xx = 0; xx < 5; ++xx)
                        s += xv[static_cast<size_t>(offset(shape, nchw ? std::vector<int64_t>{n, c, y, xx}
                                                                       : std::vector<int64_t>{n, y, xx, c}))];
                expected.push_back(s / 35.0);
            }
        const ops::Tensor out = ops::global_avg_pool2d(X, layout);
        ASSERT_EQ(out.concrete_shape(), out_shape);
        expect_matches(out.realize({{X, x}}), out_shape, expected, Float(32), 35);
    }
}

TEST(OpsPool, Errors) {
    Input X(Float(32), {1, 2, 5, 5}, "X"), X3(Float(32), {2, 5, 5}, "X3"), Xi(Int(8), {1, 2, 5, 5}, "Xi");
    ops::Pool2dOptions o;
    o.kernel = {3, 3};
    o.padding = {2};
    EXPECT_OPS_ERROR(ops::max_pool2d(X, o), "ops::max_pool2d 'max_pool2d'", "at most half");
    o = {};
    o.kernel = {7, 1};
    o.name = "p1";
    EXPECT_OPS_ERROR(ops::avg_pool2d(X, o), "ops::avg_pool2d 'p1'", "output would be empty");
    EXPECT_OPS_ERROR(ops::max_pool2d(X3), "ops::max_pool2d", "'X3'", "rank 4");
    EXPECT_OPS_ERROR(ops::avg_pool2d(Xi), "ops::avg_pool2d", "int8", "floating-point");
    o = {};
    o.kernel = {0, 2};
    EXPECT_OPS_ERROR(ops::max_pool2d(X, o), "kernel size 0");
    EXPECT_OPS_ERROR(ops::global_avg_pool2d(X3), "ops::global_avg_pool2d", "rank 4");
}

} // namespace
