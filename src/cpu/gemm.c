/*
 * src/cpu/gemm.c — kiln__cpu_gemm, the CPU backend's GEMM entry (src/ops/dot.h):
 *   for every batch b:  C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b, then rounding.
 *
 * Two engines compute alpha * A_b @ B_b:
 *  - CBLAS (built with KILN_WITH_CBLAS, i.e. OpenBLAS): an f32/f64 operand goes to
 *    cblas_sgemm/cblas_dgemm as it is when one of its two axes has unit stride (NoTrans or
 *    Trans with the matching ld); any other operand (other strides, f16, bf16) is first
 *    packed into a contiguous f32/f64 copy. BLAS writes C itself when C is f32/f64 with unit
 *    stride along N (or along M, through C^T = B^T A^T) and there is no bias and no relu;
 *    otherwise it writes alpha*A@B into a contiguous workspace and the epilogue finishes C.
 *  - Built-in: a cache-blocked GEMM in plain C. C is cut into tiles of about TM x NC, one
 *    task each, run on the context's threads (src/cpu/pool.c). A task packs panels of A
 *    (MC x KC, in MR-row strips) and B (KC x NC, in NR-column strips), converted to the
 *    compute type, into its worker's contiguous buffers; an MR x NR register-blocked
 *    micro-kernel written so that gcc -O3 vectorizes it accumulates into the worker's tile
 *    workspace; the epilogue then stores the tile of C. Every element of C is computed by
 *    one task, as the sum over k in K order (register sums within a KC block, the blocks
 *    added in order into the tile), so C is bit for bit the same for any thread count.
 * The built-in engine runs when CBLAS is absent, when K is 0, when a size does not fit
 * BLAS's int, or when the environment has KILN_CPU_GEMM=builtin (read at every call; it lets
 * tests and benchmarks run both engines in one build).
 *
 * f16 and bf16 are computed in f32, f32 in f32, f64 in f64. The epilogue works in the
 * compute type, in this order: t = alpha*acc; t += bias[n]; t = relu ? maximum(t, +0) : t
 * (t <= 0, -0 included, becomes +0; NaN stays NaN); t += beta*C_old (C_old is not read
 * when beta == 0, so garbage there is ignored); store (f16/bf16: nearest-even, or
 * stochastic rounding with the Philox bits of (ctx->seed, d->sr_stream, index), index =
 * row-major linear index of the element over (batch..., M, N)).
 * Every workspace comes from the context's counting allocator and is taken before C is
 * written, so a failure (OOM) leaves C unchanged. The CBLAS engine runs on the calling
 * thread (OpenBLAS has threads of its own).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/numeric.h"
#include "cpu/cpu.h"
#include "ops/dot.h"

#ifdef KILN_WITH_CBLAS
#include <cblas.h>
#endif

/* Cache blocking (elements): A block MC x KC, B panel KC x NC, accumulator tile of about
 * GEMM_TM x NC (the task of one thread, below). */
enum { GEMM_MC = 96, GEMM_KC = 256, GEMM_NC = 512 };
/* Register blocking of the micro-kernels: MR rows x NR columns of C per call. */
enum { MR_S = 4, NR_S = 8, MR_D = 4, NR_D = 8 }; /* 4x8 measured best with baseline x86-64 (SSE2) code */

/* ---- loads and stores ----------------------------------------------------------------- */

