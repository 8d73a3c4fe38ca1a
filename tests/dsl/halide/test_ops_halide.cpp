// Halide 14 as an independent second oracle for the operator library: matmul, conv2d,
// pooling, softmax and layernorm are written again in Halide, JIT-compiled, run on the same
// inputs, and compared with Tessera's reference results.
//
// Halide lists dimensions innermost first, so a Tessera tensor of shape [d0, .., dn] (row-major,
// outermost first) is the Halide buffer of extents (dn, .., d0) over the same memory order.
#include <Halide.h>
#include <gtest/gtest.h>

#include <cstring>

#include "../ops_test_util.h"

namespace {

using namespace ops_test;
namespace T = tessera;
namespace H = Halide;

/// A Halide buffer with a Tessera buffer's contents (a dense row-major copy), dimensions reversed.
template <typename E> H::Buffer<E> to_halide(const T::Buffer<> &b) {
    std::vector<int> extents(b.shape().rbegin(), b.shape().rend());
    H::Buffer<E> h(extents);
    const T::Buffer<> dense = b.copy();
    std::memcpy(h.data(), dense.data(), static_cast<size_t>(dense.number_of_elements()) * sizeof(E));
    return h;
}

/// A Halide result as row-major doubles (it is dense, innermost dimension first).
template <typename E> std::vector<double> from_halide(const H::Buffer<E> &h) {
    std::vector<double> v(h.number_of_elements());
    const E *p = h.data();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(p[i]);
    return v;
}

/// Runs a Halide pipeline over `sizes` (innermost first) with the JIT for the host.
template <typename E> H::Buffer<E> run(H::Func f, std::vector<int> sizes) {
    H::Buffer<E> out = f.realize(sizes);
    return out;
}

/// Tessera's result equals Halide's within the tolerance of `type` for `reduction` terms.
template <typename E>
void expect_same(const T::Buffer<> &tessera_result, const H::Buffer<E> &halide_result, T::Type type, int64_t reduction) {
    std::vector<int64_t> shape;
    for (int d = halide_result.dimensions() - 1; d >= 0; --d) shape.push_back(halide_result.dim(d).extent());
    expect_matches(tessera_result, shape, from_halide(halide_result), type, reduction);
}

TEST(HalideOracle, MatmulFp32AndInt8) {
    const int m = 37, k = 29, n = 7;
    {
        T::Input A(T::Float(32), {m, k}, "A"), B(T::Float(32), {n, k}, "B");
        T::Buffer<> a = random_buffer(T::Float(32), {m, k}, 1), b = random_buffer(T::Float(32), {n, k}, 2);
        const T::Buffer<> ours = T::ops::matmul(A, B, {false, /*transpose_b=*/true}).realize({{A, a}, {B, b}});
        H::Buffer<float> ha = to_halide<float>(a), hb = to_halide<float>(b);
        H::Var i("i"), j("j");
        H::RDom r(0, k);
        H::Func c("c");
        c(j, i) = 0.0f;
        c(j, i) += ha(r, i) * hb(r, j); // B is [N, K]: row j of B
        expect_same(ours, run<float>(c, {n, m}), T::Float(32), k);
    }
    {
        T::Input A(T::Int(8), {m, k}, "A"), B(T::Int(8), {k, n}, "B");
        T::Buffer<> a = random_buffer(T::Int(8), {m, k}, 3), b = random_buffer(T::Int(8), {k, n}, 4);
        const T::Buffer<> ours = T::ops::matmul(A, B).realize({{A, a}, {B, b}});
        H::Buffer<int8_t> ha = to_halide<int8_t>(a), hb = to_halide<int8_t>(b);
        H::Var i("i"), j("j");
        H::RDom r(0, k);
        H::Func c("c");
        c(j, i) = 0;
        c(j, i) += H::cast<int32_t>(ha(r, i)) * H::cast<int32_t>(hb(j, r));
        expect_same(ours, run<int32_t>(c, {n, m}), T::Int(32), 1);
    }
}

TEST(HalideOracle, Conv2dNchwPaddedStridedGrouped) {
    // N=2, C=4, H=9, W=7; O=6, groups 2 (Cg=2), 3x3 kernel, stride (2, 1), padding 1, dilation (1, 2).
    const int N = 2, C = 4, Hh = 9, W = 7, O = 6, G = 2, Cg = C / G, K = 3;
    T::ops::Conv2dOptions o;
    o.stride = {2, 1};
    o.padding = {1};
    o.dilation = {1, 2};
    o.groups = G;
    T::Input I(T::Float(32), {N, C, Hh, W}, "I"), Wt(T::Float(32), {O, Cg, K, K}, "W"), Bias(T::Float(32), {O}, "bias");
    T::Buffer<> in = random_buffer(T::Float(32), {N, C, Hh, W}, 5), wt = random_buffer(T::Float(32), {O, Cg, K, K}, 6),
                bias = random_buffer(T::Float(32), {O}, 7);
    const T::ops::Tensor conv = T::ops::conv2d(I, Wt, Bias, o);
    const std::vector<int64_t> out_shape = conv.concrete_shape();
    const T::Buffer<> ours = conv.realize({{I, in}, {Wt, wt}, {Bias, bias}});

    H::Buffer<float> hin = to_halide<float>(in), hw = to_halide<float>(wt), hb = to_halide<float>(bias);
    H::Func padded = H::BoundaryConditions::constant_exterior(hin, 0.0f, {{0, W}, {0, Hh}, {0, C}, {0, N}});
    H::Var x("x"), y("y"), c("c"), n("n");
    H::RDom r(0, K, 0, K, 0, Cg); // kx, ky, ic
    H::Func out("out");
    out(x, y, c, n) = hb(c);
    const H::Expr group = c / (O / G);
    out(x, y, c, n) += padded(x * 1 + r.x * 2 - 1, y * 2 + r.y - 1, group * Cg + r.z, n) * hw(r.x, r.y, r.z, c);
    expect_same(ours, run<float>(out, {static_cast<int>(out_shape[3]), static_cast<int>(out_shape[2]), O, N}),
                T::Float(32), Cg * K * K);
}

TEST(HalideOracle, Conv2dNhwcDepthwiseInt8) {
    const int N = 1, Hh = 8, W = 11, C = 5, K = 3;
    T::ops::Conv2dOptions o;
    o.layout = T::ops::Layout::NHWC;
    o.groups = C;
    o.padding = {0, 1};
    T::Input I(T::Int(8), {N, Hh, W, C}, "I"), Wt(T::Int(8), {K, K, 1, C}, "W");
    T::Buffer<> in = random_buffer(T::Int(8), {N, Hh, W, C}, 8), wt = random_buffer(T::Int(8), {K, K, 1, C}, 9);
    const T::ops::Tensor conv = T::ops::conv2d(I, Wt, o);
    const std::vector<int64_t> s = conv.concrete_shape();
    const T::Buffer<> ours = conv.realize({{I, in}, {Wt, wt}});

    H::Buffer<int8_t> hin = to_halide<int8_t>(in), hw = to_halide<int8_t>(wt);
    // Halide order (c, x, y, n) for NHWC data; HWIO weights are (o, i, kx, ky).
    H::Func padded = H::BoundaryConditions::constant_exterior(hin, H::cast<int8_t>(0), {{0, C}, {0, W}, {0, Hh}, {0, N}});
    H::Var c("c"), x("x"), y("y"), n("n");
    H::RDom r(0, K, 0, K);
    H::Func out("out");
    out(c, x, y, n) = 0;
    out(c, x, y, n) += H::cast<int32_t>(padded(c, x + r.x - 1, y + r.y, n)) * H::cast<int32_t>(hw(c, 0, r.x, r.y));
    expect_same(ours, run<int32_t>(out, {C, static_cast<int>(s[2]), static_cast<int>(s[1]), N}), T::Int(32), 1);
}

TEST(HalideOracle, MaxAndAveragePooling) {
    const int N = 2, C = 3, Hh = 9, W = 8;
    T::ops::Pool2dOptions o;
    o.kernel = {3, 3};
    o.stride = {2, 2};
    o.padding = {1};
    T::Input X(T::Float(32), {N, C, Hh, W}, "X");
    T::Buffer<> x = random_buffer(T::Float(32), {N, C, Hh, W}, 10);
    const T::ops::Tensor mx = T::ops::max_pool2d(X, o);
    const std::vector<int64_t> s = mx.concrete_shape();
    const int oh = static_cast<int>(s[2]), ow = static_cast<int>(s[3]);

    H::Buffer<float> hx = to_halide<float>(x);
    H::Var xx("x"), yy("y"), c("c"), n("n");
    H::RDom r(0, 3, 0, 3);
    const H::Expr ix = xx * 2 + r.x - 1, iy = yy * 2 + r.y - 1;
    const H::Expr inside = ix >= 0 && ix < W && iy >= 0 && iy < Hh;
    H::Func clamped = H::BoundaryConditions::repeat_edge(hx, {{0, W}, {0, Hh}, {0, C}, {0, N}});
    H::Func hmax("hmax"), hsum("hsum"), hcount("hcount"), havg("havg"), havg_incl("havg_incl");
    hmax(xx, yy, c, n) = H::maximum(H::select(inside, clamped(ix, iy, c, n), H::Float(32).min()));
    hsum(xx, yy, c, n) = H::sum(H::select(inside, clamped(ix, iy, c, n), 0.0f));
    hcount(xx, yy, c, n) = H::sum(H::select(inside, 1, 0));
    havg(xx, yy, c, n) = hsum(xx, yy, c, n) / H::cast<float>(hcount(xx, yy, c, n));
    havg_incl(xx, yy, c, n) = hsum(xx, yy, c, n) / 9.0f;

    expect_same(mx.realize({{X, x}}), run<float>(hmax, {ow, oh, C, N}), T::Float(32), 1);
    expect_same(T::ops::avg_pool2d(X, o).realize({{X, x}}), run<float>(havg, {ow, oh, C, N}), T::Float(32), 9);
    o.count_include_pad = true;
    expect_same(T::ops::avg_pool2d(X, o).realize({{X, x}}), run<float>(havg_incl, {ow, oh, C, N}), T::Float(32), 9);
}

TEST(HalideOracle, SoftmaxAndLayerNorm) {
    const int rows = 7, cols = 37;
    T::Input X(T::Float(32), {rows, cols}, "X"), G(T::Float(32), {cols}, "gamma"), B(T::Float(32), {cols}, "beta");
    T::Buffer<> x = random_buffer(T::Float(32), {rows, cols}, 11), g = random_buffer(T::Float(32), {cols}, 12),
                b = random_buffer(T::Float(32), {cols}, 13);
    // Scale the inputs up so the max subtraction matters.
    for_each_index({rows, cols}, [&](const std::vector<int64_t> &c) { x.set_from_double(c, 30.0 * x.get_as_double(c)); });

    H::Buffer<float> hx = to_halide<float>(x), hg = to_halide<float>(g), hb = to_halide<float>(b);
    H::Var j("j"), i("i");
    H::RDom r(0, cols);
    H::Func mx("mx"), den("den"), softmax("softmax"), logsm("logsm");
    mx(i) = H::maximum(hx(r, i));
    den(i) = H::sum(H::exp(hx(r, i) - mx(i)));
    softmax(j, i) = H::exp(hx(j, i) - mx(i)) / den(i);
    logsm(j, i) = hx(j, i) - mx(i) - H::log(den(i));
    expect_same(T::ops::softmax(X).realize({{X, x}}), run<float>(softmax, {cols, rows}), T::Float(32), cols);
    expect_same(T::ops::log_softmax(X).realize({{X, x}}), run<float>(logsm, {cols, rows}), T::Float(32), cols);

    H::Func mean("mean"), var("var"), ln("ln");
    mean(i) = H::sum(hx(r, i)) / cols;
    var(i) = H::sum((hx(r, i) - mean(i)) * (hx(r, i) - mean(i))) / cols;
    ln(j, i) = (hx(j, i) - mean(i)) / H::sqrt(var(i) + 1e-5f) * hg(j) + hb(j);
    expect_same(T::ops::layernorm(X, G, B).realize({{X, x}, {G, g}, {B, b}}), run<float>(ln, {cols, rows}),
                T::Float(32), cols);
}

} // namespace
