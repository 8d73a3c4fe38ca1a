#pragma once
// What a simulation reports (CHIP.md "What the simulator reports"): as a struct, as text and as
// JSON. Every figure is an integer count of cycles/bytes/MACs or a ratio of them, so the same
// program and inputs always give a byte-identical report.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// Busy time of one unit (an MXM plane, the VXM, a DMA engine, the DRAM bus, a stream direction).
struct UnitReport {
    std::string name;
    int64_t busy_cycles = 0;   ///< Lane-cycles held (a 16-slot VXM can exceed the kernel cycles).
    int lanes = 1;
    double utilization = 0.0;  ///< busy / (kernel cycles * lanes), 0..1.
};

/// What one stage of the schedule cost (the compiler labels each instruction with its stage).
struct StageReport {
    std::string name;
    int64_t instructions = 0;
    int64_t first_cycle = 0, last_cycle = 0;  ///< First start and last end of its instructions.
    int64_t macs = 0;
    std::map<std::string, int64_t> busy_cycles; ///< Per unit (UnitReport names); sums to the units' totals.
};

/// The figures of one run.
struct Report {
    std::string target;
    std::string program;                          ///< The program's file name, if any.
    int64_t instructions = 0;                     ///< Executed (after repeat expansion).
    int64_t cycles = 0;                           ///< Kernel cycles (host I/O excluded).
    int64_t host_io_cycles = 0;                   ///< Moving inputs in and outputs out.
    int64_t total_cycles = 0;                     ///< cycles + host_io_cycles.
    /// On chips with DRAM the host link fills DRAM with the inputs before the program runs and
    /// reads the outputs back after it, outside the program (host_io_cycles is their sum); on
    /// chips whose programs DMA from the host both are 0: those transfers are the program's own
    /// instructions, in its trace.
    int64_t host_link_in_cycles = 0, host_link_out_cycles = 0;
    int64_t macs = 0;
    double macs_per_cycle = 0.0;                  ///< Achieved: macs / cycles.
    double peak_macs_per_cycle = 0.0;             ///< For the dtype that did most MACs.
    std::string mac_dtype;                        ///< That dtype ("" when no MACs).
    double mxm_utilization = 0.0;                 ///< Sum of macs / peak(dtype), over cycles.
    std::map<std::string, int64_t> bytes;         ///< Per level: MEM/SPAD/ACC, STREAMS, DRAM, HOST.
    int64_t stall_cycles = 0;                     ///< Dynamic issue: cycles instructions waited.
    std::map<std::string, int64_t> stall_cycles_by_cause; ///< dependency, bank, unit, dma, stream, bandwidth, sync.
    std::map<std::string, int64_t> stall_cycles_by_bank;  ///< Bank resource -> cycles.
    int64_t bank_conflicts = 0;                   ///< Accesses that met a busy bank (or two operands on one bank).
    std::vector<UnitReport> units;                ///< Sorted by name.
    double roofline_cycles = 0.0;                 ///< Analytic lower bound from the timing model.
    std::string roofline_limiter;
    /// The problem bound (TimingModel::problem_bound), when the program's compiler gave the
    /// algorithm's size; 0 and "" otherwise (a hand-written program).
    double problem_bound_cycles = 0.0;
    std::string problem_bound_limiter;
    /// Per stage, in the program's stage order, when its instructions are labelled (compiled
    /// programs); empty for a program read from text or binary.
    std::vector<StageReport> stages;

    /// Human-readable text.
    std::string to_text() const;
    /// JSON with keys target, program, instructions, cycles, host_io_cycles, total_cycles, macs,
    /// macs_per_cycle, peak_macs_per_cycle, mac_dtype, mxm_utilization, bytes, stall_cycles,
    /// stall_cycles_by_cause, stall_cycles_by_bank, bank_conflicts, units, roofline, and
    /// problem_bound when known.
    std::string to_json() const;
};

} // namespace tessera::chipsim
