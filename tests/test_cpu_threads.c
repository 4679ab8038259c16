/*
 * tests/test_cpu_threads.c — the CPU backend's threads: every result is bit for bit the same
 * with 1, 2, 3 and 7 threads (contexts made with kiln_ctx_args.threads), on work big enough
 * to be shared: random kernels (tests/cpu_kernels.h's generator), reductions over every axis
 * form (row groups, and the chunked walks of few long rows, narrow columns and full
 * reductions, the latter also against an f64 reference with NaNs and ties across chunks),
 * in-place batch-norm along both axes, the RNG and stochastic rounding, the built-in GEMM
 * (KILN_CPU_GEMM=builtin). Also: a kernel that overlaps its output in another mapping runs
 * serially, two contexts working at once on two application threads, the memory limit,
 * kiln_ctx_threads and the description, and KILN_THREADS / args->threads errors.
 * Outputs are compared with memcmp; the pool's counters show that the work was shared.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, sysconf */

#include <pthread.h>
#include <unistd.h>

#include "cpu_kernels.h"

#define NT 4
static const int g_threads[NT] = {1, 2, 3, 7};
static kiln_ctx *g_ctxs[NT]; /* g_ctxs[0] is g_ctx (1 thread): random inputs live there */

/* ---- helpers -------------------------------------------------------------------------- */

/* Whether two contiguous tensors hold the same bytes; prints the first difference. */
static int same_bytes(const char *what, int threads, const kiln_tensor *ref, const kiln_tensor *got)
{
    size_t es = kiln_dtype_size(kiln_tensor_dtype(ref));
    int64_t n = kiln_tensor_numel(ref);
    CHECK_INT(kiln_tensor_numel(got), n);
    CHECK(kiln_tensor_dtype(got) == kiln_tensor_dtype(ref));
    if (n != kiln_tensor_numel(got) || n == 0) return n == kiln_tensor_numel(got);
    const unsigned char *a = kiln_tensor_data(ref), *b = kiln_tensor_data(got);
    int ok = memcmp(a, b, (size_t)n * es) == 0;
    if (!ok) {
        int64_t i = 0;
        while (memcmp(a + i * es, b + i * es, es) == 0) i++;
        double va = kiln__load_f64(a + i * es, kiln_tensor_dtype(ref)),
               vb = kiln__load_f64(b + i * es, kiln_tensor_dtype(ref));
        fprintf(stderr, "%s: %d threads differ from 1 at element %lld: %.17g vs %.17g\n", what, threads, (long long)i,
                vb, va);
    }
    CHECK(ok);
    return ok;
}

/* A tensor of ctx from host doubles. */
static kiln_tensor *from_host(kiln_ctx *ctx, kiln_dtype dt, int nd, const int64_t *shape, const double *h)
{
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, nd, shape, h, KILN_DTYPE_F64, &t));
    return t;
}

static int64_t numel_of(int nd, const int64_t *shape)
{
    int64_t n = 1;
    for (int a = 0; a < nd; a++) n *= shape[a];
    return n;
}

/* ---- random kernels ------------------------------------------------------------------- */

/* A random kernel run by each context into its own output; outputs compared bytewise. */
static void test_random_kernels(int iters)
{
    static const int64_t sizes[] = {1, 2, 3, 7, 33, 129, 517, 2049};
    for (int it = 0; it < iters; it++) {
        fz_kernel fk;
        fz_build(&fk, &g_seed, sizes, 8, 400000, it & 1);
        kiln_tensor *outs[NT] = {fk.out};
        const int64_t *oshape = kiln_tensor_shape(fk.out);
        for (int t = 0; t < NT; t++) {
            if (t > 0) outs[t] = poison_tensor(KILN_DTYPE_F64, kiln_tensor_ndim(fk.out), oshape);
            fk.b.k.out.base = kiln__tensor_base(outs[t]);
            CHECK_OK(g_ctxs[t], kiln__cpu_exec_kernel(g_ctxs[t], &fk.b.k));
        }
        char what[96];
        snprintf(what, sizeof what, "random kernel %d (rank %d, %lld points, mask 0x%x, %s, %s)", it, fk.ndim,
                 (long long)fk.numel, (unsigned)fk.mask, fk.is_row ? "row" : "full", (it & 1) ? "f64" : "f32");
        for (int t = 1; t < NT; t++) {
            same_bytes(what, g_threads[t], outs[0], outs[t]);
            kiln_tensor_release(outs[t]);
        }
        fz_release(&fk);
    }
}

