#pragma once
// What the importer's files share, private to tessera_onnx: TensorProto ↔ Buffer conversion and
// ONNX element types.
#include <optional>
#include <string>

#include <onnx/onnx_pb.h>

#include "tessera/buffer.h"
#include "tessera/error.h"
#include "tessera/type.h"

namespace tessera::onnx::internal {

/// The Tessera type of an ONNX TensorProto::DataType, or nullopt (string, complex, ...).
std::optional<Type> element_type(int data_type);
/// "FLOAT", "STRING", ... for messages.
std::string data_type_name(int data_type);

/// The tensor's contents as a buffer of its type and shape (a scalar as shape [1] when
/// `scalar_as_vector`, else []). Checks the shape against tessera/limits.h and the data's size
/// against the shape before allocating; errors start with `where` ("initializer 'w'").
Buffer<> tensor_to_buffer(const ::onnx::TensorProto &tensor, const std::string &where);

/// "[1, 3, 224, 224]" for messages.
std::string shape_text(const std::vector<int64_t> &shape);
/// The element count of a shape (the caller has checked it against tensor/limits.h).
int64_t product(const std::vector<int64_t> &shape);

/// A dense copy of `b` with another shape of the same element count.
Buffer<> reshaped(const Buffer<> &b, const std::vector<int64_t> &shape);

} // namespace tessera::onnx::internal
