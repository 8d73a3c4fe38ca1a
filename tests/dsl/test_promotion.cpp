// The promotion rules of ir_operator.h, rule by rule: each case states the operand types and
// the common type the rules (written in the header) prescribe, or that there is none.
#include <optional>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tessera/error.h"
#include "tessera/half.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

using namespace tessera;
using ::testing::HasSubstr;

namespace {

/// A non-constant operand of type t.
Expr var(Type t, const std::string &name = "v") { return Variable::make(t, name, VariableKind::Param); }

/// The message of the tessera::Error that `f` throws (fails the test if it does not throw one).
template <typename F> std::string error_of(F &&f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    } catch (const std::exception &e) {
        ADD_FAILURE() << "threw a non-tessera exception: " << e.what();
        return "";
    }
    ADD_FAILURE() << "did not throw";
    return "";
}

struct PromotionCase {
    Type a, b;
    std::optional<Type> result; ///< nullopt: no common type (an error)
};

} // namespace

TEST(Promotion, NonConstantOperandsFollowTheTable) {
    const PromotionCase cases[] = {
        // Rule 1: same type.
        {Int(8), Int(8), Int(8)},
        {BFloat(16), BFloat(16), BFloat(16)},
        // Rule 6: integers — the narrowest type holding both.
        {Int(8), Int(32), Int(32)},
        {UInt(8), UInt(16), UInt(16)},
        {Int(8), UInt(8), Int(16)},
        {Int(32), UInt(16), Int(32)},
        {Int(16), UInt(32), Int(64)},
        {Int(64), UInt(32), Int(64)},
        {UInt(64), UInt(8), UInt(64)},
        {UInt(64), Int(8), std::nullopt},
        // Rule 4: float with integer — the float type.
        {Float(32), Int(32), Float(32)},
        {Int(64), Float(16), Float(16)},
        {UInt(8), BFloat(16), BFloat(16)},
        // Rule 5: floats.
        {Float(16), Float(32), Float(32)},
        {Float(32), Float(64), Float(64)},
        {BFloat(16), Float(16), Float(32)},
        {BFloat(16), Float(32), Float(32)},
        {Float(64), BFloat(16), Float(64)},
        // Rule 3: bool mixes with nothing.
        {Bool(), Int(32), std::nullopt},
        {Float(32), Bool(), std::nullopt},
    };
    for (const PromotionCase &c : cases) {
        SCOPED_TRACE(c.a.to_string() + " + " + c.b.to_string());
        if (c.result) {
            EXPECT_EQ(promote_types(c.a, c.b), *c.result);
            EXPECT_EQ(promote_types(c.b, c.a), *c.result); // symmetric
            const Expr sum = var(c.a, "a") + var(c.b, "b");
            EXPECT_EQ(sum.type(), *c.result);
            // The operand that changed type is wrapped in a Cast; the other is untouched.
            const Add *add = sum.as<Add>();
            ASSERT_NE(add, nullptr);
            EXPECT_EQ(add->a.as<Cast>() != nullptr, c.a != *c.result);
            EXPECT_EQ(add->b.as<Cast>() != nullptr, c.b != *c.result);
        } else {
            EXPECT_THROW(promote_types(c.a, c.b), Error);
            EXPECT_THAT(error_of([&] { var(c.a, "a") + var(c.b, "b"); }), HasSubstr("operator+"));
        }
    }
}

TEST(Promotion, IntegerConstantsAdaptToTheOtherOperand) {
    const Expr u8 = var(UInt(8), "p");
    const Expr sum = u8 + 1;
    EXPECT_EQ(sum.type(), UInt(8));
    ASSERT_NE(sum.as<Add>()->b.as<UIntImm>(), nullptr);
    EXPECT_EQ(sum.as<Add>()->b.as<UIntImm>()->value, 1u);
    EXPECT_EQ((1 + u8).type(), UInt(8)); // either side
    EXPECT_EQ((u8 - 1).type(), UInt(8));
    EXPECT_EQ((var(Int(8)) + 127).type(), Int(8));
    EXPECT_EQ((var(Int(8)) + -128).type(), Int(8));
    EXPECT_EQ((var(Int(32)) + Expr(int64_t{5})).type(), Int(32)); // an int64 constant that fits
    EXPECT_EQ((var(UInt(64)) + Expr(uint64_t{1} << 63)).type(), UInt(64));
    // An integer constant next to a float takes the float type (rounded, but within range).
    EXPECT_EQ((var(BFloat(16)) + 2).type(), BFloat(16));
    const Expr big = var(Float(32)) + 16777217;
    EXPECT_EQ(big.type(), Float(32));
    EXPECT_EQ(big.as<Add>()->b.as<FloatImm>()->value, 16777216.0);
}

