// `tessera gen-lib`'s shape dispatch plan (gen_lib_dispatch.h): the buckets of a range, the
// shapes the tuning database tuned, how the kernel's buffers follow the dispatched parameters,
// and a reference check that zero padding leaves the visible results unchanged.
#include "gen_lib_dispatch.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include <tessera/internal/json_text.h>
#include <tessera/ir_operator.h>
#include <tessera/lower.h>
#include <tessera/ops/registry.h>
#include <tessera/reference.h>
#include <tessera/workload.h>

namespace tessera::cli {

using nlohmann::json;

namespace {

int64_t positive_integer(const std::string &text, const std::string &where) {
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != text.size() || v < 1) throw Error(where + ": '" + text + "' is not a positive integer");
    return v;
}

/// "lo..hi" -> {lo, hi}.
std::pair<int64_t, int64_t> parse_range_text(const std::string &text, const std::string &where) {
    const size_t dots = text.find("..");
    if (dots == std::string::npos) throw Error(where + ": '" + text + "' is not a range lo..hi (e.g. \"1..4096\")");
    const int64_t lo = positive_integer(text.substr(0, dots), where), hi = positive_integer(text.substr(dots + 2), where);
    if (lo > hi) throw Error(where + ": the range " + text + " is empty (lo > hi)");
    return {lo, hi};
}

/// The default buckets of lo..hi: every power of two in it, and hi.
std::vector<int64_t> power_of_two_buckets(int64_t lo, int64_t hi) {
    std::vector<int64_t> b;
    for (int64_t p = 1; p <= hi && p > 0; p *= 2)
        if (p >= lo) b.push_back(p);
    if (b.empty() || b.back() != hi) b.push_back(hi);
    return b;
}

/// Argument i's extents as constants; throws when one is not.
std::vector<int64_t> constant_shape(const LoweredBuffer &b) {
    std::vector<int64_t> s;
    for (const Expr &e : b.shape) {
        const std::optional<int64_t> v = as_const_int(e);
        if (!v) throw Error("buffer " + b.name + " has an extent that is not a constant");
        s.push_back(*v);
    }
    return s;
}

/// The kernel's buffers (inputs then outputs, the C argument order) at these parameters.
std::vector<std::pair<const LoweredBuffer *, bool>> buffers_of(const LoweredModule &m) {
    std::vector<std::pair<const LoweredBuffer *, bool>> out;
    for (const LoweredBuffer &b : m.inputs) out.emplace_back(&b, false);
    for (const LoweredBuffer &b : m.outputs) out.emplace_back(&b, true);
    return out;
}

ops::OpInstance op_at(const std::string &op, std::map<std::string, std::string> params, const std::vector<DispatchParam> &dispatched,
                      const std::vector<int64_t> &values) {
    for (size_t p = 0; p < dispatched.size(); ++p) params[dispatched[p].name] = std::to_string(values[p]);
    return ops::build_op(op, params);
}

/// `small` copied into the corner of a zero buffer of extents `big` (or the corner of `big`
/// copied out into `small`'s extents when crop).
Buffer<> move_corner(const Buffer<> &from, const std::vector<int64_t> &to_shape, bool crop) {
    Buffer<> to(from.type(), to_shape);
    const size_t bytes = size_t(std::max(8, from.type().bits())) / 8, dims = to_shape.size();
    const std::vector<int64_t> &corner = crop ? to_shape : from.shape();
    int64_t elements = 1;
    for (int64_t e : to_shape) elements *= e;
    std::memset(to.data(), 0, size_t(elements) * bytes);
    std::vector<int64_t> index(dims, 0);
    for (int64_t e : corner)
        if (e == 0) return to;
    for (;;) {
        int64_t f = 0, t = 0;
        for (size_t d = 0; d < dims; ++d) {
            f = f * from.shape()[d] + index[d];
            t = t * to_shape[d] + index[d];
        }
        std::memcpy(static_cast<char *>(to.data()) + t * int64_t(bytes), static_cast<const char *>(from.data()) + f * int64_t(bytes), bytes);
        size_t d = dims;
        while (d > 0) {
            if (++index[d - 1] < corner[d - 1]) break;
            index[--d] = 0;
        }
        if (d == 0) return to;
    }
}

/// Zero padding must not change what the caller sees: the reference at a small shape against
/// the reference at a larger one with zero-padded inputs, cropped.
void check_padding(const std::string &op, const std::map<std::string, std::string> &fixed, const DispatchPlan &plan) {
    std::vector<int64_t> small, big;
    bool pads = false;
    for (const DispatchParam &p : plan.params) {
        small.push_back(p.lo);
        big.push_back(std::min(p.hi, p.lo + 3));
        pads |= big.back() > small.back();
    }
    if (!pads) return;
    const ops::OpInstance a = op_at(op, fixed, plan.params, small), b = op_at(op, fixed, plan.params, big);
    const Bindings inputs = a.random_inputs(7);
    Bindings padded;
    for (size_t i = 0; i < a.inputs.size(); ++i) {
        const Buffer<> *buffer = nullptr;
        for (const Binding &binding : inputs)
            if (binding.name == a.inputs[i].input.name()) buffer = &binding.buffer;
        if (!buffer) throw Error("gen-lib: no input named " + a.inputs[i].input.name());
        padded.emplace_back(b.inputs[i].input, move_corner(*buffer, b.inputs[i].shape, false));
    }
    const std::vector<Buffer<>> expected = evaluate_reference(a.pipeline, a.output_shapes, inputs);
    const std::vector<Buffer<>> got = evaluate_reference(b.pipeline, b.output_shapes, padded);
    for (size_t o = 0; o < expected.size(); ++o) {
        const Comparison c = compare(move_corner(got[o], a.output_shapes[o], true), expected[o],
                                     Tolerance::for_type(expected[o].type(), a.reduction_length));
        if (!c.equal) {
            std::string names;
            for (const DispatchParam &p : plan.params) names += (names.empty() ? "" : ", ") + p.name;
            throw Error(op + ": padding " + names + " with zeros changes the results (" + c.message +
                        "), so the library cannot serve a range of it; list its values instead");
        }
    }
}

/// The shapes in range that the database has a record for: records of this target whose
/// operator words are `op` with the fixed parameters and in-range values of the dispatched ones,
/// confirmed by their workload key.
std::vector<std::vector<int64_t>> tuned_points(const std::string &op, const std::map<std::string, std::string> &fixed,
                                               const std::vector<DispatchParam> &params, const Target &target, const TuningDatabase &db) {
    const TargetIdentity identity = TargetIdentity::of(target);
    const ops::OpInstance base = op_at(op, fixed, params, [&] {
        std::vector<int64_t> v;
        for (const DispatchParam &p : params) v.push_back(p.lo);
        return v;
    }());
    std::vector<std::vector<int64_t>> points;
    for (const TuningRecord &r : db.best_per_group({.target_name = identity.name, .target_hash = identity.hash})) {
        std::istringstream words(r.op_words.empty() ? r.workload_description : r.op_words);
        std::string name, word;
        words >> name;
        if (name != op) continue;
        std::map<std::string, std::string> got;
        while (words >> word) {
            const size_t eq = word.find('=');
            if (eq != std::string::npos) got[word.substr(0, eq)] = word.substr(eq + 1);
        }
        bool same = true;
        for (const auto &[key, value] : base.params)
            if (std::none_of(params.begin(), params.end(), [&](const DispatchParam &p) { return p.name == key; }))
                same &= got.count(key) && got[key] == value;
        std::vector<int64_t> ordered;
        for (const DispatchParam &p : params) {
            int64_t v = 0;
            try {
                v = got.count(p.name) ? std::stoll(got[p.name]) : 0;
            } catch (const std::exception &) {
                v = 0;
            }
            same &= v >= p.lo && v <= p.hi;
            ordered.push_back(v);
        }
        if (!same) continue;
        const ops::OpInstance at = op_at(op, fixed, params, ordered);
        if (Workload::of(at.pipeline, at.output_shapes, at.description()).key() == r.workload_key) points.push_back(ordered);
    }
    return points;
}

} // namespace

