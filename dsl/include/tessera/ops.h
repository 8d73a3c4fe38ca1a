#pragma once
// tessera::ops — the operator library: each op is a function that builds DSL Funcs for a
// common tensor operation (pure algorithms, no schedules) from ops::Tensor operands, checks
// their shapes and types when it is built, and returns the result as a Tensor (which converts
// to its Func). Ops compose:
//
//     Input A(Float(32), {64, 128}, "A"), W(Float(32), {128, 256}, "W"), b(Float(32), {256}, "b");
//     ops::Tensor y = ops::gelu(ops::add(ops::matmul(A, W), b));
//     Buffer<> out = y.realize({{A, a}, {W, w}, {b, bias}});
//
// Conventions, shared by every op:
// - Shapes are row-major, outermost dimension first; negative axes count from the end.
// - Every result Func is named by the caller (a `name` argument or option) with the op's name
//   as the default; helper Funcs an op makes are named `name + "_suffix"`, so giving each op in
//   a pipeline its own name keeps all names distinct. The Var and RDom names of each op are
//   documented with it and stable: schedules refer to them.
// - Accumulation types: accumulator_type() (int8 → int32, bf16 → fp32); non-linear float math
//   in compute_type() (bf16 → fp32). Each op's comment says which type it returns.
// - Misuse — a shape or type mismatch, a bad option — throws tessera::Error whose message starts
//   with "ops::<op> '<name>':" and names the mismatching operands and dimensions.
#include "tessera/ops/attention.h"
#include "tessera/ops/conv.h"
#include "tessera/ops/elementwise.h"
#include "tessera/ops/linear.h"
#include "tessera/ops/norm.h"
#include "tessera/ops/quantize.h"
#include "tessera/ops/reduce.h"
#include "tessera/ops/registry.h"
#include "tessera/ops/shape.h"
#include "tessera/ops/tensor.h"
