// Storage flattening (Halide's StorageFlattening): multi-dimensional storage becomes flat
// buffers. Each Realize becomes an Allocate whose size follows the Func's layout — dimension
// order, blocking (a dimension split into an outer part in place and an inner block appended
// innermost, NCHW → NCHW16c), padding per dimension and alignment of the innermost extent —
// and every Provide / Call of it becomes a Store / Load at the flat index of that layout.
// Outputs are dense row-major over their region; Inputs are dense row-major over their shape.
#include <algorithm>
#include <functional>
#include <set>

#include "lowering.h"
#include "tessera/error.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"

namespace tessera::internal {

namespace {

using IndexFn = std::function<Expr(const std::vector<Expr> &)>;

/// Row-major strides over extents, as lets named prefix + k; returns the lets.
std::vector<std::pair<std::string, Expr>> stride_lets(const std::string &prefix, const std::vector<Expr> &extents) {
    std::vector<std::pair<std::string, Expr>> lets(extents.size());
    for (int k = static_cast<int>(extents.size()) - 1; k >= 0; --k) {
        const std::string n = prefix + std::to_string(k);
        if (k == static_cast<int>(extents.size()) - 1)
            lets[static_cast<size_t>(k)] = {n, Expr(1)};
        else
            lets[static_cast<size_t>(k)] = {n, loop_var(prefix + std::to_string(k + 1)) * extents[static_cast<size_t>(k + 1)]};
    }
    std::reverse(lets.begin(), lets.end()); // innermost stride first, as later ones read it
    return lets;
}

Stmt wrap(const std::vector<std::pair<std::string, Expr>> &lets, Stmt body) {
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = LetStmt::make(it->first, it->second, body);
    return body;
}

/// A Func's storage dimensions under its layout, with the index function into them.
struct StorageLayout {
    std::vector<Expr> extents;
    std::vector<std::pair<std::string, Expr>> lets;
    IndexFn index;
};

StorageLayout layout_storage(const LoweredFunc &f, const std::vector<Range> &bounds) {
    const FunctionContents &fc = f.contents;
    const Layout &l = f.layout;
    const std::string err = schedule_error_prefix(fc.name, 0) + "layout(" + l.to_string() + "): ";
    const size_t n = fc.args.size();
    auto arg_index = [&](const std::string &name) -> size_t {
        auto it = std::find(fc.args.begin(), fc.args.end(), name);
        if (it == fc.args.end())
            throw Error(err + "'" + name + "' is not a dimension of " + fc.name + "; its dimensions are " + join_names(fc.args));
        return static_cast<size_t>(it - fc.args.begin());
    };
    std::vector<size_t> order;
    if (l.order.empty()) {
        for (size_t d = 0; d < n; ++d) order.push_back(d);
    } else {
        std::set<size_t> seen;
        for (const auto &name : l.order) {
            size_t d = arg_index(name);
            if (!seen.insert(d).second) throw Error(err + "dimension '" + name + "' is listed twice");
            order.push_back(d);
        }
        if (order.size() != n)
            throw Error(err + "the order must list every dimension of " + fc.name + " once: " + join_names(fc.args));
    }
    std::vector<int64_t> block(n, 0);
    for (const auto &b : l.blocks) {
        size_t d = arg_index(b.dim);
        if (b.factor < 1) throw Error(err + "block factor of '" + b.dim + "' must be positive");
        if (block[d]) throw Error(err + "dimension '" + b.dim + "' is blocked twice");
        block[d] = b.factor;
    }
    std::vector<int64_t> pad(n, 0);
    for (const auto &[name, p] : l.padding) {
        if (p < 0) throw Error(err + "padding of '" + name + "' must be >= 0");
        pad[arg_index(name)] = p;
    }
    if (l.alignment < 1) throw Error(err + "alignment must be >= 1");

    StorageLayout s;
    const std::string base = fc.name + ".buf.";
    std::vector<Expr> mins;
    for (size_t d = 0; d < n; ++d) {
        s.lets.emplace_back(base + fc.args[d] + ".min", bounds[d].min);
        s.lets.emplace_back(base + fc.args[d] + ".extent", bounds[d].extent);
        mins.push_back(loop_var(base + fc.args[d] + ".min"));
    }
    auto ext = [&](size_t d) { return loop_var(base + fc.args[d] + ".extent"); };
    // Storage dimensions: (source dim, kind) with kind 0 = whole, 1 = outer block, 2 = inner block.
    std::vector<std::pair<size_t, int>> dims;
    for (size_t d : order) {
        dims.emplace_back(d, block[d] ? 1 : 0);
        const int64_t f = block[d];
        Expr e = f ? (ext(d) + static_cast<int>(f - 1)) / static_cast<int>(f) : ext(d);
        if (pad[d]) e = e + static_cast<int>(pad[d]);
        s.extents.push_back(e);
    }
    for (const auto &b : l.blocks) {
        size_t d = arg_index(b.dim);
        dims.emplace_back(d, 2);
        s.extents.push_back(Expr(static_cast<int>(b.factor)));
    }
    if (l.alignment > 1) {
        const int a = static_cast<int>(l.alignment);
        s.extents.back() = (s.extents.back() + (a - 1)) / a * a;
    }
    auto strides = stride_lets(base + "stride.", s.extents);
    s.lets.insert(s.lets.end(), strides.begin(), strides.end());
    s.index = [dims, mins, block, base](const std::vector<Expr> &args) {
        Expr idx;
        for (size_t k = 0; k < dims.size(); ++k) {
            auto [d, kind] = dims[k];
            Expr c = args[d] - mins[d];
            if (kind == 1) c = c / static_cast<int>(block[d]);
            if (kind == 2) c = c % static_cast<int>(block[d]);
            Expr term = c * loop_var(base + "stride." + std::to_string(k));
            idx = idx.defined() ? idx + term : term;
        }
        return idx.defined() ? idx : Expr(0);
    };
    return s;
}

class Flatten : public IRMutator {
public:
    Flatten(const LoweringEnv &env, const IntervalScope &known) : scope_(known), env_(env) {}
    std::map<std::string, IndexFn> index;

protected:
    using IRMutator::visit;

