#pragma once
// `tessera run`: what its host half (cmd_run.cpp) and chip half (cmd_run_chip.cpp) share.
#include <memory>
#include <string>
#include <vector>

#include <tessera/target.h>
#include <tessera/verify.h>

#include "cli_common.h"

namespace tessera::cli {

/// The options of `tessera run`.
struct RunOptions {
    std::shared_ptr<OpWords> words = std::make_shared<OpWords>();
    std::string target = "host", schedule, trace, assembly, verify, db;
    int repeats = 10, threads = 0;
    uint64_t seed = 1;
    bool json = false;
};

/// The check a run does: --verify, or the default for the op's size (verify.h).
VerifyMode verify_mode_for(const RunOptions &o, const ops::OpInstance &op);

/// Runs `op` (its schedule already set when `schedule_source` is a file or a tuned record; the
/// chip library schedule when it is "library") on the chip target through realize_library_kernel_on_chip — the same
/// cycles as bench_chip and the demo — checks it (verify.h; floats at the bf16 tolerance: the
/// MXM multiplies in bf16) and prints the report (with --json: the keys of `tessera sim --json`
/// plus op, params, schedule, verify, verified, max_abs_error). Returns 0 when verified.
int run_on_chip_target(const RunOptions &o, ops::OpInstance &op, const std::string &schedule_source, const Target &target);

/// The "verify" object of a JSON report.
std::string verification_json(const Verification &v);

} // namespace tessera::cli
