// The chip compiler's path from the lowered loop nest (loop_nest_codegen.h).
//
// One walk over the unflattened statement, twice: first to learn how far each Input is read
// past its edges (its program tensor is zero-padded that far), then to emit. The walk unrolls
// every loop at compile time except, in each innermost nest that ends in a Provide, the
// vectorized loop (chunks of L lanes) and one other loop, which runs down the rows of every
// operand tile: the innermost reduction loop of an update the VXM can reduce in time
// (f = f + e, max(f, e), min(f, e)), else the longest loop the Provide writes along.
#include "loop_nest_codegen.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "loop_nest_ir.h"
#include "program_tensors.h"
#include "vector_emitter.h"
#include "vector_lanes.h"
#include "vxm_expansions.h"
#include "tessera/chipsim/assembler.h"
#include "tessera/error.h"
#include "tessera/internal/function.h"
#include "tessera/ir_equality.h"
#include "tessera/ir_mutator.h"
#include "tessera/ir_operator.h"
#include "tessera/ir_printer.h"
#include "tessera/lower.h"
#include "tessera/simplify.h"

namespace tessera::internal::chip {

namespace {

using chipsim::ChainStep;
using chipsim::DType;
using chipsim::TileRef;
using chipsim::VxmOp;

/// The default rule for rows per vector instruction (the longest a row loop runs in one tile):
/// long enough that an instruction's fixed latency is small beside its rows, short enough that
/// the tiles of one statement leave memory for the list scheduler to overlap several.
constexpr int64_t kRowsPerTile = 512;
/// The default rule for independent tiles interleaved into one wave of the static schedule.
constexpr int kWavePieces = 8;

/// An index as c + row·(row variable) + lane·(lane variable).
struct Affine {
    int64_t c = 0, row = 0, lane = 0;
};

/// The values the row and lane variables take in one tile (inclusive), which decide min, max,
/// division and remainder of affine indices that are affine again inside the tile (a clamp
/// that does not bite, a reshape's i / n over a tile within one row of n).
struct TileBox {
    int64_t row_lo = 0, row_hi = 0, lane_lo = 0, lane_hi = 0;
    int64_t lowest(const Affine &a) const {
        return a.c + std::min(a.row * row_lo, a.row * row_hi) + std::min(a.lane * lane_lo, a.lane * lane_hi);
    }
    int64_t highest(const Affine &a) const {
        return a.c + std::max(a.row * row_lo, a.row * row_hi) + std::max(a.lane * lane_lo, a.lane * lane_hi);
    }
};

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::optional<Affine> affine(const Expr &e, const std::string &row, const std::string &lane, const TileBox &box) {
    if (auto v = as_const_int(e)) return Affine{*v, 0, 0};
    if (const Variable *v = e.as<Variable>()) {
        if (v->name == row) return Affine{0, 1, 0};
        if (v->name == lane) return Affine{0, 0, 1};
        return std::nullopt;
    }
    if (const Cast *c = e.as<Cast>())
        if (c->type.is_int() || c->type.is_uint()) return affine(c->value, row, lane, box);
    auto both = [&](const Expr &a, const Expr &b) -> std::optional<std::pair<Affine, Affine>> {
        auto x = affine(a, row, lane, box), y = affine(b, row, lane, box);
        if (!x || !y) return std::nullopt;
        return std::make_pair(*x, *y);
    };
    if (const Add *op = e.as<Add>())
        if (auto p = both(op->a, op->b)) return Affine{p->first.c + p->second.c, p->first.row + p->second.row, p->first.lane + p->second.lane};
    if (const Sub *op = e.as<Sub>())
        if (auto p = both(op->a, op->b)) return Affine{p->first.c - p->second.c, p->first.row - p->second.row, p->first.lane - p->second.lane};
    if (const Mul *op = e.as<Mul>())
        if (auto p = both(op->a, op->b)) {
            auto [x, y] = *p;
            if (x.row == 0 && x.lane == 0) std::swap(x, y);
            if (y.row == 0 && y.lane == 0) return Affine{x.c * y.c, x.row * y.c, x.lane * y.c};
        }
    // min / max: the side that is the smaller (larger) one over the whole tile.
    auto pick = [&](const Expr &a, const Expr &b, bool smaller) -> std::optional<Affine> {
        auto p = both(a, b);
        if (!p) return std::nullopt;
        const Affine d{p->first.c - p->second.c, p->first.row - p->second.row, p->first.lane - p->second.lane};
        if (box.highest(d) <= 0) return smaller ? p->first : p->second;
        if (box.lowest(d) >= 0) return smaller ? p->second : p->first;
        return std::nullopt;
    };
    if (const Min *op = e.as<Min>()) return pick(op->a, op->b, true);
    if (const Max *op = e.as<Max>()) return pick(op->a, op->b, false);
    // x / k and x % k (k > 0, rounding down). x = k·w + r, where w holds the row and lane terms
    // whose coefficients k divides: x / k = w + r / k and x % k = r − k·(r / k), affine where
    // r / k is one value over the tile (a reshape's (768·i + j) / 64 over rows i and a lane
    // chunk of j within one 64).
    struct Quotient {
        Affine whole, rest;
        int64_t q;
    };
    auto quotient = [&](const Expr &a, const Expr &b) -> std::optional<Quotient> {
        auto k = as_const_int(b);
        auto x = affine(a, row, lane, box);
        if (!k || *k <= 0 || !x) return std::nullopt;
        const bool row_whole = x->row % *k == 0, lane_whole = x->lane % *k == 0;
        const Affine whole{0, row_whole ? x->row / *k : 0, lane_whole ? x->lane / *k : 0};
        const Affine rest{x->c, row_whole ? 0 : x->row, lane_whole ? 0 : x->lane};
        const int64_t q = floor_div(box.lowest(rest), *k);
        if (floor_div(box.highest(rest), *k) != q) return std::nullopt;
        return Quotient{whole, rest, q};
    };
    if (const Div *op = e.as<Div>())
        if (auto q = quotient(op->a, op->b)) return Affine{q->q, q->whole.row, q->whole.lane};
    if (const Mod *op = e.as<Mod>())
        if (auto q = quotient(op->a, op->b)) {
            const int64_t k = *as_const_int(op->b);
            return Affine{q->rest.c - q->q * k, q->rest.row, q->rest.lane};
        }
    return std::nullopt;
}

/// The 32-bit lane type a value of `t` computes in on the VXM.
DType lane_dtype(Type t, const std::string &what) {
    if (t.is_float() && t.bits() <= 32) return DType::FP32;
    if ((t.is_int() || t.is_uint() || t.is_bool()) && t.bits() <= 32) return DType::Int32;
    throw Error("chip backend: " + what + " has type " + t.to_string() + "; the VXM computes in 32-bit lanes (fp32, int32)");
}

/// The values an operation computes from: its operands, or an intrinsic's arguments (a read's
/// arguments are indices, not values).
std::vector<Expr> value_operands(const Expr &e) {
    if (const Call *c = e.as<Call>()) return c->call_type == CallType::Intrinsic ? c->args : std::vector<Expr>{};
    return operands_of(e);
}

/// How a Func stored on chip maps to vector rows: its lane dimension in chunks of L, its other
/// dimensions as rows, outermost first.
struct RowLayout {
    int lane = 0;
    std::vector<int64_t> min, extent;
    int64_t chunks = 1;
    std::vector<int64_t> row_step; ///< Vector rows per step along each dimension (0 for the lane dimension).
    int64_t rows = 1;

    RowLayout() = default;
    RowLayout(int lane_dim, std::vector<int64_t> mins, std::vector<int64_t> extents, int64_t lanes)
        : lane(lane_dim), min(std::move(mins)), extent(std::move(extents)) {
        chunks = (extent[size_t(lane)] + lanes - 1) / lanes;
        row_step.assign(extent.size(), 0);
        rows = chunks;
        for (int d = int(extent.size()) - 1; d >= 0; --d) {
            if (d == lane) continue;
            row_step[size_t(d)] = rows;
            rows *= extent[size_t(d)];
        }
    }
};

/// An index the chip cannot follow across a tile's rows or lanes.
struct NotAffine : Error {
    using Error::Error;
};

/// The lane variable of a statement that runs one lane (no loop across the lanes).
const std::string kNoLane = "<one lane>";

/// One vector statement's view of its row and lane loops.
struct Point {
    std::string row_var, lane_var;
    int64_t row_min = 0, rows = 1; ///< This tile's first value of the row loop, and its rows.
    int64_t lane_min = 0;          ///< The lane loop's value in lane 0.
    int64_t lane_end = 1;          ///< One past the lane loop's last value: lanes from there on hold nothing.
};

class LoopNestCompiler {
public:
    /// A stored tile of an odd number of rows, which no packing VXM halves: the kernel is
    /// compiled again without the bf16 requests.
    struct OddRowsToPack {};

    LoopNestCompiler(ChipProgram &cp, const LoweredModule &m, const std::map<std::string, int> &lanes, const Pipeline &p,
                     const ChipLayoutRequests &layouts, bool roomiest_first = true)
        : cp_(cp), t_(cp.target), model_(t_), emitter_(model_, roomiest_first), m_(m), lanes_(lanes), layouts_(layouts), L_(t_.lanes(DType::FP32)) {
        for (const Input &in : p.inputs()) input_types_.emplace(in.name(), in);
        for (const Func &f : p.functions()) {
            const auto &c = *f.contents();
            if (c.updates.size() != 1 || immediate(c.init.value) != 0.0) continue;
            const auto &u = c.updates[0].args;
            bool pure = u.size() == c.args.size();
            for (size_t d = 0; pure && d < u.size(); ++d) pure = u[d].as<Variable>() && u[d].as<Variable>()->name == c.args[d];
            if (pure) zero_then_update_.insert(f.name());
        }
        for (const ProvideSite &s : provide_sites(m.body)) {
            if (s.stage > 0) stored_whole_.insert(s.func);
            for (const Expr &c : func_calls(s.value)) stored_whole_.insert(c.as<Call>()->name);
        }
    }

    void compile() {
        box_lanes_ = L_;
        // First walk: how far past its edges each Input is read.
        phase_ = Phase::Bounds;
        do {
            replan_ = false;
            inputs_.clear();
            walk(m_.body);
        } while (replan_);
        declare_inputs();
        declare_matrix_operands();
        declare_outputs();
        // Second: every distinct tile of an Input the statements read. When they all fit in
        // half the vector memory they are loaded once, up front (tsp-mini: before the kernel's
        // first instruction, as the host link delivers a kernel's inputs); else each
        // statement loads its own as it runs.
        phase_ = Phase::Loads;
        walk(m_.body);
        emitter_.set_stage(stage_index("load inputs"));
        preload_inputs();
        keep_small_outputs_whole();
        phase_ = Phase::Emit;
        jobs_ = 0;
        walk(m_.body);
        emitter_.set_stage(stage_index("store outputs"));
        for (auto &[name, o] : outputs_)
            if (o.whole) {
                chipsim::OffchipView v;
                v.inner_bytes = o.on_chip.layout.rows * t_.vector_bytes;
                BlockTiles packed(emitter_);
                store_output(o, v, o.on_chip.tile, packed, name + " (whole)");
                packed.retire_all();
            }
        declare_constants();
        cp_.program.target = t_.name;
        cp_.program.instructions = emitter_.schedule();
        cp_.summary += "compiled from the loop nest on the VXM: " + std::to_string(statements_) + " vector statements of up to " +
                       std::to_string(kRowsPerTile) + " rows x " + std::to_string(L_) + " lanes; lanes:";
        for (auto &[f, d] : lanes_) cp_.summary += " " + f + "[dim " + std::to_string(d) + "]";
        if (jobs_ > 0) {
            cp_.summary += "; matrix stages on the MXM:";
            for (const std::string &f : matrix_funcs_) cp_.summary += " " + f;
            cp_.summary += " (" + std::to_string(jobs_) + " jobs)";
        }
        cp_.summary += preload_summary_;
        for (const auto &[name, o] : outputs_) {
            if (o.packed) cp_.summary += "; " + name + " stored as bf16, packed by a VXM cast per stored tile";
            if (!o.copy_tensor.empty()) cp_.summary += "; a bf16 copy of " + name + " stored to DRAM too";
        }
        cp_.summary += "\n";
    }

private:
    struct InputPlan {
        std::string tensor;
        std::vector<int64_t> shape, lo, hi, stride;
        DType dtype = DType::FP32;
        /// Read lane by lane somewhere: the declared tensor then holds at least one vector row,
        /// so that a window of a row's elements always lies inside it (input_view_by_lane).
        bool by_lane = false;
        int64_t elements = 0; ///< Of the declared chip tensor, its padding included.
    };
    struct Stored {
        RowLayout layout;
        TileRef tile;
    };
    struct OutputPlan {
        std::string tensor;
        Stored on_chip; ///< Its layout; its tile when kept whole.
        bool whole = false; ///< Kept on chip whole (it has updates or is read), stored at the end.
        DType dtype = DType::FP32;
        bool packed = false;     ///< Stored as bf16, two fp32 rows packed into one (ChipLayoutRequests::output_dtype).
        std::string copy_tensor; ///< A bf16 copy stored beside it, packed so (ChipLayoutRequests::copy_dtype).
    };

    /// The tiles one vector statement loads and computes, handed back when it is done.
    struct Statement {
        Point pt;
        BlockTiles tiles;
        std::map<std::pair<const BaseExprNode *, int64_t>, TileRef> values; ///< By node and rows.
        std::map<std::string, TileRef> loads;
        std::string stage;
        std::map<const BaseExprNode *, int> uses; ///< Readers left per node.
    };

    // ---- The walk -------------------------------------------------------------------------

    Expr resolve(const Expr &e) const { return simplify(substitute_vars(e, scope_)); }

    int64_t constant(const Expr &e, const std::string &what) const {
        if (auto v = as_const_int(resolve(e))) return *v;
        throw Error("chip backend: " + what + " is " + to_string(resolve(e)) + ", not a constant; chip programs are compiled for fixed shapes");
    }

    void walk(const Stmt &s) {
        if (!s.defined()) return;
        if (const ProducerConsumer *pc = s.as<ProducerConsumer>()) return walk(pc->body);
        if (const Block *b = s.as<Block>()) {
            walk(b->first);
            return walk(b->rest);
        }
        if (const LetStmt *l = s.as<LetStmt>()) {
            auto saved = scope_;
            scope_[l->name] = resolve(l->value);
            walk(l->body);
            scope_ = std::move(saved);
            return;
        }
        if (const IfThenElse *i = s.as<IfThenElse>()) {
            auto c = as_const_int(resolve(i->condition));
            if (!c) throw Error("chip backend: the condition " + to_string(resolve(i->condition)) + " is not known at compile time");
            return walk(*c ? i->then_case : i->else_case);
        }
        if (const Realize *r = s.as<Realize>()) return realize(r);
        if (const For *f = s.as<For>()) {
            if (vector_nest(s)) return;
            if (f->kind == ForKind::Vectorized)
                throw Error("chip backend: the vectorized loop " + f->name + " holds more than one statement; on a chip a vectorized loop "
                            "runs one Provide across the lanes (compute producers outside it)");
            const int64_t lo = constant(f->min, "the start of loop " + f->name), n = constant(f->extent, "the extent of loop " + f->name);
            for (int64_t i = lo; i < lo + n; ++i) {
                scope_[f->name] = Expr(static_cast<int>(i));
                walk(f->body);
            }
            scope_.erase(f->name);
            return;
        }
        if (s.as<Provide>() && vector_nest(s)) return; // every dimension of one point: one lane, one row
        if (s.as<Evaluate>()) return;
        throw Error("chip backend: a statement the chip compiler does not handle: " + to_string(s));
    }

    void realize(const Realize *r) {
        if (phase_ != Phase::Emit) return walk(r->body);
        auto lane = lanes_.find(r->name);
        if (lane == lanes_.end()) return walk(r->body); // never written by a vector stage
        std::vector<int64_t> mins, extents;
        for (size_t d = 0; d < r->bounds.size(); ++d) {
            mins.push_back(constant(r->bounds[d].min, "the region of " + r->name));
            extents.push_back(constant(r->bounds[d].extent, "the region of " + r->name));
        }
        Stored st;
        st.layout = RowLayout(lane->second, mins, extents, L_);
        st.tile = place(st.layout.rows, r->name, matrix_funcs_.count(r->name) > 0);
        auto saved = stored_.find(r->name) == stored_.end() ? std::optional<Stored>() : std::optional<Stored>(stored_[r->name]);
        stored_[r->name] = st;
        walk(r->body);
        emitter_.retire(st.tile);
        if (saved) stored_[r->name] = *saved;
        else stored_.erase(r->name);
    }

