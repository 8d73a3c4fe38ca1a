#pragma once
// The reference evaluator: the meaning of an algorithm, computed directly from its
// definitions with every schedule ignored. It is the oracle every backend and every schedule
// is tested against (DESIGN.md §7), so its rules are spelled out here.
//
// Order of evaluation
// - Funcs are realized producers first (a topological order of the pipeline). Outputs are
//   realized over [0, shape) in each dimension; every other Func over the box its consumers
//   need, found by interval arithmetic (interval.h) over its call sites with the consumers'
//   regions and reduction domains (each RVar narrowed by its RDom's where-predicate, e.g.
//   `r < n` bounds r by n - 1). A Func's region also covers what its own update definitions
//   write (their left-hand sides) and read of it, so scattering updates (histograms) and
//   self-referencing updates (scans) have storage; an output's values outside [0, shape) are
//   computed but not returned.
// - An update of an output may write at data-dependent places the interval arithmetic cannot
//   bound (`hist(values(r)) += 1` with int32 values): each such write is checked and one outside
//   the output is an error. For any other Func the region must be bounded (clamp the index).
// - The pure definition fills the whole region, its arguments looping in order (the last one
//   innermost). Then each update is applied in turn: its pure variables loop over the Func's
//   region (outermost), inside them its reduction domain with the first dimension innermost;
//   points where the RDom's where-predicate is false are skipped; the value is computed and
//   stored before the next point, so later points read earlier writes.
// - A select evaluates only the arm its condition picks, so a guarded out-of-range read (as in
//   boundary conditions) is never performed.
//
// Arithmetic, in the declared dtypes
// - Integer +, -, * wrap (two's complement) at the width of the expression's type; Int(8) *
//   Int(8) is an Int(8) product and wraps — the type says so (cast to Int(32) first to widen,
//   as the operator library's int8 matmul does). Integer / and % are Euclidean: the remainder
//   is always in [0, |b|), so for positive divisors / rounds towards negative infinity;
//   x / 0 == 0 and x % 0 == 0.
// - Float32 operations are exactly IEEE fp32 (computed in double and rounded once to fp32,
//   which is exact for + - * / and sqrt). Float64 operations are IEEE fp64. BFloat(16) and
//   Float(16) operations are computed in fp32 and the fp32 result is rounded to nearest even to
//   the 16-bit type after every operation. Float division by zero follows IEEE (±inf, NaN);
//   float % is a - b * floor(a / b).
// - Intrinsics (exp, log, sqrt, rsqrt, tanh, erf, pow, sigmoid, floor, ceil, round, abs) are
//   computed in fp64 and rounded to the expression's type; round() rounds half to even.
// - Casts follow expr.h: float → integer truncates towards zero and saturates (NaN → 0);
//   integer → narrower integer wraps; to BFloat/Float(16) rounds to nearest even in one step.
//
// Errors (tessera::Error), each naming what is wrong:
// - an output Func without a definition, or a shape of the wrong rank;
// - an Input or Param of the pipeline with no binding (named), a binding of the wrong kind, a
//   buffer whose dtype or shape differs from the Input's (both shown);
// - a read of an Input outside its shape (the Func and stage, the Input and the index);
// - a Func whose needed region cannot be bounded, e.g. indexed by an unclamped loaded value
//   (the Func, its consumer and the call);
// - an RDom whose bounds are not constant once Params are bound.
#include <cstdint>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/func.h"

namespace tessera {

/// Computes `f` over [0, shape[d]) in each dimension, reading Inputs and Params from
/// `bindings`. The result has f's element type and a dense row-major layout.
Buffer<> evaluate_reference(const Func &f, const std::vector<int64_t> &shape, const Bindings &bindings = {});

/// Computes every output of `p` (output i over [0, shapes[i])), sharing the Funcs they have
/// in common. Returns one buffer per output, in order.
std::vector<Buffer<>> evaluate_reference(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                         const Bindings &bindings = {});

/// A box of an output: its first coordinate and its extent in each dimension.
struct Region {
    std::vector<int64_t> min, extent;
};

/// Computes output i of `p` (whose full shape is shapes[i]) only over regions[i], and every
/// producer only over what those boxes need — so a few points of a large output cost what those
/// points cost (one row and one column of a matmul each), which is how `tessera run` checks big
/// kernels. Returns one buffer per output of its region's extent. Throws tessera::Error when a
/// region is not inside its shape, and for an output whose update writes at data-dependent
/// places (a histogram: only the whole output has a meaning).
std::vector<Buffer<>> evaluate_reference_region(const Pipeline &p, const std::vector<std::vector<int64_t>> &shapes,
                                                const std::vector<Region> &regions, const Bindings &bindings = {});

} // namespace tessera
