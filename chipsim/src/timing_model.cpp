// The one implementation of latencies, port/bank/stream rules and the address map.
#include "tessera/chipsim/timing_model.h"

#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace tessera::chipsim {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string memory_names(const Target &t) {
    std::string s;
    for (auto &m : t.memories) s += (s.empty() ? "" : ", ") + m.name;
    return s;
}

} // namespace

Queue queue_of(const Instruction &in) {
    switch (in.op) {
    case Opcode::DmaLoad:
    case Opcode::MemCopy: return Queue::Load;
    case Opcode::DmaStore: return Queue::Store;
    case Opcode::MxmLw:
    case Opcode::MxmMm:
    case Opcode::MxmDrain: return Queue::Exec;
    case Opcode::Vxm:
    case Opcode::VxmReduce:
    case Opcode::SxmTranspose:
    case Opcode::SxmPermute:
    case Opcode::SxmShift: return Queue::Vector;
    default: return in.queue;
    }
}

int64_t queue_hold_cycles(const Instruction &in, const ResourceUse &use, int64_t start_to_end) {
    if (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) return start_to_end;
    return use.unit >= 0 ? 1 : std::max<int64_t>(1, use.issue_cycles);
}

TileRef bank_tile(const MemoryDesc &m, int flat_bank, int64_t local_base, int64_t count) {
    TileRef t;
    t.memory = m.name;
    const int flat_slice = flat_bank / m.banks;
    if (m.hemispheres * m.slices > 1) {
        t.side = m.side_letter(flat_slice / m.slices);
        t.slice = flat_slice % m.slices;
    }
    t.bank = flat_bank % m.banks;
    t.base = local_base;
    t.count = count;
    return t;
}

TileRef slice_interleaved_tile(const MemoryDesc &m, int hemisphere, int bank, int64_t local_base, int64_t count) {
    TileRef t;
    t.memory = m.name;
    t.side = m.side_letter(hemisphere);
    t.slice = -1;
    t.bank = bank;
    t.base = local_base * m.slices; // row i is logical row base + i: slice (base + i) mod slices
    t.count = count;
    return t;
}

std::vector<BankSpan> bank_spans(const MemoryDesc &m, const TileRef &t) {
    if (m.interleaved) return {{-1, t.base, t.base + t.count}};
    const int h = t.side == 'e' ? 1 : 0;
    if (t.slice < 0 && m.hemispheres * m.slices > 1) {
        const int64_t begin = t.base / m.slices, end = begin + m.rows_per_slice(t.count);
        std::vector<BankSpan> spans;
        for (int sl = 0; sl < m.slices; ++sl) spans.push_back({m.flat_bank(h, sl, t.bank), begin, end});
        return spans;
    }
    return {{m.flat_bank(h, t.slice < 0 ? 0 : t.slice, t.bank), t.base, t.base + t.count}};
}

TimingModel::TimingModel(Target target) : target_(std::move(target)) {
    const Target &t = target_;
    for (int i = 0; i < t.mxm.count; ++i) {
        std::string n = "MXM" + std::to_string(i);
        mxm_pipe_.push_back(add_resource({n, ResourceKind::Unit}));
        mxm_load_.push_back(add_resource({n + ".lw", ResourceKind::Unit}));
        mxm_drain_.push_back(add_resource({n + ".drain", ResourceKind::Unit}));
    }
    vxm_ = add_resource({"VXM", ResourceKind::Unit, t.vxm.alus});
    for (int i = 0; i < t.sxm.count; ++i) sxm_.push_back(add_resource({"SXM" + std::to_string(i), ResourceKind::Unit}));
    if (t.dram.bytes > 0) {
        for (int i = 0; i < t.dma.engines; ++i)
            dma_.push_back(add_resource({t.dma.engines == 2 ? (i ? "DMA.store" : "DMA.load") : "DMA", ResourceKind::DmaEngine}));
        dram_ = add_resource({"DRAM", ResourceKind::Bandwidth});
    } else {
        dma_.push_back(add_resource({"DMA", ResourceKind::DmaEngine}));
    }
    host_link_ = add_resource({"HOSTLINK", ResourceKind::Bandwidth});
    if (t.streams_eastward > 0) stream_east_ = add_resource({"stream.east", ResourceKind::Stream, t.streams_eastward});
    if (t.streams_westward > 0) stream_west_ = add_resource({"stream.west", ResourceKind::Stream, t.streams_westward});
    for (size_t mi = 0; mi < t.memories.size(); ++mi) {
        const MemoryDesc &m = t.memories[mi];
        bank_read_.emplace_back();
        bank_write_.emplace_back();
        slice_read_.emplace_back();
        slice_write_.emplace_back();
        for (int h = 0; h < m.hemispheres; ++h)
            for (int s = 0; s < m.slices; ++s) {
                std::string slice_name = m.name;
                if (m.hemispheres * m.slices > 1) slice_name += std::string(".") + m.side_letter(h) + std::to_string(s);
                for (int b = 0; b < m.banks; ++b) {
                    int flat = m.flat_bank(h, s, b);
                    std::string n = slice_name + ".b" + std::to_string(b);
                    if (m.dual_ported) {
                        bank_read_.back().push_back(add_resource({n + ".r", ResourceKind::BankPort, 1, int(mi), flat}));
                        bank_write_.back().push_back(add_resource({n + ".w", ResourceKind::BankPort, 1, int(mi), flat}));
                    } else {
                        int r = add_resource({n, ResourceKind::BankPort, 1, int(mi), flat});
                        bank_read_.back().push_back(r);
                        bank_write_.back().push_back(r);
                    }
                }
                if (m.slice_read_ports > 0)
                    slice_read_.back().push_back(add_resource({slice_name + ".rd", ResourceKind::SlicePort, m.slice_read_ports, int(mi)}));
                if (m.slice_write_ports > 0)
                    slice_write_.back().push_back(add_resource({slice_name + ".wr", ResourceKind::SlicePort, m.slice_write_ports, int(mi)}));
            }
    }
}

