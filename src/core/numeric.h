/*
 * src/core/numeric.h — kiln's bit-exact numerics, shared by every backend: the Philox4x32
 * counter-based generator (10 rounds; 7 for GEMM outputs' stochastic-rounding bits) and the
 * transforms built on it (uniform, normal, Bernoulli), the f16 / bf16 conversions (round to
 * nearest even, and stochastic rounding).
 *
 * One header for three compilers, used unchanged:
 *  - C host code (static inline; needs -ffp-contract=off, which the build sets);
 *  - nvcc (.cu): static __host__ __device__ __forceinline__;
 *  - NVRTC: the text of this file is pasted into generated CUDA source. Under __CUDACC_RTC__
 *    it includes nothing and uses only builtin types.
 * It is not: a general math library. Nothing here calls libm (on the host, sqrt is the
 * compiler builtin, which is IEEE correctly rounded).
 *
 * THE POINT IS BIT IDENTITY: rand, randn, dropout and stochastic-rounding bits must be the
 * same on the CPU and on the GPU for the same seed. So the recipe below uses only integer
 * operations and the float operations + - * / sqrt, each rounded to nearest even and never
 * contracted into an FMA (on the device: __fadd_rn, __fsub_rn, __fmul_rn, __fdiv_rn,
 * __fsqrt_rn; on the host: plain operators with -ffp-contract=off). No value that the
 * transforms compute is subnormal except where it is absorbed by a later addition, so a
 * flush-to-zero mode does not change results either; still, do not build kernels with
 * --use_fast_math.
 *
 * ---- The recipe (the spec every backend reproduces) ---------------------------------------
 *
 * Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3",
 * SC11, 2011; as in Random123's philox4x32 with R = 10):
 *   key   (k0, k1)         = (lo32(key), hi32(key))
 *   ctr   (c0, c1, c2, c3) = (lo32(ctr_lo), hi32(ctr_lo), lo32(ctr_hi), hi32(ctr_hi))
 *   round: (hi0, lo0) = 0xD2511F53 * c0 (64-bit product), (hi1, lo1) = 0xCD9E8D57 * c2;
 *          c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
 *   10 rounds; between two rounds the key is bumped: k0 += 0x9E3779B9, k1 += 0xBB67AE85
 *   (mod 2^32). The result is v[0..3] = (c0, c1, c2, c3) after the 10th round.
 *
 * One element of a random tensor: v = philox(key = seed, ctr_hi = stream, ctr_lo = index),
 * where seed is the context's seed, stream a per-operation id taken from the context and
 * index the row-major linear index of the element (see src/expr/plan.h).
 *   bits(seed, stream, index)    = v[0]
 *   uniform                      = float(v[0] >> 8) * 2^-24                 in [0, 1)
 *   bernoulli(p)                 = uniform < p ? 1.0f : 0.0f
 *   normal (Box-Muller)          = sqrt(-2 * log(u1)) * cos2pi(u2),
 *                                  u1 = float((v[0] >> 8) + 1) * 2^-24      in (0, 1]
 *                                  u2 = float(v[1] >> 8) * 2^-24            in [0, 1)
 *   with log = kiln_num_logf and cos2pi = kiln_num_cos2pif below, in f32 as written:
 *
 *   kiln_num_logf(x), x > 0 finite: write x = m * 2^e with m in [sqrt(1/2), sqrt(2)) from the
 *     bits (subnormal x normalized by integer shifts); f = m - 1; s = f / (2 + f); z = s*s;
 *     R = z*(L1 + z*(L2 + z*(L3 + z*(L4 + z*L5)))), Lk = the float nearest 2/(2k+1);
 *     hfsq = 0.5*f*f; log = e*LN2_HI + (f - (hfsq - (s*(hfsq + R) + e*LN2_LO)))
 *     with LN2_HI = 0x1.62e4p-1 (15 bits, so e*LN2_HI is exact) and LN2_LO = float(ln2 - LN2_HI).
 *     Every product and sum is one rounded f32 operation, evaluated in the order written.
 *     x == 0 gives -inf, x < 0 or NaN gives NaN, +inf gives +inf.
 *   kiln_num_cos2pif(t) = cos(2 pi t): |t| >= 2^23 (an integer) gives 1; else x = 4|t| (exact);
 *     q = x rounded to the nearest integer (ties to even) by (x + 2^23) - 2^23 when x < 2^23,
 *     else q = x; r = x - q (exact, in [-1/2, 1/2]); z = r*r;
 *       S = r*(S1 + z*(S3 + z*(S5 + z*(S7 + z*S9))))         ~ sin(pi/2 r)
 *       C = 1 + z*(C2 + z*(C4 + z*(C6 + z*(C8 + z*C10))))    ~ cos(pi/2 r)
 *     with Sk, Ck the floats nearest the Taylor coefficients (+-(pi/2)^k / k!, as printed in
 *     the code); by q mod 4 = 0, 1, 2, 3 the result is C, -S, -C, S. NaN or inf gives the
 *     NaN 0x7FC00000 (explicitly: CPU and GPU arithmetic make NaNs with different bits).
 *   Accuracy: a few ulp (tests/test_numeric.c measures it against libm in double).
 *
 * 16-bit formats (f16 = IEEE binary16, bf16 = the top half of a binary32), integer-only:
 *   to f32: exact. f32/f64 to f16/bf16 "_rn": round to nearest, ties to even, computed once
 *   from the source value (f64 is not rounded through f32); |x| beyond the largest finite
 *   value after rounding gives inf; NaN stays NaN (quiet bit set, sign and top payload kept).
 *   "_sr" (stochastic rounding) of |x| (the sign is kept): add a uniform random integer below
 *   the kept mantissa, then truncate. The random integer is the top D bits of `bits`, where D
 *   is the number of dropped mantissa bits:
 *     bf16: D = 16 (also for f32 subnormals);
 *     f16, |x| >= 2^-14 (normal range): D = 13;
 *     f16, |x| <  2^-14 (subnormal range): D = 13 + (how many binades x is below 2^-14),
 *       i.e. the result is floor((M + rand_D) / 2^D) units of 2^-24 where x = M * 2^-(24+D)
 *       with M the 24-bit significand of x. When D > 32, M is first shifted right by
 *       D - 32 bits and D = 32 is used (x < 2^-32 units then; the bias is below 2^-32 units).
 *   A carry past the largest finite value gives inf; NaN and inf pass through (NaN as in _rn).
 *   So E[result] == x exactly over uniformly random `bits` (for D <= 32), and the result is
 *   always one of the two representable neighbours of x.
 *
 * GEMM outputs (kiln_dot) take 16 random bits per element, eight elements per call of
 * Philox4x32-7 (the rounds above, stopped after the 7th: KILN_GEMM_SR_ROUNDS), keyed by
 * position, not by tiling: element (row, n) of C with N columns, row = b*M + m over a batch
 * of M-row matrices, has
 *   v    = philox7(seed, stream, ((row * ceil(N / 32) + n / 32) * 4 + (n / 2) % 4)
 *   bits = half (n % 2) of v[(n / 8) % 4] placed in the top 16 bits (the low 16 are zero):
 *          n even: v[.] << 16, n odd: v[.] & 0xFFFF0000.
 * The eight elements of one call are those a tensor-core thread holds for one row (columns
 * 2t, 2t+1 of four consecutive 8-column blocks), so the kernels compute one Philox per eight
 * outputs with no exchange. bf16 outputs round by kiln_f32_to_bf16_sr (D = 16). f16
 * outputs round by kiln_f32_to_f16_sr13: 13 random bits (the top 13 of `bits`) in every
 * range, i.e. kiln_f32_to_f16_sr where |x| >= 2^-14, and in the subnormal range |x| first
 * truncated to a multiple of 2^-37 (13 bits below the unit 2^-24), the result
 * floor((floor(|x| * 2^37) + rand_13) / 2^13) units of 2^-24 (a bias toward zero below
 * 2^-13 of a unit, there only). With it a GPU rounds every finite |x| < 65504 the same
 * straight-line way: |x| * 2^-112 truncated is an f32 whose bits, plus rand_13, hold f16's
 * result above the 13 low bits (f32's subnormals line up with f16's), one multiply back and
 * a truncating conversion (bench/NOTES.md step 26). Why 7 rounds and not 10: a GEMM epilogue with stochastic rounding
 * is bound by the generator's 64-bit multiplies (two a round) on the K = 128 weight updates
 * (bench/NOTES.md steps 21 and 23); Random123's authors (SC11) and the C++26 philox_engine's
 * notes report no statistical flaw at 7 rounds, 10 being their safety margin. Rounding needs
 * unbiased, independent bits, not a cipher; the generator of tensors keeps 10.
 */
