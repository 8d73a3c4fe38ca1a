// transpose/permute, reshape/flatten and concat move elements exactly: checked element by
// element against index arithmetic in the test, on int32 data (exact) and bf16; errors.
#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

TEST(OpsShape, TransposeAndPermute) {
    Input X(Int(32), {2, 7, 5}, "X");
    Buffer<> x = random_buffer(Int(32), {2, 7, 5}, 1);
    const auto xv = values(x);
    std::vector<double> t;
    for (int b = 0; b < 2; ++b)
        for (int j = 0; j < 5; ++j)
            for (int i = 0; i < 7; ++i) t.push_back(xv[static_cast<size_t>((b * 7 + i) * 5 + j)]);
    expect_matches(ops::transpose(X).realize({{X, x}}), {2, 5, 7}, t, Int(32));

    // result dimension d is input dimension perm[d]: [5, 2, 7] for perm {2, 0, 1} (and -1 for 2)
    std::vector<double> p;
    for (int j = 0; j < 5; ++j)
        for (int b = 0; b < 2; ++b)
            for (int i = 0; i < 7; ++i) p.push_back(xv[static_cast<size_t>((b * 7 + i) * 5 + j)]);
    expect_matches(ops::permute(X, {-1, 0, 1}).realize({{X, x}}), {5, 2, 7}, p, Int(32));
    expect_matches(ops::permute(X, {0, 1, 2}).realize({{X, x}}), {2, 7, 5}, xv, Int(32));
}

TEST(OpsShape, ReshapeAndFlattenKeepRowMajorOrder) {
    Input X(BFloat(16), {3, 1, 14}, "X");
    Buffer<> x = random_buffer(BFloat(16), {3, 1, 14}, 2);
    const auto xv = values(x); // row-major order is the order reshape keeps
    expect_matches(ops::reshape(X, {6, 7}).realize({{X, x}}), {6, 7}, xv, BFloat(16));
    expect_matches(ops::reshape(X, {2, -1, 3}).realize({{X, x}}), {2, 7, 3}, xv, BFloat(16));
    expect_matches(ops::reshape(X, {42}).realize({{X, x}}), {42}, xv, BFloat(16));
    expect_matches(ops::reshape(X, {1, 42, 1}).realize({{X, x}}), {1, 42, 1}, xv, BFloat(16));
    expect_matches(ops::flatten(X).realize({{X, x}}), {3, 14}, xv, BFloat(16));
    expect_matches(ops::flatten(X, 0).realize({{X, x}}), {1, 42}, xv, BFloat(16));
    expect_matches(ops::flatten(X, -1).realize({{X, x}}), {3, 14}, xv, BFloat(16));
    expect_matches(ops::flatten(X, 3).realize({{X, x}}), {42, 1}, xv, BFloat(16));
    // A reshape of a reshape.
    expect_matches(ops::reshape(ops::reshape(X, {7, 6}, "r1"), {3, 14}, "r2").realize({{X, x}}), {3, 14}, xv, BFloat(16));
}

TEST(OpsShape, ConcatAlongEachAxis) {
    Input A(Int(32), {2, 3, 4}, "A"), B(Int(32), {2, 3, 1}, "B"), C(Int(32), {2, 3, 5}, "C");
    Buffer<> a = random_buffer(Int(32), {2, 3, 4}, 3), b = random_buffer(Int(32), {2, 3, 1}, 4), c = random_buffer(Int(32), {2, 3, 5}, 5);
    const auto av = values(a), bv = values(b), cv = values(c);
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) {
            for (int k = 0; k < 4; ++k) expected.push_back(av[static_cast<size_t>((i * 3 + j) * 4 + k)]);
            expected.push_back(bv[static_cast<size_t>(i * 3 + j)]);
            for (int k = 0; k < 5; ++k) expected.push_back(cv[static_cast<size_t>((i * 3 + j) * 5 + k)]);
        }
    expect_matches(ops::concat({A, B, C}, -1).realize({{A, a}, {B, b}, {C, c}}), {2, 3, 10}, expected, Int(32));

    // Along the outermost axis the result is the operands one after the other.
    Input D(Int(32), {1, 3, 4}, "D");
    Buffer<> d = random_buffer(Int(32), {1, 3, 4}, 6);
    std::vector<double> outer = av;
    for (double v : values(d)) outer.push_back(v);
    expect_matches(ops::concat({A, D}, 0).realize({{A, a}, {D, d}}), {3, 3, 4}, outer, Int(32));
    // A single operand is a copy.
    expect_matches(ops::concat({A}, 1).realize({{A, a}}), {2, 3, 4}, av, Int(32));
}

TEST(OpsShape, Errors) {
    Input X(Float(32), {3, 4}, "X"), Y(Float(32), {3, 5}, "Y"), Z(Int(32), {3, 4}, "Z"), V(Float(32), {4}, "V");
    Param<int> n("n");
    Input S(Float(32), {n, 4}, "S");
    EXPECT_OPS_ERROR(ops::reshape(X, {5, 3}), "ops::reshape 'reshape'", "12 elements", "[5, 3]", "15");
    EXPECT_OPS_ERROR(ops::reshape(X, {-1, -1}), "ops::reshape", "more than one -1");
    EXPECT_OPS_ERROR(ops::reshape(X, {5, -1}), "ops::reshape", "cannot infer");
    EXPECT_OPS_ERROR(ops::reshape(S, {4, -1}), "ops::reshape", "symbolic shape", "[n, 4]");
    EXPECT_OPS_ERROR(ops::permute(X, {0, 0}), "ops::permute 'permute'", "appears twice");
    EXPECT_OPS_ERROR(ops::permute(X, {0}), "ops::permute", "rank 2");
    EXPECT_OPS_ERROR(ops::permute(X, {0, 2}), "ops::permute", "axis 2 is out of range");
    EXPECT_OPS_ERROR(ops::transpose(V), "ops::transpose", "rank >= 2");
    EXPECT_OPS_ERROR(ops::concat({X, Y}, 0), "ops::concat 'concat'", "operand 1 'Y'", "dimension 1");
    EXPECT_OPS_ERROR(ops::concat({X, Z}, 0), "ops::concat", "operand 1 'Z'", "int32");
    EXPECT_OPS_ERROR(ops::concat({X, V}, 0), "ops::concat", "rank 1");
    EXPECT_OPS_ERROR(ops::concat({}, 0), "ops::concat", "no operands");
    EXPECT_OPS_ERROR(ops::flatten(X, 3), "ops::flatten", "axis 3 is out of range");
}

TEST(OpsShape, SymbolicShapesRealizeWithParams) {
    // A transpose of an Input whose shape is a Param: the Tensor's shape stays symbolic and
    // realize() evaluates it from the bindings.
    Param<int> n("n");
    Input X(Int(32), {n, 3}, "X");
    const ops::Tensor t = ops::transpose(X);
    EXPECT_EQ(ops::shape_string(t.shape()), "[3, n]");
    Buffer<> x = random_buffer(Int(32), {5, 3}, 9);
    const auto xv = values(x);
    std::vector<double> expected;
    for (int j = 0; j < 3; ++j)
        for (int i = 0; i < 5; ++i) expected.push_back(xv[static_cast<size_t>(i * 3 + j)]);
    expect_matches(t.realize({{X, x}, {n, 5}}), {3, 5}, expected, Int(32));
    EXPECT_OPS_ERROR(t.concrete_shape(), "dimension 1", "bind the Params");
}

} // namespace
