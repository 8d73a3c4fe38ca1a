// ops::matmul and ops::gemm against plain loops: shapes with 1 and odd extents, transposes,
// batches with broadcasting, int8 (exact, int32 accumulation), fp32 and bf16; the canonical
// form the tensorizer relies on; and the shape errors.
#include <cmath>

#include "ops_test_util.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"

namespace {

using namespace tessera;
using namespace ops_test;

/// C[b.., i, j] = Σ_k A[b.., i, k] · B[b.., k, j] in double, with NumPy batch broadcasting
/// and the transposes applied to the stored operands.
std::vector<double> matmul_loops(const Buffer<> &a, const Buffer<> &b, bool ta, bool tb, std::vector<int64_t> &out_shape) {
    const auto av = values(a), bv = values(b);
    const auto &as = a.shape(), &bs = b.shape();
    const int64_t m = ta ? as.back() : as[as.size() - 2], k = ta ? as[as.size() - 2] : as.back();
    const int64_t n = tb ? bs[bs.size() - 2] : bs.back();
    const std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(ab.size(), bb.size());
    std::vector<int64_t> batch(rank);
    for (size_t i = 0; i < rank; ++i) {
        const int64_t ea = i < ab.size() ? ab[ab.size() - 1 - i] : 1, eb = i < bb.size() ? bb[bb.size() - 1 - i] : 1;
        batch[rank - 1 - i] = std::max(ea, eb);
    }
    out_shape = batch;
    out_shape.push_back(m);
    out_shape.push_back(n);
    std::vector<double> out;
    for_each_index(out_shape, [&](const std::vector<int64_t> &c) {
        // Which matrix of an operand's batch this output point reads (broadcast extents read 0).
        auto matrix_index = [&](const std::vector<int64_t> &shape_batch) {
            int64_t o = 0;
            for (size_t d = 0; d < shape_batch.size(); ++d) {
                const int64_t coord = c[rank - shape_batch.size() + d];
                o = o * shape_batch[d] + (shape_batch[d] == 1 ? 0 : coord);
            }
            return o;
        };
        const int64_t i = c[rank], j = c[rank + 1];
        const int64_t amat = matrix_index(ab), bmat = matrix_index(bb);
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
            const double x = ta ? av[static_cast<size_t>(amat * m * k + kk * m + i)] : av[static_cast<size_t>(amat * m * k + i * k + kk)];
            const double y = tb ? bv[static_cast<size_t>(bmat * k * n + j * k + kk)] : bv[static_cast<size_t>(bmat * k * n + kk * n + j)];
            s += x * y;
        }
        out.push_back(s);
    });
    return out;
}

struct MatmulCase {
    std::vector<int64_t> a, b;
    bool ta = false, tb = false;
};

class MatmulShapes : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(MatmulShapes, Fp32MatchesLoops) {
    const MatmulCase &p = GetParam();
    std::vector<Expr> as(p.a.begin(), p.a.end()), bs(p.b.begin(), p.b.end());
    Input A(Float(32), as, "A"), B(Float(32), bs, "B");
    const ops::Tensor C = ops::matmul(A, B, {p.ta, p.tb, "C"});
    Buffer<> a = random_buffer(Float(32), p.a, 1), b = random_buffer(Float(32), p.b, 2);
    std::vector<int64_t> shape;
    const auto expected = matmul_loops(a, b, p.ta, p.tb, shape);
    const Buffer<> out = C.realize({{A, a}, {B, b}});
    EXPECT_EQ(out.type(), Float(32));
    expect_matches(out, shape, expected, Float(32), p.ta ? p.a[p.a.size() - 2] : p.a.back());
}

INSTANTIATE_TEST_SUITE_P(Ops, MatmulShapes,
                         ::testing::Values(MatmulCase{{1, 1}, {1, 1}}, MatmulCase{{7, 37}, {37, 5}},
                                           MatmulCase{{37, 7}, {7, 1}}, MatmulCase{{13, 7}, {13, 5}, true, false},
                                           MatmulCase{{7, 13}, {5, 13}, false, true}, MatmulCase{{13, 7}, {5, 13}, true, true},
                                           MatmulCase{{3, 7, 5}, {3, 5, 4}}, MatmulCase{{3, 7, 5}, {5, 4}},
                                           MatmulCase{{7, 5}, {2, 5, 3}}, MatmulCase{{2, 1, 7, 5}, {3, 5, 4}},
                                           MatmulCase{{2, 5, 7}, {2, 4, 5}, true, true}));

