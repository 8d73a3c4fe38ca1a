#pragma once
// Ahead-of-time compilation: a pipeline becomes a static library and a pure C header, for
// programs that link kernels without Tessera, LLVM or a C++ runtime.
//
//   compile_to_library(Pipeline(C), "matmul", "out/", Target::host());
//   // out/libmatmul.a, out/matmul.h:
//   //   int matmul(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *C);
//   //   const char *matmul_error_message(int code);
//
// The library holds the kernel's object file and a copy of the host runtime (thread pool,
// allocation; plain C on pthreads); link it with -lpthread -lm. The header documents every
// argument (name, dtype, shape) and embeds buffer_abi.h.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/compiled_kernel.h"
#include "tessera/func.h"
#include "tessera/target.h"

namespace tessera {

/// What compile_to_library wrote.
struct LibraryFiles {
    std::string library; ///< <dir>/lib<name>.a
    std::string header;  ///< <dir>/<name>.h
    /// Which schedule was compiled: "the pipeline's schedule", or the tuning database's record
    /// that replaced it for this compile (fixed shapes only: tuned_schedule.h).
    std::string schedule = "the pipeline's schedule";
    /// Chip targets: <dir>/<name>.tchip, the artifact the library embeds (chip_artifact.h);
    /// its manifest is beside it as <name>.manifest.json. Empty for the host.
    std::string artifact;
    /// Chip targets: the tuning record's ID when one replaced the schedule, else -1.
    int64_t tuning_record_id = -1;
    /// Chip targets: the hash of the target's description (ChipArtifact::target_hash).
    std::string target_hash;
};

/// Lowers `p` with its schedule and writes lib<name>.a and <name>.h into `dir` (created if
/// missing). The kernel function is `name` (a C identifier). Output extents are taken from the
/// output buffers at call time, so one library serves every size the algorithm allows.
/// `target` must be Target::host() (the code is for this machine's CPU unless options.cpu /
/// options.features say otherwise). Throws tessera::Error naming the file on I/O failure.
LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir,
                                const Target &target = Target::host(), const CpuOptions &options = {});

/// As above for outputs of fixed shapes: extents become constants (faster code), and the
/// kernel rejects other shapes. With a tuning database (tuned_schedule.h) the best record for
/// the workload replaces the pipeline's schedule for this compile; `schedule` says which.
/// A chip `target` (tsp-mini, npu-edge, a JSON path) builds a chip library: the same C
/// signature and error codes, the kernel running on chipsim through libtessera_chiprt (link
/// -ltessera_chiprt), plus `const tessera_chip_report_t *<name>_last_report(void)`.
LibraryFiles compile_to_library(const Pipeline &p, const std::string &name, const std::string &dir,
                                const std::vector<std::vector<int64_t>> &output_shapes,
                                const Target &target = Target::host(), const CpuOptions &options = {});

/// A whole model as a host library with one entry point, `int <name>(inputs..., outputs...)`:
/// `model`'s pipeline lowered for outputs of `output_shapes` (the kernel <name>_graph, every
/// Input an argument), its `constants` (weights, biases: Inputs bound on every run) embedded in
/// the library, and the entry point taking `inputs` in order, then the outputs in the
/// pipeline's order; <name>_argv and <name>_error_message as for any kernel library. Throws
/// tessera::Error naming an Input that is neither among `inputs` nor `constants`, or the file on
/// I/O failure.
LibraryFiles compile_model_to_library(const Pipeline &model, const std::vector<Input> &inputs, const std::vector<Binding> &constants,
                                      const std::string &name, const std::string &dir,
                                      const std::vector<std::vector<int64_t>> &output_shapes, const CpuOptions &options = {});

/// As above for a kernel source (a hand-made or lowered loop nest).
LibraryFiles compile_to_library(const KernelSource &source, const std::string &dir, const CpuOptions &options = {});

/// Writes <dir>/lib<function>.a and <dir>/<function>.h holding `const char *<function>(void)`,
/// which returns `text` (a library's provenance JSON, say). `function` is a C identifier.
LibraryFiles write_string_library(const std::string &function, const std::string &text, const std::string &dir,
                                  const CpuOptions &options = {});

/// The C header text compile_to_library writes for `source`.
std::string c_header(const KernelSource &source);

struct ChipArtifact;
/// The C header text of a chip library (chip_artifact.h).
std::string c_header(const ChipArtifact &artifact);

} // namespace tessera
