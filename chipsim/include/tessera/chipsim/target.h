#pragma once
// Target descriptions: a chip is data (a JSON file), not a subclass. Every number the scheduler,
// code generator, autotuner and simulator need about a chip is read from a Target, and nowhere
// else. Built-in targets ("tsp-mini", "npu-edge") are embedded in the library at build time.
#include "tessera/chipsim/dtype.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// How a chip issues instructions: static (the program fixes every cycle) or dynamic (in-order
/// queues with semaphores).
enum class IssueKind { Static, Dynamic };
/// What a resource overlap means: a compile-time error, or a stall of the later instruction.
enum class ConflictPolicy { Error, Stall };

/// One on-chip memory (tsp-mini: MEM, ACC; npu-edge: SPAD, ACC).
struct MemoryDesc {
    std::string name;            ///< Name used in operands: "MEM", "SPAD", "ACC".
    int hemispheres = 1;         ///< 2 on tsp-mini's MEM (west "w", east "e"), else 1.
    int slices = 1;              ///< Slices per hemisphere.
    int banks = 1;               ///< Banks per slice.
    int64_t rows_per_bank = 0;   ///< Rows (words) per bank.
    int row_bytes = 0;           ///< Bytes per row.
    bool dual_ported = false;    ///< One read + one write port per bank; else one shared port.
    int slice_read_ports = 0;    ///< Reads per slice per cycle across its banks; 0 = no limit.
    int slice_write_ports = 0;   ///< Writes per slice per cycle; 0 = no limit.
    bool interleaved = false;    ///< Rows interleave across banks (bank = row mod banks).
    bool accumulator = false;    ///< Holds MXM accumulators (32-bit elements, accumulate on write).

    /// Banks in all: hemispheres * slices * banks.
    int total_banks() const { return hemispheres * slices * banks; }
    /// Rows in all.
    int64_t total_rows() const { return int64_t(total_banks()) * rows_per_bank; }
    /// Capacity in bytes.
    int64_t capacity_bytes() const { return total_rows() * row_bytes; }

    // The address map, one formula for the simulator (TimingModel::resolve), the bank ports and
    // every allocator of the code generator. Hemisphere 0 is the west one.
    /// Flat slice index: hemisphere * slices + slice.
    int flat_slice(int hemisphere, int slice) const { return hemisphere * slices + slice; }
    /// Flat bank index: flat_slice * banks + bank (ResolvedTile::banks, bank port resources).
    int flat_bank(int hemisphere, int slice, int bank) const { return flat_slice(hemisphere, slice) * banks + bank; }
    /// The letter naming a hemisphere in an operand: 'w'/'e' on two hemispheres, else 's'.
    char side_letter(int hemisphere) const { return hemispheres == 2 ? (hemisphere ? 'e' : 'w') : 's'; }
    /// Local rows each slice holds of `rows` rows interleaved over a hemisphere's slices (row i
    /// in slice i mod slices): the most any slice gets.
    int64_t rows_per_slice(int64_t rows) const { return (rows + slices - 1) / slices; }
};

/// The shape one MXM array takes for a class of input dtypes.
struct MxmShape {
    int k = 0;                ///< Weight rows = elements of an activation row consumed.
    int n = 0;                ///< Weight columns = accumulator elements produced per row.
    int cycles_per_row = 1;   ///< Cycles per activation row (2 = half rate).
};

/// The matrix unit(s).
struct MxmDesc {
    int count = 1;                 ///< Planes (tsp-mini) or arrays (npu-edge).
    MxmShape int8;                 ///< Shape for int8 inputs.
    MxmShape floating;             ///< Shape for bf16/fp16 inputs.
    std::vector<DType> dtypes;     ///< Input dtypes supported.
    int weight_buffers = 2;        ///< Weight buffers per plane (double buffering).
    int weight_rows_per_cycle = 1; ///< Weight rows installed per cycle (streams read at once).
    bool systolic = false;         ///< Fill/drain latency M + K + N - 1 instead of M + d_func.
    int64_t lw_latency = 0;        ///< d_func of mxm.lw.
    int64_t mm_latency = 0;        ///< d_func of mxm.mm (pipelined planes only).
    int64_t drain_latency = 0;     ///< d_func of mxm.drain.
    int drain_rows_per_cycle = 4;  ///< Output rows a drain writes per cycle (streams at once).
};

