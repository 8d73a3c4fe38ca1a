// The default IRMutator: mutate the children, rebuild through make() only if one changed.
#include "tessera/ir_mutator.h"

#include "tessera/error.h"

namespace tessera {

Expr IRMutator::mutate(const Expr &node) {
    if (!node.defined()) return node;
    switch (node.node_type()) {
#define TESSERA_DISPATCH(T)                                                                      \
    case IRNodeType::T: return visit(node.as<T>(), node);
        TESSERA_DISPATCH(IntImm)
        TESSERA_DISPATCH(UIntImm)
        TESSERA_DISPATCH(FloatImm)
        TESSERA_DISPATCH(Variable)
        TESSERA_DISPATCH(Cast)
        TESSERA_DISPATCH(Add)
        TESSERA_DISPATCH(Sub)
        TESSERA_DISPATCH(Mul)
        TESSERA_DISPATCH(Div)
        TESSERA_DISPATCH(Mod)
        TESSERA_DISPATCH(Min)
        TESSERA_DISPATCH(Max)
        TESSERA_DISPATCH(EQ)
        TESSERA_DISPATCH(NE)
        TESSERA_DISPATCH(LT)
        TESSERA_DISPATCH(LE)
        TESSERA_DISPATCH(GT)
        TESSERA_DISPATCH(GE)
        TESSERA_DISPATCH(And)
        TESSERA_DISPATCH(Or)
        TESSERA_DISPATCH(Not)
        TESSERA_DISPATCH(Select)
        TESSERA_DISPATCH(Let)
        TESSERA_DISPATCH(Call)
        TESSERA_DISPATCH(Load)
    default: break;
    }
    throw InternalError("IRMutator::mutate(Expr) met a statement node");
}

Stmt IRMutator::mutate(const Stmt &node) {
    if (!node.defined()) return node;
    switch (node.node_type()) {
        TESSERA_DISPATCH(LetStmt)
        TESSERA_DISPATCH(For)
        TESSERA_DISPATCH(Store)
        TESSERA_DISPATCH(Provide)
        TESSERA_DISPATCH(Allocate)
        TESSERA_DISPATCH(Realize)
        TESSERA_DISPATCH(IfThenElse)
        TESSERA_DISPATCH(Block)
        TESSERA_DISPATCH(Evaluate)
        TESSERA_DISPATCH(ProducerConsumer)
#undef TESSERA_DISPATCH
    default: break;
    }
    throw InternalError("IRMutator::mutate(Stmt) met an expression node");
}

bool IRMutator::mutate_all(const std::vector<Expr> &in, std::vector<Expr> &out) {
    bool changed = false;
    out.clear();
    out.reserve(in.size());
    for (const Expr &e : in) {
        out.push_back(mutate(e));
        changed = changed || !out.back().same_as(e);
    }
    return changed;
}

Expr IRMutator::visit(const IntImm *, const Expr &e) { return e; }
Expr IRMutator::visit(const UIntImm *, const Expr &e) { return e; }
Expr IRMutator::visit(const FloatImm *, const Expr &e) { return e; }
Expr IRMutator::visit(const Variable *, const Expr &e) { return e; }

Expr IRMutator::visit(const Cast *op, const Expr &e) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? e : Cast::make(op->type, std::move(v));
}

#define TESSERA_MUTATE_BINARY(T)                                                                 \
    Expr IRMutator::visit(const T *op, const Expr &e) {                                          \
        Expr a = mutate(op->a), b = mutate(op->b);                                               \
        if (a.same_as(op->a) && b.same_as(op->b)) return e;                                      \
        return T::make(std::move(a), std::move(b));                                              \
    }
TESSERA_MUTATE_BINARY(Add)
TESSERA_MUTATE_BINARY(Sub)
TESSERA_MUTATE_BINARY(Mul)
TESSERA_MUTATE_BINARY(Div)
TESSERA_MUTATE_BINARY(Mod)
TESSERA_MUTATE_BINARY(Min)
TESSERA_MUTATE_BINARY(Max)
TESSERA_MUTATE_BINARY(EQ)
TESSERA_MUTATE_BINARY(NE)
TESSERA_MUTATE_BINARY(LT)
TESSERA_MUTATE_BINARY(LE)
TESSERA_MUTATE_BINARY(GT)
TESSERA_MUTATE_BINARY(GE)
TESSERA_MUTATE_BINARY(And)
TESSERA_MUTATE_BINARY(Or)
#undef TESSERA_MUTATE_BINARY

