// The simulator: expands and validates a program, places every instruction in time through the
// TimingModel (static: at its @cycle, dynamic: by in-order queues and semaphores), checks data
// hazards row by row, executes the functional semantics in start order, and sums up the report.
#include "tessera/chipsim/simulator.h"

#include "machine_state.h"

#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/error.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>

namespace tessera::chipsim {

namespace {

using internal::MachineState;

/// One instruction to run: a program instruction or a copy made by `repeat`.
struct Op {
    Instruction in;
    int32_t index = 0; ///< Program index (for messages and program-order hazard rules).
    int32_t seq = 0;   ///< Position in the expanded list (program order of copies).
    ResourceUse use;
    Queue queue = Queue::None;
};

std::string describe(const Program &p, int32_t index) {
    const Instruction &in = p.instructions.at(size_t(index));
    std::string s = "instruction " + std::to_string(index);
    if (in.line > 0) s += " (line " + std::to_string(in.line) + ")";
    return s + " `" + disassemble(in) + "`";
}

[[noreturn]] void fail(const Program &p, int32_t index, const std::string &why) {
    throw SimError(describe(p, index) + ": " + why);
}

/// Validates every instruction and expands `repeat` into copies with advanced tile bases.
std::vector<Op> expand(const Program &p, const TimingModel &model) {
    const Target &t = model.target();
    const bool is_static = t.issue == IssueKind::Static;
    if (!p.target.empty() && p.target != t.name)
        throw SimError("the program is for target '" + p.target + "' (.target) but runs on '" + t.name + "'");
    // Programs built in C++ reach here without a reader's checks: bound the expansion first.
    int64_t expanded = 0;
    for (size_t i = 0; i < p.instructions.size(); ++i) {
        const Instruction &in = p.instructions[i];
        if (in.op != Opcode::Repeat) {
            ++expanded;
        } else if (std::string why = repeat_problem(in.count, expanded); !why.empty()) {
            fail(p, int32_t(i), why);
        } else {
            expanded += in.count;
        }
    }
    for (const TensorDecl &d : p.tensors) {
        if (std::string why = tensor_shape_problem(d); !why.empty()) throw SimError(why);
        if (d.is_buffer && t.dram.bytes == 0)
            throw SimError(".buffer '" + d.name + "': " + t.name + " has no DRAM for a buffer to live in");
    }
    std::vector<Op> ops;
    for (size_t i = 0; i < p.instructions.size(); ++i) {
        const Instruction &in = p.instructions[i];
        const int32_t idx = int32_t(i);
        if (in.op == Opcode::Repeat) {
            if (ops.empty() || ops.back().index != idx - 1)
                fail(p, idx, "repeat must follow the instruction it repeats");
            const Instruction &prev = p.instructions[i - 1];
            if (prev.op == Opcode::DmaLoad || prev.op == Opcode::DmaStore || prev.op == Opcode::SyncSignal ||
                prev.op == Opcode::SyncWait || prev.op == Opcode::Repeat)
                fail(p, idx, std::string("cannot repeat ") + opcode_name(prev.op) +
                                 " (only on-chip instructions, whose tiles advance by their row span)");
            for (int64_t k = 1; k <= in.count; ++k) {
                Op copy = ops.back();
                copy.in = prev;
                for (auto &tile : copy.in.tiles) tile.base += k * tile.count * tile.stride;
                if (is_static) copy.in.cycle = prev.cycle + k * in.distance;
                copy.index = idx - 1;
                copy.seq = int32_t(ops.size());
                try {
                    copy.use = model.resources(copy.in);
                } catch (const SimError &e) {
                    fail(p, idx, "repetition " + std::to_string(k) + ": " + e.what());
                }
                ops.push_back(std::move(copy));
            }
            continue;
        }
        if (is_static && in.cycle < 0) fail(p, idx, t.name + " issues statically: every instruction needs @<cycle>");
        if (!is_static && in.cycle >= 0)
            fail(p, idx, t.name + " issues dynamically from queues: remove the @cycle");
        if (is_static && (in.op == Opcode::SyncSignal || in.op == Opcode::SyncWait))
            fail(p, idx, t.name + " has no semaphores: static programs are ordered by their cycles");
        if (!is_static && in.op == Opcode::Nop && in.queue == Queue::None)
            fail(p, idx, "nop needs a queue on " + t.name + ": nop.load, nop.exec, nop.store or nop.vector");
        if (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) {
            if (in.view.tensor != "DRAM") {
                const TensorDecl *d = p.tensor(in.view.tensor);
                if (!d) fail(p, idx, "unknown tensor '" + in.view.tensor + "': declare it with .input or .output");
                if (in.op == Opcode::DmaStore && !d->is_output && !d->is_buffer)
                    fail(p, idx, "dma.store writes to '" + d->name + "', which is an .input");
            }
        }
        Op op;
        op.in = in;
        op.index = idx;
        op.seq = int32_t(ops.size());
        op.queue = is_static ? Queue::None : queue_of(in);
        try {
            op.use = model.resources(in);
        } catch (const SimError &e) {
            fail(p, idx, e.what());
        }
        ops.push_back(std::move(op));
    }
    return ops;
}

/// Last writer and reader of one row (a memory row or an MXM weight buffer).
struct RowState {
    int64_t write_time = INT64_MIN; ///< Cycle the last write happens.
    int64_t ready = INT64_MIN;      ///< Cycle its data can be read.
    int32_t writer = -1;            ///< Op seq.
    int64_t read_time = INT64_MIN;  ///< Latest read.
    int32_t reader = -1;
};

/// Row-by-row hazard state and checks.
class HazardTracker {
public:
    HazardTracker(const Target &t, const Program &p, const std::vector<Op> &ops) : program_(p), ops_(ops) {
        for (auto &m : t.memories) spaces_.emplace_back(size_t(m.total_rows()));
        spaces_.emplace_back(size_t(t.mxm.count * t.mxm.weight_buffers));
        names_ = t.memories;
    }