/// The vector unit.
struct VxmDesc {
    int alus = 1;                           ///< ALU slots usable at once.
    int bytes_per_cycle = 64;               ///< Bytes one ALU consumes per cycle.
    std::map<std::string, int64_t> latency; ///< d_func per op ("add", "exp", "reduce", ...).
};

/// The layout (switch) unit(s).
struct SxmDesc {
    int count = 1;                          ///< Units; tsp-mini has one per hemisphere.
    int transpose_elements = 16;            ///< Documented block edge (informational).
    std::map<std::string, int64_t> latency; ///< d_func per op: transpose, permute, shift.
};

/// Off-chip memory (npu-edge). Absent (bytes == 0) on tsp-mini.
struct DramDesc {
    int64_t bytes = 0;          ///< Capacity.
    int bytes_per_cycle = 0;    ///< Bandwidth shared by all DMA engines.
    int64_t latency = 0;        ///< Cycles from request to first byte.
    int burst_bytes = 64;       ///< Transfer granule: bandwidth is shared burst by burst.
};

/// DMA engines.
struct DmaDesc {
    int engines = 1;            ///< Engines (npu-edge: load, store).
    int64_t setup_cycles = 0;   ///< Fixed cost per transfer.
    int max_dims = 4;           ///< Strided dimensions of an off-chip view.
};

/// The host link: how inputs arrive and outputs leave.
struct HostLinkDesc {
    int bytes_per_cycle = 32;
    int64_t latency = 400;
};

/// A chip.
struct Target {
    std::string name;                 ///< "tsp-mini".
    std::string kind;                 ///< "streaming" or "dram_npu".
    std::string description;
    std::string source;               ///< Where it came from: "builtin" or the file path.
    double clock_ghz = 1.0;
    int vector_bytes = 64;            ///< VL: bytes in a vector (a MEM/SPAD row).
    IssueKind issue = IssueKind::Static;
    ConflictPolicy conflict_policy = ConflictPolicy::Error;
    std::vector<MemoryDesc> memories;
    std::vector<std::string> positions; ///< Slice row for stream distance δ (streaming chips).
    int streams_eastward = 0, streams_westward = 0;
    MxmDesc mxm;
    VxmDesc vxm;
    SxmDesc sxm;
    DramDesc dram;
    DmaDesc dma;
    HostLinkDesc host_link;
    std::vector<std::string> queues; ///< Dynamic issue queues ("load", "exec", "store", "vector").
    int semaphores = 0;

    /// The memory named `name`, or nullptr.
    const MemoryDesc *memory(const std::string &name) const;
    /// Elements of `dtype` in one vector (one MEM/SPAD row): the lanes a vector kernel has.
    int lanes(DType dtype) const { return vector_bytes / dtype_bytes(dtype); }
    /// The MXM shape for an input dtype; throws TargetError when the MXM lacks that dtype.
    const MxmShape &mxm_shape(DType input) const;
    /// True when the MXM accepts `input`.
    bool mxm_supports(DType input) const;
    /// Peak MACs per cycle over all MXMs for an input dtype (0 when unsupported).
    double peak_macs_per_cycle(DType input) const;
    /// Position index of a named slot in the slice row, or -1.
    int position_of(const std::string &slot) const;
    /// Serialises back to the JSON schema (round-trips through load_target_json).
    std::string to_json() const;
};

/// Parses and validates a target from JSON text; `origin` names the file in error messages.
Target load_target_json(const std::string &json_text, const std::string &origin);
/// A built-in target by name, or a target file when `name_or_path` ends in ".json" or contains
/// a '/'. Throws TargetError naming the choices when it is neither.
Target load_target(const std::string &name_or_path);
/// Names of the built-in targets, sorted.
std::vector<std::string> builtin_target_names();

} // namespace tessera::chipsim
