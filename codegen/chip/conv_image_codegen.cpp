// The conv image pre-pass (conv_image_codegen.h).
//
// An NHWC image whose channel slice is whole 64-byte rows already is pixel rows of channel
// blocks: tsp-mini loads it as it is, npu-edge copies it band by band into the padded DRAM
// image. An NCHW image is channel planes: it comes on chip as channel-major rows — row
// c * KC + k holds pixels [k L, k L + L) of channel c, L lanes a row, KC = ceil(H W / L) — the
// channels a block lacks are zero rows, and one sxm.transpose per (pixel chunk, channel block)
// turns L such rows into L pixel rows of that block (layout_codegen.cpp's transpose). A
// chunk's window may read past its channel's plane (those pixels are never used) but never
// past the tensor: a window that would is loaded from the tensor's last vector and shifted
// into place on the SXM, which also zeroes the lanes past the end.
//
// npu-edge's DRAM image pads a pixel's channels to the array's depth, as the host did: for
// int8 that can end in half a 64-byte row, whose channel rows are doubled before the
// transpose, so that a store can write both (equal) halves of a pixel row to that half row.
#include "conv_image_codegen.h"

#include <algorithm>

#include "vector_emitter.h"
#include "vector_kernels.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::Instruction;
using chipsim::OffchipView;
using chipsim::Opcode;
using chipsim::TileRef;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Rows past which an NCHW staging tile is split (npu-edge): loads, transposes and stores of
/// different parts then overlap, and the matmul kernel's slots are not all taken at once.
constexpr int64_t kStageRows = 2048;
/// Pixel rows transposed into one tile before they are stored (npu-edge): each dma.store pays
/// the DMA setup and the DRAM latency once, so a few large stores beat one per block.
constexpr int64_t kStoreRows = 512;

class Prepass {
public:
    explicit Prepass(const chipsim::TimingModel &model) : e_(model), vl_(model.target().vector_bytes) {
        e_.set_after_preload(true);
    }

    ConvPrepass run(const std::vector<ConvImageSource> &sources, const ConvPadding &pad) {
        ConvPrepass out;
        int64_t dram = 0; // next free byte of the DRAM scratch
        for (const ConvImageSource &s : sources) {
            ConvImage img;
            // tsp-mini: a zero row only where some window leaves the image (the matmuls read it).
            const bool windows_leave = pad.pad_top > 0 || pad.pad_left > 0 || pad.hp > pad.pad_top + s.h || pad.wp > pad.pad_left + s.w;
            if (e_.streaming()) img = s.nchw ? tsp_nchw(s, windows_leave) : tsp_nhwc(s, windows_leave);
            else img = npu(s, pad, dram);
            out.images.push_back(img);
        }
        out.zero_row = zero_;
        out.placed = placed_;
        for (ChipOp &op : e_.take_ops()) {
            const bool host = e_.streaming() && op.in.op == Opcode::DmaLoad;
            (host ? out.host_loads : out.ops).push_back(std::move(op));
        }
        out.summary = summary_;
        return out;
    }

private:
    int es(const ConvImageSource &s) const { return chipsim::dtype_bytes(s.dtype); }
    int64_t lanes(const ConvImageSource &s) const { return e_.target().lanes(s.dtype); }

    /// A tile the kernel keeps reading (tsp-mini): remembered so that it stays placed.
    TileRef keep(int64_t rows, int side, const std::string &what) {
        TileRef tr = e_.tile_anywhere(rows, side, what, /*spread=*/e_.streaming());
        placed_.push_back(tr);
        return tr;
    }

    /// One row of zeros, made once: `written` (any row already written) shifted by a whole
    /// vector, so every lane shifts in a zero. tsp-mini: in bank 0, beside the images, so that
    /// copying it into a stage (bank 1) never reads and writes one bank.
    TileRef zero_row(const TileRef &written) {
        if (zero_.count == 0) {
            zero_ = e_.streaming() ? e_.tile(1, VectorEmitter::other_side(written), 0, "zero row") : e_.tile(1, 0, 0, "zero row");
            if (e_.streaming()) placed_.push_back(zero_);
            e_.shift(DType::Int8, zero_, VectorEmitter::rows_of(written, 0, 1), vl_, "zero row");
        }
        return zero_;
    }

