#pragma once
// The IR: expressions (Expr) and statements (Stmt). Nodes are small immutable structs, shared
// by reference count, each built only through a static make() that checks its arguments and
// throws tessera::Error on misuse. Passes read them with IRVisitor and rewrite them with
// IRMutator (ir_visitor.h, ir_mutator.h).
//
// Semantics worth knowing:
// - Integer Div and Mod round towards negative infinity (Euclidean, as in Halide), so index
//   arithmetic with negative offsets (padding) behaves; integer division by zero yields 0 in
//   every evaluator (documented, never UB). Float Div is IEEE; float Mod is
//   a - b * floor(a / b) (the sign of the divisor, as Halide and Python).
// - Float arithmetic on BFloat/Float(16) values is carried out in fp32 and rounded back to the
//   operand type after each operation (round to nearest even).
// - Integer overflow wraps (two's complement) in every evaluator.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/half.h"
#include "tessera/type.h"

namespace tessera {

class IRVisitor;
struct Expr;
struct Stmt;

namespace internal {
struct FunctionContents;
struct InputContents;
struct ReductionDomainContents;
} // namespace internal

enum class IRNodeType : uint8_t {
    // Expressions
    IntImm, UIntImm, FloatImm, Variable, Cast, Add, Sub, Mul, Div, Mod, Min, Max,
    EQ, NE, LT, LE, GT, GE, And, Or, Not, Select, Let, Call, Load,
    // Statements
    LetStmt, For, Store, Provide, Allocate, Realize, IfThenElse, Block, Evaluate,
    ProducerConsumer,
};

/// Base of every IR node.
struct IRNode {
    explicit IRNode(IRNodeType t) : node_type(t) {}
    virtual ~IRNode() = default;
    virtual void accept(IRVisitor *v) const = 0;
    const IRNodeType node_type;
};

struct BaseExprNode : IRNode {
    BaseExprNode(IRNodeType t, Type ty) : IRNode(t), type(ty) {}
    const Type type;
};
struct BaseStmtNode : IRNode {
    using IRNode::IRNode;
};

/// A handle to an immutable expression node. Empty (undefined) when default-constructed.
struct Expr {
    Expr() = default;
    explicit Expr(std::shared_ptr<const BaseExprNode> n) : node(std::move(n)) {}
    /// Implicit from C++ scalars: int → Int(32), long / long long (int64_t) → Int(64),
    /// unsigned → UInt(32), unsigned long / unsigned long long (uint64_t) → UInt(64),
    /// float → Float(32), double → Float(64), bool → Bool, bfloat16 → BFloat(16),
    /// float16 → Float(16). Used as an operand next to a typed Expr, such a constant adapts to
    /// the other operand's type (see ir_operator.h).
    Expr(int v);
    Expr(long v);
    Expr(long long v);
    Expr(unsigned v);
    Expr(unsigned long v);
    Expr(unsigned long long v);
    Expr(float v);
    Expr(double v);
    Expr(bool v);
    Expr(bfloat16 v);
    Expr(float16 v);
    /// A string literal would otherwise silently become Bool(true).
    Expr(const char *) = delete;

    bool defined() const { return node != nullptr; }
    Type type() const;
    IRNodeType node_type() const;
    void accept(IRVisitor *v) const;
    /// The node as T, or nullptr if it is another kind.
    template <typename T> const T *as() const {
        return node && node->node_type == T::static_type ? static_cast<const T *>(node.get())
                                                         : nullptr;
    }
    bool same_as(const Expr &o) const { return node == o.node; }

    std::shared_ptr<const BaseExprNode> node;
};

/// A handle to an immutable statement node.
struct Stmt {
    Stmt() = default;
    explicit Stmt(std::shared_ptr<const BaseStmtNode> n) : node(std::move(n)) {}
    bool defined() const { return node != nullptr; }
    IRNodeType node_type() const;
    void accept(IRVisitor *v) const;
    template <typename T> const T *as() const {
        return node && node->node_type == T::static_type ? static_cast<const T *>(node.get())
                                                         : nullptr;
    }
    bool same_as(const Stmt &o) const { return node == o.node; }

