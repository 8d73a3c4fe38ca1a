// The op words of `tessera run OP key=value...` up to compile: the input is split into words,
// the first names an op, the others set its parameters; the op is built with tessera::ops and
// lowered for the interpreter. Anything refused must be a tessera::Error — in particular sizes
// that are zero, negative, beyond 32 bits, or whose products overflow.
#include <charconv>
#include <map>
#include <sstream>

#include "fuzz_util.h"
#include "tessera/lower.h"
#include "tessera/ops.h"

using namespace tessera;

namespace {

/// A parameter as the CLI reads it: a whole integer that fits 64 bits, or a tessera::Error.
int64_t integer(const std::map<std::string, std::string> &kv, const std::string &key, int64_t def) {
    auto it = kv.find(key);
    if (it == kv.end()) return def;
    int64_t v = 0;
    auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (r.ec != std::errc() || r.ptr != it->second.data() + it->second.size())
        throw Error("parameter " + key + "=" + it->second + " is not an integer");
    return v;
}

/// An Input of these extents; an extent that is no Int(32) is refused here, as the registry
/// does, and everything else is left to the op.
Input input(Type t, const std::vector<int64_t> &shape, const std::string &name) {
    std::vector<Expr> dims;
    for (int64_t d : shape) {
        if (d < std::numeric_limits<int32_t>::min() || d > std::numeric_limits<int32_t>::max())
            throw Error("extent " + std::to_string(d) + " of " + name + " does not fit 32 bits");
        dims.push_back(Expr(static_cast<int>(d)));
    }
    return Input(t, dims, name);
}

ops::Tensor build(const std::string &op, const std::map<std::string, std::string> &kv) {
    const Type t = Type::parse(kv.count("dtype") ? kv.at("dtype") : "fp32");
    auto i = [&](const std::string &k, int64_t def) { return integer(kv, k, def); };
    if (op == "matmul") return ops::matmul(input(t, {i("M", 8), i("K", 8)}, "A"), input(t, {i("K", 8), i("N", 8)}, "B"));
    if (op == "softmax") return ops::softmax(input(t, {i("rows", 4), i("cols", 8)}, "X"));
    if (op == "layernorm") return ops::layernorm(input(t, {i("rows", 4), i("cols", 8)}, "X"));
    if (op == "transpose") return ops::transpose(input(t, {i("batch", 1), i("rows", 4), i("cols", 8)}, "X"));
    if (op == "conv2d") {
        ops::Conv2dOptions o;
        const int64_t stride = i("stride", 1), pad = i("pad", 0), groups = i("groups", 1);
        if (stride > 1 << 20 || pad > 1 << 20 || groups > 1 << 20 || groups < 1)
            throw Error("stride, pad and groups must be small positive integers");
        o.stride = {int(stride), int(stride)};
        o.padding = ops::Padding2d(int(pad));
        o.groups = int(groups);
        const int64_t C = i("C", 4);
        return ops::conv2d(input(t, {i("N", 1), C, i("H", 6), i("W", 6)}, "X"),
                           input(t, {i("O", 4), C / groups, i("KH", 3), i("KW", 3)}, "W"), o);
    }
    if (op == "attention") {
        const int64_t H = i("heads", 1), L = i("L", 4), D = i("D", 4);
        return ops::scaled_dot_product_attention(input(t, {H, L, D}, "Q"), input(t, {H, L, D}, "K"), input(t, {H, L, D}, "V"));
    }
    throw Error("unknown op '" + op + "'");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    std::istringstream in(std::string(reinterpret_cast<const char *>(data), size));
    std::string op, word;
    in >> op;
    std::map<std::string, std::string> kv;
    while (in >> word) {
        const size_t eq = word.find('=');
        if (eq == std::string::npos) return 0; // not a parameter word; the CLI's parser refuses it
        kv[word.substr(0, eq)] = word.substr(eq + 1);
    }
    fuzz::accepted([&] {
        ops::Tensor y = build(op, kv);
        Pipeline p(y.func());
        lower(p, Target::interpreter(), {y.concrete_shape()});
    });
    return 0;
}
