// Scalar types: which exist, their ranges, what each can represent, and their names.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "tessera/error.h"
#include "tessera/type.h"

using namespace tessera;

TEST(Type, ValidAndInvalidCombinations) {
    for (int bits : {8, 16, 32, 64}) {
        EXPECT_NO_THROW(Int(bits));
        EXPECT_NO_THROW(UInt(bits));
    }
    EXPECT_NO_THROW(Float(16));
    EXPECT_NO_THROW(Float(32));
    EXPECT_NO_THROW(Float(64));
    EXPECT_NO_THROW(BFloat(16));
    EXPECT_THROW(Int(7), Error);
    EXPECT_THROW(UInt(1), Error);
    EXPECT_THROW(Float(8), Error);
    EXPECT_THROW(BFloat(32), Error);
    EXPECT_THROW(Type(TypeCode::Bool, 8), Error);
    try {
        Float(8);
        FAIL();
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("Float(8)"), std::string::npos) << e.what();
    }
}

TEST(Type, Predicates) {
    EXPECT_TRUE(Int(8).is_int() && Int(8).is_integer() && !Int(8).is_float());
    EXPECT_TRUE(UInt(16).is_uint() && UInt(16).is_integer());
    EXPECT_TRUE(BFloat(16).is_float() && BFloat(16).is_bfloat());
    EXPECT_TRUE(Float(16).is_float() && !Float(16).is_bfloat());
    EXPECT_NE(Float(16), BFloat(16));
    EXPECT_TRUE(Bool().is_bool() && !Bool().is_integer());
    EXPECT_EQ(Bool().bytes(), 1);
    EXPECT_EQ(BFloat(16).bytes(), 2);
    EXPECT_EQ(Int(64).bytes(), 8);
    EXPECT_EQ(Type(), Int(32));
}

TEST(Type, Ranges) {
    EXPECT_EQ(Int(8).max_value(), 127);
    EXPECT_EQ(Int(8).min_value(), -128);
    EXPECT_EQ(UInt(8).max_value(), 255);
    EXPECT_EQ(UInt(16).min_value(), 0);
    EXPECT_EQ(Int(32).min_value(), -2147483648.0);
    EXPECT_EQ(Float(16).max_value(), 65504.0);
    EXPECT_EQ(Float(32).max_value(), std::numeric_limits<float>::max());
    EXPECT_EQ(Float(64).max_value(), std::numeric_limits<double>::max());
    // bf16 max = 0x7F7F = (2 - 2^-7) * 2^127.
    EXPECT_EQ(BFloat(16).max_value(), (2.0 - 1.0 / 128) * std::ldexp(1.0, 127));
    EXPECT_EQ(BFloat(16).min_value(), -BFloat(16).max_value());
}

TEST(Type, CanRepresentTypes) {
    EXPECT_TRUE(Int(16).can_represent(Int(8)));
    EXPECT_FALSE(Int(8).can_represent(Int(16)));
    EXPECT_TRUE(Int(16).can_represent(UInt(8)));
    EXPECT_FALSE(Int(8).can_represent(UInt(8)));
    EXPECT_FALSE(UInt(32).can_represent(Int(8)));
    EXPECT_TRUE(UInt(8).can_represent(Bool()));
    EXPECT_FALSE(Bool().can_represent(UInt(8)));
    // Floats hold integers whose magnitude fits their significand: fp16 has 11 bits, bf16 8,
    // fp32 24, fp64 53.
    EXPECT_TRUE(Float(16).can_represent(Int(8)));
    EXPECT_TRUE(Float(16).can_represent(UInt(8)));
    EXPECT_FALSE(Float(16).can_represent(Int(16)));
    EXPECT_TRUE(BFloat(16).can_represent(Int(8)));
    EXPECT_TRUE(BFloat(16).can_represent(UInt(8))); // 255 has 8 significant bits
    EXPECT_FALSE(BFloat(16).can_represent(UInt(16)));
    EXPECT_TRUE(Float(32).can_represent(Int(16)));
    EXPECT_FALSE(Float(32).can_represent(Int(32)));
    EXPECT_TRUE(Float(64).can_represent(Int(32)));
    EXPECT_FALSE(Float(64).can_represent(Int(64)));
    // bf16 and fp16 do not contain each other; fp32 contains both.
    EXPECT_FALSE(BFloat(16).can_represent(Float(16)));
    EXPECT_FALSE(Float(16).can_represent(BFloat(16)));
    EXPECT_TRUE(Float(32).can_represent(BFloat(16)));
    EXPECT_TRUE(Float(32).can_represent(Float(16)));
    EXPECT_FALSE(Float(32).can_represent(Float(64)));
    EXPECT_FALSE(Int(64).can_represent(Float(16)));
}

