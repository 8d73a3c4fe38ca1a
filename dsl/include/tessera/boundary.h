#pragma once
// Boundary conditions, as Halide's BoundaryConditions: a Func defined everywhere that reads
// an Input (or a Func) inside its bounds and something sensible outside — for padded
// convolutions and pooling. Reads inside the result are clamped to the bounds, so a consumer
// never reads the source out of range whatever region it asks for.
#include <string>
#include <vector>

#include "tessera/expr.h"
#include "tessera/func.h"

namespace tessera {

/// f(d0, d1, ...) = in(d0, d1, ...) inside [0, shape) in every dimension, `value` outside.
/// `value` converts to the Input's type by the assignment rule (ir_operator.h): a constant
/// adapts; anything that would narrow is an error. The Func is named `name`, by default
/// "<input>_constant_exterior"; its Vars are d0, d1, ...
Func constant_exterior(const Input &in, Expr value, const std::string &name = "");
/// The same for a Func over explicit bounds, one Range (min, extent) per dimension; its Vars
/// are the source Func's.
Func constant_exterior(const Func &source, const std::vector<Range> &bounds, Expr value, const std::string &name = "");

/// f(d0, d1, ...) = in(clamp(d0, 0, shape0 - 1), ...): the nearest edge element outside.
Func repeat_edge(const Input &in, const std::string &name = "");
Func repeat_edge(const Func &source, const std::vector<Range> &bounds, const std::string &name = "");

} // namespace tessera
