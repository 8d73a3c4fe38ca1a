// The loop-IR interpreter (interpreter.h). A statement is compiled once into closures: every
// variable and buffer name is resolved to a slot at compile time (lexically scoped, so a
// let or loop may shadow an outer name), every operation to a function specialised for its
// type. Running it is then a walk over closures with no string lookups per element.
#include "tessera/interpreter.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include "tessera/error.h"
#include "tessera/half.h"
#include "tessera/limits.h"
#include "tessera/ir_printer.h"

namespace tessera {

namespace {

union Value {
    int64_t i;
    double f;
};

struct BufferSlot {
    uint8_t *data = nullptr;
    int64_t size = 0; // elements
    Type type;
};

struct Frame {
    std::vector<Value> vars;
    std::vector<BufferSlot> bufs;
};

using EFn = std::function<Value(Frame &)>;
using SFn = std::function<void(Frame &)>;

int64_t wrap_int(Type t, int64_t v) {
    if (t.is_bool()) return v != 0;
    const int bits = t.bits();
    if (bits >= 64) return v;
    const uint64_t mask = (uint64_t{1} << bits) - 1;
    uint64_t u = static_cast<uint64_t>(v) & mask;
    if (t.is_int() && ((u >> (bits - 1)) & 1)) u |= ~mask;
    return static_cast<int64_t>(u);
}

/// Rounds an exact-or-double result of an arithmetic operation to a float type: fp32 directly,
/// bf16 / fp16 through the fp32 result (they compute in fp32).
double round_arith(Type t, double v) {
    if (t.bits() == 64) return v;
    float f = static_cast<float>(v);
    if (t.is_bfloat()) return static_cast<double>(bfloat16(f).to_float());
    if (t.bits() == 16) return static_cast<double>(float16(f).to_float());
    return static_cast<double>(f);
}

/// Rounds an fp64 value to a float type in one step (intrinsics, casts).
double round_direct(Type t, double v) {
    if (t.bits() == 64) return v;
    if (t.is_bfloat()) return static_cast<double>(bfloat16(v).to_float());
    if (t.bits() == 16) return static_cast<double>(float16(v).to_float());
    return static_cast<double>(static_cast<float>(v));
}

int64_t float_to_int(Type t, double v) {
    if (std::isnan(v)) return 0;
    v = std::trunc(v);
    if (t.is_bool()) return v != 0;
    if (t.is_uint()) {
        if (v <= 0) return 0;
        const double hi = t.bits() == 64 ? 18446744073709551615.0 : std::ldexp(1.0, t.bits()) - 1;
        if (v >= hi) return t.bits() == 64 ? static_cast<int64_t>(~uint64_t{0}) : static_cast<int64_t>(hi);
        return static_cast<int64_t>(static_cast<uint64_t>(v));
    }
    const double lo = -std::ldexp(1.0, t.bits() - 1), hi = std::ldexp(1.0, t.bits() - 1);
    if (v <= lo) return t.bits() == 64 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo);
    if (v >= hi) return t.bits() == 64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi) - 1;
    return static_cast<int64_t>(v);
}

double int_to_double(Type from, int64_t v) {
    return from.is_uint() ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
}