    /// `rows` rows of zeros into `dst` (a copy of the zero row).
    void zero_fill(const TileRef &dst, const TileRef &written) {
        if (dst.count == 0) return;
        e_.copy(dst, VectorEmitter::broadcast(zero_row(written), dst.count), "zero rows");
    }

    /// Channels [c0, c0 + cs) of image n (NCHW) into `stage` as channel-major rows of kc
    /// pixel chunks (the file comment); rows past cs * kc are the caller's.
    void load_channel_rows(const ConvImageSource &s, int64_t n, int64_t c0, int64_t cs, const TileRef &stage, int64_t kc) {
        const int64_t L = lanes(s), hw = s.h * s.w, total = s.n * s.c * hw;
        auto first = [&](int64_t c) { return (n * s.c + c0 + c) * hw; }; // element index of channel c's plane
        int64_t whole = cs; // channels whose kc windows all end inside the tensor
        while (whole > 0 && first(whole - 1) + kc * L > total) --whole;
        if (whole > 0) {
            OffchipView v;
            v.tensor = s.tensor;
            v.offset = first(0) * es(s);
            v.outer = {{whole, hw * es(s)}, {kc, vl_}};
            v.inner_bytes = vl_;
            e_.load(VectorEmitter::rows_of(stage, 0, whole * kc), v, "image channels");
        }
        for (int64_t c = whole; c < cs; ++c) {
            const int64_t fit = first(c) + L <= total ? std::min(kc, (total - first(c) - L) / L + 1) : 0;
            if (fit > 0) e_.load(VectorEmitter::rows_of(stage, c * kc, fit), strided_rows(s.tensor, first(c) * es(s), fit, vl_, vl_), "image channel");
            for (int64_t k = fit; k < kc; ++k) {
                if (total < L)
                    throw Error("chip backend: the conv image " + s.tensor + " has " + std::to_string(total) +
                                " elements, fewer than one " + std::to_string(vl_) + "-byte vector; the chip reads it in whole vectors");
                const TileRef last = e_.streaming() ? e_.tile(1, VectorEmitter::other_side(stage), 0, "last vector of the image")
                                                    : e_.tile(1, 0, 0, "last vector of the image");
                e_.load(last, strided_rows(s.tensor, (total - L) * es(s), 1, vl_, vl_), "last vector of the image");
                // Lane l of `last` is element total - L + l; the row wants element first(c) + k L + l.
                e_.shift(s.dtype, VectorEmitter::rows_of(stage, c * kc + k, 1), last,
                         -(first(c) + k * L - (total - L)), "align the image's end");
                // tsp-mini: the kernel's preloads go out before the pre-pass runs, so they must
                // not land on this row either.
                if (e_.streaming()) placed_.push_back(last);
                else e_.retire(last);
            }
        }
    }

    /// sxm.transpose of pixel chunk k of channel block b of `stage` (kc chunks a channel)
    /// into `dst` (L rows: the chunk's pixels, lanes the block's channels).
    void transpose_chunk(const ConvImageSource &s, const TileRef &dst, const TileRef &stage, int64_t kc, int64_t k, int64_t b) {
        const int64_t L = lanes(s);
        emit_sxm_transpose(e_, s.dtype, dst, VectorEmitter::rows_of(stage, b * L * kc + k, L, kc), "image to pixel rows");
    }

    ConvImage tsp_nhwc(const ConvImageSource &s, bool need_zero) {
        ConvImage img;
        img.pixel_rows = s.c * es(s) / vl_;
        img.first_block = s.c_first * es(s) / vl_;
        const int64_t rows = s.h * s.w * img.pixel_rows;
        for (int64_t n = 0; n < s.n; ++n) {
            auto key = std::make_pair(s.tensor, n); // groups share their image's tile
            auto it = std::find_if(nhwc_.begin(), nhwc_.end(), [&](auto &x) { return x.first == key; });
            if (it == nhwc_.end()) {
                TileRef tr = keep(rows, int(n % 2), "image " + s.tensor);
                e_.load(tr, strided_rows(s.tensor, n * rows * vl_, rows, vl_, vl_), "image " + s.tensor);
                if (need_zero) zero_row(tr);
                nhwc_.push_back({key, tr});
                it = nhwc_.end() - 1;
            }
            img.tiles.push_back(it->second);
        }
        summary_ += "image " + s.tensor + " (NHWC) loaded as it is";
        summary_ += "; ";
        return img;
    }

