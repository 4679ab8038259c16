/*
 * tests/test_dot.c — kiln_dot on the CPU backend: C = relu?(alpha*op(A)@op(B) + bias) + beta*C.
 * Every numeric case is compared with a reference computed here in long double from the
 * values the operands actually hold, with a per-dtype error bound; operands come as
 * contiguous tensors, transposed views, strided slices and negative-step views, with both
 * trans flags, broadcast batches, bias, relu, and poisoned outputs (beta 0 over NaN C).
 * All numeric cases run twice: with the default engine (OpenBLAS when built with it) and
 * with the built-in blocked GEMM (KILN_CPU_GEMM=builtin). Then stochastic rounding (exact
 * bits against src/core/numeric.h, determinism, unbiasedness), empty sizes, every error
 * path (status, message naming the argument, C unchanged), and workspace accounting.
 * test_tiles and test_sr_tiles (exact stochastic-rounding bits across tiles and batches)
 * walk the paths of the CUDA backend's own kernel and run on every engine.
 * When KILN_DEVICE names a device (make test-gpu), the numeric and rounding cases run once
 * more on a context of that device; on CUDA twice, with KILN_GEMM=vendor and =own.
 * For runs under compute-sanitizer, which take too long whole: KILN_TEST_SECTIONS (a comma
 * list of sizes, tiles, layouts, epilogue, batches, empty, broadcast, stats, sr) runs only
 * those parts of the suite, and KILN_TEST_DEVICE_ONLY=1 leaves out the CPU passes.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"
#include "core/numeric.h"
#include "cpu/cpu.h" /* kiln__cpu_gemm, called directly for its internal checks */

static kiln_ctx *ctx;
static uint64_t rng;
static const char *engine_name = "default";

/* The parts of the suite KILN_TEST_SECTIONS may name (each numeric part with its function,
 * in the order the suite runs them; "sr" is run_sr_suite's), and how many of those ran. */
static void test_sizes(void);
static void test_tiles(void);
static void test_transposes_and_layouts(void);
static void test_outputs_and_epilogue(void);
static void test_batches(void);
static void test_empty(void);
static void test_broadcast_operands(void);
static void test_stats(void);
static void relu_zero_sign_case(kiln_dtype dt, int sr);
static const struct {
    const char *name;
    void (*numeric)(void); /* NULL: not a part of run_numeric_suite */
} sections[] = {{"sizes", test_sizes},
                {"tiles", test_tiles},
                {"layouts", test_transposes_and_layouts},
                {"epilogue", test_outputs_and_epilogue},
                {"batches", test_batches},
                {"empty", test_empty},
                {"broadcast", test_broadcast_operands},
                {"stats", test_stats},
                {"sr", NULL}};
static int sections_run;

/* Whether section `name` runs: KILN_TEST_SECTIONS unset or empty, or naming it. */
static int section_on(const char *name)
{
    const char *only = getenv("KILN_TEST_SECTIONS");
    if (!only || !only[0]) return 1;
    const size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
        if ((p == only || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

/* Every name in KILN_TEST_SECTIONS is a section (a misspelt one would pass having checked
 * nothing of it). */
static void check_sections_env(void)
{
    const char *only = getenv("KILN_TEST_SECTIONS");
    if (!only || !only[0]) return;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", only);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int known = 0;
        for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
            known |= strcmp(tok, sections[i].name) == 0;
        if (!known) fprintf(stderr, "  KILN_TEST_SECTIONS: '%s' is not one of sizes, tiles, layouts, epilogue, "
                                    "batches, empty, broadcast, stats, sr\n", tok);
        CHECK(known);
    }
}

/* The loops below walk the first LAY_COUNT layouts; LAY_PADDED (unit stride along the last
 * axis, rows 16-byte aligned and longer than the view: a partial 16-byte chunk at the end
 * of each row) is used by test_tiles. */
enum { LAY_CONTIG, LAY_TVIEW, LAY_STRIDED, LAY_NEG, LAY_COUNT, LAY_PADDED = LAY_COUNT };
static const char *lay_name[LAY_COUNT + 1] = {"contig", "tview", "strided", "negstep", "padded"};

/* ---- operands ------------------------------------------------------------------------- */

/* A view of logical shape `shape` (nd >= 1) in the layout `lay`, filled with fresh random
 * values in [-1, 1) (or NaN everywhere when poison is set). *parent (may be NULL) receives
 * a reference to the whole underlying tensor. */
static kiln_tensor *make_operand(kiln_dtype dt, int nd, const int64_t *shape, int lay, int poison, kiln_tensor **parent)
{
    int64_t ps[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) ps[i] = shape[i];
    if (nd < 2 && lay == LAY_TVIEW) lay = LAY_CONTIG;
    if (lay == LAY_TVIEW) {
        ps[nd - 2] = shape[nd - 1];
        ps[nd - 1] = shape[nd - 2];
    } else if (lay == LAY_STRIDED) {
        if (nd >= 2) ps[nd - 2] = 2 * shape[nd - 2] + 1;
        ps[nd - 1] = shape[nd - 1] + 3;
    } else if (lay == LAY_PADDED) {
        ps[nd - 1] = (shape[nd - 1] + 7) / 8 * 8 + 8;
    }
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= ps[i];
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    if (poison) {
        for (int64_t i = 0; i < n; i++) h[i] = NAN;
    } else {
        check_fill(&rng, h, n, -1.0, 1.0);
    }
    kiln_tensor *p = NULL, *v = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, nd, ps, h, KILN_DTYPE_F64, &p));
    free(h);
    if (!p) return NULL;
    kiln_slice s[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) s[i] = KILN_SLICE_ALL;
    switch (lay) {
    case LAY_TVIEW: CHECK_OK(ctx, kiln_tensor_transpose(p, nd - 2, nd - 1, &v)); break;
    case LAY_STRIDED:
        if (nd >= 2) s[nd - 2] = KILN_SLICE_STEP(1, 1 + 2 * shape[nd - 2], 2);
        s[nd - 1] = KILN_SLICE(2, 2 + shape[nd - 1]);
        CHECK_OK(ctx, kiln_tensor_slice(p, nd, s, &v));
        break;
    case LAY_NEG:
        s[nd - 1] = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1);
        CHECK_OK(ctx, kiln_tensor_slice(p, nd, s, &v));
        break;
    case LAY_PADDED:
        s[nd - 1] = KILN_SLICE(0, shape[nd - 1]);
        CHECK_OK(ctx, kiln_tensor_slice(p, nd, s, &v));
        break;
    default: v = kiln_tensor_retain(p); break;
    }
    if (parent)
        *parent = p;
    else
        kiln_tensor_release(p);
    return v;
}

/* A contiguous tensor full of value (through a host buffer). */
static kiln_tensor *filled(kiln_ctx *c, kiln_dtype dt, int nd, const int64_t *shape, double value)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = value;
    kiln_tensor *t = NULL;
    CHECK_OK(c, kiln_tensor_from_host(c, dt, nd, shape, h, KILN_DTYPE_F64, &t));
    free(h);
    return t;
}

/* The tensor's values, row-major in its shape, as f64 (malloc'd). */
static double *host_of(const kiln_tensor *t)
{
    int64_t n = kiln_tensor_numel(t);
    double *h = malloc((size_t)(n ? n : 1) * sizeof *h);
    for (int64_t i = 0; i < n; i++) h[i] = 12345.0; /* overwritten by the read */
    CHECK_OK(ctx, kiln_tensor_read(t, h, KILN_DTYPE_F64));
    return h;
}

static int same_value(double a, double b)
{
    return (isnan(a) && isnan(b)) || a == b;
}

/* ---- one numeric case ----------------------------------------------------------------- */

typedef struct gcase {
    kiln_dtype dt;
    int64_t M, N, K;
    int ta, tb;
    int la, lb, lc, lbias;
    int nba, nbb;         /* batch ranks of A and B */
    int64_t ba[3], bb[3]; /* their batch shapes (broadcast numpy-style, aligned right) */
    double alpha, beta;
    int bias, relu;
    int bias_rows; /* bias (M,), one value per row of C */
    int stats;     /* 1: f64 statistics of C, 2: f32 */
    int tight;     /* the memory cap at the bytes in use: no room for the CUDA split-K's workspace,
                    * which then runs unsplit (KILN_GEMM=own engine only) */
} gcase;

static double unit_roundoff(kiln_dtype dt)
{
    return dt == KILN_DTYPE_F64 ? 1.12e-16 : 6.0e-8;
}
static double out_rounding(kiln_dtype dt)
{
    return dt == KILN_DTYPE_F16 ? 4.9e-4 : dt == KILN_DTYPE_BF16 ? 3.91e-3 : 0.0;
}

