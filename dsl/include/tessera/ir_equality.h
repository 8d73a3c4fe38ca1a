#pragma once
// Structural equality and a stable structural hash of the IR, and hashes of whole Funcs and
// Pipelines. "Structural" means by content: node kinds, types, names and constant values —
// never by address. The hash is FNV-1a (64-bit) over a fixed serialisation of that content, so
// it is the same in every run, on every machine and with every build; tuning records are
// keyed by it. Changing the serialisation invalidates stored records: bump
// kStructuralHashVersion when you do.
#include <cstdint>

#include "tessera/expr.h"

namespace tessera {

class Func;
class Pipeline;

/// Version of the hash serialisation, mixed into every hash.
inline constexpr uint32_t kStructuralHashVersion = 1;

/// Whether two Exprs are the same tree: same node kinds, types, variable and function names,
/// and constants (bitwise, so NaN equals NaN and -0.0 differs from 0.0). Calls to Funcs and
/// Inputs compare by name. Undefined equals only undefined.
bool equal(const Expr &a, const Expr &b);
bool equal(const Stmt &a, const Stmt &b);

/// A 64-bit hash that is equal for equal() trees.
uint64_t structural_hash(const Expr &e);
uint64_t structural_hash(const Stmt &s);

/// A hash of everything that defines the Func's values: its definitions and, transitively, those
/// of every Func it calls and the names, types and shapes of the Inputs it reads. Schedules do
/// not enter it (they never change what is computed).
uint64_t hash(const Func &f);
/// The same over all outputs of a pipeline (in order).
uint64_t hash(const Pipeline &p);

} // namespace tessera