#ifndef KILN_CORE_NUMERIC_H
#define KILN_CORE_NUMERIC_H

/* ---- portability --------------------------------------------------------------------- */

#if defined(__CUDACC__)
#define KILN_HD static __host__ __device__ __forceinline__
#else
#define KILN_HD static inline
#endif

/* Device code (nvcc device pass, NVRTC) vs host code (C, or the host pass of nvcc). */
#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define KILN_NUM_DEVICE 1
#else
#define KILN_NUM_DEVICE 0
#endif

typedef unsigned short kiln_u16;
typedef unsigned int kiln_u32;
typedef unsigned long long kiln_u64;

#if !KILN_NUM_DEVICE
#include <string.h>
#if !defined(__GNUC__)
#include <math.h>
#endif
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
_Static_assert(sizeof(kiln_u16) == 2 && sizeof(kiln_u32) == 4 && sizeof(kiln_u64) == 8,
               "kiln numeric.h needs 16/32/64-bit unsigned short/int/long long");
_Static_assert(sizeof(float) == 4 && sizeof(double) == 8, "kiln numeric.h needs IEEE float and double");
#endif
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#endif

/* Every float operation of the transforms goes through these: IEEE, round to nearest even,
 * never fused. */
#if KILN_NUM_DEVICE
#define KILN_FADD(a, b) __fadd_rn((a), (b))
#define KILN_FSUB(a, b) __fsub_rn((a), (b))
#define KILN_FMUL(a, b) __fmul_rn((a), (b))
#define KILN_FDIV(a, b) __fdiv_rn((a), (b))
#define KILN_FSQRT(a) __fsqrt_rn(a)
#else
#define KILN_FADD(a, b) ((float)(a) + (float)(b))
#define KILN_FSUB(a, b) ((float)(a) - (float)(b))
#define KILN_FMUL(a, b) ((float)(a) * (float)(b))
#define KILN_FDIV(a, b) ((float)(a) / (float)(b))
#if defined(__GNUC__)
#define KILN_FSQRT(a) __builtin_sqrtf(a)
#else
#define KILN_FSQRT(a) sqrtf(a)
#endif
#endif

