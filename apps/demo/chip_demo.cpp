// The chip flow of `make demo` (chip_demo.h): algorithm + library schedule -> chip program ->
// chipsim -> values checked against the reference evaluator, with cycles and the trace.
#include "chip_demo.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <tessera/codegen/chip_backend.h>
#include <tessera/codegen/chip_schedules.h>
#include <tessera/tessera.h>

namespace tessera::demo {

namespace {

bool check(const char *what, const Buffer<> &got, const Buffer<> &ref) {
    Comparison c = compare(got, ref);
    std::printf("  %-44s %s\n", what, c.equal ? "matches the reference evaluator (bit-exact)" : "MISMATCH");
    if (!c.equal) std::printf("    %s\n", c.message.c_str());
    return c.equal;
}

void print_report(const ChipResult &r) {
    const auto &rep = r.report;
    std::printf("  kernel: %s", r.program.summary.c_str());
    std::printf("  %lld kernel cycles (+%lld host I/O), %lld instructions, %.0f MACs/cycle of %.0f peak: MXM %.1f %% "
                "busy, %.1f %% of the roofline bound (%s)\n",
                (long long)rep.cycles, (long long)rep.host_io_cycles, (long long)rep.instructions, rep.macs_per_cycle,
                rep.peak_macs_per_cycle, 100 * rep.mxm_utilization,
                rep.cycles ? 100 * rep.roofline_cycles / double(rep.cycles) : 0.0, rep.roofline_limiter.c_str());
}

} // namespace

bool demo_chip() {
    const Target chip = Target::named("tsp-mini");
    bool ok = true;
    {
        const int M = 512, N = 512, K = 512;
        Input A(Int(8), {M, K}, "A"), B(Int(8), {K, N}, "B");
        Func C = ops::matmul(A, B, {.name = "C"});
        std::printf("matmul %dx%dx%d int8 on tsp-mini (library schedule):\n", M, N, K);
        Buffer<> a(Int(8), {M, K}), b(Int(8), {K, N});
        a.fill_random(1);
        b.fill_random(2);
        ChipRunOptions options;
        options.trace = true;
        ChipResult r = realize_library_kernel_on_chip(Pipeline(C), {{M, N}}, {{A, a}, {B, b}}, chip, options);
        ok = check("tsp-mini (chipsim)", r.outputs[0], C.realize({M, N}, {{A, a}, {B, b}}, Target::reference())) && ok;
        print_report(r);
        // Written to the working directory (`make demo` runs in build/), named in full.
        const std::string trace = std::filesystem::absolute("tessera-chip-matmul-trace.json").string(),
                          assembly = std::filesystem::absolute("tessera-chip-matmul.tasm").string();
        std::ofstream(trace) << r.trace_json;
        std::ofstream(assembly) << r.program.assembly();
        std::printf("  trace written to %s (open in https://ui.perfetto.dev or chrome://tracing), program to %s\n",
                    trace.c_str(), assembly.c_str());
    }
    {
        const int M = 256, N = 192, K = 320;
        Input X(Int(8), {M, K}, "X"), W(Int(8), {K, N}, "W"), bias(Int(32), {N}, "bias");
        Func dense = ops::relu(ops::add(ops::matmul(X, W, {.name = "xw"}), bias, "xw_bias"), "dense");
        std::printf("dense layer relu(X·W + bias) %dx%dx%d int8 on tsp-mini, bias and ReLU fused on the VXM:\n", M, N, K);
        Buffer<> x(Int(8), {M, K}), w(Int(8), {K, N}), c(Int(32), {N});
        x.fill_random(3);
        w.fill_random(4);
        c.fill_random(5);
        Bindings b{{X, x}, {W, w}, {bias, c}};
        ChipResult r = realize_library_kernel_on_chip(Pipeline(dense), {{M, N}}, b, chip);
        ok = check("tsp-mini (chipsim)", r.outputs[0], dense.realize({M, N}, b, Target::reference())) && ok;
        print_report(r);
    }
    {
        // A ResNet-50-style convolution: 3x3, 64 -> 64 channels on a 28x28 image, padding 1.
        const int H = 28, W = 28, C = 64, O = 64;
        Input X(Int(8), {1, C, H, W}, "image"), F(Int(8), {O, C, 3, 3}, "filter"), bias(Int(32), {O}, "bias");
        ops::Conv2dOptions opt;
        opt.padding = 1;
        opt.name = "conv";
        Func conv = ops::conv2d(X, F, bias, opt);
        std::printf("conv2d 3x3 %d->%d on %dx%d NCHW int8 (+bias) on tsp-mini, as an implicit GEMM:\n", C, O, H, W);
        Buffer<> x(Int(8), {1, C, H, W}), f(Int(8), {O, C, 3, 3}), b(Int(32), {O});
        x.fill_random(6);
        f.fill_random(7);
        b.fill_random(8);
        Bindings bind{{X, x}, {F, f}, {bias, b}};
        ChipResult r = realize_library_kernel_on_chip(Pipeline(conv), {{1, O, H, W}}, bind, chip);
        ok = check("tsp-mini (chipsim)", r.outputs[0], conv.realize({1, O, H, W}, bind, Target::reference())) && ok;
        print_report(r);
    }
    return ok;
}

} // namespace tessera::demo
