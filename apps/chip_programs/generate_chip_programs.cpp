// Generates the example chip programs in this folder, their input .npy files and their expected
// output .npy files. Expected outputs come from plain scalar loops here (not from chipsim's MXM
// kernel); the static tsp-mini schedule comes from chipsim's ASAP scheduler, so every @cycle is
// one the timing model accepts. Run it to regenerate (deterministic):
//
//   build/tests/chipsim/generate_chip_programs apps/chip_programs
#include <tessera/chipsim/assembler.h>
#include <tessera/chipsim/simulator.h>
#include <tessera/npy.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tessera::chipsim;

namespace {

std::string dir;

void write_text(const std::string &name, const std::string &text) {
    std::ofstream out(dir + "/" + name);
    out << text;
}

void save(const std::string &name, const char *descr, std::vector<int64_t> shape, const void *data, size_t bytes) {
    tessera::NpyArray a{descr, shape, std::vector<uint8_t>((const uint8_t *)data, (const uint8_t *)data + bytes)};
    tessera::write_npy(dir + "/" + name, a);
}

std::vector<int8_t> random_int8(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<int8_t> v(n);
    for (auto &x : v) x = int8_t(int(rng() % 256) - 128);
    return v;
}

/// bf16 values drawn from small fractions so sums stay well conditioned.
std::vector<uint16_t> random_bf16(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint16_t> v(n);
    for (auto &x : v) x = float_to_bf16(float(int(rng() % 65) - 32) / 16.0f);
    return v;
}

// ---------------------------------------------------------------------------------------------
// tsp_matmul_int8: C[M,256] int32 = A[M,256] int8 x B[256,256] int8 on all four MXM planes.
// Plane p owns output columns p*64..p*64+63. M is cut into chunks; per chunk each plane walks the
// four K tiles (starting at a different one per plane, so the planes read different MEM slices),
// accumulating in its ACC, then drains the chunk while the next chunk computes. Weight tiles are
// interleaved over the west slices (4 rows per cycle); outputs are interleaved over a whole
// hemisphere per plane pair so a drain writes 4 rows per cycle.
/// The program text for one way of cutting M into chunks; drain_streams[c] is the streams the
/// drain of chunk c may use (0 = the target's most).
std::string tsp_matmul_text(int M, const std::vector<int> &chunks, const std::vector<int> &drain_streams) {
    const int K = 256, N = 256;
    std::ostringstream s;
    s << ".target tsp-mini\n.input A int8 [" << M << "," << K << "] file=tsp_matmul_int8_A.npy\n"
      << ".input B int8 [" << K << "," << N << "] file=tsp_matmul_int8_B.npy\n"
      << ".output C int32 [" << M << "," << N << "] file=tsp_matmul_int8_C_expected.npy\n";
    // A's K tile kc lives in MEM.e<kc>.b0, one row per matrix row.
    for (int kc = 0; kc < 4; ++kc) s << "@0 dma.load MEM.e" << kc << ".b0[0:" << M << "], A@" << kc * 64 << "[" << M << ":" << K << ",64]\n";
    // B tile (kt, nt) -> MEM.w*.b0 rows (kt*4+nt)*64 .. +64 (8 rows in each west slice).
    for (int kt = 0; kt < 4; ++kt)
        for (int nt = 0; nt < 4; ++nt)
            s << "@0 dma.load MEM.w*.b0[" << (kt * 4 + nt) * 64 << ":64], B@" << kt * 64 * N + nt * 64 << "[64:" << N << ",64]\n";
    // Phase 1: the host loads. Phase 2 starts after them, so the kernel's cycles are compute only.
    TimingModel model(load_target("tsp-mini"));
    Program loads = schedule_asap(assemble(s.str(), "tsp_matmul_int8 loads"), model);
    int64_t kernel_start = 0;
    for (auto &in : loads.instructions) kernel_start = std::max(kernel_start, in.cycle + model.latency(in));
    const std::string at = "@" + std::to_string(kernel_start) + " ";
    int m0 = 0, step = 0;
    std::vector<std::string> stores;
    for (size_t c = 0; c < chunks.size(); ++c) {
        const int rows = chunks[c];
        for (int j = 0; j < 4; ++j)
            for (int p = 0; p < 4; ++p) {
                int kt = (p + j) % 4, buf = step % 2;
                s << at << "mxm.lw.int8 m" << p << ".w" << buf << ", MEM.w*.b0[" << (kt * 4 + p) * 64 << ":64]\n";
                s << at << "mxm.mm.int8" << (j ? ".acc" : "") << " m" << p << ".w" << buf << ", ACC.b" << p << "[" << m0 << ":" << rows
                  << "], MEM.e" << kt << ".b0[" << m0 << ":" << rows << "]\n";
                if (p == 3) ++step;
            }
        for (int p = 0; p < 4; ++p) {
            // Planes 0,1 drain east (into MEM.e*.b1), planes 2,3 west (MEM.w*.b1).
            const char *side = p < 2 ? "e" : "w";
            int base = ((p % 2) * M + m0) * 4;
            s << at << "mxm.drain.int32.int32 MEM." << side << "*.b1[" << base << ":" << rows * 4 << "], ACC.b" << p << "[" << m0
              << ":" << rows << "]" << (drain_streams[c] ? ", streams=" + std::to_string(drain_streams[c]) : "") << "\n";
            stores.push_back("@0 dma.store C@" + std::to_string((m0 * N + p * 64) * 4) + "[" + std::to_string(rows) + ":" +
                             std::to_string(N * 4) + ",256], MEM." + side + "*.b1[" + std::to_string(base) + ":" +
                             std::to_string(rows * 4) + "]\n");
        }
        m0 += rows;
    }
    for (auto &st : stores) s << st;
    return disassemble(schedule_asap(assemble(s.str(), "tsp_matmul_int8"), model));
}

// tsp_matmul_int8: C[M,256] int32 = A[M,256] int8 x B[256,256] int8 on all four MXM planes.
// Plane p owns output columns p*64..p*64+63. M is cut into chunks; per chunk each plane walks the
// four K tiles (starting at a different one per plane, so the planes read different MEM slices),
// accumulating in its ACC, then drains the chunk while the next chunk computes. Weight tiles are
// interleaved over the west slices (4 rows per cycle); outputs are interleaved over a hemisphere
// per plane pair. Streams are the scarce resource: the generator tries a few chunkings and
// drain widths and keeps the schedule with the highest MXM utilisation.
void tsp_matmul_int8() {
    const int M = 512, K = 256, N = 256;
    auto A = random_int8(size_t(M) * K, 1), B = random_int8(size_t(K) * N, 2);
    std::vector<int32_t> C(size_t(M) * N, 0);
    for (int m = 0; m < M; ++m)
        for (int k = 0; k < K; ++k)
            for (int n = 0; n < N; ++n) C[size_t(m) * N + n] += int32_t(A[size_t(m) * K + k]) * int32_t(B[size_t(k) * N + n]);
    save("tsp_matmul_int8_A.npy", "|i1", {M, K}, A.data(), A.size());
    save("tsp_matmul_int8_B.npy", "|i1", {K, N}, B.data(), B.size());
    save("tsp_matmul_int8_C_expected.npy", "<i4", {M, N}, C.data(), C.size() * 4);

    TimingModel model(load_target("tsp-mini"));
    const std::vector<std::vector<int>> chunkings = {
        {128, 128, 128, 128}, {96, 96, 96, 96, 64, 32, 32}, {128, 128, 128, 64, 32, 32}, {64, 64, 64, 64, 64, 64, 64, 64},
        {112, 112, 112, 112, 64}, {128, 128, 96, 96, 64}, {160, 160, 128, 64}, {192, 160, 96, 64}};
    std::string best;
    double best_util = -1;
    for (auto &chunks : chunkings)
        for (int policy = 0; policy < 4; ++policy) {
            std::vector<int> streams(chunks.size());
            for (size_t c = 0; c + 1 < chunks.size(); ++c) streams[c] = policy == 0 ? 0 : policy;
            std::string text = tsp_matmul_text(M, chunks, streams);
            SimOptions timing_only;
            timing_only.functional = false;
            double util = simulate(assemble(text), model, timing_only).report.mxm_utilization;
            if (util > best_util) {
                best_util = util;
                best = text;
            }
        }
    write_text("tsp_matmul_int8.tasm",
               "# int8 matmul C[512,256] = A[512,256] x B[256,256] on all four MXM planes of tsp-mini.\n"
               "# Generated by generate_chip_programs.cpp (cycles from chipsim's ASAP scheduler).\n" + best);
}

// ---------------------------------------------------------------------------------------------
// npu-edge bf16 helpers: reference of one MXM pass (fp32, k in order from 0, then added to the
// accumulator), as CHIP.md Numerics and chipsim define the systolic array's arithmetic.
float bf(uint16_t h) { return bf16_to_float(h); }

// npu_double_buffer: C[256,64] bf16 = A[256,128] bf16 x B[128,64] bf16, M tiles of 64 rows.
// The load queue fills one A buffer while the exec queue computes on the other; the store queue
// drains finished tiles to DRAM. Semaphores: 0/1 "A buffer b full", 2/3 "A buffer b free",
// 4/5 "out buffer b full", 6/7 "out buffer b free".
void npu_double_buffer() {
    const int M = 256, K = 128, N = 64, TM = 64;
    auto A = random_bf16(size_t(M) * K, 3), B = random_bf16(size_t(K) * N, 4);
    std::vector<uint16_t> C(size_t(M) * N);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
            float acc = 0;
            for (int kc = 0; kc < K / 32; ++kc) {
                float part = 0;
                for (int k = kc * 32; k < kc * 32 + 32; ++k) part = part + bf(A[size_t(m) * K + k]) * bf(B[size_t(k) * N + n]);
                acc = kc ? acc + part : part;
            }
            C[size_t(m) * N + n] = float_to_bf16(acc);
        }
    save("npu_double_buffer_A.npy", "<u2", {M, K}, A.data(), A.size() * 2);
    save("npu_double_buffer_B.npy", "<u2", {K, N}, B.data(), B.size() * 2);
    save("npu_double_buffer_C_expected.npy", "<u2", {M, N}, C.data(), C.size() * 2);
    std::ostringstream s;
    s << "# Double-buffered bf16 matmul on npu-edge: C[256,64] = A[256,128] x B[128,64], 64-row tiles.\n"
         "# Generated by generate_chip_programs.cpp. Semaphores: 0/1 A buffer full, 2/3 A buffer free,\n"
         "# 4/5 output buffer full, 6/7 output buffer free.\n"
      << ".target npu-edge\n.input A bf16 [256,128] file=npu_double_buffer_A.npy\n"
      << ".input B bf16 [128,64] file=npu_double_buffer_B.npy\n"
      << ".output C bf16 [256,64] file=npu_double_buffer_C_expected.npy\n";
    // SPAD map: weights rows 0..255 (tile (kc,nc) at (kc*2+nc)*32), A buffers at 256 and 512
    // (64 rows x 4 K chunks each), output buffers at 768 and 1024 (64 rows x 2 n-tiles x 2 rows).
    for (int kc = 0; kc < 4; ++kc)
        for (int nc = 0; nc < 2; ++nc)
            s << "dma.load SPAD[" << (kc * 2 + nc) * 32 << ":32], B@" << (kc * 32 * N + nc * 32) * 2 << "[32:" << N * 2 << ",64]\n";
    const int tiles = M / TM;
    auto load_tile = [&](int i) {
        int buf = i % 2, base = 256 + buf * 256;
        if (i >= 2) s << "sync.wait.load " << 2 + buf << "\n";
        for (int kc = 0; kc < 4; ++kc)
            s << "dma.load SPAD[" << base + kc * TM << ":" << TM << "], A@" << (i * TM * K + kc * 32) * 2 << "[" << TM << ":" << K * 2 << ",64]\n";
        s << "sync.signal.load " << buf << "\n";
    };
    load_tile(0);
    int wbuf = 0;
    for (int i = 0; i < tiles; ++i) {
        if (i + 1 < tiles) load_tile(i + 1);
        int buf = i % 2, base = 256 + buf * 256, obuf = 768 + buf * 256;
        s << "sync.wait.exec " << buf << "\n";
        for (int nc = 0; nc < 2; ++nc) {
            for (int kc = 0; kc < 4; ++kc) {
                s << "mxm.lw.bf16 m0.w" << wbuf << ", SPAD[" << (kc * 2 + nc) * 32 << ":32]\n";
                s << "mxm.mm.bf16" << (kc ? ".acc" : "") << " m0.w" << wbuf << ", ACC[" << nc * TM << ":" << TM << "], SPAD["
                  << base + kc * TM << ":" << TM << "]\n";
                wbuf ^= 1;
            }
        }
        s << "sync.signal.exec " << 2 + buf << "\n";
        if (i >= 2) s << "sync.wait.exec " << 6 + buf << "\n";
        for (int nc = 0; nc < 2; ++nc)
            s << "mxm.drain.fp32.bf16 SPAD[" << obuf + nc * TM << ":" << TM << "], ACC[" << nc * TM << ":" << TM << "]\n";
        s << "sync.signal.exec " << 4 + buf << "\n";
        s << "sync.wait.store " << 4 + buf << "\n";
        for (int nc = 0; nc < 2; ++nc)
            s << "dma.store C@" << (i * TM * N + nc * 32) * 2 << "[" << TM << ":" << N * 2 << ",64], SPAD[" << obuf + nc * TM << ":" << TM << "]\n";
        s << "sync.signal.store " << 6 + buf << "\n";
    }
    write_text("npu_double_buffer.tasm", s.str());
}

