// The generator registry and the driver's command line (generator.h).
#include "tessera/codegen/generator.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>

#include "tessera/codegen/aot.h"
#include "tessera/error.h"

namespace tessera {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, GeneratorFn> generators;
};

Registry &registry() {
    static Registry r;
    return r;
}

const char *kUsage =
    "usage: %s -g NAME -o DIR [-f FUNCTION] [target=host|tsp-mini|npu-edge|<target.json>]\n"
    "       %s --list\n"
    "Runs the registered generator NAME and writes DIR/lib<FUNCTION>.a and DIR/<FUNCTION>.h\n"
    "(FUNCTION defaults to NAME): a static library and C header of the generated kernel.\n";

} // namespace

void register_generator(const std::string &name, GeneratorFn fn) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.generators.emplace(name, std::move(fn)).second)
        throw Error("register_generator: a generator named '" + name + "' is already registered; give each a distinct name");
}

std::vector<std::string> generator_names() {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<std::string> names;
    for (const auto &[name, fn] : r.generators) names.push_back(name);
    return names;
}

GeneratedPipeline run_generator(const std::string &name) {
    GeneratorFn fn;
    {
        Registry &r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        auto it = r.generators.find(name);
        if (it == r.generators.end()) {
            std::string known;
            for (const auto &[n, f] : r.generators) known += (known.empty() ? "" : ", ") + n;
            throw Error("no generator named '" + name + "'; registered: " + (known.empty() ? "(none)" : known));
        }
        fn = it->second;
    }
    return fn();
}

int generator_main(int argc, char **argv) {
    const std::string program = argc > 0 ? argv[0] : "generator";
    std::string name, dir, function, target = "host";
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
        GeneratedPipeline g = run_generator(name);
        if (t.kind() == Target::Kind::Chip && g.output_shapes.empty())
            throw Error("generator '" + name + "' gives no output shapes; a library for chip target '" + target +
                        "' has fixed shapes: return GeneratedPipeline(pipeline, {{shape}...})");
        LibraryFiles files = g.output_shapes.empty()
                                 ? compile_to_library(g.pipeline, function, dir, t, g.options)
                                 : compile_to_library(g.pipeline, function, dir, g.output_shapes, t, g.options);
        std::cout << "wrote " << files.library << " and " << files.header << "\n";
        return 0;
    } catch (const std::exception &e) {
        std::cerr << "tessera: error: " << e.what() << "\n";
        return 1;
    }
}

} // namespace tessera
