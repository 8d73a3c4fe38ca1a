// Epilogue Expr -> vxm instructions (vector_epilogue.h).
#include "vector_epilogue.h"

#include <optional>

#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::VxmOp;

/// A value during compilation: a constant or a tile (value id) of a dtype.
struct Val {
    std::optional<double> constant;
    int id = -1;
    DType dtype = DType::FP32;
};

class EpilogueCompiler {
public:
    EpilogueCompiler(const GemmPattern &g, DType acc) : g_(g), acc_(acc) {}

    VectorProgram run() {
        Val v = compile(g_.epilogue);
        if (v.constant) fail(g_.epilogue, "the epilogue is a constant; nothing to compute on the chip");
        const DType want = dtype_of(g_.output.type(), g_.epilogue);
        if (v.dtype != want) v = convert(v, want);
        p_.result = v.id;
        p_.out_dtype = v.dtype;
        renumber();
        fuse_chains();
        return p_;
    }

private:
    [[noreturn]] void fail(const Expr &e, const std::string &why) const {
        throw Error("chip backend: the epilogue of " + g_.output.name() + " cannot run on the VXM: " + why + " (at " +
                    tessera::to_string(e) + ")");
    }

    DType dtype_of(Type t, const Expr &e) const {
        if (t == Int(32)) return DType::Int32;
        if (t == Float(32)) return DType::FP32;
        fail(e, "its values are " + t.to_string() +
                    "; the VXM epilogue computes and stores int32 or fp32 (the accumulator types)");
    }

    int new_value() { return p_.num_values++; }

    Val emit(VxmOp op, DType in, DType out, std::vector<Val> srcs, std::optional<double> imm = std::nullopt) {
        VectorStep s;
        s.proto.op = chipsim::Opcode::Vxm;
        s.proto.vop = op;
        s.proto.dtype = in;
        s.proto.out_dtype = out;
        s.proto.has_out_dtype = in != out;
        if (imm) {
            s.proto.has_imm = true;
            s.proto.imm = *imm;
        }
        for (auto &v : srcs) s.srcs.push_back(v.id);
        s.dst = new_value();
        p_.steps.push_back(s);
        return Val{std::nullopt, s.dst, out};
    }

    Val convert(const Val &v, DType to) {
        if (v.constant || v.dtype == to) return Val{v.constant, v.id, to};
        return emit(VxmOp::Cast, v.dtype, to, {v});
    }

    Val binary(VxmOp op, const Expr &e, const Expr &ea, const Expr &eb, bool commutative) {
        Val a = compile(ea), b = compile(eb);
        const DType t = dtype_of(e.type(), e);
        if (a.constant && b.constant) fail(e, "constant arithmetic should have been folded");
        if (!a.constant) a = convert(a, t);
        if (!b.constant) b = convert(b, t);
        if (a.constant) {
            if (commutative) std::swap(a, b);
            else if (op == VxmOp::Sub) { // c - x = (x * -1) + c
                Val neg = emit(VxmOp::Mul, t, t, {b}, -1.0);
                return emit(VxmOp::Add, t, t, {neg}, *a.constant);
            } else if (op == VxmOp::Div && chipsim::dtype_is_float(t)) { // c / x = recip(x) * c
                Val r = emit(VxmOp::Recip, t, t, {b});
                return emit(VxmOp::Mul, t, t, {r}, *a.constant);
            } else {
                fail(e, "a constant on the left of this operation has no VXM form");
            }
        }
        if (b.constant) return emit(op, t, t, {a}, *b.constant);
        return emit(op, t, t, {a, b});
    }

