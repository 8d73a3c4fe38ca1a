// The operator registry (registry.h): one entry per op of tessera::ops, each a list of typed
// parameters and a builder. Parameters are validated here, where they enter, so every consumer
// (the CLI, benchmarks, tests, the tuner) refuses a bad size the same way before any backend
// sees it.
#include "tessera/ops/registry.h"

#include <cmath>
#include <limits>
#include <optional>

#include "tessera/error.h"
#include "tessera/limits.h"
#include "tessera/ops.h"

namespace tessera::ops {

int64_t max_extent() { return limits::kMaxExtent; }

std::string OpParam::describe() const {
    std::string s = name + "=" + default_value;
    if (kind == Kind::Choice) {
        std::string words;
        for (const std::string &c : choices) words += (words.empty() ? "" : "|") + c;
        s += " (" + words + ")";
    }
    return s + "  " + help;
}

namespace {

using Kind = OpParam::Kind;

OpParam extent(std::string name, int64_t def, std::string help) { return {std::move(name), Kind::Extent, std::to_string(def), std::move(help), {}, 1, max_extent()}; }
OpParam count(std::string name, int64_t def, std::string help) { return {std::move(name), Kind::Count, std::to_string(def), std::move(help), {}, 0, max_extent()}; }
OpParam flag(std::string name, std::string help) { return {std::move(name), Kind::Integer, "0", std::move(help), {}, 0, 1}; }
OpParam integer(std::string name, int64_t def, int64_t lo, int64_t hi, std::string help) { return {std::move(name), Kind::Integer, std::to_string(def), std::move(help), {}, lo, hi}; }
OpParam real(std::string name, std::string def, std::string help) { return {std::move(name), Kind::Real, std::move(def), std::move(help), {}, 0, 0}; }
OpParam dtype(std::string def = "fp32") { return {"dtype", Kind::Dtype, std::move(def), "element type of the inputs", {}, 0, 0}; }
OpParam choice(std::string name, std::vector<std::string> words, std::string help) {
    std::string def = words.at(0);
    return {std::move(name), Kind::Choice, std::move(def), std::move(help), std::move(words), 0, 0};
}

/// What a builder reads its parameters through.
struct Args {
    OpInstance &inst;
    int64_t i(const std::string &k) const { return inst.sizes.at(k); }
    int n(const std::string &k) const { return static_cast<int>(inst.sizes.at(k)); }
    double r(const std::string &k) const { return std::stod(inst.params.at(k)); }
    const std::string &s(const std::string &k) const { return inst.params.at(k); }
    bool b(const std::string &k) const { return inst.sizes.at(k) != 0; }
    Type t() const { return inst.dtype; }

