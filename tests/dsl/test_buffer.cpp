// Buffer<T>: shapes and strides, element access, views, conversions, deterministic random
// contents and comparison with per-dtype tolerances.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "tessera/buffer.h"

using namespace tessera;

namespace {

/// splitmix64 as published (Steele, Lea, Flood 2014), written out here independently of the
/// library so the test pins the sequence fill_random promises.
uint64_t splitmix64_next(uint64_t &state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

TEST(Buffer, DenseRowMajorShapeAndStrides) {
    Buffer<float> b({2, 3, 4});
    EXPECT_EQ(b.dimensions(), 3);
    EXPECT_EQ(b.shape(), (std::vector<int64_t>{2, 3, 4}));
    EXPECT_EQ(b.strides(), (std::vector<int64_t>{12, 4, 1}));
    EXPECT_EQ(b.number_of_elements(), 24);
    EXPECT_EQ(b.type(), Float(32));
    EXPECT_TRUE(b.is_dense());
    EXPECT_EQ(b.dim(1), 3);
    // Zero-filled.
    for (int i = 0; i < 24; ++i) EXPECT_EQ(b.data()[i], 0.0f);
    b(1, 2, 3) = 5.5f;
    EXPECT_EQ(b.data()[1 * 12 + 2 * 4 + 3], 5.5f);
    EXPECT_EQ(b.get_as_double({1, 2, 3}), 5.5);
}

TEST(Buffer, ScalarAndEmptyBuffers) {
    Buffer<int32_t> scalar(std::vector<int64_t>{});
    EXPECT_EQ(scalar.dimensions(), 0);
    EXPECT_EQ(scalar.number_of_elements(), 1);
    scalar.set_from_int({}, 7);
    EXPECT_EQ(scalar.get_as_int({}), 7);
    Buffer<float> empty({0, 5});
    EXPECT_TRUE(empty.defined());
    EXPECT_EQ(empty.number_of_elements(), 0);
    empty.fill_random(3); // nothing to fill, nothing to fail
    EXPECT_FALSE(Buffer<>().defined());
}

TEST(Buffer, MisuseThrowsWithTheIndexAndShape) {
    Buffer<float> b({2, 3});
    try {
        b(2, 0);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("outside [0, 2)"), std::string::npos) << e.what();
    }
    EXPECT_THROW(b(0), Error);
    try {
        b.get_as_double({1, 3});
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("(1, 3)"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    }
    EXPECT_THROW(b.dim(2), Error);
    EXPECT_THROW(Buffer<float>({2, -1}), Error);
    EXPECT_THROW(Buffer<>::view(Float(32), nullptr, {4}), Error);
    // A typed handle refuses a buffer of another element type.
    Buffer<> erased = Buffer<int8_t>({4});
    EXPECT_THROW(Buffer<float> wrong(erased), Error);
    Buffer<int8_t> right(erased);
    EXPECT_EQ(right.number_of_elements(), 4);
}

TEST(Buffer, ViewsShareMemoryAndHonourStrides) {
    float storage[6] = {0, 1, 2, 3, 4, 5}; // a 2x3 row-major matrix
    // Its transpose as a 3x2 view: element (i, j) is storage[j * 3 + i].
    Buffer<float> t = Buffer<>::view(Float(32), storage, {3, 2}, {1, 3});
    EXPECT_FALSE(t.is_dense());
    EXPECT_EQ(t(2, 1), 5.0f);
    EXPECT_EQ(t(1, 0), 1.0f);
    t(0, 1) = 30.0f;
    EXPECT_EQ(storage[3], 30.0f);
    // copy() makes a dense row-major deep copy of what the view shows.
    Buffer<float> c = t.copy();
    EXPECT_TRUE(c.is_dense());
    EXPECT_EQ(c.data()[0 * 2 + 1], 30.0f);
    EXPECT_EQ(c.data()[2 * 2 + 1], 5.0f);
    storage[5] = -1;
    EXPECT_EQ(c(2, 1), 5.0f);
    // Copies of a Buffer handle share storage.
    Buffer<float> a({2});
    Buffer<float> alias = a;
    alias(1) = 9;
    EXPECT_EQ(a(1), 9.0f);
}

TEST(Buffer, TypeErasedAccessConvertsLikeTheIR) {
    Buffer<> i8(Int(8), {3});
    i8.set_from_int({0}, 200);   // wraps: 200 - 256
    i8.set_from_double({1}, 300.7); // saturates
    i8.set_from_double({2}, -2.9);  // truncates towards zero
    EXPECT_EQ(i8.get_as_int({0}), -56);
    EXPECT_EQ(i8.get_as_int({1}), 127);
    EXPECT_EQ(i8.get_as_int({2}), -2);

    Buffer<> u8(UInt(8), {2});
    u8.set_from_double({0}, -5.0);
    u8.set_from_int({1}, 257);
    EXPECT_EQ(u8.get_as_int({0}), 0);
    EXPECT_EQ(u8.get_as_int({1}), 1);

    // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 and rounds to
    // even (1.0); 1 + 3 * 2^-8 is the tie between 1 + 2^-7 and 1 + 2^-6 and goes to the even 2^-6.
    Buffer<bfloat16> bf({2});
    bf.set_from_double({0}, 1.0 + std::ldexp(1.0, -8));
    bf.set_from_double({1}, 1.0 + 3 * std::ldexp(1.0, -8));
    EXPECT_EQ(bf(0).bits, 0x3F80);
    EXPECT_EQ(bf.get_as_double({1}), 1.0 + std::ldexp(1.0, -6));

    Buffer<float16> h({1});
    h.set_from_double({0}, 65520.0); // halfway between the largest fp16 (65504) and 2^16 → Inf
    EXPECT_TRUE(std::isinf(h.get_as_double({0})));

    Buffer<> flag(Bool(), {2});
    flag.set_from_double({0}, 0.25);
    EXPECT_EQ(flag.get_as_int({0}), 1);
    EXPECT_EQ(flag.get_as_int({1}), 0);

    Buffer<> i64(Int(64), {1});
    i64.set_from_int({0}, std::numeric_limits<int64_t>::min());
    EXPECT_EQ(i64.get_as_int({0}), std::numeric_limits<int64_t>::min());
}

TEST(Buffer, FillRandomFollowsSplitmix64InRowMajorOrder) {
    uint64_t state = 0;
    EXPECT_EQ(splitmix64_next(state), 0xE220A8397B1DCDAFull); // the published first output for seed 0

    Buffer<int32_t> ints({2, 3});
    ints.fill_random(42);
    Buffer<uint8_t> bytes({6});
    bytes.fill_random(42);
    Buffer<double> reals({6});
    reals.fill_random(42);
    state = 42;
    for (int k = 0; k < 6; ++k) {
        const uint64_t r = splitmix64_next(state);
        EXPECT_EQ(ints(k / 3, k % 3), static_cast<int32_t>(r >> 60) - 8) << k;
        EXPECT_EQ(bytes(k), static_cast<uint8_t>(r >> 60)) << k;
        EXPECT_EQ(reals(k), 2.0 * std::ldexp(static_cast<double>(r >> 11), -53) - 1.0) << k;
    }
}

TEST(Buffer, FillRandomRangesAndDeterminism) {
    Buffer<float> a({64, 64}), b({64, 64}), c({64, 64});
    a.fill_random(7);
    b.fill_random(7);
    c.fill_random(8);
    int differ = 0;
    float lo = 1, hi = -1;
    for (int i = 0; i < 64 * 64; ++i) {
        EXPECT_EQ(a.data()[i], b.data()[i]);
        differ += a.data()[i] != c.data()[i];
        lo = std::min(lo, a.data()[i]);
        hi = std::max(hi, a.data()[i]);
    }
    EXPECT_GT(differ, 4000);
    EXPECT_GE(lo, -1.0f);
    EXPECT_LT(hi, 1.0f);
    EXPECT_LT(lo, -0.99f); // 4096 uniform draws reach close to both ends
    EXPECT_GT(hi, 0.99f);

    Buffer<int8_t> small({1000});
    small.fill_random(1);
    std::set<int> seen;
    for (int i = 0; i < 1000; ++i) seen.insert(small(i));
    EXPECT_EQ(seen.size(), 16u);
    EXPECT_EQ(*seen.begin(), -8);
    EXPECT_EQ(*seen.rbegin(), 7);

    // A strided view gets the same values at the same coordinates as a dense buffer.
    std::vector<float> storage(12);
    Buffer<float> view = Buffer<>::view(Float(32), storage.data(), {3, 4}, {1, 3});
    Buffer<float> dense({3, 4});
    view.fill_random(5);
    dense.fill_random(5);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) EXPECT_EQ(view(i, j), dense(i, j));
}

TEST(Buffer, FillWritesEveryElement) {
    Buffer<bfloat16> b({3, 2});
    b.fill(1.5);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) EXPECT_EQ(b(i, j).to_float(), 1.5f);
}

