// The reference evaluator (reference.h). Each definition is compiled once into a tree of
// small evaluation nodes over int64 and double slots — variables resolved to slot indices,
// Params to constants, Input and Func reads to strided loads — and then run over its
// iteration domain. Nothing is looked up by name per point.
#include "tessera/reference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "tessera/error.h"
#include "tessera/internal/element_io.h"
#include "tessera/internal/function.h"
#include "tessera/interval.h"
#include "tessera/ir_printer.h"
#include "tessera/realize.h"

namespace tessera {

namespace {

using internal::Definition;
using internal::FunctionContents;

bool is_integral(Type t) { return t.is_integer() || t.is_bool(); }
bool is_u64(Type t) { return t.is_uint() && t.bits() == 64; }

std::string shape_text(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string coords_text(const std::vector<int64_t> &c) {
    std::string s = "(";
    for (size_t i = 0; i < c.size(); ++i) s += (i ? ", " : "") + std::to_string(c[i]);
    return s + ")";
}

std::string stage_name(const FunctionContents &f, int stage) {
    return stage == 0 ? f.name : f.name + ".update(" + std::to_string(stage - 1) + ")";
}

// ---------------------------------------------------------------------------------------------
// Rounding and wrapping, decided once per node.

/// Wraps int64 results to the width of an integer type.
struct Wrap {
    enum Kind : uint8_t { None, Bool, Signed, Unsigned } kind = None;
    int shift = 0;
    uint64_t mask = 0;

    static Wrap for_type(Type t) {
        Wrap w;
        if (t.is_bool()) w.kind = Bool;
        else if (t.bits() >= 64) w.kind = None;
        else if (t.is_int()) { w.kind = Signed; w.shift = 64 - t.bits(); }
        else { w.kind = Unsigned; w.mask = (uint64_t{1} << t.bits()) - 1; }
        return w;
    }
    int64_t operator()(int64_t v) const {
        switch (kind) {
        case None: return v;
        case Bool: return v != 0;
        case Signed: return static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
        case Unsigned: return static_cast<int64_t>(static_cast<uint64_t>(v) & mask);
        }
        return v;
    }
};

/// How the result of a float operation is rounded to its type: fp64 as is, fp32 once,
/// bf16/fp16 to fp32 first and then to the 16-bit type (the documented "computed in fp32"
/// rule). A template parameter of the float nodes, so the inner loop does not branch on it.
enum class Rounding : uint8_t { F64, F32, BF16, F16 };

Rounding rounding_for(Type t) {
    if (t.bits() == 64) return Rounding::F64;
    if (t.bits() == 32) return Rounding::F32;
    return t.is_bfloat() ? Rounding::BF16 : Rounding::F16;
}

template <Rounding R> double round_result(double v) {
    if constexpr (R == Rounding::F64) return v;
    if constexpr (R == Rounding::F32) return static_cast<float>(v);
    if constexpr (R == Rounding::BF16) return bfloat16(static_cast<float>(v)).to_float();
    return float16(static_cast<float>(v)).to_float();
}

int64_t div_euclid(int64_t a, int64_t b, bool u64) {
    if (b == 0) return 0;
    if (u64) return static_cast<int64_t>(static_cast<uint64_t>(a) / static_cast<uint64_t>(b));
    if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); // INT64_MIN / -1 wraps
    int64_t q = a / b, r = a % b;
    if (r < 0) q += b > 0 ? -1 : 1;
    return q;
}

int64_t mod_euclid(int64_t a, int64_t b, bool u64) {
    if (b == 0) return 0;
    if (u64) return static_cast<int64_t>(static_cast<uint64_t>(a) % static_cast<uint64_t>(b));
    if (b == -1) return 0;
    int64_t r = a % b;
    if (r < 0) r += b > 0 ? b : -b;
    return r;
}

// ---------------------------------------------------------------------------------------------
// Evaluation nodes

/// The variables of one definition at one point: integer slots (pure and reduction variables,
/// integer lets) and float slots (float lets).
struct Frame {
    std::vector<int64_t> ints;
    std::vector<double> floats;
};

/// A compiled expression. Integer and Bool expressions are read with i(), float ones with f().
struct Node {
    virtual ~Node() = default;
    virtual int64_t i(Frame &) const { throw InternalError("reference evaluator: float node read as integer"); }
    virtual double f(Frame &) const { throw InternalError("reference evaluator: integer node read as float"); }
};
using NodePtr = std::unique_ptr<Node>;

struct IntConst : Node {
    int64_t v;
    explicit IntConst(int64_t v) : v(v) {}
    int64_t i(Frame &) const override { return v; }
};
struct FloatConst : Node {
    double v;
    explicit FloatConst(double v) : v(v) {}
    double f(Frame &) const override { return v; }
};
struct IntVar : Node {
    int slot;
    explicit IntVar(int s) : slot(s) {}
    int64_t i(Frame &fr) const override { return fr.ints[static_cast<size_t>(slot)]; }
};
struct FloatVar : Node {
    int slot;
    explicit FloatVar(int s) : slot(s) {}
    double f(Frame &fr) const override { return fr.floats[static_cast<size_t>(slot)]; }
};

enum class Op : uint8_t { Add, Sub, Mul, Div, Mod, Min, Max };

template <Op op> struct IntBinary : Node {
    NodePtr a, b;
    Wrap wrap;
    bool u64;
    int64_t i(Frame &fr) const override {
        const int64_t x = a->i(fr), y = b->i(fr);
        const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
        if constexpr (op == Op::Add) return wrap(static_cast<int64_t>(ux + uy));
        if constexpr (op == Op::Sub) return wrap(static_cast<int64_t>(ux - uy));
        if constexpr (op == Op::Mul) return wrap(static_cast<int64_t>(ux * uy));
        if constexpr (op == Op::Div) return wrap(div_euclid(x, y, u64));
        if constexpr (op == Op::Mod) return wrap(mod_euclid(x, y, u64));
        if constexpr (op == Op::Min) return u64 ? static_cast<int64_t>(std::min(ux, uy)) : std::min(x, y);
        if constexpr (op == Op::Max) return u64 ? static_cast<int64_t>(std::max(ux, uy)) : std::max(x, y);
        return 0;
    }
};

template <Op op, Rounding R> struct FloatBinary : Node {
    NodePtr a, b;
    double f(Frame &fr) const override {
        const double x = a->f(fr), y = b->f(fr);
        if constexpr (op == Op::Add) return round_result<R>(x + y);
        if constexpr (op == Op::Sub) return round_result<R>(x - y);
        if constexpr (op == Op::Mul) return round_result<R>(x * y);
        if constexpr (op == Op::Div) return round_result<R>(x / y);
        if constexpr (op == Op::Mod) return round_result<R>(x - y * std::floor(x / y));
        if constexpr (op == Op::Min) return y < x ? y : x;
        if constexpr (op == Op::Max) return y > x ? y : x;
        return 0;
    }
};

enum class Cmp : uint8_t { EQ, NE, LT, LE, GT, GE };

template <Cmp c, typename T> bool compare_values(T x, T y) {
    if constexpr (c == Cmp::EQ) return x == y;
    if constexpr (c == Cmp::NE) return x != y;
    if constexpr (c == Cmp::LT) return x < y;
    if constexpr (c == Cmp::LE) return x <= y;
    if constexpr (c == Cmp::GT) return x > y;
    return x >= y;
}

template <Cmp c> struct Compare : Node {
    NodePtr a, b;
    enum { Signed, Unsigned, Floating } kind = Signed;
    int64_t i(Frame &fr) const override {
        switch (kind) {
        case Signed: return compare_values<c>(a->i(fr), b->i(fr));
        case Unsigned: return compare_values<c>(static_cast<uint64_t>(a->i(fr)), static_cast<uint64_t>(b->i(fr)));
        case Floating: return compare_values<c>(a->f(fr), b->f(fr));
        }
        return 0;
    }
};

struct AndNode : Node {
    NodePtr a, b;
    int64_t i(Frame &fr) const override { return a->i(fr) && b->i(fr); }
};
struct OrNode : Node {
    NodePtr a, b;
    int64_t i(Frame &fr) const override { return a->i(fr) || b->i(fr); }
};
struct NotNode : Node {
    NodePtr a;
    int64_t i(Frame &fr) const override { return !a->i(fr); }
};

/// Only the chosen arm is evaluated.
struct SelectNode : Node {
    NodePtr c, t, e;
    int64_t i(Frame &fr) const override { return c->i(fr) ? t->i(fr) : e->i(fr); }
    double f(Frame &fr) const override { return c->i(fr) ? t->f(fr) : e->f(fr); }
};

struct LetNode : Node {
    NodePtr value, body;
    int slot;
    bool float_value;
    void bind(Frame &fr) const {
        if (float_value) fr.floats[static_cast<size_t>(slot)] = value->f(fr);
        else fr.ints[static_cast<size_t>(slot)] = value->i(fr);
    }
    int64_t i(Frame &fr) const override { bind(fr); return body->i(fr); }
    double f(Frame &fr) const override { bind(fr); return body->f(fr); }
};

struct IntToInt : Node {
    NodePtr a;
    Wrap wrap;
    int64_t i(Frame &fr) const override { return wrap(a->i(fr)); }
};
struct FloatToInt : Node {
    NodePtr a;
    Type to;
    int64_t i(Frame &fr) const override { return internal::saturating_float_to_int(to, a->f(fr)); }
};
struct IntToFloat : Node {
    NodePtr a;
    Type to;
    bool from_u64;
    double f(Frame &fr) const override {
        const int64_t v = a->i(fr);
        return internal::round_to_float_type(to, from_u64 ? static_cast<double>(static_cast<uint64_t>(v))
                                                           : static_cast<double>(v));
    }
};
struct FloatToFloat : Node {
    NodePtr a;
    Type to;
    double f(Frame &fr) const override { return internal::round_to_float_type(to, a->f(fr)); }
};

struct FloatIntrinsic : Node {
    std::vector<NodePtr> args;
    Intrinsic op;
    Type type;
    double f(Frame &fr) const override {
        const double x = args[0]->f(fr);
        double r = 0;
        switch (op) {
        case Intrinsic::Exp: r = std::exp(x); break;
        case Intrinsic::Log: r = std::log(x); break;
        case Intrinsic::Sqrt: r = std::sqrt(x); break;
        case Intrinsic::Rsqrt: r = 1.0 / std::sqrt(x); break;
        case Intrinsic::Tanh: r = std::tanh(x); break;
        case Intrinsic::Erf: r = std::erf(x); break;
        case Intrinsic::Abs: r = std::fabs(x); break;
        case Intrinsic::Floor: r = std::floor(x); break;
        case Intrinsic::Ceil: r = std::ceil(x); break;
        case Intrinsic::Round: r = std::nearbyint(x); break;
        case Intrinsic::Pow: r = std::pow(x, args[1]->f(fr)); break;
        case Intrinsic::Sigmoid: r = 1.0 / (1.0 + std::exp(-x)); break;
        }
        return internal::round_to_float_type(type, r);
    }
};

struct IntAbs : Node {
    NodePtr a;
    Wrap wrap;
    int64_t i(Frame &fr) const override {
        const int64_t v = a->i(fr);
        return wrap(v < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(v)) : v);
    }
};

/// A coordinate of a load or store: a variable slot read directly, or a general expression.
struct Index {
    int slot = -1;
    NodePtr node;
    int64_t get(Frame &fr) const { return slot >= 0 ? fr.ints[static_cast<size_t>(slot)] : node->i(fr); }
};

/// The values of a list of coordinates at the current point (for error messages).
std::vector<int64_t> coordinates(const std::vector<Index> &indices, Frame &fr) {
    std::vector<int64_t> values;
    for (const Index &i : indices) values.push_back(i.get(fr));
    return values;
}

/// A bound Input: the user's buffer.
struct InputSource {
    std::string name;
    Type type;
    const uint8_t *data = nullptr;
    std::vector<int64_t> shape, strides;
};

/// Reads an Input element of host type Elem, checking the coordinates against its shape.
template <typename Elem> struct InputLoad : Node {
    const InputSource *src;
    std::vector<Index> args;
    std::string reader; ///< "Func C (update 0)" for errors

    int64_t offset(Frame &fr) const {
        int64_t off = 0;
        for (size_t d = 0; d < args.size(); ++d) {
            const int64_t c = args[d].get(fr);
            if (c < 0 || c >= src->shape[d]) fail(fr);
            off += c * src->strides[d];
        }
        return off;
    }
    [[noreturn]] void fail(Frame &fr) const {
        throw Error(reader + " reads Input " + src->name + " at " + coords_text(coordinates(args, fr)) + ", outside its shape " +
                    shape_text(src->shape) + "; clamp the index or use a boundary condition");
    }
    Elem load(Frame &fr) const {
        Elem v;
        std::memcpy(&v, src->data + offset(fr) * static_cast<int64_t>(sizeof(Elem)), sizeof(Elem));
        return v;
    }
    int64_t i(Frame &fr) const override {
        if constexpr (std::is_same_v<Elem, bool>) return load(fr) ? 1 : 0;
        else if constexpr (std::is_integral_v<Elem>) return static_cast<int64_t>(load(fr));
        else return Node::i(fr);
    }
    double f(Frame &fr) const override {
        if constexpr (std::is_same_v<Elem, float> || std::is_same_v<Elem, double>) return load(fr);
        else if constexpr (std::is_same_v<Elem, bfloat16> || std::is_same_v<Elem, float16>) return load(fr).to_float();
        else return Node::f(fr);
    }
};

/// A realized Func: its region and values (doubles for float types, int64 otherwise — every
/// value of the Func's type is exact in them).
struct FuncStorage {
    const FunctionContents *func = nullptr;
    Type type;
    bool is_float = false;
    bool is_output = false;
    std::vector<int64_t> min, extent, stride;
    std::vector<double> fvalues;
    std::vector<int64_t> ivalues;

