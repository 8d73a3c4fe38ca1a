// Chip artifacts and libtessera_chiprt: a compiled kernel saved as one file, loaded and run
// from C with the caller's buffers, equal to the reference evaluator; every bad file and every
// wrong call is an error code with a message naming what is wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <fstream>

#include <nlohmann/json.hpp>
#include <tessera/chiprt.h>
#include <tessera/codegen/aot.h>
#include <tessera/codegen/chip_artifact.h>
#include <tessera/codegen/generator.h>
#include <tessera/codegen/chip_schedules.h>
#include <tessera/ops.h>
#include <tessera/reference.h>
#include <tessera/tuning_db.h>

#include "test_support.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kM = 48, kN = 64, kK = 40;

/// An int8 matmul with the chip's library schedule, as a generated library would have it.
struct Matmul {
    Input A{Int(8), {int(kM), int(kK)}, "A"}, B{Int(8), {int(kK), int(kN)}, "B"};
    Pipeline p{ops::matmul(A, B).func()};
    Buffer<> a{Int(8), {kM, kK}}, b{Int(8), {kK, kN}};

    explicit Matmul(const std::string &chip) {
        apply_chip_library_schedule(p, Target::named(chip), {{kM, kN}});
        a.fill_random(3);
        b.fill_random(4);
    }
    std::vector<uint8_t> artifact_bytes(const std::string &chip) const {
        return encode_chip_artifact(compile_chip_artifact(p, "mm", Target::named(chip), {{kM, kN}}));
    }
};

tessera_buffer_t c_buffer(const Buffer<> &b, const int64_t *shape) {
    tessera_buffer_t t;
    std::memset(&t, 0, sizeof t);
    t.data = b.data();
    t.shape = shape;
    t.dimensions = int32_t(b.shape().size());
    t.type_code = uint8_t(b.type().code());
    t.type_bits = uint8_t(b.type().bits());
    return t;
}

/// Loads `bytes`; the code, and the message on failure.
std::pair<int, std::string> load_code(const std::vector<uint8_t> &bytes, const char *target = nullptr) {
    tessera_chip_kernel_t *k = nullptr;
    const int code = tessera_chip_load_memory(bytes.data(), bytes.size(), target, &k);
    if (code == TESSERA_OK) {
        EXPECT_NE(k, nullptr);
        tessera_chip_free(k);
        return {code, ""};
    }
    EXPECT_EQ(k, nullptr);
    return {code, tessera_chip_last_error()};
}

/// Artifact bytes with their manifest replaced by `manifest` (lengths and checksum made valid,
/// as chip_artifact.h lays the file out: a 36-byte header, the manifest, the program).
std::vector<uint8_t> with_manifest(const std::vector<uint8_t> &bytes, const std::string &manifest) {
    uint64_t old_len = 0;
    for (int i = 0; i < 8; ++i) old_len |= uint64_t(bytes[12 + size_t(i)]) << (8 * i);
    std::vector<uint8_t> out(bytes.begin(), bytes.begin() + 36);
    out.insert(out.end(), manifest.begin(), manifest.end());
    out.insert(out.end(), bytes.begin() + 36 + long(old_len), bytes.end());
    for (int i = 0; i < 8; ++i) out[12 + size_t(i)] = uint8_t(uint64_t(manifest.size()) >> (8 * i));
    uint64_t h = 14695981039346656037ull; // FNV-1a 64 of manifest and program
    for (size_t i = 36; i < out.size(); ++i) h = (h ^ out[i]) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) out[28 + size_t(i)] = uint8_t(h >> (8 * i));
    return out;
}

class ChipArtifactRun : public ::testing::TestWithParam<std::string> {};

