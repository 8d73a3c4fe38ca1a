// Scaled dot-product attention: MXM, VXM softmax, MXM (vector_kernels.h).
//
// The trick is to compute everything transposed, keys down the accumulator rows:
//   Sᵀ[key, q] = K[key, :] · Qᵀ[:, q]        (MXM: K streams as activations, Qᵀ is the weights)
// Then a query's softmax over keys is a reduction over accumulator rows — vxm.reduce.rows over
// the drained tile, in time — and the probabilities come out as Pᵀ[key, q], which is exactly
// the weight layout of the second matmul:
//   Oᵀ[dv, q] = Vᵀ[dv, :] · Pᵀ[:, q]         (MXM: Vᵀ streams, Pᵀ is the weights)
// so no transpose runs on chip; the host lays out Qᵀ, K, Vᵀ (and crops Oᵀ), as it pads matmul
// operands. The scale 1/√D is applied by the drain (scale=), exactly as the reference rounds
// it (fp32 × fp32, one rounding).
//
// A job is one head and one block of queries as wide as the MXM's bf16 width, which must be one
// bf16 vector (32 with 64-byte vectors); a drained fp32 row is then two vectors of fp32 lanes
// (16 queries each), so each half-block runs the softmax on every other drained row (row stride
// 2): m = max, E = exp(S - m), s = Σ E, P = E / s (rounded to bf16, one fp32 lane's worth of
// lanes). The two halves are packed into one bf16 weight row by an sxm.shift and a vxm.add.
//
// Causal: key j is hidden from query i when j > i. Keys past the block's last query are hidden
// from all the block's queries, so the job stops there (K_end = min(Lk, q0 + nu): fewer MXM
// rows, fewer VXM rows, fewer weight installs); inside, a select against a constant 0/1 table (visible iff
// j <= i, one table for every block: a window of it slides with the block) sets hidden scores
// to the lowest float, as the reference does, so exp gives exactly 0.
//
// Accumulators: on tsp-mini jobs go round-robin to the four planes, each plane holding a job's
// Sᵀ and Oᵀ; on npu-edge two jobs alternate in ACC when both fit. Q, K and V are rounded to
// bf16 on the host (fp32 operands of the MXM, as for matmul); P is rounded to bf16 on the VXM.
#include <algorithm>
#include <limits>
#include <optional>

#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_kernels.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

namespace {

using chipsim::ChainStep;
using chipsim::DType;
using chipsim::Instruction;
using chipsim::Opcode;
using chipsim::TileRef;
using chipsim::VxmOp;

} // namespace

