// The reference evaluator against plain C++ loops written out in each test: matmul, stencils,
// histograms, argmax, predicated and multi-dimensional reductions, Params, bf16/fp16/int8
// rounding, multi-output pipelines — and the errors it reports.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

// The DSL's own headers: this suite links tessera_dsl alone (the umbrella header is above it).
#include "tessera/boundary.h"
#include "tessera/buffer.h"
#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/ops.h"
#include "tessera/realize.h"
#include "tessera/reference.h"

using namespace tessera;

namespace {

/// Runs `f` and expects a tessera::Error whose message contains every one of `parts`.
template <typename F> void expect_error(F &&f, std::initializer_list<std::string> parts) {
    try {
        f();
        ADD_FAILURE() << "expected a tessera::Error";
    } catch (const Error &e) {
        const std::string what = e.what();
        for (const std::string &p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
    }
}

/// C(i, j) = sum over k of A(i, k) * B(k, j), written as DESIGN.md §1 writes it.
Func matmul(const Input &A, const Input &B, int K) {
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    return C;
}

TEST(Reference, MatmulMatchesPlainLoopsBitExactly) {
    const int M = 37, N = 7, K = 19; // odd sizes
    Input A(Float(32), {M, K}, "A"), B(Float(32), {K, N}, "B");
    Func C = matmul(A, B, K);
    Buffer<float> a({M, K}), b({K, N});
    a.fill_random(1);
    b.fill_random(2);
    Buffer<float> c = evaluate_reference(C, {M, N}, {{A, a}, {B, b}});
    ASSERT_EQ(c.shape(), (std::vector<int64_t>{M, N}));
    for (int ii = 0; ii < M; ++ii)
        for (int jj = 0; jj < N; ++jj) {
            float acc = 0.0f; // fp32, k ascending: the same operations in the same order
            for (int kk = 0; kk < K; ++kk) acc += a(ii, kk) * b(kk, jj);
            ASSERT_EQ(c(ii, jj), acc) << ii << ", " << jj;
        }
}

TEST(Reference, LargeMatmulIsFastEnoughToBeAnOracle) {
    // 256^3 multiply-adds; the time is printed, not asserted (DESIGN.md §7).
    const int n = 256;
    Input A(Float(32), {n, n}, "A"), B(Float(32), {n, n}, "B");
    Func C = matmul(A, B, n);
    Buffer<float> a({n, n}), b({n, n});
    a.fill_random(3);
    b.fill_random(4);
    const auto start = std::chrono::steady_clock::now();
    Buffer<float> c = C.realize({n, n}, {{A, a}, {B, b}}, Target::reference());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("reference evaluator: 256x256x256 fp32 matmul in %.3f s\n", seconds);
    for (int ii : {0, 100, 255})
        for (int jj : {0, 77, 255}) {
            float acc = 0.0f;
            for (int kk = 0; kk < n; ++kk) acc += a(ii, kk) * b(kk, jj);
            EXPECT_EQ(c(ii, jj), acc);
        }
}

TEST(Reference, TwoStageStencilComputesTheProducerOverTheNeededRegion) {
    // blur_x is read at y - 1 .. y + 1: the evaluator must compute it over rows -1 .. H, and the
    // Input is padded so that every read is inside it.
    const int W = 9, H = 6;
    Input in(Float(32), {H + 2, W + 2}, "in");
    Var x("x"), y("y");
    Func blur_x("blur_x"), blur_y("blur_y");
    blur_x(y, x) = (in(y + 1, x) + in(y + 1, x + 1) + in(y + 1, x + 2)) / 3.0f;
    blur_y(y, x) = (blur_x(y - 1, x) + blur_x(y, x) + blur_x(y + 1, x)) / 3.0f;
    Buffer<float> input({H + 2, W + 2});
    input.fill_random(5);
    Buffer<float> out = evaluate_reference(blur_y, {H, W}, {{in, input}});
    for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) {
            auto bx = [&](int r) { return (input(r + 1, xx) + input(r + 1, xx + 1) + input(r + 1, xx + 2)) / 3.0f; };
            const float expected = (bx(yy - 1) + bx(yy) + bx(yy + 1)) / 3.0f;
            ASSERT_EQ(out(yy, xx), expected) << yy << ", " << xx;
        }
}

TEST(Reference, PaddedConvolutionWithABoundaryCondition) {
    const int H = 5, W = 7;
    Input in(Int(32), {H, W}, "in");
    Func padded = constant_exterior(in, 0);
    Var y("y"), x("x");
    RDom r(-1, 3, -1, 3, "r");
    Func conv("conv");
    conv(y, x) = 0;
    conv(y, x) += padded(y + r.y, x + r.x) * (r.x + 2 * r.y);
    Buffer<int32_t> input({H, W});
    input.fill_random(6);
    Buffer<int32_t> out = evaluate_reference(conv, {H, W}, {{in, input}});
    for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) {
            int acc = 0;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    const int sy = yy + dy, sx = xx + dx;
                    const int v = (sy >= 0 && sy < H && sx >= 0 && sx < W) ? input(sy, sx) : 0;
                    acc += v * (dx + 2 * dy);
                }
            ASSERT_EQ(out(yy, xx), acc) << yy << ", " << xx;
        }
}