/* ---- reductions through the API ------------------------------------------------------- */

/* Every reduction op over the axes listed (naxes 0: all) of x (host h, shape), in each
 * context; results compared with the 1-thread context's. */
static void reduce_all_ops(const char *name, int nd, const int64_t *shape, const double *h, kiln_dtype dt, int naxes,
                           const int *axes)
{
    kiln_tensor *x[NT];
    for (int t = 0; t < NT; t++) x[t] = from_host(g_ctxs[t], dt, nd, shape, h);
    for (int op = 0; op < KILN_REDUCE_COUNT; op++) {
        kiln_tensor *r[NT] = {0};
        for (int t = 0; t < NT; t++)
            CHECK_OK(g_ctxs[t], kiln_eval(g_ctxs[t], kiln_reduce((kiln_reduce_op)op, kiln_t(x[t]), naxes, axes, 0),
                                          KILN_DTYPE_AUTO, &r[t]));
        char what[128];
        int k = snprintf(what, sizeof what, "%s op %d axes", name, op);
        for (int a = 0; a < naxes && k < (int)sizeof what - 4; a++)
            k += snprintf(what + k, sizeof what - k, " %d", axes[a]);
        if (naxes == 0) snprintf(what + k, sizeof what - k, " all");
        for (int t = 1; t < NT; t++)
            if (r[0] && r[t]) same_bytes(what, g_threads[t], r[0], r[t]);
        for (int t = 0; t < NT; t++) kiln_tensor_release(r[t]);
    }
    for (int t = 0; t < NT; t++) kiln_tensor_release(x[t]);
}

static void test_reductions(void)
{
    /* (37, 129, 65): every subset of axes, f32 and f64, with NaNs and ties */
    {
        const int64_t shape[3] = {37, 129, 65};
        const int64_t n = numel_of(3, shape);
        double *h = malloc(sizeof(double) * (size_t)n);
        check_fill(&g_seed, h, n, -3, 3);
        for (int64_t i = 0; i < n; i += 11) h[i] = round(h[i]); /* ties */
        h[5000] = NAN;
        h[n - 7] = NAN;
        for (int dti = 0; dti < 2; dti++) {
            kiln_dtype dt = dti ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
            for (int mask = 1; mask < 8; mask++) {
                int axes[3], na = 0;
                for (int a = 0; a < 3; a++)
                    if (mask >> a & 1) axes[na++] = a;
                reduce_all_ops(dti ? "(37,129,65) f64" : "(37,129,65) f32", 3, shape, h, dt, na, axes);
            }
            reduce_all_ops("(37,129,65) all", 3, shape, h, dt, 0, NULL);
        }
        free(h);
    }
    /* few long rows, narrow and mid columns, a full reduction: the chunked walks */
    static const int64_t shapes[][2] = {{4, 150000}, {150000, 5}, {3000, 600}, {300, 1000}, {2, 70000}};
    for (int q = 0; q < 5; q++) {
        const int64_t n = shapes[q][0] * shapes[q][1];
        double *h = malloc(sizeof(double) * (size_t)n);
        check_fill(&g_seed, h, n, -2, 2);
        char name[64];
        snprintf(name, sizeof name, "(%lld, %lld)", (long long)shapes[q][0], (long long)shapes[q][1]);
        for (int a = 0; a < 2; a++) reduce_all_ops(name, 2, shapes[q], h, KILN_DTYPE_F32, 1, &a);
        reduce_all_ops(name, 2, shapes[q], h, KILN_DTYPE_F32, 0, NULL);
        free(h);
    }
}

/* The chunked walks against an f64 reference: x (4, 150000) f32 reduced along axis 1 (four
 * long rows) and its transpose's axis 0 (a narrow column reduction), with maxima tied across
 * chunks, a NaN in a late chunk, a row of -inf; and the sum of all. */
