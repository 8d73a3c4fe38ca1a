// `tessera run ... --target <chip>` (cmd_run_chip.h).
#include "cmd_run_chip.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>
#include <tessera/codegen/chip_backend.h>
#include <tessera/codegen/chip_schedules.h>

#include "op_builder.h"

namespace tessera::cli {

int run_on_chip_target(const ArgParser &parser, OpInstance &op, const std::string &schedule_source, const Target &target) {
    if (schedule_source == "library") apply_chip_library_schedule(op.pipeline, target, op.output_shapes);
    ChipRunOptions options;
    options.trace = parser.has("trace");
    ChipResult r = realize_on_chip(op.pipeline, op.output_shapes, op.bindings, target, options);
    if (parser.has("trace")) {
        std::ofstream(parser.value("trace")) << r.trace_json;
    }
    if (parser.has("asm")) {
        std::ofstream(parser.value("asm")) << r.program.assembly;
    }

    std::vector<Buffer<>> expected = op.pipeline.realize(op.output_shapes, op.bindings, Target::reference());
    bool verified = true;
    double max_abs_error = 0;
    std::string mismatch;
    for (size_t i = 0; i < expected.size(); ++i) {
        // The MXM multiplies fp32 operands in bf16: floats are held to the bf16 tolerance.
        Type tol_type = expected[i].type().is_float() ? BFloat(16) : expected[i].type();
        Comparison c = compare(r.outputs[i], expected[i], Tolerance::for_type(tol_type, op.reduction_length));
        verified = verified && c.equal;
        max_abs_error = std::max(max_abs_error, c.max_abs_error);
        if (!c.equal && mismatch.empty()) mismatch = c.message;
    }

    if (parser.json()) {
        nlohmann::json j = nlohmann::json::parse(r.report.to_json());
        j["op"] = op.op;
        j["params"] = op.params;
        j["schedule"] = schedule_source;
        j["verified"] = verified;
        j["max_abs_error"] = max_abs_error;
        if (parser.has("trace")) j["trace"] = parser.value("trace");
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s", op.op.c_str());
        for (const auto &[k, v] : op.params) std::printf(" %s=%s", k.c_str(), v.c_str());
        std::printf(" on %s, %s schedule\n", target.name().c_str(), schedule_source.c_str());
        std::printf("  verified: %s (max abs error %.3g vs the reference evaluator)\n", verified ? "yes" : "NO", max_abs_error);
        if (!verified) std::printf("  %s\n", mismatch.c_str());
        std::printf("  kernel:   %s", r.program.summary.c_str());
        std::printf("%s", r.report.to_text().c_str());
        if (parser.has("trace")) std::printf("trace: %s (open in Perfetto or chrome://tracing)\n", parser.value("trace").c_str());
    }
    return verified ? 0 : 1;
}

} // namespace tessera::cli
