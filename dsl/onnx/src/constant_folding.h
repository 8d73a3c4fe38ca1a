#pragma once
// Constant folding at import (constant_folding.cpp). Private to tessera_onnx.
#include <optional>
#include <vector>

#include "node_context.h"

namespace tessera::onnx::internal {

/// When every given input of a node is a constant, computes each of its small outputs with the
/// reference evaluator (the constants bound by `constants`) and makes it a constant Value.
void fold_constants(const std::vector<std::optional<Value>> &inputs, std::vector<Value> &outputs, const Bindings &constants);

} // namespace tessera::onnx::internal
