// Building shape-dispatching libraries (shape_dispatch.h, generator.h): write_dispatch_library's
// refusals of tables the dispatch runtime could not serve, compile_to_library over ranges and
// the ranged generators' refusals (each a tessera::Error naming what is wrong, nothing written),
// and what a ranged generator writes. Running the libraries: the install test (AotKernelLibrary)
// and `tessera gen-lib`'s (CliGenLib).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/codegen/generator.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/error.h"
#include "tessera/ops/registry.h"
#include "tessera/reference.h"
#include "tessera/tessera.h"
#include "tessera/tuning_db.h"
#include "tessera/workload.h"

namespace {

using namespace tessera;

/// C(M, 8) = f(A(M, 4)) dispatched on M = 1..16 by kernels for M = 8 and 16 (never compiled:
/// every table here is refused before a library is read).
DispatchTable table_of_two_buckets() {
    DispatchTable t;
    t.name = "f";
    t.params = {{"M", 1, 16}};
    t.arguments = {{"A", false, Int(8), {0, -1}, {0, 4}}, {"C", true, Int(32), {0, -1}, {0, 8}}};
    t.buckets = {{"f_M8", "libf_M8.a", {8}, ""}, {"f_M16", "libf_M16.a", {16}, ""}};
    return t;
}

void expect_refused(const DispatchTable &t, const std::string &words) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    try {
        write_dispatch_library(t, dir.string());
        FAIL() << "the table was accepted; expected an error with '" << words << "'";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "libf.a"));
}

TEST(DispatchTable, AParameterNoArgumentCarriesIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.params.push_back({"N", 1, 4});
    for (DispatchBucket &b : t.buckets) b.values.push_back(4);
    expect_refused(t, "parameter N is no argument's extent");
}

TEST(DispatchTable, ARangeNoKernelCoversIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.buckets.pop_back();
    expect_refused(t, "no kernel covers the largest shape of the range (M = 16)");
}

TEST(DispatchTable, ATableWithoutKernelsIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.buckets.clear();
    expect_refused(t, "no kernels");
}

TEST(DispatchTable, AnArgumentNamingAMissingParameterIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.arguments[1].param[0] = 3;
    expect_refused(t, "argument C names a parameter the table lacks");
}

TEST(DispatchTable, AnAffineMapTheRuntimeCannotInvertOrPadIsRefused) {
    DispatchTable t = table_of_two_buckets();
    t.arguments[1].scale = {0, 1};
    t.arguments[1].offset = {3, 0};
    expect_refused(t, "argument C's dimension 0 (0*M + 3) needs a scale of 1 to 65536");
    t = table_of_two_buckets();
    t.arguments[1].scale = {2};
    expect_refused(t, "argument C needs a scale and an offset per dimension, or none");
    t = table_of_two_buckets();
    t.arguments[1].scale = {1, 1};
    t.arguments[1].offset = {-2, 0}; // M - 2 is -1 at the range's start M = 1
    expect_refused(t, "argument C's dimension 0 (M - 2) is below 1 at M = 1; start the range higher");
    t = table_of_two_buckets();
    t.params[0].hi = int64_t(1) << 62;
    t.buckets.back().values = {int64_t(1) << 62};
    t.arguments[1].scale = {4, 1};
    t.arguments[1].offset = {0, 0};
    expect_refused(t, "kernel f_M16: C's dimension 0 (4*M) overflows");
}

/// C[m, 16] = A[m, 8] · B[8, 16], float32.
ShapedPipeline matmul_of_rows(int64_t m) {
    Input A(Float(32), {m, 8}, "A"), B(Float(32), {8, 16}, "B");
    Pipeline p(ops::matmul(A, B).func());
    return {p, {{m, 16}}, {}, 8};
}

/// Softmax over rows of n columns: padding n with zeros changes every row's sum.
ShapedPipeline softmax_of_columns(int64_t n) {
    Input X(Float(32), {4, n}, "X");
    return {Pipeline(ops::softmax(X).func()), {{4, n}}, {}, n};
}

