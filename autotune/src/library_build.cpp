// Building and measuring the kernels of a generated library, and its provenance
// (library_build.h).
#include "tessera/library_build.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "tessera/codegen/chip_artifact.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/host_features.h"
#include "tessera/codegen/jit.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/tuned_schedule.h"
#include "tessera/workload.h"
#include "tuning_inputs.h"

namespace tessera {

namespace {

using nlohmann::json;

/// A chip kernel's cycles: its artifact as the runtime loads it, on chipsim (timing only: the
/// same cycles as a functional run).
int64_t artifact_cycles(const std::string &artifact_path, const Bindings &inputs) {
    std::ifstream f(artifact_path, std::ios::binary);
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
    const ChipArtifact artifact = decode_chip_artifact(bytes.data(), bytes.size(), artifact_path);
    return run_on_chip(artifact.program, inputs, {.functional = false}).report.cycles;
}

/// A host kernel's median time of `repeats` runs after a warm-up, and the noise
/// ((slowest - fastest) / median) so that a reader can judge a difference.
void time_on_host(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes, const Bindings &inputs,
                  const CpuOptions &cpu, BuiltKernel &k, int repeats) {
    // The code the library holds: the same schedule and code generation options.
    const CompiledKernel kernel = compile_jit(pipeline, output_shapes, Target::host(), cpu);
    std::vector<double> times;
    for (int r = 0; r < repeats + 1; ++r) {
        const auto start = std::chrono::steady_clock::now();
        run_pipeline_kernel(kernel, output_shapes, inputs);
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) times.push_back(ms); // the first run warms caches and the thread pool
    }
    std::sort(times.begin(), times.end());
    k.time_ms = times[times.size() / 2];
    k.noise = k.time_ms > 0 ? (times.back() - times.front()) / k.time_ms : 0;
    k.repeats = repeats;
}

int64_t volume(const std::vector<int64_t> &values) {
    int64_t n = 1;
    for (int64_t v : values) n *= v;
    return n;
}

/// Every integer inside the square brackets of `text` (a canonical form's shapes).
std::set<int64_t> bracketed_integers(const std::string &text) {
    std::set<int64_t> out;
    bool inside = false;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '[') inside = true;
        else if (text[i] == ']') inside = false;
        else if (inside && std::isdigit(static_cast<unsigned char>(text[i])) && (i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
            size_t end = i;
            while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
            if (end - i < 18) out.insert(std::stoll(text.substr(i, end - i)));
            i = end - 1;
        }
    }
    return out;
}

} // namespace

BuiltKernel build_library_kernel(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const std::string &name, const std::string &dir, const Target &target,
                                 const LibraryBuildOptions &options) {
    const bool chip = target.kind() == Target::Kind::Chip;
    if (!chip && target.kind() != Target::Kind::Host)
        throw Error("kernel '" + name + "': target '" + target.name() + "' is neither the host nor a chip");
    BuiltKernel k;
    k.name = name;
    // The tuned schedule on the pipeline itself, so that the host timing and the provenance see
    // what the library holds (compile_to_library, consulting the same database, chooses the
    // same record).
    ScheduleChoice choice;
    if (!output_shapes.empty()) choice = apply_best_schedule(pipeline, output_shapes, target, options.db);
    k.tuned = choice.source == ScheduleChoice::Source::Tuned;
    k.tuning_record_id = k.tuned ? choice.record_id : -1;
    k.schedule_source = k.tuned ? choice.to_string() : "library schedule";
    try {
        k.files = output_shapes.empty() ? compile_to_library(pipeline, name, dir, target, options.cpu)
                                        : compile_to_library(pipeline, name, dir, output_shapes, target, options.cpu);
    } catch (const Error &e) {
        throw Error("kernel '" + name + "' for " + target.name() + ": " + e.what());
    }
    json entry = {{"name", name},
                  {"target", target.name()},
                  {"target_hash", TargetIdentity::of(target).hash},
                  {"schedule_source", k.schedule_source},
                  {"tuned", k.tuned},
                  {"tuning_record_id", k.tuned ? json(k.tuning_record_id) : json(nullptr)},
                  {"schedule", json::parse(pipeline.schedule().to_json())},
                  {"library", k.files.library},
                  {"header", k.files.header}};
    if (!chip) entry["cpu"] = host_features().to_string();
    // Measured on the caller's inputs or random ones. A host library serving any shape, or one
    // with scalar Params or Inputs of symbolic shape, has nothing fixed to measure; one built for
    // another CPU (options.cpu.cpu / .features) may not run here.
    Bindings inputs = options.inputs;
    bool measurable = !output_shapes.empty() && internal::find_params(pipeline.functions()).empty() &&
                      (chip || (options.cpu.cpu.empty() && options.cpu.features.empty()));
    if (measurable && inputs.empty()) {
        try {
            inputs = internal::autotune::random_tuning_inputs(pipeline, 1);
        } catch (const Error &) {
            if (chip) throw;
            measurable = false;
        }
    }
    try {
        if (chip) {
            k.cycles = artifact_cycles(k.files.artifact, inputs);
            entry["artifact"] = k.files.artifact;
            entry["cycles"] = k.cycles;
        } else if (measurable) {
            time_on_host(pipeline, output_shapes, inputs, options.cpu, k, std::max(1, options.repeats));
            entry["time_ms"] = k.time_ms;
            entry["noise"] = k.noise;
            entry["repeats"] = k.repeats;
        }
    } catch (const Error &e) {
        throw Error("kernel '" + name + "' for " + target.name() + ": measuring it: " + e.what());
    }
    k.provenance = entry.dump();
    return k;
}

