// softmax and layernorm over the last axis on the VXM (vector_kernels.h).
//
// Layout: the host lays x[..., C] out transposed, as X[C, ..., L] (L the second-to-last extent
// padded to a multiple of the fp32 lanes of a vector, 16 for 64-byte vectors), so one vector row
// holds one column of that many rows of x, a lane per row. A block of rows is then C vector
// rows, and a reduction along the axis is
// vxm.reduce.rows over them — in time, as the VXM streams — with no lane shuffling at all; the
// per-row result (max, sum, mean, 1/σ) is one vector row, read back as a broadcast operand
// (row stride 0). Everything on chip is fp32 (bf16 inputs widen exactly on the host; a bf16
// result is rounded once, by a cast on the VXM, as the reference rounds it). Asked for y in
// bf16 (ChipLayoutRequests::output_dtype: every reader rounds it so), the op that computes a
// block's result packs columns 2k and 2k+1 into vector row k, and the store halves.
//
// softmax per block:  m = max_r X;  E = exp(X - m);  s = Σ_r E;  Y = E / s
// layernorm per block: μ = Σ_r X / C;  D = X - μ;  v = Σ_r D·D / C;  Y = D · rsqrt(v + ε) [· γ] [+ β]
//
// tsp-mini: inputs are preloaded into MEM when they fit (the kernel's cycles then exclude the
// host link, as for matmul), blocks run side by side on the VXM's ALUs as the list scheduler
// finds room. npu-edge: blocks stream through SPAD from DRAM, loads running ahead of the VXM.
//
// Asked to read x in its own order (ChipLayoutRequests::order: the layout the matmul before
// wrote, so that a linked model keeps it in DRAM), on npu-edge and where C is whole vector
// rows, x and y keep their row-major layout in DRAM and the chip changes the layout itself: a
// block's 16 rows come in chunk by chunk (one strided DMA: row k·16 + r holds chunk k of row
// r), one sxm.transpose of its 16×16 blocks makes row c column c across the 16 rows, and one
// more turns the result back before the store. The SXM runs beside the VXM and the DMA engine;
// its fill and drain make the kernel alone a few thousand cycles slower, which a linked model
// gets back many times over. Asked also for y in bf16 (ChipLayoutRequests::output_dtype) or a
// bf16 copy of it (copy_dtype), each row's chunks are packed two by two (a VXM cast of the
// row's chunks, strided in the tile) and stored in y's place or to a .buffer beside it.
#include <algorithm>

#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_kernels.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::ChainStep;
using chipsim::DType;
using chipsim::TileRef;
using chipsim::VxmOp;

/// The output's dtype on chip: everything computes in fp32; bf16 results are rounded once.
bool rounds_to_bf16(Type t) { return t == BFloat(16); }

} // namespace

