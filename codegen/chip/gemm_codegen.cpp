// Tensorized matmul code generation for both chip kinds (gemm_codegen.h).
//
// tsp-mini (static, all data in SRAM): the output is cut into jobs of TM rows x one MXM width
// of columns; jobs go round-robin to the four planes, a wave of four runs side by side, each
// plane walking the K blocks from a different start so that the four activation streams read
// four different MEM slices. Weight tiles interleave over the east hemisphere's slices (a
// 64-row install then reads 8 rows per slice, 16 cycles at 4 streams); activation tiles sit
// one per bank on the west side; drained results interleave on the east side. When A and B
// fit in MEM they are all loaded before the kernel starts (the Groq model: the kernel then
// never waits for the host link). Otherwise a matmul (fused epilogue or not) streams them on a
// plan made from the shapes and the target (stream_plan.h: bands of A kept on chip, waves of B
// and results in long DMAs, the next band loading as the last one dies). Streamed convs and
// explicit placements (store_in) keep a tile cache instead: tiles stream in per wave and are evicted furthest-next-use first;
// when all of B then stays on chip, the last west slice holds the B panels that do not fit the
// east and A keeps to the other west slices.
//
// npu-edge (dynamic, DRAM): output tiles of TM x TN (TN/32 array widths) accumulate in ACC;
// row bands in order, column tiles snaking. The scratchpad is cut into equal slots; a plan
// over the whole kernel's sequence of tile uses picks what stays (Belady) and the slot each
// load goes to, so the load queue runs ahead of the execute queue across output tiles, as far
// as the slots allow; semaphores are added afterwards.
#include "gemm_codegen.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "bank_allocator.h"
#include "stream_plan.h"
#include "vector_emitter.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::DType;
using chipsim::Instruction;
using chipsim::OffchipView;
using chipsim::Opcode;
using chipsim::TileRef;

/// On-chip copies of program-tensor tiles, loaded once and kept while space allows; evicts the
/// resident tile whose next use is furthest away.
class TileCache {
public:
    explicit TileCache(BankAllocator &alloc) : alloc_(alloc) {}

    /// Records that `key` is used at `time` (call for every use, in increasing time, first).
    void plan_use(const std::string &key, int64_t time) { uses_[key].push_back(time); }

    /// The tile for `key` at `time`; when absent, places it with `place` (evicting as needed)
    /// and reports `fresh` so the caller emits its load.
    TileRef get(const std::string &key, int64_t time, const std::function<std::optional<TileRef>()> &place, bool &fresh) {
        fresh = false;
        if (auto it = resident_.find(key); it != resident_.end()) return it->second;
        TileRef t = make_room(time, place, key);
        resident_[key] = t;
        fresh = true;
        return t;
    }

    /// As get, but only into free space: nullopt (and nothing evicted) when `place` finds none.
    std::optional<TileRef> try_get(const std::string &key, const std::function<std::optional<TileRef>()> &place, bool &fresh) {
        fresh = false;
        if (auto it = resident_.find(key); it != resident_.end()) return it->second;
        auto t = place();
        if (!t) return std::nullopt;
        resident_[key] = *t;
        fresh = true;
        return t;
    }

    /// A tile that is not cached (a drained result, an epilogue temporary); when `place` finds
    /// no room, retired tiles and then cached tiles not needed at `time` make way.
    TileRef make_room(int64_t time, const std::function<std::optional<TileRef>()> &place, const std::string &what) {
        while (true) {
            if (auto t = place()) return *t;
            if (!retired_.empty()) {
                alloc_.release(retired_.front());
                retired_.erase(retired_.begin());
                continue;
            }
            std::string victim;
            int64_t best = -1;
            for (auto &[k, tile] : resident_) {
                int64_t nu = next_use(k, time);
                if (nu == time) continue; // needed now
                int64_t score = nu < 0 ? INT64_MAX : nu;
                if (score > best) {
                    best = score;
                    victim = k;
                }
            }
            if (victim.empty())
                throw Error("chip backend: the tiles one step needs do not fit in on-chip memory (placing " + what +
                            "); use a smaller tile");
            alloc_.release(resident_[victim]);
            resident_.erase(victim);
        }
    }

    /// Hands back a tile once nothing placed later needs its space: it stays allocated (so later
    /// tiles do not wait for its last reader) until space runs out.
    void retire(const TileRef &t) { retired_.push_back(t); }

    /// Retires every resident tile with no use after `time`.
    void release_dead(int64_t time) {
        for (auto it = resident_.begin(); it != resident_.end();) {
            if (next_use(it->first, time + 1) < 0) {
                retire(it->second); // reuse the longest-dead space first: fewer waits on readers
                it = resident_.erase(it);
            } else {
                ++it;
            }
        }
    }

private:
    int64_t next_use(const std::string &key, int64_t time) const {
        auto it = uses_.find(key);
        if (it == uses_.end()) return -1;
        auto u = std::lower_bound(it->second.begin(), it->second.end(), time);
        return u == it->second.end() ? -1 : *u;
    }

    BankAllocator &alloc_;
    std::map<std::string, TileRef> resident_;
    std::map<std::string, std::vector<int64_t>> uses_;
    std::vector<TileRef> retired_;
};

TileRef prefix(TileRef t, int64_t rows) {
    t.count = rows;
    return t;
}

/// Rows [first, first + rows) of a tile.
TileRef prefix_rows(TileRef t, int64_t first, int64_t rows) {
    t.base += first * t.stride;
    t.count = rows;
    return t;
}

std::string key(const char *what, std::initializer_list<int64_t> idx) {
    std::string s = what;
    for (auto v : idx) s += "/" + std::to_string(v);
    return s;
}

/// Everything both emitters share: the kernel, the target, views and instruction builders.
struct Emitter {
    const GemmKernel &kk;
    const chipsim::TimingModel &model;
    const chipsim::Target &t;
    BankAllocator alloc;
    std::vector<ChipOp> ops;
    int es = 1;                  ///< Input element bytes.
    int64_t ku = 0, nu = 0;      ///< MXM shape.
    int rpa = 1;                 ///< Drained rows per accumulator row.
    int64_t stored_rpa = 1;      ///< Rows of a stored C tile per accumulator row (fewer when C is stored packed).
    int c_bytes = 4;             ///< Bytes of C's elements as stored.
    int64_t vl = 0;              ///< Vector bytes.

    Emitter(const GemmKernel &k, const chipsim::TimingModel &m) : kk(k), model(m), t(m.target()), alloc(m.target()) {
        es = chipsim::dtype_bytes(kk.in_dtype);
        const auto &shape = t.mxm_shape(kk.in_dtype);
        ku = shape.k;
        nu = shape.n;
        rpa = model.drain_rows_per_acc_row(kk.acc_dtype, kk.acc_dtype);
        stored_rpa = kk.packed_out ? model.drain_rows_per_acc_row(kk.acc_dtype, *kk.packed_out) : rpa;
        if (kk.packed_out) c_bytes = chipsim::dtype_bytes(*kk.packed_out);
        vl = t.vector_bytes;
    }

    /// A view of `rows` rows of `elems` contiguous elements each (`bytes` per element) at
    /// `offset`, consecutive rows `row_stride` bytes apart; rows narrower than a vector are
    /// repeated to fill it (the unit reads only the first elements).
    OffchipView rows_view(const std::string &tensor, int64_t offset, int64_t rows, int64_t row_stride, int64_t elems,
                          int bytes) const {
        return unit_rows(tensor, offset, rows, row_stride, elems * bytes, vl);
    }

    OffchipView a_view(int64_t g, int64_t m0, int64_t rows, int64_t k0) const {
        if (kk.conv) { // one filter tap: a strided window of the padded image
            const auto &c = *kk.conv;
            const int64_t tap = k0 / c.cp, c0 = k0 % c.cp, dy = tap / c.kw, dx = tap % c.kw, oh0 = m0 / c.ow;
            if (m0 % c.ow != 0 || rows % c.ow != 0)
                throw Error("chip backend: internal: a conv tile must cover whole output rows");
            OffchipView v;
            v.tensor = kk.a_tensor;
            v.offset = kk.a_offset + (((g * c.hp + oh0 * c.sh + dy * c.dh) * c.wp + dx * c.dw) * c.cp + c0) * es;
            v.outer.push_back({rows / c.ow, c.sh * c.wp * c.cp * es});
            v.outer.push_back({c.ow, c.sw * c.cp * es});
            if (ku * es < vl) v.outer.push_back({vl / (ku * es), 0});
            v.inner_bytes = ku * es;
            return v;
        }
        const int64_t ga = kk.a_batched ? g : 0;
        return rows_view(kk.a_tensor, kk.a_offset + ((ga * kk.m + m0) * kk.k + k0) * es, rows, kk.k * es, ku, es);
    }
    OffchipView b_view(int64_t g, int64_t k0, int64_t n0) const {
        const int64_t gb = kk.b_batched ? g : 0;
        return rows_view("B" + kk.tensor_suffix, ((gb * kk.k + k0) * kk.n + n0) * es, ku, kk.n * es, nu, es);
    }
    /// An output-layout view (C or an epilogue operand) of rows m0.. of columns n0..n0+nu, of
    /// `bytes`-byte elements.
    OffchipView out_view(const std::string &tensor, std::array<bool, 3> dims, int64_t g, int64_t m0, int64_t rows,
                         int64_t n0, int bytes = 4) const {
        const int64_t sn = dims[2] ? 1 : 0;
        const int64_t sm = dims[1] ? (dims[2] ? kk.n : 1) : 0;
        const int64_t sg = dims[0] ? (dims[1] ? kk.m : 1) * (dims[2] ? kk.n : 1) : 0;
        OffchipView v;
        v.tensor = tensor + kk.tensor_suffix;
        v.offset = (g * sg + m0 * sm + n0 * sn) * bytes;
        v.outer.push_back({rows, sm * bytes});
        v.inner_bytes = nu * bytes;
        if (!dims[2]) { // constant along the columns (a scalar, a column vector): each row's element repeated
            v.outer.push_back({nu, 0});
            v.inner_bytes = bytes;
        }
        return v;
    }

    /// tsp-mini conv with the image in MEM: the matmul of K block kb (one tap, one channel
    /// block) into the accumulator rows of output rows m0.. of image g, one mxm.mm per output
    /// row streaming the tap's window straight from the image (every sw-th pixel of an image
    /// row). Window pixels outside the image would add zeros, so they are skipped, except by
    /// the job's first matmul, which overwrites: it streams the zero row into their
    /// accumulator rows, so that every row starts defined.
    void conv_mm(int plane, int buffer, const TileRef &acc, int64_t g, int64_t m0, int64_t kb, bool first, bool ap) {
        const auto &c = *kk.conv;
        const int64_t k0 = kb * ku, tap = k0 / c.cp, block = (k0 % c.cp) / ku, dy = tap / c.kw, dx = tap % c.kw;
        const int64_t off = dx * c.dw - c.pad_left; // input column of output column 0
        const int64_t lo = off >= 0 ? 0 : (-off + c.sw - 1) / c.sw;
        const int64_t hi = c.w - 1 - off < 0 ? 0 : std::min(c.ow, (c.w - 1 - off) / c.sw + 1);
        auto zeros = [&](int64_t first_row, int64_t rows) {
            if (rows <= 0) return;
            if (kk.conv->zero_row.count == 0) throw Error("chip backend: internal: a conv window leaves the image but no zero row was made");
            TileRef z = kk.conv->zero_row;
            z.count = rows;
            z.stride = 0;
            mm(plane, buffer, prefix_rows(acc, first_row, rows), z, false, ap);
        };
        // A 1x1 conv's output rows whose windows continue one another (whole rows with
        // sh * w == ow * sw) stream as one run, as the matmul's A tiles would (56^2 256->64:
        // 5288 -> 4680 cycles). Not for larger filters: a long run holds the read ports of
        // every slice of the image that the other planes' taps read too (3x3 64->64 @56^2,
        // center taps chained: 10219 -> 12343 cycles).
        const bool chained = c.kh * c.kw == 1 && lo == 0 && hi == c.ow && c.sh * c.w == c.ow * c.sw;
        const int64_t rows = acc.count / c.ow;
        for (int64_t r = 0, run = 1; r < rows; r += run) {
            const int64_t iy = (m0 / c.ow + r) * c.sh + dy * c.dh - c.pad_top;
            const bool inside = iy >= 0 && iy < c.h && hi > lo;
            run = 1;
            if (inside && chained)
                while (r + run < rows && iy + run * c.sh < c.h) ++run;
            if (inside) {
                TileRef src = c.image[size_t(g)];
                src.base += ((iy * c.w + lo * c.sw + off) * c.pixel_rows + c.first_block + block) * src.stride;
                src.stride *= c.sw * c.pixel_rows;
                src.count = (run - 1) * c.ow + hi - lo;
                mm(plane, buffer, prefix_rows(acc, r * c.ow + lo, src.count), src, !first, ap);
            }
            if (first) {
                if (!inside) zeros(r * c.ow, c.ow);
                else {
                    zeros(r * c.ow, lo);
                    zeros(r * c.ow + hi, c.ow - hi);
                }
            }
        }
    }

