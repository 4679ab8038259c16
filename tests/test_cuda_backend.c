/*
 * tests/test_cuda_backend.c — the CUDA backend against the CPU backend, through the public
 * API: every element-wise operator and reductions over each axis pattern (rows longer than
 * one block included, short rows on a segment of a warp) on random data and views, reductions
 * split across blocks (long rows,
 * few of them: bits repeatable, the split counted), casts, the batch-norm expression in place,
 * bit identity of rand / randn / bernoulli / dropout / stochastic rounding, GEMM through
 * cuBLASLt and the fallback kernel (KILN_GEMM=vendor) and kiln's own kernel (=own), which
 * path KILN_GEMM picks, random GEMM shapes, views and epilogues through kiln's own kernels
 * (=own, the tile rule's plans), the disk kernel cache (hit from a fresh context,
 * corrupt-entry recovery), no recompilation for a new shape of the same structure or eps, the memory cap, an
 * NVRTC failure carrying the log and source, and device memory wrapped by kiln_tensor_wrap
 * (kiln's own, through a second handle: expressions, GEMM into it, the release callback),
 * and kiln-bench --graph's capture of GEMM calls into a CUDA graph.
 * Needs a CUDA device: exits 77 (skipped) without one.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "core/numeric.h"
#include "cuda/cuda_hooks.h"
#include "cuda/gemm_plan.h"
#include "expr/plan.h"

/* Weak: absent when kiln is built without CUDA (then no CUDA context can exist either). */
#pragma weak kiln__cuda_cache_stats
#pragma weak kiln__cuda_cache_drop_memory
#pragma weak kiln__cuda_cache_dir
#pragma weak kiln__cuda_compile_source
#pragma weak kiln__cuda_graph_capture
#pragma weak kiln__cuda_graph_time
#pragma weak kiln__cuda_graph_free

static uint64_t rng;
static kiln_ctx *cpu, *gpu;

static kiln_ctx *make_ctx(kiln_device dev, uint64_t seed)
{
    kiln_ctx *c = NULL;
    kiln_ctx_args a = {.device = dev, .seed = seed};
    if (kiln_ctx_create(&c, &a) != KILN_OK) return NULL;
    return c;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static kiln_tensor *from_f64(kiln_ctx *c, kiln_dtype dt, int nd, const int64_t *shape, const double *v)
{
    kiln_tensor *t = NULL;
    CHECK_OK(c, kiln_tensor_from_host(c, dt, nd, shape, v, KILN_DTYPE_F64, &t));
    return t;
}

static double *read_f64(kiln_tensor *t)
{
    int64_t n = kiln_tensor_numel(t);
    double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    CHECK_OK(kiln_tensor_ctx(t), kiln_tensor_read(t, v, KILN_DTYPE_F64));
    return v;
}

/* Max over elements of |a-b| / max(1, |b|) (NaN vs NaN counts as equal). */
static double max_rel(const double *a, const double *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(a[i]) && isnan(b[i])) continue;
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        if (isinf(a[i]) || isinf(b[i])) {
            if (a[i] != b[i]) return INFINITY;
            continue;
        }
        double s = fabs(b[i]) > 1 ? fabs(b[i]) : 1;
        double e = fabs(a[i] - b[i]) / s;
        if (e > m) m = e;
    }
    return m;
}

/* view kinds applied to an input */
enum { V_PLAIN, V_T, V_STEP, V_NEG, V_OFF };

/* Makes the same (possibly viewed) input on both contexts from one host array; base shape
 * is chosen so that the view has `shape`. */
static void make_pair(kiln_dtype dt, int nd, const int64_t *shape, int view, double lo, double hi,
                      kiln_tensor **tc, kiln_tensor **tg)
{
    int64_t bshape[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) bshape[i] = shape[i];
    if (view == V_T && nd >= 2) {
        for (int i = 0; i < nd; i++) bshape[i] = shape[nd - 1 - i];
    } else if (view == V_STEP && nd >= 1) {
        bshape[0] = shape[0] * 2;
    } else if (view == V_NEG && nd >= 1) {
        bshape[nd - 1] = shape[nd - 1] + 3;
    } else if (view == V_OFF && nd >= 1) {
        bshape[nd - 1] = shape[nd - 1] + 1;
    }
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= bshape[i];
    double *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    check_fill(&rng, h, n, lo, hi);
    kiln_tensor *bc = from_f64(cpu, dt, nd, bshape, h), *bg = from_f64(gpu, dt, nd, bshape, h);
    free(h);
    kiln_tensor *pair[2] = {bc, bg}, *outp[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        kiln_tensor *b = pair[k];
        if (view == V_T && nd >= 2) {
            CHECK_OK(kiln_tensor_ctx(b), kiln_tensor_permute(b, NULL, &outp[k]));
        } else if (view == V_STEP && nd >= 1) {
            kiln_slice s = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, 2);
            CHECK_OK(kiln_tensor_ctx(b), kiln_tensor_slice(b, 1, &s, &outp[k]));
        } else if (view == V_NEG && nd >= 1) {
            kiln_slice s[KILN_MAX_DIMS];
            for (int i = 0; i < nd; i++) s[i] = KILN_SLICE_ALL;
            s[nd - 1] = KILN_SLICE_STEP(shape[nd - 1] + 1, 1, -1);
            CHECK_OK(kiln_tensor_ctx(b), kiln_tensor_slice(b, nd, s, &outp[k]));
        } else if (view == V_OFF && nd >= 1) { /* unit stride but misaligned: no vector path */
            kiln_slice s[KILN_MAX_DIMS];
            for (int i = 0; i < nd; i++) s[i] = KILN_SLICE_ALL;
            s[nd - 1] = KILN_SLICE(1, KILN_NONE);
            CHECK_OK(kiln_tensor_ctx(b), kiln_tensor_slice(b, nd, s, &outp[k]));
        } else {
            outp[k] = kiln_tensor_retain(b);
        }
        kiln_tensor_release(b);
    }
    *tc = outp[0];
    *tg = outp[1];
}

typedef kiln_expr *(*build_fn)(kiln_tensor *const *in, const void *param);

/* Evaluates build(in) on both contexts and compares. Returns the max relative error. */
static double compare(const char *what, build_fn build, const void *param, kiln_tensor *const *ic, kiln_tensor *const *ig,
                      kiln_dtype out_dt, double tol)
{
    kiln_tensor *oc = NULL, *og = NULL;
    CHECK_OK(cpu, kiln_eval(cpu, build(ic, param), out_dt, &oc));
    CHECK_OK(gpu, kiln_eval(gpu, build(ig, param), out_dt, &og));
    if (!oc || !og) {
        fprintf(stderr, "  case %s: evaluation failed\n", what);
        kiln_tensor_release(oc);
        kiln_tensor_release(og);
        return INFINITY;
    }
    CHECK_INT(kiln_tensor_numel(oc), kiln_tensor_numel(og));
    int64_t n = kiln_tensor_numel(oc);
    double *a = read_f64(og), *b = read_f64(oc);
    double e = max_rel(a, b, n);
    if (!(e <= tol)) fprintf(stderr, "  case %s: max rel err %g > tol %g (n=%lld)\n", what, e, tol, (long long)n);
    CHECK(e <= tol);
    free(a);
    free(b);
    kiln_tensor_release(oc);
    kiln_tensor_release(og);
    return e;
}

/* ---- element-wise -------------------------------------------------------------------------- */

typedef kiln_expr *(*un_fn)(kiln_expr *);
typedef kiln_expr *(*bin_fn)(kiln_expr *, kiln_expr *);

static kiln_expr *b_unary(kiln_tensor *const *in, const void *p) { return ((un_fn)(uintptr_t)p)(kiln_t(in[0])); }
static kiln_expr *b_binary(kiln_tensor *const *in, const void *p)
{
    return ((bin_fn)(uintptr_t)p)(kiln_t(in[0]), kiln_t(in[1]));
}

static void test_elementwise(void)
{
    struct {
        const char *name;
        un_fn f;
        double lo, hi;
    } un[] = {
        {"neg", kiln_neg, -3, 3},     {"abs", kiln_abs, -3, 3},     {"sqr", kiln_sqr, -3, 3},
        {"sqrt", kiln_sqrt, 0.1, 9},  {"rsqrt", kiln_rsqrt, 0.1, 9}, {"recip", kiln_reciprocal, 0.5, 4},
        {"exp", kiln_exp, -5, 5},     {"exp2", kiln_exp2, -5, 5},   {"log", kiln_log, 0.01, 50},
        {"log2", kiln_log2, 0.01, 50}, {"sigmoid", kiln_sigmoid, -8, 8}, {"tanh", kiln_tanh, -4, 4},
        {"relu", kiln_relu, -3, 3},   {"finite", kiln_finite, -3, 3}, {"sign", kiln_sign, -3, 3},
        {"log1p", kiln_log1p, -0.5, 9}, {"expm1", kiln_expm1, -5, 5}, {"sin", kiln_sin, -9, 9},
        {"cos", kiln_cos, -9, 9},     {"erf", kiln_erf, -3, 3},     {"floor", kiln_floor, -9, 9},
        {"ceil", kiln_ceil, -9, 9},   {"rint", kiln_rint, -9, 9},   {"trunc", kiln_trunc, -9, 9},
    };
    struct {
        const char *name;
        bin_fn f;
    } bin[] = {{"add", kiln_add}, {"sub", kiln_sub}, {"mul", kiln_mul}, {"div", kiln_div}, {"pow", kiln_pow},
               {"fmod", kiln_fmod},
               {"maximum", kiln_maximum}, {"minimum", kiln_minimum}, {"eq", kiln_eq}, {"ne", kiln_ne},
               {"lt", kiln_lt}, {"le", kiln_le}, {"gt", kiln_gt}, {"ge", kiln_ge}};
    kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_F64, KILN_DTYPE_BF16};
    double tols[] = {2e-6, 2e-3, 1e-13, 8e-3};
    int64_t shapes[2][2] = {{37, 129}, {19, 256}}; /* odd: scalar path; 256: vector path */
    for (int dd = 0; dd < 8; dd++) {
        int64_t *shape = shapes[dd / 4];
        int d = dd % 4;
        for (size_t u = 0; u < sizeof un / sizeof un[0]; u++) {
            int view = (int)(u % 5);
            kiln_tensor *c, *g;
            make_pair(dts[d], 2, shape, view, un[u].lo, un[u].hi, &c, &g);
            char what[96];
            snprintf(what, sizeof what, "%s %s view %d", un[u].name, kiln_dtype_name(dts[d]), view);
            compare(what, b_unary, (const void *)(uintptr_t)un[u].f, &c, &g, KILN_DTYPE_AUTO, tols[d]);
            kiln_tensor_release(c);
            kiln_tensor_release(g);
        }
        for (size_t u = 0; u < sizeof bin / sizeof bin[0]; u++) {
            kiln_tensor *c[2], *g[2];
            make_pair(dts[d], 2, shape, (int)(u % 4), 0.5, 3, &c[0], &g[0]);
            /* second operand broadcast along rows: shape (129,) */
            make_pair(dts[d], 1, &shape[1], u % 2 ? V_NEG : V_PLAIN, 0.5, 3, &c[1], &g[1]);
            char what[96];
            snprintf(what, sizeof what, "%s %s", bin[u].name, kiln_dtype_name(dts[d]));
            compare(what, b_binary, (const void *)(uintptr_t)bin[u].f, c, g, KILN_DTYPE_AUTO, tols[d] * 4);
            for (int k = 0; k < 2; k++) {
                kiln_tensor_release(c[k]);
                kiln_tensor_release(g[k]);
            }
        }
    }
}

static kiln_expr *b_chain(kiln_tensor *const *in, const void *p)
{
    (void)p;
    /* where(a > 1, clip(sigmoid(a) * b + sqr(a - b) * 0.5, -1, 2), cast(a, f16)) */
    kiln_expr *a = kiln_t(in[0]);
    kiln_expr *x = kiln_add(kiln_mul(kiln_sigmoid(kiln_expr_retain(a)), kiln_t(in[1])),
                            kiln_mul(kiln_sqr(kiln_sub(kiln_expr_retain(a), kiln_t(in[1]))), kiln_scalar(0.5)));
    return kiln_where(kiln_gt(kiln_expr_retain(a), kiln_scalar(1.0)), kiln_clip(x, -1, 2),
                      kiln_cast(a, KILN_DTYPE_F16));
}

static void test_chains(void)
{
    int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 1}, {3, 5, 129}, {2, 1, 100003}};
    for (int s = 0; s < 4; s++) {
        for (int view = 0; view < 4; view++) {
            kiln_tensor *c[2], *g[2];
            make_pair(KILN_DTYPE_F32, 3, shapes[s], view, -2, 3, &c[0], &g[0]);
            make_pair(KILN_DTYPE_F32, 3, shapes[s], V_PLAIN, -2, 3, &c[1], &g[1]);
            char what[64];
            snprintf(what, sizeof what, "chain shape %d view %d", s, view);
            compare(what, b_chain, NULL, c, g, KILN_DTYPE_F32, 4e-6);
            compare(what, b_chain, NULL, c, g, KILN_DTYPE_F16, 1e-3);
            for (int k = 0; k < 2; k++) {
                kiln_tensor_release(c[k]);
                kiln_tensor_release(g[k]);
            }
        }
    }
}

/* ---- reductions ------------------------------------------------------------------------------ */

typedef struct red_param {
    kiln_reduce_op op;
    int naxes;
    int axes[3];
    int keepdims;
    int bcast; /* 1: x - red(x) broadcast back (keepdims forced) */
} red_param;

static kiln_expr *b_reduce(kiln_tensor *const *in, const void *p)
{
    const red_param *r = p;
    kiln_expr *x = kiln_t(in[0]);
    if (!r->bcast) return kiln_reduce(r->op, x, r->naxes, r->naxes ? r->axes : NULL, r->keepdims);
    return kiln_sub(kiln_expr_retain(x), kiln_reduce(r->op, x, r->naxes, r->naxes ? r->axes : NULL, 1));
}

/* prod of x's values mapped to powers of two: sign(x) * (2 where |x| > 1 - 5e-5, 1/2 where |x| < 5e-5, else 1), for
 * x in (-1, 1). Every product and partial product of these is exact in f32 (a few hundred factors of 2 or 1/2 in
 * millions, their exponents' walk far from f32's range), so
 * any grouping the kernels choose gives the same bits as the CPU's: the reduction's structure (splits, lanes, partials,
 * the identity) is checked with no tolerance, free of the rounding that products near 1 gather in f32. */
static kiln_expr *b_prod_exact(kiln_tensor *const *in, const void *p)
{
    const red_param *r = p;
    kiln_expr *x = kiln_t(in[0]);
    kiln_expr *a = kiln_abs(kiln_expr_retain(x));
    kiln_expr *f = kiln_mul(kiln_sign(kiln_expr_retain(x)),
                            kiln_where(kiln_gt(kiln_expr_retain(a), kiln_scalar(1 - 5e-5)), kiln_scalar(2),
                                       kiln_where(kiln_lt(a, kiln_scalar(5e-5)), kiln_scalar(0.5), kiln_scalar(1))));
    kiln_expr *red = kiln_reduce(KILN_REDUCE_PROD, f, r->naxes, r->naxes ? r->axes : NULL, r->keepdims || r->bcast);
    if (!r->bcast) {
        kiln_expr_release(x);
        return red;
    }
    return kiln_sub(x, red);
}

static void test_reductions(void)
{
    int64_t shapes[][3] = {{5, 7, 129}, {3, 2, 40000}, {40000, 3, 2}, {1, 1, 1}, {2, 3000, 7}};
    int axsets[][3] = {{0}, {1}, {2}, {0, 1}, {1, 2}, {0, 2}, {0, 1, 2}};
    int axn[] = {1, 1, 1, 2, 2, 2, 3};
    kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MEAN, KILN_REDUCE_MAX, KILN_REDUCE_MIN,
                            KILN_REDUCE_VAR, KILN_REDUCE_STD, KILN_REDUCE_ARGMAX, KILN_REDUCE_ARGMIN};
    for (int s = 0; s < 5; s++) {
        for (int a = 0; a < 7; a++) {
            for (int o = 0; o < 8; o++) {
                int view = (s + a + o) % 4;
                if (s == 1 || s == 2) view = V_PLAIN; /* keep the long cases cheap */
                kiln_tensor *c, *g;
                make_pair(KILN_DTYPE_F32, 3, shapes[s], view, -2, 3, &c, &g);
                red_param rp = {ops[o], axn[a], {axsets[a][0], axsets[a][1], axsets[a][2]}, (o + a) % 2, 0};
                if (a == 6 && o % 2) rp.naxes = 0; /* all axes through NULL */
                char what[96];
                snprintf(what, sizeof what, "reduce op %d axes %d shape %d view %d", o, a, s, view);
                double tol = (ops[o] == KILN_REDUCE_SUM || ops[o] == KILN_REDUCE_MEAN) ? 2e-4 : 1e-4;
                if (ops[o] == KILN_REDUCE_ARGMAX || ops[o] == KILN_REDUCE_ARGMIN) tol = 0;
                compare(what, b_reduce, &rp, &c, &g, KILN_DTYPE_AUTO, tol);
                if (o == 1 || o == 2 || o == 4) {
                    rp.bcast = 1;
                    compare(what, b_reduce, &rp, &c, &g, KILN_DTYPE_AUTO, 2e-4);
                }
                kiln_tensor_release(c);
                kiln_tensor_release(g);
            }
        }
    }
    /* products over every axis set, exact (b_prod_exact) */
    for (int s = 0; s < 5; s++) {
        for (int a = 0; a < 7; a++) {
            int view = s == 1 || s == 2 ? V_PLAIN : (s + a) % 4;
            kiln_tensor *c, *g;
            make_pair(KILN_DTYPE_F32, 3, shapes[s], view, -1, 1, &c, &g);
            red_param rp = {KILN_REDUCE_PROD, axn[a], {axsets[a][0], axsets[a][1], axsets[a][2]}, a % 2, (s + a) % 3 == 0};
            char what[96];
            snprintf(what, sizeof what, "reduce prod axes %d shape %d view %d bcast %d", a, s, view, rp.bcast);
            compare(what, b_prod_exact, &rp, &c, &g, KILN_DTYPE_AUTO, 0);
            kiln_tensor_release(c);
            kiln_tensor_release(g);
        }
    }
    /* f16 and f64 inputs, row-style and column-style */
    kiln_dtype dts[] = {KILN_DTYPE_F16, KILN_DTYPE_F64, KILN_DTYPE_BF16};
    for (int d = 0; d < 3; d++) {
        int64_t shape[2] = {300, 257};
        kiln_tensor *c, *g;
        make_pair(dts[d], 2, shape, V_PLAIN, -2, 3, &c, &g);
        for (int ax = 0; ax < 2; ax++) {
            red_param rp = {KILN_REDUCE_VAR, 1, {ax}, 1, 1};
            compare("f16/f64 var bcast", b_reduce, &rp, &c, &g, KILN_DTYPE_AUTO, dts[d] == KILN_DTYPE_F64 ? 1e-12 : 8e-3);
            rp.op = KILN_REDUCE_SUM;
            rp.bcast = 0;
            compare("f16/f64 sum", b_reduce, &rp, &c, &g, KILN_DTYPE_F32, dts[d] == KILN_DTYPE_F64 ? 1e-6 : 1e-4);
        }
        kiln_tensor_release(c);
        kiln_tensor_release(g);
    }
    /* ROW mode's 16-bit rows with f32's bytes a worker (KILN_REDUCE_ROWFILL=1: twice the
     * vectors a worker, half the workers a row): several rows a block, one, and split */
    setenv("KILN_REDUCE_ROWFILL", "1", 1);
    int64_t fill_shapes[][2] = {{300, 264}, {7, 8192}, {3, 100000}};
    kiln_dtype fill_dts[] = {KILN_DTYPE_F16, KILN_DTYPE_BF16};
    kiln_reduce_op fill_ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MAX, KILN_REDUCE_VAR, KILN_REDUCE_ARGMAX};
    for (int sh = 0; sh < 3; sh++)
        for (int d = 0; d < 2; d++) {
            kiln_tensor *c, *g;
            make_pair(fill_dts[d], 2, fill_shapes[sh], V_PLAIN, -2, 3, &c, &g);
            for (int o = 0; o < 4; o++)
                for (int bcast = 0; bcast < 2; bcast++) { /* broadcast back: x - max(x), x - var(x) */
                    if (bcast && fill_ops[o] != KILN_REDUCE_MAX && fill_ops[o] != KILN_REDUCE_VAR) continue;
                    red_param rp = {fill_ops[o], 1, {1}, 1, bcast};
                    char what[96];
                    snprintf(what, sizeof what, "rowfill op %d shape %d dtype %d bcast %d", o, sh, d, bcast);
                    double tol = fill_ops[o] == KILN_REDUCE_MAX || fill_ops[o] == KILN_REDUCE_ARGMAX ? 0
                                 : fill_ops[o] == KILN_REDUCE_VAR                                   ? 8e-3
                                                                                                     : 1e-4;
                    compare(what, b_reduce, &rp, &c, &g, bcast ? KILN_DTYPE_AUTO : KILN_DTYPE_F32, bcast ? 8e-3 : tol);
                }
            kiln_tensor_release(c);
            kiln_tensor_release(g);
        }
    setenv("KILN_REDUCE_ROWFILL", "2", 1); /* a bad value names the variable */
    {
        kiln_tensor *c, *g, *o = NULL;
        make_pair(KILN_DTYPE_F16, 2, fill_shapes[1], V_PLAIN, -2, 3, &c, &g);
        red_param rp = {KILN_REDUCE_SUM, 1, {1}, 0, 0};
        CHECK_FAILS(gpu, kiln_eval(gpu, b_reduce(&g, &rp), KILN_DTYPE_F32, &o), KILN_ERR_ARG, "KILN_REDUCE_ROWFILL");
        kiln_tensor_release(o);
        kiln_tensor_release(c);
        kiln_tensor_release(g);
    }
    unsetenv("KILN_REDUCE_ROWFILL");
}

/* batch-norm in place: A = rsqrt(var(A,1) + eps) * (A - mean(A,1)) */
static kiln_status batchnorm(kiln_tensor *A, double eps, int axis)
{
    kiln_expr *e = kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), axis), kiln_scalar(eps))),
                            kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), axis)));
    return kiln_assign(A, e);
}

static void test_batchnorm(void)
{
    int64_t shapes[][2] = {{7, 129}, {64, 8192}, {3, 50000}, {2049, 33}};
    kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F16};
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 2; d++)
            for (int axis = 0; axis < 2; axis++) {
                kiln_tensor *c, *g;
                make_pair(dts[d], 2, shapes[s], V_PLAIN, -2, 5, &c, &g);
                CHECK_OK(cpu, batchnorm(c, 1e-5, axis));
                CHECK_OK(gpu, batchnorm(g, 1e-5, axis));
                int64_t n = kiln_tensor_numel(c);
                double *a = read_f64(g), *b = read_f64(c);
                double e = max_rel(a, b, n);
                double tol = dts[d] == KILN_DTYPE_F16 ? 4e-3 : 2e-4;
                if (!(e <= tol))
                    fprintf(stderr, "  batchnorm shape %d dtype %d axis %d: err %g\n", s, d, axis, e);
                CHECK(e <= tol);
                free(a);
                free(b);
                kiln_tensor_release(c);
                kiln_tensor_release(g);
            }
}

/* ---- variances in one pass ------------------------------------------------------------------ */

static void check_repeatable(const char *what, build_fn build, const void *param, kiln_tensor *const *ig,
                             kiln_dtype out_dt);

static kiln_expr *b_welford(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p, ax = kind & 1;
    if (kind < 2) return kiln_reduce(KILN_REDUCE_VAR, kiln_t(in[0]), 1, &ax, 0);
    if (kind < 4) return kiln_reduce(KILN_REDUCE_STD, kiln_t(in[0]), 1, &ax, 1);
    return kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(in[0]), ax), kiln_scalar(1e-5))),
                    kiln_sub(kiln_t(in[0]), kiln_mean(kiln_t(in[0]), ax)));
}

/* Variances in one pass on the GPU (KILN_VAR_PASSES=1: RED_VAR, Welford's update a point and
 * Chan's merges across workers, lanes and a split's slices), against the CPU: var and std
 * along rows and along columns and batch norm in both layouts, in f32, f16, bf16 and f64, on
 * shapes that run one block a row, split across blocks, and with lanes (the rule's and
 * forced); each split case twice with the same bits (a fixed merge order). A bad
 * KILN_VAR_PASSES names the variable. Then the default (unset): the plans the backend's rule
 * gives (one pass down columns of >= 1024 rows, of f32 at any size and of other dtypes over
 * more bytes than the L2 holds, and of f16 / bf16 / f32 from 256 rows where the variance is
 * written out, two passes elsewhere; cuda_var_one_pass) and a one-pass default against the CPU. */
static int plan_red_vars(kiln_tensor *dst, const kiln_expr *e)
{
    kiln_plan *p = NULL;
    int n = -1;
    if (kiln__plan_build(dst, e, KILN_ROUND_DEFAULT, &p) == KILN_OK) {
        n = 0;
        for (int k = 0; k < p->nkernels; k++)
            for (int i = 0; i < p->kernels[k].ninstr; i++) n += p->kernels[k].instr[i].op == KILN_POP_RED_VAR;
        kiln__plan_free(p);
    }
    return n;
}

