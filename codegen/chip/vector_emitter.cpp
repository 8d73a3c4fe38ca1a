// Vector tile placement and instruction builders (vector_emitter.h).
#include "vector_emitter.h"

#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

using chipsim::DType;
using chipsim::Instruction;
using chipsim::Opcode;
using chipsim::TileRef;
using chipsim::VxmOp;

const chipsim::MemoryDesc &vector_memory(const chipsim::Target &t) {
    for (auto &m : t.memories)
        if (!m.accumulator) return m;
    throw Error("chip backend: " + t.name + " has no memory besides its accumulators for vector tiles");
}

int64_t max_vector_tile_rows(const chipsim::Target &t) {
    const chipsim::MemoryDesc &m = vector_memory(t);
    return m.interleaved ? m.total_rows() : int64_t(m.slices) * m.rows_per_bank;
}

VectorEmitter::VectorEmitter(const chipsim::TimingModel &model, bool roomiest_first)
    : model_(model), alloc_(model.target()), streaming_(model.target().issue == chipsim::IssueKind::Static),
      roomiest_first_(roomiest_first) {
    const chipsim::MemoryDesc &m = vector_memory(model.target());
    memory_ = m.name;
    slices_ = m.slices;
    banks_ = m.banks;
}

int64_t VectorEmitter::max_tile_rows() const { return max_vector_tile_rows(target()); }

bool VectorEmitter::share_slice(const TileRef &a, const TileRef &b) {
    return side_of(a) == side_of(b) && (a.slice < 0 || b.slice < 0 || a.slice == b.slice);
}

std::optional<TileRef> VectorEmitter::try_place(int64_t rows, int side, int bank, const std::vector<TileRef> &avoid,
                                                const std::vector<TileRef> &apart) {
    if (!streaming_) return alloc_.flat(memory_, rows);
    const chipsim::MemoryDesc &m = *target().memory(memory_);
    if (rows <= m.rows_per_bank)
        for (int k = 0; k < slices_; ++k) {
            const int slice = (cursor_[side] + k) % slices_;
            // The roomiest bank first: a slice's fullest bank holds the long-lived tiles
            // (preloaded inputs) that other instructions stream while this one is written,
            // and a slice reads and writes in one cycle only on different banks.
            std::vector<int> banks;
            if (bank >= 0) banks.push_back(bank);
            else {
                for (int b = 0; b < banks_; ++b) banks.push_back(b);
                std::stable_sort(banks.begin(), banks.end(), [&](int a, int b) {
                    return alloc_.free_rows(memory_, m.flat_bank(side, slice, a)) > alloc_.free_rows(memory_, m.flat_bank(side, slice, b));
                });
            }
            for (int b : banks) {
                TileRef probe;
                probe.side = m.side_letter(side);
                probe.slice = slice;
                probe.bank = b;
                bool clash = false;
                for (auto &x : avoid) clash |= share_slice(probe, x) && x.bank == b;
                for (auto &x : apart) clash |= share_slice(probe, x);
                if (clash) continue;
                if (auto t = alloc_.in_bank(memory_, m.flat_bank(side, slice, b), rows)) {
                    cursor_[side] = (slice + 1) % slices_;
                    return t;
                }
            }
        }
    if (bank < 0) return std::nullopt; // interleaved tiles: the caller names their bank
    for (auto &x : avoid) // interleaved: every slice of the hemisphere
        if (side_of(x) == side && x.bank == bank) return std::nullopt;
    for (auto &x : apart)
        if (side_of(x) == side) return std::nullopt;
    return alloc_.interleaved(memory_, side, bank, rows);
}

TileRef VectorEmitter::tile(int64_t rows, int side, int bank, const std::string &what) {
    if (rows > max_tile_rows())
        throw Error("chip backend: " + what + " needs " + std::to_string(rows) + " rows of " + memory_ + ", more than one tile of " +
                    target().name + " holds (" + std::to_string(max_tile_rows()) + "); use a smaller shape");
    while (true) {
        if (auto t = place_reusing_own([&] { return try_place(rows, side, bank); })) return *t;
        if (!make_room())
            throw_does_not_fit(what, rows);
    }
}

void VectorEmitter::throw_does_not_fit(const std::string &what, int64_t rows) const {
    throw DoesNotFit("chip backend: the tiles one step needs do not fit in " + target().name + "'s " + memory_ + " (placing " + what + ", " +
                     std::to_string(rows) + " rows); use a smaller shape");
}

