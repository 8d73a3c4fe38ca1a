// `tessera compile MODEL.onnx` (issue 16): a model compiled ahead of time and used from C with no
// Tessera C++ code. On the host, the library and header are linked by a small C program built
// here with the system cc, whose outputs must be the reference evaluator's (fp32 within 1e-4 ×
// max(1, max|y|)); on the chips, a C program generated from <name>.model.json loads every kernel
// artifact with libtessera_chiprt and runs them in the manifest's order, and its outputs must be
// the reference's within the chips' bf16 tolerance (3e-2 × max(1, max|y|)).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "onnx_test_util.h"
#include "tessera/onnx.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera;

using onnx_test::work_dir;

const std::string kCli = TESSERA_BINARY_DIR "/apps/cli/tessera";

const fs::path &models_dir() { return onnx_test::small_models_dir(); }

/// The model, the reference evaluator's outputs on its test input, and that input.
struct Expected {
    onnx::Model model;
    Buffer<> input;
    std::vector<Buffer<>> outputs;
};

Expected expected_for(const std::string &name) {
    Expected e{onnx::import((models_dir() / (name + ".onnx")).string(), {.dims = {{"N", 2}}}),
               Buffer<>::load_npy((models_dir() / (name + ".in_0.npy")).string()), {}};
    e.outputs = e.model.pipeline.realize(e.model.realize_shapes(), e.model.bindings({{e.model.inputs.at(0).name, e.input}}), Target::reference());
    return e;
}

void write_raw(const fs::path &path, const Buffer<> &b) {
    const Buffer<> dense = b.copy();
    std::ofstream(path, std::ios::binary).write(static_cast<const char *>(dense.data()), std::streamsize(dense.number_of_elements() * dense.type().bytes()));
}

Buffer<> read_raw(const fs::path &path, Type type, const std::vector<int64_t> &shape) {
    Buffer<> b(type, shape);
    std::ifstream(path, std::ios::binary).read(static_cast<char *>(b.data()), std::streamsize(b.number_of_elements() * type.bytes()));
    return b;
}

using onnx_test::within;

std::string c_shape(const std::vector<int64_t> &shape) {
    std::string s;
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + std::to_string(shape[d]);
    return s;
}

tessera_test::CommandResult build_c_program(const fs::path &source, const fs::path &dir, const std::string &libraries, const fs::path &program) {
    return tessera_test::run_command("cc -std=c11 -Wall -Werror '" + source.string() + "' -I'" + dir.string() + "' -I'" TESSERA_SOURCE_DIR
                                     "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR "/codegen/include' " + libraries + " -L'" TESSERA_BINARY_DIR
                                     "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" +
                                     program.string() + "'" + (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
}

class CompileForHost : public testing::TestWithParam<std::string> {};

TEST_P(CompileForHost, ALinkedCProgramGivesTheReferenceOutputs) {
    const std::string name = GetParam();
    const Expected e = expected_for(name);
    ASSERT_EQ(e.model.inputs.size(), 1u);
    ASSERT_EQ(e.model.outputs.size(), 1u);
    const fs::path dir = work_dir();
    const auto r = tessera_test::run_command("'" + kCli + "' compile '" + (models_dir() / (name + ".onnx")).string() + "' --dim N=2 --target host -o '" +
                                             (dir / "lib").string() + "' --json");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out).at("library"), (dir / "lib" / ("lib" + name + ".a")).string());
    write_raw(dir / "x.bin", e.input);
    const std::vector<int64_t> &in_shape = e.input.shape(), &out_shape = e.outputs[0].shape();
    // The model's weights are inside the library: the C program passes only x and y.
    std::ostringstream c;
    c << "#include <stdio.h>\n#include <stdlib.h>\n#include \"" << name << ".h\"\n"
      << "int main(int argc, char **argv) {\n"
      << "    (void)argc;\n"
      << "    int64_t xs[] = {" << c_shape(in_shape) << "}, ys[] = {" << c_shape(out_shape) << "}, bad[] = {" << c_shape(in_shape) << "};\n"
      << "    float *x = malloc(sizeof(float) * " << e.input.number_of_elements() << "), *y = malloc(sizeof(float) * "
      << e.outputs[0].number_of_elements() << ");\n"
      << "    FILE *f = fopen(argv[1], \"rb\");\n"
      << "    if (!f || fread(x, sizeof(float), " << e.input.number_of_elements() << ", f) != " << e.input.number_of_elements() << ") return 3;\n"
      << "    fclose(f);\n"
      << "    tessera_buffer_t X = {x, xs, NULL, " << in_shape.size() << ", TESSERA_TYPE_FLOAT, 32, 0};\n"
      << "    tessera_buffer_t Y = {y, ys, NULL, " << out_shape.size() << ", TESSERA_TYPE_FLOAT, 32, 0};\n"
      << "    int code = " << name << "(&X, &Y);\n"
      << "    if (code) { fprintf(stderr, \"%s\\n\", " << name << "_error_message(code)); return 1; }\n"
      << "    f = fopen(argv[2], \"wb\");\n"
      << "    fwrite(y, sizeof(float), " << e.outputs[0].number_of_elements() << ", f);\n"
      << "    fclose(f);\n"
      << "    bad[0] += 1; /* a wrong shape is an error code with words, not a crash */\n"
      << "    tessera_buffer_t B = {x, bad, NULL, " << in_shape.size() << ", TESSERA_TYPE_FLOAT, 32, 0};\n"
      << "    code = " << name << "(&B, &Y);\n"
      << "    printf(\"wrong shape: %d %s\\n\", code, " << name << "_error_message(code));\n"
      << "    free(x); free(y);\n"
      << "    return 0;\n}\n";
    std::ofstream(dir / "consumer.c") << c.str();
    const auto cc = build_c_program(dir / "consumer.c", dir / "lib", "'" + (dir / "lib" / ("lib" + name + ".a")).string() + "'", dir / "consumer");
    ASSERT_EQ(cc.status, 0) << cc.err;
    const auto run = tessera_test::run_command("'" + (dir / "consumer").string() + "' '" + (dir / "x.bin").string() + "' '" + (dir / "y.bin").string() + "'");
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    EXPECT_EQ(onnx_test::compare(read_raw(dir / "y.bin", Float(32), out_shape), e.outputs[0]), "");
    EXPECT_EQ(run.out.find("wrong shape: 0 "), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("wrong shape: "), std::string::npos) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Models, CompileForHost, testing::Values("mlp", "mlp_gelu", "conv_net", "resnet_block"));