static void test_chunked_reference(void)
{
    const int64_t R = 4, C = 150000, n = R * C;
    double *h = malloc(sizeof(double) * (size_t)n);
    check_fill(&g_seed, h, n, -1, 1);
    for (int64_t i = 0; i < n; i++) h[i] = (double)(float)h[i];
    h[0 * C + 10000] = 5.0; /* row 0: tie, first wins */
    h[0 * C + 100000] = 5.0;
    h[1 * C + 5000] = 9.0; /* row 1: a NaN later is the extreme */
    h[1 * C + 120000] = NAN;
    for (int64_t j = 0; j < C; j++) h[2 * C + j] = -INFINITY; /* row 2: argmax 0, max -inf */
    h[3 * C + C - 1] = -7.0;                                  /* row 3: min at the very end */
    const int64_t shape[2] = {R, C};
    for (int t = 0; t < NT; t++) {
        kiln_ctx *ctx = g_ctxs[t];
        kiln_tensor *x = from_host(ctx, KILN_DTYPE_F32, 2, shape, h), *xt = NULL;
        CHECK_OK(ctx, kiln_tensor_transpose(x, 0, 1, &xt)); /* (C, R): reduce axis 0 */
        for (int colstyle = 0; colstyle < 2; colstyle++) {
            kiln_tensor *src = colstyle ? xt : x;
            const int ax = colstyle ? 0 : 1;
            const kiln_reduce_op ops[5] = {KILN_REDUCE_SUM, KILN_REDUCE_MAX, KILN_REDUCE_MIN, KILN_REDUCE_ARGMAX,
                                           KILN_REDUCE_ARGMIN};
            for (int q = 0; q < 5; q++) {
                kiln_tensor *r = NULL;
                CHECK_OK(ctx, kiln_eval(ctx, kiln_reduce(ops[q], kiln_t(src), 1, &ax, 0), KILN_DTYPE_AUTO, &r));
                if (!r) continue;
                double got[4], want[4];
                CHECK_OK(ctx, kiln_tensor_read(r, got, KILN_DTYPE_F64));
                /* a sum's tolerance: 1e-4 of the result, plus f32 rounding of the partial sums,
                 * 4e-8 of the row's sum of |values| (150 000 values in [-1, 1] that cancel to ~0.5
                 * came out 1.2e-4 off at KILN_TEST_SEED=2287539016480885689, the bound 3e-3) */
                double sum_tol = 1e-4;
                for (int64_t i = 0; i < R; i++) {
                    double a = 0;
                    for (int64_t j = 0; j < C; j++) a += fabs(h[i * C + j]);
                    if (isfinite(a)) sum_tol = fmax(sum_tol, 1e-4 + 4e-8 * a);
                }
                for (int64_t i = 0; i < R; i++) {
                    double s = 0, mx = -INFINITY, mn = INFINITY;
                    int64_t amx = 0, amn = 0;
                    int nan = 0;
                    for (int64_t j = 0; j < C; j++) {
                        double v = h[i * C + j];
                        s += v;
                        if (nan) continue;
                        if (isnan(v)) {
                            nan = 1;
                            amx = amn = j;
                            continue;
                        }
                        if (v > mx) mx = v, amx = j;
                        if (v < mn) mn = v, amn = j;
                    }
                    want[i] = q == 0 ? s : q == 1 ? (nan ? NAN : mx) : q == 2 ? (nan ? NAN : mn) : q == 3 ? amx : amn;
                }
                char what[64];
                snprintf(what, sizeof what, "chunked %s op %d, %d threads", colstyle ? "column" : "row", (int)ops[q],
                         g_threads[t]);
                check_array(what, got, want, R, q == 0 ? sum_tol : 0);
                kiln_tensor_release(r);
            }
        }
        /* sum of all: 600000 values in chunks */
        kiln_tensor *r = NULL;
        CHECK_OK(ctx, kiln_eval(ctx, kiln_reduce(KILN_REDUCE_SUM, kiln_t(x), 0, NULL, 0), KILN_DTYPE_F64, &r));
        double got = 0, want = 0;
        if (r) CHECK_OK(ctx, kiln_tensor_read(r, &got, KILN_DTYPE_F64));
        CHECK(isnan(got)); /* row 1's NaN and row 2's -inf */
        kiln_tensor_release(r);
        r = NULL;
        /* finite: rows 0 and 3 only */
        kiln_tensor *fin = NULL;
        kiln_slice rows[1] = {KILN_SLICE_STEP(0, 4, 3)};
        CHECK_OK(ctx, kiln_tensor_slice(x, 1, rows, &fin));
        CHECK_OK(ctx, kiln_eval(ctx, kiln_reduce(KILN_REDUCE_SUM, kiln_t(fin), 0, NULL, 0), KILN_DTYPE_F64, &r));
        if (r) CHECK_OK(ctx, kiln_tensor_read(r, &got, KILN_DTYPE_F64));
        for (int64_t j = 0; j < C; j++) want += h[j] + h[3 * C + j];
        CHECK_NEAR(got, want, 1e-4);
        kiln_tensor_release(r);
        kiln_tensor_release(fin);
        kiln_tensor_release(xt);
        kiln_tensor_release(x);
    }
    free(h);
}