template <typename F> void expect_error_with(F &&f, const std::string &words) {
    try {
        f();
        FAIL() << "no error; expected one with '" << words << "'";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(DispatchLibrary, ARangeThatIsNoBuffersExtentIsRefused) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    expect_error_with([&] { compile_to_library([](const std::vector<int64_t> &) { return matmul_of_rows(4); }, {{"M", 1, 8, {}}}, "mm", dir.string()); },
                      "mm: parameter M is no buffer's extent, so it cannot be a range");
    EXPECT_FALSE(std::filesystem::exists(dir / "libmm.a"));
}

TEST(DispatchLibrary, ARangeWhosePaddingChangesTheResultsIsRefused) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    expect_error_with([&] { compile_to_library([](const std::vector<int64_t> &v) { return softmax_of_columns(v[0]); }, {{"N", 2, 16, {}}}, "sm", dir.string()); },
                      "sm: padding N with zeros changes the results");
    EXPECT_FALSE(std::filesystem::exists(dir / "libsm.a"));
}

TEST(DispatchLibrary, MalformedRangesAndBucketsAreRefused) {
    expect_error_with([] { bucket_grid({{"M", 9, 4, {}}}); }, "range M = 9..4: a range needs 1 <= lo <= hi");
    expect_error_with([] { bucket_grid({{"M", 4, 16, {2, 16}}}); }, "the bucket 2 is below the range");
    expect_error_with([] { bucket_grid({{"M", 1, 16, {4, 8}}}); }, "the largest bucket 8 does not cover the range's end");
    expect_error_with([] { bucket_grid({}); }, "needs at least one range");
    expect_error_with([] { parse_dispatch_range("16", "RANGES"); }, "RANGES: '16' is not a range lo..hi");
    expect_error_with([] { parse_dispatch_range("8..2", "RANGES"); }, "the range 8..2 is empty");
    expect_error_with([] { parse_dispatch_buckets("8,,32", "BUCKETS"); }, "BUCKETS: '' is not a positive integer");
    EXPECT_EQ(parse_dispatch_buckets("8,32", "BUCKETS"), (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(dispatch_buckets(3, 20), (std::vector<int64_t>{4, 8, 16, 20}));
    EXPECT_EQ(bucket_grid({{"M", 1, 4, {2, 4}}, {"N", 1, 8, {8}}}), (std::vector<std::vector<int64_t>>{{2, 8}, {4, 8}}));
}

/// A consumer of a dispatching int8 matmul `mm` (N = 32, K = 24) on a chip: for each M on the
/// command line, A[M, 24] and B[24, 32] of a fixed pattern, C written to DIR/C_<M>.bin.
const char *kChipConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mm.h"
static tessera_buffer_t buf(void *data, const int64_t *shape, uint8_t code, uint8_t bits) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 2; b.type_code = code; b.type_bits = bits;
    return b;
}
int main(int argc, char **argv) {
    int8_t a[64 * 24], b[24 * 32];
    int32_t c[64 * 32];
    for (int i = 0; i < 64 * 24; ++i) a[i] = (int8_t)((i * 7 + 3) % 11 - 5);
    for (int i = 0; i < 24 * 32; ++i) b[i] = (int8_t)((i * 5 + 1) % 13 - 6);
    const int64_t b_shape[2] = {24, 32};
    for (int i = 2; i < argc; ++i) {
        const int64_t m = atoll(argv[i]), a_shape[2] = {m, 24}, c_shape[2] = {m, 32};
        tessera_buffer_t A = buf(a, a_shape, TESSERA_TYPE_INT, 8), B = buf(b, b_shape, TESSERA_TYPE_INT, 8), C = buf(c, c_shape, TESSERA_TYPE_INT, 32);
        const int code = mm(&A, &B, &C);
        if (code) { fprintf(stderr, "M=%lld: %s\n", (long long)m, mm_error_message(code)); return 1; }
        printf("M=%lld -> %s, %lld cycles\n", (long long)m, mm_dispatch(&m), (long long)mm_last_report()->cycles);
        char path[4096];
        snprintf(path, sizeof path, "%s/C_%lld.bin", argv[1], (long long)m);
        FILE *f = fopen(path, "wb");
        fwrite(c, 4, (size_t)m * 32, f);
        fclose(f);
    }
    return 0;
}
)";