TEST(Reference, HistogramUpdateWithADataDependentLeftHandSide) {
    const int H = 13, W = 11;
    Input image(UInt(8), {H, W}, "image");
    Var b("b");
    RDom r(0, W, 0, H, "r");
    Func hist("hist"), doubled("doubled");
    hist(b) = 0;
    // A uint8 value bounds the writes to [0, 255], so hist needs no clamp.
    hist(cast(Int(32), image(r.y, r.x))) += 1;
    doubled(b) = hist(b) * 2;
    Buffer<uint8_t> img({H, W});
    for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) img(i, j) = static_cast<uint8_t>((i * 37 + j * j * 11) % 256);
    Buffer<int32_t> out = evaluate_reference(doubled, {256}, {{image, img}});
    std::vector<int> expected(256, 0);
    for (int i = 0; i < H; ++i)
        for (int j = 0; j < W; ++j) expected[img(i, j)] += 1;
    for (int v = 0; v < 256; ++v) ASSERT_EQ(out(v), 2 * expected[v]) << v;
}

TEST(Reference, OutputHistogramOverAnInt32InputIsCheckedAtEachWrite) {
    Input values(Int(32), {6}, "values");
    Var b("b");
    RDom r(0, 6, "r");
    Func hist("hist");
    hist(b) = 0;
    hist(values(r)) += 1; // unbounded writes: allowed for an output, checked per write
    Buffer<int32_t> v({6});
    const int data[6] = {3, 1, 3, 0, 3, 1};
    for (int i = 0; i < 6; ++i) v(i) = data[i];
    Buffer<int32_t> h = evaluate_reference(hist, {4}, {{values, v}});
    EXPECT_EQ(h(0), 1);
    EXPECT_EQ(h(1), 2);
    EXPECT_EQ(h(2), 0);
    EXPECT_EQ(h(3), 3);
    v(4) = 9;
    expect_error([&] { evaluate_reference(hist, {4}, {{values, v}}); }, {"hist", "(9)", "update 0"});
}

TEST(Reference, ArgmaxStyleUpdateReadsItsOwnPreviousValue) {
    const int R = 5, C = 23;
    Input A(Float(32), {R, C}, "A");
    Var i("i");
    RDom c(1, C - 1, "c");
    Func where("where");
    where(i) = 0;
    // Strictly greater: the first index of the maximum wins.
    where(i) = select(A(i, c) > A(i, where(i)), c, where(i));
    Buffer<float> a({R, C});
    a.fill_random(7);
    a(2, 5) = a(2, 17) = 5.0f; // a tie: index 5 must win
    Buffer<int32_t> idx = evaluate_reference(where, {R}, {{A, a}});
    for (int ii = 0; ii < R; ++ii) {
        int arg = 0;
        for (int cc = 1; cc < C; ++cc)
            if (a(ii, cc) > a(ii, arg)) arg = cc;
        EXPECT_EQ(idx(ii), arg) << ii;
    }
    EXPECT_EQ(idx(2), 5);
}

