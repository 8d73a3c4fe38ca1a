// batchnorm, layernorm, rmsnorm, softmax and log_softmax against loops in double: several
// axes, fp32 and bf16, large inputs that overflow a naive softmax; errors.
#include <cmath>
#include <limits>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

/// softmax (or log_softmax) along `axis` by definition, in double.
std::vector<double> softmax_loops(const Buffer<> &x, int axis, bool log) {
    const auto &s = x.shape();
    const auto xv = values(x);
    std::vector<double> out(xv.size());
    std::vector<int64_t> outer = s;
    outer[static_cast<size_t>(axis)] = 1;
    for_each_index(outer, [&](const std::vector<int64_t> &c) {
        std::vector<int64_t> p = c;
        double m = -std::numeric_limits<double>::infinity(), sum = 0;
        for (int64_t k = 0; k < s[static_cast<size_t>(axis)]; ++k) {
            p[static_cast<size_t>(axis)] = k;
            m = std::max(m, xv[static_cast<size_t>(offset(s, p))]);
        }
        for (int64_t k = 0; k < s[static_cast<size_t>(axis)]; ++k) {
            p[static_cast<size_t>(axis)] = k;
            sum += std::exp(xv[static_cast<size_t>(offset(s, p))] - m);
        }
        for (int64_t k = 0; k < s[static_cast<size_t>(axis)]; ++k) {
            p[static_cast<size_t>(axis)] = k;
            const size_t o = static_cast<size_t>(offset(s, p));
            out[o] = log ? xv[o] - m - std::log(sum) : std::exp(xv[o] - m) / sum;
        }
    });
    return out;
}

TEST(OpsSoftmax, EveryAxisFp32) {
    const std::vector<int64_t> shape{3, 7, 37};
    Input X(Float(32), {3, 7, 37}, "X");
    Buffer<> x = random_buffer(Float(32), shape, 1);
    for (int axis : {0, 1, 2, -1, -3}) {
        const int a = axis < 0 ? axis + 3 : axis;
        SCOPED_TRACE("axis " + std::to_string(axis));
        expect_matches(ops::softmax(X, axis).realize({{X, x}}), shape, softmax_loops(x, a, false), Float(32), shape[static_cast<size_t>(a)]);
        expect_matches(ops::log_softmax(X, axis).realize({{X, x}}), shape, softmax_loops(x, a, true), Float(32), shape[static_cast<size_t>(a)]);
    }
}

TEST(OpsSoftmax, StableForLargeInputs) {
    // exp(1000) overflows any float type: only the max-subtracted form gives finite results.
    Input X(Float(32), {2, 5}, "X");
    Buffer<float> x({2, 5});
    for (int i = 0; i < 10; ++i) x.data()[i] = 1000.0f + static_cast<float>(i % 5) - (i >= 5 ? 3000.0f : 0.0f);
    expect_matches(ops::softmax(X).realize({{X, x}}), {2, 5}, softmax_loops(x, 1, false), Float(32), 5);
    expect_matches(ops::log_softmax(X).realize({{X, x}}), {2, 5}, softmax_loops(x, 1, true), Float(32), 5);
    const Buffer<float> s = ops::softmax(X).realize({{X, x}});
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(std::isfinite(s.data()[i]));
}

TEST(OpsSoftmax, Bf16) {
    Input X(BFloat(16), {7, 37}, "X");
    Buffer<> x = random_buffer(BFloat(16), {7, 37}, 2);
    const ops::Tensor s = ops::softmax(X);
    EXPECT_EQ(s.type(), BFloat(16));
    expect_matches(s.realize({{X, x}}), {7, 37}, softmax_loops(x, 1, false), BFloat(16));
    expect_matches(ops::log_softmax(X, 0).realize({{X, x}}), {7, 37}, softmax_loops(x, 0, true), BFloat(16));
}

/// layernorm (rms = false) or rmsnorm (rms = true) over the last `k` dimensions, in double.
std::vector<double> norm_loops(const Buffer<> &x, int k, const Buffer<> *gamma, const Buffer<> *beta, double eps, bool rms) {
    const auto &s = x.shape();
    int64_t inner = 1;
    for (size_t d = s.size() - static_cast<size_t>(k); d < s.size(); ++d) inner *= s[d];
    const auto xv = values(x);
    const std::vector<double> g = gamma ? values(*gamma) : std::vector<double>(), b = beta ? values(*beta) : std::vector<double>();
    std::vector<double> out(xv.size());
    for (size_t row = 0; row < xv.size() / static_cast<size_t>(inner); ++row) {
        const double *v = &xv[row * static_cast<size_t>(inner)];
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) mean += v[i];
        mean /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) var += rms ? v[i] * v[i] : (v[i] - mean) * (v[i] - mean);
        var /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) {
            double y = (rms ? v[i] : v[i] - mean) / std::sqrt(var + eps);
            if (gamma) y *= g[static_cast<size_t>(i)];
            if (beta) y += b[static_cast<size_t>(i)];
            out[row * static_cast<size_t>(inner) + static_cast<size_t>(i)] = y;
        }
    }
    return out;
}