    /// Earliest start so that this op's accesses respect earlier ops selected by `interlocks`.
    template <typename Pred>
    int64_t data_ready(const std::vector<RowAccess> &acc, const Op &op, int64_t latency_guess, Pred interlocks) const {
        int64_t t = INT64_MIN;
        for (auto &a : acc) {
            const RowState &st = spaces_[size_t(a.space)][size_t(a.row)];
            const int64_t off = a.at_end ? latency_guess : a.offset;
            if (!a.write) {
                if (st.writer >= 0 && st.writer < op.seq && interlocks(st.writer)) t = std::max(t, st.ready - off);
            } else {
                if (st.writer >= 0 && st.writer < op.seq && interlocks(st.writer)) t = std::max(t, st.ready - off);
                if (st.reader >= 0 && st.reader < op.seq && interlocks(st.reader)) t = std::max(t, st.read_time + 1 - off);
            }
        }
        return t;
    }

    /// Checks the accesses at the op's final times and records them.
    void check_and_record(const std::vector<RowAccess> &acc, const Op &op, int64_t start, int64_t end) {
        for (auto &a : acc) {
            RowState &st = spaces_[size_t(a.space)][size_t(a.row)];
            const int64_t when = a.at_end ? end : start + a.offset;
            if (!a.write) {
                if (st.writer >= 0 && st.writer != op.seq) {
                    if (st.writer < op.seq && when < st.ready)
                        conflict(op, st.writer, a, "reads it at cycle " + std::to_string(when) + " but the data lands at cycle " +
                                                       std::to_string(st.ready));
                    if (st.writer > op.seq)
                        conflict(op, st.writer, a, "reads it after a later instruction in program order wrote it: a race (order them with sync or cycles)");
                }
                if (when >= st.read_time) {
                    st.read_time = when;
                    st.reader = op.seq;
                }
            } else {
                if (st.reader >= 0 && st.reader != op.seq) {
                    if (st.reader < op.seq && when <= st.read_time)
                        conflict(op, st.reader, a, "overwrites it at cycle " + std::to_string(when) + " before it is read at cycle " +
                                                       std::to_string(st.read_time));
                    if (st.reader > op.seq)
                        conflict(op, st.reader, a, "writes it after a later instruction in program order already read it: a race (order them with sync or cycles)");
                }
                if (st.writer >= 0 && st.writer != op.seq) {
                    if (st.writer < op.seq && when < st.ready)
                        conflict(op, st.writer, a, "writes it at cycle " + std::to_string(when) + " before the earlier write lands at cycle " +
                                                       std::to_string(st.ready));
                    if (st.writer > op.seq)
                        conflict(op, st.writer, a, "writes it after a later instruction in program order wrote it: a race");
                }
                st.write_time = when;
                st.ready = a.at_end ? when : when + 1;
                st.writer = op.seq;
            }
        }
    }

private:
    [[noreturn]] void conflict(const Op &op, int32_t other_seq, const RowAccess &a, const std::string &why) const {
        std::string what;
        if (a.space < int(names_.size())) what = names_[size_t(a.space)].name + " row " + std::to_string(a.row);
        else what = "weight buffer " + std::to_string(a.row);
        throw SimError(describe(program_, op.index) + ": data hazard with " + describe(program_, ops_[size_t(other_seq)].index) +
                       " on " + what + ": " + why);
    }