std::optional<ParamRange> parse_param_range(const json &v, const std::string &where) {
    ParamRange r;
    if (v.is_string()) {
        const std::string text = v.get<std::string>();
        if (text.find("..") == std::string::npos) return std::nullopt;
        std::tie(r.lo, r.hi) = parse_range_text(text, where);
        return r;
    }
    if (!v.is_object()) return std::nullopt;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it.key() != "range" && it.key() != "buckets")
            throw Error(where + ": unknown field '" + it.key() + "'; a dispatched parameter has \"range\" and/or \"buckets\"");
    if (v.contains("buckets")) {
        if (!v["buckets"].is_array() || v["buckets"].empty()) throw Error(where + ".buckets must be a non-empty list of positive integers");
        for (const json &b : v["buckets"]) {
            if (!b.is_number_integer() || b.get<int64_t>() < 1)
                throw Error(where + ".buckets: " + internal::json_excerpt(b) + " is not a positive integer");
            r.buckets.push_back(b.get<int64_t>());
        }
        std::sort(r.buckets.begin(), r.buckets.end());
        r.buckets.erase(std::unique(r.buckets.begin(), r.buckets.end()), r.buckets.end());
        r.hi = r.buckets.back();
    }
    if (v.contains("range")) {
        if (!v["range"].is_string()) throw Error(where + ".range must be a string lo..hi");
        std::tie(r.lo, r.hi) = parse_range_text(v["range"].get<std::string>(), where + ".range");
        if (!r.buckets.empty() && r.buckets.back() < r.hi)
            throw Error(where + ": the largest bucket " + std::to_string(r.buckets.back()) + " does not cover the range's end " + std::to_string(r.hi));
    }
    if (!v.contains("range") && !v.contains("buckets")) throw Error(where + ": give \"range\": \"lo..hi\" and/or \"buckets\": [...]");
    return r;
}

