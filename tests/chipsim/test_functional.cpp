// Each instruction's values against a scalar reference: integers exact, bf16 rounding to
// nearest even, exp/tanh/rsqrt/recip within 2 ulp of a double-precision reference (they run in
// fp32, CHIP.md "Numerics").
#include "chipsim_test_util.h"

#include <tessera/chipsim/binary_format.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace chipsim_test;

namespace {

std::vector<int8_t> random_int8(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int8_t> v(n);
    for (auto &x : v) x = int8_t(int(rng() % 256) - 128);
    return v;
}

std::vector<float> random_float(size_t n, uint32_t seed, float lo = -4, float hi = 4) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v) x = d(rng);
    return v;
}

std::vector<uint16_t> to_bf16(const std::vector<float> &v) {
    std::vector<uint16_t> out;
    for (float f : v) out.push_back(float_to_bf16(f));
    return out;
}

/// Z = op(X, Y) on 16 rows of 16 fp32 lanes.
std::vector<float> vxm_fp32(const std::string &op_and_operands, const std::vector<float> &x, const std::vector<float> &y,
                            int out_rows = 16) {
    const std::string rows = std::to_string(out_rows);
    auto r = run_tsp(".input X fp32 [16,16]\n.input Y fp32 [16,16]\n.output Z fp32 [" + rows + ",16]\n"
                     "dma.load MEM.w1.b0[0:16], X@0[1024]\n"
                     "dma.load MEM.e1.b0[0:16], Y@0[1024]\n"
                     "vxm." + op_and_operands + "\n"
                     "dma.store Z@0[" + std::to_string(out_rows * 64) + "], MEM.e2.b1[0:" + rows + "]\n",
                     {{"X", tensor(DType::FP32, {16, 16}, x)}, {"Y", tensor(DType::FP32, {16, 16}, y)}});
    return values<float>(r.outputs.at("Z"));
}

void expect_ulps(float got, double want, int ulps) {
    double tol = std::abs(want) * std::ldexp(1.0, -23) * ulps + 1e-30;
    EXPECT_NEAR(got, want, tol);
}

} // namespace

TEST(Functional, DmaGathersStridedViewsAndCopiesRows) {
    auto a = random_int8(64 * 128, 1);
    auto r = run_tsp(".input A int8 [64,128]\n.output B int8 [64,64]\n.output C int8 [64,128]\n"
                     "dma.load MEM.e0.b0[0:64], A@64[64:128,64]\n" // the right half of every row
                     "mem.copy MEM.w3.b1[0:64], MEM.e0.b0[0:64]\n"
                     "dma.store B@0[4096], MEM.w3.b1[0:64]\n"
                     "dma.load MEM.e5.b0[0:128:2], A@0[8192]\n"    // every other row of a bank
                     "dma.store C@0[8192], MEM.e5.b0[0:128:2]\n",
                     {{"A", tensor(DType::Int8, {64, 128}, a)}});
    auto b = values<int8_t>(r.outputs.at("B"));
    for (int i = 0; i < 64; ++i)
        for (int j = 0; j < 64; ++j) ASSERT_EQ(b[size_t(i * 64 + j)], a[size_t(i * 128 + 64 + j)]);
    EXPECT_EQ(values<int8_t>(r.outputs.at("C")), a);
}

TEST(Functional, Int8MatmulIsExactAndAccumulates) {
    auto a = random_int8(128 * 64, 2), w = random_int8(64 * 64, 3);
    auto r = run_tsp(".input A int8 [128,64]\n.input W int8 [64,64]\n.output C int32 [64,64]\n"
                     "dma.load MEM.e0.b0[0:128], A@0[8192]\n"
                     "dma.load MEM.w*.b0[0:64], W@0[4096]\n"
                     "mxm.lw.int8 m2.w1, MEM.w*.b0[0:64]\n"
                     "mxm.mm.int8 m2.w1, ACC.b2[0:64], MEM.e0.b0[0:64]\n"
                     "mxm.mm.int8.acc m2.w1, ACC.b2[0:64], MEM.e0.b0[64:64]\n"
                     "mxm.drain.int32.int32 MEM.e*.b1[0:256], ACC.b2[0:64]\n"
                     "dma.store C@0[16384], MEM.e*.b1[0:256]\n",
                     {{"A", tensor(DType::Int8, {128, 64}, a)}, {"W", tensor(DType::Int8, {64, 64}, w)}});
    auto c = values<int32_t>(r.outputs.at("C"));
    for (int m = 0; m < 64; ++m)
        for (int n = 0; n < 64; ++n) {
            int32_t want = 0;
            for (int k = 0; k < 64; ++k)
                want += int32_t(a[size_t(m * 64 + k)]) * w[size_t(k * 64 + n)] + int32_t(a[size_t((m + 64) * 64 + k)]) * w[size_t(k * 64 + n)];
            ASSERT_EQ(c[size_t(m * 64 + n)], want) << m << "," << n;
        }
    EXPECT_EQ(r.report.macs, 2 * 64 * 64 * 64);
}