/* ---- bit casts ------------------------------------------------------------------------ */

KILN_HD kiln_u32 kiln_f32_bits(float x)
{
#if KILN_NUM_DEVICE
    return __float_as_uint(x);
#else
    kiln_u32 u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

KILN_HD float kiln_f32_from_bits(kiln_u32 u)
{
#if KILN_NUM_DEVICE
    return __uint_as_float(u);
#else
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
#endif
}

KILN_HD kiln_u64 kiln_f64_bits(double x)
{
#if KILN_NUM_DEVICE
    return (kiln_u64)__double_as_longlong(x);
#else
    kiln_u64 u;
    memcpy(&u, &x, sizeof u);
    return u;
#endif
}

/* ---- Philox4x32 ----------------------------------------------------------------------- */

typedef struct kiln_philox4 {
    kiln_u32 v[4];
} kiln_philox4;

/* Philox4x32 with `rounds` rounds of (key, counter); word layout in the recipe at the top. */
KILN_HD kiln_philox4 kiln_philox4x32_r(kiln_u64 key, kiln_u64 ctr_hi, kiln_u64 ctr_lo, int rounds)
{
    kiln_u32 k0 = (kiln_u32)key, k1 = (kiln_u32)(key >> 32);
    kiln_u32 c0 = (kiln_u32)ctr_lo, c1 = (kiln_u32)(ctr_lo >> 32);
    kiln_u32 c2 = (kiln_u32)ctr_hi, c3 = (kiln_u32)(ctr_hi >> 32);
    for (int r = 0; r < rounds; r++) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
#if KILN_NUM_DEVICE
        kiln_u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        kiln_u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
#else
        kiln_u64 p0 = (kiln_u64)0xD2511F53u * c0, p1 = (kiln_u64)0xCD9E8D57u * c2;
        kiln_u32 hi0 = (kiln_u32)(p0 >> 32), lo0 = (kiln_u32)p0;
        kiln_u32 hi1 = (kiln_u32)(p1 >> 32), lo1 = (kiln_u32)p1;
#endif
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    kiln_philox4 out;
    out.v[0] = c0;
    out.v[1] = c1;
    out.v[2] = c2;
    out.v[3] = c3;
    return out;
}

/* Philox4x32-10 (rand, randn, dropout, element-wise stochastic rounding). */
KILN_HD kiln_philox4 kiln_philox4x32_10(kiln_u64 key, kiln_u64 ctr_hi, kiln_u64 ctr_lo)
{
    return kiln_philox4x32_r(key, ctr_hi, ctr_lo, 10);
}

/* The rounds of the Philox that gives GEMM outputs their stochastic-rounding bits (recipe at
 * the top: 7, where Random123's authors found no statistical flaw; the kernels' epilogues
 * are bound by its multiplies). */
#define KILN_GEMM_SR_ROUNDS 7

/* ---- f32 transforms without libm ------------------------------------------------------ */

/* Natural logarithm, f32, a few ulp; recipe at the top. */
KILN_HD float kiln_num_logf(float x)
{
    kiln_u32 u = kiln_f32_bits(x);
    if (u == 0u || u == 0x80000000u) return kiln_f32_from_bits(0xFF800000u); /* -inf */
    if (u > 0x7F800000u) return kiln_f32_from_bits(0x7FC00000u);            /* NaN, x < 0 */
    if (u == 0x7F800000u) return x;                                          /* +inf */
    int e = (int)(u >> 23);
    kiln_u32 m = u & 0x007FFFFFu;
    if (e == 0) { /* subnormal: normalize with integer shifts */
        e = 1;
        while (!(m & 0x00800000u)) {
            m <<= 1;
            e--;
        }
        m &= 0x007FFFFFu;
    }
    e -= 127;
    /* m in [1, 2) as bits 0x3F800000 | m; move to [sqrt(1/2), sqrt(2)). */
    if (m > 0x003504F3u) { /* 1.41421354 = 0x3FB504F3 */
        e += 1;
        m |= 0x3F000000u; /* m/2 in [0.707, 1) */
    } else {
        m |= 0x3F800000u;
    }
    float f = KILN_FSUB(kiln_f32_from_bits(m), 1.0f);
    float s = KILN_FDIV(f, KILN_FADD(2.0f, f));
    float z = KILN_FMUL(s, s);
    float R = KILN_FMUL(z, KILN_FADD(6.666666865e-01f,
                                     KILN_FMUL(z, KILN_FADD(4.000000060e-01f,
                                                            KILN_FMUL(z, KILN_FADD(2.857142985e-01f,
                                                                                   KILN_FMUL(z, KILN_FADD(2.222222239e-01f,
                                                                                                          KILN_FMUL(z, 1.818181872e-01f)))))))));
    float hfsq = KILN_FMUL(KILN_FMUL(0.5f, f), f);
    float dk = (float)e; /* |e| < 160: exact */
    float lo = KILN_FADD(KILN_FMUL(s, KILN_FADD(hfsq, R)), KILN_FMUL(dk, 1.428606765e-06f));
    return KILN_FADD(KILN_FMUL(dk, 6.931457520e-01f), KILN_FSUB(f, KILN_FSUB(hfsq, lo)));
}

/* Range reduction of cos(2 pi t) for finite |t| < 2^23: returns r in [-1/2, 1/2] and the
 * quadrant q mod 4, with 4|t| = q + r exactly (cos is even, so t's sign is dropped). */
KILN_HD float kiln_num_reduce_turns(float t, int *quadrant)
{
    float x = KILN_FMUL(kiln_f32_from_bits(kiln_f32_bits(t) & 0x7FFFFFFFu), 4.0f); /* exact, in [0, 2^25) */
    float q;
    if (x < 8388608.0f) /* 2^23: x + 2^23 lies in [2^23, 2^24), where floats are the integers */
        q = KILN_FSUB(KILN_FADD(x, 8388608.0f), 8388608.0f);
    else
        q = x; /* already an integer */
    *quadrant = (int)q & 3;
    return KILN_FSUB(x, q);
}

/* cos(2 pi t), f32, a few ulp; recipe at the top. */
KILN_HD float kiln_num_cos2pif(float t)
{
    kiln_u32 at = kiln_f32_bits(t) & 0x7FFFFFFFu;
    if (at >= 0x7F800000u) return kiln_f32_from_bits(0x7FC00000u); /* NaN, inf */
    if (at >= 0x4B000000u) return 1.0f;                             /* |t| >= 2^23: an integer */
    int q;
    float r = kiln_num_reduce_turns(t, &q);
    float z = KILN_FMUL(r, r);
    float s = KILN_FMUL(r, KILN_FADD(1.570796371e+00f,
                                     KILN_FMUL(z, KILN_FADD(-6.459640861e-01f,
                                                            KILN_FMUL(z, KILN_FADD(7.969262451e-02f,
                                                                                   KILN_FMUL(z, KILN_FADD(-4.681753926e-03f,
                                                                                                          KILN_FMUL(z, 1.604411809e-04f)))))))));
    float c = KILN_FADD(1.0f, KILN_FMUL(z, KILN_FADD(-1.233700514e+00f,
                                                     KILN_FMUL(z, KILN_FADD(2.536695004e-01f,
                                                                            KILN_FMUL(z, KILN_FADD(-2.086348087e-02f,
                                                                                                   KILN_FMUL(z, KILN_FADD(9.192602593e-04f,
                                                                                                                          KILN_FMUL(z, -2.520204180e-05f))))))))));
    switch (q) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
    }
}

