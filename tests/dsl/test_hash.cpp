// Structural equality and the stable structural hash: equal trees hash equal wherever and in
// whatever order they were built; any change of kind, type, name or constant changes both.
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tessera/func.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"

using namespace tessera;

namespace {

Expr ivar(const std::string &name) { return Variable::make(Int(32), name); }

/// An independent FNV-1a-64 over bytes, to pin the documented serialisation.
struct Fnv {
    uint64_t h = 14695981039346656037ull;
    void byte(uint8_t b) {
        h ^= b;
        h *= 1099511628211ull;
    }
    void u64(uint64_t v) {
        for (int i = 0; i < 8; ++i) byte(static_cast<uint8_t>(v >> (8 * i)));
    }
};

Expr sample(int variant) {
    const Expr x = ivar("x"), y = ivar("y");
    switch (variant) {
    case 0: return x + y * 2;
    case 1: return x + y * 3;                            // another constant
    case 2: return x - y * 2;                            // another operator
    case 3: return y + x * 2;                            // other variables in the same places
    case 4: return x + Variable::make(Int(16), "y") * 2; // another type (then another constant type)
    case 5: return x + Variable::make(Int(32), "y", VariableKind::Param) * 2; // another kind
    case 6: return min(x, y * 2);
    case 7: return select(x < y, x, y * 2);
    case 8: return exp(cast<float>(x + y * 2));
    case 9: return sqrt(cast<float>(x + y * 2));
    case 10: return cast<double>(x + y * 2);
    case 11: return Let::make("x", y, x + y * 2);
    default: return Expr();
    }
}

} // namespace

TEST(Equality, SameStructureIsEqualAndHashesEqual) {
    for (int v = 0; v < 12; ++v) {
        const Expr a = sample(v), b = sample(v);
        EXPECT_FALSE(a.same_as(b));
        EXPECT_TRUE(equal(a, b)) << v;
        EXPECT_EQ(structural_hash(a), structural_hash(b)) << v;
    }
}

TEST(Equality, EveryDifferenceIsSeen) {
    for (int v = 0; v < 12; ++v)
        for (int w = 0; w < 12; ++w) {
            if (v == w) continue;
            EXPECT_FALSE(equal(sample(v), sample(w))) << v << " vs " << w;
            EXPECT_NE(structural_hash(sample(v)), structural_hash(sample(w))) << v << " vs " << w;
        }
    EXPECT_TRUE(equal(Expr(), Expr()));
    EXPECT_FALSE(equal(Expr(), Expr(0)));
    EXPECT_NE(structural_hash(Expr()), structural_hash(Expr(0)));
}

TEST(Equality, ConstantsCompareBitwise) {
    EXPECT_TRUE(equal(Expr(std::nanf("")), Expr(std::nanf(""))));
    EXPECT_FALSE(equal(Expr(0.0f), Expr(-0.0f)));
    EXPECT_NE(structural_hash(Expr(0.0f)), structural_hash(Expr(-0.0f)));
    EXPECT_FALSE(equal(Expr(1.0f), Expr(1.0)));            // fp32 vs fp64
    EXPECT_FALSE(equal(Expr(1), UIntImm::make(UInt(32), 1))); // int32 vs uint32
    EXPECT_FALSE(equal(FloatImm::make(Float(16), 1), FloatImm::make(BFloat(16), 1)));
}

TEST(Equality, Statements) {
    auto loop = [](ForKind kind, int extent) {
        return For::make("i", 0, extent, kind, Store::make("out", ivar("i") * 2, ivar("i")));
    };
    EXPECT_TRUE(equal(loop(ForKind::Serial, 8), loop(ForKind::Serial, 8)));
    EXPECT_EQ(structural_hash(loop(ForKind::Serial, 8)), structural_hash(loop(ForKind::Serial, 8)));
    EXPECT_FALSE(equal(loop(ForKind::Serial, 8), loop(ForKind::Parallel, 8)));
    EXPECT_NE(structural_hash(loop(ForKind::Serial, 8)), structural_hash(loop(ForKind::Parallel, 8)));
    EXPECT_FALSE(equal(loop(ForKind::Serial, 8), loop(ForKind::Serial, 9)));
    auto alloc = [&](MemoryKind m, int bank) {
        return Allocate::make("t", Float(32), m, {64}, loop(ForKind::Serial, 8), bank);
    };
    EXPECT_TRUE(equal(alloc(MemoryKind::SPAD, 1), alloc(MemoryKind::SPAD, 1)));
    EXPECT_FALSE(equal(alloc(MemoryKind::SPAD, 1), alloc(MemoryKind::SPAD, 2)));
    EXPECT_NE(structural_hash(alloc(MemoryKind::SPAD, 1)), structural_hash(alloc(MemoryKind::MEM, 1)));
    EXPECT_TRUE(equal(Stmt(), Stmt()));
}

