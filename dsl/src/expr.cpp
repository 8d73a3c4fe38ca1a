// IR node construction. Every make() checks what would make the node meaningless — an
// undefined operand, operands of different types, a non-Bool condition, the wrong number of
// intrinsic arguments — and throws tessera::Error saying what was wrong, so a bad node never
// reaches a pass or an evaluator.
#include "tessera/expr.h"

#include <cctype>
#include <cmath>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_printer.h"
#include "tessera/ir_visitor.h"

namespace tessera {

// ---------------------------------------------------------------------------------------------
// Handles

Expr::Expr(int v) : Expr(IntImm::make(Int(32), v)) {}
Expr::Expr(long v) : Expr(IntImm::make(Int(64), v)) {}
Expr::Expr(long long v) : Expr(IntImm::make(Int(64), v)) {}
Expr::Expr(unsigned v) : Expr(UIntImm::make(UInt(32), v)) {}
Expr::Expr(unsigned long v) : Expr(UIntImm::make(UInt(64), v)) {}
Expr::Expr(unsigned long long v) : Expr(UIntImm::make(UInt(64), v)) {}
Expr::Expr(float v) : Expr(FloatImm::make(Float(32), v)) {}
Expr::Expr(double v) : Expr(FloatImm::make(Float(64), v)) {}
Expr::Expr(bool v) : Expr(UIntImm::make(Bool(), v ? 1 : 0)) {}
Expr::Expr(bfloat16 v) : Expr(FloatImm::make(BFloat(16), v.to_float())) {}
Expr::Expr(float16 v) : Expr(FloatImm::make(Float(16), v.to_float())) {}

Type Expr::type() const {
    if (!node) throw Error("the type of an undefined Expr was asked for: give the Expr a value first");
    return node->type;
}

IRNodeType Expr::node_type() const {
    if (!node) throw Error("the node type of an undefined Expr was asked for");
    return node->node_type;
}

void Expr::accept(IRVisitor *v) const {
    if (node) node->accept(v);
}

IRNodeType Stmt::node_type() const {
    if (!node) throw Error("the node type of an undefined Stmt was asked for");
    return node->node_type;
}

void Stmt::accept(IRVisitor *v) const {
    if (node) node->accept(v);
}

template <typename T, IRNodeType NT> void ExprNode<T, NT>::accept(IRVisitor *v) const {
    v->visit(static_cast<const T *>(this));
}
template <typename T, IRNodeType NT> void StmtNode<T, NT>::accept(IRVisitor *v) const {
    v->visit(static_cast<const T *>(this));
}

namespace {

template <typename T> std::shared_ptr<T> new_expr_node(Type t) { return std::make_shared<T>(t); }

/// Throws unless `e` is defined; `what` says which operand of which node it is.
void require_defined(const Expr &e, const char *node, const char *operand) {
    if (!e.defined())
        throw Error(std::string(node) + ": the " + operand +
                    " is an undefined Expr (an Expr declared but never given a value)");
}

void require_defined(const Stmt &s, const char *node, const char *operand) {
    if (!s.defined()) throw Error(std::string(node) + ": the " + operand + " is an undefined Stmt");
}

void require_name(const std::string &name, const char *node) {
    if (name.empty()) throw Error(std::string(node) + ": the name is empty; every variable and buffer needs one");
}

void require_integer(const Expr &e, const char *node, const std::string &operand) {
    if (!e.type().is_integer())
        throw Error(std::string(node) + ": the " + operand + " " + to_string(e) + " has type " +
                    e.type().to_string() + " but must be an integer; use cast<int>(...)");
}

void require_bool(const Expr &e, const char *node, const char *operand) {
    if (!e.type().is_bool())
        throw Error(std::string(node) + ": the " + operand + " " + to_string(e) + " has type " +
                    e.type().to_string() + " but must be bool (a comparison or a logical expression)");
}

enum class Operands { Numeric, NumericOrBool, Bool };

/// Checks and builds a binary node whose result type is `result` (or the operands' type when
/// `result` is not given).
template <typename T>
Expr make_binary(const char *node, Expr a, Expr b, Operands allowed, bool comparison) {
    require_defined(a, node, "first operand");
    require_defined(b, node, "second operand");
    if (a.type() != b.type())
        throw Error(std::string(node) + " of " + a.type().to_string() + " and " + b.type().to_string() + " (" +
                    to_string(a) + ", " + to_string(b) +
                    "): IR operands must have the same type; build arithmetic with the operators of "
                    "ir_operator.h, which apply the promotion rules, or cast() explicitly");
    const Type t = a.type();
    if (allowed == Operands::Numeric && t.is_bool())
        throw Error(std::string(node) + " of bool operands (" + to_string(a) + ", " + to_string(b) +
                    "): arithmetic and ordering need numbers; use select() or cast a bool to a number");
    if (allowed == Operands::Bool && !t.is_bool())
        throw Error(std::string(node) + " of " + t.to_string() + " operands (" + to_string(a) + ", " +
                    to_string(b) + "): logical operators need bool operands; compare first, e.g. x != 0");
    auto n = new_expr_node<T>(comparison ? Bool() : t);
    n->a = std::move(a);
    n->b = std::move(b);
    return Expr(std::move(n));
}

/// The value rounded to the precision and range of float type `t`.
double round_to_float_type(Type t, double value) {
    if (t.is_bfloat()) return bfloat16(value).to_float();
    switch (t.bits()) {
    case 16: return float16(value).to_float();
    case 32: return static_cast<float>(value);
    default: return value;
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Expressions

Expr IntImm::make(Type t, int64_t value) {
    if (!t.is_int())
        throw Error("IntImm of type " + t.to_string() + ": signed constants need an Int type; use UIntImm or FloatImm");
    if (!t.can_represent(value))
        throw Error("IntImm: " + std::to_string(value) + " does not fit in " + t.to_string());
    auto n = new_expr_node<IntImm>(t);
    n->value = value;
    return Expr(std::move(n));
}

Expr UIntImm::make(Type t, uint64_t value) {
    if (!t.is_uint() && !t.is_bool())
        throw Error("UIntImm of type " + t.to_string() + ": unsigned constants need a UInt or Bool type");
    if (t.bits() < 64 && value >> t.bits())
        throw Error("UIntImm: " + std::to_string(value) + " does not fit in " + t.to_string());
    auto n = new_expr_node<UIntImm>(t);
    n->value = value;
    return Expr(std::move(n));
}

Expr FloatImm::make(Type t, double value) {
    if (!t.is_float())
        throw Error("FloatImm of type " + t.to_string() + ": floating-point constants need a Float or BFloat type");
    auto n = new_expr_node<FloatImm>(t);
    n->value = round_to_float_type(t, value);
    return Expr(std::move(n));
}

Expr Variable::make(Type t, const std::string &name, VariableKind kind,
                    std::shared_ptr<const internal::ReductionDomainContents> rdom) {
    require_name(name, "Variable");
    auto n = new_expr_node<Variable>(t);
    n->name = name;
    n->kind = kind;
    n->rdom = std::move(rdom);
    return Expr(std::move(n));
}

Expr Cast::make(Type t, Expr value) {
    require_defined(value, "Cast", "value");
    auto n = new_expr_node<Cast>(t);
    n->value = std::move(value);
    return Expr(std::move(n));
}

Expr Add::make(Expr a, Expr b) { return make_binary<Add>("Add", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Sub::make(Expr a, Expr b) { return make_binary<Sub>("Sub", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Mul::make(Expr a, Expr b) { return make_binary<Mul>("Mul", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Div::make(Expr a, Expr b) { return make_binary<Div>("Div", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Mod::make(Expr a, Expr b) { return make_binary<Mod>("Mod", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Min::make(Expr a, Expr b) { return make_binary<Min>("Min", std::move(a), std::move(b), Operands::Numeric, false); }
Expr Max::make(Expr a, Expr b) { return make_binary<Max>("Max", std::move(a), std::move(b), Operands::Numeric, false); }
Expr EQ::make(Expr a, Expr b) { return make_binary<EQ>("EQ", std::move(a), std::move(b), Operands::NumericOrBool, true); }
Expr NE::make(Expr a, Expr b) { return make_binary<NE>("NE", std::move(a), std::move(b), Operands::NumericOrBool, true); }
Expr LT::make(Expr a, Expr b) { return make_binary<LT>("LT", std::move(a), std::move(b), Operands::Numeric, true); }
Expr LE::make(Expr a, Expr b) { return make_binary<LE>("LE", std::move(a), std::move(b), Operands::Numeric, true); }
Expr GT::make(Expr a, Expr b) { return make_binary<GT>("GT", std::move(a), std::move(b), Operands::Numeric, true); }
Expr GE::make(Expr a, Expr b) { return make_binary<GE>("GE", std::move(a), std::move(b), Operands::Numeric, true); }
Expr And::make(Expr a, Expr b) { return make_binary<And>("And", std::move(a), std::move(b), Operands::Bool, false); }
Expr Or::make(Expr a, Expr b) { return make_binary<Or>("Or", std::move(a), std::move(b), Operands::Bool, false); }

Expr Not::make(Expr a) {
    require_defined(a, "Not", "operand");
    require_bool(a, "Not", "operand");
    auto n = new_expr_node<Not>(Bool());
    n->a = std::move(a);
    return Expr(std::move(n));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
    require_defined(condition, "Select", "condition");
    require_defined(true_value, "Select", "true value");
    require_defined(false_value, "Select", "false value");
    require_bool(condition, "Select", "condition");
    if (true_value.type() != false_value.type())
        throw Error("Select: the values " + to_string(true_value) + " (" + true_value.type().to_string() + ") and " +
                    to_string(false_value) + " (" + false_value.type().to_string() +
                    ") must have the same type; use select() from ir_operator.h, which promotes, or cast()");
    auto n = new_expr_node<Select>(true_value.type());
    n->condition = std::move(condition);
    n->true_value = std::move(true_value);
    n->false_value = std::move(false_value);
    return Expr(std::move(n));
}

Expr Let::make(const std::string &name, Expr value, Expr body) {
    require_name(name, "Let");
    require_defined(value, "Let", "value");
    require_defined(body, "Let", "body");
    auto n = new_expr_node<Let>(body.type());
    n->name = name;
    n->value = std::move(value);
    n->body = std::move(body);
    return Expr(std::move(n));
}

const char *intrinsic_name(Intrinsic op) {
    switch (op) {
    case Intrinsic::Exp: return "exp";
    case Intrinsic::Log: return "log";
    case Intrinsic::Sqrt: return "sqrt";
    case Intrinsic::Rsqrt: return "rsqrt";
    case Intrinsic::Tanh: return "tanh";
    case Intrinsic::Erf: return "erf";
    case Intrinsic::Abs: return "abs";
    case Intrinsic::Floor: return "floor";
    case Intrinsic::Ceil: return "ceil";
    case Intrinsic::Round: return "round";
    case Intrinsic::Pow: return "pow";
    case Intrinsic::Sigmoid: return "sigmoid";
    }
    return "?";
}

Expr Call::make_intrinsic(Intrinsic op, std::vector<Expr> args) {
    const std::string name = intrinsic_name(op);
    const size_t arity = op == Intrinsic::Pow ? 2 : 1;
    if (args.size() != arity)
        throw Error("Call to " + name + ": takes " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s") +
                    ", got " + std::to_string(args.size()));
    for (const Expr &a : args) require_defined(a, "Call", ("argument of " + name).c_str());
    const Type t = args[0].type();
    if (op == Intrinsic::Abs) {
        if (t.is_bool()) throw Error("Call to abs: the argument " + to_string(args[0]) + " is bool; abs needs a number");
    } else if (!t.is_float()) {
        throw Error("Call to " + name + ": the argument " + to_string(args[0]) + " has type " + t.to_string() +
                    " but " + name + " needs a floating-point argument; the " + name +
                    "() of ir_operator.h converts integers to fp32 for you, or cast() explicitly");
    }
    if (arity == 2 && args[1].type() != t)
        throw Error("Call to " + name + ": both arguments must have the same type, got " + t.to_string() + " and " +
                    args[1].type().to_string());
    auto n = new_expr_node<Call>(t);
    n->name = name;
    n->args = std::move(args);
    n->call_type = CallType::Intrinsic;
    n->intrinsic = op;
    return Expr(std::move(n));
}

FunctionRef FunctionRef::make_weak(const std::shared_ptr<internal::FunctionContents> &p) {
    FunctionRef r;
    r.weak = p;
    return r;
}

std::shared_ptr<internal::FunctionContents> FunctionRef::get() const {
    if (strong) return strong;
    if (auto p = weak.lock()) return p;
    throw InternalError("a Call refers to a Func that no longer exists (an expired weak self-reference)");
}

Expr Call::make_func(Type t, FunctionRef func, std::vector<Expr> args) {
    if (!func.defined()) throw Error("Call to a Func: the Func reference is empty");
    const auto contents = func.get();
    const std::string &name = contents->name;
    for (size_t i = 0; i < args.size(); ++i) {
        require_defined(args[i], "Call", ("argument of " + name).c_str());
        if (args[i].type() != Int(32))
            throw Error("Call to Func " + name + ": argument " + std::to_string(i) + " (" + to_string(args[i]) +
                        ") has type " + args[i].type().to_string() + "; Func coordinates are int32");
    }
    auto n = new_expr_node<Call>(t);
    n->name = name;
    n->args = std::move(args);
    n->call_type = CallType::Func;
    n->func = std::move(func);
    return Expr(std::move(n));
}

Expr Call::make_input(std::shared_ptr<const internal::InputContents> input, std::vector<Expr> args) {
    if (!input) throw Error("Call to an Input: the Input is empty");
    if (args.size() != input->shape.size())
        throw Error("Call to Input " + input->name + ": it has " + std::to_string(input->shape.size()) +
                    " dimensions but " + std::to_string(args.size()) + " coordinates were given");
    for (size_t i = 0; i < args.size(); ++i) {
        require_defined(args[i], "Call", ("argument of " + input->name).c_str());
        if (args[i].type() != Int(32))
            throw Error("Call to Input " + input->name + ": argument " + std::to_string(i) + " (" +
                        to_string(args[i]) + ") has type " + args[i].type().to_string() +
                        "; Input coordinates are int32");
    }
    auto n = new_expr_node<Call>(input->type);
    n->name = input->name;
    n->args = std::move(args);
    n->call_type = CallType::Input;
    n->input = std::move(input);
    return Expr(std::move(n));
}

Expr Load::make(Type t, const std::string &name, Expr index) {
    require_name(name, "Load");
    require_defined(index, "Load", "index");
    require_integer(index, "Load", "index");
    auto n = new_expr_node<Load>(t);
    n->name = name;
    n->index = std::move(index);
    return Expr(std::move(n));
}

// ---------------------------------------------------------------------------------------------
// Statements

Stmt LetStmt::make(const std::string &name, Expr value, Stmt body) {
    require_name(name, "LetStmt");
    require_defined(value, "LetStmt", "value");
    require_defined(body, "LetStmt", "body");
    auto n = std::make_shared<LetStmt>();
    n->name = name;
    n->value = std::move(value);
    n->body = std::move(body);
    return Stmt(std::move(n));
}

const char *for_kind_name(ForKind k) {
    switch (k) {
    case ForKind::Serial: return "serial";
    case ForKind::Parallel: return "parallel";
    case ForKind::Vectorized: return "vectorized";
    case ForKind::Unrolled: return "unrolled";
    }
    return "?";
}

Stmt For::make(const std::string &name, Expr min, Expr extent, ForKind kind, Stmt body) {
    require_name(name, "For");
    require_defined(min, "For", "min");
    require_defined(extent, "For", "extent");
    require_defined(body, "For", "body");
    require_integer(min, "For", "min of loop " + name);
    require_integer(extent, "For", "extent of loop " + name);
    if (min.type() != extent.type())
        throw Error("For " + name + ": min (" + min.type().to_string() + ") and extent (" +
                    extent.type().to_string() + ") must have the same type");
    auto n = std::make_shared<For>();
    n->name = name;
    n->min = std::move(min);
    n->extent = std::move(extent);
    n->kind = kind;
    n->body = std::move(body);
    return Stmt(std::move(n));
}

Stmt Store::make(const std::string &name, Expr value, Expr index) {
    require_name(name, "Store");
    require_defined(value, "Store", "value");
    require_defined(index, "Store", "index");
    require_integer(index, "Store", "index into " + name);
    auto n = std::make_shared<Store>();
    n->name = name;
    n->value = std::move(value);
    n->index = std::move(index);
    return Stmt(std::move(n));
}

Stmt Provide::make(const std::string &name, Expr value, std::vector<Expr> args) {
    require_name(name, "Provide");
    require_defined(value, "Provide", "value");
    for (size_t i = 0; i < args.size(); ++i) {
        require_defined(args[i], "Provide", "coordinate");
        require_integer(args[i], "Provide", "coordinate " + std::to_string(i) + " of " + name);
    }
    auto n = std::make_shared<Provide>();
    n->name = name;
    n->value = std::move(value);
    n->args = std::move(args);
    return Stmt(std::move(n));
}

const char *memory_kind_name(MemoryKind k) {
    switch (k) {
    case MemoryKind::Auto: return "Auto";
    case MemoryKind::Host: return "Host";
    case MemoryKind::Stack: return "Stack";
    case MemoryKind::DRAM: return "DRAM";
    case MemoryKind::MEM: return "MEM";
    case MemoryKind::SPAD: return "SPAD";
    case MemoryKind::ACC: return "ACC";
    }
    return "?";
}

MemoryKind parse_memory_kind(const std::string &name) {
    // Case-insensitive, so JSON and the CLI may write "spad" or "SPAD".
    auto lower = [](std::string s) {
        for (char &c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return s;
    };
    for (MemoryKind k : {MemoryKind::Auto, MemoryKind::Host, MemoryKind::Stack, MemoryKind::DRAM, MemoryKind::MEM,
                         MemoryKind::SPAD, MemoryKind::ACC})
        if (lower(name) == lower(memory_kind_name(k))) return k;
    throw Error("unknown memory kind '" + name + "': valid kinds are Auto Host Stack DRAM MEM SPAD ACC");
}

Stmt Realize::make(const std::string &name, Type type, MemoryKind memory, std::vector<Range> bounds, Stmt body) {
    require_name(name, "Realize");
    require_defined(body, "Realize", "body");
    for (size_t i = 0; i < bounds.size(); ++i) {
        require_defined(bounds[i].min, "Realize", "min of a dimension");
        require_defined(bounds[i].extent, "Realize", "extent of a dimension");
        require_integer(bounds[i].min, "Realize", "min of dimension " + std::to_string(i) + " of " + name);
        require_integer(bounds[i].extent, "Realize", "extent of dimension " + std::to_string(i) + " of " + name);
    }
    auto n = std::make_shared<Realize>();
    n->name = name;
    n->type = type;
    n->memory = memory;
    n->bounds = std::move(bounds);
    n->body = std::move(body);
    return Stmt(std::move(n));
}

Stmt Allocate::make(const std::string &name, Type type, MemoryKind memory, std::vector<Expr> extents, Stmt body,
                    int bank) {
    require_name(name, "Allocate");
    require_defined(body, "Allocate", "body");
    for (size_t i = 0; i < extents.size(); ++i) {
        require_defined(extents[i], "Allocate", "extent");
        require_integer(extents[i], "Allocate", "extent " + std::to_string(i) + " of " + name);
    }
    if (bank < -1) throw Error("Allocate " + name + ": bank " + std::to_string(bank) + " is negative (use -1 for any bank)");
    auto n = std::make_shared<Allocate>();
    n->name = name;
    n->type = type;
    n->memory = memory;
    n->extents = std::move(extents);
    n->bank = bank;
    n->body = std::move(body);
    return Stmt(std::move(n));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
    require_defined(condition, "IfThenElse", "condition");
    require_defined(then_case, "IfThenElse", "then case");
    require_bool(condition, "IfThenElse", "condition");
    auto n = std::make_shared<IfThenElse>();
    n->condition = std::move(condition);
    n->then_case = std::move(then_case);
    n->else_case = std::move(else_case);
    return Stmt(std::move(n));
}

Stmt Block::make(Stmt first, Stmt rest) {
    require_defined(first, "Block", "first statement");
    require_defined(rest, "Block", "second statement");
    auto n = std::make_shared<Block>();
    n->first = std::move(first);
    n->rest = std::move(rest);
    return Stmt(std::move(n));
}

Stmt Block::make(const std::vector<Stmt> &stmts) {
    Stmt result;
    for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) {
        if (!it->defined()) continue;
        result = result.defined() ? Block::make(*it, result) : *it;
    }
    if (!result.defined()) throw Error("Block: no defined statements were given");
    return result;
}

Stmt Evaluate::make(Expr value) {
    require_defined(value, "Evaluate", "value");
    auto n = std::make_shared<Evaluate>();
    n->value = std::move(value);
    return Stmt(std::move(n));
}

Stmt ProducerConsumer::make(const std::string &name, bool is_producer, Stmt body) {
    require_name(name, "ProducerConsumer");
    require_defined(body, "ProducerConsumer", "body");
    auto n = std::make_shared<ProducerConsumer>();
    n->name = name;
    n->is_producer = is_producer;
    n->body = std::move(body);
    return Stmt(std::move(n));
}

// The accept() of every node, instantiated once here.
template struct ExprNode<IntImm, IRNodeType::IntImm>;
template struct ExprNode<UIntImm, IRNodeType::UIntImm>;
template struct ExprNode<FloatImm, IRNodeType::FloatImm>;
template struct ExprNode<Variable, IRNodeType::Variable>;
template struct ExprNode<Cast, IRNodeType::Cast>;
template struct ExprNode<Add, IRNodeType::Add>;
template struct ExprNode<Sub, IRNodeType::Sub>;
template struct ExprNode<Mul, IRNodeType::Mul>;
template struct ExprNode<Div, IRNodeType::Div>;
template struct ExprNode<Mod, IRNodeType::Mod>;
template struct ExprNode<Min, IRNodeType::Min>;
template struct ExprNode<Max, IRNodeType::Max>;
template struct ExprNode<EQ, IRNodeType::EQ>;
template struct ExprNode<NE, IRNodeType::NE>;
template struct ExprNode<LT, IRNodeType::LT>;
template struct ExprNode<LE, IRNodeType::LE>;
template struct ExprNode<GT, IRNodeType::GT>;
template struct ExprNode<GE, IRNodeType::GE>;
template struct ExprNode<And, IRNodeType::And>;
template struct ExprNode<Or, IRNodeType::Or>;
template struct ExprNode<Not, IRNodeType::Not>;
template struct ExprNode<Select, IRNodeType::Select>;
template struct ExprNode<Let, IRNodeType::Let>;
template struct ExprNode<Call, IRNodeType::Call>;
template struct ExprNode<Load, IRNodeType::Load>;
template struct StmtNode<LetStmt, IRNodeType::LetStmt>;
template struct StmtNode<For, IRNodeType::For>;
template struct StmtNode<Store, IRNodeType::Store>;
template struct StmtNode<Provide, IRNodeType::Provide>;
template struct StmtNode<Allocate, IRNodeType::Allocate>;
template struct StmtNode<Realize, IRNodeType::Realize>;
template struct StmtNode<IfThenElse, IRNodeType::IfThenElse>;
template struct StmtNode<Block, IRNodeType::Block>;
template struct StmtNode<Evaluate, IRNodeType::Evaluate>;
template struct StmtNode<ProducerConsumer, IRNodeType::ProducerConsumer>;

} // namespace tessera