    std::shared_ptr<const BaseStmtNode> node;
};

/// CRTP helpers: give each node its static_type and accept().
template <typename T, IRNodeType NT> struct ExprNode : BaseExprNode {
    static constexpr IRNodeType static_type = NT;
    explicit ExprNode(Type t) : BaseExprNode(NT, t) {}
    void accept(IRVisitor *v) const override;
};
template <typename T, IRNodeType NT> struct StmtNode : BaseStmtNode {
    static constexpr IRNodeType static_type = NT;
    StmtNode() : BaseStmtNode(NT) {}
    void accept(IRVisitor *v) const override;
};

// ---------------------------------------------------------------------------------------------
// Expressions

/// A signed integer constant of type Int(8..64).
struct IntImm : ExprNode<IntImm, IRNodeType::IntImm> {
    using ExprNode::ExprNode;
    int64_t value = 0;
    static Expr make(Type t, int64_t value);
};
/// An unsigned integer constant of type UInt(8..64) (or Bool).
struct UIntImm : ExprNode<UIntImm, IRNodeType::UIntImm> {
    using ExprNode::ExprNode;
    uint64_t value = 0;
    static Expr make(Type t, uint64_t value);
};
/// A floating-point constant; the value is rounded to t when made.
struct FloatImm : ExprNode<FloatImm, IRNodeType::FloatImm> {
    using ExprNode::ExprNode;
    double value = 0;
    static Expr make(Type t, double value);
};

/// What a Variable names. Pure and reduction variables of Funcs, scalar Params, and loop or
/// let-bound variables made by lowering.
enum class VariableKind : uint8_t { Pure, Reduction, Param, Loop, Let };

/// A named scalar variable.
struct Variable : ExprNode<Variable, IRNodeType::Variable> {
    using ExprNode::ExprNode;
    std::string name;
    VariableKind kind = VariableKind::Pure;
    /// For an RVar: the domain it belongs to, so a definition can find its RDom. Ignored by
    /// equality and hashing (the name identifies the variable).
    std::shared_ptr<const internal::ReductionDomainContents> rdom;
    static Expr make(Type t, const std::string &name, VariableKind kind = VariableKind::Pure,
                     std::shared_ptr<const internal::ReductionDomainContents> rdom = nullptr);
};

/// A conversion. Float → integer truncates towards zero and saturates; integer → narrower
/// integer wraps; to BFloat/Float(16) rounds to nearest even.
struct Cast : ExprNode<Cast, IRNodeType::Cast> {
    using ExprNode::ExprNode;
    Expr value;
    static Expr make(Type t, Expr value);
};

/// Binary arithmetic and comparison nodes share this shape. Operands have equal types
/// (promotion happens in the operators of ir_operator.h, never inside make()).
template <typename T, IRNodeType NT> struct BinaryNode : ExprNode<T, NT> {
    using ExprNode<T, NT>::ExprNode;
    Expr a, b;
};
struct Add : BinaryNode<Add, IRNodeType::Add> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Sub : BinaryNode<Sub, IRNodeType::Sub> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Mul : BinaryNode<Mul, IRNodeType::Mul> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Div : BinaryNode<Div, IRNodeType::Div> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Mod : BinaryNode<Mod, IRNodeType::Mod> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Min : BinaryNode<Min, IRNodeType::Min> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Max : BinaryNode<Max, IRNodeType::Max> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
// Comparisons have type Bool().
struct EQ : BinaryNode<EQ, IRNodeType::EQ> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct NE : BinaryNode<NE, IRNodeType::NE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct LT : BinaryNode<LT, IRNodeType::LT> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct LE : BinaryNode<LE, IRNodeType::LE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct GT : BinaryNode<GT, IRNodeType::GT> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct GE : BinaryNode<GE, IRNodeType::GE> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
// Logic on Bool operands.
struct And : BinaryNode<And, IRNodeType::And> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };
struct Or : BinaryNode<Or, IRNodeType::Or> { using BinaryNode::BinaryNode; static Expr make(Expr a, Expr b); };

struct Not : ExprNode<Not, IRNodeType::Not> {
    using ExprNode::ExprNode;
    Expr a;
    static Expr make(Expr a);
};

/// condition ? true_value : false_value; both arms have the same type, condition is Bool.
struct Select : ExprNode<Select, IRNodeType::Select> {
    using ExprNode::ExprNode;
    Expr condition, true_value, false_value;
    static Expr make(Expr condition, Expr true_value, Expr false_value);
};

/// let name = value in body.
struct Let : ExprNode<Let, IRNodeType::Let> {
    using ExprNode::ExprNode;
    std::string name;
    Expr value, body;
    static Expr make(const std::string &name, Expr value, Expr body);
};

/// Math intrinsics. Float-only ones (exp … pow) compute in fp32 or fp64 and round to the type.
enum class Intrinsic : uint8_t {
    Exp, Log, Sqrt, Rsqrt, Tanh, Erf, Abs, Floor, Ceil, Round, Pow, Sigmoid,
};
const char *intrinsic_name(Intrinsic op);

/// What a Call calls.
enum class CallType : uint8_t {
    Func,      ///< a value of a Func at a point (args are its coordinates, outermost first)
    Input,     ///< an element of an Input tensor
    Intrinsic, ///< a math intrinsic
};

/// A reference from a Call to the Func it reads. Strong, except for a Func's references to
/// itself inside its own update definitions, which are weak so definitions do not form
/// reference cycles.
struct FunctionRef {
    FunctionRef() = default;
    explicit FunctionRef(std::shared_ptr<internal::FunctionContents> strong) : strong(std::move(strong)) {}
    static FunctionRef make_weak(const std::shared_ptr<internal::FunctionContents> &p);
    /// The function; throws InternalError if a weak reference has expired.
    std::shared_ptr<internal::FunctionContents> get() const;
    bool defined() const { return strong != nullptr || !weak.expired(); }

