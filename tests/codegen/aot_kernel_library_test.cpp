// The ahead-of-time path end to end: install Tessera into a temporary prefix, run the installed
// `tessera` from there, configure and
// build apps/kernel_library against the installed package (generators run at build time,
// kernels link into a plain C program), run the program, and compare what it computed with the
// reference evaluator on the same inputs. Then the installed `tessera gen-lib` builds one spec
// for the host and both chips, and a plain C consumer compiled against the prefix's include/ and
// lib/ alone gets the reference's values from each; and one C program links a host and a chip
// kernel of one spec at once and gets the reference's values from both. Each library built by
// tessera_add_library carries its provenance, which the program writes out and the test checks
// against the target, the schedule and the cycles the kernel reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gen_lib_consumer.h"
#include "kernel_pipelines.h"
#include "test_support.h"
#include "tessera/codegen/host_features.h"
#include "tessera/reference.h"
#include "tessera/tuning_db.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

int run(const std::string &command) {
    std::string quiet = command + " > " + TESSERA_BINARY_DIR "/aot_kernel_library.log 2>&1";
    return std::system(quiet.c_str());
}

std::string log_text() {
    std::ifstream f(TESSERA_BINARY_DIR "/aot_kernel_library.log");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

void expect_matches(const Pipeline &p, const fs::path &dir, const std::vector<std::string> &input_files,
                    const std::string &output_file, const std::vector<int64_t> &shape, int64_t reduction,
                    Type tolerance_type = Float(32)) {
    Bindings bindings;
    std::vector<Input> inputs = p.inputs();
    ASSERT_EQ(inputs.size(), input_files.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        // Inputs come back by name; files are listed in the pipeline's input order by name.
        std::string file;
        for (const std::string &f : input_files)
            if (f.substr(f.rfind('_') + 1) == inputs[i].name()) file = f;
        ASSERT_FALSE(file.empty()) << "no file for input " << inputs[i].name();
        bindings.emplace_back(inputs[i], Buffer<>::load_npy((dir / (file + ".npy")).string()));
    }
    Buffer<> expected = evaluate_reference(p, {shape}, bindings)[0];
    Buffer<> got = Buffer<>::load_npy((dir / (output_file + ".npy")).string());
    Comparison c = compare(got, expected, Tolerance::for_type(tolerance_type, reduction));
    EXPECT_TRUE(c.equal) << output_file << ": " << c.message;
}

/// Installs the build into WORK/prefix (a fresh WORK) and runs the installed `tessera gen-lib` on
/// `spec` into WORK/lib, with nothing of the build tree (no LD_LIBRARY_PATH: the CLI finds its
/// libraries from the prefix). Not through run(): its log file belongs to the first test, which
/// ctest -j may run beside the others. Returns the prefix.
fs::path install_and_gen_lib(const fs::path &work, const std::string &spec) {
    fs::remove_all(work);
    fs::create_directories(work);
    const fs::path prefix = work / "prefix";
    const tessera_test::CommandResult install = tessera_test::run_command("cmake --install " TESSERA_BINARY_DIR " --prefix '" + prefix.string() + "'");
    EXPECT_EQ(install.status, 0) << install.out << install.err;
    std::ofstream(work / "spec.json") << spec;
    const tessera_test::CommandResult gen = tessera_test::run_command("env -u LD_LIBRARY_PATH '" + (prefix / "bin" / "tessera").string() +
                                                                      "' gen-lib '" + (work / "spec.json").string() + "' -o '" +
                                                                      (work / "lib").string() + "' --repeats 1");
    EXPECT_EQ(gen.status, 0) << gen.err;
    return prefix;
}

/// Compiles the plain C `source` into `program` against the installed prefix's include/ and lib/
/// alone (the chip kernels' headers include tessera/chiprt.h), the generated headers' folders
/// `includes` and their `archives`.
tessera_test::CommandResult cc_against_prefix(const fs::path &source, const std::vector<fs::path> &includes,
                                              const std::vector<fs::path> &archives, const fs::path &prefix, const std::string &program) {
    std::string command = "cc -std=c11 -Wall -Werror '" + source.string() + "'";
    for (const fs::path &dir : includes) command += " -I'" + dir.string() + "'";
    command += " -I'" + (prefix / "include").string() + "'";
    for (const fs::path &archive : archives) command += " '" + archive.string() + "'";
    command += " -L'" + (prefix / "lib").string() + "' -Wl,-rpath,'" + (prefix / "lib").string() + "' -ltessera_chiprt -lpthread -lm -o '" +
               program + "'" + (tessera_test::kSanitized ? " -fsanitize=address,undefined" : "");
    return tessera_test::run_command(command);
}

} // namespace

