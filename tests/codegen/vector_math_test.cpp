// The host backend's fp32 exp, tanh, erf and sigmoid (codegen/cpu/vector_math.h) against libm in
// double precision: a dense sweep of the float range plus the edge cases (huge |x|, results that
// overflow or turn denormal, ±0, ±inf, NaN), through vectorized loops with scalar tails — and
// the vectorized loop really stays vector code (no libm call per lane).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <tuple>

#include "tessera/codegen/host_features.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"
#include "tessera/lower.h"
#include "tessera/ops.h"
#include "tessera/reference.h"

using namespace tessera;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// The spacing of fp32 values at |r| (denormal spacing below the normal range).
double ulp_at(double r) {
    const double a = std::fabs(r);
    if (a < std::ldexp(1.0, -126)) return std::ldexp(1.0, -149);
    int e = 0;
    std::frexp(a, &e); // a = m 2^e, m in [0.5, 1)
    return std::ldexp(1.0, e - 24);
}

/// Sample points: a dense sweep of [lo, hi] and the edge cases.
std::vector<float> samples(float lo, float hi) {
    std::vector<float> xs;
    const int n = 200003; // odd: the vectorized loop ends in a scalar tail
    for (int i = 0; i < n; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / (n - 1));
    for (float x : {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(), 1e-30f, -1e-30f, 1e-42f,
                    std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(), 88.72f, 88.73f, 89.0f,
                    -87.33f, -87.34f, -103.9f, -104.0f, -150.0f, 1000.0f, -1000.0f, 0.625f, -0.625f, 0.62499f,
                    1.0f, -1.0f, 0.99999f, 3.92f, 4.0f, 4.5f, 9.0f, 9.1f, 20.0f, -20.0f})
        xs.push_back(x);
    return xs;
}

struct Bound {
    double ulps;       ///< relative error, in units of the result's fp32 spacing
    double abs = 0.0;  ///< or absolute error, whichever is looser
};

/// Realizes f(i) = op(X(i)) vectorized by 8 on the host and checks every point against
/// `exact` (double precision libm).
void expect_close_to_libm(const std::string &name, const std::function<Expr(Expr)> &op,
                          const std::function<double(double)> &exact, float lo, float hi, Bound bound) {
    const std::vector<float> xs = samples(lo, hi);
    const int n = static_cast<int>(xs.size());
    Input X(Float(32), {n}, "X");
    Var i("i");
    Func f(name);
    f(i) = op(X(i));
    f.vectorize(i, 8);
    CpuOptions o;
    o.keep_listing = true;
    CompiledKernel k = compile_jit(Pipeline(f), {{n}}, Target::host(), o);
    Buffer<float> x({n}), out({n});
    for (int j = 0; j < n; ++j) x(j) = xs[static_cast<size_t>(j)];
    ASSERT_EQ(k.call({x, out}), 0);
    for (const char *libm : {"@expf", "@tanhf", "@erff", "@llvm.exp."})
        EXPECT_EQ(k.llvm_ir().find(libm), std::string::npos) << name << " calls " << libm;
    double worst_ulps = 0, worst_abs = 0;
    int failures = 0;
    for (int j = 0; j < n && failures < 5; ++j) {
        const float in = xs[static_cast<size_t>(j)];
        const double want = exact(static_cast<double>(in));
        const float got = out(j);
        if (std::isnan(want)) {
            if (!std::isnan(got)) ++failures, ADD_FAILURE() << name << "(" << in << ") = " << got << ", want NaN";
            continue;
        }
        const double wantf = static_cast<double>(static_cast<float>(want)); // overflow → inf
        if (std::isinf(wantf) || std::isinf(got)) {
            if (static_cast<double>(got) != wantf)
                ++failures, ADD_FAILURE() << name << "(" << in << ") = " << got << ", want " << wantf;
            continue;
        }
        if (want == 0.0 && std::signbit(want) != std::signbit(got))
            ++failures, ADD_FAILURE() << name << "(" << in << ") = " << got << ": wrong sign of zero";
        const double err = std::fabs(static_cast<double>(got) - want);
        const double ulps = err / ulp_at(want);
        worst_ulps = std::max(worst_ulps, ulps);
        worst_abs = std::max(worst_abs, err);
        if (ulps > bound.ulps && err > bound.abs)
            ++failures, ADD_FAILURE() << name << "(" << in << ") = " << got << ", libm " << want << ": " << ulps
                                      << " ulp, " << err << " absolute";
    }
    std::cout << name << ": worst " << worst_ulps << " ulp, " << worst_abs << " absolute, over " << n << " points\n";
}

} // namespace

