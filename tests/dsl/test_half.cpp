// bfloat16 and float16: conversions checked against bit patterns worked out by hand from the
// formats (bf16: 1/8/7 bits, bias 127; fp16: 1/5/10 bits, bias 15).
#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "tessera/half.h"

using namespace tessera;

namespace {

float float_from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

double double_from_bits(uint64_t u) {
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}

} // namespace

TEST(BFloat16, ExactValues) {
    EXPECT_EQ(bfloat16(1.0f).bits, 0x3F80);
    EXPECT_EQ(bfloat16(-2.0f).bits, 0xC000);
    EXPECT_EQ(bfloat16(0.0f).bits, 0x0000);
    EXPECT_EQ(bfloat16(-0.0f).bits, 0x8000);
    EXPECT_EQ(bfloat16(0.5f).bits, 0x3F00);
    EXPECT_EQ(bfloat16::from_bits(0x3FC0).to_float(), 1.5f);
    EXPECT_EQ(bfloat16::from_bits(0x4049).to_float(), 3.140625f);
}

TEST(BFloat16, RoundsToNearestTiesToEven) {
    // 1 + 2^-8 is exactly halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): ties to even.
    EXPECT_EQ(bfloat16(1.0f + 0x1p-8f).bits, 0x3F80);
    // 1 + 3*2^-8 is halfway between 0x3F81 (odd) and 0x3F82 (even).
    EXPECT_EQ(bfloat16(1.0f + 3 * 0x1p-8f).bits, 0x3F82);
    // Just above the halfway point rounds up, just below rounds down.
    EXPECT_EQ(bfloat16(float_from_bits(0x3F808001)).bits, 0x3F81);
    EXPECT_EQ(bfloat16(float_from_bits(0x3F807FFF)).bits, 0x3F80);
    // pi = 0x40490FDB rounds to 0x4049.
    EXPECT_EQ(bfloat16(3.14159265f).bits, 0x4049);
}

TEST(BFloat16, SpecialValues) {
    EXPECT_EQ(bfloat16(std::numeric_limits<float>::infinity()).bits, 0x7F80);
    EXPECT_EQ(bfloat16(-std::numeric_limits<float>::infinity()).bits, 0xFF80);
    EXPECT_TRUE(bfloat16::from_bits(0x7F80).is_inf());
    EXPECT_TRUE(std::isinf(bfloat16::from_bits(0xFF80).to_float()));
    // A signalling NaN whose payload lives only in the low 16 bits must not become Inf.
    const bfloat16 snan(float_from_bits(0x7F800001));
    EXPECT_TRUE(snan.is_nan());
    EXPECT_EQ(snan.bits, 0x7FC0);
    EXPECT_TRUE(std::isnan(bfloat16(std::nanf("")).to_float()));
    EXPECT_EQ(bfloat16(float_from_bits(0xFFC00000)).bits, 0xFFC0); // negative quiet NaN
    // Largest finite bf16 is 0x7F7F = (2 - 2^-7) * 2^127; values from its midpoint with the
    // next binade up overflow to Inf.
    EXPECT_EQ(bfloat16(float_from_bits(0x7F7F0000)).bits, 0x7F7F);
    EXPECT_EQ(bfloat16(float_from_bits(0x7F7F7FFF)).bits, 0x7F7F);
    EXPECT_EQ(bfloat16(float_from_bits(0x7F7F8000)).bits, 0x7F80);
    EXPECT_EQ(bfloat16(std::numeric_limits<float>::max()).bits, 0x7F80);
    EXPECT_EQ(bfloat16(1e300).bits, 0x7F80);
}

TEST(BFloat16, Denormals) {
    // Smallest bf16 denormal: 2^-133 = 0x0001.
    EXPECT_EQ(bfloat16(0x1p-133f).bits, 0x0001);
    EXPECT_EQ(bfloat16::from_bits(0x0001).to_float(), 0x1p-133f);
    // Half of it is a tie between 0 (even) and 0x0001: rounds to 0.
    EXPECT_EQ(bfloat16(0x1p-134f).bits, 0x0000);
    // 1.5 * 2^-133 is a tie between 0x0001 (odd) and 0x0002 (even).
    EXPECT_EQ(bfloat16(0x1.8p-133f).bits, 0x0002);
    // Largest denormal 0x007F = 127 * 2^-133.
    EXPECT_EQ(bfloat16(127 * 0x1p-133f).bits, 0x007F);
    EXPECT_EQ(bfloat16(-0x1p-126f).bits, 0x8080); // smallest normal, negative
}

TEST(BFloat16, FromDoubleRoundsOnce) {
    // 1 + 2^-8 + 2^-40: above the bf16 midpoint, so it rounds up to 0x3F81. Rounding to fp32
    // first would give exactly the midpoint 1 + 2^-8 and then round (to even) down to 0x3F80.
    EXPECT_EQ(bfloat16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3F81);
    EXPECT_EQ(bfloat16(1.0 + 0x1p-8).bits, 0x3F80);
    EXPECT_EQ(bfloat16(double_from_bits(0x7FF0000000000001ull)).is_nan(), true);
    EXPECT_EQ(bfloat16(-1e-300).bits, 0x8000);
}