/* ---- random numbers ------------------------------------------------------------------- */

/* 32 random bits of element `index` of stream `stream`: v[0] of philox(seed, stream, index). */
KILN_HD kiln_u32 kiln_rng_bits(kiln_u64 seed, kiln_u64 stream, kiln_u64 index)
{
    return kiln_philox4x32_10(seed, stream, index).v[0];
}

/* Philox counter of GEMM output element (row, n) of a C with N columns (recipe at the top). */
KILN_HD kiln_u64 kiln_gemm_sr_counter(kiln_u64 row, kiln_u64 n, kiln_u64 N)
{
    return (row * ((N + 31u) >> 5) + (n >> 5)) * 4u + ((n >> 1) & 3u);
}

/* The stochastic-rounding bits of column n from its group's Philox output v. */
KILN_HD kiln_u32 kiln_gemm_sr_pick(kiln_philox4 v, kiln_u64 n)
{
    kiln_u32 w = v.v[(n >> 3) & 3u];
    return (n & 1u) ? (w & 0xFFFF0000u) : (w << 16);
}

/* The stochastic-rounding bits of GEMM output element (row, n), one Philox call (the
 * reference and CPU paths; the tensor-core kernels share one call among eight elements). */
KILN_HD kiln_u32 kiln_gemm_sr_bits(kiln_u64 seed, kiln_u64 stream, kiln_u64 row, kiln_u64 n, kiln_u64 N)
{
    return kiln_gemm_sr_pick(kiln_philox4x32_r(seed, stream, kiln_gemm_sr_counter(row, n, N), KILN_GEMM_SR_ROUNDS), n);
}

