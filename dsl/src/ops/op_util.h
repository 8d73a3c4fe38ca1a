#pragma once
// Helpers the op families share: error messages, shape arithmetic that stays constant when the
// shapes are, typed constants, axis normalisation and Var lists. Private to dsl/src/ops.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/error.h"
#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/ops/conv.h"
#include "tessera/ops/tensor.h"

namespace tessera::internal::oputil {

using ops::Tensor;

/// Throws tessera::Error("ops::<op> '<name>': <message>").
[[noreturn]] void fail(const std::string &op, const std::string &name, const std::string &message);

/// Throws naming the op unless `t` is defined.
void require_defined(const Tensor &t, const std::string &what, const std::string &op, const std::string &name);
/// Throws naming the op unless `t` has a float type (Float or BFloat).
void require_float(const Tensor &t, const std::string &what, const std::string &op, const std::string &name);
/// Throws naming the op unless `t` has exactly `rank` dimensions.
void require_rank(const Tensor &t, int rank, const std::string &what, const std::string &op, const std::string &name);

/// The value of an integer expression made of constants and `params` (by name) with + - * /
/// min max and casts, if it is one; shapes are such expressions.
std::optional<int64_t> const_int(const Expr &e, const std::map<std::string, int64_t> &params = {});
/// An Int(32) constant.
Expr int_const(int64_t v);
/// A constant of type t holding v (rounded to t).
Expr typed_const(Type t, double v);

/// Shape arithmetic: constant-folded when both sides are constants, symbolic otherwise.
Expr dim_add(const Expr &a, const Expr &b);
Expr dim_sub(const Expr &a, const Expr &b);
Expr dim_mul(const Expr &a, const Expr &b);
Expr dim_div(const Expr &a, const Expr &b);

/// Whether two extents are provably different (both constant and unequal).
bool dims_differ(const Expr &a, const Expr &b);
/// Whether an extent is the constant 1.
bool is_one(const Expr &e);
/// A readable extent: "7", "N", or "?".
std::string dim_string(const Expr &e);

/// Maps a possibly negative axis into [0, rank); throws naming the op if out of range.
int normalize_axis(int axis, int rank, const std::string &op, const std::string &name);

/// Vars named prefix0, prefix1, ... (d0, d1, ... by default).
std::vector<Var> make_vars(int n, const std::string &prefix = "d");
/// The same Vars as Exprs.
std::vector<Expr> as_exprs(const std::vector<Var> &vars);

/// The shape two shapes broadcast to (NumPy: aligned from the innermost dimension, equal or one
/// of them 1). A symbolic extent counts as non-1. Throws naming the op, `what` and both shapes.
std::vector<Expr> broadcast_shape(const std::vector<Expr> &a, const std::vector<Expr> &b, const std::string &what,
                                  const std::string &op, const std::string &name);

/// The coordinates to read a tensor of shape `shape` at, for the point `coords` of a broadcast
/// result of shape `out_shape` (aligned from the innermost; 0 where `shape` has extent 1 and
/// the result does not).
std::vector<Expr> broadcast_args(const std::vector<Expr> &shape, const std::vector<Expr> &coords,
                                 const std::vector<Expr> &out_shape);

/// Reads `t` at `coords` (one coordinate per dimension of the broadcast result, aligned from
/// the innermost), using 0 for dimensions where `t` has extent 1 and the result does not.
Expr broadcast_read(const Tensor &t, const std::vector<Expr> &coords, const std::vector<Expr> &out_shape);

/// A Func `name` that is `t` inside its shape and `outside` elsewhere (the DSL's
/// constant_exterior boundary condition, so backends see one padding pattern). Used for padded
/// convolutions and pooling.
Func pad_with(const Tensor &t, const Expr &outside, const std::string &name);

/// The input coordinate of a sliding window: out · stride + tap · dilation - pad_before, with
/// the trivial terms left out (so a stride-1, undilated, unpadded window reads out + tap).
Expr window_coord(const Expr &out, int stride, const Expr &tap, int dilation, int pad_before);

/// Output extent of a sliding window: (in + pad - dilation · (kernel - 1) - 1) / stride + 1.
Expr window_extent(const Expr &in, int pad_total, const Expr &kernel, int dilation, int stride);

/// A reduction of a tensor over some of its axes: the result's pure Vars and shape, the RDom
/// over the reduced axes (the innermost reduced axis is r.x), and the input coordinates of a
/// point of the domain (reduced axes from the RDom, the others from the result's Vars).
struct Reduction {
    std::vector<Var> vars;          ///< pure Vars of the result: "d0", "d1", ...
    std::vector<Expr> shape;        ///< the result's shape
    RDom r;                         ///< named "r"
    std::vector<Expr> in_args;      ///< where the input is read
    Expr count;                     ///< number of elements reduced into each result element
};
/// Builds the reduction of `x` over `axes` (negative from the end; empty = all); keepdims keeps
/// reduced axes as extent 1. Reducing every axis without keepdims gives shape [1]. Throws
/// naming the op for out-of-range or repeated axes.
Reduction make_reduction(const Tensor &x, std::vector<int> axes, bool keepdims, const std::string &op,
                         const std::string &name);

/// Checks the stride (>= 1), dilation (>= 1) and padding (>= 0) of a 2-D window op.
void check_window(const std::array<int, 2> &stride, const std::array<int, 2> &dilation, const ops::Padding2d &padding,
                  const std::string &op, const std::string &name);

/// A Bool expression: 0 <= coord < extent.
Expr in_range(const Expr &coord, const Expr &extent);

} // namespace tessera::internal::oputil
