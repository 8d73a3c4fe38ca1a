// IR construction: every make() rejects meaningless nodes with a tessera::Error, and the
// visitor and mutator walk and rebuild trees as documented.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

using namespace tessera;
using ::testing::HasSubstr;

namespace {

Expr ivar(const std::string &name) { return Variable::make(Int(32), name); }
Expr fvar(const std::string &name) { return Variable::make(Float(32), name); }

template <typename F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "did not throw tessera::Error";
    return "";
}

} // namespace

TEST(IRConstruction, ConstantsCheckTheirType) {
    EXPECT_EQ(IntImm::make(Int(8), -128).as<IntImm>()->value, -128);
    EXPECT_THAT(error_of([] { IntImm::make(Int(8), 200); }), HasSubstr("int8"));
    EXPECT_THAT(error_of([] { IntImm::make(UInt(8), 1); }), HasSubstr("Int type"));
    EXPECT_THAT(error_of([] { UIntImm::make(UInt(8), 256); }), HasSubstr("256"));
    EXPECT_THAT(error_of([] { UIntImm::make(Bool(), 2); }), HasSubstr("bool"));
    EXPECT_THAT(error_of([] { FloatImm::make(Int(32), 1.0); }), HasSubstr("Float"));
    // A float constant is rounded to its type when made.
    EXPECT_EQ(FloatImm::make(Float(32), 0.1).as<FloatImm>()->value, static_cast<double>(0.1f));
    EXPECT_EQ(FloatImm::make(Float(16), 1.0 / 3).as<FloatImm>()->value, 0.333251953125);
    EXPECT_EQ(FloatImm::make(BFloat(16), 3.14159).as<FloatImm>()->value, 3.140625);
    // C++ scalars become constants of the documented types.
    EXPECT_EQ(Expr(1).type(), Int(32));
    EXPECT_EQ(Expr(int64_t{1}).type(), Int(64));
    EXPECT_EQ(Expr(1u).type(), UInt(32));
    EXPECT_EQ(Expr(uint64_t{1}).type(), UInt(64));
    EXPECT_EQ(Expr(1.0f).type(), Float(32));
    EXPECT_EQ(Expr(1.0).type(), Float(64));
    EXPECT_EQ(Expr(true).type(), Bool());
    EXPECT_EQ(Expr(bfloat16(2.0f)).type(), BFloat(16));
    EXPECT_EQ(Expr(float16(2.0f)).type(), Float(16));
}

TEST(IRConstruction, BinaryNodesNeedDefinedOperandsOfOneType) {
    const Expr x = ivar("x"), f = fvar("f");
    EXPECT_EQ(Add::make(x, x).type(), Int(32));
    EXPECT_EQ(LT::make(f, f).type(), Bool());
    EXPECT_THAT(error_of([&] { Add::make(x, f); }), HasSubstr("same type"));
    EXPECT_THAT(error_of([&] { Mul::make(x, Expr()); }), HasSubstr("undefined"));
    EXPECT_THAT(error_of([&] { Min::make(Expr(true), Expr(false)); }), HasSubstr("bool"));
    EXPECT_THAT(error_of([&] { LT::make(Expr(true), Expr(false)); }), HasSubstr("bool"));
    EXPECT_EQ(EQ::make(Expr(true), Expr(false)).type(), Bool());
    EXPECT_THAT(error_of([&] { And::make(x, x); }), HasSubstr("bool operands"));
    EXPECT_THAT(error_of([&] { Not::make(x); }), HasSubstr("bool"));
    EXPECT_THROW(Expr().type(), Error);
}

TEST(IRConstruction, SelectLetCastLoad) {
    const Expr x = ivar("x");
    EXPECT_THAT(error_of([&] { Select::make(x, x, x); }), HasSubstr("condition"));
    EXPECT_THAT(error_of([&] { Select::make(x < 1, x, fvar("f")); }), HasSubstr("same type"));
    EXPECT_EQ(Select::make(x < 1, x, x).type(), Int(32));
    EXPECT_EQ(Let::make("t", x + 1, fvar("g")).type(), Float(32));
    EXPECT_THAT(error_of([&] { Let::make("", x, x); }), HasSubstr("name"));
    EXPECT_THAT(error_of([&] { Cast::make(Float(32), Expr()); }), HasSubstr("undefined"));
    EXPECT_THAT(error_of([&] { Load::make(Float(32), "buf", fvar("i")); }), HasSubstr("integer"));
    EXPECT_THAT(error_of([&] { Variable::make(Int(32), ""); }), HasSubstr("name"));
}

