// Element-wise ops against std:: math on the same inputs: NumPy broadcasting, int8 wrapping,
// each activation in fp32 and bf16, clip; composition; errors.
#include <cmath>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

/// NumPy broadcasting of two shapes (the test's own implementation).
std::vector<int64_t> broadcast(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
    const size_t rank = std::max(a.size(), b.size());
    std::vector<int64_t> out(rank);
    for (size_t i = 0; i < rank; ++i) {
        const int64_t ea = i < a.size() ? a[a.size() - 1 - i] : 1, eb = i < b.size() ? b[b.size() - 1 - i] : 1;
        out[rank - 1 - i] = std::max(ea, eb);
    }
    return out;
}

/// The element of a (broadcast) operand of shape `s` for output point `c`.
double read_broadcast(const std::vector<double> &v, const std::vector<int64_t> &s, const std::vector<int64_t> &c) {
    std::vector<int64_t> ic;
    for (size_t d = 0; d < s.size(); ++d) ic.push_back(s[d] == 1 ? 0 : c[c.size() - s.size() + d]);
    return v[static_cast<size_t>(offset(s, ic))];
}

TEST(OpsElementwise, BinaryBroadcasting) {
    const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
        {{1}, {1}}, {{7, 1, 5}, {37, 1}}, {{3, 7}, {7}}, {{1, 4}, {3, 1}}, {{2, 3, 5}, {2, 3, 5}}, {{5}, {2, 1, 5}}};
    uint64_t seed = 1;
    for (const auto &[sa, sb] : shapes) {
        Input A(Float(32), std::vector<Expr>(sa.begin(), sa.end()), "A"), B(Float(32), std::vector<Expr>(sb.begin(), sb.end()), "B");
        Buffer<> a = random_buffer(Float(32), sa, ++seed), b = random_buffer(Float(32), sb, ++seed);
        const auto av = values(a), bv = values(b);
        const auto out_shape = broadcast(sa, sb);
        using Fn = std::function<double(double, double)>;
        const std::vector<std::pair<ops::Tensor, Fn>> ops_and_loops = {
            {ops::add(A, B), [](double x, double y) { return x + y; }},
            {ops::sub(A, B), [](double x, double y) { return x - y; }},
            {ops::mul(A, B), [](double x, double y) { return x * y; }},
            {ops::div(A, B), [](double x, double y) { return static_cast<double>(static_cast<float>(x) / static_cast<float>(y)); }},
        };
        for (const auto &[t, fn] : ops_and_loops) {
            std::vector<double> expected;
            for_each_index(out_shape, [&](const std::vector<int64_t> &c) {
                expected.push_back(fn(read_broadcast(av, sa, c), read_broadcast(bv, sb, c)));
            });
            SCOPED_TRACE(t.name());
            expect_matches(t.realize({{A, a}, {B, b}}), out_shape, expected, Float(32));
        }
    }
}

TEST(OpsElementwise, Int8AddWrapsAndMixedTypesPromote) {
    Input A(Int(8), {37}, "A"), B(Int(8), {37}, "B");
    Buffer<int8_t> a({37}), b({37});
    for (int i = 0; i < 37; ++i) {
        a(i) = static_cast<int8_t>(100 + i);
        b(i) = static_cast<int8_t>(60 - 3 * i);
    }
    const ops::Tensor sum = ops::add(A, B);
    EXPECT_EQ(sum.type(), Int(8));
    const Buffer<int8_t> out = sum.realize({{A, a}, {B, b}});
    for (int i = 0; i < 37; ++i) EXPECT_EQ(out(i), static_cast<int8_t>(static_cast<int8_t>(100 + i) + static_cast<int8_t>(60 - 3 * i)));

    Input H(BFloat(16), {3, 7}, "H"), F(Float(32), {7}, "F");
    const ops::Tensor mixed = ops::mul(H, F);
    EXPECT_EQ(mixed.type(), Float(32));
    Buffer<> h = random_buffer(BFloat(16), {3, 7}, 5), f = random_buffer(Float(32), {7}, 6);
    const auto hv = values(h), fv = values(f);
    std::vector<double> expected;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 7; ++j) expected.push_back(hv[static_cast<size_t>(i * 7 + j)] * fv[static_cast<size_t>(j)]);
    expect_matches(mixed.realize({{H, h}, {F, f}}), {3, 7}, expected, Float(32));
}

