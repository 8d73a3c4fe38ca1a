#pragma once
// The loop-IR interpreter: executes a lowered statement on host buffers. It is the executable
// meaning of lowering (DESIGN.md §3), used to test every pass before a backend runs, and the
// realizer of Target::interpreter(). The statement is compiled once to a tree of closures with
// variables and buffers resolved to slots, so no name is looked up per element.
//
// Arithmetic follows the reference evaluator exactly (reference.h): integers wrap at their
// width and divide Euclidean (x / 0 == 0), fp32 is IEEE fp32, bf16 / fp16 round after every
// operation, intrinsics are computed in fp64 and rounded. Loads and stores are bounds-checked:
// an out-of-range access throws tessera::Error naming the buffer and index.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/lower.h"

namespace tessera {

/// Runs `m` with its inputs and outputs bound by name to buffers (outputs must have the
/// output's type and the shape of its region; inputs must match their Input's type and shape)
/// and its Params to values. Output region variables not made constant by lower() are bound to
/// min 0 and the output buffer's extents.
void run_lowered(const LoweredModule &m, const std::map<std::string, Buffer<>> &buffers,
                 const std::map<std::string, double> &params = {});

} // namespace tessera
