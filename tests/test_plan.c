/*
 * tests/test_plan.c — the planner (src/expr/plan.c) on its own: how many kernels an
 * assignment becomes, CSE (shared reductions counted), pass numbers, row-valued outputs,
 * in-place copies, limits, the structural hash and the describe line. Numbers are checked
 * in tests/test_expr.c; here plans are built with kiln__plan_build and inspected (a few are
 * also run, to see that split plans still compute the right thing). Random forms are run
 * against a host reference; without a GPU, where the library has the CUDA backend and NVRTC
 * loads, their kernels' sources are also compiled for sm_90a. Where it has the CUDA backend,
 * every kernel of the random forms and of a sweep over dtypes, layouts, shapes and knobs is
 * checked for the CUDA fast map's key: one signature, one source.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"
#include "expr/expr.h"
#include "expr/plan.h"
#include "cuda/cuda_hooks.h"

#include "nvrtc_compile.h"

#pragma weak kiln__cuda_kernel_source
#pragma weak kiln__cuda_kernel_signature

static kiln_ctx *ctx;
static uint64_t seed;

static kiln_tensor *rnd(kiln_dtype dt, int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    check_fill(&seed, h, n, -2.0, 2.0);
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, nd, shape, h, KILN_DTYPE_F64, &t));
    free(h);
    return t;
}

static int count_op(const kiln_plan *p, kiln_pop op)
{
    int n = 0;
    for (int k = 0; k < p->nkernels; k++)
        for (int i = 0; i < p->kernels[k].ninstr; i++) n += p->kernels[k].instr[i].op == op;
    return n;
}

/* Builds the plan of dst = e (e consumed here), or NULL with the status in *st. */
static kiln_plan *plan_of(kiln_tensor *dst, kiln_expr *e, kiln_status *st)
{
    kiln_plan *p = NULL;
    kiln_status s = kiln__plan_build(dst, e, KILN_ROUND_DEFAULT, &p);
    if (st) *st = s;
    kiln_expr_release(e);
    return s == KILN_OK ? p : NULL;
}

/* rsqrt(var(A,1)+eps) * (A - mean(A,1)) */
static kiln_expr *batchnorm(kiln_tensor *A)
{
    return kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), 1), kiln_scalar(1e-5))),
                    kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1)));
}

static void check_kernel_sane(const kiln_plan_kernel *K)
{
    CHECK(K->ninputs <= 64);
    CHECK(K->ninstr <= 512);
    CHECK(K->out_instr >= 0 && K->out_instr < K->ninstr);
    for (int i = 0; i < K->ninstr; i++) {
        const kiln_plan_instr *I = &K->instr[i];
        int n = kiln__pop_nargs((kiln_pop)I->op);
        int ops[3] = {I->a, I->b, I->c};
        for (int j = 0; j < n; j++) {
            CHECK(ops[j] >= 0 && ops[j] < i);
            if (I->space == KILN_SPACE_ROW && !kiln__pop_is_reduction((kiln_pop)I->op) && ops[j] >= 0 && ops[j] < i)
                CHECK(K->instr[ops[j]].space == KILN_SPACE_ROW);
        }
        if (kiln__pop_is_reduction((kiln_pop)I->op)) {
            CHECK(I->space == KILN_SPACE_ROW);
            CHECK(I->pass < K->npasses);
        }
    }
    if (K->out.is_row) CHECK(K->instr[K->out_instr].space == KILN_SPACE_ROW);
}

static void check_plan_sane(const kiln_plan *p)
{
    for (int k = 0; k < p->nkernels; k++) check_kernel_sane(&p->kernels[k]);
}

static void test_batchnorm(void)
{
    int64_t s[2] = {7, 129};
    kiln_tensor *A = rnd(KILN_DTYPE_F32, 2, s);
    kiln_plan *p = plan_of(A, batchnorm(A), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->ntemps, 0);
        CHECK_INT(count_op(p, KILN_POP_RED_SUM), 2); /* mean(A,1) once, shared with var */
        CHECK_INT(count_op(p, KILN_POP_RED_VAR), 0); /* var lowered to two passes (the default) */
        CHECK_INT(count_op(p, KILN_POP_LOAD), 1);    /* A read through one input */
        const kiln_plan_kernel *K = &p->kernels[0];
        CHECK_INT(K->ninputs, 1);
        CHECK_INT(K->reduce_mask, 0x2);
        CHECK_INT(K->npasses, 2);
        CHECK_INT(K->out.is_row, 0);
        CHECK_INT(K->compute_f64, 0);
        int passes[2] = {0, 0};
        for (int i = 0; i < K->ninstr; i++)
            if (K->instr[i].op == KILN_POP_RED_SUM && K->instr[i].pass < 2) passes[K->instr[i].pass]++;
        CHECK_INT(passes[0], 1);
        CHECK_INT(passes[1], 1);
        /* KILN_VAR_PASSES=1: the variance in the mean's pass (RED_VAR, Welford), A walked twice */
        setenv("KILN_VAR_PASSES", "1", 1);
        kiln_plan *p1 = plan_of(A, batchnorm(A), NULL);
        unsetenv("KILN_VAR_PASSES");
        CHECK(p1 != NULL);
        if (p1) {
            CHECK_INT(count_op(p1, KILN_POP_RED_SUM), 1);
            CHECK_INT(count_op(p1, KILN_POP_RED_VAR), 1);
            CHECK_INT(p1->kernels[0].npasses, 1);
            for (int i = 0; i < p1->kernels[0].ninstr; i++)
                if (kiln__pop_is_reduction((kiln_pop)p1->kernels[0].instr[i].op))
                    CHECK_INT(p1->kernels[0].instr[i].pass, 0);
            check_plan_sane(p1);
            kiln__plan_free(p1);
        }
        check_plan_sane(p);
        char line[1024];
        kiln__plan_describe(p, line, sizeof line);
        CHECK(strncmp(line, "kiln: plan", 10) == 0);
        CHECK(strstr(line, "kernels=1") != NULL);
        kiln__plan_free(p);
    }
    /* C = mean(sqr(A - mean(A,1)),1): one kernel, row-valued output. */
    int64_t cs[2] = {7, 1};
    kiln_tensor *C = rnd(KILN_DTYPE_F32, 2, cs);
    p = plan_of(C, kiln_mean(kiln_sqr(kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1))), 1), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->kernels[0].out.is_row, 1);
        CHECK_INT(p->kernels[0].out.strides[1], 0);
        CHECK_INT(p->kernels[0].npasses, 2);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* The same with keepdims 0 into a (7,) destination. */
    int64_t vs[1] = {7};
    kiln_tensor *V = rnd(KILN_DTYPE_F32, 1, vs);
    int ax = 1;
    p = plan_of(V, kiln_reduce(KILN_REDUCE_VAR, kiln_t(A), 1, &ax, 0), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->kernels[0].out.is_row, 1);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* std over all axes into a scalar. */
    kiln_tensor *S = rnd(KILN_DTYPE_F32, 0, NULL);
    p = plan_of(S, kiln_reduce(KILN_REDUCE_STD, kiln_t(A), 0, NULL, 0), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->kernels[0].reduce_mask, 0x3);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* softmax: max (pass 0), sum of exp (pass 1), the exp shared: one kernel. */
    p = plan_of(A,
                kiln_div(kiln_exp(kiln_sub(kiln_t(A), kiln_max(kiln_t(A), 1))),
                         kiln_sum(kiln_exp(kiln_sub(kiln_t(A), kiln_max(kiln_t(A), 1))), 1)),
                NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(count_op(p, KILN_POP_EXP), 1);
        CHECK_INT(count_op(p, KILN_POP_RED_MAX), 1);
        CHECK_INT(p->kernels[0].npasses, 2);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    kiln_tensor_release(A);
    kiln_tensor_release(C);
    kiln_tensor_release(V);
    kiln_tensor_release(S);
}