    void emit(Instruction in, const std::string &what, bool after_preload = false) {
        ops.push_back({std::move(in), after_preload, what});
    }
    void load(const TileRef &dst, const OffchipView &v, const std::string &what) {
        Instruction in;
        in.op = Opcode::DmaLoad;
        in.tiles = {dst};
        in.view = v;
        emit(in, what);
    }
    void store(const OffchipView &v, const TileRef &src, const std::string &what) {
        Instruction in;
        in.op = Opcode::DmaStore;
        in.tiles = {src};
        in.view = v;
        emit(in, what);
    }
    void lw(int plane, int buffer, const TileRef &w, bool ap) {
        Instruction in;
        in.op = Opcode::MxmLw;
        in.dtype = kk.in_dtype;
        in.mxm = plane;
        in.buffer = buffer;
        in.tiles = {w};
        emit(in, "weights", ap);
    }
    void mm(int plane, int buffer, const TileRef &acc, const TileRef &a, bool accumulate, bool ap) {
        Instruction in;
        in.op = Opcode::MxmMm;
        in.dtype = kk.in_dtype;
        in.mxm = plane;
        in.buffer = buffer;
        in.accumulate = accumulate;
        in.tiles = {acc, a};
        emit(in, "matmul", ap);
    }
    void drain(int plane, const TileRef &dst, const TileRef &acc, bool ap, int streams = 0) {
        Instruction in;
        in.op = Opcode::MxmDrain;
        in.count = streams; // 0: as many as the drain can use
        in.dtype = kk.acc_dtype;
        // An empty epilogue's drain writes C as stored; otherwise the epilogue narrows.
        in.out_dtype = kk.packed_out && kk.epilogue.empty() ? *kk.packed_out : kk.acc_dtype;
        in.has_out_dtype = true;
        (void)plane; // the accumulator bank names the plane
        in.tiles = {dst, acc};
        emit(in, "drain", ap);
    }

    /// Emits the epilogue on a drained tile; returns the tile holding the result and appends
    /// every temporary to `temps` (the caller releases them after the store). With a packed
    /// output the last step, which computes the result, writes it packed into fewer rows.
    TileRef epilogue(const TileRef &staged, const std::vector<TileRef> &operands, int64_t rows,
                     const std::function<TileRef(int64_t rows, bool result, int hemisphere)> &place,
                     std::vector<TileRef> &temps, bool ap) {
        const VectorProgram &p = kk.epilogue;
        if (p.empty()) return staged;
        std::vector<TileRef> vals(size_t(p.num_values));
        vals[0] = staged;
        for (size_t i = 0; i < operands.size(); ++i) vals[i + 1] = prefix(operands[i], rows);
        for (auto &s : p.steps) {
            const TileRef &src0 = vals[size_t(s.srcs[0])];
            const int other = src0.side == 'e' ? 0 : 1;
            const bool packs = kk.packed_out && &s == &p.steps.back();
            const int64_t ratio = chipsim::dtype_bytes(s.proto.out_dtype) / chipsim::dtype_bytes(kk.out_dtype());
            TileRef dst = place(packs ? rows / ratio : rows, s.dst == p.result, other);
            temps.push_back(dst);
            Instruction in = s.proto;
            if (packs) {
                in.out_dtype = kk.out_dtype();
                in.has_out_dtype = true;
            }
            in.tiles = {dst};
            for (int x : s.srcs) in.tiles.push_back(vals[size_t(x)]);
            vals[size_t(s.dst)] = dst;
            emit(in, "epilogue", ap);
        }
        return vals[size_t(p.result)];
    }
};

// ---------------------------------------------------------------------------------------------
// tsp-mini

/// What a kernel's summary says about C stored packed ("" when it is not).
std::string packed_summary(const GemmKernel &kk) {
    if (!kk.packed_out) return "";
    return std::string("; C stored as ") + chipsim::dtype_name(*kk.packed_out) + ", packed by the " +
           (kk.epilogue.empty() ? "drain" : "epilogue's last step");
}

/// A streamed kernel on its plan (stream_plan.h): the first band of A and the first B of each
/// buffer load before the kernel; during it, each wave's link work is issued in the order it is
/// needed: the next wave's B, then (at the end of a band) the next band's A into the regions
/// the band frees, in the order they free, then the previous wave's results, then the next
/// band's A into regions no band uses.
std::vector<ChipOp> emit_tsp_streamed(Emitter &e, StreamedGemmShape s, const StreamedGemmPlan &plan, std::string &summary) {
    for (const VectorOperand &op : e.kk.epilogue.operands)
        if (op.dtype != e.kk.acc_dtype)
            throw Error("chip backend: a streamed matmul reads its epilogue operands at the accumulator's width, not " +
                        std::string(chipsim::dtype_name(op.dtype)));
    s.rows = plan.rows;
    const GemmKernel &kk = e.kk;
    const chipsim::Target &t = e.t;
    const chipsim::MemoryDesc *acc_mem = nullptr;
    for (auto &m : t.memories)
        if (m.accumulator) acc_mem = &m;
    const int64_t R = s.rows, KB = kk.k / e.ku, NB = kk.n / e.nu, MC = (kk.m + R - 1) / R;
    const int64_t bm = plan.band_chunks, wc = plan.wave_cols, GB = plan.group_blocks, groups = (KB + GB - 1) / GB;
    const std::vector<StreamedWave> waves = streamed_waves(s, bm, wc, int(plan.b_buffers.size()));
    auto rows_of = [&](int64_t chunk) { return std::min(R, kk.m - chunk * R); };
    auto cols_of = [&](const StreamedWave &w) { return std::min(wc, NB - w.cols * wc); };
    auto chunks_of = [&](const StreamedWave &w) { return std::min(bm, MC - w.band * bm); };
    auto group_size = [&](int64_t grp) { return std::min(GB, KB - grp * GB); };
    // Plane c * wc + i runs chunk c's column i and reads K block (step + plane) % KB at a step:
    // the planes read consecutive blocks, which sit in different slices.
    auto plane_of = [&](int64_t c, int64_t i) { return int(c * wc + i); };

    // The bands in order, each with its waves, and its A groups (chunk, group) in the order its
    // first wave needs them and the order its last wave finishes with them.
    struct Band {
        size_t first = 0, last = 0; // waves
        std::vector<std::pair<int64_t, int64_t>> by_need, by_death;
        std::map<std::pair<int64_t, int64_t>, int> region; // (chunk, group) -> A region
    };
    std::vector<Band> bands;
    for (size_t w = 0; w < waves.size(); ++w) {
        if (w == 0 || waves[w].band != waves[w - 1].band || waves[w].g != waves[w - 1].g) bands.push_back({w, w, {}, {}, {}});
        bands.back().last = w;
    }
    for (Band &b : bands) {
        auto steps = [&](const StreamedWave &w, int64_t c, int64_t grp, bool first) {
            int64_t v = first ? INT64_MAX : -1;
            for (int64_t i = 0; i < cols_of(w); ++i)
                for (int64_t kb = grp * GB; kb < grp * GB + group_size(grp); ++kb) {
                    const int64_t st = ((kb - plane_of(c, i)) % KB + KB) % KB;
                    v = first ? std::min(v, st) : std::max(v, st);
                }
            return v;
        };
        std::vector<std::tuple<int64_t, int64_t, int64_t>> need, death;
        for (int64_t c = 0; c < chunks_of(waves[b.first]); ++c)
            for (int64_t grp = 0; grp < groups; ++grp) {
                need.push_back({steps(waves[b.first], c, grp, true), c, grp});
                death.push_back({steps(waves[b.last], c, grp, false), c, grp});
            }
        std::sort(need.begin(), need.end());
        std::sort(death.begin(), death.end());
        for (auto &[st, c, grp] : need) b.by_need.push_back({c, grp});
        for (auto &[st, c, grp] : death) b.by_death.push_back({c, grp});
    }

    std::deque<int> free_regions; // A regions in the order they become free
    for (size_t r = 0; r < plan.a_regions.size(); ++r) free_regions.push_back(int(r));
    std::vector<size_t> loaded(bands.size(), 0); // per band: groups of by_need loaded so far
    auto load_a = [&](size_t bi) { // the band's next group, into the first free region
        Band &b = bands[bi];
        const auto [c, grp] = b.by_need[loaded[bi]++];
        const int region = free_regions.front();
        free_regions.pop_front();
        b.region[{c, grp}] = region;
        const StreamedWave &w = waves[b.first];
        const int64_t chunk = w.band * bm + c, rows = rows_of(chunk), gs = group_size(grp);
        const int64_t ga = kk.a_batched ? w.g : 0;
        OffchipView v;
        v.tensor = kk.a_tensor;
        v.offset = kk.a_offset + ((ga * kk.m + chunk * R) * kk.k + grp * GB * e.ku) * e.es;
        v.outer = {{rows, kk.k * e.es}, {gs, e.ku * e.es}}; // row r of block q lands in slice q
        v.inner_bytes = e.ku * e.es;
        e.load(prefix(plan.a_regions[size_t(region)], gs * rows), v, "A band");
    };
    auto load_b = [&](size_t w) {
        const StreamedWave &wv = waves[w];
        const int64_t gb = kk.b_batched ? wv.g : 0, cols = cols_of(wv);
        OffchipView v;
        v.tensor = "B";
        v.offset = (gb * kk.k * kk.n + wv.cols * wc * e.nu) * e.es;
        v.outer = {{cols, e.nu * e.es}, {kk.k, kk.n * e.es}}; // column block i's K rows, then i+1's
        v.inner_bytes = e.nu * e.es;
        e.load(prefix(plan.b_buffers[size_t(wv.b_buffer)], cols * KB * e.ku), v, "B columns");
    };
    const int64_t srpa = e.stored_rpa, cb = e.c_bytes;
    auto c_tile = [&](size_t w, int64_t c, int64_t i) { // chunk c's results are consecutive, for one store
        TileRef tr = plan.c_buffers[w % plan.c_buffers.size()];
        tr.base += (c * cols_of(waves[w]) * R + i * rows_of(waves[w].band * bm + c)) * srpa;
        tr.count = rows_of(waves[w].band * bm + c) * srpa;
        return tr;
    };
    // A fused epilogue's tiles: slot `index` of one of the plan's epilogue regions.
    const VectorProgram &ep = kk.epilogue;
    const int64_t ops_n = int64_t(ep.operands.size());
    auto slot = [&](TileRef region, int64_t index, int64_t rows) {
        region.base += index * R * e.rpa;
        region.count = rows;
        return region;
    };
    auto e_slot = [&](int64_t c, int64_t i, int64_t o) { return (c * wc + i) * ops_n + o; };
    auto load_e = [&](size_t w) {
        const StreamedWave &wv = waves[w];
        for (int64_t c = 0; c < chunks_of(wv); ++c)
            for (int64_t i = 0; i < cols_of(wv); ++i)
                for (int64_t o = 0; o < ops_n; ++o) {
                    const int64_t chunk = wv.band * bm + c, rows = rows_of(chunk);
                    e.load(slot(plan.operands, e_slot(c, i, o), rows * e.rpa),
                           e.out_view("E" + std::to_string(o), kk.operand_dims[size_t(o)], wv.g, chunk * R, rows,
                                      (wv.cols * wc + i) * e.nu),
                           "epilogue operand");
                }
    };
    // One store per wave when its chunks are whole (one DMA latency), else one per chunk.
    auto store_c = [&](size_t w) {
        const StreamedWave &wv = waves[w];
        const int64_t first = wv.band * bm, chunks = chunks_of(wv), cols = cols_of(wv);
        const bool whole = kk.m >= (first + chunks) * R;
        for (int64_t c = 0; c < chunks; c += whole ? chunks : 1) {
            const int64_t rows = rows_of(first + c);
            OffchipView v;
            v.tensor = "C";
            v.offset = ((wv.g * kk.m + (first + c) * R) * kk.n + wv.cols * wc * e.nu) * cb;
            v.outer = {{cols, e.nu * cb}, {rows, kk.n * cb}};
            if (whole && chunks > 1) v.outer.insert(v.outer.begin(), chipsim::ViewDim{chunks, R * kk.n * cb});
            v.inner_bytes = e.nu * cb;
            TileRef tr = c_tile(w, c, 0);
            tr.count = (whole ? chunks : 1) * cols * rows * srpa;
            e.store(v, tr, "C tiles");
        }
    };

    // Before the kernel: the first band, the B of every wave whose buffer is still empty, the
    // next band's first groups into the regions left over.
    for (size_t g = 0; g < bands[0].by_need.size(); ++g) load_a(0);
    std::vector<bool> b_early(waves.size(), false), b_used(plan.b_buffers.size(), false);
    for (size_t w = 0; w < waves.size(); ++w)
        if (waves[w].b_load && !b_used[size_t(waves[w].b_buffer)]) {
            b_used[size_t(waves[w].b_buffer)] = true;
            b_early[w] = true;
            load_b(w);
        }
    auto prefetch_next_band = [&](size_t bi) {
        if (bi + 1 >= bands.size()) return;
        while (!free_regions.empty() && loaded[bi + 1] < bands[bi + 1].by_need.size()) load_a(bi + 1);
    };
    prefetch_next_band(0);

    std::vector<int> wbuf(size_t(t.mxm.count), 0), accn(size_t(t.mxm.count), 0);
    size_t bi = 0;
    for (size_t w = 0; w < waves.size(); ++w) {
        const StreamedWave &wv = waves[w];
        if (w > bands[bi].last) ++bi;
        const Band &band = bands[bi];
        if (w + 1 < waves.size() && waves[w + 1].b_load && !b_early[w + 1]) load_b(w + 1);
        load_e(w); // read by the previous wave's epilogue until its end, by this one's at its end
        const bool ap = w == 0;
        const int64_t chunks = chunks_of(wv), cols = cols_of(wv);
        std::vector<TileRef> accs;
        for (int64_t c = 0; c < chunks; ++c)
            for (int64_t i = 0; i < cols; ++i) {
                TileRef acc;
                acc.memory = acc_mem->name;
                acc.bank = plane_of(c, i);
                acc.base = (accn[size_t(acc.bank)]++ % 2) * R;
                acc.count = rows_of(wv.band * bm + c);
                accs.push_back(acc);
            }
        const TileRef &bbuf = plan.b_buffers[size_t(wv.b_buffer)];
        for (int64_t st = 0; st < KB; ++st)
            for (int64_t c = 0; c < chunks; ++c)
                for (int64_t i = 0; i < cols; ++i) {
                    const int p = plane_of(c, i);
                    const int64_t kb = (st + p) % KB, grp = kb / GB;
                    TileRef a = plan.a_regions[size_t(band.region.at({c, grp}))];
                    a.base += kb % GB;
                    a.stride = group_size(grp);
                    a.count = rows_of(wv.band * bm + c);
                    const int buf = wbuf[size_t(p)]++ % t.mxm.weight_buffers;
                    e.lw(p, buf, prefix_rows(bbuf, (i * KB + kb) * e.ku, e.ku), ap);
                    e.mm(p, buf, accs[size_t(c * cols + i)], a, st > 0, ap);
                }
        // A drain with a later job on its plane has that whole job to finish in: one stream.
        const int streams = w + 1 < waves.size() && e.rpa < KB ? 1 : 0;
        for (int64_t c = 0; c < chunks; ++c)
            for (int64_t i = 0; i < cols; ++i) {
                const int64_t rows = rows_of(wv.band * bm + c) * e.rpa, job = c * wc + i;
                if (ep.empty()) {
                    e.drain(plane_of(c, i), c_tile(w, c, i), accs[size_t(c * cols + i)], ap, streams);
                    continue;
                }
                // The epilogue's result goes where the store reads it; the drained tile and the
                // steps before the result use the plan's slots (the VXM runs one job at a time).
                const TileRef drained = slot(plan.drained, job, rows);
                e.drain(plane_of(c, i), drained, accs[size_t(c * cols + i)], ap, streams);
                std::vector<TileRef> operands, temps;
                for (int64_t o = 0; o < ops_n; ++o) operands.push_back(slot(plan.operands, e_slot(c, i, o), rows));
                int64_t step = 0;
                e.epilogue(drained, operands, rows,
                           [&](int64_t r, bool result, int) {
                               const int64_t s_index = step++;
                               return result ? prefix(c_tile(w, c, i), r) : slot(plan.scratch, s_index, r);
                           },
                           temps, ap);
            }
        if (w == band.last && bi + 1 < bands.size()) {
            for (auto &cg : band.by_death) free_regions.push_back(band.region.at(cg));
            while (loaded[bi + 1] < bands[bi + 1].by_need.size()) load_a(bi + 1);
        }
        if (w > 0) store_c(w - 1);
        prefetch_next_band(bi);
    }
    store_c(waves.size() - 1);
    summary += "tsp-mini matmul: " + std::to_string(MC * NB * kk.groups) + " jobs of " + std::to_string(R) + "x" +
               std::to_string(e.nu) + " over " + std::to_string(t.mxm.count) + " MXM planes, " + std::to_string(KB) +
               " K blocks of " + std::to_string(e.ku) + "; A and B streamed on a plan: " + plan.describe() +
               "; accumulators double-buffered" + (ep.empty() ? std::string() : "; VXM epilogue: " + ep.description) + packed_summary(kk) + "\n";
    return std::move(e.ops);
}

