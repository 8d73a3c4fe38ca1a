#pragma once
// Element types the chips move and compute, and the host-side conversions chipsim needs.
// chipsim depends on nothing else of Tessera, so bf16/fp16 rounding lives here, once.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::chipsim {

/// An element type of chip memory. Names follow the CLI: int8 uint8 int16 int32 bf16 fp16 fp32.
enum class DType : uint8_t { Int8, UInt8, Int16, Int32, BF16, FP16, FP32 };

/// Bytes per element.
int dtype_bytes(DType t);
/// The canonical name ("int8", "bf16", ...).
const char *dtype_name(DType t);
/// Parses a canonical name; nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name);
/// The NumPy descr of a dtype ("|i1", "<f4", ...); bf16 has no NumPy type and is stored as "<u2".
const char *dtype_npy_descr(DType t);
/// True for bf16, fp16 and fp32.
bool dtype_is_float(DType t);

/// fp32 -> bf16 bits, round to nearest even; NaN stays a quiet NaN.
uint16_t float_to_bf16(float f);
/// bf16 bits -> fp32 (exact).
float bf16_to_float(uint16_t h);
/// fp32 -> IEEE binary16 bits, round to nearest even, overflow to infinity, subnormals kept.
uint16_t float_to_fp16(float f);
/// IEEE binary16 bits -> fp32 (exact).
float fp16_to_float(uint16_t h);

/// Reads one element of type t at p as fp32 (integers convert exactly up to 2^24).
float load_as_float(DType t, const uint8_t *p);
/// Reads one element of type t at p as int32 (floats truncate toward zero, saturating).
int32_t load_as_int(DType t, const uint8_t *p);
/// Writes v as type t at p: floats round to nearest even, integers round to nearest even and
/// saturate to the type's range (the chips' convert-on-store rule).
void store_from_float(DType t, uint8_t *p, float v);
/// Writes v as type t at p, saturating to integer ranges (exact for int32).
void store_from_int(DType t, uint8_t *p, int64_t v);

} // namespace tessera::chipsim
