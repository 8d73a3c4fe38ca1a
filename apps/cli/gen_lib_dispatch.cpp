// `tessera gen-lib`'s ranged parameters (gen_lib_dispatch.h).
#include "gen_lib_dispatch.h"

#include <algorithm>

#include <tessera/internal/json_text.h>
#include <tessera/codegen/shape_dispatch.h>

namespace tessera::cli {

using nlohmann::json;

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

} // namespace tessera::cli
