// Chip artifacts (chip_artifact.h): a compiled chip kernel and its manifest in one checked file.
// The decoder trusts nothing: every field is checked against the program and the target before
// a runtime uses it to marshal a caller's buffers.
#include "tessera/codegen/chip_artifact.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "tessera/chipsim/binary_format.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/internal/json_text.h"
#include "tessera/ir_operator.h"
#include "tessera/limits.h"
#include "tessera/realize.h"

#ifndef TESSERA_VERSION_STRING
#define TESSERA_VERSION_STRING "unknown"
#endif

namespace tessera {

namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'T', 'S', 'C', 'H', 'I', 'P', 'A', 1};
constexpr size_t kHeaderBytes = 8 + 4 + 8 + 8 + 8;

uint64_t fnv1a(const uint8_t *p, size_t n, uint64_t h = 14695981039346656037ull) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

std::string hex16(uint64_t v) {
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(v));
    return s;
}

std::string target_hash(const chipsim::Target &t) {
    const std::string text = t.to_json();
    return hex16(fnv1a(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

/// The record number in a chooser's description ("tuned record #12 (137 cycles)"), or -1.
int64_t record_id_of(const std::string &description) {
    const size_t hash = description.find('#');
    if (hash == std::string::npos) return -1;
    int64_t id = 0;
    size_t i = hash + 1;
    for (; i < description.size() && std::isdigit(static_cast<unsigned char>(description[i])); ++i)
        id = id * 10 + (description[i] - '0');
    return i > hash + 1 ? id : -1;
}

void put_u32(std::vector<uint8_t> &out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<uint8_t> &out, uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint64_t get_u64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p[i]) << (8 * i);
    return v;
}

json tensor_map_json(const ChipTensorMap &m) {
    return {{"tensor", m.tensor},         {"source", m.source},          {"is_output", m.is_output},
            {"chip_shape", m.chip_shape}, {"source_shape", m.source_shape}, {"chip_dim_of_source", m.chip_dim_of_source},
            {"chip_offset", m.chip_offset}, {"chip_limit", m.chip_limit},  {"constant", m.constant}, {"pad_value", m.pad_value}};
}

/// Reads fields of a manifest, each failure a tessera::Error naming the file and the field.
struct ManifestReader {
    std::string origin;

    [[noreturn]] void fail(const std::string &field, const std::string &why) const {
        throw Error(origin + ": manifest field '" + field + "' " + why + "; the artifact is damaged or not a Tessera chip artifact");
    }
    const json &member(const json &obj, const std::string &key, const std::string &field) const {
        if (!obj.is_object()) fail(field, "is not an object");
        auto it = obj.find(key);
        if (it == obj.end()) fail(field + "." + key, "is missing");
        return *it;
    }
    std::string text(const json &obj, const std::string &key, const std::string &field) const {
        const json &v = member(obj, key, field);
        if (!v.is_string()) fail(field + "." + key, "is not a string");
        return v.get<std::string>();
    }
    bool flag(const json &obj, const std::string &key, const std::string &field) const {
        const json &v = member(obj, key, field);
        if (!v.is_boolean()) fail(field + "." + key, "is not true or false");
        return v.get<bool>();
    }
    int64_t integer(const json &v, const std::string &field, int64_t lo, int64_t hi) const {
        int64_t out = 0;
        if (!internal::json_int64(v, out) || out < lo || out > hi)
            fail(field, "is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
        return out;
    }
    std::vector<int64_t> integers(const json &obj, const std::string &key, const std::string &field, int64_t lo, int64_t hi) const {
        const json &v = member(obj, key, field);
        if (!v.is_array() || v.size() > size_t(limits::kMaxRank)) fail(field + "." + key, "is not a list of at most " + std::to_string(limits::kMaxRank) + " integers");
        std::vector<int64_t> out;
        for (const json &e : v) out.push_back(integer(e, field + "." + key, lo, hi));
        return out;
    }
    std::vector<int64_t> shape(const json &obj, const std::string &key, const std::string &field) const {
        std::vector<int64_t> s = integers(obj, key, field, 0, limits::kMaxExtent);
        int64_t n = 1;
        for (int64_t e : s)
            if (e > 0 && (n *= e) > limits::kMaxElements) fail(field + "." + key, "has more than " + std::to_string(limits::kMaxElements) + " elements");
        return s;
    }
    Type type(const json &obj, const std::string &key, const std::string &field) const {
        const std::string name = text(obj, key, field);
        try {
            return Type::parse(name);
        } catch (const Error &e) {
            fail(field + "." + key, std::string("is not a dtype: ") + e.what());
        }
    }
};

/// The index maps of a tensor stay inside its chip tensor: each chip dimension takes at most
/// one source dimension, limits are within the chip shape, and an offset leaves some of its
/// source dimension on the chip. The runtime trusts these maps to place elements; a hand-edited
/// manifest that breaks them would run and compute wrong values.
void check_index_maps(const ManifestReader &r, const ChipTensorMap &mp, const std::string &f) {
    std::vector<size_t> taken_by(mp.chip_shape.size(), SIZE_MAX);
    for (size_t d = 0; d < mp.chip_dim_of_source.size(); ++d) {
        const int cd = mp.chip_dim_of_source[d];
        if (cd < 0) continue;
        if (taken_by[size_t(cd)] != SIZE_MAX)
            r.fail(f + ".chip_dim_of_source", "gives chip dimension " + std::to_string(cd) + " to source dimensions " +
                                                  std::to_string(taken_by[size_t(cd)]) + " and " + std::to_string(d) +
                                                  "; each chip dimension takes at most one");
        taken_by[size_t(cd)] = d;
    }
    for (size_t c = 0; c < mp.chip_limit.size(); ++c)
        if (mp.chip_limit[c] > mp.chip_shape[c])
            r.fail(f + ".chip_limit", "[" + std::to_string(c) + "] is " + std::to_string(mp.chip_limit[c]) + ", beyond chip_shape[" +
                                          std::to_string(c) + "] = " + std::to_string(mp.chip_shape[c]));
    for (size_t d = 0; d < mp.chip_offset.size(); ++d) {
        const int cd = mp.chip_dim_of_source[d];
        if (cd < 0 || mp.source_shape[d] == 0) continue; // a broadcast dimension: index 0, no offset used
        const int64_t limit = mp.chip_limit.empty() ? mp.chip_shape[size_t(cd)] : mp.chip_limit[size_t(cd)];
        const int64_t offset = mp.chip_offset[d];
        if (limit > 0 && (offset >= limit || offset + mp.source_shape[d] <= 0))
            r.fail(f + ".chip_offset", "[" + std::to_string(d) + "] is " + std::to_string(offset) + ": source dimension " + std::to_string(d) +
                                           " (extent " + std::to_string(mp.source_shape[d]) + ") then lies wholly outside chip dimension " +
                                           std::to_string(cd) + " (0.." + std::to_string(limit - 1) + ")");
    }
}

int64_t element_count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
}

} // namespace

ChipArtifact compile_chip_artifact(const Pipeline &pipeline, const std::string &name, const Target &target,
                                   const std::vector<std::vector<int64_t>> &output_shapes) {
    if (target.kind() != Target::Kind::Chip)
        throw Error("chip artifact " + name + ": target '" + target.name() + "' is not a chip; use tsp-mini, npu-edge or a target JSON");
    internal::check_realize_request(pipeline, output_shapes);
    const internal::ChosenSchedule chosen(pipeline, output_shapes, target);
    // The schedule compiled (the tuned record's while `chosen` holds it), then the program; the
    // host library's argument order: Inputs as the lowering finds them, then the outputs.
    const std::string schedule = pipeline.schedule().to_json();
    const std::vector<Input> inputs = internal::find_inputs(pipeline.functions());
    const ChipProgram program = compile_for_chip(pipeline, target, output_shapes);
    return chip_artifact_of_program(program, name, inputs, schedule, chosen.description());
}

ChipArtifact chip_artifact_of_program(const ChipProgram &program, const std::string &name, const std::vector<Input> &inputs,
                                      const std::string &schedule_json, const std::string &schedule_source) {
    ChipArtifact a;
    a.name = name;
    a.compiler_version = TESSERA_VERSION_STRING;
    a.schedule_json = schedule_json;
    a.schedule_source = schedule_source.empty() ? "the pipeline's schedule" : schedule_source;
    a.tuning_record_id = record_id_of(schedule_source);
    a.program = program;
    a.target_hash = target_hash(a.program.target);
    // The program names its target, so that a manifest paired with another target's program
    // is refused on load (chipsim checks the directive against the target it runs on too).
    if (a.program.program.target.empty()) a.program.program.target = a.program.target.name;
    std::set<std::string> names;
    for (const Input &in : inputs) {
        ChipArtifactArgument arg{in.name(), false, in.type(), {}};
        for (size_t d = 0; d < in.shape().size(); ++d) {
            auto v = as_const_int(in.shape()[d]);
            if (!v) throw Error("chip artifact " + name + ": dimension " + std::to_string(d) + " of Input " + in.name() + " is not a constant; chip kernels have fixed shapes");
            arg.shape.push_back(*v);
        }
        names.insert(in.name());
        a.arguments.push_back(std::move(arg));
    }
    for (const ChipTensorMap &m : a.program.tensors)
        if (!m.is_output && m.constant.empty() && !names.count(m.source))
            throw Error("chip artifact " + name + ": the program reads '" + m.source + "', which is none of the inputs given");
    if (a.program.output_types.size() != a.program.outputs.size() || a.program.output_shapes.size() != a.program.outputs.size())
        throw Error("chip artifact " + name + ": the program's " + std::to_string(a.program.outputs.size()) + " outputs lack their types or shapes");
    for (size_t o = 0; o < a.program.outputs.size(); ++o)
        a.arguments.push_back({a.program.outputs[o], true, a.program.output_types[o], a.program.output_shapes[o]});
    return a;
}

std::string chip_artifact_manifest(const ChipArtifact &a) {
    const ChipProgram &cp = a.program;
    json args = json::array();
    for (const ChipArtifactArgument &arg : a.arguments)
        args.push_back({{"name", arg.name}, {"kind", arg.is_output ? "output" : "input"}, {"dtype", arg.type.to_string()},
                        {"shape", arg.shape}, {"layout", "dense row-major"}});
    json maps = json::array();
    for (const ChipTensorMap &m : cp.tensors) maps.push_back(tensor_map_json(m));
    json output_types = json::array();
    for (const Type &t : cp.output_types) output_types.push_back(t.to_string());
    json m = {
        {"format", "tessera-chip-artifact"},
        {"format_version", kChipArtifactVersion},
        {"name", a.name},
        {"compiler_version", a.compiler_version},
        {"target", {{"name", cp.target.name}, {"hash", a.target_hash}, {"description", cp.target.to_json()}}},
        {"schedule", a.schedule_json},
        {"schedule_source", a.schedule_source},
        {"tuning_record_id", a.tuning_record_id >= 0 ? json(a.tuning_record_id) : json(nullptr)},
        {"arguments", args},
        {"chip",
         {{"tensors", maps},
          {"outputs", cp.outputs},
          {"output_shapes", cp.output_shapes},
          {"output_types", output_types},
          {"summary", cp.summary},
          {"problem",
           {{"macs", cp.problem.macs}, {"mac_dtype", chipsim::dtype_name(cp.problem.mac_dtype)},
            {"input_bytes", cp.problem.input_bytes}, {"output_bytes", cp.problem.output_bytes}}}}},
    };
    return m.dump(2);
}

std::vector<uint8_t> encode_chip_artifact(const ChipArtifact &a) {
    const std::string manifest = chip_artifact_manifest(a);
    const std::vector<uint8_t> program = chipsim::encode_program(a.program.program);
    std::vector<uint8_t> out(kMagic, kMagic + 8);
    put_u32(out, kChipArtifactVersion);
    put_u64(out, manifest.size());
    put_u64(out, program.size());
    const uint64_t sum = fnv1a(program.data(), program.size(), fnv1a(reinterpret_cast<const uint8_t *>(manifest.data()), manifest.size()));
    put_u64(out, sum);
    out.insert(out.end(), manifest.begin(), manifest.end());
    out.insert(out.end(), program.begin(), program.end());
    return out;
}

ChipArtifact decode_chip_artifact(const uint8_t *data, size_t size, const std::string &origin) {
    auto fail = [&](const std::string &why) -> void { throw Error(origin + ": " + why); };
    if (size < kHeaderBytes || std::memcmp(data, kMagic, 8) != 0) {
        if (size >= 8 && std::memcmp(data, kMagic, 7) == 0) fail("truncated: " + std::to_string(size) + " bytes, shorter than the artifact header");
        fail("not a Tessera chip artifact (no 'TSCHIPA' header); build one with compile_to_library or tessera gen-lib for a chip target");
    }
    const uint32_t version = uint32_t(data[8]) | uint32_t(data[9]) << 8 | uint32_t(data[10]) << 16 | uint32_t(data[11]) << 24;
    if (version != kChipArtifactVersion)
        fail("artifact format version " + std::to_string(version) + " is not supported (this runtime reads version " +
             std::to_string(kChipArtifactVersion) + "); rebuild the library");
    const uint64_t manifest_len = get_u64(data + 12), program_len = get_u64(data + 20), sum = get_u64(data + 28);
    const uint64_t body = size - kHeaderBytes;
    if (manifest_len > body || program_len > body - manifest_len || manifest_len + program_len != body)
        fail("truncated or padded: the header announces " + std::to_string(manifest_len) + " + " + std::to_string(program_len) +
             " bytes of manifest and program, the file holds " + std::to_string(body));
    const uint8_t *manifest_bytes = data + kHeaderBytes, *program_bytes = manifest_bytes + manifest_len;
    if (fnv1a(program_bytes, program_len, fnv1a(manifest_bytes, manifest_len)) != sum) fail("checksum mismatch: the artifact is corrupt");

    ChipArtifact a;
    const ManifestReader r{origin};
    const json m = internal::parse_json_text(std::string(reinterpret_cast<const char *>(manifest_bytes), manifest_len), origin + " (manifest)");
    try {
        if (r.text(m, "format", "manifest") != "tessera-chip-artifact") r.fail("format", "is not \"tessera-chip-artifact\"");
        a.name = r.text(m, "name", "manifest");
        a.compiler_version = r.text(m, "compiler_version", "manifest");
        const json &t = r.member(m, "target", "manifest");
        const std::string target_name = r.text(t, "name", "target");
        a.target_hash = r.text(t, "hash", "target");
        a.program.target = chipsim::load_target_json(r.text(t, "description", "target"), origin + " (target description)");
        if (a.program.target.name != target_name) r.fail("target.name", "is '" + target_name + "' but the description is of '" + a.program.target.name + "'");
        if (target_hash(a.program.target) != a.target_hash)
            r.fail("target.hash", "does not match the target description (" + target_hash(a.program.target) + "): the manifest was edited or is for another target");
        a.schedule_json = r.text(m, "schedule", "manifest");
        a.schedule_source = r.text(m, "schedule_source", "manifest");
        const json &id = r.member(m, "tuning_record_id", "manifest");
        a.tuning_record_id = id.is_null() ? -1 : r.integer(id, "tuning_record_id", 0, std::numeric_limits<int64_t>::max());

        const json &chip = r.member(m, "chip", "manifest");
        ChipProgram &cp = a.program;
        cp.summary = r.text(chip, "summary", "chip");
        const json &outputs = r.member(chip, "outputs", "chip"), &shapes = r.member(chip, "output_shapes", "chip"),
                   &types = r.member(chip, "output_types", "chip");
        if (!outputs.is_array() || !shapes.is_array() || !types.is_array() || outputs.empty() || outputs.size() != shapes.size() ||
            outputs.size() != types.size() || outputs.size() > 64)
            r.fail("chip.outputs", "must list 1 to 64 outputs, each with one shape and one dtype");
        for (size_t o = 0; o < outputs.size(); ++o) {
            if (!outputs[o].is_string()) r.fail("chip.outputs", "holds a name that is not a string");
            cp.outputs.push_back(outputs[o].get<std::string>());
            const json wrapped = {{"s", shapes[o]}, {"t", types[o]}};
            cp.output_shapes.push_back(r.shape(wrapped, "s", "chip.output_shapes"));
            cp.output_types.push_back(r.type(wrapped, "t", "chip.output_types"));
        }
        const json &problem = r.member(chip, "problem", "chip");
        cp.problem.macs = r.integer(r.member(problem, "macs", "chip.problem"), "chip.problem.macs", 0, std::numeric_limits<int64_t>::max());
        cp.problem.input_bytes = r.integer(r.member(problem, "input_bytes", "chip.problem"), "chip.problem.input_bytes", 0, std::numeric_limits<int64_t>::max());
        cp.problem.output_bytes = r.integer(r.member(problem, "output_bytes", "chip.problem"), "chip.problem.output_bytes", 0, std::numeric_limits<int64_t>::max());
        const auto mac_dtype = chipsim::parse_dtype(r.text(problem, "mac_dtype", "chip.problem"));
        if (!mac_dtype) r.fail("chip.problem.mac_dtype", "is not a chip dtype");
        cp.problem.mac_dtype = *mac_dtype;

        try {
            cp.program = chipsim::decode_program(std::vector<uint8_t>(program_bytes, program_bytes + program_len), origin + " (program)");
        } catch (const Error &e) {
            throw Error(std::string(e.what()));
        }
        if (!cp.program.target.empty() && cp.program.target != cp.target.name)
            r.fail("target.name", "is '" + cp.target.name + "' but the program was compiled for '" + cp.program.target + "'");

        // Every .input and .output has a map, in program order; a .buffer (a value a linked
        // program keeps in the chip's DRAM) never meets the caller's buffers and has none.
        std::vector<const chipsim::TensorDecl *> mapped;
        for (const chipsim::TensorDecl &decl : cp.program.tensors)
            if (!decl.is_buffer) mapped.push_back(&decl);
        const json &maps = r.member(chip, "tensors", "chip");
        if (!maps.is_array() || maps.size() != mapped.size())
            r.fail("chip.tensors", "must map each of the program's " + std::to_string(mapped.size()) + " inputs and outputs once");
        for (size_t i = 0; i < maps.size(); ++i) {
            const std::string f = "chip.tensors[" + std::to_string(i) + "]";
            ChipTensorMap mp;
            mp.tensor = r.text(maps[i], "tensor", f);
            mp.source = r.text(maps[i], "source", f);
            mp.is_output = r.flag(maps[i], "is_output", f);
            mp.chip_shape = r.shape(maps[i], "chip_shape", f);
            mp.source_shape = r.shape(maps[i], "source_shape", f);
            const std::vector<int64_t> dims = r.integers(maps[i], "chip_dim_of_source", f, -1, int64_t(mp.chip_shape.size()) - 1);
            for (int64_t d : dims) mp.chip_dim_of_source.push_back(int(d));
            mp.chip_offset = r.integers(maps[i], "chip_offset", f, -limits::kMaxExtent, limits::kMaxExtent);
            mp.chip_limit = r.integers(maps[i], "chip_limit", f, 0, limits::kMaxExtent);
            const json &constant = r.member(maps[i], "constant", f);
            if (!constant.is_array()) r.fail(f + ".constant", "is not a list");
            for (const json &c : constant) {
                if (!c.is_number()) r.fail(f + ".constant", "holds a value that is not a number");
                mp.constant.push_back(c.get<float>());
            }
            if (maps[i].contains("pad_value")) { // absent in artifacts written before it existed: 0
                const json &pad = maps[i]["pad_value"];
                if (!pad.is_number() || !std::isfinite(pad.get<double>())) r.fail(f + ".pad_value", "is not a finite number");
                mp.pad_value = pad.get<double>();
            }
            const chipsim::TensorDecl &decl = *mapped[i];
            if (decl.name != mp.tensor) r.fail(f + ".tensor", "is '" + mp.tensor + "' but the program's input or output " + std::to_string(i) + " is '" + decl.name + "'");
            if (decl.is_output != mp.is_output || decl.shape != mp.chip_shape)
                r.fail(f, "does not match the program's declaration of " + decl.name + " (direction or shape)");
            if (mp.chip_dim_of_source.size() != mp.source_shape.size()) r.fail(f + ".chip_dim_of_source", "needs one entry per source dimension");
            if (!mp.chip_offset.empty() && mp.chip_offset.size() != mp.source_shape.size()) r.fail(f + ".chip_offset", "needs one entry per source dimension or none");
            if (!mp.chip_limit.empty() && mp.chip_limit.size() != mp.chip_shape.size()) r.fail(f + ".chip_limit", "needs one entry per chip dimension or none");
            check_index_maps(r, mp, f);
            if (!mp.constant.empty() && (mp.is_output || int64_t(mp.constant.size()) != element_count(mp.chip_shape)))
                r.fail(f + ".constant", "must hold one value per chip element of an input");
            cp.tensors.push_back(std::move(mp));
        }

        const json &args = r.member(m, "arguments", "manifest");
        if (!args.is_array() || args.size() > 256) r.fail("arguments", "is not a list of at most 256 arguments");
        for (size_t i = 0; i < args.size(); ++i) {
            const std::string f = "arguments[" + std::to_string(i) + "]";
            ChipArtifactArgument arg;
            arg.name = r.text(args[i], "name", f);
            const std::string kind = r.text(args[i], "kind", f);
            if (kind != "input" && kind != "output") r.fail(f + ".kind", "is neither \"input\" nor \"output\"");
            arg.is_output = kind == "output";
            arg.type = r.type(args[i], "dtype", f);
            arg.shape = r.shape(args[i], "shape", f);
            if (const std::string layout = r.text(args[i], "layout", f); layout != "dense row-major")
                r.fail(f + ".layout", "is '" + layout + "'; chip kernels take dense row-major buffers");
            if (!a.arguments.empty() && a.arguments.back().is_output && !arg.is_output) r.fail(f, "is an input after an output; inputs come first");
            a.arguments.push_back(std::move(arg));
        }
        // Every program tensor holding a buffer names an argument of its direction and shape;
        // every output argument is one of the program's outputs, in order.
        size_t output_index = 0;
        for (const ChipArtifactArgument &arg : a.arguments) {
            if (!arg.is_output) continue;
            if (output_index >= cp.outputs.size() || cp.outputs[output_index] != arg.name || cp.output_shapes[output_index] != arg.shape ||
                cp.output_types[output_index] != arg.type)
                r.fail("arguments", "output " + arg.name + " does not match chip.outputs");
            ++output_index;
        }
        if (output_index != cp.outputs.size()) r.fail("arguments", "lists " + std::to_string(output_index) + " outputs, chip.outputs " + std::to_string(cp.outputs.size()));
        for (const ChipTensorMap &mp : cp.tensors) {
            if (!mp.constant.empty()) continue;
            const ChipArtifactArgument *found = nullptr;
            for (const ChipArtifactArgument &arg : a.arguments)
                if (arg.name == mp.source && arg.is_output == mp.is_output) found = &arg;
            if (!found) r.fail("chip.tensors", "maps " + mp.tensor + " to '" + mp.source + "', which is no argument of that direction");
            if (found->shape != mp.source_shape)
                r.fail("chip.tensors", "maps " + mp.tensor + " to '" + mp.source + "' with source_shape " + json(mp.source_shape).dump() +
                                           ", but the argument's shape is " + json(found->shape).dump());
        }
    } catch (const nlohmann::json::exception &e) {
        fail(std::string("manifest: ") + e.what());
    }
    return a;
}

std::string write_chip_artifact(const ChipArtifact &a, const std::string &dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("chip artifact: cannot create directory '" + dir + "': " + ec.message());
    auto write = [](const fs::path &path, const void *bytes, size_t n) {
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        if (!f) throw Error("chip artifact: cannot write '" + path.string() + "'; check that the directory is writable");
        f.write(static_cast<const char *>(bytes), std::streamsize(n));
        if (!f) throw Error("chip artifact: writing '" + path.string() + "' failed");
    };
    const std::vector<uint8_t> bytes = encode_chip_artifact(a);
    const std::string manifest = chip_artifact_manifest(a);
    const fs::path artifact = fs::path(dir) / (a.name + ".tchip");
    write(artifact, bytes.data(), bytes.size());
    write(fs::path(dir) / (a.name + ".manifest.json"), manifest.data(), manifest.size());
    return artifact.string();
}

} // namespace tessera
