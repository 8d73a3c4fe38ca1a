// `tessera gen-lib SPEC.json -o DIR`: a whole kernel library from the command line — ops of the
// registry with their parameters (lists expand to every combination) for each target, each
// built and measured into DIR/<target>/ by build_library_kernel (library_build.h), tuned from a
// tuning database when it has a record, with the library's provenance as
// DIR/<target>/provenance.json and as a C function, and an optional regression gate against an
// earlier build (--baseline). A ranged parameter (gen_lib_dispatch.h) makes a shape-dispatching
// entry point (build_dispatch_library).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>
#include <tessera/chipsim/target.h>
#include <tessera/codegen/chip_schedules.h>
#include <tessera/codegen/host_schedules.h>
#include <tessera/internal/json_text.h>
#include <tessera/library_build.h>
#include <tessera/tuned_schedule.h>
#include <tessera/tuning_db.h>

#include "cli_common.h"
#include "gen_lib_dispatch.h"

namespace tessera::cli {

namespace {

using nlohmann::json;

struct GenLibOptions {
    std::string spec;
    std::string out;
    std::string db;
    std::string baseline;
    double host_threshold = 0.10;
    int repeats = 7;
    bool json = false;
};

/// One kernel of the library on one target.
struct KernelRequest {
    std::string name;
    std::string op;
    std::map<std::string, std::string> params;
    /// Parameters served as ranges (shape dispatch): one entry point over many kernels.
    std::map<std::string, ParamRange> ranges;
    std::string target;
};

bool c_identifier(const std::string &s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
}

std::string word_of(const json &v, const std::string &where) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number()) return v.dump();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    throw Error(where + " is " + internal::json_excerpt(v) + "; give a number, a string or a list of them");
}

std::string name_part(const std::string &value) {
    std::string s;
    for (char c : value) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return s;
}

