// Flattened loop nest → LLVM IR, in the manner of Halide's CodeGen_LLVM: an IRVisitor that
// leaves the value of each Expr it visits in `value_`.
//
// Vector code: a loop marked Vectorized runs its body once per group of lanes. Every Expr then
// evaluates to a CValue that is either uniform (one scalar, the same in all lanes) or a vector
// of `lanes_` values; integer vectors also remember when they are an affine ramp
// base + stride * lane, which is how a Load or Store learns that it touches consecutive
// elements (one vector load/store) rather than scattered ones (gather/scatter). A lane-varying
// `if` or a select whose arms read memory runs under a mask (`mask_`): loads and stores in it
// become masked, so lanes that the program would not execute touch no memory.
#include "codegen_llvm.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cctype>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include <llvm/ADT/StringMap.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Host.h>
#include <llvm/Support/raw_ostream.h>

#include "loop_analysis.h"
#include "vector_math.h"
#include "tessera/codegen/buffer_abi.h"
#include "tessera/error.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal {

namespace {

/// Vectorized loops with a constant extent up to this many lanes become one vector
/// operation; longer or symbolic ones are strip-mined at the natural width.
constexpr int64_t kMaxLanes = 64;
/// Allocations of constant size up to this many bytes go on the stack (in the entry block of
/// the function that runs them, so a loop reuses one slot), larger ones on the heap.
constexpr int64_t kStackBytes = 64 * 1024;
/// Unrolled loops longer than this stay loops (a directive asking for more is a mistake that
/// would only bloat the code).
constexpr int64_t kMaxUnroll = 1024;

/// A value of an Expr in the code being generated.
struct CValue {
    llvm::Value *v = nullptr; ///< a scalar, or a vector of `lanes` elements
    int lanes = 1;
    /// For integer vectors that are an affine ramp: lane i == ramp_base + i * ramp_stride.
    llvm::Value *ramp_base = nullptr;
    int64_t ramp_stride = 0;
    /// Every value (a ramp: its base) is a multiple of this; used to prove alignment.
    int64_t multiple = 1;
    /// In address arithmetic: the value (a ramp: its base) == split_base + split_offset, with
    /// split_base null meaning 0. Loads and stores address split_base and then the constant,
    /// so accesses that differ by a constant share one pointer LLVM can compare.
    bool has_split = false;
    llvm::Value *split_base = nullptr;
    int64_t split_offset = 0;

    bool uniform() const { return lanes == 1; }
    bool is_ramp() const { return ramp_base != nullptr; }
};

/// A buffer in scope: its first element and what is known about it.
struct BufferSym {
    llvm::Value *base = nullptr; ///< pointer to the storage type
    Type type;
    int64_t align = 1; ///< bytes the base is aligned to
};

int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a < 0 ? -a : a, b < 0 ? -b : b); }

/// The largest power of two that divides m (m == 0: "anything", capped at 64).
int64_t pow2_factor(int64_t m) {
    if (m == 0) return 64;
    int64_t p = 1;
    while (p < 64 && m % (p * 2) == 0) p *= 2;
    return p;
}

const IntImm *as_const_int(const Expr &e) { return e.as<IntImm>(); }

class CodeGenCPU : public IRVisitor {
public:
    CodeGenCPU(llvm::LLVMContext &ctx, const LLVMTarget &target, const CpuOptions &options)
        : ctx_(ctx), b_(ctx), target_(target), options_(options) {}

    std::unique_ptr<llvm::Module> compile(const KernelSource &source);

    // Expressions
    void visit(const IntImm *op) override;
    void visit(const UIntImm *op) override;
    void visit(const FloatImm *op) override;
    void visit(const Variable *op) override;
    void visit(const Cast *op) override;
    void visit(const Add *op) override;
    void visit(const Sub *op) override;
    void visit(const Mul *op) override;
    void visit(const Div *op) override;
    void visit(const Mod *op) override;
    void visit(const Min *op) override;
    void visit(const Max *op) override;
    void visit(const EQ *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::ICMP_EQ, llvm::CmpInst::FCMP_OEQ); }
    void visit(const NE *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_NE, llvm::CmpInst::ICMP_NE, llvm::CmpInst::FCMP_UNE); }
    void visit(const LT *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_SLT, llvm::CmpInst::ICMP_ULT, llvm::CmpInst::FCMP_OLT); }
    void visit(const LE *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_ULE, llvm::CmpInst::FCMP_OLE); }
    void visit(const GT *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_UGT, llvm::CmpInst::FCMP_OGT); }
    void visit(const GE *op) override { compare(op->a, op->b, llvm::CmpInst::ICMP_SGE, llvm::CmpInst::ICMP_UGE, llvm::CmpInst::FCMP_OGE); }
    void visit(const And *op) override;
    void visit(const Or *op) override;
    void visit(const Not *op) override;
    void visit(const Select *op) override;
    void visit(const Let *op) override;
    void visit(const Call *op) override;
    void visit(const Load *op) override;

    // Statements
    void visit(const LetStmt *op) override;
    void visit(const For *op) override;
    void visit(const Store *op) override;
    void visit(const Provide *op) override;
    void visit(const Allocate *op) override;
    void visit(const Realize *op) override;
    void visit(const IfThenElse *op) override;
    void visit(const Block *op) override;
    void visit(const Evaluate *op) override;
    void visit(const ProducerConsumer *op) override;

private:
    // --- types and conversions ---
    llvm::Type *storage_type(Type t, int lanes = 1);
    llvm::Type *value_type(Type t, int lanes = 1);
    llvm::Value *from_storage(Type t, llvm::Value *v);
    llvm::Value *to_storage(Type t, llvm::Value *v);
    /// Rounds an fp32 value to a 16-bit float type and back (the DSL's per-operation rounding).
    llvm::Value *round_to(Type t, llvm::Value *v);
    llvm::Value *convert(Type from, Type to, llvm::Value *v);
    llvm::Value *widen(const CValue &v, int lanes);
    int common_lanes(std::initializer_list<const CValue *> values) const;

    // --- values ---
    CValue codegen(const Expr &e);
    void codegen(const Stmt &s);
    /// An Int(32) value in the 64-bit form address arithmetic uses (wide) or back in 32 bits.
    CValue to_index_width(const CValue &v, bool wide);
    /// The (non-constant part, constant part) of an integer value or ramp base.
    std::pair<llvm::Value *, int64_t> split_of(const CValue &v) const;
    /// A pointer to element `index` (a value or a ramp's base) of `base`, constant part last.
    llvm::Value *element_pointer(llvm::Type *elem, llvm::Value *base, const CValue &index);
    CValue uniform(llvm::Value *v, int64_t multiple = 1) const;
    CValue make_ramp(llvm::Value *base, int64_t stride, int lanes, int64_t multiple);
    CValue general(llvm::Value *v) const;
    llvm::Value *const_int(llvm::Type *t, int64_t v) const;
    void push_var(const std::string &name, const CValue &v) { vars_[name].push_back(v); }
    void pop_var(const std::string &name);
    const CValue &lookup_var(const std::string &name);
    const BufferSym &lookup_buffer(const std::string &name);

    // --- arithmetic helpers ---
    enum class Arith { Add, Sub, Mul, Div, Mod, Min, Max };
    void arith(Arith op, const Expr &a, const Expr &b, Type t);
    CValue arith_values(Arith op, const CValue &a, const CValue &b, Type t);
    llvm::Value *int_div_mod(bool is_div, bool is_signed, llvm::Value *a, llvm::Value *b);
    void compare(const Expr &a, const Expr &b, llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up,
                 llvm::CmpInst::Predicate fp);
    llvm::Value *call_math(const std::string &f32_name, const std::string &f64_name, llvm::Value *x);
    llvm::Value *call_intrinsic(llvm::Intrinsic::ID id, llvm::Value *x);

    // --- memory ---
    llvm::Align access_align(const BufferSym &buf, int64_t multiple, int elem_bytes, int lanes) const;
    void decorate(llvm::Instruction *inst, const std::string &buffer);
    llvm::Value *all_true(int lanes);

    // --- loops ---
    void emit_serial_loop(const std::string &name, llvm::Value *min, llvm::Value *extent,
                          const std::function<void(llvm::Value *)> &body);
    void emit_vectorized(const For *op, const CValue &min, const CValue &extent);
    void emit_unrolled(const For *op, const CValue &min, int64_t extent);
    void emit_parallel(const For *op, const CValue &min, const CValue &extent);

    // --- errors and functions ---
    int add_error(int kind, const std::string &message);
    void return_if(llvm::Value *failed, int code);
    void return_if_nonzero(llvm::Value *code);
    llvm::AllocaInst *entry_alloca(llvm::Type *t, int64_t align, const std::string &name);
    void set_function_attributes(llvm::Function *f);
    llvm::FunctionCallee runtime_function(const std::string &name);
    void emit_prologue(const KernelSource &source, const std::vector<llvm::Value *> &args);
    void emit_argv_wrapper(const KernelSource &source, llvm::Function *kernel);
    void emit_error_message_function();

    llvm::LLVMContext &ctx_;
    llvm::IRBuilder<> b_;
    LLVMTarget target_;
    CpuOptions options_;
    std::unique_ptr<llvm::Module> module_;
    llvm::Function *function_ = nullptr;
    std::string kernel_name_;
    llvm::StructType *buffer_struct_ = nullptr;

    CValue value_;
    std::map<std::string, std::vector<CValue>> vars_;
    std::map<std::string, std::vector<BufferSym>> buffers_;
    int lanes_ = 1;                ///< lanes of the vector loop being emitted (1 outside)
    llvm::Value *mask_ = nullptr;  ///< lanes that run, inside a lane-varying if (null: all)

    /// Inside address arithmetic (a Load/Store index or an index let): signed integer +, -, *
    /// get `nsw`, which lets LLVM's alias analysis tell neighbouring elements apart (so
    /// accumulators can stay in registers). An overflowing index would be out of bounds anyway.
    int index_math_ = 0;
    std::set<std::string> index_lets_;

    std::vector<std::string> messages_;
    int task_counter_ = 0;
    llvm::MDNode *alias_domain_ = nullptr;
    std::map<std::string, llvm::MDNode *> alias_scopes_;
};