TEST(Promotion, ConstantsThatDoNotFitAreErrors) {
    const Expr u8 = var(UInt(8), "pixel");
    std::string msg = error_of([&] { u8 + 300; });
    EXPECT_THAT(msg, HasSubstr("300"));
    EXPECT_THAT(msg, HasSubstr("uint8"));
    EXPECT_THAT(msg, HasSubstr("pixel"));
    EXPECT_THAT(error_of([&] { u8 * -1; }), HasSubstr("negative"));
    EXPECT_THAT(error_of([&] { var(Int(8)) + 128; }), HasSubstr("int8"));
    EXPECT_THAT(error_of([&] { var(Float(16)) + 1e6f; }), HasSubstr("fp16"));
    EXPECT_THAT(error_of([&] { var(UInt(8)) < 256; }), HasSubstr("256"));
    EXPECT_THAT(error_of([&] { var(Int(32)) + Expr(uint64_t{1} << 63); }), HasSubstr("int32"));
}

TEST(Promotion, FloatConstantsRoundIntoFloatTypesButNeverAbsorbIntegers) {
    const Expr h = var(BFloat(16), "h");
    const Expr scaled = h * 0.1f;
    EXPECT_EQ(scaled.type(), BFloat(16));
    EXPECT_EQ(scaled.as<Mul>()->b.as<FloatImm>()->value, bfloat16(0.1f).to_float());
    EXPECT_EQ((var(Float(16)) + 65504.0).type(), Float(16));
    // An integer operand never absorbs a float constant: it converts to the constant's type.
    const Expr i = var(Int(32), "i");
    EXPECT_EQ((i * 0.5f).type(), Float(32));
    EXPECT_NE((i * 0.5f).as<Mul>()->a.as<Cast>(), nullptr);
    EXPECT_EQ((i * 0.5).type(), Float(64));
    // Two constants promote like any operands.
    EXPECT_EQ((Expr(1) + Expr(2.5f)).type(), Float(32));
    EXPECT_EQ((Expr(1) + Expr(int64_t{2})).type(), Int(64));
}

TEST(Promotion, BoolTakesPartOnlyInLogicAndEquality) {
    const Expr b = var(Bool(), "flag"), x = var(Int(32), "x");
    EXPECT_EQ((b == true).type(), Bool());
    EXPECT_EQ((b != (x < 3)).type(), Bool());
    EXPECT_EQ((b && x > 0).type(), Bool());
    EXPECT_EQ((!b).type(), Bool());
    EXPECT_THAT(error_of([&] { b + b; }), HasSubstr("bool"));
    EXPECT_THAT(error_of([&] { b < true; }), HasSubstr("bool"));
    EXPECT_THAT(error_of([&] { b == 1; }), HasSubstr("bool"));
    EXPECT_THAT(error_of([&] { x && b; }), HasSubstr("x"));
    EXPECT_THAT(error_of([&] { !x; }), HasSubstr("bool operands"));
    EXPECT_THAT(error_of([&] { -b; }), HasSubstr("flag"));
}

TEST(Promotion, SelectMinMaxClampPromoteTheirValues) {
    const Expr c = var(Int(32), "x") < 4;
    const Expr u8 = var(UInt(8), "u");
    EXPECT_EQ(select(c, u8, 0).type(), UInt(8));
    EXPECT_EQ(select(c, 1, 2.5f).type(), Float(32));
    EXPECT_EQ(select(c, var(Int(8)), var(Int(16))).type(), Int(16));
    EXPECT_EQ(select(c, 1, c, 2, u8).type(), UInt(8)); // multi-case
    EXPECT_THAT(error_of([&] { select(var(Int(32), "x"), 1, 2); }), HasSubstr("must be bool"));
    EXPECT_EQ(min(u8, 0).type(), UInt(8));
    EXPECT_EQ(max(var(BFloat(16)), 0.0f).type(), BFloat(16));
    EXPECT_EQ(clamp(u8, 0, 255).type(), UInt(8));
    EXPECT_EQ(clamp(var(Int(32)), var(Int(8), "lo"), 10).type(), Int(32));
    EXPECT_THAT(error_of([&] { clamp(u8, 0, 256); }), HasSubstr("256"));
    EXPECT_THAT(error_of([&] { clamp(u8, var(Int(32), "lo"), 10); }), HasSubstr("narrowing"));
}

