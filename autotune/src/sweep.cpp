// Sweep specs and measuring sweep points (sweep.h).
#include "tessera/sweep.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tessera/autotune.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/error.h"
#include "tessera/internal/json_text.h"
#include "tessera/ops/registry.h"
#include "tessera/tuning_replay.h"

namespace tessera {

using nlohmann::json;

namespace {

/// One step of a path into a JSON document: an object key or an array index.
struct PathStep {
    std::string key;
    size_t index = 0;
    bool is_index = false;
};
using JsonPath = std::vector<PathStep>;

JsonPath operator+(JsonPath p, const std::string &key) {
    p.push_back({key, 0, false});
    return p;
}
JsonPath operator+(JsonPath p, size_t index) {
    p.push_back({"", index, true});
    return p;
}

std::string path_text(const JsonPath &p) {
    std::string s;
    for (const PathStep &st : p) s += st.is_index ? "[" + std::to_string(st.index) + "]" : (s.empty() ? "" : ".") + st.key;
    return s.empty() ? "the spec" : s;
}

/// Where a value of an already parsed (so valid) document starts: nlohmann keeps no positions,
/// so the text is walked along the path. Returns the offset of the deepest step found.
class JsonLocator {
public:
    explicit JsonLocator(const std::string &text) : t_(text) {}

    size_t locate(const JsonPath &path) const {
        size_t at = skip_space(0);
        for (const PathStep &step : path) {
            const size_t next = child(at, step);
            if (next == std::string::npos) break;
            at = next;
        }
        return at;
    }

private:
    size_t skip_space(size_t i) const {
        while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\t' || t_[i] == '\n' || t_[i] == '\r')) ++i;
        return i;
    }
    size_t skip_string(size_t i) const { // at the opening quote; returns past the closing one
        for (++i; i < t_.size(); ++i) {
            if (t_[i] == '\\') ++i;
            else if (t_[i] == '"') return i + 1;
        }
        return i;
    }
    size_t skip_value(size_t i) const {
        if (i >= t_.size()) return i;
        if (t_[i] == '"') return skip_string(i);
        if (t_[i] == '{' || t_[i] == '[') {
            int depth = 0;
            while (i < t_.size()) {
                const char c = t_[i];
                if (c == '"') {
                    i = skip_string(i);
                    continue;
                }
                if (c == '{' || c == '[') ++depth;
                if (c == '}' || c == ']') {
                    if (--depth == 0) return i + 1;
                }
                ++i;
            }
            return i;
        }
        while (i < t_.size() && t_[i] != ',' && t_[i] != '}' && t_[i] != ']' && t_[i] != ' ' && t_[i] != '\n' &&
               t_[i] != '\r' && t_[i] != '\t')
            ++i;
        return i;
    }
    size_t child(size_t at, const PathStep &step) const {
        if (at >= t_.size()) return std::string::npos;
        if (t_[at] == '{' && !step.is_index) {
            size_t i = skip_space(at + 1);
            while (i < t_.size() && t_[i] == '"') {
                const size_t end = skip_string(i);
                const std::string key = json::parse(t_.substr(i, end - i)).get<std::string>();
                i = skip_space(end);
                i = skip_space(i + 1); // ':'
                if (key == step.key) return i;
                i = skip_space(skip_value(i));
                if (i < t_.size() && t_[i] == ',') i = skip_space(i + 1);
            }
        } else if (t_[at] == '[' && step.is_index) {
            size_t i = skip_space(at + 1);
            for (size_t n = 0; i < t_.size() && t_[i] != ']'; ++n) {
                if (n == step.index) return i;
                i = skip_space(skip_value(i));
                if (i < t_.size() && t_[i] == ',') i = skip_space(i + 1);
            }
        }
        return std::string::npos;
    }
    const std::string &t_;
};

/// Reads a spec, naming the file, line, column and field of every mistake.
class SpecReader {
public:
    SpecReader(const std::string &text, std::string origin) : text_(text), origin_(std::move(origin)), locator_(text) {}