    int64_t size() const {
        int64_t n = 1;
        for (int64_t e : extent) n *= e;
        return n;
    }
    std::string region_text() const {
        std::string s = "[";
        for (size_t d = 0; d < min.size(); ++d)
            s += (d ? ", " : "") + std::to_string(min[d]) + ".." + std::to_string(min[d] + extent[d] - 1);
        return s + "]";
    }
};

struct FuncLoad : Node {
    const FuncStorage *src;
    std::vector<Index> args;
    std::string reader;

    int64_t offset(Frame &fr) const {
        int64_t off = 0;
        for (size_t d = 0; d < args.size(); ++d) {
            const int64_t c = args[d].get(fr) - src->min[d];
            if (c < 0 || c >= src->extent[d]) fail(fr);
            off += c * src->stride[d];
        }
        return off;
    }
    [[noreturn]] void fail(Frame &fr) const {
        throw Error(reader + " reads Func " + src->func->name + " at " + coords_text(coordinates(args, fr)) +
                    ", outside the region " + src->region_text() + " it was computed over; its index depends on a value "
                    "the region could not account for — clamp it");
    }
    int64_t i(Frame &fr) const override { return src->ivalues[static_cast<size_t>(offset(fr))]; }
    double f(Frame &fr) const override { return src->fvalues[static_cast<size_t>(offset(fr))]; }
};

// ---------------------------------------------------------------------------------------------
// The evaluation of one pipeline

struct ParamValue {
    Type type;
    int64_t int_value = 0;
    double float_value = 0;
};

class Evaluation;

/// Compiles the Exprs of one definition against the evaluation's bound Params, Inputs and
/// realized Funcs. Variables get slots as the definition's loops declare them.
class Compiler {
public:
    Compiler(const Evaluation &ev, std::string reader) : ev_(ev), reader_(std::move(reader)) {}

