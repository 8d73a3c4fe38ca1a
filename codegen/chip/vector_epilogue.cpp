// Epilogue Expr -> vxm instructions (vector_epilogue.h).
#include "vector_epilogue.h"

#include <cmath>
#include <optional>
#include <set>

#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::VxmOp;

/// A value during compilation: a constant or a tile (value id) of a dtype, with what is known
/// about it: bounds (from clamps, ReLU) and whether a float holds only integers (after round).
struct Val {
    std::optional<double> constant;
    int id = -1;
    DType dtype = DType::FP32;
    std::optional<double> lo, hi;
    bool integral = false;
    int int32_source = -1; ///< An int32 tile holding the same (integral) values, or -1.
};

/// The range of values an integer type holds (the types a requantised result narrows to).
std::optional<std::pair<double, double>> int_range(Type t) {
    if (!t.is_int() && !t.is_uint()) return std::nullopt;
    if (t.bits() >= 32) return std::nullopt;
    const double span = std::ldexp(1.0, t.bits());
    return t.is_uint() ? std::make_pair(0.0, span - 1) : std::make_pair(-span / 2, span / 2 - 1);
}

/// Whether every value `v` can hold fits `t` (true for types int_range does not restrict).
bool fits(const Val &v, Type t) {
    const auto range = int_range(t);
    return !range || (v.lo && v.hi && *v.lo >= range->first && *v.hi <= range->second);
}

/// `v` after max(v, c) (is_max) or min(v, c): one bound tightened; it stays integral only for an
/// integer c.
Val clamped(Val v, bool is_max, double c) {
    if (is_max) v.lo = v.lo ? std::max(*v.lo, c) : c;
    else v.hi = v.hi ? std::min(*v.hi, c) : c;
    v.integral = v.integral && std::floor(c) == c;
    return v;
}

class EpilogueCompiler {
public:
    /// How bf16 values compute: not at all (a matmul's epilogue), in bf16 lanes (every value
    /// bf16), or in fp32 lanes, each bf16 op's result rounded to bf16 by a cast there and back.
    enum class Bf16 { Rejected, Lanes, InFp32 };

    EpilogueCompiler(const GemmPattern &g, DType acc, Bf16 bf16) : g_(g), acc_(acc), bf16_(bf16) {}

    /// nullopt when bf16 lanes were asked for but the program mixes them with 32-bit values.
    std::optional<VectorProgram> run() {
        Val v = compile(g_.epilogue);
        if (v.constant) fail(g_.epilogue, "the epilogue is a constant; nothing to compute on the chip");
        const DType want = dtype_of(g_.output.type(), g_.epilogue);
        if (!fits(v, g_.output.type()))
            fail(g_.epilogue, "the " + g_.output.type().to_string() + " result is computed in int32 lanes and not clamped into its range");
        if (v.dtype != want) v = convert(v, want);
        p_.result = v.id;
        p_.out_dtype = v.dtype;
        if (!one_width()) return std::nullopt;
        drop_dead_steps();
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
        // A requantised result (int8, int16, uint8) is computed and stored in int32 lanes; the
        // narrowing cast is checked to keep every value (casts below), so widening it back is exact.
        if (int_range(t)) return DType::Int32;
        if (t == BFloat(16) && bf16_ != Bf16::Rejected) return bf16_ == Bf16::Lanes ? DType::BF16 : DType::FP32;
        fail(e, "its values are " + t.to_string() +
                    "; the VXM epilogue computes in int32 or fp32 (the accumulator types) and narrows to int8/int16/uint8");
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
        if (v.dtype == to) return v; // nothing to convert: keeps what is known about it
        if (v.constant) return Val{v.constant, v.id, to};
        return emit(VxmOp::Cast, v.dtype, to, {v});
    }