TEST(Functional, DrainScalesRoundsHalfEvenAndClampsWithRelu) {
    auto a = random_int8(64 * 64, 4), w = random_int8(64 * 64, 5);
    auto r = run_tsp(".input A int8 [64,64]\n.input W int8 [64,64]\n.output Q int8 [64,64]\n"
                     "dma.load MEM.e0.b0[0:64], A@0[4096]\n"
                     "dma.load MEM.w*.b0[0:64], W@0[4096]\n"
                     "mxm.lw.int8 m0.w0, MEM.w*.b0[0:64]\n"
                     "mxm.mm.int8 m0.w0, ACC.b0[0:64], MEM.e0.b0[0:64]\n"
                     "mxm.drain.int32.int8 MEM.e3.b1[0:64], ACC.b0[0:64], scale=0.001953125, relu\n"
                     "dma.store Q@0[4096], MEM.e3.b1[0:64]\n",
                     {{"A", tensor(DType::Int8, {64, 64}, a)}, {"W", tensor(DType::Int8, {64, 64}, w)}});
    auto q = values<int8_t>(r.outputs.at("Q"));
    for (int m = 0; m < 64; ++m)
        for (int n = 0; n < 64; ++n) {
            int32_t acc = 0;
            for (int k = 0; k < 64; ++k) acc += int32_t(a[size_t(m * 64 + k)]) * w[size_t(k * 64 + n)];
            double v = std::max(0.0, acc / 512.0);
            ASSERT_EQ(q[size_t(m * 64 + n)], int8_t(std::min(127.0, std::nearbyint(v))));
        }
}

TEST(Functional, Bf16MatmulAccumulatesInFp32AndRoundsOnceOnDrain) {
    auto a = to_bf16(random_float(32 * 32, 6)), w = to_bf16(random_float(32 * 32, 7));
    auto r = run_tsp(".input A bf16 [32,32]\n.input W bf16 [32,32]\n.output C bf16 [32,32]\n.output F fp32 [32,32]\n"
                     "dma.load MEM.e0.b0[0:32], A@0[2048]\n"
                     "dma.load MEM.w*.b0[0:32], W@0[2048]\n"
                     "mxm.lw.bf16 m3.w0, MEM.w*.b0[0:32]\n"
                     "mxm.mm.bf16 m3.w0, ACC.b3[0:32], MEM.e0.b0[0:32]\n"
                     "mxm.drain.fp32.bf16 MEM.e2.b1[0:32], ACC.b3[0:32]\n"
                     "mxm.drain.fp32.fp32 MEM.e4.b1[0:64], ACC.b3[0:32]\n"
                     "dma.store C@0[2048], MEM.e2.b1[0:32]\n"
                     "dma.store F@0[4096], MEM.e4.b1[0:64]\n",
                     {{"A", tensor(DType::BF16, {32, 32}, a)}, {"W", tensor(DType::BF16, {32, 32}, w)}});
    auto c = values<uint16_t>(r.outputs.at("C"));
    auto f = values<float>(r.outputs.at("F"));
    for (int m = 0; m < 32; ++m)
        for (int n = 0; n < 32; ++n) {
            float acc = 0;
            for (int k = 0; k < 32; ++k) acc = acc + bf16_to_float(a[size_t(m * 32 + k)]) * bf16_to_float(w[size_t(k * 32 + n)]);
            ASSERT_EQ(f[size_t(m * 32 + n)], acc);
            ASSERT_EQ(c[size_t(m * 32 + n)], float_to_bf16(acc));
        }
}

