#pragma once
// Building blocks of the VXM kernels (softmax, layernorm, depthwise conv2d, attention's softmax):
// placement of vector tiles so that no instruction reads and writes one bank of a slice in the
// same cycles (a compile error on tsp-mini), instruction builders, and a pool of retired tiles
// that is reused only when memory runs out (so a new tile rarely has to wait for the last reader
// of the rows it takes).
//
// Placement on tsp-mini: a tile sits in one bank of one slice when it fits (2048 rows), so that
// instructions reading different slices stream side by side — each slice reads one bank and
// writes another per cycle — and slices are taken round-robin to spread the work; a larger
// tile interleaves over a hemisphere's slices. An instruction's sources must sit on different
// slices, and its destination goes to a slice and bank that none of its sources reads. npu-edge
// has one flat, interleaved scratchpad: locations are ignored there and conflicts only stall.
#include <algorithm>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bank_allocator.h"
#include "instruction_scheduler.h"
#include "tessera/chipsim/timing_model.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

/// The memory vector tiles live in (the first that is not an accumulator: "MEM", "SPAD").
/// Throws tessera::Error for a target that has none.
const chipsim::MemoryDesc &vector_memory(const chipsim::Target &t);

/// Rows one vector tile may have in it (a hemisphere's bank over all slices; the scratchpad).
int64_t max_vector_tile_rows(const chipsim::Target &t);

class VectorEmitter {
public:
    /// What placement throws when the tiles of a step do not fit (a tessera::Error).
    struct DoesNotFit : tessera::Error {
        using tessera::Error::Error;
    };

    /// `roomiest_first`: a destination goes to the roomier bank of its slice first (away from the
    /// long-lived tiles the slice's fuller bank holds, which other instructions stream while it is
    /// written); else to bank 0 first, which packs tighter (a kernel compiled inside rows reserved
    /// for other kernels may then fit where it did not).
    explicit VectorEmitter(const chipsim::TimingModel &model, bool roomiest_first = true);

    const chipsim::Target &target() const { return model_.target(); }
    const chipsim::TimingModel &model() const { return model_; }
    /// tsp-mini: static issue, two hemispheres of sliced MEM.
    bool streaming() const { return streaming_; }
    /// The memory vector tiles live in ("MEM" or "SPAD").
    const std::string &memory() const { return memory_; }
    /// Rows one tile may have (a hemisphere's bank over all slices; the scratchpad).
    int64_t max_tile_rows() const;

    /// A tile of `rows` rows in hemisphere `side` (0 west, 1 east) and bank `bank` (on the next
    /// slice with room), making room from the retired pool when needed. Throws tessera::Error
    /// naming `what` when it cannot fit.
    chipsim::TileRef tile(int64_t rows, int side, int bank, const std::string &what);
    /// A tile of `rows` rows wherever there is room (for data loaded from off chip); `spread`
    /// interleaves it over a hemisphere's slices, for instructions that read several rows per
    /// cycle (MXM weight installs); `first_bank` is the bank tried first; on no slice and bank
    /// of a tile in `avoid` (one an instruction writes while it reads this one).
    chipsim::TileRef tile_anywhere(int64_t rows, int prefer_side, const std::string &what, bool spread = false, int first_bank = 0,
                                   const std::vector<chipsim::TileRef> &avoid = {});
    /// A destination for an instruction that reads `srcs`: hemisphere `prefer_side` first, on a
    /// slice and bank that no source reads, and on no slice of the tiles in `apart` (those a
    /// later instruction reads together with it).
    chipsim::TileRef dst_for(int64_t rows, const std::vector<chipsim::TileRef> &srcs, int prefer_side, const std::string &what,
                             const std::vector<chipsim::TileRef> &apart = {});
    /// The hemisphere a tile sits on (0 on npu-edge).
    static int side_of(const chipsim::TileRef &t) { return t.side == 'e' ? 1 : 0; }
    static int other_side(const chipsim::TileRef &t) { return 1 - side_of(t); }
    /// Whether an instruction reading `a` and `b` (or reading one and writing the other on the
    /// same bank) would use one slice's port twice (always false on npu-edge).
    static bool share_slice(const chipsim::TileRef &a, const chipsim::TileRef &b);
    /// Hands a tile back; its rows are reused once space runs out. Inside a wave, a tile the
    /// current piece placed is reused by that piece only (its later steps come after this one in
    /// the merged order too); any other only after the wave, whose pieces end_wave() reorders.
    void retire(const chipsim::TileRef &t) {
        if (in_wave_) {
            const auto owner = std::find_if(wave_placed_.begin(), wave_placed_.end(), [&](const auto &p) { return p.first == t; });
            (owner != wave_placed_.end() && owner->second == lane_ ? piece_retired(lane_) : wave_shared_retired_).push_back(t);
        } else {
            retired_.push_back(t);
        }
    }

