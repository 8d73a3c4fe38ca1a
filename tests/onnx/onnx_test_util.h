#pragma once
// Helpers for the ONNX suites: comparing a result with an expected tensor under the tolerance
// of issue 16 (fp32: 1e-4 × max(1, max|y|); integers and bools exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "test_support.h"

namespace onnx_test {

/// Every element of a buffer, row-major, as doubles.
inline std::vector<double> flat_values(const tessera::Buffer<> &b) {
    std::vector<double> v;
    std::vector<int64_t> c(b.shape().size(), 0);
    const int64_t n = b.number_of_elements();
    for (int64_t i = 0; i < n; ++i) {
        v.push_back(b.get_as_double(c));
        for (size_t d = c.size(); d-- > 0;) {
            if (++c[d] < b.shape()[d]) break;
            c[d] = 0;
        }
    }
    return v;
}

/// An empty string when `actual` matches `expected` (shape, then values within the tolerance
/// of the expected type: fp32/fp64 1e-4 × max(1, max|y|), fp16/bf16 1e-2 × max(1, max|y|),
/// integers and bools exactly); else what differs.
inline std::string compare(const tessera::Buffer<> &actual, const tessera::Buffer<> &expected) {
    if (actual.shape() != expected.shape()) {
        auto str = [](const std::vector<int64_t> &s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
            return r + "]";
        };
        return "shape " + str(actual.shape()) + " != expected " + str(expected.shape());
    }
    const std::vector<double> a = flat_values(actual), e = flat_values(expected);
    double max_abs = 1;
    for (double v : e)
        if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
    const tessera::Type t = expected.type();
    const double tol = !t.is_float() ? 0 : (t.bits() == 16 ? 1e-2 : 1e-4) * max_abs;
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(e[i]) && std::isnan(a[i])) continue;
        if (std::isinf(e[i]) && a[i] == e[i]) continue;
        if (!(std::fabs(a[i] - e[i]) <= tol))
            return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " != expected " + std::to_string(e[i]) +
                   " (tolerance " + std::to_string(tol) + ")";
    }
    return "";
}

/// The small models of small_models.py (Debian's python3-onnx), written once per process into
/// the directory of the test that first asks.
inline const std::filesystem::path &small_models_dir() {
    static const std::filesystem::path dir = [] {
        const std::filesystem::path d = tessera_test::unique_temp_dir();
        const auto r = tessera_test::run_command("/usr/bin/python3 '" TESSERA_SOURCE_DIR "/tests/onnx/small_models.py' '" + d.string() + "'");
        EXPECT_EQ(r.status, 0) << r.err;
        return d;
    }();
    return dir;
}

/// A fresh directory of the running test's own, beside (never inside) the one unique_temp_dir()
/// gives it, so that it cannot remove the models small_models_dir() may have written there.
inline std::filesystem::path work_dir() {
    const std::filesystem::path dir = tessera_test::test_scoped_path().string() + "_work";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

/// "" when `actual` is within `relative` × max(1, max|expected|) of `expected` everywhere (the
/// chips' bf16 tolerance with relative = 3e-2).
inline std::string within(const tessera::Buffer<> &actual, const tessera::Buffer<> &expected, double relative) {
    if (actual.shape() != expected.shape()) return "shapes differ";
    const std::vector<double> a = flat_values(actual), e = flat_values(expected);
    double scale = 1;
    for (double v : e)
        if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(e[i]) && std::isnan(a[i])) continue; // NaN in, NaN out (a Cast of NaN)
        if (std::isinf(e[i]) && a[i] == e[i]) continue;
        if (!(std::fabs(a[i] - e[i]) <= relative * scale))
            return "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs reference " + std::to_string(e[i]);
    }
    return "";
}

} // namespace onnx_test