/* dst[i*ds] = src[i*ss] for i < n, src of dtype dt converted to f32 (ds, ss in elements). */
static void load_f32(float *dst, int64_t ds, const char *src, kiln_dtype dt, int64_t ss, int64_t n)
{
    switch (dt) {
    case KILN_DTYPE_F32: {
        const float *p = (const float *)src;
        if (ds == 1 && ss == 1)
            memcpy(dst, p, (size_t)n * sizeof *dst);
        else
            for (int64_t i = 0; i < n; i++) dst[i * ds] = p[i * ss];
        break;
    }
    case KILN_DTYPE_F16: {
        const uint16_t *p = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = kiln_f16_to_f32(p[i * ss]);
        break;
    }
    case KILN_DTYPE_BF16: {
        const uint16_t *p = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = kiln_bf16_to_f32(p[i * ss]);
        break;
    }
    case KILN_DTYPE_F64: {
        const double *p = (const double *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = (float)p[i * ss];
        break;
    }
    default: /* kiln_dot admits only the four float dtypes */
        for (int64_t i = 0; i < n; i++) dst[i * ds] = 0.0f;
        break;
    }
}

/* The same into f64. */
static void load_f64(double *dst, int64_t ds, const char *src, kiln_dtype dt, int64_t ss, int64_t n)
{
    switch (dt) {
    case KILN_DTYPE_F64: {
        const double *p = (const double *)src;
        if (ds == 1 && ss == 1)
            memcpy(dst, p, (size_t)n * sizeof *dst);
        else
            for (int64_t i = 0; i < n; i++) dst[i * ds] = p[i * ss];
        break;
    }
    case KILN_DTYPE_F32: {
        const float *p = (const float *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = p[i * ss];
        break;
    }
    case KILN_DTYPE_F16: {
        const uint16_t *p = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = kiln_f16_to_f32(p[i * ss]);
        break;
    }
    case KILN_DTYPE_BF16: {
        const uint16_t *p = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) dst[i * ds] = kiln_bf16_to_f32(p[i * ss]);
        break;
    }
    default:
        for (int64_t i = 0; i < n; i++) dst[i * ds] = 0.0;
        break;
    }
}

/* n values of src (dtype dt, stride ss elements) into dst in the compute type ct (f32/f64). */
static void load_ct(void *dst, kiln_dtype ct, int64_t ds, const char *src, kiln_dtype dt, int64_t ss, int64_t n)
{
    if (ct == KILN_DTYPE_F64)
        load_f64((double *)dst, ds, src, dt, ss, n);
    else
        load_f32((float *)dst, ds, src, dt, ss, n);
}

static inline double load_one(const char *p, kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F32: return *(const float *)p;
    case KILN_DTYPE_F64: return *(const double *)p;
    case KILN_DTYPE_F16: return kiln_f16_to_f32(*(const uint16_t *)p);
    case KILN_DTYPE_BF16: return kiln_bf16_to_f32(*(const uint16_t *)p);
    default: return 0.0;
    }
}

/* ---- epilogue ------------------------------------------------------------------------- */

/* Finishes the block of C with rows m0..m0+rows-1 and columns n0..n0+cols-1 of batch c
 * (C_b's element [0, 0]) from w, which holds acc = A_b @ B_b for that block (row-major,
 * leading dimension ldw) in the compute type T. row0 = row of C_b[0, 0] over the batch
 * (b * M), the key of stochastic rounding with the column (kiln_gemm_sr_bits). */
#define DEFINE_EPILOGUE(T, sfx)                                                                                        \
    static void epilogue_##sfx(const kiln_ctx *ctx, const kiln_gemm_desc *d, const T *w, int64_t ldw, int64_t m0,      \
                               int64_t rows, int64_t n0, int64_t cols, char *c, uint64_t row0)                         \
    {                                                                                                                  \
        const kiln_dtype dt = d->dtype;                                                                                \
        const int64_t es = (int64_t)kiln_dtype_size(dt);                                                               \
        const T alpha = (T)d->alpha, beta = (T)d->beta;                                                                \
        const int sr = d->round == KILN_ROUND_STOCHASTIC;                                                              \
        for (int64_t i = 0; i < rows; i++) {                                                                           \
            const int64_t m = m0 + i;                                                                                  \
            const T *wr = w + i * ldw;                                                                                 \
            for (int64_t j = 0; j < cols; j++) {                                                                       \
                const int64_t n = n0 + j;                                                                              \
                T t = alpha * wr[j];                                                                                   \
                if (d->bias) t += (T)load_one(d->bias + n * d->bias_s * es, dt);                                       \
                if (d->relu && t <= (T)0) t = (T)0;                                                                    \
                char *p = c + (m * d->c_sm + n * d->c_sn) * es;                                                        \
                if (d->beta != 0.0) t += beta * (T)load_one(p, dt);                                                    \
                switch (dt) {                                                                                          \
                case KILN_DTYPE_F32: *(float *)p = (float)t; break;                                                    \
                case KILN_DTYPE_F64: *(double *)p = (double)t; break;                                                  \
                case KILN_DTYPE_F16:                                                                                   \
                    *(uint16_t *)p = sr ? kiln_f32_to_f16_sr13((float)t, kiln_gemm_sr_bits(ctx->seed, d->sr_stream,      \
                                                                                         row0 + (uint64_t)m,           \
                                                                                         (uint64_t)n,                  \
                                                                                         (uint64_t)d->N))              \
                                        : kiln_f32_to_f16_rn((float)t);                                                \
                    break;                                                                                             \
                case KILN_DTYPE_BF16:                                                                                  \
                    *(uint16_t *)p =                                                                                   \
                        sr ? kiln_f32_to_bf16_sr(                                                                      \
                                 (float)t, kiln_gemm_sr_bits(ctx->seed, d->sr_stream, row0 + (uint64_t)m, (uint64_t)n,   \
                                                            (uint64_t)d->N))                                           \
                           : kiln_f32_to_bf16_rn((float)t);                                                            \
                    break;                                                                                             \
                default: break;                                                                                        \
                }                                                                                                      \
            }                                                                                                          \
        }                                                                                                              \
    }

