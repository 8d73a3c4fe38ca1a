// The chip loop-nest search space (chip_loop_nest_space.h).
#include "chip_loop_nest_space.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal::autotune {

namespace {

/// The Funcs a definition reads, by name.
class FuncReads : public IRVisitor {
public:
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Call *c) override {
        if (c->call_type == CallType::Func) names.insert(c->name);
        IRVisitor::visit(c);
    }
};

std::set<std::string> funcs_read_by(const FunctionContents &f) {
    FuncReads reads;
    for (int s = 0; s < f.num_stages(); ++s) {
        const Definition &d = f.stage(s);
        reads.include(d.value);
        for (const Expr &a : d.args) reads.include(a);
    }
    reads.names.erase(f.name);
    return reads.names;
}

Func func_named(const Pipeline &p, const std::string &name) {
    for (const Func &f : p.functions())
        if (f.name() == name) return f;
    throw Error("autotune: the pipeline has no Func " + name);
}

Stage stage_of(const Func &f, int s) { return s == 0 ? Stage(f.contents(), 0) : f.update(s - 1); }

/// Powers of two from `first` below `limit` (at most `last`).
std::vector<std::string> powers_below(int64_t first, int64_t last, int64_t limit) {
    std::vector<std::string> v{"off"};
    for (int64_t x = first; x <= last && x < limit; x *= 2) v.push_back(std::to_string(x));
    return v;
}

} // namespace

int ChipLoopNestSpace::add_knob(std::string name, std::vector<std::string> values) {
    knobs_.push_back({std::move(name), std::move(values)});
    return static_cast<int>(knobs_.size()) - 1;
}

int64_t ChipLoopNestSpace::number(const Candidate &c, int knob) const {
    if (knob < 0) return 0;
    const std::string &v = text(c, knob);
    return v == "off" ? 0 : std::stoll(v);
}

ChipLoopNestSpace::ChipLoopNestSpace(const Pipeline &pipeline, int vector_bytes, const std::vector<std::vector<int64_t>> &output_shapes) {
    const std::vector<Func> outputs = pipeline.outputs();
    const Func out = outputs.at(0);
    output_ = out.name();
    output_args_ = out.contents()->args;
    output_stages_ = out.num_updates() + 1;
    output_lanes_ = std::max(1, vector_bytes / std::max(1, out.contents()->type.bytes()));
    const std::vector<int64_t> shape = output_shapes.empty() ? std::vector<int64_t>{} : output_shapes.at(0);
    const int64_t rows = shape.empty() ? 0 : shape.front();

    if (!output_args_.empty()) {
        // One knob for the lanes and the row blocks: the rows in the lanes, whole or in blocks
        // (from half the lanes: a block in the lanes must be whole lane chunks, and the ones
        // below that are what Z3 refuses with its reason), or blocks of rows with the lanes
        // left to the default rule.
        std::vector<std::string> vector{"default", "rows"};
        if (output_args_.size() >= 2) vector.push_back("columns");
        for (int64_t b = std::max(1, output_lanes_ / 2); b <= 512 && b < rows; b *= 2) vector.push_back("rows/" + std::to_string(b));
        for (int64_t b = 32; b <= 128 && b < rows; b *= 4) vector.push_back("blocks/" + std::to_string(b));
        lanes_ = add_knob(output_ + ".vector", vector);
    }

    // Who reads whom; a pure Func between a producer and its reader may be inlined, so the
    // readers of a pure non-output Func are readers of what it reads too.
    std::map<std::string, std::set<std::string>> readers;
    std::set<std::string> output_names, pure;
    for (const Func &o : outputs) output_names.insert(o.name());
    for (const Func &f : pipeline.functions()) {
        if (f.num_updates() == 0) pure.insert(f.name());
        for (const std::string &r : funcs_read_by(*f.contents())) readers[r].insert(f.name());
    }
    for (const Func &f : pipeline.functions()) {
        if (output_names.count(f.name())) continue;
        ProducerPlan pp;
        pp.func = f.name();
        pp.pure = f.num_updates() == 0;
        std::set<std::string> seen, frontier = readers[f.name()];
        while (!frontier.empty()) {
            const std::string r = *frontier.begin();
            frontier.erase(frontier.begin());
            if (!seen.insert(r).second) continue;
            if (pure.count(r) && !output_names.count(r))
                for (const std::string &next : readers[r]) frontier.insert(next);
        }
        std::vector<std::string> values;
        if (pp.pure) values.push_back("inline");
        values.push_back("root");
        for (const Func &g : pipeline.functions()) // in the pipeline's order, for a stable knob
            if (seen.count(g.name()) && !g.contents()->args.empty()) {
                pp.consumers.push_back(g.name());
                values.push_back("at " + g.name());
            }
        pp.readers = seen;
        pp.compute = add_knob(f.name() + ".compute", values);
        if (rows > 0 && !f.contents()->args.empty()) pp.row_block = add_knob(f.name() + ".row-block", powers_below(32, 128, rows));
        producers_.push_back(pp);
    }
    for (const Func &f : pipeline.functions())
        for (int u = 0; u < f.num_updates(); ++u) {
            const Definition &d = f.contents()->updates.at(size_t(u));
            if (!d.rdom || d.rdom->vars.empty()) continue;
            const int64_t extent = as_const_int(d.rdom->vars[0].extent).value_or(0);
            if (extent <= 64) continue;
            reductions_.push_back({f.name(), u + 1, d.rdom->vars[0].name,
                                   add_knob(f.name() + ".s" + std::to_string(u + 1) + ".split", powers_below(64, 256, extent))});
        }
}

