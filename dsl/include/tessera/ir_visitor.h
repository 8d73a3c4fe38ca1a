#pragma once
// IRVisitor: walks the IR read-only. Each node type has a visit() whose default visits the
// node's children in order; a pass overrides the visits it cares about and calls the base
// version to keep descending.
#include "tessera/expr.h"

namespace tessera {

/// A read-only walk over Exprs and Stmts (double dispatch through IRNode::accept).
class IRVisitor {
public:
    virtual ~IRVisitor() = default;

    virtual void visit(const IntImm *);
    virtual void visit(const UIntImm *);
    virtual void visit(const FloatImm *);
    virtual void visit(const Variable *);
    virtual void visit(const Cast *);
    virtual void visit(const Add *);
    virtual void visit(const Sub *);
    virtual void visit(const Mul *);
    virtual void visit(const Div *);
    virtual void visit(const Mod *);
    virtual void visit(const Min *);
    virtual void visit(const Max *);
    virtual void visit(const EQ *);
    virtual void visit(const NE *);
    virtual void visit(const LT *);
    virtual void visit(const LE *);
    virtual void visit(const GT *);
    virtual void visit(const GE *);
    virtual void visit(const And *);
    virtual void visit(const Or *);
    virtual void visit(const Not *);
    virtual void visit(const Select *);
    virtual void visit(const Let *);
    virtual void visit(const Call *);
    virtual void visit(const Load *);

    virtual void visit(const LetStmt *);
    virtual void visit(const For *);
    virtual void visit(const Store *);
    virtual void visit(const Provide *);
    virtual void visit(const Allocate *);
    virtual void visit(const Realize *);
    virtual void visit(const IfThenElse *);
    virtual void visit(const Block *);
    virtual void visit(const Evaluate *);
    virtual void visit(const ProducerConsumer *);

    /// Visits `e` (or `s`) if it is defined.
    void include(const Expr &e) {
        if (e.defined()) e.accept(this);
    }
    void include(const Stmt &s) {
        if (s.defined()) s.accept(this);
    }
};

} // namespace tessera
