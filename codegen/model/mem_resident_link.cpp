// Linking a model's kernels on a chip without DRAM, the values they pass each other kept in
// on-chip memory (mem_resident_link.h). What the Groq compiler does for a whole model: only the
// model's inputs, weights and outputs cross the host link.
#include "mem_resident_link.h"

#include <algorithm>
#include <map>
#include <set>

#include "../chip/instruction_scheduler.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/chipsim/timing_model.h"
#include "tessera/error.h"
#include "head_output_map.h"
#include "region_layout.h"

namespace tessera::internal {

namespace {

using chipsim::Instruction;
using chipsim::Opcode;
using chipsim::TileRef;

/// The memory host transfers land in and regions live in: the first that holds no accumulators.
const chipsim::MemoryDesc &data_memory(const chipsim::Target &t) {
    for (const chipsim::MemoryDesc &m : t.memories)
        if (!m.accumulator) return m;
    throw Error("link_in_mem: target " + t.name + " has no data memory");
}

/// A value kept on chip: its producer, the kernels that read it from its region, and where the
/// region is.
struct Resident {
    std::string value;
    size_t producer = 0;
    size_t last_reader = 0;
    int64_t rows = 0;         ///< The value's bytes in memory rows.
    int64_t depth = 0;        ///< Local rows it takes in every bank of every lane.
    int64_t top = -1;         ///< Its first local row; -1 while unplaced.
};

/// Where a region's row sits: lane l (hemisphere l / banks, bank l % banks) holds region rows
/// [l * lane_rows, (l + 1) * lane_rows), interleaved over the hemisphere's slices from local row
/// `top`.
struct RegionMap {
    const chipsim::MemoryDesc *memory = nullptr;
    int64_t top = 0, depth = 0;
    int64_t lane_rows() const { return depth * memory->slices; }
    int lane_of(int64_t row) const { return int(row / lane_rows()); }
    TileRef tile(int64_t first_row, int64_t count, int64_t stride) const {
        const int lane = lane_of(first_row);
        TileRef t;
        t.memory = memory->name;
        t.side = memory->side_letter(lane / memory->banks);
        t.slice = -1;
        t.bank = lane % memory->banks;
        t.base = top * memory->slices + first_row % lane_rows();
        t.count = count;
        t.stride = stride;
        return t;
    }
};

/// The mem.copy instructions between a kernel's tile and a region: tile row i and region row
/// `rows[i]`, into the region when `into_region`. Tile rows are taken in P interleaved
/// sequences (i = r, r + P, ...), each cut into runs whose region rows step evenly within one
/// lane, with the P (up to 32) that needs the fewest copies: a tile of whole pixels of a wider
/// tensor is one sequence per row of a pixel.
std::vector<Instruction> region_copies(const TileRef &tile, const std::vector<int64_t> &rows, const RegionMap &region, bool into_region) {
    struct Run {
        int64_t first, count, stride;
    };
    const int64_t n = int64_t(rows.size());
    std::vector<Run> best;
    int64_t best_period = 1;
    const int64_t longest_period = 32; // a search bound: rows of one pixel a tile takes, at most
    for (int64_t period = 1; period <= std::min(longest_period, n); ++period) {
        std::vector<Run> runs;
        for (int64_t r = 0; r < period; ++r) {
            int64_t i = r;
            while (i < n) {
                Run run{i, 1, 1};
                const int64_t next = i + period;
                if (next < n && rows[size_t(next)] > rows[size_t(i)] && region.lane_of(rows[size_t(next)]) == region.lane_of(rows[size_t(i)])) {
                    run.stride = rows[size_t(next)] - rows[size_t(i)];
                    int64_t j = next;
                    while (j < n && rows[size_t(j)] - rows[size_t(j - period)] == run.stride &&
                           region.lane_of(rows[size_t(j)]) == region.lane_of(rows[size_t(i)])) {
                        ++run.count;
                        j += period;
                    }
                }
                runs.push_back(run);
                i += run.count * period;
            }
            if (!best.empty() && runs.size() >= best.size()) break;
        }
        if (best.empty() || runs.size() < best.size()) {
            best = std::move(runs);
            best_period = period;
        }
        if (best.size() == size_t(period)) break; // one run per sequence: no period does better
    }
    std::vector<Instruction> out;
    for (const Run &run : best) {
        TileRef kernel_side = tile;
        kernel_side.base = tile.base + run.first * tile.stride;
        kernel_side.count = run.count;
        kernel_side.stride = tile.stride * best_period;
        const TileRef region_side = region.tile(rows[size_t(run.first)], run.count, run.stride);
        Instruction in;
        in.op = Opcode::MemCopy;
        in.tiles = into_region ? std::vector<TileRef>{region_side, kernel_side} : std::vector<TileRef>{kernel_side, region_side};
        out.push_back(in);
    }
    return out;
}

/// `copy` as copies none of which writes a bank while it reads that bank (a compile error on a
/// static chip): halves, recursively, each starting its writes later relative to its reads.
std::vector<Instruction> apart_from_own_banks(const Instruction &copy, const chipsim::TimingModel &model) {
    if (model.resources(copy).internal_bank_conflicts == 0 || copy.tiles[0].count == 1) return {copy};
    std::vector<Instruction> out;
    const int64_t half = copy.tiles[0].count / 2;
    for (const auto &[first, count] : {std::pair{int64_t(0), half}, std::pair{half, copy.tiles[0].count - half}}) {
        Instruction part = copy;
        for (TileRef &t : part.tiles) {
            t.base += first * t.stride;
            t.count = count;
        }
        for (Instruction &p : apart_from_own_banks(part, model)) out.push_back(std::move(p));
    }
    return out;
}

/// The instructions that fill `load`'s tile from a region holding the value in its writer's
/// layout: copies of whole rows, or one sxm.transpose per block of the tile whose rows are the
/// columns of evenly spaced region rows (region_layout.h).
std::vector<Instruction> region_reads(const Instruction &load, const RegionRows &rows, const RegionMap &region, chipsim::DType dtype,
                                      const chipsim::TimingModel &model) {
    const TileRef &tile = load.tiles.at(0);
    std::vector<Instruction> out;
    if (!rows.transposed) {
        for (const Instruction &c : region_copies(tile, rows.rows, region, false))
            for (Instruction &part : apart_from_own_banks(c, model)) out.push_back(std::move(part));
        return out;
    }
    const int64_t lanes = tile.count / int64_t(rows.rows.size());
    for (size_t b = 0; b < rows.rows.size(); ++b) {
        const int64_t first = rows.rows[b], last = first + (lanes - 1) * rows.strides[b];
        if (region.lane_of(first) != region.lane_of(last))
            throw Error("link_in_mem: a block to transpose spans two lanes of its region");
        Instruction sx;
        sx.op = Opcode::SxmTranspose;
        sx.dtype = dtype;
        TileRef dst = tile;
        dst.base = tile.base + int64_t(b) * lanes * tile.stride;
        dst.count = lanes;
        sx.tiles = {dst, region.tile(first, lanes, rows.strides[b])};
        if (model.resources(sx).internal_bank_conflicts > 0)
            throw Error("link_in_mem: a transpose out of a region would read and write one bank at once");
        out.push_back(std::move(sx));
    }
    return out;
}

/// Which kernels share programs and which values stay on chip, for the values `excluded` from it.
struct Plan {
    std::vector<std::vector<size_t>> groups;
    std::vector<size_t> group_of;
    std::map<std::string, Resident> residents;
    /// (kernel, input tensor) -> the value it reads from a region.
    std::map<std::pair<size_t, std::string>, std::string> region_reads;
    std::set<std::string> leaving; ///< Values a later program or the caller takes.
};

/// Whether every host transfer of `tensor` in program `p` moves whole rows of it.
bool moves_whole_rows(const ChipProgram &p, const std::string &tensor, int64_t row_bytes) {
    for (const Instruction &in : p.program.instructions)
        if ((in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore) && in.view.tensor == tensor &&
            !tensor_rows_of(in.view, in.tiles.at(0).count, row_bytes))
            return false;
    return true;
}

/// The writer's rows each load of `read` (an input map of `reader`) takes from the region of
/// `writer`'s value, by the load's instruction index; nullopt when some load cannot take its
/// rows from it (region_rows_of).
std::optional<std::map<size_t, RegionRows>> loads_from_region(const ChipProgram &reader, const ChipTensorMap &read, const ChipModelKernel &writer,
                                                               int64_t row_bytes) {
    const ChipTensorMap *w = head_output_map(writer);
    if (!w) return std::nullopt;
    std::map<size_t, RegionRows> loads;
    const auto &ins = reader.program.instructions;
    for (size_t i = 0; i < ins.size(); ++i) {
        if (ins[i].op != Opcode::DmaLoad || ins[i].view.tensor != read.tensor) continue;
        std::optional<RegionRows> rows = region_rows_of(ins[i], reader, read, writer.program, *w, row_bytes);
        if (!rows) return std::nullopt;
        loads.emplace(i, std::move(*rows));
    }
    return loads;
}

/// `k`'s input map of program tensor `tensor`.
const ChipTensorMap &input_map(const ChipModelKernel &k, const std::string &tensor) {
    for (const ChipTensorMap &m : k.program.tensors)
        if (!m.is_output && m.tensor == tensor) return m;
    throw Error("link_in_mem: " + k.label + " declares no input tensor " + tensor);
}

Plan plan_residents(const std::vector<ChipModelKernel> &kernels, const std::vector<std::string> &outputs, const std::set<std::string> &excluded) {
    Plan plan;
    const int64_t row_bytes = data_memory(kernels.front().program.target).row_bytes;
    std::map<std::string, size_t> producer_of;
    for (size_t k = 0; k < kernels.size(); ++k) producer_of[kernels[k].head] = k;
    plan.group_of.resize(kernels.size());
    // A read of a value stored by a kernel of the same program must come from its region.
    auto from_region = [&](size_t k, const ChipTensorMap &m) -> const ChipTensorMap * {
        auto p = producer_of.find(m.source);
        if (m.is_output || !m.constant.empty() || p == producer_of.end() || p->second >= k || excluded.count(m.source)) return nullptr;
        const ChipTensorMap *w = head_output_map(kernels[p->second]);
        if (!w || !moves_whole_rows(kernels[p->second].program, w->tensor, row_bytes) ||
            !loads_from_region(kernels[k].program, m, kernels[p->second], row_bytes)) {
            return nullptr;
        }
        return w;
    };
    for (size_t k = 0; k < kernels.size(); ++k) {
        bool apart = plan.groups.empty();
        for (const ChipTensorMap &m : kernels[k].program.tensors) {
            auto p = producer_of.find(m.source);
            if (apart || m.is_output || p == producer_of.end() || p->second >= k || plan.group_of[p->second] != plan.groups.size() - 1) continue;
            if (!from_region(k, m)) apart = true; // it comes from the host, so its producer must have finished
        }
        if (apart) plan.groups.emplace_back();
        plan.groups.back().push_back(k);
        plan.group_of[k] = plan.groups.size() - 1;
    }
    plan.leaving.insert(outputs.begin(), outputs.end());
    for (size_t k = 0; k < kernels.size(); ++k)
        for (const ChipTensorMap &m : kernels[k].program.tensors) {
            auto p = producer_of.find(m.source);
            if (m.is_output || p == producer_of.end() || p->second >= k) continue;
            if (plan.group_of[p->second] != plan.group_of[k] || !from_region(k, m)) {
                plan.leaving.insert(m.source);
                continue;
            }
            Resident &r = plan.residents[m.source];
            if (r.value.empty()) {
                const ChipProgram &pp = kernels[p->second].program;
                r.value = m.source;
                r.producer = p->second;
                r.rows = (pp.program.tensor(head_output_map(kernels[p->second])->tensor)->bytes() + row_bytes - 1) / row_bytes;
            }
            r.last_reader = std::max(r.last_reader, k);
            plan.region_reads[{k, m.tensor}] = m.source;
        }
    return plan;
}

/// Whether kernel `k` may write value `written` over the region of `read`, which it reads last:
/// in its program order every row of the two values' bytes is read (all its loads of `read`)
/// before it is written (its stores of `written`), as when each output tile replaces the
/// residual tile it was computed from.
bool reads_each_row_before_writing_it(const std::vector<ChipModelKernel> &kernels, size_t k, const Plan &plan, const std::string &read,
                                      const std::string &written, int64_t row_bytes) {
    const ChipTensorMap *w = head_output_map(kernels[k]);
    if (!w || w->source != written) return false;
    std::map<int64_t, size_t> last_read, first_write;
    for (const auto &[at, value] : plan.region_reads) {
        if (at.first != k || value != read) continue;
        const auto loads = loads_from_region(kernels[k].program, input_map(kernels[k], at.second), kernels[plan.residents.at(read).producer], row_bytes);
        if (!loads) return false;
        for (const auto &[i, rows] : *loads)
            for (size_t b = 0; b < rows.rows.size(); ++b) {
                const int64_t lanes = rows.transposed ? row_bytes / chipsim::dtype_bytes(kernels[k].program.program.tensor(at.second)->dtype) : 1;
                for (int64_t l = 0; l < lanes; ++l) {
                    const int64_t q = rows.rows[b] + l * (rows.transposed ? rows.strides[b] : 0);
                    last_read[q] = std::max(last_read[q], i);
                }
            }
    }
    const auto &ins = kernels[k].program.program.instructions;
    for (size_t i = 0; i < ins.size(); ++i) {
        if (ins[i].op != Opcode::DmaStore || ins[i].view.tensor != w->tensor) continue;
        const auto rows = tensor_rows_of(ins[i].view, ins[i].tiles.at(0).count, row_bytes);
        if (!rows) return false;
        for (int64_t q : *rows)
            if (!first_write.count(q)) first_write[q] = i;
    }
    for (const auto &[q, i] : first_write)
        if (auto r = last_read.find(q); r != last_read.end() && r->second > i) return false;
    return true;
}

/// Places every region (largest first among those alive together, then in the order they are
/// made, from the top of the banks down), none below `floor`. A value may take the rows of one
/// its producer reads for the last time, of the same size, where that kernel reads each row
/// before writing it (a residual add's output over its residual). Returns a value that found
/// no room, or "" when all did.
std::string place_regions(Plan &plan, const std::vector<ChipModelKernel> &kernels, const chipsim::MemoryDesc &mem, int64_t floor) {
    const int64_t lanes = int64_t(mem.hemispheres) * mem.banks;
    std::vector<Resident *> order;
    for (auto &[v, r] : plan.residents) {
        r.depth = (r.rows + lanes * mem.slices - 1) / (lanes * mem.slices);
        r.top = -1;
        order.push_back(&r);
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const Resident *a, const Resident *b) { return a->depth != b->depth ? a->depth > b->depth : a->producer < b->producer; });
    std::vector<const Resident *> placed;
    for (Resident *r : order) {
        const Resident *over = nullptr; // the value whose rows it takes over, if any
        for (const Resident *o : placed)
            if (o->last_reader == r->producer && o->depth == r->depth &&
                reads_each_row_before_writing_it(kernels, r->producer, plan, o->value, r->value, mem.row_bytes))
                over = o;
        // Highest start whose rows no region alive at the same time takes (but the one taken over).
        int64_t top = over ? over->top : mem.rows_per_bank - r->depth;
        bool moved = true;
        while (moved && top >= floor) {
            moved = false;
            for (const Resident *o : placed) {
                const bool together = o != over && o->producer <= r->last_reader && r->producer <= o->last_reader;
                if (together && top < o->top + o->depth && o->top < top + r->depth) {
                    top = o->top - r->depth;
                    moved = true;
                }
            }
        }
        if (top < floor) return r->value;
        r->top = top;
        placed.push_back(r);
    }
    return "";
}

/// The rows each kernel leaves to the regions alive while it runs.
std::vector<int64_t> reservations(const Plan &plan, size_t kernels, int64_t rows_per_bank) {
    std::vector<int64_t> reserved(kernels, 0);
    for (const auto &[v, r] : plan.residents)
        for (size_t k = r.producer; k <= r.last_reader; ++k) reserved[k] = std::max(reserved[k], rows_per_bank - r.top);
    return reserved;
}

/// One program of the kernels of a group, their resident values in regions.
ChipModelSegment link_group(const std::vector<ChipModelKernel> &kernels, const std::vector<size_t> &members, const Plan &plan) {
    ChipModelSegment seg;
    seg.kernels = members;
    const ChipProgram &first = kernels[members.front()].program;
    const chipsim::MemoryDesc &mem = data_memory(first.target);
    ChipProgram &out = seg.program;
    out.target = first.target;
    out.program.target = first.program.target;
    const chipsim::TimingModel model(out.target);
    std::vector<chip::ChipOp> ops;
    std::vector<std::pair<size_t, const ChipTensorMap *>> host_inputs;
    auto region_of = [&](const std::string &value) {
        const Resident &r = plan.residents.at(value);
        return RegionMap{&mem, r.top, r.depth};
    };
    for (size_t i = 0; i < members.size(); ++i) {
        const size_t k = members[i];
        const ChipProgram &cp = kernels[k].program;
        std::map<std::string, std::string> rename;  // the kernel's host tensor -> the program's
        std::map<std::string, std::string> read_from; // the kernel's input tensor -> the resident value
        std::map<std::string, std::string> stored_to; // the kernel's output tensor -> its resident value
        for (const ChipTensorMap &m : cp.tensors) {
            if (m.is_output) {
                if (plan.residents.count(m.source) && head_output_map(kernels[k]) == &m) stored_to[m.tensor] = m.source;
                if (plan.leaving.count(m.source)) rename[m.tensor] = declare_linked_tensor(out, k, cp, m);
                continue;
            }
            if (auto r = plan.region_reads.find({k, m.tensor}); r != plan.region_reads.end()) {
                read_from[m.tensor] = r->second;
                continue;
            }
            const auto same = std::find_if(host_inputs.begin(), host_inputs.end(), [&](const auto &h) {
                return same_input(kernels[h.first].program, *h.second, cp, m);
            });
            if (same != host_inputs.end()) {
                rename[m.tensor] = linked_tensor_name(same->first, same->second->tensor);
                continue;
            }
            rename[m.tensor] = declare_linked_tensor(out, k, cp, m);
            host_inputs.emplace_back(k, &m);
        }
        out.program.stages.push_back(kernels[k].label);
        const int32_t stage = int32_t(i);
        auto emit = [&](Instruction in, const std::string &what) {
            in.stage = stage;
            in.cycle = -1;
            ops.push_back({std::move(in), false, kernels[k].label + ": " + what});
        };
        for (const Instruction &in : cp.program.instructions) {
            const bool dma = in.op == Opcode::DmaLoad || in.op == Opcode::DmaStore;
            if (!dma) {
                emit(in, "its own work");
                continue;
            }
            const std::string &t = in.view.tensor;
            const auto from = read_from.find(t);
            const auto to = stored_to.find(t);
            if (from != read_from.end()) {
                const std::string &value = from->second;
                const ChipModelKernel &writer = kernels[plan.residents.at(value).producer];
                const std::optional<RegionRows> rows = region_rows_of(in, cp, input_map(kernels[k], t), writer.program, *head_output_map(writer), mem.row_bytes);
                if (!rows) throw Error("link_in_mem: a load of " + value + " takes neither whole rows nor columns of its region");
                for (Instruction &in_region : region_reads(in, *rows, region_of(value), cp.program.tensor(t)->dtype, model))
                    emit(std::move(in_region), "out of " + value + "'s region" + (rows->transposed ? ", transposed" : ""));
                continue;
            }
            if (to != stored_to.end()) {
                const std::string &value = to->second;
                const auto rows = tensor_rows_of(in.view, in.tiles.at(0).count, mem.row_bytes);
                if (!rows) throw Error("link_in_mem: a transfer of " + value + " moves part of a memory row");
                for (const Instruction &c : region_copies(in.tiles.at(0), *rows, region_of(value), true))
                    for (Instruction part : apart_from_own_banks(c, model)) emit(std::move(part), "into " + value + "'s region");
                if (!plan.leaving.count(value)) continue;
            }
            if (!rename.count(t)) continue; // an output no one outside takes
            Instruction host = in;
            host.view.tensor = rename.at(t);
            emit(std::move(host), "host transfer");
        }
        if (plan.leaving.count(kernels[k].head)) {
            out.outputs.push_back(kernels[k].head);
            out.output_shapes.push_back(cp.output_shapes.at(0));
            out.output_types.push_back(cp.output_types.empty() ? kernels[k].pipeline.outputs().at(0).type() : cp.output_types.at(0));
        }
    }
    out.program.instructions = chip::schedule_static(ops, model);
    std::string names;
    for (size_t m : members) names += (names.empty() ? "" : ", ") + kernels[m].label;
    for (const auto &[v, r] : plan.residents)
        if (std::find(members.begin(), members.end(), r.producer) != members.end()) {
            seg.buffers.push_back(v);
            seg.regions[v] = {r.top, r.depth};
        }
    out.summary = std::to_string(members.size()) + " kernels linked (" + names + "), " + std::to_string(seg.buffers.size()) +
                  " intermediates kept in " + mem.name;
    return seg;
}

} // namespace

