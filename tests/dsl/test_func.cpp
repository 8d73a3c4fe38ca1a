// The front end: what definitions record, how RDoms and names behave, the order of a
// pipeline's Funcs — and, through the reference evaluator, that the definitions mean what a
// Halide user expects (checked against plain loops written here).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/boundary.h"
#include "tessera/buffer.h"
#include "tessera/func.h"
#include "tessera/internal/cut_subgraph.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"
#include "tessera/reference.h"

using namespace tessera;

namespace {

std::vector<std::string> names_of(const std::vector<Func> &funcs) {
    std::vector<std::string> names;
    for (const Func &f : funcs) names.push_back(f.name());
    return names;
}

/// The Calls to Funcs in an Expr.
class FuncCalls : public IRVisitor {
public:
    std::vector<const Call *> calls;
    void visit(const Call *op) override {
        if (op->call_type == CallType::Func) calls.push_back(op);
        IRVisitor::visit(op);
    }
};

} // namespace

TEST(Func, PureDefinitionRecordsTypeArgsAndValue) {
    Var x("x"), y("y");
    Func f("f");
    EXPECT_FALSE(f.defined());
    f(x, y) = x + y * 2;
    EXPECT_TRUE(f.defined());
    EXPECT_EQ(f.type(), Int(32));
    EXPECT_EQ(f.dimensions(), 2);
    EXPECT_EQ(f.args(), (std::vector<std::string>{"x", "y"}));
    EXPECT_EQ(f.num_updates(), 0);
    EXPECT_TRUE(equal(f.value(), Expr(x) + Expr(y) * 2));

    Func copy = f; // handles share one Func
    EXPECT_EQ(copy.contents(), f.contents());
    Func g("g");
    g() = 1.5f;
    EXPECT_EQ(g.type(), Float(32));
    EXPECT_EQ(g.dimensions(), 0);
}

TEST(Func, UpdatesRecordTheirDomainAndReferToThemselvesWeakly) {
    Input A(Float(32), {8, 16}, "A"), B(Float(32), {16, 4}, "B");
    Var i("i"), j("j");
    RDom k(0, 16, "k");
    Func C("C");
    C(i, j) = 0.0f;
    const Stage s = C(i, j) += A(i, k) * B(k, j);
    EXPECT_EQ(s.index(), 1);
    EXPECT_EQ(s.name(), "C.update(0)");
    EXPECT_EQ(C.update(0).name(), "C.update(0)");
    ASSERT_EQ(C.num_updates(), 1);

    const internal::Definition &u = C.contents()->updates[0];
    ASSERT_NE(u.rdom, nullptr);
    EXPECT_EQ(u.rdom, k.contents());
    ASSERT_EQ(u.rdom->vars.size(), 1u);
    EXPECT_EQ(u.rdom->vars[0].name, "k");
    EXPECT_TRUE(equal(u.rdom->vars[0].extent, Expr(16)));
    EXPECT_EQ(to_string(u.value), "(C(i, j) + (A(i, k) * B(k, j)))");

    FuncCalls calls;
    calls.include(u.value);
    ASSERT_EQ(calls.calls.size(), 1u);
    EXPECT_EQ(calls.calls[0]->func.strong, nullptr); // weak: no reference cycle
    EXPECT_EQ(calls.calls[0]->func.get(), C.contents());
}

