// Readable printing of Exprs and Stmts (format described in ir_printer.h).
#include "tessera/ir_printer.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace tessera {

std::string float_to_string(double value, Type t) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    char buf[64];
    // Shortest digits that round-trip in the constant's own precision (every bf16/fp16 value is
    // an fp32 value, so fp32's shortest form reads back exactly into them too).
    const auto r = t.bits() == 64 && !t.is_bfloat() ? std::to_chars(buf, buf + sizeof buf, value)
                                                    : std::to_chars(buf, buf + sizeof buf, static_cast<float>(value));
    std::string s(buf, r.ptr);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

void IRPrinter::print(const Expr &e) {
    if (!e.defined()) {
        os_ << "<undefined>";
        return;
    }
    e.accept(this);
}

void IRPrinter::print(const Stmt &s) {
    if (!s.defined()) {
        print_indent();
        os_ << "<undefined>\n";
        return;
    }
    s.accept(this);
}

void IRPrinter::print_indent() {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
}

void IRPrinter::print_list(const std::vector<Expr> &exprs) {
    for (size_t i = 0; i < exprs.size(); ++i) {
        if (i) os_ << ", ";
        print(exprs[i]);
    }
}

void IRPrinter::print_binary(const Expr &a, const char *op, const Expr &b) {
    os_ << '(';
    print(a);
    os_ << ' ' << op << ' ';
    print(b);
    os_ << ')';
}

void IRPrinter::print_braced_body(const Stmt &body) {
    os_ << " {\n";
    ++indent_;
    print(body);
    --indent_;
    print_indent();
    os_ << "}\n";
}

void IRPrinter::visit(const IntImm *op) {
    if (op->type == Int(32))
        os_ << op->value;
    else
        os_ << op->type.to_string() << '(' << op->value << ')';
}

void IRPrinter::visit(const UIntImm *op) {
    if (op->type.is_bool())
        os_ << (op->value ? "true" : "false");
    else
        os_ << op->type.to_string() << '(' << op->value << ')';
}

void IRPrinter::visit(const FloatImm *op) {
    const std::string digits = float_to_string(op->value, op->type);
    if (op->type == Float(32))
        os_ << digits << (std::isfinite(op->value) ? "f" : "");
    else if (op->type == Float(64))
        os_ << digits;
    else
        os_ << op->type.to_string() << '(' << digits << ')';
}

void IRPrinter::visit(const Variable *op) { os_ << op->name; }

void IRPrinter::visit(const Cast *op) {
    os_ << op->type.to_string() << '(';
    print(op->value);
    os_ << ')';
}

void IRPrinter::visit(const Add *op) { print_binary(op->a, "+", op->b); }
void IRPrinter::visit(const Sub *op) { print_binary(op->a, "-", op->b); }
void IRPrinter::visit(const Mul *op) { print_binary(op->a, "*", op->b); }
void IRPrinter::visit(const Div *op) { print_binary(op->a, "/", op->b); }
void IRPrinter::visit(const Mod *op) { print_binary(op->a, "%", op->b); }
void IRPrinter::visit(const EQ *op) { print_binary(op->a, "==", op->b); }
void IRPrinter::visit(const NE *op) { print_binary(op->a, "!=", op->b); }
void IRPrinter::visit(const LT *op) { print_binary(op->a, "<", op->b); }
void IRPrinter::visit(const LE *op) { print_binary(op->a, "<=", op->b); }
void IRPrinter::visit(const GT *op) { print_binary(op->a, ">", op->b); }
void IRPrinter::visit(const GE *op) { print_binary(op->a, ">=", op->b); }
void IRPrinter::visit(const And *op) { print_binary(op->a, "&&", op->b); }
void IRPrinter::visit(const Or *op) { print_binary(op->a, "||", op->b); }

void IRPrinter::visit(const Min *op) {
    os_ << "min(";
    print_list({op->a, op->b});
    os_ << ')';
}