// npu_bank_conflict / npu_bank_spread: Z = (X + Y) x W in bf16 for 6 tiles of 32 rows. The
// inputs arrive in one DMA each and the outputs leave in one, so the on-chip part decides the
// difference. Identical work; the conflict version puts every tile at row stride 8 (all rows on
// SPAD bank 0: the add's three operands take turns on one port and the matmul waits for the
// bank), the spread version at stride 1 (rows interleaved over the 8 banks).
void npu_bank(bool conflict) {
    const int T = 6, R = 32, M = T * R;
    auto X = random_bf16(size_t(M) * 32, 5), Y = random_bf16(size_t(M) * 32, 6), W = random_bf16(32 * 32, 7);
    std::vector<uint16_t> Z(size_t(M) * 32);
    for (int m = 0; m < M; ++m)
        for (int n = 0; n < 32; ++n) {
            float part = 0;
            for (int k = 0; k < 32; ++k) {
                float z = bf(float_to_bf16(bf(X[size_t(m) * 32 + k]) + bf(Y[size_t(m) * 32 + k])));
                part = part + z * bf(W[size_t(k) * 32 + n]);
            }
            Z[size_t(m) * 32 + n] = float_to_bf16(part);
        }
    const std::string name = conflict ? "npu_bank_conflict" : "npu_bank_spread";
    if (!conflict) { // inputs and expected outputs are shared by both programs
        save("npu_bank_X.npy", "<u2", {M, 32}, X.data(), X.size() * 2);
        save("npu_bank_Y.npy", "<u2", {M, 32}, Y.data(), Y.size() * 2);
        save("npu_bank_W.npy", "<u2", {32, 32}, W.data(), W.size() * 2);
        save("npu_bank_Z_expected.npy", "<u2", {M, 32}, Z.data(), Z.size() * 2);
    }
    // Regions of M rows: 0 = X, 1 = Y, 2 = X + Y, 3 = output; the weights after them. In the
    // conflict layout row r of a region sits at region_base + 8r (bank 0); spread: base + r.
    auto rows = [&](int region, int first, int count) {
        int base = conflict ? (region * M + first) * 8 : region * M + first;
        return "SPAD[" + std::to_string(base) + ":" + std::to_string(count) + (conflict ? ":8]" : "]");
    };
    std::ostringstream s;
    s << "# Z = (X + Y) x W in bf16 on npu-edge, 6 tiles of 32 rows, every tile "
      << (conflict ? "at row stride 8:\n# all rows on SPAD bank 0, so operands take turns on one port.\n"
                   : "at row stride 1:\n# rows interleaved over the 8 SPAD banks.\n")
      << "# Generated by generate_chip_programs.cpp; npu_bank_" << (conflict ? "spread" : "conflict")
      << ".tasm does the same work with the other layout.\n"
      << ".target npu-edge\n.input X bf16 [" << M << ",32] file=npu_bank_X.npy\n.input Y bf16 [" << M << ",32] file=npu_bank_Y.npy\n"
      << ".input W bf16 [32,32] file=npu_bank_W.npy\n.output Z bf16 [" << M << ",32] file=npu_bank_Z_expected.npy\n";
    s << "dma.load " << rows(4, 0, 32) << ", W@0[2048]\n";
    s << "dma.load " << rows(0, 0, M) << ", X@0[" << M * 64 << "]\n";
    s << "dma.load " << rows(1, 0, M) << ", Y@0[" << M * 64 << "]\n";
    s << "sync.signal.load 0\nsync.signal.load 1\n";
    s << "sync.wait.exec 0\nmxm.lw.bf16 m0.w0, " << rows(4, 0, 32) << "\n";
    s << "sync.wait.vector 1\n";
    // Semaphore 2: a tile's sum is ready; 3: every output is drained.
    for (int t = 0; t < T; ++t) {
        s << "vxm.add.bf16 " << rows(2, t * R, R) << ", " << rows(0, t * R, R) << ", " << rows(1, t * R, R) << "\n";
        s << "sync.signal.vector 2\n";
    }
    for (int t = 0; t < T; ++t) {
        s << "sync.wait.exec 2\n";
        s << "mxm.mm.bf16 m0.w0, ACC[" << (t % 4) * R << ":" << R << "], " << rows(2, t * R, R) << "\n";
        s << "mxm.drain.fp32.bf16 " << rows(3, t * R, R) << ", ACC[" << (t % 4) * R << ":" << R << "]\n";
    }
    s << "sync.signal.exec 3\nsync.wait.store 3\n";
    s << "dma.store Z@0[" << M * 64 << "], " << rows(3, 0, M) << "\n";
    write_text(name + ".tasm", s.str());
}

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: generate_chip_programs OUTPUT_DIR\n");
        return 2;
    }
    dir = argv[1];
    try {
        tsp_matmul_int8();
        npu_double_buffer();
        npu_bank(true);
        npu_bank(false);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "generate_chip_programs: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