static void test_welford_rule(void)
{
    unsetenv("KILN_VAR_PASSES");
    struct {
        kiln_dtype dt;
        int64_t n, c;
        int axis, one; /* the rule's answer: written out (the destination a value a column or row) */
    } rule[] = {
        {KILN_DTYPE_F32, 8192, 8192, 0, 1}, /* 256 MB down columns */
        {KILN_DTYPE_F16, 65536, 1024, 0, 1},
        {KILN_DTYPE_F32, 8192, 8192, 1, 0}, /* along rows */
        {KILN_DTYPE_F16, 4096, 4096, 0, 1}, /* 32 MB, in the L2: written out, from 256 rows */
        {KILN_DTYPE_F16, 1024, 16384, 0, 1},
        {KILN_DTYPE_F32, 1024, 65536, 0, 1}, /* 1024 rows of 4 bytes */
        {KILN_DTYPE_F16, 1024, 65536, 0, 1}, /* 1024 rows of 2 bytes, past the L2 */
        {KILN_DTYPE_F32, 1000, 65536, 0, 1}, /* fewer than 1024 rows, written out */
        {KILN_DTYPE_F16, 256, 8192, 0, 1},
        {KILN_DTYPE_BF16, 255, 8192, 0, 0}, /* fewer than 256 rows */
        {KILN_DTYPE_F32, 200, 65536, 0, 0},
        {KILN_DTYPE_F32, 4096, 4096, 0, 1}, /* f32 in the L2 too */
    };
    for (size_t r = 0; r < sizeof rule / sizeof rule[0]; r++) {
        /* a plan needs a destination and an expression, not data: a broadcast view of one value */
        kiln_tensor *one = NULL, *x = NULL, *dst = NULL;
        int64_t shape[2] = {rule[r].n, rule[r].c};
        int64_t dshape[2] = {rule[r].axis ? rule[r].n : 1, rule[r].axis ? 1 : rule[r].c};
        CHECK_OK(gpu, kiln_tensor_empty(gpu, rule[r].dt, 0, NULL, &one));
        CHECK_OK(gpu, kiln_tensor_broadcast_to(one, 2, shape, &x));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F32, 2, dshape, &dst));
        int ax = rule[r].axis;
        kiln_expr *e = kiln_reduce(KILN_REDUCE_VAR, kiln_t(x), 1, &ax, 1);
        int got = plan_red_vars(dst, e);
        if (got != rule[r].one)
            fprintf(stderr, "  welford rule case %zu: %d RED_VAR in the plan, want %d\n", r, got, rule[r].one);
        CHECK(got == rule[r].one);
        kiln_expr_release(e);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
        kiln_tensor_release(one);
    }
    /* broadcast back over x (x - var(x, 0) into x's shape, as batch norm): 16-bit inputs in the
     * L2 keep two passes, f32 takes one */
    struct {
        kiln_dtype dt;
        int64_t n, c;
        int one;
    } back[] = {{KILN_DTYPE_F16, 4096, 4096, 0}, {KILN_DTYPE_BF16, 50000, 64, 0}, {KILN_DTYPE_F32, 4096, 4096, 1},
                {KILN_DTYPE_F16, 65536, 1024, 1}};
    for (size_t r = 0; r < sizeof back / sizeof back[0]; r++) {
        kiln_tensor *one = NULL, *x = NULL, *dst = NULL;
        int64_t shape[2] = {back[r].n, back[r].c};
        CHECK_OK(gpu, kiln_tensor_empty(gpu, back[r].dt, 0, NULL, &one));
        CHECK_OK(gpu, kiln_tensor_broadcast_to(one, 2, shape, &x));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F32, 2, shape, &dst));
        kiln_expr *e = kiln_sub(kiln_t(x), kiln_var(kiln_t(x), 0));
        int got = plan_red_vars(dst, e);
        if (got != back[r].one)
            fprintf(stderr, "  welford rule, broadcast back, case %zu: %d RED_VAR in the plan, want %d\n", r, got,
                    back[r].one);
        CHECK(got == back[r].one);
        kiln_expr_release(e);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
        kiln_tensor_release(one);
    }
    /* the default's one pass (6000 x 4096 f32: 98 MB, past the H100's 50 MB L2) against the CPU */
    int64_t shape[2] = {6000, 4096};
    kiln_tensor *tc, *tg;
    make_pair(KILN_DTYPE_F32, 2, shape, V_PLAIN, -2, 3, &tc, &tg);
    for (int kind = 0; kind < 6; kind += 2) {
        char what[96];
        snprintf(what, sizeof what, "welford default kind %d", kind);
        compare(what, b_welford, &kind, &tc, &tg, KILN_DTYPE_AUTO, 2e-4);
    }
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
}

/* A row's statistic broadcast back into the row (x * 0 + stat(x, 1), computed in f64 so the
 * statistic's bits survive): every element of a row must hold the same bits, whichever lane and
 * warp of the block combined it. The one-pass variance's merges (kiln_var_comb) and the arg
 * reductions' are symmetric, so the butterflies of kiln_row_var / kiln_row_arg leave every lane
 * with one value; so is a sum's (kiln_row_red). Rows of one warp, of 16 and of a split. */
static kiln_expr *b_row_stat(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p, ax = 1;
    kiln_expr *zero = kiln_mul(kiln_cast(kiln_t(in[0]), KILN_DTYPE_F64), kiln_scalar(0));
    kiln_expr *stat = kind == 0   ? kiln_reduce(KILN_REDUCE_VAR, kiln_t(in[0]), 1, &ax, 1)
                      : kind == 1 ? kiln_reduce(KILN_REDUCE_MEAN, kiln_t(in[0]), 1, &ax, 1)
                                  : kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(in[0]), 1, &ax, 1);
    return kiln_add(zero, kiln_cast(stat, KILN_DTYPE_F64));
}

/* build(tg) evaluated on the GPU in f64 over a rows x cols input: every element of a row holds
 * the bits of the row's first. */
static void check_row_bits(const char *what, build_fn build, const void *param, kiln_tensor *const *tg, int64_t rows,
                           int64_t cols)
{
    kiln_tensor *o = NULL;
    CHECK_OK(gpu, kiln_eval(gpu, build(tg, param), KILN_DTYPE_F64, &o));
    if (!o) return;
    uint64_t *h = malloc((size_t)(rows * cols) * sizeof *h);
    CHECK_OK(gpu, kiln_tensor_read(o, h, KILN_DTYPE_F64));
    int64_t bad = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 1; j < cols; j++) bad += h[r * cols + j] != h[r * cols];
    if (bad) fprintf(stderr, "  %s: %lld elements differ from their row's first\n", what, (long long)bad);
    CHECK(bad == 0);
    free(h);
    kiln_tensor_release(o);
}

static void test_row_stat_bits(void)
{
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
    } cases[] = {{KILN_DTYPE_F32, {7, 129}},  {KILN_DTYPE_F32, {64, 8192}}, {KILN_DTYPE_F16, {33, 8192}},
                 {KILN_DTYPE_F64, {5, 3001}}, {KILN_DTYPE_F32, {3, 300001}},
                 /* short rows, W lanes of a warp a row (kiln_seg_*) */
                 {KILN_DTYPE_F32, {4099, 20}}, {KILN_DTYPE_F16, {1000, 64}}, {KILN_DTYPE_F64, {333, 7}}};
    const char *passes[] = {"1", NULL};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, 2, cases[c].shape, V_PLAIN, -2, 3, &tc, &tg);
        for (int ps = 0; ps < 2; ps++) {
            if (passes[ps]) setenv("KILN_VAR_PASSES", passes[ps], 1);
            else unsetenv("KILN_VAR_PASSES");
            for (int kind = 0; kind < 3; kind++) {
                char what[96];
                snprintf(what, sizeof what, "row stat bits case %zu kind %d passes %s", c, kind,
                         passes[ps] ? passes[ps] : "default");
                compare(what, b_row_stat, &kind, &tc, &tg, KILN_DTYPE_F64, cases[c].dt == KILN_DTYPE_F64 ? 1e-10 : 4e-3);
                check_row_bits(what, b_row_stat, &kind, &tg, cases[c].shape[0], cases[c].shape[1]);
            }
        }
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    unsetenv("KILN_VAR_PASSES");
}

/* A bad value of the variable var is a KILN_ERR_ARG naming it: build on a random rows x cols
 * f32 input, evaluated on the GPU with var set to bad (then unset). */
static void knob_bad(const char *var, const char *bad, build_fn build, const void *param, int64_t rows, int64_t cols)
{
    int64_t shape[2] = {rows, cols};
    kiln_tensor *tc, *tg, *o = NULL;
    make_pair(KILN_DTYPE_F32, 2, shape, V_PLAIN, -2, 3, &tc, &tg);
    setenv(var, bad, 1);
    CHECK_FAILS(gpu, kiln_eval(gpu, build(&tg, param), KILN_DTYPE_AUTO, &o), KILN_ERR_ARG, var);
    unsetenv(var);
    kiln_tensor_release(o);
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
}

static void test_welford(void)
{
    struct {
        kiln_dtype dt;
        int64_t shape[2];
        const char *colvec; /* KILN_REDUCE_COLVEC for the case, NULL: unset */
        double tol;
    } cases[] = {
        {KILN_DTYPE_F32, {7, 129}, NULL, 2e-4},         {KILN_DTYPE_F16, {64, 8192}, NULL, 4e-3},
        {KILN_DTYPE_F32, {3, 50000}, NULL, 2e-4},       {KILN_DTYPE_F32, {100000, 64}, NULL, 2e-4},
        {KILN_DTYPE_F16, {60000, 256}, NULL, 4e-3},     {KILN_DTYPE_F16, {30000, 64}, "force", 4e-3},
        {KILN_DTYPE_BF16, {2049, 33}, NULL, 3e-2},      {KILN_DTYPE_F64, {5000, 32}, "force", 1e-10},
        {KILN_DTYPE_F32, {3000, 4096}, NULL, 2e-4},     {KILN_DTYPE_F64, {3000, 17}, "0", 1e-10},
    };
    setenv("KILN_VAR_PASSES", "1", 1);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].colvec) setenv("KILN_REDUCE_COLVEC", cases[c].colvec, 1);
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, 2, cases[c].shape, V_PLAIN, -2, 3, &tc, &tg);
        for (int kind = 0; kind < 6; kind++) {
            char what[96];
            snprintf(what, sizeof what, "welford case %zu kind %d", c, kind);
            compare(what, b_welford, &kind, &tc, &tg, KILN_DTYPE_AUTO, cases[c].tol);
            if (cases[c].shape[0] * cases[c].shape[1] >= 100000)
                check_repeatable(what, b_welford, &kind, &tg, KILN_DTYPE_AUTO);
        }
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
        unsetenv("KILN_REDUCE_COLVEC");
    }
    int kind = 0;
    knob_bad("KILN_VAR_PASSES", "3", b_welford, &kind, 8, 8);
    test_welford_rule();
    test_row_stat_bits();
}

/* ---- random numbers and stochastic rounding: bit identity ------------------------------------ */

static int same_bits(kiln_tensor *a, kiln_tensor *b, kiln_dtype dt)
{
    int64_t n = kiln_tensor_numel(a);
    size_t es = kiln_dtype_size(dt);
    char *x = malloc((size_t)n * es + 1), *y = malloc((size_t)n * es + 1);
    CHECK_OK(kiln_tensor_ctx(a), kiln_tensor_read(a, x, dt));
    CHECK_OK(kiln_tensor_ctx(b), kiln_tensor_read(b, y, dt));
    int64_t diff = 0;
    for (int64_t i = 0; i < n; i++)
        if (memcmp(x + i * (int64_t)es, y + i * (int64_t)es, es) != 0) diff++;
    if (diff) fprintf(stderr, "  %lld of %lld elements differ in their bits\n", (long long)diff, (long long)n);
    free(x);
    free(y);
    return diff == 0;
}

/* build(tg) evaluated as the environment stands and again with `var` set to "0": the same bits,
 * and count() (a launch counter of the path `var` turns off; NULL: none) unmoved by the second.
 * `var` is then restored to `back` (NULL: unset). */
static void knob_off_same_bits(const char *var, const char *back, build_fn build, const void *param, kiln_tensor *tg,
                               int64_t (*count)(void), const char *what)
{
    kiln_tensor *o1 = NULL, *o0 = NULL;
    CHECK_OK(gpu, kiln_eval(gpu, build(&tg, param), KILN_DTYPE_AUTO, &o1));
    setenv(var, "0", 1);
    int64_t before = count ? count() : 0;
    CHECK_OK(gpu, kiln_eval(gpu, build(&tg, param), KILN_DTYPE_AUTO, &o0));
    if (count) CHECK_INT(count(), before);
    if (back)
        setenv(var, back, 1);
    else
        unsetenv(var);
    if (o1 && o0) {
        int same = same_bits(o1, o0, kiln_tensor_dtype(o1));
        if (!same) fprintf(stderr, "  %s: %s=0 gives other bits\n", what, var);
        CHECK(same);
    }
    kiln_tensor_release(o1);
    kiln_tensor_release(o0);
}

static void test_rng_bits(void)
{
    for (int seed = 0; seed < 2; seed++) {
        kiln_ctx *c = make_ctx(KILN_DEVICE_CPU, 1234 + (uint64_t)seed * 0x9E3779B97F4A7C15ull);
        kiln_ctx *g = make_ctx(KILN_DEVICE_CUDA, 1234 + (uint64_t)seed * 0x9E3779B97F4A7C15ull);
        CHECK(c && g);
        if (!c || !g) return;
        int64_t shape[2] = {333, 257};
        int64_t n = shape[0] * shape[1];
        double *h = malloc((size_t)n * sizeof(double));
        check_fill(&rng, h, n, -3, 3);
        kiln_tensor *xc = from_f64(c, KILN_DTYPE_F32, 2, shape, h), *xg = from_f64(g, KILN_DTYPE_F32, 2, shape, h);
        free(h);
        kiln_tensor *yc, *yg, *hc, *hg;
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F32, 2, shape, &yc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F32, 2, shape, &yg));
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F16, 2, shape, &hc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F16, 2, shape, &hg));
        /* the same sequence of operations on both contexts, so the same Philox streams */
        for (int step = 0; step < 8; step++) {
            kiln_expr *ec = NULL, *eg = NULL;
            kiln_tensor *dc = yc, *dg = yg;
            kiln_dtype dt = KILN_DTYPE_F32;
            kiln_assign_args aa = {.round = KILN_ROUND_NEAREST};
            switch (step) {
            case 0: ec = kiln_rand(); eg = kiln_rand(); break;
            case 1: ec = kiln_randn(); eg = kiln_randn(); break;
            case 2: ec = kiln_bernoulli(0.3); eg = kiln_bernoulli(0.3); break;
            case 3: ec = kiln_dropout(kiln_t(xc), 0.25); eg = kiln_dropout(kiln_t(xg), 0.25); break;
            case 4: /* a generator inside a reduction kernel: FULL index = linear index in D */
                ec = kiln_where(kiln_gt(kiln_t(xc), kiln_scalar(-1e30)), kiln_randn(), kiln_mean(kiln_t(xc), 1));
                eg = kiln_where(kiln_gt(kiln_t(xg), kiln_scalar(-1e30)), kiln_randn(), kiln_mean(kiln_t(xg), 1));
                break;
            case 5: /* column-style reduction kernel with a generator */
                ec = kiln_where(kiln_gt(kiln_t(xc), kiln_scalar(-1e30)), kiln_rand(), kiln_max(kiln_t(xc), 0));
                eg = kiln_where(kiln_gt(kiln_t(xg), kiln_scalar(-1e30)), kiln_rand(), kiln_max(kiln_t(xg), 0));
                break;
            case 6: /* stochastic rounding to f16 */
                ec = kiln_mul(kiln_t(xc), kiln_scalar(1.0 / 3.0));
                eg = kiln_mul(kiln_t(xg), kiln_scalar(1.0 / 3.0));
                dc = hc;
                dg = hg;
                dt = KILN_DTYPE_F16;
                aa.round = KILN_ROUND_STOCHASTIC;
                break;
            default: /* nearest rounding to f16 */
                ec = kiln_mul(kiln_t(xc), kiln_scalar(1.0 / 3.0));
                eg = kiln_mul(kiln_t(xg), kiln_scalar(1.0 / 3.0));
                dc = hc;
                dg = hg;
                dt = KILN_DTYPE_F16;
                break;
            }
            CHECK_OK(c, kiln_assign_ex(dc, ec, &aa));
            CHECK_OK(g, kiln_assign_ex(dg, eg, &aa));
            int ok = same_bits(dc, dg, dt);
            if (!ok) fprintf(stderr, "  rng step %d seed %d: CPU and CUDA bits differ\n", step, seed);
            CHECK(ok);
        }
        kiln_tensor_release(xc);
        kiln_tensor_release(xg);
        kiln_tensor_release(yc);
        kiln_tensor_release(yg);
        kiln_tensor_release(hc);
        kiln_tensor_release(hg);
        kiln_ctx_destroy(c);
        kiln_ctx_destroy(g);
    }
}

/* ---- split reductions ------------------------------------------------------------------------ */

static kiln_cuda_stats stats_of(kiln_ctx *g)
{
    kiln_cuda_stats s;
    memset(&s, 0, sizeof s);
    CHECK_OK(g, kiln__cuda_cache_stats(g, &s));
    return s;
}

static int64_t split_count(void) { return stats_of(gpu).reduce_splits; }

/* A reduction knob: var=off runs build unchanged in value with count() not moving, and a
 * bad value is a KILN_ERR_ARG naming var. */
static void knob_off_and_bad(const char *var, const char *off, const char *bad, int64_t (*count)(void), build_fn build,
                             const void *param, kiln_tensor *tc, kiln_tensor *tg, kiln_dtype out_dt, double tol)
{
    setenv(var, off, 1);
    int64_t before = count();
    compare(var, build, param, &tc, &tg, out_dt, tol);
    CHECK_INT(count(), before);
    setenv(var, bad, 1);
    kiln_tensor *o = NULL;
    CHECK_FAILS(gpu, kiln_eval(gpu, build(&tg, param), out_dt, &o), KILN_ERR_ARG, var);
    kiln_tensor_release(o);
    unsetenv(var);
}

/* build on the GPU twice: the same bits both times (the partials fold in a fixed order) */
static void check_repeatable(const char *what, build_fn build, const void *param, kiln_tensor *const *ig,
                             kiln_dtype out_dt)
{
    kiln_tensor *o1 = NULL, *o2 = NULL;
    CHECK_OK(gpu, kiln_eval(gpu, build(ig, param), out_dt, &o1));
    CHECK_OK(gpu, kiln_eval(gpu, build(ig, param), out_dt, &o2));
    if (!o1 || !o2) {
        kiln_tensor_release(o1);
        kiln_tensor_release(o2);
        return;
    }
    int same = same_bits(o1, o2, kiln_tensor_dtype(o1));
    if (!same) fprintf(stderr, "  case %s: two runs differ\n", what);
    CHECK(same);
    kiln_tensor_release(o1);
    kiln_tensor_release(o2);
}

static kiln_expr *b_short(kiln_tensor *const *in, const void *p);

/* Reductions whose rows are far longer than the rows are many: a sum to one value, a few
 * long rows, a few long columns, multi-pass (variance, standard deviation), broadcast back
 * into a full output (x - max(x), x - var(x)), arg reductions with ties and a NaN across
 * slices, views; in f32, f16, bf16 and f64. Each against the CPU backend, each split
 * (the context's counter moves), each the same bits twice; KILN_REDUCE_SPLIT=0 runs them
 * unsplit, and a bad value is an error naming it. */
static void test_split(void)
{
    struct {
        const char *what;
        kiln_dtype dt;
        int nd;
        int64_t shape[3];
        int view;
        red_param rp;
        double tol;
    } cases[] = {
        {"sum to one f32", KILN_DTYPE_F32, 1, {3000001}, V_PLAIN, {KILN_REDUCE_SUM, 0, {0}, 0, 0}, 1e-5},
        {"sum to one f16, rows 2", KILN_DTYPE_F16, 2, {2, 2500000}, V_PLAIN, {KILN_REDUCE_SUM, 0, {0}, 0, 0}, 1e-5},
        {"mean to one bf16, strided", KILN_DTYPE_BF16, 2, {1000, 2001}, V_STEP, {KILN_REDUCE_MEAN, 0, {0}, 0, 0}, 1e-5},
        {"sum to one f32, transposed", KILN_DTYPE_F32, 2, {1500, 1301}, V_T, {KILN_REDUCE_SUM, 0, {0}, 0, 0}, 1e-5},
        {"row max f32", KILN_DTYPE_F32, 2, {3, 1000003}, V_PLAIN, {KILN_REDUCE_MAX, 1, {1}, 0, 0}, 0},
        {"row var f32", KILN_DTYPE_F32, 2, {5, 400000}, V_PLAIN, {KILN_REDUCE_VAR, 1, {1}, 0, 0}, 1e-4},
        {"row std f64", KILN_DTYPE_F64, 2, {2, 700001}, V_PLAIN, {KILN_REDUCE_STD, 1, {1}, 1, 0}, 1e-12},
        {"x - max(x) rows f32", KILN_DTYPE_F32, 2, {2, 1000000}, V_PLAIN, {KILN_REDUCE_MAX, 1, {1}, 1, 1}, 1e-6},
        {"x - mean(x) all f16", KILN_DTYPE_F16, 1, {1234567}, V_PLAIN, {KILN_REDUCE_MEAN, 0, {0}, 1, 1}, 2e-3},
        {"column sum f32", KILN_DTYPE_F32, 2, {1000000, 3}, V_PLAIN, {KILN_REDUCE_SUM, 1, {0}, 0, 0}, 1e-5},
        {"x - var(x) columns f16", KILN_DTYPE_F16, 2, {600000, 5}, V_PLAIN, {KILN_REDUCE_VAR, 1, {0}, 1, 1}, 8e-3},
        {"column argmin f32", KILN_DTYPE_F32, 2, {2000000, 2}, V_PLAIN, {KILN_REDUCE_ARGMIN, 1, {0}, 0, 0}, 0},
        /* columns enough for 32-wide blocks, too few for the device: split, not narrowed */
        /* (an f16 sum near 10 000: the CPU's order and the split's may round to neighbouring f16
         * values, 8 apart; an H100 run met one such column in 999: 8e-4 relative) */
        {"column sum f16, 999 columns", KILN_DTYPE_F16, 2, {20000, 999}, V_PLAIN, {KILN_REDUCE_SUM, 1, {0}, 0, 0}, 1e-3},
        {"x - max(x) columns bf16, strided", KILN_DTYPE_BF16, 2, {12000, 1500}, V_STEP, {KILN_REDUCE_MAX, 1, {0}, 1, 1},
         1e-2},
        {"argmax of all f32", KILN_DTYPE_F32, 3, {2, 3, 300000}, V_PLAIN, {KILN_REDUCE_ARGMAX, 0, {0}, 0, 0}, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, cases[c].nd, cases[c].shape, cases[c].view, -2, 3, &tc, &tg);
        int64_t before = split_count();
        compare(cases[c].what, b_reduce, &cases[c].rp, &tc, &tg, KILN_DTYPE_AUTO, cases[c].tol);
        int64_t after = split_count();
        if (after <= before) fprintf(stderr, "  case %s: not split\n", cases[c].what);
        CHECK(after > before);
        check_repeatable(cases[c].what, b_reduce, &cases[c].rp, &tg, KILN_DTYPE_AUTO);
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    /* products (exact, b_prod_exact): split along rows, columns, to one value, and written back */
    {
        struct {
            const char *what;
            kiln_dtype dt;
            int nd;
            int64_t shape[2];
            int view;
            red_param rp;
        } pc[] = {
            {"prod to one f32", KILN_DTYPE_F32, 1, {3000001}, V_PLAIN, {KILN_REDUCE_PROD, 0, {0}, 0, 0}},
            {"row prod f16", KILN_DTYPE_F16, 2, {3, 1000003}, V_PLAIN, {KILN_REDUCE_PROD, 1, {1}, 0, 0}},
            {"column prod f32, transposed", KILN_DTYPE_F32, 2, {1000000, 3}, V_T, {KILN_REDUCE_PROD, 1, {0}, 0, 0}},
            {"column prod bf16, 999 columns", KILN_DTYPE_BF16, 2, {20000, 999}, V_PLAIN, {KILN_REDUCE_PROD, 1, {0}, 0, 0}},
            {"x - prod(x) rows f64", KILN_DTYPE_F64, 2, {2, 700001}, V_PLAIN, {KILN_REDUCE_PROD, 1, {1}, 1, 1}},
        };
        for (size_t c = 0; c < sizeof pc / sizeof pc[0]; c++) {
            kiln_tensor *tc, *tg;
            make_pair(pc[c].dt, pc[c].nd, pc[c].shape, pc[c].view, -1, 1, &tc, &tg);
            int64_t before = split_count();
            /* 16-bit inputs: the f32 result (a million f16 values hold more exact 1.0s than values under 5e-5) */
            const kiln_dtype odt = kiln_dtype_size(pc[c].dt) == 2 ? KILN_DTYPE_F32 : KILN_DTYPE_AUTO;
            compare(pc[c].what, b_prod_exact, &pc[c].rp, &tc, &tg, odt, 0);
            CHECK(split_count() > before);
            check_repeatable(pc[c].what, b_prod_exact, &pc[c].rp, &tg, odt);
            kiln_tensor_release(tc);
            kiln_tensor_release(tg);
        }
    }
    /* short rows (100 000 f32, ~7 tiles): reduced to one value in one pass they stay on one
     * block, since a split would cost more than it saves; written back whole they split */
    {
        int64_t shape[1] = {100000};
        kiln_tensor *tc, *tg;
        make_pair(KILN_DTYPE_F32, 1, shape, V_PLAIN, -2, 3, &tc, &tg);
        red_param one = {KILN_REDUCE_SUM, 0, {0}, 0, 0}, back = {KILN_REDUCE_MAX, 0, {0}, 1, 1};
        int64_t before = split_count();
        compare("short sum", b_reduce, &one, &tc, &tg, KILN_DTYPE_AUTO, 1e-5);
        CHECK_INT(split_count(), before);
        compare("short x - max(x)", b_reduce, &back, &tc, &tg, KILN_DTYPE_AUTO, 1e-6);
        CHECK(split_count() > before);
        setenv("KILN_REDUCE_SPLIT", "force", 1); /* wherever rows are two tiles or more */
        before = split_count();
        compare("short sum, forced", b_reduce, &one, &tc, &tg, KILN_DTYPE_AUTO, 1e-5);
        CHECK(split_count() > before);
        unsetenv("KILN_REDUCE_SPLIT");
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    /* softmax over few unshifted 16-bit rows (a block a row, at most half an SM a row): where
     * row_fill's doubled walk fits one 1024-thread tile and the undoubled one does not, the rule
     * doubles it and the row stays on one block; KILN_REDUCE_ROWFILL=0 splits it; rows too long
     * for one doubled tile split either way */
    {
        const struct {
            kiln_dtype dt;
            int64_t shape[2];
            int split_unset;
        } fc[] = {{KILN_DTYPE_F16, {8, 32000}, 0}, {KILN_DTYPE_BF16, {16, 20000}, 0}, {KILN_DTYPE_F16, {2, 65536}, 1}};
        for (size_t c = 0; c < sizeof fc / sizeof fc[0]; c++) {
            kiln_tensor *tc, *tg;
            make_pair(fc[c].dt, 2, fc[c].shape, V_PLAIN, -2, 3, &tc, &tg);
            int kind = 0;
            const double tol = fc[c].dt == KILN_DTYPE_F16 ? 1e-2 : 4e-2;
            for (int fill = 0; fill < 2; fill++) {
                char what[96];
                snprintf(what, sizeof what, "few rows softmax case %zu rowfill %s", c, fill ? "unset" : "0");
                if (fill)
                    unsetenv("KILN_REDUCE_ROWFILL");
                else
                    setenv("KILN_REDUCE_ROWFILL", "0", 1);
                int64_t before = split_count();
                compare(what, b_short, &kind, &tc, &tg, KILN_DTYPE_AUTO, tol);
                const int want = fill ? fc[c].split_unset : 1;
                if ((split_count() > before) != want) fprintf(stderr, "  %s: split %d, want %d\n", what, split_count() > before, want);
                CHECK_INT(split_count() > before, want);
            }
            unsetenv("KILN_REDUCE_ROWFILL");
            kiln_tensor_release(tc);
            kiln_tensor_release(tg);
        }
    }
    /* arg reductions across slices: a tie (the first index wins) and a NaN (it wins) */
    for (int nan = 0; nan < 2; nan++) {
        int64_t n = 3000000, shape[1] = {n};
        double *h = malloc((size_t)n * sizeof *h);
        check_fill(&rng, h, n, -2, 3);
        h[123457] = 7, h[2999000] = 7;
        if (nan) h[2000001] = NAN, h[2900000] = NAN;
        kiln_tensor *tc = from_f64(cpu, KILN_DTYPE_F32, 1, shape, h), *tg = from_f64(gpu, KILN_DTYPE_F32, 1, shape, h);
        red_param rp = {KILN_REDUCE_ARGMAX, 0, {0}, 0, 0};
        compare(nan ? "argmax, NaN" : "argmax, tie", b_reduce, &rp, &tc, &tg, KILN_DTYPE_AUTO, 0);
        kiln_tensor *o = NULL;
        CHECK_OK(gpu, kiln_eval(gpu, b_reduce(&tg, &rp), KILN_DTYPE_AUTO, &o));
        if (o) {
            double *v = read_f64(o);
            CHECK_INT((int64_t)v[0], nan ? 2000001 : 123457);
            free(v);
        }
        kiln_tensor_release(o);
        free(h);
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    /* KILN_REDUCE_SPLIT=0: unsplit, the same values within rounding; a bad value names it */
    int64_t shape[1] = {2000003};
    kiln_tensor *tc, *tg;
    make_pair(KILN_DTYPE_F32, 1, shape, V_PLAIN, -2, 3, &tc, &tg);
    red_param rp = {KILN_REDUCE_SUM, 0, {0}, 0, 0};
    knob_off_and_bad("KILN_REDUCE_SPLIT", "0", "2", split_count, b_reduce, &rp, tc, tg, KILN_DTYPE_AUTO, 1e-5);
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
}

/* ---- COLUMN mode with lanes ------------------------------------------------------------------ */

static int64_t lanes_count(void) { return stats_of(gpu).reduce_lanes; }

/* The column reductions of the lanes section; in[1], where used, is broadcast into in[0]. */
static kiln_expr *b_lanes(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p, ax0[1] = {0}, ax1[1] = {1};
    switch (kind) {
    case 0: return kiln_reduce(KILN_REDUCE_SUM, kiln_t(in[0]), 1, ax0, 0);
    case 1: /* in[1] (rows, 1): the same value across a thread's lanes */
        return kiln_reduce(KILN_REDUCE_SUM, kiln_mul(kiln_t(in[0]), kiln_t(in[1])), 1, ax0, 0);
    case 2: /* in[1] (columns,): one value a lane, constant down the column */
        return kiln_reduce(KILN_REDUCE_SUM, kiln_sqr(kiln_sub(kiln_t(in[0]), kiln_t(in[1]))), 1, ax0, 0);
    case 3: return kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(in[0]), 1, ax0, 0);
    case 4: return kiln_reduce(KILN_REDUCE_ARGMIN, kiln_t(in[0]), 1, ax0, 0);
    case 5: return kiln_reduce(KILN_REDUCE_VAR, kiln_t(in[0]), 1, ax0, 0);
    case 6: /* x - max(x) down the columns, written back whole */
        return kiln_sub(kiln_t(in[0]), kiln_reduce(KILN_REDUCE_MAX, kiln_t(in[0]), 1, ax0, 1));
    case 7: /* (a, b, c) over b: rows a x c, lanes along c */
        return kiln_reduce(KILN_REDUCE_SUM, kiln_t(in[0]), 1, ax1, 0);

    default: /* batch norm over rows, columns its features (NHWC) */
        return kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(in[0]), 0), kiln_scalar(1e-5))),
                        kiln_sub(kiln_t(in[0]), kiln_mean(kiln_t(in[0]), 0)));
    }
}

