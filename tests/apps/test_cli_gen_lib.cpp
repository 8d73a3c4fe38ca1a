// `tessera gen-lib`: one spec builds the same kernels for the host and both chips; a plain C
// program, linked once against each target's libraries (relinking is all that changes), runs
// them on the same inputs and gets the reference evaluator's values. A tuning database's record
// is used and named in the manifest and provenance; untuned kernels are listed; bad specs are
// clear errors. A range parameter ("M": "1..16") makes one entry point that dispatches to
// specialised kernels, padding the call into a larger bucket.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <nlohmann/json.hpp>

#include "tessera/chipsim/target.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/ops/registry.h"
#include "tessera/reference.h"
#include "tessera/tuning_db.h"
#include "tessera/workload.h"
#include "gen_lib_consumer.h"
#include "test_support.h"

using namespace tessera;
using tessera_test::CommandResult;
using tessera_test::read_raw;
using tessera_test::write_raw;
namespace fs = std::filesystem;

namespace {

CommandResult tessera_cli(const std::string &args) { return tessera_test::run_command("'" + std::string(TESSERA_CLI) + "' " + args); }

void write_text(const fs::path &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

using tessera_test::read_text;

} // namespace

TEST(CliGenLib, OneSpecBuildsHostAndChipLibrariesThatACProgramRunsLikeTheReference) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", tessera_test::kGenLibSpec);
    write_text(dir / "consumer.c", tessera_test::kGenLibConsumer);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --json");
    ASSERT_EQ(gen.status, 0) << gen.err;
    const auto built = nlohmann::json::parse(gen.out);
    ASSERT_EQ(built["kernels"].size(), 6u);
    EXPECT_EQ(built["untuned"].size(), 6u) << "no database: every kernel has its library schedule";
    for (const auto &k : built["kernels"]) {
        if (k["target"] != "host") {
            EXPECT_GT(k["cycles"].get<int64_t>(), 0) << k.dump();
        } else {
            EXPECT_GT(k["time_ms"].get<double>(), 0.0) << k.dump();
            EXPECT_GE(k["noise"].get<double>(), 0.0) << k.dump();
        }
    }

    // The same inputs for every target, and the reference's answer.
    const tessera_test::GenLibExpected expected = tessera_test::write_gen_lib_inputs(dir);

    for (const std::string target : {"host", "tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(target);
        const fs::path lib = dir / "lib" / target;
        const std::string program = (dir / ("consumer_" + target)).string();
        const CommandResult cc = tessera_test::run_command(
            "cc -std=c11 -Wall -Werror '" + (dir / "consumer.c").string() + "' -I'" + lib.string() + "' -I'" TESSERA_SOURCE_DIR
            "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR "/codegen/include' '" + (lib / "libmm.a").string() + "' '" +
            (lib / "libsm.a").string() + "' '" + (lib / "libdemo_provenance.a").string() + "' -L'" TESSERA_BINARY_DIR
            "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" + program + "'" +
            // A program linking a sanitized libtessera_chiprt must load the sanitizer runtime first.
            (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
        ASSERT_EQ(cc.status, 0) << cc.err;
        const CommandResult run = tessera_test::run_command("'" + program + "' '" + dir.string() + "'");
        ASSERT_EQ(run.status, 0) << run.err;
        EXPECT_NE(run.out.find("wrong shape: "), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("\"target\": \"" + target + "\""), std::string::npos) << "the provenance names its target: " << run.out;

        tessera_test::expect_gen_lib_outputs(dir, target, expected);
    }
}

namespace {

/// A tuning database at `db_path` holding one record: the tsp-mini library schedule of the int8
/// matmul M=32 N=64 K=48, said to take 99 cycles. Returns its ID.
int64_t add_tsp_matmul_record(const std::string &db_path) {
    ops::OpInstance op = ops::build_op("matmul", {{"M", "32"}, {"N", "64"}, {"K", "48"}, {"dtype", "int8"}});
    const Target tsp = Target::named("tsp-mini");
    apply_chip_library_schedule(op.pipeline, tsp, op.output_shapes);
    TuningDatabase db(db_path);
    MeasuredSchedule m;
    m.schedule = op.pipeline.schedule();
    m.measurement = Measurement::chip_cycles(99);
    return db.add(Workload::of(op.pipeline, op.output_shapes, op.description()), TargetIdentity::of(tsp), m);
}

const char *kTunedSpec = R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"},
                                       "targets": ["host", "tsp-mini"]}]})";

/// What gen-lib prints when the tsp-mini kernel took record `id` and the host kernel had none.
void expect_tuned_tsp_kernel(const CommandResult &gen, int64_t id) {
    EXPECT_NE(gen.out.find("tsp-mini/mm: matmul K=48 M=32 N=64 batch=1 dtype=int8 transpose_a=0 transpose_b=0, tuned record #" + std::to_string(id)),
              std::string::npos)
        << gen.out;
    EXPECT_NE(gen.out.find("untuned kernels (1, library schedule): host/mm\n"), std::string::npos) << gen.out;
}

} // namespace

