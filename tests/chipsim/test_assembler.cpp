// Text and binary forms round-trip exactly, on hand-written and randomly generated programs.
#include "chipsim_test_util.h"

#include <tessera/chipsim/binary_format.h>

#include <random>

using namespace chipsim_test;

namespace {

const char *kEveryInstruction = R"(.target tsp-mini
.input A int8 [64,64] file=A.npy
.output C int32 [64,64]
@0 dma.load MEM.e0.b0[0:64], A@0[64:64,64]
@1 dma.store C@0[64:256,256], MEM.w*.b1[0:256:2]
@2 mem.copy MEM.e1.b1[3:4:5], MEM.w7.b0[0:4]
@3 mxm.lw.int8 m0.w1, MEM.w*.b0[0:64]
@4 mxm.mm.int8.acc m0.w1, ACC.b0[0:64], MEM.e0.b0[0:64]
@5 mxm.drain.int32.int8 MEM.e2.b0[0:64], ACC.b0[0:64], scale=0.015625, relu, streams=1
@6 vxm.add.fp32 MEM.e0.b0[0:4], MEM.e1.b0[0:4], #-1.5 | mul #0.25 | relu
@7 vxm.select.int8.int32 MEM.e0.b0[0:4], MEM.e1.b0[0:4], MEM.e2.b0[0:4], MEM.e3.b0[0:4]
@8 vxm.reduce.max.lanes.bf16.fp32 MEM.e0.b0[0:4], MEM.e1.b0[0:4]
@9 sxm.transpose.fp32 MEM.w0.b0[0:16], MEM.w1.b0[0:16]
@10 sxm.permute.int8 MEM.w0.b0[0:1], MEM.w1.b0[0:1], [1,0]
@11 sxm.shift.int16 MEM.w0.b0[0:1], MEM.w1.b0[0:1], #-3
@12 nop 5
@13 repeat 3, 8
)";

std::string pick(std::mt19937 &rng, const std::vector<std::string> &v) { return v[rng() % v.size()]; }

TileRef random_tile(std::mt19937 &rng) {
    TileRef t;
    switch (rng() % 4) {
    case 0: t.memory = "SPAD"; break;
    case 1: t.memory = "ACC"; t.bank = int(rng() % 4); break;
    default:
        t.memory = "MEM";
        t.side = rng() % 2 ? 'e' : 'w';
        t.slice = int(rng() % 9) - 1;
        t.bank = int(rng() % 2);
    }
    t.base = rng() % 4096;
    t.count = 1 + rng() % 512;
    t.stride = 1 + rng() % 9;
    return t;
}

double random_double(std::mt19937 &rng) {
    // Values that stress the shortest-round-trip printing.
    switch (rng() % 4) {
    case 0: return double(int(rng() % 2001) - 1000);
    case 1: return std::ldexp(double(rng()), -int(rng() % 60));
    case 2: return 1.0 / double(1 + rng() % 1000);
    default: return -std::ldexp(double(rng() % 100000), int(rng() % 40) - 20);
    }
}

Instruction random_instruction(std::mt19937 &rng, bool with_cycle) {
    Instruction in;
    in.cycle = with_cycle ? int64_t(rng() % 100000) : -1;
    auto dtype = [&] { return DType(rng() % 7); };
    const int kind = int(rng() % 14);
    switch (kind) {
    case 0:
    case 1: {
        in.op = kind == 0 ? Opcode::DmaLoad : Opcode::DmaStore;
        in.tiles = {random_tile(rng)};
        in.view.tensor = pick(rng, {"A", "B", "DRAM", "weights_1"});
        in.view.offset = rng() % 100000;
        for (int d = 0, n = int(rng() % 4); d < n; ++d) in.view.outer.push_back({int64_t(1 + rng() % 64), int64_t(rng() % 5000)});
        in.view.inner_bytes = 1 + rng() % 4096;
        break;
    }
    case 2: in.op = Opcode::MemCopy; in.tiles = {random_tile(rng), random_tile(rng)}; break;
    case 3: in.op = Opcode::MxmLw; in.dtype = dtype(); in.mxm = int(rng() % 4); in.buffer = int(rng() % 2); in.tiles = {random_tile(rng)}; break;
    case 4:
        in.op = Opcode::MxmMm; in.dtype = dtype(); in.accumulate = rng() % 2; in.mxm = int(rng() % 4);
        in.buffer = int(rng() % 2); in.tiles = {random_tile(rng), random_tile(rng)};
        break;
    case 5:
        in.op = Opcode::MxmDrain; in.dtype = dtype(); in.out_dtype = dtype(); in.has_out_dtype = true;
        in.tiles = {random_tile(rng), random_tile(rng)};
        in.relu = rng() % 2; in.has_scale = rng() % 2; if (in.has_scale) in.scale = random_double(rng);
        in.count = rng() % 2 ? int64_t(1 + rng() % 4) : 0;
        break;
    case 6: {
        in.op = Opcode::Vxm; in.vop = VxmOp(rng() % 13); in.dtype = dtype(); in.out_dtype = in.dtype;
        if (rng() % 2) { in.out_dtype = dtype(); in.has_out_dtype = true; }
        int arity = vxm_op_arity(in.vop);
        in.tiles.push_back(random_tile(rng));
        for (int i = 0; i < arity; ++i) in.tiles.push_back(random_tile(rng));
        if (arity >= 2 && rng() % 2) { in.tiles.pop_back(); in.has_imm = true; in.imm = random_double(rng); }
        for (int i = 0, n = int(rng() % 3); i < n; ++i) {
            ChainStep s;
            do s.op = VxmOp(rng() % 13); while (vxm_op_arity(s.op) == 3);
            if (vxm_op_arity(s.op) == 2) { s.has_imm = true; s.imm = random_double(rng); }
            in.chain.push_back(s);
        }
        break;
    }
    case 7:
        in.op = Opcode::VxmReduce; in.vop = rng() % 2 ? VxmOp::Max : VxmOp::Add; in.axis = ReduceAxis(rng() % 2);
        in.dtype = dtype(); in.out_dtype = in.dtype; if (rng() % 2) { in.out_dtype = dtype(); in.has_out_dtype = true; }
        in.tiles = {random_tile(rng), random_tile(rng)};
        break;
    case 8: in.op = Opcode::SxmTranspose; in.dtype = dtype(); in.tiles = {random_tile(rng), random_tile(rng)}; break;
    case 9:
        in.op = Opcode::SxmPermute; in.dtype = dtype(); in.tiles = {random_tile(rng), random_tile(rng)};
        for (int i = 0, n = int(1 + rng() % 8); i < n; ++i) in.permutation.push_back(int32_t(rng() % 64));
        break;
    case 10: in.op = Opcode::SxmShift; in.dtype = dtype(); in.tiles = {random_tile(rng), random_tile(rng)}; in.has_imm = true; in.imm = double(int(rng() % 129) - 64); break;
    case 11: in.op = rng() % 2 ? Opcode::SyncSignal : Opcode::SyncWait; in.queue = Queue(1 + rng() % 4); in.count = rng() % 16; break;
    case 12: in.op = Opcode::Nop; in.queue = rng() % 2 ? Queue(1 + rng() % 4) : Queue::None; in.count = rng() % 1000; break;
    default: in.op = Opcode::Repeat; in.count = 1 + rng() % 100; in.distance = rng() % 100; break;
    }
    return in;
}