int64_t ChipLoopNestSpace::size() const { return candidate_count(knobs_); }

std::vector<Candidate> ChipLoopNestSpace::candidates(size_t limit, uint64_t seed) const {
    // Every candidate when the space is small enough to list, else a seeded sample; then
    // nearest the default first, each distance in the seeded order.
    std::vector<Candidate> all;
    std::mt19937_64 rng(seed);
    const int64_t n = size();
    const size_t listed = 4 * limit;
    if (n <= int64_t(listed)) {
        for (int64_t i = 0; i < n; ++i) {
            Candidate c(knobs_.size(), 0);
            int64_t rest = i;
            for (size_t k = knobs_.size(); k-- > 0;) {
                const int64_t radix = int64_t(knobs_[k].values.size());
                c[k] = int(rest % radix);
                rest /= radix;
            }
            all.push_back(c);
        }
    } else {
        std::set<Candidate> seen;
        auto add = [&](const Candidate &c) {
            if (seen.insert(c).second) all.push_back(c);
        };
        const Candidate origin(knobs_.size(), 0);
        add(origin);
        for (size_t k = 0; k < knobs_.size(); ++k)
            for (size_t v = 1; v < knobs_[k].values.size(); ++v) {
                Candidate c = origin;
                c[k] = int(v);
                add(c);
            }
        for (size_t tries = 0; all.size() < listed && tries < 20 * listed; ++tries) {
            Candidate c(knobs_.size());
            for (size_t k = 0; k < knobs_.size(); ++k) c[k] = int(rng() % knobs_[k].values.size());
            add(c);
        }
    }
    std::erase_if(all, [&](const Candidate &c) { return !coherent(c); });
    std::shuffle(all.begin(), all.end(), rng);
    auto changed = [](const Candidate &c) { return std::count_if(c.begin(), c.end(), [](int v) { return v != 0; }); };
    std::stable_sort(all.begin(), all.end(), [&](const Candidate &x, const Candidate &y) { return changed(x) < changed(y); });
    if (all.size() > limit) all.resize(limit);
    return all;
}