int TimingModel::add_resource(ResourceInfo info) {
    int index = int(resources_.size());
    by_name_[info.name] = index;
    resources_.push_back(std::move(info));
    return index;
}

int TimingModel::resource_index(const std::string &name) const {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? -1 : it->second;
}

ReservationTable TimingModel::make_table() const {
    std::vector<int> lanes;
    for (auto &r : resources_) lanes.push_back(r.lanes);
    return ReservationTable(lanes);
}

int TimingModel::bank_resource(int memory, int bank, bool write) const {
    return (write ? bank_write_ : bank_read_)[memory][bank];
}

int TimingModel::slice_resource(int memory, int slice, bool write) const {
    auto &v = (write ? slice_write_ : slice_read_)[memory];
    return v.empty() ? -1 : v[slice];
}

ResolvedTile TimingModel::resolve(const TileRef &tile) const {
    int mi = -1;
    for (size_t i = 0; i < target_.memories.size(); ++i)
        if (target_.memories[i].name == tile.memory) mi = int(i);
    if (mi < 0)
        throw SimError("tile " + tile_text(tile) + ": unknown memory '" + tile.memory + "' on " + target_.name +
                       ", expected one of " + memory_names(target_));
    const MemoryDesc &m = target_.memories[mi];
    ResolvedTile r;
    r.memory = mi;
    auto bad = [&](const std::string &why) { throw SimError("tile " + tile_text(tile) + ": " + why); };
    const bool sliced = m.hemispheres * m.slices > 1;
    if (m.interleaved) {
        if (tile.side || tile.bank >= 0)
            bad(m.name + " interleaves rows over its " + std::to_string(m.banks) + " banks (bank = row mod " +
                std::to_string(m.banks) + "): write " + m.name + "[base:count:stride] without a location");
    } else {
        if (sliced) {
            char want = m.hemispheres == 2 ? 0 : 's';
            if (!tile.side || (want == 's' && tile.side != 's') || (want == 0 && tile.side == 's'))
                bad(std::string("expected a slice ") + (m.hemispheres == 2 ? "w<0.." : "s<0..") +
                    std::to_string(m.slices - 1) + "> or " + (m.hemispheres == 2 ? "w*/e*" : "s*") + " after " + m.name);
            if (tile.slice >= m.slices)
                bad("slice " + std::to_string(tile.slice) + " is out of range 0.." + std::to_string(m.slices - 1));
        } else if (tile.side) {
            bad(m.name + " has no slices: write " + m.name + ".b<bank>[...]");
        }
        if (tile.bank < 0 || tile.bank >= m.banks)
            bad("expected a bank b0..b" + std::to_string(m.banks - 1) + " in " + m.name);
    }
    // Bounds before the rows are listed: a tile is at most its memory, and its last row must be
    // computable (programs built in C++ or decoded from binary skip the assembler's checks).
    if (tile.base < 0 || tile.count < 1 || tile.stride < 0)
        bad("base, count and stride must be >= 0, >= 1 and >= 0");
    if (tile.count > m.total_rows())
        bad(std::to_string(tile.count) + " rows, more than " + m.name + "'s " + std::to_string(m.total_rows()));
    int64_t last = 0;
    if (__builtin_mul_overflow(tile.count - 1, tile.stride, &last) || __builtin_add_overflow(last, tile.base, &last) ||
        last >= m.total_rows())
        bad("its last row (base + (count - 1) * stride) is past " + m.name + "'s " + std::to_string(m.total_rows()) + " rows");
    const int h = tile.side == 'e' ? 1 : 0;
    r.rows.reserve(size_t(tile.count));
    r.banks.reserve(size_t(tile.count));
    r.slices.reserve(size_t(tile.count));
    std::vector<bool> slice_seen(size_t(m.hemispheres * m.slices), false);
    for (int64_t i = 0; i < tile.count; ++i) {
        int64_t logical = tile.base + i * tile.stride;
        int64_t local = logical;
        int slice = tile.slice < 0 ? 0 : tile.slice;
        if (m.interleaved) {
            if (logical >= m.total_rows())
                bad("row " + std::to_string(logical) + " is past " + m.name + "'s " + std::to_string(m.total_rows()) + " rows");
            r.rows.push_back(logical);
            r.banks.push_back(int32_t(logical % m.banks));
            r.slices.push_back(0);
            continue;
        }
        if (sliced && tile.slice < 0) {
            slice = int(logical % m.slices);
            local = logical / m.slices;
        }
        if (local >= m.rows_per_bank)
            bad("row " + std::to_string(local) + " is past the bank's " + std::to_string(m.rows_per_bank) + " rows");
        int flat_slice = m.flat_slice(h, slice);
        int flat_bank = m.flat_bank(h, slice, tile.bank);
        r.rows.push_back(int64_t(flat_bank) * m.rows_per_bank + local);
        r.banks.push_back(flat_bank);
        r.slices.push_back(flat_slice);
        slice_seen[size_t(flat_slice)] = true;
    }
    if (!target_.positions.empty()) {
        if (m.accumulator) {
            r.slots.push_back("MXM" + std::to_string(tile.bank));
        } else if (sliced) {
            for (size_t fs = 0; fs < slice_seen.size(); ++fs)
                if (slice_seen[fs])
                    r.slots.push_back(m.name + "." + m.side_letter(int(fs) / m.slices) + std::to_string(int(fs) % m.slices));
        }
    }
    return r;
}

