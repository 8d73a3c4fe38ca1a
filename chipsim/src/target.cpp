// Loading and validating target descriptions. The reader below checks every field for presence,
// type and range and rejects unknown keys, so a typo in a hand-written target file is an error
// naming the field rather than a silently defaulted chip.
#include "tessera/chipsim/target.h"

#include "tessera/chipsim/error.h"
#include "tessera/internal/json_text.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace tessera::chipsim {

// Defined in the generated builtin_targets.cpp: name -> JSON text of chipsim/targets/*.json.
extern const std::map<std::string, std::string> &builtin_target_sources();

namespace {

using nlohmann::json;

/// Reads one JSON object of a target file, tracking the field path for error messages.
class FieldReader {
public:
    FieldReader(const json &object, std::string path, std::string origin)
        : object_(object), path_(std::move(path)), origin_(std::move(origin)) {
        if (!object_.is_object()) fail(path_.empty() ? "<top>" : path_, "an object", object_);
    }

    /// Throws unless every key present was read.
    void reject_unknown_keys() const {
        for (auto it = object_.begin(); it != object_.end(); ++it)
            if (!read_.count(it.key()))
                throw TargetError(origin_ + ": unknown field '" + field(it.key()) + "'");
    }

    int64_t integer(const std::string &key, int64_t lo, int64_t hi) {
        const json &v = get(key);
        int64_t x = 0;
        if (!internal::json_int64(v, x) || x < lo || x > hi) fail(field(key), "an integer in [" + range(lo, hi) + "]", v);
        return x;
    }
    double number(const std::string &key, double lo, double hi) {
        const json &v = get(key);
        if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
            std::ostringstream r;
            r << "a number in [" << lo << ", " << hi << "]";
            fail(field(key), r.str(), v);
        }
        return v.get<double>();
    }
    bool boolean(const std::string &key) {
        const json &v = get(key);
        if (!v.is_boolean()) fail(field(key), "true or false", v);
        return v.get<bool>();
    }
    std::string string(const std::string &key, const std::vector<std::string> &allowed = {}) {
        const json &v = get(key);
        std::string choices;
        for (auto &a : allowed) choices += (choices.empty() ? "" : ", ") + a;
        if (!v.is_string()) fail(field(key), allowed.empty() ? "a string" : "one of " + choices, v);
        std::string s = v.get<std::string>();
        if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), s) == allowed.end())
            fail(field(key), "one of " + choices, v);
        if (allowed.empty() && s.empty()) fail(field(key), "a non-empty string", v);
        return s;
    }
    std::vector<std::string> strings(const std::string &key) {
        const json &v = get(key);
        if (!v.is_array()) fail(field(key), "an array of strings", v);
        std::vector<std::string> out;
        for (auto &e : v) {
            if (!e.is_string()) fail(field(key), "an array of strings", v);
            out.push_back(e.get<std::string>());
        }
        return out;
    }
    FieldReader object(const std::string &key) { return FieldReader(get(key), field(key), origin_); }
    bool is_null(const std::string &key) { return get(key).is_null(); }
    const json &raw(const std::string &key) { return get(key); }
    std::string field(const std::string &key) const { return path_.empty() ? key : path_ + "." + key; }
    const std::string &origin() const { return origin_; }

    [[noreturn]] void fail(const std::string &field, const std::string &expected, const json &v) const {
        throw TargetError(origin_ + ": field '" + field + "' is " + internal::json_excerpt(v) + ", expected " + expected);
    }

private:
    const json &get(const std::string &key) {
        auto it = object_.find(key);
        if (it == object_.end()) throw TargetError(origin_ + ": missing field '" + field(key) + "'");
        read_.insert(key);
        return *it;
    }
    static std::string range(int64_t lo, int64_t hi) { return std::to_string(lo) + ", " + std::to_string(hi); }

    const json &object_;
    std::string path_, origin_;
    std::set<std::string> read_;
};

constexpr int64_t kMaxRows = int64_t(1) << 24;

MemoryDesc read_memory(FieldReader r) {
    MemoryDesc m;
    m.name = r.string("name");
    m.hemispheres = int(r.integer("hemispheres", 1, 2));
    m.slices = int(r.integer("slices", 1, 64));
    m.banks = int(r.integer("banks", 1, 64));
    m.rows_per_bank = r.integer("rows_per_bank", 1, kMaxRows);
    m.row_bytes = int(r.integer("row_bytes", 1, 4096));
    m.dual_ported = r.boolean("dual_ported");
    m.slice_read_ports = int(r.integer("slice_read_ports", 0, 64));
    m.slice_write_ports = int(r.integer("slice_write_ports", 0, 64));
    m.interleaved = r.boolean("interleaved");
    m.accumulator = r.boolean("accumulator");
    r.reject_unknown_keys();
    if (m.interleaved && (m.hemispheres != 1 || m.slices != 1))
        throw TargetError(r.origin() + ": field '" + r.field("interleaved") +
                          "' is true, allowed only with hemispheres = 1 and slices = 1");
    return m;
}