TEST(Func, ACopyOfAPipelineIsScheduledApartFromTheOriginal) {
    // What the chip tuner's threads rely on: each compiles candidates on a copy of its own.
    Input A(Int(32), {9, 6}, "A"), B(Int(32), {6, 14}, "B");
    Var i("i"), j("j");
    RDom k(0, 6, "k");
    Func C("C"), D("D");
    C(i, j) = 0;
    C(i, j) += A(i, k) * B(k, j);
    D(i, j) = C(i, j) * 2 + A(i, 0);
    const Pipeline original(D);
    const Pipeline copy = internal::copy_pipeline(original);

    C.compute_root();
    C.update().split(j, "jo", "ji", 8);
    B.stage(C, "jo", MemoryKind::Stack);
    const Schedule scheduled = original.schedule();
    ASSERT_NE(scheduled, Schedule{});
    EXPECT_EQ(copy.schedule(), Schedule{}) << "scheduling the original leaves the copy alone";
    original.set_schedule(Schedule{});
    copy.set_schedule(scheduled);
    EXPECT_EQ(original.schedule(), Schedule{}) << "scheduling the copy leaves the original's Funcs and Inputs alone";
    EXPECT_EQ(copy.schedule(), scheduled);

    // The same Funcs and Inputs by name, none shared; the copy's update refers to itself.
    const std::vector<Func> funcs = original.functions(), copied = copy.functions();
    ASSERT_EQ(funcs.size(), copied.size());
    for (size_t f = 0; f < funcs.size(); ++f) {
        EXPECT_EQ(funcs[f].name(), copied[f].name());
        EXPECT_NE(funcs[f].contents(), copied[f].contents());
    }
    const std::vector<Input> inputs = original.inputs(), copied_inputs = copy.inputs();
    ASSERT_EQ(inputs.size(), copied_inputs.size());
    for (size_t n = 0; n < inputs.size(); ++n) {
        EXPECT_EQ(inputs[n].name(), copied_inputs[n].name());
        EXPECT_NE(inputs[n].contents(), copied_inputs[n].contents());
    }
    const auto copied_c = std::find_if(copied.begin(), copied.end(), [](const Func &f) { return f.name() == "C"; });
    ASSERT_NE(copied_c, copied.end());
    FuncCalls calls;
    calls.include(copied_c->contents()->updates.at(0).value);
    ASSERT_EQ(calls.calls.size(), 1u);
    EXPECT_EQ(calls.calls[0]->func.strong, nullptr);
    EXPECT_EQ(calls.calls[0]->func.get(), copied_c->contents());

    Buffer<int32_t> av({9, 6}), bv({6, 14});
    av.fill_random(26);
    bv.fill_random(27);
    const Bindings bindings{{A, av}, {B, bv}};
    const Buffer<int32_t> want(original.realize({{9, 14}}, bindings).at(0)), got(copy.realize({{9, 14}}, bindings).at(0));
    for (int64_t y = 0; y < 9; ++y)
        for (int64_t x = 0; x < 14; ++x) ASSERT_EQ(got(y, x), want(y, x)) << y << ", " << x;
}

TEST(Func, SelfReferencingFuncsAreFreed) {
    std::weak_ptr<internal::FunctionContents> watch;
    {
        Var x("x");
        RDom r(1, 9, "r");
        Func scan("scan");
        scan(x) = x;
        scan(r) = scan(r - 1) + scan(r);
        watch = scan.contents();
        EXPECT_FALSE(watch.expired());
    }
    EXPECT_TRUE(watch.expired());

    // A consumer keeps its producers alive.
    Var x("x");
    Func g("g");
    {
        Func f("f");
        f(x) = x * 3;
        g(x) = f(x) + 1;
    }
    EXPECT_EQ(names_of(Pipeline(g).functions()), (std::vector<std::string>{"f", "g"}));
}

TEST(Func, CompoundAssignmentDefinesTheIdentityFirst) {
    Input A(Float(32), {4, 5}, "A");
    Var i("i");
    RDom r(0, 5, "r");
    Func sum("sum"), prod("prod");
    sum(i) += A(i, r);
    EXPECT_EQ(sum.type(), Float(32));
    EXPECT_EQ(sum.args(), std::vector<std::string>{"i"});
    EXPECT_TRUE(equal(sum.value(), Expr(0.0f)));
    EXPECT_EQ(sum.num_updates(), 1);
    prod(i) *= A(i, r);
    EXPECT_TRUE(equal(prod.value(), Expr(1.0f)));

    // A failed compound definition leaves the Func undefined.
    Func bad("bad");
    EXPECT_THROW(bad(cast<float>(Expr(i))) += 1, Error);
    EXPECT_FALSE(bad.defined());

    // Non-Var positions get implicit pure Vars named by position.
    Var x("x");
    Func h("h");
    h(x, 3) += 1;
    EXPECT_EQ(h.args(), (std::vector<std::string>{"x", "_1"}));
    EXPECT_EQ(h.type(), Int(32));
}

