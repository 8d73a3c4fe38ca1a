// `tessera tune OP key=value... --target T` (host, tsp-mini, npu-edge or a chip target JSON):
// searches the op's schedules (autotune.h), with a progress line on stderr (best so far and the
// gap to the problem bound), then prints the history and the best; -o writes the best schedule
// for `tessera run OP ... --schedule FILE`, and --db (or $TESSERA_TUNING_DB) records every
// correct measurement (on chips: the verified winner).
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>
#include <tessera/autotune.h>
#include <tessera/codegen/chip_backend.h>
#include <tessera/tuning_db.h>
#include <tessera/workload.h>

#include "cli_common.h"

namespace tessera::cli {

namespace {

struct TuneCliOptions {
    std::shared_ptr<OpWords> words = std::make_shared<OpWords>();
    std::string target = "host", output, db;
    int budget = 64, repetitions = 5, threads = 0, population = 192;
    double time_s = 0;
    uint64_t seed = 1;
    bool json = false, quiet = false;
};

int tune(const TuneCliOptions &o) {
    ops::OpInstance op = build_named_op(*o.words, "tune");
    const Target target = Target::named(o.target);
    if (target.kind() == Target::Kind::Chip) chip_target_description(target); // an unknown name or a bad file says so
    std::optional<TuningDatabase> db;
    if (!o.db.empty()) db.emplace(o.db);
    else db = TuningDatabase::open_from_environment();
    TuneOptions options;
    options.budget = o.budget;
    options.time_budget_s = o.time_s;
    options.seed = o.seed;
    options.repetitions = o.repetitions;
    options.threads = o.threads;
    options.population = o.population;
    options.database = db ? &*db : nullptr;
    const auto start = std::chrono::steady_clock::now();
    if (!o.quiet)
        options.progress = [&](int trial, int budget, double best, double bound) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const int filled = budget > 0 ? 30 * trial / budget : 30;
            const double left = trial > 0 ? elapsed / trial * (budget - trial) : 0.0;
            char gap[48] = "";
            if (bound > 0 && best > 0) std::snprintf(gap, sizeof gap, " (%.2fx the bound)", best / bound);
            std::fprintf(stderr, "\rtune %s [%-30s] %d/%d  best %.4f ms%s  %.1f s elapsed, ~%.1f s left ", op.op.c_str(),
                         std::string(size_t(filled), '#').c_str(), trial, budget, best * 1e3, gap, elapsed,
                         o.time_s > 0 ? std::min(left, std::max(0.0, o.time_s - elapsed)) : left);
            std::fflush(stderr);
        };
    const TuneResult r = autotune(op.pipeline, op.output_shapes, target, options);
    if (!o.quiet) std::fprintf(stderr, "\n");
    // The op's words make its records replayable (tessera db replay).
    if (db) db->record_op_words(Workload::of(op.pipeline, op.output_shapes), op.description());
    if (!o.output.empty() && !(std::ofstream(o.output) << r.best.to_json() << "\n"))
        throw Error("cannot write the best schedule to '" + o.output + "'");
    if (o.json) {
        nlohmann::json j;
        j["op"] = op.op;
        j["params"] = op.params;
        j["target"] = target.name();
        j["best"] = {{"seconds", r.best_seconds}, {"samples", r.best_samples}, {"gflops", r.gflops},
                     {"candidate", r.best_candidate}, {"schedule", nlohmann::json::parse(r.best.to_json())}};
        if (r.best_record) j["best"]["record"] = r.best_record;
        j["counts"] = {{"space", r.space_size}, {"generated", r.generated}, {"ranked", r.ranked}, {"infeasible", r.infeasible},
                       {"measured", r.measured}, {"wrong", r.wrong}, {"exhaustive", r.exhaustive}};
        j["bound"] = {{"seconds", r.bound_seconds}, {"gap", r.gap_to_bound()}, {"machine", r.machine}};
        if (r.best_cycles > 0) {
            j["best"]["cycles"] = r.best_cycles;
            j["best"]["library_cycles"] = r.library_cycles;
            j["bound"]["cycles"] = r.bound_cycles;
            j["bound"]["limiter"] = r.bound_limiter;
            j["counts"]["proven_infeasible"] = r.proven_infeasible;
            j["counts"]["approved_but_refused"] = r.approved_but_refused;
            j["counts"]["same_program"] = r.same_program;
            j["infeasible_reasons"] = r.infeasible_reasons;
        }
        nlohmann::json models = nlohmann::json::array();
        for (const CostModelAccuracy &a : r.model_accuracy)
            models.push_back({{"model", a.model}, {"samples", a.samples}, {"spearman", a.spearman}, {"mean_relative_error", a.mean_relative_error}});
        j["cost_models"] = models;
        j["database_samples"] = r.database_samples;
        nlohmann::json history = nlohmann::json::array();
        for (const TuneTrial &t : r.history)
            history.push_back({{"trial", t.trial}, {"candidate", t.candidate}, {"seconds", t.seconds}, {"best_so_far", t.best_so_far},
                               {"predicted_analytic", t.predicted_analytic}, {"predicted_learned", t.predicted_learned}, {"sampled", t.sampled}, {"cycles", t.cycles}});
        j["history"] = history;
        if (db) j["database"] = db->path();
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("%s on %s\n%s", op.description().c_str(), target.name().c_str(), r.to_string().c_str());
        if (!o.output.empty()) std::printf("best schedule written to %s (tessera run %s ... --schedule %s)\n", o.output.c_str(), op.op.c_str(), o.output.c_str());
        if (db) std::printf("every correct measurement recorded in %s (best: record #%lld)\n", db->path().c_str(), (long long)r.best_record);
    }
    return 0;
}

} // namespace