    /// A new input of the op's dtype (or `type`), recorded with its shape.
    Input input(const std::string &name, std::vector<int64_t> shape, bool positive = false, std::optional<Type> type = {}) const {
        std::vector<Expr> dims;
        for (int64_t d : shape) dims.push_back(Expr(static_cast<int>(d)));
        Input in(type.value_or(inst.dtype), dims, name);
        inst.inputs.push_back({in, std::move(shape), positive});
        return in;
    }
    /// The op's result; its shape must be constant (every registered op has constant shapes).
    void output(const Tensor &t) const {
        inst.pipeline = Pipeline(t.func());
        inst.output_shapes = {t.concrete_shape()};
    }
    void outputs(const std::vector<Tensor> &ts) const {
        std::vector<Func> fs;
        for (const Tensor &t : ts) {
            fs.push_back(t.func());
            inst.output_shapes.push_back(t.concrete_shape());
        }
        inst.pipeline = Pipeline(fs);
    }
    int64_t output_elements() const {
        int64_t n = 0;
        for (const auto &s : inst.output_shapes) {
            int64_t e = 1;
            for (int64_t d : s) e *= d;
            n += e;
        }
        return n;
    }
    Layout layout() const { return s("layout") == "nhwc" ? Layout::NHWC : Layout::NCHW; }
    /// [N, C, H, W] or [N, H, W, C] by the layout parameter.
    std::vector<int64_t> image(int64_t N, int64_t C, int64_t H, int64_t W) const {
        return layout() == Layout::NHWC ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
    }
};

using Builder = std::function<void(const Args &)>;

OpSpec op(std::string name, std::string summary, std::vector<OpParam> params, Builder build) {
    return {std::move(name), std::move(summary), std::move(params), [build](OpInstance &inst) { build(Args{inst}); }};
}

/// rows x cols, the shape of the row-wise and element-wise ops.
std::vector<OpParam> matrix(int64_t rows, int64_t cols, std::vector<OpParam> more = {}) {
    std::vector<OpParam> p = {extent("rows", rows, "outer extent of x"), extent("cols", cols, "inner (contiguous) extent of x")};
    p.insert(p.end(), more.begin(), more.end());
    p.push_back(dtype());
    return p;
}

std::vector<OpParam> image_params(std::vector<OpParam> more, const std::string &dtype_default = "fp32") {
    std::vector<OpParam> p = {extent("N", 1, "batch"), extent("C", 64, "channels"), extent("H", 56, "height"), extent("W", 56, "width")};
    p.insert(p.end(), more.begin(), more.end());
    p.push_back(choice("layout", {"nchw", "nhwc"}, "image layout"));
    p.push_back(dtype(dtype_default));
    return p;
}

/// An element-wise op of one operand over x[rows, cols].
OpSpec unary(const std::string &name, const std::string &summary, std::function<Tensor(const Tensor &, const Args &)> f,
             std::vector<OpParam> more = {}, bool positive = false) {
    return op(name, summary, matrix(256, 1024, std::move(more)), [f, positive](const Args &a) {
        Input x = a.input("X", {a.i("rows"), a.i("cols")}, positive);
        a.output(f(x, a));
        a.inst.flops = static_cast<double>(a.output_elements());
    });
}

/// An element-wise op of two operands; b is [cols] (broadcast along the rows) when broadcast=1.
OpSpec binary(const std::string &name, const std::string &summary, Tensor (*f)(const Tensor &, const Tensor &, const std::string &),
              bool positive_b = false) {
    return op(name, summary, matrix(256, 1024, {flag("broadcast", "1: b is [cols], added to every row")}), [f, positive_b, name](const Args &a) {
        Input x = a.input("A", {a.i("rows"), a.i("cols")});
        Input y = a.b("broadcast") ? a.input("B", {a.i("cols")}, positive_b) : a.input("B", {a.i("rows"), a.i("cols")}, positive_b);
        a.output(f(x, y, name));
        a.inst.flops = static_cast<double>(a.output_elements());
    });
}

/// A reduction of x[rows, cols] along one axis.
OpSpec reduction(const std::string &name, const std::string &summary,
                 Tensor (*f)(const Tensor &, const std::vector<int> &, bool, const std::string &)) {
    return op(name, summary,
              matrix(256, 1024, {integer("axis", -1, -2, 1, "the axis reduced (negative counts from the end)"),
                                 flag("keepdims", "1: keep the reduced axis as extent 1")}),
              [f, name](const Args &a) {
                  Input x = a.input("X", {a.i("rows"), a.i("cols")});
                  a.output(f(x, {a.n("axis")}, a.b("keepdims"), name));
                  const int axis = a.n("axis") < 0 ? a.n("axis") + 2 : a.n("axis");
                  a.inst.reduction_length = axis == 0 ? a.i("rows") : a.i("cols");
                  a.inst.flops = static_cast<double>(a.i("rows") * a.i("cols"));
              });
}

Tensor softmax_of(const Tensor &x, const Args &) { return softmax(x); }

std::vector<OpSpec> make_registry() {
    std::vector<OpSpec> r;
    r.push_back(op("matmul", "C[M,N] = A[M,K] · B[K,N] (batch > 1: [batch, M, N]; transposes read A as [K,M], B as [N,K])",
                   {extent("M", 256, "rows of A and C"), extent("N", 256, "columns of B and C"), extent("K", 256, "the reduction"),
                    extent("batch", 1, "leading batch extent (> 1 makes A, B, C 3-D)"), flag("transpose_a", "1: A is [K, M]"),
                    flag("transpose_b", "1: B is [N, K]"), dtype()},
                   [](const Args &a) {
                       const int64_t M = a.i("M"), N = a.i("N"), K = a.i("K"), B = a.i("batch");
                       std::vector<int64_t> as = a.b("transpose_a") ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K};
                       std::vector<int64_t> bs = a.b("transpose_b") ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N};
                       if (B > 1) {
                           as.insert(as.begin(), B);
                           bs.insert(bs.begin(), B);
                       }
                       Input A = a.input("A", as), Bm = a.input("B", bs);
                       MatmulOptions o;
                       o.transpose_a = a.b("transpose_a");
                       o.transpose_b = a.b("transpose_b");
                       a.output(matmul(A, Bm, o));
                       a.inst.flops = 2.0 * B * M * N * K;
                       a.inst.reduction_length = K;
                   }));
    r.push_back(op("gemm", "Y[M,N] = alpha · A[M,K] · B[K,N] + beta · C[N] (ONNX Gemm with a bias row)",
                   {extent("M", 256, "rows"), extent("N", 256, "columns"), extent("K", 256, "the reduction"),
                    real("alpha", "1", "scale of the product"), real("beta", "1", "scale of the bias"),
                    flag("transpose_a", "1: A is [K, M]"), flag("transpose_b", "1: B is [N, K]"), flag("bias", "1: add beta · C"), dtype()},
                   [](const Args &a) {
                       const int64_t M = a.i("M"), N = a.i("N"), K = a.i("K");
                       Input A = a.input("A", a.b("transpose_a") ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
                       Input B = a.input("B", a.b("transpose_b") ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N});
                       GemmOptions o;
                       o.alpha = a.r("alpha");
                       o.beta = a.r("beta");
                       o.transpose_a = a.b("transpose_a");
                       o.transpose_b = a.b("transpose_b");
                       a.output(a.b("bias") ? gemm(A, B, a.input("C", {N}), o) : gemm(A, B, Tensor(), o));
                       a.inst.flops = 2.0 * M * N * K;
                       a.inst.reduction_length = K;
                   }));
    auto conv_like = [](bool depthwise) {
        return [depthwise](const Args &a) {
            const int64_t N = a.i("N"), C = a.i("C"), KH = a.i("KH"), KW = a.i("KW");
            const int64_t O = depthwise ? C : a.i("O"), groups = depthwise ? C : a.i("groups");
            if (C % groups != 0 || O % groups != 0)
                throw Error("op " + a.inst.op + ": groups=" + std::to_string(groups) + " must divide C=" + std::to_string(C) +
                            " and O=" + std::to_string(O));
            const int64_t Cg = C / groups;
            const bool nhwc = a.layout() == Layout::NHWC;
            Input X = a.input("X", a.image(N, C, a.i("H"), a.i("W")));
            Input Wt = a.input("W", nhwc ? std::vector<int64_t>{KH, KW, Cg, O} : std::vector<int64_t>{O, Cg, KH, KW});
            Conv2dOptions o;
            o.stride = {a.n("stride"), a.n("stride")};
            o.padding = Padding2d(a.n("pad"));
            o.dilation = {a.n("dilation"), a.n("dilation")};
            o.groups = static_cast<int>(groups);
            o.layout = a.layout();
            o.name = depthwise ? "depthwise_conv2d" : "conv2d";
            a.output(!depthwise && a.b("bias") ? conv2d(X, Wt, a.input("bias", {O}), o) : conv2d(X, Wt, o));
            a.inst.flops = 2.0 * static_cast<double>(a.output_elements()) * Cg * KH * KW;
            a.inst.reduction_length = Cg * KH * KW;
            const std::vector<int64_t> &out = a.inst.output_shapes[0];
            a.inst.sizes["O"] = O;
            a.inst.sizes["OH"] = nhwc ? out[1] : out[2];
            a.inst.sizes["OW"] = nhwc ? out[2] : out[3];
        };
    };
    r.push_back(op("conv2d", "2-D convolution, weights OIHW (nchw) or HWIO (nhwc)",
                   image_params({extent("O", 64, "output channels"), extent("KH", 3, "kernel height"), extent("KW", 3, "kernel width"),
                                 extent("stride", 1, "step between windows"), count("pad", 1, "zero padding on every side"),
                                 extent("dilation", 1, "spacing between taps"), extent("groups", 1, "channel groups"),
                                 flag("bias", "1: add a bias per output channel")}),
                   conv_like(false)));
    r.push_back(op("depthwise_conv2d", "depthwise 2-D convolution (groups = channels)",
                   image_params({extent("KH", 3, "kernel height"), extent("KW", 3, "kernel width"), extent("stride", 1, "step between windows"),
                                 count("pad", 1, "zero padding on every side"), extent("dilation", 1, "spacing between taps")}),
                   conv_like(true)));
    auto pool = [](bool average) {
        return [average](const Args &a) {
            Input X = a.input("X", a.image(a.i("N"), a.i("C"), a.i("H"), a.i("W")));
            Pool2dOptions o;
            o.kernel = {a.n("kernel"), a.n("kernel")};
            o.stride = {a.n("stride"), a.n("stride")};
            o.padding = Padding2d(a.n("pad"));
            o.layout = a.layout();
            a.output(average ? avg_pool2d(X, o) : max_pool2d(X, o));
            a.inst.flops = static_cast<double>(a.output_elements()) * a.i("kernel") * a.i("kernel");
            a.inst.reduction_length = a.i("kernel") * a.i("kernel");
        };
    };
    const std::vector<OpParam> window = {extent("kernel", 2, "window height and width"), extent("stride", 2, "step between windows"),
                                         count("pad", 0, "padding on every side (at most half the window)")};
    r.push_back(op("max_pool2d", "max pooling of a 4-D image", image_params(window), pool(false)));
    r.push_back(op("avg_pool2d", "average pooling of a 4-D image (padding left out of the divisor)", image_params(window), pool(true)));
    r.push_back(op("global_avg_pool2d", "mean over the spatial dimensions of a 4-D image", image_params({}), [](const Args &a) {
        Input X = a.input("X", a.image(a.i("N"), a.i("C"), a.i("H"), a.i("W")));
        a.output(global_avg_pool2d(X, a.layout()));
        a.inst.flops = static_cast<double>(a.i("N") * a.i("C") * a.i("H") * a.i("W"));
        a.inst.reduction_length = a.i("H") * a.i("W");
    }));
    r.push_back(binary("add", "element-wise a + b", add));
    r.push_back(binary("sub", "element-wise a - b", sub));
    r.push_back(binary("mul", "element-wise a · b", mul));
    r.push_back(binary("div", "element-wise a / b (b drawn away from zero)", div, true));
    r.push_back(unary("relu", "max(x, 0)", [](const Tensor &x, const Args &) { return relu(x); }));
    r.push_back(unary("leaky_relu", "x > 0 ? x : alpha · x",
                      [](const Tensor &x, const Args &a) { return leaky_relu(x, a.r("alpha")); }, {real("alpha", "0.01", "slope below zero")}));
    r.push_back(unary("gelu", "Gaussian error linear unit (exact erf form, or its tanh approximation)",
                      [](const Tensor &x, const Args &a) {
                          return gelu(x, a.s("approximation") == "tanh" ? GeluApproximation::Tanh : GeluApproximation::None);
                      },
                      {choice("approximation", {"none", "tanh"}, "erf form or tanh approximation")}));
    r.push_back(unary("sigmoid", "1 / (1 + exp(-x))", [](const Tensor &x, const Args &) { return sigmoid(x); }));
    r.push_back(unary("tanh", "hyperbolic tangent", [](const Tensor &x, const Args &) { return ops::tanh(x); }));
    r.push_back(unary("exp", "exponential", [](const Tensor &x, const Args &) { return ops::exp(x); }));
    r.push_back(unary("sqrt", "square root (x drawn positive)", [](const Tensor &x, const Args &) { return ops::sqrt(x); }, {}, true));
    r.push_back(unary("clip", "min(max(x, lo), hi)", [](const Tensor &x, const Args &a) { return clip(x, a.r("lo"), a.r("hi")); },
                      {real("lo", "-0.5", "lower bound"), real("hi", "0.5", "upper bound")}));
    r.push_back(op("softmax", "softmax over the last axis of x[rows, cols]", matrix(256, 1024), [](const Args &a) {
        a.output(softmax_of(a.input("X", {a.i("rows"), a.i("cols")}), a));
        a.inst.flops = 5.0 * static_cast<double>(a.output_elements());
        a.inst.reduction_length = a.i("cols");
    }));
    r.push_back(op("log_softmax", "log(softmax(x)) over the last axis of x[rows, cols]", matrix(256, 1024), [](const Args &a) {
        a.output(log_softmax(a.input("X", {a.i("rows"), a.i("cols")})));
        a.inst.flops = 5.0 * static_cast<double>(a.output_elements());
        a.inst.reduction_length = a.i("cols");
    }));
    auto norm = [](bool rms) {
        return [rms](const Args &a) {
            Input X = a.input("X", {a.i("rows"), a.i("cols")});
            Tensor gamma, beta;
            if (a.b("affine")) {
                gamma = a.input("gamma", {a.i("cols")});
                if (!rms) beta = a.input("beta", {a.i("cols")});
            }
            a.output(rms ? rmsnorm(X, gamma, 1, a.r("epsilon")) : layernorm(X, gamma, beta, 1, a.r("epsilon")));
            a.inst.flops = (rms ? 4.0 : 8.0) * static_cast<double>(a.output_elements());
            a.inst.reduction_length = a.i("cols");
        };
    };
    r.push_back(op("layernorm", "layer normalisation over the last axis of x[rows, cols]",
                   matrix(256, 1024, {flag("affine", "1: scale by gamma and shift by beta [cols]"), real("epsilon", "1e-5", "added to the variance")}),
                   norm(false)));
    r.push_back(op("rmsnorm", "RMS normalisation over the last axis of x[rows, cols]",
                   matrix(256, 1024, {flag("affine", "1: scale by gamma [cols]"), real("epsilon", "1e-6", "added to the mean square")}),
                   norm(true)));
    r.push_back(op("batchnorm", "batch normalisation with fixed statistics (inference) of a 4-D image",
                   image_params({real("epsilon", "1e-5", "added to the variance")}), [](const Args &a) {
                       const int64_t C = a.i("C");
                       Input X = a.input("X", a.image(a.i("N"), C, a.i("H"), a.i("W")));
                       Input scale = a.input("scale", {C}), bias = a.input("bias", {C}), mean = a.input("mean", {C});
                       Input var = a.input("var", {C}, true);
                       a.output(batchnorm(X, scale, bias, mean, var, a.r("epsilon"), a.layout() == Layout::NHWC ? -1 : 1));
                       a.inst.flops = 4.0 * static_cast<double>(a.output_elements());
                   }));
    r.push_back(reduction("reduce_sum", "sum of x[rows, cols] along an axis", reduce_sum));
    r.push_back(reduction("reduce_mean", "mean of x[rows, cols] along an axis", reduce_mean));
    r.push_back(reduction("reduce_max", "maximum of x[rows, cols] along an axis", reduce_max));
    r.push_back(reduction("reduce_min", "minimum of x[rows, cols] along an axis", reduce_min));
    r.push_back(op("transpose", "x[batch, rows, cols] -> [batch, cols, rows] (the chips: SXM transposes)",
                   {extent("batch", 1, "leading extent"), extent("rows", 256, "rows of x"), extent("cols", 256, "columns of x"), dtype()},
                   [](const Args &a) { a.output(transpose(a.input("X", {a.i("batch"), a.i("rows"), a.i("cols")}))); }));
    r.push_back(op("nchw_to_nhwc", "reformat an image x[N, C, H, W] into [N, H, W, C] (the chips: SXM transposes)",
                   {extent("N", 1, "batch"), extent("C", 64, "channels"), extent("H", 56, "height"), extent("W", 56, "width"), dtype()},
                   [](const Args &a) { a.output(permute(a.input("X", {a.i("N"), a.i("C"), a.i("H"), a.i("W")}), {0, 2, 3, 1})); }));
    r.push_back(op("reshape", "x[rows, cols] read as [rows · cols / new_cols, new_cols]",
                   matrix(64, 256, {extent("new_cols", 128, "inner extent of the result (must divide rows · cols)")}), [](const Args &a) {
                       const int64_t total = a.i("rows") * a.i("cols"), inner = a.i("new_cols");
                       if (total % inner != 0)
                           throw Error("op reshape: new_cols=" + std::to_string(inner) + " must divide rows · cols = " + std::to_string(total));
                       a.output(reshape(a.input("X", {a.i("rows"), a.i("cols")}), {total / inner, inner}));
                   }));
    r.push_back(op("flatten", "x[N, C, H, W] -> [N, C · H · W]",
                   {extent("N", 2, "batch"), extent("C", 16, "channels"), extent("H", 8, "height"), extent("W", 8, "width"), dtype()},
                   [](const Args &a) { a.output(flatten(a.input("X", {a.i("N"), a.i("C"), a.i("H"), a.i("W")}))); }));
    r.push_back(op("concat", "a[rows, cols_a] and b[rows, cols_b] side by side -> [rows, cols_a + cols_b]",
                   {extent("rows", 256, "rows of both"), extent("cols_a", 256, "columns of a"), extent("cols_b", 128, "columns of b"), dtype()},
                   [](const Args &a) {
                       a.output(concat({a.input("A", {a.i("rows"), a.i("cols_a")}), a.input("B", {a.i("rows"), a.i("cols_b")})}, 1));
                   }));
    r.push_back(op("attention", "softmax(Q·Kᵀ/√D)·V with Q, K, V [heads, L, D]; causal=1 masks keys after the query",
                   {extent("heads", 4, "batch of heads"), extent("L", 128, "sequence length"), extent("D", 64, "head dimension"),
                    flag("causal", "1: mask keys after the query"), dtype()},
                   [](const Args &a) {
                       const int64_t H = a.i("heads"), L = a.i("L"), D = a.i("D");
                       Input Q = a.input("Q", {H, L, D}), K = a.input("K", {H, L, D}), V = a.input("V", {H, L, D});
                       AttentionOptions o;
                       o.causal = a.b("causal");
                       a.output(scaled_dot_product_attention(Q, K, V, o));
                       a.inst.flops = 4.0 * H * L * L * D;
                       a.inst.reduction_length = std::max(L, D);
                   }));
    r.push_back(op("lstm_cell", "one step of an LSTM cell (gates i, f, g, o): outputs h' and c' [batch, hidden]",
                   {extent("batch", 8, "rows of x, h and c"), extent("input", 128, "features of x"), extent("hidden", 128, "features of h and c"),
                    flag("bias", "1: add b_ih and b_hh"), dtype()},
                   [](const Args &a) {
                       const int64_t N = a.i("batch"), I = a.i("input"), H = a.i("hidden");
                       Input x = a.input("x", {N, I}), h = a.input("h", {N, H}), c = a.input("c", {N, H});
                       Input w_ih = a.input("w_ih", {4 * H, I}), w_hh = a.input("w_hh", {4 * H, H});
                       Tensor b_ih, b_hh;
                       if (a.b("bias")) {
                           b_ih = a.input("b_ih", {4 * H});
                           b_hh = a.input("b_hh", {4 * H});
                       }
                       LstmState s = lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh);
                       a.outputs({s.h, s.c});
                       a.inst.flops = 2.0 * N * 4 * H * (I + H);
                       a.inst.reduction_length = std::max(I, H);
                   }));
    return r;
}