TEST(OpsMatmul, Int8AccumulatesExactlyInInt32) {
    // K = 37 products of values in [-8, 8) exceed int8's range many times over: only an int32
    // accumulation gets them right.
    Input A(Int(8), {7, 37}, "A"), B(Int(8), {37, 13}, "B");
    const ops::Tensor C = ops::matmul(A, B);
    EXPECT_EQ(C.type(), Int(32));
    Buffer<> a = random_buffer(Int(8), {7, 37}, 3), b = random_buffer(Int(8), {37, 13}, 4);
    std::vector<int64_t> shape;
    const auto expected = matmul_loops(a, b, false, false, shape);
    const Buffer<> out = C.realize({{A, a}, {B, b}});
    EXPECT_EQ(out.type(), Int(32));
    expect_matches(out, shape, expected, Int(32));
    double biggest = 0;
    for (double v : expected) biggest = std::max(biggest, std::abs(v));
    EXPECT_GT(biggest, 127.0) << "the test must exercise values outside int8";
}

TEST(OpsMatmul, Bf16AccumulatesInFp32) {
    Input A(BFloat(16), {7, 37}, "A"), B(BFloat(16), {37, 5}, "B");
    const ops::Tensor C = ops::matmul(A, B);
    EXPECT_EQ(C.type(), Float(32));
    Buffer<> a = random_buffer(BFloat(16), {7, 37}, 5), b = random_buffer(BFloat(16), {37, 5}, 6);
    std::vector<int64_t> shape;
    // The loops use the bf16 inputs' exact values; only fp32 accumulation error remains.
    const auto expected = matmul_loops(a, b, false, false, shape);
    expect_matches(C.realize({{A, a}, {B, b}}), shape, expected, Float(32), 37);
}

TEST(OpsMatmul, CanonicalFormAndNames) {
    Input A(Int(8), {4, 6}, "A"), B(Int(8), {3, 6, 5}, "B");
    const ops::Tensor C = ops::matmul(A, B, {false, false, "mm"});
    const Func f = C;
    EXPECT_EQ(f.name(), "mm");
    EXPECT_EQ(f.args(), (std::vector<std::string>{"b", "i", "j"}));
    ASSERT_EQ(f.num_updates(), 1);
    const internal::Definition &update = f.contents()->updates[0];
    ASSERT_NE(update.rdom, nullptr);
    ASSERT_EQ(update.rdom->vars.size(), 1u);
    EXPECT_EQ(update.rdom->vars[0].name, "k");
    // mm(b, i, j) = mm(b, i, j) + cast(int32, A(i, k)) * cast(int32, B(b, k, j))
    const auto *add = update.value.as<Add>();
    ASSERT_NE(add, nullptr);
    const auto *self = add->a.as<Call>();
    ASSERT_NE(self, nullptr);
    EXPECT_EQ(self->name, "mm");
    const auto *mul = add->b.as<Mul>();
    ASSERT_NE(mul, nullptr);
    const auto *ca = mul->a.as<Cast>(), *cb = mul->b.as<Cast>();
    ASSERT_TRUE(ca && cb);
    EXPECT_EQ(ca->type, Int(32));
    const auto *la = ca->value.as<Call>(), *lb = cb->value.as<Call>();
    ASSERT_TRUE(la && lb);
    EXPECT_EQ(la->name, "A");
    EXPECT_EQ(lb->name, "B");
    EXPECT_EQ(la->args.size(), 2u);
    EXPECT_EQ(lb->args.size(), 3u);
    // Two-dimensional: Vars "i", "j".
    Input X(Float(32), {2, 3}, "X"), Y(Float(32), {3, 2}, "Y");
    EXPECT_EQ(Func(ops::matmul(X, Y)).args(), (std::vector<std::string>{"i", "j"}));
    EXPECT_EQ(Func(ops::matmul(X, Y)).name(), "matmul");
}