TEST(DispatchLibrary, CompileToLibraryOverARangeServesAChipLikeTheReference) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const Target chip = Target::named("tsp-mini");
    auto at = [&](const std::vector<int64_t> &v) {
        const ops::OpInstance op = ops::build_op("matmul", {{"M", std::to_string(v[0])}, {"N", "32"}, {"K", "24"}, {"dtype", "int8"}});
        apply_chip_library_schedule(op.pipeline, chip, op.output_shapes);
        return ShapedPipeline{op.pipeline, op.output_shapes, op.random_inputs(7), op.reduction_length};
    };
    const LibraryFiles files = compile_to_library(at, {{"M", 1, 64, {16, 64}}}, "mm", (dir / "lib").string(), chip);
    EXPECT_NE(files.schedule.find("mm_M16: "), std::string::npos) << files.schedule;
    {
        std::ofstream f(dir / "consumer.c");
        f << kChipConsumer;
    }
    const std::string program = (dir / "consumer").string();
    const tessera_test::CommandResult cc = tessera_test::run_command(
        "cc -std=c11 -Wall -Werror '" + (dir / "consumer.c").string() + "' -I'" + (dir / "lib").string() + "' -I'" TESSERA_SOURCE_DIR
        "/codegen/chiprt/include' -I'" TESSERA_SOURCE_DIR "/codegen/include' '" + files.library + "' -L'" TESSERA_BINARY_DIR
        "/codegen/chiprt' -Wl,-rpath,'" TESSERA_BINARY_DIR "/codegen/chiprt' -ltessera_chiprt -lpthread -lm -o '" + program + "'" +
        (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
    ASSERT_EQ(cc.status, 0) << cc.err;
    const std::vector<int64_t> ms = {1, 15, 16, 17, 40, 64};
    std::string args;
    for (int64_t m : ms) args += " " + std::to_string(m);
    const tessera_test::CommandResult run = tessera_test::run_command("'" + program + "' '" + dir.string() + "'" + args);
    ASSERT_EQ(run.status, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("M=15 -> mm_M16"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("M=17 -> mm_M64"), std::string::npos) << run.out;
    for (int64_t m : ms) {
        SCOPED_TRACE("M=" + std::to_string(m));
        const ShapedPipeline p = at({m});
        Buffer<> a(Int(8), {m, 24}), b(Int(8), {24, 32});
        for (int64_t i = 0; i < m * 24; ++i) static_cast<int8_t *>(a.data())[i] = int8_t((i * 7 + 3) % 11 - 5);
        for (int64_t i = 0; i < 24 * 32; ++i) static_cast<int8_t *>(b.data())[i] = int8_t((i * 5 + 1) % 13 - 6);
        Bindings bindings;
        for (const Input &input : p.pipeline.inputs()) bindings.emplace_back(input, input.name() == "A" ? a : b);
        const Buffer<> expected = evaluate_reference(p.pipeline, p.output_shapes, bindings)[0];
        Buffer<> got(Int(32), {m, 32});
        std::ifstream f(dir / ("C_" + std::to_string(m) + ".bin"), std::ios::binary);
        f.read(static_cast<char *>(got.data()), std::streamsize(m * 32 * 4));
        ASSERT_TRUE(bool(f));
        const Comparison c = compare(got, expected, Tolerance::for_type(Int(32)));
        EXPECT_TRUE(c.equal) << c.message;
    }
}

/// U[2m, 8] = A[m, 8] with every row twice (nearest-neighbour upsampling of rows), int32: an
/// output extent of 2*M.
ShapedPipeline upsampled_rows(int64_t m) {
    Input A(Int(32), {m, 8}, "A");
    Var i("i"), j("j");
    Func U("U");
    U(i, j) = A(i / 2, j);
    return {Pipeline(U), {{2 * m, 8}}, {}, 1};
}

/// Extents that depend on two dispatched parameters: C[m + n, 8] = A[m, 8] stacked on B[n, 8].
ShapedPipeline stacked_rows(int64_t m, int64_t n) {
    Input A(Int(32), {m, 8}, "A"), B(Int(32), {n, 8}, "B");
    return {Pipeline(ops::concat({A, B}, 0).func()), {{m + n, 8}}, {}, 1};
}

TEST(DispatchLibrary, PlanFindsEachExtentsAffineMapAndRefusesOneOfTwoParameters) {
    const DispatchTable t = plan_dispatch_table("up", {{"M", 1, 16, {}}}, [](const std::vector<int64_t> &v) { return upsampled_rows(v[0]); });
    ASSERT_EQ(t.arguments.size(), 2u);
    EXPECT_EQ(t.arguments[0].param, (std::vector<int>{0, -1}));
    EXPECT_EQ(t.arguments[0].scale_of(0), 1);
    EXPECT_EQ(t.arguments[1].param, (std::vector<int>{0, -1}));
    EXPECT_EQ(t.arguments[1].scale_of(0), 2);
    EXPECT_EQ(t.arguments[1].offset_of(0), 0);
    EXPECT_EQ(dispatch_extent_text(t, t.arguments[1], 0), "2*M");
    EXPECT_NE(dispatch_c_header(t).find("U: output buffer, int32 [2*M, 8]"), std::string::npos) << dispatch_c_header(t);
    expect_error_with(
        [] {
            plan_dispatch_table("st", {{"M", 1, 8, {}}, {"N", 1, 8, {}}},
                                [](const std::vector<int64_t> &v) { return stacked_rows(v[0], v[1]); });
        },
        "st: dimension 0 of concat changes with both M and N; an extent may follow one dispatched parameter only");
    // Pooling: a stride-1 2x2 max_pool2d writes H - 1 rows; stride 2 writes (H - 2) / 2 + 1, no affine map.
    auto pool = [](int64_t stride) {
        return [stride](const std::vector<int64_t> &v) {
            const ops::OpInstance op = ops::build_op(
                "max_pool2d", {{"N", "1"}, {"C", "2"}, {"W", "6"}, {"stride", std::to_string(stride)}, {"H", std::to_string(v[0])}});
            return ShapedPipeline{op.pipeline, op.output_shapes, op.random_inputs(5), op.reduction_length};
        };
    };
    const DispatchTable pooled = plan_dispatch_table("mp", {{"H", 4, 32, {}}}, pool(1));
    ASSERT_EQ(pooled.arguments.size(), 2u);
    EXPECT_EQ(dispatch_extent_text(pooled, pooled.arguments[1], 2), "H - 1");
    expect_error_with([&] { plan_dispatch_table("mp", {{"H", 4, 32, {}}}, pool(2)); },
                      "mp: dimension 2 of max_pool2d is not scale * H + offset with an integer scale >= 1");
    // Stacking on the padded dimension moves B's rows: the reference check refuses it.
    expect_error_with(
        [] { plan_dispatch_table("st", {{"M", 1, 8, {}}}, [](const std::vector<int64_t> &v) { return stacked_rows(v[0], v[0]); }); },
        "st: padding M with zeros changes the results");
}

/// A consumer of the dispatching `up` (U = A with every row twice, M = 1..16): for each M on
/// the command line, A of a fixed pattern, U checked row by row; then a U that disagrees with A.
const char *kUpsampleConsumer = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "up.h"
static tessera_buffer_t buf(void *data, const int64_t *shape) {
    tessera_buffer_t b;
    memset(&b, 0, sizeof b);
    b.data = data; b.shape = shape; b.dimensions = 2; b.type_code = TESSERA_TYPE_INT; b.type_bits = 32;
    return b;
}
int main(int argc, char **argv) {
    int32_t a[16 * 8], u[32 * 8];
    for (int i = 0; i < 16 * 8; ++i) a[i] = i * 3 + 1;
    for (int i = 1; i < argc; ++i) {
        const int64_t m = atoll(argv[i]), a_shape[2] = {m, 8}, u_shape[2] = {2 * m, 8};
        tessera_buffer_t A = buf(a, a_shape), U = buf(u, u_shape);
        memset(u, 0, sizeof u);
        const int code = up(&A, &U);
        if (code) { fprintf(stderr, "M=%lld: %s\n", (long long)m, up_error_message(code)); return 1; }
        for (int64_t r = 0; r < 2 * m; ++r)
            for (int c = 0; c < 8; ++c)
                if (u[r * 8 + c] != a[(r / 2) * 8 + c]) { fprintf(stderr, "M=%lld: U[%lld][%d] is %d\n", (long long)m, (long long)r, c, u[r * 8 + c]); return 1; }
        printf("M=%lld -> %s\n", (long long)m, up_dispatch(&m));
    }
    const int64_t a3[2] = {3, 8}, u7[2] = {7, 8};
    tessera_buffer_t A = buf(a, a3), U = buf(u, u7);
    const int code = up(&A, &U);
    printf("A3/U7: kind %d, argument %d: %s\n", TESSERA_ERROR_KIND(code), code >> 8, up_error_message(code));
    return 0;
}
)";

TEST(DispatchLibrary, AnOutputOfTwiceTheParameterIsPaddedAndCroppedOnTheHost) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const LibraryFiles files = compile_to_library([](const std::vector<int64_t> &v) { return upsampled_rows(v[0]); }, {{"M", 1, 16, {4, 16}}},
                                                  "up", (dir / "lib").string());
    {
        std::ofstream f(dir / "consumer.c");
        f << kUpsampleConsumer;
    }
    const std::string program = (dir / "consumer").string();
    const tessera_test::CommandResult cc = tessera_test::run_command(
        "cc -std=c11 -Wall -Werror '" + (dir / "consumer.c").string() + "' -I'" + (dir / "lib").string() + "' '" + files.library +
        "' -lpthread -lm -o '" + program + "'" + (tessera_test::kSanitized ? " -fsanitize=address,undefined" : ""));
    ASSERT_EQ(cc.status, 0) << cc.err;
    const tessera_test::CommandResult run = tessera_test::run_command("'" + program + "' 1 3 4 5 15 16");
    ASSERT_EQ(run.status, 0) << run.err << run.out;
    EXPECT_NE(run.out.find("M=3 -> up_M4\nM=4 -> up_M4\nM=5 -> up_M16\n"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("A3/U7: kind 4, argument 2: U: dimension 0 is 7 but A's dimension 0 makes M 3, so it must be 6 (2*M)"),
              std::string::npos)
        << run.out;
}

TESSERA_REGISTER_GENERATOR(test_rows, {ShapeRange{"M", 1, 16, {}}}, [](const std::vector<int64_t> &v) {
    return GeneratedPipeline(matmul_of_rows(v[0]).pipeline, {{v[0], 16}});
});
TESSERA_REGISTER_GENERATOR(test_rows_without_shapes, {ShapeRange{"M", 1, 16, {}}},
                           [](const std::vector<int64_t> &v) { return GeneratedPipeline(matmul_of_rows(v[0]).pipeline); });
TESSERA_REGISTER_GENERATOR(test_fixed_rows, [] { return GeneratedPipeline(matmul_of_rows(4).pipeline, {{4, 16}}); });
// A kernel with a scalar argument: its library has fixed shapes, but nothing to measure it with.
TESSERA_REGISTER_GENERATOR(test_scaled_rows, [] {
    Param<float> scale("scale");
    Input X(Float(32), {4, 16}, "X");
    Var i("i"), j("j");
    Func y("y");
    y(i, j) = X(i, j) * scale;
    return GeneratedPipeline(Pipeline(y), {{4, 16}});
});

/// Stores a host record for matmul_of_rows(m) (its own schedule) in the database at `db_path`;
/// returns its ID.
int64_t add_host_record(const std::string &db_path, int64_t m) {
    TuningDatabase db(db_path);
    const ShapedPipeline rows = matmul_of_rows(m);
    MeasuredSchedule measured;
    measured.schedule = rows.pipeline.schedule();
    measured.measurement = Measurement::host_seconds({1e-3});
    return db.add(Workload::of(rows.pipeline, rows.output_shapes), TargetIdentity::of(Target::host()), measured);
}

/// generator_main's exit code and what it printed on stderr (and on stdout into `out`).
std::pair<int, std::string> run_driver(std::vector<std::string> args, std::string *out = nullptr) {
    args.insert(args.begin(), "generator");
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    const int code = generator_main(int(argv.size()), argv.data());
    const std::string printed = testing::internal::GetCapturedStdout();
    if (out) *out = printed;
    return {code, testing::internal::GetCapturedStderr()};
}

TEST(DispatchLibrary, ARangedGeneratorWritesOneEntryPointOverItsBuckets) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const auto [code, err] = run_driver({"-g", "test_rows", "-o", dir.string(), "-f", "rows", "buckets=M=4,16"});
    ASSERT_EQ(code, 0) << err;
    EXPECT_TRUE(std::filesystem::exists(dir / "librows.a"));
    EXPECT_TRUE(std::filesystem::exists(dir / "rows.kernels" / "librows_M4.a"));
    EXPECT_TRUE(std::filesystem::exists(dir / "rows.kernels" / "librows_M16.a"));
    EXPECT_FALSE(std::filesystem::exists(dir / "rows.kernels" / "librows_M8.a")); // BUCKETS replaced 1, 2, 4, 8, 16
    std::ifstream header(dir / "rows.h");
    std::stringstream text;
    text << header.rdbuf();
    EXPECT_NE(text.str().find("int rows(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *"), std::string::npos)
        << text.str();
}