static void test_axis0_and_mixed(void)
{
    int64_t s[2] = {9, 5};
    kiln_tensor *A = rnd(KILN_DTYPE_F32, 2, s), *B = rnd(KILN_DTYPE_F32, 2, s);
    /* B = A - sum(A, 0): columns are the rows of the kernel. */
    kiln_plan *p = plan_of(B, kiln_sub(kiln_t(A), kiln_sum(kiln_t(A), 0)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->kernels[0].reduce_mask, 0x1);
        CHECK_INT(p->kernels[0].out.is_row, 0);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* Mixed axes: one reduction must be materialized. */
    p = plan_of(B, kiln_add(kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 0)), kiln_max(kiln_t(A), 1)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 2);
        CHECK_INT(p->ntemps, 1);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* A keepdims=0 reduction over a trailing axis used element-wise: squeeze materialized. */
    int ax = 1;
    int64_t s3[2] = {5, 9};
    kiln_tensor *T = rnd(KILN_DTYPE_F32, 2, s3);
    p = plan_of(T, kiln_add(kiln_t(T), kiln_reduce(KILN_REDUCE_SUM, kiln_t(A), 1, &ax, 0)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 2);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* A keepdims=0 reduction over a leading axis is transparent: one kernel. */
    ax = 0;
    p = plan_of(B, kiln_sub(kiln_t(A), kiln_reduce(KILN_REDUCE_MEAN, kiln_t(A), 1, &ax, 0)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(T);
}

static void test_cse_and_generators(void)
{
    int64_t s[2] = {4, 6};
    kiln_tensor *A = rnd(KILN_DTYPE_F32, 2, s), *B = rnd(KILN_DTYPE_F32, 2, s);
    /* Identical subtrees built separately merge; equal scalars merge. */
    kiln_plan *p = plan_of(
        B, kiln_add(kiln_exp(kiln_mul(kiln_t(A), kiln_scalar(2))), kiln_exp(kiln_mul(kiln_t(A), kiln_scalar(2)))),
        NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(count_op(p, KILN_POP_EXP), 1);
        CHECK_INT(count_op(p, KILN_POP_CONST), 1);
        CHECK_INT(p->kernels[0].nconsts, 1);
        kiln__plan_free(p);
    }
    /* Two generator nodes stay two; one node used twice is one. */
    p = plan_of(B, kiln_add(kiln_rand(), kiln_rand()), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(count_op(p, KILN_POP_RAND), 2);
        CHECK_INT(p->kernels[0].nstreams, 2);
        CHECK(p->kernels[0].streams[0] != p->kernels[0].streams[1]);
        kiln__plan_free(p);
    }
    kiln_expr *g = kiln_randn();
    kiln_expr_retain(g);
    p = plan_of(B, kiln_mul(g, g), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(count_op(p, KILN_POP_RANDN), 1);
        CHECK_INT(p->kernels[0].instr[0].space, KILN_SPACE_FULL);
        kiln__plan_free(p);
    }
    /* A generator used only per row is row-valued; under a reduction it is FULL. */
    int64_t cs[2] = {4, 1};
    kiln_tensor *C = rnd(KILN_DTYPE_F32, 2, cs);
    p = plan_of(C, kiln_add(kiln_sum(kiln_mul(kiln_t(A), kiln_rand()), 1), kiln_bernoulli(0.5)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        const kiln_plan_kernel *K = &p->kernels[0];
        for (int i = 0; i < K->ninstr; i++) {
            if (K->instr[i].op == KILN_POP_RAND) CHECK_INT(K->instr[i].space, KILN_SPACE_FULL);
            if (K->instr[i].op == KILN_POP_BERNOULLI) {
                CHECK_INT(K->instr[i].space, KILN_SPACE_ROW);
                CHECK(K->consts[K->instr[i].b] == 0.5);
            }
        }
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    /* Sum over an axis of size 1 (its argument is row-valued): still a sane plan. */
    p = plan_of(C, kiln_sum(kiln_t(C), 1), NULL);
    CHECK(p != NULL);
    if (p) {
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
}

static void test_inplace(void)
{
    int64_t s[2] = {6, 6};
    kiln_tensor *A = rnd(KILN_DTYPE_F32, 2, s), *At = NULL, *col = NULL;
    /* Same mapping: nothing to copy. */
    kiln_plan *p = plan_of(A, kiln_add(kiln_t(A), kiln_scalar(1)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 1);
        CHECK_INT(p->ntemps, 0);
        kiln__plan_free(p);
    }
    /* A = A.T + A: the transposed leaf is copied first. */
    CHECK_OK(ctx, kiln_tensor_permute(A, NULL, &At));
    p = plan_of(A, kiln_add(kiln_t(At), kiln_t(A)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 2);
        CHECK_INT(p->ntemps, 1);
        CHECK_INT(p->kernels[0].reduce_mask, 0);
        CHECK(p->kernels[1].inputs[0].tensor == p->temps[0] || p->kernels[1].inputs[1].tensor == p->temps[0]);
        kiln__plan_free(p);
    }
    /* A = A - A[:, 0:1]: a broadcast column of dst is copied too. */
    kiln_slice sl[2] = {KILN_SLICE_ALL, KILN_SLICE(0, 1)};
    CHECK_OK(ctx, kiln_tensor_slice(A, 2, sl, &col));
    p = plan_of(A, kiln_sub(kiln_t(A), kiln_t(col)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 2);
        kiln__plan_free(p);
    }
    /* The batch-norm in place needs no copy (checked above); a reduction of dst into a
     * column of itself does: A[:, 0:1] = sum(A, 1). */
    p = plan_of(col, kiln_sum(kiln_t(A), 1), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 2);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    kiln_tensor_release(At);
    kiln_tensor_release(col);
    kiln_tensor_release(A);
}

static void test_limits_hash_empty(void)
{
    enum { N = 100 };
    int64_t s[1] = {33};
    kiln_tensor *t[N];
    double *ref = calloc(33, sizeof *ref), *got = calloc(33, sizeof *got), *h = calloc(33, sizeof *h);
    kiln_expr *e = NULL;
    for (int i = 0; i < N; i++) {
        t[i] = rnd(KILN_DTYPE_F32, 1, s);
        CHECK_OK(ctx, kiln_tensor_read(t[i], h, KILN_DTYPE_F64));
        for (int j = 0; j < 33; j++) ref[j] += h[j] * (i % 3 ? 1.0 : -1.0);
        kiln_expr *x = i % 3 ? kiln_t(t[i]) : kiln_neg(kiln_t(t[i]));
        e = e ? kiln_add(e, x) : x;
    }
    kiln_tensor *out = rnd(KILN_DTYPE_F32, 1, s);
    kiln_expr_retain(e);
    kiln_plan *p = plan_of(out, e, NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK(p->nkernels >= 2);
        check_plan_sane(p);
        kiln__plan_free(p);
    }
    CHECK_OK(ctx, kiln_assign(out, e));
    CHECK_OK(ctx, kiln_tensor_read(out, got, KILN_DTYPE_F64));
    for (int j = 0; j < 33; j++) CHECK_NEAR(got[j], ref[j], 1e-4);
    for (int i = 0; i < N; i++) kiln_tensor_release(t[i]);
    kiln_tensor_release(out);
    free(ref);
    free(got);
    free(h);

    /* 250 nested reductions over the same domain: more passes than a kernel takes. */
    {
        int64_t sx[2] = {3, 5};
        kiln_tensor *X = rnd(KILN_DTYPE_F64, 2, sx), *Y = rnd(KILN_DTYPE_F64, 2, sx);
        double xh[15], yh[15], m[3];
        CHECK_OK(ctx, kiln_tensor_read(X, xh, KILN_DTYPE_F64));
        memcpy(yh, xh, sizeof yh);
        kiln_expr *c = kiln_t(X);
        for (int l = 0; l < 250; l++) {
            c = kiln_sub(kiln_t(X), kiln_mul(kiln_mean(c, 1), kiln_scalar(0.5)));
            for (int i = 0; i < 3; i++) {
                m[i] = 0;
                for (int j = 0; j < 5; j++) m[i] += yh[i * 5 + j] / 5;
            }
            for (int i = 0; i < 15; i++) yh[i] = xh[i] - 0.5 * m[i / 5];
        }
        kiln_expr_retain(c);
        kiln_plan *pp = plan_of(Y, c, NULL);
        CHECK(pp != NULL);
        if (pp) {
            CHECK(pp->nkernels >= 2);
            check_plan_sane(pp);
            kiln__plan_free(pp);
        }
        CHECK_OK(ctx, kiln_assign(Y, c));
        double got2[15];
        CHECK_OK(ctx, kiln_tensor_read(Y, got2, KILN_DTYPE_F64));
        for (int i = 0; i < 15; i++) CHECK_NEAR(got2[i], yh[i], 1e-12);
        kiln_tensor_release(X);
        kiln_tensor_release(Y);
    }

    /* The hash depends on structure, not on sizes or values. */
    int64_t a1[2] = {5, 8}, a2[2] = {17, 3};
    kiln_tensor *X1 = rnd(KILN_DTYPE_F32, 2, a1), *X2 = rnd(KILN_DTYPE_F32, 2, a2);
    kiln_plan *p1 = plan_of(X1, kiln_mul(kiln_t(X1), kiln_scalar(3)), NULL);
    kiln_plan *p2 = plan_of(X2, kiln_mul(kiln_t(X2), kiln_scalar(-7)), NULL);
    kiln_plan *p3 = plan_of(X2, kiln_add(kiln_t(X2), kiln_scalar(-7)), NULL);
    CHECK(p1 && p2 && p3);
    if (p1 && p2 && p3) {
        CHECK(p1->kernels[0].hash == p2->kernels[0].hash);
        CHECK(p1->kernels[0].hash != p3->kernels[0].hash);
    }
    kiln__plan_free(p1);
    kiln__plan_free(p2);
    kiln__plan_free(p3);
    kiln_tensor_release(X1);
    kiln_tensor_release(X2);

    /* Empty destination: no kernels. */
    int64_t z[2] = {0, 4};
    kiln_tensor *Z = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, z, &Z));
    p = plan_of(Z, kiln_exp(kiln_t(Z)), NULL);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->nkernels, 0);
        char line[256];
        kiln__plan_describe(p, line, sizeof line);
        CHECK(strstr(line, "kernels=0") != NULL);
        kiln__plan_free(p);
    }
    kiln_tensor_release(Z);
}

static void test_compute_type_and_errors(void)
{
    int64_t s[2] = {3, 4}, s2[2] = {4, 3};
    kiln_tensor *A = rnd(KILN_DTYPE_F16, 2, s), *D = rnd(KILN_DTYPE_F64, 2, s), *B = rnd(KILN_DTYPE_F32, 2, s2);
    kiln_plan *p = plan_of(A, kiln_add(kiln_t(A), kiln_scalar(1)), NULL);
    if (p) CHECK_INT(p->kernels[0].compute_f64, 0);
    kiln__plan_free(p);
    p = plan_of(A, kiln_add(kiln_t(A), kiln_t(D)), NULL);
    if (p) CHECK_INT(p->kernels[0].compute_f64, 1);
    kiln__plan_free(p);
    p = plan_of(D, kiln_t(A), NULL);
    if (p) CHECK_INT(p->kernels[0].compute_f64, 1);
    kiln__plan_free(p);
    /* Rounding: stochastic only for 16-bit outputs. */
    kiln_plan *q = NULL;
    kiln_expr *e = kiln_t(A);
    CHECK_OK(ctx, kiln__plan_build(A, e, KILN_ROUND_STOCHASTIC, &q));
    if (q) CHECK_INT(q->kernels[0].out.round, KILN_ROUND_STOCHASTIC);
    kiln__plan_free(q);
    q = NULL;
    CHECK_OK(ctx, kiln__plan_build(D, e, KILN_ROUND_STOCHASTIC, &q));
    if (q) CHECK_INT(q->kernels[0].out.round, KILN_ROUND_NEAREST);
    kiln__plan_free(q);
    kiln_expr_release(e);

    kiln_status st;
    CHECK(plan_of(B, kiln_t(A), &st) == NULL);
    CHECK_INT(st, KILN_ERR_SHAPE);
    CHECK(strstr(kiln_last_error(ctx), "'dst'") != NULL);
    kiln_tensor *bc = NULL;
    int64_t s3[3] = {2, 3, 4};
    CHECK_OK(ctx, kiln_tensor_broadcast_to(A, 3, s3, &bc));
    CHECK(plan_of(bc, kiln_scalar(1), &st) == NULL);
    CHECK_INT(st, KILN_ERR_ALIAS);
    CHECK(strstr(kiln_last_error(ctx), "'dst'") != NULL);
    kiln_tensor_release(bc);
    kiln_tensor_release(A);
    kiln_tensor_release(D);
    kiln_tensor_release(B);
}

/* ---- random expression forms ----------------------------------------------------------
 * Random trees of element-wise ops and reductions (keepdims or squeezed, any axes) over
 * leaves that broadcast, planned and run, compared with a host evaluation in f64. This is
 * where mixed domains, materialized squeezes and in-place destinations meet. */

typedef struct harr {
    int nd;
    int64_t sh[KILN_MAX_DIMS];
    double *v;
} harr;

static int64_t h_numel(int nd, const int64_t *sh)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= sh[i];
    return n;
}

static harr h_new(int nd, const int64_t *sh)
{
    harr h;
    memset(&h, 0, sizeof h);
    h.nd = nd;
    for (int i = 0; i < nd; i++) h.sh[i] = sh[i];
    h.v = malloc((size_t)h_numel(nd, sh) * sizeof(double) + 8);
    return h;
}

static int64_t h_at(const harr *a, int nd, const int64_t *idx)
{
    int64_t f = 0;
    for (int i = 0; i < a->nd; i++) {
        int j = i + nd - a->nd;
        f = f * a->sh[i] + (a->sh[i] == 1 ? 0 : idx[j]);
    }
    return f;
}

static void h_unflat(int64_t f, int nd, const int64_t *sh, int64_t *idx)
{
    for (int i = nd - 1; i >= 0; i--) {
        idx[i] = f % sh[i];
        f /= sh[i];
    }
}

enum { FZ_ADD, FZ_SUB, FZ_MUL, FZ_MAX, FZ_MIN, FZ_DIV1 };

static double fz_bin(int op, double a, double b)
{
    switch (op) {
    case FZ_ADD: return a + b;
    case FZ_SUB: return a - b;
    case FZ_MUL: return a * b;
    case FZ_MAX: return a > b ? a : b;
    case FZ_MIN: return a < b ? a : b;
    default: return a / (1 + b * b);
    }
}

static harr h_binary(int op, const harr *a, const harr *b)
{
    int nd;
    int64_t sh[KILN_MAX_DIMS];
    kiln__broadcast_shapes(a->nd, a->sh, b->nd, b->sh, &nd, sh);
    harr o = h_new(nd, sh);
    int64_t idx[KILN_MAX_DIMS];
    for (int64_t f = 0; f < h_numel(nd, sh); f++) {
        h_unflat(f, nd, sh, idx);
        o.v[f] = fz_bin(op, a->v[h_at(a, nd, idx)], b->v[h_at(b, nd, idx)]);
    }
    return o;
}

/* Reduction of a over mask (bits of a's axes); keepdims or not. */
static harr h_reduce(kiln_reduce_op op, const harr *a, uint32_t mask, int keep)
{
    int64_t ksh[KILN_MAX_DIMS], sh[KILN_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < a->nd; i++) {
        ksh[i] = (mask >> i) & 1u ? 1 : a->sh[i];
        if (!((mask >> i) & 1u) || keep) sh[nd++] = ksh[i];
    }
    harr o = h_new(nd, sh);
    int64_t on = h_numel(a->nd, ksh), n = h_numel(a->nd, a->sh), rn = n / (on ? on : 1);
    double *s = calloc((size_t)on, sizeof *s), *q = calloc((size_t)on, sizeof *q);
    double *best = malloc((size_t)on * sizeof *best);
    int64_t *bi = calloc((size_t)on, sizeof *bi), *seen = calloc((size_t)on, sizeof *seen);
    for (int pass = 0; pass < 2; pass++)
        for (int64_t f = 0; f < n; f++) {
            int64_t idx[KILN_MAX_DIMS], of = 0, r = 0;
            h_unflat(f, a->nd, a->sh, idx);
            for (int i = 0; i < a->nd; i++) {
                of = of * ksh[i] + ((mask >> i) & 1u ? 0 : idx[i]);
                if ((mask >> i) & 1u) r = r * a->sh[i] + idx[i];
            }
            double v = a->v[f];
            if (pass == 0) {
                s[of] += v;
                int better = !seen[of] || (op == KILN_REDUCE_MIN ? v < best[of] : v > best[of]);
                if (better) {
                    best[of] = v;
                    bi[of] = r;
                }
                seen[of] = 1;
            } else {
                q[of] += (v - s[of] / (double)rn) * (v - s[of] / (double)rn);
            }
        }
    for (int64_t f = 0; f < on; f++) {
        switch (op) {
        case KILN_REDUCE_SUM: o.v[f] = s[f]; break;
        case KILN_REDUCE_MEAN: o.v[f] = s[f] / (double)rn; break;
        case KILN_REDUCE_VAR: o.v[f] = q[f] / (double)rn; break;
        case KILN_REDUCE_STD: o.v[f] = sqrt(q[f] / (double)rn); break;
        case KILN_REDUCE_ARGMAX: o.v[f] = (double)bi[f]; break;
        default: o.v[f] = best[f]; break;
        }
    }
    free(s);
    free(q);
    free(best);
    free(bi);
    free(seen);
    return o;
}

typedef struct fz {
    kiln_tensor *leaves[256];
    harr lh[256];
    int nleaves;
} fz;

static int fz_rand(int n)
{
    return (int)(check_rand_u64(&seed) % (uint64_t)n);
}

/* A leaf of shape S, or (exact = 0) of S with some axes 1 and leading axes dropped. */
static kiln_expr *fz_leaf(fz *z, int nd, const int64_t *S, int exact, harr *out)
{
    int64_t sh[KILN_MAX_DIMS];
    int lead = exact ? 0 : (fz_rand(4) == 0 ? fz_rand(nd + 1) : 0);
    int n = 0;
    for (int i = lead; i < nd; i++) sh[n++] = (!exact && fz_rand(3) == 0) ? 1 : S[i];
    kiln_tensor *t = NULL;
    if (n == 2 && fz_rand(3) == 0) { /* a transposed view */
        int64_t tsh[2] = {sh[1], sh[0]};
        kiln_tensor *base = rnd(KILN_DTYPE_F64, 2, tsh);
        CHECK_OK(ctx, kiln_tensor_transpose(base, 0, 1, &t));
        kiln_tensor_release(base);
    } else {
        t = rnd(fz_rand(4) == 0 ? KILN_DTYPE_F32 : KILN_DTYPE_F64, n, sh);
    }
    harr h = h_new(n, sh);
    CHECK_OK(ctx, kiln_tensor_read(t, h.v, KILN_DTYPE_F64));
    if (z->nleaves < 256) {
        z->leaves[z->nleaves] = t;
        z->lh[z->nleaves] = h;
        z->nleaves++;
    } else {
        kiln_tensor_release(t);
    }
    *out = h_new(n, sh);
    memcpy(out->v, h.v, (size_t)h_numel(n, sh) * sizeof(double));
    return kiln_t(z->nleaves <= 256 ? z->leaves[z->nleaves - 1] : NULL);
}

static kiln_expr *fz_gen(fz *z, int nd, const int64_t *S, int depth, harr *out);

/* A node of exactly shape S (a random tree plus an exact leaf). */
static kiln_expr *fz_exact(fz *z, int nd, const int64_t *S, int depth, harr *out)
{
    harr a, b;
    kiln_expr *ea = fz_gen(z, nd, S, depth, &a);
    kiln_expr *eb = fz_leaf(z, nd, S, 1, &b);
    *out = h_binary(FZ_ADD, &a, &b);
    free(a.v);
    free(b.v);
    return kiln_add(ea, eb);
}

static const kiln_reduce_op fz_reds[] = {KILN_REDUCE_SUM, KILN_REDUCE_MEAN, KILN_REDUCE_MAX,   KILN_REDUCE_MIN,
                                         KILN_REDUCE_VAR, KILN_REDUCE_STD,  KILN_REDUCE_ARGMAX};

static kiln_expr *fz_gen(fz *z, int nd, const int64_t *S, int depth, harr *out)
{
    int c = depth <= 0 ? fz_rand(5) : 5 + fz_rand(20);
    if (c < 4 || (c >= 5 && c < 7)) return fz_leaf(z, nd, S, 0, out);
    if (c == 4 || c == 7) {
        double v = floor(check_uniform(&seed, -3, 3) * 4) / 4;
        *out = h_new(0, NULL);
        out->v[0] = v;
        return kiln_scalar(v);
    }
    if (c < 11) { /* unary */
        harr a;
        kiln_expr *ea = fz_gen(z, nd, S, depth - 1, &a);
        int u = fz_rand(7);
        for (int64_t i = 0; i < h_numel(a.nd, a.sh); i++) {
            double x = a.v[i];
            a.v[i] = u == 0   ? -x
                     : u == 1 ? fabs(x)
                     : u == 2 ? tanh(x)
                     : u == 3 ? 1 / (1 + exp(-x))
                     : u == 4 ? sin(x)
                     : u == 5 ? erf(x)
                              : x * x;
        }
        *out = a;
        return u == 0   ? kiln_neg(ea)
               : u == 1 ? kiln_abs(ea)
               : u == 2 ? kiln_tanh(ea)
               : u == 3 ? kiln_sigmoid(ea)
               : u == 4 ? kiln_sin(ea)
               : u == 5 ? kiln_erf(ea)
                        : kiln_sqr(ea);
    }
    if (c < 17) { /* binary */
        harr a, b;
        kiln_expr *ea = fz_gen(z, nd, S, depth - 1, &a);
        kiln_expr *eb = fz_gen(z, nd, S, depth - 1, &b);
        int op = fz_rand(6);
        *out = h_binary(op, &a, &b);
        free(a.v);
        free(b.v);
        switch (op) {
        case FZ_ADD: return kiln_add(ea, eb);
        case FZ_SUB: return kiln_sub(ea, eb);
        case FZ_MUL: return kiln_mul(ea, eb);
        case FZ_MAX: return kiln_maximum(ea, eb);
        case FZ_MIN: return kiln_minimum(ea, eb);
        default: return kiln_div(ea, kiln_add(kiln_scalar(1), kiln_sqr(eb)));
        }
    }
    kiln_reduce_op rop = fz_reds[fz_rand(fz_rand(4) == 0 ? 7 : 6)];
    if (c < 22 || nd == 4) { /* keepdims over a random axis set of a child of shape S' */
        int64_t Sc[KILN_MAX_DIMS] = {0};
        uint32_t mask = 0;
        for (int i = 0; i < nd; i++) {
            Sc[i] = S[i];
            if (fz_rand(2)) {
                mask |= 1u << i;
                Sc[i] = 1 + fz_rand(5);
            }
        }
        if (!mask || nd == 0) return fz_gen(z, nd, S, depth - 1, out);
        harr a;
        kiln_expr *ea = fz_exact(z, nd, Sc, depth - 1, &a);
        int axes[KILN_MAX_DIMS], na = 0;
        for (int i = 0; i < nd; i++)
            if ((mask >> i) & 1u) axes[na++] = fz_rand(2) ? i : i - nd;
        *out = h_reduce(rop, &a, mask, 1);
        free(a.v);
        return kiln_reduce(rop, ea, na, axes, 1);
    }
    /* keepdims 0: a child with one or two more axes, removed again */
    int k = nd <= 2 ? 1 + fz_rand(2) : 1;
    int64_t Sc[KILN_MAX_DIMS] = {0};
    int ndc = nd + k, j = 0;
    uint32_t mask = 0;
    for (int i = 0; i < ndc; i++) {
        int left = ndc - i, need = k - __builtin_popcount(mask);
        if (need > 0 && (need == left || fz_rand(2))) {
            mask |= 1u << i;
            Sc[i] = 1 + fz_rand(5);
        } else {
            Sc[i] = S[j++];
        }
    }
    harr a;
    kiln_expr *ea = fz_exact(z, ndc, Sc, depth - 1, &a);
    int axes[KILN_MAX_DIMS], na = 0;
    for (int i = 0; i < ndc; i++)
        if ((mask >> i) & 1u) axes[na++] = i;
    *out = h_reduce(rop, &a, mask, 0);
    free(a.v);
    return kiln_reduce(rop, ea, na, axes, 0);
}

/* FNV-1a of n bytes: the sources' and signatures' hashes below */
static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

/* Without a GPU, where the library has the CUDA backend and NVRTC loads: each new source
 * of plan p's kernels (plain and split) as the backend generates it, compiled for sm_90a.
 * The random forms reach generator paths the named cases do not (COLUMN mode's lanes with
 * a row value broadcast back as the output, found on a GPU visit). On a GPU the forms run. */
static nvrtc_api nvrtc;
static int nvrtc_on, nvrtc_compiled;
static uint64_t nvrtc_seen[4096];

static void compile_plan(const kiln_plan *p, int form)
{
    if (!nvrtc_on) return;
    for (int q = 0; q < p->nkernels; q++)
        for (int split = 0; split < 2; split++) {
            char *src = NULL;
            CHECK_OK(ctx, kiln__cuda_kernel_source(ctx, &p->kernels[q], split, &src));
            if (!src) continue;
            uint64_t h = fnv(src, strlen(src));
            size_t slot = (size_t)(h % 4096);
            while (nvrtc_seen[slot] && nvrtc_seen[slot] != h) slot = (slot + 1) % 4096;
            if (nvrtc_seen[slot] == h || nvrtc_compiled >= 3000) {
                free(src);
                continue;
            }
            nvrtc_seen[slot] = h;
            char what[64];
            snprintf(what, sizeof what, "random form %d kernel %d%s", form, q, split ? " split" : "");
            int regs, spill;
            CHECK(compile(&nvrtc, src, what, &regs, &spill)); /* frees src */
            nvrtc_compiled++;
        }
}

/* The CUDA backend's fast map (codegen.c get_function) finds a kernel's function by its
 * structural signature and never looks at the source again, so one signature given to two
 * different sources would run one kernel's code on the other's data. Every kernel seen here
 * (plain and split) is kept as its signature and its source's hash; a second kernel with a
 * seen signature must have the same source. Needs the CUDA backend compiled in, not a GPU
 * or NVRTC. */
typedef struct kernel_key {
    unsigned char *sig;
    size_t len;
    uint64_t sig_hash, src_hash;
    char what[96];
} kernel_key;

static struct {
    kernel_key *v;
    size_t n, cap; /* cap a power of two; open addressing on sig_hash */
    int kernels, clashes;
} keys;

static void key_insert(kernel_key k)
{
    if (2 * (keys.n + 1) > keys.cap) {
        size_t cap = keys.cap ? 2 * keys.cap : 1024;
        kernel_key *v = calloc(cap, sizeof *v);
        CHECK(v != NULL);
        if (!v) return;
        for (size_t i = 0; i < keys.cap; i++)
            if (keys.v[i].sig) {
                size_t s = (size_t)keys.v[i].sig_hash & (cap - 1);
                while (v[s].sig) s = (s + 1) & (cap - 1);
                v[s] = keys.v[i];
            }
        free(keys.v);
        keys.v = v;
        keys.cap = cap;
    }
    size_t s = (size_t)k.sig_hash & (keys.cap - 1);
    while (keys.v[s].sig) s = (s + 1) & (keys.cap - 1);
    keys.v[s] = k;
    keys.n++;
}

static void key_check(const kiln_plan *p, const char *what)
{
    if (!kiln__cuda_kernel_signature || !kiln__cuda_kernel_source) return;
    for (int q = 0; q < p->nkernels; q++)
        for (int split = 0; split < 2; split++) {
            kernel_key k = {0};
            char *src = NULL;
            CHECK_OK(ctx, kiln__cuda_kernel_signature(ctx, &p->kernels[q], split, &k.sig, &k.len));
            CHECK_OK(ctx, kiln__cuda_kernel_source(ctx, &p->kernels[q], split, &src));
            if (!k.sig || !src) {
                free(k.sig);
                free(src);
                continue;
            }
            keys.kernels++;
            k.sig_hash = fnv(k.sig, k.len);
            k.src_hash = fnv(src, strlen(src));
            snprintf(k.what, sizeof k.what, "%s, kernel %d%s", what, q, split ? ", split" : "");
            free(src);
            const kernel_key *seen = NULL;
            for (size_t s = keys.cap ? (size_t)k.sig_hash & (keys.cap - 1) : 0; keys.cap && keys.v[s].sig;
                 s = (s + 1) & (keys.cap - 1))
                if (keys.v[s].sig_hash == k.sig_hash && keys.v[s].len == k.len &&
                    memcmp(keys.v[s].sig, k.sig, k.len) == 0) {
                    seen = &keys.v[s];
                    break;
                }
            if (seen) {
                if (seen->src_hash != k.src_hash) {
                    if (keys.clashes++ < 5)
                        fprintf(stderr, "  one signature, two sources: '%s' and '%s'\n", seen->what, k.what);
                    CHECK(seen->src_hash == k.src_hash);
                }
                free(k.sig);
                continue;
            }
            key_insert(k);
        }
}

static void key_free(void)
{
    for (size_t i = 0; i < keys.cap; i++) free(keys.v[i].sig);
    free(keys.v);
    memset(&keys, 0, sizeof keys);
}

/* A sweep for key_check over what decides a kernel's form: the expression (element-wise,
 * reductions to one value, along rows and down columns, arg reductions, a reduction
 * broadcast back, several passes, a variance in one or two passes), the input's and the
 * output's dtypes, stochastic rounding, the shape (lanes or none, a worker's count, 32-bit
 * or 64-bit indices through a broadcast domain of 2^32 points), the input's layout
 * (contiguous, transposed, every other column, broadcast down the rows) and the knobs read
 * while a kernel is prepared (KILN_REDUCE_ROWFILL, KILN_REDUCE_COLVEC, KILN_VAR_PASSES). */
static void test_kernel_keys(void)
{
    if (!kiln__cuda_kernel_signature || !kiln__cuda_kernel_source) {
        printf("kernel keys: the library has no CUDA backend: skipped\n");
        return;
    }
    static const kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64,
                                     KILN_DTYPE_I8,  KILN_DTYPE_U8,  KILN_DTYPE_I32};
    static const int64_t shapes[][2] = {{3, 1000}, {5, 9000}, {4096, 64}, {30000, 6},   {2, 50001},
                                        {7, 1},    {1, 7},    {64, 40},   {1 << 26, 64}};
    static const char *const rowfill[] = {NULL, "1"}, *const colvec[] = {NULL, "0", "force"},
                             *const passes[] = {NULL, "1", "2"};
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]), huge = nshapes - 1;
    int plans = 0;
    for (int it = 0; it < 2500; it++) {
        int kind = (int)(check_rand_u64(&seed) % 12);
        int huge_ok = kind == 1 || kind == 4 || kind == 9 || kind == 10; /* to a few values: no 2^32-point output */
        int si = (int)(check_rand_u64(&seed) % (uint64_t)(huge_ok ? nshapes : nshapes - 1));
        kiln_dtype in = dts[check_rand_u64(&seed) % 7];
        int view = si == huge ? 3 : (int)(check_rand_u64(&seed) % 4);
        int64_t R = shapes[si][0], C = shapes[si][1];
        const char *rf = rowfill[check_rand_u64(&seed) % 2], *cv = colvec[check_rand_u64(&seed) % 3],
                   *vp = passes[check_rand_u64(&seed) % 3];
        if (rf)
            setenv("KILN_REDUCE_ROWFILL", rf, 1);
        else
            unsetenv("KILN_REDUCE_ROWFILL");
        if (cv)
            setenv("KILN_REDUCE_COLVEC", cv, 1);
        else
            unsetenv("KILN_REDUCE_COLVEC");
        if (vp)
            setenv("KILN_VAR_PASSES", vp, 1);
        else
            unsetenv("KILN_VAR_PASSES");
        /* x: R x C of dtype `in`, through one of four layouts */
        kiln_tensor *base = NULL, *x = NULL;
        if (view == 0) {
            int64_t sh[2] = {R, C};
            CHECK_OK(ctx, kiln_tensor_empty(ctx, in, 2, sh, &base));
            x = kiln_tensor_retain(base);
        } else if (view == 1) {
            int64_t sh[2] = {C, R};
            CHECK_OK(ctx, kiln_tensor_empty(ctx, in, 2, sh, &base));
            CHECK_OK(ctx, kiln_tensor_transpose(base, 0, 1, &x));
        } else if (view == 2) {
            int64_t sh[2] = {R, 2 * C};
            kiln_slice s[2] = {KILN_SLICE_ALL, KILN_SLICE_STEP(KILN_NONE, KILN_NONE, 2)};
            CHECK_OK(ctx, kiln_tensor_empty(ctx, in, 2, sh, &base));
            CHECK_OK(ctx, kiln_tensor_slice(base, 2, s, &x));
        } else {
            int64_t sh[2] = {1, C}, to[2] = {R, C};
            CHECK_OK(ctx, kiln_tensor_empty(ctx, in, 2, sh, &base));
            CHECK_OK(ctx, kiln_tensor_broadcast_to(base, 2, to, &x));
        }
        int is_float = in == KILN_DTYPE_F32 || in == KILN_DTYPE_F16 || in == KILN_DTYPE_BF16 || in == KILN_DTYPE_F64;
        kiln_dtype out = is_float && check_rand_u64(&seed) % 2 ? in : KILN_DTYPE_F32;
        if (in == KILN_DTYPE_F64) out = KILN_DTYPE_F64;
        int axis0[1] = {0}, axis1[1] = {1};
        int64_t osh[2] = {R, C};
        int ond = 2;
        kiln_expr *e;
        switch (kind) {
        case 0: e = kiln_mul(kiln_exp(kiln_t(x)), kiln_t(x)); break;
        case 1:
            e = kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 0, NULL, 0);
            ond = 0;
            break;
        case 2:
            e = kiln_reduce(KILN_REDUCE_MAX, kiln_t(x), 1, axis1, 0);
            ond = 1;
            break;
        case 3:
            e = kiln_reduce(KILN_REDUCE_ARGMAX, kiln_t(x), 1, axis1, 0);
            ond = 1;
            out = KILN_DTYPE_I32;
            break;
        case 4:
            e = kiln_reduce(KILN_REDUCE_VAR, kiln_t(x), 1, axis0, 0);
            ond = 1;
            osh[0] = C;
            break;
        case 5: e = kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1)); break;
        case 6:
            e = kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(x), 0), kiln_scalar(1e-5))),
                         kiln_sub(kiln_t(x), kiln_mean(kiln_t(x), 0)));
            break;
        case 7:
            e = kiln_div(kiln_exp(kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1))),
                         kiln_sum(kiln_exp(kiln_sub(kiln_t(x), kiln_max(kiln_t(x), 1))), 1));
            break;
        case 8:
            e = kiln_reduce(KILN_REDUCE_ARGMIN, kiln_t(x), 1, axis0, 0);
            ond = 1;
            osh[0] = C;
            out = KILN_DTYPE_I32;
            break;
        case 10: /* a product down columns (the same trees as a sum, another functor) */
            e = kiln_reduce(KILN_REDUCE_PROD, kiln_t(x), 1, axis0, 0);
            ond = 1;
            osh[0] = C;
            break;
        case 11: /* the math library's functions, one of each family */
            e = kiln_add(kiln_mul(kiln_erf(kiln_t(x)), kiln_log1p(kiln_abs(kiln_t(x)))),
                         kiln_add(kiln_floor(kiln_t(x)), kiln_sin(kiln_t(x))));
            break;
        default:
            e = kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 1, axis0, 0);
            ond = 1;
            osh[0] = C;
            break;
        }
        kiln_round round = (out == KILN_DTYPE_F16 || out == KILN_DTYPE_BF16) && check_rand_u64(&seed) % 2
                               ? KILN_ROUND_STOCHASTIC
                               : KILN_ROUND_DEFAULT;
        kiln_tensor *dst = NULL;
        CHECK_OK(ctx, kiln_tensor_empty(ctx, out, ond, osh, &dst));
        kiln_plan *p = NULL;
        if (dst) CHECK_OK(ctx, kiln__plan_build(dst, e, round, &p));
        char what[96];
        snprintf(what, sizeof what, "sweep %d (kind %d, %s -> %s%s, %lldx%lld, layout %d, %s/%s/%s)", it, kind,
                 kiln_dtype_name(in), kiln_dtype_name(out), round == KILN_ROUND_STOCHASTIC ? " SR" : "", (long long)R,
                 (long long)C, view, rf ? rf : "-", cv ? cv : "-", vp ? vp : "-");
        if (p) {
            key_check(p, what);
            plans++;
        }
        kiln__plan_free(p);
        kiln_expr_release(e);
        kiln_tensor_release(dst);
        kiln_tensor_release(x);
        kiln_tensor_release(base);
    }
    unsetenv("KILN_REDUCE_ROWFILL");
    unsetenv("KILN_REDUCE_COLVEC");
    unsetenv("KILN_VAR_PASSES");
    printf("kernel keys: %d plans swept\n", plans);
}

