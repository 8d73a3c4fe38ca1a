// Chrome traces of whole models (chip_model.h). On a chip, each program's own trace — chipsim's
// writer (chipsim::chrome_trace_json), kept by run_on_chip — is shifted onto one time axis, so a
// model's trace reads like one program's: the same tracks (units, streams, banks), programs one
// after another, plus a track of kernels (a linked program's kernels at their spans in it) and,
// on DRAM chips, one of host-link transfers.
#include <nlohmann/json.hpp>

#include "tessera/codegen/chip_model.h"
#include "tessera/error.h"

namespace tessera {

namespace {

using nlohmann::ordered_json;

ordered_json complete_event(const std::string &name, int tid, int64_t begin, int64_t end, double us_per_cycle, ordered_json args) {
    args["begin_cycle"] = begin;
    args["end_cycle"] = end;
    return {{"name", name}, {"ph", "X"}, {"pid", 0}, {"tid", tid}, {"ts", double(begin) * us_per_cycle},
            {"dur", double(end - begin) * us_per_cycle}, {"args", args}};
}

void track_names(ordered_json &events, int tid, const std::string &name) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
}

} // namespace

std::string chrome_trace_json(const ChipModelProgram &program, const ChipModelResult &result) {
    if (result.kernels.size() != program.kernels.size() || result.programs.size() != program.programs.size())
        throw Error("chrome_trace_json: the result has " + std::to_string(result.kernels.size()) + " kernels in " +
                    std::to_string(result.programs.size()) + " programs, the model " + std::to_string(program.kernels.size()) +
                    " in " + std::to_string(program.programs.size()));
    ordered_json events = ordered_json::array();
    // The model's own tracks go first (sort indices 1 and 2); the programs' tracks after them.
    const int kernels_tid = 1, host_link_tid = 2, first_kernel_tid = 3;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", program.target + " (whole model)"}}}});
    track_names(events, kernels_tid, "kernels");
    bool host_link_used = false;
    std::map<int, ordered_json> kernel_tracks; // tid -> its thread_name event
    int64_t offset = 0;
    for (size_t g = 0; g < result.programs.size(); ++g) {
        const ChipProgramRun &run = result.programs[g];
        const ChipModelSegment &seg = program.programs[g];
        auto kernel_name = [&](size_t k) { return "kernel " + std::to_string(k) + " " + result.kernels[k].label; };
        if (run.trace_json.empty())
            throw Error("chrome_trace_json: program " + std::to_string(g) + " (" + kernel_name(run.kernels.at(0)) +
                        ") has no trace; run the model with ChipRunOptions::trace");
        const double us_per_cycle = 1.0 / (seg.program.target.clock_ghz * 1000.0);
        const std::string name = run.kernels.size() == 1 ? kernel_name(run.kernels[0]) : "program " + std::to_string(g);
        const int64_t program_begin = offset + run.report.host_link_in_cycles, end = offset + run.report.total_cycles;
        for (size_t k : run.kernels) {
            const ChipKernelRun &kr = result.kernels[k];
            events.push_back(complete_event(kernel_name(k), kernels_tid, offset + kr.begin_cycle, offset + kr.end_cycle, us_per_cycle,
                                            {{"kernel", k}, {"program", g}, {"fused", program.kernels[k].fused}, {"cycles", kr.report.cycles},
                                             {"host_io_cycles", kr.report.host_io_cycles}}));
        }
        if (run.report.host_link_in_cycles > 0) {
            host_link_used = true;
            events.push_back(complete_event(name + ": inputs host -> DRAM", host_link_tid, offset, program_begin, us_per_cycle, {{"program", g}}));
        }
        if (run.report.host_link_out_cycles > 0) {
            host_link_used = true;
            events.push_back(complete_event(name + ": outputs DRAM -> host", host_link_tid, end - run.report.host_link_out_cycles, end,
                                            us_per_cycle, {{"program", g}}));
        }
        ordered_json program_trace = ordered_json::parse(run.trace_json);
        for (ordered_json &e : program_trace.at("traceEvents")) {
            const int tid = first_kernel_tid + e.at("tid").get<int>();
            e["tid"] = tid;
            if (e.at("ph") == "M") {
                if (e.at("name") == "thread_name") kernel_tracks.emplace(tid, e);
                continue;
            }
            ordered_json &args = e["args"];
            const int64_t b = program_begin + args.at("begin_cycle").get<int64_t>(), en = program_begin + args.at("end_cycle").get<int64_t>();
            // A linked program labels each instruction with its kernel's position (its stage).
            size_t k = run.kernels[0];
            if (run.kernels.size() > 1 && args.contains("instruction")) {
                const int32_t stage = seg.program.program.instructions.at(args.at("instruction").get<size_t>()).stage;
                if (stage >= 0 && size_t(stage) < run.kernels.size()) k = run.kernels[size_t(stage)];
            }
            args["begin_cycle"] = b;
            args["end_cycle"] = en;
            args["kernel"] = result.kernels[k].label;
            e["name"] = "k" + std::to_string(k) + " " + e.at("name").get<std::string>();
            e["ts"] = double(b) * us_per_cycle;
            events.push_back(std::move(e));
        }
        offset = end;
    }
    if (host_link_used) track_names(events, host_link_tid, "host link");
    for (auto &[tid, e] : kernel_tracks) track_names(events, tid, e.at("args").at("name").get<std::string>());
    ordered_json doc;
    doc["traceEvents"] = events;
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = {{"target", program.target}, {"kernels", result.kernels.size()}, {"programs", result.programs.size()},
                        {"cycles", result.cycles}, {"host_io_cycles", result.host_io_cycles}, {"total_cycles", offset}};
    return doc.dump();
}

std::string chrome_trace_json(const HostModelProfile &profile) {
    ordered_json events = ordered_json::array();
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "host (whole model)"}}}});
    track_names(events, 1, "fusion groups");
    double at_us = 0;
    for (size_t g = 0; g < profile.groups.size(); ++g) {
        const HostGroupRun &run = profile.groups[g];
        const double us = run.run_ms * 1000.0;
        events.push_back({{"name", "group " + std::to_string(g) + " " + run.label}, {"ph", "X"}, {"pid", 0}, {"tid", 1}, {"ts", at_us},
                          {"dur", us}, {"args", {{"group", g}, {"fused", run.fused}, {"run_ms", run.run_ms}}}});
        at_us += us;
    }
    ordered_json doc;
    doc["traceEvents"] = events;
    doc["displayTimeUnit"] = "ms";
    doc["otherData"] = {{"target", "host"}, {"groups", profile.groups.size()}, {"run_ms", at_us / 1000.0}};
    return doc.dump();
}

} // namespace tessera
