// `tessera compile MODEL.onnx --target T -o DIR [--dim N=V ...] [--name NAME] [--json]`: a whole
// ONNX model compiled ahead of time. The host gets a static library and a C header with one
// entry point, <name>(inputs..., outputs...), the model's weights embedded (compile_model_to_library);
// a chip gets its programs as chip artifacts libtessera_chiprt loads, the constants as raw
// files, and <name>.model.json + <name>.h saying in which order to run them (write_model_artifacts).
#include <cctype>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>
#include <tessera/codegen/aot.h>
#include <tessera/codegen/chip_model.h>
#include <tessera/codegen/host_schedules.h>

#include "cli_common.h"
#include "cmd_import_common.h"

namespace tessera::cli {

namespace {

struct CompileOptions {
    std::string model, target = "host", output_dir, name;
    std::vector<std::string> dims;
    bool json = false;
};

/// The library's C name: `name`, or the model file's stem with every character outside
/// [A-Za-z0-9_] as '_' (and a leading '_' before a digit).
std::string library_name(const CompileOptions &o) {
    if (!o.name.empty()) {
        bool ok = !std::isdigit(static_cast<unsigned char>(o.name[0]));
        for (char c : o.name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
        if (!ok) throw UsageError("--name '" + o.name + "' is not a C identifier (letters, digits and '_', not starting with a digit)");
        return o.name;
    }
    std::string s = std::filesystem::path(o.model).stem().string();
    for (char &c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) c = '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "_" + s;
    return s;
}

int compile(const CompileOptions &o) {
    if (o.output_dir.empty()) throw UsageError("compile: give the output directory with -o DIR");
    const Target target = Target::named(o.target);
    const bool chip = model_target_is_chip(target, o.target, "compile");
    const std::string name = library_name(o);
    onnx::ImportOptions io;
    io.dims = parse_dims(o.dims);
    const onnx::Model model = onnx::import(o.model, io);
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec || !std::filesystem::is_directory(o.output_dir))
        throw Error("compile: cannot create the output directory '" + o.output_dir + "'" + (ec ? ": " + ec.message() : ""));

    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["target"] = target.name();
    j["name"] = name;
    if (chip) {
        const ChipModelProgram program = compile_model_for_chip(model.pipeline, model.values, target);
        ModelInterface interface;
        for (size_t i = 0; i < model.inputs.size(); ++i) {
            interface.input_names.push_back(model.inputs[i].name);
            interface.inputs.push_back(model.input_params[i]);
        }
        for (const onnx::ModelTensor &t : model.outputs) interface.output_names.push_back(t.name);
        interface.constants = model.constants;
        const ModelArtifactFiles files = write_model_artifacts(program, interface, target, name, o.output_dir);
        j["manifest"] = files.manifest;
        j["header"] = files.header;
        j["artifacts"] = files.artifacts;
        j["kernels"] = program.kernels.size();
        j["constants"] = files.constants.size();
        if (!o.json) {
            std::printf("%s for %s: %zu kernels in %zu programs in %s\n", o.model.c_str(), target.name().c_str(), program.kernels.size(),
                        files.artifacts.size(), o.output_dir.c_str());
            for (const std::string &a : files.artifacts) std::printf("  %s\n", a.c_str());
            std::printf("  %s (run order, arguments, intermediates), %s, %zu constants\n", files.manifest.c_str(), files.header.c_str(),
                        files.constants.size());
        }
    } else {
        host_schedules::model(model.pipeline);
        const LibraryFiles files = compile_model_to_library(model.pipeline, model.input_params, model.constants, name, o.output_dir,
                                                            model.realize_shapes());
        j["library"] = files.library;
        j["header"] = files.header;
        if (!o.json) std::printf("%s for host: %s, %s (entry point %s)\n", o.model.c_str(), files.library.c_str(), files.header.c_str(), name.c_str());
    }
    if (o.json) std::printf("%s\n", j.dump(2).c_str());
    return 0;
}

} // namespace

Command add_compile_command(CLI::App &app) {
    auto o = std::make_shared<CompileOptions>();
    CLI::App *cmd = app.add_subcommand("compile", "compile an ONNX model ahead of time: a host library + C header, or chip artifacts");
    cmd->footer("Host: DIR/lib<name>.a and DIR/<name>.h with one entry point, int <name>(inputs..., outputs...)\n"
                "(tessera_buffer_t arguments, the model's inputs in order then its outputs; the weights are\n"
                "embedded). Link it with -lpthread -lm. A chip (tsp-mini, npu-edge, a target file): the model's\n"
                "programs (a fused kernel, or kernels linked on a chip with DRAM) as DIR/<name>_p<i>.tchip\n"
                "(libtessera_chiprt loads them), its constants as raw bytes in DIR/<name>.constants/, and\n"
                "DIR/<name>.model.json and DIR/<name>.h listing the programs in run order with each argument's\n"
                "role (model input, constant, intermediate, output).");
    cmd->add_option("model", o->model, "the ONNX model file")->required();
    cmd->add_option("--target", o->target, "host, tsp-mini, npu-edge or a chip target file")->capture_default_str();
    cmd->add_option("-o,--output-dir", o->output_dir, "the directory to write into (created if missing)");
    cmd->add_option("--dim", o->dims, "bind a symbolic dimension: NAME=VALUE (repeatable)");
    cmd->add_option("--name", o->name, "the C name of the library (default: the model file's stem)");
    cmd->add_flag("--json", o->json, "print what was written as JSON");
    return {cmd, [o] { return compile(*o); }};
}

} // namespace tessera::cli
