/*
 * src/cpu/vmath.h — tanh, expm1 and log1p of a float for the CPU interpreter's f32 compute
 * (src/cpu/exec_impl.h), where libm's scalar calls were the slowest of the f32 functions (on the
 * development machine's AMD EPYC, ns an element over an L1-resident block: tanhf 8.2, expm1f
 * 5.8, log1pf 5.1, against expf 1.6 and logf 1.6, which stay on libm). Each is computed in
 * double and rounded to float once: the correctly rounded result but where a double error of
 * ~1e-12 relative or less tips a value lying that close to the midpoint between two floats
 * (tests/test_vmath.c counts them against libm's double functions). They are written for GCC's
 * vectorizer: no calls, no branches (special values by selects; src/cpu/exec.c builds with
 * -fno-trapping-math so GCC may if-convert them), the exponent through bits, so a loop of them
 * over a block runs 4 doubles a vector on AVX2. Non-finite inputs give libm's answers (NaN
 * stays NaN, tanh(+-inf) = +-1, expm1(-inf) = -1, log1p(-1) = -inf, log1p(x < -1) = NaN) and
 * signed zeros keep their sign.
 */
#ifndef KILN_CPU_VMATH_H
#define KILN_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double kiln_vm_from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static inline uint64_t kiln_vm_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

#define KILN_VM_LN2_HI 0x1.62e42fefa3800p-1 /* ln 2 in 42 bits: n * LN2_HI is exact for |n| < 2^11 */
#define KILN_VM_LN2_LO 0x1.ef35793c76730p-45
#define KILN_VM_LN2    0x1.62e42fefa39efp-1

/* e^y for y in [-708, 708] (the callers clamp; NaN gives NaN), relative error < 1e-15:
 * y = n ln2 + r with |r| <= ln2 / 2, e^r by its Taylor series to r^12 / 12! (the rest under
 * 2e-16 relative), 2^n built in the exponent bits. */
static inline double kiln_vm_exp(double y)
{
    const double shift = 0x1.8p52; /* adding it rounds y / ln2 to an integer held in the low bits */
    const double kd = y * 0x1.71547652b82fep0 + shift;
    const uint64_t ki = kiln_vm_bits(kd);
    const double n = kd - shift;
    const double r = (y - n * KILN_VM_LN2_HI) - n * KILN_VM_LN2_LO;
    double p = 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    /* ki's low bits are 2^51 + n: shifted up 52 places, n's own bits land in the exponent */
    const double scale = kiln_vm_from_bits((ki << 52) + ((uint64_t)1023 << 52));
    return p * scale;
}

/* y clamped to [-708, 708], NaN kept */
static inline double kiln_vm_clamp708(double y)
{
    return y < -708.0 ? -708.0 : (y > 708.0 ? 708.0 : y);
}

/* tanh: odd; near 0 its series (|x| < 2^-12: the next term is under 1e-23 relative), else
 * (1 - e) / (1 + e) with e = e^(-2|x|), |x| clamped to 20 (tanh is 1 in float from 9.01 on),
 * whose cancellation costs at most ~1e-12 relative at |x| = 2^-12 */
static inline float kiln_vm_tanhf(float x)
{
    const double d = (double)x, a = d < 0 ? -d : d;
    const double e = kiln_vm_exp(-2.0 * (a > 20.0 ? 20.0 : a));
    const double t = (1.0 - e) / (1.0 + e);
    const double d2 = d * d;
    const double small = d * (1.0 - d2 * (1.0 / 3.0 - d2 * (2.0 / 15.0))); /* -0 stays -0 */
    return (float)(a < 0x1p-12 ? small : (d < 0 ? -t : t));
}

/* ln y for a positive normal double y (a float's value, or log1p's 1 + x, always is one): y = 2^k m, m in
 * [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series
 * to s^19 (the rest under 2e-17 relative) */
static inline double kiln_vm_log_pos(double y)
{
    const uint64_t u = kiln_vm_bits(y);
    /* the mantissa with exponent 0 (m in [1, 2)), then halved when above sqrt(2) */
    const double m1 = kiln_vm_from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
    /* the biased exponent as a double through the bits of 2^52 + e (AVX2 has no 64-bit integer
     * to double conversion, so a cast would keep the loop scalar) */
    const double e = kiln_vm_from_bits(0x4330000000000000ULL | (u >> 52)) - 0x1p52;
    const int big = m1 > 0x1.6a09e667f3bcdp0;
    const double m = big ? m1 * 0.5 : m1;
    const double k = e - (big ? 1022.0 : 1023.0);
    const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 19.0;
    p = p * s2 + 1.0 / 17.0;
    p = p * s2 + 1.0 / 15.0;
    p = p * s2 + 1.0 / 13.0;
    p = p * s2 + 1.0 / 11.0;
    p = p * s2 + 1.0 / 9.0;
    p = p * s2 + 1.0 / 7.0;
    p = p * s2 + 1.0 / 5.0;
    p = p * s2 + 1.0 / 3.0;
    p = p * s2 + 1.0;
    return k * KILN_VM_LN2 + 2.0 * s * p;
}

/* e^x - 1: near 0 its series (|x| < 2^-12: x + x^2/2 + x^3/6 + x^4/24, the next term under 1e-16
 * relative), else e^x - 1 in double, whose cancellation costs at most ~1e-12 relative there;
 * x clamped to [-708, 708] (e^x - 1 is -1 in float below -17.4, inf above 88.8), NaN kept */
static inline float kiln_vm_expm1f(float x)
{
    const double d = (double)x, a = d < 0 ? -d : d;
    const double big = kiln_vm_exp(kiln_vm_clamp708(d)) - 1.0;
    const double small = d * (1.0 + d * (0.5 + d * (1.0 / 6.0 + d * (1.0 / 24.0)))); /* -0 stays -0 */
    return (float)(a < 0x1p-12 ? small : big);
}

/* ln(1 + x): near 0 its series (|x| < 2^-12: x - x^2/2 + x^3/3 - x^4/4, the next term under
 * 1e-15 relative), else ln of 1 + x, which is exact in double for a float x of that size;
 * -inf at x = -1, NaN below -1 and for NaN, inf for inf */
static inline float kiln_vm_log1pf(float x)
{
    const double d = (double)x, a = d < 0 ? -d : d, y = 1.0 + d;
    const int ok = (y > 0.0) & (y < (double)INFINITY); /* false for NaN; & keeps it branch-free */
    const double big = kiln_vm_log_pos(ok ? y : 1.0);
    const double small = d * (1.0 - d * (0.5 - d * (1.0 / 3.0 - d * 0.25))); /* -0 stays -0 */
    const double at0 = y == 0.0 ? -(double)INFINITY : y; /* -inf at -1; inf and NaN stay */
    const double sp = y < 0.0 ? (double)NAN : at0;
    const double r = ok ? big : sp;
    return (float)(a < 0x1p-12 ? small : r);
}

#endif