TEST(AotKernelLibrary, InstalledPackageBuildsKernelsThatMatchTheReference) {
    const fs::path work = fs::path(TESSERA_BINARY_DIR) / "aot_kernel_library";
    fs::remove_all(work);
    fs::create_directories(work / "out");
    const std::string prefix = (work / "prefix").string(), build = (work / "build").string();
    ASSERT_EQ(run("cmake --install " TESSERA_BINARY_DIR " --prefix " + prefix), 0) << log_text();
    // The installed CLI finds its libraries from the prefix alone (its RPATH is relative to it).
    for (const std::string args : {"targets --json", "run matmul M=48 N=64 K=40 --target host --json",
                                   "run matmul M=48 N=64 K=40 dtype=int8 --target tsp-mini --json"}) {
        tessera_test::CommandResult r = tessera_test::run_command("env -u LD_LIBRARY_PATH '" + prefix + "/bin/tessera' " + args);
        EXPECT_EQ(r.status, 0) << "tessera " << args << ": " << r.err;
        EXPECT_NE(r.out.find('{'), std::string::npos) << "tessera " << args << " printed no JSON: " << r.out;
    }
    ASSERT_EQ(run("cmake -S " TESSERA_SOURCE_DIR "/apps/kernel_library -B " + build +
                  " -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=" + prefix),
              0)
        << log_text();
    ASSERT_EQ(run("cmake --build " + build + " -j2"), 0) << log_text();
    ASSERT_EQ(run(build + "/kernel_demo " + (work / "out").string()), 0) << log_text();
    // The demo's error-path checks printed their messages.
    EXPECT_NE(log_text().find("error as expected"), std::string::npos) << log_text();

    using namespace kernel_library;
    expect_matches(matmul(), work / "out", {"matmul_A", "matmul_B"}, "matmul_C", {kM, kN}, kK);
    // The chip library, built from the same algorithm and called on the same inputs: equal to the
    // reference within bf16's tolerance (the MXM multiplies fp32 operands rounded to bf16).
    // The same on npu-edge, and on tsp-custom: the project's JSON copy of tsp-mini under its own name.
    for (const auto &[output, chip] : {std::pair{"matmul_chip_C", "tsp-mini"}, {"matmul_npu_C", "npu-edge"}, {"matmul_custom_C", "tsp-custom"}}) {
        expect_matches(matmul_chip(), work / "out", {"matmul_A", "matmul_B"}, output, {kM, kN}, kK, BFloat(16));
        EXPECT_NE(log_text().find(std::string(output) + " on " + chip + ": "), std::string::npos) << log_text();
    }
    // A relative JSON target is taken from the project's folder (the generator runs in the build
    // folder, so the library above would not exist otherwise), and the library depends on it.
    const tessera_test::CommandResult query =
        tessera_test::run_command("ninja -C " + build + " -t query " + build + "/kl_matmul_custom.tessera/libkl_matmul_custom.a");
    ASSERT_EQ(query.status, 0) << query.err;
    EXPECT_NE(query.out.find("\n    " TESSERA_SOURCE_DIR "/apps/kernel_library/targets/tsp-custom.json\n"), std::string::npos) << query.out;
    // The dispatching matmul: one entry point, the first M rows of matmul_A at each M, each
    // equal to the reference at that M (the kernels for M = 8, 32, 96 ran on zero-padded rows).
    const Buffer<> a_all = Buffer<>::load_npy((work / "out" / "matmul_A.npy").string());
    const Buffer<> b_all = Buffer<>::load_npy((work / "out" / "matmul_B.npy").string());
    for (int64_t m : {1, 5, 8, 9, 32, 61, 96}) {
        SCOPED_TRACE("M=" + std::to_string(m));
        const Pipeline p = matmul_rows(m);
        Buffer<> a_rows(Float(32), {m, kK});
        std::memcpy(a_rows.data(), a_all.data(), size_t(m * kK) * sizeof(float));
        Bindings bindings;
        for (const Input &input : p.inputs()) bindings.emplace_back(input, input.name() == "A" ? a_rows : b_all);
        const Buffer<> expected = evaluate_reference(p, {{m, kN}}, bindings)[0];
        const Buffer<> got = Buffer<>::load_npy((work / "out" / ("matmul_rows_C_" + std::to_string(m) + ".npy")).string());
        const Comparison c = compare(got, expected, Tolerance::for_type(Float(32), kK));
        EXPECT_TRUE(c.equal) << c.message;
    }
    for (const char *line : {"kl_matmul_rows M=1 -> kl_matmul_rows_M8", "kl_matmul_rows M=9 -> kl_matmul_rows_M32",
                             "kl_matmul_rows M=61 -> kl_matmul_rows_M96", "kl_matmul_rows M=96 -> kl_matmul_rows_M96",
                             "rows: M = 97: error as expected: M = 97 (from A's dimension 0) is outside the range 1..96"})
        EXPECT_NE(log_text().find(line), std::string::npos) << line << "\n" << log_text();
    expect_matches(conv2d(), work / "out", {"conv2d_X", "conv2d_W"}, "conv2d_Y", {kBatch, kOut, kSize, kSize}, kChannels * 9);
    expect_matches(softmax(), work / "out", {"softmax_X"}, "softmax_Y", {kRows, kCols}, kCols);

    // Provenance: <name>_provenance() (written out by the demo) is the JSON beside the archive.
    auto provenance = [&](const std::string &library) {
        const nlohmann::json linked = nlohmann::json::parse(std::ifstream(work / "out" / (library + ".provenance.json")));
        const nlohmann::json beside = nlohmann::json::parse(std::ifstream(fs::path(build) / (library + ".tessera") / (library + ".provenance.json")));
        EXPECT_EQ(linked, beside) << library;
        EXPECT_EQ(linked["library"], library);
        EXPECT_EQ(linked["compiler_version"], compiler_version());
        return linked;
    };
    // Chips: the target's hash, the library schedule, and the cycles the kernel reported when run.
    for (const auto &[library, chip] : {std::pair{"kl_matmul_chip", "tsp-mini"}, {"kl_matmul_npu", "npu-edge"}}) {
        SCOPED_TRACE(library);
        const nlohmann::json p = provenance(library);
        EXPECT_EQ(p["target"], chip);
        EXPECT_EQ(p["target_hash"], TargetIdentity::of(Target::named(chip)).hash);
        ASSERT_EQ(p["kernels"].size(), 1u) << p.dump();
        const nlohmann::json &k = p["kernels"][0];
        EXPECT_EQ(k["name"], library);
        EXPECT_EQ(k["tuned"], false);
        EXPECT_EQ(k["schedule_source"], "library schedule");
        EXPECT_EQ(k["schedule"], nlohmann::json::parse(matmul_chip(chip).schedule().to_json()));
        const std::string ran = std::string(library == std::string("kl_matmul_chip") ? "matmul_chip_C" : "matmul_npu_C") + " on " + chip + ": " +
                                std::to_string(k["cycles"].get<int64_t>()) + " cycles";
        EXPECT_NE(log_text().find(ran), std::string::npos) << "the provenance's cycles are the run's: " << ran << "\n" << log_text();
    }
    // The host: this CPU, a positive median of 7 runs and its noise.
    const nlohmann::json host = provenance("kl_matmul");
    EXPECT_EQ(host["target"], "host");
    EXPECT_EQ(host["target_hash"], TargetIdentity::of(Target::host()).hash);
    ASSERT_EQ(host["kernels"].size(), 1u);
    EXPECT_EQ(host["kernels"][0]["cpu"], host_features().to_string());
    EXPECT_GT(host["kernels"][0]["time_ms"].get<double>(), 0.0);
    EXPECT_GE(host["kernels"][0]["noise"].get<double>(), 0.0);
    EXPECT_EQ(host["kernels"][0]["repeats"], 7);
    EXPECT_EQ(host["kernels"][0]["schedule"], nlohmann::json::parse(matmul().schedule().to_json()));
    // The dispatching library: its buckets in the order a call tries them, each measured.
    const nlohmann::json rows = provenance("kl_matmul_rows");
    ASSERT_EQ(rows["dispatch"].size(), 1u) << rows.dump();
    EXPECT_EQ(rows["dispatch"][0]["ranges"]["M"], "1..96");
    std::vector<std::string> order, measured;
    for (const auto &b : rows["dispatch"][0]["kernels"]) order.push_back(b["kernel"].get<std::string>());
    for (const auto &k : rows["kernels"]) {
        EXPECT_EQ(k["dispatch_of"], "kl_matmul_rows");
        EXPECT_GT(k["time_ms"].get<double>(), 0.0);
        measured.push_back(k["name"].get<std::string>());
    }
    EXPECT_EQ(order, (std::vector<std::string>{"kl_matmul_rows_M8", "kl_matmul_rows_M32", "kl_matmul_rows_M96"}));
    EXPECT_EQ(measured, order);
}