// ------------------------------------------------------------------------------------------
// Types and conversions

llvm::Type *CodeGenCPU::storage_type(Type t, int lanes) {
    llvm::Type *s = nullptr;
    switch (t.code()) {
    case TypeCode::Bool: s = b_.getInt8Ty(); break;
    case TypeCode::Int:
    case TypeCode::UInt: s = b_.getIntNTy(static_cast<unsigned>(t.bits())); break;
    case TypeCode::BFloat: s = b_.getInt16Ty(); break;
    case TypeCode::Float:
        s = t.bits() == 16 ? b_.getInt16Ty() : t.bits() == 32 ? b_.getFloatTy() : b_.getDoubleTy();
        break;
    }
    return lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(lanes));
}

llvm::Type *CodeGenCPU::value_type(Type t, int lanes) {
    llvm::Type *s = nullptr;
    if (t.is_bool()) s = b_.getInt1Ty();
    else if (t.is_float() && t.bits() == 16) s = b_.getFloatTy(); // bf16 and fp16 compute in fp32
    else return storage_type(t, lanes);
    return lanes == 1 ? s : llvm::FixedVectorType::get(s, static_cast<unsigned>(lanes));
}

static int lanes_of(llvm::Value *v) {
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) return static_cast<int>(vt->getNumElements());
    return 1;
}

llvm::Value *CodeGenCPU::from_storage(Type t, llvm::Value *v) {
    const int lanes = lanes_of(v);
    if (t.is_bool()) return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    if (t.is_bfloat()) {
        llvm::Type *i32 = lanes == 1 ? (llvm::Type *)b_.getInt32Ty() : llvm::FixedVectorType::get(b_.getInt32Ty(), lanes);
        llvm::Value *wide = b_.CreateZExt(v, i32);
        wide = b_.CreateShl(wide, const_int(wide->getType(), 16));
        return b_.CreateBitCast(wide, value_type(t, lanes));
    }
    if (t.is_float() && t.bits() == 16) {
        llvm::Type *half = lanes == 1 ? b_.getHalfTy() : (llvm::Type *)llvm::FixedVectorType::get(b_.getHalfTy(), lanes);
        return b_.CreateFPExt(b_.CreateBitCast(v, half), value_type(t, lanes));
    }
    return v;
}

llvm::Value *CodeGenCPU::to_storage(Type t, llvm::Value *v) {
    const int lanes = lanes_of(v);
    if (t.is_bool()) return b_.CreateZExt(v, storage_type(t, lanes));
    if (t.is_bfloat()) {
        // Round to nearest even on the fp32 bit pattern; NaNs stay NaN (quiet bit forced), as
        // tessera::bfloat16 does.
        llvm::Type *i32 = lanes == 1 ? (llvm::Type *)b_.getInt32Ty() : llvm::FixedVectorType::get(b_.getInt32Ty(), lanes);
        llvm::Value *bits = b_.CreateBitCast(v, i32);
        llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, const_int(i32, 16)), const_int(i32, 1));
        llvm::Value *rounded = b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(bits, const_int(i32, 0x7fff)), lsb), const_int(i32, 16));
        llvm::Value *quiet_nan = b_.CreateOr(b_.CreateLShr(bits, const_int(i32, 16)), const_int(i32, 0x40));
        llvm::Value *is_nan = b_.CreateFCmpUNO(v, v);
        return b_.CreateTrunc(b_.CreateSelect(is_nan, quiet_nan, rounded), storage_type(t, lanes));
    }
    if (t.is_float() && t.bits() == 16) {
        llvm::Type *half = lanes == 1 ? b_.getHalfTy() : (llvm::Type *)llvm::FixedVectorType::get(b_.getHalfTy(), lanes);
        return b_.CreateBitCast(b_.CreateFPTrunc(v, half), storage_type(t, lanes));
    }
    return v;
}

llvm::Value *CodeGenCPU::round_to(Type t, llvm::Value *v) {
    if (t.is_float() && t.bits() == 16) return from_storage(t, to_storage(t, v));
    return v;
}

llvm::Value *CodeGenCPU::convert(Type from, Type to, llvm::Value *v) {
    if (from == to) return v;
    const int lanes = lanes_of(v);
    llvm::Type *dst = value_type(to, lanes);
    if (to.is_bool()) {
        if (from.is_float()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
        return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
    }
    if (from.is_bool()) {
        if (to.is_float()) return b_.CreateUIToFP(v, dst);
        return b_.CreateZExt(v, dst);
    }
    if (from.is_integer() && to.is_integer()) {
        // (An Int(32) may arrive in its 64-bit index form, hence the width-agnostic cast.)
        return b_.CreateIntCast(v, dst, from.is_int());
    }
    if (from.is_integer() && to.is_float()) {
        llvm::Value *f = from.is_int() ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
        return round_to(to, f);
    }
    if (from.is_float() && to.is_integer()) {
        // Truncates towards zero and saturates; NaN becomes 0 (the .sat intrinsics' rule).
        llvm::Intrinsic::ID id = to.is_int() ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
        return b_.CreateIntrinsic(id, {dst, v->getType()}, {v});
    }
    // float → float. bf16/fp16 live in fp32, so only the fp32 <-> fp64 step changes the
    // LLVM type; a 16-bit target is then rounded to.
    llvm::Value *r = v;
    if (v->getType()->getScalarType()->isDoubleTy() && dst->getScalarType()->isFloatTy()) r = b_.CreateFPTrunc(v, dst);
    else if (v->getType()->getScalarType()->isFloatTy() && dst->getScalarType()->isDoubleTy()) r = b_.CreateFPExt(v, dst);
    return round_to(to, r);
}

llvm::Value *CodeGenCPU::widen(const CValue &v, int lanes) {
    if (v.lanes == lanes) return v.v;
    if (v.lanes != 1) throw InternalError("codegen_llvm: cannot widen a " + std::to_string(v.lanes) + "-lane value to " + std::to_string(lanes));
    return b_.CreateVectorSplat(static_cast<unsigned>(lanes), v.v);
}

int CodeGenCPU::common_lanes(std::initializer_list<const CValue *> values) const {
    int lanes = 1;
    for (const CValue *v : values) lanes = std::max(lanes, v->lanes);
    return lanes;
}

// ------------------------------------------------------------------------------------------
// Values

CValue CodeGenCPU::codegen(const Expr &e) {
    if (!e.defined()) throw InternalError("codegen_llvm: undefined Expr");
    value_ = CValue();
    e.accept(this);
    if (!value_.v) throw InternalError("codegen_llvm: no value for " + to_string(e));
    // Address arithmetic is done in 64 bits: with no sign extension between the terms of an
    // index, LLVM's alias analysis sees that C[i*N + j] and C[i*N + j + 16] are different
    // elements, so an accumulator tile can stay in registers across a reduction loop.
    if (index_math_ > 0 && e.type() == Int(32)) value_ = to_index_width(value_, true);
    return value_;
}

CValue CodeGenCPU::to_index_width(const CValue &v, bool wide) {
    llvm::Type *scalar = v.v->getType()->getScalarType();
    const unsigned want = wide ? 64 : 32;
    if (!scalar->isIntegerTy() || scalar->getIntegerBitWidth() == want) return v;
    llvm::Type *t = b_.getIntNTy(want);
    if (v.is_ramp()) {
        CValue r = make_ramp(b_.CreateSExtOrTrunc(v.ramp_base, t), v.ramp_stride, v.lanes, v.multiple);
        if (v.has_split && wide) {
            r.has_split = true;
            r.split_base = v.split_base ? b_.CreateSExtOrTrunc(v.split_base, t) : nullptr;
            r.split_offset = v.split_offset;
        }
        return r;
    }
    CValue r = v;
    r.has_split = v.has_split && wide;
    if (r.has_split && v.split_base) r.split_base = b_.CreateSExtOrTrunc(v.split_base, t);
    r.v = b_.CreateSExtOrTrunc(v.v, v.lanes == 1 ? t : (llvm::Type *)llvm::FixedVectorType::get(t, static_cast<unsigned>(v.lanes)));
    return r;
}

void CodeGenCPU::codegen(const Stmt &s) {
    if (s.defined()) s.accept(this);
}

std::pair<llvm::Value *, int64_t> CodeGenCPU::split_of(const CValue &v) const {
    if (v.has_split) return {v.split_base, v.split_offset};
    llvm::Value *x = v.is_ramp() ? v.ramp_base : v.v;
    if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(x)) return {nullptr, c->getSExtValue()};
    return {x, 0};
}

llvm::Value *CodeGenCPU::element_pointer(llvm::Type *elem, llvm::Value *base, const CValue &index) {
    auto [var, offset] = split_of(index);
    llvm::Value *p = base;
    if (var) p = b_.CreateInBoundsGEP(elem, p, b_.CreateSExtOrTrunc(var, b_.getInt64Ty()));
    if (offset != 0 || !var) p = b_.CreateInBoundsGEP(elem, p, b_.getInt64(static_cast<uint64_t>(offset)));
    return p;
}

CValue CodeGenCPU::uniform(llvm::Value *v, int64_t multiple) const {
    CValue c;
    c.v = v;
    c.multiple = multiple;
    return c;
}

