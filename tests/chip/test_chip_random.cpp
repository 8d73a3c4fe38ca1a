// Random schedules the chip backend accepts (tile sizes, split of k, tensorize, an explicit
// accumulator plane, double buffering) on random shapes and dtypes, on both chips: every one
// must equal the reference evaluator.
#include "chip_test_util.h"

#include <random>

#include <tessera/ir_operator.h>

namespace tessera {
namespace {

TEST(ChipRandomSchedules, MatmulsEqualTheReference) {
    std::mt19937_64 rng(2026);
    auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    for (int trial = 0; trial < 16; ++trial) {
        const std::string chip = trial % 2 ? "npu-edge" : "tsp-mini";
        const bool int8 = pick(0, 2) != 0;
        const Type type = int8 ? Int(8) : BFloat(16);
        const int64_t unit_n = chip == "tsp-mini" ? (int8 ? 64 : 32) : 32, unit_k = unit_n;
        const int64_t m = pick(1, 150), n = pick(1, 140), k = pick(1, 130);
        Input A(type, {int(m), int(k)}, "A"), B(type, {int(k), int(n)}, "B");
        Func C = ops::matmul(A, B);
        Var i("i"), j("j"), io("io"), jo("jo"), ii("ii"), ji("ji"), ko("ko"), ki("ki");
        const int tm = int(pick(1, 8) * 16), tn = int(unit_n * pick(1, 2));
        std::string what = chip + " " + type.to_string() + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                           std::to_string(k) + " tile " + std::to_string(tm) + "x" + std::to_string(tn);
        Stage s = C.update();
        s.split(VarOrRVar("k"), ko, ki, int(unit_k)).tile(i, j, io, jo, ii, ji, tm, tn);
        if (pick(0, 1)) {
            s.reorder({io, jo, ko, ii, ji, ki}).tensorize("mxm", {ii, ji, ki});
            what += " tensorized";
        }
        if (chip == "tsp-mini" && pick(0, 1)) {
            const int plane = int(pick(0, 3));
            C.store_in(MemoryKind::ACC, plane);
            what += " plane " + std::to_string(plane);
        }
        if (pick(0, 1)) C.double_buffer();
        Buffer<> a(type, {m, k}), b(type, {k, n});
        a.fill_random(uint64_t(100 + trial));
        b.fill_random(uint64_t(200 + trial));
        SCOPED_TRACE(what);
        test::expect_matches_reference(Pipeline(C), {m, n}, {{A, a}, {B, b}}, chip, type, k);
    }
}

} // namespace
} // namespace tessera