void IRPrinter::visit(const Max *op) {
    os_ << "max(";
    print_list({op->a, op->b});
    os_ << ')';
}

void IRPrinter::visit(const Not *op) {
    os_ << '!';
    print(op->a);
}

void IRPrinter::visit(const Select *op) {
    os_ << "select(";
    print_list({op->condition, op->true_value, op->false_value});
    os_ << ')';
}

void IRPrinter::visit(const Let *op) {
    os_ << "(let " << op->name << " = ";
    print(op->value);
    os_ << " in ";
    print(op->body);
    os_ << ')';
}

void IRPrinter::visit(const Call *op) {
    os_ << op->name << '(';
    print_list(op->args);
    os_ << ')';
}

void IRPrinter::visit(const Load *op) {
    os_ << op->name << '[';
    print(op->index);
    os_ << ']';
}

void IRPrinter::visit(const LetStmt *op) {
    print_indent();
    os_ << "let " << op->name << " = ";
    print(op->value);
    os_ << '\n';
    print(op->body);
}

void IRPrinter::visit(const For *op) {
    print_indent();
    os_ << "for (" << op->name << ", ";
    print(op->min);
    os_ << ", ";
    print(op->extent);
    os_ << ')';
    if (op->kind != ForKind::Serial) os_ << ' ' << for_kind_name(op->kind);
    print_braced_body(op->body);
}

void IRPrinter::visit(const Store *op) {
    print_indent();
    os_ << op->name << '[';
    print(op->index);
    os_ << "] = ";
    print(op->value);
    os_ << '\n';
}

void IRPrinter::visit(const Provide *op) {
    print_indent();
    os_ << op->name << '(';
    print_list(op->args);
    os_ << ") = ";
    print(op->value);
    os_ << '\n';
}

void IRPrinter::visit(const Allocate *op) {
    print_indent();
    os_ << "allocate " << op->name << '[' << op->type.to_string();
    for (const Expr &e : op->extents) {
        os_ << " * ";
        print(e);
    }
    os_ << "] in " << memory_kind_name(op->memory);
    if (op->bank >= 0) os_ << " bank " << op->bank;
    print_braced_body(op->body);
}

void IRPrinter::visit(const Realize *op) {
    print_indent();
    os_ << "realize " << op->name << '[' << op->type.to_string();
    for (const Range &r : op->bounds) os_ << ", " << r;
    os_ << "] in " << memory_kind_name(op->memory);
    print_braced_body(op->body);
}

void IRPrinter::visit(const IfThenElse *op) {
    print_indent();
    os_ << "if (";
    print(op->condition);
    os_ << ") {\n";
    ++indent_;
    print(op->then_case);
    --indent_;
    print_indent();
    if (op->else_case.defined()) {
        os_ << "} else {\n";
        ++indent_;
        print(op->else_case);
        --indent_;
        print_indent();
    }
    os_ << "}\n";
}

void IRPrinter::visit(const Block *op) {
    print(op->first);
    print(op->rest);
}

void IRPrinter::visit(const Evaluate *op) {
    print_indent();
    print(op->value);
    os_ << '\n';
}

void IRPrinter::visit(const ProducerConsumer *op) {
    print_indent();
    os_ << (op->is_producer ? "produce " : "consume ") << op->name;
    print_braced_body(op->body);
}

std::ostream &operator<<(std::ostream &os, const Expr &e) {
    IRPrinter(os).print(e);
    return os;
}

std::ostream &operator<<(std::ostream &os, const Stmt &s) {
    IRPrinter(os).print(s);
    return os;
}

std::ostream &operator<<(std::ostream &os, const Type &t) { return os << t.to_string(); }

std::ostream &operator<<(std::ostream &os, const Range &r) {
    os << '[' << r.min << ", " << r.extent << ']';
    return os;
}

std::string to_string(const Expr &e) {
    std::ostringstream s;
    s << e;
    return s.str();
}

std::string to_string(const Stmt &s) {
    std::ostringstream o;
    o << s;
    return o.str();
}

} // namespace tessera
