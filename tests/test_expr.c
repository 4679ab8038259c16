/*
 * tests/test_expr.c — lazy expressions through the public API: every operator and reduction
 * against an f64 reference computed here on host data (f32, f64, f16), broadcasting, views
 * as leaves and as destinations, in-place assignment, generators, dtype rules, every error
 * path of the builders and of kiln_assign / kiln_eval, and the ownership rules. The device
 * comes from the environment (KILN_DEVICE), so the same test runs on CUDA later.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"

/* Depth of a chain that is just under the builders' limit (4096, src/expr/expr.h). */
#define KILN_EXPR_DEPTH_TEST 4092

static kiln_ctx *ctx;
static uint64_t seed;

/* A tensor with its values (as stored, read back in f64) and its shape. */
typedef struct arr {
    kiln_tensor *t;
    double *h;
    int nd;
    int64_t shape[KILN_MAX_DIMS];
    int64_t n;
} arr;

static double *read_all(const kiln_tensor *t)
{
    int64_t n = kiln_tensor_numel(t);
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    CHECK_OK(ctx, kiln_tensor_read(t, h, KILN_DTYPE_F64));
    return h;
}

static arr from_host(kiln_dtype dt, int nd, const int64_t *shape, const double *v)
{
    arr a;
    memset(&a, 0, sizeof a);
    a.nd = nd;
    a.n = 1;
    for (int i = 0; i < nd; i++) {
        a.shape[i] = shape[i];
        a.n *= shape[i];
    }
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, nd, shape, v, KILN_DTYPE_F64, &a.t));
    a.h = read_all(a.t);
    return a;
}

/* Random values in [lo, hi); integer-valued when ints (so comparisons see ties). */
static arr mk(kiln_dtype dt, int nd, const int64_t *shape, double lo, double hi, int ints)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    check_fill(&seed, v, n, lo, hi);
    if (ints)
        for (int64_t i = 0; i < n; i++) v[i] = floor(v[i]);
    arr a = from_host(dt, nd, shape, v);
    free(v);
    return a;
}

static void arr_free(arr *a)
{
    kiln_tensor_release(a->t);
    free(a->h);
    a->t = NULL;
    a->h = NULL;
}

/* A destination filled with NaN (or a large sentinel for integer dtypes). */
static kiln_tensor *poisoned(kiln_dtype dt, int nd, const int64_t *shape)
{
    kiln_tensor *t = NULL;
    double v = (dt == KILN_DTYPE_I32 || dt == KILN_DTYPE_I8 || dt == KILN_DTYPE_U8) ? 77.0 : NAN;
    CHECK_OK(ctx, kiln_tensor_full(ctx, dt, nd, shape, v, &t));
    return t;
}

static double tol_of(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F64: return 1e-12;
    case KILN_DTYPE_F32: return 2e-5;
    case KILN_DTYPE_F16: return 2e-3;
    case KILN_DTYPE_BF16: return 1.6e-2;
    default: return 0;
    }
}

/* Flat index into a contiguous array of shape (nd_in, shape_in) of the output point idx
 * (rank nd_out), numpy broadcasting aligned right. */
static int64_t bidx(const int64_t *idx, int nd_out, int nd_in, const int64_t *shape_in)
{
    int64_t f = 0;
    for (int i = 0; i < nd_in; i++) {
        int j = i + nd_out - nd_in;
        f = f * shape_in[i] + (shape_in[i] == 1 ? 0 : idx[j]);
    }
    return f;
}

static void unflat(int64_t f, int nd, const int64_t *shape, int64_t *idx)
{
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = shape[i] ? f % shape[i] : 0;
        f = shape[i] ? f / shape[i] : 0;
    }
}

/* Compares got (n values) with ref, reporting the first few mismatches only. */
static int compare(const char *what, const double *got, const double *ref, int64_t n, double tol)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = fabs(ref[i]) > 1 ? fabs(ref[i]) : 1;
        int ok =
            fabs(got[i] - ref[i]) <= tol * s || (isnan(got[i]) && isnan(ref[i])) || (isinf(got[i]) && got[i] == ref[i]);
        if (!ok) {
            if (bad < 3)
                fprintf(stderr, "%s: [%lld] got %.17g, want %.17g (tol %g)\n", what, (long long)i, got[i], ref[i], tol);
            bad++;
        }
    }
    CHECK(bad == 0);
    return bad == 0;
}

/* ---- element-wise --------------------------------------------------------------------- */

typedef struct uop {
    const char *name;
    kiln_expr *(*fn)(kiln_expr *);
    double lo, hi;
    double (*ref)(double);
} uop;

static double r_neg(double x)
{
    return -x;
}
static double r_sqr(double x)
{
    return x * x;
}
static double r_rsqrt(double x)
{
    return 1 / sqrt(x);
}
static double r_recip(double x)
{
    return 1 / x;
}
static double r_sigmoid(double x)
{
    return 1 / (1 + exp(-x));
}
static double r_relu(double x)
{
    return x > 0 ? x : 0;
}
static double r_finite(double x)
{
    return isfinite(x) ? 1 : 0;
}
static double r_sign(double x)
{
    return x > 0 ? 1 : x < 0 ? -1 : 0;
}

static const uop uops[] = {
    {"neg", kiln_neg, -3, 3, r_neg},
    {"abs", kiln_abs, -3, 3, fabs},
    {"sqr", kiln_sqr, -3, 3, r_sqr},
    {"sqrt", kiln_sqrt, 0.1, 4, sqrt},
    {"rsqrt", kiln_rsqrt, 0.1, 4, r_rsqrt},
    {"reciprocal", kiln_reciprocal, 0.5, 4, r_recip},
    {"exp", kiln_exp, -3, 3, exp},
    {"exp2", kiln_exp2, -3, 3, exp2},
    {"log", kiln_log, 0.1, 4, log},
    {"log2", kiln_log2, 0.1, 4, log2},
    {"sigmoid", kiln_sigmoid, -4, 4, r_sigmoid},
    {"tanh", kiln_tanh, -3, 3, tanh},
    {"relu", kiln_relu, -3, 3, r_relu},
    {"finite", kiln_finite, -3, 3, r_finite},
    {"sign", kiln_sign, -3, 3, r_sign},
    {"log1p", kiln_log1p, -0.6, 4, log1p},
    {"expm1", kiln_expm1, -3, 3, expm1},
    {"sin", kiln_sin, -7, 7, sin},
    {"cos", kiln_cos, -7, 7, cos},
    {"erf", kiln_erf, -3, 3, erf},
    {"floor", kiln_floor, -5, 5, floor},
    {"ceil", kiln_ceil, -5, 5, ceil},
    {"rint", kiln_rint, -5, 5, rint},
    {"trunc", kiln_trunc, -5, 5, trunc},
};

static const kiln_dtype test_dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16};

/* The rounding functions at ties, signed zeros and the float edge, on every dtype they keep; log1p and expm1 where
 * log(1 + x) and exp(x) - 1 lose every digit. */
/* e (consumed), of dtype i32, assigned to a poisoned 1-D i32 tensor of n elements: exactly want. */
static void check_i32(const char *what, kiln_expr *e, const double *want, int64_t n)
{
    CHECK(kiln_expr_dtype(e) == KILN_DTYPE_I32);
    kiln_tensor *dst = poisoned(KILN_DTYPE_I32, 1, &n);
    CHECK_OK(ctx, kiln_assign(dst, e));
    double *got = read_all(dst);
    compare(what, got, want, n, 0);
    free(got);
    kiln_tensor_release(dst);
}

/* fmod at the signs (the result takes a's), a zero divisor and infinities (NaN; an infinite
 * divisor gives a back), a zero dividend (its sign kept), a huge quotient (exact, unlike
 * a - trunc(a / b) * b), and integers (a zero divisor stores 0). */
static void test_fmod_edges(void)
{
    const double av[10] = {5.5, -5.5, 5.5, -5.5, 1, -0.0, INFINITY, 3, NAN, 1e30};
    const double bv[10] = {2, 2, -2, -2, 0, 3, 2, INFINITY, 2, 3};
    int64_t n10[1] = {10};
    const kiln_dtype fdt[2] = {KILN_DTYPE_F32, KILN_DTYPE_F64};
    for (int d = 0; d < 2; d++) {
        arr a = from_host(fdt[d], 1, n10, av), b = from_host(fdt[d], 1, n10, bv);
        kiln_tensor *dst = poisoned(fdt[d], 1, n10);
        CHECK_OK(ctx, kiln_assign(dst, kiln_fmod(kiln_t(a.t), kiln_t(b.t))));
        double *got = read_all(dst), want[10];
        for (int i = 0; i < 10; i++) want[i] = fmod(a.h[i], b.h[i]); /* the stored operands: 1e30 in f32 */
        CHECK(want[0] == 1.5 && want[1] == -1.5 && want[2] == 1.5 && want[3] == -1.5 && isnan(want[4]));
        CHECK(want[5] == 0 && signbit(want[5]) && isnan(want[6]) && want[7] == 3 && isnan(want[8]));
        char what[64];
        snprintf(what, sizeof what, "fmod edges %s", kiln_dtype_name(fdt[d]));
        compare(what, got, want, 10, 0);
        for (int i = 0; i < 10; i++) CHECK(isnan(want[i]) || signbit(got[i]) == signbit(want[i]));
        free(got);
        kiln_tensor_release(dst);
        arr_free(&a);
        arr_free(&b);
    }
    const double ia[5] = {7, -7, 7, -7, 5}, ib[5] = {3, 3, -3, -3, 0}, iw[5] = {1, -1, 1, -1, 0};
    int64_t n5[1] = {5};
    arr a = from_host(KILN_DTYPE_I32, 1, n5, ia), b = from_host(KILN_DTYPE_I32, 1, n5, ib);
    check_i32("fmod i32", kiln_fmod(kiln_t(a.t), kiln_t(b.t)), iw, 5);
    arr_free(&a);
    arr_free(&b);
}