    /// Declares an integer loop variable and returns its slot.
    int declare_int(const std::string &name) {
        const int slot = num_ints_++;
        int_slots_[name] = slot;
        return slot;
    }
    NodePtr compile(const Expr &e);
    Index compile_index(const Expr &e) {
        Index idx;
        if (const auto *v = e.as<Variable>()) {
            auto it = int_slots_.find(v->name);
            if (it != int_slots_.end() && v->kind != VariableKind::Param) {
                idx.slot = it->second;
                return idx;
            }
        }
        idx.node = compile(e);
        return idx;
    }
    Frame make_frame() const {
        Frame fr;
        fr.ints.assign(static_cast<size_t>(num_ints_), 0);
        fr.floats.assign(static_cast<size_t>(num_floats_), 0.0);
        return fr;
    }
    const std::string &reader() const { return reader_; }

private:
    template <Op op> NodePtr int_binary(const Expr &a, const Expr &b, Type t);
    template <Op op, Rounding R> NodePtr float_binary(const Expr &a, const Expr &b);
    template <Op op> NodePtr float_binary(const Expr &a, const Expr &b, Type t);
    NodePtr arith(Op op, const Expr &a, const Expr &b, Type t);
    template <Cmp c> NodePtr comparison(const Expr &a, const Expr &b);
    NodePtr call(const Call *op, const Expr &e);
    NodePtr cast(Type to, const Expr &value);

    const Evaluation &ev_;
    std::string reader_;
    std::map<std::string, int> int_slots_, float_slots_;
    int num_ints_ = 0, num_floats_ = 0;
};

class Evaluation {
public:
    /// Computes output i over regions[i] (the whole [0, shapes[i]) when `regions` is empty).
    std::vector<Buffer<>> run(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                              const std::vector<Region> &regions, const Bindings &bindings);

    const ParamValue *param(const std::string &name) const {
        auto it = params_.find(name);
        return it == params_.end() ? nullptr : &it->second;
    }
    const InputSource *input(const std::string &name) const {
        auto it = inputs_.find(name);
        return it == inputs_.end() ? nullptr : &it->second;
    }
    const FuncStorage *storage(const FunctionContents *f) const {
        auto it = storage_.find(f);
        return it == storage_.end() ? nullptr : &it->second;
    }

private:
    void bind(const std::vector<Func> &order, const Bindings &bindings);
    int64_t constant(const Expr &e, const std::string &what) const;
    struct RVarRange {
        std::string name;
        int64_t min, extent;
    };
    std::vector<RVarRange> rdom_ranges(const FunctionContents &f, int stage) const;
    std::optional<IntervalScope> definition_scope(const FunctionContents &f, int stage, const FuncStorage &region) const;
    void compute_regions(const std::vector<Func> &order, const std::vector<Func> &outputs,
                         const std::vector<Region> &regions);
    void realize(const FunctionContents &f);
    void run_stage(const FunctionContents &f, int stage, FuncStorage &s);
    Buffer<> crop_output(const FuncStorage &s, const Region &region) const;