    Val binary(VxmOp op, const Expr &e, const Expr &ea, const Expr &eb, bool commutative) {
        if (int_range(e.type()) && op != VxmOp::Min && op != VxmOp::Max) // min and max stay in range
            fail(e, e.type().to_string() + " arithmetic wraps at " + std::to_string(e.type().bits()) +
                        " bits, the VXM computes in int32 lanes; widen the operands to int32 first");
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
        if (b.constant) {
            Val r = emit(op, t, t, {a}, *b.constant);
            if (op == VxmOp::Min || op == VxmOp::Max) { // what is known about a, bounded by the constant
                r.lo = a.lo;
                r.hi = a.hi;
                r.integral = a.integral;
                r = clamped(r, op == VxmOp::Max, *b.constant);
            }
            return r;
        }
        return emit(op, t, t, {a, b});
    }

    /// A value of `e`: in fp32 lanes, an operation of bf16 type rounds its result to bf16 (as
    /// the reference does) by a cast to bf16 and back; reads and constants need none.
    Val compile(const Expr &e) {
        Val v = compile_op(e);
        const Call *call = e.as<Call>();
        const bool read = (call && call->call_type == CallType::Input) || e.as<Variable>();
        if (bf16_ != Bf16::InFp32 || e.type() != BFloat(16) || v.constant || read) return v;
        return emit(VxmOp::Cast, DType::BF16, DType::FP32, {emit(VxmOp::Cast, DType::FP32, DType::BF16, {v})});
    }

