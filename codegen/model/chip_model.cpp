// The graph compiler's chip partition (chip_model.h): graph values are grouped bottom-up, each
// joining the kernel of the producers only it reads whenever the chip backend compiles the
// merged kernel and it is no slower, end to end (host I/O included, simulated in time only),
// than the kernels it replaces: a matmul takes its bias, activation and residual add,
// element-wise chains become one vector kernel, two matmuls share one program where that wins. Whatever the backend refuses is split, down to one graph
// value a kernel; a value refused alone is an error that names it.
#include "tessera/codegen/chip_model.h"

#include <algorithm>
#include <optional>
#include <set>

#include "tessera/codegen/chip_schedules.h"
#include "tessera/error.h"
#include "tessera/internal/cut_subgraph.h"
#include "tessera/internal/function.h"
#include "tessera/ir_operator.h"
#include "tessera/realize.h"
#include "head_output_map.h"
#include "mem_resident_link.h"

namespace tessera {

namespace {

/// Runs a model kernel on chipsim; a failure names the kernel's graph value.
ChipResult run_kernel(const ChipModelKernel &k, const Bindings &bindings, const ChipRunOptions &options) {
    try {
        return run_on_chip(k.program, bindings, options);
    } catch (const Error &e) {
        throw Error("the kernel computing " + k.label + ": " + e.what());
    }
}

struct Partitioner {
    const Target &target;
    std::map<std::string, GraphValue> values;

    /// The kernel computing `head` with every value of `members` inside it and every other value
    /// read as an Input; the backend's refusal is returned as `error`.
    std::optional<ChipModelKernel> try_kernel(const std::string &head, const std::vector<std::string> &members, std::string &error) const {
        std::map<std::string, std::vector<int64_t>> cuts;
        const std::set<std::string> inside(members.begin(), members.end());
        for (const auto &[name, v] : values)
            if (!inside.count(name)) cuts[name] = v.shape;
        const GraphValue &hv = values.at(head);
        internal::CutSubgraph cut = internal::cut_subgraph(hv.func, cuts);
        ChipModelKernel k;
        k.head = head;
        k.label = hv.label;
        k.shape = hv.shape;
        k.pipeline = Pipeline(cut.head);
        for (const auto &read : cut.cut_inputs) k.reads.push_back(read.second);
        for (const std::string &m : members) k.fused.push_back(values.at(m).label);
        try {
            try {
                apply_chip_library_schedule(k.pipeline, target, {hv.shape});
            } catch (const Error &) {
                // No library schedule for this kernel's shape of algorithm: the backend's own
                // default tiling applies (a schedule is a speed choice, never a correctness one).
            }
            // The tuning database's best record for the kernel's workload replaces that schedule
            // when there is one (as in realize and compile_chip_artifact), and stays on the
            // pipeline: layout agreement recompiles it, and artifacts record it.
            Schedule schedule;
            {
                const internal::ChosenSchedule chosen(k.pipeline, {hv.shape}, target);
                schedule = k.pipeline.schedule();
                k.schedule_source = chosen.description();
            }
            k.pipeline.set_schedule(schedule);
            k.program = compile_for_chip(k.pipeline, target, {hv.shape});
        } catch (const Error &e) {
            error = e.what();
            return std::nullopt;
        }
        return k;
    }

