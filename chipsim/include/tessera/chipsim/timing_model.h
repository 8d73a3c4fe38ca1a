#pragma once
// The timing model: THE single place for latencies, bank/port/stream rules and the address map
// (which bank holds a row). The simulator, the chip code generator's list scheduler and the
// autotuner's cost model all ask it "what does this instruction hold, for how long, when can it
// start, when does it end". No latency or bank rule exists anywhere else.
//
// Model (CHIP.md "Timing"): an instruction starting at cycle s holds each resource it uses over
// [s + offset, s + offset + duration). A tile access occupies each bank it touches for
// (rows on that bank) / (that bank's ports) cycles and, on sliced memories, each slice port for
// (rows on that slice) / (slice ports). Units are held for the instruction's issue cycles (the
// cycles the unit needs to accept every row). Shared bandwidth (DRAM bus, host link) is served in
// bursts that fill free gaps, so two DMA engines share it. Latency on streaming chips is
// T = issue + d_func + δ, δ the distance in slice-row positions from source to unit to
// destination; the systolic MXM takes rows + K + N - 1.
#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/reservation_table.h"
#include "tessera/chipsim/target.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::chipsim {

/// What a resource is, for reports and the trace.
enum class ResourceKind : uint8_t { Unit, BankPort, SlicePort, Stream, DmaEngine, Bandwidth };

/// One resource of a target.
struct ResourceInfo {
    std::string name;      ///< "MXM0", "MEM.e3.b1", "ACC.b0.w", "stream.east", "DRAM", ...
    ResourceKind kind = ResourceKind::Unit;
    int lanes = 1;         ///< Holders at once (streams per direction, VXM ALU slots).
    int memory = -1;       ///< Bank/slice ports: index in Target::memories.
    int bank = -1;         ///< Bank ports: flat bank index in that memory.
};

/// One hold of an instruction on a resource.
struct ResourceHold {
    int resource = 0;       ///< Index in TimingModel::resource_table().
    int64_t offset = 0;     ///< Cycles after the instruction's start.
    int64_t duration = 0;   ///< Cycles held (for bandwidth: cycles of full bandwidth needed).
    int lanes = 1;          ///< Lanes taken at once (a weight install takes 4 streams).
    bool bandwidth = false; ///< Shared bandwidth: served in gap-filling bursts, may end later.
    bool until_end = false; ///< Held until the instruction's actual end (DMA engines).
    int64_t granule = 1;    ///< Bandwidth: burst length in cycles.
};

/// The rows of an on-chip tile, resolved through the target's address map.
struct ResolvedTile {
    int memory = -1;                ///< Index in Target::memories.
    std::vector<int64_t> rows;      ///< Flat row index in the memory per tile row.
    std::vector<int32_t> banks;     ///< Flat bank index per tile row.
    std::vector<int32_t> slices;    ///< Flat slice index (hemisphere * slices + slice) per row.
    std::vector<std::string> slots; ///< Slice-row positions the rows sit at ("MEM.e3", "MXM0").
};

/// When an instruction touches the rows of one tile operand: row i at
/// start + offset + (i * span) / rows.
struct AccessTiming {
    int tile = 0;           ///< Index in Instruction::tiles.
    bool write = false;
    int64_t offset = 0;
    int64_t span = 0;
    bool at_end = false;    ///< Every row completes at the instruction's actual end (DMA loads).
};

/// Everything the timing model says about one instruction, independent of when it runs.
struct ResourceUse {
    std::vector<ResourceHold> holds;
    std::vector<ResolvedTile> tiles;    ///< Instruction::tiles resolved, same order.
    std::vector<AccessTiming> accesses; ///< Per-row access times of each tile operand.
    int64_t issue_cycles = 0;           ///< Cycles the main unit accepts rows.
    int64_t latency = 0;                ///< Start to end when no bandwidth burst is delayed.
    int64_t bandwidth_offset = 0;       ///< Where the bandwidth hold starts (end = pieces end + tail).
    int64_t bandwidth_tail = 0;         ///< Cycles from the last burst to the end (DRAM latency).
    int64_t macs = 0;                   ///< Multiply-accumulates (MXM instructions).
    DType mac_dtype = DType::Int8;
    int unit = -1;                      ///< Main unit resource (for reports), -1 for none.
    int internal_bank_conflicts = 0;    ///< Banks whose rows take longer than the unit: a conflict inside the instruction.
    std::map<std::string, int64_t> bytes; ///< Bytes moved per memory level ("MEM", "DRAM", "HOST", ...).
};

