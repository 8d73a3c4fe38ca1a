// Assembly text -> Program. A small cursor parser per line: every failure reports
// origin:line:column and what was expected there. Only syntax is checked here; target-specific
// rules (ranges, dtypes a unit supports) belong to validate_program, which knows the target.
#include "tessera/chipsim/assembler.h"

#include "tessera/chipsim/error.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace tessera::chipsim {

namespace {

class LineParser {
public:
    LineParser(const std::string &line, int line_no, const std::string &origin)
        : s_(line), line_no_(line_no), origin_(origin) {}

    [[noreturn]] void fail(const std::string &what, size_t at) const {
        throw AsmError(origin_ + ":" + std::to_string(line_no_) + ":" + std::to_string(at + 1) + ": " + what);
    }
    [[noreturn]] void fail(const std::string &what) const { fail(what, pos_); }

    void skip_space() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    bool at_end() {
        skip_space();
        return pos_ >= s_.size();
    }
    bool peek(char c) {
        skip_space();
        return pos_ < s_.size() && s_[pos_] == c;
    }
    bool accept(char c) {
        if (!peek(c)) return false;
        ++pos_;
        return true;
    }
    void expect(char c, const std::string &context) {
        if (!accept(c)) fail(std::string("expected '") + c + "' " + context + found());
    }
    std::string found() {
        skip_space();
        if (pos_ >= s_.size()) return ", found end of line";
        size_t e = pos_;
        while (e < s_.size() && !std::isspace(static_cast<unsigned char>(s_[e])) && e - pos_ < 16) ++e;
        return ", found '" + s_.substr(pos_, e - pos_) + "'";
    }
    /// A word: letters, digits, '_', '-', '.', '*'.
    std::string word(const std::string &what) {
        skip_space();
        size_t b = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                    s_[pos_] == '-' || s_[pos_] == '.' || s_[pos_] == '*'))
            ++pos_;
        if (b == pos_) fail("expected " + what + found());
        return s_.substr(b, pos_ - b);
    }
    /// An identifier without dots (tensor names, memory names).
    std::string ident(const std::string &what) {
        skip_space();
        size_t b = pos_;
        while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
        if (b == pos_ || std::isdigit(static_cast<unsigned char>(s_[b]))) fail("expected " + what + found(), b);
        return s_.substr(b, pos_ - b);
    }
    int64_t integer(const std::string &what, int64_t lo = std::numeric_limits<int64_t>::min(),
                    int64_t hi = std::numeric_limits<int64_t>::max()) {
        skip_space();
        size_t b = pos_;
        bool neg = pos_ < s_.size() && s_[pos_] == '-';
        if (neg) ++pos_;
        int base = 10;
        if (s_.compare(pos_, 2, "0x") == 0) {
            base = 16;
            pos_ += 2;
        }
        uint64_t v = 0;
        auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v, base);
        if (r.ec == std::errc::result_out_of_range || v > uint64_t(std::numeric_limits<int64_t>::max()))
            fail(what + " is out of range", b);
        if (r.ec != std::errc() || r.ptr == s_.data() + pos_) {
            pos_ = b;
            fail("expected " + what + " (an integer)" + found());
        }
        pos_ = size_t(r.ptr - s_.data());
        int64_t x = neg ? -int64_t(v) : int64_t(v);
        if (x < lo || x > hi)
            fail(what + " is " + std::to_string(x) + ", expected " + std::to_string(lo) + ".." + std::to_string(hi), b);
        return x;
    }
    double number(const std::string &what) {
        skip_space();
        size_t b = pos_;
        double v = 0;
        auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
        if (r.ec != std::errc() || !std::isfinite(v)) fail("expected " + what + " (a finite number)" + found());
        pos_ = size_t(r.ptr - s_.data());
        (void)b;
        return v;
    }
    size_t pos() const { return pos_; }
    void set_pos(size_t p) { pos_ = p; }
    const std::string &text() const { return s_; }

private:
    const std::string &s_;
    size_t pos_ = 0;
    int line_no_;
    const std::string &origin_;
};

std::vector<std::string> split_dots(const std::string &w) {
    std::vector<std::string> parts;
    size_t b = 0;
    for (size_t i = 0; i <= w.size(); ++i)
        if (i == w.size() || w[i] == '.') {
            parts.push_back(w.substr(b, i - b));
            b = i + 1;
        }
    return parts;
}

