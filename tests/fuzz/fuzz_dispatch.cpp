// The shape-dispatch runtime (codegen/cpu/runtime/tessera_dispatch.c), compiled into this target
// with the sanitizers: a dispatch table of the kind write_dispatch_library accepts and a call's
// buffer descriptors, both from the input. The runtime must answer every call with a code, never
// a crash; a call whose buffers are all well-formed and agree (each extent that follows a
// parameter an affine map scale * value + offset of it), with every parameter in range,
// must reach the first kernel (in table order) whose bucket covers it, that kernel must see
// buffers of exactly its bucket's shape (inputs zero-padded), and the caller's outputs must hold
// the corner of what it wrote. A kernel's own failure code must come back unchanged.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fuzz_util.h"
#include "tessera/codegen/buffer_abi.h"

extern "C" {
int tessera_dispatch_call(const int64_t *table, void *const *kernels, void *const *messages, const char *const *names,
                          const char *const *arg_names, const char *const *param_names, int64_t *last, void **args);
const char *tessera_dispatch_select(const int64_t *table, const char *const *names, const int64_t *values);
const char *tessera_dispatch_error_message(int code);
}

using namespace tessera;

namespace {

constexpr int kMax = 8; // arguments, dimensions, parameters and buckets (the runtime's limits)

/// Reads the input a byte at a time; zeros once it is used up.
struct Bytes {
    const uint8_t *data;
    size_t size, at = 0;
    uint8_t next() { return at < size ? data[at++] : 0; }
    int64_t next64() {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = v << 8 | next();
        return int64_t(v);
    }
};

struct Argument {
    bool is_output = false;
    int dims = 1, type_code = TESSERA_TYPE_INT, type_bits = 32;
    std::array<int, kMax> param{};      ///< -1: fixed
    std::array<int64_t, kMax> extent{}; ///< when fixed
    std::array<int64_t, kMax> scale{}, offset{}; ///< when following a parameter
};

struct Table {
    std::vector<std::pair<int64_t, int64_t>> ranges;
    std::vector<Argument> args;
    std::vector<std::vector<int64_t>> buckets;
    std::vector<int64_t> encoded() const {
        std::vector<int64_t> v = {int64_t(args.size()), int64_t(ranges.size()), int64_t(buckets.size())};
        for (auto [lo, hi] : ranges) v.insert(v.end(), {lo, hi});
        for (const Argument &a : args) {
            v.insert(v.end(), {a.is_output ? 1 : 0, a.dims, a.type_code, a.type_bits});
            for (size_t d = 0; d < size_t(a.dims); ++d) {
                if (a.param[d] < 0) v.insert(v.end(), {-1, 0, a.extent[d]});
                else v.insert(v.end(), {a.param[d], a.scale[d], a.offset[d]});
            }
        }
        for (const auto &b : buckets) v.insert(v.end(), b.begin(), b.end());
        return v;
    }
    /// A buffer's shape when each parameter has the value `values` gives.
    std::vector<int64_t> shape(const Argument &a, const std::vector<int64_t> &values) const {
        std::vector<int64_t> s;
        for (size_t d = 0; d < size_t(a.dims); ++d)
            s.push_back(a.param[d] < 0 ? a.extent[d] : a.scale[d] * values[size_t(a.param[d])] + a.offset[d]);
        return s;
    }
};

size_t element_bytes(int bits) { return bits == 1 ? 1 : size_t(bits / 8); }
int64_t elements(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

/// The value a kernel writes at element i of an output, and the input byte at element i.
uint8_t output_byte(int64_t bucket, int64_t arg, int64_t i, size_t byte) { return uint8_t(31 * bucket + 7 * arg + 3 * i + byte + 1); }
uint8_t input_byte(int64_t arg, int64_t i, size_t byte) { return uint8_t(11 * arg + 5 * i + byte + 1); }

/// What the fake kernels check and report.
struct CallState {
    const Table *table = nullptr;
    std::vector<int64_t> values; ///< the call's parameter values
    int kernel_code = 0;         ///< what the kernels return
    int called = -1;             ///< the bucket called
} state;

/// Checks that bucket `b`'s kernel got buffers of its shape, each input the caller's zero-padded,
/// and writes its outputs.
int kernel_body(int b, void *const *args) {
    fuzz::require(state.called < 0, "the runtime called two kernels for one call");
    state.called = b;
    const Table &t = *state.table;
    for (size_t a = 0; a < t.args.size(); ++a) {
        const auto *buf = static_cast<const tessera_buffer_t *>(args[a]);
        const Argument &spec = t.args[a];
        const std::vector<int64_t> want = t.shape(spec, t.buckets[size_t(b)]), caller = t.shape(spec, state.values);
        fuzz::require(buf && buf->data && buf->shape && buf->dimensions == spec.dims, "a kernel got a malformed buffer");
        for (int d = 0; d < spec.dims; ++d)
            fuzz::require(buf->shape[d] == want[size_t(d)], "a kernel got a buffer that is not of its bucket's shape");
        const size_t bytes = element_bytes(spec.type_bits);
        const int64_t n = elements(want);
        auto *data = static_cast<uint8_t *>(buf->data);
        for (int64_t i = 0; i < n; ++i) {
            // i's index in the bucket's shape; inside the caller's corner or not.
            int64_t rest = i, caller_index = 0, stride = 1;
            bool inside = true;
            for (int d = spec.dims - 1; d >= 0; --d) {
                const int64_t x = rest % want[size_t(d)];
                rest /= want[size_t(d)];
                inside &= x < caller[size_t(d)];
                caller_index += x * stride;
                stride *= caller[size_t(d)];
            }
            for (size_t k = 0; k < bytes; ++k) {
                if (spec.is_output) data[size_t(i) * bytes + k] = output_byte(b, int64_t(a), i, k);
                else
                    fuzz::require(data[size_t(i) * bytes + k] == (inside ? input_byte(int64_t(a), caller_index, k) : 0),
                                  "a kernel's input is not the caller's, zero-padded");
            }
        }
    }
    return state.kernel_code;
}

template <int B, size_t... I> int kernel(decltype(static_cast<void>(I), static_cast<void *>(nullptr))... args) {
    void *const list[] = {args...};
    return kernel_body(B, list);
}

template <int B, size_t N> void *kernel_of_arity() {
    return [&]<size_t... I>(std::index_sequence<I...>) { return reinterpret_cast<void *>(&kernel<B, I...>); }(std::make_index_sequence<N>());
}

template <int B> void *kernel_for(size_t n) {
    static void *const table[] = {kernel_of_arity<B, 1>(), kernel_of_arity<B, 2>(), kernel_of_arity<B, 3>(), kernel_of_arity<B, 4>(),
                                  kernel_of_arity<B, 5>(), kernel_of_arity<B, 6>(), kernel_of_arity<B, 7>(), kernel_of_arity<B, 8>()};
    return table[n - 1];
}

void *kernel_address(int b, size_t n) {
    switch (b) {
    case 0: return kernel_for<0>(n);
    case 1: return kernel_for<1>(n);
    case 2: return kernel_for<2>(n);
    case 3: return kernel_for<3>(n);
    case 4: return kernel_for<4>(n);
    case 5: return kernel_for<5>(n);
    case 6: return kernel_for<6>(n);
    default: return kernel_for<7>(n);
    }
}

const char *kernel_message(int) { return "the kernel's own failure"; }

/// A table write_dispatch_library accepts: small ranges and extents (so the buffers stay small),
/// and a bucket covering every range's end.
Table read_table(Bytes &in) {
    Table t;
    const int params = 1 + in.next() % kMax, args = 1 + in.next() % kMax, buckets = 1 + in.next() % kMax;
    for (int p = 0; p < params; ++p) {
        const int64_t lo = 1 + in.next() % 6;
        t.ranges.emplace_back(lo, lo + in.next() % 6);
    }
    static const std::pair<int, int> types[] = {{TESSERA_TYPE_INT, 8}, {TESSERA_TYPE_INT, 32}, {TESSERA_TYPE_FLOAT, 32},
                                                {TESSERA_TYPE_FLOAT, 64}, {TESSERA_TYPE_BOOL, 1}, {TESSERA_TYPE_BFLOAT, 16}};
    for (int a = 0; a < args; ++a) {
        Argument arg;
        const uint8_t kind = in.next();
        arg.is_output = kind & 1;
        arg.dims = 1 + (kind >> 1) % 4;
        std::tie(arg.type_code, arg.type_bits) = types[(kind >> 3) % 6];
        for (int d = 0; d < arg.dims; ++d) {
            const uint8_t e = in.next();
            arg.param[size_t(d)] = e % 3 == 0 ? -1 : (e >> 2) % params; // a parameter may appear in no argument
            arg.extent[size_t(d)] = 1 + (e >> 5) % 4;
            arg.scale[size_t(d)] = 1; // read_affine_maps may change these
            arg.offset[size_t(d)] = 0;
        }
        t.args.push_back(arg);
    }
    for (int b = 0; b < buckets; ++b) {
        std::vector<int64_t> v;
        for (int p = 0; p < params; ++p) v.push_back(t.ranges[size_t(p)].first + in.next() % 8);
        t.buckets.push_back(v);
    }
    std::vector<int64_t> corner;
    for (auto [lo, hi] : t.ranges) corner.push_back(hi);
    if (in.next() % 2 == 0) t.buckets.back() = corner; // else the first bucket is made to cover it
    else
        for (int p = 0; p < params; ++p) t.buckets.front()[size_t(p)] = std::max(t.buckets.front()[size_t(p)], corner[size_t(p)]);
    return t;
}

/// The maps of the extents that follow a parameter, from bytes after the call's (so inputs
/// written before maps existed, which end there, keep their meaning: all maps M): a scale of
/// 1 to 3 and an offset of -2 to 2, raised so that the extent is at least 1 at the range's start,
/// as write_dispatch_library requires. An argument whose scales would make a bucket's buffer
/// larger than 2^16 elements keeps scale 1 (big buffers only slow the target down).
void read_affine_maps(Bytes &in, Table &t) {
    for (Argument &a : t.args) {
        std::array<int64_t, kMax> step{};
        for (size_t d = 0; d < size_t(a.dims); ++d) {
            if (a.param[d] < 0) continue;
            const uint8_t m = in.next();
            step[d] = (m >> 2) % 5;
            a.scale[d] = 1 + m % 3;
        }
        auto set_offsets = [&] {
            for (size_t d = 0; d < size_t(a.dims); ++d)
                if (a.param[d] >= 0)
                    a.offset[d] = std::max(step[d] <= 2 ? -step[d] : step[d] - 2, 1 - a.scale[d] * t.ranges[size_t(a.param[d])].first);
        };
        set_offsets();
        int64_t largest = 0;
        for (const auto &b : t.buckets) largest = std::max(largest, elements(t.shape(a, b)));
        if (largest <= int64_t(1) << 16) continue;
        for (size_t d = 0; d < size_t(a.dims); ++d) a.scale[d] = 1;
        set_offsets();
    }
}

/// How the call breaks a buffer on purpose (kind % 4 == 3), read before the maps so that old
/// inputs keep their meaning, applied after.
struct Flaw {
    uint8_t kind = 0, how = 0;
    int64_t number = 0;
};

Flaw read_flaw(Bytes &in) {
    Flaw f;
    f.kind = in.next();
    if (f.kind % 4 != 3) return f;
    f.how = in.next();
    switch (f.how % 8) {
    case 3: f.number = in.next64(); break;
    case 5: f.number = in.next(); break;
    case 6: f.number = in.next64(); break;
    case 7: f.number = in.next() % 2 ? in.next64() : int64_t(in.next()) - 8; break;
    default: break;
    }
    return f;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Bytes in{data, size};
    Table t = read_table(in);

    // The call: one value per parameter (from 0 to beyond the range), then each buffer, which may
    // be broken on purpose.
    std::vector<int64_t> values;
    for (auto [lo, hi] : t.ranges) values.push_back(int64_t(in.next() % (hi + 3)));
    state = {.table = &t, .values = values, .kernel_code = in.next() % 16 == 0 ? (3 << 8 | TESSERA_ERROR_SHAPE) : 0};
    std::vector<Flaw> flaws;
    for (size_t a = 0; a < t.args.size(); ++a) flaws.push_back(read_flaw(in));
    read_affine_maps(in, t);
    const std::vector<int64_t> encoded = t.encoded();
    bool well_formed = true;
    std::vector<tessera_buffer_t> buffers(t.args.size());
    std::vector<std::vector<int64_t>> shapes(t.args.size()), strides(t.args.size());
    std::vector<std::vector<uint8_t>> storage(t.args.size());
    std::vector<void *> args(t.args.size());
    for (size_t a = 0; a < t.args.size(); ++a) {
        const Argument &spec = t.args[a];
        shapes[a] = t.shape(spec, values);
        const Flaw &flaw = flaws[a];
        const size_t bytes = element_bytes(spec.type_bits);
        // Allocated before any flaw changes the shape: the runtime must refuse before reading a
        // flawed buffer's data.
        int64_t n = 1;
        for (int64_t e : shapes[a]) n *= std::max<int64_t>(e, 0);
        storage[a].resize(size_t(std::max<int64_t>(n, 1)) * bytes);
        for (size_t i = 0; i < storage[a].size(); ++i) storage[a][i] = spec.is_output ? 0xEE : input_byte(int64_t(a), int64_t(i / bytes), i % bytes);
        tessera_buffer_t &buf = buffers[a];
        buf = {storage[a].data(), shapes[a].data(), nullptr, spec.dims, uint8_t(spec.type_code), uint8_t(spec.type_bits), 0};
        args[a] = &buf;
        if (flaw.kind % 4 == 1) { // dense strides given explicitly: still well-formed
            strides[a].assign(size_t(spec.dims), 1);
            for (int d = spec.dims - 2; d >= 0; --d) strides[a][size_t(d)] = strides[a][size_t(d) + 1] * shapes[a][size_t(d) + 1];
            buf.strides = strides[a].data();
        }
        if (flaw.kind % 4 != 3) continue;
        well_formed = false;
        const uint8_t how = flaw.how;
        const size_t d = size_t(how >> 4) % size_t(spec.dims);
        switch (how % 8) {
        case 0: args[a] = nullptr; break;
        case 1: buf.data = nullptr; break;
        case 2: buf.shape = nullptr; break;
        case 3:
            buf.dimensions = int32_t(flaw.number);
            if (buf.dimensions == spec.dims) buf.dimensions = spec.dims + 1;
            break;
        case 4: buf.type_bits = uint8_t(buf.type_bits == 32 ? 8 : 32); break;
        case 5: buf.type_code = uint8_t(buf.type_code + 1 + flaw.number % 4); break;
        case 6: // a stride that is not dense
            strides[a].assign(size_t(spec.dims), 0);
            strides[a][d] = flaw.number;
            if (shapes[a][d] == 1 || (d + 1 == size_t(spec.dims) && strides[a][d] == 1)) strides[a][d] = 2; // not a dense one by chance
            if (shapes[a][d] == 1) shapes[a][d] = 2;
            buf.strides = strides[a].data();
            break;
        default: { // a fixed extent that differs from the library's, or one that is the map of no
            // value in the parameter's range (perhaps huge, negative or between two values' maps):
            // an in-range one would only change the call
            int64_t other = flaw.number;
            if (spec.param[d] < 0 && other == spec.extent[d]) ++other;
            if (spec.param[d] >= 0) {
                const auto [lo, hi] = t.ranges[size_t(spec.param[d])];
                const int64_t scale = spec.scale[d], offset = spec.offset[d];
                if (other >= scale * lo + offset && other <= scale * hi + offset && (other - offset) % scale == 0)
                    other = scale * hi + offset + 1 + (other - scale * lo - offset);
            }
            shapes[a][d] = other;
        }
        }
    }
    bool in_range = true;
    for (size_t p = 0; p < values.size(); ++p) in_range &= values[p] >= t.ranges[p].first && values[p] <= t.ranges[p].second;

    static const char *const names[] = {"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"};
    static const char *const arg_names[] = {"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"};
    static const char *const param_names[] = {"P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7"};
    std::vector<void *> kernels, messages;
    for (size_t b = 0; b < t.buckets.size(); ++b) {
        kernels.push_back(kernel_address(int(b), t.args.size()));
        messages.push_back(reinterpret_cast<void *>(&kernel_message));
    }
    if (std::getenv("FUZZ_DISPATCH_TRACE")) { // for reading a crash: what the call was
        std::fprintf(stderr, "well_formed %d in_range %d kernel_code %d\n", well_formed, in_range, state.kernel_code);
        for (size_t a = 0; a < t.args.size(); ++a) {
            std::fprintf(stderr, "arg %zu %s:", a, args[a] ? "" : " NULL");
            for (int64_t e : shapes[a]) std::fprintf(stderr, " %lld", (long long)e);
            std::fprintf(stderr, "\n");
        }
    }
    int64_t last = -1;
    const int code = tessera_dispatch_call(encoded.data(), kernels.data(), messages.data(), names, arg_names, param_names, &last, args.data());
    const char *message = tessera_dispatch_error_message(code);
    fuzz::require(message && *message, "a code without a message");

    // The kernel the table prefers for a well-formed call, and the one tessera_dispatch_select names.
    int first_covering = -1;
    for (size_t b = 0; b < t.buckets.size() && first_covering < 0; ++b) {
        bool covers = true;
        for (size_t p = 0; p < values.size(); ++p) covers &= t.buckets[b][p] >= values[p];
        if (covers) first_covering = int(b);
    }
    const char *selected = tessera_dispatch_select(encoded.data(), names, values.data());
    bool every_param_used = true; // a parameter no buffer carries stays unknown: the call is refused
    for (size_t p = 0; p < values.size(); ++p) {
        bool used = false;
        for (const Argument &a : t.args)
            for (int d = 0; d < a.dims; ++d) used |= a.param[size_t(d)] == int(p);
        every_param_used &= used;
    }
    fuzz::require(in_range ? selected == names[first_covering] : selected == nullptr, "tessera_dispatch_select chose another kernel");

    if (!well_formed || !in_range || !every_param_used) {
        fuzz::require(code != 0, "a flawed call or one outside the range succeeded");
        fuzz::require(state.called < 0, "a flawed call or one outside the range reached a kernel");
        return 0;
    }
    fuzz::require(state.called == first_covering && last == first_covering, "the call did not go to the first kernel covering it");
    fuzz::require(code == state.kernel_code, "the kernel's code did not come back");
    if (code != 0) {
        fuzz::require(std::strstr(message, "the kernel's own failure") != nullptr, "a kernel's failure message was lost");
        return 0;
    }
    for (size_t a = 0; a < t.args.size(); ++a) {
        if (!t.args[a].is_output) continue;
        const std::vector<int64_t> bucket_shape = t.shape(t.args[a], t.buckets[size_t(first_covering)]);
        const size_t bytes = element_bytes(t.args[a].type_bits);
        for (int64_t i = 0; i < elements(shapes[a]); ++i) {
            int64_t rest = i, bucket_index = 0, stride = 1;
            for (int d = t.args[a].dims - 1; d >= 0; --d) {
                bucket_index += (rest % shapes[a][size_t(d)]) * stride;
                rest /= shapes[a][size_t(d)];
                stride *= bucket_shape[size_t(d)];
            }
            for (size_t k = 0; k < bytes; ++k)
                fuzz::require(storage[a][size_t(i) * bytes + k] == output_byte(first_covering, int64_t(a), bucket_index, k),
                              "an output is not the corner of what its kernel wrote");
        }
    }
    return 0;
}