/// The kernels a spec asks for, in its order; throws tessera::Error naming the field.
std::vector<KernelRequest> parse_spec(const std::string &path, std::string &library_name) {
    const json spec = internal::parse_json_text(read_text_file(path, "the library spec"), path);
    if (!spec.is_object()) throw Error(path + ": a library spec is an object {\"name\": ..., \"kernels\": [...]}");
    for (auto it = spec.begin(); it != spec.end(); ++it)
        if (it.key() != "name" && it.key() != "kernels")
            throw Error(path + ": unknown field '" + it.key() + "'; a spec has \"name\" and \"kernels\"");
    library_name = spec.contains("name") ? word_of(spec["name"], path + ": \"name\"") : "kernels";
    if (!c_identifier(library_name)) throw Error(path + ": \"name\" '" + library_name + "' is not a C identifier");
    if (!spec.contains("kernels") || !spec["kernels"].is_array() || spec["kernels"].empty())
        throw Error(path + ": \"kernels\" must be a non-empty list of {\"op\": ..., \"params\": {...}, \"targets\": [...]}");
    std::vector<KernelRequest> out;
    std::map<std::string, std::string> seen; // name + target -> where
    for (size_t i = 0; i < spec["kernels"].size(); ++i) {
        const json &k = spec["kernels"][i];
        const std::string where = path + ": kernels[" + std::to_string(i) + "]";
        if (!k.is_object() || !k.contains("op")) throw Error(where + " needs an \"op\" (see 'tessera run --help' for the ops)");
        for (auto it = k.begin(); it != k.end(); ++it)
            if (it.key() != "op" && it.key() != "name" && it.key() != "params" && it.key() != "targets")
                throw Error(where + ": unknown field '" + it.key() + "'; a kernel has \"op\", \"name\", \"params\" and \"targets\"");
        const std::string op = word_of(k["op"], where + ".op");
        const ops::OpSpec *info = nullptr;
        try {
            info = &ops::find_op(op); // an unknown op is an error listing the ops
        } catch (const Error &e) {
            throw Error(where + ".op: " + e.what());
        }
        const std::string base = k.contains("name") ? word_of(k["name"], where + ".name") : op;
        if (!c_identifier(base)) throw Error(where + ".name '" + base + "' is not a C identifier");
        // Parameters: a list is a choice, and the library holds every combination.
        std::vector<std::pair<std::string, std::vector<std::string>>> choices;
        std::map<std::string, ParamRange> ranges;
        if (k.contains("params")) {
            if (!k["params"].is_object()) throw Error(where + ".params must be an object of key: value (or key: [values])");
            for (auto it = k["params"].begin(); it != k["params"].end(); ++it) {
                if (std::none_of(info->params.begin(), info->params.end(), [&](const ops::OpParam &p) { return p.name == it.key(); })) {
                    std::string names;
                    for (const ops::OpParam &p : info->params) names += (names.empty() ? "" : ", ") + p.name;
                    throw Error(where + ".params." + it.key() + ": op " + op + " has no parameter '" + it.key() + "'; its parameters are " + names);
                }
                if (std::optional<ParamRange> range = parse_param_range(it.value(), where + ".params." + it.key())) {
                    ranges[it.key()] = *range;
                    continue;
                }
                std::vector<std::string> values;
                if (it.value().is_array()) {
                    if (it.value().empty()) throw Error(where + ".params." + it.key() + " is an empty list");
                    for (const json &v : it.value()) values.push_back(word_of(v, where + ".params." + it.key()));
                } else {
                    values.push_back(word_of(it.value(), where + ".params." + it.key()));
                }
                choices.emplace_back(it.key(), values);
            }
        }
        std::vector<std::string> targets = {"host"};
        if (k.contains("targets")) {
            targets.clear();
            const json &t = k["targets"];
            if (!t.is_array() || t.empty()) throw Error(where + ".targets must be a non-empty list of targets (host, tsp-mini, npu-edge, a JSON file)");
            for (const json &v : t) {
                targets.push_back(word_of(v, where + ".targets"));
                if (targets.back() == "host") continue;
                try {
                    chipsim::load_target(targets.back());
                } catch (const Error &e) {
                    throw Error(where + ".targets: " + e.what());
                }
            }
        }
        std::vector<size_t> pick(choices.size(), 0);
        for (;;) {
            KernelRequest r;
            r.op = op;
            r.name = base;
            r.ranges = ranges;
            for (size_t c = 0; c < choices.size(); ++c) {
                r.params[choices[c].first] = choices[c].second[pick[c]];
                if (choices[c].second.size() > 1) r.name += "_" + name_part(choices[c].first) + name_part(choices[c].second[pick[c]]);
            }
            for (const std::string &t : targets) {
                r.target = t;
                if (!seen.emplace(r.name + "@" + t, where).second)
                    throw Error(where + ": kernel '" + r.name + "' for " + t + " is also made by " + seen[r.name + "@" + t] +
                                "; give the kernels distinct \"name\"s");
                out.push_back(r);
            }
            size_t c = 0;
            for (; c < choices.size(); ++c) {
                if (++pick[c] < choices[c].second.size()) break;
                pick[c] = 0;
            }
            if (c == choices.size()) break;
        }
    }
    return out;
}

