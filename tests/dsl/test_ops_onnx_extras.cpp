// The ops the ONNX importer added to the library (erf, softplus, hard_sigmoid, pow, maximum,
// minimum, where, cast, slice, gather, expand, pad, quantize_linear, dequantize_linear) on the
// reference evaluator, against plain loops in the test; and their errors.
#include <cmath>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

TEST(OpsOnnxExtras, UnaryFloatOps) {
    const std::vector<int64_t> shape{5, 9};
    Input X(Float(32), {5, 9}, "X");
    Buffer<> x = random_buffer(Float(32), shape, 3);
    for_each_index(shape, [&](const std::vector<int64_t> &c) { x.set_from_double(c, 30.0 * x.get_as_double(c)); });
    const auto xv = values(x);
    const std::vector<std::pair<ops::Tensor, std::function<double(double)>>> cases = {
        {ops::erf(X), [](double v) { return std::erf(v); }},
        {ops::softplus(X), [](double v) { return std::log1p(std::exp(v)); }}, // |x| <= 30: no overflow here
        {ops::hard_sigmoid(X, 0.1, 0.4), [](double v) { return std::clamp(0.1 * v + 0.4, 0.0, 1.0); }},
    };
    for (const auto &[t, fn] : cases) {
        SCOPED_TRACE(t.name());
        std::vector<double> expected;
        for (double v : xv) expected.push_back(fn(v));
        expect_matches(t.realize({{X, x}}), shape, expected, Float(32));
    }
}

TEST(OpsOnnxExtras, BinaryOpsBroadcastAndKeepTheBaseType) {
    Input A(Float(32), {3, 4}, "A"), B(Float(32), {4}, "B"), I(Int(32), {3, 4}, "I"), E(Int(32), {1}, "E");
    Buffer<> a = random_buffer(Float(32), {3, 4}, 1), b = random_buffer(Float(32), {4}, 2);
    Buffer<> i = random_buffer(Int(32), {3, 4}, 3), e(Int(32), {1});
    e.fill(3);
    const auto av = values(a), bv = values(b), iv = values(i);
    std::vector<double> mx, mn, pw, ipw;
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) {
            const double x = av[size_t(r * 4 + c)], y = bv[size_t(c)];
            mx.push_back(std::max(x, y));
            mn.push_back(std::min(x, y));
            pw.push_back(std::pow(std::fabs(x) + 0.5, y));
            ipw.push_back(std::pow(iv[size_t(r * 4 + c)], 3));
        }
    expect_matches(ops::maximum(A, B).realize({{A, a}, {B, b}}), {3, 4}, mx, Float(32));
    expect_matches(ops::minimum(A, B).realize({{A, a}, {B, b}}), {3, 4}, mn, Float(32));
    Input P(Float(32), {3, 4}, "P");
    Buffer<> p(Float(32), {3, 4});
    for_each_index({3, 4}, [&](const std::vector<int64_t> &c) { p.set_from_double(c, std::fabs(a.get_as_double(c)) + 0.5); });
    expect_matches(ops::pow(P, B).realize({{P, p}, {B, b}}), {3, 4}, pw, Float(32));
    const ops::Tensor ip = ops::pow(I, E);
    EXPECT_EQ(ip.type(), Int(32));
    expect_matches(ip.realize({{I, i}, {E, e}}), {3, 4}, ipw, Int(32));
}

TEST(OpsOnnxExtras, WhereAndCast) {
    Input C(Bool(), {2, 1}, "C"), A(Float(32), {2, 3}, "A"), B(Float(32), {3}, "B");
    Buffer<> c(Bool(), {2, 1});
    c.set_from_int({0, 0}, 1);
    Buffer<> a = random_buffer(Float(32), {2, 3}, 5), b = random_buffer(Float(32), {3}, 6);
    const auto av = values(a), bv = values(b);
    std::vector<double> expected;
    for (int r = 0; r < 2; ++r)
        for (int k = 0; k < 3; ++k) expected.push_back(r == 0 ? av[size_t(r * 3 + k)] : bv[size_t(k)]);
    expect_matches(ops::where(C, A, B).realize({{C, c}, {A, a}, {B, b}}), {2, 3}, expected, Float(32));

    Input X(Float(32), {4}, "X");
    Buffer<> x(Float(32), {4});
    const double xs[] = {-2.7, -0.0, 0.5, 3.9};
    for (int k = 0; k < 4; ++k) x.set_from_double({k}, xs[k]);
    expect_matches(ops::cast(X, Int(32)).realize({{X, x}}), {4}, {-2, 0, 0, 3}, Int(32)); // truncation
    expect_matches(ops::cast(X, Bool()).realize({{X, x}}), {4}, {1, 0, 1, 1}, Bool());
    EXPECT_OPS_ERROR(ops::where(A, A, B), "where", "must be bool");
}