/* Column reductions where a thread owns VEC neighbouring columns (16-byte loads): sums,
 * broadcasts across and along the lanes, arg reductions, two passes, the output written
 * back whole, 3-D, batch norm, split and unsplit (wide: a block an SM even so), in f16,
 * bf16, f32, f64 and i8; each against the CPU backend and each counted as a launch with
 * lanes. Views that rule lanes out (misaligned, transposed, odd widths) and reductions where
 * the device rule (lanes_pay) declines them (too few columns) are correct and not counted;
 * cases marked 2 run under KILN_REDUCE_COLVEC=force, which takes lanes wherever the layout
 * allows, so that the lanes kernels of few columns are tested too. Stochastic rounding and
 * generators are keyed by the element, not the lane: the same bits as the CPU where the value
 * before rounding is exact (max, x - max(x) of f16). KILN_REDUCE_COLVEC=0 turns lanes off, a
 * bad value names the variable. */
static void test_lanes(void)
{
    struct {
        const char *what;
        kiln_dtype dt, out;
        int nd;
        int64_t shape[3];
        int view, kind, lanes; /* 0 none, 1 lanes by the device rule, 2 lanes when forced */
        double tol;
    } cases[] = {
        {"sum f16, split", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {40000, 1024}, V_PLAIN, 0, 2, 1e-5},
        {"sum f16, 128 lane columns (no lanes)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {40000, 1024}, V_PLAIN, 0, 0, 1e-5},
        {"sum f32, 1024 lane columns, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {20000, 4096}, V_PLAIN, 0, 1, 1e-5},
        {"sum f16, wide", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {64, 8192}, V_PLAIN, 0, 1, 1e-5},
        {"sum f16, few columns (no lanes)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {300, 64}, V_PLAIN, 0, 0, 1e-5},
        {"sum f16 to f16", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {200, 4400}, V_PLAIN, 0, 1, 1e-3},
        {"sum bf16, strided rows", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {300, 4800}, V_STEP, 0, 1, 1e-5},
        {"sum f32, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {100000, 516}, V_PLAIN, 0, 2, 1e-5},
        {"sum f64", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {100, 2400}, V_PLAIN, 0, 1, 1e-12},
        {"sum i8", KILN_DTYPE_I8, KILN_DTYPE_F32, 2, {99, 4800}, V_PLAIN, 0, 1, 1e-6},
        {"sum f16, misaligned", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {3000, 4800}, V_OFF, 0, 0, 1e-5},
        {"sum f16, transposed", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {3000, 4800}, V_T, 0, 0, 1e-5},
        {"sum f16, 4801 columns", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {300, 4801}, V_PLAIN, 0, 0, 1e-5},
        {"weighted sum f16 (rows, 1), split", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {20000, 256}, V_PLAIN, 1, 2, 1e-4},
        {"squares about a row f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {700, 2400}, V_PLAIN, 2, 1, 1e-5},
        {"argmax bf16", KILN_DTYPE_BF16, KILN_DTYPE_AUTO, 2, {500, 4800}, V_PLAIN, 3, 1, 0},
        {"argmin f16, split", KILN_DTYPE_F16, KILN_DTYPE_AUTO, 2, {300000, 64}, V_PLAIN, 4, 2, 0},
        {"var f32, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {30000, 64}, V_PLAIN, 5, 2, 1e-4},
        {"var f16, split", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {200000, 128}, V_PLAIN, 5, 2, 1e-4},
        /* one pass by the device's rule (past the L2): a variance takes lanes at any count of lane
         * columns from 16-bit inputs and below 32 from f32, where a sum takes them from 256 (its
         * lanes fold together, one count for all) */
        {"var f16, 128 lane columns, split", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {65536, 1024}, V_PLAIN, 5, 1, 1e-4},
        {"var bf16, 32 lane columns, split", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {300000, 256}, V_PLAIN, 5, 1, 1e-4},
        {"var f16, 4 lane columns, split", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {1600000, 32}, V_PLAIN, 5, 1, 1e-4},
        {"var f32, 8 lane columns, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1600000, 32}, V_PLAIN, 5, 1, 1e-4},
        {"var f32, 64 lane columns (no lanes)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {300000, 256}, V_PLAIN, 5, 0, 1e-4},
        /* two passes asked for: at 100000 x 512 f16 (past the L2) the device's rule takes one
         * pass (RED_VAR), and one pass with nothing cached takes lanes from 256 lane columns */
        {"var f16, 64 lane columns, split (two passes)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {100000, 512}, V_PLAIN, 5,
         1, 1e-4},
        {"x - max(x) f16, split", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3000, 256}, V_PLAIN, 6, 2, 0},
        {"x - max(x) f32, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {100000, 32}, V_PLAIN, 6, 2, 0},
        {"3-D sum over the middle f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 3, {16, 50, 512}, V_PLAIN, 7, 1, 1e-5},
        {"batch norm f16, split", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {4096, 64}, V_PLAIN, 8, 2, 4e-3},
        {"batch norm f16, 8 lane columns (no lanes)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {4096, 64}, V_PLAIN, 8, 0, 4e-3},
        {"batch norm f16, 32 lane columns, split", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {60000, 256}, V_PLAIN, 8, 1, 4e-3},
        {"batch norm f32, split", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {200000, 16}, V_PLAIN, 8, 2, 2e-4},
        {"batch norm f64, split", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {5000, 32}, V_PLAIN, 8, 2, 1e-12},
        {"batch norm f16, wide", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {8, 8192}, V_PLAIN, 8, 1, 4e-3},

    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_tensor *tc[2] = {NULL, NULL}, *tg[2] = {NULL, NULL};
        make_pair(cases[c].dt, cases[c].nd, cases[c].shape, cases[c].view, -2, 3, &tc[0], &tg[0]);
        if (cases[c].kind == 1 || cases[c].kind == 2) {
            int64_t rows1[2] = {cases[c].shape[0], 1}, cols[1] = {cases[c].shape[1]};
            if (cases[c].kind == 1)
                make_pair(cases[c].dt, 2, rows1, V_PLAIN, -1, 1, &tc[1], &tg[1]);
            else
                make_pair(cases[c].dt, 1, cols, V_PLAIN, -1, 1, &tc[1], &tg[1]);
        }
        if (cases[c].lanes == 2) setenv("KILN_REDUCE_COLVEC", "force", 1);
        if (strstr(cases[c].what, "(two passes)")) setenv("KILN_VAR_PASSES", "2", 1);
        int64_t before = lanes_count();
        compare(cases[c].what, b_lanes, &cases[c].kind, tc, tg, cases[c].out, cases[c].tol);
        int64_t moved = lanes_count() - before;
        if ((moved > 0) != (cases[c].lanes > 0))
            fprintf(stderr, "  lanes case %s: %s\n", cases[c].what, moved ? "lanes where none belong" : "no lanes");
        CHECK_INT(moved > 0, cases[c].lanes > 0);
        if (strstr(cases[c].what, "split")) check_repeatable(cases[c].what, b_lanes, &cases[c].kind, tg, cases[c].out);
        unsetenv("KILN_REDUCE_COLVEC");
        unsetenv("KILN_VAR_PASSES");
        for (int i = 0; i < 2; i++) {
            kiln_tensor_release(tc[i]);
            kiln_tensor_release(tg[i]);
        }
    }
    /* the column means assigned to a full-shape destination: the output a row value broadcast
     * back down the columns (its lanes' values aliased in the output pass); lanes forced, as
     * in the generator's kernels below */
    setenv("KILN_REDUCE_COLVEC", "force", 1);
    for (int w = 0; w < 2; w++) {
        int64_t shape[2] = {w ? 16 : 5000, w ? 4096 : 64};
        kiln_dtype dt = w ? KILN_DTYPE_F32 : KILN_DTYPE_F16;
        kiln_tensor *xc, *xg, *dc = NULL, *dg = NULL;
        make_pair(dt, 2, shape, V_PLAIN, -2, 3, &xc, &xg);
        CHECK_OK(cpu, kiln_tensor_empty(cpu, dt, 2, shape, &dc));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, dt, 2, shape, &dg));
        int ax0[1] = {0};
        int64_t before = lanes_count();
        CHECK_OK(cpu, kiln_assign(dc, kiln_reduce(KILN_REDUCE_MEAN, kiln_t(xc), 1, ax0, 1)));
        CHECK_OK(gpu, kiln_assign(dg, kiln_reduce(KILN_REDUCE_MEAN, kiln_t(xg), 1, ax0, 1)));
        CHECK(lanes_count() > before);
        if (dc && dg) {
            int64_t n = shape[0] * shape[1];
            double *a = read_f64(dg), *b = read_f64(dc);
            double e = max_rel(a, b, n);
            if (!(e <= 1e-3)) fprintf(stderr, "  lanes means broadcast back %d: err %g\n", w, e);
            CHECK(e <= 1e-3);
            free(a);
            free(b);
        }
        kiln_tensor_release(xc);
        kiln_tensor_release(xg);
        kiln_tensor_release(dc);
        kiln_tensor_release(dg);
    }
    /* stochastic rounding and a generator in kernels with lanes: the same bits as the CPU */
    kiln_ctx *c = make_ctx(KILN_DEVICE_CPU, 777), *g = make_ctx(KILN_DEVICE_CUDA, 777);
    CHECK(c && g);
    if (c && g) {
        int64_t shape[2] = {20000, 256}, cols[1] = {256}, n = 20000 * 256;
        double *h = malloc((size_t)n * sizeof *h);
        check_fill(&rng, h, n, -3, 3);
        kiln_tensor *xc = from_f64(c, KILN_DTYPE_F32, 2, shape, h), *xg = from_f64(g, KILN_DTYPE_F32, 2, shape, h);
        free(h);
        kiln_tensor *rc, *rg, *fc, *fg, *yc, *yg;
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F16, 1, cols, &rc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F16, 1, cols, &rg));
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F16, 2, shape, &fc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F16, 2, shape, &fg));
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F32, 2, shape, &yc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F32, 2, shape, &yg));
        kiln_assign_args sr = {.round = KILN_ROUND_STOCHASTIC}, nearest = {.round = KILN_ROUND_NEAREST};
        int64_t before = stats_of(g).reduce_lanes;
        for (int step = 0; step < 3; step++) {
            kiln_tensor *dc = step == 0 ? rc : step == 1 ? fc : yc, *dg = step == 0 ? rg : step == 1 ? fg : yg;
            kiln_expr *ec, *eg;
            if (step == 0) { /* max down the columns (exact) to f16, rounded stochastically */
                ec = kiln_max(kiln_t(xc), 0);
                eg = kiln_max(kiln_t(xg), 0);
            } else if (step == 1) { /* (x - max(x)) / 3 written back whole, rounded stochastically */
                ec = kiln_mul(kiln_sub(kiln_t(xc), kiln_max(kiln_t(xc), 0)), kiln_scalar(1.0 / 3.0));
                eg = kiln_mul(kiln_sub(kiln_t(xg), kiln_max(kiln_t(xg), 0)), kiln_scalar(1.0 / 3.0));
            } else { /* a generator beside a column reduction */
                ec = kiln_where(kiln_gt(kiln_t(xc), kiln_scalar(-1e30)), kiln_rand(), kiln_max(kiln_t(xc), 0));
                eg = kiln_where(kiln_gt(kiln_t(xg), kiln_scalar(-1e30)), kiln_rand(), kiln_max(kiln_t(xg), 0));
            }
            CHECK_OK(c, kiln_assign_ex(dc, ec, step == 2 ? &nearest : &sr));
            CHECK_OK(g, kiln_assign_ex(dg, eg, step == 2 ? &nearest : &sr));
            kiln_dtype dt = step == 2 ? KILN_DTYPE_F32 : KILN_DTYPE_F16;
            int ok = same_bits(dc, dg, dt);
            if (!ok) fprintf(stderr, "  lanes rng step %d: CPU and CUDA bits differ\n", step);
            CHECK(ok);
        }
        CHECK_INT(stats_of(g).reduce_lanes - before, 3);
        kiln_tensor_release(xc);
        kiln_tensor_release(xg);
        kiln_tensor_release(rc);
        kiln_tensor_release(rg);
        kiln_tensor_release(fc);
        kiln_tensor_release(fg);
        kiln_tensor_release(yc);
        kiln_tensor_release(yg);
    }
    if (c) kiln_ctx_destroy(c);
    if (g) kiln_ctx_destroy(g);
    unsetenv("KILN_REDUCE_COLVEC");
    /* KILN_REDUCE_COLVEC=0: no lanes, the same values; a bad value names the variable (on a
     * sum the device rule gives lanes) */
    int64_t shape[2] = {64, 8192};
    kiln_tensor *tc, *tg;
    make_pair(KILN_DTYPE_F16, 2, shape, V_PLAIN, -2, 3, &tc, &tg);
    int kind = 0;
    knob_off_and_bad("KILN_REDUCE_COLVEC", "0", "yes", lanes_count, b_lanes, &kind, tc, tg, KILN_DTYPE_F32, 1e-5);
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
}

/* ---- short rows: a row on W lanes of a warp ---------------------------------------------------- */

static int64_t segs_count(void) { return stats_of(gpu).reduce_segs; }

/* Along rows: softmax (kind 0), batch norm (1), x - max(x) (2); kinds 3 and 4 put max(x) and
 * min(x) into every element of their row in f64 with their bits (times |x| * 0 + 1: exactly 1,
 * so a -0 stays -0). */
static kiln_expr *b_short(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p, ax = 1;
    switch (kind) {
    case 0:
        return kiln_div(kiln_exp(kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1))),
                        kiln_sum(kiln_exp(kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1))), 1));
    case 1:
        return kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(in[0]), 1), kiln_scalar(1e-5))),
                        kiln_sub(kiln_t(in[0]), kiln_mean(kiln_t(in[0]), 1)));
    case 2: return kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1));
    default: {
        kiln_expr *one = kiln_add(kiln_mul(kiln_abs(kiln_cast(kiln_t(in[0]), KILN_DTYPE_F64)), kiln_scalar(0)),
                                  kiln_scalar(1));
        kiln_expr *stat = kiln_reduce(kind == 3 ? KILN_REDUCE_MAX : KILN_REDUCE_MIN, kiln_t(in[0]), 1, &ax, 1);
        return kiln_mul(kiln_cast(stat, KILN_DTYPE_F64), one);
    }
    }
}

/* ROW mode's short rows (row_segments: a row needing 32 workers or fewer takes W lanes of a
 * warp, 32 / W rows a warp) against the CPU: rows 1-500 wide in f32, f16, bf16 and f64, plain
 * and viewed (transposed, strided, reversed, misaligned), 1 to 4099 rows (fewer rows than a
 * warp holds), 3-D with one and two reduced axes; sums, products (exact), max, min, argmax,
 * argmin, variances in one and two passes, softmax, batch norm and x - max(x) along rows. A
 * plain reduction of these widths always takes the segments (counted). Max and min over rows of
 * +0, -0 and values of one sign give every element of a row the same bits. Rows that 16 bytes
 * do not divide take 8- or 4-byte vectors, in reductions and element-wise (a bias added down
 * the rows). KILN_REDUCE_SEG=0
 * keeps a warp a row with the same values; a bad value names the variable. */
static void test_seg(void)
{
    const struct {
        kiln_dtype dt;
        int nd;
        int64_t shape[3];
        int naxes, axes[2];
    } cases[] = {
        {KILN_DTYPE_F32, 2, {4099, 1}, 1, {1}},      {KILN_DTYPE_F32, 2, {1000, 3}, 1, {1}},
        {KILN_DTYPE_F32, 2, {5, 32}, 1, {1}},        {KILN_DTYPE_F32, 2, {4099, 100}, 1, {1}},
        {KILN_DTYPE_F32, 2, {777, 250}, 1, {1}},     {KILN_DTYPE_F16, 2, {4099, 32}, 1, {1}},
        {KILN_DTYPE_F16, 2, {1, 128}, 1, {1}},       {KILN_DTYPE_F16, 2, {3000, 17}, 1, {1}},
        {KILN_DTYPE_BF16, 2, {2000, 64}, 1, {1}},    {KILN_DTYPE_F64, 2, {1001, 8}, 1, {1}},
        {KILN_DTYPE_F64, 2, {513, 128}, 1, {1}},     {KILN_DTYPE_F32, 3, {7, 9, 20}, 1, {2}},
        {KILN_DTYPE_F32, 3, {50, 3, 5}, 2, {1, 2}},  {KILN_DTYPE_F16, 3, {40, 6, 8}, 2, {1, 2}},
        /* a warp a row (W = 32); 8- and 4-byte vectors (16 bytes do not divide the row) */
        {KILN_DTYPE_F32, 2, {1000, 500}, 1, {1}},    {KILN_DTYPE_F16, 2, {4099, 100}, 1, {1}},
        {KILN_DTYPE_F32, 2, {333, 6}, 1, {1}},       {KILN_DTYPE_BF16, 2, {2000, 36}, 1, {1}},
        {KILN_DTYPE_F16, 2, {3001, 500}, 1, {1}},
    };
    const kiln_reduce_op ops[] = {KILN_REDUCE_SUM, KILN_REDUCE_MAX, KILN_REDUCE_MIN,   KILN_REDUCE_ARGMAX,
                                  KILN_REDUCE_ARGMIN, KILN_REDUCE_VAR, KILN_REDUCE_MEAN};
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    unsetenv("KILN_REDUCE_SEG");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int view = (int)(c % 5);
        if (cases[c].nd == 3 && view == V_T) view = V_PLAIN; /* a transposed 3-D's last axis is long */
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, cases[c].nd, cases[c].shape, view, -2, 3, &tc, &tg);
        const int f64 = cases[c].dt == KILN_DTYPE_F64;
        for (int o = 0; o < nops; o++)
            for (int passes = 1; passes <= (ops[o] == KILN_REDUCE_VAR ? 2 : 1); passes++) {
                setenv("KILN_VAR_PASSES", passes == 1 ? "1" : "2", 1);
                red_param rp = {ops[o], cases[c].naxes, {cases[c].axes[0], cases[c].axes[1]}, (int)(c + o) % 2, 0};
                char what[96];
                snprintf(what, sizeof what, "seg case %zu view %d op %d passes %d", c, view, o, passes);
                int arg = ops[o] == KILN_REDUCE_ARGMAX || ops[o] == KILN_REDUCE_ARGMIN;
                double tol = arg || ops[o] == KILN_REDUCE_MAX || ops[o] == KILN_REDUCE_MIN ? 0 : f64 ? 1e-12 : 2e-4;
                int64_t before = segs_count();
                compare(what, b_reduce, &rp, &tc, &tg, arg ? KILN_DTYPE_I32 : f64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32,
                        tol);
                /* (a reduced axis of 1 is dropped: a row of 1 is no ROW-mode reduction) */
                int64_t got = segs_count() - before, want = cases[c].shape[cases[c].nd - 1] > 1;
                if (got != want) fprintf(stderr, "  %s: %lld short-row launches, want %lld\n", what, (long long)got, (long long)want);
                CHECK_INT(got, want);
            }
        unsetenv("KILN_VAR_PASSES");
        { /* products, exact */
            red_param rp = {KILN_REDUCE_PROD, cases[c].naxes, {cases[c].axes[0], cases[c].axes[1]}, 1, (int)c % 2};
            char what[96];
            snprintf(what, sizeof what, "seg case %zu view %d prod bcast %d", c, view, rp.bcast);
            compare(what, b_prod_exact, &rp, &tc, &tg, KILN_DTYPE_AUTO, 0);
        }
        if (cases[c].nd == 2) /* softmax, batch norm, x - max(x) in the input's dtype */
            for (int kind = 0; kind < 3; kind++) {
                char what[96];
                snprintf(what, sizeof what, "seg case %zu view %d kind %d", c, view, kind);
                double tol = f64 ? 1e-10 : cases[c].dt == KILN_DTYPE_F32 ? 1e-3 : cases[c].dt == KILN_DTYPE_F16 ? 1e-2 : 4e-2;
                compare(what, b_short, &kind, &tc, &tg, KILN_DTYPE_AUTO, tol);
            }
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    /* max and min over +0, -0 and values of one sign: one bit pattern a row, the CPU's value */
    const int64_t widths[] = {2, 5, 8, 32, 64, 100, 500};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        for (int kind = 3; kind <= 4; kind++) {
            int64_t shape[2] = {999, widths[w]}, n = shape[0] * shape[1];
            double *h = malloc((size_t)n * sizeof *h);
            check_fill(&rng, h, n, 0.1, 2);
            for (int64_t i = 0; i < n; i++) {
                uint64_t u = check_rand_u64(&rng) % 3;
                h[i] = u == 0 ? 0.0 : u == 1 ? -0.0 : kind == 3 ? -h[i] : h[i];
            }
            kiln_tensor *tc = from_f64(cpu, KILN_DTYPE_F32, 2, shape, h), *tg = from_f64(gpu, KILN_DTYPE_F32, 2, shape, h);
            free(h);
            char what[96];
            snprintf(what, sizeof what, "seg zeros width %lld kind %d", (long long)widths[w], kind);
            compare(what, b_short, &kind, &tc, &tg, KILN_DTYPE_F64, 0);
            check_row_bits(what, b_short, &kind, &tg, shape[0], shape[1]);
            kiln_tensor_release(tc);
            kiln_tensor_release(tg);
        }
    /* element-wise over rows that 16 bytes do not divide, a bias broadcast down them (the axes do
     * not merge): 8- and 4-byte vectors */
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
    } ew[] = {{KILN_DTYPE_F16, {1000, 100}}, {KILN_DTYPE_BF16, {777, 36}}, {KILN_DTYPE_F32, {500, 6}},
              {KILN_DTYPE_F16, {999, 4}}};
    for (size_t e = 0; e < sizeof ew / sizeof ew[0]; e++)
        for (int view = 0; view < 2; view++) { /* plain, and rows 2 apart (V_STEP) */
            kiln_tensor *in_c[2], *in_g[2];
            make_pair(ew[e].dt, 2, ew[e].shape, view ? V_STEP : V_PLAIN, -2, 3, &in_c[0], &in_g[0]);
            make_pair(ew[e].dt, 1, &ew[e].shape[1], V_PLAIN, -1, 1, &in_c[1], &in_g[1]);
            char what[96];
            snprintf(what, sizeof what, "seg element-wise %zu view %d", e, view);
            compare(what, b_binary, (const void *)(uintptr_t)kiln_add, in_c, in_g, KILN_DTYPE_AUTO, 0);
            for (int t = 0; t < 2; t++) {
                kiln_tensor_release(in_c[t]);
                kiln_tensor_release(in_g[t]);
            }
        }
    /* KILN_REDUCE_SEG=0: a warp a row, the same values; a bad value names the variable */
    int64_t shape[2] = {3000, 32};
    kiln_tensor *tc, *tg;
    make_pair(KILN_DTYPE_F16, 2, shape, V_PLAIN, -2, 3, &tc, &tg);
    int kind = 0;
    knob_off_and_bad("KILN_REDUCE_SEG", "0", "yes", segs_count, b_short, &kind, tc, tg, KILN_DTYPE_AUTO, 1e-2);
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
}

