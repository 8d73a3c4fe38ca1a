// The operator registry: every op of tessera::ops by name, its parameters validated where they
// enter, and the same algorithm as the op built by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tessera/ir_equality.h"
#include "tessera/ops.h"
#include "tessera/reference.h"

using namespace tessera;

namespace {

template <typename Fn> void expect_error(Fn fn, const std::vector<std::string> &parts) {
    try {
        fn();
        ADD_FAILURE() << "expected an error containing '" << parts.at(0) << "'";
    } catch (const Error &e) {
        for (const std::string &part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
}

} // namespace

TEST(OpRegistry, NamesEveryOpOnceWithDocumentedParameters) {
    std::set<std::string> names;
    for (const ops::OpSpec &spec : ops::op_registry()) {
        EXPECT_TRUE(names.insert(spec.name).second) << spec.name << " is registered twice";
        EXPECT_FALSE(spec.summary.empty()) << spec.name;
        std::set<std::string> keys;
        for (const ops::OpParam &p : spec.params) {
            EXPECT_TRUE(keys.insert(p.name).second) << spec.name << "." << p.name << " twice";
            EXPECT_FALSE(p.help.empty()) << spec.name << "." << p.name;
        }
        // Defaults build.
        ops::OpInstance op = ops::build_op(spec.name);
        EXPECT_EQ(op.params.size(), spec.params.size()) << spec.name;
        EXPECT_FALSE(op.inputs.empty()) << spec.name;
        EXPECT_EQ(op.output_shapes.size(), op.pipeline.outputs().size()) << spec.name;
    }
    // The library's ops, each reachable by name (the CLI's op list is this list).
    for (const char *op : {"matmul", "gemm", "conv2d", "depthwise_conv2d", "max_pool2d", "avg_pool2d", "global_avg_pool2d", "add",
                           "sub", "mul", "div", "relu", "leaky_relu", "gelu", "sigmoid", "tanh", "exp", "sqrt", "clip", "softmax",
                           "log_softmax", "layernorm", "rmsnorm", "batchnorm", "reduce_sum", "reduce_mean", "reduce_max",
                           "reduce_min", "transpose", "nchw_to_nhwc", "reshape", "flatten", "concat", "attention", "lstm_cell"})
        EXPECT_TRUE(names.count(op)) << op << " is not registered";
}

TEST(OpRegistry, BuildsTheSameAlgorithmAsTheOpByHand) {
    ops::OpInstance op = ops::build_op_from_words("matmul", {"M=48", "N=32", "K=16", "dtype=int8"});
    Input A(Int(8), {48, 16}, "A"), B(Int(8), {16, 32}, "B");
    EXPECT_EQ(hash(op.pipeline), hash(Pipeline(ops::matmul(A, B).func())));
    EXPECT_EQ(op.output_shapes, (std::vector<std::vector<int64_t>>{{48, 32}}));
    EXPECT_EQ(op.flops, 2.0 * 48 * 32 * 16);
    EXPECT_EQ(op.reduction_length, 16);
    EXPECT_EQ(op.description(), "matmul K=16 M=48 N=32 batch=1 dtype=int8 transpose_a=0 transpose_b=0");
    // Random inputs are reproducible and per seed.
    const Bindings a = op.random_inputs(3), b = op.random_inputs(3), c = op.random_inputs(4);
    EXPECT_TRUE(compare(a[0].buffer, b[0].buffer).equal);
    EXPECT_FALSE(compare(a[0].buffer, c[0].buffer).equal);
}

TEST(OpRegistry, PositiveInputsKeepTheOpDefined) {
    // sqrt's argument, div's divisor and batchnorm's variance are drawn >= 0.5.
    for (const auto &[name, input] : std::vector<std::pair<std::string, std::string>>{{"sqrt", "X"}, {"div", "B"}, {"batchnorm", "var"}}) {
        ops::OpInstance op = ops::build_op(name);
        for (const Binding &b : op.random_inputs(1))
            if (b.name == input) {
                std::vector<int64_t> c(b.buffer.shape().size(), 0);
                EXPECT_GE(b.buffer.get_as_double(c), 0.5) << name;
            }
        for (const Buffer<> &out : evaluate_reference(op.pipeline, op.output_shapes, op.random_inputs(1))) {
            std::vector<int64_t> c(out.shape().size(), 0);
            EXPECT_FALSE(std::isnan(out.get_as_double(c))) << name;
        }
    }
}

TEST(OpRegistry, RefusesBadParametersNamingTheValueAndTheLimit) {
    expect_error([] { ops::build_op("matmull"); }, {"unknown op 'matmull'", "the ops are matmul, gemm"});
    expect_error([] { ops::build_op("matmul", {{"Q", "1"}}); }, {"op matmul has no parameter 'Q'", "its parameters are M, N, K"});
    expect_error([] { ops::build_op("matmul", {{"M", "0"}}); }, {"parameter M=0 must be at least 1"});
    expect_error([] { ops::build_op("matmul", {{"M", "-3"}}); }, {"parameter M=-3 must be at least 1"});
    expect_error([] { ops::build_op("matmul", {{"M", "12x"}}); }, {"parameter M=12x is not an integer"});
    expect_error([] { ops::build_op("matmul", {{"M", ""}}); }, {"parameter M= is not an integer"});
    expect_error([] { ops::build_op("matmul", {{"M", "99999999999"}}); }, {"M=99999999999 is out of range", "2147483647"});
    expect_error([] { ops::build_op("matmul", {{"M", "99999999999999999999999"}}); }, {"is out of range", "2147483647"});
    expect_error([] { ops::build_op("matmul", {{"dtype", "int4"}}); }, {"parameter dtype=int4 is not a dtype"});
    expect_error([] { ops::build_op("matmul", {{"transpose_a", "2"}}); }, {"transpose_a=2 is out of range: allowed 0 to 1"});
    expect_error([] { ops::build_op("conv2d", {{"layout", "nwhc"}}); }, {"layout=nwhc is not one of nchw, nhwc"});
    expect_error([] { ops::build_op("conv2d", {{"pad", "-1"}}); }, {"pad=-1 must be at least 0"});
    expect_error([] { ops::build_op("conv2d", {{"groups", "3"}}); }, {"groups=3 must divide C=64"});
    expect_error([] { ops::build_op("leaky_relu", {{"alpha", "nan"}}); }, {"alpha=nan is not a finite number"});
    expect_error([] { ops::build_op("reduce_sum", {{"axis", "2"}}); }, {"axis=2 is out of range: allowed -2 to 1"});
    expect_error([] { ops::build_op("reshape", {{"new_cols", "100"}}); }, {"new_cols=100 must divide rows · cols = 16384"});
    expect_error([] { ops::build_op_from_words("matmul", {"M"}); }, {"'M' is not of the form key=value"});
    expect_error([] { ops::build_op_from_words("matmul", {"M=1", "M=2"}); }, {"parameter M is given twice"});
    // What the op itself refuses comes through with the op's own message.
    expect_error([] { ops::build_op("max_pool2d", {{"kernel", "2"}, {"pad", "3"}}); }, {"max_pool2d"});
}
