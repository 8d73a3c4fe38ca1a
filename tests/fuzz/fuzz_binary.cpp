// Binary programs: what decodes must encode and decode to itself; its text, when the text can
// spell its names, must assemble to the same program.
#include "fuzz_util.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/binary_format.h"

using namespace tessera;
using namespace tessera::chipsim;

namespace {
/// The input with its header made valid when its first byte is even: mutations then reach the
/// field reader instead of all stopping at the checksum. Odd first bytes test the header itself.
std::vector<uint8_t> framed(const uint8_t *data, size_t size) {
    if (size == 0 || data[0] % 2 == 1) return std::vector<uint8_t>(data, data + size);
    std::vector<uint8_t> out = {'T', 'S', 'P', 'R', 'G', 0, 0, 1, uint8_t(kBinaryFormatVersion), 0, 0, 0};
    const size_t n = size - 1;
    uint64_t fnv = 1469598103934665603ull; // FNV-1a 64, as binary_format.h specifies
    for (size_t i = 1; i < size; ++i) fnv = (fnv ^ data[i]) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(n) >> (8 * i)));
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(fnv >> (8 * i)));
    out.insert(out.end(), data + 1, data + size);
    return out;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::vector<uint8_t> bytes = framed(data, size);
    Program p;
    if (!fuzz::accepted([&] { p = decode_program(bytes, "fuzz.tprg"); })) return 0;
    Program again;
    fuzz::require(fuzz::accepted([&] { again = decode_program(encode_program(p)); }), "a decoded program does not re-decode");
    fuzz::require(again == p, "binary -> program -> binary -> program changed the program");
    std::string text;
    fuzz::require(fuzz::accepted([&] { text = disassemble(p); }), "a decoded program does not disassemble");
    // Names are free strings in the binary form; where the text can spell them, it must agree.
    Program from_text;
    if (fuzz::accepted([&] { from_text = assemble(text, "from_binary.tasm"); }))
        fuzz::require(from_text == p, "the text of a decoded program assembles to another program:\n" + text);
    return 0;
}
