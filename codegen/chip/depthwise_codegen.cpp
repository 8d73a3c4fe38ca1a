// Depthwise conv2d (groups == channels) on the VXM (vector_kernels.h).
//
// Why the VXM and not the MXM: each output channel reads only its own input channel, so as a
// matmul every filter tap is a diagonal C x C weight matrix — 1/64 of an int8 tsp-mini plane
// (1/32 of npu-edge's array) would do useful work, and every tap would cost a weight install.
// On the VXM a tap is one multiply and one add over a vector of channels per output pixel (16
// int32/fp32 lanes of a 64-byte vector), every lane useful.
//
// Layout: the host zero-pads the image into X[N, Hp, Wp, Cp] (NHWC, Cp = channels padded to
// the lanes), the filter into W[KH, KW, Cp] and the bias into B[Cp], in the accumulator type (int32
// for int8 — products and sums are then exact and wrap like the reference — fp32 otherwise).
// Per block of channels (one vector), a band of image rows is loaded once (one vector row per pixel); a
// tap's window for one output row is then an on-chip tile with row stride = the conv's
// stride, so no window is ever copied. Each tap's weights are one vector replicated over the
// output row by the DMA. Output row y:
//     acc = [bias +] X[win(0,0)] * W[0,0];  acc = acc + X[win(ky,kx)] * W[ky,kx] ...
// in the reference's order (taps row-major), so float results match it step for step.
#include <algorithm>

#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_kernels.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::TileRef;
using chipsim::VxmOp;

} // namespace

