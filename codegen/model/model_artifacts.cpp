// A model compiled for a chip as files (chip_model.h: write_model_artifacts): one chip artifact
// per program — a kernel, or kernels linked into one program on a chip with DRAM — in the format
// libtessera_chiprt loads, and the plan that strings them together (<name>.model.json,
// <name>.h), so a C program runs the whole model with no Tessera C++ code.
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "tessera/codegen/chip_artifact.h"
#include "tessera/codegen/chip_model.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"

namespace tessera {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

void write_bytes(const fs::path &path, const void *data, size_t size) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("write_model_artifacts: cannot write '" + path.string() + "'; check that the directory is writable");
    f.write(static_cast<const char *>(data), std::streamsize(size));
    if (!f.flush()) throw Error("write_model_artifacts: writing '" + path.string() + "' failed");
}

/// A file name for a tensor: every character outside [A-Za-z0-9_-] as '_'.
std::string file_stem(const std::string &name) {
    std::string s = name;
    for (char &c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) c = '_';
    return s.empty() ? "_" : s;
}

/// `j` with a tensor's dtype and shape, and its type_code and type_bits as a tessera_buffer_t
/// holds them (buffer_abi.h).
ordered_json with_tensor(ordered_json j, Type type, const std::vector<int64_t> &shape) {
    j["dtype"] = type.to_string();
    j["shape"] = shape;
    j["type_code"] = int(type.code());
    j["type_bits"] = type.is_bool() ? 1 : type.bits();
    return j;
}

} // namespace