    /// `spread`: interleaved over a hemisphere's slices even when it fits one bank — a matrix
    /// stage's product, whose column chunks (every chunks-th row) the drains write and the
    /// readers read side by side, each chunk then on a slice of its own.
    TileRef place(int64_t rows, const std::string &what, bool spread = false) {
        const int64_t bank_rows = vector_memory(t_).rows_per_bank;
        return emitter_.tile_anywhere(rows, int(placed_++ % 2), what, spread || rows > bank_rows);
    }

    /// A perfect nest of loops (with lets and guards) around one Provide: compiled as vector
    /// statements. False when `s` is not one.
    bool vector_nest(const Stmt &s) {
        std::vector<const For *> loops;
        std::vector<std::pair<std::string, Expr>> lets;
        std::vector<Expr> guards;
        Stmt cur = s;
        const Provide *provide = nullptr;
        while (cur.defined()) {
            if (const For *f = cur.as<For>()) {
                loops.push_back(f);
                cur = f->body;
            } else if (const LetStmt *l = cur.as<LetStmt>()) {
                lets.emplace_back(l->name, l->value);
                cur = l->body;
            } else if (const IfThenElse *i = cur.as<IfThenElse>()) {
                if (i->else_case.defined()) return false;
                guards.push_back(i->condition);
                cur = i->then_case;
            } else if ((provide = cur.as<Provide>())) {
                break;
            } else {
                return false;
            }
        }
        if (!provide) return false;
        // Lets and guards in terms of the nest's loops.
        std::map<std::string, Expr> let_values;
        for (auto &[n, v] : lets) let_values[n] = substitute_vars(v, let_values);
        std::vector<Expr> args;
        for (const Expr &a : provide->args) args.push_back(substitute_vars(a, let_values));
        const Expr value = substitute_vars(provide->value, let_values);
        for (Expr &g : guards) g = substitute_vars(g, let_values);
        int stage = 0;
        for (const For *f : loops)
            if (int st = stage_of_loop(provide->name, f->name); st >= 0) stage = st;
        const std::string stage_name = stage_display_name(provide->name, stage);
        if (stage == 0 && zero_initialised_.count(provide->name)) return true; // its matrix stage writes every element

        const For *lane = nullptr;
        for (const For *f : loops)
            if (f->kind == ForKind::Vectorized) {
                if (lane) throw Error("chip backend: " + stage_name + " vectorizes two loops (" + lane->name + ", " + f->name + "); the VXM has one row of lanes");
                lane = f;
            }
        // No vectorized loop: the stage writes a lane dimension of one point (one lane).
        const int lane_dim = lanes_.count(provide->name) ? lanes_.at(provide->name) : -1;
        if (!lane && !(lane_dim >= 0 && size_t(lane_dim) < args.size() && as_const_int(resolve(args[size_t(lane_dim)]))))
            throw Error("chip backend: " + stage_name + " vectorizes no loop; on a chip every stage runs across the VXM's lanes");
        // The update the VXM reduces in time: f = f op e, with op one it has a reduction for.
        std::optional<VxmOp> reduce;
        Expr reduced;
        auto self_and = [&](const Expr &a, const Expr &b) {
            const Call *c = a.as<Call>();
            if (!c || c->call_type != CallType::Func || c->name != provide->name || c->args.size() != args.size()) return false;
            for (size_t i = 0; i < args.size(); ++i)
                if (!equal(c->args[i], args[i])) return false;
            reduced = b;
            return !mentions_call(b, provide->name);
        };
        if (const Add *op = value.as<Add>()) {
            if (self_and(op->a, op->b) || self_and(op->b, op->a)) reduce = VxmOp::Add;
        } else if (const Max *op = value.as<Max>()) {
            if (self_and(op->a, op->b) || self_and(op->b, op->a)) reduce = VxmOp::Max;
        } else if (const Min *op = value.as<Min>()) {
            if (self_and(op->a, op->b) || self_and(op->b, op->a)) reduce = VxmOp::Min;
        }
        auto in_args = [&](const std::string &v) {
            return std::any_of(args.begin(), args.end(), [&](const Expr &a) { return mentions(a, v); });
        };
        // The row loop: the innermost reduction loop when the VXM reduces in time, else the
        // longest loop the Provide writes along.
        const For *row = nullptr;
        if (reduce)
            for (const For *f : loops)
                if (f != lane && !in_args(f->name)) row = f;
        if (!row) {
            reduce.reset();
            int64_t best = 0;
            for (const For *f : loops) {
                if (f == lane || !in_args(f->name)) continue;
                auto n = as_const_int(resolve(f->extent));
                if (n && *n >= best) {
                    best = *n;
                    row = f;
                }
            }
        }
        for (const For *f : loops)
            for (const For *v : {lane, row})
                if (v && f != v && (mentions(f->min, v->name) || mentions(f->extent, v->name)))
                    throw Error("chip backend: in " + stage_name + ", the bounds of loop " + f->name + " depend on " + v->name +
                                ", which runs across a tile; make " + f->name + " the outer loop");
        for (const Expr &g : guards)
            if ((lane && mentions(g, lane->name)) || (row && mentions(g, row->name)))
                throw Error("chip backend: " + stage_name + " guards its vectorized loop with " + to_string(g) +
                            "; a vector instruction runs all its lanes and rows (vectorize the whole loop, or split with "
                            "TailStrategy::RoundUp or ShiftInwards)");
        if (reduce == VxmOp::Add && row) {
            if (auto mn = lane ? matrix_form(provide->name, stage_name, args, guards, loops, lane, row, reduced, value.type()) : std::nullopt) {
                if (zero_then_update_.count(provide->name)) zero_initialised_.insert(provide->name);
                matrix_funcs_.insert(provide->name);
                emitter_.set_stage(stage_index(stage_name));
                enumerate_matrix(*mn, loops, 0);
                return true;
            }
            std::vector<std::string> out_loops;
            for (const For *f : loops)
                if (std::any_of(args.begin(), args.end(), [&](const Expr &a) { return mentions(a, f->name); })) out_loops.push_back(f->name);
            if (auto why = unmapped_matrix_product(resolve(reduced), out_loops))
                throw Error("chip backend: " + stage_name + " multiplies " + *why + ", a matrix product, but not in the form the MXM "
                            "path maps (f(.., i, j) += a(.., i, k) * b(.., k, j) of two reads, perhaps cast, over one reduction "
                            "loop); the VXM would take one instruction per row and reduction step");
        }
        if (one_row_.count(provide)) row = nullptr, reduce.reset();
        Nest nest{provide->name, stage_name, args, value, guards, lane, row, reduce, reduced, provide};
        emitter_.set_stage(stage_index(stage_name));
        // The nest's tiles that write different elements are independent: they run side by
        // side (interleaved into waves for the in-order static schedule, vector_emitter.h).
        wave_pieces_.clear();
        wave_limit_ = wave_pieces_for(nest);
        // One piece at a time needs no wave, and then a tile given back is reused at once.
        if (wave_limit_ > 1) emitter_.begin_wave();
        if (!lane) { // one lane: no loop runs across the lanes
            pt_.lane_var = kNoLane;
            pt_.lane_min = 0;
            pt_.lane_end = 1;
        }
        enumerate(nest, loops, 0);
        if (wave_limit_ > 1) emitter_.end_wave();
        return true;
    }

    static bool mentions_call(const Expr &e, const std::string &func) {
        for (const Expr &c : func_calls(e))
            if (c.as<Call>()->name == func) return true;
        return false;
    }

    struct Nest {
        std::string func, stage;
        std::vector<Expr> args;
        Expr value;
        std::vector<Expr> guards;
        const For *lane = nullptr, *row = nullptr;
        std::optional<VxmOp> reduce;
        Expr reduced;
        const Provide *provide = nullptr;
    };

    /// Unrolls the nest's loops from `i` inwards; the lane loop goes by chunks and the row loop
    /// by tiles of rows.
    void enumerate(const Nest &n, const std::vector<const For *> &loops, size_t i) {
        if (i == loops.size()) return statement(n);
        const For *f = loops[i];
        const int64_t lo = constant(f->min, "the start of loop " + f->name), ext = constant(f->extent, "the extent of loop " + f->name);
        if (f == n.lane) {
            for (int64_t c = lo; c < lo + ext; c += L_) {
                pt_.lane_var = f->name;
                pt_.lane_min = c;
                pt_.lane_end = lo + ext;
                enumerate(n, loops, i + 1);
            }
        } else if (f == n.row) {
            const std::set<int64_t> breaks = select_breaks(n.reduce ? n.reduced : n.value, f->name, lo, lo + ext);
            for (int64_t r = lo; r < lo + ext;) {
                const auto next_break = breaks.upper_bound(r);
                const int64_t end = std::min({r + kRowsPerTile, lo + ext, next_break == breaks.end() ? lo + ext : *next_break});
                pt_.row_var = f->name;
                pt_.row_min = r;
                pt_.rows = end - r;
                enumerate(n, loops, i + 1);
                r = end;
            }
        } else {
            for (int64_t v = lo; v < lo + ext; ++v) {
                scope_[f->name] = Expr(static_cast<int>(v));
                enumerate(n, loops, i + 1);
            }
            scope_.erase(f->name);
        }
        if (f == n.row) pt_ = Point{"", pt_.lane_var, 0, 1, pt_.lane_min, pt_.lane_end};
    }

    /// An argument as an affine function of this tile's row and lane indices.
    Affine index(const Expr &arg, const std::string &what) const {
        const TileBox box{pt_.row_min, pt_.row_min + pt_.rows - 1, pt_.lane_min, pt_.lane_min + box_lanes_ - 1};
        auto a = affine(resolve(arg), pt_.row_var.empty() ? "\x01" : pt_.row_var, pt_.lane_var, box);
        if (!a)
            throw NotAffine("chip backend: the index " + to_string(resolve(arg)) + " of " + what +
                        " is not affine in the loops the chip runs across a tile (" + pt_.lane_var +
                        (pt_.row_var.empty() ? "" : ", " + pt_.row_var) + ")");
        // From loop values to indices within this tile.
        a->c += a->row * pt_.row_min + a->lane * pt_.lane_min;
        return *a;
    }

    /// How many tiles of `n` one wave interleaves: kWavePieces, fewer when that many tiles' worth of
    /// intermediate values alive at once would take more than a quarter of the vector memory. A
    /// piece of an element-wise nest reuses the tiles it gave back (VectorEmitter::retire), so
    /// what it holds is not every value of its chain but those read more than once (alive until
    /// their last reader; counted twice, for the tiles the list scheduler keeps apart while it
    /// overlaps pieces) and the two a step reads and writes. Measured on tsp-mini's vector rows:
    /// erf GELU 438,126 -> 179,845 cycles (one piece a wave before: its 44 values filled the
    /// quarter), RMSNorm 28,135 -> 24,821; counting each value read again once, log_softmax's
    /// output (46 values, 8 read again) took 3 pieces and ran 7 % slower than in 1.
    int wave_pieces_for(const Nest &n) const {
        std::set<const BaseExprNode *> seen;
        std::map<const BaseExprNode *, int> uses;
        count_uses(expand_for_vxm(n.reduce ? n.reduced : n.value), uses, seen);
        int64_t rows = 1;
        if (n.row)
            if (auto e = as_const_int(resolve(n.row->extent))) rows = std::min(*e, kRowsPerTile);
        const int64_t read_again = std::count_if(uses.begin(), uses.end(), [](const auto &u) { return u.second > 1; });
        const int64_t alive = n.reduce ? int64_t(seen.size()) : std::min<int64_t>(int64_t(seen.size()), 2 * read_again + 2);
        const int64_t per_piece = std::max<int64_t>(1, alive * rows);
        return int(std::clamp<int64_t>(vector_memory(t_).total_rows() / 4 / per_piece, 1, kWavePieces));
    }

    /// Puts this tile's instructions in the wave piece of the elements it writes: tiles of one
    /// element (a reduction's row blocks, the steps of a sequential update) stay in order in
    /// one piece; others get pieces of their own, kWavePieces to a wave.
    void join_wave(const Nest &n) {
        if (wave_limit_ <= 1) return;
        std::string key = std::to_string(pt_.lane_min);
        for (const auto &entry : scope_) {
            const std::string &var = entry.first; // (a lambda cannot capture a structured binding in clang 14)
            if (std::any_of(n.args.begin(), n.args.end(), [&](const Expr &a) { return mentions(a, var); }))
                key += "," + var + "=" + to_string(entry.second);
        }
        if (n.row && !n.reduce) key += ",row=" + std::to_string(pt_.row_min);
        auto it = std::find(wave_pieces_.begin(), wave_pieces_.end(), key);
        if (it == wave_pieces_.end()) {
            if (int(wave_pieces_.size()) == wave_limit_) {
                emitter_.end_wave();
                emitter_.begin_wave();
                wave_pieces_.clear();
            }
            wave_pieces_.push_back(key);
            it = wave_pieces_.end() - 1;
        }
        emitter_.wave_lane(int(it - wave_pieces_.begin()));
    }

    /// The rows of a Func stored with `layout` that a read or write at `args` touches in this
    /// tile: first row and row step. Throws when its lanes are not the layout's lanes, unless
    /// `broadcast_lane` is given and the read takes one lane of each row (one point of the lane
    /// dimension, the same in every row of the tile): then that lane, to be spread over the lanes.
    std::pair<int64_t, int64_t> rows_of(const RowLayout &layout, const std::vector<Expr> &args, const std::string &what,
                                        int64_t *broadcast_lane = nullptr) const {
        int64_t first = 0, step = 0;
        for (size_t d = 0; d < args.size(); ++d) {
            const Affine a = index(args[d], what);
            const int64_t off = a.c - layout.min[d];
            if (int(d) == layout.lane) {
                const bool one_lane = pt_.lane_var == kNoLane && a.lane == 0 && a.row == 0;
                if (broadcast_lane && a.lane == 0 && a.row == 0 && (!one_lane || off % L_ != 0)) {
                    *broadcast_lane = off % L_;
                    first += off / L_;
                    continue;
                }
                if ((a.lane != 1 && !one_lane) || a.row != 0 || off % L_ != 0)
                    throw Error("chip backend: " + what + " reads its lane dimension " + std::to_string(d) + " at " + to_string(resolve(args[d])) +
                                "; on chip that dimension is in the VXM's lanes, so the lane loop (" + pt_.lane_var +
                                ") must index it directly, at a multiple of " + std::to_string(L_) + " (no shift, no stride)");
                first += off / L_;
            } else {
                if (a.lane != 0)
                    throw Error("chip backend: " + what + " varies its dimension " + std::to_string(d) + " with the lane loop " + pt_.lane_var +
                                ", but that dimension is stored in rows; vectorize the loop along dimension " + std::to_string(layout.lane));
                first += off * layout.row_step[d];
                step += a.row * layout.row_step[d];
            }
        }
        if (step < 0) throw Error("chip backend: " + what + " runs backwards along the rows of a tile; reverse the loop");
        return {first, step};
    }

