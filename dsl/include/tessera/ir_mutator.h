#pragma once
// IRMutator: rewrites the IR. mutate() dispatches on the node type to a visit() that returns
// the replacement; the defaults mutate the children and rebuild the node only when a child
// changed, so an untouched subtree keeps its identity (same_as) and costs no allocation.
#include <vector>

#include "tessera/expr.h"

namespace tessera {

/// A rewrite of Exprs and Stmts. Override the visits of the nodes to change.
class IRMutator {
public:
    virtual ~IRMutator() = default;

    /// The rewritten node; an undefined input gives an undefined result.
    virtual Expr mutate(const Expr &e);
    virtual Stmt mutate(const Stmt &s);
    /// Mutates each element; returns whether any changed.
    bool mutate_all(const std::vector<Expr> &in, std::vector<Expr> &out);

protected:
    virtual Expr visit(const IntImm *, const Expr &e);
    virtual Expr visit(const UIntImm *, const Expr &e);
    virtual Expr visit(const FloatImm *, const Expr &e);
    virtual Expr visit(const Variable *, const Expr &e);
    virtual Expr visit(const Cast *, const Expr &e);
    virtual Expr visit(const Add *, const Expr &e);
    virtual Expr visit(const Sub *, const Expr &e);
    virtual Expr visit(const Mul *, const Expr &e);
    virtual Expr visit(const Div *, const Expr &e);
    virtual Expr visit(const Mod *, const Expr &e);
    virtual Expr visit(const Min *, const Expr &e);
    virtual Expr visit(const Max *, const Expr &e);
    virtual Expr visit(const EQ *, const Expr &e);
    virtual Expr visit(const NE *, const Expr &e);
    virtual Expr visit(const LT *, const Expr &e);
    virtual Expr visit(const LE *, const Expr &e);
    virtual Expr visit(const GT *, const Expr &e);
    virtual Expr visit(const GE *, const Expr &e);
    virtual Expr visit(const And *, const Expr &e);
    virtual Expr visit(const Or *, const Expr &e);
    virtual Expr visit(const Not *, const Expr &e);
    virtual Expr visit(const Select *, const Expr &e);
    virtual Expr visit(const Let *, const Expr &e);
    virtual Expr visit(const Call *, const Expr &e);
    virtual Expr visit(const Load *, const Expr &e);

    virtual Stmt visit(const LetStmt *, const Stmt &s);
    virtual Stmt visit(const For *, const Stmt &s);
    virtual Stmt visit(const Store *, const Stmt &s);
    virtual Stmt visit(const Provide *, const Stmt &s);
    virtual Stmt visit(const Allocate *, const Stmt &s);
    virtual Stmt visit(const Realize *, const Stmt &s);
    virtual Stmt visit(const IfThenElse *, const Stmt &s);
    virtual Stmt visit(const Block *, const Stmt &s);
    virtual Stmt visit(const Evaluate *, const Stmt &s);
    virtual Stmt visit(const ProducerConsumer *, const Stmt &s);
};

} // namespace tessera
