// Building a shape-dispatching library from a pipeline (shape_dispatch.h): the ranges' buckets,
// which buffer extents follow which parameter, the reference check that zero padding leaves
// the visible results unchanged, and compile_to_library over ranges. `tessera gen-lib` and the
// generator driver (tessera_add_library) plan with plan_dispatch_table and build with
// build_dispatch_library (library_build.h), which adds the database's tuned shapes.
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

namespace {

/// The kernel's buffers at `values`: names, kinds, types and constant shapes.
struct LoweredShapes {
    std::vector<DispatchArgument> buffers; ///< name, is_output, type; extent = the shape
    bool has_params = false;
};

LoweredShapes lowered_shapes(const std::string &name, const ShapedPipeline &shaped) {
    // The kernel's arguments and their shapes are the algorithm's, whatever the schedule; a chip
    // schedule (tensorize onto a unit) does not lower for the host, so the algorithm is lowered
    // alone and the pipeline gets its schedule back.
    const Schedule schedule = shaped.pipeline.schedule();
    shaped.pipeline.set_schedule(Schedule{});
    LoweredModule m;
    try {
        m = lower(shaped.pipeline, Target::host(), shaped.output_shapes);
    } catch (...) {
        shaped.pipeline.set_schedule(schedule);
        throw;
    }
    shaped.pipeline.set_schedule(schedule);
    LoweredShapes out;
    out.has_params = !m.params.empty();
    for (const auto &[buffer, is_output] : buffers_of(m)) {
        DispatchArgument a;
        a.name = buffer->name;
        a.is_output = is_output;
        a.type = buffer->type;
        a.extent = constant_shape(*buffer, name);
        out.buffers.push_back(a);
    }
    return out;
}

std::string values_text(const std::vector<DispatchParam> &params, const std::vector<int64_t> &values) {
    std::string text;
    for (size_t p = 0; p < params.size(); ++p) text += (p ? ", " : "") + params[p].name + " = " + std::to_string(values[p]);
    return text;
}

} // namespace

void verify_dispatch_extents(const std::string &name, const DispatchTable &table, const std::vector<int64_t> &values,
                             const ShapedPipeline &shaped) {
    const LoweredShapes got = lowered_shapes(name, shaped);
    const std::string where = name + " at " + values_text(table.params, values) + ": ";
    if (got.buffers.size() != table.arguments.size()) throw Error(where + "the kernel has other buffers than at other values of its ranges");
    for (size_t i = 0; i < got.buffers.size(); ++i) {
        const DispatchArgument &a = table.arguments[i];
        const std::vector<int64_t> &shape = got.buffers[i].extent;
        if (got.buffers[i].name != a.name || shape.size() != a.param.size())
            throw Error(where + "buffer " + got.buffers[i].name + " differs from " + a.name + " at other values of the ranges");
        for (size_t d = 0; d < shape.size(); ++d)
            if (shape[d] != a.extent_at(d, values))
                throw Error(where + "dimension " + std::to_string(d) + " of " + a.name + " is " + std::to_string(shape[d]) + ", not " +
                            dispatch_extent_text(table, a, d) + " = " + std::to_string(a.extent_at(d, values)) +
                            (a.param[d] >= 0 ? "; it is not an affine function of " + table.params[size_t(a.param[d])].name +
                                                   ", so the library cannot serve a range of it"
                                             : ""));
    }
}

