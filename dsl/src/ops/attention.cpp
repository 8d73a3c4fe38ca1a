// Scaled dot-product attention, composed from matmul and softmax so that each step is a Func
// the scheduler can fuse or tile: scores = Q·Kᵀ, masked = scores·scale (+ causal mask),
// probs = softmax(masked), out = probs·V.
#include <cmath>

#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/attention.h"
#include "tessera/ops/linear.h"
#include "tessera/ops/norm.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

Tensor scaled_dot_product_attention(const Tensor &q, const Tensor &k, const Tensor &v, const AttentionOptions &options) {
    const std::string op = "scaled_dot_product_attention", &name = options.name;
    require_float(q, "Q", op, name);
    require_float(k, "K", op, name);
    require_float(v, "V", op, name);
    const int rank = q.dimensions();
    if (rank < 2) fail(op, name, "Q '" + q.name() + "' " + shape_string(q.shape()) + " must be [..., Lq, D] (rank >= 2)");
    auto shapes = [&] {
        return "Q " + shape_string(q.shape()) + ", K " + shape_string(k.shape()) + ", V " + shape_string(v.shape());
    };
    if (k.dimensions() != rank || v.dimensions() != rank)
        fail(op, name, "Q, K and V must have the same rank: " + shapes());
    for (int d = 0; d < rank - 2; ++d)
        if (dims_differ(q.dim(d), k.dim(d)) || dims_differ(q.dim(d), v.dim(d)))
            fail(op, name, "leading dimension " + std::to_string(d) + " differs: " + shapes());
    if (dims_differ(q.dim(-1), k.dim(-1)))
        fail(op, name, "Q and K must have the same feature size D (last dimension): " + shapes());
    if (dims_differ(k.dim(-2), v.dim(-2)))
        fail(op, name, "K and V must have the same number of keys Lk (dimension " + std::to_string(rank - 2) +
                           "): " + shapes());
    double scale = 0;
    if (options.scale) {
        scale = *options.scale;
    } else {
        auto d = const_int(q.dim(-1));
        if (!d) fail(op, name, "the feature size D of Q is symbolic; give options.scale explicitly");
        scale = 1.0 / std::sqrt(static_cast<double>(*d));
    }

    const Tensor scores = matmul(q, k, {false, /*transpose_b=*/true, name + "_scores"});
    const Type acc = scores.type();
    const std::vector<Expr> coords = as_exprs(make_vars(rank));
    const Expr i = coords[static_cast<size_t>(rank - 2)], j = coords[static_cast<size_t>(rank - 1)];
    Expr value = scores(coords) * typed_const(acc, scale);
    if (options.causal) value = select(j > i, typed_const(acc, acc.min_value()), value);
    Func masked(name + "_masked");
    masked(coords) = value;

    const Tensor probs = softmax(Tensor(masked, scores.shape()), -1, name + "_probs");
    return matmul(probs, v, {false, false, name});
}

} // namespace tessera::ops
