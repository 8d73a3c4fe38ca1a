// Bounds inference on known cases. The producer is computed at root (or at a loop) so the size
// of its allocation shows the region inferred; each expected region is worked out by hand in
// the comment next to it, and the interpreter must also reproduce the reference.
#include <gtest/gtest.h>

#include "sched_test_util.h"
#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/interpreter.h"
#include "tessera/lower.h"

using namespace tessera;
using tessera::test::expect_matches_reference;
using tessera::test::StmtFacts;

namespace {

std::vector<std::optional<int64_t>> extents_of(const Func &out, const std::vector<int64_t> &shape,
                                               const std::string &producer) {
    StmtFacts f(lower(Pipeline(out), Target::interpreter(), {shape}).body);
    const auto *a = f.alloc(producer);
    if (!a) return {};
    return a->extents;
}

using Ext = std::vector<std::optional<int64_t>>;

} // namespace

TEST(Bounds, Stencil3x3) {
    Input A(Int(32), {9, 12}, "A");
    Var y("y"), x("x");
    Func p("p"), blur("blur");
    p(y, x) = A(clamp(y, 0, 8), clamp(x, 0, 11)) * 2;
    RDom r(0, 3, 0, 3, "r");
    blur(y, x) = 0;
    blur(y, x) += p(y + r.y - 1, x + r.x - 1);
    p.compute_root();
    // blur over [0, 9) x [0, 12) reads p over [-1, 9] x [-1, 12]: 11 x 14.
    EXPECT_EQ(extents_of(blur, {9, 12}, "p"), (Ext{11, 14}));
    Buffer<int32_t> a({9, 12});
    a.fill_random(11);
    expect_matches_reference(blur, {9, 12}, {{A, a}});

    // Computed per row of blur's update: three rows of 14.
    p.compute_at(blur.update(), y);
    EXPECT_EQ(extents_of(blur, {9, 12}, "p"), (Ext{3, 14}));
    expect_matches_reference(blur, {9, 12}, {{A, a}});
}

TEST(Bounds, StridedDilatedConv) {
    Input A(Int(32), {11, 13}, "A");
    Var y("y"), x("x");
    Func in("in"), conv("conv");
    in(y, x) = A(y, x) + 1;
    RDom r(0, 3, 0, 3, "r");
    conv(y, x) = 0;
    // stride 2, dilation 2
    conv(y, x) += in(y * 2 + r.y * 2, x * 2 + r.x * 2) * (r.x + 2 * r.y + 1);
    in.compute_root();
    // y in [0, 3]: 2y + 2ry in [0, 6 + 4] → 11 rows; x in [0, 4]: [0, 8 + 4] → 13 columns.
    EXPECT_EQ(extents_of(conv, {4, 5}, "in"), (Ext{11, 13}));
    Buffer<int32_t> a({11, 13});
    a.fill_random(12);
    expect_matches_reference(conv, {4, 5}, {{A, a}});
}

TEST(Bounds, TransposedRead) {
    Input A(Float(32), {3, 5}, "A");
    Var y("y"), x("x");
    Func p("p"), t("t");
    p(y, x) = A(y, x) * 2.0f;
    t(x, y) = p(y, x);
    p.compute_root();
    // t is 5 x 3, so p is needed over 3 x 5.
    EXPECT_EQ(extents_of(t, {5, 3}, "p"), (Ext{3, 5}));
    Buffer<float> a({3, 5});
    a.fill_random(13);
    expect_matches_reference(t, {5, 3}, {{A, a}});
}

TEST(Bounds, Clamp) {
    Input A(Int(32), {10}, "A");
    Var x("x");
    Func p("p"), c("c");
    p(x) = A(x) * 2;
    c(x) = p(clamp(x - 2, 0, 9));
    p.compute_root();
    // x in [0, 20): x - 2 in [-2, 17], clamped to [0, 9] → 10.
    EXPECT_EQ(extents_of(c, {20}, "p"), (Ext{10}));
    Buffer<int32_t> a({10});
    a.fill_random(14);
    expect_matches_reference(c, {20}, {{A, a}});
}

TEST(Bounds, SelectArmsNeedDifferentRegions) {
    Var x("x");
    Func p("p"), c("c");
    p(x) = x * 3;
    c(x) = select(x < 5, p(x + 100), p(x - 100));
    p.compute_root();
    // x in [0, 10): arm one reads [100, 109], arm two [-100, -91]; the union is [-100, 109].
    EXPECT_EQ(extents_of(c, {10}, "p"), (Ext{210}));
    expect_matches_reference(c, {10}, {});
}

TEST(Bounds, SymbolicExtentsStaySymbolic) {
    Input A(Int(32), {16}, "A");
    Var x("x");
    Func p("p"), c("c");
    p(x) = A(x) + 1;
    c(x) = p(x) + p(x + 1);
    p.compute_root();
    LoweredModule m = lower(Pipeline(c), Target::interpreter());
    StmtFacts f(m.body);
    ASSERT_NE(f.alloc("p"), nullptr);
    EXPECT_FALSE(f.alloc("p")->extents[0].has_value()) << "the region depends on the output's extent";
    EXPECT_NE(m.to_string().find("c.x.extent"), std::string::npos) << m.to_string();
    // Run the symbolic module directly on buffers.
    Buffer<int32_t> a({16}), out({15});
    a.fill_random(15);
    run_lowered(m, {{"A", a}, {"c", out}});
    for (int i = 0; i < 15; ++i) EXPECT_EQ(out(i), a(i) + 1 + a(i + 1) + 1);
}
