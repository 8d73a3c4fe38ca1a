// `tessera gen-lib`: one spec builds the same kernels for the host and both chips; a plain C
// program, linked once against each target's libraries (relinking is all that changes), runs
// them on the same inputs and gets the reference evaluator's values. A tuning database's record
// is used and named in the manifest and provenance; untuned kernels are listed; bad specs are
// clear errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/codegen/chip_schedules.h"
#include "tessera/ops/registry.h"
#include "tessera/reference.h"
#include "tessera/tuning_db.h"
#include "tessera/workload.h"
#include "test_support.h"

using namespace tessera;
using tessera_test::CommandResult;
namespace fs = std::filesystem;

namespace {

CommandResult tessera_cli(const std::string &args) { return tessera_test::run_command("'" + std::string(TESSERA_CLI) + "' " + args); }

void write_text(const fs::path &path, const std::string &text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
}

const char *kSpec = R"({"name": "demo", "kernels": [
  {"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"}, "targets": ["host", "tsp-mini", "npu-edge"]},
  {"op": "softmax", "name": "sm", "params": {"rows": 16, "cols": 100}, "targets": ["host", "tsp-mini", "npu-edge"]}
]})";

/// The consumer: reads raw inputs, calls both kernels through their headers, writes raw outputs,
/// and checks that a wrong shape is an error code, never a crash. The same file for every target.
const char *kConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm.h"
#include "sm.h"
#include "demo_provenance.h"

static void *slurp(const char *dir, const char *name, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    void *p = malloc(bytes);
    if (!f || fread(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot read %s\n", path); exit(2); }
    fclose(f);
    return p;
}
static void spill(const char *dir, const char *name, const void *p, size_t bytes) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) { fprintf(stderr, "cannot write %s\n", path); exit(2); }
    fclose(f);
}
static tessera_buffer_t buf(void *data, const int64_t *shape, uint8_t code, uint8_t bits) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 2; b.type_code = code; b.type_bits = bits;
    return b;
}
int main(int argc, char **argv) {
    const char *dir = argv[1];
    const int64_t a_shape[2] = {32, 48}, b_shape[2] = {48, 64}, c_shape[2] = {32, 64}, x_shape[2] = {16, 100};
    tessera_buffer_t A = buf(slurp(dir, "A.bin", 32 * 48), a_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t B = buf(slurp(dir, "B.bin", 48 * 64), b_shape, TESSERA_TYPE_INT, 8);
    tessera_buffer_t C = buf(calloc(32 * 64, 4), c_shape, TESSERA_TYPE_INT, 32);
    tessera_buffer_t X = buf(slurp(dir, "X.bin", 16 * 100 * 4), x_shape, TESSERA_TYPE_FLOAT, 32);
    tessera_buffer_t Y = buf(calloc(16 * 100, 4), x_shape, TESSERA_TYPE_FLOAT, 32);
    int code = mm(&A, &B, &C);
    if (code) { fprintf(stderr, "mm: %s\n", mm_error_message(code)); return 1; }
    code = sm(&X, &Y);
    if (code) { fprintf(stderr, "sm: %s\n", sm_error_message(code)); return 1; }
    spill(dir, "C.bin", C.data, 32 * 64 * 4);
    spill(dir, "Y.bin", Y.data, 16 * 100 * 4);
    const int64_t wrong[2] = {32, 47};
    A.shape = wrong;
    code = mm(&A, &B, &C);
    if (TESSERA_ERROR_KIND(code) != TESSERA_ERROR_SHAPE) { fprintf(stderr, "wrong shape gave code %d\n", code); return 1; }
    printf("wrong shape: %s\n", mm_error_message(code));
    printf("provenance: %s\n", demo_provenance());
    free(A.data); free(B.data); free(C.data); free(X.data); free(Y.data);
    return 0;
}
)";

template <typename T> Buffer<> read_raw(const fs::path &path, Type type, std::vector<int64_t> shape) {
    Buffer<> b(type, shape);
    std::ifstream f(path, std::ios::binary);
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    f.read(static_cast<char *>(b.data()), std::streamsize(n * int64_t(sizeof(T))));
    EXPECT_TRUE(bool(f)) << "cannot read " << path;
    return b;
}