TEST(OpsMatmul, Errors) {
    Input A(Float(32), {7, 5}, "A"), B(Float(32), {6, 3}, "B"), V(Float(32), {5}, "V");
    Input A8(Int(8), {7, 5}, "A8"), B3(Float(32), {2, 5, 3}, "B3"), A3(Float(32), {3, 7, 5}, "A3");
    EXPECT_OPS_ERROR(ops::matmul(A, B), "ops::matmul 'matmul'", "inner dimensions", "K = 5", "K = 6", "'A'", "'B'");
    EXPECT_OPS_ERROR(ops::matmul(A, V, {false, false, "proj"}), "ops::matmul 'proj'", "'V'", "rank >= 2");
    EXPECT_OPS_ERROR(ops::matmul(A8, B3), "ops::matmul", "int8", "fp32");
    EXPECT_OPS_ERROR(ops::matmul(A3, B3), "ops::matmul", "batch", "[3]", "[2]");
    EXPECT_OPS_ERROR(ops::matmul(A, ops::Tensor()), "ops::matmul", "B is undefined");
}

/// Y = alpha · A·B + beta · C with C broadcast from `c_shape` to [M, N].
std::vector<double> gemm_loops(const Buffer<> &a, const Buffer<> &b, const Buffer<> &c, double alpha, double beta) {
    std::vector<int64_t> shape;
    auto y = matmul_loops(a, b, false, false, shape);
    const auto cv = values(c);
    const auto &cs = c.shape();
    for (int64_t i = 0; i < shape[0]; ++i)
        for (int64_t j = 0; j < shape[1]; ++j) {
            int64_t ci;
            if (cs.size() == 1) ci = cs[0] == 1 ? 0 : j;
            else ci = (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j);
            double &v = y[static_cast<size_t>(i * shape[1] + j)];
            v = alpha * v + beta * cv[static_cast<size_t>(ci)];
        }
    return y;
}

TEST(OpsGemm, AlphaBetaAndBroadcastBias) {
    Input A(Float(32), {7, 37}, "A"), B(Float(32), {37, 5}, "B");
    for (const std::vector<int64_t> &cs : std::vector<std::vector<int64_t>>{{5}, {1, 5}, {7, 1}, {7, 5}}) {
        Input Cin(Float(32), std::vector<Expr>(cs.begin(), cs.end()), "C");
        const ops::Tensor Y = ops::gemm(A, B, Cin, {0.5, -2.0, false, false, "y"});
        Buffer<> a = random_buffer(Float(32), {7, 37}, 7), b = random_buffer(Float(32), {37, 5}, 8),
                 c = random_buffer(Float(32), cs, 9);
        expect_matches(Y.realize({{A, a}, {B, b}, {Cin, c}}), {7, 5}, gemm_loops(a, b, c, 0.5, -2.0), Float(32), 37);
    }
}

TEST(OpsGemm, Int8WithBiasAndErrors) {
    Input A(Int(8), {6, 9}, "A"), B(Int(8), {9, 4}, "B"), Bias(Int(32), {4}, "bias");
    const ops::Tensor Y = ops::gemm(A, B, Bias, {1.0, 3.0});
    EXPECT_EQ(Y.type(), Int(32));
    Buffer<> a = random_buffer(Int(8), {6, 9}, 10), b = random_buffer(Int(8), {9, 4}, 11), c = random_buffer(Int(32), {4}, 12);
    expect_matches(Y.realize({{A, a}, {B, b}, {Bias, c}}), {6, 4}, gemm_loops(a, b, c, 1.0, 3.0), Int(32));

    EXPECT_OPS_ERROR(ops::gemm(A, B, Bias, {0.5, 1.0}), "ops::gemm 'gemm'", "alpha and beta must be integers");
    Input Wide(Int(32), {6, 5}, "wide");
    EXPECT_OPS_ERROR(ops::gemm(A, B, Wide), "ops::gemm", "'wide'", "[6, 5]", "[6, 4]");
    Input A3(Int(8), {2, 6, 9}, "A3");
    EXPECT_OPS_ERROR(ops::gemm(A3, B), "ops::gemm", "'A3'", "rank 2");
}

} // namespace