static void test_unary_edges(void)
{
    double tv[10] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.25, 0.75, 1099511627776.0, -7.0};
    double want_rint[10] = {-2, -2, -0.0, 0, 2, 2, -0.0, 1, 1099511627776.0, -7};
    double want_floor[10] = {-3, -2, -1, 0, 1, 2, -1, 0, 1099511627776.0, -7};
    double want_ceil[10] = {-2, -1, -0.0, 1, 2, 3, -0.0, 1, 1099511627776.0, -7};
    double want_trunc[10] = {-2, -1, -0.0, 0, 1, 2, -0.0, 0, 1099511627776.0, -7};
    int64_t n10[1] = {10};
    const kiln_dtype fdt[2] = {KILN_DTYPE_F32, KILN_DTYPE_F64};
    struct {
        const char *name;
        kiln_expr *(*fn)(kiln_expr *);
        const double *want;
    } r[4] = {{"rint", kiln_rint, want_rint}, {"floor", kiln_floor, want_floor}, {"ceil", kiln_ceil, want_ceil},
              {"trunc", kiln_trunc, want_trunc}};
    for (int d = 0; d < 2; d++) {
        arr x = from_host(fdt[d], 1, n10, tv);
        kiln_tensor *dst = poisoned(fdt[d], 1, n10);
        for (int f = 0; f < 4; f++) {
            CHECK_OK(ctx, kiln_assign(dst, r[f].fn(kiln_t(x.t))));
            double *got = read_all(dst);
            char what[64];
            snprintf(what, sizeof what, "%s ties %s", r[f].name, kiln_dtype_name(fdt[d]));
            compare(what, got, r[f].want, 10, 0);
            for (int i = 0; i < 10; i++) CHECK(signbit(got[i]) == signbit(r[f].want[i])); /* -0 where it is due */
            free(got);
        }
        kiln_tensor_release(dst);
        arr_free(&x);
    }
    /* Integers stay integers and keep their value. */
    double iv[5] = {-7, -1, 0, 3, 120};
    int64_t n5[1] = {5};
    arr xi = from_host(KILN_DTYPE_I32, 1, n5, iv);
    for (int f = 0; f < 4; f++) check_i32("rounding i32", r[f].fn(kiln_t(xi.t)), iv, 5);
    kiln_expr *es = kiln_sin(kiln_t(xi.t));
    CHECK(kiln_expr_dtype(es) == KILN_DTYPE_F32);
    kiln_expr_release(es);
    arr_free(&xi);
    /* Near 0: relative error within f32's, where the naive forms give 0 or 1e-7-sized garbage. */
    double sv[4] = {1e-10, -3e-9, 2.5e-7, 1e-30};
    int64_t n4[1] = {4};
    arr xs = from_host(KILN_DTYPE_F32, 1, n4, sv);
    kiln_tensor *dst = poisoned(KILN_DTYPE_F32, 1, n4);
    kiln_expr *(*near0[2])(kiln_expr *) = {kiln_log1p, kiln_expm1};
    double (*ref0[2])(double) = {log1p, expm1};
    for (int f = 0; f < 2; f++) {
        CHECK_OK(ctx, kiln_assign(dst, near0[f](kiln_t(xs.t))));
        double *got = read_all(dst);
        for (int i = 0; i < 4; i++) {
            double want = ref0[f](xs.h[i]);
            if (!(fabs(got[i] - want) <= 2e-7 * fabs(want)))
                fprintf(stderr, "%s near 0: [%d] got %.9g, want %.9g\n", f ? "expm1" : "log1p", i, got[i], want);
            CHECK(fabs(got[i] - want) <= 2e-7 * fabs(want));
        }
        free(got);
    }
    kiln_tensor_release(dst);
    arr_free(&xs);
    test_fmod_edges();
}

static void test_unary(void)
{
    int64_t s[2] = {7, 13};
    for (size_t d = 0; d < sizeof test_dtypes / sizeof test_dtypes[0]; d++) {
        kiln_dtype dt = test_dtypes[d];
        for (size_t u = 0; u < sizeof uops / sizeof uops[0]; u++) {
            arr x = mk(dt, 2, s, uops[u].lo, uops[u].hi, 0);
            kiln_tensor *dst = poisoned(dt, 2, s);
            CHECK_OK(ctx, kiln_assign(dst, uops[u].fn(kiln_t(x.t))));
            double *got = read_all(dst), *ref = malloc((size_t)x.n * sizeof *ref);
            for (int64_t i = 0; i < x.n; i++) ref[i] = uops[u].ref(x.h[i]);
            char what[64];
            snprintf(what, sizeof what, "%s %s", uops[u].name, kiln_dtype_name(dt));
            compare(what, got, ref, x.n, tol_of(dt));
            free(got);
            free(ref);
            kiln_tensor_release(dst);
            arr_free(&x);
        }
    }
    /* finite and sign at the special values. */
    double sv[6] = {INFINITY, -INFINITY, NAN, 0.0, -2.5, 3.0};
    int64_t n6[1] = {6};
    arr x = from_host(KILN_DTYPE_F32, 1, n6, sv);
    kiln_tensor *dst = poisoned(KILN_DTYPE_F32, 1, n6);
    CHECK_OK(ctx, kiln_assign(dst, kiln_finite(kiln_t(x.t))));
    double *got = read_all(dst);
    double want_f[6] = {0, 0, 0, 1, 1, 1};
    compare("finite special", got, want_f, 6, 0);
    free(got);
    CHECK_OK(ctx, kiln_assign(dst, kiln_sign(kiln_add(kiln_t(x.t), kiln_scalar(0)))));
    got = read_all(dst);
    CHECK(got[0] == 1 && got[1] == -1 && got[3] == 0 && got[4] == -1 && got[5] == 1);
    free(got);
    kiln_tensor_release(dst);
    arr_free(&x);
    test_unary_edges();
}

typedef struct bop {
    const char *name;
    kiln_expr *(*fn)(kiln_expr *, kiln_expr *);
    double alo, ahi, blo, bhi;
    int ints;
    double (*ref)(double, double);
} bop;

static double r_add(double a, double b)
{
    return a + b;
}
static double r_sub(double a, double b)
{
    return a - b;
}
static double r_mul(double a, double b)
{
    return a * b;
}
static double r_div(double a, double b)
{
    return a / b;
}
static double r_max(double a, double b)
{
    return a > b ? a : b;
}
static double r_min(double a, double b)
{
    return a < b ? a : b;
}
static double r_eq(double a, double b)
{
    return a == b;
}
static double r_ne(double a, double b)
{
    return a != b;
}
static double r_lt(double a, double b)
{
    return a < b;
}
static double r_le(double a, double b)
{
    return a <= b;
}
static double r_gt(double a, double b)
{
    return a > b;
}
static double r_ge(double a, double b)
{
    return a >= b;
}

static const bop bops[] = {
    {"add", kiln_add, -3, 3, -3, 3, 0, r_add},
    {"sub", kiln_sub, -3, 3, -3, 3, 0, r_sub},
    {"mul", kiln_mul, -3, 3, -3, 3, 0, r_mul},
    {"div", kiln_div, -3, 3, 0.5, 2, 0, r_div},
    {"pow", kiln_pow, 0.1, 3, -2, 2, 0, pow},
    {"fmod", kiln_fmod, -7, 7, 0.3, 2, 0, fmod},
    {"maximum", kiln_maximum, -3, 3, -3, 3, 1, r_max},
    {"minimum", kiln_minimum, -3, 3, -3, 3, 1, r_min},
    {"eq", kiln_eq, -2, 2, -2, 2, 1, r_eq},
    {"ne", kiln_ne, -2, 2, -2, 2, 1, r_ne},
    {"lt", kiln_lt, -2, 2, -2, 2, 1, r_lt},
    {"le", kiln_le, -2, 2, -2, 2, 1, r_le},
    {"gt", kiln_gt, -2, 2, -2, 2, 1, r_gt},
    {"ge", kiln_ge, -2, 2, -2, 2, 1, r_ge},
};