TEST(Func, RDomNamesAndDimensions) {
    RDom k(0, 256, "k");
    EXPECT_EQ(k.dimensions(), 1);
    EXPECT_EQ(k.x.name(), "k"); // a one-dimensional RDom's RVar carries its name
    EXPECT_EQ(to_string(Expr(k)), "k");
    RDom r(0, 3, 1, 4, "r");
    EXPECT_EQ(r.dimensions(), 2);
    EXPECT_EQ(r.x.name(), "r.x");
    EXPECT_EQ(r[1].name(), "r.y");
    EXPECT_TRUE(equal(r.y.min(), Expr(1)));
    EXPECT_TRUE(equal(r.y.extent(), Expr(4)));
    EXPECT_EQ(r.y.domain().name(), "r");
    RDom five({{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 2}}, "q");
    EXPECT_EQ(five[4].name(), "q.4");
    RDom unnamed(0, 3);
    EXPECT_EQ(unnamed.name().substr(0, 2), "_r");
    EXPECT_NE(RDom(0, 3).name(), unnamed.name());
    EXPECT_NE(Var().name(), Var().name());
    EXPECT_NE(Func().name(), Func().name());

    // where() and-s predicates and keeps them free of references back to the domain.
    r.where(r.x < r.y);
    r.where(r.x != 0);
    EXPECT_EQ(to_string(r.contents()->predicate), "((r.x < r.y) && (r.x != 0))");
    class RVarsWithDomain : public IRVisitor {
    public:
        int count = 0;
        void visit(const Variable *op) override { count += op->rdom != nullptr; }
    } probe;
    probe.include(r.contents()->predicate);
    EXPECT_EQ(probe.count, 0);
}

TEST(Func, ParamsInShapesAndDomains) {
    Param<int> n("N");
    Param<float> scale("scale");
    Input A(Float(32), {n, 4}, "A");
    Var j("j");
    RDom r(0, n, "r");
    Func f("f");
    f(j) = 0.0f;
    f(j) += A(r, j) * scale;
    const auto params = internal::find_params({f});
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[0].name, "N");
    EXPECT_EQ(params[0].type, Int(32));
    EXPECT_EQ(params[1].name, "scale");
    EXPECT_EQ(params[1].type, Float(32));
    EXPECT_EQ(to_string(A.shape()[0]), "N");
}