    Val compile_op(const Expr &e) {
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
            if (chipsim::dtype_is_float(v.dtype) && !chipsim::dtype_is_float(t) && !v.integral)
                fail(e, "a float -> integer cast truncates in Tessera but the VXM rounds to nearest; round first "
                        "(round(x), then the cast is exact) or keep the epilogue in float");
            if (!fits(v, c->type))
                fail(e, "narrowing to " + c->type.to_string() + " wraps values outside [" +
                            std::to_string(int64_t(int_range(c->type)->first)) + ", " +
                            std::to_string(int64_t(int_range(c->type)->second)) + "]; clamp into that range first "
                            "(requantise: cast<int8>(clamp(round(x * scale), -128, 127)))");
            Val r = v.int32_source >= 0 && t == DType::Int32 ? Val{std::nullopt, v.int32_source, DType::Int32} : convert(v, t);
            r.lo = v.lo;
            r.hi = v.hi;
            r.integral = true;
            return r;
        }
        if (const Call *call = e.as<Call>()) {
            if (call->call_type == CallType::Input) return operand(call, e, dtype_of(call->type, e));
            if (call->call_type == CallType::Intrinsic && call->intrinsic == Intrinsic::Round) return round(e, call->args[0], {});
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
        if (e.as<Min>() || e.as<Max>()) {
            if (auto r = clamped_round(e)) return *r;
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
        Val r = emit(VxmOp::Relu, t, t, {v});
        r.lo = 0.0;
        r.hi = v.hi;
        r.integral = v.integral;
        return r;
    }

    static std::optional<double> constant_of(const Expr &e) {
        if (const Cast *c = e.as<Cast>()) return constant_of(c->value); // clamp's bounds take the value's type
        if (auto i = as_const_int(e)) return double(*i);
        if (auto f = as_const_float(e)) return *f;
        return std::nullopt;
    }

    /// round(y) clamped by min/max with integer constants (a requantise): computed as
    /// round(clamp(y)), equal for integer bounds, so the rounding cast never sees a value beyond
    /// int32. A bare round(y) keeps y's own bounds, and must have some.
    std::optional<Val> clamped_round(const Expr &e) {
        std::vector<std::pair<bool, double>> clamps; // outermost first: (is_max, bound)
        Expr x = e;
        while (true) {
            const Min *mn = x.as<Min>();
            const Max *mx = x.as<Max>();
            const Expr *inner = mn ? &mn->a : mx ? &mx->a : nullptr;
            const std::optional<double> c = mn ? constant_of(mn->b) : mx ? constant_of(mx->b) : std::nullopt;
            if (!inner || !c || std::floor(*c) != *c) return std::nullopt;
            clamps.emplace_back(mx != nullptr, *c);
            x = *inner;
            const Call *call = x.as<Call>();
            if (call && call->call_type == CallType::Intrinsic && call->intrinsic == Intrinsic::Round)
                return round(x, call->args[0], clamps);
        }
    }

    Val round(const Expr &e, const Expr &arg, const std::vector<std::pair<bool, double>> &clamps) {
        const DType t = dtype_of(e.type(), e);
        if (!chipsim::dtype_is_float(t)) fail(e, "round of an integer");
        Val y = convert(compile(arg), t);
        if (y.constant) fail(e, "round of a constant should have been folded");
        for (auto it = clamps.rbegin(); it != clamps.rend(); ++it) {
            Val c = emit(it->first ? VxmOp::Max : VxmOp::Min, t, t, {y}, it->second);
            c.lo = y.lo;
            c.hi = y.hi;
            y = clamped(c, it->first, it->second);
        }
        const double limit = 2147483520.0; // the largest fp32 below 2^31
        if (!y.lo || !y.hi || *y.lo < -limit || *y.hi > limit)
            fail(e, "round(x) is computed by the VXM's float -> int32 cast, which holds |x| < 2^31 only; clamp the "
                    "rounded value with integer bounds (clamp(round(x), lo, hi)) so it stays in range");
        // float -> int32 rounds half to even (as the reference's nearbyint); the value stays an
        // int32 tile, converted back to float only if a float operation reads it.
        Val r = emit(VxmOp::Cast, t, DType::Int32, {y});
        r.lo = y.lo;
        r.hi = y.hi;
        r.integral = true;
        Val f = convert_keeping(r, t);
        f.int32_source = r.id;
        return f;
    }

    /// convert() that keeps what is known about the value.
    Val convert_keeping(const Val &v, DType to) {
        Val r = convert(v, to);
        r.lo = v.lo;
        r.hi = v.hi;
        r.integral = v.integral;
        return r;
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

    /// Removes steps whose value nothing reads (a float copy of a rounded value that only an
    /// integer cast used, which reads the int32 tile instead).
    void drop_dead_steps() {
        std::set<int> live{p_.result};
        std::vector<VectorStep> kept;
        for (auto it = p_.steps.rbegin(); it != p_.steps.rend(); ++it) {
            if (!live.count(it->dst)) continue;
            live.insert(it->srcs.begin(), it->srcs.end());
            kept.push_back(*it);
        }
        p_.steps.assign(kept.rbegin(), kept.rend());
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
            // A chain rounds once, at its end; bf16 values round after every op (the reference's).
            const bool chainable = s.srcs.size() == 1 && (s.proto.has_imm || chipsim::vxm_op_arity(s.proto.vop) == 1) &&
                                   s.proto.dtype == s.proto.out_dtype && s.proto.vop != VxmOp::Cast &&
                                   s.proto.dtype != DType::BF16;
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

    /// In bf16 lanes every value must be bf16: a vector row holds 32 of them but 16 32-bit
    /// values, and the kernel lays its rows out for one width.
    bool one_width() const {
        if (bf16_ != Bf16::Lanes) return true;
        bool bf16 = p_.out_dtype == DType::BF16, wide = p_.out_dtype != DType::BF16;
        for (auto &s : p_.steps)
            for (DType d : {s.proto.dtype, s.proto.out_dtype}) (d == DType::BF16 ? bf16 : wide) = true;
        for (auto &o : p_.operands) (o.dtype == DType::BF16 ? bf16 : wide) = true;
        return !(bf16 && wide);
    }

    const GemmPattern &g_;
    DType acc_;
    Bf16 bf16_ = Bf16::Rejected;
    VectorProgram p_;
};

} // namespace

VectorProgram compile_epilogue(const GemmPattern &pattern, DType acc, bool bf16_values) {
    VectorProgram p;
    if (!pattern.epilogue.defined()) {
        p.out_dtype = acc;
        return p;
    }
    using Bf16 = EpilogueCompiler::Bf16;
    if (!bf16_values) return *EpilogueCompiler(pattern, acc, Bf16::Rejected).run();
    if (auto p = EpilogueCompiler(pattern, acc, Bf16::Lanes).run()) return *p;
    return *EpilogueCompiler(pattern, acc, Bf16::InFp32).run();
}

} // namespace tessera::internal::chip