static void test_random_forms(void)
{
    static const int64_t sizes[5] = {1, 2, 3, 5, 7};
    int failures = 0;
    for (int it = 0; it < 300 && failures < 3; it++) {
        /* every other form with its variances in one pass (RED_VAR), planned, run and compiled */
        if (it & 1)
            setenv("KILN_VAR_PASSES", "1", 1);
        else
            unsetenv("KILN_VAR_PASSES");
        fz z;
        memset(&z, 0, sizeof z);
        int nd = 1 + fz_rand(3);
        int64_t S[KILN_MAX_DIMS];
        for (int i = 0; i < nd; i++) S[i] = sizes[fz_rand(5)];
        if (fz_rand(4) == 0) S[fz_rand(nd)] = 300 + fz_rand(800); /* past one CPU block */
        harr ref;
        kiln_expr *e = fz_gen(&z, nd, S, 2 + fz_rand(3), &ref);
        /* the destination: fresh, a transposed view, or (in place) a leaf of shape S */
        kiln_tensor *dst = NULL;
        int mode = fz_rand(3);
        if (mode == 2) {
            for (int l = 0; l < z.nleaves; l++)
                if (z.lh[l].nd == nd && memcmp(z.lh[l].sh, S, sizeof(int64_t) * (size_t)nd) == 0 &&
                    kiln_tensor_dtype(z.leaves[l]) == KILN_DTYPE_F64) {
                    if (fz_rand(2)) {
                        dst = kiln_tensor_retain(z.leaves[l]);
                    } else { /* the leaf's storage through another mapping: reversed rows */
                        kiln_slice rev = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1);
                        CHECK_OK(ctx, kiln_tensor_slice(z.leaves[l], 1, &rev, &dst));
                        mode = 3;
                    }
                    break;
                }
        }
        if (!dst && mode >= 1 && nd == 2) {
            int64_t tsh[2] = {S[1], S[0]};
            kiln_tensor *base = NULL;
            CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F64, 2, tsh, NAN, &base));
            CHECK_OK(ctx, kiln_tensor_transpose(base, 0, 1, &dst));
            kiln_tensor_release(base);
        }
        if (!dst) CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F64, nd, S, NAN, &dst));
        if (kiln__cuda_kernel_source) { /* stochastic rounding too, for its generator paths */
            kiln_plan *p = NULL;
            CHECK_OK(ctx, kiln__plan_build(dst, e, fz_rand(2) ? KILN_ROUND_STOCHASTIC : KILN_ROUND_DEFAULT, &p));
            if (p) {
                char what[48];
                snprintf(what, sizeof what, "random form %d", it);
                key_check(p, what);
                compile_plan(p, it);
            }
            kiln__plan_free(p);
        }
        kiln_expr_retain(e);
        kiln_status st = kiln_assign(dst, e);
        CHECK_OK(ctx, st);
        int64_t n = h_numel(nd, S);
        double *got = malloc((size_t)n * sizeof *got);
        CHECK_OK(ctx, kiln_tensor_read(dst, got, KILN_DTYPE_F64));
        int bad = 0;
        for (int64_t f = 0; f < n; f++) {
            int64_t idx[KILN_MAX_DIMS];
            h_unflat(f, nd, S, idx);
            double r = ref.v[h_at(&ref, nd, idx)];
            double tol = 1e-4 * (fabs(r) > 1 ? fabs(r) : 1);
            if (!(fabs(got[f] - r) <= tol)) {
                if (!bad)
                    fprintf(stderr, "random form %d (mode %d): [%lld] got %.17g want %.17g\n", it, mode, (long long)f,
                            got[f], r);
                bad++;
            }
        }
        CHECK_INT(bad, 0);
        if (bad || st != KILN_OK) {
            failures++;
            kiln_plan *p = NULL;
            if (kiln__plan_build(dst, e, KILN_ROUND_DEFAULT, &p) == KILN_OK) {
                char line[4096];
                kiln__plan_describe(p, line, sizeof line);
                fprintf(stderr, "  %s\n", line);
                kiln__plan_free(p);
            }
        }
        kiln_expr_release(e);
        free(got);
        free(ref.v);
        kiln_tensor_release(dst);
        for (int l = 0; l < z.nleaves; l++) {
            kiln_tensor_release(z.leaves[l]);
            free(z.lh[l].v);
        }
    }
    unsetenv("KILN_VAR_PASSES");
}