static void test_binary(void)
{
    /* a (4, 1, 7) with b (3, 7) broadcast to (4, 3, 7). */
    int64_t sa[3] = {4, 1, 7}, sb[2] = {3, 7}, so[3] = {4, 3, 7};
    for (size_t d = 0; d < sizeof test_dtypes / sizeof test_dtypes[0]; d++) {
        kiln_dtype dt = test_dtypes[d];
        for (size_t o = 0; o < sizeof bops / sizeof bops[0]; o++) {
            arr a = mk(dt, 3, sa, bops[o].alo, bops[o].ahi, bops[o].ints);
            arr b = mk(dt, 2, sb, bops[o].blo, bops[o].bhi, bops[o].ints);
            kiln_tensor *dst = poisoned(dt, 3, so);
            kiln_expr *e = bops[o].fn(kiln_t(a.t), kiln_t(b.t));
            CHECK_INT(kiln_expr_ndim(e), 3);
            CHECK(kiln_expr_shape(e)[1] == 3);
            CHECK_INT(kiln_expr_dtype(e), dt);
            CHECK_OK(ctx, kiln_assign(dst, e));
            double *got = read_all(dst), ref[84];
            for (int64_t i = 0; i < 84; i++) {
                int64_t idx[3];
                unflat(i, 3, so, idx);
                ref[i] = bops[o].ref(a.h[bidx(idx, 3, 3, sa)], b.h[bidx(idx, 3, 2, sb)]);
            }
            char what[64];
            snprintf(what, sizeof what, "%s %s", bops[o].name, kiln_dtype_name(dt));
            compare(what, got, ref, 84, tol_of(dt));
            free(got);
            kiln_tensor_release(dst);
            arr_free(&a);
            arr_free(&b);
        }
    }
    /* where, clip, cast, scalars on either side, a chain of everything. */
    int64_t s[2] = {5, 9};
    arr c = mk(KILN_DTYPE_F32, 2, s, 0, 2, 1), a = mk(KILN_DTYPE_F32, 2, s, -3, 3, 0);
    arr b = mk(KILN_DTYPE_F32, 2, s, -3, 3, 0);
    kiln_tensor *dst = poisoned(KILN_DTYPE_F32, 2, s);
    double *got, ref[45];
    CHECK_OK(ctx, kiln_assign(dst, kiln_where(kiln_t(c.t), kiln_t(a.t), kiln_t(b.t))));
    got = read_all(dst);
    for (int i = 0; i < 45; i++) ref[i] = c.h[i] != 0 ? a.h[i] : b.h[i];
    compare("where", got, ref, 45, 0);
    free(got);
    CHECK_OK(ctx, kiln_assign(dst, kiln_clip(kiln_t(a.t), -0.5, 0.7)));
    got = read_all(dst);
    for (int i = 0; i < 45; i++) ref[i] = a.h[i] < -0.5 ? -0.5 : a.h[i] > 0.7 ? 0.7 : a.h[i];
    compare("clip", got, ref, 45, 1e-7);
    free(got);
    /* cast to f16 rounds like a store to f16; cast to i32 truncates. */
    kiln_tensor *h16 = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F16, 2, s, a.h, KILN_DTYPE_F64, &h16));
    double *r16 = read_all(h16);
    kiln_expr *ce = kiln_cast(kiln_t(a.t), KILN_DTYPE_F16);
    CHECK_INT(kiln_expr_dtype(ce), KILN_DTYPE_F16);
    CHECK_OK(ctx, kiln_assign(dst, ce));
    got = read_all(dst);
    compare("cast f16", got, r16, 45, 0);
    free(got);
    free(r16);
    kiln_tensor_release(h16);
    CHECK_OK(ctx, kiln_assign(dst, kiln_cast(kiln_mul(kiln_t(a.t), kiln_scalar(2)), KILN_DTYPE_I32)));
    got = read_all(dst);
    for (int i = 0; i < 45; i++) ref[i] = trunc(a.h[i] * 2);
    compare("cast i32", got, ref, 45, 0);
    free(got);
    CHECK_OK(ctx, kiln_assign(dst, kiln_sub(kiln_scalar(1), kiln_div(kiln_t(a.t), kiln_scalar(4)))));
    got = read_all(dst);
    for (int i = 0; i < 45; i++) ref[i] = 1 - a.h[i] / 4;
    compare("scalar left", got, ref, 45, 2e-6);
    free(got);
    /* A scalar expression assigned into a tensor fills it. */
    CHECK_OK(ctx, kiln_assign(dst, kiln_mul(kiln_scalar(3), kiln_scalar(0.5))));
    got = read_all(dst);
    for (int i = 0; i < 45; i++) ref[i] = 1.5;
    compare("scalar fill", got, ref, 45, 0);
    free(got);
    kiln_tensor_release(dst);
    arr_free(&a);
    arr_free(&b);
    arr_free(&c);
}

/* ---- reductions ----------------------------------------------------------------------- */

/* Reference reduction of x (contiguous, shape sh, rank nd) over mask into out (keepdims
 * layout, row-major). */
static void ref_reduce(kiln_reduce_op op, const double *x, int nd, const int64_t *sh, uint32_t mask, double *out)
{
    int64_t osh[KILN_MAX_DIMS], n = 1, on = 1, rn = 1;
    for (int i = 0; i < nd; i++) {
        osh[i] = (mask >> i) & 1u ? 1 : sh[i];
        n *= sh[i];
        on *= osh[i];
        if ((mask >> i) & 1u) rn *= sh[i];
    }
    double *sum = calloc((size_t)on, sizeof *sum), *sq = calloc((size_t)on, sizeof *sq);
    double *best = malloc((size_t)on * sizeof *best), *prod = malloc((size_t)on * sizeof *prod);
    for (int64_t o = 0; o < on; o++) prod[o] = 1;
    int64_t *bi = calloc((size_t)on, sizeof *bi), *cnt = calloc((size_t)on, sizeof *cnt);
    for (int64_t o = 0; o < on; o++) best[o] = NAN;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t f = 0; f < n; f++) {
            int64_t idx[KILN_MAX_DIMS], o = 0, r = 0;
            unflat(f, nd, sh, idx);
            for (int i = 0; i < nd; i++) {
                o = o * osh[i] + ((mask >> i) & 1u ? 0 : idx[i]);
                if ((mask >> i) & 1u) r = r * sh[i] + idx[i];
            }
            double v = x[f];
            if (pass == 0) {
                sum[o] += v;
                prod[o] *= v;
                int better =
                    isnan(best[o]) || (op == KILN_REDUCE_MIN || op == KILN_REDUCE_ARGMIN ? v < best[o] : v > best[o]);
                if (better) {
                    best[o] = v;
                    bi[o] = r;
                }
                cnt[o]++;
            } else {
                double d = v - sum[o] / (double)rn;
                sq[o] += d * d;
            }
        }
    }
    for (int64_t o = 0; o < on; o++) {
        switch (op) {
        case KILN_REDUCE_SUM: out[o] = sum[o]; break;
        case KILN_REDUCE_MEAN: out[o] = sum[o] / (double)rn; break;
        case KILN_REDUCE_MAX:
        case KILN_REDUCE_MIN: out[o] = best[o]; break;
        case KILN_REDUCE_VAR: out[o] = sq[o] / (double)rn; break;
        case KILN_REDUCE_STD: out[o] = sqrt(sq[o] / (double)rn); break;
        case KILN_REDUCE_PROD: out[o] = prod[o]; break;
        default: out[o] = (double)bi[o]; break;
        }
    }
    free(prod);
    free(sum);
    free(sq);
    free(best);
    free(bi);
    free(cnt);
}

