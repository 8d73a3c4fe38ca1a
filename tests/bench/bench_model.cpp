// Whole ONNX models (issue 16): a small MLP and a small conv net (tests/onnx/small_models.py).
// Host: the same model JIT-compiled unfused (every Func computed at the root, each intermediate
// tensor written and read back) and with the graph compiler's fusion schedule
// (apply_fusion_schedule), and with the graph compiler's whole host schedule (host_schedules::model:
// the fusion plus vectors and threads, what run-model and compile use) — ratios to unfused. Chips: the model partitioned
// into fused kernels on chipsim, exact cycles per model against the sum of the kernels' problem
// bounds, printed as a table. Fusion and residency (issue 16): a ResNet-50 stage (56x56x64) and a
// BERT-base encoder layer (sequence 128, hidden 768) on both chips, the model's program (fused
// kernels) against the sum of its operators compiled one by one, host I/O counted on both sides,
// with the bytes each moves over the host link.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include <unistd.h>

#include <tessera/codegen/chip_model.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/codegen/jit.h>
#include <tessera/codegen/runtime.h>
#include <tessera/fusion.h>
#include <tessera/onnx.h>
#include <tessera/tessera.h>

namespace {

using namespace tessera;
namespace fs = std::filesystem;

/// The models of small_models.py, made once per run (with `flag`: its --large models).
const fs::path &models_dir(const std::string &flag = "") {
    static std::map<std::string, fs::path> dirs;
    if (!dirs.count(flag)) {
        fs::path d = fs::temp_directory_path() / ("tessera_bench_model_" + std::to_string(::getpid()) + flag);
        fs::create_directories(d);
        const std::string cmd = "/usr/bin/python3 '" TESSERA_SOURCE_DIR "/tests/onnx/small_models.py' '" + d.string() + "' " + flag;
        if (std::system(cmd.c_str()) != 0) throw Error("bench_model: small_models.py failed");
        dirs[flag] = d;
    }
    return dirs.at(flag);
}

struct LoadedModel {
    onnx::Model model;
    Bindings bindings;
};

LoadedModel load(const std::string &name, const std::string &flag = "") {
    const fs::path &dir = models_dir(flag);
    onnx::Model m = onnx::import((dir / (name + ".onnx")).string());
    Bindings b = m.bindings({{m.inputs.at(0).name, Buffer<>::load_npy((dir / (name + ".in_0.npy")).string())}});
    return {m, b};
}

enum class HostPlan { Unfused, Fused, Scheduled };

void host_model(benchmark::State &state, const std::string &name, HostPlan plan) {
    LoadedModel lm = load(name);
    if (plan == HostPlan::Fused) apply_fusion_schedule(lm.model.pipeline);
    else if (plan == HostPlan::Scheduled) host_schedules::model(lm.model.pipeline);
    else
        for (Func f : lm.model.pipeline.functions()) {
            bool output = false;
            for (const Func &o : lm.model.pipeline.outputs()) output = output || o.name() == f.name();
            if (!output) f.compute_root();
        }
    const auto shapes = lm.model.realize_shapes();
    CompiledKernel kernel = compile_jit(lm.model.pipeline, shapes, Target::host());
    for (auto _ : state) benchmark::DoNotOptimize(run_pipeline_kernel(kernel, shapes, lm.bindings));
}

void chip_table() {
    std::printf("| model | target | kernels | graph values | cycles | host I/O cycles | problem bound (sum) | cycles / bound |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const std::string name : {"mlp", "conv_net"})
        for (const std::string target : {"tsp-mini", "npu-edge"}) {
            LoadedModel lm = load(name);
            const ChipModelProgram p = compile_model_for_chip(lm.model.pipeline, lm.model.values, Target::named(target));
            const ChipModelResult r = run_model_on_chip(p, lm.bindings, {.trace = false, .functional = false});
            std::printf("| %s | %s | %zu | %zu | %lld | %lld | %.0f | %.2f |\n", name.c_str(), target.c_str(), p.kernels.size(),
                        lm.model.values.size(), static_cast<long long>(r.cycles), static_cast<long long>(r.host_io_cycles),
                        r.problem_bound_cycles, r.problem_bound_cycles > 0 ? double(r.cycles) / r.problem_bound_cycles : 0.0);
        }
}

/// A compiled model's run in time: cycles with host I/O, and bytes over the host link.
struct ModelTiming {
    size_t kernels = 0, programs = 0;
    int64_t cycles = 0, host_io_cycles = 0, host_bytes = 0;
    int64_t total() const { return cycles + host_io_cycles; }
};

/// `whole`: fused and linked (the model's programs); else every operator a program of its own.
ModelTiming time_model(const LoadedModel &lm, const std::string &target, bool whole) {
    const ChipModelProgram p =
        compile_model_for_chip(lm.model.pipeline, lm.model.values, Target::named(target), {.fuse = whole, .link = whole});
    const ChipModelResult r = run_model_on_chip(p, lm.bindings, {.trace = false, .functional = false});
    ModelTiming t{p.kernels.size(), p.programs.size(), r.cycles, r.host_io_cycles, 0};
    for (const ChipProgramRun &g : r.programs)
        if (auto it = g.report.bytes.find("HOST"); it != g.report.bytes.end()) t.host_bytes += it->second;
    return t;
}

int64_t bytes_of(const Buffer<> &b) { return b.number_of_elements() * int64_t(b.type().bytes()); }

void fusion_table() {
    std::printf("\n| model | target | kernels in programs (model / one per operator) | model programs: cycles + host I/O | operators one by one | ratio | host-link bytes: program / one by one | model's inputs + weights + outputs |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    for (const std::string name : {"resnet50_stage", "bert_base_layer"}) {
        const LoadedModel lm = load(name, "--large");
        int64_t io_bytes = 0; // every Input bound (the model's input and its weights) and the outputs
        for (const Binding &b : lm.bindings)
            if (!b.is_param) io_bytes += bytes_of(b.buffer);
        const std::vector<std::vector<int64_t>> shapes = lm.model.realize_shapes();
        for (size_t o = 0; o < shapes.size(); ++o) {
            int64_t n = lm.model.pipeline.outputs().at(o).type().bytes();
            for (int64_t d : shapes[o]) n *= d;
            io_bytes += n;
        }
        for (const std::string target : {"tsp-mini", "npu-edge"}) {
            const ModelTiming fused = time_model(lm, target, true), alone = time_model(lm, target, false);
            std::printf("| %s | %s | %zu in %zu / %zu | %lld + %lld = %lld | %lld + %lld = %lld | %.2f | %lld / %lld | %lld |\n", name.c_str(),
                        target.c_str(), fused.kernels, fused.programs, alone.kernels, static_cast<long long>(fused.cycles),
                        static_cast<long long>(fused.host_io_cycles), static_cast<long long>(fused.total()),
                        static_cast<long long>(alone.cycles), static_cast<long long>(alone.host_io_cycles),
                        static_cast<long long>(alone.total()), double(fused.total()) / double(alone.total()),
                        static_cast<long long>(fused.host_bytes), static_cast<long long>(alone.host_bytes),
                        static_cast<long long>(io_bytes));
            std::fflush(stdout);
        }
    }
    fs::remove_all(models_dir("--large"));
}

} // namespace

int main(int argc, char **argv) {
    chip_table();
    fusion_table();
    for (const std::string name : {"mlp", "conv_net"}) {
        benchmark::RegisterBenchmark(("host/" + name + "/unfused").c_str(), [=](benchmark::State &s) { host_model(s, name, HostPlan::Unfused); });
        benchmark::RegisterBenchmark(("host/" + name + "/fused").c_str(), [=](benchmark::State &s) { host_model(s, name, HostPlan::Fused); });
        benchmark::RegisterBenchmark(("host/" + name + "/scheduled").c_str(), [=](benchmark::State &s) { host_model(s, name, HostPlan::Scheduled); });
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    fs::remove_all(models_dir());
    return 0;
}
