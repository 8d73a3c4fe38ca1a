// The host search space (host_search_space.h).
#include "host_search_space.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

#include "tessera/codegen/host_schedules.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_visitor.h"

namespace tessera::internal::autotune {

namespace {

bool is_output(const Pipeline &p, const Func &f) {
    for (const Func &o : p.outputs())
        if (o.name() == f.name()) return true;
    return false;
}

/// The calls to Funcs in an expression.
class FuncCalls : public IRVisitor {
public:
    std::vector<const Call *> calls;
    using IRVisitor::visit;
    void visit(const Call *c) override {
        if (c->call_type == CallType::Func) calls.push_back(c);
        IRVisitor::visit(c);
    }
};

/// The reductions of a one-output pipeline that only the output and each other read, each at
/// the reader's own row (the call's first coordinate is the reader's first pure variable); none
/// when some reduction is read otherwise (by a pure Func, at another row).
std::vector<std::string> reductions_read_at_their_rows(const Pipeline &p) {
    if (p.outputs().size() != 1) return {};
    const Func out = p.outputs()[0];
    if (out.num_updates() != 0 || out.dimensions() < 2) return {};
    std::vector<std::string> reductions;
    for (const Func &f : p.functions())
        if (f.name() != out.name() && f.num_updates() > 0 && f.dimensions() >= 1) reductions.push_back(f.name());
    auto is_reduction = [&](const std::string &n) { return std::find(reductions.begin(), reductions.end(), n) != reductions.end(); };
    for (const Func &caller : p.functions())
        for (int s = 0; s <= caller.num_updates(); ++s) {
            const Definition &d = caller.contents()->stage(s);
            FuncCalls reads;
            reads.include(d.value);
            for (const Expr &a : d.args) reads.include(a);
            for (const Call *c : reads.calls) {
                if (!is_reduction(c->name)) continue;
                const bool in_block = caller.name() == out.name() || is_reduction(caller.name());
                if (!in_block || c->args.empty() || d.args.empty() || !d.args[0].as<Variable>() || !equal(c->args[0], d.args[0]))
                    return {};
            }
        }
    return reductions;
}

} // namespace

int HostSearchSpace::add_knob(std::string name, std::vector<std::string> values) {
    knobs_.push_back({std::move(name), std::move(values)});
    return static_cast<int>(knobs_.size()) - 1;
}

HostSearchSpace::HostSearchSpace(const Pipeline &pipeline, int lanes, const std::vector<std::vector<int64_t>> &output_shapes)
    : lanes_(lanes) {
    const std::vector<Func> outputs = pipeline.outputs();
    row_reductions_ = reductions_read_at_their_rows(pipeline);
    const int64_t output_rows = output_shapes.empty() || output_shapes[0].empty() ? 0 : output_shapes[0][0];
    if (!row_reductions_.empty() && output_rows >= 128) {
        rows_output_ = outputs[0].name();
        std::vector<std::string> where{"root"};
        for (int64_t b = 64; 2 * b <= output_rows; b *= 2) where.push_back("rows/" + std::to_string(b));
        row_blocks_ = add_knob(rows_output_ + ".reductions", where);
    }
    for (const Func &f : pipeline.functions()) {
        const FunctionContents &c = *f.contents();
        const bool output = is_output(pipeline, f);
        FuncPlan fp{f.name(), -1, true};
        // A pure producer may be inlined into its consumers or computed once at the root; one
        // with updates (a reduction) has storage of its own.
        if (!output && f.num_updates() == 0) fp.compute = add_knob(f.name() + ".compute", {"inline", "root"});
        funcs_.push_back(fp);
        std::vector<int64_t> extents(c.args.size(), 0);
        for (size_t o = 0; o < outputs.size() && o < output_shapes.size(); ++o)
            if (outputs[o].name() == f.name() && output_shapes[o].size() == extents.size()) extents = output_shapes[o];
        for (int s = 0; s <= f.num_updates(); ++s) {
            StagePlan sp;
            sp.func = f.name();
            sp.stage = s;
            sp.pure = c.args;
            sp.extents = extents;
            const std::string prefix = f.name() + ".s" + std::to_string(s) + ".";
            if (s > 0) {
                const Definition &u = c.updates.at(size_t(s - 1));
                if (!writes_its_own_point(c, u)) {
                    stages_.push_back(sp); // scans and scatters keep their serial order
                    continue;
                }
                if (u.rdom)
                    for (const ReductionVariable &r : u.rdom->vars) sp.rvars.push_back(r.name);
                if (u.rdom && !u.rdom->vars.empty())
                    sp.first_rvar_extent = as_const_int(u.rdom->vars[0].extent).value_or(0);
            }
            if (sp.pure.empty()) {
                stages_.push_back(sp);
                continue;
            }
            const bool tiled = !sp.rvars.empty() && sp.pure.size() >= 2;
            // A 1-D stage may run in parallel too: a row-wise reduction's rows (softmax, norms).
            sp.parallel = add_knob(prefix + "parallel", tiled ? std::vector<std::string>{"off", "tiles", "strips"} : std::vector<std::string>{"off", "on"});
            if (!tiled) sp.vector = add_knob(prefix + "vector", {"off", "1x", "2x"});
            if (tiled) {
                // The tile's columns, in elements: half a vector (a row that a whole vector does
                // not divide, as 56 pixels with 16 lanes), or 1-3 whole vectors.
                std::vector<std::string> widths = {"off"};
                for (int w : {lanes / 2, lanes, 2 * lanes, 3 * lanes})
                    if (w >= 4) widths.push_back(std::to_string(w));
                sp.vector = add_knob(prefix + "vector", widths);
                const int64_t x_extent = sp.extents.back(), y_extent = sp.extents[sp.extents.size() - 2];
                // Register tiles: rows of accumulators (and planes of them), each 1-3 vectors.
                std::vector<std::string> rows;
                for (int r : {1, 2, 4, 6, 8})
                    if (y_extent == 0 || r <= y_extent) rows.push_back(std::to_string(r));
                sp.rows = add_knob(prefix + "rows", rows);
                if (sp.pure.size() >= 3) {
                    const int64_t z_extent = sp.extents[sp.extents.size() - 3];
                    if (z_extent == 0 || z_extent > 1) sp.planes = add_knob(prefix + "planes", {"1", "2", "4", "8"});
                }
                if (sp.first_rvar_extent > 64) {
                    std::vector<std::string> blocks = {"off"};
                    for (int64_t b : {64, 128, 256, 512})
                        if (b < sp.first_rvar_extent) blocks.push_back(std::to_string(b));
                    sp.kblock = add_knob(prefix + "kblock", blocks);
                }
                if (x_extent == 0 || x_extent > 128) {
                    std::vector<std::string> strips = {"off"};
                    for (int64_t w : {128, 256, 512, 1024})
                        if (x_extent == 0 || w < x_extent) strips.push_back(std::to_string(w));
                    sp.strip = add_knob(prefix + "strip", strips);
                }
                sp.order = add_knob(prefix + "order", {"rows-outer", "columns-outer"});
                // The reduction loops innermost-first as declared (a conv's input channels inside
                // its taps), or reversed (the taps inside, each channel's window reused).
                if (sp.rvars.size() >= 2) sp.reduction_order = add_knob(prefix + "reduction-order", {"declared", "reversed"});
                if (sp.kblock >= 0 || sp.strip >= 0) sp.pack = add_knob(prefix + "pack", {"off", "on"});
            }
            stages_.push_back(sp);
        }
    }
}

int64_t candidate_count(const std::vector<Knob> &knobs) {
    const int64_t cap = int64_t{1} << 62;
    int64_t n = 1;
    for (const Knob &k : knobs) {
        if (n > cap / int64_t(k.values.size())) return cap;
        n *= int64_t(k.values.size());
    }
    return n;
}

int64_t HostSearchSpace::size() const { return candidate_count(knobs_); }

Candidate HostSearchSpace::nth(int64_t n) const {
    Candidate c(knobs_.size(), 0);
    for (size_t k = knobs_.size(); k-- > 0;) {
        const int64_t radix = int64_t(knobs_[k].values.size());
        c[k] = int(n % radix);
        n /= radix;
    }
    return c;
}

std::string HostSearchSpace::describe(const Candidate &c) const {
    std::string s;
    for (size_t k = 0; k < knobs_.size(); ++k) s += (s.empty() ? "" : " ") + knobs_[k].name + "=" + knobs_[k].values[size_t(c[k])];
    return s.empty() ? "default" : s;
}

int64_t HostSearchSpace::number(const Candidate &c, int knob) const {
    if (knob < 0) return 0;
    const std::string &v = knobs_[size_t(knob)].values[size_t(value(c, knob))];
    return v == "off" ? 0 : std::stoll(v);
}

Candidate HostSearchSpace::register_and_cache_rule(const HostMachine &machine) const {
    Candidate c(knobs_.size(), 0); // "inline" and "off" are every knob's first value
    auto choose = [&](int knob, const std::string &value) {
        if (knob < 0) return;
        const std::vector<std::string> &values = knobs_[size_t(knob)].values;
        for (size_t v = 0; v < values.size(); ++v)
            if (values[v] == value) c[size_t(knob)] = int(v);
    };
    // The largest numeric value of a knob at most `limit` (the knob stays "off" if none is).
    auto largest_within = [&](int knob, int64_t limit) {
        if (knob < 0) return int64_t{0};
        int64_t best = 0;
        for (const std::string &v : knobs_[size_t(knob)].values)
            if (v != "off" && std::stoll(v) <= limit && std::stoll(v) > best) best = std::stoll(v);
        if (best > 0) choose(knob, std::to_string(best));
        return best;
    };
    constexpr int64_t kFloatBytes = 4;
    for (const StagePlan &sp : stages_) {
        if (sp.rows < 0) { // not tiled
            choose(sp.vector, "1x");
            choose(sp.parallel, "on");
            continue;
        }
        const int vectors = 2, width = vectors * lanes_;
        choose(sp.vector, std::to_string(width));
        largest_within(sp.rows, (machine.vector_registers - vectors - 1) / vectors);
        choose(sp.planes, "1");
        const int64_t kblock = largest_within(sp.kblock, machine.l1_bytes / 2 / (width * kFloatBytes));
        largest_within(sp.strip, machine.l2_bytes / 2 / (std::max<int64_t>(kblock, 1) * kFloatBytes));
        choose(sp.pack, "on");
        choose(sp.parallel, "tiles");
    }
    return c;
}

void HostSearchSpace::apply(const Candidate &c, const Pipeline &pipeline) const {
    pipeline.set_schedule(Schedule{});
    std::map<std::string, bool> root;
    for (const FuncPlan &fp : funcs_) root[fp.name] = fp.compute < 0 ? fp.root : value(c, fp.compute) == 1;
    // Row blocks: the output's first loop split into blocks (in parallel when its parallel knob
    // says so), each row reduction computed at a block, vectorized across its rows.
    const int64_t row_block = value(c, row_blocks_) > 0 ? std::stoll(knobs_[size_t(row_blocks_)].values[size_t(value(c, row_blocks_))].substr(5)) : 0;
    auto at_row_blocks = [&](const std::string &name) {
        return row_block > 0 && std::find(row_reductions_.begin(), row_reductions_.end(), name) != row_reductions_.end();
    };
    Func rows_output;
    for (const Func &o : pipeline.outputs())
        if (o.name() == rows_output_) rows_output = o;
    const std::string block_loop = row_block > 0 ? rows_output.args().front() + "_block" : "";
    for (const Func &f0 : pipeline.functions()) {
        Func f = f0;
        if (is_output(pipeline, f)) continue;
        if (at_row_blocks(f.name())) {
            f.compute_at(rows_output, Var(block_loop));
            const std::string row = f.args().front();
            for (int s = 0; s <= f.num_updates(); ++s) {
                Stage st = s == 0 ? Stage(f.contents(), 0) : f.update(s - 1);
                if (s > 0 && !writes_its_own_point(*f.contents(), f.contents()->updates.at(size_t(s - 1)))) continue;
                st.vectorize(VarOrRVar(row), lanes_);
                // The reduction inside the vector of rows: every lane accumulates its own row.
                const Definition &d = f.contents()->stage(s);
                if (s > 0 && d.rdom && !d.rdom->vars.empty()) {
                    std::vector<VarOrRVar> order;
                    for (const std::string &v : f.args()) order.push_back(VarOrRVar(v));
                    order.push_back(VarOrRVar(row + ".v"));
                    for (auto r = d.rdom->vars.rbegin(); r != d.rdom->vars.rend(); ++r) order.push_back(VarOrRVar(r->name));
                    st.reorder(order);
                }
            }
        } else if (root.at(f.name())) f.compute_root();
        else f.compute_inline();
    }
    for (const StagePlan &sp : stages_) {
        if (!root.at(sp.func) || sp.pure.empty() || at_row_blocks(sp.func)) continue;
        Func f;
        for (const Func &g : pipeline.functions())
            if (g.name() == sp.func) f = g;
        Stage st = sp.stage == 0 ? Stage(f.contents(), 0) : f.update(sp.stage - 1);
        if (sp.rvars.empty() || sp.pure.size() < 2) {
            const int width = value(c, sp.vector) * lanes_;
            std::string parallel_loop = sp.pure.front();
            if (sp.func == rows_output_ && row_block > 0) {
                st.split(VarOrRVar(sp.pure.front()), VarOrRVar(block_loop), VarOrRVar(sp.pure.front() + "_in"), int(row_block));
                parallel_loop = block_loop;
            }
            if (width > 0) st.vectorize(VarOrRVar(sp.pure.back()), width);
            if (value(c, sp.parallel) == 1) st.parallel(VarOrRVar(parallel_loop));
            continue;
        }
        apply_reduction(c, sp, f, st);
    }
}

void HostSearchSpace::apply_reduction(const Candidate &c, const StagePlan &sp, const Func &f, Stage st) const {
    // [outer pure loops] [column strips] [reduction block] (z_o y_o | x_o) [reduction] z_i y_i x_i:
    // z_i and y_i unrolled and x_i 1-3 vectors, so planes x rows x vectors accumulators stay in
    // registers while the reduction runs inside them.
    const int width = int(number(c, sp.vector));
    const int64_t rows = std::max<int64_t>(1, number(c, sp.rows)), planes = std::max<int64_t>(1, number(c, sp.planes));
    const size_t n = sp.pure.size();
    const std::string x = sp.pure[n - 1], y = sp.pure[n - 2], z = sp.planes >= 0 ? sp.pure[n - 3] : "";
    const size_t outer_dims = n - (z.empty() ? 2 : 3);
    std::vector<VarOrRVar> order;
    for (size_t d = 0; d < outer_dims; ++d) order.push_back(VarOrRVar(sp.pure[d]));
    auto split = [&](const std::string &v, int64_t factor, std::string &outer, std::string &inner) {
        outer = v;
        inner.clear();
        if (factor <= 1) return;
        outer = v + "_o";
        inner = v + "_i";
        st.split(VarOrRVar(v), VarOrRVar(outer), VarOrRVar(inner), int(factor));
    };
    std::string x_strip, x_rest = x, x_outer, x_inner, y_outer, y_inner, z_outer, z_inner;
    int64_t strip = number(c, sp.strip);
    if (width > 0) strip = strip / width * width; // whole tiles per strip
    if (strip > width && (sp.extents.back() == 0 || strip < sp.extents.back())) {
        x_strip = x + "_s";
        x_rest = x + "_r";
        st.split(VarOrRVar(x), VarOrRVar(x_strip), VarOrRVar(x_rest), int(strip));
    }
    split(x_rest, width, x_outer, x_inner);
    if (x_inner.empty()) std::swap(x_outer, x_inner); // no vector: the whole row is the inner loop
    split(y, rows, y_outer, y_inner);
    if (!z.empty()) split(z, planes, z_outer, z_inner);
    std::vector<std::string> rvars = sp.rvars; // innermost first
    const int64_t kblock = number(c, sp.kblock);
    std::string block;
    if (kblock > 0) {
        const std::string r = rvars.front();
        block = r + "_o";
        st.split(VarOrRVar(r), VarOrRVar(block), VarOrRVar(r + "_i"), int(kblock));
        rvars.front() = r + "_i";
    }
    if (value(c, sp.reduction_order) == 1) std::reverse(rvars.begin(), rvars.end());
    if (!x_strip.empty()) order.push_back(VarOrRVar(x_strip));
    if (!block.empty()) order.push_back(VarOrRVar(block));
    std::vector<std::string> tile_loops;
    const bool columns_outer = value(c, sp.order) == 1;
    if (columns_outer && !x_outer.empty()) tile_loops.push_back(x_outer);
    if (!z_outer.empty()) tile_loops.push_back(z_outer);
    tile_loops.push_back(y_outer);
    if (!columns_outer && !x_outer.empty()) tile_loops.push_back(x_outer);
    for (const std::string &t : tile_loops) order.push_back(VarOrRVar(t));
    for (size_t r = rvars.size(); r-- > 0;) order.push_back(VarOrRVar(rvars[r]));
    if (!z_inner.empty()) order.push_back(VarOrRVar(z_inner));
    if (!y_inner.empty()) order.push_back(VarOrRVar(y_inner));
    order.push_back(VarOrRVar(x_inner));
    st.reorder(order);
    if (width > lanes_) st.vectorize(VarOrRVar(x_inner), lanes_).unroll(VarOrRVar(x_inner)); // the vectors of the tile
    else if (width > 0) st.vectorize(VarOrRVar(x_inner));
    if (!y_inner.empty()) st.unroll(VarOrRVar(y_inner));
    if (!z_inner.empty()) st.unroll(VarOrRVar(z_inner));
    const int parallel = value(c, sp.parallel);
    if (parallel == 1) st.parallel(VarOrRVar(tile_loops.front()));
    if (parallel == 2) st.parallel(VarOrRVar(x_strip.empty() ? tile_loops.front() : x_strip));
    // Packing: the column operand copied per block (or strip) into panels as wide as the tile.
    if (value(c, sp.pack) == 1 && width > 0 && (!block.empty() || !x_strip.empty())) {
        if (std::optional<Input> B = host_schedules::input_read_by_column(f, x, sp.stage - 1); B && B->dimensions() == 2)
            B->stage(st, VarOrRVar(block.empty() ? x_strip : block), MemoryKind::Auto, Layout{{"d1", "d0"}, {{"d1", width}}, {}});
    }
}

} // namespace tessera::internal::autotune
