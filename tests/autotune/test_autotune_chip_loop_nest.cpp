// The chip tuner's loop-nest space (chip_loop_nest_space.h): pipelines written by hand that the
// library does not schedule — an MLP block (two matmuls, bias, ReLU: matrix stages) and an
// RMSNorm — are tuned on both chips over the lanes, row blocks, producer placement and reduction
// splits; each new knob changes the program and its cycles; Z3 refuses a row block in the lanes
// that is not whole lane chunks, with its reason, exactly where the backend refuses it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../chip/chip_test_util.h"
#include "chip_loop_nest_constraints.h"
#include "hand_written_pipelines.h"
#include "chip_loop_nest_space.h"
#include "tessera/autotune.h"
#include "tessera/chipsim/target.h"
#include "tessera/codegen/chip_backend.h"
#include "tessera/error.h"
#include "tessera/ir_operator.h"
#include "tessera/lower.h"
#include "tessera/verify.h"
#include "test_support.h"

namespace {

using namespace tessera;
using tessera::internal::autotune::Candidate;
using tessera::internal::autotune::ChipLoopNestConstraints;
using tessera::internal::autotune::ChipLoopNestSpace;

Bindings random_inputs(const Pipeline &p) {
    Bindings b;
    uint64_t seed = 1;
    for (const Input &in : p.inputs()) {
        std::vector<int64_t> shape;
        for (const Expr &e : in.shape()) shape.push_back(*as_const_int(e));
        Buffer<> v(in.type(), shape);
        v.fill_random(seed++);
        b.push_back({in, v});
    }
    return b;
}

/// y = relu(x·W1 + b1)·W2, fp32, written by hand.
struct MlpBlock {
    Input x, w1, b1, w2;
    Var i{"i"}, j{"j"};
    Func hidden{"hidden"}, act{"act"}, y{"y"};
    Pipeline p;
    std::vector<std::vector<int64_t>> shapes;
    explicit MlpBlock(int n)
        : x(Float(32), {n, n}, "x"), w1(Float(32), {n, n}, "w1"), b1(Float(32), {n}, "b1"), w2(Float(32), {n, n}, "w2"), shapes{{n, n}} {
        RDom k(0, n, "k"), h(0, n, "h");
        hidden(i, j) = 0.0f;
        hidden(i, j) += x(i, k) * w1(k, j);
        act(i, j) = max(hidden(i, j) + b1(j), 0.0f);
        y(i, j) = 0.0f;
        y(i, j) += act(i, h) * w2(h, j);
        p = Pipeline(y);
    }
};

/// out = x · rsqrt(mean(x²) + eps) · gain, by rows, written by hand.
struct RmsNorm {
    Input x, gain;
    Var i{"i"}, j{"j"};
    Func sum_squares{"sum_squares"}, scale{"scale"}, out{"out"};
    Pipeline p;
    std::vector<std::vector<int64_t>> shapes;
    RmsNorm(int rows, int cols) : x(Float(32), {rows, cols}, "x"), gain(Float(32), {cols}, "gain"), shapes{{rows, cols}} {
        RDom k(0, cols, "k");
        sum_squares(i) = 0.0f;
        sum_squares(i) += x(i, k) * x(i, k);
        scale(i) = 1.0f / sqrt(sum_squares(i) / float(cols) + 1e-6f);
        out(i, j) = x(i, j) * scale(i) * gain(j);
        p = Pipeline(out);
    }
};

/// softmax by rows, written by hand, as a pipeline.
struct Softmax {
    Input x;
    tessera_test::SoftmaxByRows s;
    Pipeline p;
    std::vector<std::vector<int64_t>> shapes;
    Softmax(int rows, int cols) : x(Float(32), {rows, cols}, "x"), s(x), p(s.prob), shapes{{rows, cols}} {}
};

/// The candidate with the named knobs set to the named values (the rest at the default rule's).
Candidate choose(const ChipLoopNestSpace &space, const std::map<std::string, std::string> &values) {
    Candidate c(space.knobs().size(), 0);
    size_t found = 0;
    for (size_t k = 0; k < space.knobs().size(); ++k) {
        auto it = values.find(space.knobs()[k].name);
        if (it == values.end()) continue;
        const auto &vs = space.knobs()[k].values;
        const auto v = std::find(vs.begin(), vs.end(), it->second);
        EXPECT_NE(v, vs.end()) << it->first << "=" << it->second;
        c[k] = int(v - vs.begin());
        ++found;
    }
    EXPECT_EQ(found, values.size());
    return c;
}

struct Compiled {
    std::string assembly;
    int64_t cycles = 0;
};

Compiled compile_candidate(const ChipLoopNestSpace &space, const Candidate &c, const Pipeline &p,
                           const std::vector<std::vector<int64_t>> &shapes, const std::string &chip, const Bindings &b) {
    space.apply(c, p);
    ChipProgram program = compile_for_chip(p, Target::named(chip), shapes);
    ChipRunOptions timing_only;
    timing_only.functional = false;
    const int64_t cycles = run_on_chip(program, b, timing_only).report.cycles;
    p.set_schedule(Schedule{});
    return {program.assembly(), cycles};
}

TEST(ChipLoopNestSpace, EachNewKnobChangesTheProgramAndItsCycles) {
    RmsNorm norm(256, 512);
    MlpBlock mlp(128);
    const Bindings nb = random_inputs(norm.p), mb = random_inputs(mlp.p);
    const int vector_bytes = chipsim::load_target("npu-edge").vector_bytes;
    const ChipLoopNestSpace ns(norm.p, vector_bytes, norm.shapes), ms(mlp.p, vector_bytes, mlp.shapes);
    struct Case {
        const char *what;
        const ChipLoopNestSpace &space;
        const Pipeline &p;
        const std::vector<std::vector<int64_t>> &shapes;
        const Bindings &b;
        std::map<std::string, std::string> knobs;
    };
    const std::vector<Case> cases = {
        {"rows in the lanes in blocks, the reduction per block", ns, norm.p, norm.shapes, nb,
         {{"out.vector", "rows/32"}, {"sum_squares.compute", "at out"}}},
        {"a reduction split", ns, norm.p, norm.shapes, nb, {{"sum_squares.s1.split", "128"}}},
        {"a producer at the root", ns, norm.p, norm.shapes, nb, {{"scale.compute", "root"}}},
        {"a matrix stage's activation at the root", ms, mlp.p, mlp.shapes, mb, {{"act.compute", "root"}}},
        {"row blocks of a matrix stage", ms, mlp.p, mlp.shapes, mb, {{"hidden.row-block", "64"}}},
    };
    for (const std::string chip : {"tsp-mini", "npu-edge"})
        for (const Case &c : cases) {
            SCOPED_TRACE(chip + ": " + c.what);
            const Compiled base = compile_candidate(c.space, Candidate(c.space.knobs().size(), 0), c.p, c.shapes, chip, c.b);
            const Compiled changed = compile_candidate(c.space, choose(c.space, c.knobs), c.p, c.shapes, chip, c.b);
            EXPECT_NE(changed.assembly, base.assembly);
            EXPECT_NE(changed.cycles, base.cycles);
        }
}

TEST(ChipLoopNestSpace, AMaximumWithTwoReadersIsComputedAtALoopOnlyWhereBothReadInsideIt) {
    // The maximum at the output's row blocks needs the sum there too; with the sum at the root
    // (or the maximum at the sum's loop, which the output reads outside) it is no candidate.
    // Every candidate listed lowers (the chip backend may still refuse some lanes, with its
    // reason), and the coherent placement reads x from DRAM once.
    Softmax s(256, 512);
    const Bindings b = random_inputs(s.p);
    const ChipLoopNestSpace space(s.p, chipsim::load_target("npu-edge").vector_bytes, s.shapes);
    const Candidate both = choose(space, {{"prob.vector", "rows/32"}, {"row_max.compute", "at prob"}, {"total.compute", "at prob"}});
    EXPECT_TRUE(space.coherent(both));
    EXPECT_FALSE(space.coherent(choose(space, {{"prob.vector", "rows/32"}, {"row_max.compute", "at prob"}})));
    EXPECT_FALSE(space.coherent(choose(space, {{"row_max.compute", "at total"}})));
    for (const Candidate &c : space.candidates(40, 3)) {
        SCOPED_TRACE(space.describe(c));
        space.apply(c, s.p);
        EXPECT_NO_THROW(lower(s.p, Target::interpreter(), s.shapes));
        s.p.set_schedule(Schedule{});
    }
    auto dram_bytes = [&](const Candidate &c) {
        space.apply(c, s.p);
        const ChipResult r = test::expect_matches_reference_within(s.p, s.shapes[0], b, "npu-edge", Tolerance::for_type(Float(32), 512));
        s.p.set_schedule(Schedule{});
        return r.report.bytes.at("DRAM");
    };
    const int64_t x_and_out = 2 * 256 * 512 * 4;
    EXPECT_LE(dram_bytes(both), x_and_out + 4096) << "x and the output cross DRAM once (plus constants)";
    EXPECT_GT(dram_bytes(Candidate(space.knobs().size(), 0)), x_and_out + x_and_out / 4);
}

// Z3's verdict on a row block in the lanes agrees with the backend's both ways, on both chips
// and on a target with 32-byte vectors (8 fp32 lanes), and a refusal says why with its numbers.
TEST(ChipLoopNestConstraints, RowBlocksInTheLanesAgreeWithTheBackend) {
    const std::filesystem::path dir = tessera_test::unique_temp_dir();
    chipsim::Target narrow = test::with_32_byte_vectors(chipsim::load_target("tsp-mini"));
    narrow.name = "tsp-mini-narrow";
    const std::string narrow_path = (dir / "tsp-mini-narrow.json").string();
    std::ofstream(narrow_path) << narrow.to_json();
    RmsNorm norm(64, 128);
    for (const std::string chip : {std::string("tsp-mini"), std::string("npu-edge"), narrow_path}) {
        SCOPED_TRACE(chip);
        const chipsim::Target t = chip_target_description(Target::named(chip));
        const ChipLoopNestConstraints z3(t, 4);
        for (int block : {4, 8, 12, 16, 24, 32}) {
            SCOPED_TRACE(block);
            const std::optional<std::string> why = z3.why_infeasible(block);
            norm.p.set_schedule(Schedule{});
            Var io("io"), ii("ii");
            norm.out.split(norm.i, io, ii, block).vectorize(ii);
            norm.sum_squares.compute_at(norm.out, io);
            bool compiled = true;
            try {
                compile_for_chip(norm.p, Target::named(chip), norm.shapes);
            } catch (const Error &) {
                compiled = false;
            }
            norm.p.set_schedule(Schedule{});
            EXPECT_EQ(!why.has_value(), compiled) << why.value_or("approved");
            const int lanes = t.vector_bytes / 4;
            EXPECT_EQ(why.has_value(), block % lanes != 0);
            if (why)
                EXPECT_NE(why->find("a row block of " + std::to_string(block) + " rows in the VXM's lanes is not a multiple of " + t.name +
                                    "'s " + std::to_string(lanes) + " lanes"),
                          std::string::npos)
                    << *why;
        }
    }
    std::filesystem::remove_all(dir);
}

void expect_tuned_matches_the_reference(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes, const std::string &chip,
                                        int64_t reduction) {
    TuneOptions o;
    o.budget = 24;
    o.threads = 2;
    const TuneResult r = autotune(p, shapes, Target::named(chip), o);
    EXPECT_EQ(r.wrong, 0);
    EXPECT_EQ(r.approved_but_refused, 0);
    EXPECT_GT(r.library_cycles, 0) << "the default rule is the baseline of a pipeline the library does not schedule";
    EXPECT_LE(r.best_cycles, r.library_cycles);
    EXPECT_GT(r.proven_infeasible, 0);
    ASSERT_FALSE(r.infeasible_reasons.empty());
    EXPECT_NE(r.infeasible_reasons.front().find("is not a multiple of"), std::string::npos) << r.infeasible_reasons.front();
    const Bindings b = random_inputs(p);
    p.set_schedule(r.best);
    const ChipResult run = realize_on_chip(p, shapes, b, Target::named(chip));
    p.set_schedule(Schedule{});
    EXPECT_EQ(run.report.cycles, r.best_cycles);
    VerifyOptions full;
    full.mode = VerifyMode::Full;
    full.reduction_length = reduction;
    full.tolerance_type = BFloat(16); // the MXM multiplies fp32 operands rounded to bf16
    const Verification v = verify_outputs(p, shapes, b, run.outputs, full);
    EXPECT_TRUE(v.passed) << r.best_candidate << ": " << v.mismatch;
}

TEST(AutotuneChipLoopNest, HandWrittenMlpBlockAndRmsNormTuneOnBothChips) {
    MlpBlock mlp(64);
    RmsNorm norm(128, 256);
    for (const std::string chip : {"tsp-mini", "npu-edge"}) {
        SCOPED_TRACE(chip);
        expect_tuned_matches_the_reference(mlp.p, mlp.shapes, chip, 2 * 64);
        expect_tuned_matches_the_reference(norm.p, norm.shapes, chip, 256);
    }
}

// The npu-edge RMSNorm: its rows in the lanes, 32 at a time, each block's sum of squares
// computed for that block, beat the default rule (README: 107,332 -> 75,026 cycles).
TEST(AutotuneChipLoopNest, RowBlocksWinTheRmsNormOnNpuEdge) {
    RmsNorm norm(256, 512);
    TuneOptions o;
    o.budget = 16;
    o.threads = 2;
    const TuneResult r = autotune(norm.p, norm.shapes, Target::named("npu-edge"), o);
    EXPECT_LT(double(r.best_cycles), 0.8 * double(r.library_cycles)) << r.best_candidate;
    EXPECT_NE(r.best_candidate.find("sum_squares.compute=at out"), std::string::npos) << r.best_candidate;
}

TEST(AutotuneChipLoopNest, SameResultWhateverTheThreads) {
    MlpBlock mlp(64);
    TuneOptions one, two;
    one.budget = two.budget = 16;
    one.threads = 1;
    two.threads = 2;
    const TuneResult a = autotune(mlp.p, mlp.shapes, Target::named("tsp-mini"), one);
    const TuneResult b = autotune(mlp.p, mlp.shapes, Target::named("tsp-mini"), two);
    EXPECT_EQ(a.best.to_json(), b.best.to_json());
    EXPECT_EQ(a.to_string(), b.to_string());
}

} // namespace
