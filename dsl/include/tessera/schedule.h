#pragma once
// Schedules as data (DESIGN.md §4). A Schedule says *how* a pipeline is computed — loop
// splitting and order, fusion, storage, chip mapping — and never *what*. It is an ordered list of
// directives per Func and stage, recorded by Func's fluent methods, produced by the autotuner,
// stored as JSON and replayed with Pipeline::set_schedule().
//
// Loop order convention (Tessera is row-major, DESIGN.md §1): every list of loops in a
// directive is written OUTERMOST FIRST. `reorder(k, i, j)` makes k the outermost and j the
// innermost loop; `tile(i, j, io, jo, ii, ji, 64, 64)` yields io, jo, ii, ji. (Halide lists
// loops innermost first; Tessera follows its own storage convention instead.)
//
// JSON form (version 1, stable; see docs in schedule_json.cpp and the round-trip tests):
//   {"version": 1,
//    "funcs": [{"name": "C",
//               "stages": [{"stage": 1,
//                           "directives": [{"op": "split", "var": "i", "outer": "io",
//                                           "inner": "ii", "factor": 8, "tail": "guard_with_if"},
//                                          ...]}]}]}
// Funcs are listed by name in ascending order, stages by index, directives in recording order.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/expr.h"

namespace tessera {

/// What a split does with the last, partial tile when the extent is not a multiple of the
/// factor (Halide's strategies).
enum class TailStrategy : uint8_t {
    /// Halide's default: ShiftInwards for pure definitions, GuardWithIf for updates.
    Auto,
    /// Runs the last tile to the full factor and skips the points past the end with an if.
    GuardWithIf,
    /// Shifts the last tile inwards so that it ends at the end; some points are computed
    /// twice, so it is legal only where recomputing a point is harmless (pure definitions).
    ShiftInwards,
    /// Rounds the extent up to a multiple of the factor and computes the extra points; legal
    /// only where the extra points have storage and read only defined data (intermediate Funcs
    /// over pure variables).
    RoundUp,
};
/// "auto", "guard_with_if", "shift_inwards", "round_up".
const char *tail_strategy_name(TailStrategy t);
/// Inverse of tail_strategy_name(); throws tessera::Error listing the names.
TailStrategy parse_tail_strategy(const std::string &name);

/// One blocked storage dimension: `dim` is split into an outer part (kept in dim's place) and
/// an inner part of `factor` elements (appended innermost), e.g. NCHW → NCHW16c is
/// {"c", 16}.
struct LayoutBlock {
    std::string dim;
    int64_t factor = 1;
    bool operator==(const LayoutBlock &o) const { return dim == o.dim && factor == o.factor; }
};

/// How a Func's values are laid out in storage. The default (all fields empty) is dense
/// row-major in argument order.
struct Layout {
    /// The pure arguments in storage order, outermost first; empty keeps argument order.
    std::vector<std::string> order;
    /// Blocked dimensions, innermost parts appended in this order after `order`.
    std::vector<LayoutBlock> blocks;
    /// Extra elements stored after each storage dimension of `order` (by name); missing = 0.
    std::map<std::string, int64_t> padding;
    /// The innermost storage dimension's extent is rounded up to a multiple of this.
    int64_t alignment = 1;

    bool is_default() const { return order.empty() && blocks.empty() && padding.empty() && alignment == 1; }
    bool operator==(const Layout &o) const {
        return order == o.order && blocks == o.blocks && padding == o.padding && alignment == o.alignment;
    }
    /// Readable form, e.g. "n, c, h, w, c:16 align 8".
    std::string to_string() const;
};

/// The kinds of directive, grouped as in DESIGN.md §4.
enum class DirectiveKind : uint8_t {
    // Loops (per stage)
    Split, Fuse, Reorder, Tile, Vectorize, Unroll, Parallel,
    // Fusion (per Func; recorded on stage 0)
    ComputeInline, ComputeRoot, ComputeAt, StoreRoot, StoreAt,
    // Data (per Func; recorded on stage 0)
    Stage, StoreIn, SetLayout, DoubleBuffer,
    // Chip (per stage)
    Tensorize,
    // Chip (per Func; recorded on stage 0)
    BlocksPerRow, TileOrder,
};
/// The JSON "op" name: "split", "fuse", "reorder", "tile", "vectorize", "unroll", "parallel",
/// "compute_inline", "compute_root", "compute_at", "store_root", "store_at", "stage",
/// "store_in", "layout", "double_buffer", "tensorize", "blocks_per_row", "tile_order".
const char *directive_kind_name(DirectiveKind k);
/// Inverse of directive_kind_name(); throws tessera::Error listing the names.
DirectiveKind parse_directive_kind(const std::string &name);
/// Whether the directive reshapes a stage's loops (and is therefore recorded per stage).
bool is_loop_directive(DirectiveKind k);

/// One scheduling directive. Which fields mean something depends on `kind`:
/// - Split:      vars = {old, outer, inner}, factors = {f}, tail.
/// - Fuse:       vars = {a, b, fused}; a and b must be adjacent loops, in either order.
/// - Reorder:    vars = the loops, outermost first (the others keep their relative places).
/// - Tile:       vars = {x..., xo..., xi...} (n of each), factors = {fx...}, tail; the loops
///               become xo..., xi... (outermost first).
/// - Vectorize, Unroll: vars = {v}; factors = {} or {f} (split by f first, then mark the inner
///               loop, named "<v>.v" / "<v>.u"); tail for that split.
/// - Parallel:   vars = {v}.
/// - ComputeAt, StoreAt: func = consumer, vars = {loop}, consumer_stage (-1: the stage of the
///               consumer that calls this Func).
/// - Stage:      func = consumer, vars = {loop}, consumer_stage, memory, layout (of the copy;
///               default: dense in argument order). Recorded on a Func or an Input.
/// - StoreIn:    memory, bank (-1: any).
/// - SetLayout:  layout.
/// - Tensorize:  unit (e.g. "mxm"), vars = the innermost loops it covers, outermost first.
/// - BlocksPerRow: factors = {n}: the matrix unit's operand blocks per on-chip row (recorded on
///               the Func the unit accumulates).
/// - TileOrder:  vars = {order}: the order of the matrix unit's output tiles ("rows_snake",
///               "rows", "columns_snake", "columns"; recorded on the Func the unit accumulates).
/// - DoubleBuffer: factors = {} (two buffers) or {0} (one).
struct Directive {
    DirectiveKind kind = DirectiveKind::Split;
    std::vector<std::string> vars;
    std::vector<int64_t> factors;
    TailStrategy tail = TailStrategy::Auto;
    std::string func;
    int consumer_stage = -1;
    MemoryKind memory = MemoryKind::Auto;
    int bank = -1;
    Layout layout;
    std::string unit;

