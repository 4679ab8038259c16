/*
 * tests/test_codegen_nvrtc.c — the expression engine's kernels (src/cuda/codegen.c) through
 * NVRTC, on a machine with the CUDA toolkit and no GPU.
 *
 * Plans are built on a CPU context (kiln__plan_build) for element-wise, row, column,
 * multi-pass, arg, broadcast-back and stochastically rounded expressions over several
 * dtypes. Each kernel's source is generated as the CUDA backend generates it, in its plain
 * form and in its split form (a reduction's rows cut across the grid's y, partials through
 * a workspace, the grid barrier), and compiled for sm_90a with the backend's options. What
 * only NVRTC would reject then shows here rather than on a GPU visit. The split form must
 * carry the barrier exactly where the kernel reduces, and never elsewhere.
 * Skips where the library has no CUDA backend, no NVRTC library loads, or under a sanitizer.
 * KILN_TEST_DUMP=text prints the sources whose case name contains text.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda/cuda_hooks.h"
#include "expr/plan.h"

#include "nvrtc_compile.h"

#pragma weak kiln__cuda_kernel_source
#pragma weak kiln__cuda_row_cache_block
#pragma weak kiln__cuda_launch_choice

static uint64_t rng;

static kiln_tensor *random_tensor(kiln_ctx *ctx, kiln_dtype dt, int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double *h = malloc((size_t)n * sizeof *h);
    check_fill(&rng, h, n, -2, 3);
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, nd, shape, h, KILN_DTYPE_F64, &t));
    free(h);
    return t;
}

typedef struct codegen_case {
    const char *what;
    kiln_dtype in_dt, out_dt;
    int nd;
    int64_t shape[3];
    int kind; /* which expression: see build() */
    kiln_round round;
} codegen_case;

/* The expression of case kind over x (not consumed), and the shape of its result. */
static kiln_expr *build(int kind, kiln_tensor *x, int nd, const int64_t *shape, int *ond, int64_t *oshape)
{
    int axis1[1] = {1}, axis0[1] = {0};
    *ond = nd;
    memcpy(oshape, shape, (size_t)nd * sizeof *oshape);
    switch (kind) {
    case 0: /* element-wise */
        return kiln_mul(kiln_exp(kiln_t(x)), kiln_t(x));
    case 1: /* everything to one value */
        *ond = 0;
        return kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 0, NULL, 0);
    case 2: /* rows, max */
        *ond = 1;
        return kiln_reduce(KILN_REDUCE_MAX, kiln_t(x), 1, axis1, 0);
    case 3: /* rows, argmax */
        *ond = 1;
        return kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(x), 1, axis1, 0);
    case 4: /* columns, variance (two passes) */
        *ond = 1;
        oshape[0] = shape[1];
        return kiln_reduce(KILN_REDUCE_VAR, kiln_t(x), 1, axis0, 0);
    case 5: /* a row reduction broadcast back: x - max(x) */
        return kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1));
    case 6: /* batch norm over columns (two passes, broadcast back) */
        return kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(x), 0), kiln_scalar(1e-5))),
                        kiln_sub(kiln_t(x), kiln_mean(kiln_t(x), 0)));
    case 7: /* columns, argmin */
        *ond = 1;
        oshape[0] = shape[1];
        return kiln_reduce(KILN_REDUCE_ARGMIN, kiln_t(x), 1, axis0, 0);
    case 10: /* a column sum broadcast back down the columns: the output a row value */
        return kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 1, axis0, 1);
    case 11: /* the sum of a column's row value: a reduction of a row value */
        *ond = 1;
        oshape[0] = shape[1];
        return kiln_reduce(KILN_REDUCE_SUM, kiln_add(kiln_mul(kiln_t(x), kiln_scalar(0)), kiln_max(kiln_t(x), 0)), 1, axis0, 0);
    case 12: /* rows, variance (two passes, the row cached) */
        *ond = 1;
        return kiln_reduce(KILN_REDUCE_VAR, kiln_t(x), 1, axis1, 0);
    case 13: /* element-wise, every library function of the math set (f32: their f-suffixed names) */
        return kiln_add(kiln_add(kiln_mul(kiln_log1p(kiln_abs(kiln_t(x))), kiln_expm1(kiln_t(x))),
                                 kiln_mul(kiln_sin(kiln_t(x)), kiln_add(kiln_cos(kiln_t(x)), kiln_erf(kiln_t(x))))),
                        kiln_add(kiln_add(kiln_floor(kiln_t(x)), kiln_ceil(kiln_t(x))),
                                 kiln_add(kiln_rint(kiln_t(x)), kiln_fmod(kiln_trunc(kiln_t(x)), kiln_scalar(0.7)))));
    case 14: /* rows, product */
        *ond = 1;
        return kiln_reduce(KILN_REDUCE_PROD, kiln_t(x), 1, axis1, 0);
    case 15: /* columns, product */
        *ond = 1;
        oshape[0] = shape[1];
        return kiln_reduce(KILN_REDUCE_PROD, kiln_t(x), 1, axis0, 0);
    case 16: { /* batch norm over columns of the sum of x's two halves (rows): two full-size inputs */
        kiln_slice top[1] = {KILN_SLICE(0, shape[0] / 2)}, bottom[1] = {KILN_SLICE(shape[0] / 2, shape[0])};
        kiln_tensor *a = NULL, *b = NULL;
        CHECK_INT(kiln_tensor_slice(x, 1, top, &a), KILN_OK);
        CHECK_INT(kiln_tensor_slice(x, 1, bottom, &b), KILN_OK);
        oshape[0] = shape[0] / 2;
        kiln_expr *e = kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_add(kiln_t(a), kiln_t(b)), 0), kiln_scalar(1e-5))),
                                kiln_sub(kiln_add(kiln_t(a), kiln_t(b)), kiln_mean(kiln_add(kiln_t(a), kiln_t(b)), 0)));
        kiln_tensor_release(a);
        kiln_tensor_release(b);
        return e;
    }
    case 9: /* columns, sum */
        *ond = 1;
        oshape[0] = shape[1];
        return kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 1, axis0, 0);
    default: /* softmax over rows: three reductions, two passes */
        return kiln_div(kiln_exp(kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1))),
                        kiln_sum(kiln_exp(kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1))), 1));
    }
}

/* Setting var to bad makes the source of build(kind)'s first kernel over a rows x cols input
 * of dtype dt a KILN_ERR_ARG naming var (then var is unset). */