    /// Independent pieces of work (blocks, output rows, attention jobs) are emitted one after
    /// another into lanes of a wave and merged step by step on end_wave(), so that the
    /// in-order schedule (instruction_scheduler.h) still runs them side by side.
    void begin_wave() { in_wave_ = streaming_; } // dynamic issue needs no interleaving
    /// Instructions emitted from now on belong to piece `lane` of the current wave.
    void wave_lane(int lane);
    /// Merges the wave's pieces round-robin (piece 0's first instruction, piece 1's first, ...).
    void end_wave();

    /// Row `row` of `t` read `rows` times (row stride 0): a broadcast operand.
    static chipsim::TileRef broadcast(const chipsim::TileRef &t, int64_t rows, int64_t row = 0);
    /// Rows [first, first + count) of `t`, every `step`-th row of it.
    static chipsim::TileRef rows_of(const chipsim::TileRef &t, int64_t first, int64_t count, int64_t step = 1);

    void load(const chipsim::TileRef &dst, const chipsim::OffchipView &view, const std::string &what);
    /// A tile of `rows` rows on rows free now (hemisphere `prefer_side` first), loaded from `view`
    /// ahead of the current wave, before any of its instructions: data many statements read
    /// (constants), kept until the program ends. A piece's own retired rows are not reused for
    /// it: instructions of the piece that read them come later in the merged order.
    chipsim::TileRef load_ahead(int64_t rows, int prefer_side, const chipsim::OffchipView &view, const std::string &what);
    void store(const chipsim::OffchipView &view, const chipsim::TileRef &src, const std::string &what);
    /// vxm.<op>.<in>.<out> dst, srcs[, #imm] [| chain...]
    void vxm(chipsim::VxmOp op, chipsim::DType in, chipsim::DType out, const chipsim::TileRef &dst,
             const std::vector<chipsim::TileRef> &srcs, std::optional<double> imm = std::nullopt,
             const std::vector<chipsim::ChainStep> &chain = {}, const std::string &what = "vector op");
    /// vxm.reduce.<sum|max>.rows: `dst` (1 row) = the lane-wise sum or max over the rows of `src`.
    void reduce_rows(chipsim::VxmOp kind, chipsim::DType dtype, const chipsim::TileRef &dst, const chipsim::TileRef &src,
                     const std::string &what);
    /// sxm.shift.<dtype> dst, src, #by: each row's lanes moved up by `by` lanes.
    void shift(chipsim::DType dtype, const chipsim::TileRef &dst, const chipsim::TileRef &src, int64_t by,
               const std::string &what);
    /// sxm.permute.<dtype> dst, src, map: lane l of each of dst's rows takes lane map[l] of src's.
    void permute(chipsim::DType dtype, const chipsim::TileRef &dst, const chipsim::TileRef &src, std::vector<int32_t> map,
                 const std::string &what);
    /// The sources of the last instruction emitted (in the current wave piece) when it is an
    /// fp32 → fp32 `vxm` that writes exactly `dst`; nullopt otherwise.
    std::optional<std::vector<chipsim::TileRef>> last_vxm_writing(const chipsim::TileRef &dst) const;
    /// Makes that instruction (last_vxm_writing(dst) must have found it) write its result as
    /// `out` into `packed` instead, which has dst's rows over (4 / out bytes): a narrowing VXM
    /// packs its rows at the cost of the plain one, so a value stored narrower needs no cast.
    void pack_last_vxm(const chipsim::TileRef &dst, const chipsim::TileRef &packed, chipsim::DType out);
    /// mem.copy dst, src (on chip, through a stream).
    void copy(const chipsim::TileRef &dst, const chipsim::TileRef &src, const std::string &what);
    /// Appends an instruction built elsewhere (MXM, SXM transposes).
    /// Into the current wave piece, or into the program when no wave runs or `ahead_of_wave`
    /// (before every instruction of the current wave).
    void emit(chipsim::Instruction in, const std::string &what, bool ahead_of_wave = false);

