// Linking a model's chip kernels into programs (chip_model.h, link_chip_model): on a chip with
// DRAM, an intermediate that one kernel stores and a later one loads in the same bytes needs no
// trip over the host link — it becomes a .buffer of one program holding both kernels. Each
// kernel keeps its own instructions and semaphores; tensors are renamed per kernel (k<i>_...),
// a linked read takes its producer's buffer, and a barrier between consecutive kernels orders
// their DRAM traffic and their reuse of the scratchpad, which chipsim tracks only on chip.
#include "tessera/codegen/chip_model.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"
#include "head_output_map.h"
#include "region_layout.h"

namespace tessera {

namespace {

using chipsim::Instruction;
using chipsim::Opcode;
using chipsim::Queue;

const chipsim::TensorDecl &decl_of(const ChipProgram &p, const ChipTensorMap &m) {
    const chipsim::TensorDecl *d = p.program.tensor(m.tensor);
    if (!d) throw Error("link_chip_model: the kernel's program declares no tensor " + m.tensor);
    return *d;
}

/// Whether a consumer's map reads exactly the bytes the producer's map wrote.
bool same_bytes(const ChipProgram &producer, const ChipTensorMap &written, const ChipProgram &consumer, const ChipTensorMap &read) {
    if (written.source_shape != read.source_shape || decl_of(producer, written).dtype != decl_of(consumer, read).dtype) return false;
    const auto w = internal::dense_placement(written), r = internal::dense_placement(read);
    return w && r && *w == *r;
}

} // namespace

std::string internal::declare_linked_tensor(ChipProgram &out, size_t kernel, const ChipProgram &kernel_program, const ChipTensorMap &m) {
    chipsim::TensorDecl d = decl_of(kernel_program, m);
    d.name = linked_tensor_name(kernel, m.tensor);
    d.file.clear();
    out.program.tensors.push_back(d);
    ChipTensorMap mm = m;
    mm.tensor = d.name;
    out.tensors.push_back(mm);
    return d.name;
}

bool internal::same_input(const ChipProgram &a, const ChipTensorMap &x, const ChipProgram &b, const ChipTensorMap &y) {
    return x.source == y.source && x.chip_shape == y.chip_shape && x.source_shape == y.source_shape &&
           x.chip_dim_of_source == y.chip_dim_of_source && x.chip_offset == y.chip_offset && x.chip_limit == y.chip_limit &&
           x.constant == y.constant && x.pad_value == y.pad_value && decl_of(a, x).dtype == decl_of(b, y).dtype;
}

namespace {

/// The highest semaphore a kernel's program uses, -1 for none.
int highest_semaphore_of(const ChipModelKernel &k) {
    int highest = -1;
    for (const Instruction &in : k.program.program.instructions)
        if (in.op == Opcode::SyncSignal || in.op == Opcode::SyncWait) highest = std::max(highest, int(in.count));
    return highest;
}

/// A barrier instruction: labelled with no kernel, so that each kernel's span (its stage in the
/// report) is its own work.
Instruction barrier(Opcode op, Queue q, int semaphore) {
    Instruction in;
    in.op = op;
    in.queue = q;
    in.count = semaphore;
    return in;
}

/// The program of kernels `members` (indices into `kernels`, run order); `leaves` are the
/// values a later program or the model reads.
ChipModelSegment link(const std::vector<ChipModelKernel> &kernels, const std::vector<size_t> &members, const std::set<std::string> &leaves) {
    ChipModelSegment seg;
    seg.kernels = members;
    const ChipProgram &first = kernels[members.front()].program;
    ChipProgram &out = seg.program;
    out.target = first.target;
    out.program.target = first.program.target;
    std::map<std::string, size_t> producer; // value -> kernel index within this program
    for (size_t i = 0; i < members.size(); ++i) producer[kernels[members[i]].head] = i;

    int highest_semaphore = -1;
    for (size_t m : members) highest_semaphore = std::max(highest_semaphore, highest_semaphore_of(kernels[m]));
    const int done = highest_semaphore + 1, next = highest_semaphore + 2; // the barrier's two semaphores
    const Queue others[] = {Queue::Load, Queue::Exec, Queue::Vector};

    std::vector<std::pair<size_t, const ChipTensorMap *>> host_inputs; // (kernel within, map) of each .input kept
    for (size_t i = 0; i < members.size(); ++i) {
        const ChipModelKernel &k = kernels[members[i]];
        const ChipProgram &cp = k.program;
        auto linked_name = [&](const std::string &tensor) { return internal::linked_tensor_name(members[i], tensor); };
        std::map<std::string, std::string> rename; // the kernel's tensor -> the linked program's
        for (const ChipTensorMap &m : cp.tensors) {
            const chipsim::TensorDecl &decl = decl_of(cp, m);
            if (m.is_output) {
                chipsim::TensorDecl d = decl;
                d.name = rename[m.tensor] = linked_name(m.tensor);
                d.file.clear();
                d.is_output = leaves.count(m.source) > 0;
                d.is_buffer = !d.is_output;
                out.program.tensors.push_back(d);
                if (d.is_output) {
                    ChipTensorMap mm = m;
                    mm.tensor = d.name;
                    out.tensors.push_back(mm);
                } else if (std::find(seg.buffers.begin(), seg.buffers.end(), m.source) == seg.buffers.end()) {
                    seg.buffers.push_back(m.source);
                }
                continue;
            }
            if (auto p = producer.find(m.source); p != producer.end() && p->second < i) {
                const ChipModelKernel &pk = kernels[members[p->second]];
                const ChipTensorMap *w = internal::stored_for(pk, cp, m);
                if (!w)
                    throw Error("link_chip_model: " + k.label + " reads " + m.source + " in another layout than " + pk.label + " wrote it");
                rename[m.tensor] = internal::linked_tensor_name(members[p->second], w->tensor);
                // A value read from its copy stays in DRAM as that copy, whether or not it leaves.
                if (w != internal::head_output_map(pk) && std::find(seg.buffers.begin(), seg.buffers.end(), m.source) == seg.buffers.end())
                    seg.buffers.push_back(m.source);
                continue;
            }
            const auto same = std::find_if(host_inputs.begin(), host_inputs.end(), [&](const auto &h) {
                return internal::same_input(kernels[members[h.first]].program, *h.second, cp, m);
            });
            if (same != host_inputs.end()) {
                rename[m.tensor] = internal::linked_tensor_name(members[same->first], same->second->tensor);
                continue;
            }
            rename[m.tensor] = internal::declare_linked_tensor(out, members[i], cp, m);
            host_inputs.emplace_back(i, &m);
        }
        for (const chipsim::TensorDecl &decl : cp.program.tensors) // the kernel's own DRAM tensors (copies)
            if (decl.is_buffer) {
                chipsim::TensorDecl d = decl;
                d.name = rename[decl.name] = linked_name(decl.name);
                out.program.tensors.push_back(d);
            }
        const int32_t stage = int32_t(i);
        out.program.stages.push_back(k.label);
        if (i > 0) // wait until every queue of the kernel before has finished
            for (Queue q : others) out.program.instructions.push_back(barrier(Opcode::SyncWait, q, next));
        for (Instruction in : cp.program.instructions) {
            if ((in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) && in.view.tensor != "DRAM") in.view.tensor = rename.at(in.view.tensor);
            in.stage = stage;
            out.program.instructions.push_back(std::move(in));
        }
        if (i + 1 < members.size()) {
            // Each queue but the store queue says it is done; the store queue, last to finish
            // (it writes the kernel's results), waits for them, then releases the next kernel.
            for (Queue q : others) out.program.instructions.push_back(barrier(Opcode::SyncSignal, q, done));
            for (size_t n = 0; n < std::size(others); ++n) out.program.instructions.push_back(barrier(Opcode::SyncWait, Queue::Store, done));
            for (size_t n = 0; n < std::size(others); ++n) out.program.instructions.push_back(barrier(Opcode::SyncSignal, Queue::Store, next));
        }
        if (leaves.count(k.head)) {
            out.outputs.push_back(k.head);
            out.output_shapes.push_back(cp.output_shapes.at(0));
            out.output_types.push_back(cp.output_types.empty() ? k.pipeline.outputs().at(0).type() : cp.output_types.at(0));
        }
    }
    std::string names;
    for (size_t m : members) names += (names.empty() ? "" : ", ") + kernels[m].label;
    out.summary = std::to_string(members.size()) + " kernels linked (" + names + "), " + std::to_string(seg.buffers.size()) +
                  " intermediates in DRAM";
    return seg;
}

} // namespace

const ChipTensorMap *internal::stored_for(const ChipModelKernel &producer, const ChipProgram &consumer, const ChipTensorMap &read) {
    if (const ChipTensorMap *w = head_output_map(producer); w && same_bytes(producer.program, *w, consumer, read)) return w;
    for (const ChipTensorMap &copy : producer.program.copies)
        if (copy.source == producer.head && same_bytes(producer.program, copy, consumer, read)) return &copy;
    return nullptr;
}

std::vector<ChipModelSegment> link_chip_model(const std::vector<ChipModelKernel> &kernels, const std::vector<std::string> &outputs) {
    std::vector<ChipModelSegment> segments;
    if (kernels.empty()) return segments;
    const chipsim::Target &t = kernels.front().program.target;
    const bool dram = t.dram.bytes > 0 && t.issue == chipsim::IssueKind::Dynamic;
    // Which kernel computes each value, and which program each kernel joins.
    std::map<std::string, size_t> producer_of;
    for (size_t k = 0; k < kernels.size(); ++k) producer_of[kernels[k].head] = k;
    std::vector<std::vector<size_t>> groups;
    std::vector<size_t> group_of(kernels.size());
    int group_semaphore = -1; // the highest semaphore the current group's kernels use
    for (size_t k = 0; k < kernels.size(); ++k) {
        // The barrier needs two semaphores above every one the group's kernels use.
        const int semaphore = highest_semaphore_of(kernels[k]);
        bool apart = !dram || groups.empty() || std::max(group_semaphore, semaphore) + 2 >= t.semaphores;
        for (const ChipTensorMap &m : kernels[k].program.tensors) {
            if (apart || m.is_output) continue;
            auto p = producer_of.find(m.source);
            if (p == producer_of.end() || group_of[p->second] != groups.size() - 1) continue; // from the host
            if (!internal::stored_for(kernels[p->second], kernels[k].program, m)) apart = true;
        }
        if (apart) {
            groups.emplace_back();
            group_semaphore = -1;
        }
        group_semaphore = std::max(group_semaphore, semaphore);
        groups.back().push_back(k);
        group_of[k] = groups.size() - 1;
    }
    // A value leaves its program when a later program reads it or the caller takes it.
    std::set<std::string> leaving(outputs.begin(), outputs.end());
    for (size_t k = 0; k < kernels.size(); ++k)
        for (const ChipTensorMap &m : kernels[k].program.tensors) {
            auto p = producer_of.find(m.source);
            if (!m.is_output && p != producer_of.end() && group_of[p->second] != group_of[k]) leaving.insert(m.source);
        }
    for (const std::vector<size_t> &g : groups) {
        std::set<std::string> leaves;
        for (size_t k : g)
            if (leaving.count(kernels[k].head)) leaves.insert(kernels[k].head);
        segments.push_back(g.size() == 1 ? ChipModelSegment{g, kernels[g[0]].program, {}} : link(kernels, g, leaves));
    }
    return segments;
}

} // namespace tessera
