// Assembly text: what assembles must survive text -> program -> text -> program and
// program -> binary -> program unchanged.
#include "fuzz_util.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/binary_format.h"

using namespace tessera;
using namespace tessera::chipsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    Program p;
    if (!fuzz::accepted([&] { p = assemble(text, "fuzz.tasm"); })) return 0;
    const std::string canonical = disassemble(p);
    Program again;
    fuzz::require(fuzz::accepted([&] { again = assemble(canonical, "canonical.tasm"); }),
                  "the disassembly does not assemble:\n" + canonical);
    fuzz::require(again == p, "text -> program -> text -> program changed the program:\n" + canonical);
    fuzz::require(disassemble(again) == canonical, "the canonical text is not a fixed point:\n" + canonical);
    Program decoded;
    fuzz::require(fuzz::accepted([&] { decoded = decode_program(encode_program(p)); }), "its binary form does not decode");
    fuzz::require(decoded == p, "program -> binary -> program changed the program:\n" + canonical);
    return 0;
}
