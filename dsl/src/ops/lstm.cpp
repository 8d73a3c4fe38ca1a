// One LSTM step (PyTorch's LSTMCell): two matmuls into the gate pre-activations, then the
// element-wise cell update. Gate order i, f, g, o along the 4H dimension.
#include "op_util.h"
#include "tessera/ir_operator.h"
#include "tessera/ops/attention.h"
#include "tessera/ops/linear.h"

namespace tessera::ops {

using namespace tessera::internal::oputil;

LstmState lstm_cell(const Tensor &x, const Tensor &h, const Tensor &c, const Tensor &w_ih, const Tensor &w_hh,
                    const Tensor &b_ih, const Tensor &b_hh, const std::string &name) {
    const std::string op = "lstm_cell";
    for (const auto &[t, what] : {std::pair{&x, "x"}, std::pair{&h, "h"}, std::pair{&c, "c"}, std::pair{&w_ih, "w_ih"},
                                  std::pair{&w_hh, "w_hh"}}) {
        require_float(*t, what, op, name);
        require_rank(*t, 2, what, op, name);
    }
    const Expr batch = x.dim(0), hidden = h.dim(1), gates4 = dim_mul(int_const(4), hidden);
    auto expect = [&](const Tensor &t, const std::string &what, const std::vector<Expr> &shape) {
        bool ok = t.dimensions() == static_cast<int>(shape.size());
        for (int d = 0; ok && d < t.dimensions(); ++d) ok = !dims_differ(t.dim(d), shape[static_cast<size_t>(d)]);
        if (!ok)
            fail(op, name, what + " '" + t.name() + "' has shape " + shape_string(t.shape()) + " but must be " +
                               shape_string(shape) + " (x " + shape_string(x.shape()) + ", h " +
                               shape_string(h.shape()) + ")");
    };
    expect(h, "h", {batch, hidden});
    expect(c, "c", {batch, hidden});
    expect(w_ih, "w_ih", {gates4, x.dim(1)});
    expect(w_hh, "w_hh", {gates4, hidden});
    if (b_ih.defined()) {
        require_float(b_ih, "b_ih", op, name);
        expect(b_ih, "b_ih", {gates4});
    }
    if (b_hh.defined()) {
        require_float(b_hh, "b_hh", op, name);
        expect(b_hh, "b_hh", {gates4});
    }

    const Tensor xw = matmul(x, w_ih, {false, /*transpose_b=*/true, name + "_ih"});
    const Tensor hw = matmul(h, w_hh, {false, /*transpose_b=*/true, name + "_hh"});
    const Type acc = xw.type();
    if (hw.type() != acc)
        fail(op, name, "x (" + x.type().to_string() + ") and h (" + h.type().to_string() +
                           ") accumulate in different types; cast one of them");

    Var n("n"), g("g"), u("u");
    Expr pre = xw(n, g) + hw(n, g);
    if (b_ih.defined()) pre = pre + cast(acc, b_ih(g));
    if (b_hh.defined()) pre = pre + cast(acc, b_hh(g));
    Func gates(name + "_gates");
    gates(n, g) = pre;

    auto gate = [&](int index) { return Expr(gates(n, index == 0 ? Expr(u) : u + hidden * index)); };
    Func c_next(name + "_c");
    c_next(n, u) = tessera::sigmoid(gate(1)) * cast(acc, c(n, u)) + tessera::sigmoid(gate(0)) * tessera::tanh(gate(2));
    Func h_next(name + "_h");
    h_next(n, u) = tessera::sigmoid(gate(3)) * tessera::tanh(c_next(n, u));
    return {Tensor(h_next, {batch, hidden}), Tensor(c_next, {batch, hidden})};
}

} // namespace tessera::ops