static int run_case(const gcase *g)
{
    int failed_before = check_failed_;
    /* a tight cap only where the engine needs no counted memory of its own: kiln's CUDA
     * kernels (the CPU engines convert 16-bit operands through counted temporaries and
     * fail with KILN_ERR_OOM under it, as they should) */
    if (g->tight && !strstr(engine_name, "KILN_GEMM=own")) return 1;
    const int64_t M = g->M, N = g->N, K = g->K;
    /* batch shape of C */
    int nbc = g->nba > g->nbb ? g->nba : g->nbb;
    int64_t bc[3];
    for (int i = 0; i < nbc; i++) {
        int ia = i - (nbc - g->nba), ib = i - (nbc - g->nbb);
        int64_t da = ia >= 0 ? g->ba[ia] : 1, db = ib >= 0 ? g->bb[ib] : 1;
        bc[i] = da == 1 ? db : da; /* numpy: 1 broadcasts, 0 stays 0 */
    }
    int64_t sa[5], sb[5], sc[5];
    for (int i = 0; i < g->nba; i++) sa[i] = g->ba[i];
    for (int i = 0; i < g->nbb; i++) sb[i] = g->bb[i];
    for (int i = 0; i < nbc; i++) sc[i] = bc[i];
    sa[g->nba] = g->ta ? K : M;
    sa[g->nba + 1] = g->ta ? M : K;
    sb[g->nbb] = g->tb ? N : K;
    sb[g->nbb + 1] = g->tb ? K : N;
    sc[nbc] = M;
    sc[nbc + 1] = N;

    kiln_tensor *cparent = NULL;
    kiln_tensor *A = make_operand(g->dt, g->nba + 2, sa, g->la, 0, NULL);
    kiln_tensor *B = make_operand(g->dt, g->nbb + 2, sb, g->lb, 0, NULL);
    kiln_tensor *C = make_operand(g->dt, nbc + 2, sc, g->lc, g->beta == 0.0, &cparent);
    const int64_t nbias = g->bias_rows ? M : N;
    kiln_tensor *bias = g->bias ? make_operand(g->dt, 1, &nbias, g->lbias, 0, NULL) : NULL;
    kiln_tensor *stats = NULL;
    if (g->stats) { /* poisoned: every entry must be written */
        const int64_t two = 2;
        CHECK_OK(ctx, kiln_tensor_full(ctx, g->stats == 2 ? KILN_DTYPE_F32 : KILN_DTYPE_F64, 1, &two, NAN, &stats));
    }
    if (!A || !B || !C || (g->bias && !bias)) {
        CHECK(0);
        return 0;
    }
    double *ah = host_of(A), *bh = host_of(B), *c0 = host_of(C), *biash = bias ? host_of(bias) : NULL;
    double *p0 = host_of(cparent);

    kiln_mem_stats ms;
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &ms));
    if (g->tight) CHECK_OK(ctx, kiln_mem_set_limit(ctx, ms.in_use));
    /* a call that succeeds leaves the last error alone, also where a workspace was refused
     * under the cap and a slower way taken */
    char err0[512];
    snprintf(err0, sizeof err0, "%s", kiln_last_error(ctx));
    kiln_status st = kiln_dot(C, A, B, g->alpha, g->beta,
                              &(kiln_gemm_args){.trans_a = g->ta,
                                                .trans_b = g->tb,
                                                .relu = g->relu,
                                                .bias = bias,
                                                .bias_rows = g->bias_rows,
                                                .stats = stats});
    CHECK_OK(ctx, st);
    if (st == KILN_OK && strcmp(kiln_last_error(ctx), err0) != 0) {
        fprintf(stderr, "  kiln_dot succeeded but changed the last error to: %s\n", kiln_last_error(ctx));
        CHECK(0);
    }
    if (g->tight) CHECK_OK(ctx, kiln_mem_set_limit(ctx, ms.limit));
    double *cg = host_of(C);

    /* reference */
    int64_t nbatch = 1;
    for (int i = 0; i < nbc; i++) nbatch *= bc[i];
    const double u = unit_roundoff(g->dt), r = out_rounding(g->dt);
    /* cuBLASLt (KILN_GEMM=vendor) with beta != 0 on a 16-bit C: on the H100 (cuBLASLt 13, make
     * test-gpu of 2026-11-27, KILN_TEST_SEED=15416252953437456867) one element of f16 136 x 200
     * x 72, beta 1, came back 0.87 of C's ulp from the exact value, one ulp from the correctly
     * rounded one, as when alpha A B is rounded to C's type before beta C is added: that
     * rounding, at the product's magnitude, is allowed there as well (kiln's own engines round
     * once, and keep the tighter bound) */
    const int product_rounded = strstr(engine_name, "KILN_GEMM=vendor") && g->beta != 0.0 && r > 0.0;
    int bad = 0;
    for (int64_t b = 0; b < nbatch; b++) {
        /* batch multi-index -> A's and B's batch offsets (broadcast) */
        int64_t rem = b, boa = 0, bob = 0, mula = 1, mulb = 1;
        for (int i = nbc - 1; i >= 0; i--) {
            int64_t ix = rem % bc[i];
            rem /= bc[i];
            int ia = i - (nbc - g->nba), ib = i - (nbc - g->nbb);
            if (ia >= 0) {
                boa += (g->ba[ia] == 1 ? 0 : ix) * mula;
                mula *= g->ba[ia];
            }
            if (ib >= 0) {
                bob += (g->bb[ib] == 1 ? 0 : ix) * mulb;
                mulb *= g->bb[ib];
            }
        }
        const double *ab = ah + boa * M * K, *bb = bh + bob * K * N;
        for (int64_t m = 0; m < M; m++)
            for (int64_t n = 0; n < N; n++) {
                long double acc = 0, mag = 0;
                for (int64_t k = 0; k < K; k++) {
                    double av = g->ta ? ab[k * M + m] : ab[m * K + k];
                    double bv = g->tb ? bb[n * K + k] : bb[k * N + n];
                    acc += (long double)av * bv;
                    mag += fabsl((long double)av * bv);
                }
                long double t = (long double)g->alpha * acc;
                double bound = fabs(g->alpha) * (double)mag;
                if (biash) {
                    double bv = biash[g->bias_rows ? m : n];
                    t += bv;
                    bound += fabs(bv);
                }
                if (g->relu && t <= 0) t = 0; /* maximum(t, +0) */
                if (product_rounded) bound += fabs((double)t);
                int64_t ci = (b * M + m) * N + n;
                if (g->beta != 0.0) {
                    t += (long double)g->beta * c0[ci];
                    bound += fabs(g->beta * c0[ci]);
                }
                double ref = (double)t, got = cg[ci];
                double tol = (u * (double)(K + 8) + r * 1.01) * bound + 1e-7;
                if (!(fabs(got - ref) <= tol)) {
                    if (bad < 4)
                        fprintf(stderr, "    [%lld, %lld, %lld]: got %.10g want %.10g (tol %.3g)\n", (long long)b,
                                (long long)m, (long long)n, got, ref, tol);
                    bad++;
                }
            }
    }
    CHECK(bad == 0);

    /* the statistics: exactly those of the C that was written */
    if (stats) {
        double sv[2] = {NAN, NAN}, amax = 0.0, nonfinite = 0.0;
        CHECK_OK(ctx, kiln_tensor_read(stats, sv, KILN_DTYPE_F64));
        int64_t nc = kiln_tensor_numel(C);
        for (int64_t i = 0; i < nc; i++) {
            if (!isfinite(cg[i]))
                nonfinite += 1.0;
            else if (fabs(cg[i]) > amax)
                amax = fabs(cg[i]);
        }
        if (g->stats == 2) amax = (double)(float)amax;
        if (!(sv[0] == amax && sv[1] == nonfinite))
            fprintf(stderr, "    stats: got [%.10g, %.10g] want [%.10g, %.10g]\n", sv[0], sv[1], amax, nonfinite);
        CHECK(sv[0] == amax && sv[1] == nonfinite);
    }

    /* elements of C's parent outside the view are untouched */
    double *p1 = host_of(cparent);
    int64_t np = kiln_tensor_numel(cparent), outside_changed = 0, touched = 0;
    for (int64_t i = 0; i < np; i++) {
        if (!same_value(p0[i], p1[i])) touched++;
    }
    if (g->lc == LAY_STRIDED) {
        /* parent (batch..., 2M+1, N+3): view rows 1, 3, ..; columns 2..N+1 */
        int64_t pn = N + 3, pm = 2 * M + 1;
        for (int64_t i = 0; i < np; i++) {
            int64_t q = i % pn, rr = (i / pn) % pm;
            int in_view = (rr % 2 == 1) && q >= 2 && q < 2 + N;
            if (!in_view && !same_value(p0[i], p1[i])) outside_changed++;
        }
    } else if (g->lc == LAY_PADDED) {
        /* parent (batch..., M, pn): view columns 0..N-1 */
        int64_t pn = (N + 7) / 8 * 8 + 8;
        for (int64_t i = 0; i < np; i++)
            if (i % pn >= N && !same_value(p0[i], p1[i])) outside_changed++;
    }
    CHECK_INT(outside_changed, 0);
    (void)touched;

    if (check_failed_ != failed_before)
        fprintf(stderr,
                "  case failed [%s engine]: %s M=%lld N=%lld K=%lld ta=%d tb=%d A:%s B:%s C:%s batchA=%d batchB=%d "
                "alpha=%g beta=%g bias=%d%s relu=%d stats=%d\n",
                engine_name, kiln_dtype_name(g->dt), (long long)M, (long long)N, (long long)K, g->ta, g->tb,
                lay_name[g->la], lay_name[g->lb], lay_name[g->lc], g->nba, g->nbb, g->alpha, g->beta, g->bias,
                g->bias_rows ? " (rows)" : "", g->relu, g->stats);
    free(ah);
    free(bh);
    free(c0);
    free(biash);
    free(cg);
    free(p0);
    free(p1);
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
    kiln_tensor_release(cparent);
    kiln_tensor_release(bias);
    kiln_tensor_release(stats);
    return check_failed_ == failed_before;
}

static gcase base_case(kiln_dtype dt, int64_t M, int64_t N, int64_t K)
{
    gcase g;
    memset(&g, 0, sizeof g);
    g.dt = dt;
    g.M = M;
    g.N = N;
    g.K = K;
    g.alpha = 1.0;
    return g;
}

static const kiln_dtype all_dtypes[4] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_BF16};

/* Sizes from {1, 2, 7, 16, 33, 129}, K = 1 included, and one larger product. */
static void test_sizes(void)
{
    static const int64_t sz[][3] = {{1, 1, 1},    {1, 7, 2},     {7, 1, 16},   {2, 2, 1},    {7, 16, 33},
                                    {16, 7, 129}, {33, 129, 1},  {129, 33, 7}, {129, 2, 16}, {2, 129, 33},
                                    {16, 16, 16}, {33, 33, 129}, {1, 129, 129}};
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++)
        for (int d = 0; d < 4; d++) {
            gcase g = base_case(all_dtypes[d], sz[i][0], sz[i][1], sz[i][2]);
            g.alpha = (i % 3 == 0) ? 1.0 : (i % 3 == 1) ? -0.75 : 2.5;
            g.beta = (i % 2) ? 0.0 : 0.5;
            run_case(&g);
        }
    for (int d = 0; d < 4; d++) {
        gcase g = base_case(all_dtypes[d], 257, 129, 300);
        g.beta = -1.25;
        g.alpha = 0.5;
        g.bias = 1;
        g.ta = d & 1;
        run_case(&g);
    }
}

/* All four transposes through the flags and through views, with every operand layout. */
static void test_transposes_and_layouts(void)
{
    for (int d = 0; d < 4; d++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int la = 0; la < LAY_COUNT; la++)
                    for (int lb = 0; lb < LAY_COUNT; lb++) {
                        gcase g = base_case(all_dtypes[d], 7, 33, 16);
                        g.ta = ta;
                        g.tb = tb;
                        g.la = la;
                        g.lb = lb;
                        g.lc = (la + lb + ta) % LAY_COUNT;
                        g.beta = ((la + tb) % 2) ? 0.0 : 1.0;
                        run_case(&g);
                    }
}

