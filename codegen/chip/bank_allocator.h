#pragma once
// Memory placement: which memory, bank(s) and rows each on-chip buffer gets. A first-fit
// allocator over every bank's free row ranges; tiles either live in one bank or interleave
// over a hemisphere's slices (row i in slice i mod slices), which is how a tile is read at more
// than one row per cycle. Interleaved memories (npu-edge's SPAD and ACC) are one flat row space.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::chip {

/// Free row ranges of every bank of a target's memories.
class BankAllocator {
public:
    explicit BankAllocator(const chipsim::Target &target);

    /// `rows` rows in one bank of `memory` (flat bank index: (hemisphere * slices + slice) *
    /// banks + bank), first fit. nullopt when the bank lacks room.
    std::optional<chipsim::TileRef> in_bank(const std::string &memory, int flat_bank, int64_t rows);
    /// `rows` rows interleaved over the slices of one hemisphere (0 west, 1 east) at bank `bank`
    /// of each slice, at the same local rows in every slice.
    std::optional<chipsim::TileRef> interleaved(const std::string &memory, int hemisphere, int bank, int64_t rows);
    /// `rows` consecutive rows of an interleaved memory (bank = row mod banks).
    std::optional<chipsim::TileRef> flat(const std::string &memory, int64_t rows);
    /// Returns a tile's rows.
    void release(const chipsim::TileRef &tile);
    /// Takes exactly the rows of `tile` (placed by another allocator, e.g. a pre-pass whose
    /// results a kernel keeps reading). Throws tessera::Error when some of them are taken.
    void claim(const chipsim::TileRef &tile);

    /// Takes every row of `tile` that is still free; returns the spans taken (for release_spans).
    std::vector<chipsim::BankSpan> take_free(const chipsim::TileRef &tile);
    /// Returns rows take_free took.
    void release_spans(const std::string &memory, const std::vector<chipsim::BankSpan> &spans);

    /// Rows still free in a flat bank.
    int64_t free_rows(const std::string &memory, int flat_bank) const;
    const chipsim::Target &target() const { return target_; }

private:
    struct Range {
        int64_t begin, end;
    };
    int memory_index(const std::string &memory) const;
    std::optional<int64_t> take(std::vector<Range> &free, int64_t rows, int64_t at = -1);
    void give(std::vector<Range> &free, int64_t begin, int64_t end);

    chipsim::Target target_;
    std::vector<std::vector<std::vector<Range>>> free_; // memory -> flat bank (or 0 for flat) -> ranges
};

} // namespace tessera::internal::chip
