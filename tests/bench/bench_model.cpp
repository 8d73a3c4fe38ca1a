// Whole ONNX models (issue 16): a small MLP and a small conv net (tests/onnx/small_models.py).
// Host: the same model JIT-compiled unfused (every Func computed at the root, each intermediate
// tensor written and read back) and with the graph compiler's fusion schedule
// (apply_fusion_schedule), and with the graph compiler's whole host schedule (host_schedules::model:
// the fusion plus vectors and threads, what run-model and compile use) — ratios to unfused. Chips: the model partitioned
// into fused kernels on chipsim, exact cycles per model against the sum of the kernels' problem
// bounds, printed as a table.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>

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

const fs::path &models_dir() {
    static const fs::path dir = [] {
        fs::path d = fs::temp_directory_path() / ("tessera_bench_model_" + std::to_string(::getpid()));
        fs::create_directories(d);
        const std::string cmd = "/usr/bin/python3 '" TESSERA_SOURCE_DIR "/tests/onnx/small_models.py' '" + d.string() + "'";
        if (std::system(cmd.c_str()) != 0) throw Error("bench_model: small_models.py failed");
        return d;
    }();
    return dir;
}

struct LoadedModel {
    onnx::Model model;
    Bindings bindings;
};

LoadedModel load(const std::string &name) {
    onnx::Model m = onnx::import((models_dir() / (name + ".onnx")).string());
    Bindings b = m.bindings({{m.inputs.at(0).name, Buffer<>::load_npy((models_dir() / (name + ".in_0.npy")).string())}});
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

} // namespace

int main(int argc, char **argv) {
    chip_table();
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