MxmShape read_shape(FieldReader r) {
    MxmShape s;
    s.k = int(r.integer("k", 1, 1024));
    s.n = int(r.integer("n", 1, 1024));
    s.cycles_per_row = int(r.integer("cycles_per_row", 1, 64));
    r.reject_unknown_keys();
    return s;
}

std::map<std::string, int64_t> read_latencies(FieldReader r, const std::vector<std::string> &ops) {
    std::map<std::string, int64_t> out;
    for (auto &op : ops) out[op] = r.integer(op, 0, 10000);
    r.reject_unknown_keys();
    return out;
}

const std::vector<std::string> kVxmOps = {"add", "sub", "mul", "div", "max", "min", "exp", "tanh", "rsqrt",
                                          "recip", "relu", "cast", "select", "reduce"};
const std::vector<std::string> kSxmOps = {"transpose", "permute", "shift"};

} // namespace

Target load_target_json(const std::string &json_text, const std::string &origin) {
    const json doc = internal::parse_json_text<TargetError>(json_text, origin);
    FieldReader r(doc, "", origin);
    Target t;
    t.source = origin;
    t.name = r.string("name");
    t.kind = r.string("kind", {"streaming", "dram_npu"});
    t.description = r.string("description");
    t.clock_ghz = r.number("clock_ghz", 0.001, 100.0);
    t.vector_bytes = int(r.integer("vector_bytes", 4, 4096));
    t.issue = r.string("issue", {"static", "dynamic"}) == "static" ? IssueKind::Static : IssueKind::Dynamic;
    t.conflict_policy =
        r.string("conflict_policy", {"error", "stall"}) == "error" ? ConflictPolicy::Error : ConflictPolicy::Stall;

    const json &mems = r.raw("memories");
    if (!mems.is_array() || mems.empty() || mems.size() > 8)
        r.fail("memories", "an array of 1 to 8 memory objects", mems);
    std::set<std::string> mem_names;
    for (size_t i = 0; i < mems.size(); ++i) {
        MemoryDesc m = read_memory(FieldReader(mems[i], "memories[" + std::to_string(i) + "]", origin));
        if (m.name == "DRAM" || !mem_names.insert(m.name).second)
            throw TargetError(origin + ": field 'memories[" + std::to_string(i) + "].name' is \"" + m.name +
                              "\", expected a unique name other than DRAM");
        if (m.row_bytes % t.vector_bytes != 0)
            throw TargetError(origin + ": field 'memories[" + std::to_string(i) + "].row_bytes' is " +
                              std::to_string(m.row_bytes) + ", expected a multiple of vector_bytes (" +
                              std::to_string(t.vector_bytes) + ")");
        t.memories.push_back(m);
    }

    t.positions = r.strings("positions");
    {
        FieldReader s = r.object("streams");
        t.streams_eastward = int(s.integer("eastward", 0, 64));
        t.streams_westward = int(s.integer("westward", 0, 64));
        s.reject_unknown_keys();
    }
    {
        FieldReader m = r.object("mxm");
        t.mxm.count = int(m.integer("count", 1, 64));
        t.mxm.int8 = read_shape(m.object("int8"));
        t.mxm.floating = read_shape(m.object("float"));
        for (auto &name : m.strings("dtypes")) {
            auto d = parse_dtype(name);
            if (!d || (*d != DType::Int8 && *d != DType::BF16 && *d != DType::FP16))
                m.fail(m.field("dtypes"), "a list drawn from int8, bf16, fp16", m.raw("dtypes"));
            t.mxm.dtypes.push_back(*d);
        }
        t.mxm.weight_buffers = int(m.integer("weight_buffers", 1, 8));
        t.mxm.weight_rows_per_cycle = int(m.integer("weight_rows_per_cycle", 1, 64));
        t.mxm.systolic = m.boolean("systolic");
        auto lat = read_latencies(m.object("latency"), {"lw", "mm", "drain"});
        t.mxm.lw_latency = lat["lw"];
        t.mxm.mm_latency = lat["mm"];
        t.mxm.drain_latency = lat["drain"];
        t.mxm.drain_rows_per_cycle = int(m.integer("drain_rows_per_cycle", 1, 64));
        m.reject_unknown_keys();
        for (const MxmShape *s : {&t.mxm.int8, &t.mxm.floating})
            if (int64_t(s->n) * 4 > 0) {
                bool fits = false;
                for (auto &mem : t.memories)
                    if (mem.accumulator && mem.row_bytes >= s->n * 4) fits = true;
                if (!fits)
                    throw TargetError(origin + ": field 'mxm' has n = " + std::to_string(s->n) +
                                      ", expected an accumulator memory with row_bytes >= 4 * n");
            }
    }
    {
        FieldReader v = r.object("vxm");
        t.vxm.alus = int(v.integer("alus", 1, 256));
        t.vxm.bytes_per_cycle = int(v.integer("bytes_per_cycle", 1, 65536));
        t.vxm.latency = read_latencies(v.object("latency"), kVxmOps);
        v.reject_unknown_keys();
    }
    {
        FieldReader s = r.object("sxm");
        t.sxm.count = int(s.integer("count", 1, 8));
        t.sxm.transpose_elements = int(s.integer("transpose_elements", 1, 4096));
        t.sxm.latency = read_latencies(s.object("latency"), kSxmOps);
        s.reject_unknown_keys();
    }
    if (!r.is_null("dram")) {
        FieldReader d = r.object("dram");
        t.dram.bytes = d.integer("bytes", 1, int64_t(1) << 40);
        t.dram.bytes_per_cycle = int(d.integer("bytes_per_cycle", 1, 65536));
        t.dram.latency = d.integer("latency", 0, 100000);
        t.dram.burst_bytes = int(d.integer("burst_bytes", 1, 65536));
        d.reject_unknown_keys();
    }
    {
        FieldReader d = r.object("dma");
        t.dma.engines = int(d.integer("engines", 1, 2));
        t.dma.setup_cycles = d.integer("setup_cycles", 0, 100000);
        t.dma.max_dims = int(d.integer("max_dims", 1, 4));
        d.reject_unknown_keys();
    }
    {
        FieldReader h = r.object("host_link");
        t.host_link.bytes_per_cycle = int(h.integer("bytes_per_cycle", 1, 65536));
        t.host_link.latency = h.integer("latency", 0, 1000000);
        h.reject_unknown_keys();
    }
    t.queues = r.strings("queues");
    t.semaphores = int(r.integer("semaphores", 0, 64));
    r.reject_unknown_keys();

    // Cross-field rules: each kind needs what its issue model uses.
    auto need = [&](bool ok, const std::string &field, const std::string &value, const std::string &rule) {
        if (!ok) throw TargetError(origin + ": field '" + field + "' is " + value + ", expected " + rule);
    };
    if (t.issue == IssueKind::Dynamic) {
        std::vector<std::string> want = {"load", "exec", "store", "vector"};
        need(t.queues == want, "queues", internal::json_excerpt(json(t.queues)), "[\"load\", \"exec\", \"store\", \"vector\"] for dynamic issue");
        need(t.conflict_policy == ConflictPolicy::Stall, "conflict_policy", "\"error\"", "\"stall\" for dynamic issue");
        need(t.dram.bytes > 0, "dram", "null", "a DRAM description for dynamic issue (dram_npu kind)");
    } else {
        need(t.queues.empty(), "queues", internal::json_excerpt(json(t.queues)), "[] for static issue");
        need(t.conflict_policy == ConflictPolicy::Error, "conflict_policy", "\"stall\"", "\"error\" for static issue");
    }
    std::set<std::string> seen;
    for (auto &p : t.positions)
        need(seen.insert(p).second, "positions", "\"" + p + "\" twice", "unique slot names");
    if (!t.positions.empty()) {
        for (int i = 0; i < t.mxm.count; ++i)
            need(t.position_of("MXM" + std::to_string(i)) >= 0, "positions", "missing MXM" + std::to_string(i),
                 "a slot for every MXM plane, SXM unit, the VXM and every MEM slice");
        need(t.position_of("VXM") >= 0, "positions", "missing VXM", "a slot for the VXM");
        for (int i = 0; i < t.sxm.count; ++i)
            need(t.position_of("SXM" + std::to_string(i)) >= 0, "positions", "missing SXM" + std::to_string(i),
                 "a slot for every SXM unit");
        for (auto &m : t.memories) {
            if (m.accumulator) continue;
            for (int h = 0; h < m.hemispheres; ++h)
                for (int s = 0; s < m.slices; ++s) {
                    std::string slot = m.name + "." + (m.hemispheres == 2 ? (h ? "e" : "w") : "s") + std::to_string(s);
                    need(t.position_of(slot) >= 0, "positions", "missing " + slot, "a slot for every memory slice");
                }
        }
    }
    return t;
}