static void test_reductions(void)
{
    int64_t sh[3] = {5, 7, 3};
    static const char *const opn[] = {"sum", "mean", "max", "min", "var", "std", "argmax", "argmin", "prod"};
    struct {
        int naxes;
        int axes[3];
        uint32_t mask;
    } sets[] = {
        {1, {1}, 0x2}, {1, {-1}, 0x4},       {2, {0, 2}, 0x5}, {2, {2, 0}, 0x5},
        {0, {0}, 0x7}, {3, {-3, 1, 2}, 0x7}, {1, {0}, 0x1},
    };
    for (size_t d = 0; d < sizeof test_dtypes / sizeof test_dtypes[0]; d++) {
        kiln_dtype dt = test_dtypes[d];
        /* products of up to 105 factors near 1 (either sign), so they neither vanish nor overflow */
        arr x = mk(dt, 3, sh, -2, 2, 0), xp = mk(dt, 3, sh, 0.8, 1.25, 0);
        for (int64_t i = 0; i < xp.n; i += 7) xp.h[i] = -xp.h[i];
        kiln_tensor *xpt = NULL;
        CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 3, sh, xp.h, KILN_DTYPE_F64, &xpt));
        for (int op = 0; op < KILN_REDUCE_COUNT; op++) {
            const arr *src = op == KILN_REDUCE_PROD ? &xp : &x;
            kiln_tensor *srct = op == KILN_REDUCE_PROD ? xpt : x.t;
            for (size_t si = 0; si < sizeof sets / sizeof sets[0]; si++) {
                for (int keep = 0; keep < 2; keep++) {
                    uint32_t m = sets[si].mask;
                    int64_t osh[3];
                    int ond = 0;
                    for (int i = 0; i < 3; i++) {
                        if (!((m >> i) & 1u))
                            osh[ond++] = sh[i];
                        else if (keep)
                            osh[ond++] = 1;
                    }
                    int isarg = op == KILN_REDUCE_ARGMAX || op == KILN_REDUCE_ARGMIN;
                    kiln_dtype odt = isarg ? KILN_DTYPE_I32 : dt;
                    kiln_expr *e = kiln_reduce((kiln_reduce_op)op, kiln_t(srct), sets[si].naxes,
                                               sets[si].naxes ? sets[si].axes : NULL, keep);
                    CHECK_INT(kiln_expr_status(e, NULL), KILN_OK);
                    CHECK_INT(kiln_expr_ndim(e), ond);
                    CHECK_INT(kiln_expr_dtype(e), odt);
                    kiln_tensor *dst = poisoned(odt, ond, osh);
                    CHECK_OK(ctx, kiln_assign(dst, e));
                    double *got = read_all(dst), ref[105];
                    ref_reduce((kiln_reduce_op)op, src->h, 3, sh, m, ref);
                    char what[96];
                    snprintf(what, sizeof what, "%s %s axes-set %d keepdims %d", opn[op], kiln_dtype_name(dt), (int)si,
                             keep);
                    compare(what, got, ref, kiln_tensor_numel(dst), isarg ? 0 : tol_of(dt) * 4);
                    free(got);
                    kiln_tensor_release(dst);
                }
            }
        }
        kiln_tensor_release(xpt);
        arr_free(&xp);
        arr_free(&x);
    }
    /* Reductions over an axis of size 1 (and a row of one element). */
    int64_t s1[3] = {5, 1, 3};
    arr y = mk(KILN_DTYPE_F32, 3, s1, -2, 2, 0);
    for (int op = 0; op < KILN_REDUCE_COUNT; op++) {
        int isarg = op == KILN_REDUCE_ARGMAX || op == KILN_REDUCE_ARGMIN;
        kiln_tensor *yd = poisoned(isarg ? KILN_DTYPE_I32 : KILN_DTYPE_F32, 3, s1);
        int ax1 = 1;
        CHECK_OK(ctx, kiln_assign(yd, kiln_sub(kiln_reduce((kiln_reduce_op)op, kiln_t(y.t), 1, &ax1, 1),
                                               kiln_mul(kiln_t(y.t), kiln_scalar(0)))));
        double *yg = read_all(yd), yr[15];
        ref_reduce((kiln_reduce_op)op, y.h, 3, s1, 0x2, yr);
        compare(opn[op], yg, yr, 15, 1e-6);
        free(yg);
        kiln_tensor_release(yd);
    }
    arr_free(&y);
    /* Empty tensors: a sum over an empty axis is 0; an empty destination is left alone. */
    int64_t se[2] = {3, 0}, s3z[1] = {3};
    kiln_tensor *ez = NULL, *ed = poisoned(KILN_DTYPE_F32, 1, s3z), *ee = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, se, &ez));
    int ax_e = 1;
    CHECK_OK(ctx, kiln_assign(ed, kiln_reduce(KILN_REDUCE_SUM, kiln_t(ez), 1, &ax_e, 0)));
    double *eg = read_all(ed);
    CHECK(eg[0] == 0 && eg[1] == 0 && eg[2] == 0);
    free(eg);
    /* max and min give their identities; argmax and argmin have no index to give */
    CHECK_OK(ctx, kiln_assign(ed, kiln_reduce(KILN_REDUCE_MAX, kiln_t(ez), 1, &ax_e, 0)));
    eg = read_all(ed);
    CHECK(eg[0] == -INFINITY && eg[1] == -INFINITY && eg[2] == -INFINITY);
    free(eg);
    CHECK_OK(ctx, kiln_assign(ed, kiln_reduce(KILN_REDUCE_MIN, kiln_t(ez), 1, &ax_e, 0)));
    eg = read_all(ed);
    CHECK(eg[0] == INFINITY && eg[1] == INFINITY && eg[2] == INFINITY);
    free(eg);
    CHECK_OK(ctx, kiln_assign(ed, kiln_reduce(KILN_REDUCE_PROD, kiln_t(ez), 1, &ax_e, 0))); /* the empty product */
    eg = read_all(ed);
    CHECK(eg[0] == 1 && eg[1] == 1 && eg[2] == 1);
    free(eg);
    kiln_tensor *ei = poisoned(KILN_DTYPE_I32, 1, s3z);
    CHECK_FAILS(ctx, kiln_assign(ei, kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(ez), 1, &ax_e, 0)), KILN_ERR_SHAPE,
                "empty along reduced axis 1");
    CHECK_FAILS(ctx, kiln_assign(ei, kiln_argmin(kiln_t(ez), -1)), KILN_ERR_SHAPE, "argmin has no index");
    kiln_tensor *e0 = NULL;
    CHECK_FAILS(ctx, kiln_eval(ctx, kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(ez), 0, NULL, 0), KILN_DTYPE_AUTO, &e0),
                KILN_ERR_SHAPE, "(3, 0)");
    CHECK(e0 == NULL);
    /* an argmax along the axis that is not empty: an empty result, no error */
    int ax_0 = 0;
    int64_t zero = 0;
    kiln_tensor *ei0 = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_I32, 1, &zero, &ei0));
    CHECK_OK(ctx, kiln_assign(ei0, kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(ez), 1, &ax_0, 0)));
    kiln_tensor_release(ei0);
    kiln_tensor_release(ei);
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, se, &ee));
    CHECK_OK(ctx, kiln_assign(ee, kiln_exp(kiln_t(ez))));
    kiln_tensor_release(ez);
    kiln_tensor_release(ed);
    kiln_tensor_release(ee);
    /* Shorthands keep the axis; mean broadcasts back; a reduction of a rank-0 value. */
    int64_t s2[2] = {6, 129};
    arr a = mk(KILN_DTYPE_F32, 2, s2, -2, 2, 0);
    kiln_tensor *dst = poisoned(KILN_DTYPE_F32, 2, s2);
    CHECK_OK(ctx, kiln_assign(dst, kiln_sub(kiln_t(a.t), kiln_mean(kiln_t(a.t), 0))));
    double *got = read_all(dst), *ref = malloc(sizeof(double) * 6 * 129), mref[129];
    ref_reduce(KILN_REDUCE_MEAN, a.h, 2, s2, 0x1, mref);
    for (int i = 0; i < 6 * 129; i++) ref[i] = a.h[i] - mref[i % 129];
    compare("x - mean(x, 0)", got, ref, 6 * 129, 1e-5);
    free(got);
    /* Mixed axes (more than one kernel, same numbers). */
    double rref[6];
    ref_reduce(KILN_REDUCE_MAX, a.h, 2, s2, 0x2, rref);
    CHECK_OK(ctx,
             kiln_assign(dst, kiln_add(kiln_sub(kiln_t(a.t), kiln_mean(kiln_t(a.t), 0)), kiln_max(kiln_t(a.t), -1))));
    got = read_all(dst);
    for (int i = 0; i < 6 * 129; i++) ref[i] = a.h[i] - mref[i % 129] + rref[i / 129];
    compare("mixed axes", got, ref, 6 * 129, 1e-5);
    free(got);
    /* sum(x, 1) broadcast into a larger destination (the reduction is materialized). */
    int64_t s3[3] = {2, 6, 129};
    kiln_tensor *big = poisoned(KILN_DTYPE_F32, 3, s3);
    double sref[6];
    ref_reduce(KILN_REDUCE_SUM, a.h, 2, s2, 0x2, sref);
    CHECK_OK(ctx, kiln_assign(big, kiln_mul(kiln_t(a.t), kiln_sum(kiln_t(a.t), 1))));
    got = read_all(big);
    int bad = 0;
    for (int i = 0; i < 2 * 6 * 129; i++) {
        int j = i % (6 * 129);
        double r = a.h[j] * sref[j / 129];
        if (fabs(got[i] - r) > 1e-4 * (fabs(r) > 1 ? fabs(r) : 1)) bad++;
    }
    CHECK_INT(bad, 0);
    free(got);
    kiln_tensor_release(big);
    /* A keepdims=0 reduction used against an axis it does not line up with. */
    int64_t s4[2] = {129, 6};
    kiln_tensor *tr = poisoned(KILN_DTYPE_F32, 2, s4);
    int ax = 1;
    CHECK_OK(ctx, kiln_assign(tr, kiln_add(kiln_scalar(1), kiln_reduce(KILN_REDUCE_SUM, kiln_t(a.t), 1, &ax, 0))));
    got = read_all(tr);
    bad = 0;
    for (int i = 0; i < 129 * 6; i++)
        if (fabs(got[i] - (1 + sref[i % 6])) > 1e-4 * fabs(1 + sref[i % 6]) + 1e-5) bad++;
    CHECK_INT(bad, 0);
    free(got);
    kiln_tensor_release(tr);
    /* A reduction of a rank-0 tensor is the identity (arg*: 0). */
    double v = 2.5;
    arr z = from_host(KILN_DTYPE_F32, 0, NULL, &v);
    kiln_tensor *zd = poisoned(KILN_DTYPE_F32, 0, NULL);
    CHECK_OK(ctx, kiln_assign(zd, kiln_reduce(KILN_REDUCE_SUM, kiln_t(z.t), 0, NULL, 0)));
    got = read_all(zd);
    CHECK(got[0] == 2.5);
    free(got);
    CHECK_OK(ctx, kiln_assign(zd, kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(z.t), 0, NULL, 1)));
    got = read_all(zd);
    CHECK(got[0] == 0);
    free(got);
    CHECK_OK(ctx, kiln_assign(zd, kiln_reduce(KILN_REDUCE_VAR, kiln_t(z.t), 0, NULL, 1)));
    got = read_all(zd);
    CHECK(got[0] == 0);
    free(got);
    kiln_tensor_release(zd);
    arr_free(&z);
    free(ref);
    kiln_tensor_release(dst);
    arr_free(&a);
}

/* The variance in one pass (Welford's update, Chan's merges) and in two (KILN_VAR_PASSES=1,
 * =2, and unset: the backend's default): columns that defeat a one-pass sum of squares or a
 * shift by the first value, against the two-pass value in f64 of the same stored data: zeros
 * with one 1 in the first row, 1e4 plus noise, noise behind a first row of 1000, a 2-D tensor
 * reduced along either axis, std, and a NaN, an infinity and an empty axis (NaN, as the
 * two-pass form gives); a bad KILN_VAR_PASSES names the variable. */
static void test_variance_passes(const char *passes);
static void test_variance_one_pass(void)
{
    static const char *const settings[] = {NULL, "1", "2"};
    for (int s = 0; s < 3; s++) {
        if (settings[s])
            setenv("KILN_VAR_PASSES", settings[s], 1);
        else
            unsetenv("KILN_VAR_PASSES");
        test_variance_passes(settings[s]);
    }
    setenv("KILN_VAR_PASSES", "one", 1);
    int64_t sh[2] = {4, 4}, four = 4;
    arr a = mk(KILN_DTYPE_F32, 2, sh, -1, 1, 0);
    kiln_tensor *d = poisoned(KILN_DTYPE_F32, 1, &four);
    int ax = 0;
    CHECK_FAILS(ctx, kiln_assign(d, kiln_reduce(KILN_REDUCE_VAR, kiln_t(a.t), 1, &ax, 0)), KILN_ERR_ARG,
                "KILN_VAR_PASSES");
    kiln_tensor_release(d);
    arr_free(&a);
    unsetenv("KILN_VAR_PASSES");
}