DispatchPlan plan_dispatch(const std::string &op, const std::map<std::string, std::string> &fixed,
                           const std::map<std::string, ParamRange> &ranges, const Target &target, const TuningDatabase *db) {
    DispatchPlan plan;
    for (const auto &[name, r] : ranges) plan.params.push_back({name, r.lo, r.hi});
    // Which extents follow which parameter: the kernel lowered at two sets of distinct values.
    auto probe = [&](int64_t first) {
        std::vector<int64_t> v;
        for (size_t p = 0; p < plan.params.size(); ++p) v.push_back(first + 2 * int64_t(p));
        return v;
    };
    const std::vector<int64_t> v1 = probe(1009), v2 = probe(1031);
    const ops::OpInstance o1 = op_at(op, fixed, plan.params, v1), o2 = op_at(op, fixed, plan.params, v2);
    const LoweredModule m1 = lower(o1.pipeline, Target::host(), o1.output_shapes), m2 = lower(o2.pipeline, Target::host(), o2.output_shapes);
    const auto b1 = buffers_of(m1), b2 = buffers_of(m2);
    if (!m1.params.empty()) throw Error(op + ": a kernel with scalar parameters cannot be dispatched over shapes");
    for (size_t i = 0; i < b1.size(); ++i) {
        DispatchArgument a;
        a.name = b1[i].first->name;
        a.is_output = b1[i].second;
        a.type = b1[i].first->type;
        const std::vector<int64_t> s1 = constant_shape(*b1[i].first), s2 = constant_shape(*b2[i].first);
        for (size_t d = 0; d < s1.size(); ++d) {
            int param = -1;
            for (size_t p = 0; p < plan.params.size(); ++p)
                if (s1[d] == v1[p] && s2[d] == v2[p]) param = int(p);
            if (param < 0 && s1[d] != s2[d])
                throw Error(op + ": dimension " + std::to_string(d) + " of " + a.name +
                            " changes with the dispatched parameters but is none of them; only a parameter that is a buffer extent "
                            "can be a range");
            a.param.push_back(param);
            a.extent.push_back(param < 0 ? s1[d] : 0);
        }
        plan.arguments.push_back(a);
    }
    for (size_t p = 0; p < plan.params.size(); ++p) {
        bool used = false;
        for (const DispatchArgument &a : plan.arguments) used |= std::count(a.param.begin(), a.param.end(), int(p)) > 0;
        if (!used) throw Error(op + ": parameter " + plan.params[p].name + " is no buffer's extent, so it cannot be a range");
    }
    check_padding(op, fixed, plan);

    // Every combination of the parameters' buckets, then the tuned shapes.
    std::vector<std::vector<int64_t>> axes;
    for (const auto &[name, r] : ranges) axes.push_back(r.buckets.empty() ? power_of_two_buckets(r.lo, r.hi) : r.buckets);
    std::vector<size_t> pick(axes.size(), 0);
    for (;;) {
        PlannedBucket b;
        for (size_t p = 0; p < axes.size(); ++p) b.values.push_back(axes[p][pick[p]]);
        plan.buckets.push_back(b);
        size_t p = 0;
        for (; p < axes.size(); ++p) {
            if (++pick[p] < axes[p].size()) break;
            pick[p] = 0;
        }
        if (p == axes.size()) break;
    }
    if (db)
        for (const std::vector<int64_t> &point : tuned_points(op, fixed, plan.params, target, *db)) {
            auto it = std::find_if(plan.buckets.begin(), plan.buckets.end(), [&](const PlannedBucket &b) { return b.values == point; });
            if (it != plan.buckets.end()) it->tuned_point = true;
            else plan.buckets.push_back({point, true});
        }
    return plan;
}

} // namespace tessera::cli