TEST_P(ChipArtifactRun, RuntimeRunsTheArtifactOnCallerBuffersLikeTheBackend) {
    const std::string chip = GetParam();
    Matmul mm(chip);
    const std::vector<uint8_t> bytes = mm.artifact_bytes(chip);

    // The file round-trips: the same program, arguments and target.
    const ChipArtifact back = decode_chip_artifact(bytes.data(), bytes.size());
    const ChipArtifact original = compile_chip_artifact(mm.p, "mm", Target::named(chip), {{kM, kN}});
    EXPECT_EQ(back.program.program, original.program.program);
    EXPECT_EQ(back.target_hash, original.target_hash);
    ASSERT_EQ(back.arguments.size(), 3u);
    EXPECT_EQ(back.arguments[0].name, "A");
    EXPECT_EQ(back.arguments[2].type, Int(32));
    EXPECT_EQ(encode_chip_artifact(back), bytes);
    // The manifest: each argument's shape, dtype and layout, the schedule compiled, the compiler.
    const auto manifest = nlohmann::json::parse(chip_artifact_manifest(back));
    const std::vector<std::vector<int64_t>> shapes = {{kM, kK}, {kK, kN}, {kM, kN}};
    const std::vector<std::string> names = {"A", "B", original.arguments[2].name}, kinds = {"input", "input", "output"},
                                   dtypes = {"int8", "int8", "int32"};
    ASSERT_EQ(manifest["arguments"].size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        const auto &arg = manifest["arguments"][i];
        EXPECT_EQ(back.arguments[i].shape, shapes[i]) << i;
        EXPECT_EQ(arg["name"], names[i]);
        EXPECT_EQ(arg["kind"], kinds[i]);
        EXPECT_EQ(arg["dtype"], dtypes[i]);
        EXPECT_EQ(arg["shape"].get<std::vector<int64_t>>(), shapes[i]);
        EXPECT_EQ(arg["layout"], "dense row-major");
    }
    EXPECT_EQ(back.schedule_json, mm.p.schedule().to_json()) << "the library schedule the pipeline carried";
    EXPECT_EQ(manifest["schedule"], mm.p.schedule().to_json());
    EXPECT_EQ(back.schedule_source, original.schedule_source);
    EXPECT_FALSE(back.schedule_source.empty());
    EXPECT_EQ(back.compiler_version, compiler_version());
    EXPECT_EQ(manifest["compiler_version"], compiler_version());
    EXPECT_EQ(back.tuning_record_id, -1);
    EXPECT_TRUE(manifest["tuning_record_id"].is_null());
    EXPECT_EQ(manifest["target"]["name"], chip);
    EXPECT_EQ(manifest["target"]["hash"], TargetIdentity::of(Target::named(chip)).hash);

    tessera_chip_kernel_t *k = nullptr;
    ASSERT_EQ(tessera_chip_load_memory(bytes.data(), bytes.size(), chip.c_str(), &k), TESSERA_OK) << tessera_chip_last_error();
    EXPECT_STREQ(tessera_chip_target(k), chip.c_str());
    EXPECT_EQ(tessera_chip_num_inputs(k), 2);
    EXPECT_EQ(tessera_chip_num_outputs(k), 1);
    EXPECT_THAT(tessera_chip_manifest(k), HasSubstr("\"compiler_version\""));

    const int64_t a_shape[2] = {kM, kK}, b_shape[2] = {kK, kN}, c_shape[2] = {kM, kN};
    Buffer<> c(Int(32), {kM, kN});
    const tessera_buffer_t A = c_buffer(mm.a, a_shape), B = c_buffer(mm.b, b_shape);
    tessera_buffer_t C = c_buffer(c, c_shape);
    const tessera_buffer_t *inputs[2] = {&A, &B};
    tessera_buffer_t *outputs[1] = {&C};
    tessera_chip_report_t report;
    ASSERT_EQ(tessera_chip_run(k, inputs, outputs, &report), TESSERA_OK) << tessera_chip_last_error();
    tessera_chip_free(k);

    const Buffer<> expected = evaluate_reference(mm.p, {{kM, kN}}, {{mm.A, mm.a}, {mm.B, mm.b}})[0];
    const Comparison cmp = compare(c, expected, Tolerance::for_type(Int(32), kK));
    EXPECT_TRUE(cmp.equal) << cmp.message;
    // The same kernel (its library schedule already applied) run by the backend: the same cycles.
    const ChipResult direct = realize_on_chip(mm.p, {{kM, kN}}, {{mm.A, mm.a}, {mm.B, mm.b}}, Target::named(chip));
    EXPECT_EQ(report.cycles, direct.report.cycles);
    EXPECT_EQ(report.macs, direct.report.macs);
    EXPECT_GT(report.utilisation, 0.0);
    EXPECT_STREQ(report.target, chip.c_str());
}

INSTANTIATE_TEST_SUITE_P(Chips, ChipArtifactRun, ::testing::Values(std::string("tsp-mini"), std::string("npu-edge")));