    void statement(const Nest &n) {
        for (const Expr &g : n.guards) {
            auto c = as_const_int(resolve(g));
            if (!c) throw Error("chip backend: the guard " + to_string(resolve(g)) + " of " + n.stage + " is not known at compile time");
            if (!*c) return;
        }
        if (phase_ == Phase::Bounds) {
            // An index that is affine only row by row (a reshape's i / n): this nest runs one
            // row a tile, and the walk starts again.
            try {
                for (const Expr &a : n.args) index(a, n.stage);
                const Expr value = fold_tile_constants(resolve(n.value));
                for (const Expr &c : func_calls(value))
                    for (const Expr &a : c.as<Call>()->args) index(a, n.stage);
                plan_reads(value);
            } catch (const NotAffine &) {
                if (pt_.rows == 1) throw;
                replan_ |= one_row_.insert(n.provide).second;
            }
            return;
        }
        if (phase_ == Phase::Loads) {
            if (!n.reduce) ++stores_of_[n.func];
            return gather_loads(fold_tile_constants(resolve(n.value)));
        }
        ++statements_;
        join_wave(n);
        Statement st{pt_, BlockTiles(emitter_), {}, {}, n.stage, {}};
        // Constants folded with the unrolled loops' values (fp32(20) is an immediate).
        const Expr value = expand_for_vxm(fold_tile_constants(resolve(n.value)));
        const Expr reduced = n.reduce ? expand_for_vxm(fold_tile_constants(resolve(n.reduced))) : Expr();
        {
            std::set<const BaseExprNode *> seen;
            count_uses(n.reduce ? reduced : value, st.uses, seen);
        }
        const Type type = n.value.type();
        const DType dt = lane_dtype(type, n.stage);
        const int64_t R = pt_.rows;
        if (n.reduce) {
            TileRef g = value_of(st, reduced);
            if (*n.reduce == VxmOp::Min) g = unary(st, VxmOp::Mul, dt, g, -1.0, "negate for a min");
            const std::string over = n.stage + " over " + pt_.row_var;
            Point tile = pt_;
            pt_.rows = 1;
            pt_.row_min = 0;
            const TileRef dst = destination(n);
            TileRef red = st.tiles.fresh(1, {g}, VectorEmitter::other_side(dst), n.stage + " reduction", {dst});
            emitter_.reduce_rows(*n.reduce == VxmOp::Add ? VxmOp::Add : VxmOp::Max, dt, red, g, over);
            if (*n.reduce == VxmOp::Min) red = separate(st, dst, unary(st, VxmOp::Mul, dt, red, -1.0, "negate back"));
            if (!emitter_.streaming() && !(type.is_float() && type.bits() == 16)) {
                // A DRAM chip's VXM updates the accumulator in place: a copy would run on the
                // load queue, between the loads (max_pool2d on npu-edge: 10,368 of them).
                emitter_.vxm(*n.reduce, dt, dt, dst, {dst, red}, std::nullopt, {}, n.stage + " accumulate");
            } else {
                TileRef combined = st.tiles.fresh(1, {dst, red}, VectorEmitter::other_side(dst), n.stage + " combined");
                emitter_.vxm(*n.reduce, dt, dt, combined, {dst, red}, std::nullopt, {}, n.stage + " accumulate");
                store_on_chip(st, dst, round_to(st, combined, type), n.stage);
            }
            pt_ = tile;
        } else if (const std::optional<TileRef> start = kept_start(n, value, dt)) {
            store_on_chip(st, destination(n), VectorEmitter::broadcast(*start, R), n.stage);
        } else {
            const TileRef v = value_of(st, value);
            auto out = outputs_.find(n.func);
            if (out != outputs_.end() && !out->second.whole) {
                const auto [first, step] = rows_of(out->second.on_chip.layout, n.args, n.stage);
                chipsim::OffchipView view;
                view.offset = first * t_.vector_bytes;
                if (R > 1) view.outer = {{R, step * t_.vector_bytes}};
                view.inner_bytes = t_.vector_bytes;
                store_output(out->second, view, v, st.tiles, n.stage + " result");
            } else {
                store_on_chip(st, destination(n), v, n.stage);
            }
        }
        release_kept_tiles(st);
        st.tiles.retire_all();
    }

    /// Stores `v` (fp32 rows) to the rows of output `o` that `view` (its byte offsets and strides
    /// in the fp32 layout, no tensor) names: as they are, and/or packed into bf16 — half the
    /// rows, every byte measure of the view halved, since element e moves from byte 4e to 2e.
    void store_output(const OutputPlan &o, chipsim::OffchipView view, const TileRef &v, BlockTiles &tiles, const std::string &what) {
        if (!o.packed) {
            view.tensor = o.tensor;
            emitter_.store(view, v, what);
        }
        if (!o.packed && o.copy_tensor.empty()) return;
        if (v.count % 2 != 0) throw OddRowsToPack{};
        // Stored only packed, a value the last VXM op computed is packed by that op itself.
        const TileRef half = pack_rows_to_bf16(emitter_, tiles, v, o.packed, what);
        view.tensor = o.packed ? o.tensor : o.copy_tensor;
        view.offset /= 2;
        view.inner_bytes /= 2;
        for (auto &d : view.outer) d.stride /= 2;
        emitter_.store(view, half, what + (o.packed ? " (bf16)" : " (bf16 copy)"));
    }

    /// `y`, or a copy of it that an instruction can read together with `x` (tsp-mini: one slice
    /// feeds one operand a cycle).
    TileRef separate(Statement &st, const TileRef &x, const TileRef &y) {
        if (!emitter_.streaming() || !VectorEmitter::share_slice(x, y)) return y;
        const TileRef copy = st.tiles.fresh(y.count, {y}, VectorEmitter::other_side(x), st.stage + " operand copy", {x});
        emitter_.copy(copy, y, "copy of an operand to another slice");
        return copy;
    }

    /// A source read beside `x` by one VXM instruction: `x` itself is streamed once for both
    /// (x · x), another tile on its slice is copied away.
    TileRef beside(Statement &st, const TileRef &x, const TileRef &y) { return y == x ? y : separate(st, x, y); }

    /// Copies a computed tile into the rows of a Func stored on chip.
    void store_on_chip(Statement &st, const TileRef &dst, const TileRef &v, const std::string &what) {
        emitter_.copy(dst, separate(st, dst, v), what + " store");
    }

    /// The on-chip rows a Provide of `n` writes in this tile.
    TileRef destination(const Nest &n) {
        const Stored *s = storage(n.func, n.stage);
        const auto [first, step] = rows_of(s->layout, n.args, n.stage);
        if (pt_.rows > 1 && step == 0)
            throw Error("chip backend: " + n.stage + " writes the same element on every row of a tile (loop " + pt_.row_var + ")");
        return VectorEmitter::rows_of(s->tile, first, pt_.rows, step);
    }

    const Stored *storage(const std::string &func, const std::string &what) {
        auto it = stored_.find(func);
        if (it != stored_.end()) return &it->second;
        auto o = outputs_.find(func);
        if (o != outputs_.end() && o->second.whole) return &o->second.on_chip;
        throw Error("chip backend: " + what + " uses " + func + ", which the chip compiler has not placed on chip");
    }

    // ---- Matrix stages ----------------------------------------------------------------------

    /// An update f(.., i, .., j) += a(.., i, .., k) * b(.., k, .., j) that the MXM computes: the
    /// rows of loop i stream through it as activations, loop j runs across its weight columns,
    /// the reduction loop k down its weight rows. Every other loop is unrolled.
    struct MatrixNest {
        std::string func, stage;
        std::vector<Expr> args, guards;
        const For *i = nullptr, *j = nullptr, *k = nullptr;
        Expr a; ///< The activations' value, its casts taken off: a read, or vector work.
        Expr b; ///< The weights: a read of an Input, its casts taken off.
        DType in = DType::Int8, acc = DType::Int32;
    };

    /// How one read of an Input reaches the MXM: a program tensor in the MXM's dtype whose
    /// innermost dimension is the one the unit consumes contiguously (k for activations, j for
    /// weights) and whose next is the one read along the tile's rows — the host lays it out so.
    struct MatrixOperandPlan {
        std::string tensor, input;
        DType dtype = DType::Int8;
        std::vector<int> order; ///< Source dimensions, outermost first, in the program tensor.
        std::vector<int64_t> shape, lo, hi, stride; ///< Source shape, padded box, chip strides (by source dim).
    };

    /// `e` without its casts when that is a read of an Input or a Func, else undefined.
    static Expr read_of(Expr e) {
        while (const Cast *c = e.as<Cast>()) e = c->value;
        const Call *c = e.as<Call>();
        return c && (c->call_type == CallType::Input || c->call_type == CallType::Func) ? e : Expr();
    }

    /// The update as MXM work when it is a product of two reads that each have an output loop
    /// the other lacks, in dtypes the MXM takes; else none (the VXM reduces it in time).
    std::optional<MatrixNest> matrix_form(const std::string &func, const std::string &stage, const std::vector<Expr> &args,
                                          const std::vector<Expr> &guards, const std::vector<const For *> &loops, const For *lane,
                                          const For *k, const Expr &reduced, Type type) {
        const Mul *mul = reduced.as<Mul>();
        if (!mul) return std::nullopt;
        // The weights: a read of an Input along the lane loop; the activations: any value of
        // the other loops (a read, or vector work the VXM computes tile by tile).
        // Widening casts come off (the MXM widens int8 and bf16 itself); a narrowing one is
        // the operand's value (a requantisation to int8).
        auto strip = [](Expr e) {
            while (const Cast *c = e.as<Cast>()) {
                if (c->type.bits() < c->value.type().bits()) break;
                e = c->value;
            }
            return e;
        };
        Expr a = strip(mul->a), b = strip(mul->b);
        if (mentions(a, lane->name)) std::swap(a, b);
        if (mentions(a, lane->name) || !mentions(b, lane->name) || !mentions(a, k->name) || !mentions(b, k->name) || !read_of(b).defined())
            return std::nullopt;
        auto in_args = [&](const For *f) {
            return std::any_of(args.begin(), args.end(), [&](const Expr &e) { return mentions(e, f->name); });
        };
        MatrixNest mn{func, stage, args, guards, nullptr, lane, k, a, b};
        int64_t longest = 0;
        for (const For *f : loops) {
            if (f == lane || f == k || !in_args(f) || !mentions(a, f->name) || mentions(b, f->name)) continue;
            const int64_t n = constant(f->extent, "the extent of loop " + f->name);
            if (n >= longest) {
                longest = n;
                mn.i = f;
            }
        }
        if (!mn.i) return std::nullopt; // a vector times a matrix: the VXM's reduction in time
        // A product of two reads that each have an output loop the other lacks is the MXM's
        // work (the VXM would take one instruction per output row and reduction step): what
        // this path cannot map is an error, never a slow fallback.
        std::vector<std::string> reductions;
        for (const For *f : loops)
            if (!in_args(f) && (mentions(a, f->name) || mentions(b, f->name))) reductions.push_back(f->name);
        if (reductions.size() != 1)
            throw Error("chip backend: " + stage + " is a matrix product reducing over " + std::to_string(reductions.size()) +
                        " loops (" + reductions.front() + ", " + reductions.back() + "); the MXM path of the loop-nest compiler maps one "
                        "reduction loop onto the MXM's weight rows (one RDom dimension, or fuse them)");
        const Type ta = a.type(), tb = b.type();
        if (ta == Int(8) && tb == Int(8) && type == Int(32)) {
            mn.in = DType::Int8;
            mn.acc = DType::Int32;
        } else if (ta.is_float() && tb.is_float() && ta.bits() <= 32 && tb.bits() <= 32 && type == Float(32)) {
            mn.in = ta == Float(16) && tb == Float(16) ? DType::FP16 : DType::BF16;
            mn.acc = DType::FP32;
        } else {
            throw Error("chip backend: " + stage + " is a matrix product of " + ta.to_string() + " and " + tb.to_string() + " into " +
                        type.to_string() + "; the MXM multiplies int8 into int32, or bf16/fp16/fp32 (rounded to bf16) into fp32");
        }
        if (!t_.mxm_supports(mn.in))
            throw Error("chip backend: " + stage + " needs the MXM in " + chipsim::dtype_name(mn.in) + ", which " + t_.name + "'s MXM does not take");
        return mn;
    }

    /// Whether `e` reads an Input or a Func.
    static bool reads_data(const Expr &e) {
        if (const Call *c = e.as<Call>())
            if (c->call_type == CallType::Input || c->call_type == CallType::Func) return true;
        const std::vector<Expr> ops = operands_of(e);
        return std::any_of(ops.begin(), ops.end(), [](const Expr &x) { return reads_data(x); });
    }

    /// Two factors of a product in `e` that each read data along a loop of `out_loops` (the
    /// loops the Provide writes along) the other does not — a matrix product: a convolution's
    /// taps, a padded operand's select — described, if there is one.
    static std::optional<std::string> unmapped_matrix_product(const Expr &e, const std::vector<std::string> &out_loops) {
        if (const Mul *m = e.as<Mul>()) {
            bool a_only = false, b_only = false;
            for (const std::string &l : out_loops) {
                a_only |= mentions(m->a, l) && !mentions(m->b, l);
                b_only |= mentions(m->b, l) && !mentions(m->a, l);
            }
            if (a_only && b_only && reads_data(m->a) && reads_data(m->b)) return to_string(m->a) + " by " + to_string(m->b);
        }
        for (const Expr &k : operands_of(e))
            if (auto r = unmapped_matrix_product(k, out_loops)) return r;
        return std::nullopt;
    }

    /// Unrolls the loops of a matrix nest other than i, j and k, then emits its jobs.
    void enumerate_matrix(const MatrixNest &n, const std::vector<const For *> &loops, size_t at) {
        if (at == loops.size()) {
            for (const Expr &g : n.guards) {
                auto c = as_const_int(resolve(g));
                if (!c) throw Error("chip backend: the guard " + to_string(resolve(g)) + " of " + n.stage + " is not known at compile time");
                if (!*c) return;
            }
            return matrix_jobs(n);
        }
        const For *f = loops[at];
        if (f == n.i || f == n.j || f == n.k) return enumerate_matrix(n, loops, at + 1);
        const int64_t lo = constant(f->min, "the start of loop " + f->name), ext = constant(f->extent, "the extent of loop " + f->name);
        for (int64_t v = lo; v < lo + ext; ++v) {
            scope_[f->name] = Expr(static_cast<int>(v));
            enumerate_matrix(n, loops, at + 1);
        }
        scope_.erase(f->name);
    }

    /// Affine indices of `read`'s arguments with `row` running `rows` rows from `row_min` and
    /// `lane` `lanes` lanes from `lane_min`.
    std::vector<Affine> matrix_indices(const Call *read, const For *row, int64_t row_min, int64_t rows, const For *lane,
                                       int64_t lane_min, int64_t lanes, const std::string &what) {
        const Point saved = pt_;
        const int64_t saved_lanes = box_lanes_;
        pt_ = Point{row ? row->name : "", lane->name, row_min, rows, lane_min, lane_min + lanes};
        box_lanes_ = lanes;
        std::vector<Affine> out;
        for (const Expr &arg : read->args) out.push_back(index(arg, what));
        pt_ = saved;
        box_lanes_ = saved_lanes;
        return out;
    }

    /// The plan of the program tensor for Input `read` as an MXM operand (rows along `row`,
    /// contiguous along `lane`), widened to this tile in the bounds walk.
    MatrixOperandPlan &matrix_operand(const Call *read, DType dtype, const std::vector<Affine> &idx, int64_t rows, int64_t lanes,
                                      const std::string &what) {
        int lane_dim = -1, row_dim = -1;
        for (size_t d = 0; d < idx.size(); ++d) {
            if (idx[d].lane != 0) {
                if (lane_dim >= 0 || idx[d].lane != 1 || idx[d].row != 0)
                    throw Error("chip backend: " + what + " reads " + read->name + " along the MXM's contiguous loop in a way its DMA "
                                "cannot gather (one dimension, step 1)");
                lane_dim = int(d);
            }
        }
        for (size_t d = 0; d < idx.size(); ++d)
            if (idx[d].row != 0) {
                if (row_dim >= 0 || idx[d].row < 0)
                    throw Error("chip backend: " + what + " reads " + read->name + " along the tile's rows in more than one dimension "
                                "or backwards; the MXM streams rows of one dimension");
                row_dim = int(d);
            }
        std::vector<int> order;
        for (int d = 0; d < int(idx.size()); ++d)
            if (d != lane_dim && d != row_dim) order.push_back(d);
        if (row_dim >= 0) order.push_back(row_dim);
        order.push_back(lane_dim);
        std::string key = read->name + "/" + chipsim::dtype_name(dtype);
        for (int d : order) key += "," + std::to_string(d);
        auto [it, fresh] = matrix_inputs_.try_emplace(key);
        MatrixOperandPlan &plan = it->second;
        if (fresh) {
            plan.input = read->name;
            plan.dtype = dtype;
            plan.order = order;
            plan.shape = constant_shape(input_types_.at(read->name));
            plan.lo.assign(plan.shape.size(), 0);
            plan.hi = plan.shape;
        }
        if (phase_ == Phase::Bounds)
            for (size_t d = 0; d < idx.size(); ++d) {
                const Affine &a = idx[d];
                const int64_t last = a.c + a.row * (rows - 1) + a.lane * (lanes - 1);
                plan.lo[d] = std::min({plan.lo[d], a.c, last});
                plan.hi[d] = std::max({plan.hi[d], a.c + 1, last + 1});
            }
        return plan;
    }