    [[noreturn]] void fail(const JsonPath &path, const std::string &why) const {
        throw Error(origin_ + ":" + internal::json_line_column(text_, locator_.locate(path)) + ": " + path_text(path) +
                    ": " + why);
    }
    void only_keys(const json &object, const JsonPath &path, std::initializer_list<const char *> allowed) const {
        for (auto it = object.begin(); it != object.end(); ++it)
            if (std::none_of(allowed.begin(), allowed.end(), [&](const char *k) { return it.key() == k; })) {
                std::string list;
                for (const char *k : allowed) list += std::string(list.empty() ? "" : ", ") + k;
                fail(path + it.key(), "unknown field (a spec here takes " + list + ")");
            }
    }
    const json &array(const json &object, const JsonPath &path, const std::string &key) const {
        if (!object.contains(key)) fail(path, "needs \"" + key + "\", a non-empty array");
        const json &v = object[key];
        if (!v.is_array() || v.empty()) fail(path + key, "must be a non-empty array, got " + internal::json_excerpt(v));
        return v;
    }
    std::string word(const json &v, const JsonPath &path) const {
        if (v.is_string()) return v.get<std::string>();
        int64_t i = 0;
        if (internal::json_int64(v, i)) return std::to_string(i);
        if (v.is_number_float()) return v.dump();
        fail(path, "must be a string or a number, got " + internal::json_excerpt(v));
    }
    int64_t integer(const json &object, const JsonPath &path, const std::string &key, int64_t min, int64_t max) const {
        int64_t v = 0;
        if (!internal::json_int64(object[key], v) || v < min || v > max)
            fail(path + key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " +
                                 internal::json_excerpt(object[key]));
        return v;
    }

private:
    const std::string &text_;
    std::string origin_;
    JsonLocator locator_;
};

/// The product of a grid's values, parameter by parameter in the spec's order.
std::vector<std::map<std::string, std::string>> grid_product(const std::vector<std::pair<std::string, std::vector<std::string>>> &grid) {
    std::vector<std::map<std::string, std::string>> out = {{}};
    for (const auto &[name, values] : grid) {
        std::vector<std::map<std::string, std::string>> next;
        for (const auto &partial : out)
            for (const std::string &v : values) {
                auto p = partial;
                p[name] = v;
                next.push_back(std::move(p));
            }
        out = std::move(next);
    }
    return out;
}

/// The most points one spec may have (each is a record, and a compile or a tuning run).
constexpr int64_t kMaxSweepPoints = 100000;

json tuner_json(const SweepSpec &spec, const SweepPoint &p) {
    if (p.chip || !p.tune) return {{"tuner", "library-schedule"}, {"sweep", spec.name}, {"repetitions", spec.tuner.repetitions}};
    return {{"tuner", "host-evolutionary"}, {"sweep", spec.name}, {"budget", spec.tuner.budget},
            {"repetitions", spec.tuner.repetitions}, {"time_s", spec.tuner.time_s}};
}

} // namespace

SweepSpec SweepSpec::parse(const std::string &text, const std::string &origin, bool tune) {
    const json doc = internal::parse_json_text(text, origin);
    const SpecReader in(text, origin);
    const JsonPath root;
    if (!doc.is_object()) in.fail(root, "must be a JSON object with \"ops\" and \"targets\"");
    in.only_keys(doc, root, {"name", "ops", "targets", "tuner"});
    SweepSpec spec;
    if (doc.contains("name")) {
        if (!doc["name"].is_string()) in.fail(root + "name", "must be a string");
        spec.name = doc["name"].get<std::string>();
    }
    if (doc.contains("tuner")) {
        const json &t = doc["tuner"];
        const JsonPath tp = root + "tuner";
        if (!t.is_object()) in.fail(tp, "must be an object");
        in.only_keys(t, tp, {"budget", "repetitions", "seed", "time_s"});
        if (t.contains("budget")) spec.tuner.budget = int(in.integer(t, tp, "budget", 1, 1000000));
        if (t.contains("repetitions")) spec.tuner.repetitions = int(in.integer(t, tp, "repetitions", 1, 1000));
        if (t.contains("seed")) spec.tuner.seed = uint64_t(in.integer(t, tp, "seed", 0, std::numeric_limits<int64_t>::max()));
        if (t.contains("time_s")) {
            if (!t["time_s"].is_number() || t["time_s"].get<double>() < 0 || t["time_s"].get<double>() > 1e9)
                in.fail(tp + "time_s", "must be a number of seconds in [0, 1e9]");
            spec.tuner.time_s = t["time_s"].get<double>();
        }
    }

    struct NamedTarget {
        std::string name;
        bool chip;
        std::string hash;
    };
    std::vector<NamedTarget> targets;
    const json &target_list = in.array(doc, root, "targets");
    for (size_t i = 0; i < target_list.size(); ++i) {
        const JsonPath tp = root + "targets" + i;
        if (!target_list[i].is_string()) in.fail(tp, "must be a target name (host, tsp-mini, npu-edge) or a target file");
        const std::string name = target_list[i].get<std::string>();
        try {
            const Target t = Target::named(name);
            if (t.kind() != Target::Kind::Host && t.kind() != Target::Kind::Chip)
                in.fail(tp, "'" + name + "' is not tuned (it measures no speed); use host, a chip or a target file");
            targets.push_back({name, t.kind() == Target::Kind::Chip, TargetIdentity::of(t).hash});
        } catch (const Error &e) {
            const std::string what = e.what();
            if (what.rfind(origin, 0) == 0) throw;
            in.fail(tp, what);
        }
    }

    const json &ops_list = in.array(doc, root, "ops");
    for (size_t i = 0; i < ops_list.size(); ++i) {
        const JsonPath op_path = root + "ops" + i;
        const json &entry = ops_list[i];
        if (!entry.is_object()) in.fail(op_path, "must be an object like {\"op\": \"matmul\", \"grid\": {...}}");
        in.only_keys(entry, op_path, {"op", "grid", "dtypes"});
        if (!entry.contains("op") || !entry["op"].is_string()) in.fail(op_path, "needs \"op\", the name of a registry op");
        const std::string op_name = entry["op"].get<std::string>();
        const ops::OpSpec *op_spec = nullptr;
        try {
            op_spec = &ops::find_op(op_name);
        } catch (const Error &e) {
            in.fail(op_path + "op", e.what());
        }
        auto has_param = [&](const std::string &p) {
            return std::any_of(op_spec->params.begin(), op_spec->params.end(), [&](const ops::OpParam &q) { return q.name == p; });
        };
        std::vector<std::pair<std::string, std::vector<std::string>>> grid;
        if (entry.contains("grid")) {
            const json &g = entry["grid"];
            if (!g.is_object()) in.fail(op_path + "grid", "must be an object of parameter -> array of values");
            for (auto it = g.begin(); it != g.end(); ++it) {
                const JsonPath gp = op_path + "grid" + it.key();
                if (!has_param(it.key())) in.fail(gp, op_name + " has no parameter " + it.key() + " (see 'tessera run " + op_name + " --help')");
                const json &values = it.value().is_array() ? it.value() : json::array({it.value()});
                if (values.empty()) in.fail(gp, "must list at least one value");
                std::vector<std::string> words;
                for (size_t k = 0; k < values.size(); ++k)
                    words.push_back(in.word(values[k], it.value().is_array() ? gp + k : gp));
                grid.emplace_back(it.key(), std::move(words));
            }
        }
        if (entry.contains("dtypes")) {
            const JsonPath dp = op_path + "dtypes";
            if (!has_param("dtype")) in.fail(dp, op_name + " takes no dtype");
            if (std::any_of(grid.begin(), grid.end(), [](const auto &g) { return g.first == "dtype"; }))
                in.fail(dp, "give the dtypes either here or as grid.dtype, not both");
            const json &d = in.array(entry, op_path, "dtypes");
            std::vector<std::string> words;
            for (size_t k = 0; k < d.size(); ++k) {
                if (!d[k].is_string()) in.fail(dp + k, "must be a dtype name (int8 uint8 int16 int32 bf16 fp16 fp32)");
                words.push_back(d[k].get<std::string>());
            }
            grid.emplace_back("dtype", std::move(words));
        }
        // Counted before anything is built: a grid of a few long lists multiplies quickly.
        double count = double(targets.size());
        for (const auto &g : grid) count *= double(g.second.size());
        if (double(spec.points.size()) + count > double(kMaxSweepPoints))
            in.fail(op_path + "grid", "the sweep would have more than " + std::to_string(kMaxSweepPoints) +
                                          " points; split it into several specs");
        for (const auto &params : grid_product(grid)) {
            std::string words;
            try {
                words = ops::build_op(op_name, params).description();
            } catch (const Error &e) {
                // Name the grid value that is wrong when the message names a parameter.
                JsonPath where = op_path + "grid";
                for (const auto &[name, value] : params)
                    if (std::string(e.what()).find(name) != std::string::npos) {
                        where = where + name;
                        break;
                    }
                in.fail(where, e.what());
            }
            for (const NamedTarget &t : targets) {
                SweepPoint p;
                p.op = op_name;
                p.params = params;
                p.target = t.name;
                p.words = words;
                p.chip = t.chip;
                p.tune = tune && !t.chip;
                spec.points.push_back(std::move(p));
                SweepPoint &q = spec.points.back();
                q.key = fnv1a_hex(json{{"words", q.words}, {"target", t.hash}, {"tuner", tuner_json(spec, q)}, {"seed", spec.tuner.seed}}.dump());
            }
        }
    }
    return spec;
}

SweepSpec SweepSpec::load(const std::string &path, bool tune) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("cannot read the sweep spec '" + path + "'");
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return parse(text, path, tune);
}