TEST(ChipArtifact, AnImagePaddedWithAZeroPointKeepsItsPaddingValue) {
    // An int8 conv whose padding holds the image's zero point (-28): the value the host writes
    // into the padded image travels in the manifest, so the runtime pads as the backend does.
    Input X(Int(8), {1, 8, 7, 7}, "X"), W(Int(8), {16, 8, 3, 3}, "W");
    ops::Conv2dOptions o;
    o.stride = {2, 2};
    o.padding = 1;
    o.pad_value = -28;
    const Pipeline p(ops::conv2d(X, W, o).func());
    const std::vector<int64_t> xs{1, 8, 7, 7}, ws{16, 8, 3, 3}, ys{1, 16, 4, 4};
    Buffer<> x(Int(8), xs), w(Int(8), ws), y(Int(32), ys);
    x.fill_random(5);
    w.fill_random(6);
    const std::vector<uint8_t> bytes = encode_chip_artifact(compile_chip_artifact(p, "conv", Target::named("tsp-mini"), {ys}));
    const ChipArtifact back = decode_chip_artifact(bytes.data(), bytes.size());
    const auto padded = std::find_if(back.program.tensors.begin(), back.program.tensors.end(), [](const ChipTensorMap &m) { return m.pad_value != 0; });
    ASSERT_NE(padded, back.program.tensors.end());
    EXPECT_EQ(padded->pad_value, -28.0);

    tessera_chip_kernel_t *k = nullptr;
    ASSERT_EQ(tessera_chip_load_memory(bytes.data(), bytes.size(), nullptr, &k), TESSERA_OK) << tessera_chip_last_error();
    const tessera_buffer_t cx = c_buffer(x, xs.data()), cw = c_buffer(w, ws.data());
    tessera_buffer_t cy = c_buffer(y, ys.data());
    const tessera_buffer_t *inputs[2] = {&cx, &cw};
    tessera_buffer_t *outputs[1] = {&cy};
    ASSERT_EQ(tessera_chip_run(k, inputs, outputs, nullptr), TESSERA_OK) << tessera_chip_last_error();
    tessera_chip_free(k);
    const Buffer<> expected = evaluate_reference(p, {ys}, {{X, x}, {W, w}})[0];
    const Comparison cmp = compare(y, expected, Tolerance::for_type(Int(32), 72));
    EXPECT_TRUE(cmp.equal) << cmp.message;
}

TEST(ChipArtifact, WrongCallsAreErrorCodesNamingTheArgument) {
    Matmul mm("tsp-mini");
    const std::vector<uint8_t> bytes = mm.artifact_bytes("tsp-mini");
    tessera_chip_kernel_t *k = nullptr;
    ASSERT_EQ(tessera_chip_load_memory(bytes.data(), bytes.size(), nullptr, &k), TESSERA_OK) << tessera_chip_last_error();
    const int64_t a_shape[2] = {kM, kK}, b_shape[2] = {kK, kN}, c_shape[2] = {kM, kN}, bad_shape[2] = {kM, kK + 1};
    Buffer<> c(Int(32), {kM, kN});
    int32_t *first = static_cast<int32_t *>(c.data());
    const int32_t untouched = *first = 12345;
    tessera_buffer_t A = c_buffer(mm.a, a_shape), B = c_buffer(mm.b, b_shape), C = c_buffer(c, c_shape);
    const tessera_buffer_t *inputs[2] = {&A, &B};
    tessera_buffer_t *outputs[1] = {&C};
    auto expect_code = [&](int kind, const std::string &needle) {
        const int code = tessera_chip_run(k, inputs, outputs, nullptr);
        EXPECT_EQ(TESSERA_ERROR_KIND(code), kind) << tessera_chip_last_error();
        EXPECT_THAT(tessera_chip_error_message(code), HasSubstr(needle));
        EXPECT_EQ(*first, untouched) << "an output was written by a failed call";
    };
    A.shape = bad_shape;
    expect_code(TESSERA_ERROR_SHAPE, "input A: expects shape [48, 40], got [48, 41]");
    A.shape = a_shape;
    A.type_code = TESSERA_TYPE_FLOAT;
    A.type_bits = 32;
    expect_code(TESSERA_ERROR_TYPE, "input A: expects int8");
    A = c_buffer(mm.a, a_shape);
    C.dimensions = 3;
    expect_code(TESSERA_ERROR_DIMENSIONS, "output matmul: expects 2 dimensions, got 3");
    C = c_buffer(c, c_shape);
    const int64_t strides[2] = {1, kM};
    B.strides = strides;
    expect_code(TESSERA_ERROR_STRIDES, "input B: the buffer is not dense row-major");
    B = c_buffer(mm.b, b_shape);
    inputs[1] = nullptr;
    expect_code(TESSERA_ERROR_NULL_BUFFER, "input B");
    inputs[1] = &B;
    C.data = mm.a.data();
    expect_code(TESSERA_ERROR_ALIASING, "output matmul overlaps A");
    C = c_buffer(c, c_shape);
    EXPECT_EQ(tessera_chip_run(k, inputs, outputs, nullptr), TESSERA_OK) << tessera_chip_last_error();
    EXPECT_EQ(TESSERA_ERROR_KIND(tessera_chip_run(nullptr, inputs, outputs, nullptr)), TESSERA_ERROR_ARGUMENT);
    tessera_chip_free(k);
}

