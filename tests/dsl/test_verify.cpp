// Checking outputs against the meaning at a cost that does not grow with the kernel: the
// reference evaluator over a region of an output (each producer over what that region needs)
// and verify_outputs, full or sampled.
#include <gtest/gtest.h>

#include "tessera/ir_operator.h"
#include "tessera/ops.h"
#include "tessera/reference.h"
#include "tessera/verify.h"

using namespace tessera;

namespace {

/// The elements of `full` in the box (min, extent), as a dense buffer.
Buffer<> crop(const Buffer<> &full, const Region &r) {
    Buffer<> out(full.type(), r.extent);
    std::vector<int64_t> c(r.extent.size(), 0);
    for (int64_t n = out.number_of_elements(); n > 0; --n) {
        std::vector<int64_t> at = c;
        for (size_t d = 0; d < at.size(); ++d) at[d] += r.min[d];
        out.set_from_int(c, 0);
        if (full.type().is_float()) out.set_from_double(c, full.get_as_double(at));
        else out.set_from_int(c, full.get_as_int(at));
        for (size_t d = c.size(); d-- > 0;) {
            if (++c[d] < r.extent[d]) break;
            c[d] = 0;
        }
    }
    return out;
}

template <typename Fn> void expect_error(Fn fn, const std::string &part) {
    try {
        fn();
        ADD_FAILURE() << "expected an error containing '" << part << "'";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

} // namespace

TEST(ReferenceRegion, EqualsTheSameBoxOfTheWholeOutput) {
    // A matmul (a point needs a row of A and a column of B), a softmax (its row's max and
    // sum), a padded conv (a window of the padded Func) and an LSTM cell (two outputs).
    struct Case {
        std::string name;
        ops::OpInstance op;
        std::vector<Region> regions;
    };
    std::vector<Case> cases = {
        {"matmul", ops::build_op("matmul", {{"M", "37"}, {"N", "29"}, {"K", "41"}}), {{{5, 3}, {7, 11}}}},
        {"int8 matmul", ops::build_op("matmul", {{"M", "16"}, {"N", "16"}, {"K", "40"}, {"dtype", "int8"}}), {{{15, 15}, {1, 1}}}},
        {"softmax", ops::build_op("softmax", {{"rows", "9"}, {"cols", "33"}}), {{{8, 30}, {1, 3}}}},
        {"conv2d", ops::build_op("conv2d", {{"C", "4"}, {"H", "9"}, {"W", "7"}, {"O", "5"}}), {{{0, 4, 0, 5}, {1, 1, 9, 2}}}},
        {"lstm_cell", ops::build_op("lstm_cell", {{"batch", "3"}, {"input", "8"}, {"hidden", "6"}, {"bias", "1"}}),
         {{{2, 1}, {1, 5}}, {{0, 0}, {0, 0}}}},
    };
    for (const Case &c : cases) {
        const Bindings b = c.op.random_inputs(7);
        const std::vector<Buffer<>> full = evaluate_reference(c.op.pipeline, c.op.output_shapes, b);
        const std::vector<Buffer<>> part = evaluate_reference_region(c.op.pipeline, c.op.output_shapes, c.regions, b);
        ASSERT_EQ(part.size(), full.size()) << c.name;
        for (size_t i = 0; i < full.size(); ++i) {
            EXPECT_EQ(part[i].shape(), c.regions[i].extent) << c.name;
            Comparison cmp = compare(part[i], crop(full[i], c.regions[i]), Tolerance{});
            EXPECT_TRUE(cmp.equal) << c.name << " output " << i << ": " << cmp.message;
        }
    }
}

TEST(ReferenceRegion, RefusesRegionsOutsideTheOutputAndWrongCounts) {
    ops::OpInstance mm = ops::build_op("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
    const Bindings b = mm.random_inputs();
    expect_error([&] { evaluate_reference_region(mm.pipeline, mm.output_shapes, {{{7, 0}, {2, 1}}}, b); },
                 "is not inside its shape [8, 8]");
    expect_error([&] { evaluate_reference_region(mm.pipeline, mm.output_shapes, {{{-1, 0}, {1, 1}}}, b); }, "is not inside");
    expect_error([&] { evaluate_reference_region(mm.pipeline, mm.output_shapes, {{{0}, {1}}}, b); }, "is not inside");
    expect_error([&] { evaluate_reference_region(mm.pipeline, mm.output_shapes, {}, b); }, "one region per output");
}

TEST(ReferenceRegion, AHistogramIsComputedWholeOrRefused) {
    // Clamped bins bound the writes: any part of the output is computed with all of them.
    Input values(Int(32), {64}, "values");
    Buffer<> v(Int(32), {64});
    for (int64_t i = 0; i < 64; ++i) v.set_from_int({i}, (i * 7) % 16);
    Var x("x");
    RDom r(0, 64, "r");
    Func clamped("clamped");
    clamped(x) = 0;
    clamped(clamp(values(r), 0, 15)) += 1;
    const Buffer<> whole = evaluate_reference(clamped, {16}, {{values, v}});
    const Buffer<> part = evaluate_reference_region(Pipeline(clamped), {{16}}, {{{2}, {3}}}, {{values, v}})[0];
    EXPECT_TRUE(compare(part, crop(whole, {{2}, {3}})).equal);
    // Unclamped bins of an output are checked at each write: only the whole output has a meaning.
    Func hist("hist");
    hist(x) = 0;
    hist(values(r)) += 1;
    EXPECT_EQ(evaluate_reference(hist, {16}, {{values, v}}).get_as_int({5}), 4);
    expect_error([&] { evaluate_reference_region(Pipeline(hist), {{16}}, {{{2}, {3}}}, {{values, v}}); }, "data-dependent");
}

TEST(Verify, FullAndSampleAcceptTheReferenceAndCatchWhatTheyCover) {
    ops::OpInstance mm = ops::build_op("matmul", {{"M", "64"}, {"N", "48"}, {"K", "32"}});
    const Bindings b = mm.random_inputs(2);
    std::vector<Buffer<>> out = evaluate_reference(mm.pipeline, mm.output_shapes, b);
    VerifyOptions full;
    full.reduction_length = 32;
    VerifyOptions sample = full;
    sample.mode = VerifyMode::Sample;
    sample.sample_points = 40;
    Verification v = verify_outputs(mm.pipeline, mm.output_shapes, b, out, full);
    EXPECT_TRUE(v.passed) << v.mismatch;
    EXPECT_EQ(v.points_checked, 64 * 48);
    v = verify_outputs(mm.pipeline, mm.output_shapes, b, out, sample);
    EXPECT_TRUE(v.passed) << v.mismatch;
    EXPECT_GE(v.points_checked, 4); // the corners, then random points without repeats
    EXPECT_LE(v.points_checked, 44);
    EXPECT_EQ(v.points_total, 64 * 48);
    EXPECT_EQ(v.description(), "sample (" + std::to_string(v.points_checked) + " of 3072 points)");

    // A wrong last element (where tails go wrong): the sample's corners include it.
    std::vector<Buffer<>> corner = {out[0].copy()};
    corner[0].set_from_double({63, 47}, 100.0);
    v = verify_outputs(mm.pipeline, mm.output_shapes, b, corner, sample);
    EXPECT_FALSE(v.passed);
    EXPECT_NE(v.mismatch.find("(63, 47)"), std::string::npos) << v.mismatch;
    // A wrong block of rows (a bad tile): random points land in it.
    std::vector<Buffer<>> block = {out[0].copy()};
    for (int64_t i = 16; i < 48; ++i)
        for (int64_t j = 0; j < 48; ++j) block[0].set_from_double({i, j}, 0.0);
    EXPECT_FALSE(verify_outputs(mm.pipeline, mm.output_shapes, b, block, sample).passed);
    EXPECT_FALSE(verify_outputs(mm.pipeline, mm.output_shapes, b, block, full).passed);
    // None checks nothing.
    VerifyOptions none;
    none.mode = VerifyMode::None;
    v = verify_outputs(mm.pipeline, mm.output_shapes, b, block, none);
    EXPECT_TRUE(v.passed);
    EXPECT_EQ(v.points_checked, 0);
}

TEST(Verify, IntegersCompareExactlyWhateverTheFloatTolerance) {
    ops::OpInstance mm = ops::build_op("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}, {"dtype", "int8"}});
    const Bindings b = mm.random_inputs(4);
    std::vector<Buffer<>> out = evaluate_reference(mm.pipeline, mm.output_shapes, b);
    out[0].set_from_int({3, 3}, out[0].get_as_int({3, 3}) + 1);
    VerifyOptions o;
    o.tolerance_type = BFloat(16); // a chip's float tolerance does not loosen integer outputs
    EXPECT_FALSE(verify_outputs(mm.pipeline, mm.output_shapes, b, out, o).passed);
}

TEST(Verify, DefaultModeSamplesAboveTheDocumentedWork) {
    EXPECT_EQ(default_verify_mode({{256, 256}}, 256), VerifyMode::Full);  // 2^24
    EXPECT_EQ(default_verify_mode({{512, 512}}, 512), VerifyMode::Sample); // 2^27
    EXPECT_EQ(default_verify_mode({{1 << 20, 1 << 20}}, 1 << 20), VerifyMode::Sample); // no overflow
    EXPECT_EQ(parse_verify_mode("sample"), VerifyMode::Sample);
    expect_error([] { parse_verify_mode("most"); }, "not one of full, sample, none");
    ops::OpInstance mm = ops::build_op("matmul", {{"M", "8"}, {"N", "8"}, {"K", "8"}});
    expect_error([&] { verify_outputs(mm.pipeline, {{8, 8}}, mm.random_inputs(), {Buffer<>(Float(32), {8, 9})}, {}); },
                 "output matmul has shape (8, 9) but (8, 8) was expected");
    expect_error([&] { verify_outputs(mm.pipeline, {{8, 8}}, mm.random_inputs(), {}, {}); }, "1 outputs but 0 buffers");
}
