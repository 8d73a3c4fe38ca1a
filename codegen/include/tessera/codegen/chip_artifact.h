#pragma once
// A chip artifact: a compiled chip kernel as one file that a program without Tessera's compiler
// loads and runs on chipsim (libtessera_chiprt, tessera/chiprt.h). It holds chipsim's binary
// program and a manifest (JSON): the target's name, the hash and text of its description, the
// kernel's arguments in call order (names, dtypes, shapes, layouts), how each maps onto the
// program's tensors, the schedule, the compiler version and the tuning record used.
//
// File layout (little-endian): magic "TSCHIPA\1" (8 bytes), version u32, manifest length u64,
// program length u64, FNV-1a 64 (offset basis 14695981039346656037) of manifest + program u64, the manifest (UTF-8 JSON), the
// program (chipsim's binary format, binary_format.h).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/chip_backend.h"
#include "tessera/func.h"
#include "tessera/target.h"
#include "tessera/type.h"

namespace tessera {

/// Version written by encode_chip_artifact and the only one decode_chip_artifact accepts.
constexpr uint32_t kChipArtifactVersion = 1;

/// One buffer argument of an artifact's kernel, in the host library's call order (inputs, then
/// outputs). Buffers are dense row-major.
struct ChipArtifactArgument {
    std::string name;
    bool is_output = false;
    Type type;
    std::vector<int64_t> shape;
};

/// A compiled chip kernel with what a runtime needs to call it from C.
struct ChipArtifact {
    std::string name;             ///< The kernel's C name.
    std::string compiler_version; ///< Tessera's version that compiled it.
    std::string target_hash;      ///< FNV-1a 64 (16 hex digits) of program.target.to_json(): TargetIdentity::hash.
    std::string schedule_json;    ///< The schedule compiled (Schedule::to_json), "" when unknown.
    std::string schedule_source;  ///< "the pipeline's schedule" or the tuning record that replaced it.
    int64_t tuning_record_id = -1;///< The record's ID when one was used, else -1.
    std::vector<ChipArtifactArgument> arguments;
    ChipProgram program;
};

/// Compiles `pipeline` for the chip `target` with outputs of `output_shapes` into an artifact
/// named `name`. With a tuning database (tuned_schedule.h) its best record for the workload
/// replaces the pipeline's schedule for this compile. Throws tessera::Error when the pipeline
/// cannot run on the chip, has scalar Params, or `target` is not a chip.
ChipArtifact compile_chip_artifact(const Pipeline &pipeline, const std::string &name, const Target &target,
                                   const std::vector<std::vector<int64_t>> &output_shapes);

/// An artifact of a program compiled already (a model's linked program, link_chip_model): its
/// arguments are the `inputs` its tensor maps read, in this order, then the program's outputs;
/// `schedule_json` is what it was compiled from ("" when not one schedule), and
/// `schedule_source` the tuning record that chose it (ChosenSchedule's description: "tuned
/// record #12 (...)"; "" for the pipeline's own), which gives tuning_record_id. Throws
/// tessera::Error when a map reads a source not among `inputs`, an input's shape is not
/// constant, or the program's outputs lack their types.
ChipArtifact chip_artifact_of_program(const ChipProgram &program, const std::string &name, const std::vector<Input> &inputs,
                                      const std::string &schedule_json = "", const std::string &schedule_source = "");

/// The manifest JSON of an artifact (what encode_chip_artifact stores).
std::string chip_artifact_manifest(const ChipArtifact &artifact);
/// The artifact file's bytes.
std::vector<uint8_t> encode_chip_artifact(const ChipArtifact &artifact);
/// Parses and checks an artifact file: header, checksum, manifest fields, program, and that
/// every argument and tensor map agrees with the program and the target description (whose
/// hash must match). Throws tessera::Error naming `origin` and the problem.
ChipArtifact decode_chip_artifact(const uint8_t *data, size_t size, const std::string &origin = "<chip artifact>");

/// Writes <dir>/<name>.tchip (the artifact) and <dir>/<name>.manifest.json; returns the
/// artifact's path. Throws tessera::Error naming the file on I/O failure.
std::string write_chip_artifact(const ChipArtifact &artifact, const std::string &dir);

} // namespace tessera