/* C in every layout, with and without bias (per column or per row) / relu, beta 0 (over
 * NaN) and not, with and without statistics of C. */
static void test_outputs_and_epilogue(void)
{
    static const double alphas[3] = {1.0, -0.5, 2.25}, betas[3] = {0.0, 1.0, -1.5};
    for (int d = 0; d < 4; d++)
        for (int lc = 0; lc < LAY_COUNT; lc++)
            for (int ab = 0; ab < 9; ab++)
                for (int br = 0; br < 6; br++) {
                    gcase g = base_case(all_dtypes[d], 33, 16, 7 + ab);
                    g.lc = lc;
                    g.alpha = alphas[ab % 3];
                    g.beta = betas[ab / 3];
                    g.bias = (br & 1) || br >= 4;
                    g.relu = (br >> 1) & 1;
                    g.bias_rows = br >= 4;        /* a bias per row, with and without ReLU */
                    g.stats = (br + ab + lc) % 3; /* none, f64, f32 */
                    if (br == 5) g.relu = 1;
                    g.lbias = (ab & 1) ? LAY_NEG : LAY_CONTIG;
                    g.la = ab % LAY_COUNT;
                    run_case(&g);
                }
    for (int d = 0; d < 4; d++)
        for (int sr = 0; sr < (all_dtypes[d] == KILN_DTYPE_F16 || all_dtypes[d] == KILN_DTYPE_BF16 ? 2 : 1); sr++)
            relu_zero_sign_case(all_dtypes[d], sr);
}

/* ReLU's zeros are +0: maximum(t, +0) for every t <= 0, -0 included. Rows m % 3 == 1 of A are
 * zeros, so there t = alpha * (+0) = -0 with alpha < 0; every element of C that is zero must
 * have its sign bit clear, and those rows must be zeros. Every engine, the vendor's too
 * (cuBLASLt's ReLU epilogue gave +0 for t = -0 and t < 0 in f16, bf16 and f32, with and without
 * a bias, on the H100: bench/NOTES.md step 45). */
static void relu_zero_sign_case(kiln_dtype dt, int sr)
{
    const int64_t M = 130, N = 72, K = 40;
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    double *ah = malloc(sizeof(double) * M * K), *bh = malloc(sizeof(double) * K * N), *ch = malloc(sizeof(double) * M * N);
    for (int64_t i = 0; i < M * N; i++) ch[i] = NAN; /* poisoned: beta 0 never reads it */
    for (int64_t i = 0; i < M * K; i++)
        ah[i] = (i / K) % 3 == 1 ? 0.0 : (double)((int)(check_rand_u64(&rng) % 61) - 30) / 8.0;
    for (int64_t i = 0; i < K * N; i++) bh[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30) / 8.0;
    kiln_tensor *A = NULL, *B = NULL, *C = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sa, ah, KILN_DTYPE_F64, &A));
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sb, bh, KILN_DTYPE_F64, &B));
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sc, ch, KILN_DTYPE_F64, &C));
    const kiln_gemm_args args = {.relu = 1, .round = sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST};
    CHECK_OK(ctx, kiln_dot(C, A, B, -0.75, 0.0, &args));
    double *got = host_of(C);
    int negative_zeros = 0, bad = 0, zeros = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            const double v = got[m * N + n];
            zeros += v == 0.0;
            if (v == 0.0 && signbit(v)) negative_zeros++;
            if ((m % 3 == 1 && v != 0.0) || v < 0.0 || isnan(v)) {
                if (bad++ < 3)
                    fprintf(stderr, "    relu zeros %s %s sr=%d [%lld, %lld]: got %g\n", engine_name,
                            kiln_dtype_name(dt), sr, (long long)m, (long long)n, v);
            }
        }
    CHECK_INT(bad, 0);
    CHECK(zeros > M * N / 3); /* the zero rows and about half of the others */
    if (negative_zeros)
        fprintf(stderr, "    relu zeros %s %s sr=%d: %d zeros of %d are -0\n", engine_name, kiln_dtype_name(dt), sr,
                negative_zeros, zeros);
    CHECK_INT(negative_zeros, 0);
    free(got);
    free(ah);
    free(bh);
    free(ch);
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
}

/* Broadcast batches: A batched with B shared, B batched with A shared, both broadcast. */
static void test_batches(void)
{
    for (int d = 0; d < 4; d++)
        for (int form = 0; form < 5; form++)
            for (int lay = 0; lay < LAY_COUNT; lay++) {
                gcase g = base_case(all_dtypes[d], 7, 16, 33);
                switch (form) {
                case 0: /* A (2, 3, M, K), B (K, N) */ g.nba = 2, g.ba[0] = 2, g.ba[1] = 3; break;
                case 1: /* A (M, K), B (3, K, N) */ g.nbb = 1, g.bb[0] = 3; break;
                case 2: /* A (2, 1, M, K), B (3, K, N) -> (2, 3) */
                    g.nba = 2, g.ba[0] = 2, g.ba[1] = 1;
                    g.nbb = 1, g.bb[0] = 3;
                    break;
                case 3: /* A (4, M, K), B (4, K, N) */
                    g.nba = 1, g.ba[0] = 4;
                    g.nbb = 1, g.bb[0] = 4;
                    break;
                default: /* A (1, 2, M, K), B (3, 1, K, N) with beta and bias */
                    g.nba = 3, g.ba[0] = 1, g.ba[1] = 2, g.ba[2] = 1;
                    g.nbb = 3, g.bb[0] = 3, g.bb[1] = 1, g.bb[2] = 2;
                    g.bias = 1;
                    g.beta = 0.75;
                    break;
                }
                g.la = lay;
                g.lb = (lay + 1) % LAY_COUNT;
                g.lc = (lay + form) % LAY_COUNT;
                g.ta = form & 1;
                g.tb = lay & 1;
                g.relu = form == 2;
                run_case(&g);
            }
}

/* K = 0: C = relu?(bias) + beta*C; M, N or a batch axis of 0: nothing happens. */
static void test_empty(void)
{
    for (int d = 0; d < 4; d++) {
        gcase g = base_case(all_dtypes[d], 7, 16, 0);
        run_case(&g);
        g.bias = 1;
        g.relu = 1;
        g.beta = -0.5;
        run_case(&g);
        g.beta = 0.0;
        g.lc = LAY_STRIDED;
        run_case(&g);
        g = base_case(all_dtypes[d], 0, 16, 5);
        run_case(&g);
        g = base_case(all_dtypes[d], 7, 0, 5);
        g.beta = 1.0;
        run_case(&g);
        g = base_case(all_dtypes[d], 7, 3, 5);
        g.nba = 1;
        g.ba[0] = 0;
        run_case(&g);
    }
}

/* Shapes and layouts that walk every path of the CUDA backend's own GEMM kernels
 * (src/cuda/gemm_wgmma.c and gemm_mma.c, KILN_GEMM=own and =mma): whole 128 x 128 x 32
 * tiles; more work items than an H100 has SMs (the wgmma kernel's persistent loop, its ring
 * of stages wrapping across items, 64-, 128-, 192- and 256-wide tiles; split-K with its workspace,
 * arrival counters and ordered sums, and summed in a cluster); ragged M, N and K
 * (1, 7, 129, 1000); the four transposes with 16-byte aligned rows (16-byte cp.async into
 * K-major and MN-major tiles); padded rows whose length is not a multiple of 8 (partial
 * chunks); strided and negative-step views (element by element); strided and broadcast
 * batches; bias, relu and beta. f16 and bf16 only (the kernel's dtypes); every engine runs
 * them, so the CPU paths check the same shapes. */
