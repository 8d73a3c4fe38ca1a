#pragma once
// Operators and math functions on Expr, with the DSL's type promotion rules.
//
// PROMOTION RULES. IR nodes require operands of one type (expr.h); the operators here bring
// mixed operands to a common type first. For `a op b` (and select's two values, min, max,
// clamp, pow):
//
//  1. Same type: no change.
//  2. Constants adapt. If exactly one operand is a constant (IntImm, UIntImm or FloatImm — what
//     a C++ literal becomes, e.g. the 1 in `x + 1`), it takes the other operand's type, as in
//     Halide: `x_uint8 + 1` stays uint8, `x_bf16 * 0.5f` stays bf16, `i_int32 * 2.0f` is fp32
//     (rule 4 — an integer operand never absorbs a float constant).
//       - into an integer type: the value must be exactly representable, otherwise it is an
//         error (`x_uint8 + 300`, `x_uint8 * -1`); never silent wrapping.
//       - into a float type: the value is rounded to nearest even, and must lie within the
//         type's finite range, otherwise it is an error (`x_fp16 + 1e6f`).
//       - into bool: only to bool itself (a number next to a bool is rule 3).
//     Two constants follow the rules below like any operands.
//  3. Bool mixes with nothing: arithmetic and ordering on bool, or bool next to a number, is an
//     error; use select() or cast().
//  4. Float and integer: the integer converts to the float type (`i * 0.5f` is fp32). This is
//     the one implicit conversion that may round (large int32 values in fp32), as in C and
//     Halide, so that index arithmetic can feed float math.
//  5. Two float types: the one that represents both — the wider IEEE type (fp16 < fp32 < fp64);
//     bf16 with fp32 or fp64 gives the wider; bf16 with fp16 gives fp32 (neither contains the
//     other: bf16 has the range, fp16 the precision).
//  6. Two integer types: the narrowest type that represents every value of both.
//       - same signedness: the wider (int8 + int32 → int32, uint8 + uint16 → uint16);
//       - signed and unsigned: the narrowest signed type wider than the unsigned one and at
//         least as wide as the signed one (int8 + uint8 → int16, int32 + uint16 → int32,
//         int16 + uint32 → int64);
//       - uint64 with any signed type has no such type: an error; cast() one side.
//
// ASSIGNMENT. A value stored into a Func of type T (an update definition, a boundary value)
// converts implicitly only where the rules above would take it to T: a constant that adapts
// to T, a narrower type of the same kind, or an integer into a float type. Anything that would
// narrow (fp32 into an int8 Func, fp32 into bf16, int32 into int8) is an error: write cast().
//
// Integer / and % round towards negative infinity (Euclidean, as Halide): (-7) / 2 == -4 and
// (-7) % 2 == 1; for b < 0, a % b lies in [0, |b|). Division by zero gives 0.
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/expr.h"
#include "tessera/type.h"

namespace tessera {

/// The common type of rule 4–6 for two non-constant operands of types `a` and `b`; throws
/// tessera::Error (naming `context`, e.g. "operator+") where no implicit common type exists.
Type promote_types(Type a, Type b, const char *context = "operator");

/// Brings `a` and `b` to one type by the rules above (rule 2 included); `context` names the
/// operation for error messages.
void match_types(Expr &a, Expr &b, const char *context);

/// `value` converted for storing into a location of type `target` (the ASSIGNMENT rule);
/// `what` describes the location for the error message, e.g. "update 0 of Func C".
Expr convert_for_assignment(const Expr &value, Type target, const std::string &what);

// Arithmetic. Operands may be Exprs or anything that converts to one (Var, RVar, FuncRef,
// Param, C++ numbers).
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
/// Integer division rounds towards negative infinity; see the header comment.
Expr operator/(Expr a, Expr b);
/// Euclidean remainder for integers (never negative for a positive divisor); fmod-like with
/// floor semantics for floats: a - b * floor(a / b).
Expr operator%(Expr a, Expr b);
/// 0 - a (wraps for unsigned types).
Expr operator-(Expr a);

Expr &operator+=(Expr &a, Expr b);
Expr &operator-=(Expr &a, Expr b);
Expr &operator*=(Expr &a, Expr b);
Expr &operator/=(Expr &a, Expr b);

// Comparisons (result bool). Bool operands may be compared for (in)equality only.
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);

// Logic, on bool operands only (no short-circuit: both sides are expressions).
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

/// Conversion: float → integer truncates towards zero and saturates; integer → narrower
/// integer wraps; to bf16/fp16 rounds to nearest even. Casting to the same type is a no-op.
Expr cast(Type t, Expr e);
template <typename T> Expr cast(Expr e) { return cast(type_of<T>(), std::move(e)); }

/// condition ? true_value : false_value; the values are promoted to a common type.
Expr select(Expr condition, Expr true_value, Expr false_value);
/// select(c0, v0, c1, v1, ..., default): the value of the first true condition, else the default.
template <typename... Rest> Expr select(Expr c0, Expr v0, Expr c1, Expr v1, Rest &&...rest) {
    return select(std::move(c0), std::move(v0), select(std::move(c1), std::move(v1), std::forward<Rest>(rest)...));
}

Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
/// max(min(e, hi), lo); the bounds adapt to e's type like constants do and must not widen it.
Expr clamp(Expr e, Expr lo, Expr hi);

/// |e|, same type as e (so abs of the most negative integer wraps to itself, as in C).
Expr abs(Expr e);

// Float math. An integer argument is first converted to fp32 (as in Halide); bool is an error.
// bf16 and fp16 arguments are computed in fp32 and rounded back to their type.
Expr exp(Expr e);
Expr log(Expr e);
Expr sqrt(Expr e);
/// 1 / sqrt(e).
Expr rsqrt(Expr e);
Expr tanh(Expr e);
Expr erf(Expr e);
/// 1 / (1 + exp(-e)).
Expr sigmoid(Expr e);
Expr floor(Expr e);
Expr ceil(Expr e);
/// Rounds half-way cases to even (as IEEE roundeven and Halide's round).
Expr round(Expr e);
/// a^b; both promoted to a common float type.
Expr pow(Expr a, Expr b);

// Helpers for passes.

/// A constant of type t with this value; throws if t cannot represent it exactly (integers)
/// or it lies outside t's finite range (floats).
Expr make_const(Type t, int64_t value);
Expr make_const(Type t, double value);
inline Expr make_const(Type t, int value) { return make_const(t, int64_t{value}); }
Expr make_zero(Type t);
Expr make_one(Type t);
/// Whether e is an IntImm, UIntImm or FloatImm.
bool is_const(const Expr &e);
/// The value of an integer (or bool) constant, if e is one.
std::optional<int64_t> as_const_int(const Expr &e);
/// The value of a float constant, if e is one.
std::optional<double> as_const_float(const Expr &e);

} // namespace tessera
