// The functional semantics of every instruction, on real bytes. Numerics (CHIP.md): int8 x int8
// -> int32 exact (wrapping on overflow, as the hardware adder does); bf16/fp16 products
// accumulate in fp32; conversions on store round to nearest even and saturate integers; VXM
// arithmetic runs in fp32 for float dtypes and in 64-bit integers for integer dtypes.
#include "machine_state.h"

#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/error.h"
#include "tessera/chipsim/mxm_kernel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tessera::chipsim::internal {

namespace {

[[noreturn]] void poison(const TileRef &tile, int64_t i) {
    throw SimError("reads row " + std::to_string(tile.base + i * tile.stride) + " of " + tile_text(tile) +
                   ", which was never written");
}

const uint8_t *read_row(MachineState &s, const ResourceUse &use, const Instruction &in, int t, int64_t i) {
    const ResolvedTile &rt = use.tiles[size_t(t)];
    MemoryImage &m = s.memories[size_t(rt.memory)];
    int64_t r = rt.rows[size_t(i)];
    if (!m.written[size_t(r)]) poison(in.tiles[size_t(t)], i);
    return m.row(r);
}

uint8_t *write_row(MachineState &s, const ResourceUse &use, int t, int64_t i) {
    const ResolvedTile &rt = use.tiles[size_t(t)];
    MemoryImage &m = s.memories[size_t(rt.memory)];
    int64_t r = rt.rows[size_t(i)];
    m.written[size_t(r)] = 1;
    return m.row(r);
}

/// Visits the byte ranges of an off-chip view in order: fn(byte offset in tensor, length).
template <typename Fn> void for_each_run(const OffchipView &v, Fn fn) {
    int64_t idx[3] = {0, 0, 0};
    const int nd = int(v.outer.size());
    while (true) {
        int64_t off = v.offset;
        for (int d = 0; d < nd; ++d) off += idx[d] * v.outer[size_t(d)].stride;
        fn(off, v.inner_bytes);
        int d = nd - 1;
        for (; d >= 0; --d) {
            if (++idx[d] < v.outer[size_t(d)].count) break;
            idx[d] = 0;
        }
        if (d < 0) break;
    }
}

int64_t view_extent(const OffchipView &v) {
    int64_t last = v.offset + v.inner_bytes;
    for (auto &d : v.outer) last += (d.count - 1) * d.stride;
    return last;
}

void dma(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const bool load = in.op == Opcode::DmaLoad;
    const OffchipView &v = in.view;
    std::vector<uint8_t> staging(size_t(v.total_bytes()));
    const MemoryDesc &md = s.target.memories[size_t(use.tiles[0].memory)];
    const int64_t row_bytes = md.row_bytes;
    const int64_t extent = view_extent(v);
    TensorImage *tensor = nullptr;
    if (v.tensor == "DRAM") {
        if (extent > s.dram.capacity())
            throw SimError("the view reaches DRAM byte " + std::to_string(extent) + ", past its " +
                           std::to_string(s.dram.capacity()) + " bytes");
    } else {
        auto it = s.tensors.find(v.tensor);
        if (it == s.tensors.end()) throw SimError("unknown tensor '" + v.tensor + "': declare it with .input or .output");
        tensor = &it->second;
        if (extent > int64_t(tensor->bytes.size()))
            throw SimError("the view reaches byte " + std::to_string(extent) + " of tensor '" + v.tensor + "', which has " +
                           std::to_string(tensor->bytes.size()) + " bytes");
    }
    if (load) {
        int64_t pos = 0;
        for_each_run(v, [&](int64_t off, int64_t n) {
            if (tensor) {
                if (tensor->decl.is_output || tensor->decl.is_buffer)
                    for (int64_t b = 0; b < n; ++b)
                        if (!tensor->written[size_t(off + b)])
                            throw SimError("reads byte " + std::to_string(off + b) + " of " +
                                           (tensor->decl.is_buffer ? "buffer '" : "output '") + v.tensor +
                                           "', which was never written");
                std::memcpy(staging.data() + pos, tensor->bytes.data() + off, size_t(n));
            } else if (!s.dram.read(off, staging.data() + pos, n)) {
                throw SimError("reads DRAM bytes " + std::to_string(off) + ".." + std::to_string(off + n - 1) +
                               ", which were never written");
            }
            pos += n;
        });
        for (int64_t i = 0; i < in.tiles[0].count; ++i)
            std::memcpy(write_row(s, use, 0, i), staging.data() + i * row_bytes, size_t(row_bytes));
    } else {
        for (int64_t i = 0; i < in.tiles[0].count; ++i)
            std::memcpy(staging.data() + i * row_bytes, read_row(s, use, in, 0, i), size_t(row_bytes));
        int64_t pos = 0;
        for_each_run(v, [&](int64_t off, int64_t n) {
            if (tensor) {
                if (!tensor->decl.is_output && !tensor->decl.is_buffer) throw SimError("writes to input tensor '" + v.tensor + "'");
                std::memcpy(tensor->bytes.data() + off, staging.data() + pos, size_t(n));
                std::fill_n(tensor->written.begin() + off, n, uint8_t(1));
            } else {
                s.dram.write(off, staging.data() + pos, n);
            }
            pos += n;
        });
    }
}

void mxm_lw(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const MxmShape &shape = s.target.mxm_shape(in.dtype);
    WeightBuffer &wb = s.weights[size_t(in.mxm)][size_t(in.buffer)];
    wb.w.assign(size_t(shape.k) * size_t(shape.n), 0.0f);
    wb.dtype = in.dtype;
    wb.loaded = true;
    const int es = dtype_bytes(in.dtype);
    for (int64_t r = 0; r < in.tiles[0].count; ++r) {
        const uint8_t *row = read_row(s, use, in, 0, r);
        for (int j = 0; j < shape.n; ++j) wb.w[size_t(r) * size_t(shape.n) + size_t(j)] = load_as_float(in.dtype, row + j * es);
    }
}

void mxm_mm(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const MxmShape &shape = s.target.mxm_shape(in.dtype);
    const WeightBuffer &wb = s.weights[size_t(in.mxm)][size_t(in.buffer)];
    if (!wb.loaded)
        throw SimError("weight buffer m" + std::to_string(in.mxm) + ".w" + std::to_string(in.buffer) + " was never loaded");
    if (wb.dtype != in.dtype)
        throw SimError(std::string("weight buffer holds ") + dtype_name(wb.dtype) + " weights but the instruction streams " +
                       dtype_name(in.dtype) + " activations");
    const int64_t rows = in.tiles[1].count;
    const int k = shape.k, n = shape.n;
    thread_local std::vector<float> a, out;
    a.resize(size_t(rows * k));
    out.resize(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r) {
        const uint8_t *row = read_row(s, use, in, 1, r);
        float *dst = a.data() + r * k;
        switch (in.dtype) {
        case DType::Int8:
            for (int j = 0; j < k; ++j) dst[j] = float(int8_t(row[j]));
            break;
        case DType::BF16:
            for (int j = 0; j < k; ++j) {
                uint16_t h;
                std::memcpy(&h, row + 2 * j, 2);
                dst[j] = bf16_to_float(h);
            }
            break;
        default:
            for (int j = 0; j < k; ++j) dst[j] = load_as_float(in.dtype, row + j * dtype_bytes(in.dtype));
        }
    }
    mxm_rows(a.data(), wb.w.data(), out.data(), rows, k, n);
    const ResolvedTile &acc = use.tiles[0];
    MemoryImage &am = s.memories[size_t(acc.memory)];
    for (int64_t r = 0; r < rows; ++r) {
        int64_t ar = acc.rows[size_t(r)];
        if (in.accumulate && !am.written[size_t(ar)])
            throw SimError("accumulates into row " + std::to_string(in.tiles[0].base + r * in.tiles[0].stride) + " of " +
                           tile_text(in.tiles[0]) + ", which was never written (start with mxm.mm without .acc)");
        am.written[size_t(ar)] = 1;
        uint8_t *dst = am.row(ar);
        const float *p = out.data() + r * n;
        if (in.dtype == DType::Int8) {
            // Exact: |partial| <= k * 2^14 < 2^24. Wrapping add, as the hardware's int32 adders do.
            uint32_t acc_row[1024];
            std::memcpy(acc_row, dst, size_t(n) * 4);
            for (int j = 0; j < n; ++j)
                acc_row[j] = (in.accumulate ? acc_row[j] : 0u) + uint32_t(int32_t(p[j]));
            std::memcpy(dst, acc_row, size_t(n) * 4);
        } else {
            float acc_row[1024];
            std::memcpy(acc_row, dst, size_t(n) * 4);
            for (int j = 0; j < n; ++j) acc_row[j] = in.accumulate ? acc_row[j] + p[j] : p[j];
            std::memcpy(dst, acc_row, size_t(n) * 4);
        }
    }
}

void mxm_drain(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const MxmShape &shape = in.dtype == DType::Int32 ? s.target.mxm.int8 : s.target.mxm.floating;
    const int n = shape.n;
    const int vl = s.target.vector_bytes;
    const int os = dtype_bytes(in.out_dtype);
    const int rpa = int((int64_t(n) * os + vl - 1) / vl);
    std::vector<uint8_t> packed(size_t(rpa) * size_t(vl));
    for (int64_t r = 0; r < in.tiles[1].count; ++r) {
        const uint8_t *acc = read_row(s, use, in, 1, r);
        std::fill(packed.begin(), packed.end(), uint8_t(0));
        for (int j = 0; j < n; ++j) {
            uint8_t *o = packed.data() + size_t(j) * size_t(os);
            if (in.dtype == DType::Int32) {
                int32_t v;
                std::memcpy(&v, acc + 4 * j, 4);
                if (!in.has_scale) {
                    int64_t x = in.relu ? std::max<int64_t>(v, 0) : v;
                    store_from_int(in.out_dtype, o, x);
                } else {
                    // Scaling in double keeps every int32 exact before the one rounding on store.
                    double x = double(v) * in.scale;
                    if (in.relu) x = std::max(x, 0.0);
                    if (dtype_is_float(in.out_dtype)) store_from_float(in.out_dtype, o, float(x));
                    else store_from_int(in.out_dtype, o, int64_t(std::clamp(std::nearbyint(x), -9.0e18, 9.0e18)));
                }
            } else {
                float v;
                std::memcpy(&v, acc + 4 * j, 4);
                if (in.has_scale) v = float(double(v) * in.scale);
                if (in.relu) v = std::max(v, 0.0f);
                store_from_float(in.out_dtype, o, v);
            }
        }
        for (int q = 0; q < rpa; ++q)
            std::memcpy(write_row(s, use, 0, r * rpa + q), packed.data() + size_t(q) * size_t(vl), size_t(vl));
    }
}

/// One lane's value inside the VXM: fp32 for float dtypes, 64-bit integer otherwise.
struct Lane {
    double f = 0; // fp32 values, held in a double but rounded to float after every op
    int64_t i = 0;
};

double apply_float(VxmOp op, float a, float b, float c) {
    switch (op) {
    case VxmOp::Add: return float(a + b);
    case VxmOp::Sub: return float(a - b);
    case VxmOp::Mul: return float(a * b);
    case VxmOp::Div: return float(a / b);
    case VxmOp::Max: return std::max(a, b);
    case VxmOp::Min: return std::min(a, b);
    case VxmOp::Exp: return std::exp(a);
    case VxmOp::Tanh: return std::tanh(a);
    case VxmOp::Rsqrt: return 1.0f / std::sqrt(a);
    case VxmOp::Recip: return 1.0f / a;
    case VxmOp::Relu: return std::max(a, 0.0f);
    case VxmOp::Cast: return a;
    case VxmOp::Select: return a != 0.0f ? b : c;
    }
    return 0;
}

int64_t wrap32(int64_t v) { return int64_t(int32_t(uint32_t(uint64_t(v)))); }

int64_t apply_int(VxmOp op, int64_t a, int64_t b, int64_t c) {
    switch (op) {
    case VxmOp::Add: return wrap32(a + b);
    case VxmOp::Sub: return wrap32(a - b);
    case VxmOp::Mul: return wrap32(a * b);
    case VxmOp::Div: return b == 0 ? 0 : wrap32(a / b); // integer division by zero gives 0
    case VxmOp::Max: return std::max(a, b);
    case VxmOp::Min: return std::min(a, b);
    case VxmOp::Relu: return std::max<int64_t>(a, 0);
    case VxmOp::Cast: return a;
    case VxmOp::Select: return a != 0 ? b : c;
    default: {
        float r = float(apply_float(op, float(a), float(b), float(c)));
        if (std::isnan(r)) return 0;
        return int64_t(std::clamp(std::nearbyint(double(r)), -2147483648.0, 2147483647.0));
    }
    }
}

void vxm(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const int vl = s.target.vector_bytes;
    const int is = dtype_bytes(in.dtype), os = dtype_bytes(in.out_dtype);
    const int lanes = vl / std::max(is, os);
    const bool fl = dtype_is_float(in.dtype);
    const int nsrc = int(in.tiles.size()) - 1;
    const int64_t pack = vxm_rows_packed(in);     // source rows per destination row
    const int64_t unpack = vxm_rows_unpacked(in); // destination rows per source row
    std::vector<uint8_t> out(static_cast<size_t>(vl));
    for (int64_t r = 0; r < in.tiles[1].count * unpack; ++r) {
        // Unpacking, destination row r takes the (r mod unpack)-th part of source row r / unpack.
        const uint8_t *src[3] = {nullptr, nullptr, nullptr};
        for (int k = 0; k < nsrc; ++k) src[k] = read_row(s, use, in, k + 1, r / unpack) + (r % unpack) * lanes * is;
        // Source row r's lanes land in the (r mod pack)-th part of destination row r / pack.
        const int64_t part = r % pack;
        if (part == 0) std::fill(out.begin(), out.end(), uint8_t(0));
        uint8_t *dst = out.data() + part * lanes * os;
        for (int l = 0; l < lanes; ++l) {
            float fv[3] = {0, 0, 0};
            int64_t iv[3] = {0, 0, 0};
            int k = 0;
            for (; k < nsrc; ++k) {
                if (fl) fv[k] = load_as_float(in.dtype, src[k] + l * is);
                else iv[k] = load_as_int(in.dtype, src[k] + l * is);
            }
            if (in.has_imm) {
                fv[k] = float(in.imm);
                iv[k] = int64_t(std::llround(in.imm));
            }
            float f = 0;
            int64_t i = 0;
            if (fl) f = float(apply_float(in.vop, fv[0], fv[1], fv[2]));
            else i = apply_int(in.vop, iv[0], iv[1], iv[2]);
            for (auto &step : in.chain) {
                if (fl) f = float(apply_float(step.op, f, float(step.imm), 0));
                else i = apply_int(step.op, i, int64_t(std::llround(step.imm)), 0);
            }
            if (fl) store_from_float(in.out_dtype, dst + l * os, f);
            else if (dtype_is_float(in.out_dtype)) store_from_float(in.out_dtype, dst + l * os, float(i));
            else store_from_int(in.out_dtype, dst + l * os, i);
        }
        if (part == pack - 1) std::memcpy(write_row(s, use, 0, r / pack), out.data(), size_t(vl));
    }
}

void vxm_reduce(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const int vl = s.target.vector_bytes;
    const int is = dtype_bytes(in.dtype), os = dtype_bytes(in.out_dtype);
    const int lanes = vl / std::max(is, os);
    const bool fl = dtype_is_float(in.dtype);
    const bool is_max = in.vop == VxmOp::Max;
    auto combine_f = [&](float a, float b) { return is_max ? std::max(a, b) : float(a + b); };
    auto combine_i = [&](int64_t a, int64_t b) { return is_max ? std::max(a, b) : wrap32(a + b); };
    auto store = [&](uint8_t *o, float f, int64_t i) {
        if (fl) store_from_float(in.out_dtype, o, f);
        else store_from_int(in.out_dtype, o, i);
    };
    std::vector<uint8_t> out(static_cast<size_t>(vl));
    if (in.axis == ReduceAxis::Rows) {
        std::vector<float> fa(static_cast<size_t>(lanes));
        std::vector<int64_t> ia(static_cast<size_t>(lanes));
        for (int64_t r = 0; r < in.tiles[1].count; ++r) {
            const uint8_t *row = read_row(s, use, in, 1, r);
            for (int l = 0; l < lanes; ++l) {
                float f = fl ? load_as_float(in.dtype, row + l * is) : 0;
                int64_t i = fl ? 0 : load_as_int(in.dtype, row + l * is);
                fa[size_t(l)] = r == 0 ? f : combine_f(fa[size_t(l)], f);
                ia[size_t(l)] = r == 0 ? i : combine_i(ia[size_t(l)], i);
            }
        }
        std::fill(out.begin(), out.end(), uint8_t(0));
        for (int l = 0; l < lanes; ++l) store(out.data() + l * os, fa[size_t(l)], ia[size_t(l)]);
        std::memcpy(write_row(s, use, 0, 0), out.data(), size_t(vl));
        return;
    }
    for (int64_t r = 0; r < in.tiles[1].count; ++r) {
        const uint8_t *row = read_row(s, use, in, 1, r);
        // A log2 tree across lanes: pairs (l, l + half) combine, halving each level.
        std::vector<float> f(static_cast<size_t>(lanes));
        std::vector<int64_t> iv(static_cast<size_t>(lanes));
        for (int l = 0; l < lanes; ++l) {
            if (fl) f[size_t(l)] = load_as_float(in.dtype, row + l * is);
            else iv[size_t(l)] = load_as_int(in.dtype, row + l * is);
        }
        for (int half = lanes / 2; half >= 1; half /= 2)
            for (int l = 0; l < half; ++l) {
                f[size_t(l)] = combine_f(f[size_t(l)], f[size_t(l + half)]);
                iv[size_t(l)] = combine_i(iv[size_t(l)], iv[size_t(l + half)]);
            }
        std::fill(out.begin(), out.end(), uint8_t(0));
        store(out.data(), f[0], iv[0]);
        std::memcpy(write_row(s, use, 0, r), out.data(), size_t(vl));
    }
}

void sxm(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const int vl = s.target.vector_bytes;
    const int es = dtype_bytes(in.dtype);
    const int lanes = vl / es;
    const int64_t rows = in.tiles[1].count;
    std::vector<uint8_t> src(size_t(rows * vl)), dst(size_t(rows * vl), 0);
    for (int64_t r = 0; r < rows; ++r) std::memcpy(src.data() + r * vl, read_row(s, use, in, 1, r), size_t(vl));
    for (int64_t r = 0; r < rows; ++r)
        for (int l = 0; l < lanes; ++l) {
            int64_t sr = r, sl = l;
            bool zero = false;
            if (in.op == Opcode::SxmTranspose) {
                int64_t block = r / lanes * lanes;
                sr = block + l;
                sl = r - block;
            } else if (in.op == Opcode::SxmPermute) {
                int n = int(in.permutation.size());
                sl = l / n * n + in.permutation[size_t(l % n)];
            } else {
                sl = l - int64_t(in.imm);
                zero = sl < 0 || sl >= lanes;
            }
            if (!zero) std::memcpy(dst.data() + r * vl + l * es, src.data() + sr * vl + sl * es, size_t(es));
        }
    for (int64_t r = 0; r < rows; ++r) std::memcpy(write_row(s, use, 0, r), dst.data() + r * vl, size_t(vl));
}

void mem_copy(const Instruction &in, const ResourceUse &use, MachineState &s) {
    const int rb = s.memories[size_t(use.tiles[1].memory)].row_bytes;
    std::vector<uint8_t> buf(static_cast<size_t>(rb));
    for (int64_t r = 0; r < in.tiles[0].count; ++r) {
        std::memcpy(buf.data(), read_row(s, use, in, 1, r), size_t(rb)); // src and dst may overlap
        std::memcpy(write_row(s, use, 0, r), buf.data(), size_t(rb));
    }
}

} // namespace

void execute(const Instruction &in, const ResourceUse &use, MachineState &state) {
    switch (in.op) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore: dma(in, use, state); break;
    case Opcode::MemCopy: mem_copy(in, use, state); break;
    case Opcode::MxmLw: mxm_lw(in, use, state); break;
    case Opcode::MxmMm: mxm_mm(in, use, state); break;
    case Opcode::MxmDrain: mxm_drain(in, use, state); break;
    case Opcode::Vxm: vxm(in, use, state); break;
    case Opcode::VxmReduce: vxm_reduce(in, use, state); break;
    case Opcode::SxmTranspose:
    case Opcode::SxmPermute:
    case Opcode::SxmShift: sxm(in, use, state); break;
    default: break;
    }
}

} // namespace tessera::chipsim::internal