TEST(Reference, MultiDimensionalRDomRunsTheFirstDimensionInnermost) {
    // A non-commutative update records the visiting order: (x, y) = (0,0), (1,0), (0,1), (1,1).
    Var i("i");
    RDom r(0, 2, 0, 2, "r");
    Func order("order");
    order(i) = 0;
    order(i) = order(i) * 10 + (r.x + 2 * r.y);
    Buffer<int32_t> out = evaluate_reference(order, {1});
    EXPECT_EQ(out(0), 123); // ((0 * 10 + 1) * 10 + 2) * 10 + 3
}

TEST(Reference, WherePredicateSkipsPoints) {
    const int N = 6;
    Input A(Float(64), {N, N}, "A");
    Var i("i");
    RDom r(0, N, 0, N, "r");
    r.where(r.x <= r.y);
    Func tri("tri");
    tri(i) = 0.0;
    tri(i) += A(r.y, r.x) * cast(Float(64), i + 1);
    Buffer<double> a({N, N});
    a.fill_random(8);
    Buffer<double> out = evaluate_reference(tri, {3}, {{A, a}});
    for (int ii = 0; ii < 3; ++ii) {
        double acc = 0;
        for (int y = 0; y < N; ++y)
            for (int x = 0; x <= y; ++x) acc += a(y, x) * (ii + 1);
        EXPECT_EQ(out(ii), acc);
    }
}

TEST(Reference, WherePredicateNarrowsTheRegionOfProducers) {
    // The update reads g only where r < 5, so g is computed over [0, 4] and the five-element
    // Input is never read out of range, though the RDom runs to 9.
    Input A(Float(32), {5}, "A");
    Var i("i");
    Func g("g"), s("s");
    g(i) = A(i) * 2.0f;
    RDom r(0, 10, "r");
    r.where(r < 5);
    s(i) = 0.0f;
    s(i) += g(r);
    Buffer<float> a({5});
    a.fill_random(17);
    Buffer<float> out = evaluate_reference(s, {1}, {{A, a}});
    float acc = 0.0f;
    for (int k = 0; k < 5; ++k) acc += a(k) * 2.0f;
    EXPECT_EQ(out(0), acc);
}

TEST(Reference, ParamsInShapesAndReductionExtents) {
    Param<int> n("n");
    Param<float> scale("scale");
    Input A(Float(32), {n}, "A");
    Var i("i");
    RDom r(0, n, "r");
    Func s("s");
    s(i) = 0.0f;
    s(i) += A(r) * scale + cast(Float(32), i);
    Buffer<float> a({7});
    a.fill_random(9);
    Buffer<float> out = evaluate_reference(s, {2}, {{A, a}, {n, 7}, {scale, 0.5}});
    for (int ii = 0; ii < 2; ++ii) {
        float acc = 0.0f;
        for (int k = 0; k < 7; ++k) acc += a(k) * 0.5f + static_cast<float>(ii);
        EXPECT_EQ(out(ii), acc);
    }
    // The same algorithm at another size.
    Buffer<float> a3({3});
    a3.fill_random(10);
    Buffer<float> out3 = evaluate_reference(s, {1}, {{A, a3}, {n, 3}, {scale, 2.0}});
    EXPECT_EQ(out3(0), ((0.0f + a3(0) * 2.0f) + a3(1) * 2.0f) + a3(2) * 2.0f);
}

TEST(Reference, BFloat16RoundsAfterEveryOperation) {
    Input A(BFloat(16), {64}, "A");
    Var i("i");
    Func f("f");
    f(i) = A(i) * A(i) + A(i);
    Buffer<bfloat16> a({64});
    a.fill_random(11);
    Buffer<bfloat16> out = evaluate_reference(f, {64}, {{A, a}});
    for (int k = 0; k < 64; ++k) {
        const float x = a(k).to_float();
        const bfloat16 product(x * x); // fp32 product, rounded to bf16
        const bfloat16 sum(product.to_float() + x);
        EXPECT_EQ(out(k).bits, sum.bits) << k;
    }
}

