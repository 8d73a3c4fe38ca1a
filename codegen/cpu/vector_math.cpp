// fp32 exp, tanh and erf as LLVM IR polynomials (vector_math.h).
#include "vector_math.h"

#include <initializer_list>

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>

namespace tessera::internal {

namespace {

llvm::Value *constant(llvm::Value *like, double v) { return llvm::ConstantFP::get(like->getType(), v); }

/// c[0] + c[1] t + c[2] t^2 + ... by Horner's rule (fmuladd: a fused multiply-add where the host
/// has one, never less accurate than separate rounding).
llvm::Value *polynomial(llvm::IRBuilderBase &b, llvm::Value *t, std::initializer_list<double> c) {
    const double *coeff = c.begin();
    llvm::Value *r = constant(t, coeff[c.size() - 1]);
    for (size_t k = c.size() - 1; k-- > 0;)
        r = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t->getType()}, {r, t, constant(t, coeff[k])});
    return r;
}

/// x if x is not NaN, else 0: keeps NaN away from float-to-int conversions (poison); the
/// callers put NaN back at the end.
llvm::Value *nan_to_zero(llvm::IRBuilderBase &b, llvm::Value *x) {
    return b.CreateSelect(b.CreateFCmpUNO(x, x), constant(x, 0.0), x);
}

/// min(max(x, lo), hi) for x that is not NaN.
llvm::Value *clamp(llvm::IRBuilderBase &b, llvm::Value *x, double lo, double hi) {
    x = b.CreateSelect(b.CreateFCmpOLT(x, constant(x, lo)), constant(x, lo), x);
    return b.CreateSelect(b.CreateFCmpOGT(x, constant(x, hi)), constant(x, hi), x);
}

llvm::Value *copysign(llvm::IRBuilderBase &b, llvm::Value *magnitude, llvm::Value *sign) {
    return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, magnitude, sign);
}

/// 2^n for an integer vector n in [-126, 127], as a float built from its exponent bits.
llvm::Value *exp2_int(llvm::IRBuilderBase &b, llvm::Value *n, llvm::Type *float_type) {
    llvm::Value *biased = b.CreateAdd(n, llvm::ConstantInt::get(n->getType(), 127));
    return b.CreateBitCast(b.CreateShl(biased, llvm::ConstantInt::get(n->getType(), 23)), float_type);
}

} // namespace

llvm::Value *emit_exp_f32(llvm::IRBuilderBase &b, llvm::Value *x) {
    llvm::Type *ft = x->getType();
    llvm::Type *it = ft->isVectorTy() ? static_cast<llvm::Type *>(llvm::VectorType::get(
                                            b.getInt32Ty(), llvm::cast<llvm::VectorType>(ft)->getElementCount()))
                                      : b.getInt32Ty();
    // Past 89 the result is +inf, below -104 it is 0; clamping keeps n within two halves of the
    // exponent range.
    llvm::Value *xc = clamp(b, nan_to_zero(b, x), -104.0, 89.0);
    llvm::Value *n = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(xc, constant(x, 1.44269504088896341)));
    // r = x - n ln 2, with ln 2 in two parts so that n * ln2_hi is exact (Cody-Waite).
    llvm::Value *r = b.CreateFSub(xc, b.CreateFMul(n, constant(x, 0.693359375)));
    r = b.CreateFSub(r, b.CreateFMul(n, constant(x, -2.12194440e-4)));
    // e^r = 1 + r + r^2 p(r) (Cephes expf, relative error below 1 ulp on |r| <= ln 2 / 2).
    llvm::Value *p = polynomial(b, r,
                                {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2, 8.3334519073e-3, 1.3981999507e-3,
                                 1.9875691500e-4});
    llvm::Value *er =
        b.CreateFAdd(b.CreateFAdd(b.CreateFMul(b.CreateFMul(r, r), p), r), constant(x, 1.0));
    // 2^n in two factors, each a normal float, so the product rounds once (denormals, overflow).
    llvm::Value *ni = b.CreateFPToSI(n, it);
    llvm::Value *n1 = b.CreateAShr(ni, llvm::ConstantInt::get(it, 1));
    llvm::Value *n2 = b.CreateSub(ni, n1);
    llvm::Value *result = b.CreateFMul(b.CreateFMul(er, exp2_int(b, n1, ft)), exp2_int(b, n2, ft));
    return b.CreateSelect(b.CreateFCmpUNO(x, x), x, result);
}

llvm::Value *emit_tanh_f32(llvm::IRBuilderBase &b, llvm::Value *x) {
    llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    // |x| < 0.625: |x| + |x| z p(z), z = x^2 (Cephes tanhf); no cancellation near 0.
    llvm::Value *z = b.CreateFMul(ax, ax);
    llvm::Value *p = polynomial(b, z,
                                {-3.33332819422e-1, 1.33314422036e-1, -5.37397155531e-2, 2.06390887954e-2,
                                 -5.70498872745e-3});
    llvm::Value *small = b.CreateFAdd(ax, b.CreateFMul(b.CreateFMul(ax, z), p));
    // Above: 1 - 2 / (e^{2|x|} + 1), which tends to 1 (e^{2|x|} = inf gives exactly 1) and
    // propagates NaN.
    llvm::Value *e = emit_exp_f32(b, b.CreateFMul(ax, constant(x, 2.0)));
    llvm::Value *large =
        b.CreateFSub(constant(x, 1.0), b.CreateFDiv(constant(x, 2.0), b.CreateFAdd(e, constant(x, 1.0))));
    llvm::Value *t = b.CreateSelect(b.CreateFCmpOLT(ax, constant(x, 0.625)), small, large);
    return copysign(b, t, x);
}

llvm::Value *emit_erf_f32(llvm::IRBuilderBase &b, llvm::Value *x) {
    llvm::Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    // |x| < 1: |x| P(x^2), a least-squares fit of erf(x) / x on x^2 in [0, 1].
    llvm::Value *z = b.CreateFMul(ax, ax);
    llvm::Value *small = b.CreateFMul(
        ax, polynomial(b, z,
                       {1.1283791065216064, -0.3761262595653534, 0.11283581703901291, -0.02685367316007614,
                        0.005188066512346268, -0.0008007910219021142, 7.846357038943097e-05}));
    // 1 <= |x| <= 4: 1 - e^{-x^2} Q(1/|x|), Q a fit of erfc(x) e^{x^2} on 1/x in [1/4, 1].
    // Clamping at 4 (NaN passes through the selects) gives 1 - 1.5e-8, which rounds to 1.
    llvm::Value *ac = b.CreateSelect(b.CreateFCmpOGT(ax, constant(x, 4.0)), constant(x, 4.0), ax);
    llvm::Value *t = b.CreateFDiv(constant(x, 1.0), ac);
    llvm::Value *q = polynomial(b, t,
                                {0.00015717714268248528, 0.5611056089401245, 0.025769254192709923,
                                 -0.39924031496047974, 0.2954942584037781, 0.12101438641548157,
                                 -0.3999406397342682, 0.3381122946739197, -0.13809415698051453,
                                 0.023205677047371864});
    llvm::Value *g = emit_exp_f32(b, b.CreateFNeg(b.CreateFMul(ac, ac)));
    llvm::Value *large = b.CreateFSub(constant(x, 1.0), b.CreateFMul(g, q));
    llvm::Value *r = b.CreateSelect(b.CreateFCmpOLT(ax, constant(x, 1.0)), small, large);
    return copysign(b, r, x);
}

} // namespace tessera::internal