    Stmt visit(const For *op, const Stmt &s) override {
        Interval lo = bounds_of_expr(simplify_with_bounds(op->min, scope_), scope_);
        Interval hi = bounds_of_expr(simplify_with_bounds(op->min + op->extent - 1, scope_), scope_);
        return internal::with_binding(scope_, op->name, Interval(lo.min, hi.max), [&] { return IRMutator::visit(op, s); });
    }
    Stmt visit(const LetStmt *op, const Stmt &s) override {
        Interval i = bounds_of_expr(simplify_with_bounds(op->value, scope_), scope_);
        return internal::with_binding(scope_, op->name, i, [&] { return IRMutator::visit(op, s); });
    }

    Stmt visit(const Realize *op, const Stmt &s) override {
        const LoweredFunc &f = env_.at(op->name);
        // Storage inside a loop whose size varies per iteration (a clamped or shifted tile) is
        // allocated at its largest size, when that is a constant, so every iteration gets the
        // same buffer shape (what a chip needs, and what Halide does).
        std::vector<Range> bounds = op->bounds;
        for (auto &r : bounds) {
            Expr e = simplify_with_bounds(r.extent, scope_);
            if (!as_const_int(e)) {
                Interval i = bounds_of_expr(e, scope_);
                if (i.max.defined() && as_const_int(i.max)) e = i.max;
            }
            r.extent = e;
        }
        StorageLayout sl = layout_storage(f, bounds);
        auto saved = index.find(op->name) != index.end() ? std::optional<IndexFn>(index[op->name]) : std::nullopt;
        index[op->name] = sl.index;
        Stmt body = mutate(op->body);
        if (saved)
            index[op->name] = *saved;
        else
            index.erase(op->name);
        Stmt alloc = Allocate::make(op->name, op->type, op->memory, sl.extents, body, f.bank);
        return wrap(sl.lets, alloc);
    }

    Stmt visit(const Provide *op, const Stmt &s) override {
        std::vector<Expr> args;
        for (const auto &a : op->args) args.push_back(mutate(a));
        Expr value = mutate(op->value);
        return Store::make(op->name, value, lookup(op->name)(args));
    }

    Expr visit(const Call *op, const Expr &e) override {
        if (op->call_type == CallType::Intrinsic) return IRMutator::visit(op, e);
        std::vector<Expr> args;
        for (const auto &a : op->args) args.push_back(mutate(a));
        return Load::make(op->type, op->name, lookup(op->name)(args));
    }

private:

    const IndexFn &lookup(const std::string &name) {
        auto it = index.find(name);
        if (it == index.end()) throw InternalError("storage flattening: no storage for " + name + " here");
        return it->second;
    }
    IntervalScope scope_;
    const LoweringEnv &env_;
};

} // namespace

Stmt flatten_storage(const Stmt &s, const LoweringEnv &env, const IntervalScope &known) {
    Flatten fl(env, known);
    std::vector<std::pair<std::string, Expr>> lets;
    for (const auto &o : env.outputs) {
        const LoweredFunc &f = env.at(o);
        std::vector<Expr> extents, mins;
        for (size_t d = 0; d < f.contents.args.size(); ++d) {
            extents.push_back(loop_var(f.region_extent(d)));
            mins.push_back(loop_var(f.region_min(d)));
        }
        auto st = stride_lets(o + ".stride.", extents);
        lets.insert(lets.end(), st.begin(), st.end());
        fl.index[o] = [mins, o](const std::vector<Expr> &args) {
            Expr idx;
            for (size_t d = 0; d < args.size(); ++d) {
                Expr term = (args[d] - mins[d]) * loop_var(o + ".stride." + std::to_string(d));
                idx = idx.defined() ? idx + term : term;
            }
            return idx.defined() ? idx : Expr(0);
        };
    }
    for (const auto &in : env.inputs) {
        auto st = stride_lets(in.name() + ".stride.", in.shape());
        lets.insert(lets.end(), st.begin(), st.end());
        const std::string name = in.name();
        fl.index[name] = [name](const std::vector<Expr> &args) {
            Expr idx;
            for (size_t d = 0; d < args.size(); ++d) {
                Expr term = args[d] * loop_var(name + ".stride." + std::to_string(d));
                idx = idx.defined() ? idx + term : term;
            }
            return idx.defined() ? idx : Expr(0);
        };
    }
    Stmt body = fl.mutate(s);
    return wrap(lets, body);
}

} // namespace tessera::internal