TEST(DispatchLibrary, WithATuningDatabaseTheGeneratorDriverListsTheKernelsThatHaveNoRecord) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const int64_t id = add_host_record(db_path, 4); // A record for M = 4 only.
    const std::vector<std::string> ranged = {"-g", "test_rows", "-o", (dir / "ranged").string(), "-f", "rows", "buckets=M=4,16"};
    std::string out;
    ASSERT_EQ(run_driver(ranged, &out).first, 0);
    EXPECT_EQ(out.find("untuned"), std::string::npos) << "no database, nothing to list: " << out;

    ::setenv("TESSERA_TUNING_DB", db_path.c_str(), 1);
    const auto [code, err] = run_driver(ranged, &out);
    std::string fixed_out;
    const int fixed_code = run_driver({"-g", "test_fixed_rows", "-o", (dir / "fixed").string()}, &fixed_out).first;
    ::unsetenv("TESSERA_TUNING_DB");
    ASSERT_EQ(code, 0) << err;
    EXPECT_NE(out.find("rows_M4: tuned record #" + std::to_string(id)), std::string::npos) << out;
    EXPECT_NE(out.find("untuned kernels (1, library schedule; no record in " + db_path + "): rows_M16\n"), std::string::npos) << out;
    // The fixed-shape generator's one kernel (M = 4) has the record: nothing is untuned.
    ASSERT_EQ(fixed_code, 0);
    EXPECT_EQ(fixed_out.find("untuned"), std::string::npos) << fixed_out;
    EXPECT_NE(fixed_out.find("wrote "), std::string::npos) << fixed_out;
}