TEST(Pipeline, FunctionsComeProducersFirst) {
    Input in(Float(32), {8}, "in"), other(Float(32), {8}, "other");
    Var x("x");
    Func a("a"), b("b"), c("c"), d("d");
    a(x) = in(x);
    b(x) = a(x) * 2.0f;
    c(x) = a(x) + other(x);
    d(x) = b(x) + c(x);
    EXPECT_EQ(names_of(Pipeline(d).functions()), (std::vector<std::string>{"a", "b", "c", "d"}));
    EXPECT_EQ(names_of(Pipeline({c, b}).functions()), (std::vector<std::string>{"a", "c", "b"}));
    const auto inputs = Pipeline(d).inputs();
    ASSERT_EQ(inputs.size(), 2u);
    EXPECT_EQ(inputs[0].name(), "in");
    EXPECT_EQ(inputs[1].name(), "other");
    EXPECT_EQ(names_of(internal::direct_producers(d)), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(names_of(internal::called_functions(d.value())), (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(internal::find_inputs(c.value()).size(), 1u);

    // Self-references are not producers.
    Func s("s");
    RDom r(1, 7, "r");
    s(x) = b(x);
    s(r) = s(r - 1) + s(r);
    EXPECT_EQ(names_of(internal::direct_producers(s)), std::vector<std::string>{"b"});
    EXPECT_EQ(names_of(Pipeline(s).functions()), (std::vector<std::string>{"a", "b", "s"}));
}

// ---------------------------------------------------------------------------------------------
// Meaning, through the reference evaluator, against plain loops.

TEST(FuncMeaning, MatmulReduction) {
    const int M = 5, N = 3, K = 7;
    Input A(Float(32), {M, K}, "A"), B(Float(32), {K, N}, "B");
    Var i("i"), j("j");
    RDom k(0, K, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    Buffer<float> a({M, K}), b({K, N});
    a.fill_random(1);
    b.fill_random(2);
    Buffer<float> c = evaluate_reference(C, {M, N}, {{A, a}, {B, b}});
    for (int ii = 0; ii < M; ++ii)
        for (int jj = 0; jj < N; ++jj) {
            float expected = 0.0f;
            for (int kk = 0; kk < K; ++kk) expected += a(ii, kk) * b(kk, jj);
            EXPECT_FLOAT_EQ(c(ii, jj), expected);
        }
}

TEST(FuncMeaning, GeneralUpdateFormsAndScans) {
    const int N = 6, R = 4;
    Input A(Float(32), {N, R}, "A");
    Var x("x");
    RDom r(0, R, "r");
    Func m("m");
    m(x) = -std::numeric_limits<float>::infinity();
    m(x) = max(m(x), A(x, r)); // Halide's general update form
    RDom s(1, N - 1, "s");
    Func scan("scan");
    scan(x) = m(x);
    scan(s) = scan(s - 1) + scan(s); // a prefix sum: later points read earlier writes
    Buffer<float> a({N, R});
    a.fill_random(3);
    Buffer<float> out = evaluate_reference(scan, {N}, {{A, a}});
    float running = 0.0f;
    for (int xx = 0; xx < N; ++xx) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int rr = 0; rr < R; ++rr) mx = std::max(mx, a(xx, rr));
        running = xx == 0 ? mx : running + mx;
        EXPECT_FLOAT_EQ(out(xx), running);
    }
}

TEST(FuncMeaning, WherePredicatesAndScatteringUpdates) {
    const int N = 7;
    Input A(Int(32), {N}, "A");
    Var i("i");
    RDom r(0, N, "r");
    r.where(r <= i); // triangular: sum over r in [0, i]
    Func prefix("prefix");
    prefix(i) += A(r);
    Buffer<int32_t> a({N});
    for (int k = 0; k < N; ++k) a(k) = (k * 5) % 7 - 3;
    Buffer<int32_t> out = evaluate_reference(prefix, {N}, {{A, a}});
    int expected = 0;
    for (int k = 0; k < N; ++k) {
        expected += a(k);
        EXPECT_EQ(out(k), expected);
    }

    // A histogram: the update writes where the data says.
    RDom all(0, N, "all");
    Func hist("hist");
    hist(i) = 0;
    hist(clamp(A(all) + 3, 0, 6)) += 1;
    Buffer<int32_t> h = evaluate_reference(hist, {7}, {{A, a}});
    std::vector<int> counts(7, 0);
    for (int k = 0; k < N; ++k) counts[static_cast<size_t>(std::clamp(a(k) + 3, 0, 6))]++;
    for (int b = 0; b < 7; ++b) EXPECT_EQ(h(b), counts[static_cast<size_t>(b)]);
}

TEST(FuncMeaning, NarrowTypesStayNarrow) {
    Input P(UInt(8), {4}, "P");
    Var x("x");
    Func inc("inc");
    inc(x) = P(x) + 1; // the literal adapts: uint8 arithmetic, wrapping at 256
    EXPECT_EQ(inc.type(), UInt(8));
    Buffer<uint8_t> p({4});
    p(0) = 0;
    p(1) = 100;
    p(2) = 254;
    p(3) = 255;
    Buffer<uint8_t> out = evaluate_reference(inc, {4}, {{P, p}});
    EXPECT_EQ(out(0), 1);
    EXPECT_EQ(out(1), 101);
    EXPECT_EQ(out(2), 255);
    EXPECT_EQ(out(3), 0);
}

TEST(Boundary, RepeatEdgeAndConstantExteriorOfAnInput) {
    const int N = 5, pad = 2;
    Input A(Float(32), {N}, "A");
    Var x("x");
    Func edge = repeat_edge(A), zero = constant_exterior(A, 0.0f);
    EXPECT_EQ(edge.name(), "A_repeat_edge");
    EXPECT_EQ(zero.name(), "A_constant_exterior");
    Func shifted_edge("shifted_edge"), shifted_zero("shifted_zero");
    shifted_edge(x) = edge(x - pad);
    shifted_zero(x) = zero(x - pad);
    Buffer<float> a({N});
    for (int k = 0; k < N; ++k) a(k) = 10.0f + static_cast<float>(k);
    auto outs = evaluate_reference(Pipeline({shifted_edge, shifted_zero}), {{N + 2 * pad}, {N + 2 * pad}}, {{A, a}});
    Buffer<float> e = outs[0], z = outs[1];
    for (int k = 0; k < N + 2 * pad; ++k) {
        const int src = k - pad;
        EXPECT_EQ(e(k), a(std::clamp(src, 0, N - 1))) << k;
        EXPECT_EQ(z(k), src >= 0 && src < N ? a(src) : 0.0f) << k;
    }
}

TEST(Boundary, PaddedBoxFilterOverAFunc) {
    const int H = 4, W = 6;
    Input A(Int(16), {H, W}, "A");
    Var y("y"), x("x");
    Func img("img");
    img(y, x) = A(y, x) * 2;
    Func padded = constant_exterior(img, {{0, H}, {0, W}}, -1);
    EXPECT_EQ(padded.args(), (std::vector<std::string>{"y", "x"}));
    EXPECT_EQ(padded.type(), Int(16));
    RDom r(-1, 3, -1, 3, "r");
    Func box("box");
    box(y, x) = cast<int32_t>(0);
    box(y, x) += padded(y + r.x, x + r.y);
    Buffer<int16_t> a({H, W});
    a.fill_random(4);
    Buffer<int32_t> out = evaluate_reference(box, {H, W}, {{A, a}});
    for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) {
            int expected = 0;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    const int sy = yy + dy, sx = xx + dx;
                    expected += sy >= 0 && sy < H && sx >= 0 && sx < W ? 2 * a(sy, sx) : -1;
                }
            EXPECT_EQ(out(yy, xx), expected) << yy << "," << xx;
        }

    Func clamped = repeat_edge(img, {{1, 2}, {0, W}}, "clamped");
    EXPECT_EQ(clamped.name(), "clamped");
    Buffer<int16_t> c = evaluate_reference(clamped, {H, W}, {{A, a}});
    for (int yy = 0; yy < H; ++yy)
        for (int xx = 0; xx < W; ++xx) EXPECT_EQ(c(yy, xx), 2 * a(std::clamp(yy, 1, 2), xx));
}

