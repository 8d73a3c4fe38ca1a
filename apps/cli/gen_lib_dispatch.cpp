// `tessera gen-lib`'s shape dispatch plan (gen_lib_dispatch.h): parsing ranges and the shapes
// the tuning database tuned; the arguments, buckets and padding check are shape_dispatch.h's
// plan_dispatch_table and bucket_grid.
#include "gen_lib_dispatch.h"

#include <algorithm>
#include <sstream>

#include <tessera/internal/json_text.h>
#include <tessera/ir_operator.h>
#include <tessera/ops/registry.h>
#include <tessera/workload.h>

namespace tessera::cli {

using nlohmann::json;

namespace {

ops::OpInstance op_at(const std::string &op, std::map<std::string, std::string> params, const std::vector<DispatchParam> &dispatched,
                      const std::vector<int64_t> &values) {
    for (size_t p = 0; p < dispatched.size(); ++p) params[dispatched[p].name] = std::to_string(values[p]);
    return ops::build_op(op, params);
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
        for (const auto &entry : base.params) {
            const std::string &key = entry.first; // (clang 14: a lambda cannot capture a structured binding)
            if (std::none_of(params.begin(), params.end(), [&](const DispatchParam &p) { return p.name == key; }))
                same &= got.count(key) && got[key] == entry.second;
        }
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
        std::tie(r.lo, r.hi) = parse_dispatch_range(text, where);
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
        std::tie(r.lo, r.hi) = parse_dispatch_range(v["range"].get<std::string>(), where + ".range");
        if (!r.buckets.empty() && r.buckets.back() < r.hi)
            throw Error(where + ": the largest bucket " + std::to_string(r.buckets.back()) + " does not cover the range's end " + std::to_string(r.hi));
    }
    if (!v.contains("range") && !v.contains("buckets")) throw Error(where + ": give \"range\": \"lo..hi\" and/or \"buckets\": [...]");
    return r;
}

DispatchPlan plan_dispatch(const std::string &op, const std::map<std::string, std::string> &fixed,
                           const std::map<std::string, ParamRange> &ranges, const Target &target, const TuningDatabase *db) {
    DispatchPlan plan;
    std::vector<ShapeRange> shape_ranges;
    for (const auto &[name, r] : ranges) {
        plan.params.push_back({name, r.lo, r.hi});
        shape_ranges.push_back({name, r.lo, r.hi, r.buckets});
    }
    const PipelineAtValues at = [&](const std::vector<int64_t> &values) {
        const ops::OpInstance o = op_at(op, fixed, plan.params, values);
        return ShapedPipeline{o.pipeline, o.output_shapes, o.random_inputs(7), o.reduction_length};
    };
    const DispatchTable table = plan_dispatch_table(op, shape_ranges, at);
    plan.arguments = table.arguments;
    // Every combination of the parameters' buckets, then the tuned shapes.
    for (const std::vector<int64_t> &values : bucket_grid(shape_ranges)) plan.buckets.push_back({values, false});
    if (db)
        for (const std::vector<int64_t> &point : tuned_points(op, fixed, plan.params, target, *db)) {
            auto it = std::find_if(plan.buckets.begin(), plan.buckets.end(), [&](const PlannedBucket &b) { return b.values == point; });
            if (it != plan.buckets.end()) it->tuned_point = true;
            else {
                verify_dispatch_extents(op, table, point, at(point)); // the grid's are verified by the plan
                plan.buckets.push_back({point, true});
            }
        }
    return plan;
}

} // namespace tessera::cli