static void test_tiles(void)
{
    static const kiln_dtype dts[2] = {KILN_DTYPE_F16, KILN_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = dts[d];
        gcase g = base_case(dt, 256, 256, 512); /* whole tiles */
        run_case(&g);
        g = base_case(dt, 130, 257, 1000); /* ragged everywhere, the whole epilogue */
        g.ta = d;
        g.alpha = -0.75;
        g.beta = 0.5;
        g.bias = 1;
        g.relu = 1;
        run_case(&g);
        for (int t = 0; t < 4; t++) {
            g = base_case(dt, 136, 200, 72); /* rows of 72, 136 or 200 elements: 16-byte multiples */
            g.ta = t & 1;
            g.tb = t >> 1;
            g.lc = t == 1 ? LAY_PADDED : LAY_CONTIG;
            g.beta = t == 2 ? 1.0 : 0.0;
            run_case(&g);
            g = base_case(dt, 129, 135, 70); /* padded rows: partial 16-byte chunks */
            g.ta = t & 1;
            g.tb = t >> 1;
            g.la = g.lb = LAY_PADDED;
            g.lc = t == 3 ? LAY_PADDED : LAY_CONTIG;
            g.bias = t == 0;
            run_case(&g);
        }
        static const int64_t ragged[][3] = {{1, 1000, 7}, {1000, 7, 129}, {7, 129, 1000}, {129, 1, 33}, {1, 1, 1}};
        for (size_t i = 0; i < sizeof ragged / sizeof ragged[0]; i++) {
            g = base_case(dt, ragged[i][0], ragged[i][1], ragged[i][2]);
            g.ta = (int)i & 1;
            g.tb = (int)(i >> 1) & 1;
            g.la = i == 2 ? LAY_STRIDED : LAY_CONTIG;
            g.lb = i == 3 ? LAY_NEG : LAY_CONTIG;
            run_case(&g);
        }
        g = base_case(dt, 40, 136, 64); /* A (3, M, K): batch stride a 16-byte multiple; B shared */
        g.nba = 1;
        g.ba[0] = 3;
        g.bias = 1;
        run_case(&g);
        g = base_case(dt, 40, 136, 64); /* A (2, 1, K, M) with trans_a, B (3, K, N) padded */
        g.nba = 2, g.ba[0] = 2, g.ba[1] = 1;
        g.nbb = 1, g.bb[0] = 3;
        g.ta = 1;
        g.lb = LAY_PADDED;
        g.beta = -0.5;
        g.relu = 1;
        run_case(&g);
        g = base_case(dt, 2000, 2100, 8); /* 16 x 9 tiles of 128 x 256: 144 items */
        g.tb = d;
        g.bias = 1;
        run_case(&g);
        g = base_case(dt, 20000, 100, 16); /* 157 tiles of 128 x 128 */
        g.ta = 1;
        g.beta = 0.5;
        run_case(&g);
        /* one row of tiles, 288 of 128 on an H100: the rule's 192-wide tiles (fc36864 bprop's
         * N), then forced 192-wide (KILN_WGMMA_BN=192) on a ragged, transposed shape */
        g = base_case(dt, 128, 36864, 64);
        g.bias = 1;
        run_case(&g);
        setenv("KILN_WGMMA_BN", "192", 1);
        g = base_case(dt, 130, 457, 300);
        g.ta = 1 - d;
        g.tb = d;
        g.alpha = -0.75;
        g.beta = 0.5;
        g.bias = 1;
        g.relu = 1;
        run_case(&g);
        setenv("KILN_WGMMA_BN", "64", 1); /* forced 64-wide, the same ragged transposed shape */
        run_case(&g);
        unsetenv("KILN_WGMMA_BN");
        /* the rule's 64-wide tiles on an H100 (every 64-wide tile in one wave): 32 tiles split
         * 2 ways through the workspace (fc4096 fprop's form), 64 unsplit tiles on one row
         * (fc1000 bprop's), 128 on eight rows (the 1024 square's) */
        g = base_case(dt, 128, 2048, 2048);
        g.bias = 1;
        g.relu = 1;
        run_case(&g);
        g = base_case(dt, 100, 4096, 1000);
        g.tb = d;
        run_case(&g);
        g = base_case(dt, 1024, 1000, 500);
        g.beta = 0.5;
        run_case(&g);
        g = base_case(dt, 260, 300, 70); /* 24 batches x 6 tiles, 2 k slices each */
        g.nba = 1, g.ba[0] = 24;
        g.nbb = 1, g.bb[0] = 24;
        g.ta = d;
        g.tb = 1 - d;
        g.relu = 1;
        run_case(&g);
        /* split-K: the splits of a tile summed in slices (the rule's way on the wgmma kernel
         * where every split fits the first wave), by the last block through the workspace
         * (KILN_WGMMA_SPLIT_SUM=workspace), then in a cluster (KILN_WGMMA_SPLIT_SUM=cluster) */
        static const char *const split_sums[3] = {NULL, "workspace", "cluster"};
        for (int cl = 0; cl < 3; cl++) {
            if (split_sums[cl]) setenv("KILN_WGMMA_SPLIT_SUM", split_sums[cl], 1);
            g = base_case(dt, 130, 300, 3380); /* few tiles, long K (53 slices): split-K, the last split short */
            g.ta = d;
            g.bias = 1;
            g.relu = 1;
            g.beta = -0.5;
            run_case(&g);
            g = base_case(dt, 64, 72, 3100); /* split-K over 3 batches, B shared */
            g.nba = 1, g.ba[0] = 3;
            g.tb = 1;
            run_case(&g);
            g.tight = 1; /* the same under a memory cap that leaves no room for a workspace */
            run_case(&g);
            unsetenv("KILN_WGMMA_SPLIT_SUM");
        }
        g = base_case(dt, 200, 40, 33); /* strided batches of strided views */
        g.nba = 1, g.ba[0] = 3;
        g.nbb = 1, g.bb[0] = 3;
        g.la = LAY_STRIDED;
        g.lb = LAY_STRIDED;
        g.lc = LAY_TVIEW;
        run_case(&g);
    }
}

/* Statistics of a C with non-finite values: A holds +inf in row 1 and NaN in row 3 (so those
 * rows of C are +inf and NaN), a per-row bias moves rows 0 and 4; the largest finite |x|
 * and the count come out exactly, in f64 and f32. An empty C gives [0, 0]. */
static void test_stats(void)
{
    for (int d = 0; d < 4; d++) {
        kiln_dtype dt = all_dtypes[d];
        int64_t sa[2] = {5, 3}, sb[2] = {3, 7}, sc[2] = {5, 7}, sbias[1] = {5}, two = 2, s0[2] = {0, 7},
                sa0[2] = {0, 3};
        double ah[15], biash[5] = {10.0, 0.0, 0.0, 0.0, -20.0};
        for (int i = 0; i < 15; i++) ah[i] = 1.0;
        ah[1 * 3 + 0] = INFINITY;
        ah[3 * 3 + 2] = NAN;
        kiln_tensor *A = NULL, *bias = NULL, *B = filled(ctx, dt, 2, sb, 1.0), *C = filled(ctx, dt, 2, sc, 0.0);
        CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sa, ah, KILN_DTYPE_F64, &A));
        CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 1, sbias, biash, KILN_DTYPE_F64, &bias));
        for (int sd = 0; sd < 2; sd++) {
            kiln_tensor *stats = NULL;
            CHECK_OK(ctx, kiln_tensor_full(ctx, sd ? KILN_DTYPE_F32 : KILN_DTYPE_F64, 1, &two, NAN, &stats));
            CHECK_OK(ctx,
                     kiln_dot(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = bias, .bias_rows = 1, .stats = stats})));
            double sv[2] = {0, 0};
            CHECK_OK(ctx, kiln_tensor_read(stats, sv, KILN_DTYPE_F64));
            if (!(sv[0] == 17.0 && sv[1] == 14.0))
                fprintf(stderr, "  stats %s/%s: got [%g, %g] want [17, 14]\n", kiln_dtype_name(dt), sd ? "f32" : "f64",
                        sv[0], sv[1]);
            CHECK(sv[0] == 17.0 && sv[1] == 14.0);
            /* an empty product: nothing computed, statistics 0 and 0 over the poison */
            kiln_tensor *A0 = filled(ctx, dt, 2, sa0, 1.0), *C0 = filled(ctx, dt, 2, s0, 0.0);
            CHECK_OK(ctx, kiln_assign(stats, kiln_scalar(NAN)));
            CHECK_OK(ctx, kiln_dot(C0, A0, B, 1.0, 0.0, &((kiln_gemm_args){.stats = stats})));
            CHECK_OK(ctx, kiln_tensor_read(stats, sv, KILN_DTYPE_F64));
            CHECK(sv[0] == 0.0 && sv[1] == 0.0);
            kiln_tensor_release(A0);
            kiln_tensor_release(C0);
            kiln_tensor_release(stats);
        }
        kiln_tensor *all[4] = {A, B, C, bias};
        for (int i = 0; i < 4; i++) kiln_tensor_release(all[i]);
    }
}

static void run_numeric_suite(void)
{
    int before = check_failed_;
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (sections[i].numeric && section_on(sections[i].name)) {
            sections[i].numeric();
            sections_run++;
        }
    printf("numeric cases on the %s engine: %s\n", engine_name, check_failed_ == before ? "ok" : "FAILED");
}

static void test_sr_unbiased(void);
static void test_sr_bits(void);
static void test_sr_tiles(void);
static void test_sr_nonfinite(void);
static void test_sr_small(void);
static void test_bias_nonfinite(void);
/* Stochastic rounding: unbiased, exact bits, bits across tiles, non-finite sums, f16's
 * subnormal range, a bias with infs and a NaN (section "sr") */
static void run_sr_suite(void)
{
    if (!section_on("sr")) return;
    test_sr_unbiased();
    test_sr_bits();
    test_sr_tiles();
    test_sr_nonfinite();
    test_sr_small();
    test_bias_nonfinite();
    sections_run++;
}

/* Broadcast (stride 0) operands: A = a row broadcast over M, B = a column broadcast over N. */
static void test_broadcast_operands(void)
{
    for (int d = 0; d < 4; d++) {
        kiln_dtype dt = all_dtypes[d];
        int64_t M = 9, N = 17, K = 33, sr[2] = {1, K}, scol[2] = {K, 1}, sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
        kiln_tensor *row = make_operand(dt, 2, sr, LAY_CONTIG, 0, NULL),
                    *col = make_operand(dt, 2, scol, LAY_CONTIG, 0, NULL);
        kiln_tensor *A = NULL, *B = NULL, *C = make_operand(dt, 2, sc, LAY_CONTIG, 1, NULL);
        CHECK_OK(ctx, kiln_tensor_broadcast_to(row, 2, sa, &A));
        CHECK_OK(ctx, kiln_tensor_broadcast_to(col, 2, sb, &B));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, NULL));
        double *rh = host_of(row), *ch = host_of(col), *got = host_of(C);
        long double acc = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
            acc += (long double)rh[k] * ch[k];
            mag += fabsl((long double)rh[k] * ch[k]);
        }
        double tol = (unit_roundoff(dt) * (double)(K + 8) + out_rounding(dt) * 1.01) * (double)mag + 1e-7;
        int bad = 0;
        for (int64_t i = 0; i < M * N; i++) bad += !(fabs(got[i] - (double)acc) <= tol);
        CHECK_INT(bad, 0);
        free(rh);
        free(ch);
        free(got);
        kiln_tensor_release(row);
        kiln_tensor_release(col);
        kiln_tensor_release(A);
        kiln_tensor_release(B);
        kiln_tensor_release(C);
    }
}

/* ---- stochastic rounding -------------------------------------------------------------- */

/* C (64, 64) = alpha * ones(64, 1) @ ones(1, 64) in dt, rounded with `round`; returns C as f64. */
static double *sr_run(kiln_dtype dt, double alpha, kiln_round round)
{
    int64_t sa[2] = {64, 1}, sb[2] = {1, 64}, sc[2] = {64, 64};
    kiln_tensor *A = filled(ctx, dt, 2, sa, 1.0), *B = filled(ctx, dt, 2, sb, 1.0), *C = filled(ctx, dt, 2, sc, NAN);
    CHECK_OK(ctx, kiln_dot(C, A, B, alpha, 0.0, &(kiln_gemm_args){.round = round}));
    double *h = host_of(C);
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
    return h;
}

