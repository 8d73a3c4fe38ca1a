#include "tessera/chipsim/report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tessera::chipsim {

namespace {
/// Ratios are rounded to 6 decimals so the JSON text is stable and readable.
double r6(double v) { return std::round(v * 1e6) / 1e6; }
} // namespace

std::string Report::to_json() const {
    nlohmann::ordered_json j;
    j["target"] = target;
    j["program"] = program;
    j["instructions"] = instructions;
    j["cycles"] = cycles;
    j["host_io_cycles"] = host_io_cycles;
    j["total_cycles"] = total_cycles;
    j["macs"] = macs;
    j["macs_per_cycle"] = r6(macs_per_cycle);
    j["peak_macs_per_cycle"] = r6(peak_macs_per_cycle);
    j["mac_dtype"] = mac_dtype;
    j["mxm_utilization"] = r6(mxm_utilization);
    j["bytes"] = bytes;
    j["stall_cycles"] = stall_cycles;
    j["stall_cycles_by_cause"] = stall_cycles_by_cause;
    j["stall_cycles_by_bank"] = stall_cycles_by_bank;
    j["bank_conflicts"] = bank_conflicts;
    j["units"] = nlohmann::ordered_json::object();
    for (auto &u : units)
        j["units"][u.name] = {{"busy_cycles", u.busy_cycles}, {"lanes", u.lanes}, {"utilization", r6(u.utilization)}};
    j["roofline"] = {{"bound_cycles", r6(roofline_cycles)}, {"limiter", roofline_limiter}};
    if (!problem_bound_limiter.empty())
        j["problem_bound"] = {{"cycles", r6(problem_bound_cycles)},
                              {"limiter", problem_bound_limiter},
                              {"fraction", cycles > 0 ? r6(problem_bound_cycles / double(cycles)) : 0.0}};
    if (!stages.empty()) {
        j["stages"] = nlohmann::ordered_json::array();
        for (const StageReport &s : stages)
            j["stages"].push_back({{"name", s.name},
                                   {"instructions", s.instructions},
                                   {"first_cycle", s.first_cycle},
                                   {"last_cycle", s.last_cycle},
                                   {"macs", s.macs},
                                   {"busy_cycles", s.busy_cycles}});
    }
    return j.dump(2);
}

std::string Report::to_text() const {
    std::ostringstream o;
    char buf[256];
    o << "target " << target;
    if (!program.empty()) o << "  program " << program;
    o << "\n";
    o << "cycles " << cycles << " (kernel)  + " << host_io_cycles << " host I/O = " << total_cycles << " total;  "
      << instructions << " instructions\n";
    std::snprintf(buf, sizeof buf, "MACs %lld  achieved %.1f MACs/cycle of peak %.0f (%s)  mxm_utilization %.3f\n",
                  (long long)macs, macs_per_cycle, peak_macs_per_cycle, mac_dtype.empty() ? "-" : mac_dtype.c_str(),
                  mxm_utilization);
    o << buf;
    std::snprintf(buf, sizeof buf, "roofline bound %.0f cycles (%s)\n", roofline_cycles, roofline_limiter.c_str());
    o << buf;
    if (!problem_bound_limiter.empty()) {
        std::snprintf(buf, sizeof buf, "problem bound %.0f cycles (%s): %.1f %% of it reached\n", problem_bound_cycles,
                      problem_bound_limiter.c_str(), cycles > 0 ? 100.0 * problem_bound_cycles / double(cycles) : 0.0);
        o << buf;
    }
    o << "bytes:";
    for (auto &[level, b] : bytes) o << " " << level << "=" << b;
    o << "\n";
    o << "stall cycles " << stall_cycles;
    for (auto &[cause, c] : stall_cycles_by_cause) o << "  " << cause << "=" << c;
    o << "\nbank conflicts " << bank_conflicts;
    for (auto &[bank, c] : stall_cycles_by_bank) o << "  " << bank << "=" << c;
    o << "\nunits:\n";
    for (auto &u : units) {
        std::snprintf(buf, sizeof buf, "  %-12s busy %10lld  lanes %2d  utilization %.3f\n", u.name.c_str(),
                      (long long)u.busy_cycles, u.lanes, u.utilization);
        o << buf;
    }
    if (!stages.empty()) o << "stages (cycles each unit was busy for the stage):\n";
    for (const StageReport &s : stages) {
        std::snprintf(buf, sizeof buf, "  %-24s %8lld instructions  cycles %lld..%lld", s.name.c_str(), (long long)s.instructions,
                      (long long)s.first_cycle, (long long)s.last_cycle);
        o << buf;
        for (const auto &[unit, c] : s.busy_cycles)
            if (c > 0) o << "  " << unit << "=" << c;
        o << "\n";
    }
    return o.str();
}

} // namespace tessera::chipsim