    /// Compute instructions emitted from now on start after every host load emitted before them
    /// (tsp-mini kernels whose inputs are preloaded, so the kernel's cycles measure the kernel).
    void set_after_preload(bool v) { after_preload_ = v; }
    /// Instructions emitted from now on belong to stage `index` of the program (its profile).
    void set_stage(int32_t index) { stage_ = index; }
    /// The instructions, in priority order for instruction_scheduler.h.
    std::vector<ChipOp> take_ops() { return std::move(ops_); }
    /// Scheduled program (static issue cycles on tsp-mini, semaphores on npu-edge).
    std::vector<chipsim::Instruction> schedule();

private:
    /// `try_place`'s bank for "each slice's roomiest bank" (tiles of one bank only).
    static constexpr int kRoomiestBank = -1;
    /// rows in bank `bank` of a slice of hemisphere `side` that `ok(slice)` accepts, round-robin.
    std::optional<chipsim::TileRef> try_place(int64_t rows, int side, int bank, const std::vector<chipsim::TileRef> &avoid = {},
                                              const std::vector<chipsim::TileRef> &apart = {});
    /// Whether an instruction reading `a` and `b` (or reading one and writing the other on the
    /// same bank) would use one slice's port twice.
    void check_sources(const std::vector<chipsim::TileRef> &srcs, const std::string &what) const;
    /// Where the next instruction goes: the program, or the current wave piece (null when that
    /// piece has none yet).
    const std::vector<ChipOp> *current_piece() const;

    const chipsim::TimingModel &model_;
    BankAllocator alloc_;
    bool streaming_ = false;
    std::string memory_;
    bool roomiest_first_ = true;
    std::deque<chipsim::TileRef> retired_;
    int cursor_[2] = {0, 0}; ///< Next slice to try per hemisphere.
    int slices_ = 1, banks_ = 1; ///< Slices per hemisphere and banks per slice of memory_.
    std::vector<ChipOp> ops_;
    bool after_preload_ = false;
    int32_t stage_ = -1;
    bool in_wave_ = false;
    int lane_ = 0;
    std::vector<std::vector<ChipOp>> wave_ops_;
    std::vector<std::deque<chipsim::TileRef>> wave_retired_; ///< Per piece of the current wave.
    std::deque<chipsim::TileRef> wave_shared_retired_;       ///< Retired in the wave, placed before it or by another piece.
    /// Tiles placed in the current wave and the piece that placed them (-1 once another piece's
    /// instruction touched their rows: then reused only after the wave).
    std::vector<std::pair<chipsim::TileRef, int>> wave_placed_;
    std::deque<chipsim::TileRef> &piece_retired(int lane) {
        if (wave_retired_.size() <= size_t(lane)) wave_retired_.resize(size_t(lane) + 1);
        return wave_retired_[size_t(lane)];
    }
    /// A tile just placed: in a wave, the current piece's.
    chipsim::TileRef placed(const chipsim::TileRef &t) {
        if (in_wave_) wave_placed_.emplace_back(t, lane_);
        return t;
    }
    /// A tile `try_it` places with the current wave piece's retired tiles lent to the allocator:
    /// those it does not take come back to the piece whole; the rest of one it takes part of is
    /// held until the wave ends (no other piece may write rows this piece still reads in the
    /// merged order).
    std::optional<chipsim::TileRef> place_reusing_own(const std::function<std::optional<chipsim::TileRef>()> &try_it);
    /// place_reusing_own, making room from the retired pool until `try_it` fits; throws naming
    /// `what` when nothing is left to reclaim.
    chipsim::TileRef place_making_room(const std::function<std::optional<chipsim::TileRef>()> &try_it, const std::string &what,
                                       int64_t rows);
    /// Gives the allocator back the rows of the longest dead tile retired before the current
    /// wave. False when none is left.
    bool make_room();
    [[noreturn]] void throw_does_not_fit(const std::string &what, int64_t rows) const;
    std::vector<chipsim::BankSpan> wave_held_; ///< Rows of the current wave's pieces' tiles, held until it ends.
};

