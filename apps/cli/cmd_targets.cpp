// `tessera targets [NAME|FILE.json] [--json]`: the built-in targets with their peaks, or one
// target in full.
#include "cli_common.h"

#include <tessera/chipsim/target.h>
#include <tessera/chipsim/timing_model.h>

#include <cstdio>
#include <nlohmann/json.hpp>

namespace tessera::cli {

namespace {

nlohmann::ordered_json summary(const chipsim::Target &t) {
    chipsim::TimingModel m(t);
    nlohmann::ordered_json j;
    j["name"] = t.name;
    j["kind"] = t.kind;
    j["issue"] = t.issue == chipsim::IssueKind::Static ? "static" : "dynamic";
    j["conflict_policy"] = t.conflict_policy == chipsim::ConflictPolicy::Error ? "error" : "stall";
    j["clock_ghz"] = t.clock_ghz;
    j["vector_bytes"] = t.vector_bytes;
    j["peak_macs_per_cycle"] = {{"int8", t.peak_macs_per_cycle(chipsim::DType::Int8)},
                                {"bf16", t.peak_macs_per_cycle(chipsim::DType::BF16)},
                                {"fp16", t.peak_macs_per_cycle(chipsim::DType::FP16)}};
    nlohmann::ordered_json mems = nlohmann::ordered_json::object();
    for (auto &mem : t.memories)
        mems[mem.name] = {{"bytes", mem.capacity_bytes()}, {"banks", mem.total_banks()},
                          {"bytes_per_cycle", m.bytes_per_cycle(mem.name)}};
    j["memories"] = mems;
    if (t.dram.bytes > 0) j["dram"] = {{"bytes", t.dram.bytes}, {"bytes_per_cycle", t.dram.bytes_per_cycle}};
    if (t.streams_eastward + t.streams_westward > 0) j["stream_bytes_per_cycle"] = m.bytes_per_cycle("STREAMS");
    j["vxm_lane_ops_per_cycle"] = t.vxm.alus * t.vxm.bytes_per_cycle;
    j["host_link_bytes_per_cycle"] = t.host_link.bytes_per_cycle;
    j["description"] = t.description;
    return j;
}

void print_summary(const nlohmann::ordered_json &j) {
    std::printf("%-10s %-9s %-7s int8 %6.0f  bf16 %5.0f MACs/cycle  ", j["name"].get<std::string>().c_str(),
                j["kind"].get<std::string>().c_str(), j["issue"].get<std::string>().c_str(),
                j["peak_macs_per_cycle"]["int8"].get<double>(), j["peak_macs_per_cycle"]["bf16"].get<double>());
    for (auto it = j["memories"].begin(); it != j["memories"].end(); ++it)
        std::printf("%s %lld KiB %.0f B/c  ", it.key().c_str(), (long long)(it.value()["bytes"].get<int64_t>() / 1024),
                    it.value()["bytes_per_cycle"].get<double>());
    if (j.contains("dram")) std::printf("DRAM %d B/c", j["dram"]["bytes_per_cycle"].get<int>());
    std::printf("\n");
}

} // namespace

Command add_targets_command(CLI::App &app) {
    struct Options {
        std::string target;
        bool json = false;
    };
    auto o = std::make_shared<Options>();
    CLI::App *cmd = app.add_subcommand("targets", "list the built-in chip targets and their peaks");
    cmd->footer("Lists the built-in chip targets with their peaks. With a name or a target file, prints that\n"
                     "target: its summary, or with --json its full description (the target file format).");
    cmd->add_option("target", o->target, "a built-in target name or a target .json file");
    cmd->add_flag("--json", o->json, "machine-readable output");
    return {cmd, [o] {
                if (!o->target.empty()) {
                    chipsim::Target t = chipsim::load_target(o->target);
                    if (o->json) std::printf("%s\n", t.to_json().c_str());
                    else print_summary(summary(t));
                    return 0;
                }
                nlohmann::ordered_json all = nlohmann::ordered_json::array();
                for (auto &name : chipsim::builtin_target_names()) all.push_back(summary(chipsim::load_target(name)));
                if (o->json) std::printf("%s\n", all.dump(2).c_str());
                else
                    for (auto &j : all) print_summary(j);
                return 0;
            }};
}

} // namespace tessera::cli