TEST(CliGenLib, UsesTheTuningDatabaseAndNamesTheRecord) {
    const fs::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const int64_t id = add_tsp_matmul_record(db_path);
    write_text(dir / "spec.json", kTunedSpec);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --db '" + db_path + "'");
    ASSERT_EQ(gen.status, 0) << gen.err;
    expect_tuned_tsp_kernel(gen, id);
    std::ifstream manifest(dir / "lib" / "tsp-mini" / "mm.manifest.json");
    const auto m = nlohmann::json::parse(manifest);
    EXPECT_EQ(m["tuning_record_id"], id);
    EXPECT_EQ(m["target"]["name"], "tsp-mini");
    EXPECT_EQ(m["target"]["hash"], TargetIdentity::of(Target::named("tsp-mini")).hash) << "the same hash the tuning database keys by";
    std::ifstream provenance(dir / "lib" / "tsp-mini" / "provenance.json");
    const auto p = nlohmann::json::parse(provenance);
    EXPECT_EQ(p["kernels"][0]["tuning_record_id"], id);
    EXPECT_EQ(p["compiler_version"], compiler_version());
}

TEST(CliGenLib, TakesTheTuningDatabaseFromTheEnvironmentWithoutDb) {
    const fs::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const int64_t id = add_tsp_matmul_record(db_path);
    write_text(dir / "spec.json", kTunedSpec);
    const CommandResult gen = tessera_test::run_command("env TESSERA_TUNING_DB='" + db_path + "' '" TESSERA_CLI "' gen-lib '" +
                                                        (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
    ASSERT_EQ(gen.status, 0) << gen.err;
    expect_tuned_tsp_kernel(gen, id);
    const auto m = nlohmann::json::parse(read_text(dir / "lib" / "tsp-mini" / "mm.manifest.json"));
    EXPECT_EQ(m["tuning_record_id"], id);
}

namespace {

/// A consumer of one matmul kernel, compiled once per kernel: -DKERNEL=<name> -DKERNEL_H="<name>.h"
/// -DM=<rows> -DIN_CODE/-DIN_BITS (the operands' type) -DOUT_CODE/-DOUT_BITS (the result's), N = 16,
/// K = 24. Reads A.bin and B.bin from the folder given, writes C.bin.
const std::string kOneMatmulConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include KERNEL_H
#define STR2(x) #x
#define STR(x) STR2(x)
#define ERROR_MESSAGE2(k) k##_error_message
#define ERROR_MESSAGE(k) ERROR_MESSAGE2(k)

)" + std::string(tessera_test::kConsumerHelpers) + R"(int main(int argc, char **argv) {
    const int64_t a_shape[2] = {M, 24}, b_shape[2] = {24, 16}, c_shape[2] = {M, 16};
    tessera_buffer_t A = buf(slurp(argv[1], "A.bin", M * 24 * IN_BITS / 8), a_shape, IN_CODE, IN_BITS);
    tessera_buffer_t B = buf(slurp(argv[1], "B.bin", 24 * 16 * IN_BITS / 8), b_shape, IN_CODE, IN_BITS);
    tessera_buffer_t C = buf(calloc(M * 16, OUT_BITS / 8), c_shape, OUT_CODE, OUT_BITS);
    int code = KERNEL(&A, &B, &C);
    if (code) { fprintf(stderr, "%s: %s\n", STR(KERNEL), ERROR_MESSAGE(KERNEL)(code)); return 1; }
    spill(argv[1], "C.bin", C.data, M * 16 * OUT_BITS / 8);
    free(A.data); free(B.data); free(C.data);
    return 0;
}
)";

} // namespace

TEST(CliGenLib, AListValuedParameterBuildsOneCorrectKernelPerValue) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", R"({"name": "lists", "kernels": [{"op": "matmul", "name": "mm",
        "params": {"M": [8, 32], "N": 16, "K": 24, "dtype": ["int8", "float32"]}, "targets": ["host", "tsp-mini"]}]})");
    write_text(dir / "consumer.c", kOneMatmulConsumer);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --repeats 1 --json");
    ASSERT_EQ(gen.status, 0) << gen.err;
    const auto report = nlohmann::json::parse(gen.out);
    std::set<std::string> built;
    for (const auto &k : report["kernels"]) built.insert(k["target"].get<std::string>() + "/" + k["name"].get<std::string>());
    std::set<std::string> want;
    for (const std::string target : {"host", "tsp-mini"})
        for (const std::string kernel : {"mm_M8_dtypeint8", "mm_M8_dtypefloat32", "mm_M32_dtypeint8", "mm_M32_dtypefloat32"})
            want.insert(target + "/" + kernel);
    EXPECT_EQ(built, want) << "one kernel per combination of the listed values";

    for (const int64_t m : {8, 32}) {
        for (const std::string dtype : {"int8", "float32"}) {
            const ops::OpInstance op = ops::build_op("matmul", {{"M", std::to_string(m)}, {"N", "16"}, {"K", "24"}, {"dtype", dtype}});
            const Bindings in = op.random_inputs(uint64_t(m) + dtype.size());
            write_raw(dir / "A.bin", in[0].name == "A" ? in[0].buffer : in[1].buffer);
            write_raw(dir / "B.bin", in[0].name == "A" ? in[1].buffer : in[0].buffer);
            const Buffer<> expected = evaluate_reference(op.pipeline, op.output_shapes, in)[0];
            const bool int8 = dtype == "int8";
            const std::string kernel = "mm_M" + std::to_string(m) + "_dtype" + dtype;
            for (const std::string target : {"host", "tsp-mini"}) {
                SCOPED_TRACE(target + "/" + kernel);
                const fs::path lib = dir / "lib" / target;
                const std::string program = (dir / (target + "_" + kernel)).string();
                const CommandResult cc = tessera_test::run_command(
                    "cc -std=c11 -Wall -Werror -DKERNEL=" + kernel + " '-DKERNEL_H=\"" + kernel + ".h\"' -DM=" + std::to_string(m) +
                    (int8 ? " -DIN_CODE=TESSERA_TYPE_INT -DIN_BITS=8 -DOUT_CODE=TESSERA_TYPE_INT -DOUT_BITS=32"
                          : " -DIN_CODE=TESSERA_TYPE_FLOAT -DIN_BITS=32 -DOUT_CODE=TESSERA_TYPE_FLOAT -DOUT_BITS=32") +
                    " '" + (dir / "consumer.c").string() + "' -I'" + lib.string() + "' -I'" TESSERA_SOURCE_DIR "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR
                    "/codegen/include' '" + (lib / ("lib" + kernel + ".a")).string() + "' -L'" TESSERA_BINARY_DIR "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR
                    "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" + program + "'" + (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
                ASSERT_EQ(cc.status, 0) << cc.err;
                const CommandResult run = tessera_test::run_command("'" + program + "' '" + dir.string() + "'");
                ASSERT_EQ(run.status, 0) << run.err;
                const Buffer<> c = int8 ? read_raw<int32_t>(dir / "C.bin", Int(32), {m, 16}) : read_raw<float>(dir / "C.bin", Float(32), {m, 16});
                // int8: exact; float32: fp32's tolerance on the host, bf16's on the chip (its MXM rounds operands to bf16).
                const Type tolerance = int8 ? Int(32) : target == "host" ? Float(32) : BFloat(16);
                const Comparison cmp = compare(c, expected, Tolerance::for_type(tolerance, 24));
                EXPECT_TRUE(cmp.equal) << cmp.message;
            }
        }
    }
}

TEST(CliGenLib, AJsonTargetsFolderIsNamedByItsNameAndTwoTargetsOfOneNameAreRefused) {
    const fs::path dir = tessera_test::unique_temp_dir();
    chipsim::Target chip = chipsim::load_target("tsp-mini");
    chip.name = "my-chip";
    write_text(dir / "my_chip_file.json", chip.to_json());
    chip.name = "tsp-mini";
    write_text(dir / "imposter.json", chip.to_json());
    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"},
        "targets": ["tsp-mini", ")" + (dir / "my_chip_file.json").string() + R"("]}]})");
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
    ASSERT_EQ(gen.status, 0) << gen.err;
    EXPECT_NE(gen.out.find("\nmy-chip/mm: matmul"), std::string::npos) << gen.out;
    std::set<std::string> folders;
    for (const auto &entry : fs::directory_iterator(dir / "lib")) folders.insert(entry.path().filename().string());
    EXPECT_EQ(folders, (std::set<std::string>{"tsp-mini", "my-chip"}));
    const auto m = nlohmann::json::parse(read_text(dir / "lib" / "my-chip" / "mm.manifest.json"));
    EXPECT_EQ(m["target"]["name"], "my-chip");
    EXPECT_TRUE(fs::exists(dir / "lib" / "my-chip" / "libmm.a"));

    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"},
        "targets": ["tsp-mini", ")" + (dir / "imposter.json").string() + R"("]}]})");
    const CommandResult clash = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "clash").string() + "'");
    EXPECT_EQ(clash.status, 1);
    EXPECT_NE(clash.err.find("tessera: error: targets 'tsp-mini' and '" + (dir / "imposter.json").string() + "' are both named 'tsp-mini'"),
              std::string::npos)
        << clash.err;
}

