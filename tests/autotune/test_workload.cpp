// Workload keys and canonical names: the key of a computation does not depend on the names it
// was written with, and does depend on everything that changes what it computes; a schedule
// moves between pipelines that differ only in names.
#include <gtest/gtest.h>

#include "tessera/error.h"
#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/ops.h"
#include "tessera/workload.h"

using namespace tessera;

namespace {

struct Names {
    std::string a = "A", b = "B", c = "C", i = "i", j = "j", k = "k";
};

/// C(i, j) = sum_k A(i, k) * B(k, j), written by hand with the given names.
Func matmul_by_hand(int M, int N, int K, Type t = Float(32), const Names &n = {}) {
    Input A(t, {M, K}, n.a), B(t, {K, N}, n.b);
    Var i(n.i), j(n.j);
    RDom k(0, K, n.k);
    Func C(n.c);
    // As ops::matmul writes it: a float zero is a literal, not a cast of the integer 0 (the key
    // is structural, so those two spellings are two workloads).
    C(i, j) = t == Float(32) ? Expr(0.0f) : cast(t, 0);
    C(i, j) += A(i, k) * B(k, j);
    return C;
}

std::string key(const Func &f, std::vector<int64_t> shape) { return Workload::of(Pipeline(f), {shape}).key(); }

} // namespace

TEST(Workload, KeyIgnoresEveryName) {
    const Func a = matmul_by_hand(64, 48, 32);
    const Func b = matmul_by_hand(64, 48, 32, Float(32), {"X", "Y", "Z", "m", "n", "r"});
    const Workload wa = Workload::of(Pipeline(a), {{64, 48}}), wb = Workload::of(Pipeline(b), {{64, 48}});
    EXPECT_EQ(wa.key(), wb.key());
    EXPECT_EQ(wa.canonical_form(), wb.canonical_form());
    EXPECT_EQ(wa.key().size(), 16u);
    EXPECT_EQ(wa.key(), fnv1a_hex(wa.canonical_form()));
    // The canonical text names roles, never the user's names.
    for (const char *name : {"\"A\"", " A ", "(A ", " m ", "Z"}) EXPECT_EQ(wb.canonical_form().find(name), std::string::npos) << name;
    // The description is for people: it keeps the names it was made from.
    EXPECT_NE(wb.description().find("Z fp32[64, 48]"), std::string::npos) << wb.description();
}

TEST(Workload, OperatorLibraryAndHandWrittenMatmulShareAKey) {
    // ops::matmul names its Func "matmul", Vars i, j and RDom k; ours uses other names.
    Input A(Float(32), {64, 32}, "lhs"), B(Float(32), {32, 48}, "rhs");
    Func lib = ops::matmul(A, B);
    EXPECT_EQ(key(lib, {64, 48}), key(matmul_by_hand(64, 48, 32, Float(32), {"P", "Q", "R", "u", "v", "w"}), {64, 48}));
}

TEST(Workload, KeyChangesWithShapeDtypeAndAlgorithm) {
    const std::string base = key(matmul_by_hand(64, 48, 32), {64, 48});
    EXPECT_NE(base, key(matmul_by_hand(64, 48, 16), {64, 48}));              // another K (an Input shape)
    EXPECT_NE(base, key(matmul_by_hand(64, 48, 32), {32, 48}));              // another output shape
    EXPECT_NE(base, key(matmul_by_hand(64, 48, 32, Int(32)), {64, 48}));     // another dtype
    // Another algorithm over the same Inputs and shapes: A * B transposed roles.
    Input A(Float(32), {64, 32}, "A"), B(Float(32), {32, 48}, "B");
    Var i("i"), j("j");
    RDom k(0, 32, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) + B(k, j);
    EXPECT_NE(base, key(C, {64, 48}));
    // Swapping the roles of two Inputs of equal shape is another algorithm too.
    Input X(Float(32), {32, 32}, "X"), Y(Float(32), {32, 32}, "Y");
    Func D("D"), E("E");
    D(i, j) = X(i, j) - Y(i, j);
    E(i, j) = Y(i, j) - X(i, j);
    // Both read their first-used Input first, so these are the same computation up to names...
    EXPECT_EQ(key(D, {32, 32}), key(E, {32, 32}));
    // ...while reading one Input twice is not.
    Func F("F");
    F(i, j) = X(i, j) - X(i, j);
    EXPECT_NE(key(D, {32, 32}), key(F, {32, 32}));
    // Transposed access is another algorithm.
    Func G("G");
    G(i, j) = X(j, i) - Y(i, j);
    EXPECT_NE(key(D, {32, 32}), key(G, {32, 32}));
}