std::optional<MemLinkedModel> link_in_mem(const std::vector<ChipModelKernel> &kernels, const std::vector<ChipLayoutRequests> &requests,
                                          const std::vector<std::string> &outputs, const Target &target) {
    if (kernels.empty() || kernels.front().program.target.dram.bytes > 0) return std::nullopt;
    const chipsim::MemoryDesc mem = data_memory(kernels.front().program.target);
    // A kernel keeps at least a quarter of every bank.
    const int64_t floor = mem.rows_per_bank / 4;
    MemLinkedModel linked{kernels, {}};
    std::vector<int64_t> compiled_with(kernels.size(), 0);
    std::set<std::string> excluded;
    Plan plan;
    for (size_t attempt = 0;; ++attempt) {
        if (attempt > 4 * kernels.size() + 8) return std::nullopt; // no fixed point: leave the model unlinked
        plan = plan_residents(linked.kernels, outputs, excluded);
        if (plan.residents.empty()) return std::nullopt;
        if (std::string full = place_regions(plan, linked.kernels, mem, floor); !full.empty()) {
            excluded.insert(full);
            continue;
        }
        const std::vector<int64_t> reserved = reservations(plan, kernels.size(), mem.rows_per_bank);
        bool changed = false, failed = false;
        for (size_t k = 0; k < kernels.size() && !failed; ++k) {
            if (reserved[k] == compiled_with[k]) continue;
            ChipLayoutRequests ask = requests.at(k);
            ask.reserved_rows = reserved[k];
            try {
                linked.kernels[k].program = reserved[k] == 0 ? kernels[k].program
                                                             : compile_for_chip(kernels[k].pipeline, target, {kernels[k].shape}, {}, ask);
                compiled_with[k] = reserved[k];
                changed = true;
            } catch (const Error &) {
                // Too few rows left: the largest value alive while it runs goes back to the host.
                const Resident *largest = nullptr;
                for (const auto &[v, r] : plan.residents)
                    if (r.producer <= k && k <= r.last_reader && (!largest || r.rows > largest->rows)) largest = &r;
                excluded.insert(largest->value);
                failed = true;
            }
        }
        if (!changed && !failed) break;
    }
    for (const std::vector<size_t> &g : plan.groups) {
        bool resident = false;
        for (size_t k : g)
            for (const auto &[v, r] : plan.residents) resident = resident || r.producer == k;
        if (g.size() == 1 || !resident) {
            for (size_t k : g) linked.programs.push_back({{k}, linked.kernels[k].program, {}});
            continue;
        }
        try {
            linked.programs.push_back(link_group(linked.kernels, g, plan));
        } catch (const Error &) {
            return std::nullopt; // a copy the chip cannot issue: the model stays unlinked
        }
    }
    return linked;
}

} // namespace tessera::internal
