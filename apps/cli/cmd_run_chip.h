#pragma once
// `tessera run OP ... --target tsp-mini|npu-edge|chip.json`: the chip half of `tessera run`.
#include <string>
#include <vector>

#include <tessera/target.h>

#include "cli_args.h"
#include "op_builder.h"

namespace tessera::cli {

/// Applies the chip library schedule to `op` unless `schedule_source` names a schedule file
/// already set on it, compiles it for the chip, runs it on chipsim, verifies it against the reference evaluator and prints the
/// report (with --json: the keys of `tessera sim --json` plus op, params, schedule, verified,
/// max_abs_error; --trace FILE writes the Chrome trace; --asm FILE the program). Returns 0 when
/// verified, 1 otherwise.
int run_on_chip_target(const ArgParser &parser, OpInstance &op, const std::string &schedule_source, const Target &target);

} // namespace tessera::cli
