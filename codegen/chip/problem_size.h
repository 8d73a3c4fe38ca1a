#pragma once
// The size of the problem a pipeline poses, from its algorithm alone (no schedule): what
// chipsim's problem bound needs (TimingModel::problem_bound).
#include <cstdint>
#include <vector>

#include "tessera/chipsim/timing_model.h"
#include "tessera/func.h"

namespace tessera::internal::chip {

/// The algorithm's multiply-accumulates — every product of two reads the matrix unit would
/// take (loop_nest_ir.h: matmul_products), over each update's reduction domain and its Func's
/// region — and the bytes of its inputs and of outputs of these shapes.
chipsim::ProblemSize problem_size(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes);

} // namespace tessera::internal::chip
