#pragma once
// The Z3 model of what a chip allows a loop-nest candidate (chip_loop_nest_space.h): a block of
// the output's rows run in the VXM's lanes is whole lane chunks (the loop-nest compiler indexes
// a lane dimension only at multiples of the lanes, and refuses a block that starts mid-chunk).
// The lanes are the chipsim target's (vector bytes over the element's bytes). Private to
// tessera_autotune: no Z3 header here.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tessera/chipsim/target.h"

namespace tessera::internal::autotune {

class ChipLoopNestConstraints {
public:
    /// For an output of `element_bytes` per element on `target`.
    ChipLoopNestConstraints(const chipsim::Target &target, int element_bytes);
    ~ChipLoopNestConstraints();
    ChipLoopNestConstraints(const ChipLoopNestConstraints &) = delete;
    ChipLoopNestConstraints &operator=(const ChipLoopNestConstraints &) = delete;

    /// Empty when a row block of `lane_row_block` rows in the lanes (0: none) satisfies every
    /// rule; otherwise the broken rules in words with their numbers.
    std::optional<std::string> why_infeasible(int64_t lane_row_block) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace tessera::internal::autotune