/// The regression gate: each kernel against the same kernel (name and target) in an earlier
/// build's provenance. Chip cycles are exact, so any increase is a regression; a host kernel
/// regresses when its median time exceeds the baseline's by more than `host_threshold` (a
/// fraction), both runs' noise reported. Returns the regressions, one line each; `notes` gets
/// kernels the baseline lacks, host comparisons within the threshold, and improvements.
std::vector<std::string> compare_with_baseline(const std::map<std::string, json> &provenance, const std::string &baseline,
                                               double host_threshold, std::vector<std::string> &notes) {
    if (!std::filesystem::is_directory(baseline))
        throw Error("--baseline " + baseline + ": not a folder; give the -o folder of an earlier gen-lib");
    std::vector<std::string> regressions;
    for (const auto &[folder, p] : provenance) {
        const std::filesystem::path old_file = std::filesystem::path(baseline) / folder / "provenance.json";
        std::map<std::string, int64_t> old_cycles;
        std::map<std::string, std::pair<double, double>> old_times; // median ms, noise
        if (std::filesystem::exists(old_file)) {
            const json old = internal::parse_json_text(read_text_file(old_file.string(), "the baseline's provenance"), old_file.string());
            if (!old.is_object() || !old.contains("kernels") || !old["kernels"].is_array())
                throw Error(old_file.string() + ": not a gen-lib provenance (no \"kernels\" list)");
            for (const json &k : old["kernels"])
                if (k.is_object() && k.contains("name") && k["name"].is_string() && k.contains("cycles") && k["cycles"].is_number_integer())
                    old_cycles[k["name"].get<std::string>()] = k["cycles"].get<int64_t>();
                else if (k.is_object() && k.contains("name") && k["name"].is_string() && k.contains("time_ms") && k["time_ms"].is_number() &&
                         k.contains("noise") && k["noise"].is_number())
                    old_times[k["name"].get<std::string>()] = {k["time_ms"].get<double>(), k["noise"].get<double>()};
        }
        for (const json &k : p["kernels"]) {
            const std::string who = folder + "/" + k["name"].get<std::string>();
            if (k.contains("time_ms")) {
                auto it = old_times.find(k["name"].get<std::string>());
                if (it == old_times.end()) {
                    notes.push_back(who + ": new (not in the baseline)");
                    continue;
                }
                const double now = k["time_ms"].get<double>(), before = it->second.first;
                char line[256];
                std::snprintf(line, sizeof line, "%.4f ms, baseline %.4f ms (%+.1f%%; noise %.0f%% now, %.0f%% then; threshold %.0f%%)", now,
                              before, before > 0 ? 100.0 * (now - before) / before : 0.0, 100.0 * k["noise"].get<double>(),
                              100.0 * it->second.second, 100.0 * host_threshold);
                if (now > before * (1.0 + host_threshold)) regressions.push_back(who + ": " + line);
                else notes.push_back(who + ": " + line);
                continue;
            }
            auto it = old_cycles.find(k["name"].get<std::string>());
            if (it == old_cycles.end()) {
                notes.push_back(who + ": new (not in the baseline)");
                continue;
            }
            const int64_t now = k["cycles"].get<int64_t>(), before = it->second;
            if (now > before) {
                char pct[32];
                std::snprintf(pct, sizeof pct, "%+.1f%%", before > 0 ? 100.0 * double(now - before) / double(before) : 100.0);
                regressions.push_back(who + ": " + std::to_string(now) + " cycles, baseline " + std::to_string(before) + " (" + pct +
                                      "; " + k["schedule_source"].get<std::string>() + ")");
            } else if (now < before) {
                notes.push_back(who + ": faster, " + std::to_string(now) + " cycles, baseline " + std::to_string(before));
            }
        }
    }
    return regressions;
}

/// The target's folder name under DIR: its name (a JSON target's "name", not its path), made
/// safe for a path.
std::string target_folder(const Target &t) {
    const std::string name = t.kind() == Target::Kind::Chip ? chipsim::load_target(t.name()).name : t.name();
    std::string s;
    for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ? c : '_';
    return s;
}

/// The op's words beside a kernel's provenance entry: op, params and description.
void add_op_words(BuiltKernel &k, const std::string &op_name, const ops::OpInstance &op) {
    json entry = json::parse(k.provenance);
    entry["op"] = op_name;
    entry["params"] = op.params;
    entry["description"] = op.description();
    k.provenance = entry.dump();
}

/// `r`'s op at `params` with the target's library schedule (which build_library_kernel
/// replaces with the tuning database's best record for the workload when there is one).
ops::OpInstance op_with_library_schedule(const KernelRequest &r, const std::map<std::string, std::string> &params, const Target &target) {
    ops::OpInstance op = ops::build_op(r.op, params);
    if (target.kind() == Target::Kind::Host) host_schedules::library_schedule(op);
    else apply_chip_library_schedule(op.pipeline, target, op.output_shapes);
    return op;
}

/// "matmul K=48 N=64 dtype=int8 M=1..64".
std::string dispatch_description(const KernelRequest &r) {
    std::string s = r.op;
    for (const auto &[key, value] : r.params) s += " " + key + "=" + value;
    for (const auto &[key, range] : r.ranges) s += " " + key + "=" + std::to_string(range.lo) + ".." + std::to_string(range.hi);
    return s;
}