DType dtype_at(LineParser &p, const std::string &name, size_t at) {
    auto d = parse_dtype(name);
    if (!d) p.fail("unknown dtype '" + name + "', expected one of int8 uint8 int16 int32 bf16 fp16 fp32", at);
    return *d;
}

TileRef parse_tile(LineParser &p) {
    TileRef t;
    p.skip_space();
    size_t at = p.pos();
    std::string w = p.word("a tile operand (e.g. MEM.e0.b1[0:64])");
    auto parts = split_dots(w);
    t.memory = parts[0];
    if (t.memory.empty() || !std::isalpha(static_cast<unsigned char>(t.memory[0])))
        p.fail("expected a memory name in tile operand '" + w + "'", at);
    for (size_t i = 1; i < parts.size(); ++i) {
        const std::string &c = parts[i];
        if (c.size() >= 2 && (c[0] == 'w' || c[0] == 'e' || c[0] == 's') && !t.side && t.bank < 0) {
            t.side = c[0];
            if (c == std::string(1, c[0]) + "*") {
                t.slice = -1;
            } else {
                int v = 0;
                auto r = std::from_chars(c.data() + 1, c.data() + c.size(), v);
                if (r.ec != std::errc() || r.ptr != c.data() + c.size() || v < 0)
                    p.fail("bad slice '" + c + "' in '" + w + "', expected w<n>, e<n>, s<n> or w*/e*/s*", at);
                t.slice = v;
            }
        } else if (c.size() >= 2 && c[0] == 'b' && t.bank < 0) {
            int v = 0;
            auto r = std::from_chars(c.data() + 1, c.data() + c.size(), v);
            if (r.ec != std::errc() || r.ptr != c.data() + c.size() || v < 0)
                p.fail("bad bank '" + c + "' in '" + w + "', expected b<n>", at);
            t.bank = v;
        } else {
            p.fail("unexpected '" + c + "' in tile operand '" + w + "', expected a slice (e3, w*) then a bank (b1)", at);
        }
    }
    p.expect('[', "after the tile's memory and location");
    t.base = p.integer("the tile's base row", 0);
    p.expect(':', "between base row and row count");
    t.count = p.integer("the tile's row count", 1);
    if (p.accept(':')) t.stride = p.integer("the tile's row stride", 0); // 0 re-reads one row: a broadcast
    p.expect(']', "closing the tile");
    return t;
}

OffchipView parse_view(LineParser &p) {
    OffchipView v;
    v.tensor = p.ident("a tensor name or DRAM");
    p.expect('@', "after the tensor name (view syntax NAME@OFFSET[COUNT:STRIDE,...,BYTES])");
    v.offset = p.integer("the view's byte offset", 0);
    p.expect('[', "opening the view's dimensions");
    std::vector<ViewDim> dims;
    while (true) {
        ViewDim d;
        d.count = p.integer("a dimension count", 1);
        if (p.accept(':')) {
            d.stride = p.integer("a dimension stride in bytes", 0);
            dims.push_back(d);
            p.expect(',', "after a COUNT:STRIDE dimension (the last dimension is plain BYTES)");
            continue;
        }
        v.inner_bytes = d.count;
        break;
    }
    p.expect(']', "closing the view");
    if (dims.size() > 3) p.fail("a view has at most 4 dimensions");
    v.outer = dims;
    return v;
}

void parse_mxm_ref(LineParser &p, Instruction &in) {
    p.skip_space();
    size_t at = p.pos();
    std::string w = p.word("an MXM reference mK.wB");
    auto parts = split_dots(w);
    auto num = [&](const std::string &c, char prefix) {
        int v = -1;
        if (c.size() < 2 || c[0] != prefix) return -1;
        auto r = std::from_chars(c.data() + 1, c.data() + c.size(), v);
        return (r.ec != std::errc() || r.ptr != c.data() + c.size()) ? -1 : v;
    };
    if (parts.size() != 2 || num(parts[0], 'm') < 0 || num(parts[1], 'w') < 0)
        p.fail("expected an MXM reference mK.wB (e.g. m0.w1), found '" + w + "'", at);
    in.mxm = num(parts[0], 'm');
    in.buffer = num(parts[1], 'w');
}

std::optional<VxmOp> parse_vxm_op(const std::string &name) {
    for (int i = 0; i <= int(VxmOp::Select); ++i)
        if (name == vxm_op_name(VxmOp(i))) return VxmOp(i);
    return std::nullopt;
}

std::optional<Queue> parse_queue(const std::string &name) {
    for (Queue q : {Queue::Load, Queue::Exec, Queue::Store, Queue::Vector})
        if (name == queue_name(q)) return q;
    return std::nullopt;
}

