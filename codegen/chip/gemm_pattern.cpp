// Pattern matching of the canonical matmul and its element-wise epilogue (see gemm_pattern.h).
#include "gemm_pattern.h"

#include <map>

#include "loop_nest_ir.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/simplify.h"

namespace tessera::internal::chip {

namespace {

[[noreturn]] void reject(const std::string &func, const std::string &why) {
    throw Error("chip backend: cannot tensorize " + func + " onto the MXM: " + why);
}

std::string text(const Expr &e) { return tessera::to_string(e); }

/// Strips casts to `acc` (the canonical form casts each operand to the accumulator type).
Expr strip_cast(const Expr &e) {
    if (const Cast *c = e.as<Cast>()) return c->value;
    return e;
}

bool is_zero(const Expr &e) {
    Expr v = strip_cast(e);
    if (auto i = as_const_int(v)) return *i == 0;
    if (auto f = as_const_float(v)) return *f == 0.0;
    return false;
}

const Variable *as_var(const Expr &e) { return e.as<Variable>(); }

class VarSubstituter : public IRMutator {
public:
    VarSubstituter(const std::vector<std::string> &names, const std::vector<Expr> &values) {
        for (size_t i = 0; i < names.size(); ++i) map_[names[i]] = values[i];
    }
    using IRMutator::mutate;

protected:
    Expr visit(const Variable *v, const Expr &e) override {
        auto it = map_.find(v->name);
        return it == map_.end() ? e : it->second;
    }

private:
    std::map<std::string, Expr> map_;
};

/// Inlines every call to a pure Func (no updates) other than the product, replaces the product's
/// calls by the accumulator Variable, and checks Input calls.
class EpilogueBuilder : public IRMutator {
public:
    EpilogueBuilder(const GemmPattern &g, std::vector<EpilogueOperand> &operands)
        : g_(g), operands_(operands) {}
    using IRMutator::mutate;

protected:
    Expr visit(const Call *c, const Expr &e) override {
        if (c->call_type == CallType::Func) {
            auto f = c->func.get();
            if (f == g_.product.contents()) {
                check_identity_args(c);
                return Variable::make(g_.acc_type, kAccName, VariableKind::Let);
            }
            if (!f->updates.empty())
                reject(g_.output.name(), "the epilogue calls " + f->name +
                                             ", which has update definitions; only element-wise Funcs may follow the matmul");
            std::vector<Expr> args;
            for (auto &a : c->args) args.push_back(mutate(a));
            return mutate(substitute_vars(f->init.value, f->args, args));
        }
        if (c->call_type == CallType::Input) {
            EpilogueOperand op{Input(c->input), {}};
            for (auto &a : c->args) {
                Expr m = mutate(a);
                if (const Variable *v = as_var(m)) {
                    int d = -1;
                    for (size_t k = 0; k < g_.output_vars.size(); ++k)
                        if (g_.output_vars[k] == v->name) d = int(k);
                    if (d < 0) reject(g_.output.name(), "Input " + c->name + " is read at " + text(e) + ", not at the output's coordinates");
                    op.output_dim.push_back(d);
                } else if (is_zero(m)) {
                    op.output_dim.push_back(-1);
                } else {
                    reject(g_.output.name(), "the epilogue reads Input " + c->name + " at " + text(e) +
                                                 "; the VXM epilogue needs each coordinate to be an output Var or 0");
                }
            }
            operands_.push_back(op);
            return e;
        }
        return IRMutator::visit(c, e);
    }

private:
    void check_identity_args(const Call *c) {
        if (c->args.size() != g_.output_vars.size())
            reject(g_.output.name(), "it reads the product " + c->name + " with a different rank");
        for (size_t k = 0; k < c->args.size(); ++k) {
            Expr m = mutate(c->args[k]);
            const Variable *v = as_var(m);
            if (!v || v->name != g_.output_vars[k])
                reject(g_.output.name(), "the epilogue reads the product at " + text(m) + " in dimension " + std::to_string(k) +
                                             "; only element-wise epilogues (same coordinates) fuse after the MXM");
        }
    }

