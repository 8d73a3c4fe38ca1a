// A table of malformed programs and target files, each with the error it must get: where it is
// (line:column, instruction index and text, file and field) and why.
#include "chipsim_test_util.h"

#include <nlohmann/json.hpp>

#include <functional>

using namespace chipsim_test;

namespace {

struct BadProgram {
    const char *what;
    const char *target;
    const char *text;
    std::vector<std::string> expected;
};

// Syntax errors come from the assembler with line:column; the rest from validation/simulation
// with the instruction index and text.
const std::vector<BadProgram> kBadPrograms = {
    {"unknown mnemonic", "tsp-mini", "@0 mxm.mul.int8 m0.w0, ACC.b0[0:1], MEM.e0.b0[0:1]", {"test.tasm:1:4:", "unknown instruction 'mxm.mul.int8'"}},
    {"unknown dtype", "tsp-mini", "@0 mxm.lw.int4 m0.w0, MEM.e0.b0[0:1]", {"1:4:", "unknown dtype 'int4'"}},
    {"missing comma", "tsp-mini", "@0 mem.copy MEM.e0.b0[0:1] MEM.e1.b0[0:1]", {"1:28:", "expected ','"}},
    {"unclosed tile", "tsp-mini", "@0 mem.copy MEM.e0.b0[0:1, MEM.e1.b0[0:1]", {"1:26:", "expected ']'"}},
    {"zero rows", "tsp-mini", "@0 mem.copy MEM.e0.b0[0:0], MEM.e1.b0[0:1]", {"1:25:", "row count is 0"}},
    {"trailing text", "tsp-mini", "@0 nop 3 4", {"1:10:", "unexpected text after the instruction"}},
    {"bad view", "tsp-mini", ".input A int8 [4]\n@0 dma.load MEM.e0.b0[0:1], A[0:4]", {"2:30:", "expected '@'"}},
    {"unknown directive", "tsp-mini", ".inputs A int8 [4]", {"1:2:", "unknown directive '.inputs'"}},
    {"duplicate tensor", "tsp-mini", ".input A int8 [4]\n.output A int8 [4]", {"2:9:", "declared twice"}},
    {"directive after code", "tsp-mini", "@0 nop 1\n.input A int8 [4]", {"2:1:", "before the first instruction"}},
    {"bad chain op", "tsp-mini", "@0 vxm.add.fp32 MEM.e0.b0[0:1], MEM.e1.b0[0:1], MEM.e2.b0[0:1] | select", {"cannot be chained"}},
    {"bad slice", "tsp-mini", "@0 mem.copy MEM.e9.b0[0:1], MEM.e1.b0[0:1]", {"instruction 0 (line 1)", "`@0 mem.copy MEM.e9.b0[0:1], MEM.e1.b0[0:1]`", "slice 9 is out of range 0..7"}},
    {"bank out of range", "tsp-mini", "@0 mem.copy MEM.e1.b2[0:1], MEM.e1.b0[0:1]", {"instruction 0", "expected a bank b0..b1"}},
    {"tile past capacity", "tsp-mini", "@0 mem.copy MEM.e1.b0[2040:16], MEM.e1.b1[0:16]", {"instruction 0", "row 2048 is past the bank's 2048 rows"}},
    {"unknown memory", "npu-edge", "mem.copy MEM.e1.b0[0:1], SPAD[0:1]", {"unknown memory 'MEM'", "expected one of SPAD, ACC"}},
    {"interleaved with bank", "npu-edge", "mem.copy SPAD.b1[0:1], SPAD[0:1]", {"SPAD interleaves rows over its 8 banks"}},
    {"missing cycle", "tsp-mini", "nop 3", {"instruction 0", "every instruction needs @<cycle>"}},
    {"cycle on dynamic", "npu-edge", "@4 nop.exec 3", {"instruction 0", "remove the @cycle"}},
    {"dtype the MXM lacks", "tsp-mini", "@0 mxm.lw.fp32 m0.w0, MEM.e0.b0[0:1]", {"instruction 0", "does not support fp32"}},
    {"plane out of range", "tsp-mini", "@0 mxm.lw.int8 m4.w0, MEM.e0.b0[0:1]", {"MXM m4 is out of range m0..m3"}},
    {"accumulator of another plane", "tsp-mini", "@0 mxm.mm.int8 m1.w0, ACC.b0[0:4], MEM.e0.b0[0:4]", {"ACC", "belongs to MXM0 but the instruction runs on m1"}},
    {"too many weight rows", "tsp-mini", "@0 mxm.lw.int8 m0.w0, MEM.w*.b0[0:65]", {"loads 65 weight rows, the MXM holds 64"}},
    {"drain row mismatch", "tsp-mini", "@0 mxm.drain.int32.int32 MEM.e0.b0[0:8], ACC.b0[0:4]", {"writes 16 rows, the destination has 8"}},
    {"dma size mismatch", "npu-edge", ".input A int8 [64,64]\ndma.load SPAD[0:2], A@0[64]", {"instruction 0 (line 2)", "view moves 64 bytes but the tile holds 2 rows x 64 bytes = 128"}},
    {"undeclared tensor", "npu-edge", "dma.load SPAD[0:1], Q@0[64]", {"unknown tensor 'Q'"}},
    {"store to input", "npu-edge", ".input A int8 [64]\ndma.store A@0[64], SPAD[0:1]", {"dma.store writes to 'A', which is an .input"}},
    {"view past tensor", "npu-edge", ".input A int8 [64]\ndma.load SPAD[0:2], A@64[2:64,64]", {"reaches byte 192 of tensor 'A', which has 64 bytes"}},
    {"buffer without DRAM", "tsp-mini", ".buffer T int8 [64]\n@0 nop 1", {".buffer 'T'", "tsp-mini has no DRAM"}},
    {"buffer with a file", "npu-edge", ".buffer T int8 [64] file=t.npy", {"1:21:", "takes no file="}},
    {"buffer read before written", "npu-edge", ".buffer T int8 [64]\ndma.load SPAD[0:1], T@0[64]", {"instruction 0", "reads byte 0 of buffer 'T', which was never written"}},
    {"semaphore out of range", "npu-edge", "sync.wait.exec 16", {"semaphore 16 is out of range"}},
    {"sync on static", "tsp-mini", "@0 sync.signal.load 0", {"has no semaphores"}},
    {"nop without queue", "npu-edge", "nop 3", {"nop needs a queue"}},
    {"repeat of dma", "npu-edge", ".input A int8 [64]\ndma.load SPAD[0:1], A@0[64]\nrepeat 2, 0", {"instruction 1", "cannot repeat dma.load"}},
    {"wrong target", "npu-edge", ".target tsp-mini\nnop.exec 1", {"is for target 'tsp-mini'", "runs on 'npu-edge'"}},
    {"poison read", "tsp-mini", "@0 mem.copy MEM.e0.b0[0:1], MEM.e1.b0[5:1]", {"instruction 0", "reads row 5 of MEM.e1.b0[5:1], which was never written"}},
    {"weights never loaded", "npu-edge", ".input A bf16 [32,32]\ndma.load SPAD[0:32], A@0[2048]\nsync.signal.load 0\nsync.wait.exec 0\nmxm.mm.bf16 m0.w1, ACC[0:32], SPAD[0:32]",
     {"instruction 3 (line 5)", "weight buffer m0.w1 was never loaded"}},
    {"deadlock", "npu-edge", "sync.wait.exec 3\nnop.load 1", {"deadlock", "queue exec waits at instruction 0", "sync.wait.exec 3"}},
    {"cross-queue race", "npu-edge", ".input A int8 [64,64]\n.output B int8 [64,64]\ndma.load SPAD[0:64], A@0[4096]\ndma.store B@0[4096], SPAD[0:64]",
     {"data hazard", "instruction 1", "instruction 0", "SPAD row"}},
    {"static conflict", "tsp-mini", "@0 mem.copy MEM.e1.b0[0:8], MEM.e0.b0[0:8]\n@3 mem.copy MEM.e2.b0[0:8], MEM.e0.b1[0:8]",
     {"instruction 1 (line 2) `@3 mem.copy", "resource conflict with instruction 0 (line 1) `@0 mem.copy", "MEM.e0.rd"}},
};

} // namespace

