// Sweep specs (sweep.h): a spec may be refused only with a tessera::Error; what parses has
// points whose op words rebuild the same op (the words are what records and replay keep), whose
// keys are 16 hex digits, and which name one of the spec's targets.
#include <set>

#include "fuzz_util.h"
#include "tessera/ops/registry.h"
#include "tessera/sweep.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    SweepSpec spec;
    if (!fuzz::accepted([&] { spec = SweepSpec::parse(text, "fuzz.json"); })) return 0;
    fuzz::require(!spec.points.empty(), "a spec parsed with no points");
    for (size_t i = 0; i < spec.points.size() && i < 64; ++i) {
        const SweepPoint &p = spec.points[i];
        fuzz::require(p.key.size() == 16 && p.key.find_first_not_of("0123456789abcdef") == std::string::npos,
                      "point " + std::to_string(i) + " has the key '" + p.key + "'");
        std::string again;
        fuzz::require(fuzz::accepted([&] { again = ops::build_op(p.op, p.params).description(); }),
                      "point " + std::to_string(i) + " (" + p.words + ") does not build again");
        fuzz::require(again == p.words, "point " + std::to_string(i) + " rebuilt as '" + again + "', not '" + p.words + "'");
    }
    return 0;
}