CValue CodeGenCPU::general(llvm::Value *v) const {
    CValue c;
    c.v = v;
    c.lanes = lanes_of(v);
    return c;
}

llvm::Value *CodeGenCPU::const_int(llvm::Type *t, int64_t v) const {
    return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), true);
}

CValue CodeGenCPU::make_ramp(llvm::Value *base, int64_t stride, int lanes, int64_t multiple) {
    if (stride == 0 || lanes == 1) return uniform(base, multiple);
    std::vector<llvm::Constant *> offsets;
    for (int i = 0; i < lanes; ++i)
        offsets.push_back(llvm::ConstantInt::get(base->getType(), static_cast<uint64_t>(stride * i), true));
    CValue c;
    c.v = b_.CreateAdd(b_.CreateVectorSplat(static_cast<unsigned>(lanes), base), llvm::ConstantVector::get(offsets));
    c.lanes = lanes;
    c.ramp_base = base;
    c.ramp_stride = stride;
    c.multiple = multiple;
    return c;
}

void CodeGenCPU::pop_var(const std::string &name) {
    auto it = vars_.find(name);
    it->second.pop_back();
    if (it->second.empty()) vars_.erase(it);
}

const CValue &CodeGenCPU::lookup_var(const std::string &name) {
    auto it = vars_.find(name);
    if (it == vars_.end())
        throw Error("host codegen: kernel '" + kernel_name_ + "' uses the variable '" + name +
                    "', which no loop, let or scalar argument defines");
    return it->second.back();
}

const BufferSym &CodeGenCPU::lookup_buffer(const std::string &name) {
    auto it = buffers_.find(name);
    if (it == buffers_.end())
        throw Error("host codegen: kernel '" + kernel_name_ + "' accesses the buffer '" + name +
                    "', which is neither an argument nor allocated");
    return it->second.back();
}

// ------------------------------------------------------------------------------------------
// Expressions

void CodeGenCPU::visit(const IntImm *op) {
    value_ = uniform(const_int(value_type(op->type), op->value), op->value == 0 ? 0 : op->value);
    value_.has_split = true;
    value_.split_offset = op->value;
}

void CodeGenCPU::visit(const UIntImm *op) {
    value_ = uniform(llvm::ConstantInt::get(value_type(op->type), op->value, false),
                     op->value == 0 ? 0 : static_cast<int64_t>(op->value & 0x3fffffffffffffffULL));
}

void CodeGenCPU::visit(const FloatImm *op) {
    value_ = uniform(llvm::ConstantFP::get(value_type(op->type), op->value));
}

void CodeGenCPU::visit(const Variable *op) {
    value_ = lookup_var(op->name);
    // An index let is bound in its 64-bit form; elsewhere an Int(32) variable reads as 32 bits.
    if (index_math_ == 0 && op->type == Int(32)) value_ = to_index_width(value_, false);
}

void CodeGenCPU::visit(const Cast *op) {
    CValue v = codegen(op->value);
    Type from = op->value.type(), to = op->type;
    if (v.is_ramp() && from.is_integer() && to.is_integer()) {
        // A ramp stays a ramp under integer conversions (wrapping arithmetic commutes with them).
        llvm::Value *base = convert(from, to, v.ramp_base);
        value_ = make_ramp(base, v.ramp_stride, v.lanes, v.multiple);
        return;
    }
    CValue r = general(convert(from, to, v.v));
    if (from.is_integer() && to.is_integer() && to.bits() >= from.bits()) r.multiple = v.multiple;
    value_ = r;
}