void comma(LineParser &p, const std::string &context) { p.expect(',', context); }

/// `expanded`: the instructions before this one, every repeat expanded.
Instruction parse_instruction(LineParser &p, int64_t expanded) {
    Instruction in;
    if (p.accept('@')) in.cycle = p.integer("the issue cycle after '@'", 0, int64_t(1) << 50);
    p.skip_space();
    size_t at = p.pos();
    std::string mnemonic = p.word("an instruction mnemonic");
    auto parts = split_dots(mnemonic);
    auto need_parts = [&](size_t lo, size_t hi, const std::string &form) {
        if (parts.size() < lo || parts.size() > hi) p.fail("malformed mnemonic '" + mnemonic + "', expected " + form, at);
    };
    const std::string fam = parts[0] + (parts.size() > 1 ? "." + parts[1] : "");
    if (fam == "dma.load") {
        need_parts(2, 2, "dma.load");
        in.op = Opcode::DmaLoad;
        in.tiles.push_back(parse_tile(p));
        comma(p, "between dma.load's tile and view");
        in.view = parse_view(p);
    } else if (fam == "dma.store") {
        need_parts(2, 2, "dma.store");
        in.op = Opcode::DmaStore;
        in.view = parse_view(p);
        comma(p, "between dma.store's view and tile");
        in.tiles.push_back(parse_tile(p));
    } else if (fam == "mem.copy") {
        need_parts(2, 2, "mem.copy");
        in.op = Opcode::MemCopy;
        in.tiles.push_back(parse_tile(p));
        comma(p, "between mem.copy's tiles");
        in.tiles.push_back(parse_tile(p));
    } else if (fam == "mxm.lw") {
        need_parts(3, 3, "mxm.lw.<dtype>");
        in.op = Opcode::MxmLw;
        in.dtype = dtype_at(p, parts[2], at);
        parse_mxm_ref(p, in);
        comma(p, "after the MXM reference");
        in.tiles.push_back(parse_tile(p));
    } else if (fam == "mxm.mm") {
        need_parts(3, 4, "mxm.mm.<dtype>[.acc]");
        in.op = Opcode::MxmMm;
        in.dtype = dtype_at(p, parts[2], at);
        if (parts.size() == 4) {
            if (parts[3] != "acc") p.fail("unknown mxm.mm modifier '" + parts[3] + "', expected acc", at);
            in.accumulate = true;
        }
        parse_mxm_ref(p, in);
        comma(p, "after the MXM reference");
        in.tiles.push_back(parse_tile(p));
        comma(p, "between the accumulator tile and the activation tile");
        in.tiles.push_back(parse_tile(p));
    } else if (fam == "mxm.drain") {
        need_parts(4, 4, "mxm.drain.<acc dtype>.<out dtype>");
        in.op = Opcode::MxmDrain;
        in.dtype = dtype_at(p, parts[2], at);
        in.out_dtype = dtype_at(p, parts[3], at);
        in.has_out_dtype = true;
        in.tiles.push_back(parse_tile(p));
        comma(p, "between the drain's destination and accumulator tiles");
        in.tiles.push_back(parse_tile(p));
        while (p.accept(',')) {
            size_t oat = p.pos();
            std::string opt = p.ident("a drain option (scale=S, relu or streams=N)");
            if (opt == "relu" && !in.relu) {
                in.relu = true;
            } else if (opt == "streams" && in.count == 0) {
                p.expect('=', "after streams");
                in.count = p.integer("the drain's streams", 1, 64);
            } else if (opt == "scale" && !in.has_scale) {
                p.expect('=', "after scale");
                in.has_scale = true;
                in.scale = p.number("the scale");
            } else {
                p.fail("unknown or repeated drain option '" + opt + "', expected scale=S, relu or streams=N", oat);
            }
        }
    } else if (parts[0] == "vxm" && parts.size() >= 2 && parts[1] == "reduce") {
        need_parts(5, 6, "vxm.reduce.<sum|max>.<rows|lanes>.<dtype>[.<out dtype>]");
        in.op = Opcode::VxmReduce;
        if (parts[2] != "sum" && parts[2] != "max") p.fail("unknown reduction '" + parts[2] + "', expected sum or max", at);
        in.vop = parts[2] == "max" ? VxmOp::Max : VxmOp::Add;
        if (parts[3] != "rows" && parts[3] != "lanes")
            p.fail("unknown reduction axis '" + parts[3] + "', expected rows or lanes", at);
        in.axis = parts[3] == "rows" ? ReduceAxis::Rows : ReduceAxis::Lanes;
        in.dtype = dtype_at(p, parts[4], at);
        in.out_dtype = in.dtype;
        if (parts.size() == 6) {
            in.out_dtype = dtype_at(p, parts[5], at);
            in.has_out_dtype = true;
        }
        in.tiles.push_back(parse_tile(p));
        comma(p, "between the reduction's tiles");
        in.tiles.push_back(parse_tile(p));
    } else if (parts[0] == "vxm") {
        need_parts(3, 4, "vxm.<op>.<dtype>[.<out dtype>]");
        in.op = Opcode::Vxm;
        auto op = parse_vxm_op(parts[1]);
        if (!op) p.fail("unknown vxm op '" + parts[1] + "'", at);
        in.vop = *op;
        in.dtype = dtype_at(p, parts[2], at);
        in.out_dtype = in.dtype;
        if (parts.size() == 4) {
            in.out_dtype = dtype_at(p, parts[3], at);
            in.has_out_dtype = true;
        }
        in.tiles.push_back(parse_tile(p));
        int arity = vxm_op_arity(in.vop);
        for (int i = 0; i < arity; ++i) {
            comma(p, std::string("before input ") + std::to_string(i + 1) + " of vxm." + vxm_op_name(in.vop));
            if (i == arity - 1 && i > 0 && p.accept('#')) {
                in.has_imm = true;
                in.imm = p.number("the immediate");
            } else {
                in.tiles.push_back(parse_tile(p));
            }
        }
        while (p.accept('|')) {
            ChainStep step;
            size_t sat = p.pos();
            std::string name = p.ident("a chained vxm op");
            auto sop = parse_vxm_op(name);
            if (!sop || vxm_op_arity(*sop) == 3) p.fail("'" + name + "' cannot be chained: expected a unary op or a binary op with #imm", sat);
            step.op = *sop;
            if (vxm_op_arity(step.op) == 2) {
                p.expect('#', "before the immediate of chained " + name);
                step.has_imm = true;
                step.imm = p.number("the immediate");
            }
            in.chain.push_back(step);
        }
    } else if (fam == "sxm.transpose" || fam == "sxm.permute" || fam == "sxm.shift") {
        need_parts(3, 3, fam + ".<dtype>");
        in.op = fam == "sxm.transpose" ? Opcode::SxmTranspose : fam == "sxm.permute" ? Opcode::SxmPermute : Opcode::SxmShift;
        in.dtype = dtype_at(p, parts[2], at);
        in.tiles.push_back(parse_tile(p));
        comma(p, "between the tiles");
        in.tiles.push_back(parse_tile(p));
        if (in.op == Opcode::SxmPermute) {
            comma(p, "before the permutation map");
            p.expect('[', "opening the permutation map");
            do in.permutation.push_back(int32_t(p.integer("a lane index", 0, 4095)));
            while (p.accept(','));
            p.expect(']', "closing the permutation map");
        } else if (in.op == Opcode::SxmShift) {
            comma(p, "before the shift amount");
            p.expect('#', "before the shift amount");
            in.imm = double(p.integer("the shift in lanes", -4096, 4096));
            in.has_imm = true;
        }
    } else if (fam == "sync.signal" || fam == "sync.wait") {
        need_parts(3, 3, fam + ".<queue>");
        in.op = fam == "sync.signal" ? Opcode::SyncSignal : Opcode::SyncWait;
        auto q = parse_queue(parts[2]);
        if (!q) p.fail("unknown queue '" + parts[2] + "', expected load, exec, store or vector", at);
        in.queue = *q;
        in.count = p.integer("the semaphore number", 0, 63);
    } else if (parts[0] == "nop") {
        need_parts(1, 2, "nop[.<queue>]");
        in.op = Opcode::Nop;
        if (parts.size() == 2) {
            auto q = parse_queue(parts[1]);
            if (!q) p.fail("unknown queue '" + parts[1] + "', expected load, exec, store or vector", at);
            in.queue = *q;
        }
        in.count = p.integer("the nop's cycles", 0, int64_t(1) << 40);
    } else if (parts[0] == "repeat") {
        need_parts(1, 1, "repeat N, D");
        in.op = Opcode::Repeat;
        p.skip_space();
        size_t cat = p.pos();
        in.count = p.integer("the repetition count");
        if (std::string why = repeat_problem(in.count, expanded); !why.empty()) p.fail(why, cat);
        comma(p, "between repeat's count and distance");
        in.distance = p.integer("the cycles between repetitions", 0, int64_t(1) << 30);
    } else {
        p.fail("unknown instruction '" + mnemonic + "'", at);
    }
    if (!p.at_end()) p.fail("unexpected text after the instruction" + p.found());
    return in;
}

