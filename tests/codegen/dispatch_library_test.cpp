// Building shape-dispatching libraries (shape_dispatch.h, generator.h): write_dispatch_library's
// refusals of tables the dispatch runtime could not serve, compile_to_library over ranges and
// the ranged generators' refusals (each a tessera::Error naming what is wrong, nothing written),
// and what a ranged generator writes. Running the libraries: the install test (AotKernelLibrary)
// and `tessera gen-lib`'s (CliGenLib).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"
#include "tessera/codegen/chip_schedules.h"
#include "tessera/codegen/generator.h"
#include "tessera/codegen/host_schedules.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/error.h"
#include "tessera/ops/registry.h"
#include "tessera/reference.h"
#include "tessera/tessera.h"

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

TESSERA_REGISTER_GENERATOR(test_rows, {ShapeRange{"M", 1, 16, {}}}, [](const std::vector<int64_t> &v) {
    return GeneratedPipeline(matmul_of_rows(v[0]).pipeline, {{v[0], 16}});
});
TESSERA_REGISTER_GENERATOR(test_rows_without_shapes, {ShapeRange{"M", 1, 16, {}}},
                           [](const std::vector<int64_t> &v) { return GeneratedPipeline(matmul_of_rows(v[0]).pipeline); });
TESSERA_REGISTER_GENERATOR(test_fixed_rows, [] { return GeneratedPipeline(matmul_of_rows(4).pipeline, {{4, 16}}); });

/// generator_main's exit code and what it printed on stderr.
std::pair<int, std::string> run_driver(std::vector<std::string> args) {
    args.insert(args.begin(), "generator");
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    const int code = generator_main(int(argv.size()), argv.data());
    testing::internal::GetCapturedStdout();
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

TEST(DispatchLibrary, TheGeneratorDriversRangeMistakesAreClearErrors) {
    const std::string dir = tessera_test::unique_temp_dir().string();
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{"-g", "test_rows", "-o", dir, "range=N=1..4"}, "range=N=1..4: generator 'test_rows' has no range N (its ranges: M)"},
        {{"-g", "test_rows", "-o", dir, "range=M"}, "range=M: write range=PARAM=LO..HI"},
        {{"-g", "test_rows", "-o", dir, "range=M=4..2"}, "the range 4..2 is empty"},
        {{"-g", "test_rows", "-o", dir, "buckets=M=4"}, "the largest bucket 4 does not cover the range's end"},
        {{"-g", "test_fixed_rows", "-o", dir, "range=M=1..4"}, "generator 'test_fixed_rows' has no ranges"},
        {{"-g", "test_rows_without_shapes", "-o", dir}, "is ranged but gives no output shapes"},
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