void write_raw(const fs::path &path, const Buffer<> &b) {
    int64_t n = (b.type().bits() + 7) / 8;
    for (int64_t e : b.shape()) n *= e;
    write_text(path, std::string(static_cast<const char *>(b.data()), size_t(n)));
}

} // namespace

TEST(CliGenLib, OneSpecBuildsHostAndChipLibrariesThatACProgramRunsLikeTheReference) {
    const fs::path dir = tessera_test::unique_temp_dir();
    write_text(dir / "spec.json", kSpec);
    write_text(dir / "consumer.c", kConsumer);
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
    const ops::OpInstance mm = ops::build_op("matmul", {{"M", "32"}, {"N", "64"}, {"K", "48"}, {"dtype", "int8"}});
    const ops::OpInstance sm = ops::build_op("softmax", {{"rows", "16"}, {"cols", "100"}});
    const Bindings mm_in = mm.random_inputs(5), sm_in = sm.random_inputs(6);
    write_raw(dir / "A.bin", mm_in[0].name == "A" ? mm_in[0].buffer : mm_in[1].buffer);
    write_raw(dir / "B.bin", mm_in[0].name == "A" ? mm_in[1].buffer : mm_in[0].buffer);
    write_raw(dir / "X.bin", sm_in[0].buffer);
    const Buffer<> mm_expected = evaluate_reference(mm.pipeline, mm.output_shapes, mm_in)[0];
    const Buffer<> sm_expected = evaluate_reference(sm.pipeline, sm.output_shapes, sm_in)[0];

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

        const Buffer<> c = read_raw<int32_t>(dir / "C.bin", Int(32), {32, 64});
        const Comparison mm_cmp = compare(c, mm_expected, Tolerance::for_type(Int(32)));
        EXPECT_TRUE(mm_cmp.equal) << "int8 matmul must be exact: " << mm_cmp.message;
        const Buffer<> y = read_raw<float>(dir / "Y.bin", Float(32), {16, 100});
        // Chips compute softmax with their VXM's fp32 exp: bf16's tolerance, as `tessera run` checks chips.
        const Comparison sm_cmp = compare(y, sm_expected, Tolerance::for_type(target == "host" ? Float(32) : BFloat(16), 100));
        EXPECT_TRUE(sm_cmp.equal) << sm_cmp.message;
    }
}

TEST(CliGenLib, UsesTheTuningDatabaseAndNamesTheRecord) {
    const fs::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const std::map<std::string, std::string> params = {{"M", "32"}, {"N", "64"}, {"K", "48"}, {"dtype", "int8"}};
    int64_t id = 0;
    {
        ops::OpInstance op = ops::build_op("matmul", params);
        const Target tsp = Target::named("tsp-mini");
        apply_chip_library_schedule(op.pipeline, tsp, op.output_shapes);
        TuningDatabase db(db_path);
        MeasuredSchedule m;
        m.schedule = op.pipeline.schedule();
        m.measurement = Measurement::chip_cycles(99);
        id = db.add(Workload::of(op.pipeline, op.output_shapes, op.description()), TargetIdentity::of(tsp), m);
    }
    write_text(dir / "spec.json", R"({"kernels": [{"op": "matmul", "name": "mm", "params": {"M": 32, "N": 64, "K": 48, "dtype": "int8"},
                                       "targets": ["host", "tsp-mini"]}]})");
    const CommandResult gen = tessera_cli("gen-lib '" + (dir / "spec.json").string() + "' -o '" + (dir / "lib").string() + "' --db '" + db_path + "'");
    ASSERT_EQ(gen.status, 0) << gen.err;
    EXPECT_NE(gen.out.find("tsp-mini/mm: matmul K=48 M=32 N=64 batch=1 dtype=int8 transpose_a=0 transpose_b=0, tuned record #" + std::to_string(id)),
              std::string::npos)
        << gen.out;
    EXPECT_NE(gen.out.find("untuned kernels (1, library schedule): host/mm\n"), std::string::npos) << gen.out;
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
