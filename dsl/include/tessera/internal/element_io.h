#pragma once
// Reading and writing one element of any DSL type through a raw pointer, with the DSL's
// conversion rules. Buffer's type-erased accessors and the reference evaluator's loads and
// stores share these, so a value is converted the same way everywhere.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tessera/half.h"
#include "tessera/type.h"

namespace tessera::internal {

/// Wraps `v` to the width of integer type `t` (two's complement), as the IR's integer
/// arithmetic does; the result is sign- or zero-extended back to 64 bits. Bool is "!= 0".
inline int64_t wrap_to_type(Type t, int64_t v) {
    if (t.is_bool()) return v != 0;
    const int bits = t.bits();
    if (bits >= 64) return v;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && (u >> (bits - 1)) != 0) u |= ~mask; // sign-extend
    return static_cast<int64_t>(u);
}

/// Float → integer conversion of the IR's Cast: truncation towards zero, saturating at the
/// type's limits; NaN becomes 0.
inline int64_t saturating_float_to_int(Type t, double v) {
    if (std::isnan(v)) return 0;
    if (t.is_bool()) return v != 0;
    v = std::trunc(v);
    if (t.is_uint()) {
        if (v <= 0) return 0;
        if (t.bits() == 64) {
            if (v >= 18446744073709551616.0) return static_cast<int64_t>(~uint64_t{0});
            return static_cast<int64_t>(static_cast<uint64_t>(v));
        }
        const double hi = static_cast<double>((uint64_t{1} << t.bits()) - 1);
        return static_cast<int64_t>(v >= hi ? hi : v);
    }
    if (t.bits() == 64) {
        if (v >= 9223372036854775808.0) return INT64_MAX;
        if (v <= -9223372036854775808.0) return INT64_MIN;
        return static_cast<int64_t>(v);
    }
    const double hi = static_cast<double>((int64_t{1} << (t.bits() - 1)) - 1), lo = -hi - 1;
    return static_cast<int64_t>(v >= hi ? hi : v <= lo ? lo : v);
}

/// Rounds `v` to the precision of float type `t` (nearest even): fp32, fp16, bf16 or fp64.
inline double round_to_float_type(Type t, double v) {
    switch (t.bits()) {
    case 64: return v;
    case 32: return static_cast<double>(static_cast<float>(v));
    default: return t.is_bfloat() ? bfloat16(v).to_float() : float16(v).to_float();
    }
}

/// The element at `p` as an int64 (integers exactly, UInt(64) as its bit pattern; floats
/// truncated and saturated).
inline int64_t load_as_int(Type t, const void *p) {
    switch (t.code()) {
    case TypeCode::Bool: return *static_cast<const uint8_t *>(p) != 0;
    case TypeCode::Int:
        switch (t.bits()) {
        case 8: return *static_cast<const int8_t *>(p);
        case 16: { int16_t v; std::memcpy(&v, p, 2); return v; }
        case 32: { int32_t v; std::memcpy(&v, p, 4); return v; }
        default: { int64_t v; std::memcpy(&v, p, 8); return v; }
        }
    case TypeCode::UInt:
        switch (t.bits()) {
        case 8: return *static_cast<const uint8_t *>(p);
        case 16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
        case 32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
        default: { int64_t v; std::memcpy(&v, p, 8); return v; }
        }
    default: break;
    }
    double d;
    switch (t.bits()) {
    case 16: {
        uint16_t bits;
        std::memcpy(&bits, p, 2);
        d = t.is_bfloat() ? bfloat16::from_bits(bits).to_float() : float16::from_bits(bits).to_float();
        break;
    }
    case 32: { float f; std::memcpy(&f, p, 4); d = f; break; }
    default: std::memcpy(&d, p, 8); break;
    }
    return saturating_float_to_int(Int(64), d);
}

/// The element at `p` as a double (exact for every type up to 53 bits of precision).
inline double load_as_double(Type t, const void *p) {
    if (t.is_float()) {
        switch (t.bits()) {
        case 16: {
            uint16_t bits;
            std::memcpy(&bits, p, 2);
            return t.is_bfloat() ? bfloat16::from_bits(bits).to_float() : float16::from_bits(bits).to_float();
        }
        case 32: { float f; std::memcpy(&f, p, 4); return f; }
        default: { double d; std::memcpy(&d, p, 8); return d; }
        }
    }
    if (t.is_uint() && t.bits() == 64) {
        uint64_t u;
        std::memcpy(&u, p, 8);
        return static_cast<double>(u);
    }
    return static_cast<double>(load_as_int(t, p));
}

/// Stores `v` at `p` in float type `t`, rounded to nearest even in one step.
inline void store_float(Type t, void *p, double v) {
    switch (t.bits()) {
    case 16: {
        const uint16_t bits = t.is_bfloat() ? bfloat16(v).bits : float16(v).bits;
        std::memcpy(p, &bits, 2);
        return;
    }
    case 32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    default: std::memcpy(p, &v, 8); return;
    }
}

/// Stores integer `v` at `p`, wrapped to an integer type or converted (rounded to nearest even)
/// to a float type.
inline void store_int(Type t, void *p, int64_t v) {
    if (t.is_float()) {
        store_float(t, p, static_cast<double>(v));
        return;
    }
    if (t.is_bool()) {
        *static_cast<uint8_t *>(p) = v != 0;
        return;
    }
    // Little-endian hosts: the low bytes of v are its value wrapped to the width.
    switch (t.bits()) {
    case 8: { const uint8_t b = static_cast<uint8_t>(v); std::memcpy(p, &b, 1); return; }
    case 16: { const uint16_t b = static_cast<uint16_t>(v); std::memcpy(p, &b, 2); return; }
    case 32: { const uint32_t b = static_cast<uint32_t>(v); std::memcpy(p, &b, 4); return; }
    default: std::memcpy(p, &v, 8); return;
    }
}

/// Stores `v` at `p`: rounded to nearest even for float types, truncated and saturated
/// (NaN → 0) for integer types, != 0 for Bool.
inline void store_double(Type t, void *p, double v) {
    if (t.is_float()) store_float(t, p, v);
    else store_int(t, p, saturating_float_to_int(t, v));
}

} // namespace tessera::internal