    /// A kernel's cycles end to end (its host I/O included: what leaves one kernel for the next
    /// crosses the host link), simulated in time only.
    static int64_t cost(const ChipModelKernel &k) {
        Bindings zeros;
        for (const Input &in : k.pipeline.inputs()) {
            std::vector<int64_t> shape;
            for (const Expr &e : in.shape()) {
                auto n = as_const_int(e);
                if (!n) throw Error("compile_model_for_chip: Input " + in.name() + " has a symbolic dimension; bind it first");
                shape.push_back(*n);
            }
            zeros.emplace_back(in, Buffer<>(in.type(), shape));
        }
        ChipRunOptions timing;
        timing.functional = false;
        return run_kernel(k, zeros, timing).report.total_cycles;
    }
};

/// The dtypes each value's readers declare (compiler tables left out).
std::map<std::string, std::set<chipsim::DType>> dtypes_read(const std::vector<ChipModelKernel> &kernels) {
    std::map<std::string, std::set<chipsim::DType>> read_as;
    for (const ChipModelKernel &k : kernels)
        for (const ChipTensorMap &m : k.program.tensors)
            if (!m.is_output && m.constant.empty()) read_as[m.source].insert(k.program.program.tensor(m.tensor)->dtype);
    return read_as;
}

/// The dtype a kernel stores its value in, when it stores it in one piece.
std::optional<chipsim::DType> stored_dtype(const ChipModelKernel &k) {
    const ChipTensorMap *m = internal::head_output_map(k);
    return m ? std::optional(k.program.program.tensor(m->tensor)->dtype) : std::nullopt;
}

bool is_output(const std::vector<std::string> &outputs, const std::string &value) {
    return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

/// On a chip without DRAM, where the values kernels pass each other stay in MEM when they fit,
/// a kernel whose epilogue adds an fp32 intermediate (a residual) is compiled again reading it
/// in bf16 (ChipLayoutRequests::input_dtype), so that its writer may store it so, at half the
/// rows, and readers that round it for the MXM read the same bytes. Kept when taken and (with
/// `no_slower`) no slower on its own; recorded in `taken`; counted in `slower` when taken only
/// slower.
void read_intermediates_narrower(std::vector<ChipModelKernel> &kernels, const std::map<std::string, size_t> &writer, const Target &target,
                                 bool no_slower, std::vector<ChipLayoutRequests> &taken, int &slower) {
    if (kernels.empty() || kernels.front().program.target.dram.bytes > 0) return;
    for (size_t i = 0; i < kernels.size(); ++i) {
        ChipModelKernel &k = kernels[i];
        ChipLayoutRequests ask = taken[i];
        for (const ChipTensorMap &m : k.program.tensors)
            if (!m.is_output && writer.count(m.source) && k.program.program.tensor(m.tensor)->dtype == chipsim::DType::FP32)
                ask.input_dtype[m.source] = chipsim::DType::BF16;
        if (ask.input_dtype.empty()) continue;
        ChipModelKernel again = k;
        try {
            again.program = compile_for_chip(k.pipeline, target, {k.shape}, {}, ask);
        } catch (const Error &) {
            continue; // the kernel as it was stands
        }
        bool took = false;
        for (const ChipTensorMap &m : again.program.tensors)
            took = took || (!m.is_output && ask.input_dtype.count(m.source) &&
                            again.program.program.tensor(m.tensor)->dtype == chipsim::DType::BF16);
        if (!took) continue;
        if (no_slower && Partitioner::cost(again) > Partitioner::cost(k)) {
            ++slower;
            continue;
        }
        k.program = std::move(again.program);
        taken[i] = ask;
    }
}

/// Layout agreement before linking: a kernel is compiled again asking
///  - to read each value in the layout the kernel before wrote it in, where it reads another;
///  - to store its value in the dtype every reader rounds it to (bf16 read by the MXM), where
///    it is no model output and stored wider: the stored values are then those the readers read.
/// The new program is kept when it took a request and, when `no_slower`, is no slower end to
/// end on its own, so that linking can keep the value on chip (in DRAM, link_chip_model, or in
/// memory, link_in_mem; without `no_slower` the caller judges the linked model instead). A kernel that cannot take its requests together is
/// tried with each kind alone. Returns the requests each kernel took (empty: none); counts in
/// `slower` the kernels that took a request only in a program slower on its own (not kept).
std::vector<ChipLayoutRequests> agree_on_layouts(std::vector<ChipModelKernel> &kernels, const std::vector<std::string> &outputs,
                                                 const Target &target, bool no_slower, int &slower) {
    std::vector<ChipLayoutRequests> taken(kernels.size());
    if (kernels.empty()) return taken;
    std::map<std::string, std::vector<int>> written; // value -> the chip dimensions of its one output map
    std::map<std::string, size_t> writer;
    for (size_t i = 0; i < kernels.size(); ++i)
        if (const ChipTensorMap *m = internal::head_output_map(kernels[i])) {
            written[kernels[i].head] = m->chip_dim_of_source;
            writer[kernels[i].head] = i;
        }
    read_intermediates_narrower(kernels, writer, target, no_slower, taken, slower);
    const std::map<std::string, std::set<chipsim::DType>> read_as = dtypes_read(kernels);
    for (size_t i = 0; i < kernels.size(); ++i) {
        ChipModelKernel &k = kernels[i];
        ChipLayoutRequests orders, narrow;
        orders.input_dtype = narrow.input_dtype = taken[i].input_dtype;
        for (const ChipTensorMap &m : k.program.tensors) {
            auto w = written.find(m.source);
            if (m.is_output || w == written.end() || w->second == m.chip_dim_of_source) continue;
            // The writer's order of the value's dimensions in chip memory, outermost first (one
            // of extent 1 that it leaves out of chip memory first: anywhere would do).
            const std::vector<int> &chip_dim = w->second;
            std::vector<int> order(chip_dim.size());
            for (size_t d = 0; d < order.size(); ++d) order[d] = int(d);
            std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return chip_dim[size_t(a)] < chip_dim[size_t(b)]; });
            orders.order[m.source] = order;
        }
        const auto readers = read_as.find(k.head);
        if (!is_output(outputs, k.head) && readers != read_as.end() && readers->second == std::set{chipsim::DType::BF16} &&
            stored_dtype(k) == chipsim::DType::FP32)
            narrow.output_dtype[k.head] = chipsim::DType::BF16;
        ChipLayoutRequests both = orders;
        both.output_dtype = narrow.output_dtype;
        std::vector<ChipLayoutRequests> tries{both};
        if (!orders.order.empty() && !narrow.output_dtype.empty()) tries.insert(tries.end(), {orders, narrow});
        for (const ChipLayoutRequests &ask : tries) {
            if (ask.order.empty() && ask.output_dtype.empty()) continue;
            ChipModelKernel again = k;
            try {
                again.program = compile_for_chip(k.pipeline, target, {k.shape}, {}, ask);
            } catch (const Error &) {
                continue; // the kernel as it was stands
            }
            bool took = !ask.output_dtype.empty() && stored_dtype(again) == ask.output_dtype.begin()->second;
            for (const ChipTensorMap &m : again.program.tensors)
                // The writer's layout, in any dtype (a bf16 copy may serve a bf16 reader later).
                if (!m.is_output && ask.order.count(m.source) &&
                    (written.at(m.source) == m.chip_dim_of_source || internal::stored_for(kernels[writer.at(m.source)], again.program, m)))
                    took = true;
            const bool kept = took && (!no_slower || Partitioner::cost(again) <= Partitioner::cost(k));
            slower += took && !kept;
            if (kept) {
                k.program = std::move(again.program);
                taken[i] = ask;
                break;
            }
        }
    }
    return taken;
}

/// Copies, after layout agreement: a kernel whose value some readers round to bf16 while others
/// (or the caller) take it whole is compiled again asking, beside what it took, for a bf16 copy
/// in DRAM (ChipLayoutRequests::copy_dtype), which those readers read once linked. Kept when
/// taken: a copy costs its kernel a cast and a store and pays only where it lets kernels share
/// a program, which the caller judges on the linked model. Returns how many kernels took one.
int add_copies(std::vector<ChipModelKernel> &kernels, const std::vector<ChipLayoutRequests> &taken, const Target &target) {
    if (kernels.empty() || kernels.front().program.target.dram.bytes == 0) return 0;
    const std::map<std::string, std::set<chipsim::DType>> read_as = dtypes_read(kernels);
    int copied = 0;
    for (size_t i = 0; i < kernels.size(); ++i) {
        ChipModelKernel &k = kernels[i];
        const auto readers = read_as.find(k.head);
        if (readers == read_as.end() || !readers->second.count(chipsim::DType::BF16) || stored_dtype(k) != chipsim::DType::FP32)
            continue;
        ChipLayoutRequests ask = taken[i];
        ask.copy_dtype[k.head] = chipsim::DType::BF16;
        try {
            ChipProgram again = compile_for_chip(k.pipeline, target, {k.shape}, {}, ask);
            if (again.copies.empty()) continue;
            k.program = std::move(again);
            ++copied;
        } catch (const Error &) {
            // the kernel as it was stands
        }
    }
    return copied;
}

/// Puts back the program it had without copies (`without`) for every kernel whose copy no kernel
/// of its program reads (a reader in another program, or one that reads another layout).
/// Returns whether any changed.
bool drop_unread_copies(std::vector<ChipModelKernel> &kernels, const std::vector<ChipModelKernel> &without,
                        const std::vector<ChipModelSegment> &programs) {
    bool changed = false;
    for (const ChipModelSegment &seg : programs)
        for (size_t k : seg.kernels) {
            if (kernels[k].program.copies.empty()) continue;
            std::set<std::string> names;
            for (const ChipTensorMap &copy : kernels[k].program.copies) names.insert(internal::linked_tensor_name(k, copy.tensor));
            const auto &instructions = seg.program.program.instructions;
            const bool read = seg.kernels.size() > 1 && std::any_of(instructions.begin(), instructions.end(), [&](const chipsim::Instruction &in) {
                                  return in.op == chipsim::Opcode::DmaLoad && names.count(in.view.tensor);
                              });
            if (read) continue;
            kernels[k].program = without[k].program;
            changed = true;
        }
    return changed;
}

/// A model's cycles end to end, host I/O included, its programs simulated in time only.
int64_t model_cycles(const std::vector<ChipModelSegment> &programs) {
    ChipRunOptions timing;
    timing.functional = false;
    int64_t cycles = 0;
    for (const ChipModelSegment &seg : programs) cycles += run_on_chip(seg.program, {}, timing).report.total_cycles;
    return cycles;
}

struct LinkedModel {
    std::vector<ChipModelKernel> kernels;
    std::vector<ChipModelSegment> programs;
    int64_t cycles = 0;
    int slower = 0; ///< Kernels that took a request only in a program slower on its own.
};

/// `kernels` after layout agreement (agree_on_layouts(.., no_slower)), linked: on a chip without
/// DRAM with values kept in memory (link_in_mem) when that has fewer cycles end to end. Copies pay only
/// where they let kernels share a program: the model is linked with them (each one no kernel of
/// its program reads dropped again) and without, and the one with fewer cycles end to end is
/// kept (ties: no copies).
LinkedModel link_with_layouts(std::vector<ChipModelKernel> kernels, const std::vector<std::string> &outputs, const Target &target,
                              bool no_slower) {
    LinkedModel m;
    const std::vector<ChipLayoutRequests> taken = agree_on_layouts(kernels, outputs, target, no_slower, m.slower);
    m.programs = link_chip_model(kernels, outputs);
    m.cycles = model_cycles(m.programs);
    // A chip without DRAM keeps values in its memory instead, where that is faster end to end.
    if (std::optional<internal::MemLinkedModel> in_mem = internal::link_in_mem(kernels, taken, outputs, target)) {
        const int64_t cycles = model_cycles(in_mem->programs);
        if (cycles < m.cycles) {
            m.kernels = std::move(in_mem->kernels);
            m.programs = std::move(in_mem->programs);
            m.cycles = cycles;
            return m;
        }
    }
    std::vector<ChipModelKernel> with_copies = kernels;
    if (add_copies(with_copies, taken, target) > 0) {
        std::vector<ChipModelSegment> linked = link_chip_model(with_copies, outputs);
        if (drop_unread_copies(with_copies, kernels, linked)) linked = link_chip_model(with_copies, outputs);
        const int64_t cycles = model_cycles(linked);
        if (cycles < m.cycles) {
            kernels = std::move(with_copies);
            m.programs = std::move(linked);
            m.cycles = cycles;
        }
    }
    m.kernels = std::move(kernels);
    return m;
}

} // namespace

