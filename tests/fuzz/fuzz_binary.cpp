// Binary programs: what decodes must encode and decode to itself; its text, when the text can
// spell its names, must assemble to the same program (a refusal there is a failure too: the
// binary reader must accept only programs that have an assembly form).
#include <algorithm>
#include <cctype>
#include <set>

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
bool ident(const std::string &s, bool leading_underscore) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || (leading_underscore && s[0] == '_'))) return false;
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

/// A word the text reads up to the next blank (a target, a file path): no blank, no control
/// character, no '#' (which may start a comment).
bool word(const std::string &s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return std::isgraph(static_cast<unsigned char>(c)) && c != '#'; });
}

/// Names are free strings in the binary form and identifiers in the text; a program whose
/// names the text can spell must assemble from its own disassembly (the binary reader checks
/// every other field against the text's grammar).
bool names_spellable(const Program &p) {
    if (!word(p.target)) return false;
    std::set<std::string> names;
    for (const TensorDecl &t : p.tensors)
        if (!ident(t.name, true) || t.name == "DRAM" || !names.insert(t.name).second || !word(t.file)) return false;
    for (const Instruction &in : p.instructions) {
        if ((in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) && !ident(in.view.tensor, true)) return false;
        for (const TileRef &t : in.tiles)
            if (!ident(t.memory, false)) return false;
    }
    return true;
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
    if (!names_spellable(p)) return 0;
    Program from_text;
    std::string why;
    const bool assembled = fuzz::accepted([&] {
        try {
            from_text = assemble(text, "from_binary.tasm");
        } catch (const Error &e) {
            why = e.what();
            throw;
        }
    });
    fuzz::require(assembled, "the text of a decoded program does not assemble (" + why + "):\n" + text);
    fuzz::require(from_text == p, "the text of a decoded program assembles to another program:\n" + text);
    return 0;
}