/* ---- in-place batch-norm -------------------------------------------------------------- */

/* A = rsqrt(var(A, ax) + eps) * (A - mean(A, ax)), in place, in each context. */
/* PROD through the chunked walks: (4, 150000) f32 near 1 along rows and along its transpose's columns, against
 * f64 products; every thread count gives the same bytes. */
static void test_chunked_prod(void)
{
    const int64_t R = 4, C = 150000, n = R * C;
    double *h = malloc(sizeof(double) * (size_t)n), want[4], got[4];
    check_fill(&g_seed, h, n, 0.999, 1.001);
    for (int64_t i = 0; i < n; i += 1000) h[i] = -h[i];
    for (int64_t i = 0; i < n; i++) h[i] = (double)(float)h[i];
    for (int64_t i = 0; i < R; i++) {
        want[i] = 1;
        for (int64_t j = 0; j < C; j++) want[i] *= h[i * C + j];
    }
    const int64_t shape[2] = {R, C};
    kiln_tensor *first[2] = {0};
    for (int t = 0; t < NT; t++) {
        kiln_ctx *ctx = g_ctxs[t];
        kiln_tensor *x = from_host(ctx, KILN_DTYPE_F32, 2, shape, h), *xt = NULL;
        CHECK_OK(ctx, kiln_tensor_transpose(x, 0, 1, &xt));
        for (int colstyle = 0; colstyle < 2; colstyle++) {
            const int ax = colstyle ? 0 : 1;
            kiln_tensor *r = NULL;
            CHECK_OK(ctx, kiln_eval(ctx, kiln_reduce(KILN_REDUCE_PROD, kiln_t(colstyle ? xt : x), 1, &ax, 0),
                                    KILN_DTYPE_AUTO, &r));
            if (!r) continue;
            CHECK_OK(ctx, kiln_tensor_read(r, got, KILN_DTYPE_F64));
            char what[64];
            snprintf(what, sizeof what, "chunked %s prod, %d threads", colstyle ? "column" : "row", g_threads[t]);
            for (int64_t i = 0; i < R; i++) got[i] /= want[i]; /* relative: each factor rounds in f32 */
            double ones[4] = {1, 1, 1, 1};
            check_array(what, got, ones, R, 3e-4);
            if (t == 0)
                first[colstyle] = r;
            else {
                same_bytes(what, g_threads[t], first[colstyle], r);
                kiln_tensor_release(r);
            }
        }
        kiln_tensor_release(xt);
        kiln_tensor_release(x);
    }
    for (int c = 0; c < 2; c++) kiln_tensor_release(first[c]);
    free(h);
}

static void test_batchnorm(int64_t N, int64_t C, int ax, kiln_dtype dt)
{
    const int64_t shape[2] = {N, C}, n = N * C;
    double *h = malloc(sizeof(double) * (size_t)n);
    check_fill(&g_seed, h, n, -2, 5);
    kiln_tensor *A[NT];
    for (int t = 0; t < NT; t++) {
        A[t] = from_host(g_ctxs[t], dt, 2, shape, h);
        if (t == 0) CHECK_OK(g_ctx, kiln_tensor_read(A[0], h, KILN_DTYPE_F64)); /* as stored */
        CHECK_OK(g_ctxs[t],
                 kiln_assign(A[t], kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A[t]), ax), kiln_scalar(1e-5))),
                                            kiln_sub(kiln_t(A[t]), kiln_mean(kiln_t(A[t]), ax)))));
    }
    /* the 1-thread result against f64 */
    double *got = read_all(A[0]), *want = malloc(sizeof(double) * (size_t)n);
    const int64_t nout = ax ? N : C, nin = ax ? C : N;
    for (int64_t o = 0; o < nout; o++) {
        double m = 0, v = 0;
        for (int64_t i = 0; i < nin; i++) m += h[ax ? o * C + i : i * C + o];
        m /= (double)nin;
        for (int64_t i = 0; i < nin; i++) {
            double d = h[ax ? o * C + i : i * C + o] - m;
            v += d * d;
        }
        v /= (double)nin;
        for (int64_t i = 0; i < nin; i++) {
            int64_t q = ax ? o * C + i : i * C + o;
            want[q] = (h[q] - m) / sqrt(v + 1e-5);
        }
    }
    char what[96];
    snprintf(what, sizeof what, "batchnorm in place (%lld, %lld) axis %d %s", (long long)N, (long long)C, ax,
             kiln_dtype_name(dt));
    check_array(what, got, want, n, dt == KILN_DTYPE_F64 ? 1e-9 : dt == KILN_DTYPE_BF16 ? 1e-2 : 1e-3);
    for (int t = 1; t < NT; t++) same_bytes(what, g_threads[t], A[0], A[t]);
    for (int t = 0; t < NT; t++) kiln_tensor_release(A[t]);
    free(got);
    free(want);
    free(h);
}