ChipModelProgram compile_model_for_chip(const Pipeline &model, const std::vector<GraphValue> &values, const Target &target,
                                        const ChipModelOptions &options) {
    if (target.kind() != Target::Kind::Chip) throw Error("compile_model_for_chip: target '" + target.name() + "' is not a chip");
    Partitioner part{target, {}};
    for (const GraphValue &v : values) part.values[v.func.name()] = v;
    std::set<std::string> outputs;
    for (const Func &o : model.outputs()) {
        if (!part.values.count(o.name()))
            throw Error("compile_model_for_chip: the output Func " + o.name() + " is not among the graph values");
        outputs.insert(o.name());
    }

    // Graph values producers first, and which values each reads directly.
    std::vector<std::string> order;
    for (const Func &f : internal::topological_order(model.outputs()))
        if (part.values.count(f.name())) order.push_back(f.name());
    std::map<std::string, std::vector<std::string>> producers;
    std::map<std::string, int> consumers;
    for (const std::string &v : order) {
        std::map<std::string, std::vector<int64_t>> cuts;
        for (const auto &[name, gv] : part.values)
            if (name != v) cuts[name] = gv.shape;
        const internal::CutSubgraph cut = internal::cut_subgraph(part.values.at(v).func, cuts);
        for (const auto &read : cut.cut_inputs) {
            producers[v].push_back(read.first);
            ++consumers[read.first];
        }
    }

    // Bottom-up grouping: a value joins the kernels of the producers it alone reads.
    std::map<std::string, std::vector<std::string>> members; // kernel head -> values inside, producers first
    std::map<std::string, ChipModelKernel> kernels;
    std::map<std::string, int64_t> costs; // kernel head -> its cycles end to end
    for (const std::string &v : order) {
        std::vector<std::string> joinable;
        for (const std::string &p : producers[v])
            if (consumers[p] == 1 && !outputs.count(p) && kernels.count(p)) joinable.push_back(p);
        auto merged = [&](const std::vector<std::string> &heads) {
            std::vector<std::string> m;
            for (const std::string &h : heads) m.insert(m.end(), members[h].begin(), members[h].end());
            m.push_back(v);
            return m;
        };
        std::vector<std::vector<std::string>> attempts;
        if (!options.fuse) joinable.clear();
        if (!joinable.empty()) attempts.push_back(joinable);
        if (joinable.size() > 1)
            for (const std::string &p : joinable) attempts.push_back({p});
        // The value alone first: a merge must be no slower than the kernels it replaces.
        std::string alone_error, error;
        std::optional<ChipModelKernel> alone = part.try_kernel(v, merged({}), alone_error);
        const int64_t alone_cost = alone ? Partitioner::cost(*alone) : 0;
        bool placed = false;
        for (const std::vector<std::string> &heads : attempts) {
            const std::vector<std::string> m = merged(heads);
            std::optional<ChipModelKernel> k = part.try_kernel(v, m, error);
            if (!k) continue;
            const int64_t merged_cost = Partitioner::cost(*k);
            int64_t replaced = alone_cost;
            for (const std::string &h : heads) replaced += costs.at(h);
            if (alone && merged_cost > replaced) continue;
            for (const std::string &h : heads) {
                kernels.erase(h);
                members.erase(h);
                costs.erase(h);
            }
            members[v] = m;
            costs[v] = merged_cost;
            kernels.emplace(v, std::move(*k));
            placed = true;
            break;
        }
        if (!placed && alone) {
            members[v] = merged({});
            costs[v] = alone_cost;
            kernels.emplace(v, std::move(*alone));
            placed = true;
        }
        if (!placed)
            throw Error(part.values.at(v).label + " cannot run on " + target.name() + " even as a kernel of its own: " + alone_error);
    }

    ChipModelProgram program;
    program.target = target.name();
    for (const std::string &v : order)
        if (kernels.count(v)) program.kernels.push_back(std::move(kernels.at(v)));
    for (const Func &o : model.outputs()) program.outputs.push_back(o.name());
    if (options.link) {
        // Layouts agreed kernel by kernel, each no slower on its own, and, where a kernel could
        // take a request only in a program slower on its own, again taking every request a kernel
        // can (a kernel a little slower alone may let its neighbours share a program): the
        // linked model with fewer cycles end to end is kept (ties: the first).
        const std::vector<ChipModelKernel> unlinked = program.kernels;
        const LinkedModel strict = link_with_layouts(unlinked, program.outputs, target, true);
        program.kernels = strict.kernels;
        program.programs = strict.programs;
        if (strict.slower > 0) {
            LinkedModel eager = link_with_layouts(unlinked, program.outputs, target, false);
            if (eager.cycles < strict.cycles) {
                program.kernels = std::move(eager.kernels);
                program.programs = std::move(eager.programs);
            }
        }
    } else {
        for (size_t k = 0; k < program.kernels.size(); ++k) program.programs.push_back({{k}, program.kernels[k].program, {}});
    }
    return program;
}