TEST(Reference, SixteenBitFloatAccumulatorsSaturateLikeHardware) {
    // bf16 has 8 significant bits: once the sum reaches 256, adding 1 is a tie that rounds
    // back to 256 (even). fp16 has 11: the sum sticks at 2048.
    Var i("i");
    RDom r(0, 300, "r");
    Func bf("bf");
    bf(i) = cast(BFloat(16), 0);
    bf(i) += select(r >= 0, cast(BFloat(16), 1), cast(BFloat(16), 0)); // 1 at every r
    EXPECT_EQ(Buffer<bfloat16>(evaluate_reference(bf, {1}))(0).to_float(), 256.0f);
    RDom r2(0, 3000, "r2");
    Func h("h");
    h(i) = cast(Float(16), 0);
    h(i) += select(r2 >= 0, cast(Float(16), 1), cast(Float(16), 0));
    EXPECT_EQ(Buffer<float16>(evaluate_reference(h, {1}))(0).to_float(), 2048.0f);
    // The same sum in fp32 is exact.
    Func f("f32sum");
    f(i) = 0.0f;
    f(i) += 1.0f + cast(Float(32), r * 0);
    EXPECT_EQ(Buffer<float>(evaluate_reference(f, {1}))(0), 300.0f);
}

TEST(Reference, Int8ArithmeticWrapsAtItsWidthUnlessWidenedFirst) {
    Input A(Int(8), {4}, "A");
    Var i("i");
    Func narrow("narrow"), wide("wide");
    narrow(i) = A(i) * A(i) + A(i);                        // int8 throughout: wraps
    wide(i) = cast(Int(32), A(i)) * cast(Int(32), A(i)); // widened first: exact
    Buffer<int8_t> a({4});
    const int8_t values[4] = {100, -128, 11, -7};
    for (int k = 0; k < 4; ++k) a(k) = values[k];
    auto outs = evaluate_reference(Pipeline({narrow, wide}), {{4}, {4}}, {{A, a}});
    Buffer<int8_t> n(outs[0]);
    Buffer<int32_t> w(outs[1]);
    for (int k = 0; k < 4; ++k) {
        const int v = values[k];
        // Two's complement wrap of each int8 operation, written out with modular arithmetic.
        auto wrap8 = [](int x) { return static_cast<int8_t>(((x % 256) + 256 + 128) % 256 - 128); };
        EXPECT_EQ(n(k), wrap8(wrap8(v * v) + v)) << k;
        EXPECT_EQ(w(k), v * v) << k;
    }
    EXPECT_EQ(n(0), 116); // 100 * 100 = 10000 = 39 * 256 + 16; 16 + 100 = 116
}

TEST(Reference, UnsignedArithmeticWrapsModuloItsWidth) {
    Input U(UInt(8), {4}, "U");
    Var i("i");
    Func f("f");
    f(i) = (U(i) - 1) * 3; // uint8 throughout: 0 - 1 is 255, then * 3 wraps
    Buffer<uint8_t> u({4});
    const uint8_t values[4] = {0, 1, 200, 255};
    for (int k = 0; k < 4; ++k) u(k) = values[k];
    Buffer<uint8_t> out = evaluate_reference(f, {4}, {{U, u}});
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out(k), ((values[k] + 255) % 256) * 3 % 256) << k;
}

TEST(Reference, ScalarFuncReducesEverything) {
    Input A(Int(32), {5, 4}, "A");
    RDom r(0, 4, 0, 5, "r");
    Func total("total");
    total() = 0;
    total() += A(r.y, r.x);
    Buffer<int32_t> a({5, 4});
    a.fill_random(15);
    Buffer<> out = evaluate_reference(total, {}, {{A, a}});
    EXPECT_EQ(out.dimensions(), 0);
    int acc = 0;
    for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 4; ++x) acc += a(y, x);
    EXPECT_EQ(out.get_as_int({}), acc);
}

TEST(Reference, WherePredicateMayUseThePureVars) {
    // Row sums of the lower triangle: r runs over 0..i for row i.
    const int N = 6;
    Input A(Float(32), {N, N}, "A");
    Var i("i");
    RDom r(0, N, "r");
    r.where(r <= i);
    Func rows("rows");
    rows(i) = 0.0f;
    rows(i) += A(i, r);
    Buffer<float> a({N, N});
    a.fill_random(16);
    Buffer<float> out = evaluate_reference(rows, {N}, {{A, a}});
    for (int ii = 0; ii < N; ++ii) {
        float acc = 0.0f;
        for (int k = 0; k <= ii; ++k) acc += a(ii, k);
        EXPECT_EQ(out(ii), acc) << ii;
    }
}