TEST(Tolerance, OneTablePerType) {
    EXPECT_EQ(Tolerance::for_type(Int(32)).rtol, 0);
    EXPECT_EQ(Tolerance::for_type(Int(8)).atol, 0);
    EXPECT_EQ(Tolerance::for_type(Bool()).atol, 0);
    EXPECT_DOUBLE_EQ(Tolerance::for_type(Float(32)).rtol, 1e-5);
    EXPECT_DOUBLE_EQ(Tolerance::for_type(Float(16)).rtol, 1e-2);
    EXPECT_DOUBLE_EQ(Tolerance::for_type(BFloat(16)).rtol, 2e-2);
    EXPECT_DOUBLE_EQ(Tolerance::for_type(Float(64)).atol, 1e-12);
    // Scaled by sqrt(n) for a reduction of n terms.
    EXPECT_DOUBLE_EQ(Tolerance::for_type(Float(32), 256).atol, 16e-5);
}

TEST(Compare, IntegersExactlyFloatsWithinTolerance) {
    Buffer<int32_t> a({2, 2}), b({2, 2});
    a(1, 0) = 3;
    b(1, 0) = 3;
    EXPECT_TRUE(compare(a, b).equal);
    b(1, 1) = 1;
    Comparison r = compare(a, b);
    EXPECT_FALSE(r.equal);
    EXPECT_EQ(r.mismatches, 1);
    EXPECT_EQ(r.first_mismatch, (std::vector<int64_t>{1, 1}));
    EXPECT_NE(r.message.find("(1, 1)"), std::string::npos) << r.message;

    Buffer<float> x({3}), y({3});
    x(0) = 1.0f;
    y(0) = 1.0f + 5e-6f; // within rtol 1e-5 + atol 1e-5
    x(1) = 100.0f;
    y(1) = 100.0f * (1 + 5e-6f);
    EXPECT_TRUE(compare(x, y).equal) << compare(x, y).message;
    y(2) = 1e-3f; // 1e-3 away from 0: beyond atol
    r = compare(x, y);
    EXPECT_FALSE(r.equal);
    EXPECT_EQ(r.first_mismatch, (std::vector<int64_t>{2}));
    EXPECT_NEAR(r.max_abs_error, 1e-3, 1e-9);
    // An explicit tolerance overrides the table.
    EXPECT_TRUE(compare(x, y, Tolerance{0, 2e-3}).equal);
}

TEST(Compare, NaNInfAndMixedTypes) {
    Buffer<float> x({3}), y({3});
    x(0) = y(0) = std::numeric_limits<float>::quiet_NaN();
    x(1) = y(1) = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(compare(x, y).equal);
    y(1) = -std::numeric_limits<float>::infinity();
    EXPECT_FALSE(compare(x, y).equal);
    y(1) = x(1);
    y(2) = std::numeric_limits<float>::quiet_NaN();
    EXPECT_FALSE(compare(x, y).equal);

    // A bf16 result against an fp32 reference: the tolerance is the reference's unless given.
    Buffer<bfloat16> h({1});
    Buffer<float> ref({1});
    ref(0) = 1.003f;
    h(0) = bfloat16(1.003f); // 1.0 in bf16
    EXPECT_FALSE(compare(h, ref).equal);
    EXPECT_TRUE(compare(h, ref, Tolerance::for_type(BFloat(16))).equal);

    EXPECT_THROW(compare(Buffer<float>({2}), Buffer<float>({3})), Error);
}

} // namespace
