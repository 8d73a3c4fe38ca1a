// The generator registry (generator.h); the driver that runs generators is apps/generator.
#include "tessera/codegen/generator.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

#include "tessera/error.h"

namespace tessera {

namespace {

struct Registry {
    std::mutex mutex;
    std::map<std::string, RegisteredGenerator> generators;
};

Registry &registry() {
    static Registry r;
    return r;
}

void add(const std::string &name, RegisteredGenerator g) {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.generators.emplace(name, std::move(g)).second)
        throw Error("register_generator: a generator named '" + name + "' is already registered; give each a distinct name");
}

} // namespace

RegisteredGenerator find_generator(const std::string &name) {
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
    const RegisteredGenerator g = find_generator(name);
    if (!g.fn) throw Error("generator '" + name + "' is ranged: it builds a pipeline per shape, not one");
    return g.fn();
}

} // namespace tessera
