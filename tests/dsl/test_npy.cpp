// Buffer <-> .npy: a file written byte for byte from NumPy's documented format reads back
// right, every dtype round-trips, and NumPy itself reads what Buffer::save_npy writes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "tessera/buffer.h"

using namespace tessera;

namespace {

std::string temp_path(const std::string &name) {
    const auto dir = std::filesystem::temp_directory_path() / ("tessera_test_npy_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

/// A version 1.0 .npy file as NumPy's format document describes it: magic, version, a
/// little-endian uint16 header length, a Python dict literal padded with spaces and ended by
/// '\n' so the data starts at a multiple of 64 bytes, then the raw little-endian data.
std::string handwritten_npy(const std::string &dict, const std::string &data) {
    std::string header = dict;
    const size_t preamble = 10;
    while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = "\x93NUMPY";
    bytes += '\x01';
    bytes += '\x00';
    bytes += static_cast<char>(header.size() & 0xFF);
    bytes += static_cast<char>(header.size() >> 8);
    return bytes + header + data;
}

TEST(Npy, ReadsAHandwrittenFile) {
    // int16 [[1, -2, 3], [300, -32768, 32767]], little-endian.
    const std::string data("\x01\x00\xFE\xFF\x03\x00\x2C\x01\x00\x80\xFF\x7F", 12);
    const std::string path = temp_path("handwritten.npy");
    std::ofstream(path, std::ios::binary) << handwritten_npy("{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }", data);
    Buffer<> b = Buffer<>::load_npy(path);
    EXPECT_EQ(b.type(), Int(16));
    ASSERT_EQ(b.shape(), (std::vector<int64_t>{2, 3}));
    Buffer<int16_t> t(b);
    EXPECT_EQ(t(0, 0), 1);
    EXPECT_EQ(t(0, 1), -2);
    EXPECT_EQ(t(0, 2), 3);
    EXPECT_EQ(t(1, 0), 300);
    EXPECT_EQ(t(1, 1), -32768);
    EXPECT_EQ(t(1, 2), 32767);
}

TEST(Npy, ReadsAHandwrittenFloatScalarAndBool) {
    const float value = -2.5f; // 0xC0200000
    const std::string path = temp_path("scalar.npy");
    std::ofstream(path, std::ios::binary) << handwritten_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
                                                             std::string(reinterpret_cast<const char *>(&value), 4));
    Buffer<> s = Buffer<>::load_npy(path);
    EXPECT_EQ(s.dimensions(), 0);
    EXPECT_EQ(s.get_as_double({}), -2.5);

    const std::string bpath = temp_path("bool.npy");
    std::ofstream(bpath, std::ios::binary) << handwritten_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                                              std::string("\x01\x00\x01", 3));
    Buffer<> b = Buffer<>::load_npy(bpath);
    EXPECT_EQ(b.type(), Bool());
    EXPECT_EQ(b.get_as_int({0}), 1);
    EXPECT_EQ(b.get_as_int({1}), 0);
}

TEST(Npy, EveryTypeRoundTrips) {
    for (Type t : {Int(8), Int(16), Int(32), Int(64), UInt(8), UInt(16), UInt(32), UInt(64), Float(16), Float(32),
                   Float(64), Bool()}) {
        Buffer<> b(t, {3, 5});
        b.fill_random(11);
        const std::string path = temp_path("roundtrip_" + t.to_string() + ".npy");
        b.save_npy(path);
        Buffer<> back = Buffer<>::load_npy(path);
        EXPECT_EQ(back.type(), t);
        EXPECT_EQ(back.shape(), b.shape());
        Comparison c = compare(back, b, Tolerance{});
        EXPECT_TRUE(c.equal) << t.to_string() << ": " << c.message;
    }
}

TEST(Npy, StridedViewsAreSavedInLogicalOrder) {
    int32_t storage[6] = {0, 1, 2, 3, 4, 5};
    Buffer<int32_t> transposed = Buffer<>::view(Int(32), storage, {3, 2}, {1, 3});
    const std::string path = temp_path("view.npy");
    transposed.save_npy(path);
    Buffer<int32_t> back(Buffer<>::load_npy(path));
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) EXPECT_EQ(back(i, j), storage[j * 3 + i]);
}

TEST(Npy, BFloat16IsWrittenAsFloat32) {
    Buffer<bfloat16> b({4});
    b.fill_random(3);
    const std::string path = temp_path("bf16.npy");
    b.save_npy(path);
    Buffer<> back = Buffer<>::load_npy(path);
    ASSERT_EQ(back.type(), Float(32));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(back.get_as_double({i}), b(i).to_float());
}

TEST(Npy, ErrorsNameTheFile) {
    const std::string missing = temp_path("does_not_exist.npy");
    try {
        Buffer<>::load_npy(missing);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("does_not_exist.npy"), std::string::npos) << e.what();
    }
    const std::string complex_path = temp_path("complex.npy");
    std::ofstream(complex_path, std::ios::binary)
        << handwritten_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0'));
    try {
        Buffer<>::load_npy(complex_path);
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("complex.npy"), std::string::npos) << e.what();
    }
}

TEST(Npy, NumPyReadsWhatSaveNpyWrites) {
    // Debian's python3-numpy belongs to /usr/bin/python3, which a python3 earlier on PATH
    // (pyenv, a venv) may hide.
    std::string python;
    for (const char *candidate : {"/usr/bin/python3", "python3"})
        if (std::system((std::string(candidate) + " -c 'import numpy' > /dev/null 2>&1").c_str()) == 0) {
            python = candidate;
            break;
        }
    if (python.empty()) GTEST_SKIP() << "python3 with numpy not available";
    Buffer<float> b({2, 3});
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) b(i, j) = static_cast<float>(i * 10 + j) + 0.5f;
    const std::string path = temp_path("for_numpy.npy");
    b.save_npy(path);
    const std::string check = python + " -c \"import numpy as np, sys; a = np.load('" + path +
                              "'); sys.exit(0 if a.dtype == np.float32 and a.shape == (2, 3) and "
                              "a[1, 2] == 12.5 and a[0, 1] == 1.5 else 1)\"";
    EXPECT_EQ(std::system(check.c_str()), 0) << check;

    Buffer<int8_t> i8({4});
    i8(0) = -128;
    i8(3) = 127;
    const std::string ipath = temp_path("int8_for_numpy.npy");
    i8.save_npy(ipath);
    const std::string icheck = python + " -c \"import numpy as np, sys; a = np.load('" + ipath +
                               "'); sys.exit(0 if a.dtype == np.int8 and list(a) == [-128, 0, 0, 127] else 1)\"";
    EXPECT_EQ(std::system(icheck.c_str()), 0) << icheck;
}

} // namespace
