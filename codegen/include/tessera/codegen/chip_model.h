#pragma once
// Whole models on a chip (issue 16): the graph compiler partitions a model's Funcs into kernels
// the chip backend accepts — each a fused group: a matmul or conv with the element-wise Funcs
// after it, or a chain of vector Funcs — and runs them in sequence on chipsim, each kernel's
// result kept in a host-side buffer that later kernels read as an Input.
//
//   onnx::Model m = onnx::import("mlp.onnx");
//   ChipModelProgram p = compile_model_for_chip(m.pipeline, m.values, Target::named("tsp-mini"));
//   ChipModelResult r = run_model_on_chip(p, m.bindings({{"x", x}}));
//   r.outputs[0]; r.kernels[0].report.cycles; r.cycles;
//
// Kernel boundaries fall only at graph values (node outputs). A value becomes part of its
// producer's kernel when that producer's kernel is read by nothing else, the chip backend
// compiles the merged kernel, and the merged kernel's cycles end to end (host I/O included) are
// no more than those of the kernels it replaces; a value the chip backend refuses even alone is a tessera::Error
// naming it with the backend's reason — never a silent run on the host.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/codegen/chip_backend.h"
#include "tessera/graph_value.h"

namespace tessera {

/// One kernel of a compiled model.
struct ChipModelKernel {
    std::string head;                ///< The Func the kernel computes (a graph value).
    std::string label;               ///< The head value's label ("node 'fc1' (Gemm)").
    std::vector<std::string> fused;  ///< Labels of every graph value computed inside, producers first.
    std::vector<Input> reads;        ///< Earlier kernels' results it reads, each an Input named by its head.
    std::vector<int64_t> shape;
    Pipeline pipeline;               ///< The kernel's algorithm (earlier kernels' results as Inputs).
    /// The tuning record whose schedule the pipeline took ("tuned record #12 (...)"), "" when
    /// it kept its library schedule.
    std::string schedule_source;
    ChipProgram program;
};

/// One chip program of a compiled model: one kernel, or several kernels linked, where each
/// intermediate value one of them writes and a later one reads in the same chip layout stays on
/// the chip, never crossing the host link: in DRAM as a .buffer (chips with DRAM,
/// link_chip_model), or in a region of on-chip memory (tsp-mini, which has none: the whole
/// program statically scheduled as one, see codegen/model/mem_resident_link.h).
struct ChipModelSegment {
    std::vector<size_t> kernels;      ///< Indices into ChipModelProgram::kernels, in run order.
    ChipProgram program;              ///< Its outputs: the values a later program or the model reads.
    std::vector<std::string> buffers; ///< The values that stay on chip (DRAM or memory) between its kernels.
    /// On a chip without DRAM, where each of `buffers` lives: the first bank-local row of its
    /// region and the rows it takes in every bank of the data memory (a value computed from
    /// one it replaces shares that one's rows).
    struct Region {
        int64_t first_row = 0, rows = 0;
    };
    std::map<std::string, Region> regions;
};

/// A model compiled for a chip: kernels in the order they run, and the programs that run them.
struct ChipModelProgram {
    std::string target;               ///< The chip target's name.
    std::vector<ChipModelKernel> kernels;
    std::vector<ChipModelSegment> programs; ///< In run order; every kernel in exactly one.
    std::vector<std::string> outputs; ///< The kernel head of each pipeline output, in order.
};

/// One kernel's run. A kernel alone in its program has its program's report; a kernel of a
/// linked program has its span there: cycles from its first instruction's start to its last
/// one's end, no host I/O of its own (the program's is in ChipProgramRun), its MACs and its
/// own problem bound.
struct ChipKernelRun {
    std::string head, label;
    chipsim::Report report;
    size_t program = 0;           ///< Index into ChipModelResult::programs.
    /// Its span within its program's run, host I/O included, from the program's start: a
    /// kernel alone [0, total_cycles]; a linked one [host_link_in + first, host_link_in + last].
    int64_t begin_cycle = 0, end_cycle = 0;
};

/// One chip program's run.
struct ChipProgramRun {
    std::vector<size_t> kernels; ///< The kernels it ran.
    chipsim::Report report;
    std::string trace_json;      ///< Its Chrome trace when ChipRunOptions::trace.
};

/// The outcome of running a model on a chip.
struct ChipModelResult {
    std::vector<Buffer<>> outputs;      ///< One per pipeline output.
    std::vector<ChipKernelRun> kernels; ///< In the order they ran.
    std::vector<ChipProgramRun> programs; ///< In the order they ran.
    int64_t cycles = 0;                 ///< Sum of the programs' cycles (host I/O excluded).
    int64_t host_io_cycles = 0;         ///< Sum of the programs' host I/O cycles.
    double problem_bound_cycles = 0;    ///< Sum of the kernels' problem bounds.
};

/// How compile_model_for_chip partitions a model.
struct ChipModelOptions {
    /// false: every graph value is a kernel of its own (each operator compiled one by one, what
    /// the fusion benchmark compares the fused model with).
    bool fuse = true;
    /// Link kernels into as few programs as their intermediates' chip layouts allow, the
    /// intermediates kept in DRAM (link_chip_model) or, on a chip without DRAM, in on-chip
    /// memory where they fit and that is faster. false: every kernel a program of its own, each
    /// result back on the host — the one-by-one side of the fusion benchmark.
    bool link = true;
};

/// Partitions `model` (its outputs must be among `values`) into chip kernels for `target` and
/// compiles each. Throws tessera::Error naming the graph value the chip cannot compute.
ChipModelProgram compile_model_for_chip(const Pipeline &model, const std::vector<GraphValue> &values, const Target &target,
                                        const ChipModelOptions &options = {});

/// The programs that run `kernels` (in run order) on `target`: on a chip with DRAM, consecutive
/// kernels share a program while every intermediate one writes and a later one of the same
/// program reads has the same bytes in both kernels' chip layouts (same dtype, no padding, each
/// element at the same place); a read in another layout starts a new program, so that value
/// crosses the host link, where the layout changes. Between linked kernels a barrier (two
/// semaphores above those the kernels use; a kernel that would leave the target too few starts a
/// new program) lets the next kernel start once every queue of the one before has finished. On
/// a chip without DRAM every kernel is a program of its own here (compile_model_for_chip links those with link_in_mem). `outputs` are the values the caller
/// takes back (the model's outputs), which leave their program as .output tensors like any value
/// a later program reads.
std::vector<ChipModelSegment> link_chip_model(const std::vector<ChipModelKernel> &kernels, const std::vector<std::string> &outputs);

/// Runs the programs in order on chipsim; `bindings` bind the model's Inputs.
ChipModelResult run_model_on_chip(const ChipModelProgram &program, const Bindings &bindings, const ChipRunOptions &options = {});

/// What write_model_artifacts wrote.
struct ModelArtifactFiles {
    std::string manifest;               ///< <dir>/<name>.model.json
    std::string header;                 ///< <dir>/<name>.h
    std::vector<std::string> artifacts; ///< <dir>/<name>_p<i>.tchip, one per program, in run order
    std::vector<std::string> constants; ///< <dir>/<name>.constants/<Input>.bin
};

/// The model's side of its interface, for write_model_artifacts: its inputs (the model's names
/// and the Inputs they are read through), its output names (one per pipeline output) and its
/// constants (Inputs bound on every run: weights, biases).
struct ModelInterface {
    std::vector<std::string> input_names;
    std::vector<Input> inputs;
    std::vector<std::string> output_names;
    std::vector<Binding> constants;
};

/// Writes a model compiled for a chip as files a C program runs with libtessera_chiprt: each
/// program (ChipModelProgram::programs: one kernel, or kernels linked on a DRAM chip) as a chip
/// artifact (chip_artifact.h: <name>_p<i>.tchip and its manifest), each constant as raw dense
/// bytes, <name>.model.json (under "kernels", the programs in run order: label, fused values,
/// kernel count, the values kept in DRAM ("in_dram"), each argument in the artifact's order —
/// inputs, then outputs: "direction" in or out — with its role — a model input, a constant and
/// its file, an intermediate tensor an earlier program produced, a model output — and the
/// intermediate tensors), and a C header listing the same. `target` is the chip `program` was compiled for. Throws
/// tessera::Error naming the file on I/O failure.
ModelArtifactFiles write_model_artifacts(const ChipModelProgram &program, const ModelInterface &model, const Target &target,
                                         const std::string &name, const std::string &dir);

/// The Chrome trace (chrome://tracing, Perfetto) of a whole model's run made with
/// ChipRunOptions::trace: each kernel's instructions (chipsim's trace of its program) placed one
/// after another on one time axis, each kernel offset by the total cycles (host I/O included) of
/// those before it, each box named with its kernel; a "kernels" track with one box per kernel
/// (its label, the values fused into it), and on chips with DRAM a "host link" track with the
/// transfers before and after each kernel. The span is result.cycles + result.host_io_cycles;
/// every event's args carry begin_cycle and end_cycle on that axis.
std::string chrome_trace_json(const ChipModelProgram &program, const ChipModelResult &result);

/// One fusion group of a model run on the host (profile_model_on_host).
struct HostGroupRun {
    std::string head, label;
    std::vector<std::string> fused; ///< Labels of every graph value computed in the group, producers first.
    double run_ms = 0;              ///< Its measured run time.
};

/// A fusion group of a model: a graph value (its head) and the values computed with it.
struct ModelFusionGroup {
    std::string head;                 ///< the head's Func name
    std::vector<std::string> members; ///< Func names of the values inside, producers first, the head last
};

/// A model's graph values grouped as the fusion schedule fuses them: a value joins the groups of
/// the producers only it reads as long as the merged group holds at most one value with a
/// reduction (a bias, an activation, a residual add joins its matmul or conv; an element-wise
/// chain is one group; two matmuls are two). Groups in the order they compute.
std::vector<ModelFusionGroup> model_fusion_groups(const Pipeline &model, const std::vector<GraphValue> &values);

/// A model run on the host group by group, each group JIT-compiled on its own.
struct HostModelProfile {
    std::vector<Buffer<>> outputs;
    std::vector<HostGroupRun> groups; ///< In the order they ran.
};

/// Runs `model` on the host as its fusion groups (model_fusion_groups), each compiled for the
/// host with the graph compiler's host schedule (host_schedules::model) and timed on its own, in
/// order. For the trace of a host run.
HostModelProfile profile_model_on_host(const Pipeline &model, const std::vector<GraphValue> &values, const Bindings &bindings);

/// The Chrome trace of a host profile: one box per fusion group, one after another, each as
/// long as its measured time.
std::string chrome_trace_json(const HostModelProfile &profile);

} // namespace tessera