TEST(CliGenLib, BadSpecsAreClearErrors) {
    const fs::path dir = tessera_test::unique_temp_dir();
    auto error_of = [&](const std::string &spec, const std::string &extra = "") {
        write_text(dir / "spec.json", spec);
        const CommandResult r = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'" + extra);
        EXPECT_EQ(r.status, 1) << spec;
        EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << r.err;
        return r.err;
    };
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmull"}]})").find("matmull"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmul", "shape": 3}]})").find("unknown field 'shape'"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmul"}, {"op": "matmul"}]})").find("give the kernels distinct \"name\"s"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmul", "name": "2mm"}]})").find("is not a C identifier"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmul", "params": {"M": 0}}]})").find("M"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [)").find("not valid JSON"), std::string::npos);
    EXPECT_NE(error_of(R"({"kernels": [{"op": "matmul"}]})", " --db '" + (dir / "absent.db").string() + "'").find("does not exist"),
              std::string::npos);
}

TEST(CliGenLib, BaselineGateFailsNamingTheKernelASlowerTunedScheduleMadeSlower) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"},
                                       "targets": ["tsp-mini", "npu-edge"]}]})");
    const std::string spec = "gen-lib '" + (dir / "spec.json").string() + "' -o ";
    ASSERT_EQ(tessera_cli(spec + "'" + (dir / "old").string() + "'").status, 0);
    // The same build again passes the gate: chip cycles are exact.
    const CommandResult same = tessera_cli(spec + "'" + (dir / "same").string() + "' --baseline '" + (dir / "old").string() + "'");
    EXPECT_EQ(same.status, 0) << same.err;

    // A deliberately slower schedule for the tsp-mini kernel (4-row tiles, no double buffering),
    // stored as the database's best record for its workload.
    ops::OpInstance op = ops::build_op("matmul", {{"M", "32"}, {"N", "64"}, {"K", "48"}, {"dtype", "int8"}});
    const Target tsp = Target::named("tsp-mini");
    apply_chip_library_schedule(op.pipeline, tsp, op.output_shapes);
    const int64_t library_cycles = realize_on_chip(op.pipeline, op.output_shapes, op.random_inputs(1), tsp).report.cycles;
    op.pipeline.set_schedule(Schedule::from_json(R"({"funcs": [{"name": "matmul", "stages": [
        {"directives": [{"memory": "ACC", "op": "store_in"}], "stage": 0},
        {"directives": [{"factors": [64], "op": "split", "vars": ["k", "ko", "ki"]},
                        {"factors": [4, 64], "op": "tile", "vars": ["i", "j", "io", "jo", "ii", "ji"]},
                        {"op": "reorder", "vars": ["io", "jo", "ko", "ii", "ji", "ki"]},
                        {"op": "tensorize", "unit": "mxm", "vars": ["ii", "ji", "ki"]}], "stage": 1}]}], "version": 1})"));
    const int64_t slow_cycles = realize_on_chip(op.pipeline, op.output_shapes, op.random_inputs(1), tsp).report.cycles;
    ASSERT_GT(slow_cycles, library_cycles) << "the test's premise: the record's schedule is slower";
    const std::string db_path = (dir / "tuning.db").string();
    {
        TuningDatabase db(db_path);
        MeasuredSchedule m;
        m.schedule = op.pipeline.schedule();
        m.measurement = Measurement::chip_cycles(slow_cycles);
        db.add(Workload::of(op.pipeline, op.output_shapes, op.description()), TargetIdentity::of(tsp), m);
    }
    const CommandResult gate =
        tessera_cli(spec + "'" + (dir / "new").string() + "' --db '" + db_path + "' --baseline '" + (dir / "old").string() + "'");
    EXPECT_EQ(gate.status, 1);
    EXPECT_NE(gate.err.find("tessera: error: 1 kernel(s) slower than the baseline"), std::string::npos) << gate.err;
    EXPECT_NE(gate.err.find("tsp-mini/mm: " + std::to_string(slow_cycles) + " cycles, baseline " + std::to_string(library_cycles)),
              std::string::npos)
        << gate.err;
    EXPECT_EQ(gate.err.find("npu-edge/mm"), std::string::npos) << "only the slower kernel is listed: " << gate.err;
}