Command add_tune_command(CLI::App &app) {
    auto o = std::make_shared<TuneCliOptions>();
    CLI::App *cmd = app.add_subcommand("tune", "search the schedules of an op for a target and report the fastest");
    cmd->footer("Builds OP from the operator library (see 'tessera tune OP --help'), generates its search space from\n"
                "the algorithm, ranks populations of candidates by an analytic and a learned (XGBoost) cost model,\n"
                "measures the best predicted and a few random ones, up to --budget (each checked against the\n"
                "reference evaluator on a sample of points), and prints the history, the best, the gap to the\n"
                "problem bound and each model's accuracy on the random ones. On a chip (--target tsp-mini, npu-edge or a\n"
                "target JSON) it searches the directives the chip backend honours, proves infeasible ones with Z3\n"
                "(never compiled) and measures the rest in exact simulated cycles.");
    cmd->add_option("--target", o->target, "the target to tune for: host, tsp-mini, npu-edge or a chip target JSON")->capture_default_str();
    cmd->add_option("--budget", o->budget, "candidates measured at most")->check(CLI::Range(1, 1000000))->capture_default_str();
    cmd->add_option("--time", o->time_s, "seconds at most (0: no limit)")->check(CLI::Range(0.0, 1e9));
    cmd->add_option("--seed", o->seed, "seed of the search and of the random inputs")->capture_default_str();
    cmd->add_option("--repetitions", o->repetitions, "timed calls per candidate (the median counts)")->check(CLI::Range(1, 1000))->capture_default_str();
    cmd->add_option("--threads", o->threads, "threads that compile and rank candidates (0: one per core)")->check(CLI::Range(0, 1024))->capture_default_str();
    cmd->add_option("--population", o->population, "candidates ranked by the cost models per round")->check(CLI::Range(1, 100000))->capture_default_str();
    cmd->add_option("-o,--output", o->output, "write the best schedule (JSON) to this file");
    cmd->add_option("--db", o->db, "record every correct measurement in this tuning database (default: $TESSERA_TUNING_DB)");
    cmd->add_flag("--quiet", o->quiet, "no progress line on stderr");
    cmd->add_flag("--json", o->json, "print the result as JSON");
    add_op_subcommands(cmd, o->words);
    return {cmd, [o] { return tune(*o); }};
}

} // namespace tessera::cli