    std::shared_ptr<internal::FunctionContents> strong;
    std::weak_ptr<internal::FunctionContents> weak;
};

struct Call : ExprNode<Call, IRNodeType::Call> {
    using ExprNode::ExprNode;
    std::string name; ///< Func or Input name, or the intrinsic's name
    std::vector<Expr> args;
    CallType call_type = CallType::Intrinsic;
    Intrinsic intrinsic = Intrinsic::Exp;                 ///< when call_type == Intrinsic
    FunctionRef func;                                     ///< when call_type == Func
    std::shared_ptr<const internal::InputContents> input; ///< when call_type == Input

    static Expr make_intrinsic(Intrinsic op, std::vector<Expr> args);
    static Expr make_func(Type t, FunctionRef func, std::vector<Expr> args);
    static Expr make_input(std::shared_ptr<const internal::InputContents> input, std::vector<Expr> args);
};

/// A load from a flattened buffer (made by storage flattening).
struct Load : ExprNode<Load, IRNodeType::Load> {
    using ExprNode::ExprNode;
    std::string name;
    Expr index;
    static Expr make(Type t, const std::string &name, Expr index);
};

// ---------------------------------------------------------------------------------------------
// Statements (made by lowering; the front end builds only Exprs)

struct LetStmt : StmtNode<LetStmt, IRNodeType::LetStmt> {
    std::string name;
    Expr value;
    Stmt body;
    static Stmt make(const std::string &name, Expr value, Stmt body);
};

/// How a loop runs. The chip kinds are produced by the chip backend.
enum class ForKind : uint8_t { Serial, Parallel, Vectorized, Unrolled };
const char *for_kind_name(ForKind k);

struct For : StmtNode<For, IRNodeType::For> {
    std::string name;
    Expr min, extent;
    ForKind kind = ForKind::Serial;
    Stmt body;
    static Stmt make(const std::string &name, Expr min, Expr extent, ForKind kind, Stmt body);
};

/// A store into a flattened buffer.
struct Store : StmtNode<Store, IRNodeType::Store> {
    std::string name;
    Expr value, index;
    static Stmt make(const std::string &name, Expr value, Expr index);
};

/// A multi-dimensional store into a Func's storage, before flattening.
struct Provide : StmtNode<Provide, IRNodeType::Provide> {
    std::string name;
    Expr value;
    std::vector<Expr> args;
    static Stmt make(const std::string &name, Expr value, std::vector<Expr> args);
};

/// Where a buffer lives. Host is ordinary memory; the others are chip memories.
enum class MemoryKind : uint8_t { Auto, Host, Stack, DRAM, MEM, SPAD, ACC };
const char *memory_kind_name(MemoryKind k);
MemoryKind parse_memory_kind(const std::string &name);

/// A half-open range [min, min + extent) in one dimension.
struct Range {
    Expr min, extent;
};

/// A multi-dimensional region of a Func's storage, before flattening.
struct Realize : StmtNode<Realize, IRNodeType::Realize> {
    std::string name;
    Type type;
    MemoryKind memory = MemoryKind::Auto;
    std::vector<Range> bounds;
    Stmt body;
    static Stmt make(const std::string &name, Type type, MemoryKind memory, std::vector<Range> bounds, Stmt body);
};

/// A flat allocation of extents[0] * extents[1] * ... elements.
struct Allocate : StmtNode<Allocate, IRNodeType::Allocate> {
    std::string name;
    Type type;
    MemoryKind memory = MemoryKind::Auto;
    std::vector<Expr> extents;
    int bank = -1; ///< explicit bank on a chip, or -1
    Stmt body;
    static Stmt make(const std::string &name, Type type, MemoryKind memory, std::vector<Expr> extents, Stmt body, int bank = -1);
};

struct IfThenElse : StmtNode<IfThenElse, IRNodeType::IfThenElse> {
    Expr condition;
    Stmt then_case, else_case; ///< else_case may be undefined
    static Stmt make(Expr condition, Stmt then_case, Stmt else_case = Stmt());
};

/// first; rest.
struct Block : StmtNode<Block, IRNodeType::Block> {
    Stmt first, rest;
    static Stmt make(Stmt first, Stmt rest);
    /// A block of any number of statements (undefined ones skipped).
    static Stmt make(const std::vector<Stmt> &stmts);
};

struct Evaluate : StmtNode<Evaluate, IRNodeType::Evaluate> {
    Expr value;
    static Stmt make(Expr value);
};

/// Marks the code that produces (is_producer) or consumes a Func, for readers and passes.
struct ProducerConsumer : StmtNode<ProducerConsumer, IRNodeType::ProducerConsumer> {
    std::string name;
    bool is_producer = true;
    Stmt body;
    static Stmt make(const std::string &name, bool is_producer, Stmt body);
};

} // namespace tessera
