#pragma once
// The chip's default vector rule, for stages whose schedule vectorizes no loop.
//
// A VXM instruction combines its operands lane by lane, and a value stored on chip keeps one
// of its dimensions in the lanes; so every read of an on-chip Func must find the reader's
// lanes in the dimension its writer put there. The rule: each computed Func keeps one
// dimension in the lanes, chosen so that every such read agrees — the outputs' innermost
// dimension first, then outwards — and each stage without a vectorized loop vectorizes the
// loop of that dimension whole (the chip compiler cuts it into chunks of lanes itself).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/func.h"
#include "tessera/schedule.h"
#include "tessera/target.h"

namespace tessera::internal::chip {

/// The lane dimension of every computed Func, and the schedule that runs them there.
struct VectorLanes {
    /// The pipeline's schedule plus a `vectorize` of its lane dimension for every stage of a
    /// computed Func that vectorizes no loop (none where that dimension has a single point).
    Schedule schedule;
    std::map<std::string, int> lane_dim;
};

/// Chooses the lanes (the rule above). Throws tessera::Error when no choice of lane dimensions
/// lets every on-chip read agree, naming the Func and the read.
VectorLanes choose_vector_lanes(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes);

} // namespace tessera::internal::chip