/* ---- values kept across passes ------------------------------------------------------------------- */

/* Along rows: softmax (kind 0: exp(x - max(x)) kept from the sum's pass for the output); x * r
 * - mean(x * r) with r uniform random (1: the generator's values kept); log(x^2 + 1) -
 * max(log(x^2 + 1)) + sum(sqrt(|x|)) (2: the log kept from the reductions' pass). */
static kiln_expr *b_keep(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p;
    if (kind == 0)
        return kiln_div(kiln_exp(kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1))),
                        kiln_sum(kiln_exp(kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1))), 1));
    if (kind == 1) {
        kiln_expr *xr = kiln_mul(kiln_t(in[0]), kiln_rand());
        return kiln_sub(kiln_expr_retain(xr), kiln_mean(xr, 1));
    }
    kiln_expr *lg = kiln_log(kiln_add(kiln_sqr(kiln_t(in[0])), kiln_scalar(1)));
    return kiln_add(kiln_sub(kiln_expr_retain(lg), kiln_max(lg, 1)), kiln_sum(kiln_sqrt(kiln_abs(kiln_t(in[0]))), 1));
}

/* ROW mode's kept values (codegen.c keep_values: a library function's, a division's or a
 * generator's result a pass computed, kept in registers for a later phase where the row fits
 * one tile) against the CPU, on rows that fit one tile (one block, one warp, short rows on a
 * segment), and rows that do not (computed again) or split across blocks; f32, f16, bf16.
 * Without generators and with KILN_REDUCE_ROWFILL fixed, KILN_REDUCE_KEEP=0 (nothing kept)
 * gives the same bits: the kept value is the value computed again. A bad value names the
 * variable. */
static void test_keep(void)
{
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
        int view;
    } cases[] = {{KILN_DTYPE_F32, {64, 1000}, V_PLAIN},   {KILN_DTYPE_F16, {33, 8192}, V_PLAIN},
                 {KILN_DTYPE_F32, {3, 100000}, V_PLAIN},  {KILN_DTYPE_F16, {5, 40000}, V_PLAIN},
                 {KILN_DTYPE_BF16, {300, 257}, V_STEP},   {KILN_DTYPE_F32, {4099, 24}, V_T},
                 {KILN_DTYPE_F16, {2000, 100}, V_PLAIN},  {KILN_DTYPE_F16, {4099, 1024}, V_PLAIN},
                 {KILN_DTYPE_BF16, {100, 4096}, V_PLAIN}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, 2, cases[c].shape, cases[c].view, -2, 3, &tc, &tg);
        const double tol = cases[c].dt == KILN_DTYPE_F32 ? 1e-5 : cases[c].dt == KILN_DTYPE_F16 ? 4e-3 : 3e-2;
        for (int kind = 0; kind < 3; kind++) {
            char what[96];
            snprintf(what, sizeof what, "keep case %zu kind %d", c, kind);
            unsetenv("KILN_REDUCE_KEEP");
            compare(what, b_keep, &kind, &tc, &tg, KILN_DTYPE_AUTO, tol);
            if (kind == 1) continue; /* each evaluation draws new numbers */
            /* (with ROWFILL fixed: unset, 16-bit rows that keep values take f32's bytes a worker,
             * another summation order than with nothing kept) */
            for (int fill = 0; fill < 2; fill++) {
                setenv("KILN_REDUCE_ROWFILL", fill ? "1" : "0", 1);
                char wf[128];
                snprintf(wf, sizeof wf, "%s rowfill %d (kept against computed again)", what, fill);
                knob_off_same_bits("KILN_REDUCE_KEEP", NULL, b_keep, &kind, tg, NULL, wf);
            }
            unsetenv("KILN_REDUCE_ROWFILL");
        }
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    int kind = 0;
    knob_bad("KILN_REDUCE_KEEP", "yes", b_keep, &kind, 64, 1000);
}

/* ---- divisions by row values ------------------------------------------------------------------ */

/* Along rows: softmax (0); x / sum(x) (1: sums of either sign, near 0 or past 2^24); batch
 * norm (2: (x - mean) / sqrt(var + eps)); x / max(x) (3: maxima of either sign, 0, inf);
 * sin(x) / sum(|sin(x)|) (4: a kept dividend of either sign, +-0 and below 2^-100 among them).
 * Kinds 0 and 4 divide kept values (the reciprocal's case), 1-3 values computed in the output. */
static kiln_expr *b_rdiv(kiln_tensor *const *in, const void *p)
{
    int kind = *(const int *)p;
    kiln_expr *x = kiln_t(in[0]);
    switch (kind) {
    case 0: {
        kiln_expr *e = kiln_exp(kiln_sub(kiln_expr_retain(x), kiln_max(kiln_expr_retain(x), 1)));
        kiln_expr_release(x);
        return kiln_div(kiln_expr_retain(e), kiln_sum(e, 1));
    }
    case 1: return kiln_div(kiln_expr_retain(x), kiln_sum(x, 1));
    case 2:
        return kiln_div(kiln_sub(kiln_expr_retain(x), kiln_mean(kiln_expr_retain(x), 1)),
                        kiln_sqrt(kiln_add(kiln_var(x, 1), kiln_scalar(1e-5))));
    case 4: {
        kiln_expr *sx = kiln_sin(x);
        return kiln_div(kiln_expr_retain(sx), kiln_sum(kiln_abs(sx), 1));
    }
    default: return kiln_div(kiln_expr_retain(x), kiln_max(x, 1));
    }
}

/* Rows at scales 1, 2^-30, 2^30, 2^-70 and 2^70 (f32; 16-bit inputs 1, 2^-8, 2^8), with one
 * point in 97 odd: +-0, values below 2^-100 (f32), -75 to -100 (softmax's exp below 2^-100 or
 * 0), in rows whose divisors stay in the fast path's range; rows 4 of 5 also take values past
 * 2^100 (f32) or near the 16-bit maximum, rows 3 of 7 infs and NaNs (their divisors leave it). */
static double *rdiv_data(kiln_dtype dt, int64_t rows, int64_t cols)
{
    double *h = malloc((size_t)(rows * cols) * sizeof(double));
    check_fill(&rng, h, rows * cols, -2, 3);
    const int f32 = dt == KILN_DTYPE_F32;
    const double f32_scales[] = {1, 0x1p-30, 0x1p30, 0x1p-70, 0x1p70}, narrow_scales[] = {1, 0x1p-8, 0x1p8, 1, 1};
    const double f32_odd[] = {0.0, -0.0, 0x1.8p-110, -0x1p-120, 1e-40, -90.5, -75.25, -100.0},
                 narrow_odd[] = {0.0, -0.0, 0x1p-20, -0x1p-22, -90.5, -75.25, -100.0, 0.0};
    const double big[] = {0x1.4p110, -0x1p105}, narrow_big[] = {60000, -60000}, bad[] = {INFINITY, -INFINITY, NAN};
    for (int64_t r = 0; r < rows; r++) {
        double sc = (f32 ? f32_scales : narrow_scales)[r % 5];
        for (int64_t c = 0; c < cols; c++) {
            double *v = &h[r * cols + c];
            *v *= sc;
            uint64_t u = check_rand_u64(&rng);
            if (u % 97 == 0) *v = (f32 ? f32_odd : narrow_odd)[(u >> 8) % 8];
            if (r % 5 == 4 && (u >> 20) % 61 == 0) *v = (f32 ? big : narrow_big)[(u >> 28) % 2];
            if (r % 7 == 3 && (u >> 32) % 67 == 0) *v = bad[(u >> 40) % 3];
        }
    }
    return h;
}

/* Reduction kernels divide a value an earlier pass computed (kept, or computed again) by a row
 * value through the row's reciprocal and one Markstein correction (codegen.c row_divisions,
 * source.c kiln_div_row): with KILN_REDUCE_DIV=1 and with the rule's choice (unset: perhaps
 * compiled again for fewer registers, tighten), the same bits as KILN_REDUCE_DIV=0, which
 * divides at every point, on rows that fit one tile (kept values), short rows on segments, rows
 * longer than a tile, split rows, cached rows (whole and partial) and a transposed view, in f32,
 * f16 and bf16, with divisors and dividends in and out of the fast path's ranges; and against
 * the CPU on plain data. A bad value names the variable. */
static void test_rdiv(void)
{
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
        int transpose, cached; /* cached: each softmax (kind 0) caches its rows (counted) */
    } cases[] = {{KILN_DTYPE_F32, {64, 1000}, 0, 0},  {KILN_DTYPE_F32, {2000, 100}, 0, 0},
                 {KILN_DTYPE_F32, {3, 70000}, 0, 0},  {KILN_DTYPE_F32, {300, 257}, 1, 0},
                 {KILN_DTYPE_F16, {2000, 100}, 0, 0}, {KILN_DTYPE_F16, {33, 8192}, 0, 0},
                 {KILN_DTYPE_BF16, {4099, 24}, 0, 0}, {KILN_DTYPE_F32, {4099, 1024}, 0, 0},
                 /* the row cache, its dividends computed again (row_divisions' chk), on 100 rows
                  * (few rows split, 4 of 50257 do, and a split kernel takes no cache:
                  * test_rowcache; the first form's 20-40 rows likely split): whole and shifted
                  * (f16 50001), partial (bf16 140001), whole unshifted (f16 32000: the reciprocal
                  * under KILN_REDUCE_DIV=1 only, cached_division) */
                 {KILN_DTYPE_F16, {100, 50001}, 0, 1}, {KILN_DTYPE_BF16, {100, 140001}, 0, 1},
                 {KILN_DTYPE_F16, {100, 32000}, 0, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int64_t *sh = cases[c].shape;
        int64_t bshape[2] = {cases[c].transpose ? sh[1] : sh[0], cases[c].transpose ? sh[0] : sh[1]};
        double *h = rdiv_data(cases[c].dt, bshape[0], bshape[1]);
        kiln_tensor *base = from_f64(gpu, cases[c].dt, 2, bshape, h), *tg = NULL;
        free(h);
        if (cases[c].transpose)
            CHECK_OK(gpu, kiln_tensor_permute(base, NULL, &tg));
        else
            tg = kiln_tensor_retain(base);
        for (int kind = 0; kind < 5 && tg; kind++) {
            /* 0: divided at every point; 1: through the reciprocal; unset: the rule's choice */
            static const char *const ways[3] = {"0", "1", NULL};
            kiln_tensor *o[3] = {NULL, NULL, NULL};
            const int64_t cached_before = stats_of(gpu).reduce_row_caches;
            for (int w = 0; w < 3; w++) {
                if (ways[w])
                    setenv("KILN_REDUCE_DIV", ways[w], 1);
                else
                    unsetenv("KILN_REDUCE_DIV");
                CHECK_OK(gpu, kiln_eval(gpu, b_rdiv(&tg, &kind), KILN_DTYPE_AUTO, &o[w]));
            }
            unsetenv("KILN_REDUCE_DIV");
            if (cases[c].cached && kind == 0) {
                const int64_t n = stats_of(gpu).reduce_row_caches - cached_before;
                if (n != 3)
                    fprintf(stderr, "  rdiv case %zu: %lld of 3 softmax launches cached their rows\n", c, (long long)n);
                CHECK_INT(n, 3);
            }
            for (int w = 1; w < 3; w++)
                if (o[0] && o[w]) {
                    int same = same_bits(o[w], o[0], kiln_tensor_dtype(o[0]));
                    if (!same)
                        fprintf(stderr, "  rdiv case %zu kind %d: KILN_REDUCE_DIV=%s's quotients differ\n", c, kind,
                                ways[w] ? ways[w] : "(unset)");
                    CHECK(same);
                }
            for (int w = 0; w < 3; w++) kiln_tensor_release(o[w]);
        }
        kiln_tensor_release(tg);
        kiln_tensor_release(base);
    }
    /* against the CPU, ordinary data */
    const int64_t shape[2] = {513, 300};
    kiln_tensor *tc, *tg;
    make_pair(KILN_DTYPE_F32, 2, shape, V_PLAIN, 0.25, 3, &tc, &tg);
    for (int kind = 0; kind < 5; kind++) {
        char what[64];
        snprintf(what, sizeof what, "rdiv kind %d against the CPU", kind);
        compare(what, b_rdiv, &kind, &tc, &tg, KILN_DTYPE_AUTO, kind == 1 || kind == 3 ? 1e-4 : 1e-5);
    }
    kiln_tensor_release(tc);
    kiln_tensor_release(tg);
    printf("  rdiv: %lld kernels compiled again for their blocks an SM\n", (long long)stats_of(gpu).tightened);
    int kind = 0;
    knob_bad("KILN_REDUCE_DIV", "yes", b_rdiv, &kind, 64, 1000);
}

/* ---- rows off the vectors' alignment ---------------------------------------------------------- */

static int64_t shifts_count_of(kiln_ctx *g) { return stats_of(g).reduce_shifts; }
static int64_t shifts_count(void) { return shifts_count_of(gpu); }

/* x - max(x, 1) (kind 0) and where(x > -1e30, randn(), max(x, 1)) (kind 1: the generator's
 * values at every point of a reduction kernel); both free of any summation order. */
static kiln_expr *b_shift_bits(kiln_tensor *const *in, const void *p)
{
    if (*(const int *)p == 0) return kiln_sub(kiln_t(in[0]), kiln_max(kiln_t(in[0]), 1));
    return kiln_where(kiln_gt(kiln_t(in[0]), kiln_scalar(-1e30)), kiln_randn(), kiln_max(kiln_t(in[0]), 1));
}

/* ROW mode's row shift (codegen.c row_shift: rows whose length or start leaves them off the
 * vectors' alignment are walked in aligned vectors from the one holding their first point, the
 * partly filled first and last point by point) against the CPU: rows of 17 to 100003 points in
 * f32, f16, bf16, f64 and u8, plain, starting one point in (V_OFF: each row at another offset)
 * and 2 rows apart; rows on a segment of a warp, on one block, longer than a tile (nothing
 * kept) and split across blocks; every reduction, products exact, softmax, batch norm and
 * x - max(x) along rows. Each of these launches walks its rows shifted (counted). The same
 * Philox numbers and stochastic roundings as the CPU in shifted kernels (a generator's and a
 * rounding's key is the point's index, not its vector's). KILN_REDUCE_SHIFT=0 gives order-free
 * results the same bits and counts nothing; a bad value names the variable. */
static void test_shift(void)
{
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
        int view;
    } cases[] = {
        {KILN_DTYPE_F16, {64, 50257}, V_PLAIN}, {KILN_DTYPE_F32, {40, 50257}, V_OFF},  {KILN_DTYPE_F16, {1000, 1001}, V_OFF},
        {KILN_DTYPE_BF16, {513, 4097}, V_STEP}, {KILN_DTYPE_F32, {2000, 33}, V_PLAIN}, {KILN_DTYPE_F16, {3000, 17}, V_OFF},
        {KILN_DTYPE_F64, {500, 1001}, V_PLAIN} /* 8-byte points: only with KILN_REDUCE_SHIFT=1 */, {KILN_DTYPE_F32, {2, 100003}, V_PLAIN}, {KILN_DTYPE_F16, {3, 70001}, V_OFF},
        {KILN_DTYPE_F32, {777, 250}, V_OFF},    {KILN_DTYPE_F16, {129, 32001}, V_PLAIN},
    };
    const kiln_reduce_op ops[] = {KILN_REDUCE_SUM,    KILN_REDUCE_MAX, KILN_REDUCE_MIN, KILN_REDUCE_ARGMAX,
                                  KILN_REDUCE_ARGMIN, KILN_REDUCE_VAR, KILN_REDUCE_MEAN};
    const int nops = (int)(sizeof ops / sizeof ops[0]);
    unsetenv("KILN_REDUCE_SHIFT");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kiln_tensor *tc, *tg;
        make_pair(cases[c].dt, 2, cases[c].shape, cases[c].view, -2, 3, &tc, &tg);
        const int f64 = cases[c].dt == KILN_DTYPE_F64;
        if (f64) setenv("KILN_REDUCE_SHIFT", "1", 1);
        /* a row written back whole into the new contiguous output (f32 from 16-bit inputs too)
         * shifts only with a plain input (a view's rows start elsewhere within their vectors
         * than the output's) */
        const int rows_shift = cases[c].view == V_PLAIN;
        const double tol_red = f64 ? 1e-12 : cases[c].shape[1] > 10000 ? 1e-3 : 2e-4;
        for (int o = 0; o < nops; o++) {
            red_param rp = {ops[o], 1, {1}, (int)(c + o) % 2, (int)(c + o) % 3 == 0};
            char what[96];
            snprintf(what, sizeof what, "shift case %zu op %d bcast %d", c, o, rp.bcast);
            int arg = ops[o] == KILN_REDUCE_ARGMAX || ops[o] == KILN_REDUCE_ARGMIN;
            if (arg) rp.bcast = 0;
            double tol = arg || ops[o] == KILN_REDUCE_MAX || ops[o] == KILN_REDUCE_MIN ? 0 : tol_red;
            if (rp.bcast && !arg && ops[o] != KILN_REDUCE_MAX && ops[o] != KILN_REDUCE_MIN) tol *= 10;
            int64_t before = shifts_count(), want = !rp.bcast || rows_shift;
            compare(what, b_reduce, &rp, &tc, &tg, arg ? KILN_DTYPE_I32 : f64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32, tol);
            if (shifts_count() - before != want)
                fprintf(stderr, "  %s: %lld shifted launches, want %lld\n", what, (long long)(shifts_count() - before), (long long)want);
            CHECK_INT(shifts_count() - before, want);
        }
        {
            red_param rp = {KILN_REDUCE_PROD, 1, {1}, 1, (int)c % 2};
            char what[96];
            snprintf(what, sizeof what, "shift case %zu prod bcast %d", c, rp.bcast);
            compare(what, b_prod_exact, &rp, &tc, &tg, KILN_DTYPE_AUTO, 0);
        }
        for (int kind = 0; kind < 3; kind++) { /* softmax, batch norm, x - max(x) in the input's dtype */
            char what[96];
            snprintf(what, sizeof what, "shift case %zu kind %d", c, kind);
            double tol = f64 ? 1e-10 : cases[c].dt == KILN_DTYPE_F32 ? 1e-3 : cases[c].dt == KILN_DTYPE_F16 ? 1e-2 : 4e-2;
            int64_t before = shifts_count();
            compare(what, b_short, &kind, &tc, &tg, KILN_DTYPE_AUTO, tol);
            CHECK_INT(shifts_count() > before, rows_shift);
        }
        /* off: the same bits where no summation order enters */
        for (int kind = 0; kind < 1 && rows_shift; kind++) {
            char what[64];
            snprintf(what, sizeof what, "shift case %zu", c);
            knob_off_same_bits("KILN_REDUCE_SHIFT", f64 ? "1" : NULL, b_shift_bits, &kind, tg, shifts_count, what);
        }
        unsetenv("KILN_REDUCE_SHIFT");
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    { /* u8: 8-byte vectors; max and argmax exact */
        int64_t shape[2] = {300, 1003};
        kiln_tensor *tc, *tg;
        make_pair(KILN_DTYPE_U8, 2, shape, V_OFF, 0, 255, &tc, &tg);
        for (int o = 1; o <= 3; o++) {
            red_param rp = {ops[o], 1, {1}, 0, 0};
            char what[64];
            snprintf(what, sizeof what, "shift u8 op %d", o);
            int64_t before = shifts_count();
            compare(what, b_reduce, &rp, &tc, &tg, o == 3 ? KILN_DTYPE_I32 : KILN_DTYPE_F32, 0);
            CHECK_INT(shifts_count() - before, 1);
        }
        kiln_tensor_release(tc);
        kiln_tensor_release(tg);
    }
    /* the CPU's Philox numbers and stochastic roundings, bit for bit, in shifted kernels */
    const int64_t bshapes[][2] = {{333, 1001}, {5, 40003}, {1000, 19}};
    for (size_t b = 0; b < sizeof bshapes / sizeof bshapes[0]; b++) {
        kiln_ctx *c = make_ctx(KILN_DEVICE_CPU, 777 + b), *g = make_ctx(KILN_DEVICE_CUDA, 777 + b);
        CHECK(c && g);
        if (!c || !g) {
            if (c) kiln_ctx_destroy(c);
            if (g) kiln_ctx_destroy(g);
            return;
        }
        int64_t n = bshapes[b][0] * bshapes[b][1];
        double *h = malloc((size_t)n * sizeof(double));
        check_fill(&rng, h, n, -3, 3);
        kiln_tensor *xc = from_f64(c, KILN_DTYPE_F16, 2, bshapes[b], h), *xg = from_f64(g, KILN_DTYPE_F16, 2, bshapes[b], h);
        free(h);
        kiln_tensor *dc = NULL, *dg = NULL;
        CHECK_OK(c, kiln_tensor_empty(c, KILN_DTYPE_F16, 2, bshapes[b], &dc));
        CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F16, 2, bshapes[b], &dg));
        for (int kind = 0; kind < 2 && dc && dg; kind++) {
            kiln_assign_args aa = {.round = kind == 0 ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST};
            int64_t before = shifts_count_of(g);
            CHECK_OK(c, kiln_assign_ex(dc, b_shift_bits(&xc, &kind), &aa));
            CHECK_OK(g, kiln_assign_ex(dg, b_shift_bits(&xg, &kind), &aa));
            CHECK_INT(shifts_count_of(g) - before, 1);
            int ok = same_bits(dc, dg, KILN_DTYPE_F16);
            if (!ok) fprintf(stderr, "  shift bits %zu kind %d: CPU and CUDA bits differ\n", b, kind);
            CHECK(ok);
        }
        kiln_tensor_release(dc);
        kiln_tensor_release(dg);
        kiln_tensor_release(xc);
        kiln_tensor_release(xg);
        kiln_ctx_destroy(c);
        kiln_ctx_destroy(g);
    }
    int kind = 0;
    knob_bad("KILN_REDUCE_SHIFT", "yes", b_short, &kind, 64, 1001);
}

/* ---- rows cached in shared memory ------------------------------------------------------------ */

static int64_t row_caches_count(void) { return stats_of(gpu).reduce_row_caches; }

/* softmax(x + y) along rows, y one row broadcast down the columns: two loads every phase uses */
static kiln_expr *b_rowcache_two(kiln_tensor *const *in, const void *p)
{
    (void)p;
    kiln_expr *s = kiln_add(kiln_t(in[0]), kiln_t(in[1]));
    kiln_expr *e = kiln_exp(kiln_sub(s, kiln_max(kiln_add(kiln_t(in[0]), kiln_t(in[1])), 1)));
    return kiln_div(e, kiln_sum(kiln_exp(kiln_sub(kiln_add(kiln_t(in[0]), kiln_t(in[1])),
                                                  kiln_max(kiln_add(kiln_t(in[0]), kiln_t(in[1])), 1))),
                                1));
}

/* ROW mode's row cache (codegen.c row_cache: an unsplit kernel whose rows need more than 512
 * workers stores the loads several phases use in shared memory in the first and reads them back
 * in the later ones) against the CPU: rows of 20000-100003 points in f32, f16, bf16 and f64,
 * plain, one point in (shifted), reversed (point by point) and 2 rows apart; the two-pass
 * variance, softmax, batch norm and x - max(x) along rows, and two cached loads (softmax(x + y)).
 * Both forms: KILN_REDUCE_SMEM=tile (rows longer than a 1024-thread tile, on that block) and
 * unset (the block by the rule, and rows that fit 1024 threads' registers where it holds more
 * threads an SM). Each launch that should cache does (counted); one whose row would not fit the shared
 * memory, and a split one, do not. KILN_REDUCE_SMEM=0 gives the same bits on the same block (the
 * same arithmetic in the same order), and x - max(x) the same bits on any block; a bad value
 * names the variable. Rows: 100 or more, so no rule splits them. */
