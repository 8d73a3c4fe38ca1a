// A table of misuses of the DSL. Each must throw tessera::Error — never crash, never throw
// anything else — with a message that names the Func, Input, Var or RDom at fault (and, where
// the table says so, what to do).
#include <functional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/boundary.h"
#include "tessera/error.h"
#include "tessera/func.h"
#include "tessera/ir_operator.h"

using namespace tessera;

namespace {

struct Misuse {
    const char *what;
    std::function<void()> code;
    std::vector<std::string> message_contains;
};

// Shared ingredients; each case builds its own Funcs so the cases stay independent.
const Var x("x"), y("y");

Input input_a() { return Input(Float(32), {16}, "A"); }

const std::vector<Misuse> &misuses() {
    static const std::vector<Misuse> table = {
        {"calling a Func before it has a definition",
         [] {
             Func g("g"), f("f");
             f(x) = g(x);
         },
         {"Func g", "before it has a definition", "g(x"}},
        {"calling a Func with too many arguments",
         [] {
             Func g("g"), f("f");
             g(x) = x;
             f(x) = g(x, x);
         },
         {"Func g has 1 argument", "called with 2"}},
        {"calling a Func with too few arguments",
         [] {
             Func g("g"), f("f");
             g(x, y) = x + y;
             f(x) = g(x);
         },
         {"Func g has 2 arguments"}},
        {"an update with more arguments than the pure definition",
         [] {
             Func f("f");
             f(x) = 0;
             f(x, y) += 1;
         },
         {"update 0 of Func f", "has 2 arguments", "f(x)"}},
        {"an update that narrows fp32 into an int8 Func",
         [] {
             Input A = input_a();
             Func f("f");
             f(x) = cast<int8_t>(0);
             f(x) += A(x);
         },
         {"update 0 of Func f", "int8", "fp32", "cast"}},
        {"an update storing a float constant into an int32 Func",
         [] {
             Func f("f");
             f(x) = 0;
             f(x) = 0.5f;
         },
         {"update 0 of Func f", "0.5f", "narrowing", "cast(Int(32), ...)"}},
        {"an update of a bf16 Func with an fp32 value",
         [] {
             Input A = input_a();
             Func f("f");
             f(x) = cast(BFloat(16), 0);
             f(x) = max(f(x), A(x));
         },
         {"Func f", "bf16", "narrowing"}},
        {"an expression on the left of a pure definition",
         [] {
             Func f("f");
             f(x + 1) = 0;
         },
         {"pure definition of Func f", "needs Vars", "(x + 1)"}},
        {"a Param on the left of a pure definition",
         [] {
             Param<int> n("n");
             Func f("f");
             f(n) = 0;
         },
         {"Func f", "needs Vars", "n"}},
        {"the same Var twice on the left",
         [] {
             Func f("f");
             f(x, x) = 0;
         },
         {"Var x appears twice", "Func f"}},
        {"an RVar on the left of a pure definition",
         [] {
             RDom r(0, 4, "r");
             Func f("f");
             f(r) = 0;
         },
         {"Func f", "RVar r", "update"}},
        {"an RVar on the right of a pure definition",
         [] {
             Input A = input_a();
             RDom r(0, 16, "r");
             Func f("f");
             f(x) = A(r);
         },
         {"Func f", "RVar r", "update definition"}},
        {"a free Var in a pure definition",
         [] {
             Func f("f");
             f(x) = x + y;
         },
         {"Func f", "Var y", "left-hand side"}},
        {"a free Var in an update",
         [] {
             Input A = input_a();
             Func f("f");
             f(x) = 0.0f;
             f(x) += A(y);
         },
         {"update 0 of Func f", "Var y"}},
        {"a pure Var moved to another position in an update",
         [] {
             Func f("f");
             f(x, y) = 0;
             f(y, x) += 1;
         },
         {"Func f", "Var y is argument 0", "x"}},
        {"an expression of a pure Var on the left of an update",
         [] {
             Func f("f");
             f(x) = 0;
             f(x + 1) += 1;
         },
         {"Func f", "pure Var x", "(x + 1)"}},
        {"a float coordinate into an Input",
         [] {
             Input A = input_a();
             Func f("f");
             f(x) = A(x * 0.5f);
         },
         {"Input A", "coordinate 0", "cast<int>"}},
        {"a float coordinate on the left of an update",
         [] {
             RDom r(0, 4, "r");
             Func f("f");
             f(x) = 0;
             f(cast<float>(r)) += 1;
         },
         {"argument 0 of update 0 of Func f", "fp32", "cast<int>"}},
        {"a bool coordinate into a Func",
         [] {
             Func g("g"), f("f");
             g(x) = x;
             f(x) = g(x < 3);
         },
         {"call g(", "bool", "select"}},
        {"an int64 coordinate that may not fit",
         [] {
             Func g("g"), f("f");
             g(x) = x;
             f(x) = g(cast<int64_t>(x));
         },
         {"the call g(", "int64", "cast<int>"}},
        {"reading an Input with the wrong number of coordinates",
         [] {
             Input A = input_a();
             Func f("f");
             f(x) = A(x, x);
         },
         {"Input A has 1 dimension", "2 coordinates"}},
        {"an RDom over an undefined extent",
         [] {
             Expr extent;
             RDom r(0, extent, "r");
         },
         {"RDom r", "extent", "undefined"}},
        {"an RDom over a float extent",
         [] { RDom r(0, 2.5f, "r"); },
         {"RDom r", "extent", "fp32", "integer"}},
        {"an RDom whose extent depends on a pure Var",
         [] { RDom r(0, x, "r"); },
         {"RDom r", "Var x", "constants and Params"}},
        {"an RDom with a negative extent",
         [] { RDom r(0, -3, "r"); },
         {"RDom r", "negative"}},
        {"a where-predicate that is not bool",
         [] {
             RDom r(0, 8, "r");
             r.where(r + 1);
         },
         {"RDom r", "where()", "bool"}},
        {"a where-predicate added after the RDom is used",
         [] {
             Input A = input_a();
             RDom r(0, 16, "r");
             Func f("f");
             f(x) = 0.0f;
             f(x) += A(r);
             r.where(r < 4);
         },
         {"RDom r", "after a definition already uses"}},
        {"a where-predicate over another RDom's RVar",
         [] {
             RDom r(0, 8, "r"), s(0, 8, "s");
             r.where(s < 4);
         },
         {"RDom r", "RVar s", "another RDom"}},
        {"a dimension the RDom does not have",
         [] {
             RDom r(0, 3, 0, 3, "r");
             Expr e = r.z;
         },
         {"RDom r has 2 dimensions", "r.z does not exist"}},
        {"a multi-dimensional RDom used as one RVar",
         [] {
             RDom r(0, 3, 0, 3, "r");
             Expr e = r;
         },
         {"RDom r has 2 dimensions", "r.x"}},
        {"an RVar that belongs to no RDom",
         [] {
             RVar v;
             Expr e = v;
         },
         {"RVar", "belongs to no RDom"}},
        {"an update over two RDoms",
         [] {
             Input A = input_a();
             RDom r(0, 16, "r"), s(0, 16, "s");
             Func f("f");
             f() = 0.0f;
             f() += A(r) * A(s);
         },
         {"update 0 of Func f", "two RDoms", "r and s"}},
        {"an RVar named like a pure Var of the Func",
         [] {
             Var k("k");
             RDom r(0, 4, "k");
             Func f("f");
             f(k) = 0;
             f(k) += r;
         },
         {"Func f", "RVar k", "same name"}},
        {"an update after the Func was used by another Func",
         [] {
             Func f("f"), g("g");
             f(x) = x;
             g(x) = f(x) * 2;
             f(x) += 1;
         },
         {"Func f is already used by Func g"}},
        {"asking for an update that does not exist",
         [] {
             Func f("f");
             f(x) = x;
             f.update(0);
         },
         {"Func f has 0 update definitions", "update(0)"}},
        {"asking the type of an undefined Func",
         [] {
             Func f("f");
             f.type();
         },
         {"Func f has no definition", "type"}},
        {"a Pipeline with an undefined output",
         [] {
             Func f("f");
             Pipeline p(f);
         },
         {"Pipeline", "Func f", "no definition"}},
        {"an undefined Expr as a definition's value",
         [] {
             Expr nothing;
             Func f("f");
             f(x) = nothing;
         },
         {"Func f", "undefined"}},
        {"an Input shape that depends on a Var",
         [] { Input A(Float(32), {x}, "A"); },
         {"Input A", "Var x", "constants and Params"}},
        {"a Var with an empty name",
         [] { Var v(""); },
         {"Var", "empty"}},
        {"arithmetic with an undefined Expr",
         [] {
             Expr nothing;
             Expr e = Expr(x) + nothing;
         },
         {"operator+", "undefined"}},
        {"a logical operator on integers",
         [] { Expr e = Expr(x) && Expr(y); },
         {"operator&&", "x", "bool"}},
        {"mixing uint64 and a signed type",
         [] { Expr e = cast<uint64_t>(x) + cast<int8_t>(y); },
         {"operator+", "uint64", "cast"}},
        {"a constant exterior that does not fit the Input",
         [] {
             Input A(Int(8), {16}, "A");
             constant_exterior(A, 1000);
         },
         {"constant_exterior(A)", "1000"}},
        {"repeat_edge with the wrong number of bounds",
         [] {
             Func f("f");
             f(x) = x;
             repeat_edge(f, {{0, 4}, {0, 4}});
         },
         {"repeat_edge", "Func f", "1 dimensions"}},
        {"two Inputs with the same name in one Pipeline",
         [] {
             Input A1(Float(32), {4}, "A"), A2(Float(32), {4}, "A");
             Func f("f");
             f(x) = A1(x) + A2(x);
             Pipeline(f).inputs();
         },
         {"two different Inputs", "named A"}},
    };
    return table;
}

class DslMisuse : public ::testing::TestWithParam<size_t> {};

} // namespace

TEST(DslMisuse, TableHasAtLeast25Cases) { EXPECT_GE(misuses().size(), 25u); }

TEST_P(DslMisuse, ThrowsANamingError) {
    const Misuse &m = misuses()[GetParam()];
    SCOPED_TRACE(m.what);
    std::string message;
    bool threw = false;
    try {
        m.code();
    } catch (const Error &e) {
        threw = true;
        message = e.what();
    } catch (const std::exception &e) {
        FAIL() << "threw a non-tessera exception: " << e.what();
    }
    ASSERT_TRUE(threw) << "no tessera::Error was thrown";
    for (const std::string &s : m.message_contains) EXPECT_THAT(message, ::testing::HasSubstr(s));
}

INSTANTIATE_TEST_SUITE_P(Table, DslMisuse, ::testing::Range<size_t>(0, misuses().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                             std::string name;
                             for (const char *c = misuses()[info.param].what; *c; ++c)
                                 name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
                             return std::to_string(info.param) + "_" + name;
                         });
