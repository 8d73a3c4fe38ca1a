// The static list scheduler and the semaphore inserter (instruction_scheduler.h).
#include "instruction_scheduler.h"

#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <unordered_map>

#include "preload_merging.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::Instruction;
using chipsim::Opcode;

/// The rows an instruction reads and writes, and when: the timing model's, DRAM granules
/// included (a pre-pass's scratch region is written and read back through DRAM).
std::vector<chipsim::RowAccess> touches(const Instruction &in, const chipsim::ResourceUse &use,
                                        const chipsim::TimingModel &model) {
    return model.row_accesses(in, use, /*dram_granules=*/true);
}

bool is_host_dma(const Instruction &in, const chipsim::Target &t) {
    return t.dram.bytes == 0 && (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore);
}

} // namespace

namespace {

/// Whether chipsim, which checks a static program's resources in cycle order, finds every
/// instruction where the list scheduler placed it in emission order. Holds are order-free on
/// their own (a hold fits by count), but a shared-bandwidth resource (the host link) is served
/// first come, first served, and a hold that lasts until its transfer ends then ends elsewhere
/// when a later-emitted transfer took an earlier gap.
bool agrees_in_cycle_order(const std::vector<Instruction> &placed, const std::vector<chipsim::ResourceUse> &uses,
                           const chipsim::TimingModel &model) {
    std::vector<size_t> order(placed.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return placed[a].cycle < placed[b].cycle; });
    chipsim::ReservationTable table = model.make_table();
    for (size_t i : order) {
        if (model.conflict_at(uses[i], table, placed[i].cycle)) return false;
        model.reserve(uses[i], table, placed[i].cycle, int32_t(i));
    }
    return true;
}

/// A placed program and the cycle its last instruction ends.
struct Placed {
    std::vector<Instruction> instructions;
    int64_t end = 0;
};