std::vector<ChipOp> emit_tsp(const GemmKernel &kk, const chipsim::TimingModel &model, std::string &summary) {
    Emitter e(kk, model);
    const chipsim::Target &t = model.target();
    if ((kk.packed_out && !gemm_packs_output(kk, *kk.packed_out, t, false)) || kk.copy_out)
        throw Error("chip backend: internal: " + t.name + "'s kernels cannot store C packed as asked, nor a packed copy (gemm_packs_output)");
    const chipsim::MemoryDesc *acc_mem = nullptr;
    for (auto &m : t.memories)
        if (m.accumulator) acc_mem = &m;
    // A conv whose image the pre-pass keeps in MEM has no A tiles: conv_mm reads the image.
    const bool image_on_chip = kk.conv && !kk.conv->image.empty();
    if (image_on_chip)
        for (const TileRef &tr : kk.conv->reserved) e.alloc.claim(tr);
    const chipsim::MemoryDesc &mem = *t.memory("MEM");
    const int64_t acc_rows = acc_mem->rows_per_bank;
    const int planes = t.mxm.count;
    int64_t R = kk.tile_m;
    if (R <= 0) {
        // Rows per job (a conv's whole output rows): at most half an ACC bank, so that two
        // tiles double-buffer; of those, the ones that give the busiest plane the fewest cycles
        // — a K block's matmul takes its rows' cycles but no fewer than the next weights'
        // install — (every plane a job where the column blocks are few; a 3136-row conv, one
        // column block: 8 jobs of 392 rows, two a plane, not 7 of 504, where one plane takes
        // one), the largest of them (fewer weight installs and drains).
        const int64_t unit = kk.conv ? std::min(kk.conv->ow, acc_rows) : 1, col_jobs = kk.groups * (kk.n / e.nu);
        const int64_t most = std::max(unit, std::min((kk.m + unit - 1) / unit * unit, acc_rows / 2 / unit * unit));
        const int64_t install = model.weight_install_cycles(e.ku);
        int64_t busiest = std::numeric_limits<int64_t>::max();
        for (int64_t r = unit; r <= most; r += unit) {
            const int64_t jobs = col_jobs * ((kk.m + r - 1) / r);
            const int64_t cycles = (jobs + planes - 1) / planes * std::max(model.mxm_rows_cycles(kk.in_dtype, std::min(r, kk.m)), install);
            if (cycles <= busiest) busiest = cycles, R = r;
        }
    }
    if (kk.conv) { // whole output rows per tile, so a tap's window is one strided view
        if (kk.conv->ow > acc_rows)
            throw Error("chip backend: a conv output row of " + std::to_string(kk.conv->ow) + " pixels is longer than an ACC bank (" +
                        std::to_string(acc_rows) + " rows)");
        R = std::max<int64_t>(1, R / kk.conv->ow) * kk.conv->ow;
    }
    if (R > acc_rows)
        throw Error("chip backend: an output tile of " + std::to_string(R) + " rows needs " + std::to_string(R) +
                    " accumulator rows, but an ACC bank of " + t.name + " has " + std::to_string(acc_rows) +
                    ": tile i by at most " + std::to_string(acc_rows));
    const bool acc_db = kk.double_buffer && 2 * R <= acc_rows;
    const int64_t stage_rows = R * e.rpa;
    if (kk.stage_bank >= 0 && stage_rows > mem.rows_per_bank)
        throw Error("chip backend: the drained output tile (" + std::to_string(R) + " x " + std::to_string(e.nu) + " " +
                    chipsim::dtype_name(kk.acc_dtype) + " = " + std::to_string(stage_rows) + " rows) is larger than MEM bank " +
                    std::to_string(kk.stage_bank) + " (" + std::to_string(mem.rows_per_bank) + " rows): tile i smaller");
    const int64_t KB = kk.k / e.ku, NB = kk.n / e.nu, MC = (kk.m + R - 1) / R;

    struct Job {
        int64_t g, mc, nb;
        int plane;
    };
    std::vector<Job> jobs;
    for (int64_t g = 0; g < kk.groups; ++g)
        for (int64_t mc = 0; mc < MC; ++mc)
            for (int64_t nb = 0; nb < NB; ++nb) {
                int plane = kk.acc_bank >= 0 ? kk.acc_bank : int(jobs.size() % size_t(planes));
                jobs.push_back({g, mc, nb, plane});
            }
    const size_t wave = kk.acc_bank >= 0 ? 1 : size_t(planes);
    const int64_t ops_n = int64_t(kk.epilogue.operands.size());
    auto a_key = [&](const Job &j, int64_t kb) { return key("A", {kk.a_batched ? j.g : 0, j.mc, kb}); };
    // When A and B stream in during the kernel, B travels in panels of BG K blocks per DMA: on
    // tsp-mini's single DMA engine every transfer holds the engine for the host link's
    // 400-cycle latency, which a lone 32- or 64-row weight tile would pay for a 64..128-cycle
    // transfer. Preloaded kernels keep one tile per K block (BG = 1), spread over both banks.
    int64_t BG = 1;
    auto b_group_size = [&](int64_t grp) { return std::min(BG, KB - grp * BG); };
    auto b_key = [&](const Job &j, int64_t kb) { return key("B", {kk.b_batched ? j.g : 0, kb / BG, j.nb}); };
    auto e_key = [&](const Job &j, int64_t i) {
        auto d = kk.operand_dims[size_t(i)];
        return key("E", {i, d[0] ? j.g : 0, d[1] ? j.mc : 0, d[2] ? j.nb : 0});
    };
    auto rows_of = [&](const Job &j) { return std::min(R, kk.m - j.mc * R); };

    // Streamed kernels keep the last west slice for the B panels that do not fit the east (see
    // place_b): A's tiles go to the other west slices first.
    bool b_slice = false;
    const int b_slice_first = mem.flat_bank(0, mem.slices - 1, 0); // w<last>.b0
    auto place_a = [&](int64_t kb, int64_t rows) -> std::optional<TileRef> {
        const int banks = mem.slices * mem.banks;
        // Consecutive K blocks on different slices: the planes read consecutive blocks at once.
        // Banks are counted within a hemisphere (flat banks of hemisphere 0).
        const int64_t sl = b_slice ? mem.slices - 1 : mem.slices;
        const int pref = mem.flat_bank(0, int(kb % sl), int((kb / sl) % mem.banks));
        for (int pass = 0; pass < (b_slice ? 2 : 1); ++pass) // the B slice's banks last
            for (int h : {0, 1})
                for (int i = 0; i < banks; ++i) {
                    int local = (pref + i) % banks;
                    if (b_slice && h == 0 && (local >= b_slice_first) != (pass == 1)) continue;
                    if (auto tr = e.alloc.in_bank("MEM", mem.flat_bank(h, local / mem.banks, local % mem.banks), rows)) return tr;
                }
        return std::nullopt;
    };
    // `apart_from`: a tile an instruction reads or writes together with this one, whose
    // hemisphere and bank it must not share (one instruction may not read and write one bank).
    auto place_interleaved = [&](int64_t rows, int first_hemisphere, int first_bank,
                                 const TileRef *apart_from = nullptr) -> std::optional<TileRef> {
        for (int h : {first_hemisphere, 1 - first_hemisphere})
            for (int b : {first_bank, 1 - first_bank}) {
                if (apart_from && mem.side_letter(h) == apart_from->side && b == apart_from->bank) continue;
                if (auto tr = e.alloc.interleaved("MEM", h, b, rows)) return tr;
            }
        return std::nullopt;
    };
    // A B panel interleaved over the west slices makes every weight install wait until no
    // plane's mm reads A there (a slice has one read port): bf16 1024^3 lost 16k cycles in
    // each wave using such panels. In one bank of the slice A leaves free, an install holds
    // only that slice's port.
    auto place_b = [&](int64_t kb) -> std::optional<TileRef> {
        const int64_t rows = b_group_size(kb / BG) * e.ku;
        const int first = int((kb / BG) % 2);
        if (b_slice) {
            for (int b : {first, 1 - first})
                if (auto tr = e.alloc.interleaved("MEM", 1, b, rows)) return tr;
            for (int b : {0, 1})
                if (auto tr = e.alloc.in_bank("MEM", b_slice_first + b, rows)) return tr;
        }
        return place_interleaved(rows, 1, first);
    };

    // Preload when everything fits: the kernel then never waits for the host link.
    bool preload = true;
    {
        std::vector<std::pair<std::string, std::function<std::optional<TileRef>()>>> all;
        std::map<std::string, bool> seen;
        for (auto &j : jobs) {
            for (int64_t kb = 0; kb < KB; ++kb) {
                if (!image_on_chip && !seen[a_key(j, kb)]) {
                    seen[a_key(j, kb)] = true;
                    const int64_t rows = rows_of(j);
                    all.push_back({a_key(j, kb), [&, kb, rows] { return place_a(kb, rows); }});
                }
                if (!seen[b_key(j, kb)]) {
                    seen[b_key(j, kb)] = true;
                    all.push_back({b_key(j, kb), [&, kb] { return place_b(kb); }});
                }
            }
            for (int64_t i = 0; i < ops_n; ++i)
                if (!seen[e_key(j, i)]) {
                    seen[e_key(j, i)] = true;
                    all.push_back({e_key(j, i), [&] { return place_interleaved(stage_rows, 0, 1); }});
                }
        }
        // Leave room for two waves of drained tiles and the epilogue's temporaries.
        std::vector<TileRef> reserve;
        for (size_t i = 0; i < wave * size_t(kk.epilogue.empty() ? 2 : 3); ++i)
            if (auto tr = place_interleaved(stage_rows, 1, int(i % 2))) reserve.push_back(*tr);
        std::vector<TileRef> placed;
        for (auto &[k, fn] : all) {
            auto tr = fn();
            if (!tr) {
                preload = false;
                break;
            }
            placed.push_back(*tr);
        }
        for (auto &tr : placed) e.alloc.release(tr);
        for (auto &tr : reserve) e.alloc.release(tr);
    }

    // Streamed matmuls run on a plan made from the shapes and the target (stream_plan.h);
    // convs and explicit placements keep the scheme below.
    if (!preload && !kk.conv && kk.acc_bank < 0 && kk.stage_bank < 0 && kk.out_bank < 0 && acc_db &&
        e.ku * e.es == e.vl && e.nu * e.es == e.vl) {
        const StreamedGemmShape s{.groups = kk.groups, .m = kk.m, .n = kk.n, .k = kk.k,
                                  .b_batched = kk.b_batched, .rows = R, .rows_fixed = kk.tile_m > 0, .ku = e.ku, .nu = e.nu, .in_bytes = e.es,
                                  .in_dtype = kk.in_dtype, .drain_rows = e.rpa,
                                  .epilogue_operands = int64_t(kk.epilogue.operands.size()),
                                  .epilogue_steps = int64_t(kk.epilogue.steps.size())};
        if (auto plan = plan_streamed_gemm(s, model)) return emit_tsp_streamed(e, s, *plan, summary);
    }
    // The tile cache: streamed convs and explicit placements. The figures quoted below were measured
    // on plain matmuls, before they moved to the plan.
    // Only when all of B then stays on chip (bf16 1024^3: 2 MiB of B, 86.8 -> 95.4 % of MXM
    // peak); when B streams anyway (int8 / bf16 2048^3) A keeps every west slice, which
    // measured better there (bf16 2048^3: 69.1 % against 60.6 % with the slice kept for B).
    const int64_t slice_rows = int64_t(mem.banks) * mem.rows_per_bank;
    const int64_t b_rows = (kk.b_batched ? kk.groups : 1) * KB * e.ku * NB;
    b_slice = !preload && b_rows <= (mem.slices + 1) * slice_rows;
    // 16 K blocks per panel: 1024 rows for int8, 512 for bf16. Measured 8, 12, 16, 24 blocks
    // (and bf16 32, the earlier 1024 rows): 16 is best for every streamed row; bf16 2048^3 went
    // 69.1 -> 76.8 % of MXM peak from 32-block panels, int8 2048^3 and bf16 1024^3 unchanged.
    if (!preload) BG = std::min<int64_t>(KB, 16);
    TileCache cache(e.alloc);
    for (size_t w = 0; w < jobs.size(); w += wave)
        for (size_t x = w; x < std::min(jobs.size(), w + wave); ++x) {
            for (int64_t kb = 0; kb < KB; ++kb) {
                if (!image_on_chip) cache.plan_use(a_key(jobs[x], kb), int64_t(w));
                cache.plan_use(b_key(jobs[x], kb), int64_t(w));
            }
            for (int64_t i = 0; i < ops_n; ++i) cache.plan_use(e_key(jobs[x], i), int64_t(w));
        }
    bool room_only = false, out_of_room = false; // room_only: place into free space or not at all
    auto ensure = [&](const std::string &k, int64_t time, const std::function<std::optional<TileRef>()> &place,
                      const std::function<void(const TileRef &)> &emit_load) {
        bool fresh = false;
        TileRef tr;
        if (room_only) {
            auto t = cache.try_get(k, place, fresh);
            if (!t) {
                out_of_room = true;
                return tr;
            }
            tr = *t;
        } else {
            tr = cache.get(k, time, place, fresh);
        }
        if (fresh) emit_load(tr);
        return tr;
    };
    auto a_tile = [&](const Job &j, int64_t kb, int64_t time) {
        const int64_t rows = rows_of(j);
        return ensure(a_key(j, kb), time, [&] { return place_a(kb, rows); },
                      [&](const TileRef &tr) { e.load(tr, e.a_view(j.g, j.mc * R, rows, kb * e.ku), "A tile"); });
    };
    auto b_tile = [&](const Job &j, int64_t kb, int64_t time) {
        const int64_t grp = kb / BG;
        TileRef panel = ensure(b_key(j, kb), time, [&] { return place_b(kb); }, [&](const TileRef &tr) {
            OffchipView v = e.b_view(j.g, grp * BG * e.ku, j.nb * e.nu); // consecutive K blocks are consecutive rows
            v.outer[0].count = b_group_size(grp) * e.ku;
            e.load(tr, v, "B panel");
        });
        return prefix_rows(panel, (kb - grp * BG) * e.ku, e.ku);
    };
    // The preload's host loads come first, before any instruction that works on chip (so that
    // merge_preload_loads can join them): what an operand's tiles need on chip after their load
    // (a repeated row, a widening) waits, and so do the tiles it reads.
    bool on_chip_after_preload = false;
    std::vector<std::pair<Instruction, std::string>> after_preload;
    std::vector<TileRef> after_preload_tiles;
    auto on_chip = [&](Instruction in, const std::string &what) {
        if (on_chip_after_preload) after_preload.emplace_back(std::move(in), what);
        else e.emit(std::move(in), what);
    };
    auto done_with = [&](const TileRef &tr) {
        if (on_chip_after_preload) after_preload_tiles.push_back(tr);
        else cache.retire(tr);
    };
    auto e_tile = [&](const Job &j, int64_t i, int64_t time) {
        // The last row block of the output may be short: only its rows are loaded.
        const int64_t rows = rows_of(j);
        return ensure(e_key(j, i), time, [&] { return place_interleaved(stage_rows, 0, 1); }, [&](const TileRef &tr) {
            const TileRef wide = prefix_rows(tr, 0, rows * e.rpa);
            const chipsim::DType dt = kk.epilogue.operands[size_t(i)].dtype;
            const std::array<bool, 3> dims = kk.operand_dims[size_t(i)];
            if (dt == kk.acc_dtype && !dims[1] && dims[2] && rows > 1) {
                // The same row for every output row (a bias): it crosses the link once and is
                // repeated on chip, each of its rpa vector rows by a copy whose source steps 0.
                const TileRef once = cache.make_room(time, [&] { return place_interleaved(e.rpa, 1, 0, &wide); }, "an epilogue operand's row");
                e.load(once, e.out_view("E" + std::to_string(i), dims, j.g, j.mc * R, 1, j.nb * e.nu), "epilogue operand (one row)");
                for (int64_t part = 0; part < e.rpa; ++part) {
                    Instruction copy;
                    copy.op = Opcode::MemCopy;
                    TileRef dst = prefix_rows(wide, part, rows);
                    dst.stride = wide.stride * e.rpa;
                    TileRef src = prefix_rows(once, part, rows);
                    src.stride = 0;
                    copy.tiles = {dst, src};
                    on_chip(copy, "epilogue operand repeated");
                }
                done_with(once);
                return;
            }
            const OffchipView view = e.out_view("E" + std::to_string(i), dims, j.g, j.mc * R, rows, j.nb * e.nu, chipsim::dtype_bytes(dt));
            if (dt == kk.acc_dtype) return e.load(wide, view, "epilogue operand");
            // Read narrower (ChipLayoutRequests::input_dtype): loaded as it is, then widened
            // into the drained accumulator's layout by an unpacking cast (vxm_rows_unpacked).
            const int64_t narrow_rows = rows * e.rpa * chipsim::dtype_bytes(dt) / chipsim::dtype_bytes(kk.acc_dtype);
            const TileRef narrow = cache.make_room(time, [&] { return place_interleaved(narrow_rows, 1, 1); }, "a narrow epilogue operand");
            e.load(narrow, view, "epilogue operand (" + std::string(chipsim::dtype_name(dt)) + ")");
            Instruction widen;
            widen.op = Opcode::Vxm;
            widen.vop = chipsim::VxmOp::Cast;
            widen.dtype = dt;
            widen.out_dtype = kk.acc_dtype;
            widen.has_out_dtype = true;
            widen.tiles = {wide, narrow};
            on_chip(widen, "epilogue operand widened");
            done_with(narrow);
        });
    };
    if (preload) {
        on_chip_after_preload = true;
        for (size_t w = 0; w < jobs.size(); w += wave)
            for (size_t x = w; x < std::min(jobs.size(), w + wave); ++x) {
                for (int64_t kb = 0; kb < KB; ++kb) {
                    if (!image_on_chip) a_tile(jobs[x], kb, int64_t(w));
                    b_tile(jobs[x], kb, int64_t(w));
                }
                for (int64_t i = 0; i < ops_n; ++i) e_tile(jobs[x], i, int64_t(w));
            }
        on_chip_after_preload = false;
        for (auto &[in, what] : after_preload) e.emit(std::move(in), what);
        for (const TileRef &tr : after_preload_tiles) cache.retire(tr);
    }

    // Streamed kernels still load, before the kernel starts, the tiles of the first jobs that
    // fit beside one wave of drained tiles (the host link's bytes before the first matmul are
    // host I/O, like a preloaded kernel's); the rest streams in during the kernel. Measured:
    // room for two waves left bf16 1024^3 at 69.6 % of MXM peak, one wave 86.8 %.
    bool partial = false;
    if (!preload) {
        std::vector<TileRef> reserve;
        for (size_t i = 0; i < wave * size_t(kk.epilogue.empty() ? 1 : 2); ++i)
            if (auto tr = place_interleaved(stage_rows, 1, int(i % 2))) reserve.push_back(*tr);
        room_only = true;
        for (size_t x = 0; x < jobs.size() && !out_of_room; ++x)
            for (int64_t kb = 0; kb < KB && !out_of_room; ++kb) {
                const int64_t w = int64_t(x / wave * wave);
                if (!image_on_chip) a_tile(jobs[x], kb, w);
                if (!out_of_room) b_tile(jobs[x], kb, w);
                partial = true;
            }
        room_only = false;
        for (auto &tr : reserve) e.alloc.release(tr);
    }

    std::vector<int> wbuf(size_t(planes), 0), accn(size_t(planes), 0);
    // Preloaded work starts after the preload; later waves of a streamed kernel wait for their
    // own tiles only (waiting for every earlier load serialised each wave's loads and matmuls).
    bool ap = preload || partial;
    // Drain streams. At full width (4 streams for int32) a drain takes every eastward (MXM0/1)
    // or westward (MXM2/3) stream beside the other planes' activation streams and weight
    // installs, so the next wave's mm and mxm.lw wait for it: the MXMs idled ~10 % of 512^3
    // int8. A drain with a job of its plane after it on the other accumulator half has a whole
    // job (KB x R cycles) to finish in: one stream then suffices, and it hides under that job.
    // Only the last job of each plane drains at full width (nothing left to overlap).
    // Measured on plain preloaded matmuls only: convs (their windows of A span both west
    // banks) and fused epilogues keep the previous drain streams, placement and store order.
    const bool plain = preload && !kk.conv && kk.epilogue.empty();
    std::vector<size_t> last_job(size_t(planes), 0);
    for (size_t x = 0; x < jobs.size(); ++x) last_job[size_t(jobs[x].plane)] = x;
    auto drain_streams = [&](size_t x) -> int {
        const Job &j = jobs[x];
        if (!plain || !acc_db || x == last_job[size_t(j.plane)]) return 0;
        return e.rpa < KB ? 1 : 0; // R * rpa cycles at one stream, < the next job's KB * R
    };
    struct PendingStore {
        OffchipView view;
        TileRef result;
        std::vector<TileRef> temps;
    };
    std::vector<PendingStore> pending;
    auto flush_stores = [&](size_t n) {
        for (size_t i = 0; i < n; ++i) {
            e.store(pending[i].view, pending[i].result, "C tile");
            for (auto &tr : pending[i].temps) cache.retire(tr);
        }
        pending.erase(pending.begin(), pending.begin() + std::ptrdiff_t(n));
    };
    for (size_t w = 0; w < jobs.size(); w += wave) {
        if (w > 0 && !preload) ap = false;
        const size_t end = std::min(jobs.size(), w + wave);
        std::vector<std::vector<TileRef>> at(end - w), bt(end - w), et(end - w);
        for (size_t x = w; x < end; ++x) {
            for (int64_t kb = 0; kb < KB; ++kb) {
                if (!image_on_chip) at[x - w].push_back(a_tile(jobs[x], kb, int64_t(w)));
                bt[x - w].push_back(b_tile(jobs[x], kb, int64_t(w)));
            }
            for (int64_t i = 0; i < ops_n; ++i) et[x - w].push_back(e_tile(jobs[x], i, int64_t(w)));
        }
        std::vector<TileRef> accs;
        for (size_t x = w; x < end; ++x) {
            const Job &j = jobs[x];
            TileRef acc;
            acc.memory = acc_mem->name;
            acc.bank = j.plane;
            acc.base = acc_db ? (accn[size_t(j.plane)]++ % 2) * R : 0;
            acc.count = rows_of(j);
            accs.push_back(acc);
        }
        for (int64_t s = 0; s < KB; ++s)
            for (size_t x = w; x < end; ++x) {
                const Job &j = jobs[x];
                const int64_t kb = (s + j.plane) % KB;
                const int buf = wbuf[size_t(j.plane)]++ % t.mxm.weight_buffers;
                e.lw(j.plane, buf, bt[x - w][size_t(kb)], ap);
                if (image_on_chip) e.conv_mm(j.plane, buf, accs[x - w], j.g, j.mc * R, kb, s == 0, ap);
                else e.mm(j.plane, buf, accs[x - w], at[x - w][size_t(kb)], s > 0, ap);
            }
        for (size_t x = w; x < end; ++x) {
            const Job &j = jobs[x];
            const int64_t rows = rows_of(j);
            std::optional<TileRef> st;
            if (kk.stage_bank >= 0) {
                st = e.alloc.in_bank("MEM", kk.stage_bank, rows * e.rpa);
                if (!st)
                    throw Error("chip backend: MEM bank " + std::to_string(kk.stage_bank) + " (store_in) has no room for a " +
                                std::to_string(rows * e.rpa) + "-row output tile");
            } else {
                // The last wave's drains run at full width, two of them under the last mm: those
                // of MXM0 and MXM2 (different stream directions) land in different hemispheres,
                // as do MXM1's and MXM3's, so no two drains that overlap hold one hemisphere's
                // write ports. Earlier drains are slow and stay east, away from A's bank ports.
                const bool last_wave = plain && end == jobs.size() && wave > 1;
                const int h = last_wave ? 1 - (j.plane / 2 + j.plane % 2) % 2 : 1;
                st = cache.make_room(int64_t(w), [&] { return place_interleaved(rows * e.rpa, h, last_wave ? 1 : int(x % 2)); },
                                     "an output tile");
            }
            if (!st) throw Error("chip backend: no room in MEM for an output tile of " + std::to_string(rows * e.rpa) + " rows");
            if (kk.epilogue.empty()) st->count = rows * e.stored_rpa; // the drain packs
            e.drain(j.plane, *st, accs[x - w], ap, drain_streams(x));
            std::vector<TileRef> temps{*st};
            TileRef result = e.epilogue(*st, et[x - w], rows * e.rpa,
                                        [&](int64_t r, bool is_result, int h) {
                                            std::optional<TileRef> tr;
                                            if (is_result && kk.out_bank >= 0) {
                                                tr = e.alloc.in_bank("MEM", kk.out_bank, r);
                                                if (!tr)
                                                    throw Error("chip backend: MEM bank " + std::to_string(kk.out_bank) +
                                                                " (store_in of the output) has no room for " +
                                                                std::to_string(r) + " rows");
                                            } else {
                                                tr = cache.make_room(int64_t(w), [&] { return place_interleaved(r, h, 0); },
                                                                     "an epilogue tile");
                                            }
                                            if (!tr) throw Error("chip backend: no room in MEM for an epilogue tile");
                                            return *tr;
                                        },
                                        temps, ap);
            pending.push_back({e.out_view("C", {true, true, true}, j.g, j.mc * R, rows, j.nb * e.nu, e.c_bytes), result, temps});
        }
        // A wave's stores go out after the next wave's drains: a store holds the read port of
        // every slice its tile spans, and placed first it made the next drains wait for it.
        // Their tiles are retired only once the store is emitted, so no later tile reuses rows
        // a store has yet to read.
        if (!plain || end == jobs.size()) flush_stores(pending.size());
        else flush_stores(pending.size() - (end - w));
        cache.release_dead(int64_t(w));
    }
    summary += "tsp-mini matmul: " + std::to_string(jobs.size()) + " jobs of " + std::to_string(R) + "x" +
               std::to_string(e.nu) + " over " + std::to_string(kk.acc_bank >= 0 ? 1 : planes) + " MXM plane(s), " +
               std::to_string(KB) + " K blocks of " + std::to_string(e.ku) + "; " +
               (preload ? "A and B preloaded into MEM" : partial ? "A and B streamed per wave (the first tiles preloaded)" : "A and B streamed per wave") + "; accumulators " +
               (acc_db ? "double-buffered" : "single-buffered") +
               (kk.epilogue.empty() ? std::string() : "; VXM epilogue: " + kk.epilogue.description) + packed_summary(kk) + "\n";
    return std::move(e.ops);
}

