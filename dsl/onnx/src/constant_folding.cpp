// Constant folding: a node whose inputs are all known at import is computed there, once, by the
// reference evaluator, so shape arithmetic in exported models (Shape → Gather → Concat →
// Reshape) gives the constants the converters need, and no Func of it reaches the pipeline.
#include "constant_folding.h"

#include "onnx_internal.h"

namespace tessera::onnx::internal {

namespace {

/// Above this many elements a constant subgraph is left to run with the model (the evaluator
/// is slow, and large constants are weights, not shapes).
constexpr int64_t kMaxFoldedElements = int64_t(1) << 16;

} // namespace

void fold_constants(const std::vector<std::optional<Value>> &inputs, std::vector<Value> &outputs, const Bindings &constants) {
    bool any_input = false;
    for (const auto &in : inputs) {
        if (!in) continue;
        if (!in->constant) return;
        any_input = true;
    }
    if (!any_input) return; // a Constant node is already one
    for (Value &out : outputs) {
        if (out.constant || !out.tensor.defined() || out.tensor.is_input()) continue;
        const std::vector<int64_t> shape = out.tensor.concrete_shape();
        if (product(shape) > kMaxFoldedElements) continue;
        out.constant = out.tensor.realize(constants, Target::reference());
        out.tensor = ops::Tensor(); // the importer binds it as a constant Input
    }
}

} // namespace tessera::onnx::internal