double gelu_erf(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

TEST(OpsElementwise, UnaryActivations) {
    for (Type type : {Float(32), BFloat(16)}) {
        const std::vector<int64_t> shape{7, 37};
        Input X(type, {7, 37}, "X");
        // Spread the inputs over [-4, 4) so the activations' tails are exercised.
        Buffer<> x = random_buffer(type, shape, 11);
        for_each_index(shape, [&](const std::vector<int64_t> &c) { x.set_from_double(c, 4.0 * x.get_as_double(c)); });
        const auto xv = values(x);
        using Fn = std::function<double(double)>;
        const std::vector<std::pair<ops::Tensor, Fn>> cases = {
            {ops::relu(X), [](double v) { return std::max(v, 0.0); }},
            {ops::leaky_relu(X, 0.2), [](double v) { return v >= 0 ? v : 0.2 * v; }},
            {ops::gelu(X), gelu_erf},
            {ops::gelu(X, ops::GeluApproximation::Tanh), gelu_tanh},
            {ops::sigmoid(X), [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
            {ops::tanh(X), [](double v) { return std::tanh(v); }},
            {ops::exp(X), [](double v) { return std::exp(v); }},
            {ops::sqrt(ops::relu(X, "r")), [](double v) { return std::sqrt(std::max(v, 0.0)); }},
            {ops::clip(X, -0.5, 1.5), [](double v) { return std::min(std::max(v, -0.5), 1.5); }},
        };
        for (const auto &[t, fn] : cases) {
            SCOPED_TRACE(t.name() + " " + type.to_string());
            EXPECT_EQ(t.type(), type);
            std::vector<double> expected;
            for (double v : xv) expected.push_back(fn(v));
            expect_matches(t.realize({{X, x}}), shape, expected, type);
        }
    }
}

TEST(OpsElementwise, IntegerReluAndClip) {
    Input X(Int(8), {37}, "X");
    Buffer<> x = random_buffer(Int(8), {37}, 21);
    const auto xv = values(x);
    std::vector<double> relu, clip;
    for (double v : xv) {
        relu.push_back(std::max(v, 0.0));
        clip.push_back(std::min(std::max(v, -3.0), 5.0));
    }
    expect_matches(ops::relu(X).realize({{X, x}}), {37}, relu, Int(8));
    expect_matches(ops::clip(X, -3, 5).realize({{X, x}}), {37}, clip, Int(8));
}

TEST(OpsElementwise, ComposesMatmulBiasGelu) {
    Input A(Float(32), {7, 13}, "A"), W(Float(32), {13, 5}, "W"), b(Float(32), {5}, "b");
    const ops::Tensor y = ops::gelu(ops::add(ops::matmul(A, W), b, "biased"));
    Buffer<> av = random_buffer(Float(32), {7, 13}, 1), wv = random_buffer(Float(32), {13, 5}, 2), bv = random_buffer(Float(32), {5}, 3);
    const auto a = values(av), w = values(wv), bb = values(bv);
    std::vector<double> expected;
    for (int i = 0; i < 7; ++i)
        for (int j = 0; j < 5; ++j) {
            double s = bb[static_cast<size_t>(j)];
            for (int k = 0; k < 13; ++k) s += a[static_cast<size_t>(i * 13 + k)] * w[static_cast<size_t>(k * 5 + j)];
            expected.push_back(gelu_erf(s));
        }
    expect_matches(y.realize({{A, av}, {W, wv}, {b, bv}}), {7, 5}, expected, Float(32), 13);
}

TEST(OpsElementwise, Errors) {
    Input A(Float(32), {7, 5}, "A"), B(Float(32), {7, 4}, "B"), I(Int(8), {7, 5}, "I"), U(UInt(64), {7, 5}, "U");
    EXPECT_OPS_ERROR(ops::add(A, B), "ops::add 'add'", "[7, 5]", "[7, 4]", "do not broadcast", "5 vs 4");
    EXPECT_OPS_ERROR(ops::mul(A, B, "scale"), "ops::mul 'scale'", "do not broadcast");
    EXPECT_OPS_ERROR(ops::gelu(I), "ops::gelu 'gelu'", "'I'", "int8", "floating-point");
    EXPECT_OPS_ERROR(ops::sigmoid(I), "ops::sigmoid", "floating-point");
    EXPECT_OPS_ERROR(ops::clip(I, -0.5, 3), "ops::clip", "not integers representable in int8");
    EXPECT_OPS_ERROR(ops::clip(A, 2, 1), "ops::clip", "above the upper bound");
    EXPECT_OPS_ERROR(ops::sub(I, U), "ops::sub 'sub'", "cannot combine", "'I'", "'U'");
}

} // namespace