ChipModelResult run_model_on_chip(const ChipModelProgram &program, const Bindings &bindings, const ChipRunOptions &options) {
    ChipModelResult result;
    result.kernels.resize(program.kernels.size());
    std::map<std::string, Buffer<>> computed; // value -> its result, host side
    for (const ChipModelSegment &seg : program.programs) {
        Bindings b = bindings;
        for (size_t k : seg.kernels)
            for (const Input &in : program.kernels[k].reads)
                if (auto it = computed.find(in.name()); it != computed.end()) b.emplace_back(in, it->second);
        ChipResult r;
        if (seg.kernels.size() == 1) {
            r = run_kernel(program.kernels[seg.kernels[0]], b, options);
        } else {
            try {
                r = run_on_chip(seg.program, b, options);
            } catch (const Error &e) {
                throw Error("the program of " + seg.program.summary + ": " + e.what());
            }
        }
        for (size_t o = 0; o < seg.program.outputs.size(); ++o) computed[seg.program.outputs[o]] = r.outputs.at(o);
        const size_t index = result.programs.size();
        const chipsim::TimingModel model(seg.program.target);
        for (size_t i = 0; i < seg.kernels.size(); ++i) {
            const ChipModelKernel &k = program.kernels[seg.kernels[i]];
            ChipKernelRun &run = result.kernels[seg.kernels[i]];
            run.head = k.head;
            run.label = k.label;
            run.program = index;
            if (seg.kernels.size() == 1) {
                run.report = r.report;
                run.end_cycle = r.report.total_cycles;
            } else {
                // Its span in the linked program: the stage its instructions are labelled with.
                const chipsim::StageReport &stage = r.report.stages.at(i);
                run.report.target = r.report.target;
                run.report.instructions = stage.instructions;
                run.report.cycles = run.report.total_cycles = stage.last_cycle - stage.first_cycle;
                run.report.macs = stage.macs;
                const chipsim::ProblemSize &problem = k.program.problem;
                if (problem.macs > 0 || problem.input_bytes + problem.output_bytes > 0) {
                    const chipsim::Roofline bound = model.problem_bound(problem);
                    run.report.problem_bound_cycles = bound.bound_cycles;
                    run.report.problem_bound_limiter = bound.limiter;
                }
                run.begin_cycle = r.report.host_link_in_cycles + stage.first_cycle;
                run.end_cycle = r.report.host_link_in_cycles + stage.last_cycle;
            }
            result.problem_bound_cycles += run.report.problem_bound_cycles;
        }
        result.cycles += r.report.cycles;
        result.host_io_cycles += r.report.host_io_cycles;
        result.programs.push_back({seg.kernels, r.report, r.trace_json});
    }
    for (const std::string &o : program.outputs) result.outputs.push_back(computed.at(o));
    return result;
}

} // namespace tessera