int64_t TimingModel::stream_distance(const std::string &from, const std::string &to) const {
    int a = target_.position_of(from), b = target_.position_of(to);
    if (a < 0 || b < 0) return 0;
    return std::abs(a - b);
}

void TimingModel::tile_holds(ResourceUse &use, int tile, bool write, int64_t offset, int64_t &occupancy) const {
    const ResolvedTile &rt = use.tiles[size_t(tile)];
    const MemoryDesc &m = target_.memories[size_t(rt.memory)];
    // Rows per bank and per slice, in ascending order (a tile touches few of either).
    auto count_rows = [](const std::vector<int32_t> &of) {
        std::vector<std::pair<int, int64_t>> counts;
        if (of.empty()) return counts;
        const int32_t top = *std::max_element(of.begin(), of.end()); // flat bank or slice indices: small
        std::vector<int64_t> per(size_t(top) + 1, 0);
        for (auto v : of) ++per[size_t(v)];
        for (int32_t v = 0; v <= top; ++v)
            if (per[size_t(v)]) counts.push_back({v, per[size_t(v)]});
        return counts;
    };
    const auto per_bank = count_rows(rt.banks), per_slice = count_rows(rt.slices);
    for (auto [bank, rows] : per_bank) {
        use.holds.push_back({bank_resource(rt.memory, bank, write), offset, rows});
        occupancy = std::max(occupancy, rows);
    }
    int ports = write ? m.slice_write_ports : m.slice_read_ports;
    if (ports > 0)
        for (auto [slice, rows] : per_slice) {
            int64_t d = ceil_div(rows, ports);
            use.holds.push_back({slice_resource(rt.memory, slice, write), offset, d});
            occupancy = std::max(occupancy, d);
        }
    use.bytes[m.name] += int64_t(rt.rows.size()) * m.row_bytes;
}

void TimingModel::stream_holds(ResourceUse &use, const std::string &from, const std::string &to, int64_t offset,
                               int64_t duration, int lanes) const {
    int a = target_.position_of(from), b = target_.position_of(to);
    if (a < 0 || b < 0 || a == b) return;
    int res = b > a ? stream_east_ : stream_west_;
    if (res < 0) return;
    if (lanes > resources_[size_t(res)].lanes)
        throw SimError("needs " + std::to_string(lanes) + " streams at once but " + resources_[size_t(res)].name +
                       " has " + std::to_string(resources_[size_t(res)].lanes));
    use.holds.push_back({res, offset, duration, lanes});
    use.bytes["STREAMS"] += duration * lanes * target_.vector_bytes;
}

DmaCost TimingModel::dma_cost(int64_t bytes) const {
    const Target &t = target_;
    const bool dram = t.dram.bytes > 0;
    const int bw = dram ? t.dram.bytes_per_cycle : t.host_link.bytes_per_cycle;
    DmaCost c;
    c.setup = t.dma.setup_cycles;
    c.transfer = ceil_div(bytes, bw);
    c.link_latency = dram ? t.dram.latency : t.host_link.latency;
    c.granule = std::max<int64_t>(1, ceil_div(dram ? t.dram.burst_bytes : t.vector_bytes, bw));
    return c;
}

int64_t TimingModel::mxm_rows_cycles(DType input, int64_t rows) const { return rows * target_.mxm_shape(input).cycles_per_row; }

int64_t TimingModel::weight_install_cycles(int64_t rows) const { return ceil_div(rows, target_.mxm.weight_rows_per_cycle); }

std::vector<RowAccess> TimingModel::row_accesses(const Instruction &in, const ResourceUse &use, bool dram_granules) const {
    const Target &t = target_;
    std::vector<RowAccess> out;
    size_t rows = 2; // the weight buffer's accesses
    for (auto &a : use.accesses) rows += use.tiles[size_t(a.tile)].rows.size();
    out.reserve(rows);
    for (auto &a : use.accesses) {
        const ResolvedTile &rt = use.tiles[size_t(a.tile)];
        const int64_t n = int64_t(rt.rows.size());
        for (int64_t i = 0; i < n; ++i)
            out.push_back({rt.memory, rt.rows[size_t(i)], a.offset + (n > 0 ? (i * a.span) / n : 0), a.at_end, a.write});
    }
    if (in.op == Opcode::MxmLw)
        out.push_back({weight_space(), int64_t(in.mxm) * t.mxm.weight_buffers + in.buffer, 0, true, true});
    if (in.op == Opcode::MxmMm) { // the weights are read from the first to the last activation row
        const int64_t wrow = int64_t(in.mxm) * t.mxm.weight_buffers + in.buffer;
        out.push_back({weight_space(), wrow, 0, false, false});
        out.push_back({weight_space(), wrow, std::max<int64_t>(0, use.issue_cycles - 1), false, false});
    }
    // DRAM the program writes and reads back (a pre-pass's scratch region): a load must wait
    // for the stores of the bytes it reads, a store for the loads still to read what it
    // overwrites. Granules, not bytes: a DMA moves whole bursts.
    if (dram_granules && (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) && in.view.tensor == "DRAM") {
        const bool write = in.op == Opcode::DmaStore;
        const int64_t granule = dram_granule_bytes();
        std::set<int64_t> touched;
        const auto &dims = in.view.outer;
        std::vector<int64_t> idx(dims.size(), 0);
        while (true) {
            int64_t at = in.view.offset;
            for (size_t d = 0; d < dims.size(); ++d) at += idx[d] * dims[d].stride;
            for (int64_t g = at / granule; g * granule < at + in.view.inner_bytes; ++g) touched.insert(g);
            size_t d = dims.size();
            while (d > 0 && ++idx[d - 1] == dims[d - 1].count) idx[--d] = 0;
            if (d == 0) break;
        }
        for (int64_t g : touched) out.push_back({dram_space(), g, 0, write, write});
    }
    return out;
}