void CodeGenCPU::visit(const Add *op) { arith(Arith::Add, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Sub *op) { arith(Arith::Sub, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Mul *op) { arith(Arith::Mul, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Div *op) { arith(Arith::Div, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Mod *op) { arith(Arith::Mod, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Min *op) { arith(Arith::Min, op->a, op->b, op->type); }
void CodeGenCPU::visit(const Max *op) { arith(Arith::Max, op->a, op->b, op->type); }

llvm::Value *CodeGenCPU::int_div_mod(bool is_div, bool is_signed, llvm::Value *a, llvm::Value *b) {
    llvm::Type *t = a->getType();
    llvm::Value *zero = llvm::Constant::getNullValue(t);
    llvm::Value *b_zero = b_.CreateICmpEQ(b, zero);
    if (!is_signed) {
        llvm::Value *safe_b = b_.CreateSelect(b_zero, llvm::ConstantInt::get(t, 1), b);
        llvm::Value *r = is_div ? b_.CreateUDiv(a, safe_b) : b_.CreateURem(a, safe_b);
        return b_.CreateSelect(b_zero, zero, r);
    }
    // Euclidean division without traps: x / 0 == 0, and INT_MIN / -1 (which traps in hardware)
    // is computed as the wrapping negation it equals.
    llvm::Value *minus_one = llvm::Constant::getAllOnesValue(t);
    llvm::Value *b_minus_one = b_.CreateICmpEQ(b, minus_one);
    llvm::Value *safe_b = b_.CreateSelect(b_.CreateOr(b_zero, b_minus_one), llvm::ConstantInt::get(t, 1), b);
    llvm::Value *q = b_.CreateSDiv(a, safe_b);
    llvm::Value *r = b_.CreateSRem(a, safe_b);
    llvm::Value *r_negative = b_.CreateICmpSLT(r, zero);
    llvm::Value *b_positive = b_.CreateICmpSGT(b, zero);
    if (is_div) {
        llvm::Value *adjusted = b_.CreateSelect(b_positive, b_.CreateSub(q, llvm::ConstantInt::get(t, 1)),
                                                b_.CreateAdd(q, llvm::ConstantInt::get(t, 1)));
        q = b_.CreateSelect(r_negative, adjusted, q);
        q = b_.CreateSelect(b_minus_one, b_.CreateSub(zero, a), q);
        return b_.CreateSelect(b_zero, zero, q);
    }
    llvm::Value *abs_b = b_.CreateSelect(b_positive, b, b_.CreateSub(zero, b));
    r = b_.CreateSelect(r_negative, b_.CreateAdd(r, abs_b), r);
    return b_.CreateSelect(b_.CreateOr(b_zero, b_minus_one), zero, r);
}

void CodeGenCPU::arith(Arith op, const Expr &ea, const Expr &eb, Type t) {
    CValue a = codegen(ea);
    CValue b = codegen(eb);
    // Affine tracking of integer ramps: the lanes of a + b, a - b and a * constant stay affine.
    bool done = false;
    if (t.is_integer() && (a.is_ramp() || b.is_ramp()) && (a.is_ramp() || a.uniform()) && (b.is_ramp() || b.uniform())) {
        llvm::Value *base_a = a.is_ramp() ? a.ramp_base : a.v;
        llvm::Value *base_b = b.is_ramp() ? b.ramp_base : b.v;
        const int lanes = std::max(a.lanes, b.lanes);
        const bool nsw = index_math_ > 0 && t.is_int();
        if (op == Arith::Add) {
            value_ = make_ramp(b_.CreateAdd(base_a, base_b, "", false, nsw), a.ramp_stride + b.ramp_stride, lanes, gcd64(a.multiple, b.multiple));
            done = true;
        }
        if (op == Arith::Sub) {
            value_ = make_ramp(b_.CreateSub(base_a, base_b, "", false, nsw), a.ramp_stride - b.ramp_stride, lanes, gcd64(a.multiple, b.multiple));
            done = true;
        }
        if (op == Arith::Mul && !done) {
            const CValue &ramp = a.is_ramp() ? a : b;
            const CValue &scale = a.is_ramp() ? b : a;
            if (scale.uniform()) {
                if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(scale.v)) {
                    const int64_t k = c->getSExtValue();
                    value_ = make_ramp(b_.CreateMul(ramp.ramp_base, scale.v, "", false, nsw), ramp.ramp_stride * k, lanes, ramp.multiple * k);
                    done = true;
                }
            }
        }
    }
    if (!done) value_ = arith_values(op, a, b, t);
    if (index_math_ > 0 && t.is_int() && (a.uniform() || a.is_ramp()) && (b.uniform() || b.is_ramp())) {
        // Keep constant parts of address arithmetic apart (see CValue::split_base).
        auto [va, oa] = split_of(a);
        auto [vb, ob] = split_of(b);
        llvm::Value *v = nullptr;
        int64_t o = 0;
        bool ok = true;
        if (op == Arith::Add || op == Arith::Sub) {
            const bool add = op == Arith::Add;
            if (va && vb) v = add ? b_.CreateAdd(va, vb, "", false, true) : b_.CreateSub(va, vb, "", false, true);
            else if (va) v = va;
            else if (vb) v = add ? vb : b_.CreateSub(llvm::Constant::getNullValue(vb->getType()), vb, "", false, true);
            o = add ? oa + ob : oa - ob;
        } else if (op == Arith::Mul && (!va || !vb)) {
            const int64_t k = va ? ob : oa;
            llvm::Value *x = va ? va : vb;
            v = x ? b_.CreateMul(x, const_int(x->getType(), k), "", false, true) : nullptr;
            o = oa * ob;
        } else {
            ok = false;
        }
        if (ok && (value_.uniform() || value_.is_ramp())) {
            value_.has_split = true;
            value_.split_base = v;
            value_.split_offset = o;
        }
    }
}

CValue CodeGenCPU::arith_values(Arith op, const CValue &a, const CValue &b, Type t) {
    const int lanes = common_lanes({&a, &b});
    llvm::Value *x = widen(a, lanes), *y = widen(b, lanes);
    llvm::Value *r = nullptr;
    int64_t multiple = 1;
    if (t.is_float()) {
        switch (op) {
        case Arith::Add: r = b_.CreateFAdd(x, y); break;
        case Arith::Sub: r = b_.CreateFSub(x, y); break;
        case Arith::Mul: r = b_.CreateFMul(x, y); break;
        case Arith::Div: r = b_.CreateFDiv(x, y); break;
        case Arith::Mod: {
            // a - b * floor(a / b), as the reference evaluator defines float %.
            llvm::Value *q = call_intrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(x, y));
            r = b_.CreateFSub(x, b_.CreateFMul(y, q));
            break;
        }
        // std::min / std::max: the first operand unless the second is strictly smaller/larger.
        case Arith::Min: r = b_.CreateSelect(b_.CreateFCmpOLT(y, x), y, x); break;
        case Arith::Max: r = b_.CreateSelect(b_.CreateFCmpOGT(y, x), y, x); break;
        }
        r = round_to(t, r);
    } else {
        const bool s = t.is_int();
        const bool nsw = index_math_ > 0 && s;
        switch (op) {
        case Arith::Add: r = b_.CreateAdd(x, y, "", false, nsw); multiple = gcd64(a.multiple, b.multiple); break;
        case Arith::Sub: r = b_.CreateSub(x, y, "", false, nsw); multiple = gcd64(a.multiple, b.multiple); break;
        case Arith::Mul: r = b_.CreateMul(x, y, "", false, nsw); multiple = a.multiple * b.multiple; break;
        case Arith::Div: r = int_div_mod(true, s, x, y); break;
        case Arith::Mod: r = int_div_mod(false, s, x, y); break;
        case Arith::Min: r = b_.CreateSelect(s ? b_.CreateICmpSLT(x, y) : b_.CreateICmpULT(x, y), x, y); break;
        case Arith::Max: r = b_.CreateSelect(s ? b_.CreateICmpSGT(x, y) : b_.CreateICmpUGT(x, y), x, y); break;
        }
        if (t.is_bool()) multiple = 1;
    }
    CValue result = general(r);
    if (lanes == 1) result.multiple = (multiple > (int64_t{1} << 40) || multiple < 0) ? 1 : multiple;
    return result;
}

void CodeGenCPU::compare(const Expr &ea, const Expr &eb, llvm::CmpInst::Predicate sp, llvm::CmpInst::Predicate up,
                         llvm::CmpInst::Predicate fp) {
    CValue a = codegen(ea);
    CValue b = codegen(eb);
    const int lanes = common_lanes({&a, &b});
    llvm::Value *x = widen(a, lanes), *y = widen(b, lanes);
    Type t = ea.type();
    llvm::Value *r;
    if (t.is_float()) r = b_.CreateFCmp(fp, x, y);
    else if (t.is_int()) r = b_.CreateICmp(sp, x, y);
    else r = b_.CreateICmp(up, x, y); // unsigned and bool
    value_ = general(r);
}

void CodeGenCPU::visit(const And *op) {
    CValue a = codegen(op->a), b = codegen(op->b);
    const int lanes = common_lanes({&a, &b});
    value_ = general(b_.CreateAnd(widen(a, lanes), widen(b, lanes)));
}

void CodeGenCPU::visit(const Or *op) {
    CValue a = codegen(op->a), b = codegen(op->b);
    const int lanes = common_lanes({&a, &b});
    value_ = general(b_.CreateOr(widen(a, lanes), widen(b, lanes)));
}

void CodeGenCPU::visit(const Not *op) {
    CValue a = codegen(op->a);
    value_ = general(b_.CreateNot(a.v));
}

void CodeGenCPU::visit(const Select *op) {
    if (!contains_load(op->true_value) && !contains_load(op->false_value)) {
        CValue c = codegen(op->condition), t = codegen(op->true_value), f = codegen(op->false_value);
        const int lanes = common_lanes({&c, &t, &f});
        value_ = general(b_.CreateSelect(widen(c, lanes), widen(t, lanes), widen(f, lanes)));
        return;
    }
    // An arm that reads memory is evaluated only where it is chosen (a guarded out-of-range read
    // in a boundary condition must never happen).
    CValue c = codegen(op->condition);
    if (c.uniform()) {
        llvm::BasicBlock *then_bb = llvm::BasicBlock::Create(ctx_, "select.true", function_);
        llvm::BasicBlock *else_bb = llvm::BasicBlock::Create(ctx_, "select.false", function_);
        llvm::BasicBlock *merge_bb = llvm::BasicBlock::Create(ctx_, "select.merge", function_);
        b_.CreateCondBr(c.v, then_bb, else_bb);
        b_.SetInsertPoint(then_bb);
        llvm::Value *t = widen(codegen(op->true_value), lanes_);
        llvm::BasicBlock *then_end = b_.GetInsertBlock();
        b_.CreateBr(merge_bb);
        b_.SetInsertPoint(else_bb);
        llvm::Value *f = widen(codegen(op->false_value), lanes_);
        llvm::BasicBlock *else_end = b_.GetInsertBlock();
        b_.CreateBr(merge_bb);
        b_.SetInsertPoint(merge_bb);
        llvm::PHINode *phi = b_.CreatePHI(t->getType(), 2);
        phi->addIncoming(t, then_end);
        phi->addIncoming(f, else_end);
        value_ = general(phi);
        return;
    }
    llvm::Value *outer = mask_;
    llvm::Value *cond = c.v;
    mask_ = outer ? b_.CreateAnd(outer, cond) : cond;
    CValue t = codegen(op->true_value);
    mask_ = outer ? b_.CreateAnd(outer, b_.CreateNot(cond)) : b_.CreateNot(cond);
    CValue f = codegen(op->false_value);
    mask_ = outer;
    value_ = general(b_.CreateSelect(cond, widen(t, c.lanes), widen(f, c.lanes)));
}

void CodeGenCPU::visit(const Let *op) {
    const int is_index = index_lets_.count(op->name) ? 1 : 0;
    index_math_ += is_index;
    CValue v = codegen(op->value);
    index_math_ -= is_index;
    push_var(op->name, v);
    CValue body = codegen(op->body);
    pop_var(op->name);
    value_ = body;
}

llvm::Value *CodeGenCPU::call_intrinsic(llvm::Intrinsic::ID id, llvm::Value *x) {
    return b_.CreateUnaryIntrinsic(id, x);
}

llvm::Value *CodeGenCPU::call_math(const std::string &f32_name, const std::string &f64_name, llvm::Value *x) {
    // libm has no vector entry points we can rely on, so vectors call it lane by lane.
    llvm::Type *scalar = x->getType()->getScalarType();
    llvm::FunctionCallee f = module_->getOrInsertFunction(scalar->isDoubleTy() ? f64_name : f32_name,
                                                          llvm::FunctionType::get(scalar, {scalar}, false));
    if (auto *fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) {
        fn->setDoesNotThrow();
        fn->setOnlyReadsMemory(); // errno aside, these are pure; LLVM may then hoist them
    }
    const int lanes = lanes_of(x);
    if (lanes == 1) return b_.CreateCall(f, {x});
    llvm::Value *r = llvm::UndefValue::get(x->getType());
    for (int i = 0; i < lanes; ++i)
        r = b_.CreateInsertElement(r, b_.CreateCall(f, {b_.CreateExtractElement(x, static_cast<uint64_t>(i))}),
                                   static_cast<uint64_t>(i));
    return r;
}

void CodeGenCPU::visit(const Call *op) {
    if (op->call_type != CallType::Intrinsic)
        throw Error("host codegen: kernel '" + kernel_name_ + "' still calls '" + op->name +
                    "' as a function; lower the pipeline (storage flattening) before code generation");
    std::vector<CValue> args;
    for (const Expr &a : op->args) args.push_back(codegen(a));
    if (args.empty()) throw InternalError("codegen_llvm: intrinsic " + op->name + " without arguments");
    const Type t = op->type;
    const Type at = op->args[0].type();
    llvm::Value *x = args[0].v;
    llvm::Value *r = nullptr;
    // fp32 exp, tanh, erf (and sigmoid through exp) are polynomials that stay vectorized; other
    // float widths call libm.
    const bool f32 = x->getType()->getScalarType()->isFloatTy();
    switch (op->intrinsic) {
    case Intrinsic::Exp: r = f32 ? internal::emit_exp_f32(b_, x) : call_intrinsic(llvm::Intrinsic::exp, x); break;
    case Intrinsic::Log: r = call_intrinsic(llvm::Intrinsic::log, x); break;
    case Intrinsic::Sqrt: r = call_intrinsic(llvm::Intrinsic::sqrt, x); break;
    case Intrinsic::Rsqrt:
        r = b_.CreateFDiv(llvm::ConstantFP::get(x->getType(), 1.0), call_intrinsic(llvm::Intrinsic::sqrt, x));
        break;
    case Intrinsic::Tanh: r = f32 ? internal::emit_tanh_f32(b_, x) : call_math("tanhf", "tanh", x); break;
    case Intrinsic::Erf: r = f32 ? internal::emit_erf_f32(b_, x) : call_math("erff", "erf", x); break;
    case Intrinsic::Abs:
        if (at.is_float()) r = call_intrinsic(llvm::Intrinsic::fabs, x);
        else if (at.is_int()) {
            llvm::Value *zero = llvm::Constant::getNullValue(x->getType());
            r = b_.CreateSelect(b_.CreateICmpSLT(x, zero), b_.CreateSub(zero, x), x);
        } else r = x;
        break;
    case Intrinsic::Floor: r = at.is_float() ? call_intrinsic(llvm::Intrinsic::floor, x) : x; break;
    case Intrinsic::Ceil: r = at.is_float() ? call_intrinsic(llvm::Intrinsic::ceil, x) : x; break;
    case Intrinsic::Round: r = at.is_float() ? call_intrinsic(llvm::Intrinsic::roundeven, x) : x; break;
    case Intrinsic::Pow: {
        if (args.size() != 2) throw InternalError("codegen_llvm: pow needs two arguments");
        const int lanes = common_lanes({&args[0], &args[1]});
        r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, widen(args[0], lanes), widen(args[1], lanes));
        break;
    }
    case Intrinsic::Sigmoid: {
        llvm::Value *one = llvm::ConstantFP::get(x->getType(), 1.0);
        llvm::Value *minus_x = b_.CreateFNeg(x);
        llvm::Value *e = f32 ? internal::emit_exp_f32(b_, minus_x) : call_intrinsic(llvm::Intrinsic::exp, minus_x);
        r = b_.CreateFDiv(one, b_.CreateFAdd(one, e));
        break;
    }
    }
    // The result type may differ from the argument's (e.g. abs of an int): convert, then round
    // 16-bit floats once.
    if (at != t) r = convert(at, t, r);
    else r = round_to(t, r);
    value_ = general(r);
}

llvm::Align CodeGenCPU::access_align(const BufferSym &buf, int64_t multiple, int elem_bytes, int lanes) const {
    int64_t offset_align = multiple == 0 ? 64 : pow2_factor(multiple) * elem_bytes;
    int64_t a = std::min<int64_t>(buf.align, offset_align);
    // Never claim more than the access needs (nor less than an element's natural alignment,
    // which every buffer has).
    int64_t access = pow2_factor(static_cast<int64_t>(elem_bytes) * lanes);
    a = std::min<int64_t>(a, std::max<int64_t>(access, elem_bytes));
    a = std::max<int64_t>(a, pow2_factor(elem_bytes));
    return llvm::Align(static_cast<uint64_t>(std::min<int64_t>(a, 64)));
}

void CodeGenCPU::decorate(llvm::Instruction *inst, const std::string &buffer) {
    // Every buffer gets its own alias scope: a store to one buffer never clobbers a load from
    // another, so LLVM may keep loaded values in registers across stores (the prologue rejects
    // outputs that overlap other arguments, which makes this true).
    auto it = alias_scopes_.find(buffer);
    if (it == alias_scopes_.end()) return;
    std::vector<llvm::Metadata *> others;
    for (const auto &[name, scope] : alias_scopes_)
        if (name != buffer) others.push_back(scope);
    inst->setMetadata(llvm::LLVMContext::MD_alias_scope, llvm::MDNode::get(ctx_, {it->second}));
    if (!others.empty()) inst->setMetadata(llvm::LLVMContext::MD_noalias, llvm::MDNode::get(ctx_, others));
}

llvm::Value *CodeGenCPU::all_true(int lanes) {
    return llvm::Constant::getAllOnesValue(llvm::FixedVectorType::get(b_.getInt1Ty(), static_cast<unsigned>(lanes)));
}

void CodeGenCPU::visit(const Load *op) {
    const BufferSym &buf = lookup_buffer(op->name);
    const Type t = op->type;
    ++index_math_;
    CValue index = codegen(op->index);
    --index_math_;
    llvm::Type *elem = storage_type(t);
    llvm::Value *base = buf.base;
    if (base->getType() != elem->getPointerTo()) base = b_.CreateBitCast(base, elem->getPointerTo());
    const int elem_bytes = t.bytes();

    if (lanes_ == 1 || (index.uniform() && !mask_)) {
        llvm::Value *ptr = element_pointer(elem, base, index);
        llvm::LoadInst *load = b_.CreateAlignedLoad(elem, ptr, access_align(buf, index.multiple, elem_bytes, 1));
        decorate(load, op->name);
        value_ = general(from_storage(t, load));
        return;
    }
    const int lanes = lanes_;
    llvm::Type *vec = storage_type(t, lanes);
    llvm::Instruction *inst;
    if (index.is_ramp() && index.ramp_stride == 1) {
        llvm::Value *ptr = b_.CreateBitCast(element_pointer(elem, base, index), vec->getPointerTo());
        llvm::Align align = access_align(buf, index.multiple, elem_bytes, lanes);
        if (mask_) inst = b_.CreateMaskedLoad(vec, ptr, align, mask_, llvm::UndefValue::get(vec));
        else inst = b_.CreateAlignedLoad(vec, ptr, align);
    } else {
        llvm::Value *idx = b_.CreateSExtOrTrunc(widen(index, lanes), llvm::FixedVectorType::get(b_.getInt64Ty(), static_cast<unsigned>(lanes)));
        llvm::Value *ptrs = b_.CreateInBoundsGEP(elem, base, idx);
        inst = b_.CreateMaskedGather(vec, ptrs, llvm::Align(static_cast<uint64_t>(pow2_factor(elem_bytes))),
                                     mask_ ? mask_ : all_true(lanes), llvm::UndefValue::get(vec));
    }
    decorate(inst, op->name);
    value_ = general(from_storage(t, inst));
}

// ------------------------------------------------------------------------------------------
// Statements

void CodeGenCPU::visit(const LetStmt *op) {
    const int is_index = index_lets_.count(op->name) ? 1 : 0;
    index_math_ += is_index;
    CValue v = codegen(op->value);
    index_math_ -= is_index;
    push_var(op->name, v);
    codegen(op->body);
    pop_var(op->name);
}

void CodeGenCPU::visit(const Store *op) {
    const BufferSym &buf = lookup_buffer(op->name);
    const Type t = op->value.type();
    CValue value = codegen(op->value);
    ++index_math_;
    CValue index = codegen(op->index);
    --index_math_;
    llvm::Type *elem = storage_type(t);
    llvm::Value *base = buf.base;
    if (base->getType() != elem->getPointerTo()) base = b_.CreateBitCast(base, elem->getPointerTo());
    const int elem_bytes = t.bytes();
    int lanes = std::max(value.lanes, index.lanes);
    if (mask_) lanes = lanes_;

    llvm::Instruction *inst;
    if (lanes == 1) {
        llvm::Value *ptr = element_pointer(elem, base, index);
        inst = b_.CreateAlignedStore(to_storage(t, value.v), ptr, access_align(buf, index.multiple, elem_bytes, 1));
    } else {
        llvm::Value *data = to_storage(t, widen(value, lanes));
        if (index.is_ramp() && index.ramp_stride == 1) {
            llvm::Value *ptr = b_.CreateBitCast(element_pointer(elem, base, index), data->getType()->getPointerTo());
            llvm::Align align = access_align(buf, index.multiple, elem_bytes, lanes);
            if (mask_) inst = b_.CreateMaskedStore(data, ptr, align, mask_);
            else inst = b_.CreateAlignedStore(data, ptr, align);
        } else {
            // Overlapping lanes store in lane order, so the last lane wins, as a serial loop would.
            llvm::Value *idx = b_.CreateSExtOrTrunc(widen(index, lanes), llvm::FixedVectorType::get(b_.getInt64Ty(), static_cast<unsigned>(lanes)));
            llvm::Value *ptrs = b_.CreateInBoundsGEP(elem, base, idx);
            inst = b_.CreateMaskedScatter(data, ptrs, llvm::Align(static_cast<uint64_t>(pow2_factor(elem_bytes))),
                                          mask_ ? mask_ : all_true(lanes));
        }
    }
    decorate(inst, op->name);
}

void CodeGenCPU::visit(const Provide *op) {
    throw Error("host codegen: kernel '" + kernel_name_ + "' contains a multi-dimensional Provide to '" + op->name +
                "'; flatten storage (lower the pipeline) before code generation");
}

void CodeGenCPU::visit(const Realize *op) {
    throw Error("host codegen: kernel '" + kernel_name_ + "' contains a Realize of '" + op->name +
                "'; flatten storage (lower the pipeline) before code generation");
}

llvm::AllocaInst *CodeGenCPU::entry_alloca(llvm::Type *t, int64_t align, const std::string &name) {
    llvm::IRBuilderBase::InsertPointGuard guard(b_);
    llvm::BasicBlock &entry = function_->getEntryBlock();
    b_.SetInsertPoint(&entry, entry.getFirstInsertionPt());
    llvm::AllocaInst *a = b_.CreateAlloca(t, nullptr, name);
    a->setAlignment(llvm::Align(static_cast<uint64_t>(align)));
    return a;
}

void CodeGenCPU::visit(const Allocate *op) {
    const Type t = op->type;
    llvm::Type *elem = storage_type(t);
    int64_t constant_count = 1;
    bool constant = true;
    llvm::Value *count = b_.getInt64(1);
    for (const Expr &e : op->extents) {
        if (const IntImm *c = as_const_int(e)) constant_count *= std::max<int64_t>(c->value, 0);
        else constant = false;
        CValue v = codegen(e);
        if (!v.uniform()) throw InternalError("codegen_llvm: lane-varying extent of allocation " + op->name);
        count = b_.CreateMul(count, b_.CreateSExt(v.v, b_.getInt64Ty()));
    }
    const int64_t limit = op->memory == MemoryKind::Stack ? 16 * kStackBytes : kStackBytes;
    const bool on_stack = constant && constant_count * t.bytes() <= limit;

    BufferSym sym;
    sym.type = t;
    sym.align = 64;
    llvm::Value *heap = nullptr;
    if (on_stack) {
        llvm::AllocaInst *a = entry_alloca(llvm::ArrayType::get(elem, static_cast<uint64_t>(std::max<int64_t>(constant_count, 1))), 64, op->name);
        sym.base = b_.CreateBitCast(a, elem->getPointerTo());
    } else {
        llvm::Value *bytes = b_.CreateMul(count, b_.getInt64(t.bytes()));
        heap = b_.CreateCall(runtime_function("tessera_rt_malloc"), {bytes});
        const int code = add_error(TESSERA_ERROR_OUT_OF_MEMORY, "kernel '" + kernel_name_ + "': out of memory allocating the temporary '" + op->name + "'");
        return_if(b_.CreateICmpEQ(heap, llvm::ConstantPointerNull::get(b_.getInt8PtrTy())), code);
        sym.base = b_.CreateBitCast(heap, elem->getPointerTo());
    }
    buffers_[op->name].push_back(sym);
    codegen(op->body);
    auto it = buffers_.find(op->name);
    it->second.pop_back();
    if (it->second.empty()) buffers_.erase(it);
    if (heap) b_.CreateCall(runtime_function("tessera_rt_free"), {heap});
}

void CodeGenCPU::visit(const IfThenElse *op) {
    CValue c = codegen(op->condition);
    if (c.uniform()) {
        llvm::BasicBlock *then_bb = llvm::BasicBlock::Create(ctx_, "then", function_);
        llvm::BasicBlock *else_bb = op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", function_) : nullptr;
        llvm::BasicBlock *after = llvm::BasicBlock::Create(ctx_, "endif", function_);
        b_.CreateCondBr(c.v, then_bb, else_bb ? else_bb : after);
        b_.SetInsertPoint(then_bb);
        codegen(op->then_case);
        b_.CreateBr(after);
        if (else_bb) {
            b_.SetInsertPoint(else_bb);
            codegen(op->else_case);
            b_.CreateBr(after);
        }
        b_.SetInsertPoint(after);
        return;
    }
    llvm::Value *outer = mask_;
    llvm::Value *cond = widen(c, lanes_);
    mask_ = outer ? b_.CreateAnd(outer, cond) : cond;
    codegen(op->then_case);
    if (op->else_case.defined()) {
        mask_ = outer ? b_.CreateAnd(outer, b_.CreateNot(cond)) : b_.CreateNot(cond);
        codegen(op->else_case);
    }
    mask_ = outer;
}

void CodeGenCPU::visit(const Block *op) {
    codegen(op->first);
    codegen(op->rest);
}

void CodeGenCPU::visit(const Evaluate *op) { codegen(op->value); }

void CodeGenCPU::visit(const ProducerConsumer *op) { codegen(op->body); }

// ------------------------------------------------------------------------------------------
// Loops

void CodeGenCPU::emit_serial_loop(const std::string &name, llvm::Value *min, llvm::Value *extent,
                                  const std::function<void(llvm::Value *)> &body) {
    llvm::Value *end = b_.CreateAdd(min, extent, name + ".end");
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx_, name + ".loop", function_);
    llvm::BasicBlock *after = llvm::BasicBlock::Create(ctx_, name + ".after", function_);
    b_.CreateCondBr(b_.CreateICmpSLT(min, end), loop, after);
    b_.SetInsertPoint(loop);
    llvm::PHINode *i = b_.CreatePHI(min->getType(), 2, name);
    i->addIncoming(min, pre);
    body(i);
    llvm::Value *next = b_.CreateAdd(i, llvm::ConstantInt::get(min->getType(), 1), name + ".next", false, true);
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop, after);
    b_.SetInsertPoint(after);
}

