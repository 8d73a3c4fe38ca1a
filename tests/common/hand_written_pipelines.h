#pragma once
// Pipelines written by hand (none built with tessera::ops) that several suites schedule in
// their own ways: lowering, the host JIT, the chips and the chip tuner.
#include <cstdint>

#include "tessera/func.h"
#include "tessera/ir_operator.h"

namespace tessera_test {

/// softmax along the rows of x[rows, cols]: the row maximum is read by the sum of exponentials
/// and by the output, so a schedule computing it inside the output's loops needs the sum there.
struct SoftmaxByRows {
    tessera::Var i{"i"}, j{"j"};
    tessera::Func row_max{"row_max"}, total{"total"}, prob{"prob"};
    explicit SoftmaxByRows(const tessera::Input &x) {
        using namespace tessera;
        RDom k(0, int(as_const_int(x.shape().at(1)).value()), "k");
        row_max(i) = -1e30f;
        row_max(i) = max(Expr(row_max(i)), x(i, k));
        total(i) = 0.0f;
        total(i) += exp(x(i, k) - row_max(i));
        prob(i, j) = exp(x(i, j) - row_max(i)) / total(i);
    }
};

} // namespace tessera_test