int TimingModel::drain_rows_per_acc_row(DType acc_input, DType out) const {
    const MxmShape &s = acc_input == DType::Int32 ? target_.mxm.int8 : target_.mxm.floating;
    return int(ceil_div(int64_t(s.n) * dtype_bytes(out), target_.vector_bytes));
}

ResourceUse TimingModel::resources(const Instruction &in) const {
    const Target &t = target_;
    ResourceUse use;
    for (auto &tile : in.tiles) use.tiles.push_back(resolve(tile));
    auto mem = [&](int i) -> const MemoryDesc & { return t.memories[size_t(use.tiles[size_t(i)].memory)]; };
    auto rows = [&](int i) { return in.tiles[size_t(i)].count; };
    // Messages are built only when a check fails: resources() runs for every instruction the
    // compiler schedules, and building them anyway was a tenth of a compile.
    auto need = [](bool ok, auto &&why) {
        if (!ok) throw SimError(std::string(why()));
    };
    auto need_vector_tile = [&](int i, const char *role) {
        need(!mem(i).accumulator && mem(i).row_bytes == t.vector_bytes, [&] { return
             std::string(role) + " " + tile_text(in.tiles[size_t(i)]) + " must be in a vector memory (rows of " +
                 std::to_string(t.vector_bytes) + " bytes), not " + mem(i).name; });
    };
    // The slot that is farthest from `unit` among a tile's slots: it bounds δ.
    auto far_slot = [&](int i, const std::string &unit) {
        std::string best;
        int64_t d = -1;
        for (auto &s : use.tiles[size_t(i)].slots)
            if (stream_distance(s, unit) > d) {
                d = stream_distance(s, unit);
                best = s;
            }
        return best;
    };
    auto delta = [&](int i, const std::string &unit) { return stream_distance(far_slot(i, unit), unit); };

    switch (in.op) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore: {
        const bool load = in.op == Opcode::DmaLoad;
        const OffchipView &v = in.view;
        need(int(v.outer.size()) + 1 <= t.dma.max_dims, [&] { return
             "the view has " + std::to_string(v.outer.size() + 1) + " dimensions, " + t.name + " DMA allows " +
                 std::to_string(t.dma.max_dims); });
        const bool dram = t.dram.bytes > 0;
        need(v.tensor != "DRAM" || dram, [&] { return t.name + " has no DRAM: name a declared host tensor instead"; });
        int64_t bytes = v.total_bytes();
        int64_t tile_bytes = rows(0) * mem(0).row_bytes;
        need(bytes == tile_bytes, [&] { return std::string(load ? "dma.load" : "dma.store") + " view moves " + std::to_string(bytes) +
                                      " bytes but the tile holds " + std::to_string(rows(0)) + " rows x " +
                                      std::to_string(mem(0).row_bytes) + " bytes = " + std::to_string(tile_bytes); });
        const DmaCost cost = dma_cost(bytes);
        const int64_t setup = cost.setup, transfer = cost.transfer, link_latency = cost.link_latency, granule = cost.granule;
        int engine = dma_.size() == 2 ? dma_[load ? 0 : 1] : dma_[0];
        use.unit = engine;
        use.latency = cost.cycles();
        use.issue_cycles = transfer;
        use.bandwidth_offset = setup;
        use.bandwidth_tail = link_latency;
        use.holds.push_back({engine, 0, use.latency, 1, false, true});
        use.holds.push_back({dram ? dram_ : host_link_, setup, transfer, 1, true, false, granule});
        int64_t occ = 0;
        // Loads write the tile as data arrives (after the link latency); stores read it at once.
        tile_holds(use, 0, load, load ? setup + link_latency : setup, occ);
        if (load) use.accesses.push_back({0, true, 0, 0, true});
        else use.accesses.push_back({0, false, setup, std::max<int64_t>(occ, transfer)});
        use.bytes[dram ? "DRAM" : "HOST"] += bytes;
        break;
    }
    case Opcode::MemCopy: {
        need(rows(0) == rows(1), [&] { return "mem.copy moves " + std::to_string(rows(1)) + " rows into a tile of " + std::to_string(rows(0)); });
        need(mem(0).row_bytes == mem(1).row_bytes, [&] { return "mem.copy between memories of different row sizes"; });
        int64_t occ = 0;
        tile_holds(use, 1, false, 0, occ);
        int64_t d = 0;
        if (!use.tiles[1].slots.empty() && !use.tiles[0].slots.empty()) d = stream_distance(use.tiles[1].slots[0], use.tiles[0].slots[0]);
        int64_t wocc = 0;
        tile_holds(use, 0, true, 1 + d, wocc);
        use.issue_cycles = std::max({rows(0), occ, wocc});
        use.latency = use.issue_cycles + 1 + d;
        if (target_.positions.empty()) { // DRAM chips copy with the load DMA engine; streaming chips through a stream
            use.unit = dma_[0];
            use.holds.push_back({dma_[0], 0, use.issue_cycles});
        }
        if (!use.tiles[1].slots.empty() && !use.tiles[0].slots.empty())
            stream_holds(use, use.tiles[1].slots[0], use.tiles[0].slots[0], 0, use.issue_cycles, 1);
        use.accesses.push_back({1, false, 0, use.issue_cycles});
        use.accesses.push_back({0, true, 1 + d, use.issue_cycles});
        break;
    }
    case Opcode::MxmLw:
    case Opcode::MxmMm:
    case Opcode::MxmDrain: {
        const bool drain = in.op == Opcode::MxmDrain;
        int plane = in.mxm;
        if (drain) {
            need(mem(1).accumulator, [&] { return "mxm.drain reads accumulators: its second tile must be in an accumulator memory, not " + mem(1).name; });
            need(in.dtype == DType::Int32 || in.dtype == DType::FP32, [&] { return std::string("mxm.drain accumulators are int32 or fp32, not ") + dtype_name(in.dtype); });
            plane = mem(1).interleaved ? 0 : in.tiles[1].bank;
        } else {
            need(in.mxm >= 0 && in.mxm < t.mxm.count, [&] { return "MXM m" + std::to_string(in.mxm) + " is out of range m0..m" + std::to_string(t.mxm.count - 1); });
            need(in.buffer >= 0 && in.buffer < t.mxm.weight_buffers, [&] { return
                 "weight buffer w" + std::to_string(in.buffer) + " is out of range w0..w" + std::to_string(t.mxm.weight_buffers - 1); });
            need(t.mxm_supports(in.dtype), [&] { return std::string("the MXM of ") + t.name + " does not support " + dtype_name(in.dtype); });
        }
        const MxmShape &shape = drain ? (in.dtype == DType::Int32 ? t.mxm.int8 : t.mxm.floating) : t.mxm_shape(in.dtype);
        const std::string unit = "MXM" + std::to_string(plane);
        if (in.op == Opcode::MxmLw) {
            need_vector_tile(0, "the weight tile");
            need(rows(0) <= shape.k, [&] { return "mxm.lw loads " + std::to_string(rows(0)) + " weight rows, the MXM holds " + std::to_string(shape.k); });
            int64_t occ = 0;
            tile_holds(use, 0, false, 0, occ);
            use.issue_cycles = std::max(weight_install_cycles(rows(0)), occ);
            int64_t d = delta(0, unit);
            use.latency = use.issue_cycles + t.mxm.lw_latency + d;
            use.unit = mxm_load_[size_t(plane)];
            use.holds.push_back({use.unit, 0, use.issue_cycles});
            if (!use.tiles[0].slots.empty())
                stream_holds(use, far_slot(0, unit), unit, 0, use.issue_cycles, std::min<int>(t.mxm.weight_rows_per_cycle, int(rows(0))));
            use.accesses.push_back({0, false, 0, use.issue_cycles});
        } else if (in.op == Opcode::MxmMm) {
            need(mem(0).accumulator, [&] { return "mxm.mm accumulates into an accumulator memory: its first tile must be one, not " + mem(0).name; });
            need(mem(0).interleaved || in.tiles[0].bank == in.mxm, [&] { return
                 "accumulator bank b" + std::to_string(in.tiles[0].bank) + " belongs to MXM" +
                     std::to_string(in.tiles[0].bank) + " but the instruction runs on m" + std::to_string(in.mxm); });
            need_vector_tile(1, "the activation tile");
            need(rows(0) == rows(1), [&] { return "mxm.mm streams " + std::to_string(rows(1)) + " activation rows into " +
                                         std::to_string(rows(0)) + " accumulator rows"; });
            need(mem(0).row_bytes >= shape.n * 4, [&] { return "accumulator rows are too narrow for the MXM"; });
            int64_t occ = 0, acc_occ = 0;
            tile_holds(use, 1, false, 0, occ);
            use.issue_cycles = std::max(mxm_rows_cycles(in.dtype, rows(1)), occ);
            int64_t d = delta(1, unit);
            use.latency = t.mxm.systolic ? use.issue_cycles + shape.k + shape.n - 1 + t.mxm.mm_latency
                                         : use.issue_cycles + t.mxm.mm_latency + d;
            const int64_t write_offset = use.latency - use.issue_cycles;
            tile_holds(use, 0, true, write_offset, acc_occ);
            if (acc_occ > use.issue_cycles) { // accumulator ports slower than the array
                use.latency += acc_occ - use.issue_cycles;
                use.issue_cycles = acc_occ;
            }
            use.unit = mxm_pipe_[size_t(plane)];
            use.holds.push_back({use.unit, 0, use.issue_cycles});
            if (!use.tiles[1].slots.empty()) stream_holds(use, far_slot(1, unit), unit, 0, use.issue_cycles, 1);
            use.accesses.push_back({1, false, 0, use.issue_cycles});
            use.accesses.push_back({0, true, write_offset, use.issue_cycles});
            use.macs = rows(1) * shape.k * shape.n;
            use.mac_dtype = in.dtype;
        } else {
            need_vector_tile(0, "the drain's destination");
            const int rpa = drain_rows_per_acc_row(in.dtype, in.out_dtype);
            need(rows(0) == rows(1) * rpa, [&] { return "mxm.drain of " + std::to_string(rows(1)) + " accumulator rows to " +
                                               dtype_name(in.out_dtype) + " writes " + std::to_string(rows(1) * rpa) +
                                               " rows, the destination has " + std::to_string(rows(0)); });
            int64_t acc_occ = 0, occ = 0;
            tile_holds(use, 1, false, 0, acc_occ);
            int64_t d = use.tiles[0].slots.empty() ? 0 : delta(0, unit);
            const int64_t write_offset = t.mxm.drain_latency + d;
            tile_holds(use, 0, true, write_offset, occ);
            need(in.count <= t.mxm.drain_rows_per_cycle, [&] { return "a drain writes at most " + std::to_string(t.mxm.drain_rows_per_cycle) +
                                                             " rows per cycle on " + t.name + ", streams=" + std::to_string(in.count) + " asked"; });
            const int lanes = in.count > 0 ? int(in.count) : std::min(rpa, t.mxm.drain_rows_per_cycle);
            use.issue_cycles = std::max({rows(1), ceil_div(rows(0), lanes), acc_occ, occ});
            use.latency = use.issue_cycles + write_offset;
            use.unit = mxm_drain_[size_t(plane)];
            use.holds.push_back({use.unit, 0, use.issue_cycles});
            if (!use.tiles[0].slots.empty())
                stream_holds(use, unit, far_slot(0, unit), t.mxm.drain_latency, use.issue_cycles, lanes);
            use.accesses.push_back({1, false, 0, use.issue_cycles});
            use.accesses.push_back({0, true, write_offset, use.issue_cycles});
        }
        break;
    }
    case Opcode::Vxm:
    case Opcode::VxmReduce: {
        const bool reduce = in.op == Opcode::VxmReduce;
        need(in.tiles.size() >= 2, [&] { return "vxm needs a destination and inputs"; });
        for (size_t i = 0; i < in.tiles.size(); ++i) need_vector_tile(int(i), i ? "input" : "the destination");
        const int64_t src_rows = rows(1);
        for (size_t i = 2; i < in.tiles.size(); ++i)
            need(rows(int(i)) == src_rows, [&] { return "vxm inputs have different row counts"; });
        if (reduce && in.axis == ReduceAxis::Rows)
            need(rows(0) == 1, [&] { return "vxm.reduce over rows writes 1 row, the destination has " + std::to_string(rows(0)); });
        else if (const int64_t pack = vxm_rows_packed(in); pack > 1)
            need(rows(0) * pack == src_rows, [&] { return "a packing vxm (" + std::to_string(pack) + " source rows a destination row) writes " +
                                                 std::to_string(src_rows / pack) + " rows for " + std::to_string(src_rows) +
                                                 " source rows, the destination has " + std::to_string(rows(0)); });
        else if (const int64_t unpack = vxm_rows_unpacked(in); unpack > 1)
            need(rows(0) == src_rows * unpack, [&] { return "an unpacking vxm (" + std::to_string(unpack) + " destination rows a source row) writes " +
                                                   std::to_string(src_rows * unpack) + " rows for " + std::to_string(src_rows) +
                                                   " source rows, the destination has " + std::to_string(rows(0)); });
        else
            need(rows(0) == src_rows, [&] { return "vxm writes " + std::to_string(src_rows) + " rows, the destination has " + std::to_string(rows(0)); });
        int64_t occ = 0, wocc = 0;
        // A tile named as two operands (x * x) streams once and feeds both: one read, one stream.
        auto named_before = [&](size_t i) { return std::find(in.tiles.begin() + 1, in.tiles.begin() + std::ptrdiff_t(i), in.tiles[i]) != in.tiles.begin() + std::ptrdiff_t(i); };
        for (size_t i = 1; i < in.tiles.size(); ++i)
            if (!named_before(i)) tile_holds(use, int(i), false, 0, occ);
        // One vector a row through the VXM: the source's rows, or the destination's when it unpacks.
        const int64_t vectors = std::max(src_rows, reduce ? int64_t(0) : rows(0));
        use.issue_cycles = std::max(ceil_div(vectors * t.vector_bytes, t.vxm.bytes_per_cycle), occ);
        int64_t func = 0;
        if (reduce) {
            func = t.vxm.latency.at("reduce");
            if (in.axis == ReduceAxis::Lanes)
                func += int64_t(std::ceil(std::log2(double(t.vector_bytes / dtype_bytes(in.dtype)))));
        } else {
            func = t.vxm.latency.at(vxm_op_name(in.vop));
            for (auto &s : in.chain) func += t.vxm.latency.at(vxm_op_name(s.op));
        }
        int64_t d_in = 0;
        for (size_t i = 1; i < in.tiles.size(); ++i) d_in = std::max(d_in, delta(int(i), "VXM"));
        int64_t d_out = delta(0, "VXM");
        use.latency = use.issue_cycles + func + d_in + d_out;
        // A reduction over rows has its one row only after the last source row went in: it
        // writes (and holds its outgoing stream) in its last cycle, not as rows stream through.
        const bool written_at_end = reduce && in.axis == ReduceAxis::Rows;
        const int64_t out_after = written_at_end ? use.issue_cycles - 1 : 0, out_cycles = written_at_end ? rows(0) : use.issue_cycles;
        const int64_t write_offset = func + d_in + d_out + out_after;
        tile_holds(use, 0, true, write_offset, wocc);
        use.unit = vxm_;
        use.holds.push_back({vxm_, 0, use.issue_cycles});
        for (size_t i = 1; i < in.tiles.size(); ++i) {
            if (named_before(i)) continue;
            if (!use.tiles[i].slots.empty()) stream_holds(use, far_slot(int(i), "VXM"), "VXM", 0, use.issue_cycles, 1);
            use.accesses.push_back({int(i), false, 0, use.issue_cycles});
        }
        if (!use.tiles[0].slots.empty()) stream_holds(use, "VXM", far_slot(0, "VXM"), func + d_in + out_after, out_cycles, 1);
        use.accesses.push_back({0, true, write_offset, out_cycles});
        break;
    }
    case Opcode::SxmTranspose:
    case Opcode::SxmPermute:
    case Opcode::SxmShift: {
        need_vector_tile(0, "the destination");
        need_vector_tile(1, "the source");
        need(rows(0) == rows(1), [&] { return "sxm writes " + std::to_string(rows(1)) + " rows, the destination has " + std::to_string(rows(0)); });
        const int lanes = t.lanes(in.dtype);
        if (in.op == Opcode::SxmTranspose)
            need(rows(1) % lanes == 0, [&] { return "sxm.transpose." + std::string(dtype_name(in.dtype)) + " works on blocks of " +
                                           std::to_string(lanes) + " rows; the tile has " + std::to_string(rows(1)); });
        if (in.op == Opcode::SxmPermute) {
            int n = int(in.permutation.size());
            need(n > 0 && lanes % n == 0, [&] { return "the permutation has " + std::to_string(n) + " entries, expected a divisor of " +
                                              std::to_string(lanes) + " lanes"; });
            for (int v : in.permutation) need(v < n, [&] { return "permutation entry " + std::to_string(v) + " is out of range 0.." + std::to_string(n - 1); });
        }
        const int unit_index = (in.tiles[1].side == 'e' && t.sxm.count > 1) ? 1 : 0;
        const std::string unit = "SXM" + std::to_string(unit_index);
        int64_t occ = 0, wocc = 0;
        tile_holds(use, 1, false, 0, occ);
        use.issue_cycles = std::max(rows(1), occ);
        const char *op = in.op == Opcode::SxmTranspose ? "transpose" : in.op == Opcode::SxmPermute ? "permute" : "shift";
        // A transpose emits its first row only after a whole block went in.
        int64_t func = t.sxm.latency.at(op) + (in.op == Opcode::SxmTranspose ? lanes : 0);
        int64_t d_in = delta(1, unit), d_out = delta(0, unit);
        const int64_t write_offset = func + d_in + d_out;
        use.latency = use.issue_cycles + write_offset;
        tile_holds(use, 0, true, write_offset, wocc);
        use.unit = sxm_[size_t(unit_index)];
        use.holds.push_back({use.unit, 0, use.issue_cycles});
        if (!use.tiles[1].slots.empty()) stream_holds(use, far_slot(1, unit), unit, 0, use.issue_cycles, 1);
        if (!use.tiles[0].slots.empty()) stream_holds(use, unit, far_slot(0, unit), func + d_in, use.issue_cycles, 1);
        use.accesses.push_back({1, false, 0, use.issue_cycles});
        use.accesses.push_back({0, true, write_offset, use.issue_cycles});
        break;
    }
    case Opcode::Nop:
        use.latency = in.count;
        break;
    case Opcode::SyncSignal:
    case Opcode::SyncWait:
        need(in.count < t.semaphores, [&] { return "semaphore " + std::to_string(in.count) + " is out of range: " + t.name + " has " +
                                          std::to_string(t.semaphores) + " semaphores"; });
        break;
    case Opcode::Repeat:
        break;
    }

    // Two operands of one instruction on the same single-ported bank take turns: merge their
    // overlapping windows into one longer hold.
    std::sort(use.holds.begin(), use.holds.end(), [](const ResourceHold &a, const ResourceHold &b) {
        return a.resource != b.resource ? a.resource < b.resource : a.offset < b.offset;
    });
    std::vector<ResourceHold> merged;
    for (auto &h : use.holds) {
        if (!merged.empty() && merged.back().resource == h.resource && !h.bandwidth &&
            resources_[size_t(h.resource)].lanes == 1 && h.offset < merged.back().offset + merged.back().duration) {
            merged.back().duration += h.duration;
            continue;
        }
        merged.push_back(h);
    }
    use.holds = std::move(merged);
    // Occupancy rule: the instruction cannot finish streaming before its busiest bank/slice port
    // has served every row, so taking turns on a port stretches the whole instruction.
    // A bank whose merged turns outlast the unit's own cycles is a bank conflict inside the
    // instruction: it costs cycles.
    int64_t longest = 0;
    for (auto &h : use.holds) {
        auto kind = resources_[size_t(h.resource)].kind;
        if (kind == ResourceKind::BankPort || kind == ResourceKind::SlicePort) longest = std::max(longest, h.duration);
        if (kind == ResourceKind::BankPort && h.duration > use.issue_cycles) ++use.internal_bank_conflicts;
    }
    if (use.internal_bank_conflicts > 0 && longest > use.issue_cycles && in.op != Opcode::DmaLoad && in.op != Opcode::DmaStore) {
        const int64_t extra = longest - use.issue_cycles;
        for (auto &h : use.holds) {
            auto kind = resources_[size_t(h.resource)].kind;
            if (h.resource == use.unit || kind == ResourceKind::Stream) h.duration += extra;
        }
        for (auto &a : use.accesses)
            if (!a.at_end) a.span += extra;
        use.issue_cycles = longest;
        use.latency += extra;
    }
    return use;
}

