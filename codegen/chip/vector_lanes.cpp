// The chip's default vector rule (vector_lanes.h), worked out on the lowered loop nest so that
// inlined Funcs, compute_at levels and the user's own splits are seen as the compiler sees them.
#include "vector_lanes.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "loop_nest_ir.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/lower.h"

namespace tessera::internal::chip {

namespace {

/// Lane dimension per computed Func (-1: not chosen yet).
using LaneChoice = std::map<std::string, int>;

/// The loop variable of `p`'s stage that runs across the lanes: its vectorized loop, else the
/// one variable of its argument `lane` (nullopt when that argument is not a plain loop).
std::optional<std::string> lane_variable(const ProvideSite &p, int lane) {
    if (auto v = p.vectorized_loop()) return v;
    if (lane < 0 || size_t(lane) >= p.args.size()) return std::nullopt;
    if (const Variable *v = p.args[size_t(lane)].as<Variable>()) return v->name;
    return std::nullopt;
}

/// Whether `e` contains the read `read` (that very node).
bool holds(const Expr &e, const Call *read) {
    const std::vector<Expr> calls = func_calls(e);
    return std::any_of(calls.begin(), calls.end(), [&](const Expr &c) { return c.as<Call>() == read; });
}

/// When `site` is a matrix stage (f = f + a * b, each read perhaps cast) whose read `read` does
/// not vary along the lane loop `lane_var` but its partner does, `read` is the MXM's
/// activations: its lanes must run along the reduction loop both reads share (k of a(i, k) in
/// f(i, j) += a(i, k) * b(k, j)). That dimension, if there is exactly one.
std::optional<int> activation_lane(const ProvideSite &site, const Call *read, const std::string &lane_var) {
    const Add *add = site.value.as<Add>();
    if (!add) return std::nullopt;
    auto strip = [](Expr e) {
        while (const Cast *c = e.as<Cast>()) e = c->value;
        return e;
    };
    for (const Expr &term : {add->a, add->b}) {
        const Mul *mul = strip(term).as<Mul>();
        if (!mul) continue;
        const Expr x = strip(mul->a), y = strip(mul->b);
        const Expr partner = holds(x, read) ? y : holds(y, read) ? x : Expr();
        if (!partner.defined() || !mentions(partner, lane_var)) continue;
        std::optional<int> dim;
        for (const SiteLoop &loop : site.loops) {
            const bool in_args = std::any_of(site.args.begin(), site.args.end(), [&](const Expr &a) { return mentions(a, loop.name); });
            if (in_args || !mentions(partner, loop.name)) continue;
            for (size_t d = 0; d < read->args.size(); ++d)
                if (mentions(read->args[d], loop.name)) {
                    if (dim && *dim != int(d)) return std::nullopt;
                    dim = int(d);
                }
        }
        return dim;
    }
    return std::nullopt;
}

/// Fills `lanes` from the consumers down (sites in reverse topological order); "" on success,
/// else why a read cannot agree.
std::string propagate(const std::vector<ProvideSite> &sites, const std::vector<std::string> &consumers_first, LaneChoice &lanes) {
    for (const std::string &f : consumers_first) {
        const int lane = lanes[f];
        if (lane < 0) continue;
        for (const ProvideSite &site : sites) {
            if (site.func != f) continue;
            const std::optional<std::string> v = lane_variable(site, lane);
            if (!v) {
                if (!as_const_int(site.args[size_t(lane)]))
                    return stage_display_name(f, site.stage) + " has no loop along " + f + "'s dimension " + std::to_string(lane) + " (" +
                           to_string(site.args[size_t(lane)]) + ")";
                continue; // a dimension of one point: this stage runs one lane, any read agrees
            }
            for (const Expr &call : func_calls(site.value)) {
                const Call *c = call.as<Call>();
                if (!lanes.count(c->name)) continue; // an Input: every read is its own DMA
                std::vector<int> with;
                for (size_t i = 0; i < c->args.size(); ++i)
                    if (mentions(c->args[i], *v)) with.push_back(int(i));
                const std::string read = "the read " + to_string(call) + " in " + stage_display_name(f, site.stage);
                if (with.empty())
                    if (auto k = activation_lane(site, c, *v)) with.push_back(*k);
                // A read of one point (a mean over every dimension): its lane is spread over
                // the reader's lanes, wherever its producer keeps it.
                if (with.empty() && std::all_of(c->args.begin(), c->args.end(), [](const Expr &a) { return as_const_int(a).has_value(); }))
                    continue;
                if (with.size() != 1)
                    return read + (with.empty() ? " does not vary along " + f + "'s lanes (" + *v + ")"
                                                : " uses " + f + "'s lane loop " + *v + " in several dimensions");
                const int want = with[0];
                if (lanes[c->name] >= 0 && lanes[c->name] != want)
                    return read + " needs " + c->name + "'s dimension " + std::to_string(want) + " in the lanes, but another read needs " +
                           std::to_string(lanes[c->name]);
                lanes[c->name] = want;
            }
        }
    }
    return "";
}

} // namespace

VectorLanes choose_vector_lanes(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes) {
    const LoweredModule m = lower_unflattened(p, target, output_shapes);
    const std::vector<ProvideSite> sites = provide_sites(m.body);
    LaneChoice lanes;
    for (const ProvideSite &s : sites) lanes.emplace(s.func, -1);
    // What the schedule fixes: a vectorized loop puts its dimension in the lanes.
    for (const ProvideSite &s : sites) {
        std::vector<std::string> vectorized;
        for (const SiteLoop &l : s.loops)
            if (l.kind == ForKind::Vectorized && stage_of_loop(s.func, l.name) == s.stage) vectorized.push_back(l.name);
        if (vectorized.size() > 1)
            throw Error("chip backend: " + stage_display_name(s.func, s.stage) + " vectorizes two loops (" + vectorized[0] + ", " +
                        vectorized[1] + "); the VXM has one row of lanes");
    }
    for (const ProvideSite &s : sites)
        if (auto v = s.vectorized_loop()) {
            int dim = -1;
            for (size_t i = 0; i < s.args.size(); ++i)
                if (mentions(s.args[i], *v)) dim = int(i);
            if (dim >= 0) lanes[s.func] = dim;
        }
    std::vector<std::string> consumers_first;
    for (const Func &f : p.functions())
        if (lanes.count(f.name())) consumers_first.insert(consumers_first.begin(), f.name());
    std::string why = propagate(sites, consumers_first, lanes);
    if (!why.empty()) throw Error("chip backend: " + why + "; vectorize loops that index one dimension of each Func");
    for (size_t o = 0; o < p.outputs().size(); ++o) {
        const std::string &name = p.outputs()[o].name();
        if (!lanes.count(name) || lanes[name] >= 0) continue;
        std::string first_problem;
        bool placed = false;
        // Innermost first, but a dimension of one point last: its lanes would stay empty.
        std::vector<int> order;
        for (int d = int(output_shapes[o].size()) - 1; d >= 0; --d) order.push_back(d);
        std::stable_partition(order.begin(), order.end(), [&](int d) { return output_shapes[o][size_t(d)] != 1; });
        for (size_t k = 0; k < order.size() && !placed; ++k) {
            const int d = order[k];
            LaneChoice attempt = lanes;
            attempt[name] = d;
            std::string problem = propagate(sites, consumers_first, attempt);
            if (problem.empty()) {
                lanes = attempt;
                placed = true;
            } else if (first_problem.empty()) {
                first_problem = problem;
            }
        }
        if (!placed)
            throw Error("chip backend: no dimension of " + name + " can run across the VXM's lanes in every stage: " + first_problem +
                        " (with " + name + "'s innermost dimension in the lanes)");
    }
    // A Func no read constrains (its readers run one lane): a dimension every read indexes by a
    // constant, so the reads find it in one lane; else its innermost dimension that some stage
    // loops along.
    for (auto &[f, lane] : lanes) {
        if (lane >= 0) continue;
        std::vector<Expr> reads;
        for (const ProvideSite &site : sites)
            for (const Expr &c : func_calls(site.value))
                if (c.as<Call>()->name == f) reads.push_back(c);
        for (const ProvideSite &site : sites) {
            if (site.func != f) continue;
            for (int d = int(site.args.size()) - 1; d >= 0 && lane < 0; --d)
                if (!reads.empty() && std::all_of(reads.begin(), reads.end(), [&](const Expr &c) { return as_const_int(c.as<Call>()->args[size_t(d)]).has_value(); }))
                    lane = d;
            for (size_t d = 0; d < site.args.size() && lane < 0; ++d)
                if (!as_const_int(site.args[d])) lane = std::max(lane, int(d));
            break;
        }
        for (const ProvideSite &site : sites)
            if (site.func == f && lane < 0)
                for (size_t d = 0; d < site.args.size(); ++d)
                    if (!as_const_int(site.args[d])) lane = std::max(lane, int(d));
        lane = std::max(lane, 0);
    }
    // Each stage of a computed Func that vectorizes nothing vectorizes its lane loop whole.
    Schedule s = p.schedule();
    std::set<std::pair<std::string, int>> done;
    for (const ProvideSite &site : sites) {
        if (site.vectorized_loop() || !done.insert({site.func, site.stage}).second) continue;
        const int lane = lanes[site.func];
        const std::string stage = stage_display_name(site.func, site.stage);
        if (lane < 0) throw Error("chip backend: " + stage + " is a scalar; chip stages run across the VXM's lanes (give it a dimension)");
        if (as_const_int(site.args[size_t(lane)])) continue; // one point: one lane, no loop to vectorize
        const Variable *v = site.args[size_t(lane)].as<Variable>();
        const std::string prefix = loop_prefix(site.func, site.stage);
        if (!v || v->name.rfind(prefix, 0) != 0)
            throw Error("chip backend: " + stage + " writes " + site.func + "'s lane dimension " + std::to_string(lane) + " at " +
                        to_string(site.args[size_t(lane)]) + ", not along one loop; vectorize the loop that runs along it");
        Directive d;
        d.kind = DirectiveKind::Vectorize;
        d.vars = {v->name.substr(prefix.size())};
        s.add(site.func, site.stage, d);
    }
    return {s, lanes};
}

} // namespace tessera::internal::chip
