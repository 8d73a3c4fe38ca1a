// `tessera run-model MODEL.onnx --target host [--input NAME=FILE.npy|.pb ...] [--dim N=V ...]
// [--output-dir DIR] [--trace FILE] [--json]`: imports the model, compiles it for the host (JIT), runs it, writes
// each output as DIR/<output>.npy, checks every output against the reference evaluator on the
// same inputs (fp32 within 1e-4 · max(1, max|y|), integers exactly) and reports the times.
// On a chip the graph compiler partitions the model into fused kernels (chip_model.h), runs them
// in sequence on chipsim and reports cycles per kernel and in all (floats within 3e-2 · max(1, max|y|)).
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <tessera/codegen/chip_model.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/codegen/jit.h>
#include <tessera/codegen/runtime.h>

#include "cli_common.h"
#include "cmd_import_common.h"

namespace tessera::cli {

namespace {

struct RunModelOptions {
    std::string model, target = "host", output_dir, trace;
    std::vector<std::string> inputs, dims;
    uint64_t seed = 1;
    bool json = false;
};

/// A file name for an output: its ONNX name with every character outside [A-Za-z0-9._-] as '_'.
std::string file_name_for(const std::string &name) {
    std::string s = name.empty() ? "output" : name;
    for (char &c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    if (s == "." || s == "..") s = "_";
    return s;
}

Buffer<> load_input(const std::string &name, const std::string &path) {
    const bool npy = path.size() > 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
    const bool pb = path.size() > 3 && path.compare(path.size() - 3, 3, ".pb") == 0;
    if (!npy && !pb) throw UsageError("--input " + name + "=" + path + ": the file must end in .npy or .pb");
    return npy ? Buffer<>::load_npy(path) : onnx::read_tensor_file(path);
}

/// Tolerances against the reference, times max(1, max|y|): fp32 on the host 1e-4; on the chips,
/// whose MXM multiplies in bf16 (8 significant bits, one rounding of each operand, fp32 sums),
/// 3e-2 — the bound issue 16 sets, tight enough that a wrong element or a dropped kernel fails.
constexpr double kHostRelativeTolerance = 1e-4, kChipRelativeTolerance = 3e-2;

/// The tolerance against the reference: floats within `relative` · max(1, max|y|)
/// (looser per type for fp16/bf16 as Tolerance::for_type says), integers exactly.
Comparison check_against_reference(const Buffer<> &actual, const Buffer<> &expected, double relative) {
    if (!expected.type().is_float()) return compare(actual, expected);
    double max_abs = 1;
    const Buffer<> flat = expected.copy();
    const int64_t n = flat.number_of_elements();
    std::vector<int64_t> c(flat.shape().size(), 0);
    for (int64_t i = 0; i < n; ++i) {
        const double v = flat.get_as_double(c);
        if (std::isfinite(v)) max_abs = std::max(max_abs, std::fabs(v));
        for (size_t d = c.size(); d-- > 0;) {
            if (++c[d] < flat.shape()[d]) break;
            c[d] = 0;
        }
    }
    Tolerance tol = Tolerance::for_type(expected.type());
    tol.atol = std::max(tol.atol, relative * max_abs);
    tol.rtol = 0;
    return compare(actual, expected, tol);
}

int run(const RunModelOptions &o) {
    const Target target = Target::named(o.target);
    const bool chip = model_target_is_chip(target, o.target, "run-model");
    onnx::ImportOptions io;
    io.dims = parse_dims(o.dims);
    const onnx::Model model = onnx::import(o.model, io);

    std::map<std::string, Buffer<>> values;
    for (const std::string &w : o.inputs) {
        const size_t eq = w.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == w.size())
            throw UsageError("--input '" + w + "' is not NAME=FILE.npy or NAME=FILE.pb");
        const std::string name = w.substr(0, eq);
        if (values.count(name)) throw UsageError("--input " + name + " is given twice");
        values[name] = load_input(name, w.substr(eq + 1));
    }
    // Inputs not given are drawn at random (Buffer::fill_random), one seed each.
    std::vector<std::string> random_inputs;
    uint64_t seed = o.seed;
    for (const onnx::ModelTensor &in : model.inputs) {
        if (values.count(in.name)) continue;
        Buffer<> b(in.type, in.shape);
        b.fill_random(seed++);
        values[in.name] = b;
        random_inputs.push_back(in.name);
    }
    const Bindings bindings = model.bindings(values);
    const std::vector<std::vector<int64_t>> shapes = model.realize_shapes();

    std::vector<Buffer<>> outputs;
    double compile_ms = 0, run_ms = 0;
    ChipModelResult chip_run;
    ChipModelProgram chip_program;
    if (chip) {
        const auto start = std::chrono::steady_clock::now();
        chip_program = compile_model_for_chip(model.pipeline, model.values, target);
        compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        ChipRunOptions run_options;
        run_options.trace = !o.trace.empty();
        chip_run = run_model_on_chip(chip_program, bindings, run_options);
        outputs = chip_run.outputs; // in the realize shapes, as the reference's (a scalar is [1])
    } else {
        // The graph compiler's host schedule (fusion, vectors, threads) for this compile only: the
        // trace's per-group profile below cuts the graph at its own boundaries.
        const Schedule as_imported = model.pipeline.schedule();
        host_schedules::model(model.pipeline);
        CompiledKernel kernel = compile_jit(model.pipeline, shapes, target);
        model.pipeline.set_schedule(as_imported);
        compile_ms = kernel.compile_ms();
        const auto start = std::chrono::steady_clock::now();
        outputs = run_pipeline_kernel(kernel, shapes, bindings);
        run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
    // The host's trace comes from a second run, fusion group by fusion group, each timed.
    HostModelProfile host_profile;
    if (!o.trace.empty() && !chip) host_profile = profile_model_on_host(model.pipeline, model.values, bindings);
    if (!o.trace.empty()) {
        const std::string trace = chip ? chrome_trace_json(chip_program, chip_run) : chrome_trace_json(host_profile);
        std::ofstream f(o.trace, std::ios::binary | std::ios::trunc);
        if (!(f << trace) || !f.flush()) throw Error("run-model: cannot write the trace '" + o.trace + "'; check that its directory exists and is writable");
    }
    const auto ref_start = std::chrono::steady_clock::now();
    const std::vector<Buffer<>> reference = model.pipeline.realize(shapes, bindings, Target::reference());
    const double reference_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ref_start).count();

    bool all_passed = true;
    nlohmann::ordered_json jouts = nlohmann::json::array();
    std::vector<std::string> lines;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const onnx::ModelTensor &t = model.outputs[i];
        Comparison c = check_against_reference(outputs[i], reference[i], chip ? kChipRelativeTolerance : kHostRelativeTolerance);
        if (c.equal && !host_profile.outputs.empty()) { // the profiled run must compute the same values
            c = check_against_reference(host_profile.outputs[i], reference[i], kHostRelativeTolerance);
            if (!c.equal) c.message = "the group-by-group run for --trace: " + c.message;
        }
        all_passed = all_passed && c.equal;
        std::string file;
        if (!o.output_dir.empty()) {
            std::filesystem::create_directories(o.output_dir);
            file = (std::filesystem::path(o.output_dir) / (file_name_for(t.name) + ".npy")).string();
            Buffer<> out = outputs[i];
            if (t.shape.empty()) { // a scalar is computed as [1]; write it with ONNX's shape []
                Buffer<> scalar(out.type(), std::vector<int64_t>{});
                std::memcpy(scalar.data(), out.data(), static_cast<size_t>(out.type().bytes()));
                out = scalar;
            }
            out.save_npy(file);
        }
        nlohmann::ordered_json j;
        j["name"] = t.name;
        j["dtype"] = t.type.to_string();
        j["shape"] = t.shape;
        j["verified"] = c.equal;
        j["max_abs_error"] = c.max_abs_error;
        if (!c.equal) j["mismatch"] = c.message;
        if (!file.empty()) j["file"] = file;
        jouts.push_back(j);
        lines.push_back("  output " + t.name + " " + t.type.to_string() + " " + shape_text(t.shape) + ": " +
                        (c.equal ? "verified" : "MISMATCH: " + c.message) + " (max abs error " + std::to_string(c.max_abs_error) +
                        ")" + (file.empty() ? "" : ", written to " + file));
    }
    int64_t macs = 0;
    for (const onnx::ModelNode &n : model.nodes) macs += n.macs;
    if (o.json) {
        nlohmann::ordered_json j;
        j["model"] = o.model;
        j["target"] = target.name();
        j["nodes"] = model.nodes.size();
        j["macs"] = macs;
        j["random_inputs"] = random_inputs;
        j["outputs"] = jouts;
        j["verified"] = all_passed;
        j["compile_ms"] = compile_ms;
        if (chip) {
            nlohmann::ordered_json jk = nlohmann::json::array();
            for (size_t k = 0; k < chip_run.kernels.size(); ++k) {
                const ChipKernelRun &r = chip_run.kernels[k];
                nlohmann::ordered_json e;
                e["kernel"] = r.label;
                e["fused"] = chip_program.kernels[k].fused;
                e["program"] = r.program;
                e["cycles"] = r.report.cycles;
                e["host_io_cycles"] = r.report.host_io_cycles;
                e["problem_bound_cycles"] = r.report.problem_bound_cycles;
                e["macs"] = r.report.macs;
                jk.push_back(e);
            }
            j["kernels"] = jk;
            nlohmann::ordered_json jp = nlohmann::json::array();
            for (size_t g = 0; g < chip_run.programs.size(); ++g) {
                const ChipProgramRun &r = chip_run.programs[g];
                jp.push_back({{"kernels", r.kernels}, {"cycles", r.report.cycles}, {"host_io_cycles", r.report.host_io_cycles},
                              {"intermediates_in_dram", chip_program.programs[g].buffers}});
            }
            j["programs"] = jp;
            j["cycles"] = chip_run.cycles;
            j["host_io_cycles"] = chip_run.host_io_cycles;
            j["total_cycles"] = chip_run.cycles + chip_run.host_io_cycles;
            j["problem_bound_cycles"] = chip_run.problem_bound_cycles;
            j["tolerance"] = kChipRelativeTolerance;
        } else {
            j["time_ms"] = run_ms;
            j["tolerance"] = kHostRelativeTolerance;
        }
        j["reference_ms"] = reference_ms;
        if (!o.trace.empty()) j["trace"] = o.trace;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s on %s: %zu nodes, %lld MACs\n", o.model.c_str(), target.name().c_str(), model.nodes.size(),
                    static_cast<long long>(macs));
        for (const std::string &name : random_inputs) std::printf("  input  %s: random (seed %llu..)\n", name.c_str(), static_cast<unsigned long long>(o.seed));
        for (const std::string &l : lines) std::printf("%s\n", l.c_str());
        if (chip) {
            for (size_t k = 0; k < chip_run.kernels.size(); ++k) {
                const ChipKernelRun &r = chip_run.kernels[k];
                std::printf("  kernel %zu %s (%zu fused): %lld cycles, host I/O %lld cycles, problem bound %.0f\n", k,
                            r.label.c_str(), chip_program.kernels[k].fused.size(), static_cast<long long>(r.report.cycles),
                            static_cast<long long>(r.report.host_io_cycles), r.report.problem_bound_cycles);
            }
            for (size_t g = 0; g < chip_run.programs.size(); ++g)
                if (chip_run.programs[g].kernels.size() > 1)
                    std::printf("  program %zu: kernels %zu..%zu linked, %zu intermediates kept on chip, %lld cycles, host I/O %lld cycles\n", g,
                                chip_run.programs[g].kernels.front(), chip_run.programs[g].kernels.back(),
                                chip_program.programs[g].buffers.size(), static_cast<long long>(chip_run.programs[g].report.cycles),
                                static_cast<long long>(chip_run.programs[g].report.host_io_cycles));
            std::printf("  total: %zu kernels in %zu programs, %lld cycles, host I/O %lld cycles (%lld in all), problem bound %.0f cycles\n",
                        chip_run.kernels.size(), chip_run.programs.size(), static_cast<long long>(chip_run.cycles), static_cast<long long>(chip_run.host_io_cycles),
                        static_cast<long long>(chip_run.cycles + chip_run.host_io_cycles), chip_run.problem_bound_cycles);
            std::printf("  compile: %.1f ms, reference evaluator: %.1f ms\n", compile_ms, reference_ms);
        } else {
            std::printf("  compile: %.1f ms, run: %.3f ms, reference evaluator: %.1f ms\n", compile_ms, run_ms, reference_ms);
        }
        if (!o.trace.empty()) std::printf("  trace: %s (open in Perfetto or chrome://tracing)\n", o.trace.c_str());
    }
    return all_passed ? 0 : 1;
}

} // namespace