/* ---- random numbers ------------------------------------------------------------------- */

static void test_rng(void)
{
    const int64_t shape[2] = {1000, 700}, few[2] = {4, 100000}, narrow[2] = {100000, 5};
    kiln_tensor *X[NT], *Y[NT], *S[NT], *Z[NT];
    for (int t = 0; t < NT; t++) {
        kiln_ctx *ctx = g_ctxs[t];
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 77));
        kiln_tensor *ones = NULL, *zeros = NULL, *zeros2 = NULL;
        CHECK_OK(ctx, kiln_tensor_ones(ctx, KILN_DTYPE_F32, 2, shape, &ones));
        CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_F32, 2, few, &zeros));
        CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_F64, 2, narrow, &zeros2));
        CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape, &X[t]));
        CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F16, 2, shape, &Y[t]));
        CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, ((int64_t[]){4, 1}), &S[t]));
        CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F64, 2, ((int64_t[]){1, 5}), &Z[t]));
        /* X = 2 rand + randn + bernoulli(0.3) + dropout(ones, 0.5) */
        CHECK_OK(ctx, kiln_assign(X[t], kiln_add(kiln_add(kiln_mul(kiln_rand(), kiln_scalar(2)), kiln_randn()),
                                                 kiln_add(kiln_bernoulli(0.3), kiln_dropout(kiln_t(ones), 0.5)))));
        /* Y (f16) = 3 randn, stochastically rounded */
        CHECK_OK(ctx, kiln_assign_ex(Y[t], kiln_mul(kiln_randn(), kiln_scalar(3)),
                                     &(kiln_assign_args){.round = KILN_ROUND_STOCHASTIC}));
        /* S = sum(zeros + randn, 1): four long rows of random numbers (chunked) */
        CHECK_OK(ctx, kiln_assign(S[t], kiln_sum(kiln_add(kiln_t(zeros), kiln_randn()), 1)));
        /* Z = max(zeros + rand, 0): a narrow column reduction of random numbers */
        CHECK_OK(ctx, kiln_assign(Z[t], kiln_max(kiln_add(kiln_t(zeros2), kiln_rand()), 0)));
        kiln_tensor_release(ones);
        kiln_tensor_release(zeros);
        kiln_tensor_release(zeros2);
    }
    for (int t = 1; t < NT; t++) {
        same_bytes("rand + randn + bernoulli + dropout", g_threads[t], X[0], X[t]);
        same_bytes("randn into f16, stochastic rounding", g_threads[t], Y[0], Y[t]);
        same_bytes("sum of randn along long rows", g_threads[t], S[0], S[t]);
        same_bytes("max of rand along columns", g_threads[t], Z[0], Z[t]);
    }
    for (int t = 0; t < NT; t++) {
        kiln_tensor_release(X[t]);
        kiln_tensor_release(Y[t]);
        kiln_tensor_release(S[t]);
        kiln_tensor_release(Z[t]);
    }
}

/* ---- GEMM ----------------------------------------------------------------------------- */