    /// Declares the program tensors of the MXM's Input operands (after the bounds walk).
    void declare_matrix_operands() {
        int n = 0;
        for (auto &entry : matrix_inputs_) {
            MatrixOperandPlan &plan = entry.second;
            plan.tensor = "mx" + std::to_string(n++);
            std::vector<int64_t> chip, offset(plan.shape.size());
            std::vector<int> dims(plan.shape.size());
            for (int d : plan.order) {
                dims[size_t(d)] = int(chip.size());
                chip.push_back(plan.hi[size_t(d)] - plan.lo[size_t(d)]);
            }
            const std::vector<int64_t> strides = row_major_strides(chip);
            plan.stride.assign(plan.shape.size(), 0);
            for (size_t d = 0; d < plan.shape.size(); ++d) {
                plan.stride[d] = strides[size_t(dims[d])];
                offset[d] = -plan.lo[d];
            }
            declare(cp_, plan.tensor, plan.input, plan.dtype, chip, plan.shape, dims, offset, false);
        }
    }

    /// A tile of `rows` rows of an MXM operand read from its program tensor: `elems` contiguous
    /// elements a row, rows narrower than a vector repeated to fill it (the unit reads the first).
    /// The loads walk records it for the preload; then it is the preloaded tile (`owned` false),
    /// or a load of its own that the caller hands back after its last reader.
    TileRef load_matrix_operand(const MatrixOperandPlan &plan, const std::vector<Affine> &idx, int64_t rows, int64_t elems,
                                bool spread, const std::string &what, bool &owned, int copy = 0) {
        const int64_t es = chipsim::dtype_bytes(plan.dtype);
        int64_t offset = 0, row_stride = 0;
        for (size_t d = 0; d < idx.size(); ++d) {
            offset += (idx[d].c - plan.lo[d]) * plan.stride[d];
            row_stride += idx[d].row * plan.stride[d];
        }
        const chipsim::OffchipView view = unit_rows(plan.tensor, offset * es, rows, row_stride * es, elems * es, t_.vector_bytes);
        const std::string key = load_key(plan.tensor, view) + (copy ? "#" + std::to_string(copy) : "");
        owned = false;
        if (phase_ == Phase::Loads) {
            if (loaded_keys_.insert(key).second) loads_.push_back({key, plan.input, view, rows, spread});
            return TileRef();
        }
        if (auto pre = preloaded_.find(key); pre != preloaded_.end()) return pre->second;
        owned = true;
        const TileRef tile = emitter_.tile_anywhere(rows, int(placed_++ % 2), what, spread);
        emitter_.load(tile, view, what);
        return tile;
    }

    /// The activation rows of `n.a` for rows [i0, i0 + rows) and reduction chunk k0: an Input
    /// read is loaded from its program tensor; any other value (a Func on chip, bias and ReLU
    /// between two matmuls) is computed on the VXM with k in its lanes — L values of k an
    /// activation row, the rest of the row zero — and cast to the MXM's dtype.
    ///
    /// `copies` of them: the planes of a wave stream them side by side, and one tile read by
    /// several planes would serialise them on its bank's port (tsp-mini).
    ///
    /// Lanes past the reduction's end (`k_end`) hold whatever the vector work made of the
    /// zero padding — 1/0 is inf, and inf times a zero weight row is NaN on the MXM — so a
    /// floating-point chunk that ends early has them shifted out to zero (two SXM shifts).
    std::vector<TileRef> activations(Statement &st, const MatrixNest &n, int64_t i0, int64_t rows, int64_t k0, int64_t kstep, int copies,
                                     int64_t k_end) {
        const Call *read = n.a.as<Call>();
        std::vector<TileRef> out;
        if (read && read->call_type == CallType::Input) {
            const std::vector<Affine> idx = matrix_indices(read, n.i, i0, rows, n.k, k0, kstep, n.stage);
            const MatrixOperandPlan &plan = matrix_operand(read, n.in, idx, rows, kstep, n.stage);
            if (phase_ == Phase::Bounds) return out;
            for (int c = 0; c < copies; ++c) {
                bool owned = false;
                out.push_back(load_matrix_operand(plan, idx, rows, kstep, false, read->name + " activations", owned, c));
                if (owned) st.tiles.own(out.back());
            }
            return out;
        }
        // An MXM row takes more values of k than a vector has lanes (32 bf16 or 64 int8 against
        // 16 fp32): the vectors of consecutive lane-wide pieces of k are cast, moved up to their
        // place in the row (SXM shift) and summed into one packed row (the other lanes are
        // zero), so each weight load and matmul covers a whole MXM row of k.
        const Point saved = pt_;
        TileRef packed;
        for (int64_t p0 = k0; p0 < k0 + kstep && p0 < k_end; p0 += L_) {
            const int64_t piece = (p0 - k0) / L_;
            pt_ = Point{n.i->name, n.k->name, i0, rows, p0, k_end};
            const Expr value = fold_tile_constants(resolve(n.a));
            if (phase_ == Phase::Bounds) {
                for (const Expr &c : func_calls(value))
                    for (const Expr &a : c.as<Call>()->args) index(a, n.stage);
                plan_reads(value);
                continue;
            }
            if (phase_ == Phase::Loads) {
                gather_loads(value);
                continue;
            }
            Statement chunk{pt_, BlockTiles(emitter_), {}, {}, n.stage, {}};
            const Expr vx = expand_for_vxm(value);
            std::set<const BaseExprNode *> seen;
            count_uses(vx, chunk.uses, seen);
            TileRef v = value_of(chunk, vx);
            const int64_t past_end = p0 + L_ - k_end;
            if (past_end > 0 && n.in != DType::Int8) {
                const DType dt = lane_dtype(n.a.type(), n.stage);
                const TileRef up = chunk.tiles.fresh(rows, {v}, VectorEmitter::other_side(v), n.stage + " activations past the end");
                emitter_.shift(dt, up, v, past_end, "lanes past the reduction's end out");
                v = chunk.tiles.fresh(rows, {up}, VectorEmitter::other_side(up), n.stage + " activations to the end");
                emitter_.shift(dt, v, up, -past_end, "and back, zero-filled");
            }
            const bool last = p0 + L_ >= std::min(k0 + kstep, k_end);
            const std::string to_mxm = "activations to " + std::string(chipsim::dtype_name(n.in));
            if (piece == 0) {
                if (last) // the row's only piece: cast straight into each copy
                    for (int c = 0; c < copies; ++c) {
                        out.push_back(st.tiles.fresh(rows, {v}, VectorEmitter::other_side(v), n.stage + " activations", out));
                        emitter_.vxm(VxmOp::Cast, lane_dtype(n.a.type(), n.stage), n.in, out.back(), {v}, std::nullopt, {}, to_mxm);
                    }
                else {
                    packed = st.tiles.fresh(rows, {v}, VectorEmitter::other_side(v), n.stage + " packed activations");
                    emitter_.vxm(VxmOp::Cast, lane_dtype(n.a.type(), n.stage), n.in, packed, {v}, std::nullopt, {}, to_mxm);
                }
            } else {
                const TileRef cast = chunk.tiles.fresh(rows, {v}, VectorEmitter::other_side(v), n.stage + " activations cast");
                emitter_.vxm(VxmOp::Cast, lane_dtype(n.a.type(), n.stage), n.in, cast, {v}, std::nullopt, {}, to_mxm);
                const TileRef placed = chunk.tiles.fresh(rows, {cast}, VectorEmitter::other_side(cast), n.stage + " activations placed");
                emitter_.shift(n.in, placed, cast, piece * L_, "to its lanes of the packed row");
                if (!last) {
                    const TileRef sum = st.tiles.fresh(rows, {packed, placed}, VectorEmitter::other_side(packed), n.stage + " packed activations");
                    emitter_.vxm(VxmOp::Add, n.in, n.in, sum, {packed, placed}, std::nullopt, {}, "packed row");
                    st.tiles.release(packed);
                    packed = sum;
                } else {
                    for (int c = 0; c < copies; ++c) {
                        out.push_back(st.tiles.fresh(rows, {packed, placed}, VectorEmitter::other_side(packed), n.stage + " activations", out));
                        emitter_.vxm(VxmOp::Add, n.in, n.in, out.back(), {packed, placed}, std::nullopt, {}, "packed row");
                    }
                    st.tiles.release(packed);
                }
            }
            release_kept_tiles(chunk);
            chunk.tiles.retire_all();
        }
        pt_ = saved;
        return out;
    }

    /// The MXM's jobs for the nest at the current values of its other loops: row tiles of loop i
    /// times column blocks of loop j, each accumulating over chunks of k, drained and added
    /// into the Func's vector rows.
    void matrix_jobs(const MatrixNest &n) {
        const Call *b = n.b.as<Call>();
        if (b->call_type != CallType::Input)
            throw Error("chip backend: " + n.stage + " multiplies by " + b->name + " as the MXM's weights, but " + b->name +
                        " is computed on chip; the MXM installs weights from an Input (swap the operands or make it an Input)");
        const chipsim::MxmShape &unit = t_.mxm_shape(n.in);
        const chipsim::MemoryDesc *acc_mem = nullptr;
        for (const chipsim::MemoryDesc &m : t_.memories)
            if (m.accumulator) acc_mem = &m;
        if (!acc_mem) throw Error("chip backend: " + t_.name + " has no accumulator memory for " + n.stage);
        const bool a_on_chip = !(n.a.as<Call>() && n.a.as<Call>()->call_type == CallType::Input);
        // Activations from the VXM are packed lane-wide pieces of k (activations()): whole ones.
        const int64_t kstep = a_on_chip ? (unit.k >= L_ ? unit.k / L_ * L_ : unit.k) : unit.k;
        const int64_t per_plane = acc_mem->interleaved ? acc_mem->total_rows() : acc_mem->rows_per_bank;
        const int64_t ilo = constant(n.i->min, "the start of loop " + n.i->name), iext = constant(n.i->extent, "the extent of loop " + n.i->name);
        const int64_t jlo = constant(n.j->min, "the start of loop " + n.j->name), jext = constant(n.j->extent, "the extent of loop " + n.j->name);
        const int64_t klo = constant(n.k->min, "the start of loop " + n.k->name), kext = constant(n.k->extent, "the extent of loop " + n.k->name);
        const int64_t chunks = (kext + kstep - 1) / kstep;
        // Rows per job: half a plane's accumulators (the other half drains), and a row tile's
        // activations within a quarter of the vector memory.
        const int64_t budget = std::max<int64_t>(1, vector_memory(t_).total_rows() / 4 / chunks);
        const int64_t R = std::max<int64_t>(1, std::min({iext, per_plane / 2, budget}));
        const int rpa = model_.drain_rows_per_acc_row(n.acc, n.acc);
        const int planes = t_.mxm.count;
        if (wbuf_.size() != size_t(planes)) wbuf_.assign(size_t(planes), 0);
        for (int64_t i0 = ilo; i0 < ilo + iext; i0 += R) {
            const int64_t rows = std::min(R, ilo + iext - i0);
            Statement st{pt_, BlockTiles(emitter_), {}, {}, n.stage, {}};
            const int64_t blocks = (jext + unit.n - 1) / unit.n;
            const int copies = emitter_.streaming() ? int(std::min<int64_t>(planes, blocks)) : 1;
            // The chunks' activations are independent: computed side by side, a wave of them.
            std::vector<std::vector<TileRef>> act;
            const bool wave = phase_ == Phase::Emit && chunks > 1;
            if (wave) emitter_.begin_wave();
            for (int64_t c = 0; c < chunks; ++c) {
                if (wave) {
                    if (c > 0 && c % kWavePieces == 0) {
                        emitter_.end_wave();
                        emitter_.begin_wave();
                    }
                    emitter_.wave_lane(int(c % kWavePieces));
                }
                act.push_back(activations(st, n, i0, rows, klo + c * kstep, kstep, copies, klo + kext));
            }
            if (wave) emitter_.end_wave();
            // The column blocks of a row tile run a wave at a time, one job per plane, their
            // instructions interleaved so that the in-order static schedule overlaps the planes
            // (vector_emitter.h); dynamic issue needs no interleaving. Two overlaps more, both
            // for the in-order issue: a job installs its next chunks' weights into its other
            // weight buffers before it multiplies by the current ones, and a wave's drains and
            // adds are emitted inside the next wave, after each job's first weight loads
            // (consecutive waves accumulate in the two halves of each plane's accumulators).
            const int64_t prefetch = std::max(0, t_.mxm.weight_buffers - 1);
            std::vector<std::function<void()>> pending, next_pending;
            auto flush_pending = [&](int64_t lane) {
                if (size_t(lane) >= pending.size() || !pending[size_t(lane)]) return;
                std::function<void()> epilogue = std::move(pending[size_t(lane)]);
                pending[size_t(lane)] = nullptr;
                epilogue();
            };
            int64_t in_wave = 0;
            if (phase_ == Phase::Emit) emitter_.begin_wave();
            for (int64_t j0 = jlo; j0 < jlo + jext; j0 += unit.n) {
                if (phase_ == Phase::Emit) {
                    if (in_wave == planes) {
                        for (int64_t lane = 0; lane < int64_t(pending.size()); ++lane) {
                            emitter_.wave_lane(int(lane));
                            flush_pending(lane);
                        }
                        emitter_.end_wave();
                        emitter_.begin_wave();
                        pending = std::move(next_pending);
                        next_pending.clear();
                        in_wave = 0;
                    }
                    emitter_.wave_lane(int(in_wave++));
                }
                const int64_t lane = in_wave - 1;
                const int plane = int(jobs_ % planes);
                const int64_t region = (jobs_ / planes) % 2;
                ++jobs_;
                TileRef acc;
                acc.memory = acc_mem->name;
                acc.bank = acc_mem->interleaved ? -1 : plane;
                acc.base = region * (per_plane / 2);
                acc.count = rows;
                struct Installed {
                    TileRef weights;
                    int buffer = 0;
                    bool owned = false;
                };
                std::vector<Installed> installed(static_cast<size_t>(chunks));
                int64_t next_install = 0;
                auto install = [&](int64_t c) {
                    const int64_t k0 = klo + c * kstep, krows = std::min(kstep, klo + kext - k0);
                    const std::vector<Affine> idx = matrix_indices(b, n.k, k0, krows, n.j, j0, unit.n, n.stage);
                    const MatrixOperandPlan &plan = matrix_operand(b, n.in, idx, krows, unit.n, n.stage);
                    if (phase_ == Phase::Bounds) return;
                    Installed &w = installed[size_t(c)];
                    w.weights = load_matrix_operand(plan, idx, krows, unit.n, true, b->name + " weights", w.owned);
                    if (phase_ == Phase::Loads) return;
                    w.buffer = wbuf_[size_t(plane)]++ % t_.mxm.weight_buffers;
                    chipsim::Instruction lw;
                    lw.op = chipsim::Opcode::MxmLw;
                    lw.dtype = n.in;
                    lw.mxm = plane;
                    lw.buffer = w.buffer;
                    lw.tiles = {w.weights};
                    emitter_.emit(lw, n.stage + " weights");
                };
                for (int64_t c = 0; c < chunks; ++c) {
                    while (next_install < chunks && next_install <= c + prefetch) install(next_install++);
                    if (phase_ != Phase::Emit) continue;
                    if (c == 0) flush_pending(lane);
                    const Installed &w = installed[size_t(c)];
                    chipsim::Instruction mm;
                    mm.op = chipsim::Opcode::MxmMm;
                    mm.dtype = n.in;
                    mm.mxm = plane;
                    mm.buffer = w.buffer;
                    mm.accumulate = c > 0;
                    mm.tiles = {acc, act[size_t(c)][size_t(lane % copies)]};
                    emitter_.emit(mm, n.stage + " matmul");
                    if (w.owned) emitter_.retire(w.weights);
                }
                if (phase_ != Phase::Emit) continue;
                flush_pending(lane);
                if (next_pending.size() <= size_t(lane)) next_pending.resize(size_t(lane) + 1);
                next_pending[size_t(lane)] = [&, j0, acc] {
                    // On the other hemisphere from the Func's rows, which the VXM writes from it;
                    // never on their bank of a slice they share (tsp-mini: a bank conflict).
                    const TileRef &into = storage(n.func, n.stage)->tile;
                    const TileRef drained = emitter_.tile_anywhere(rows * rpa, VectorEmitter::other_side(into), n.stage + " drained", true, 0, {into});
                    chipsim::Instruction drain;
                    drain.op = chipsim::Opcode::MxmDrain;
                    drain.dtype = n.acc;
                    drain.out_dtype = n.acc;
                    drain.has_out_dtype = true;
                    drain.tiles = {drained, acc};
                    emitter_.emit(drain, n.stage + " drain");
                    // Each fp32 vector of the drained rows adds into the Func's rows for its lanes.
                    for (int64_t q = 0; q < rpa && j0 + q * L_ < jlo + jext; ++q) {
                        const Point saved = pt_;
                        pt_ = Point{n.i->name, n.j->name, i0, rows, j0 + q * L_, jlo + jext};
                        const Stored *s = storage(n.func, n.stage);
                        const auto [first, step] = rows_of(s->layout, n.args, n.stage);
                        pt_ = saved;
                        if (rows > 1 && step == 0)
                            throw Error("chip backend: " + n.stage + " writes the same element on every row of a tile (loop " + n.i->name + ")");
                        const TileRef dst = VectorEmitter::rows_of(s->tile, first, rows, step);
                        const TileRef part = VectorEmitter::rows_of(drained, q, rows, rpa);
                        if (zero_initialised_.count(n.func)) { // the product is the value: one VXM pass into place
                            emitter_.vxm(VxmOp::Add, n.acc, n.acc, dst, {part}, 0.0, {}, n.stage + " into place");
                            continue;
                        }
                        const TileRef apart = separate(st, dst, part);
                        const TileRef sum = st.tiles.fresh(rows, {dst, apart}, VectorEmitter::other_side(dst), n.stage + " sum");
                        emitter_.vxm(VxmOp::Add, n.acc, n.acc, sum, {dst, apart}, std::nullopt, {}, n.stage + " accumulate");
                        store_on_chip(st, dst, sum, n.stage);
                        st.tiles.release(sum);
                    }
                    emitter_.retire(drained);
                };
            }
            if (phase_ == Phase::Emit) {
                for (int64_t lane = 0; lane < int64_t(pending.size()); ++lane) {
                    emitter_.wave_lane(int(lane));
                    flush_pending(lane);
                }
                emitter_.end_wave();
                emitter_.begin_wave();
                for (int64_t lane = 0; lane < int64_t(next_pending.size()); ++lane) {
                    emitter_.wave_lane(int(lane));
                    if (next_pending[size_t(lane)]) next_pending[size_t(lane)]();
                }
                emitter_.end_wave();
            }
            st.tiles.retire_all();
            if (phase_ == Phase::Emit) ++statements_;
        }
    }

