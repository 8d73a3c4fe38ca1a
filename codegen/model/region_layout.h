#pragma once
// Where a kernel's transfers of a value find its bytes on chip (region_layout.cpp): the rows of
// the value's tensor a DMA moves, and, for a reader that reads the value in another layout than
// its writer stored it in, the writer's rows each of its tile rows is (or is a column of).
#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/chipsim/isa.h"
#include "tessera/codegen/chip_backend.h"

namespace tessera::internal {

/// Where a dense map puts its source: the chip element of the source's origin, then per source
/// dimension the chip elements one step along it moves (0 for a dimension of extent 1). None
/// when the chip tensor holds more than the source (padding, a slice) or a compiler's table:
/// such a tensor's extra elements are not the source's, so its bytes are not the value's alone.
std::optional<std::vector<int64_t>> dense_placement(const ChipTensorMap &m);

/// The rows of a dense tensor's bytes (row q holds bytes [q * row_bytes, (q + 1) * row_bytes))
/// that rows 0, 1, ... of a DMA's tile take, in order; nullopt when some tile row is not one
/// whole row of the tensor.
std::optional<std::vector<int64_t>> tensor_rows_of(const chipsim::OffchipView &v, int64_t tile_rows, int64_t row_bytes);

/// The writer's rows a reader's load takes, its tile in the reader's layout:
///  - `rows[i]`, the writer's row that tile row i is (same bytes in the same order): the same
///    layout, or one that orders whole rows differently (heads outer instead of tokens);
///  - or, `transposed`, blocks of L tile rows (L = the dtype's lanes a row), block b the columns
///    0..L-1 of the L writer rows rows[b], rows[b] + strides[b], ...: one sxm.transpose each. A
///    reader that gathers elements down the lanes (a lane's worth of tokens of one column a row)
///    reads even the writer's own layout so.
struct RegionRows {
    bool transposed = false;
    std::vector<int64_t> rows;
    std::vector<int64_t> strides;
};

/// RegionRows of `load` (a dma.load of `read`'s tensor in `reader`) from the tensor `written`
/// of `writer` (one value: same source shape and dtype, both dense); nullopt when some tile row
/// is neither a whole writer row nor, with L-1 others, the columns of L evenly spaced ones.
std::optional<RegionRows> region_rows_of(const chipsim::Instruction &load, const ChipProgram &reader, const ChipTensorMap &read,
                                         const ChipProgram &writer, const ChipTensorMap &written, int64_t row_bytes);

} // namespace tessera::internal