int64_t TimingModel::earliest_start(const ResourceUse &use, const ReservationTable &table, int64_t not_before) const {
    int64_t t = not_before;
    for (bool moved = true; moved;) {
        moved = false;
        for (auto &h : use.holds) {
            if (h.bandwidth || h.duration <= 0) continue;
            const int64_t want = t + h.offset;
            const int64_t got = table.next_free(h.resource, want, h.duration, std::max(1, h.lanes));
            if (got != want) {
                t = got - h.offset;
                moved = true;
            }
        }
    }
    return t;
}

std::optional<Conflict> TimingModel::conflict_at(const ResourceUse &use, const ReservationTable &table, int64_t start) const {
    for (auto &h : use.holds) {
        if (h.duration <= 0) continue;
        int64_t b = start + h.offset, e = b + h.duration;
        if (h.bandwidth) {
            auto pieces = table.fill_gaps(h.resource, b, h.duration, h.granule);
            if (pieces.size() == 1 && pieces[0].begin == b) continue;
            auto blocker = table.blocker(h.resource, b, e);
            Interval held = blocker ? *blocker : Interval{b, e, -1};
            return Conflict{h.resource, held, b};
        }
        if (auto blocker = table.blocker(h.resource, b, e, std::max(1, h.lanes))) return Conflict{h.resource, *blocker, b};
    }
    return std::nullopt;
}

