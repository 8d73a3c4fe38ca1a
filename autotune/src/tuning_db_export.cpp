// Export and import of tuning records (tuning_db.h).
//
// The JSON document is self-contained — the records with the canonical forms of their workloads
// and the descriptions of their targets — so importing it into an empty database gives records
// that answer the same queries and can be replayed. The canonical form and the target JSON are
// kept as strings, byte for byte: their hashes are the keys, and a re-serialised object could
// print differently. Format:
//   {"format": "tessera-tuning-records", "version": 1,
//    "workloads": [{"key", "description", "canonical" (string or null), "op" (string, optional)}],
//    "targets":   [{"hash", "name", "chip", "json" (string or null)}],
//    "records":   [{"id", "workload", "target", "schedule" (object), "cycles" | "seconds",
//                   "repetitions", "samples" (array, host), "compiler_version", "seed",
//                   "tuner_options" (object), "created_at", "program_hash" (string, optional),
//                   "details" (object, optional)}]}
// The optional fields came with schema 3; documents written before it import unchanged.
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tessera/error.h"
#include "tessera/internal/json_text.h"
#include "tuning_db_impl.h"

namespace tessera {

using internal::Statement;
using nlohmann::json;

namespace {

constexpr const char *kExportFormat = "tessera-tuning-records";
constexpr int kExportVersion = 1;

json optional_string(const std::optional<std::string> &s) { return s ? json(*s) : json(nullptr); }

/// Reads one field of an imported document, naming its path in errors.
class ImportReader {
public:
    explicit ImportReader(std::string origin) : origin_(std::move(origin)) {}

    const json &field(const json &object, const std::string &path, const std::string &key) const {
        if (!object.is_object()) fail(path, "an object");
        auto it = object.find(key);
        if (it == object.end()) fail(path + "." + key, "present");
        return *it;
    }
    std::string string(const json &object, const std::string &path, const std::string &key) const {
        const json &v = field(object, path, key);
        if (!v.is_string()) fail(path + "." + key, "a string");
        return v.get<std::string>();
    }
    std::optional<std::string> optional_string(const json &object, const std::string &path, const std::string &key) const {
        const json &v = field(object, path, key);
        if (v.is_null()) return std::nullopt;
        if (!v.is_string()) fail(path + "." + key, "a string or null");
        return v.get<std::string>();
    }
    const json &array(const json &object, const std::string &path, const std::string &key) const {
        const json &v = field(object, path, key);
        if (!v.is_array()) fail(path + "." + key, "an array");
        return v;
    }
    [[noreturn]] void fail(const std::string &path, const std::string &expected) const {
        throw Error(origin_ + ": " + path + " must be " + expected);
    }

private:
    std::string origin_;
};

std::string csv_field(const std::string &s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
        if (c == '"') q += '"';
        q += c;
    }
    return q + "\"";
}

std::string number_text(double v) {
    std::ostringstream s;
    s.precision(17);
    s << v;
    return s.str();
}

} // namespace

std::string TuningDatabase::export_json(const RecordFilter &filter) const {
    const std::vector<TuningRecord> records = list(filter);
    json doc = {{"format", kExportFormat}, {"version", kExportVersion}};
    doc["workloads"] = json::array();
    doc["targets"] = json::array();
    doc["records"] = json::array();
    std::set<std::string> workloads, targets;
    for (const TuningRecord &r : records) {
        if (workloads.insert(r.workload_key).second) {
            json w = {{"key", r.workload_key},
                      {"description", r.workload_description},
                      {"canonical", optional_string(workload_canonical_form(r.workload_key))}};
            if (!r.op_words.empty()) w["op"] = r.op_words;
            doc["workloads"].push_back(std::move(w));
        }
        if (targets.insert(r.target_hash).second) {
            Statement s(impl_->db, "SELECT chip, json FROM targets WHERE hash = ?");
            s.bind(1, r.target_hash);
            s.step();
            doc["targets"].push_back({{"hash", r.target_hash},
                                      {"name", r.target_name},
                                      {"chip", s.int64(0) != 0},
                                      {"json", optional_string(s.optional_text(1))}});
        }
        json rec = {{"id", r.id},
                    {"workload", r.workload_key},
                    {"target", r.target_hash},
                    {"schedule", json::parse(r.schedule.to_json(-1))},
                    {"repetitions", r.measurement.repetitions},
                    {"compiler_version", r.compiler_version},
                    {"seed", r.seed},
                    {"tuner_options", json::parse(r.tuner_options)},
                    {"created_at", r.created_at}};
        if (r.measurement.kind == Measurement::Kind::Cycles) rec["cycles"] = r.measurement.cycles;
        else {
            rec["seconds"] = r.measurement.seconds;
            rec["samples"] = r.measurement.samples;
        }
        if (!r.program_hash.empty()) rec["program_hash"] = r.program_hash;
        if (r.details != "{}") rec["details"] = json::parse(r.details);
        doc["records"].push_back(std::move(rec));
    }
    try {
        return doc.dump(2) + "\n";
    } catch (const json::type_error &) {
        // Only text that is not UTF-8 fails to print; add() never stores such text.
        throw Error("tuning database " + path() + ": cannot export it: a stored text is not valid UTF-8 (the file "
                    "was damaged or edited by hand)");
    }
}

