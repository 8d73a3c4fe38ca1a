// The stored JSON form of a Schedule (version 1). It is what the autotuner writes to its
// database and what users keep next to a kernel, so it is stable and round-trips exactly.
//
//   {"version": 1,
//    "funcs": [                                  // ascending by name
//      {"name": "C",
//       "stages": [                              // ascending by index; 0 = pure definition
//         {"stage": 1,
//          "directives": [                       // in recording order
//            {"op": "tile", "vars": ["i", "j", "io", "jo", "ii", "ji"], "factors": [64, 64]},
//            {"op": "vectorize", "vars": ["ji"], "factors": [16], "tail": "guard_with_if"},
//            {"op": "compute_at", "func": "relu", "vars": ["xo"], "consumer_stage": 0},
//            {"op": "stage", "func": "C", "vars": ["ko"], "memory": "SPAD"},
//            {"op": "store_in", "memory": "MEM", "bank": 3},
//            {"op": "layout", "layout": {"order": ["n", "c", "h", "w"],
//                                        "blocks": [{"dim": "c", "factor": 16}],
//                                        "padding": {"w": 1}, "alignment": 8}},
//            {"op": "tensorize", "unit": "mxm", "vars": ["ii", "ji", "ki"]}]}]}]}
//
// Every directive has "op"; the other fields appear only when they differ from their defaults
// (vars [], factors [], tail "auto", func "", consumer_stage -1, memory "Auto", bank -1,
// layout default, unit ""). Unknown fields are errors, so a typo never silently drops a
// directive.
#include <limits>

#include "tessera/error.h"
#include "tessera/internal/json_text.h"
#include "tessera/schedule.h"

namespace tessera {

namespace {

using nlohmann::json;

json layout_to_json(const Layout &l) {
    json j = json::object();
    if (!l.order.empty()) j["order"] = l.order;
    if (!l.blocks.empty()) {
        json b = json::array();
        for (const auto &blk : l.blocks) b.push_back({{"dim", blk.dim}, {"factor", blk.factor}});
        j["blocks"] = b;
    }
    if (!l.padding.empty()) {
        json p = json::object();
        for (const auto &[dim, pad] : l.padding) p[dim] = pad;
        j["padding"] = p;
    }
    if (l.alignment != 1) j["alignment"] = l.alignment;
    return j;
}

json directive_to_json(const Directive &d) {
    json j = json::object();
    j["op"] = directive_kind_name(d.kind);
    if (!d.func.empty()) j["func"] = d.func;
    if (d.consumer_stage != -1) j["consumer_stage"] = d.consumer_stage;
    if (!d.unit.empty()) j["unit"] = d.unit;
    if (!d.vars.empty()) j["vars"] = d.vars;
    if (!d.factors.empty()) j["factors"] = d.factors;
    if (d.tail != TailStrategy::Auto) j["tail"] = tail_strategy_name(d.tail);
    if (d.memory != MemoryKind::Auto) j["memory"] = memory_kind_name(d.memory);
    if (d.bank != -1) j["bank"] = d.bank;
    if (!d.layout.is_default()) j["layout"] = layout_to_json(d.layout);
    return j;
}

/// Reading with the path of every value, so that errors point at the bad field:
/// "<origin>: funcs[0].stages[1].directives[2].factors[0]: expected an integer".
class Reader {
public:
    explicit Reader(std::string origin) : origin_(std::move(origin)) {}

