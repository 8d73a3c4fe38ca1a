#pragma once
// Scalar types of the DSL. Every Expr has one; there are no vector types in the IR — vector
// width is a property of a loop (ForKind::Vectorized), not of a value.
#include <cstdint>
#include <string>

namespace tessera {

/// The kind of a scalar type. BFloat is a distinct code (not Float(16)) because bf16 and fp16
/// share a width but not a format.
enum class TypeCode : uint8_t { Int, UInt, Float, BFloat, Bool };

/// A scalar type: a code and a width in bits. Valid types: Int(8/16/32/64), UInt(8/16/32/64),
/// Float(16/32/64), BFloat(16), Bool() (1 bit, stored as one byte).
class Type {
public:
    constexpr Type() = default;
    /// Checks the combination; throws tessera::Error for e.g. Float(8) or Int(7).
    Type(TypeCode code, int bits);

    TypeCode code() const { return code_; }
    int bits() const { return bits_; }
    /// Storage size in bytes (Bool is 1).
    int bytes() const { return bits_ == 1 ? 1 : bits_ / 8; }

    bool is_int() const { return code_ == TypeCode::Int; }
    bool is_uint() const { return code_ == TypeCode::UInt; }
    /// Int or UInt.
    bool is_integer() const { return is_int() || is_uint(); }
    /// Float or BFloat.
    bool is_float() const { return code_ == TypeCode::Float || code_ == TypeCode::BFloat; }
    bool is_bfloat() const { return code_ == TypeCode::BFloat; }
    bool is_bool() const { return code_ == TypeCode::Bool; }

    /// Whether every value of `other` is exactly representable in this type.
    bool can_represent(Type other) const;
    /// Whether the integer/float constant is exactly representable in this type.
    bool can_represent(int64_t value) const;
    bool can_represent(double value) const;

    /// Largest and smallest finite values, as doubles (exact for every type up to 53 bits).
    double max_value() const;
    double min_value() const;

    /// Canonical short name used by the CLI, JSON and printer: int8 int16 int32 int64 uint8
    /// uint16 uint32 uint64 fp16 fp32 fp64 bf16 bool.
    std::string to_string() const;
    /// Inverse of to_string(); throws tessera::Error listing the valid names.
    static Type parse(const std::string &name);

    bool operator==(const Type &o) const { return code_ == o.code_ && bits_ == o.bits_; }
    bool operator!=(const Type &o) const { return !(*this == o); }

private:
    TypeCode code_ = TypeCode::Int;
    int bits_ = 32;
};

Type Int(int bits);
Type UInt(int bits);
Type Float(int bits);
Type BFloat(int bits = 16);
Type Bool();

} // namespace tessera

namespace tessera {

struct bfloat16;
struct float16;

/// The DSL type of a host scalar type: type_of<float>() == Float(32), etc.
template <typename T> Type type_of();
template <> inline Type type_of<int8_t>() { return Int(8); }
template <> inline Type type_of<int16_t>() { return Int(16); }
template <> inline Type type_of<int32_t>() { return Int(32); }
template <> inline Type type_of<int64_t>() { return Int(64); }
template <> inline Type type_of<uint8_t>() { return UInt(8); }
template <> inline Type type_of<uint16_t>() { return UInt(16); }
template <> inline Type type_of<uint32_t>() { return UInt(32); }
template <> inline Type type_of<uint64_t>() { return UInt(64); }
template <> inline Type type_of<float>() { return Float(32); }
template <> inline Type type_of<double>() { return Float(64); }
template <> inline Type type_of<bool>() { return Bool(); }
template <> inline Type type_of<bfloat16>() { return BFloat(16); }
template <> inline Type type_of<float16>() { return Float(16); }

} // namespace tessera