Value read_element(const BufferSlot &b, int64_t i) {
    const uint8_t *p = b.data + i * b.type.bytes();
    Value v{};
    const Type t = b.type;
    switch (t.code()) {
    case TypeCode::Bool: v.i = *p != 0; break;
    case TypeCode::Int:
        switch (t.bits()) {
        case 8: { int8_t x; std::memcpy(&x, p, 1); v.i = x; break; }
        case 16: { int16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
        case 32: { int32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
        default: { int64_t x; std::memcpy(&x, p, 8); v.i = x; break; }
        }
        break;
    case TypeCode::UInt:
        switch (t.bits()) {
        case 8: { uint8_t x; std::memcpy(&x, p, 1); v.i = x; break; }
        case 16: { uint16_t x; std::memcpy(&x, p, 2); v.i = x; break; }
        case 32: { uint32_t x; std::memcpy(&x, p, 4); v.i = x; break; }
        default: { uint64_t x; std::memcpy(&x, p, 8); v.i = static_cast<int64_t>(x); break; }
        }
        break;
    case TypeCode::BFloat: { uint16_t x; std::memcpy(&x, p, 2); v.f = bfloat16::from_bits(x).to_float(); break; }
    case TypeCode::Float:
        if (t.bits() == 16) { uint16_t x; std::memcpy(&x, p, 2); v.f = float16::from_bits(x).to_float(); }
        else if (t.bits() == 32) { float x; std::memcpy(&x, p, 4); v.f = x; }
        else { double x; std::memcpy(&x, p, 8); v.f = x; }
        break;
    }
    return v;
}

void write_element(const BufferSlot &b, int64_t i, Value v) {
    uint8_t *p = b.data + i * b.type.bytes();
    const Type t = b.type;
    switch (t.code()) {
    case TypeCode::Bool: *p = v.i != 0; break;
    case TypeCode::Int:
    case TypeCode::UInt:
        switch (t.bits()) {
        case 8: { uint8_t x = static_cast<uint8_t>(v.i); std::memcpy(p, &x, 1); break; }
        case 16: { uint16_t x = static_cast<uint16_t>(v.i); std::memcpy(p, &x, 2); break; }
        case 32: { uint32_t x = static_cast<uint32_t>(v.i); std::memcpy(p, &x, 4); break; }
        default: { std::memcpy(p, &v.i, 8); break; }
        }
        break;
    case TypeCode::BFloat: { uint16_t x = bfloat16(v.f).bits; std::memcpy(p, &x, 2); break; }
    case TypeCode::Float:
        if (t.bits() == 16) { uint16_t x = float16(v.f).bits; std::memcpy(p, &x, 2); }
        else if (t.bits() == 32) { float x = static_cast<float>(v.f); std::memcpy(p, &x, 4); }
        else std::memcpy(p, &v.f, 8);
        break;
    }
}

bool is_float(Type t) { return t.is_float() || (t.code() == TypeCode::Float); }

class Compiler {
public:
    std::map<std::string, int> free_vars, free_bufs;
    int num_vars = 0, num_bufs = 0;

    EFn expr(const Expr &e);
    SFn stmt(const Stmt &s);

private:
    std::map<std::string, std::vector<int>> vars_, bufs_;

    int var_slot(const std::string &n) {
        auto it = vars_.find(n);
        if (it != vars_.end() && !it->second.empty()) return it->second.back();
        auto f = free_vars.find(n);
        if (f != free_vars.end()) return f->second;
        return free_vars[n] = num_vars++;
    }
    int buf_slot(const std::string &n) {
        auto it = bufs_.find(n);
        if (it != bufs_.end() && !it->second.empty()) return it->second.back();
        auto f = free_bufs.find(n);
        if (f != free_bufs.end()) return f->second;
        return free_bufs[n] = num_bufs++;
    }
    int push_var(const std::string &n) {
        int s = num_vars++;
        vars_[n].push_back(s);
        return s;
    }
    void pop_var(const std::string &n) { vars_[n].pop_back(); }

    template <typename IntOp, typename FloatOp> EFn arith(const Expr &a, const Expr &b, Type t, IntOp iop, FloatOp fop);
    EFn compare(const Expr &a, const Expr &b, int kind);
    EFn intrinsic(const Call *c);
};

template <typename IntOp, typename FloatOp>
EFn Compiler::arith(const Expr &a, const Expr &b, Type t, IntOp iop, FloatOp fop) {
    EFn fa = expr(a), fb = expr(b);
    if (is_float(t))
        return [fa, fb, t, fop](Frame &fr) {
            Value r;
            r.f = round_arith(t, fop(fa(fr).f, fb(fr).f));
            return r;
        };
    return [fa, fb, t, iop](Frame &fr) {
        Value r;
        r.i = wrap_int(t, iop(fa(fr).i, fb(fr).i, t));
        return r;
    };
}

EFn Compiler::compare(const Expr &a, const Expr &b, int kind) {
    EFn fa = expr(a), fb = expr(b);
    const Type t = a.type();
    if (is_float(t))
        return [fa, fb, kind](Frame &fr) {
            double x = fa(fr).f, y = fb(fr).f;
            Value r;
            switch (kind) {
            case 0: r.i = x == y; break;
            case 1: r.i = x != y; break;
            case 2: r.i = x < y; break;
            case 3: r.i = x <= y; break;
            case 4: r.i = x > y; break;
            default: r.i = x >= y; break;
            }
            return r;
        };
    const bool is_unsigned = t.is_uint() && t.bits() == 64;
    return [fa, fb, kind, is_unsigned](Frame &fr) {
        int64_t x = fa(fr).i, y = fb(fr).i;
        bool lt = is_unsigned ? static_cast<uint64_t>(x) < static_cast<uint64_t>(y) : x < y;
        bool gt = is_unsigned ? static_cast<uint64_t>(x) > static_cast<uint64_t>(y) : x > y;
        Value r;
        switch (kind) {
        case 0: r.i = x == y; break;
        case 1: r.i = x != y; break;
        case 2: r.i = lt; break;
        case 3: r.i = !gt; break;
        case 4: r.i = gt; break;
        default: r.i = !lt; break;
        }
        return r;
    };
}

int64_t idiv(int64_t a, int64_t b, Type t) {
    if (b == 0) return 0;
    if (t.is_uint()) return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
    if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
    int64_t q = a / b, r = a % b;
    if (r < 0) q = b > 0 ? q - 1 : q + 1;
    return q;
}
int64_t imod(int64_t a, int64_t b, Type t) {
    if (b == 0) return 0;
    if (t.is_uint()) return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r < 0) r += b > 0 ? b : -b;
    return r;
}

EFn Compiler::intrinsic(const Call *c) {
    std::vector<EFn> args;
    for (const auto &a : c->args) args.push_back(expr(a));
    const Type t = c->type;
    const Intrinsic op = c->intrinsic;
    if (!is_float(t)) {
        if (op == Intrinsic::Abs) {
            EFn a = args[0];
            return [a, t](Frame &fr) {
                Value r;
                int64_t v = a(fr).i;
                r.i = wrap_int(t, t.is_uint() ? v : (v < 0 ? static_cast<int64_t>(0ull - static_cast<uint64_t>(v)) : v));
                return r;
            };
        }
        // floor / ceil / round of an integer are the identity.
        if (op == Intrinsic::Floor || op == Intrinsic::Ceil || op == Intrinsic::Round) return args[0];
        throw Error(std::string("interpreter: intrinsic ") + intrinsic_name(op) + " on " + t.to_string() +
                    " is not supported");
    }
    std::function<double(double, double)> f;
    switch (op) {
    case Intrinsic::Exp: f = [](double x, double) { return std::exp(x); }; break;
    case Intrinsic::Log: f = [](double x, double) { return std::log(x); }; break;
    case Intrinsic::Sqrt: f = [](double x, double) { return std::sqrt(x); }; break;
    case Intrinsic::Rsqrt: f = [](double x, double) { return 1.0 / std::sqrt(x); }; break;
    case Intrinsic::Tanh: f = [](double x, double) { return std::tanh(x); }; break;
    case Intrinsic::Erf: f = [](double x, double) { return std::erf(x); }; break;
    case Intrinsic::Abs: f = [](double x, double) { return std::fabs(x); }; break;
    case Intrinsic::Floor: f = [](double x, double) { return std::floor(x); }; break;
    case Intrinsic::Ceil: f = [](double x, double) { return std::ceil(x); }; break;
    case Intrinsic::Round: f = [](double x, double) { return std::nearbyint(x); }; break;
    case Intrinsic::Pow: f = [](double x, double y) { return std::pow(x, y); }; break;
    case Intrinsic::Sigmoid: f = [](double x, double) { return 1.0 / (1.0 + std::exp(-x)); }; break;
    }
    EFn a0 = args[0];
    EFn a1 = args.size() > 1 ? args[1] : EFn();
    return [f, a0, a1, t](Frame &fr) {
        Value r;
        double x = a0(fr).f;
        double y = a1 ? a1(fr).f : 0.0;
        r.f = round_direct(t, f(x, y));
        return r;
    };
}

EFn Compiler::expr(const Expr &e) {
    if (!e.defined()) throw InternalError("interpreter: undefined expression");
    const Type t = e.type();
    switch (e.node_type()) {
    case IRNodeType::IntImm: {
        Value v;
        v.i = e.as<IntImm>()->value;
        return [v](Frame &) { return v; };
    }
    case IRNodeType::UIntImm: {
        Value v;
        v.i = static_cast<int64_t>(e.as<UIntImm>()->value);
        return [v](Frame &) { return v; };
    }
    case IRNodeType::FloatImm: {
        Value v;
        v.f = e.as<FloatImm>()->value;
        return [v](Frame &) { return v; };
    }
    case IRNodeType::Variable: {
        int s = var_slot(e.as<Variable>()->name);
        return [s](Frame &fr) { return fr.vars[static_cast<size_t>(s)]; };
    }
    case IRNodeType::Cast: {
        const Cast *c = e.as<Cast>();
        EFn v = expr(c->value);
        const Type from = c->value.type();
        if (t.is_bool()) {
            if (is_float(from)) return [v](Frame &fr) { Value r; r.i = v(fr).f != 0.0; return r; };
            return [v](Frame &fr) { Value r; r.i = v(fr).i != 0; return r; };
        }
        if (is_float(t)) {
            if (is_float(from)) return [v, t](Frame &fr) { Value r; r.f = round_direct(t, v(fr).f); return r; };
            return [v, t, from](Frame &fr) { Value r; r.f = round_direct(t, int_to_double(from, v(fr).i)); return r; };
        }
        if (is_float(from)) return [v, t](Frame &fr) { Value r; r.i = float_to_int(t, v(fr).f); return r; };
        return [v, t](Frame &fr) { Value r; r.i = wrap_int(t, v(fr).i); return r; };
    }
    case IRNodeType::Add: {
        const Add *o = e.as<Add>();
        return arith(o->a, o->b, t, [](int64_t a, int64_t b, Type) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); },
                     [](double a, double b) { return a + b; });
    }
    case IRNodeType::Sub: {
        const Sub *o = e.as<Sub>();
        return arith(o->a, o->b, t, [](int64_t a, int64_t b, Type) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); },
                     [](double a, double b) { return a - b; });
    }
    case IRNodeType::Mul: {
        const Mul *o = e.as<Mul>();
        return arith(o->a, o->b, t, [](int64_t a, int64_t b, Type) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); },
                     [](double a, double b) { return a * b; });
    }
    case IRNodeType::Div: {
        const Div *o = e.as<Div>();
        return arith(o->a, o->b, t, idiv, [](double a, double b) { return a / b; });
    }
    case IRNodeType::Mod: {
        const Mod *o = e.as<Mod>();
        return arith(o->a, o->b, t, imod, [](double a, double b) { return a - b * std::floor(a / b); });
    }
    case IRNodeType::Min: {
        const Min *o = e.as<Min>();
        const bool u64 = t.is_uint() && t.bits() == 64;
        return arith(o->a, o->b, t,
                     [u64](int64_t a, int64_t b, Type) {
                         return u64 ? (static_cast<uint64_t>(a) < static_cast<uint64_t>(b) ? a : b) : std::min(a, b);
                     },
                     [](double a, double b) { return b < a ? b : a; });
    }
    case IRNodeType::Max: {
        const Max *o = e.as<Max>();
        const bool u64 = t.is_uint() && t.bits() == 64;
        return arith(o->a, o->b, t,
                     [u64](int64_t a, int64_t b, Type) {
                         return u64 ? (static_cast<uint64_t>(a) > static_cast<uint64_t>(b) ? a : b) : std::max(a, b);
                     },
                     [](double a, double b) { return a < b ? b : a; });
    }
    case IRNodeType::EQ: return compare(e.as<EQ>()->a, e.as<EQ>()->b, 0);
    case IRNodeType::NE: return compare(e.as<NE>()->a, e.as<NE>()->b, 1);
    case IRNodeType::LT: return compare(e.as<LT>()->a, e.as<LT>()->b, 2);
    case IRNodeType::LE: return compare(e.as<LE>()->a, e.as<LE>()->b, 3);
    case IRNodeType::GT: return compare(e.as<GT>()->a, e.as<GT>()->b, 4);
    case IRNodeType::GE: return compare(e.as<GE>()->a, e.as<GE>()->b, 5);
    case IRNodeType::And: {
        EFn a = expr(e.as<And>()->a), b = expr(e.as<And>()->b);
        return [a, b](Frame &fr) { Value r; r.i = a(fr).i ? b(fr).i != 0 : 0; return r; };
    }
    case IRNodeType::Or: {
        EFn a = expr(e.as<Or>()->a), b = expr(e.as<Or>()->b);
        return [a, b](Frame &fr) { Value r; r.i = a(fr).i ? 1 : b(fr).i != 0; return r; };
    }
    case IRNodeType::Not: {
        EFn a = expr(e.as<Not>()->a);
        return [a](Frame &fr) { Value r; r.i = !a(fr).i; return r; };
    }
    case IRNodeType::Select: {
        const Select *s = e.as<Select>();
        EFn c = expr(s->condition), a = expr(s->true_value), b = expr(s->false_value);
        return [c, a, b](Frame &fr) { return c(fr).i ? a(fr) : b(fr); };
    }
    case IRNodeType::Let: {
        const Let *l = e.as<Let>();
        EFn v = expr(l->value);
        int s = push_var(l->name);
        EFn body = expr(l->body);
        pop_var(l->name);
        return [v, s, body](Frame &fr) {
            fr.vars[static_cast<size_t>(s)] = v(fr);
            return body(fr);
        };
    }
    case IRNodeType::Call: {
        const Call *c = e.as<Call>();
        if (c->call_type == CallType::Intrinsic) return intrinsic(c);
        throw InternalError("interpreter: call to " + c->name + " was not flattened into a load");
    }
    case IRNodeType::Load: {
        const Load *l = e.as<Load>();
        int b = buf_slot(l->name);
        EFn idx = expr(l->index);
        const std::string name = l->name;
        return [b, idx, name](Frame &fr) {
            const BufferSlot &buf = fr.bufs[static_cast<size_t>(b)];
            int64_t i = idx(fr).i;
            if (i < 0 || i >= buf.size)
                throw Error("interpreter: load from " + name + " at flat index " + std::to_string(i) +
                            ", outside its " + std::to_string(buf.size) + " elements");
            return read_element(buf, i);
        };
    }
    default:
        throw InternalError("interpreter: unexpected expression " + to_string(e));
    }
}