int gen_lib(const GenLibOptions &o) {
    std::string library_name;
    const std::vector<KernelRequest> requests = parse_spec(o.spec, library_name);
    std::optional<TuningDatabase> db;
    if (!o.db.empty()) {
        if (!std::filesystem::exists(o.db)) throw Error("--db " + o.db + ": the tuning database does not exist");
        set_tuning_database(o.db);
        db.emplace(o.db, TuningDatabaseOptions{.read_only = true});
    } else {
        db = TuningDatabase::open_from_environment({.read_only = true});
    }
    const LibraryBuildOptions build{.db = db ? &*db : nullptr, .repeats = o.repeats, .cpu = {}, .inputs = {}};
    /// One target's folder: its kernels and dispatching libraries, in the spec's order.
    struct Folder {
        std::string dir, target; ///< the spec's target (a name or a JSON path)
        std::vector<BuiltKernel> kernels;
        std::vector<BuiltDispatchLibrary> dispatch;
    };
    std::map<std::string, Folder> folders;
    std::vector<std::string> untuned;
    std::set<std::string> built_names; // folder/name: a bucket kernel must not overwrite another kernel
    auto record = [&](const std::string &folder, const BuiltKernel &k) {
        if (!built_names.insert(folder + "/" + k.name).second)
            throw Error("two kernels for " + folder + " are named '" + k.name +
                        "' (a dispatched kernel's buckets are named <name>_<param><value>); rename one");
        if (!k.tuned) untuned.push_back(folder + "/" + k.name);
        const json entry = json::parse(k.provenance);
        if (!o.json)
            std::printf("%s/%s: %s, %s, %s\n", folder.c_str(), k.name.c_str(), entry["description"].get<std::string>().c_str(),
                        k.tuned ? entry["schedule_source"].get<std::string>().c_str() : "library schedule (untuned)", measured_text(k).c_str());
    };
    for (const KernelRequest &r : requests) {
        const Target target = Target::named(r.target);
        if (target.kind() != Target::Kind::Host && target.kind() != Target::Kind::Chip)
            throw Error("kernel '" + r.name + "': target '" + r.target + "' is neither the host nor a chip");
        const std::string folder_name = target_folder(target);
        Folder &folder = folders[folder_name];
        if (folder.target.empty()) folder.target = r.target;
        else if (folder.target != r.target)
            throw Error("targets '" + folder.target + "' and '" + r.target + "' are both named '" + folder_name +
                        "'; their libraries would share DIR/" + folder_name + ": give one JSON target another \"name\"");
        folder.dir = (std::filesystem::path(o.out) / folder_name).string();
        if (r.ranges.empty()) {
            const ops::OpInstance op = op_with_library_schedule(r, r.params, target);
            LibraryBuildOptions kernel_build = build;
            kernel_build.inputs = op.random_inputs(1); // the op's own (positive where it needs them)
            BuiltKernel k = build_library_kernel(op.pipeline, op.output_shapes, r.name, folder.dir, target, kernel_build);
            add_op_words(k, r.op, op);
            record(folder_name, k);
            folder.kernels.push_back(std::move(k));
            continue;
        }
        // Shape dispatch: one kernel per bucket (in <name>.kernels/), then the entry point.
        std::vector<ShapeRange> ranges;
        for (const auto &[name, range] : r.ranges) ranges.push_back({name, range.lo, range.hi, range.buckets});
        auto params_at = [&](const std::vector<int64_t> &values) {
            std::map<std::string, std::string> params = r.params;
            for (size_t p = 0; p < ranges.size(); ++p) params[ranges[p].name] = std::to_string(values[p]);
            return params;
        };
        const PipelineAtValues at = [&](const std::vector<int64_t> &values) {
            const ops::OpInstance op = op_with_library_schedule(r, params_at(values), target);
            return ShapedPipeline{op.pipeline, op.output_shapes, op.random_inputs(7), op.reduction_length};
        };
        if (!built_names.insert(folder_name + "/" + r.name).second)
            throw Error("two kernels for " + folder_name + " are named '" + r.name + "'; rename one");
        BuiltDispatchLibrary d = build_dispatch_library(at, ranges, r.name, folder.dir, target, dispatch_description(r), build);
        for (BuiltKernel &k : d.kernels) {
            add_op_words(k, r.op, ops::build_op(r.op, params_at(k.values)));
            record(folder_name, k);
        }
        if (!o.json)
            std::printf("%s/%s: %s, one entry point over %zu kernels (tried in the order %s...)\n", folder_name.c_str(), r.name.c_str(),
                        d.table.description.c_str(), d.kernels.size(), d.table.buckets.front().kernel.c_str());
        folder.dispatch.push_back(std::move(d));
    }
    std::map<std::string, json> provenance; // target folder -> its provenance
    json kernels = json::array(), dispatch_libraries = json::array(); // every folder's, for --json
    for (const auto &[name, folder] : folders) {
        const std::string text = library_provenance(library_name, Target::named(folder.target), folder.kernels, folder.dispatch);
        write_provenance(text, library_name + "_provenance", "provenance.json", folder.dir);
        const json &p = provenance[name] = json::parse(text);
        for (const json &k : p["kernels"]) kernels.push_back(k);
        if (p.contains("dispatch"))
            for (const json &d : p["dispatch"]) dispatch_libraries.push_back(d);
    }
    std::vector<std::string> regressions, notes;
    if (!o.baseline.empty()) regressions = compare_with_baseline(provenance, o.baseline, o.host_threshold, notes);
    if (o.json) {
        json out = {{"library", library_name}, {"kernels", kernels}, {"dispatch", dispatch_libraries}, {"untuned", untuned}};
        if (!o.baseline.empty()) out["baseline"] = {{"folder", o.baseline}, {"regressions", regressions}, {"notes", notes}};
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::printf("wrote %zu kernels into %s; provenance: <target>/provenance.json and %s_provenance() in lib%s_provenance.a\n",
                    requests.size(), o.out.c_str(), library_name.c_str(), library_name.c_str());
        if (!untuned.empty()) {
            std::printf("untuned kernels (%zu, library schedule):", untuned.size());
            for (const std::string &u : untuned) std::printf(" %s", u.c_str());
            std::printf("\n");
        }
        for (const std::string &n : notes) std::printf("baseline: %s\n", n.c_str());
    }
    if (!regressions.empty()) {
        std::string list;
        for (const std::string &r : regressions) list += "\n  " + r;
        throw Error(std::to_string(regressions.size()) + " kernel(s) slower than the baseline " + o.baseline + ":" + list);
    }
    return 0;
}

} // namespace

