// The streamed tsp-mini matmul's plan: band size, wave shape, MEM regions, from a cost model
// of host link cycles against MXM cycles (stream_plan.h).
#include "stream_plan.h"

#include <algorithm>
#include <map>

#include "bank_allocator.h"

namespace tessera::internal::chip {

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
    return (a + b - 1) / b;
}

/// Allocates the plan's regions: result and B buffers east (where the weight installs and
/// stores read), A west (where only the matmuls read), so that an install never waits for a
/// matmul's 512-row read of a slice. False when even one band of A does not fit.
bool allocate_regions(StreamedGemmPlan &p, const StreamedGemmShape &s, const chipsim::Target &t,
                      int64_t waves, int64_t b_keys) {
    const chipsim::MemoryDesc &mem = *t.memory("MEM");
    BankAllocator alloc(t);
    const int64_t kb = s.k / s.ku, groups = ceil_div(kb, p.group_blocks);
    const int64_t a_rows = p.group_blocks * s.rows, b_rows = p.wave_cols * kb * s.ku;
    const int64_t c_rows = p.band_chunks * p.wave_cols * s.rows * s.drain_rows;
    auto east = [&](int64_t rows, int i) -> std::optional<chipsim::TileRef> {
        for (int b : {i % mem.banks, (i + 1) % mem.banks})
            if (auto tr = alloc.interleaved("MEM", 1, b, rows)) return tr;
        return std::nullopt;
    };
    // Two result buffers: a wave drains into one while the previous wave's results leave.
    for (int i = 0; i < (waves > 1 ? 2 : 1); ++i) {
        auto tr = east(c_rows, i);
        if (!tr) return false;
        p.c_buffers.push_back(*tr);
    }
    // A fused epilogue's tiles: drained results, operands and one slot per step, all per job.
    if (s.epilogue_steps > 0) {
        const int64_t jobs = p.band_chunks * p.wave_cols, slot = s.rows * s.drain_rows;
        auto d = east(jobs * slot, 0), x = east(s.epilogue_steps * slot, 1);
        if (!d || !x) return false;
        p.drained = *d;
        p.scratch = *x;
        if (s.epilogue_operands > 0) {
            auto o = east(jobs * s.epilogue_operands * slot, 0);
            if (!o) return false;
            p.operands = *o;
        }
    }
    // B buffers: as many as the east holds, up to one per distinct B (then B loads once).
    for (int i = 0; i < b_keys; ++i) {
        auto tr = east(b_rows, i);
        if (!tr) break;
        p.b_buffers.push_back(*tr);
    }
    // Two at least when B changes between waves: the next wave's B loads while this wave's
    // weights are still being installed from its buffer.
    if (int64_t(p.b_buffers.size()) < std::min<int64_t>(2, b_keys)) return false;
    for (int i = 0;; ++i) {
        std::optional<chipsim::TileRef> tr;
        for (int b : {i % mem.banks, (i + 1) % mem.banks})
            if ((tr = alloc.interleaved("MEM", 0, b, a_rows))) break;
        if (!tr) break;
        p.a_regions.push_back(*tr);
    }
    return int64_t(p.a_regions.size()) >= p.band_chunks * groups;
}

} // namespace

std::vector<StreamedWave> streamed_waves(const StreamedGemmShape &s, int64_t band_chunks,
                                         int64_t wave_cols, int b_buffers) {
    const int64_t mc = ceil_div(s.m, s.rows), bands = ceil_div(mc, band_chunks),
                  groups = ceil_div(s.n / s.nu, wave_cols);
    std::vector<StreamedWave> waves;
    int64_t dir = 0;
    for (int64_t g = 0; g < s.groups; ++g)
        for (int64_t band = 0; band < bands; ++band, ++dir)
            for (int64_t q = 0; q < groups; ++q)
                waves.push_back({g, band, dir % 2 ? groups - 1 - q : q});
    auto b_key = [&](const StreamedWave &w) { return (s.b_batched ? w.g : 0) * groups + w.cols; };
    // next[w]: the next wave after w with w's B (waves.size() if none).
    std::vector<size_t> next(waves.size(), waves.size());
    std::map<int64_t, size_t> seen;
    for (size_t w = waves.size(); w-- > 0;) {
        const int64_t key = b_key(waves[w]);
        if (auto it = seen.find(key); it != seen.end()) next[w] = it->second;
        seen[key] = w;
    }
    std::vector<int64_t> held(size_t(b_buffers), -1);
    std::vector<size_t> last_use(size_t(b_buffers), 0);
    for (size_t w = 0; w < waves.size(); ++w) {
        const int64_t key = b_key(waves[w]);
        int best = -1;
        if (auto it = std::find(held.begin(), held.end(), key); it != held.end()) {
            best = int(it - held.begin());
            waves[w].b_load = false;
        } else {
            size_t best_next = 0;
            for (int b = 0; b < b_buffers; ++b) {
                if (b_buffers > 1 && w > 0 && b == waves[w - 1].b_buffer)
                    continue; // read while this one loads
                const size_t nu =
                    held[size_t(b)] < 0 ? waves.size() + 1 : next[last_use[size_t(b)]];
                if (best < 0 || nu > best_next) {
                    best_next = nu;
                    best = b;
                }
            }
            held[size_t(best)] = key;
            waves[w].b_load = true;
        }
        waves[w].b_buffer = best;
        last_use[size_t(best)] = w;
    }
    return waves;
}