// ---------------------------------------------------------------------------------------------
// npu-edge

/// Placement of a kernel's scratchpad tiles in equal slots (equal slots never fragment).
/// Which tiles stay is decided first, by Belady's rule over the whole sequence of needs (on a
/// miss the tile not needed for longest goes; dead tiles first, the one dead longest) on all
/// but `lead` slots. The slots are then handed out in turn: a missing tile goes into the slot
/// freed `lead` misses earlier, so its load can go out as soon as that slot's previous tile
/// has had its last use — the load queue runs ahead of the matmuls by `lead` tiles, and the
/// prefetching costs no extra misses.
struct SlotPlan {
    struct Need {
        int64_t time; ///< Step at which the tile is used.
        std::string key;
        bool hold = false; ///< Not a use: keeps the tile's slot taken until `time` if it is still there.
        bool reloadable = true; ///< A copy of DRAM data; false: made on chip, kept while it has uses.
    };
    std::vector<int> slot;      ///< Per need: its tile's slot (-1: a hold on a tile gone by then).
    std::vector<bool> load;     ///< Per need: the tile must be placed (loaded) for it.
    std::vector<int64_t> ready; ///< Per need that loads: first step at which the slot is free.

    /// Throws when one step needs more tiles than there are slots.
    SlotPlan(const std::vector<Need> &needs, int slots, int lead) {
        // reads: the uses that are not holds; fixed: the reads that cannot reload the tile (an
        // epilogue operand is loaded for its drain step and read again by the step's
        // instructions, which find no copy in DRAM if it went in between).
        // Keys become their rank in string order: the eviction scan below then visits the
        // resident tiles in the order it always has, without a string compared per step.
        std::vector<std::string> keys;
        for (auto &n : needs) keys.push_back(n.key);
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        std::vector<int> id(needs.size());
        for (size_t i = 0; i < needs.size(); ++i)
            id[i] = int(std::lower_bound(keys.begin(), keys.end(), needs[i].key) - keys.begin());
        std::vector<std::vector<int64_t>> uses(keys.size()), reads(keys.size()), fixed(keys.size());
        for (size_t i = 0; i < needs.size(); ++i) {
            const Need &n = needs[i];
            uses[size_t(id[i])].push_back(n.time); // a hold counts here: Belady keeps the tile until then
            if (!n.hold) reads[size_t(id[i])].push_back(n.time);
            if (!n.hold && !n.reloadable) fixed[size_t(id[i])].push_back(n.time);
        }
        auto next_in = [](const std::vector<int64_t> &u, int64_t now) {
            auto it = std::lower_bound(u.begin(), u.end(), now);
            return it == u.end() ? INT64_MAX : *it;
        };
        const size_t kept = size_t(std::max(1, slots - lead));
        std::map<int, int64_t> resident; // key -> last use so far (Belady over `kept` slots)
        std::vector<int> where(keys.size(), -1); // key -> its slot
        struct Free {
            int slot;
            int64_t ready;
        };
        std::vector<Free> free; // slots in the order they free up
        for (int s = 0; s < slots; ++s) free.push_back({s, 0});
        size_t free_head = 0;
        slot.resize(needs.size());
        load.resize(needs.size());
        ready.resize(needs.size());
        for (size_t i = 0; i < needs.size(); ++i) {
            const Need &n = needs[i];
            const int k_n = id[i];
            if (auto it = resident.find(k_n); it != resident.end()) {
                it->second = n.time;
                slot[i] = where[size_t(k_n)];
                continue;
            }
            if (n.hold) {
                slot[i] = -1;
                continue;
            }
            if (resident.size() >= kept) {
                int victim = -1;
                int64_t best_next = -1, best_last = INT64_MAX;
                for (auto &[k, last] : resident) {
                    const int64_t nu = next_in(uses[size_t(k)], n.time);
                    if (nu == n.time) continue; // needed by this very step
                    const int64_t next_read = next_in(reads[size_t(k)], n.time);
                    if (next_read != INT64_MAX && next_read == next_in(fixed[size_t(k)], n.time)) continue; // must stay for it
                    if (nu > best_next || (nu == best_next && last < best_last)) {
                        best_next = nu;
                        best_last = last;
                        victim = k;
                    }
                }
                if (victim < 0) throw Error("too many tiles at once");
                free.push_back({where[size_t(victim)], resident[victim] + 1});
                resident.erase(victim);
                where[size_t(victim)] = -1;
            }
            if (free_head == free.size()) throw Error("too many tiles at once");
            const Free f = free[free_head++];
            resident[k_n] = n.time;
            where[size_t(k_n)] = f.slot;
            slot[i] = f.slot;
            load[i] = true;
            ready[i] = f.ready;
        }
    }
};

