#pragma once
// Matrix products: matmul (NumPy semantics, optional transposes, batched) and gemm (ONNX Gemm:
// alpha · op(A) · op(B) + beta · C).
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Options of matmul.
struct MatmulOptions {
    /// Use the transpose of the last two dimensions of A (resp. B): A is read as [.., K, M]
    /// (resp. B as [.., N, K]).
    bool transpose_a = false, transpose_b = false;
    /// The name of the result Func.
    std::string name = "matmul";
};

/// C = A · B, NumPy's matmul. A is [..., M, K] and B is [..., K, N] (after the optional
/// transposes); both have rank >= 2; the leading (batch) dimensions broadcast as in NumPy
/// (aligned from the right, equal or 1, a missing one counts as 1). The result is
/// [batch..., M, N].
///
/// The result Func is written in the canonical form the chip tensorizer recognises:
///
///     C(b.., i, j)  = cast(acc, 0);
///     C(b.., i, j) += cast(acc, A(b.., i, k)) * cast(acc, B(b.., k, j));   // RDom k over [0, K)
///
/// (the casts are omitted when A, B already have type acc), with pure Vars "i", "j" — and
/// "b" for one batch dimension or "b0", "b1", ... for several — and the RDom named "k".
/// Schedules refer to these names: `C.update().tile(Var("i"), Var("j"), ...)`.
///
/// Types: acc = accumulator_type(A.type()), which must equal accumulator_type(B.type())
/// (int8 × int8 accumulates in int32; bf16 × bf16 and bf16 × fp32 in fp32). The result has
/// type acc — an int8 matmul returns int32, a bf16 matmul returns fp32.
///
/// Throws tessera::Error naming "matmul" and the options' name when a rank is below 2, the
/// inner dimensions differ (K of A vs K of B), batch dimensions do not broadcast, or the
/// accumulator types differ.
Tensor matmul(const Tensor &a, const Tensor &b, const MatmulOptions &options = {});

/// Options of gemm.
struct GemmOptions {
    double alpha = 1.0, beta = 1.0;
    bool transpose_a = false, transpose_b = false;
    /// The result is `name`; the product A · B is a matmul Func named `name + "_product"`.
    std::string name = "gemm";
};

/// Y = alpha · op(A) · op(B) + beta · C (ONNX Gemm). A and B are 2-D; C is optional (an
/// undefined Tensor) and broadcasts to [M, N] (e.g. a bias of shape [N] or [1, N]).
///
/// The product is a canonical matmul Func (see matmul) named `name + "_product"`; the result
/// Func `name` (Vars "i", "j") adds the scaled terms, in the accumulator type of A — so an
/// int8 gemm is computed and returned in int32 and then alpha and beta must be integers; a
/// bf16 gemm is computed and returned in fp32. C is cast to that type.
///
/// Throws tessera::Error naming "gemm" on rank, inner-dimension, broadcast or type mismatch.
Tensor gemm(const Tensor &a, const Tensor &b, const Tensor &c = Tensor(), const GemmOptions &options = {});

/// Einstein summation (NumPy's einsum, ONNX Einsum) of one or more operands: `equation` is
/// "ij,jk->ik" (explicit output) or "ij,jk" (output: the letters seen once, sorted). A letter
/// repeated within an operand takes its diagonal. Letters only in the inputs are summed over
/// the RDom "r" (one dimension per summed letter, in alphabetical order, the first innermost);
/// pure Vars are named after the output letters. Operands share one type; the result is
/// accumulator_type of it. No ellipsis ("..."). Errors name "einsum" and the letter or operand.
Tensor einsum(const std::string &equation, const std::vector<Tensor> &operands, const std::string &name = "einsum");

} // namespace tessera::ops
