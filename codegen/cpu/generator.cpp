// The generator registry and the driver's command line (generator.h).
#include "tessera/codegen/generator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <tuple>

#include "tessera/codegen/aot.h"
#include "tessera/error.h"

namespace tessera {

namespace {

/// A registered generator: fixed (fn) or ranged (ranges and ranged).
struct Generator {
    GeneratorFn fn;
    std::vector<ShapeRange> ranges;
    RangedGeneratorFn ranged;
};

struct Registry {
    std::mutex mutex;
    std::map<std::string, Generator> generators;
};

Registry &registry() {
    static Registry r;
    return r;
}

const char *kUsage =
    "usage: %s -g NAME -o DIR [-f FUNCTION] [target=host|tsp-mini|npu-edge|<target.json>]\n"
    "          [range=PARAM=LO..HI] [buckets=PARAM=B1,B2,...]\n"
    "       %s --list\n"
    "Runs the registered generator NAME and writes DIR/lib<FUNCTION>.a and DIR/<FUNCTION>.h\n"
    "(FUNCTION defaults to NAME): a static library and C header of the generated kernel.\n"
    "A ranged generator's library dispatches over its ranges; range= and buckets= replace\n"
    "a registered range's ends or buckets. With TESSERA_TUNING_DB set, each kernel takes the\n"
    "database's best record for its workload, and the kernels that have none are listed.\n";

/// With a tuning database (TESSERA_TUNING_DB, as a build running tessera_add_library passes it
/// on), prints the kernels of the library just written that kept the library schedule, as
/// `tessera gen-lib` does. `schedules` is LibraryFiles::schedule: one kernel's schedule, or a
/// dispatching library's "<kernel>: <schedule>; ..." for its buckets.
void print_untuned(const std::string &function, const std::string &schedules, bool dispatching) {
    const char *db = std::getenv("TESSERA_TUNING_DB");
    if (!db || !*db) return;
    std::vector<std::string> untuned;
    if (!dispatching) {
        if (schedules.rfind("tuned", 0) != 0) untuned.push_back(function);
    } else {
        for (size_t at = 0; at < schedules.size();) {
            size_t end = schedules.find("; ", at);
            if (end == std::string::npos) end = schedules.size();
            const std::string bucket = schedules.substr(at, end - at);
            const size_t colon = bucket.find(": ");
            if (colon != std::string::npos && bucket.compare(colon + 2, 5, "tuned") != 0) untuned.push_back(bucket.substr(0, colon));
            at = end + 2;
        }
    }
    if (untuned.empty()) return;
    std::string names;
    for (const std::string &n : untuned) names += (names.empty() ? "" : " ") + n;
    std::cout << "untuned kernels (" << untuned.size() << ", library schedule; no record in " << db << "): " << names << "\n";
}

void add(const std::string &name, Generator g) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.generators.emplace(name, std::move(g)).second)
        throw Error("register_generator: a generator named '" + name + "' is already registered; give each a distinct name");
}

Generator find(const std::string &name) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.generators.find(name);
    if (it == r.generators.end()) {
        std::string known;
        for (const auto &[n, f] : r.generators) known += (known.empty() ? "" : ", ") + n;
        throw Error("no generator named '" + name + "'; registered: " + (known.empty() ? "(none)" : known));
    }
    return it->second;
}

/// Applies range=P=LO..HI or buckets=P=B1,B2 (`setting` without its "range="/"buckets=").
void override_range(std::vector<ShapeRange> &ranges, const std::string &generator, const std::string &kind, const std::string &setting) {
    const std::string where = kind + "=" + setting;
    const size_t eq = setting.find('=');
    if (eq == std::string::npos) throw Error(where + ": write " + kind + "=PARAM=" + (kind == "range" ? "LO..HI" : "B1,B2,..."));
    const std::string param = setting.substr(0, eq), value = setting.substr(eq + 1);
    auto it = std::find_if(ranges.begin(), ranges.end(), [&](const ShapeRange &r) { return r.name == param; });
    if (it == ranges.end()) {
        std::string known;
        for (const ShapeRange &r : ranges) known += (known.empty() ? "" : ", ") + r.name;
        throw Error(where + ": generator '" + generator + "' has no range " + param + " (its ranges: " + (known.empty() ? "none" : known) + ")");
    }
    if (kind == "range") std::tie(it->lo, it->hi) = parse_dispatch_range(value, where);
    else it->buckets = parse_dispatch_buckets(value, where);
}

} // namespace

