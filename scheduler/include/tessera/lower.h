#pragma once
// Lowering (DESIGN.md §3): an algorithm and its schedule become one loop-nest statement.
//
//   Pipeline p(relu);
//   LoweredModule m = lower(p, Target::interpreter());
//   std::cout << m.to_string();     // readable pseudo-code of the loop nest
//
// Passes, in order: loop construction from the directives (loop_nest.cpp) → producer
// injection at compute_at / store_at levels with bounds inference (inject_producers.cpp,
// bounds_inference.cpp) → storage flattening by layout (storage_flattening.cpp) →
// simplification (simplify.cpp) → legality of the result (legality.cpp). Every illegal
// schedule throws tessera::Error naming the Func, the stage and the directive.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/target.h"

namespace tessera {

/// A buffer the lowered statement reads or writes from outside: an Input or an output.
struct LoweredBuffer {
    std::string name;
    Type type;
    /// For an Input: its shape (constants or Exprs of Params). For an output: its region,
    /// the variables "<F>.<arg>.min" and "<F>.<arg>.extent" (free in `body` unless the output
    /// shapes were given to lower(), then constants).
    std::vector<Expr> shape;
    std::vector<Expr> min;
    /// The names of the output's pure arguments (empty for an Input).
    std::vector<std::string> args;
};

/// The result of lowering: one statement over flat buffers, and what it needs from outside.
struct LoweredModule {
    std::string name;
    /// The statement. Free variables: the outputs' region variables (unless shapes were given),
    /// the Params, and "<buffer>.stride.<d>" are defined inside.
    Stmt body;
    std::vector<LoweredBuffer> inputs;
    std::vector<LoweredBuffer> outputs;
    /// Scalar Params read, by name and type.
    std::vector<std::pair<std::string, Type>> params;
    Target target = Target::interpreter();
    /// Per stored Func, what the printout adds to its allocation (layout, double buffering).
    std::map<std::string, std::string> storage_notes;

    /// Readable pseudo-code: a header naming the arguments, then the loop nest with loop kinds
    /// and bounds, allocations with memory, type and size, stores and loads.
    std::string to_string() const;
};

/// Lowers `p` with its Funcs' schedules for `target`, with symbolic output extents.
LoweredModule lower(const Pipeline &p, const Target &target = Target::interpreter());
/// Lowers `p` for outputs of these shapes (one per output, outermost first): the region
/// variables become constants, so extents fold and guards that can never fail disappear.
LoweredModule lower(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes);
/// The same passes but storage flattening, for a backend that lays out storage itself (the chip
/// compiler chooses each buffer's layout in vector rows and banks): the statement keeps Realize,
/// Provide and multi-dimensional Func and Input calls, its bounds folded to constants.
LoweredModule lower_unflattened(const Pipeline &p, const Target &target, const std::vector<std::vector<int64_t>> &output_shapes);

} // namespace tessera
