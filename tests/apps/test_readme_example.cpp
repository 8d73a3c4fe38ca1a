// The example of README.md "What it looks like", as written there: one algorithm, one schedule,
// three targets. Keeps the README honest: if the example stops compiling or its results stop
// agreeing, this fails.
#include <gtest/gtest.h>

#include <tessera/tessera.h>

using namespace tessera;

TEST(ReadmeExample, HandWrittenMatmulAgreesOnReferenceHostAndChip) {
    Input A(Float(32), {512, 256}, "A"), B(Float(32), {256, 384}, "B");
    Var i("i"), j("j");
    RDom k(0, 256, "k");
    Func C("C");
    C(i, j) = 0.0f;
    C(i, j) += A(i, k) * B(k, j);

    Var io("io"), jo("jo"), ii("ii"), ji("ji");
    C.update().tile(i, j, io, jo, ii, ji, 64, 64).vectorize(ji, 16).parallel(io);

    Buffer<float> a({512, 256}), b({256, 384});
    a.fill_random(1);
    b.fill_random(2);
    Buffer<float> ref = C.realize({512, 384}, {{A, a}, {B, b}}, Target::reference());
    Buffer<float> cpu = C.realize({512, 384}, {{A, a}, {B, b}}, Target::host());
    Buffer<float> sim = C.realize({512, 384}, {{A, a}, {B, b}}, Target::named("tsp-mini"));

    // Independent spot checks of the reference itself, by plain loops.
    for (int r : {0, 211, 511})
        for (int c : {0, 97, 383}) {
            double sum = 0;
            for (int t = 0; t < 256; ++t) sum += double(a(r, t)) * double(b(t, c));
            EXPECT_NEAR(ref(r, c), sum, 1e-3 * (1 + std::abs(sum))) << "C(" << r << ", " << c << ")";
        }
    Comparison host = compare(cpu, ref, Tolerance::for_type(Float(32), 256));
    EXPECT_TRUE(host.equal) << host.message;
    // On tsp-mini the MXM multiplies in bf16 and accumulates in fp32.
    Comparison chip = compare(sim, ref, Tolerance::for_type(BFloat(16), 256));
    EXPECT_TRUE(chip.equal) << chip.message;
}