TEST(Float16, ExactValues) {
    EXPECT_EQ(float16(1.0f).bits, 0x3C00);
    EXPECT_EQ(float16(-2.0f).bits, 0xC000);
    EXPECT_EQ(float16(0.0f).bits, 0x0000);
    EXPECT_EQ(float16(-0.0f).bits, 0x8000);
    EXPECT_EQ(float16(65504.0f).bits, 0x7BFF); // largest finite
    EXPECT_EQ(float16::from_bits(0x7BFF).to_float(), 65504.0f);
    EXPECT_EQ(float16::from_bits(0x3555).to_float(), 0.333251953125f);
    EXPECT_EQ(float16::from_bits(0xC248).to_float(), -3.140625f);
    EXPECT_TRUE(std::signbit(float16::from_bits(0x8000).to_float()));
}

TEST(Float16, RoundsToNearestTiesToEven) {
    // 1 + 2^-11 is halfway between 1 (0x3C00, even) and 1 + 2^-10 (0x3C01).
    EXPECT_EQ(float16(1.0f + 0x1p-11f).bits, 0x3C00);
    EXPECT_EQ(float16(1.0f + 3 * 0x1p-11f).bits, 0x3C02);
    EXPECT_EQ(float16(1.0f + 0x1p-11f + 0x1p-20f).bits, 0x3C01);
    // 1/3 rounds to 0x3555.
    EXPECT_EQ(float16(1.0f / 3.0f).bits, 0x3555);
    // 2047 and 2049: 2048 is exact, 2049 is a tie between 2048 (even) and 2050.
    EXPECT_EQ(float16(2049.0f).to_float(), 2048.0f);
    EXPECT_EQ(float16(2051.0f).to_float(), 2052.0f);
}

TEST(Float16, OverflowAndSpecials) {
    // The midpoint between 65504 and 65536 (the first value of the next binade) is 65520.
    EXPECT_EQ(float16(65519.0f).bits, 0x7BFF);
    EXPECT_EQ(float16(65520.0f).bits, 0x7C00);
    EXPECT_EQ(float16(1e6f).bits, 0x7C00);
    EXPECT_EQ(float16(-1e6f).bits, 0xFC00);
    EXPECT_EQ(float16(std::numeric_limits<float>::infinity()).bits, 0x7C00);
    EXPECT_TRUE(float16::from_bits(0x7C00).is_inf());
    EXPECT_TRUE(std::isinf(float16::from_bits(0xFC00).to_float()));
    // NaN with a payload only in low fp32 bits stays NaN (quiet), never Inf.
    const float16 nan(float_from_bits(0x7F800001));
    EXPECT_TRUE(nan.is_nan());
    EXPECT_EQ(nan.bits, 0x7E00);
    EXPECT_TRUE(std::isnan(float16::from_bits(0x7E00).to_float()));
    EXPECT_TRUE(std::isnan(float16::from_bits(0xFD01).to_float()));
}

TEST(Float16, Denormals) {
    // Smallest denormal 2^-24 = 0x0001; largest denormal 1023 * 2^-24 = 0x03FF; smallest
    // normal 2^-14 = 0x0400.
    EXPECT_EQ(float16(0x1p-24f).bits, 0x0001);
    EXPECT_EQ(float16::from_bits(0x0001).to_float(), 0x1p-24f);
    EXPECT_EQ(float16::from_bits(0x03FF).to_float(), 1023 * 0x1p-24f);
    EXPECT_EQ(float16(0x1p-14f).bits, 0x0400);
    // Ties at the bottom: 2^-25 → 0 (even), 3 * 2^-25 → 0x0002 (even), just above 2^-25 → 0x0001.
    EXPECT_EQ(float16(0x1p-25f).bits, 0x0000);
    EXPECT_EQ(float16(3 * 0x1p-25f).bits, 0x0002);
    EXPECT_EQ(float16(0x1.000002p-25f).bits, 0x0001);
    EXPECT_EQ(float16(0x1p-30f).bits, 0x0000);
    EXPECT_EQ(float16(-0x1p-30f).bits, 0x8000);
    // Rounding up out of the denormals lands on the smallest normal.
    EXPECT_EQ(float16(1023.5f * 0x1p-24f + 0x1p-40f).bits, 0x0400);
}

TEST(HalfTypes, EveryPatternRoundTripsThroughFloat) {
    // Conversion to float is exact, so converting back must give the same bits (NaNs may only
    // gain the quiet bit).
    for (uint32_t b = 0; b <= 0xFFFF; ++b) {
        const bfloat16 h = bfloat16::from_bits(static_cast<uint16_t>(b));
        const bfloat16 back(h.to_float());
        if (h.is_nan()) {
            ASSERT_TRUE(back.is_nan()) << std::hex << b;
        } else {
            ASSERT_EQ(back.bits, b) << std::hex << b;
            ASSERT_EQ(bfloat16(static_cast<double>(h.to_float())).bits, b) << std::hex << b;
        }
        const float16 g = float16::from_bits(static_cast<uint16_t>(b));
        const float16 gback(g.to_float());
        if (g.is_nan()) {
            ASSERT_TRUE(gback.is_nan()) << std::hex << b;
            ASSERT_TRUE(std::isnan(g.to_float())) << std::hex << b;
        } else {
            ASSERT_EQ(gback.bits, b) << std::hex << b;
        }
    }
}
