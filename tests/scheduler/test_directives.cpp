// Per loop directive: the lowered loop nest has the expected structure (read from the IR with
// a visitor) and the interpreter reproduces the reference evaluator.
#include <gtest/gtest.h>

#include "sched_test_util.h"
#include "tessera/func.h"
#include "tessera/interpreter.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"
#include "tessera/reference.h"

using namespace tessera;
using tessera::test::expect_matches_reference;
using tessera::test::StmtFacts;

namespace {

// An odd-shaped integer image function: every schedule must reproduce it exactly.
struct Image {
    Input A{Int(32), {13, 11}, "A"};
    Var y{"y"}, x{"x"};
    Func f{"f"};
    Buffer<int32_t> a{13, 11};
    Image() {
        f(y, x) = A(y, x) * 3 + y - x * 2;
        a.fill_random(7);
    }
    Bindings bindings() const { return {{A, a}}; }
    StmtFacts facts() const { return StmtFacts(lower(Pipeline(f), Target::interpreter(), {{13, 11}}).body); }
    void check() const { expect_matches_reference(f, {13, 11}, bindings()); }
};

// A matrix product with a reduction (pure definition + update).
struct Matmul {
    Input A{Int(32), {7, 5}, "A"}, B{Int(32), {5, 9}, "B"};
    Var i{"i"}, j{"j"};
    RDom k{0, 5, "k"};
    Func C{"C"};
    Buffer<int32_t> a{7, 5}, b{5, 9};
    Matmul() {
        C(i, j) = 0;
        C(i, j) += A(i, k) * B(k, j);
        a.fill_random(1);
        b.fill_random(2);
    }
    Bindings bindings() const { return {{A, a}, {B, b}}; }
    StmtFacts facts() const { return StmtFacts(lower(Pipeline(C), Target::interpreter(), {{7, 9}}).body); }
    void check() const { expect_matches_reference(C, {7, 9}, bindings()); }
};

std::vector<std::string> kinds_of(const StmtFacts &f, const std::vector<std::string> &names) {
    std::vector<std::string> out;
    for (const auto &n : names) {
        const auto *l = f.loop(n);
        out.push_back(l ? for_kind_name(l->kind) : "missing");
    }
    return out;
}

} // namespace

TEST(Directives, DefaultLoopsRunInArgumentOrder) {
    Image im;
    auto f = im.facts();
    EXPECT_EQ(f.loop_names("f.s0."), (std::vector<std::string>{"f.s0.y", "f.s0.x"}));
    EXPECT_EQ(f.loop("f.s0.x")->extent, 11);
    EXPECT_EQ(f.loop("f.s0.x")->enclosing, (std::vector<std::string>{"f.s0.y"}));
    im.check();
}

TEST(Directives, SplitMakesOuterAndInnerLoops) {
    Image im;
    im.f.split(im.x, "xo", "xi", 4);
    auto f = im.facts();
    EXPECT_EQ(f.loop_names("f.s0."), (std::vector<std::string>{"f.s0.y", "f.s0.xo", "f.s0.xi"}));
    EXPECT_EQ(f.loop("f.s0.xo")->extent, 3); // ceil(11 / 4)
    EXPECT_EQ(f.loop("f.s0.xi")->extent, 4);
    EXPECT_EQ(f.ifs, 0) << "shift_inwards (the pure default) needs no guard when the extent >= factor";
    im.check();
}

TEST(Directives, SplitGuardWithIfGuardsTheTail) {
    Image im;
    im.f.split(im.x, "xo", "xi", 4, TailStrategy::GuardWithIf);
    auto f = im.facts();
    EXPECT_EQ(f.ifs, 1);
    im.check();
}

TEST(Directives, SplitByADivisorNeedsNoGuard) {
    Image im;
    im.f.split(im.y, "yo", "yi", 13, TailStrategy::GuardWithIf);
    auto f = im.facts();
    EXPECT_EQ(f.ifs, 0);
    EXPECT_EQ(f.loop("f.s0.yo"), nullptr) << "an outer loop of extent 1 is simplified away";
    im.check();
}