/* The one-pass variance's rule for a GPU-like memory (kiln__var_one_pass_columns, what the
 * CUDA backend asks with its L2's size): down columns from 1024 rows, of f32 at any size, of
 * others past the cache; and written out (not broadcast back), f16 / bf16 / f32 from 256 rows. */
static void test_var_one_pass_rule(void)
{
    const double l2 = 50.0 * 1024 * 1024;
    struct {
        kiln_dtype dt;
        int ndim;
        int64_t shape[3];
        uint32_t mask;
        int want;
    } c[] = {
        {KILN_DTYPE_F32, 2, {8192, 8192}, 1, 1},    {KILN_DTYPE_F16, 2, {65536, 1024}, 1, 1},
        {KILN_DTYPE_F32, 2, {8192, 8192}, 2, 0},    {KILN_DTYPE_F16, 2, {4096, 4096}, 1, 0},
        {KILN_DTYPE_F32, 2, {1024, 65536}, 1, 1},   {KILN_DTYPE_F16, 2, {256, 8192}, 1, 0},
        {KILN_DTYPE_F32, 2, {1023, 65536}, 1, 0},   {KILN_DTYPE_F16, 2, {1024, 65536}, 1, 1},
        {KILN_DTYPE_F16, 2, {1023, 65536}, 1, 0},   {KILN_DTYPE_F16, 2, {2048, 65536}, 1, 1},
        {KILN_DTYPE_F32, 2, {1536, 32768}, 1, 1},   {KILN_DTYPE_F16, 2, {1536, 32768}, 1, 1},
        {KILN_DTYPE_F32, 2, {4096, 512}, 1, 1},     {KILN_DTYPE_F32, 2, {1024, 16}, 1, 1},
        {KILN_DTYPE_F32, 2, {1023, 4096}, 1, 0},    {KILN_DTYPE_F16, 2, {16384, 1024}, 1, 0},
        {KILN_DTYPE_BF16, 2, {100000, 512}, 1, 1},  {KILN_DTYPE_F64, 2, {2048, 1024}, 1, 0},
        {KILN_DTYPE_I32, 2, {4096, 512}, 1, 0},
        {KILN_DTYPE_F32, 3, {64, 128, 4096}, 3, 1}, {KILN_DTYPE_F32, 3, {8192, 8192, 1}, 1, 1},
        {KILN_DTYPE_F32, 3, {8192, 8192, 1}, 2, 0}, {KILN_DTYPE_F32, 3, {8192, 8, 1024}, 4, 0},
        {KILN_DTYPE_F32, 2, {2047, 65536}, 1, 1},   {KILN_DTYPE_F32, 2, {2048, 65536}, 1, 1},
        {KILN_DTYPE_F64, 2, {4096, 2048}, 1, 1},    {KILN_DTYPE_F32, 0, {0}, 0, 0},
        {KILN_DTYPE_F32, 2, {1, 1}, 3, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int got = kiln__var_one_pass_columns(c[i].dt, c[i].ndim, c[i].shape, c[i].mask, l2, 0);
        if (got != c[i].want) fprintf(stderr, "  var one-pass rule case %zu: %d, want %d\n", i, got, c[i].want);
        CHECK(got == c[i].want);
    }
    /* written out: f16 / bf16 / f32 from 256 rows at any size; broadcast back (back), only f32 and
     * what outgrows the cache, from 1024 rows */
    struct {
        kiln_dtype dt;
        int64_t shape[2];
        uint32_t mask;
        int written, back; /* the rule's answer written out and broadcast back */
    } w[] = {
        {KILN_DTYPE_F16, {4096, 4096}, 1, 1, 0}, /* 32 MB, in the L2 */
        {KILN_DTYPE_BF16, {2048, 8192}, 1, 1, 0},
        {KILN_DTYPE_F16, {2047, 8192}, 1, 1, 0},
        {KILN_DTYPE_F16, {1024, 16384}, 1, 1, 0},
        {KILN_DTYPE_F16, {50000, 64}, 1, 1, 0},
        {KILN_DTYPE_F16, {4096, 4096}, 2, 0, 0}, /* along rows */
        {KILN_DTYPE_F64, {4096, 512}, 1, 0, 0},
        {KILN_DTYPE_I8, {4096, 512}, 1, 0, 0},
        {KILN_DTYPE_I32, {4096, 512}, 1, 0, 0},
        {KILN_DTYPE_F32, {4096, 512}, 1, 1, 1}, /* f32 at any size from 1024 rows */
        {KILN_DTYPE_F16, {1024, 65536}, 1, 1, 1}, /* 128 MB, past the L2 */
        {KILN_DTYPE_F16, {256, 8192}, 1, 1, 0},
        {KILN_DTYPE_F16, {255, 8192}, 1, 0, 0},
        {KILN_DTYPE_F32, {256, 65536}, 1, 1, 0}, /* f32 below 1024 rows */
        {KILN_DTYPE_F32, {255, 65536}, 1, 0, 0},
        {KILN_DTYPE_BF16, {512, 8192}, 1, 1, 0},
        {KILN_DTYPE_F64, {512, 8192}, 1, 0, 0},
        {KILN_DTYPE_I32, {512, 8192}, 1, 0, 0},
        {KILN_DTYPE_F32, {8192, 512}, 2, 0, 0},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        int got = kiln__var_one_pass_columns(w[i].dt, 2, w[i].shape, w[i].mask, l2, 1);
        int bcast = kiln__var_one_pass_columns(w[i].dt, 2, w[i].shape, w[i].mask, l2, 0);
        if (got != w[i].written || bcast != w[i].back)
            fprintf(stderr, "  var one-pass rule, case %zu: written out %d, broadcast back %d; want %d, %d\n", i, got,
                    bcast, w[i].written, w[i].back);
        CHECK_INT(got, w[i].written);
        CHECK_INT(bcast, w[i].back);
    }
}

int main(void)
{
    seed = check_seed();
    kiln_status st = kiln_ctx_create(&ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "no context: %s\n", kiln_last_error(NULL));
        return 1;
    }
    test_batchnorm();
    test_axis0_and_mixed();
    test_cse_and_generators();
    test_inplace();
    test_limits_hash_empty();
    test_compute_type_and_errors();
    test_var_one_pass_rule();
    nvrtc_on = kiln__cuda_kernel_source && kiln_ctx_device(ctx) == KILN_DEVICE_CPU && nvrtc_ready(&nvrtc);
    test_random_forms();
    if (nvrtc_on) printf("random forms: %d kernel sources compiled by NVRTC\n", nvrtc_compiled);
    test_kernel_keys();
    if (keys.kernels)
        printf("kernel keys: %d kernels, %zu signatures, %d with one signature and two sources\n", keys.kernels, keys.n,
               keys.clashes);
    key_free();
    kiln_ctx_destroy(ctx);
    return check_finish();
}
