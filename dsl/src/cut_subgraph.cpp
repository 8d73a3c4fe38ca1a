// cut_subgraph: copies a Func and the producers it reaches up to a set of cut Funcs, each cut
// read through an Input of its own name, so the copy is a kernel of its own.
#include "tessera/internal/cut_subgraph.h"

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_mutator.h"

namespace tessera::internal {

namespace {

class CutRewriter : public IRMutator {
public:
    /// `whole_copy`: Inputs are copied too and each copy keeps whom it is used by (a copy of a
    /// whole pipeline, scheduled apart from the original), else Inputs are shared.
    CutRewriter(const std::map<std::string, std::vector<int64_t>> &cuts, bool whole_copy) : cuts_(cuts), whole_copy_(whole_copy) {}

    std::map<std::string, Input> cut_inputs;

    /// The copy of `f` (made once; a Func reached twice is copied once).
    std::shared_ptr<FunctionContents> copy_of(const std::shared_ptr<FunctionContents> &f) {
        const auto found = copies_.find(f.get());
        if (found != copies_.end()) return found->second;
        auto copy = std::make_shared<FunctionContents>(*f);
        if (!whole_copy_) copy->used_by.clear();
        copies_[f.get()] = copy;
        for (int s = 0; s < copy->num_stages(); ++s) {
            Definition &d = s == 0 ? copy->init : copy->updates[static_cast<size_t>(s - 1)];
            if (!d.defined()) continue;
            self_ = copy;
            for (Expr &a : d.args) a = mutate(a);
            d.value = mutate(d.value);
            if (d.rdom && d.rdom->predicate.defined()) {
                auto rdom = std::make_shared<ReductionDomainContents>(*d.rdom);
                rdom->predicate = mutate(rdom->predicate);
                d.rdom = rdom;
            }
        }
        return copy;
    }

protected:
    using IRMutator::visit;
    Expr visit(const Call *op, const Expr &e) override {
        std::vector<Expr> args;
        const bool changed = mutate_all(op->args, args);
        if (op->call_type == CallType::Input && whole_copy_) return Call::make_input(input_copy_of(op->input), changed ? args : op->args);
        if (op->call_type != CallType::Func) {
            if (!changed) return e;
            return op->call_type == CallType::Input ? Call::make_input(op->input, args) : Call::make_intrinsic(op->intrinsic, args);
        }
        const auto callee = op->func.get();
        const auto cut = cuts_.find(callee->name);
        if (cut != cuts_.end()) {
            if (!callee->defined()) throw Error("cut_subgraph: the cut Func " + callee->name + " is undefined");
            auto it = cut_inputs.find(callee->name);
            if (it == cut_inputs.end()) {
                std::vector<Expr> shape;
                for (int64_t extent : cut->second) shape.emplace_back(static_cast<int>(extent));
                it = cut_inputs.emplace(callee->name, Input(callee->type, shape, callee->name)).first;
            }
            return Call::make_input(it->second.contents(), args);
        }
        // A weak self-reference of an update stays weak, to the copy.
        if (!op->func.strong) return Call::make_func(op->type, FunctionRef::make_weak(self_), args);
        const auto saved = self_;
        const auto copy = copy_of(callee);
        self_ = saved;
        return Call::make_func(op->type, FunctionRef(copy), args);
    }

private:
    std::shared_ptr<const InputContents> input_copy_of(const std::shared_ptr<const InputContents> &in) {
        auto &copy = input_copies_[in.get()];
        if (!copy) copy = std::make_shared<const InputContents>(*in);
        return copy;
    }

    const std::map<std::string, std::vector<int64_t>> &cuts_;
    const bool whole_copy_;
    std::map<const FunctionContents *, std::shared_ptr<FunctionContents>> copies_;
    std::map<const InputContents *, std::shared_ptr<const InputContents>> input_copies_;
    std::shared_ptr<FunctionContents> self_;
};

} // namespace

CutSubgraph cut_subgraph(const Func &head, const std::map<std::string, std::vector<int64_t>> &cuts) {
    if (!head.defined()) throw Error("cut_subgraph: the head Func " + head.name() + " is undefined");
    if (cuts.count(head.name())) throw Error("cut_subgraph: the head Func " + head.name() + " is itself a cut");
    CutRewriter rewriter(cuts, /*whole_copy=*/false);
    Func copy(rewriter.copy_of(head.contents()));
    return {copy, rewriter.cut_inputs};
}

Pipeline copy_pipeline(const Pipeline &pipeline) {
    const std::map<std::string, std::vector<int64_t>> no_cuts;
    CutRewriter rewriter(no_cuts, /*whole_copy=*/true);
    std::vector<Func> outputs;
    for (const Func &o : pipeline.outputs()) outputs.emplace_back(rewriter.copy_of(o.contents()));
    return Pipeline(outputs);
}

} // namespace tessera::internal
