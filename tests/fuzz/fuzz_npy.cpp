// .npy: what parses must serialise and parse back to the same array.
#include "fuzz_util.h"
#include "tessera/npy.h"

using namespace tessera;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::vector<uint8_t> bytes(data, data + size);
    NpyArray a;
    if (!fuzz::accepted([&] { a = parse_npy(bytes, "fuzz.npy"); })) return 0;
    NpyArray again;
    fuzz::require(fuzz::accepted([&] { again = parse_npy(serialize_npy(a), "saved.npy"); }), "a parsed array does not save and load");
    fuzz::require(again.descr == a.descr && again.shape == a.shape && again.data == a.data, "npy save -> load changed the array");
    return 0;
}
