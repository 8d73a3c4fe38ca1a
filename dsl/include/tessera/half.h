#pragma once
// Host value types for the two 16-bit float formats of the DSL: bfloat16 (1 sign, 8 exponent,
// 7 mantissa bits — fp32's range at lower precision) and float16 (IEEE 754 binary16: 1 sign,
// 5 exponent, 10 mantissa bits). Both are plain 16-bit patterns (`bits`) so Buffers of them
// have the layout accelerators and NumPy (float16) expect.
//
// Conversions from float and double round to nearest, ties to even, in one step (never
// through an intermediate format, which could round twice). Values beyond the largest finite
// value round to ±Inf as IEEE 754 prescribes; values below half the smallest denormal become
// ±0; NaNs stay NaN (made quiet, sign and leading payload bits kept). Conversion to float is
// exact: every bf16 and fp16 value is an fp32 value.
#include <cstdint>
#include <cstring>

namespace tessera {

namespace internal {

/// Rounds `value` to the nearest value (ties to even) of a binary float format with
/// `exponent_bits` exponent and `mantissa_bits` explicit mantissa bits, and returns its bit
/// pattern in the low 1 + exponent_bits + mantissa_bits bits. Formats up to 16 bits.
inline uint16_t round_double_to_small_float(double value, int exponent_bits, int mantissa_bits) {
    uint64_t d;
    std::memcpy(&d, &value, sizeof d);
    const uint16_t sign = static_cast<uint16_t>((d >> 63) << (exponent_bits + mantissa_bits));
    const int d_exp = static_cast<int>((d >> 52) & 0x7FF);
    const uint64_t d_mant = d & ((uint64_t{1} << 52) - 1);
    const uint16_t exp_all_ones = static_cast<uint16_t>(((1u << exponent_bits) - 1) << mantissa_bits);
    if (d_exp == 0x7FF) {
        if (d_mant == 0) return sign | exp_all_ones; // ±Inf
        // NaN: keep the leading payload bits, force the quiet bit so it never becomes Inf.
        const uint16_t payload = static_cast<uint16_t>(d_mant >> (52 - mantissa_bits));
        return sign | exp_all_ones | payload | static_cast<uint16_t>(1u << (mantissa_bits - 1));
    }
    // Double denormals (and zero) are far below every target's smallest denormal.
    if (d_exp == 0) return sign;
    const int bias = (1 << (exponent_bits - 1)) - 1;
    const int e = d_exp - 1023;                                 // unbiased exponent
    const uint64_t significand = (uint64_t{1} << 52) | d_mant; // 53 bits, value = sig * 2^(e-52)
    const bool normal = e >= 1 - bias;
    // How many low bits of the significand fall below the target's last mantissa bit.
    const int shift = normal ? 52 - mantissa_bits : 52 - mantissa_bits + (1 - bias - e);
    if (shift > 54) return sign; // below half the smallest denormal: rounds to zero
    uint64_t rounded = significand >> shift;
    const uint64_t remainder = significand & ((uint64_t{1} << shift) - 1);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (remainder > half || (remainder == half && (rounded & 1))) ++rounded;
    if (!normal) {
        // A denormal's mantissa field is `rounded`; rounding up to 2^mantissa_bits lands
        // exactly on the encoding of the smallest normal, so no special case is needed.
        return sign | static_cast<uint16_t>(rounded);
    }
    int biased = e + bias;
    if (rounded >> (mantissa_bits + 1)) { // rounding carried into a new leading bit
        rounded >>= 1;
        ++biased;
    }
    if (biased >= (1 << exponent_bits) - 1) return sign | exp_all_ones; // overflow → ±Inf
    return sign | static_cast<uint16_t>(biased << mantissa_bits) |
           static_cast<uint16_t>(rounded & ((uint64_t{1} << mantissa_bits) - 1));
}

inline float float_from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

} // namespace internal

/// A bfloat16 value: the upper half of an fp32 bit pattern, rounded to nearest even.
struct bfloat16 {
    uint16_t bits = 0;

    constexpr bfloat16() = default;
    explicit bfloat16(float f) : bits(from_float(f)) {}
    explicit bfloat16(double d) : bits(internal::round_double_to_small_float(d, 8, 7)) {}
    explicit bfloat16(int v) : bfloat16(static_cast<double>(v)) {}
    /// The value with exactly this bit pattern.
    static constexpr bfloat16 from_bits(uint16_t b) {
        bfloat16 h;
        h.bits = b;
        return h;
    }
    /// Exact.
    float to_float() const { return internal::float_from_bits(static_cast<uint32_t>(bits) << 16); }
    explicit operator float() const { return to_float(); }
    explicit operator double() const { return to_float(); }

    bool is_nan() const { return (bits & 0x7F80) == 0x7F80 && (bits & 0x007F) != 0; }
    bool is_inf() const { return (bits & 0x7FFF) == 0x7F80; }

    /// Bitwise identity (so +0 != -0 and NaN == NaN with the same payload).
    friend bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }
    friend bool operator!=(bfloat16 a, bfloat16 b) { return a.bits != b.bits; }

private:
    static uint16_t from_float(float f) {
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu) != 0)
            return static_cast<uint16_t>((u >> 16) | 0x0040u); // NaN, made quiet
        // Round to nearest even on the dropped 16 bits; a carry into the exponent is the
        // correct result (including overflow of the largest finite values to Inf).
        const uint32_t rounding_bias = 0x7FFFu + ((u >> 16) & 1u);
        return static_cast<uint16_t>((u + rounding_bias) >> 16);
    }
};

/// An IEEE 754 binary16 value.
struct float16 {
    uint16_t bits = 0;

    constexpr float16() = default;
    explicit float16(float f) : bits(internal::round_double_to_small_float(f, 5, 10)) {}
    explicit float16(double d) : bits(internal::round_double_to_small_float(d, 5, 10)) {}
    explicit float16(int v) : float16(static_cast<double>(v)) {}
    /// The value with exactly this bit pattern.
    static constexpr float16 from_bits(uint16_t b) {
        float16 h;
        h.bits = b;
        return h;
    }
    /// Exact.
    float to_float() const {
        const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
        const uint32_t exp = (bits >> 10) & 0x1Fu;
        const uint32_t mant = bits & 0x3FFu;
        if (exp == 0x1F) return internal::float_from_bits(sign | 0x7F800000u | (mant << 13));
        if (exp == 0) {
            // ±0 or a denormal: mant * 2^-24, exact in fp32.
            const float magnitude = static_cast<float>(mant) * 5.9604644775390625e-8f;
            return sign ? -magnitude : magnitude;
        }
        return internal::float_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
    }
    explicit operator float() const { return to_float(); }
    explicit operator double() const { return to_float(); }

    bool is_nan() const { return (bits & 0x7C00) == 0x7C00 && (bits & 0x03FF) != 0; }
    bool is_inf() const { return (bits & 0x7FFF) == 0x7C00; }

    /// Bitwise identity (so +0 != -0 and NaN == NaN with the same payload).
    friend bool operator==(float16 a, float16 b) { return a.bits == b.bits; }
    friend bool operator!=(float16 a, float16 b) { return a.bits != b.bits; }
};

static_assert(sizeof(bfloat16) == 2 && sizeof(float16) == 2, "16-bit host float types must be 2 bytes");

} // namespace tessera