Placement TimingModel::reserve(const ResourceUse &use, ReservationTable &table, int64_t start, int32_t owner) const {
    Placement p;
    p.start = start;
    p.end = start + use.latency;
    for (auto &h : use.holds) {
        if (!h.bandwidth || h.duration <= 0) continue;
        p.bursts = table.fill_gaps(h.resource, start + h.offset, h.duration, h.granule);
        for (auto &b : p.bursts) {
            Interval iv = b;
            iv.owner = owner;
            table.add(h.resource, 0, iv);
            p.busy.emplace_back(h.resource, b.end - b.begin);
        }
        if (!p.bursts.empty()) p.end = std::max(p.end, p.bursts.back().end + use.bandwidth_tail);
    }
    for (auto &h : use.holds) {
        if (h.bandwidth) continue;
        int64_t b = start + h.offset;
        int64_t e = h.until_end ? p.end : b + h.duration;
        if (e <= b) continue;
        for (int k = 0; k < h.lanes; ++k) table.add_to_any_lane(h.resource, {b, e, owner});
        p.busy.emplace_back(h.resource, (e - b) * h.lanes);
    }
    return p;
}

double TimingModel::bytes_per_cycle(const std::string &level) const {
    const Target &t = target_;
    if (level == "DRAM") return t.dram.bytes_per_cycle;
    if (level == "HOST") return t.host_link.bytes_per_cycle;
    if (level == "STREAMS") return double(t.streams_eastward + t.streams_westward) * t.vector_bytes;
    if (const MemoryDesc *m = t.memory(level)) {
        // Per cycle: every bank's ports, capped by the slice ports where slices share them.
        double per_bank = m->dual_ported ? 2.0 : 1.0;
        double banks = double(m->total_banks()) * per_bank;
        if (m->slice_read_ports > 0 || m->slice_write_ports > 0)
            banks = std::min(banks, double(m->hemispheres * m->slices) * (m->slice_read_ports + m->slice_write_ports));
        return banks * m->row_bytes;
    }
    return 0.0;
}

