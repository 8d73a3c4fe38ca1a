#pragma once
// The analytic chip cost model: a compiled candidate's cycles estimated from chipsim's
// TimingModel alone (no latency, bank rule or peak of its own), without simulating it.
//  - On a statically issued chip (tsp-mini) the compiler has already placed every instruction
//    at its cycle with the timing model: the estimate is the kernel's span (first start to last
//    end, cycle + latency, host DMAs excluded as the simulator's report excludes them) over the
//    program with its `repeat`s expanded. Only the shared link's bursts, which the
//    simulator serves gap by gap, can make the real run longer.
//  - On a dynamically issued chip (npu-edge) the queues overlap instructions as their
//    semaphores allow: the estimate is the busiest resource — the sum of every hold's
//    lane-cycles on it over its lanes — or the busiest in-order queue — the issue cycles of its
//    instructions, a DMA's whole latency — whichever is longer; the run can only exceed it (by
//    waits on semaphores, on latency and on the shared link).
// Either way it is never below the problem bound. A ranking device: the learned model,
// trained on this run's measured ratio of measured to estimated cycles, corrects what it
// misses (chip_tuner.cpp).
#include <vector>

#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::autotune {

struct ChipEstimate {
    double cycles = 0;        ///< the estimate
    double static_end = 0;    ///< static chips: the kernel span of the compiled schedule (0 on dynamic chips)
    double busiest = 0;       ///< cycles of the busiest resource
    double busiest_queue = 0; ///< dynamic chips: cycles of the busiest in-order issue queue
    double bound = 0;         ///< the problem bound
    /// The learned model's features: logarithms of the above, of each resource kind's busiest
    /// resource, of instruction counts per class and of bytes per memory level. A fixed length:
    /// kChipFeatures.
    std::vector<float> features;
};

constexpr int kChipFeatures = 21;

/// Throws tessera::Error when the timing model refuses an instruction (the simulator would too).
ChipEstimate estimate_chip_cycles(const chipsim::Program &program, const chipsim::TimingModel &model,
                                  const chipsim::ProblemSize &problem);

} // namespace tessera::internal::autotune