static void test_sr_unbiased(void)
{
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
        double ulp = d ? 1.0 / 128 : 1.0 / 1024;
        double x = (double)(float)(1.0 + ulp / 3); /* a third of the way to the next value */
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 77));
        double *s = sr_run(dt, x, KILN_ROUND_STOCHASTIC);
        double *n = sr_run(dt, x, KILN_ROUND_NEAREST);
        double ms = 0, mn = 0;
        int64_t up = 0, others = 0;
        for (int i = 0; i < 4096; i++) {
            ms += s[i];
            mn += n[i];
            if (s[i] == 1.0 + ulp)
                up++;
            else if (s[i] != 1.0)
                others++;
        }
        ms /= 4096;
        mn /= 4096;
        double se = ulp * sqrt((1.0 / 3) * (2.0 / 3) / 4096);
        printf("SR %s: mean error %.3g (std err %.3g), RN error %.3g, %lld of 4096 rounded up\n", kiln_dtype_name(dt),
               ms - x, se, mn - x, (long long)up);
        CHECK_INT(others, 0);
        CHECK(fabs(ms - x) < 5 * se);
        CHECK(fabs(mn - x) > 0.3 * ulp); /* nearest is systematically low here */
        CHECK(up > 1000 && up < 1750);
        free(s);
        free(n);

        /* the context's setting applies when the call says DEFAULT; NEAREST overrides it */
        CHECK_OK(ctx, kiln_ctx_set_round(ctx, KILN_ROUND_STOCHASTIC));
        s = sr_run(dt, x, KILN_ROUND_DEFAULT);
        n = sr_run(dt, x, KILN_ROUND_NEAREST);
        int64_t ups = 0, upn = 0;
        for (int i = 0; i < 4096; i++) {
            ups += s[i] != 1.0;
            upn += n[i] != 1.0;
        }
        CHECK(ups > 1000);
        CHECK_INT(upn, 0);
        CHECK_OK(ctx, kiln_ctx_set_round(ctx, KILN_ROUND_NEAREST));
        free(s);
        free(n);
    }
    /* f32 ignores stochastic rounding */
    double *s = sr_run(KILN_DTYPE_F32, 1.0 + 1.0 / 3, KILN_ROUND_STOCHASTIC);
    int64_t diff = 0;
    for (int i = 0; i < 4096; i++) diff += s[i] != (double)(float)(1.0 + 1.0 / 3);
    CHECK_INT(diff, 0);
    free(s);
}

/* Exact bits: C[b, m, n] = SR(t, kiln_gemm_sr_bits(seed, stream 0 after set_seed, b*M + m, n, N)). With K = 1
 * and f16 inputs the f32 products are exact, so the expected bits are known here. Then the
 * same seed gives the same bits, another seed other bits. */
static void test_sr_bits(void)
{
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
        int64_t sa[3] = {2, 9, 1}, sb[2] = {1, 13}, sc[3] = {2, 9, 13};
        kiln_tensor *A = make_operand(dt, 3, sa, LAY_CONTIG, 0, NULL);
        kiln_tensor *B = make_operand(dt, 2, sb, LAY_CONTIG, 0, NULL);
        kiln_tensor *C = NULL;
        CHECK_OK(ctx, kiln_tensor_empty(ctx, dt, 3, sc, &C));
        double *ah = host_of(A), *bh = host_of(B);
        uint16_t got[2 * 9 * 13], again[2 * 9 * 13];
        const kiln_gemm_args sr = {.round = KILN_ROUND_STOCHASTIC};
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0xfeedULL));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &sr));
        CHECK_OK(ctx, kiln_tensor_read(C, got, dt));
        int bad = 0;
        for (int b = 0; b < 2; b++)
            for (int m = 0; m < 9; m++)
                for (int n = 0; n < 13; n++) {
                    float t = (float)(ah[b * 9 + m] * bh[n]);
                    uint64_t idx = (uint64_t)((b * 9 + m) * 13 + n);
                    uint32_t bits = kiln_gemm_sr_bits(0xfeedULL, 0, (uint64_t)(b * 9 + m), (uint64_t)n, 13);
                    uint16_t want = d ? kiln_f32_to_bf16_sr(t, bits) : kiln_f32_to_f16_sr13(t, bits);
                    if (got[idx] != want && bad++ < 3)
                        fprintf(stderr, "  SR bits [%d,%d,%d]: got %04x want %04x\n", b, m, n, got[idx], want);
                }
        CHECK_INT(bad, 0);
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0xfeedULL));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &sr));
        CHECK_OK(ctx, kiln_tensor_read(C, again, dt));
        CHECK(memcmp(got, again, sizeof got) == 0);
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0xbeefULL));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &sr));
        CHECK_OK(ctx, kiln_tensor_read(C, again, dt));
        CHECK(memcmp(got, again, sizeof got) != 0);
        /* a second call without reseeding takes a new stream */
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0xfeedULL));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &sr));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &sr));
        CHECK_OK(ctx, kiln_tensor_read(C, again, dt));
        CHECK(memcmp(got, again, sizeof got) != 0);
        free(ah);
        free(bh);
        kiln_tensor_release(A);
        kiln_tensor_release(B);
        kiln_tensor_release(C);
    }
}

/* Exact bits across tiles and batches: with integer-valued operands (|x| <= 30, exact in
 * f16 and bf16) every f32 sum is exact in any order, and so is alpha 1, an integer bias
 * and beta 0.5 times an integer C; many results need more bits than f16 / bf16 keep, so
 * C[b, m, n] = SR(t, kiln_gemm_sr_bits(seed, stream 0 after set_seed, b*M + m, n, N)) is known
 * here whatever the summation order or the tiling. M, N and the batch cross the CUDA own
 * kernel's 128 x 128 tiles; trans_a = 1 makes A an MN-major operand with rows of 130
 * elements (the element-by-element path), trans_a = 0 a K-major one (16-byte cp.async).
 * The second shape has rows of C that are not 16-byte multiples (the wgmma kernel stores
 * from registers) and a K that splits its four tiles (split-K's epilogue). */
static void sr_tiles_case(int M, int N, int K)
{
    const int NB = 2;
    double *ah = malloc(sizeof(double) * NB * M * K), *bh = malloc(sizeof(double) * K * N);
    double *ch = malloc(sizeof(double) * NB * M * N), *biash = malloc(sizeof(double) * N);
    uint16_t *got = malloc(sizeof(uint16_t) * NB * M * N);
    for (int i = 0; i < NB * M * K; i++) ah[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < K * N; i++) bh[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < NB * M * N; i++) ch[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < N; i++) biash[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int d = 0; d < 2; d++)
        for (int ta = 0; ta < 2; ta++)
            for (int relu = 0; relu < 2; relu++) {
                kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
                /* relu: beta 0, so about half the results are exact zeros (the epilogues' inline
                 * zero case of f16 stochastic rounding) */
                const double beta = relu ? 0.0 : 0.5;
                /* A stored (NB, M, K) or, for trans_a, (NB, K, M); B stored (N, K), used with trans_b */
                int64_t sa[3] = {NB, ta ? K : M, ta ? M : K}, sb[2] = {N, K}, sc[3] = {NB, M, N}, sbias[1] = {N};
                double *at = malloc(sizeof(double) * NB * M * K), *bt = malloc(sizeof(double) * K * N);
                for (int b = 0; b < NB; b++)
                    for (int m = 0; m < M; m++)
                        for (int k = 0; k < K; k++)
                            at[ta ? (b * K + k) * M + m : (b * M + m) * K + k] = ah[(b * M + m) * K + k];
                for (int k = 0; k < K; k++)
                    for (int n = 0; n < N; n++) bt[n * K + k] = bh[k * N + n];
                kiln_tensor *A = NULL, *B = NULL, *C = NULL, *bias = NULL;
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 3, sa, at, KILN_DTYPE_F64, &A));
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sb, bt, KILN_DTYPE_F64, &B));
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 3, sc, ch, KILN_DTYPE_F64, &C));
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 1, sbias, biash, KILN_DTYPE_F64, &bias));
                CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0x5eedULL + (uint64_t)d));
                const kiln_gemm_args args = {
                    .trans_a = ta, .trans_b = 1, .bias = bias, .relu = relu, .round = KILN_ROUND_STOCHASTIC};
                CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, beta, &args));
                CHECK_OK(ctx, kiln_tensor_read(C, got, dt));
                int bad = 0, rounded = 0, zeros = 0;
                for (int b = 0; b < NB; b++)
                    for (int m = 0; m < M; m++)
                        for (int n = 0; n < N; n++) {
                            double acc = 0;
                            for (int k = 0; k < K; k++) acc += ah[(b * M + m) * K + k] * bh[k * N + n];
                            int idx = (b * M + m) * N + n;
                            double v = acc + biash[n];
                            if (relu && v <= 0) v = 0;
                            float t = (float)(v + beta * ch[idx]); /* exact */
                            zeros += t == 0;
                            uint32_t bits =
                                kiln_gemm_sr_bits(0x5eedULL + (uint64_t)d, 0, (uint64_t)(b * M + m), (uint64_t)n, N);
                            uint16_t want = d ? kiln_f32_to_bf16_sr(t, bits) : kiln_f32_to_f16_sr13(t, bits);
                            float back = d ? kiln_bf16_to_f32(want) : kiln_f16_to_f32(want);
                            rounded += back != t;
                            if (got[idx] != want && bad++ < 3)
                                fprintf(stderr,
                                        "  SR tiles %dx%dx%d %s trans_a=%d relu=%d [%d,%d,%d]: got %04x want %04x\n", M,
                                        N, K, kiln_dtype_name(dt), ta, relu, b, m, n, got[idx], want);
                        }
                CHECK_INT(bad, 0);
                CHECK(rounded > 1000); /* the rounding is exercised, not only exact values */
                if (relu) CHECK(zeros > 1000);
                free(at);
                free(bt);
                kiln_tensor_release(A);
                kiln_tensor_release(B);
                kiln_tensor_release(C);
                kiln_tensor_release(bias);
            }
    free(ah);
    free(bh);
    free(ch);
    free(biash);
    free(got);
}

static void test_sr_tiles(void)
{
    sr_tiles_case(130, 136, 96);
    sr_tiles_case(130, 133, 2112);
}

/* Stochastic rounding of non-finite sums beside finite ones: integer operands (exact sums)
 * with +inf in A's rows 5 (column 0) and 9 (column 1) and B's row 1 zero in its even columns,
 * so C's row 9 holds NaN (inf * 0) in even columns and +-inf in odd ones, row 5 +-inf (NaN
 * where B[0][n] is 0). A NaN must come out a NaN (any payload: the engines' arithmetic makes
 * their own), an inf the same inf, every other value its exact stochastic rounding. On the
 * GPU a NaN sum is 0x7FFFFFFF, which the kernels' straight-line bf16 rounding (the random
 * bits added to the f32 bits) would carry into the sign bit: the groups holding one take the
 * exact path (the wgmma kernel's stash and kg_stage_fix). N = 264: 16-byte rows of C, the
 * staged TMA-store epilogue. */
