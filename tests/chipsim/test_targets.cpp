// Target descriptions: the built-in chips have CHIP.md's numbers, round-trip through JSON, and
// load from a path.
#include "chipsim_test_util.h"
#include "test_support.h"

#include <cstdio>
#include <fstream>

using namespace chipsim_test;

TEST(Targets, BuiltinsAreListed) {
    EXPECT_EQ(builtin_target_names(), (std::vector<std::string>{"npu-edge", "tsp-mini"}));
}

TEST(Targets, TspMiniPeaksMatchChipSpec) {
    const TimingModel &m = model("tsp-mini");
    const Target &t = m.target();
    EXPECT_EQ(t.issue, IssueKind::Static);
    EXPECT_EQ(t.conflict_policy, ConflictPolicy::Error);
    EXPECT_EQ(t.peak_macs_per_cycle(DType::Int8), 16384);
    EXPECT_EQ(t.peak_macs_per_cycle(DType::BF16), 4096);
    EXPECT_EQ(m.bytes_per_cycle("MEM"), 2048);
    EXPECT_EQ(m.bytes_per_cycle("STREAMS"), 1024);
    EXPECT_EQ(t.vxm.alus * t.vxm.bytes_per_cycle, 1024);
    EXPECT_EQ(t.memory("MEM")->capacity_bytes(), 4 << 20);
    EXPECT_EQ(t.memory("MEM")->total_banks(), 32);
    EXPECT_EQ(m.stream_distance("MEM.w0", "MXM0"), 10);
    EXPECT_EQ(m.stream_distance("MEM.e7", "MXM3"), 3);
}

TEST(Targets, NpuEdgePeaksMatchChipSpec) {
    const TimingModel &m = model("npu-edge");
    const Target &t = m.target();
    EXPECT_EQ(t.issue, IssueKind::Dynamic);
    EXPECT_EQ(t.peak_macs_per_cycle(DType::Int8), 1024);
    EXPECT_EQ(t.peak_macs_per_cycle(DType::BF16), 512);
    EXPECT_EQ(m.bytes_per_cycle("SPAD"), 512);
    EXPECT_EQ(m.bytes_per_cycle("DRAM"), 16);
    EXPECT_EQ(t.memory("SPAD")->capacity_bytes(), 512 << 10);
    EXPECT_EQ(t.memory("ACC")->capacity_bytes(), 128 << 10);
    EXPECT_EQ(t.semaphores, 16);
}

TEST(Targets, JsonRoundTrips) {
    for (auto &name : builtin_target_names()) {
        Target t = load_target(name);
        Target again = load_target_json(t.to_json(), "again");
        EXPECT_EQ(again.to_json(), t.to_json()) << name;
    }
}

TEST(Targets, LoadsFromAPath) {
    std::string path = (tessera_test::unique_temp_dir() / "my-chip.json").string();
    Target t = load_target("npu-edge");
    std::string text = t.to_json();
    text.replace(text.find("\"npu-edge\""), 10, "\"my-chip\"");
    std::ofstream(path) << text;
    Target mine = load_target(path);
    EXPECT_EQ(mine.name, "my-chip");
    EXPECT_EQ(mine.source, path);
}

TEST(Targets, RooflineNamesTheLimiter) {
    const TimingModel &m = model("npu-edge");
    Roofline r = m.roofline(1 << 20, DType::Int8, {{"DRAM", 1 << 16}});
    EXPECT_EQ(r.compute_cycles, 1024);
    EXPECT_EQ(r.bound_cycles, 4096);
    EXPECT_EQ(r.limiter, "DRAM");
}