/* Uniform in [0, 1) from 32 random bits: (u >> 8) * 2^-24 (exact). */
KILN_HD float kiln_num_u01(kiln_u32 u) { return (float)(u >> 8) * 5.9604644775390625e-08f; }

/* Standard normal from two words of one Philox output (Box-Muller, recipe at the top). */
KILN_HD float kiln_num_normal(kiln_u32 v0, kiln_u32 v1)
{
    float u1 = (float)((v0 >> 8) + 1u) * 5.9604644775390625e-08f; /* (0, 1], exact */
    float u2 = (float)(v1 >> 8) * 5.9604644775390625e-08f;        /* [0, 1), exact */
    float radius = KILN_FSQRT(KILN_FMUL(-2.0f, kiln_num_logf(u1)));
    return KILN_FMUL(radius, kiln_num_cos2pif(u2));
}

KILN_HD float kiln_rng_uniform(kiln_u64 seed, kiln_u64 stream, kiln_u64 index)
{
    return kiln_num_u01(kiln_rng_bits(seed, stream, index));
}

KILN_HD float kiln_rng_normal(kiln_u64 seed, kiln_u64 stream, kiln_u64 index)
{
    kiln_philox4 v = kiln_philox4x32_10(seed, stream, index);
    return kiln_num_normal(v.v[0], v.v[1]);
}