bool VectorEmitter::make_room() {
    if (retired_.empty()) return false;
    alloc_.release(retired_.front()); // the longest-dead rows first: fewer waits on their readers
    retired_.pop_front();
    return true;
}

std::optional<TileRef> VectorEmitter::place_reusing_own(const std::function<std::optional<TileRef>()> &try_it) {
    if (auto t = try_it()) return placed(*t);
    if (!in_wave_ || piece_retired(lane_).empty()) return std::nullopt;
    std::deque<TileRef> lent;
    lent.swap(piece_retired(lane_));
    for (const TileRef &l : lent) alloc_.release(l);
    const std::optional<TileRef> t = try_it();
    const chipsim::MemoryDesc &m = *target().memory(memory_);
    auto rows_of_spans = [](const std::vector<chipsim::BankSpan> &spans) {
        int64_t n = 0;
        for (const chipsim::BankSpan &sp : spans) n += sp.end - sp.begin;
        return n;
    };
    for (const TileRef &l : lent) {
        const std::vector<chipsim::BankSpan> back = alloc_.take_free(l); // what the new tile left of it
        if (rows_of_spans(back) == rows_of_spans(chipsim::bank_spans(m, l))) piece_retired(lane_).push_back(l);
        else wave_held_.insert(wave_held_.end(), back.begin(), back.end());
    }
    if (t) return placed(*t);
    return std::nullopt;
}

TileRef VectorEmitter::tile_anywhere(int64_t rows, int prefer_side, const std::string &what, bool spread, int first_bank,
                                     const std::vector<TileRef> &avoid) {
    if (streaming_) {
        auto clashes = [&](int side, int bank) { // an interleaved tile is on every slice of its hemisphere
            return std::any_of(avoid.begin(), avoid.end(), [&](const TileRef &x) { return side_of(x) == side && x.bank == bank; });
        };
        auto anywhere = [&]() -> std::optional<TileRef> {
            for (int s : {prefer_side, 1 - prefer_side})
                for (int b = 0; b < banks_; ++b) {
                    const int bank = (first_bank + b) % banks_;
                    if (spread && clashes(s, bank)) continue;
                    if (auto t = spread ? alloc_.interleaved(memory_, s, bank, rows) : try_place(rows, s, bank, avoid)) return t;
                }
            return std::nullopt;
        };
        // With banks to avoid, tile()'s fallback could land on one of them.
        if (!avoid.empty()) return place_making_room(anywhere, what + ", on no bank of the tile it is written into", rows);
        if (auto t = place_reusing_own(anywhere)) return *t;
    }
    return tile(rows, prefer_side, 0, what);
}

TileRef VectorEmitter::dst_for(int64_t rows, const std::vector<TileRef> &srcs, int prefer_side, const std::string &what,
                               const std::vector<TileRef> &apart) {
    if (!streaming_) return tile(rows, 0, 0, what);
    if (rows > max_tile_rows()) return tile(rows, prefer_side, 0, what); // throws the size error
    auto fitting = [&]() -> std::optional<TileRef> {
        if (roomiest_first_)
            for (int s : {prefer_side, 1 - prefer_side})
                if (auto t = try_place(rows, s, kRoomiestBank, srcs, apart)) return t;
        for (int s : {prefer_side, 1 - prefer_side})
            for (int bank = 0; bank < banks_; ++bank)
                if (auto t = try_place(rows, s, bank, srcs, apart)) return t;
        return std::nullopt;
    };
    return place_making_room(fitting, what, rows);
}

TileRef VectorEmitter::place_making_room(const std::function<std::optional<TileRef>()> &try_it, const std::string &what, int64_t rows) {
    while (true) {
        if (auto t = place_reusing_own(try_it)) return *t;
        if (!make_room())
            throw_does_not_fit(what, rows);
    }
}

TileRef VectorEmitter::broadcast(const TileRef &t, int64_t rows, int64_t row) {
    TileRef b = t;
    b.base = t.base + row * t.stride;
    b.count = rows;
    b.stride = 0;
    return b;
}

TileRef VectorEmitter::rows_of(const TileRef &t, int64_t first, int64_t count, int64_t step) {
    TileRef r = t;
    r.base = t.base + first * t.stride;
    r.count = count;
    r.stride = t.stride * step;
    return r;
}

void VectorEmitter::check_sources(const std::vector<TileRef> &srcs, const std::string &what) const {
    if (!streaming_) return;
    for (size_t a = 0; a < srcs.size(); ++a)
        for (size_t b = a + 1; b < srcs.size(); ++b)
            if (srcs[a] != srcs[b] && share_slice(srcs[a], srcs[b])) // one tile named twice streams once
                throw Error("chip backend: internal: " + what + " reads two tiles of one slice (a slice port conflict)");
}