TEST(CliGenLib, HostGateComparesMediansWithTheThreshold) {
    // Baselines written by hand, far from any real time, so that noise cannot decide the outcome.
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 16, "N": 16, "K": 16}}]})");
    auto baseline_with = [&](const std::string &name, double ms) {
        fs::create_directories(dir / name / "host");
        write_text(dir / name / "host" / "provenance.json",
                   R"({"kernels": [{"name": "mm", "time_ms": )" + std::to_string(ms) + R"(, "noise": 0.05}]})");
        return (dir / name).string();
    };
    const std::string gen = "gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "new").string() + "' --repeats 3 --baseline ";
    const CommandResult slower = tessera_cli(gen + "'" + baseline_with("fast", 1e-9) + "'");
    EXPECT_EQ(slower.status, 1);
    EXPECT_NE(slower.err.find("host/mm: "), std::string::npos) << slower.err;
    EXPECT_NE(slower.err.find("threshold 10%"), std::string::npos) << slower.err;
    const CommandResult faster = tessera_cli(gen + "'" + baseline_with("slow", 1e9) + "'");
    EXPECT_EQ(faster.status, 0) << faster.err;
    EXPECT_NE(faster.out.find("baseline: host/mm: "), std::string::npos) << faster.out;
}

namespace {

/// A consumer of a dispatching matmul library (M = 1..16, N = 32, K = 24, int8): for each M on
/// the command line it reads A_<M>.bin and B.bin, calls the one entry point and writes C_<M>.bin;
/// then out-of-range and inconsistent shapes must be error codes.
const char *kDispatchConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm.h"

static void *slurp(const char *path, size_t bytes) {
    FILE *f = fopen(path, "rb");
    void *p = malloc(bytes);
    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fclose(f);
    return p;
}
static tessera_buffer_t buf(void *data, const int64_t *shape, uint8_t code, uint8_t bits) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 2; b.type_code = code; b.type_bits = bits;
    return b;
}
int main(int argc, char **argv) {
    const char *dir = argv[1];
    char path[4096];
    const int64_t b_shape[2] = {24, 32};
    snprintf(path, sizeof path, "%s/B.bin", dir);
    tessera_buffer_t B = buf(slurp(path, 24 * 32), b_shape, TESSERA_TYPE_INT, 8);
    for (int i = 2; i < argc; ++i) {
        const int64_t m = atoll(argv[i]);
        const int64_t a_shape[2] = {m, 24}, c_shape[2] = {m, 32};
        snprintf(path, sizeof path, "%s/A_%lld.bin", dir, (long long)m);
        tessera_buffer_t A = buf(slurp(path, (size_t)m * 24), a_shape, TESSERA_TYPE_INT, 8);
        tessera_buffer_t C = buf(calloc((size_t)m * 32, 4), c_shape, TESSERA_TYPE_INT, 32);
        int code = mm(&A, &B, &C);
        if (code) { fprintf(stderr, "mm M=%lld: %s\n", (long long)m, mm_error_message(code)); return 1; }
        printf("M=%lld -> %s\n", (long long)m, mm_dispatch(&m));
#ifdef TESSERA_TEST_CHIP
        if (mm_last_report()->cycles <= 0) { fprintf(stderr, "M=%lld: no report\n", (long long)m); return 1; }
#endif
        snprintf(path, sizeof path, "%s/C_%lld.bin", dir, (long long)m);
        FILE *f = fopen(path, "wb");
        fwrite(C.data, 4, (size_t)m * 32, f);
        fclose(f);
        free(A.data); free(C.data);
    }
    /* Outside the range, and buffers that disagree on M: error codes and messages. */
    int8_t a[17 * 24] = {0};
    int32_t c[17 * 32];
    const int64_t big_a[2] = {17, 24}, big_c[2] = {17, 32}, five_c[2] = {5, 32}, four_a[2] = {4, 24}, zero_a[2] = {0, 24}, zero_c[2] = {0, 32};
    tessera_buffer_t A = buf(a, big_a, TESSERA_TYPE_INT, 8), C = buf(c, big_c, TESSERA_TYPE_INT, 32);
    int code = mm(&A, &B, &C);
    printf("M=17: kind %d: %s\n", TESSERA_ERROR_KIND(code), mm_error_message(code));
    A.shape = zero_a; C.shape = zero_c;
    code = mm(&A, &B, &C);
    printf("M=0: kind %d: %s\n", TESSERA_ERROR_KIND(code), mm_error_message(code));
    A.shape = four_a; C.shape = five_c;
    code = mm(&A, &B, &C);
    printf("M=4/5: kind %d: %s\n", TESSERA_ERROR_KIND(code), mm_error_message(code));
    /* A negative extent is a value like any other, not "M not seen yet". */
    const int64_t minus_a[2] = {-4, 24}, three_c[2] = {3, 32};
    A.shape = minus_a; C.shape = three_c;
    code = mm(&A, &B, &C);
    printf("M=-4/3: kind %d: %s\n", TESSERA_ERROR_KIND(code), mm_error_message(code));
    C.type_bits = 8; C.shape = big_c; A.shape = four_a;
    code = mm(&A, &B, &C);
    printf("type: kind %d: %s\n", TESSERA_ERROR_KIND(code), mm_error_message(code));
    code = mm(NULL, &B, &C);
    printf("null: kind %d, argument %d: %s\n", TESSERA_ERROR_KIND(code), code >> 8, mm_error_message(code));
    const int64_t out_of_range = 17;
    printf("dispatch(17): %s\n", mm_dispatch(&out_of_range) ? mm_dispatch(&out_of_range) : "NULL");
    free(B.data);
    return 0;
}
)";

