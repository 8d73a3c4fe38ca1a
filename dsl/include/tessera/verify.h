#pragma once
// Checking a kernel's outputs against the algorithm's meaning (the reference evaluator), at a
// cost that does not grow with the kernel: the whole output for small problems, and above a
// documented amount of work a sample of output points, each computed by the reference evaluator
// from only what that point needs (evaluate_reference_region). `tessera run`, the demo and
// the tuner's final check use it, so every report says which check ran.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/func.h"

namespace tessera {

/// How much of an output is checked.
enum class VerifyMode {
    Full,   ///< every point, against evaluate_reference
    Sample, ///< the corners and random points of each output, each against the reference
    None,   ///< nothing (timing runs)
};

/// "full", "sample", "none".
const char *to_string(VerifyMode mode);
/// The inverse; throws tessera::Error listing the three words.
VerifyMode parse_verify_mode(const std::string &word);

/// Work (output points × reduction length) above which the default check samples: the reference
/// evaluator runs some tens of millions of such steps a second, so a full check stays within
/// about two seconds below it (a 256³ matmul is 2^24; 512³ is sampled).
constexpr int64_t kFullVerifyWorkLimit = int64_t{1} << 26;

/// The default check: Full up to kFullVerifyWorkLimit, Sample above.
VerifyMode default_verify_mode(const std::vector<std::vector<int64_t>> &output_shapes, int64_t reduction_length);

/// Options of verify_outputs.
struct VerifyOptions {
    VerifyMode mode = VerifyMode::Full;
    /// Sample: random points per output, besides its corners.
    int sample_points = 256;
    /// Sample: the seed of the points drawn.
    uint64_t seed = 1;
    /// Float outputs are compared within Tolerance::for_type(tolerance_type or the output's
    /// type, reduction_length) — a chip that multiplies fp32 in bf16 passes BFloat(16);
    /// integer outputs always compare exactly.
    std::optional<Type> tolerance_type;
    int64_t reduction_length = 1;
};

/// What a check found.
struct Verification {
    VerifyMode mode = VerifyMode::None;
    bool passed = true;
    double max_abs_error = 0;
    int64_t points_checked = 0; ///< over all outputs
    int64_t points_total = 0;   ///< the outputs' sizes
    std::string mismatch;       ///< the first mismatch (output, coordinates, values), or empty
    /// "full (262144 points)", "sample (264 of 4194304 points)", "none".
    std::string description() const;
};

/// Checks `outputs` (one per output of `p`, of `output_shapes`) against the reference
/// evaluator on `bindings`. Throws tessera::Error for outputs of the wrong count or shape.
Verification verify_outputs(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes,
                            const Bindings &bindings, const std::vector<Buffer<>> &outputs, const VerifyOptions &options);

} // namespace tessera