static void bad_knob(kiln_ctx *ctx, const char *var, const char *bad, kiln_dtype dt, int64_t rows, int64_t cols,
                     int kind)
{
    setenv(var, bad, 1);
    int64_t shape[2] = {rows, cols}, oshape[3];
    int ond;
    kiln_tensor *x = random_tensor(ctx, dt, 2, shape);
    kiln_expr *e = build(kind, x, 2, shape, &ond, oshape);
    kiln_tensor *dst = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, dt, ond, oshape, &dst));
    kiln_plan *p = NULL;
    CHECK_OK(ctx, kiln__plan_build(dst, e, KILN_ROUND_DEFAULT, &p));
    char *src = NULL;
    CHECK(p && p->nkernels > 0);
    if (p && p->nkernels > 0) CHECK_FAILS(ctx, kiln__cuda_kernel_source(ctx, &p->kernels[0], 0, &src), KILN_ERR_ARG, var);
    free(src);
    kiln__plan_free(p);
    kiln_expr_release(e);
    kiln_tensor_release(dst);
    kiln_tensor_release(x);
    unsetenv(var);
}

/* The row cache's block (codegen.c row_cache) on an H100's shared memory (227 KB a block opted
 * in, 228 KB an SM): the picks bench/NOTES.md steps 67-69 measured best, by =tile and the rule. */
static void test_row_cache_block(void)
{
    const int optin = 232448, sm = 233472;
    const struct {
        const char *what;
        int64_t need, cache;
        int smem_thread, t[2], b[2]; /* KILN_REDUCE_SMEM=tile, then the rule (unset); t 0: not taken */
    } cases[] = {
        {"f16 softmax 50257, shifted", 1571, 100528, 16, {1024, 512}, {1, 2}},
        {"1000 workers (f16 softmax 32000 doubled: fits 1024 threads)", 1000, 64000, 16, {0, 512}, {0, 3}},
        {"f16 variance 32000 (24 bytes a warp)", 1000, 64000, 24, {0, 512}, {0, 3}},
        {"f32 softmax 50257, shifted", 3142, 201040, 16, {1024, 1024}, {1, 1}},
        {"f64 variance 20000", 1250, 160000, 24, {1024, 1024}, {1, 1}},
        /* longer than the cache: not here (row_cache caches the row's first part) */
        {"f32 softmax 100003: too long", 6251, 400016, 16, {0, 0}, {0, 0}},
        {"f16 softmax 16384: 512 workers", 512, 32768, 16, {0, 0}, {0, 0}},
        {"f16 softmax 20000 (fits, 40 KB; 40 registers: 3)", 625, 40000, 16, {0, 512}, {0, 3}},
        /* a slot a warp, not a thread: 1024 threads take 512 bytes, not 16 KB (227 KB - 512 fits) */
        {"f32 softmax 57000 (226.5 KB)", 3563, 231936, 16, {1024, 1024}, {1, 1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int rule = 0; rule < 2; rule++) {
            int t = -1, b = -1;
            int taken = kiln__cuda_row_cache_block(rule, cases[c].need, cases[c].cache, cases[c].smem_thread, optin, sm,
                                                   &t, &b);
            if (taken != (cases[c].t[rule] != 0) || t != cases[c].t[rule] || b != cases[c].b[rule])
                fprintf(stderr, "  row cache block, %s, rule %d: taken %d, %d x %d, want %d x %d\n", cases[c].what,
                        rule, taken, t, b, cases[c].t[rule], cases[c].b[rule]);
            CHECK_INT(taken, cases[c].t[rule] != 0);
            CHECK_INT(t, cases[c].t[rule]);
            CHECK_INT(b, cases[c].b[rule]);
        }
}

/* The launch choices of whole kernels (codegen.c run_kernel, kiln__cuda_launch_choice) on an
 * H100's size (132 SMs, 227 KB of shared memory a block opted in, 228 KB an SM): the counts
 * test_cuda_backend takes on the GPU (its rowcache, split, few-rows, lanes and seg cases), so that a
 * rule change that moves one of them fails here first (v73a moved f16 100 x 32000 softmax onto
 * the row cache, and only a GPU visit saw it: bench/NOTES.md step 74). Each case: the expression
 * (build's kind) over an uninitialised rows x cols input (a plan needs no values), the knobs,
 * and what the first kernel takes; -1: not checked. Bad arguments name themselves. */
/* The plan of build(kind) over an uninitialised rows x cols tensor of dt (*x) into *dst of odt;
 * the caller frees the plan and releases both tensors. */
static kiln_plan *empty_plan(kiln_ctx *ctx, kiln_dtype dt, const int64_t *shape, int kind, kiln_dtype odt,
                             kiln_tensor **x, kiln_tensor **dst)
{
    *x = *dst = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, dt, 2, shape, x));
    int ond;
    int64_t oshape[3];
    kiln_expr *e = build(kind, *x, 2, shape, &ond, oshape);
    CHECK_OK(ctx, kiln_tensor_empty(ctx, odt, ond, oshape, dst));
    kiln_plan *p = NULL;
    CHECK_OK(ctx, kiln__plan_build(*dst, e, KILN_ROUND_DEFAULT, &p));
    kiln_expr_release(e);
    CHECK(p && p->nkernels > 0);
    if (p && p->nkernels > 0) return p;
    kiln__plan_free(p);
    return NULL;
}

