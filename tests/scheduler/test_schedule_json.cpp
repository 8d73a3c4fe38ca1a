// Schedules as values: the JSON form round-trips exactly for every directive, malformed JSON is
// rejected with the path of the bad field, and a schedule naming Funcs or loops absent from the
// pipeline fails to apply and changes nothing.
#include <gtest/gtest.h>

#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/schedule.h"

using namespace tessera;

namespace {

Directive make(DirectiveKind k, std::vector<std::string> vars = {}, std::vector<int64_t> factors = {}) {
    Directive d;
    d.kind = k;
    d.vars = std::move(vars);
    d.factors = std::move(factors);
    return d;
}

/// One schedule that uses every directive kind and every field.
Schedule every_directive() {
    Schedule s;
    s.add("C", 0, make(DirectiveKind::Split, {"x", "xo", "xi"}, {8}));
    s.funcs["C"].stages[0].back().tail = TailStrategy::RoundUp;
    s.add("C", 0, make(DirectiveKind::Fuse, {"xo", "y", "f"}));
    s.add("C", 0, make(DirectiveKind::Reorder, {"xi", "f"}));
    s.add("C", 1, make(DirectiveKind::Tile, {"i", "j", "io", "jo", "ii", "ji"}, {64, 32}));
    s.funcs["C"].stages[1].back().tail = TailStrategy::GuardWithIf;
    s.add("C", 1, make(DirectiveKind::Vectorize, {"ji"}, {16}));
    s.add("C", 1, make(DirectiveKind::Unroll, {"ii"}));
    s.add("C", 1, make(DirectiveKind::Parallel, {"io"}));
    Directive t = make(DirectiveKind::Tensorize, {"ii", "ji", "k"});
    t.unit = "mxm";
    s.add("C", 1, t);
    s.add("P", 0, make(DirectiveKind::ComputeInline));
    s.add("P", 0, make(DirectiveKind::ComputeRoot));
    Directive at = make(DirectiveKind::ComputeAt, {"xo"});
    at.func = "C";
    at.consumer_stage = 1;
    s.add("P", 0, at);
    s.add("P", 0, make(DirectiveKind::StoreRoot));
    Directive st = make(DirectiveKind::StoreAt, {"f"});
    st.func = "C";
    s.add("P", 0, st);
    Directive sg = make(DirectiveKind::Stage, {"jo"});
    sg.func = "C";
    sg.memory = MemoryKind::SPAD;
    s.add("Q", 0, sg);
    Directive in = make(DirectiveKind::StoreIn);
    in.memory = MemoryKind::MEM;
    in.bank = 3;
    s.add("Q", 0, in);
    Directive l = make(DirectiveKind::SetLayout);
    l.layout.order = {"n", "c", "h", "w"};
    l.layout.blocks = {{"c", 16}};
    l.layout.padding = {{"w", 1}};
    l.layout.alignment = 8;
    s.add("Q", 0, l);
    s.add("Q", 0, make(DirectiveKind::DoubleBuffer));
    Directive packed = make(DirectiveKind::Stage, {"ko"});
    packed.func = "C";
    packed.consumer_stage = 1;
    packed.memory = MemoryKind::Stack;
    packed.layout.order = {"d1", "d0"};
    packed.layout.blocks = {{"d1", 8}};
    s.add("B", 0, packed); // an Input's staging, with the copy's layout
    return s;
}

} // namespace

TEST(ScheduleJson, EveryDirectiveRoundTripsExactly) {
    Schedule s = every_directive();
    const std::string text = s.to_json();
    Schedule back = Schedule::from_json(text);
    EXPECT_EQ(back, s);
    EXPECT_EQ(back.to_json(), text);
    EXPECT_EQ(Schedule::from_json(s.to_json(-1)), s);
    // Every kind is present once at least.
    std::set<DirectiveKind> kinds;
    for (const auto &[n, fs] : s.funcs)
        for (const auto &[st, ds] : fs.stages)
            for (const auto &d : ds) kinds.insert(d.kind);
    EXPECT_EQ(kinds.size(), 17u);
}

// Found by fuzz_schedule_json: a Func listed with only empty stages prints as no Func at all, so
// it must compare equal to an absent one, as set_schedule treats it.
TEST(ScheduleJson, FuncWithNoDirectivesRoundTripsAsAbsent) {
    const Schedule s = Schedule::from_json(R"({"version": 1, "funcs": [{"name": "matmul", "stages": [{"stage": 0, "directives": []}]}]})");
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(Schedule::from_json(s.to_json()), s);
    EXPECT_EQ(s, Schedule());
    Schedule tiled;
    tiled.add("matmul", 0, make(DirectiveKind::Parallel, {"i"}));
    EXPECT_NE(s, tiled);
    EXPECT_NE(tiled, s);
}

TEST(ScheduleJson, DocumentedFormReads) {
    const char *text = R"({"version": 1, "funcs": [{"name": "C", "stages": [{"stage": 1, "directives": [
        {"op": "tile", "vars": ["i", "j", "io", "jo", "ii", "ji"], "factors": [64, 64]},
        {"op": "vectorize", "vars": ["ji"], "factors": [16], "tail": "guard_with_if"}]}]}]})";
    Schedule s = Schedule::from_json(text);
    const auto &ds = s.funcs.at("C").stage(1);
    ASSERT_EQ(ds.size(), 2u);
    EXPECT_EQ(ds[0].kind, DirectiveKind::Tile);
    EXPECT_EQ(ds[0].factors, (std::vector<int64_t>{64, 64}));
    EXPECT_EQ(ds[1].tail, TailStrategy::GuardWithIf);
    EXPECT_EQ(ds[1].to_string(), "vectorize(ji, 16, guard_with_if)");
}