std::string TuningDatabase::export_csv(const RecordFilter &filter) const {
    std::string out = "id,workload_key,workload,target_name,target_hash,cycles,seconds,repetitions,compiler_version,"
                      "seed,tuner_options,schedule,created_at\n";
    for (const TuningRecord &r : list(filter)) {
        const bool cycles = r.measurement.kind == Measurement::Kind::Cycles;
        out += std::to_string(r.id) + "," + csv_field(r.workload_key) + "," + csv_field(r.workload_description) + "," +
               csv_field(r.target_name) + "," + csv_field(r.target_hash) + "," +
               (cycles ? std::to_string(r.measurement.cycles) : "") + "," +
               (cycles ? "" : number_text(r.measurement.seconds)) + "," + std::to_string(r.measurement.repetitions) +
               "," + csv_field(r.compiler_version) + "," + std::to_string(r.seed) + "," + csv_field(r.tuner_options) +
               "," + csv_field(r.schedule.to_json(-1)) + "," + csv_field(r.created_at) + "\n";
    }
    return out;
}

ImportSummary TuningDatabase::import_json(const std::string &json_text, const std::string &origin) {
    impl_->require_writable("import records");
    // Syntax errors as origin:line:column, no exception names; nesting bounded (json_text.h).
    json doc = internal::parse_json_text(json_text, origin);
    ImportReader in(origin);
    if (!doc.is_object()) in.fail("the document", "an object");
    if (in.string(doc, "document", "format") != kExportFormat)
        in.fail("document.format", std::string("\"") + kExportFormat + "\"");
    const json &version = in.field(doc, "document", "version");
    if (!version.is_number_integer() || version.get<int64_t>() != kExportVersion)
        throw Error(origin + ": document.version " + version.dump() + " is not one this build reads (" +
                    std::to_string(kExportVersion) + ")");

    internal::WriteTransaction tx(impl_->db);
    std::set<std::string> workload_keys;
    std::map<std::string, bool> target_is_chip;
    const json &workloads = in.array(doc, "document", "workloads");
    for (size_t i = 0; i < workloads.size(); ++i) {
        const std::string path = "workloads[" + std::to_string(i) + "]";
        const std::string key = in.string(workloads[i], path, "key");
        const auto canonical = in.optional_string(workloads[i], path, "canonical");
        if (canonical && fnv1a_hex(*canonical) != key)
            throw Error(origin + ": " + path + ".key " + key + " is not the hash of its canonical form (" +
                        fnv1a_hex(*canonical) + "); the document was edited or damaged");
        std::optional<std::string> op;
        if (workloads[i].contains("op")) op = in.string(workloads[i], path, "op");
        internal::store_workload_row(impl_->db, key, canonical, in.string(workloads[i], path, "description"), op);
        workload_keys.insert(key);
    }
    const json &targets = in.array(doc, "document", "targets");
    for (size_t i = 0; i < targets.size(); ++i) {
        const std::string path = "targets[" + std::to_string(i) + "]";
        const std::string hash = in.string(targets[i], path, "hash");
        const auto description = in.optional_string(targets[i], path, "json");
        if (description && fnv1a_hex(*description) != hash)
            throw Error(origin + ": " + path + ".hash " + hash + " is not the hash of its json (" +
                        fnv1a_hex(*description) + "); the document was edited or damaged");
        const json &chip = in.field(targets[i], path, "chip");
        if (!chip.is_boolean()) in.fail(path + ".chip", "true or false");
        internal::store_target_row(impl_->db, hash, in.string(targets[i], path, "name"), chip.get<bool>(), description);
        target_is_chip[hash] = chip.get<bool>();
    }

    ImportSummary summary;
    const json &records = in.array(doc, "document", "records");
    for (size_t i = 0; i < records.size(); ++i) {
        const std::string path = "records[" + std::to_string(i) + "]";
        const json &r = records[i];
        const std::string workload = in.string(r, path, "workload");
        const std::string target = in.string(r, path, "target");
        if (!workload_keys.count(workload)) in.fail(path + ".workload", "the key of one of the document's workloads");
        if (!target_is_chip.count(target)) in.fail(path + ".target", "the hash of one of the document's targets");
        // Chips are measured in cycles, the host in seconds (as add() insists).
        if (r.contains("cycles") != target_is_chip[target])
            in.fail(path, target_is_chip[target] ? "measured in cycles (its target is a chip)"
                                                 : "measured in seconds (its target is not a chip)");
        const json &schedule_json = in.field(r, path, "schedule");
        Schedule schedule;
        try {
            schedule = Schedule::from_json(schedule_json.dump());
        } catch (const Error &e) {
            throw Error(origin + ": " + path + ".schedule: " + e.what());
        }
        Measurement m;
        const json &reps = in.field(r, path, "repetitions");
        if (!reps.is_number_integer() || reps.get<int64_t>() < 1) in.fail(path + ".repetitions", "an integer >= 1");
        if (r.contains("cycles") == r.contains("seconds")) in.fail(path, "an object with one of cycles and seconds");
        try {
            if (r.contains("cycles")) {
                const json &c = r["cycles"];
                if (!c.is_number_integer()) in.fail(path + ".cycles", "an integer");
                m = Measurement::chip_cycles(c.get<int64_t>());
            } else {
                const json &s = r["seconds"];
                if (!s.is_number()) in.fail(path + ".seconds", "a number");
                const json &samples = in.field(r, path, "samples");
                if (!samples.is_array()) in.fail(path + ".samples", "an array of seconds");
                std::vector<double> v;
                for (const json &x : samples) {
                    if (!x.is_number()) in.fail(path + ".samples", "an array of seconds");
                    v.push_back(x.get<double>());
                }
                if (v.empty()) { // a record migrated from schema 1: the median only
                    m.kind = Measurement::Kind::Seconds;
                    m.seconds = s.get<double>();
                    if (!(m.seconds > 0)) in.fail(path + ".seconds", "a positive number");
                } else {
                    m = Measurement::host_seconds(v);
                    m.seconds = s.get<double>();
                }
            }
        } catch (const Error &e) {
            const std::string what = e.what();
            if (what.rfind(origin, 0) == 0) throw;
            throw Error(origin + ": " + path + ": " + what);
        }
        m.repetitions = static_cast<int>(reps.get<int64_t>());
        const json &seed = in.field(r, path, "seed");
        if (!seed.is_number_unsigned() && !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
            in.fail(path + ".seed", "a non-negative integer");
        const json &options = in.field(r, path, "tuner_options");
        if (!options.is_object()) in.fail(path + ".tuner_options", "an object");
        const std::string schedule_text = schedule.to_json(-1);
        const std::string options_text = options.dump();
        const std::string version = in.string(r, path, "compiler_version");
        const std::string created_at = in.string(r, path, "created_at");
        std::optional<std::string> program_hash, details;
        if (r.contains("program_hash")) program_hash = in.string(r, path, "program_hash");
        if (r.contains("details")) {
            if (!r["details"].is_object()) in.fail(path + ".details", "an object");
            details = r["details"].dump();
        }
        const std::optional<std::string> samples_text =
            m.samples.empty() ? std::nullopt : std::optional<std::string>(json(m.samples).dump());

        // The same measurement imported twice (or exported from here) is kept once.
        Statement dup(impl_->db, "SELECT 1 FROM records WHERE workload_key = ? AND target_hash = ? AND schedule = ? "
                                 "AND cycles IS ? AND seconds IS ? AND samples IS ? AND compiler_version = ? "
                                 "AND seed = ? AND tuner_options = ? AND created_at = ?");
        dup.bind(1, workload).bind(2, target).bind(3, schedule_text);
        if (m.kind == Measurement::Kind::Cycles) dup.bind(4, m.cycles).bind_null(5);
        else dup.bind_null(4).bind(5, m.seconds);
        dup.bind(6, samples_text).bind(7, version).bind(8, static_cast<int64_t>(seed.get<uint64_t>()));
        dup.bind(9, options_text).bind(10, created_at);
        if (dup.step()) {
            ++summary.duplicates;
            continue;
        }
        internal::insert_record(impl_->db, workload, target, schedule_text, m, version, seed.get<uint64_t>(),
                                options_text, created_at, program_hash, details);
        ++summary.added;
    }
    tx.commit();
    return summary;
}

} // namespace tessera