TEST(IRConstruction, CallsCheckArityAndTypes) {
    const Expr f = fvar("f");
    EXPECT_EQ(Call::make_intrinsic(Intrinsic::Exp, {f}).type(), Float(32));
    EXPECT_THAT(error_of([&] { Call::make_intrinsic(Intrinsic::Exp, {}); }), HasSubstr("takes 1 argument"));
    EXPECT_THAT(error_of([&] { Call::make_intrinsic(Intrinsic::Pow, {f}); }), HasSubstr("takes 2 arguments"));
    EXPECT_THAT(error_of([&] { Call::make_intrinsic(Intrinsic::Sqrt, {ivar("i")}); }), HasSubstr("floating-point"));
    EXPECT_THAT(error_of([&] { Call::make_intrinsic(Intrinsic::Pow, {f, Variable::make(Float(64), "d")}); }),
                HasSubstr("same type"));
    EXPECT_EQ(Call::make_intrinsic(Intrinsic::Abs, {ivar("i")}).type(), Int(32));

    auto input = std::make_shared<internal::InputContents>();
    input->name = "A";
    input->type = BFloat(16);
    input->shape = {Expr(4), Expr(5)};
    EXPECT_EQ(Call::make_input(input, {ivar("i"), ivar("j")}).type(), BFloat(16));
    EXPECT_THAT(error_of([&] { Call::make_input(input, {ivar("i")}); }), HasSubstr("Input A"));
    EXPECT_THAT(error_of([&] { Call::make_input(input, {ivar("i"), f}); }), HasSubstr("int32"));
    EXPECT_THAT(error_of([&] { Call::make_func(Float(32), FunctionRef(), {}); }), HasSubstr("empty"));
}

TEST(IRConstruction, WeakFunctionRefsReportExpiry) {
    FunctionRef weak;
    {
        auto contents = std::make_shared<internal::FunctionContents>();
        contents->name = "gone";
        weak = FunctionRef::make_weak(contents);
        EXPECT_TRUE(weak.defined());
        EXPECT_EQ(weak.get()->name, "gone");
    }
    EXPECT_FALSE(weak.defined());
    EXPECT_THROW(weak.get(), InternalError);
}

TEST(IRConstruction, StatementsCheckTheirParts) {
    const Expr i = ivar("i");
    const Stmt store = Store::make("out", fvar("v"), i);
    EXPECT_NO_THROW(For::make("i", 0, 64, ForKind::Parallel, store));
    EXPECT_THAT(error_of([&] { For::make("i", 0, fvar("n"), ForKind::Serial, store); }), HasSubstr("extent of loop i"));
    EXPECT_THAT(error_of([&] { For::make("i", 0, Expr(int64_t{64}), ForKind::Serial, store); }), HasSubstr("same type"));
    EXPECT_THAT(error_of([&] { For::make("i", 0, 64, ForKind::Serial, Stmt()); }), HasSubstr("body"));
    EXPECT_THAT(error_of([&] { IfThenElse::make(i, store); }), HasSubstr("bool"));
    EXPECT_THAT(error_of([&] { Allocate::make("t", Float(32), MemoryKind::SPAD, {64}, store, -2); }), HasSubstr("bank"));
    EXPECT_THAT(error_of([&] { Allocate::make("t", Float(32), MemoryKind::SPAD, {fvar("n")}, store); }),
                HasSubstr("extent 0 of t"));
    EXPECT_THAT(error_of([&] { Provide::make("f", Expr(), {i}); }), HasSubstr("value"));
    EXPECT_THAT(error_of([&] { Realize::make("f", Float(32), MemoryKind::Auto, {{0, Expr()}}, store); }),
                HasSubstr("extent"));
    EXPECT_THAT(error_of([&] { Block::make(store, Stmt()); }), HasSubstr("second"));
    EXPECT_THAT(error_of([] { Block::make(std::vector<Stmt>{Stmt(), Stmt()}); }), HasSubstr("no defined"));
    // The vector form skips undefined statements and nests to the right.
    const Stmt b = Block::make({store, Stmt(), Evaluate::make(i), Evaluate::make(i + 1)});
    ASSERT_NE(b.as<Block>(), nullptr);
    EXPECT_TRUE(b.as<Block>()->first.same_as(store));
    EXPECT_NE(b.as<Block>()->rest.as<Block>(), nullptr);
    EXPECT_EQ(Block::make({store}).node, store.node);
}

