/*
 * tests/test_numeric.c — tests of src/core/numeric.h: Philox4x32-10 and -7 known answers, the
 * statistics of the uniform / normal / Bernoulli transforms, the libm-free log and cos
 * against libm in double, exhaustive f16 / bf16 round trips, round-to-nearest against an
 * independent frexp/ldexp reference, and stochastic rounding (exactly unbiased, one of the
 * two neighbours, deterministic). Needs no context: the header stands alone.
 */
#include <float.h>
#include <math.h>

#include "check.h"
#include "core/numeric.h"

/* ---- Philox ------------------------------------------------------------------------- */

/* Known answers from Random123's examples/kat_vectors (D. E. Shaw Research), its three
 * "philox4x32 10" lines and three "philox4x32 7" lines (the GEMM's stochastic-rounding
 * rounds, KILN_GEMM_SR_ROUNDS); columns there are ROUNDS, CTR (4 words), KEY (2 words),
 * EXPECTED (4 words):
 *   philox4x32 10 00000000 00000000 00000000 00000000 00000000 00000000  6627e8d5 e169c58d bc57ac4c 9b00dbd8
 *   philox4x32 10 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff  408f276d 41c83b0e a20bc7c6 6d5451fd
 *   philox4x32 10 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0  d16cfe09 94fdcceb 5001e420 24126ea1
 *   philox4x32 7 00000000 00000000 00000000 00000000 00000000 00000000  5f6fb709 0d893f64 4f121f81 4f730a48
 *   philox4x32 7 ffffffff ffffffff ffffffff ffffffff ffffffff ffffffff  5207ddc2 45165e59 4d8ee751 8c52f662
 *   philox4x32 7 243f6a88 85a308d3 13198a2e 03707344 a4093822 299f31d0  4dfccaba 190a87f0 c47362ba b6b5242a */