    [[noreturn]] void fail(const std::string &path, const std::string &why) const {
        throw Error(origin_ + ": " + path + ": " + why);
    }
    const json &field(const json &obj, const std::string &path, const char *key) const {
        auto it = obj.find(key);
        if (it == obj.end()) fail(path, std::string("missing field \"") + key + "\"");
        return *it;
    }
    void only_fields(const json &obj, const std::string &path, std::initializer_list<const char *> allowed) const {
        if (!obj.is_object()) fail(path, "expected an object, found " + internal::json_excerpt(obj));
        for (auto it = obj.begin(); it != obj.end(); ++it) {
            bool ok = false;
            std::string names;
            for (const char *a : allowed) {
                ok = ok || it.key() == a;
                names += std::string(names.empty() ? "" : ", ") + a;
            }
            if (!ok) fail(path, "unknown field " + internal::json_excerpt(it.key()) + "; the fields are " + names);
        }
    }
    std::string str(const json &v, const std::string &path) const {
        if (!v.is_string()) fail(path, "expected a string, found " + internal::json_excerpt(v));
        return v.get<std::string>();
    }
    /// An integer in [lo, hi]; the Directive fields that are `int` get int32 bounds here, so a
    /// large value is refused rather than truncated.
    int64_t integer(const json &v, const std::string &path, int64_t lo = std::numeric_limits<int64_t>::min(),
                    int64_t hi = std::numeric_limits<int64_t>::max()) const {
        int64_t x = 0;
        if (!internal::json_int64(v, x))
            fail(path, "expected an integer" + std::string(v.is_number_unsigned() ? " that fits 64 bits" : "") +
                           ", found " + internal::json_excerpt(v));
        if (x < lo || x > hi)
            fail(path, "is " + std::to_string(x) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi));
        return x;
    }
    std::vector<std::string> strings(const json &v, const std::string &path) const {
        if (!v.is_array()) fail(path, "expected an array of strings, found " + internal::json_excerpt(v));
        std::vector<std::string> out;
        for (size_t i = 0; i < v.size(); ++i) out.push_back(str(v[i], path + "[" + std::to_string(i) + "]"));
        return out;
    }
    std::vector<int64_t> integers(const json &v, const std::string &path) const {
        if (!v.is_array()) fail(path, "expected an array of integers, found " + internal::json_excerpt(v));
        std::vector<int64_t> out;
        for (size_t i = 0; i < v.size(); ++i) out.push_back(integer(v[i], path + "[" + std::to_string(i) + "]"));
        return out;
    }
    /// Runs a name parser (parse_tail_strategy, ...) whose tessera::Error lacks the path.
    template <typename F> auto parse_with_path(const std::string &path, F f) const {
        try {
            return f();
        } catch (const Error &e) {
            fail(path, e.what());
        }
    }

private:
    std::string origin_;
};

constexpr int64_t kIntMax = std::numeric_limits<int>::max();

Layout layout_from_json(const Reader &r, const json &j, const std::string &path) {
    r.only_fields(j, path, {"order", "blocks", "padding", "alignment"});
    Layout l;
    if (j.contains("order")) l.order = r.strings(j["order"], path + ".order");
    if (j.contains("blocks")) {
        const json &b = j["blocks"];
        if (!b.is_array()) r.fail(path + ".blocks", "expected an array, found " + internal::json_excerpt(b));
        for (size_t i = 0; i < b.size(); ++i) {
            std::string p = path + ".blocks[" + std::to_string(i) + "]";
            r.only_fields(b[i], p, {"dim", "factor"});
            l.blocks.push_back({r.str(r.field(b[i], p, "dim"), p + ".dim"),
                                r.integer(r.field(b[i], p, "factor"), p + ".factor")});
        }
    }
    if (j.contains("padding")) {
        const json &p = j["padding"];
        if (!p.is_object())
            r.fail(path + ".padding", "expected an object of dim: elements, found " + internal::json_excerpt(p));
        for (auto it = p.begin(); it != p.end(); ++it)
            l.padding[it.key()] = r.integer(it.value(), path + ".padding." + it.key());
    }
    if (j.contains("alignment")) l.alignment = r.integer(j["alignment"], path + ".alignment");
    return l;
}

Directive directive_from_json(const Reader &r, const json &j, const std::string &path) {
    r.only_fields(j, path, {"op", "func", "consumer_stage", "unit", "vars", "factors", "tail", "memory", "bank", "layout"});
    Directive d;
    d.kind = r.parse_with_path(path + ".op", [&] { return parse_directive_kind(r.str(r.field(j, path, "op"), path + ".op")); });
    if (j.contains("func")) d.func = r.str(j["func"], path + ".func");
    if (j.contains("consumer_stage"))
        d.consumer_stage = static_cast<int>(r.integer(j["consumer_stage"], path + ".consumer_stage", -1, kIntMax));
    if (j.contains("unit")) d.unit = r.str(j["unit"], path + ".unit");
    if (j.contains("vars")) d.vars = r.strings(j["vars"], path + ".vars");
    if (j.contains("factors")) d.factors = r.integers(j["factors"], path + ".factors");
    if (j.contains("tail"))
        d.tail = r.parse_with_path(path + ".tail", [&] { return parse_tail_strategy(r.str(j["tail"], path + ".tail")); });
    if (j.contains("memory"))
        d.memory = r.parse_with_path(path + ".memory", [&] { return parse_memory_kind(r.str(j["memory"], path + ".memory")); });
    if (j.contains("bank")) d.bank = static_cast<int>(r.integer(j["bank"], path + ".bank", -1, kIntMax));
    if (j.contains("layout")) d.layout = layout_from_json(r, j["layout"], path + ".layout");
    return d;
}

} // namespace

