// `tessera run ... --target <chip>` (cmd_run_chip.h).
#include "cmd_run_chip.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>
#include <tessera/codegen/chip_backend.h>
#include <tessera/codegen/chip_schedules.h>

namespace tessera::cli {

int run_on_chip_target(const RunOptions &o, ops::OpInstance &op, const std::string &schedule_source, const Target &target) {
    const VerifyMode mode = verify_mode_for(o, op);
    ChipRunOptions options;
    options.trace = !o.trace.empty();
    options.functional = mode != VerifyMode::None; // timing only: the same cycles, no values
    const Bindings bindings = options.functional ? op.random_inputs(o.seed) : Bindings{};
    ChipResult r = schedule_source == "library"
                       ? realize_library_kernel_on_chip(op.pipeline, op.output_shapes, bindings, target, options)
                       : realize_on_chip(op.pipeline, op.output_shapes, bindings, target, options);
    if (!o.trace.empty() && !(std::ofstream(o.trace) << r.trace_json)) throw Error("cannot write trace '" + o.trace + "'");
    if (!o.assembly.empty() && !(std::ofstream(o.assembly) << r.program.assembly()))
        throw Error("cannot write the program to '" + o.assembly + "'");

    VerifyOptions vo;
    vo.mode = mode;
    vo.seed = o.seed;
    vo.reduction_length = op.reduction_length;
    // The MXM multiplies fp32 operands in bf16: floats are held to the bf16 tolerance.
    vo.tolerance_type = BFloat(16);
    const Verification v = verify_outputs(op.pipeline, op.output_shapes, bindings, r.outputs, vo);

    if (o.json) {
        nlohmann::json j = nlohmann::json::parse(r.report.to_json());
        j["op"] = op.op;
        j["params"] = op.params;
        j["schedule"] = schedule_source;
        j["verify"] = nlohmann::json::parse(verification_json(v));
        j["verified"] = v.passed;
        j["max_abs_error"] = v.max_abs_error;
        if (!o.trace.empty()) j["trace"] = o.trace;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s on %s, %s schedule\n", op.description().c_str(), target.name().c_str(), schedule_source.c_str());
        std::printf("  verified: %s, %s against the reference evaluator (max abs error %.3g)\n",
                    v.mode == VerifyMode::None ? "not checked" : v.passed ? "yes" : "NO", v.description().c_str(), v.max_abs_error);
        if (!v.passed) std::printf("  %s\n", v.mismatch.c_str());
        std::printf("  kernel:   %s", r.program.summary.c_str());
        std::printf("%s", r.report.to_text().c_str());
        if (!o.trace.empty()) std::printf("trace: %s (open in Perfetto or chrome://tracing)\n", o.trace.c_str());
    }
    return v.passed ? 0 : 1;
}

} // namespace tessera::cli
