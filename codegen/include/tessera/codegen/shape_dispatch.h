#pragma once
// Shape-dispatching kernel libraries: one C entry point serves a range of shapes by choosing,
// at each call, one of several kernels compiled for fixed shapes (the "buckets").
//
//   int mm(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *C);
//   const char *mm_error_message(int code);
//   const char *mm_dispatch(const int64_t *values); // the kernel a shape goes to, or NULL
//
// The entry point reads the dispatched parameters (M, say) from the buffers' extents, each an
// affine function scale * M + offset of one parameter (M itself, or H - 2 for the output of an
// unpadded 3x3 convolution, 2 * M for a concatenation), inverting the map (an extent that no
// integer value maps to is refused), checks that every buffer agrees and that each value lies
// in its range (else TESSERA_ERROR_SHAPE with a message naming the argument, the parameter and
// the range), and calls the first kernel of the
// table whose bucket covers the call (every value <= the bucket's). When the bucket is larger
// than the call it PADS: the inputs it enlarges are copied with zeros into buffers of the
// bucket's shape (per-thread scratch buffers, kept and grown as needed), the kernel runs on
// those, and the outputs' corner is copied back (so a parameter may be
// dispatched only where zero padding leaves the visible results unchanged; gen-lib checks
// that with the reference evaluator). The same on the host and on chips (the bucket kernels
// are ordinary host or chip libraries; chip ones also get <name>_last_report()).
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/codegen/aot.h"
#include "tessera/func.h"
#include "tessera/type.h"

namespace tessera {

/// A parameter the library dispatches on, and the values it serves (both ends included).
struct DispatchParam {
    std::string name;
    int64_t lo = 1, hi = 1;
};

/// One argument of the entry point: per dimension, the index of the DispatchParam its extent
/// follows (extent = scale * value + offset), or -1 and the fixed extent.
struct DispatchArgument {
    std::string name;
    bool is_output = false;
    Type type;
    std::vector<int> param;
    std::vector<int64_t> extent; ///< the fixed extent where param is -1 (ignored elsewhere)
    std::vector<int64_t> scale;  ///< per dimension following a parameter, >= 1; empty: all 1
    std::vector<int64_t> offset; ///< per dimension following a parameter; empty: all 0