/// The list scheduler (schedule_static); `host_dma_in_order` holds host DMA to emission order
/// too, which makes the placement agree with chipsim by construction.
Placed list_schedule(const std::vector<ChipOp> &ops, const chipsim::TimingModel &model, bool in_order,
                     bool host_dma_in_order) {
    const chipsim::Target &t = model.target();
    struct RowState {
        int64_t ready = INT64_MIN;
        int64_t last_read = INT64_MIN;
        int64_t last_reader_start = INT64_MIN; ///< A later writer must also start later: the
                                               ///< program is in cycle order, and chipsim reads
                                               ///< that order as program order.
        int64_t last_writer_start = INT64_MIN; ///< Likewise for a later writer: two accumulating
                                               ///< matmuls whose latencies differ (stream
                                               ///< distances) must land in program order too.
    };
    std::unordered_map<int64_t, RowState> rows;
    chipsim::ReservationTable table = model.make_table();
    std::vector<Instruction> out;
    std::vector<chipsim::ResourceUse> uses;
    out.reserve(ops.size());
    uses.reserve(ops.size());
    int64_t preload_end = 0, previous_start = 0, program_end = 0;
    for (size_t idx = 0; idx < ops.size(); ++idx) {
        Instruction in = ops[idx].in;
        in.cycle = 0;
        chipsim::ResourceUse use;
        try {
            use = model.resources(in);
        } catch (const Error &e) {
            throw Error("chip backend: generated `" + chipsim::disassemble(in) + "` (" + ops[idx].what + ") does not fit " +
                        t.name + ": " + e.what());
        }
        if (use.internal_bank_conflicts > 0 && t.conflict_policy == chipsim::ConflictPolicy::Error)
            throw Error("chip backend: `" + chipsim::disassemble(in) + "` (" + ops[idx].what +
                        ") reads and writes the same single-ported bank in the same cycles; on " + t.name +
                        " a bank conflict is a compile error: place its operands in different banks");
        std::vector<chipsim::RowAccess> acc = touches(in, use, model);
        // Host DMA holds only single-lane resources (its engine, the link, bank ports), whose
        // conflicts do not depend on the order chipsim checks them in: it may fill earlier gaps.
        const bool ordered = in_order && (host_dma_in_order || !is_host_dma(in, t));
        int64_t start = ordered ? previous_start : 0;
        if (ops[idx].after_preload) start = std::max(start, preload_end);
        for (auto &a : acc) {
            auto it = rows.find(row_key(a));
            if (it == rows.end()) continue;
            const int64_t off = a.at_end ? use.latency : a.offset;
            if (it->second.ready != INT64_MIN) start = std::max(start, it->second.ready - off);
            // A reader may reach a row late in its run: it must still not start before the
            // row's writer, or chipsim, reading cycle order as program order, sees it first.
            if (!a.write && it->second.last_writer_start != INT64_MIN) start = std::max(start, it->second.last_writer_start);
            if (a.write && it->second.last_read != INT64_MIN) start = std::max(start, it->second.last_read + 1 - off);
            if (a.write && it->second.last_reader_start != INT64_MIN) start = std::max(start, it->second.last_reader_start + 1);
            if (a.write && it->second.last_writer_start != INT64_MIN) start = std::max(start, it->second.last_writer_start + 1);
        }
        while (true) {
            start = model.earliest_start(use, table, start);
            auto c = model.conflict_at(use, table, start);
            if (!c) break;
            start = std::max(start + 1, c->held.end - (c->at - start));
        }
        chipsim::Placement pl = model.reserve(use, table, start, int32_t(idx));
        program_end = std::max(program_end, pl.end);
        for (auto &a : acc) {
            RowState &st = rows[row_key(a)];
            const int64_t when = a.at_end ? pl.end : start + a.offset;
            if (a.write) {
                st.ready = a.at_end ? when : when + 1;
                st.last_writer_start = std::max(st.last_writer_start, start);
            } else {
                st.last_read = std::max(st.last_read, when);
                st.last_reader_start = std::max(st.last_reader_start, start);
            }
        }
        if (in.op == Opcode::DmaLoad && is_host_dma(in, t)) preload_end = std::max(preload_end, pl.end);
        in.cycle = start;
        if (ordered) previous_start = start;
        out.push_back(in);
        uses.push_back(std::move(use));
    }
    if (!(in_order && host_dma_in_order) && !agrees_in_cycle_order(out, uses, model))
        return list_schedule(ops, model, /*in_order=*/true, /*host_dma_in_order=*/true);
    std::stable_sort(out.begin(), out.end(), [](const Instruction &a, const Instruction &b) { return a.cycle < b.cycle; });
    return {std::move(out), program_end};
}

} // namespace

std::vector<Instruction> schedule_static(const std::vector<ChipOp> &emitted, const chipsim::TimingModel &model, bool in_order) {
    const std::vector<ChipOp> ops = merge_preload_loads(emitted, model);
    return list_schedule(ops, model, in_order, /*host_dma_in_order=*/false).instructions;
}

std::vector<Instruction> schedule_static_either_order(const std::vector<ChipOp> &emitted, const chipsim::TimingModel &model) {
    const std::vector<ChipOp> ops = merge_preload_loads(emitted, model);
    Placed in_order = list_schedule(ops, model, /*in_order=*/true, /*host_dma_in_order=*/false);
    Placed free = list_schedule(ops, model, /*in_order=*/false, /*host_dma_in_order=*/false);
    return free.end < in_order.end ? std::move(free.instructions) : std::move(in_order.instructions);
}

