#pragma once
// The chip half of `make demo`: kernels compiled for tsp-mini, run on chipsim, verified.

namespace tessera::demo {

/// Runs an int8 matmul, a fused dense layer (matmul + bias + ReLU) and a ResNet conv layer
/// (implicit GEMM) on tsp-mini, checks them against the reference evaluator, prints the reports
/// and writes the Chrome trace of the matmul. Returns whether everything verified.
bool demo_chip();

} // namespace tessera::demo
