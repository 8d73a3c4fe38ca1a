#include "tessera/chipsim/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tessera::chipsim {

int dtype_bytes(DType t) {
    switch (t) {
    case DType::Int8:
    case DType::UInt8: return 1;
    case DType::Int16:
    case DType::BF16:
    case DType::FP16: return 2;
    case DType::Int32:
    case DType::FP32: return 4;
    }
    return 1;
}

const char *dtype_name(DType t) {
    switch (t) {
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::BF16: return "bf16";
    case DType::FP16: return "fp16";
    case DType::FP32: return "fp32";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType t : {DType::Int8, DType::UInt8, DType::Int16, DType::Int32, DType::BF16, DType::FP16,
                    DType::FP32})
        if (name == dtype_name(t)) return t;
    return std::nullopt;
}

const char *dtype_npy_descr(DType t) {
    switch (t) {
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int16: return "<i2";
    case DType::Int32: return "<i4";
    case DType::BF16: return "<u2";
    case DType::FP16: return "<f2";
    case DType::FP32: return "<f4";
    }
    return "";
}

bool dtype_is_float(DType t) { return t == DType::BF16 || t == DType::FP16 || t == DType::FP32; }

static uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
static float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

uint16_t float_to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40); // quiet NaN
    // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even.
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}

float bf16_to_float(uint16_t h) { return float_of(uint32_t(h) << 16); }

uint16_t float_to_fp16(float f) {
    uint32_t u = bits_of(f);
    uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return uint16_t(sign | 0x7e00u);   // NaN
    if (absu >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: infinity
    if (absu < 0x38800000u) {                                  // below 2^-14: fp16 subnormal
        // Scale so the subnormal's units land in the integer part; nearbyint rounds half-even.
        float a = float_of(absu) * 16777216.0f; // 2^24 = 1 / smallest fp16 subnormal
        return uint16_t(sign | uint16_t(std::nearbyint(a)));
    }
    uint32_t mant = absu & 0x7fffffu;
    int32_t exp = int32_t(absu >> 23) - 127 + 15;
    uint32_t half = (uint32_t(exp) << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half; // carries into the exponent
    return uint16_t(sign | half);
}

float fp16_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) {
        float v = float(mant) * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (exp == 31) return float_of(sign | 0x7f800000u | (mant << 13));
    return float_of(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

template <typename T> static T read_raw(const uint8_t *p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}
template <typename T> static void write_raw(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

float load_as_float(DType t, const uint8_t *p) {
    switch (t) {
    case DType::Int8: return float(read_raw<int8_t>(p));
    case DType::UInt8: return float(read_raw<uint8_t>(p));
    case DType::Int16: return float(read_raw<int16_t>(p));
    case DType::Int32: return float(read_raw<int32_t>(p));
    case DType::BF16: return bf16_to_float(read_raw<uint16_t>(p));
    case DType::FP16: return fp16_to_float(read_raw<uint16_t>(p));
    case DType::FP32: return read_raw<float>(p);
    }
    return 0.0f;
}

int32_t load_as_int(DType t, const uint8_t *p) {
    switch (t) {
    case DType::Int8: return read_raw<int8_t>(p);
    case DType::UInt8: return read_raw<uint8_t>(p);
    case DType::Int16: return read_raw<int16_t>(p);
    case DType::Int32: return read_raw<int32_t>(p);
    default: {
        float f = load_as_float(t, p);
        if (std::isnan(f)) return 0;
        f = std::trunc(f);
        if (f >= 2147483647.0f) return std::numeric_limits<int32_t>::max();
        if (f <= -2147483648.0f) return std::numeric_limits<int32_t>::min();
        return int32_t(f);
    }
    }
}

void store_from_int(DType t, uint8_t *p, int64_t v) {
    auto sat = [v](int64_t lo, int64_t hi) { return std::clamp<int64_t>(v, lo, hi); };
    switch (t) {
    case DType::Int8: write_raw<int8_t>(p, int8_t(sat(-128, 127))); break;
    case DType::UInt8: write_raw<uint8_t>(p, uint8_t(sat(0, 255))); break;
    case DType::Int16: write_raw<int16_t>(p, int16_t(sat(-32768, 32767))); break;
    case DType::Int32: write_raw<int32_t>(p, int32_t(sat(INT32_MIN, INT32_MAX))); break;
    default: store_from_float(t, p, float(v)); break;
    }
}

void store_from_float(DType t, uint8_t *p, float v) {
    switch (t) {
    case DType::BF16: write_raw<uint16_t>(p, float_to_bf16(v)); break;
    case DType::FP16: write_raw<uint16_t>(p, float_to_fp16(v)); break;
    case DType::FP32: write_raw<float>(p, v); break;
    default: {
        if (std::isnan(v)) v = 0.0f;
        // nearbyint under the default rounding mode is round-half-even; doubles hold int32 exactly.
        double r = std::nearbyint(double(v));
        r = std::clamp(r, -9.3e18, 9.3e18);
        store_from_int(t, p, int64_t(r));
    }
    }
}

} // namespace tessera::chipsim