Command add_run_model_command(CLI::App &app) {
    auto o = std::make_shared<RunModelOptions>();
    CLI::App *cmd = app.add_subcommand("run-model", "run an ONNX model on the host or a chip, verified against the reference evaluator");
    cmd->footer("Imports MODEL.onnx, compiles the whole model for the host (LLVM JIT) and runs it once. Inputs not\n"
                "given with --input are random. Every output is checked against the reference evaluator on the\n"
                "same inputs (fp32 within 1e-4 x max(1, max|y|), integers exactly) and, with --output-dir, written\n"
                "as DIR/<output name>.npy. Exits 1 if an output does not match. On a chip (tsp-mini, npu-edge) the\n"
                "model runs as fused kernels in sequence on chipsim, cycles reported per kernel; floats are\n"
                "checked within 3e-2 x max(1, max|y|) (the MXM multiplies in bf16). A node the chip cannot run\n"
                "is an error naming it. --trace FILE writes a Chrome trace of the whole model: on a chip every\n"
                "kernel's instructions one after another on one cycle axis (host-link transfers as their own boxes);\n"
                "on the host one box per fusion group, from a second run that times the groups one by one.");
    cmd->add_option("model", o->model, "the ONNX model file")->required();
    cmd->add_option("--target", o->target, "host, tsp-mini, npu-edge or a chip target file")->capture_default_str();
    cmd->add_option("--input", o->inputs, "NAME=FILE.npy or NAME=FILE.pb (an ONNX TensorProto), repeatable");
    cmd->add_option("--dim", o->dims, "bind a symbolic dimension: NAME=VALUE (repeatable)");
    cmd->add_option("--output-dir", o->output_dir, "write each output as DIR/<output name>.npy");
    cmd->add_option("--trace", o->trace, "write a Chrome trace (chrome://tracing, Perfetto) of the whole model");
    cmd->add_option("--seed", o->seed, "seed of the random inputs")->capture_default_str();
    cmd->add_flag("--json", o->json, "print the report as JSON");
    return {cmd, [o] { return run(*o); }};
}

} // namespace tessera::cli
