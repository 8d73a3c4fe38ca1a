#pragma once
// Helpers for the operator-library tests: random inputs, buffers as flat row-major vectors of
// doubles (so the expected results are computed by plain loops in the tests, independently of
// the evaluator), and comparisons with the project's per-dtype tolerances.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/error.h"
#include "tessera/ops.h"

namespace ops_test {

using tessera::Buffer;
using tessera::Type;

/// A buffer of `type` and `shape` with deterministic random contents (fill_random: floats in
/// [-1, 1), integers in [-8, 8)).
inline Buffer<> random_buffer(Type type, std::vector<int64_t> shape, uint64_t seed) {
    Buffer<> b(type, std::move(shape));
    b.fill_random(seed);
    return b;
}

/// Number of elements of a shape.
inline int64_t count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

/// Calls fn(coords) for every point of `shape`, in row-major order.
inline void for_each_index(const std::vector<int64_t> &shape, const std::function<void(const std::vector<int64_t> &)> &fn) {
    if (count(shape) == 0) return;
    std::vector<int64_t> c(shape.size(), 0);
    while (true) {
        fn(c);
        int d = static_cast<int>(shape.size()) - 1;
        while (d >= 0 && ++c[static_cast<size_t>(d)] == shape[static_cast<size_t>(d)]) c[static_cast<size_t>(d--)] = 0;
        if (d < 0) return;
    }
}

/// The buffer's elements as doubles, dense row-major.
inline std::vector<double> values(const Buffer<> &b) {
    std::vector<double> v;
    v.reserve(static_cast<size_t>(b.number_of_elements()));
    for_each_index(b.shape(), [&](const std::vector<int64_t> &c) { v.push_back(b.get_as_double(c)); });
    return v;
}

/// A Float(64) buffer holding `v` (dense row-major) — the expected result of a test's loops.
inline Buffer<> expected_buffer(const std::vector<int64_t> &shape, const std::vector<double> &v) {
    Buffer<> b(tessera::Float(64), shape);
    size_t i = 0;
    for_each_index(shape, [&](const std::vector<int64_t> &c) { b.set_from_double(c, v[i++]); });
    return b;
}

/// Expects `actual` to have `shape` and to equal `expected` (row-major values) within the
/// tolerance of `tol_type` for a reduction of `reduction_length` terms.
inline void expect_matches(const Buffer<> &actual, const std::vector<int64_t> &shape, const std::vector<double> &expected,
                           Type tol_type, int64_t reduction_length = 1) {
    ASSERT_EQ(actual.shape(), shape);
    const tessera::Comparison cmp = tessera::compare(actual, expected_buffer(shape, expected),
                                                     tessera::Tolerance::for_type(tol_type, reduction_length));
    EXPECT_TRUE(cmp.equal) << cmp.message;
}

/// Row-major flat offset of `c` in `shape`.
inline int64_t offset(const std::vector<int64_t> &shape, const std::vector<int64_t> &c) {
    int64_t o = 0;
    for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + c[d];
    return o;
}

/// Expects `fn` to throw tessera::Error whose message contains every string in `parts`.
#define EXPECT_OPS_ERROR(statement, ...)                                                                   \
    do {                                                                                                 \
        try {                                                                                            \
            statement;                                                                                   \
            ADD_FAILURE() << "expected tessera::Error from: " #statement;                                \
        } catch (const tessera::Error &e) {                                                              \
            for (const std::string &part : std::vector<std::string>{__VA_ARGS__})                        \
                EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr(part));                          \
        }                                                                                                \
    } while (0)

} // namespace ops_test