static void test_variance_passes(const char *passes)
{
    const int64_t n = 5000;
    for (int axis = 0; axis < 2; axis++) {
        int64_t shape[2] = {axis == 0 ? n : 5, axis == 0 ? 5 : n};
        double *v = malloc((size_t)(5 * n) * sizeof *v);
        check_fill(&seed, v, 5 * n, -1, 1);
        for (int64_t r = 0; r < n; r++)
            for (int c = 0; c < 5; c++) {
                double *e = axis == 0 ? &v[r * 5 + c] : &v[c * n + r];
                if (c == 0) *e = r == 0 ? 1.0 : 0.0;
                if (c == 1) *e += 1e4;
                if (c == 2 && r == 0) *e = 1000.0;
                if (c == 3 && r == n / 2) *e = NAN;
                if (c == 4 && r == 7) *e = INFINITY;
            }
        arr a = from_host(KILN_DTYPE_F32, 2, shape, v);
        free(v);
        int64_t one = 5;
        for (int sd = 0; sd < 2; sd++) {
            kiln_tensor *d = poisoned(KILN_DTYPE_F32, 1, &one);
            CHECK_OK(ctx, kiln_assign(d, kiln_reduce(sd ? KILN_REDUCE_STD : KILN_REDUCE_VAR, kiln_t(a.t), 1, &axis, 0)));
            double *got = read_all(d);
            for (int c = 0; c < 5; c++) {
                double m = 0, q = 0;
                for (int64_t r = 0; r < n; r++) m += a.h[axis == 0 ? r * 5 + c : c * n + r];
                m /= (double)n;
                for (int64_t r = 0; r < n; r++) {
                    const double e = a.h[axis == 0 ? r * 5 + c : c * n + r] - m;
                    q += e * e;
                }
                double want = q / (double)n;
                if (sd) want = sqrt(want);
                if (c >= 3) { /* a NaN or an infinity in the column: NaN */
                    if (!isnan(got[c]))
                        fprintf(stderr, "  var (passes %s) axis %d column %d: %g, want NaN\n", passes ? passes : "default",
                                axis, c, got[c]);
                    CHECK(isnan(got[c]));
                    continue;
                }
                const double tol = c == 1 ? 2e-3 : 1e-4, err = fabs(got[c] - want) / want;
                if (!(err <= tol))
                    fprintf(stderr, "  %s (passes %s) axis %d column %d: %.9g, want %.9g (rel %.2g)\n", sd ? "std" : "var",
                            passes ? passes : "default", axis, c, got[c], want, err);
                CHECK(err <= tol);
            }
            free(got);
            kiln_tensor_release(d);
        }
        arr_free(&a);
    }
    /* an empty reduced axis: NaN a column */
    int64_t es[2] = {0, 3}, three = 3;
    kiln_tensor *e = NULL, *d = poisoned(KILN_DTYPE_F32, 1, &three);
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, es, &e));
    int ax0 = 0;
    CHECK_OK(ctx, kiln_assign(d, kiln_reduce(KILN_REDUCE_VAR, kiln_t(e), 1, &ax0, 0)));
    double *got = read_all(d);
    for (int c = 0; c < 3; c++) CHECK(isnan(got[c]));
    free(got);
    kiln_tensor_release(d);
    kiln_tensor_release(e);
}

/* ---- views, in place ------------------------------------------------------------------ */

static void test_views(void)
{
    int64_t s[2] = {6, 8};
    arr a = mk(KILN_DTYPE_F32, 2, s, -2, 2, 0);
    kiln_tensor *at = NULL, *sl = NULL;
    CHECK_OK(ctx, kiln_tensor_transpose(a.t, 0, 1, &at));
    /* rows 5, 3, 1 and columns 1, 4, 7 */
    kiln_slice sv[2] = {KILN_SLICE_STEP(5, KILN_NONE, -2), KILN_SLICE_STEP(1, 8, 3)};
    CHECK_OK(ctx, kiln_tensor_slice(a.t, 2, sv, &sl));
    CHECK_INT(kiln_tensor_dim(sl, 0), 3);
    CHECK_INT(kiln_tensor_dim(sl, 1), 3);
    int64_t st[2] = {8, 6}, ss[2] = {3, 3};
    kiln_tensor *d1 = poisoned(KILN_DTYPE_F32, 2, st), *d2 = poisoned(KILN_DTYPE_F32, 2, ss);
    CHECK_OK(ctx, kiln_assign(d1, kiln_add(kiln_mul(kiln_exp(kiln_t(at)), kiln_scalar(2)), kiln_t(at))));
    double *got = read_all(d1), ref[48];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) ref[i * 6 + j] = exp(a.h[j * 8 + i]) * 2 + a.h[j * 8 + i];
    compare("transposed leaf", got, ref, 48, 2e-5);
    free(got);
    CHECK_OK(ctx, kiln_assign(d2, kiln_sub(kiln_sqr(kiln_t(sl)), kiln_mean(kiln_t(sl), 1))));
    got = read_all(d2);
    for (int i = 0; i < 3; i++) {
        double m = 0;
        for (int j = 0; j < 3; j++) m += a.h[(5 - 2 * i) * 8 + 1 + 3 * j] / 3;
        for (int j = 0; j < 3; j++) {
            double v = a.h[(5 - 2 * i) * 8 + 1 + 3 * j];
            ref[i * 3 + j] = v * v - m;
        }
    }
    compare("sliced leaf with negative step", got, ref, 9, 2e-5);
    free(got);
    /* reductions of a transposed view */
    int64_t s8[2] = {8, 1};
    kiln_tensor *d3 = poisoned(KILN_DTYPE_F32, 2, s8);
    CHECK_OK(ctx, kiln_assign(d3, kiln_std(kiln_t(at), 1)));
    got = read_all(d3);
    double tr[48];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) tr[i * 6 + j] = a.h[j * 8 + i];
    ref_reduce(KILN_REDUCE_STD, tr, 2, st, 0x2, ref);
    compare("std of transposed", got, ref, 8, 2e-5);
    free(got);
    kiln_tensor_release(d3);

    /* Views as destinations: only the view's elements change. */
    arr b = mk(KILN_DTYPE_F32, 2, s, -2, 2, 0);
    kiln_tensor *bv = NULL;
    kiln_slice dv[2] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, 2), KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -3)};
    CHECK_OK(ctx, kiln_tensor_slice(b.t, 2, dv, &bv)); /* rows 0,2,4; columns 7,4,1 */
    CHECK_OK(ctx, kiln_assign(bv, kiln_add(kiln_t(sl), kiln_scalar(10))));
    got = read_all(b.t);
    int bad = 0;
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 8; j++) {
            double want = b.h[i * 8 + j];
            if (i % 2 == 0 && j % 3 == 1) {
                int vi = i / 2, vj = (7 - j) / 3;
                want = a.h[(5 - 2 * vi) * 8 + 1 + 3 * vj] + 10;
            }
            if (fabs(got[i * 8 + j] - want) > 1e-5 * fabs(want)) bad++;
        }
    CHECK_INT(bad, 0);
    free(got);
    /* Row-valued output into a strided column view of b. */
    kiln_tensor *bcol = NULL;
    kiln_slice cv[2] = {KILN_SLICE_ALL, KILN_SLICE(3, 4)};
    CHECK_OK(ctx, kiln_tensor_slice(b.t, 2, cv, &bcol));
    CHECK_OK(ctx, kiln_assign(bcol, kiln_sum(kiln_t(a.t), 1)));
    got = read_all(bcol);
    ref_reduce(KILN_REDUCE_SUM, a.h, 2, s, 0x2, ref);
    compare("sum into a column view", got, ref, 6, 2e-5);
    free(got);
    kiln_tensor_release(bcol);
    kiln_tensor_release(bv);
    arr_free(&b);
    kiln_tensor_release(d1);
    kiln_tensor_release(d2);
    kiln_tensor_release(at);
    kiln_tensor_release(sl);
    arr_free(&a);
}

static void batchnorm_ref(const double *x, int64_t n, int64_t c, double eps, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < c; j++) m += x[i * c + j];
        m /= (double)c;
        for (int64_t j = 0; j < c; j++) v += (x[i * c + j] - m) * (x[i * c + j] - m);
        v /= (double)c;
        for (int64_t j = 0; j < c; j++) out[i * c + j] = (x[i * c + j] - m) / sqrt(v + eps);
    }
}