void compile_rowwise(ChipProgram &cp, const VectorOp &op, const std::vector<int64_t> &shape, const ChipLayoutRequests &layouts) {
    const chipsim::Target &t = cp.target;
    const bool softmax = op.kind == VectorOp::Kind::Softmax;
    const Input &x = softmax ? op.softmax->x : op.layernorm->x;
    const std::vector<int64_t> xs = constant_shape(x);
    const int rank = int(xs.size());
    const int64_t kLanes = t.lanes(DType::FP32), vl = t.vector_bytes; // one row of x per fp32 lane
    if (rank < 2)
        throw Error("chip backend: " + x.name() + " has rank 1; the chip's softmax/layernorm kernels take [rows, cols] (add a "
                    "leading dimension of 1)");
    const int64_t C = xs.back();
    // Row-major when the caller asks for x in its own order (the layout the kernel before wrote
    // it in): standalone, the host's transpose is free and the SXM's fill and drain are not.
    std::vector<int> identity(size_t(rank), 0);
    for (int d = 0; d < rank; ++d) identity[size_t(d)] = d;
    const auto order_asked = layouts.order.find(x.name());
    const bool row_major = C % kLanes == 0 && order_asked != layouts.order.end() &&
                           order_asked->second == identity;
    // Chip layout [C, d0, ..., d(rank-2) padded to the lanes], or row-major with d(rank-2)
    // padded (blocks of rows never straddle two of its runs).
    std::vector<int64_t> chip{C};
    for (int d = 0; d + 1 < rank; ++d) chip.push_back(d + 2 == rank ? (xs[size_t(d)] + kLanes - 1) / kLanes * kLanes : xs[size_t(d)]);
    int64_t P = 1; // rows of x, padded
    for (size_t d = 1; d < chip.size(); ++d) P *= chip[d];
    const int64_t blocks = P / kLanes;
    std::vector<int> dims;
    for (int d = 0; d + 1 < rank; ++d) dims.push_back(d + 1);
    dims.push_back(0);
    if (row_major) {
        std::rotate(chip.begin(), chip.begin() + 1, chip.end());
        for (int d = 0; d < rank; ++d) dims[size_t(d)] = d;
    }
    declare(cp, "X", x.name(), DType::FP32, chip, xs, dims, {}, false);
    const bool has_gamma = !softmax && op.layernorm->gamma, has_beta = !softmax && op.layernorm->beta;
    if (has_gamma) declare(cp, "G", op.layernorm->gamma->name(), DType::FP32, {C}, {C}, {0}, {}, false);
    if (has_beta) declare(cp, "B", op.layernorm->beta->name(), DType::FP32, {C}, {C}, {0}, {}, false);
    const bool bf16_out = rounds_to_bf16(x.type());
    // y in bf16 (every reader rounds it so), or a bf16 copy beside it (for linked readers, so
    // row-major only): row-major, packed row by row; in the chip's own layout, where a vector
    // row is one column of a block's rows, columns two by two.
    auto asked_bf16 = [&](const std::map<std::string, DType> &requests) {
        const auto it = requests.find(cp.outputs.at(0));
        return !bf16_out && it != requests.end() && it->second == DType::BF16;
    };
    const bool row_major_packs = row_major && C % (2 * kLanes) == 0;
    const bool narrow = asked_bf16(layouts.output_dtype) && (row_major ? row_major_packs : C % 2 == 0);
    const bool copy = !narrow && row_major_packs && t.dram.bytes > 0 && asked_bf16(layouts.copy_dtype);
    declare(cp, "Y", cp.outputs.at(0), narrow ? DType::BF16 : DType::FP32, chip, shape, dims, {}, true);
    if (copy) declare_copy(cp, cp.tensors.back(), "Yb", DType::BF16);

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    // A parameter vector replicated over the lanes: row c holds γ[c] in every lane.
    auto param_view = [&](const std::string &tensor) {
        chipsim::OffchipView v;
        v.tensor = tensor;
        v.outer = {{C, 4}, {kLanes, 0}};
        v.inner_bytes = 4;
        return v;
    };
    auto block_view = [&](const std::string &tensor, int64_t b) {
        if (!row_major) return strided_rows(tensor, b * kLanes * 4, C, P * 4, vl);
        // Chunk k of row r of the block at row k·16 + r.
        chipsim::OffchipView v;
        v.tensor = tensor;
        v.offset = b * kLanes * C * 4;
        v.outer = {{C / kLanes, vl}, {kLanes, C * 4}};
        v.inner_bytes = vl;
        return v;
    };
    TileRef gamma, beta;
    if (has_gamma) e.load(gamma = e.tile(C, 0, 1, "gamma"), param_view("G"), "gamma");
    if (has_beta) e.load(beta = e.tile(C, 0, 1, "beta"), param_view("B"), "beta");
    // tsp-mini: preload every block when the inputs take at most half of MEM, leaving the rest
    // to the working tiles (the kernel then never waits for the host link).
    const int64_t capacity = e.streaming() ? vector_memory(t).total_rows() : 0;
    const bool preload = e.streaming() && 2 * blocks * C <= capacity;
    std::vector<TileRef> xt(static_cast<size_t>(blocks));
    auto load_block = [&](int64_t b) {
        xt[size_t(b)] = e.tile_anywhere(C, int(b % 2), "a block of " + x.name());
        e.load(xt[size_t(b)], block_view("X", b), x.name() + " block");
    };
    if (preload)
        for (int64_t b = 0; b < blocks; ++b) load_block(b);
    e.set_after_preload(preload);
    const DType f32 = DType::FP32;
    // Blocks run in waves of 8, interleaved step by step (vector_emitter.h).
    constexpr int64_t kWave = 8;
    for (int64_t b = 0; b < blocks; ++b) {
        if (b % kWave == 0) e.begin_wave();
        e.wave_lane(int(b % kWave));
        if (!preload) load_block(b);
        BlockTiles block(e, {xt[size_t(b)]});
        TileRef X = xt[size_t(b)];
        if (row_major) { // row c: column c of the block's rows, a lane each
            const TileRef columns = block.fresh(C, {X}, VectorEmitter::side_of(X), "a block's columns");
            emit_sxm_transpose(e, f32, columns, X, "columns of a block");
            block.release(X);
            X = columns;
        }
        TileRef Y;
        if (softmax) {
            TileRef m = block.fresh(1, {X}, VectorEmitter::other_side(X), "softmax max", {X});
            e.reduce_rows(VxmOp::Max, f32, m, X, "row max");
            const TileRef mb = VectorEmitter::broadcast(m, C);
            TileRef E = block.replace(X, {X, mb}, VectorEmitter::side_of(X), "softmax exp");
            e.vxm(VxmOp::Sub, f32, f32, E, {X, mb}, std::nullopt, {ChainStep{VxmOp::Exp, false, 0}}, "exp(x - max)");
            TileRef s = block.fresh(1, {E}, VectorEmitter::other_side(E), "softmax sum", {E});
            e.reduce_rows(VxmOp::Add, f32, s, E, "row sum");
            const TileRef sb = VectorEmitter::broadcast(s, C);
            Y = block.replace(E, {E, sb}, VectorEmitter::side_of(X), "softmax result");
            e.vxm(VxmOp::Div, f32, bf16_out ? DType::BF16 : f32, Y, {E, sb}, std::nullopt, {}, "e / sum");
        } else {
            const double eps = op.layernorm->epsilon;
            TileRef s = block.fresh(1, {X}, VectorEmitter::other_side(X), "layernorm sum");
            e.reduce_rows(VxmOp::Add, f32, s, X, "row sum");
            TileRef mean = block.fresh(1, {s}, VectorEmitter::other_side(X), "layernorm mean", {X});
            e.vxm(VxmOp::Div, f32, f32, mean, {s}, double(C), {}, "mean");
            const TileRef mb = VectorEmitter::broadcast(mean, C);
            TileRef d0 = block.fresh(C, {X, mb}, VectorEmitter::side_of(mb), "layernorm x - mean");
            e.vxm(VxmOp::Sub, f32, f32, d0, {X, mb}, std::nullopt, {}, "x - mean");
            // d0 named twice streams once (one read feeds both operands).
            TileRef sq = block.fresh(C, {d0}, VectorEmitter::side_of(X), "layernorm square");
            e.vxm(VxmOp::Mul, f32, f32, sq, {d0, d0}, std::nullopt, {}, "(x - mean)^2");
            TileRef v = block.fresh(1, {sq}, VectorEmitter::other_side(sq), "layernorm variance");
            e.reduce_rows(VxmOp::Add, f32, v, sq, "sum of squares");
            TileRef inv = block.fresh(1, {v}, VectorEmitter::other_side(d0), "layernorm 1/sigma", {d0});
            e.vxm(VxmOp::Div, f32, f32, inv, {v}, double(C), {ChainStep{VxmOp::Add, true, eps}, ChainStep{VxmOp::Rsqrt, false, 0}},
                  "rsqrt(var + eps)");
            const TileRef ib = VectorEmitter::broadcast(inv, C);
            // The last step rounds to the output dtype; earlier ones stay fp32.
            auto out_dtype = [&](bool last) { return last && bf16_out ? DType::BF16 : f32; };
            const int after_norm = has_gamma ? VectorEmitter::other_side(gamma) : has_beta ? VectorEmitter::other_side(beta) : 0;
            std::vector<TileRef> next_operand;
            if (has_gamma) next_operand.push_back(gamma);
            else if (has_beta) next_operand.push_back(beta);
            Y = block.replace(d0, {d0, ib}, after_norm, "layernorm result", next_operand);
            e.vxm(VxmOp::Mul, f32, out_dtype(!has_gamma && !has_beta), Y, {d0, ib}, std::nullopt, {}, "(x - mean) * rsqrt");
            if (has_gamma) {
                TileRef g = block.replace(Y, {Y, gamma}, has_beta ? VectorEmitter::other_side(beta) : 0, "layernorm * gamma",
                                 has_beta ? std::vector<TileRef>{beta} : std::vector<TileRef>{});
                e.vxm(VxmOp::Mul, f32, out_dtype(!has_beta), g, {Y, gamma}, std::nullopt, {}, "* gamma");
                Y = g;
            }
            if (has_beta) {
                TileRef bt = block.replace(Y, {Y, beta}, 0, "layernorm + beta");
                e.vxm(VxmOp::Add, f32, out_dtype(true), bt, {Y, beta}, std::nullopt, {}, "+ beta");
                Y = bt;
            }
        }
        if (bf16_out) { // widen the rounded values back for the fp32 output tensor
            TileRef w = block.replace(Y, {Y}, VectorEmitter::other_side(Y), "bf16 rounding");
            e.vxm(VxmOp::Cast, DType::BF16, f32, w, {Y}, std::nullopt, {}, "round to bf16");
            Y = w;
        }
        if (row_major) { // back to row k·16 + r: chunk k of row r
            const TileRef rows = block.fresh(C, {Y}, VectorEmitter::side_of(Y), "a block's result rows");
            emit_sxm_transpose(e, f32, rows, Y, "rows of a block");
            Y = rows;
        }
        if (narrow && !row_major) { // columns 2k and 2k+1 of the block's rows in bf16 row k
            // Packed by the op that computed Y; column c goes to Y[c, the block's rows] at 2
            // bytes an element.
            const TileRef packed = pack_rows_to_bf16(e, block, Y, true, "a block's result");
            e.store(strided_rows("Y", b * kLanes * 2, C, P * 2, kLanes * 2), packed, "result block (bf16)");
        } else if (!narrow) {
            e.store(block_view("Y", b), Y, "result block");
        }
        if (row_major && (narrow || copy)) { // row r's chunks, two by two, into bf16 rows r·C/32 ..
            const int64_t per_row = C / (2 * kLanes);
            const TileRef packed = block.fresh(C / 2, {Y}, VectorEmitter::other_side(Y), "a block's result rows in bf16");
            for (int64_t r = 0; r < kLanes; ++r)
                e.vxm(VxmOp::Cast, f32, DType::BF16, VectorEmitter::rows_of(packed, r * per_row, per_row),
                      {VectorEmitter::rows_of(Y, r, C / kLanes, kLanes)}, std::nullopt, {}, "row rounded to bf16");
            chipsim::OffchipView v;
            v.tensor = narrow ? "Y" : "Yb";
            v.offset = b * kLanes * C * 2;
            v.inner_bytes = kLanes * C * 2;
            e.store(v, packed, narrow ? "result block (bf16)" : "result block (bf16 copy)");
        }
        block.retire_all();
        if (b % kWave == kWave - 1 || b == blocks - 1) e.end_wave();
    }
    cp.program.target = t.name;
    cp.program.instructions = e.schedule();
    cp.summary += std::string(softmax ? "softmax" : "layernorm") + " over the last axis on the VXM: " + std::to_string(blocks) +
                  " blocks of " + std::to_string(kLanes) + " rows x " + std::to_string(C) +
                  " (rows across lanes, the reduction over vector rows in time)" +
                  (preload ? "; input preloaded into MEM" : "") + (bf16_out ? "; result rounded to bf16" : "") +
                  (row_major ? "; rows in their own layout in DRAM, turned into columns and back by the SXM" : "") +
                  (narrow ? "; the result stored as bf16" : "") + (copy ? "; a bf16 copy of the result stored to DRAM too" : "") + "\n";
}

} // namespace tessera::internal::chip
