// Scaled dot-product attention from the operator library on both chips (MXM, VXM softmax,
// MXM), against the reference within bf16's tolerance (Q, K, V and the probabilities enter
// the MXM as bf16): padded sequence lengths, the causal mask, Lq != Lk, rank 2.
#include "chip_test_util.h"

#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/codegen/chip_schedules.h>

#include <set>

namespace tessera {
namespace {

struct AttnCase {
    int heads, lq, lk, d;
    bool causal;
    Type type = Float(32);
};
/// How ctest and failure messages name a case.
void PrintTo(const AttnCase &c, std::ostream *os) {
    *os << c.heads << " heads, Lq " << c.lq << ", Lk " << c.lk << ", d " << c.d << (c.causal ? ", causal " : " ")
        << c.type.to_string();
}

class ChipAttention : public ::testing::TestWithParam<std::tuple<std::string, AttnCase>> {};

TEST_P(ChipAttention, EqualsReference) {
    const auto &[chip, ac] = GetParam();
    auto shape = [&](int l) {
        return ac.heads ? std::vector<int64_t>{ac.heads, l, ac.d} : std::vector<int64_t>{l, ac.d};
    };
    Input Q(ac.type, test::extents(shape(ac.lq)), "Q"), K(ac.type, test::extents(shape(ac.lk)), "K"),
        V(ac.type, test::extents(shape(ac.lk)), "V");
    ops::AttentionOptions o;
    o.causal = ac.causal;
    Func y = ops::scaled_dot_product_attention(Q, K, V, o);
    Bindings bind{{Q, test::random_buffer(ac.type, shape(ac.lq), 31)},
                  {K, test::random_buffer(ac.type, shape(ac.lk), 32)},
                  {V, test::random_buffer(ac.type, shape(ac.lk), 33)}};
    ChipResult r = test::expect_matches_reference(Pipeline(y), shape(ac.lq), bind, chip, ac.type, std::max(ac.lk, ac.d));
    EXPECT_NE(r.program.summary.find("attention"), std::string::npos) << r.program.summary;
    EXPECT_EQ(r.program.summary.find("causal") != std::string::npos, ac.causal) << r.program.summary;
    EXPECT_GT(r.report.macs, 0);
    // The program text (stride-0 broadcasts, the mask's lowest-float immediate) round-trips.
    EXPECT_EQ(chipsim::assemble(r.program.assembly()), r.program.program);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ChipAttention,
                         ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                                            ::testing::Values(AttnCase{2, 64, 64, 64, false}, AttnCase{1, 129, 129, 40, false},
                                                              AttnCase{2, 96, 96, 32, true}, AttnCase{1, 129, 129, 64, true},
                                                              AttnCase{1, 40, 72, 48, true}, AttnCase{0, 33, 50, 16, false},
                                                              AttnCase{1, 32, 32, 64, false, BFloat(16)})),
                         [](const auto &info) {
                             const AttnCase &c = std::get<1>(info.param);
                             return test::test_name(std::get<0>(info.param) + "_h" + std::to_string(c.heads) + "_q" +
                                                    std::to_string(c.lq) + "_k" + std::to_string(c.lk) + "_d" + std::to_string(c.d) +
                                                    (c.causal ? "_causal" : "") + "_" + c.type.to_string());
                         });

TEST(ChipAttention, CausalMaskChangesTheResult) {
    // The same inputs with and without the mask give different outputs on the chip, each equal
    // to its own reference: the mask is really applied, not just accepted.
    Input Q(Float(32), {1, 48, 32}, "Q"), K(Float(32), {1, 48, 32}, "K"), V(Float(32), {1, 48, 32}, "V");
    Bindings bind{{Q, test::random_buffer(Float(32), {1, 48, 32}, 1)},
                  {K, test::random_buffer(Float(32), {1, 48, 32}, 2)},
                  {V, test::random_buffer(Float(32), {1, 48, 32}, 3)}};
    ops::AttentionOptions causal;
    causal.causal = true;
    Buffer<> plain = realize_on_chip(Pipeline(ops::scaled_dot_product_attention(Q, K, V)), {{1, 48, 32}}, bind,
                                     Target::named("tsp-mini")).outputs[0];
    Buffer<> masked = realize_on_chip(Pipeline(ops::scaled_dot_product_attention(Q, K, V, causal)), {{1, 48, 32}}, bind,
                                      Target::named("tsp-mini")).outputs[0];
    // Query 0 sees only key 0: its output is V's row 0 (rounded to bf16 on the way in).
    for (int d = 0; d < 32; ++d)
        EXPECT_NEAR(masked.get_as_double({0, 0, d}), bind[2].buffer.get_as_double({0, 0, d}), 1e-2) << d;
    EXPECT_FALSE(compare(plain, masked, Tolerance::for_type(BFloat(16), 48)).equal);
}

TEST(ChipAttention, Seq512FitsBothChips) {
    // Compile only (the values are checked at smaller sizes above): at seq 512 the causal mask
    // and the softmax's tiles must still fit npu-edge's 512 KiB scratchpad.
    Input Q(Float(32), {1, 512, 64}, "Q"), K(Float(32), {1, 512, 64}, "K"), V(Float(32), {1, 512, 64}, "V");
    for (bool causal : {false, true}) {
        ops::AttentionOptions o;
        o.causal = causal;
        for (const char *chip : {"tsp-mini", "npu-edge"})
            EXPECT_NO_THROW(compile_for_chip(Pipeline(ops::scaled_dot_product_attention(Q, K, V, o)), Target::named(chip), {{1, 512, 64}}))
                << chip << (causal ? " causal" : "");
    }
}

// One head of attention over L queries and keys of D values on npu-edge, checked against the
// reference evaluator; Q, K and V are drawn from seeds `seed`, `seed` + 1, `seed` + 2.
ChipResult attention_on_npu_edge(int64_t L, int64_t D, uint64_t seed) {
    Input Q(Float(32), {1, L, D}, "Q"), K(Float(32), {1, L, D}, "K"), V(Float(32), {1, L, D}, "V");
    const Pipeline p(ops::scaled_dot_product_attention(Q, K, V));
    const Bindings bind{{Q, test::random_buffer(Float(32), {1, L, D}, seed)},
                        {K, test::random_buffer(Float(32), {1, L, D}, seed + 1)},
                        {V, test::random_buffer(Float(32), {1, L, D}, seed + 2)}};
    return test::expect_matches_reference(p, {1, L, D}, bind, "npu-edge", BFloat(16), D);
}

// npu-edge issues its execute and vector queues side by side, so a job's softmax (VXM) runs
// under the next job's matmuls: the program puts job 1's scores (the matmuls streaming L keys)
// before job 0's output (streaming D value rows), and in the simulated timeline more than a
// quarter of the VXM's time has a matmul running beside it (none when each job's softmax sat
// between its own two matmuls). The result equals the reference.
TEST(ChipAttention, OnNpuEdgeEachSoftmaxRunsUnderTheNextJobsMatmuls) {
    const int64_t L = 256, D = 64;
    const ChipResult r = attention_on_npu_edge(L, D, 71);
    const std::vector<chipsim::Instruction> &program = r.program.program.instructions;
    std::string order; // a job's first score matmul 'S', its first output matmul 'O'
    for (const chipsim::Instruction &in : program)
        if (in.op == chipsim::Opcode::MxmMm && !in.accumulate) order += in.tiles[1].count == L ? 'S' : in.tiles[1].count == D ? 'O' : '?';
    ASSERT_GE(order.size(), 4u);
    EXPECT_EQ(order.substr(0, 4), "SSOS") << "job 1's scores before job 0's output";
    const chipsim::TimingModel model(chipsim::load_target("npu-edge"));
    chipsim::SimOptions timing_only;
    timing_only.functional = false;
    const chipsim::SimResult sim = chipsim::simulate(r.program.program, model, timing_only);
    std::vector<std::pair<int64_t, int64_t>> matmuls, vector_ops;
    for (const chipsim::InstructionTiming &it : sim.timings) {
        const chipsim::Opcode op = program[size_t(it.index)].op;
        if (op == chipsim::Opcode::MxmMm) matmuls.push_back({it.start, it.end});
        if (op == chipsim::Opcode::Vxm || op == chipsim::Opcode::VxmReduce) vector_ops.push_back({it.start, it.end});
    }
    int64_t vector_time = 0, beside_a_matmul = 0;
    for (const auto &[vb, ve] : vector_ops) {
        vector_time += ve - vb;
        for (const auto &[mb, me] : matmuls) beside_a_matmul += std::max<int64_t>(0, std::min(ve, me) - std::max(vb, mb));
    }
    EXPECT_GT(beside_a_matmul * 4, vector_time) << beside_a_matmul << " of " << vector_time << " VXM cycles beside a matmul";
}

// A softmax step reads its statistic (the max, the sum over keys) by broadcast, one bank read
// per row of the scores it reads beside it. On npu-edge, whose scratchpad interleaves rows
// across banks, the statistic's row sits on a bank the scores' rows do not use, so that bank
// does not serve the scores as well. The result equals the reference.
TEST(ChipAttention, OnNpuEdgeABroadcastStatisticSitsOffTheBanksOfTheScores) {
    const int64_t L = 256, D = 64;
    const ChipResult r = attention_on_npu_edge(L, D, 74);
    const chipsim::TimingModel model(chipsim::load_target("npu-edge"));
    int broadcast_steps = 0;
    for (const chipsim::Instruction &in : r.program.program.instructions) {
        if (in.op != chipsim::Opcode::Vxm) continue;
        std::set<int32_t> banks_of_rows;
        std::vector<int32_t> broadcast_banks;
        for (size_t i = 1; i < in.tiles.size(); ++i) {
            const std::vector<int32_t> banks = model.resolve(in.tiles[i]).banks;
            if (in.tiles[i].stride == 0 && in.tiles[i].count > 1) broadcast_banks.push_back(banks.at(0));
            else banks_of_rows.insert(banks.begin(), banks.end());
        }
        for (int32_t b : broadcast_banks) {
            ++broadcast_steps;
            EXPECT_EQ(banks_of_rows.count(b), 0u) << "bank " << b << " serves a broadcast and the rows beside it in "
                                                  << chipsim::disassemble(in);
        }
    }
    const int64_t queries_a_job = model.target().mxm_shape(chipsim::DType::BF16).n; // the bf16 array's width
    EXPECT_GE(broadcast_steps, 4 * (L / queries_a_job)) << "each job's two halves read a max and a sum by broadcast";
}

TEST(ChipAttentionErrors, TooManyKeysForTheAccumulators) {
    Input Q(Float(32), {1, 64, 64}, "Q"), K(Float(32), {1, 1100, 64}, "K"), V(Float(32), {1, 1100, 64}, "V");
    for (const char *chip : {"tsp-mini", "npu-edge"})
        test::expect_chip_error(Pipeline(ops::scaled_dot_product_attention(Q, K, V)), {1, 64, 64}, chip, "accumulator rows");
}

TEST(ChipAttentionErrors, TensorizeOnTheSoftmaxIsRejected) {
    Input Q(Float(32), {1, 32, 32}, "Q"), K(Float(32), {1, 32, 32}, "K"), V(Float(32), {1, 32, 32}, "V");
    Func y = ops::scaled_dot_product_attention(Q, K, V);
    for (const Func &f : Pipeline(y).functions())
        if (f.name() == "attention_masked") {
            Func m = f;
            m.tensorize("mxm", {Var("d1"), Var("d2")});
        }
    test::expect_chip_error(Pipeline(y), {1, 32, 32}, "tsp-mini", "not a matmul");
}

TEST(ChipAttention, LibraryScheduleTensorizesBothMatmuls) {
    Input Q(Float(32), {1, 32, 32}, "Q"), K(Float(32), {1, 32, 32}, "K"), V(Float(32), {1, 32, 32}, "V");
    Func y = ops::scaled_dot_product_attention(Q, K, V);
    Pipeline p(y);
    apply_chip_library_schedule(p, Target::named("npu-edge"), {{1, 32, 32}});
    const std::string json = p.schedule().to_json();
    EXPECT_NE(json.find("attention_scores"), std::string::npos) << json;
    EXPECT_NE(json.find("mxm"), std::string::npos) << json;
    Bindings bind{{Q, test::random_buffer(Float(32), {1, 32, 32}, 4)},
                  {K, test::random_buffer(Float(32), {1, 32, 32}, 5)},
                  {V, test::random_buffer(Float(32), {1, 32, 32}, 6)}};
    test::expect_matches_reference(p, {1, 32, 32}, bind, "npu-edge", Float(32), 32);
}

} // namespace
} // namespace tessera