/* 1.0f with probability p (uniform < p), else 0.0f. */
KILN_HD float kiln_rng_bernoulli(kiln_u64 seed, kiln_u64 stream, kiln_u64 index, float p)
{
    return kiln_rng_uniform(seed, stream, index) < p ? 1.0f : 0.0f;
}

/* ---- f16 / bf16 ----------------------------------------------------------------------- */

KILN_HD float kiln_f16_to_f32(kiln_u16 h)
{
    kiln_u32 sign = ((kiln_u32)h & 0x8000u) << 16;
    kiln_u32 e = ((kiln_u32)h >> 10) & 0x1Fu, m = (kiln_u32)h & 0x3FFu;
    kiln_u32 bits;
    if (e == 0x1Fu) {
        bits = sign | 0x7F800000u | (m << 13);
    } else if (e != 0) {
        bits = sign | ((e + 112u) << 23) | (m << 13);
    } else if (m == 0) {
        bits = sign;
    } else { /* subnormal m * 2^-24: normalize */
        kiln_u32 fe = 113u;
        while (!(m & 0x400u)) {
            m <<= 1;
            fe--;
        }
        bits = sign | (fe << 23) | ((m & 0x3FFu) << 13);
    }
    return kiln_f32_from_bits(bits);
}

KILN_HD float kiln_bf16_to_f32(kiln_u16 h) { return kiln_f32_from_bits((kiln_u32)h << 16); }

/* f32 -> f16, nearest even. */
KILN_HD kiln_u16 kiln_f32_to_f16_rn(float x)
{
    kiln_u32 u = kiln_f32_bits(x);
    kiln_u32 sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (kiln_u16)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN */
    if (a >= 0x477FF000u) return (kiln_u16)(sign | 0x7C00u); /* >= 65520: inf */
    if (a >= 0x38800000u) {                                 /* >= 2^-14: normal */
        a += 0x0FFFu + ((a >> 13) & 1u);
        return (kiln_u16)(sign | ((a - (112u << 23)) >> 13));
    }
    kiln_u32 e = a >> 23;
    if (e < 102u) return (kiln_u16)sign; /* < 2^-25: rounds to 0 */
    kiln_u32 mm = (a & 0x007FFFFFu) | 0x00800000u, s = 126u - e; /* s in [14, 24] */
    kiln_u32 k = mm >> s, rem = mm & ((1u << s) - 1u), half = 1u << (s - 1u);
    if (rem > half || (rem == half && (k & 1u))) k++;
    return (kiln_u16)(sign | k);
}

/* f32 -> bf16, nearest even. */
KILN_HD kiln_u16 kiln_f32_to_bf16_rn(float x)
{
    kiln_u32 u = kiln_f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (kiln_u16)((u >> 16) | 0x0040u); /* NaN */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (kiln_u16)(u >> 16);
}

