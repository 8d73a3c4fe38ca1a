// Buffer<>: storage, element access, deterministic random contents and comparison with
// per-dtype tolerances. The .npy reader and writer are in buffer_npy.cpp.
#include "tessera/buffer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tessera/internal/element_io.h"

namespace tessera {

namespace {

std::string shape_to_string(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::vector<int64_t> dense_strides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= shape[d];
    }
    return strides;
}

int64_t element_count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

void check_shape(const std::vector<int64_t> &shape) {
    for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] < 0)
            throw Error("Buffer: shape " + shape_to_string(shape) + " has a negative extent in dimension " +
                        std::to_string(d) + "; extents must be >= 0");
}

/// Calls f(coords) for every coordinate of `shape` in row-major order (last dimension fastest).
template <typename F> void for_each_coordinate(const std::vector<int64_t> &shape, F f) {
    if (element_count(shape) == 0) return;
    std::vector<int64_t> c(shape.size(), 0);
    while (true) {
        f(c);
        int d = static_cast<int>(shape.size()) - 1;
        while (d >= 0 && ++c[d] == shape[d]) c[d--] = 0;
        if (d < 0) return;
    }
}

/// splitmix64 (Steele, Lea, Flood 2014): a fixed, portable sequence for a seed, unlike the
/// standard distributions whose output differs between library versions.
uint64_t splitmix64(uint64_t &state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

std::string coords_to_string(const std::vector<int64_t> &c) {
    std::string s = "(";
    for (size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
    return s + ")";
}

} // namespace

Buffer<void>::Buffer(Type type, std::vector<int64_t> shape) : type_(type), type_set_(true), shape_(std::move(shape)) {
    check_shape(shape_);
    strides_ = dense_strides(shape_);
    const int64_t bytes = element_count(shape_) * type_.bytes();
    // One byte even for empty buffers, so data() is never null for a defined buffer.
    storage_ = std::shared_ptr<uint8_t[]>(new uint8_t[static_cast<size_t>(std::max<int64_t>(bytes, 1))]());
    data_ = storage_.get();
}

Buffer<> Buffer<void>::view(Type type, void *data, std::vector<int64_t> shape, std::vector<int64_t> strides) {
    check_shape(shape);
    if (!strides.empty() && strides.size() != shape.size())
        throw Error("Buffer::view: " + std::to_string(strides.size()) + " strides given for a " +
                    std::to_string(shape.size()) + "-dimensional shape " + shape_to_string(shape));
    if (data == nullptr && element_count(shape) > 0) throw Error("Buffer::view: null data for shape " + shape_to_string(shape));
    Buffer<> b;
    b.type_ = type;
    b.type_set_ = true;
    b.shape_ = std::move(shape);
    b.strides_ = strides.empty() ? dense_strides(b.shape_) : std::move(strides);
    b.data_ = static_cast<uint8_t *>(data);
    return b;
}

int64_t Buffer<void>::dim(int d) const {
    if (d < 0 || d >= dimensions())
        throw Error("Buffer::dim: dimension " + std::to_string(d) + " of a " + std::to_string(dimensions()) +
                    "-dimensional buffer");
    return shape_[static_cast<size_t>(d)];
}

int64_t Buffer<void>::number_of_elements() const { return element_count(shape_); }

bool Buffer<void>::is_dense() const { return strides_ == dense_strides(shape_); }

void *Buffer<void>::address_of(const std::vector<int64_t> &coords) const {
    if (!defined()) throw Error("Buffer: access to an undefined buffer");
    if (static_cast<int>(coords.size()) != dimensions())
        throw Error("Buffer: " + std::to_string(coords.size()) + " coordinates " + coords_to_string(coords) +
                    " given to a " + std::to_string(dimensions()) + "-dimensional buffer of shape " +
                    shape_to_string(shape_));
    int64_t offset = 0;
    for (size_t d = 0; d < coords.size(); ++d) {
        if (coords[d] < 0 || coords[d] >= shape_[d])
            throw Error("Buffer: coordinates " + coords_to_string(coords) + " are outside the shape " +
                        shape_to_string(shape_) + " (dimension " + std::to_string(d) + ")");
        offset += coords[d] * strides_[d];
    }
    return data_ + offset * type_.bytes();
}

double Buffer<void>::get_as_double(const std::vector<int64_t> &coords) const {
    return internal::load_as_double(type_, address_of(coords));
}

int64_t Buffer<void>::get_as_int(const std::vector<int64_t> &coords) const {
    return internal::load_as_int(type_, address_of(coords));
}

void Buffer<void>::set_from_double(const std::vector<int64_t> &coords, double value) {
    internal::store_double(type_, address_of(coords), value);
}

void Buffer<void>::set_from_int(const std::vector<int64_t> &coords, int64_t value) {
    internal::store_int(type_, address_of(coords), value);
}

Buffer<> Buffer<void>::copy() const {
    if (!defined()) return Buffer<>();
    Buffer<> out(type_, shape_);
    const int bytes = type_.bytes();
    int64_t i = 0;
    for_each_coordinate(shape_, [&](const std::vector<int64_t> &c) {
        std::memcpy(out.data_ + (i++) * bytes, address_of(c), static_cast<size_t>(bytes));
    });
    return out;
}

void Buffer<void>::fill_random(uint64_t seed) {
    if (!defined()) throw Error("Buffer::fill_random: the buffer is undefined");
    uint64_t state = seed;
    // Values are drawn in row-major order of the logical shape, so a strided view and a dense
    // buffer with the same seed hold the same values at the same coordinates.
    for_each_coordinate(shape_, [&](const std::vector<int64_t> &c) {
        const uint64_t r = splitmix64(state);
        void *p = address_of(c);
        if (type_.is_float()) {
            // 53 random bits → [0, 1) exactly, then → [-1, 1); rounded to the element type.
            const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
            internal::store_double(type_, p, 2.0 * u - 1.0);
        } else if (type_.is_bool()) {
            internal::store_int(type_, p, static_cast<int64_t>(r >> 63));
        } else if (type_.is_uint()) {
            internal::store_int(type_, p, static_cast<int64_t>(r >> 60)); // [0, 16)
        } else {
            internal::store_int(type_, p, static_cast<int64_t>(r >> 60) - 8); // [-8, 8)
        }
    });
}

void Buffer<void>::fill(double value) {
    if (!defined()) throw Error("Buffer::fill: the buffer is undefined");
    for_each_coordinate(shape_, [&](const std::vector<int64_t> &c) { internal::store_double(type_, address_of(c), value); });
}

Tolerance Tolerance::for_type(Type type, int64_t reduction_length) {
    // Rounding errors of a sum of n terms grow like sqrt(n) for random data.
    const double scale = std::sqrt(static_cast<double>(std::max<int64_t>(reduction_length, 1)));
    Tolerance t;
    if (!type.is_float()) return t; // integers and Bool compare exactly
    double base = 0;
    if (type.is_bfloat()) base = 2e-2;
    else if (type.bits() == 16) base = 1e-2;
    else if (type.bits() == 32) base = 1e-5;
    else base = 1e-12;
    t.rtol = base * scale;
    t.atol = base * scale;
    return t;
}

Comparison compare(const Buffer<> &actual, const Buffer<> &expected) {
    return compare(actual, expected, Tolerance::for_type(expected.type()));
}

Comparison compare(const Buffer<> &actual, const Buffer<> &expected, Tolerance tol) {
    if (!actual.defined() || !expected.defined())
        throw Error(std::string("compare: the ") + (actual.defined() ? "expected" : "actual") + " buffer is undefined");
    if (actual.shape() != expected.shape())
        throw Error("compare: the actual buffer has shape " + shape_to_string(actual.shape()) +
                    " but the expected one has shape " + shape_to_string(expected.shape()));
    Comparison r;
    const bool exact_ints = !actual.type().is_float() && !expected.type().is_float() && tol.rtol == 0 && tol.atol == 0;
    std::string first_detail;
    for_each_coordinate(expected.shape(), [&](const std::vector<int64_t> &c) {
        bool ok;
        double a, e;
        if (exact_ints) {
            // Compare as integers so 64-bit values are exact.
            const int64_t ia = actual.get_as_int(c), ie = expected.get_as_int(c);
            ok = ia == ie;
            a = static_cast<double>(ia);
            e = static_cast<double>(ie);
        } else {
            a = actual.get_as_double(c);
            e = expected.get_as_double(c);
            if (std::isnan(a) || std::isnan(e)) ok = std::isnan(a) && std::isnan(e);
            else if (std::isinf(a) || std::isinf(e)) ok = a == e;
            else ok = std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
        }
        if (std::isfinite(a) && std::isfinite(e)) {
            const double abs_err = std::fabs(a - e);
            r.max_abs_error = std::max(r.max_abs_error, abs_err);
            if (e != 0) r.max_rel_error = std::max(r.max_rel_error, abs_err / std::fabs(e));
        }
        if (!ok) {
            if (r.mismatches == 0) {
                r.first_mismatch = c;
                std::ostringstream s;
                s.precision(9);
                s << coords_to_string(c) << ": actual " << a << ", expected " << e;
                first_detail = s.str();
            }
            ++r.mismatches;
        }
    });
    r.equal = r.mismatches == 0;
    std::ostringstream s;
    s.precision(3);
    if (r.equal) {
        s << "all " << expected.number_of_elements() << " elements match";
    } else {
        s << r.mismatches << " of " << expected.number_of_elements() << " elements differ; first at " << first_detail;
    }
    s << " (max abs error " << r.max_abs_error << ", max rel error " << r.max_rel_error << "; tolerance rtol "
      << tol.rtol << ", atol " << tol.atol << ")";
    r.message = s.str();
    return r;
}

} // namespace tessera
