// Measurements of tuning records: exact cycles on chips, repeated timings on the host.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tessera/error.h"
#include "tessera/tuning_db.h"

namespace tessera {

Measurement Measurement::chip_cycles(int64_t cycles) {
    if (cycles <= 0)
        throw Error("tuning record: a chip measurement needs a positive cycle count, got " + std::to_string(cycles));
    Measurement m;
    m.kind = Kind::Cycles;
    m.cycles = cycles;
    return m;
}

Measurement Measurement::host_seconds(std::vector<double> samples) {
    if (samples.empty()) throw Error("tuning record: a host measurement needs at least one timed repetition");
    for (size_t i = 0; i < samples.size(); ++i)
        if (!std::isfinite(samples[i]) || samples[i] <= 0.0)
            throw Error("tuning record: repetition " + std::to_string(i) + " took " + std::to_string(samples[i]) +
                        " s; every time must be a finite positive number of seconds");
    Measurement m;
    m.kind = Kind::Seconds;
    // The median, not the mean: one repetition slowed by another process must not move it.
    std::vector<double> sorted = samples;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    m.seconds = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    m.repetitions = static_cast<int>(samples.size());
    m.samples = std::move(samples);
    return m;
}

std::string Measurement::to_string() const {
    if (kind == Kind::Cycles) return std::to_string(cycles) + " cycles";
    char buf[64];
    if (seconds >= 1.0) std::snprintf(buf, sizeof buf, "%.3f s", seconds);
    else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
    else std::snprintf(buf, sizeof buf, "%.3f us", seconds * 1e6);
    return std::string(buf) + " (median of " + std::to_string(repetitions) + ")";
}

} // namespace tessera