TEST(AotKernelLibrary, InstalledGenLibBuildsHostAndChipLibrariesFromOneSpecThatAPlainCProgramRunsLikeTheReference) {
    const fs::path work = fs::path(TESSERA_BINARY_DIR) / "aot_gen_lib";
    const fs::path prefix = install_and_gen_lib(work, tessera_test::kGenLibSpec);
    ASSERT_FALSE(testing::Test::HasFailure());
    std::ofstream(work / "consumer.c") << tessera_test::kGenLibConsumer;
    const tessera_test::GenLibExpected expected = tessera_test::write_gen_lib_inputs(work);
    for (const std::string target : {"host", "tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(target);
        const fs::path lib = work / "lib" / target;
        const std::string program = (work / ("consumer_" + target)).string();
        const tessera_test::CommandResult cc = cc_against_prefix(work / "consumer.c", {lib}, {lib / "libmm.a", lib / "libsm.a", lib / "libdemo_provenance.a"},
                                                                 prefix, program);
        ASSERT_EQ(cc.status, 0) << cc.err;
        const tessera_test::CommandResult ran = tessera_test::run_command("env -u LD_LIBRARY_PATH '" + program + "' '" + work.string() + "'");
        ASSERT_EQ(ran.status, 0) << ran.err;
        EXPECT_NE(ran.out.find("wrong shape: "), std::string::npos) << ran.out;
        EXPECT_NE(ran.out.find("\"target\": \"" + target + "\""), std::string::npos) << "the provenance names its target: " << ran.out;
        tessera_test::expect_gen_lib_outputs(work, target, expected);
    }
}

namespace {

/// One program linking a host and a chip kernel of one spec at once (named apart, so that both
/// fit one link): the same int8 inputs through both, each result written for the test to check.
const std::string kBothConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm_host.h"
#include "mm_chip.h"
)" + std::string(tessera_test::kConsumerHelpers) + R"(int main(int argc, char **argv) {
    const char *dir = argv[1];
    const int64_t a_shape[2] = {32, 48}, b_shape[2] = {48, 64}, c_shape[2] = {32, 64};
    tessera_buffer_t A = buf(slurp(dir, "A.bin", 32 * 48), a_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t B = buf(slurp(dir, "B.bin", 48 * 64), b_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t C = buf(calloc(32 * 64, 4), c_shape, TESSERA_TYPE_INT, 32);
    int code = mm_host(&A, &B, &C);
    if (code) { fprintf(stderr, "mm_host: %s\n", mm_host_error_message(code)); return 1; }
    spill(dir, "C_host.bin", C.data, 32 * 64 * 4);
    memset(C.data, 0, 32 * 64 * 4);
    code = mm_chip(&A, &B, &C);
    if (code) { fprintf(stderr, "mm_chip: %s\n", mm_chip_error_message(code)); return 1; }
    spill(dir, "C_chip.bin", C.data, 32 * 64 * 4);
    printf("mm_chip on %s: %lld cycles\n", mm_chip_last_report()->target, (long long)mm_chip_last_report()->cycles);
    free(A.data); free(B.data); free(C.data);
    return 0;
}
)";

} // namespace

TEST(AotKernelLibrary, OnePlainCProgramLinksAHostAndAChipKernelOfOneInstalledGenLibSpec) {
    const fs::path work = fs::path(TESSERA_BINARY_DIR) / "aot_gen_lib_both";
    const fs::path prefix = install_and_gen_lib(work, R"({"name": "both", "kernels": [
        {"op": "matmul", "name": "mm_host", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"}, "targets": ["host"]},
        {"op": "matmul", "name": "mm_chip", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"}, "targets": ["tsp-mini"]}]})");
    ASSERT_FALSE(testing::Test::HasFailure());
    std::ofstream(work / "consumer.c") << kBothConsumer;
    const tessera_test::GenLibExpected expected = tessera_test::write_gen_lib_inputs(work);
    const fs::path host = work / "lib" / "host", chip = work / "lib" / "tsp-mini";
    const std::string program = (work / "consumer").string();
    const tessera_test::CommandResult cc =
        cc_against_prefix(work / "consumer.c", {host, chip}, {host / "libmm_host.a", chip / "libmm_chip.a"}, prefix, program);
    ASSERT_EQ(cc.status, 0) << cc.err;
    const tessera_test::CommandResult ran = tessera_test::run_command("env -u LD_LIBRARY_PATH '" + program + "' '" + work.string() + "'");
    ASSERT_EQ(ran.status, 0) << ran.err;
    EXPECT_NE(ran.out.find("mm_chip on tsp-mini: "), std::string::npos) << ran.out;
    for (const char *file : {"C_host.bin", "C_chip.bin"}) {
        const Buffer<> c = tessera_test::read_raw<int32_t>(work / file, Int(32), {32, 64});
        const Comparison cmp = compare(c, expected.mm, Tolerance::for_type(Int(32)));
        EXPECT_TRUE(cmp.equal) << file << ": int8 matmul must be exact: " << cmp.message;
    }
}
