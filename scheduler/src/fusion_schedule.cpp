// apply_fusion_schedule (fusion.h): the graph compiler's fusion decisions as compute_inline,
// compute_root and compute_at directives.
#include "tessera/fusion.h"

#include <map>
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
    for (const Func &f0 : funcs) {
        Func f = f0;
        if (outputs.count(f.name())) continue;
        const std::vector<Func> &readers = consumers[f.name()];
        if (f.num_updates() == 0) {
            if (readers.size() == 1) f.compute_inline();
            else f.compute_root();
            continue;
        }
        bool at_consumer = readers.size() == 1 && readers[0].num_updates() == 0 && readers[0].dimensions() == f.dimensions() &&
                           readers[0].dimensions() > 0;
        if (at_consumer) {
            ElementwiseReads reads(f.name(), readers[0].args());
            reads.include(readers[0].value());
            at_consumer = reads.elementwise;
        }
        if (at_consumer) f.compute_at(readers[0], VarOrRVar(readers[0].args().front()));
        else f.compute_root();
    }
}

} // namespace tessera
