#pragma once
// Reading and writing NumPy .npy files (format versions 1.0-3.0, C order, little-endian or
// byte-sized types) on a plain struct. Buffer<T> and the CLI build on this; it knows nothing of
// Tessera types, so any tool can use it.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

/// The contents of one .npy file.
struct NpyArray {
    std::string descr;          ///< NumPy type string: "|i1", "|u1", "<i2", "<u2", "<i4", "<f2", "<f4", "<f8", ...
    std::vector<int64_t> shape; ///< C order, outermost first; empty for a scalar.
    std::vector<uint8_t> data;  ///< Raw little-endian element bytes, product(shape) * item_size.

    /// Bytes per element of `descr` (1, 2, 4 or 8).
    int item_size() const;
    /// Number of elements: the product of shape (1 for a scalar).
    int64_t element_count() const;
};

/// Reads a .npy file. Throws tessera::Error naming the file on a missing file, bad magic,
/// unsupported version, Fortran order, big-endian or unknown descr, or truncated data.
NpyArray read_npy(const std::string &path);
/// Parses .npy bytes; `origin` names the source in errors.
NpyArray parse_npy(const std::vector<uint8_t> &bytes, const std::string &origin);
/// Writes a .npy file (version 1.0, C order). Throws tessera::Error naming the file when the
/// descr is unsupported, the data size does not match the shape, or the file cannot be written.
void write_npy(const std::string &path, const NpyArray &array);
/// The bytes write_npy would write.
std::vector<uint8_t> serialize_npy(const NpyArray &array, const std::string &origin = "<npy>");

} // namespace tessera