DEFINE_EPILOGUE(float, f32)
DEFINE_EPILOGUE(double, f64)

static void epilogue(const kiln_ctx *ctx, const kiln_gemm_desc *d, kiln_dtype ct, const void *w, int64_t ldw,
                     int64_t m0, int64_t rows, int64_t n0, int64_t cols, char *c, uint64_t row0)
{
    if (ct == KILN_DTYPE_F64)
        epilogue_f64(ctx, d, (const double *)w, ldw, m0, rows, n0, cols, c, row0);
    else
        epilogue_f32(ctx, d, (const float *)w, ldw, m0, rows, n0, cols, c, row0);
}

/* ---- built-in engine ------------------------------------------------------------------ */

/* t[i*ldt + j] += sum_k a[k*MR + i] * b[k*NR + j] for i < mr, j < nr (a and b are packed
 * strips, zero-padded to MR and NR). The full MR x NR tile is computed in registers. */
#define DEFINE_UKR(T, sfx, MR, NR)                                                                           \
    static void ukr_##sfx(int64_t kc, const void *a_, const void *b_, void *t_, int64_t ldt, int mr, int nr) \
    {                                                                                                        \
        const T *restrict a = (const T *)a_;                                                                 \
        const T *restrict b = (const T *)b_;                                                                 \
        T *restrict t = (T *)t_;                                                                             \
        T acc[MR][NR];                                                                                       \
        for (int i = 0; i < MR; i++)                                                                         \
            for (int j = 0; j < NR; j++) acc[i][j] = (T)0;                                                   \
        for (int64_t k = 0; k < kc; k++) {                                                                   \
            const T *ak = a + k * MR, *bk = b + k * NR;                                                      \
            for (int i = 0; i < MR; i++) {                                                                   \
                const T ai = ak[i];                                                                          \
                for (int j = 0; j < NR; j++) acc[i][j] += ai * bk[j];                                        \
            }                                                                                                \
        }                                                                                                    \
        if (mr == MR && nr == NR) {                                                                          \
            for (int i = 0; i < MR; i++)                                                                     \
                for (int j = 0; j < NR; j++) t[i * ldt + j] += acc[i][j];                                    \
        } else {                                                                                             \
            for (int i = 0; i < mr; i++)                                                                     \
                for (int j = 0; j < nr; j++) t[i * ldt + j] += acc[i][j];                                    \
        }                                                                                                    \
    }

DEFINE_UKR(float, f32, MR_S, NR_S)
DEFINE_UKR(double, f64, MR_D, NR_D)

typedef struct engine {
    kiln_dtype ct; /* compute type: f32 or f64 */
    int64_t cs;    /* its size in bytes */
    int mr, nr;
    void (*ukr)(int64_t kc, const void *a, const void *b, void *t, int64_t ldt, int mr, int nr);
} engine;

static engine engine_for(kiln_dtype dt)
{
    if (dt == KILN_DTYPE_F64) return (engine){KILN_DTYPE_F64, 8, MR_D, NR_D, ukr_f64};
    return (engine){KILN_DTYPE_F32, 4, MR_S, NR_S, ukr_f32};
}

/* Packs the mc x kc block of A at a (strides sm, sk in elements) into MR-row strips:
 * strip p holds element (p*MR + i, k) at [p*MR*kc + k*MR + i]; rows past mc are zero. */