    std::map<std::string, ParamValue> params_;
    std::map<std::string, InputSource> inputs_;
    std::map<const FunctionContents *, FuncStorage> storage_;
    /// Funcs whose update writes data-dependent places: checked per write instead of bounded.
    std::map<const FunctionContents *, bool> dynamic_writes_;
};

template <Op op> NodePtr Compiler::int_binary(const Expr &a, const Expr &b, Type t) {
    auto n = std::make_unique<IntBinary<op>>();
    n->a = compile(a);
    n->b = compile(b);
    n->wrap = Wrap::for_type(t);
    n->u64 = is_u64(t);
    return n;
}

template <Op op, Rounding R> NodePtr Compiler::float_binary(const Expr &a, const Expr &b) {
    auto n = std::make_unique<FloatBinary<op, R>>();
    n->a = compile(a);
    n->b = compile(b);
    return n;
}

template <Op op> NodePtr Compiler::float_binary(const Expr &a, const Expr &b, Type t) {
    switch (rounding_for(t)) {
    case Rounding::F64: return float_binary<op, Rounding::F64>(a, b);
    case Rounding::F32: return float_binary<op, Rounding::F32>(a, b);
    case Rounding::BF16: return float_binary<op, Rounding::BF16>(a, b);
    case Rounding::F16: return float_binary<op, Rounding::F16>(a, b);
    }
    throw InternalError("reference evaluator: unknown float rounding");
}

NodePtr Compiler::arith(Op op, const Expr &a, const Expr &b, Type t) {
    const bool integral = is_integral(t);
#define TESSERA_ARITH(O) \
    case Op::O: return integral ? int_binary<Op::O>(a, b, t) : float_binary<Op::O>(a, b, t);
    switch (op) {
        TESSERA_ARITH(Add) TESSERA_ARITH(Sub) TESSERA_ARITH(Mul) TESSERA_ARITH(Div) TESSERA_ARITH(Mod)
        TESSERA_ARITH(Min) TESSERA_ARITH(Max)
    }
#undef TESSERA_ARITH
    throw InternalError("reference evaluator: unknown arithmetic op");
}

template <Cmp c> NodePtr Compiler::comparison(const Expr &a, const Expr &b) {
    auto n = std::make_unique<Compare<c>>();
    const Type t = a.type();
    n->kind = is_integral(t) ? (is_u64(t) ? Compare<c>::Unsigned : Compare<c>::Signed) : Compare<c>::Floating;
    n->a = compile(a);
    n->b = compile(b);
    return n;
}

NodePtr Compiler::cast(Type to, const Expr &value) {
    const Type from = value.type();
    if (is_integral(to)) {
        if (is_integral(from)) {
            auto n = std::make_unique<IntToInt>();
            n->a = compile(value);
            n->wrap = Wrap::for_type(to);
            return n;
        }
        auto n = std::make_unique<FloatToInt>();
        n->a = compile(value);
        n->to = to;
        return n;
    }
    if (is_integral(from)) {
        auto n = std::make_unique<IntToFloat>();
        n->a = compile(value);
        n->to = to;
        n->from_u64 = is_u64(from);
        return n;
    }
    auto n = std::make_unique<FloatToFloat>();
    n->a = compile(value);
    n->to = to;
    return n;
}

template <typename Elem> NodePtr make_input_load(const InputSource *src, std::vector<Index> args, const std::string &reader) {
    auto n = std::make_unique<InputLoad<Elem>>();
    n->src = src;
    n->args = std::move(args);
    n->reader = reader;
    return n;
}

NodePtr Compiler::call(const Call *op, const Expr &e) {
    switch (op->call_type) {
    case CallType::Intrinsic: {
        if (op->args.empty()) throw InternalError("reference evaluator: intrinsic without arguments");
        const Type t = e.type();
        if (is_integral(t)) {
            switch (op->intrinsic) {
            case Intrinsic::Abs: {
                auto n = std::make_unique<IntAbs>();
                n->a = compile(op->args[0]);
                n->wrap = Wrap::for_type(t);
                return n;
            }
            case Intrinsic::Floor: case Intrinsic::Ceil: case Intrinsic::Round: return compile(op->args[0]);
            default:
                throw Error(reader_ + ": intrinsic " + std::string(intrinsic_name(op->intrinsic)) +
                            " of an integer type " + t.to_string() + "; cast its argument to a float type");
            }
        }
        auto n = std::make_unique<FloatIntrinsic>();
        for (const Expr &a : op->args) n->args.push_back(compile(a));
        n->op = op->intrinsic;
        n->type = t;
        return n;
    }
    case CallType::Input: {
        const InputSource *src = ev_.input(op->name);
        if (!src) throw InternalError("reference evaluator: Input " + op->name + " was not bound");
        if (op->args.size() != src->shape.size())
            throw Error(reader_ + " calls Input " + op->name + " with " + std::to_string(op->args.size()) +
                        " arguments but it has " + std::to_string(src->shape.size()) + " dimensions");
        std::vector<Index> args;
        for (const Expr &a : op->args) args.push_back(compile_index(a));
        const Type t = src->type;
        switch (t.code()) {
        case TypeCode::Bool: return make_input_load<bool>(src, std::move(args), reader_);
        case TypeCode::Int:
            switch (t.bits()) {
            case 8: return make_input_load<int8_t>(src, std::move(args), reader_);
            case 16: return make_input_load<int16_t>(src, std::move(args), reader_);
            case 32: return make_input_load<int32_t>(src, std::move(args), reader_);
            default: return make_input_load<int64_t>(src, std::move(args), reader_);
            }
        case TypeCode::UInt:
            switch (t.bits()) {
            case 8: return make_input_load<uint8_t>(src, std::move(args), reader_);
            case 16: return make_input_load<uint16_t>(src, std::move(args), reader_);
            case 32: return make_input_load<uint32_t>(src, std::move(args), reader_);
            default: return make_input_load<uint64_t>(src, std::move(args), reader_);
            }
        case TypeCode::BFloat: return make_input_load<bfloat16>(src, std::move(args), reader_);
        case TypeCode::Float:
            switch (t.bits()) {
            case 16: return make_input_load<float16>(src, std::move(args), reader_);
            case 32: return make_input_load<float>(src, std::move(args), reader_);
            default: return make_input_load<double>(src, std::move(args), reader_);
            }
        }
        throw InternalError("reference evaluator: Input of unknown type");
    }
    case CallType::Func: {
        const FunctionContents *callee = op->func.get().get();
        const FuncStorage *src = ev_.storage(callee);
        if (!src)
            throw InternalError("reference evaluator: " + reader_ + " calls Func " + op->name +
                                " before it was realized");
        auto n = std::make_unique<FuncLoad>();
        n->src = src;
        for (const Expr &a : op->args) n->args.push_back(compile_index(a));
        n->reader = reader_;
        return n;
    }
    }
    throw InternalError("reference evaluator: unknown call type");
}

NodePtr Compiler::compile(const Expr &e) {
    if (!e.defined()) throw InternalError("reference evaluator: undefined Expr in " + reader_);
    const Type t = e.type();
    switch (e.node_type()) {
    case IRNodeType::IntImm: return std::make_unique<IntConst>(Wrap::for_type(t)(e.as<IntImm>()->value));
    case IRNodeType::UIntImm: return std::make_unique<IntConst>(static_cast<int64_t>(e.as<UIntImm>()->value));
    case IRNodeType::FloatImm: return std::make_unique<FloatConst>(e.as<FloatImm>()->value);
    case IRNodeType::Variable: {
        const auto *v = e.as<Variable>();
        if (v->kind == VariableKind::Param) {
            const ParamValue *p = ev_.param(v->name);
            if (!p) throw InternalError("reference evaluator: Param " + v->name + " was not bound");
            if (is_integral(t)) return std::make_unique<IntConst>(Wrap::for_type(t)(p->int_value));
            return std::make_unique<FloatConst>(internal::round_to_float_type(t, p->float_value));
        }
        if (auto it = int_slots_.find(v->name); it != int_slots_.end()) return std::make_unique<IntVar>(it->second);
        if (auto it = float_slots_.find(v->name); it != float_slots_.end()) return std::make_unique<FloatVar>(it->second);
        throw Error(reader_ + " uses the variable " + v->name +
                    ", which is neither one of its Func's arguments nor a variable of its reduction domain");
    }
    case IRNodeType::Cast: return cast(t, e.as<Cast>()->value);
    case IRNodeType::Add: return arith(Op::Add, e.as<Add>()->a, e.as<Add>()->b, t);
    case IRNodeType::Sub: return arith(Op::Sub, e.as<Sub>()->a, e.as<Sub>()->b, t);
    case IRNodeType::Mul: return arith(Op::Mul, e.as<Mul>()->a, e.as<Mul>()->b, t);
    case IRNodeType::Div: return arith(Op::Div, e.as<Div>()->a, e.as<Div>()->b, t);
    case IRNodeType::Mod: return arith(Op::Mod, e.as<Mod>()->a, e.as<Mod>()->b, t);
    case IRNodeType::Min: return arith(Op::Min, e.as<Min>()->a, e.as<Min>()->b, t);
    case IRNodeType::Max: return arith(Op::Max, e.as<Max>()->a, e.as<Max>()->b, t);
    case IRNodeType::EQ: return comparison<Cmp::EQ>(e.as<EQ>()->a, e.as<EQ>()->b);
    case IRNodeType::NE: return comparison<Cmp::NE>(e.as<NE>()->a, e.as<NE>()->b);
    case IRNodeType::LT: return comparison<Cmp::LT>(e.as<LT>()->a, e.as<LT>()->b);
    case IRNodeType::LE: return comparison<Cmp::LE>(e.as<LE>()->a, e.as<LE>()->b);
    case IRNodeType::GT: return comparison<Cmp::GT>(e.as<GT>()->a, e.as<GT>()->b);
    case IRNodeType::GE: return comparison<Cmp::GE>(e.as<GE>()->a, e.as<GE>()->b);
    case IRNodeType::And: {
        auto n = std::make_unique<AndNode>();
        n->a = compile(e.as<And>()->a);
        n->b = compile(e.as<And>()->b);
        return n;
    }
    case IRNodeType::Or: {
        auto n = std::make_unique<OrNode>();
        n->a = compile(e.as<Or>()->a);
        n->b = compile(e.as<Or>()->b);
        return n;
    }
    case IRNodeType::Not: {
        auto n = std::make_unique<NotNode>();
        n->a = compile(e.as<Not>()->a);
        return n;
    }
    case IRNodeType::Select: {
        const auto *op = e.as<Select>();
        auto n = std::make_unique<SelectNode>();
        n->c = compile(op->condition);
        n->t = compile(op->true_value);
        n->e = compile(op->false_value);
        return n;
    }
    case IRNodeType::Let: {
        const auto *op = e.as<Let>();
        auto n = std::make_unique<LetNode>();
        n->value = compile(op->value);
        n->float_value = !is_integral(op->value.type());
        // The body sees the new binding; restore any outer binding of the same name after it.
        auto &slots = n->float_value ? float_slots_ : int_slots_;
        auto &other = n->float_value ? int_slots_ : float_slots_;
        std::optional<int> saved, saved_other;
        if (auto it = slots.find(op->name); it != slots.end()) saved = it->second;
        if (auto it = other.find(op->name); it != other.end()) {
            saved_other = it->second;
            other.erase(it);
        }
        n->slot = n->float_value ? num_floats_++ : num_ints_++;
        slots[op->name] = n->slot;
        n->body = compile(op->body);
        if (saved) slots[op->name] = *saved; else slots.erase(op->name);
        if (saved_other) other[op->name] = *saved_other;
        return n;
    }
    case IRNodeType::Call: return call(e.as<Call>(), e);
    default:
        throw Error(reader_ + ": the reference evaluator cannot evaluate a lowered " +
                    std::string(e.node_type() == IRNodeType::Load ? "Load" : "statement") + " node");
    }
}

// ---------------------------------------------------------------------------------------------

int64_t Evaluation::constant(const Expr &e, const std::string &what) const {
    Compiler c(*this, what);
    NodePtr n = c.compile(e);
    Frame fr = c.make_frame();
    if (is_integral(e.type())) return n->i(fr);
    const double v = n->f(fr);
    if (v != std::floor(v)) throw Error(what + " is " + std::to_string(v) + ", not an integer");
    return static_cast<int64_t>(v);
}

void Evaluation::bind(const std::vector<Func> &order, const Bindings &bindings) {
    std::map<std::string, const Binding *> by_name;
    for (const Binding &b : bindings) {
        if (by_name.count(b.name)) throw Error("realize: " + b.name + " is bound twice; bind each Input and Param once");
        by_name[b.name] = &b;
    }
    for (const internal::ParamInfo &p : internal::find_params(order)) {
        auto it = by_name.find(p.name);
        if (it == by_name.end())
            throw Error("realize: Param " + p.name + " (" + p.type.to_string() + ") has no value; pass {" + p.name +
                        ", value} in the bindings");
        const Binding &b = *it->second;
        if (!b.is_param)
            throw Error("realize: " + p.name + " is a Param but is bound to a buffer; bind it to a scalar value");
        if (b.param_type != p.type)
            throw Error("realize: Param " + p.name + " is declared " + p.type.to_string() + " but bound as " +
                        b.param_type.to_string());
        // Binding's constructors keep both forms consistent with the Param's type.
        params_[p.name] = ParamValue{p.type, b.int_value, b.float_value};
    }
    for (const Input &in : internal::find_inputs(order)) {
        auto it = by_name.find(in.name());
        if (it == by_name.end())
            throw Error("realize: Input " + in.name() + " has no buffer; pass {" + in.name() +
                        ", buffer} in the bindings");
        const Binding &b = *it->second;
        if (b.is_param || !b.buffer.defined())
            throw Error("realize: Input " + in.name() + " must be bound to a buffer, not a scalar value");
        if (b.buffer.type() != in.type())
            throw Error("realize: Input " + in.name() + " is declared " + in.type().to_string() +
                        " but is bound to a " + b.buffer.type().to_string() + " buffer");
        std::vector<int64_t> declared;
        for (size_t d = 0; d < in.shape().size(); ++d)
            declared.push_back(constant(in.shape()[d], "the extent of dimension " + std::to_string(d) + " of Input " + in.name()));
        if (declared != b.buffer.shape())
            throw Error("realize: Input " + in.name() + " has shape " + shape_text(declared) +
                        " but is bound to a buffer of shape " + shape_text(b.buffer.shape()));
        InputSource src;
        src.name = in.name();
        src.type = in.type();
        src.data = static_cast<const uint8_t *>(b.buffer.data());
        src.shape = b.buffer.shape();
        src.strides = b.buffer.strides();
        inputs_[src.name] = src;
    }
}

std::vector<Evaluation::RVarRange> Evaluation::rdom_ranges(const FunctionContents &f, int stage) const {
    std::vector<RVarRange> ranges;
    const Definition &d = f.stage(stage);
    if (!d.rdom) return ranges;
    for (const internal::ReductionVariable &rv : d.rdom->vars) {
        const std::string what = "the bounds of RVar " + rv.name + " in " + stage_name(f, stage);
        ranges.push_back({rv.name, constant(rv.min, what), constant(rv.extent, what)});
    }
    return ranges;
}

Interval constant_interval(int64_t lo, int64_t hi) {
    return Interval(IntImm::make(Int(64), lo), IntImm::make(Int(64), hi));
}

/// Bounds of the variables of one definition: the Func's pure variables over its region, the
/// reduction variables over their ranges narrowed by the RDom's where-predicate, Params at
/// their values. nullopt when the definition runs at no point (an empty RDom or a predicate
/// that never holds), so it needs nothing and writes nothing.
std::optional<IntervalScope> Evaluation::definition_scope(const FunctionContents &f, int stage,
                                                          const FuncStorage &region) const {
    IntervalScope scope;
    for (const auto &[name, p] : params_) {
        Expr v = is_integral(p.type) ? (p.type.is_uint() ? UIntImm::make(p.type, static_cast<uint64_t>(p.int_value))
                                                         : IntImm::make(p.type, p.int_value))
                                     : FloatImm::make(p.type, p.float_value);
        scope[name] = Interval::single_point(v);
    }
    for (size_t d = 0; d < f.args.size(); ++d) {
        if (region.extent[d] <= 0) return std::nullopt;
        scope[f.args[d]] = Interval(IntImm::make(Int(32), region.min[d]),
                                    IntImm::make(Int(32), region.min[d] + region.extent[d] - 1));
    }
    const std::vector<RVarRange> ranges = rdom_ranges(f, stage);
    for (const RVarRange &r : ranges) {
        if (r.extent <= 0) return std::nullopt;
        scope[r.name] = Interval(IntImm::make(Int(32), r.min), IntImm::make(Int(32), r.min + r.extent - 1));
    }
    const Definition &def = f.stage(stage);
    if (def.rdom && def.rdom->predicate.defined()) {
        for (const RVarRange &r : ranges) {
            Interval narrowed = narrow_by_condition(r.name, scope[r.name], def.rdom->predicate, scope);
            if (!narrowed.is_constant()) continue;
            if (narrowed.const_min() > narrowed.const_max()) return std::nullopt;
            scope[r.name] = narrowed;
        }
    }
    return scope;
}

void Evaluation::compute_regions(const std::vector<Func> &order, const std::vector<Func> &outputs,
                                 const std::vector<Region> &regions) {
    // Consumers come after their producers in `order`, so walking it backwards finds every
    // consumer's region before the producer's is needed.
    std::map<const FunctionContents *, Box> needed;
    for (size_t i = 0; i < outputs.size(); ++i) {
        Box box;
        bool empty = false;
        for (size_t d = 0; d < regions[i].extent.size(); ++d) {
            box.push_back(constant_interval(regions[i].min[d], regions[i].min[d] + regions[i].extent[d] - 1));
            empty = empty || regions[i].extent[d] == 0;
        }
        if (!empty) needed[outputs[i].contents().get()] = box_union(needed[outputs[i].contents().get()], box);
    }
    std::map<const FunctionContents *, bool> is_output;
    for (const Func &o : outputs) is_output[o.contents().get()] = true;

    auto as_region = [](const Box &box, FuncStorage &s) {
        s.min.clear();
        s.extent.clear();
        for (const Interval &i : box) {
            s.min.push_back(i.const_min());
            s.extent.push_back(i.const_max() - i.const_min() + 1);
        }
    };

    for (size_t k = order.size(); k-- > 0;) {
        const FunctionContents &f = *order[k].contents();
        FuncStorage &s = storage_[&f];
        s.func = &f;
        s.type = f.type;
        s.is_float = !is_integral(f.type);
        s.is_output = is_output.count(&f) != 0;
        const int dims = static_cast<int>(f.args.size());
        Box box = needed[&f];
        if (box.empty() && dims > 0) {
            // Nothing reads it over a non-empty domain: an empty region.
            s.min.assign(static_cast<size_t>(dims), 0);
            s.extent.assign(static_cast<size_t>(dims), 0);
            continue;
        }
        as_region(box, s);

        // The Func's own updates: what they write and what they read of it.
        for (int stage = 1; stage < f.num_stages(); ++stage) {
            const Definition &def = f.stage(stage);
            const std::optional<IntervalScope> defined_scope = definition_scope(f, stage, s);
            if (!defined_scope) continue;
            const IntervalScope &scope = *defined_scope;
            Box written;
            for (const Expr &a : def.args) written.push_back(bounds_of_expr(a, scope));
            if (!written.empty()) {
                bool bounded = true;
                for (const Interval &i : written) bounded = bounded && i.is_constant();
                if (bounded) box = box_union(box, written);
                else if (s.is_output) dynamic_writes_[&f] = true; // checked at every write
                else
                    throw Error("Func " + f.name + ": " + stage_name(f, stage) + " writes " + f.name + "(" +
                                [&] {
                                    std::string t;
                                    for (size_t i = 0; i < def.args.size(); ++i) t += (i ? ", " : "") + to_string(def.args[i]);
                                    return t;
                                }() +
                                ") at places that cannot be bounded (they depend on loaded values); clamp the "
                                "coordinates, e.g. clamp(e, 0, n - 1), so the region of " + f.name + " is known");
            }
            std::vector<Expr> exprs = def.args;
            exprs.push_back(def.value);
            if (def.rdom && def.rdom->predicate.defined()) exprs.push_back(def.rdom->predicate);
            for (const Expr &e : exprs)
                for (const CallRegion &c : call_regions(e, scope)) {
                    const auto *call = c.call.as<Call>();
                    if (c.call_type != CallType::Func || call->func.get().get() != &f) continue;
                    if (box_is_bounded(c.box) && std::all_of(c.box.begin(), c.box.end(), [](const Interval &i) { return i.is_constant(); }))
                        box = box_union(box, c.box);
                    // An unbounded self-read is checked when it happens.
                }
        }
        as_region(box, s);

        // What this Func's definitions need of its producers.
        for (int stage = 0; stage < f.num_stages(); ++stage) {
            const Definition &def = f.stage(stage);
            const std::optional<IntervalScope> defined_scope = definition_scope(f, stage, s);
            if (!defined_scope) continue;
            const IntervalScope &scope = *defined_scope;
            std::vector<Expr> exprs = def.args;
            exprs.push_back(def.value);
            if (def.rdom && def.rdom->predicate.defined()) exprs.push_back(def.rdom->predicate);
            for (const Expr &e : exprs)
                for (const CallRegion &c : call_regions(e, scope)) {
                    if (c.call_type != CallType::Func) continue;
                    const auto *call = c.call.as<Call>();
                    const FunctionContents *producer = call->func.get().get();
                    if (producer == &f) continue;
                    for (size_t d = 0; d < c.box.size(); ++d)
                        if (!c.box[d].is_constant())
                            throw Error("Func " + producer->name + " is read by " + stage_name(f, stage) + " at " +
                                        to_string(c.call) + ", whose coordinate " + std::to_string(d) +
                                        " cannot be bounded (it depends on a loaded value or an unbounded variable); "
                                        "clamp it, e.g. clamp(e, 0, n - 1), so the region of " + producer->name +
                                        " to compute is known");
                    needed[producer] = box_union(needed[producer], c.box);
                }
        }
    }
}

/// Runs `body` at every point of the loop nest `loops` (outermost first), setting each loop's
/// variable slot.
struct Loop {
    int slot;
    int64_t min, extent;
};

template <typename F> void for_each_point(const std::vector<Loop> &loops, Frame &fr, F &&body) {
    for (const Loop &l : loops)
        if (l.extent <= 0) return;
    if (loops.empty()) {
        body();
        return;
    }
    const size_t n = loops.size();
    for (size_t d = 0; d < n; ++d) fr.ints[static_cast<size_t>(loops[d].slot)] = loops[d].min;
    const Loop &inner = loops[n - 1];
    int64_t &inner_var = fr.ints[static_cast<size_t>(inner.slot)];
    while (true) {
        for (int64_t v = inner.min; v < inner.min + inner.extent; ++v) {
            inner_var = v;
            body();
        }
        // Advance the outer loops like an odometer.
        size_t d = n - 1;
        while (d-- > 0) {
            int64_t &var = fr.ints[static_cast<size_t>(loops[d].slot)];
            if (++var < loops[d].min + loops[d].extent) break;
            var = loops[d].min;
        }
        if (d == static_cast<size_t>(-1)) return;
    }
}

void Evaluation::run_stage(const FunctionContents &f, int stage, FuncStorage &s) {
    const Definition &def = f.stage(stage);
    const std::string reader = "Func " + f.name + (stage == 0 ? "" : " (update " + std::to_string(stage - 1) + ")");
    Compiler c(*this, reader);
    std::vector<Loop> loops;
    // Pure variables, outermost first, over the Func's region.
    std::map<std::string, size_t> position;
    for (size_t d = 0; d < f.args.size(); ++d) position[f.args[d]] = d;
    for (const Expr &a : def.args) {
        const auto *v = a.as<Variable>();
        if (!v || v->kind != VariableKind::Pure) continue;
        auto it = position.find(v->name);
        if (it == position.end()) continue;
        loops.push_back({c.declare_int(v->name), s.min[it->second], s.extent[it->second]});
    }
    // The reduction domain inside, first dimension innermost.
    auto ranges = rdom_ranges(f, stage);
    for (size_t r = ranges.size(); r-- > 0;) loops.push_back({c.declare_int(ranges[r].name), ranges[r].min, ranges[r].extent});

    std::vector<Index> coords;
    for (const Expr &a : def.args) coords.push_back(c.compile_index(a));
    NodePtr value = c.compile(def.value);
    NodePtr predicate = def.rdom && def.rdom->predicate.defined() ? c.compile(def.rdom->predicate) : nullptr;
    Frame fr = c.make_frame();

    const size_t dims = coords.size();
    auto offset_of = [&](Frame &frame) -> int64_t {
        int64_t off = 0;
        for (size_t d = 0; d < dims; ++d) {
            const int64_t x = coords[d].get(frame) - s.min[d];
            if (x < 0 || x >= s.extent[d]) {
                throw Error(reader + " writes " + f.name + " at " + coords_text(coordinates(coords, frame)) + ", outside " +
                            (s.is_output ? "the output's region " : "the region ") + s.region_text() +
                            "; clamp the coordinates of the update");
            }
            off += x * s.stride[d];
        }
        return off;
    };
    if (s.is_float) {
        for_each_point(loops, fr, [&] {
            if (predicate && !predicate->i(fr)) return;
            const int64_t off = offset_of(fr);
            s.fvalues[static_cast<size_t>(off)] = value->f(fr);
        });
    } else {
        for_each_point(loops, fr, [&] {
            if (predicate && !predicate->i(fr)) return;
            const int64_t off = offset_of(fr);
            s.ivalues[static_cast<size_t>(off)] = value->i(fr);
        });
    }
}

void Evaluation::realize(const FunctionContents &f) {
    FuncStorage &s = storage_[&f];
    s.stride.assign(s.extent.size(), 1);
    for (size_t d = s.extent.size(); d-- > 1;) s.stride[d - 1] = s.stride[d] * s.extent[d];
    const int64_t n = s.size();
    if (n == 0) return;
    if (s.is_float) s.fvalues.assign(static_cast<size_t>(n), 0.0);
    else s.ivalues.assign(static_cast<size_t>(n), 0);
    for (int stage = 0; stage < f.num_stages(); ++stage) run_stage(f, stage, s);
}

Buffer<> Evaluation::crop_output(const FuncStorage &s, const Region &region) const {
    const std::vector<int64_t> &shape = region.extent;
    Buffer<> out(s.type, shape);
    int64_t count = 1;
    for (int64_t e : shape) count *= e;
    if (count == 0) return out;
    std::vector<int64_t> c(shape.size(), 0);
    auto *data = static_cast<uint8_t *>(out.data());
    const int bytes = s.type.bytes();
    for (int64_t k = 0; k < count; ++k) {
        int64_t off = 0;
        for (size_t d = 0; d < shape.size(); ++d) off += (c[d] + region.min[d] - s.min[d]) * s.stride[d];
        if (s.is_float) internal::store_float(s.type, data + k * bytes, s.fvalues[static_cast<size_t>(off)]);
        else internal::store_int(s.type, data + k * bytes, s.ivalues[static_cast<size_t>(off)]);
        for (size_t d = shape.size(); d-- > 0;) {
            if (++c[d] < shape[d]) break;
            c[d] = 0;
        }
    }
    return out;
}

std::vector<Buffer<>> Evaluation::run(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                      const std::vector<Region> &requested, const Bindings &bindings) {
    internal::check_realize_request(p, shapes);
    std::vector<Region> regions = requested;
    if (regions.empty())
        for (const std::vector<int64_t> &shape : shapes) regions.push_back(Region{std::vector<int64_t>(shape.size(), 0), shape});
    if (regions.size() != shapes.size())
        throw Error("evaluate_reference_region: " + std::to_string(regions.size()) + " regions for " +
                    std::to_string(shapes.size()) + " outputs; give one region per output");
    for (size_t i = 0; i < regions.size(); ++i) {
        const Region &r = regions[i];
        bool inside = r.min.size() == shapes[i].size() && r.extent.size() == shapes[i].size();
        for (size_t d = 0; inside && d < shapes[i].size(); ++d)
            inside = r.min[d] >= 0 && r.extent[d] >= 0 && r.min[d] + r.extent[d] <= shapes[i][d];
        if (!inside)
            throw Error("evaluate_reference_region: the region of output " + p.outputs()[i].name() + " (min " +
                        shape_text(r.min) + ", extent " + shape_text(r.extent) + ") is not inside its shape " +
                        shape_text(shapes[i]));
    }
    const std::vector<Func> order = internal::topological_order(p.outputs());
    for (const Func &f : order)
        if (!f.defined())
            throw Error("realize: Func " + f.name() + " is called but has no definition; define it before realizing");
    bind(order, bindings);
    compute_regions(order, p.outputs(), regions);
    if (!requested.empty())
        for (const auto &[f, dynamic] : dynamic_writes_)
            if (dynamic)
                throw Error("evaluate_reference_region: output " + f->name + " has an update that writes at data-dependent "
                            "places, so a part of it cannot be computed alone; evaluate the whole output");
    for (const Func &f : order) realize(*f.contents());
    std::vector<Buffer<>> results;
    for (size_t i = 0; i < p.outputs().size(); ++i)
        results.push_back(crop_output(storage_.at(p.outputs()[i].contents().get()), regions[i]));
    return results;
}

} // namespace

Buffer<> evaluate_reference(const Func &f, const std::vector<int64_t> &shape, const Bindings &bindings) {
    return evaluate_reference(Pipeline(f), {shape}, bindings).at(0);
}

std::vector<Buffer<>> evaluate_reference(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                         const Bindings &bindings) {
    Evaluation ev;
    return ev.run(p, shapes, {}, bindings);
}

std::vector<Buffer<>> evaluate_reference_region(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                                const std::vector<Region> &regions, const Bindings &bindings) {
    if (regions.empty()) throw Error("evaluate_reference_region: no regions given; give one region per output");
    Evaluation ev;
    return ev.run(p, shapes, regions, bindings);
}

} // namespace tessera