TEST(Directives, SplitLargerThanExtentStillCorrect) {
    Image im;
    im.f.split(im.x, "xo", "xi", 16);
    im.check();
    Image g;
    g.f.split(g.x, "xo", "xi", 16, TailStrategy::GuardWithIf);
    g.check();
}

TEST(Directives, SplitFarLargerThanExtentRunsOnlyTheExtent) {
    // The iterations past the extent do nothing, so the lowering drops them: a split by 2^30 of
    // an 11-point loop runs 11 iterations, and a vectorize by 2^30 is 11 lanes wide.
    Image guarded;
    guarded.f.split(guarded.x, "xo", "xi", 1 << 30, TailStrategy::GuardWithIf);
    auto facts = guarded.facts();
    ASSERT_NE(facts.loop("f.s0.xi"), nullptr);
    EXPECT_EQ(facts.loop("f.s0.xi")->extent, 11);
    EXPECT_EQ(facts.ifs, 0) << "the guard holds in every iteration kept";
    guarded.check();

    Image vectorized;
    vectorized.f.vectorize(vectorized.x, 1 << 30);
    ASSERT_NE(vectorized.facts().loop("f.s0.x.v"), nullptr);
    EXPECT_EQ(vectorized.facts().loop("f.s0.x.v")->extent, 11);
    vectorized.check();

    Matmul reduction;
    reduction.C.update().split(reduction.k, "ko", "ki", 1 << 30, TailStrategy::GuardWithIf);
    EXPECT_EQ(reduction.facts().loop("C.s1.ki")->extent, 5);
    reduction.check();
}

TEST(Directives, SplitOfAProducerAtAConsumerTileTrimsToTheTile) {
    // g's extent at f's row is symbolic until bounds inference: the trim works on the lowered nest.
    Input A(Int(32), {6, 9}, "A");
    Var y("y"), x("x");
    Func g("g"), f("f");
    g(y, x) = A(y, x) * 2 + 1;
    f(y, x) = g(y, x) - g(y, min(x + 1, 8));
    g.compute_at(f, y).split(x, "xo", "xi", 1 << 20, TailStrategy::GuardWithIf);
    auto facts = StmtFacts(lower(Pipeline(f), Target::interpreter(), {{6, 9}}).body);
    ASSERT_NE(facts.loop("g.s0.xi"), nullptr);
    EXPECT_EQ(facts.loop("g.s0.xi")->extent, 9);
    Buffer<int32_t> a({6, 9});
    a.fill_random(5);
    expect_matches_reference(f, {6, 9}, {{A, a}});
}

TEST(Directives, AnAllocationBeyondTheTensorLimitIsAnError) {
    // round_up computes the whole rounded-up range: 2^30 columns of g are 2^32 int32 elements.
    Input A(Int(32), {4, 6}, "A");
    Var y("y"), x("x");
    Func g("g"), f("f");
    g(y, x) = A(y, x) + 1;
    f(y, x) = g(y, x) * 3;
    g.compute_root().split(x, "xo", "xi", 1 << 30, TailStrategy::RoundUp);
    Buffer<int32_t> a({4, 6});
    a.fill_random(9);
    try {
        Pipeline(f).realize({{4, 6}}, {{A, a}}, Target::interpreter());
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("allocation of g is too large"), std::string::npos) << e.what();
    }
}

TEST(Directives, ReorderIsOutermostFirst) {
    Image im;
    im.f.reorder(im.x, im.y);
    auto f = im.facts();
    EXPECT_EQ(f.loop_names("f.s0."), (std::vector<std::string>{"f.s0.x", "f.s0.y"}));
    im.check();
}

TEST(Directives, FuseMakesOneLoop) {
    Image im;
    im.f.fuse(im.y, im.x, "yx");
    auto f = im.facts();
    EXPECT_EQ(f.loop_names("f.s0."), (std::vector<std::string>{"f.s0.yx"}));
    EXPECT_EQ(f.loop("f.s0.yx")->extent, 13 * 11);
    im.check();
}