ModelArtifactFiles write_model_artifacts(const ChipModelProgram &program, const ModelInterface &model, const Target &target,
                                         const std::string &name, const std::string &dir) {
    std::error_code ec;
    fs::create_directories(fs::path(dir) / (name + ".constants"), ec);
    if (ec) throw Error("write_model_artifacts: cannot create directory '" + dir + "': " + ec.message());
    ModelArtifactFiles files;
    std::map<std::string, std::string> input_names; // Input name -> the model's name
    for (size_t i = 0; i < model.inputs.size(); ++i) input_names[model.inputs[i].name()] = model.input_names.at(i);
    std::map<std::string, std::string> output_names; // kernel head -> the model's output name
    for (size_t i = 0; i < program.outputs.size(); ++i) output_names[program.outputs[i]] = model.output_names.at(i);
    std::map<std::string, const Binding *> constants;
    for (const Binding &c : model.constants)
        if (!c.is_param) constants[c.name] = &c;

    ordered_json jkernels = ordered_json::array(), jintermediates = ordered_json::array(), jconstants = ordered_json::array();
    std::set<std::string> produced, written_constants;
    std::string header_kernels;
    for (size_t p = 0; p < program.programs.size(); ++p) {
        const ChipModelSegment &segment = program.programs[p];
        // The program's inputs: what its kernels read that none of them computes (values inside
        // a linked program stay in the chip's DRAM), each once, in run order.
        std::set<std::string> inside, seen;
        for (size_t k : segment.kernels) inside.insert(program.kernels[k].head);
        std::vector<Input> reads;
        std::string label;
        ordered_json fused = ordered_json::array();
        for (size_t k : segment.kernels) {
            const ChipModelKernel &kernel = program.kernels[k];
            for (const Input &in : internal::find_inputs(kernel.pipeline.functions()))
                if (!inside.count(in.name()) && seen.insert(in.name()).second) reads.push_back(in);
            label += (label.empty() ? "" : " + ") + kernel.label;
            for (const std::string &f : kernel.fused) fused.push_back(f);
        }
        // One kernel's program records its schedule and the tuning record that chose it.
        const ChipModelKernel *alone = segment.kernels.size() == 1 ? &program.kernels[segment.kernels[0]] : nullptr;
        const ChipArtifact artifact = chip_artifact_of_program(segment.program, name + "_p" + std::to_string(p), reads,
                                                               alone ? alone->pipeline.schedule().to_json() : "",
                                                               alone ? alone->schedule_source : "");
        files.artifacts.push_back(write_chip_artifact(artifact, dir));
        ordered_json jargs = ordered_json::array();
        header_kernels += " *   " + fs::path(files.artifacts.back()).filename().string() + " (" + label + "):";
        for (const ChipArtifactArgument &a : artifact.arguments) {
            ordered_json j = with_tensor({{"name", a.name}, {"direction", a.is_output ? "out" : "in"}}, a.type, a.shape);
            if (a.is_output) {
                j["role"] = output_names.count(a.name) ? "output" : "intermediate";
                if (output_names.count(a.name)) j["model_name"] = output_names.at(a.name);
                else jintermediates.push_back(with_tensor({{"name", a.name}, {"produced_by", p}}, a.type, a.shape));
                produced.insert(a.name);
            } else if (input_names.count(a.name)) {
                j["role"] = "input";
                j["model_name"] = input_names.at(a.name);
            } else if (constants.count(a.name)) {
                const std::string file = name + ".constants/" + file_stem(a.name) + ".bin";
                j["role"] = "constant";
                j["file"] = file;
                if (written_constants.insert(a.name).second) {
                    const Buffer<> dense = constants.at(a.name)->buffer.copy();
                    write_bytes(fs::path(dir) / file, dense.data(), size_t(dense.number_of_elements()) * size_t(dense.type().bytes()));
                    files.constants.push_back((fs::path(dir) / file).string());
                    jconstants.push_back(with_tensor({{"name", a.name}, {"file", file}}, a.type, a.shape));
                }
            } else if (produced.count(a.name)) {
                j["role"] = "intermediate";
            } else {
                throw Error("write_model_artifacts: program " + std::to_string(p) + " (" + label + ") reads '" + a.name +
                            "', which is no model input, constant or earlier program's result");
            }
            header_kernels += std::string(" ") + (a.is_output ? "-> " : "") + a.name;
            jargs.push_back(j);
        }
        header_kernels += "\n";
        ordered_json jprogram = {{"artifact", fs::path(files.artifacts.back()).filename().string()}, {"label", label}, {"fused", fused}};
        jprogram["kernels"] = segment.kernels.size();
        jprogram["in_dram"] = segment.buffers; // the values its kernels pass on inside the chip
        jprogram["arguments"] = jargs;
        jkernels.push_back(jprogram);
    }
    ordered_json jinputs = ordered_json::array(), joutputs = ordered_json::array();
    for (size_t i = 0; i < model.inputs.size(); ++i) {
        std::vector<int64_t> shape;
        for (const Expr &e : model.inputs[i].shape()) shape.push_back(as_const_int(e).value_or(-1));
        jinputs.push_back(with_tensor({{"name", model.input_names[i]}, {"argument", model.inputs[i].name()}}, model.inputs[i].type(), shape));
    }
    for (size_t i = 0; i < program.outputs.size(); ++i) joutputs.push_back({{"name", model.output_names[i]}, {"argument", program.outputs[i]}});
    ordered_json manifest;
    manifest["name"] = name;
    manifest["target"] = target.name();
    manifest["inputs"] = jinputs;
    manifest["outputs"] = joutputs;
    manifest["constants"] = jconstants;
    manifest["intermediates"] = jintermediates;
    manifest["kernels"] = jkernels;
    files.manifest = (fs::path(dir) / (name + ".model.json")).string();
    const std::string text = manifest.dump(2) + "\n";
    write_bytes(files.manifest, text.data(), text.size());

    std::string upper;
    for (char c : name) upper += char(std::toupper(static_cast<unsigned char>(c)));
    std::string h = "/* " + name + ".h: a model compiled by Tessera for " + target.name() + ". Do not edit.\n" +
                    " * Run its programs (each one kernel, or kernels linked on the chip) in this order with\n" +
                    " * libtessera_chiprt (tessera/chiprt.h: tessera_chip_load,\n" +
                    " * tessera_chip_run), each with its arguments in the order below (inputs, then -> outputs);\n" +
                    " * constants are raw dense bytes in " + name + ".constants/, and " + name + ".model.json lists\n" +
                    " * every argument's role, dtype and shape:\n" + header_kernels + " */\n" +
                    "#ifndef TESSERA_MODEL_" + upper + "_H\n#define TESSERA_MODEL_" + upper + "_H\n\n#define " + upper +
                    "_NUM_KERNELS " + std::to_string(program.programs.size()) + "\n\n/* The programs' artifact files, in run order. */\n" +
                    "static const char *const " + name + "_kernel_files[" + upper + "_NUM_KERNELS] = {";
    for (size_t k = 0; k < files.artifacts.size(); ++k) h += (k ? ", \"" : "\"") + fs::path(files.artifacts[k]).filename().string() + "\"";
    h += "};\n\n#endif\n";
    files.header = (fs::path(dir) / (name + ".h")).string();
    write_bytes(files.header, h.data(), h.size());
    return files;
}

} // namespace tessera