void parse_directive(LineParser &p, Program &prog, std::set<std::string> &names) {
    p.expect('.', "");
    size_t at = p.pos();
    std::string d = p.ident("a directive");
    if (d == "target") {
        if (!prog.target.empty()) p.fail("a second .target directive", at);
        // A name or a path: everything up to the next blank.
        p.skip_space();
        const std::string &s = p.text();
        size_t b = p.pos(), e = b;
        while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
        if (e == b) p.fail("expected a target name or path after .target");
        prog.target = s.substr(b, e - b);
        p.set_pos(e);
    } else if (d == "input" || d == "output" || d == "buffer") {
        TensorDecl t;
        t.is_output = d == "output";
        t.is_buffer = d == "buffer";
        p.skip_space();
        size_t nat = p.pos();
        t.name = p.ident("a tensor name");
        if (t.name == "DRAM") p.fail("'DRAM' names raw off-chip memory and cannot be a tensor name", nat);
        if (!names.insert(t.name).second) p.fail("tensor '" + t.name + "' is declared twice", nat);
        p.skip_space();
        size_t dat = p.pos();
        t.dtype = dtype_at(p, p.ident("a dtype"), dat);
        p.expect('[', "opening the tensor's shape");
        size_t sat = p.pos();
        do {
            t.shape.push_back(p.integer("a dimension", 1, limits::kMaxExtent));
            if (t.shape.size() > size_t(kMaxTensorRank)) break; // reported below, before a huge list is read
        } while (p.accept(','));
        if (std::string why = tensor_shape_problem(t); !why.empty()) p.fail(why, sat);
        p.expect(']', "closing the tensor's shape");
        if (!p.at_end()) {
            size_t fat = p.pos();
            if (t.is_buffer) p.fail("a .buffer lives in the chip's DRAM and takes no file=", fat);
            if (p.ident("file=") != "file") p.fail("expected file=PATH", fat);
            p.expect('=', "after file");
            p.skip_space();
            size_t b = p.pos();
            const std::string &s = p.text();
            size_t e = b;
            while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
            if (e == b) p.fail("expected a file path after file=");
            t.file = s.substr(b, e - b);
            p.set_pos(e);
        }
        prog.tensors.push_back(t);
    } else {
        p.fail("unknown directive '." + d + "', expected .target, .input, .output or .buffer", at);
    }
    if (!p.at_end()) p.fail("unexpected text after the directive" + p.found());
}

} // namespace