/// npu-edge conv: the padded image rows one output tile's windows read (a band), brought into
/// the scratchpad once. Every tap's window is then rows of the band, so the image crosses DRAM
/// about once (a band's extra rows are the kernel's height less the stride), where loading each
/// tap's window moved it once a tap. Pixel p's K block b is scratchpad row
/// p * rows_per_pixel + b / blocks_per_row of the band, or of its shifted copy `half` rows
/// further for an odd block two to a row (int8 packed: an sxm.shift brings it to the lanes the
/// array reads, as for a matmul's packed rows).
struct ImageBands {
    int64_t blocks_per_row = 1, rows_per_pixel = 1;
    int64_t image_rows = 0; ///< Padded image rows of a full band.
    int64_t rows = 0;       ///< Scratchpad rows of one band buffer (its shifted copy included).
    int buffers = 1;        ///< Two where the tiles read several bands: the next loads as one runs.
};

/// The padded image rows the windows of `pixels` output pixels (whole output rows) read.
int64_t band_image_rows(const GemmKernel::Conv &c, int64_t pixels) {
    return std::min(c.hp, (pixels / c.ow - 1) * c.sh + (c.kh - 1) * c.dh + 1);
}

/// npu-edge's output tile rows: the directive's, else the default; a conv's whole output rows.
int64_t npu_tile_rows(const GemmKernel &kk, const chipsim::Target &t) {
    if (kk.tile_m > 0) return kk.conv ? std::max<int64_t>(1, kk.tile_m / kk.conv->ow) * kk.conv->ow : kk.tile_m;
    const int64_t rows = npu_default_tile(kk.m, kk.n, kk.k, kk.in_dtype, t).first;
    return kk.conv ? npu_conv_tile_rows(kk.conv->oh, kk.conv->ow, rows) * kk.conv->ow : rows;
}