static void test_launch_choices(kiln_ctx *ctx)
{
    const int sms = 132, optin = 232448, sm = 233472, l2 = 50 << 20;
    const struct {
        const char *what;
        kiln_dtype dt;
        int64_t shape[2];
        int kind;
        const char *smem, *rowfill; /* KILN_REDUCE_SMEM, KILN_REDUCE_ROWFILL (NULL: unset) */
        int split, row_cache, kmax, lanes, seg; /* row_cache: taken (1 or 2) or not */
        const char *passes; /* KILN_VAR_PASSES (NULL: 2, as test_cuda_backend's rowcache cases) */
    } cases[] = {
        /* test_cuda_backend rowcache: =tile, then the rule */
        {"f16 100 x 32000 softmax, tile", KILN_DTYPE_F16, {100, 32000}, 99, "tile", NULL, 0, 1, 2, 0, 0, NULL},
        {"f16 100 x 32000 softmax, rule", KILN_DTYPE_F16, {100, 32000}, 99, NULL, NULL, 0, 1, 2, 0, 0, NULL},
        {"f16 100 x 32000 variance, tile", KILN_DTYPE_F16, {100, 32000}, 12, "tile", NULL, 0, 0, 4, 0, 0, NULL},
        {"f16 100 x 32000 variance, rule", KILN_DTYPE_F16, {100, 32000}, 12, NULL, NULL, 0, 1, -1, 0, 0, NULL},
        {"f16 100 x 32000 x - max(x), tile", KILN_DTYPE_F16, {100, 32000}, 5, "tile", NULL, 0, 1, -1, 0, 0, NULL},
        {"f32 100 x 20000 softmax, tile", KILN_DTYPE_F32, {100, 20000}, 99, "tile", NULL, 0, 1, -1, 0, 0, NULL},
        {"f32 140 x 100003 softmax, tile: too long", KILN_DTYPE_F32, {140, 100003}, 99, "tile", NULL, 0, 0, -1, 0, 0, NULL},
        {"f32 140 x 100003 softmax, rule: its first part", KILN_DTYPE_F32, {140, 100003}, 99, NULL, NULL, 0, 1, -1, 0, 0, NULL},
        {"f16 4 x 50257 softmax: split", KILN_DTYPE_F16, {4, 50257}, 99, NULL, NULL, 1, 0, -1, 0, 0, NULL},
        /* test_cuda_backend split, few rows: the doubled walk in one tile where the undoubled splits
         * (v74a), then cached, which undoes the doubling (cached_kmax); ROWFILL=1 would keep it */
        {"f16 8 x 32000 softmax", KILN_DTYPE_F16, {8, 32000}, 99, NULL, NULL, 0, 1, 2, 0, 0, NULL},
        {"f16 8 x 32000 softmax, rowfill 0", KILN_DTYPE_F16, {8, 32000}, 99, NULL, "0", 1, 0, 2, 0, 0, NULL},
        {"f16 8 x 32000 softmax, rowfill 1: cached doubled", KILN_DTYPE_F16, {8, 32000}, 99, NULL, "1", 0, 1, 4, 0, 0, NULL},
        {"bf16 16 x 20000 softmax", KILN_DTYPE_BF16, {16, 20000}, 99, NULL, NULL, 0, 1, 2, 0, 0, NULL},
        {"bf16 16 x 20000 softmax, rowfill 0", KILN_DTYPE_BF16, {16, 20000}, 99, NULL, "0", 1, 0, 2, 0, 0, NULL},
        {"f16 2 x 65536 softmax: split either way", KILN_DTYPE_F16, {2, 65536}, 99, NULL, NULL, 1, 0, 2, 0, 0, NULL},
        /* v73a on many rows: doubled up to 256 workers (8192 values), undoubled past them */
        {"f16 300 x 8192 softmax", KILN_DTYPE_F16, {300, 8192}, 99, NULL, NULL, 0, 0, 4, 0, 0, NULL},
        {"f16 300 x 10000 softmax", KILN_DTYPE_F16, {300, 10000}, 99, NULL, NULL, 0, -1, 2, 0, 0, NULL},
        {"bf16 300 x 16384 softmax", KILN_DTYPE_BF16, {300, 16384}, 99, NULL, NULL, 0, -1, 2, 0, 0, NULL},
        {"f16 8 x 10000 softmax: one tile either way", KILN_DTYPE_F16, {8, 10000}, 99, NULL, NULL, 0, 1, 2, 0, 0, NULL},
        /* test_cuda_backend lanes: the device rule (lanes_pay) takes or declines them */
        {"column sum f16 40000 x 1024: 128 lane columns", KILN_DTYPE_F16, {40000, 1024}, 9, NULL, NULL, -1, 0, -1, 0, 0, NULL},
        {"column sum f32 20000 x 4096: lanes", KILN_DTYPE_F32, {20000, 4096}, 9, NULL, NULL, -1, 0, -1, 1, 0, NULL},
        {"column sum f16 64 x 8192, wide: lanes", KILN_DTYPE_F16, {64, 8192}, 9, NULL, NULL, -1, 0, -1, 1, 0, NULL},
        {"column sum f16 300 x 64: few columns, none", KILN_DTYPE_F16, {300, 64}, 9, NULL, NULL, -1, 0, -1, 0, 0, NULL},
        {"batch norm f16 4096 x 64: 8 lane columns, none", KILN_DTYPE_F16, {4096, 64}, 6, NULL, NULL, -1, 0, -1, 0, 0, NULL},
        {"batch norm f16 60000 x 256: lanes", KILN_DTYPE_F16, {60000, 256}, 6, NULL, NULL, -1, 0, -1, 1, 0, NULL},
        {"batch norm f16 8 x 8192, wide: lanes", KILN_DTYPE_F16, {8, 8192}, 6, NULL, NULL, -1, 0, -1, 1, 0, NULL},
        /* test_cuda_backend seg: rows of 32 workers or fewer on a segment of a warp, never split */
        {"f16 4096 x 32 softmax: a segment", KILN_DTYPE_F16, {4096, 32}, 99, NULL, NULL, 0, 0, -1, 0, 1, NULL},
        {"f32 3 x 100 x - max(x): a segment", KILN_DTYPE_F32, {3, 100}, 5, NULL, NULL, 0, 0, -1, 0, 1, NULL},
        {"f32 300 x 2000 softmax: a block", KILN_DTYPE_F32, {300, 2000}, 99, NULL, NULL, 0, 0, -1, 0, 0, NULL},
        /* test_cuda_backend lanes: a one-pass variance down the columns takes lanes at any count of
         * lane columns from 16-bit inputs and below 32 from f32 (its lanes share one count), where a
         * column sum declines them below 256 */
        {"column var f16 65536 x 1024: 128 lane columns, lanes", KILN_DTYPE_F16, {65536, 1024}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var bf16 300000 x 256: 32 lane columns, lanes", KILN_DTYPE_BF16, {300000, 256}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var f16 1600000 x 32: 4 lane columns, lanes", KILN_DTYPE_F16, {1600000, 32}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var f32 1600000 x 32: 8 lane columns, lanes", KILN_DTYPE_F32, {1600000, 32}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var f32 300000 x 256: 64 lane columns, none", KILN_DTYPE_F32, {300000, 256}, 4, NULL, NULL,
         -1, -1, -1, 0, -1, "1"},
        {"column var f32 100000 x 1024: 256 lane columns, lanes", KILN_DTYPE_F32, {100000, 1024}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var f16 4096 x 4096: 512 lane columns unsplit, lanes", KILN_DTYPE_F16, {4096, 4096}, 4, NULL, NULL,
         -1, -1, -1, 1, -1, "1"},
        {"column var f16 4096 x 512: 64 lane columns unsplit, none", KILN_DTYPE_F16, {4096, 512}, 4, NULL, NULL,
         -1, -1, -1, 0, -1, "1"},
        {"column sum f16 65536 x 1024: 128 lane columns, none", KILN_DTYPE_F16, {65536, 1024}, 9, NULL, NULL,
         -1, -1, -1, 0, -1, "1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        if (cases[c].smem)
            setenv("KILN_REDUCE_SMEM", cases[c].smem, 1);
        else
            unsetenv("KILN_REDUCE_SMEM");
        if (cases[c].rowfill)
            setenv("KILN_REDUCE_ROWFILL", cases[c].rowfill, 1);
        else
            unsetenv("KILN_REDUCE_ROWFILL");
        setenv("KILN_VAR_PASSES", cases[c].passes ? cases[c].passes : "2", 1);
        const kiln_dtype odt =
            cases[c].kind == 4 || cases[c].kind == 9 || cases[c].kind == 12 ? KILN_DTYPE_F32 : cases[c].dt;
        kiln_tensor *x, *dst;
        kiln_plan *p = empty_plan(ctx, cases[c].dt, cases[c].shape, cases[c].kind, odt, &x, &dst);
        kiln_cuda_launch_choice ch = {-1, -1, -1, -1, -1, -1, -1};
        if (p) CHECK_OK(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, optin, sm, l2, &ch));
        const int got[5] = {ch.split, ch.row_cache != 0, ch.kmax, ch.lanes, ch.seg};
        const int want[5] = {cases[c].split, cases[c].row_cache, cases[c].kmax, cases[c].lanes, cases[c].seg};
        for (int f = 0; f < 5; f++) {
            if (want[f] < 0) continue;
            if (got[f] != want[f])
                fprintf(stderr,
                        "  launch choice, %s: split %d, row cache %d, kmax %d, lanes %d, seg %d (%d threads);"
                        " want %d, %d, %d, %d, %d\n",
                        cases[c].what, ch.split, ch.row_cache, ch.kmax, ch.lanes, ch.seg, ch.threads, want[0],
                        want[1], want[2], want[3], want[4]);
            CHECK_INT(got[f], want[f]);
        }
        kiln__plan_free(p);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
    }
    unsetenv("KILN_REDUCE_SMEM");
    unsetenv("KILN_REDUCE_ROWFILL");
    unsetenv("KILN_VAR_PASSES");
    /* bad arguments name themselves */
    {
        const int64_t shape[2] = {4, 1000};
        kiln_tensor *x, *dst;
        kiln_plan *p = empty_plan(ctx, KILN_DTYPE_F32, shape, 2, KILN_DTYPE_F32, &x, &dst);
        kiln_cuda_launch_choice ch;
        if (p) {
            CHECK_FAILS(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], 0, optin, sm, l2, &ch), KILN_ERR_ARG,
                        "sm_count");
            CHECK_FAILS(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, sm + 1, sm, l2, &ch), KILN_ERR_ARG,
                        "smem_optin");
            CHECK_FAILS(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, optin, sm, 0, &ch), KILN_ERR_ARG,
                        "l2_bytes");
            CHECK_FAILS(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, optin, sm, l2, NULL), KILN_ERR_ARG, "out");
        }
        kiln__plan_free(p);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
    }
}