Program assemble(const std::string &text, const std::string &origin) {
    Program prog;
    std::set<std::string> names;
    std::istringstream in(text);
    std::string line;
    int line_no = 0;
    int64_t expanded = 0; // instructions so far, repeats expanded
    while (std::getline(in, line)) {
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        size_t hash = line.find('#');
        // '#' also prefixes immediates: a comment starts at a '#' that is first on the line or
        // follows whitespace and is not followed by a number.
        while (hash != std::string::npos) {
            bool imm = hash + 1 < line.size() && (std::isdigit(static_cast<unsigned char>(line[hash + 1])) ||
                                                  line[hash + 1] == '-' || line[hash + 1] == '+' || line[hash + 1] == '.');
            if (!imm) break;
            hash = line.find('#', hash + 1);
        }
        if (hash != std::string::npos) line.erase(hash);
        LineParser p(line, line_no, origin);
        if (p.at_end()) continue;
        if (p.peek('.')) {
            if (!prog.instructions.empty()) p.fail("directives must come before the first instruction");
            parse_directive(p, prog, names);
            continue;
        }
        Instruction ins = parse_instruction(p, expanded);
        expanded += ins.op == Opcode::Repeat ? ins.count : 1;
        ins.line = line_no;
        prog.instructions.push_back(std::move(ins));
    }
    return prog;
}

Program assemble_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw AsmError("cannot open program '" + path + "'");
    std::stringstream ss;
    ss << f.rdbuf();
    Program p = assemble(ss.str(), path);
    p.source_dir = std::filesystem::path(path).parent_path().string();
    return p;
}

} // namespace tessera::chipsim