/// Parses `text` as parameter `p` of `op`, recording it in `inst`; throws naming both.
void parse_param(const std::string &op, const OpParam &p, const std::string &text, OpInstance &inst) {
    auto fail = [&](const std::string &why) { throw Error("op " + op + ": parameter " + p.name + "=" + text + " " + why); };
    switch (p.kind) {
    case Kind::Extent:
    case Kind::Count:
    case Kind::Integer: {
        size_t used = 0;
        long long v = 0;
        try {
            v = std::stoll(text, &used);
        } catch (const std::out_of_range &) {
            fail("is out of range: the largest allowed is " + std::to_string(p.max));
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != text.size() || text.empty()) fail("is not an integer");
        if (v < p.min || v > p.max) {
            if (p.kind == Kind::Extent && v < 1) fail("must be at least 1 (an extent)");
            if (p.kind == Kind::Count && v < 0) fail("must be at least 0");
            fail("is out of range: allowed " + std::to_string(p.min) + " to " + std::to_string(p.max));
        }
        inst.sizes[p.name] = v;
        break;
    }
    case Kind::Real: {
        size_t used = 0;
        double v = 0;
        try {
            v = std::stod(text, &used);
        } catch (const std::exception &) {
            used = 0;
        }
        if (used != text.size() || text.empty() || !std::isfinite(v)) fail("is not a finite number");
        break;
    }
    case Kind::Dtype:
        try {
            inst.dtype = Type::parse(text);
        } catch (const Error &e) {
            fail("is not a dtype: " + std::string(e.what()));
        }
        break;
    case Kind::Choice: {
        std::string words;
        for (const std::string &c : p.choices) {
            if (c == text) return;
            words += (words.empty() ? "" : ", ") + c;
        }
        fail("is not one of " + words);
    }
    }
}

