#pragma once
// The functional state of a chip: real bytes in every memory, the MXM weight buffers, DRAM and
// the host tensors, with a written-bit per row so that reading never-written memory is an error
// (poison) instead of a silent zero.
#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/simulator.h"
#include "tessera/chipsim/target.h"
#include "tessera/chipsim/timing_model.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace tessera::chipsim::internal {

/// One on-chip memory's bytes and per-row written bits.
struct MemoryImage {
    int row_bytes = 0;
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> written; ///< Per row: 1 once written.
    uint8_t *row(int64_t r) { return bytes.data() + r * row_bytes; }
    const uint8_t *row(int64_t r) const { return bytes.data() + r * row_bytes; }
};

/// One MXM weight buffer: k x n weights as fp32 (exact for int8/bf16/fp16).
struct WeightBuffer {
    std::vector<float> w;
    DType dtype = DType::Int8;
    bool loaded = false;
};

/// A host tensor (or its DRAM copy on DRAM chips).
struct TensorImage {
    TensorDecl decl;
    std::vector<uint8_t> bytes;
    std::vector<uint8_t> written; ///< Per byte, outputs only (inputs are written in full).
};

/// Raw DRAM, allocated in 4 KiB pages on first touch with a written bit per 64-byte burst.
class DramImage {
public:
    explicit DramImage(int64_t capacity) : capacity_(capacity) {}
    int64_t capacity() const { return capacity_; }
    /// Copies bytes out; returns false if any byte was never written.
    bool read(int64_t address, uint8_t *out, int64_t n) const;
    void write(int64_t address, const uint8_t *in, int64_t n);

private:
    struct Page {
        std::vector<uint8_t> bytes = std::vector<uint8_t>(4096, 0);
        uint64_t written = 0; ///< One bit per 64 bytes.
    };
    int64_t capacity_;
    std::unordered_map<int64_t, Page> pages_;
};

/// Everything the functional simulator reads and writes.
struct MachineState {
    MachineState(const Target &target, const Program &program, const std::map<std::string, TensorData> &inputs);
    const Target &target;
    std::vector<MemoryImage> memories;              ///< Target::memories order.
    std::vector<std::vector<WeightBuffer>> weights; ///< [mxm][buffer].
    std::map<std::string, TensorImage> tensors;
    DramImage dram;
};

/// Executes one instruction's effect on the state. Throws SimError (without the instruction
/// prefix) on poison reads or out-of-range views.
void execute(const Instruction &in, const ResourceUse &use, MachineState &state);

} // namespace tessera::chipsim::internal