/// The bands of an npu-edge conv kernel's image, or none where a pixel's K blocks do not fall
/// on whole scratchpad rows or the bands would take more than half of it (the kernel then loads
/// each tap's window).
std::optional<ImageBands> npu_image_bands(const GemmKernel &kk, const chipsim::Target &t) {
    if (!kk.conv) return std::nullopt;
    const auto &c = *kk.conv;
    const chipsim::MemoryDesc *spad = nullptr;
    for (auto &m : t.memories)
        if (!m.accumulator) spad = &m;
    const int64_t es = chipsim::dtype_bytes(kk.in_dtype), row_bytes = spad->row_bytes;
    const int64_t block_bytes = t.mxm_shape(kk.in_dtype).k * es, pixel_bytes = c.cp * es;
    if (pixel_bytes % block_bytes != 0 || row_bytes % block_bytes != 0) return std::nullopt;
    const int64_t tm = npu_tile_rows(kk, t), blocks = pixel_bytes / block_bytes;
    ImageBands b;
    // Two blocks a row where the kernel packs rows and a pixel is whole rows; else one block a
    // row, a block narrower than a row repeated to fill it (the array reads its first lanes).
    b.blocks_per_row = npu_packs_operand_rows(kk, t) && row_bytes == 2 * block_bytes && pixel_bytes % row_bytes == 0 ? 2 : 1;
    b.rows_per_pixel = blocks / b.blocks_per_row;
    b.image_rows = band_image_rows(c, tm);
    b.rows = b.image_rows * c.wp * blocks;
    b.buffers = kk.groups * ((kk.m + tm - 1) / tm) > 1 ? 2 : 1;
    // At most half the scratchpad, the rest to B's slots and the results: a band of a wide 1x1
    // conv's image (1024 channels of 14x14: three quarters of it) left B four slots and was
    // slower than loading each window (88,098 cycles against 79,557).
    if (2 * b.buffers * b.rows > spad->total_rows()) return std::nullopt;
    return b;
}