void CodeGenCPU::visit(const For *op) {
    CValue min = codegen(op->min);
    CValue extent = codegen(op->extent);
    if (!min.uniform() || !extent.uniform())
        throw InternalError("codegen_llvm: loop " + op->name + " has lane-varying bounds");
    const IntImm *const_extent = as_const_int(op->extent);
    switch (op->kind) {
    case ForKind::Parallel:
        // Inside a vector loop the lanes already run together; a parallel loop there (or of one
        // iteration) is just a loop.
        if (lanes_ == 1 && !(const_extent && const_extent->value <= 1)) {
            emit_parallel(op, min, extent);
            return;
        }
        break;
    case ForKind::Vectorized:
        if (lanes_ == 1 && why_not_vectorizable(op).empty()) {
            emit_vectorized(op, min, extent);
            return;
        }
        break;
    case ForKind::Unrolled:
        if (const_extent && const_extent->value <= kMaxUnroll) {
            emit_unrolled(op, min, const_extent->value);
            return;
        }
        break;
    case ForKind::Serial: break;
    }
    const int64_t min_multiple = min.multiple;
    emit_serial_loop(op->name, min.v, extent.v, [&](llvm::Value *i) {
        push_var(op->name, uniform(i, const_extent && const_extent->value == 1 ? min_multiple : 1));
        codegen(op->body);
        pop_var(op->name);
    });
}