/// An off-chip view of `rows` rows of `row_bytes` contiguous bytes, consecutive rows `stride`
/// bytes apart, starting `offset` bytes into `tensor`.
/// sxm.shift dst, src, #by: lane l of each of dst's rows takes lane l - by of src's (zero past
/// the ends).
chipsim::Instruction sxm_shift(chipsim::DType dtype, const chipsim::TileRef &dst, const chipsim::TileRef &src, int64_t by);
chipsim::OffchipView strided_rows(const std::string &tensor, int64_t offset, int64_t rows, int64_t stride, int64_t row_bytes);
/// strided_rows for a matrix unit's operand: a row narrower than a vector (`vector_bytes`) is
/// repeated to fill it, and the unit reads only its first elements.
chipsim::OffchipView unit_rows(const std::string &tensor, int64_t offset, int64_t rows, int64_t stride, int64_t row_bytes,
                               int64_t vector_bytes);

/// The tiles one block of vector work (a softmax/layernorm block, an attention job) allocates,
/// handed back together once the block's result is stored.
class BlockTiles {
public:
    explicit BlockTiles(VectorEmitter &e, std::vector<chipsim::TileRef> owned = {}) : e_(e), tiles_(std::move(owned)) {}

    /// A fresh destination (VectorEmitter::dst_for), owned by the block.
    chipsim::TileRef fresh(int64_t rows, const std::vector<chipsim::TileRef> &srcs, int prefer_side, const std::string &what,
                           const std::vector<chipsim::TileRef> &apart = {}) {
        chipsim::TileRef t = e_.dst_for(rows, srcs, prefer_side, what, apart);
        tiles_.push_back(t);
        return t;
    }
    /// The destination of a value that replaces `dead` (nothing reads it afterwards): `dead` itself
    /// on npu-edge, whose 512 KiB scratchpad cannot spare a copy; a fresh tile on tsp-mini, where
    /// an instruction may not read and write one bank in the same cycles.
    chipsim::TileRef replace(const chipsim::TileRef &dead, const std::vector<chipsim::TileRef> &srcs, int prefer_side,
                             const std::string &what, const std::vector<chipsim::TileRef> &apart = {}) {
        if (!e_.streaming()) return dead;
        return fresh(dead.count, srcs, prefer_side, what, apart);
    }
    /// Hands one of the block's tiles back now (its last reader is emitted); a tile the block
    /// does not own is left alone.
    void release(const chipsim::TileRef &t) {
        for (auto it = tiles_.begin(); it != tiles_.end(); ++it)
            if (*it == t) {
                e_.retire(t);
                tiles_.erase(it);
                return;
            }
    }
    /// A tile allocated elsewhere that the block hands back with its own.
    void own(const chipsim::TileRef &t) { tiles_.push_back(t); }
    /// Retires every tile of the block (VectorEmitter::retire), in allocation order.
    void retire_all() {
        for (const auto &t : tiles_) e_.retire(t);
        tiles_.clear();
    }

private:
    VectorEmitter &e_;
    std::vector<chipsim::TileRef> tiles_;
};

/// `v`'s rows packed two by two into bf16 rows of a fresh tile of `tiles`: by the VXM op that
/// just computed v where `by_producer` and there is one (v itself is then never written: a
/// narrowing op costs what the plain one does), else by a cast of its own.
chipsim::TileRef pack_rows_to_bf16(VectorEmitter &e, BlockTiles &tiles, const chipsim::TileRef &v, bool by_producer,
                                   const std::string &what);

} // namespace tessera::internal::chip
