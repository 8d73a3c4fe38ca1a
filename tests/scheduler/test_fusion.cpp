// Fusion and data directives: where each Func is produced and stored in the lowered IR, and
// that the interpreter reproduces the reference for each placement.
#include <gtest/gtest.h>

#include "hand_written_pipelines.h"
#include "sched_test_util.h"
#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"

using namespace tessera;
using tessera::test::expect_matches_reference;
using tessera::test::StmtFacts;

namespace {

struct TwoStage {
    Input A{Float(32), {10, 9}, "A"};
    Var y{"y"}, x{"x"};
    Func p{"p"}, c{"c"};
    Buffer<float> a{10, 9};
    TwoStage() {
        p(y, x) = A(y, x) * 2.0f + 1.0f;
        c(y, x) = p(y, x) + p(y, clamp(x + 1, 0, 8));
        a.fill_random(21);
    }
    StmtFacts facts() const { return StmtFacts(lower(Pipeline(c), Target::interpreter(), {{10, 9}}).body); }
    void check() const { expect_matches_reference(c, {10, 9}, {{A, a}}); }
};

using Path = std::vector<std::string>;

} // namespace

TEST(Fusion, PureFuncIsInlinedByDefault) {
    TwoStage t;
    auto f = t.facts();
    EXPECT_EQ(f.produced_in("p"), nullptr);
    EXPECT_EQ(f.alloc("p"), nullptr);
    t.check();
}

TEST(Fusion, ComputeRootProducesBeforeTheConsumer) {
    TwoStage t;
    t.p.compute_root();
    auto f = t.facts();
    ASSERT_NE(f.produced_in("p"), nullptr);
    EXPECT_EQ(*f.produced_in("p"), Path{});
    ASSERT_NE(f.alloc("p"), nullptr);
    EXPECT_EQ(f.alloc("p")->extents, (std::vector<std::optional<int64_t>>{10, 9}));
    t.check();
}

TEST(Fusion, ComputeAtProducesInsideTheConsumerLoop) {
    TwoStage t;
    t.p.compute_at(t.c, t.y);
    auto f = t.facts();
    ASSERT_NE(f.produced_in("p"), nullptr);
    EXPECT_EQ(*f.produced_in("p"), Path{"c.s0.y"});
    EXPECT_EQ(f.alloc("p")->enclosing, Path{"c.s0.y"});
    EXPECT_EQ(f.alloc("p")->extents, (std::vector<std::optional<int64_t>>{1, 9}));
    t.check();
}

TEST(Fusion, ComputeAtInnerLoopOfATile) {
    TwoStage t;
    t.c.tile(t.y, t.x, "yo", "xo", "yi", "xi", 4, 4);
    t.p.compute_at(t.c, "xo");
    auto f = t.facts();
    EXPECT_EQ(*f.produced_in("p"), (Path{"c.s0.yo", "c.s0.xo"}));
    // A 4x4 tile of c reads a 4x5 tile of p (x + 1, clamped).
    EXPECT_EQ(f.alloc("p")->extents, (std::vector<std::optional<int64_t>>{4, 5}));
    t.check();
}

TEST(Fusion, StoreAtHoistsStorageAboveTheComputeLoop) {
    TwoStage t;
    t.p.compute_at(t.c, t.x).store_at(t.c, t.y);
    auto f = t.facts();
    EXPECT_EQ(*f.produced_in("p"), (Path{"c.s0.y", "c.s0.x"}));
    EXPECT_EQ(f.alloc("p")->enclosing, Path{"c.s0.y"});
    // One row, all 9 columns; interval arithmetic may add one spare column (the clamped x + 1
    // read at the last x), never more.
    ASSERT_EQ(f.alloc("p")->extents.size(), 2u);
    EXPECT_EQ(f.alloc("p")->extents[0], 1);
    ASSERT_TRUE(f.alloc("p")->extents[1].has_value());
    EXPECT_GE(*f.alloc("p")->extents[1], 9);
    EXPECT_LE(*f.alloc("p")->extents[1], 10);
    t.check();
}

TEST(Fusion, FuncWithUpdatesIsComputedAtRootByDefault) {
    Input A(Int(32), {6, 4}, "A");
    Var i("i"), j("j");
    RDom k(0, 4, "k");
    Func s("s"), o("o");
    s(i) = 0;
    s(i) += A(i, k);
    o(i, j) = s(i) * j;
    auto f = StmtFacts(lower(Pipeline(o), Target::interpreter(), {{6, 3}}).body);
    ASSERT_NE(f.produced_in("s"), nullptr);
    EXPECT_EQ(*f.produced_in("s"), Path{});
    Buffer<int32_t> a({6, 4});
    a.fill_random(22);
    expect_matches_reference(o, {6, 3}, {{A, a}});
    // And at a loop of its consumer: both stages move there.
    s.compute_at(o, i);
    f = StmtFacts(lower(Pipeline(o), Target::interpreter(), {{6, 3}}).body);
    EXPECT_EQ(*f.produced_in("s"), Path{"o.s0.i"});
    EXPECT_EQ(f.loop("s.s1.k")->enclosing, (Path{"o.s0.i"}));
    expect_matches_reference(o, {6, 3}, {{A, a}});
}