TEST(ChipArtifact, BadFilesAreErrorsNotCrashes) {
    Matmul mm("tsp-mini");
    const std::vector<uint8_t> bytes = mm.artifact_bytes("tsp-mini");
    // Every truncation, through the header, the manifest and the program.
    for (size_t n = 0; n < bytes.size(); n += (n < 64 ? 1 : 97)) {
        auto [code, message] = load_code(std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(n)));
        EXPECT_EQ(code, TESSERA_ERROR_ARTIFACT) << n << " bytes";
        EXPECT_FALSE(message.empty());
    }
    EXPECT_THAT(load_code({bytes.begin(), bytes.begin() + 100}).second, HasSubstr("truncated"));
    // A flipped byte anywhere after the magic is a checksum or header error.
    for (size_t at = 8; at < bytes.size(); at += 131) {
        std::vector<uint8_t> damaged = bytes;
        damaged[at] ^= 0x5a;
        EXPECT_EQ(load_code(damaged).first, TESSERA_ERROR_ARTIFACT) << "byte " << at;
    }
    std::vector<uint8_t> flipped = bytes;
    flipped[bytes.size() - 3] ^= 1;
    EXPECT_THAT(load_code(flipped).second, HasSubstr("checksum mismatch"));
    const std::string text = "{\"not\": \"an artifact\"}";
    EXPECT_THAT(load_code({text.begin(), text.end()}).second, HasSubstr("not a Tessera chip artifact"));

    // Asked for another target.
    auto [code, message] = load_code(bytes, "npu-edge");
    EXPECT_EQ(code, TESSERA_ERROR_TARGET);
    EXPECT_THAT(message, HasSubstr("the artifact is for target 'tsp-mini', not 'npu-edge'"));

    // A manifest describing another target than the program's, with and without a matching hash.
    ChipArtifact other = compile_chip_artifact(mm.p, "mm", Target::named("tsp-mini"), {{kM, kN}});
    other.program.target = chipsim::load_target("npu-edge");
    EXPECT_THAT(load_code(encode_chip_artifact(other)).second, HasSubstr("manifest field 'target.hash' does not match"));
    other.target_hash = compile_chip_artifact(Matmul("npu-edge").p, "mm", Target::named("npu-edge"), {{kM, kN}}).target_hash;
    EXPECT_THAT(load_code(encode_chip_artifact(other)).second, HasSubstr("the program was compiled for 'tsp-mini'"));

    // A padding value that is not a finite number (a NaN is written as null).
    ChipArtifact nan_pad = compile_chip_artifact(mm.p, "mm", Target::named("tsp-mini"), {{kM, kN}});
    nan_pad.program.tensors.at(0).pad_value = std::nan("");
    EXPECT_THAT(load_code(encode_chip_artifact(nan_pad)).second, HasSubstr("chip.tensors[0].pad_value"));

    // Files: a missing one, and a good one read from disk.
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    tessera_chip_kernel_t *k = nullptr;
    EXPECT_EQ(tessera_chip_load((dir / "absent.tchip").c_str(), nullptr, &k), TESSERA_ERROR_IO);
    EXPECT_THAT(tessera_chip_last_error(), HasSubstr("cannot open"));
    const std::string path = write_chip_artifact(compile_chip_artifact(mm.p, "mm", Target::named("tsp-mini"), {{kM, kN}}), dir.string());
    ASSERT_EQ(tessera_chip_load(path.c_str(), "tsp-mini", &k), TESSERA_OK) << tessera_chip_last_error();
    tessera_chip_free(k);
    EXPECT_TRUE(std::filesystem::exists(dir / "mm.manifest.json"));
}