static void test_sr_nonfinite(void)
{
    const int M = 130, N = 264, K = 64;
    double *ah = malloc(sizeof(double) * M * K), *bh = malloc(sizeof(double) * K * N);
    uint16_t *got = malloc(sizeof(uint16_t) * M * N);
    for (int i = 0; i < M * K; i++) ah[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < K * N; i++) bh[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    ah[5 * K + 0] = INFINITY;
    ah[9 * K + 1] = INFINITY;
    for (int n = 0; n < N; n += 2) bh[1 * N + n] = 0.0;
    for (int d = 0; d < 2; d++) {
        kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
        int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
        kiln_tensor *A = NULL, *B = NULL, *C = NULL;
        CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sa, ah, KILN_DTYPE_F64, &A));
        CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sb, bh, KILN_DTYPE_F64, &B));
        CHECK_OK(ctx, kiln_tensor_empty(ctx, dt, 2, sc, &C));
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0x1f1fULL + (uint64_t)d));
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &(kiln_gemm_args){.round = KILN_ROUND_STOCHASTIC}));
        CHECK_OK(ctx, kiln_tensor_read(C, got, dt));
        const uint16_t expo = d ? 0x7F80u : 0x7C00u, mant = d ? 0x007Fu : 0x03FFu;
        int bad = 0, nans = 0, infs = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += ah[m * K + k] * bh[k * N + n];
                const uint16_t h = got[m * N + n];
                int ok;
                if (isnan(acc)) {
                    ok = (h & expo) == expo && (h & mant) != 0;
                    nans++;
                } else if (isinf(acc)) {
                    ok = h == (uint16_t)((acc < 0 ? 0x8000u : 0u) | expo);
                    infs++;
                } else {
                    const uint32_t bits = kiln_gemm_sr_bits(0x1f1fULL + (uint64_t)d, 0, (uint64_t)m, (uint64_t)n, N);
                    ok = h == (d ? kiln_f32_to_bf16_sr((float)acc, bits) : kiln_f32_to_f16_sr13((float)acc, bits));
                }
                if (!ok && bad++ < 3)
                    fprintf(stderr, "  SR non-finite %s [%d,%d]: got %04x for %g\n", kiln_dtype_name(dt), m, n, h, acc);
            }
        CHECK_INT(bad, 0);
        CHECK(nans >= N / 2 && infs >= N / 2);
        kiln_tensor_release(A);
        kiln_tensor_release(B);
        kiln_tensor_release(C);
    }
    free(ah);
    free(bh);
    free(got);
}

/* A bias holding +inf (column 5), NaN (column 70) and -inf (column N - 3) beside finite integer
 * values, alpha 1, with integer operands (exact sums): those columns of C come out +inf, a NaN
 * and -inf (+0 under ReLU), every other value the rounding (nearest or stochastic) of its exact
 * value; nothing of a non-finite bias value may reach another column (a bias added through
 * the tensor cores, bench/NOTES.md step 46, would multiply its neighbours by zero: 0 x inf is
 * NaN). N = 600: 256-wide tile columns with and without a non-finite value; C's rows 16-byte
 * multiples (the wgmma kernel's staged TMA-store epilogue, its staged bias, the rare-value
 * path of stochastic rounding). */
static void test_bias_nonfinite(void)
{
    const int M = 130, N = 600, K = 64;
    double *ah = malloc(sizeof(double) * M * K), *bh = malloc(sizeof(double) * K * N),
           *biash = malloc(sizeof(double) * N);
    uint16_t *got = malloc(sizeof(uint16_t) * M * N);
    for (int i = 0; i < M * K; i++) ah[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < K * N; i++) bh[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < N; i++) biash[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    biash[5] = INFINITY;
    biash[70] = NAN;
    biash[N - 3] = -INFINITY;
    for (int d = 0; d < 2; d++)
        for (int sr = 0; sr < 2; sr++)
            for (int relu = 0; relu < 2; relu++) {
                kiln_dtype dt = d ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
                int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N}, sbias[1] = {N};
                kiln_tensor *A = NULL, *B = NULL, *C = NULL, *bias = NULL;
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sa, ah, KILN_DTYPE_F64, &A));
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 2, sb, bh, KILN_DTYPE_F64, &B));
                CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 1, sbias, biash, KILN_DTYPE_F64, &bias));
                CHECK_OK(ctx, kiln_tensor_full(ctx, dt, 2, sc, NAN, &C)); /* poisoned: beta 0 never reads it */
                CHECK_OK(ctx, kiln_ctx_set_seed(ctx, 0xb1a5ULL + (uint64_t)d));
                const kiln_gemm_args args = {
                    .bias = bias, .relu = relu, .round = sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST};
                CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &args));
                CHECK_OK(ctx, kiln_tensor_read(C, got, dt));
                const uint16_t expo = d ? 0x7F80u : 0x7C00u, mant = d ? 0x007Fu : 0x03FFu;
                int bad = 0, odd = 0;
                for (int m = 0; m < M; m++)
                    for (int n = 0; n < N; n++) {
                        double v = biash[n];
                        for (int k = 0; k < K; k++) v += ah[m * K + k] * bh[k * N + n];
                        if (relu && v <= 0) v = 0; /* NaN stays */
                        const uint16_t h = got[m * N + n];
                        int ok;
                        if (isnan(v)) {
                            ok = (h & expo) == expo && (h & mant) != 0;
                            odd++;
                        } else {
                            const float t = (float)v; /* exact, or an inf */
                            const uint32_t bits =
                                kiln_gemm_sr_bits(0xb1a5ULL + (uint64_t)d, 0, (uint64_t)m, (uint64_t)n, N);
                            const uint16_t want = sr ? (d ? kiln_f32_to_bf16_sr(t, bits) : kiln_f32_to_f16_sr13(t, bits))
                                                     : (d ? kiln_f32_to_bf16_rn(t) : kiln_f32_to_f16_rn(t));
                            ok = h == want;
                            odd += isinf(t) != 0;
                        }
                        if (!ok && bad++ < 3)
                            fprintf(stderr, "  bias non-finite %s sr=%d relu=%d [%d,%d]: got %04x for %g\n",
                                    kiln_dtype_name(dt), sr, relu, m, n, h, v);
                    }
                CHECK_INT(bad, 0);
                CHECK_INT(odd, M * (relu ? 2 : 3)); /* every row's +inf and NaN, and -inf without ReLU */
                kiln_tensor_release(A);
                kiln_tensor_release(B);
                kiln_tensor_release(C);
                kiln_tensor_release(bias);
            }
    free(ah);
    free(bh);
    free(biash);
    free(got);
}

/* f16 stochastic rounding across its whole finite range below 65504: integer operands in
 * [-30, 30] and alpha 2^-26 (exact sums, exact scaling) put C in f16's normal range (|sum| >=
 * 2^12), its subnormal range and below its smallest subnormal (|sum| < 4, row 3), with zeros; every
 * value must be kiln_f32_to_f16_sr13's bits (the wgmma kernel's straight-line rounding through
 * |x| 2^-112, the exact path of the others). With ReLU the negative half is +0 (f16 kernels
 * with ReLU test each group and send the subnormal ones to the exact path). N = 264 and 1032:
 * 16-byte rows of C, the staged TMA-store epilogue, tiles of several widths. */
static void sr_small_case(int M, int N, int K)
{
    double *ah = malloc(sizeof(double) * M * K), *bh = malloc(sizeof(double) * K * N);
    uint16_t *got = malloc(sizeof(uint16_t) * M * N);
    for (int i = 0; i < M * K; i++) ah[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    for (int i = 0; i < K * N; i++) bh[i] = (double)((int)(check_rand_u64(&rng) % 61) - 30);
    /* a row of small sums (below 2^-24 after alpha: rounded to a zero or the least subnormal) */
    for (int k = 0; k < K; k++) ah[3 * K + k] = k < 2 ? 1.0 : 0.0;
    for (int n = 0; n < N; n++) bh[n] = bh[N + n] = (double)((int)(check_rand_u64(&rng) % 15) - 7);
    const double alpha = ldexp(1.0, -26);
    int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
    kiln_tensor *A = NULL, *B = NULL, *C = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F16, 2, sa, ah, KILN_DTYPE_F64, &A));
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F16, 2, sb, bh, KILN_DTYPE_F64, &B));
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F16, 2, sc, &C));
    for (int relu = 0; relu < 2; relu++) {
        const uint64_t seed = 0x5a11ULL + (uint64_t)relu;
        CHECK_OK(ctx, kiln_ctx_set_seed(ctx, seed));
        CHECK_OK(ctx, kiln_dot(C, A, B, alpha, 0.0, &(kiln_gemm_args){.relu = relu, .round = KILN_ROUND_STOCHASTIC}));
        CHECK_OK(ctx, kiln_tensor_read(C, got, KILN_DTYPE_F16));
        int bad = 0, normal = 0, sub = 0, tiny = 0;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double acc = 0;
                for (int k = 0; k < K; k++) acc += ah[m * K + k] * bh[k * N + n];
                float t = (float)(acc * alpha); /* exact */
                if (relu && t <= 0.0f) t = 0.0f;
                const double a = fabs((double)t);
                normal += a >= 0x1p-14;
                sub += a < 0x1p-14 && a >= 0x1p-24;
                tiny += a < 0x1p-24 && a > 0;
                const uint32_t bits = kiln_gemm_sr_bits(seed, 0, (uint64_t)m, (uint64_t)n, N);
                const uint16_t want = kiln_f32_to_f16_sr13(t, bits), h = got[m * N + n];
                if (h != want && bad++ < 3)
                    fprintf(stderr, "  SR small f16 relu %d [%d,%d] of %dx%dx%d: got %04x want %04x for %a\n", relu, m, n, M,
                            N, K, h, want, (double)t);
            }
        CHECK_INT(bad, 0);
        CHECK(normal > 0 && sub > M * N / 8 && tiny > 0);
    }
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
    free(ah);
    free(bh);
    free(got);
}