TEST(Reference, IntegerDivisionIsEuclideanAndDivisionByZeroIsZero) {
    Input A(Int(32), {6}, "A"), B(Int(32), {6}, "B");
    Var i("i");
    Func q("q"), m("m");
    q(i) = A(i) / B(i);
    m(i) = A(i) % B(i);
    Buffer<int32_t> a({6}), b({6});
    const int av[6] = {-7, 7, -7, 7, 5, -1}, bv[6] = {2, 2, -2, -2, 0, 3};
    for (int k = 0; k < 6; ++k) a(k) = av[k], b(k) = bv[k];
    auto outs = evaluate_reference(Pipeline({q, m}), {{6}, {6}}, {{A, a}, {B, b}});
    Buffer<int32_t> qo(outs[0]), mo(outs[1]);
    // a = b * q + m with 0 <= m < |b|.
    const int eq[6] = {-4, 3, 4, -3, 0, -1}, em[6] = {1, 1, 1, 1, 0, 2};
    for (int k = 0; k < 6; ++k) {
        EXPECT_EQ(qo(k), eq[k]) << k;
        EXPECT_EQ(mo(k), em[k]) << k;
        if (bv[k] != 0) EXPECT_EQ(bv[k] * eq[k] + em[k], av[k]);
    }
}

TEST(Reference, PipelineWithSharedProducerAndOutputsOfDifferentShapes) {
    Input A(Float(32), {10}, "A");
    Var i("i");
    Func sq("sq"), left("left"), right("right");
    sq(i) = A(i) * A(i);
    left(i) = sq(i) + sq(i + 1); // reads sq over [0, 4]
    right(i) = sq(i + 6) - 1.0f; // reads sq over [6, 9]
    Buffer<float> a({10});
    a.fill_random(12);
    std::vector<Buffer<>> outs = Pipeline({left, right}).realize({{4}, {4}}, {{A, a}});
    ASSERT_EQ(outs.size(), 2u);
    Buffer<float> l(outs[0]), r(outs[1]);
    for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(l(k), a(k) * a(k) + a(k + 1) * a(k + 1));
        EXPECT_EQ(r(k), a(k + 6) * a(k + 6) - 1.0f);
    }
}

TEST(Reference, ScanReadsItsOwnEarlierPoints) {
    Input A(Int(32), {8}, "A");
    Var i("i");
    RDom r(1, 7, "r");
    Func prefix("prefix");
    prefix(i) = A(i);
    prefix(r) = prefix(r - 1) + prefix(r);
    Buffer<int32_t> a({8});
    a.fill_random(13);
    Buffer<int32_t> out = evaluate_reference(prefix, {8}, {{A, a}});
    int acc = 0;
    for (int k = 0; k < 8; ++k) {
        acc += a(k);
        EXPECT_EQ(out(k), acc) << k;
    }
}

TEST(Reference, SelectEvaluatesOnlyTheChosenArm) {
    Input A(Float(32), {4}, "A");
    Var i("i");
    Func f("f");
    // A(i) for i >= 4 would be out of range, but that arm is never taken there.
    f(i) = select(i < 4, A(clamp(i, 0, 3)) * 2.0f, select(i < 100, -1.0f, A(i)));
    Buffer<float> a({4});
    a.fill_random(14);
    Buffer<float> out = evaluate_reference(f, {6}, {{A, a}});
    for (int k = 0; k < 4; ++k) EXPECT_EQ(out(k), a(k) * 2.0f);
    EXPECT_EQ(out(4), -1.0f);
    EXPECT_EQ(out(5), -1.0f);
}

TEST(Reference, StridedInputViewsAreReadThroughTheirStrides) {
    float storage[6] = {0, 1, 2, 3, 4, 5}; // 2x3; its transpose is 3x2
    Input T(Float(32), {3, 2}, "T");
    Var y("y"), x("x");
    Func f("f");
    f(y, x) = T(y, x) + 0.5f;
    Buffer<float> out = evaluate_reference(f, {3, 2}, {{T, Buffer<>::view(Float(32), storage, {3, 2}, {1, 3})}});
    for (int yy = 0; yy < 3; ++yy)
        for (int xx = 0; xx < 2; ++xx) EXPECT_EQ(out(yy, xx), storage[xx * 3 + yy] + 0.5f);
}