TEST(Functional, VxmBinaryOpsMatchFp32) {
    auto x = random_float(256, 8), y = random_float(256, 9, 0.5f, 4.0f);
    struct Case {
        const char *op;
        float (*ref)(float, float);
    };
    const Case cases[] = {{"add", [](float a, float b) { return a + b; }}, {"sub", [](float a, float b) { return a - b; }},
                          {"mul", [](float a, float b) { return a * b; }}, {"div", [](float a, float b) { return a / b; }},
                          {"max", [](float a, float b) { return std::max(a, b); }}, {"min", [](float a, float b) { return std::min(a, b); }}};
    for (const Case &c : cases) {
        auto z = vxm_fp32(std::string(c.op) + ".fp32 MEM.e2.b1[0:16], MEM.w1.b0[0:16], MEM.e1.b0[0:16]", x, y);
        for (size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], c.ref(x[i], y[i])) << c.op << " " << i;
    }
}

TEST(Functional, VxmTranscendentalsWithinTwoUlp) {
    auto x = random_float(256, 10, 0.1f, 4.0f);
    struct Case {
        const char *op;
        double (*ref)(double);
    };
    const Case cases[] = {{"exp", [](double a) { return std::exp(a); }}, {"tanh", [](double a) { return std::tanh(a); }},
                          {"rsqrt", [](double a) { return 1.0 / std::sqrt(a); }}, {"recip", [](double a) { return 1.0 / a; }}};
    for (const Case &c : cases) {
        auto z = vxm_fp32(std::string(c.op) + ".fp32 MEM.e2.b1[0:16], MEM.w1.b0[0:16]", x, x);
        for (size_t i = 0; i < z.size(); ++i) expect_ulps(z[i], c.ref(double(x[i])), 2);
    }
}

TEST(Functional, VxmImmediatesChainsSelectAndCasts) {
    auto x = random_float(256, 11), y = random_float(256, 12);
    auto z = vxm_fp32("add.fp32 MEM.e2.b1[0:16], MEM.w1.b0[0:16], #1.5 | mul #0.5 | relu", x, y);
    for (size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], std::max(0.0f, (x[i] + 1.5f) * 0.5f));
    auto s = vxm_fp32("select.fp32 MEM.e2.b1[0:16], MEM.w1.b0[0:16], MEM.e1.b0[0:16], #7", x, y);
    for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], x[i] != 0.0f ? y[i] : 7.0f);
    // fp32 -> bf16: 16 lanes per row (the wider type sets the lane count), packed, rest zero.
    auto b = vxm_fp32("cast.fp32.bf16 MEM.e2.b1[0:16], MEM.w1.b0[0:16]", x, y);
    for (int r = 0; r < 16; ++r) {
        const uint16_t *h = reinterpret_cast<const uint16_t *>(b.data() + r * 16);
        for (int l = 0; l < 16; ++l) ASSERT_EQ(h[l], float_to_bf16(x[size_t(r * 16 + l)]));
        for (int l = 16; l < 32; ++l) ASSERT_EQ(h[l], 0);
    }
}

