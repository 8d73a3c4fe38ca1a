// ops::Tensor: made from an Input or a Func + shape, its checks, symbolic (Param) shapes carried
// through ops and evaluated at realize time, and the accumulator/compute type rules.
#include <cmath>

#include "ops_test_util.h"
#include "tessera/ir_operator.h"
#include "tessera/reference.h"

namespace {

using namespace tessera;
using namespace ops_test;

TEST(OpsTensor, FromInputAndFromFunc) {
    Input A(Float(32), {3, 4}, "A");
    const ops::Tensor t = A;
    EXPECT_TRUE(t.is_input());
    EXPECT_EQ(t.name(), "A");
    EXPECT_EQ(t.type(), Float(32));
    EXPECT_EQ(t.concrete_shape(), (std::vector<int64_t>{3, 4}));
    EXPECT_EQ(ops::shape_string(t.shape()), "[3, 4]");
    EXPECT_EQ(as_const_int(t.dim(-1)), 4);

    // A user's own Func, given a shape, feeds any op.
    Var i("i"), j("j");
    Func twice("twice");
    twice(i, j) = A(i, j) * 2.0f;
    const ops::Tensor f(twice, {3, 4});
    EXPECT_FALSE(f.is_input());
    const ops::Tensor s = ops::reduce_sum(f, {1});
    Buffer<> a = random_buffer(Float(32), {3, 4}, 1);
    const auto av = values(a);
    std::vector<double> expected(3, 0.0);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) expected[static_cast<size_t>(r)] += 2 * av[static_cast<size_t>(r * 4 + c)];
    // Through evaluate_reference directly, as well as through Tensor::realize.
    expect_matches(evaluate_reference(s.func(), {3}, {{A, a}}), {3}, expected, Float(32), 4);
    expect_matches(s.realize({{A, a}}), {3}, expected, Float(32), 4);

    // An Input-backed tensor's Func copies the Input.
    const Func copy = t.func();
    EXPECT_EQ(copy.name(), "A_value");
    expect_matches(copy.realize({3, 4}, {{A, a}}, Target::reference()), {3, 4}, av, Float(32));
}

TEST(OpsTensor, Errors) {
    Func undefined("undefined");
    EXPECT_OPS_ERROR(ops::Tensor(undefined, {3}), "ops::Tensor", "'undefined'", "no definition");
    Var i("i");
    Func f("f");
    f(i) = i * 2;
    EXPECT_OPS_ERROR(ops::Tensor(f, {3, 4}), "ops::Tensor", "'f'", "1 dimensions", "[3, 4]");
    const ops::Tensor t(f, {3});
    EXPECT_OPS_ERROR(t(1, 2), "ops::Tensor 'f'", "2 coordinates");
    EXPECT_OPS_ERROR(t.dim(1), "ops::Tensor 'f'", "dimension 1 is out of range");
    EXPECT_OPS_ERROR(ops::Tensor().func(), "undefined Tensor");
    EXPECT_OPS_ERROR(t.input(), "'f' is not an Input");
}

TEST(OpsTensor, SymbolicShapesFlowThroughOps) {
    Param<int> m("M"), k("K");
    Input A(Float(32), {m, k}, "A"), B(Float(32), {k, 5}, "B");
    const ops::Tensor c = ops::softmax(ops::matmul(A, B));
    EXPECT_EQ(ops::shape_string(c.shape()), "[M, 5]");
    Buffer<> a = random_buffer(Float(32), {6, 9}, 2), b = random_buffer(Float(32), {9, 5}, 3);
    const auto av = values(a), bv = values(b);
    std::vector<double> expected;
    for (int r = 0; r < 6; ++r) {
        std::vector<double> row(5, 0.0);
        double mx = -1e300, sum = 0;
        for (int col = 0; col < 5; ++col) {
            for (int kk = 0; kk < 9; ++kk) row[static_cast<size_t>(col)] += av[static_cast<size_t>(r * 9 + kk)] * bv[static_cast<size_t>(kk * 5 + col)];
            mx = std::max(mx, row[static_cast<size_t>(col)]);
        }
        for (double v : row) sum += std::exp(v - mx);
        for (double v : row) expected.push_back(std::exp(v - mx) / sum);
    }
    const Bindings bindings{{A, a}, {B, b}, {m, 6}, {k, 9}};
    EXPECT_EQ(c.concrete_shape(bindings), (std::vector<int64_t>{6, 5}));
    expect_matches(c.realize(bindings), {6, 5}, expected, Float(32), 9);
}

TEST(OpsTensor, AccumulatorAndComputeTypes) {
    EXPECT_EQ(ops::accumulator_type(Int(8)), Int(32));
    EXPECT_EQ(ops::accumulator_type(UInt(8)), Int(32));
    EXPECT_EQ(ops::accumulator_type(Int(16)), Int(32));
    EXPECT_EQ(ops::accumulator_type(Int(32)), Int(32));
    EXPECT_EQ(ops::accumulator_type(Int(64)), Int(64));
    EXPECT_EQ(ops::accumulator_type(BFloat(16)), Float(32));
    EXPECT_EQ(ops::accumulator_type(Float(16)), Float(32));
    EXPECT_EQ(ops::accumulator_type(Float(32)), Float(32));
    EXPECT_EQ(ops::accumulator_type(Float(64)), Float(64));
    EXPECT_EQ(ops::compute_type(BFloat(16)), Float(32));
    EXPECT_EQ(ops::compute_type(Float(64)), Float(64));
}

} // namespace
