#pragma once
// The sizes Tessera accepts from its inputs, in one place. Every reader (assembly text, binary
// programs, target and schedule JSON, .npy) and every op constructor checks declared sizes
// against these before it allocates or multiplies anything, so a malformed or hostile file is a
// tessera::Error naming the value and the limit — never an overflow, a std::bad_alloc, a stack
// overflow or minutes of work before the first message.
//
// Header-only (like error.h), so chipsim, which depends on nothing else of ours, shares it.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace tessera::limits {

/// The largest extent of one dimension. Shapes, loop bounds and indices are Int(32) expressions.
inline constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();

/// The most elements one tensor may have: its flat index is an Int(32) expression, as Halide's
/// buffers without large_buffers.
inline constexpr int64_t kMaxElements = std::numeric_limits<int32_t>::max();

/// The most bytes one tensor may occupy (4 GiB): more than any chip's memory, and above what an
/// allocation on a test or CI machine should be asked for by a file it merely reads.
inline constexpr int64_t kMaxTensorBytes = int64_t(1) << 32;

/// The most dimensions of a tensor read from a .npy file (NumPy's own NPY_MAXDIMS before 2.0).
inline constexpr int kMaxRank = 32;

/// The largest padding, stride or dilation of a windowed op (conv, pool): far beyond any extent
/// it could apply to, small enough that two paddings plus an extent stay within int32.
inline constexpr int kMaxWindowParameter = 1 << 24;

/// The deepest nesting of arrays and objects in a JSON document we read (targets, schedules).
/// Our formats nest at most 6 deep; the limit keeps nlohmann's recursive printing and
/// destruction of a value far from the stack's end.
inline constexpr int kMaxJsonDepth = 64;

/// The most repetitions one `repeat` of a chip program asks for.
inline constexpr int64_t kMaxRepeat = int64_t(1) << 24;

/// The most instructions a chip program may have once every `repeat` is expanded: the simulator
/// keeps each one in memory with its timing, so this bounds its memory to a few GiB.
inline constexpr int64_t kMaxExpandedInstructions = int64_t(1) << 24;

/// Elements and bytes of a tensor of shape [dims...] of `element_bytes`-byte elements, or a
/// description of the first limit the shape breaks ("dimension 2 is 0", "5000000000 elements
/// exceed the limit of 2147483647"). Never overflows: every product is checked against the
/// limit before it is formed.
struct TensorSize {
    int64_t elements = 0;
    int64_t bytes = 0;
};
template <typename Dims>
inline std::optional<TensorSize> tensor_size(const Dims &dims, int64_t element_bytes, std::string *problem,
                                             int64_t min_extent = 1) {
    TensorSize s{1, 0};
    int d = 0;
    for (int64_t extent : dims) {
        if (extent < min_extent || extent > kMaxExtent) {
            *problem = "dimension " + std::to_string(d) + " is " + std::to_string(extent) + ", expected " +
                       std::to_string(min_extent) + ".." + std::to_string(kMaxExtent);
            return std::nullopt;
        }
        // elements * extent > kMaxElements, tested without forming the product.
        if (extent != 0 && s.elements > kMaxElements / extent) {
            *problem = "the shape has more than " + std::to_string(kMaxElements) +
                       " elements (the most one tensor may have: its flat index is a 32-bit integer)";
            return std::nullopt;
        }
        s.elements *= extent;
        ++d;
    }
    s.bytes = s.elements * element_bytes; // <= 2^31 * 8: no overflow
    if (s.bytes > kMaxTensorBytes) {
        *problem = std::to_string(s.bytes) + " bytes exceed the limit of " + std::to_string(kMaxTensorBytes) +
                   " bytes per tensor";
        return std::nullopt;
    }
    return s;
}

} // namespace tessera::limits
