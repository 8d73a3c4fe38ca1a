#pragma once
// What the chip compiler's loop-nest passes read off the unflattened loop nest
// (lower_unflattened): where each Provide sits — its Func and stage, its loops, its arguments
// and value with every let substituted — and small queries on Exprs.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/expr.h"

namespace tessera::internal::chip {

/// A loop around a Provide, outermost first.
struct SiteLoop {
    std::string name;
    ForKind kind = ForKind::Serial;
};

/// One Provide of the loop nest with what surrounds it.
struct ProvideSite {
    std::string func;
    int stage = 0;               ///< 0 = pure definition, i + 1 = update i (from its loops' names).
    std::vector<Expr> args;      ///< Lets substituted.
    Expr value;                  ///< Lets substituted.
    std::vector<SiteLoop> loops; ///< Every loop around it, outermost first.
    /// The stage's own vectorized loop, if it has one.
    std::optional<std::string> vectorized_loop() const;
};

/// Every Provide of `s`, in program order.
std::vector<ProvideSite> provide_sites(const Stmt &s);

/// The prefix of the loop variables of a stage ("f.s1.").
std::string loop_prefix(const std::string &func, int stage);
/// The stage a loop variable belongs to when it is one of `func`'s ("f.s1.x" → 1), else -1.
int stage_of_loop(const std::string &func, const std::string &loop);

/// `e` with the variables of `values` replaced (Let expressions inlined as well).
Expr substitute_vars(const Expr &e, const std::map<std::string, Expr> &values);
/// Whether `e` reads variable `name`.
bool mentions(const Expr &e, const std::string &name);
/// The Calls to Funcs in `e`, in order of appearance (repeats included).
std::vector<Expr> func_calls(const Expr &e);
/// The value of a constant (an immediate of any type, or one converted to another type).
std::optional<double> immediate(const Expr &e);
/// The operands of an arithmetic node (none for leaves and Calls).
std::vector<Expr> operands_of(const Expr &e);
/// The products of two reads in `e` that share a reduction variable, one read with a pure
/// variable the other lacks (`strict`: each with one) — acc[i, j] += a[i, k] * b[k, j], the
/// taps of a convolution: the matrix unit's work.
std::vector<const Mul *> matmul_products(const Expr &e, bool strict);

} // namespace tessera::internal::chip