static void test_rowcache(void)
{
    const struct {
        kiln_dtype dt;
        int64_t shape[2];
        int view;
        /* the launches that cache, =tile and unset (the rule): the variance, then softmax, batch norm and
         * x - max(x) (the variance's split rule is another: 4 rows of 50257 split the softmax,
         * not it; f16 rows of 32000 fit 1024 threads where the variance takes 32 points a thread;
         * softmax, batch norm and x - max(x) take 16 (row_fill doubles kept rows only up to 8192
         * values, v73a), so they cache) */
        int var_cached[2], cached[2][3];
    } cases[] = {
        {KILN_DTYPE_F32, {100, 20000}, V_PLAIN, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_F32, {100, 50257}, V_PLAIN, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_F16, {120, 50257}, V_OFF, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_BF16, {100, 70001}, V_PLAIN, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_F16, {110, 40000}, V_NEG, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_F64, {100, 20000}, V_PLAIN, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        {KILN_DTYPE_F16, {100, 90001}, V_STEP, {1, 1}, {{1, 1, 1}, {1, 1, 1}}},
        /* rows longer than the cache (227 KB a block on an H100): the rule caches their first part */
        {KILN_DTYPE_F32, {140, 100003}, V_PLAIN, {0, 1}, {{0, 0, 0}, {1, 1, 1}}},
        {KILN_DTYPE_F16, {140, 150001}, V_OFF, {0, 1}, {{0, 0, 0}, {1, 1, 1}}},
        {KILN_DTYPE_BF16, {140, 140001}, V_STEP, {0, 1}, {{0, 0, 0}, {1, 1, 1}}},
        {KILN_DTYPE_F32, {140, 250003}, V_PLAIN, {0, 1}, {{0, 0, 0}, {1, 1, 1}}}, /* under a quarter cached */
        {KILN_DTYPE_F16, {4, 50257}, V_PLAIN, {1, 1}, {{0, 0, 0}, {0, 0, 0}}},
        {KILN_DTYPE_F16, {100, 32000}, V_PLAIN, {0, 1}, {{1, 1, 1}, {1, 1, 1}}},
    };
    for (int mode = 0; mode < 2; mode++) {
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            if (mode)
                unsetenv("KILN_REDUCE_SMEM");
            else
                setenv("KILN_REDUCE_SMEM", "tile", 1);
            kiln_tensor *tc, *tg;
            make_pair(cases[c].dt, 2, cases[c].shape, cases[c].view, -2, 3, &tc, &tg);
            const int f64 = cases[c].dt == KILN_DTYPE_F64;
            for (int o = 0; o < 2; o++) { /* the two-pass variance (its mean's pass first) and argmax */
                kiln_reduce_op op = o == 0 ? KILN_REDUCE_VAR : KILN_REDUCE_ARGMAX;
                red_param rp = {op, 1, {1}, 0, 0};
                char what[96];
                snprintf(what, sizeof what, "rowcache mode %d case %zu op %d", mode, c, o);
                setenv("KILN_VAR_PASSES", "2", 1);
                int64_t before = row_caches_count();
                compare(what, b_reduce, &rp, &tc, &tg, o ? KILN_DTYPE_I32 : f64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32,
                        o ? 0 : f64 ? 1e-12 : 1e-3);
                unsetenv("KILN_VAR_PASSES");
                /* argmax: one pass, nothing to cache */
                CHECK_INT(row_caches_count() - before, o == 0 ? cases[c].var_cached[mode] : 0);
            }
            for (int kind = 0; kind < 3; kind++) { /* softmax, batch norm, x - max(x) */
                char what[96];
                snprintf(what, sizeof what, "rowcache mode %d case %zu kind %d", mode, c, kind);
                double tol = f64 ? 1e-10 : cases[c].dt == KILN_DTYPE_F32 ? 1e-3 : cases[c].dt == KILN_DTYPE_F16 ? 1e-2 : 4e-2;
                const int want = cases[c].cached[mode][kind];
                int64_t before = row_caches_count();
                compare(what, b_short, &kind, &tc, &tg, KILN_DTYPE_AUTO, tol);
                if (row_caches_count() - before != want)
                    fprintf(stderr, "  %s: %lld launches cached their rows, want %d\n", what,
                            (long long)(row_caches_count() - before), want);
                CHECK_INT(row_caches_count() - before, want);
                if (mode && kind < 2) continue; /* another block: another summation order */
                knob_off_same_bits("KILN_REDUCE_SMEM", mode ? NULL : "tile", b_short, &kind, tg, row_caches_count, what);
            }
            kiln_tensor_release(tc);
            kiln_tensor_release(tg);
        }
        { /* two cached loads: x and a row broadcast down the columns */
            int64_t shape[2] = {100, 20000}, yshape[2] = {1, 20000};
            kiln_tensor *in_c[2], *in_g[2];
            make_pair(KILN_DTYPE_F32, 2, shape, V_PLAIN, -2, 3, &in_c[0], &in_g[0]);
            make_pair(KILN_DTYPE_F32, 2, yshape, V_PLAIN, -2, 3, &in_c[1], &in_g[1]);
            int64_t before = row_caches_count();
            compare(mode ? "rowcache two loads, the rule" : "rowcache two loads, tile", b_rowcache_two, NULL, in_c, in_g,
                    KILN_DTYPE_AUTO, 1e-3);
            CHECK_INT(row_caches_count() - before, 1);
            for (int t = 0; t < 2; t++) {
                kiln_tensor_release(in_c[t]);
                kiln_tensor_release(in_g[t]);
            }
        }
    }
    unsetenv("KILN_REDUCE_SMEM");
    int kind = 0;
    knob_bad("KILN_REDUCE_SMEM", "yes", b_short, &kind, 100, 20000);
}

/* ---- host <-> device copies ------------------------------------------------------------------ */

static void test_copies(void)
{
    int64_t shape[3] = {4, 5, 6};
    double h[120], back[120];
    check_fill(&rng, h, 120, -100, 100);
    kiln_tensor *t = from_f64(gpu, KILN_DTYPE_F32, 3, shape, h);
    /* write into a transposed, stepped view and read it back through another view */
    kiln_tensor *v = NULL;
    int axes[3] = {2, 0, 1};
    CHECK_OK(gpu, kiln_tensor_permute(t, axes, &v));
    double w[120];
    check_fill(&rng, w, 120, -100, 100);
    CHECK_OK(gpu, kiln_tensor_write(v, w, KILN_DTYPE_F64));
    CHECK_OK(gpu, kiln_tensor_read(v, back, KILN_DTYPE_F64));
    int bad = 0;
    for (int i = 0; i < 120; i++) bad += fabs(back[i] - (double)(float)w[i]) > 0;
    CHECK_INT(bad, 0);
    /* element (i, j, k) of t is element (k, i, j) of v */
    CHECK_OK(gpu, kiln_tensor_read(t, back, KILN_DTYPE_F64));
    bad = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 6; k++) bad += back[(i * 5 + j) * 6 + k] != (double)(float)w[(k * 4 + i) * 5 + j];
    CHECK_INT(bad, 0);
    /* int conversions on the way in: truncation and saturation */
    int64_t n4 = 4;
    double iv[4] = {1.9, -1.9, 1e10, -1e10};
    kiln_tensor *ti = from_f64(gpu, KILN_DTYPE_I8, 1, &n4, iv);
    int32_t got[4];
    CHECK_OK(gpu, kiln_tensor_read(ti, got, KILN_DTYPE_I32));
    CHECK_INT(got[0], 1);
    CHECK_INT(got[1], -1);
    CHECK_INT(got[2], 127);
    CHECK_INT(got[3], -128);
    kiln_tensor_release(ti);
    kiln_tensor_release(v);
    kiln_tensor_release(t);
}

/* ---- GEMM ------------------------------------------------------------------------------------- */

/* got's largest error against ref (the f64 CPU reference) over max(max |ref|, 1); NaN where
 * got has a NaN that ref does not (an element left unwritten in a C poisoned with NaNs), or
 * either cannot be read. (A NaN stays: `if (!(d <= e)) e = d` had let the next finite error
 * replace it, so only a NaN in C's last element failed the check.) */
static double gemm_rel_err(kiln_tensor *got, kiln_tensor *ref)
{
    const int64_t n = kiln_tensor_numel(ref);
    double *x = read_f64(got), *y = read_f64(ref), m = 0, e = x && y ? 0 : NAN;
    for (int64_t i = 0; x && y && i < n; i++) {
        if (isnan(x[i]) && isnan(y[i])) continue; /* both NaN: they agree */
        if (fabs(y[i]) > m) m = fabs(y[i]);
        const double d = fabs(x[i] - y[i]);
        if (isnan(d) || d > e) e = d;
    }
    free(x);
    free(y);
    return e / (m > 1 ? m : 1);
}

/* The GEMM cases with KILN_GEMM=engine (vendor: cuBLASLt and the reference kernel; own:
 * kiln's own kernels for f16 / bf16, src/cuda/gemm_wgmma.c on an H100 where TMA can read
 * the operands, else gemm_mma.c; mma: gemm_mma.c). */
static void gemm_cases(const char *engine, int tf32)
{
    setenv("KILN_GEMM", engine, 1);
    printf("gemm cases with KILN_GEMM=%s%s\n", engine, tf32 ? ", f32 with TF32 allowed" : "");
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, tf32));
    struct {
        int64_t M, N, K, batch;
        int ta, tb, bias, relu;
        double alpha, beta;
    } cs[] = {
        {1, 1, 1, 0, 0, 0, 0, 0, 1, 0},        {7, 33, 129, 0, 0, 0, 0, 0, 1, 0},
        {64, 64, 64, 0, 1, 0, 1, 0, 0.5, 0},   {130, 65, 257, 0, 0, 1, 1, 1, 1, 0},
        {31, 17, 9, 3, 1, 1, 0, 0, 2, 0.5},    {16, 48, 32, 2, 0, 0, 1, 1, 1, 0.25},
        {5, 3, 0, 0, 0, 0, 1, 0, 1, 1},        {256, 256, 512, 0, 0, 0, 0, 0, 1, 0},
        {130, 257, 1000, 0, 1, 1, 1, 1, -0.75, 0.5}, {136, 200, 72, 3, 1, 0, 1, 0, 1, 1},
        {200, 96, 260, 2, 0, 1, 1, 1, 1.5, 0.5}, /* K-major A and B, 16-byte rows: the tf32 kernel too */
        /* and its staged (TMA-store) epilogue of f32 C: a K = 128 update over several tiles,
         * split-K over a ragged last tile column (N = 300: 9 boxes of 32 and 12 columns) */
        {300, 520, 128, 0, 0, 1, 1, 1, 1, 0},   {130, 300, 1700, 0, 0, 1, 1, 0, 1, 0.5},
        /* a plain K = 128 update of 132 tiles of 128 x 128 (12 x 11): in f16 on an H100 the
         * schedule rule's ping-pong kernel in the own and wgmma passes that leave
         * KILN_WGMMA_SCHED unset (the emulator checks the rule's pick) */
        {1536, 1408, 128, 0, 0, 0, 0, 0, 1, 0},
        /* one row of tiles past a wave: 209 tiles of 192 on 105 blocks (the rule's even
         * rounds), with a bias */
        {64, 40000, 72, 0, 0, 0, 1, 0, 1, 0},
    };
    kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64};
    double tols[] = {2e-5, 4e-3, 3e-2, 1e-12};
    if (tf32) tols[0] = 4e-3; /* inputs read with 10 mantissa bits, like f16 */
    for (size_t c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        for (int d = 0; d < (tf32 ? 1 : 4); d++) {
            int64_t M = cs[c].M, N = cs[c].N, K = cs[c].K, nb = cs[c].batch;
            int nd = nb ? 3 : 2;
            int64_t as[3], bs[3], csh[3];
            int o = 0;
            if (nb) {
                as[0] = bs[0] = csh[0] = nb;
                o = 1;
            }
            as[o] = cs[c].ta ? K : M;
            as[o + 1] = cs[c].ta ? M : K;
            bs[o] = cs[c].tb ? N : K;
            bs[o + 1] = cs[c].tb ? K : N;
            csh[o] = M;
            csh[o + 1] = N;
            kiln_tensor *ac, *ag, *bc, *bg, *cc, *cg, *biasc = NULL, *biasg = NULL;
            make_pair(dts[d], nd, as, V_PLAIN, -1, 1, &ac, &ag);
            make_pair(dts[d], nd, bs, c == 3 ? V_STEP : V_PLAIN, -1, 1, &bc, &bg);
            make_pair(dts[d], nd, csh, V_PLAIN, -1, 1, &cc, &cg);
            if (cs[c].bias) make_pair(dts[d], 1, &N, V_PLAIN, -1, 1, &biasc, &biasg);
            kiln_gemm_args gc = {.trans_a = cs[c].ta, .trans_b = cs[c].tb, .relu = cs[c].relu, .bias = biasc};
            kiln_gemm_args gg = gc;
            gg.bias = biasg;
            CHECK_OK(cpu, kiln_dot(cc, ac, bc, cs[c].alpha, cs[c].beta, &gc));
            CHECK_OK(gpu, kiln_dot(cg, ag, bg, cs[c].alpha, cs[c].beta, &gg));
            const double rel = gemm_rel_err(cg, cc);
            if (!(rel <= tols[d]))
                fprintf(stderr, "  gemm case %zu dtype %s: rel err %g > %g\n", c, kiln_dtype_name(dts[d]), rel, tols[d]);
            CHECK(rel <= tols[d]);
            kiln_tensor *all[] = {ac, ag, bc, bg, cc, cg, biasc, biasg};
            for (int i = 0; i < 8; i++) kiln_tensor_release(all[i]);
        }
    }
}

/* Which path ran: cuBLASLt launches nothing through kiln's launch counter, kiln's kernels
 * one launch per call (f16: wgmma or mma.sync; f32 without TF32: FFMA). An invalid
 * KILN_GEMM is an error naming it. */
/* C = A B (bf16, M x K times K x N, round to nearest; with full, relu(A B + bias) rounded
 * stochastically, both runs from the same seed) with the environment variable var at on (NULL:
 * unset, the rule's) against var=off_value: the same bits, every value finite */
static void knob_bits(int64_t M, int64_t N, int64_t K, const char *var, const char *on, const char *off_value,
                      const char *what, int full)
{
    int64_t as[2] = {M, K}, bs[2] = {K, N}, cs[2] = {M, N};
    kiln_tensor *a, *ag, *b, *bg, *bias = NULL, *biasg = NULL, *c = NULL;
    make_pair(KILN_DTYPE_BF16, 2, as, V_PLAIN, -1, 1, &a, &ag);
    make_pair(KILN_DTYPE_BF16, 2, bs, V_PLAIN, -1, 1, &b, &bg);
    if (full) make_pair(KILN_DTYPE_BF16, 1, &N, V_PLAIN, -1, 1, &bias, &biasg);
    const kiln_gemm_args epi = {
        .bias = biasg, .relu = full, .round = full ? KILN_ROUND_STOCHASTIC : KILN_ROUND_DEFAULT};
    CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_BF16, 2, cs, &c));
    const size_t bytes = (size_t)(M * N * 2);
    unsigned char *c_on = malloc(bytes), *c_off = malloc(bytes);
    CHECK(c_on && c_off);
    for (int off = 0; off < 2 && c_on && c_off; off++) {
        if (off)
            setenv(var, off_value, 1);
        else if (on)
            setenv(var, on, 1);
        CHECK_OK(gpu, kiln_assign(c, kiln_scalar(NAN)));
        if (full) CHECK_OK(gpu, kiln_ctx_set_seed(gpu, 42)); /* the same rounding stream both ways */
        CHECK_OK(gpu, kiln_dot(c, ag, bg, 1.0, 0.0, full ? &epi : NULL));
        CHECK_OK(gpu, kiln_tensor_read(c, off ? c_off : c_on, KILN_DTYPE_BF16));
        unsetenv(var);
    }
    if (c_on && c_off) {
        int64_t ndiff = 0, nonfinite = 0;
        for (int64_t i = 0; i < M * N; i++) {
            unsigned short x;
            memcpy(&x, c_on + 2 * i, 2);
            nonfinite += !isfinite(kiln_bf16_to_f32(x));
            ndiff += memcmp(c_on + 2 * i, c_off + 2 * i, 2) != 0;
        }
        if (ndiff || nonfinite)
            fprintf(stderr, "  %lld x %lld x %lld, %s: %lld elements differ from the other kernel's, %lld not finite\n",
                    (long long)M, (long long)N, (long long)K, what, (long long)ndiff, (long long)nonfinite);
        CHECK_INT(ndiff, 0);
        CHECK_INT(nonfinite, 0);
    }
    free(c_on);
    free(c_off);
    kiln_tensor_release(a);
    kiln_tensor_release(ag);
    kiln_tensor_release(b);
    kiln_tensor_release(bg);
    kiln_tensor_release(bias);
    kiln_tensor_release(biasg);
    kiln_tensor_release(c);
}
static void knob_same_bits(int64_t M, int64_t N, int64_t K, const char *var, const char *on, const char *off_value,
                           const char *what)
{
    knob_bits(M, N, K, var, on, off_value, what, 0);
}