TEST(OpsOnnxExtras, SliceGatherExpand) {
    Input X(Float(32), {4, 6}, "X");
    Buffer<> x = random_buffer(Float(32), {4, 6}, 9);
    const auto xv = values(x);
    auto at = [&](int r, int c) { return xv[size_t(r * 6 + c)]; };
    // x[1:100, -1:0:-2] (NumPy clamps 100 to 4; negative step walks back from the last column).
    std::vector<double> sliced;
    for (int r = 1; r < 4; ++r)
        for (int c = 5; c > 0; c -= 2) sliced.push_back(at(r, c));
    expect_matches(ops::slice(X, {1, -1}, {100, 0}, {0, 1}, {1, -2}).realize({{X, x}}), {3, 3}, sliced, Float(32));

    Input Idx(Int(64), {2}, "Idx");
    Buffer<> idx(Int(64), {2});
    idx.set_from_int({0}, -1);
    idx.set_from_int({1}, 2);
    std::vector<double> gathered;
    for (int r = 0; r < 4; ++r)
        for (int c : {5, 2}) gathered.push_back(at(r, c));
    expect_matches(ops::gather(X, Idx, 1).realize({{X, x}, {Idx, idx}}), {4, 2}, gathered, Float(32));

    Input V(Float(32), {6}, "V");
    Buffer<> v = random_buffer(Float(32), {6}, 4);
    std::vector<double> expanded;
    for (int r = 0; r < 3; ++r)
        for (double e : values(v)) expanded.push_back(e);
    expect_matches(ops::expand(V, {3, 1}).realize({{V, v}}), {3, 6}, expanded, Float(32));

    EXPECT_OPS_ERROR(ops::slice(X, {0}, {4}, {0}, {0}), "slice", "step", "non-zero");
    EXPECT_OPS_ERROR(ops::slice(X, {3}, {1}), "slice", "slices to nothing");
    EXPECT_OPS_ERROR(ops::gather(X, X, 0), "gather", "must be integers");
}

TEST(OpsOnnxExtras, PadModes) {
    Input X(Int(32), {1, 3}, "X");
    Buffer<> x(Int(32), {1, 3});
    for (int k = 0; k < 3; ++k) x.set_from_int({0, k}, k + 1); // [1 2 3]
    // pads: before (0, 2), after (0, 1)
    expect_matches(ops::pad(X, {0, 2, 0, 1}, ops::PadMode::Constant, 9).realize({{X, x}}), {1, 6}, {9, 9, 1, 2, 3, 9}, Int(32));
    expect_matches(ops::pad(X, {0, 2, 0, 1}, ops::PadMode::Edge).realize({{X, x}}), {1, 6}, {1, 1, 1, 2, 3, 3}, Int(32));
    expect_matches(ops::pad(X, {0, 2, 0, 1}, ops::PadMode::Reflect).realize({{X, x}}), {1, 6}, {3, 2, 1, 2, 3, 2}, Int(32));
    EXPECT_OPS_ERROR(ops::pad(X, {0, 3, 0, 0}, ops::PadMode::Reflect), "pad", "below its extent");
    EXPECT_OPS_ERROR(ops::pad(X, {0, 1}), "pad", "needs 4");
}

TEST(OpsOnnxExtras, QuantizeAndDequantizePerTensorAndPerAxis) {
    Input X(Float(32), {2, 4}, "X"), S(Float(32), {1}, "S"), Z(UInt(8), {1}, "Z");
    Buffer<> x(Float(32), {2, 4}), s(Float(32), {1}), z(UInt(8), {1});
    const double xs[] = {-1.0, 0.25, 0.75, 1.25, 100.0, 2.5, 3.5, -300.0};
    for (int k = 0; k < 8; ++k) x.set_from_double({k / 4, k % 4}, xs[k]);
    s.fill(0.5);
    z.fill(10);
    // round_half_even(x / 0.5) + 10, saturated to [0, 255]: 0.25/0.5 = 0.5 -> 0; 0.75/0.5 = 1.5 -> 2;
    // 1.25/0.5 = 2.5 -> 2; 2.5/0.5 = 5; 3.5/0.5 = 7.
    const ops::Tensor q = ops::quantize_linear(X, S, Z);
    EXPECT_EQ(q.type(), UInt(8));
    expect_matches(q.realize({{X, x}, {S, s}, {Z, z}}), {2, 4}, {8, 10, 12, 12, 210, 15, 17, 0}, UInt(8));

    Input Q(Int(8), {2, 3}, "Q"), PS(Float(32), {3}, "PS"), PZ(Int(8), {3}, "PZ");
    Buffer<> qb(Int(8), {2, 3}), ps(Float(32), {3}), pz(Int(8), {3});
    for (int k = 0; k < 6; ++k) qb.set_from_int({k / 3, k % 3}, k * 10 - 20);
    for (int k = 0; k < 3; ++k) {
        ps.set_from_double({k}, 0.5 * (k + 1));
        pz.set_from_int({k}, k - 1);
    }
    std::vector<double> expected;
    for (int k = 0; k < 6; ++k) expected.push_back((k * 10 - 20 - (k % 3 - 1)) * 0.5 * (k % 3 + 1));
    expect_matches(ops::dequantize_linear(Q, PS, PZ, 1).realize({{Q, qb}, {PS, ps}, {PZ, pz}}), {2, 3}, expected, Float(32));
    Input Bad(Float(32), {2}, "Bad");
    EXPECT_OPS_ERROR(ops::dequantize_linear(Q, Bad, ops::Tensor(), 1), "dequantize_linear", "neither one value nor one per entry");
}

} // namespace