static void test_sr_small(void)
{
    static const int shapes[2][3] = {{130, 264, 64}, {300, 1032, 128}};
    for (int i = 0; i < 2; i++) sr_small_case(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* ---- errors --------------------------------------------------------------------------- */

/* Calls kiln_dot expecting `status` with `needle` in the message, and C unchanged. */
#define DOT_FAILS(Cv, Av, Bv, alpha, beta, args, status, needle)                                                       \
    do {                                                                                                               \
        double *before_ = (Cv) ? host_of(Cv) : NULL;                                                                   \
        kiln_ctx *ectx_ = (Cv) ? kiln_tensor_ctx(Cv) : (Av) ? kiln_tensor_ctx(Av) : (Bv) ? kiln_tensor_ctx(Bv) : NULL; \
        CHECK_FAILS(ectx_, kiln_dot((Cv), (Av), (Bv), (alpha), (beta), (args)), (status), (needle));                   \
        if (before_) {                                                                                                 \
            double *after_ = host_of(Cv);                                                                              \
            int64_t n_ = kiln_tensor_numel(Cv), changed_ = 0;                                                          \
            for (int64_t i_ = 0; i_ < n_; i_++) changed_ += !same_value(before_[i_], after_[i_]);                      \
            CHECK_INT(changed_, 0);                                                                                    \
            free(after_);                                                                                              \
        }                                                                                                              \
        free(before_);                                                                                                 \
    } while (0)

static kiln_tensor *mk(kiln_dtype dt, int nd, int64_t d0, int64_t d1, int64_t d2)
{
    int64_t s[3] = {d0, d1, d2};
    return make_operand(dt, nd, s, LAY_CONTIG, 0, NULL);
}

static void test_errors(void)
{
    const kiln_dtype f32 = KILN_DTYPE_F32;
    kiln_tensor *A = mk(f32, 2, 3, 4, 0), *B = mk(f32, 2, 4, 5, 0), *C = mk(f32, 2, 3, 5, 0);

    /* NULL handles: reported into the context of another argument, else context-less */
    DOT_FAILS(NULL, A, B, 1.0, 0.0, NULL, KILN_ERR_NULL, "'C'");
    DOT_FAILS(C, NULL, B, 1.0, 0.0, NULL, KILN_ERR_NULL, "'A'");
    DOT_FAILS(C, A, NULL, 1.0, 0.0, NULL, KILN_ERR_NULL, "'B'");
    CHECK_FAILS(NULL, kiln_dot(NULL, NULL, NULL, 1.0, 0.0, NULL), KILN_ERR_NULL, "'C'");

    /* the CPU engine's override: a value that is not one is an error naming it */
    setenv("KILN_CPU_GEMM", "blas", 1);
    DOT_FAILS(C, A, B, 1.0, 0.0, NULL, KILN_ERR_ARG, "KILN_CPU_GEMM='blas' is not auto or builtin");
    setenv("KILN_CPU_GEMM", "auto", 1);
    CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, NULL));
    unsetenv("KILN_CPU_GEMM");

    /* alpha / beta / round */
    DOT_FAILS(C, A, B, NAN, 0.0, NULL, KILN_ERR_ARG, "'alpha'");
    DOT_FAILS(C, A, B, 1.0, INFINITY, NULL, KILN_ERR_ARG, "'beta'");
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.round = (kiln_round)7}), KILN_ERR_ARG, "'args->round'");

    /* another context */
    kiln_ctx *other = NULL;
    CHECK_OK(NULL, kiln_ctx_create(&other, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}));
    int64_t s2[2] = {4, 5}, sbias[1] = {5};
    kiln_tensor *Bo = filled(other, f32, 2, s2, 1.0), *biaso = filled(other, f32, 1, sbias, 1.0);
    DOT_FAILS(C, A, Bo, 1.0, 0.0, NULL, KILN_ERR_CONTEXT, "'B'");
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = biaso}), KILN_ERR_CONTEXT, "'bias'");
    int64_t two = 2;
    kiln_tensor *statso = filled(other, f32, 1, &two, 0.0);
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.stats = statso}), KILN_ERR_CONTEXT, "argument 'stats'");
    kiln_tensor_release(statso);
    kiln_tensor_release(Bo);
    kiln_tensor_release(biaso);
    kiln_ctx_destroy(other);

    /* a bias per row is (M,); statistics are an f32 / f64 (2,) tensor, writable, apart from
     * every operand (their tensor is left as it was) */
    {
        int64_t s3 = 3, s5 = 5, s4 = 4;
        kiln_tensor *b3 = filled(ctx, f32, 1, &s3, 1.0), *b5 = filled(ctx, f32, 1, &s5, 1.0);
        DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = b5, .bias_rows = 1}), KILN_ERR_SHAPE,
                  "argument 'bias' must be (M,) = (3,) (bias_rows)");
        CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = b3, .bias_rows = 1})));
        kiln_tensor *si = filled(ctx, KILN_DTYPE_I32, 1, &two, 7.0), *s16 = filled(ctx, KILN_DTYPE_F16, 1, &two, 7.0),
                    *st4 = filled(ctx, f32, 1, &s4, 7.0), *st22 = mk(f32, 2, 1, 2, 0), *sbc = NULL, *sC = NULL,
                    *stats_big = mk(f32, 2, 4, 8, 0), *sA = NULL;
        /* a broadcast (2,) view of one element: its two entries alias */
        kiln_tensor *one = filled(ctx, f32, 1, &s4, 7.0), *one1 = NULL;
        kiln_slice first[1] = {KILN_SLICE(0, 1)};
        CHECK_OK(ctx, kiln_tensor_slice(one, 1, first, &one1));
        CHECK_OK(ctx, kiln_tensor_broadcast_to(one1, 1, &two, &sbc));
        const kiln_tensor *bad[5] = {si, s16, st4, st22, sbc};
        const kiln_status want[5] = {KILN_ERR_DTYPE, KILN_ERR_DTYPE, KILN_ERR_SHAPE, KILN_ERR_SHAPE, KILN_ERR_ALIAS};
        const char *needle[5] = {"argument 'stats' must be f32 or f64, is i32", "argument 'stats' must be f32 or f64",
                                 "argument 'stats' must be (2,)", "argument 'stats' must be (2,)", "argument 'stats'"};
        for (int i = 0; i < 5; i++) {
            double *before = host_of((kiln_tensor *)bad[i]);
            DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.stats = (kiln_tensor *)bad[i]}), want[i], needle[i]);
            double *after = host_of((kiln_tensor *)bad[i]);
            int64_t n = kiln_tensor_numel(bad[i]), changed = 0;
            for (int64_t j = 0; j < n; j++) changed += !same_value(before[j], after[j]);
            CHECK_INT(changed, 0);
            free(before);
            free(after);
        }
        /* overlapping C and A: a C of (3, 5) and an A of (3, 4) inside one (4, 8) tensor, stats
         * a (2,) row piece of each */
        kiln_tensor *Cv = NULL, *Av = NULL;
        kiln_slice sl_cv[2] = {KILN_SLICE(0, 3), KILN_SLICE(0, 5)}, sl_sc[2] = {KILN_INDEX(1), KILN_SLICE(1, 3)};
        kiln_slice sl_av[2] = {KILN_SLICE(1, 4), KILN_SLICE(4, 8)}, sl_sa[2] = {KILN_INDEX(3), KILN_SLICE(5, 7)};
        CHECK_OK(ctx, kiln_tensor_slice(stats_big, 2, sl_cv, &Cv));
        CHECK_OK(ctx, kiln_tensor_slice(stats_big, 2, sl_sc, &sC));
        CHECK_OK(ctx, kiln_tensor_slice(stats_big, 2, sl_av, &Av));
        CHECK_OK(ctx, kiln_tensor_slice(stats_big, 2, sl_sa, &sA));
        DOT_FAILS(Cv, A, B, 1.0, 0.0, &((kiln_gemm_args){.stats = sC}), KILN_ERR_ALIAS, "'stats' overlaps 'C'");
        DOT_FAILS(C, Av, B, 1.0, 0.0, &((kiln_gemm_args){.stats = sA}), KILN_ERR_ALIAS, "'stats' overlaps 'A'");
        kiln_tensor *rel[] = {b3, b5, si, s16, st4, st22, sbc, sC, stats_big, sA, one, one1, Cv, Av};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) kiln_tensor_release(rel[i]);
    }

    /* rank */
    kiln_tensor *v1 = mk(f32, 1, 4, 0, 0);
    DOT_FAILS(C, v1, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'A' must have at least 2 axes, has 1");
    DOT_FAILS(C, A, v1, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'B' must have at least 2 axes");
    kiln_tensor *c1 = mk(f32, 1, 5, 0, 0);
    DOT_FAILS(c1, A, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'C' must have at least 2 axes");

    /* dtypes */
    kiln_tensor *B64 = mk(KILN_DTYPE_F64, 2, 4, 5, 0);
    DOT_FAILS(C, A, B64, 1.0, 0.0, NULL, KILN_ERR_DTYPE, "argument 'B' has dtype f64 but 'C' has f32");
    int64_t sa[2] = {3, 4}, sb[2] = {4, 5}, sc[2] = {3, 5};
    kiln_tensor *Ai = filled(ctx, KILN_DTYPE_I32, 2, sa, 1.0), *Bi = filled(ctx, KILN_DTYPE_I32, 2, sb, 1.0),
                *Ci = filled(ctx, KILN_DTYPE_I32, 2, sc, 1.0);
    DOT_FAILS(Ci, Ai, Bi, 1.0, 0.0, NULL, KILN_ERR_DTYPE, "argument 'C' has dtype i32");
    DOT_FAILS(C, Ai, B, 1.0, 0.0, NULL, KILN_ERR_DTYPE, "argument 'A' has dtype i32");

    /* shapes */
    kiln_tensor *B6 = mk(f32, 2, 6, 5, 0);
    DOT_FAILS(C, A, B6, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "K must match");
    DOT_FAILS(C, A, B6, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'B'");
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.trans_a = 1}), KILN_ERR_SHAPE, "(M=4, K=3)");
    kiln_tensor *C44 = mk(f32, 2, 4, 5, 0), *C36 = mk(f32, 2, 3, 6, 0);
    DOT_FAILS(C44, A, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'C'");
    DOT_FAILS(C36, A, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "(M=3, N=5)");
    kiln_tensor *Ab2 = mk(f32, 3, 2, 3, 4), *Bb3 = mk(f32, 3, 3, 4, 5), *Cb2 = mk(f32, 3, 2, 3, 5),
                *Cb3 = mk(f32, 3, 3, 3, 5);
    DOT_FAILS(Cb2, Ab2, Bb3, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "arguments 'A' and 'B': batch axes (2,) and (3,)");
    DOT_FAILS(Cb3, Ab2, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'C' has batch axes");
    DOT_FAILS(Cb2, A, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'C' has batch axes");
    DOT_FAILS(C, Ab2, B, 1.0, 0.0, NULL, KILN_ERR_SHAPE, "argument 'C' has batch axes");

    /* bias */
    kiln_tensor *bias4 = mk(f32, 1, 4, 0, 0), *bias2d = mk(f32, 2, 1, 5, 0), *bias64 = mk(KILN_DTYPE_F64, 1, 5, 0, 0);
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = bias4}), KILN_ERR_SHAPE, "argument 'bias' must be (N,)");
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = bias2d}), KILN_ERR_SHAPE, "'bias'");
    DOT_FAILS(C, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = bias64}), KILN_ERR_DTYPE, "argument 'bias' has dtype f64");

    /* aliasing: C broadcast, C overlapping A, B or bias */
    kiln_tensor *row = mk(f32, 2, 1, 5, 0), *Cbc = NULL;
    int64_t s35[2] = {3, 5};
    CHECK_OK(ctx, kiln_tensor_broadcast_to(row, 2, s35, &Cbc));
    DOT_FAILS(Cbc, A, B, 1.0, 0.0, NULL, KILN_ERR_ALIAS, "argument 'C'");
    kiln_tensor *big = mk(f32, 2, 8, 8, 0), *va = NULL, *vb = NULL, *vc = NULL, *vbias = NULL, *vbias1 = NULL;
    kiln_slice sl_a[2] = {KILN_SLICE(0, 3), KILN_SLICE(0, 4)};
    kiln_slice sl_b[2] = {KILN_SLICE(4, 8), KILN_SLICE(0, 5)};
    kiln_slice sl_c[2] = {KILN_SLICE(1, 4), KILN_SLICE(2, 7)};
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_a, &va));
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_b, &vb));
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_c, &vc));
    DOT_FAILS(vc, va, B, 1.0, 0.0, NULL, KILN_ERR_ALIAS, "'C' overlaps 'A'");
    kiln_tensor *Bfrom = NULL;
    kiln_slice sl_b2[2] = {KILN_SLICE(0, 4), KILN_SLICE(3, 8)};
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_b2, &Bfrom));
    DOT_FAILS(vc, A, Bfrom, 1.0, 0.0, NULL, KILN_ERR_ALIAS, "'C' overlaps 'B'");
    kiln_slice sl_bias[2] = {KILN_INDEX(2), KILN_SLICE(3, 8)};
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_bias, &vbias));
    DOT_FAILS(vc, A, B, 1.0, 0.0, &((kiln_gemm_args){.bias = vbias}), KILN_ERR_ALIAS, "'C' overlaps 'bias'");
    /* disjoint views of one storage are fine */
    kiln_slice sl_bias1[2] = {KILN_INDEX(7), KILN_SLICE(0, 5)};
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_bias1, &vbias1));
    kiln_tensor *vc2 = NULL;
    kiln_slice sl_c2[2] = {KILN_SLICE(4, 7), KILN_SLICE(3, 8)}; /* rows 4..6: apart from va and row 7 */
    CHECK_OK(ctx, kiln_tensor_slice(big, 2, sl_c2, &vc2));
    CHECK_OK(ctx, kiln_dot(vc2, va, B, 1.0, 0.0, &((kiln_gemm_args){.bias = vbias1})));

    kiln_tensor *list[] = {A,   B,     C,      v1,     c1,  B64, Ci,  Ai, Bi, B6, C44,   C36,    Ab2,   Bb3, Cb2,
                           Cb3, bias4, bias2d, bias64, row, Cbc, big, va, vb, vc, vbias, vbias1, Bfrom, vc2};
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) kiln_tensor_release(list[i]);
}