const std::map<std::string, std::string> kDispatchedParams = {{"N", "32"}, {"K", "24"}, {"dtype", "int8"}};

ops::OpInstance matmul_with_m(int64_t m) {
    std::map<std::string, std::string> p = kDispatchedParams;
    p["M"] = std::to_string(m);
    return ops::build_op("matmul", p);
}

/// Writes B.bin and A_<M>.bin for each M (one B for all) and returns the reference's C per M.
std::map<int64_t, Buffer<>> write_dispatch_inputs(const fs::path &dir, const std::vector<int64_t> &ms) {
    const Bindings b_only = matmul_with_m(1).random_inputs(11);
    const Buffer<> b = b_only[0].name == "B" ? b_only[0].buffer : b_only[1].buffer;
    write_raw(dir / "B.bin", b);
    std::map<int64_t, Buffer<>> expected;
    for (int64_t m : ms) {
        const ops::OpInstance op = matmul_with_m(m);
        Bindings in = op.random_inputs(20 + uint64_t(m));
        for (Binding &binding : in)
            if (binding.name == "B") binding.buffer = b;
        write_raw(dir / ("A_" + std::to_string(m) + ".bin"), in[0].name == "A" ? in[0].buffer : in[1].buffer);
        expected.emplace(m, evaluate_reference(op.pipeline, op.output_shapes, in)[0]);
    }
    return expected;
}

/// The consumer's C_<M>.bin against the reference (int8 matmul: exact).
void expect_dispatch_outputs(const fs::path &dir, const std::map<int64_t, Buffer<>> &expected) {
    for (const auto &[m, want] : expected) {
        const Buffer<> c = read_raw<int32_t>(dir / ("C_" + std::to_string(m) + ".bin"), Int(32), {m, 32});
        const Comparison cmp = compare(c, want, Tolerance::for_type(Int(32)));
        EXPECT_TRUE(cmp.equal) << "M=" << m << ": " << cmp.message;
    }
}