static void pack_a(const engine *e, char *dst, const char *a, kiln_dtype dt, int64_t sm, int64_t sk, int64_t mc,
                   int64_t kc)
{
    const int64_t es = (int64_t)kiln_dtype_size(dt);
    for (int64_t p = 0; p < mc; p += e->mr) {
        char *strip = dst + p * kc * e->cs;
        for (int i = 0; i < e->mr; i++) {
            if (p + i < mc) {
                load_ct(strip + i * e->cs, e->ct, e->mr, a + (p + i) * sm * es, dt, sk, kc);
            } else {
                for (int64_t k = 0; k < kc; k++) memset(strip + (k * e->mr + i) * e->cs, 0, (size_t)e->cs);
            }
        }
    }
}

/* Packs the kc x nc panel of B at b (strides sk, sn) into NR-column strips: strip q holds
 * element (k, q*NR + j) at [q*NR*kc + k*NR + j]; columns past nc are zero. */
static void pack_b(const engine *e, char *dst, const char *b, kiln_dtype dt, int64_t sk, int64_t sn, int64_t kc,
                   int64_t nc)
{
    const int64_t es = (int64_t)kiln_dtype_size(dt);
    for (int64_t q = 0; q < nc; q += e->nr) {
        char *strip = dst + q * kc * e->cs;
        for (int j = 0; j < e->nr; j++) {
            if (q + j < nc) {
                load_ct(strip + j * e->cs, e->ct, e->nr, b + (q + j) * sn * es, dt, sk, kc);
            } else {
                for (int64_t k = 0; k < kc; k++) memset(strip + (k * e->nr + j) * e->cs, 0, (size_t)e->cs);
            }
        }
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}
static int64_t round_up(int64_t a, int64_t m)
{
    return (a + m - 1) / m * m;
}

/* The built-in engine's job: C of every batch cut into tiles of tm rows (a multiple of MR)
 * and GEMM_NC columns, one task each. Tile sizes depend on the shape alone. A task packs its
 * own A blocks and B panels and owns one workspace (worker w's: packed A block, packed B
 * panel, accumulator tile), so tasks share nothing but the read-only A, B and bias. */
typedef struct builtin_job {
    const kiln_ctx *ctx;
    const kiln_gemm_desc *d;
    engine e;
    int64_t tm, mt, nt; /* rows per tile; row tiles and column tiles per batch */
    int64_t ldt;        /* leading dimension of the accumulator: min(NC, N) rounded up to NR */
    size_t ab, bb, wb;  /* bytes of the packed A block, of the B panel, of one workspace */
    char *ws;           /* nworkers workspaces */
} builtin_job;

/* Rows per tile: about GEMM_TM, the rows shared evenly among the tiles. */
enum { GEMM_TM = 128 };

static void builtin_plan(builtin_job *j, const kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    memset(j, 0, sizeof *j);
    j->ctx = ctx;
    j->d = d;
    j->e = engine_for(d->dtype);
    const engine *e = &j->e;
    const int64_t ntm = (d->M + GEMM_TM - 1) / GEMM_TM;
    j->tm = round_up((d->M + ntm - 1) / ntm, e->mr);
    j->mt = (d->M + j->tm - 1) / j->tm;
    j->nt = (d->N + GEMM_NC - 1) / GEMM_NC;
    j->ldt = round_up(min64(GEMM_NC, d->N), e->nr);
    const int64_t mc = round_up(min64(GEMM_MC, j->tm), e->mr), kc = min64(GEMM_KC, d->K);
    j->ab = (size_t)round_up(mc * kc * e->cs, 64);
    j->bb = (size_t)round_up(kc * j->ldt * e->cs, 64);
    j->wb = j->ab + j->bb + (size_t)round_up(j->tm * j->ldt * e->cs, 64);
}

/* Task t: tile (it, jt) of batch bi. Each element of C gets the K-blocks' partial sums in
 * K order, so its value does not depend on the tiling or on the worker. */
static void builtin_task(void *arg, int64_t t, int worker)
{
    const builtin_job *j = arg;
    const kiln_gemm_desc *d = j->d;
    const engine *e = &j->e;
    const int64_t es = (int64_t)kiln_dtype_size(d->dtype);
    const int64_t M = d->M, N = d->N, K = d->K, ldt = j->ldt;
    const int64_t per = j->mt * j->nt, bi = t / per;
    const int64_t m0 = (t % per) / j->nt * j->tm, n0 = (t % per) % j->nt * GEMM_NC;
    const int64_t ms = min64(j->tm, M - m0), ns = min64(GEMM_NC, N - n0);
    /* batch bi's operands */
    int64_t ao = 0, bo = 0, co = 0, r = bi;
    for (int i = d->nbatch - 1; i >= 0; i--) {
        const int64_t q = r % d->batch_shape[i];
        r /= d->batch_shape[i];
        ao += q * d->a_bstride[i];
        bo += q * d->b_bstride[i];
        co += q * d->c_bstride[i];
    }
    /* A or B is empty (NULL) when K is 0: then nothing is packed or read. */
    const char *a = d->a ? d->a + ao * es : NULL, *b = d->b ? d->b + bo * es : NULL;
    char *ws = j->ws + (size_t)worker * j->wb;
    char *ap = ws, *bp = ws + j->ab, *acc = ws + j->ab + j->bb;
    memset(acc, 0, (size_t)(ms * ldt * e->cs));
    for (int64_t pc = 0; pc < K; pc += GEMM_KC) {
        const int64_t kcs = min64(GEMM_KC, K - pc);
        pack_b(e, bp, b + (pc * d->b_sk + n0 * d->b_sn) * es, d->dtype, d->b_sk, d->b_sn, kcs, ns);
        for (int64_t ic = 0; ic < ms; ic += GEMM_MC) {
            const int64_t mcs = min64(GEMM_MC, ms - ic);
            pack_a(e, ap, a + ((m0 + ic) * d->a_sm + pc * d->a_sk) * es, d->dtype, d->a_sm, d->a_sk, mcs, kcs);
            for (int64_t jr = 0; jr < ns; jr += e->nr) {
                const int nr = (int)min64(e->nr, ns - jr);
                for (int64_t ir = 0; ir < mcs; ir += e->mr) {
                    const int mr = (int)min64(e->mr, mcs - ir);
                    e->ukr(kcs, ap + ir * kcs * e->cs, bp + jr * kcs * e->cs, acc + ((ic + ir) * ldt + jr) * e->cs, ldt,
                           mr, nr);
                }
            }
        }
    }
    epilogue(j->ctx, d, e->ct, acc, ldt, m0, ms, n0, ns, d->c + co * es, (uint64_t)(bi * M));
}

/* Every batch through the built-in engine, on the context's threads. */
static kiln_status builtin_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d, int64_t nb)
{
    builtin_job j;
    builtin_plan(&j, ctx, d);
    const int64_t ntasks = nb * j.mt * j.nt;
    /* work in interpreted points: a multiply-add of the blocked kernel costs about a sixteenth
     * of an interpreted point (of a few instructions), and about one instruction's cost */
    const int64_t macs = nb * d->M * d->N * (d->K > 0 ? d->K : 1);
    int nw = kiln__cpu_workers(ctx, ntasks, macs / 16);
    kiln_block *blk = NULL;
    kiln_status s = nw > 1 ? kiln__mem_try_alloc(ctx, (size_t)nw * j.wb, __FILE__, __LINE__, &blk)
                            : kiln__mem_alloc(ctx, j.wb, __FILE__, __LINE__, &blk);
    if (s == KILN_ERR_OOM && nw > 1) { /* under a memory limit: one workspace may still fit */
        nw = 1;
        s = kiln__mem_alloc(ctx, j.wb, __FILE__, __LINE__, &blk);
    }
    KILN_TRY(s);
    j.ws = blk->ptr;
    kiln__cpu_parallel(ctx, nw, ntasks, macs, builtin_task, &j);
    kiln__mem_free(ctx, blk);
    return KILN_OK;
}

