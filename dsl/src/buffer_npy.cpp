// Buffer <-> .npy: the mapping between DSL element types and NumPy type strings. The file
// format itself is npy.cpp's.
#include <cstring>

#include "tessera/buffer.h"
#include "tessera/internal/element_io.h"
#include "tessera/npy.h"

namespace tessera {

namespace {

/// NumPy's type string for a DSL type. NumPy has no bfloat16, so bf16 is written as float32
/// (every bf16 value is exactly an fp32 value).
std::string npy_descr(Type t) {
    switch (t.code()) {
    case TypeCode::Bool: return "|b1";
    case TypeCode::Int: return t.bits() == 8 ? "|i1" : "<i" + std::to_string(t.bytes());
    case TypeCode::UInt: return t.bits() == 8 ? "|u1" : "<u" + std::to_string(t.bytes());
    case TypeCode::Float: return "<f" + std::to_string(t.bytes());
    case TypeCode::BFloat: return "<f4";
    }
    return "?";
}

/// The DSL type of a NumPy type string; throws naming the file for anything else.
Type type_of_descr(const std::string &descr, const std::string &path) {
    // Byte-sized types may be written with any byte-order mark.
    std::string d = descr;
    if (!d.empty() && (d[0] == '<' || d[0] == '|' || d[0] == '=')) d = d.substr(1);
    if (d == "b1") return Bool();
    if (d == "i1") return Int(8);
    if (d == "i2") return Int(16);
    if (d == "i4") return Int(32);
    if (d == "i8") return Int(64);
    if (d == "u1") return UInt(8);
    if (d == "u2") return UInt(16);
    if (d == "u4") return UInt(32);
    if (d == "u8") return UInt(64);
    if (d == "f2") return Float(16);
    if (d == "f4") return Float(32);
    if (d == "f8") return Float(64);
    throw Error("Buffer::load_npy: " + path + " holds dtype '" + descr +
                "', which has no Tessera type; use bool, int8/16/32/64, uint8/16/32/64 or float16/32/64");
}

} // namespace

Buffer<> Buffer<void>::load_npy(const std::string &path) {
    NpyArray a = read_npy(path);
    const Type t = type_of_descr(a.descr, path);
    Buffer<> b(t, a.shape);
    const size_t bytes = static_cast<size_t>(b.number_of_elements()) * static_cast<size_t>(t.bytes());
    if (a.data.size() != bytes)
        throw Error("Buffer::load_npy: " + path + " holds " + std::to_string(a.data.size()) + " data bytes, expected " +
                    std::to_string(bytes));
    if (bytes) std::memcpy(b.data(), a.data.data(), bytes);
    if (t.is_bool())
        for (size_t i = 0; i < bytes; ++i) b.data_[i] = b.data_[i] != 0; // normalise to 0/1
    return b;
}

void Buffer<void>::save_npy(const std::string &path) const {
    if (!defined()) throw Error("Buffer::save_npy: cannot save an undefined buffer to " + path);
    NpyArray a;
    a.descr = npy_descr(type_);
    a.shape = shape_;
    const Buffer<> dense = copy();
    const int64_t n = dense.number_of_elements();
    if (type_.is_bfloat()) {
        a.data.resize(static_cast<size_t>(n) * 4);
        for (int64_t i = 0; i < n; ++i) {
            const float f = static_cast<float>(internal::load_as_double(type_, dense.data_ + i * 2));
            std::memcpy(a.data.data() + i * 4, &f, 4);
        }
    } else {
        a.data.assign(dense.data_, dense.data_ + n * type_.bytes());
    }
    write_npy(path, a);
}

} // namespace tessera