/* C = relu?(alpha A op(B) + bias) + beta C with the built-in engine in each context. */
static void gemm_case(const char *name, kiln_dtype dt, int nb, int64_t M, int64_t N, int64_t K, int trans_b, int bias,
                      int relu, double beta, kiln_round round)
{
    int64_t sa[3] = {nb, M, K}, sb[3] = {nb, trans_b ? N : K, trans_b ? K : N}, sc[3] = {nb, M, N};
    const int nd = nb > 1 ? 3 : 2, off = nb > 1 ? 0 : 1;
    const int64_t na = numel_of(nd, sa + off), nbb = numel_of(nd, sb + off), nc = numel_of(nd, sc + off);
    double *ha = malloc(sizeof(double) * (size_t)na), *hb = malloc(sizeof(double) * (size_t)nbb),
           *hc = malloc(sizeof(double) * (size_t)nc), hbias[2048];
    check_fill(&g_seed, ha, na, -1, 1);
    check_fill(&g_seed, hb, nbb, -1, 1);
    check_fill(&g_seed, hc, nc, -1, 1);
    check_fill(&g_seed, hbias, N, -1, 1);
    kiln_tensor *C[NT];
    for (int t = 0; t < NT; t++) {
        kiln_ctx *ctx = g_ctxs[t];
        kiln_tensor *A = from_host(ctx, dt, nd, sa + off, ha), *B = from_host(ctx, dt, nd, sb + off, hb);
        kiln_tensor *bv = bias ? from_host(ctx, dt, 1, &N, hbias) : NULL;
        C[t] = from_host(ctx, dt, nd, sc + off, hc);
        kiln_gemm_args args = {.trans_b = trans_b, .relu = relu, .bias = bv, .round = round};
        CHECK_OK(ctx, kiln_dot(C[t], A, B, 0.75, beta, &args));
        kiln_tensor_release(A);
        kiln_tensor_release(B);
        kiln_tensor_release(bv);
    }
    for (int t = 1; t < NT; t++) same_bytes(name, g_threads[t], C[0], C[t]);
    for (int t = 0; t < NT; t++) kiln_tensor_release(C[t]);
    free(ha);
    free(hb);
    free(hc);
}

static void test_gemm(void)
{
    CHECK(setenv("KILN_CPU_GEMM", "builtin", 1) == 0);
    gemm_case("gemm f32 517x1100x300", KILN_DTYPE_F32, 1, 517, 1100, 300, 0, 0, 0, 0.0, KILN_ROUND_NEAREST);
    gemm_case("gemm f32 B^T, bias, relu, beta", KILN_DTYPE_F32, 1, 300, 700, 129, 1, 1, 1, 0.5, KILN_ROUND_NEAREST);
    gemm_case("gemm f64 batched 3x130x517x65", KILN_DTYPE_F64, 3, 130, 517, 65, 0, 1, 0, 0.0, KILN_ROUND_NEAREST);
    gemm_case("gemm f16 SR 257x600x300", KILN_DTYPE_F16, 1, 257, 600, 300, 0, 1, 1, 0.25, KILN_ROUND_STOCHASTIC);
    gemm_case("gemm bf16 batched 2x200x1030x40", KILN_DTYPE_BF16, 2, 200, 1030, 40, 1, 0, 0, 0.0,
              KILN_ROUND_STOCHASTIC);
    CHECK(unsetenv("KILN_CPU_GEMM") == 0);
}

/* ---- the serial fallback -------------------------------------------------------------- */

/* out = big[:-1], x = big[1:] (one storage, shifted by one element): out[i] = x[i] + 0 read
 * and written in two mappings. Threads could overwrite x before another thread reads it, so
 * the interpreter runs it serially: the result is the shift, for every thread count. */
static void test_overlap_serial(void)
{
    const int64_t n = 200001;
    double *h = malloc(sizeof(double) * (size_t)n), *want = malloc(sizeof(double) * (size_t)(n - 1));
    for (int64_t i = 0; i < n; i++) h[i] = (double)i;
    for (int64_t i = 0; i < n - 1; i++) want[i] = (double)(i + 1);
    for (int t = 0; t < NT; t++) {
        kiln_tensor *big = from_host(g_ctx, KILN_DTYPE_F64, 1, &n, h), *x = NULL, *out = NULL;
        kiln_slice s1 = KILN_SLICE(1, KILN_NONE), s0 = KILN_SLICE(0, n - 1);
        CHECK_OK(g_ctx, kiln_tensor_slice(big, 1, &s1, &x));
        CHECK_OK(g_ctx, kiln_tensor_slice(big, 1, &s0, &out));
        kb b;
        kb_init(&b, 1, ((int64_t[]){n - 1}), 0, 1);
        int l = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, x, ((int[]){0})), 0, 0);
        int z = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 0.0), 0, 0);
        kb_out(&b, out, ((int[]){0}), 0, kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, l, z, 0));
        CHECK_OK(g_ctxs[t], kiln__cpu_exec_kernel(g_ctxs[t], &b.k));
        double *got = read_all(out);
        char what[64];
        snprintf(what, sizeof what, "overlapping shift, %d threads", g_threads[t]);
        check_array(what, got, want, n - 1, 0);
        free(got);
        kiln_tensor_release(x);
        kiln_tensor_release(out);
        kiln_tensor_release(big);
    }
    free(h);
    free(want);
}

