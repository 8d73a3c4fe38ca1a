#pragma once
// `tessera gen-lib`'s shape dispatch: which parameters of a spec's kernel are ranges, which
// specialised kernels (buckets) serve them, and how the entry point's arguments follow them.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tessera/codegen/shape_dispatch.h>
#include <tessera/target.h>
#include <tessera/tuning_db.h>

namespace tessera::cli {

/// A spec parameter served as a range: "1..4096", or {"range": "1..4096", "buckets": [...]},
/// or {"buckets": [16, 64, 256]} (the range 1..largest bucket).
struct ParamRange {
    int64_t lo = 1, hi = 1;
    std::vector<int64_t> buckets; ///< the spec's own; empty: the powers of two in lo..hi, and hi
};

/// The range `v` gives, or nothing when it is a plain value (or a list of values). Throws
/// tessera::Error naming `where` for a malformed range.
std::optional<ParamRange> parse_param_range(const nlohmann::json &v, const std::string &where);

/// One bucket of a plan: its parameter values, and whether the tuning database has a record
/// for exactly this shape (then it is a bucket even where the rule has none).
struct PlannedBucket {
    std::vector<int64_t> values;
    bool tuned_point = false;
};

/// What the dispatch library of one kernel and target needs before its buckets are compiled.
struct DispatchPlan {
    std::vector<DispatchParam> params;        ///< in the spec's key order
    std::vector<DispatchArgument> arguments;  ///< the kernel's C arguments, in order
    std::vector<PlannedBucket> buckets;       ///< the rule's buckets and the tuned shapes
};

/// Plans the dispatch of `op` with `fixed` parameters over `ranges`: the buckets (each range's
/// own, else the powers of two in lo..hi and hi; every combination of them; plus every shape in
/// range that `db` holds a record for on `target`), and the arguments' dimensions that follow
/// each parameter (scale * value + offset, plan_dispatch_table's maps, verified at every
/// bucket). Checks with the reference evaluator that zero padding leaves the results
/// unchanged. Throws tessera::Error otherwise.
DispatchPlan plan_dispatch(const std::string &op, const std::map<std::string, std::string> &fixed,
                           const std::map<std::string, ParamRange> &ranges, const Target &target, const TuningDatabase *db);

} // namespace tessera::cli