/// Builds `consumer.c` against DIR/lib/<target>/libmm.a and runs it for `ms`.
CommandResult run_dispatch_consumer(const fs::path &dir, const std::string &target, const std::vector<int64_t> &ms) {
    const fs::path lib = dir / "lib" / target;
    const std::string program = (dir / ("dispatch_" + target)).string();
    const CommandResult cc = tessera_test::run_command(
        "cc -std=c11 -Wall -Werror '" + (dir / "consumer.c").string() + "' -I'" + lib.string() + "' -I'" TESSERA_SOURCE_DIR
        "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR "/codegen/include' '" + (lib / "libmm.a").string() + "' -L'" TESSERA_BINARY_DIR
        "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" + program + "'" +
        (target == "host" ? "" : " -DTESSERA_TEST_CHIP") + (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
    if (cc.status != 0) return cc;
    std::string args;
    for (int64_t m : ms) args += " " + std::to_string(m);
    return tessera_test::run_command("'" + program + "' '" + dir.string() + "'" + args);
}

} // namespace

TEST(CliGenLib, OneEntryPointDispatchesEveryShapeOfARangeOnHostAndChipLikeTheReference) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", R"({"name": "dl", "kernels": [{"op": "matmul", "name": "mm",
        "params": {"M": "1..16", "N": 32, "K": 24, "dtype": "int8"}, "targets": ["host", "tsp-mini"]}]})");
    write_text(dir / "consumer.c", kDispatchConsumer);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --repeats 1 --json");
    ASSERT_EQ(gen.status, 0) << gen.err;
    const auto built = nlohmann::json::parse(gen.out);
    ASSERT_EQ(built["dispatch"].size(), 2u) << gen.out;
    for (const auto &d : built["dispatch"]) {
        // The documented rule without records: every power of two in 1..16.
        std::set<std::string> kernels;
        for (const auto &k : d["kernels"]) kernels.insert(k["kernel"].get<std::string>());
        EXPECT_EQ(kernels, (std::set<std::string>{"mm_M1", "mm_M2", "mm_M4", "mm_M8", "mm_M16"})) << d.dump();
        EXPECT_EQ(d["ranges"]["M"], "1..16");
    }
    EXPECT_NE(read_text(dir / "lib" / "host" / "mm.h").find("int mm(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *"),
              std::string::npos);

    // Every bucket boundary, shapes between them, the ends of the range.
    const std::vector<int64_t> ms = {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16};
    const std::map<int64_t, Buffer<>> expected = write_dispatch_inputs(dir, ms);
    for (const std::string target : {"host", "tsp-mini"}) {
        SCOPED_TRACE(target);
        const CommandResult run = run_dispatch_consumer(dir, target, ms);
        ASSERT_EQ(run.status, 0) << run.err << run.out;
        expect_dispatch_outputs(dir, expected);
        // The smallest covering power of two (chips: the fewest cycles, the same here).
        EXPECT_NE(run.out.find("M=3 -> mm_M4\n"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("M=9 -> mm_M16\n"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("M=8 -> mm_M8\n"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("M=17: kind 4: M = 17 (from A's dimension 0) is outside the range 1..16 this library serves"), std::string::npos)
            << run.out;
        EXPECT_NE(run.out.find("M=0: kind 4: M = 0 (from A's dimension 0) is outside the range 1..16"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("M=4/5: kind 4: "), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("dimension 0 is 5 but A's dimension 0 makes M 4"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("M=-4/3: kind 4: matmul: dimension 0 is 3 but A's dimension 0 makes M -4"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("type: kind 2: "), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("dispatch(17): NULL"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("null: kind 1, argument 1: A: the buffer, its data or its shape is NULL"), std::string::npos) << run.out;
    }
}

namespace {

/// A consumer of a dispatching unpadded 3x3 convolution (N = 1, C = O = 4, W = 8, int8, H a
/// range): the output has H - 2 rows, so the entry point derives H from X (or from the
/// output) and crops. For each H on the command line it reads X_<H>.bin and W.bin and writes
/// Y_<H>.bin; then calls whose X and output disagree.
const char *kConvConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conv.h"

static void *slurp(const char *path, size_t bytes) {
    FILE *f = fopen(path, "rb");
    void *p = malloc(bytes);
    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fclose(f);
    return p;
}
static tessera_buffer_t buf(void *data, const int64_t *shape, uint8_t code, uint8_t bits) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 4; b.type_code = code; b.type_bits = bits;
    return b;
}
int main(int argc, char **argv) {
    const char *dir = argv[1];
    char path[4096];
    const int64_t w_shape[4] = {4, 4, 3, 3};
    snprintf(path, sizeof path, "%s/W.bin", dir);
    tessera_buffer_t W = buf(slurp(path, 4 * 4 * 3 * 3), w_shape, TESSERA_TYPE_INT, 8);
    for (int i = 2; i < argc; ++i) {
        const int64_t h = atoll(argv[i]);
        const int64_t x_shape[4] = {1, 4, h, 8}, y_shape[4] = {1, 4, h - 2, 6};
        snprintf(path, sizeof path, "%s/X_%lld.bin", dir, (long long)h);
        tessera_buffer_t X = buf(slurp(path, (size_t)(4 * h * 8)), x_shape, TESSERA_TYPE_INT, 8);
        tessera_buffer_t Y = buf(calloc((size_t)(4 * (h - 2) * 6), 4), y_shape, TESSERA_TYPE_INT, 32);
        int code = conv(&X, &W, &Y);
        if (code) { fprintf(stderr, "conv H=%lld: %s\n", (long long)h, conv_error_message(code)); return 1; }
        printf("H=%lld -> %s\n", (long long)h, conv_dispatch(&h));
        snprintf(path, sizeof path, "%s/Y_%lld.bin", dir, (long long)h);
        FILE *f = fopen(path, "wb");
        fwrite(Y.data, 4, (size_t)(4 * (h - 2) * 6), f);
        fclose(f);
        free(X.data); free(Y.data);
    }
    int8_t x[4 * 40 * 8] = {0};
    int32_t y[4 * 40 * 6];
    const int64_t x10[4] = {1, 4, 10, 8}, y9[4] = {1, 4, 9, 6}, y10[4] = {1, 4, 10, 6}, x40[4] = {1, 4, 40, 8}, y38[4] = {1, 4, 38, 6};
    tessera_buffer_t X = buf(x, x10, TESSERA_TYPE_INT, 8), Y = buf(y, y9, TESSERA_TYPE_INT, 32);
    int code = conv(&X, &W, &Y);
    printf("X10/Y9: kind %d, argument %d: %s\n", TESSERA_ERROR_KIND(code), code >> 8, conv_error_message(code));
    Y.shape = y10;
    code = conv(&X, &W, &Y);
    printf("X10/Y10: kind %d, argument %d: %s\n", TESSERA_ERROR_KIND(code), code >> 8, conv_error_message(code));
    X.shape = x40; Y.shape = y38;
    code = conv(&X, &W, &Y);
    printf("X40/Y38: kind %d, argument %d: %s\n", TESSERA_ERROR_KIND(code), code >> 8, conv_error_message(code));
    free(W.data);
    return 0;
}
)";

} // namespace

TEST(CliGenLib, AConvolutionWhoseOutputIsHMinus2DispatchesEveryHOnHostAndChipLikeTheReference) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", R"({"name": "cl", "kernels": [{"op": "conv2d", "name": "conv",
        "params": {"N": 1, "C": 4, "O": 4, "W": 8, "pad": 0, "dtype": "int8", "H": "8..32"}, "targets": ["host", "tsp-mini"]}]})");
    write_text(dir / "consumer.c", kConvConsumer);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --repeats 1");
    ASSERT_EQ(gen.status, 0) << gen.err;
    EXPECT_NE(read_text(dir / "lib" / "host" / "conv.h").find("conv2d: output buffer, int32 [1, 4, H - 2, 6]"), std::string::npos);

    // Every bucket (8, 16, 32: the powers of two and the end), the shapes next to them, between.
    const std::vector<int64_t> hs = {8, 9, 12, 15, 16, 17, 24, 31, 32};
    std::map<std::string, std::string> params = {{"N", "1"}, {"C", "4"}, {"O", "4"}, {"W", "8"}, {"pad", "0"}, {"dtype", "int8"}};
    params["H"] = "8";
    const Bindings w_only = ops::build_op("conv2d", params).random_inputs(3);
    const Buffer<> w = w_only[0].name == "W" ? w_only[0].buffer : w_only[1].buffer;
    write_raw(dir / "W.bin", w);
    std::map<int64_t, Buffer<>> expected;
    for (int64_t h : hs) {
        params["H"] = std::to_string(h);
        const ops::OpInstance op = ops::build_op("conv2d", params);
        Bindings in = op.random_inputs(40 + uint64_t(h));
        for (Binding &binding : in)
            if (binding.name == "W") binding.buffer = w;
        write_raw(dir / ("X_" + std::to_string(h) + ".bin"), in[0].name == "X" ? in[0].buffer : in[1].buffer);
        expected.emplace(h, evaluate_reference(op.pipeline, op.output_shapes, in)[0]);
    }
    for (const std::string target : {"host", "tsp-mini"}) {
        SCOPED_TRACE(target);
        const fs::path lib = dir / "lib" / target;
        const std::string program = (dir / ("conv_" + target)).string();
        const CommandResult cc = tessera_test::run_command(
            "cc -std=c11 -Wall -Werror '" + (dir / "consumer.c").string() + "' -I'" + lib.string() + "' -I'" TESSERA_SOURCE_DIR
            "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR "/codegen/include' '" + (lib / "libconv.a").string() + "' -L'" TESSERA_BINARY_DIR
            "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" + program + "'" +
            (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
        ASSERT_EQ(cc.status, 0) << cc.err;
        std::string args;
        for (int64_t h : hs) args += " " + std::to_string(h);
        const CommandResult run = tessera_test::run_command("'" + program + "' '" + dir.string() + "'" + args);
        ASSERT_EQ(run.status, 0) << run.err << run.out;
        for (const auto &[h, want] : expected) {
            const Buffer<> y = read_raw<int32_t>(dir / ("Y_" + std::to_string(h) + ".bin"), Int(32), {1, 4, h - 2, 6});
            const Comparison cmp = compare(y, want, Tolerance::for_type(Int(32)));
            EXPECT_TRUE(cmp.equal) << "H=" << h << ": " << cmp.message; // int8 convolution: exact
        }
        EXPECT_NE(run.out.find("H=9 -> conv_H16\n"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("H=17 -> conv_H32\n"), std::string::npos) << run.out;
        EXPECT_NE(run.out.find("H=8 -> conv_H8\n"), std::string::npos) << run.out;
        // X says H = 10, so the output must have 8 rows: the output (argument 3) is named.
        EXPECT_NE(run.out.find("X10/Y9: kind 4, argument 3: conv2d: dimension 2 is 9 but X's dimension 2 makes H 10, so it must be 8 (H - 2)"),
                  std::string::npos)
            << run.out;
        EXPECT_NE(run.out.find("X10/Y10: kind 4, argument 3: conv2d: dimension 2 is 10 but X's dimension 2 makes H 10, so it must be 8"),
                  std::string::npos)
            << run.out;
        EXPECT_NE(run.out.find("X40/Y38: kind 4, argument 1: H = 40 (from X's dimension 2) is outside the range 8..32"), std::string::npos)
            << run.out;
    }
}

TEST(CliGenLib, DispatchTableTakesTheTunedShapesAndRecordsOfTheDatabase) {
    const fs::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const Target tsp = Target::named("tsp-mini");
    int64_t between = 0, bucket = 0;
    {
        TuningDatabase db(db_path);
        for (int64_t m : {12, 16}) {
            ops::OpInstance op = matmul_with_m(m);
            apply_chip_library_schedule(op.pipeline, tsp, op.output_shapes);
            MeasuredSchedule s;
            s.schedule = op.pipeline.schedule();
            s.measurement = Measurement::chip_cycles(realize_on_chip(op.pipeline, op.output_shapes, op.random_inputs(1), tsp).report.cycles);
            s.op_words = op.description();
            (m == 12 ? between : bucket) = db.add(Workload::of(op.pipeline, op.output_shapes, op.description()), TargetIdentity::of(tsp), s);
        }
    }
    write_text(dir / "spec.json", R"({"name": "dl", "kernels": [{"op": "matmul", "name": "mm",
        "params": {"M": "1..16", "N": 32, "K": 24, "dtype": "int8"}, "targets": ["tsp-mini"]}]})");
    write_text(dir / "consumer.c", kDispatchConsumer);
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --db '" + db_path + "'");
    ASSERT_EQ(gen.status, 0) << gen.err;
    // M=12 was tuned, so it is a bucket of its own; M=16's kernel uses its record.
    EXPECT_NE(gen.out.find("tsp-mini/mm_M12: matmul K=24 M=12 N=32 batch=1 dtype=int8 transpose_a=0 transpose_b=0, tuned record #" +
                           std::to_string(between)),
              std::string::npos)
        << gen.out;
    EXPECT_NE(gen.out.find("tsp-mini/mm_M16: matmul K=24 M=16 N=32 batch=1 dtype=int8 transpose_a=0 transpose_b=0, tuned record #" +
                           std::to_string(bucket)),
              std::string::npos)
        << gen.out;
    EXPECT_NE(read_text(dir / "lib" / "tsp-mini" / "mm.h").find("mm_M12: M=12 (tuned record #" + std::to_string(between)), std::string::npos);
    const std::vector<int64_t> ms = {9, 11, 12, 13};
    const std::map<int64_t, Buffer<>> expected = write_dispatch_inputs(dir, ms);
    const CommandResult run = run_dispatch_consumer(dir, "tsp-mini", ms);
    ASSERT_EQ(run.status, 0) << run.err << run.out;
    expect_dispatch_outputs(dir, expected);
    // Between the rule's buckets 8 and 16, calls up to 12 go to the tuned M=12 kernel.
    EXPECT_NE(run.out.find("M=9 -> mm_M12\nM=11 -> mm_M12\nM=12 -> mm_M12\nM=13 -> mm_M16\n"), std::string::npos) << run.out;
}

TEST(CliGenLib, BadRangesAreClearErrors) {
    const fs::path dir = tessera_test::unique_temp_dir();
    auto error_of = [&](const std::string &params) {
        write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": )" + params + "}]}");
        const CommandResult r = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
        EXPECT_EQ(r.status, 1) << params;
        EXPECT_EQ(r.err.rfind("tessera: error: ", 0), 0u) << r.err;
        return r.err;
    };
    EXPECT_NE(error_of(R"({"M": "8..4"})").find("is empty"), std::string::npos);
    EXPECT_NE(error_of(R"({"M": "0..4"})").find("not a positive integer"), std::string::npos);
    EXPECT_NE(error_of(R"({"M": {"range": "1..64", "buckets": [16, 32]}})").find("does not cover the range's end 64"), std::string::npos);
    EXPECT_NE(error_of(R"({"M": {"bucket": [16]}})").find("unknown field 'bucket'"), std::string::npos);
    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": "1..4", "N": 8, "K": 8}},
                                               {"op": "matmul", "name": "mm_M4", "params": {"M": 4, "N": 8, "K": 8}}]})");
    const CommandResult clash = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --repeats 1");
    EXPECT_EQ(clash.status, 1);
    EXPECT_NE(clash.err.find("two kernels for host are named 'mm_M4'"), std::string::npos) << clash.err;
    // Softmax's row length cannot be padded with zeros: exp(0) joins every row's sum.
    write_text(dir / "spec.json", R"({"kernels": [{"op": "softmax", "params": {"rows": 4, "cols": "1..32"}}]})");
    const CommandResult softmax = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
    EXPECT_EQ(softmax.status, 1);
    EXPECT_NE(softmax.err.find("padding cols with zeros changes the results"), std::string::npos) << softmax.err;
    // A stride-2 pooling's output height is (H - 2) / 2 + 1: no affine map gives H back from it.
    write_text(dir / "spec.json", R"({"kernels": [{"op": "max_pool2d", "params": {"C": 4, "W": 8, "stride": 2, "H": "4..8"}}]})");
    const CommandResult pool = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
    EXPECT_EQ(pool.status, 1);
    EXPECT_NE(pool.err.find("max_pool2d: dimension 2 of max_pool2d is not scale * H + offset with an integer scale >= 1"), std::string::npos)
        << pool.err;
    EXPECT_NE(pool.err.find("cannot serve a range of H"), std::string::npos) << pool.err;
    // A range whose start leaves an unpadded 3x3 convolution no output row.
    write_text(dir / "spec.json", R"({"kernels": [{"op": "conv2d", "params": {"C": 4, "O": 4, "W": 8, "pad": 0, "H": "2..8"}}]})");
    const CommandResult conv = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "'");
    EXPECT_EQ(conv.status, 1);
    EXPECT_NE(conv.err.find("dimension 2 of conv2d (H - 2) is 0 at H = 2; start the range higher"), std::string::npos) << conv.err;
}