namespace {

/// Whether two tiles may hold a common row: same memory, side and bank, and (both in one slice,
/// or both interleaved) overlapping row ranges; a tile in one slice and one interleaved over the
/// slices count as sharing.
bool may_share_rows(const TileRef &a, const TileRef &b) {
    if (a.memory != b.memory || a.side != b.side || a.bank != b.bank) return false;
    if ((a.slice < 0) != (b.slice < 0)) return true;
    if (a.slice != b.slice) return false;
    auto end = [](const TileRef &t) { return t.base + std::max<int64_t>(1, (t.count - 1) * t.stride + 1); };
    return a.base < end(b) && b.base < end(a);
}

} // namespace

void VectorEmitter::emit(Instruction in, const std::string &what, bool ahead_of_wave) {
    if (in.stage < 0) in.stage = stage_;
    const bool host_dma = target().dram.bytes == 0 && (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore);
    ChipOp op{std::move(in), after_preload_ && !host_dma, what};
    if (!in_wave_ || ahead_of_wave) {
        ops_.push_back(std::move(op));
        return;
    }
    if (wave_ops_.size() <= size_t(lane_)) wave_ops_.resize(size_t(lane_) + 1);
    // A tile another piece placed and this one touches is no longer that piece's to reuse.
    for (auto &[tile, lane] : wave_placed_)
        if (lane >= 0 && lane != lane_)
            for (const TileRef &x : op.in.tiles)
                if (may_share_rows(tile, x)) lane = -1;
    wave_ops_[size_t(lane_)].push_back(std::move(op));
}

void VectorEmitter::wave_lane(int lane) { lane_ = lane; }

void VectorEmitter::end_wave() {
    for (size_t step = 0;; ++step) {
        bool any = false;
        for (auto &piece : wave_ops_)
            if (step < piece.size()) {
                ops_.push_back(std::move(piece[step]));
                any = true;
            }
        if (!any) break;
    }
    wave_ops_.clear();
    for (auto &piece : wave_retired_)
        for (auto &t : piece) retired_.push_back(t);
    for (auto &t : wave_shared_retired_) retired_.push_back(t);
    wave_retired_.clear();
    wave_shared_retired_.clear();
    wave_placed_.clear();
    alloc_.release_spans(memory_, wave_held_);
    wave_held_.clear();
    in_wave_ = false;
    lane_ = 0;
}

namespace {

Instruction dma_load(const TileRef &dst, const chipsim::OffchipView &view) {
    Instruction in;
    in.op = Opcode::DmaLoad;
    in.tiles = {dst};
    in.view = view;
    return in;
}

} // namespace

void VectorEmitter::load(const TileRef &dst, const chipsim::OffchipView &view, const std::string &what) { emit(dma_load(dst, view), what); }

TileRef VectorEmitter::load_ahead(int64_t rows, int prefer_side, const chipsim::OffchipView &view, const std::string &what) {
    std::optional<TileRef> t;
    do {
        for (int s : {prefer_side, 1 - prefer_side})
            if (!t) t = try_place(rows, s, kRoomiestBank);
    } while (!t && make_room());
    if (!t) throw_does_not_fit(what, rows);
    emit(dma_load(*t, view), what, true);
    return *t;
}

void VectorEmitter::store(const chipsim::OffchipView &view, const TileRef &src, const std::string &what) {
    Instruction in;
    in.op = Opcode::DmaStore;
    in.tiles = {src};
    in.view = view;
    emit(in, what);
}

void VectorEmitter::vxm(VxmOp op, DType in_t, DType out_t, const TileRef &dst, const std::vector<TileRef> &srcs,
                        std::optional<double> imm, const std::vector<chipsim::ChainStep> &chain, const std::string &what) {
    check_sources(srcs, what);
    Instruction in;
    in.op = Opcode::Vxm;
    in.vop = op;
    in.dtype = in_t;
    in.out_dtype = out_t;
    in.has_out_dtype = in_t != out_t;
    if (imm) {
        in.has_imm = true;
        in.imm = *imm;
    }
    in.chain = chain;
    in.tiles = {dst};
    for (auto &s : srcs) in.tiles.push_back(s);
    emit(in, what);
}

