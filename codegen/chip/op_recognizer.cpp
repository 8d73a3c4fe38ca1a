// Recognition of library ops by reconstruction (op_recognizer.h).
#include "op_recognizer.h"

#include "loop_nest_ir.h"
#include "vector_epilogue.h"

#include <algorithm>
#include <map>
#include <set>

#include "gemm_pattern.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"
#include "tessera/ops.h"
#include "tessera/simplify.h"

namespace tessera::internal::chip {

namespace {

bool same_definition(const Definition &a, const Definition &b) {
    if (a.defined() != b.defined() || bool(a.rdom) != bool(b.rdom)) return false;
    if (a.rdom) {
        if (a.rdom->vars.size() != b.rdom->vars.size()) return false;
        for (size_t i = 0; i < a.rdom->vars.size(); ++i)
            if (a.rdom->vars[i].name != b.rdom->vars[i].name) return false;
    }
    const std::vector<Expr> ea = definition_exprs(a), eb = definition_exprs(b);
    if (ea.size() != eb.size()) return false;
    for (size_t i = 0; i < ea.size(); ++i)
        if (ea[i].defined() != eb[i].defined() || (ea[i].defined() && !equal(ea[i], eb[i]))) return false;
    return true;
}

/// Every floating-point constant of an Expr (candidates for epsilon and scale).
class FloatConstants : public IRVisitor {
public:
    std::set<double> values;
    using IRVisitor::visit;
    void visit(const FloatImm *f) override { values.insert(f->value); }
};

std::set<double> float_constants(const Func &f) {
    FloatConstants c;
    for (int s = 0; s < f.contents()->num_stages(); ++s)
        for (const Expr &e : definition_exprs(f.contents()->stage(s)))
            if (e.defined()) e.accept(&c);
    return c.values;
}

std::optional<Func> find_func(const Pipeline &p, const std::string &name) {
    for (const Func &f : p.functions())
        if (f.name() == name) return f;
    return std::nullopt;
}

/// A refusal of a pipeline that looks like a library op the loop nest cannot compile either
/// (attention's probabilities feed its second matmul as an expression, not a read).
[[noreturn]] void unsupported(const std::string &op, const std::string &name, const std::string &why) {
    throw Error("chip backend: " + name + " looks like ops::" + op + " but " + why);
}

std::optional<VectorOp> recognize_softmax(const Func &out, const std::vector<Input> &inputs) {
    const std::string name = out.name();
    if (inputs.size() != 1) return std::nullopt;
    const Input &x = inputs[0];
    for (int axis = x.dimensions() - 1; axis >= 0; --axis) {
        ops::Tensor rebuilt = ops::softmax(x, axis, name);
        if (!same_algorithm(out, rebuilt.func())) continue;
        // The row kernel reduces over the last axis; another axis compiles from the loop nest.
        if (axis != x.dimensions() - 1) return std::nullopt;
        VectorOp v;
        v.kind = VectorOp::Kind::Softmax;
        v.softmax = SoftmaxOp{x};
        return v;
    }
    return std::nullopt;
}

std::optional<VectorOp> recognize_layernorm(const Func &out, const std::vector<Input> &inputs) {
    const std::string name = out.name();
    std::optional<Input> x;
    for (const Input &in : inputs)
        if (!x || in.dimensions() > x->dimensions()) x = in;
    if (!x) return std::nullopt;
    std::vector<Input> params;
    for (const Input &in : inputs)
        if (in.name() != x->name()) params.push_back(in);
    std::vector<std::pair<std::optional<Input>, std::optional<Input>>> choices{{std::nullopt, std::nullopt}};
    for (const Input &a : params) {
        choices.push_back({a, std::nullopt});
        choices.push_back({std::nullopt, a});
        for (const Input &b : params)
            if (a.name() != b.name()) choices.push_back({a, b});
    }
    for (double eps : float_constants(out))
        for (int dims = 1; dims <= x->dimensions(); ++dims)
            for (auto &[gamma, beta] : choices) {
                if ((gamma ? 1 : 0) + (beta ? 1 : 0) != int(params.size())) continue;
                ops::Tensor rebuilt;
                try {
                    rebuilt = ops::layernorm(*x, gamma ? ops::Tensor(*gamma) : ops::Tensor(),
                                             beta ? ops::Tensor(*beta) : ops::Tensor(), dims, eps, name);
                } catch (const Error &) {
                    continue; // parameters of the wrong shape for this choice
                }
                if (!same_algorithm(out, rebuilt.func())) continue;
                // The row kernel normalises the last dimension; more compile from the loop nest.
                if (dims != 1) return std::nullopt;
                VectorOp v;
                v.kind = VectorOp::Kind::Layernorm;
                v.layernorm = LayernormOp{*x, gamma, beta, eps};
                return v;
            }
    return std::nullopt;
}

std::optional<VectorOp> recognize_attention(const Pipeline &p, const Func &out) {
    const std::string name = out.name();
    std::optional<Func> masked = find_func(p, name + "_masked");
    std::optional<Func> scores = find_func(p, name + "_scores");
    if (!masked || !scores) return std::nullopt;
    // Q, K, V in the order the op reads them: Q and K by the scores matmul, V by the output.
    if (scores->contents()->updates.size() != 1) return std::nullopt;
    const std::vector<Input> qk = find_inputs(scores->contents()->updates[0].value);
    std::vector<Input> v_in;
    for (const Input &in : find_inputs(std::vector<Func>{out}))
        if (qk.size() == 2 && in.name() != qk[0].name() && in.name() != qk[1].name()) v_in.push_back(in);
    if (qk.size() != 2 || v_in.size() != 1) return std::nullopt;
    for (double scale : float_constants(*masked))
        for (bool causal : {false, true}) {
            ops::AttentionOptions o;
            o.causal = causal;
            o.scale = scale;
            o.name = name;
            ops::Tensor rebuilt;
            try {
                rebuilt = ops::scaled_dot_product_attention(qk[0], qk[1], v_in[0], o);
            } catch (const Error &) {
                continue;
            }
            if (!same_algorithm(out, rebuilt.func())) continue;
            if (qk[0].dimensions() > 3)
                unsupported("scaled_dot_product_attention", name, "has " + std::to_string(qk[0].dimensions() - 2) +
                                                                       " leading dimensions; the chip kernel takes [heads, L, D] or [L, D]");
            VectorOp v;
            v.kind = VectorOp::Kind::Attention;
            v.attention = AttentionOp{qk[0], qk[1], v_in[0], causal, scale};
            return v;
        }
    unsupported("scaled_dot_product_attention", name, "its Funcs differ from the op's (the chip kernel implements "
                                                      "ops::scaled_dot_product_attention exactly, with or without the causal mask)");
}

/// The value of an index Expr with some Variables set (the rest 0).
std::optional<int64_t> eval_index(const Expr &e, const std::vector<std::string> &vars, const std::map<std::string, int64_t> &at) {
    std::vector<Expr> vals;
    for (auto &v : vars) vals.push_back(Expr(int(at.count(v) ? at.at(v) : 0)));
    return as_const_int(simplify(substitute_vars(e, vars, vals)));
}

std::optional<VectorOp> recognize_depthwise(const Func &out) {
    const FunctionContents &f = *out.contents();
    if (f.args.size() != 4 || f.updates.size() != 1 || !f.updates[0].rdom || f.updates[0].rdom->vars.size() != 3) return std::nullopt;
    const Definition &u = f.updates[0];
    const Add *add = u.value.as<Add>();
    const Mul *mul = add ? add->b.as<Mul>() : nullptr;
    auto call_of = [](const Expr &e) { // the op casts to the accumulator type unless already there
        const Cast *c = e.as<Cast>();
        return (c ? c->value : e).as<Call>();
    };
    const Call *ci = mul ? call_of(mul->a) : nullptr;
    const Call *cw = mul ? call_of(mul->b) : nullptr;
    if (!ci || !cw || cw->call_type != CallType::Input || ci->args.size() != 4) return std::nullopt;
    std::optional<Input> image;
    double pad_value = 0; // what a padded image's Func holds outside the image
    if (ci->call_type == CallType::Input) image = Input(ci->input);
    else if (ci->call_type == CallType::Func) {
        std::vector<Input> ins = find_inputs(ci->func.get()->init.value);
        if (ins.size() == 1) image = ins[0];
        if (const Select *sel = ci->func.get()->init.value.as<Select>())
            if (const std::optional<double> v = immediate(sel->false_value)) pad_value = *v;
    }
    if (!image || image->dimensions() != 4) return std::nullopt;
    const Input weights(cw->input);
    std::optional<Input> bias;
    if (std::vector<Input> b = find_inputs(f.init.value); b.size() == 1) bias = b[0];
    std::vector<std::string> vars = f.args;
    for (auto &rv : u.rdom->vars) vars.push_back(rv.name);
    for (bool nchw : {true, false}) {
        const int y = nchw ? 2 : 1, x = nchw ? 3 : 2, c = nchw ? 1 : 3;
        auto channels = as_const_int(image->shape()[size_t(c)]);
        if (!channels || *channels < 1) continue;
        const Expr &iy = ci->args[size_t(y)], &ix = ci->args[size_t(x)];
        auto top = eval_index(iy, vars, {}), left = eval_index(ix, vars, {});
        auto sy = eval_index(iy, vars, {{f.args[size_t(y)], 1}}), sx = eval_index(ix, vars, {{f.args[size_t(x)], 1}});
        auto dy = eval_index(iy, vars, {{u.rdom->vars[1].name, 1}}), dx = eval_index(ix, vars, {{u.rdom->vars[2].name, 1}});
        if (!top || !left || !sy || !sx || !dy || !dx) continue;
        ops::Conv2dOptions o;
        o.stride = {int(*sy - *top), int(*sx - *left)};
        o.dilation = {int(*dy - *top), int(*dx - *left)};
        // Only top and left shape the Funcs (bottom and right only the output's extent), but a
        // padded image is read through a Func only when some side is padded.
        const bool padded = ci->call_type == CallType::Func;
        o.padding = ops::Padding2d(int(-*top), int(-*left), padded ? 1 : 0, padded ? 1 : 0);
        o.groups = int(*channels);
        o.layout = nchw ? ops::Layout::NCHW : ops::Layout::NHWC;
        o.pad_value = pad_value;
        o.name = out.name();
        ops::Tensor rebuilt;
        try {
            rebuilt = ops::conv2d(*image, weights, bias ? ops::Tensor(*bias) : ops::Tensor(), o);
        } catch (const Error &) {
            continue;
        }
        if (!same_algorithm(out, rebuilt.func())) continue;
        const Expr out_channels = nchw ? weights.shape()[0] : weights.shape()[3];
        // The depthwise kernel takes groups == channels == output channels; a channel
        // multiplier compiles as a grouped conv.
        if (auto oc = as_const_int(out_channels); !oc || *oc != *channels) return std::nullopt;
        DepthwiseConvOp d{*image, weights, bias};
        d.nchw = nchw;
        d.kh = *as_const_int(nchw ? weights.shape()[2] : weights.shape()[0]);
        d.kw = *as_const_int(nchw ? weights.shape()[3] : weights.shape()[1]);
        d.stride_h = o.stride[0];
        d.stride_w = o.stride[1];
        d.dilation_h = o.dilation[0];
        d.dilation_w = o.dilation[1];
        d.pad_top = o.padding.top;
        d.pad_left = o.padding.left;
        d.pad_value = pad_value;
        VectorOp v;
        v.kind = VectorOp::Kind::DepthwiseConv;
        v.depthwise = d;
        return v;
    }
    return std::nullopt;
}

/// A single pure Func that reads one Input at a permutation of its own Vars: ops::permute's
/// (and ops::transpose's) form, out(v0, .., vn) = x(v_perm⁻¹...).
std::optional<VectorOp> recognize_permute(const Func &out) {
    const FunctionContents &f = *out.contents();
    if (!f.updates.empty() || !f.init.defined()) return std::nullopt;
    const Call *c = f.init.value.as<Call>();
    if (!c || c->call_type != CallType::Input || c->args.size() != f.args.size() || f.args.size() < 2) return std::nullopt;
    std::vector<int> perm(f.args.size(), -1);
    for (size_t d = 0; d < c->args.size(); ++d) {
        const Variable *var = c->args[d].as<Variable>();
        if (!var) return std::nullopt;
        auto it = std::find(f.args.begin(), f.args.end(), var->name);
        if (it == f.args.end() || perm[size_t(it - f.args.begin())] >= 0) return std::nullopt;
        perm[size_t(it - f.args.begin())] = int(d); // output dimension k reads input dimension d
    }
    // The identity is a copy (or a crop: a slice from index 0 along each dimension), no layout
    // change; the loop-nest compiler copies it with DMA.
    bool identity = true;
    for (size_t k = 0; k < perm.size(); ++k) identity = identity && perm[k] == int(k);
    if (identity) return std::nullopt;
    VectorOp v;
    v.kind = VectorOp::Kind::Permute;
    v.permute = PermuteOp{Input(c->input), perm};
    return v;
}

} // namespace

bool same_algorithm(const Func &a, const Func &b) {
    const std::vector<Func> fa = topological_order({a}), fb = topological_order({b});
    if (fa.size() != fb.size()) return false;
    for (size_t i = 0; i < fa.size(); ++i) {
        const FunctionContents &x = *fa[i].contents(), &y = *fb[i].contents();
        if (x.name != y.name || x.type != y.type || x.args != y.args || x.updates.size() != y.updates.size()) return false;
        if (!same_definition(x.init, y.init)) return false;
        for (size_t s = 0; s < x.updates.size(); ++s)
            if (!same_definition(x.updates[s], y.updates[s])) return false;
    }
    return true;
}

std::optional<VectorOp> recognize_vector_op(const Pipeline &p) {
    if (p.outputs().size() != 1) return std::nullopt;
    const Func &out = p.outputs()[0];
    const std::string name = out.name();
    const std::vector<Input> inputs = p.inputs();
    if (find_func(p, name + "_scores") && find_func(p, name + "_masked")) return recognize_attention(p, out);
    // A lookalike (log_softmax, a modified softmax) is no library kernel: it compiles from
    // its loop nest.
    if (find_func(p, name + "_max") && find_func(p, name + "_sum"))
        if (auto v = recognize_softmax(out, inputs)) return v;
    if (find_func(p, name + "_mean") && find_func(p, name + "_var"))
        if (auto v = recognize_layernorm(out, inputs)) return v;
    if (auto v = recognize_permute(out)) return v;
    if (auto v = recognize_depthwise(out)) return v;
    // The hand-written element-wise kernel takes what its epilogue compiler can express; the
    // rest (stencils, reductions, several stages) compiles from the loop nest.
    std::optional<GemmPattern> g;
    try {
        g = match_elementwise(p);
        if (g) compile_epilogue(*g, g->acc_type == Int(32) ? chipsim::DType::Int32 : chipsim::DType::FP32, /*bf16_values=*/true);
    } catch (const Error &) {
        return std::nullopt;
    }
    if (g) {
        VectorOp v;
        v.kind = VectorOp::Kind::Elementwise;
        v.elementwise = std::move(g);
        return v;
    }
    return std::nullopt;
}

} // namespace tessera::internal::chip