TEST(FuncMeaning, RepeatedAssignmentIsAnUpdate) {
    Var x("x");
    Func f("f");
    f(x) = x;
    f(x) = f(x) * 2; // as in Halide: a second `=` adds an update, it does not redefine f
    f(0) = 100;
    EXPECT_EQ(f.num_updates(), 2);
    Buffer<int32_t> out = evaluate_reference(f, {4});
    EXPECT_EQ(out(0), 100);
    for (int k = 1; k < 4; ++k) EXPECT_EQ(out(k), 2 * k);
}

TEST(FuncMeaning, TheUsersViewExampleOfTheDesign) {
    // DESIGN.md section 1, at a smaller size: algorithm, schedule, realize on the reference.
    Input A(Float(32), {24, 16}, "A"), B(Float(32), {16, 20}, "B");
    Var i("i"), j("j");
    RDom k(0, 16, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    Var io("io"), jo("jo"), ii("ii"), ji("ji");
    C.update().tile(i, j, io, jo, ii, ji, 8, 8).vectorize(ji, 4).parallel(io);
    Buffer<float> a({24, 16}), b({16, 20});
    a.fill_random(1);
    b.fill_random(2);
    Buffer<float> ref = C.realize({24, 20}, {{A, a}, {B, b}}, Target::reference());
    for (int r = 0; r < 24; ++r)
        for (int c = 0; c < 20; ++c) {
            float expected = 0.0f;
            for (int kk = 0; kk < 16; ++kk) expected += a(r, kk) * b(kk, c);
            EXPECT_FLOAT_EQ(ref(r, c), expected);
        }
}
