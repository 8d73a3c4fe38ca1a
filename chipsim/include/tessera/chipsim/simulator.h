#pragma once
// Runs a program on a target: functionally (real values in every memory) and in time (every
// instruction placed on the timing model's resources).
//
// Static targets (tsp-mini): instructions start exactly at their @cycle. Any resource overlap,
// a read before the data lands, or a write over data not yet read is an error naming both
// instructions. Dynamic targets (npu-edge): four in-order queues (dma.load/mem.copy -> load,
// mxm.* -> exec, dma.store -> store, vxm/sxm -> vector; sync/nop name theirs); an instruction
// starts when its queue reached it, its semaphore waits are satisfied, the data it reads from
// earlier instructions of its own queue has landed (the hardware interlocks within a queue) and
// every resource is free (conflicts stall). Across queues only semaphores order instructions: a
// cross-queue read of data that has not landed is reported as a race. sync.signal fires when
// every earlier instruction of its queue has ended; each sync.wait consumes one signal.
#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/report.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// A host tensor's contents: dtype, shape (row-major) and raw little-endian bytes.
struct TensorData {
    DType dtype = DType::Int8;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

/// One box of the timeline: an instruction on a unit or a bank.
struct TraceEvent {
    std::string track;        ///< Resource name ("MXM0", "SPAD.b3", "DRAM").
    int32_t instruction = -1; ///< Index in the program.
    int64_t begin = 0, end = 0;
};

/// Where one instruction ran.
struct InstructionTiming {
    int32_t index = 0;        ///< Index in Program::instructions (a repeat's copies share it).
    int64_t ready = 0;        ///< Earliest start its queue/semaphores allowed (dynamic).
    int64_t start = 0, end = 0;
};

/// Options of a run.
struct SimOptions {
    bool functional = true;                 ///< Compute values (timing only when false).
    bool trace = false;                     ///< Record TraceEvents.
    std::map<std::string, TensorData> inputs; ///< By .input name.
};

/// The result of a run.
struct SimResult {
    Report report;
    std::map<std::string, TensorData> outputs; ///< By .output name (empty when !functional).
    std::vector<InstructionTiming> timings;    ///< In execution order.
    std::vector<TraceEvent> trace;
};

/// Checks that every instruction fits the target (ranges, dtypes, issue style) without running
/// it. Throws SimError naming the instruction index, its text and the reason.
void validate_program(const Program &program, const TimingModel &model);
/// Runs `program`. Throws SimError on anything the chip cannot do; never aborts.
SimResult simulate(const Program &program, const TimingModel &model, const SimOptions &options = {});
/// Assigns every instruction of a program for a static target the earliest cycle at which its
/// data is ready and its resources are free, in program order (an ASAP list schedule through the
/// timing model). An @cycle already on an instruction is a lower bound (a phase barrier, e.g.
/// "compute after the host loads"). Returns the program with @cycles set.
Program schedule_asap(const Program &program, const TimingModel &model);
/// The Chrome trace JSON (chrome://tracing, Perfetto) of a run: a track per unit and per bank.
std::string chrome_trace_json(const SimResult &result, const Program &program, const TimingModel &model);

} // namespace tessera::chipsim