void CodeGenCPU::emit_unrolled(const For *op, const CValue &min, int64_t extent) {
    for (int64_t k = 0; k < extent; ++k) {
        llvm::Value *i = b_.CreateAdd(min.v, llvm::ConstantInt::get(min.v->getType(), static_cast<uint64_t>(k)));
        push_var(op->name, uniform(i, gcd64(min.multiple, k)));
        codegen(op->body);
        pop_var(op->name);
    }
}

void CodeGenCPU::emit_vectorized(const For *op, const CValue &min, const CValue &extent) {
    const IntImm *const_extent = as_const_int(op->extent);
    if (const_extent && const_extent->value <= 0) return;
    if (const_extent && const_extent->value <= kMaxLanes) {
        // The whole loop is one vector operation of `extent` lanes.
        lanes_ = static_cast<int>(const_extent->value);
        push_var(op->name, make_ramp(min.v, 1, lanes_, min.multiple));
        codegen(op->body);
        pop_var(op->name);
        lanes_ = 1;
        return;
    }
    // Strip-mine at the natural width: whole vectors, then a scalar tail for the remainder.
    const int width = std::max(4, target_.vector_bits / 32);
    llvm::Type *it = min.v->getType();
    llvm::Value *w = llvm::ConstantInt::get(it, static_cast<uint64_t>(width));
    llvm::Value *vectors = b_.CreateSDiv(extent.v, w, op->name + ".vectors");
    const int64_t base_multiple = gcd64(min.multiple, width);
    emit_serial_loop(op->name + ".v", llvm::ConstantInt::get(it, 0), vectors, [&](llvm::Value *v) {
        llvm::Value *base = b_.CreateAdd(min.v, b_.CreateMul(v, w));
        lanes_ = width;
        push_var(op->name, make_ramp(base, 1, width, base_multiple));
        codegen(op->body);
        pop_var(op->name);
        lanes_ = 1;
    });
    llvm::Value *done = b_.CreateMul(vectors, w);
    emit_serial_loop(op->name + ".tail", b_.CreateAdd(min.v, done), b_.CreateSub(extent.v, done), [&](llvm::Value *i) {
        push_var(op->name, uniform(i));
        codegen(op->body);
        pop_var(op->name);
    });
}

void CodeGenCPU::emit_parallel(const For *op, const CValue &min, const CValue &extent) {
    // The body becomes a task function; everything it reads from the enclosing scope is
    // captured by value into a closure struct on the stack.
    NamesUsed used = names_used(op->body);
    std::vector<std::pair<std::string, CValue>> captured_vars;
    std::vector<std::pair<std::string, BufferSym>> captured_buffers;
    std::vector<llvm::Type *> fields;
    for (const std::string &name : used.variables) {
        auto it = vars_.find(name);
        if (it == vars_.end() || name == op->name) continue;
        captured_vars.emplace_back(name, it->second.back());
        fields.push_back(it->second.back().v->getType());
    }
    for (const std::string &name : used.buffers) {
        auto it = buffers_.find(name);
        if (it == buffers_.end()) continue;
        captured_buffers.emplace_back(name, it->second.back());
        fields.push_back(it->second.back().base->getType());
    }
    llvm::StructType *closure_type = llvm::StructType::get(ctx_, fields);
    llvm::AllocaInst *closure = entry_alloca(closure_type, 8, op->name + ".closure");
    unsigned field = 0;
    for (const auto &[name, v] : captured_vars) b_.CreateStore(v.v, b_.CreateStructGEP(closure_type, closure, field++));
    for (const auto &[name, buf] : captured_buffers) b_.CreateStore(buf.base, b_.CreateStructGEP(closure_type, closure, field++));

    llvm::FunctionType *task_type = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt8PtrTy(), b_.getInt32Ty()}, false);
    llvm::Function *task = llvm::Function::Create(task_type, llvm::Function::InternalLinkage,
                                                  kernel_name_ + ".par." + op->name + "." + std::to_string(task_counter_++),
                                                  module_.get());
    set_function_attributes(task);

    // Emit the task with its own scope, then come back.
    llvm::IRBuilderBase::InsertPoint saved_ip = b_.saveIP();
    llvm::Function *saved_function = function_;
    auto saved_vars = std::move(vars_);
    auto saved_buffers = std::move(buffers_);
    vars_.clear();
    buffers_.clear();

    function_ = task;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", task));
    llvm::Value *closure_arg = b_.CreateBitCast(task->getArg(0), closure_type->getPointerTo());
    field = 0;
    for (const auto &[name, v] : captured_vars) {
        CValue c = v;
        c.ramp_base = nullptr; // instructions of the enclosing function are out of reach here
        c.has_split = false;
        c.split_base = nullptr;
        c.v = b_.CreateLoad(fields[field], b_.CreateStructGEP(closure_type, closure_arg, field));
        ++field;
        push_var(name, c);
    }
    for (const auto &[name, buf] : captured_buffers) {
        BufferSym s = buf;
        s.base = b_.CreateLoad(fields[field], b_.CreateStructGEP(closure_type, closure_arg, field));
        ++field;
        buffers_[name].push_back(s);
    }
    llvm::Value *index = task->getArg(1);
    if (index->getType() != min.v->getType()) index = b_.CreateSExtOrTrunc(index, min.v->getType());
    push_var(op->name, uniform(index));
    codegen(op->body);
    b_.CreateRet(b_.getInt32(0));

    function_ = saved_function;
    vars_ = std::move(saved_vars);
    buffers_ = std::move(saved_buffers);
    b_.restoreIP(saved_ip);

    llvm::Value *rc = b_.CreateCall(runtime_function("tessera_rt_parallel_for"),
                                    {task, b_.CreateBitCast(closure, b_.getInt8PtrTy()),
                                     b_.CreateSExtOrTrunc(min.v, b_.getInt32Ty()), b_.CreateSExtOrTrunc(extent.v, b_.getInt32Ty())});
    return_if_nonzero(rc);
}