    ConvImage tsp_nchw(const ConvImageSource &s, bool need_zero) {
        const int64_t L = lanes(s), kc = ceil_div(s.h * s.w, L), blocks = ceil_div(s.c_count, L);
        ConvImage img;
        img.pixel_rows = blocks;
        int64_t transposes = 0;
        for (int64_t n = 0; n < s.n; ++n) {
            // The image in bank 0 of one hemisphere, each channel block's rows in bank 1 of
            // alternating hemispheres: a block's transposes run on that hemisphere's SXM, so
            // both SXMs work (one stage for all blocks: 14^2 256->256 NCHW 9261 cycles, per
            // block 7359; splitting a single block's pixel chunks over both measured slower),
            // and no transpose reads and writes one bank.
            const int side = int((n + s.c_first / L) % 2);
            const TileRef image = keep(kc * L * blocks, side, "image " + s.tensor);
            std::vector<TileRef> stages;
            for (int64_t b = 0; b < blocks; ++b) {
                const int64_t cs = std::min(L, s.c_count - b * L);
                stages.push_back(e_.tile_anywhere(L * kc, int((side + b) % 2), "image channels of " + s.tensor, true, 1));
                placed_.push_back(stages.back()); // read by the transposes, which the kernel's placement does not see
                load_channel_rows(s, n, s.c_first + b * L, cs, stages.back(), kc);
                zero_fill(VectorEmitter::rows_of(stages.back(), cs * kc, (L - cs) * kc), stages.back());
            }
            if (need_zero) zero_row(stages[0]);
            for (int64_t k = 0; k < kc; ++k)
                for (int64_t b = 0; b < blocks; ++b, ++transposes)
                    transpose_chunk(s, VectorEmitter::rows_of(image, k * L * blocks + b, L, blocks), stages[size_t(b)], kc, k, 0);
            img.tiles.push_back(image);
        }
        summary_ += "image " + s.tensor + " channels " + std::to_string(s.c_first) + ".." + std::to_string(s.c_first + s.c_count - 1) +
                    " (NCHW) to pixel rows by " + std::to_string(transposes) + " sxm.transpose; ";
        return img;
    }

