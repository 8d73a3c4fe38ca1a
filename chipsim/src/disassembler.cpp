// The canonical text of programs. Floating immediates print in the shortest form that reads
// back to the same double (std::to_chars), so text round-trips bit-exactly.
#include "tessera/chipsim/assembler.h"

#include <charconv>
#include <sstream>

namespace tessera::chipsim {

namespace {

std::string number_text(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string view_text(const OffchipView &v) {
    std::string s = v.tensor + "@" + std::to_string(v.offset) + "[";
    for (auto &d : v.outer) s += std::to_string(d.count) + ":" + std::to_string(d.stride) + ",";
    return s + std::to_string(v.inner_bytes) + "]";
}

std::string dtype_suffix(const Instruction &in) {
    std::string s = std::string(".") + dtype_name(in.dtype);
    if (in.has_out_dtype) s += std::string(".") + dtype_name(in.out_dtype);
    return s;
}

} // namespace

std::string tile_text(const TileRef &t) {
    std::string s = t.memory;
    if (t.side) s += std::string(".") + t.side + (t.slice < 0 ? std::string("*") : std::to_string(t.slice));
    if (t.bank >= 0) s += ".b" + std::to_string(t.bank);
    s += "[" + std::to_string(t.base) + ":" + std::to_string(t.count);
    if (t.stride != 1) s += ":" + std::to_string(t.stride);
    return s + "]";
}

std::string disassemble(const Instruction &in) {
    std::ostringstream o;
    if (in.cycle >= 0) o << "@" << in.cycle << " ";
    auto tiles = [&](size_t from) {
        for (size_t i = from; i < in.tiles.size(); ++i) o << (i ? ", " : "") << tile_text(in.tiles[i]);
    };
    switch (in.op) {
    case Opcode::DmaLoad:
        o << "dma.load " << tile_text(in.tiles.at(0)) << ", " << view_text(in.view);
        break;
    case Opcode::DmaStore:
        o << "dma.store " << view_text(in.view) << ", " << tile_text(in.tiles.at(0));
        break;
    case Opcode::MemCopy:
        o << "mem.copy ";
        tiles(0);
        break;
    case Opcode::MxmLw:
        o << "mxm.lw." << dtype_name(in.dtype) << " m" << in.mxm << ".w" << in.buffer << ", ";
        tiles(0);
        break;
    case Opcode::MxmMm:
        o << "mxm.mm." << dtype_name(in.dtype) << (in.accumulate ? ".acc" : "") << " m" << in.mxm << ".w"
          << in.buffer << ", ";
        tiles(0);
        break;
    case Opcode::MxmDrain:
        o << "mxm.drain." << dtype_name(in.dtype) << "." << dtype_name(in.out_dtype) << " ";
        tiles(0);
        if (in.has_scale) o << ", scale=" << number_text(in.scale);
        if (in.relu) o << ", relu";
        if (in.count > 0) o << ", streams=" << in.count;
        break;
    case Opcode::Vxm:
        o << "vxm." << vxm_op_name(in.vop) << dtype_suffix(in) << " ";
        tiles(0);
        if (in.has_imm) o << ", #" << number_text(in.imm);
        for (auto &step : in.chain) {
            o << " | " << vxm_op_name(step.op);
            if (step.has_imm) o << " #" << number_text(step.imm);
        }
        break;
    case Opcode::VxmReduce:
        o << "vxm.reduce." << (in.vop == VxmOp::Max ? "max" : "sum") << "."
          << (in.axis == ReduceAxis::Rows ? "rows" : "lanes") << dtype_suffix(in) << " ";
        tiles(0);
        break;
    case Opcode::SxmTranspose:
        o << "sxm.transpose." << dtype_name(in.dtype) << " ";
        tiles(0);
        break;
    case Opcode::SxmPermute:
        o << "sxm.permute." << dtype_name(in.dtype) << " ";
        tiles(0);
        o << ", [";
        for (size_t i = 0; i < in.permutation.size(); ++i) o << (i ? "," : "") << in.permutation[i];
        o << "]";
        break;
    case Opcode::SxmShift:
        o << "sxm.shift." << dtype_name(in.dtype) << " ";
        tiles(0);
        o << ", #" << number_text(in.imm);
        break;
    case Opcode::SyncSignal:
    case Opcode::SyncWait:
        o << opcode_name(in.op) << "." << queue_name(in.queue) << " " << in.count;
        break;
    case Opcode::Nop:
        o << "nop" << (in.queue == Queue::None ? "" : std::string(".") + queue_name(in.queue)) << " " << in.count;
        break;
    case Opcode::Repeat:
        o << "repeat " << in.count << ", " << in.distance;
        break;
    }
    return o.str();
}

std::string disassemble(const Program &p) {
    std::ostringstream o;
    if (!p.target.empty()) o << ".target " << p.target << "\n";
    for (auto &t : p.tensors) {
        o << (t.is_buffer ? ".buffer " : t.is_output ? ".output " : ".input ") << t.name << " " << dtype_name(t.dtype) << " [";
        for (size_t i = 0; i < t.shape.size(); ++i) o << (i ? "," : "") << t.shape[i];
        o << "]";
        if (!t.file.empty()) o << " file=" << t.file;
        o << "\n";
    }
    for (auto &in : p.instructions) o << disassemble(in) << "\n";
    return o.str();
}

} // namespace tessera::chipsim