TEST(DispatchLibrary, TheGeneratorDriverAddsTheTunedShapesAsBucketsAndWritesTheProvenance) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string db_path = (dir / "tuning.db").string();
    const int64_t id = add_host_record(db_path, 5); // A record for M = 5, which the buckets 4, 16 do not hold.
    ::setenv("TESSERA_TUNING_DB", db_path.c_str(), 1);
    std::string out;
    const auto [code, err] = run_driver({"-g", "test_rows", "-o", (dir / "lib").string(), "-f", "rows", "buckets=M=4,16", "repeats=2"}, &out);
    ::unsetenv("TESSERA_TUNING_DB");
    ASSERT_EQ(code, 0) << err;
    EXPECT_NE(out.find("rows_M5: tuned record #" + std::to_string(id)), std::string::npos) << out;
    EXPECT_TRUE(std::filesystem::exists(dir / "lib" / "rows.kernels" / "librows_M5.a"));
    EXPECT_TRUE(std::filesystem::exists(dir / "lib" / "librows_provenance.a"));
    EXPECT_NE(tessera_test::read_text(dir / "lib" / "rows_provenance.h").find("const char *rows_provenance(void)"), std::string::npos);
    const nlohmann::json p = nlohmann::json::parse(tessera_test::read_text(dir / "lib" / "rows.provenance.json"));
    EXPECT_EQ(p["library"], "rows");
    EXPECT_EQ(p["target_hash"], TargetIdentity::of(Target::host()).hash);
    std::vector<std::string> order;
    for (const auto &b : p["dispatch"][0]["kernels"]) order.push_back(b["kernel"].get<std::string>());
    // The host tries the smallest covering bucket first.
    EXPECT_EQ(order, (std::vector<std::string>{"rows_M4", "rows_M5", "rows_M16"})) << p.dump(1);
    ASSERT_EQ(p["kernels"].size(), 3u);
    for (const auto &k : p["kernels"]) {
        EXPECT_EQ(k["tuned"], k["name"] == "rows_M5") << k.dump();
        EXPECT_EQ(k["tuning_record_id"], k["name"] == "rows_M5" ? nlohmann::json(id) : nlohmann::json(nullptr));
        EXPECT_EQ(k["repeats"], 2);
        EXPECT_GT(k["time_ms"].get<double>(), 0.0);
    }
    // The header's table holds the tuned bucket.
    EXPECT_NE(tessera_test::read_text(dir / "lib" / "rows.h").find("rows_M5"), std::string::npos);
}

