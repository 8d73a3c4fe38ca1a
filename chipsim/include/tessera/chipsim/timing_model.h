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

/// One row an instruction reads or writes, and when: a memory row, an MXM weight buffer or a
/// granule of DRAM, each a row of its own address space (see TimingModel::row_accesses).
struct RowAccess {
    int space = 0;        ///< Index in Target::memories, or weight_space() / dram_space().
    int64_t row = 0;      ///< Flat row of the memory; plane * weight_buffers + buffer; granule.
    int64_t offset = 0;   ///< Cycles after the start (unused when at_end).
    bool at_end = false;  ///< At the instruction's actual end (DMA loads, weight installs).
    bool write = false;
};

/// What one DMA costs when it has its engine and the link (DRAM, or the host link on chips
/// without DRAM) to itself: start to end = setup + transfer + link_latency.
struct DmaCost {
    int64_t setup = 0;        ///< Fixed cost per transfer before the first byte moves.
    int64_t transfer = 0;     ///< Cycles of full link bandwidth the bytes take.
    int64_t link_latency = 0; ///< From the last byte sent to its arrival.
    int64_t granule = 1;      ///< Burst length in cycles: the link is shared burst by burst.
    int64_t cycles() const { return setup + transfer + link_latency; }
};

/// The in-order queue that issues an instruction on a dynamic target: dma.load and mem.copy →
/// load, dma.store → store, mxm.* → exec, vxm/sxm → vector; sync and nop name their own.
Queue queue_of(const Instruction &in);

/// Cycles from an instruction's start until its in-order queue offers the next one, on a dynamic
/// target. An instruction for a unit hands the unit its rows and frees the queue the next cycle:
/// the unit, held for its issue cycles, keeps the next instruction for the same unit waiting,
/// while one for another unit goes ahead (a weight install into the free buffer runs under the
/// multiply before it: the MXM's double-buffered weights). A DMA engine takes one transfer at a
/// time, so a DMA holds its queue to its end (`start_to_end`, which bandwidth may stretch).
int64_t queue_hold_cycles(const Instruction &in, const ResourceUse &use, int64_t start_to_end);

/// The address map from the allocating side: `count` rows from local row `local_base` of one
/// flat bank (MemoryDesc::flat_bank) of `m`, as an operand.
TileRef bank_tile(const MemoryDesc &m, int flat_bank, int64_t local_base, int64_t count);
/// `count` rows interleaved over the slices of one hemisphere at bank `bank` of each slice (row i
/// in slice i mod slices), from local row `local_base` of every slice, as an operand (slice '*').
TileRef slice_interleaved_tile(const MemoryDesc &m, int hemisphere, int bank, int64_t local_base, int64_t count);
/// Local rows [begin, end) of one bank that a tile occupies. On an interleaved memory (bank =
/// row mod banks) the rows are one flat space: bank is -1 and [begin, end) are memory rows.
struct BankSpan {
    int bank = -1; ///< Flat bank, or -1 on an interleaved memory.
    int64_t begin = 0, end = 0;
};
/// The rows of each bank that a stride-1 tile of `m` spans: one span for a tile in one bank or
/// in an interleaved memory, one per slice (the same local rows in each, the most any slice
/// holds) for a tile interleaved over a hemisphere's slices.
std::vector<BankSpan> bank_spans(const MemoryDesc &m, const TileRef &tile);

/// Where an instruction went: its interval and the bandwidth bursts it was served in.
struct Placement {
    int64_t start = 0, end = 0;
    std::vector<Interval> bursts;
    /// Lane-cycles added to each resource's busy time (resource index, cycles): what
    /// ReservationTable::busy_cycles grows by, so a profile's parts sum to the unit totals.
    std::vector<std::pair<int, int64_t>> busy;
};

/// A resource an instruction could not get at its cycle, and who held it.
struct Conflict {
    int resource = 0;
    Interval held;      ///< The blocking interval (held.owner = that instruction's index).
    int64_t at = 0;     ///< Cycle the instruction wanted it.
};

/// Analytic bound on a kernel's cycles.
/// What the problem bound needs from the algorithm alone (CHIP.md): its multiply-accumulates, in
/// the dtype the matrix unit would take them, and the bytes of its inputs and outputs.
struct ProblemSize {
    int64_t macs = 0;
    DType mac_dtype = DType::Int8;
    int64_t input_bytes = 0, output_bytes = 0;
};

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
    /// The problem bound: the algorithm's MACs at peak, and its inputs and outputs crossing once
    /// each level a kernel must cross — DRAM where the target has one, the vector memory and the
    /// streams on chip; the host link is outside a kernel's cycles. A schedule that reloads tiles
    /// raises its own roofline, never this.
    Roofline problem_bound(const ProblemSize &p) const;
    /// Output rows a drain writes per accumulator row for an output dtype.
    int drain_rows_per_acc_row(DType acc_input, DType out) const;

    /// The rows `in` reads and writes and when, from `use` = resources(in): every row of its tile
    /// operands (row i of a tile at offset + i * span / rows), the weight buffer an mxm.lw fills
    /// (written at its end) or an mxm.mm reads (from its first to its last activation row), and
    /// with `dram_granules` the dram_granule_bytes() granules a dma.load/dma.store of "DRAM"
    /// touches (read by a load at its start, written by a store at its end). The simulator's
    /// hazard checker and the code generator's schedulers order instructions by these.
    std::vector<RowAccess> row_accesses(const Instruction &in, const ResourceUse &use, bool dram_granules = false) const;
    /// The address space of MXM weight buffers in RowAccess: after the memories.
    int weight_space() const { return int(target_.memories.size()); }
    /// The address space of DRAM granules in RowAccess.
    int dram_space() const { return weight_space() + 1; }
    /// Bytes of one DRAM granule in RowAccess: the DRAM burst, the unit the link moves.
    int64_t dram_granule_bytes() const { return target_.dram.burst_bytes; }

    /// A DMA of `bytes` between the chip and DRAM (or the host, on chips without DRAM). The
    /// latency of a dma.load/dma.store is its cycles() when nothing shares the link.
    DmaCost dma_cost(int64_t bytes) const;
    /// dma_cost(bytes).cycles().
    int64_t dma_cycles(int64_t bytes) const { return dma_cost(bytes).cycles(); }
    /// Cycles the MXM takes to accept `rows` activation rows of `input` (an mxm.mm's issue
    /// cycles when its banks keep up): the time one matmul step holds its plane.
    int64_t mxm_rows_cycles(DType input, int64_t rows) const;
    /// Cycles an mxm.lw takes to install `rows` weight rows (its issue cycles when its banks
    /// keep up): the time a weight install holds the plane's load port.
    int64_t weight_install_cycles(int64_t rows) const;

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