Command add_gen_lib_command(CLI::App &app) {
    auto o = std::make_shared<GenLibOptions>();
    CLI::App *cmd = app.add_subcommand("gen-lib", "build a kernel library (many ops, shapes, dtypes, targets) from a spec");
    cmd->add_option("spec", o->spec, "the library spec (JSON)")->required();
    cmd->add_option("-o,--output", o->out, "the folder to write DIR/<target>/lib<kernel>.a, <kernel>.h, ...")->required();
    cmd->add_option("--db", o->db, "use the best record of this tuning database for each kernel when it has one "
                                   "(default: $TESSERA_TUNING_DB)");
    cmd->add_option("--baseline", o->baseline, "an earlier gen-lib output folder: fail, listing them, if any kernel is slower "
                                               "(chips: exact cycles)");
    cmd->add_option("--host-threshold", o->host_threshold, "with --baseline: how much slower (a fraction) a host kernel's median "
                                                           "may be before it counts as a regression")
        ->check(CLI::Range(0.0, 100.0));
    cmd->add_option("--repeats", o->repeats, "host kernels: timed runs (after one warm-up); the median is kept")->check(CLI::Range(1, 1000));
    cmd->add_flag("--json", o->json, "print what was built as JSON");
    cmd->footer(
        "SPEC.json: {\"name\": \"mylib\", \"kernels\": [{\"op\": \"matmul\", \"name\": \"mm\",\n"
        "  \"params\": {\"M\": [64, 128], \"N\": 64, \"K\": 64, \"dtype\": \"int8\"}, \"targets\": [\"host\", \"tsp-mini\"]}]}\n"
        "Ops and parameters are those of 'tessera run' (see 'tessera run OP --help'); a list of values\n"
        "makes one kernel per value (named <name>_<key><value>). A range (\"M\": \"1..4096\", or {\"buckets\": [16, 64]},\n"
        "or both: {\"range\": \"8..300\", \"buckets\": [64, 300]}) makes one entry point <name> that dispatches each\n"
        "call to a kernel per bucket (default: the powers of two in the range and its end, plus the shapes the\n"
        "database tuned), padding the call into a larger bucket; see <name>.h. Each kernel has the same C signature on\n"
        "every target (chips link -ltessera_chiprt). Kernels without a tuning record are listed as untuned.\n"
        "Writes DIR/<target>/provenance.json and lib<name>_provenance.a with const char *<name>_provenance(void):\n"
        "chip kernels' cycles on chipsim, host kernels' median time of --repeats runs and its noise.\n"
        "--baseline OLD_DIR fails when a chip kernel takes more cycles than in OLD_DIR, or a host kernel's\n"
        "median exceeds OLD_DIR's by more than --host-threshold (default 0.10), listing each.");
    return {cmd, [o] { return gen_lib(*o); }};
}

} // namespace tessera::cli