namespace {

using namespace tessera;
using namespace ops_test;

TEST(OpsOnnxExtras, ConvTransposeScattersEachInputThroughTheKernel) {
    // Two groups, stride 2, dilation 1, padding (1, 0, 0, 1), output padding (1, 0): the expected
    // result scatters every input element times the kernel into the full output, then crops.
    const int64_t N = 1, C = 4, H = 3, W = 2, G = 2, Og = 3, KH = 3, KW = 2, s = 2;
    Input X(Float(32), {N, C, H, W}, "X"), Wt(Float(32), {C, Og, KH, KW}, "Wt");
    Buffer<> x = random_buffer(Float(32), {N, C, H, W}, 21), w = random_buffer(Float(32), {C, Og, KH, KW}, 22);
    ops::ConvTranspose2dOptions o;
    o.stride = {s, s};
    o.padding = ops::Padding2d(1, 0, 0, 1);
    o.output_padding = {1, 0};
    o.groups = int(G);
    const int64_t full_h = s * (H - 1) + KH + 1, full_w = s * (W - 1) + KW; // + output padding on the height
    std::vector<double> full(size_t(G * Og * full_h * full_w), 0.0);
    for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < W; ++j)
                for (int64_t oc = 0; oc < Og; ++oc)
                    for (int64_t ky = 0; ky < KH; ++ky)
                        for (int64_t kx = 0; kx < KW; ++kx) {
                            const int64_t out_c = (c / (C / G)) * Og + oc;
                            full[size_t((out_c * full_h + i * s + ky) * full_w + j * s + kx)] +=
                                x.get_as_double({0, c, i, j}) * w.get_as_double({c, oc, ky, kx});
                        }
    const int64_t oh = full_h - 1, ow = full_w - 1; // top 1 and right 1 cropped
    std::vector<double> expected;
    for (int64_t c = 0; c < G * Og; ++c)
        for (int64_t y = 0; y < oh; ++y)
            for (int64_t xx = 0; xx < ow; ++xx) expected.push_back(full[size_t((c * full_h + y + 1) * full_w + xx)]);
    expect_matches(ops::conv_transpose2d(X, Wt, ops::Tensor(), o).realize({{X, x}, {Wt, w}}), {N, G * Og, oh, ow}, expected,
                   Float(32), C / G * KH * KW);
    o.output_padding = {2, 0};
    EXPECT_OPS_ERROR(ops::conv_transpose2d(X, Wt, ops::Tensor(), o), "conv_transpose2d", "output padding 2");
}

TEST(OpsOnnxExtras, EinsumContractsTransposesAndTakesDiagonals) {
    Input A(Float(32), {2, 3, 4}, "A"), B(Float(32), {2, 4, 5}, "B"), S(Float(32), {3, 3}, "S");
    Buffer<> a = random_buffer(Float(32), {2, 3, 4}, 31), b = random_buffer(Float(32), {2, 4, 5}, 32), sq = random_buffer(Float(32), {3, 3}, 33);
    std::vector<double> bmm, tr, diag, total(1, 0.0);
    for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 3; ++i)
            for (int k = 0; k < 5; ++k) {
                double acc = 0;
                for (int j = 0; j < 4; ++j) acc += a.get_as_double({n, i, j}) * b.get_as_double({n, j, k});
                bmm.push_back(acc);
            }
    for (int j = 0; j < 4; ++j)
        for (int n = 0; n < 2; ++n)
            for (int i = 0; i < 3; ++i) tr.push_back(a.get_as_double({n, i, j}));
    for (int i = 0; i < 3; ++i) {
        diag.push_back(sq.get_as_double({i, i}));
        total[0] += sq.get_as_double({i, i});
    }
    expect_matches(ops::einsum("nij,njk->nik", {A, B}).realize({{A, a}, {B, b}}), {2, 3, 5}, bmm, Float(32), 4);
    expect_matches(ops::einsum("nij->jni", {A}).realize({{A, a}}), {4, 2, 3}, tr, Float(32));
    expect_matches(ops::einsum("...ii->...i", {S}).realize({{S, sq}}), {3}, diag, Float(32));
    expect_matches(ops::einsum("ii", {S}).realize({{S, sq}}), {1}, total, Float(32), 3); // implicit: a trace
    EXPECT_OPS_ERROR(ops::einsum("ij,jk->ik", {A, B}), "einsum", "rank 3");
    EXPECT_OPS_ERROR(ops::einsum("nij,nkj->nik", {A, B}), "einsum", "letter 'j' has the extents 4 and 5");
}

} // namespace
