// Verification of kernel outputs against the reference evaluator (verify.h).
#include "tessera/verify.h"

#include <algorithm>

#include "tessera/error.h"
#include "tessera/reference.h"

namespace tessera {

const char *to_string(VerifyMode mode) {
    switch (mode) {
    case VerifyMode::Full: return "full";
    case VerifyMode::Sample: return "sample";
    case VerifyMode::None: return "none";
    }
    return "?";
}

VerifyMode parse_verify_mode(const std::string &word) {
    for (VerifyMode m : {VerifyMode::Full, VerifyMode::Sample, VerifyMode::None})
        if (word == to_string(m)) return m;
    throw Error("verify mode '" + word + "' is not one of full, sample, none");
}

VerifyMode default_verify_mode(const std::vector<std::vector<int64_t>> &output_shapes, int64_t reduction_length) {
    // In double: a product of large extents must not overflow on the way to the comparison.
    double work = 0;
    for (const auto &shape : output_shapes) {
        double points = 1;
        for (int64_t d : shape) points *= static_cast<double>(d);
        work += points * static_cast<double>(std::max<int64_t>(reduction_length, 1));
    }
    return work <= static_cast<double>(kFullVerifyWorkLimit) ? VerifyMode::Full : VerifyMode::Sample;
}

std::string Verification::description() const {
    switch (mode) {
    case VerifyMode::Full: return "full (" + std::to_string(points_checked) + " points)";
    case VerifyMode::Sample:
        return "sample (" + std::to_string(points_checked) + " of " + std::to_string(points_total) + " points)";
    case VerifyMode::None: return "none";
    }
    return "?";
}

namespace {

std::string coords_text(const std::vector<int64_t> &c) {
    std::string s = "(";
    for (size_t d = 0; d < c.size(); ++d) s += (d ? ", " : "") + std::to_string(c[d]);
    return s + ")";
}

uint64_t next_random(uint64_t &state) {
    // splitmix64: cheap, and the same points for the same seed on every machine.
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// The points of `shape` a sample checks: its corners (where tails and padding go wrong) and
/// `count` uniformly drawn points, without repeats.
std::vector<std::vector<int64_t>> sample_points(const std::vector<int64_t> &shape, int count, uint64_t seed) {
    std::vector<std::vector<int64_t>> points;
    const size_t rank = shape.size();
    const size_t corners = rank >= 16 ? 1 : size_t{1} << rank;
    for (size_t m = 0; m < corners; ++m) {
        std::vector<int64_t> p(rank);
        for (size_t d = 0; d < rank; ++d) p[d] = (m >> d) & 1 ? shape[d] - 1 : 0;
        points.push_back(p);
    }
    uint64_t state = seed;
    for (int n = 0; n < count; ++n) {
        std::vector<int64_t> p(rank);
        for (size_t d = 0; d < rank; ++d) p[d] = static_cast<int64_t>(next_random(state) % static_cast<uint64_t>(shape[d]));
        points.push_back(p);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    return points;
}

/// A one-element view of `b` at `point`.
Buffer<> element(const Buffer<> &b, const std::vector<int64_t> &point) {
    return Buffer<>::view(b.type(), b.address_of(point), std::vector<int64_t>(point.size(), 1));
}

} // namespace

Verification verify_outputs(const Pipeline &p, const std::vector<std::vector<int64_t>> &output_shapes, const Bindings &bindings,
                            const std::vector<Buffer<>> &outputs, const VerifyOptions &options) {
    const std::vector<Func> &funcs = p.outputs();
    if (outputs.size() != funcs.size() || output_shapes.size() != funcs.size())
        throw Error("verify: the pipeline has " + std::to_string(funcs.size()) + " outputs but " + std::to_string(outputs.size()) +
                    " buffers and " + std::to_string(output_shapes.size()) + " shapes were given");
    Verification v;
    v.mode = options.mode;
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].shape() != output_shapes[i])
            throw Error("verify: output " + funcs[i].name() + " has shape " + coords_text(outputs[i].shape()) + " but " +
                        coords_text(output_shapes[i]) + " was expected");
        v.points_total += outputs[i].number_of_elements();
    }
    if (options.mode == VerifyMode::None) return v;

    auto tolerance = [&](const Buffer<> &expected) {
        const Type t = expected.type().is_float() ? options.tolerance_type.value_or(expected.type()) : expected.type();
        return Tolerance::for_type(t, options.reduction_length);
    };
    auto record = [&](size_t output, const Comparison &c, const std::vector<int64_t> &offset) {
        v.max_abs_error = std::max(v.max_abs_error, c.max_abs_error);
        if (c.equal || !v.mismatch.empty()) {
            v.passed = v.passed && c.equal;
            return;
        }
        v.passed = false;
        std::vector<int64_t> at = c.first_mismatch;
        for (size_t d = 0; d < at.size() && d < offset.size(); ++d) at[d] += offset[d];
        v.mismatch = "output " + funcs[output].name() + " at " + coords_text(at) + ": " + c.message;
    };

    if (options.mode == VerifyMode::Full) {
        const std::vector<Buffer<>> expected = evaluate_reference(p, output_shapes, bindings);
        for (size_t i = 0; i < outputs.size(); ++i) {
            record(i, compare(outputs[i], expected[i], tolerance(expected[i])), {});
            v.points_checked += outputs[i].number_of_elements();
        }
        return v;
    }

    // Sample: one small evaluation per point, every other output given an empty region.
    for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].number_of_elements() == 0) continue;
        for (const std::vector<int64_t> &point : sample_points(output_shapes[i], options.sample_points, options.seed + i)) {
            std::vector<Region> regions;
            for (size_t o = 0; o < outputs.size(); ++o)
                regions.push_back(o == i ? Region{point, std::vector<int64_t>(point.size(), 1)}
                                         : Region{std::vector<int64_t>(output_shapes[o].size(), 0),
                                                  std::vector<int64_t>(output_shapes[o].size(), 0)});
            const Buffer<> expected = evaluate_reference_region(p, output_shapes, regions, bindings)[i];
            record(i, compare(element(outputs[i], point), expected, tolerance(expected)), point);
            ++v.points_checked;
        }
    }
    return v;
}

} // namespace tessera