std::optional<StreamedGemmPlan> plan_streamed_gemm(const StreamedGemmShape &shape,
                                                   const chipsim::TimingModel &model) {
    const chipsim::Target &t = model.target();
    const chipsim::MemoryDesc *mem = t.memory("MEM");
    if (!mem || mem->hemispheres != 2 || mem->interleaved) return std::nullopt;
    const int64_t planes = t.mxm.count, kb = shape.k / shape.ku, nb = shape.n / shape.nu;
    // A DMA over the link: the timing model's cost, set-up, transfer and latency.
    auto link = [&](int64_t bytes) { return model.dma_cycles(bytes); };
    std::optional<StreamedGemmPlan> best;
    int64_t best_cycles = 0;
    for (int64_t rows = shape.rows; rows >= 1; rows = shape.rows_fixed ? 0 : rows / 2) {
        // Chunks shorter than a weight tile's K rows would spend longer installing weights than
        // multiplying: only worth it when nothing taller fits.
        if (best && rows < shape.ku) break;
        StreamedGemmShape s = shape;
        s.rows = rows;
        const int64_t mc = ceil_div(s.m, s.rows);
        for (int64_t bm = 1; bm <= planes; ++bm) {
            if (planes % bm != 0 || (bm > 1 && bm > mc)) continue;
            StreamedGemmPlan p;
            p.rows = rows;
            p.band_chunks = bm;
            p.wave_cols = std::min(planes / bm, nb);
            p.group_blocks = std::min<int64_t>(mem->slices, kb);
            const int64_t col_groups = ceil_div(nb, p.wave_cols);
            const int64_t bands = ceil_div(mc, bm);
            const int64_t b_keys = (s.b_batched ? s.groups : 1) * col_groups;
            if (!allocate_regions(p, s, t, s.groups * bands * col_groups, b_keys)) continue;
            const auto waves = streamed_waves(s, bm, p.wave_cols, int(p.b_buffers.size()));
            // Before the kernel: the first band of A and the B of every wave whose buffer is
            // still empty (host I/O, as a preloaded kernel's). After it: the last wave's results.
            std::vector<bool> b_used(p.b_buffers.size(), false);
            auto rows_of = [&](int64_t chunk) { return std::min(s.rows, s.m - chunk * s.rows); };
            for (size_t w = 0; w < waves.size(); ++w) {
                const StreamedWave &wv = waves[w];
                const int64_t cols = std::min(p.wave_cols, nb - wv.cols * p.wave_cols);
                const int64_t first = wv.band * bm, chunks = std::min(bm, mc - first);
                p.mxm_cycles += kb * model.mxm_rows_cycles(s.in_dtype, rows_of(first));
                if (wv.b_load && b_used[size_t(wv.b_buffer)])
                    p.link_cycles += link(cols * s.k * s.nu * s.in_bytes);
                if (wv.b_load) b_used[size_t(wv.b_buffer)] = true;
                if (w > 0) // the epilogue's operands, one DMA per job and operand
                    for (int64_t c = 0; c < chunks; ++c)
                        p.link_cycles +=
                            cols * s.epilogue_operands * link(rows_of(first + c) * s.nu * 4);
                // One store per wave when its chunks are whole, else one per chunk.
                if (w + 1 < waves.size()) {
                    if (s.m >= (first + chunks) * s.rows)
                        p.link_cycles += link(chunks * cols * s.rows * s.nu * 4);
                    else
                        for (int64_t c = 0; c < chunks; ++c)
                            p.link_cycles += link(cols * rows_of(first + c) * s.nu * 4);
                }
                const bool band_starts =
                    w > 0 && (wv.band != waves[w - 1].band || wv.g != waves[w - 1].g);
                if (band_starts)
                    for (int64_t c = 0; c < chunks; ++c)
                        for (int64_t grp = 0; grp < kb; grp += p.group_blocks)
                            p.link_cycles += link(std::min(p.group_blocks, kb - grp) *
                                                  rows_of(first + c) * s.ku * s.in_bytes);
            }
            const int64_t cycles = std::max(p.mxm_cycles, p.link_cycles);
            if (!best || cycles < best_cycles) {
                best = p;
                best_cycles = cycles;
            }
        }
    }
    return best;
}

std::string StreamedGemmPlan::describe() const {
    return "bands of " + std::to_string(band_chunks) + " row chunk(s) of " + std::to_string(rows) +
           " rows of A kept on chip, waves of " + std::to_string(band_chunks) + "x" +
           std::to_string(wave_cols) + " jobs snaking over the column groups, " +
           std::to_string(a_regions.size()) + " A regions of " + std::to_string(group_blocks) +
           " K blocks, " + std::to_string(b_buffers.size()) + " B buffers, " +
           std::to_string(c_buffers.size()) +
           " result buffers; cost model: " + std::to_string(link_cycles) +
           " host link cycles against " + std::to_string(mxm_cycles) + " MXM cycles";
}

} // namespace tessera::internal::chip