Expr IRMutator::visit(const Not *op, const Expr &e) {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? e : Not::make(std::move(a));
}

Expr IRMutator::visit(const Select *op, const Expr &e) {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return e;
    return Select::make(std::move(c), std::move(t), std::move(f));
}

Expr IRMutator::visit(const Let *op, const Expr &e) {
    Expr v = mutate(op->value), b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return e;
    return Let::make(op->name, std::move(v), std::move(b));
}

Expr IRMutator::visit(const Call *op, const Expr &e) {
    std::vector<Expr> args;
    if (!mutate_all(op->args, args)) return e;
    switch (op->call_type) {
    case CallType::Intrinsic: return Call::make_intrinsic(op->intrinsic, std::move(args));
    case CallType::Func: return Call::make_func(op->type, op->func, std::move(args));
    case CallType::Input: return Call::make_input(op->input, std::move(args));
    }
    throw InternalError("IRMutator: unknown call type");
}

Expr IRMutator::visit(const Load *op, const Expr &e) {
    Expr i = mutate(op->index);
    return i.same_as(op->index) ? e : Load::make(op->type, op->name, std::move(i));
}

Stmt IRMutator::visit(const LetStmt *op, const Stmt &s) {
    Expr v = mutate(op->value);
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return s;
    return LetStmt::make(op->name, std::move(v), std::move(b));
}

Stmt IRMutator::visit(const For *op, const Stmt &s) {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Stmt b = mutate(op->body);
    if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return s;
    return For::make(op->name, std::move(mn), std::move(ext), op->kind, std::move(b));
}

Stmt IRMutator::visit(const Store *op, const Stmt &s) {
    Expr v = mutate(op->value), i = mutate(op->index);
    if (v.same_as(op->value) && i.same_as(op->index)) return s;
    return Store::make(op->name, std::move(v), std::move(i));
}

Stmt IRMutator::visit(const Provide *op, const Stmt &s) {
    Expr v = mutate(op->value);
    std::vector<Expr> args;
    const bool changed = mutate_all(op->args, args);
    if (!changed && v.same_as(op->value)) return s;
    return Provide::make(op->name, std::move(v), std::move(args));
}

Stmt IRMutator::visit(const Allocate *op, const Stmt &s) {
    std::vector<Expr> extents;
    const bool changed = mutate_all(op->extents, extents);
    Stmt b = mutate(op->body);
    if (!changed && b.same_as(op->body)) return s;
    return Allocate::make(op->name, op->type, op->memory, std::move(extents), std::move(b), op->bank);
}

Stmt IRMutator::visit(const Realize *op, const Stmt &s) {
    bool changed = false;
    std::vector<Range> bounds;
    for (const Range &r : op->bounds) {
        Range m{mutate(r.min), mutate(r.extent)};
        changed = changed || !m.min.same_as(r.min) || !m.extent.same_as(r.extent);
        bounds.push_back(std::move(m));
    }
    Stmt b = mutate(op->body);
    if (!changed && b.same_as(op->body)) return s;
    return Realize::make(op->name, op->type, op->memory, std::move(bounds), std::move(b));
}

Stmt IRMutator::visit(const IfThenElse *op, const Stmt &s) {
    Expr c = mutate(op->condition);
    Stmt t = mutate(op->then_case), f = mutate(op->else_case);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && f.same_as(op->else_case)) return s;
    return IfThenElse::make(std::move(c), std::move(t), std::move(f));
}

Stmt IRMutator::visit(const Block *op, const Stmt &s) {
    Stmt a = mutate(op->first), b = mutate(op->rest);
    if (a.same_as(op->first) && b.same_as(op->rest)) return s;
    // A mutator may delete a statement by returning an undefined one.
    if (!a.defined()) return b;
    if (!b.defined()) return a;
    return Block::make(std::move(a), std::move(b));
}

Stmt IRMutator::visit(const Evaluate *op, const Stmt &s) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? s : Evaluate::make(std::move(v));
}

Stmt IRMutator::visit(const ProducerConsumer *op, const Stmt &s) {
    Stmt b = mutate(op->body);
    return b.same_as(op->body) ? s : ProducerConsumer::make(op->name, op->is_producer, std::move(b));
}

} // namespace tessera
