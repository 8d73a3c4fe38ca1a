// The host search space (host_search_space.h).
#include "host_search_space.h"

#include <limits>

#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"

namespace tessera::internal::autotune {

namespace {

bool is_output(const Pipeline &p, const Func &f) {
    for (const Func &o : p.outputs())
        if (o.name() == f.name()) return true;
    return false;
}

/// Whether update `u` of `f` writes f(pure vars...) at its own point: then its pure loops may
/// be parallel, split and reordered around the reduction (a matmul, a conv; not a histogram).
bool writes_its_own_point(const FunctionContents &f, const Definition &u) {
    if (u.args.size() != f.args.size()) return false;
    for (size_t d = 0; d < u.args.size(); ++d) {
        const auto *v = u.args[d].as<Variable>();
        if (!v || v->name != f.args[d]) return false;
    }
    return true;
}

} // namespace

int HostSearchSpace::add_knob(std::string name, std::vector<std::string> values) {
    knobs_.push_back({std::move(name), std::move(values)});
    return static_cast<int>(knobs_.size()) - 1;
}

HostSearchSpace::HostSearchSpace(const Pipeline &pipeline, int lanes) : lanes_(lanes) {
    for (const Func &f : pipeline.functions()) {
        const FunctionContents &c = *f.contents();
        const bool output = is_output(pipeline, f);
        FuncPlan fp{f.name(), -1, true};
        // A pure producer may be inlined into its consumers or computed once at the root; one
        // with updates (a reduction) has storage of its own.
        if (!output && f.num_updates() == 0) fp.compute = add_knob(f.name() + ".compute", {"inline", "root"});
        funcs_.push_back(fp);
        for (int s = 0; s <= f.num_updates(); ++s) {
            StagePlan sp;
            sp.func = f.name();
            sp.stage = s;
            sp.pure = c.args;
            const std::string prefix = f.name() + ".s" + std::to_string(s) + ".";
            if (s > 0) {
                const Definition &u = c.updates.at(size_t(s - 1));
                if (!writes_its_own_point(c, u)) {
                    stages_.push_back(sp); // scans and scatters keep their serial order
                    continue;
                }
                if (u.rdom)
                    for (const ReductionVariable &r : u.rdom->vars) sp.rvars.push_back(r.name);
                if (u.rdom && !u.rdom->vars.empty())
                    sp.first_rvar_extent = as_const_int(u.rdom->vars[0].extent).value_or(0);
            }
            if (sp.pure.empty()) {
                stages_.push_back(sp);
                continue;
            }
            if (sp.pure.size() >= 2) sp.parallel = add_knob(prefix + "parallel", {"off", "on"});
            sp.vector = add_knob(prefix + "vector", {"off", "1x", "2x"});
            if (!sp.rvars.empty() && sp.pure.size() >= 2) {
                // The register tile: rows of accumulators, each a vector, the reduction inside.
                sp.rows = add_knob(prefix + "rows", {"1", "2", "4", "8"});
                if (sp.first_rvar_extent > 64) {
                    std::vector<std::string> blocks = {"off"};
                    for (int64_t b : {64, 256})
                        if (b < sp.first_rvar_extent) blocks.push_back(std::to_string(b));
                    sp.kblock = add_knob(prefix + "kblock", blocks);
                }
            }
            stages_.push_back(sp);
        }
    }
}

int64_t HostSearchSpace::size() const {
    const int64_t cap = int64_t{1} << 62;
    int64_t n = 1;
    for (const Knob &k : knobs_) {
        if (n > cap / int64_t(k.values.size())) return cap;
        n *= int64_t(k.values.size());
    }
    return n;
}

Candidate HostSearchSpace::nth(int64_t n) const {
    Candidate c(knobs_.size(), 0);
    for (size_t k = knobs_.size(); k-- > 0;) {
        const int64_t radix = int64_t(knobs_[k].values.size());
        c[k] = int(n % radix);
        n /= radix;
    }
    return c;
}

std::string HostSearchSpace::describe(const Candidate &c) const {
    std::string s;
    for (size_t k = 0; k < knobs_.size(); ++k) s += (s.empty() ? "" : " ") + knobs_[k].name + "=" + knobs_[k].values[size_t(c[k])];
    return s.empty() ? "default" : s;
}

void HostSearchSpace::apply(const Candidate &c, const Pipeline &pipeline) const {
    pipeline.set_schedule(Schedule{});
    std::map<std::string, bool> root;
    for (const FuncPlan &fp : funcs_) root[fp.name] = fp.compute < 0 ? fp.root : value(c, fp.compute) == 1;
    for (const Func &f0 : pipeline.functions()) {
        Func f = f0;
        if (is_output(pipeline, f)) continue;
        if (root.at(f.name())) f.compute_root();
        else f.compute_inline();
    }
    for (const StagePlan &sp : stages_) {
        if (!root.at(sp.func) || sp.pure.empty()) continue;
        Func f;
        for (const Func &g : pipeline.functions())
            if (g.name() == sp.func) f = g;
        Stage st = sp.stage == 0 ? Stage(f.contents(), 0) : f.update(sp.stage - 1);
        const int vector = value(c, sp.vector), rows = sp.rows < 0 ? 1 : std::stoi(knobs_[size_t(sp.rows)].values[size_t(value(c, sp.rows))]);
        const bool parallel = value(c, sp.parallel) == 1;
        const int width = vector * lanes_;
        const std::string x = sp.pure.back(), outer = sp.pure.front();
        if (sp.rvars.empty()) {
            if (width > 0) st.vectorize(VarOrRVar(x), width);
            if (parallel) st.parallel(VarOrRVar(outer));
            continue;
        }
        // A reduction: [outer pure loops] [reduction block] y_o x_o [reduction] y_i x_i, with
        // y_i unrolled and x_i one vector, so rows x width accumulators stay in registers.
        // A 1-D output (a row sum) has no y: [reduction block] x_o [reduction] x_i.
        const std::string y = sp.pure.size() >= 2 ? sp.pure[sp.pure.size() - 2] : "";
        std::vector<VarOrRVar> order;
        for (size_t d = 0; d + 2 < sp.pure.size(); ++d) order.push_back(VarOrRVar(sp.pure[d]));
        std::string y_outer = y, y_inner, x_outer, x_inner = x;
        if (rows > 1) {
            y_outer = y + "_o";
            y_inner = y + "_i";
            st.split(VarOrRVar(y), VarOrRVar(y_outer), VarOrRVar(y_inner), rows);
        }
        if (width > 0) {
            x_outer = x + "_o";
            x_inner = x + "_i";
            st.split(VarOrRVar(x), VarOrRVar(x_outer), VarOrRVar(x_inner), width);
        }
        std::vector<std::string> rvars = sp.rvars; // innermost first
        const int kblock = sp.kblock < 0 || value(c, sp.kblock) == 0 ? 0 : std::stoi(knobs_[size_t(sp.kblock)].values[size_t(value(c, sp.kblock))]);
        if (kblock > 0) {
            const std::string r = rvars.front();
            st.split(VarOrRVar(r), VarOrRVar(r + "_o"), VarOrRVar(r + "_i"), kblock);
            order.push_back(VarOrRVar(r + "_o"));
            rvars.front() = r + "_i";
        }
        if (!y_outer.empty()) order.push_back(VarOrRVar(y_outer));
        if (!x_outer.empty()) order.push_back(VarOrRVar(x_outer));
        for (size_t r = rvars.size(); r-- > 0;) order.push_back(VarOrRVar(rvars[r]));
        if (!y_inner.empty()) order.push_back(VarOrRVar(y_inner));
        order.push_back(VarOrRVar(x_inner));
        st.reorder(order);
        if (width > 0) st.vectorize(VarOrRVar(x_inner));
        if (!y_inner.empty()) st.unroll(VarOrRVar(y_inner));
        if (parallel) st.parallel(VarOrRVar(sp.pure.size() > 2 ? outer : y_outer)); // (a knob only with 2+ dims)
    }
}

} // namespace tessera::internal::autotune
