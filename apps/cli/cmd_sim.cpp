// `tessera sim PROGRAM --target T ...`: assembles (or decodes) a chip program, loads its inputs
// from .npy files, simulates it and reports cycles, utilisation and conflicts; writes outputs as
// .npy and optionally a Chrome trace.
#include "cli_common.h"

#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/binary_format.h>
#include <tessera/chipsim/error.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/npy.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace tessera::cli {

namespace {

namespace fs = std::filesystem;
using namespace tessera::chipsim;

std::vector<uint8_t> read_bytes(const std::string &path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error("program '" + path + "' is a directory; name a .tasm or binary program file");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open program '" + path + "'");
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// Converts an .npy array to the program's declared dtype: the same type exactly, or fp32 data
/// for a bf16/fp16 tensor (rounded to nearest even).
TensorData to_tensor(const NpyArray &a, const TensorDecl &d, const std::string &file) {
    TensorData t{d.dtype, a.shape, {}};
    if (a.shape != d.shape) {
        auto text = [](const std::vector<int64_t> &s) {
            std::string r = "[";
            for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
            return r + "]";
        };
        throw Error("input '" + d.name + "': " + file + " has shape " + text(a.shape) + " but the program declares " +
                    text(d.shape));
    }
    if (a.descr == dtype_npy_descr(d.dtype)) {
        t.bytes = a.data;
        return t;
    }
    if ((d.dtype == DType::BF16 || d.dtype == DType::FP16) && a.descr == "<f4") {
        const int64_t n = a.element_count();
        t.bytes.resize(size_t(n) * 2);
        for (int64_t i = 0; i < n; ++i) {
            float f;
            std::memcpy(&f, a.data.data() + 4 * i, 4);
            store_from_float(d.dtype, t.bytes.data() + 2 * i, f);
        }
        return t;
    }
    throw Error("input '" + d.name + "': " + file + " holds dtype '" + a.descr + "' but the program declares " +
                dtype_name(d.dtype) + " ('" + dtype_npy_descr(d.dtype) + "')");
}

NpyArray to_npy(const TensorData &t) { return NpyArray{dtype_npy_descr(t.dtype), t.shape, t.bytes}; }

std::string resolve(const Program &p, const std::string &file) {
    fs::path f(file);
    return f.is_absolute() || p.source_dir.empty() ? f.string() : (fs::path(p.source_dir) / f).string();
}

} // namespace

namespace {

struct SimOptionsCli {
    std::string program, target, output_dir, trace, save_binary;
    std::vector<std::string> inputs;
    bool check = false, timing_only = false, json = false;
};

int run_sim(const SimOptionsCli &p) {
    const std::string &path = p.program;
    std::vector<uint8_t> bytes = read_bytes(path);
    Program program;
    if (is_binary_program(bytes)) {
        program = decode_program(bytes, path);
        program.source_dir = fs::path(path).parent_path().string();
    } else {
        program = assemble_file(path);
    }
    std::string target_name = p.target.empty() ? program.target : p.target;
    if (target_name.empty()) throw UsageError("no target: give --target or a .target directive in the program");
    TimingModel model(load_target(target_name));

    SimOptions options;
    options.functional = !p.timing_only;
    options.trace = !p.trace.empty();
    if (options.functional) {
        std::map<std::string, std::string> files;
        for (auto &d : program.tensors)
            if (!d.is_output && !d.file.empty()) files[d.name] = resolve(program, d.file);
        for (auto &spec : p.inputs) {
            auto eq = spec.find('=');
            if (eq == std::string::npos || eq == 0) throw UsageError("--input expects NAME=FILE.npy, got '" + spec + "'");
            std::string name = spec.substr(0, eq);
            const TensorDecl *d = program.tensor(name);
            if (!d || d->is_output || d->is_buffer)
                throw Error("--input " + name + ": the program has no .input named '" + name + "'");
            files[name] = spec.substr(eq + 1);
        }
        for (auto &[name, file] : files) options.inputs[name] = to_tensor(read_npy(file), *program.tensor(name), file);
    }
    if (!p.save_binary.empty()) {
        std::vector<uint8_t> bin = encode_program(program);
        std::ofstream out(p.save_binary, std::ios::binary);
        if (!out) throw Error("cannot write '" + p.save_binary + "'");
        out.write(reinterpret_cast<const char *>(bin.data()), std::streamsize(bin.size()));
    }

    SimResult result = simulate(program, model, options);
    result.report.program = fs::path(path).filename().string();

    if (!p.output_dir.empty()) {
        std::error_code ec;
        fs::create_directories(p.output_dir, ec);
        if (ec) throw Error("cannot create the output folder '" + p.output_dir + "': " + ec.message());
        for (auto &[name, t] : result.outputs) write_npy((fs::path(p.output_dir) / (name + ".npy")).string(), to_npy(t));
    }
    if (!p.trace.empty()) {
        std::ofstream out(p.trace);
        if (!out) throw Error("cannot write trace '" + p.trace + "'");
        out << chrome_trace_json(result, program, model);
    }
    int status = 0;
    std::vector<std::string> mismatches;
    if (p.check) {
        if (!options.functional) throw UsageError("--check needs values: drop --timing-only");
        for (auto &d : program.tensors) {
            if (!d.is_output) continue;
            if (d.file.empty()) throw Error("--check: output '" + d.name + "' has no file= to compare with");
            NpyArray want = read_npy(resolve(program, d.file));
            const TensorData &got = result.outputs.at(d.name);
            if (want.shape != got.shape || want.descr != dtype_npy_descr(got.dtype) || want.data != got.bytes) {
                int64_t first = -1;
                for (size_t i = 0; i < std::min(want.data.size(), got.bytes.size()); ++i)
                    if (want.data[i] != got.bytes[i]) {
                        first = int64_t(i) / dtype_bytes(got.dtype);
                        break;
                    }
                mismatches.push_back(d.name + (first >= 0 ? " (first difference at element " + std::to_string(first) + ")" : " (shape or dtype)"));
            }
        }
        if (!mismatches.empty()) status = 1;
    }
    if (p.json) {
        nlohmann::ordered_json j = nlohmann::ordered_json::parse(result.report.to_json());
        if (p.check) j["check"] = mismatches.empty() ? "pass" : "fail";
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::fputs(result.report.to_text().c_str(), stdout);
        if (p.check && mismatches.empty()) std::printf("check: every output matches its expected file\n");
    }
    for (auto &m : mismatches) std::fprintf(stderr, "tessera: error: output %s differs from the expected file\n", m.c_str());
    return status;
}

} // namespace

Command add_sim_command(CLI::App &app) {
    auto o = std::make_shared<SimOptionsCli>();
    CLI::App *cmd = app.add_subcommand("sim", "run a chip program on a target: values, cycles, utilisation");
    cmd->footer("Runs a chip program (assembly .tasm, or the binary form) on a target: real values in every\n"
                     "memory and the cycle-level timing of every instruction.");
    cmd->add_option("program", o->program, "the program: assembly text or the binary form")->required();
    cmd->add_option("--target", o->target, "built-in target name (tessera targets) or a target .json file; defaults to the "
                                           "program's .target directive");
    cmd->add_option("--input", o->inputs, "NAME=FILE.npy: data of an .input tensor; repeatable. Overrides file= in the "
                                          "program, whose paths are relative to the program's folder")
        ->allow_extra_args(false);
    cmd->add_option("--output-dir", o->output_dir, "write every .output tensor as DIR/NAME.npy");
    cmd->add_flag("--check", o->check, "compare every .output with its file= (relative to the program); exit 1 on a mismatch");
    cmd->add_option("--trace", o->trace, "write a Chrome trace (chrome://tracing, Perfetto): a track per unit and bank");
    cmd->add_option("--save-binary", o->save_binary, "write the program in the binary form");
    cmd->add_flag("--timing-only", o->timing_only, "skip the functional simulation (no values, no inputs needed)");
    cmd->add_flag("--json", o->json, "print the report as JSON (keys: target, cycles, macs, mxm_utilization, stall_cycles, "
                                     "bank_conflicts, units, ...)");
    return {cmd, [o] { return run_sim(*o); }};
}

} // namespace tessera::cli