/* ---- CBLAS engine --------------------------------------------------------------------- */

#ifdef KILN_WITH_CBLAS
/* A row-major view of a matrix for BLAS: element (i, j) at p + (i*sr + j*sc) elements. */
typedef struct mat {
    const char *p;
    int64_t rows, cols, sr, sc;
} mat;

/* Whether BLAS can read x as it is (row-major NoTrans, or the transpose of a row-major
 * matrix), and with which transpose flag and leading dimension. */
static int blas_layout(const mat *x, CBLAS_TRANSPOSE *trans, int *ld)
{
    int64_t r1 = x->rows > 1 ? x->rows : 1, c1 = x->cols > 1 ? x->cols : 1;
    if (x->sc == 1 || x->cols == 1) {
        int64_t l = x->rows == 1 ? c1 : x->sr;
        if (l >= c1 && l <= INT_MAX) {
            *trans = CblasNoTrans;
            *ld = (int)l;
            return 1;
        }
    }
    if (x->sr == 1 || x->rows == 1) {
        int64_t l = x->cols == 1 ? r1 : x->sc;
        if (l >= r1 && l <= INT_MAX) {
            *trans = CblasTrans;
            *ld = (int)l;
            return 1;
        }
    }
    return 0;
}

/* c = alpha * a @ b + beta * c with c row-major NoTrans (checked by the caller). */
static void blas_call(kiln_dtype ct, const mat *a, const mat *b, const mat *c, double alpha, double beta)
{
    CBLAS_TRANSPOSE ta = CblasNoTrans, tb = CblasNoTrans, tc = CblasNoTrans;
    int lda = 1, ldb = 1, ldc = 1;
    blas_layout(a, &ta, &lda);
    blas_layout(b, &tb, &ldb);
    blas_layout(c, &tc, &ldc);
    int m = (int)c->rows, n = (int)c->cols, k = (int)a->cols;
    if (ct == KILN_DTYPE_F64)
        cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, (const double *)a->p, lda, (const double *)b->p, ldb, beta,
                    (double *)c->p, ldc);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, (float)alpha, (const float *)a->p, lda, (const float *)b->p, ldb,
                    (float)beta, (float *)c->p, ldc);
}

