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
    ChipProgram program;
};

/// A model compiled for a chip: kernels in the order they run.
struct ChipModelProgram {
    std::string target;               ///< The chip target's name.
    std::vector<ChipModelKernel> kernels;
    std::vector<std::string> outputs; ///< The kernel head of each pipeline output, in order.
};

/// One kernel's run.
struct ChipKernelRun {
    std::string head, label;
    chipsim::Report report;
};

/// The outcome of running a model on a chip.
struct ChipModelResult {
    std::vector<Buffer<>> outputs;      ///< One per pipeline output.
    std::vector<ChipKernelRun> kernels; ///< In the order they ran.
    int64_t cycles = 0;                 ///< Sum of the kernels' cycles (host I/O excluded).
    int64_t host_io_cycles = 0;         ///< Sum of the kernels' host I/O cycles.
    double problem_bound_cycles = 0;    ///< Sum of the kernels' problem bounds.
};

/// Partitions `model` (its outputs must be among `values`) into chip kernels for `target` and
/// compiles each. Throws tessera::Error naming the graph value the chip cannot compute.
ChipModelProgram compile_model_for_chip(const Pipeline &model, const std::vector<GraphValue> &values, const Target &target);

/// Runs the kernels in order on chipsim; `bindings` bind the model's Inputs.
ChipModelResult run_model_on_chip(const ChipModelProgram &program, const Bindings &bindings, const ChipRunOptions &options = {});

} // namespace tessera