void register_generator(const std::string &name, GeneratorFn fn) { add(name, {.fn = std::move(fn), .ranges = {}, .ranged = {}}); }

void register_generator(const std::string &name, std::vector<ShapeRange> ranges, RangedGeneratorFn fn) {
    if (ranges.empty()) throw Error("register_generator: the ranged generator '" + name + "' has no ranges");
    add(name, {.fn = {}, .ranges = std::move(ranges), .ranged = std::move(fn)});
}

std::vector<std::string> generator_names() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<std::string> names;
    for (const auto &[name, fn] : r.generators) names.push_back(name);
    return names;
}

GeneratedPipeline run_generator(const std::string &name) {
    const Generator g = find(name);
    if (!g.fn) throw Error("generator '" + name + "' is ranged: it builds a pipeline per shape, not one");
    return g.fn();
}

int generator_main(int argc, char **argv) {
    const std::string program = argc > 0 ? argv[0] : "generator";
    std::string name, dir, function, target = "host";
    std::vector<std::pair<std::string, std::string>> range_settings; // (range|buckets, P=...)
    bool list = false;
    try {
        for (int i = 1; i < argc; ++i) {
            const std::string a = argv[i];
            auto value = [&](const char *flag) -> std::string {
                if (i + 1 >= argc) throw Error(std::string(flag) + " needs a value");
                return argv[++i];
            };
            if (a == "-g") name = value("-g");
            else if (a == "-o") dir = value("-o");
            else if (a == "-f") function = value("-f");
            else if (a.rfind("target=", 0) == 0) target = a.substr(7);
            else if (a.rfind("range=", 0) == 0) range_settings.emplace_back("range", a.substr(6));
            else if (a.rfind("buckets=", 0) == 0) range_settings.emplace_back("buckets", a.substr(8));
            else if (a == "--list") list = true;
            else if (a == "-h" || a == "--help") {
                std::printf(kUsage, program.c_str(), program.c_str());
                return 0;
            } else throw Error("unknown argument '" + a + "' (see --help)");
        }
        if (list) {
            for (const std::string &n : generator_names()) std::cout << n << "\n";
            return 0;
        }
        if (name.empty() || dir.empty()) throw Error("both -g NAME and -o DIR are required (see --help)");
        if (function.empty()) function = name;
        const Target t = Target::named(target);
        Generator registered = find(name);
        if (registered.ranged) {
            for (const auto &[kind, setting] : range_settings) override_range(registered.ranges, name, kind, setting);
            const PipelineAtValues at = [&](const std::vector<int64_t> &values) {
                GeneratedPipeline g = registered.ranged(values);
                if (g.output_shapes.empty())
                    throw Error("generator '" + name + "' is ranged but gives no output shapes at its values; return "
                                "GeneratedPipeline(pipeline, {{shape}...})");
                return ShapedPipeline{g.pipeline, g.output_shapes, {}, 1};
            };
            const LibraryFiles files = compile_to_library(at, registered.ranges, function, dir, t, registered.ranged(bucket_grid(registered.ranges).back()).options);
            std::cout << "wrote " << files.library << " and " << files.header << " (" << files.schedule << ")\n";
            print_untuned(function, files.schedule, true);
            return 0;
        }
        if (!range_settings.empty())
            throw Error(range_settings.front().first + "=" + range_settings.front().second + ": generator '" + name +
                        "' has no ranges; register it with ranges to build a dispatching library");
        GeneratedPipeline g = run_generator(name);
        if (t.kind() == Target::Kind::Chip && g.output_shapes.empty())
            throw Error("generator '" + name + "' gives no output shapes; a library for chip target '" + target +
                        "' has fixed shapes: return GeneratedPipeline(pipeline, {{shape}...})");
        LibraryFiles files = g.output_shapes.empty()
                                 ? compile_to_library(g.pipeline, function, dir, t, g.options)
                                 : compile_to_library(g.pipeline, function, dir, g.output_shapes, t, g.options);
        std::cout << "wrote " << files.library << " and " << files.header << "\n";
        print_untuned(function, files.schedule, false);
        return 0;
    } catch (const std::exception &e) {
        std::cerr << "tessera: error: " << e.what() << "\n";
        return 1;
    }
}

} // namespace tessera