TEST(Promotion, MathFunctionsWantFloats) {
    EXPECT_EQ(exp(var(Int(32))).type(), Float(32));
    EXPECT_EQ(exp(var(BFloat(16))).type(), BFloat(16));
    EXPECT_EQ(sqrt(var(Float(64))).type(), Float(64));
    EXPECT_EQ(pow(var(BFloat(16)), 2).type(), BFloat(16));
    EXPECT_EQ(pow(var(Int(32)), var(Int(32))).type(), Float(32));
    EXPECT_EQ(pow(var(Float(16)), var(Float(32))).type(), Float(32));
    EXPECT_EQ(abs(var(Int(8))).type(), Int(8));
    EXPECT_THAT(error_of([&] { exp(var(Bool(), "flag")); }), HasSubstr("flag"));
    EXPECT_THAT(error_of([&] { abs(var(Bool(), "flag")); }), HasSubstr("bool"));
    EXPECT_EQ((-var(Float(32))).type(), Float(32));
    EXPECT_EQ(cast<uint8_t>(var(Float(32))).type(), UInt(8));
    EXPECT_EQ(cast(Float(32), var(Float(32), "same")).as<Variable>()->name, "same"); // no-op cast
}

TEST(Promotion, AssignmentConvertsOnlyWithoutNarrowing) {
    const std::string where = "update 0 of Func f";
    EXPECT_EQ(convert_for_assignment(var(Int(8)), Int(32), where).type(), Int(32));
    EXPECT_EQ(convert_for_assignment(var(Int(32)), Float(32), where).type(), Float(32));
    EXPECT_EQ(convert_for_assignment(var(BFloat(16)), Float(32), where).type(), Float(32));
    EXPECT_EQ(convert_for_assignment(Expr(0.5f), BFloat(16), where).type(), BFloat(16));
    EXPECT_EQ(convert_for_assignment(Expr(7), UInt(8), where).type(), UInt(8));
    std::string msg = error_of([&] { convert_for_assignment(var(Float(32), "acc"), Int(8), where); });
    EXPECT_THAT(msg, HasSubstr(where));
    EXPECT_THAT(msg, HasSubstr("cast"));
    EXPECT_THAT(msg, HasSubstr("int8"));
    EXPECT_THAT(error_of([&] { convert_for_assignment(var(Float(32)), BFloat(16), where); }), HasSubstr("narrowing"));
    EXPECT_THAT(error_of([&] { convert_for_assignment(var(Int(32)), Int(8), where); }), HasSubstr("narrowing"));
    EXPECT_THAT(error_of([&] { convert_for_assignment(var(Float(16)), BFloat(16), where); }), HasSubstr("narrowing"));
    EXPECT_THAT(error_of([&] { convert_for_assignment(Expr(300), UInt(8), where); }), HasSubstr("300"));
    EXPECT_THAT(error_of([&] { convert_for_assignment(var(Bool()), Int(32), where); }), HasSubstr("narrowing"));
}

TEST(Promotion, ConstantHelpers) {
    EXPECT_EQ(make_const(UInt(8), 200).as<UIntImm>()->value, 200u);
    EXPECT_EQ(make_const(BFloat(16), 0.1).as<FloatImm>()->value, bfloat16(0.1).to_float());
    EXPECT_THROW(make_const(Int(8), 200), Error);
    EXPECT_THROW(make_const(Int(32), 0.5), Error);
    EXPECT_THROW(make_const(Float(16), 1e9), Error);
    EXPECT_EQ(*as_const_int(make_one(Int(16))), 1);
    EXPECT_EQ(*as_const_float(make_zero(Float(64))), 0.0);
    EXPECT_FALSE(as_const_int(var(Int(32))).has_value());
    EXPECT_TRUE(is_const(Expr(true)));
}
