#pragma once
// The conv2d image's layout change on chip: the pre-pass of the implicit GEMM (gemm_codegen.h).
// The raw NCHW or NHWC image crosses the link as it is; the chip builds the layout the
// matmuls read — pixel rows of channel blocks — with strided DMA, SXM transposes and zero
// fills, inside the program, so its cycles count.
//
// tsp-mini keeps the image in MEM, unpadded: the matmuls stream each tap's window from it and
// read one zero row where a window leaves the image. npu-edge writes the zero-padded image
// [N, Hp, Wp, Cp] to DRAM, from where the matmul's DMA reads tap windows as before.
#include <cstdint>
#include <string>
#include <vector>

#include "instruction_scheduler.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::chip {

/// The raw image one implicit GEMM reads: its program tensor, layout and extents, and the
/// channels the GEMM takes (a group's slice).
struct ConvImageSource {
    std::string tensor;
    chipsim::DType dtype = chipsim::DType::Int8;
    bool nchw = true;
    int64_t n = 1, c = 1, h = 1, w = 1;
    int64_t c_first = 0, c_count = 0;
};

/// The zero-padded geometry npu-edge's DRAM image has (the implicit GEMM's).
struct ConvPadding {
    int64_t hp = 0, wp = 0, pad_top = 0, pad_left = 0;
    int64_t cp = 0; ///< Channels per pixel, a whole number of 64-byte rows.
};

/// Where the pre-pass left one GEMM's image.
struct ConvImage {
    /// tsp-mini: one MEM tile per image; pixel p (y * w + x), channel block b is its row
    /// p * pixel_rows + first_block + b.
    std::vector<chipsim::TileRef> tiles;
    int64_t pixel_rows = 1, first_block = 0;
    /// npu-edge: the padded image [N, Hp, Wp, Cp] at `offset` bytes of `tensor` ("DRAM", or
    /// the raw image itself when it needs no change).
    std::string tensor;
    int64_t offset = 0;
};

/// The pre-pass of a conv's implicit GEMMs, one image per source.
struct ConvPrepass {
    std::vector<ConvImage> images;
    chipsim::TileRef zero_row;            ///< tsp-mini: one row of zeros.
    std::vector<chipsim::TileRef> placed; ///< tsp-mini: every MEM tile it uses (kept by the kernel).
    std::vector<ChipOp> host_loads;       ///< tsp-mini: the raw image crossing the link.
    std::vector<ChipOp> ops;              ///< Everything else, in priority order.
    std::string summary;
};

/// Whether the pre-pass takes `s`: NCHW images always (up to what one tile holds); NHWC when
/// each pixel's channel slice is whole 64-byte rows (a slice's padding lanes could not be
/// zeroed otherwise).
bool conv_image_on_chip(const ConvImageSource &s, const chipsim::Target &t);

/// Emits the pre-pass for `sources` (all taken by conv_image_on_chip). `pad` is used on
/// npu-edge only. Throws tessera::Error when an image does not fit the chip's memory.
ConvPrepass emit_conv_images(const std::vector<ConvImageSource> &sources, const ConvPadding &pad,
                             const chipsim::TimingModel &model);

} // namespace tessera::internal::chip
