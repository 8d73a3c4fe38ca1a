// Chip artifacts (chip_artifact.h), the files libtessera_chiprt loads: what decodes must encode
// and decode to the same kernel, and the C loader must answer the same bytes with a code, never
// a crash. Seeds: small artifacts of both chips.
#include "fuzz_util.h"
#include "tessera/chiprt.h"
#include "tessera/codegen/chip_artifact.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ChipArtifact a;
    const bool ok = fuzz::accepted([&] { a = decode_chip_artifact(data, size, "fuzz"); });
    tessera_chip_kernel_t *k = nullptr;
    const int code = tessera_chip_load_memory(data, size, nullptr, &k);
    fuzz::require((code == TESSERA_OK) == ok, "the C loader and decode_chip_artifact disagree on an input");
    fuzz::require((code == TESSERA_OK) == (k != nullptr), "the C loader returned a kernel with a failure code, or none on success");
    tessera_chip_free(k);
    if (!ok) return 0;
    const std::vector<uint8_t> bytes = encode_chip_artifact(a);
    ChipArtifact back;
    fuzz::require(fuzz::accepted([&] { back = decode_chip_artifact(bytes.data(), bytes.size(), "re-encoded"); }),
                  "an accepted artifact, re-encoded, was refused");
    fuzz::require(back.program.program == a.program.program && back.target_hash == a.target_hash &&
                      back.arguments.size() == a.arguments.size() && encode_chip_artifact(back) == bytes,
                  "an artifact changed in an encode/decode round trip");
    return 0;
}