    int64_t scale_of(size_t dim) const { return scale.empty() ? 1 : scale[dim]; }
    int64_t offset_of(size_t dim) const { return offset.empty() ? 0 : offset[dim]; }
    /// Dimension `dim`'s extent when the parameters have `values`.
    int64_t extent_at(size_t dim, const std::vector<int64_t> &values) const {
        return param[dim] < 0 ? extent[dim] : scale_of(dim) * values[size_t(param[dim])] + offset_of(dim);
    }
};

/// One specialised kernel: its library (built by compile_to_library) and its bucket.
struct DispatchBucket {
    std::string kernel;          ///< the C name of the kernel
    std::string library;         ///< its lib<kernel>.a
    std::vector<int64_t> values; ///< one per DispatchParam
    std::string note;            ///< for the header: the schedule, its cost
};

/// A whole dispatch library. `buckets` are in preference order: a call goes to the first that
/// covers it, so the generator puts the cheapest first.
struct DispatchTable {
    std::string name;
    std::string description; ///< for the header ("matmul N=64 K=48 dtype=int8")
    bool chip = false;       ///< the buckets are chip libraries (adds <name>_last_report)
    std::vector<DispatchParam> params;
    std::vector<DispatchArgument> arguments;
    std::vector<DispatchBucket> buckets;
};

/// Writes <dir>/lib<name>.a (the entry point, the dispatch runtime and every bucket's
/// library, merged) and <dir>/<name>.h (the entry point, its ranges, the table and the error
/// codes). Throws tessera::Error for an inconsistent table (no bucket, a range no bucket
/// covers, more than 8 arguments, dimensions or parameters, a scale below 1, an extent below 1
/// at the range's start) or on I/O failure.
LibraryFiles write_dispatch_library(const DispatchTable &table, const std::string &dir, const CpuOptions &options = {});

/// Dimension `dim` of `argument` in words: "64", "M", "H - 2", "2*M + 1".
std::string dispatch_extent_text(const DispatchTable &table, const DispatchArgument &argument, size_t dim);

/// The C header text of a dispatch library.
std::string dispatch_c_header(const DispatchTable &table);

// ---- Building a dispatch library from a pipeline ------------------------------------------

/// A parameter served as a range lo..hi, and its buckets (empty: dispatch_buckets(lo, hi)).
struct ShapeRange {
    std::string name;
    int64_t lo = 1, hi = 1;
    std::vector<int64_t> buckets;
};

/// "lo..hi" -> {lo, hi}; throws tessera::Error naming `where` unless 1 <= lo <= hi.
std::pair<int64_t, int64_t> parse_dispatch_range(const std::string &text, const std::string &where);
/// "b1,b2,..." -> the buckets; throws tessera::Error naming `where` for one not a positive integer.
std::vector<int64_t> parse_dispatch_buckets(const std::string &text, const std::string &where);

/// The buckets of lo..hi when none are listed: every power of two in it, and hi.
std::vector<int64_t> dispatch_buckets(int64_t lo, int64_t hi);

/// Every combination of the ranges' buckets (the first range varying fastest). Throws
/// tessera::Error for an empty or malformed range, or buckets outside 1.. that miss its end.
std::vector<std::vector<int64_t>> bucket_grid(const std::vector<ShapeRange> &ranges);

/// A pipeline at fixed values of the dispatched parameters, with its outputs' shapes. The
/// padding check runs the reference on `check_inputs` (empty: random values for every Input)
/// with the tolerance of `reduction_length`.
struct ShapedPipeline {
    Pipeline pipeline;
    std::vector<std::vector<int64_t>> output_shapes;
    Bindings check_inputs;
    int64_t reduction_length = 1;
};

/// Builds the pipeline at one value per range (in the ranges' order).
using PipelineAtValues = std::function<ShapedPipeline(const std::vector<int64_t> &values)>;

/// The table of a dispatch library without its buckets: the params, and the arguments (the
/// kernel's inputs then outputs) with the dimensions that follow each parameter and their
/// affine maps (scale * value + offset), found by lowering the pipeline with one parameter
/// changed at a time and verified at every bucket of bucket_grid(ranges); every extent must be
/// at least 1 at the ranges' start. Checks with the reference evaluator that zero padding leaves the visible results
/// unchanged. Throws tessera::Error naming `name` and the parameter when a parameter is no
/// buffer's extent, an extent changes with two parameters or is not scale * value + offset with
/// an integer scale >= 1 (a stride-2 pooling's (H - k) / 2 + 1), the kernel has scalar
/// parameters, or padding changes the results.
DispatchTable plan_dispatch_table(const std::string &name, const std::vector<ShapeRange> &ranges, const PipelineAtValues &at);

/// Checks that the kernel `shaped` (the pipeline at `values`) has the extents `table`'s maps
/// give there; throws tessera::Error naming `name`, the buffer and the parameter otherwise.
void verify_dispatch_extents(const std::string &name, const DispatchTable &table, const std::vector<int64_t> &values,
                             const ShapedPipeline &shaped);

/// compile_to_library over ranges: one fixed-shape library per bucket of bucket_grid (named
/// <name>_<param><value>..., in <dir>/<name>.kernels/, each tuned by the tuning database as the
/// fixed-shape compile_to_library is), tried smallest first, and the dispatching entry point
/// <dir>/lib<name>.a and <name>.h (write_dispatch_library). A chip `target` builds chip
/// kernels (and <name>_last_report). `schedule` of the result lists each bucket's schedule.
/// build_dispatch_library (tessera/library_build.h, what tessera_add_library and `tessera
/// gen-lib` use) also adds the shapes the database tuned as buckets, measures every kernel and
/// tries chip kernels fewest cycles first.
LibraryFiles compile_to_library(const PipelineAtValues &at, const std::vector<ShapeRange> &ranges, const std::string &name,
                                const std::string &dir, const Target &target = Target::host(), const CpuOptions &options = {});

} // namespace tessera
