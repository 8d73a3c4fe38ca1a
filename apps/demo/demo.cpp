// The demo behind `make demo`: builds matmul and conv2d from the operator library, evaluates
// them with the reference evaluator and checks each against a plain C++ loop nest written here,
// independently of Tessera, printing what it did.
#include <cmath>
#include <cstdio>
#include <exception>

#include <tessera/tessera.h>

#include "chip_demo.h"

using namespace tessera;

namespace {

bool report(const char *what, const Comparison &c) {
    std::printf("  %-44s %s (max |error| %.3g)\n", what, c.equal ? "matches plain loops" : "MISMATCH",
                c.max_abs_error);
    if (!c.equal) std::printf("    %s\n", c.message.c_str());
    return c.equal;
}

bool demo_matmul() {
    const int M = 96, N = 80, K = 64;
    Input A(Float(32), {M, K}, "A"), B(Float(32), {K, N}, "B");
    Func C = ops::matmul(A, B, {.name = "C"});
    std::printf("matmul %dx%dx%d (fp32):\n", M, N, K);

    Buffer<float> a({M, K}), b({K, N});
    a.fill_random(1);
    b.fill_random(2);
    Buffer<float> c = C.realize({M, N}, {{A, a}, {B, b}}, Target::reference());

    Buffer<float> expected({M, N});
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float sum = 0;
            for (int k = 0; k < K; ++k) sum += a(i, k) * b(k, j);
            expected(i, j) = sum;
        }
    return report("reference evaluator", compare(c, expected, Tolerance::for_type(Float(32), K)));
}

bool demo_conv2d() {
    const int N = 1, C = 8, H = 17, W = 19, O = 16, KH = 3, KW = 3;
    Input in(Int(8), {N, C, H, W}, "image"), w(Int(8), {O, C, KH, KW}, "filter");
    ops::Conv2dOptions options;
    options.padding = {1, 1, 1, 1};
    options.name = "conv";
    Func conv = ops::conv2d(in, w, options);
    std::printf("conv2d NCHW %dx%dx%dx%d, %d filters 3x3, padding 1 (int8 -> int32):\n", N, C, H, W, O);

    Buffer<int8_t> image({N, C, H, W}), filter({O, C, KH, KW});
    image.fill_random(3);
    filter.fill_random(4);
    Buffer<int32_t> out = conv.realize({N, O, H, W}, {{in, image}, {w, filter}}, Target::reference());

    Buffer<int32_t> expected({N, O, H, W});
    for (int o = 0; o < O; ++o)
        for (int y = 0; y < H; ++y)
            for (int x = 0; x < W; ++x) {
                int32_t sum = 0;
                for (int c = 0; c < C; ++c)
                    for (int ky = 0; ky < KH; ++ky)
                        for (int kx = 0; kx < KW; ++kx) {
                            int iy = y + ky - 1, ix = x + kx - 1;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            sum += int32_t(image(0, c, iy, ix)) * int32_t(filter(o, c, ky, kx));
                        }
                expected(0, o, y, x) = sum;
            }
    return report("reference evaluator (bit-exact)", compare(out, expected));
}

} // namespace

int main() {
    try {
        bool ok = demo_matmul();
        ok = demo_conv2d() && ok;
        ok = demo::demo_chip() && ok;
        std::printf(ok ? "demo: all results verified\n" : "demo: FAILED\n");
        return ok ? 0 : 1;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "tessera: error: %s\n", e.what());
        return 1;
    }
}
