// Layout changes on chip (vector_kernels.h): ops::transpose and ops::permute whose innermost
// dimension changes — [.., M, N] → [.., N, M], NCHW ↔ NHWC, any permutation — as SXM transposes;
// a permutation that keeps the innermost dimension as strided DMA gathers of whole rows.
//
// Let u be the input dimension that becomes the output's innermost one and v the input's own
// innermost dimension. The input comes onto the chip in its own layout (u and v padded to the
// lane count L = 64 bytes / element size); for every combination of the other dimensions and
// every L-wide chunk of v, a tile of rows (one per u index, a row = that chunk of v) is loaded,
// and one sxm.transpose turns each L×L block of it into L rows of the output — a row per v
// index, its lanes running along u, which is the output's innermost dimension. The store
// scatters those rows to the output's layout with a 2-D strided view. No element is moved by
// the host beyond the zero padding of u and v.
//
// Rows per transposed strip are capped (256 by default) so that loads, transposes and stores
// of different strips overlap in the list scheduler, and tiles stay inside a bank.
#include <algorithm>
#include <numeric>

#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_kernels.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::TileRef;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// The default rule for the rows of one strip (see the file comment).
constexpr int64_t kStripRows = 256;

} // namespace

DType chip_storage_dtype(Type t, const std::string &what) {
    if (t == Int(8)) return DType::Int8;
    if (t == UInt(8)) return DType::UInt8;
    if (t == Int(16)) return DType::Int16;
    if (t == Int(32)) return DType::Int32;
    if (t == BFloat(16)) return DType::BF16;
    if (t == Float(16)) return DType::FP16;
    if (t == Float(32)) return DType::FP32;
    throw Error("chip backend: " + what + " has dtype " + t.to_string() +
                "; chip memories hold int8, uint8, int16, int32, bf16, fp16 and fp32");
}

void emit_sxm_transpose(VectorEmitter &e, DType dt, const TileRef &dst, const TileRef &src, const std::string &what) {
    chipsim::Instruction sx;
    sx.op = chipsim::Opcode::SxmTranspose;
    sx.dtype = dt;
    sx.tiles = {dst, src};
    e.emit(sx, what);
}