/* f64 -> a binary format with ebits exponent and mbits stored mantissa bits, nearest even,
 * rounded once. ebits <= 11, mbits <= 51. */
KILN_HD kiln_u32 kiln_num_f64_to_small_rn(double x, int ebits, int mbits)
{
    kiln_u64 u = kiln_f64_bits(x);
    kiln_u32 sign = (kiln_u32)(u >> 63) << (ebits + mbits);
    kiln_u64 a = u & 0x7FFFFFFFFFFFFFFFull;
    kiln_u32 inf = ((1u << ebits) - 1u) << mbits;
    int shift = 52 - mbits;
    if (a > 0x7FF0000000000000ull)
        return sign | inf | (1u << (mbits - 1)) | (kiln_u32)((a >> shift) & ((1u << mbits) - 1u));
    if (a == 0x7FF0000000000000ull) return sign | inf;
    int bias = (1 << (ebits - 1)) - 1;
    int e = (int)(a >> 52);
    if (e == 0) return sign; /* below 2^-1022: 0 in any smaller format */
    int ue = e - 1023, emin = 1 - bias;
    if (ue >= emin) { /* normal range of the target */
        kiln_u64 r = a + ((1ull << (shift - 1)) - 1ull) + ((a >> shift) & 1ull);
        kiln_u64 t = (r >> shift) - ((kiln_u64)(1023 - bias) << mbits);
        if (t >= inf) return sign | inf;
        return sign | (kiln_u32)t;
    }
    /* subnormal: x = mm * 2^(ue-52), unit 2^(emin-mbits): k = mm >> s */
    int s = 52 + emin - mbits - ue;
    if (s > 53) return sign; /* below half a unit */
    kiln_u64 mm = (a & 0x000FFFFFFFFFFFFFull) | 0x0010000000000000ull;
    kiln_u64 k = mm >> s, rem = mm & ((1ull << s) - 1ull), half = 1ull << (s - 1);
    if (rem > half || (rem == half && (k & 1ull))) k++;
    return sign | (kiln_u32)k;
}

KILN_HD kiln_u16 kiln_f64_to_f16_rn(double x) { return (kiln_u16)kiln_num_f64_to_small_rn(x, 5, 10); }
KILN_HD kiln_u16 kiln_f64_to_bf16_rn(double x) { return (kiln_u16)kiln_num_f64_to_small_rn(x, 8, 7); }

/* f32 -> f16 rounded toward zero (IEEE: beyond the largest finite value it stays finite, inf
 * and NaN pass as in _rn): what PTX's cvt.rz.f16x2.f32 gives, for the host emulator and the
 * checks of the GEMM epilogue that truncates with it. */
KILN_HD kiln_u16 kiln_f32_to_f16_rz(float x)
{
    kiln_u32 u = kiln_f32_bits(x);
    kiln_u32 sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return kiln_f32_to_f16_rn(x);               /* inf, NaN */
    if (a >= 0x477FE000u) return (kiln_u16)(sign | 0x7BFFu);          /* >= 65504: 65504 */
    if (a >= 0x38800000u) return (kiln_u16)(sign | ((a - (112u << 23)) >> 13)); /* normal */
    if (a < 0x33800000u) return (kiln_u16)sign;                       /* below 2^-24: zero */
    kiln_u32 e = a >> 23, mm = (a & 0x007FFFFFu) | 0x00800000u;       /* x = mm 2^(e - 150) */
    return (kiln_u16)(sign | (mm >> (126u - e)));                     /* units of 2^-24 */
}

/* f32 -> bf16, stochastic: |x| + (top 16 bits of `bits`) below the kept mantissa, truncated. */
KILN_HD kiln_u16 kiln_f32_to_bf16_sr(float x, kiln_u32 bits)
{
    kiln_u32 u = kiln_f32_bits(x);
    kiln_u32 sign = u & 0x80000000u, a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) return (kiln_u16)((u >> 16) | 0x0040u); /* NaN */
    if (a == 0x7F800000u) return (kiln_u16)(u >> 16);              /* inf */
    a += bits >> 16; /* at most 0x7F80FFFE: a carry past the largest finite gives inf */
    return (kiln_u16)((sign | a) >> 16);
}

