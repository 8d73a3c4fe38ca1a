// Measuring registry workloads for the database and replaying records (tuning_replay.h).
#include "tessera/tuning_replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unistd.h>

#include "tessera/chipsim/binary_format.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/codegen/jit.h"
#include "tessera/error.h"

namespace tessera {

namespace {

std::string program_hash(const ChipProgram &program) {
    const std::vector<uint8_t> bytes = chipsim::encode_program(program.program);
    return fnv1a_hex(std::string(bytes.begin(), bytes.end()));
}

std::vector<std::string> split_words(const std::string &text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

} // namespace

MeasuredSchedule measure_on_chip(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const Target &target) {
    const ChipProgram program = compile_for_chip(pipeline, target, output_shapes);
    const ChipResult run = run_on_chip(program, {}, {.trace = false, .functional = false});
    MeasuredSchedule m;
    m.schedule = pipeline.schedule();
    m.measurement = Measurement::chip_cycles(run.report.cycles);
    m.program_hash = program_hash(program);
    const chipsim::Report &r = run.report;
    auto dram = r.bytes.find("DRAM");
    nlohmann::json details = {{"macs", r.macs},
                              {"peak_macs_per_cycle", r.peak_macs_per_cycle},
                              {"mac_dtype", r.mac_dtype},
                              {"roofline_cycles", r.roofline_cycles},
                              {"roofline_limiter", r.roofline_limiter},
                              {"problem_bound_cycles", r.problem_bound_cycles},
                              {"problem_bound_limiter", r.problem_bound_limiter},
                              {"dram_bytes", dram == r.bytes.end() ? 0 : dram->second},
                              {"bytes", r.bytes},
                              {"dram_bytes_per_cycle", program.target.dram.bytes_per_cycle}};
    m.details = details.dump();
    return m;
}

MeasuredSchedule measure_on_host(const Pipeline &pipeline, const std::vector<std::vector<int64_t>> &output_shapes,
                                 const Target &target, const Bindings &bindings, int repetitions) {
    if (repetitions < 1) throw Error("measure_on_host: repetitions must be at least 1, not " + std::to_string(repetitions));
    const CompiledKernel kernel = compile_jit(pipeline, output_shapes, target);
    run_pipeline_kernel(kernel, output_shapes, bindings); // warm caches and the thread pool
    std::vector<double> samples;
    for (int r = 0; r < repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        run_pipeline_kernel(kernel, output_shapes, bindings);
        samples.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    MeasuredSchedule m;
    m.schedule = pipeline.schedule();
    m.measurement = Measurement::host_seconds(samples);
    return m;
}

ops::OpInstance op_from_words(const std::string &words, const std::string &what) {
    const std::vector<std::string> w = split_words(words);
    if (w.empty()) throw Error(what + ": no op words");
    try {
        return ops::build_op_from_words(w[0], std::vector<std::string>(w.begin() + 1, w.end()));
    } catch (const Error &e) {
        throw Error(what + ": '" + words + "': " + e.what());
    }
}

Target target_of_identity(const TargetIdentity &identity) {
    if (!identity.chip) return Target::host();
    try {
        const Target builtin = Target::named(identity.name);
        if (TargetIdentity::of(builtin).hash == identity.hash) return builtin;
    } catch (const Error &) {
        // Not a built-in name: the stored description is the target.
    }
    if (identity.json.empty())
        throw Error("target " + identity.name + " (" + identity.hash + ") has no stored description");
    // Target::named takes a name or a path; the stored description becomes a file, one per
    // hash and process, kept until the process ends (a Target may be used after this returns).
    static std::mutex mutex;
    static std::map<std::string, std::string> written;
    std::lock_guard<std::mutex> lock(mutex);
    auto it = written.find(identity.hash);
    if (it == written.end()) {
        const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                           ("tessera-target-" + std::to_string(::getpid()) + "-" + identity.hash + ".json");
        std::ofstream f(path);
        if (!(f << identity.json) || !f.flush())
            throw Error("cannot write the stored description of target " + identity.name + " to " + path.string());
        it = written.emplace(identity.hash, path.string()).first;
        static const struct Cleanup {
            ~Cleanup() {
                for (const auto &[hash, p] : written) std::filesystem::remove(p);
            }
        } cleanup;
    }
    return Target::named(it->second);
}

std::string ReplayResult::to_string() const {
    std::ostringstream s;
    s << "record #" << record.id << ": " << record.workload_description << " on " << record.target_name << "\n";
    s << "  stored:   " << record.measurement.to_string();
    if (!record.program_hash.empty()) s << ", program " << record.program_hash;
    s << " (Tessera " << record.compiler_version << ")\n";
    s << "  replayed: " << measured.to_string();
    if (!program_hash.empty()) s << ", program " << program_hash;
    s << " (Tessera " << compiler_version() << ")\n";
    if (measured.kind == Measurement::Kind::Cycles) {
        s << "  " << (reproduced ? "reproduced exactly" : "NOT reproduced") << "\n";
    } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.3f", ratio);
        s << "  ratio replayed / stored: " << buf << (same_machine ? "" : " (measured on another CPU)") << "\n";
    }
    for (const std::string &d : differences) s << "  - " << d << "\n";
    return s.str();
}

ReplayResult replay_record(const TuningDatabase &db, int64_t id) {
    ReplayResult result;
    result.record = db.get(id);
    const TuningRecord &r = result.record;
    const std::string what = "tuning database " + db.path() + ": record #" + std::to_string(id);
    std::string words = r.op_words;
    if (words.empty()) {
        // Records stored without op words may still be described by them (the CLI's tuners).
        const std::vector<std::string> w = split_words(r.workload_description);
        const auto &registry = ops::op_registry();
        const bool op_words_shaped =
            !w.empty() && std::all_of(w.begin() + 1, w.end(), [](const std::string &x) { return x.find('=') != std::string::npos; });
        if (op_words_shaped &&
            std::any_of(registry.begin(), registry.end(), [&](const ops::OpSpec &o) { return o.name == w[0]; }))
            words = r.workload_description;
        else
            throw Error(what + " (" + r.workload_description +
                        ") does not say which operator-library op built its workload (it was tuned through the C++ "
                        "API); only records of registry ops can be replayed");
    }
    const std::optional<TargetIdentity> identity = db.target(r.target_hash);
    if (!identity)
        throw Error(what + ": the description of its target " + r.target_name +
                    " was not stored (a record from schema 1); it cannot be replayed");
    ops::OpInstance op = op_from_words(words, what);
    const Workload workload = Workload::of(op.pipeline, op.output_shapes, r.workload_description);
    if (workload.key() != r.workload_key)
        throw Error(what + ": '" + words + "' now builds workload " + workload.key() + ", not the stored " +
                    r.workload_key + " (the operator library changed since Tessera " + r.compiler_version + ")");
    try {
        op.pipeline.set_schedule(workload.from_canonical(r.schedule));
    } catch (const Error &e) {
        throw Error(what + ": its schedule does not apply any more: " + e.what());
    }
    const Target target = target_of_identity(*identity);
    if (identity->chip) {
        MeasuredSchedule now;
        try {
            now = measure_on_chip(op.pipeline, op.output_shapes, target);
        } catch (const Error &e) {
            throw Error(what + " on " + identity->name + " (target " + identity->hash + " as stored): " + e.what());
        }
        result.measured = now.measurement;
        result.program_hash = now.program_hash;
        result.ratio = double(now.measurement.cycles) / double(r.measurement.cycles);
        if (!r.program_hash.empty() && r.program_hash != now.program_hash)
            result.differences.push_back("the program differs: hash " + now.program_hash + ", stored " + r.program_hash +
                                         " (the code generator changed)");
        if (r.program_hash.empty())
            result.differences.push_back("the record stores no program hash (stored before schema 3): only cycles compared");
        if (now.measurement.cycles != r.measurement.cycles)
            result.differences.push_back("cycles differ: " + std::to_string(now.measurement.cycles) + ", stored " +
                                         std::to_string(r.measurement.cycles));
        result.reproduced = now.measurement.cycles == r.measurement.cycles &&
                            (r.program_hash.empty() || r.program_hash == now.program_hash);
    } else {
        const int repetitions = std::max(1, r.measurement.repetitions);
        const MeasuredSchedule now =
            measure_on_host(op.pipeline, op.output_shapes, target, op.random_inputs(r.seed), repetitions);
        result.measured = now.measurement;
        result.ratio = now.measurement.seconds / r.measurement.seconds;
        result.same_machine = TargetIdentity::of(Target::host()).hash == r.target_hash;
        if (!result.same_machine)
            result.differences.push_back("this CPU is not the one the record was measured on (target hash " +
                                         TargetIdentity::of(Target::host()).hash + ", stored " + r.target_hash + ")");
        result.reproduced = true;
    }
    return result;
}

} // namespace tessera