TEST(DispatchLibrary, TheGeneratorDriverTimesFixedKernelsAndListsTheOnesItCannotRun) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    std::string out;
    auto [code, err] = run_driver({"-g", "test_fixed_rows", "-o", (dir / "fixed").string(), "repeats=3"}, &out);
    ASSERT_EQ(code, 0) << err;
    const nlohmann::json fixed = nlohmann::json::parse(tessera_test::read_text(dir / "fixed" / "test_fixed_rows.provenance.json"));
    ASSERT_EQ(fixed["kernels"].size(), 1u);
    EXPECT_EQ(fixed["kernels"][0]["repeats"], 3);
    EXPECT_GT(fixed["kernels"][0]["time_ms"].get<double>(), 0.0);
    EXPECT_NE(out.find("ms (median of 3"), std::string::npos) << out;
    // A scalar Param: the library is built, its provenance says it was not measured.
    std::tie(code, err) = run_driver({"-g", "test_scaled_rows", "-o", (dir / "scaled").string()}, &out);
    ASSERT_EQ(code, 0) << err;
    EXPECT_TRUE(std::filesystem::exists(dir / "scaled" / "libtest_scaled_rows.a"));
    const nlohmann::json scaled = nlohmann::json::parse(tessera_test::read_text(dir / "scaled" / "test_scaled_rows.provenance.json"));
    EXPECT_FALSE(scaled["kernels"][0].contains("time_ms")) << scaled.dump(1);
    EXPECT_NE(out.find("not measured"), std::string::npos) << out;
}

