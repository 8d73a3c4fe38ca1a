#pragma once
// `tessera gen-lib`'s shape dispatch: which parameters of a spec's kernel are ranges (the
// buckets that serve them are chosen by build_dispatch_library, library_build.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

} // namespace tessera::cli