namespace {

std::string perm_text(const std::vector<int> &perm) {
    std::string text;
    for (int d : perm) text += (text.empty() ? "" : ",") + std::to_string(d);
    return text;
}

/// The extents of the input padded to `ext` and of the output, its permutation.
struct PermutedTensors {
    std::vector<int64_t> out_ext;  ///< The output's padded extents, in its own order.
    std::vector<int64_t> x_stride; ///< Row-major strides of the input, per input dimension.
    std::vector<int64_t> y_stride; ///< Row-major strides of the output, per output dimension.
};

/// Declares X (the input padded to `ext`) and Y (the output: `ext` permuted), both row-major.
PermutedTensors declare_permuted(ChipProgram &cp, const PermuteOp &op, DType dt, const std::vector<int64_t> &ext,
                                 const std::vector<int64_t> &shape) {
    PermutedTensors p;
    for (int d : op.perm) p.out_ext.push_back(ext[size_t(d)]);
    p.x_stride = row_major_strides(ext);
    p.y_stride = row_major_strides(p.out_ext);
    std::vector<int> dims(ext.size());
    std::iota(dims.begin(), dims.end(), 0);
    declare(cp, "X", op.x.name(), dt, ext, constant_shape(op.x), dims, {}, false);
    declare(cp, "Y", cp.outputs.at(0), dt, p.out_ext, shape, dims, {}, true);
    return p;
}

/// Closes the last wave of `units` (waves of `wave`) and schedules the program.
void finish(ChipProgram &cp, VectorEmitter &e, int64_t units, int wave) {
    if (units % wave != 0) e.end_wave();
    cp.program.target = cp.target.name;
    cp.program.instructions = e.schedule();
}

/// A permutation that keeps the innermost dimension in place (ONNX's [1, L, heads, D] ->
/// [1, heads, L, D]) moves whole rows: each strip of output rows is gathered by one strided DMA
/// load (the rows are strided in the input) and written back by one store, no unit touching it.
/// The innermost dimension is padded to the lane count on both sides of the link.
void compile_row_permute(ChipProgram &cp, const PermuteOp &op, const std::vector<int64_t> &shape, DType dt) {
    const chipsim::Target &t = cp.target;
    const std::vector<int64_t> xs = constant_shape(op.x);
    const int rank = int(xs.size());
    const int64_t es = chipsim::dtype_bytes(dt), L = t.lanes(dt);
    std::vector<int64_t> ext = xs;
    ext.back() = round_up(xs.back(), L);
    const PermutedTensors tensors = declare_permuted(cp, op, dt, ext, shape);
    const std::vector<int64_t> &out_ext = tensors.out_ext, &x_stride = tensors.x_stride, &y_stride = tensors.y_stride;

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    const int64_t chunks = ext.back() / L;
    if (chunks > e.max_tile_rows())
        throw Error("chip backend: a row of " + op.x.name() + " (" + std::to_string(xs.back()) + " elements) is longer than one tile of " +
                    t.name + " holds");
    // Output rows: the output's second innermost dimension (input dimension w) in strips; the
    // dimensions before it one combination at a time.
    const int w = rank >= 2 ? op.perm[size_t(rank - 2)] : -1;
    const int64_t rows_total = w >= 0 ? ext[size_t(w)] : 1, row_step_x = w >= 0 ? x_stride[size_t(w)] : 0;
    const int64_t row_step_y = rank >= 2 ? y_stride[size_t(rank - 2)] : 0;
    const int64_t strip = std::max<int64_t>(1, std::min(rows_total, std::min(kStripRows, e.max_tile_rows()) / chunks));
    int64_t combos = 1;
    for (int k = 0; k + 2 < rank; ++k) combos *= out_ext[size_t(k)];
    int64_t strips = 0;
    constexpr int kWave = 8;
    for (int64_t c = 0; c < combos; ++c) {
        int64_t x_base = 0, y_base = 0, rest = c;
        for (int k = rank - 3; k >= 0; --k) {
            const int64_t i = rest % out_ext[size_t(k)];
            rest /= out_ext[size_t(k)];
            x_base += i * x_stride[size_t(op.perm[size_t(k)])];
            y_base += i * y_stride[size_t(k)];
        }
        for (int64_t r0 = 0; r0 < rows_total; r0 += strip) {
            const int64_t rows = std::min(strip, rows_total - r0);
            if (strips % kWave == 0) e.begin_wave();
            e.wave_lane(int(strips % kWave));
            const TileRef tile = e.tile_anywhere(rows * chunks, int(strips % 2), "a strip of " + op.x.name());
            chipsim::OffchipView xv;
            xv.tensor = "X";
            xv.offset = (x_base + r0 * row_step_x) * es;
            xv.outer = {{rows, row_step_x * es}, {chunks, L * es}};
            xv.inner_bytes = t.vector_bytes;
            e.load(tile, xv, op.x.name() + " rows");
            chipsim::OffchipView yv = xv;
            yv.tensor = "Y";
            yv.offset = (y_base + r0 * row_step_y) * es;
            yv.outer[0].stride = row_step_y * es;
            e.store(yv, tile, "permuted rows");
            e.retire(tile);
            if (++strips % kWave == 0) e.end_wave();
        }
    }
    finish(cp, e, strips, kWave);
    cp.summary += "permute {" + perm_text(op.perm) + "} keeping the innermost dimension: " + std::to_string(strips) +
                  " strips of rows gathered by strided DMA, no unit\n";
}

} // namespace