SFn Compiler::stmt(const Stmt &s) {
    if (!s.defined()) return [](Frame &) {};
    switch (s.node_type()) {
    case IRNodeType::LetStmt: {
        const LetStmt *l = s.as<LetStmt>();
        EFn v = expr(l->value);
        int slot = push_var(l->name);
        SFn body = stmt(l->body);
        pop_var(l->name);
        return [v, slot, body](Frame &fr) {
            fr.vars[static_cast<size_t>(slot)] = v(fr);
            body(fr);
        };
    }
    case IRNodeType::For: {
        const For *f = s.as<For>();
        EFn mn = expr(f->min), ext = expr(f->extent);
        int slot = push_var(f->name);
        SFn body = stmt(f->body);
        pop_var(f->name);
        // Parallel, vectorized and unrolled loops run serially here: same results, by the
        // legality rules that admitted them.
        return [mn, ext, slot, body](Frame &fr) {
            const int64_t m = mn(fr).i, n = ext(fr).i;
            for (int64_t i = 0; i < n; ++i) {
                fr.vars[static_cast<size_t>(slot)].i = m + i;
                body(fr);
            }
        };
    }
    case IRNodeType::Store: {
        const Store *st = s.as<Store>();
        int b = buf_slot(st->name);
        EFn v = expr(st->value), idx = expr(st->index);
        const std::string name = st->name;
        return [b, v, idx, name](Frame &fr) {
            const BufferSlot &buf = fr.bufs[static_cast<size_t>(b)];
            int64_t i = idx(fr).i;
            if (i < 0 || i >= buf.size)
                throw Error("interpreter: store to " + name + " at flat index " + std::to_string(i) +
                            ", outside its " + std::to_string(buf.size) + " elements");
            write_element(buf, i, v(fr));
        };
    }
    case IRNodeType::Allocate: {
        const Allocate *a = s.as<Allocate>();
        std::vector<EFn> extents;
        for (const auto &e : a->extents) extents.push_back(expr(e));
        int slot = num_bufs++;
        bufs_[a->name].push_back(slot);
        SFn body = stmt(a->body);
        bufs_[a->name].pop_back();
        const Type t = a->type;
        const std::string name = a->name;
        return [extents, slot, body, t, name](Frame &fr) {
            std::vector<int64_t> dims;
            for (const auto &e : extents) {
                int64_t x = e(fr).i;
                if (x < 0) throw Error("interpreter: allocation of " + name + " has a negative extent");
                dims.push_back(x);
            }
            std::string problem;
            const auto size = limits::tensor_size(dims, t.bytes(), &problem, 0);
            if (!size) throw Error("interpreter: the allocation of " + name + " is too large: " + problem);
            const int64_t n = size->elements;
            std::unique_ptr<uint8_t[]> storage(new uint8_t[static_cast<size_t>(std::max<int64_t>(n, 1) * t.bytes())]());
            BufferSlot saved = fr.bufs[static_cast<size_t>(slot)];
            fr.bufs[static_cast<size_t>(slot)] = BufferSlot{storage.get(), n, t};
            body(fr);
            fr.bufs[static_cast<size_t>(slot)] = saved;
        };
    }
    case IRNodeType::IfThenElse: {
        const IfThenElse *i = s.as<IfThenElse>();
        EFn c = expr(i->condition);
        SFn t = stmt(i->then_case), f = stmt(i->else_case);
        return [c, t, f](Frame &fr) {
            if (c(fr).i)
                t(fr);
            else
                f(fr);
        };
    }
    case IRNodeType::Block: {
        const Block *b = s.as<Block>();
        SFn a = stmt(b->first), r = stmt(b->rest);
        return [a, r](Frame &fr) {
            a(fr);
            r(fr);
        };
    }
    case IRNodeType::Evaluate: {
        EFn v = expr(s.as<Evaluate>()->value);
        return [v](Frame &fr) { v(fr); };
    }
    case IRNodeType::ProducerConsumer: return stmt(s.as<ProducerConsumer>()->body);
    default:
        throw InternalError("interpreter: statement not lowered: " + to_string(s));
    }
}

} // namespace