std::vector<std::vector<int64_t>> tuned_dispatch_points(const PipelineAtValues &at, const DispatchTable &table, const Target &target,
                                                        const TuningDatabase &db) {
    const TargetIdentity identity = TargetIdentity::of(target);
    // The workload at given values, each built once; a value the generator refuses is no point.
    std::map<std::vector<int64_t>, std::string> keys;
    auto key_at = [&](const std::vector<int64_t> &values) -> const std::string & {
        auto [it, fresh] = keys.emplace(values, "");
        if (fresh) try {
                const ShapedPipeline shaped = at(values);
                it->second = Workload::of(shaped.pipeline, shaped.output_shapes).key();
            } catch (const Error &) {
            }
        return it->second;
    };
    // A workload of this pipeline at other values differs from it in its numbers only: records
    // of other pipelines are passed over without building anything.
    auto skeleton = [](std::string text) {
        std::erase_if(text, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        return text;
    };
    std::vector<int64_t> start;
    for (const DispatchParam &p : table.params) start.push_back(p.lo);
    const ShapedPipeline first = at(start);
    const std::string own = skeleton(Workload::of(first.pipeline, first.output_shapes).canonical_form());
    std::set<std::vector<int64_t>> points;
    for (const TuningRecord &r : db.best_per_group({.workload_key = "", .target_name = identity.name, .target_hash = identity.hash})) {
        const std::optional<std::string> canonical = db.workload_canonical_form(r.workload_key);
        if (!canonical || skeleton(*canonical) != own) continue;
        const std::set<int64_t> extents = bracketed_integers(*canonical);
        // Each parameter's candidates: the values at which some dimension that follows it has
        // one of the record's extents.
        std::vector<std::vector<int64_t>> candidates(table.params.size());
        for (const DispatchArgument &a : table.arguments)
            for (size_t d = 0; d < a.param.size(); ++d) {
                if (a.param[d] < 0) continue;
                const DispatchParam &p = table.params[size_t(a.param[d])];
                for (int64_t e : extents) {
                    const int64_t n = e - a.offset_of(d);
                    if (n % a.scale_of(d) != 0) continue;
                    const int64_t v = n / a.scale_of(d);
                    std::vector<int64_t> &c = candidates[size_t(a.param[d])];
                    if (v >= p.lo && v <= p.hi && std::find(c.begin(), c.end(), v) == c.end()) c.push_back(v);
                }
            }
        if (std::any_of(candidates.begin(), candidates.end(), [](const auto &c) { return c.empty(); })) continue;
        // Every combination of the candidates (few: a record has a handful of extents).
        std::vector<size_t> pick(candidates.size(), 0);
        for (;;) {
            std::vector<int64_t> values;
            for (size_t p = 0; p < candidates.size(); ++p) values.push_back(candidates[p][pick[p]]);
            if (key_at(values) == r.workload_key) {
                points.insert(values);
                break;
            }
            size_t p = 0;
            for (; p < pick.size(); ++p) {
                if (++pick[p] < candidates[p].size()) break;
                pick[p] = 0;
            }
            if (p == pick.size()) break;
        }
    }
    return {points.begin(), points.end()};
}

BuiltDispatchLibrary build_dispatch_library(const PipelineAtValues &at, const std::vector<ShapeRange> &ranges, const std::string &name,
                                            const std::string &dir, const Target &target, const std::string &description,
                                            const LibraryBuildOptions &options) {
    BuiltDispatchLibrary out;
    out.table = plan_dispatch_table(name, ranges, at);
    out.table.chip = target.kind() == Target::Kind::Chip;
    out.table.description = description;
    std::vector<std::vector<int64_t>> grid = bucket_grid(ranges);
    if (options.db)
        for (const std::vector<int64_t> &point : tuned_dispatch_points(at, out.table, target, *options.db))
            if (std::find(grid.begin(), grid.end(), point) == grid.end()) {
                verify_dispatch_extents(name, out.table, point, at(point)); // the grid's are verified by the plan
                grid.push_back(point);
            }
    const std::string bucket_dir = (std::filesystem::path(dir) / (name + ".kernels")).string();
    for (const std::vector<int64_t> &values : grid) {
        std::string kernel = name;
        for (size_t p = 0; p < ranges.size(); ++p) kernel += "_" + ranges[p].name + std::to_string(values[p]);
        const ShapedPipeline shaped = at(values);
        LibraryBuildOptions bucket_options = options;
        if (bucket_options.inputs.empty()) bucket_options.inputs = shaped.check_inputs; // the pipeline's own, when it has them
        BuiltKernel k = build_library_kernel(shaped.pipeline, shaped.output_shapes, kernel, bucket_dir, target, bucket_options);
        k.values = values;
        out.kernels.push_back(std::move(k));
    }
    const bool chip = out.table.chip;
    std::stable_sort(out.kernels.begin(), out.kernels.end(), [&](const BuiltKernel &a, const BuiltKernel &b) {
        if (chip && a.cycles != b.cycles) return a.cycles < b.cycles;
        if (!chip && volume(a.values) != volume(b.values)) return volume(a.values) < volume(b.values);
        if (a.tuned != b.tuned) return a.tuned;
        return volume(a.values) < volume(b.values);
    });
    for (const BuiltKernel &k : out.kernels)
        out.table.buckets.push_back(
            {.kernel = k.name, .library = k.files.library, .values = k.values,
             .note = k.schedule_source + ", " + measured_text(k)});
    out.files = write_dispatch_library(out.table, dir, options.cpu);
    std::string schedules; // as compile_to_library over ranges lists them
    for (const DispatchBucket &b : out.table.buckets) schedules += (schedules.empty() ? "" : "; ") + b.kernel + ": " + b.note;
    out.files.schedule = schedules;
    return out;
}

std::string measured_text(const BuiltKernel &k) {
    if (k.cycles >= 0) return std::to_string(k.cycles) + " cycles";
    if (k.repeats == 0) return "not measured";
    char s[96];
    std::snprintf(s, sizeof s, "%.4f ms (median of %d, noise %.0f%%)", k.time_ms, k.repeats, 100.0 * k.noise);
    return s;
}

std::string library_provenance(const std::string &library, const Target &target, const std::vector<BuiltKernel> &kernels,
                               const std::vector<BuiltDispatchLibrary> &dispatch) {
    json p = {{"library", library},
              {"target", target.name()},
              {"target_hash", TargetIdentity::of(target).hash},
              {"compiler_version", compiler_version()},
              {"kernels", json::array()}};
    for (const BuiltKernel &k : kernels) p["kernels"].push_back(json::parse(k.provenance));
    for (const BuiltDispatchLibrary &d : dispatch) {
        json entry = {{"name", d.table.name},
                      {"target", target.name()},
                      {"description", d.table.description},
                      {"library", d.files.library},
                      {"header", d.files.header},
                      {"kernels", json::array()}};
        for (const DispatchParam &r : d.table.params) entry["ranges"][r.name] = std::to_string(r.lo) + ".." + std::to_string(r.hi);
        for (const BuiltKernel &k : d.kernels) {
            entry["kernels"].push_back({{"kernel", k.name}, {"values", k.values}, {"tuned", k.tuned}});
            json bucket = json::parse(k.provenance);
            bucket["dispatch_of"] = d.table.name;
            p["kernels"].push_back(bucket);
        }
        p["dispatch"].push_back(entry);
    }
    return p.dump(2);
}

void write_provenance(const std::string &provenance_json, const std::string &function, const std::string &file_name,
                      const std::string &dir, const CpuOptions &options) {
    std::filesystem::create_directories(dir);
    const std::filesystem::path file = std::filesystem::path(dir) / file_name;
    std::ofstream f(file);
    f << provenance_json << "\n";
    if (!f) throw Error("cannot write the library's provenance " + file.string() + "; check that the folder is writable");
    write_string_library(function, provenance_json, dir, options);
}

} // namespace tessera
