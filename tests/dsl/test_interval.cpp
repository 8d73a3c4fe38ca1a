// Interval arithmetic over Exprs: each bound below is worked out by hand from the operation's
// definition (Euclidean division, wrapping casts, type ranges of loaded values).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tessera/func.h"
#include "tessera/interval.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

using namespace tessera;

namespace {

Interval range(int64_t lo, int64_t hi) { return Interval(make_const(Int(32), lo), make_const(Int(32), hi)); }

/// Expects `i` to be the constant interval [lo, hi].
void expect_range(const Interval &i, int64_t lo, int64_t hi) {
    ASSERT_TRUE(i.is_constant()) << i.to_string();
    EXPECT_EQ(i.const_min(), lo) << i.to_string();
    EXPECT_EQ(i.const_max(), hi) << i.to_string();
}

class IntervalTest : public ::testing::Test {
protected:
    Var x{"x"}, y{"y"};
    IntervalScope scope{{"x", range(0, 9)}, {"y", range(-2, 3)}};
};

TEST_F(IntervalTest, AdditionSubtractionAndScaling) {
    expect_range(bounds_of_expr(x + 1, scope), 1, 10);
    expect_range(bounds_of_expr(x * 2 - 3, scope), -3, 15);
    expect_range(bounds_of_expr(-x, scope), -9, 0);
    expect_range(bounds_of_expr(x - y, scope), -3, 11);
    expect_range(bounds_of_expr(x * -3, scope), -27, 0);
}

TEST_F(IntervalTest, ProductOfMixedSignRangesTakesTheExtremeCorners) {
    // x in [0, 9], y in [-2, 3]: the corners are 0, 0, -18, 27.
    expect_range(bounds_of_expr(x * y, scope), -18, 27);
    expect_range(bounds_of_expr(y * y, scope), -6, 9); // interval arithmetic treats the two y's independently
}

TEST_F(IntervalTest, DivisionAndModulusAreEuclidean) {
    // (x - 5) in [-5, 4]; -5 / 2 is -3 when rounding towards negative infinity.
    expect_range(bounds_of_expr((x - 5) / 2, scope), -3, 2);
    expect_range(bounds_of_expr(x / 2, scope), 0, 4);
    // Division by a negative constant reverses the order: 9 / -2 = -4 (9 = -2 * -4 + 1).
    expect_range(bounds_of_expr(x / -2, scope), -4, 0);
    expect_range(bounds_of_expr(x % 4, scope), 0, 3);
    // A dividend already in [0, 16) is its own remainder.
    expect_range(bounds_of_expr((x + 3) % 16, scope), 3, 12);
    expect_range(bounds_of_expr((x - 5) % 4, scope), 0, 3);
    // The divisor may be zero (x / 0 == 0) or negative: |x / y| <= |x|.
    expect_range(bounds_of_expr(x / y, scope), -9, 9);
}

TEST_F(IntervalTest, MinMaxClampAndSelect) {
    expect_range(bounds_of_expr(min(x, 5), scope), 0, 5);
    expect_range(bounds_of_expr(max(x, 5), scope), 5, 9);
    expect_range(bounds_of_expr(clamp(x * 3 - 4, 0, 20), scope), 0, 20);
    expect_range(bounds_of_expr(select(x < 5, x, 100), scope), 0, 100);
    // x < 20 always holds on [0, 9], so only the true arm counts.
    expect_range(bounds_of_expr(select(x < 20, x, 100), scope), 0, 9);
    expect_range(bounds_of_expr(select(x > 9, x, y), scope), -2, 3);
}

TEST_F(IntervalTest, ComparisonsAreDecidedWhenRangesDoNotOverlap) {
    expect_range(bounds_of_expr(x < 10, scope), 1, 1);
    expect_range(bounds_of_expr(x >= 10, scope), 0, 0);
    expect_range(bounds_of_expr(x < 5, scope), 0, 1);
    expect_range(bounds_of_expr(x < 10 && y > -3, scope), 1, 1);
    expect_range(bounds_of_expr(!(x < 10) || y < 5, scope), 1, 1);
}

TEST_F(IntervalTest, CastsAreMonotoneUnlessTheyMayWrap) {
    expect_range(bounds_of_expr(cast(Int(16), x), scope), 0, 9);
    // 0..300 does not fit in uint8: the value wraps, so only the type's range is known.
    expect_range(bounds_of_expr(cast(UInt(8), x * 30 + 30), scope), 0, 255);
    // Float → int truncates towards zero: [-1.5, 2.7] → [-1, 2].
    Expr f = cast(Float(32), x) * 0.42f - 1.5f; // x in [0, 9] → [-1.5, 2.28]
    expect_range(bounds_of_expr(cast(Int(32), f), scope), -1, 2);
    // An int32 that might not fit into an int8 gives the int8 range.
    expect_range(bounds_of_expr(cast(Int(8), x * 100), scope), -128, 127);
}

TEST_F(IntervalTest, LetBoundVariablesAreBoundedByTheirValues) {
    Expr t = Variable::make(Int(32), "t", VariableKind::Let);
    expect_range(bounds_of_expr(Let::make("t", x * 2, t + 1), scope), 1, 19);
    // A Let shadows an outer variable of the same name only inside its body.
    Expr shadow = Let::make("x", y * 10, Expr(x) + 1);
    expect_range(bounds_of_expr(shadow + x, scope), -19, 40);
}

TEST_F(IntervalTest, LoadedValuesAreBoundedOnlyByNarrowTypes) {
    Input image(UInt(8), {16}, "image"), wide(Int(32), {16}, "wide"), real(Float(32), {16}, "real");
    expect_range(bounds_of_expr(cast(Int(32), image(x)), scope), 0, 255);
    expect_range(bounds_of_expr(image(x) / 16, scope), 0, 15);
    Interval i = bounds_of_expr(wide(x) + 1, scope);
    EXPECT_FALSE(i.has_lower_bound());
    EXPECT_FALSE(i.has_upper_bound());
    // min() with a bounded value still bounds one side.
    Interval capped = bounds_of_expr(min(wide(x), 7), scope);
    EXPECT_FALSE(capped.has_lower_bound());
    ASSERT_TRUE(capped.has_upper_bound());
    EXPECT_EQ(*as_const_int(capped.max), 7);
    expect_range(bounds_of_expr(clamp(wide(x), 0, 63), scope), 0, 63);
    EXPECT_TRUE(bounds_of_expr(real(x), scope).is_everything());
}

TEST_F(IntervalTest, OverflowingConstantArithmeticIsUnbounded) {
    IntervalScope big{{"x", range(0, std::numeric_limits<int32_t>::max())}};
    EXPECT_FALSE(bounds_of_expr(x + 1, big).is_bounded());
    expect_range(bounds_of_expr(x / 2, big), 0, std::numeric_limits<int32_t>::max() / 2);
}

TEST_F(IntervalTest, FreeVariablesStaySymbolicAndSubstituteLater) {
    // Bounds in terms of a Param N that is not known yet ...
    Param<int> n("N");
    IntervalScope symbolic{{"x", Interval(make_const(Int(32), 0), Expr(n) - 1)}};
    Interval i = bounds_of_expr(x * 2 + 1, symbolic);
    ASSERT_TRUE(i.is_bounded());
    EXPECT_EQ(*as_const_int(i.min), 1);
    EXPECT_NE(to_string(i.max).find("N"), std::string::npos) << to_string(i.max);
    // ... evaluate to the right constant once N is: 2 * (10 - 1) + 1.
    expect_range(bounds_of_expr(i.max, {{"N", range(10, 10)}}), 19, 19);
    // A variable missing from the scope stands for itself.
    Interval free = bounds_of_expr(y + 0, {});
    EXPECT_TRUE(free.is_single_point());
    EXPECT_EQ(to_string(free.min), "y");
}

TEST_F(IntervalTest, FloatIntrinsicsAreMonotone) {
    Expr xf = cast(Float(32), x);
    Interval e = bounds_of_expr(exp(xf - 9.0f), scope); // exp over [-9, 0]
    ASSERT_TRUE(e.is_bounded());
    EXPECT_NEAR(*as_const_float(e.min), std::exp(-9.0), 1e-7);
    EXPECT_NEAR(*as_const_float(e.max), 1.0, 0);
    Interval t = bounds_of_expr(tanh(cast(Float(32), Input(Float(32), {4}, "in")(x))), scope);
    EXPECT_EQ(*as_const_float(t.min), -1.0);
    EXPECT_EQ(*as_const_float(t.max), 1.0);
    Interval s = bounds_of_expr(sqrt(xf), scope);
    EXPECT_EQ(*as_const_float(s.max), 3.0);
}

TEST_F(IntervalTest, ConditionsNarrowAVariable) {
    Var r("r");
    IntervalScope s{{"r", range(0, 19)}, {"x", range(0, 9)}};
    expect_range(narrow_by_condition("r", range(0, 19), r < 10, s), 0, 9);
    expect_range(narrow_by_condition("r", range(0, 19), r >= 3 && 15 >= r, s), 3, 15);
    expect_range(narrow_by_condition("r", range(0, 19), r <= x, s), 0, 9); // x is at most 9
    expect_range(narrow_by_condition("r", range(0, 19), x + 12 < r, s), 13, 19);
    expect_range(narrow_by_condition("r", range(0, 19), r == 4, s), 4, 4);
    // A condition that never holds leaves an empty interval.
    Interval never = narrow_by_condition("r", range(0, 19), r > 30, s);
    ASSERT_TRUE(never.is_constant());
    EXPECT_GT(never.const_min(), never.const_max());
    // A disjunction, or a condition on another variable, says nothing about r.
    expect_range(narrow_by_condition("r", range(0, 19), r < 3 || r > 15, s), 0, 19);
    expect_range(narrow_by_condition("r", range(0, 19), x < 3, s), 0, 19);
}

TEST_F(IntervalTest, UnionAndIntersection) {
    expect_range(interval_union(range(0, 3), range(5, 9)), 0, 9);
    expect_range(interval_intersection(range(0, 7), range(5, 9)), 5, 7);
    Interval half(make_const(Int(32), 2), Expr());
    EXPECT_FALSE(interval_union(half, range(0, 3)).has_upper_bound());
    expect_range(interval_intersection(half, range(0, 3)), 2, 3);
    EXPECT_EQ(range(0, 3).to_string(), "[0, 3]");
    EXPECT_EQ(half.to_string(), "[2, +inf)");
}

TEST_F(IntervalTest, CallRegionsListEveryCallWithItsBox) {
    Input a(Float(32), {8, 4}, "A");
    Func f("f");
    f(x, y) = cast(Float(32), x + y);
    Expr e = f(x + 1, y) + a(x, clamp(y, 0, 3)) + f(x - 1, y * 2);
    std::vector<CallRegion> calls = call_regions(e, scope);
    ASSERT_EQ(calls.size(), 3u);
    EXPECT_EQ(calls[0].name, "f");
    EXPECT_EQ(calls[0].call_type, CallType::Func);
    expect_range(calls[0].box[0], 1, 10);
    expect_range(calls[0].box[1], -2, 3);
    EXPECT_EQ(calls[1].name, "A");
    EXPECT_EQ(calls[1].call_type, CallType::Input);
    expect_range(calls[1].box[1], 0, 3);

    std::map<std::string, Box> boxes = boxes_required(e, scope);
    ASSERT_EQ(boxes.size(), 2u);
    expect_range(boxes["f"][0], -1, 10);
    expect_range(boxes["f"][1], -4, 6);
    EXPECT_EQ(box_to_string(boxes["A"]), "{[0, 9], [0, 3]}");
    EXPECT_TRUE(box_is_bounded(boxes["f"]));
}

TEST_F(IntervalTest, CallsNestedInArgumentsAreFound) {
    Input image(UInt(8), {16}, "image");
    Func hist("hist");
    hist(x) = 0;
    std::vector<CallRegion> calls = call_regions(hist(cast(Int(32), image(x))), scope);
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0].name, "image"); // the inner call comes first
    expect_range(calls[1].box[0], 0, 255);
}

} // namespace
