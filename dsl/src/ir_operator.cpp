// Operators on Expr and the promotion rules documented in ir_operator.h.
#include "tessera/ir_operator.h"

#include <cmath>
#include <limits>

#include "tessera/error.h"
#include "tessera/ir_printer.h"

namespace tessera {

namespace {

void require_defined(const Expr &e, const char *context, const char *which) {
    if (!e.defined())
        throw Error(std::string(context) + ": the " + which +
                    " is an undefined Expr (declared but never given a value)");
}

/// The value of a numeric constant as a double (exact for every float constant).
double constant_as_double(const Expr &c) {
    if (const auto *i = c.as<IntImm>()) return static_cast<double>(i->value);
    if (const auto *u = c.as<UIntImm>()) return static_cast<double>(u->value);
    return c.as<FloatImm>()->value;
}

/// Whether rounding `v` to float type `t` stays finite (or v was not finite to begin with).
bool fits_float_range(Type t, double v) {
    if (!std::isfinite(v)) return true;
    return std::isfinite(constant_as_double(FloatImm::make(t, v)));
}

/// Rule 2: the constant `c` in type `t`, or an undefined Expr where the rule does not apply
/// (then the general rules decide). Throws where it applies but the value does not fit.
Expr adapt_constant(const Expr &c, Type t, const std::string &context, const Expr &other) {
    const Type from = c.type();
    if (from == t) return c;
    if (t.is_bool() || from.is_bool()) return Expr(); // rule 3 decides
    auto does_not_fit = [&](const std::string &why) {
        return Error(context + ": the constant " + to_string(c) + " does not fit " + t.to_string() + ", the type of " +
                     to_string(other) + " (" + why + "); cast " + to_string(other) +
                     " to a wider type, or use a constant that fits");
    };
    if (t.is_integer()) {
        if (from.is_float()) return Expr(); // rule 4: the integer operand converts instead
        if (const auto *u = c.as<UIntImm>(); u && u->value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
            if (t == UInt(64)) return UIntImm::make(t, u->value);
            throw does_not_fit("out of range");
        }
        const int64_t v = c.as<IntImm>() ? c.as<IntImm>()->value : static_cast<int64_t>(c.as<UIntImm>()->value);
        if (!t.can_represent(v)) throw does_not_fit(v < 0 && t.is_uint() ? "negative" : "out of range");
        return t.is_int() ? IntImm::make(t, v) : UIntImm::make(t, static_cast<uint64_t>(v));
    }
    // Into a float type: round, but never overflow to infinity.
    const double v = constant_as_double(c);
    if (!fits_float_range(t, v)) throw does_not_fit("beyond its largest finite value " + float_to_string(t.max_value(), Float(64)));
    return FloatImm::make(t, v);
}

/// How a user writes the type in C++: "Int(32)", "BFloat(16)", "Bool()".
std::string type_constructor(Type t) {
    switch (t.code()) {
    case TypeCode::Int: return "Int(" + std::to_string(t.bits()) + ")";
    case TypeCode::UInt: return "UInt(" + std::to_string(t.bits()) + ")";
    case TypeCode::Float: return "Float(" + std::to_string(t.bits()) + ")";
    case TypeCode::BFloat: return "BFloat(16)";
    case TypeCode::Bool: return "Bool()";
    }
    return t.to_string();
}

[[noreturn]] void throw_no_common_type(const std::string &context, const Expr &a, const Expr &b, const std::string &why) {
    throw Error(context + ": cannot combine " + to_string(a) + " (" + a.type().to_string() + ") with " + to_string(b) +
                " (" + b.type().to_string() + "): " + why);
}

/// Brings a and b to one type; `numeric` rejects bool operands (arithmetic and ordering).
void match(Expr &a, Expr &b, const std::string &context, bool numeric) {
    require_defined(a, context.c_str(), "first operand");
    require_defined(b, context.c_str(), "second operand");
    if (numeric && (a.type().is_bool() || b.type().is_bool())) {
        const Expr &boolean = a.type().is_bool() ? a : b;
        throw Error(context + ": " + to_string(boolean) +
                    " is bool; arithmetic and ordering need numbers (use select(), or cast() the bool)");
    }
    if (a.type() == b.type()) return;
    const bool ca = is_const(a), cb = is_const(b);
    if (ca != cb) {
        Expr adapted = ca ? adapt_constant(a, b.type(), context, b) : adapt_constant(b, a.type(), context, a);
        if (adapted.defined()) {
            (ca ? a : b) = adapted;
            return;
        }
    }
    if (a.type().is_bool() || b.type().is_bool())
        throw_no_common_type(context, a, b, "bool mixes with no other type; compare the number with 0, or cast()");
    Type t;
    try {
        t = promote_types(a.type(), b.type(), context.c_str());
    } catch (const Error &) {
        throw_no_common_type(context, a, b,
                             "no integer type holds every value of both; cast() one operand explicitly");
    }
    if (a.type() != t) a = Cast::make(t, a);
    if (b.type() != t) b = Cast::make(t, b);
}

Expr to_float_argument(Expr e, const char *name) {
    require_defined(e, name, "argument");
    if (e.type().is_bool())
        throw Error(std::string(name) + ": the argument " + to_string(e) + " is bool; " + name + " needs a number");
    if (e.type().is_integer()) return Cast::make(Float(32), e);
    return e;
}

Expr float_intrinsic(Intrinsic op, Expr e) {
    return Call::make_intrinsic(op, {to_float_argument(std::move(e), intrinsic_name(op))});
}

} // namespace

Type promote_types(Type a, Type b, const char *context) {
    if (a == b) return a;
    if (a.is_bool() || b.is_bool())
        throw Error(std::string(context) + ": bool and " + (a.is_bool() ? b : a).to_string() +
                    " have no common type; use select() or cast()");
    if (a.is_float() != b.is_float()) return a.is_float() ? a : b; // rule 4
    if (a.is_float()) {                                           // rule 5
        if (a.is_bfloat() || b.is_bfloat()) {
            const Type other = a.is_bfloat() ? b : a;
            return other.bits() == 16 ? Float(32) : other;
        }
        return a.bits() > b.bits() ? a : b;
    }
    // Rule 6.
    if (a.is_int() == b.is_int()) return a.bits() > b.bits() ? a : b;
    const Type s = a.is_int() ? a : b, u = a.is_int() ? b : a;
    if (u.bits() == 64)
        throw Error(std::string(context) + ": no integer type holds every value of both " + s.to_string() + " and " +
                    u.to_string() + "; cast() one side explicitly");
    return Int(std::max(s.bits(), 2 * u.bits()));
}

void match_types(Expr &a, Expr &b, const char *context) { match(a, b, context, false); }

Expr convert_for_assignment(const Expr &value, Type target, const std::string &what) {
    if (!value.defined()) throw Error(what + ": the value is an undefined Expr (declared but never given a value)");
    if (value.type() == target) return value;
    auto narrowing = [&]() {
        return Error(what + " has type " + target.to_string() + " but the value " + to_string(value) + " has type " +
                     value.type().to_string() + "; implicit narrowing is not allowed: write cast(" +
                     type_constructor(target) + ", ...) explicitly");
    };
    if (is_const(value)) {
        Expr adapted;
        try {
            adapted = adapt_constant(value, target, what, value);
        } catch (const Error &) {
            throw Error(what + " has type " + target.to_string() + " but the constant " + to_string(value) +
                        " does not fit it; use a constant that fits, or cast() explicitly");
        }
        if (adapted.defined()) return adapted;
    }
    if (value.type().is_bool() || target.is_bool()) throw narrowing();
    Type t;
    try {
        t = promote_types(target, value.type());
    } catch (const Error &) {
        throw narrowing();
    }
    if (t != target) throw narrowing();
    return Cast::make(target, value);
}

Expr operator+(Expr a, Expr b) {
    match(a, b, "operator+", true);
    return Add::make(std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
    match(a, b, "operator-", true);
    return Sub::make(std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
    match(a, b, "operator*", true);
    return Mul::make(std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
    match(a, b, "operator/", true);
    return Div::make(std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) {
    match(a, b, "operator%", true);
    return Mod::make(std::move(a), std::move(b));
}

Expr operator-(Expr a) {
    require_defined(a, "unary operator-", "operand");
    if (a.type().is_bool()) throw Error("unary operator-: " + to_string(a) + " is bool; use !" + to_string(a));
    // -0.0 - x is exact negation for floats (0.0 - 0.0 would lose the sign of zero).
    const Expr zero = a.type().is_float() ? FloatImm::make(a.type(), -0.0) : make_zero(a.type());
    return Sub::make(zero, std::move(a));
}

Expr &operator+=(Expr &a, Expr b) { return a = a + std::move(b); }
Expr &operator-=(Expr &a, Expr b) { return a = a - std::move(b); }
Expr &operator*=(Expr &a, Expr b) { return a = a * std::move(b); }
Expr &operator/=(Expr &a, Expr b) { return a = a / std::move(b); }

Expr operator==(Expr a, Expr b) {
    match(a, b, "operator==", false);
    return EQ::make(std::move(a), std::move(b));
}
Expr operator!=(Expr a, Expr b) {
    match(a, b, "operator!=", false);
    return NE::make(std::move(a), std::move(b));
}
Expr operator<(Expr a, Expr b) {
    match(a, b, "operator<", true);
    return LT::make(std::move(a), std::move(b));
}
Expr operator<=(Expr a, Expr b) {
    match(a, b, "operator<=", true);
    return LE::make(std::move(a), std::move(b));
}
Expr operator>(Expr a, Expr b) {
    match(a, b, "operator>", true);
    return GT::make(std::move(a), std::move(b));
}
Expr operator>=(Expr a, Expr b) {
    match(a, b, "operator>=", true);
    return GE::make(std::move(a), std::move(b));
}

namespace {
void require_bool_operand(const Expr &e, const char *context) {
    require_defined(e, context, "operand");
    if (!e.type().is_bool())
        throw Error(std::string(context) + ": " + to_string(e) + " has type " + e.type().to_string() +
                    "; logical operators need bool operands (compare first, e.g. " + to_string(e) + " != 0)");
}
} // namespace

Expr operator&&(Expr a, Expr b) {
    require_bool_operand(a, "operator&&");
    require_bool_operand(b, "operator&&");
    return And::make(std::move(a), std::move(b));
}
Expr operator||(Expr a, Expr b) {
    require_bool_operand(a, "operator||");
    require_bool_operand(b, "operator||");
    return Or::make(std::move(a), std::move(b));
}
Expr operator!(Expr a) {
    require_bool_operand(a, "operator!");
    return Not::make(std::move(a));
}

Expr cast(Type t, Expr e) {
    require_defined(e, "cast", "value");
    if (e.type() == t) return e;
    return Cast::make(t, std::move(e));
}

Expr select(Expr condition, Expr true_value, Expr false_value) {
    require_defined(condition, "select", "condition");
    if (!condition.type().is_bool())
        throw Error("select: the condition " + to_string(condition) + " has type " + condition.type().to_string() +
                    " but must be bool (a comparison such as x < 10)");
    match(true_value, false_value, "select", false);
    return Select::make(std::move(condition), std::move(true_value), std::move(false_value));
}

Expr min(Expr a, Expr b) {
    match(a, b, "min", true);
    return Min::make(std::move(a), std::move(b));
}

Expr max(Expr a, Expr b) {
    match(a, b, "max", true);
    return Max::make(std::move(a), std::move(b));
}

Expr clamp(Expr e, Expr lo, Expr hi) {
    require_defined(e, "clamp", "value");
    if (e.type().is_bool()) throw Error("clamp: the value " + to_string(e) + " is bool; clamp needs a number");
    const Type t = e.type();
    lo = convert_for_assignment(lo, t, "the lower bound of clamp(" + to_string(e) + ", ...)");
    hi = convert_for_assignment(hi, t, "the upper bound of clamp(" + to_string(e) + ", ...)");
    return Max::make(Min::make(std::move(e), std::move(hi)), std::move(lo));
}

Expr abs(Expr e) {
    require_defined(e, "abs", "argument");
    return Call::make_intrinsic(Intrinsic::Abs, {std::move(e)});
}

Expr exp(Expr e) { return float_intrinsic(Intrinsic::Exp, std::move(e)); }
Expr log(Expr e) { return float_intrinsic(Intrinsic::Log, std::move(e)); }
Expr sqrt(Expr e) { return float_intrinsic(Intrinsic::Sqrt, std::move(e)); }
Expr rsqrt(Expr e) { return float_intrinsic(Intrinsic::Rsqrt, std::move(e)); }
Expr tanh(Expr e) { return float_intrinsic(Intrinsic::Tanh, std::move(e)); }
Expr erf(Expr e) { return float_intrinsic(Intrinsic::Erf, std::move(e)); }
Expr sigmoid(Expr e) { return float_intrinsic(Intrinsic::Sigmoid, std::move(e)); }
Expr floor(Expr e) { return float_intrinsic(Intrinsic::Floor, std::move(e)); }
Expr ceil(Expr e) { return float_intrinsic(Intrinsic::Ceil, std::move(e)); }
Expr round(Expr e) { return float_intrinsic(Intrinsic::Round, std::move(e)); }

Expr pow(Expr a, Expr b) {
    require_defined(a, "pow", "base");
    require_defined(b, "pow", "exponent");
    // Integer operands become fp32 unless the other side already fixes a float type.
    if (a.type().is_integer() && !(b.type().is_float() && !is_const(b))) a = to_float_argument(a, "pow");
    if (b.type().is_integer() && !(a.type().is_float() && !is_const(a))) b = to_float_argument(b, "pow");
    if (a.type().is_bool() || b.type().is_bool()) throw Error("pow: " + to_string(a.type().is_bool() ? a : b) + " is bool; pow needs numbers");
    match(a, b, "pow", true);
    return Call::make_intrinsic(Intrinsic::Pow, {std::move(a), std::move(b)});
}

Expr make_const(Type t, int64_t value) {
    if (t.is_float()) {
        const double v = static_cast<double>(value);
        if (!fits_float_range(t, v)) throw Error("make_const: " + std::to_string(value) + " is beyond the range of " + t.to_string());
        return FloatImm::make(t, v);
    }
    if (!t.can_represent(value)) throw Error("make_const: " + std::to_string(value) + " does not fit " + t.to_string());
    if (t.is_int()) return IntImm::make(t, value);
    return UIntImm::make(t, static_cast<uint64_t>(value));
}

Expr make_const(Type t, double value) {
    if (t.is_float()) {
        if (!fits_float_range(t, value)) throw Error("make_const: " + float_to_string(value, Float(64)) + " is beyond the range of " + t.to_string());
        return FloatImm::make(t, value);
    }
    if (!t.can_represent(value))
        throw Error("make_const: " + float_to_string(value, Float(64)) + " is not exactly representable as " + t.to_string());
    if (t.is_int()) return IntImm::make(t, static_cast<int64_t>(value));
    return UIntImm::make(t, static_cast<uint64_t>(value));
}

Expr make_zero(Type t) { return make_const(t, int64_t{0}); }
Expr make_one(Type t) { return make_const(t, int64_t{1}); }

bool is_const(const Expr &e) {
    return e.defined() && (e.as<IntImm>() || e.as<UIntImm>() || e.as<FloatImm>());
}

std::optional<int64_t> as_const_int(const Expr &e) {
    if (const auto *i = e.as<IntImm>()) return i->value;
    if (const auto *u = e.as<UIntImm>()) return static_cast<int64_t>(u->value);
    return std::nullopt;
}

std::optional<double> as_const_float(const Expr &e) {
    if (const auto *f = e.as<FloatImm>()) return f->value;
    return std::nullopt;
}

} // namespace tessera
