// `tessera run OP ... --target <chip> --json`: the report has the keys of `tessera sim --json`
// plus verified and max_abs_error, and the run verifies.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace {

#ifdef TESSERA_CLI
std::string run(const std::string &args, int &status) {
    std::string out;
    FILE *p = popen((std::string(TESSERA_CLI) + " " + args + " 2>&1").c_str(), "r");
    std::array<char, 4096> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    status = pclose(p);
    return out;
}

/// Runs `tessera ARGS` and checks it verifies and prints the report's JSON keys.
void expect_verified_json(const std::string &args, double max_error) {
    int status = 0;
    const std::string out = run(args, status);
    ASSERT_EQ(status, 0) << args << "\n" << out;
    nlohmann::json j = nlohmann::json::parse(out);
    for (const char *key : {"target", "cycles", "macs", "mxm_utilization", "units", "roofline", "bytes"})
        EXPECT_TRUE(j.contains(key)) << key << " missing in " << out;
    EXPECT_TRUE(j["verified"].get<bool>()) << out;
    EXPECT_LT(j["max_abs_error"].get<double>(), max_error);
    EXPECT_GT(j["cycles"].get<int64_t>(), 0);
}

TEST(ChipCli, RunMatmulAndConvJson) {
    for (const std::string args : {"run matmul M=96 N=80 K=72 dtype=int8 --target tsp-mini --json",
                                   "run matmul M=64 N=64 K=64 dtype=bf16 --target npu-edge --json",
                                   "run conv2d N=1 C=16 H=9 W=9 O=32 dtype=int8 layout=nhwc --target npu-edge --json"})
        expect_verified_json(args, 1e-2);
}

TEST(ChipCli, RunVectorOpsJson) {
    // softmax, layernorm, depthwise conv2d and attention, each on one chip, odd shapes.
    for (const std::string args : {"run softmax rows=37 cols=100 --target tsp-mini --json",
                                   "run layernorm rows=20 cols=64 dtype=bf16 --target npu-edge --json",
                                   "run depthwise_conv2d N=1 C=7 H=9 W=9 dtype=int8 --target tsp-mini --json",
                                   "run attention heads=2 L=129 D=64 causal=1 --target npu-edge --json"})
        expect_verified_json(args, 0.1);
}

TEST(ChipCli, RunLayoutChangesJson) {
    // On-chip layout changes move values: bit-exact.
    for (const std::string args : {"run transpose batch=2 rows=70 cols=45 dtype=int8 --target tsp-mini --json",
                                   "run nchw_to_nhwc N=1 C=20 H=7 W=9 dtype=bf16 --target npu-edge --json"})
        expect_verified_json(args, 1e-30);
}

TEST(ChipCli, UnsupportedOpSaysWhy) {
    int status = 0;
    const std::string out = run("run conv2d N=1 C=16 H=8 W=8 O=16 groups=2 dtype=int8 layout=nhwc --target tsp-mini", status);
    EXPECT_NE(status, 0);
    EXPECT_NE(out.find("chip backend"), std::string::npos) << out;
    EXPECT_NE(out.find("grouped"), std::string::npos) << out;
}
#endif

} // namespace
