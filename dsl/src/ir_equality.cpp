// Structural equality and hashing. Both walk the same fields of each node; the hash feeds
// them to FNV-1a in a fixed order.
#include "tessera/ir_equality.h"

#include <cstring>
#include <string>

#include "tessera/error.h"
#include "tessera/func.h"
#include "tessera/internal/function.h"

namespace tessera {

namespace {

// ---------------------------------------------------------------------------------------------
// Equality

bool equal_exprs(const std::vector<Expr> &a, const std::vector<Expr> &b);

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <typename T> bool equal_binary(const BaseExprNode *a, const BaseExprNode *b) {
    const auto *x = static_cast<const T *>(a);
    const auto *y = static_cast<const T *>(b);
    return equal(x->a, y->a) && equal(x->b, y->b);
}

bool equal_node(const BaseExprNode *a, const BaseExprNode *b) {
    if (a == b) return true;
    if (a->node_type != b->node_type || a->type != b->type) return false;
    switch (a->node_type) {
    case IRNodeType::IntImm: return static_cast<const IntImm *>(a)->value == static_cast<const IntImm *>(b)->value;
    case IRNodeType::UIntImm: return static_cast<const UIntImm *>(a)->value == static_cast<const UIntImm *>(b)->value;
    case IRNodeType::FloatImm:
        return same_bits(static_cast<const FloatImm *>(a)->value, static_cast<const FloatImm *>(b)->value);
    case IRNodeType::Variable: {
        const auto *x = static_cast<const Variable *>(a);
        const auto *y = static_cast<const Variable *>(b);
        return x->name == y->name && x->kind == y->kind;
    }
    case IRNodeType::Cast: return equal(static_cast<const Cast *>(a)->value, static_cast<const Cast *>(b)->value);
    case IRNodeType::Add: return equal_binary<Add>(a, b);
    case IRNodeType::Sub: return equal_binary<Sub>(a, b);
    case IRNodeType::Mul: return equal_binary<Mul>(a, b);
    case IRNodeType::Div: return equal_binary<Div>(a, b);
    case IRNodeType::Mod: return equal_binary<Mod>(a, b);
    case IRNodeType::Min: return equal_binary<Min>(a, b);
    case IRNodeType::Max: return equal_binary<Max>(a, b);
    case IRNodeType::EQ: return equal_binary<EQ>(a, b);
    case IRNodeType::NE: return equal_binary<NE>(a, b);
    case IRNodeType::LT: return equal_binary<LT>(a, b);
    case IRNodeType::LE: return equal_binary<LE>(a, b);
    case IRNodeType::GT: return equal_binary<GT>(a, b);
    case IRNodeType::GE: return equal_binary<GE>(a, b);
    case IRNodeType::And: return equal_binary<And>(a, b);
    case IRNodeType::Or: return equal_binary<Or>(a, b);
    case IRNodeType::Not: return equal(static_cast<const Not *>(a)->a, static_cast<const Not *>(b)->a);
    case IRNodeType::Select: {
        const auto *x = static_cast<const Select *>(a);
        const auto *y = static_cast<const Select *>(b);
        return equal(x->condition, y->condition) && equal(x->true_value, y->true_value) &&
               equal(x->false_value, y->false_value);
    }
    case IRNodeType::Let: {
        const auto *x = static_cast<const Let *>(a);
        const auto *y = static_cast<const Let *>(b);
        return x->name == y->name && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case IRNodeType::Call: {
        const auto *x = static_cast<const Call *>(a);
        const auto *y = static_cast<const Call *>(b);
        return x->call_type == y->call_type && x->name == y->name &&
               (x->call_type != CallType::Intrinsic || x->intrinsic == y->intrinsic) && equal_exprs(x->args, y->args);
    }
    case IRNodeType::Load: {
        const auto *x = static_cast<const Load *>(a);
        const auto *y = static_cast<const Load *>(b);
        return x->name == y->name && equal(x->index, y->index);
    }
    default: break;
    }
    throw InternalError("equal(Expr): unknown expression node");
}

bool equal_exprs(const std::vector<Expr> &a, const std::vector<Expr> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!equal(a[i], b[i])) return false;
    return true;
}

bool equal_stmt_node(const BaseStmtNode *a, const BaseStmtNode *b) {
    if (a == b) return true;
    if (a->node_type != b->node_type) return false;
    switch (a->node_type) {
    case IRNodeType::LetStmt: {
        const auto *x = static_cast<const LetStmt *>(a);
        const auto *y = static_cast<const LetStmt *>(b);
        return x->name == y->name && equal(x->value, y->value) && equal(x->body, y->body);
    }
    case IRNodeType::For: {
        const auto *x = static_cast<const For *>(a);
        const auto *y = static_cast<const For *>(b);
        return x->name == y->name && x->kind == y->kind && equal(x->min, y->min) && equal(x->extent, y->extent) &&
               equal(x->body, y->body);
    }
    case IRNodeType::Store: {
        const auto *x = static_cast<const Store *>(a);
        const auto *y = static_cast<const Store *>(b);
        return x->name == y->name && equal(x->value, y->value) && equal(x->index, y->index);
    }
    case IRNodeType::Provide: {
        const auto *x = static_cast<const Provide *>(a);
        const auto *y = static_cast<const Provide *>(b);
        return x->name == y->name && equal(x->value, y->value) && equal_exprs(x->args, y->args);
    }
    case IRNodeType::Allocate: {
        const auto *x = static_cast<const Allocate *>(a);
        const auto *y = static_cast<const Allocate *>(b);
        return x->name == y->name && x->type == y->type && x->memory == y->memory && x->bank == y->bank &&
               equal_exprs(x->extents, y->extents) && equal(x->body, y->body);
    }
    case IRNodeType::Realize: {
        const auto *x = static_cast<const Realize *>(a);
        const auto *y = static_cast<const Realize *>(b);
        if (x->name != y->name || x->type != y->type || x->memory != y->memory || x->bounds.size() != y->bounds.size())
            return false;
        for (size_t i = 0; i < x->bounds.size(); ++i)
            if (!equal(x->bounds[i].min, y->bounds[i].min) || !equal(x->bounds[i].extent, y->bounds[i].extent))
                return false;
        return equal(x->body, y->body);
    }
    case IRNodeType::IfThenElse: {
        const auto *x = static_cast<const IfThenElse *>(a);
        const auto *y = static_cast<const IfThenElse *>(b);
        return equal(x->condition, y->condition) && equal(x->then_case, y->then_case) &&
               equal(x->else_case, y->else_case);
    }
    case IRNodeType::Block: {
        const auto *x = static_cast<const Block *>(a);
        const auto *y = static_cast<const Block *>(b);
        return equal(x->first, y->first) && equal(x->rest, y->rest);
    }
    case IRNodeType::Evaluate:
        return equal(static_cast<const Evaluate *>(a)->value, static_cast<const Evaluate *>(b)->value);
    case IRNodeType::ProducerConsumer: {
        const auto *x = static_cast<const ProducerConsumer *>(a);
        const auto *y = static_cast<const ProducerConsumer *>(b);
        return x->name == y->name && x->is_producer == y->is_producer && equal(x->body, y->body);
    }
    default: break;
    }
    throw InternalError("equal(Stmt): unknown statement node");
}

// ---------------------------------------------------------------------------------------------
// Hashing

/// FNV-1a, 64-bit, fed with fixed-width little-endian integers and length-prefixed strings.
class Hasher {
public:
    Hasher() { add(uint64_t{kStructuralHashVersion}); }

