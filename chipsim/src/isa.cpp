#include "tessera/chipsim/isa.h"

#include <cctype>
#include <cmath>
#include <limits>

namespace tessera::chipsim {

const char *opcode_name(Opcode op) {
    switch (op) {
    case Opcode::DmaLoad: return "dma.load";
    case Opcode::DmaStore: return "dma.store";
    case Opcode::MemCopy: return "mem.copy";
    case Opcode::MxmLw: return "mxm.lw";
    case Opcode::MxmMm: return "mxm.mm";
    case Opcode::MxmDrain: return "mxm.drain";
    case Opcode::Vxm: return "vxm";
    case Opcode::VxmReduce: return "vxm.reduce";
    case Opcode::SxmTranspose: return "sxm.transpose";
    case Opcode::SxmPermute: return "sxm.permute";
    case Opcode::SxmShift: return "sxm.shift";
    case Opcode::SyncSignal: return "sync.signal";
    case Opcode::SyncWait: return "sync.wait";
    case Opcode::Nop: return "nop";
    case Opcode::Repeat: return "repeat";
    }
    return "?";
}

const char *vxm_op_name(VxmOp op) {
    static const char *names[] = {"add", "sub", "mul", "div", "max", "min", "exp",
                                  "tanh", "rsqrt", "recip", "relu", "cast", "select"};
    return names[int(op)];
}

int vxm_op_arity(VxmOp op) {
    switch (op) {
    case VxmOp::Add:
    case VxmOp::Sub:
    case VxmOp::Mul:
    case VxmOp::Div:
    case VxmOp::Max:
    case VxmOp::Min: return 2;
    case VxmOp::Select: return 3;
    default: return 1;
    }
}

int64_t vxm_rows_packed(const Instruction &in) {
    if (in.op != Opcode::Vxm || in.tiles.size() < 2) return 1;
    const int is = dtype_bytes(in.dtype), os = dtype_bytes(in.out_dtype);
    return os < is && in.tiles[0].count < in.tiles[1].count ? is / os : 1;
}

int64_t vxm_rows_unpacked(const Instruction &in) {
    if (in.op != Opcode::Vxm || in.tiles.size() < 2) return 1;
    const int is = dtype_bytes(in.dtype), os = dtype_bytes(in.out_dtype);
    return os > is && in.tiles[0].count > in.tiles[1].count ? os / is : 1;
}

const char *queue_name(Queue q) {
    switch (q) {
    case Queue::None: return "";
    case Queue::Load: return "load";
    case Queue::Exec: return "exec";
    case Queue::Store: return "store";
    case Queue::Vector: return "vector";
    }
    return "";
}

// Both products saturate at INT64_MAX instead of wrapping: a view of absurd counts then never
// equals the bytes of a tile (the check that refuses it), and a bad declaration never looks small.
int64_t OffchipView::total_bytes() const {
    int64_t n = inner_bytes;
    for (auto &d : outer)
        if (__builtin_mul_overflow(n, d.count, &n)) return std::numeric_limits<int64_t>::max();
    return n;
}

int64_t TensorDecl::bytes() const {
    int64_t n = dtype_bytes(dtype);
    for (auto d : shape)
        if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
    return n;
}

std::string tensor_shape_problem(const TensorDecl &t) {
    if (t.shape.empty()) return "tensor '" + t.name + "' has no dimensions; declare at least one, e.g. [1]";
    if (t.shape.size() > size_t(kMaxTensorRank))
        return "tensor '" + t.name + "' has " + std::to_string(t.shape.size()) + " dimensions, at most " +
               std::to_string(kMaxTensorRank) + " are allowed";
    std::string problem;
    if (!limits::tensor_size(t.shape, dtype_bytes(t.dtype), &problem)) return "tensor '" + t.name + "': " + problem;
    if (t.is_buffer && !t.file.empty()) return ".buffer '" + t.name + "' lives in the chip's DRAM and takes no file=";
    return "";
}

std::string instruction_problem(const Instruction &in) {
    auto range = [](const std::string &what, int64_t v, int64_t lo, int64_t hi) -> std::string {
        if (v >= lo && v <= hi) return "";
        return what + " is " + std::to_string(v) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi);
    };
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    std::string why = range("the issue cycle", in.cycle, -1, int64_t(1) << 50);
    for (size_t i = 0; i < in.tiles.size() && why.empty(); ++i) {
        const TileRef &t = in.tiles[i];
        const std::string tile = "tile " + std::to_string(i);
        if (t.memory.empty() || !std::isalpha(static_cast<unsigned char>(t.memory[0])))
            return tile + " has no memory name";
        if (t.side != 0 && t.side != 'w' && t.side != 'e' && t.side != 's') return tile + " has an unknown slice side";
        for (const std::string &w : {range(tile + " slice", t.slice, -1, kMax), range(tile + " bank", t.bank, -1, kMax),
                                     range(tile + " base row", t.base, 0, kMax), range(tile + " row count", t.count, 1, kMax),
                                     range(tile + " row stride", t.stride, 0, kMax)})
            if (why.empty()) why = w;
    }
    if (!why.empty()) return why;
    if (in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) {
        why = range("the view's byte offset", in.view.offset, 0, kMax);
        if (why.empty()) why = range("the view's contiguous bytes", in.view.inner_bytes, 1, kMax);
        for (const ViewDim &d : in.view.outer) {
            if (why.empty()) why = range("a view dimension's count", d.count, 1, kMax);
            if (why.empty()) why = range("a view dimension's stride", d.stride, 0, kMax);
        }
    }
    if (why.empty()) why = range("the MXM index", in.mxm, 0, kMax);
    if (why.empty()) why = range("the weight buffer", in.buffer, 0, kMax);
    for (int32_t lane : in.permutation)
        if (why.empty()) why = range("a permutation lane", lane, 0, 4095);
    if (!why.empty()) return why;
    // The text spells only the fields an opcode uses; the others must hold their defaults, or
    // the binary would carry what its assembly form silently drops.
    Instruction used;
    used.op = in.op;
    used.cycle = in.cycle;
    used.tiles = in.tiles;
    switch (in.op) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore: used.view = in.view; break;
    case Opcode::MxmMm: used.accumulate = in.accumulate; [[fallthrough]];
    case Opcode::MxmLw: used.dtype = in.dtype, used.mxm = in.mxm, used.buffer = in.buffer; break;
    case Opcode::MxmDrain:
        used.dtype = in.dtype, used.out_dtype = in.out_dtype, used.has_out_dtype = true;
        used.relu = in.relu, used.count = in.count, used.has_scale = in.has_scale, used.scale = in.has_scale ? in.scale : 1.0;
        break;
    case Opcode::Vxm:
        used.has_imm = in.has_imm, used.imm = in.has_imm ? in.imm : 0.0;
        for (const ChainStep &c : in.chain) used.chain.push_back({c.op, c.has_imm, c.has_imm ? c.imm : 0.0});
        [[fallthrough]];
    case Opcode::VxmReduce:
        used.vop = in.vop, used.axis = in.op == Opcode::VxmReduce ? in.axis : ReduceAxis::Rows;
        used.dtype = in.dtype, used.has_out_dtype = in.has_out_dtype, used.out_dtype = in.has_out_dtype ? in.out_dtype : in.dtype;
        break;
    case Opcode::SxmPermute: used.permutation = in.permutation; [[fallthrough]];
    case Opcode::SxmTranspose: used.dtype = in.dtype; break;
    case Opcode::SxmShift: used.dtype = in.dtype, used.has_imm = true, used.imm = in.imm; break;
    case Opcode::SyncSignal:
    case Opcode::SyncWait:
    case Opcode::Nop: used.queue = in.queue, used.count = in.count; break;
    case Opcode::Repeat: used.count = in.count, used.distance = in.distance; break;
    }
    if (!(used == in)) return std::string(opcode_name(in.op)) + " sets a field its assembly form does not have";
    // The operands the text's grammar requires of each opcode: a binary without them has no
    // assembly form, and the disassembler and simulator index them unchecked.
    size_t tiles = 2;
    switch (in.op) {
    case Opcode::DmaLoad:
    case Opcode::DmaStore:
    case Opcode::MxmLw: tiles = 1; break;
    case Opcode::Vxm: tiles = size_t(1 + vxm_op_arity(in.vop) - (in.has_imm ? 1 : 0)); break;
    case Opcode::SyncSignal:
    case Opcode::SyncWait:
    case Opcode::Nop:
    case Opcode::Repeat: tiles = 0; break;
    default: break;
    }
    if (in.tiles.size() != tiles)
        return std::string(opcode_name(in.op)) + " has " + std::to_string(in.tiles.size()) + " tile operands, expected " +
               std::to_string(tiles);
    for (size_t i = 0; i < in.tiles.size(); ++i)
        if (in.tiles[i].side == 0 && in.tiles[i].slice != -1)
            return "tile " + std::to_string(i) + " names slice " + std::to_string(in.tiles[i].slice) + " but no side (w, e or s)";
    if (in.op == Opcode::Vxm && in.has_imm && vxm_op_arity(in.vop) < 2)
        return std::string("vxm.") + vxm_op_name(in.vop) + " takes one input and no immediate";
    if (in.op == Opcode::VxmReduce && in.vop != VxmOp::Add && in.vop != VxmOp::Max) return "a reduction is sum or max";
    for (const ChainStep &c : in.chain) {
        if (vxm_op_arity(c.op) == 3) return std::string("vxm.") + vxm_op_name(c.op) + " cannot be chained";
        if (c.has_imm != (vxm_op_arity(c.op) == 2))
            return std::string("chained ") + vxm_op_name(c.op) + (c.has_imm ? " takes no immediate" : " needs an immediate");
    }
    if ((in.op == Opcode::SyncSignal || in.op == Opcode::SyncWait) && in.queue == Queue::None)
        return std::string(opcode_name(in.op)) + " names no queue (load, exec, store or vector)";
    if (in.op == Opcode::SxmPermute && in.permutation.empty()) return "sxm.permute has an empty permutation map";
    for (double v : {in.imm, in.scale})
        if (!std::isfinite(v)) return "an immediate or scale is not a finite number";
    for (const ChainStep &c : in.chain)
        if (!std::isfinite(c.imm)) return "a chained immediate is not a finite number";
    switch (in.op) {
    case Opcode::SyncSignal:
    case Opcode::SyncWait: return range("the semaphore number", in.count, 0, 63);
    case Opcode::Nop: return range("the nop's cycles", in.count, 0, int64_t(1) << 40);
    case Opcode::MxmDrain: return range("the drain's streams", in.count, 0, 64);
    case Opcode::SxmShift:
        if (!(in.imm >= -4096 && in.imm <= 4096 && in.imm == double(int64_t(in.imm))))
            return "the shift is not a whole number of lanes in -4096..4096";
        return "";
    case Opcode::Repeat: // its count is repeat_problem's
        return range("the cycles between repetitions", in.distance, 0, int64_t(1) << 30);
    default: return range("the count field", in.count, 0, 0);
    }
}

std::string repeat_problem(int64_t count, int64_t expanded) {
    if (count < 1 || count > limits::kMaxRepeat)
        return "the repetition count is " + std::to_string(count) + ", expected 1.." + std::to_string(limits::kMaxRepeat);
    if (count > limits::kMaxExpandedInstructions - expanded)
        return "the program grows past " + std::to_string(limits::kMaxExpandedInstructions) +
               " instructions once its repeats are expanded (the most the simulator runs); split it into several programs";
    return "";
}

bool Instruction::operator==(const Instruction &o) const {
    return op == o.op && cycle == o.cycle && dtype == o.dtype && out_dtype == o.out_dtype &&
           has_out_dtype == o.has_out_dtype && tiles == o.tiles && view == o.view && mxm == o.mxm &&
           buffer == o.buffer && accumulate == o.accumulate && relu == o.relu && has_scale == o.has_scale &&
           scale == o.scale && vop == o.vop && axis == o.axis && has_imm == o.has_imm && imm == o.imm &&
           chain == o.chain && permutation == o.permutation && queue == o.queue && count == o.count &&
           distance == o.distance;
}

const TensorDecl *Program::tensor(const std::string &name) const {
    for (auto &t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

} // namespace tessera::chipsim
