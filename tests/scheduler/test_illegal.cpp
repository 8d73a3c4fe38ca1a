// A table of illegal schedules. Each must throw tessera::Error — at the directive or when
// lowering — whose message names the Func's stage ("schedule of C.update(0)") and the
// directive, and lists the legal choices where there are some. None may crash (this suite also
// runs under ASan + UBSan: ctest -L sanitize in a TESSERA_SANITIZE=ON build).
#include <gtest/gtest.h>

#include <functional>

#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"

using namespace tessera;

namespace {

/// The algorithms the table schedules, fresh for each case.
struct Algorithms {
    Input A{Int(32), {9, 7}, "A"}, B{Int(32), {7, 5}, "B"}, V{Int(32), {4, 6, 5}, "V"};
    Var i{"i"}, j{"j"}, c{"c"}, y{"y"}, x{"x"};
    RDom k{0, 7, "k"};
    RDom r{0, 3, 0, 2, "r"};
    Func f{"f"}, g{"g"}, C{"C"}, h{"h"}, p{"p"}, q{"q"}, vol{"vol"}, other{"other"};
    Algorithms() {
        f(i, j) = A(i, j) + 1;                  // pure, 9 x 7
        g(i, j) = f(i, j) * 2 + f(i, clamp(j + 1, 0, 6));
        C(i, j) = 0;                            // matmul 9 x 5
        C(i, j) += A(i, k) * B(k, j);
        h(i) = 0;                               // a non-associative reduction
        h(i) = h(i) * 3 + A(r.x + i, r.y);
        p(i, j) = A(i, j) - 1;
        q(i, j) = p(i, j) + p(i, j);
        other(i, j) = p(i, j) * 5;
        vol(c, y, x) = V(c, y, x) * 2;
    }
};

struct Case {
    const char *name;
    /// Applies the schedule (may throw) and returns the pipeline to lower and its shape.
    std::function<std::pair<Pipeline, std::vector<std::vector<int64_t>>>(Algorithms &)> build;
    /// Substrings the message must contain: the stage, the directive, and any legal choices.
    std::vector<std::string> expect;
    bool symbolic = false; ///< lower with symbolic output extents
};

using Shapes = std::vector<std::vector<int64_t>>;

std::vector<Case> cases() {
    return {
        {"split factor zero", [](Algorithms &a) { a.f.split(a.j, "jo", "ji", 0); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "split(j, jo, ji, 0)", "positive"}},
        {"split factor negative", [](Algorithms &a) { a.C.update().split(a.i, "io", "ii", -3); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "split", "positive"}},
        {"split factor beyond any extent", [](Algorithms &a) {
             Schedule s;
             Directive d;
             d.kind = DirectiveKind::Split;
             d.vars = {"j", "jo", "ji"};
             d.factors = {int64_t(1) << 32}; // from JSON: the API's int cannot say it
             s.add("f", 0, d);
             Pipeline(a.f).set_schedule(s);
             return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "split", "at most 2147483647", "4294967296"}},
        {"split unknown var", [](Algorithms &a) { a.f.split(a.x, "xo", "xi", 2); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "split", "unknown loop 'x'", "i, j"}},
        {"split already split var", [](Algorithms &a) { a.f.split(a.j, "jo", "ji", 2).split(a.j, "a", "b", 2); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "split(j, a, b, 2)", "already split", "i, jo, ji"}},
        {"split new name clashes", [](Algorithms &a) { a.f.split(a.j, a.i, "ji", 2); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "split", "already a loop"}},
        {"fuse non-adjacent", [](Algorithms &a) { a.vol.fuse(a.c, a.x, "cx"); return std::make_pair(Pipeline(a.vol), Shapes{{4, 6, 5}}); },
         {"schedule of vol", "fuse(c, x, cx)", "not adjacent", "c, y, x"}},
        {"fuse pure with reduction", [](Algorithms &a) { a.C.update().fuse(a.j, a.k, "jk"); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "fuse", "reduction"}},
        {"reorder names a loop twice", [](Algorithms &a) { a.f.reorder(a.j, a.j); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "reorder(j, j)", "twice"}},
        {"reorder unknown loop", [](Algorithms &a) { a.f.reorder(a.j, "zz"); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "reorder", "unknown loop 'zz'"}},
        {"tile factor zero", [](Algorithms &a) { a.f.tile(a.i, a.j, "io", "jo", "ii", "ji", 4, 0); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "tile", "positive"}},
        {"vectorize unknown loop", [](Algorithms &a) { a.f.vectorize("w", 4); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "vectorize(w, 4)", "unknown loop"}},
        {"vectorize non-constant extent", [](Algorithms &a) { a.f.vectorize(a.j); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "vectorize(j)", "constant"}, true},
        {"parallel over a reduction", [](Algorithms &a) { a.C.update().parallel(a.k); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "parallel(k)", "reduction loop", "race"}},
        {"vectorize over a reduction", [](Algorithms &a) { a.C.update().vectorize(a.k, 4); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "vectorize(k, 4)", "race"}},
        {"reorder non-associative reduction", [](Algorithms &a) { a.h.update().reorder(a.r.x, a.r.y); return std::make_pair(Pipeline(a.h), Shapes{{4}}); },
         {"schedule of h.update(0)", "reorder(r.x, r.y)", "associative"}},
        {"split non-associative reduction out of order", [](Algorithms &a) { a.h.update().split(a.r.y, "ryo", "ryi", 1).reorder("ryi", "ryo"); return std::make_pair(Pipeline(a.h), Shapes{{4}}); },
         {"schedule of h.update(0)", "reorder(ryi, ryo)", "relative order"}},
        {"round_up on a reduction", [](Algorithms &a) { a.C.update().split(a.k, "ko", "ki", 2, TailStrategy::RoundUp); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "split(k, ko, ki, 2, round_up)", "outside the RDom"}},
        {"shift_inwards on a reduction", [](Algorithms &a) { a.C.update().split(a.k, "ko", "ki", 2, TailStrategy::ShiftInwards); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "shift_inwards", "twice"}},
        {"shift_inwards on an update", [](Algorithms &a) { a.C.update().split(a.j, "jo", "ji", 2, TailStrategy::ShiftInwards); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "split(j, jo, ji, 2, shift_inwards)", "update"}},
        {"round_up past the output", [](Algorithms &a) { a.f.split(a.j, "jo", "ji", 4, TailStrategy::RoundUp); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "round_up", "output f"}},
        {"compute_at unknown loop", [](Algorithms &a) { a.f.compute_at(a.g, "jo"); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "compute_at(g, jo)", "no loop 'jo'", "i, j"}},
        {"compute_at a non-consumer", [](Algorithms &a) { a.p.compute_at(a.C, a.i); return std::make_pair(Pipeline({a.C, a.q}), Shapes{{9, 5}, {9, 7}}); },
         {"schedule of p", "compute_at(C, i)", "does not read p", "q"}},
        {"compute_at an inlined consumer", [](Algorithms &a) {
             Func top("top");
             top(a.i, a.j) = a.g(a.i, a.j) + 1;
             a.f.compute_at(a.g, a.i);
             return std::make_pair(Pipeline(top), Shapes{{9, 7}}); },
         {"schedule of f", "compute_at(g, i)", "inlined"}},
        {"compute_at with two consumers", [](Algorithms &a) { a.p.compute_at(a.q, a.i); return std::make_pair(Pipeline({a.q, a.other}), Shapes{{9, 7}, {9, 7}}); },
         {"schedule of p", "compute_at(q, i)", "q, other"}},
        {"compute_inline with updates", [](Algorithms &a) {
             Func top("top");
             top(a.i, a.j) = a.C(a.i, a.j) + 1;
             a.C.compute_inline();
             return std::make_pair(Pipeline(top), Shapes{{9, 5}}); },
         {"schedule of C", "compute_inline()", "update"}},
        {"compute_inline the output", [](Algorithms &a) { a.f.compute_inline(); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "compute_inline()", "output"}},
        {"compute_at the output", [](Algorithms &a) { a.g.compute_at(a.f, a.i); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of g", "compute_at(f, i)", "output"}},
        {"store_at inside the compute loop", [](Algorithms &a) { a.f.compute_at(a.g, a.i).store_at(a.g, a.j); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "store_at(g, j)", "enclose", "i, j"}},
        {"store_at with compute_root", [](Algorithms &a) { a.f.compute_root().store_at(a.g, a.i); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "store_at(g, i)", "root"}},
        {"layout unknown dimension", [](Algorithms &a) { Layout l; l.order = {"j", "z"}; a.f.compute_root().layout(l); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "layout", "'z' is not a dimension", "i, j"}},
        {"layout order incomplete", [](Algorithms &a) { Layout l; l.order = {"j"}; a.f.compute_root().layout(l); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "layout", "every dimension"}},
        {"layout block factor zero", [](Algorithms &a) { Layout l; l.blocks = {{"j", 0}}; a.f.compute_root().layout(l); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "layout", "positive"}},
        {"layout on the output", [](Algorithms &a) { Layout l; l.order = {"j", "i"}; a.f.layout(l); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "layout", "output"}},
        {"tensorize not innermost", [](Algorithms &a) { a.C.update().tensorize("mxm", {a.i, a.j}); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "tensorize(mxm, i, j)", "innermost", "j, k"}},
        {"tensorize non-constant loops", [](Algorithms &a) { a.C.update().tensorize("mxm", {a.j, a.k}); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of C.update(0)", "tensorize(mxm, j, k)", "constant extent"}, true},
        {"stage for a non-consumer", [](Algorithms &a) { a.p.stage(a.C, a.i, MemoryKind::SPAD); return std::make_pair(Pipeline({a.C, a.q}), Shapes{{9, 5}, {9, 7}}); },
         {"schedule of p", "stage(C, i, SPAD)", "does not read p", "q"}},
        {"stage an Input for a non-consumer", [](Algorithms &a) { a.B.stage(a.g, a.i, MemoryKind::Stack); return std::make_pair(Pipeline({a.C, a.g}), Shapes{{9, 5}, {9, 7}}); },
         {"schedule of Input B", "stage(g, i, Stack)", "does not read Input B", "C"}},
        {"stage an Input at an unknown loop", [](Algorithms &a) { a.C.update().split(a.j, "jo", "ji", 2); a.B.stage(a.C, "zz", MemoryKind::Stack); return std::make_pair(Pipeline(a.C), Shapes{{9, 5}}); },
         {"schedule of Input B", "stage(C, zz, Stack)", "C.update(0) has no loop 'zz'", "i, jo, ji, k"}},
        {"stage an Input for a Func outside the pipeline", [](Algorithms &a) { a.A.stage(a.vol, a.c, MemoryKind::Stack); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of Input A", "stage(vol, c, Stack)", "Func vol is not in this pipeline"}},
        {"two kinds on one loop", [](Algorithms &a) { a.f.split(a.j, "jo", "ji", 4).vectorize("ji").parallel("ji"); return std::make_pair(Pipeline(a.f), Shapes{{9, 7}}); },
         {"schedule of f", "parallel(ji)", "already vectorized"}},
        {"loop directive on an inlined Func", [](Algorithms &a) { a.f.split(a.j, "jo", "ji", 2); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "split(j, jo, ji, 2)", "inlined"}},
        {"schedule naming an absent Func", [](Algorithms &a) {
             Schedule s;
             Directive d;
             d.kind = DirectiveKind::ComputeRoot;
             s.add("ghost", 0, d);
             Pipeline(a.g).set_schedule(s);
             return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"ghost", "not in this pipeline", "f, g"}},
        {"store_in a negative bank", [](Algorithms &a) { a.f.store_in(MemoryKind::MEM, -2); return std::make_pair(Pipeline(a.g), Shapes{{9, 7}}); },
         {"schedule of f", "store_in", "bank"}},
    };
}

} // namespace

TEST(IllegalSchedules, EachThrowsANamedError) {
    auto table = cases();
    ASSERT_GE(table.size(), 25u);
    for (const auto &c : table) {
        SCOPED_TRACE(c.name);
        Algorithms a;
        std::string message;
        try {
            auto [pipeline, shapes] = c.build(a);
            if (c.symbolic)
                lower(pipeline, Target::interpreter());
            else
                lower(pipeline, Target::interpreter(), shapes);
            ADD_FAILURE() << "no error for: " << c.name;
            continue;
        } catch (const InternalError &e) {
            ADD_FAILURE() << "internal error instead of a user error: " << e.what();
            continue;
        } catch (const Error &e) {
            message = e.what();
        }
        for (const auto &s : c.expect) EXPECT_NE(message.find(s), std::string::npos) << "missing \"" << s << "\" in: " << message;
    }
}

TEST(IllegalSchedules, AFailedDirectiveIsNotRecorded) {
    Algorithms a;
    a.f.split(a.j, "jo", "ji", 4);
    EXPECT_THROW(a.f.split(a.j, "a", "b", 2), Error);
    EXPECT_EQ(a.f.schedule().funcs.at("f").stage(0).size(), 1u);
}
