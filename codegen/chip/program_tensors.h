#pragma once
// Declaring a chip program's tensors together with how each maps to a pipeline buffer (shared
// by the GEMM, conv and vector-kernel compilers; defined in chip_backend.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/codegen/chip_backend.h"

namespace tessera {

/// Adds tensor `name` (chip shape, dtype) to the program and its map to pipeline buffer
/// `source`: source dimension d takes chip dimension dims[d] (-1: always index 0), shifted by
/// offset[d] (empty: no shift).
void declare(ChipProgram &cp, const std::string &name, const std::string &source, chipsim::DType dt,
             std::vector<int64_t> chip_shape, std::vector<int64_t> source_shape, std::vector<int> dims,
             std::vector<int64_t> offset, bool output);

/// Declares the DRAM copy `name` of the output `of` maps, in `dtype` (ChipProgram::copies): a
/// .buffer with the output's chip shape, which only a later kernel of a linked program reads.
void declare_copy(ChipProgram &cp, const ChipTensorMap &of, const std::string &name, chipsim::DType dtype);

/// Row-major strides, in elements, of a shape (a program tensor's layout).
std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape);

/// The constant extents of an Input; throws tessera::Error for a symbolic one.
std::vector<int64_t> constant_shape(const Input &in);

} // namespace tessera
