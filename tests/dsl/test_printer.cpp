// The printer: Exprs read like C, constants print exactly with their type, Stmts print as an
// indented loop nest in the style of Halide's stmt files.
#include <cmath>
#include <limits>
#include <sstream>

#include <gtest/gtest.h>

#include "tessera/func.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

using namespace tessera;

namespace {
Expr ivar(const std::string &name) { return Variable::make(Int(32), name); }
} // namespace

TEST(Printer, Constants) {
    EXPECT_EQ(to_string(Expr(42)), "42");
    EXPECT_EQ(to_string(Expr(-3)), "-3");
    EXPECT_EQ(to_string(IntImm::make(Int(8), -5)), "int8(-5)");
    EXPECT_EQ(to_string(Expr(int64_t{1} << 40)), "int64(1099511627776)");
    EXPECT_EQ(to_string(UIntImm::make(UInt(8), 255)), "uint8(255)");
    EXPECT_EQ(to_string(Expr(true)), "true");
    EXPECT_EQ(to_string(Expr(1.0f)), "1.0f");
    EXPECT_EQ(to_string(Expr(0.1f)), "0.1f"); // shortest digits that read back as the same fp32
    EXPECT_EQ(to_string(Expr(0.1)), "0.1");
    EXPECT_EQ(to_string(Expr(1e-7f)), "1e-07f");
    EXPECT_EQ(to_string(Expr(2.5)), "2.5");
    EXPECT_EQ(to_string(FloatImm::make(BFloat(16), 3.14159)), "bf16(3.140625)");
    EXPECT_EQ(to_string(FloatImm::make(Float(16), 65504)), "fp16(65504.0)");
    EXPECT_EQ(to_string(Expr(std::numeric_limits<float>::infinity())), "inf");
    EXPECT_EQ(to_string(FloatImm::make(Float(32), std::nan(""))), "nan");
    EXPECT_EQ(to_string(Expr()), "<undefined>");
}

TEST(Printer, Expressions) {
    const Expr x = ivar("x"), y = ivar("y");
    EXPECT_EQ(to_string(x + y * 2), "(x + (y * 2))");
    EXPECT_EQ(to_string((x + y) * 2), "((x + y) * 2)");
    EXPECT_EQ(to_string(x / 3 % 2 - 1), "(((x / 3) % 2) - 1)");
    EXPECT_EQ(to_string(min(x, 0) + max(y, 1)), "(min(x, 0) + max(y, 1))");
    EXPECT_EQ(to_string(x < 3 && !(y >= 4) || x == y), "(((x < 3) && !(y >= 4)) || (x == y))");
    EXPECT_EQ(to_string(select(x != 0, x, y)), "select((x != 0), x, y)");
    EXPECT_EQ(to_string(cast<float>(x) * 0.5f), "(fp32(x) * 0.5f)");
    EXPECT_EQ(to_string(sqrt(cast(BFloat(16), x))), "sqrt(bf16(x))");
    EXPECT_EQ(to_string(Let::make("t", x + 1, ivar("t") * ivar("t"))), "(let t = (x + 1) in (t * t))");
    EXPECT_EQ(to_string(Load::make(Float(32), "buf", x * 64 + y)), "buf[((x * 64) + y)]");
    EXPECT_EQ(to_string(clamp(x, 0, 63)), "max(min(x, 63), 0)");
}

TEST(Printer, FuncsAndInputsPrintAsCalls) {
    Input A(Float(32), {16, 8}, "A");
    Var i("i"), j("j");
    Func f("f");
    f(i, j) = A(i, j) * 2.0f;
    Func g("g");
    g(i) = f(i, i + 1);
    EXPECT_EQ(to_string(g.value()), "f(i, (i + 1))");
    EXPECT_EQ(to_string(f.value()), "(A(i, j) * 2.0f)");
}

TEST(Printer, LoopNestLikeAStmtFile) {
    const Expr i = ivar("i"), j = ivar("j");
    const Stmt inner = Provide::make("C", Expr(0.0f), {i, j});
    const Stmt nest = ProducerConsumer::make(
        "C", true,
        For::make("i", 0, 512, ForKind::Parallel, For::make("j", 0, 384, ForKind::Serial, inner)));
    EXPECT_EQ(to_string(nest), "produce C {\n"
                               "  for (i, 0, 512) parallel {\n"
                               "    for (j, 0, 384) {\n"
                               "      C(i, j) = 0.0f\n"
                               "    }\n"
                               "  }\n"
                               "}\n");
}

TEST(Printer, AllocationsConditionsAndLets) {
    const Expr i = ivar("i");
    const Stmt store = Store::make("T", Expr(1.5f), i);
    const Stmt s = Allocate::make(
        "T", Float(32), MemoryKind::SPAD, {64, 32},
        Block::make({LetStmt::make("n", i * 2, Evaluate::make(ivar("n"))),
                     IfThenElse::make(i < 10, store, Store::make("T", Expr(0.0f), i))}),
        2);
    EXPECT_EQ(to_string(s), "allocate T[fp32 * 64 * 32] in SPAD bank 2 {\n"
                            "  let n = (i * 2)\n"
                            "  n\n"
                            "  if ((i < 10)) {\n"
                            "    T[i] = 1.5f\n"
                            "  } else {\n"
                            "    T[i] = 0.0f\n"
                            "  }\n"
                            "}\n");
    const Stmt r = Realize::make("F", BFloat(16), MemoryKind::Auto, {{0, 16}, {i, 8}}, Evaluate::make(0));
    EXPECT_EQ(to_string(r), "realize F[bf16, [0, 16], [i, 8]] in Auto {\n  0\n}\n");
    const Stmt v = For::make("x", 0, 16, ForKind::Vectorized, Store::make("o", Expr(1), ivar("x")));
    EXPECT_EQ(to_string(v), "for (x, 0, 16) vectorized {\n  o[x] = 1\n}\n");
}

TEST(Printer, StreamOperators) {
    std::ostringstream os;
    os << (ivar("x") + 1) << " : " << Float(32) << " : " << BFloat(16);
    EXPECT_EQ(os.str(), "(x + 1) : fp32 : bf16");
}