TEST(Workload, MisuseIsAClearError) {
    const Func c = matmul_by_hand(8, 8, 8);
    EXPECT_THROW(Workload::of(Pipeline(c), {}), Error);          // no shape for the output
    EXPECT_THROW(Workload::of(Pipeline(c), {{8}}), Error);       // wrong rank
    // Two different Inputs with one name: a schedule could not tell them apart.
    Input A1(Float(32), {8}, "A"), A2(Float(32), {8}, "A");
    Var x("x");
    Func f("f");
    f(x) = A1(x) + A2(x);
    try {
        Workload::of(Pipeline(f), {{8}});
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'A'"), std::string::npos) << e.what();
    }
}

TEST(Workload, ScheduleMovesToAPipelineWithOtherNames) {
    // Two stages, so the schedule has loop, fusion and cross-Func directives: a producer
    // computed inside the consumer's tile, the consumer tiled and vectorized with a factor.
    auto build = [](const std::string &in, const std::string &p, const std::string &c, const std::string &x,
                    const std::string &y) {
        Input I(Float(32), {32, 32}, in);
        Var vx(x), vy(y);
        Func P(p), C(c);
        P(vx, vy) = I(vx, vy) * 2.0f;
        C(vx, vy) = P(vx, vy) + 1.0f;
        return std::make_pair(Pipeline(C), std::vector<Func>{P, C});
    };
    auto [p1, f1] = build("img", "prod", "cons", "x", "y");
    // The second pipeline uses "t0" for a pure Var: the canonical name of the first loop the
    // schedule makes, which must not capture it on the way back.
    auto [p2, f2] = build("I2", "P2", "C2", "t0", "v");
    Func &prod = f1[0], &cons = f1[1];
    cons.tile(Var("x"), Var("y"), Var("xo"), Var("yo"), Var("xi"), Var("yi"), 8, 8).vectorize(Var("yi"), 4);
    prod.compute_at(cons, Var("xo"));
    const Schedule s1 = p1.schedule();
    const Workload w1 = Workload::of(p1, {{32, 32}}), w2 = Workload::of(p2, {{32, 32}});
    ASSERT_EQ(w1.key(), w2.key());
    const Schedule canonical = w1.to_canonical(s1);
    ASSERT_TRUE(canonical.funcs.count("f0") && canonical.funcs.count("f1")) << canonical.to_string();
    EXPECT_EQ(canonical.to_string().find("cons"), std::string::npos) << canonical.to_string();
    EXPECT_EQ(canonical.to_string().find("xo"), std::string::npos) << canonical.to_string();
    // Renaming back gives the schedule with the loops it makes renamed (t0, t1, ...), whose
    // canonical form is the same.
    EXPECT_EQ(w1.to_canonical(w1.from_canonical(canonical)), canonical);

    const Schedule s2 = w2.from_canonical(canonical);
    ASSERT_NO_THROW(p2.set_schedule(s2)) << s2.to_string();
    EXPECT_EQ(w2.to_canonical(p2.schedule()), canonical);
    const std::string text = s2.to_string();
    EXPECT_NE(text.find("C2: tile(t0, v, t0_, "), std::string::npos) << text; // "t0" taken by a Var
    EXPECT_NE(text.find("P2: compute_at(C2, t0_)"), std::string::npos) << text;

    // And it computes the same values.
    Buffer<float> in({32, 32});
    in.fill_random(3);
    const Input I2 = p2.inputs().at(0);
    Buffer<> ref = p2.realize({{32, 32}}, {{I2, in}}, Target::reference())[0];
    Buffer<> got = p2.realize({{32, 32}}, {{I2, in}}, Target::interpreter())[0];
    for (int64_t a = 0; a < 32; ++a)
        for (int64_t b = 0; b < 32; ++b) ASSERT_EQ(ref.get_as_double({a, b}), got.get_as_double({a, b}));
}

TEST(Workload, SchedulesNamingWhatThePipelineLacksAreRefused) {
    const Func c = matmul_by_hand(8, 8, 8);
    const Workload w = Workload::of(Pipeline(c), {{8, 8}});
    Schedule s;
    Directive d;
    d.kind = DirectiveKind::Parallel;
    d.vars = {"i"};
    s.add("nope", 0, d);
    try {
        w.to_canonical(s);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("its Funcs are C"), std::string::npos) << e.what();
    }
    Schedule stored;
    stored.add("f7", 0, d);
    EXPECT_THROW(w.from_canonical(stored), Error);
}