    /// npu-edge: the padded image in DRAM.
    ConvImage npu(const ConvImageSource &s, const ConvPadding &pad, int64_t &dram) {
        ConvImage img;
        const int64_t cb = pad.cp * es(s) / vl_; // rows a pixel
        if (!s.nchw && pad.pad_top == 0 && pad.pad_left == 0 && pad.hp == s.h && pad.wp == s.w && s.c_first == 0 &&
            s.c_count == s.c && pad.cp == s.c) {
            img.tensor = s.tensor; // already the layout the matmuls read
            summary_ += "image " + s.tensor + " (NHWC, unpadded) read as it is; ";
            return img;
        }
        img.tensor = "DRAM";
        img.offset = dram;
        const int64_t pixel_bytes = pad.cp * es(s), image_bytes = pad.hp * pad.wp * pixel_bytes;
        dram += s.n * image_bytes;
        int64_t stores = 0;
        for (int64_t n = 0; n < s.n; ++n) {
            const int64_t base = img.offset + n * image_bytes;
            auto at = [&](int64_t y, int64_t x) { return base + ((pad.pad_top + y) * pad.wp + pad.pad_left + x) * pixel_bytes; };
            TileRef written; // some row already written, to make zeros from
            if (!s.nchw) {
                const int64_t rows_per_line = s.w * cb, lines = std::max<int64_t>(1, kStageRows / rows_per_line);
                for (int64_t y0 = 0; y0 < s.h; y0 += lines) {
                    const int64_t ny = std::min(lines, s.h - y0);
                    const TileRef tr = e_.tile(ny * rows_per_line, 0, 0, "image rows");
                    OffchipView in;
                    in.tensor = s.tensor;
                    in.offset = (((n * s.h + y0) * s.w) * s.c + s.c_first) * es(s);
                    in.outer = {{ny * s.w, s.c * es(s)}};
                    in.inner_bytes = pixel_bytes;
                    e_.load(tr, in, "image rows");
                    OffchipView out;
                    out.tensor = "DRAM";
                    out.offset = at(y0, 0);
                    out.outer = {{ny, pad.wp * pixel_bytes}};
                    out.inner_bytes = s.w * pixel_bytes;
                    e_.store(out, tr, "padded image rows");
                    ++stores;
                    if (written.count == 0) written = tr;
                    e_.retire(tr);
                }
            } else {
                const int64_t L = lanes(s), hw = s.h * s.w, kc = ceil_div(hw, L);
                const int64_t part = std::max<int64_t>(1, kStageRows / (L * kc)) * L; // channels staged at once
                const int64_t chunks = std::max<int64_t>(1, kStoreRows / L);          // pixel chunks stored at once
                for (int64_t c0 = 0; c0 < s.c_count; c0 += part) {
                    const int64_t cs = std::min(part, s.c_count - c0), blocks = ceil_div(cs, L);
                    const TileRef stage = e_.tile(blocks * L * kc, 0, 0, "image channels");
                    load_channel_rows(s, n, s.c_first + c0, cs, stage, kc);
                    if (written.count == 0) written = stage;
                    zero_fill(VectorEmitter::rows_of(stage, cs * kc, (blocks * L - cs) * kc), stage);
                    for (int64_t b = 0; b < blocks; ++b) {
                        // A pixel's last channel block may be half a row (the array's 32
                        // channels of int8): its channel rows are doubled, so each pixel row
                        // holds them twice and a store may write both halves to one place.
                        const bool half = (c0 / L + b + 1) * L > pad.cp;
                        if (half) {
                            e_.copy(VectorEmitter::rows_of(stage, (b * L + L / 2) * kc, L / 2 * kc),
                                    VectorEmitter::rows_of(stage, b * L * kc, L / 2 * kc), "double a half block");
                        }
                        for (int64_t k0 = 0; k0 < kc; k0 += chunks) {
                            const int64_t nk = std::min(chunks, kc - k0);
                            const TileRef px = e_.tile(nk * L, 0, 0, "pixel rows");
                            for (int64_t k = k0; k < k0 + nk; ++k)
                                transpose_chunk(s, VectorEmitter::rows_of(px, (k - k0) * L, L), stage, kc, k, b);
                            stores += store_pixels(px, k0 * L, std::min(hw, (k0 + nk) * L), (c0 / L + b) * vl_, half, s, pad, at);
                            e_.retire(px);
                        }
                    }
                    e_.retire(stage);
                }
            }
            stores += store_border(s, pad, base, written);
        }
        summary_ += "image " + s.tensor + (s.nchw ? " (NCHW) transposed" : " (NHWC) copied") + " into a zero-padded " +
                    std::to_string(pad.hp) + "x" + std::to_string(pad.wp) + "x" + std::to_string(pad.cp) + " image in DRAM (" +
                    std::to_string(stores) + " dma.store); ";
        return img;
    }

    /// Stores pixel rows [p0, p1) (row j of `src`: pixel p0 + j) at byte `lane_offset` of
    /// their padded pixels: one strided store per run inside an image row, one 2-D store for
    /// whole image rows. Returns the stores.
    template <typename At>
    int64_t store_pixels(const TileRef &src, int64_t p0, int64_t p1, int64_t lane_offset, bool half, const ConvImageSource &s,
                         const ConvPadding &pad, At at) {
        const int64_t pixel_bytes = pad.cp * es(s);
        int64_t stores = 0;
        for (int64_t p = p0; p < p1; ++stores) {
            const int64_t y = p / s.w, x = p % s.w;
            OffchipView v;
            v.tensor = "DRAM";
            v.offset = at(y, x) + lane_offset;
            v.inner_bytes = vl_;
            int64_t count = 0;
            if (x != 0 || p1 - p < s.w) {
                count = std::min(p1 - p, s.w - x);
                v.outer = {{count, pixel_bytes}};
            } else {
                const int64_t lines = (p1 - p) / s.w;
                count = lines * s.w;
                v.outer = {{lines, pad.wp * pixel_bytes}, {s.w, pixel_bytes}};
            }
            if (half) { // both halves of the row (the same values) to the same half row
                v.outer.push_back({2, 0});
                v.inner_bytes = vl_ / 2;
            }
            e_.store(v, VectorEmitter::rows_of(src, p - p0, count), "pixel rows");
            p += count;
        }
        return stores;
    }

