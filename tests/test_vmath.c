/*
 * tests/test_vmath.c — tests of src/cpu/vmath.h, the CPU interpreter's f32 tanh, expm1 and log1p:
 * against libm's double functions rounded to float (the correctly rounded result but for
 * libm's own last-place errors in double) over a sweep of all float bit patterns and dense
 * runs where each function changes form (its series' threshold 2^-12, the denormals, tanh's
 * saturation, expm1's overflow and its -1 floor, log1p near -1); special values bit for bit
 * (signed zeros, infinities, NaN, log1p's -1 and below); and the interpreter's vectorized loop
 * (kiln_tanh / kiln_expm1 / kiln_log1p on the CPU backend) against the scalar functions called
 * one element at a time, bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/vmath.h"
#include "kiln.h"

typedef float (*f32fn)(float);
typedef double (*f64fn)(double);

/* the scalar functions behind pointers, so the compiler cannot vectorize their calls here */
static float vm_tanh(float x) { return kiln_vm_tanhf(x); }
static float vm_expm1(float x) { return kiln_vm_expm1f(x); }
static float vm_log1p(float x) { return kiln_vm_log1pf(x); }

static const struct {
    const char *name;
    f32fn mine;
    f64fn ref;
} fns[3] = {{"tanh", vm_tanh, tanh}, {"expm1", vm_expm1, expm1}, {"log1p", vm_log1p, log1p}};

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* distance in units in the last place between two finite floats of any signs */
static int64_t ulps(float a, float b)
{
    int64_t ia = (int32_t)to_bits(a), ib = (int32_t)to_bits(b);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return ia > ib ? ia - ib : ib - ia;
}

typedef struct {
    int64_t n, off1, off_more, nan_mismatch, zero_sign;
    float worst_x;
    int64_t worst;
} sweep_stats;

static void compare_one(int f, float x, sweep_stats *st)
{
    float got = fns[f].mine(x), want = (float)fns[f].ref((double)x);
    st->n++;
    if (isnan(got) || isnan(want)) {
        if (isnan(got) != isnan(want)) {
            if (st->nan_mismatch++ < 3) fprintf(stderr, "%s(%a): %a, want %a\n", fns[f].name, x, got, want);
        }
        return;
    }
    if (got == 0 && want == 0) {
        if (signbit(got) != signbit(want) && st->zero_sign++ < 3)
            fprintf(stderr, "%s(%a): %a, want %a (the zero's sign)\n", fns[f].name, x, got, want);
        return;
    }
    if (isinf(got) || isinf(want)) {
        if (got != want) st->off_more++;
        return;
    }
    int64_t d = ulps(got, want);
    if (d == 1) st->off1++;
    if (d > 1) st->off_more++;
    if (d > st->worst) {
        st->worst = d;
        st->worst_x = x;
    }
}

/* every float bit pattern with a stride, plus dense runs of consecutive floats around where
 * each function changes form */
static void test_sweep(void)
{
    static const float centres[] = {0x1p-12f, 0x1p-149f, 0x1p-126f, 1.0f, 9.01f, 20.0f, 88.72f, 17.33f, 0.5f, 1e-3f};
    for (int f = 0; f < 3; f++) {
        sweep_stats st = {0};
        for (uint64_t u = 0; u <= 0xffffffffull; u += 65521) compare_one(f, from_bits((uint32_t)u), &st);
        for (size_t c = 0; c < sizeof centres / sizeof centres[0]; c++)
            for (int s = 0; s < 2; s++) {
                uint32_t mid = to_bits(s ? -centres[c] : centres[c]);
                for (int64_t k = -3000; k <= 3000; k++) compare_one(f, from_bits((uint32_t)((int64_t)mid + k)), &st);
            }
        /* log1p near -1: the last 2^20 floats above -1 */
        if (f == 2)
            for (uint32_t k = 1; k <= (1u << 20); k++) compare_one(f, from_bits(to_bits(-1.0f) - k), &st);
        printf("%s: %lld values, %lld one ulp off, %lld more (worst %lld at %a)\n", fns[f].name, (long long)st.n,
               (long long)st.off1, (long long)st.off_more, (long long)st.worst, st.worst_x);
        CHECK_INT(st.off_more, 0);
        CHECK_INT(st.nan_mismatch, 0);
        CHECK_INT(st.zero_sign, 0);
        CHECK(st.off1 * 100000 <= st.n); /* within 1e-12 relative: one ulp off at most 1 in 10^5 */
    }
}