TEST(VectorMath, ExpWithinTwoUlpOverTheWholeRange) {
    expect_close_to_libm("exp", [](Expr e) { return exp(e); }, [](double v) { return std::exp(v); }, -110.0f,
                         95.0f, {2.0});
}

TEST(VectorMath, TanhWithinTwoUlp) {
    expect_close_to_libm("tanh", [](Expr e) { return tanh(e); }, [](double v) { return std::tanh(v); }, -12.0f,
                         12.0f, {2.0});
}

TEST(VectorMath, ErfWithinThreeUlp) {
    expect_close_to_libm("erf", [](Expr e) { return erf(e); }, [](double v) { return std::erf(v); }, -6.0f, 6.0f,
                         {3.0});
}

TEST(VectorMath, SigmoidThroughExp) {
    // 1 / (1 + e^-x) underflows to 0 below x = -88.7, where e^-x overflows (as it did with
    // libm's expf): denormal results are 0, hence the absolute bound of the smallest normal.
    expect_close_to_libm("sigmoid", [](Expr e) { return sigmoid(e); },
                         [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, -110.0f, 110.0f,
                         {3.0, static_cast<double>(std::numeric_limits<float>::min())});
}

TEST(VectorMath, SoftmaxAndGeluLibrarySchedulesStayVectorized) {
    // The row-wise library schedule vectorizes the innermost dimension; exp (softmax) and erf
    // (exact GELU) must then be vector polynomials, not one libm call per lane. 37 columns
    // leave a scalar tail.
    Input X(Float(32), {6, 37}, "X");
    Buffer<float> x({6, 37});
    x.fill_random(7);
    for (const auto &[what, out] : std::vector<std::pair<std::string, ops::Tensor>>{
             {"softmax", ops::softmax(X)}, {"gelu", ops::gelu(X)}}) {
        Pipeline p(out.func());
        host_schedules::rowwise(p);
        CpuOptions o;
        o.keep_listing = true;
        CompiledKernel k = compile_jit(p, {{6, 37}}, Target::host(), o);
        for (const char *libm : {"@expf", "@erff", "@llvm.exp."})
            EXPECT_EQ(k.llvm_ir().find(libm), std::string::npos) << what << " calls " << libm;
        const std::string vector_type = "<" + std::to_string(host_features().float_lanes()) + " x float>";
        EXPECT_NE(k.llvm_ir().find(vector_type), std::string::npos) << what << " is not vectorized";
        Buffer<float> got({6, 37});
        ASSERT_EQ(k.call({x, got}), 0);
        Buffer<> ref = evaluate_reference(out.func(), {6, 37}, {{X, x}});
        Comparison c = compare(got, ref, Tolerance::for_type(Float(32), 37));
        EXPECT_TRUE(c.equal) << what << ": " << c.message;
    }
}

TEST(HostSchedules, MatmulLibraryScheduleMatchesTheReference) {
    // Column strips in parallel, each packing its own B (N a multiple of 4 panels; 100 rows
    // leave a partial row tile; K = 600 is blocked), and row tiles in parallel (N = 48).
    for (const auto &[m, n, kk] :
         std::vector<std::tuple<int, int, int>>{{64, 128, 64}, {100, 128, 96}, {38, 64, 600}, {40, 48, 40}}) {
        Input A(Float(32), {m, kk}, "A"), B(Float(32), {kk, n}, "B");
        ops::Tensor out = ops::matmul(A, B);
        Pipeline p(out.func());
        host_schedules::matmul(p, m, n, kk);
        CompiledKernel k = compile_jit(p, {{m, n}}, Target::host());
        Buffer<float> a({m, kk}), b({kk, n}), got({m, n});
        a.fill_random(1);
        b.fill_random(2);
        ASSERT_EQ(k.call({a, b, got}), 0);
        Buffer<> ref = evaluate_reference(out.func(), {m, n}, {{A, a}, {B, b}});
        Comparison c = compare(got, ref, Tolerance::for_type(Float(32), kk));
        EXPECT_TRUE(c.equal) << m << "x" << n << "x" << kk << ": " << c.message;
    }
}

/// How many times a call of the lowered kernel enters a parallel loop: each entry is one
/// dispatch to the thread pool, so each parallel loop counts the product of the constant
/// extents of the serial loops around it.
int64_t parallel_dispatches(const LoweredModule &m) {
    struct Counter : IRVisitor {
        int64_t enclosing = 1, dispatches = 0;
        using IRVisitor::visit;
        void visit(const For *f) override {
            if (f->kind == ForKind::Parallel) {
                dispatches += enclosing;
                return; // loops inside run within one task
            }
            const int64_t saved = enclosing;
            enclosing *= as_const_int(f->extent).value_or(1);
            IRVisitor::visit(f);
            enclosing = saved;
        }
    } counter;
    m.body.accept(&counter);
    return counter.dispatches;
}

TEST(HostSchedules, MatmulLibraryScheduleDispatchesFewParallelLoops) {
    // Every parallel loop is a fork and join of the pool (a few microseconds), so the zero fill
    // must be one loop over blocks, not one per row: at 256³ a fill parallel over column strips
    // inside the row loop made 256 dispatches of 4 tiny tasks a call, and 2 threads ran no
    // faster than 1. Small products: the fill and the column strips; larger ones: the fill and
    // the row tiles of each (column strip, k block) sharing a packed panel of B.
    // Strips are at most 1024 columns on either ISA, so the counts are the same for both
    // (the AVX-512 schedule is lowered on every machine).
    for (const char *isa : {"avx2", "avx512"})
        for (const auto &[n, expected] : std::vector<std::pair<int, int64_t>>{{256, 2}, {512, 2}, {1024, 1 + 4}, {2048, 1 + 2 * 8}}) {
            Input A(Float(32), {n, n}, "A"), B(Float(32), {n, n}, "B");
            Pipeline p(ops::matmul(A, B).func());
            host_schedules::matmul(p, n, n, n, "matmul", isa_features(isa));
            const LoweredModule m = lower(p, Target::host(), {{n, n}});
            EXPECT_EQ(parallel_dispatches(m), expected) << isa << " " << n << "³:\n" << m.to_string();
        }
}

TEST(HostSchedules, EachIsasLibrarySchedulesCompileHereAndRunWhereTheCpuHasThem) {
    // A schedule made for one ISA's vector width is lowered and compiled on every machine (LLVM
    // targets that ISA whatever this CPU is) and run, against the reference, where the CPU has
    // it — so an AVX2-only CI still compiles the AVX-512 tiles, and an AVX-512 one runs both.
    for (const char *isa : {"avx2", "avx512"}) {
        const HostFeatures cpu = isa_features(isa);
        CpuOptions options = cpu_options_for(cpu);
        options.keep_listing = true;
        struct Kernel {
            std::string name;
            Pipeline pipeline;
            std::vector<int64_t> shape;
            Bindings bindings;
            int64_t reduction;
        };
        std::vector<Kernel> kernels;
        {
            Input A(Float(32), {70, 96}, "A"), B(Float(32), {96, 256}, "B");
            Pipeline p(ops::matmul(A, B).func());
            host_schedules::matmul(p, 70, 256, 96, "matmul", cpu);
            Buffer<float> a({70, 96}), b({96, 256});
            a.fill_random(1);
            b.fill_random(2);
            kernels.push_back({"matmul", p, {70, 256}, {{A, a}, {B, b}}, 96});
        }
        for (bool nhwc : {false, true}) {
            const std::vector<int64_t> xs = nhwc ? std::vector<int64_t>{1, 6, 32, 8} : std::vector<int64_t>{1, 8, 6, 32};
            const std::vector<int64_t> ws = nhwc ? std::vector<int64_t>{3, 3, 8, 32} : std::vector<int64_t>{32, 8, 3, 3};
            Input X(Float(32), std::vector<Expr>(xs.begin(), xs.end()), "X"), W(Float(32), std::vector<Expr>(ws.begin(), ws.end()), "W");
            ops::Conv2dOptions o;
            o.padding = ops::Padding2d(1);
            o.layout = nhwc ? ops::Layout::NHWC : ops::Layout::NCHW;
            Pipeline p(ops::conv2d(X, W, o).func());
            host_schedules::conv2d(p, nhwc, 32, 6, 32, false, "conv2d", cpu);
            Buffer<float> x(xs), w(ws);
            x.fill_random(3);
            w.fill_random(4);
            kernels.push_back({nhwc ? "conv2d nhwc" : "conv2d nchw", p,
                               nhwc ? std::vector<int64_t>{1, 6, 32, 32} : std::vector<int64_t>{1, 32, 6, 32}, {{X, x}, {W, w}}, 72});
        }
        {
            Input X(Float(32), {9, 100}, "X");
            Pipeline p(ops::softmax(X).func());
            host_schedules::rowwise(p, cpu);
            Buffer<float> x({9, 100});
            x.fill_random(5);
            kernels.push_back({"softmax", p, {9, 100}, {{X, x}}, 100});
        }
        for (const Kernel &k : kernels) {
            CompiledKernel compiled = compile_jit(k.pipeline, {k.shape}, Target::host(), options);
            const std::string vector_type = "<" + std::to_string(cpu.float_lanes()) + " x float>";
            EXPECT_NE(compiled.llvm_ir().find(vector_type), std::string::npos) << isa << " " << k.name << " has no " << vector_type;
            if (!host_supports(cpu)) continue; // compiled for it; this CPU cannot run it
            std::vector<Buffer<>> got = run_pipeline_kernel(compiled, {k.shape}, k.bindings);
            Buffer<> expected = evaluate_reference(k.pipeline, {k.shape}, k.bindings)[0];
            Comparison c = compare(got[0], expected, Tolerance::for_type(Float(32), k.reduction));
            EXPECT_TRUE(c.equal) << isa << " " << k.name << ": " << c.message;
        }
    }
}

TEST(HostSchedules, IsaFeaturesNameTheKnownLevels) {
    EXPECT_EQ(isa_features("avx2").float_lanes(), 8);
    EXPECT_EQ(isa_features("avx512").float_lanes(), 16);
    EXPECT_TRUE(host_supports(host_features()));
    try {
        isa_features("avx1024");
        ADD_FAILURE() << "avx1024 was accepted";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("avx2 and avx512"), std::string::npos) << e.what();
    }
}