    // ---- Values ---------------------------------------------------------------------------

    TileRef value_of(Statement &st, const Expr &e) {
        auto memo = st.values.find({e.node.get(), pt_.rows});
        if (memo != st.values.end()) return memo->second;
        TileRef r;
        if (pt_.rows > 1 && !value_operands(e).empty() && !mentions(e, pt_.row_var)) {
            // The same on every row of the tile (it reads only broadcast rows): computed on one
            // row and read back with row step 0.
            const Point tile = pt_;
            pt_.rows = 1;
            const TileRef one = value_of(st, e);
            pt_ = tile;
            r = VectorEmitter::broadcast(one, pt_.rows);
            st.values[{e.node.get(), pt_.rows}] = r;
            return r;
        }
        r = compute(st, e);
        st.values[{e.node.get(), pt_.rows}] = r;
        // An operand whose last reader this was gives its tile back (long expansions such as
        // log's would otherwise hold every intermediate tile until the statement ends). Loaded
        // tiles stay: another read may share them.
        for (const Expr &c : value_operands(e)) {
            auto it = st.uses.find(c.node.get());
            if (it == st.uses.end() || --it->second > 0) continue;
            const Call *call = c.as<Call>();
            if ((call && call->call_type != CallType::Intrinsic) || immediate(c)) continue;
            const TileRef &t = st.values.at({c.node.get(), pt_.rows});
            if (!(t == r)) st.tiles.release(t);
        }
        return r;
    }

    /// How many operations read each node of the value's DAG.
    static void count_uses(const Expr &e, std::map<const BaseExprNode *, int> &uses, std::set<const BaseExprNode *> &seen) {
        if (!seen.insert(e.node.get()).second) return;
        for (const Expr &c : value_operands(e)) {
            ++uses[c.node.get()];
            count_uses(c, uses, seen);
        }
    }

    TileRef compute(Statement &st, const Expr &e) {
        const int64_t R = pt_.rows;
        const std::string what = st.stage;
        if (const Call *c = e.as<Call>()) {
            if (c->call_type == CallType::Input) return input_tile(st, e);
            if (c->call_type == CallType::Func) {
                const Stored *s = storage(c->name, what);
                int64_t lane = -1;
                const auto [first, step] = rows_of(s->layout, c->args, "the read " + to_string(e) + " in " + what, &lane);
                if (lane < 0) return VectorEmitter::rows_of(s->tile, first, R, step);
                // One value a row (a mean over every dimension, read by each element): the SXM
                // copies its lane to every lane, once when every row reads the same one.
                const int64_t rows = step == 0 ? 1 : R;
                const TileRef src = VectorEmitter::rows_of(s->tile, first, rows, step);
                const TileRef spread = st.tiles.fresh(rows, {src}, VectorEmitter::other_side(src), what);
                emitter_.permute(lane_dtype(e.type(), what), spread, src, std::vector<int32_t>(size_t(L_), int32_t(lane)),
                                 "spread one lane of " + c->name);
                return step == 0 ? VectorEmitter::rows_of(spread, 0, R, 0) : spread;
            }
            return intrinsic(st, c, e.type());
        }
        if (immediate(e)) return constant_tile(st, e);
        if (const Variable *v = e.as<Variable>()) return loop_value_tile(st, v, e);
        if (const Cast *c = e.as<Cast>()) return cast(st, c);
        const DType dt = lane_dtype(e.type().is_bool() ? compare_type(e) : e.type(), what);
        // min, max and select of narrow integers stay in their range: the 32-bit lanes compute
        // them exactly and the store narrows them back without saturating anything.
        const bool stays_in_range = e.as<Max>() || e.as<Min>() || e.as<Select>();
        if (!e.type().is_float() && !e.type().is_bool() && e.type().bits() < 32 && !stays_in_range)
            throw Error("chip backend: " + what + " computes " + to_string(e) + ": " + e.type().to_string() + " arithmetic wraps at " +
                        std::to_string(e.type().bits()) + " bits, the VXM's 32-bit lanes do not; widen to int32 first");
        auto binary = [&](VxmOp op, const Expr &a, const Expr &b, bool commutes) -> TileRef {
            auto ca = immediate(a), cb = immediate(b);
            if (cb) return round_to(st, unary(st, op, dt, value_of(st, a), *cb, what), e.type());
            if (ca && commutes) return round_to(st, unary(st, op, dt, value_of(st, b), *ca, what), e.type());
            const TileRef x = value_of(st, a), y = beside(st, x, value_of(st, b));
            const TileRef dst = st.tiles.fresh(R, {x, y}, VectorEmitter::other_side(x), what);
            emitter_.vxm(op, dt, dt, dst, {x, y}, std::nullopt, {}, what);
            return round_to(st, dst, e.type());
        };
        if (const Add *op = e.as<Add>()) return binary(VxmOp::Add, op->a, op->b, true);
        if (const Mul *op = e.as<Mul>()) return binary(VxmOp::Mul, op->a, op->b, true);
        if (const Max *op = e.as<Max>()) return binary(VxmOp::Max, op->a, op->b, true);
        if (const Min *op = e.as<Min>()) return binary(VxmOp::Min, op->a, op->b, true);
        if (const Sub *op = e.as<Sub>()) {
            if (auto ca = immediate(op->a)) // c - x = (x - c) · -1
                return round_to(st, chain(st, dt, value_of(st, op->b), VxmOp::Sub, *ca, {{VxmOp::Mul, true, -1.0}}, what), e.type());
            return binary(VxmOp::Sub, op->a, op->b, false);
        }
        if (const Div *op = e.as<Div>()) {
            if (dt == DType::Int32)
                throw Error("chip backend: " + what + " divides integers (" + to_string(e) +
                            "); the VXM's integer division truncates where the DSL's rounds down — not compiled for chips yet");
            if (auto ca = immediate(op->a)) // c / x = recip(x) · c
                return round_to(st, chain(st, dt, value_of(st, op->b), VxmOp::Recip, std::nullopt, {{VxmOp::Mul, true, *ca}}, what), e.type());
            return binary(VxmOp::Div, op->a, op->b, false);
        }
        if (const Select *sel = e.as<Select>()) {
            const DType mt = lane_dtype(sel->condition.type().is_bool() ? compare_type(sel->condition) : sel->condition.type(), what);
            TileRef mask = value_of(st, sel->condition);
            if (mt != dt) {
                const TileRef m2 = st.tiles.fresh(R, {mask}, VectorEmitter::other_side(mask), what + " mask");
                emitter_.vxm(VxmOp::Cast, mt, dt, m2, {mask}, std::nullopt, {}, what + " mask");
                mask = m2;
            }
            const TileRef a = beside(st, mask, value_of(st, sel->true_value));
            const TileRef b = beside(st, a, beside(st, mask, value_of(st, sel->false_value)));
            const TileRef dst = st.tiles.fresh(R, {mask, a, b}, VectorEmitter::other_side(mask), what);
            emitter_.vxm(VxmOp::Select, dt, dt, dst, {mask, a, b}, std::nullopt, {}, what);
            return round_to(st, dst, e.type());
        }
        // Comparisons give 1 or 0 in the operands' lane type: x > y is min(relu(x - y)·2^254, 1)
        // on fp32 (a difference of distinct floats is never 0, and even the smallest denormal
        // reaches 1), min(relu(x - y), 1) on int32 (exact while x - y does not wrap).
        if (const GT *op = e.as<GT>()) return greater(st, op->a, op->b, false);
        if (const LT *op = e.as<LT>()) return greater(st, op->b, op->a, false);
        if (const LE *op = e.as<LE>()) return greater(st, op->a, op->b, true);
        if (const GE *op = e.as<GE>()) return greater(st, op->b, op->a, true);
        if (const And *op = e.as<And>()) return binary(VxmOp::Mul, op->a, op->b, true);
        if (const Or *op = e.as<Or>()) return binary(VxmOp::Max, op->a, op->b, true);
        if (const Not *op = e.as<Not>())
            return chain(st, lane_dtype(compare_type(op->a), what), value_of(st, op->a), VxmOp::Mul, -1.0, {{VxmOp::Add, true, 1.0}}, what);
        throw Error("chip backend: " + what + " computes " + to_string(e) + "; the VXM has no instruction for it (" +
                    "it adds, subtracts, multiplies, divides, compares, selects, takes min/max, exp, tanh, rsqrt, sqrt and casts)");
    }

    /// The lane type a boolean value is held in: that of the values it compares.
    static Type compare_type(const Expr &b) {
        Expr x = b;
        while (true) {
            if (const Not *n = x.as<Not>()) x = n->a;
            else if (const And *a = x.as<And>()) x = a->a;
            else if (const Or *o = x.as<Or>()) x = o->a;
            else break;
        }
        if (const GT *c = x.as<GT>()) return c->a.type();
        if (const LT *c = x.as<LT>()) return c->a.type();
        if (const GE *c = x.as<GE>()) return c->a.type();
        if (const LE *c = x.as<LE>()) return c->a.type();
        return Int(32);
    }

    /// x > y as 1 or 0 (or, `negate`, 1 - that: x <= y).
    TileRef greater(Statement &st, const Expr &a, const Expr &b, bool negate) {
        const DType dt = lane_dtype(a.type(), st.stage);
        std::vector<ChainStep> rest{{VxmOp::Relu, false, 0}};
        if (dt == DType::FP32) rest.insert(rest.end(), {{VxmOp::Mul, true, 0x1p127}, {VxmOp::Mul, true, 0x1p127}});
        rest.push_back({VxmOp::Min, true, 1.0});
        if (negate) rest.insert(rest.end(), {{VxmOp::Mul, true, -1.0}, {VxmOp::Add, true, 1.0}});
        const std::string what = st.stage + " comparison";
        if (auto cb = immediate(b)) return chain(st, dt, value_of(st, a), VxmOp::Sub, *cb, rest, what);
        if (auto ca = immediate(a)) { // c - y = (y - c)·-1
            rest.insert(rest.begin(), ChainStep{VxmOp::Mul, true, -1.0});
            return chain(st, dt, value_of(st, b), VxmOp::Sub, *ca, rest, what);
        }
        const TileRef x = value_of(st, a), y = beside(st, x, value_of(st, b));
        const TileRef dst = st.tiles.fresh(pt_.rows, {x, y}, VectorEmitter::other_side(x), what);
        emitter_.vxm(VxmOp::Sub, dt, dt, dst, {x, y}, std::nullopt, rest, what);
        return dst;
    }

    /// op(x, imm) — or a unary op when `imm` is absent.
    TileRef unary(Statement &st, VxmOp op, DType dt, const TileRef &x, std::optional<double> imm, const std::string &what) {
        return chain(st, dt, x, op, imm, {}, what);
    }

    TileRef chain(Statement &st, DType dt, const TileRef &x, VxmOp op, std::optional<double> imm, const std::vector<ChainStep> &rest,
                  const std::string &what) {
        const TileRef dst = st.tiles.fresh(x.count, {x}, VectorEmitter::other_side(x), what);
        emitter_.vxm(op, dt, dt, dst, {x}, imm, rest, what);
        return dst;
    }

    /// A bf16 or fp16 value rounds after every operation, as the reference evaluator rounds it:
    /// out through the narrow type and back.
    TileRef round_to(Statement &st, const TileRef &x, Type t) {
        if (!t.is_float() || t.bits() != 16) return x;
        const DType narrow = t == BFloat(16) ? DType::BF16 : DType::FP16;
        const TileRef n = st.tiles.fresh(x.count, {x}, VectorEmitter::other_side(x), st.stage + " rounding");
        emitter_.vxm(VxmOp::Cast, DType::FP32, narrow, n, {x}, std::nullopt, {}, "round to " + std::string(chipsim::dtype_name(narrow)));
        const TileRef w = st.tiles.fresh(x.count, {n}, VectorEmitter::other_side(n), st.stage + " widened");
        emitter_.vxm(VxmOp::Cast, narrow, DType::FP32, w, {n}, std::nullopt, {}, "widen");
        st.tiles.release(n);
        return w;
    }

    TileRef cast(Statement &st, const Cast *c) {
        const Type from = c->value.type(), to = c->type;
        const DType a = lane_dtype(from, st.stage), b = lane_dtype(to, st.stage);
        const TileRef x = value_of(st, c->value);
        if (a == b) {
            const bool widening = to.is_float() ? to.bits() >= from.bits() : (to.bits() > from.bits() || (to.bits() == from.bits() && to.is_int() == from.is_int()));
            if (!widening && !(to.is_float() && to.bits() == 16) && !clamped_into(c->value, to))
                throw Error("chip backend: " + st.stage + " narrows " + from.to_string() + " to " + to.to_string() +
                            " without clamping; the DSL wraps, the VXM's 32-bit lanes do not — clamp into the range first "
                            "(min(max(v, lo), hi))");
            return round_to(st, x, to);
        }
        if (a == DType::FP32 && !clamped_into(c->value, to) && to.bits() < 32)
            throw Error("chip backend: " + st.stage + " converts " + from.to_string() + " to " + to.to_string() +
                        " without clamping into its range; clamp first (min(max(v, lo), hi))");
        const TileRef dst = st.tiles.fresh(x.count, {x}, VectorEmitter::other_side(x), st.stage + " cast");
        emitter_.vxm(VxmOp::Cast, a, b, dst, {x}, std::nullopt, {}, "cast");
        return round_to(st, dst, to);
    }

    /// Whether `v` is clamped by constants into the range of integer type `t` (so narrowing
    /// it in 32-bit lanes changes nothing).
    static bool clamped_into(const Expr &v, Type t) {
        Expr x = v;
        while (const Cast *c = x.as<Cast>()) x = c->value;
        std::optional<double> lo, hi;
        for (int k = 0; k < 2; ++k) {
            if (const Min *m = x.as<Min>()) {
                if (auto c = immediate(m->b)) hi = c, x = m->a;
                else if (auto c2 = immediate(m->a)) hi = c2, x = m->b;
                else break;
            } else if (const Max *m = x.as<Max>()) {
                if (auto c = immediate(m->b)) lo = c, x = m->a;
                else if (auto c2 = immediate(m->a)) lo = c2, x = m->b;
                else break;
            }
        }
        if (!lo || !hi || t.is_float()) return false;
        const double tmin = t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits() - 1), tmax = std::ldexp(1.0, t.bits() - (t.is_uint() ? 0 : 1)) - 1;
        return *lo >= tmin && *hi <= tmax;
    }

