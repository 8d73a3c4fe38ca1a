// Scheduled pipelines realized on the host (lower → LLVM → JIT) against the reference
// evaluator, the compilation cache, and symbolic output shapes.
#include <gtest/gtest.h>

#include "hand_written_pipelines.h"
#include "tessera/codegen/buffer_abi.h"
#include "tessera/codegen/jit.h"
#include "tessera/ir_operator.h"
#include "tessera/reference.h"

using namespace tessera;

namespace {

void expect_host_matches_reference(const Func &f, const std::vector<int64_t> &shape, const Bindings &b,
                                   int64_t reduction_length = 1) {
    Buffer<> ref = evaluate_reference(f, shape, b);
    Buffer<> got = f.realize(shape, b, Target::host());
    Comparison c = compare(got, ref, Tolerance::for_type(ref.type(), reduction_length));
    EXPECT_TRUE(c.equal) << c.message;
}

struct Matmul {
    Input A{Float(32), {67, 45}, "A"}, B{Float(32), {45, 83}, "B"};
    Var i{"i"}, j{"j"};
    RDom k{0, 45, "k"};
    Func C{"C"};
    Buffer<float> a{67, 45}, b{45, 83};
    Matmul() {
        C(i, j) = 0.0f;
        C(i, j) += A(i, k) * B(k, j);
        a.fill_random(1);
        b.fill_random(2);
    }
    Bindings bindings() const { return {{A, a}, {B, b}}; }
};

} // namespace

TEST(JitPipeline, MatmulUnscheduled) {
    Matmul m;
    expect_host_matches_reference(m.C, {67, 83}, m.bindings(), 45);
}

TEST(JitPipeline, MatmulTiledVectorizedParallel) {
    // Tiles that divide neither extent, a vector width that does not divide the tile.
    Matmul m;
    Var io("io"), jo("jo"), ii("ii"), ji("ji");
    m.C.update().tile(m.i, m.j, io, jo, ii, ji, 16, 24).vectorize(ji, 16).parallel(io);
    m.C.vectorize(m.j, 8).parallel(m.i);
    expect_host_matches_reference(m.C, {67, 83}, m.bindings(), 45);
}

TEST(JitPipeline, MatmulWithStagedInputs) {
    // B packed per parallel strip of 16 columns into [n / 8][k][8] panels, A copied per block of
    // 4 rows; 83 columns and 67 rows leave tails in both.
    Matmul m;
    m.C.update()
        .split(m.j, "jo", "ji", 16)
        .split(m.i, "io", "ii", 4)
        .reorder({"jo", "io", "k", "ii", "ji"})
        .vectorize("ji", 8)
        .unroll("ii")
        .parallel("jo");
    m.B.stage(m.C, "jo", MemoryKind::Stack, Layout{{"d1", "d0"}, {{"d1", 8}}});
    m.A.stage(m.C, "io", MemoryKind::Stack);
    expect_host_matches_reference(m.C, {67, 83}, m.bindings(), 45);
}

TEST(JitPipeline, ElementwiseChainWithComputeAtAndUnroll) {
    Input X(Float(32), {50, 70}, "X");
    Var x("x"), y("y"), yo("yo"), yi("yi");
    Func f("f"), g("g");
    f(y, x) = X(y, x) * 2.0f + 1.0f;
    g(y, x) = f(y, x) * f(y, x) - select(X(y, x) > 0.0f, f(y, x), 0.0f);
    f.compute_at(g, yo);
    g.split(y, yo, yi, 8).unroll(yi, 4).vectorize(x, 16);
    Buffer<float> xb({50, 70});
    xb.fill_random(3);
    expect_host_matches_reference(g, {50, 70}, {{X, xb}});
}

TEST(JitPipeline, ASoftmaxByHandWithItsMaxComputedAtTheRowsItsTwoReadersShare) {
    // The maximum is read by the sum and by the output; both reads are inside the output's row
    // loop, where the sum is computed too. 37 rows leave a tail of the 8-row split.
    Input X(Float(32), {37, 50}, "X");
    tessera_test::SoftmaxByRows s(X);
    Var io("io"), ii("ii");
    s.prob.split(s.i, io, ii, 8).vectorize(s.j, 16);
    s.total.compute_at(s.prob, ii);
    s.row_max.compute_at(s.prob, io);
    Buffer<float> xb({37, 50});
    xb.fill_random(4);
    expect_host_matches_reference(s.prob, {37, 50}, {{X, xb}}, 50);
}

TEST(JitPipeline, CompilesOncePerPipelineAndShape) {
    Matmul m;
    m.C.update().vectorize(m.j, 8);
    clear_jit_cache();
    Buffer<> first = m.C.realize({67, 83}, m.bindings(), Target::host());
    Buffer<> second = m.C.realize({67, 83}, m.bindings(), Target::host());
    JitCacheStats s = jit_cache_stats();
    EXPECT_EQ(s.misses, 1);
    EXPECT_EQ(s.hits, 1);
    EXPECT_TRUE(compare(first, second).equal);
    // A different schedule is a different kernel.
    m.C.update().parallel(m.i);
    m.C.realize({67, 83}, m.bindings(), Target::host());
    EXPECT_EQ(jit_cache_stats().misses, 2);

    CompiledKernel k = compile_jit(Pipeline(m.C), {{67, 83}});
    EXPECT_GT(k.compile_ms(), 0.0);
    EXPECT_EQ(jit_cache_stats().hits, 2);
}

TEST(JitPipeline, SymbolicOutputShapeServesEverySize) {
    Param<int> n("n");
    Input X(Float(32), {n}, "X");
    Var x("x");
    Func f("f");
    f(x) = X(x) * X(x);
    f.vectorize(x, 8);
    CompiledKernel k = compile_jit(Pipeline(f));
    for (int size : {1, 7, 8, 1001}) {
        Buffer<float> xb({size});
        xb.fill_random(static_cast<uint64_t>(size));
        std::vector<Buffer<>> out = run_pipeline_kernel(k, {{size}}, {{X, xb}, {n, size}});
        Buffer<float> o = out[0];
        for (int e = 0; e < size; ++e) ASSERT_EQ(o(e), xb(e) * xb(e));
    }
}

TEST(JitPipeline, WrongBindingIsAnErrorNotACrash) {
    Matmul m;
    Buffer<int32_t> wrong({67, 45});
    try {
        m.C.realize({67, 83}, {{m.A, wrong}, {m.B, m.b}}, Target::host());
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("fp32"), std::string::npos) << e.what();
    }
    CompiledKernel k = compile_jit(Pipeline(m.C), {{67, 83}});
    Buffer<float> c({67, 83}), small({66, 45});
    int code = k.call({small, m.b, c});
    EXPECT_EQ(TESSERA_ERROR_KIND(code), TESSERA_ERROR_SHAPE) << k.error_message(code);
    code = k.call({Buffer<>(), m.b, c});
    EXPECT_EQ(TESSERA_ERROR_KIND(code), TESSERA_ERROR_NULL_BUFFER) << k.error_message(code);
    code = k.call({m.a, m.b, Buffer<>::view(Float(32), m.a.data(), {67, 83})});
    EXPECT_EQ(TESSERA_ERROR_KIND(code), TESSERA_ERROR_ALIASING) << k.error_message(code);
    code = k.call({Buffer<>::view(Float(32), m.a.data(), {67, 45}, {1, 67}), m.b, c});
    EXPECT_EQ(TESSERA_ERROR_KIND(code), TESSERA_ERROR_STRIDES) << k.error_message(code);
}