bool ChipLoopNestSpace::coherent(const Candidate &c) const {
    auto plan_of = [&](const std::string &name) -> const ProducerPlan * {
        for (const ProducerPlan &pp : producers_)
            if (pp.func == name) return &pp;
        return nullptr;
    };
    for (const ProducerPlan &pp : producers_) {
        const std::string &where = text(c, pp.compute);
        if (where.rfind("at ", 0) != 0) continue;
        const std::string consumer = where.substr(3);
        const ProducerPlan *at = plan_of(consumer);
        if (at && at->pure && c[size_t(at->compute)] == 0) return false; // an inlined consumer has no loops
        // Every other reader must read inside that loop: inlined, or computed at it as well
        // (a softmax's maximum at the output's rows with its sum of exponentials).
        for (const std::string &r : pp.readers) {
            if (r == consumer) continue;
            const ProducerPlan *reader = plan_of(r);
            if (!reader) return false; // another output
            if (!(reader->pure && c[size_t(reader->compute)] == 0) && text(c, reader->compute) != where) return false;
        }
    }
    return true;
}

std::string ChipLoopNestSpace::describe(const Candidate &c) const {
    std::string s;
    for (size_t k = 0; k < knobs_.size(); ++k)
        if (c[k] != 0) s += (s.empty() ? "" : " ") + knobs_[k].name + "=" + knobs_[k].values[size_t(c[k])];
    return s.empty() ? "default rule" : s;
}

namespace {
/// The output's vector knob as (the loop in the lanes: "rows", "columns" or "" for the
/// default rule; its row block, 0 for none).
std::pair<std::string, int64_t> vector_choice(const std::string &v) {
    if (v == "rows" || v == "columns") return {v, 0};
    if (v.rfind("rows/", 0) == 0) return {"rows", std::stoll(v.substr(5))};
    if (v.rfind("blocks/", 0) == 0) return {"", std::stoll(v.substr(7))};
    return {"", 0};
}
} // namespace

int64_t ChipLoopNestSpace::lane_row_block(const Candidate &c) const {
    if (lanes_ < 0) return 0;
    const auto [lanes, block] = vector_choice(text(c, lanes_));
    return lanes == "rows" ? block : 0;
}

void ChipLoopNestSpace::apply(const Candidate &c, const Pipeline &pipeline) const {
    // Only the knobs away from their first value (the default rule's) record directives: the
    // default candidate is the empty schedule.
    pipeline.set_schedule(Schedule{});
    const Func out = func_named(pipeline, output_);
    const auto [lanes, block] = vector_choice(lanes_ >= 0 ? text(c, lanes_) : "default");
    const std::string row = output_args_.empty() ? "" : output_args_.front();
    std::string row_loop = row;
    for (int s = 0; s < output_stages_ && !row.empty(); ++s) {
        Stage st = stage_of(out, s);
        std::string lane_loop = lanes == "rows" ? row : lanes == "columns" ? output_args_.back() : "";
        if (block > 0) {
            row_loop = row + "_block";
            st.split(VarOrRVar(row), VarOrRVar(row_loop), VarOrRVar(row + "_in"), int(block));
            if (lanes == "rows") lane_loop = row + "_in";
        }
        if (!lane_loop.empty()) st.vectorize(VarOrRVar(lane_loop));
    }
    for (const ProducerPlan &pp : producers_) {
        Func f = func_named(pipeline, pp.func);
        const std::string where = text(c, pp.compute);
        const bool root = where == "root" || (!pp.pure && c[size_t(pp.compute)] == 0);
        if (where == "root" && pp.pure) f.compute_root();
        if (where.rfind("at ", 0) == 0) {
            const Func consumer = func_named(pipeline, where.substr(3));
            f.compute_at(consumer, VarOrRVar(consumer.name() == output_ ? row_loop : consumer.contents()->args.front()));
        }
        if (const int64_t b = number(c, pp.row_block); b > 0 && root) {
            const std::string r = f.contents()->args.front();
            for (int s = 0; s <= f.num_updates(); ++s)
                stage_of(f, s).split(VarOrRVar(r), VarOrRVar(r + "_block"), VarOrRVar(r + "_in"), int(b));
        }
    }
    for (const ReductionPlan &rp : reductions_)
        if (const int64_t k = number(c, rp.split); k > 0) {
            const Func f = func_named(pipeline, rp.func);
            f.update(rp.stage - 1).split(VarOrRVar(rp.rvar), VarOrRVar(rp.rvar + "_o"), VarOrRVar(rp.rvar + "_i"), int(k));
        }
}

} // namespace tessera::internal::autotune