TEST(HostSchedules, Conv2dLibraryScheduleMatchesTheReference) {
    // NCHW 3×3, pad 1: the register tile of channels × 2 rows × a vector of pixels (an odd
    // height leaves a partial pair of rows; batch 2 repeats the parallel loop), a width that is
    // no multiple of 8 (rows vectorized instead), and NHWC.
    struct Case {
        int batch, in_channels, out_channels, height, width;
        bool nhwc;
    };
    for (const Case &s : {Case{1, 8, 16, 9, 16, false}, Case{2, 3, 8, 4, 8, false}, Case{1, 4, 8, 5, 12, false},
                          Case{1, 8, 16, 6, 8, true}}) {
        const std::vector<int64_t> x_shape = s.nhwc ? std::vector<int64_t>{s.batch, s.height, s.width, s.in_channels}
                                                    : std::vector<int64_t>{s.batch, s.in_channels, s.height, s.width};
        const std::vector<int64_t> w_shape = s.nhwc ? std::vector<int64_t>{3, 3, s.in_channels, s.out_channels}
                                                    : std::vector<int64_t>{s.out_channels, s.in_channels, 3, 3};
        const std::vector<int64_t> out_shape = s.nhwc ? std::vector<int64_t>{s.batch, s.height, s.width, s.out_channels}
                                                      : std::vector<int64_t>{s.batch, s.out_channels, s.height, s.width};
        std::vector<Expr> xs(x_shape.begin(), x_shape.end()), ws(w_shape.begin(), w_shape.end());
        Input X(Float(32), xs, "X"), W(Float(32), ws, "W");
        ops::Conv2dOptions o;
        o.padding = ops::Padding2d(1);
        if (s.nhwc) o.layout = ops::Layout::NHWC;
        ops::Tensor out = ops::conv2d(X, W, o);
        Pipeline p(out.func());
        host_schedules::conv2d(p, s.nhwc, s.out_channels, s.height, s.width, false);
        CompiledKernel k = compile_jit(p, {out_shape}, Target::host());
        Buffer<float> x(x_shape), w(w_shape), got(out_shape);
        x.fill_random(1);
        w.fill_random(2);
        ASSERT_EQ(k.call({x, w, got}), 0);
        Buffer<> ref = evaluate_reference(out.func(), out_shape, {{X, x}, {W, w}});
        Comparison c = compare(got, ref, Tolerance::for_type(Float(32), s.in_channels * 9));
        EXPECT_TRUE(c.equal) << (s.nhwc ? "NHWC " : "NCHW ") << s.batch << "x" << s.in_channels << "x" << s.height << "x"
                             << s.width << " -> " << s.out_channels << ": " << c.message;
    }
}