static void test_philox_kat(void)
{
    static const uint32_t kat[6][11] = {
        {10, 0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {10, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {10, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
        {7, 0, 0, 0, 0, 0, 0, 0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48},
        {7, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x5207ddc2, 0x45165e59,
         0x4d8ee751, 0x8c52f662},
        {7, 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0x4dfccaba, 0x190a87f0,
         0xc47362ba, 0xb6b5242a},
    };
    CHECK_INT(KILN_GEMM_SR_ROUNDS, 7);
    for (int i = 0; i < 6; i++) {
        const uint32_t *k = kat[i] + 1;
        const int rounds = (int)kat[i][0];
        kiln_u64 ctr_lo = (kiln_u64)k[0] | (kiln_u64)k[1] << 32;
        kiln_u64 ctr_hi = (kiln_u64)k[2] | (kiln_u64)k[3] << 32;
        kiln_u64 key = (kiln_u64)k[4] | (kiln_u64)k[5] << 32;
        kiln_philox4 r = rounds == 10 ? kiln_philox4x32_10(key, ctr_hi, ctr_lo) : kiln_philox4x32_r(key, ctr_hi, ctr_lo, rounds);
        for (int j = 0; j < 4; j++) CHECK_INT(r.v[j], k[6 + j]);
        /* bits(seed, stream, index) = v[0] of philox(key=seed, ctr_hi=stream, ctr_lo=index) */
        if (rounds == 10) CHECK_INT(kiln_rng_bits(key, ctr_hi, ctr_lo), k[6]);
        /* kiln_gemm_sr_bits, row 0 of a 64-column C: columns 0, 1, 8 and 25 take halves of
         * counter 0's words 0, 0, 1 and 3; column 34 (second group, pair 1) the low half of
         * counter 5's word 0 */
        if (rounds == KILN_GEMM_SR_ROUNDS && ctr_lo == 0 && ctr_hi == 0) {
            CHECK_INT(kiln_gemm_sr_bits(key, 0, 0, 0, 64), k[6] << 16);
            CHECK_INT(kiln_gemm_sr_bits(key, 0, 0, 1, 64), k[6] & 0xFFFF0000u);
            CHECK_INT(kiln_gemm_sr_bits(key, 0, 0, 8, 64), k[7] << 16);
            CHECK_INT(kiln_gemm_sr_bits(key, 0, 0, 25, 64), k[9] & 0xFFFF0000u);
            CHECK_INT(kiln_gemm_sr_bits(key, 0, 0, 34, 64), kiln_philox4x32_r(key, 0, 5, 7).v[0] << 16);
        }
    }
    /* Neighbouring indices and streams give different words. */
    CHECK(kiln_rng_bits(1, 0, 0) != kiln_rng_bits(1, 0, 1));
    CHECK(kiln_rng_bits(1, 0, 0) != kiln_rng_bits(1, 1, 0));
    CHECK(kiln_rng_bits(1, 0, 0) != kiln_rng_bits(2, 0, 0));
}

/* ---- transforms: statistics ----------------------------------------------------------- */

static void test_uniform_stats(uint64_t seed)
{
    const int64_t n = 1 << 20;
    long bins[64] = {0};
    double sum = 0, sum2 = 0;
    int out_of_range = 0;
    for (int64_t i = 0; i < n; i++) {
        float u = kiln_rng_uniform(seed, 7, (kiln_u64)i);
        if (!(u >= 0.0f && u < 1.0f)) out_of_range++;
        sum += u;
        sum2 += (double)u * u;
        bins[(int)(u * 64.0f) & 63]++;
    }
    CHECK_INT(out_of_range, 0);
    double mean = sum / n, var = sum2 / n - mean * mean;
    /* sd of the mean: sqrt(1/12/n) = 2.8e-4; of the variance: ~sqrt(1/180/n) = 7.3e-5 */
    CHECK_NEAR(mean, 0.5, 6 * 2.82e-4);
    CHECK_NEAR(var, 1.0 / 12.0, 6 * 7.3e-5);
    double chi2 = 0, expect = (double)n / 64;
    for (int b = 0; b < 64; b++) chi2 += (bins[b] - expect) * (bins[b] - expect) / expect;
    /* 63 degrees of freedom: mean 63, sd 11.2; 6 sd above is 130. */
    if (!(chi2 < 130.0)) fprintf(stderr, "uniform chi-square %g (63 dof)\n", chi2);
    CHECK(chi2 < 130.0);
    /* The exact formula. */
    for (kiln_u64 i = 0; i < 100; i++) {
        kiln_u32 b = kiln_rng_bits(seed, 3, i);
        CHECK(kiln_rng_uniform(seed, 3, i) == (float)ldexp((double)(b >> 8), -24));
    }
    CHECK(kiln_num_u01(0u) == 0.0f);
    CHECK(kiln_num_u01(0xFFFFFFFFu) == (float)(1.0 - ldexp(1.0, -24)));
}

static void test_normal_stats(uint64_t seed)
{
    const int64_t n = 1 << 20;
    double s1 = 0, s2 = 0, s4 = 0;
    long tail = 0;
    int bad = 0;
    float zmax = 0;
    for (int64_t i = 0; i < n; i++) {
        float z = kiln_rng_normal(seed, 11, (kiln_u64)i);
        if (!isfinite(z)) bad++;
        double d = z;
        s1 += d;
        s2 += d * d;
        s4 += d * d * d * d;
        if (fabs(d) > 3.0) tail++;
        if (fabsf(z) > zmax) zmax = fabsf(z);
    }
    CHECK_INT(bad, 0);
    double mean = s1 / n, m2 = s2 / n, m4 = s4 / n, tailf = (double)tail / n;
    CHECK_NEAR(mean, 0.0, 6 / sqrt((double)n));     /* sd 1e-3 */
    CHECK_NEAR(m2, 1.0, 6 * sqrt(2.0 / n));         /* sd 1.4e-3 */
    CHECK_NEAR(m4, 3.0, 6 * sqrt(96.0 / n));        /* sd 9.6e-3 */
    /* P(|z| > 3) = 0.0026998; sd of the fraction sqrt(p/n) = 5.1e-5 */
    CHECK_NEAR(tailf, 0.0026997961, 6 * 5.1e-5);
    /* The largest |z| Box-Muller can give: sqrt(-2 ln 2^-24) = 5.77. */
    CHECK(zmax <= 5.7683f && zmax > 4.0f);
    /* The exact formula, with our log and cos. */
    for (kiln_u64 i = 0; i < 100; i++) {
        kiln_philox4 v = kiln_philox4x32_10(seed, 5, i);
        float u1 = (float)ldexp((double)((v.v[0] >> 8) + 1), -24), u2 = (float)ldexp((double)(v.v[1] >> 8), -24);
        float r = sqrtf(-2.0f * kiln_num_logf(u1));
        CHECK(kiln_rng_normal(seed, 5, i) == r * kiln_num_cos2pif(u2));
        /* and close to the libm formula in double */
        double ref = sqrt(-2.0 * log((double)u1)) * cos(2.0 * 3.14159265358979323846 * u2);
        CHECK_NEAR(kiln_rng_normal(seed, 5, i), ref, 4e-6);
    }
    /* u1 = 1 gives exactly 0 */
    CHECK(kiln_num_normal(0xFFFFFF00u, 0x12345678u) == 0.0f);
}

static void test_bernoulli(uint64_t seed)
{
    const int64_t n = 1 << 18;
    const float ps[] = {0.0f, 0.1f, 0.5f, 0.93f, 1.0f};
    for (int k = 0; k < 5; k++) {
        long ones = 0, other = 0;
        for (int64_t i = 0; i < n; i++) {
            float b = kiln_rng_bernoulli(seed, 13 + (kiln_u64)k, (kiln_u64)i, ps[k]);
            if (b == 1.0f)
                ones++;
            else if (b != 0.0f)
                other++;
            /* exactly uniform < p */
            if (i < 64) CHECK(b == (kiln_rng_uniform(seed, 13 + (kiln_u64)k, (kiln_u64)i) < ps[k] ? 1.0f : 0.0f));
        }
        CHECK_INT(other, 0);
        double p = ps[k], f = (double)ones / n;
        CHECK_NEAR(f, p, 6 * sqrt(p * (1 - p) / n) + 1e-12);
    }
}

/* ---- log and cos against libm --------------------------------------------------------- */

/* |got - ref| in units of the f32 ulp at ref (ulp of the smallest normal below 2^-126); 1e30
 * where one is NaN and the other not (a NaN error would pass every `e > worst`). */
static double ulp_err(float got, double ref)
{
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : 1e30;
    if (isinf(ref)) return (double)got == ref ? 0 : 1e30;
    double a = fabs(ref);
    int e;
    frexp(a < FLT_MIN ? FLT_MIN : a, &e); /* a in [2^(e-1), 2^e) */
    return fabs((double)got - ref) / ldexp(1.0, e - 24);
}

static void test_logf(uint64_t *rs)
{
    double worst = 0, worst_x = 0;
    /* Every Box-Muller input u1 = k 2^-24 (k = 1 .. 2^24), with a stride to stay fast. */
    for (uint32_t k = 1; k <= (1u << 24); k += 3) {
        float x = (float)ldexp(k, -24);
        double e = ulp_err(kiln_num_logf(x), log((double)x));
        if (e > worst) worst = e, worst_x = x;
    }
    /* Random positive floats over the whole range, subnormals included. */
    for (int i = 0; i < 400000; i++) {
        uint32_t b = (uint32_t)(check_rand_u64(rs) >> 33) % 0x7F800000u;
        float x;
        memcpy(&x, &b, 4);
        if (x == 0) continue;
        double e = ulp_err(kiln_num_logf(x), log((double)x));
        if (e > worst) worst = e, worst_x = x;
    }
    printf("kiln_num_logf: max error %.3f ulp (at %.9g)\n", worst, worst_x);
    CHECK(worst <= 2.0);
    CHECK(kiln_num_logf(1.0f) == 0.0f);
    CHECK(isinf(kiln_num_logf(0.0f)) && kiln_num_logf(0.0f) < 0);
    CHECK(isinf(kiln_num_logf(-0.0f)) && kiln_num_logf(-0.0f) < 0);
    CHECK(isnan(kiln_num_logf(-1.0f)));
    CHECK(isnan(kiln_num_logf(NAN)));
    CHECK(isinf(kiln_num_logf(INFINITY)) && kiln_num_logf(INFINITY) > 0);
    CHECK_NEAR(kiln_num_logf(FLT_MAX), log((double)FLT_MAX), 1e-6);
}

static void test_cos2pif(uint64_t *rs)
{
    const double twopi = 2.0 * 3.14159265358979323846;
    double worst = 0, worst_t = 0, worst_abs = 0;
    /* Every Box-Muller input u2 = k 2^-24 in [0, 1), with a stride. Near a zero of cos, the
     * error is measured absolutely (in units of 2^-24). */
    for (uint32_t k = 0; k < (1u << 24); k += 3) {
        float t = (float)ldexp(k, -24);
        double ref = cos(twopi * t);
        double got = kiln_num_cos2pif(t);
        double e = ulp_err((float)got, ref), ea = fabs(got - ref) * 16777216.0;
        if (fabs(ref) < 1.0 / 64) {
            if (!(ea <= worst_abs)) worst_abs = isnan(ea) ? 1e30 : ea; /* a NaN fails */
        } else if (e > worst) {
            worst = e, worst_t = t;
        }
    }
    /* Random arguments, negative and large ones included. */
    for (int i = 0; i < 300000; i++) {
        float t = (float)check_uniform(rs, -3000.0, 3000.0);
        if (i % 3 == 0) t = (float)check_uniform(rs, -1.0, 1.0);
        if (i % 7 == 0) t = (float)ldexp(check_uniform(rs, -1.0, 1.0), (int)(check_rand_u64(rs) % 128)); /* any size */
        double ref = cos(twopi * fmod((double)t, 1.0));
        double got = kiln_num_cos2pif(t);
        if (fabs(ref) < 1.0 / 64) {
            double ea = fabs(got - ref) * 16777216.0;
            if (!(ea <= worst_abs)) worst_abs = isnan(ea) ? 1e30 : ea;
        } else {
            double e = ulp_err((float)got, ref);
            if (e > worst) worst = e, worst_t = t;
        }
    }
    printf("kiln_num_cos2pif: max error %.3f ulp (at %.9g), %.3f * 2^-24 near zeros\n", worst, worst_t, worst_abs);
    CHECK(worst <= 3.0);
    CHECK(worst_abs <= 2.0);
    CHECK(kiln_num_cos2pif(0.0f) == 1.0f);
    CHECK(kiln_num_cos2pif(0.5f) == -1.0f);
    CHECK(kiln_num_cos2pif(-0.5f) == -1.0f);
    CHECK(kiln_num_cos2pif(0.25f) == 0.0f);
    CHECK(kiln_num_cos2pif(3.0f) == 1.0f);
    CHECK(kiln_num_cos2pif(16777216.0f) == 1.0f);
    CHECK(kiln_num_cos2pif(-FLT_MAX) == 1.0f); /* 4t would overflow */
    CHECK(kiln_num_cos2pif(0x1p126f) == 1.0f);
    CHECK(kiln_num_cos2pif(8388609.0f) == 1.0f);  /* integers beyond the magic-number range */
    CHECK(kiln_num_cos2pif(4194304.5f) == -1.0f); /* 2^22 + 1/2 */
    CHECK(kiln_num_cos2pif(2097152.25f) == 0.0f); /* 4x = 2^23 + 1: quadrant 1 */
    CHECK(isnan(kiln_num_cos2pif(NAN)));
    CHECK(isnan(kiln_num_cos2pif(INFINITY)));
    CHECK(isnan(kiln_num_cos2pif(-INFINITY)));
}

/* ---- 16-bit formats: an independent reference ----------------------------------------- */

/* Rounds double x to a binary format with ebits exponent and mbits stored mantissa bits,
 * written with frexp/ldexp and explicit ties-to-even, and returns the encoding.
 * mode 0: nearest even; mode 1: toward zero (for the SR neighbour check). */
static uint32_t ref_round(double x, int ebits, int mbits, int mode)
{
    int bias = (1 << (ebits - 1)) - 1, emax = bias, emin = 1 - bias;
    uint32_t sign = signbit(x) ? 1u << (ebits + mbits) : 0u;
    uint32_t inf = ((1u << ebits) - 1u) << mbits;
    if (isnan(x)) return sign | inf | (1u << (mbits - 1));
    double a = fabs(x);
    double maxf = ldexp(2.0 - ldexp(1.0, -mbits), emax);
    if (isinf(a)) return sign | inf;
    if (a == 0) return sign;
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    int expo = e - 1 < emin ? emin : e - 1;
    double unit = ldexp(1.0, expo - mbits);
    double q = a / unit, fl = floor(q), rem = q - fl;
    if (mode == 0 && (rem > 0.5 || (rem == 0.5 && fmod(fl, 2.0) == 1.0))) fl += 1;
    double v = fl * unit;
    if (v > maxf) return sign | inf;
    if (v == 0) return sign;
    /* encode v */
    frexp(v, &e);
    if (e - 1 < emin) return sign | (uint32_t)ldexp(v, -(emin - mbits)); /* subnormal */
    uint32_t man = (uint32_t)((ldexp(v, -(e - 1)) - 1.0) * ldexp(1.0, mbits));
    return sign | ((uint32_t)(e - 1 + bias) << mbits) | man;
}

static double f16_value(uint32_t h)
{
    double s = (h & 0x8000) ? -1.0 : 1.0;
    int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, -24);
    return s * ldexp(1024 + m, e - 25);
}

static double bf16_value(uint32_t h)
{
    double s = (h & 0x8000) ? -1.0 : 1.0;
    int e = (h >> 7) & 255, m = h & 127;
    if (e == 255) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, -133);
    return s * ldexp(128 + m, e - 134);
}

static int f16_is_nan(uint32_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
static int bf16_is_nan(uint32_t h) { return (h & 0x7F80) == 0x7F80 && (h & 0x7F); }

/* Two encodings agree: identical, or both NaN of the same sign. */
static int same16(uint32_t got, uint32_t ref, int bf)
{
    if (bf ? bf16_is_nan(ref) : f16_is_nan(ref))
        return (bf ? bf16_is_nan(got) : f16_is_nan(got)) && (got & 0x8000) == (ref & 0x8000);
    return got == ref;
}

static void test_16bit_exhaustive(void)
{
    int bad_val = 0, bad_rt = 0, bad_f64 = 0, bad_mid = 0, bad_bval = 0, bad_brt = 0, bad_bf64 = 0, bad_bmid = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        /* f16 -> f32 exact; f32 -> f16 and f64 -> f16 give the pattern back */
        float f = kiln_f16_to_f32((kiln_u16)h);
        double v = f16_value(h);
        if (!(f == v || (isnan(f) && isnan(v)))) bad_val++;
        if (isnan(v) && (!!signbit(f) != ((h & 0x8000) != 0))) bad_val++;
        if (!same16(kiln_f32_to_f16_rn(f), h, 0)) bad_rt++;
        if (!same16(kiln_f64_to_f16_rn((double)f), h, 0)) bad_f64++;
        /* NaN payload: the top bits survive, the quiet bit is set */
        if (f16_is_nan(h) && kiln_f32_to_f16_rn(f) != (h | 0x200)) bad_rt++;
        /* midpoint to the next pattern up (same sign): ties to even, and just above/below */
        if ((h & 0x7FFF) < 0x7C00) {
            double up = (h & 0x7FFF) == 0x7BFF ? (h & 0x8000 ? -65536.0 : 65536.0) : f16_value(h + 1);
            double mid = (v + up) / 2; /* exact in double and in f32 */
            uint32_t even = (h & 1) ? h + 1 : h;
            if ((h & 0x7FFF) == 0x7BFF) even = (h & 0x8000) | 0x7C00;
            if (kiln_f32_to_f16_rn((float)mid) != even) bad_mid++;
            if (kiln_f64_to_f16_rn(mid) != even) bad_mid++;
            /* once-rounding from double: a hair above the midpoint goes up even when the
             * f32 nearest to it is the midpoint itself */
            double above = mid + fabs(mid) * 1e-12, below = mid - fabs(mid) * 1e-12;
            uint32_t hi = (h & 0x7FFF) == 0x7BFF ? ((h & 0x8000) | 0x7C00) : h + 1;
            if (mid != 0 && kiln_f64_to_f16_rn(above) != ((h & 0x8000) ? h : hi)) bad_mid++;
            if (mid != 0 && kiln_f64_to_f16_rn(below) != ((h & 0x8000) ? hi : h)) bad_mid++;
        }
        /* bf16 */
        float g = kiln_bf16_to_f32((kiln_u16)h);
        double w = bf16_value(h);
        if (!(g == w || (isnan(g) && isnan(w)))) bad_bval++;
        if (!same16(kiln_f32_to_bf16_rn(g), h, 1)) bad_brt++;
        if (!same16(kiln_f64_to_bf16_rn((double)g), h, 1)) bad_bf64++;
        if (bf16_is_nan(h) && kiln_f32_to_bf16_rn(g) != (h | 0x40)) bad_brt++;
        if ((h & 0x7FFF) < 0x7F80) {
            double up = (h & 0x7FFF) == 0x7F7F ? copysign(ldexp(1.0, 128), w) : bf16_value(h + 1);
            double mid = (w + up) / 2;
            uint32_t even = (h & 1) ? h + 1 : h;
            if ((h & 0x7FFF) == 0x7F7F) even = (h & 0x8000) | 0x7F80;
            if (kiln_f32_to_bf16_rn((float)mid) != even && fabs(mid) <= FLT_MAX) bad_bmid++;
            if (kiln_f64_to_bf16_rn(mid) != even) bad_bmid++;
            double above = mid + fabs(mid) * 1e-12;
            uint32_t hi = (h & 0x7FFF) == 0x7F7F ? ((h & 0x8000) | 0x7F80) : h + 1;
            if (mid != 0 && kiln_f64_to_bf16_rn(above) != ((h & 0x8000) ? h : hi)) bad_bmid++;
        }
    }
    CHECK_INT(bad_val, 0);
    CHECK_INT(bad_rt, 0);
    CHECK_INT(bad_f64, 0);
    CHECK_INT(bad_mid, 0);
    CHECK_INT(bad_bval, 0);
    CHECK_INT(bad_brt, 0);
    CHECK_INT(bad_bf64, 0);
    CHECK_INT(bad_bmid, 0);
}

static void test_rn_vs_reference(uint64_t *rs)
{
    int bad16 = 0, badbf = 0, bad16d = 0, badbfd = 0, bad16z = 0;
    for (int i = 0; i < 1500000; i++) {
        float x;
        uint32_t b;
        switch (i % 5) {
        case 0: /* any bit pattern (NaN, inf, subnormal included) */
            b = (uint32_t)(check_rand_u64(rs) >> 32);
            memcpy(&x, &b, 4);
            break;
        case 1: /* f16 range */
            x = (float)check_uniform(rs, -70000.0, 70000.0);
            break;
        case 2: /* f16 subnormal range and just above */
            x = (float)ldexp(check_uniform(rs, -1.0, 1.0), -13 - (int)(check_rand_u64(rs) % 14));
            break;
        case 3: /* an f16 value +- a few f32 ulps: near-ties */
            b = (uint32_t)(check_rand_u64(rs) >> 48);
            x = kiln_f16_to_f32((kiln_u16)b);
            if (isfinite(x)) {
                uint32_t xb;
                memcpy(&xb, &x, 4);
                xb += (uint32_t)(check_rand_u64(rs) % 8193) - 4096u;
                memcpy(&x, &xb, 4);
            }
            break;
        default: /* bf16 neighbourhoods */
            b = (uint32_t)(check_rand_u64(rs) >> 32);
            b = (b & 0xFFFF0000u) | ((b & 1) ? 0x8000u : (b & 0xFFFFu));
            memcpy(&x, &b, 4);
            break;
        }
        if (!same16(kiln_f32_to_f16_rn(x), ref_round(x, 5, 10, 0), 0)) {
            if (bad16++ < 5) fprintf(stderr, "f32->f16 %a: got %04x want %04x\n", x, kiln_f32_to_f16_rn(x), ref_round(x, 5, 10, 0));
        }
        /* toward zero: finite values beyond the largest finite f16 stay there (the reference
         * rounds them to inf) */
        const uint32_t rz = isfinite(x) && fabsf(x) >= 65504.0f ? (signbit(x) ? 0xFBFFu : 0x7BFFu) : ref_round(x, 5, 10, 1);
        if (!same16(kiln_f32_to_f16_rz(x), rz, 0)) {
            if (bad16z++ < 5) fprintf(stderr, "f32->f16 rz %a: got %04x want %04x\n", x, kiln_f32_to_f16_rz(x), rz);
        }
        if (!same16(kiln_f32_to_bf16_rn(x), ref_round(x, 8, 7, 0), 1)) {
            if (badbf++ < 5) fprintf(stderr, "f32->bf16 %a: got %04x want %04x\n", x, kiln_f32_to_bf16_rn(x), ref_round(x, 8, 7, 0));
        }
        /* doubles: the f32 value plus a perturbation f32 cannot hold */
        double d = isfinite(x) ? (double)x * (1.0 + check_uniform(rs, -1e-9, 1e-9)) : (double)x;
        if (!same16(kiln_f64_to_f16_rn(d), ref_round(d, 5, 10, 0), 0)) {
            if (bad16d++ < 5) fprintf(stderr, "f64->f16 %a: got %04x want %04x\n", d, kiln_f64_to_f16_rn(d), ref_round(d, 5, 10, 0));
        }
        if (!same16(kiln_f64_to_bf16_rn(d), ref_round(d, 8, 7, 0), 1)) {
            if (badbfd++ < 5) fprintf(stderr, "f64->bf16 %a: got %04x want %04x\n", d, kiln_f64_to_bf16_rn(d), ref_round(d, 8, 7, 0));
        }
    }
    CHECK_INT(bad16, 0);
    CHECK_INT(badbf, 0);
    CHECK_INT(bad16d, 0);
    CHECK_INT(badbfd, 0);
    CHECK_INT(bad16z, 0);
    /* Edge values, spelled out. */
    CHECK_INT(kiln_f32_to_f16_rz(65519.996f), 0x7BFF);
    CHECK_INT(kiln_f32_to_f16_rz(-1e10f), 0xFBFF);
    CHECK_INT(kiln_f32_to_f16_rz(INFINITY), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_rz(1.0f + 0x1.fp-11f), 0x3C00);
    CHECK_INT(kiln_f32_to_f16_rz(-(1.0f + 0x1.fp-10f)), 0xBC01);
    CHECK_INT(kiln_f32_to_f16_rz(0x1.ffcp-15f), 0x03FF);
    CHECK_INT(kiln_f32_to_f16_rz(0x1.fffffep-25f), 0x0000);
    CHECK_INT(kiln_f32_to_f16_rz(-0.0f), 0x8000);
    CHECK(f16_is_nan(kiln_f32_to_f16_rz(NAN)));
    CHECK_INT(kiln_f32_to_f16_rn(65504.0f), 0x7BFF);
    CHECK_INT(kiln_f32_to_f16_rn(65519.996f), 0x7BFF);
    CHECK_INT(kiln_f32_to_f16_rn(65520.0f), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_rn(-1e10f), 0xFC00);
    CHECK_INT(kiln_f32_to_f16_rn(INFINITY), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_rn(-0.0f), 0x8000);
    CHECK_INT(kiln_f32_to_f16_rn(0x1p-24f), 0x0001);
    CHECK_INT(kiln_f32_to_f16_rn(0x1p-25f), 0x0000);       /* tie to even 0 */
    CHECK_INT(kiln_f32_to_f16_rn(0x1.000002p-25f), 0x0001); /* just above the tie */
    CHECK_INT(kiln_f32_to_f16_rn(0x1.8p-24f), 0x0002);     /* 1.5 units: tie to even 2 */
    CHECK_INT(kiln_f32_to_f16_rn(0x1.ff8p-15f), 0x03FF);   /* largest subnormal */
    CHECK_INT(kiln_f32_to_f16_rn(0x1.ffcp-15f), 0x0400);   /* tie between it and 2^-14: even */
    CHECK_INT(kiln_f32_to_f16_rn(0x1.ffbfep-15f), 0x03FF); /* just below that tie */
    CHECK_INT(kiln_f32_to_f16_rn(1.0f + 0x1p-11f), 0x3C00);
    CHECK_INT(kiln_f32_to_f16_rn(1.0f + 0x1.8p-10f), 0x3C02);
    CHECK(f16_is_nan(kiln_f32_to_f16_rn(NAN)));
    CHECK_INT(kiln_f32_to_bf16_rn(FLT_MAX), 0x7F80);
    CHECK_INT(kiln_f32_to_bf16_rn(0x1.fep127f), 0x7F7F);
    CHECK_INT(kiln_f32_to_bf16_rn(1.0f + 0x1p-8f), 0x3F80);
    CHECK_INT(kiln_f32_to_bf16_rn(1.0f + 0x1.8p-7f), 0x3F82);
    CHECK_INT(kiln_f32_to_bf16_rn(-0.0f), 0x8000);
    CHECK(bf16_is_nan(kiln_f32_to_bf16_rn(NAN)));
    CHECK(bf16_is_nan(kiln_f32_to_bf16_rn(-NAN)) && (kiln_f32_to_bf16_rn(-NAN) & 0x8000));
    /* a NaN whose payload lives only in the low bits stays NaN */
    uint32_t nb = 0x7F800001u;
    float nan_low;
    memcpy(&nan_low, &nb, 4);
    CHECK(bf16_is_nan(kiln_f32_to_bf16_rn(nan_low)));
    CHECK(f16_is_nan(kiln_f32_to_f16_rn(nan_low)));
    CHECK(f16_is_nan(kiln_f64_to_f16_rn(NAN)));
    CHECK(bf16_is_nan(kiln_f64_to_bf16_rn(NAN)));
    CHECK_INT(kiln_f64_to_f16_rn(1e300), 0x7C00);
    CHECK_INT(kiln_f64_to_f16_rn(-1e-300), 0x8000);
    CHECK_INT(kiln_f64_to_bf16_rn(1e39), 0x7F80);
    CHECK_INT(kiln_f64_to_bf16_rn(4.9e-324), 0x0000);
    /* double rounding would give 1.0 here (f32 rounds 1 + 2^-11 + 2^-40 to the tie) */
    CHECK_INT(kiln_f64_to_f16_rn(1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
    CHECK_INT(kiln_f64_to_bf16_rn(1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
}

/* ---- stochastic rounding --------------------------------------------------------------- */

/* Exact unbiasedness: the mean of SR over ALL values of the D random bits equals x. */
static void sr_exact_mean(float x, int bf, int D)
{
    double sum = 0;
    for (uint64_t r = 0; r < (1ull << D); r++) {
        kiln_u32 bits = (kiln_u32)(r << (32 - D));
        sum += bf ? bf16_value(kiln_f32_to_bf16_sr(x, bits)) : f16_value(kiln_f32_to_f16_sr(x, bits));
    }
    double mean = sum / (double)(1ull << D);
    if (mean != (double)x) fprintf(stderr, "SR %s exact mean of %a over 2^%d bits: %a\n", bf ? "bf16" : "f16", x, D, mean);
    CHECK(mean == (double)x);
}

static void test_sr(uint64_t *rs)
{
    /* f16 normal range: D = 13 */
    const float f16n[] = {1.0001f, 3.14159265f, -700.3f, 0.000123f, 65000.3f, -0x1.0p-14f * 1.7f};
    for (int i = 0; i < 6; i++) sr_exact_mean(f16n[i], 0, 13);
    /* f16 subnormal range: D = 13 + binades below 2^-14 */
    sr_exact_mean(0x1.37p-16f, 0, 13 + 2);
    sr_exact_mean(-0x1.f3p-20f, 0, 13 + 6);
    sr_exact_mean(0x1.5p-25f, 0, 13 + 11);
    /* bf16: D = 16 */
    const float bfv[] = {1.00123f, -3e-3f, 1e20f, 0x1.234568p-130f, -7.77e30f};
    for (int i = 0; i < 5; i++) sr_exact_mean(bfv[i], 1, 16);

    /* Sampled: many random words (the top bits vary) give a mean within a few standard
     * errors of x, while round-to-nearest is off by a fixed amount. */
    struct { float x; int bf; } cases[] = {
        {1.0f + 0x1p-10f * 0.3f, 0}, {0x1p-20f * 1.3f, 0}, {-2.5e-6f, 0}, {1.0f + 0x1p-7f * 0.3f, 1}, {-4096.7f, 1},
    };
    const int K = 1 << 16;
    for (int c = 0; c < 5; c++) {
        float x = cases[c].x;
        int bf = cases[c].bf;
        double sum = 0;
        for (int k = 0; k < K; k++) {
            kiln_u32 bits = kiln_rng_bits(99, (kiln_u64)c, (kiln_u64)k);
            sum += bf ? bf16_value(kiln_f32_to_bf16_sr(x, bits)) : f16_value(kiln_f32_to_f16_sr(x, bits));
        }
        double mean = sum / K;
        uint32_t lo = ref_round(x, bf ? 8 : 5, bf ? 7 : 10, 1);
        double vlo = bf ? bf16_value(lo) : f16_value(lo), vhi = bf ? bf16_value(lo + 1) : f16_value(lo + 1);
        double p = (fabs((double)x) - fabs(vlo)) / (fabs(vhi) - fabs(vlo));
        double se = fabs(vhi - vlo) * sqrt(p * (1 - p) / K);
        double rn = bf ? bf16_value(kiln_f32_to_bf16_rn(x)) : f16_value(kiln_f32_to_f16_rn(x));
        if (!(fabs(mean - x) <= 5 * se)) fprintf(stderr, "SR mean of %a: %a (se %g)\n", x, mean, se);
        CHECK(fabs(mean - x) <= 5 * se);
        CHECK(fabs(rn - x) > 20 * se); /* RN's error is systematic and much larger */
    }

    /* Every result is one of the two neighbours, and deterministic in the bits. */
    int bad = 0;
    for (int i = 0; i < 400000; i++) {
        float x;
        if (i & 1) {
            x = (float)check_uniform(rs, -66000.0, 66000.0);
        } else {
            x = (float)ldexp(check_uniform(rs, -1.0, 1.0), -(int)(check_rand_u64(rs) % 40));
        }
        kiln_u32 bits = (kiln_u32)(check_rand_u64(rs) >> 32);
        for (int bf = 0; bf < 2; bf++) {
            int eb = bf ? 8 : 5, mb = bf ? 7 : 10;
            uint32_t lo = ref_round(x, eb, mb, 1);
            uint32_t hi = ((lo & 0x7FFF) + 1) | (lo & 0x8000);
            uint32_t got = bf ? kiln_f32_to_bf16_sr(x, bits) : kiln_f32_to_f16_sr(x, bits);
            uint32_t again = bf ? kiln_f32_to_bf16_sr(x, bits) : kiln_f32_to_f16_sr(x, bits);
            double v = bf ? bf16_value(lo) : f16_value(lo);
            if (got != again) bad++;
            if ((lo & 0x7FFF) >= (bf ? 0x7F80u : 0x7C00u)) {
                if (got != lo) bad++; /* beyond the largest finite even when truncated: inf */
                continue;
            }
            if (v == (double)x) {
                if (got != lo) bad++; /* exact values are kept */
            } else if (got != lo && got != hi) {
                if (bad++ < 5) fprintf(stderr, "SR %s of %a gave %04x, neighbours %04x %04x\n", bf ? "bf16" : "f16", x, got, lo, hi);
            }
            /* bits 0 truncates; all-ones rounds up (unless exact) */
            uint32_t z = bf ? kiln_f32_to_bf16_sr(x, 0) : kiln_f32_to_f16_sr(x, 0);
            uint32_t o = bf ? kiln_f32_to_bf16_sr(x, 0xFFFFFFFFu) : kiln_f32_to_f16_sr(x, 0xFFFFFFFFu);
            if (z != lo) bad++;
            if (v != (double)x && o != hi && fabs((double)x) >= ldexp(1.0, -56)) bad++;
        }
    }
    CHECK_INT(bad, 0);

    /* Specials and overflow. */
    CHECK_INT(kiln_f32_to_f16_sr(70000.0f, 0), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_sr(-70000.0f, 0), 0xFC00);
    CHECK_INT(kiln_f32_to_f16_sr(65519.0f, 0), 0x7BFF);
    CHECK_INT(kiln_f32_to_f16_sr(65519.0f, 0xFFFFFFFFu), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_sr(65504.0f, 0xFFFFFFFFu), 0x7BFF);
    CHECK_INT(kiln_f32_to_f16_sr(INFINITY, 0x12345678u), 0x7C00);
    CHECK_INT(kiln_f32_to_f16_sr(-INFINITY, 0x12345678u), 0xFC00);
    CHECK(f16_is_nan(kiln_f32_to_f16_sr(NAN, 0xFFFFFFFFu)));
    CHECK_INT(kiln_f32_to_f16_sr(-0.0f, 0xFFFFFFFFu), 0x8000);
    CHECK_INT(kiln_f32_to_f16_sr(0x1p-30f, 0), 0x0000);
    CHECK_INT(kiln_f32_to_bf16_sr(FLT_MAX, 0xFFFFFFFFu), 0x7F80);
    CHECK_INT(kiln_f32_to_bf16_sr(FLT_MAX, 0), 0x7F7F);
    CHECK_INT(kiln_f32_to_bf16_sr(-INFINITY, 0xFFFFFFFFu), 0xFF80);
    CHECK(bf16_is_nan(kiln_f32_to_bf16_sr(NAN, 0xFFFFFFFFu)));
    CHECK_INT(kiln_f32_to_bf16_sr(-0.0f, 0xFFFFFFFFu), 0x8000);
    /* the top bits are the random value: bits below them do not matter */
    CHECK_INT(kiln_f32_to_bf16_sr(1.0f + 0x1p-8f, 0x7FFFFFFFu), 0x3F80);
    CHECK_INT(kiln_f32_to_bf16_sr(1.0f + 0x1p-8f, 0x80000000u), 0x3F81);
    CHECK_INT(kiln_f32_to_f16_sr(1.0f + 0x1p-11f, 0x7FFFFFFFu), 0x3C00);
    CHECK_INT(kiln_f32_to_f16_sr(1.0f + 0x1p-11f, 0x80000000u), 0x3C01);
}

/* The GEMM outputs' f16 rounding, kiln_f32_to_f16_sr13: kiln_f32_to_f16_sr from 2^-14 up and
 * for inf and NaN; below, floor((floor(|x| 2^37) + top 13 bits) / 2^13) units of 2^-24
 * (modelled here in double), which differs from kiln_f32_to_f16_sr only through the bits of
 * x below 2^-37 and the random bits below the top 13; its mean over the 2^13 random values is
 * |x| truncated to 2^-37, signed. */
static void test_sr13(uint64_t *rs)
{
    int bad = 0, differ = 0;
    for (int i = 0; i < 400000; i++) {
        float x;
        const uint64_t r = check_rand_u64(rs);
        switch (i % 4) {
        case 0: x = (float)ldexp(check_uniform(rs, 0.5, 1.0), -(int)(r % 40)); break;   /* 2^-40 .. 1 */
        case 1: x = (float)ldexp(check_uniform(rs, 0.5, 1.0), -14 - (int)(r % 11)); break; /* subnormal range */
        case 2: {
            const uint32_t u = (uint32_t)(r >> 32);
            memcpy(&x, &u, 4); /* any bit pattern */
            break;
        }
        default: x = (float)check_uniform(rs, -66000.0, 66000.0); break;
        }
        if (r & 1) x = -x;
        const kiln_u32 bits = (kiln_u32)check_rand_u64(rs);
        const uint32_t got = kiln_f32_to_f16_sr13(x, bits);
        uint32_t want;
        const double a = fabs((double)x);
        if (x != x || a >= 0x1p-14) {
            want = kiln_f32_to_f16_sr(x, bits);
            if (x != x ? !f16_is_nan((kiln_u16)got) || (got & 0x8000u) != (want & 0x8000u) : got != want) bad++;
            continue;
        }
        const double M = floor(a * 0x1p37); /* exact: a 23-bit integer */
        want = (signbit(x) ? 0x8000u : 0u) | (uint32_t)floor((M + (double)(bits >> 19)) / 8192.0);
        differ += want != kiln_f32_to_f16_sr(x, bits);
        if (got != want && bad++ < 5) fprintf(stderr, "SR13 of %a bits %08x: %04x want %04x\n", x, bits, got, want);
    }
    CHECK_INT(bad, 0);
    CHECK(differ > 0); /* the subnormal range's recipe is not kiln_f32_to_f16_sr's */
    /* the mean over every 13-bit value: |x| truncated to 2^-37 */
    const float xs[] = {0x1.37p-16f, -0x1.f3p-20f, 0x1.5p-25f, 0x1.fffffep-15f, 0x1.000002p-30f};
    for (int i = 0; i < 5; i++) {
        double sum = 0;
        for (uint32_t r = 0; r < 8192; r++) sum += f16_value(kiln_f32_to_f16_sr13(xs[i], r << 19));
        const double want = copysign(floor(fabs((double)xs[i]) * 0x1p37) * 0x1p-37, (double)xs[i]);
        if (sum / 8192 != want) fprintf(stderr, "SR13 mean of %a: %a want %a\n", xs[i], sum / 8192, want);
        CHECK(sum / 8192 == want);
    }
    CHECK_INT(kiln_f32_to_f16_sr13(-0.0f, 0xFFFFFFFFu), 0x8000);
    CHECK_INT(kiln_f32_to_f16_sr13(0x1p-40f, 0xFFFFFFFFu), 0x0000); /* below 2^-37: truncated to 0 */
    CHECK_INT(kiln_f32_to_f16_sr13(0x1p-37f, 0xFFFFFFFFu), 0x0001);
    CHECK_INT(kiln_f32_to_f16_sr13(0x1p-37f, 0xFFF00000u), 0x0000);
    CHECK_INT(kiln_f32_to_f16_sr13(0x1.ffcp-15f, 0xFFFFFFFFu), 0x0400); /* to 2^-14 */
    CHECK_INT(kiln_f32_to_f16_sr13(70000.0f, 0), 0x7C00);
}

int main(void)
{
    uint64_t seed = check_seed();
    uint64_t rs = seed;
    test_philox_kat();
    test_uniform_stats(seed);
    test_normal_stats(seed ^ 0x5555);
    test_bernoulli(seed ^ 0xAAAA);
    test_logf(&rs);
    test_cos2pif(&rs);
    test_16bit_exhaustive();
    test_rn_vs_reference(&rs);
    test_sr(&rs);
    test_sr13(&rs);
    return check_finish();
}