/// emit_npu with a conv's image read by bands (image_bands) where `bands_allowed`, else by each
/// tap's window.
std::vector<ChipOp> emit_npu_tiles(const GemmKernel &kk, const chipsim::TimingModel &model, std::string &summary, bool bands_allowed) {
    Emitter e(kk, model);
    const chipsim::Target &t = model.target();
    const chipsim::MemoryDesc *acc_mem = nullptr, *spad = nullptr;
    for (auto &m : t.memories) (m.accumulator ? acc_mem : spad) = &m;
    if (kk.acc_bank >= 0 && acc_mem->interleaved)
        throw Error("chip backend: " + t.name + "'s " + acc_mem->name + " interleaves rows over its banks (bank = row mod " +
                    std::to_string(acc_mem->banks) + "); store_in(ACC, bank) cannot pick a bank there: drop the bank");
    if ((kk.stage_bank >= 0 || kk.out_bank >= 0) && spad->interleaved)
        throw Error("chip backend: " + t.name + "'s " + spad->name +
                    " interleaves rows over its banks; store_in(..., bank) cannot pick a bank there: drop the bank");
    const int64_t acc_total = acc_mem->total_rows();
    const int64_t TM = npu_tile_rows(kk, t);
    const int64_t TN = kk.tile_n > 0 ? std::min(kk.tile_n, kk.n) : npu_default_tile(kk.m, kk.n, kk.k, kk.in_dtype, t).second;
    const int64_t nbt = TN / e.nu;
    if (TM * nbt > acc_total)
        throw Error("chip backend: an output tile of " + std::to_string(TM) + "x" + std::to_string(TN) + " needs " +
                    std::to_string(TM * nbt) + " accumulator rows, " + t.name + "'s ACC has " + std::to_string(acc_total) +
                    ": use a smaller tile");
    // Double-buffered accumulators only where both halves fit. One buffer costs nothing here:
    // the drains issue from the execute queue between the matmuls either way, and the next
    // tile's first matmul overwrites a row only after the drain has read it.
    const bool acc_db = kk.double_buffer && 2 * TM * nbt <= acc_total;
    const int64_t KB = kk.k / e.ku, NB = kk.n / e.nu, MT = (kk.m + TM - 1) / TM, NT = (NB + nbt - 1) / nbt;
    const int64_t ops_n = int64_t(kk.epilogue.operands.size());
    if ((kk.packed_out && !gemm_packs_output(kk, *kk.packed_out, t, false)) || (kk.copy_out && !gemm_packs_output(kk, *kk.copy_out, t, true)) ||
        (kk.packed_out && kk.copy_out))
        throw Error("chip backend: internal: this kernel cannot store C packed or a packed copy as asked");
    // Rows of the drained tile per accumulator row (fewer when an empty epilogue's drain packs),
    // and of C's copy.
    const int64_t drained_rpa = kk.epilogue.empty() ? model.drain_rows_per_acc_row(kk.acc_dtype, kk.out_dtype()) : e.rpa;
    const int64_t copy_rpa = kk.copy_out ? model.drain_rows_per_acc_row(kk.acc_dtype, *kk.copy_out) : 0;

    // One slot holds a drained output block (TM rows of nu 4-byte sums); A travels in groups of
    // KGa K blocks and B in groups of KGb K blocks of the tile's nbt column blocks, each group
    // one DMA (every transfer pays the DMA setup and the DRAM latency on its engine once).
    const int64_t S = std::max(TM * e.rpa, e.ku * nbt);
    // Packed operand rows (npu_packs_operand_rows): a DMA brings two K blocks of A (two column
    // blocks of B) in each scratchpad row, and an sxm.shift copies the second one into the
    // first lanes of another row, where the array reads it. A then travels in pairs of K blocks.
    const bool pack = npu_packs_operand_rows(kk, t);
    // A conv's image by bands: their buffers sit at the scratchpad's end, the slots before them.
    const std::optional<ImageBands> bands = bands_allowed ? npu_image_bands(kk, t) : std::nullopt;
    const bool raw = kk.conv && kk.conv->raw_image;
    if (raw && !bands) throw Error("chip backend: internal: an unpadded conv image must be read by bands");
    // An unpadded image's bands: the last scratchpad row holds zeros (the row before it, the
    // row of the image they are made from), which fill each band's padding.
    const int64_t zero_rows = raw ? 2 : 0;
    const int64_t band_rows = bands ? bands->buffers * bands->rows + zero_rows : 0;
    if (band_rows >= spad->total_rows()) throw Error("chip backend: a conv's image band does not fit " + spad->name);
    const int64_t slots = (spad->total_rows() - band_rows) / S;
    int64_t KGa = kk.conv ? 1 : std::clamp<int64_t>(S / TM, 1, KB); // a conv view has no dimension to spare
    int64_t KGb = std::clamp<int64_t>(S / (e.ku * nbt), 1, KB);
    const bool pack_a = pack && !kk.conv && KB % 2 == 0 && KGa >= 2;
    if (pack_a) KGa -= KGa % 2;
    const int64_t pair_bytes = 2 * e.ku * e.es;

    struct Job {
        int64_t g, mt, nb0, blocks; // column blocks nb0 .. nb0 + blocks - 1
        int64_t bn0, bblocks;       // the B groups' blocks (a part of a tile reads its whole tile's)
    };
    // The rule (tile_order "rows_snake"): row bands in order; within a band the column tiles
    // snake (every other band walks them backwards), so a band starts with the B tiles the
    // previous band ended with. "columns" orders put the column tiles outermost (each B tile
    // is used by consecutive tiles, the A bands come round again per column). When its A
    // band stays in the scratchpad, the last tile goes one column block at a time: each
    // block's drain and store then overlap the next block's matmuls, and only one block's
    // store is left after the last matmul (512^3 int8: 182k -> 176k cycles). An A band that
    // does not stay would be loaded once a block instead.
    const std::string order = kk.tile_order.empty() ? tile_order_values(t).front() : kk.tile_order;
    std::vector<Job> jobs;
    for (const TileWalkStep &w : tile_walk(order, kk.groups, MT, NT)) {
        const int64_t blocks = std::min(nbt, NB - w.column_tile * nbt);
        jobs.push_back({w.group, w.row_tile, w.column_tile * nbt, blocks, w.column_tile * nbt, blocks});
    }
    if (const Job last = jobs.back();
        !kk.conv && last.blocks > 1 && (KB + KGa - 1) / KGa * 2 <= slots) { // convs: measured slower
        jobs.pop_back();
        for (int64_t c = 0; c < last.blocks; ++c) jobs.push_back({last.g, last.mt, last.nb0 + c, 1, last.nb0, last.blocks});
    }
    auto rows_of = [&](const Job &j) { return std::min(TM, kk.m - j.mt * TM); };
    auto blocks_of = [&](const Job &j) { return j.blocks; };
    auto a_group = [&](int64_t grp) { return std::min(KGa, KB - grp * KGa); };
    auto b_group = [&](int64_t grp) { return std::min(KGb, KB - grp * KGb); };
    auto a_key = [&](const Job &j, int64_t kb) { return key("A", {kk.a_batched ? j.g : 0, j.mt, kb / KGa}); };
    auto b_key = [&](const Job &j, int64_t kb) { return key("B", {kk.b_batched ? j.g : 0, kb / KGb, j.bn0, j.bblocks}); };
    auto e_key = [&](const Job &j, int64_t i, int64_t nb) {
        auto d = kk.operand_dims[size_t(i)];
        return key("E", {i, d[0] ? j.g : 0, d[1] ? j.mt : 0, nb});
    };

    // Every tile a step needs, in the order of the steps (KB matmul steps, then one drain step
    // per column block): the order the loads are issued in.
    struct Need {
        int64_t time;
        std::string key;
        enum Kind { A, B, E, Out, Hold } kind; // Out: a drained tile or an epilogue temporary (no load)
        size_t job;
        int64_t arg; // A, B: the K block; E: operand * nbt + column block
    };
    std::vector<Need> needs;
    // A drained tile is read by its store long after the drain: the store engine moves one
    // tile at a time at DRAM speed, so block c's store ends about (c + 1) stores after the
    // drains. Its slot stays taken until about then (counted in matmul steps of the next tile);
    // reused at once, the next drain or load into it waited for the store (~7k cycles a tile).
    // The fp32 store's time also where C is packed (half the bytes) or copied (half again):
    // measured faster than either's own (ResNet-50 stage on npu-edge, linked: 3,520,220 cycles
    // against 3,540,379 with the bytes each stores).
    const int64_t store_cycles = model.dma_cycles(TM * e.rpa * spad->row_bytes);
    const int64_t step_cycles = nbt * std::max(model.mxm_rows_cycles(kk.in_dtype, TM), model.weight_install_cycles(e.ku));
    // A drain step has sub-steps: the drain, one per epilogue instruction, the store. Each
    // epilogue value is a tile whose slot is taken from its first write to its last read, so
    // temporaries reuse the slots of the ones already read.
    const VectorProgram &ep = kk.epilogue;
    // A copy (copy_out) is one more sub-step, after the epilogue: its cast packs the result.
    const int64_t temps_n = int64_t(ep.steps.size()), sub = 2 + temps_n + (kk.copy_out ? 1 : 0);
    auto value_key = [&](size_t x, int64_t c, int v) {
        if (v == 0) return key("O", {int64_t(x), c});
        if (v <= ops_n) return e_key(jobs[x], v - 1, jobs[x].nb0 + c);
        for (size_t s = 0; s < ep.steps.size(); ++s)
            if (ep.steps[s].dst == v) return key("T", {int64_t(x), c, int64_t(s)});
        throw Error("chip backend: internal: epilogue value " + std::to_string(v) + " has no producer");
    };
    int64_t time = 0;
    for (size_t x = 0; x < jobs.size(); ++x) {
        const Job &j = jobs[x];
        for (int64_t kb = 0; kb < KB; ++kb, ++time) {
            if (!bands) needs.push_back({time, a_key(j, kb), Need::A, x, kb});
            needs.push_back({time, b_key(j, kb), Need::B, x, kb});
        }
        const int64_t drained = time + blocks_of(j) * sub;
        for (int64_t c = 0; c < blocks_of(j); ++c, time += sub) {
            // Operands are loaded before the drain; the drained tile and the temporaries are
            // placed when written.
            for (int64_t i = 0; i < ops_n; ++i) needs.push_back({time, e_key(j, i, j.nb0 + c), Need::E, x, i * nbt + c});
            needs.push_back({time, value_key(x, c, 0), Need::Out, x, c});
            for (size_t s = 0; s < ep.steps.size(); ++s) {
                for (int v : ep.steps[s].srcs) needs.push_back({time + 1 + int64_t(s), value_key(x, c, v), Need::Out, x, c});
                needs.push_back({time + 1 + int64_t(s), value_key(x, c, ep.steps[s].dst), Need::Out, x, c});
            }
            if (kk.copy_out) {
                needs.push_back({time + 1 + temps_n, value_key(x, c, ep.result), Need::Out, x, c});
                needs.push_back({time + 1 + temps_n, key("P", {int64_t(x), c}), Need::Out, x, c});
                needs.push_back({time + sub - 1, key("P", {int64_t(x), c}), Need::Out, x, c});
            }
            needs.push_back({time + sub - 1, value_key(x, c, ep.result), Need::Out, x, c});
            const int64_t stored = drained + ((c + 1) * store_cycles + step_cycles - 1) / step_cycles;
            needs.push_back({stored, value_key(x, c, ep.result), Need::Hold, x, c});
            if (kk.copy_out) needs.push_back({stored, key("P", {int64_t(x), c}), Need::Hold, x, c});
        }
    }
    std::stable_sort(needs.begin(), needs.end(), [](const Need &a, const Need &b) { return a.time < b.time; });
    // Two slots of lead where the slots allow: measured best (1: loads wait for the slot just
    // freed; 4 and more: the slots taken from the cache cost more reloads than the loads gain).
    std::optional<SlotPlan> plan;
    {
        std::vector<SlotPlan::Need> seq;
        for (auto &n : needs)
            seq.push_back({n.time, n.key, n.kind == Need::Hold, n.kind != Need::Out && n.kind != Need::Hold});
        for (int lead = 2; lead >= 0 && !plan; --lead) {
            try {
                plan.emplace(seq, int(slots), lead);
            } catch (const Error &) {
                if (lead == 0)
                    throw Error("chip backend: the tiles one step needs do not fit in " + spad->name + " (" +
                                std::to_string(slots) + " slots of " + std::to_string(S) + " rows for a " + std::to_string(TM) +
                                "x" + std::to_string(TN) + " output tile); use a smaller tile");
            }
        }
    }
    auto slot_tile = [&](int slot, int64_t rows) {
        TileRef tr;
        tr.memory = spad->name;
        tr.base = slot * S;
        tr.count = rows;
        return tr;
    };
    // B packs per job: a tile of an odd number of column blocks keeps one block a row.
    auto packs_b = [&](const Job &j) { return pack && j.bblocks % 2 == 0; };
    // Copies the second K (or column) block of each of `rows` packed rows into the first lanes
    // of the `rows` rows that follow them.
    auto shift_second_half = [&](const TileRef &packed, int64_t rows, const std::string &what) {
        TileRef dst = packed;
        dst.base += rows;
        e.emit(sxm_shift(kk.in_dtype, dst, packed, -e.ku), what); // lane l takes lane l + ku
    };
    auto emit_load = [&](const Need &n, int slot) {
        const Job &j = jobs[n.job];
        const int64_t rows = rows_of(j);
        if (n.kind == Need::A) { // K-block-major: block q's rows follow block q-1's
            const int64_t grp = n.arg / KGa, gs = a_group(grp);
            if (pack_a) { // pair p's rows, then pair p+1's; the odd blocks' copies after them
                const int64_t pairs = gs / 2, ga = kk.a_batched ? j.g : 0;
                OffchipView v;
                v.tensor = kk.a_tensor;
                v.offset = kk.a_offset + ((ga * kk.m + j.mt * TM) * kk.k + grp * KGa * e.ku) * e.es;
                v.outer = {{pairs, pair_bytes}, {rows, kk.k * e.es}};
                v.inner_bytes = pair_bytes;
                e.load(slot_tile(slot, pairs * rows), v, "A tiles (packed)");
                shift_second_half(slot_tile(slot, pairs * rows), pairs * rows, "A odd K blocks");
                return;
            }
            OffchipView v = e.a_view(j.g, j.mt * TM, rows, grp * KGa * e.ku);
            if (gs > 1) v.outer.insert(v.outer.begin(), chipsim::ViewDim{gs, e.ku * e.es});
            e.load(slot_tile(slot, gs * rows), v, "A tiles");
        } else if (n.kind == Need::B) { // column block c's K rows, then block c+1's
            const int64_t grp = n.arg / KGb, gs = b_group(grp), blocks = j.bblocks;
            if (packs_b(j)) { // column pair p's K rows, then pair p+1's; the odd blocks' copies after them
                const int64_t pairs = blocks / 2, gb = kk.b_batched ? j.g : 0;
                OffchipView v;
                v.tensor = "B" + kk.tensor_suffix;
                v.offset = ((gb * kk.k + grp * KGb * e.ku) * kk.n + j.bn0 * e.nu) * e.es;
                v.outer = {{pairs, pair_bytes}, {gs * e.ku, kk.n * e.es}};
                v.inner_bytes = pair_bytes;
                e.load(slot_tile(slot, pairs * gs * e.ku), v, "B tiles (packed)");
                shift_second_half(slot_tile(slot, pairs * gs * e.ku), pairs * gs * e.ku, "B odd column blocks");
                return;
            }
            OffchipView v = e.b_view(j.g, grp * KGb * e.ku, j.bn0 * e.nu);
            v.outer[0].count = gs * e.ku;
            if (blocks > 1) v.outer.insert(v.outer.begin(), chipsim::ViewDim{blocks, e.nu * e.es});
            e.load(slot_tile(slot, blocks * gs * e.ku), v, "B tiles");
        } else if (n.kind == Need::E) {
            const int64_t i = n.arg / nbt, nb = j.nb0 + n.arg % nbt;
            e.load(slot_tile(slot, rows * e.rpa),
                   e.out_view("E" + std::to_string(i), kk.operand_dims[size_t(i)], j.g, j.mt * TM, rows, nb * e.nu),
                   "epilogue operand");
        }
    };
    // Issues, in step order, every load whose slot is free by step `now`.
    std::map<std::string, int> at; // key -> slot of the tiles placed so far
    size_t next = 0;
    auto prefetch = [&](int64_t now) {
        for (; next < needs.size(); ++next) {
            if (!plan->load[next]) continue;
            if (plan->ready[next] > now) return;
            const Need &n = needs[next];
            at[n.key] = plan->slot[next];
            emit_load(n, plan->slot[next]);
        }
    };
    auto slot_of = [&](const std::string &k) { return at.at(k); };
    // Image bands: job x reads band (g, mt); a band loads into the buffer after the last one's,
    // when the job before the first that reads it starts (the first band before any job).
    std::vector<int> band_of_job(jobs.size(), 0); // the buffer holding job x's band
    auto band_base = [&](int buffer) { return spad->total_rows() - zero_rows - (buffer + 1) * bands->rows; };
    // `rows` image rows from image row `y` of image g, `pixels_per_row` pixels each: the bytes as
    // they are where a pixel is whole rows of blocks two to a row (or one filling it), else a
    // block a row, repeated to fill it.
    auto image_rows_view = [&](int64_t g, int64_t y, int64_t rows, int64_t height, int64_t pixels_per_row) {
        const auto &c = *kk.conv;
        OffchipView v;
        v.tensor = kk.a_tensor;
        v.offset = kk.a_offset + (g * height + y) * pixels_per_row * c.cp * e.es;
        if (e.ku * e.es * bands->blocks_per_row == spad->row_bytes) {
            v.outer = {{rows, pixels_per_row * c.cp * e.es}};
            v.inner_bytes = pixels_per_row * c.cp * e.es;
        } else {
            v.outer = {{rows * pixels_per_row * (c.cp / e.ku), e.ku * e.es}, {spad->row_bytes / (e.ku * e.es), 0}};
            v.inner_bytes = e.ku * e.es;
        }
        return v;
    };
    TileRef zero_row; // made once from a row of the image, shifted out of every lane
    auto zero_fill = [&](TileRef dst) {
        if (zero_row.count == 0) {
            TileRef source = slot_tile(0, 1);
            source.base = spad->total_rows() - 2;
            OffchipView v = image_rows_view(0, 0, 1, 1, 1);
            v.outer.clear();
            v.inner_bytes = spad->row_bytes;
            e.load(source, v, "a row to make zeros from");
            zero_row = source;
            zero_row.base += 1;
            e.emit(sxm_shift(chipsim::DType::Int8, zero_row, source, spad->row_bytes), "zero row"); // every byte shifted out
        }
        Instruction in;
        in.op = Opcode::MemCopy;
        TileRef zeros = zero_row;
        zeros.count = dst.count;
        zeros.stride = 0;
        in.tiles = {dst, zeros};
        e.emit(in, "image band padding");
    };
    auto load_band = [&](const Job &j, int buffer) {
        const auto &c = *kk.conv;
        const int64_t image_rows = band_image_rows(c, rows_of(j));
        const int64_t rpp = bands->rows_per_pixel, half = image_rows * c.wp * rpp, first_row = j.mt * TM / c.ow * c.sh;
        TileRef at = slot_tile(0, half);
        at.base = band_base(buffer);
        if (!raw) {
            e.load(at, image_rows_view(j.g, first_row, image_rows, c.hp, c.wp), "image band");
        } else { // the image's rows where they fall in the band, zeros around them
            int64_t zeroed = 0; // band rows [zeroed, r) still to be zeroed before row r is written
            auto zero_to = [&](int64_t r) {
                if (r > zeroed) zero_fill(prefix_rows(at, zeroed, r - zeroed));
            };
            for (int64_t yy = 0; yy < image_rows;) {
                const int64_t y = first_row + yy - c.pad_top;
                if (y < 0 || y >= c.h) {
                    ++yy;
                    continue;
                }
                int64_t rows = 1; // rows without padding columns are one run on both sides
                while (c.wp == c.w && yy + rows < image_rows && y + rows < c.h) ++rows;
                const int64_t first = (yy * c.wp + c.pad_left) * rpp, count = ((rows - 1) * c.wp + c.w) * rpp;
                zero_to(first);
                e.load(prefix_rows(at, first, count), image_rows_view(j.g, y, rows, c.h, c.w), "image rows");
                zeroed = first + count;
                yy += rows;
            }
            zero_to(half);
        }
        if (bands->blocks_per_row == 2) shift_second_half(at, half, "image band odd K blocks");
    };
    auto same_band = [&](size_t a, size_t b) { return jobs[a].g == jobs[b].g && jobs[a].mt == jobs[b].mt; };
    if (bands) {
        int buffer = 0;
        for (size_t x = 1; x < jobs.size(); ++x) band_of_job[x] = same_band(x, x - 1) ? band_of_job[x - 1] : (buffer ^= bands->buffers - 1);
        load_band(jobs[0], 0);
    }
    // The tap's window for K block kb and output row r of job j: rows of j's band.
    auto band_window = [&](size_t x, int64_t kb, int64_t r) {
        const Job &j = jobs[x];
        const auto &c = *kk.conv;
        const int64_t k0 = kb * e.ku, tap = k0 / c.cp, block = k0 % c.cp / e.ku, dy = tap / c.kw, dx = tap % c.kw;
        const int64_t image_rows = band_image_rows(c, rows_of(j));
        TileRef a = slot_tile(0, c.ow);
        a.base = band_base(band_of_job[x]) +
                 ((r * c.sh + dy * c.dh) * c.wp + dx * c.dw) * bands->rows_per_pixel + block / bands->blocks_per_row +
                 block % bands->blocks_per_row * image_rows * c.wp * bands->rows_per_pixel;
        a.stride = c.sw * bands->rows_per_pixel;
        return a;
    };
    // The step whose B tile each B need is, to tell whether a later step's weights are on chip.
    std::map<int64_t, size_t> b_need_at;
    for (size_t k = 0; k < needs.size(); ++k)
        if (needs[k].kind == Need::B) b_need_at[needs[k].time] = k;
    auto weights_on_chip = [&](int64_t step) {
        auto it = b_need_at.find(step);
        return it != b_need_at.end() && (!plan->load[it->second] || it->second < next);
    };
    int wbuf = 0, accn = 0;
    time = 0;
    for (size_t x = 0; x < jobs.size(); ++x) {
        const Job &j = jobs[x];
        const int64_t rows = rows_of(j), blocks = blocks_of(j);
        const int64_t base = acc_db ? (accn++ % 2) * TM * nbt : 0;
        auto install = [&](int64_t kb, int64_t c) {
            TileRef b = slot_tile(slot_of(b_key(j, kb)), e.ku);
            const int64_t col = j.nb0 - j.bn0 + c; // packed: even columns first, then their odd partners
            const int64_t at_col = packs_b(j) ? (col % 2) * (j.bblocks / 2) + col / 2 : col;
            b.base += (at_col * b_group(kb / KGb) + kb % KGb) * e.ku;
            const int buf = wbuf++ % t.mxm.weight_buffers;
            e.lw(0, buf, b, false);
            return buf;
        };
        // Each install is emitted a block ahead of its matmuls where the weights are on chip by
        // then: the in-order exec queue hands it to the weight port, and it runs under the
        // matmuls before it instead of stopping the array between them.
        int64_t ahead_kb = -1, ahead_c = -1; // the block installed, not yet multiplied
        int ahead_buffer = 0;
        for (int64_t kb = 0; kb < KB; ++kb, ++time) {
            prefetch(time);
            if (bands && kb == 0 && (x == 0 || !same_band(x, x - 1))) // the next band loads while this one is read
                for (size_t y = x + 1; y < jobs.size(); ++y)
                    if (!same_band(y, y - 1)) {
                        load_band(jobs[y], band_of_job[y]);
                        break;
                    }
            TileRef a;
            if (!bands) {
                a = slot_tile(slot_of(a_key(j, kb)), rows);
                const int64_t ka = kb % KGa;
                a.base += (pack_a ? (ka % 2) * (a_group(kb / KGa) / 2) + ka / 2 : ka) * rows;
            }
            for (int64_t c = 0; c < blocks; ++c) {
                const int buf = ahead_kb == kb && ahead_c == c ? ahead_buffer : install(kb, c);
                ahead_kb = ahead_c = -1;
                if (t.mxm.weight_buffers > 1) {
                    if (c + 1 < blocks) ahead_kb = kb, ahead_c = c + 1;
                    else if (kb + 1 < KB && weights_on_chip(time + 1)) ahead_kb = kb + 1, ahead_c = 0;
                    if (ahead_kb >= 0) ahead_buffer = install(ahead_kb, ahead_c);
                }
                TileRef acc;
                acc.memory = acc_mem->name;
                acc.base = base + (j.nb0 + c) % nbt * TM;
                acc.count = rows;
                if (!bands) {
                    e.mm(0, buf, acc, a, kb > 0, false);
                    continue;
                }
                // One matmul per output row: its window is every sw-th pixel of a band row.
                for (int64_t r = 0; r < rows / kk.conv->ow; ++r)
                    e.mm(0, buf, prefix_rows(acc, r * kk.conv->ow, kk.conv->ow), band_window(x, kb, r), kb > 0, false);
            }
        }
        for (int64_t c = 0; c < blocks; ++c, time += sub) {
            prefetch(time);
            const int64_t nb = j.nb0 + c;
            std::vector<TileRef> operands;
            for (int64_t i = 0; i < ops_n; ++i) operands.push_back(slot_tile(slot_of(e_key(j, i, nb)), rows * e.rpa));
            const TileRef st = slot_tile(slot_of(key("O", {int64_t(x), c})), rows * drained_rpa);
            TileRef acc;
            acc.memory = acc_mem->name;
            acc.base = base + (j.nb0 + c) % nbt * TM;
            acc.count = rows;
            e.drain(0, st, acc, false);
            std::vector<TileRef> temps;
            int64_t s = 0;
            TileRef result = e.epilogue(st, operands, rows * e.rpa,
                                        [&](int64_t r, bool, int) {
                                            prefetch(time + 1 + s);
                                            return slot_tile(slot_of(key("T", {int64_t(x), c, s++})), r);
                                        },
                                        temps, false);
            std::optional<TileRef> copy;
            if (kk.copy_out) {
                prefetch(time + 1 + temps_n);
                copy = slot_tile(slot_of(key("P", {int64_t(x), c})), rows * copy_rpa);
                Instruction in;
                in.op = Opcode::Vxm;
                in.vop = chipsim::VxmOp::Cast;
                in.dtype = kk.epilogue.out_dtype;
                in.out_dtype = *kk.copy_out;
                in.has_out_dtype = true;
                in.tiles = {*copy, result};
                e.emit(in, "C copy");
            }
            prefetch(time + sub - 1);
            e.store(e.out_view("C", {true, true, true}, j.g, j.mt * TM, rows, nb * e.nu, e.c_bytes),
                    result, "C tile");
            if (copy)
                e.store(e.out_view("Cb", {true, true, true}, j.g, j.mt * TM, rows, nb * e.nu, chipsim::dtype_bytes(*kk.copy_out)), *copy,
                        "C copy tile");
        }
    }
    summary += t.name + " matmul: " + std::to_string(jobs.size()) + " output tiles of " + std::to_string(TM) + "x" +
               std::to_string(TN) + " in " + order + " order, " + std::to_string(KB) + " K blocks of " + std::to_string(e.ku) + "; " +
               std::to_string(slots) + " " + spad->name + " slots of " + std::to_string(S) +
               (bands ? " rows (the image by bands of " + std::to_string(bands->image_rows) + " padded rows, " +
                            (raw ? std::string("read from the unpadded image, the padding zeroed on chip, ") : std::string()) +
                            std::to_string(bands->buffers) + " band buffer(s) of " + std::to_string(bands->rows) + " rows; B in groups of " +
                            std::to_string(KGb) + " K blocks)"
                      : " rows (A in groups of " + std::to_string(KGa) + " K blocks, B of " + std::to_string(KGb) + ")") +
               (pack ? std::string(pack_a ? "; A and B" : "; B") + " rows packed two blocks a row, the second shifted on the SXM"
                     : std::string()) +
               ", loads prefetched in step order; accumulators " + (acc_db ? "double-buffered" : "single-buffered") +
               (kk.epilogue.empty() ? std::string() : "; VXM epilogue: " + kk.epilogue.description) +
               packed_summary(kk) +
               (kk.copy_out ? std::string("; a ") + chipsim::dtype_name(*kk.copy_out) + " copy of C stored to DRAM too" : std::string()) +
               "\n";
    return std::move(e.ops);
}