// ------------------------------------------------------------------------------------------
// Functions, errors, the prologue

int CodeGenCPU::add_error(int kind, const std::string &message) {
    messages_.push_back(message);
    return kind + 256 * static_cast<int>(messages_.size());
}

void CodeGenCPU::return_if(llvm::Value *failed, int code) {
    llvm::BasicBlock *fail = llvm::BasicBlock::Create(ctx_, "fail", function_);
    llvm::BasicBlock *ok = llvm::BasicBlock::Create(ctx_, "ok", function_);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(failed, fail, ok, md.createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    b_.CreateRet(b_.getInt32(static_cast<uint32_t>(code)));
    b_.SetInsertPoint(ok);
}

void CodeGenCPU::return_if_nonzero(llvm::Value *code) {
    llvm::BasicBlock *fail = llvm::BasicBlock::Create(ctx_, "fail", function_);
    llvm::BasicBlock *ok = llvm::BasicBlock::Create(ctx_, "ok", function_);
    llvm::MDBuilder md(ctx_);
    b_.CreateCondBr(b_.CreateICmpNE(code, b_.getInt32(0)), fail, ok, md.createBranchWeights(1, 1 << 20));
    b_.SetInsertPoint(fail);
    b_.CreateRet(code);
    b_.SetInsertPoint(ok);
}

void CodeGenCPU::set_function_attributes(llvm::Function *f) {
    f->addFnAttr("target-cpu", target_.cpu);
    f->addFnAttr("target-features", target_.features);
    if (target_.vector_bits >= 512) {
        // Without these LLVM splits 512-bit vectors in two on CPUs it tunes for 256-bit code.
        f->addFnAttr("prefer-vector-width", "512");
        f->addFnAttr("min-legal-vector-width", "512");
    }
    f->addFnAttr(llvm::Attribute::NoUnwind);
    if (options_.reassociate) f->addFnAttr("unsafe-fp-math", "true");
}

llvm::FunctionCallee CodeGenCPU::runtime_function(const std::string &name) {
    llvm::Type *i8p = b_.getInt8PtrTy(), *i32 = b_.getInt32Ty(), *i64 = b_.getInt64Ty();
    llvm::FunctionType *type = nullptr;
    if (name == "tessera_rt_malloc") type = llvm::FunctionType::get(i8p, {i64}, false);
    else if (name == "tessera_rt_free") type = llvm::FunctionType::get(b_.getVoidTy(), {i8p}, false);
    else if (name == "tessera_rt_parallel_for") {
        llvm::FunctionType *task = llvm::FunctionType::get(i32, {i8p, i32}, false);
        type = llvm::FunctionType::get(i32, {task->getPointerTo(), i8p, i32, i32}, false);
    } else throw InternalError("codegen_llvm: unknown runtime function " + name);
    return module_->getOrInsertFunction(name, type);
}

void CodeGenCPU::emit_prologue(const KernelSource &source, const std::vector<llvm::Value *> &args) {
    llvm::Type *i64 = b_.getInt64Ty();
    const std::string k = "kernel '" + kernel_name_ + "': ";
    // Scalars first: buffer shapes may be Exprs of them.
    for (size_t i = 0; i < source.arguments.size(); ++i) {
        const KernelArgument &a = source.arguments[i];
        if (a.kind == KernelArgument::Kind::Scalar) push_var(a.name, uniform(from_storage(a.type, args[i])));
    }
    struct Extent {
        llvm::Value *begin, *end;
    };
    std::vector<std::pair<size_t, Extent>> ranges;
    for (size_t i = 0; i < source.arguments.size(); ++i) {
        const KernelArgument &a = source.arguments[i];
        if (!a.is_buffer()) continue;
        const std::string what = k + (a.kind == KernelArgument::Kind::Output ? "output '" : "input '") + a.name + "'";
        llvm::Value *buf = args[i];
        return_if(b_.CreateICmpEQ(buf, llvm::ConstantPointerNull::get(llvm::cast<llvm::PointerType>(buf->getType()))),
                  add_error(TESSERA_ERROR_NULL_BUFFER, what + " is NULL"));
        llvm::Value *data = b_.CreateLoad(b_.getInt8PtrTy(), b_.CreateStructGEP(buffer_struct_, buf, 0));
        return_if(b_.CreateICmpEQ(data, llvm::ConstantPointerNull::get(b_.getInt8PtrTy())),
                  add_error(TESSERA_ERROR_NULL_BUFFER, what + " has no data (data is NULL)"));
        llvm::Value *code = b_.CreateLoad(b_.getInt8Ty(), b_.CreateStructGEP(buffer_struct_, buf, 4));
        llvm::Value *bits = b_.CreateLoad(b_.getInt8Ty(), b_.CreateStructGEP(buffer_struct_, buf, 5));
        llvm::Value *type_ok = b_.CreateAnd(b_.CreateICmpEQ(code, b_.getInt8(static_cast<uint8_t>(a.type.code()))),
                                            b_.CreateICmpEQ(bits, b_.getInt8(static_cast<uint8_t>(a.type.bits()))));
        return_if(b_.CreateNot(type_ok), add_error(TESSERA_ERROR_TYPE, what + " must have element type " + a.type.to_string()));
        const int dims = static_cast<int>(a.shape.size());
        llvm::Value *ndims = b_.CreateLoad(b_.getInt32Ty(), b_.CreateStructGEP(buffer_struct_, buf, 3));
        return_if(b_.CreateICmpNE(ndims, b_.getInt32(static_cast<uint32_t>(dims))),
                  add_error(TESSERA_ERROR_DIMENSIONS, what + " must have " + std::to_string(dims) + " dimensions"));
        llvm::Value *count = b_.getInt64(1);
        if (dims > 0) {
            llvm::Value *shape = b_.CreateLoad(i64->getPointerTo(), b_.CreateStructGEP(buffer_struct_, buf, 1));
            return_if(b_.CreateICmpEQ(shape, llvm::ConstantPointerNull::get(i64->getPointerTo())),
                      add_error(TESSERA_ERROR_NULL_BUFFER, what + " has no shape (shape is NULL)"));
            std::vector<llvm::Value *> extents(static_cast<size_t>(dims));
            std::string expected;
            for (int d = 0; d < dims; ++d) expected += (d ? ", " : "") + to_string(a.shape[static_cast<size_t>(d)]);
            for (int d = 0; d < dims; ++d) {
                llvm::Value *have = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, shape, static_cast<uint64_t>(d)));
                const Expr &extent_expr = a.shape[static_cast<size_t>(d)];
                const Variable *symbolic = extent_expr.as<Variable>();
                if (symbolic && !vars_.count(symbolic->name)) {
                    // An extent left symbolic by lowering is whatever the buffer has.
                    llvm::Type *vt = value_type(extent_expr.type());
                    const int64_t max = extent_expr.type().bits() >= 64 ? INT64_MAX : (int64_t{1} << (extent_expr.type().bits() - 1)) - 1;
                    llvm::Value *bad = b_.CreateOr(b_.CreateICmpSLT(have, b_.getInt64(0)), b_.CreateICmpSGT(have, b_.getInt64(max)));
                    return_if(bad, add_error(TESSERA_ERROR_SHAPE, what + ": extent of dimension " + std::to_string(d) +
                                                                      " is negative or too large for " + extent_expr.type().to_string()));
                    push_var(symbolic->name, uniform(b_.CreateTrunc(have, vt)));
                }
                CValue want = codegen(extent_expr);
                llvm::Value *want64 = b_.CreateSExtOrTrunc(want.v, i64);
                return_if(b_.CreateICmpNE(have, want64),
                          add_error(TESSERA_ERROR_SHAPE, what + " must have shape [" + expected + "]; dimension " +
                                                             std::to_string(d) + " differs"));
                extents[static_cast<size_t>(d)] = want64;
                count = b_.CreateMul(count, want64);
            }
            // Dense row-major, or no strides at all.
            llvm::Value *strides = b_.CreateLoad(i64->getPointerTo(), b_.CreateStructGEP(buffer_struct_, buf, 2));
            llvm::BasicBlock *check = llvm::BasicBlock::Create(ctx_, "strides.check", function_);
            llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "strides.done", function_);
            b_.CreateCondBr(b_.CreateICmpEQ(strides, llvm::ConstantPointerNull::get(i64->getPointerTo())), done, check);
            b_.SetInsertPoint(check);
            llvm::Value *dense = b_.getInt64(1);
            llvm::Value *bad = b_.getFalse();
            for (int d = dims - 1; d >= 0; --d) {
                llvm::Value *stride = b_.CreateLoad(i64, b_.CreateConstInBoundsGEP1_64(i64, strides, static_cast<uint64_t>(d)));
                llvm::Value *extent = extents[static_cast<size_t>(d)];
                llvm::Value *mismatch = b_.CreateAnd(b_.CreateICmpNE(stride, dense), b_.CreateICmpNE(extent, b_.getInt64(1)));
                bad = b_.CreateOr(bad, mismatch);
                dense = b_.CreateMul(dense, extent);
            }
            return_if(bad, add_error(TESSERA_ERROR_STRIDES, what + " must be dense row-major (strides NULL or matching its shape)"));
            b_.CreateBr(done);
            b_.SetInsertPoint(done);
        }
        llvm::Value *begin = b_.CreatePtrToInt(data, i64);
        llvm::Value *end = b_.CreateAdd(begin, b_.CreateMul(count, b_.getInt64(a.type.bytes())));
        ranges.push_back({i, {begin, end}});
        BufferSym sym;
        sym.base = b_.CreateBitCast(data, storage_type(a.type)->getPointerTo());
        sym.type = a.type;
        sym.align = pow2_factor(a.type.bytes());
        buffers_[a.name].push_back(sym);
    }
    // Outputs must not overlap any other buffer: loads and stores are scheduled as if they
    // cannot (per-buffer alias scopes), which would otherwise give wrong results.
    for (const auto &[i, r] : ranges) {
        if (source.arguments[i].kind != KernelArgument::Kind::Output) continue;
        for (const auto &[j, s] : ranges) {
            if (i == j) continue;
            if (source.arguments[j].kind == KernelArgument::Kind::Output && j < i) continue; // checked once
            llvm::Value *overlap = b_.CreateAnd(b_.CreateICmpULT(r.begin, s.end), b_.CreateICmpULT(s.begin, r.end));
            overlap = b_.CreateAnd(overlap, b_.CreateAnd(b_.CreateICmpNE(r.begin, r.end), b_.CreateICmpNE(s.begin, s.end)));
            return_if(overlap, add_error(TESSERA_ERROR_ALIASING, k + "output '" + source.arguments[i].name +
                                                                     "' overlaps '" + source.arguments[j].name +
                                                                     "' in memory; pass separate buffers"));
        }
    }
}