TEST(ScheduleJson, MalformedInputNamesTheField) {
    auto message = [](const std::string &text) {
        try {
            Schedule::from_json(text);
        } catch (const Error &e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message("{").find("not valid JSON"), std::string::npos);
    EXPECT_NE(message(R"({"version": 2, "funcs": []})").find("version"), std::string::npos);
    EXPECT_NE(message(R"({"version": 1, "funcs": [{"name": "C", "stages": [{"stage": 0, "directives": [{"op": "splt"}]}]}]})")
                  .find("funcs[0].stages[0].directives[0].op"),
              std::string::npos);
    EXPECT_NE(message(R"({"version": 1, "funcs": [{"name": "C", "stages": [{"stage": 0, "directives": [{"op": "split", "factors": ["8"]}]}]}]})")
                  .find("factors[0]"),
              std::string::npos);
    EXPECT_NE(message(R"({"version": 1, "funcs": [{"name": "C", "stages": [{"stage": 0, "directives": [{"op": "split", "factr": 8}]}]}]})")
                  .find("unknown field \"factr\""),
              std::string::npos);
    EXPECT_NE(message(R"({"version": 1, "funcs": [{"name": "C", "stages": [{"stage": 0, "directives": [{"op": "split", "tail": "sideways"}]}]}]})")
                  .find("tail"),
              std::string::npos);
}

TEST(ScheduleJson, PipelineScheduleCollectsAndReplaces) {
    Input A(Float(32), {8, 8}, "A");
    Var y("y"), x("x");
    Func p("p"), c("c");
    p(y, x) = A(y, x) * 2.0f;
    c(y, x) = p(y, x) + 1.0f;
    p.compute_at(c, y);
    c.split(x, "xo", "xi", 4);
    Pipeline pl(c);
    Schedule s = pl.schedule();
    EXPECT_EQ(s.funcs.size(), 2u);
    p.compute_root();
    pl.set_schedule(s);
    EXPECT_EQ(pl.schedule(), s);
    EXPECT_EQ(p.schedule().funcs.at("p").stage(0).size(), 1u);
}

TEST(ScheduleJson, ScheduleNamingAbsentFuncsOrLoopsFailsAndChangesNothing) {
    Input A(Float(32), {8, 8}, "A");
    Var y("y"), x("x");
    Func c("c");
    c(y, x) = A(y, x) + 1.0f;
    c.split(x, "xo", "xi", 4);
    Pipeline pl(c);
    const Schedule before = pl.schedule();

    Schedule other;
    other.add("nope", 0, make(DirectiveKind::ComputeRoot));
    try {
        pl.set_schedule(other);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("c"), std::string::npos) << e.what();
    }
    Schedule bad_var;
    bad_var.add("c", 0, make(DirectiveKind::Split, {"z", "zo", "zi"}, {2}));
    try {
        pl.set_schedule(bad_var);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("unknown loop 'z'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("y, x"), std::string::npos) << "lists the loops: " << e.what();
    }
    Schedule bad_stage;
    bad_stage.add("c", 2, make(DirectiveKind::Parallel, {"y"}));
    EXPECT_THROW(pl.set_schedule(bad_stage), Error);
    EXPECT_EQ(pl.schedule(), before);
}

TEST(ScheduleJson, FuncSetScheduleChangesOnlyThatFunc) {
    Input A(Float(32), {8, 8}, "A");
    Var y("y"), x("x");
    Func p("p"), c("c");
    p(y, x) = A(y, x) * 2.0f;
    c(y, x) = p(y, x) + 1.0f;
    p.compute_root();
    Schedule s;
    s.add("c", 0, make(DirectiveKind::Parallel, {"y"}));
    c.set_schedule(s);
    EXPECT_EQ(c.schedule(), s);
    EXPECT_EQ(p.schedule().funcs.at("p").stage(0).size(), 1u) << "the producer's directives are kept";
    Schedule other;
    other.add("p", 0, make(DirectiveKind::ComputeInline));
    EXPECT_THROW(c.set_schedule(other), Error) << "a Func's schedule names only that Func";
}

TEST(ScheduleJson, InputStagingIsPartOfThePipelineSchedule) {
    Input A(Float(32), {8, 6}, "A"), B(Float(32), {6, 16}, "B");
    Var i("i"), j("j");
    RDom k(0, 6, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);
    C.update().split(j, "jo", "ji", 8);
    B.stage(C.update(), "jo", MemoryKind::Stack, Layout{{"d1", "d0"}, {{"d1", 8}}});
    Pipeline pl(C);
    const Schedule s = pl.schedule();
    ASSERT_EQ(s.funcs.count("B"), 1u);
    EXPECT_EQ(s.funcs.at("B").stage(0).at(0).to_string(), "stage(C.update(0), jo, Stack, [d1, d0, d1:8])");
    EXPECT_EQ(Schedule::from_json(s.to_json()), s);

    pl.set_schedule(Schedule{});
    EXPECT_TRUE(B.schedule().empty()) << "replacing the pipeline's schedule clears the Input's";
    pl.set_schedule(Schedule::from_json(s.to_json()));
    EXPECT_EQ(B.schedule().funcs.at("B"), s.funcs.at("B"));

    Schedule not_staging;
    not_staging.add("B", 0, make(DirectiveKind::ComputeRoot));
    try {
        pl.set_schedule(not_staging);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("Input B: compute_root()"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("only stage("), std::string::npos) << e.what();
    }
    Schedule unknown_consumer;
    Directive d = make(DirectiveKind::Stage, {"jo"});
    d.func = "D";
    unknown_consumer.add("B", 0, d);
    try {
        pl.set_schedule(unknown_consumer);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("names Func D, which is not in this pipeline"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(pl.schedule(), s) << "a failed set_schedule changes nothing";
}
