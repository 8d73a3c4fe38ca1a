// Chip artifacts (chip_artifact.h), the files libtessera_chiprt loads: what decodes must encode
// and decode to the same kernel, and the C loader must answer the same bytes with a code, never
// a crash; a small kernel that loads also runs once on zero buffers shaped from its manifest,
// which must end in success or a code. Seeds: small artifacts of both chips.
#include <cstring>

#include "fuzz_util.h"
#include "tessera/chiprt.h"
#include "tessera/codegen/chip_artifact.h"

using namespace tessera;

namespace {
/// The input with its checksum made valid when the checksum's first byte is even (the header
/// is 36 bytes; the checksum is at 28): mutations then reach the manifest and program readers
/// instead of all stopping at the checksum. Odd bytes test the checksum itself.
std::vector<uint8_t> with_checksum(const uint8_t *data, size_t size) {
    std::vector<uint8_t> out(data, data + size);
    if (size < 36 || data[28] % 2 == 1) return out;
    uint64_t h = 14695981039346656037ull; // FNV-1a 64, as chip_artifact.h specifies
    for (size_t i = 36; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) out[28 + size_t(i)] = uint8_t(h >> (8 * i));
    return out;
}

/// Runs a loaded kernel once on zero-filled buffers of its manifest's arguments' shapes and
/// dtypes, when the kernel is small (arguments of at most 2^16 elements in all, at most 4096
/// instructions): success or an error code with a message, never a crash.
void run_on_zeros(tessera_chip_kernel_t *k, const ChipArtifact &a) {
    int64_t elements = 0;
    for (const ChipArtifactArgument &arg : a.arguments) {
        int64_t n = 1;
        for (int64_t e : arg.shape) n *= e;
        elements += n;
        if (elements > (int64_t(1) << 16)) return;
    }
    if (a.program.program.instructions.size() > 4096) return;
    std::vector<std::vector<uint8_t>> data;
    std::vector<tessera_buffer_t> buffers(a.arguments.size());
    std::vector<const tessera_buffer_t *> inputs;
    std::vector<tessera_buffer_t *> outputs;
    for (size_t i = 0; i < a.arguments.size(); ++i) {
        const ChipArtifactArgument &arg = a.arguments[i];
        int64_t n = 1;
        for (int64_t e : arg.shape) n *= e;
        data.emplace_back(size_t(n) * size_t((arg.type.bits() + 7) / 8) + 1, 0);
        tessera_buffer_t &b = buffers[i];
        std::memset(&b, 0, sizeof b);
        b.data = data.back().data();
        b.shape = arg.shape.data();
        b.dimensions = int32_t(arg.shape.size());
        b.type_code = uint8_t(arg.type.code());
        b.type_bits = uint8_t(arg.type.bits());
        if (arg.is_output) outputs.push_back(&b);
        else inputs.push_back(&b);
    }
    tessera_chip_report_t report;
    const int code = tessera_chip_run(k, inputs.data(), outputs.data(), &report);
    fuzz::require(code == TESSERA_OK || std::strlen(tessera_chip_last_error()) > 0, "a failed run left no message");
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *raw, size_t raw_size) {
    const std::vector<uint8_t> input = with_checksum(raw, raw_size);
    const uint8_t *data = input.data();
    const size_t size = input.size();
    ChipArtifact a;
    const bool ok = fuzz::accepted([&] { a = decode_chip_artifact(data, size, "fuzz"); });
    tessera_chip_kernel_t *k = nullptr;
    const int code = tessera_chip_load_memory(data, size, nullptr, &k);
    fuzz::require((code == TESSERA_OK) == ok, "the C loader and decode_chip_artifact disagree on an input");
    fuzz::require((code == TESSERA_OK) == (k != nullptr), "the C loader returned a kernel with a failure code, or none on success");
    if (!ok) return 0;
    run_on_zeros(k, a);
    tessera_chip_free(k);
    const std::vector<uint8_t> bytes = encode_chip_artifact(a);
    ChipArtifact back;
    fuzz::require(fuzz::accepted([&] { back = decode_chip_artifact(bytes.data(), bytes.size(), "re-encoded"); }),
                  "an accepted artifact, re-encoded, was refused");
    fuzz::require(back.program.program == a.program.program && back.target_hash == a.target_hash &&
                      back.arguments.size() == a.arguments.size() && encode_chip_artifact(back) == bytes,
                  "an artifact changed in an encode/decode round trip");
    return 0;
}
