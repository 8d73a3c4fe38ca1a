#pragma once
// Helpers for the chip backend's tests: random inputs and the comparison with the reference
// evaluator (the oracle), with the tolerance of the operands' dtype.
#include <gtest/gtest.h>

#include <tessera/chipsim/dtype.h>
#include <tessera/chipsim/target.h>
#include <tessera/codegen/chip_backend.h>
#include <tessera/ops.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_support.h"

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

/// As above with an explicit tolerance: the VXM kernels compute in fp32 like the reference, so
/// their fp32 results are held to the fp32 tolerance, not bf16's.
inline ChipResult expect_matches_reference_within(const Pipeline &p, const std::vector<int64_t> &shape, const Bindings &b,
                                                  const std::string &chip, Tolerance tol) {
    Buffer<> ref = p.realize({shape}, b, Target::reference())[0];
    ChipResult r = realize_on_chip(p, {shape}, b, Target::named(chip));
    Comparison c = compare(r.outputs.at(0), ref, tol);
    EXPECT_TRUE(c.equal) << chip << ": " << c.message;
    return r;
}

/// Compiling `p` for `chip` throws a tessera::Error whose message contains `needle`.
inline void expect_chip_error(const Pipeline &p, const std::vector<int64_t> &shape, const std::string &chip, const std::string &needle) {
    try {
        compile_for_chip(p, Target::named(chip), {shape});
        ADD_FAILURE() << chip << ": expected an error mentioning '" << needle << "'";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << chip << ": " << e.what();
    }
}

/// `t` edited to 32-byte vectors: MEM/SPAD rows of 32 bytes, an MXM whose rows are one vector
/// (int8 32x32, bf16 16x16), a VXM of at most one vector a cycle.
inline chipsim::Target with_32_byte_vectors(chipsim::Target t) {
    t.vector_bytes = 32;
    t.vxm.bytes_per_cycle = std::min(t.vxm.bytes_per_cycle, 32);
    for (auto &m : t.memories)
        if (!m.accumulator) m.row_bytes = 32;
    t.mxm.int8.k = t.mxm.int8.n = 32;
    t.mxm.floating.k = t.mxm.floating.n = 16;
    return t;
}

/// The target a test parameter names: a built-in chip, or one edited and written to a file of
/// this process's own — "<chip>-v32" with 32-byte vectors (8 fp32 lanes, MXMs of one vector's
/// width), "<chip>-4banks" with half the scratchpad banks (each twice as deep), "<chip>-2planes"
/// with two MXM planes over two 128-row accumulator banks.
inline std::string edited_chip_target(const std::string &variant) {
    static std::map<std::string, std::string> made;
    if (variant == "tsp-mini" || variant == "npu-edge") return variant;
    auto it = made.find(variant);
    if (it != made.end()) return it->second;
    const std::string base = variant.rfind("tsp-mini", 0) == 0 ? "tsp-mini" : "npu-edge";
    chipsim::Target t = chipsim::load_target(base);
    t.name = variant;
    if (variant.find("-v32") != std::string::npos) t = with_32_byte_vectors(t);
    for (auto &m : t.memories) {
        if (variant.find("-4banks") != std::string::npos && !m.accumulator) {
            m.banks = 4;
            m.rows_per_bank *= 2;
        }
        if (variant.find("-2planes") != std::string::npos && m.accumulator) {
            m.banks = 2;
            m.rows_per_bank = 128;
        }
    }
    if (variant.find("-2planes") != std::string::npos) t.mxm.count = 2;
    const std::string path = (tessera_test::unique_temp_dir() / (variant + ".json")).string();
    std::ofstream(path) << t.to_json();
    return made[variant] = path;
}

/// A random buffer of `type` and `shape`.
inline Buffer<> random_buffer(Type type, const std::vector<int64_t> &shape, uint64_t seed) {
    Buffer<> b(type, shape);
    b.fill_random(seed);
    return b;
}

/// Expr extents of a shape.
inline std::vector<Expr> extents(const std::vector<int64_t> &shape) {
    std::vector<Expr> e;
    for (auto v : shape) e.push_back(Expr(int(v)));
    return e;
}

/// The dtype program `cp` stores its output `source` in.
inline chipsim::DType stored_dtype(const ChipProgram &cp, const std::string &source) {
    for (const ChipTensorMap &m : cp.tensors)
        if (m.is_output && m.source == source) return cp.program.tensor(m.tensor)->dtype;
    ADD_FAILURE() << "no output holds " << source;
    return chipsim::DType::Int8;
}

/// Every element of fp32 buffer `narrow` is the element of `whole` rounded to bf16.
inline void expect_rounded_to_bf16(const Buffer<> &narrow, const Buffer<> &whole) {
    ASSERT_EQ(narrow.type(), Float(32));
    ASSERT_EQ(narrow.number_of_elements(), whole.number_of_elements());
    const float *nv = static_cast<const float *>(narrow.data()), *wv = static_cast<const float *>(whole.data());
    for (int64_t i = 0; i < whole.number_of_elements(); ++i)
        ASSERT_EQ(chipsim::bf16_to_float(chipsim::float_to_bf16(wv[i])), nv[i]) << "element " << i;
}

/// Runs `cp`, which stores a bf16 copy of its output `out` of `shape` (ChipProgram::copies),
/// with the copy read back as an output of its own, and checks it holds every element of the
/// output rounded to bf16.
inline void expect_copy_holds_the_rounded_output(ChipProgram cp, const Bindings &b, const std::string &out, const std::vector<int64_t> &shape) {
    ASSERT_EQ(cp.copies.size(), 1u);
    const ChipTensorMap copy = cp.copies[0];
    chipsim::TensorDecl *decl = nullptr;
    for (chipsim::TensorDecl &d : cp.program.tensors)
        if (d.name == copy.tensor) decl = &d;
    ASSERT_NE(decl, nullptr);
    EXPECT_TRUE(decl->is_buffer);
    EXPECT_EQ(decl->dtype, chipsim::DType::BF16);
    const ChipTensorMap *c = nullptr;
    for (const ChipTensorMap &m : cp.tensors)
        if (m.is_output && m.source == out) c = &m;
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(copy.chip_shape, c->chip_shape);
    EXPECT_EQ(copy.chip_dim_of_source, c->chip_dim_of_source);
    decl->is_buffer = false;
    decl->is_output = true;
    ChipTensorMap as_output = copy;
    as_output.source = "copy";
    cp.tensors.push_back(as_output);
    cp.outputs.push_back("copy");
    cp.output_shapes.push_back(shape);
    cp.output_types.push_back(Float(32));
    const ChipResult read = run_on_chip(cp, b);
    expect_rounded_to_bf16(read.outputs.at(1), read.outputs.at(0));
}

/// A gtest-safe name: every character that is not a letter or digit becomes '_'.
inline std::string test_name(std::string s) {
    for (auto &ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return s;
}

} // namespace tessera::test
