// Hand-built flattened loop nests compiled by the host JIT, checked against the same
// computation written as plain C++ loops in the test.
#include <gtest/gtest.h>

#include <cmath>

#include "tessera/codegen/buffer_abi.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/ir_operator.h"

using namespace tessera;

namespace {

Expr loop_var(const std::string &name) { return Variable::make(Int(32), name, VariableKind::Loop); }
Expr fload(const std::string &buf, Expr index) { return Load::make(Float(32), buf, std::move(index)); }
Expr iload(const std::string &buf, Expr index) { return Load::make(Int(32), buf, std::move(index)); }

KernelArgument input(const std::string &name, Type t, std::vector<Expr> shape) {
    return {name, KernelArgument::Kind::Input, t, std::move(shape)};
}
KernelArgument output(const std::string &name, Type t, std::vector<Expr> shape) {
    return {name, KernelArgument::Kind::Output, t, std::move(shape)};
}

/// out[x] = a[x] * 2 + b[x] over n elements, the x loop of the given kind.
KernelSource axpy(const std::string &name, int n, ForKind kind) {
    Expr x = loop_var("x");
    Stmt body = Store::make("out", fload("a", x) * 2.0f + fload("b", x), x);
    return {name, {input("a", Float(32), {n}), input("b", Float(32), {n}), output("out", Float(32), {n})},
            For::make("x", 0, n, kind, body)};
}

void expect_axpy(const CompiledKernel &k, int n) {
    Buffer<float> a({n}), b({n}), out({n});
    a.fill_random(1);
    b.fill_random(2);
    ASSERT_EQ(k.call({a, b, out}), 0);
    for (int i = 0; i < n; ++i) ASSERT_EQ(out(i), a(i) * 2.0f + b(i)) << "at " << i;
}

} // namespace

TEST(JitStmt, SerialLoop) { expect_axpy(compile_jit(axpy("axpy_serial", 1000, ForKind::Serial)), 1000); }

TEST(JitStmt, VectorizedLoopStripMinedWithScalarTail) {
    // 1003 is no multiple of any vector width: whole vectors, then a scalar tail.
    expect_axpy(compile_jit(axpy("axpy_vec", 1003, ForKind::Vectorized)), 1003);
}

TEST(JitStmt, VectorizedLoopOfOddConstantWidth) {
    // A 7-lane vector: the whole loop is one vector operation of a width that no register has.
    expect_axpy(compile_jit(axpy("axpy_vec7", 7, ForKind::Vectorized)), 7);
}

TEST(JitStmt, VectorizedOnAvx2AndSse) {
    for (const char *features : {"-avx512f", "-avx,-avx2,-avx512f"}) {
        CpuOptions o;
        o.features = features;
        expect_axpy(compile_jit(axpy("axpy_narrow", 1001, ForKind::Vectorized), o), 1001);
    }
}

TEST(JitStmt, UnrolledAndParallelLoops) {
    expect_axpy(compile_jit(axpy("axpy_unrolled", 37, ForKind::Unrolled)), 37);
    expect_axpy(compile_jit(axpy("axpy_parallel", 1000, ForKind::Parallel)), 1000);
}

TEST(JitStmt, SplitLoopWithGuardedVectorTail) {
    // The scheduler's GuardWithIf tail: for xo in [0, ceil(n/8)), xi vectorized 8,
    // if (xo*8 + xi < n) store. Lanes past n must neither load nor store.
    const int n = 13;
    Expr xo = loop_var("xo"), xi = loop_var("xi");
    Expr x = xo * 8 + xi;
    Stmt store = Store::make("out", fload("a", x) + 1.0f, x);
    Stmt body = For::make("xo", 0, (n + 7) / 8, ForKind::Serial,
                          For::make("xi", 0, 8, ForKind::Vectorized, IfThenElse::make(x < n, store)));
    CompiledKernel k = compile_jit({"guarded", {input("a", Float(32), {n}), output("out", Float(32), {n})}, body});
    Buffer<float> a({n}), out({n});
    a.fill_random(3);
    ASSERT_EQ(k.call({a, out}), 0);
    for (int i = 0; i < n; ++i) EXPECT_EQ(out(i), a(i) + 1.0f);
}