Roofline TimingModel::roofline(int64_t macs, DType input, const std::map<std::string, int64_t> &bytes_per_level) const {
    Roofline r;
    double peak = peak_macs_per_cycle(input);
    r.compute_cycles = peak > 0 ? double(macs) / peak : 0.0;
    r.bound_cycles = r.compute_cycles;
    r.limiter = "compute";
    for (auto &[level, bytes] : bytes_per_level) {
        double bw = bytes_per_cycle(level);
        if (bw <= 0) continue;
        double c = double(bytes) / bw;
        r.memory_cycles[level] = c;
        if (c > r.bound_cycles) {
            r.bound_cycles = c;
            r.limiter = level;
        }
    }
    return r;
}

Roofline TimingModel::problem_bound(const ProblemSize &p) const {
    const Target &t = target_;
    const int64_t crossing = p.input_bytes + p.output_bytes;
    std::map<std::string, int64_t> levels;
    if (t.dram.bytes_per_cycle > 0) levels["DRAM"] = crossing;
    for (const MemoryDesc &m : t.memories)
        if (!m.accumulator) {
            levels[m.name] = crossing;
            break;
        }
    if (t.streams_eastward + t.streams_westward > 0) levels["STREAMS"] = crossing;
    return roofline(p.macs, p.mac_dtype, levels);
}

} // namespace tessera::chipsim