std::string Schedule::to_json(int indent) const {
    json funcs_j = json::array();
    for (const auto &[name, fs] : funcs) {
        if (fs.empty()) continue;
        json stages_j = json::array();
        for (const auto &[s, ds] : fs.stages) {
            if (ds.empty()) continue;
            json dj = json::array();
            for (const auto &d : ds) dj.push_back(directive_to_json(d));
            stages_j.push_back({{"stage", s}, {"directives", dj}});
        }
        funcs_j.push_back({{"name", name}, {"stages", stages_j}});
    }
    json root = {{"version", 1}, {"funcs", funcs_j}};
    return root.dump(indent);
}

Schedule Schedule::from_json(const std::string &text, const std::string &origin) {
    const json root = internal::parse_json_text(text, origin);
    const Reader r(origin);
    r.only_fields(root, "(root)", {"version", "funcs"});
    int64_t version = r.integer(r.field(root, "(root)", "version"), "version");
    if (version != 1) r.fail("version", "unsupported version " + std::to_string(version) + "; this Tessera reads version 1");
    const json &funcs_j = r.field(root, "(root)", "funcs");
    if (!funcs_j.is_array()) r.fail("funcs", "expected an array, found " + internal::json_excerpt(funcs_j));
    Schedule s;
    for (size_t fi = 0; fi < funcs_j.size(); ++fi) {
        std::string fp = "funcs[" + std::to_string(fi) + "]";
        r.only_fields(funcs_j[fi], fp, {"name", "stages"});
        std::string name = r.str(r.field(funcs_j[fi], fp, "name"), fp + ".name");
        if (s.funcs.count(name)) r.fail(fp + ".name", "Func '" + name + "' is listed twice");
        FuncSchedule &fs = s.funcs[name];
        const json &stages_j = r.field(funcs_j[fi], fp, "stages");
        if (!stages_j.is_array()) r.fail(fp + ".stages", "expected an array, found " + internal::json_excerpt(stages_j));
        for (size_t si = 0; si < stages_j.size(); ++si) {
            std::string sp = fp + ".stages[" + std::to_string(si) + "]";
            r.only_fields(stages_j[si], sp, {"stage", "directives"});
            const int index = static_cast<int>(r.integer(r.field(stages_j[si], sp, "stage"), sp + ".stage", 0, kIntMax));
            if (fs.stages.count(index)) r.fail(sp + ".stage", "stage " + std::to_string(index) + " is listed twice");
            const json &ds = r.field(stages_j[si], sp, "directives");
            if (!ds.is_array()) r.fail(sp + ".directives", "expected an array, found " + internal::json_excerpt(ds));
            auto &list = fs.stages[index];
            for (size_t di = 0; di < ds.size(); ++di)
                list.push_back(directive_from_json(r, ds[di], sp + ".directives[" + std::to_string(di) + "]"));
        }
    }
    return s;
}

} // namespace tessera