// A narrowing VXM whose destination has fewer rows packs them (vxm_rows_packed): fp32 -> bf16
// makes one dense row of 32 from two rows of 16 lanes (what mxm.drain.fp32.bf16 writes), after
// the chain, rounding once; int32 -> int8 packs four rows. It costs the VXM what the unpacked
// instruction does: its source rows pass through either way.
TEST(Functional, ANarrowingVxmWithFewerDestinationRowsPacksThem) {
    auto x = random_float(256, 21), y = random_float(256, 22);
    auto packed = vxm_fp32("add.fp32.bf16 MEM.e2.b1[0:8], MEM.w1.b0[0:16], MEM.e1.b0[0:16] | relu", x, y, 8);
    for (int r = 0; r < 8; ++r) {
        const uint16_t *h = reinterpret_cast<const uint16_t *>(packed.data() + r * 16);
        for (int l = 0; l < 32; ++l) ASSERT_EQ(h[l], float_to_bf16(std::max(0.0f, x[size_t(r * 32 + l)] + y[size_t(r * 32 + l)])));
    }

    auto vxm_busy = [](const SimResult &r) {
        for (const UnitReport &u : r.report.units)
            if (u.name == "VXM") return u.busy_cycles;
        ADD_FAILURE() << "no VXM in the report";
        return int64_t(0);
    };
    auto cast = [&](const std::string &out_rows) {
        const int64_t rows = std::stoll(out_rows);
        return run_npu(".input X fp32 [16,16]\n.output Z bf16 [" + std::to_string(rows * 32 / 16) + ",16]\n"
                       "dma.load SPAD[0:16], X@0[1024]\nsync.signal.load 0\nsync.wait.vector 0\n"
                       "vxm.cast.fp32.bf16 SPAD[16:" + out_rows + "], SPAD[0:16]\nsync.signal.vector 1\nsync.wait.store 1\n"
                       "dma.store Z@0[" + std::to_string(rows * 64) + "], SPAD[16:" + out_rows + "]\n",
                       {{"X", tensor(DType::FP32, {16, 16}, x)}});
    };
    const SimResult dense = cast("8"), half = cast("16");
    EXPECT_EQ(vxm_busy(dense), vxm_busy(half));
    const auto z = values<uint16_t>(dense.outputs.at("Z")), zh = values<uint16_t>(half.outputs.at("Z"));
    for (size_t i = 0; i < z.size(); ++i) {
        ASSERT_EQ(z[i], float_to_bf16(x[i]));
        ASSERT_EQ(zh[i / 16 * 32 + i % 16], z[i]); // the unpacked rows: 16 values, then zeros
    }

    std::vector<int32_t> w(16 * 16);
    for (size_t i = 0; i < w.size(); ++i) w[i] = int32_t(i % 300) - 150;
    auto r = run_npu(".input W int32 [16,16]\n.output Z int8 [4,64]\n"
                     "dma.load SPAD[0:16], W@0[1024]\nsync.signal.load 0\nsync.wait.vector 0\n"
                     "vxm.relu.int32.int8 SPAD[16:4], SPAD[0:16]\nsync.signal.vector 1\nsync.wait.store 1\n"
                     "dma.store Z@0[256], SPAD[16:4]\n",
                     {{"W", tensor(DType::Int32, {16, 16}, w)}});
    const auto q = values<int8_t>(r.outputs.at("Z"));
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(q[i], std::clamp(std::max(w[i], 0), -128, 127));

    // A destination neither as tall as the sources nor packed by the dtypes' ratio is refused.
    expect_error([&] { cast("5"); }, {"packing vxm", "2 source rows a destination row", "destination has 5"});
}