TEST(JitStmt, SelectReadsOnlyTheChosenArm) {
    // out[x] = x >= 1 && x < n+1 ? a[x - 1] : 0 over [0, n + 2): a zero-padded shift, whose
    // unchosen arm would read a[-1] and a[n].
    const int n = 100;
    Expr x = loop_var("x");
    Expr value = select(x >= 1 && x < n + 1, fload("a", x - 1), 0.0f);
    for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
        KernelSource src{"pad", {input("a", Float(32), {n}), output("out", Float(32), {n + 2})},
                         For::make("x", 0, n + 2, kind, Store::make("out", value, x))};
        CompiledKernel k = compile_jit(src);
        Buffer<float> a({n}), out({n + 2});
        a.fill_random(4);
        ASSERT_EQ(k.call({a, out}), 0);
        EXPECT_EQ(out(0), 0.0f);
        EXPECT_EQ(out(n + 1), 0.0f);
        for (int i = 1; i <= n; ++i) EXPECT_EQ(out(i), a(i - 1));
    }
}

TEST(JitStmt, EuclideanIntegerDivisionAndModulo) {
    // out_div[i] = a[i] / b[i], out_mod[i] = a[i] % b[i] with division by zero giving 0 and
    // INT_MIN / -1 wrapping, vectorized and not.
    std::vector<int32_t> as = {7, -7, 7, -7, 0, 5, -1, INT32_MIN, INT32_MIN, 13, -13, 3};
    std::vector<int32_t> bs = {2, 2, -2, -2, 3, 0, 1, -1, 1, 5, -5, 0};
    const int n = static_cast<int>(as.size());
    Expr x = loop_var("x");
    for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
        Stmt body = For::make("x", 0, n, kind,
                              Block::make(Store::make("q", iload("a", x) / iload("b", x), x),
                                          Store::make("r", iload("a", x) % iload("b", x), x)));
        CompiledKernel k = compile_jit({"divmod", {input("a", Int(32), {n}), input("b", Int(32), {n}),
                                                   output("q", Int(32), {n}), output("r", Int(32), {n})}, body});
        Buffer<int32_t> a({n}), b({n}), q({n}), r({n});
        for (int i = 0; i < n; ++i) a(i) = as[i], b(i) = bs[i];
        ASSERT_EQ(k.call({a, b, q, r}), 0);
        for (int i = 0; i < n; ++i) {
            int64_t av = as[i], bv = bs[i], eq = 0, er = 0;
            if (bv != 0) {
                // Euclidean: 0 <= r < |b| and a == q * b + r (computed in 64 bits, then wrapped).
                er = ((av % bv) + (bv < 0 ? -bv : bv)) % (bv < 0 ? -bv : bv);
                eq = (av - er) / bv;
            }
            EXPECT_EQ(q(i), static_cast<int32_t>(static_cast<uint32_t>(eq))) << as[i] << " / " << bs[i];
            EXPECT_EQ(r(i), static_cast<int32_t>(er)) << as[i] << " % " << bs[i];
        }
    }
}

TEST(JitStmt, MatmulWithParallelRowsVectorColumnsAndScratch) {
    // C = A * B with the rows in parallel, a row of C accumulated in a stack scratch buffer
    // (vectorized over j, k serial inside), then copied out.
    const int M = 37, N = 53, K = 29;
    Expr i = loop_var("i"), j = loop_var("j"), k = loop_var("k");
    Stmt init = For::make("j", 0, N, ForKind::Vectorized, Store::make("acc", 0.0f, j));
    Stmt update = For::make("k", 0, K, ForKind::Serial,
                            For::make("j", 0, N, ForKind::Vectorized,
                                      Store::make("acc", fload("acc", j) + fload("A", i * K + k) * fload("B", k * N + j), j)));
    Stmt copy = For::make("j", 0, N, ForKind::Vectorized, Store::make("C", fload("acc", j), i * N + j));
    Stmt row = Allocate::make("acc", Float(32), MemoryKind::Stack, {N}, Block::make({init, update, copy}));
    KernelSource src{"matmul_hand", {input("A", Float(32), {M, K}), input("B", Float(32), {K, N}), output("C", Float(32), {M, N})},
                     For::make("i", 0, M, ForKind::Parallel, row)};
    CompiledKernel kern = compile_jit(src);
    Buffer<float> a({M, K}), b({K, N}), c({M, N});
    a.fill_random(5);
    b.fill_random(6);
    ASSERT_EQ(kern.call({a, b, c}), 0);
    for (int ii = 0; ii < M; ++ii)
        for (int jj = 0; jj < N; ++jj) {
            double expected = 0;
            for (int kk = 0; kk < K; ++kk) expected += static_cast<double>(a(ii, kk)) * b(kk, jj);
            EXPECT_NEAR(c(ii, jj), expected, 1e-4) << ii << "," << jj;
        }
}