    const GemmPattern &g_;
    std::vector<EpilogueOperand> &operands_;
};

/// Finds the product Func: the output itself or the Func reached by inlining pure Funcs.
Func find_product(const Func &out) {
    std::vector<Func> order = topological_order({out});
    Func found;
    for (auto &f : order)
        if (f.num_updates() > 0) {
            if (found.defined())
                reject(out.name(), "the pipeline has two reductions (" + found.name() + " and " + f.name() +
                                       "); the chip backend maps one matmul per kernel");
            found = f;
        }
    if (!found.defined())
        reject(out.name(), "it has no reduction: nothing matches acc[i, j] += a[i, k] * b[k, j] (element-wise and "
                           "other non-matmul pipelines have no chip lowering yet)");
    return found;
}

} // namespace

void finish_epilogue(GemmPattern &g);
void match_conv(GemmPattern &g, const FunctionContents &f, const Definition &u);

Expr substitute_vars(const Expr &e, const std::vector<std::string> &names, const std::vector<Expr> &values) {
    VarSubstituter s(names, values);
    return s.mutate(e);
}

namespace {

/// The constant value of an index Expr with these Variables set (the rest 0).
int64_t eval_index(const Expr &e, const std::vector<std::string> &vars, const std::map<std::string, int64_t> &at) {
    std::vector<Expr> vals;
    for (auto &v : vars) vals.push_back(Expr(int(at.count(v) ? at.at(v) : 0)));
    Expr x = simplify(substitute_vars(e, vars, vals));
    if (auto c = as_const_int(x)) return *c;
    throw Error("chip backend: the index " + text(e) + " is not affine in the loop variables");
}

/// The Input a padding Func reads, `select(inside, input(args), value)` for a constant value (0,
/// or an integer conv's zero point), and that value.
std::optional<std::pair<Input, double>> padded_input(const Call *c) {
    if (c->call_type == CallType::Input) return std::make_pair(Input(c->input), 0.0);
    if (c->call_type != CallType::Func) return std::nullopt;
    auto f = c->func.get();
    if (!f->updates.empty()) return std::nullopt;
    const Select *sel = f->init.value.as<Select>();
    if (!sel) return std::nullopt;
    const std::optional<double> value = immediate(sel->false_value);
    if (!value) return std::nullopt;
    std::vector<Input> ins = find_inputs(sel->true_value);
    if (ins.size() != 1 || ins[0].dimensions() != int(c->args.size())) return std::nullopt;
    return std::make_pair(ins[0], *value);
}

} // namespace

void match_conv(GemmPattern &g, const FunctionContents &f, const Definition &u) {
    const std::string &name = f.name;
    const Add *add = u.value.as<Add>();
    const Mul *mul = add ? add->b.as<Mul>() : nullptr;
    if (!mul) reject(name, "the update is " + text(u.value) + ", not acc + image * filter");
    const Call *ci = strip_cast(mul->a).as<Call>(), *cw = strip_cast(mul->b).as<Call>();
    if (!ci || !cw || cw->call_type != CallType::Input || ci->args.size() != 4 || cw->args.size() != 4)
        reject(name, "the product " + text(add->b) + " is not image(...) * filter(...) of 4-D tensors");
    const std::optional<std::pair<Input, double>> padded = padded_input(ci);
    if (!padded) reject(name, "the image operand " + text(mul->a) + " is neither an Input nor a padded Input");
    const std::optional<Input> image = padded->first;
    const std::vector<std::string> &a = f.args;
    std::vector<std::string> vars = a;
    for (auto &rv : u.rdom->vars) vars.push_back(rv.name);
    const std::string rx = u.rdom->vars[0].name, ry = u.rdom->vars[1].name, rz = u.rdom->vars[2].name;
    auto var_name = [](const Expr &e) -> std::string {
        const Variable *v = e.as<Variable>();
        return v ? v->name : std::string();
    };
    ConvParams p;
    p.pad_value = padded->second;
    // NCHW: out(n, c, y, x), image(n, r.x, iy, ix), filter(c, r.x, r.y, r.z);
    // NHWC: out(n, y, x, c), image(n, iy, ix, r.x), filter(r.y, r.z, r.x, c).
    if (var_name(cw->args[0]) == a[1] && var_name(cw->args[1]) == rx && var_name(cw->args[2]) == ry && var_name(cw->args[3]) == rz)
        p.nchw = true;
    else if (var_name(cw->args[0]) == ry && var_name(cw->args[1]) == rz && var_name(cw->args[2]) == rx && var_name(cw->args[3]) == a[3])
        p.nchw = false;
    else
        reject(name, "the filter is read at " + text(mul->b) + "; expected OIHW or HWIO");
    const std::string yv = p.nchw ? a[2] : a[1], xv = p.nchw ? a[3] : a[2];
    const Expr iy = ci->args[p.nchw ? 2 : 1], ix = ci->args[p.nchw ? 3 : 2], ic = ci->args[p.nchw ? 1 : 3];
    if (var_name(ci->args[0]) != a[0])
        reject(name, "the image is read at " + text(mul->a) + "; expected the batch Var first");
    if (var_name(ic) != rx) { // grouped: channel (c / (O / groups)) * Cg + r.x, Cg the filter's channels
        const std::vector<Expr> ws = Input(cw->input).shape(), xs = image->shape();
        auto extent = [&](const Expr &e) {
            auto c = as_const_int(e);
            if (!c) reject(name, "a grouped conv needs constant channel counts");
            return *c;
        };
        const int64_t cg = extent(ws[p.nchw ? 1 : 2]), o = extent(ws[p.nchw ? 0 : 3]), c = extent(xs[p.nchw ? 1 : 3]);
        const std::string cv = p.nchw ? a[1] : a[3];
        bool ok = cg > 0 && c % cg == 0 && o % (c / cg) == 0 && eval_index(ic, vars, {{rx, 1}}) == 1;
        if (ok) p.groups = c / cg;
        for (int64_t oc = 0; ok && oc < o; ++oc) ok = eval_index(ic, vars, {{cv, oc}}) == oc / (o / p.groups) * cg;
        if (!ok)
            reject(name, "the image is read at " + text(mul->a) + "; expected channel r.x, or a group's channel (c / (O / groups)) * Cg + r.x");
    }
    p.pad_top = -eval_index(iy, vars, {});
    p.stride_h = eval_index(iy, vars, {{yv, 1}}) + p.pad_top;
    p.dilation_h = eval_index(iy, vars, {{ry, 1}}) + p.pad_top;
    p.pad_left = -eval_index(ix, vars, {});
    p.stride_w = eval_index(ix, vars, {{xv, 1}}) + p.pad_left;
    p.dilation_w = eval_index(ix, vars, {{rz, 1}}) + p.pad_left;
    auto kext = [&](int d) {
        auto c = as_const_int(u.rdom->vars[size_t(d)].extent);
        if (!c) reject(name, "the filter size is not a constant");
        return *c;
    };
    p.kh = kext(1);
    p.kw = kext(2);
    g.a = *image;
    g.b = Input(cw->input);
    const Type ta = g.a->type(), tb = g.b->type();
    if ((ta == Int(8)) != (tb == Int(8)) || !(ta == Int(8) || ta.is_float()))
        reject(name, "operand types " + ta.to_string() + " x " + tb.to_string() + " have no MXM mode");
    g.conv = p;
}

std::optional<int> GemmPattern::library_batch_dim(const std::vector<int64_t> &output_shape) const {
    int found = -1;
    for (int d = 0; d < batch_dims; ++d)
        if (output_shape.at(size_t(d)) > 1) {
            if (found >= 0) return std::nullopt;
            found = d;
        }
    return found;
}

GemmPattern match_gemm(const Pipeline &p) {
    if (p.outputs().size() != 1)
        throw Error("chip backend: the pipeline has " + std::to_string(p.outputs().size()) +
                    " outputs; a chip kernel computes one output Func");
    GemmPattern g;
    g.output = p.outputs()[0];
    g.product = find_product(g.output);
    const FunctionContents &f = *g.product.contents();
    const std::string &name = f.name;
    if (f.updates.size() != 1) reject(name, "it has " + std::to_string(f.updates.size()) + " updates; a matmul has exactly one");
    g.acc_type = f.type;
    if (g.acc_type != Int(32) && g.acc_type != Float(32))
        reject(name, "it accumulates in " + g.acc_type.to_string() + "; the MXM accumulates int8 in int32 and bf16 in fp32");
    const Definition &u = f.updates[0];
    const int rank = int(f.args.size());
    if (rank < 2) reject(name, "it has " + std::to_string(rank) + " dimension(s); a matmul result has at least 2 (i, j)");
    g.batch_dims = rank - 2;
    // The update's left-hand side must be the pure Vars themselves.
    for (int d = 0; d < rank; ++d) {
        const Variable *v = as_var(u.args[size_t(d)]);
        if (!v || v->name != f.args[size_t(d)])
            reject(name, "the update writes " + name + " at " + text(u.args[size_t(d)]) + " in dimension " + std::to_string(d) +
                             "; a matmul update writes acc[i, j] at its pure Vars");
    }
    if (u.rdom && u.rdom->vars.size() == 3 && rank == 4) {
        match_conv(g, f, u);
        finish_epilogue(g);
        return g;
    }
    if (!is_zero(f.init.value))
        reject(name, "its pure definition is " + text(f.init.value) + ", not 0 (the accumulator must start at zero)");
    if (!u.rdom || u.rdom->vars.size() != 1)
        reject(name, "the update reduces over " + std::string(u.rdom ? std::to_string(u.rdom->vars.size()) + " dimensions" : "nothing") +
                         "; a matmul reduces over one dimension k");
    const std::string k = u.rdom->vars[0].name;
    if (!is_zero(u.rdom->vars[0].min)) reject(name, "the reduction " + k + " does not start at 0");
    const Add *add = u.value.as<Add>();
    const Call *self = add ? add->a.as<Call>() : nullptr;
    if (!add || !self || self->call_type != CallType::Func || self->name != name)
        reject(name, "the update is " + text(u.value) + ", not acc[i, j] + a[i, k] * b[k, j]");
    const Mul *mul = add->b.as<Mul>();
    if (!mul) reject(name, "the added term " + text(add->b) + " is not a product a[i, k] * b[k, j]");
    const Call *ca = strip_cast(mul->a).as<Call>(), *cb = strip_cast(mul->b).as<Call>();
    if (!ca || !cb || ca->call_type != CallType::Input || cb->call_type != CallType::Input)
        reject(name, "the product's operands " + text(mul->a) + " and " + text(mul->b) +
                         " must be Input elements (stage computed operands into an Input first)");
    for (const Call *c : {ca, cb})
        if (c->args.size() < 2)
            reject(name, "the operand " + c->name + " has rank " + std::to_string(c->args.size()) + "; a matmul reads two matrices");
    for (const Expr &e : {mul->a, mul->b})
        if (const Cast *c = e.as<Cast>(); c && c->type != g.acc_type)
            reject(name, "an operand is cast to " + c->type.to_string() + " instead of the accumulator type");

    const std::string i = f.args[size_t(rank - 2)], j = f.args[size_t(rank - 1)];
    auto var_name = [](const Expr &e) -> std::string {
        const Variable *v = e.as<Variable>();
        return v ? v->name : std::string();
    };
    auto batch_map = [&](const Call *c, const char *what, std::vector<int> &out) {
        const int nb = int(c->args.size()) - 2;
        if (nb < 0) reject(name, std::string(what) + " '" + c->name + "' has rank < 2");
        if (nb > g.batch_dims) reject(name, std::string(what) + " has more batch dimensions than the result");
        for (int d = 0; d < nb; ++d) {
            const Expr &a = c->args[size_t(d)];
            if (is_zero(a)) {
                out.push_back(-1);
                continue;
            }
            int od = g.batch_dims - nb + d; // aligned from the right, as NumPy broadcasts
            if (var_name(a) != f.args[size_t(od)])
                reject(name, std::string(what) + " is read at " + text(a) + " in batch dimension " + std::to_string(d) +
                                 "; batch coordinates must be the result's batch Vars (or 0 when broadcast)");
            out.push_back(od);
        }
    };
    const std::string a0 = var_name(ca->args[ca->args.size() - 2]), a1 = var_name(ca->args.back());
    const std::string b0 = var_name(cb->args[cb->args.size() - 2]), b1 = var_name(cb->args.back());
    if (a0 == i && a1 == k) g.a_transposed = false;
    else if (a0 == k && a1 == i) g.a_transposed = true;
    else reject(name, "the left operand is read at " + text(mul->a) + "; expected a[" + i + ", " + k + "] (or its transpose)");
    if (b0 == k && b1 == j) g.b_transposed = false;
    else if (b0 == j && b1 == k) g.b_transposed = true;
    else reject(name, "the right operand is read at " + text(mul->b) + "; expected b[" + k + ", " + j + "] (or its transpose)");
    batch_map(ca, "A", g.a_batch);
    batch_map(cb, "B", g.b_batch);
    g.a = Input(ca->input);
    g.b = Input(cb->input);
    const Type ta = g.a->type(), tb = g.b->type();
    auto mxm_ok = [&](Type t) { return t == Int(8) || t == BFloat(16) || t == Float(16) || t == Float(32); };
    if (!mxm_ok(ta) || !mxm_ok(tb) || (ta == Int(8)) != (tb == Int(8)))
        reject(name, "operand types " + ta.to_string() + " x " + tb.to_string() +
                         " have no MXM mode (int8 x int8 -> int32, bf16/fp16 x bf16/fp16 -> fp32; fp32 is rounded to bf16)");

    finish_epilogue(g);
    return g;
}

std::optional<GemmPattern> match_elementwise(const Pipeline &p) {
    if (p.outputs().size() != 1) return std::nullopt;
    const Func &out = p.outputs()[0];
    for (const Func &f : topological_order({out}))
        if (f.num_updates() > 0) return std::nullopt;
    GemmPattern g;
    g.output = out;
    g.output_vars = out.args();
    g.acc_type = out.type().is_float() ? Float(32) : Int(32);
    EpilogueBuilder b(g, g.operands);
    g.epilogue = b.mutate(out.value());
    if (g.operands.empty()) reject(out.name(), "it reads no Input; a constant has nothing to compute on the chip");
    return g;
}

void finish_epilogue(GemmPattern &g) {
    const FunctionContents &f = *g.product.contents();
    const std::string &name = f.name;
    const int rank = int(f.args.size());
    g.output_vars = g.output.args();
    if (g.output.name() != name) {
        if (g.output.num_updates() > 0) reject(g.output.name(), "the output has updates after the matmul");
        if (g.output.dimensions() != rank)
            reject(g.output.name(), "the output has " + std::to_string(g.output.dimensions()) + " dimensions, the product " +
                                        std::to_string(rank) + "; only element-wise epilogues fuse after the MXM");
        EpilogueBuilder b(g, g.operands);
        g.epilogue = b.mutate(g.output.value());
    } else {
        g.output_vars = f.args;
    }
    if (!is_zero(f.init.value)) { // a conv's bias: added to the sum on the VXM
        EpilogueBuilder b(g, g.operands);
        Expr acc = Variable::make(g.acc_type, kAccName, VariableKind::Let);
        Expr init = b.mutate(substitute_vars(f.init.value, f.args, [&] {
            std::vector<Expr> v;
            for (auto &a : g.output_vars) v.push_back(Variable::make(Int(32), a));
            return v;
        }()));
        Expr with_bias = acc + init;
        g.epilogue = g.epilogue.defined() ? substitute_vars(g.epilogue, {kAccName}, {with_bias}) : with_bias;
    }
}

} // namespace tessera::internal::chip