/* ---- two contexts at once ------------------------------------------------------------- */

typedef struct app_thread {
    const double *h;
    int64_t N, C;
    double *out; /* N*C values of batch-norm then a GEMM's C */
    kiln_status st;
} app_thread;

/* One application thread with its own 3-thread context: batch-norm in place of (N, C), then
 * C2 = A^T A (built-in GEMM), both read back. */
static void *app_main(void *arg)
{
    app_thread *a = arg;
    kiln_ctx *ctx = NULL;
    kiln_tensor *A = NULL, *G = NULL;
    kiln_status st = kiln_ctx_create(&ctx, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .threads = 3});
    const int64_t shape[2] = {a->N, a->C}, gs[2] = {a->C, a->C};
    if (st == KILN_OK) st = kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 2, shape, a->h, KILN_DTYPE_F64, &A);
    if (st == KILN_OK)
        st = kiln_assign(A, kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), 1), kiln_scalar(1e-5))),
                                     kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1))));
    if (st == KILN_OK) st = kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, gs, &G);
    if (st == KILN_OK) st = kiln_dot(G, A, A, 1.0, 0.0, &(kiln_gemm_args){.trans_a = 1});
    if (st == KILN_OK) st = kiln_tensor_read(A, a->out, KILN_DTYPE_F64);
    if (st == KILN_OK) st = kiln_tensor_read(G, a->out + a->N * a->C, KILN_DTYPE_F64);
    if (st != KILN_OK) fprintf(stderr, "app thread: %s\n", kiln_last_error(ctx));
    kiln_tensor_release(A);
    kiln_tensor_release(G);
    kiln_ctx_destroy(ctx);
    a->st = st;
    return NULL;
}

static void test_two_app_threads(void)
{
    const int64_t N = 700, C = 300;
    double *h = malloc(sizeof(double) * (size_t)(N * C));
    check_fill(&g_seed, h, N * C, -2, 2);
    CHECK(setenv("KILN_CPU_GEMM", "builtin", 1) == 0);
    app_thread a[3];
    for (int i = 0; i < 3; i++) a[i] = (app_thread){h, N, C, malloc(sizeof(double) * (size_t)(N * C + C * C)), 0};
    app_main(&a[2]); /* alone, for reference */
    pthread_t th[2];
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, app_main, &a[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_INT(a[i].st, KILN_OK);
    for (int i = 0; i < 2; i++) CHECK(memcmp(a[i].out, a[2].out, sizeof(double) * (size_t)(N * C + C * C)) == 0);
    for (int i = 0; i < 3; i++) free(a[i].out);
    CHECK(unsetenv("KILN_CPU_GEMM") == 0);
    free(h);
}

/* ---- memory, settings, errors --------------------------------------------------------- */

/* b = a + 1 in ctx; returns the bytes the run took on top of a and b (its scratch). */
static size_t add_one(kiln_ctx *ctx, int64_t n, size_t limit_over)
{
    kiln_mem_stats s0, s1;
    kiln_tensor *a = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, &n, 2.0, &a));
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, &n, &b));
    CHECK_OK(ctx, kiln_mem_reset_peak(ctx));
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &s0));
    if (limit_over) CHECK_OK(ctx, kiln_mem_set_limit(ctx, s0.in_use + limit_over));
    char err0[512];
    snprintf(err0, sizeof err0, "%s", kiln_last_error(ctx));
    CHECK_OK(ctx, kiln_assign(b, kiln_add(kiln_t(a), kiln_scalar(1))));
    CHECK(strcmp(kiln_last_error(ctx), err0) == 0); /* the refused scratch was no failure */
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, 0));
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &s1));
    const float *v = kiln_tensor_data(b);
    CHECK(v[0] == 3.0f && v[n - 1] == 3.0f);
    kiln_tensor_release(a);
    kiln_tensor_release(b);
    return s1.peak - s0.in_use;
}

/* Under a limit that holds one worker's scratch but not seven, work still runs, on one. */
static void test_memory_limit(void)
{
    const int64_t n = 200000;
    kiln_ctx *ctx = g_ctxs[NT - 1];
    size_t one = add_one(g_ctxs[0], n, 0), seven = add_one(ctx, n, 0);
    CHECK(one > 0 && seven > 2 * one); /* (every worker has its own block buffers) */
    int64_t jobs0, jobs1, h;
    kiln__cpu_pool_stats(ctx, &jobs0, &h);
    size_t took = add_one(ctx, n, one + one / 2);
    kiln__cpu_pool_stats(ctx, &jobs1, &h);
    CHECK_INT(took, one);
    CHECK_INT(jobs1, jobs0 + 1); /* the fill of a was shared, the addition not */
}

