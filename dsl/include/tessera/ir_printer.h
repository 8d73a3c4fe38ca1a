#pragma once
// Readable text of the IR. Exprs print as C-like infix (`(x + 1)`, `select(c, a, b)`,
// `fp32(x)` for a cast); constants print exactly (shortest round-trip digits), with their type
// unless they are int32, bool, fp32 (suffix f) or fp64. Stmts print as a loop nest in the
// style of Halide's stmt files:
//
//   produce C {
//     for (i, 0, 512) parallel {
//       for (j, 0, 384) {
//         C(i, j) = 0.0f
//       }
//     }
//   }
//   allocate T[fp32 * 64 * 64] in SPAD bank 2 {
//     ...
//   }
#include <ostream>
#include <string>

#include "tessera/expr.h"
#include "tessera/ir_visitor.h"
#include "tessera/type.h"

namespace tessera {

/// Prints IR to a stream. Subclass it to print extra node information.
class IRPrinter : public IRVisitor {
public:
    explicit IRPrinter(std::ostream &os) : os_(os) {}
    void print(const Expr &e);
    void print(const Stmt &s);

    void visit(const IntImm *) override;
    void visit(const UIntImm *) override;
    void visit(const FloatImm *) override;
    void visit(const Variable *) override;
    void visit(const Cast *) override;
    void visit(const Add *) override;
    void visit(const Sub *) override;
    void visit(const Mul *) override;
    void visit(const Div *) override;
    void visit(const Mod *) override;
    void visit(const Min *) override;
    void visit(const Max *) override;
    void visit(const EQ *) override;
    void visit(const NE *) override;
    void visit(const LT *) override;
    void visit(const LE *) override;
    void visit(const GT *) override;
    void visit(const GE *) override;
    void visit(const And *) override;
    void visit(const Or *) override;
    void visit(const Not *) override;
    void visit(const Select *) override;
    void visit(const Let *) override;
    void visit(const Call *) override;
    void visit(const Load *) override;

    void visit(const LetStmt *) override;
    void visit(const For *) override;
    void visit(const Store *) override;
    void visit(const Provide *) override;
    void visit(const Allocate *) override;
    void visit(const Realize *) override;
    void visit(const IfThenElse *) override;
    void visit(const Block *) override;
    void visit(const Evaluate *) override;
    void visit(const ProducerConsumer *) override;

protected:
    void print_binary(const Expr &a, const char *op, const Expr &b);
    void print_list(const std::vector<Expr> &exprs);
    void print_indent();
    /// Prints " {", the body one level deeper, and the closing brace.
    void print_braced_body(const Stmt &body);

    std::ostream &os_;
    int indent_ = 0;
};

std::ostream &operator<<(std::ostream &os, const Expr &e);
std::ostream &operator<<(std::ostream &os, const Stmt &s);
std::ostream &operator<<(std::ostream &os, const Type &t);
std::ostream &operator<<(std::ostream &os, const Range &r);

/// The printed form of an Expr ("<undefined>" for an undefined one).
std::string to_string(const Expr &e);
/// The printed form of a Stmt, one statement per line.
std::string to_string(const Stmt &s);

/// A floating-point value in the shortest decimal form that reads back exactly, e.g. "0.1",
/// "1e-07", "inf", "nan"; always with a '.' or an exponent so it reads as a float.
std::string float_to_string(double value, Type t);

} // namespace tessera
