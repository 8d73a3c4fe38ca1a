#include "tessera/chipsim/isa.h"

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

int64_t OffchipView::total_bytes() const {
    int64_t n = inner_bytes;
    for (auto &d : outer) n *= d.count;
    return n;
}

int64_t TensorDecl::bytes() const {
    int64_t n = dtype_bytes(dtype);
    for (auto d : shape) n *= d;
    return n;
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