static void test_settings(void)
{
    for (int t = 0; t < NT; t++) {
        CHECK_INT(kiln_ctx_threads(g_ctxs[t]), g_threads[t]);
        char want[32];
        snprintf(want, sizeof want, ", %d thread%s, ", g_threads[t], g_threads[t] == 1 ? "" : "s");
        CHECK(strstr(kiln_ctx_device_description(g_ctxs[t]), want) != NULL);
    }
    CHECK_INT(kiln_ctx_threads(NULL), 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int autos = cores < 1 ? 1 : cores > 64 ? 64 : (int)cores;
    const char *vals[3] = {NULL, "", "0"};
    for (int i = 0; i < 3; i++) {
        if (vals[i])
            CHECK(setenv("KILN_THREADS", vals[i], 1) == 0);
        else
            CHECK(unsetenv("KILN_THREADS") == 0);
        kiln_ctx *c = NULL;
        CHECK_OK(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}));
        CHECK_INT(kiln_ctx_threads(c), autos);
        kiln_ctx_destroy(c);
    }
    CHECK(setenv("KILN_THREADS", "5", 1) == 0);
    kiln_ctx *c = NULL;
    CHECK_OK(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}));
    CHECK_INT(kiln_ctx_threads(c), 5);
    kiln_ctx_destroy(c);
    CHECK(unsetenv("KILN_THREADS") == 0);
}

static void test_errors(void)
{
    const char *bad[] = {"abc", "-1", "257", "3x", " 2", "1.5", "99999999999999999999"};
    for (int i = 0; i < 7; i++) {
        CHECK(setenv("KILN_THREADS", bad[i], 1) == 0);
        kiln_ctx *c = NULL;
        CHECK_FAILS(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}), KILN_ERR_ARG,
                    "KILN_THREADS");
        CHECK(c == NULL);
        CHECK(strstr(kiln_last_error(NULL), bad[i]) != NULL);
        /* args->threads wins: the environment is not read */
        CHECK_OK(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .threads = 2}));
        CHECK_INT(kiln_ctx_threads(c), 2);
        kiln_ctx_destroy(c);
    }
    CHECK(unsetenv("KILN_THREADS") == 0);
    kiln_ctx *c = NULL;
    CHECK_FAILS(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .threads = -1}), KILN_ERR_ARG,
                "args->threads");
    CHECK_FAILS(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .threads = 257}), KILN_ERR_ARG,
                "args->threads");
    CHECK(c == NULL);
}

int main(void)
{
    g_seed = check_seed();
    unsetenv("KILN_THREADS");
    for (int t = 0; t < NT; t++) {
        CHECK_OK(NULL,
                 kiln_ctx_create(&g_ctxs[t],
                                 &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .seed = 1234, .threads = g_threads[t]}));
        if (!g_ctxs[t]) return check_finish();
    }
    g_ctx = g_ctxs[0];
    test_settings();
    test_errors();
    test_random_kernels(60);
    test_reductions();
    test_chunked_reference();
    test_chunked_prod();
    test_batchnorm(2048, 300, 1, KILN_DTYPE_F32);
    test_batchnorm(3, 120000, 1, KILN_DTYPE_F32);
    test_batchnorm(60000, 7, 0, KILN_DTYPE_F32);
    test_batchnorm(700, 900, 0, KILN_DTYPE_F64);
    test_batchnorm(500, 300, 1, KILN_DTYPE_BF16);
    test_rng();
    test_gemm();
    test_overlap_serial();
    test_two_app_threads();
    test_memory_limit();
    /* the work was shared: every multi-thread context ran jobs with its pool, and the pool's
     * threads ran tasks */
    int64_t helped = 0;
    for (int t = 0; t < NT; t++) {
        int64_t jobs = 0, h = 0;
        kiln__cpu_pool_stats(g_ctxs[t], &jobs, &h);
        printf("%d threads: %lld jobs shared, %lld tasks run by pool threads\n", g_threads[t], (long long)jobs,
               (long long)h);
        if (t == 0) CHECK_INT(jobs, 0);
        if (t > 0) CHECK(jobs > 0);
        helped += h;
    }
    CHECK(helped > 0);
    for (int t = NT - 1; t >= 0; t--) kiln_ctx_destroy(g_ctxs[t]);
    return check_finish();
}