/* COLUMN mode's deeper workers (codegen.c col_depth) on an H100's size (its L2 50 MiB unless the
 * case says): a kernel that reads its inputs once and runs unsplit takes fewer threads a column,
 * each walking up to 16 rows, while the grid keeps more than 512 threads an SM;
 * KILN_REDUCE_COLDEPTH=0 keeps the blocks as before. Kernels that walk the data again (a two-pass
 * variance, batch norm) take them only where the bytes of their inputs fit in 7/8 of the L2
 * (45.9 MB of 50 MiB; two full-size inputs count twice, a broadcast row hardly), at any size with
 * =all (for measuring). Each case: the block's threads under each setting
 * (bench/NOTES.md steps 77 and 79); KILN_REDUCE_COLROWS=32 or 64 lets a worker walk more rows. */
typedef struct col_case {
    const char *what;
    kiln_dtype dt;
    int64_t shape[2];
    int kind;
    const char *passes;
    int l2_mib;     /* 0: 50 */
    int threads[3]; /* the block's threads at each of the three settings */
} col_case;

/* Each case's block threads (unsplit) with the environment variable var at each of settings (NULL:
 * unset), on an H100's size; the value `bad` makes the first case fail naming var. */
static void check_col_threads(kiln_ctx *ctx, const char *var, const char *const *settings, const char *bad,
                              const col_case *cases, size_t ncases)
{
    const int sms = 132, optin = 232448, sm = 233472;
    for (size_t c = 0; c < ncases; c++) {
        setenv("KILN_VAR_PASSES", cases[c].passes, 1);
        const kiln_dtype odt = cases[c].kind == 4 || cases[c].kind == 9 ? KILN_DTYPE_F32 : cases[c].dt;
        kiln_tensor *x, *dst;
        kiln_plan *p = empty_plan(ctx, cases[c].dt, cases[c].shape, cases[c].kind, odt, &x, &dst);
        const int l2 = (cases[c].l2_mib ? cases[c].l2_mib : 50) << 20;
        for (int m = 0; m < 3 && p; m++) {
            if (settings[m])
                setenv(var, settings[m], 1);
            else
                unsetenv(var);
            kiln_cuda_launch_choice ch = {-1, -1, -1, -1, -1, -1, -1};
            CHECK_OK(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, optin, sm, l2, &ch));
            const int want = cases[c].threads[m];
            if (ch.threads != want || ch.split != 0)
                fprintf(stderr, "  %s, %s=%s: %d threads, split %d; want %d unsplit\n", cases[c].what, var,
                        settings[m] ? settings[m] : "(unset)", ch.threads, ch.split, want);
            CHECK_INT(ch.threads, want);
            CHECK_INT(ch.split, 0);
        }
        setenv(var, bad, 1);
        kiln_cuda_launch_choice ch;
        if (p && c == 0)
            CHECK_FAILS(ctx, kiln__cuda_launch_choice(ctx, &p->kernels[0], sms, optin, sm, l2, &ch), KILN_ERR_ARG, var);
        unsetenv(var);
        kiln__plan_free(p);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
    }
    unsetenv("KILN_VAR_PASSES");
}