std::vector<Instruction> insert_semaphores(std::vector<ChipOp> ops, const chipsim::TimingModel &model) {
    const chipsim::Target &t = model.target();
    // Per row, its last writer and, per queue, its last reader since: a writer waits for the
    // latest reader of each other queue (every earlier one of that queue ends before it).
    constexpr size_t kQueues = size_t(chipsim::Queue::Vector) + 1;
    struct RowState {
        RowState() { reader.fill(-1); }
        int32_t writer = -1;
        std::array<int32_t, kQueues> reader;
    };
    // Every row of the on-chip memories and weight buffers in one flat table, DRAM granules (as
    // many as DRAM's bytes) in a map: the pass visits every row of every operand, and a hash
    // lookup per row was most of its time. A row never touched holds no writer and no reader.
    std::vector<int64_t> space_base{0};
    for (const chipsim::MemoryDesc &m : t.memories) space_base.push_back(space_base.back() + m.total_rows());
    space_base.push_back(space_base.back() + int64_t(t.mxm.count) * t.mxm.weight_buffers);
    std::vector<RowState> chip_rows(size_t(space_base.back()));
    std::unordered_map<int64_t, RowState> dram_rows;
    auto row_state = [&](const chipsim::RowAccess &a) -> RowState & {
        return a.space == model.dram_space() ? dram_rows[a.row] : chip_rows[size_t(space_base[size_t(a.space)] + a.row)];
    };
    const size_t n = ops.size();
    std::vector<chipsim::Queue> queue(n);
    std::vector<int64_t> pos_in_queue(n);
    std::map<chipsim::Queue, std::vector<int32_t>> queue_ops;
    std::vector<std::vector<Instruction>> before(n), after(n);
    struct Pair {
        int semaphore = 0;
        std::vector<int64_t> coverage; ///< Per signal: ops of the producer queue it covers.
        size_t consumed = 0;
    };
    std::map<std::pair<chipsim::Queue, chipsim::Queue>, Pair> pairs;
    int next_semaphore = 0;
    for (size_t x = 0; x < n; ++x) {
        const Instruction &in = ops[x].in;
        const chipsim::ResourceUse use = model.resources(in);
        queue[x] = chipsim::queue_of(in);
        pos_in_queue[x] = int64_t(queue_ops[queue[x]].size());
        queue_ops[queue[x]].push_back(int32_t(x));
        // The latest producer per other queue this op must wait for.
        std::map<chipsim::Queue, int32_t> need;
        auto depend = [&](int32_t y) {
            if (y < 0 || queue[size_t(y)] == queue[x]) return;
            auto it = need.find(queue[size_t(y)]);
            if (it == need.end()) need[queue[size_t(y)]] = y;
            else it->second = std::max(it->second, y);
        };
        std::vector<chipsim::RowAccess> acc = touches(in, use, model);
        for (auto &a : acc) {
            const RowState &st = row_state(a);
            depend(st.writer);
            if (a.write)
                for (int32_t r : st.reader) depend(r);
        }
        for (auto &[qa, y] : need) {
            auto key = std::make_pair(qa, queue[x]);
            auto [it, fresh] = pairs.try_emplace(key);
            Pair &p = it->second;
            if (fresh) {
                if (next_semaphore >= t.semaphores)
                    throw Error("chip backend: " + t.name + " has " + std::to_string(t.semaphores) +
                                " semaphores, too few for one per pair of queues");
                p.semaphore = next_semaphore++;
            }
            const int64_t pos = pos_in_queue[size_t(y)];
            // The first signal that covers `pos` (coverage only grows).
            const size_t s = size_t(std::upper_bound(p.coverage.begin(), p.coverage.end(), pos) - p.coverage.begin());
            if (s == p.coverage.size()) {
                Instruction sig;
                sig.op = Opcode::SyncSignal;
                sig.queue = qa;
                sig.count = p.semaphore;
                sig.stage = ops[size_t(y)].in.stage; // the profile counts a sync with the work it orders
                after[size_t(y)].push_back(sig);
                p.coverage.push_back(pos + 1);
            }
            while (p.consumed <= s) {
                Instruction w;
                w.op = Opcode::SyncWait;
                w.queue = queue[x];
                w.count = p.semaphore;
                w.stage = ops[x].in.stage;
                before[x].push_back(w);
                ++p.consumed;
            }
        }
        for (auto &a : acc) {
            RowState &st = row_state(a);
            if (a.write) {
                st.writer = int32_t(x);
                st.reader.fill(-1);
            } else {
                st.reader[size_t(queue[x])] = int32_t(x);
            }
        }
    }
    std::vector<Instruction> out;
    out.reserve(n * 2);
    for (size_t x = 0; x < n; ++x) {
        for (auto &w : before[x]) out.push_back(std::move(w));
        out.push_back(std::move(ops[x].in)); // moved: copying every instruction was a tenth of a compile
        out.back().cycle = -1;
        for (auto &s : after[x]) out.push_back(std::move(s));
    }
    return out;
}

} // namespace tessera::internal::chip