    TileRef intrinsic(Statement &st, const Call *c, Type type) {
        const DType dt = lane_dtype(type, st.stage);
        if (dt != DType::FP32)
            throw Error("chip backend: " + st.stage + " applies " + c->name + " to integers; the VXM's transcendental units take fp32");
        const TileRef x = value_of(st, c->args[0]);
        const std::string what = st.stage + " " + c->name;
        TileRef r;
        switch (c->intrinsic) {
        case Intrinsic::Exp: r = unary(st, VxmOp::Exp, dt, x, std::nullopt, what); break;
        case Intrinsic::Tanh: r = unary(st, VxmOp::Tanh, dt, x, std::nullopt, what); break;
        case Intrinsic::Rsqrt: r = unary(st, VxmOp::Rsqrt, dt, x, std::nullopt, what); break;
        case Intrinsic::Round: { // to int32 (round-half-even, as the reference's nearbyint) and back
            const TileRef i = st.tiles.fresh(x.count, {x}, VectorEmitter::other_side(x), what);
            emitter_.vxm(VxmOp::Cast, DType::FP32, DType::Int32, i, {x}, std::nullopt, {}, what);
            r = st.tiles.fresh(x.count, {i}, VectorEmitter::other_side(i), what);
            emitter_.vxm(VxmOp::Cast, DType::Int32, DType::FP32, r, {i}, std::nullopt, {}, what);
            st.tiles.release(i);
            break;
        }
        // sqrt(x) = 1 / rsqrt(x): exact at 0 (1 / inf), within 2 ulp elsewhere.
        case Intrinsic::Sqrt: r = chain(st, dt, x, VxmOp::Rsqrt, std::nullopt, {{VxmOp::Recip, false, 0}}, what); break;
        // sigmoid(x) = 1 / (1 + exp(-x)).
        case Intrinsic::Sigmoid:
            r = chain(st, dt, x, VxmOp::Mul, -1.0, {{VxmOp::Exp, false, 0}, {VxmOp::Add, true, 1.0}, {VxmOp::Recip, false, 0}}, what);
            break;
        default:
            throw Error("chip backend: " + st.stage + " calls " + c->name + ", which the VXM has no instruction or expansion for yet "
                        "(exp, tanh, rsqrt, sqrt, sigmoid compile; erf, log, abs and pow expand: vxm_expansions.h)");
        }
        return round_to(st, r, type);
    }

    // ---- Constants ------------------------------------------------------------------------

    /// A constant as an operand tile: one row of the program's constant table, read `rows`
    /// times (row step 0).
    TileRef constant_tile(Statement &st, const Expr &e) {
        return constant_rows(st, lane_dtype(e.type(), st.stage), {std::vector<double>(size_t(L_), *immediate(e))}, "constant " + to_string(e));
    }

    /// The value of a loop in each element of this tile: the lane loop's differs lane by lane
    /// (a pool window's or a concat's seam compared with it), the row loop's row by row (an
    /// average pool's count of the window's elements inside the image). Both come from the
    /// constant tables.
    TileRef loop_value_tile(Statement &st, const Variable *v, const Expr &e) {
        const DType dt = lane_dtype(e.type(), st.stage);
        if (v->name == pt_.lane_var) {
            std::vector<double> lanes(static_cast<size_t>(L_), 0.0);
            for (int64_t l = 0; l < L_; ++l) lanes[size_t(l)] = double(pt_.lane_min + l);
            return constant_rows(st, dt, {lanes}, "the values of " + v->name);
        }
        if (v->name != pt_.row_var)
            throw Error("chip backend: " + st.stage + " computes " + to_string(e) + " as a value, a loop neither along the tile's lanes nor "
                        "its rows; the VXM has no instruction for it");
        std::vector<std::vector<double>> rows;
        for (int64_t r = 0; r < pt_.rows; ++r) rows.push_back(std::vector<double>(static_cast<size_t>(L_), double(pt_.row_min + r)));
        return constant_rows(st, dt, rows, "the values of " + v->name);
    }

    /// Rows of constants, one value a lane, loaded once a statement from the program's
    /// constant tables (KF for fp32, KI for int32); one row is spread over the tile's rows.
    TileRef constant_rows(Statement &st, DType dt, const std::vector<std::vector<double>> &rows, const std::string &what) {
        const auto [key, view] = constant_table_rows(dt, rows);
        auto it = st.loads.find(key);
        if (it == st.loads.end()) {
            const TileRef tile = emitter_.tile_anywhere(int64_t(rows.size()), int(placed_++ % 2), "a constant");
            st.tiles.own(tile);
            emitter_.load(tile, view, what);
            it = st.loads.emplace(key, tile).first;
        }
        return int64_t(rows.size()) == pt_.rows ? it->second : VectorEmitter::broadcast(it->second, pt_.rows);
    }

    /// Where rows of the constant tables sit: their key and their view of KF / KI (appended
    /// when new).
    std::pair<std::string, chipsim::OffchipView> constant_table_rows(DType dt, const std::vector<std::vector<double>> &rows) {
        std::vector<std::vector<double>> &table = dt == DType::FP32 ? float_constants_ : int_constants_;
        auto at = std::search(table.begin(), table.end(), rows.begin(), rows.end());
        if (at == table.end()) at = table.insert(table.end(), rows.begin(), rows.end());
        const int64_t first = at - table.begin(), count = int64_t(rows.size());
        chipsim::OffchipView view;
        view.tensor = dt == DType::FP32 ? "KF" : "KI";
        view.offset = first * t_.vector_bytes;
        view.inner_bytes = count * t_.vector_bytes;
        return {view.tensor + "#" + std::to_string(first) + "+" + std::to_string(count), view};
    }

    /// One row of `value` kept on chip for Funcs set to it (an accumulator's start: a sum's 0,
    /// a max's lowest value), on a streaming chip while kept tiles fit: one DMA, then a copy per
    /// statement. A DMA per statement held the one DMA engine for the host link's latency: a
    /// row sum's 16 accumulators waited 16 × 402 cycles for their zero row. (Operands of
    /// arithmetic keep their own DMA, which the scheduler issues early: copies of one kept row
    /// wait for its slice's read port between the long reads of a busy kernel, an int8 MLP's
    /// requantisation ran 35 % slower so.)
    std::optional<TileRef> kept_start(const Nest &n, const Expr &value, DType dt) {
        const std::optional<double> c = immediate(value);
        auto out = outputs_.find(n.func);
        if (!c || !emitter_.streaming() || (out != outputs_.end() && !out->second.whole)) return std::nullopt;
        const auto [key, view] = constant_table_rows(dt, {std::vector<double>(size_t(L_), *c)});
        auto home = constant_homes_.find(key);
        if (home == constant_homes_.end()) {
            if (kept_rows_ + 1 > kept_tiles_limit_rows(t_)) return std::nullopt;
            kept_rows_ += 1;
            home = constant_homes_.emplace(key, emitter_.load_ahead(1, int(placed_++ % 2), view, "constant " + to_string(value) + " (kept)")).first;
        }
        return home->second;
    }

    void declare_constants() {
        for (auto [name, table, dt] : {std::tuple{"KF", &float_constants_, DType::FP32}, std::tuple{"KI", &int_constants_, DType::Int32}}) {
            if (table->empty()) continue;
            declare(cp_, name, name, dt, {int64_t(table->size()), L_}, {}, {}, {}, false);
            for (const std::vector<double> &row : *table)
                for (double v : row) cp_.tensors.back().constant.push_back(float(v));
        }
    }

    // ---- Inputs ---------------------------------------------------------------------------

    /// The DMA view of the tile of Input `c` this statement reads. A read lane by lane whose
    /// lanes no strided DMA gathers loads a window of the row instead, and `lane_map` (when
    /// given) says which lane of the window each lane takes (an sxm.permute); empty otherwise.
    chipsim::OffchipView input_view(const Call *c, const InputPlan &plan, const std::string &what,
                                    std::vector<int32_t> *lane_map = nullptr) const {
        bool by_lane = false;
        for (const Expr &a : c->args) by_lane |= !affine_across_lanes(a, what);
        if (lane_map) lane_map->clear();
        if (by_lane) return input_view_by_lane(c, plan, what, lane_map);
        int64_t off = 0, row = 0, lane = 0;
        for (size_t d = 0; d < c->args.size(); ++d) {
            const Affine a = index(c->args[d], what);
            off += (a.c - plan.lo[d]) * plan.stride[d];
            row += a.row * plan.stride[d];
            lane += a.lane * plan.stride[d];
        }
        if (row < 0 || lane < 0)
            throw Error("chip backend: " + what + " reads " + c->name + " backwards along a tile's rows or lanes; reverse the loop");
        chipsim::OffchipView v;
        v.tensor = plan.tensor;
        v.offset = off * 4;
        if (pt_.rows > 1 && row != 0) v.outer.push_back({pt_.rows, row * 4}); // else one row, read with step 0
        if (lane == 1) {
            v.inner_bytes = L_ * 4;
        } else {
            v.outer.push_back({L_, lane * 4});
            v.inner_bytes = 4;
        }
        return v;
    }

    /// The rows in (lo, hi) of row loop `row` at which a select's comparison of `value` can change
    /// sides (a concat along the row loop: select(i < n, a, b)), so that tiles of rows start
    /// there and every tile lies on one side (decided() below). Comparisons whose sides are not
    /// affine in the row alone give none (the select is then computed, or refused, as before).
    std::set<int64_t> select_breaks(const Expr &value, const std::string &row, int64_t lo, int64_t hi) const {
        std::set<int64_t> breaks;
        const TileBox box{lo, hi - 1, 0, 0};
        auto compare = [&](const Expr &a, const Expr &b) {
            auto x = affine(resolve(a), row, kNoLane, box), y = affine(resolve(b), row, kNoLane, box);
            if (!x || !y || x->row == y->row || x->lane != y->lane) return;
            // a - b = c + k·r changes sign around r = -c / k.
            const int64_t c = x->c - y->c, k = x->row - y->row, at = floor_div(-c, k);
            for (int64_t r : {at, at + 1})
                if (r > lo && r < hi) breaks.insert(r);
        };
        std::function<void(const Expr &)> conditions = [&](const Expr &cond) {
            if (const Not *op = cond.as<Not>()) return conditions(op->a);
            if (const And *op = cond.as<And>()) return conditions(op->a), conditions(op->b);
            if (const Or *op = cond.as<Or>()) return conditions(op->a), conditions(op->b);
            if (const LT *op = cond.as<LT>()) return compare(op->a, op->b);
            if (const LE *op = cond.as<LE>()) return compare(op->a, op->b);
            if (const GT *op = cond.as<GT>()) return compare(op->a, op->b);
            if (const GE *op = cond.as<GE>()) return compare(op->a, op->b);
        };
        struct Selects : IRVisitor {
            std::function<void(const Expr &)> *on_condition;
            using IRVisitor::visit;
            void visit(const Select *op) override {
                (*on_condition)(op->condition);
                IRVisitor::visit(op);
            }
        } selects;
        selects.on_condition = &conditions;
        value.accept(&selects);
        return breaks;
    }

    /// Whether `cond` has one value over the whole tile (its sides affine in the tile's rows and
    /// lanes): a concat's select(i < n, a, b) on a tile that lies on one side of n.
    std::optional<bool> decided(const Expr &cond) const {
        if (const Not *n = cond.as<Not>()) {
            auto a = decided(n->a);
            return a ? std::optional<bool>(!*a) : std::nullopt;
        }
        if (const And *a = cond.as<And>()) {
            auto x = decided(a->a), y = decided(a->b);
            if ((x && !*x) || (y && !*y)) return false;
            return x && y ? std::optional<bool>(true) : std::nullopt;
        }
        if (const Or *o = cond.as<Or>()) {
            auto x = decided(o->a), y = decided(o->b);
            if ((x && *x) || (y && *y)) return true;
            return x && y ? std::optional<bool>(false) : std::nullopt;
        }
        const TileBox box{pt_.row_min, pt_.row_min + pt_.rows - 1, pt_.lane_min, pt_.lane_min + box_lanes_ - 1};
        auto range = [&](const Expr &a, const Expr &b) -> std::optional<std::pair<int64_t, int64_t>> {
            if (!a.type().is_int() && !a.type().is_uint()) return std::nullopt;
            auto x = affine(a, pt_.row_var.empty() ? "\x01" : pt_.row_var, pt_.lane_var, box);
            auto y = affine(b, pt_.row_var.empty() ? "\x01" : pt_.row_var, pt_.lane_var, box);
            if (!x || !y) return std::nullopt;
            const Affine d{x->c - y->c, x->row - y->row, x->lane - y->lane};
            return std::make_pair(box.lowest(d), box.highest(d));
        };
        auto decide = [&](const Expr &a, const Expr &b, auto holds_lo, auto holds_hi) -> std::optional<bool> {
            auto r = range(a, b);
            if (!r) return std::nullopt;
            if (holds_lo(r->first) && holds_lo(r->second)) return true;
            if (!holds_hi(r->first) && !holds_hi(r->second)) return false;
            return std::nullopt;
        };
        auto lt = [](int64_t d) { return d < 0; };
        auto le = [](int64_t d) { return d <= 0; };
        if (const LT *op = cond.as<LT>()) return decide(op->a, op->b, lt, lt);
        if (const LE *op = cond.as<LE>()) return decide(op->a, op->b, le, le);
        if (const GT *op = cond.as<GT>()) return decide(op->b, op->a, lt, lt);
        if (const GE *op = cond.as<GE>()) return decide(op->b, op->a, le, le);
        return std::nullopt;
    }

    /// `e` with every select whose condition the tile decides replaced by the branch it takes.
    Expr fold_tile_constants(const Expr &e) const {
        struct Fold : IRMutator {
            const LoopNestCompiler *self;
            using IRMutator::visit;
            Expr visit(const Select *op, const Expr &x) override {
                if (auto d = self->decided(op->condition)) return mutate(*d ? op->true_value : op->false_value);
                return IRMutator::visit(op, x);
            }
        } fold;
        fold.self = this;
        return fold.mutate(e);
    }

    /// Whether `arg` is affine across this tile's lanes (else it is read lane by lane).
    bool affine_across_lanes(const Expr &arg, const std::string &what) const {
        try {
            index(arg, what);
            return true;
        } catch (const NotAffine &) {
            if (pt_.rows > 1) throw; // first a tile of one row (the Bounds walk retries)
            return false;
        }
    }

    /// Lanes of this tile the lane loop reaches (the rest of a last chunk hold nothing).
    int64_t lanes_used() const { return std::clamp<int64_t>(pt_.lane_end - pt_.lane_min, 1, L_); }

    /// The index `arg` takes in lane `l` of this tile.
    int64_t lane_index(const Expr &arg, int64_t l, const std::string &what) const {
        auto *self = const_cast<LoopNestCompiler *>(this);
        const Point tile = pt_;
        self->pt_.lane_min = tile.lane_min + l;
        self->box_lanes_ = 1;
        int64_t i = 0;
        try {
            i = index(arg, what).c;
        } catch (...) {
            self->pt_ = tile;
            self->box_lanes_ = L_;
            throw;
        }
        self->pt_ = tile;
        self->box_lanes_ = L_;
        return i;
    }