const MemoryDesc *Target::memory(const std::string &n) const {
    for (auto &m : memories)
        if (m.name == n) return &m;
    return nullptr;
}

bool Target::mxm_supports(DType input) const {
    return std::find(mxm.dtypes.begin(), mxm.dtypes.end(), input) != mxm.dtypes.end();
}

const MxmShape &Target::mxm_shape(DType input) const {
    if (!mxm_supports(input))
        throw TargetError("target " + name + ": the MXM does not support " + dtype_name(input));
    return input == DType::Int8 ? mxm.int8 : mxm.floating;
}

double Target::peak_macs_per_cycle(DType input) const {
    if (!mxm_supports(input)) return 0.0;
    const MxmShape &s = mxm_shape(input);
    return double(mxm.count) * s.k * s.n / s.cycles_per_row;
}

int Target::position_of(const std::string &slot) const {
    auto it = std::find(positions.begin(), positions.end(), slot);
    return it == positions.end() ? -1 : int(it - positions.begin());
}

std::string Target::to_json() const {
    json j;
    j["name"] = name;
    j["kind"] = kind;
    j["description"] = description;
    j["clock_ghz"] = clock_ghz;
    j["vector_bytes"] = vector_bytes;
    j["issue"] = issue == IssueKind::Static ? "static" : "dynamic";
    j["conflict_policy"] = conflict_policy == ConflictPolicy::Error ? "error" : "stall";
    j["memories"] = json::array();
    for (auto &m : memories)
        j["memories"].push_back({{"name", m.name}, {"hemispheres", m.hemispheres}, {"slices", m.slices},
                                 {"banks", m.banks}, {"rows_per_bank", m.rows_per_bank}, {"row_bytes", m.row_bytes},
                                 {"dual_ported", m.dual_ported}, {"slice_read_ports", m.slice_read_ports},
                                 {"slice_write_ports", m.slice_write_ports}, {"interleaved", m.interleaved},
                                 {"accumulator", m.accumulator}});
    j["positions"] = positions;
    j["streams"] = {{"eastward", streams_eastward}, {"westward", streams_westward}};
    auto shape = [](const MxmShape &s) { return json{{"k", s.k}, {"n", s.n}, {"cycles_per_row", s.cycles_per_row}}; };
    std::vector<std::string> dts;
    for (auto d : mxm.dtypes) dts.push_back(dtype_name(d));
    j["mxm"] = {{"count", mxm.count}, {"int8", shape(mxm.int8)}, {"float", shape(mxm.floating)}, {"dtypes", dts},
                {"weight_buffers", mxm.weight_buffers}, {"weight_rows_per_cycle", mxm.weight_rows_per_cycle},
                {"systolic", mxm.systolic},
                {"latency", {{"lw", mxm.lw_latency}, {"mm", mxm.mm_latency}, {"drain", mxm.drain_latency}}},
                {"drain_rows_per_cycle", mxm.drain_rows_per_cycle}};
    j["vxm"] = {{"alus", vxm.alus}, {"bytes_per_cycle", vxm.bytes_per_cycle}, {"latency", vxm.latency}};
    j["sxm"] = {{"count", sxm.count}, {"transpose_elements", sxm.transpose_elements}, {"latency", sxm.latency}};
    if (dram.bytes > 0)
        j["dram"] = {{"bytes", dram.bytes}, {"bytes_per_cycle", dram.bytes_per_cycle}, {"latency", dram.latency},
                     {"burst_bytes", dram.burst_bytes}};
    else
        j["dram"] = nullptr;
    j["dma"] = {{"engines", dma.engines}, {"setup_cycles", dma.setup_cycles}, {"max_dims", dma.max_dims}};
    j["host_link"] = {{"bytes_per_cycle", host_link.bytes_per_cycle}, {"latency", host_link.latency}};
    j["queues"] = queues;
    j["semaphores"] = semaphores;
    return j.dump(2);
}

std::vector<std::string> builtin_target_names() {
    std::vector<std::string> names;
    for (auto &[name, text] : builtin_target_sources()) names.push_back(name);
    return names;
}

Target load_target(const std::string &name_or_path) {
    auto &builtins = builtin_target_sources();
    auto it = builtins.find(name_or_path);
    if (it != builtins.end()) {
        Target t = load_target_json(it->second, "builtin target '" + name_or_path + "'");
        t.source = "builtin";
        return t;
    }
    bool looks_like_path = name_or_path.find('/') != std::string::npos ||
                           (name_or_path.size() > 5 && name_or_path.substr(name_or_path.size() - 5) == ".json");
    if (!looks_like_path) {
        std::string names;
        for (auto &n : builtin_target_names()) names += (names.empty() ? "" : ", ") + n;
        throw TargetError("unknown target '" + name_or_path + "': expected one of " + names +
                          " or a path to a target .json file");
    }
    std::ifstream in(name_or_path, std::ios::binary);
    if (!in) throw TargetError("cannot open target file '" + name_or_path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    return load_target_json(ss.str(), name_or_path);
}

} // namespace tessera::chipsim
