// conv2d as an implicit GEMM (one matmul per filter tap) on both chips, against the reference.
#include "chip_test_util.h"

namespace tessera {
namespace {

struct ConvCase {
    int n, c, h, w, o, k, stride, pad;
    ops::Layout layout;
    Type type;
    bool bias;
};
/// How ctest and failure messages name a case.
void PrintTo(const ConvCase &c, std::ostream *os) {
    *os << c.n << "x" << c.c << "x" << c.h << "x" << c.w << " -> " << c.o << " " << c.k << "x" << c.k << " stride "
        << c.stride << " pad " << c.pad << (c.layout == ops::Layout::NCHW ? " NCHW " : " NHWC ") << c.type.to_string()
        << (c.bias ? " +bias" : "");
}

class ChipConv : public ::testing::TestWithParam<std::tuple<std::string, ConvCase>> {};

TEST_P(ChipConv, EqualsReference) {
    const std::string &chip = std::get<0>(GetParam());
    const ConvCase &cc = std::get<1>(GetParam());
    const bool nchw = cc.layout == ops::Layout::NCHW;
    std::vector<int64_t> xs = nchw ? std::vector<int64_t>{cc.n, cc.c, cc.h, cc.w} : std::vector<int64_t>{cc.n, cc.h, cc.w, cc.c};
    std::vector<int64_t> ws = nchw ? std::vector<int64_t>{cc.o, cc.c, cc.k, cc.k} : std::vector<int64_t>{cc.k, cc.k, cc.c, cc.o};
    auto exprs = [](const std::vector<int64_t> &v) {
        std::vector<Expr> e;
        for (auto x : v) e.push_back(Expr(int(x)));
        return e;
    };
    Input X(cc.type, exprs(xs), "X"), Wt(cc.type, exprs(ws), "Wt");
    Input bias(cc.type == Int(8) ? Int(32) : Float(32), {cc.o}, "bias");
    ops::Conv2dOptions opt;
    opt.stride = {cc.stride, cc.stride};
    opt.padding = cc.pad;
    opt.layout = cc.layout;
    Func conv = cc.bias ? ops::conv2d(X, Wt, bias, opt) : ops::conv2d(X, Wt, opt);
    const int64_t oh = (cc.h + 2 * cc.pad - cc.k) / cc.stride + 1, ow = (cc.w + 2 * cc.pad - cc.k) / cc.stride + 1;
    std::vector<int64_t> shape = nchw ? std::vector<int64_t>{cc.n, cc.o, oh, ow} : std::vector<int64_t>{cc.n, oh, ow, cc.o};
    Buffer<> x(cc.type, xs), w(cc.type, ws), b(bias.type(), {cc.o});
    x.fill_random(41);
    w.fill_random(42);
    b.fill_random(43);
    Bindings bind{{X, x}, {Wt, w}};
    if (cc.bias) bind.push_back({bias, b});
    ChipResult r = test::expect_matches_reference(Pipeline(conv), shape, bind, chip, cc.type, int64_t(cc.c) * cc.k * cc.k);
    EXPECT_NE(r.program.summary.find("implicit GEMM"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ChipConv,
    ::testing::Combine(::testing::Values(std::string("tsp-mini"), std::string("npu-edge")),
                       ::testing::Values(ConvCase{1, 8, 9, 11, 16, 3, 1, 1, ops::Layout::NCHW, Int(8), false},
                                         ConvCase{2, 64, 7, 7, 64, 3, 1, 1, ops::Layout::NHWC, Int(8), true},
                                         ConvCase{1, 16, 10, 10, 24, 3, 2, 1, ops::Layout::NCHW, Int(8), true},
                                         ConvCase{1, 32, 6, 6, 40, 1, 1, 0, ops::Layout::NHWC, BFloat(16), true})),
    [](const auto &info) {
        const std::string &chip = std::get<0>(info.param);
        const ConvCase &c = std::get<1>(info.param);
        std::string s = chip + "_c" + std::to_string(c.c) + "_o" + std::to_string(c.o) + "_k" + std::to_string(c.k) + "_s" +
                        std::to_string(c.stride) + "_" + c.type.to_string() + (c.bias ? "_bias" : "");
        for (auto &ch : s)
            if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
        return s;
    });

} // namespace
} // namespace tessera
