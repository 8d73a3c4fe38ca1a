#pragma once
// Building the kernels of a generated library, as `tessera gen-lib` and tessera_add_library do:
// each compiled with compile_to_library under the tuning database's best record for its
// workload and target (else the schedule the pipeline has: its library schedule), then
// measured — a chip kernel's exact cycles on chipsim, a host kernel's median time — and
// described for the library's provenance. A dispatching library's buckets include the shapes
// the database tuned, and are tried fastest first on chips.
//
//     LibraryBuildOptions o{.db = &db};
//     BuiltKernel k = build_library_kernel(p, {{64, 64}}, "mm", "out/", Target::named("tsp-mini"), o);
//     // k.cycles, k.tuned, k.provenance (a JSON object)
//     write_provenance(library_provenance("mm", target, {k}), "mm_provenance", "mm.provenance.json", "out/");
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/aot.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/func.h"
#include "tessera/target.h"
#include "tessera/tuning_db.h"

namespace tessera {

struct LibraryBuildOptions {
    /// The tuning database whose best record replaces a kernel's schedule; null: none.
    const TuningDatabase *db = nullptr;
    /// Host kernels: timed runs after one warm-up; the median is kept.
    int repeats = 7;
    CpuOptions cpu;
    /// The inputs kernels are measured on (an op's own, e.g. positive for sqrt); empty: random.
    Bindings inputs;
};

/// One kernel of a library, built and measured.
struct BuiltKernel {
    std::string name;
    LibraryFiles files;
    bool tuned = false;
    int64_t tuning_record_id = -1;  ///< the record applied, or -1
    std::string schedule_source;    ///< "tuned record #12 (1834 cycles)" or "library schedule"
    std::vector<int64_t> values;    ///< a dispatching library's bucket: its parameters' values
    int64_t cycles = -1;            ///< chips: cycles of the artifact on chipsim
    double time_ms = -1, noise = 0; ///< host: median time of `repeats` runs, (slowest - fastest) / median
    int repeats = 0;                ///< host: the runs timed (0: not measured)
    /// Its provenance entry, a JSON object: name, target, target_hash, schedule_source, tuned,
    /// tuning_record_id (null when untuned), schedule (the one compiled), library, header;
    /// chips: artifact and cycles; host: cpu and, when the output shapes are fixed, time_ms,
    /// noise and repeats.
    std::string provenance;
};

/// Compiles `pipeline` into <dir>/lib<name>.a and <name>.h with compile_to_library — with the
/// database's best record for the workload on `target` when it has one (the pipeline's
/// schedule is then that record's) — and measures it on random inputs: a chip kernel's artifact
/// as the runtime loads it on chipsim, a host kernel JIT-compiled from the same schedule.
/// Not measured (no time_ms in its provenance): a host library of empty `output_shapes`
/// (serving any shape), with scalar Params or symbolic Input shapes, or built for another CPU
/// than this one. Throws tessera::Error naming the kernel and target when compiling or
/// measuring fails.
BuiltKernel build_library_kernel(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const std::string &name, const std::string &dir, const Target &target,
                                 const LibraryBuildOptions &options = {});

/// The values of the dispatched parameters (table.params) at which `db` holds a record for
/// `at`'s workload on `target`: read off each record's stored shapes through the table's maps,
/// kept when in range and when the workload there has the record's key.
std::vector<std::vector<int64_t>> tuned_dispatch_points(const PipelineAtValues &at, const DispatchTable &table, const Target &target,
                                                        const TuningDatabase &db);

/// A dispatching library built and measured.
struct BuiltDispatchLibrary {
    LibraryFiles files;               ///< the entry point's lib<name>.a and <name>.h
    DispatchTable table;              ///< its buckets in the order a call tries them
    std::vector<BuiltKernel> kernels; ///< one per bucket, in the same order
};

/// compile_to_library over ranges, with the database: one kernel per bucket — every
/// combination of the ranges' buckets (bucket_grid) and every in-range shape the database
/// tuned (tuned_dispatch_points) — each built by build_library_kernel into
/// <dir>/<name>.kernels/ as <name>_<param><value>..., and the entry point <dir>/lib<name>.a.
/// A call goes to the first covering bucket: on chips the fewest cycles first (exact, so a
/// tuned larger bucket may beat an untuned smaller one), on the host the smallest first
/// (neighbouring sizes' times are within the noise); ties: tuned first, then smaller.
/// `description` heads the header ("matmul N=64 K=48 M=1..64"). Throws tessera::Error as
/// plan_dispatch_table and build_library_kernel do.
BuiltDispatchLibrary build_dispatch_library(const PipelineAtValues &at, const std::vector<ShapeRange> &ranges, const std::string &name,
                                            const std::string &dir, const Target &target, const std::string &description,
                                            const LibraryBuildOptions &options = {});

/// What a built kernel measured, for a header or a log: "1834 cycles" or "0.0123 ms (median of
/// 7, noise 4%)"; "not measured" for a library serving any shape.
std::string measured_text(const BuiltKernel &kernel);

/// The provenance of a library of `kernels` for `target` (a JSON object's text): library,
/// target, target_hash, compiler_version, kernels (their provenance entries) and, for each
/// dispatching library in `dispatch`, its entry point's name, ranges and buckets in order.
std::string library_provenance(const std::string &library, const Target &target, const std::vector<BuiltKernel> &kernels,
                               const std::vector<BuiltDispatchLibrary> &dispatch = {});

/// Writes `provenance_json` as <dir>/<file_name>, and as lib<function>.a with <function>.h
/// declaring `const char *<function>(void)`, which returns it. Throws tessera::Error naming the
/// file on I/O failure.
void write_provenance(const std::string &provenance_json, const std::string &function, const std::string &file_name,
                      const std::string &dir, const CpuOptions &options = {});

} // namespace tessera