static void test_inplace(void)
{
    kiln_dtype dts[3] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16};
    for (int d = 0; d < 3; d++) {
        int64_t s[2] = {7, 129};
        arr A = mk(dts[d], 2, s, -2, 3, 0);
        double *ref = malloc(sizeof(double) * 7 * 129);
        batchnorm_ref(A.h, 7, 129, 1e-5, ref);
        CHECK_OK(ctx, kiln_assign(A.t, kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A.t), 1), kiln_scalar(1e-5))),
                                                kiln_sub(kiln_t(A.t), kiln_mean(kiln_t(A.t), 1)))));
        double *got = read_all(A.t);
        compare("batch-norm in place", got, ref, 7 * 129,
                dts[d] == KILN_DTYPE_F16   ? 4e-3
                : dts[d] == KILN_DTYPE_F32 ? 1e-4
                                           : 1e-10);
        free(got);
        free(ref);
        arr_free(&A);
    }
    /* softmax over the rows, in place */
    {
        int64_t s[2] = {5, 33};
        arr A = mk(KILN_DTYPE_F32, 2, s, -4, 4, 0);
        kiln_expr *mx = kiln_max(kiln_t(A.t), 1);
        kiln_expr *ex = kiln_exp(kiln_sub(kiln_t(A.t), mx));
        CHECK_OK(ctx, kiln_assign(A.t, kiln_div(kiln_expr_retain(ex), kiln_sum(ex, 1))));
        double *got = read_all(A.t), ref[165];
        for (int i = 0; i < 5; i++) {
            double m = -INFINITY, z = 0;
            for (int j = 0; j < 33; j++) m = A.h[i * 33 + j] > m ? A.h[i * 33 + j] : m;
            for (int j = 0; j < 33; j++) z += exp(A.h[i * 33 + j] - m);
            for (int j = 0; j < 33; j++) ref[i * 33 + j] = exp(A.h[i * 33 + j] - m) / z;
        }
        compare("softmax in place", got, ref, 165, 1e-5);
        free(got);
        arr_free(&A);
    }
    /* A = A.T * 2 + A on a square matrix larger than any block a backend may load at once
     * (the transposed read is copied first), and a reversed 1-D view of itself. */
    int64_t q[2] = {40, 40};
    arr A = mk(KILN_DTYPE_F32, 2, q, -2, 2, 0);
    kiln_tensor *At = NULL;
    CHECK_OK(ctx, kiln_tensor_permute(A.t, NULL, &At));
    CHECK_OK(ctx, kiln_assign(A.t, kiln_add(kiln_mul(kiln_t(At), kiln_scalar(2)), kiln_t(A.t))));
    double *got = read_all(A.t), *ref = malloc(sizeof(double) * 1600);
    for (int i = 0; i < 40; i++)
        for (int j = 0; j < 40; j++) ref[i * 40 + j] = A.h[j * 40 + i] * 2 + A.h[i * 40 + j];
    compare("A = A.T*2 + A", got, ref, 1600, 1e-6);
    free(got);
    kiln_tensor_release(At);
    arr_free(&A);
    int64_t n1[1] = {1601};
    A = mk(KILN_DTYPE_F32, 1, n1, -2, 2, 0);
    kiln_tensor *rv = NULL;
    kiln_slice rs1 = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1);
    CHECK_OK(ctx, kiln_tensor_slice(A.t, 1, &rs1, &rv));
    CHECK_OK(ctx, kiln_assign(A.t, kiln_sub(kiln_t(rv), kiln_mul(kiln_t(A.t), kiln_scalar(0.5)))));
    ref = realloc(ref, sizeof(double) * 1601);
    for (int i = 0; i < 1601; i++) ref[i] = A.h[1600 - i] - 0.5 * A.h[i];
    got = read_all(A.t);
    compare("A = A[::-1] - A/2", got, ref, 1601, 1e-6);
    free(got);
    kiln_tensor_release(rv);
    arr_free(&A);
    /* A[1:, :] = A[:-1, :] + 1 (shifted overlap) and A = A - A[:, 0:1]. */
    int64_t r[2] = {5, 4};
    A = mk(KILN_DTYPE_F32, 2, r, -2, 2, 0);
    kiln_tensor *lo = NULL, *hi = NULL, *col = NULL;
    kiln_slice s1[1] = {KILN_SLICE(1, KILN_NONE)}, s2[1] = {KILN_SLICE(0, -1)};
    CHECK_OK(ctx, kiln_tensor_slice(A.t, 1, s1, &hi));
    CHECK_OK(ctx, kiln_tensor_slice(A.t, 1, s2, &lo));
    CHECK_OK(ctx, kiln_assign(hi, kiln_add(kiln_t(lo), kiln_scalar(1))));
    got = read_all(A.t);
    for (int i = 0; i < 20; i++) ref[i] = i < 4 ? A.h[i] : A.h[i - 4] + 1;
    compare("shifted overlap", got, ref, 20, 1e-6);
    double base[20];
    memcpy(base, got, sizeof base);
    free(got);
    kiln_slice sc[2] = {KILN_SLICE_ALL, KILN_SLICE(0, 1)};
    CHECK_OK(ctx, kiln_tensor_slice(A.t, 2, sc, &col));
    CHECK_OK(ctx, kiln_assign(A.t, kiln_sub(kiln_t(A.t), kiln_t(col))));
    got = read_all(A.t);
    for (int i = 0; i < 20; i++) ref[i] = base[i] - base[(i / 4) * 4];
    compare("A - A[:, 0:1]", got, ref, 20, 1e-6);
    free(got);
    free(ref);
    kiln_tensor_release(lo);
    kiln_tensor_release(hi);
    kiln_tensor_release(col);
    arr_free(&A);
}

/* ---- generators ----------------------------------------------------------------------- */

static void test_generators(void)
{
    int64_t s[2] = {100, 100};
    kiln_tensor *d = poisoned(KILN_DTYPE_F32, 2, s);
    double *got;
    CHECK_OK(ctx, kiln_assign(d, kiln_rand()));
    got = read_all(d);
    double m = 0, lo = 1, hi = 0;
    for (int i = 0; i < 10000; i++) {
        m += got[i] / 10000;
        lo = got[i] < lo ? got[i] : lo;
        hi = got[i] > hi ? got[i] : hi;
    }
    CHECK(lo >= 0 && hi < 1);
    CHECK_NEAR(m, 0.5, 0.02);
    free(got);
    CHECK_OK(ctx, kiln_assign(d, kiln_randn()));
    got = read_all(d);
    double m2 = 0, v = 0;
    for (int i = 0; i < 10000; i++) m2 += got[i] / 10000;
    for (int i = 0; i < 10000; i++) v += (got[i] - m2) * (got[i] - m2) / 10000;
    CHECK_NEAR(m2, 0, 0.05);
    CHECK_NEAR(v, 1, 0.06);
    free(got);
    /* dropout: zeros or x / (1 - p), about p of them zero */
    arr x = mk(KILN_DTYPE_F32, 2, s, 1, 2, 0);
    CHECK_OK(ctx, kiln_assign(d, kiln_dropout(kiln_t(x.t), 0.25)));
    got = read_all(d);
    int zeros = 0, bad = 0;
    for (int i = 0; i < 10000; i++) {
        if (got[i] == 0)
            zeros++;
        else if (fabs(got[i] - x.h[i] / 0.75) > 1e-5 * got[i])
            bad++;
    }
    CHECK_INT(bad, 0);
    CHECK(zeros > 2200 && zeros < 2800);
    free(got);
    /* One generator node used twice gives the same numbers; two nodes do not. */
    kiln_expr *g = kiln_rand();
    kiln_expr_retain(g);
    CHECK_OK(ctx, kiln_assign(d, kiln_sub(g, g)));
    got = read_all(d);
    bad = 0;
    for (int i = 0; i < 10000; i++) bad += got[i] != 0;
    CHECK_INT(bad, 0);
    free(got);
    CHECK_OK(ctx, kiln_assign(d, kiln_sub(kiln_rand(), kiln_rand())));
    got = read_all(d);
    int nz = 0;
    for (int i = 0; i < 10000; i++) nz += got[i] != 0;
    CHECK(nz > 9000);
    free(got);
    /* Same seed, same numbers. */
    CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 1234));
    CHECK_OK(ctx, kiln_assign(d, kiln_add(kiln_t(x.t), kiln_randn())));
    double *first = read_all(d);
    CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 1234));
    CHECK_OK(ctx, kiln_assign(d, kiln_add(kiln_t(x.t), kiln_randn())));
    got = read_all(d);
    CHECK(memcmp(first, got, sizeof(double) * 10000) == 0);
    free(first);
    free(got);
    /* bernoulli(p) fraction, per row when only a row-valued result uses it */
    CHECK_OK(ctx, kiln_assign(d, kiln_bernoulli(0.3)));
    got = read_all(d);
    double f = 0;
    for (int i = 0; i < 10000; i++) f += got[i] / 10000;
    CHECK_NEAR(f, 0.3, 0.03);
    free(got);
    /* stochastic rounding into f16 stays within one f16 step */
    kiln_tensor *h = poisoned(KILN_DTYPE_F16, 2, s);
    kiln_assign_args aa = {.round = KILN_ROUND_STOCHASTIC};
    CHECK_OK(ctx, kiln_assign_ex(h, kiln_t(x.t), &aa));
    got = read_all(h);
    bad = 0;
    for (int i = 0; i < 10000; i++)
        if (fabs(got[i] - x.h[i]) > 2.0 / 1024) bad++;
    CHECK_INT(bad, 0);
    free(got);
    kiln_tensor_release(h);
    kiln_tensor_release(d);
    arr_free(&x);
}

/* ---- dtypes, eval, ownership ---------------------------------------------------------- */