const std::vector<ChipOp> *VectorEmitter::current_piece() const {
    if (!in_wave_) return &ops_;
    return size_t(lane_) < wave_ops_.size() ? &wave_ops_[size_t(lane_)] : nullptr;
}

std::optional<std::vector<TileRef>> VectorEmitter::last_vxm_writing(const TileRef &dst) const {
    const std::vector<ChipOp> *ops = current_piece();
    if (!ops || ops->empty()) return std::nullopt;
    const Instruction &in = ops->back().in;
    if (in.op != Opcode::Vxm || in.dtype != DType::FP32 || in.out_dtype != DType::FP32 || in.tiles.empty() || !(in.tiles[0] == dst))
        return std::nullopt;
    return std::vector<TileRef>(in.tiles.begin() + 1, in.tiles.end());
}

void VectorEmitter::pack_last_vxm(const TileRef &dst, const TileRef &packed, DType out) {
    if (!last_vxm_writing(dst)) throw Error("chip backend: internal: no vxm writing the tile to pack");
    ChipOp &op = const_cast<std::vector<ChipOp> *>(current_piece())->back(); // this emitter's own ops
    op.in.tiles[0] = packed;
    op.in.out_dtype = out;
    op.in.has_out_dtype = true;
    op.what += " (packed to " + std::string(chipsim::dtype_name(out)) + ")";
}

void VectorEmitter::reduce_rows(VxmOp kind, DType dtype, const TileRef &dst, const TileRef &src, const std::string &what) {
    Instruction in;
    in.op = Opcode::VxmReduce;
    in.vop = kind;
    in.axis = chipsim::ReduceAxis::Rows;
    in.dtype = dtype;
    in.out_dtype = dtype;
    in.tiles = {dst, src};
    emit(in, what);
}

void VectorEmitter::shift(DType dtype, const TileRef &dst, const TileRef &src, int64_t by, const std::string &what) {
    emit(sxm_shift(dtype, dst, src, by), what);
}

void VectorEmitter::permute(DType dtype, const TileRef &dst, const TileRef &src, std::vector<int32_t> map, const std::string &what) {
    Instruction in;
    in.op = Opcode::SxmPermute;
    in.dtype = dtype;
    in.permutation = std::move(map);
    in.tiles = {dst, src};
    emit(in, what);
}

void VectorEmitter::copy(const TileRef &dst, const TileRef &src, const std::string &what) {
    Instruction in;
    in.op = Opcode::MemCopy;
    in.tiles = {dst, src};
    emit(in, what);
}

std::vector<Instruction> VectorEmitter::schedule() {
    return streaming_ ? schedule_static_either_order(ops_, model_) : insert_semaphores(ops_, model_);
}

TileRef pack_rows_to_bf16(VectorEmitter &e, BlockTiles &tiles, const TileRef &v, bool by_producer, const std::string &what) {
    const auto producer = by_producer ? e.last_vxm_writing(v) : std::nullopt;
    // The packed tile is written by the producer (away from its sources) or by the cast of v.
    const std::vector<TileRef> sources = producer && !producer->empty() ? *producer : std::vector<TileRef>{v};
    const TileRef packed = tiles.fresh(v.count / 2, sources, VectorEmitter::other_side(sources.front()), what + " packed to bf16");
    if (producer) e.pack_last_vxm(v, packed, DType::BF16);
    else e.vxm(VxmOp::Cast, DType::FP32, DType::BF16, packed, {v}, std::nullopt, {}, what + " rounded to bf16");
    return packed;
}

Instruction sxm_shift(DType dtype, const TileRef &dst, const TileRef &src, int64_t by) {
    Instruction in;
    in.op = Opcode::SxmShift;
    in.dtype = dtype;
    in.has_imm = true;
    in.imm = double(by);
    in.tiles = {dst, src};
    return in;
}

chipsim::OffchipView strided_rows(const std::string &tensor, int64_t offset, int64_t rows, int64_t stride, int64_t row_bytes) {
    chipsim::OffchipView v;
    v.tensor = tensor;
    v.offset = offset;
    v.outer.push_back({rows, stride});
    v.inner_bytes = row_bytes;
    return v;
}

chipsim::OffchipView unit_rows(const std::string &tensor, int64_t offset, int64_t rows, int64_t stride, int64_t row_bytes,
                               int64_t vector_bytes) {
    chipsim::OffchipView v = strided_rows(tensor, offset, rows, stride, row_bytes);
    if (row_bytes < vector_bytes) v.outer.push_back({vector_bytes / row_bytes, 0});
    return v;
}

} // namespace tessera::internal::chip
