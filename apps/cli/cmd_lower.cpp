// `tessera lower OP key=value... --target T`: the loop nest that lower() makes of an op of the
// registry under its library schedule (or a schedule file) — what a kernel writer reads when a
// schedule surprises them. On a chip: the nest the chip compiler took and its program by stage.
#include <cstdio>

#include <nlohmann/json.hpp>
#include <tessera/chipsim/assembler.h>
#include <tessera/codegen/chip_backend.h>
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

/// The chip program as a kernel writer reads it: each stage's instructions under a header.
std::string program_by_stage(const chipsim::Program &program) {
    std::string out;
    int32_t stage = -2;
    for (const chipsim::Instruction &in : program.instructions) {
        if (in.stage != stage) {
            stage = in.stage;
            const bool named = stage >= 0 && size_t(stage) < program.stages.size();
            out += "  ; stage " + (named ? program.stages[size_t(stage)] : std::string("(none)")) + "\n";
        }
        out += "  " + chipsim::disassemble(in) + "\n";
    }
    return out;
}

int lower_op(const LowerOptions &o) {
    ops::OpInstance op = build_named_op(*o.words, "lower");
    const Target target = Target::named(o.target);
    if (!o.schedule.empty()) apply_schedule_file(op.pipeline, o.schedule);
    else if (target.kind() == Target::Kind::Chip) apply_chip_library_schedule(op.pipeline, target, op.output_shapes);
    else if (target.kind() == Target::Kind::Host) host_schedules::library_schedule(op);
    nlohmann::json j;
    j["op"] = op.op;
    j["params"] = op.params;
    j["target"] = target.name();
    j["schedule"] = nlohmann::json::parse(op.pipeline.schedule().to_json());
    if (target.kind() == Target::Kind::Chip) {
        // What the chip compiler took and what it made of it: the loop nest (the chip's default
        // rules applied), then the program, stage by stage (DMAs, vector and matrix ops, with
        // the memory, bank and rows of every tile).
        const ChipProgram cp = compile_for_chip(op.pipeline, target, op.output_shapes);
        const bool library_kernel = cp.loop_nest.empty();
        const std::string nest = library_kernel ? lower(op.pipeline, target, op.output_shapes).to_string() : cp.loop_nest;
        j["loop_nest"] = nest;
        j["compiled_from"] = library_kernel ? "library kernel" : "loop nest";
        j["summary"] = cp.summary;
        j["stages"] = cp.program.stages;
        j["program"] = program_by_stage(cp.program);
        if (!o.json)
            std::printf("// %s: %s\n%s// the program: %s\n%s", target.name().c_str(),
                        library_kernel ? "a library kernel compiled it from this nest" : "the loop nest the chip compiler took",
                        nest.c_str(), cp.summary.c_str(), j["program"].get<std::string>().c_str());
    } else {
        j["loop_nest"] = lower(op.pipeline, target, op.output_shapes).to_string();
        if (!o.json) std::fputs(j["loop_nest"].get<std::string>().c_str(), stdout);
    }
    if (o.json) std::printf("%s\n", j.dump(2).c_str());
    return 0;
}

} // namespace

Command add_lower_command(CLI::App &app) {
    auto o = std::make_shared<LowerOptions>();
    CLI::App *cmd = app.add_subcommand("lower", "print the loop nest an op lowers to under its schedule (and, on a chip, its program)");
    cmd->footer("Builds OP from the operator library (see 'tessera lower OP --help'), records its library\n"
                     "schedule for the target (or the schedule in FILE.json) and prints the lowered loop nest;\n"
                     "on a chip, the nest the chip compiler took and the program it made, stage by stage.");
    cmd->add_option("--target", o->target, "host, interpreter, a chip (tsp-mini, npu-edge) or a target .json file")->capture_default_str();
    cmd->add_option("--schedule", o->schedule, "a schedule JSON file to use instead of the library schedule");
    cmd->add_flag("--json", o->json, "print the op, the schedule and the loop nest as JSON");
    add_op_subcommands(cmd, o->words);
    return {cmd, [o] { return lower_op(*o); }};
}

} // namespace tessera::cli