// A widening VXM whose destination has more rows unpacks each source row (vxm_rows_unpacked),
// the inverse of packing: bf16 -> fp32 turns one dense row of 32 into two rows of 16 (lanes
// 0..15, then 16..31), exactly; a binary op unpacks every source alike. The VXM passes one
// vector a destination row. A destination of any other height is refused.
TEST(Functional, AWideningVxmWithMoreDestinationRowsUnpacksThem) {
    std::vector<uint16_t> x(8 * 32), y(8 * 32);
    for (size_t i = 0; i < x.size(); ++i) {
        x[i] = float_to_bf16(float(int(i % 97) - 48) / 8.0f);
        y[i] = float_to_bf16(float(int(i % 31) - 15) / 4.0f);
    }
    auto run = [&](const std::string &op, const std::string &rows) {
        return run_npu(".input X bf16 [8,32]\n.input Y bf16 [8,32]\n.output Z fp32 [" + rows + ",16]\n"
                       "dma.load SPAD[0:8], X@0[512]\ndma.load SPAD[8:8], Y@0[512]\nsync.signal.load 0\nsync.wait.vector 0\n"
                       "vxm." + op + ".bf16.fp32 SPAD[16:" + rows + "], SPAD[0:8]" + (op == "add" ? ", SPAD[8:8]" : "") +
                       "\nsync.signal.vector 1\nsync.wait.store 1\n"
                       "dma.store Z@0[" + std::to_string(std::stoll(rows) * 64) + "], SPAD[16:" + rows + "]\n",
                       {{"X", tensor(DType::BF16, {8, 32}, x)}, {"Y", tensor(DType::BF16, {8, 32}, y)}});
    };
    const SimResult widened = run("cast", "16"), summed = run("add", "16");
    const auto z = values<float>(widened.outputs.at("Z")), sum = values<float>(summed.outputs.at("Z"));
    ASSERT_EQ(z.size(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(z[i], bf16_to_float(x[i])) << i; // row r of 32 lanes is rows 2r, 2r + 1 of 16
        ASSERT_EQ(sum[i], bf16_to_float(x[i]) + bf16_to_float(y[i])) << i;
    }
    auto vxm_busy = [](const SimResult &r) {
        for (const UnitReport &u : r.report.units)
            if (u.name == "VXM") return u.busy_cycles;
        ADD_FAILURE() << "no VXM in the report";
        return int64_t(0);
    };
    // The same 8 source rows, not unpacked (only their first 16 lanes read): half the vectors.
    EXPECT_GT(vxm_busy(widened), vxm_busy(run("cast", "8")));
    expect_error([&] { run("cast", "12"); }, {"unpacking vxm", "2 destination rows a source row", "destination has 12"});
}

TEST(Functional, VxmIntegerArithmeticSaturatesOnStore) {
    std::vector<int8_t> x(64 * 4, 100), y(64 * 4, 100);
    y[1] = -100;
    auto r = run_tsp(".input X int8 [4,64]\n.input Y int8 [4,64]\n.output Z int8 [4,64]\n"
                     "dma.load MEM.w1.b0[0:4], X@0[256]\ndma.load MEM.e1.b0[0:4], Y@0[256]\n"
                     "vxm.add.int8 MEM.e2.b1[0:4], MEM.w1.b0[0:4], MEM.e1.b0[0:4]\n"
                     "dma.store Z@0[256], MEM.e2.b1[0:4]\n",
                     {{"X", tensor(DType::Int8, {4, 64}, x)}, {"Y", tensor(DType::Int8, {4, 64}, y)}});
    auto z = values<int8_t>(r.outputs.at("Z"));
    EXPECT_EQ(z[0], 127);
    EXPECT_EQ(z[1], 0);
}

TEST(Functional, ReductionsOverRowsAndLanes) {
    auto x = random_float(256, 13);
    auto rows = vxm_fp32("reduce.sum.rows.fp32 MEM.e2.b1[0:1], MEM.w1.b0[0:16]", x, x, 1);
    for (int l = 0; l < 16; ++l) {
        float want = 0;
        for (int r = 0; r < 16; ++r) want = r == 0 ? x[size_t(l)] : want + x[size_t(r * 16 + l)];
        ASSERT_EQ(rows[size_t(l)], want);
    }
    auto lanes = vxm_fp32("reduce.max.lanes.fp32 MEM.e2.b1[0:16], MEM.w1.b0[0:16]", x, x);
    for (int r = 0; r < 16; ++r) {
        ASSERT_EQ(lanes[size_t(r * 16)], *std::max_element(x.begin() + r * 16, x.begin() + r * 16 + 16));
        for (int l = 1; l < 16; ++l) ASSERT_EQ(lanes[size_t(r * 16 + l)], 0.0f);
    }
}

TEST(Functional, SxmTransposesPermutesAndShifts) {
    auto x = random_float(256, 14);
    std::vector<int8_t> b(64);
    for (int i = 0; i < 64; ++i) b[size_t(i)] = int8_t(i);
    auto r = run_tsp(".input X fp32 [16,16]\n.input B int8 [1,64]\n.output T fp32 [16,16]\n.output P int8 [1,64]\n.output S int8 [1,64]\n"
                     "dma.load MEM.w1.b0[0:16], X@0[1024]\n"
                     "dma.load MEM.e1.b0[0:1], B@0[64]\n"
                     "sxm.transpose.fp32 MEM.w2.b1[0:16], MEM.w1.b0[0:16]\n"
                     "sxm.permute.int8 MEM.e2.b1[0:1], MEM.e1.b0[0:1], [1,0]\n"
                     "sxm.shift.int8 MEM.e3.b1[0:1], MEM.e1.b0[0:1], #3\n"
                     "dma.store T@0[1024], MEM.w2.b1[0:16]\n"
                     "dma.store P@0[64], MEM.e2.b1[0:1]\n"
                     "dma.store S@0[64], MEM.e3.b1[0:1]\n",
                     {{"X", tensor(DType::FP32, {16, 16}, x)}, {"B", tensor(DType::Int8, {1, 64}, b)}});
    auto t = values<float>(r.outputs.at("T"));
    for (int i = 0; i < 16; ++i)
        for (int j = 0; j < 16; ++j) ASSERT_EQ(t[size_t(i * 16 + j)], x[size_t(j * 16 + i)]);
    auto p = values<int8_t>(r.outputs.at("P")), s = values<int8_t>(r.outputs.at("S"));
    for (int l = 0; l < 64; ++l) {
        ASSERT_EQ(p[size_t(l)], l ^ 1);
        ASSERT_EQ(s[size_t(l)], l < 3 ? 0 : l - 3);
    }
}

TEST(Functional, RepeatAdvancesTilesByTheirSpan) {
    std::vector<int8_t> a(64 * 16);
    for (size_t i = 0; i < a.size(); ++i) a[i] = int8_t(i * 7);
    Program p = assemble(".input A int8 [16,64]\n.output B int8 [16,64]\n"
                         "@0 dma.load MEM.e0.b0[0:16], A@0[1024]\n"
                         "@500 mem.copy MEM.w1.b0[0:4], MEM.e0.b0[0:4]\n"
                         "@500 repeat 3, 4\n"
                         "@600 dma.store B@0[1024], MEM.w1.b0[0:16]\n");
    SimOptions o;
    o.inputs["A"] = tensor(DType::Int8, {16, 64}, a);
    auto r = simulate(p, model("tsp-mini"), o);
    EXPECT_EQ(values<int8_t>(r.outputs.at("B")), a);
    EXPECT_EQ(r.report.instructions, 6);
}

TEST(Functional, OutputsMustBeWrittenInFull) {
    expect_error([] { run_tsp(".output C int8 [2,64]\n@0 nop 1\n"); }, {"output 'C' was not fully written", "element 0"});
}

// A .buffer lives in npu-edge's DRAM: one DMA stores it, a later one reads it back, and only
// the .input and .output cross the host link; the text and binary forms keep the declaration.
TEST(Functional, ABufferStaysInDramBetweenDmasAndNeverCrossesTheHostLink) {
    const std::string text = ".input A int8 [64,64]\n"
                             ".buffer T int8 [64,64]\n"
                             ".output B int8 [64,64]\n"
                             "dma.load SPAD[0:64], A@0[4096]\n"
                             "sync.signal.load 0\n"
                             "sync.wait.store 0\n"
                             "dma.store T@0[4096], SPAD[0:64]\n"
                             "sync.signal.store 1\n"
                             "sync.wait.load 1\n"
                             "dma.load SPAD[64:64], T@0[4096]\n"
                             "sync.signal.load 2\n"
                             "sync.wait.store 2\n"
                             "dma.store B@0[4096], SPAD[64:64]\n";
    const Program p = assemble(text, "test.tasm");
    ASSERT_EQ(p.tensors.size(), 3u);
    EXPECT_TRUE(p.tensors[1].is_buffer);
    EXPECT_FALSE(p.tensors[1].is_output);
    EXPECT_NE(disassemble(p).find(".buffer T int8 [64,64]\n"), std::string::npos);
    EXPECT_EQ(assemble(disassemble(p), "again.tasm"), p);
    const Program decoded = decode_program(encode_program(p));
    EXPECT_EQ(decoded, p);
    EXPECT_TRUE(decoded.tensors[1].is_buffer);

    std::vector<int8_t> a(4096);
    for (size_t i = 0; i < a.size(); ++i) a[i] = int8_t(int(i * 7 % 251) - 125);
    SimOptions o;
    o.inputs["A"] = tensor(DType::Int8, {64, 64}, a);
    const SimResult r = simulate(p, model("npu-edge"), o);
    EXPECT_EQ(values<int8_t>(r.outputs.at("B")), a);
    EXPECT_FALSE(r.outputs.count("T")); // a buffer is no output
    const Target &t = model("npu-edge").target();
    const int64_t one_way = t.host_link.latency + 4096 / t.host_link.bytes_per_cycle;
    EXPECT_EQ(r.report.host_link_in_cycles, one_way);
    EXPECT_EQ(r.report.host_link_out_cycles, one_way);
    EXPECT_EQ(r.report.bytes.at("HOST"), 2 * 4096);
    EXPECT_EQ(r.report.bytes.at("DRAM"), 4 * 4096); // both tensors' DMAs, the buffer's twice
}
