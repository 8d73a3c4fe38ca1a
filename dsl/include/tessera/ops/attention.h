#pragma once
// Sequence-model blocks built from the other ops: scaled dot-product attention and an LSTM cell.
#include <optional>
#include <string>

#include "tessera/ops/tensor.h"

namespace tessera::ops {

/// Options of scaled_dot_product_attention.
struct AttentionOptions {
    /// Mask keys after the query's position (key j is hidden from query i when j > i), as
    /// PyTorch's is_causal (the mask is aligned to the top-left corner when Lq != Lk).
    bool causal = false;
    /// Factor applied to Q·Kᵀ; default 1/√D.
    std::optional<double> scale;
    /// Funcs: `name + "_scores"` (a matmul), `name + "_masked"` (scaled and masked),
    /// `name + "_probs"` (a softmax over the keys, with its "_max"/"_sum" Funcs) and `name`
    /// (a matmul with V).
    std::string name = "attention";
};

/// softmax(Q·Kᵀ · scale [+ causal mask]) · V. Q is [..., Lq, D], K is [..., Lk, D], V is
/// [..., Lk, Dv], with the same leading (batch, head) dimensions; the result is [..., Lq, Dv].
/// Float types only; computed and returned in accumulator_type (fp32 for bf16).
/// Errors name "scaled_dot_product_attention" and the mismatching dimension.
Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k, const Tensor &v, const AttentionOptions &options = {});

/// An LSTM cell's new state.
struct LstmState {
    Tensor h, c;
};

/// One step of an LSTM (PyTorch's LSTMCell, gate order i, f, g, o):
///   gates = x · W_ihᵀ + b_ih + h · W_hhᵀ + b_hh          [N, 4H]
///   i = σ(gates[:, 0:H]), f = σ(gates[:, H:2H]), g = tanh(gates[:, 2H:3H]), o = σ(gates[:, 3H:4H])
///   c' = f · c + i · g,   h' = o · tanh(c')
/// x is [N, I], h and c are [N, H], w_ih is [4H, I], w_hh is [4H, H], b_ih and b_hh are [4H] or
/// undefined. Float types; computed and returned in accumulator_type (fp32 for bf16).
/// Funcs: `name + "_ih"` and `name + "_hh"` (the two matmuls, Vars "i", "j", RDom "k"),
/// `name + "_gates"` (Vars "n", "g"), and the new state `name + "_c"` and `name + "_h"`
/// (Vars "n", "u"). Errors name "lstm_cell" and the mismatching operand.
LstmState lstm_cell(const Tensor &x, const Tensor &h, const Tensor &c, const Tensor &w_ih,
                    const Tensor &w_hh, const Tensor &b_ih = Tensor(), const Tensor &b_hh = Tensor(),
                    const std::string &name = "lstm");

} // namespace tessera::ops