    bool operator==(const Directive &o) const;
    bool operator!=(const Directive &o) const { return !(*this == o); }
    /// Readable form, as the fluent call that records it: "split(i, io, ii, 8, guard_with_if)".
    std::string to_string() const;
};

/// The directives of one Func, per stage (0 = pure definition, i + 1 = update i). Func-level
/// directives (fusion and data) are recorded on stage 0.
struct FuncSchedule {
    std::map<int, std::vector<Directive>> stages;
    bool empty() const;
    /// The directives of stage `s` (empty if none).
    const std::vector<Directive> &stage(int s) const;
    bool operator==(const FuncSchedule &o) const;
};

/// A whole pipeline's schedule: FuncSchedules by Func name.
class Schedule {
public:
    std::map<std::string, FuncSchedule> funcs;

    bool empty() const;
    /// Appends a directive to (func, stage).
    void add(const std::string &func, int stage, Directive d);
    /// The stored JSON form (see the file comment), pretty-printed with `indent` spaces
    /// (-1: one line). Deterministic: equal schedules give equal text.
    std::string to_json(int indent = 2) const;
    /// Parses the JSON form; throws tessera::Error starting with `origin` (the file's name)
    /// and naming the bad field by its path (e.g. "funcs[0].stages[1].directives[2].factors")
    /// or the line and column of a syntax error, on malformed input.
    static Schedule from_json(const std::string &text, const std::string &origin = "schedule JSON");
    /// One line per directive: "C.update(0): tile(i, j, io, jo, ii, ji, 64, 64)".
    std::string to_string() const;

    /// Equal when every Func has the same directives: a Func listed with no directives is the
    /// same as an absent one, as in set_schedule and to_json (which leaves it out).
    bool operator==(const Schedule &o) const;
    bool operator!=(const Schedule &o) const { return !(*this == o); }
};

namespace internal {

/// The loops of a stage after its loop directives, outermost first, together with which of
/// them are reduction loops. Shared by record-time checks (func_schedule.cpp) and lowering.
struct StageLoopNames {
    std::vector<std::string> loops;
    std::vector<bool> is_reduction;
    /// Every name a directive has consumed (split or fused away), for "already split" errors.
    std::vector<std::string> consumed;
};

/// The loops of stage `stage` of `f` before any directive, outermost first: for the pure
/// definition its arguments; for an update the pure Vars it keeps at their positions, then its
/// RVars with the last RDom dimension outermost (DESIGN.md §1). Throws tessera::Error naming
/// the Func if it is undefined or lacks the stage.
StageLoopNames initial_loop_names(const FunctionContents &f, int stage);

/// "C" or "C.update(0)".
std::string stage_display_name(const std::string &func, int stage);

/// Replays the loop directives of a stage on the names of its initial loops and throws
/// tessera::Error naming `stage_name` and the directive when one names an unknown or
/// already-split loop, reuses a name, reorders a loop twice, fuses non-adjacent loops, or has
/// a factor < 1. Other directives are ignored here.
StageLoopNames replay_loop_names(const std::string &stage_name, StageLoopNames initial,
                                 const std::vector<Directive> &directives);

/// Applies one loop directive to `names` (as replay_loop_names does for each).
void apply_loop_names(const std::string &stage_name, StageLoopNames &names, const Directive &d);

/// "a, b, c" — for the lists of legal choices in error messages.
std::string join_names(const std::vector<std::string> &names);

} // namespace internal

} // namespace tessera
