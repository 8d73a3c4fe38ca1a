#pragma once
// Cutting a kernel out of an algorithm: the graph compiler runs a model as several kernels, each
// reading the tensors earlier kernels produced as Inputs (host-side buffers between kernels).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/func.h"

namespace tessera::internal {

/// A kernel cut out of a larger algorithm.
struct CutSubgraph {
    /// A copy of the head Func whose definitions (and those of every Func it reaches without
    /// crossing a cut) read each cut Func through an Input instead.
    Func head;
    /// The Inputs standing for cut Funcs, by the cut Func's name (the Input has that name).
    std::map<std::string, Input> cut_inputs;
};

/// Copies `head` and every Func it reaches through calls, stopping at the Funcs named in `cuts`
/// (name -> the extents the cut tensor has), whose calls become calls to new Inputs of that
/// name, type and shape. The original Funcs are left unchanged; Inputs are shared. Throws
/// tessera::Error if `head` itself is a cut or a cut Func is undefined.
CutSubgraph cut_subgraph(const Func &head, const std::map<std::string, std::vector<int64_t>> &cuts);

/// A copy of the whole pipeline, its Funcs and Inputs with their schedules, that shares nothing
/// a schedule writes: scheduling and compiling the copy on another thread leaves the original
/// (and every other copy) alone.
Pipeline copy_pipeline(const Pipeline &pipeline);

} // namespace tessera::internal
