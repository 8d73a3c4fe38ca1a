#pragma once
// Operators of tessera::ops built from the CLI's `key=value` words, with random inputs — shared
// by every subcommand that runs an op (`tessera run OP ... --target host|tsp-mini`).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <tessera/tessera.h>

namespace tessera::cli {

/// One op instance: the pipeline, its output shapes, inputs bound to random data, and what
/// the reports need (useful arithmetic, the reduction length for the float tolerance).
struct OpInstance {
    std::string op;
    /// Every parameter, defaults filled in (as given or defaulted, as text).
    std::map<std::string, std::string> params;
    Type dtype;
    Pipeline pipeline;
    std::vector<std::vector<int64_t>> output_shapes;
    Bindings bindings;
    double flops = 0;
    int64_t reduction_length = 1;
    /// Integer parameters by name (M, N, K, ...), for schedules.
    std::map<std::string, int64_t> sizes;
};

/// Builds `op` from words like "M=1024" "dtype=fp32". Throws UsageError naming an unknown op,
/// an unknown key for the op, or a malformed value.
OpInstance build_op(const std::string &op, const std::vector<std::string> &key_values, uint64_t seed = 1);

/// The ops and their keys with defaults, for --help.
std::string op_usage();

/// Records the host library schedule (host_schedules.h) for the op on its pipeline.
void apply_host_library_schedule(const OpInstance &op);

} // namespace tessera::cli
