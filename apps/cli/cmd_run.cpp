// `tessera run OP key=value... --target host`: builds an op from the operator library, applies
// the library schedule (or one from a JSON file), runs it, checks it against the reference
// evaluator and reports time, GFLOP/s and compile time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <tessera/codegen/host_features.h>
#include <tessera/codegen/jit.h>
#include <tessera/codegen/runtime.h>

#include "cli_args.h"
#include "cmd_run_chip.h"
#include "commands.h"
#include "op_builder.h"

namespace tessera::cli {

int cmd_run(const std::vector<std::string> &args) {
    ArgParser parser("run",
                     "usage: tessera run OP [key=value...] [--target host] [--schedule FILE.json] [--repeats N]\n"
                     "                   [--threads N] [--json]\n"
                     "Builds OP from the operator library, schedules it (the host library schedule, or the\n"
                     "schedule in FILE.json), compiles and runs it on the target, checks the result against\n"
                     "the reference evaluator and reports the median time of N runs (default 10), GFLOP/s and\n"
                     "the compile time. Exits 1 if the result does not match the reference.\n\n" +
                         op_usage());
    parser.option("target").option("schedule").option("repeats").option("threads").option("trace").option("asm");
    parser.parse(args);
    if (parser.help()) {
        std::printf("%s", parser.usage().c_str());
        return 0;
    }
    if (parser.positionals().empty()) throw UsageError("name the op to run, e.g. 'tessera run matmul M=512 N=512 K=512'");
    const std::string op_name = parser.positionals()[0];
    std::vector<std::string> kvs(parser.positionals().begin() + 1, parser.positionals().end());
    const Target target = Target::named(parser.value("target", "host"));
    if (target.kind() != Target::Kind::Host && target.kind() != Target::Kind::Chip)
        throw Error("run: target '" + target.name() + "' is not supported by 'run' yet; use --target host");
    int repeats = 10;
    if (parser.has("repeats")) {
        repeats = std::atoi(parser.value("repeats").c_str());
        if (repeats < 1) throw UsageError("--repeats must be a positive integer");
    }
    if (parser.has("threads")) {
        int t = std::atoi(parser.value("threads").c_str());
        if (t < 1) throw UsageError("--threads must be a positive integer");
        set_num_threads(t);
    }

    OpInstance op = build_op(op_name, kvs);
    std::string schedule_source = "library";
    if (parser.has("schedule")) {
        std::ifstream f(parser.value("schedule"));
        if (!f) throw Error("run: cannot read schedule file '" + parser.value("schedule") + "'");
        std::stringstream text;
        text << f.rdbuf();
        op.pipeline.set_schedule(Schedule::from_json(text.str()));
        schedule_source = parser.value("schedule");
    } else if (target.kind() != Target::Kind::Chip) {
        apply_host_library_schedule(op);
    }
    if (target.kind() == Target::Kind::Chip) return run_on_chip_target(parser, op, schedule_source, target);

    CompiledKernel kernel = compile_jit(op.pipeline, op.output_shapes, target);
    std::vector<double> times;
    std::vector<Buffer<>> outputs;
    for (int r = 0; r < repeats + 1; ++r) {
        const auto start = std::chrono::steady_clock::now();
        outputs = run_pipeline_kernel(kernel, op.output_shapes, op.bindings);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) times.push_back(ms); // the first run warms caches and the thread pool
    }
    std::sort(times.begin(), times.end());
    const double median = times[times.size() / 2];

    std::vector<Buffer<>> expected = evaluate_reference(op.pipeline, op.output_shapes, op.bindings);
    bool verified = true;
    double max_abs_error = 0;
    std::string mismatch;
    for (size_t i = 0; i < expected.size(); ++i) {
        Comparison c = compare(outputs[i], expected[i], Tolerance::for_type(expected[i].type(), op.reduction_length));
        verified = verified && c.equal;
        max_abs_error = std::max(max_abs_error, c.max_abs_error);
        if (!c.equal && mismatch.empty()) mismatch = c.message;
    }
    const double gflops = op.flops / (median * 1e6);

    if (parser.json()) {
        nlohmann::json j;
        j["op"] = op.op;
        j["params"] = op.params;
        j["target"] = target.name();
        j["cpu"] = host_features().to_string();
        j["threads"] = num_threads();
        j["schedule"] = schedule_source;
        j["verified"] = verified;
        j["max_abs_error"] = max_abs_error;
        j["time_ms"] = median;
        j["gflops"] = gflops;
        j["compile_ms"] = kernel.compile_ms();
        j["repeats"] = repeats;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s", op.op.c_str());
        for (const auto &[k, v] : op.params) std::printf(" %s=%s", k.c_str(), v.c_str());
        std::printf(" on %s (%s, %d threads), %s schedule\n", target.name().c_str(), host_features().to_string().c_str(),
                    num_threads(), schedule_source.c_str());
        std::printf("  verified:      %s (max abs error %.3g vs the reference evaluator)\n", verified ? "yes" : "NO", max_abs_error);
        if (!verified) std::printf("  %s\n", mismatch.c_str());
        std::printf("  time:          %.4f ms (median of %d)\n", median, repeats);
        std::printf("  throughput:    %.2f GFLOP/s\n", gflops);
        std::printf("  compile:       %.1f ms\n", kernel.compile_ms());
    }
    return verified ? 0 : 1;
}

} // namespace tessera::cli