TEST(ChipArtifact, InconsistentTensorMapsAreRefusedNamingTheField) {
    // Hand-edited manifests whose index maps would place elements off the chip tensor or onto one
    // another: each must be refused by decode_chip_artifact (a tessera::Error naming the field) and
    // by the C loader (an artifact error), never loaded and run on wrong values.
    const Matmul mm("tsp-mini");
    const ChipArtifact good = compile_chip_artifact(mm.p, "mm", Target::named("tsp-mini"), {{kM, kN}});
    const ChipTensorMap &a_map = good.program.tensors.at(0);
    ASSERT_EQ(a_map.source, "A");
    ASSERT_EQ(a_map.source_shape, (std::vector<int64_t>{kM, kK}));
    ASSERT_EQ(a_map.chip_shape.size(), 2u);
    auto refused_with = [&](const std::function<void(ChipTensorMap &)> &edit, const std::string &field, const std::string &why) {
        ChipArtifact bad = good;
        edit(bad.program.tensors.at(0));
        const std::vector<uint8_t> bytes = encode_chip_artifact(bad);
        try {
            decode_chip_artifact(bytes.data(), bytes.size(), "edited.tchip");
            ADD_FAILURE() << field << ": accepted";
        } catch (const Error &e) {
            EXPECT_THAT(e.what(), HasSubstr("edited.tchip: manifest field '" + field + "' " + why));
        }
        const auto [code, message] = load_code(bytes);
        EXPECT_EQ(code, TESSERA_ERROR_ARTIFACT) << field;
        EXPECT_THAT(message, HasSubstr(field));
    };
    refused_with([](ChipTensorMap &m) { m.chip_dim_of_source = {1, 1}; }, "chip.tensors[0].chip_dim_of_source",
                 "gives chip dimension 1 to source dimensions 0 and 1; each chip dimension takes at most one");
    refused_with([](ChipTensorMap &m) { m.chip_dim_of_source = {0, 2}; }, "chip.tensors[0].chip_dim_of_source", "is not an integer in [-1, 1]");
    refused_with([](ChipTensorMap &m) { m.chip_dim_of_source = {0}; }, "chip.tensors[0].chip_dim_of_source", "needs one entry per source dimension");
    refused_with([](ChipTensorMap &m) { m.chip_offset = {1000000, 0}; }, "chip.tensors[0].chip_offset",
                 "[0] is 1000000: source dimension 0 (extent 48) then lies wholly outside chip dimension 0");
    refused_with([](ChipTensorMap &m) { m.chip_offset = {0, -1000000}; }, "chip.tensors[0].chip_offset",
                 "[1] is -1000000: source dimension 1 (extent 40) then lies wholly outside chip dimension 1");
    refused_with([](ChipTensorMap &m) { m.chip_offset = {0}; }, "chip.tensors[0].chip_offset", "needs one entry per source dimension or none");
    refused_with([](ChipTensorMap &m) { m.chip_limit = {1}; }, "chip.tensors[0].chip_limit", "needs one entry per chip dimension or none");
    refused_with([](ChipTensorMap &m) { m.chip_limit = {m.chip_shape[0] + 1, m.chip_shape[1]}; }, "chip.tensors[0].chip_limit",
                 "[0] is " + std::to_string(a_map.chip_shape[0] + 1) + ", beyond chip_shape[0] = " + std::to_string(a_map.chip_shape[0]));
    refused_with([](ChipTensorMap &m) { m.source = "Z"; }, "chip.tensors", "maps " + a_map.tensor + " to 'Z', which is no argument of that direction");
    refused_with([](ChipTensorMap &m) { m.source_shape = {kM, kK + 1}; }, "chip.tensors",
                 "maps " + a_map.tensor + " to 'A' with source_shape [48,41], but the argument's shape is [48,40]");
    // A layout the runtime does not marshal.
    std::string manifest = chip_artifact_manifest(good);
    const std::string dense = "\"layout\": \"dense row-major\"";
    manifest.replace(manifest.find(dense), dense.size(), "\"layout\": \"column-major\"");
    try {
        const std::vector<uint8_t> edited = with_manifest(encode_chip_artifact(good), manifest);
        decode_chip_artifact(edited.data(), edited.size(), "edited.tchip");
        ADD_FAILURE() << "a column-major argument was accepted";
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("manifest field 'arguments[0].layout' is 'column-major'; chip kernels take dense row-major buffers"));
    }
    // An offset that keeps part of the source on the chip (a group's slice) is still accepted.
    ChipArtifact slice = good;
    slice.program.tensors.at(0).chip_offset = {-(kM - 1), 0};
    EXPECT_EQ(load_code(encode_chip_artifact(slice)).first, TESSERA_OK);
}

