// bf16/fp16 conversions (round to nearest even) and the convert-on-store rules.
#include "chipsim_test_util.h"

#include <cmath>
#include <limits>

using namespace chipsim_test;

namespace {
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
} // namespace

TEST(Numerics, Bf16RoundsToNearestEven) {
    EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(float_to_bf16(from_bits(0x3f808000)), 0x3f80); // tie, even stays
    EXPECT_EQ(float_to_bf16(from_bits(0x3f818000)), 0x3f82); // tie, odd rounds up
    EXPECT_EQ(float_to_bf16(from_bits(0x3f808001)), 0x3f81); // above the tie
    EXPECT_EQ(float_to_bf16(from_bits(0x3f807fff)), 0x3f80);
    EXPECT_EQ(float_to_bf16(-2.5f), 0xc020);
    EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(float_to_bf16(from_bits(0x7f7fffff)), 0x7f80); // overflows to infinity
    EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
}

TEST(Numerics, Bf16RoundTripsEveryValue) {
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = bf16_to_float(uint16_t(h));
        if (std::isnan(f)) continue;
        ASSERT_EQ(float_to_bf16(f), h);
    }
}

TEST(Numerics, Fp16RoundTripsEveryValue) {
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = fp16_to_float(uint16_t(h));
        if (std::isnan(f)) continue;
        ASSERT_EQ(float_to_fp16(f), h) << h;
    }
}

TEST(Numerics, Fp16RoundsToNearestEven) {
    EXPECT_EQ(float_to_fp16(65504.0f), 0x7bff);
    EXPECT_EQ(float_to_fp16(65519.0f), 0x7bff);
    EXPECT_EQ(float_to_fp16(65520.0f), 0x7c00);           // rounds to infinity
    EXPECT_EQ(float_to_fp16(1.0f + 1.0f / 2048), 0x3c00); // tie to even
    EXPECT_EQ(float_to_fp16(1.0f + 3.0f / 2048), 0x3c02);
    EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)), 0x0001); // smallest subnormal
    EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)), 0x0000); // tie to even: zero
    EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)), 0x0002);
}

TEST(Numerics, IntegerStoresSaturateAndRoundHalfEven) {
    uint8_t b[4];
    store_from_float(DType::Int8, b, 200.0f);
    EXPECT_EQ(int8_t(b[0]), 127);
    store_from_float(DType::Int8, b, -2.5f);
    EXPECT_EQ(int8_t(b[0]), -2);
    store_from_float(DType::UInt8, b, -3.0f);
    EXPECT_EQ(b[0], 0);
    store_from_int(DType::Int16, b, 100000);
    int16_t s;
    std::memcpy(&s, b, 2);
    EXPECT_EQ(s, 32767);
}
