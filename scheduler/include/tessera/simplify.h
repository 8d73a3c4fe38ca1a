#pragma once
// The simplifier: constant folding, algebraic identities, and min / max / select / comparison
// folding from the bounds of loop and let variables. It never changes what a statement
// computes: integer folding wraps and divides exactly as every evaluator does (expr.h), and
// float expressions are folded only where the result is exact.
#include "tessera/expr.h"

namespace tessera {

/// The simplified expression (no knowledge of variable bounds).
Expr simplify(const Expr &e);
/// The simplified statement: also drops loops of extent 0, turns loops of extent 1 into lets,
/// substitutes lets of constants and variables, and removes if-branches decided by bounds.
Stmt simplify(const Stmt &s);

} // namespace tessera
