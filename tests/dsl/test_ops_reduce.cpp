// reduce_sum / reduce_mean / reduce_max / reduce_min over every subset of axes, with and
// without keepdims, against loops; int8 sums in int32; bf16 means; errors.
#include <limits>

#include "ops_test_util.h"

namespace {

using namespace tessera;
using namespace ops_test;

enum class Red { Sum, Mean, Max, Min };

/// The reduction by definition: every input element folded into the output element whose
/// coordinates are its own with the reduced axes dropped (or set to 0 with keepdims).
std::vector<double> reduce_loops(Red kind, const Buffer<> &x, const std::vector<bool> &reduced, bool keepdims,
                                 std::vector<int64_t> &out_shape) {
    const auto &s = x.shape();
    out_shape.clear();
    for (size_t d = 0; d < s.size(); ++d)
        if (!reduced[d]) out_shape.push_back(s[d]);
        else if (keepdims) out_shape.push_back(1);
    if (out_shape.empty()) out_shape.push_back(1);
    const double init = kind == Red::Max ? -std::numeric_limits<double>::infinity()
                        : kind == Red::Min ? std::numeric_limits<double>::infinity() : 0.0;
    std::vector<double> out(static_cast<size_t>(count(out_shape)), init);
    std::vector<int64_t> n(out.size(), 0);
    const auto xv = values(x);
    size_t i = 0;
    for_each_index(s, [&](const std::vector<int64_t> &c) {
        std::vector<int64_t> oc;
        for (size_t d = 0; d < s.size(); ++d)
            if (!reduced[d]) oc.push_back(c[d]);
            else if (keepdims) oc.push_back(0);
        if (oc.empty()) oc.push_back(0);
        const size_t o = static_cast<size_t>(offset(out_shape, oc));
        const double v = xv[i++];
        if (kind == Red::Max) out[o] = std::max(out[o], v);
        else if (kind == Red::Min) out[o] = std::min(out[o], v);
        else out[o] += v;
        ++n[o];
    });
    if (kind == Red::Mean)
        for (size_t k = 0; k < out.size(); ++k) out[k] /= static_cast<double>(n[k]);
    return out;
}

ops::Tensor apply(Red kind, const ops::Tensor &x, const std::vector<int> &axes, bool keepdims) {
    switch (kind) {
    case Red::Sum: return ops::reduce_sum(x, axes, keepdims);
    case Red::Mean: return ops::reduce_mean(x, axes, keepdims);
    case Red::Max: return ops::reduce_max(x, axes, keepdims);
    default: return ops::reduce_min(x, axes, keepdims);
    }
}

TEST(OpsReduce, EveryAxisSubsetFp32) {
    const std::vector<int64_t> shape{3, 7, 5};
    Input X(Float(32), {3, 7, 5}, "X");
    Buffer<> x = random_buffer(Float(32), shape, 1);
    // Axis lists as a user would write them, including negative axes and the empty "all" list.
    const std::vector<std::vector<int>> subsets = {{0}, {1}, {-1}, {0, 2}, {2, 0}, {1, 2}, {0, 1, 2}, {}};
    for (Red kind : {Red::Sum, Red::Mean, Red::Max, Red::Min})
        for (const auto &axes : subsets)
            for (bool keepdims : {false, true}) {
                std::vector<bool> reduced(3, axes.empty());
                for (int a : axes) reduced[static_cast<size_t>(a < 0 ? a + 3 : a)] = true;
                std::vector<int64_t> out_shape;
                const auto expected = reduce_loops(kind, x, reduced, keepdims, out_shape);
                const ops::Tensor t = apply(kind, X, axes, keepdims);
                SCOPED_TRACE(t.name() + (keepdims ? " keepdims" : ""));
                expect_matches(t.realize({{X, x}}), out_shape, expected, Float(32), 105);
            }
}

TEST(OpsReduce, Int8SumIsInt32AndExact) {
    Input X(Int(8), {37, 7}, "X");
    Buffer<> x = random_buffer(Int(8), {37, 7}, 2);
    const ops::Tensor s = ops::reduce_sum(X, {0});
    EXPECT_EQ(s.type(), Int(32));
    std::vector<int64_t> out_shape;
    expect_matches(s.realize({{X, x}}), {7}, reduce_loops(Red::Sum, x, {true, false}, false, out_shape), Int(32));
    const ops::Tensor m = ops::reduce_max(X, {1}, true);
    EXPECT_EQ(m.type(), Int(8));
    expect_matches(m.realize({{X, x}}), {37, 1}, reduce_loops(Red::Max, x, {false, true}, true, out_shape), Int(8));
}

TEST(OpsReduce, Int64MinAndMaxStartFromTheTypesExtremesExactly) {
    // The identities are INT64_MAX and INT64_MIN themselves: a row holding only those values
    // reduces to them (max_value() is 2^63 as a double, which no int64 conversion may take).
    Input X(Int(64), {2, 3}, "X");
    Buffer<int64_t> x({2, 3});
    for (int64_t j = 0; j < 3; ++j) {
        x(0, j) = std::numeric_limits<int64_t>::max();
        x(1, j) = std::numeric_limits<int64_t>::min();
    }
    const Buffer<> lo = ops::reduce_min(X, {1}).realize({{X, x}}), hi = ops::reduce_max(X, {1}).realize({{X, x}});
    EXPECT_EQ(static_cast<const int64_t *>(lo.data())[0], std::numeric_limits<int64_t>::max());
    EXPECT_EQ(static_cast<const int64_t *>(lo.data())[1], std::numeric_limits<int64_t>::min());
    EXPECT_EQ(static_cast<const int64_t *>(hi.data())[0], std::numeric_limits<int64_t>::max());
    EXPECT_EQ(static_cast<const int64_t *>(hi.data())[1], std::numeric_limits<int64_t>::min());
}

TEST(OpsReduce, Bf16MeanAccumulatesInFp32) {
    Input X(BFloat(16), {5, 37}, "X");
    Buffer<> x = random_buffer(BFloat(16), {5, 37}, 3);
    const ops::Tensor m = ops::reduce_mean(X, {-1});
    EXPECT_EQ(m.type(), BFloat(16));
    std::vector<int64_t> out_shape;
    expect_matches(m.realize({{X, x}}), {5}, reduce_loops(Red::Mean, x, {false, true}, false, out_shape), BFloat(16));
}

TEST(OpsReduce, Errors) {
    Input X(Float(32), {3, 4}, "X"), I(Int(8), {3, 4}, "I"), B(Bool(), {3}, "B");
    EXPECT_OPS_ERROR(ops::reduce_sum(X, {2}), "ops::reduce_sum 'reduce_sum'", "axis 2 is out of range", "rank 2");
    EXPECT_OPS_ERROR(ops::reduce_max(X, {1, -1}, false, "m"), "ops::reduce_max 'm'", "listed twice");
    EXPECT_OPS_ERROR(ops::reduce_mean(I, {0}), "ops::reduce_mean", "floating-point");
    EXPECT_OPS_ERROR(ops::reduce_sum(B, {0}), "ops::reduce_sum", "bool");
}

} // namespace