    /// Zeros around the image: the top and bottom bands and the left and right columns.
    int64_t store_border(const ConvImageSource &s, const ConvPadding &pad, int64_t base, const TileRef &written) {
        const int64_t pixel_bytes = pad.cp * es(s), line = pad.wp * pixel_bytes;
        const int64_t right = pad.wp - pad.pad_left - s.w, bottom = pad.hp - pad.pad_top - s.h;
        if (pad.pad_top == 0 && pad.pad_left == 0 && right == 0 && bottom == 0) return 0;
        if (zeros_.count == 0) {
            zeros_ = e_.tile(kStoreRows, 0, 0, "zero rows");
            zero_fill(zeros_, written);
        }
        // Pixels of half rows (see npu()): zeros in 32-byte runs, each written twice.
        const int64_t unit = pixel_bytes % vl_ == 0 ? vl_ : vl_ / 2, cap = zeros_.count * unit;
        int64_t stores = 0;
        auto zero_store = [&](OffchipView v) {
            const int64_t bytes = v.total_bytes();
            if (unit != vl_) {
                v.outer.push_back({v.inner_bytes / unit, unit});
                v.outer.push_back({2, 0});
                v.inner_bytes = unit;
            }
            e_.store(v, VectorEmitter::rows_of(zeros_, 0, bytes / unit), "zero border");
            ++stores;
        };
        auto band = [&](int64_t offset, int64_t bytes) { // contiguous
            for (int64_t b = 0; b < bytes; b += cap) zero_store(strided_rows("DRAM", offset + b, 1, 0, std::min(cap, bytes - b)));
        };
        auto columns = [&](int64_t offset, int64_t width) { // `width` pixels at the same place of every image row
            if (width == 0) return;
            const int64_t bytes = width * pixel_bytes;
            for (int64_t y = 0; y < s.h;) {
                const int64_t lines = std::clamp<int64_t>(cap / bytes, 1, s.h - y);
                if (bytes > cap) { // wider than the zero tile: a band per line
                    band(offset + (pad.pad_top + y) * line, bytes);
                    ++y;
                    continue;
                }
                zero_store(strided_rows("DRAM", offset + (pad.pad_top + y) * line, lines, line, bytes));
                y += lines;
            }
        };
        band(base, pad.pad_top * line);
        band(base + (pad.pad_top + s.h) * line, bottom * line);
        columns(base, pad.pad_left);
        columns(base + (pad.pad_left + s.w) * pixel_bytes, right);
        return stores;
    }

    VectorEmitter e_;
    int64_t vl_;
    TileRef zero_, zeros_;
    std::vector<TileRef> placed_;
    std::vector<std::pair<std::pair<std::string, int64_t>, TileRef>> nhwc_;
    std::string summary_;
};

} // namespace

bool conv_image_on_chip(const ConvImageSource &s, const chipsim::Target &t) {
    const int64_t es = chipsim::dtype_bytes(s.dtype), vl = t.vector_bytes;
    const bool streaming = t.issue == chipsim::IssueKind::Static;
    const int64_t tile_rows = max_vector_tile_rows(t);
    const int64_t L = t.lanes(s.dtype), hw = s.h * s.w;
    if (!s.nchw) {
        if ((s.c_first * es) % vl != 0 || (s.c_count * es) % vl != 0) return false;
        return !streaming || hw * s.c * es / vl <= tile_rows;
    }
    const int64_t rows = ceil_div(hw, L) * L * ceil_div(s.c_count, L); // the staging and the image tile
    return streaming ? rows <= tile_rows : ceil_div(hw, L) * L <= 2 * kStageRows;
}

ConvPrepass emit_conv_images(const std::vector<ConvImageSource> &sources, const ConvPadding &pad, const chipsim::TimingModel &model) {
    return Prepass(model).run(sources, pad);
}

} // namespace tessera::internal::chip
