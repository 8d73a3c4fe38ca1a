// apply_fusion_schedule (fusion.h): the graph compiler's fusion decisions as compute_inline,
// compute_root and compute_at directives.
#include "tessera/fusion.h"

#include <map>
#include <optional>
#include <set>

#include "tessera/internal/function.h"
#include "tessera/ir_visitor.h"

namespace tessera {

namespace {

/// Whether every call to `producer` in `e` reads it at exactly these pure coordinates.
class ElementwiseReads : public IRVisitor {
public:
    ElementwiseReads(const std::string &producer, const std::vector<std::string> &coordinates)
        : producer_(producer), coordinates_(coordinates) {}
    bool elementwise = true;

    using IRVisitor::visit;
    void visit(const Call *op) override {
        if (op->call_type == CallType::Func && op->name == producer_) {
            bool same = op->args.size() == coordinates_.size();
            for (size_t i = 0; same && i < op->args.size(); ++i) {
                const Variable *v = op->args[i].as<Variable>();
                same = v && v->name == coordinates_[i];
            }
            elementwise = elementwise && same;
        }
        IRVisitor::visit(op);
    }

private:
    std::string producer_;
    std::vector<std::string> coordinates_;
};

} // namespace

void apply_fusion_schedule(const Pipeline &pipeline) {
    std::set<std::string> outputs;
    for (const Func &o : pipeline.outputs()) outputs.insert(o.name());
    const std::vector<Func> funcs = internal::topological_order(pipeline.outputs());
    std::map<std::string, std::vector<Func>> consumers;
    for (const Func &f : funcs)
        for (const Func &p : internal::direct_producers(f)) consumers[p.name()].push_back(f);
    // Inlined into a reduction's update, a value would be computed once per reduction step (a
    // ReLU read by the next layer's matmul, K times over): such a Func is materialised instead.
    auto read_by_a_reduction_step = [&](const Func &f, const Func &consumer) {
        for (const internal::Definition &u : consumer.contents()->updates) {
            if (!u.rdom) continue;
            for (const Expr &e : internal::definition_exprs(u))
                for (const Func &called : internal::called_functions(e))
                    if (called.name() == f.name()) return true;
        }
        return false;
    };
    auto inlined = [&](const Func &f) {
        const std::vector<Func> &readers = consumers[f.name()];
        return !outputs.count(f.name()) && f.num_updates() == 0 && readers.size() == 1 && !read_by_a_reduction_step(f, readers[0]);
    };
    // The Func reading `f` element-wise that `f` may be computed at: its only reader, or the end
    // of a chain of inlined element-wise readers, as long as that end is pure and has loops.
    auto elementwise_reader = [&](const Func &f) -> std::optional<Func> {
        Func at = f;
        do {
            const std::vector<Func> &readers = consumers[at.name()];
            if (readers.size() != 1 || readers[0].num_updates() != 0 || readers[0].dimensions() != f.dimensions() || f.dimensions() == 0)
                return std::nullopt;
            ElementwiseReads reads(at.name(), readers[0].args());
            reads.include(readers[0].value());
            if (!reads.elementwise) return std::nullopt;
            at = readers[0];
        } while (inlined(at));
        return at;
    };
    for (const Func &f0 : funcs) {
        Func f = f0;
        if (outputs.count(f.name())) continue;
        if (f.num_updates() == 0) {
            if (inlined(f)) f.compute_inline();
            else f.compute_root();
        } else if (const std::optional<Func> at = elementwise_reader(f)) {
            f.compute_at(*at, VarOrRVar(at->args().front()));
        } else {
            f.compute_root();
        }
    }
}

} // namespace tessera