MeasuredSchedule measure_sweep_point(const SweepSpec &spec, const SweepPoint &point) {
    ops::OpInstance op = ops::build_op(point.op, point.params);
    const Target target = Target::named(point.target);
    MeasuredSchedule m;
    if (point.chip) {
        apply_chip_library_schedule(op.pipeline, target, op.output_shapes);
        m = measure_on_chip(op.pipeline, op.output_shapes, target);
    } else if (!point.tune) {
        host_schedules::library_schedule(op);
        m = measure_on_host(op.pipeline, op.output_shapes, target, op.random_inputs(spec.tuner.seed), spec.tuner.repetitions);
    } else {
        TuneOptions o;
        o.budget = spec.tuner.budget;
        o.repetitions = spec.tuner.repetitions;
        o.seed = spec.tuner.seed;
        o.time_budget_s = spec.tuner.time_s;
        const TuneResult r = autotune(op.pipeline, op.output_shapes, target, o);
        m.schedule = r.best;
        m.measurement = Measurement::host_seconds(r.best_samples);
        // The tuning curve, for `tessera plot`: every measured candidate in order.
        // With each, what the cost models predicted before it was measured (0: no prediction).
        json history = json::array(), best = json::array(), analytic = json::array(), learned = json::array();
        for (const TuneTrial &t : r.history) {
            history.push_back(t.seconds);
            best.push_back(t.best_so_far);
            analytic.push_back(t.predicted_analytic);
            learned.push_back(t.predicted_learned);
        }
        m.details = json{{"candidate", r.best_candidate}, {"gflops", r.gflops}, {"history", history}, {"best_so_far", best},
                         {"predicted_analytic", analytic}, {"predicted_learned", learned}}
                        .dump();
    }
    m.seed = spec.tuner.seed;
    m.tuner_options = tuner_json(spec, point).dump();
    m.op_words = point.words;
    return m;
}

int64_t store_sweep_point(TuningDatabase &db, const SweepPoint &point, const MeasuredSchedule &measured) {
    const ops::OpInstance op = ops::build_op(point.op, point.params);
    const Workload workload = Workload::of(op.pipeline, op.output_shapes, point.words);
    return db.add_sweep_point(point.key, point.description(), workload, TargetIdentity::of(Target::named(point.target)),
                              measured);
}

} // namespace tessera