TEST(Directives, TileOrdersOuterThenInner) {
    Image im;
    im.f.tile(im.y, im.x, "yo", "xo", "yi", "xi", 4, 3);
    auto f = im.facts();
    EXPECT_EQ(f.loop_names("f.s0."), (std::vector<std::string>{"f.s0.yo", "f.s0.xo", "f.s0.yi", "f.s0.xi"}));
    EXPECT_EQ(f.loop("f.s0.yo")->extent, 4);
    EXPECT_EQ(f.loop("f.s0.xo")->extent, 4);
    im.check();
}

TEST(Directives, TileNDimensional) {
    Input A(Int(16), {5, 7, 6}, "A");
    Var c("c"), y("y"), x("x");
    Func g("g");
    g(c, y, x) = A(c, y, x) - cast(Int(16), c * y) + cast(Int(16), x);
    g.tile({c, y, x}, {"co", "yo", "xo"}, {"ci", "yi", "xi"}, {2, 3, 4});
    Buffer<int16_t> a({5, 7, 6});
    a.fill_random(3);
    StmtFacts f(lower(Pipeline(g), Target::interpreter(), {{5, 7, 6}}).body);
    EXPECT_EQ(f.loop_names("g.s0."), (std::vector<std::string>{"g.s0.co", "g.s0.yo", "g.s0.xo", "g.s0.ci",
                                                                "g.s0.yi", "g.s0.xi"}));
    expect_matches_reference(g, {5, 7, 6}, {{A, a}});
}

TEST(Directives, VectorizeWithFactorSplitsAndMarks) {
    Image im;
    im.f.vectorize(im.x, 4);
    auto f = im.facts();
    ASSERT_NE(f.loop("f.s0.x.v"), nullptr);
    EXPECT_EQ(f.loop("f.s0.x.v")->kind, ForKind::Vectorized);
    EXPECT_EQ(f.loop("f.s0.x.v")->extent, 4);
    im.check();
}

TEST(Directives, VectorizeConstantLoopAndUnrollAndParallel) {
    Image im;
    im.f.split(im.x, "xo", "xi", 4).vectorize("xi").unroll(im.y, 2).parallel(im.y);
    auto f = im.facts();
    EXPECT_EQ(kinds_of(f, {"f.s0.y.o", "f.s0.y.u", "f.s0.xi"}),
              (std::vector<std::string>{"parallel", "unrolled", "vectorized"}));
    im.check();
}

TEST(Directives, VectorizeNeedsAConstantExtent) {
    Image im;
    im.f.vectorize(im.x);
    // With symbolic output extents the loop's extent is not a constant.
    EXPECT_THROW(lower(Pipeline(im.f), Target::interpreter()), Error);
    // With concrete shapes it is.
    im.check();
}

TEST(Directives, UpdateStageTileAndVectorize) {
    Matmul m;
    m.C.update().tile(m.i, m.j, "io", "jo", "ii", "ji", 4, 4).vectorize("ji");
    auto f = m.facts();
    EXPECT_EQ(f.loop_names("C.s1."), (std::vector<std::string>{"C.s1.io", "C.s1.jo", "C.s1.ii", "C.s1.ji", "C.s1.k"}));
    EXPECT_EQ(f.loop("C.s1.ji")->kind, ForKind::Vectorized);
    EXPECT_EQ(f.ifs, 2) << "guard_with_if (the update default) on both tiled loops: 7 and 9 are not multiples of 4";
    m.check();
}

TEST(Directives, ReductionLoopMovesOutsidePureLoops) {
    Matmul m;
    m.C.update().reorder(m.k, m.i, m.j);
    auto f = m.facts();
    EXPECT_EQ(f.loop_names("C.s1."), (std::vector<std::string>{"C.s1.k", "C.s1.i", "C.s1.j"}));
    m.check();
}

TEST(Directives, SplitReductionKeepsOrder) {
    Matmul m;
    m.C.update().split(m.k, "ko", "ki", 2).unroll("ki");
    auto f = m.facts();
    EXPECT_EQ(f.loop_names("C.s1."), (std::vector<std::string>{"C.s1.i", "C.s1.j", "C.s1.ko", "C.s1.ki"}));
    EXPECT_EQ(f.loop("C.s1.ki")->kind, ForKind::Unrolled);
    m.check();
}

