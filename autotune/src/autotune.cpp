// The autotuner's search (autotune.h): generate candidates from the host search space, compile
// each with the JIT, time a batch of them with interleaved repetitions, check each against the
// reference on a sample of points, and keep the fastest correct one.
#include "tessera/autotune.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "host_search_space.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/jit.h"
#include "tessera/codegen/runtime.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/tuning_db.h"
#include "tessera/ir_operator.h"
#include "tessera/verify.h"

namespace tessera {

namespace {

using internal::autotune::Candidate;
using internal::autotune::HostSearchSpace;
using Clock = std::chrono::steady_clock;

/// Random inputs for every Input of the pipeline (floats in [-1, 1), small integers).
Bindings random_bindings(const Pipeline &p, uint64_t seed) {
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

/// The largest reduction any stage runs (for the float tolerance of the check).
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

/// Multiply-adds the algorithm needs, counted as 2 flops: one per point of each reduction.
double algorithm_flops(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes) {
    double points = 0;
    for (const auto &s : shapes) {
        double n = 1;
        for (int64_t d : s) n *= double(d);
        points += n;
    }
    return 2.0 * points * double(longest_reduction(p));
}

struct Compiled {
    Candidate candidate;
    Schedule schedule;
    CompiledKernel kernel;
    std::vector<double> samples;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

std::string TuneResult::to_string() const {
    std::string s;
    char line[512];
    std::snprintf(line, sizeof line, "%6s  %12s  %12s  %s\n", "trial", "ms", "best ms", "candidate");
    s += line;
    for (const TuneTrial &t : history) {
        std::snprintf(line, sizeof line, "%6d  %12.4f  %12.4f  %s\n", t.trial, t.seconds * 1e3, t.best_so_far * 1e3, t.candidate.c_str());
        s += line;
    }
    std::snprintf(line, sizeof line,
                  "best: %.4f ms, %.2f GFLOP/s (%s)\n"
                  "space %lld candidates%s; generated %d, infeasible %d, measured %d, wrong %d\n",
                  best_seconds * 1e3, gflops, best_candidate.c_str(), (long long)space_size,
                  exhaustive ? " (searched exhaustively)" : "", generated, infeasible, measured, wrong);
    return s + line;
}

TuneResult autotune(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                    const TuneOptions &options) {
    if (target.kind() != Target::Kind::Host)
        throw Error("autotune: target '" + target.name() + "' cannot be tuned yet; the host is (chips come next, issue 14)");
    if (options.budget < 1) throw Error("autotune: the budget must be at least 1 measurement, not " + std::to_string(options.budget));
    if (options.repetitions < 1) throw Error("autotune: repetitions must be at least 1, not " + std::to_string(options.repetitions));
    const Schedule original = pipeline.schedule();
    const HostSearchSpace space(pipeline, host_features().float_lanes());
    const Bindings inputs = random_bindings(pipeline, options.seed);
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
    result.space_size = space.size();
    result.exhaustive = result.space_size <= options.budget;
    std::mt19937_64 rng(options.seed);
    std::set<Candidate> seen;
    std::vector<std::pair<double, Candidate>> ranked; // measured, fastest first

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
    int64_t next_exhaustive = 0;
    // The next candidates to measure: every one in order for a small space; otherwise random ones
    // first, then mutations of the best measured so far (a (mu + lambda) evolution).
    auto next_batch = [&](int want) {
        std::vector<Candidate> batch;
        int attempts = 0;
        while (int(batch.size()) < want && attempts++ < 64 * want) {
            Candidate c;
            if (result.exhaustive) {
                if (next_exhaustive >= result.space_size) break;
                c = space.nth(next_exhaustive++);
            } else if (ranked.size() < 8 || rng() % 4 == 0) {
                c = random_candidate();
            } else {
                c = mutate(ranked[rng() % std::min<size_t>(ranked.size(), 4)].second);
            }
            if (!seen.insert(c).second) continue;
            ++result.generated;
            batch.push_back(c);
        }
        return batch;
    };

    const int batch_size = 4;
    while (result.measured < options.budget && !out_of_time()) {
        std::vector<Candidate> batch = next_batch(std::min(batch_size, options.budget - result.measured));
        if (batch.empty()) break;
        std::vector<Compiled> compiled;
        for (const Candidate &c : batch) {
            try {
                space.apply(c, pipeline);
                Compiled k{c, pipeline.schedule(), compile_jit(pipeline, output_shapes, target), {}};
                compiled.push_back(std::move(k));
            } catch (const Error &) {
                ++result.infeasible; // an illegal combination for this pipeline: never measured
            }
        }
        // Interleaved repetitions: a slow spell of the machine falls on every candidate alike.
        std::vector<std::vector<Buffer<>>> outputs(compiled.size());
        for (size_t k = 0; k < compiled.size(); ++k) outputs[k] = run_pipeline_kernel(compiled[k].kernel, output_shapes, inputs); // warm-up
        for (int r = 0; r < options.repetitions; ++r)
            for (size_t k = 0; k < compiled.size(); ++k) {
                const auto t0 = Clock::now();
                outputs[k] = run_pipeline_kernel(compiled[k].kernel, output_shapes, inputs);
                compiled[k].samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
            }
        for (size_t k = 0; k < compiled.size(); ++k) {
            VerifyOptions vo;
            vo.mode = VerifyMode::Sample;
            vo.sample_points = 32;
            vo.seed = options.seed;
            vo.reduction_length = reduction;
            const bool correct = verify_outputs(pipeline, output_shapes, inputs, outputs[k], vo).passed;
            const double seconds = median(compiled[k].samples);
            TuneTrial t;
            t.trial = result.measured++;
            t.candidate = space.describe(compiled[k].candidate);
            t.seconds = seconds;
            int64_t record = 0;
            if (correct && options.database) {
                MeasuredSchedule m{compiled[k].schedule, Measurement::host_seconds(compiled[k].samples), options.seed,
                                   "{\"tuner\": \"host-evolutionary\", \"budget\": " + std::to_string(options.budget) +
                                       ", \"repetitions\": " + std::to_string(options.repetitions) + "}"};
                record = options.database->add(*workload, *identity, m);
            }
            if (!correct) {
                ++result.wrong; // a schedule never changes results: this is a compiler bug, kept out
            } else if (result.best_seconds == 0 || seconds < result.best_seconds) {
                result.best_seconds = seconds;
                result.best_samples = compiled[k].samples;
                result.best = compiled[k].schedule;
                result.best_candidate = t.candidate;
                result.best_record = record;
            }
            if (correct) ranked.emplace_back(seconds, compiled[k].candidate);
            t.best_so_far = result.best_seconds;
            result.history.push_back(t);
            if (options.progress) options.progress(result.measured, options.budget, result.best_seconds);
        }
        std::sort(ranked.begin(), ranked.end());
    }
    pipeline.set_schedule(original);
    if (result.best_seconds == 0)
        throw Error("autotune: no candidate of " + std::to_string(result.generated) + " compiled and matched the reference (" +
                    std::to_string(result.infeasible) + " refused, " + std::to_string(result.wrong) + " wrong)");
    result.gflops = algorithm_flops(pipeline, output_shapes) / result.best_seconds / 1e9;
    return result;
}

} // namespace tessera
