// `tessera run OP key=value... --target T`: builds an op of the registry, schedules it (the
// library schedule, or one from a JSON file), runs it on the host (JIT) or a chip (chipsim),
// checks it against the reference evaluator (verify.h) and reports time or cycles.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <tessera/codegen/host_features.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/codegen/jit.h>
#include <tessera/codegen/runtime.h>
#include <tessera/tuned_schedule.h>
#include <tessera/tuning_db.h>

#include <optional>

#include "cmd_run_chip.h"

namespace tessera::cli {

VerifyMode verify_mode_for(const RunOptions &o, const ops::OpInstance &op) {
    if (o.verify.empty()) return default_verify_mode(op.output_shapes, op.reduction_length);
    return parse_verify_mode(o.verify);
}

std::string verification_json(const Verification &v) {
    nlohmann::json j;
    j["mode"] = to_string(v.mode);
    j["passed"] = v.passed;
    j["points_checked"] = v.points_checked;
    j["points_total"] = v.points_total;
    j["max_abs_error"] = v.max_abs_error;
    if (!v.mismatch.empty()) j["mismatch"] = v.mismatch;
    return j.dump();
}

namespace {

int run_on_host(const RunOptions &o, ops::OpInstance &op, const std::string &schedule_source, const Target &target) {
    const Bindings bindings = op.random_inputs(o.seed);
    CompiledKernel kernel = compile_jit(op.pipeline, op.output_shapes, target);
    std::vector<double> times;
    std::vector<Buffer<>> outputs;
    for (int r = 0; r < o.repeats + 1; ++r) {
        const auto start = std::chrono::steady_clock::now();
        outputs = run_pipeline_kernel(kernel, op.output_shapes, bindings);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) times.push_back(ms); // the first run warms caches and the thread pool
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];

    VerifyOptions vo;
    vo.mode = verify_mode_for(o, op);
    vo.seed = o.seed;
    vo.reduction_length = op.reduction_length;
    const Verification v = verify_outputs(op.pipeline, op.output_shapes, bindings, outputs, vo);
    const double gflops = op.flops / (median * 1e6);

    if (o.json) {
        nlohmann::json j;
        j["op"] = op.op;
        j["params"] = op.params;
        j["target"] = target.name();
        j["cpu"] = host_features().to_string();
        j["threads"] = num_threads();
        j["schedule"] = schedule_source;
        j["verify"] = nlohmann::json::parse(verification_json(v));
        j["verified"] = v.passed;
        j["max_abs_error"] = v.max_abs_error;
        j["time_ms"] = median;
        j["gflops"] = gflops;
        j["compile_ms"] = kernel.compile_ms();
        j["repeats"] = o.repeats;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s on %s (%s, %d threads), %s schedule\n", op.description().c_str(), target.name().c_str(),
                    host_features().to_string().c_str(), num_threads(), schedule_source.c_str());
        std::printf("  verified:      %s, %s against the reference evaluator (max abs error %.3g)\n",
                    v.mode == VerifyMode::None ? "not checked" : v.passed ? "yes" : "NO", v.description().c_str(), v.max_abs_error);
        if (!v.passed) std::printf("  %s\n", v.mismatch.c_str());
        std::printf("  time:          %.4f ms (median of %d)\n", median, o.repeats);
        std::printf("  throughput:    %.2f GFLOP/s\n", gflops);
        std::printf("  compile:       %.1f ms\n", kernel.compile_ms());
    }
    return v.passed ? 0 : 1;
}

int run(const RunOptions &o) {
    ops::OpInstance op = build_named_op(*o.words, "run");
    const Target target = Target::named(o.target);
    if (target.kind() != Target::Kind::Host && target.kind() != Target::Kind::Chip)
        throw UsageError("target '" + target.name() + "' is not supported by 'run'; use host, a chip name or a target file");
    if (o.threads > 0) set_num_threads(o.threads);
    std::string schedule_source = "library";
    if (!o.schedule.empty()) {
        apply_schedule_file(op.pipeline, o.schedule);
        schedule_source = o.schedule;
    } else {
        if (target.kind() == Target::Kind::Host) host_schedules::library_schedule(op);
        // The best tuned record of this workload and target, when a database has one.
        std::optional<TuningDatabase> db;
        if (!o.db.empty()) db.emplace(o.db, TuningDatabaseOptions{.read_only = true});
        else db = TuningDatabase::open_from_environment({.read_only = true});
        if (db) {
            const ScheduleChoice choice = apply_best_schedule(op.pipeline, op.output_shapes, target, &*db);
            if (choice.source == ScheduleChoice::Source::Tuned) schedule_source = choice.to_string();
        }
    }
    if (target.kind() == Target::Kind::Chip) return run_on_chip_target(o, op, schedule_source, target);
    return run_on_host(o, op, schedule_source, target);
}

} // namespace

Command add_run_command(CLI::App &app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App *cmd = app.add_subcommand("run", "run an op of the operator library on a target, verified against the reference");
    cmd->footer(
        "Builds OP from the operator library with its key=value parameters (see 'tessera run OP --help'),\n"
        "schedules it (the library schedule, or the schedule in FILE.json), compiles and runs it on the\n"
        "target with random inputs, checks the result against the reference evaluator and reports the\n"
        "median time of N runs, GFLOP/s and the compile time (host) or the simulated cycles (chips).\n"
        "Exits 1 if the result does not match the reference.");
    cmd->add_option("--target", o->target, "host, a chip (tsp-mini, npu-edge) or a target .json file")->capture_default_str();
    cmd->add_option("--schedule", o->schedule, "a schedule JSON file (Schedule::to_json) to use instead of the library schedule");
    cmd->add_option("--db", o->db, "use the best record of a tuning database for this op and target, when it has one "
                                   "(default: $TESSERA_TUNING_DB)");
    cmd->add_option("--verify", o->verify,
                    "full: every output point against the reference evaluator; sample: its corners and 256 random "
                    "points (each computed alone, so any size checks in seconds); none. Default: full up to 2^26 "
                    "output points x reduction length, sample above")
        ->check(CLI::IsMember({"full", "sample", "none"}));
    cmd->add_option("--repeats", o->repeats, "host: timed runs (the median is reported)")->check(CLI::Range(1, 1000000))->capture_default_str();
    cmd->add_option("--threads", o->threads, "host: threads of parallel loops (default: the cores)")->check(CLI::Range(1, 4096));
    cmd->add_option("--seed", o->seed, "seed of the random inputs and of the sampled points")->capture_default_str();
    cmd->add_option("--trace", o->trace, "chips: write a Chrome trace of the kernel");
    cmd->add_option("--asm", o->assembly, "chips: write the generated program (assembly text)");
    cmd->add_flag("--json", o->json, "print the report as JSON");
    add_op_subcommands(cmd, o->words);
    return {cmd, [o] { return run(*o); }};
}

} // namespace tessera::cli