/* The backend entry itself refuses what kiln_dot never passes (internal errors, no abort). */
static void test_backend_entry(void)
{
    CHECK_FAILS(ctx, kiln__cpu_gemm(ctx, NULL), KILN_ERR_INTERNAL, "'d'");
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = KILN_DTYPE_I32;
    d.M = d.N = d.K = 1;
    CHECK_FAILS(ctx, kiln__cpu_gemm(ctx, &d), KILN_ERR_DTYPE, "i32");
}

/* ---- memory --------------------------------------------------------------------------- */

static void test_memory(void)
{
    kiln_mem_stats s0, s1;
    int64_t sa[2] = {65, 70}, sb[2] = {70, 33}, sc[2] = {65, 33}, sbias[1] = {33};
    kiln_tensor *A = make_operand(KILN_DTYPE_F32, 2, sa, LAY_STRIDED, 0, NULL);
    kiln_tensor *B = make_operand(KILN_DTYPE_F32, 2, sb, LAY_CONTIG, 0, NULL);
    kiln_tensor *C = make_operand(KILN_DTYPE_F32, 2, sc, LAY_CONTIG, 0, NULL);
    kiln_tensor *bias = make_operand(KILN_DTYPE_F32, 1, sbias, LAY_CONTIG, 0, NULL);
    const kiln_gemm_args args = {.bias = bias, .relu = 1};
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &s0));
    CHECK_OK(ctx, kiln_dot(C, A, B, 1.0, 0.5, &args));
    CHECK_OK(ctx, kiln_mem_get_stats(ctx, &s1));
    CHECK_INT(s1.in_use, s0.in_use); /* workspaces are given back */
    CHECK_INT(s1.live_blocks, s0.live_blocks);
    CHECK(s1.total_allocs > s0.total_allocs); /* and were taken through the allocator */

    /* a cap that leaves no room for the workspace: OOM, C unchanged */
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, s1.in_use + 16));
    DOT_FAILS(C, A, B, 1.0, 0.5, &args, KILN_ERR_OOM, "");
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, 0));
    kiln_tensor_release(A);
    kiln_tensor_release(B);
    kiln_tensor_release(C);
    kiln_tensor_release(bias);
}

int main(void)
{
    rng = check_seed();
    if (kiln_ctx_create(&ctx, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}) != KILN_OK) {
        fprintf(stderr, "cannot create a CPU context: %s\n", kiln_last_error(NULL));
        return 1;
    }
    printf("backend: %s\n", kiln_ctx_device_description(ctx));
    check_sections_env();
    const char *device_only = getenv("KILN_TEST_DEVICE_ONLY");
    if (!(device_only && strcmp(device_only, "1") == 0)) {
        /* 1. the default engine (OpenBLAS when built with it) */
        unsetenv("KILN_CPU_GEMM");
        engine_name = "default";
        run_numeric_suite();
        run_sr_suite();
        test_memory();

        /* 2. the built-in blocked GEMM */
        setenv("KILN_CPU_GEMM", "builtin", 1);
        engine_name = "builtin";
        run_numeric_suite();
        run_sr_suite();
        test_memory();
        unsetenv("KILN_CPU_GEMM");

        test_errors();
        test_backend_entry();
    }

    /* 3. the device named by KILN_DEVICE when it is not the CPU (make test-gpu sets cuda):
     * the same numeric suite and stochastic-rounding checks through that backend's GEMM; on
     * CUDA four times, with KILN_GEMM=vendor (cuBLASLt, its product and kiln's epilogue pass
     * for the epilogues it cannot take, the reference kernel for the rest), KILN_GEMM=own
     * (kiln's own kernels where they apply: wgmma on an H100), KILN_GEMM=mma (the mma.sync
     * kernel where it applies) and "reference" (KILN_GEMM_FALLBACK: the reference kernel for
     * every product); KILN_TEST_ENGINES (e.g. "vendor" or "own,mma") limits the CUDA pass to
     * the engines it names, for a quick check on a visit */
    const char *dev = getenv("KILN_DEVICE");
    if (dev && strcmp(dev, "cpu") != 0) {
        kiln_ctx *cpu_ctx = ctx, *dctx = NULL;
        if (kiln_ctx_create(&dctx, NULL) == KILN_OK && kiln_ctx_device(dctx) != KILN_DEVICE_CPU) {
            ctx = dctx;
            printf("backend: %s\n", kiln_ctx_device_description(ctx));
            int cuda = kiln_ctx_device(dctx) == KILN_DEVICE_CUDA;
            static const char *gemm_engine[4] = {"vendor", "own", "mma", "reference"};
            static const char *gemm_env[4] = {"vendor", "own", "mma", "vendor"};
            static const char *gemm_name[4] = {"device, KILN_GEMM=vendor", "device, KILN_GEMM=own",
                                               "device, KILN_GEMM=mma", "device, KILN_GEMM_FALLBACK=1"};
            const char *only = getenv("KILN_TEST_ENGINES");
            int engines_run = 0;
            for (int i = 0; i < (cuda ? 4 : 1); i++) {
                if (cuda && only && only[0] && !strstr(only, gemm_engine[i])) continue;
                engines_run++;
                if (cuda) setenv("KILN_GEMM", gemm_env[i], 1);
                if (cuda && i == 3) setenv("KILN_GEMM_FALLBACK", "1", 1);
                engine_name = cuda ? gemm_name[i] : "device";
                printf("GEMM on the %s engine\n", engine_name);
                run_numeric_suite();
                run_sr_suite();
                unsetenv("KILN_GEMM_FALLBACK");
            }
            /* a KILN_TEST_ENGINES that names no engine would pass having checked nothing */
            if (engines_run == 0)
                fprintf(stderr, "  KILN_TEST_ENGINES='%s' names none of vendor, own, mma, reference\n", only);
            CHECK(engines_run > 0);
            if (cuda) { /* a value that names nothing is an error naming the variable */
                setenv("KILN_GEMM", "fastest", 1);
                kiln_tensor *A = mk(KILN_DTYPE_F16, 2, 3, 4, 0), *B = mk(KILN_DTYPE_F16, 2, 4, 5, 0),
                            *C = mk(KILN_DTYPE_F16, 2, 3, 5, 0);
                DOT_FAILS(C, A, B, 1.0, 0.0, NULL, KILN_ERR_ARG, "KILN_GEMM='fastest'");
                kiln_tensor_release(A);
                kiln_tensor_release(B);
                kiln_tensor_release(C);
                unsetenv("KILN_GEMM");
            }
            ctx = cpu_ctx;
        } else {
            printf("KILN_DEVICE=%s gave no device context: the device pass is skipped\n", dev);
        }
        kiln_ctx_destroy(dctx);
    }
    /* a run that checked no section (KILN_TEST_DEVICE_ONLY without a device, or sections
     * that name nothing) must not pass */
    if (sections_run == 0) fprintf(stderr, "  no section of the suite ran\n");
    CHECK(sections_run > 0);
    kiln_ctx_destroy(ctx);
    return check_finish();
}
