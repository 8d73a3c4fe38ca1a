// The chip tuner (chip_tuner.h): builds the candidates of a pipeline on a chip — the library
// schedule, then the chip directives the backend honours, each checked by the Z3 model of the
// target (chip_constraints.h) — compiles the approved ones (in threads, each on a copy of the
// pipeline, whose Funcs hold the directives), simulates them timing-only in threads, and
// verifies the fastest functionally against the reference evaluator.
#include "chip_tuner.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "chip_constraints.h"
#include "chip_loop_nest_constraints.h"
#include "chip_loop_nest_space.h"
#include "chip_cost_model.h"
#include "learned_cost_model.h"
#include "parallel_for.h"
#include "rank_statistics.h"
#include "tessera/chipsim/timing_model.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/error.h"
#include "tessera/internal/cut_subgraph.h"
#include "tessera/internal/function.h"
#include "tessera/tuning_db.h"
#include "tessera/tuning_replay.h"
#include "tessera/workload.h"
#include "tessera/verify.h"
#include "tuning_inputs.h"

namespace tessera::internal::autotune {

namespace {

using Clock = std::chrono::steady_clock;

/// Below the best measured by this fraction more than the analytic model's worst overestimate,
/// a candidate is still worth simulating: the ranking stops short of it only beyond.
constexpr double kStopMargin = 0.02;

/// Compiled candidates in a row whose program was another's, after which the search stops
/// compiling: the knobs do not reach this pipeline's program.
constexpr int kSameProgramRun = 64;

/// A candidate: a schedule and what a person reads about it.
struct ChipCandidate {
    Schedule schedule;
    std::string description;
};

/// The Func whose result the library schedule keeps in the accumulator (a matmul's or conv's
/// product), and whether its update stage carries a tile the search may resize.
struct AccumulatorProduct {
    std::string func;
    bool has_tile = false;
    int64_t tile_m = 0, tile_n = 0; ///< the library's tile
    std::string rows_var, columns_var; ///< the loops the tile cuts: a matmul's i, j; a conv's output rows, channels
};

/// The extents the tile's rows and columns cut, and the accumulator rows one unit of its rows
/// takes: 1 for a matmul's i; a conv's output width for its output rows y, whose tiles are whole
/// rows (the loops inside y that the tile leaves whole).
struct TiledExtents {
    int64_t rows = 1, columns = 1, accumulator_rows_per_row = 1;
};

TiledExtents tiled_extents(const Pipeline &pipeline, const AccumulatorProduct &product, const std::vector<int64_t> &shape) {
    TiledExtents e{shape.size() >= 2 ? shape[shape.size() - 2] : 1, shape.back(), 1};
    for (const Func &f : pipeline.functions()) {
        if (f.name() != product.func || f.args().size() != shape.size()) continue;
        const std::vector<std::string> &args = f.args();
        const auto at = [&](const std::string &v) { return size_t(std::find(args.begin(), args.end(), v) - args.begin()); };
        const size_t r = at(product.rows_var), c = at(product.columns_var);
        if (r >= args.size() || c >= args.size()) break;
        e.rows = shape[r];
        e.columns = shape[c];
        for (size_t d = r + 1; d < args.size(); ++d)
            if (d != c) e.accumulator_rows_per_row *= shape[d];
    }
    return e;
}

std::optional<AccumulatorProduct> accumulator_product(const Schedule &library) {
    for (const auto &[name, fs] : library.funcs)
        for (const Directive &d : fs.stage(0))
            if (d.kind == DirectiveKind::StoreIn && d.memory == MemoryKind::ACC) {
                AccumulatorProduct p{name, false};
                for (const Directive &u : fs.stage(1))
                    if (u.kind == DirectiveKind::Tile && u.factors.size() == 2)
                        p.has_tile = true, p.tile_m = u.factors[0], p.tile_n = u.factors[1], p.rows_var = u.vars.at(0),
                        p.columns_var = u.vars.at(1);
                return p;
            }
    return std::nullopt;
}

/// The library schedule with the product's tile and accumulator bank replaced by `c`'s.
Schedule with_choice(Schedule s, const std::string &product, const ChipMatmulChoice &c) {
    FuncSchedule &fs = s.funcs[product];
    for (Directive &d : fs.stages[1])
        if (d.kind == DirectiveKind::Tile && d.factors.size() == 2) {
            if (c.tile_m > 0) d.factors[0] = c.tile_m;
            if (c.tile_n > 0) d.factors[1] = c.tile_n;
        }
    for (Directive &d : fs.stages[0])
        if (d.kind == DirectiveKind::StoreIn && d.memory == MemoryKind::ACC) d.bank = c.acc_bank;
    if (c.blocks_per_row > 0) {
        std::erase_if(fs.stages[0], [](const Directive &d) { return d.kind == DirectiveKind::BlocksPerRow; });
        Directive d;
        d.kind = DirectiveKind::BlocksPerRow;
        d.factors = {c.blocks_per_row};
        fs.stages[0].push_back(d);
    }
    if (!c.tile_order.empty()) {
        std::erase_if(fs.stages[0], [](const Directive &d) { return d.kind == DirectiveKind::TileOrder; });
        Directive d;
        d.kind = DirectiveKind::TileOrder;
        d.vars = {c.tile_order};
        fs.stages[0].push_back(d);
    }
    if (c.double_buffer == 0) {
        std::erase_if(fs.stages[0], [](const Directive &d) { return d.kind == DirectiveKind::DoubleBuffer; });
        Directive d;
        d.kind = DirectiveKind::DoubleBuffer;
        d.factors = {0};
        fs.stages[0].push_back(d);
    }
    return s;
}

/// Powers of two from `first` below `limit`, then `limit` itself: the tile sizes worth trying
/// along a dimension of `limit` elements.
std::vector<int64_t> tile_sizes(int64_t first, int64_t limit) {
    std::vector<int64_t> v;
    for (int64_t x = first; x < limit; x *= 2) v.push_back(x);
    if (limit > 0) v.push_back(limit);
    return v;
}

chipsim::DType operand_dtype(const Pipeline &p) {
    for (const Input &in : p.inputs())
        if (in.type().is_int() && in.type().bits() == 8) return chipsim::DType::Int8;
    return chipsim::DType::BF16;
}

} // namespace

TuneResult autotune_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Target &target,
                         const TuneOptions &options) {
    const chipsim::Target chip = chip_target_description(target);
    const chipsim::TimingModel model(chip);
    const double cycles_per_second = chip.clock_ghz * 1e9;
    const Schedule original = pipeline.schedule();
    const int threads = options.threads > 0 ? options.threads : std::max(1, int(std::thread::hardware_concurrency()));
    const Bindings inputs = random_tuning_inputs(pipeline, options.seed);
    const auto start = Clock::now();
    auto out_of_time = [&] {
        return options.time_budget_s > 0 && std::chrono::duration<double>(Clock::now() - start).count() > options.time_budget_s;
    };
    TuneResult result;
    result.machine = chip.name + " (simulated, " + std::to_string(chip.clock_ghz) + " GHz)";

    // The library schedule, recorded from the algorithm alone, is the first candidate: the
    // tuned schedule is never slower than it.
    std::vector<ChipCandidate> candidates;
    std::optional<Schedule> library;
    bool library_measured = false; ///< candidates[0] is the library schedule
    pipeline.set_schedule(Schedule{});
    try {
        apply_chip_library_schedule(pipeline, target, output_shapes);
        library = pipeline.schedule();
        candidates.push_back({*library, "library schedule"});
        library_measured = true;
    } catch (const Error &) {
        // no library schedule for this pipeline: the search starts from the algorithm
    }

    // A product in the accumulator: its tile and bank, every choice checked by Z3 first.
    const std::optional<AccumulatorProduct> product = library ? accumulator_product(*library) : std::nullopt;
    if (product) {
        const TiledExtents extents = tiled_extents(pipeline, *product, output_shapes.at(0));
        const int64_t m = extents.rows, n = extents.columns, rows_per_row = extents.accumulator_rows_per_row;
        const chipsim::DType dtype = operand_dtype(pipeline);
        const ChipConstraintModel constraints(chip, dtype, n);
        const int64_t width = chip.mxm_shape(dtype).n;
        std::vector<int64_t> rows{0}, columns{0};
        if (product->has_tile) {
            // A conv's tile is whole output rows, each many accumulator rows: from one up.
            for (int64_t r : tile_sizes(rows_per_row > 1 ? 1 : 32, m)) rows.push_back(r);
            // tsp-mini computes one MXM-wide column block per plane job: the tile's width is
            // its unit's; a dynamically issued array takes several blocks per tile.
            if (chip.issue == chipsim::IssueKind::Dynamic)
                for (int64_t c : tile_sizes(width, n)) columns.push_back(c);
            // And, for a conv, the most whole rows that fill the accumulator once or half of it
            // (double-buffered) at each width: fewer weight installs per row than a power of
            // two leaves (56-pixel rows, 32 columns: 9 rows, not 8).
            if (rows_per_row > 1)
                for (const chipsim::MemoryDesc &mem : chip.memories)
                    if (mem.accumulator)
                        for (int64_t c : tile_sizes(width, n))
                            for (int64_t share : {1, 2}) {
                                const int64_t r = std::min(m, mem.total_rows() / share / (rows_per_row * ((c + width - 1) / width)));
                                if (r > 0 && std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
                            }
        }
        int acc_banks = 0;
        for (const chipsim::MemoryDesc &mem : chip.memories)
            if (mem.accumulator) acc_banks = mem.total_banks();
        // Operand blocks per on-chip row: the backend's rule (the largest legal value) and
        // every other legal value.
        const std::vector<int64_t> legal_per_row = chip_blocks_per_row_values(chip, dtype);
        std::vector<int64_t> blocks_per_row{0};
        for (int64_t v : legal_per_row)
            if (v != legal_per_row.back()) blocks_per_row.push_back(v);
        // The order of the output tiles: the rule (the first legal value) and every other that
        // walks the tile's grid another way (orders that walk it alike make one program: every
        // order of a single tile, all but a snaking one on one line of tiles).
        // (double_buffer(false), chip_double_buffer_values, is not searched yet: on tsp-mini it
        // doubles a space the tests' 64-run budgets now cover whole.)
        auto tile_orders = [&](int64_t r, int64_t c) {
            const int64_t rows_of_tile = r > 0 ? r : product->tile_m, columns_of_tile = c > 0 ? c : product->tile_n;
            const std::vector<std::string> legal =
                rows_of_tile > 0 && columns_of_tile > 0
                    ? chip_tile_order_values(chip, (m + rows_of_tile - 1) / rows_of_tile, (n + columns_of_tile - 1) / columns_of_tile)
                    : chip_tile_order_values(chip);
            std::vector<std::string> orders{""}; // the rule, the first legal value
            for (size_t o = 1; o < legal.size(); ++o) orders.push_back(legal[o]);
            return orders;
        };
        const std::vector<int> double_buffers{-1};
        std::set<std::string> reasons;
        // Z3 sees the sizes the backend will get: the library's where the choice keeps them.
        auto infeasible = [&](const ChipMatmulChoice &c) {
            return constraints.why_infeasible(
                {(c.tile_m > 0 ? c.tile_m : product->tile_m) * rows_per_row, c.tile_n > 0 ? c.tile_n : product->tile_n, c.acc_bank});
        };
        if (const std::optional<std::string> why = infeasible({})) {
            // The library's own tile does not fit this target (an edited one): never compiled.
            ++result.proven_infeasible;
            reasons.insert(*why);
            result.infeasible_reasons.push_back("library schedule: " + *why);
            candidates.erase(candidates.begin());
            library_measured = false;
        }
        // A choice that names the library's own size builds a schedule already listed: one
        // candidate, compiled and simulated once, under the later name that spells the size
        // out ("tile 512xlib" over "library tile"); the library schedule keeps its name.
        std::map<std::string, size_t> listed; ///< approved schedule JSON -> index in `candidates`
        if (library_measured) listed.emplace(library->to_json(), 0);
        for (int64_t r : rows)
            for (int64_t c : columns) {
                const std::vector<std::string> orders = tile_orders(r, c);
                for (int bank = -1; bank < acc_banks; ++bank)
                    for (int64_t per_row : blocks_per_row)
                        for (const std::string &order : orders)
                            for (int buffers : double_buffers) {
                                const ChipMatmulChoice choice{r, c, bank, per_row, order, buffers};
                                if (choice == ChipMatmulChoice{}) continue; // the library schedule itself
                                Schedule schedule = with_choice(*library, product->func, choice);
                                std::string key = schedule.to_json();
                                if (const auto at = listed.find(key); at != listed.end()) {
                                    if (!library_measured || at->second > 0) candidates[at->second].description = choice.to_string();
                                    continue;
                                }
                                ++result.generated;
                                if (const std::optional<std::string> why = infeasible(choice)) {
                                    ++result.proven_infeasible;
                                    if (reasons.insert(*why).second)
                                        result.infeasible_reasons.push_back(choice.to_string() + ": " + *why);
                                    continue;
                                }
                                listed.emplace(std::move(key), candidates.size());
                                candidates.push_back({std::move(schedule), choice.to_string()});
                            }
            }
    } else {
        // The loop-nest path (vector pipelines, matrix stages): lanes, row blocks, where each
        // producer is computed, reduction splits; a row block in the lanes Z3 refuses before
        // compiling. Candidates whose directives are another's (a knob that means nothing
        // unless another is set) are one candidate.
        const Func out = pipeline.outputs().at(0);
        const ChipLoopNestSpace space(pipeline, chip.vector_bytes, output_shapes);
        const ChipLoopNestConstraints constraints(chip, out.contents()->type.bytes());
        std::set<std::string> seen;
        if (library) seen.insert(library->to_json());
        std::set<std::string> reasons;
        for (const Candidate &c : space.candidates(4096, options.seed)) {
            if (const std::optional<std::string> why = constraints.why_infeasible(space.lane_row_block(c))) {
                ++result.generated;
                ++result.proven_infeasible;
                if (reasons.insert(*why).second) result.infeasible_reasons.push_back(space.describe(c) + ": " + *why);
                continue;
            }
            try {
                space.apply(c, pipeline);
            } catch (const Error &) {
                ++result.generated;
                ++result.infeasible;
                continue;
            }
            if (!seen.insert(pipeline.schedule().to_json()).second) continue;
            ++result.generated;
            candidates.push_back({pipeline.schedule(), space.describe(c)});
        }
        // No library schedule (a pipeline written by hand): the chip's default rule, the empty
        // schedule, is the baseline measured first.
        if (!library && !candidates.empty() && candidates.front().schedule == Schedule{}) library_measured = true;
    }
    result.space_size = int64_t(candidates.size());
    // Beyond a population, a seeded shuffle picks the matmul candidates compiled (the library
    // stays first; Z3 approved them, so each compiles). The loop-nest space lists its own,
    // nearest the default first, and the backend refuses many of those cheaply: they are
    // compiled in that order until a population compiles.
    const size_t first_free = library_measured ? 1 : 0;
    const size_t population = size_t(std::max(options.population, options.budget));
    if (candidates.size() > population && product) {
        std::mt19937_64 rng(options.seed);
        std::shuffle(candidates.begin() + std::ptrdiff_t(first_free), candidates.end(), rng);
        candidates.resize(population);
    }

    // Compile every candidate and estimate its cycles from the timing model: far cheaper than
    // simulating it (a deque: estimators hold pointers to its elements while it grows).
    struct Compiled {
        size_t candidate;
        ChipProgram program;
        ChipEstimate estimate;
        double predicted_learned = 0;
        bool measured = false;
    };
    std::deque<Compiled> compiled;
    bool stopped_compiling = false; ///< candidates were left uncompiled by the run above
    if (product && threads > 1) {
        // Z3's candidates, each compiled (never one program for two): every thread compiles and
        // estimates, each on a copy of the pipeline of its own, and the results are gathered
        // in candidate order, as one thread would have made them.
        std::mutex copies_mutex;
        std::vector<Pipeline> idle_copies;
        std::vector<std::optional<Compiled>> done(candidates.size());
        std::vector<char> refused(candidates.size(), 0);
        parallel_for(candidates.size(), threads, [&](size_t i) {
            if (out_of_time()) return;
            Pipeline mine;
            {
                std::lock_guard<std::mutex> lock(copies_mutex);
                if (idle_copies.empty()) {
                    mine = copy_pipeline(pipeline);
                } else {
                    mine = std::move(idle_copies.back());
                    idle_copies.pop_back();
                }
            }
            try {
                mine.set_schedule(candidates[i].schedule);
                ChipProgram program = compile_for_chip(mine, target, output_shapes);
                ChipEstimate estimate = estimate_chip_cycles(program.program, model, program.problem);
                done[i] = Compiled{i, std::move(program), std::move(estimate)};
            } catch (const Error &) {
                refused[i] = 1;
            }
            std::lock_guard<std::mutex> lock(copies_mutex);
            idle_copies.push_back(std::move(mine));
        });
        for (size_t i = 0; i < candidates.size(); ++i) {
            if (done[i]) compiled.push_back(std::move(*done[i]));
            else if (refused[i]) ++result.infeasible, ++result.approved_but_refused;
        }
    } else {
        // One thread compiles (the directives live on the shared pipeline), the others estimate.
        BackgroundTasks estimates(threads - 1);
        std::set<size_t> programs; ///< hashes of the compiled programs' assembly
        int same_in_a_row = 0;
        for (size_t i = 0; i < candidates.size() && compiled.size() < population && !out_of_time(); ++i) {
            pipeline.set_schedule(candidates[i].schedule);
            try {
                ChipProgram program = compile_for_chip(pipeline, target, output_shapes);
                // A loop knob the compiler ignores here (a library vector op tiles itself) leaves
                // the program as another candidate's: the same program is one candidate, simulated
                // once. (Matmul candidates are Z3's models, each measured for what it says.)
                if (!product && !programs.insert(std::hash<std::string>{}(program.assembly())).second) {
                    ++result.same_program;
                    // Candidates come nearest the default first: when a run of them changes
                    // nothing, the compiler ignores these knobs here and the rest would change
                    // nothing either.
                    if (++same_in_a_row >= kSameProgramRun) {
                        stopped_compiling = i + 1 < candidates.size();
                        break;
                    }
                    continue;
                }
                same_in_a_row = 0;
                Compiled &c = compiled.emplace_back(Compiled{i, std::move(program), {}});
                estimates.push([&c, &model] { c.estimate = estimate_chip_cycles(c.program.program, model, c.program.problem); });
            } catch (const Error &) {
                ++result.infeasible;
                if (product) ++result.approved_but_refused;
            }
        }
        estimates.finish();
    }
    result.ranked = int(compiled.size());
    if (!compiled.empty()) {
        const chipsim::Roofline bound = model.problem_bound(compiled.front().program.problem);
        result.bound_cycles = bound.bound_cycles;
        result.bound_limiter = bound.limiter;
        result.bound_seconds = bound.bound_cycles / cycles_per_second;
    }

    // Rounds: the library, then the best-predicted (the analytic estimate, refined by the learned
    // model once it has trained on this run's measurements), plus a few drawn at random so that
    // the models' accuracy is known on candidates they did not pick. The learned model learns
    // the ratio of measured to estimated cycles. The search stops at the budget, or when no
    // candidate left could beat the best even if the analytic model overestimated it as much as
    // it did the worst measured one.
    struct Measured {
        size_t compiled; ///< index in `compiled`
        int64_t cycles = 0;
    };
    std::vector<Measured> measured;
    LearnedCostModel learned;
    std::mt19937_64 rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
    double worst_overestimate = 0; ///< max over measured of (estimate - measured) / estimate
    const size_t batch_size = size_t(std::max(8, 2 * threads));
    const size_t sampled_per_batch = 2;
    bool first_round = true;
    auto prediction = [&](const Compiled &c) { return c.predicted_learned > 0 ? c.predicted_learned : c.estimate.cycles; };
    while (result.measured < options.budget && !out_of_time()) {
        std::vector<size_t> left;
        for (size_t k = 0; k < compiled.size(); ++k)
            if (!compiled[k].measured) left.push_back(k);
        if (left.empty()) break;
        if (!first_round) {
            // (a plain loop: clang 14's ranges reject views::transform over libstdc++ 12's vector)
            double lowest = compiled[left.front()].estimate.cycles;
            for (size_t k : left) lowest = std::min(lowest, double(compiled[k].estimate.cycles));
            if (lowest * (1 - worst_overestimate - kStopMargin) >= double(result.best_cycles)) break;
        }
        std::stable_sort(left.begin(), left.end(), [&](size_t a, size_t b) {
            const bool la = library_measured && compiled[a].candidate == 0, lb = library_measured && compiled[b].candidate == 0;
            if (la != lb) return la;
            return prediction(compiled[a]) < prediction(compiled[b]);
        });
        const size_t want = std::min({batch_size, left.size(), size_t(options.budget - result.measured)});
        const size_t random_ones = want > sampled_per_batch + 1 ? sampled_per_batch * (first_round ? 2 : 1) : 0;
        std::vector<size_t> batch(left.begin(), left.begin() + std::ptrdiff_t(want - std::min(random_ones, want - 1)));
        std::vector<size_t> rest(left.begin() + std::ptrdiff_t(batch.size()), left.end());
        std::vector<bool> sampled(batch.size(), false);
        std::shuffle(rest.begin(), rest.end(), rng);
        for (size_t i = 0; i < rest.size() && batch.size() < want; ++i) batch.push_back(rest[i]), sampled.push_back(true);
        first_round = false;

        std::vector<int64_t> cycles(batch.size());
        parallel_for(batch.size(), threads, [&](size_t k) {
            ChipRunOptions timing_only;
            timing_only.functional = false;
            cycles[k] = run_on_chip(compiled[batch[k]].program, inputs, timing_only).report.cycles;
        });
        for (size_t k = 0; k < batch.size(); ++k) {
            Compiled &c = compiled[batch[k]];
            c.measured = true;
            TuneTrial t;
            t.trial = result.measured++;
            t.candidate = candidates[c.candidate].description;
            t.cycles = cycles[k];
            t.seconds = double(cycles[k]) / cycles_per_second;
            t.predicted_analytic = c.estimate.cycles / cycles_per_second;
            t.predicted_learned = c.predicted_learned / cycles_per_second;
            t.sampled = sampled[k];
            if (c.candidate == 0 && library_measured) result.library_cycles = cycles[k];
            if (result.best_cycles == 0 || cycles[k] < result.best_cycles) result.best_cycles = cycles[k];
            t.best_so_far = double(result.best_cycles) / cycles_per_second;
            worst_overestimate = std::max(worst_overestimate, (c.estimate.cycles - double(cycles[k])) / c.estimate.cycles);
            learned.add(c.estimate.features, double(cycles[k]) / c.estimate.cycles);
            result.history.push_back(t);
            measured.push_back({batch[k], cycles[k]});
            if (options.progress) options.progress(result.measured, options.budget, t.best_so_far, result.bound_seconds);
        }
        if (learned.train()) {
            std::vector<size_t> unmeasured;
            std::vector<std::vector<float>> rows;
            for (size_t k = 0; k < compiled.size(); ++k)
                if (!compiled[k].measured) unmeasured.push_back(k), rows.push_back(compiled[k].estimate.features);
            if (!rows.empty()) {
                const std::vector<double> ratio = learned.predict_seconds(rows);
                for (size_t i = 0; i < unmeasured.size(); ++i)
                    compiled[unmeasured[i]].predicted_learned = compiled[unmeasured[i]].estimate.cycles * ratio[i];
            }
        }
    }
    size_t measured_count = 0;
    for (const Compiled &c : compiled) measured_count += c.measured;
    result.exhaustive = measured_count == compiled.size() && !stopped_compiling;
    // The models' accuracy on the sampled trials, with the predictions made before measuring.
    for (const char *name : {"analytic", "learned"}) {
        std::vector<double> predicted, seconds;
        for (const TuneTrial &t : result.history) {
            const double p = std::string(name) == "analytic" ? t.predicted_analytic : t.predicted_learned;
            if (t.sampled && p > 0) predicted.push_back(p), seconds.push_back(t.seconds);
        }
        result.model_accuracy.push_back({name, int(predicted.size()), spearman(predicted, seconds), mean_relative_error(predicted, seconds)});
    }
    // The fastest (earliest candidate on ties: the library first) that matches the reference wins.
    std::stable_sort(measured.begin(), measured.end(), [&](const Measured &a, const Measured &b) {
        return a.cycles != b.cycles ? a.cycles < b.cycles : compiled[a.compiled].candidate < compiled[b.compiled].candidate;
    });
    VerifyOptions vo;
    vo.mode = VerifyMode::Sample;
    vo.sample_points = 64;
    vo.seed = options.seed;
    vo.reduction_length = longest_reduction(pipeline);
    vo.tolerance_type = BFloat(16); // the chips multiply fp32 operands rounded to bf16 (as `tessera run` checks them)
    result.best_cycles = 0;
    for (const Measured &mc : measured) {
        const ChipResult run = run_on_chip(compiled[mc.compiled].program, inputs);
        if (!verify_outputs(pipeline, output_shapes, inputs, run.outputs, vo).passed) {
            ++result.wrong; // a schedule never changes results: a compiler bug, kept out
            continue;
        }
        const size_t candidate = compiled[mc.compiled].candidate;
        result.best = candidates[candidate].schedule;
        result.best_candidate = candidates[candidate].description;
        result.best_cycles = mc.cycles;
        result.best_seconds = double(mc.cycles) / cycles_per_second;
        result.best_samples = {result.best_seconds};
        break;
    }
    // The winner, verified, goes to the database (the others were simulated timing-only, so
    // unverified: they stay out).
    if (options.database && result.best_cycles > 0) {
        pipeline.set_schedule(result.best);
        MeasuredSchedule m = measure_on_chip(pipeline, output_shapes, target);
        m.seed = options.seed;
        m.tuner_options = "{\"tuner\": \"chip-z3\", \"budget\": " + std::to_string(options.budget) + "}";
        result.best_record = options.database->add(Workload::of(pipeline, output_shapes), TargetIdentity::of(target), m);
    }
    pipeline.set_schedule(original);
    if (candidates.empty() && result.proven_infeasible > 0)
        throw Error("autotune: no schedule fits " + chip.name + ": all " + std::to_string(result.proven_infeasible) +
                    " candidates were proven infeasible, e.g. the " + result.infeasible_reasons.front());
    if (result.best_cycles == 0)
        throw Error("autotune: no candidate of " + std::to_string(candidates.size()) + " for " + chip.name +
                    " compiled and matched the reference (" + std::to_string(result.infeasible) + " refused by the backend, " +
                    std::to_string(result.proven_infeasible) + " proven infeasible, " + std::to_string(result.wrong) + " wrong)" +
                    (result.infeasible_reasons.empty() ? std::string() : ": " + result.infeasible_reasons.front()));
    return result;
}

} // namespace tessera::internal::autotune