TEST(Reference, RealizeOnAnUnlinkedBackendSaysWhatToLink) {
    Var i("i");
    Func f("f");
    f(i) = i;
    // Host and chip targets are served by tessera_codegen, which this test does not link.
    if (!internal::has_realizer(Target::Kind::Host))
        expect_error([&] { f.realize({4}, {}, Target::host()); }, {"host", "tessera_codegen"});
    Buffer<int32_t> ref = f.realize({4}, {}, Target::named("reference"));
    EXPECT_EQ(ref(3), 3);
}

TEST(Target, NamedMapsTheThreeBuiltInKindsAndLeavesTheRestToChips) {
    EXPECT_EQ(Target::named("reference"), Target::reference());
    EXPECT_EQ(Target::named("interpreter").kind(), Target::Kind::Interpreter);
    EXPECT_EQ(Target::named("host").kind(), Target::Kind::Host);
    const Target chip = Target::named("tsp-mini");
    EXPECT_EQ(chip.kind(), Target::Kind::Chip);
    EXPECT_EQ(chip.name(), "tsp-mini");
    EXPECT_EQ(Target::named("/path/to/chip.json").name(), "/path/to/chip.json");
    EXPECT_FALSE(Target::named("tsp-mini") == Target::named("npu-edge"));
}

TEST(Realize, DispatchesThroughTheRegistry) {
    // A stand-in chip backend: it sees the pipeline, the shapes, the bindings and the target,
    // after realize() has checked them.
    std::string seen_target;
    std::vector<std::vector<int64_t>> seen_shapes;
    internal::register_realizer(Target::Kind::Chip, [&](const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                                        const Bindings &bindings, const Target &target) {
        seen_target = target.name();
        seen_shapes = shapes;
        std::vector<Buffer<>> out;
        for (size_t k = 0; k < shapes.size(); ++k) {
            Buffer<> b(p.outputs()[k].type(), shapes[k]);
            b.fill(static_cast<double>(bindings.size()));
            out.push_back(b);
        }
        return out;
    });
    EXPECT_TRUE(internal::has_realizer(Target::Kind::Chip));
    Input A(Float(32), {3}, "A");
    Var i("i");
    Func f("f");
    f(i) = A(i);
    Buffer<float> a({3});
    Buffer<float> out = f.realize({3}, {{A, a}}, Target::named("my-chip"));
    EXPECT_EQ(seen_target, "my-chip");
    EXPECT_EQ(seen_shapes, (std::vector<std::vector<int64_t>>{{3}}));
    EXPECT_EQ(out(2), 1.0f);
    // realize() checks the request before any backend sees it.
    seen_target.clear();
    expect_error([&] { f.realize({3, 3}, {{A, a}}, Target::named("my-chip")); }, {"Func f", "1 dimensions"});
    EXPECT_TRUE(seen_target.empty());
}

// ---------------------------------------------------------------------------------------------
// Errors

class ReferenceErrors : public ::testing::Test {
protected:
    Input A{Float(32), {4, 3}, "A"};
    Var i{"i"}, j{"j"};
    Func f{"f"};
    Buffer<float> a{4, 3};
    void SetUp() override { f(i, j) = A(i, j) * 2.0f; }
};

TEST_F(ReferenceErrors, MissingInputBinding) {
    expect_error([&] { evaluate_reference(f, {4, 3}); }, {"Input A", "no buffer"});
}

TEST_F(ReferenceErrors, MissingParamBinding) {
    Param<int> n("n");
    Input B(Float(32), {n}, "B");
    Func g("g");
    g(i) = B(i);
    expect_error([&] { evaluate_reference(g, {2}, {{B, Buffer<float>({2})}}); }, {"Param n", "no value"});
}

TEST_F(ReferenceErrors, WrongDtypeNamesBothTypes) {
    expect_error([&] { evaluate_reference(f, {4, 3}, {{A, Buffer<int32_t>({4, 3})}}); }, {"Input A", "fp32", "int32"});
}