static void gemm_dispatch(void)
{
    if (!kiln__cuda_cache_stats) return;
    int64_t s[2] = {64, 64};
    kiln_tensor *a16, *a16g, *b16, *b16g, *c16, *c16g, *a32, *a32g, *c32, *c32g;
    make_pair(KILN_DTYPE_F16, 2, s, V_PLAIN, -1, 1, &a16, &a16g);
    make_pair(KILN_DTYPE_F16, 2, s, V_PLAIN, -1, 1, &b16, &b16g);
    make_pair(KILN_DTYPE_F16, 2, s, V_PLAIN, -1, 1, &c16, &c16g);
    make_pair(KILN_DTYPE_F32, 2, s, V_PLAIN, -1, 1, &a32, &a32g);
    make_pair(KILN_DTYPE_F32, 2, s, V_PLAIN, -1, 1, &c32, &c32g);
    static const struct {
        const char *env;
        int f16_launches, f32_launches;
    } want[] = {{"vendor", 0, 0}, {"own", 1, 1}, {"auto", 0, 0}, {"mma", 1, 0}, {"wgmma", 1, 0}, {"ffma", 0, 1}};
    /* the wgmma kernel runs on compute capability 9.0 only (sm_90a); elsewhere cuBLASLt */
    int hopper = strstr(kiln_ctx_device_description(gpu), "sm_90a") != NULL;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        setenv("KILN_GEMM", want[i].env, 1);
        kiln_cuda_stats s0, s1, s2;
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
        CHECK_OK(gpu, kiln_dot(c32g, a32g, a32g, 1.0, 0.0, NULL));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s2));
        int want16 = strcmp(want[i].env, "wgmma") == 0 && !hopper ? 0 : want[i].f16_launches;
        if (s1.launches - s0.launches != want16 || s2.launches - s1.launches != want[i].f32_launches)
            fprintf(stderr, "  KILN_GEMM=%s: f16 launched %lld kernels (want %d), f32 %lld (want %d)\n", want[i].env,
                    (long long)(s1.launches - s0.launches), want16, (long long)(s2.launches - s1.launches),
                    want[i].f32_launches);
        CHECK_INT(s1.launches - s0.launches, want16);
        CHECK_INT(s2.launches - s1.launches, want[i].f32_launches);
    }
    { /* stochastic rounding of a 16-bit C, which cuBLASLt cannot take: auto runs kiln's own
       * kernel (mma.sync or wgmma, from sm_80), vendor cuBLASLt's f32 product and kiln's
       * epilogue pass (two launches), KILN_GEMM_FALLBACK the reference kernel */
        const char *desc = kiln_ctx_device_description(gpu);
        int own_ok = strstr(desc, "sm_8") || strstr(desc, "sm_9") || strstr(desc, "sm_1");
        const kiln_gemm_args sr = {.round = KILN_ROUND_STOCHASTIC};
        static const char *const envs[] = {"auto", "vendor", "vendor"};
        for (int i = 0; i < 3; i++) {
            setenv("KILN_GEMM", envs[i], 1);
            if (i == 2) setenv("KILN_GEMM_FALLBACK", "1", 1);
            int own = i == 0 && own_ok, pass = i == 1 || (i == 0 && !own_ok), ref = i == 2;
            kiln_cuda_stats s0, s1;
            CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
            CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, &sr));
            CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
            CHECK_INT(s1.gemm_own - s0.gemm_own, own);
            CHECK_INT(s1.gemm_vendor_pass - s0.gemm_vendor_pass, pass);
            CHECK_INT(s1.gemm_reference - s0.gemm_reference, ref);
            if (pass) CHECK_INT(s1.launches - s0.launches, 1); /* the pass; cuBLASLt's launch is not counted */
            unsetenv("KILN_GEMM_FALLBACK");
        }
        /* at most 32 rows of A: auto takes cuBLASLt's product and the epilogue pass */
        int64_t sa[2] = {32, 64}, sc[2] = {32, 64};
        kiln_tensor *a, *ag, *c, *cg;
        make_pair(KILN_DTYPE_F16, 2, sa, V_PLAIN, -1, 1, &a, &ag);
        make_pair(KILN_DTYPE_F16, 2, sc, V_PLAIN, -1, 1, &c, &cg);
        setenv("KILN_GEMM", "auto", 1);
        kiln_cuda_stats s0, s1;
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
        CHECK_OK(gpu, kiln_dot(cg, ag, b16g, 1.0, 0.0, &sr));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
        CHECK_INT(s1.gemm_vendor_pass - s0.gemm_vendor_pass, 1);
        CHECK_INT(s1.gemm_own - s0.gemm_own, 0);
        /* under a memory cap that leaves no room for the pass's f32 workspace (8 KiB here):
         * the reference kernel, which needs none, and no error */
        kiln_mem_stats ms;
        CHECK_OK(gpu, kiln_mem_get_stats(gpu, &ms));
        CHECK_OK(gpu, kiln_mem_set_limit(gpu, ms.in_use + 1024));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
        CHECK_OK(gpu, kiln_dot(cg, ag, b16g, 1.0, 0.0, &sr));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
        CHECK_INT(s1.gemm_vendor_pass - s0.gemm_vendor_pass, 0);
        CHECK_INT(s1.gemm_reference - s0.gemm_reference, 1);
        CHECK_OK(gpu, kiln_mem_set_limit(gpu, 0));
        kiln_tensor *rel[4] = {a, ag, c, cg};
        for (int i = 0; i < 4; i++) kiln_tensor_release(rel[i]);
    }
    if (hopper) { /* auto takes a batch-128 bprop shape of one wave of tiles to the wgmma kernel */
        int64_t sa[2] = {128, 4096}, sb[2] = {4096, 9216}, sc[2] = {128, 9216};
        kiln_tensor *ab = NULL, *bb = NULL, *cb = NULL;
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F16, 2, sa, 0.5, &ab));
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F16, 2, sb, 0.25, &bb));
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F16, 2, sc, NAN, &cb));
        setenv("KILN_GEMM", "auto", 1);
        kiln_cuda_stats s0, s1;
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
        CHECK_OK(gpu, kiln_dot(cb, ab, bb, 1.0, 0.0, NULL));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
        CHECK_INT(s1.launches - s0.launches, 1);
        float *c = malloc(128 * 9216 * sizeof *c);
        CHECK(c != NULL);
        int64_t wrong = 0;
        if (c && kiln_tensor_read(cb, c, KILN_DTYPE_F32) == KILN_OK)
            for (int64_t i = 0; i < 128 * 9216; i++) wrong += c[i] != 512.0f; /* 4096 x 0.125: exact */
        CHECK_INT(wrong, 0);
        /* and f32 read as tf32, B stored (N, K): the same shape class */
        int64_t sbt[2] = {9216, 4096};
        kiln_tensor *af = NULL, *bf = NULL, *cf = NULL;
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F32, 2, sa, 0.5, &af));
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F32, 2, sbt, 0.25, &bf));
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F32, 2, sc, NAN, &cf));
        CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 1));
        const kiln_gemm_args bt_args = {.trans_b = 1};
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
        CHECK_OK(gpu, kiln_dot(cf, af, bf, 1.0, 0.0, &bt_args));
        CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
        CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 0));
        CHECK_INT(s1.launches - s0.launches, 1);
        wrong = 0;
        if (c && kiln_tensor_read(cf, c, KILN_DTYPE_F32) == KILN_OK)
            for (int64_t i = 0; i < 128 * 9216; i++) wrong += c[i] != 512.0f;
        CHECK_INT(wrong, 0);
        free(c);
        kiln_tensor *made[] = {ab, bb, cb, af, bf, cf};
        for (int i = 0; i < 6; i++) kiln_tensor_release(made[i]);
    }
    setenv("KILN_GEMM", "cublas", 1);
    CHECK_FAILS(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL), KILN_ERR_ARG, "KILN_GEMM='cublas'");
    if (hopper) { /* the wgmma kernel's overrides: a bad value is an error naming its variable */
        static const struct {
            const char *var, *value, *msg;
        } bad[] = {{"KILN_WGMMA_SPLITS", "0", "KILN_WGMMA_SPLITS='0'"},
                   {"KILN_WGMMA_SPLITS", "3x", "KILN_WGMMA_SPLITS='3x'"},
                   {"KILN_WGMMA_BN", "160", "KILN_WGMMA_BN='160'"},
                   {"KILN_WGMMA_STORE", "smem", "KILN_WGMMA_STORE='smem'"},
                   {"KILN_WGMMA_SCHED", "stream-k", "KILN_WGMMA_SCHED='stream-k'"},
                   {"KILN_WGMMA_SR_UNROLL", "3", "KILN_WGMMA_SR_UNROLL='3'"},
                   {"KILN_WGMMA_CBUFS", "4", "KILN_WGMMA_CBUFS='4'"},
                   {"KILN_WGMMA_SPLIT_SUM", "dsmem", "KILN_WGMMA_SPLIT_SUM='dsmem'"},
                   {"KILN_WGMMA_MCAST", "2", "KILN_WGMMA_MCAST='2'"},
                   {"KILN_WGMMA_BHINT", "first", "KILN_WGMMA_BHINT='first'"},
                   {"KILN_WGMMA_CHINT", "1", "KILN_WGMMA_CHINT='1'"},
                   {"KILN_WGMMA_EARLY_SR", "on", "KILN_WGMMA_EARLY_SR='on'"},
                   {"KILN_WGMMA_FAST_DRAM", "yes", "KILN_WGMMA_FAST_DRAM='yes'"},
                   {"KILN_WGMMA_KPAIR", "on", "KILN_WGMMA_KPAIR='on'"},
                   {"KILN_WGMMA_KPAIR", "2", "KILN_WGMMA_KPAIR='2'"},
                   {"KILN_WGMMA_GROUP_M", "0", "KILN_WGMMA_GROUP_M='0'"},
                   {"KILN_WGMMA_GROUP_M", "4k", "KILN_WGMMA_GROUP_M='4k'"},
                   {"KILN_WGMMA_GRID", "0", "KILN_WGMMA_GRID='0'"},
                   {"KILN_WGMMA_STAGES", "17", "KILN_WGMMA_STAGES='17'"}};
        setenv("KILN_GEMM", "wgmma", 1);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            setenv(bad[i].var, bad[i].value, 1);
            CHECK_FAILS(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL), KILN_ERR_ARG, bad[i].msg);
            unsetenv(bad[i].var);
        }
        /* and good ones run: a forced 128-wide tile split in two, through TMA stores; one
         * staging buffer forced, two groups unrolled with stochastic rounding */
        setenv("KILN_WGMMA_BN", "128", 1);
        setenv("KILN_WGMMA_SPLITS", "2", 1);
        setenv("KILN_WGMMA_STORE", "tma", 1);
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL));
        setenv("KILN_WGMMA_SPLIT_SUM", "workspace", 1); /* the same split through the workspace */
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL));
        setenv("KILN_WGMMA_SPLIT_SUM", "cluster", 1);
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL));
        setenv("KILN_WGMMA_SPLIT_SUM", "slices", 1);
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, NULL));
        unsetenv("KILN_WGMMA_SPLIT_SUM");
        unsetenv("KILN_WGMMA_SPLITS");
        setenv("KILN_WGMMA_CBUFS", "1", 1);
        setenv("KILN_WGMMA_SR_UNROLL", "2", 1);
        CHECK_OK(gpu, kiln_dot(c16g, a16g, b16g, 1.0, 0.0, &((kiln_gemm_args){.round = KILN_ROUND_STOCHASTIC})));
        unsetenv("KILN_WGMMA_BN");
        unsetenv("KILN_WGMMA_STORE");
        unsetenv("KILN_WGMMA_CBUFS");
        unsetenv("KILN_WGMMA_SR_UNROLL");
        /* TMA multicast of B in clusters of two gives the bits of the plain kernel: an odd
         * number of tile rows (the last cluster's second block past M), three tile widths (at 64
         * one MN-major box of B, which the first block of a pair loads for both), with
         * bias, ReLU and stochastic rounding (K = 304: rows of 608 bytes, 16-byte aligned as
         * TMA needs; with K = 300 every way ran the mma.sync kernel) */
        int64_t ms[2] = {520, 304}, ns[2] = {304, 520}, cs[2] = {520, 520};
        kiln_tensor *am, *amg, *bm, *bmg, *biasm, *biasg, *cm = NULL;
        make_pair(KILN_DTYPE_BF16, 2, ms, V_PLAIN, -1, 1, &am, &amg);
        make_pair(KILN_DTYPE_BF16, 2, ns, V_PLAIN, -1, 1, &bm, &bmg);
        make_pair(KILN_DTYPE_BF16, 1, &cs[1], V_PLAIN, -1, 1, &biasm, &biasg);
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_BF16, 2, cs, &cm));
        const size_t cbytes = 520 * 520 * 2;
        unsigned char *c_on = malloc(cbytes), *c_off = malloc(cbytes);
        CHECK(c_on && c_off);
        static const char *const widths[3] = {"256", "128", "64"};
        for (int w = 0; w < 3 && c_on && c_off; w++) {
            setenv("KILN_WGMMA_BN", widths[w], 1);
            for (int on = 0; on < 2; on++) {
                setenv("KILN_WGMMA_MCAST", on ? "1" : "0", 1);
                CHECK_OK(gpu, kiln_assign(cm, kiln_scalar(NAN)));
                CHECK_OK(gpu, kiln_ctx_set_seed(gpu, 42)); /* the same rounding stream both ways */
                kiln_gemm_args ga = {.bias = biasg, .relu = 1, .round = KILN_ROUND_STOCHASTIC};
                CHECK_OK(gpu, kiln_dot(cm, amg, bmg, 1.0, 0.0, &ga));
                CHECK_OK(gpu, kiln_tensor_read(cm, on ? c_on : c_off, KILN_DTYPE_BF16));
            }
            int64_t ndiff = 0, first = -1;
            for (int64_t i = 0; i < 520 * 520; i++)
                if (memcmp(c_on + 2 * i, c_off + 2 * i, 2) != 0 && ndiff++ == 0) first = i;
            if (ndiff) {
                unsigned short x, y;
                memcpy(&x, c_on + 2 * first, 2);
                memcpy(&y, c_off + 2 * first, 2);
                fprintf(stderr,
                        "  KILN_WGMMA_MCAST=1, BN %s: %lld elements of C differ from the plain kernel's, the first at "
                        "(%lld, %lld): %g against %g\n",
                        widths[w], (long long)ndiff, (long long)(first / 520), (long long)(first % 520),
                        (double)kiln_bf16_to_f32(x), (double)kiln_bf16_to_f32(y));
            }
            CHECK_INT(ndiff, 0);
        }
        unsetenv("KILN_WGMMA_MCAST");
        /* the rule's multicast (an N-major B whose 2000-byte rows start off 32-byte sectors, nine
         * tile rows: the last pair's second block past M, A's last tile row through its edge box,
         * 9 k slices, the last part past K) gives the plain kernel's bits (KILN_GEMM=wgmma here) */
        knob_same_bits(1040, 1000, 520, "KILN_WGMMA_MCAST", NULL, "0", "the rule's multicast");
        /* KILN_WGMMA_MCAST=1 on the rule's one-consumer 64-row tiles (fc1000 bprop: two tile rows,
         * one cluster per pair): the idle consumer warpgroup takes part in the cluster's closing
         * barrier (it had returned before it: the emulator deadlocked), the plain kernel's bits */
        knob_same_bits(128, 4096, 1000, "KILN_WGMMA_MCAST", "1", "0", "multicast on one consumer's 64-row tiles");
        /* B's loads with the evict_first L2 policy: the rule's (one tile row streaming 48 MiB of B)
         * and KILN_WGMMA_BHINT=1 on two ragged tile rows, each the plain kernel's bits */
        knob_same_bits(128, 12288, 2048, "KILN_WGMMA_BHINT", NULL, "0", "the rule's evict_first loads of B");
        knob_same_bits(200, 1000, 520, "KILN_WGMMA_BHINT", "1", "0", "evict_first loads of B");
        /* the rule's row order of the plain weight updates (17152 x 1024 x 64: 536 tiles of 128 x 256,
         * four waves and more on 132 SMs) against groups of 8 tile rows: the same bits, no tile left
         * out (C starts as NaN) */
        knob_same_bits(17152, 1024, 64, "KILN_WGMMA_GROUP_M", NULL, "8", "the rule's row order");
        /* and its evict_first stores of C against stores without a policy */
        knob_same_bits(17152, 1024, 64, "KILN_WGMMA_CHINT", NULL, "0", "the rule's evict_first stores of C");
        knob_same_bits(1040, 1000, 520, "KILN_WGMMA_CHINT", "first", "0", "evict_first stores of C");
        knob_same_bits(1040, 1000, 520, "KILN_WGMMA_CHINT", "last", "0", "evict_last stores of C");
        /* stochastic rounding's words at the item's start, with bias and ReLU: the rule's (fc9216
         * bprop's 128 x 128 tiles and fc9216 fprop's one-consumer 64 x 64 tiles, one a block)
         * against off; forced on where blocks have several items (the 1024 square's 128 tiles of
         * 128 x 64 on 16 blocks); each the same bits as off */
        knob_bits(128, 9216, 4096, "KILN_WGMMA_EARLY_SR", NULL, "0", "the rule's early SR words", 1);
        setenv("KILN_WGMMA_GRID", "16", 1);
        knob_bits(1024, 1024, 1024, "KILN_WGMMA_EARLY_SR", "1", "0", "early SR words, eight items a block", 1);
        unsetenv("KILN_WGMMA_GRID");
        knob_bits(128, 4096, 9216, "KILN_WGMMA_EARLY_SR", NULL, "0", "the rule's early SR words on 64-row tiles", 1);
        /* 64-row tiles 128 wide at the fewest stages one may ask for: k pairs keep four (two a
         * consumer; with fewer a consumer waited on a stage it held itself, and K = 304's five
         * slices hung), one consumer two; both against the rule's kernel (C = A B, round to
         * nearest: the sums in another order, within two units of bf16's last place). Wider
         * 64-row tiles are an error naming both variables. */
        CHECK_OK(gpu, kiln_dot(cm, amg, bmg, 1.0, 0.0, NULL));
        CHECK_OK(gpu, kiln_tensor_read(cm, c_off, KILN_DTYPE_BF16));
        static const char *const kp_modes[2] = {"1", "one"};
        for (int k = 0; k < 2 && c_on && c_off; k++) {
            setenv("KILN_WGMMA_KPAIR", kp_modes[k], 1);
            setenv("KILN_WGMMA_BN", "128", 1);
            setenv("KILN_WGMMA_STAGES", "1", 1);
            CHECK_OK(gpu, kiln_assign(cm, kiln_scalar(NAN)));
            CHECK_OK(gpu, kiln_dot(cm, amg, bmg, 1.0, 0.0, NULL));
            CHECK_OK(gpu, kiln_tensor_read(cm, c_on, KILN_DTYPE_BF16));
            int64_t far = 0;
            for (int64_t i = 0; i < 520 * 520; i++) {
                unsigned short x, y;
                memcpy(&x, c_on + 2 * i, 2);
                memcpy(&y, c_off + 2 * i, 2);
                const double a = kiln_bf16_to_f32(x), b = kiln_bf16_to_f32(y);
                far += !(fabs(a - b) <= ldexp(fabs(b) > 1.0 ? fabs(b) : 1.0, -6));
            }
            if (far) fprintf(stderr, "  KILN_WGMMA_KPAIR=%s, BN 128: %lld elements of C far from the rule's\n", kp_modes[k],
                             (long long)far);
            CHECK_INT(far, 0);
        }
        setenv("KILN_WGMMA_KPAIR", "1", 1);
        setenv("KILN_WGMMA_BN", "256", 1);
        CHECK_FAILS(gpu, kiln_dot(cm, amg, bmg, 1.0, 0.0, NULL), KILN_ERR_ARG,
                    "KILN_WGMMA_BN=256 with KILN_WGMMA_KPAIR=1");
        setenv("KILN_WGMMA_KPAIR", "one", 1);
        setenv("KILN_WGMMA_BN", "192", 1);
        CHECK_FAILS(gpu, kiln_dot(cm, amg, bmg, 1.0, 0.0, NULL), KILN_ERR_ARG,
                    "KILN_WGMMA_BN=192 with KILN_WGMMA_KPAIR=one");
        unsetenv("KILN_WGMMA_KPAIR");
        unsetenv("KILN_WGMMA_STAGES");
        unsetenv("KILN_WGMMA_BN");
        free(c_on);
        free(c_off);
        kiln_tensor *mc_all[] = {am, amg, bm, bmg, biasm, biasg, cm};
        for (int i = 0; i < 7; i++) kiln_tensor_release(mc_all[i]);
    }
    { /* the FFMA kernel's structure overrides (any GPU): a bad value is an error naming its
       * variable; the other structures give the default's bits (k in the same order, one
       * fmaf at a time, no split at K = 64) */
        static const struct {
            const char *var, *value, *msg;
        } bad[] = {{"KILN_FFMA_BK", "32", "KILN_FFMA_BK='32'"},
                   {"KILN_FFMA_MINB", "3", "KILN_FFMA_MINB='3'"},
                   {"KILN_FFMA_WARPS", "8x4", "KILN_FFMA_WARPS='8x4'"},
                   {"KILN_FFMA_BN", "64", "KILN_FFMA_BN='64'"},
                   {"KILN_FFMA_ORDER", "diag", "KILN_FFMA_ORDER='diag'"},
                   {"KILN_FFMA_EARLY", "2", "KILN_FFMA_EARLY='2'"},
                   {"KILN_FFMA_WALK", "yes", "KILN_FFMA_WALK='yes'"},
                   {"KILN_FFMA_SLICES", "on", "KILN_FFMA_SLICES='on'"},
                   {"KILN_GEMM_PDL", "2", "KILN_GEMM_PDL='2'"}};
        setenv("KILN_GEMM", "ffma", 1);
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            setenv(bad[i].var, bad[i].value, 1);
            CHECK_FAILS(gpu, kiln_dot(c32g, a32g, a32g, 1.0, 0.0, NULL), KILN_ERR_ARG, bad[i].msg);
            unsetenv(bad[i].var);
        }
        /* BK, MINB, WARPS, BN, ORDER, EARLY, WALK */
        static const char *const structs[9][7] = {
            {"16", "2", "2x16", "128", "cols", "1", "1"}, {"8", "2", "4x8", "128", "cols", "1", "1"},
            {"16", "1", "4x8", "128", "cols", "1", "1"},  {"8", "1", "4x8", "256", "cols", "1", "1"},
            {"8", "2", "2x16", "256", "cols", "1", "1"},  {"8", "1", "4x8", "128", "rows", "1", "1"},
            {"8", "1", "4x8", "256", "rows", "0", "0"},   {"8", "1", "4x8", "128", "cols", "0", "1"},
            {"8", "1", "4x8", "256", "cols", "1", "0"}};
        float *want_c = malloc(64 * 64 * sizeof *want_c), *got_c = malloc(64 * 64 * sizeof *got_c);
        CHECK(want_c && got_c);
        CHECK_OK(gpu, kiln_dot(c32g, a32g, a32g, 1.0, 0.0, NULL));
        if (want_c) CHECK_OK(gpu, kiln_tensor_read(c32g, want_c, KILN_DTYPE_F32));
        for (int v = 0; v < 9 && want_c && got_c; v++) {
            setenv("KILN_FFMA_BK", structs[v][0], 1);
            setenv("KILN_FFMA_MINB", structs[v][1], 1);
            setenv("KILN_FFMA_WARPS", structs[v][2], 1);
            setenv("KILN_FFMA_BN", structs[v][3], 1);
            setenv("KILN_FFMA_ORDER", structs[v][4], 1);
            setenv("KILN_FFMA_EARLY", structs[v][5], 1);
            setenv("KILN_FFMA_WALK", structs[v][6], 1);
            CHECK_OK(gpu, kiln_assign(c32g, kiln_scalar(NAN)));
            CHECK_OK(gpu, kiln_dot(c32g, a32g, a32g, 1.0, 0.0, NULL));
            CHECK_OK(gpu, kiln_tensor_read(c32g, got_c, KILN_DTYPE_F32));
            int same = memcmp(want_c, got_c, 64 * 64 * sizeof *got_c) == 0;
            if (!same)
                fprintf(stderr, "  KILN_FFMA_BK=%s MINB=%s WARPS=%s BN=%s ORDER=%s EARLY=%s WALK=%s: C differs from the default's\n",
                        structs[v][0], structs[v][1], structs[v][2], structs[v][3], structs[v][4], structs[v][5],
                        structs[v][6]);
            CHECK(same);
        }
        unsetenv("KILN_FFMA_BK");
        unsetenv("KILN_FFMA_MINB");
        unsetenv("KILN_FFMA_WARPS");
        unsetenv("KILN_FFMA_BN");
        unsetenv("KILN_FFMA_ORDER");
        unsetenv("KILN_FFMA_EARLY");
        unsetenv("KILN_FFMA_WALK");
        free(want_c);
        free(got_c);
    }
    { /* split tiles summed in slices by every block of a tile (fc1000 fprop's shape: 8 tiles of
       * 16 splits, a cooperative launch) give the bits of the last block's sum
       * (KILN_FFMA_SLICES=0), with a bias and ReLU, and match the CPU's f32 product */
        const int64_t sa[2] = {128, 4096}, sb[2] = {4096, 1000}, sc[2] = {128, 1000}, sbias[1] = {1000};
        kiln_tensor *ac, *ag, *bc, *bg, *cc, *cg, *biasc, *biasg;
        make_pair(KILN_DTYPE_F32, 2, sa, V_PLAIN, -1, 1, &ac, &ag);
        make_pair(KILN_DTYPE_F32, 2, sb, V_PLAIN, -1, 1, &bc, &bg);
        make_pair(KILN_DTYPE_F32, 2, sc, V_PLAIN, -1, 1, &cc, &cg);
        make_pair(KILN_DTYPE_F32, 1, sbias, V_PLAIN, -1, 1, &biasc, &biasg);
        float *on = malloc(128 * 1000 * sizeof *on), *off = malloc(128 * 1000 * sizeof *off),
              *ref = malloc(128 * 1000 * sizeof *ref);
        CHECK(on && off && ref);
        kiln_gemm_args args = {.bias = biasg, .relu = 1};
        kiln_gemm_args cargs = {.bias = biasc, .relu = 1};
        setenv("KILN_GEMM", "ffma", 1);
        for (int v = 0; v < 2 && on && off && ref; v++) {
            setenv("KILN_FFMA_SLICES", v ? "0" : "1", 1);
            CHECK_OK(gpu, kiln_assign(cg, kiln_scalar(NAN)));
            CHECK_OK(gpu, kiln_dot(cg, ag, bg, 1.0, 0.0, &args));
            CHECK_OK(gpu, kiln_tensor_read(cg, v ? off : on, KILN_DTYPE_F32));
        }
        unsetenv("KILN_FFMA_SLICES");
        CHECK_OK(cpu, kiln_dot(cc, ac, bc, 1.0, 0.0, &cargs));
        if (on && off && ref) {
            CHECK_OK(cpu, kiln_tensor_read(cc, ref, KILN_DTYPE_F32));
            CHECK(memcmp(on, off, 128 * 1000 * sizeof *on) == 0);
            int64_t bad = 0;
            for (int64_t i = 0; i < 128 * 1000; i++)
                if (!(fabsf(on[i] - ref[i]) <= 1e-3f * (1.0f + fabsf(ref[i])))) bad++;
            CHECK_INT(bad, 0);
        }
        free(on);
        free(off);
        free(ref);
        kiln_tensor *sl_all[] = {ac, ag, bc, bg, cc, cg, biasc, biasg};
        for (int i = 0; i < 8; i++) kiln_tensor_release(sl_all[i]);
    }
    unsetenv("KILN_GEMM");
    kiln_tensor *all[] = {a16, a16g, b16, b16g, c16, c16g, a32, a32g, c32, c32g};
    for (int i = 0; i < 10; i++) kiln_tensor_release(all[i]);
}

/* Programmatic dependent launch (an own GEMM may start while the kernel before it finishes):
 * chains of GEMMs where each reads the previous one's output and overwrites the buffer the
 * one before it read (x1 = x0 W, x0 = x1 W, ...) give the same bits with it as without
 * (KILN_GEMM_PDL=0: plain stream order). A kernel touching global memory before its wait
 * would read a half-written x or overwrite one still being read. Shapes that leave SMs free
 * (the next grid's blocks start at once) and split-K ones (workspace and counters). */
static void gemm_chain_pdl(void)
{
    static const struct {
        const char *engine;
        kiln_dtype dt;
        int64_t rows, n;
    } chains[] = {{"own", KILN_DTYPE_F16, 1024, 1024}, {"own", KILN_DTYPE_BF16, 128, 2048},
                  {"mma", KILN_DTYPE_F16, 256, 512},   {"ffma", KILN_DTYPE_F32, 512, 512},
                  {"ffma", KILN_DTYPE_F32, 128, 2048}};
    enum { STEPS = 12 };
    for (size_t c = 0; c < sizeof chains / sizeof chains[0]; c++) {
        setenv("KILN_GEMM", chains[c].engine, 1);
        const int64_t R = chains[c].rows, N = chains[c].n;
        int64_t xs[2] = {R, N}, ws[2] = {N, N};
        const double wr = 1.5 / sqrt((double)N); /* keeps |x| near 1 over the steps */
        kiln_tensor *x0c, *x0g, *wc, *wg, *x1g = NULL, *x0start = NULL;
        make_pair(chains[c].dt, 2, xs, V_PLAIN, -1, 1, &x0c, &x0g);
        make_pair(chains[c].dt, 2, ws, V_PLAIN, -wr, wr, &wc, &wg);
        CHECK_OK(gpu, kiln_tensor_empty(gpu, chains[c].dt, 2, xs, &x1g));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, chains[c].dt, 2, xs, &x0start));
        CHECK_OK(gpu, kiln_assign(x0start, kiln_t(x0g)));
        const size_t bytes = (size_t)(R * N) * kiln_dtype_size(chains[c].dt);
        unsigned char *want = malloc(bytes), *got = malloc(bytes);
        CHECK(want && got);
        for (int pdl = 0; pdl < 2 && want && got; pdl++) {
            setenv("KILN_GEMM_PDL", pdl ? "1" : "0", 1);
            CHECK_OK(gpu, kiln_assign(x0g, kiln_t(x0start)));
            for (int i = 0; i < STEPS; i++) {
                CHECK_OK(gpu, kiln_dot(x1g, x0g, wg, 1.0, 0.0, NULL));
                CHECK_OK(gpu, kiln_dot(x0g, x1g, wg, 1.0, 0.0, NULL));
            }
            CHECK_OK(gpu, kiln_tensor_read(x0g, pdl ? got : want, chains[c].dt));
        }
        if (want && got) {
            int same = memcmp(want, got, bytes) == 0;
            if (!same)
                fprintf(stderr, "  KILN_GEMM=%s %s %lld x %lld chain: the bits differ with KILN_GEMM_PDL=1\n",
                        chains[c].engine, kiln_dtype_name(chains[c].dt), (long long)R, (long long)N);
            CHECK(same);
        }
        free(want);
        free(got);
        kiln_tensor *all[] = {x0c, x0g, wc, wg, x1g, x0start};
        for (int i = 0; i < 6; i++) kiln_tensor_release(all[i]);
    }
    unsetenv("KILN_GEMM_PDL");
    unsetenv("KILN_GEMM");
}

/* cuBLASLt's plans are cached per problem: a repeated shape with a new bias vector reuses
 * the plan (no new heuristic query) and uses the new bias; a new shape builds one; more
 * shapes than the cache holds evict the least recently used, which is rebuilt on return. */
static double vendor_bias_err(int64_t M, int64_t N, int64_t K, int with_bias)
{
    int64_t as[2] = {M, K}, bs[2] = {K, N}, cs[2] = {M, N};
    kiln_tensor *ac, *ag, *bc, *bg, *cc, *cg, *biasc = NULL, *biasg = NULL;
    make_pair(KILN_DTYPE_F32, 2, as, V_PLAIN, -1, 1, &ac, &ag);
    make_pair(KILN_DTYPE_F32, 2, bs, V_PLAIN, -1, 1, &bc, &bg);
    make_pair(KILN_DTYPE_F32, 2, cs, V_PLAIN, -1, 1, &cc, &cg);
    if (with_bias) make_pair(KILN_DTYPE_F32, 1, &N, V_PLAIN, -1, 1, &biasc, &biasg);
    kiln_gemm_args gc = {.bias = biasc, .relu = with_bias}, gg = {.bias = biasg, .relu = with_bias};
    CHECK_OK(cpu, kiln_dot(cc, ac, bc, 1.0, 0.0, &gc));
    CHECK_OK(gpu, kiln_dot(cg, ag, bg, 1.0, 0.0, &gg));
    double *x = read_f64(cg), *y = read_f64(cc);
    double rel = max_rel(x, y, M * N);
    free(x);
    free(y);
    kiln_tensor *all[] = {ac, ag, bc, bg, cc, cg, biasc, biasg};
    for (int i = 0; i < 8; i++) kiln_tensor_release(all[i]);
    return rel;
}

static void gemm_lt_cache(void)
{
    if (!kiln__cuda_cache_stats) return;
    setenv("KILN_GEMM", "vendor", 1);
    kiln_cuda_stats s0, s1, s2, s3;
    CHECK(vendor_bias_err(72, 40, 96, 1) <= 2e-5);
    CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
    CHECK(vendor_bias_err(72, 40, 96, 1) <= 2e-5); /* same problem, a new bias vector */
    CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
    CHECK_INT(s1.lt_queries - s0.lt_queries, 0);
    CHECK_INT(s1.lt_hits - s0.lt_hits, 1);
    CHECK(vendor_bias_err(72, 40, 97, 1) <= 2e-5); /* a new K: a new plan */
    CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s2));
    CHECK_INT(s2.lt_queries - s1.lt_queries, 1);
    for (int k = 1; k <= 70; k++) CHECK(vendor_bias_err(9, 11, k, 0) <= 2e-5); /* more shapes than plans */
    CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s2));
    CHECK(vendor_bias_err(72, 40, 96, 1) <= 2e-5); /* evicted: built again, still right */
    CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s3));
    CHECK_INT(s3.lt_queries - s2.lt_queries, 1);
    unsetenv("KILN_GEMM");
}

/* NaNs through every GEMM engine and both C stores of the wgmma kernel, in f16 and bf16, with
 * five epilogues (plain, alpha 0.5, bias, bias + ReLU, bias + ReLU + stochastic rounding): the
 * rows that meet a NaN of A (payloads of both signs, quiet and signalling) come out as the
 * canonical NaN 0x7FFF, every other element finite. The GPU's arithmetic makes every NaN
 * 0x7FFFFFFF before the rounding, which the kernels' 16-bit roundings rely on (bench/NOTES.md
 * step 38); the CPU backend keeps payload bits instead, so this is a GPU-only property. A,
 * B and the bias are built from raw 16-bit words so the payloads reach the GPU unchanged. */