TEST(Malformed, ProgramsGetTheirError) {
    ASSERT_GE(kBadPrograms.size(), 20u);
    for (const BadProgram &b : kBadPrograms) {
        SCOPED_TRACE(b.what);
        expect_error(
            [&] {
                Program p = assemble(b.text, "test.tasm");
                SimOptions o;
                // Inputs the table needs: every declared input filled with ones.
                for (auto &d : p.tensors)
                    if (!d.is_output) o.inputs[d.name] = TensorData{d.dtype, d.shape, std::vector<uint8_t>(size_t(d.bytes()), 1)};
                simulate(p, model(b.target), o);
            },
            b.expected);
    }
}

namespace {

struct BadTarget {
    const char *what;
    std::function<void(nlohmann::json &)> edit;
    std::vector<std::string> expected;
};

const std::vector<BadTarget> kBadTargets = {
    {"vector bytes out of range", [](nlohmann::json &j) { j["vector_bytes"] = 2; }, {"my.json", "field 'vector_bytes' is 2", "expected an integer in [4, 4096]"}},
    {"bad kind", [](nlohmann::json &j) { j["kind"] = "gpu"; }, {"field 'kind' is \"gpu\"", "one of streaming, dram_npu"}},
    {"missing field", [](nlohmann::json &j) { j.erase("clock_ghz"); }, {"missing field 'clock_ghz'"}},
    {"unknown field", [](nlohmann::json &j) { j["mxm"]["planes"] = 4; }, {"unknown field 'mxm.planes'"}},
    {"bank count", [](nlohmann::json &j) { j["memories"][0]["banks"] = 0; }, {"field 'memories[0].banks' is 0", "[1, 64]"}},
    {"row bytes", [](nlohmann::json &j) { j["memories"][0]["row_bytes"] = 48; }, {"'memories[0].row_bytes' is 48", "multiple of vector_bytes"}},
    {"mxm dtype", [](nlohmann::json &j) { j["mxm"]["dtypes"] = {"int8", "fp32"}; }, {"field 'mxm.dtypes'", "int8, bf16, fp16"}},
    {"latency type", [](nlohmann::json &j) { j["vxm"]["latency"]["exp"] = "slow"; }, {"field 'vxm.latency.exp' is \"slow\""}},
    {"missing position", [](nlohmann::json &j) { j["positions"].erase(0); }, {"field 'positions' is missing MXM0"}},
    {"static with queues", [](nlohmann::json &j) { j["queues"] = {"load"}; }, {"field 'queues'", "[] for static issue"}},
    {"clock", [](nlohmann::json &j) { j["clock_ghz"] = 0; }, {"field 'clock_ghz' is 0"}},
};

} // namespace

TEST(Malformed, TargetFilesGetTheirError) {
    nlohmann::json base = nlohmann::json::parse(load_target("tsp-mini").to_json());
    for (const BadTarget &b : kBadTargets) {
        SCOPED_TRACE(b.what);
        nlohmann::json j = base;
        b.edit(j);
        expect_error([&] { load_target_json(j.dump(), "my.json"); }, b.expected);
    }
    expect_error([] { load_target_json("{ not json", "broken.json"); }, {"broken.json", "not valid JSON"});
    expect_error([] { load_target("no-such-chip"); }, {"unknown target 'no-such-chip'", "npu-edge, tsp-mini"});
    expect_error([] { load_target("/nonexistent/chip.json"); }, {"cannot open target file '/nonexistent/chip.json'"});
}