TEST(Directives, AssociativeReductionMayReorderReductionLoops) {
    Input A(Int(32), {6, 5}, "A");
    Var i("i");
    RDom r(0, 6, 0, 5, "r");
    Func s("s");
    s(i) = 0;
    s(i) += A(r.x, r.y) * (i + 1);
    s.update().reorder(r.x, r.y, i); // r.x outside r.y: reversed reduction order, legal for +
    Buffer<int32_t> a({6, 5});
    a.fill_random(4);
    StmtFacts f(lower(Pipeline(s), Target::interpreter(), {{3}}).body);
    EXPECT_EQ(f.loop_names("s.s1."), (std::vector<std::string>{"s.s1.r.x", "s.s1.r.y", "s.s1.i"}));
    expect_matches_reference(s, {3}, {{A, a}});
}

TEST(Directives, ParallelOverRaceFreeReductionVariable) {
    // Each r writes its own point: no race, so parallel over r is legal.
    Input A(Int(32), {10}, "A");
    Var x("x");
    RDom r(0, 10, "r");
    Func g("g");
    g(x) = A(x);
    g(r) = g(r) * 2 + 1;
    g.update().parallel(r);
    Buffer<int32_t> a({10});
    a.fill_random(5);
    StmtFacts f(lower(Pipeline(g), Target::interpreter(), {{10}}).body);
    EXPECT_EQ(f.loop("g.s1.r")->kind, ForKind::Parallel);
    expect_matches_reference(g, {10}, {{A, a}});
}

TEST(Directives, DirectivesRecordInOrderAndReplayFromJson) {
    Image im;
    im.f.split(im.x, "xo", "xi", 4).reorder("xi", im.y).parallel("xo");
    const auto &ds = Stage(im.f.contents(), 0).directives();
    ASSERT_EQ(ds.size(), 3u);
    EXPECT_EQ(ds[0].kind, DirectiveKind::Split);
    EXPECT_EQ(ds[1].kind, DirectiveKind::Reorder);
    EXPECT_EQ(ds[2].kind, DirectiveKind::Parallel);
    Schedule s = im.f.schedule();
    Image other;
    other.f.set_schedule(Schedule::from_json(s.to_json()));
    EXPECT_EQ(other.f.schedule(), s);
    auto a = im.facts(), b = other.facts();
    EXPECT_EQ(a.loop_names("f."), b.loop_names("f."));
    other.check();
}

TEST(Directives, HostLoweringPartitionsTheGuardedTailTile) {
    // 10 rows in tiles of 4: on the host, tiles 0 and 1 run without the row guard and only the
    // last, partial tile keeps it (loop partitioning); the interpreter's lowering keeps one loop.
    Input A(Int(32), {10, 5}, "A"), B(Int(32), {5, 8}, "B");
    Var i("i"), j("j");
    RDom k(0, 5, "k");
    Func C("C");
    C(i, j) = 0;
    C(i, j) += A(i, k) * B(k, j);
    C.update().split(i, "io", "ii", 4).reorder({"io", "k", "ii", "j"});
    auto host = StmtFacts(lower(Pipeline(C), Target::host(), {{10, 8}}).body);
    std::vector<const test::LoopInfo *> io;
    for (const auto &l : host.loops)
        if (l.name == "C.s1.io") io.push_back(&l);
    ASSERT_EQ(io.size(), 2u) << "the steady state and the last tile";
    EXPECT_EQ(io[0]->extent, 2);
    EXPECT_EQ(io[1]->extent, 1);
    EXPECT_EQ(host.ifs, 1) << "only the last tile is guarded";
    auto interp = StmtFacts(lower(Pipeline(C), Target::interpreter(), {{10, 8}}).body);
    EXPECT_EQ(interp.loop_names("C.s1.io").size(), 1u);
    EXPECT_EQ(interp.ifs, 1);
    Buffer<int32_t> a({10, 5}), b({5, 8});
    a.fill_random(31);
    b.fill_random(32);
    expect_matches_reference(C, {10, 8}, {{A, a}, {B, b}});
}
