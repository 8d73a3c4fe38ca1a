// `tessera lower OP key=value... --target T`: the loop nest that lower() makes of an op of the
// registry under its library schedule (or a schedule file) — what a kernel writer reads when a
// schedule surprises them.
#include <cstdio>

#include <nlohmann/json.hpp>
#include <tessera/codegen/chip_schedules.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/lower.h>

#include "cli_common.h"

namespace tessera::cli {

namespace {

struct LowerOptions {
    std::shared_ptr<OpWords> words = std::make_shared<OpWords>();
    std::string target = "host", schedule;
    bool json = false;
};

int lower_op(const LowerOptions &o) {
    ops::OpInstance op = build_named_op(*o.words, "lower");
    const Target target = Target::named(o.target);
    if (!o.schedule.empty()) apply_schedule_file(op.pipeline, o.schedule);
    else if (target.kind() == Target::Kind::Chip) apply_chip_library_schedule(op.pipeline, target, op.output_shapes);
    else if (target.kind() == Target::Kind::Host) host_schedules::library_schedule(op);
    const LoweredModule m = lower(op.pipeline, target, op.output_shapes);
    if (o.json) {
        nlohmann::json j;
        j["op"] = op.op;
        j["params"] = op.params;
        j["target"] = target.name();
        j["schedule"] = nlohmann::json::parse(op.pipeline.schedule().to_json());
        j["loop_nest"] = m.to_string();
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::fputs(m.to_string().c_str(), stdout);
    }
    return 0;
}

} // namespace

Command add_lower_command(CLI::App &app) {
    auto o = std::make_shared<LowerOptions>();
    CLI::App *cmd = app.add_subcommand("lower", "print the loop nest an op lowers to under its schedule");
    cmd->footer("Builds OP from the operator library (see 'tessera lower OP --help'), records its library\n"
                     "schedule for the target (or the schedule in FILE.json) and prints the lowered loop nest.");
    cmd->add_option("--target", o->target, "host, interpreter, a chip (tsp-mini, npu-edge) or a target .json file")->capture_default_str();
    cmd->add_option("--schedule", o->schedule, "a schedule JSON file to use instead of the library schedule");
    cmd->add_flag("--json", o->json, "print the op, the schedule and the loop nest as JSON");
    add_op_subcommands(cmd, o->words);
    return {cmd, [o] { return lower_op(*o); }};
}

} // namespace tessera::cli
