#pragma once
// The graph compiler's fusion as schedule choices (issue 16): a model's element-wise chains
// fused into their producer or consumer with the DSL's own directives, so a fusion decision is
// a schedule the autotuner can change like any other.
#include "tessera/func.h"

namespace tessera {

/// Records fusion directives on every Func of `pipeline` but its outputs (replacing their
/// fusion directives, keeping loop directives):
/// - a pure Func read by one consumer Func: compute_inline (an element-wise chain becomes one
///   loop nest, no intermediate tensor);
/// - a pure Func read by several consumers, or read inside a consumer's reduction (the next
///   layer's matmul, which would recompute it at every step of its sum): compute_root
///   (computed once);
/// - a Func with updates (matmul, conv, a reduction) whose only consumer is pure and reads it
///   only at that consumer's own coordinates (bias, activation, residual add), directly or
///   through a chain of such inlined consumers: compute_at(the chain's computed end, its
///   outermost loop), so each slice of the product is finished by its epilogue while it is
///   hot; other Funcs with updates: compute_root.
/// Values are unchanged: only where and when each Func is computed changes.
void apply_fusion_schedule(const Pipeline &pipeline);

} // namespace tessera
