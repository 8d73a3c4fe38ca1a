#pragma once
// A tensor of a model graph as the graph compiler sees it: the Func that computes it, its
// extents, and how messages name it. The ONNX importer lists one per node output
// (onnx::Model::values); the chip model compiler places kernel boundaries only at these.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/func.h"

namespace tessera {

/// One tensor of a model graph.
struct GraphValue {
    Func func;
    std::vector<int64_t> shape; ///< The Func's extents (a scalar is [1]).
    /// How errors and reports name it, e.g. "node 'fc1' (Gemm)".
    std::string label;
};

} // namespace tessera