TEST(OpsLayerNorm, LastOneAndTwoDimensions) {
    const std::vector<int64_t> shape{3, 7, 37};
    Input X(Float(32), {3, 7, 37}, "X"), G(Float(32), {37}, "gamma"), B(Float(32), {37}, "beta");
    Input G2(Float(32), {7, 37}, "gamma2"), B2(Float(32), {7, 37}, "beta2");
    Buffer<> x = random_buffer(Float(32), shape, 3), g = random_buffer(Float(32), {37}, 4), b = random_buffer(Float(32), {37}, 5);
    Buffer<> g2 = random_buffer(Float(32), {7, 37}, 6), b2 = random_buffer(Float(32), {7, 37}, 7);
    expect_matches(ops::layernorm(X, G, B).realize({{X, x}, {G, g}, {B, b}}), shape, norm_loops(x, 1, &g, &b, 1e-5, false), Float(32), 37);
    expect_matches(ops::layernorm(X).realize({{X, x}}), shape, norm_loops(x, 1, nullptr, nullptr, 1e-5, false), Float(32), 37);
    expect_matches(ops::layernorm(X, G2, B2, 2, 1e-3).realize({{X, x}, {G2, g2}, {B2, b2}}), shape,
                   norm_loops(x, 2, &g2, &b2, 1e-3, false), Float(32), 259);
    expect_matches(ops::layernorm(X, ops::Tensor(), ops::Tensor(), 3).realize({{X, x}}), shape,
                   norm_loops(x, 3, nullptr, nullptr, 1e-5, false), Float(32), 777);
}

TEST(OpsLayerNorm, Bf16) {
    Input X(BFloat(16), {5, 37}, "X"), G(BFloat(16), {37}, "gamma"), B(BFloat(16), {37}, "beta");
    Buffer<> x = random_buffer(BFloat(16), {5, 37}, 8), g = random_buffer(BFloat(16), {37}, 9), b = random_buffer(BFloat(16), {37}, 10);
    const ops::Tensor y = ops::layernorm(X, G, B);
    EXPECT_EQ(y.type(), BFloat(16));
    expect_matches(y.realize({{X, x}, {G, g}, {B, b}}), {5, 37}, norm_loops(x, 1, &g, &b, 1e-5, false), BFloat(16));
}

TEST(OpsRmsNorm, Fp32AndBf16) {
    for (Type t : {Float(32), BFloat(16)}) {
        Input X(t, {7, 1, 37}, "X"), G(t, {37}, "gamma");
        Buffer<> x = random_buffer(t, {7, 1, 37}, 11), g = random_buffer(t, {37}, 12);
        expect_matches(ops::rmsnorm(X, G).realize({{X, x}, {G, g}}), {7, 1, 37}, norm_loops(x, 1, &g, nullptr, 1e-6, true), t, 37);
        expect_matches(ops::rmsnorm(X, ops::Tensor(), 2).realize({{X, x}}), {7, 1, 37}, norm_loops(x, 2, nullptr, nullptr, 1e-6, true), t, 37);
    }
}

TEST(OpsBatchNorm, ChannelAxisNchwAndNhwc) {
    for (int axis : {1, -1}) {
        const std::vector<int64_t> shape = axis == 1 ? std::vector<int64_t>{2, 5, 3, 7} : std::vector<int64_t>{2, 3, 7, 5};
        Input X(Float(32), std::vector<Expr>(shape.begin(), shape.end()), "X");
        Input S(Float(32), {5}, "scale"), B(Float(32), {5}, "bias"), M(Float(32), {5}, "mean"), V(Float(32), {5}, "var");
        Buffer<> x = random_buffer(Float(32), shape, 13), s = random_buffer(Float(32), {5}, 14), b = random_buffer(Float(32), {5}, 15),
                 m = random_buffer(Float(32), {5}, 16), v = random_buffer(Float(32), {5}, 17);
        // variances must be positive
        for (int64_t c = 0; c < 5; ++c) v.set_from_double({c}, 0.1 + std::abs(v.get_as_double({c})));
        const auto xv = values(x), sv = values(s), bv = values(b), mv = values(m), vv = values(v);
        std::vector<double> expected;
        size_t i = 0;
        for_each_index(shape, [&](const std::vector<int64_t> &c) {
            const size_t ch = static_cast<size_t>(axis == 1 ? c[1] : c[3]);
            expected.push_back((xv[i++] - mv[ch]) / std::sqrt(vv[ch] + 1e-5) * sv[ch] + bv[ch]);
        });
        expect_matches(ops::batchnorm(X, S, B, M, V, 1e-5, axis).realize({{X, x}, {S, s}, {B, b}, {M, m}, {V, v}}), shape,
                       expected, Float(32));
    }
}

TEST(OpsNorm, Errors) {
    Input X(Float(32), {3, 7}, "X"), I(Int(8), {3, 7}, "I"), G(Float(32), {3}, "gamma"), S(Float(32), {7}, "s");
    EXPECT_OPS_ERROR(ops::softmax(X, 2), "ops::softmax 'softmax'", "axis 2 is out of range");
    EXPECT_OPS_ERROR(ops::log_softmax(I), "ops::log_softmax", "'I'", "floating-point");
    EXPECT_OPS_ERROR(ops::layernorm(X, G), "ops::layernorm 'layernorm'", "gamma 'gamma'", "[3]", "[7]");
    EXPECT_OPS_ERROR(ops::layernorm(X, ops::Tensor(), ops::Tensor(), 3), "ops::layernorm", "normalized_dims 3");
    EXPECT_OPS_ERROR(ops::rmsnorm(X, G, 1, 1e-6, "rn"), "ops::rmsnorm 'rn'", "gamma");
    EXPECT_OPS_ERROR(ops::batchnorm(X, S, S, S, G), "ops::batchnorm", "var 'gamma'", "[3]", "[7]");
    EXPECT_OPS_ERROR(ops::batchnorm(X, S, S, S, S, 1e-5, 0), "ops::batchnorm", "scale 's'", "must be [3]");
}

} // namespace
