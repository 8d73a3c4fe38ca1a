// Chrome trace (Trace Event Format) of a run: one process, one named thread (track) per unit and
// per bank, one complete ("X") event per hold. Timestamps are microseconds at the target clock.
#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/simulator.h"

#include <map>
#include <nlohmann/json.hpp>

namespace tessera::chipsim {

std::string chrome_trace_json(const SimResult &result, const Program &program, const TimingModel &model) {
    using nlohmann::ordered_json;
    const double us_per_cycle = 1.0 / (model.target().clock_ghz * 1000.0);
    std::map<std::string, int> tids;
    // Tracks in the resource table's order (units first, then streams, then banks), so the
    // viewer shows them grouped the same way in every run.
    for (auto &r : model.resource_table()) tids.emplace(r.name, int(tids.size()) + 1);
    ordered_json events = ordered_json::array();
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 0},
                      {"args", {{"name", model.target().name}}}});
    std::map<int, std::string> used;
    for (auto &e : result.trace) {
        auto it = tids.find(e.track);
        if (it == tids.end()) it = tids.emplace(e.track, int(tids.size()) + 1).first;
        used[it->second] = e.track;
    }
    for (auto &[tid, name] : used) {
        events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}});
        events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
    for (auto &e : result.trace) {
        const Instruction &in = program.instructions.at(size_t(e.instruction));
        std::string text = disassemble(in);
        std::string name = text;
        if (in.cycle >= 0) name = text.substr(text.find(' ') + 1);
        name = name.substr(0, name.find(' '));
        ordered_json args = {{"instruction", e.instruction}, {"text", text}, {"begin_cycle", e.begin}, {"end_cycle", e.end}};
        // A compiled program's instructions carry their schedule stage: the box says which.
        if (in.stage >= 0 && size_t(in.stage) < program.stages.size()) {
            const std::string &stage = program.stages[size_t(in.stage)];
            name = stage + ": " + name;
            args["stage"] = stage;
        }
        events.push_back({{"name", name}, {"cat", e.track}, {"ph", "X"}, {"pid", 0}, {"tid", tids[e.track]},
                          {"ts", double(e.begin) * us_per_cycle}, {"dur", double(e.end - e.begin) * us_per_cycle},
                          {"args", args}});
    }
    ordered_json doc;
    doc["traceEvents"] = events;
    doc["displayTimeUnit"] = "ns";
    doc["otherData"] = {{"target", model.target().name}, {"cycles", result.report.cycles}};
    return doc.dump();
}

} // namespace tessera::chipsim
