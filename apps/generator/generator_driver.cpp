// The generator driver (generator.h's generator_main): runs a registered generator and writes
// its kernel library — tuned from the tuning database where it has records, each kernel
// measured — and the library's provenance (library_build.h), as tessera_add_library runs it at
// build time.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <tuple>

#include "tessera/codegen/generator.h"
#include "tessera/error.h"
#include "tessera/library_build.h"
#include "tessera/tuned_schedule.h"
#include "tessera/tuning_db.h"

namespace tessera {

namespace {

const char *kUsage =
    "usage: %s -g NAME -o DIR [-f FUNCTION] [target=host|tsp-mini|npu-edge|<target.json>]\n"
    "          [range=PARAM=LO..HI] [buckets=PARAM=B1,B2,...] [repeats=N]\n"
    "       %s --list\n"
    "Runs the registered generator NAME and writes DIR/lib<FUNCTION>.a and DIR/<FUNCTION>.h\n"
    "(FUNCTION defaults to NAME): a static library and C header of the generated kernel.\n"
    "A ranged generator's library dispatches over its ranges; range= and buckets= replace\n"
    "a registered range's ends or buckets. With TESSERA_TUNING_DB set, each kernel takes the\n"
    "database's best record for its workload (a ranged library adds the tuned shapes as\n"
    "buckets), and the kernels that have none are listed.\n"
    "The library's provenance (target hash, schedules, tuning records, each kernel's chip\n"
    "cycles or median host time of `repeats` runs, default 7) is written as\n"
    "DIR/<FUNCTION>.provenance.json and returned by <FUNCTION>_provenance() in\n"
    "DIR/lib<FUNCTION>_provenance.a (header <FUNCTION>_provenance.h).\n";

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

int positive_count(const std::string &text, const std::string &where) {
    try {
        size_t used = 0;
        const int n = std::stoi(text, &used);
        if (used == text.size() && n >= 1 && n <= 1000) return n;
    } catch (const std::exception &) {
    }
    throw Error(where + ": give a whole number of runs from 1 to 1000");
}

/// With a tuning database, the kernels of the library just written that kept their own
/// schedule, as `tessera gen-lib` lists them.
void print_untuned(const std::vector<BuiltKernel> &kernels, const std::vector<BuiltDispatchLibrary> &dispatch, const char *db) {
    std::string names;
    size_t n = 0;
    auto add = [&](const BuiltKernel &k) {
        if (!k.tuned) names += (n++ ? " " : "") + k.name;
    };
    for (const BuiltKernel &k : kernels) add(k);
    for (const BuiltDispatchLibrary &d : dispatch)
        for (const BuiltKernel &k : d.kernels) add(k);
    if (n) std::cout << "untuned kernels (" << n << ", library schedule; no record in " << db << "): " << names << "\n";
}

} // namespace

int generator_main(int argc, char **argv) {
    const std::string program = argc > 0 ? argv[0] : "generator";
    std::string name, dir, function, target = "host";
    std::vector<std::pair<std::string, std::string>> range_settings; // (range|buckets, P=...)
    bool list = false;
    LibraryBuildOptions build;
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
            else if (a.rfind("repeats=", 0) == 0) build.repeats = positive_count(a.substr(8), a);
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
        // The database compile_to_library consults (TESSERA_TUNING_DB) is the one whose records
        // are applied and listed here.
        const std::optional<TuningDatabase> db = TuningDatabase::open_from_environment({.read_only = true});
        build.db = db ? &*db : nullptr;
        RegisteredGenerator registered = find_generator(name);
        std::vector<BuiltKernel> kernels;
        std::vector<BuiltDispatchLibrary> dispatch;
        LibraryFiles files;
        if (registered.ranged) {
            for (const auto &[kind, setting] : range_settings) override_range(registered.ranges, name, kind, setting);
            const PipelineAtValues at = [&](const std::vector<int64_t> &values) {
                GeneratedPipeline g = registered.ranged(values);
                if (g.output_shapes.empty())
                    throw Error("generator '" + name + "' is ranged but gives no output shapes at its values; return "
                                "GeneratedPipeline(pipeline, {{shape}...})");
                return ShapedPipeline{g.pipeline, g.output_shapes, {}, 1};
            };
            build.cpu = registered.ranged(bucket_grid(registered.ranges).back()).options;
            std::string description = function + " over";
            for (const ShapeRange &r : registered.ranges) description += " " + r.name + "=" + std::to_string(r.lo) + ".." + std::to_string(r.hi);
            dispatch.push_back(build_dispatch_library(at, registered.ranges, function, dir, t, description, build));
            files = dispatch.back().files;
        } else {
            if (!range_settings.empty())
                throw Error(range_settings.front().first + "=" + range_settings.front().second + ": generator '" + name +
                            "' has no ranges; register it with ranges to build a dispatching library");
            GeneratedPipeline g = run_generator(name);
            if (t.kind() == Target::Kind::Chip && g.output_shapes.empty())
                throw Error("generator '" + name + "' gives no output shapes; a library for chip target '" + target +
                            "' has fixed shapes: return GeneratedPipeline(pipeline, {{shape}...})");
            build.cpu = g.options;
            kernels.push_back(build_library_kernel(g.pipeline, g.output_shapes, function, dir, t, build));
            files = kernels.back().files;
        }
        write_provenance(library_provenance(function, t, kernels, dispatch), function + "_provenance", function + ".provenance.json", dir,
                         build.cpu);
        std::cout << "wrote " << files.library << " and " << files.header;
        for (const BuiltKernel &k : kernels) std::cout << " (" << k.schedule_source << ", " << measured_text(k) << ")";
        std::cout << "\n";
        for (const BuiltDispatchLibrary &d : dispatch)
            for (const DispatchBucket &b : d.table.buckets) std::cout << "  " << b.kernel << ": " << b.note << "\n";
        if (db) print_untuned(kernels, dispatch, db->path().c_str());
        return 0;
    } catch (const std::exception &e) {
        std::cerr << "tessera: error: " << e.what() << "\n";
        return 1;
    }
}

} // namespace tessera