    void add_byte(uint8_t b) {
        h_ ^= b;
        h_ *= 1099511628211ull;
    }
    void add(uint64_t v) {
        for (int i = 0; i < 8; ++i) add_byte(static_cast<uint8_t>(v >> (8 * i)));
    }
    void add(const std::string &s) {
        add(uint64_t{s.size()});
        for (char c : s) add_byte(static_cast<uint8_t>(c));
    }
    void add(Type t) {
        add_byte(static_cast<uint8_t>(t.code()));
        add_byte(static_cast<uint8_t>(t.bits()));
    }
    void add(double d) {
        uint64_t bits;
        std::memcpy(&bits, &d, sizeof bits);
        add(bits);
    }

    void add(const Expr &e) {
        if (!e.defined()) {
            add_byte(0xFF); // distinct from every node type
            return;
        }
        const BaseExprNode *n = e.node.get();
        add_byte(static_cast<uint8_t>(n->node_type));
        add(n->type);
        switch (n->node_type) {
        case IRNodeType::IntImm: add(static_cast<uint64_t>(static_cast<const IntImm *>(n)->value)); return;
        case IRNodeType::UIntImm: add(static_cast<const UIntImm *>(n)->value); return;
        case IRNodeType::FloatImm: add(static_cast<const FloatImm *>(n)->value); return;
        case IRNodeType::Variable: {
            const auto *v = static_cast<const Variable *>(n);
            add(v->name);
            add_byte(static_cast<uint8_t>(v->kind));
            return;
        }
        case IRNodeType::Cast: add(static_cast<const Cast *>(n)->value); return;
#define TESSERA_HASH_BINARY(T)                                                                   \
    case IRNodeType::T:                                                                          \
        add(static_cast<const T *>(n)->a);                                                       \
        add(static_cast<const T *>(n)->b);                                                       \
        return;
            TESSERA_HASH_BINARY(Add)
            TESSERA_HASH_BINARY(Sub)
            TESSERA_HASH_BINARY(Mul)
            TESSERA_HASH_BINARY(Div)
            TESSERA_HASH_BINARY(Mod)
            TESSERA_HASH_BINARY(Min)
            TESSERA_HASH_BINARY(Max)
            TESSERA_HASH_BINARY(EQ)
            TESSERA_HASH_BINARY(NE)
            TESSERA_HASH_BINARY(LT)
            TESSERA_HASH_BINARY(LE)
            TESSERA_HASH_BINARY(GT)
            TESSERA_HASH_BINARY(GE)
            TESSERA_HASH_BINARY(And)
            TESSERA_HASH_BINARY(Or)
#undef TESSERA_HASH_BINARY
        case IRNodeType::Not: add(static_cast<const Not *>(n)->a); return;
        case IRNodeType::Select: {
            const auto *s = static_cast<const Select *>(n);
            add(s->condition);
            add(s->true_value);
            add(s->false_value);
            return;
        }
        case IRNodeType::Let: {
            const auto *l = static_cast<const Let *>(n);
            add(l->name);
            add(l->value);
            add(l->body);
            return;
        }
        case IRNodeType::Call: {
            const auto *c = static_cast<const Call *>(n);
            add_byte(static_cast<uint8_t>(c->call_type));
            if (c->call_type == CallType::Intrinsic) add_byte(static_cast<uint8_t>(c->intrinsic));
            add(c->name);
            add(c->args);
            return;
        }
        case IRNodeType::Load: {
            const auto *l = static_cast<const Load *>(n);
            add(l->name);
            add(l->index);
            return;
        }
        default: break;
        }
        throw InternalError("structural_hash(Expr): unknown expression node");
    }