TEST(IRConstruction, MemoryKindNames) {
    EXPECT_EQ(parse_memory_kind("SPAD"), MemoryKind::SPAD);
    EXPECT_EQ(parse_memory_kind("spad"), MemoryKind::SPAD);
    EXPECT_EQ(parse_memory_kind("dram"), MemoryKind::DRAM);
    EXPECT_STREQ(memory_kind_name(MemoryKind::ACC), "ACC");
    EXPECT_THAT(error_of([] { parse_memory_kind("L2"); }), HasSubstr("SPAD"));
    EXPECT_STREQ(for_kind_name(ForKind::Vectorized), "vectorized");
}

namespace {

/// Counts visits per node kind and records variable names in visiting order.
class Counter : public IRVisitor {
public:
    std::vector<std::string> names;
    int adds = 0, loops = 0;
    void visit(const Variable *op) override { names.push_back(op->name); }
    void visit(const Add *op) override {
        ++adds;
        IRVisitor::visit(op);
    }
    void visit(const For *op) override {
        ++loops;
        IRVisitor::visit(op);
    }
};

/// Renames one variable.
class Rename : public IRMutator {
public:
    Rename(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}

protected:
    using IRMutator::visit;
    Expr visit(const Variable *op, const Expr &e) override {
        return op->name == from_ ? Variable::make(op->type, to_, op->kind) : e;
    }

private:
    std::string from_, to_;
};

} // namespace

TEST(IRVisitor, VisitsEveryChildInOrder) {
    const Expr a = ivar("a"), b = ivar("b"), c = ivar("c");
    const Expr e = select(a < b, (a + b) + c, max(c, a * 2));
    Counter count;
    e.accept(&count);
    EXPECT_EQ(count.names, (std::vector<std::string>{"a", "b", "a", "b", "c", "c", "a"}));
    EXPECT_EQ(count.adds, 2);

    const Stmt s = For::make("i", 0, 8, ForKind::Serial,
                             For::make("j", 0, 8, ForKind::Serial, Store::make("out", a + b, ivar("j"))));
    Counter loops;
    s.accept(&loops);
    EXPECT_EQ(loops.loops, 2);
    EXPECT_EQ(loops.names, (std::vector<std::string>{"a", "b", "j"}));
}

TEST(IRMutator, RebuildsOnlyWhatChanged) {
    const Expr a = ivar("a"), b = ivar("b");
    const Expr left = (a * 3) + 1, right = b - 2;
    const Expr e = min(left, right);

    // Nothing to rename: the very same node comes back.
    EXPECT_TRUE(Rename("zzz", "q").mutate(e).same_as(e));

    // Renaming b rebuilds the path to b and keeps the untouched subtree (left) by identity.
    const Expr renamed = Rename("b", "q").mutate(e);
    ASSERT_NE(renamed.as<Min>(), nullptr);
    EXPECT_TRUE(renamed.as<Min>()->a.same_as(left));
    EXPECT_FALSE(renamed.as<Min>()->b.same_as(right));
    EXPECT_TRUE(equal(renamed, min(left, ivar("q") - 2)));

    const Stmt body = Store::make("out", a + b, ivar("i"));
    const Stmt loop = For::make("i", 0, 16, ForKind::Vectorized, body);
    EXPECT_TRUE(Rename("zzz", "q").mutate(loop).same_as(loop));
    const Stmt changed = Rename("a", "q").mutate(loop);
    ASSERT_NE(changed.as<For>(), nullptr);
    EXPECT_EQ(changed.as<For>()->kind, ForKind::Vectorized);
    EXPECT_TRUE(equal(changed, For::make("i", 0, 16, ForKind::Vectorized, Store::make("out", ivar("q") + b, ivar("i")))));
}

TEST(IRMutator, CallsKeepWhatTheyCall) {
    auto input = std::make_shared<internal::InputContents>();
    input->name = "A";
    input->type = Float(32);
    input->shape = {Expr(10)};
    const Expr e = exp(Call::make_input(input, {ivar("i") + 1}));
    const Expr m = Rename("i", "k").mutate(e);
    const Call *outer = m.as<Call>();
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(outer->intrinsic, Intrinsic::Exp);
    const Call *inner = outer->args[0].as<Call>();
    ASSERT_NE(inner, nullptr);
    EXPECT_EQ(inner->call_type, CallType::Input);
    EXPECT_EQ(inner->input, input);
    EXPECT_EQ(to_string(m), "exp(A((k + 1)))");
}