TEST(Type, CanRepresentValues) {
    EXPECT_TRUE(UInt(8).can_represent(int64_t{255}));
    EXPECT_FALSE(UInt(8).can_represent(int64_t{256}));
    EXPECT_FALSE(UInt(8).can_represent(int64_t{-1}));
    EXPECT_TRUE(Int(8).can_represent(int64_t{-128}));
    EXPECT_FALSE(Int(8).can_represent(int64_t{128}));
    EXPECT_TRUE(Bool().can_represent(int64_t{1}));
    EXPECT_FALSE(Bool().can_represent(int64_t{2}));
    EXPECT_TRUE(BFloat(16).can_represent(int64_t{256}));
    EXPECT_FALSE(BFloat(16).can_represent(int64_t{257})); // needs 9 significant bits
    EXPECT_TRUE(BFloat(16).can_represent(int64_t{258}));  // 2 * 129: 8 significant bits
    EXPECT_TRUE(Float(16).can_represent(int64_t{2048}));
    EXPECT_FALSE(Float(16).can_represent(int64_t{2049}));
    EXPECT_FALSE(Float(16).can_represent(int64_t{65536})); // beyond max finite
    EXPECT_TRUE(Float(32).can_represent(int64_t{16777216}));
    EXPECT_FALSE(Float(32).can_represent(int64_t{16777217}));

    EXPECT_TRUE(Int(32).can_represent(3.0));
    EXPECT_FALSE(Int(32).can_represent(3.5));
    EXPECT_FALSE(Int(32).can_represent(2147483648.0));
    EXPECT_FALSE(Int(64).can_represent(9223372036854775808.0));
    EXPECT_TRUE(Float(32).can_represent(0.5));
    EXPECT_FALSE(Float(32).can_represent(0.1));
    EXPECT_TRUE(Float(16).can_represent(std::ldexp(1.0, -24))); // smallest fp16 denormal
    EXPECT_FALSE(Float(16).can_represent(std::ldexp(1.0, -25)));
    EXPECT_TRUE(BFloat(16).can_represent(1.0 + 1.0 / 128));
    EXPECT_FALSE(BFloat(16).can_represent(1.0 + 1.0 / 256));
    EXPECT_TRUE(Float(16).can_represent(1.0 + 1.0 / 1024));
    EXPECT_FALSE(Float(16).can_represent(70000.0));
    EXPECT_TRUE(Float(32).can_represent(std::numeric_limits<double>::infinity()));
    EXPECT_FALSE(Int(32).can_represent(std::nan("")));
}

TEST(Type, NamesRoundTrip) {
    const Type all[] = {Int(8),   Int(16),   Int(32),   Int(64),    UInt(8), UInt(16), UInt(32),
                        UInt(64), Float(16), Float(32), Float(64), BFloat(16), Bool()};
    const char *names[] = {"int8",   "int16", "int32", "int64", "uint8", "uint16", "uint32",
                           "uint64", "fp16",  "fp32",  "fp64",  "bf16",  "bool"};
    for (size_t i = 0; i < std::size(all); ++i) {
        EXPECT_EQ(all[i].to_string(), names[i]);
        EXPECT_EQ(Type::parse(names[i]), all[i]);
    }
    EXPECT_EQ(Type::parse("float32"), Float(32));
    EXPECT_EQ(Type::parse("bfloat16"), BFloat(16));
    try {
        Type::parse("int7");
        FAIL();
    } catch (const Error &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("int7"), std::string::npos) << msg;
        EXPECT_NE(msg.find("bf16"), std::string::npos) << msg; // lists the valid names
    }
}

TEST(Type, TypeOfHostTypes) {
    EXPECT_EQ(type_of<int8_t>(), Int(8));
    EXPECT_EQ(type_of<uint16_t>(), UInt(16));
    EXPECT_EQ(type_of<float>(), Float(32));
    EXPECT_EQ(type_of<double>(), Float(64));
    EXPECT_EQ(type_of<bool>(), Bool());
    EXPECT_EQ(type_of<bfloat16>(), BFloat(16));
    EXPECT_EQ(type_of<float16>(), Float(16));
}
