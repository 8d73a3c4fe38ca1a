// Schedules that cannot work on a chip get a clear tessera::Error — never a wrong result.
#include "chip_test_util.h"

#include <tessera/codegen/chip_schedules.h>
#include <tessera/ir_operator.h>

namespace tessera {
namespace {

/// Compiles `p` for `chip` and returns the error message ("" when it compiled).
std::string compile_error(const Pipeline &p, const std::vector<int64_t> &shape, const std::string &chip) {
    try {
        compile_for_chip(p, Target::named(chip), {shape});
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(ChipErrors, TileLargerThanAnAccumulatorBank) {
    Input A(Int(8), {2048, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    C.update().tile(i, j, io, jo, ii, ji, 2048, 64);
    std::string msg = compile_error(Pipeline(C), {2048, 64}, "tsp-mini");
    EXPECT_NE(msg.find("accumulator rows"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1024"), std::string::npos) << msg;
}

TEST(ChipErrors, DrainedTileLargerThanTheChosenMemBank) {
    Input A(Int(8), {1024, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    C.update().tile(i, j, io, jo, ii, ji, 1024, 64);
    C.store_in(MemoryKind::MEM, 5);
    std::string msg = compile_error(Pipeline(C), {1024, 64}, "tsp-mini");
    EXPECT_NE(msg.find("larger than MEM bank 5"), std::string::npos) << msg;
}

TEST(ChipErrors, TensorizeOnANestThatIsNotAMatmul) {
    Input A(Int(8), {64, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Func R = ops::relu(ops::Tensor(C, {64, 64}));
    R.tensorize("mxm", {Var("d0"), Var("d1")});
    std::string msg = compile_error(Pipeline(R), {64, 64}, "tsp-mini");
    EXPECT_NE(msg.find("not a matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find(R.name()), std::string::npos) << msg;
}

TEST(ChipErrors, TensorizeMustCoverIJAndK) {
    Input A(Int(8), {64, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji");
    C.update().tile(i, j, io, jo, ii, ji, 64, 64).reorder({io, jo, VarOrRVar("k"), ii, ji}).tensorize("mxm", {ii, ji});
    std::string msg = compile_error(Pipeline(C), {64, 64}, "tsp-mini");
    EXPECT_NE(msg.find("does not cover the reduction k"), std::string::npos) << msg;
}

TEST(ChipErrors, ExplicitPlacementForcingABankConflictOnTspMini) {
    // The drained product and the epilogue's result both pinned to MEM bank 3: the VXM would read
    // and write one single-ported bank in the same cycles, a compile error on a static chip.
    Input A(Int(8), {64, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    Func R = ops::relu(ops::Tensor(C, {64, 64}));
    C.store_in(MemoryKind::MEM, 3);
    R.store_in(MemoryKind::MEM, 3);
    std::string msg = compile_error(Pipeline(R), {64, 64}, "tsp-mini");
    EXPECT_NE(msg.find("bank conflict is a compile error"), std::string::npos) << msg;
    // Different banks are fine, and the values are right.
    R.store_in(MemoryKind::MEM, 4);
    Buffer<> a(Int(8), {64, 64}), b(Int(8), {64, 64});
    a.fill_random(1);
    b.fill_random(2);
    test::expect_matches_reference(Pipeline(R), {64, 64}, {{A, a}, {B, b}}, "tsp-mini", Int(8));
}

TEST(ChipErrors, BankChoiceOnAnInterleavedMemory) {
    Input A(Int(8), {64, 64}, "A"), B(Int(8), {64, 64}, "B");
    Func C = ops::matmul(A, B);
    C.store_in(MemoryKind::ACC, 2);
    std::string msg = compile_error(Pipeline(C), {64, 64}, "npu-edge");
    EXPECT_NE(msg.find("interleaves rows"), std::string::npos) << msg;
}

TEST(ChipErrors, EpilogueWithoutAVxmForm) {
    Input A(BFloat(16), {32, 32}, "A"), B(BFloat(16), {32, 32}, "B");
    Func G = ops::gelu(ops::matmul(A, B)); // exact GELU needs erf
    std::string msg = compile_error(Pipeline(G), {32, 32}, "tsp-mini");
    EXPECT_NE(msg.find("erf has no VXM instruction"), std::string::npos) << msg;
}

TEST(ChipErrors, TheDefaultVectorRuleOnAFusedLoopNamesTheChipBackend) {
    // A producer whose loops are fused and then unrolled has no loop of the name the chip's
    // default vector rule vectorizes; the schedule error it meets must still come out as the
    // chip backend's, naming the rule, not as a bare schedule error about a loop the user never
    // wrote.
    Input A(Int(32), {6, 16}, "A");
    Var i("i"), j("j"), v("v");
    Func sum("sum"), out("out");
    sum(i, j) = A(i, j) + A(i, min(j + 1, 15)); // a stencil: the loop nest compiles it
    out(i, j) = max(sum(i, j), 0);
    sum.compute_at(out, i).reorder(j, i).fuse(j, i, v).unroll(v, 3, TailStrategy::GuardWithIf);
    out.unroll(i, 3).vectorize(j, 4, TailStrategy::ShiftInwards);
    for (const char *chip : {"tsp-mini", "npu-edge"}) {
        const std::string msg = compile_error(Pipeline(out), {6, 16}, chip);
        EXPECT_EQ(msg.rfind("chip backend", 0), 0u) << chip << ": " << msg;
        EXPECT_NE(msg.find("default vector rule"), std::string::npos) << chip << ": " << msg;
    }
}

TEST(ChipErrors, NotAChipTarget) {
    Input A(Int(8), {32, 32}, "A"), B(Int(8), {32, 32}, "B");
    Func C = ops::matmul(A, B);
    std::string msg;
    try {
        compile_for_chip(Pipeline(C), Target::host(), {{32, 32}});
    } catch (const Error &e) {
        msg = e.what();
    }
    EXPECT_NE(msg.find("not a chip"), std::string::npos) << msg;
    try {
        compile_for_chip(Pipeline(C), Target::named("no-such-chip"), {{32, 32}});
        ADD_FAILURE() << "an unknown chip compiled";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("tsp-mini"), std::string::npos) << e.what();
    }
}

} // namespace
} // namespace tessera