static void test_dtypes_and_eval(void)
{
    int64_t s[2] = {3, 5};
    arr h = mk(KILN_DTYPE_F16, 2, s, -2, 2, 0), i = mk(KILN_DTYPE_I32, 2, s, -5, 5, 1);
    arr f = mk(KILN_DTYPE_F32, 2, s, -2, 2, 0), b8 = mk(KILN_DTYPE_I8, 2, s, -5, 5, 1);
    kiln_expr *e;
#define DT(expr, want)                         \
    do {                                       \
        e = (expr);                            \
        CHECK_INT(kiln_expr_dtype(e), (want)); \
        kiln_expr_release(e);                  \
    } while (0)
    DT(kiln_add(kiln_t(h.t), kiln_scalar(2.5)), KILN_DTYPE_F16);
    DT(kiln_add(kiln_t(i.t), kiln_t(f.t)), KILN_DTYPE_F32);
    DT(kiln_mul(kiln_t(i.t), kiln_scalar(3)), KILN_DTYPE_I32);
    DT(kiln_sqrt(kiln_t(i.t)), KILN_DTYPE_F32);
    DT(kiln_div(kiln_t(b8.t), kiln_t(i.t)), KILN_DTYPE_F32);
    DT(kiln_mean(kiln_t(i.t), 1), KILN_DTYPE_F32);
    DT(kiln_sum(kiln_t(i.t), 1), KILN_DTYPE_I32);
    DT(kiln_lt(kiln_t(h.t), kiln_scalar(0)), KILN_DTYPE_F16);
    DT(kiln_argmax(kiln_t(h.t), 0), KILN_DTYPE_I32);
    DT(kiln_cast(kiln_t(f.t), KILN_DTYPE_BF16), KILN_DTYPE_BF16);
    DT(kiln_rand(), KILN_DTYPE_F32);
    DT(kiln_mul(kiln_t(b8.t), kiln_bernoulli(0.5)), KILN_DTYPE_I8);
    DT(kiln_add(kiln_t(b8.t), kiln_rand()), KILN_DTYPE_F32);
    DT(kiln_dropout(kiln_t(i.t), 0.5), KILN_DTYPE_F32);
    DT(kiln_std(kiln_t(b8.t), 0), KILN_DTYPE_F32);
    DT(kiln_add(kiln_t(h.t), kiln_t(f.t)), KILN_DTYPE_F32);
#undef DT
    /* kiln_eval: a new contiguous tensor of the expression's shape and dtype. */
    kiln_tensor *r = NULL;
    CHECK_OK(ctx, kiln_eval(NULL, kiln_add(kiln_t(i.t), kiln_t(b8.t)), KILN_DTYPE_AUTO, &r));
    CHECK_INT(kiln_tensor_dtype(r), KILN_DTYPE_I32);
    CHECK_INT(kiln_tensor_ndim(r), 2);
    double *got = read_all(r);
    int bad = 0;
    for (int k = 0; k < 15; k++) bad += got[k] != i.h[k] + b8.h[k];
    CHECK_INT(bad, 0);
    free(got);
    kiln_tensor_release(r);
    r = NULL;
    CHECK_OK(ctx, kiln_eval(ctx, kiln_mul(kiln_scalar(2), kiln_scalar(4)), KILN_DTYPE_F64, &r));
    CHECK_INT(kiln_tensor_ndim(r), 0);
    got = read_all(r);
    CHECK(got[0] == 8);
    free(got);
    kiln_tensor_release(r);
    r = NULL;
    int ax = 1;
    CHECK_OK(ctx, kiln_eval(NULL, kiln_reduce(KILN_REDUCE_ARGMIN, kiln_t(f.t), 1, &ax, 0), KILN_DTYPE_AUTO, &r));
    CHECK_INT(kiln_tensor_ndim(r), 1);
    CHECK_INT(kiln_tensor_dim(r, 0), 3);
    CHECK_INT(kiln_tensor_dtype(r), KILN_DTYPE_I32);
    got = read_all(r);
    double ref[3];
    ref_reduce(KILN_REDUCE_ARGMIN, f.h, 2, s, 0x2, ref);
    compare("eval argmin", got, ref, 3, 0);
    free(got);
    kiln_tensor_release(r);
    /* integer arithmetic stays exact: i32 sum */
    r = NULL;
    CHECK_OK(ctx, kiln_eval(NULL, kiln_sum(kiln_mul(kiln_t(i.t), kiln_t(i.t)), 0), KILN_DTYPE_AUTO, &r));
    got = read_all(r);
    double sref[5];
    for (int k = 0; k < 5; k++) sref[k] = 0;
    for (int k = 0; k < 15; k++) sref[k % 5] += i.h[k] * i.h[k];
    compare("i32 sum of squares", got, sref, 5, 0);
    free(got);
    kiln_tensor_release(r);
    arr_free(&h);
    arr_free(&i);
    arr_free(&f);
    arr_free(&b8);
}

static void test_ownership(void)
{
    int64_t s[2] = {4, 9};
    arr a = mk(KILN_DTYPE_F32, 2, s, 0.5, 2, 0), b = mk(KILN_DTYPE_F32, 2, s, -1, 1, 0);
    kiln_mem_stats before, after;
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &before));
    kiln_tensor *d1 = poisoned(KILN_DTYPE_F32, 2, s), *d2 = poisoned(KILN_DTYPE_F32, 2, s);
    /* nested builders, no intermediate frees */
    CHECK_OK(ctx, kiln_assign(d1, kiln_mul(kiln_sqrt(kiln_t(a.t)), kiln_sub(kiln_t(b.t), kiln_mean(kiln_t(b.t), 1)))));
    /* one node used twice inside a tree and in two assignments */
    kiln_expr *m = kiln_mean(kiln_t(b.t), 1);
    kiln_expr *e = kiln_mul(kiln_sub(kiln_t(b.t), kiln_expr_retain(m)), m);
    kiln_expr_retain(e);
    CHECK_OK(ctx, kiln_assign(d1, e));
    CHECK_OK(ctx, kiln_assign(d2, e));
    double *g1 = read_all(d1), *g2 = read_all(d2);
    CHECK(memcmp(g1, g2, sizeof(double) * 36) == 0);
    free(g1);
    free(g2);
    /* released without evaluation, error nodes too */
    kiln_expr_release(kiln_add(kiln_exp(kiln_t(a.t)), kiln_var(kiln_t(b.t), 0)));
    kiln_expr_release(kiln_add(kiln_t(a.t), kiln_sum(kiln_t(b.t), 7)));
    kiln_expr_release(NULL);
    CHECK(kiln_expr_retain(NULL) == NULL);
    /* a leaf keeps its tensor alive after the caller releases it */
    kiln_tensor *tmp = NULL;
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 2, s, 3.0, &tmp));
    kiln_expr *leaf = kiln_t(tmp);
    kiln_tensor_release(tmp);
    CHECK_OK(ctx, kiln_assign(d2, kiln_mul(leaf, kiln_scalar(2))));
    g2 = read_all(d2);
    CHECK(g2[0] == 6 && g2[35] == 6);
    free(g2);
    kiln_tensor_release(d1);
    kiln_tensor_release(d2);
    /* temporaries of split plans are freed */
    kiln_tensor *d3 = poisoned(KILN_DTYPE_F32, 2, s);
    kiln_mem_stats mid;
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &mid));
    CHECK_OK(ctx, kiln_assign(d3, kiln_add(kiln_mean(kiln_t(a.t), 0), kiln_mean(kiln_t(a.t), 1))));
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &after));
    CHECK_INT(after.in_use, mid.in_use);
    kiln_tensor_release(d3);
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &after));
    CHECK_INT(after.in_use, before.in_use);
    arr_free(&a);
    arr_free(&b);
}

/* A deep chain still evaluates (split into several kernels); past the depth limit the
 * builder gives an error node. */
static void test_deep(void)
{
    int64_t s[1] = {37};
    arr x = mk(KILN_DTYPE_F32, 1, s, -1, 1, 0);
    kiln_expr *e = kiln_t(x.t);
    for (int i = 0; i < 3000; i++) e = i % 2 ? kiln_add(e, kiln_scalar(0.5)) : kiln_mul(e, kiln_scalar(1.0));
    kiln_tensor *d = poisoned(KILN_DTYPE_F32, 1, s);
    CHECK_OK(ctx, kiln_assign(d, e));
    double *got = read_all(d), ref[37];
    for (int i = 0; i < 37; i++) ref[i] = x.h[i] + 750;
    compare("deep chain", got, ref, 37, 1e-6);
    free(got);
    /* kiln_expr_nodes counts a shared node once: e + e doubled 60 times is a tree of 2^61 - 1
     * nodes but a graph of 61, computed and counted as such */
    CHECK(kiln_expr_nodes(NULL) == 0);
    e = kiln_t(x.t);
    CHECK(kiln_expr_nodes(e) == 1);
    for (int i = 0; i < 60; i++) e = kiln_add(e, kiln_expr_retain(e));
    CHECK(kiln_expr_nodes(e) == 61);
    kiln_expr *f = kiln_mul(kiln_expr_retain(e), kiln_sub(kiln_t(x.t), kiln_scalar(1)));
    CHECK(kiln_expr_nodes(f) == 65); /* the 61, a new leaf, a scalar, sub and mul */
    kiln_expr_release(f);
    CHECK_OK(ctx, kiln_assign(d, kiln_mul(e, kiln_scalar(0x1p-60))));
    got = read_all(d);
    compare("shared doublings", got, x.h, 37, 1e-6);
    free(got);
    e = kiln_t(x.t);
    for (int i = 0; i < 3000; i++) e = kiln_add(e, kiln_scalar(1));
    CHECK(kiln_expr_nodes(e) == 6001); /* a chain: every node once, the walk's set grown past 64 */
    kiln_expr_release(e);
    e = kiln_t(x.t);
    for (int i = 0; i < 5000; i++) e = kiln_add(e, kiln_scalar(1));
    CHECK_FAILS(ctx, kiln_assign(d, e), KILN_ERR_LIMIT, "'a'");
    e = kiln_t(x.t);
    for (int i = 0; i < KILN_EXPR_DEPTH_TEST; i++) e = kiln_neg(e);
    CHECK_FAILS(ctx, kiln_assign(d, kiln_sum(e, 0)), KILN_ERR_LIMIT, "'x'");
    kiln_tensor_release(d);
    arr_free(&x);
}

/* ---- errors --------------------------------------------------------------------------- */

static kiln_status node_status(kiln_expr *e, const char *needle)
{
    const char *msg = NULL;
    kiln_status s = kiln_expr_status(e, &msg);
    if (!msg || !strstr(msg, needle)) {
        fprintf(stderr, "error node message \"%s\" lacks \"%s\"\n", msg ? msg : "(null)", needle);
        CHECK(0);
    }
    kiln_expr_release(e);
    return s;
}