TEST_F(ReferenceErrors, WrongShapeNamesBothShapes) {
    expect_error([&] { evaluate_reference(f, {4, 3}, {{A, Buffer<float>({3, 4})}}); }, {"Input A", "[4, 3]", "[3, 4]"});
    Param<int> n("n");
    Input B(Float(32), {n, 2}, "B");
    Func g("g");
    g(i) = B(i, 1);
    expect_error([&] { evaluate_reference(g, {2}, {{B, Buffer<float>({5, 2})}, {n, 4}}); }, {"Input B", "[4, 2]", "[5, 2]"});
}

TEST_F(ReferenceErrors, ReadOutsideAnInputNamesFuncInputAndIndex) {
    Func g("g");
    g(i, j) = A(i + 1, j);
    expect_error([&] { evaluate_reference(g, {4, 3}, {{A, a}}); }, {"Func g", "Input A", "(4, 0)", "[4, 3]"});
    // Through an intermediate Func the reader is the intermediate.
    Func h("h");
    h(i, j) = f(i, j + 1);
    expect_error([&] { evaluate_reference(h, {4, 3}, {{A, a}}); }, {"Func f", "Input A", "(0, 3)"});
    // In an update, the stage is named.
    Func s("s");
    RDom r(0, 4, "r");
    s(i) = 0.0f;
    s(i) += A(i, r);
    expect_error([&] { evaluate_reference(s, {4}, {{A, a}}); }, {"Func s (update 0)", "Input A", "(0, 3)"});
}

TEST_F(ReferenceErrors, UnboundedProducerRegionNamesTheFuncAndTheCall) {
    Input idx(Int(32), {4}, "idx");
    Func g("g");
    g(i) = f(idx(i), 0);
    expect_error([&] { evaluate_reference(g, {4}, {{A, a}, {idx, Buffer<int32_t>({4})}}); },
                 {"Func f", "g", "idx(i)", "clamp"});
    // Clamped, it is fine.
    Func clamped("clamped");
    clamped(i) = f(clamp(idx(i), 0, 3), 0);
    Buffer<int32_t> ix({4});
    ix(0) = 3;
    ix(1) = -5;
    a.fill_random(1);
    Buffer<float> out = evaluate_reference(clamped, {4}, {{A, a}, {idx, ix}});
    EXPECT_EQ(out(0), a(3, 0) * 2.0f);
    EXPECT_EQ(out(1), a(0, 0) * 2.0f);
}

TEST_F(ReferenceErrors, UnboundedScatterIntoAnIntermediate) {
    Input values(Int(32), {4}, "values");
    Var b("b");
    RDom r(0, 4, "r");
    Func hist("hist"), use("use");
    hist(b) = 0;
    hist(values(r)) += 1;
    use(b) = hist(b);
    expect_error([&] { evaluate_reference(use, {4}, {{values, Buffer<int32_t>({4})}}); }, {"hist", "values(r)", "clamp"});
}

TEST_F(ReferenceErrors, UndefinedOutputFunc) {
    Func u("undefined_func");
    expect_error([&] { evaluate_reference(u, {4}); }, {"undefined_func", "no definition"});
    expect_error([&] { evaluate_reference(f, {4}, {{A, a}}); }, {"f", "2 dimensions"});
    Func g("g");
    g(i) = f(i, 0);
    expect_error([&] { evaluate_reference(Pipeline({f, g}), {{4, 3}}, {{A, a}}); }, {"1 shapes", "2 outputs"});
}

TEST_F(ReferenceErrors, BindingOfTheWrongKind) {
    Param<int> n("n");
    Func g("g");
    g(i) = cast(Float(32), n) + A(0, 0);
    expect_error([&] { evaluate_reference(g, {1}, {{A, a}, {n, 1}, {A, a}}); }, {"A", "twice"});
    expect_error([&] { evaluate_reference(g, {1}, {{A, a}, {n, 1.5f}}); }, {"n"});
    EXPECT_THROW(Binding(Param<int8_t>("small"), 300), Error);
    EXPECT_THROW(Binding(Param<int>("k"), 2.5), Error);
}

} // namespace