void CodeGenCPU::emit_argv_wrapper(const KernelSource &source, llvm::Function *kernel) {
    llvm::FunctionType *type = llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt8PtrTy()->getPointerTo()}, false);
    llvm::Function *f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, kernel_name_ + "_argv", module_.get());
    set_function_attributes(f);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    std::vector<llvm::Value *> args;
    for (size_t i = 0; i < source.arguments.size(); ++i) {
        llvm::Value *p = b_.CreateLoad(b_.getInt8PtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getInt8PtrTy(), f->getArg(0), i));
        const KernelArgument &a = source.arguments[i];
        if (a.is_buffer()) args.push_back(b_.CreateBitCast(p, buffer_struct_->getPointerTo()));
        else {
            llvm::Type *t = storage_type(a.type);
            args.push_back(b_.CreateLoad(t, b_.CreateBitCast(p, t->getPointerTo())));
        }
    }
    b_.CreateRet(b_.CreateCall(kernel, args));
}

void CodeGenCPU::emit_error_message_function() {
    llvm::FunctionType *type = llvm::FunctionType::get(b_.getInt8PtrTy(), {b_.getInt32Ty()}, false);
    llvm::Function *f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, kernel_name_ + "_error_message", module_.get());
    set_function_attributes(f);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
    std::vector<llvm::Constant *> strings;
    strings.push_back(b_.CreateGlobalStringPtr("success"));
    for (const std::string &m : messages_) strings.push_back(b_.CreateGlobalStringPtr(m));
    llvm::Constant *unknown = b_.CreateGlobalStringPtr("unknown error code (not returned by kernel '" + kernel_name_ + "')");
    llvm::ArrayType *table_type = llvm::ArrayType::get(b_.getInt8PtrTy(), strings.size());
    auto *table = new llvm::GlobalVariable(*module_, table_type, true, llvm::GlobalValue::PrivateLinkage,
                                           llvm::ConstantArray::get(table_type, strings), kernel_name_ + ".messages");
    // code 0 is success; otherwise the message index is code >> 8 and the kind (low byte) must
    // match the message's kind.
    llvm::Value *code = f->getArg(0);
    llvm::Value *index = b_.CreateLShr(code, 8);
    llvm::Value *in_range = b_.CreateAnd(b_.CreateICmpSGE(code, b_.getInt32(0)),
                                         b_.CreateICmpULT(index, b_.getInt32(static_cast<uint32_t>(strings.size()))));
    llvm::BasicBlock *found = llvm::BasicBlock::Create(ctx_, "found", f);
    llvm::BasicBlock *missing = llvm::BasicBlock::Create(ctx_, "missing", f);
    b_.CreateCondBr(in_range, found, missing);
    b_.SetInsertPoint(found);
    llvm::Value *slot = b_.CreateInBoundsGEP(table_type, table, {b_.getInt32(0), index});
    b_.CreateRet(b_.CreateLoad(b_.getInt8PtrTy(), slot));
    b_.SetInsertPoint(missing);
    b_.CreateRet(unknown);
}

std::unique_ptr<llvm::Module> CodeGenCPU::compile(const KernelSource &source) {
    kernel_name_ = source.name;
    module_ = std::make_unique<llvm::Module>(source.name, ctx_);
    module_->setTargetTriple(target_.triple);

    llvm::FastMathFlags fmf;
    fmf.setAllowContract(options_.fma);
    if (options_.reassociate) fmf.setAllowReassoc();
    b_.setFastMathFlags(fmf);

    // tessera_buffer_t: {data, shape, strides, dimensions, type_code, type_bits, reserved}
    buffer_struct_ = llvm::StructType::create(ctx_,
                                              {b_.getInt8PtrTy(), b_.getInt64Ty()->getPointerTo(), b_.getInt64Ty()->getPointerTo(),
                                               b_.getInt32Ty(), b_.getInt8Ty(), b_.getInt8Ty(), b_.getInt16Ty()},
                                              "tessera_buffer_t");

    // One alias scope per buffer name (arguments and temporaries).
    llvm::MDBuilder md(ctx_);
    alias_domain_ = md.createAnonymousAliasScopeDomain(source.name);
    NamesUsed used = names_used(source.body);
    index_lets_ = index_lets(source.body);
    std::set<std::string> buffer_names = used.buffers;
    for (const KernelArgument &a : source.arguments)
        if (a.is_buffer()) buffer_names.insert(a.name);
    for (const std::string &n : buffer_names) alias_scopes_[n] = md.createAnonymousAliasScope(alias_domain_, n);

    std::vector<llvm::Type *> param_types;
    for (const KernelArgument &a : source.arguments)
        param_types.push_back(a.is_buffer() ? (llvm::Type *)buffer_struct_->getPointerTo() : storage_type(a.type));
    llvm::FunctionType *type = llvm::FunctionType::get(b_.getInt32Ty(), param_types, false);
    llvm::Function *kernel = llvm::Function::Create(type, llvm::Function::ExternalLinkage, source.name, module_.get());
    set_function_attributes(kernel);
    std::vector<llvm::Value *> args;
    for (size_t i = 0; i < source.arguments.size(); ++i) {
        kernel->getArg(static_cast<unsigned>(i))->setName(source.arguments[i].name);
        args.push_back(kernel->getArg(static_cast<unsigned>(i)));
    }
    function_ = kernel;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", kernel));
    emit_prologue(source, args);
    codegen(source.body);
    b_.CreateRet(b_.getInt32(0));

    emit_argv_wrapper(source, kernel);
    emit_error_message_function();

    std::string errors;
    llvm::raw_string_ostream os(errors);
    if (llvm::verifyModule(*module_, &os))
        throw InternalError("codegen_llvm: LLVM rejected the module of kernel '" + source.name + "': " + os.str());
    return std::move(module_);
}

} // namespace

LLVMTarget resolve_llvm_target(const CpuOptions &options) {
    LLVMTarget t;
    t.triple = llvm::sys::getProcessTriple();
    t.cpu = options.cpu.empty() ? llvm::sys::getHostCPUName().str() : options.cpu;
    llvm::StringMap<bool> host;
    llvm::sys::getHostCPUFeatures(host);
    std::map<std::string, bool> features;
    for (const auto &f : host) features[f.getKey().str()] = f.getValue();
    // Options come after the host's list, so they win ("-avx512f" turns it off).
    std::string extra = options.features;
    size_t pos = 0;
    while (pos < extra.size()) {
        size_t comma = extra.find(',', pos);
        std::string item = extra.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        pos = comma == std::string::npos ? extra.size() : comma + 1;
        if (item.size() < 2 || (item[0] != '+' && item[0] != '-'))
            throw Error("CpuOptions::features: '" + item + "' is not of the form +feature or -feature (e.g. \"+avx2,-avx512f\")");
        features[item.substr(1)] = item[0] == '+';
    }
    // A disabled base feature disables the wider ones built on it.
    if (!features["avx512f"])
        for (auto &[name, on] : features)
            if (name.rfind("avx512", 0) == 0 || name == "amx-tile" || name == "amx-bf16" || name == "amx-int8") on = false;
    if (!features["avx2"]) features["avx512f"] = false;
    if (!features["avx"]) features["avx2"] = features["fma"] = features["f16c"] = features["avx512f"] = false;
    std::string s;
    for (const auto &[name, on] : features) s += (s.empty() ? "" : ",") + std::string(on ? "+" : "-") + name;
    t.features = s;
    t.vector_bits = features["avx512f"] ? 512 : features["avx"] ? 256 : 128;
    return t;
}

std::unique_ptr<llvm::Module> codegen_llvm(const KernelSource &source, llvm::LLVMContext &context,
                                           const LLVMTarget &target, const CpuOptions &options) {
    if (source.name.empty() || !(std::isalpha(static_cast<unsigned char>(source.name[0])) || source.name[0] == '_'))
        throw Error("host codegen: kernel name '" + source.name + "' is not a C identifier");
    for (char c : source.name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
            throw Error("host codegen: kernel name '" + source.name + "' is not a C identifier (use letters, digits, _)");
    CodeGenCPU cg(context, target, options);
    return cg.compile(source);
}

} // namespace tessera::internal
