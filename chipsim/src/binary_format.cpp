// One field list, walked by both the writer and the reader (an "archive" template), so the two
// directions cannot drift apart.
#include "tessera/chipsim/binary_format.h"

#include "tessera/chipsim/error.h"

#include <cstring>
#include <limits>
#include <type_traits>

namespace tessera::chipsim {

namespace {

constexpr uint8_t kMagic[8] = {'T', 'S', 'P', 'R', 'G', 0, 0, 1};

uint64_t fnv1a(const uint8_t *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

class Writer {
public:
    static constexpr bool reading = false;
    std::vector<uint8_t> out;
    void varint(int64_t &v) {
        uint64_t z = (uint64_t(v) << 1) ^ uint64_t(v >> 63);
        do {
            uint8_t b = z & 0x7f;
            z >>= 7;
            out.push_back(uint8_t(b | (z ? 0x80 : 0)));
        } while (z);
    }
    void f64(double &v) {
        uint8_t b[8];
        std::memcpy(b, &v, 8);
        out.insert(out.end(), b, b + 8);
    }
    void str(std::string &s) {
        int64_t n = int64_t(s.size());
        varint(n);
        out.insert(out.end(), s.begin(), s.end());
    }
    template <typename T> void small(T &v, int64_t) {
        int64_t x = int64_t(v);
        varint(x);
    }
    void count(size_t n, int64_t) {
        int64_t x = int64_t(n);
        varint(x);
    }
    void i32(int32_t &v) {
        int64_t x = v;
        varint(x);
    }
};

class Reader {
public:
    static constexpr bool reading = true;
    Reader(const uint8_t *p, size_t n, size_t base, const std::string &origin) : p_(p), n_(n), base_(base), origin_(origin) {}
    [[noreturn]] void fail(const std::string &why) const { fail_at(pos_, why); }
    [[noreturn]] void fail_at(size_t pos, const std::string &why) const {
        throw AsmError(origin_ + ": byte " + std::to_string(base_ + pos) + ": " + why);
    }
    void varint(int64_t &v) {
        uint64_t z = 0;
        for (int shift = 0;; shift += 7) {
            if (pos_ >= n_) fail("truncated varint");
            if (shift > 63) fail("varint too long");
            uint8_t b = p_[pos_++];
            z |= uint64_t(b & 0x7f) << shift;
            if (!(b & 0x80)) break;
        }
        v = int64_t(z >> 1) ^ -int64_t(z & 1);
    }
    void f64(double &v) {
        if (n_ - pos_ < 8) fail("truncated number");
        std::memcpy(&v, p_ + pos_, 8);
        pos_ += 8;
    }
    void str(std::string &s) {
        int64_t n;
        varint(n);
        if (n < 0 || uint64_t(n) > n_ - pos_) fail("string length out of range");
        s.assign(reinterpret_cast<const char *>(p_ + pos_), size_t(n));
        pos_ += size_t(n);
    }
    template <typename T> void small(T &v, int64_t limit) {
        int64_t x;
        varint(x);
        if (x < 0 || x > limit) fail("field value " + std::to_string(x) + " out of range");
        v = T(x);
    }
    /// An int field (a slice, bank, MXM, lane): a varint that does not fit 32 bits is refused
    /// rather than cut to its low bits, which would decode to a program the file does not hold.
    void i32(int32_t &v) {
        const size_t at = pos_;
        int64_t x;
        varint(x);
        if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max())
            fail_at(at, "field value " + std::to_string(x) + " does not fit 32 bits");
        v = int32_t(x);
    }
    size_t count(size_t, int64_t limit) {
        int64_t x;
        varint(x);
        if (x < 0 || x > limit || uint64_t(x) > n_ - pos_ + 1) fail("element count " + std::to_string(x) + " out of range");
        return size_t(x);
    }
    bool done() const { return pos_ == n_; }

private:
    const uint8_t *p_;
    size_t n_, pos_ = 0, base_;
    const std::string &origin_;
};

template <typename A, typename T> void list(A &a, std::vector<T> &v, int64_t limit, void (*each)(A &, T &)) {
    if constexpr (A::reading) {
        // Grown as elements are read, not resized to the count first: a forged count then costs
        // memory only in proportion to the bytes that back it.
        const size_t n = a.count(0, limit);
        v.clear();
        for (size_t i = 0; i < n; ++i) {
            T e{};
            each(a, e);
            v.push_back(std::move(e));
        }
    } else {
        a.count(v.size(), limit);
        for (auto &e : v) each(a, e);
    }
}

template <typename A> void tile(A &a, TileRef &t) {
    a.str(t.memory);
    a.small(t.side, 127);
    a.i32(t.slice);
    a.i32(t.bank);
    a.varint(t.base);
    a.varint(t.count);
    a.varint(t.stride);
}

template <typename A> void view_dim(A &a, ViewDim &d) {
    a.varint(d.count);
    a.varint(d.stride);
}

template <typename A> void chain_step(A &a, ChainStep &c) {
    a.small(c.op, int64_t(VxmOp::Select));
    a.small(c.has_imm, 1);
    a.f64(c.imm);
}

template <typename A> void perm(A &a, int32_t &v) { a.i32(v); }

template <typename A> void instruction(A &a, Instruction &in) {
    a.small(in.op, int64_t(Opcode::Repeat));
    a.varint(in.cycle);
    a.small(in.dtype, int64_t(DType::FP32));
    a.small(in.out_dtype, int64_t(DType::FP32));
    a.small(in.has_out_dtype, 1);
    list<A, TileRef>(a, in.tiles, 16, tile<A>);
    a.str(in.view.tensor);
    a.varint(in.view.offset);
    list<A, ViewDim>(a, in.view.outer, 3, view_dim<A>);
    a.varint(in.view.inner_bytes);
    a.i32(in.mxm);
    a.i32(in.buffer);
    a.small(in.accumulate, 1);
    a.small(in.relu, 1);
    a.small(in.has_scale, 1);
    a.f64(in.scale);
    a.small(in.vop, int64_t(VxmOp::Select));
    a.small(in.axis, int64_t(ReduceAxis::Lanes));
    a.small(in.has_imm, 1);
    a.f64(in.imm);
    list<A, ChainStep>(a, in.chain, 64, chain_step<A>);
    list<A, int32_t>(a, in.permutation, 4096, perm<A>);
    a.small(in.queue, int64_t(Queue::Vector));
    a.varint(in.count);
    a.varint(in.distance);
    a.i32(in.line);
}

template <typename A> void shape_dim(A &a, int64_t &d) { a.varint(d); }

template <typename A> void tensor(A &a, TensorDecl &t) {
    a.str(t.name);
    a.small(t.dtype, int64_t(DType::FP32));
    list<A, int64_t>(a, t.shape, 8, shape_dim<A>);
    a.str(t.file);
    // 0 input, 1 output, 2 buffer (programs written before buffers hold 0 or 1).
    uint8_t role = t.is_buffer ? 2 : t.is_output ? 1 : 0;
    a.small(role, 2);
    t.is_output = role == 1;
    t.is_buffer = role == 2;
}

template <typename A> void program_fields(A &a, Program &p) {
    a.str(p.target);
    list<A, TensorDecl>(a, p.tensors, 1 << 16, tensor<A>);
    list<A, Instruction>(a, p.instructions, limits::kMaxExpandedInstructions, instruction<A>);
}

void put_u32(std::vector<uint8_t> &o, uint32_t v) {
    for (int i = 0; i < 4; ++i) o.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t> &o, uint64_t v) {
    for (int i = 0; i < 8; ++i) o.push_back(uint8_t(v >> (8 * i)));
}
uint64_t get_le(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
}

constexpr size_t kHeader = 8 + 4 + 8 + 8;

} // namespace

std::vector<uint8_t> encode_program(const Program &program) {
    Writer w;
    Program copy = program;
    program_fields(w, copy);
    std::vector<uint8_t> out(kMagic, kMagic + 8);
    put_u32(out, kBinaryFormatVersion);
    put_u64(out, w.out.size());
    put_u64(out, fnv1a(w.out.data(), w.out.size()));
    out.insert(out.end(), w.out.begin(), w.out.end());
    return out;
}

bool is_binary_program(const std::vector<uint8_t> &bytes) {
    return bytes.size() >= 8 && std::memcmp(bytes.data(), kMagic, 8) == 0;
}

Program decode_program(const std::vector<uint8_t> &bytes, const std::string &origin) {
    auto fail = [&](size_t at, const std::string &why) {
        throw AsmError(origin + ": byte " + std::to_string(at) + ": " + why);
    };
    if (bytes.size() < kHeader) fail(bytes.size(), "truncated header (" + std::to_string(bytes.size()) + " bytes)");
    if (!is_binary_program(bytes)) fail(0, "bad magic: not a Tessera binary program");
    uint32_t version = uint32_t(get_le(bytes.data() + 8, 4));
    if (version != kBinaryFormatVersion)
        fail(8, "unsupported version " + std::to_string(version) + ", expected " + std::to_string(kBinaryFormatVersion));
    uint64_t length = get_le(bytes.data() + 12, 8);
    uint64_t checksum = get_le(bytes.data() + 20, 8);
    if (length != bytes.size() - kHeader)
        fail(12, "payload length " + std::to_string(length) + " but " + std::to_string(bytes.size() - kHeader) + " bytes follow");
    if (fnv1a(bytes.data() + kHeader, size_t(length)) != checksum) fail(20, "checksum mismatch: the program is corrupt");
    Reader r(bytes.data() + kHeader, size_t(length), kHeader, origin);
    Program p;
    program_fields(r, p);
    if (!r.done()) r.fail("trailing bytes after the program");
    // The text's grammar bounds every number it can spell; a binary can hold any varint, so the
    // same bounds are checked here and both forms accept the same programs.
    for (const TensorDecl &t : p.tensors)
        if (std::string why = tensor_shape_problem(t); !why.empty()) throw AsmError(origin + ": " + why);
    int64_t expanded = 0;
    for (size_t i = 0; i < p.instructions.size(); ++i) {
        const Instruction &in = p.instructions[i];
        // A repeat is checked by both: its unused fields and distance like any instruction's,
        // its count against the program's expanded length.
        std::string why = instruction_problem(in);
        if (why.empty() && in.op == Opcode::Repeat) why = repeat_problem(in.count, expanded);
        if (!why.empty()) throw AsmError(origin + ": instruction " + std::to_string(i) + " (" + opcode_name(in.op) + "): " + why);
        expanded += in.op == Opcode::Repeat ? in.count : 1;
    }
    return p;
}

} // namespace tessera::chipsim
