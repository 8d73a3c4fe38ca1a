#pragma once
// Interval arithmetic over Exprs: the range of values an expression can take, given ranges for
// its free variables. It is the bounds helper of the project: the reference evaluator uses it
// to find the region of each Func its consumers need, and bounds inference in lowering uses it
// with symbolic ranges (loop variables, Params).
//
// Bounds are Exprs, so they can be symbolic; when every input range is constant the results
// fold to constants (IntImm / UIntImm / FloatImm). A missing bound (an undefined Expr) means
// "unbounded on that side": the caller decides whether that is an error (the reference
// evaluator reports the Func and the call).
//
// What is bounded:
// - +, -, *, /, % (Euclidean integer division and modulus, division by zero yields 0), min,
//   max, select (both arms unless the condition is decided), Let, casts (monotone; a cast that
//   can wrap gives the target type's range or, for wide types, unbounded), comparisons and logic
//   (decided when the operand ranges do not overlap, else [false, true]), and the monotone
//   intrinsics (exp, log, sqrt, floor, ceil, round, tanh, erf, sigmoid, abs, rsqrt).
// - The value loaded from an Input or a Func is unknown: its bound is the range of its type for
//   Bool and integer types of at most 16 bits (so a uint8 image indexes a 256-entry
//   histogram), and unbounded otherwise.
// - Constant arithmetic that overflows its type would wrap, so such a result is unbounded.
// - Variables absent from the scope stand for themselves: their bound is [v, v].
#include <map>
#include <string>
#include <vector>

#include "tessera/expr.h"

namespace tessera {

/// A closed range [min, max] of values. An undefined min (max) means unbounded below (above).
struct Interval {
    Expr min, max;

    Interval() = default;
    Interval(Expr min, Expr max) : min(std::move(min)), max(std::move(max)) {}
    /// The unbounded interval (-inf, +inf).
    static Interval everything() { return Interval(); }
    /// [e, e].
    static Interval single_point(const Expr &e) { return Interval(e, e); }

    bool has_lower_bound() const { return min.defined(); }
    bool has_upper_bound() const { return max.defined(); }
    bool is_bounded() const { return has_lower_bound() && has_upper_bound(); }
    bool is_everything() const { return !has_lower_bound() && !has_upper_bound(); }
    /// Whether min and max are the same node (a point, possibly symbolic).
    bool is_single_point() const { return min.defined() && min.same_as(max); }
    /// Whether both bounds are integer constants (IntImm or UIntImm).
    bool is_constant() const;
    /// The integer constant bounds; throw tessera::InternalError unless is_constant().
    int64_t const_min() const;
    int64_t const_max() const;
    /// "[0, 255]", "[x, (x + 2)]", "(-inf, 7]".
    std::string to_string() const;
};

/// The smallest interval containing both (symbolic bounds become min/max Exprs).
Interval interval_union(const Interval &a, const Interval &b);
/// The largest interval contained in both.
Interval interval_intersection(const Interval &a, const Interval &b);

/// Known ranges of free variables (pure, reduction, Param, loop or let variables), by name.
/// Give each interval the type of its variable (Int(32) for Vars and RVars): symbolic bounds
/// are built from IR nodes, which require operands of one type.
using IntervalScope = std::map<std::string, Interval>;

/// The range of values `e` can take when each variable in `scope` lies in its interval.
Interval bounds_of_expr(const Expr &e, const IntervalScope &scope = {});

/// The part of `range`, the interval of integer variable `var`, where `condition` can hold:
/// each conjunct (of an && chain) of the form `var < e`, `var <= e`, `var > e`, `var >= e` or
/// `var == e` (either way round) tightens it by the bounds of `e` in `scope`; other conjuncts
/// leave it as it is. So an RDom's where-predicate `r < n` bounds r by n - 1. The result is
/// empty (a constant min > max) when the condition can never hold.
Interval narrow_by_condition(const std::string &var, const Interval &range, const Expr &condition,
                             const IntervalScope &scope = {});

/// A multi-dimensional range: one Interval per dimension, outermost first.
using Box = std::vector<Interval>;

/// Dimension-wise union; an empty box is the identity.
Box box_union(const Box &a, const Box &b);
/// Whether every dimension is bounded on both sides.
bool box_is_bounded(const Box &b);
std::string box_to_string(const Box &b);

/// One call of a Func or an Input inside an expression, with the coordinates it may touch.
struct CallRegion {
    Expr call;         ///< the Call node (print it to name the call in an error)
    std::string name;  ///< the Func or Input called
    CallType call_type = CallType::Func;
    Box box;           ///< bounds of each argument
};

/// Every Func and Input call in `e` (including calls nested in the arguments of other calls),
/// in the order they appear, with the bounds of their arguments. Let-bound variables inside
/// `e` are bounded by their values.
std::vector<CallRegion> call_regions(const Expr &e, const IntervalScope &scope = {});

/// The union of call_regions() per called name: the region of each Func or Input `e` reads.
std::map<std::string, Box> boxes_required(const Expr &e, const IntervalScope &scope = {});

} // namespace tessera