/* numpy's assignment rule: an expression with extra leading size-1 axes fits dst. */
static void test_leading_ones(void)
{
    double host[6] = {1, 2, 3, 4, 5, 6}, got[3] = {0, 0, 0};
    int64_t s3[3] = {1, 1, 3}, s23[2] = {2, 3}, s1[1] = {3};
    kiln_tensor *e3 = NULL, *e23 = NULL, *d = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 3, s3, host, KILN_DTYPE_F64, &e3));
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 2, s23, host, KILN_DTYPE_F64, &e23));
    CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_F32, 1, s1, &d));
    CHECK_OK(ctx, kiln_assign(d, kiln_mul(kiln_t(e3), kiln_scalar(2))));
    CHECK_OK(ctx, kiln_tensor_read(d, got, KILN_DTYPE_F64));
    CHECK(got[0] == 2 && got[1] == 4 && got[2] == 6);
    /* a sum over axis 0 with keepdims is (1, 3): it fits a (3,) destination */
    CHECK_OK(ctx, kiln_assign(d, kiln_sum(kiln_t(e23), 0)));
    CHECK_OK(ctx, kiln_tensor_read(d, got, KILN_DTYPE_F64));
    CHECK(got[0] == 5 && got[1] == 7 && got[2] == 9);
    /* a leading axis that is not 1 does not */
    CHECK_FAILS(ctx, kiln_assign(d, kiln_t(e23)), KILN_ERR_SHAPE, "'dst'");
    CHECK_OK(ctx, kiln_tensor_read(d, got, KILN_DTYPE_F64));
    CHECK(got[0] == 5 && got[2] == 9);
    kiln_tensor_release(e3);
    kiln_tensor_release(e23);
    kiln_tensor_release(d);
}

static void test_errors(void)
{
    int64_t s[2] = {4, 5}, s2[2] = {3, 5};
    arr a = mk(KILN_DTYPE_F32, 2, s, -1, 1, 0), b = mk(KILN_DTYPE_F32, 2, s2, -1, 1, 0);
    kiln_tensor *dst = NULL;
    CHECK_OK(ctx, kiln_tensor_copy(a.t, KILN_DTYPE_AUTO, &dst));
    double *before = read_all(dst);

    /* builders: the node carries the status and names the argument */
    CHECK_INT(node_status(kiln_add(kiln_t(a.t), kiln_t(b.t)), "'b' has shape (3, 5)"), KILN_ERR_SHAPE);
    CHECK_INT(node_status(kiln_add(NULL, kiln_t(b.t)), "'a'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_mul(kiln_t(a.t), NULL), "'b'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_t(NULL), "'t'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_exp(NULL), "'x'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_where(kiln_t(a.t), kiln_t(a.t), kiln_t(b.t)), "'b'"), KILN_ERR_SHAPE);
    CHECK_INT(node_status(kiln_sum(kiln_t(a.t), 2), "'axis'"), KILN_ERR_AXIS);
    CHECK_INT(node_status(kiln_mean(kiln_t(a.t), -3), "'axis'"), KILN_ERR_AXIS);
    int rep[2] = {1, -1};
    CHECK_INT(node_status(kiln_reduce(KILN_REDUCE_MAX, kiln_t(a.t), 2, rep, 1), "'axes'"), KILN_ERR_AXIS);
    CHECK_INT(node_status(kiln_reduce(KILN_REDUCE_MAX, kiln_t(a.t), 2, NULL, 1), "'axes'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_reduce(KILN_REDUCE_MAX, kiln_t(a.t), -1, rep, 1), "'naxes'"), KILN_ERR_AXIS);
    CHECK_INT(node_status(kiln_reduce(KILN_REDUCE_COUNT, kiln_t(a.t), 1, rep, 1), "'op'"), KILN_ERR_ARG);
    CHECK_INT(node_status(kiln_reduce(KILN_REDUCE_SUM, NULL, 1, rep, 1), "'x'"), KILN_ERR_NULL);
    CHECK_INT(node_status(kiln_clip(kiln_t(a.t), 2, 1), "'lo'"), KILN_ERR_ARG);
    CHECK_INT(node_status(kiln_bernoulli(1.5), "'p'"), KILN_ERR_ARG);
    CHECK_INT(node_status(kiln_bernoulli(NAN), "'p'"), KILN_ERR_ARG);
    CHECK_INT(node_status(kiln_dropout(kiln_t(a.t), 1.0), "'p'"), KILN_ERR_ARG);
    CHECK_INT(node_status(kiln_cast(kiln_t(a.t), KILN_DTYPE_AUTO), "'dtype'"), KILN_ERR_DTYPE);
    CHECK_INT(node_status(kiln_cast(kiln_t(a.t), (kiln_dtype)99), "'dtype'"), KILN_ERR_DTYPE);
    /* an error deep down propagates, the first one wins */
    kiln_expr *deep = kiln_mul(kiln_exp(kiln_sum(kiln_t(a.t), 5)), kiln_add(kiln_t(a.t), kiln_t(b.t)));
    CHECK_INT(node_status(deep, "'axis'"), KILN_ERR_AXIS);
    CHECK_INT(kiln_expr_status(NULL, NULL), KILN_ERR_NULL);
    CHECK_INT(kiln_expr_dtype(NULL), KILN_DTYPE_AUTO);
    CHECK(kiln_expr_shape(NULL) == NULL);

    /* assignment: the error goes to dst's context, dst stays unchanged */
    CHECK_FAILS(ctx, kiln_assign(dst, kiln_add(kiln_t(a.t), kiln_t(b.t))), KILN_ERR_SHAPE, "'b'");
    CHECK_FAILS(ctx, kiln_assign(dst, kiln_t(b.t)), KILN_ERR_SHAPE, "'dst'");
    CHECK_FAILS(ctx, kiln_assign(dst, NULL), KILN_ERR_NULL, "'e'");
    CHECK_FAILS(ctx, kiln_assign(dst, kiln_sqrt(kiln_sum(kiln_t(a.t), 9))), KILN_ERR_AXIS, "'axis'");
    kiln_assign_args bad_round = {.round = (kiln_round)7};
    CHECK_FAILS(ctx, kiln_assign_ex(dst, kiln_t(a.t), &bad_round), KILN_ERR_ARG, "'args'");
    CHECK_FAILS(NULL, kiln_assign(NULL, kiln_t(a.t)), KILN_ERR_NULL, "'dst'");
    kiln_tensor *bc = NULL;
    int64_t s3[3] = {2, 4, 5};
    CHECK_OK(ctx, kiln_tensor_broadcast_to(a.t, 3, s3, &bc));
    CHECK_FAILS(ctx, kiln_assign(bc, kiln_scalar(1)), KILN_ERR_ALIAS, "'dst'");
    kiln_tensor_release(bc);
    kiln_ctx *other = NULL;
    kiln_ctx_args oargs = {.device = KILN_DEVICE_CPU};
    CHECK_OK(NULL, kiln_ctx_create(&other, &oargs));
    kiln_tensor *ot = NULL;
    CHECK_OK(other, kiln_tensor_zeros(other, KILN_DTYPE_F32, 2, s, &ot));
    CHECK_FAILS(ctx, kiln_assign(dst, kiln_add(kiln_t(a.t), kiln_t(ot))), KILN_ERR_CONTEXT, "'e'");
    kiln_tensor_release(ot);
    kiln_ctx_destroy(other);
    double *after = read_all(dst);
    CHECK(memcmp(before, after, sizeof(double) * 20) == 0);
    free(after);

    /* one generator node used per element under a reduction and per row beside it */
    int64_t sr[2] = {4, 1};
    kiln_tensor *rowd = poisoned(KILN_DTYPE_F32, 2, sr);
    kiln_expr *g = kiln_rand();
    CHECK_FAILS(ctx, kiln_assign(rowd, kiln_add(kiln_sum(kiln_mul(kiln_t(a.t), kiln_expr_retain(g)), 1), g)),
                KILN_ERR_UNSUPPORTED, "'e'");
    kiln_tensor_release(rowd);
    /* temporaries over the memory cap: OOM, dst unchanged */
    kiln_mem_stats ms;
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &ms));
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, ms.in_use + 8));
    CHECK_FAILS(ctx, kiln_assign(dst, kiln_add(kiln_max(kiln_t(a.t), 0), kiln_min(kiln_t(a.t), 1))), KILN_ERR_OOM,
                "limit");
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, 0));
    after = read_all(dst);
    CHECK(memcmp(before, after, sizeof(double) * 20) == 0);
    free(after);
    /* eval */
    kiln_tensor *r = NULL;
    CHECK_FAILS(NULL, kiln_eval(NULL, kiln_scalar(1), KILN_DTYPE_AUTO, &r), KILN_ERR_NULL, "'ctx'");
    CHECK_FAILS(ctx, kiln_eval(ctx, kiln_t(a.t), KILN_DTYPE_AUTO, NULL), KILN_ERR_NULL, "'out'");
    CHECK_FAILS(ctx, kiln_eval(ctx, kiln_t(a.t), (kiln_dtype)42, &r), KILN_ERR_DTYPE, "'dtype'");
    /* an error node has no leaves left: without ctx the error is the thread's */
    CHECK_FAILS(NULL, kiln_eval(NULL, kiln_add(kiln_t(a.t), kiln_t(b.t)), KILN_DTYPE_AUTO, &r), KILN_ERR_SHAPE, "'b'");
    CHECK_FAILS(ctx, kiln_eval(ctx, kiln_add(kiln_t(a.t), kiln_t(b.t)), KILN_DTYPE_AUTO, &r), KILN_ERR_SHAPE, "'b'");
    CHECK(r == NULL);

    free(before);
    kiln_tensor_release(dst);
    arr_free(&a);
    arr_free(&b);
}

int main(void)
{
    seed = check_seed();
    kiln_status st = kiln_ctx_create(&ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "no context: %s\n", kiln_last_error(NULL));
        return 1;
    }
    test_unary();
    test_binary();
    test_reductions();
    test_variance_one_pass();
    test_views();
    test_inplace();
    test_generators();
    test_dtypes_and_eval();
    test_ownership();
    test_deep();
    test_errors();
    test_leading_ones();
    kiln_ctx_destroy(ctx);
    return check_finish();
}