    const Program &program_;
    const std::vector<Op> &ops_;
    std::vector<std::vector<RowState>> spaces_;
    std::vector<MemoryDesc> names_;
};

std::string resource_cause(ResourceKind k) {
    switch (k) {
    case ResourceKind::BankPort: return "bank";
    case ResourceKind::SlicePort: return "slice_port";
    case ResourceKind::Stream: return "stream";
    case ResourceKind::DmaEngine: return "dma_engine";
    case ResourceKind::Bandwidth: return "bandwidth";
    default: return "unit";
    }
}

/// Per-run accumulation shared by both issue styles.
struct RunState {
    const Program &program;
    const TimingModel &model;
    const SimOptions &options;
    std::vector<Op> ops;
    ReservationTable table;
    HazardTracker hazards;
    std::optional<MachineState> machine;
    SimResult result;
    std::map<std::string, int64_t> bytes;
    int64_t macs = 0;
    std::map<DType, int64_t> macs_by_dtype;
    double mac_peak_cycles = 0;
    std::vector<int32_t> placed; ///< Op seqs in placement order.
    /// Per Program::stages entry: the report's figures, busy cycles by resource index (named
    /// once, in finish_report, rather than looked up by name for every instruction).
    struct StageTally {
        StageReport report;
        std::vector<int64_t> busy;
    };
    std::vector<StageTally> stages;

    RunState(const Program &p, const TimingModel &m, const SimOptions &o)
        : program(p), model(m), options(o), ops(expand(p, m)), table(m.make_table()), hazards(m.target(), p, ops) {
        if (o.functional) machine.emplace(m.target(), p, o.inputs);
        for (const std::string &name : p.stages) stages.push_back({StageReport{name}, std::vector<int64_t>(m.resource_table().size())});
    }

    /// Adds a placed instruction to its stage's profile.
    void profile(const Op &op, const Placement &pl) {
        if (op.in.stage < 0 || size_t(op.in.stage) >= stages.size()) return;
        StageTally &tally = stages[size_t(op.in.stage)];
        StageReport &s = tally.report;
        s.first_cycle = s.instructions == 0 ? pl.start : std::min(s.first_cycle, pl.start);
        s.last_cycle = std::max(s.last_cycle, pl.end);
        ++s.instructions;
        s.macs += op.use.macs;
        for (const auto &[resource, cycles] : pl.busy) tally.busy[size_t(resource)] += cycles;
    }

    /// Places op at `start` (resources already known free or stalled for), checks hazards,
    /// executes it and records report/trace data. Returns the placement.
    Placement commit(const Op &op, const std::vector<RowAccess> &acc, int64_t start, int64_t ready) {
        Placement pl = model.reserve(op.use, table, start, op.seq);
        hazards.check_and_record(acc, op, pl.start, pl.end);
        profile(op, pl);
        placed.push_back(op.seq);
        result.timings.push_back({op.index, ready, pl.start, pl.end});
        for (auto &[level, b] : op.use.bytes) bytes[level] += b;
        if (op.use.macs) {
            macs += op.use.macs;
            macs_by_dtype[op.use.mac_dtype] += op.use.macs;
            mac_peak_cycles += double(op.use.macs) / model.peak_macs_per_cycle(op.use.mac_dtype);
        }
        result.report.bank_conflicts += op.use.internal_bank_conflicts;
        if (options.trace) {
            const auto &res = model.resource_table();
            for (auto &h : op.use.holds) {
                if (h.bandwidth) continue;
                int64_t b = pl.start + h.offset, e = h.until_end ? pl.end : b + h.duration;
                if (e > b) result.trace.push_back({res[size_t(h.resource)].name, op.index, b, e});
            }
            for (size_t k = 0; k < pl.bursts.size(); ++k) { // merge back-to-back bursts into one box
                int64_t b = pl.bursts[k].begin, e = pl.bursts[k].end;
                while (k + 1 < pl.bursts.size() && pl.bursts[k + 1].begin == e) e = pl.bursts[++k].end;
                for (auto &h : op.use.holds)
                    if (h.bandwidth) result.trace.push_back({res[size_t(h.resource)].name, op.index, b, e});
            }
            if (op.use.holds.empty() && pl.end > pl.start)
                result.trace.push_back({std::string("queue.") + queue_name(op.queue), op.index, pl.start, pl.end});
        }
        return pl;
    }

