// Building a shape-dispatching library from a pipeline (shape_dispatch.h): the ranges' buckets,
// which buffer extents follow which parameter, the reference check that zero padding leaves
// the visible results unchanged, and compile_to_library over ranges. `tessera gen-lib` and the
// generator driver (tessera_add_library) share it.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "tessera/codegen/shape_dispatch.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"
#include "tessera/reference.h"

namespace tessera {

namespace {

/// Argument i's extents as constants; throws when one is not.
std::vector<int64_t> constant_shape(const LoweredBuffer &b, const std::string &name) {
    std::vector<int64_t> s;
    for (const Expr &e : b.shape) {
        const std::optional<int64_t> v = as_const_int(e);
        if (!v) throw Error(name + ": buffer " + b.name + " has an extent that is not a constant");
        s.push_back(*v);
    }
    return s;
}

/// The kernel's buffers (inputs then outputs, the C argument order).
std::vector<std::pair<const LoweredBuffer *, bool>> buffers_of(const LoweredModule &m) {
    std::vector<std::pair<const LoweredBuffer *, bool>> out;
    for (const LoweredBuffer &b : m.inputs) out.emplace_back(&b, false);
    for (const LoweredBuffer &b : m.outputs) out.emplace_back(&b, true);
    return out;
}

/// `from` copied into the corner of a zero buffer of extents `to_shape` (or, when crop, the
/// corner of `from` of extents `to_shape` copied out).
Buffer<> move_corner(const Buffer<> &from, const std::vector<int64_t> &to_shape, bool crop) {
    Buffer<> to(from.type(), to_shape);
    const size_t bytes = size_t(std::max(8, from.type().bits())) / 8, dims = to_shape.size();
    const std::vector<int64_t> &corner = crop ? to_shape : from.shape();
    int64_t elements = 1;
    for (int64_t e : to_shape) elements *= e;
    std::memset(to.data(), 0, size_t(elements) * bytes);
    std::vector<int64_t> index(dims, 0);
    for (int64_t e : corner)
        if (e == 0) return to;
    for (;;) {
        int64_t f = 0, t = 0;
        for (size_t d = 0; d < dims; ++d) {
            f = f * from.shape()[d] + index[d];
            t = t * to_shape[d] + index[d];
        }
        std::memcpy(static_cast<char *>(to.data()) + t * int64_t(bytes), static_cast<const char *>(from.data()) + f * int64_t(bytes), bytes);
        size_t d = dims;
        while (d > 0) {
            if (++index[d - 1] < corner[d - 1]) break;
            index[--d] = 0;
        }
        if (d == 0) return to;
    }
}

std::vector<int64_t> constant_input_shape(const Input &input, const std::string &name) {
    std::vector<int64_t> s;
    for (const Expr &e : input.shape()) {
        const std::optional<int64_t> v = as_const_int(e);
        if (!v) throw Error(name + ": input " + input.name() + " has a symbolic extent; give the pipeline fixed shapes at each value");
        s.push_back(*v);
    }
    return s;
}

/// Zero padding must not change what the caller sees: the reference at the smallest values
/// against the reference a little larger with zero-padded inputs, cropped.
void check_padding(const std::string &name, const std::vector<ShapeRange> &ranges, const PipelineAtValues &at) {
    std::vector<int64_t> small, big;
    bool pads = false;
    for (const ShapeRange &r : ranges) {
        small.push_back(r.lo);
        big.push_back(std::min(r.hi, r.lo + 3));
        pads |= big.back() > small.back();
    }
    if (!pads) return;
    const ShapedPipeline a = at(small), b = at(big);
    Bindings inputs = a.check_inputs;
    if (inputs.empty())
        for (const Input &input : a.pipeline.inputs()) {
            Buffer<> data(input.type(), constant_input_shape(input, name));
            data.fill_random(7 + inputs.size());
            inputs.emplace_back(input, data);
        }
    Bindings padded;
    for (const Input &input : b.pipeline.inputs()) {
        auto it = std::find_if(inputs.begin(), inputs.end(), [&](const Binding &binding) { return binding.name == input.name(); });
        if (it == inputs.end()) throw Error(name + ": the pipeline at other values has an input " + input.name() + " it lacked before");
        padded.emplace_back(input, move_corner(it->buffer, constant_input_shape(input, name), false));
    }
    const std::vector<Buffer<>> expected = evaluate_reference(a.pipeline, a.output_shapes, inputs);
    const std::vector<Buffer<>> got = evaluate_reference(b.pipeline, b.output_shapes, padded);
    for (size_t o = 0; o < expected.size(); ++o) {
        const Comparison c = compare(move_corner(got[o], a.output_shapes[o], true), expected[o],
                                     Tolerance::for_type(expected[o].type(), a.reduction_length));
        if (!c.equal) {
            std::string names;
            for (const ShapeRange &r : ranges) names += (names.empty() ? "" : ", ") + r.name;
            throw Error(name + ": padding " + names + " with zeros changes the results (" + c.message +
                        "), so the library cannot serve a range of it; list its values instead");
        }
    }
}

int64_t positive_integer(const std::string &text, const std::string &where) {
    size_t used = 0;
    int64_t v = 0;
    try {
        v = std::stoll(text, &used);
    } catch (const std::exception &) {
        used = 0;
    }
    if (used != text.size() || v < 1) throw Error(where + ": '" + text + "' is not a positive integer");
    return v;
}

} // namespace

std::pair<int64_t, int64_t> parse_dispatch_range(const std::string &text, const std::string &where) {
    const size_t dots = text.find("..");
    if (dots == std::string::npos) throw Error(where + ": '" + text + "' is not a range lo..hi (e.g. \"1..4096\")");
    const int64_t lo = positive_integer(text.substr(0, dots), where), hi = positive_integer(text.substr(dots + 2), where);
    if (lo > hi) throw Error(where + ": the range " + text + " is empty (lo > hi)");
    return {lo, hi};
}

std::vector<int64_t> parse_dispatch_buckets(const std::string &text, const std::string &where) {
    std::vector<int64_t> buckets;
    for (size_t at = 0; at <= text.size();) {
        const size_t comma = std::min(text.find(',', at), text.size());
        buckets.push_back(positive_integer(text.substr(at, comma - at), where));
        at = comma + 1;
    }
    return buckets;
}

std::vector<int64_t> dispatch_buckets(int64_t lo, int64_t hi) {
    std::vector<int64_t> b;
    for (int64_t p = 1; p <= hi && p > 0; p *= 2)
        if (p >= lo) b.push_back(p);
    if (b.empty() || b.back() != hi) b.push_back(hi);
    return b;
}

std::vector<std::vector<int64_t>> bucket_grid(const std::vector<ShapeRange> &ranges) {
    if (ranges.empty()) throw Error("a dispatch library needs at least one range");
    std::vector<std::vector<int64_t>> axes;
    for (const ShapeRange &r : ranges) {
        const std::string where = "range " + r.name + " = " + std::to_string(r.lo) + ".." + std::to_string(r.hi);
        if (r.lo < 1 || r.lo > r.hi) throw Error(where + ": a range needs 1 <= lo <= hi");
        std::vector<int64_t> b = r.buckets.empty() ? dispatch_buckets(r.lo, r.hi) : r.buckets;
        std::sort(b.begin(), b.end());
        b.erase(std::unique(b.begin(), b.end()), b.end());
        if (b.front() < r.lo) throw Error(where + ": the bucket " + std::to_string(b.front()) + " is below the range");
        if (b.back() < r.hi) throw Error(where + ": the largest bucket " + std::to_string(b.back()) + " does not cover the range's end");
        axes.push_back(b);
    }
    std::vector<std::vector<int64_t>> grid;
    std::vector<size_t> pick(axes.size(), 0);
    for (;;) {
        std::vector<int64_t> v;
        for (size_t p = 0; p < axes.size(); ++p) v.push_back(axes[p][pick[p]]);
        grid.push_back(v);
        size_t p = 0;
        for (; p < axes.size(); ++p) {
            if (++pick[p] < axes[p].size()) break;
            pick[p] = 0;
        }
        if (p == axes.size()) return grid;
    }
}

DispatchTable plan_dispatch_table(const std::string &name, const std::vector<ShapeRange> &ranges, const PipelineAtValues &at) {
    DispatchTable table;
    table.name = name;
    for (const ShapeRange &r : ranges) table.params.push_back({r.name, r.lo, r.hi});
    // Which extents follow which parameter: the kernel lowered at two sets of distinct values.
    auto probe = [&](int64_t first) {
        std::vector<int64_t> v;
        for (size_t p = 0; p < ranges.size(); ++p) v.push_back(first + 2 * int64_t(p));
        return v;
    };
    const std::vector<int64_t> v1 = probe(1009), v2 = probe(1031);
    const ShapedPipeline p1 = at(v1), p2 = at(v2);
    const LoweredModule m1 = lower(p1.pipeline, Target::host(), p1.output_shapes), m2 = lower(p2.pipeline, Target::host(), p2.output_shapes);
    const auto b1 = buffers_of(m1), b2 = buffers_of(m2);
    if (!m1.params.empty()) throw Error(name + ": a kernel with scalar parameters cannot be dispatched over shapes");
    if (b1.size() != b2.size()) throw Error(name + ": the pipeline has other buffers at other values of its ranges");
    for (size_t i = 0; i < b1.size(); ++i) {
        DispatchArgument a;
        a.name = b1[i].first->name;
        a.is_output = b1[i].second;
        a.type = b1[i].first->type;
        const std::vector<int64_t> s1 = constant_shape(*b1[i].first, name), s2 = constant_shape(*b2[i].first, name);
        if (s1.size() != s2.size()) throw Error(name + ": buffer " + a.name + " has other dimensions at other values of the ranges");
        for (size_t d = 0; d < s1.size(); ++d) {
            int param = -1;
            for (size_t p = 0; p < ranges.size(); ++p)
                if (s1[d] == v1[p] && s2[d] == v2[p]) param = int(p);
            if (param < 0 && s1[d] != s2[d])
                throw Error(name + ": dimension " + std::to_string(d) + " of " + a.name +
                            " changes with the dispatched parameters but is none of them; only a parameter that is a buffer extent "
                            "can be a range");
            a.param.push_back(param);
            a.extent.push_back(param < 0 ? s1[d] : 0);
        }
        table.arguments.push_back(a);
    }
    for (size_t p = 0; p < ranges.size(); ++p) {
        bool used = false;
        for (const DispatchArgument &a : table.arguments) used |= std::count(a.param.begin(), a.param.end(), int(p)) > 0;
        if (!used) throw Error(name + ": parameter " + ranges[p].name + " is no buffer's extent, so it cannot be a range");
    }
    check_padding(name, ranges, at);
    return table;
}

LibraryFiles compile_to_library(const PipelineAtValues &at, const std::vector<ShapeRange> &ranges, const std::string &name,
                                const std::string &dir, const Target &target, const CpuOptions &options) {
    std::vector<std::vector<int64_t>> grid = bucket_grid(ranges);
    DispatchTable table = plan_dispatch_table(name, ranges, at);
    table.chip = target.kind() == Target::Kind::Chip;
    table.description = name + " over";
    for (const ShapeRange &r : ranges) table.description += " " + r.name + "=" + std::to_string(r.lo) + ".." + std::to_string(r.hi);
    // The smallest bucket first: the runtime calls the first that covers a call.
    auto volume = [](const std::vector<int64_t> &v) {
        int64_t n = 1;
        for (int64_t x : v) n *= x;
        return n;
    };
    std::stable_sort(grid.begin(), grid.end(), [&](const auto &a, const auto &b) { return volume(a) < volume(b); });
    const std::string bucket_dir = (std::filesystem::path(dir) / (name + ".kernels")).string();
    std::string schedules;
    for (const std::vector<int64_t> &values : grid) {
        DispatchBucket bucket;
        bucket.kernel = name;
        for (size_t p = 0; p < ranges.size(); ++p) bucket.kernel += "_" + ranges[p].name + std::to_string(values[p]);
        const ShapedPipeline shaped = at(values);
        const LibraryFiles files = compile_to_library(shaped.pipeline, bucket.kernel, bucket_dir, shaped.output_shapes, target, options);
        bucket.library = files.library;
        bucket.values = values;
        bucket.note = files.schedule;
        schedules += (schedules.empty() ? "" : "; ") + bucket.kernel + ": " + files.schedule;
        table.buckets.push_back(bucket);
    }
    LibraryFiles files = write_dispatch_library(table, dir, options);
    files.schedule = schedules;
    return files;
}

} // namespace tessera