static void gemm_nan_dtype(kiln_dtype dt)
{
    enum { M = 256, N = 512, K = 128, NAN_ROWS = 4 };
    static const int nan_row[NAN_ROWS] = {10, 60, 110, 160};
    const int bf = dt == KILN_DTYPE_BF16;
    const uint16_t exp_mask = bf ? 0x7F80 : 0x7C00;
    static const uint16_t payload_bf16[NAN_ROWS] = {0x7FA1, 0xFFC3, 0x7F81, 0x7FC0};
    static const uint16_t payload_f16[NAN_ROWS] = {0x7C01, 0xFE03, 0x7D00, 0x7E00};
    uint16_t *a = malloc(sizeof(uint16_t) * M * K), *b = malloc(sizeof(uint16_t) * K * N);
    uint16_t *c = malloc(sizeof(uint16_t) * M * N), bias[N];
    double *h = malloc(sizeof(double) * K * N);
    uint16_t *const dst[3] = {a, b, bias};
    const int count[3] = {M * K, K * N, N};
    for (int t = 0; t < 3; t++) {
        check_fill(&rng, h, count[t], -1.0, 1.0);
        for (int i = 0; i < count[t]; i++)
            dst[t][i] = bf ? kiln_f32_to_bf16_rn((float)h[i]) : kiln_f32_to_f16_rn((float)h[i]);
    }
    for (int q = 0; q < NAN_ROWS; q++) a[nan_row[q] * K + 3 + q] = bf ? payload_bf16[q] : payload_f16[q];
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sbias[1] = {N};
    kiln_tensor *A = NULL, *B = NULL, *C = NULL, *Bias = NULL;
    CHECK_OK(gpu, kiln_tensor_from_host(gpu, dt, 2, sa, a, dt, &A));
    CHECK_OK(gpu, kiln_tensor_from_host(gpu, dt, 2, sb, b, dt, &B));
    CHECK_OK(gpu, kiln_tensor_from_host(gpu, dt, 1, sbias, bias, dt, &Bias));
    CHECK_OK(gpu, kiln_tensor_empty(gpu, dt, 2, sc, &C));
    static const char *const engines[] = {"own", "vendor", "mma", "wgmma", "wgmma"};
    static const char *const epilogues[] = {"plain", "alpha 0.5", "bias", "bias + ReLU", "bias + ReLU + SR"};
    for (int e = 0; e < 5 && A && B && C && Bias; e++) {
        setenv("KILN_GEMM", engines[e], 1);
        if (e == 4) setenv("KILN_WGMMA_STORE", "regs", 1);
        for (int v = 0; v < 5; v++) {
            kiln_gemm_args ga = {.bias = v >= 2 ? Bias : NULL,
                                 .relu = v >= 3,
                                 .round = v == 4 ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST};
            CHECK_OK(gpu, kiln_assign(C, kiln_scalar(0.0)));
            CHECK_OK(gpu, kiln_dot(C, A, B, v == 1 ? 0.5 : 1.0, 0.0, &ga));
            CHECK_OK(gpu, kiln_tensor_read(C, c, dt));
            int bad = 0, q = 0;
            for (int m = 0; m < M; m++) {
                const int is_nan_row = q < NAN_ROWS && m == nan_row[q];
                q += is_nan_row;
                for (int n = 0; n < N; n++) {
                    const uint16_t x = c[m * N + n];
                    const int ok = is_nan_row ? x == 0x7FFF : (x & exp_mask) != exp_mask;
                    if (!ok && bad++ < 3)
                        fprintf(stderr, "  NaN payloads, %s, KILN_GEMM=%s%s, %s: C[%d][%d] = %04x\n",
                                bf ? "bf16" : "f16", engines[e], e == 4 ? " (register store)" : "", epilogues[v], m, n,
                                x);
                }
            }
            CHECK_INT(bad, 0);
        }
    }
    unsetenv("KILN_WGMMA_STORE");
    unsetenv("KILN_GEMM");
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
    kiln_tensor_release(Bias);
    free(a);
    free(b);
    free(c);
    free(h);
}

/* One tf32 M x N x K product (B stored (N, K)) through the engine KILN_GEMM names, plain and with
 * a bias + ReLU, against the f64 CPU reference within tf32's tolerance (max error over max |C|);
 * store, where not NULL, is KILN_WGMMA_STORE's value for it */
static void gemm_tf32_staged(int64_t M, int64_t N, int64_t K, const char *store)
{
    const int64_t as[2] = {M, K}, bs[2] = {N, K}, cs[2] = {M, N};
    if (store) setenv("KILN_WGMMA_STORE", store, 1);
    for (int bias = 0; bias < 2; bias++) {
        kiln_tensor *ac, *ag, *bc, *bg, *cc, *cg, *biasc = NULL, *biasg = NULL;
        make_pair(KILN_DTYPE_F32, 2, as, V_PLAIN, -1, 1, &ac, &ag);
        make_pair(KILN_DTYPE_F32, 2, bs, V_PLAIN, -1, 1, &bc, &bg);
        make_pair(KILN_DTYPE_F32, 2, cs, V_PLAIN, -1, 1, &cc, &cg);
        if (bias) make_pair(KILN_DTYPE_F32, 1, &N, V_PLAIN, -1, 1, &biasc, &biasg);
        kiln_gemm_args gc = {.trans_b = 1, .relu = bias, .bias = biasc}, gg = gc;
        gg.bias = biasg;
        CHECK_OK(cpu, kiln_dot(cc, ac, bc, 1.0, 0.0, &gc));
        CHECK_OK(gpu, kiln_assign(cg, kiln_scalar(NAN)));
        CHECK_OK(gpu, kiln_dot(cg, ag, bg, 1.0, 0.0, &gg));
        const double rel = gemm_rel_err(cg, cc);
        if (!(rel <= 4e-3))
            fprintf(stderr, "  tf32 %lld x %lld x %lld%s%s: rel err %g\n", (long long)M, (long long)N, (long long)K,
                    bias ? " with a bias and ReLU" : "", store ? " (KILN_WGMMA_STORE set)" : "", rel);
        CHECK(rel <= 4e-3);
        kiln_tensor *all[] = {ac, ag, bc, bg, cc, cg, biasc, biasg};
        for (int i = 0; i < 8; i++) kiln_tensor_release(all[i]);
    }
    if (store) unsetenv("KILN_WGMMA_STORE");
}

/* tf32 (B stored (N, K)) through kiln's own kernel, plain and with a bias + ReLU, against the f64
 * CPU reference, on the plans whose f32 C staging the rule had to fit: K = 64 (one f32 staging
 * buffer at 256 wide, 128 wide with a bias; a plan of two had failed the launch), K = 256 (8
 * slices staged at 128 wide, overrunning the 5 stages left beside the staging), and K = 2048
 * staged at any depth (KILN_WGMMA_STORE=tma-deep) */
static void gemm_tf32_staging(void)
{
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 1));
    setenv("KILN_GEMM", "own", 1);
    gemm_tf32_staged(2048, 4096, 64, NULL);
    gemm_tf32_staged(2048, 4096, 256, NULL);
    gemm_tf32_staged(1024, 1024, 2048, "tma-deep");
    unsetenv("KILN_GEMM");
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 0));
}

/* A 16-bit value's place on the number line in units in the last place (-0 and +0 both 0) */
static int ulp_index(uint16_t x)
{
    return (x & 0x8000u) ? -(int)(x & 0x7fffu) : (int)x;
}

/* The tile rule's plans for fast memory (KILN_WGMMA_FAST_DRAM=1, the default where the DRAM
 * peaks at 4 TB/s or more) and the H100's (=0) through the wgmma kernel, f16 and bf16, against
 * the f64 CPU reference: on 132 SMs, long K (128 x 3072 x 8192, with a bias and ReLU: 128-wide
 * tiles in 3 splits through the workspace, against 64-wide ones in 2) and short K (fc1000
 * fprop, 128 x 1000 x 4096, alpha 0.5 and beta 0.25: 64-wide tiles in 8 splits summed in
 * slices, against 4). Then both plans with stochastic rounding from one seed, on inputs whose
 * f32 sums are exact in any order (A in eighths up to 1, B and the bias in 1024ths up to
 * 255 / 1024: every partial sum a multiple of 2^-13 below 2^11), so that the plans' f32 results
 * are the same and each element, rounding with the bits of its place whatever the plan, must
 * come out with the same bits. (On random inputs the plans' sums differ in their last f32 bits, and where an
 * element cancels to much less than its terms that is many units of its 16-bit result: a first
 * form allowing one unit apart failed on 5-321 such elements a shape on an H200.) */
static void gemm_fast_dram(void)
{
    static const struct {
        int64_t M, N, K;
        int bias;
        double alpha, beta;
    } shapes[] = {{128, 3072, 8192, 1, 1.0, 0.0}, {128, 1000, 4096, 0, 0.5, 0.25}};
    static const kiln_dtype dts[] = {KILN_DTYPE_F16, KILN_DTYPE_BF16};
    static const double tols[] = {4e-3, 3e-2};
    setenv("KILN_GEMM", "wgmma", 1);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int d = 0; d < 2; d++) {
            const int64_t M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
            const int64_t as[2] = {M, K}, bs[2] = {K, N}, cs[2] = {M, N};
            kiln_tensor *ac, *ag, *bc, *bg, *cc, *c0g, *cg = NULL, *biasc = NULL, *biasg = NULL;
            make_pair(dts[d], 2, as, V_PLAIN, -1, 1, &ac, &ag);
            make_pair(dts[d], 2, bs, V_PLAIN, -1, 1, &bc, &bg);
            make_pair(dts[d], 2, cs, V_PLAIN, -1, 1, &cc, &c0g); /* C's first values, for beta */
            if (shapes[s].bias) make_pair(dts[d], 1, &N, V_PLAIN, -1, 1, &biasc, &biasg);
            CHECK_OK(gpu, kiln_tensor_empty(gpu, dts[d], 2, cs, &cg));
            const kiln_gemm_args gc = {.bias = biasc, .relu = shapes[s].bias},
                                 gg = {.bias = biasg, .relu = shapes[s].bias};
            CHECK_OK(cpu, kiln_dot(cc, ac, bc, shapes[s].alpha, shapes[s].beta, &gc));
            const size_t bytes = (size_t)(M * N * 2);
            uint16_t *sr[2] = {malloc(bytes), malloc(bytes)};
            CHECK(sr[0] && sr[1]);
            for (int fast = 0; fast < 2; fast++) {
                setenv("KILN_WGMMA_FAST_DRAM", fast ? "1" : "0", 1);
                CHECK_OK(gpu, kiln_assign(cg, kiln_t(c0g)));
                CHECK_OK(gpu, kiln_dot(cg, ag, bg, shapes[s].alpha, shapes[s].beta, &gg));
                const double rel = gemm_rel_err(cg, cc);
                if (!(rel <= tols[d]))
                    fprintf(stderr, "  KILN_WGMMA_FAST_DRAM=%d %s %lld x %lld x %lld: rel err %g > %g\n", fast,
                            kiln_dtype_name(dts[d]), (long long)M, (long long)N, (long long)K, rel, tols[d]);
                CHECK(rel <= tols[d]);
            }
            /* stochastically rounded, from one seed, on the exact inputs; C poisoned, beta 0 */
            float *xa = malloc((size_t)(M * K) * sizeof(float)), *xb = malloc((size_t)(K * N) * sizeof(float));
            CHECK(xa && xb);
            if (xa && xb) {
                for (int64_t i = 0; i < M * K; i++) xa[i] = (float)((int)(check_rand_u64(&rng) % 17) - 8) / 8.0f;
                for (int64_t i = 0; i < K * N; i++) xb[i] = (float)((int)(check_rand_u64(&rng) % 511) - 255) / 1024.0f;
                CHECK_OK(gpu, kiln_tensor_write(ag, xa, KILN_DTYPE_F32));
                CHECK_OK(gpu, kiln_tensor_write(bg, xb, KILN_DTYPE_F32));
                /* the bias in 1024ths too, so that sum + bias is exact whichever plan adds it when */
                if (biasg) CHECK_OK(gpu, kiln_tensor_write(biasg, xb, KILN_DTYPE_F32));
            }
            free(xa);
            free(xb);
            for (int fast = 0; fast < 2; fast++) {
                setenv("KILN_WGMMA_FAST_DRAM", fast ? "1" : "0", 1);
                kiln_gemm_args gsr = gg;
                gsr.round = KILN_ROUND_STOCHASTIC;
                CHECK_OK(gpu, kiln_assign(cg, kiln_scalar(NAN)));
                CHECK_OK(gpu, kiln_ctx_set_seed(gpu, 42));
                CHECK_OK(gpu, kiln_dot(cg, ag, bg, shapes[s].alpha, 0.0, &gsr));
                if (sr[fast]) CHECK_OK(gpu, kiln_tensor_read(cg, sr[fast], dts[d]));
            }
            unsetenv("KILN_WGMMA_FAST_DRAM");
            if (sr[0] && sr[1]) {
                int64_t apart = 0, nan = 0, first = -1;
                for (int64_t i = 0; i < M * N; i++) {
                    const float v = dts[d] == KILN_DTYPE_F16 ? kiln_f16_to_f32(sr[1][i]) : kiln_bf16_to_f32(sr[1][i]);
                    nan += isnan(v);
                    if (ulp_index(sr[1][i]) != ulp_index(sr[0][i])) {
                        apart++;
                        if (first < 0) first = i;
                    }
                }
                if (apart || nan)
                    fprintf(stderr,
                            "  %s %lld x %lld x %lld rounded stochastically: %lld elements differ between "
                            "KILN_WGMMA_FAST_DRAM=1 and =0 on exactly summed inputs (the first at %lld: %04x against "
                            "%04x), %lld NaN\n",
                            kiln_dtype_name(dts[d]), (long long)M, (long long)N, (long long)K, (long long)apart,
                            (long long)first, first >= 0 ? sr[1][first] : 0, first >= 0 ? sr[0][first] : 0,
                            (long long)nan);
                CHECK_INT(apart, 0);
                CHECK_INT(nan, 0);
            }
            free(sr[0]);
            free(sr[1]);
            kiln_tensor *all[] = {ac, ag, bc, bg, cc, c0g, cg, biasc, biasg};
            for (int i = 0; i < 9; i++) kiln_tensor_release(all[i]);
        }
    }
    /* unset: the plans the device's DRAM peak asks for (kiln_ctx_device_description gives it) */
    const char *desc = kiln_ctx_device_description(gpu), *tb = strstr(desc, " TB/s peak");
    CHECK(tb != NULL);
    if (tb) {
        const char *p = tb;
        while (p > desc && p[-1] != ' ') p--;
        const double peak = strtod(p, NULL) * 1e12;
        const int fast = peak >= KILN_GEMM_FAST_DRAM_BPS;
        printf("DRAM peak %.2f TB/s: the fast-memory plans %s by default\n", peak * 1e-12, fast ? "on" : "off");
        knob_same_bits(128, 3072, 8192, "KILN_WGMMA_FAST_DRAM", NULL, fast ? "1" : "0",
                       "the device's fast-memory default");
    }
    unsetenv("KILN_GEMM");
}

/* An uninitialised GPU tensor of `shape` that is a view of a larger one: view 1 its rows every
 * other row of the base (a row stride of twice the width), 2 its columns from the base's
 * second on (a start one element off the base's alignment), else a plain tensor. */
static kiln_tensor *gpu_view_empty(kiln_dtype dt, int nd, const int64_t *shape, int view)
{
    int64_t bshape[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) bshape[i] = shape[i];
    if (view == 1) bshape[nd - 2] *= 2;
    if (view == 2) bshape[nd - 1] += 1;
    kiln_tensor *base = NULL, *out = NULL;
    CHECK_OK(gpu, kiln_tensor_empty(gpu, dt, nd, bshape, &base));
    if (!base) return NULL;
    kiln_slice sl[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) sl[i] = KILN_SLICE_ALL;
    if (view == 1) sl[nd - 2] = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, 2);
    if (view == 2) sl[nd - 1] = KILN_SLICE(1, KILN_NONE);
    CHECK_OK(gpu, kiln_tensor_slice(base, nd, sl, &out));
    kiln_tensor_release(base);
    return out;
}

/* Random GEMM cases through kiln's own kernels (KILN_GEMM=own: wgmma for 16-bit and, with
 * TF32 allowed, f32 operands TMA can read; mma.sync for other 16-bit strides; FFMA for f32
 * without TF32), every plan the tile rule's on this device, with KILN_WGMMA_FAST_DRAM unset,
 * 0 or 1: sizes ragged or not (one tile row over a deep K: the split plans; the short-K
 * updates; small anything), transposes, a row-stepped or column-offset view of an operand
 * and of C, batches with one operand shared, alpha, beta, a bias per column or per row, ReLU,
 * stochastic rounding and the output statistics, against the CPU backend on the same inputs
 * (the rounding's bits come from the same (seed, row, column) keys there). The shapes come
 * from the test's seed (KILN_TEST_SEED), and a failing case is printed whole. */
static void gemm_random_cases(int count)
{
    static const int64_t odd[] = {1, 7, 8, 63, 64, 65, 127, 128, 129, 200, 255, 256, 257, 1000};
    static const double alphas[] = {1.0, 0.5, -1.25, 2.0}, betas[] = {0.0, 0.0, 0.5, -1.0};
    static const char *const fast[] = {NULL, "0", "1"};
    static const kiln_dtype dts[] = {KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F32};
    static const double tols[] = {4e-3, 3e-2, 2e-5};
    setenv("KILN_GEMM", "own", 1);
    printf("gemm: %d random cases with KILN_GEMM=own\n", count);
    for (int i = 0; i < count; i++) {
        const int d = (int)(check_rand_u64(&rng) % 3), tf32 = d == 2 && check_rand_u64(&rng) % 2;
        const int region = (int)(check_rand_u64(&rng) % 3);
        int64_t M, N, K, nb;
#define R(lo, hi) ((lo) + (int64_t)(check_rand_u64(&rng) % (uint64_t)((hi) - (lo) + 1)))
        do { /* at most 2e8 multiply-adds: the CPU reference has no BLAS on the GPU machine */
            if (region == 0) { /* anything small */
                M = check_rand_u64(&rng) % 2 ? odd[check_rand_u64(&rng) % 14] : R(1, 400);
                N = check_rand_u64(&rng) % 2 ? odd[check_rand_u64(&rng) % 14] : R(1, 600);
                K = check_rand_u64(&rng) % 2 ? odd[check_rand_u64(&rng) % 14] : R(1, 700);
            } else if (region == 1) { /* one tile row over a deep K: split-K */
                M = R(1, 128), N = R(8, 1100), K = R(1500, 9000);
            } else { /* the short-K updates over many tiles */
                M = R(200, 2100), N = R(64, 1100), K = R(16, 160);
            }
            nb = check_rand_u64(&rng) % 4 ? 0 : R(2, 3);
        } while ((double)(nb ? nb : 1) * (double)M * (double)N * (double)K > 2e8);
#undef R
        if (check_rand_u64(&rng) % 2) N = (N + 7) / 8 * 8;
        const int ta = (int)(check_rand_u64(&rng) % 2), tb = (int)(check_rand_u64(&rng) % 2);
        const int shared = nb ? (int)(check_rand_u64(&rng) % 3) : 0; /* 1: A, 2: B for every batch */
        const int view = (int)(check_rand_u64(&rng) % 6);            /* 1 A stepped, 2 B stepped, 3 A offset */
        const double alpha = alphas[check_rand_u64(&rng) % 4], beta = betas[check_rand_u64(&rng) % 4];
        const int bias = (int)(check_rand_u64(&rng) % 3), relu = (int)(check_rand_u64(&rng) % 3 == 0);
        const int sr = d < 2 && check_rand_u64(&rng) % 2, stats = check_rand_u64(&rng) % 4 == 0;
        const char *fd = fast[check_rand_u64(&rng) % 3];
        int64_t as[3], bs[3], csh[3];
        const int an = nb && shared != 1 ? 3 : 2, bn = nb && shared != 2 ? 3 : 2, cn = nb ? 3 : 2;
        as[0] = bs[0] = csh[0] = nb;
        as[an - 2] = ta ? K : M, as[an - 1] = ta ? M : K;
        bs[bn - 2] = tb ? N : K, bs[bn - 1] = tb ? K : N;
        csh[cn - 2] = M, csh[cn - 1] = N;
        kiln_tensor *ac, *ag, *bc, *bg, *cc, *c0g, *cg = NULL, *biasc = NULL, *biasg = NULL, *stc = NULL, *stg = NULL;
        make_pair(dts[d], an, as, view == 1 ? V_STEP : view == 3 ? V_OFF : V_PLAIN, -1, 1, &ac, &ag);
        make_pair(dts[d], bn, bs, view == 2 ? V_STEP : V_PLAIN, -1, 1, &bc, &bg);
        make_pair(dts[d], cn, csh, V_PLAIN, -1, 1, &cc, &c0g); /* C's first values, for beta */
        if (bias) make_pair(dts[d], 1, bias == 2 ? &M : &N, V_PLAIN, -1, 1, &biasc, &biasg);
        if (stats) {
            const int64_t two = 2;
            CHECK_OK(cpu, kiln_tensor_empty(cpu, KILN_DTYPE_F64, 1, &two, &stc));
            CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F64, 1, &two, &stg));
        }
        const int cview = (int)(check_rand_u64(&rng) % 4); /* C a view: 1 rows stepped, 2 columns offset */
        cg = gpu_view_empty(dts[d], cn, csh, cview);
        CHECK_OK(gpu, kiln_assign(cg, beta != 0 ? kiln_t(c0g) : kiln_scalar(NAN))); /* poisoned where unread */
        const kiln_round round = sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
        const kiln_gemm_args gc = {.trans_a = ta, .trans_b = tb, .relu = relu, .bias = biasc, .round = round,
                                   .bias_rows = bias == 2, .stats = stc},
                             gg = {.trans_a = ta, .trans_b = tb, .relu = relu, .bias = biasg, .round = round,
                                   .bias_rows = bias == 2, .stats = stg};
        CHECK_OK(cpu, kiln_ctx_set_seed(cpu, 1000 + (uint64_t)i));
        CHECK_OK(gpu, kiln_ctx_set_seed(gpu, 1000 + (uint64_t)i));
        CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, tf32));
        if (fd)
            setenv("KILN_WGMMA_FAST_DRAM", fd, 1);
        else
            unsetenv("KILN_WGMMA_FAST_DRAM");
        CHECK_OK(cpu, kiln_dot(cc, ac, bc, alpha, beta, &gc));
        CHECK_OK(gpu, kiln_dot(cg, ag, bg, alpha, beta, &gg));
        /* SR's one rounding more, and bf16's units of 2^-8 either way */
        const double tol = tf32 ? 4e-3 : tols[d] * (sr ? 2 : 1);
        const double rel = gemm_rel_err(cg, cc);
        double st_err = 0;
        if (stats) {
            double *x = read_f64(stg), *y = read_f64(stc);
            if (x && y) st_err = x[1] != y[1] ? INFINITY : fabs(x[0] - y[0]) / (y[0] > 1 ? y[0] : 1);
            free(x);
            free(y);
        }
        /* 16-bit C: the same bits but where the two sums straddle a rounding threshold (a few
         * in a thousand; stochastic rounding from other keys would differ in about a third) */
        double differ = 0;
        if (d < 2) {
            const int64_t n = kiln_tensor_numel(cc);
            uint16_t *x = malloc((size_t)n * 2), *y = malloc((size_t)n * 2);
            CHECK(x && y);
            if (x && y) {
                CHECK_OK(gpu, kiln_tensor_read(cg, x, dts[d]));
                CHECK_OK(cpu, kiln_tensor_read(cc, y, dts[d]));
                int64_t k = 0;
                for (int64_t j = 0; j < n; j++) k += x[j] != y[j];
                differ = (double)k / (double)(n > 0 ? n : 1);
            }
            free(x);
            free(y);
        }
        if (!(rel <= tol) || !(st_err <= tol) || !(differ <= 0.05))
            fprintf(stderr,
                    "  random gemm case %d: %s%s M=%lld N=%lld K=%lld batch=%lld (shared %d) ta=%d tb=%d view=%d "
                    "C view=%d alpha=%g beta=%g bias=%d relu=%d sr=%d stats=%d KILN_WGMMA_FAST_DRAM=%s: rel err %g, "
                    "stats %g (tol %g), %.2f %% of the bits differ\n",
                    i, kiln_dtype_name(dts[d]), tf32 ? " (tf32)" : "", (long long)M, (long long)N, (long long)K,
                    (long long)nb, shared, ta, tb, view, cview, alpha, beta, bias, relu, sr, stats, fd ? fd : "unset",
                    rel, st_err, tol, 100 * differ);
        CHECK(rel <= tol);
        CHECK(st_err <= tol);
        CHECK(differ <= 0.05);
        kiln_tensor *all[] = {ac, ag, bc, bg, cc, c0g, cg, biasc, biasg, stc, stg};
        for (int j = 0; j < 11; j++) kiln_tensor_release(all[j]);
    }
    unsetenv("KILN_WGMMA_FAST_DRAM");
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 0));
    CHECK_OK(cpu, kiln_ctx_set_seed(cpu, 42)); /* the contexts' seeds as main made them */
    CHECK_OK(gpu, kiln_ctx_set_seed(gpu, 42));
    unsetenv("KILN_GEMM");
}

static void gemm_nan_canonical(void)
{
    gemm_nan_dtype(KILN_DTYPE_BF16);
    gemm_nan_dtype(KILN_DTYPE_F16);
}

static void test_gemm(void)
{
    gemm_cases("vendor", 0);
    gemm_cases("own", 0);
    gemm_cases("mma", 0);
    gemm_cases("ffma", 0);
    /* the wgmma kernel's register epilogue (the TMA-store one is the default) and its
     * ping-pong schedule (opt-in) with either */
    setenv("KILN_WGMMA_STORE", "regs", 1);
    gemm_cases("wgmma", 0);
    setenv("KILN_WGMMA_SCHED", "pingpong", 1);
    gemm_cases("wgmma", 0);
    unsetenv("KILN_WGMMA_STORE");
    gemm_cases("wgmma", 0);
    unsetenv("KILN_WGMMA_SCHED");
    /* f32 with TF32 allowed: cuBLASLt's TF32, and the wgmma kernel's tf32 (K-major A and B) */
    gemm_cases("vendor", 1);
    gemm_cases("own", 1);
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 0));
    unsetenv("KILN_GEMM");
    gemm_dispatch();
    gemm_lt_cache();
    gemm_nan_canonical();
    gemm_tf32_staging();
}

/* the random GEMM cases: KILN_TEST_GEMM_RANDOM of them (24 unless set; a visit's gpu-visit.sh
 * step gemm-random runs this section alone with more) */
static void test_gemm_random(void)
{
    const char *e = getenv("KILN_TEST_GEMM_RANDOM");
    char *end = NULL;
    const long n = e && e[0] ? strtol(e, &end, 10) : 24;
    CHECK(!end || (*end == 0 && n >= 0 && n <= 100000)); /* a bad count fails the run */
    gemm_random_cases(n > 0 && n <= 100000 ? (int)n : 0);
}

/* ---- the output statistics in the own kernels' epilogues ---------------------------------- */

