#pragma once
// Facts about flattened loop nests that the host code generator needs before it emits a loop:
// whether a loop may run as vector code, which names a loop body uses (to capture them into a
// parallel task's closure), and whether an Expr reads memory (so a select must not evaluate
// both arms). LLVM-free.
#include <set>
#include <string>

#include "tessera/expr.h"

namespace tessera::internal {

/// Why a loop marked Vectorized must run as scalar code, or empty when it can run as vectors:
/// its lanes must be independent, which holds when every store's index varies with the loop
/// variable, every load of a buffer the body stores reads exactly the stored element, no
/// inner loop's bounds vary with it and the body allocates nothing.
std::string why_not_vectorizable(const For *loop);

/// Every Variable name and every buffer name (Load, Store, Allocate) used in `s`.
struct NamesUsed {
    std::set<std::string> variables, buffers;
};
NamesUsed names_used(const Stmt &s);

/// The lets (LetStmt and Let names) whose values feed, directly or through other lets, the
/// index of a Load or Store: address arithmetic, which the code generator may assume does not
/// overflow (an overflowing index would be out of bounds anyway).
std::set<std::string> index_lets(const Stmt &s);

/// Whether evaluating `e` reads memory (contains a Load).
bool contains_load(const Expr &e);

/// Whether `e` mentions the variable `name`.
bool mentions(const Expr &e, const std::string &name);

} // namespace tessera::internal