using ChipCase = std::tuple<std::string, std::string>; // model, target

class CompileForChip : public testing::TestWithParam<ChipCase> {};

TEST_P(CompileForChip, ItsArtifactsRunThroughChiprtInManifestOrderGiveTheReference) {
    const auto &[name, target] = GetParam();
    const Expected e = expected_for(name);
    const fs::path dir = work_dir();
    const fs::path out = dir / "model";
    const auto r = tessera_test::run_command("'" + kCli + "' compile '" + (models_dir() / (name + ".onnx")).string() + "' --dim N=2 --target " + target +
                                             " -o '" + out.string() + "'");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    std::ifstream mf(out / (name + ".model.json"));
    const nlohmann::json manifest = nlohmann::json::parse(mf);
    ASSERT_EQ(manifest.at("inputs").size(), 1u);
    ASSERT_EQ(manifest.at("outputs").size(), 1u);
    write_raw(dir / "x.bin", e.input);

    // A C program from the manifest: one buffer per tensor, each kernel loaded and run in order.
    std::map<std::string, int> buffer_of; // tensor name -> its index
    std::ostringstream decl, body;
    auto buffer = [&](const nlohmann::json &t) {
        const std::string n = t.at("name");
        if (buffer_of.count(n)) return buffer_of[n];
        const int i = int(buffer_of.size());
        buffer_of[n] = i;
        const std::vector<int64_t> shape = t.at("shape");
        int64_t elements = 1;
        for (int64_t d : shape) elements *= d;
        const int bytes = std::max(1, t.at("type_bits").get<int>() / 8);
        decl << "    static int64_t s" << i << "[] = {" << c_shape(shape) << "};\n"
             << "    tessera_buffer_t b" << i << " = {calloc(" << elements << ", " << bytes << "), s" << i << ", NULL, " << shape.size() << ", "
             << t.at("type_code") << ", " << t.at("type_bits") << ", 0}; /* " << n << " */\n"
             << "    const size_t n" << i << " = " << elements * bytes << ";\n    (void)n" << i << ";\n";
        return i;
    };
    for (size_t k = 0; k < manifest.at("kernels").size(); ++k) {
        const nlohmann::json &kernel = manifest.at("kernels")[k];
        std::string ins, outs;
        for (const nlohmann::json &a : kernel.at("arguments")) {
            const std::string role = a.at("role");
            const int i = buffer(a);
            if (role == "constant")
                body << "    if (!read_file(\"" << (out / a.at("file").get<std::string>()).string() << "\", b" << i << ".data, n" << i << ")) return 3;\n";
            if (role == "input") body << "    if (!read_file(argv[1], b" << i << ".data, n" << i << ")) return 3;\n";
            const bool written = a.at("direction") == "out";
            (written ? outs : ins) += "&b" + std::to_string(i) + ", ";
        }
        body << "    {\n        tessera_chip_kernel_t *k = NULL;\n"
             << "        if (tessera_chip_load(\"" << (out / kernel.at("artifact").get<std::string>()).string() << "\", \"" << target << "\", &k)) {\n"
             << "            fprintf(stderr, \"load: %s\\n\", tessera_chip_last_error()); return 1; }\n"
             << "        const tessera_buffer_t *in[] = {" << ins << "};\n        tessera_buffer_t *out[] = {" << outs << "};\n"
             << "        tessera_chip_report_t report;\n"
             << "        if (tessera_chip_run(k, in, out, &report)) { fprintf(stderr, \"run: %s\\n\", tessera_chip_last_error()); return 1; }\n"
             << "        cycles += report.cycles, host_io += report.host_io_cycles;\n"
             << "        tessera_chip_free(k);\n    }\n";
    }
    const std::string output_name = manifest.at("outputs")[0].at("argument");
    ASSERT_TRUE(buffer_of.count(output_name)) << "no kernel writes the model's output " << output_name;
    std::ostringstream c;
    c << "#include <stdio.h>\n#include <stdlib.h>\n#include <tessera/chiprt.h>\n#include \"" << name << ".h\"\n"
      << "static int read_file(const char *path, void *data, size_t n) {\n"
      << "    FILE *f = fopen(path, \"rb\");\n    if (!f) return 0;\n    size_t got = fread(data, 1, n, f);\n    fclose(f);\n    return got == n;\n}\n"
      << "int main(int argc, char **argv) {\n    (void)argc;\n    long long cycles = 0, host_io = 0;\n"
      << "    if (" << name << "_kernel_files[0] == NULL) return 4; /* the header lists the kernels */\n"
      << decl.str() << body.str()
      << "    FILE *f = fopen(argv[2], \"wb\");\n    fwrite(b" << buffer_of[output_name] << ".data, 1, n" << buffer_of[output_name] << ", f);\n"
      << "    fclose(f);\n    printf(\"cycles %lld host_io %lld\\n\", cycles, host_io);\n";
    for (const auto &[tensor, i] : buffer_of) c << "    free(b" << i << ".data); /* " << tensor << " */\n";
    c << "    return 0;\n}\n";
    std::ofstream(dir / "consumer.c") << c.str();
    const auto cc = build_c_program(dir / "consumer.c", out, "", dir / "consumer");
    ASSERT_EQ(cc.status, 0) << cc.err << c.str();
    const auto run = tessera_test::run_command("'" + (dir / "consumer").string() + "' '" + (dir / "x.bin").string() + "' '" + (dir / "y.bin").string() + "'");
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    EXPECT_EQ(within(read_raw(dir / "y.bin", e.outputs[0].type(), e.outputs[0].shape()), e.outputs[0], 3e-2), "");
    // A chain leaves one intermediate a program; a branching graph (BERT's residuals) may leave more.
    EXPECT_GE(manifest.at("intermediates").size() + 1, manifest.at("kernels").size()) << "each program but the last leaves an intermediate";
    if (name != "bert_layer") EXPECT_EQ(manifest.at("kernels").size(), manifest.at("intermediates").size() + 1);
    // The artifacts are the programs run-model runs: as many, and the same cycles in all.
    const auto model = tessera_test::run_command("'" + kCli + "' run-model '" + (models_dir() / (name + ".onnx")).string() +
                                                 "' --dim N=2 --target " + target + " --json");
    ASSERT_EQ(model.status, 0) << model.err;
    const nlohmann::json report = nlohmann::json::parse(model.out);
    EXPECT_EQ(manifest.at("kernels").size(), report.at("programs").size());
    EXPECT_NE(run.out.find("cycles " + std::to_string(report.at("cycles").get<int64_t>()) + " host_io " +
                           std::to_string(report.at("host_io_cycles").get<int64_t>()) + "\n"),
              std::string::npos)
        << run.out << " vs run-model's " << report.at("cycles") << " + " << report.at("host_io_cycles");
    size_t kernels = 0;
    for (const nlohmann::json &p : manifest.at("kernels")) kernels += p.at("kernels").get<size_t>();
    EXPECT_EQ(kernels, report.at("kernels").size()) << "every kernel in one program";
    if (target == "npu-edge" && name == "mlp_gelu")
        EXPECT_LT(manifest.at("kernels").size(), report.at("kernels").size()) << "npu-edge links mlp_gelu's kernels: " << manifest.dump(1);
}

INSTANTIATE_TEST_SUITE_P(Models, CompileForChip,
                         testing::Combine(testing::Values("mlp", "mlp_gelu", "conv_net", "resnet_block", "bert_layer"), testing::Values("tsp-mini", "npu-edge")),
                         [](const testing::TestParamInfo<ChipCase> &i) {
                             std::string s = std::get<0>(i.param) + "_" + std::get<1>(i.param);
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

} // namespace