void compile_permute(ChipProgram &cp, const PermuteOp &op, const std::vector<int64_t> &shape) {
    const chipsim::Target &t = cp.target;
    const std::vector<int64_t> xs = constant_shape(op.x);
    const int rank = int(xs.size());
    const DType dt = chip_storage_dtype(op.x.type(), "Input " + op.x.name());
    const int64_t es = chipsim::dtype_bytes(dt), L = t.lanes(dt);
    const int v = rank - 1, u = op.perm.back();
    if (u == v) return compile_row_permute(cp, op, shape, dt);
    // The padded extents, in the input's dimension order; both layouts use them.
    std::vector<int64_t> ext = xs;
    ext[size_t(u)] = round_up(xs[size_t(u)], L);
    ext[size_t(v)] = round_up(xs[size_t(v)], L);
    const PermutedTensors tensors = declare_permuted(cp, op, dt, ext, shape);
    const std::vector<int64_t> &x_stride = tensors.x_stride;
    std::vector<int64_t> y_stride(xs.size()); // the output's stride of each input dimension
    for (int k = 0; k < rank; ++k) y_stride[size_t(op.perm[size_t(k)])] = tensors.y_stride[size_t(k)];

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    const int64_t strip = std::min<int64_t>(round_up(std::min(kStripRows, ext[size_t(u)]), L), e.max_tile_rows() / L * L);
    // The other dimensions, iterated in the input's order.
    std::vector<int> others;
    for (int d = 0; d < rank; ++d)
        if (d != u && d != v) others.push_back(d);
    int64_t combos = 1;
    for (int d : others) combos *= ext[size_t(d)];
    const int64_t chunks = ext[size_t(v)] / L;
    int64_t transposes = 0, lane = 0;
    constexpr int kWave = 8;
    for (int64_t c = 0; c < combos; ++c) {
        int64_t x_base = 0, y_base = 0, rest = c;
        for (auto it = others.rbegin(); it != others.rend(); ++it) {
            const int64_t i = rest % ext[size_t(*it)];
            rest /= ext[size_t(*it)];
            x_base += i * x_stride[size_t(*it)];
            y_base += i * y_stride[size_t(*it)];
        }
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
            for (int64_t u0 = 0; u0 < ext[size_t(u)]; u0 += strip) {
                const int64_t rows = std::min(strip, ext[size_t(u)] - u0);
                if (lane % kWave == 0) e.begin_wave();
                e.wave_lane(int(lane % kWave));
                // Rows u0.. of the chunk: one u index per row, L consecutive v indices per row.
                const TileRef in = e.tile_anywhere(rows, int(lane % 2), "a strip of " + op.x.name());
                e.load(in, strided_rows("X", (x_base + u0 * x_stride[size_t(u)] + chunk * L) * es, rows, x_stride[size_t(u)] * es,
                                        t.vector_bytes),
                       op.x.name() + " strip");
                const TileRef tr = e.dst_for(rows, {in}, VectorEmitter::side_of(in), "transposed strip");
                emit_sxm_transpose(e, dt, tr, in, "transpose " + std::to_string(rows / L) + " blocks");
                // Row (b, j) of the result: v index chunk·L + j, lanes u0 + b·L ..: output row
                // offset (chunk·L + j)·stride(v) + u0 + b·L, u being the output's innermost dim.
                chipsim::OffchipView yv;
                yv.tensor = "Y";
                yv.offset = (y_base + chunk * L * y_stride[size_t(v)] + u0) * es;
                yv.outer = {{rows / L, L * es}, {L, y_stride[size_t(v)] * es}};
                yv.inner_bytes = t.vector_bytes;
                e.store(yv, tr, "transposed strip");
                e.retire(in);
                e.retire(tr);
                ++transposes;
                if (++lane % kWave == 0) e.end_wave();
            }
    }
    finish(cp, e, lane, kWave);
    cp.summary += "permute {" + perm_text(op.perm) + "} on the SXM: " + std::to_string(transposes) + " sxm.transpose of up to " +
                  std::to_string(strip / L) + " blocks of " + std::to_string(L) + "x" + std::to_string(L) + " " +
                  chipsim::dtype_name(dt) + ", strided DMA in and out\n";
}

} // namespace tessera::internal::chip
