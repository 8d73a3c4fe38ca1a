// The loop-nest summary (loop_nest_summary.h): one walk over the lowered statement.
#include "loop_nest_summary.h"

#include <map>

#include "tessera/error.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal::autotune {

namespace {

/// Extents lowering could not fold (a tail min(), a symbolic size) count as this many trips.
constexpr int64_t kUnknownExtent = 8;

/// The loops an index depends on, through the lets that name parts of it.
struct Dependencies : IRVisitor {
    const std::map<std::string, uint64_t> &of_name;
    uint64_t mask = 0;
    explicit Dependencies(const std::map<std::string, uint64_t> &m) : of_name(m) {}
    using IRVisitor::visit;
    void visit(const Variable *v) override {
        auto it = of_name.find(v->name);
        if (it != of_name.end()) mask |= it->second;
    }
};

/// The arithmetic of a stored value, and the loads in it (index arithmetic is not counted).
struct ValueWalk : IRVisitor {
    double ops = 0;
    std::vector<const Load *> loads;
    using IRVisitor::visit;
    void visit(const Add *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Sub *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Mul *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Div *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Min *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Max *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Select *o) override { ++ops, IRVisitor::visit(o); }
    void visit(const Call *o) override {
        if (o->call_type == CallType::Intrinsic) ++ops;
        IRVisitor::visit(o);
    }
    void visit(const Load *o) override { loads.push_back(o); } // not into the index
};

struct Summarizer : IRVisitor {
    LoopNestSummary summary;
    std::vector<NestLoop> loops;
    std::map<std::string, uint64_t> depends; // loop variables and lets → loop bits
    std::map<std::string, int> element_bytes;
    int depth = 0;

    uint64_t depends_of(const Expr &e) const {
        Dependencies d(depends);
        e.accept(&d);
        return d.mask;
    }
    using IRVisitor::visit;
    void visit(const For *f) override {
        if (loops.size() >= 64) throw Error("cost model: a loop nest deeper than 64 loops");
        ++summary.loops;
        summary.max_depth = std::max(summary.max_depth, int(loops.size()) + 1);
        loops.push_back({f->name, as_const_int(f->extent).value_or(kUnknownExtent), f->kind});
        depends[f->name] = uint64_t{1} << (loops.size() - 1);
        f->body.accept(this);
        depends.erase(f->name);
        loops.pop_back();
    }
    void visit(const LetStmt *l) override {
        depends[l->name] = depends_of(l->value);
        l->body.accept(this);
    }
    void visit(const Allocate *a) override {
        double elements = 1;
        for (const Expr &e : a->extents) elements *= double(as_const_int(e).value_or(kUnknownExtent));
        ++summary.allocations;
        summary.allocated_bytes += elements * a->type.bytes();
        element_bytes[a->name] = a->type.bytes();
        a->body.accept(this);
    }
    void visit(const Store *s) override {
        StoreNest nest;
        nest.buffer = s->name;
        nest.loops = loops;
        ValueWalk walk;
        s->value.accept(&walk);
        nest.ops_per_point = walk.ops;
        NestAccess store{s->name, s->value.type().bytes(), depends_of(s->index), true, false};
        for (const Load *l : walk.loads) {
            if (l->name == s->name && equal(l->index, s->index)) {
                store.read = true;
                continue;
            }
            nest.accesses.push_back({l->name, l->type.bytes(), depends_of(l->index), false, true});
        }
        nest.accesses.push_back(store);
        summary.stores.push_back(std::move(nest));
    }
};

} // namespace

double StoreNest::points() const {
    double n = 1;
    for (const NestLoop &l : loops) n *= double(l.extent);
    return n;
}

LoopNestSummary summarize_loop_nest(const LoweredModule &module) {
    Summarizer s;
    module.body.accept(&s);
    return std::move(s.summary);
}

} // namespace tessera::internal::autotune