    /// A one-row read whose lanes are not one strided run (a flatten's (i / 8) % 8, i % 8; a
    /// window clamped at an image's edge, a concat along the lanes): its lanes' offsets as
    /// nested strided runs, each level one dimension of the DMA. Else, where they span less than
    /// a row, a window of that many contiguous elements, and in `lane_map` the lane of the
    /// window each lane takes (an sxm.permute puts them in place).
    chipsim::OffchipView input_view_by_lane(const Call *c, const InputPlan &plan, const std::string &what,
                                            std::vector<int32_t> *lane_map) const {
        std::vector<int64_t> off(size_t(L_), 0);
        const int64_t used = lanes_used();
        for (int64_t l = 0; l < used; ++l)
            for (size_t d = 0; d < c->args.size(); ++d) off[size_t(l)] += (lane_index(c->args[d], l, what) - plan.lo[d]) * plan.stride[d];
        // Lanes past the loop's end hold nothing: they continue the run of the lanes before
        // them, so that one strided DMA still gathers the row (a flatten's last chunk).
        const int64_t step = used > 1 ? off[1] - off[0] : 1;
        for (int64_t l = used; l < L_; ++l) off[size_t(l)] = off[size_t(l - 1)] + step;
        if (auto v = strided_gather(off, plan)) return *v;
        const auto [lo, hi] = std::minmax_element(off.begin(), off.begin() + used);
        if (*hi - *lo >= L_)
            throw Error("chip backend: " + what + " reads " + c->name + "'s lanes in an order no strided DMA gathers, from " +
                        std::to_string(*hi - *lo + 1) + " elements apart (more than a row of " + std::to_string(L_) +
                        "); vectorize another loop");
        // The window stays inside the tensor (it holds at least a row: declare_inputs).
        const int64_t first = std::max<int64_t>(0, std::min(*lo, plan.elements - L_));
        if (lane_map)
            for (int64_t l = 0; l < L_; ++l) lane_map->push_back(int32_t(off[size_t(std::min(l, used - 1))] - first));
        chipsim::OffchipView v;
        v.tensor = plan.tensor;
        v.offset = first * 4;
        v.inner_bytes = L_ * 4;
        return v;
    }

    /// One DMA that loads element off[l] into lane l: nested strided runs (at most the DMA's
    /// dimensions below its contiguous bytes) inside the tensor; nullopt when there is none.
    std::optional<chipsim::OffchipView> strided_gather(const std::vector<int64_t> &off, const InputPlan &plan) const {
        if (*std::min_element(off.begin(), off.end()) < 0 || *std::max_element(off.begin(), off.end()) >= plan.elements)
            return std::nullopt;
        // Levels from the innermost: a run of `count` lanes `stride` apart, repeated.
        std::vector<chipsim::ViewDim> dims; // innermost first
        int64_t block = 1;
        while (block < L_) {
            const int64_t stride = off[size_t(block)] - off[0];
            int64_t count = 1;
            while (block * (count + 1) <= L_) {
                bool same = true;
                for (int64_t i = 0; i < block && same; ++i)
                    same = off[size_t(block * count + i)] - off[size_t(block * (count - 1) + i)] == stride;
                if (!same) break;
                ++count;
            }
            if (count == 1 || L_ % (block * count) != 0 || stride < 0) return std::nullopt;
            dims.push_back({count, stride * 4});
            block *= count;
        }
        chipsim::OffchipView v;
        v.tensor = plan.tensor;
        v.offset = off[0] * 4;
        std::reverse(dims.begin(), dims.end());
        v.inner_bytes = 4;
        if (!dims.empty() && dims.back().stride == 4) {
            v.inner_bytes = dims.back().count * 4;
            dims.pop_back();
        }
        if (int(dims.size()) + 1 > t_.dma.max_dims) return std::nullopt;
        v.outer = dims;
        return v;
    }

    static std::string load_key(const std::string &input, const chipsim::OffchipView &v) {
        std::string key = input + "@" + std::to_string(v.offset);
        for (auto &d : v.outer) key += "," + std::to_string(d.count) + ":" + std::to_string(d.stride);
        return key + "/" + std::to_string(v.inner_bytes);
    }

    /// Loads walk: records each distinct Input tile this statement reads.
    void gather_loads(const Expr &value) {
        std::set<std::string> read_here;
        std::function<void(const Expr &)> visit = [&](const Expr &e) {
            if (const Call *c = e.as<Call>()) {
                if (c->call_type == CallType::Input) {
                    const chipsim::OffchipView v = input_view(c, inputs_.at(c->name), "the read " + to_string(e));
                    const std::string key = load_key(c->name, v);
                    if (read_here.insert(key).second) ++statements_reading_[key];
                    if (!loaded_keys_.count(key)) {
                        loaded_keys_.insert(key);
                        loads_.push_back({key, c->name, v, rows_loaded(v)});
                    }
                }
                for (const Expr &a : c->args) visit(a);
                return;
            }
            for (const Expr &k : operands_of(e)) visit(k);
        };
        visit(value);
    }

    /// The index of the program's stage `name` (Instruction::stage), added when new.
    int32_t stage_index(const std::string &name) {
        auto &stages = cp_.program.stages;
        auto it = std::find(stages.begin(), stages.end(), name);
        if (it != stages.end()) return int32_t(it - stages.begin());
        stages.push_back(name);
        return int32_t(stages.size() - 1);
    }

    /// Preloaded tiles of one Input that one DMA brings in: their views are one view with an
    /// outer dimension more, their rows consecutive rows of one tile.
    struct LoadGroup {
        std::string input;
        chipsim::OffchipView view;
        int64_t rows = 0;
        struct Member {
            std::string key;
            int64_t first = 0, rows = 0; ///< Its rows in the group's tile.
            size_t use = 0;              ///< Its place in first-use order (loads_).
        };
        std::vector<Member> members;
        /// The earliest first use of a member: groups are loaded in that order, so the first
        /// statements' tiles arrive first.
        size_t first_use() const {
            size_t u = SIZE_MAX;
            for (const Member &m : members) u = std::min(u, m.use);
            return u;
        }
    };

