// The generators of the kernel library: each registers a scheduled pipeline by name.
#include <tessera/codegen/generator.h>

#include "kernel_pipelines.h"

using namespace kernel_library;

// Fixed output shapes: extents fold into the code, and other shapes are rejected at call time.
TESSERA_REGISTER_GENERATOR(matmul, [] { return tessera::GeneratedPipeline(matmul(), {{kM, kN}}); });
TESSERA_REGISTER_GENERATOR(conv2d, [] { return tessera::GeneratedPipeline(conv2d(), {{kBatch, kOut, kSize, kSize}}); });
// The matmul again for the chip tsp-mini: the same C signature, run on chipsim by libtessera_chiprt.
TESSERA_REGISTER_GENERATOR(matmul_chip, [] { return tessera::GeneratedPipeline(matmul_chip(), {{kM, kN}}); });
// And for npu-edge, with that chip's library schedule.
TESSERA_REGISTER_GENERATOR(matmul_npu, [] { return tessera::GeneratedPipeline(matmul_chip("npu-edge"), {{kM, kN}}); });
TESSERA_REGISTER_GENERATOR(softmax, [] { return tessera::GeneratedPipeline(softmax(), {{kRows, kCols}}); });
// One entry point for every M in 1..kM: kernels compiled at the buckets' M (CMakeLists.txt picks
// them with BUCKETS), a call going to the smallest covering one with its rows zero-padded.
TESSERA_REGISTER_GENERATOR(matmul_rows, {tessera::ShapeRange{"M", 1, kM, {}}}, [](const std::vector<int64_t> &m) {
    return tessera::GeneratedPipeline(matmul_rows(m[0]), {{m[0], kN}});
});
