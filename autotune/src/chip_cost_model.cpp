// The analytic chip cost model (chip_cost_model.h).
#include "chip_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

#include "tessera/chipsim/error.h"
#include "tessera/error.h"

namespace tessera::internal::autotune {

namespace {

float log_feature(double x) { return float(std::log2(1.0 + std::max(0.0, x))); }

/// The instruction classes counted as features.
int instruction_class(chipsim::Opcode op) {
    using chipsim::Opcode;
    switch (op) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore: return 0;
    case Opcode::MemCopy: return 1;
    case Opcode::MxmLw: return 2;
    case Opcode::MxmMm: return 3;
    case Opcode::MxmDrain: return 4;
    case Opcode::Vxm:
    case Opcode::VxmReduce: return 5;
    default: return 6;
    }
}

} // namespace

ChipEstimate estimate_chip_cycles(const chipsim::Program &program, const chipsim::TimingModel &model,
                                  const chipsim::ProblemSize &problem) {
    using chipsim::Opcode;
    const bool is_static = model.target().issue == chipsim::IssueKind::Static;
    const auto &resources = model.resource_table();
    std::vector<double> busy(resources.size(), 0.0);
    std::vector<double> per_class(7, 0.0);
    std::map<std::string, double> bytes;
    // On a chip without DRAM the DMAs move data to and from the host: outside a kernel's cycles
    // (as the simulator's report counts them).
    const bool host_dma = model.target().dram.bytes == 0;
    std::map<size_t, double> queue_busy;
    int64_t kernel_begin = INT64_MAX, kernel_end = 0;
    ChipEstimate e;
    auto account = [&](const chipsim::Instruction &in, int64_t cycle) {
        if (in.op == Opcode::Nop || in.op == Opcode::SyncSignal || in.op == Opcode::SyncWait) return;
        const chipsim::ResourceUse use = model.resources(in);
        for (const auto &[level, b] : use.bytes) bytes[level] += double(b);
        per_class[size_t(instruction_class(in.op))] += 1;
        if (host_dma && (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore)) return;
        // What each in-order queue takes at least, as the simulator's queues hold it.
        queue_busy[size_t(chipsim::queue_of(in))] += double(chipsim::queue_hold_cycles(in, use, use.latency));
        kernel_begin = std::min(kernel_begin, cycle);
        kernel_end = std::max(kernel_end, cycle + use.latency);
        for (const chipsim::ResourceHold &h : use.holds) {
            const int lanes = std::max(1, resources[size_t(h.resource)].lanes);
            busy[size_t(h.resource)] += double(h.duration) * h.lanes / lanes;
        }
    };
    try {
        const auto &ins = program.instructions;
        for (size_t i = 0; i < ins.size(); ++i) {
            if (ins[i].op != Opcode::Repeat) {
                account(ins[i], ins[i].cycle);
                continue;
            }
            if (i == 0) continue; // the simulator refuses it; nothing to count
            const chipsim::Instruction &prev = ins[i - 1];
            for (int64_t k = 1; k <= ins[i].count; ++k) {
                chipsim::Instruction copy = prev;
                for (auto &tile : copy.tiles) tile.base += k * tile.count * tile.stride;
                account(copy, prev.cycle + k * ins[i].distance);
            }
        }
    } catch (const chipsim::SimError &err) {
        throw Error(std::string("chip cost model: ") + err.what());
    }
    if (is_static && kernel_end > 0) e.static_end = double(kernel_end - kernel_begin);
    // The busiest resource of each kind.
    std::vector<double> by_kind(6, 0.0);
    for (size_t r = 0; r < resources.size(); ++r) {
        double &k = by_kind[size_t(resources[r].kind)];
        k = std::max(k, busy[r]);
        e.busiest = std::max(e.busiest, busy[r]);
    }
    for (const auto &[queue, cycles] : queue_busy) e.busiest_queue = std::max(e.busiest_queue, cycles);
    e.bound = model.problem_bound(problem).bound_cycles;
    e.cycles = std::max({is_static ? e.static_end : std::max(e.busiest, e.busiest_queue), e.bound, 1.0});
    e.features = {log_feature(e.cycles), log_feature(e.static_end), log_feature(e.busiest), log_feature(e.busiest_queue), log_feature(e.bound),
                  float(e.cycles / std::max(1.0, e.bound))};
    for (double k : by_kind) e.features.push_back(log_feature(k));
    for (double c : per_class) e.features.push_back(log_feature(c));
    for (const char *level : {"DRAM", "HOST"}) e.features.push_back(log_feature(bytes[level]));
    return e;
}

} // namespace tessera::internal::autotune