static void test_col_depth(kiln_ctx *ctx)
{
    /* the block's threads unset (the rule), with =0 and with =all (every COLUMN kernel, for measuring) */
    static const char *const depth[3] = {NULL, "0", "all"};
    static const col_case depth_cases[] = {
        {"column sum f16 1024 x 16384: 4 x 64, 16 rows a worker", KILN_DTYPE_F16, {1024, 16384}, 9, "2", 0, {256, 1024, 256}},
        {"column sum f16 768 x 12288: 4 x 64, 12 rows", KILN_DTYPE_F16, {768, 12288}, 9, "2", 0, {256, 1024, 256}},
        {"column sum f32 2048 x 8192: 4 x 128, 16 rows", KILN_DTYPE_F32, {2048, 8192}, 9, "2", 0, {512, 1024, 512}},
        {"column sum f32 1024 x 16384, 64 MiB: one walk, no bound", KILN_DTYPE_F32, {1024, 16384}, 9, "2", 0, {512, 1024, 512}},
        {"column var f16 256 x 65536, one pass: 16 x 16", KILN_DTYPE_F16, {256, 65536}, 4, "1", 0, {256, 1024, 256}},
        {"column var f16 1024 x 16384, one pass: 4 x 64", KILN_DTYPE_F16, {1024, 16384}, 4, "1", 0, {256, 1024, 256}},
        {"column sum f16 512 x 8192: 496 threads an SM would be too few", KILN_DTYPE_F16, {512, 8192}, 9, "2", 0, {512, 512, 512}},
        {"column sum f16 4096 x 4096: 32 rows a worker already", KILN_DTYPE_F16, {4096, 4096}, 9, "2", 0, {1024, 1024, 1024}},
        {"column var f16 256 x 65536, two passes, 32 MiB of 50: fits", KILN_DTYPE_F16, {256, 65536}, 4, "2", 0, {256, 1024, 256}},
        {"column var f16 256 x 65536, two passes, 32 MiB of a 32 MiB L2", KILN_DTYPE_F16, {256, 65536}, 4, "2", 32,
         {1024, 1024, 256}},
        {"column var f32 512 x 32768, two passes, 64 MiB: kept but with =all", KILN_DTYPE_F32, {512, 32768}, 4, "2", 0,
         {1024, 1024, 512}},
        {"column var f32 1024 x 10240, two passes, 40 MiB: fits", KILN_DTYPE_F32, {1024, 10240}, 4, "2", 0, {512, 1024, 512}},
        {"batch norm f32 768 x 16384, 48 MiB: kept but with =all", KILN_DTYPE_F32, {768, 16384}, 6, "2", 0, {1024, 1024, 512}},
        {"batch norm bf16 512 x 32768, two passes, 32 MiB: fits", KILN_DTYPE_BF16, {512, 32768}, 6, "2", 0, {256, 1024, 256}},
        {"batch norm f32 1024 x 8192, one pass written over x, 32 MiB: fits", KILN_DTYPE_F32, {1024, 8192}, 6, "1", 0,
         {256, 1024, 256}},
        {"batch norm f32 of a + b, 512 x 8192 each, 32 MiB: fits", KILN_DTYPE_F32, {1024, 8192}, 16, "2", 0,
         {256, 1024, 256}},
        {"batch norm f32 of a + b, 1024 x 8192 each, 64 MiB: kept but with =all", KILN_DTYPE_F32, {2048, 8192}, 16, "2",
         0, {1024, 1024, 256}},
    };
    check_col_threads(ctx, "KILN_REDUCE_COLDEPTH", depth, "16", depth_cases, sizeof depth_cases / sizeof depth_cases[0]);
    /* KILN_REDUCE_COLROWS (for measuring): the rows a deeper worker may walk, unset 16, then 32 and 64
     * (the block halves again while each worker's rows stay within) */
    static const char *const rows[3] = {NULL, "32", "64"};
    static const col_case rows_cases[] = {
        {"column var f16 2048 x 16384, one pass", KILN_DTYPE_F16, {2048, 16384}, 4, "1", 0, {512, 256, 256}},
        {"column sum f16 2048 x 4096", KILN_DTYPE_F16, {2048, 4096}, 9, "2", 0, {1024, 512, 256}},
        {"column var f32 512 x 32768, two passes, 64 MiB: kept at any depth", KILN_DTYPE_F32, {512, 32768}, 4, "2",
         0, {1024, 1024, 1024}},
    };
    check_col_threads(ctx, "KILN_REDUCE_COLROWS", rows, "8", rows_cases, sizeof rows_cases / sizeof rows_cases[0]);
}

