// Merging the preload's host DMAs on a streaming chip (preload_merging.h).
//
// On tsp-mini every DMA holds the one engine for the host link's latency (400 cycles) before
// its bytes move, so a kernel that preloads its weights as one 2 KiB tile per (K block, column
// block) — BERT-base's 768 x 768 projection: 576 tiles — spends most of its host I/O waiting.
// The emitters place each tile where the kernel reads it best (planes reading consecutive K
// blocks from different slices); this pass leaves every placement as it is and only changes how
// the tiles arrive: loads into consecutive rows of one bank whose sources step by a constant
// offset become one DMA with one more view dimension.
#include "preload_merging.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace tessera::internal::chip {

namespace {

using chipsim::Instruction;
using chipsim::Opcode;
using chipsim::TileRef;

bool is_host_load(const Instruction &in, const chipsim::Target &t) { return t.dram.bytes == 0 && in.op == Opcode::DmaLoad; }

/// A chain of loads one DMA can make: consecutive rows of one bank (or one bank interleaved over
/// a hemisphere's slices), sources `step` bytes apart.
struct Chain {
    size_t first;               ///< Index (in the preload) of the first load.
    std::vector<size_t> members;
    int64_t step = 0;
    TileRef tile;               ///< The rows all members fill, in order.
};

/// What two loads must share to join one chain: the source tensor and view shape, and the
/// destination bank (a tile of one bank's consecutive rows).
auto chain_key(const Instruction &in) {
    const TileRef &d = in.tiles.at(0);
    std::vector<int64_t> shape{in.view.inner_bytes};
    for (const chipsim::ViewDim &o : in.view.outer) shape.insert(shape.end(), {o.count, o.stride});
    return std::tuple(in.view.tensor, shape, d.memory, d.side, d.slice, d.bank);
}

} // namespace

std::vector<ChipOp> merge_preload_loads(const std::vector<ChipOp> &ops, const chipsim::TimingModel &model) {
    const chipsim::Target &t = model.target();
    if (t.dram.bytes != 0) return ops; // DRAM chips: a tile's own DMA lets work start on it early
    // The preload: the host loads before any other instruction, which nothing reads until every
    // one of them has landed.
    size_t preload = 0;
    while (preload < ops.size() && is_host_load(ops[preload].in, t) && !ops[preload].after_preload) ++preload;
    if (preload < 2) return ops;
    // Merging moves a load ahead of those between it and its chain's first load: harmless when
    // no two of them write one row (then the order of writes decided the rows' values).
    std::set<int64_t> written;
    for (size_t i = 0; i < preload; ++i)
        for (const chipsim::RowAccess &a : model.row_accesses(ops[i].in, model.resources(ops[i].in)))
            if (a.write && !written.insert(row_key(a)).second) return ops;

    std::map<decltype(chain_key(ops[0].in)), std::vector<Chain>> open;
    std::vector<Chain> chains;
    for (size_t i = 0; i < preload; ++i) {
        const Instruction &in = ops[i].in;
        const TileRef &d = in.tiles.at(0);
        // Rows are logical (a tile interleaved over slices numbers them across its slices), so
        // consecutive rows are consecutive whether a tile sits in one slice or in all.
        const bool mergeable = d.bank >= 0 && d.stride == 1 && int(in.view.outer.size()) + 2 <= t.dma.max_dims;
        if (mergeable) {
            bool joined = false;
            for (Chain &c : open[chain_key(in)]) {
                const Instruction &head = ops[c.first].in;
                const int64_t step = in.view.offset - ops[c.members.back()].in.view.offset;
                const bool next_rows = d.base == c.tile.base + c.tile.count && d.count == head.tiles[0].count;
                if (!next_rows || step <= 0 || (c.members.size() > 1 && step != c.step)) continue;
                c.step = step;
                c.members.push_back(i);
                c.tile.count += d.count;
                joined = true;
                break;
            }
            if (joined) continue;
        }
        Chain c{i, {i}, 0, d};
        if (mergeable) open[chain_key(in)].push_back(c);
        else chains.push_back(c);
    }
    for (auto &[key, list] : open)
        for (Chain &c : list) chains.push_back(std::move(c));
    if (chains.size() == preload) return ops;

    // One DMA a chain, in the order of the chains' first loads (the order the emitter wanted
    // its tiles in).
    std::sort(chains.begin(), chains.end(), [](const Chain &a, const Chain &b) { return a.first < b.first; });
    std::vector<ChipOp> merged;
    merged.reserve(ops.size() - preload + chains.size());
    for (const Chain &c : chains) {
        ChipOp op = ops[c.first];
        if (c.members.size() > 1) {
            op.in.tiles[0] = c.tile;
            op.in.view.outer.insert(op.in.view.outer.begin(), chipsim::ViewDim{int64_t(c.members.size()), c.step});
            op.what += " and " + std::to_string(c.members.size() - 1) + " more tiles (one DMA)";
        }
        merged.push_back(std::move(op));
    }
    merged.insert(merged.end(), ops.begin() + std::ptrdiff_t(preload), ops.end());
    return merged;
}

} // namespace tessera::internal::chip