TEST(JitStmt, HeapTemporaryAndSymbolicShapes) {
    // out[x] = tmp[x] where tmp[x] = a[x] + n, n a scalar argument that also sizes the buffers.
    Expr n = Variable::make(Int(32), "n", VariableKind::Param);
    Expr x = loop_var("x");
    Stmt body = Allocate::make("tmp", Float(32), MemoryKind::Host, {n},
                               Block::make(For::make("x", 0, n, ForKind::Vectorized, Store::make("tmp", fload("a", x) + cast(Float(32), n), x)),
                                           For::make("x", 0, n, ForKind::Serial, Store::make("out", fload("tmp", x), x))));
    KernelSource src{"symbolic", {{"n", KernelArgument::Kind::Scalar, Int(32), {}}, input("a", Float(32), {n}), output("out", Float(32), {n})}, body};
    CompiledKernel k = compile_jit(src);
    for (int size : {1, 17, 100000}) {
        Buffer<float> a({size}), out({size});
        a.fill_random(7);
        ASSERT_EQ(k.call({size, a, out}), 0);
        for (int i = 0; i < size; ++i) ASSERT_EQ(out(i), a(i) + static_cast<float>(size));
    }
    // The shape check uses the scalar: a buffer of another size is an error, not a crash.
    Buffer<float> a({10}), out({10});
    int code = k.call({11, a, out});
    EXPECT_EQ(TESSERA_ERROR_KIND(code), TESSERA_ERROR_SHAPE) << k.error_message(code);
}

TEST(JitStmt, Bfloat16ArithmeticRoundsEachOperation) {
    const int n = 64;
    Expr x = loop_var("x");
    Expr a = Load::make(BFloat(16), "a", x), b = Load::make(BFloat(16), "b", x);
    Stmt body = For::make("x", 0, n, ForKind::Vectorized, Store::make("out", a * b + a, x));
    CompiledKernel k = compile_jit({"bf16_fma", {input("a", BFloat(16), {n}), input("b", BFloat(16), {n}), output("out", BFloat(16), {n})}, body});
    Buffer<bfloat16> ba({n}), bb({n}), out({n});
    ba.fill_random(8);
    bb.fill_random(9);
    ASSERT_EQ(k.call({ba, bb, out}), 0);
    for (int i = 0; i < n; ++i) {
        // Rounded to bf16 after the multiply and again after the add.
        float prod = static_cast<float>(bfloat16(static_cast<float>(ba(i)) * static_cast<float>(bb(i))));
        float expected = static_cast<float>(bfloat16(prod + static_cast<float>(ba(i))));
        EXPECT_EQ(static_cast<float>(out(i)), expected) << i;
    }
}

TEST(JitStmt, ThreadCountSetting) {
    set_num_threads(1);
    EXPECT_EQ(num_threads(), 1);
    expect_axpy(compile_jit(axpy("axpy_par1", 999, ForKind::Parallel)), 999);
    set_num_threads(0);
    EXPECT_GE(num_threads(), 1);
}

TEST(JitStmt, VectorizedLoopUsesVectorRegisters) {
    CpuOptions o;
    o.keep_listing = true;
    o.features = "-avx512f";
    CompiledKernel k = compile_jit(axpy("axpy_listing", 1000, ForKind::Vectorized), o);
    EXPECT_NE(k.assembly().find("ymm"), std::string::npos) << "expected 256-bit AVX code";
    EXPECT_EQ(k.assembly().find("zmm"), std::string::npos) << "AVX-512 was disabled";
    EXPECT_NE(k.llvm_ir().find("<8 x float>"), std::string::npos);
}