    /// `loads` (one shape each, sorted by input, shape and offset) as groups. Within each class
    /// of one Input and one view shape, the loads are ordered so that the most of them form
    /// arithmetic progressions of their offsets (the step that leaves the fewest runs: a
    /// loop's tiles along one of its dimensions), and each run is dealt round-robin into
    /// groups — one for each `rows_per_group` rows of the run, at most `max_ways` — so that the
    /// tiles a loop reads one after another sit on different slices, as separate tiles would;
    /// each group is cut to at most `max_rows` rows. A view that already has the DMA's every
    /// dimension stays alone.
    std::vector<LoadGroup> group_loads(const std::vector<LoadGroup> &loads, int64_t max_ways, int64_t rows_per_group, int64_t max_rows) const {
        const size_t max_outer = size_t(std::max(0, t_.dma.max_dims - 1));
        std::vector<LoadGroup> groups;
        auto same_class = [](const LoadGroup &a, const LoadGroup &b) {
            return b.input == a.input && b.rows == a.rows && b.view.tensor == a.view.tensor && b.view.inner_bytes == a.view.inner_bytes &&
                   b.view.outer == a.view.outer;
        };
        size_t i = 0;
        while (i < loads.size()) {
            size_t n = 1;
            while (i + n < loads.size() && same_class(loads[i], loads[i + n])) ++n;
            const std::vector<LoadGroup> cls(loads.begin() + ptrdiff_t(i), loads.begin() + ptrdiff_t(i + n));
            i += n;
            if (n == 1 || cls[0].view.outer.size() >= max_outer) {
                groups.insert(groups.end(), cls.begin(), cls.end());
                continue;
            }
            // The loads in order of (offset mod step, offset), and where each run starts.
            auto arrange = [&](int64_t step, std::vector<size_t> &order) {
                const int64_t base = cls[0].view.offset;
                order.resize(n);
                for (size_t k = 0; k < n; ++k) order[k] = k;
                std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
                    return std::pair((cls[a].view.offset - base) % step, cls[a].view.offset) < std::pair((cls[b].view.offset - base) % step, cls[b].view.offset);
                });
                size_t runs = 1;
                for (size_t k = 1; k < n; ++k) runs += cls[order[k]].view.offset != cls[order[k - 1]].view.offset + step;
                return runs;
            };
            int64_t best_step = 0;
            size_t best_runs = n + 1;
            std::vector<size_t> order;
            for (size_t j = 1; j < std::min<size_t>(n, 17); ++j) {
                const int64_t step = cls[j].view.offset - cls[0].view.offset;
                if (step <= 0) continue;
                if (const size_t runs = arrange(step, order); runs < best_runs) {
                    best_runs = runs;
                    best_step = step;
                }
            }
            if (best_step == 0) {
                groups.insert(groups.end(), cls.begin(), cls.end());
                continue;
            }
            arrange(best_step, order);
            for (size_t k = 0; k < n;) {
                size_t len = 1;
                while (k + len < n && cls[order[k + len]].view.offset == cls[order[k]].view.offset + int64_t(len) * best_step) ++len;
                const int64_t atom_rows = cls[0].rows;
                const int64_t wanted = (int64_t(len) * atom_rows + rows_per_group - 1) / rows_per_group;
                const int64_t w = std::clamp<int64_t>(wanted, 1, std::min<int64_t>(max_ways, int64_t(len)));
                const int64_t per_tile = std::max<int64_t>(1, max_rows / atom_rows);
                for (int64_t g = 0; g < w; ++g) {
                    const int64_t in_group = (int64_t(len) - g + w - 1) / w;
                    for (int64_t first = 0; first < in_group; first += per_tile) {
                        const int64_t count = std::min(per_tile, in_group - first);
                        auto member = [&](int64_t m) -> const LoadGroup & { return cls[order[k + size_t(g + (first + m) * w)]]; };
                        LoadGroup out{cls[0].input, member(0).view, 0, {}};
                        if (count > 1) out.view.outer.insert(out.view.outer.begin(), chipsim::ViewDim{count, w * best_step});
                        for (int64_t m = 0; m < count; ++m) {
                            out.members.push_back({member(m).members.front().key, out.rows, atom_rows, member(m).members.front().use});
                            out.rows += atom_rows;
                        }
                        groups.push_back(std::move(out));
                    }
                }
                k += len;
            }
        }
        return groups;
    }

    /// Which rows of a group's tile a load takes does not matter, so an Input's loads of one
    /// shape go in order of their offsets, where a loop's tiles form progressions.
    static bool shape_then_offset(const LoadGroup &a, const LoadGroup &b) {
        auto dims = [](const chipsim::OffchipView &v) {
            std::vector<int64_t> d{v.inner_bytes};
            for (const chipsim::ViewDim &o : v.outer) d.insert(d.end(), {o.count, o.stride});
            return d;
        };
        return std::tuple(a.input, dims(a.view), a.view.offset) < std::tuple(b.input, dims(b.view), b.view.offset);
    }

    /// On a DRAM chip, an Input too large to preload whose tiles are smaller than a DMA is worth
    /// (a pooling window's three-row tiles: 7,040 DMAs of 192 bytes held npu-edge's load engine
    /// for 91 % of max_pool2d's cycles) is read in groups: the tiles of a window of the loads, in
    /// first-use order, that form progressions become one DMA each (group_loads), issued when
    /// the first of them is read and kept while the kept tiles' budget allows.
    void plan_streamed_groups() {
        const int64_t small = rows_worth_a_dma(), window_rows = kept_tiles_limit_rows(t_) / 4;
        std::vector<LoadGroup> window;
        int64_t rows = 0;
        auto flush = [&] {
            std::stable_sort(window.begin(), window.end(), shape_then_offset);
            for (LoadGroup &g : group_loads(window, 1, small, window_rows)) {
                if (g.members.size() < 2) continue;
                for (size_t m = 0; m < g.members.size(); ++m) streamed_member_[g.members[m].key] = {streamed_.size(), m};
                streamed_.push_back({std::move(g), {}, false, 0});
            }
            window.clear();
            rows = 0;
        };
        for (size_t use = 0; use < loads_.size(); ++use) {
            const InputLoad &l = loads_[use];
            if (l.spread || l.rows >= small) continue;
            window.push_back(LoadGroup{l.input, l.view, l.rows, {{l.key, 0, l.rows, use}}});
            if ((rows += l.rows) >= window_rows) flush();
        }
        flush();
        if (!streamed_.empty())
            preload_summary_ = "; " + std::to_string(streamed_member_.size()) + " input tiles read by " + std::to_string(streamed_.size()) +
                               " DMAs of a few each, as first needed";
    }

    void preload_inputs() {
        int64_t rows = 0;
        for (const InputLoad &l : loads_) rows += l.rows;
        if (loads_.empty()) return;
        if (rows > preload_limit_rows(t_, layouts_.reserved_rows)) {
            if (!emitter_.streaming()) plan_streamed_groups();
            return;
        }
        // On a streaming chip every DMA crosses the host link and holds the DMA engine for the
        // link's latency, so the tiles of an Input a loop reads in a regular pattern come in by
        // a few DMAs (a pooling window's thousands of two-row tiles otherwise spend almost all
        // of the kernel's time on the link). Elsewhere (DRAM) a tile's own DMA lets work start
        // on the first tiles while the rest arrive.
        std::vector<LoadGroup> groups;
        for (size_t use = 0; use < loads_.size(); ++use) {
            const InputLoad &l = loads_[use];
            if (l.spread || !emitter_.streaming()) { // MXM weights interleaved over slices: their own tile each
                const TileRef tile = l.spread ? emitter_.tile_anywhere(l.rows, int(placed_++ % 2), "preloaded weights of " + l.input, true)
                                              : place(l.rows, "a preloaded tile of " + l.input);
                emitter_.load(tile, l.view, l.input + " (preloaded)");
                preloaded_[l.key] = tile;
                continue;
            }
            groups.push_back(LoadGroup{l.input, l.view, l.rows, {{l.key, 0, l.rows, use}}});
        }
        std::stable_sort(groups.begin(), groups.end(), shape_then_offset);
        const chipsim::MemoryDesc &memory = vector_memory(t_);
        groups = group_loads(groups, memory.hemispheres * memory.slices, rows_worth_a_dma(), memory.rows_per_bank);
        std::stable_sort(groups.begin(), groups.end(), [](const LoadGroup &a, const LoadGroup &b) { return a.first_use() < b.first_use(); });
        for (const LoadGroup &g : groups) {
            const TileRef tile = place(g.rows, "a preloaded tile of " + g.input);
            emitter_.load(tile, g.view, g.input + " (preloaded)");
            for (const LoadGroup::Member &m : g.members) preloaded_[m.key] = VectorEmitter::rows_of(tile, m.first, m.rows);
        }
        if (emitter_.streaming()) emitter_.set_after_preload(true);
        preload_summary_ = "; " + std::to_string(loads_.size()) + " input tiles (" + std::to_string(rows) + " rows) preloaded once";
        if (!groups.empty()) preload_summary_ += " by " + std::to_string(groups.size()) + " DMAs";
    }

    /// The rows whose transfer takes as long as a DMA's fixed cost (setup and link latency):
    /// fewer rows a DMA and the fixed cost dominates.
    int64_t rows_worth_a_dma() const {
        const chipsim::DmaCost row = model_.dma_cost(vector_memory(t_).row_bytes);
        return std::max<int64_t>(1, (row.setup + row.link_latency + row.transfer - 1) / std::max<int64_t>(1, row.transfer));
    }

    /// On a streaming chip, an output whose statements would each store fewer rows than a DMA's
    /// fixed cost is worth (a head merge's 32 one-row stores) is kept on chip and stored once at
    /// the end, when it fits beside the kept tiles.
    void keep_small_outputs_whole() {
        if (!emitter_.streaming()) return;
        const int64_t rows_per_dma = rows_worth_a_dma();
        for (auto &[name, o] : outputs_) {
            const int64_t rows = o.on_chip.layout.rows, stores = stores_of_[name];
            if (o.whole || stores < 2 || rows >= stores * rows_per_dma || kept_rows_ + rows > kept_tiles_limit_rows(t_)) continue;
            o.whole = true;
            o.on_chip.tile = place(rows, "output " + name);
            kept_rows_ += rows;
        }
    }

    TileRef input_tile(Statement &st, const Expr &e) {
        const Call *c = e.as<Call>();
        const InputPlan &plan = inputs_.at(c->name);
        std::vector<int32_t> lane_map;
        const chipsim::OffchipView v = input_view(c, plan, "the read " + to_string(e) + " in " + st.stage, &lane_map);
        const std::string key = load_key(c->name, v);
        auto as_read = [&](const TileRef &t) {
            const TileRef rows = t.count == pt_.rows ? t : VectorEmitter::broadcast(t, pt_.rows);
            if (lane_map.empty()) return rows;
            // A window of the row: each lane takes its element from the window (one row).
            const TileRef placed = st.tiles.fresh(1, {rows}, VectorEmitter::other_side(rows), st.stage);
            emitter_.permute(plan.dtype, placed, rows, lane_map, "lanes of " + c->name + " in the read's order");
            return placed;
        };
        if (auto pre = preloaded_.find(key); pre != preloaded_.end()) return as_read(pre->second);
        auto it = st.loads.find(key);
        if (it != st.loads.end()) return as_read(it->second);
        if (auto kept = kept_.find(key); kept != kept_.end()) {
            st.loads.emplace(key, kept->second);
            return as_read(kept->second);
        }
        if (auto member = streamed_member_.find(key); member != streamed_member_.end()) {
            StreamedGroup &g = streamed_[member->second.first];
            if (!g.loaded && kept_rows_ + g.group.rows <= kept_tiles_limit_rows(t_)) {
                g.tile = emitter_.tile_anywhere(g.group.rows, int(placed_++ % 2), "tiles of " + c->name + " one DMA brings");
                emitter_.load(g.tile, g.group.view, c->name + " tiles (grouped)");
                g.loaded = true;
                kept_rows_ += g.group.rows;
                for (const LoadGroup::Member &m : g.group.members) g.live += statements_reading_[m.key] > 0;
            }
            if (g.loaded) {
                const LoadGroup::Member &m = g.group.members[member->second.second];
                const TileRef rows = VectorEmitter::rows_of(g.tile, m.first, m.rows);
                st.loads.emplace(key, rows);
                return as_read(rows);
            }
        }
        const int64_t rows = rows_loaded(v);
        const TileRef tile = emitter_.tile_anywhere(rows, int(placed_++ % 2), "a tile of " + c->name);
        emitter_.load(tile, v, c->name + " tile");
        // A later statement reads the same tile (a reduction and the stage that uses it, computed
        // at the same rows): keep it on chip for that one rather than reading it from off chip
        // again, while kept tiles take at most a quarter of the vector memory.
        if (statements_reading_[key] > 1 && kept_rows_ + rows <= kept_tiles_limit_rows(t_)) {
            kept_.emplace(key, tile);
            kept_rows_ += rows;
        } else {
            st.tiles.own(tile);
        }
        st.loads.emplace(key, tile);
        return as_read(tile);
    }

    /// After a statement: the kept Input tiles it was the last reader of go back to the emitter.
    void release_kept_tiles(const Statement &st) {
        for (const auto &entry : st.loads) {
            const std::string &key = entry.first;
            if (--statements_reading_[key] > 0) continue;
            if (auto kept = kept_.find(key); kept != kept_.end()) {
                emitter_.retire(kept->second);
                kept_rows_ -= kept->second.count;
                kept_.erase(kept);
            }
            if (auto member = streamed_member_.find(key); member != streamed_member_.end()) {
                StreamedGroup &g = streamed_[member->second.first];
                if (g.loaded && g.live > 0 && --g.live == 0) {
                    emitter_.retire(g.tile);
                    kept_rows_ -= g.group.rows;
                }
            }
        }
    }

    /// The rows a load of `v` fills (its bytes in vector rows).
    int64_t rows_loaded(const chipsim::OffchipView &v) const { return v.total_bytes() / t_.vector_bytes;
    }

    /// Planning walk: widens each Input's padded box to what this statement reads.
    void plan_reads(const Expr &value) {
        std::function<void(const Expr &)> visit = [&](const Expr &e) {
            if (const Call *c = e.as<Call>()) {
                if (c->call_type == CallType::Input) {
                    auto [it, fresh] = inputs_.try_emplace(c->name);
                    InputPlan &plan = it->second;
                    if (fresh) {
                        plan.shape = constant_shape(input_types_.at(c->name));
                        plan.lo.assign(plan.shape.size(), 0);
                        plan.hi = plan.shape;
                        plan.dtype = lane_dtype(c->type, "Input " + c->name);
                    }
                    for (size_t d = 0; d < c->args.size(); ++d) {
                        const std::string what = "the read " + to_string(e);
                        if (!affine_across_lanes(c->args[d], what)) { // lane by lane (a flatten's i / n % m)
                            plan.by_lane = true;
                            for (int64_t l = 0; l < lanes_used(); ++l) {
                                const int64_t i = lane_index(c->args[d], l, what);
                                plan.lo[d] = std::min(plan.lo[d], i);
                                plan.hi[d] = std::max(plan.hi[d], i + 1);
                            }
                            continue;
                        }
                        const Affine a = index(c->args[d], what);
                        const int64_t ends[2] = {a.c + std::min<int64_t>(0, a.row * (pt_.rows - 1)) + std::min<int64_t>(0, a.lane * (L_ - 1)),
                                                 a.c + std::max<int64_t>(0, a.row * (pt_.rows - 1)) + std::max<int64_t>(0, a.lane * (L_ - 1))};
                        plan.lo[d] = std::min(plan.lo[d], ends[0]);
                        plan.hi[d] = std::max(plan.hi[d], ends[1] + 1);
                    }
                }
                for (const Expr &a : c->args) visit(a);
                return;
            }
            for (const Expr &k : operands_of(e)) visit(k);
        };
        visit(value);
    }

    void declare_inputs() {
        int k = 0;
        for (auto &[name, plan] : inputs_) {
            plan.tensor = "in" + std::to_string(k++);
            std::vector<int64_t> chip, offset;
            std::vector<int> dims;
            for (size_t d = 0; d < plan.shape.size(); ++d) {
                chip.push_back(plan.hi[d] - plan.lo[d]);
                offset.push_back(-plan.lo[d]);
                dims.push_back(int(d));
            }
            if (plan.by_lane && !chip.empty()) { // slabs of the outermost dimension until a row fits
                int64_t slab = 1, total = 1;
                for (size_t d = 1; d < chip.size(); ++d) slab *= chip[d];
                for (int64_t e : chip) total *= e;
                if (total < L_) chip[0] += (L_ - total + slab - 1) / slab;
            }
            plan.stride = row_major_strides(chip);
            plan.elements = 1;
            for (int64_t e : chip) plan.elements *= e;
            declare(cp_, plan.tensor, name, plan.dtype, chip, plan.shape, dims, offset, false);
        }
    }

    void declare_outputs() {
        for (size_t o = 0; o < m_.outputs.size(); ++o) {
            const LoweredBuffer &b = m_.outputs[o];
            auto lane = lanes_.find(b.name);
            if (lane == lanes_.end()) throw Error("chip backend: output " + b.name + " is never computed by a vector stage");
            OutputPlan plan;
            plan.tensor = "out" + std::to_string(o);
            std::vector<int64_t> shape = cp_.output_shapes.at(o);
            plan.on_chip.layout = RowLayout(lane->second, std::vector<int64_t>(shape.size(), 0), shape, L_);
            plan.dtype = lane_dtype(b.type, "output " + b.name);
            plan.whole = stored_whole_.count(b.name) > 0;
            std::vector<int64_t> chip;
            std::vector<int> dims(shape.size());
            for (size_t d = 0; d < shape.size(); ++d)
                if (int(d) != plan.on_chip.layout.lane) {
                    dims[d] = int(chip.size());
                    chip.push_back(shape[d]);
                }
            dims[size_t(plan.on_chip.layout.lane)] = int(chip.size());
            chip.push_back(plan.on_chip.layout.chunks * L_);
            // bf16 off chip, where every reader rounds to it (packed: half the bytes cross DRAM
            // or the host link) or some do (a copy beside it in DRAM, for linked programs).
            const bool packable = plan.dtype == DType::FP32 && b.type.is_float();
            auto asked = [&](const std::map<std::string, DType> &requests) {
                auto it = requests.find(b.name);
                return packable && it != requests.end() && it->second == DType::BF16;
            };
            plan.packed = asked(layouts_.output_dtype);
            declare(cp_, plan.tensor, b.name, plan.packed ? DType::BF16 : plan.dtype, chip, shape, dims, {}, true);
            if (!plan.packed && t_.dram.bytes > 0 && asked(layouts_.copy_dtype)) {
                plan.copy_tensor = plan.tensor + "b";
                declare_copy(cp_, cp_.tensors.back(), plan.copy_tensor, DType::BF16);
            }
            if (plan.whole) plan.on_chip.tile = place(plan.on_chip.layout.rows, "output " + b.name, matrix_funcs_.count(b.name) > 0);
            outputs_[b.name] = plan;
        }
    }

    ChipProgram &cp_;
    const chipsim::Target &t_;
    chipsim::TimingModel model_;
    VectorEmitter emitter_;
    const LoweredModule &m_;
    std::map<std::string, int> lanes_;
    const ChipLayoutRequests &layouts_;
    const int64_t L_;
    std::map<std::string, Input> input_types_;
    std::set<std::string> stored_whole_;
    std::map<std::string, int64_t> stores_of_; ///< Statements storing each output (counted in the loads walk).
    std::map<std::string, Expr> scope_;
    enum class Phase { Bounds, Loads, Emit } phase_ = Phase::Bounds;
    struct InputLoad {
        std::string key, input;
        chipsim::OffchipView view;
        int64_t rows = 1;
        bool spread = false; ///< Interleaved over a hemisphere's slices (MXM weights, installed several rows a cycle).
    };
    std::vector<InputLoad> loads_;           ///< In first-use order.
    std::map<std::string, TileRef> preloaded_; ///< By load key, when preloaded.
    std::map<std::string, int> statements_reading_; ///< Statements yet to read each Input tile (by load key).
    std::map<std::string, TileRef> kept_;           ///< Input tiles kept on chip for a later statement.
    int64_t kept_rows_ = 0;
    /// DRAM chips, Inputs too large to preload: small tiles one DMA brings in together when the
    /// first of them is read (plan_streamed_groups), kept until the last is read.
    struct StreamedGroup {
        LoadGroup group;
        TileRef tile;
        bool loaded = false;
        int64_t live = 0; ///< Members whose readers have not all run.
    };
    std::vector<StreamedGroup> streamed_;
    std::map<std::string, std::pair<size_t, size_t>> streamed_member_; ///< Load key -> (group, member).
    std::vector<std::string> wave_pieces_;    ///< The current wave's pieces, by what they write.
    std::set<const Provide *> one_row_;       ///< Nests whose indices are affine only row by row.
    int64_t box_lanes_ = 0;                   ///< Lanes index() spans (L, or 1 lane by lane).
    bool replan_ = false;
    int wave_limit_ = kWavePieces;
    std::set<std::string> loaded_keys_;
    std::string preload_summary_;
    Point pt_;
    std::map<std::string, InputPlan> inputs_;
    std::map<std::string, MatrixOperandPlan> matrix_inputs_; ///< By Input, dtype and dimension order.
    std::vector<int> wbuf_;  ///< Weight installs so far per MXM plane (which buffer is next).
    /// Funcs whose pure definition is zero and whose one update is a matrix stage over the whole
    /// region: the stage writes the product into place and the zeros are never written.
    std::set<std::string> zero_initialised_;
    std::set<std::string> matrix_funcs_;     ///< Funcs a matrix stage writes.
    std::set<std::string> zero_then_update_; ///< Funcs defined as zero with one update over their pure variables.
    int64_t jobs_ = 0;       ///< MXM jobs so far (their plane and accumulator region).
    std::map<std::string, OutputPlan> outputs_;
    std::map<std::string, Stored> stored_;
    std::vector<std::vector<double>> float_constants_, int_constants_; ///< Rows of one value a lane.
    std::map<std::string, TileRef> constant_homes_; ///< kept_start's rows, by constant_table_rows' key.
    int64_t placed_ = 0, statements_ = 0;
};

} // namespace

namespace {

/// The directives that mean something on a chip: parallel (host threads) goes, unroll only
/// keeps its split (the chip compiler unrolls every loop it does not run across a tile), and
/// stage() goes (every read of an Input is already a DMA of the tile the instruction needs).
Schedule chip_meaningful(const Schedule &s) {
    Schedule out;
    for (const auto &[func, fs] : s.funcs)
        for (const auto &[stage, ds] : fs.stages)
            for (const Directive &d : ds) {
                if (d.kind == DirectiveKind::Parallel || d.kind == DirectiveKind::Stage) continue;
                if (d.kind == DirectiveKind::Unroll) {
                    if (d.factors.empty()) continue;
                    Directive split = d;
                    split.kind = DirectiveKind::Split;
                    split.vars = {d.vars[0], d.vars[0], d.vars[0] + ".u"};
                    out.add(func, stage, split);
                    continue;
                }
                out.add(func, stage, d);
            }
    return out;
}

bool product_of_reads(const Pipeline &p, bool strict) {
    for (const Func &f : p.functions()) {
        for (auto &[stage, ds] : f.contents()->schedule.stages)
            for (const Directive &d : ds)
                if (d.kind == DirectiveKind::Tensorize) return true;
        for (const Definition &u : f.contents()->updates)
            if (u.rdom && !matmul_products(u.value, strict).empty()) return true;
    }
    return false;
}

} // namespace

bool may_need_matrix_unit(const Pipeline &p) { return product_of_reads(p, false); }
bool needs_matrix_unit(const Pipeline &p) { return product_of_reads(p, true); }

int64_t preload_limit_rows(const chipsim::Target &t, int64_t reserved_rows) {
    const chipsim::MemoryDesc &m = vector_memory(t);
    const int64_t own = m.total_rows(), whole = int64_t(m.total_banks()) * (m.rows_per_bank + reserved_rows);
    return std::max(own / 2, std::min(whole / 2, own * 3 / 4));
}

int64_t kept_tiles_limit_rows(const chipsim::Target &t) { return vector_memory(t).total_rows() / 4; }

void compile_loop_nest(ChipProgram &cp, const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes,
                       const ChipLayoutRequests &layouts) {
    const Schedule original = p.schedule();
    // The default rule fills in what the schedule leaves open; the user's schedule comes back
    // however compilation ends.
    struct Restore {
        const Pipeline &p;
        const Schedule &s;
        ~Restore() { p.set_schedule(s); }
    } restore{p, original};
    p.set_schedule(chip_meaningful(original));
    const VectorLanes chosen = choose_vector_lanes(p, target, output_shapes);
    LoweredModule m;
    try {
        p.set_schedule(chosen.schedule);
        m = lower_unflattened(p, target, output_shapes);
    } catch (const Error &e) {
        // The schedule lowered before the default rule's vectorize directives were added.
        throw Error(std::string("chip backend: the chip's default vector rule (vectorize each computed Func's lane dimension "
                                "whole) does not fit this schedule: ") + e.what() +
                    "; vectorize the stages yourself, or compute this Func at a level where its region is fixed");
    }
    std::map<std::string, int> lanes = chosen.lane_dim;
    for (const ProvideSite &s : provide_sites(m.body)) {
        auto v = s.vectorized_loop();
        if (!v) continue;
        int dim = -1;
        for (size_t i = 0; i < s.args.size(); ++i)
            if (mentions(s.args[i], *v)) dim = int(i);
        if (dim < 0) continue;
        auto it = lanes.find(s.func);
        if (it != lanes.end() && it->second != dim)
            throw Error("chip backend: " + stage_display_name(s.func, s.stage) + " vectorizes along dimension " + std::to_string(dim) + " of " +
                        s.func + ", another of its stages along dimension " + std::to_string(it->second) +
                        "; a Func keeps one dimension in the VXM's lanes");
    }
    cp.output_shapes = output_shapes;
    cp.outputs.clear();
    for (const Func &o : p.outputs()) cp.outputs.push_back(o.name());
    const ChipProgram before = cp;
    // Vector results go to the roomier bank of their slice first (VectorEmitter), away from the
    // input the slice's other bank streams; when the tiles do not fit that way, they are placed
    // again packed tight. Matrix stages keep the tight packing, which leaves the interleaved
    // rows the MXM reads whole (an MLP block's default schedule ran 16 % slower placed for the
    // vector stages; BERT's projections then fit fewer programs).
    const bool roomiest_first = cp.target.issue == chipsim::IssueKind::Static && !may_need_matrix_unit(p); // else a second try changes nothing
    auto compile = [&](const ChipLayoutRequests &requests) {
        try {
            LoopNestCompiler(cp, m, lanes, p, requests, roomiest_first).compile();
        } catch (const VectorEmitter::DoesNotFit &) {
            if (!roomiest_first) throw;
            cp = before;
            LoopNestCompiler(cp, m, lanes, p, requests, false).compile();
        }
    };
    try {
        compile(layouts);
    } catch (const LoopNestCompiler::OddRowsToPack &) {
        cp = before;
        ChipLayoutRequests own_rows;
        own_rows.reserved_rows = layouts.reserved_rows;
        compile(own_rows);
    }
    cp.loop_nest = m.to_string();
}

} // namespace tessera::internal::chip