/* kiln_dot's stats through each engine with KILN_GEMM_STATS=fused (the own kernels' epilogues, the
 * default; KILN_GEMM=auto then takes the own kernels) and =pass (kiln_dot's two reductions over C):
 * the same values, exactly, and those of C as read back,
 * on shapes that take every own kernel and its epilogue paths (staged and register stores, split-K
 * sums, ragged edges, batches), with non-finite columns from a bias of +inf, NaN and -inf; each
 * launch twice (the kernels' words are zero again after each); f32 and f64 stats; a bad
 * KILN_GEMM_STATS is an error naming it. */
static void test_gemm_stats(void)
{
    static const struct {
        const char *engine;
        kiln_dtype dt;
        int64_t nb, M, N, K;
        int tf32, bias_odd, tb; /* tb: B stored (N, K), trans_b (what tf32 reads) */
    } cases[] = {
        {"own", KILN_DTYPE_F16, 1, 300, 520, 200, 0, 1, 0},  /* wgmma, staged */
        {"own", KILN_DTYPE_BF16, 1, 128, 1000, 4096, 0, 1, 0}, /* split-K (fc1000 fprop) */
        {"own", KILN_DTYPE_F16, 1, 1000, 4096, 128, 0, 0, 1}, /* an update */
        {"own", KILN_DTYPE_F16, 1, 129, 135, 70, 0, 1, 0},   /* ragged N: register stores */
        {"own", KILN_DTYPE_BF16, 3, 70, 200, 64, 0, 1, 0},   /* batches */
        {"own", KILN_DTYPE_F32, 1, 200, 304, 100, 1, 1, 1}, /* tf32, staged f32 */
        {"mma", KILN_DTYPE_F16, 1, 200, 300, 100, 0, 1, 0},
        {"mma", KILN_DTYPE_BF16, 2, 130, 90, 37, 0, 1, 0},
        {"ffma", KILN_DTYPE_F32, 1, 256, 520, 136, 0, 1, 0},
        {"ffma", KILN_DTYPE_F32, 1, 64, 120, 5000, 0, 1, 0}, /* split-K */
        {"vendor", KILN_DTYPE_F16, 1, 300, 520, 200, 0, 1, 0}, /* the pass either way */
    };
    uint64_t srng = 0x5EED5747ull;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t nb = cases[ci].nb, M = cases[ci].M, N = cases[ci].N, K = cases[ci].K;
        const kiln_dtype dt = cases[ci].dt;
        const int tb = cases[ci].tb;
        const int64_t sa[3] = {nb, M, K}, sb[3] = {nb, tb ? N : K, tb ? K : N}, sc[3] = {nb, M, N};
        double *ha = malloc((size_t)(nb * M * K) * sizeof(double)), *hb = malloc((size_t)(nb * K * N) * sizeof(double));
        double *hbias = malloc((size_t)N * sizeof(double));
        check_fill(&srng, ha, nb * M * K, -1, 1);
        check_fill(&srng, hb, nb * K * N, -1, 1);
        check_fill(&srng, hbias, N, -1, 1);
        if (cases[ci].bias_odd) {
            hbias[5] = INFINITY;
            hbias[N > 70 ? 70 : 1] = NAN;
            hbias[N - 3] = -INFINITY;
        }
        kiln_tensor *A = from_f64(gpu, dt, nb > 1 ? 3 : 2, nb > 1 ? sa : sa + 1, ha);
        kiln_tensor *B = from_f64(gpu, dt, nb > 1 ? 3 : 2, nb > 1 ? sb : sb + 1, hb);
        kiln_tensor *bias = from_f64(gpu, dt, 1, &N, hbias);
        kiln_tensor *C = NULL, *st[2] = {NULL, NULL};
        CHECK_OK(gpu, kiln_tensor_empty(gpu, dt, nb > 1 ? 3 : 2, nb > 1 ? sc : sc + 1, &C));
        const int64_t two = 2;
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F32, 1, &two, &st[0]));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F64, 1, &two, &st[1]));
        CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, cases[ci].tf32));
        setenv("KILN_GEMM", cases[ci].engine, 1);
        double got[2][2][2][2]; /* [fused, pass][f32, f64][first, second call][max, count] */
        for (int way = 0; way < 2; way++) {
            setenv("KILN_GEMM_STATS", way ? "pass" : "fused", 1);
            for (int sd = 0; sd < 2; sd++)
                for (int rep = 0; rep < 2; rep++) {
                    CHECK_OK(gpu, kiln_assign(st[sd], kiln_scalar(NAN))); /* poisoned: both must be written */
                    CHECK_OK(gpu, kiln_dot(C, A, B, 1.0, 0.0,
                                           &((kiln_gemm_args){.trans_b = tb, .bias = bias, .stats = st[sd]})));
                    double *v = read_f64(st[sd]);
                    got[way][sd][rep][0] = v[0];
                    got[way][sd][rep][1] = v[1];
                    free(v);
                }
        }
        unsetenv("KILN_GEMM_STATS");
        /* C as it came out (the same bits every call: the kernels are deterministic) */
        double *hc = read_f64(C), mag = 0.0, bad = 0.0;
        for (int64_t i = 0; i < nb * M * N; i++) {
            if (isfinite(hc[i]))
                mag = fabs(hc[i]) > mag ? fabs(hc[i]) : mag;
            else
                bad += 1.0;
        }
        int wrong = 0;
        for (int way = 0; way < 2; way++)
            for (int sd = 0; sd < 2; sd++)
                for (int rep = 0; rep < 2; rep++) {
                    const double *g = got[way][sd][rep];
                    const double want_mag = sd ? mag : (double)(float)mag;
                    if (g[0] != want_mag || g[1] != bad) {
                        if (wrong < 4)
                            fprintf(stderr, "  stats %s %s %s (%s, %s call): got [%.9g, %.9g] want [%.9g, %.9g]\n",
                                    cases[ci].engine, kiln_dtype_name(dt), way ? "pass" : "fused", sd ? "f64" : "f32",
                                    rep ? "second" : "first", g[0], g[1], want_mag, bad);
                        wrong++;
                    }
                }
        CHECK_INT(wrong, 0);
        if (cases[ci].bias_odd) CHECK(bad >= (double)(nb * M)); /* the inf and NaN columns at least */
        free(hc);
        free(ha);
        free(hb);
        free(hbias);
        kiln_tensor *made[] = {A, B, bias, C, st[0], st[1]};
        for (int i = 0; i < 6; i++) kiln_tensor_release(made[i]);
    }
    CHECK_OK(gpu, kiln_ctx_set_allow_tf32(gpu, 0));
    /* a bad KILN_GEMM_STATS: an error naming it, where an own kernel takes the GEMM */
    {
        const int64_t sh[2] = {64, 64}, two = 2;
        kiln_tensor *a = NULL, *c = NULL, *s2 = NULL;
        CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F16, 2, sh, 0.5, &a));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F16, 2, sh, &c));
        CHECK_OK(gpu, kiln_tensor_empty(gpu, KILN_DTYPE_F32, 1, &two, &s2));
        setenv("KILN_GEMM", "own", 1);
        setenv("KILN_GEMM_STATS", "both", 1);
        CHECK_FAILS(gpu, kiln_dot(c, a, a, 1.0, 0.0, &((kiln_gemm_args){.stats = s2})), KILN_ERR_ARG,
                    "KILN_GEMM_STATS='both'");
        unsetenv("KILN_GEMM_STATS");
        CHECK_OK(gpu, kiln_dot(c, a, a, 1.0, 0.0, &((kiln_gemm_args){.stats = s2})));
        double *v = read_f64(s2);
        CHECK(v[0] == 16.0 && v[1] == 0.0); /* 64 x 0.25 */
        free(v);
        /* auto with stats (KILN_GEMM_STATS unset: fused): kiln's own kernel, whatever auto's
         * choice without them; with =pass, auto's own choice; the same values either way */
        setenv("KILN_GEMM", "auto", 1);
        for (int way = 0; way < 2; way++) {
            if (way) setenv("KILN_GEMM_STATS", "pass", 1);
            kiln_cuda_stats s0, s1;
            CHECK_OK(gpu, kiln_assign(s2, kiln_scalar(NAN)));
            CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s0));
            CHECK_OK(gpu, kiln_dot(c, a, a, 1.0, 0.0, &((kiln_gemm_args){.stats = s2})));
            CHECK_OK(gpu, kiln__cuda_cache_stats(gpu, &s1));
            const char *desc = kiln_ctx_device_description(gpu);
            if (!way && (strstr(desc, "sm_8") || strstr(desc, "sm_9") || strstr(desc, "sm_1")))
                CHECK_INT(s1.gemm_own - s0.gemm_own, 1); /* an own kernel applies from sm_80 */
            v = read_f64(s2);
            CHECK(v[0] == 16.0 && v[1] == 0.0);
            free(v);
        }
        unsetenv("KILN_GEMM_STATS");
        kiln_tensor_release(a);
        kiln_tensor_release(c);
        kiln_tensor_release(s2);
    }
    unsetenv("KILN_GEMM");
}

/* ---- kernel cache ----------------------------------------------------------------------------- */

static kiln_expr *b_var(kiln_tensor *const *in, const void *p)
{
    (void)p;
    return kiln_mean(kiln_sqr(kiln_sub(kiln_t(in[0]), kiln_mean(kiln_t(in[0]), 1))), 1);
}

static void run_var(kiln_ctx *g, int64_t rows, int64_t cols, double *out_first)
{
    int64_t shape[2] = {rows, cols};
    int64_t n = rows * cols;
    double *h = malloc((size_t)n * sizeof(double));
    for (int64_t i = 0; i < n; i++) h[i] = (double)((i * 7919) % 101) * 0.01;
    kiln_tensor *x = from_f64(g, KILN_DTYPE_F32, 2, shape, h);
    free(h);
    kiln_tensor *y = NULL;
    CHECK_OK(g, kiln_eval(g, b_var(&x, NULL), KILN_DTYPE_F32, &y));
    if (y) {
        double *v = read_f64(y);
        *out_first = v[0];
        free(v);
    }
    kiln_tensor_release(y);
    kiln_tensor_release(x);
}

static void test_cache(void)
{
    if (!kiln__cuda_cache_stats) return;
    char dir[] = "/tmp/kiln-cache-test-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("KILN_CACHE_DIR", dir, 1);
    kiln_ctx *g1 = make_ctx(KILN_DEVICE_CUDA, 1);
    CHECK(g1 != NULL);
    if (!g1) return;
    CHECK(strcmp(kiln__cuda_cache_dir(g1), dir) == 0);
    kiln_cuda_stats s0, s1;
    double ref = 0, v = -1;
    run_var(g1, 37, 129, &ref);
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s0));
    CHECK(s0.compiles >= 1);
    CHECK(s0.disk_writes >= 1);
    /* new shape of the same structure: no new compile (rows of 131 odd f32 values, as 129: shifted
     * 16-byte vectors, 34 or 33 a row, a 16-lane segment a row; 77 or 255 would take an 8- or 32-lane
     * segment, another kernel) */
    run_var(g1, 201, 131, &v);
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s1));
    CHECK_INT(s1.compiles, s0.compiles);
    CHECK(s1.mem_hits > s0.mem_hits);
    /* fresh context: every kernel from disk */
    kiln_ctx *g2 = make_ctx(KILN_DEVICE_CUDA, 1);
    run_var(g2, 37, 129, &v);
    CHECK_OK(g2, kiln__cuda_cache_stats(g2, &s1));
    CHECK_INT(s1.compiles, 0);
    CHECK(s1.disk_hits >= 1);
    CHECK_NEAR(v, ref, 1e-6);
    kiln_ctx_destroy(g2);
    /* corrupt every entry (truncate one, flip bytes in the others): ignored and rebuilt */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && for f in *.kbin; do sz=$(stat -c %%s \"$f\"); "
             "printf 'garbage' | dd of=\"$f\" bs=1 seek=$((sz/2)) conv=notrunc status=none; done; "
             "f=$(ls *.kbin | head -1); truncate -s 100 \"$f\"",
             dir);
    CHECK_INT(system(cmd), 0);
    kiln_ctx *g3 = make_ctx(KILN_DEVICE_CUDA, 1);
    v = -1;
    run_var(g3, 37, 129, &v);
    CHECK_OK(g3, kiln__cuda_cache_stats(g3, &s1));
    CHECK(s1.disk_rejects >= 1);
    CHECK(s1.compiles >= 1);
    CHECK_NEAR(v, ref, 1e-6);
    /* and rewritten: a fourth context hits the disk again */
    kiln_ctx *g4 = make_ctx(KILN_DEVICE_CUDA, 1);
    run_var(g4, 37, 129, &v);
    CHECK_OK(g4, kiln__cuda_cache_stats(g4, &s1));
    CHECK_INT(s1.compiles, 0);
    CHECK_INT(s1.disk_rejects, 0);
    kiln_ctx_destroy(g3);
    kiln_ctx_destroy(g4);
    /* batch-norm with another eps: no recompile */
    int64_t shape[2] = {9, 300};
    double h[2700];
    check_fill(&rng, h, 2700, -1, 1);
    kiln_tensor *A = from_f64(g1, KILN_DTYPE_F32, 2, shape, h);
    CHECK_OK(g1, batchnorm(A, 1e-5, 1));
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s0));
    CHECK_OK(g1, batchnorm(A, 1e-3, 1));
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s1));
    CHECK_INT(s1.compiles, s0.compiles);
    kiln_tensor_release(A);
    /* memory cache dropped: next use from disk */
    CHECK_OK(g1, kiln__cuda_cache_drop_memory(g1));
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s0));
    run_var(g1, 37, 129, &v);
    CHECK_OK(g1, kiln__cuda_cache_stats(g1, &s1));
    CHECK_INT(s1.compiles, s0.compiles);
    CHECK(s1.disk_hits > s0.disk_hits);
    /* an NVRTC failure: status COMPILE, the log and the source in the message */
    CHECK_FAILS(g1, kiln__cuda_compile_source(g1, "extern \"C\" __global__ void k() { this is not C; }", "k"),
                KILN_ERR_COMPILE, "this is not C");
    CHECK(strstr(kiln_last_error(g1), "--- log ---") != NULL);
    CHECK(strstr(kiln_last_error(g1), "error") != NULL);
    kiln_ctx_destroy(g1);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
    unsetenv("KILN_CACHE_DIR");
}

/* ---- memory ------------------------------------------------------------------------------------- */

static void test_memory(void)
{
    kiln_ctx *g = make_ctx(KILN_DEVICE_CUDA, 0);
    CHECK(g != NULL);
    if (!g) return;
    kiln_mem_stats ms;
    CHECK_OK(g, kiln_mem_set_limit(g, 1 << 20));
    kiln_tensor *a = NULL, *b = NULL;
    int64_t small = 1000, big = 1 << 20;
    CHECK_OK(g, kiln_tensor_empty(g, KILN_DTYPE_F32, 1, &small, &a));
    CHECK_FAILS(g, kiln_tensor_empty(g, KILN_DTYPE_F32, 1, &big, &b), KILN_ERR_OOM, "limit");
    CHECK(b == NULL);
    CHECK_OK(g, kiln_mem_get_stats(g, &ms));
    CHECK(ms.in_use >= 4000 && ms.in_use < (1 << 20));
    kiln_tensor_release(a);
    CHECK_OK(g, kiln_mem_release_cached(g));
    CHECK_OK(g, kiln_mem_get_stats(g, &ms));
    CHECK_INT(ms.in_use, 0);
    CHECK_INT(ms.cached, 0);
    /* more than the device has: a clean OOM, not a crash */
    CHECK_OK(g, kiln_mem_set_limit(g, 0));
    int64_t huge[2] = {1 << 20, 1 << 20}; /* 4 TiB of f32 */
    CHECK_FAILS(g, kiln_tensor_empty(g, KILN_DTYPE_F32, 2, huge, &b), KILN_ERR_OOM, "");
    kiln_ctx_destroy(g);
}

/* ---- wrapped device memory ---------------------------------------------------------------------- */

static void count_release(void *user)
{
    ++*(int *)user;
}

static void test_wrap(void)
{
    CHECK(kiln_ctx_stream(gpu) != NULL);
    enum { M = 33, K = 20, N = 47 };
    double *ha = malloc(M * K * sizeof *ha), *hb = malloc(K * N * sizeof *hb);
    check_fill(&rng, ha, M * K, -1, 1);
    check_fill(&rng, hb, K * N, -1, 1);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    kiln_tensor *a = from_f64(gpu, KILN_DTYPE_F32, 2, sa, ha), *b = from_f64(gpu, KILN_DTYPE_F32, 2, sb, hb);
    kiln_tensor *c = NULL, *wa = NULL, *wc = NULL;
    CHECK_OK(gpu, kiln_tensor_full(gpu, KILN_DTYPE_F32, 2, sc, 5.0, &c));
    int ra = 0, rc = 0;
    /* a seen as A^T (K, M) through strides (1, K) on the device pointer */
    int64_t at_shape[2] = {K, M}, at_str[2] = {1, K};
    CHECK_OK(gpu,
             kiln_tensor_wrap(gpu, kiln_tensor_data(a), KILN_DTYPE_F32, 2, at_shape, at_str, count_release, &ra, &wa));
    CHECK_OK(gpu, kiln_tensor_wrap(gpu, kiln_tensor_data(c), KILN_DTYPE_F32, 2, sc, NULL, count_release, &rc, &wc));
    kiln_mem_stats s0, s1;
    CHECK_OK(gpu, kiln_mem_get_stats(gpu, &s0));
    /* C = (A^T)^T @ B through the wraps, on the GPU */
    kiln_gemm_args ga = {.trans_a = 1};
    CHECK_OK(gpu, kiln_dot(wc, wa, b, 1, 0, &ga));
    double *got = read_f64(c);
    double err = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += ha[i * K + k] * hb[k * N + j];
            double e = fabs(got[i * N + j] - s);
            if (!(e <= err)) err = isnan(e) ? INFINITY : e; /* a NaN fails */
        }
    CHECK(err < 1e-3);
    free(got);
    /* an expression writing through a reversed wrap of c, reading c itself */
    kiln_slice rev[2] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1), KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1)};
    kiln_tensor *wr = NULL;
    CHECK_OK(gpu, kiln_tensor_slice(wc, 2, rev, &wr));
    double *before = read_f64(c);
    CHECK_OK(gpu, kiln_assign(wr, kiln_add(kiln_t(c), kiln_scalar(1))));
    double *after = read_f64(c);
    int ok = 1;
    /* c + 1 is rounded to f32 like the kernel's sum */
    for (int i = 0; i < M * N; i++) ok &= after[i] == (double)(float)(before[M * N - 1 - i] + 1);
    CHECK(ok);
    free(before);
    free(after);
    CHECK_OK(gpu, kiln_mem_get_stats(gpu, &s1));
    CHECK_INT(s1.live_blocks, s0.live_blocks); /* the wraps count nothing */
    kiln_tensor_release(wr);
    kiln_tensor_release(wa);
    kiln_tensor_release(wc);
    CHECK_INT(ra, 1);
    CHECK_INT(rc, 1);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
    kiln_tensor_release(c);
    free(ha);
    free(hb);
}

/* ---- CUDA graphs of GEMM calls (kiln-bench --graph) ------------------------------------------- */

typedef struct graph_call {
    kiln_tensor *c, *a, *b;
} graph_call;

static kiln_status graph_dot(void *arg)
{
    graph_call *g = arg;
    return kiln_dot(g->c, g->a, g->b, 1.0, 1.0, NULL);
}

/* Four calls of C += A B captured for each engine: the capture runs nothing (C unchanged),
 * each timed launch adds 4 A B (integers, exact in f16 and f32); a call that fails during the
 * capture gives its own error, and the stream works afterwards. Two products: a small f16 one,
 * and an f32 one of one tile row and a deep K, which kiln's FFMA kernel splits over k and sums
 * in slices (a cooperative launch: given its words through `extra`, the driver refused it in a
 * capture with CUDA_ERROR_INVALID_VALUE, H200, 2026-12-05) */
static void test_graph_case(kiln_dtype dt, int64_t M, int64_t N, int64_t K)
{
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    double *ha = malloc((size_t)(M * K) * sizeof(double)), *hb = malloc((size_t)(K * N) * sizeof(double));
    double *hc = malloc((size_t)(M * N) * sizeof(double)), *ab = calloc((size_t)(M * N), sizeof(double));
    for (int64_t i = 0; i < M * K; i++) ha[i] = (double)((int)(check_rand_u64(&rng) % 3) - 1);
    for (int64_t i = 0; i < K * N; i++) hb[i] = (double)((int)(check_rand_u64(&rng) % 3) - 1);
    for (int64_t i = 0; i < M * N; i++) hc[i] = (double)((int)(check_rand_u64(&rng) % 64) - 32);
    for (int64_t i = 0; i < M; i++)
        for (int64_t k = 0; k < K; k++)
            if (ha[i * K + k] != 0.0)
                for (int64_t j = 0; j < N; j++) ab[i * N + j] += ha[i * K + k] * hb[k * N + j];
    static const char *const engines[] = {"own", "vendor"};
    for (int e = 0; e < 2; e++) {
        setenv("KILN_GEMM", engines[e], 1);
        graph_call g = {from_f64(gpu, dt, 2, sc, hc), from_f64(gpu, dt, 2, sa, ha), from_f64(gpu, dt, 2, sb, hb)};
        CHECK_OK(gpu, graph_dot(&g)); /* warm: kernels built, plans cached; C = C0 + A B */
        void *graph = NULL;
        CHECK_OK(gpu, kiln__cuda_graph_capture(gpu, graph_dot, &g, 4, &graph));
        double *c1 = read_f64(g.c);
        double ms = -1.0;
        if (graph) CHECK_OK(gpu, kiln__cuda_graph_time(gpu, graph, &ms));
        CHECK(ms > 0.0);
        double *c2 = read_f64(g.c);
        int bad1 = 0, bad2 = 0;
        for (int64_t i = 0; i < M * N; i++) {
            bad1 += c1[i] != hc[i] + ab[i];
            bad2 += c2[i] != hc[i] + 5.0 * ab[i];
        }
        if (bad1 || bad2)
            fprintf(stderr, "  graph (%s, %s %" PRId64 "x%" PRId64 "x%" PRId64 "): %d entries changed by the capture, "
                            "%d wrong after the launch\n",
                    engines[e], kiln_dtype_name(dt), M, N, K, bad1, bad2);
        CHECK(bad1 == 0 && bad2 == 0);
        free(c1);
        free(c2);
        kiln__cuda_graph_free(graph);
        /* a failing call inside the capture: its error, then the stream as before */
        graph_call bad = {g.c, g.a, g.a}; /* (M, K) @ (M, K): K != M */
        graph = NULL;
        CHECK_FAILS(gpu, kiln__cuda_graph_capture(gpu, graph_dot, &bad, 2, &graph), KILN_ERR_SHAPE, "kiln_dot");
        CHECK(graph == NULL);
        CHECK_OK(gpu, graph_dot(&g));
        CHECK_OK(gpu, kiln_ctx_synchronize(gpu));
        CHECK_FAILS(gpu, kiln__cuda_graph_capture(gpu, graph_dot, &g, 0, &graph), KILN_ERR_ARG, "argument 'calls'");
        kiln_tensor_release(g.a);
        kiln_tensor_release(g.b);
        kiln_tensor_release(g.c);
    }
    unsetenv("KILN_GEMM");
    free(ha);
    free(hb);
    free(hc);
    free(ab);
}

static void test_graph(void)
{
    test_graph_case(KILN_DTYPE_F16, 130, 72, 64);
    test_graph_case(KILN_DTYPE_F32, 128, 256, 4096);
}

int main(void)
{
    struct {
        const char *name;
        void (*fn)(void);
    } sections[] = {{"copies", test_copies},       {"elementwise", test_elementwise},
                    {"chains", test_chains},       {"reductions", test_reductions},
                    {"batchnorm", test_batchnorm}, {"split", test_split},
                    {"lanes", test_lanes},         {"welford", test_welford},
                    {"seg", test_seg},             {"keep", test_keep},             {"rdiv", test_rdiv},
                    {"shift", test_shift},
                    {"rowsmem", test_rowcache},
                    {"rng", test_rng_bits},
                    {"gemm", test_gemm},           {"random", test_gemm_random}, {"stats", test_gemm_stats},
                    {"fastdram", gemm_fast_dram},
                    {"pdl", gemm_chain_pdl},
                    {"cache", test_cache},
                    {"memory", test_memory},       {"wrap", test_wrap},
                    {"graph", test_graph}};
    const size_t nsections = sizeof sections / sizeof sections[0];
    /* KILN_CUDA_TEST=name,name,... runs only those sections (e.g. under racecheck, or one
     * process a section under memcheck: tools/test-gpu.sh); =list prints their names, one a
     * line, without a GPU; a name that is no section is an error naming it */
    const char *only = getenv("KILN_CUDA_TEST");
    if (only && !*only) only = NULL; /* set and empty: every section */
    if (only && strcmp(only, "list") == 0) {
        for (size_t i = 0; i < nsections; i++) printf("%s\n", sections[i].name);
        return 0;
    }
    char run[sizeof sections / sizeof sections[0]]; /* the sections to run: every one, or those named */
    memset(run, only == NULL, sizeof run);
    for (const char *p = only; p;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        size_t i = 0;
        while (i < nsections && !(len == strlen(sections[i].name) && strncmp(p, sections[i].name, len) == 0)) i++;
        if (i == nsections) {
            fprintf(stderr, "test_cuda_backend: KILN_CUDA_TEST names no section '%.*s' (KILN_CUDA_TEST=list lists them)\n",
                    (int)len, p);
            return 2;
        }
        run[i] = 1;
        p = comma ? comma + 1 : NULL;
    }
    rng = check_seed();
    gpu = make_ctx(KILN_DEVICE_CUDA, 42);
    if (!gpu) {
        printf("no CUDA device (%s): skipped\n", kiln_last_error(NULL));
        return CHECK_SKIP;
    }
    cpu = make_ctx(KILN_DEVICE_CPU, 42);
    printf("%s\n", kiln_ctx_device_description(gpu));
    for (size_t i = 0; i < nsections; i++) {
        if (!run[i]) continue;
        printf("section %s\n", sections[i].name);
        fflush(stdout);
        sections[i].fn();
    }
    kiln_ctx_destroy(cpu);
    kiln_ctx_destroy(gpu);
    return check_finish();
}
