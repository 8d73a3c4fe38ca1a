#pragma once
// ops::Tensor — the value the operator library passes between ops: a Func (or an Input) together
// with its element type and its shape, so ops compose (matmul → add bias → gelu) and each op
// checks the shapes of its operands when it is built, long before anything runs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/buffer.h"
#include "tessera/expr.h"
#include "tessera/func.h"
#include "tessera/target.h"
#include "tessera/type.h"

namespace tessera::ops {

/// The memory layout of a 4-D image tensor (row-major, outermost dimension first):
/// NCHW = [batch, channels, height, width], NHWC = [batch, height, width, channels].
enum class Layout { NCHW, NHWC };

/// "NCHW" or "NHWC".
const char *layout_name(Layout layout);

/// A tensor: something that can be read at integer coordinates (a Func or an Input), its
/// element type, and its shape, outermost dimension first. Shape entries are Int(32) Exprs:
/// constants, or Exprs of Params for shapes bound at realize time.
///
/// An Input converts implicitly (`ops::matmul(A, B)` with Inputs A and B). A Func needs its
/// shape, since a Func is defined over all integers: `Tensor(f, {M, N})`. Every op returns a
/// Func-backed Tensor, which converts to its Func (`Func C = ops::matmul(A, B);`).
class Tensor {
public:
    /// An undefined tensor, used for absent optional operands (e.g. no bias).
    Tensor() = default;
    /// The Input itself: ops read it directly (no copy Func in between).
    Tensor(const Input &input);
    /// A defined Func over the box [0, shape[d]) in each dimension. Throws tessera::Error if
    /// the Func is undefined or its dimensionality differs from the shape's.
    Tensor(Func func, std::vector<Expr> shape);

    bool defined() const { return input_.has_value() || func_.defined(); }
    bool is_input() const { return input_.has_value(); }
    /// The Input or Func name.
    const std::string &name() const;
    Type type() const { return type_; }
    int dimensions() const { return static_cast<int>(shape_.size()); }
    const std::vector<Expr> &shape() const { return shape_; }
    /// Extent of dimension d; negative d counts from the end (-1 is the innermost).
    Expr dim(int d) const;

    /// The Func that computes this tensor. For an Input-backed tensor, a new Func named
    /// "<input>_value" that copies the Input (each call makes a fresh one).
    Func func() const;
    operator Func() const { return func(); }
    /// The Input of an Input-backed tensor; throws otherwise.
    const Input &input() const;

    /// The element at these coordinates (outermost first); the argument count must equal
    /// dimensions().
    Expr operator()(const std::vector<Expr> &args) const;
    template <typename... Args> Expr operator()(Expr first, Args... rest) const {
        return (*this)(std::vector<Expr>{first, Expr(rest)...});
    }

    /// The shape as integers: constant entries as they are, Param entries with the values
    /// given in `bindings`. Throws naming the dimension if one cannot be evaluated.
    std::vector<int64_t> concrete_shape(const Bindings &bindings = {}) const;
    /// Computes the tensor over its whole shape: func().realize(concrete_shape(bindings), ...).
    Buffer<> realize(const Bindings &bindings = {}, const Target &target = Target::reference()) const;

private:
    std::optional<Input> input_;
    Func func_;
    Type type_;
    std::vector<Expr> shape_;
};

/// Readable shape for messages: "[2, 7, N]" (symbolic entries are printed as their Param name,
/// or as "?" when they are more complex Exprs).
std::string shape_string(const std::vector<Expr> &shape);

/// The type an op accumulates sums and products of `t` in: Int(32) for 8- and 16-bit integers
/// (signed or not), the type itself for 32- and 64-bit integers, Float(32) for BFloat(16) and
/// Float(16) (as the chips' MXM does), the type itself for Float(32) and Float(64).
Type accumulator_type(Type t);

/// The type an op computes non-linear float math (exp, rsqrt, tanh, …) of `t` in: Float(32) for
/// BFloat(16) and Float(16), the type itself for Float(32) and Float(64). Ops round the result
/// back to `t` once, at the end, instead of after every step.
Type compute_type(Type t);

} // namespace tessera::ops