/// Fills `b` with values >= 0.5 (floats) or >= 1 (integers) drawn from `seed`.
void fill_positive(Buffer<> &b, uint64_t seed) {
    b.fill_random(seed);
    std::vector<int64_t> c(b.shape().size(), 0);
    for (int64_t n = b.number_of_elements(); n > 0; --n) {
        if (b.type().is_float()) b.set_from_double(c, std::fabs(b.get_as_double(c)) + 0.5);
        else b.set_from_double(c, static_cast<double>(std::llabs(b.get_as_int(c)) + 1));
        for (int d = static_cast<int>(c.size()) - 1; d >= 0; --d) {
            if (++c[d] < b.shape()[d]) break;
            c[d] = 0;
        }
    }
}

} // namespace

const std::vector<OpSpec> &op_registry() {
    static const std::vector<OpSpec> r = make_registry();
    return r;
}

const OpSpec &find_op(const std::string &name) {
    std::string known;
    for (const OpSpec &s : op_registry()) {
        if (s.name == name) return s;
        known += (known.empty() ? "" : ", ") + s.name;
    }
    throw Error("unknown op '" + name + "'; the ops are " + known);
}

OpInstance build_op(const std::string &name, const std::map<std::string, std::string> &params) {
    const OpSpec &spec = find_op(name);
    OpInstance inst;
    inst.op = name;
    inst.dtype = Float(32);
    for (const OpParam &p : spec.params) inst.params[p.name] = p.default_value;
    for (const auto &[key, value] : params) {
        if (!inst.params.count(key)) {
            std::string keys;
            for (const OpParam &p : spec.params) keys += (keys.empty() ? "" : ", ") + p.name;
            throw Error("op " + name + " has no parameter '" + key + "'; its parameters are " + keys);
        }
        inst.params[key] = value;
    }
    for (const OpParam &p : spec.params) parse_param(name, p, inst.params.at(p.name), inst);
    spec.build(inst);
    return inst;
}

OpInstance build_op_from_words(const std::string &name, const std::vector<std::string> &key_values) {
    std::map<std::string, std::string> params;
    for (const std::string &kv : key_values) {
        const size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw Error("op " + name + ": '" + kv + "' is not of the form key=value");
        const std::string key = kv.substr(0, eq);
        if (params.count(key)) throw Error("op " + name + ": parameter " + key + " is given twice");
        params[key] = kv.substr(eq + 1);
    }
    return build_op(name, params);
}

Bindings OpInstance::random_inputs(uint64_t seed) const {
    Bindings b;
    for (size_t i = 0; i < inputs.size(); ++i) {
        Buffer<> data(inputs[i].input.type(), inputs[i].shape);
        if (inputs[i].positive) fill_positive(data, seed + i);
        else data.fill_random(seed + i);
        b.emplace_back(inputs[i].input, data);
    }
    return b;
}

std::string OpInstance::description() const {
    std::string s = op;
    for (const auto &[k, v] : params) s += " " + k + "=" + v;
    return s;
}

} // namespace tessera::ops