TEST(Fusion, AFuncReadByTwoConsumersIsComputedAtALoopEnclosingBoth) {
    // The row maximum of a softmax is read by the sum of exponentials and by the output. With
    // the sum computed at a loop of the output, the maximum can be computed at that loop or one
    // around it, since every read of it is then inside.
    Input X(Float(32), {12, 10}, "X");
    Buffer<float> x({12, 10});
    x.fill_random(24);
    for (int at_outer = 0; at_outer < 2; ++at_outer) {
        SCOPED_TRACE(at_outer ? "max at the row blocks, sum at the rows" : "max and sum at the rows");
        tessera_test::SoftmaxByRows s(X);
        s.prob.split(s.i, "io", "ii", 4);
        s.total.compute_at(s.prob, "ii");
        s.row_max.compute_at(s.prob, at_outer ? "io" : "ii");
        auto f = StmtFacts(lower(Pipeline(s.prob), Target::interpreter(), {{12, 10}}).body);
        ASSERT_NE(f.produced_in("row_max"), nullptr);
        EXPECT_EQ(*f.produced_in("row_max"), at_outer ? Path{"prob.s0.io"} : (Path{"prob.s0.io", "prob.s0.ii"}));
        EXPECT_EQ(*f.produced_in("total"), (Path{"prob.s0.io", "prob.s0.ii"}));
        // At the row blocks the maximum is stored for the block's four rows, at a row for one.
        EXPECT_EQ(f.alloc("row_max")->extents, (std::vector<std::optional<int64_t>>{at_outer ? 4 : 1}));
        expect_matches_reference(s.prob, {12, 10}, {{X, x}}, 10);
        // With the sum at the root, its reads of the maximum are outside every loop of the output.
        s.total.compute_root();
        try {
            lower(Pipeline(s.prob), Target::interpreter(), {{12, 10}});
            ADD_FAILURE() << "the maximum was computed inside a loop its reader total runs outside";
        } catch (const Error &e) {
            const std::string m = e.what();
            EXPECT_NE(m.find("schedule of row_max: compute_at(prob, "), std::string::npos) << m;
            EXPECT_NE(m.find("total reads it outside loop"), std::string::npos) << m;
            EXPECT_NE(m.find("compute row_max at root"), std::string::npos) << m;
        }
    }
}

TEST(Fusion, ThreeLevelChain) {
    Input A(Int(32), {12, 12}, "A");
    Var y("y"), x("x");
    Func p("p"), q("q"), r("r");
    p(y, x) = A(y, x) + 1;
    q(y, x) = p(y, x) * 2 + p(y, clamp(x - 1, 0, 11));
    r(y, x) = q(y, x) - q(clamp(y + 1, 0, 11), x);
    r.split(y, "yo", "yi", 4);
    q.compute_at(r, "yo").split(y, "qyo", "qyi", 2);
    p.compute_at(q, "qyo");
    auto f = StmtFacts(lower(Pipeline(r), Target::interpreter(), {{12, 12}}).body);
    EXPECT_EQ(*f.produced_in("q"), Path{"r.s0.yo"});
    EXPECT_EQ(*f.produced_in("p"), (Path{"r.s0.yo", "q.s0.qyo"}));
    Buffer<int32_t> a({12, 12});
    a.fill_random(23);
    expect_matches_reference(r, {12, 12}, {{A, a}});
}

TEST(Fusion, StageCopiesTheRegionIntoMemory) {
    Input A(Int(32), {8, 6}, "A"), B(Int(32), {6, 7}, "B");
    Var i("i"), j("j");
    RDom k(0, 6, "k");
    Func a("a"), C("C");
    a(i, j) = A(i, j);
    C(i, j) = 0;
    C(i, j) += a(i, k) * B(k, j);
    C.update().split(i, "io", "ii", 4);
    a.stage(C, "io", MemoryKind::SPAD);
    auto f = StmtFacts(lower(Pipeline(C), Target::interpreter(), {{8, 7}}).body);
    const auto *s = f.alloc("a_in_C");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->memory, MemoryKind::SPAD);
    EXPECT_EQ(s->enclosing, Path{"C.s1.io"});
    EXPECT_EQ(s->extents, (std::vector<std::optional<int64_t>>{4, 6})) << "a 4-row panel of a, all of k";
    Buffer<int32_t> av({8, 6}), bv({6, 7});
    av.fill_random(24);
    bv.fill_random(25);
    expect_matches_reference(C, {8, 7}, {{A, av}, {B, bv}});
}

