// Schedule JSON applied to a small pipeline (a 16 x 12 x 8 matmul whose result feeds a ReLU):
// what parses must print and parse back to the same Schedule; applying it and lowering may
// refuse it only with a tessera::Error, and what lowers must run on the loop-IR interpreter and
// match the reference (a schedule never changes results; integers compare exactly). Factors above
// 64 are only parsed and printed: the lowering trims a guarded split's no-op iterations (a test
// covers factors up to 2^30), but a round_up split computes all it is asked to.
#include <cstring>

#include "fuzz_util.h"
#include "tessera/lower.h"
#include "tessera/ops.h"
#include "tessera/reference.h"
#include "tessera/schedule.h"

using namespace tessera;

namespace {
constexpr int64_t kLargestUsefulFactor = 64;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    Schedule s;
    if (!fuzz::accepted([&] { s = Schedule::from_json(text, "fuzz.json"); })) return 0;
    Schedule again;
    fuzz::require(fuzz::accepted([&] { again = Schedule::from_json(s.to_json(), "printed.json"); }),
                  "a parsed schedule's JSON does not parse:\n" + s.to_json());
    fuzz::require(again == s, "schedule -> JSON -> schedule changed it:\n" + s.to_json());

    // A factor far beyond every extent of this pipeline (16 at most) finds nothing new and may
    // only cost time: round_up computes (and allocates) the whole rounded-up range it asks for.
    for (const auto &[func, fs] : s.funcs)
        for (const auto &[stage, directives] : fs.stages)
            for (const Directive &d : directives) {
                for (int64_t factor : d.factors)
                    if (factor > kLargestUsefulFactor) return 0;
                for (const LayoutBlock &block : d.layout.blocks)
                    if (block.factor > kLargestUsefulFactor) return 0;
            }

    static Input A(Int(32), {16, 8}, "A"), B(Int(32), {8, 12}, "B");
    static Buffer<> a = [] { Buffer<> b(Int(32), {16, 8}); b.fill_random(1); return b; }();
    static Buffer<> b = [] { Buffer<> x(Int(32), {8, 12}); x.fill_random(2); return x; }();
    Pipeline p(ops::relu(ops::matmul(A, B)).func());
    const std::vector<std::vector<int64_t>> shapes = {{16, 12}};
    const Bindings inputs = {{A, a}, {B, b}};
    static const std::vector<Buffer<>> expected = evaluate_reference(p, shapes, inputs);
    std::vector<Buffer<>> got;
    if (!fuzz::accepted([&] {
            p.set_schedule(s);
            got = p.realize(shapes, inputs, Target::interpreter());
        }))
        return 0;
    const size_t n = size_t(expected[0].number_of_elements()) * size_t(expected[0].type().bytes());
    fuzz::require(got.size() == 1 && got[0].is_dense() && got[0].shape() == expected[0].shape() &&
                      std::memcmp(got[0].data(), expected[0].data(), n) == 0,
                  "a legal schedule changed the result:\n" + s.to_json());
    return 0;
}
