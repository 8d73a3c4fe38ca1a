#pragma once
// Library schedules for the host CPU: the hand schedules Tessera ships for the operator
// library's ops (tessera::ops), written with the ordinary scheduling directives. The CLI
// (`tessera run ... --target host`), the tests, the benchmarks and kernel libraries use them.
// Each takes the pipeline an op built (finding its Funcs by the op's documented names) and
// the problem's sizes, and records directives on it; none changes what is computed. Each is
// made for the vector width of `cpu` (the host by default; isa_features() names another ISA, so
// that its schedule can be lowered and compiled here with cpu_options_for()).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/codegen/host_features.h"
#include "tessera/func.h"
#include "tessera/ops/registry.h"

namespace tessera::host_schedules {

/// fp32 C = ops::matmul(A, B) (Func `name`, Vars i, j, RDom k) of an [M, K] by [K, N] product:
/// a register tile of 6 rows (8 with AVX-512) × 2 vectors of columns accumulated over a block
/// of k (the "micro-kernel": 12 or 16 vector accumulators that LLVM keeps in registers), k
/// blocked for L1, strips of up to 1024 columns, row tiles in parallel, and B (when it is an
/// Input read untransposed) packed per strip and k block into [columns / 2 vectors][k][2
/// vectors] panels with Input::stage, so the micro-kernel reads it contiguously.
void matmul(const Pipeline &p, int64_t M, int64_t N, int64_t K, const std::string &name = "matmul",
            const HostFeatures &cpu = host_features());

/// The Input that update `update` of `f` reads with `column` as its last coordinate (B(k, j)
/// in A(i, k) * B(k, j)): the operand worth packing into column panels. None when that operand
/// is a Func or read transposed.
std::optional<Input> input_read_by_column(const Func &f, const std::string &column, int update = 0);

/// conv2d (ops::conv2d, Func `name`, NCHW Vars n,c,y,x or NHWC n,y,x,c, RDom r = (ci, ky, kx))
/// producing [N, O, OH, OW] (NCHW) or [N, OH, OW, O] (NHWC): the padded input computed once,
/// a register tile of output channels × 2 rows × a vector of pixels (NCHW, parallel over
/// blocks of output channels) or of pixels × vectors of channels (NHWC, parallel over output
/// rows), the reduction inside it. Depthwise convolutions
/// (groups == channels) vectorize along the row instead.
void conv2d(const Pipeline &p, bool nhwc, int64_t out_channels, int64_t out_height, int64_t out_width, bool depthwise,
            const std::string &name = "conv2d", const HostFeatures &cpu = host_features());

/// Row-wise ops (softmax, layernorm, attention's pieces, element-wise chains): every Func
/// with an update is computed at the root with its outermost dimension in parallel and its
/// innermost vectorized when it has two or more dimensions; pure Funcs stay inlined.
void rowwise(const Pipeline &p, const HostFeatures &cpu = host_features());

/// A whole model's host schedule (the graph compiler's, for `tessera run-model` and `tessera
/// compile` on the host; any pipeline): the fusion schedule (tessera/fusion.h) decides what is
/// inlined, computed at its epilogue or materialised, then every Func that is computed gets
/// its innermost pure loop vectorized at the CPU's width (guarded, so extents below it are
/// fine) and, when it is computed at the root, its outermost pure loop in parallel — in each
/// update that writes its own point too (a matmul's or a conv's sum; a scan keeps its order).
void model(const Pipeline &p, const HostFeatures &cpu = host_features());

/// The library schedule of a registered op (ops::op_registry()): matmul's for matmul and gemm's
/// product, conv2d's for the convolutions, none for pure data movement (transpose, reshape,
/// concat, ...), the row-wise schedule for everything else.
void library_schedule(const ops::OpInstance &op, const HostFeatures &cpu = host_features());

/// The Func of the pipeline called `name`; throws tessera::Error listing the names if absent.
Func find_func(const Pipeline &p, const std::string &name);

} // namespace tessera::host_schedules