/* Whether c can be written by BLAS as row-major (1) or through its transpose (2), or not (0). */
static int blas_c_orientation(const mat *c)
{
    CBLAS_TRANSPOSE t;
    int ld;
    if (blas_layout(c, &t, &ld) && t == CblasNoTrans) return 1;
    mat ct = {c->p, c->cols, c->rows, c->sc, c->sr};
    if (blas_layout(&ct, &t, &ld) && t == CblasNoTrans) return 2;
    return 0;
}

/* Copies the rows x cols matrix x (dtype dt) into dst, row-major contiguous in ct. */
static void pack_full(void *dst, kiln_dtype ct, int64_t cs, const mat *x, kiln_dtype dt)
{
    const int64_t es = (int64_t)kiln_dtype_size(dt);
    char *o = dst;
    for (int64_t i = 0; i < x->rows; i++)
        load_ct(o + i * x->cols * cs, ct, 1, x->p + i * x->sr * es, dt, x->sc, x->cols);
}

static int fits_int(int64_t v)
{
    return v >= 0 && v <= INT_MAX;
}

/* Runs every batch through BLAS. Returns KILN_ERR_UNSUPPORTED (without recording an error)
 * when the sizes do not fit BLAS, so the caller falls back to the built-in engine. */
static kiln_status blas_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d, int64_t nb)
{
    const int64_t M = d->M, N = d->N, K = d->K;
    if (!fits_int(M) || !fits_int(N) || !fits_int(K) || K == 0 || !fits_int(M * K) || !fits_int(K * N) ||
        !fits_int(M * N))
        return KILN_ERR_UNSUPPORTED;
    const kiln_dtype dt = d->dtype;
    const kiln_dtype ct = dt == KILN_DTYPE_F64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
    const int64_t cs = (int64_t)kiln_dtype_size(ct), es = (int64_t)kiln_dtype_size(dt);
    CBLAS_TRANSPOSE t;
    int ld;

    /* Layout decisions are the same for every batch. */
    mat a0 = {d->a, M, K, d->a_sm, d->a_sk}, b0 = {d->b, K, N, d->b_sk, d->b_sn}, c0 = {d->c, M, N, d->c_sm, d->c_sn};
    const int pack_a_ = dt != ct || !blas_layout(&a0, &t, &ld);
    const int pack_b_ = dt != ct || !blas_layout(&b0, &t, &ld);
    const int c_orient = (dt == ct && !d->bias && !d->relu) ? blas_c_orientation(&c0) : 0;

    kiln_block *abuf = NULL, *bbuf = NULL, *wbuf = NULL;
    kiln_status s = KILN_OK;
    if (pack_a_) s = kiln__mem_alloc(ctx, (size_t)(M * K * cs), __FILE__, __LINE__, &abuf);
    if (s == KILN_OK && pack_b_) s = kiln__mem_alloc(ctx, (size_t)(K * N * cs), __FILE__, __LINE__, &bbuf);
    if (s == KILN_OK && !c_orient) s = kiln__mem_alloc(ctx, (size_t)(M * N * cs), __FILE__, __LINE__, &wbuf);
    if (s != KILN_OK) {
        kiln__mem_free(ctx, abuf);
        kiln__mem_free(ctx, bbuf);
        kiln__mem_free(ctx, wbuf);
        return s;
    }

    int64_t idx[KILN_MAX_DIMS] = {0}, ao = 0, bo = 0, co = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        mat a = {d->a + ao * es, M, K, d->a_sm, d->a_sk};
        mat b = {d->b + bo * es, K, N, d->b_sk, d->b_sn};
        mat c = {d->c + co * es, M, N, d->c_sm, d->c_sn};
        if (pack_a_) {
            pack_full(abuf->ptr, ct, cs, &a, dt);
            a = (mat){abuf->ptr, M, K, K, 1};
        }
        if (pack_b_) {
            pack_full(bbuf->ptr, ct, cs, &b, dt);
            b = (mat){bbuf->ptr, K, N, N, 1};
        }
        if (c_orient == 1) {
            blas_call(ct, &a, &b, &c, d->alpha, d->beta);
        } else if (c_orient == 2) {
            /* C^T = B^T A^T */
            mat at = {a.p, K, M, a.sc, a.sr}, bt = {b.p, N, K, b.sc, b.sr}, ctr = {c.p, N, M, c.sc, c.sr};
            blas_call(ct, &bt, &at, &ctr, d->alpha, d->beta);
        } else {
            mat w = {wbuf->ptr, M, N, N, 1};
            blas_call(ct, &a, &b, &w, 1.0, 0.0);
            epilogue(ctx, d, ct, wbuf->ptr, N, 0, M, 0, N, (char *)c.p, (uint64_t)(bi * M));
        }
        for (int i = d->nbatch - 1; i >= 0; i--) {
            idx[i]++;
            ao += d->a_bstride[i];
            bo += d->b_bstride[i];
            co += d->c_bstride[i];
            if (idx[i] < d->batch_shape[i]) break;
            ao -= d->a_bstride[i] * d->batch_shape[i];
            bo -= d->b_bstride[i] * d->batch_shape[i];
            co -= d->c_bstride[i] * d->batch_shape[i];
            idx[i] = 0;
        }
    }
    kiln__mem_free(ctx, abuf);
    kiln__mem_free(ctx, bbuf);
    kiln__mem_free(ctx, wbuf);
    return KILN_OK;
}
#endif /* KILN_WITH_CBLAS */