TEST(DispatchLibrary, TheGeneratorDriversRangeMistakesAreClearErrors) {
    const std::string dir = tessera_test::unique_temp_dir().string();
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{"-g", "test_rows", "-o", dir, "range=N=1..4"}, "range=N=1..4: generator 'test_rows' has no range N (its ranges: M)"},
        {{"-g", "test_rows", "-o", dir, "range=M"}, "range=M: write range=PARAM=LO..HI"},
        {{"-g", "test_rows", "-o", dir, "range=M=4..2"}, "the range 4..2 is empty"},
        {{"-g", "test_rows", "-o", dir, "buckets=M=4"}, "the largest bucket 4 does not cover the range's end"},
        {{"-g", "test_fixed_rows", "-o", dir, "range=M=1..4"}, "generator 'test_fixed_rows' has no ranges"},
        {{"-g", "test_rows_without_shapes", "-o", dir}, "is ranged but gives no output shapes"},
        {{"-g", "test_fixed_rows", "-o", dir, "repeats=0"}, "repeats=0: give a whole number of runs from 1 to 1000"},
    };
    for (const auto &[args, words] : cases) {
        const auto [code, err] = run_driver(args);
        EXPECT_EQ(code, 1) << words;
        EXPECT_NE(err.find("tessera: error: "), std::string::npos) << err;
        EXPECT_NE(err.find(words), std::string::npos) << err;
    }
    expect_error_with([] { run_generator("test_rows"); }, "generator 'test_rows' is ranged");
}

} // namespace