/* Whether f32 bits u lie in f16's normal range below 65536 (2^-14 <= |x| < 2^16), where
 * kiln_f32_to_f16_sr is kiln_f32_to_f16_sr_normal: the common case, which the GPU's GEMM
 * epilogues inline while the rest goes out of line. */
KILN_HD int kiln_f16_sr_is_normal(kiln_u32 u) { return (u & 0x7FFFFFFFu) - 0x38800000u < 0x47800000u - 0x38800000u; }

/* kiln_f32_to_f16_sr of f32 bits u in the normal range (D = 13): add, truncate, clamp a
 * carry past the largest finite value to inf. */
KILN_HD kiln_u16 kiln_f32_to_f16_sr_normal(kiln_u32 u, kiln_u32 bits)
{
    kiln_u32 t = ((u & 0x7FFFFFFFu) + (bits >> 19) - (112u << 23)) >> 13;
    return (kiln_u16)(((u >> 16) & 0x8000u) | (t >= 0x7C00u ? 0x7C00u : t));
}

/* f32 -> f16, stochastic; D dropped bits as in the recipe at the top. */
KILN_HD kiln_u16 kiln_f32_to_f16_sr(float x, kiln_u32 bits)
{
    kiln_u32 u = kiln_f32_bits(x);
    kiln_u32 sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
    if (kiln_f16_sr_is_normal(u)) return kiln_f32_to_f16_sr_normal(u, bits);
    if (a > 0x7F800000u) return (kiln_u16)(sign | 0x7E00u | ((a >> 13) & 0x3FFu)); /* NaN */
    if (a >= 0x47800000u) return (kiln_u16)(sign | 0x7C00u); /* >= 65536 (and inf): inf */
    /* subnormal range: x = mm * 2^(e-150); result in units of 2^-24 = mm >> s, s = 126 - e */
    kiln_u32 e = a >> 23, mm;
    if (e == 0) {
        mm = a; /* f32 subnormal: mm * 2^-149 */
        e = 1;
    } else {
        mm = (a & 0x007FFFFFu) | 0x00800000u;
    }
    kiln_u32 s = 126u - e; /* >= 14 */
    if (s > 32u) {
        mm = s - 32u >= 32u ? 0u : mm >> (s - 32u);
        s = 32u;
    }
    kiln_u64 r = (kiln_u64)mm + (kiln_u64)(s == 32u ? bits : bits >> (32u - s));
    return (kiln_u16)(sign | (kiln_u32)(r >> s));
}

/* f32 -> f16, stochastic with 13 random bits in every range (the GEMM outputs' recipe at the
 * top): kiln_f32_to_f16_sr where |x| >= 2^-14 (and for inf, NaN); below, M = floor(|x| 2^37),
 * a 23-bit integer, and the result floor((M + top 13 bits) / 2^13) units of 2^-24, the sign
 * kept. */
KILN_HD kiln_u16 kiln_f32_to_f16_sr13(float x, kiln_u32 bits)
{
    kiln_u32 u = kiln_f32_bits(x);
    kiln_u32 a = u & 0x7FFFFFFFu;
    if (a >= 0x38800000u) return kiln_f32_to_f16_sr(x, bits);
    /* |x| = mm 2^(e - 150) with e >= 1 (f32 subnormals: e = 1, no implicit bit), so
     * |x| 2^37 = mm 2^(e - 113), e <= 112 */
    kiln_u32 e = a >> 23, mm = e ? (a & 0x007FFFFFu) | 0x00800000u : a;
    if (!e) e = 1;
    kiln_u32 M = 113u - e >= 32u ? 0u : mm >> (113u - e);
    return (kiln_u16)(((u >> 16) & 0x8000u) | ((M + (bits >> 19)) >> 13));
}

#endif /* KILN_CORE_NUMERIC_H */
