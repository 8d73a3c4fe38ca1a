// Scalar types: validity, ranges, representability and names.
#include "tessera/type.h"

#include <cmath>
#include <limits>

#include "tessera/error.h"

namespace tessera {

namespace {

const char *code_name(TypeCode code) {
    switch (code) {
    case TypeCode::Int: return "Int";
    case TypeCode::UInt: return "UInt";
    case TypeCode::Float: return "Float";
    case TypeCode::BFloat: return "BFloat";
    case TypeCode::Bool: return "Bool";
    }
    return "?";
}

bool valid(TypeCode code, int bits) {
    switch (code) {
    case TypeCode::Int:
    case TypeCode::UInt: return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case TypeCode::Float: return bits == 16 || bits == 32 || bits == 64;
    case TypeCode::BFloat: return bits == 16;
    case TypeCode::Bool: return bits == 1;
    }
    return false;
}

/// Mantissa bits including the implicit leading one: the width of the integers a float type
/// holds exactly.
int significand_bits(Type t) {
    if (t.is_bfloat()) return 8;
    switch (t.bits()) {
    case 16: return 11;
    case 32: return 24;
    default: return 53;
    }
}

/// Largest finite exponent (value < 2^(max_exponent+1)) and smallest normal exponent.
int max_exponent(Type t) { return t.is_bfloat() || t.bits() == 32 ? 127 : t.bits() == 16 ? 15 : 1023; }
int min_exponent(Type t) { return t.is_bfloat() || t.bits() == 32 ? -126 : t.bits() == 16 ? -14 : -1022; }

} // namespace

Type::Type(TypeCode code, int bits) : code_(code), bits_(bits) {
    if (!valid(code, bits))
        throw Error(std::string("invalid type ") + code_name(code) + "(" + std::to_string(bits) +
                    "): valid types are Int(8/16/32/64), UInt(8/16/32/64), Float(16/32/64), "
                    "BFloat(16) and Bool()");
}

Type Int(int bits) { return Type(TypeCode::Int, bits); }
Type UInt(int bits) { return Type(TypeCode::UInt, bits); }
Type Float(int bits) { return Type(TypeCode::Float, bits); }
Type BFloat(int bits) { return Type(TypeCode::BFloat, bits); }
Type Bool() { return Type(TypeCode::Bool, 1); }

double Type::max_value() const {
    switch (code_) {
    case TypeCode::Bool: return 1;
    case TypeCode::Int: return std::ldexp(1.0, bits_ - 1) - 1;
    case TypeCode::UInt: return std::ldexp(1.0, bits_) - 1;
    case TypeCode::Float:
    case TypeCode::BFloat: {
        // (2 - 2^(1-p)) * 2^emax
        const int p = significand_bits(*this);
        return (2.0 - std::ldexp(1.0, 1 - p)) * std::ldexp(1.0, max_exponent(*this));
    }
    }
    return 0;
}

double Type::min_value() const {
    switch (code_) {
    case TypeCode::Bool:
    case TypeCode::UInt: return 0;
    case TypeCode::Int: return -std::ldexp(1.0, bits_ - 1);
    case TypeCode::Float:
    case TypeCode::BFloat: return -max_value();
    }
    return 0;
}

bool Type::can_represent(Type other) const {
    if (*this == other) return true;
    if (other.is_bool()) return true; // 0 and 1 fit everywhere
    if (is_bool()) return false;
    if (is_float()) {
        if (other.is_float()) {
            // bf16 and fp16 do not contain each other (range vs precision); wider IEEE
            // formats contain narrower ones and bf16 fits fp32 and fp64.
            if (other.is_bfloat()) return !is_bfloat() && bits_ >= 32;
            if (is_bfloat()) return false;
            return bits_ > other.bits_;
        }
        // An integer type fits if all its values are exact: its magnitude bits fit the
        // significand (range is never the limit for these widths except fp16/uint16-int16,
        // which the significand test already rejects).
        const int magnitude_bits = other.is_int() ? other.bits_ - 1 : other.bits_;
        return magnitude_bits <= significand_bits(*this);
    }
    if (other.is_float()) return false;
    // Integer from integer.
    if (is_int() == other.is_int()) return bits_ >= other.bits_;
    if (is_int()) return bits_ > other.bits_; // signed holding unsigned needs one more bit
    return false;                             // unsigned cannot hold negatives
}

bool Type::can_represent(int64_t value) const {
    switch (code_) {
    case TypeCode::Bool: return value == 0 || value == 1;
    case TypeCode::Int:
        if (bits_ == 64) return true;
        return value >= -(int64_t{1} << (bits_ - 1)) && value < (int64_t{1} << (bits_ - 1));
    case TypeCode::UInt:
        if (value < 0) return false;
        return bits_ == 64 || value < (int64_t{1} << bits_);
    case TypeCode::Float:
    case TypeCode::BFloat: {
        // Exact if it rounds back to itself: |value| < 2^p, or its low bits beyond p are 0.
        const uint64_t magnitude = value < 0 ? uint64_t(0) - uint64_t(value) : uint64_t(value);
        if (magnitude == 0) return true;
        int width = 64 - __builtin_clzll(magnitude);
        int trailing = __builtin_ctzll(magnitude);
        if (width - trailing > significand_bits(*this)) return false;
        return width - 1 <= max_exponent(*this);
    }
    }
    return false;
}

bool Type::can_represent(double value) const {
    if (std::isnan(value) || std::isinf(value)) return is_float();
    if (!is_float()) {
        if (value != std::floor(value)) return false;
        if (value < min_value() || value > max_value()) return false;
        // 2^63 itself is max_value() of Int(64) rounded to double; reject values ≥ 2^63.
        if (is_int() && bits_ == 64 && value >= 9223372036854775808.0) return false;
        if (is_uint() && bits_ == 64 && value >= 18446744073709551616.0) return false;
        return true;
    }
    if (value == 0) return true;
    if (bits_ == 64 && !is_bfloat()) return true;
    if (std::fabs(value) > max_value()) return false;
    // Exact if the significand fits p bits and the value is not below the denormal grid.
    int exponent;
    const double fraction = std::frexp(std::fabs(value), &exponent); // value = f * 2^exponent, f in [0.5, 1)
    const int p = significand_bits(*this);
    // The grid spacing at this exponent: 2^(e-p), but never finer than the smallest denormal.
    const int e = exponent - 1;
    const int lsb_exponent = std::max(e, min_exponent(*this)) - (p - 1);
    const double scaled = std::ldexp(fraction, exponent - lsb_exponent);
    return scaled == std::floor(scaled);
}

std::string Type::to_string() const {
    switch (code_) {
    case TypeCode::Int: return "int" + std::to_string(bits_);
    case TypeCode::UInt: return "uint" + std::to_string(bits_);
    case TypeCode::Float: return "fp" + std::to_string(bits_);
    case TypeCode::BFloat: return "bf16";
    case TypeCode::Bool: return "bool";
    }
    return "?";
}

Type Type::parse(const std::string &name) {
    static const Type all[] = {Int(8),   Int(16),   Int(32),  Int(64),  UInt(8),  UInt(16), UInt(32),
                               UInt(64), Float(16), Float(32), Float(64), BFloat(16), Bool()};
    for (Type t : all)
        if (t.to_string() == name) return t;
    // Common spellings users carry over from NumPy and PyTorch.
    if (name == "float16" || name == "half") return Float(16);
    if (name == "float32" || name == "float") return Float(32);
    if (name == "float64" || name == "double") return Float(64);
    if (name == "bfloat16") return BFloat(16);
    std::string valid_names;
    for (Type t : all) valid_names += (valid_names.empty() ? "" : " ") + t.to_string();
    throw Error("unknown type name '" + name + "': valid names are " + valid_names +
                " (or float16 float32 float64 bfloat16)");
}

} // namespace tessera