    Val compile(const Expr &e) {
        if (auto i = as_const_int(e)) return Val{double(*i)};
        if (auto f = as_const_float(e)) return Val{*f};
        if (const Variable *v = e.as<Variable>()) {
            if (v->name == kAccName) return Val{std::nullopt, 0, acc_};
            fail(e, "it reads the variable " + v->name);
        }
        if (const Cast *c = e.as<Cast>()) {
            // An Input widened to the accumulator type is loaded already widened.
            if (const Call *call = c->value.as<Call>(); call && call->call_type == CallType::Input) {
                Val v = operand(call, e, dtype_of(c->type, e));
                return v;
            }
            Val v = compile(c->value);
            const DType t = dtype_of(c->type, e);
            if (v.constant) return Val{v.constant};
            if (chipsim::dtype_is_float(v.dtype) && !chipsim::dtype_is_float(t))
                fail(e, "a float -> integer cast truncates in Tessera but the VXM rounds to nearest; "
                        "round explicitly on the host or keep the epilogue in float");
            return convert(v, t);
        }
        if (const Call *call = e.as<Call>()) {
            if (call->call_type == CallType::Input) return operand(call, e, dtype_of(call->type, e));
            if (call->call_type == CallType::Intrinsic) {
                const DType t = dtype_of(e.type(), e);
                Val x = convert(compile(call->args[0]), t);
                if (x.constant) fail(e, "an intrinsic of a constant should have been folded");
                switch (call->intrinsic) {
                case Intrinsic::Exp: return emit(VxmOp::Exp, t, t, {x});
                case Intrinsic::Tanh: return emit(VxmOp::Tanh, t, t, {x});
                case Intrinsic::Rsqrt: return emit(VxmOp::Rsqrt, t, t, {x});
                case Intrinsic::Sigmoid: { // 1 / (1 + exp(-x))
                    Val n = emit(VxmOp::Mul, t, t, {x}, -1.0);
                    Val ex = emit(VxmOp::Exp, t, t, {n});
                    Val one = emit(VxmOp::Add, t, t, {ex}, 1.0);
                    return emit(VxmOp::Recip, t, t, {one});
                }
                default:
                    fail(e, std::string(intrinsic_name(call->intrinsic)) +
                                " has no VXM instruction (the VXM has exp, tanh, rsqrt, recip; for GELU use "
                                "ops::GeluApproximation::Tanh)");
                }
            }
            fail(e, "it calls the Func " + call->name + ", which was not inlined");
        }
        if (const Add *o = e.as<Add>()) return binary(VxmOp::Add, e, o->a, o->b, true);
        if (const Sub *o = e.as<Sub>()) return binary(VxmOp::Sub, e, o->a, o->b, false);
        if (const Mul *o = e.as<Mul>()) return binary(VxmOp::Mul, e, o->a, o->b, true);
        if (const Div *o = e.as<Div>()) {
            if (!o->a.type().is_float())
                fail(e, "integer division rounds towards negative infinity in Tessera, the VXM truncates");
            return binary(VxmOp::Div, e, o->a, o->b, false);
        }
        if (const Min *o = e.as<Min>()) return binary(VxmOp::Min, e, o->a, o->b, true);
        if (const Max *o = e.as<Max>()) {
            if (auto c = as_const_float(o->b); (c && *c == 0.0)) return relu(e, o->a);
            if (auto c = as_const_int(o->b); (c && *c == 0)) return relu(e, o->a);
            return binary(VxmOp::Max, e, o->a, o->b, true);
        }
        fail(e, "this operation has no VXM form (supported: + - * / min max exp tanh rsqrt sigmoid casts)");
    }

    Val relu(const Expr &e, const Expr &x) {
        const DType t = dtype_of(e.type(), e);
        Val v = convert(compile(x), t);
        return emit(VxmOp::Relu, t, t, {v});
    }

    Val operand(const Call *call, const Expr &e, DType dtype) {
        EpilogueOperand src{Input(call->input), {}};
        for (auto &op : g_.operands)
            if (op.input.name() == call->name) src = op;
        if (src.output_dim.size() != call->args.size()) fail(e, "Input " + call->name + " is read at unexpected coordinates");
        for (size_t i = 0; i < p_.operands.size(); ++i)
            if (p_.operands[i].source.input.name() == call->name && p_.operands[i].dtype == dtype)
                return Val{std::nullopt, -int(i) - 1, dtype};
        p_.operands.push_back({src, dtype});
        return Val{std::nullopt, -int(p_.operands.size()), dtype};
    }

    /// Final numbering: 0 the accumulator, 1..n the operands (negative while compiling), then
    /// the temporaries.
    void renumber() {
        const int n = int(p_.operands.size());
        auto map = [&](int id) { return id < 0 ? -id : id == 0 ? 0 : id + n; };
        for (auto &s : p_.steps) {
            for (auto &x : s.srcs) x = map(x);
            s.dst = map(s.dst);
        }
        p_.result = map(p_.result);
        p_.num_values += n;
    }

    /// Folds a unary or immediate step into the instruction that produced its only input when
    /// nothing else reads that value.
    void fuse_chains() {
        std::vector<int> uses(size_t(p_.num_values), 0);
        for (auto &s : p_.steps)
            for (int x : s.srcs) ++uses[size_t(x)];
        ++uses[size_t(p_.result)];
        std::vector<VectorStep> out;
        for (auto &s : p_.steps) {
            const bool chainable = s.srcs.size() == 1 && (s.proto.has_imm || chipsim::vxm_op_arity(s.proto.vop) == 1) &&
                                   s.proto.dtype == s.proto.out_dtype && s.proto.vop != VxmOp::Cast;
            if (chainable && !out.empty() && out.back().dst == s.srcs[0] && uses[size_t(s.srcs[0])] == 1 &&
                out.back().proto.out_dtype == s.proto.dtype && out.back().proto.dtype == s.proto.dtype) {
                out.back().proto.chain.push_back({s.proto.vop, s.proto.has_imm, s.proto.imm});
                out.back().dst = s.dst;
                continue;
            }
            out.push_back(s);
        }
        p_.steps = std::move(out);
        for (auto &s : p_.steps) {
            std::string d = std::string(chipsim::vxm_op_name(s.proto.vop));
            for (auto &c : s.proto.chain) d += std::string("|") + chipsim::vxm_op_name(c.op);
            p_.description += (p_.description.empty() ? "" : ", ") + d;
        }
    }

    const GemmPattern &g_;
    DType acc_;
    VectorProgram p_;
};

} // namespace

VectorProgram compile_epilogue(const GemmPattern &pattern, DType acc) {
    VectorProgram p;
    if (!pattern.epilogue.defined()) {
        p.out_dtype = acc;
        return p;
    }
    EpilogueCompiler c(pattern, acc);
    return c.run();
}

} // namespace tessera::internal::chip