    void add(const std::vector<Expr> &es) {
        add(uint64_t{es.size()});
        for (const Expr &e : es) add(e);
    }

    void add(const Stmt &s) {
        if (!s.defined()) {
            add_byte(0xFF);
            return;
        }
        const BaseStmtNode *n = s.node.get();
        add_byte(static_cast<uint8_t>(n->node_type));
        switch (n->node_type) {
        case IRNodeType::LetStmt: {
            const auto *l = static_cast<const LetStmt *>(n);
            add(l->name);
            add(l->value);
            add(l->body);
            return;
        }
        case IRNodeType::For: {
            const auto *f = static_cast<const For *>(n);
            add(f->name);
            add_byte(static_cast<uint8_t>(f->kind));
            add(f->min);
            add(f->extent);
            add(f->body);
            return;
        }
        case IRNodeType::Store: {
            const auto *st = static_cast<const Store *>(n);
            add(st->name);
            add(st->value);
            add(st->index);
            return;
        }
        case IRNodeType::Provide: {
            const auto *p = static_cast<const Provide *>(n);
            add(p->name);
            add(p->value);
            add(p->args);
            return;
        }
        case IRNodeType::Allocate: {
            const auto *a = static_cast<const Allocate *>(n);
            add(a->name);
            add(a->type);
            add_byte(static_cast<uint8_t>(a->memory));
            add(static_cast<uint64_t>(static_cast<int64_t>(a->bank)));
            add(a->extents);
            add(a->body);
            return;
        }
        case IRNodeType::Realize: {
            const auto *r = static_cast<const Realize *>(n);
            add(r->name);
            add(r->type);
            add_byte(static_cast<uint8_t>(r->memory));
            add(uint64_t{r->bounds.size()});
            for (const Range &b : r->bounds) {
                add(b.min);
                add(b.extent);
            }
            add(r->body);
            return;
        }
        case IRNodeType::IfThenElse: {
            const auto *i = static_cast<const IfThenElse *>(n);
            add(i->condition);
            add(i->then_case);
            add(i->else_case);
            return;
        }
        case IRNodeType::Block: {
            const auto *b = static_cast<const Block *>(n);
            add(b->first);
            add(b->rest);
            return;
        }
        case IRNodeType::Evaluate: add(static_cast<const Evaluate *>(n)->value); return;
        case IRNodeType::ProducerConsumer: {
            const auto *p = static_cast<const ProducerConsumer *>(n);
            add(p->name);
            add_byte(p->is_producer ? 1 : 0);
            add(p->body);
            return;
        }
        default: break;
        }
        throw InternalError("structural_hash(Stmt): unknown statement node");
    }