TEST(Hash, DoesNotDependOnAddressesOrConstructionOrder) {
    // Build the same expression bottom-up and top-down, interleaved with unrelated allocations,
    // so its nodes sit at unrelated addresses.
    const uint64_t reference = structural_hash(sample(8));
    std::vector<std::unique_ptr<char[]>> noise;
    for (int round = 0; round < 20; ++round) {
        noise.emplace_back(new char[static_cast<size_t>(round) * 97 + 1]);
        const Expr y2 = ivar("y") * 2;
        noise.emplace_back(new char[33]);
        const Expr x = ivar("x");
        const Expr e = exp(cast<float>(x + y2));
        EXPECT_EQ(structural_hash(e), reference);
    }
}

TEST(Hash, FollowsTheDocumentedSerialisation) {
    // structural_hash(Expr(5)) = FNV-1a over: version (u64 LE), node type IntImm, type code Int,
    // bits 32, value 5 (u64 LE). Pinning it keeps stored tuning keys valid across builds; if
    // the serialisation changes on purpose, bump kStructuralHashVersion and update this.
    Fnv f;
    f.u64(kStructuralHashVersion);
    f.byte(static_cast<uint8_t>(IRNodeType::IntImm));
    f.byte(static_cast<uint8_t>(TypeCode::Int));
    f.byte(32);
    f.u64(5);
    EXPECT_EQ(structural_hash(Expr(5)), f.h);

    // A Variable: node type, type, name (length-prefixed), kind.
    Fnv g;
    g.u64(kStructuralHashVersion);
    g.byte(static_cast<uint8_t>(IRNodeType::Variable));
    g.byte(static_cast<uint8_t>(TypeCode::Float));
    g.byte(32);
    g.u64(2);
    g.byte('k');
    g.byte('0');
    g.byte(static_cast<uint8_t>(VariableKind::Param));
    EXPECT_EQ(structural_hash(Variable::make(Float(32), "k0", VariableKind::Param)), g.h);
}

namespace {

/// C = A @ B with a reduction, built afresh on each call.
Func matmul(int k_extent, float init, Type type = Float(32)) {
    Input A(type, {8, k_extent}, "A"), B(type, {k_extent, 4}, "B");
    Var i("i"), j("j");
    RDom k(0, k_extent, "k");
    Func C("C");
    C(i, j) = cast(type, init);
    C(i, j) += A(i, k) * B(k, j);
    return C;
}

} // namespace

TEST(Hash, FuncHashCoversDefinitionsAndInputs) {
    EXPECT_EQ(hash(matmul(16, 0.0f)), hash(matmul(16, 0.0f)));
    EXPECT_NE(hash(matmul(16, 0.0f)), hash(matmul(17, 0.0f)));              // RDom and shapes
    EXPECT_NE(hash(matmul(16, 0.0f)), hash(matmul(16, 1.0f)));              // initial value
    EXPECT_NE(hash(matmul(16, 0.0f)), hash(matmul(16, 0.0f, BFloat(16)))); // dtypes

    // A producer's definition enters its consumer's hash.
    auto pipeline = [](float scale) {
        Input A(Float(32), {8}, "A");
        Var x("x");
        Func f("f"), g("g");
        f(x) = A(x) * scale;
        g(x) = f(x) + 1.0f;
        return g;
    };
    EXPECT_EQ(hash(pipeline(2.0f)), hash(pipeline(2.0f)));
    EXPECT_NE(hash(pipeline(2.0f)), hash(pipeline(3.0f)));

    // Schedules do not change what is computed, so they do not change the hash.
    Func scheduled = matmul(16, 0.0f);
    const uint64_t before = hash(scheduled);
    scheduled.parallel(Var("i"));
    EXPECT_EQ(hash(scheduled), before);

    // A pipeline's hash depends on its outputs and their order.
    Func c1 = matmul(16, 0.0f), c2 = matmul(16, 0.0f);
    Var x("x");
    Func d("D");
    d(x) = x;
    EXPECT_EQ(hash(Pipeline({c1, d})), hash(Pipeline({c2, d})));
    EXPECT_NE(hash(Pipeline({c1, d})), hash(Pipeline({d, c1})));
    EXPECT_NE(hash(Pipeline({c1})), hash(Pipeline({c1, d})));
}
