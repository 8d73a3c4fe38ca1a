#pragma once
// Helpers for the chip backend's tests: random inputs and the comparison with the reference
// evaluator (the oracle), with the tolerance of the operands' dtype.
#include <gtest/gtest.h>

#include <tessera/codegen/chip_backend.h>
#include <tessera/ops.h>

#include <string>
#include <vector>

namespace tessera::test {

/// Realizes `p` on the reference evaluator and on `chip`, and checks they agree: exactly for
/// integer results, within Tolerance::for_type(operand type, reduction length) otherwise.
inline ChipResult expect_matches_reference(const Pipeline &p, const std::vector<int64_t> &shape, const Bindings &b,
                                           const std::string &chip, Type operand_type, int64_t reduction = 1) {
    Buffer<> ref = p.realize({shape}, b, Target::reference())[0];
    ChipResult r = realize_on_chip(p, {shape}, b, Target::named(chip));
    Tolerance tol = operand_type.is_integer() ? Tolerance{} : Tolerance::for_type(BFloat(16), reduction);
    Comparison c = compare(r.outputs.at(0), ref, tol);
    EXPECT_TRUE(c.equal) << chip << ": " << c.message;
    return r;
}

} // namespace tessera::test