void compile_depthwise(ChipProgram &cp, const DepthwiseConvOp &op, const std::vector<int64_t> &shape) {
    const chipsim::Target &t = cp.target;
    const std::vector<int64_t> xs = constant_shape(op.image), ws = constant_shape(op.weights);
    const bool nchw = op.nchw;
    const int64_t N = xs[0], C = nchw ? xs[1] : xs[3], H = nchw ? xs[2] : xs[1], W = nchw ? xs[3] : xs[2];
    const int64_t OH = nchw ? shape[2] : shape[1], OW = nchw ? shape[3] : shape[2];
    const int64_t KH = op.kh, KW = op.kw, sh = op.stride_h, sw = op.stride_w, dh = op.dilation_h, dw = op.dilation_w;
    const Type it = op.image.type();
    if (!(it == Int(8) || it.is_float()))
        throw Error("chip backend: depthwise conv2d of " + it.to_string() + " has no chip kernel (int8 or float inputs)");
    const DType dt = it == Int(8) ? DType::Int32 : DType::FP32;
    const int64_t kLanes = t.lanes(dt), vl = t.vector_bytes; // a block of channels is one vector
    const int64_t Cp = (C + kLanes - 1) / kLanes * kLanes, CB = Cp / kLanes;
    const int64_t Hp = std::max((OH - 1) * sh + (KH - 1) * dh + 1, op.pad_top + H);
    const int64_t Wp = std::max((OW - 1) * sw + (KW - 1) * dw + 1, op.pad_left + W);
    const std::vector<int> image_dims = nchw ? std::vector<int>{0, 3, 1, 2} : std::vector<int>{0, 1, 2, 3};
    declare(cp, "X", op.image.name(), dt, {N, Hp, Wp, Cp}, xs, image_dims,
            nchw ? std::vector<int64_t>{0, 0, op.pad_top, op.pad_left} : std::vector<int64_t>{0, op.pad_top, op.pad_left, 0}, false);
    cp.tensors.back().pad_value = op.pad_value;
    declare(cp, "W", op.weights.name(), dt, {KH, KW, Cp}, ws, nchw ? std::vector<int>{2, -1, 0, 1} : std::vector<int>{0, 1, -1, 2}, {},
            false);
    if (op.bias) declare(cp, "B", op.bias->name(), dt, {Cp}, constant_shape(*op.bias), {0}, {}, false);
    declare(cp, "Y", cp.outputs.at(0), dt, {N, OH, OW, Cp}, shape, image_dims, {}, true);

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    // Output rows per band: as many as keep the band's image rows within a quarter of a tile.
    const int64_t band_budget = std::max<int64_t>(e.max_tile_rows() / 4, Wp * ((KH - 1) * dh + 1));
    const int64_t RB = std::clamp<int64_t>(((band_budget / Wp) - (KH - 1) * dh - 1) / sh + 1, 1, OH);
    auto replicated = [&](const std::string &tensor, int64_t element) { // one vector, OW times
        chipsim::OffchipView v;
        v.tensor = tensor;
        v.offset = element * 4;
        v.outer = {{OW, 0}};
        v.inner_bytes = vl;
        return v;
    };
    int64_t ops_per_row = 0;
    for (int64_t n = 0; n < N; ++n)
        for (int64_t cb = 0; cb < CB; ++cb) {
            std::vector<TileRef> wt;
            for (int64_t tap = 0; tap < KH * KW; ++tap) {
                wt.push_back(e.tile(OW, 1, 0, "filter tap"));
                e.load(wt.back(), replicated("W", tap * Cp + cb * kLanes), "filter tap");
            }
            TileRef bias;
            if (op.bias) e.load(bias = e.tile(OW, 1, 0, "bias"), replicated("B", cb * kLanes), "bias");
            for (int64_t oy0 = 0; oy0 < OH; oy0 += RB) {
                const int64_t rows = std::min(RB, OH - oy0), rows_in = (rows - 1) * sh + (KH - 1) * dh + 1;
                TileRef img = e.tile(rows_in * Wp, 0, int((oy0 / RB) % 2), "an image band");
                e.load(img, strided_rows("X", (((n * Hp + oy0 * sh) * Wp) * Cp + cb * kLanes) * 4, rows_in * Wp, Cp * 4, vl),
                       "image band");
                // Output rows in waves of 4, interleaved step by step (vector_emitter.h).
                constexpr int64_t kWave = 4;
                for (int64_t oy = oy0; oy < oy0 + rows; ++oy) {
                    if ((oy - oy0) % kWave == 0) e.begin_wave();
                    e.wave_lane(int((oy - oy0) % kWave));
                    std::vector<TileRef> temps;
                    auto dst = [&](const std::vector<TileRef> &srcs, int prefer, const char *what,
                                   const std::vector<TileRef> &apart = {}) {
                        TileRef d = e.dst_for(OW, srcs, prefer, what, apart);
                        temps.push_back(d);
                        return d;
                    };
                    std::optional<TileRef> acc;
                    if (op.bias) acc = bias;
                    for (int64_t ky = 0; ky < KH; ++ky)
                        for (int64_t kx = 0; kx < KW; ++kx) {
                            const TileRef win = VectorEmitter::rows_of(img, ((oy - oy0) * sh + ky * dh) * Wp + kx * dw, OW, sw);
                            const TileRef &w = wt[size_t(ky * KW + kx)];
                            if (!acc) {
                                acc = dst({win, w}, 0, "tap product");
                                e.vxm(VxmOp::Mul, dt, dt, *acc, {win, w}, std::nullopt, {}, "tap product");
                                continue;
                            }
                            const TileRef prod = dst({win, w}, VectorEmitter::other_side(*acc), "tap product", {*acc});
                            e.vxm(VxmOp::Mul, dt, dt, prod, {win, w}, std::nullopt, {}, "tap product");
                            const TileRef sum = dst({*acc, prod}, VectorEmitter::side_of(*acc), "tap sum");
                            e.vxm(VxmOp::Add, dt, dt, sum, {*acc, prod}, std::nullopt, {}, "tap sum");
                            acc = sum;
                        }
                    e.store(strided_rows("Y", (((n * OH + oy) * OW) * Cp + cb * kLanes) * 4, OW, Cp * 4, vl), *acc, "output row");
                    for (auto &tr : temps) e.retire(tr);
                    ops_per_row = int64_t(temps.size());
                    if ((oy - oy0) % kWave == kWave - 1 || oy == oy0 + rows - 1) e.end_wave();
                }
                e.retire(img);
            }
            for (auto &tr : wt) e.retire(tr);
            if (op.bias) e.retire(bias);
        }
    cp.program.target = t.name;
    cp.program.instructions = e.schedule();
    cp.summary += "depthwise conv2d " + std::to_string(KH) + "x" + std::to_string(KW) + " on the VXM: " + std::to_string(N * CB) +
                  " blocks of " + std::to_string(kLanes) + " channels, bands of " + std::to_string(RB) + " output rows, " +
                  std::to_string(ops_per_row) +
                  " vxm ops of " + std::to_string(OW) + " pixels per output row (windows read in place with row stride " +
                  std::to_string(sw) + ")\n";
}

} // namespace tessera::internal::chip
