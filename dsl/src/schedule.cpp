// Schedule values: names of strategies and directives, readable forms, and the replay of loop
// directives on loop names that both the fluent API (record-time checks) and lowering use.
#include "tessera/schedule.h"

#include <algorithm>
#include <sstream>

#include "tessera/error.h"
#include "tessera/limits.h"

namespace tessera {

namespace {

struct TailName {
    TailStrategy tail;
    const char *name;
};
constexpr TailName kTailNames[] = {
    {TailStrategy::Auto, "auto"},
    {TailStrategy::GuardWithIf, "guard_with_if"},
    {TailStrategy::ShiftInwards, "shift_inwards"},
    {TailStrategy::RoundUp, "round_up"},
};

struct KindName {
    DirectiveKind kind;
    const char *name;
};
constexpr KindName kKindNames[] = {
    {DirectiveKind::Split, "split"},
    {DirectiveKind::Fuse, "fuse"},
    {DirectiveKind::Reorder, "reorder"},
    {DirectiveKind::Tile, "tile"},
    {DirectiveKind::Vectorize, "vectorize"},
    {DirectiveKind::Unroll, "unroll"},
    {DirectiveKind::Parallel, "parallel"},
    {DirectiveKind::ComputeInline, "compute_inline"},
    {DirectiveKind::ComputeRoot, "compute_root"},
    {DirectiveKind::ComputeAt, "compute_at"},
    {DirectiveKind::StoreRoot, "store_root"},
    {DirectiveKind::StoreAt, "store_at"},
    {DirectiveKind::Stage, "stage"},
    {DirectiveKind::StoreIn, "store_in"},
    {DirectiveKind::SetLayout, "layout"},
    {DirectiveKind::DoubleBuffer, "double_buffer"},
    {DirectiveKind::Tensorize, "tensorize"},
    {DirectiveKind::BlocksPerRow, "blocks_per_row"},
    {DirectiveKind::TileOrder, "tile_order"},
};

} // namespace

const char *tail_strategy_name(TailStrategy t) {
    for (const auto &n : kTailNames)
        if (n.tail == t) return n.name;
    return "auto";
}

TailStrategy parse_tail_strategy(const std::string &name) {
    for (const auto &n : kTailNames)
        if (name == n.name) return n.tail;
    throw Error("unknown tail strategy '" + name +
                "'; use one of auto, guard_with_if, shift_inwards, round_up");
}

const char *directive_kind_name(DirectiveKind k) {
    for (const auto &n : kKindNames)
        if (n.kind == k) return n.name;
    return "?";
}

DirectiveKind parse_directive_kind(const std::string &name) {
    std::vector<std::string> names;
    for (const auto &n : kKindNames) {
        if (name == n.name) return n.kind;
        names.emplace_back(n.name);
    }
    throw Error("unknown schedule directive '" + name + "'; use one of " + internal::join_names(names));
}

bool is_loop_directive(DirectiveKind k) {
    switch (k) {
    case DirectiveKind::Split:
    case DirectiveKind::Fuse:
    case DirectiveKind::Reorder:
    case DirectiveKind::Tile:
    case DirectiveKind::Vectorize:
    case DirectiveKind::Unroll:
    case DirectiveKind::Parallel:
    case DirectiveKind::Tensorize:
        return true;
    default:
        return false;
    }
}

std::string Layout::to_string() const {
    std::ostringstream os;
    os << "[";
    for (size_t i = 0; i < order.size(); ++i) {
        os << (i ? ", " : "") << order[i];
        auto p = padding.find(order[i]);
        if (p != padding.end() && p->second) os << "+" << p->second;
    }
    for (size_t i = 0; i < blocks.size(); ++i)
        os << ((i || !order.empty()) ? ", " : "") << blocks[i].dim << ":" << blocks[i].factor;
    os << "]";
    if (order.empty())
        for (const auto &[dim, pad] : padding) os << " pad " << dim << "+" << pad;
    if (alignment != 1) os << " align " << alignment;
    return os.str();
}

bool Directive::operator==(const Directive &o) const {
    return kind == o.kind && vars == o.vars && factors == o.factors && tail == o.tail && func == o.func &&
           consumer_stage == o.consumer_stage && memory == o.memory && bank == o.bank && layout == o.layout &&
           unit == o.unit;
}

std::string Directive::to_string() const {
    std::ostringstream os;
    os << directive_kind_name(kind) << "(";
    std::vector<std::string> parts;
    const bool names_consumer = kind == DirectiveKind::ComputeAt || kind == DirectiveKind::StoreAt ||
                                kind == DirectiveKind::Stage;
    if (names_consumer)
        parts.push_back(consumer_stage < 0 ? func
                                           : (consumer_stage == 0 ? func
                                                                  : func + ".update(" +
                                                                        std::to_string(consumer_stage - 1) + ")"));
    if (kind == DirectiveKind::Tensorize) parts.push_back(unit);
    for (const auto &v : vars) parts.push_back(v);
    for (auto f : factors) parts.push_back(std::to_string(f));
    if (tail != TailStrategy::Auto) parts.emplace_back(tail_strategy_name(tail));
    if (kind == DirectiveKind::Stage || kind == DirectiveKind::StoreIn) parts.emplace_back(memory_kind_name(memory));
    if (kind == DirectiveKind::StoreIn && bank >= 0) parts.push_back("bank " + std::to_string(bank));
    if (kind == DirectiveKind::SetLayout || (kind == DirectiveKind::Stage && !layout.is_default()))
        parts.push_back(layout.to_string());
    os << internal::join_names(parts) << ")";
    return os.str();
}

bool FuncSchedule::empty() const {
    for (const auto &[s, ds] : stages)
        if (!ds.empty()) return false;
    return true;
}

const std::vector<Directive> &FuncSchedule::stage(int s) const {
    static const std::vector<Directive> none;
    auto it = stages.find(s);
    return it == stages.end() ? none : it->second;
}

bool FuncSchedule::operator==(const FuncSchedule &o) const {
    // Empty stage lists are equivalent to absent ones.
    auto non_empty = [](const FuncSchedule &f) {
        std::map<int, std::vector<Directive>> m;
        for (const auto &[s, ds] : f.stages)
            if (!ds.empty()) m[s] = ds;
        return m;
    };
    return non_empty(*this) == non_empty(o);
}

bool Schedule::operator==(const Schedule &o) const {
    // Found by fuzz_schedule_json: {"name": "matmul", "stages": [{"stage": 0, "directives": []}]}
    // printed as no Func at all, and the comparison told the two apart.
    auto covers = [](const Schedule &a, const Schedule &b) {
        for (const auto &[name, fs] : a.funcs) {
            auto it = b.funcs.find(name);
            if (it == b.funcs.end() ? !fs.empty() : !(fs == it->second)) return false;
        }
        return true;
    };
    return covers(*this, o) && covers(o, *this);
}

bool Schedule::empty() const {
    for (const auto &[name, fs] : funcs)
        if (!fs.empty()) return false;
    return true;
}

void Schedule::add(const std::string &func, int stage, Directive d) {
    funcs[func].stages[stage].push_back(std::move(d));
}

std::string Schedule::to_string() const {
    std::ostringstream os;
    for (const auto &[name, fs] : funcs)
        for (const auto &[s, ds] : fs.stages)
            for (const auto &d : ds)
                os << name << (s == 0 ? "" : ".update(" + std::to_string(s - 1) + ")") << ": " << d.to_string()
                   << "\n";
    return os.str();
}

namespace internal {

std::string join_names(const std::vector<std::string> &names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
    return out;
}

namespace {

[[noreturn]] void fail(const std::string &stage_name, const Directive &d, const std::string &why) {
    throw Error("schedule of " + stage_name + ": " + d.to_string() + ": " + why);
}

int find_loop(const StageLoopNames &n, const std::string &v) {
    auto it = std::find(n.loops.begin(), n.loops.end(), v);
    return it == n.loops.end() ? -1 : static_cast<int>(it - n.loops.begin());
}

// Index of loop `v`, or an error saying whether it was split away or never existed, with the
// loops that may be named instead.
int require_loop(const std::string &stage_name, const StageLoopNames &n, const Directive &d, const std::string &v) {
    int i = find_loop(n, v);
    if (i >= 0) return i;
    if (std::find(n.consumed.begin(), n.consumed.end(), v) != n.consumed.end())
        fail(stage_name, d, "loop '" + v + "' was already split or fused away; the loops are " + join_names(n.loops));
    fail(stage_name, d, "unknown loop '" + v + "'; the loops are " + join_names(n.loops));
}

void require_fresh(const std::string &stage_name, const StageLoopNames &n, const Directive &d,
                   const std::string &v, const std::string &replaced) {
    if (v.empty()) fail(stage_name, d, "a new loop needs a non-empty name");
    if (v != replaced && find_loop(n, v) >= 0)
        fail(stage_name, d, "the new loop name '" + v + "' is already a loop of this stage; choose another name");
}

void require_factor(const std::string &stage_name, const Directive &d, int64_t f) {
    if (f < 1) fail(stage_name, d, "the factor must be positive, got " + std::to_string(f));
    if (f > limits::kMaxExtent)
        fail(stage_name, d, "the factor must be at most " + std::to_string(limits::kMaxExtent) + " (the largest extent), got " +
                                std::to_string(f));
}

void split_names(const std::string &stage_name, StageLoopNames &n, const Directive &d, const std::string &old,
                 const std::string &outer, const std::string &inner) {
    int i = require_loop(stage_name, n, d, old);
    require_fresh(stage_name, n, d, outer, old);
    require_fresh(stage_name, n, d, inner, old);
    if (outer == inner) fail(stage_name, d, "the outer and inner loops need different names");
    bool red = n.is_reduction[i];
    n.consumed.push_back(old);
    n.loops[i] = outer;
    n.loops.insert(n.loops.begin() + i + 1, inner);
    n.is_reduction.insert(n.is_reduction.begin() + i + 1, red);
}

} // namespace

void apply_loop_names(const std::string &stage_name, StageLoopNames &n, const Directive &d) {
    switch (d.kind) {
    case DirectiveKind::Split: {
        if (d.vars.size() != 3 || d.factors.size() != 1) fail(stage_name, d, "needs (var, outer, inner, factor)");
        require_factor(stage_name, d, d.factors[0]);
        split_names(stage_name, n, d, d.vars[0], d.vars[1], d.vars[2]);
        break;
    }
    case DirectiveKind::Tile: {
        size_t k = d.factors.size();
        if (k == 0 || d.vars.size() != 3 * k) fail(stage_name, d, "needs n vars, n outer names, n inner names and n factors");
        for (auto f : d.factors) require_factor(stage_name, d, f);
        std::vector<int> pos;
        for (size_t j = 0; j < k; ++j) pos.push_back(require_loop(stage_name, n, d, d.vars[j]));
        for (size_t j = 0; j < k; ++j)
            for (size_t m = j + 1; m < k; ++m)
                if (pos[j] == pos[m]) fail(stage_name, d, "names loop '" + d.vars[j] + "' twice");
        for (size_t j = 0; j < k; ++j) {
            split_names(stage_name, n, d, d.vars[j], d.vars[k + j], d.vars[2 * k + j]);
        }
        // Bring the tile loops together: the outer loops in order at the outermost tiled
        // position, the inner loops in order right after them.
        std::vector<std::string> tiled;
        for (size_t j = 0; j < k; ++j) tiled.push_back(d.vars[k + j]);
        for (size_t j = 0; j < k; ++j) tiled.push_back(d.vars[2 * k + j]);
        // Reorder without re-running its checks on the (already validated) names.
        std::vector<int> slots;
        for (const auto &v : tiled) slots.push_back(find_loop(n, v));
        std::vector<int> sorted = slots;
        std::sort(sorted.begin(), sorted.end());
        auto old_loops = n.loops;
        auto old_red = n.is_reduction;
        for (size_t j = 0; j < sorted.size(); ++j) {
            n.loops[sorted[j]] = old_loops[slots[j]];
            n.is_reduction[sorted[j]] = old_red[slots[j]];
        }
        break;
    }
    case DirectiveKind::Fuse: {
        if (d.vars.size() != 3) fail(stage_name, d, "needs (a, b, fused)");
        int a = require_loop(stage_name, n, d, d.vars[0]);
        int b = require_loop(stage_name, n, d, d.vars[1]);
        if (a == b) fail(stage_name, d, "cannot fuse a loop with itself");
        if (std::abs(a - b) != 1)
            fail(stage_name, d, "'" + d.vars[0] + "' and '" + d.vars[1] +
                                    "' are not adjacent loops; the loops are " + join_names(n.loops) +
                                    " (reorder them first)");
        if (n.is_reduction[a] != n.is_reduction[b])
            fail(stage_name, d, "cannot fuse a pure loop with a reduction loop");
        int outer = std::min(a, b);
        const std::string fused = d.vars[2];
        if (fused.empty() || (fused != d.vars[0] && fused != d.vars[1] && find_loop(n, fused) >= 0))
            fail(stage_name, d, "the fused loop name '" + fused + "' is already a loop of this stage");
        n.consumed.push_back(d.vars[0]);
        n.consumed.push_back(d.vars[1]);
        n.loops[outer] = fused;
        n.loops.erase(n.loops.begin() + outer + 1);
        n.is_reduction.erase(n.is_reduction.begin() + outer + 1);
        break;
    }
    case DirectiveKind::Reorder: {
        if (d.vars.size() < 2) fail(stage_name, d, "needs at least two loops");
        std::vector<int> slots;
        for (const auto &v : d.vars) {
            int i = require_loop(stage_name, n, d, v);
            if (std::find(slots.begin(), slots.end(), i) != slots.end())
                fail(stage_name, d, "names loop '" + v + "' twice");
            slots.push_back(i);
        }
        std::vector<int> sorted = slots;
        std::sort(sorted.begin(), sorted.end());
        auto old_loops = n.loops;
        auto old_red = n.is_reduction;
        for (size_t j = 0; j < sorted.size(); ++j) {
            n.loops[sorted[j]] = old_loops[slots[j]];
            n.is_reduction[sorted[j]] = old_red[slots[j]];
        }
        break;
    }
    case DirectiveKind::Vectorize:
    case DirectiveKind::Unroll: {
        if (d.vars.size() != 1 || d.factors.size() > 1) fail(stage_name, d, "needs (var[, factor])");
        if (d.factors.size() == 1) {
            require_factor(stage_name, d, d.factors[0]);
            std::string inner = d.vars[0] + (d.kind == DirectiveKind::Vectorize ? ".v" : ".u");
            split_names(stage_name, n, d, d.vars[0], d.vars[0], inner);
        } else {
            require_loop(stage_name, n, d, d.vars[0]);
        }
        break;
    }
    case DirectiveKind::Parallel: {
        if (d.vars.size() != 1) fail(stage_name, d, "needs one loop");
        require_loop(stage_name, n, d, d.vars[0]);
        break;
    }
    case DirectiveKind::Tensorize: {
        if (d.unit.empty()) fail(stage_name, d, "needs the name of a unit (e.g. \"mxm\")");
        if (d.vars.empty()) fail(stage_name, d, "needs the loops the unit covers");
        std::vector<int> pos;
        for (const auto &v : d.vars) pos.push_back(require_loop(stage_name, n, d, v));
        const int count = static_cast<int>(pos.size());
        const int first = static_cast<int>(n.loops.size()) - count;
        for (int j = 0; j < count; ++j)
            if (pos[j] != first + j) {
                std::vector<std::string> innermost(n.loops.end() - count, n.loops.end());
                fail(stage_name, d, "a unit covers the innermost loops in order; the innermost " +
                                        std::to_string(count) + " loops are " + join_names(innermost));
            }
        break;
    }
    default:
        break;
    }
}

StageLoopNames replay_loop_names(const std::string &stage_name, StageLoopNames n,
                                 const std::vector<Directive> &directives) {
    for (const auto &d : directives) apply_loop_names(stage_name, n, d);
    return n;
}

} // namespace internal

} // namespace tessera
