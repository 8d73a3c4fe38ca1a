#pragma once
// Shape-dispatching kernel libraries: one C entry point serves a range of shapes by choosing,
// at each call, one of several kernels compiled for fixed shapes (the "buckets").
//
//   int mm(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *C);
//   const char *mm_error_message(int code);
//   const char *mm_dispatch(const int64_t *values); // the kernel a shape goes to, or NULL
//
// The entry point reads the dispatched parameters (M, say) from the buffers' extents, checks
// that every buffer agrees and that each value lies in its range (else TESSERA_ERROR_SHAPE
// with a message naming the parameter and the range), and calls the first kernel of the
// table whose bucket covers the call (every value <= the bucket's). When the bucket is larger
// than the call it PADS: the inputs it enlarges are copied with zeros into buffers of the
// bucket's shape (per-thread scratch buffers, kept and grown as needed), the kernel runs on
// those, and the outputs' corner is copied back (so a parameter may be
// dispatched only where zero padding leaves the visible results unchanged; gen-lib checks
// that with the reference evaluator). The same on the host and on chips (the bucket kernels
// are ordinary host or chip libraries; chip ones also get <name>_last_report()).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/aot.h"
#include "tessera/type.h"

namespace tessera {

/// A parameter the library dispatches on, and the values it serves (both ends included).
struct DispatchParam {
    std::string name;
    int64_t lo = 1, hi = 1;
};

/// One argument of the entry point: per dimension, the index of the DispatchParam that is its
/// extent, or -1 and the fixed extent.
struct DispatchArgument {
    std::string name;
    bool is_output = false;
    Type type;
    std::vector<int> param;
    std::vector<int64_t> extent;
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
/// covers, more than 8 arguments, dimensions or parameters) or on I/O failure.
LibraryFiles write_dispatch_library(const DispatchTable &table, const std::string &dir, const CpuOptions &options = {});

/// The C header text of a dispatch library.
std::string dispatch_c_header(const DispatchTable &table);

} // namespace tessera