    void add(const internal::Definition &d) {
        add(d.args);
        add(d.value);
        add_byte(d.rdom ? 1 : 0);
        if (d.rdom) {
            add(d.rdom->name);
            add(uint64_t{d.rdom->vars.size()});
            for (const auto &v : d.rdom->vars) {
                add(v.name);
                add(v.min);
                add(v.extent);
            }
            add(d.rdom->predicate);
        }
    }

    void add_functions(const std::vector<Func> &outputs) {
        add(uint64_t{outputs.size()});
        for (const Func &f : outputs) add(f.name());
        const std::vector<Func> order = internal::topological_order(outputs);
        add(uint64_t{order.size()});
        for (const Func &f : order) {
            const auto &c = *f.contents();
            add(c.name);
            add(c.type);
            add(uint64_t{c.args.size()});
            for (const auto &a : c.args) add(a);
            add(c.init);
            add(uint64_t{c.updates.size()});
            for (const auto &u : c.updates) add(u);
        }
        const std::vector<Input> inputs = internal::find_inputs(order);
        add(uint64_t{inputs.size()});
        for (const Input &in : inputs) {
            add(in.name());
            add(in.type());
            add(in.shape());
        }
    }

    uint64_t value() const { return h_; }

private:
    uint64_t h_ = 14695981039346656037ull; // FNV-1a offset basis
};

} // namespace

bool equal(const Expr &a, const Expr &b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return equal_node(a.node.get(), b.node.get());
}

bool equal(const Stmt &a, const Stmt &b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    return equal_stmt_node(a.node.get(), b.node.get());
}

uint64_t structural_hash(const Expr &e) {
    Hasher h;
    h.add(e);
    return h.value();
}

uint64_t structural_hash(const Stmt &s) {
    Hasher h;
    h.add(s);
    return h.value();
}

uint64_t hash(const Func &f) {
    if (!f.defined()) throw Error("hash: Func " + f.name() + " has no definition; define it before hashing it");
    Hasher h;
    h.add_functions({f});
    return h.value();
}

uint64_t hash(const Pipeline &p) {
    Hasher h;
    h.add_functions(p.outputs());
    return h.value();
}

} // namespace tessera