/* ---- entry ---------------------------------------------------------------------------- */

/* KILN_CPU_GEMM: unset, empty or auto = OpenBLAS where kiln has it, builtin = the blocked
 * GEMM here; anything else is an error naming the variable */
static kiln_status read_engine(kiln_ctx *ctx, int *builtin)
{
    static const char *const engines[] = {"auto", "builtin"};
    int i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_CPU_GEMM", engines, 2, &i));
    *builtin = i == 1;
    return KILN_OK;
}

kiln_status kiln__cpu_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    if (!d) return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "kiln__cpu_gemm: argument 'd' is NULL");
    if (d->dtype != KILN_DTYPE_F32 && d->dtype != KILN_DTYPE_F64 && d->dtype != KILN_DTYPE_F16 &&
        d->dtype != KILN_DTYPE_BF16)
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "kiln__cpu_gemm: dtype %s is not supported", kiln_dtype_name(d->dtype));
    int64_t nb = 1;
    for (int i = 0; i < d->nbatch; i++) nb *= d->batch_shape[i];
    int builtin = 0;
    KILN_TRY(read_engine(ctx, &builtin));
    if (d->M <= 0 || d->N <= 0 || nb == 0) return KILN_OK;

#ifdef KILN_WITH_CBLAS
    if (!builtin) {
        kiln_status s = blas_gemm(ctx, d, nb);
        if (s != KILN_ERR_UNSUPPORTED) return s;
    }
#else
    (void)builtin_forced;
#endif

    return builtin_gemm(ctx, d, nb);
}
