// `tessera db list|best|show|export|import|replay|gc`: the tuning database from the command line. The
// database is --db FILE or, without it, the environment variable TESSERA_TUNING_DB. Queries open
// it read-only (a missing file is an error, not a new empty database); import and gc write.
#include "cli_common.h"

#include <tessera/tuning_db.h>
#include <tessera/tuning_replay.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tessera::cli {

namespace {

using nlohmann::ordered_json;

/// What every db subcommand takes.
struct DbOptions {
    std::string db;
    bool json = false;
    std::string workload, target;
    int64_t limit = 0;
};

void add_common(CLI::App *cmd, DbOptions &o, bool filters) {
    cmd->add_option("--db", o.db, "the tuning database file (default: $TESSERA_TUNING_DB)");
    cmd->add_flag("--json", o.json, "machine-readable output");
    if (filters) {
        cmd->add_option("--workload", o.workload, "only this workload key");
        cmd->add_option("--target", o.target, "only this target name (e.g. tsp-mini, host)");
    }
}

TuningDatabase open_db(const DbOptions &o, bool writable) {
    std::string path = o.db;
    if (path.empty())
        if (const char *env = std::getenv("TESSERA_TUNING_DB")) path = env;
    if (path.empty()) throw UsageError("no tuning database: give --db FILE or set TESSERA_TUNING_DB");
    return TuningDatabase(path, {.read_only = !writable});
}

RecordFilter filter_of(const DbOptions &o) { return {.workload_key = o.workload, .target_name = o.target, .limit = o.limit}; }

ordered_json record_json(const TuningRecord &r) {
    ordered_json m = {{"kind", r.measurement.kind == Measurement::Kind::Cycles ? "cycles" : "seconds"}};
    if (r.measurement.kind == Measurement::Kind::Cycles) m["cycles"] = r.measurement.cycles;
    else {
        m["seconds"] = r.measurement.seconds;
        m["samples"] = r.measurement.samples;
    }
    m["repetitions"] = r.measurement.repetitions;
    return {{"id", r.id},
            {"workload", {{"key", r.workload_key}, {"description", r.workload_description}}},
            {"target", {{"name", r.target_name}, {"hash", r.target_hash}}},
            {"measurement", m},
            {"schedule", ordered_json::parse(r.schedule.to_json(-1))},
            {"compiler_version", r.compiler_version},
            {"seed", r.seed},
            {"tuner_options", ordered_json::parse(r.tuner_options)},
            {"created_at", r.created_at},
            {"op", r.op_words.empty() ? ordered_json(nullptr) : ordered_json(r.op_words)},
            {"program_hash", r.program_hash.empty() ? ordered_json(nullptr) : ordered_json(r.program_hash)},
            {"details", ordered_json::parse(r.details)}};
}

ordered_json measurement_json(const Measurement &m) {
    if (m.kind == Measurement::Kind::Cycles) return {{"cycles", m.cycles}};
    return {{"seconds", m.seconds}, {"samples", m.samples}, {"repetitions", m.repetitions}};
}

void print_records(const std::vector<TuningRecord> &records, bool json) {
    if (json) {
        ordered_json all = ordered_json::array();
        for (const auto &r : records) all.push_back(record_json(r));
        std::printf("%s\n", all.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
        return;
    }
    std::printf("%6s  %-16s  %-10s  %-26s  %s\n", "ID", "WORKLOAD", "TARGET", "MEASURED", "DESCRIPTION");
    for (const auto &r : records)
        std::printf("%6lld  %-16s  %-10s  %-26s  %s\n", (long long)r.id, r.workload_key.c_str(), r.target_name.c_str(),
                    r.measurement.to_string().c_str(), r.workload_description.c_str());
    if (records.empty()) std::printf("(no records)\n");
}

void print_json_or_text(bool json, const ordered_json &j, const std::string &text) {
    if (json) std::printf("%s\n", j.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
    else std::printf("%s\n", text.c_str());
}

} // namespace

Command add_db_command(CLI::App &app) {
    CLI::App *db = app.add_subcommand("db", "inspect and maintain a tuning database");
    db->require_subcommand(1);
    db->footer("The database is --db FILE or, when that is absent, $TESSERA_TUNING_DB.\n"
               "Records are keyed by workload (a hash of the algorithm and shapes, whatever its names) and\n"
               "target (its name and a hash of its whole description).");
    std::vector<std::pair<CLI::App *, std::function<int()>>> subs;

    {
        auto o = std::make_shared<DbOptions>();
        CLI::App *c = db->add_subcommand("list", "list the records, oldest first");
        add_common(c, *o, true);
        c->add_option("--limit", o->limit, "at most this many records")->check(CLI::NonNegativeNumber);
        subs.emplace_back(c, [o] {
            print_records(open_db(*o, false).list(filter_of(*o)), o->json);
            return 0;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        CLI::App *c = db->add_subcommand("best", "the best record of each workload and target");
        add_common(c, *o, true);
        subs.emplace_back(c, [o] {
            print_records(open_db(*o, false).best_per_group(filter_of(*o)), o->json);
            return 0;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        auto id = std::make_shared<int64_t>(0);
        CLI::App *c = db->add_subcommand("show", "one record in full: schedule, measurement, provenance");
        c->add_option("id", *id, "the record's ID (from 'tessera db list')")->required();
        add_common(c, *o, false);
        subs.emplace_back(c, [o, id] {
            const TuningDatabase d = open_db(*o, false);
            const TuningRecord r = d.get(*id);
            if (o->json) {
                std::printf("%s\n", record_json(r).dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
                return 0;
            }
            std::printf("record #%lld\n  workload   %s  %s\n  target     %s  %s\n  measured   %s\n  compiler   %s\n"
                        "  seed       %llu\n  options    %s\n  created    %s\n  schedule (canonical names: f0.. Funcs, "
                        "in0.. Inputs, x0.. Vars, r0.. RVars)\n",
                        (long long)r.id, r.workload_key.c_str(), r.workload_description.c_str(), r.target_name.c_str(),
                        r.target_hash.c_str(), r.measurement.to_string().c_str(), r.compiler_version.c_str(),
                        (unsigned long long)r.seed, r.tuner_options.c_str(), r.created_at.c_str());
            std::string s = r.schedule.to_string();
            std::printf("%s", s.empty() ? "    (empty: the default schedule)\n" : ("    " + s).c_str());
            return 0;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        auto csv = std::make_shared<bool>(false);
        auto out = std::make_shared<std::string>();
        CLI::App *c = db->add_subcommand("export", "write the records as JSON (for import) or CSV");
        add_common(c, *o, true);
        c->add_flag("--csv", *csv, "CSV instead of JSON (--json, the default)");
        c->add_option("-o,--output", *out, "write to this file instead of stdout");
        subs.emplace_back(c, [o, csv, out] {
            if (*csv && o->json) throw UsageError("give one of --json and --csv");
            const TuningDatabase d = open_db(*o, false);
            const std::string text = *csv ? d.export_csv(filter_of(*o)) : d.export_json(filter_of(*o));
            if (out->empty()) {
                std::fputs(text.c_str(), stdout);
                return 0;
            }
            std::ofstream f(*out, std::ios::binary);
            if (!(f << text) || !f.flush()) throw Error("tessera db export: cannot write " + *out);
            return 0;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        auto file = std::make_shared<std::string>();
        CLI::App *c = db->add_subcommand("import", "add the records of a 'tessera db export --json' file");
        c->add_option("file", *file, "the exported JSON file")->required();
        add_common(c, *o, false);
        subs.emplace_back(c, [o, file] {
            TuningDatabase d = open_db(*o, true);
            const ImportSummary s = d.import_json(read_text_file(*file, "tuning records"), *file);
            print_json_or_text(o->json, {{"added", s.added}, {"duplicates", s.duplicates}},
                               "imported " + std::to_string(s.added) + " records (" + std::to_string(s.duplicates) +
                                   " already present)");
            return 0;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        auto id = std::make_shared<int64_t>(0);
        CLI::App *c = db->add_subcommand("replay", "recompile and re-measure a record: chips must reproduce it exactly");
        c->add_option("id", *id, "the record's ID (from 'tessera db list')")->required();
        add_common(c, *o, false);
        c->footer("Rebuilds the record's op from its words, applies its schedule and measures it again on its target\n"
                  "(the stored description, even if the target file changed since). On a chip the program bytes\n"
                  "(their hash) and the cycles must equal the stored ones, else the exit status is 1. On the host\n"
                  "the time is measured again and reported as a ratio to the stored time.");
        subs.emplace_back(c, [o, id] {
            const TuningDatabase d = open_db(*o, false);
            const ReplayResult r = replay_record(d, *id);
            if (o->json) {
                ordered_json j = {{"id", r.record.id},
                                  {"workload", r.record.workload_description},
                                  {"target", r.record.target_name},
                                  {"stored", measurement_json(r.record.measurement)},
                                  {"replayed", measurement_json(r.measured)},
                                  {"ratio", r.ratio},
                                  {"reproduced", r.reproduced},
                                  {"same_machine", r.same_machine},
                                  {"differences", r.differences}};
                if (!r.program_hash.empty()) {
                    j["stored"]["program_hash"] = r.record.program_hash.empty() ? ordered_json(nullptr) : ordered_json(r.record.program_hash);
                    j["replayed"]["program_hash"] = r.program_hash;
                }
                std::printf("%s\n", j.dump(2, ' ', false, ordered_json::error_handler_t::replace).c_str());
            } else {
                std::printf("%s", r.to_string().c_str());
            }
            if (!r.reproduced)
                std::fprintf(stderr, "tessera: error: record #%lld was not reproduced on %s\n", (long long)r.record.id,
                             r.record.target_name.c_str());
            return r.reproduced ? 0 : 1;
        });
    }
    {
        auto o = std::make_shared<DbOptions>();
        auto keep = std::make_shared<int>(1);
        CLI::App *c = db->add_subcommand("gc", "keep the best records of each workload and target, delete the rest");
        add_common(c, *o, false);
        c->add_option("--keep", *keep, "records kept per workload and target (default 1)")->check(CLI::Range(1, 1 << 30));
        subs.emplace_back(c, [o, keep] {
            TuningDatabase d = open_db(*o, true);
            const int64_t removed = d.gc(*keep);
            print_json_or_text(o->json, {{"removed", removed}, {"kept", d.size()}},
                               "removed " + std::to_string(removed) + " records, kept " + std::to_string(d.size()));
            return 0;
        });
    }
    return {db, [subs] {
                for (const auto &[app, run] : subs)
                    if (app->parsed()) return run();
                return 2;
            }};
}

} // namespace tessera::cli