/// npu-edge: a conv reads its image by bands where they and the tiles fit the scratchpad, by
/// each tap's window otherwise.
std::vector<ChipOp> emit_npu(const GemmKernel &kk, const chipsim::TimingModel &model, std::string &summary) {
    if (!kk.conv) return emit_npu_tiles(kk, model, summary, false);
    if (kk.conv->raw_image) return emit_npu_tiles(kk, model, summary, true); // no padded image to fall back on
    if (npu_image_bands(kk, model.target())) {
        try {
            return emit_npu_tiles(kk, model, summary, true);
        } catch (const Error &) {
            // the bands leave too few slots for the rest
        }
    }
    // An unpadded 1x1 conv of stride 1 is a matmul over each image's pixels, whose A rows are
    // the image's rows as they are: K blocks then pack two a row and travel in groups, as any
    // matmul's (1x1 512->128 at 28^2: 88,514 -> 73,173 cycles against a window per K block).
    const auto &c = *kk.conv;
    if (c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && c.hp == c.oh && c.wp == c.ow) {
        GemmKernel pixels = kk;
        pixels.conv.reset();
        // The conv's default tile is whole output rows; over pixels the matmul's own applies
        // (784 x 512 x 128: 74,808 cycles at 252 rows, 73,173 at 256, when measured; the rows
        // spread evenly, 196, are faster there, 60,568 against 66,862 today, but slower at 64
        // output channels, 45,888 against 44,147 at 252: not a rule).
        GemmKernel defaulted = kk;
        defaulted.tile_m = 0;
        if (kk.tile_m == npu_tile_rows(defaulted, model.target())) pixels.tile_m = 0;
        summary += "a 1x1 conv as a matmul over the image's pixels; ";
        return emit_npu_tiles(pixels, model, summary, false);
    }
    return emit_npu_tiles(kk, model, summary, false);
}

} // namespace

int64_t npu_conv_tile_rows(int64_t output_rows, int64_t output_width, int64_t pixels) {
    const int64_t most = std::max<int64_t>(1, pixels / output_width), tiles = (output_rows + most - 1) / most;
    return (output_rows + tiles - 1) / tiles;
}

std::pair<int64_t, int64_t> npu_default_tile(int64_t m, int64_t n, int64_t k, chipsim::DType in_dtype, const chipsim::Target &t) {
    const chipsim::MxmShape &unit = t.mxm_shape(in_dtype);
    const int64_t tm = std::max<int64_t>(1, std::min<int64_t>(m, 256));
    int64_t acc_rows = 0, spad_rows = 0;
    for (auto &mem : t.memories) (mem.accumulator ? acc_rows : spad_rows) = mem.total_rows();
    const int64_t wide = std::max<int64_t>(1, std::min<int64_t>(4, acc_rows / tm)) * unit.n, narrow = 2 * unit.n;
    const int64_t n_up = (n + unit.n - 1) / unit.n * unit.n;
    // One row of tiles whose weights (B, k x n) take longer to cross DRAM than the whole
    // problem takes to multiply: every column the accumulator holds in one tile. B then comes
    // in the largest transfers and there is one tile's tail, where narrower tiles paid both per
    // tile (3x3 conv 512->512 at 7x7 int8: 231,861 cycles at 128 columns, 178,969 at 512).
    const chipsim::TimingModel model(t);
    const chipsim::Roofline weights = model.problem_bound({m * n * k, in_dtype, k * n * chipsim::dtype_bytes(in_dtype), 0});
    if (m <= tm && weights.limiter != "compute") return {tm, std::min(n_up, std::max<int64_t>(1, acc_rows / tm) * unit.n)};
    const int64_t tiles = (m + tm - 1) / tm * ((n_up + wide - 1) / wide);
    const bool band_fits = tm * ((k + unit.k - 1) / unit.k) <= spad_rows / 2;
    return {tm, std::min(n_up, tiles < 4 && band_fits ? std::min(wide, narrow) : std::max(wide, narrow))};
}

bool gemm_packs_output(const GemmKernel &kernel, chipsim::DType dtype, const chipsim::Target &t, bool copy) {
    const VectorProgram &ep = kernel.epilogue;
    // Packing halves the rows only when a bf16 accumulator row is whole vector rows (npu-edge:
    // 32 columns, one 64-byte row; fp32, two).
    const int64_t bf16_row_bytes = kernel.acc_dtype == chipsim::DType::FP32 ? t.mxm_shape(kernel.in_dtype).n * 2 : 0;
    const bool narrows = dtype == chipsim::DType::BF16 &&
                         kernel.acc_dtype == chipsim::DType::FP32 && ep.out_dtype == chipsim::DType::FP32 && bf16_row_bytes > 0 &&
                         bf16_row_bytes % t.vector_bytes == 0;
    if (copy) return narrows && t.issue == chipsim::IssueKind::Dynamic && t.dram.bytes > 0 && kernel.tensor_suffix.empty();
    return narrows && (ep.empty() || ep.steps.back().dst == ep.result);
}

bool npu_packs_operand_rows(const GemmKernel &kernel, const chipsim::Target &t) {
    if (kernel.pack_rows == 0) return false;
    const std::vector<int64_t> legal = blocks_per_row_values(t, kernel.in_dtype);
    const bool fits = legal.back() == 2;
    if (kernel.pack_rows == 1 && !fits)
        throw Error("chip backend: blocks_per_row(2): " + t.name + " cannot put two " + chipsim::dtype_name(kernel.in_dtype) +
                    " MXM blocks in one on-chip row; use blocks_per_row(1)");
    return fits;
}

std::vector<int64_t> blocks_per_row_values(const chipsim::Target &t, chipsim::DType in_dtype) {
    // Only the dynamically issued kernel (emit_npu) packs; tsp-mini's rows are one block wide.
    if (t.issue == chipsim::IssueKind::Static || !t.mxm_supports(in_dtype)) return {1};
    const chipsim::MxmShape &unit = t.mxm_shape(in_dtype);
    const int64_t es = chipsim::dtype_bytes(in_dtype);
    int64_t row_bytes = 0;
    for (auto &mem : t.memories)
        if (!mem.accumulator) row_bytes = mem.row_bytes;
    if (unit.k == unit.n && 2 * unit.k * es == row_bytes && t.sxm.count > 0) return {1, 2};
    return {1};
}

bool npu_reads_image_bands(const GemmKernel &kernel, const chipsim::TimingModel &model) {
    if (model.target().issue == chipsim::IssueKind::Static || !kernel.conv) return false;
    return npu_image_bands(kernel, model.target()).has_value();
}

std::vector<TileWalkStep> tile_walk(const std::string &order, int64_t groups, int64_t row_tiles, int64_t column_tiles) {
    const bool columns_outer = order.starts_with("columns"), snake = order.ends_with("_snake");
    const int64_t outer = columns_outer ? column_tiles : row_tiles, inner = columns_outer ? row_tiles : column_tiles;
    std::vector<TileWalkStep> walk;
    for (int64_t g = 0; g < groups; ++g)
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t q = 0; q < inner; ++q) {
                const int64_t x = snake && (g * outer + o) % 2 ? inner - 1 - q : q;
                walk.push_back({g, columns_outer ? x : o, columns_outer ? o : x});
            }
    return walk;
}

std::vector<std::string> tile_order_values(const chipsim::Target &t, int64_t row_tiles, int64_t column_tiles) {
    // Two groups: a walk depends on a group only through its parity, so orders that walk two
    // groups alike walk any number alike.
    std::vector<std::string> distinct;
    std::vector<std::vector<TileWalkStep>> walks;
    for (const std::string &order : tile_order_values(t)) {
        std::vector<TileWalkStep> walk = tile_walk(order, 2, row_tiles, column_tiles);
        if (std::find(walks.begin(), walks.end(), walk) != walks.end()) continue;
        walks.push_back(std::move(walk));
        distinct.push_back(order);
    }
    return distinct;
}

std::vector<std::string> tile_order_values(const chipsim::Target &t) {
    if (t.issue == chipsim::IssueKind::Static) return {};
    return {"rows_snake", "rows", "columns_snake", "columns"};
}

std::vector<ChipOp> emit_gemm(const GemmKernel &kernel, const chipsim::TimingModel &model, std::string &summary) {
    if (model.target().issue == chipsim::IssueKind::Static) return emit_tsp(kernel, model, summary);
    return emit_npu(kernel, model, summary);
}

} // namespace tessera::internal::chip