DispatchTable plan_dispatch_table(const std::string &name, const std::vector<ShapeRange> &ranges, const PipelineAtValues &at) {
    DispatchTable table;
    table.name = name;
    for (const ShapeRange &r : ranges) table.params.push_back({r.name, r.lo, r.hi});
    // Which extents follow which parameter, and how: the kernel lowered at distinct values far
    // from any fixed extent, then with one parameter at a time moved by an even and an odd
    // step (an odd one shows up a stride-2 window's floor division).
    constexpr int64_t kEvenStep = 22, kOddStep = 25;
    std::vector<int64_t> base;
    for (size_t p = 0; p < ranges.size(); ++p) base.push_back(1009 + 2 * int64_t(p));
    const LoweredShapes at_base = lowered_shapes(name, at(base));
    if (at_base.has_params) throw Error(name + ": a kernel with scalar parameters cannot be dispatched over shapes");
    std::vector<std::pair<LoweredShapes, LoweredShapes>> moved; // per parameter: +even, +odd
    for (size_t p = 0; p < ranges.size(); ++p) {
        std::vector<int64_t> even = base, odd = base;
        even[p] += kEvenStep;
        odd[p] += kOddStep;
        moved.emplace_back(lowered_shapes(name, at(even)), lowered_shapes(name, at(odd)));
        for (const LoweredShapes *other : {&moved.back().first, &moved.back().second}) {
            if (other->buffers.size() != at_base.buffers.size())
                throw Error(name + ": the pipeline has other buffers at other values of its ranges");
            for (size_t i = 0; i < other->buffers.size(); ++i)
                if (other->buffers[i].extent.size() != at_base.buffers[i].extent.size())
                    throw Error(name + ": buffer " + at_base.buffers[i].name + " has other dimensions at other values of the ranges");
        }
    }
    for (size_t i = 0; i < at_base.buffers.size(); ++i) {
        DispatchArgument a = at_base.buffers[i];
        const std::vector<int64_t> shape = a.extent;
        a.extent.clear();
        for (size_t d = 0; d < shape.size(); ++d) {
            int param = -1;
            int64_t scale = 0, offset = shape[d];
            for (size_t p = 0; p < ranges.size(); ++p) {
                const int64_t even = moved[p].first.buffers[i].extent[d], odd = moved[p].second.buffers[i].extent[d];
                if (even == shape[d] && odd == shape[d]) continue;
                const std::string dimension = "dimension " + std::to_string(d) + " of " + a.name;
                if (param >= 0)
                    throw Error(name + ": " + dimension + " changes with both " + ranges[size_t(param)].name + " and " + ranges[p].name +
                                "; an extent may follow one dispatched parameter only");
                param = int(p);
                scale = (even - shape[d]) / kEvenStep;
                offset = shape[d] - scale * base[p];
                if ((even - shape[d]) % kEvenStep != 0 || scale < 1 || odd != scale * (base[p] + kOddStep) + offset)
                    throw Error(name + ": " + dimension + " is not scale * " + ranges[p].name + " + offset with an integer scale >= 1 (it is " +
                                std::to_string(shape[d]) + ", " + std::to_string(even) + ", " + std::to_string(odd) + " at " + ranges[p].name +
                                " = " + std::to_string(base[p]) + ", " + std::to_string(base[p] + kEvenStep) + ", " +
                                std::to_string(base[p] + kOddStep) + "; a stride above 1?), so the library cannot serve a range of " +
                                ranges[p].name + "; list its values instead");
            }
            a.param.push_back(param);
            a.extent.push_back(param < 0 ? shape[d] : 0);
            a.scale.push_back(param < 0 ? 1 : scale);
            a.offset.push_back(param < 0 ? 0 : offset);
        }
        table.arguments.push_back(a);
    }
    for (size_t p = 0; p < ranges.size(); ++p) {
        bool used = false;
        for (const DispatchArgument &a : table.arguments) used |= std::count(a.param.begin(), a.param.end(), int(p)) > 0;
        if (!used) throw Error(name + ": parameter " + ranges[p].name + " is no buffer's extent, so it cannot be a range");
    }
    // Every call has extents of at least 1 (the smallest are at the ranges' start), and the
    // maps hold at every bucket, where the kernels are built (the ranges' start may be no
    // bucket, and a schedule need not apply there).
    std::vector<int64_t> start;
    for (const ShapeRange &r : ranges) start.push_back(r.lo);
    for (const DispatchArgument &a : table.arguments)
        for (size_t d = 0; d < a.param.size(); ++d)
            if (a.extent_at(d, start) < 1)
                throw Error(name + ": dimension " + std::to_string(d) + " of " + a.name + " (" + dispatch_extent_text(table, a, d) + ") is " +
                            std::to_string(a.extent_at(d, start)) + " at " + values_text(table.params, start) + "; start the range higher");
    for (const std::vector<int64_t> &values : bucket_grid(ranges)) verify_dispatch_extents(name, table, values, at(values));
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
