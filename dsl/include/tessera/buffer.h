#pragma once
// Buffer<T>: an n-dimensional array on the host, owning or a view, row-major by default
// (shape and strides listed outermost first; strides in elements). Buffer<> (= Buffer<void>)
// is the type-erased form that realize() returns and bindings take.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tessera/error.h"
#include "tessera/half.h"
#include "tessera/type.h"

namespace tessera {

template <typename T = void> class Buffer;

/// The type-erased buffer: element type, shape, strides, and shared storage.
template <> class Buffer<void> {
public:
    Buffer() = default;
    /// Allocates a zero-filled, dense row-major buffer.
    Buffer(Type type, std::vector<int64_t> shape);
    /// A view of existing memory (not owned); strides in elements, empty = dense row-major.
    static Buffer<> view(Type type, void *data, std::vector<int64_t> shape, std::vector<int64_t> strides = {});

    bool defined() const { return data_ != nullptr || type_set_; }
    Type type() const { return type_; }
    int dimensions() const { return static_cast<int>(shape_.size()); }
    const std::vector<int64_t> &shape() const { return shape_; }
    const std::vector<int64_t> &strides() const { return strides_; }
    int64_t dim(int d) const;
    int64_t number_of_elements() const;
    /// Whether strides are dense row-major.
    bool is_dense() const;

    void *data() const { return data_; }
    /// Byte address of the element at these coordinates; throws naming the index if out of range.
    void *address_of(const std::vector<int64_t> &coords) const;
    /// Element at coords converted to double / int64 (exact for integers up to 53 bits).
    double get_as_double(const std::vector<int64_t> &coords) const;
    int64_t get_as_int(const std::vector<int64_t> &coords) const;
    /// Stores `value` converted to the element type (rounding to nearest even for bf16/fp16,
    /// wrapping for integers).
    void set_from_double(const std::vector<int64_t> &coords, double value);
    void set_from_int(const std::vector<int64_t> &coords, int64_t value);

    /// A dense row-major deep copy.
    Buffer<> copy() const;
    /// Deterministic pseudo-random contents for a seed: floats uniform in [-1, 1), integers
    /// uniform over a small range that cannot overflow typical accumulations ([-8, 8) signed,
    /// [0, 16) unsigned), bools 0/1.
    void fill_random(uint64_t seed);
    void fill(double value);

    /// Reads / writes a NumPy .npy file (C order; the element type comes from the file's dtype:
    /// bool, int8..int64, uint8..uint64, float16/32/64). NumPy has no bfloat16, so a bf16
    /// buffer is written as float32 (exactly) and reads back as a Float(32) buffer. Errors
    /// name the file.
    static Buffer<> load_npy(const std::string &path);
    void save_npy(const std::string &path) const;

protected:
    Type type_;
    bool type_set_ = false;
    std::vector<int64_t> shape_, strides_;
    std::shared_ptr<uint8_t[]> storage_;
    uint8_t *data_ = nullptr;
};

/// A typed buffer. Converts to and from Buffer<> (checking the element type).
template <typename T> class Buffer : public Buffer<void> {
public:
    Buffer() = default;
    explicit Buffer(std::vector<int64_t> shape) : Buffer<void>(type_of<T>(), std::move(shape)) {}
    Buffer(std::initializer_list<int64_t> shape) : Buffer<void>(type_of<T>(), std::vector<int64_t>(shape)) {}
    /// From a type-erased buffer; throws tessera::Error if the element types differ.
    Buffer(const Buffer<void> &other) : Buffer<void>(other) {
        if (other.defined() && other.type() != type_of<T>())
            throw Error("Buffer: cannot view a " + other.type().to_string() + " buffer as " +
                        type_of<T>().to_string());
    }
    T *data() const { return reinterpret_cast<T *>(data_); }

    template <typename... Args> T &operator()(Args... coords) const {
        static_assert(sizeof...(Args) > 0);
        const int64_t c[] = {static_cast<int64_t>(coords)...};
        if (static_cast<int>(sizeof...(Args)) != dimensions())
            throw Error("Buffer: " + std::to_string(sizeof...(Args)) + " coordinates given to a " +
                        std::to_string(dimensions()) + "-dimensional buffer");
        int64_t offset = 0;
        for (int d = 0; d < dimensions(); ++d) {
            if (c[d] < 0 || c[d] >= shape_[d])
                throw Error("Buffer: coordinate " + std::to_string(c[d]) + " of dimension " +
                            std::to_string(d) + " is outside [0, " + std::to_string(shape_[d]) + ")");
            offset += c[d] * strides_[d];
        }
        return data()[offset];
    }
};

/// The tolerance used to compare a result of `type` with the reference (DESIGN.md §7), in one
/// place: integers and bool exact; fp32 rtol 1e-5 / atol 1e-5 (scaled by sqrt of the reduction
/// length where callers give one); fp16 1e-2; bf16 2e-2; fp64 1e-12.
struct Tolerance {
    double rtol = 0, atol = 0;
    static Tolerance for_type(Type type, int64_t reduction_length = 1);
};

/// The outcome of comparing two buffers element by element.
struct Comparison {
    bool equal = true;
    double max_abs_error = 0;
    double max_rel_error = 0;
    int64_t mismatches = 0;
    std::vector<int64_t> first_mismatch; ///< coordinates, empty if none
    std::string message;                 ///< a readable summary for test failures
};

/// Compares `actual` with `expected` (same shape required; types may differ if both are
/// numeric) within `tol` (default: Tolerance::for_type(expected.type())).
Comparison compare(const Buffer<> &actual, const Buffer<> &expected);
Comparison compare(const Buffer<> &actual, const Buffer<> &expected, Tolerance tol);

} // namespace tessera
