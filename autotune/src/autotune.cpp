// The autotuner's search (autotune.h): generate candidates from the host search space, lower
// and rank them by the cost models, compile the chosen ones with the JIT (in threads), time a
// batch of them with interleaved repetitions, check each against the reference on a sample of
// points, and keep the fastest correct one.
#include "tessera/autotune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <atomic>
#include <set>
#include <mutex>
#include <thread>

#include "analytic_cost_model.h"
#include "host_machine.h"
#include "host_search_space.h"
#include "learned_cost_model.h"
#include "parallel_for.h"
#include "chip_tuner.h"
#include "tuning_inputs.h"
#include "loop_nest_features.h"
#include "rank_statistics.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/tuning_db.h"
#include "tessera/ir_operator.h"
#include "tessera/verify.h"

namespace tessera {

namespace internal::autotune {

Bindings random_tuning_inputs(const Pipeline &p, uint64_t seed) {
    Bindings b;
    uint64_t s = seed;
    for (const Input &in : p.inputs()) {
        std::vector<int64_t> shape;
        for (const Expr &d : in.shape()) {
            const auto *imm = d.as<IntImm>();
            if (!imm) throw Error("autotune: Input " + in.name() + " has a symbolic shape; bind its Params to constants first");
            shape.push_back(imm->value);
        }
        Buffer<> data(in.type(), shape);
        data.fill_random(++s);
        b.emplace_back(in, data);
    }
    return b;
}

int64_t longest_reduction(const Pipeline &p) {
    int64_t longest = 1;
    for (const Func &f : p.functions())
        for (int u = 0; u < f.num_updates(); ++u) {
            int64_t n = 1;
            if (const auto &rdom = f.contents()->updates[size_t(u)].rdom)
                for (const auto &r : rdom->vars) n *= as_const_int(r.extent).value_or(1);
            longest = std::max(longest, n);
        }
    return longest;
}

} // namespace internal::autotune

namespace {

using namespace internal::autotune;
using Clock = std::chrono::steady_clock;

/// The arithmetic the algorithm does as written, each Func computed once over the region the
/// outputs need (a multiply-add counts 2): the stores of the loop nest with every producer at the
/// root, each store's points times the operations of its value. A matmul's is 2·M·N·K; a row
/// reduction's counts its rows times its length, not every output element times it.
double algorithm_flops(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &shapes) {
    const Schedule scheduled = p.schedule();
    std::set<std::string> outputs;
    for (const Func &o : p.outputs()) outputs.insert(o.name());
    Schedule each_once;
    for (const Func &f : p.functions())
        if (!outputs.count(f.name())) each_once.add(f.name(), 0, Directive{.kind = DirectiveKind::ComputeRoot});
    double flops = 0;
    try {
        p.set_schedule(each_once);
        for (const StoreNest &s : summarize_loop_nest(lower(p, target, shapes)).stores) flops += s.points() * s.ops_per_point;
    } catch (...) {
        p.set_schedule(scheduled);
        throw;
    }
    p.set_schedule(scheduled);
    return flops;
}

/// A candidate lowered and seen by the models.
struct Ranked {
    Candidate candidate;
    Schedule schedule;
    LoweredModule module;
    std::vector<float> features;
    double analytic = 0;
    double learned = 0; ///< 0: no learned prediction
};

struct Compiled {
    const Ranked *ranked = nullptr;
    CompiledKernel kernel;
    std::vector<double> samples;
    bool sampled = false;
};

/// The bytes of every input and output, once.
double boundary_bytes(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes) {
    double bytes = 0;
    for (const Input &in : p.inputs()) {
        double n = in.type().bytes();
        for (const Expr &d : in.shape()) n *= double(as_const_int(d).value_or(1));
        bytes += n;
    }
    const std::vector<Func> outs = p.outputs();
    for (size_t o = 0; o < shapes.size() && o < outs.size(); ++o) {
        double n = outs[o].type().bytes();
        for (int64_t d : shapes[o]) n *= double(d);
        bytes += n;
    }
    return bytes;
}

/// The statistic the tuning database stores (Measurement::host_seconds), so the tuner's best and
/// the database's best are the same record.
double median(std::vector<double> v) { return Measurement::host_seconds(std::move(v)).seconds; }

} // namespace

std::string TuneResult::to_string() const {
    std::string s;
    char line[1024];
    if (best_cycles > 0) { // a chip: exact simulated cycles
        std::snprintf(line, sizeof line, "%6s  %12s  %12s  %s\n", "trial", "cycles", "best cycles", "candidate");
        s += line;
        for (const TuneTrial &t : history) {
            std::snprintf(line, sizeof line, "%6d  %12lld  %12.0f  %s\n", t.trial, (long long)t.cycles,
                          t.best_so_far / (best_seconds / double(best_cycles)), t.candidate.c_str());
            s += line;
        }
        std::snprintf(line, sizeof line,
                      "best: %lld cycles (%s)%s\n"
                      "problem bound %.0f cycles (%s): best at %.2fx the bound\n"
                      "space %lld candidates%s; generated %d, proven infeasible by Z3 %d, refused by the backend %d "
                      "(of them approved by Z3: %d), the same program as another %d, measured %d, wrong %d\n",
                      (long long)best_cycles, best_candidate.c_str(),
                      library_cycles > 0 ? (", library schedule " + std::to_string(library_cycles) + " cycles").c_str() : "",
                      bound_cycles, bound_limiter.c_str(), gap_to_bound(), (long long)space_size,
                      exhaustive ? " (searched exhaustively)" : "", generated, proven_infeasible, infeasible, approved_but_refused,
                      same_program, measured, wrong);
        s += line;
        const size_t shown = std::min<size_t>(infeasible_reasons.size(), 4);
        for (size_t i = 0; i < shown; ++i) s += "infeasible: " + infeasible_reasons[i] + "\n";
        if (shown < infeasible_reasons.size())
            s += "infeasible: ... and " + std::to_string(infeasible_reasons.size() - shown) + " more reasons (--json lists them all)\n";
        return s;
    }
    std::snprintf(line, sizeof line, "%6s  %10s  %10s  %10s  %10s  %s\n", "trial", "ms", "best ms", "analytic", "learned", "candidate");
    s += line;
    auto ms = [](double seconds) {
        char b[32];
        if (seconds > 0) std::snprintf(b, sizeof b, "%.4f", seconds * 1e3);
        else std::snprintf(b, sizeof b, "-");
        return std::string(b);
    };
    for (const TuneTrial &t : history) {
        std::snprintf(line, sizeof line, "%6d  %10.4f  %10.4f  %10s  %10s  %s%s\n", t.trial, t.seconds * 1e3, t.best_so_far * 1e3,
                      ms(t.predicted_analytic).c_str(), ms(t.predicted_learned).c_str(), t.sampled ? "(sampled) " : "", t.candidate.c_str());
        s += line;
    }
    std::snprintf(line, sizeof line,
                  "best: %.4f ms, %.2f GFLOP/s (%s)\n"
                  "problem bound %.4f ms: best at %.2fx the bound\n"
                  "space %lld candidates%s; generated %d, ranked %d, infeasible %d, measured %d, wrong %d\n",
                  best_seconds * 1e3, gflops, best_candidate.c_str(), bound_seconds * 1e3, gap_to_bound(), (long long)space_size,
                  exhaustive ? " (searched exhaustively)" : "", generated, ranked, infeasible, measured, wrong);
    s += line;
    for (const CostModelAccuracy &a : model_accuracy) {
        std::snprintf(line, sizeof line, "cost model %-8s on %d sampled trials: Spearman %.3f, mean relative error %.1f%%\n",
                      a.model.c_str(), a.samples, a.spearman, 100 * a.mean_relative_error);
        s += line;
    }
    if (database_samples) s += "learned model also trained on " + std::to_string(database_samples) + " earlier records\n";
    return s;
}

int TuneResult::trials_to_reach(double seconds) const {
    for (const TuneTrial &t : history)
        if (t.best_so_far > 0 && t.best_so_far <= seconds) return t.trial + 1;
    return 0;
}

TuneResult autotune(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                    const TuneOptions &options) {
    if (target.kind() != Target::Kind::Host && target.kind() != Target::Kind::Chip)
        throw Error("autotune: target '" + target.name() + "' cannot be tuned; the host and the chips can");
    if (options.budget < 1) throw Error("autotune: the budget must be at least 1 measurement, not " + std::to_string(options.budget));
    if (options.repetitions < 1) throw Error("autotune: repetitions must be at least 1, not " + std::to_string(options.repetitions));
    if (options.threads < 0) throw Error("autotune: threads must be 0 (one per core) or more, not " + std::to_string(options.threads));
    if (options.population < 1) throw Error("autotune: the population must be at least 1 candidate per round, not " + std::to_string(options.population));
    if (options.time_budget_s < 0) throw Error("autotune: the time budget must be 0 (none) or positive seconds");
    if (output_shapes.size() != pipeline.outputs().size())
        throw Error("autotune: the pipeline has " + std::to_string(pipeline.outputs().size()) + " outputs but " +
                    std::to_string(output_shapes.size()) + " output shapes were given");
    if (target.kind() == Target::Kind::Chip) return autotune_chip(pipeline, output_shapes, target, options);
    const Schedule original = pipeline.schedule();
    const HostMachine &machine = host_machine();
    const int threads = options.threads > 0 ? options.threads : std::max(1, int(std::thread::hardware_concurrency()));
    const HostSearchSpace space(pipeline, machine.lanes, output_shapes);
    const Bindings inputs = random_tuning_inputs(pipeline, options.seed);
    const int64_t reduction = longest_reduction(pipeline);
    const auto start = Clock::now();
    std::optional<Workload> workload;
    std::optional<TargetIdentity> identity;
    if (options.database) {
        workload = Workload::of(pipeline, output_shapes);
        identity = TargetIdentity::of(target);
    }
    auto out_of_time = [&] {
        return options.time_budget_s > 0 &&
               std::chrono::duration<double>(Clock::now() - start).count() > options.time_budget_s;
    };

    TuneResult result;
    const double flops = algorithm_flops(pipeline, target, output_shapes);
    result.bound_seconds = std::max(flops / (machine.core_flops * machine.cores), boundary_bytes(pipeline, output_shapes) / machine.memory_bandwidth);
    result.space_size = space.size();
    result.exhaustive = result.space_size <= options.budget;
    result.machine = machine.to_string();
    std::mt19937_64 rng(options.seed);
    std::map<Candidate, std::unique_ptr<Ranked>> lowered; // every candidate lowered so far
    std::set<Candidate> measured_set;
    std::vector<std::pair<double, Candidate>> fastest; // measured, fastest first
    LearnedCostModel learned;

    // Lowers candidates (one at a time: the directives are recorded on the shared pipeline),
    // then summarises them for the models in threads. Illegal ones are counted and dropped.
    auto rank = [&](const std::vector<Candidate> &candidates) {
        std::vector<Ranked *> fresh;
        for (const Candidate &c : candidates) {
            if (lowered.count(c)) continue;
            try {
                space.apply(c, pipeline);
                auto r = std::make_unique<Ranked>();
                r->candidate = c;
                r->schedule = pipeline.schedule();
                r->module = lower(pipeline, target, output_shapes);
                fresh.push_back(r.get());
                lowered.emplace(c, std::move(r));
            } catch (const Error &) {
                ++result.infeasible; // an illegal combination for this pipeline: never measured
                lowered.emplace(c, nullptr);
            }
        }
        parallel_for(fresh.size(), threads, [&](size_t i) {
            const LoopNestSummary nest = summarize_loop_nest(fresh[i]->module);
            const AnalyticEstimate e = estimate_host_seconds(nest, machine);
            fresh[i]->analytic = e.seconds;
            fresh[i]->features = loop_nest_features(nest, e, machine);
        });
        result.ranked += int(fresh.size());
    };
    auto predict_learned = [&](std::vector<Ranked *> &rs) {
        if (!learned.trained() || rs.empty()) return;
        std::vector<std::vector<float>> rows;
        for (const Ranked *r : rs) rows.push_back(r->features);
        const std::vector<double> p = learned.predict_seconds(rows);
        for (size_t i = 0; i < rs.size(); ++i) rs[i]->learned = p[i];
    };

    // Earlier measurements of this workload on this target teach the learned model first.
    if (options.database) {
        for (const TuningRecord &rec : options.database->top_k(*workload, *identity, 4096)) {
            try {
                pipeline.set_schedule(workload->from_canonical(rec.schedule));
                const LoopNestSummary nest = summarize_loop_nest(lower(pipeline, target, output_shapes));
                learned.add(loop_nest_features(nest, estimate_host_seconds(nest, machine), machine), rec.measurement.seconds);
                ++result.database_samples;
            } catch (const Error &) {
                // a record this build cannot lower any more: it teaches nothing
            }
        }
        learned.train();
    }

    auto random_candidate = [&] {
        Candidate c(space.knobs().size());
        for (size_t k = 0; k < c.size(); ++k) c[k] = int(rng() % space.knobs()[k].values.size());
        return c;
    };
    auto mutate = [&](Candidate c) {
        // One to two knobs changed: the neighbourhood of a good candidate.
        const int changes = 1 + int(rng() % 2);
        for (int n = 0; n < changes && !c.empty(); ++n) {
            const size_t k = rng() % c.size();
            c[k] = int(rng() % space.knobs()[k].values.size());
        }
        return c;
    };
    auto crossover = [&](const Candidate &a, const Candidate &b) {
        Candidate c = a;
        for (size_t k = 0; k < c.size(); ++k)
            if (rng() % 2) c[k] = b[k];
        return c;
    };
    auto parent = [&]() -> const Candidate & { return fastest[rng() % std::min<size_t>(fastest.size(), 6)].second; };
    // The next population: random candidates at first; then mostly mutations and crossovers of
    // the fastest measured, and some random ones to keep exploring.
    auto next_population = [&](int want) {
        std::vector<Candidate> pop;
        std::set<Candidate> in_pop;
        int attempts = 0;
        while (int(pop.size()) < want && attempts++ < 32 * want) {
            Candidate c;
            const uint64_t roll = rng() % 8;
            if (fastest.size() < 2 || roll < 2) c = random_candidate();
            else if (roll < 6) c = mutate(parent());
            else c = mutate(crossover(parent(), parent()));
            if (measured_set.count(c) || !in_pop.insert(c).second) continue;
            auto it = lowered.find(c);
            if (it != lowered.end() && !it->second) continue; // known illegal
            if (it == lowered.end()) ++result.generated;
            pop.push_back(c);
        }
        return pop;
    };
    int64_t next_exhaustive = 0;
    bool rule_tried = false;

    const int batch_size = 8, sampled_per_batch = 2;
    while (result.measured < options.budget && !out_of_time()) {
        const int want = std::min(batch_size, options.budget - result.measured);
        std::vector<const Ranked *> batch;
        std::vector<bool> sampled;
        if (result.exhaustive) {
            // Every candidate is measured: every trial samples the models' accuracy.
            std::vector<Candidate> next;
            while (int(next.size()) < want && next_exhaustive < result.space_size) next.push_back(space.nth(next_exhaustive++));
            if (next.empty()) break;
            result.generated += int(next.size());
            rank(next);
            std::vector<Ranked *> rs;
            for (const Candidate &c : next)
                if (Ranked *r = lowered.at(c).get()) rs.push_back(r);
            predict_learned(rs);
            for (Ranked *r : rs) batch.push_back(r), sampled.push_back(true);
        } else {
            std::vector<Candidate> pop = next_population(options.population);
            // The first batch measures the machine's register-and-cache rule too, whatever the
            // models think of it: the search starts from the machine's shape, not from chance.
            std::optional<Candidate> rule;
            if (!rule_tried) {
                rule_tried = true;
                rule = space.register_and_cache_rule(machine);
                if (std::find(pop.begin(), pop.end(), *rule) == pop.end()) {
                    if (!lowered.count(*rule)) ++result.generated;
                    pop.push_back(*rule);
                }
            }
            if (pop.empty()) break;
            rank(pop);
            std::vector<Ranked *> rs;
            for (const Candidate &c : pop) {
                Ranked *r = lowered.at(c).get();
                if (!r) continue;
                if (rule && c == *rule) {
                    std::vector<Ranked *> alone = {r};
                    predict_learned(alone);
                    batch.push_back(r);
                    sampled.push_back(false);
                } else {
                    rs.push_back(r);
                }
            }
            if (rs.empty() && batch.empty()) continue;
            predict_learned(rs);
            // A few drawn at random (the models' accuracy on candidates they did not pick),
            // the rest the best predicted: by the learned model once it has been trained.
            std::shuffle(rs.begin(), rs.end(), rng);
            const int random_ones = std::min<int>(want > 2 ? sampled_per_batch : 0, int(rs.size()));
            for (int i = 0; i < random_ones; ++i) batch.push_back(rs[size_t(i)]), sampled.push_back(true);
            std::vector<Ranked *> rest(rs.begin() + random_ones, rs.end());
            std::stable_sort(rest.begin(), rest.end(), [&](const Ranked *a, const Ranked *b) {
                return learned.trained() ? a->learned < b->learned : a->analytic < b->analytic;
            });
            for (size_t i = 0; i < rest.size() && int(batch.size()) < want; ++i) batch.push_back(rest[i]), sampled.push_back(false);
        }
        if (batch.empty()) continue;
        std::vector<Compiled> compiled;
        std::vector<std::vector<Buffer<>>> outputs;
        if (options.measure) {
            for (size_t i = 0; i < batch.size(); ++i) {
                measured_set.insert(batch[i]->candidate);
                const double cost = options.measure(batch[i]->schedule);
                if (!(cost > 0) || !std::isfinite(cost))
                    throw Error("autotune: the measure function returned " + std::to_string(cost) + " for '" +
                                space.describe(batch[i]->candidate) + "'; a cost must be a positive number");
                compiled.push_back({batch[i], CompiledKernel{}, {cost}, sampled[i]});
            }
        } else {
            // Compile in threads (the JIT compiles independent modules concurrently).
            std::vector<std::optional<CompiledKernel>> kernels(batch.size());
            parallel_for(batch.size(), threads, [&](size_t i) {
                try {
                    kernels[i] = compile_jit(kernel_source(batch[i]->module));
                } catch (const Error &) {
                }
            });
            for (size_t i = 0; i < batch.size(); ++i) {
                measured_set.insert(batch[i]->candidate);
                if (!kernels[i]) {
                    ++result.infeasible;
                    continue;
                }
                compiled.push_back({batch[i], *kernels[i], {}, sampled[i]});
            }
            // Interleaved repetitions: a slow spell of the machine falls on every candidate alike.
            // A candidate whose warm-up is already 4x slower than the best so far (or than the
            // batch's fastest warm-up) is not repeated; its warm-up is its one sample: a random
            // candidate of a large problem can run for seconds, and repeating it would tell the
            // search nothing new.
            outputs.resize(compiled.size());
            std::vector<double> warm_up(compiled.size());
            for (size_t k = 0; k < compiled.size(); ++k) {
                const auto t0 = Clock::now();
                outputs[k] = run_pipeline_kernel(compiled[k].kernel, output_shapes, inputs);
                warm_up[k] = std::chrono::duration<double>(Clock::now() - t0).count();
                if (out_of_time()) { // the rest of the batch is left unmeasured
                    compiled.resize(k + 1);
                    outputs.resize(k + 1);
                    warm_up.resize(k + 1);
                    break;
                }
            }
            double reference = compiled.empty() ? 0 : *std::min_element(warm_up.begin(), warm_up.end());
            if (result.best_seconds > 0) reference = std::min(reference, result.best_seconds);
            std::vector<bool> repeat(compiled.size(), true);
            for (size_t k = 0; k < compiled.size(); ++k)
                if (warm_up[k] > 4 * reference) {
                    repeat[k] = false;
                    compiled[k].samples.push_back(warm_up[k]);
                }
            for (int r = 0; r < options.repetitions && (r == 0 || !out_of_time()); ++r)
                for (size_t k = 0; k < compiled.size(); ++k) {
                    if (!repeat[k]) continue;
                    const auto t0 = Clock::now();
                    outputs[k] = run_pipeline_kernel(compiled[k].kernel, output_shapes, inputs);
                    compiled[k].samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
                }
        }
        for (size_t k = 0; k < compiled.size(); ++k) {
            const Ranked &cand = *compiled[k].ranked;
            VerifyOptions vo;
            vo.mode = VerifyMode::Sample;
            vo.sample_points = 32;
            vo.seed = options.seed;
            vo.reduction_length = reduction;
            const bool correct = options.measure || verify_outputs(pipeline, output_shapes, inputs, outputs[k], vo).passed;
            const double seconds = median(compiled[k].samples);
            TuneTrial t;
            t.trial = result.measured++;
            t.candidate = space.describe(cand.candidate);
            t.seconds = seconds;
            t.predicted_analytic = cand.analytic;
            t.predicted_learned = cand.learned;
            t.sampled = compiled[k].sampled;
            int64_t record = 0;
            if (correct && options.database) {
                char predicted[128];
                std::snprintf(predicted, sizeof predicted, ", \"predicted_analytic_s\": %.6g, \"predicted_learned_s\": %.6g", cand.analytic, cand.learned);
                MeasuredSchedule m{cand.schedule, Measurement::host_seconds(compiled[k].samples), options.seed,
                                   "{\"tuner\": \"host-model-guided\", \"budget\": " + std::to_string(options.budget) +
                                       ", \"repetitions\": " + std::to_string(options.repetitions) + predicted + "}"};
                record = options.database->add(*workload, *identity, m);
            }
            if (!correct) {
                ++result.wrong; // a schedule never changes results: this is a compiler bug, kept out
            } else {
                learned.add(cand.features, seconds);
                fastest.emplace_back(seconds, cand.candidate);
                if (result.best_seconds == 0 || seconds < result.best_seconds) {
                    result.best_seconds = seconds;
                    result.best_samples = compiled[k].samples;
                    result.best = cand.schedule;
                    result.best_candidate = t.candidate;
                    result.best_record = record;
                }
            }
            t.best_so_far = result.best_seconds;
            result.history.push_back(t);
            if (options.progress) options.progress(result.measured, options.budget, result.best_seconds, result.bound_seconds);
        }
        std::sort(fastest.begin(), fastest.end());
        learned.train();
    }
    pipeline.set_schedule(original);
    if (result.best_seconds == 0)
        throw Error("autotune: no candidate of " + std::to_string(result.generated) + " compiled and matched the reference (" +
                    std::to_string(result.infeasible) + " refused, " + std::to_string(result.wrong) + " wrong)");
    result.gflops = flops / result.best_seconds / 1e9;
    // The models' accuracy on the sampled trials, with the predictions made before measuring.
    for (const char *model : {"analytic", "learned"}) {
        std::vector<double> predicted, measured;
        for (const TuneTrial &t : result.history) {
            const double p = std::string(model) == "analytic" ? t.predicted_analytic : t.predicted_learned;
            if (t.sampled && p > 0) predicted.push_back(p), measured.push_back(t.seconds);
        }
        result.model_accuracy.push_back({model, int(predicted.size()), spearman(predicted, measured), mean_relative_error(predicted, measured)});
    }
    return result;
}

} // namespace tessera
