// ONNX TensorProto → Buffer: initializers, Constant nodes and the backend tests' .pb files.
#include <cstring>
#include <fstream>
#include <iterator>

#include "onnx_internal.h"
#include "tessera/error.h"
#include "tessera/limits.h"
#include "tessera/onnx.h"

namespace tessera::onnx {
namespace internal {

using ::onnx::TensorProto;

std::optional<Type> element_type(int data_type) {
    switch (data_type) {
    case TensorProto::FLOAT: return Float(32);
    case TensorProto::DOUBLE: return Float(64);
    case TensorProto::FLOAT16: return Float(16);
    case TensorProto::BFLOAT16: return BFloat(16);
    case TensorProto::INT8: return Int(8);
    case TensorProto::INT16: return Int(16);
    case TensorProto::INT32: return Int(32);
    case TensorProto::INT64: return Int(64);
    case TensorProto::UINT8: return UInt(8);
    case TensorProto::UINT16: return UInt(16);
    case TensorProto::UINT32: return UInt(32);
    case TensorProto::UINT64: return UInt(64);
    case TensorProto::BOOL: return Bool();
    default: return std::nullopt;
    }
}

std::string data_type_name(int data_type) {
    if (TensorProto::DataType_IsValid(data_type)) return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
    return "data type " + std::to_string(data_type);
}

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

int64_t product(const std::vector<int64_t> &shape) {
    int64_t p = 1;
    for (int64_t e : shape) p *= e;
    return p;
}

Buffer<> reshaped(const Buffer<> &b, const std::vector<int64_t> &shape) {
    Buffer<> dense = b.is_dense() ? b : b.copy();
    Buffer<> out(b.type(), shape);
    if (out.number_of_elements() != dense.number_of_elements())
        throw InternalError("reshaped: element counts differ");
    if (out.number_of_elements() > 0)
        std::memcpy(out.data(), dense.data(), static_cast<size_t>(out.number_of_elements() * b.type().bytes()));
    return out;
}

namespace {

/// Copies a repeated field of numbers into the buffer element by element.
template <typename Field, typename Set> void copy_field(const Field &field, int64_t count, Set set) {
    for (int64_t i = 0; i < count; ++i) set(i, field.Get(static_cast<int>(i)));
}

} // namespace

Buffer<> tensor_to_buffer(const TensorProto &t, const std::string &where) {
    const std::optional<Type> type = element_type(t.data_type());
    if (!type)
        throw Error(where + " has the element type " + data_type_name(t.data_type()) +
                    "; supported: FLOAT, DOUBLE, FLOAT16, BFLOAT16, INT8..INT64, UINT8..UINT64, BOOL");
    if (t.data_location() == TensorProto::EXTERNAL)
        throw Error(where + " keeps its data in an external file; only data inside the model is supported");
    if (t.dims_size() > limits::kMaxRank)
        throw Error(where + " has rank " + std::to_string(t.dims_size()) + "; at most " + std::to_string(limits::kMaxRank) + " is supported");
    std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
    std::string problem;
    const auto size = limits::tensor_size(shape, type->bytes(), &problem, 0);
    if (!size) throw Error(where + ": " + problem);
    Buffer<> b(*type, shape);
    const int64_t n = size->elements;
    const int64_t bytes = n * type->bytes();
    if (t.has_raw_data()) {
        if (static_cast<int64_t>(t.raw_data().size()) != bytes)
            throw Error(where + " has " + std::to_string(t.raw_data().size()) + " bytes of raw data; its shape and type (" +
                        type->to_string() + ") need " + std::to_string(bytes));
        if (bytes > 0) std::memcpy(b.data(), t.raw_data().data(), static_cast<size_t>(bytes));
        return b;
    }
    // Typed fields: the field's length must equal the element count (before anything is read).
    auto check = [&](int64_t have, const char *field) {
        if (have != n)
            throw Error(where + " has " + std::to_string(have) + " values in " + field + "; its shape needs " + std::to_string(n));
    };
    std::vector<int64_t> coord(shape.size());
    auto at = [&](int64_t i) {
        for (size_t d = shape.size(); d-- > 0;) {
            coord[d] = shape[d] ? i % shape[d] : 0;
            i = shape[d] ? i / shape[d] : 0;
        }
        return coord;
    };
    switch (t.data_type()) {
    case TensorProto::FLOAT:
        check(t.float_data_size(), "float_data");
        copy_field(t.float_data(), n, [&](int64_t i, float v) { b.set_from_double(at(i), v); });
        break;
    case TensorProto::DOUBLE:
        check(t.double_data_size(), "double_data");
        copy_field(t.double_data(), n, [&](int64_t i, double v) { b.set_from_double(at(i), v); });
        break;
    case TensorProto::INT64:
        check(t.int64_data_size(), "int64_data");
        copy_field(t.int64_data(), n, [&](int64_t i, int64_t v) { b.set_from_int(at(i), v); });
        break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
        check(t.uint64_data_size(), "uint64_data");
        copy_field(t.uint64_data(), n, [&](int64_t i, uint64_t v) { b.set_from_int(at(i), static_cast<int64_t>(v)); });
        break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
        // int32_data holds the 16-bit patterns.
        check(t.int32_data_size(), "int32_data");
        for (int64_t i = 0; i < n; ++i) {
            const uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
            std::memcpy(static_cast<uint8_t *>(b.data()) + 2 * i, &bits, 2);
        }
        break;
    default: // INT8..INT32, UINT8, UINT16, BOOL: int32_data
        check(t.int32_data_size(), "int32_data");
        copy_field(t.int32_data(), n, [&](int64_t i, int32_t v) { b.set_from_int(at(i), v); });
        break;
    }
    return b;
}

} // namespace internal

Buffer<> parse_tensor(const std::vector<uint8_t> &bytes, const std::string &origin) {
    ::onnx::TensorProto t;
    if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw Error(origin + ": not a serialised ONNX TensorProto (truncated or malformed protobuf)");
    return internal::tensor_to_buffer(t, origin + ": tensor '" + t.name() + "'");
}

namespace {
std::vector<uint8_t> read_bytes(const std::string &path, const std::string &what) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open " + what + " '" + path + "'");
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
} // namespace

Buffer<> read_tensor_file(const std::string &path) { return parse_tensor(read_bytes(path, "tensor file"), path); }

std::string tensor_file_name(const std::string &path) {
    const std::vector<uint8_t> bytes = read_bytes(path, "tensor file");
    ::onnx::TensorProto t;
    if (!t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
        throw Error(path + ": not a serialised ONNX TensorProto (truncated or malformed protobuf)");
    return t.name();
}

} // namespace tessera::onnx