TEST(Fusion, StageAnInputPacksAColumnPanel) {
    // B is copied per strip of 8 columns into [n / 4][k][4] panels (the B packing of a matmul
    // micro-kernel); 14 columns leave a 6-column tail strip.
    Input A(Int(32), {9, 6}, "A"), B(Int(32), {6, 14}, "B");
    Var i("i"), j("j");
    RDom k(0, 6, "k");
    Func C("C");
    C(i, j) = 0;
    C(i, j) += A(i, k) * B(k, j);
    C.update().split(j, "jo", "ji", 8).reorder({"jo", "i", "k", "ji"});
    B.stage(C, "jo", MemoryKind::Stack, Layout{{"d1", "d0"}, {{"d1", 4}}});
    auto f = StmtFacts(lower(Pipeline(C), Target::interpreter(), {{9, 14}}).body);
    const auto *s = f.alloc("B_in_C");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->memory, MemoryKind::Stack);
    EXPECT_EQ(s->enclosing, Path{"C.s1.jo"});
    EXPECT_EQ(s->extents, (std::vector<std::optional<int64_t>>{2, 6, 4})) << "8 columns as 2 panels of 6 x 4";
    EXPECT_EQ(*f.produced_in("B_in_C"), Path{"C.s1.jo"});
    EXPECT_EQ(f.alloc("A_in_C"), nullptr) << "A is read in place";
    Buffer<int32_t> av({9, 6}), bv({6, 14});
    av.fill_random(26);
    bv.fill_random(27);
    expect_matches_reference(C, {9, 14}, {{A, av}, {B, bv}});
}

TEST(Fusion, StageAnInputForOneOfTwoConsumers) {
    // Only g reads the copy; f keeps reading X.
    Input X(Float(32), {7, 11}, "X");
    Var y("y"), x("x");
    Func f("f"), g("g");
    f(y, x) = X(y, x) * 2.0f;
    g(y, x) = X(y, clamp(x + 1, 0, 10)) + f(y, x);
    f.compute_root();
    g.split(y, "yo", "yi", 3);
    X.stage(g, "yo", MemoryKind::SPAD);
    EXPECT_EQ(X.schedule().funcs.at("X").stage(0).size(), 1u);
    auto st = lower(Pipeline(g), Target::interpreter(), {{7, 11}}).body;
    auto facts = StmtFacts(st);
    const auto *s = facts.alloc("X_in_g");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->memory, MemoryKind::SPAD);
    EXPECT_EQ(s->enclosing, Path{"g.s0.yo"});
    EXPECT_EQ(s->extents, (std::vector<std::optional<int64_t>>{3, 10})) << "columns 1..10: clamp(x + 1, 0, 10)";
    Buffer<float> xv({7, 11});
    xv.fill_random(28);
    expect_matches_reference(g, {7, 11}, {{X, xv}});
}

TEST(Fusion, StoreInMemoryAndBank) {
    TwoStage t;
    t.p.compute_root().store_in(MemoryKind::SPAD, 2);
    auto f = t.facts();
    EXPECT_EQ(f.alloc("p")->memory, MemoryKind::SPAD);
    EXPECT_EQ(f.alloc("p")->bank, 2);
    t.check();
}

TEST(Fusion, LayoutOrderBlockingAndAlignment) {
    Input A(Int(32), {6, 5, 7}, "A");
    Var c("c"), y("y"), x("x");
    Func p("p"), o("o");
    p(c, y, x) = A(c, y, x) * 3;
    o(c, y, x) = p(c, y, x) - p(c, y, clamp(x + 1, 0, 6));
    Layout l;
    l.order = {"y", "x", "c"};
    l.blocks = {{"c", 4}};
    l.alignment = 8;
    p.compute_root().layout(l);
    LoweredModule m = lower(Pipeline(o), Target::interpreter(), {{6, 5, 7}});
    StmtFacts f(m.body);
    // y (5), x (7), c / 4 (2), c % 4 (4, aligned up to 8).
    EXPECT_EQ(f.alloc("p")->extents, (std::vector<std::optional<int64_t>>{5, 7, 2, 8}));
    EXPECT_NE(m.to_string().find("layout [y, x, c, c:4] align 8"), std::string::npos) << m.to_string();
    Buffer<int32_t> a({6, 5, 7});
    a.fill_random(26);
    expect_matches_reference(o, {6, 5, 7}, {{A, a}});

    Layout padded;
    padded.padding = {{"x", 3}};
    p.layout(padded);
    f = StmtFacts(lower(Pipeline(o), Target::interpreter(), {{6, 5, 7}}).body);
    EXPECT_EQ(f.alloc("p")->extents, (std::vector<std::optional<int64_t>>{6, 5, 10}));
    expect_matches_reference(o, {6, 5, 7}, {{A, a}});
}

TEST(Fusion, DoubleBufferIsRecordedAndKeepsResults) {
    TwoStage t;
    t.p.compute_at(t.c, t.y).double_buffer();
    LoweredModule m = lower(Pipeline(t.c), Target::interpreter(), {{10, 9}});
    EXPECT_NE(m.to_string().find("double_buffer"), std::string::npos) << m.to_string();
    t.check();
}