/// Where an instruction went: its interval and the bandwidth bursts it was served in.
struct Placement {
    int64_t start = 0, end = 0;
    std::vector<Interval> bursts;
};

/// A resource an instruction could not get at its cycle, and who held it.
struct Conflict {
    int resource = 0;
    Interval held;      ///< The blocking interval (held.owner = that instruction's index).
    int64_t at = 0;     ///< Cycle the instruction wanted it.
};

/// Analytic bound on a kernel's cycles.
struct Roofline {
    double compute_cycles = 0;                 ///< MACs / peak MACs per cycle.
    std::map<std::string, double> memory_cycles; ///< Bytes / bytes-per-cycle, per level.
    double bound_cycles = 0;                   ///< The max of the above.
    std::string limiter;                       ///< "compute" or the limiting level.
};

/// The timing model of one target.
class TimingModel {
public:
    explicit TimingModel(Target target);

    const Target &target() const { return target_; }
    /// All resources; ReservationTable lanes come from here (see make_table()).
    const std::vector<ResourceInfo> &resource_table() const { return resources_; }
    /// Index of a resource by name, or -1.
    int resource_index(const std::string &name) const;
    /// An empty reservation table shaped for this target.
    ReservationTable make_table() const;

    /// Resolves a tile through the address map; throws SimError naming the field out of range.
    ResolvedTile resolve(const TileRef &tile) const;
    /// Everything the instruction holds and how long it takes. Throws SimError (without the
    /// instruction index; the simulator adds it) when the instruction does not fit the target.
    ResourceUse resources(const Instruction &in) const;
    /// Start-to-end cycles when nothing is delayed.
    int64_t latency(const Instruction &in) const { return resources(in).latency; }
    /// Earliest cycle >= not_before at which every (non-bandwidth) hold is free.
    int64_t earliest_start(const ResourceUse &use, const ReservationTable &table, int64_t not_before) const;
    int64_t earliest_start(const Instruction &in, const ReservationTable &table, int64_t not_before) const {
        return earliest_start(resources(in), table, not_before);
    }
    /// The first hold that is not free if the instruction started at `start` (bandwidth holds
    /// count as blocked when they could not be served without a gap), or nullopt.
    std::optional<Conflict> conflict_at(const ResourceUse &use, const ReservationTable &table, int64_t start) const;
    /// Records the holds at `start` for instruction `owner`; returns start, end and bursts.
    Placement reserve(const ResourceUse &use, ReservationTable &table, int64_t start, int32_t owner) const;
    Placement reserve(const Instruction &in, ReservationTable &table, int64_t start, int32_t owner) const {
        return reserve(resources(in), table, start, owner);
    }

    /// δ: positions between two slots of the slice row (0 on chips without one).
    int64_t stream_distance(const std::string &from, const std::string &to) const;
    /// Peak MACs per cycle for an MXM input dtype.
    double peak_macs_per_cycle(DType input) const { return target_.peak_macs_per_cycle(input); }
    /// Peak bytes per cycle of a level: a memory name, "DRAM", "HOST" or "STREAMS".
    double bytes_per_cycle(const std::string &level) const;
    /// The roofline bound for `macs` of `input` and the bytes moved per level.
    Roofline roofline(int64_t macs, DType input, const std::map<std::string, int64_t> &bytes_per_level) const;
    /// Output rows a drain writes per accumulator row for an output dtype.
    int drain_rows_per_acc_row(DType acc_input, DType out) const;

private:
    int add_resource(ResourceInfo info);
    int bank_resource(int memory, int bank, bool write) const;
    int slice_resource(int memory, int slice, bool write) const;
    void tile_holds(ResourceUse &use, int tile, bool write, int64_t offset, int64_t &occupancy) const;
    void stream_holds(ResourceUse &use, const std::string &from, const std::string &to, int64_t offset,
                      int64_t duration, int lanes) const;

    Target target_;
    std::vector<ResourceInfo> resources_;
    std::map<std::string, int> by_name_;
    std::vector<std::vector<int>> bank_read_, bank_write_, slice_read_, slice_write_; // [memory][index]
    int stream_east_ = -1, stream_west_ = -1, vxm_ = -1, host_link_ = -1, dram_ = -1;
    std::vector<int> mxm_pipe_, mxm_load_, mxm_drain_, sxm_, dma_;
};

} // namespace tessera::chipsim