static void check_bits(const char *what, float x, float got, float want)
{
    int same = isnan(want) ? isnan(got) : to_bits(got) == to_bits(want);
    if (!same) fprintf(stderr, "%s(%a) = %a, want %a\n", what, x, got, want);
    CHECK(same);
}

static void test_specials(void)
{
    const float inf = INFINITY, nan = NAN;
    const float xs[] = {0.0f, -0.0f, inf, -inf, nan, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-30f, 3.4e38f, -3.4e38f};
    const float tanh_want[] = {0.0f, -0.0f, 1.0f, -1.0f, nan, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-30f, 1.0f, -1.0f};
    const float expm1_want[] = {0.0f, -0.0f, inf, -1.0f, nan, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-30f, inf, -1.0f};
    const float log1p_want[] = {0.0f, -0.0f, inf, nan, nan, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-30f, (float)log1p(3.4e38), nan};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        check_bits("tanh", xs[i], vm_tanh(xs[i]), tanh_want[i]);
        check_bits("expm1", xs[i], vm_expm1(xs[i]), expm1_want[i]);
        check_bits("log1p", xs[i], vm_log1p(xs[i]), log1p_want[i]);
    }
    check_bits("log1p", -1.0f, vm_log1p(-1.0f), -inf);
    check_bits("log1p", -1.5f, vm_log1p(-1.5f), nan);
    check_bits("expm1", 89.0f, vm_expm1(89.0f), inf);
    check_bits("expm1", -20.0f, vm_expm1(-20.0f), -1.0f);
}

/* the interpreter's loops (vectorized where the compiler can) against the scalar functions */
static void test_interpreter(uint64_t *rs)
{
    kiln_ctx *ctx = NULL;
    kiln_ctx_args args = {0};
    args.device = KILN_DEVICE_CPU;
    CHECK_OK(ctx, kiln_ctx_create(&ctx, &args));
    if (!ctx) return;
    const int64_t n = 100003;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = check_rand_u64(rs) % 4;
        x[i] = r == 0   ? (float)check_uniform(rs, -4, 4)
               : r == 1 ? (float)check_uniform(rs, -1e-3, 1e-3)
               : r == 2 ? from_bits((uint32_t)check_rand_u64(rs))
                        : (float)check_uniform(rs, -30, 100);
    }
    x[0] = -0.0f;
    x[1] = NAN;
    x[2] = -INFINITY;
    x[3] = -1.0f;
    kiln_tensor *t = NULL, *o = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 1, &n, x, KILN_DTYPE_F32, &t));
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, &n, 7.0, &o));
    kiln_expr *(*exprs[3])(kiln_expr *) = {kiln_tanh, kiln_expm1, kiln_log1p};
    for (int f = 0; f < 3 && t && o; f++) {
        CHECK_OK(ctx, kiln_assign(o, exprs[f](kiln_t(t))));
        CHECK_OK(ctx, kiln_tensor_read(o, y, KILN_DTYPE_F32));
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) {
            float want = fns[f].mine(x[i]);
            if (isnan(want) ? !isnan(y[i]) : to_bits(y[i]) != to_bits(want)) {
                if (bad++ < 3) fprintf(stderr, "interpreter %s(%a) = %a, scalar %a\n", fns[f].name, x[i], y[i], want);
            }
        }
        CHECK_INT(bad, 0);
    }
    kiln_tensor_release(t);
    kiln_tensor_release(o);
    free(x);
    free(y);
    kiln_ctx_destroy(ctx);
}

int main(void)
{
    uint64_t rs = check_seed();
    test_sweep();
    test_specials();
    test_interpreter(&rs);
    return check_finish();
}