Program random_program(uint32_t seed) {
    std::mt19937 rng(seed);
    Program p;
    if (rng() % 2) p.target = pick(rng, {"tsp-mini", "npu-edge", "my/chip.json"});
    for (int i = 0, n = int(rng() % 4); i < n; ++i) {
        TensorDecl d;
        d.name = "t" + std::to_string(i);
        d.dtype = DType(rng() % 7);
        for (int k = 0, r = int(1 + rng() % 3); k < r; ++k) d.shape.push_back(1 + rng() % 300);
        if (rng() % 2) d.file = "data/" + d.name + ".npy";
        d.is_output = rng() % 2;
        p.tensors.push_back(d);
    }
    bool cycles = rng() % 2;
    for (int i = 0, n = int(1 + rng() % 40); i < n; ++i) p.instructions.push_back(random_instruction(rng, cycles));
    return p;
}

} // namespace

TEST(Assembler, EveryInstructionRoundTrips) {
    Program p = assemble(kEveryInstruction, "every.tasm");
    ASSERT_EQ(p.instructions.size(), 14u);
    std::string text = disassemble(p);
    EXPECT_EQ(text, kEveryInstruction);
    EXPECT_EQ(assemble(text), p);
}

TEST(Assembler, CommentsAndBlankLinesAreIgnored) {
    Program p = assemble("# header\n\n@0 nop 3   # wait\n  @1 nop 4\n");
    ASSERT_EQ(p.instructions.size(), 2u);
    EXPECT_EQ(p.instructions[0].line, 3);
    EXPECT_EQ(disassemble(p), "@0 nop 3\n@1 nop 4\n");
}

TEST(Assembler, RandomProgramsRoundTripThroughText) {
    for (uint32_t seed = 0; seed < 300; ++seed) {
        Program p = random_program(seed);
        std::string text = disassemble(p);
        Program again = assemble(text, "random.tasm");
        ASSERT_EQ(again, p) << "seed " << seed << "\n" << text;
        ASSERT_EQ(disassemble(again), text);
    }
}

TEST(Assembler, RandomProgramsRoundTripThroughBinary) {
    for (uint32_t seed = 0; seed < 300; ++seed) {
        Program p = random_program(seed);
        std::vector<uint8_t> bin = encode_program(p);
        ASSERT_TRUE(is_binary_program(bin));
        Program again = decode_program(bin);
        ASSERT_EQ(again, p) << "seed " << seed;
        ASSERT_EQ(encode_program(again), bin);
    }
}

TEST(BinaryFormat, DetectsCorruption) {
    std::vector<uint8_t> bin = encode_program(random_program(7));
    auto flipped = bin;
    flipped.back() ^= 0x40;
    expect_error([&] { decode_program(flipped, "x.tbin"); }, {"x.tbin", "checksum"});
    auto bad_magic = bin;
    bad_magic[0] = 'X';
    expect_error([&] { decode_program(bad_magic, "x.tbin"); }, {"bad magic"});
    auto version = bin;
    version[8] = 9;
    expect_error([&] { decode_program(version, "x.tbin"); }, {"unsupported version 9"});
    auto truncated = bin;
    truncated.resize(bin.size() - 3);
    expect_error([&] { decode_program(truncated, "x.tbin"); }, {"payload length"});
    expect_error([&] { decode_program(std::vector<uint8_t>(5, 0), "x.tbin"); }, {"truncated header"});
}
