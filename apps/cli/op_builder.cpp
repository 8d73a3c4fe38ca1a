#include "op_builder.h"

#include <tessera/codegen/host_schedules.h>

#include "cli_args.h"

namespace tessera::cli {

namespace {

struct OpSpec {
    const char *name;
    const char *summary;
    std::vector<std::pair<std::string, std::string>> keys; ///< key, default
};

const std::vector<OpSpec> &specs() {
    static const std::vector<OpSpec> s = {
        {"matmul", "C[M,N] = A[M,K] · B[K,N]", {{"M", "256"}, {"N", "256"}, {"K", "256"}, {"dtype", "fp32"}}},
        {"conv2d", "2-D convolution, weights OIHW (nchw) or HWIO (nhwc)",
         {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"O", "64"}, {"KH", "3"}, {"KW", "3"}, {"stride", "1"},
          {"pad", "1"}, {"groups", "1"}, {"layout", "nchw"}, {"dtype", "fp32"}}},
        {"depthwise_conv2d", "depthwise 2-D convolution (groups = channels)",
         {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"KH", "3"}, {"KW", "3"}, {"stride", "1"}, {"pad", "1"},
          {"layout", "nchw"}, {"dtype", "fp32"}}},
        {"softmax", "softmax over the last axis of x[rows, cols]", {{"rows", "256"}, {"cols", "1024"}, {"dtype", "fp32"}}},
        {"layernorm", "layer normalisation over the last axis of x[rows, cols]", {{"rows", "256"}, {"cols", "1024"}, {"dtype", "fp32"}}},
        {"transpose", "x[batch, rows, cols] -> [batch, cols, rows] (the chips: SXM transposes)",
         {{"batch", "1"}, {"rows", "256"}, {"cols", "256"}, {"dtype", "fp32"}}},
        {"nchw_to_nhwc", "reformat an image x[N, C, H, W] into [N, H, W, C] (the chips: SXM transposes)",
         {{"N", "1"}, {"C", "64"}, {"H", "56"}, {"W", "56"}, {"dtype", "fp32"}}},
        {"attention", "softmax(Q·Kᵀ/√D)·V with Q, K, V [heads, L, D]; causal=1 masks keys after the query",
         {{"heads", "4"}, {"L", "128"}, {"D", "64"}, {"causal", "0"}, {"dtype", "fp32"}}},
    };
    return s;
}

Expr e(int64_t v) { return Expr(static_cast<int>(v)); }

Buffer<> random_buffer(Type t, std::vector<int64_t> shape, uint64_t seed) {
    Buffer<> b(t, std::move(shape));
    b.fill_random(seed);
    return b;
}

} // namespace

std::string op_usage() {
    std::string s = "ops (key=value, defaults shown):\n";
    for (const OpSpec &o : specs()) {
        s += "  " + std::string(o.name) + ": " + o.summary + "\n     ";
        for (const auto &[k, v] : o.keys) s += " " + k + "=" + v;
        s += "\n";
    }
    return s;
}