int main(void)
{
    if (!kiln__cuda_kernel_source) {
        printf("the library has no CUDA backend: skipped\n");
        return CHECK_SKIP;
    }
    nvrtc_api api;
    if (!nvrtc_ready(&api)) return CHECK_SKIP;
    rng = check_seed();
    if (kiln__cuda_row_cache_block) test_row_cache_block();
    kiln_ctx *ctx = NULL;
    kiln_ctx_args a = {.device = KILN_DEVICE_CPU, .seed = 7};
    CHECK_OK(ctx, kiln_ctx_create(&ctx, &a));
    if (kiln__cuda_launch_choice) {
        test_launch_choices(ctx);
        test_col_depth(ctx);
    }
    const codegen_case cases[] = {
        {"element-wise f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 1000}, 0, KILN_ROUND_DEFAULT},
        {"sum to one f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 40000}, 1, KILN_ROUND_DEFAULT},
        {"sum to one f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 1, {99999}, 1, KILN_ROUND_DEFAULT},
        {"sum to one i8", KILN_DTYPE_I8, KILN_DTYPE_F32, 2, {7, 1001}, 1, KILN_ROUND_DEFAULT},
        {"sum to one f64", KILN_DTYPE_F64, KILN_DTYPE_F64, 3, {2, 3, 5000}, 1, KILN_ROUND_DEFAULT},
        {"sum to one, f16 out SR", KILN_DTYPE_F32, KILN_DTYPE_F16, 2, {4, 5000}, 1, KILN_ROUND_STOCHASTIC},
        {"row max bf16", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {5, 9000}, 2, KILN_ROUND_DEFAULT},
        {"row argmax f32", KILN_DTYPE_F32, KILN_DTYPE_I32, 2, {4, 10001}, 3, KILN_ROUND_DEFAULT},
        {"column var bf16", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {30000, 6}, 4, KILN_ROUND_DEFAULT},
        {"x - max(x) f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {2, 50000}, 5, KILN_ROUND_DEFAULT},
        {"x - max(x) f16 SR", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {2, 50000}, 5, KILN_ROUND_STOCHASTIC},
        {"batch norm f64", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {100000, 3}, 6, KILN_ROUND_DEFAULT},
        {"batch norm f16 SR", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {100000, 3}, 6, KILN_ROUND_STOCHASTIC},
        {"column sum f16, many columns", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {4096, 5000}, 9, KILN_ROUND_DEFAULT},
        {"column argmin f16", KILN_DTYPE_F16, KILN_DTYPE_I32, 2, {20000, 5}, 7, KILN_ROUND_DEFAULT},
        /* COLUMN mode with lanes (a worker owns VEC neighbouring columns) */
        {"lanes: column sum f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {65536, 1024}, 9, KILN_ROUND_DEFAULT},
        {"lanes: column sum i8 to f16 SR", KILN_DTYPE_I8, KILN_DTYPE_F16, 2, {5000, 64}, 9, KILN_ROUND_STOCHASTIC},
        {"lanes: column var f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {30000, 64}, 4, KILN_ROUND_DEFAULT},
        {"lanes: column argmin bf16", KILN_DTYPE_BF16, KILN_DTYPE_I32, 2, {20000, 40}, 7, KILN_ROUND_DEFAULT},
        {"lanes: batch norm f16 SR", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {100000, 64}, 6, KILN_ROUND_STOCHASTIC},
        {"lanes: batch norm f64", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {100000, 16}, 6, KILN_ROUND_DEFAULT},
        {"lanes: column sum broadcast back f16", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3000, 64}, 10, KILN_ROUND_DEFAULT},
        {"lanes: sum of x * 0 + max(x) f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3000, 64}, 11, KILN_ROUND_DEFAULT},
        {"math functions f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 1000}, 13, KILN_ROUND_DEFAULT},
        {"math functions f64", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {3, 1000}, 13, KILN_ROUND_DEFAULT},
        {"math functions f16 SR", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 1000}, 13, KILN_ROUND_STOCHASTIC},
        {"row prod f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 40000}, 14, KILN_ROUND_DEFAULT},
        {"column prod f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {30000, 6}, 15, KILN_ROUND_DEFAULT},
        {"lanes: column prod f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {65536, 1024}, 15, KILN_ROUND_DEFAULT},
        {"softmax f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        {"softmax f32 (keep 0)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        {"softmax f16 (rule)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        {"div 0: softmax f32 (div 0)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        /* the variance in one pass (KILN_VAR_PASSES=1: RED_VAR, Welford's update, Chan's merges) */
        {"column var bf16 (one pass)", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {30000, 6}, 4, KILN_ROUND_DEFAULT},
        {"batch norm f64 (one pass)", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {100000, 3}, 6, KILN_ROUND_DEFAULT},
        {"batch norm f16 SR (one pass)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {100000, 3}, 6, KILN_ROUND_STOCHASTIC},
        {"lanes: column var f32 (one pass)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {30000, 64}, 4, KILN_ROUND_DEFAULT},
        {"lanes: batch norm f16 SR (one pass)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {100000, 64}, 6,
         KILN_ROUND_STOCHASTIC},
        {"lanes: batch norm f64 (one pass)", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {100000, 16}, 6, KILN_ROUND_DEFAULT},
        {"row var f32 (one pass)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {5, 8192}, 12, KILN_ROUND_DEFAULT},
        {"row var f64 (one pass)", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {5, 8192}, 12, KILN_ROUND_DEFAULT},
        /* ROW mode's narrow inputs with f32's bytes a worker (KILN_REDUCE_ROWFILL=1, row_fill) */
        {"row var f16", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {5, 8192}, 12, KILN_ROUND_DEFAULT},
        {"row var f16 (rowfill 0)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {5, 8192}, 12, KILN_ROUND_DEFAULT},
        {"row var f16 (rowfill)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {5, 8192}, 12, KILN_ROUND_DEFAULT},
        {"x - max(x) f16 SR (rowfill)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {2, 50000}, 5, KILN_ROUND_STOCHASTIC},
        {"softmax bf16 (rowfill)", KILN_DTYPE_BF16, KILN_DTYPE_BF16, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        {"row max i8 (rowfill)", KILN_DTYPE_I8, KILN_DTYPE_F32, 2, {5, 9000}, 2, KILN_ROUND_DEFAULT},
        /* ROW mode's short rows: W lanes a row (row_segments; "short W" names the lanes) */
        {"short 2: softmax f16", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {4096, 32}, 8, KILN_ROUND_DEFAULT},
        {"short 2: x - max(x) f16 SR", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {4096, 32}, 5, KILN_ROUND_STOCHASTIC},
        {"short 8: row argmax f32", KILN_DTYPE_F32, KILN_DTYPE_I32, 2, {1000, 100}, 3, KILN_ROUND_DEFAULT},
        {"short 8: row var f64 (one pass)", KILN_DTYPE_F64, KILN_DTYPE_F64, 2, {1000, 128}, 12, KILN_ROUND_DEFAULT},
        {"short 1: row prod f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1000, 7}, 14, KILN_ROUND_DEFAULT},
        {"short 2: row max bf16 (rowfill)", KILN_DTYPE_BF16, KILN_DTYPE_F32, 2, {1000, 64}, 2, KILN_ROUND_DEFAULT},
        {"short 16: row var f32 VEC 2", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1000, 250}, 12, KILN_ROUND_DEFAULT},
        {"short 0: row max f16 (seg 0)", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {1000, 64}, 2, KILN_ROUND_DEFAULT},
        {"short 32: x - max(x) f32", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1000, 500}, 5, KILN_ROUND_DEFAULT},
        /* 8- and 4-byte vectors where 16 bytes do not divide the row ("VEC n" names the lanes) */
        {"short 8: softmax f16 VEC 4", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {1000, 100}, 8, KILN_ROUND_DEFAULT},
        {"short 1: row var f32 VEC 2", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1000, 6}, 12, KILN_ROUND_DEFAULT},
        {"column sum f16 VEC 1", KILN_DTYPE_F16, KILN_DTYPE_F32, 2, {5000, 100}, 9, KILN_ROUND_DEFAULT},
        /* rows off the vectors' alignment walked from the aligned vector holding their first
         * point (row_shift; kiln_lanes_in marks the partly filled vectors) */
        {"shift: softmax f32 VEC 4", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30001}, 8, KILN_ROUND_DEFAULT},
        {"shift: softmax f16 VEC 8 (keep 0)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 30001}, 8, KILN_ROUND_DEFAULT},
        /* kept 16-bit rows past a warp, shifted: row_fill leaves their walk undoubled */
        {"shift: softmax f16 VEC 8 (kept)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 10001}, 8, KILN_ROUND_DEFAULT},
        {"shift: softmax bf16 VEC 8 (kept)", KILN_DTYPE_BF16, KILN_DTYPE_BF16, 2, {3, 16001}, 8, KILN_ROUND_DEFAULT},
        /* ... unshifted, doubled only where that needs at most 256 workers (rows up to 8192 values) */
        {"softmax f16 (kept, doubled)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 8192}, 8, KILN_ROUND_DEFAULT},
        {"softmax f16 (kept)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 10000}, 8, KILN_ROUND_DEFAULT},
        {"softmax bf16 (kept)", KILN_DTYPE_BF16, KILN_DTYPE_BF16, 2, {3, 16384}, 8, KILN_ROUND_DEFAULT},
        {"shift: row argmax f16 VEC 8", KILN_DTYPE_F16, KILN_DTYPE_I32, 2, {5, 9001}, 3, KILN_ROUND_DEFAULT},
        {"shift: x - max(x) f16 SR VEC 8", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {2, 50001}, 5, KILN_ROUND_STOCHASTIC},
        {"short 4: shift: row var f32 VEC 4", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {1000, 33}, 12, KILN_ROUND_DEFAULT},
        {"row argmax f16 (shift 0) VEC 1", KILN_DTYPE_F16, KILN_DTYPE_I32, 2, {5, 9001}, 3, KILN_ROUND_DEFAULT},
        /* rows longer than a tile keeping their loads in shared memory (row_cache; the hooks take
         * it with KILN_REDUCE_SMEM=1, unsplit) */
        {"cache: softmax f32 (smem)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30000}, 8, KILN_ROUND_DEFAULT},
        {"cache: shift: x - max(x) f16 SR VEC 8 (smem)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {2, 50001}, 5,
         KILN_ROUND_STOCHASTIC},
        {"cache: softmax f16 (shift 0) VEC 1 (smem)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {3, 30001}, 8, KILN_ROUND_DEFAULT},
        {"cache: softmax bf16 (smem)", KILN_DTYPE_BF16, KILN_DTYPE_BF16, 2, {3, 40000}, 8, KILN_ROUND_DEFAULT},
        {"cache: shift: softmax f32 VEC 4 (smem)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 30001}, 8, KILN_ROUND_DEFAULT},
        /* rows longer than the H100's 227 KB a block: the first Lc vectors cached */
        {"cache: softmax f32 (smem, partial)", KILN_DTYPE_F32, KILN_DTYPE_F32, 2, {3, 70001}, 8, KILN_ROUND_DEFAULT},
        {"cache: shift: x - max(x) f16 SR VEC 8 (smem, partial)", KILN_DTYPE_F16, KILN_DTYPE_F16, 2, {2, 150001}, 5,
         KILN_ROUND_STOCHASTIC},
        {"cache: softmax bf16 (smem, partial)", KILN_DTYPE_BF16, KILN_DTYPE_BF16, 2, {3, 160000}, 8, KILN_ROUND_DEFAULT},
    };
    int compiled = 0, reductions = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const codegen_case *cs = &cases[c];
        if (strstr(cs->what, "(one pass)"))
            setenv("KILN_VAR_PASSES", "1", 1);
        else
            unsetenv("KILN_VAR_PASSES");
        if (strstr(cs->what, "(rowfill)"))
            setenv("KILN_REDUCE_ROWFILL", "1", 1);
        else if (strstr(cs->what, "(rowfill 0)"))
            setenv("KILN_REDUCE_ROWFILL", "0", 1);
        else
            unsetenv("KILN_REDUCE_ROWFILL");
        if (strstr(cs->what, "(keep 0)"))
            setenv("KILN_REDUCE_KEEP", "0", 1);
        else
            unsetenv("KILN_REDUCE_KEEP");
        if (strstr(cs->what, "(div 0)"))
            setenv("KILN_REDUCE_DIV", "0", 1);
        else
            unsetenv("KILN_REDUCE_DIV");
        if (strstr(cs->what, "(seg 0)"))
            setenv("KILN_REDUCE_SEG", "0", 1);
        else
            unsetenv("KILN_REDUCE_SEG");
        if (strstr(cs->what, "(shift 0)"))
            setenv("KILN_REDUCE_SHIFT", "0", 1);
        else
            unsetenv("KILN_REDUCE_SHIFT");
        if (strstr(cs->what, "(smem"))
            setenv("KILN_REDUCE_SMEM", "1", 1);
        else
            unsetenv("KILN_REDUCE_SMEM");
        kiln_tensor *x = random_tensor(ctx, cs->in_dt, cs->nd, cs->shape);
        int ond;
        int64_t oshape[3];
        kiln_expr *e = build(cs->kind, x, cs->nd, cs->shape, &ond, oshape);
        kiln_tensor *dst = NULL;
        CHECK_OK(ctx, kiln_tensor_empty(ctx, cs->out_dt, ond, oshape, &dst));
        kiln_plan *p = NULL;
        CHECK_OK(ctx, kiln__plan_build(dst, e, cs->round, &p));
        kiln_expr_release(e);
        for (int k = 0; p && k < p->nkernels; k++) {
            const kiln_plan_kernel *K = &p->kernels[k];
            for (int split = 0; split < 2; split++) {
                char *src = NULL;
                CHECK_OK(ctx, kiln__cuda_kernel_source(ctx, K, split, &src));
                if (!src) continue;
                /* the barrier exactly in a reduction's split form */
                int barrier = strstr(src, "kiln_grid_sync(gsync)") != NULL;
                int want = split && K->reduce_mask != 0;
                if (barrier != want)
                    fprintf(stderr, "  %s kernel %d split %d: grid barrier %s\n", cs->what, k, split,
                            barrier ? "where none belongs" : "missing");
                CHECK_INT(barrier, want);
                reductions += want;
                /* the f16 row's worker caches 2 vectors of 8 (16 values, 32 bytes), 4 with
                 * ROWFILL (64 bytes, as an f32 worker's 4 vectors of 4) */
                if (strncmp(cs->what, "row var f16", 11) == 0) {
                    /* unset: the rule's (a row value out: f32's bytes); 0: kmax_for's count */
                    const char *want_cache = strstr(cs->what, "(rowfill 0)") ? "uint4 cc0[2];" : "uint4 cc0[4];";
                    if (!strstr(src, want_cache)) fprintf(stderr, "  %s: no '%s'\n", cs->what, want_cache);
                    CHECK(strstr(src, want_cache) != NULL);
                }
                /* short rows: unsplit, W lanes a row on segment butterflies (a reduction of W
                 * lanes names W), 256 threads a block; split (what run_kernel never launches
                 * for them) and with KILN_REDUCE_SEG=0, a warp a row or more */
                if (strncmp(cs->what, "short ", 6) == 0 && K->reduce_mask != 0) {
                    const char *body = strstr(src, " kiln_kernel(");
                    int w = atoi(cs->what + 6), segs = body && strstr(body, "kiln_seg_") != NULL;
                    int bounds256 = strstr(src, "__launch_bounds__(256)") != NULL;
                    char want_w[32], want_v[32];
                    snprintf(want_w, sizeof want_w, ", %d>(a", w);
                    snprintf(want_v, sizeof want_v, "kiln_seg_var<%d>(a", w);
                    int named = body && (strstr(body, want_w) || strstr(body, want_v));
                    int want_seg = !split && w > 0;
                    if (segs != want_seg || bounds256 != want_seg || (want_seg && !named))
                        fprintf(stderr, "  %s kernel %d split %d: segments %d, bounds 256 %d, W %d named %d\n",
                                cs->what, k, split, segs, bounds256, w, named);
                    CHECK_INT(segs, want_seg);
                    CHECK_INT(bounds256, want_seg);
                    if (want_seg) CHECK(named);
                }
                /* softmax keeps exp(x - max(x)) from the sum's pass for the output (kv<i>), in
                 * both forms; not with KILN_REDUCE_KEEP=0; x - max(x) has nothing worth keeping */
                if (strncmp(cs->what, "softmax f32", 11) == 0 || strncmp(cs->what, "x - max(x) f32", 14) == 0) {
                    int kept = strstr(src, "  CT kv") != NULL;
                    int want_kept = strcmp(cs->what, "softmax f32") == 0;
                    if (kept != want_kept) fprintf(stderr, "  %s split %d: kept values %d\n", cs->what, split, kept);
                    CHECK_INT(kept, want_kept);
                }
                /* softmax's output divides its kept exp by the row's sum through the sum's
                 * reciprocal (kiln_div_row) where every kept value is in range (okn), not with
                 * KILN_REDUCE_DIV=0 or with nothing kept (the row cache, unsplit, keeps nothing) */
                if (strncmp(cs->what, "softmax", 7) == 0 || strstr(cs->what, ": softmax")) {
                    int rdiv = strstr(src, "= kiln_div_row(") != NULL && (strstr(src, "okn3 = okn3 & kiln_div_in(v3);") != NULL ||
                                                               strstr(src, "okn3 = okn3 & (kiln_div_in(v3) || ") != NULL);
                    /* kept or computed again (keep 0, the row cache), the dividend's pass checking
                     * it; not on an unsplit row cached whole and unshifted (cached_division) */
                    int want_rdiv = strstr(cs->what, "(div 0)") == NULL &&
                                    !(!split && strstr(cs->what, "(smem)") && !strstr(cs->what, "shift:"));
                    if (rdiv != want_rdiv) fprintf(stderr, "  %s split %d: row division %d\n", cs->what, split, rdiv);
                    CHECK_INT(rdiv, want_rdiv);
                }
                /* f16 softmax keeps its exp; 30000 wide, row_fill's doubled walk would need 938
                 * workers, so it keeps 16 values a worker (bench/NOTES.md step 73) */
                if (strcmp(cs->what, "softmax f16 (rule)") == 0) {
                    int ok = strstr(src, "  CT kv") && strstr(src, "uint4 cc0[2];");
                    if (!ok)
                        fprintf(stderr, "  %s split %d: no kept values or not 2 vectors a worker\n", cs->what, split);
                    CHECK(ok);
                }
                /* the row shift exactly where the case names it */
                if (strstr(cs->what, "shift")) {
                    int shifted = strstr(src, "kiln_lanes_in(e0, Lel, VEC)") != NULL;
                    int want_shift = strstr(cs->what, "shift:") != NULL;
                    if (shifted != want_shift) fprintf(stderr, "  %s split %d: row shift %d\n", cs->what, split, shifted);
                    CHECK_INT(shifted, want_shift);
                }
                /* the row cache exactly where the case names it, unsplit: the first phase stores
                 * the row's loads, the later ones read them back */
                if (K->reduce_mask != 0) {
                    /* partial: the first Lc vectors, Lc from the launch's shared memory */
                    const int partial = strstr(src, "%dynamic_smem_size") != NULL &&
                                        strstr(src, "if (j < Lc) sc0[j] = u0") != NULL &&
                                        (strstr(src, "j < Lc ? sc0[j]") || strstr(src, "if (j < Lc) u0.v = sc0[j]"));
                    const int whole = strstr(src, "sc0[j] = u0") != NULL && strstr(src, "= sc0[j];") != NULL;
                    int cached = strstr(src, "char *rowc") == NULL ? 0 : partial ? 2 : whole;
                    int want_cache = split || !strstr(cs->what, "(smem") ? 0 : strstr(cs->what, "partial)") ? 2 : 1;
                    if (cached != want_cache) fprintf(stderr, "  %s split %d: row cache %d\n", cs->what, split, cached);
                    CHECK_INT(cached, want_cache);
                }
                /* a cached 16-bit softmax keeps no values, so row_fill's doubling for them is
                 * undone: 2 vectors a worker (4 spilled at the rule's 40 registers; NOTES step 70) */
                if (!split && strstr(cs->what, "cache: softmax bf16")) {
                    int ok = strstr(src, "j0 += (IDX)nw * 2) {") != NULL && strstr(src, "j0 += (IDX)nw * 4) {") == NULL;
                    if (!ok) fprintf(stderr, "  %s: not 2 vectors a worker\n", cs->what);
                    CHECK(ok);
                }
                /* ... and a shifted one keeps its values over 2 or 3 vectors a worker, not row_fill's 4
                 * (the doubled walk spilled 88 bytes in f16, 216 in bf16; bench/NOTES.md step 71), as
                 * does an unshifted one whose doubled walk would need more than 256 workers (step 73) */
                if (strstr(cs->what, "(kept")) {
                    int kept = strstr(src, "  CT kv") != NULL, doubled = strstr(src, "uint4 cc0[4];") != NULL;
                    int want_doubled = strstr(cs->what, "(kept, doubled)") != NULL;
                    if (!kept || doubled != want_doubled)
                        fprintf(stderr, "  %s split %d: kept %d, doubled %d\n", cs->what, split, kept, doubled);
                    CHECK(kept && doubled == want_doubled);
                }
                const char *vn = strstr(cs->what, "VEC ");
                if (vn) { /* the row's width takes the widest vector that divides it */
                    char want_vec[32];
                    snprintf(want_vec, sizeof want_vec, "#define VEC %d\n", atoi(vn + 4));
                    if (!strstr(src, want_vec)) fprintf(stderr, "  %s: no '%.*s'\n", cs->what, 13, want_vec);
                    CHECK(strstr(src, want_vec) != NULL);
                }
                char what[128];
                snprintf(what, sizeof what, "%s, kernel %d%s", cs->what, k, split ? ", split" : "");
                const char *dump = getenv("KILN_TEST_DUMP"); /* prints the sources whose name has it */
                if (dump && strstr(what, dump)) printf("---- %s ----\n%s\n", what, src);
                int regs, spill;
                int ok = compile(&api, src, what, &regs, &spill); /* frees src */
                CHECK(ok);
                compiled += ok;
                printf("  %-40s %3d registers, %3d bytes spilled\n", what, regs, spill);
                /* a generator change that makes kernels spill shows here before a GPU sees it
                 * (f64 batch norm spills 20-32 bytes at 64 registers; 16 points a worker made it
                 * 392) */
                if (spill > 64) fprintf(stderr, "  %s: %d bytes spilled (at most 64)\n", what, spill);
                CHECK(spill <= 64);
            }
        }
        kiln__plan_free(p);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
    }
    /* a bad value names the variable: KILN_REDUCE_ROWFILL (read where a row's inputs are
     * narrow), KILN_REDUCE_SEG and KILN_REDUCE_KEEP (read at every ROW-mode reduction),
     * KILN_REDUCE_DIV and KILN_REDUCE_SHIFT (at rows of one reduced axis) */
    bad_knob(ctx, "KILN_REDUCE_ROWFILL", "yes", KILN_DTYPE_F16, 5, 8192, 12);
    bad_knob(ctx, "KILN_REDUCE_SEG", "2", KILN_DTYPE_F32, 100, 32, 2);
    bad_knob(ctx, "KILN_REDUCE_KEEP", "on", KILN_DTYPE_F32, 3, 1000, 8);
    bad_knob(ctx, "KILN_REDUCE_DIV", "on", KILN_DTYPE_F32, 3, 1000, 8);
    bad_knob(ctx, "KILN_REDUCE_SHIFT", "on", KILN_DTYPE_F32, 3, 1001, 8);
    unsetenv("KILN_REDUCE_SMEM");
    printf("%d sources compiled (%d split reductions)\n", compiled, reductions);
    CHECK(reductions >= 13);
    kiln_ctx_destroy(ctx);
    return check_finish();
}