TEST(ChipArtifact, CompilingForTheHostIsRefused) {
    Matmul mm("tsp-mini");
    try {
        compile_chip_artifact(mm.p, "mm", Target::host(), {{kM, kN}});
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("is not a chip"));
    }
}

TEST(ChipArtifact, AProgramCompiledAlreadyBecomesAnArtifactWithTheInputsGiven) {
    Matmul mm("npu-edge");
    const ChipProgram program = compile_for_chip(mm.p, Target::named("npu-edge"), {{kM, kN}});
    // With its Inputs: the arguments compile_chip_artifact gives, and the same run.
    const ChipArtifact made = chip_artifact_of_program(program, "mm", {mm.A, mm.B});
    const ChipArtifact compiled = compile_chip_artifact(mm.p, "mm", Target::named("npu-edge"), {{kM, kN}});
    ASSERT_EQ(made.arguments.size(), compiled.arguments.size());
    for (size_t i = 0; i < made.arguments.size(); ++i) {
        EXPECT_EQ(made.arguments[i].name, compiled.arguments[i].name);
        EXPECT_EQ(made.arguments[i].shape, compiled.arguments[i].shape);
        EXPECT_EQ(made.arguments[i].is_output, compiled.arguments[i].is_output);
    }
    const std::vector<uint8_t> bytes = encode_chip_artifact(made);
    const ChipArtifact back = decode_chip_artifact(bytes.data(), bytes.size(), "made");
    const Bindings inputs = {{mm.A, mm.a}, {mm.B, mm.b}};
    EXPECT_EQ(run_on_chip(back.program, inputs).report.cycles, run_on_chip(compiled.program, inputs).report.cycles);
    // Without one of the Inputs its maps read: an error naming it.
    try {
        chip_artifact_of_program(program, "mm", {mm.A});
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("the program reads 'B', which is none of the inputs given"));
    }
}

TESSERA_REGISTER_GENERATOR(chip_artifact_test_fixed, [] { return GeneratedPipeline(Matmul("tsp-mini").p, {{kM, kN}}); });
TESSERA_REGISTER_GENERATOR(chip_artifact_test_free, [] { return GeneratedPipeline(Matmul("tsp-mini").p); });

TEST(ChipLibrary, GeneratorDriverBuildsChipLibrariesOfFixedShapesOnly) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    const std::string out = dir.string();
    auto driver = [&](const char *generator) {
        std::vector<std::string> words = {"generator", "-g", generator, "-o", out, "target=tsp-mini"};
        std::vector<char *> argv;
        for (std::string &w : words) argv.push_back(w.data());
        ::testing::internal::CaptureStderr();
        const int status = generator_main(int(argv.size()), argv.data());
        return std::make_pair(status, ::testing::internal::GetCapturedStderr());
    };
    auto [ok, ok_err] = driver("chip_artifact_test_fixed");
    ASSERT_EQ(ok, 0) << ok_err;
    for (const char *file : {"libchip_artifact_test_fixed.a", "chip_artifact_test_fixed.h", "chip_artifact_test_fixed.tchip",
                             "chip_artifact_test_fixed.manifest.json"})
        EXPECT_TRUE(std::filesystem::exists(dir / file)) << file;
    std::ifstream header(dir / "chip_artifact_test_fixed.h");
    const std::string text{std::istreambuf_iterator<char>(header), std::istreambuf_iterator<char>()};
    EXPECT_THAT(text, HasSubstr("int chip_artifact_test_fixed(const tessera_buffer_t *A, const tessera_buffer_t *B, tessera_buffer_t *matmul);"));
    EXPECT_THAT(text, HasSubstr("const tessera_chip_report_t *chip_artifact_test_fixed_last_report(void);"));

    auto [refused, message] = driver("chip_artifact_test_free");
    EXPECT_EQ(refused, 1);
    EXPECT_THAT(message, HasSubstr("tessera: error: generator 'chip_artifact_test_free' gives no output shapes"));
    try {
        compile_to_library(Matmul("tsp-mini").p, "mm", out, Target::named("tsp-mini"));
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_THAT(e.what(), HasSubstr("has fixed shapes; give the output shapes"));
    }
}

} // namespace
} // namespace tessera
