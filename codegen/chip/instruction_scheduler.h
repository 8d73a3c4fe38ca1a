#pragma once
// Instruction scheduling for the chip code generator.
//
// Static targets (tsp-mini): a list scheduler. Instructions come in priority order (the order
// the code generator emitted them: software-pipelined, planes interleaved); each is placed at
// the earliest cycle at which the rows it reads have landed, the rows it writes are no longer
// read, and every resource it holds is free — all three answered by chipsim's TimingModel
// (latencies, per-row access times, bank/port/stream holds), never by a latency of our own. The
// result is conflict-free by construction; the simulator confirms it.
//
// Dynamic targets (npu-edge): the hardware issues each queue in order and interlocks within a
// queue; across queues only semaphores order instructions. Every cross-queue dependency (read
// after write, write after read, write after write on a row or a weight buffer) gets a
// sync.signal right after the producer and a sync.wait before the consumer, one semaphore per
// ordered pair of queues, reusing an earlier signal when it already covers the producer.
#include <string>
#include <vector>

#include "tessera/chipsim/isa.h"
#include "tessera/chipsim/timing_model.h"

namespace tessera::internal::chip {

/// A row of chipsim's address spaces (memories, weight buffers, DRAM granules) as one key.
inline int64_t row_key(const chipsim::RowAccess &a) { return (int64_t(a.space) << 40) | a.row; }

/// An instruction as the code generator emits it.
struct ChipOp {
    chipsim::Instruction in;
    /// Start no earlier than the end of every host dma.load emitted before it (kernels whose
    /// data is all preloaded, so the kernel's cycles measure the kernel alone).
    bool after_preload = false;
    /// What it does, for error messages ("A tile k=2", "C staging").
    std::string what;
};

/// Assigns issue cycles (static targets); returns the instructions sorted by cycle. Throws
/// tessera::Error when an instruction's own operands collide on a single-ported bank (a bank
/// conflict is a compile error on static targets).
///
/// `in_order`: no instruction starts before the one emitted before it (host DMA excepted, which
/// may fill earlier gaps of the link). Code generators that use it emit their independent work
/// interleaved.
///
/// chipsim checks a static program in cycle order, the scheduler places it in emission order;
/// the two can differ where a later-emitted host transfer took an earlier gap of the link
/// (served first come, first served). The placement is replayed in cycle order, and where it
/// would be refused the program is placed again wholly in emission order, host DMA included,
/// which agrees by construction (at the cost of overlap; seen only in random schedules).
std::vector<chipsim::Instruction> schedule_static(const std::vector<ChipOp> &ops, const chipsim::TimingModel &model,
                                                  bool in_order = false);

/// Both placements, in emission order and free, and the one whose program ends first (in
/// emission order on a tie). Neither wins everywhere: free placement lets a later wave's loads
/// and vector work fill an earlier wave's gaps (an LSTM cell, a log-softmax: a third fewer
/// cycles), but greedy placement can also start work early that then holds a stream a
/// critical instruction needed (an RMSNorm: twice the cycles).
std::vector<chipsim::Instruction> schedule_static_either_order(const std::vector<ChipOp> &ops,
                                                               const chipsim::TimingModel &model);

/// Inserts semaphores for cross-queue dependencies (dynamic targets). Takes the ops by value:
/// a caller done with them moves them in, and their instructions move into the program.
std::vector<chipsim::Instruction> insert_semaphores(std::vector<ChipOp> ops, const chipsim::TimingModel &model);

} // namespace tessera::internal::chip
