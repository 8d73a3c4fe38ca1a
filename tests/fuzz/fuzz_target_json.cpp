// Target JSON: what loads must print (to_json) and load back to the same description.
#include "fuzz_util.h"
#include "tessera/chipsim/target.h"

using namespace tessera;
using namespace tessera::chipsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    Target t;
    if (!fuzz::accepted([&] { t = load_target_json(text, "fuzz.json"); })) return 0;
    const std::string printed = t.to_json();
    Target again;
    fuzz::require(fuzz::accepted([&] { again = load_target_json(printed, "printed.json"); }),
                  "a loaded target's JSON does not load:\n" + printed);
    fuzz::require(again.to_json() == printed, "target -> JSON -> target changed it:\n" + printed);
    return 0;
}