OpInstance build_op(const std::string &op, const std::vector<std::string> &key_values, uint64_t seed) {
    const OpSpec *spec = nullptr;
    std::string known;
    for (const OpSpec &o : specs()) {
        if (op == o.name) spec = &o;
        known += (known.empty() ? "" : ", ") + std::string(o.name);
    }
    if (!spec) throw UsageError("unknown op '" + op + "'; known ops: " + known);
    OpInstance inst;
    inst.op = op;
    for (const auto &[k, v] : spec->keys) inst.params[k] = v;
    for (const std::string &kv : key_values) {
        size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw UsageError("'" + kv + "' is not of the form key=value");
        std::string key = kv.substr(0, eq);
        if (!inst.params.count(key)) {
            std::string keys;
            for (const auto &[k, v] : spec->keys) keys += (keys.empty() ? "" : ", ") + k;
            throw UsageError("op " + op + " has no parameter '" + key + "'; its parameters are " + keys);
        }
        inst.params[key] = kv.substr(eq + 1);
    }
    for (const auto &[k, v] : inst.params) {
        if (k == "dtype" || k == "layout") continue;
        try {
            size_t used = 0;
            long long n = std::stoll(v, &used);
            if (used != v.size() || n < 0) throw std::invalid_argument(v);
            inst.sizes[k] = n;
        } catch (const std::exception &) {
            throw UsageError("parameter " + k + "=" + v + " of op " + op + " must be a non-negative integer");
        }
    }
    inst.dtype = Type::parse(inst.params["dtype"]);
    const auto &z = inst.sizes;
    auto size = [&](const char *k) { return z.at(k); };

    if (op == "matmul") {
        const int64_t M = size("M"), N = size("N"), K = size("K");
        Input A(inst.dtype, {e(M), e(K)}, "A"), B(inst.dtype, {e(K), e(N)}, "B");
        inst.pipeline = Pipeline(ops::matmul(A, B).func());
        inst.output_shapes = {{M, N}};
        inst.bindings = {{A, random_buffer(inst.dtype, {M, K}, seed)}, {B, random_buffer(inst.dtype, {K, N}, seed + 1)}};
        inst.flops = 2.0 * M * N * K;
        inst.reduction_length = K;
    } else if (op == "conv2d" || op == "depthwise_conv2d") {
        const bool depthwise = op == "depthwise_conv2d";
        const std::string layout = inst.params["layout"];
        if (layout != "nchw" && layout != "nhwc") throw UsageError("layout=" + layout + " must be nchw or nhwc");
        const bool nhwc = layout == "nhwc";
        const int64_t N = size("N"), C = size("C"), H = size("H"), W = size("W"), KH = size("KH"), KW = size("KW");
        const int64_t O = depthwise ? C : size("O"), groups = depthwise ? C : size("groups");
        const int64_t stride = size("stride"), pad = size("pad");
        if (groups == 0 || C % groups != 0) throw UsageError("groups=" + std::to_string(groups) + " must divide C=" + std::to_string(C));
        const int64_t Cg = C / groups;
        std::vector<int64_t> in_shape = nhwc ? std::vector<int64_t>{N, H, W, C} : std::vector<int64_t>{N, C, H, W};
        std::vector<int64_t> w_shape = nhwc ? std::vector<int64_t>{KH, KW, Cg, O} : std::vector<int64_t>{O, Cg, KH, KW};
        std::vector<Expr> in_e, w_e;
        for (int64_t v : in_shape) in_e.push_back(e(v));
        for (int64_t v : w_shape) w_e.push_back(e(v));
        Input X(inst.dtype, in_e, "X"), Wt(inst.dtype, w_e, "W");
        ops::Conv2dOptions o;
        o.stride = {static_cast<int>(stride), static_cast<int>(stride)};
        o.padding = ops::Padding2d(static_cast<int>(pad));
        o.groups = static_cast<int>(groups);
        o.layout = nhwc ? ops::Layout::NHWC : ops::Layout::NCHW;
        ops::Tensor out = ops::conv2d(X, Wt, o);
        inst.pipeline = Pipeline(out.func());
        std::vector<int64_t> out_shape;
        for (const Expr &d : out.shape()) out_shape.push_back(d.as<IntImm>() ? d.as<IntImm>()->value : 0);
        inst.output_shapes = {out_shape};
        inst.bindings = {{X, random_buffer(inst.dtype, in_shape, seed)}, {Wt, random_buffer(inst.dtype, w_shape, seed + 1)}};
        int64_t outputs = 1;
        for (int64_t v : out_shape) outputs *= v;
        inst.flops = 2.0 * outputs * Cg * KH * KW;
        inst.reduction_length = Cg * KH * KW;
        inst.sizes["OH"] = nhwc ? out_shape[1] : out_shape[2];
        inst.sizes["OW"] = nhwc ? out_shape[2] : out_shape[3];
        inst.sizes["O"] = O;
    } else if (op == "softmax" || op == "layernorm") {
        const int64_t R = size("rows"), Cn = size("cols");
        Input X(inst.dtype, {e(R), e(Cn)}, "X");
        ops::Tensor y = op == "softmax" ? ops::softmax(X) : ops::layernorm(X);
        inst.pipeline = Pipeline(y.func());
        inst.output_shapes = {{R, Cn}};
        inst.bindings = {{X, random_buffer(inst.dtype, {R, Cn}, seed)}};
        inst.flops = (op == "softmax" ? 5.0 : 8.0) * R * Cn;
        inst.reduction_length = Cn;
    } else if (op == "transpose" || op == "nchw_to_nhwc") {
        const bool image = op == "nchw_to_nhwc";
        const std::vector<int64_t> in_shape = image ? std::vector<int64_t>{size("N"), size("C"), size("H"), size("W")}
                                                    : std::vector<int64_t>{size("batch"), size("rows"), size("cols")};
        std::vector<Expr> in_e;
        for (int64_t v : in_shape) in_e.push_back(e(v));
        Input X(inst.dtype, in_e, "X");
        ops::Tensor y = image ? ops::permute(X, {0, 2, 3, 1}) : ops::transpose(X);
        inst.pipeline = Pipeline(y.func());
        inst.output_shapes = {y.concrete_shape()};
        inst.bindings = {{X, random_buffer(inst.dtype, in_shape, seed)}};
        inst.flops = 0; // pure data movement
    } else if (op == "attention") {
        const int64_t Hh = size("heads"), L = size("L"), D = size("D");
        Input Q(inst.dtype, {e(Hh), e(L), e(D)}, "Q"), Kt(inst.dtype, {e(Hh), e(L), e(D)}, "K"), V(inst.dtype, {e(Hh), e(L), e(D)}, "V");
        ops::AttentionOptions o;
        o.causal = size("causal") != 0;
        ops::Tensor y = ops::scaled_dot_product_attention(Q, Kt, V, o);
        inst.pipeline = Pipeline(y.func());
        inst.output_shapes = {{Hh, L, D}};
        inst.bindings = {{Q, random_buffer(inst.dtype, {Hh, L, D}, seed)},
                         {Kt, random_buffer(inst.dtype, {Hh, L, D}, seed + 1)},
                         {V, random_buffer(inst.dtype, {Hh, L, D}, seed + 2)}};
        inst.flops = 4.0 * Hh * L * L * D;
        inst.reduction_length = std::max(L, D);
    }
    return inst;
}

void apply_host_library_schedule(const OpInstance &op) {
    const auto &z = op.sizes;
    if (op.op == "matmul") {
        host_schedules::matmul(op.pipeline, z.at("M"), z.at("N"), z.at("K"));
    } else if (op.op == "conv2d" || op.op == "depthwise_conv2d") {
        host_schedules::conv2d(op.pipeline, op.params.at("layout") == "nhwc", z.at("O"), z.at("OH"), z.at("OW"),
                               op.op == "depthwise_conv2d" || (z.count("groups") && z.at("groups") > 1));
    } else if (op.op != "transpose" && op.op != "nchw_to_nhwc") { // data movement keeps the default schedule
        host_schedules::rowwise(op.pipeline);
    }
}

} // namespace tessera::cli
