// Element-wise pipelines on the VXM (vector_kernels.h): the same compiled VectorProgram as a
// matmul's epilogue (vector_epilogue.h), run on blocks of rows loaded straight from the inputs.
//
// Layout: the output keeps its own layout with the last dimension padded to the 32-bit lane
// count L (16), so a vector row is L consecutive elements of a row. An Input that the output
// broadcasts along some dimensions is read with stride 0 along them by the DMA (a row vector
// repeated down the rows; a column vector repeated across the lanes, element by element), so
// no operand is expanded on the host. Values compute in int32 or fp32 lanes (the host widens
// narrower inputs exactly on their way in), or, for a pipeline of bf16 values only, in bf16
// lanes (32 a row), every op rounding its result to bf16 as the reference does.
#include <algorithm>

#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_epilogue.h"
#include "vector_kernels.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"

namespace tessera::internal::chip {

using chipsim::TileRef;

void compile_elementwise(ChipProgram &cp, const GemmPattern &g, const std::vector<int64_t> &shape) {
    const chipsim::Target &t = cp.target;
    const int rank = int(shape.size());
    if (rank == 0) throw Error("chip backend: " + g.output.name() + " is a scalar; chip kernels work on tensors of rank >= 1");
    const VectorProgram prog =
        compile_epilogue(g, g.acc_type == Int(32) ? chipsim::DType::Int32 : chipsim::DType::FP32, /*bf16_values=*/true);
    // Every value is 32-bit on the VXM, or every value is bf16 (compile_epilogue checks).
    const chipsim::DType lane_dtype = prog.out_dtype == chipsim::DType::BF16 ? chipsim::DType::BF16 : chipsim::DType::FP32;
    const int64_t es = chipsim::dtype_bytes(lane_dtype), L = t.lanes(lane_dtype);
    const int64_t cols = shape.back(), chunks = (cols + L - 1) / L;
    std::vector<int64_t> chip_shape = shape;
    chip_shape.back() = chunks * L;
    std::vector<int> identity(shape.size());
    for (int d = 0; d < rank; ++d) identity[size_t(d)] = d;
    declare(cp, "Y", g.output.name(), prog.out_dtype, chip_shape, shape, identity, {}, true);
    const std::vector<int64_t> y_stride = row_major_strides(chip_shape);

    // Each operand: the output's layout, extent 1 along the dimensions it does not read.
    struct Operand {
        std::vector<int64_t> stride; ///< Per output dimension, 0 where broadcast.
        bool lanes = true;           ///< It varies along the last dimension.
        chipsim::DType dtype;
    };
    std::vector<Operand> operands;
    for (size_t i = 0; i < prog.operands.size(); ++i) {
        const VectorOperand &vo = prog.operands[i];
        std::vector<int64_t> es(size_t(rank), 1);
        std::vector<bool> used(size_t(rank), false);
        for (int od : vo.source.output_dim)
            if (od >= 0) used[size_t(od)] = true;
        for (int d = 0; d < rank; ++d)
            if (used[size_t(d)]) es[size_t(d)] = chip_shape[size_t(d)];
        declare(cp, "E" + std::to_string(i), vo.source.input.name(), vo.dtype, es, constant_shape(vo.source.input), vo.source.output_dim,
                {}, false);
        Operand o{row_major_strides(es), used.back(), vo.dtype};
        for (int d = 0; d < rank; ++d)
            if (!used[size_t(d)]) o.stride[size_t(d)] = 0;
        operands.push_back(o);
    }

    chipsim::TimingModel model(t);
    VectorEmitter e(model);
    // Blocks of up to 512 vector rows: (outer index, rows r0.., chunks c0..).
    const int64_t rows = rank >= 2 ? shape[size_t(rank - 2)] : 1;
    int64_t outer = 1;
    for (int d = 0; d + 2 < rank; ++d) outer *= shape[size_t(d)];
    const int64_t nc_max = std::min<int64_t>(chunks, 512), nr_max = std::max<int64_t>(1, 512 / nc_max);
    auto row_stride = [&](const std::vector<int64_t> &s) { return rank >= 2 ? s[size_t(rank - 2)] : 0; };
    constexpr int kWave = 8;
    int64_t blocks = 0;
    for (int64_t o = 0; o < outer; ++o) {
        // The outer index's offset in every tensor.
        std::vector<int64_t> base(operands.size() + 1, 0);
        int64_t rest = o;
        for (int d = rank - 3; d >= 0; --d) {
            const int64_t idx = rest % shape[size_t(d)];
            rest /= shape[size_t(d)];
            base[0] += idx * y_stride[size_t(d)];
            for (size_t i = 0; i < operands.size(); ++i) base[i + 1] += idx * operands[i].stride[size_t(d)];
        }
        for (int64_t r0 = 0; r0 < rows; r0 += nr_max)
            for (int64_t c0 = 0; c0 < chunks; c0 += nc_max) {
                const int64_t nr = std::min(nr_max, rows - r0), nc = std::min(nc_max, chunks - c0), n = nr * nc;
                if (blocks % kWave == 0) e.begin_wave();
                e.wave_lane(int(blocks % kWave));
                BlockTiles block(e);
                std::vector<TileRef> vals(size_t(prog.num_values));
                for (size_t i = 0; i < operands.size(); ++i) {
                    const Operand &op = operands[i];
                    chipsim::OffchipView v;
                    v.tensor = "E" + std::to_string(i);
                    const int64_t rs = row_stride(op.stride) * es;
                    v.offset = (base[i + 1] + r0 * row_stride(op.stride) + (op.lanes ? c0 * L : 0)) * es;
                    if (op.lanes) {
                        v.outer = {{nr, rs}, {nc, L * es}};
                        v.inner_bytes = t.vector_bytes;
                    } else { // one value per row, repeated across the lanes
                        v.outer = {{nr, rs}, {nc, 0}, {L, 0}};
                        v.inner_bytes = es;
                    }
                    // Apart from the blocks loaded before it: a step may read any two at once, and
                    // a tsp-mini slice has one read port (once MEM is full, the tiles released
                    // first may all lie in one hemisphere).
                    std::vector<TileRef> loaded(vals.begin() + 1, vals.begin() + std::ptrdiff_t(i) + 1);
                    vals[i + 1] = e.dst_for(n, {}, int(i % 2), "a block of " + prog.operands[i].source.input.name(), loaded);
                    block.own(vals[i + 1]);
                    e.load(vals[i + 1], v, prog.operands[i].source.input.name() + " block");
                }
                for (const VectorStep &s : prog.steps) {
                    std::vector<TileRef> srcs;
                    for (int x : s.srcs) {
                        TileRef src = vals[size_t(x)];
                        // x * x: one bank cannot feed both operands at once on tsp-mini; the
                        // second reads a copy.
                        if (e.streaming() && std::find(srcs.begin(), srcs.end(), src) != srcs.end()) {
                            const TileRef copy = block.fresh(n, {src}, VectorEmitter::other_side(src), "a copy of a squared value");
                            e.copy(copy, src, "copy for a square");
                            src = copy;
                        }
                        srcs.push_back(src);
                    }
                    const TileRef dst = block.fresh(n, srcs, VectorEmitter::other_side(srcs[0]), "element-wise value");
                    chipsim::Instruction in = s.proto;
                    in.tiles = {dst};
                    for (auto &x : srcs) in.tiles.push_back(x);
                    e.emit(in, "element-wise step");
                    vals[size_t(s.dst)] = dst;
                }
                chipsim::OffchipView yv;
                yv.tensor = "Y";
                yv.offset = (base[0] + r0 * row_stride(y_stride) + c0 * L) * es;
                yv.outer = {{nr, row_stride(y_stride) * es}, {nc, L * es}};
                yv.inner_bytes = t.vector_bytes;
                e.store(yv, vals[size_t(prog.result)], "result block");
                block.retire_all();
                if (++blocks % kWave == 0) e.end_wave();
            }
    }
    if (blocks % kWave != 0) e.end_wave();
    cp.program.target = t.name;
    cp.program.instructions = e.schedule();
    cp.summary += "element-wise on the VXM: " + std::to_string(blocks) + " blocks of up to " + std::to_string(nr_max * nc_max) +
                  " vector rows, " + std::to_string(prog.operands.size()) + " input(s) (broadcasts read with stride 0 by the DMA); " +
                  (prog.description.empty() ? std::string("a copy") : prog.description) + "\n";
}

} // namespace tessera::internal::chip