    /// Values, after the whole schedule was accepted (so a schedule error is reported before any
    /// value error, and timing never depends on values): in placement order, which the hazard
    /// checks made equivalent to program order for every row any two instructions share.
    void execute_values() {
        if (!machine) return;
        for (int32_t seq : placed) {
            const Op &op = ops[size_t(seq)];
            try {
                internal::execute(op.in, op.use, *machine);
            } catch (const SimError &e) {
                fail(program, op.index, e.what());
            }
        }
    }

    void stall(int64_t cycles, const std::string &cause, const std::string &bank = "") {
        if (cycles <= 0) return;
        result.report.stall_cycles += cycles;
        result.report.stall_cycles_by_cause[cause] += cycles;
        if (!bank.empty()) result.report.stall_cycles_by_bank[bank] += cycles;
    }
};

void run_static(RunState &rs) {
    std::vector<const Op *> order;
    for (auto &op : rs.ops) order.push_back(&op);
    std::stable_sort(order.begin(), order.end(), [](const Op *a, const Op *b) { return a->in.cycle < b->in.cycle; });
    const auto &res = rs.model.resource_table();
    for (const Op *op : order) {
        const int64_t start = op->in.cycle;
        if (auto c = rs.model.conflict_at(op->use, rs.table, start)) {
            std::string other = c->held.owner >= 0 ? describe(rs.program, rs.ops[size_t(c->held.owner)].index)
                                                   : std::string("another transfer");
            throw SimError(describe(rs.program, op->index) + ": resource conflict with " + other + " on " +
                           res[size_t(c->resource)].name + ": needed from cycle " + std::to_string(c->at) +
                           ", held over [" + std::to_string(c->held.begin) + ", " + std::to_string(c->held.end) + ")");
        }
        rs.commit(*op, rs.model.row_accesses(op->in, op->use), start, start);
    }
}

void run_dynamic(RunState &rs) {
    const Target &t = rs.model.target();
    const auto &res = rs.model.resource_table();
    constexpr int kQueues = 4;
    auto qi = [](Queue q) { return int(q) - 1; };
    std::vector<int32_t> queue_ops[kQueues];
    for (auto &op : rs.ops) queue_ops[qi(op.queue)].push_back(op.seq);
    size_t head[kQueues] = {0, 0, 0, 0};
    // In-order issue: a queue offers its next instruction queue_hold_cycles after the previous
    // one started.
    int64_t queue_free[kQueues] = {0, 0, 0, 0};
    int64_t max_end[kQueues] = {0, 0, 0, 0};
    std::vector<std::vector<int64_t>> signals(size_t(std::max(1, t.semaphores)));
    std::vector<size_t> consumed(signals.size(), 0);
    size_t remaining = rs.ops.size();
    while (remaining > 0) {
        int best_q = -1;
        int64_t best_start = INT64_MAX, best_ready = 0, best_data = 0;
        std::vector<RowAccess> best_acc;
        for (int q = 0; q < kQueues; ++q) {
            if (head[q] >= queue_ops[q].size()) continue;
            const Op &op = rs.ops[size_t(queue_ops[q][head[q]])];
            int64_t ready = queue_free[q];
            if (op.in.op == Opcode::SyncWait) {
                auto s = size_t(op.in.count);
                if (consumed[s] >= signals[s].size()) continue; // blocked until someone signals
                ready = std::max(ready, signals[s][consumed[s]]);
            }
            if (op.in.op == Opcode::SyncSignal) ready = std::max(ready, max_end[q]);
            std::vector<RowAccess> acc = rs.model.row_accesses(op.in, op.use);
            const auto &ops = rs.ops;
            int64_t data = std::max(ready, rs.hazards.data_ready(acc, op, op.use.latency, [&](int32_t other) {
                return ops[size_t(other)].queue == op.queue;
            }));
            int64_t start = rs.model.earliest_start(op.use, rs.table, data);
            if (start < best_start) {
                best_q = q;
                best_start = start;
                best_ready = ready;
                best_data = data;
                best_acc = std::move(acc);
            }
        }
        if (best_q < 0) {
            std::string blocked;
            for (int q = 0; q < kQueues; ++q)
                if (head[q] < queue_ops[q].size()) {
                    const Op &op = rs.ops[size_t(queue_ops[q][head[q]])];
                    blocked += (blocked.empty() ? "" : "; ") + std::string("queue ") + queue_name(Queue(q + 1)) + " waits at " +
                               describe(rs.program, op.index);
                }
            throw SimError("deadlock: every remaining queue waits on a semaphore that no queued instruction will signal: " + blocked);
        }
        const Op &op = rs.ops[size_t(queue_ops[best_q][head[best_q]])];
        // Stall accounting: waiting on a semaphore, on data, then on a resource.
        if (op.in.op == Opcode::SyncWait) rs.stall(best_ready - queue_free[best_q], "sync");
        rs.stall(best_data - best_ready, "dependency");
        if (best_start > best_data) {
            auto c = rs.model.conflict_at(op.use, rs.table, best_data);
            const ResourceInfo &r = res[size_t(c ? c->resource : 0)];
            bool bank = c && r.kind == ResourceKind::BankPort;
            rs.stall(best_start - best_data, c ? resource_cause(r.kind) : "unit", bank ? r.name : "");
            if (bank) ++rs.result.report.bank_conflicts;
        }
        Placement pl = rs.commit(op, best_acc, best_start, best_ready);
        rs.stall(pl.end - (pl.start + op.use.latency), "bandwidth");
        if (op.in.op == Opcode::SyncSignal) signals[size_t(op.in.count)].push_back(pl.start);
        if (op.in.op == Opcode::SyncWait) ++consumed[size_t(op.in.count)];
        queue_free[best_q] = pl.start + queue_hold_cycles(op.in, op.use, pl.end - pl.start);
        max_end[best_q] = std::max(max_end[best_q], pl.end);
        ++head[best_q];
        --remaining;
    }
}

void finish_report(RunState &rs) {
    const Target &t = rs.model.target();
    Report &r = rs.result.report;
    r.target = t.name;
    r.instructions = int64_t(rs.ops.size());
    const bool host_dma = t.dram.bytes == 0;
    int64_t total_end = 0, k_begin = INT64_MAX, k_end = 0;
    for (auto &tm : rs.result.timings) {
        total_end = std::max(total_end, tm.end);
        const Instruction &in = rs.program.instructions[size_t(tm.index)];
        bool is_host = host_dma && (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore);
        if (!is_host) {
            k_begin = std::min(k_begin, tm.start);
            k_end = std::max(k_end, tm.end);
        }
    }
    if (host_dma) {
        r.cycles = k_begin == INT64_MAX ? 0 : k_end - k_begin;
        r.total_cycles = total_end;
        r.host_io_cycles = r.total_cycles - r.cycles;
    } else {
        // DRAM chips: the host fills DRAM with the inputs before and reads the outputs after.
        int64_t in_bytes = 0, out_bytes = 0;
        for (auto &d : rs.program.tensors)
            if (!d.is_buffer) (d.is_output ? out_bytes : in_bytes) += d.bytes(); // buffers stay in DRAM
        auto link = [&](int64_t b) {
            return b == 0 ? 0 : t.host_link.latency + (b + t.host_link.bytes_per_cycle - 1) / t.host_link.bytes_per_cycle;
        };
        r.cycles = total_end;
        r.host_link_in_cycles = link(in_bytes);
        r.host_link_out_cycles = link(out_bytes);
        r.host_io_cycles = r.host_link_in_cycles + r.host_link_out_cycles;
        r.total_cycles = r.cycles + r.host_io_cycles;
        if (in_bytes) rs.bytes["HOST"] += in_bytes;
        if (out_bytes) rs.bytes["HOST"] += out_bytes;
    }
    r.macs = rs.macs;
    r.bytes = rs.bytes;
    const double cyc = double(std::max<int64_t>(1, r.cycles));
    r.macs_per_cycle = double(r.macs) / cyc;
    DType main = DType::Int8;
    int64_t most = -1;
    for (auto &[d, m] : rs.macs_by_dtype)
        if (m > most) {
            most = m;
            main = d;
        }
    if (most >= 0) {
        r.mac_dtype = dtype_name(main);
        r.peak_macs_per_cycle = rs.model.peak_macs_per_cycle(main);
    } else {
        r.peak_macs_per_cycle = rs.model.peak_macs_per_cycle(t.mxm.dtypes.empty() ? DType::Int8 : t.mxm.dtypes[0]);
    }
    r.mxm_utilization = rs.mac_peak_cycles / cyc;
    for (size_t i = 0; i < rs.model.resource_table().size(); ++i) {
        const ResourceInfo &info = rs.model.resource_table()[i];
        if (info.kind == ResourceKind::BankPort || info.kind == ResourceKind::SlicePort) continue;
        UnitReport u;
        u.name = info.name;
        u.lanes = info.lanes;
        u.busy_cycles = rs.table.busy_cycles(int(i));
        const double span = info.name == "HOSTLINK" ? double(std::max<int64_t>(1, r.total_cycles)) : cyc;
        u.utilization = std::min(1.0, double(u.busy_cycles) / (span * info.lanes));
        r.units.push_back(u);
    }
    for (RunState::StageTally &tally : rs.stages) {
        if (tally.report.instructions == 0) continue;
        for (size_t i = 0; i < tally.busy.size(); ++i) {
            const ResourceInfo &info = rs.model.resource_table()[i];
            if (tally.busy[i] > 0 && info.kind != ResourceKind::BankPort && info.kind != ResourceKind::SlicePort)
                tally.report.busy_cycles[info.name] = tally.busy[i];
        }
        r.stages.push_back(std::move(tally.report));
    }
    std::sort(r.units.begin(), r.units.end(), [](const UnitReport &a, const UnitReport &b) { return a.name < b.name; });
    std::map<std::string, int64_t> roof_bytes;
    for (auto &[level, b] : r.bytes)
        if (level != "HOST") roof_bytes[level] = b; // host I/O is reported apart from the kernel
    Roofline roof = rs.model.roofline(r.macs, most >= 0 ? main : DType::Int8, roof_bytes);
    r.roofline_cycles = roof.bound_cycles;
    r.roofline_limiter = roof.limiter;
}

void collect_outputs(RunState &rs) {
    if (!rs.machine) return;
    for (auto &[name, img] : rs.machine->tensors) {
        if (!img.decl.is_output) continue;
        auto it = std::find(img.written.begin(), img.written.end(), uint8_t(0));
        if (it != img.written.end()) {
            int64_t byte = it - img.written.begin();
            throw SimError("output '" + name + "' was not fully written: byte " + std::to_string(byte) + " (element " +
                           std::to_string(byte / dtype_bytes(img.decl.dtype)) + ") was never stored");
        }
        rs.result.outputs[name] = TensorData{img.decl.dtype, img.decl.shape, img.bytes};
    }
}

} // namespace

void validate_program(const Program &program, const TimingModel &model) { (void)expand(program, model); }

SimResult simulate(const Program &program, const TimingModel &model, const SimOptions &options) {
    RunState rs(program, model, options);
    if (model.target().issue == IssueKind::Static) run_static(rs);
    else run_dynamic(rs);
    rs.execute_values();
    finish_report(rs);
    collect_outputs(rs);
    return std::move(rs.result);
}

Program schedule_asap(const Program &program, const TimingModel &model) {
    if (model.target().issue != IssueKind::Static)
        throw SimError("schedule_asap assigns @cycles for static targets; " + model.target().name + " issues dynamically");
    Program p = program;
    std::vector<int64_t> not_before;
    for (auto &in : p.instructions) {
        if (in.op == Opcode::Repeat) throw SimError("schedule_asap: expand repeat before scheduling");
        not_before.push_back(std::max<int64_t>(0, in.cycle));
        in.cycle = 0; // placeholders so validation passes
    }
    std::vector<Op> ops = expand(p, model);
    ReservationTable table = model.make_table();
    HazardTracker hazards(model.target(), p, ops);
    for (auto &op : ops) {
        std::vector<RowAccess> acc = model.row_accesses(op.in, op.use);
        int64_t t = std::max<int64_t>(not_before[size_t(op.index)], hazards.data_ready(acc, op, op.use.latency, [](int32_t) { return true; }));
        // Static issue cannot split a bandwidth burst: search for a start where everything fits.
        while (true) {
            t = model.earliest_start(op.use, table, t);
            auto c = model.conflict_at(op.use, table, t);
            if (!c) break;
            t = std::max(t + 1, c->held.end - (c->at - t));
        }
        Placement pl = model.reserve(op.use, table, t, op.seq);
        hazards.check_and_record(acc, op, pl.start, pl.end);
        p.instructions[size_t(op.index)].cycle = t;
    }
    return p;
}

} // namespace tessera::chipsim
