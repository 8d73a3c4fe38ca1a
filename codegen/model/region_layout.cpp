// Where a kernel's transfers of a value find its bytes on chip (region_layout.h). A value kept
// in on-chip memory between kernels (mem_resident_link.cpp) lives in its writer's layout; a
// reader that reads it in another one — heads outer instead of tokens, or transposed, as a
// layernorm reads its rows down the lanes — takes each of its tile rows either as a whole row
// of the writer's (a copy) or as a column of a block of the writer's rows (an SXM transpose
// turns a block into its columns): the layout change happens on the chip, as the Groq compiler
// does it, instead of on the host between two programs.
#include "region_layout.h"

#include <numeric>

namespace tessera::internal {

namespace {

int64_t element_count(const std::vector<int64_t> &shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
}

/// Contiguous byte runs of a view, in transfer order.
std::vector<std::pair<int64_t, int64_t>> view_runs(const chipsim::OffchipView &v) {
    std::vector<std::pair<int64_t, int64_t>> runs;
    std::vector<int64_t> index(v.outer.size(), 0);
    while (true) {
        int64_t off = v.offset;
        for (size_t d = 0; d < v.outer.size(); ++d) off += index[d] * v.outer[d].stride;
        if (!runs.empty() && runs.back().first + runs.back().second == off)
            runs.back().second += v.inner_bytes;
        else
            runs.push_back({off, v.inner_bytes});
        size_t d = v.outer.size();
        while (d > 0 && ++index[d - 1] == v.outer[d - 1].count) index[--d] = 0;
        if (d == 0) break;
    }
    return runs;
}

} // namespace

std::optional<std::vector<int64_t>> dense_placement(const ChipTensorMap &m) {
    if (!m.constant.empty() || element_count(m.chip_shape) != element_count(m.source_shape)) return std::nullopt;
    if (!m.chip_limit.empty() && m.chip_limit != m.chip_shape) return std::nullopt;
    std::vector<int64_t> chip_stride(m.chip_shape.size(), 1);
    for (size_t c = m.chip_shape.size(); c-- > 1;) chip_stride[c - 1] = chip_stride[c] * m.chip_shape[c];
    std::vector<int64_t> placement{0};
    for (size_t d = 0; d < m.source_shape.size(); ++d) {
        const int c = m.chip_dim_of_source[d];
        const int64_t offset = d < m.chip_offset.size() ? m.chip_offset[d] : 0;
        if (c < 0) {
            if (m.source_shape[d] != 1) return std::nullopt;
            placement.push_back(0);
            continue;
        }
        placement[0] += offset * chip_stride[size_t(c)];
        placement.push_back(m.source_shape[d] == 1 ? 0 : chip_stride[size_t(c)]);
    }
    return placement;
}

std::optional<std::vector<int64_t>> tensor_rows_of(const chipsim::OffchipView &v, int64_t tile_rows, int64_t row_bytes) {
    std::vector<int64_t> rows;
    for (const auto &[off, n] : view_runs(v)) {
        if (off % row_bytes != 0 || n % row_bytes != 0) return std::nullopt;
        for (int64_t r = 0; r < n / row_bytes; ++r) rows.push_back(off / row_bytes + r);
    }
    if (int64_t(rows.size()) != tile_rows) return std::nullopt;
    return rows;
}

std::optional<RegionRows> region_rows_of(const chipsim::Instruction &load, const ChipProgram &reader, const ChipTensorMap &read,
                                         const ChipProgram &writer, const ChipTensorMap &written, int64_t row_bytes) {
    const chipsim::TensorDecl *rd = reader.program.tensor(read.tensor), *wd = writer.program.tensor(written.tensor);
    if (!rd || !wd || rd->dtype != wd->dtype || read.source_shape != written.source_shape) return std::nullopt;
    const auto rp = dense_placement(read), wp = dense_placement(written);
    if (!rp || !wp) return std::nullopt;
    const int64_t tile_rows = load.tiles.at(0).count;
    if (*rp == *wp)
        if (auto rows = tensor_rows_of(load.view, tile_rows, row_bytes)) return RegionRows{false, std::move(*rows), {}};
    // The writer's byte of each of the reader's bytes, element by element.
    const int64_t es = chipsim::dtype_bytes(rd->dtype), lanes = row_bytes / es;
    const std::vector<int64_t> &shape = read.source_shape;
    auto writer_byte = [&](int64_t reader_byte) {
        const int64_t e = reader_byte / es - (*rp)[0];
        int64_t w = (*wp)[0];
        for (size_t d = 0; d < shape.size(); ++d)
            if ((*rp)[d + 1] > 0) w += e / (*rp)[d + 1] % shape[d] * (*wp)[d + 1];
        return w * es;
    };
    std::vector<int64_t> bytes; // the writer's byte of each element the tile's rows take, in order
    for (const auto &[off, n] : view_runs(load.view)) {
        if (off % es != 0 || n % es != 0) return std::nullopt;
        for (int64_t b = off; b < off + n; b += es) bytes.push_back(writer_byte(b));
    }
    if (int64_t(bytes.size()) != tile_rows * lanes) return std::nullopt;
    RegionRows out;
    // Whole rows: every tile row's elements consecutive from a row's start.
    bool whole = true;
    for (int64_t i = 0; i < tile_rows && whole; ++i) {
        const int64_t first = bytes[size_t(i * lanes)];
        whole = first % row_bytes == 0;
        for (int64_t l = 1; l < lanes && whole; ++l) whole = bytes[size_t(i * lanes + l)] == first + l * es;
        if (whole) out.rows.push_back(first / row_bytes);
    }
    if (whole) return out;
    // Columns: tile row j of a block of L is lane j of the block's L writer rows, evenly spaced.
    if (tile_rows % lanes != 0) return std::nullopt;
    out = RegionRows{true, {}, {}};
    for (int64_t b = 0; b < tile_rows / lanes; ++b) {
        const int64_t *block = bytes.data() + b * lanes * lanes;
        const int64_t first = block[0] / row_bytes, stride = lanes > 1 ? block[1] / row_bytes - first : 1;
        if (block[0] % row_bytes != 0 || stride <= 0) return std::nullopt;
        for (int64_t j = 0; j < lanes; ++j)
            for (int64_t l = 0; l < lanes; ++l)
                if (block[j * lanes + l] != (first + l * stride) * row_bytes + j * es) return std::nullopt;
        out.rows.push_back(first);
        out.strides.push_back(stride);
    }
    return out;
}

} // namespace tessera::internal