void compile_attention(ChipProgram &cp, const AttentionOp &op, const std::vector<int64_t> &shape) {
    const chipsim::Target &t = cp.target;
    const std::vector<int64_t> qs = constant_shape(op.q), ks = constant_shape(op.k), vs = constant_shape(op.v);
    const int rank = int(qs.size());
    const int64_t H = rank == 3 ? qs[0] : 1, Lq = qs[size_t(rank - 2)], D = qs[size_t(rank - 1)];
    const int64_t Lk = ks[size_t(rank - 2)], Dv = vs[size_t(rank - 1)];
    if (!t.mxm_supports(DType::BF16)) throw Error("chip backend: the MXM of " + t.name + " does not take bf16 (attention)");
    const chipsim::MxmShape &unit = t.mxm_shape(DType::BF16);
    const int64_t ku = unit.k, nu = unit.n;
    // Queries across lanes: a half-block is one fp32 vector, a block of nu queries one bf16
    // vector; a K block of a row (ku bf16 elements) is one vector too.
    const int64_t kLanes = t.lanes(DType::FP32), vl = t.vector_bytes;
    if (nu != t.lanes(DType::BF16) || ku != t.lanes(DType::BF16))
        throw Error("chip backend: the attention kernel packs a block of queries into one bf16 vector, so it needs a bf16 MXM of " +
                    std::to_string(t.lanes(DType::BF16)) + "x" + std::to_string(t.lanes(DType::BF16)) + " (one bf16 vector of " +
                    std::to_string(vl) + " bytes each way); the MXM of " + t.name + " is " + std::to_string(ku) + "x" +
                    std::to_string(nu));
    const chipsim::MemoryDesc *acc_mem = nullptr;
    for (auto &m : t.memories)
        if (m.accumulator) acc_mem = &m;
    const int64_t acc_rows = acc_mem->interleaved ? acc_mem->total_rows() : acc_mem->rows_per_bank;
    const int64_t Dp = (D + ku - 1) / ku * ku, Lqp = (Lq + nu - 1) / nu * nu, Lkp = (Lk + ku - 1) / ku * ku;
    if (Lk + Dv > acc_rows)
        throw Error("chip backend: attention with " + std::to_string(Lk) + " keys and " + std::to_string(Dv) +
                    " value features needs " + std::to_string(Lk + Dv) + " accumulator rows per job; " + t.name + " has " +
                    std::to_string(acc_rows) + " (split the keys or the heads)");
    const int planes = t.mxm.count;
    const int64_t sets = std::min<int64_t>(2, acc_rows / (Lk + Dv)); // accumulator regions per plane

    // Program tensors. Source dims: rank 3 [H, L, D], rank 2 [L, D] (the head index is 0).
    auto dims = [&](std::vector<int> three) {
        if (rank == 3) return three;
        return std::vector<int>{three[1], three[2]};
    };
    declare(cp, "K", op.k.name(), DType::BF16, {H, Lk, Dp}, ks, dims({0, 1, 2}), {}, false);
    declare(cp, "QT", op.q.name(), DType::BF16, {H, Dp, Lqp}, qs, dims({0, 2, 1}), {}, false);
    declare(cp, "VT", op.v.name(), DType::BF16, {H, Dv, Lkp}, vs, dims({0, 2, 1}), {}, false);
    const int64_t mask_rows = Lqp + nu; // table row u: visible iff u <= lane + Lqp
    if (op.causal) {
        declare(cp, "MASK", "", DType::FP32, {mask_rows, kLanes}, {}, {}, {}, false);
        std::vector<float> &table = cp.tensors.back().constant;
        table.assign(size_t(mask_rows * kLanes), 0.0f);
        for (int64_t u = 0; u < mask_rows; ++u)
            for (int64_t l = 0; l < kLanes; ++l) table[size_t(u * kLanes + l)] = u <= l + Lqp ? 1.0f : 0.0f;
    }
    declare(cp, "O", cp.outputs.at(0), DType::FP32, {H, Dv, Lqp}, shape, dims({0, 2, 1}), {}, true);

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    const int64_t k_tiles = Dp / ku, key_blocks = Lkp / ku, q_blocks = Lqp / nu;
    // tsp-mini: preload everything when it leaves room for the jobs' working tiles.
    // tsp-mini: every plane gets its own copy of K and Vᵀ — the four jobs of a wave stream the
    // same activations, and one tile read by four planes would serialise them on its bank port.
    const int64_t copies = e.streaming() ? planes : 1;
    const int64_t input_rows = H * (copies * (k_tiles * Lk + key_blocks * Dv) + q_blocks * k_tiles * ku) + (op.causal ? mask_rows : 0);
    const bool preload = e.streaming() && input_rows <= vector_memory(t).total_rows() / 2; // half of MEM
    TileRef mask;
    if (op.causal) e.load(mask = e.tile_anywhere(mask_rows, 1, "the causal mask"), strided_rows("MASK", 0, mask_rows, vl, vl), "mask");
    std::vector<std::vector<TileRef>> k_t(static_cast<size_t>(H)), v_t(static_cast<size_t>(H));
    std::vector<std::vector<std::vector<TileRef>>> q_t(static_cast<size_t>(H), std::vector<std::vector<TileRef>>(static_cast<size_t>(q_blocks)));
    auto load_head = [&](int64_t h) { // K and Vᵀ: every job of the head reads them
        for (int64_t c = 0; c < copies; ++c) { // tile (copy c, block kb) at c * blocks + kb
            for (int64_t kb = 0; kb < k_tiles; ++kb) {
                k_t[size_t(h)].push_back(e.tile_anywhere(Lk, 0, "K"));
                e.load(k_t[size_t(h)].back(), strided_rows("K", (h * Lk * Dp + kb * ku) * 2, Lk, Dp * 2, vl), "K tile");
            }
            for (int64_t kb = 0; kb < key_blocks; ++kb) {
                v_t[size_t(h)].push_back(e.tile_anywhere(Dv, 0, "V"));
                e.load(v_t[size_t(h)].back(), strided_rows("VT", (h * Dv * Lkp + kb * ku) * 2, Dv, Lkp * 2, vl), "V tile");
            }
        }
    };
    auto load_queries = [&](int64_t h, int64_t qb) {
        for (int64_t kb = 0; kb < k_tiles; ++kb) {
            q_t[size_t(h)][size_t(qb)].push_back(e.tile_anywhere(ku, 1, "Q", /*spread=*/true)); // read 4 rows a cycle
            e.load(q_t[size_t(h)][size_t(qb)].back(), strided_rows("QT", ((h * Dp + kb * ku) * Lqp + qb * nu) * 2, ku, Lqp * 2, vl),
                   "Q tile");
        }
    };
    if (preload)
        for (int64_t h = 0; h < H; ++h) {
            load_head(h);
            for (int64_t qb = 0; qb < q_blocks; ++qb) load_queries(h, qb);
        }
    e.set_after_preload(preload);

    std::vector<int> wbuf(size_t(planes), 0), region(size_t(planes), 0);
    int64_t job = 0, max_rows = 0;
    const double scale = double(float(op.scale)); // the reference multiplies by the fp32 constant
    const double lowest = double(std::numeric_limits<float>::lowest());
    // One job's place: its head, queries, visible keys, plane and accumulator region.
    struct Job {
        int64_t index = 0, h = 0, qb = 0, q0 = 0, k_end = 0, copy = 0, base = 0;
        int plane = 0;
    };
    auto acc = [&](const Job &j, int64_t first, int64_t rows) {
        TileRef a;
        a.memory = acc_mem->name;
        a.bank = acc_mem->interleaved ? -1 : j.plane;
        a.base = j.base + first;
        a.count = rows;
        return a;
    };
    auto lw = [&](const Job &j, const TileRef &w) {
        Instruction in;
        in.op = Opcode::MxmLw;
        in.dtype = DType::BF16;
        in.mxm = j.plane;
        in.buffer = wbuf[size_t(j.plane)]++ % t.mxm.weight_buffers;
        in.tiles = {w};
        e.emit(in, "weights");
        return in.buffer;
    };
    auto mm = [&](const Job &j, int buffer, const TileRef &a_acc, const TileRef &act, bool accumulate) {
        Instruction in;
        in.op = Opcode::MxmMm;
        in.dtype = DType::BF16;
        in.mxm = j.plane;
        in.buffer = buffer;
        in.accumulate = accumulate;
        in.tiles = {a_acc, act};
        e.emit(in, "matmul");
    };
    auto drain = [&](const TileRef &dst, const TileRef &a_acc, std::optional<double> s) {
        Instruction in;
        in.op = Opcode::MxmDrain;
        in.dtype = DType::FP32;
        in.out_dtype = DType::FP32;
        in.has_out_dtype = true;
        if (s) {
            in.has_scale = true;
            in.scale = *s;
        }
        in.tiles = {dst, a_acc};
        e.emit(in, "drain");
    };
    // Sᵀ = K · Qᵀ, scaled on the way out of the accumulators into a tile `block` owns.
    auto scores = [&](const Job &j, BlockTiles &block) {
        for (int64_t kb = 0; kb < k_tiles; ++kb)
            mm(j, lw(j, q_t[size_t(j.h)][size_t(j.qb)][size_t(kb)]), acc(j, 0, j.k_end),
               VectorEmitter::rows_of(k_t[size_t(j.h)][size_t(j.copy * k_tiles + kb)], 0, j.k_end), kb > 0);
        const TileRef s_t = e.tile(2 * j.k_end, 0, int(j.index % 2), "attention scores");
        block.own(s_t);
        drain(s_t, acc(j, 0, j.k_end), scale);
        return s_t;
    };
    // The row of a statistic (a max, a sum) that the next step reads by broadcast beside `s`,
    // once per row of `s`: where the memory interleaves rows across banks, on a bank `s` does
    // not use (its rows every other row use half the banks), so that bank serves only the
    // broadcast and not `s`'s reads and writes too (scores over 512 keys: 768 cycles a step
    // instead of 512).
    auto statistic_row = [&](BlockTiles &block, const TileRef &s, const std::string &what) {
        if (e.streaming()) return block.fresh(1, {s}, VectorEmitter::other_side(s), what, {s});
        const TileRef two = block.fresh(2, {s}, 0, what);
        const std::vector<int32_t> used = e.model().resolve(s).banks;
        for (int64_t r = 0; r < 2; ++r) {
            const TileRef one = VectorEmitter::rows_of(two, r, 1);
            if (std::find(used.begin(), used.end(), e.model().resolve(one).banks.at(0)) == used.end()) return one;
        }
        return VectorEmitter::rows_of(two, 0, 1);
    };
    // The softmax over keys of the scores: the job's probabilities Pᵀ (bf16).
    auto softmax = [&](const Job &j, BlockTiles &block, const TileRef &s_t) {
        // One half-block (a vector of fp32 lanes) at a time.
        TileRef half[2];
        for (int hf = 0; hf < 2; ++hf) {
            TileRef s = VectorEmitter::rows_of(s_t, hf, j.k_end, 2);
            if (op.causal) {
                const TileRef window = VectorEmitter::rows_of(mask, Lqp - (j.q0 + hf * kLanes), j.k_end);
                TileRef m = block.replace(s, {window, s}, VectorEmitter::side_of(s), "masked scores");
                e.vxm(VxmOp::Select, DType::FP32, DType::FP32, m, {window, s}, lowest, {}, "causal mask");
                s = m;
            }
            const TileRef mx = statistic_row(block, s, "max over keys");
            e.reduce_rows(VxmOp::Max, DType::FP32, mx, s, "max over keys");
            const TileRef mb = VectorEmitter::broadcast(mx, j.k_end);
            TileRef ex = block.replace(s, {s, mb}, VectorEmitter::side_of(s), "exp");
            e.vxm(VxmOp::Sub, DType::FP32, DType::FP32, ex, {s, mb}, std::nullopt, {ChainStep{VxmOp::Exp, false, 0}}, "exp(s - max)");
            const TileRef sum = statistic_row(block, ex, "sum over keys");
            e.reduce_rows(VxmOp::Add, DType::FP32, sum, ex, "sum over keys");
            const TileRef sb = VectorEmitter::broadcast(sum, j.k_end);
            half[hf] = block.replace(ex, {ex, sb}, VectorEmitter::side_of(ex), "probabilities");
            e.vxm(VxmOp::Div, DType::FP32, DType::BF16, half[hf], {ex, sb}, std::nullopt, {}, "e / sum");
        }
        // Pack the halves into one bf16 vector: its upper kLanes lanes come from the second half.
        TileRef shifted = block.replace(half[1], {half[1]}, VectorEmitter::other_side(half[0]), "shifted half", {half[0]});
        e.shift(DType::BF16, shifted, half[1], kLanes, "pack probabilities");
        TileRef p = block.replace(half[0], {half[0], shifted}, 0, "probabilities (bf16)");
        e.vxm(VxmOp::Add, DType::BF16, DType::BF16, p, {half[0], shifted}, std::nullopt, {}, "pack probabilities");
        return p;
    };
    // Oᵀ = Vᵀ · Pᵀ over the visible key blocks, drained and stored; the job's tiles handed back.
    auto output = [&](const Job &j, BlockTiles &block, const TileRef &p) {
        const int64_t blocks = (j.k_end + ku - 1) / ku;
        for (int64_t kb = 0; kb < blocks; ++kb)
            mm(j, lw(j, VectorEmitter::rows_of(p, kb * ku, std::min(ku, j.k_end - kb * ku))), acc(j, Lk, Dv),
               v_t[size_t(j.h)][size_t(j.copy * key_blocks + kb)], kb > 0);
        const TileRef o_t = e.tile(2 * Dv, 1, int(j.index % 2), "attention output");
        block.own(o_t);
        drain(o_t, acc(j, Lk, Dv), std::nullopt);
        chipsim::OffchipView ov;
        ov.tensor = "O";
        ov.offset = (j.h * Dv * Lqp + j.q0) * 4;
        ov.outer = {{Dv, Lqp * 4}, {2, vl}};
        ov.inner_bytes = vl;
        e.store(ov, o_t, "output block");
        block.retire_all();
        if (!preload)
            for (auto &tr : q_t[size_t(j.h)][size_t(j.qb)]) e.retire(tr);
    };
    // npu-edge issues its execute and vector queues side by side: a job's scores go in, then
    // the output of the job before it, then this job's softmax, so that each softmax on the VXM
    // runs under the next job's matmuls instead of between its own (the accumulator keeps the
    // scores' rows and the output's apart; the output's matmuls come before the softmax in the
    // program, so they wait for the softmax before, not for this one). tsp-mini interleaves a
    // wave's jobs step by step instead (vector_emitter.h).
    const bool pipelined = !e.streaming();
    struct Pending {
        Job job;
        BlockTiles block;
        TileRef p;
    };
    std::optional<Pending> pending;
    auto finish_pending = [&] {
        if (!pending) return;
        output(pending->job, pending->block, pending->p);
        pending.reset();
    };
    // Jobs run in waves of one job per MXM plane, interleaved step by step (vector_emitter.h):
    // two jobs of a wave on one plane would interleave their weight installs into the same
    // buffers. A head's K and Vᵀ are loaded before its first wave.
    const int64_t wave = planes;
    int64_t in_wave = 0;
    for (int64_t h = 0; h < H; ++h) {
        if (in_wave > 0) {
            e.end_wave();
            in_wave = 0;
        }
        if (!preload) load_head(h);
        for (int64_t qb = 0; qb < q_blocks; ++qb, ++job) {
            if (in_wave == 0) e.begin_wave();
            e.wave_lane(int(in_wave));
            if (!preload) load_queries(h, qb);
            Job j;
            j.index = job;
            j.h = h;
            j.qb = qb;
            j.q0 = qb * nu;
            j.k_end = op.causal ? std::min(Lk, j.q0 + nu) : Lk;
            j.plane = int(job % planes);
            j.copy = j.plane % copies;
            j.base = (region[size_t(j.plane)]++ % sets) * (Lk + Dv);
            BlockTiles block(e);
            const TileRef s_t = scores(j, block);
            finish_pending();
            const TileRef p = softmax(j, block, s_t);
            if (pipelined) pending.emplace(Pending{j, block, p});
            else output(j, block, p);
            max_rows = std::max(max_rows, j.k_end);
            if (++in_wave == wave) {
                e.end_wave();
                in_wave = 0;
            }
        }
        finish_pending(); // before the head's K and Vᵀ are handed back
        if (!preload) {
            for (auto &tr : k_t[size_t(h)]) e.retire(tr);
            for (auto &tr : v_t[size_t(h)]) e.retire(tr);
        }
    }
    if (in_wave > 0) e.end_wave();
    cp.program.target = t.name;
    cp.program.instructions = e.schedule();
    cp.summary += "attention" + std::string(op.causal ? " (causal)" : "") + ": " + std::to_string(job) + " jobs (head x " +
                  std::to_string(nu) + " queries) over " +
                  std::to_string(planes) + " MXM plane(s): Sᵀ = K·Qᵀ (keys down the accumulator rows), softmax over keys on the VXM "
                  "(reductions over rows), Oᵀ = Vᵀ·Pᵀ with P as the weights" +
                  (op.causal ? "; keys past each block's last query skipped" : "") + (preload ? "; inputs preloaded into MEM" : "") +
                  "\n";
}

} // namespace tessera::internal::chip