void run_lowered(const LoweredModule &m, const std::map<std::string, Buffer<>> &buffers,
                 const std::map<std::string, double> &params) {
    Compiler c;
    SFn body = c.stmt(m.body);
    Frame fr;
    fr.vars.assign(static_cast<size_t>(c.num_vars), Value{0});
    fr.bufs.assign(static_cast<size_t>(c.num_bufs), BufferSlot{});
    for (const auto &[name, slot] : c.free_vars) {
        Value v{0};
        bool bound = false;
        for (const auto &[pname, ptype] : m.params)
            if (pname == name) {
                auto it = params.find(name);
                if (it == params.end()) throw Error("run_lowered: Param " + name + " has no value");
                if (is_float(ptype))
                    v.f = it->second;
                else
                    v.i = static_cast<int64_t>(it->second);
                bound = true;
            }
        for (const auto &o : m.outputs)
            for (size_t d = 0; d < o.args.size(); ++d) {
                auto bit = buffers.find(o.name);
                if (name == o.name + "." + o.args[d] + ".min") {
                    v.i = 0;
                    bound = true;
                } else if (name == o.name + "." + o.args[d] + ".extent") {
                    if (bit == buffers.end()) throw Error("run_lowered: no buffer for output " + o.name);
                    v.i = bit->second.dim(static_cast<int>(d));
                    bound = true;
                }
            }
        if (!bound) throw Error("run_lowered: the statement reads " + name + ", which nothing defines");
        fr.vars[static_cast<size_t>(slot)] = v;
    }
    for (const auto &[name, slot] : c.free_bufs) {
        auto it = buffers.find(name);
        if (it == buffers.end()) throw Error("run_lowered: no buffer bound to " + name);
        const Buffer<> &b = it->second;
        if (!b.is_dense()) throw Error("run_lowered: buffer " + name + " is not dense row-major; pass b.copy()");
        fr.bufs[static_cast<size_t>(slot)] = BufferSlot{static_cast<uint8_t *>(b.data()), b.number_of_elements(), b.type()};
    }
    for (const auto &o : m.outputs) {
        auto it = buffers.find(o.name);
        if (it != buffers.end() && it->second.type() != o.type)
            throw Error("run_lowered: output " + o.name + " is " + o.type.to_string() + " but its buffer is " +
                        it->second.type().to_string());
    }
    for (const auto &in : m.inputs) {
        auto it = buffers.find(in.name);
        if (it != buffers.end() && it->second.type() != in.type)
            throw Error("run_lowered: Input " + in.name + " is " + in.type.to_string() + " but its buffer is " +
                        it->second.type().to_string());
    }
    body(fr);
}

} // namespace tessera
