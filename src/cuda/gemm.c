/*
 * src/cuda/gemm.c — GEMM on the GPU (src/ops/dot.h):
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b   for every batch index b.
 * The vendor path is cuBLASLt (f32 with TF32 only when the context allows it, f16, bf16,
 * f64; any transposes through the strides, strided batches, alpha/beta, bias and
 * bias+ReLU epilogues). cuBLASLt is column-major: a row-major C (unit stride along N) is
 * computed as C^T = B^T A^T, a column-major C directly. Whatever it cannot take (strides
 * with no unit axis, negative strides, ReLU with beta != 0 — cuBLASLt applies the epilogue
 * after adding beta*C — a bias on a column-major C, a bias with beta != 0 on a 16-bit C
 * (rounded twice by cuBLASLt), stochastic rounding of 16-bit C) runs as cuBLASLt's product
 * alpha A B into an f32 (f64) workspace and kiln's epilogue pass (bias, ReLU, beta C, the
 * rounding: the reference kernel's formula and bits). What cuBLASLt cannot multiply either
 * (A or B with no unit stride, K = 0, integer dtypes) goes to a simple NVRTC kernel with the
 * same formula: one thread per element of C, f32 (f64 for f64) accumulation. It is the
 * reference, not the fast path (KILN_GEMM_FALLBACK sends every product there).
 * KILN_GEMM=own|vendor|auto|wgmma|mma (read at every call) puts kiln's own kernels
 * (gemm_own.h: wgmma + TMA tiles on sm_90a, mma.sync tiles on sm_80+, f16 / bf16) in front
 * of both; see read_choice below.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/gemm_own.h"

/* The most workspace cuBLASLt's heuristic may ask for; its choice depends on it. For f32 and
 * f64 outputs 32 MiB, PyTorch's: for the RBM's 784x128x4096 f32 product the heuristic offers
 * its 64x64 split-K-by-10 kernel (4 MiB, 43 us) only from that limit, a 84 us kernel under
 * 8 MiB (tools/lt-algos on the H100). For 16-bit outputs 8 MiB: with 32 MiB the heuristic
 * picked, for bf16 products of K = 7 and 9 with a bias, algorithms that are 1 ulp off the
 * correctly rounded result (test_dot, vendor engine), with every reduction scheme but
 * COMPUTE_TYPE masked off too. Each call allocates only what its algorithm needs. */
#define LT_WORKSPACE_WIDE   (32u << 20)
#define LT_WORKSPACE_NARROW (8u << 20)

/* ---- batch axes -------------------------------------------------------------------------- */

typedef kiln_gemm_batches batches;

/* ---- cuBLASLt --------------------------------------------------------------------------- */

/* A logical (rows x cols) matrix with element strides (sr, sc) as a column-major operand. */
static int as_colmajor(int64_t rows, int64_t cols, int64_t sr, int64_t sc, cublasOperation_t *op, int64_t *ld)
{
    if (rows <= 1) sr = 1;
    if (cols <= 1) sc = rows > 1 ? rows : 1;
    if (sr == 1 && sc >= (rows > 1 ? rows : 1)) {
        *op = CUBLAS_OP_N;
        *ld = sc;
        return 1;
    }
    if (sc == 1 && sr >= (cols > 1 ? cols : 1)) {
        *op = CUBLAS_OP_T;
        *ld = sr;
        return 1;
    }
    return 0;
}

static int ptr_align(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int al = 256;
    while (al > 1 && (a % (uintptr_t)al) != 0) al /= 2;
    return al;
}

typedef struct lt_plan {
    cudaDataType_t type, type_d, scale; /* type: A and B; type_d: C = D */
    cublasComputeType_t compute;
    cublasOperation_t opa, opb;
    int64_t m, n, k;            /* of the column-major problem D(m x n) = op(Aop) op(Bop) */
    int64_t lda, ldb, ldd;
    const char *pa, *pb;        /* Aop, Bop */
    int64_t sa, sb, sd;         /* innermost batch strides (elements) of Aop, Bop, D */
    int swap;                   /* 1: Aop = B, Bop = A (row-major C) */
} lt_plan;

/* Fills p when cuBLASLt can run d; returns 0 otherwise. */
static int lt_applicable(const kiln_ctx *ctx, const kiln_gemm_desc *d, lt_plan *p)
{
    memset(p, 0, sizeof *p);
    switch (d->dtype) {
    case KILN_DTYPE_F32:
        p->type = CUDA_R_32F;
        p->scale = CUDA_R_32F;
        p->compute = d->allow_tf32 || ctx->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        break;
    case KILN_DTYPE_F16:
        p->type = CUDA_R_16F;
        p->scale = CUDA_R_32F;
        p->compute = CUBLAS_COMPUTE_32F;
        break;
    case KILN_DTYPE_BF16:
        p->type = CUDA_R_16BF;
        p->scale = CUDA_R_32F;
        p->compute = CUBLAS_COMPUTE_32F;
        break;
    case KILN_DTYPE_F64:
        p->type = CUDA_R_64F;
        p->scale = CUDA_R_64F;
        p->compute = CUBLAS_COMPUTE_64F;
        break;
    default: return 0;
    }
    p->type_d = p->type;
    if (d->round == KILN_ROUND_STOCHASTIC && (d->dtype == KILN_DTYPE_F16 || d->dtype == KILN_DTYPE_BF16)) return 0;
    if (d->K <= 0) return 0;
    if (d->relu && d->beta != 0.0) return 0;
    /* bias with beta != 0 and a 16-bit C: on the H100 (cuBLASLt 13) the result came back
     * rounded twice (off by one f16/bf16 step against one rounding of the f32 sum, seen by
     * test_dot's device pass); kiln rounds once, so the NVRTC kernel takes these */
    if (d->bias && d->beta != 0.0 && (d->dtype == KILN_DTYPE_F16 || d->dtype == KILN_DTYPE_BF16)) return 0;
    int64_t M = d->M, N = d->N, K = d->K;
    int64_t csm = M <= 1 ? (N > 1 ? N : 1) : d->c_sm, csn = N <= 1 ? 1 : d->c_sn;
    int rowc = csn == 1 && csm >= (N > 1 ? N : 1);
    int colc = 0;
    if (!rowc) {
        csm = M <= 1 ? 1 : d->c_sm;
        csn = N <= 1 ? (M > 1 ? M : 1) : d->c_sn;
        colc = csm == 1 && csn >= (M > 1 ? M : 1);
    }
    if (!rowc && !colc) return 0;
    if (d->bias) {
        if (!rowc) return 0;
        if (N > 1 && d->bias_s != 1) return 0;
    }
    if (rowc) {
        /* D = C^T (N x M), ld csm; Aop = B^T (N x K) strides (b_sn, b_sk); Bop = A^T (K x M) (a_sk, a_sm) */
        p->swap = 1;
        p->m = N;
        p->n = M;
        p->k = K;
        p->ldd = csm;
        if (!as_colmajor(N, K, d->b_sn, d->b_sk, &p->opa, &p->lda)) return 0;
        if (!as_colmajor(K, M, d->a_sk, d->a_sm, &p->opb, &p->ldb)) return 0;
        p->pa = d->b;
        p->pb = d->a;
    } else {
        p->swap = 0;
        p->m = M;
        p->n = N;
        p->k = K;
        p->ldd = csn;
        if (!as_colmajor(M, K, d->a_sm, d->a_sk, &p->opa, &p->lda)) return 0;
        if (!as_colmajor(K, N, d->b_sk, d->b_sn, &p->opb, &p->ldb)) return 0;
        p->pa = d->a;
        p->pb = d->b;
    }
    return 1;
}

/* Drops the descriptors of one plan-cache entry and empties its slot. */
static void lt_entry_clear(kiln_cuda_lt_entry *e)
{
    if (e->ld) cublasLtMatrixLayoutDestroy(e->ld);
    if (e->lb) cublasLtMatrixLayoutDestroy(e->lb);
    if (e->la) cublasLtMatrixLayoutDestroy(e->la);
    if (e->op) cublasLtMatmulDescDestroy(e->op);
    memset(e, 0, sizeof *e);
}

void kiln__cuda_lt_cache_clear(kiln_cuda_state *st)
{
    for (int i = 0; i < KILN_CUDA_LT_PLANS; i++)
        if (st->lt_plans[i].last_use) lt_entry_clear(&st->lt_plans[i]);
}

/* Builds entry e for key: the matmul and layout descriptors and the heuristic's best
 * algorithm (e->usable 0 when there is none). On a cuBLASLt error e is left empty. bias:
 * the first call's bias vector (or NULL), set before the query as every call sets its own. */
static kiln_status lt_entry_build(kiln_ctx *ctx, const kiln_cuda_lt_key *key, const void *bias, kiln_cuda_lt_entry *e)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    cublasLtMatmulPreference_t pref = NULL;
    kiln_status s = KILN_OK;
    memset(e, 0, sizeof *e);
    e->key = *key;
#define LT(call)                                                                                 \
    do {                                                                                         \
        int c_ = (int)(call);                                                                    \
        if (c_ != 0) {                                                                           \
            s = kiln__cuda_check_lt(ctx, c_, #call, __FILE__, __LINE__);                        \
            goto out;                                                                            \
        }                                                                                        \
    } while (0)
    cublasOperation_t opa = (cublasOperation_t)key->opa, opb = (cublasOperation_t)key->opb;
    cublasLtEpilogue_t epi = (cublasLtEpilogue_t)key->epilogue;
    LT(cublasLtMatmulDescCreate(&e->op, (cublasComputeType_t)key->compute, (cudaDataType_t)key->scale));
    LT(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    LT(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    LT(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (bias) /* the heuristic sees the first call's bias; later calls set their own */
        LT(cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    /* stored shapes: op N -> rows x cols, op T -> cols x rows */
    int64_t ar = opa == CUBLAS_OP_N ? key->m : key->k, ac = opa == CUBLAS_OP_N ? key->k : key->m;
    int64_t br = opb == CUBLAS_OP_N ? key->k : key->n, bc = opb == CUBLAS_OP_N ? key->n : key->k;
    cudaDataType_t type = (cudaDataType_t)key->type;
    LT(cublasLtMatrixLayoutCreate(&e->la, type, (uint64_t)ar, (uint64_t)ac, key->lda));
    LT(cublasLtMatrixLayoutCreate(&e->lb, type, (uint64_t)br, (uint64_t)bc, key->ldb));
    LT(cublasLtMatrixLayoutCreate(&e->ld, (cudaDataType_t)key->type_d, (uint64_t)key->m, (uint64_t)key->n, key->ldd));
    if (key->nb > 1) {
        int32_t cnt = (int32_t)key->nb;
        cublasLtMatrixLayout_t ls[3] = {e->la, e->lb, e->ld};
        const int64_t *strides[3] = {&key->sa, &key->sb, &key->sd};
        for (int i = 0; i < 3; i++) {
            LT(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &cnt, sizeof cnt));
            LT(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, strides[i],
                                                sizeof *strides[i]));
        }
    }
    size_t wsize = (size_t)key->workspace;
    LT(cublasLtMatmulPreferenceCreate(&pref));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsize, sizeof wsize));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key->al_a,
                                            sizeof key->al_a));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key->al_b,
                                            sizeof key->al_b));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key->al_d,
                                            sizeof key->al_d));
    LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key->al_d,
                                            sizeof key->al_d));
    /* 16-bit outputs: split-K partials summed in f32 only. The heuristic's first choice for
     * f16 7 x 1000 x 129 (column-major, op N T) was 4 splits summed INPLACE, in D's f16: one
     * element 1 ulp off the correctly rounded value (test_dot, vendor engine, H100 2026-12-05).
     * Masked, it takes one split (11 us against 19 us there); on the fifteen FC shapes its
     * first choices already sum in f32 or do not split, and are unchanged (tools/lt-algos,
     * LT_REDUCTION_MASK=2; bench/NOTES.md step 56). */
    if (key->type_d == CUDA_R_16F || key->type_d == CUDA_R_16BF) {
        uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
        LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &scheme,
                                                sizeof scheme));
    }
    {
        cublasLtMatmulHeuristicResult_t res;
        int nres = 0;
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(st->lt, e->op, e->la, e->lb, e->ld, e->ld, pref, 1, &res,
                                                           &nres);
        e->usable = hs == CUBLAS_STATUS_SUCCESS && nres > 0;
        if (e->usable) {
            e->algo = res.algo;
            e->ws_need = res.workspaceSize;
        }
    }
    st->stats.lt_queries++;
out:
#undef LT
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (s != KILN_OK) lt_entry_clear(e);
    return s;
}

/* The cached plan for key, built on a miss into the empty or least recently used slot. */
static kiln_status lt_entry_get(kiln_ctx *ctx, const kiln_cuda_lt_key *key, const void *bias, kiln_cuda_lt_entry **out)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    kiln_cuda_lt_entry *victim = &st->lt_plans[0];
    for (int i = 0; i < KILN_CUDA_LT_PLANS; i++) {
        kiln_cuda_lt_entry *e = &st->lt_plans[i];
        if (e->last_use && memcmp(&e->key, key, sizeof *key) == 0) {
            e->last_use = ++st->lt_clock;
            st->stats.lt_hits++;
            *out = e;
            return KILN_OK;
        }
        if (e->last_use < victim->last_use) victim = e;
    }
    if (victim->last_use) lt_entry_clear(victim);
    KILN_TRY(lt_entry_build(ctx, key, bias, victim));
    victim->last_use = ++st->lt_clock;
    *out = victim;
    return KILN_OK;
}

static kiln_status lt_run(kiln_ctx *ctx, const kiln_gemm_desc *d, const lt_plan *p, const batches *bt, int *done)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    *done = 0;
    int64_t nb = bt->n > 0 ? bt->shape[bt->n - 1] : 1;
    int64_t sa = 0, sb = 0, sd = 0;
    if (bt->n > 0) {
        int64_t s_a = bt->sa[bt->n - 1], s_b = bt->sb[bt->n - 1];
        sa = p->swap ? s_b : s_a;
        sb = p->swap ? s_a : s_b;
        sd = bt->sc[bt->n - 1];
        if (sa < 0 || sb < 0 || sd <= 0) return KILN_OK; /* fallback */
    }
    size_t es = kiln_dtype_size(d->dtype);
    size_t es_d = p->type_d == CUDA_R_32F ? 4 : p->type_d == CUDA_R_64F ? 8 : 2; /* C = D */
    kiln_block *ws = NULL;
    kiln_status s = KILN_OK;
    size_t wsize = 0;
    kiln_cuda_lt_key key;
    memset(&key, 0, sizeof key); /* padding included: the key is compared with memcmp */
    key.type = (int32_t)p->type;
    key.type_d = (int32_t)p->type_d;
    key.scale = (int32_t)p->scale;
    key.compute = (int32_t)p->compute;
    key.opa = (int32_t)p->opa;
    key.opb = (int32_t)p->opb;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    if (d->bias)
        epi = d->relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    else if (d->relu)
        epi = CUBLASLT_EPILOGUE_RELU;
    key.epilogue = (int32_t)epi;
    key.m = p->m;
    key.n = p->n;
    key.k = p->k;
    key.lda = p->lda;
    key.ldb = p->ldb;
    key.ldd = p->ldd;
    key.nb = nb;
    if (nb > 1) {
        key.sa = sa;
        key.sb = sb;
        key.sd = sd;
    }
    key.workspace = p->type_d == CUDA_R_16F || p->type_d == CUDA_R_16BF ? LT_WORKSPACE_NARROW : LT_WORKSPACE_WIDE;
    {
        /* the smallest alignment over every batch's pointers */
        uint32_t al_a = (uint32_t)ptr_align(p->pa), al_b = (uint32_t)ptr_align(p->pb);
        uint32_t al_d = (uint32_t)ptr_align(d->c);
        int64_t bsz[3] = {sa, sb, sd};
        uint32_t *als[3] = {&al_a, &al_b, &al_d};
        const size_t ess[3] = {es, es, es_d};
        for (int i = 0; i < 3 && nb > 1; i++)
            while (*als[i] > 1 && ((uint64_t)bsz[i] * ess[i]) % *als[i]) *als[i] /= 2;
        for (int i = 0; i < bt->n - 1; i++) {
            int64_t outer[3] = {p->swap ? bt->sb[i] : bt->sa[i], p->swap ? bt->sa[i] : bt->sb[i], bt->sc[i]};
            for (int j = 0; j < 3; j++)
                while (*als[j] > 1 && (((uint64_t)(outer[j] < 0 ? -outer[j] : outer[j])) * ess[j]) % *als[j]) *als[j] /= 2;
        }
        key.al_a = al_a;
        key.al_b = al_b;
        key.al_d = al_d;
        key.al_bias = d->bias ? (uint32_t)ptr_align(d->bias) : 0;
    }
    kiln_cuda_lt_entry *e = NULL;
    s = lt_entry_get(ctx, &key, d->bias, &e);
    if (s != KILN_OK || !e->usable) goto out; /* an error, or no algorithm: the fallback kernel */
    if (e->ws_need) {
        wsize = (size_t)e->ws_need;
        if (kiln__mem_try_alloc(ctx, wsize, __FILE__, __LINE__, &ws) != KILN_OK) {
            /* under a memory cap: the heuristic's choice among algorithms without workspace */
            ws = NULL;
            wsize = 0;
            key.workspace = 0;
            s = lt_entry_get(ctx, &key, d->bias, &e);
            if (s != KILN_OK || !e->usable) goto out;
        }
    }
    {
        const void *bp = d->bias; /* per call: the cached descriptor keeps the last one */
        if (d->bias) {
            int c = (int)cublasLtMatmulDescSetAttribute(e->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
            if (c != 0) {
                s = kiln__cuda_check_lt(ctx, c, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", __FILE__, __LINE__);
                goto out;
            }
        }
        float fa = (float)d->alpha, fb = (float)d->beta;
        const void *alpha = p->scale == CUDA_R_64F ? (const void *)&d->alpha : (const void *)&fa;
        const void *beta = p->scale == CUDA_R_64F ? (const void *)&d->beta : (const void *)&fb;
        /* outer (non-merged) batch axes: one call each */
        int64_t outer = 1;
        for (int i = 0; i < bt->n - 1; i++) outer *= bt->shape[i];
        int64_t idx[KILN_MAX_DIMS] = {0};
        for (int64_t o = 0; o < outer; o++) {
            int64_t oa = 0, ob = 0, oc = 0;
            for (int i = 0; i < bt->n - 1; i++) {
                oa += idx[i] * bt->sa[i];
                ob += idx[i] * bt->sb[i];
                oc += idx[i] * bt->sc[i];
            }
            const char *A = d->a + oa * (int64_t)es, *B = d->b + ob * (int64_t)es;
            char *C = d->c + oc * (int64_t)es_d;
            const char *pa = p->swap ? B : A, *pb = p->swap ? A : B;
            int c = (int)cublasLtMatmul(st->lt, e->op, alpha, pa, e->la, pb, e->lb, beta, C, e->ld, C, e->ld, &e->algo,
                                        ws ? ws->ptr : NULL, wsize, st->stream);
            if (c != 0) {
                s = kiln__cuda_check_lt(ctx, c, "cublasLtMatmul", __FILE__, __LINE__);
                goto out;
            }
            for (int i = bt->n - 2; i >= 0; i--) {
                if (++idx[i] < bt->shape[i]) break;
                idx[i] = 0;
            }
        }
        *done = 1;
    }
out:
    kiln__mem_free(ctx, ws); /* stream-ordered reuse: later work is queued on the same stream */
    return s;
}

/* ---- fallback kernel ---------------------------------------------------------------------- */

static const char *stype(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F32: return "float";
    case KILN_DTYPE_F16: return "unsigned short";
    case KILN_DTYPE_BF16: return "unsigned short";
    case KILN_DTYPE_F64: return "double";
    case KILN_DTYPE_I8: return "signed char";
    case KILN_DTYPE_U8: return "unsigned char";
    case KILN_DTYPE_I32: return "int";
    default: return NULL;
    }
}

static const char *load_fn(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F16: return "(CT)kiln_h2f";
    case KILN_DTYPE_BF16: return "(CT)kiln_bf2f";
    default: return "(CT)";
    }
}

/* What the source of the reference kernel and of the epilogue pass depends on (their
 * signature in the kernel cache: the source is not regenerated and hashed per call). */
typedef struct simple_cfg {
    int32_t pass;   /* 0 the reference kernel, 1 the epilogue pass */
    int32_t dtype;  /* kiln_dtype of A, B, C, bias */
    int32_t bias, relu, beta, sr;
    int32_t nbatch; /* batch axes (their words follow word 18) */
} simple_cfg;

/* The epilogue of element (m, n) of batch bi in both kernels, from CT v = alpha * (A_b @
 * B_b)[m, n] to the store: bias, ReLU, beta * C, the rounding to C's dtype. `bits` is the
 * expression of the element's stochastic-rounding bits. */
static void emit_epilogue(kiln_sbuf *b, const simple_cfg *c, int f64, const char *bits)
{
    kiln_dtype dt = (kiln_dtype)c->dtype;
    if (c->bias) kiln__sbuf_printf(b, "    v = v + %s(bias[n * bias_s]);\n", load_fn(dt));
    if (c->relu) kiln__sbuf_puts(b, "    v = v <= (CT)0 ? (CT)0 : v;\n");
    if (c->beta) kiln__sbuf_printf(b, "    v = v + beta * %s(C[oc + m * c_sm + n * c_sn]);\n", load_fn(dt));
    kiln__sbuf_puts(b, "    ST *dst = &C[oc + m * c_sm + n * c_sn];\n");
    if (c->sr) {
        kiln__sbuf_printf(b, "    *dst = (ST)kiln_f32_to_%s((float)v, %s);\n", dt == KILN_DTYPE_F16 ? "f16_sr13" : "bf16_sr", bits);
        return;
    }
    switch (dt) {
    case KILN_DTYPE_F16:
        kiln__sbuf_puts(b, f64 ? "    *dst = (ST)kiln_f64_to_f16_rn(v);\n" : "    *dst = kiln_f2h(v);\n");
        break;
    case KILN_DTYPE_BF16: kiln__sbuf_puts(b, "    *dst = (ST)kiln_f32_to_bf16_rn(v);\n"); break;
    case KILN_DTYPE_I8: kiln__sbuf_puts(b, "    *dst = kiln_to_i8(v);\n"); break;
    case KILN_DTYPE_U8: kiln__sbuf_puts(b, "    *dst = kiln_to_u8(v);\n"); break;
    case KILN_DTYPE_I32: kiln__sbuf_puts(b, "    *dst = kiln_to_i32(v);\n"); break;
    default: kiln__sbuf_puts(b, "    *dst = (ST)v;\n"); break;
    }
}

/* The source of either kernel: its words are 0..18 (kiln__cuda_gemm_words; the pass has its
 * product in word 5, A's place), then (shape, sa, sb, sc) of each batch axis. */
static void gen_simple(const void *cfg, kiln_sbuf *b)
{
    const simple_cfg *c = cfg;
    kiln_dtype dt = (kiln_dtype)c->dtype;
    int f64 = dt == KILN_DTYPE_F64 || (!c->pass && dt == KILN_DTYPE_I32);
    kiln__cuda_prelude(b);
    kiln__sbuf_printf(b, "typedef %s CT; typedef %s ST;\n", f64 ? "double" : "float", stype(dt));
    /* words: 0 seed 1 sr_stream 2 M 3 N 4 K 5 a 6 b 7 c 8 bias 9 a_sm 10 a_sk 11 b_sk 12 b_sn 13 c_sm
     * 14 c_sn 15 bias_s 16 alpha 17 beta 18 nbatch-total 19.. batch (shape, sa, sb, sc) x n */
    kiln__sbuf_printf(b, "struct kiln_args { kiln_w64 w[%d]; };\n", 19 + 4 * c->nbatch);
    kiln__sbuf_printf(b, "extern \"C\" __global__ void %s(const __grid_constant__ kiln_args p) {\n"
                         "  const long long M = (long long)p.w[2], N = (long long)p.w[3];\n"
                         "  ST *C = (ST *)p.w[7];\n"
                         "  const long long c_sm = (long long)p.w[13], c_sn = (long long)p.w[14];\n"
                         "  const long long NB = (long long)p.w[18];\n",
                      c->pass ? "kiln_gemm_pass" : "kiln_gemm");
    if (c->bias) kiln__sbuf_puts(b, "  const ST *bias = (const ST *)p.w[8]; const long long bias_s = (long long)p.w[15];\n");
    if (c->beta) kiln__sbuf_puts(b, "  const CT beta = (CT)__longlong_as_double((long long)p.w[17]);\n");
    if (c->pass)
        kiln__sbuf_puts(b, "  const CT *P = (const CT *)p.w[5];\n");
    else
        kiln__sbuf_puts(b, "  const long long K = (long long)p.w[4];\n"
                           "  const ST *A = (const ST *)p.w[5]; const ST *B = (const ST *)p.w[6];\n"
                           "  const long long a_sm = (long long)p.w[9], a_sk = (long long)p.w[10], b_sk = (long long)p.w[11];\n"
                           "  const long long b_sn = (long long)p.w[12];\n"
                           "  const CT alpha = (CT)__longlong_as_double((long long)p.w[16]);\n");
    if (c->pass) {
        /* a thread takes the eight columns of a row that share one Philox call of stochastic
         * rounding (kiln_gemm_sr_counter: 32-column group g, pair j: columns 32 g + 2 j +
         * {0, 1, 8, 9, 16, 17, 24, 25}), so each call is made once */
        kiln__sbuf_puts(b, "  const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (q >= ((N + 31) >> 5) * 4) return;\n"
                           "  const long long n0 = (q >> 2) * 32 + (q & 3) * 2;\n");
    } else {
        kiln__sbuf_puts(b, "  const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  const long long m = (long long)blockIdx.y * blockDim.y + threadIdx.y;\n"
                           "  if (m >= M || n >= N) return;\n");
    }
    kiln__sbuf_puts(b, "  for (long long bi = blockIdx.z; bi < NB; bi += gridDim.z) {\n"
                       "    long long oc = 0;\n");
    if (c->nbatch > 0) kiln__sbuf_puts(b, "    long long t = bi;\n");
    if (!c->pass) kiln__sbuf_puts(b, "    long long oa = 0, ob = 0;\n");
    for (int i = c->nbatch - 1; i >= 0; i--) {
        int w = 19 + 4 * i;
        if (c->pass)
            kiln__sbuf_printf(b, "    { const long long sz = (long long)p.w[%d], c = t %% sz; t /= sz; oc += c * (long long)p.w[%d]; }\n",
                              w, w + 3);
        else
            kiln__sbuf_printf(b,
                              "    { const long long sz = (long long)p.w[%d], c = t %% sz; t /= sz;\n"
                              "      oa += c * (long long)p.w[%d]; ob += c * (long long)p.w[%d]; oc += c * (long long)p.w[%d]; }\n",
                              w, w + 1, w + 2, w + 3);
    }
    if (c->pass) {
        kiln__sbuf_puts(b, "  for (long long m = (long long)blockIdx.y * blockDim.y + threadIdx.y; m < M; m += (long long)gridDim.y * blockDim.y) {\n"
                           "    const CT *prow = P + (bi * M + m) * N;\n");
        if (c->sr)
            kiln__sbuf_puts(b, "    const kiln_philox4 r = kiln_philox4x32_r(p.w[0], p.w[1], kiln_gemm_sr_counter((kiln_w64)(bi * M + m), "
                               "(kiln_w64)n0, (kiln_w64)N), KILN_GEMM_SR_ROUNDS);\n");
        kiln__sbuf_puts(b, "#pragma unroll\n"
                           "    for (int e = 0; e < 8; e++) {\n"
                           "    const long long n = n0 + (e >> 1) * 8 + (e & 1);\n"
                           "    if (n >= N) continue;\n"
                           "    CT v = prow[n];\n");
        emit_epilogue(b, c, f64, "kiln_gemm_sr_pick(r, (kiln_w64)n)");
        kiln__sbuf_puts(b, "    }\n  }\n  }\n}\n");
    } else {
        kiln__sbuf_printf(b, "    CT acc = (CT)0;\n"
                             "    for (long long k = 0; k < K; k++) acc += %s(A[oa + m * a_sm + k * a_sk]) * %s(B[ob + k * b_sk + n * b_sn]);\n"
                             "    CT v = alpha * acc;\n",
                          load_fn(dt), load_fn(dt));
        emit_epilogue(b, c, f64, "kiln_gemm_sr_bits(p.w[0], p.w[1], (kiln_w64)(bi * M + m), (kiln_w64)n, (kiln_w64)N)");
        kiln__sbuf_puts(b, "  }\n}\n");
    }
}

static int64_t batch_total(const batches *bt)
{
    int64_t nbt = 1;
    for (int i = 0; i < bt->n; i++) nbt *= bt->shape[i];
    return nbt;
}

/* Launches the reference kernel (pass 0) or the epilogue pass over `product` (pass 1). */
static kiln_status launch_simple(kiln_ctx *ctx, const kiln_gemm_desc *d, const batches *bt, int pass, const void *product)
{
    kiln_dtype dt = d->dtype;
    if (!stype(dt)) return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'C': dtype %s is not supported by GEMM", kiln_dtype_name(dt));
    const simple_cfg c = {.pass = pass,
                          .dtype = (int32_t)dt,
                          .bias = d->bias != NULL,
                          .relu = d->relu != 0,
                          .beta = d->beta != 0.0,
                          .sr = d->round == KILN_ROUND_STOCHASTIC && (dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16),
                          .nbatch = bt->n};
    int64_t nbt = batch_total(bt);
    unsigned g[3], bl[3] = {16, 16, 1};
    g[2] = (unsigned)(nbt < 65535 ? nbt : 65535);
    if (pass) {
        int64_t threads_row = (d->N + 31) / 32 * 4;
        bl[0] = threads_row >= 128 ? 128u : (unsigned)((threads_row + 31) / 32 * 32);
        bl[1] = 128u / bl[0];
        int64_t gy = (d->M + bl[1] - 1) / bl[1];
        g[0] = (unsigned)((threads_row + bl[0] - 1) / bl[0]);
        g[1] = (unsigned)(gy < 65535 ? gy : 65535); /* the kernel strides over rows past it */
    } else {
        if ((d->M + 15) / 16 > 65535)
            return KILN_ERROR(ctx, KILN_ERR_LIMIT, "argument 'A': M = %lld is too large for the fallback GEMM", (long long)d->M);
        g[0] = (unsigned)((d->N + 15) / 16);
        g[1] = (unsigned)((d->M + 15) / 16);
    }
    /* a tag ("GKSP") and this source's version first (codegen.c's signatures never start so),
     * then every field of simple_cfg */
    _Static_assert(sizeof(simple_cfg) == 7 * sizeof(int32_t), "a new field of simple_cfg goes into this signature too");
    const int32_t sig[9] = {0x50534b47, 1, c.pass, c.dtype, c.bias, c.relu, c.beta, c.sr, c.nbatch};
    CUfunction fn;
    KILN_TRY(kiln__cuda_gemm_kernel(ctx, sig, 9, gen_simple, &c, pass ? "kiln_gemm_pass" : "kiln_gemm", 0, &fn));
    uint64_t w[19 + 4 * KILN_MAX_DIMS];
    kiln__cuda_gemm_words(d, ctx->seed, nbt, w);
    if (product) w[5] = (uint64_t)(uintptr_t)product;
    for (int i = 0; i < bt->n; i++) {
        w[19 + 4 * i] = (uint64_t)bt->shape[i];
        w[20 + 4 * i] = (uint64_t)bt->sa[i];
        w[21 + 4 * i] = (uint64_t)bt->sb[i];
        w[22 + 4 * i] = (uint64_t)bt->sc[i];
    }
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    size_t size = (size_t)(19 + 4 * bt->n) * 8;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, w, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    KILN_CK(ctx, drv, st->cu.LaunchKernel(fn, g[0], g[1], g[2], bl[0], bl[1], bl[2], 0, (CUstream)st->stream, NULL, extra));
    st->stats.launches++;
    if (st->sync_each) KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    return KILN_OK;
}

/* The reference kernel: one thread an element of C, f32 (f64 for f64 and i32) accumulation. */
static kiln_status fallback(kiln_ctx *ctx, const kiln_gemm_desc *d, const batches *bt)
{
    return launch_simple(ctx, d, bt, 0, NULL);
}

/* ---- cuBLASLt's product, then kiln's epilogue pass ---------------------------------------- */

/* The epilogue pass: C = round(relu?(P + bias) + beta * C) for P = alpha * A_b @ B_b, the f32
 * (f64 for f64) product cuBLASLt wrote row-major and batch after batch into a workspace; the
 * reference kernel's formula and rounding bits (gen_simple). */
static kiln_status epilogue_pass(kiln_ctx *ctx, const kiln_gemm_desc *d, const batches *bt, const void *product)
{
    return launch_simple(ctx, d, bt, 1, product);
}

/* The product half of d (alpha * A_b @ B_b into an f32 / f64 workspace, row-major, batch after
 * batch; beta 0, no epilogue) as d0 / b0 / p; 0 where cuBLASLt cannot take it. */
static int product_plan(const kiln_ctx *ctx, const kiln_gemm_desc *d, const batches *bt, kiln_gemm_desc *d0,
                        batches *b0, lt_plan *p)
{
    kiln_dtype dt = d->dtype;
    if (dt != KILN_DTYPE_F32 && dt != KILN_DTYPE_F16 && dt != KILN_DTYPE_BF16 && dt != KILN_DTYPE_F64) return 0;
    if (d->K <= 0) return 0;
    size_t es_w = dt == KILN_DTYPE_F64 ? 8 : 4;
    if ((uint64_t)batch_total(bt) > (uint64_t)INT64_MAX / (uint64_t)d->M / (uint64_t)d->N / es_w) return 0;
    *d0 = *d;
    d0->bias = NULL;
    d0->relu = 0;
    d0->beta = 0.0;
    d0->round = KILN_ROUND_NEAREST;
    d0->c_sm = d->N;
    d0->c_sn = 1;
    *b0 = *bt;
    for (int i = bt->n - 1; i >= 0; i--) b0->sc[i] = i == bt->n - 1 ? d->M * d->N : b0->sc[i + 1] * b0->shape[i + 1];
    if (!lt_applicable(ctx, d0, p)) return 0;
    p->type_d = dt == KILN_DTYPE_F64 ? CUDA_R_64F : CUDA_R_32F;
    return 1;
}

/* What cuBLASLt cannot take only for its epilogue (stochastic rounding of a 16-bit C, ReLU
 * with beta, a bias with beta on a 16-bit C, a bias on a column-major C, C with no unit
 * stride): cuBLASLt writes alpha * A @ B in f32 (f64) to a workspace, the epilogue pass does
 * the rest. *done 0 (nothing launched) where cuBLASLt cannot take the product either, the
 * dtype has no such product, or the workspace does not fit under the memory cap: the
 * reference kernel runs then. */
static kiln_status lt_then_pass(kiln_ctx *ctx, const kiln_gemm_desc *d, const batches *bt, int *done)
{
    *done = 0;
    kiln_gemm_desc d0;
    batches b0;
    lt_plan p;
    if (!product_plan(ctx, d, bt, &d0, &b0, &p)) return KILN_OK;
    size_t bytes = (size_t)batch_total(bt) * (size_t)d->M * (size_t)d->N * (d->dtype == KILN_DTYPE_F64 ? 8u : 4u);
    kiln_block *ws = NULL;
    if (kiln__mem_try_alloc(ctx, bytes, __FILE__, __LINE__, &ws) != KILN_OK)
        return KILN_OK; /* under a memory cap: the reference kernel, which needs none */
    d0.c = (char *)ws->ptr;
    int lt_done = 0;
    kiln_status s = lt_run(ctx, &d0, &p, &b0, &lt_done);
    if (s == KILN_OK && lt_done) {
        s = epilogue_pass(ctx, d, bt, ws->ptr);
        *done = s == KILN_OK;
    }
    kiln__mem_free(ctx, ws); /* stream-ordered reuse: later work is queued on the same stream */
    return s;
}

/* ---- own kernels: the function of a structure --------------------------------------------- */

kiln_status kiln__cuda_gemm_counters(kiln_ctx *ctx)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (st->gemm_counters) return KILN_OK;
    void *w = NULL;
    KILN_TRY(kiln__cuda_zeroed_words(ctx, KILN_CUDA_COUNTERS * sizeof(int) + 2 * sizeof(unsigned long long), &w));
    st->gemm_counters = w;
    return KILN_OK;
}

/* KILN_GEMM_STATS: 1 into *fused for fused (and unset), 0 for pass; a bad value is an error */
static kiln_status stats_fused(kiln_ctx *ctx, int *fused)
{
    static const char *const ways[] = {"fused", "pass"};
    int way;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_GEMM_STATS", ways, 2, &way));
    *fused = way != 1;
    return KILN_OK;
}

kiln_status kiln__cuda_gemm_stats_words(kiln_ctx *ctx, const kiln_gemm_desc *d, unsigned long long **words)
{
    *words = NULL;
    if (!d->stats) return KILN_OK;
    int fused;
    KILN_TRY(stats_fused(ctx, &fused));
    if (!fused || kiln__cuda_gemm_counters(ctx) != KILN_OK) return KILN_OK;
    *words = (unsigned long long *)(kiln__cuda_state(ctx)->gemm_counters + KILN_CUDA_COUNTERS);
    return KILN_OK;
}

/* The statistics' finish (kiln__cuda_gemm_stats_out_src, gemm_plan.c) */
static void gen_stats_out(const void *cfg, kiln_sbuf *b)
{
    (void)cfg;
    kiln__sbuf_puts(b, kiln__cuda_gemm_stats_out_src);
}

kiln_status kiln__cuda_gemm_stats_finish(kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    unsigned long long *w = (unsigned long long *)(kiln__cuda_state(ctx)->gemm_counters + KILN_CUDA_COUNTERS);
    /* a tag ("GKST") and this kernel's version */
    static const int32_t sig[2] = {0x54534b47, 1};
    CUfunction fn;
    KILN_TRY(kiln__cuda_gemm_kernel(ctx, sig, 2, gen_stats_out, NULL, "kiln_gemm_stats_out", 0, &fn));
    char *out = d->stats;
    long long s = (long long)d->stats_s;
    int f64 = d->stats_dtype == KILN_DTYPE_F64;
    void *params[4] = {&w, &out, &s, &f64};
    const kiln_cuda_launch_attrs at = {0};
    int refused = 0;
    KILN_TRY(kiln__cuda_gemm_launch(ctx, fn, 1, 1, 1, 0, at, params, NULL, &refused));
    *d->stats_done = 1;
    return KILN_OK;
}

kiln_status kiln__cuda_gemm_launch(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned smem,
                                   kiln_cuda_launch_attrs at, void **params, void **extra, int *refused)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    *refused = 0;
    static const char *const off_on[] = {"0", "1"};
    int pdl;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_GEMM_PDL", off_on, 2, &pdl));
    at.early = at.early && pdl != 0 && !at.cooperative && st->cc_major >= 9 && st->cu.LaunchKernelEx;
    if (at.cluster || at.cooperative || at.early)
        return kiln__cuda_launch_ex(ctx, fn, gx, gy, bx, 1, smem, &at, params, extra, refused);
    KILN_CK(ctx, drv, st->cu.LaunchKernel(fn, gx, gy, 1, bx, 1, 1, smem, (CUstream)st->stream, params, extra));
    st->stats.launches++;
    if (st->sync_each) KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    return KILN_OK;
}

kiln_status kiln__cuda_gemm_launch_words(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx,
                                         const uint64_t *words, int cooperative, int *refused)
{
    /* the words are the kernel's one parameter (its kiln_args struct), given as such
     * rather than through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER): a cooperative launch so
     * given ran eagerly but the driver refused it inside a graph capture
     * (CUDA_ERROR_INVALID_VALUE, the FFMA kernel's slice sums, H200, 2026-12-05) */
    void *params[1] = {(void *)words};
    const kiln_cuda_launch_attrs at = {.cooperative = cooperative, .early = 1};
    return kiln__cuda_gemm_launch(ctx, fn, gx, gy, bx, 0, at, params, NULL, refused);
}

kiln_status kiln__cuda_gemm_kernel(kiln_ctx *ctx, const int32_t *sig, size_t n, void (*gen)(const void *, kiln_sbuf *),
                                   const void *cfg, const char *name, unsigned smem, CUfunction *fn)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t h;
    if (kiln__cuda_fast_find(st, sig, n * sizeof *sig, &h, fn)) {
        st->stats.mem_hits++;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        st->stats.last_get_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
        return KILN_OK;
    }
    kiln_sbuf src = {0};
    gen(cfg, &src);
    if (src.oom) {
        kiln__sbuf_free(&src);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'C': no host memory for the GEMM kernel source");
    }
    kiln_status s = kiln__cuda_get_kernel(ctx, src.p, name, fn);
    kiln__sbuf_free(&src);
    if (s != KILN_OK) return s;
    if (smem > 48u * 1024u) {
        if (!st->cu.FuncSetAttribute)
            return KILN_ERROR(ctx, KILN_ERR_DRIVER, "argument 'C': the CUDA driver lacks cuFuncSetAttribute");
        KILN_CK(ctx, drv, st->cu.FuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
    }
    kiln__cuda_fast_add(st, h, sig, n * sizeof *sig, *fn);
    return KILN_OK;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

typedef enum gemm_choice { GEMM_AUTO, GEMM_VENDOR, GEMM_OWN, GEMM_MMA, GEMM_WGMMA, GEMM_FFMA } gemm_choice;

/* KILN_GEMM, read at every call (tests and benchmarks switch it between calls):
 *   vendor  cuBLASLt; its product and the epilogue pass for the epilogues it cannot take;
 *           the reference kernel for what it cannot multiply;
 *   own     kiln's kernels where they apply (gemm_own.h): wgmma on compute capability 9.0
 *           where TMA can read A and B (f16, bf16, and f32 as tf32 when TF32 is allowed),
 *           else mma.sync (f16, bf16) or FFMA (f32); the vendor path for the rest;
 *   wgmma, mma, ffma  that one of kiln's kernels where it applies, the vendor path for the
 *           rest (tests and benchmarks of each kernel);
 *   auto    (unset or empty too) the wgmma kernel for the plan classes measured ahead of
 *           cuBLASLt (kiln__cuda_gemm_wgmma_auto), the vendor path elsewhere; what cuBLASLt
 *           cannot take goes to kiln's own kernels as with own, but for at most 32 rows of
 *           A to cuBLASLt's product and the epilogue pass. */
static kiln_status read_choice(kiln_ctx *ctx, gemm_choice *out)
{
    /* in gemm_choice's order */
    static const char *const names[] = {"auto", "vendor", "own", "mma", "wgmma", "ffma"};
    int i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_GEMM", names, 6, &i));
    *out = i < 0 ? GEMM_AUTO : (gemm_choice)i;
    return KILN_OK;
}

static kiln_status gemm_dispatch(kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    gemm_choice choice = GEMM_AUTO;
    KILN_TRY(read_choice(ctx, &choice));
    if (d->M <= 0 || d->N <= 0) return KILN_OK;
    batches bt;
    kiln__cuda_gemm_merge_batches(d, &bt);
    for (int i = 0; i < bt.n; i++)
        if (bt.shape[i] == 0) return KILN_OK;
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    lt_plan p;
    const int lt_takes = lt_applicable(ctx, d, &p);
    /* auto: what cuBLASLt cannot take (stochastic rounding of a 16-bit C, ReLU with beta, a
     * bias with beta on a 16-bit C, a bias on a column-major C, C with no unit stride) goes to
     * kiln's own kernels where one applies: 1.1-5x faster than cuBLASLt's product and the
     * epilogue pass on gemm-auto's shapes with SR (bench/NOTES.md step 28) */
    /* auto with the output statistics: kiln's own kernels where one applies, their epilogue
     * computing them, against cuBLASLt's product and kiln_dot's two reductions over C after it:
     * 1.06-160x faster on the gemm table's shapes, f16 and f32 (H200, bench/NOTES.md step 52) */
    if (choice == GEMM_AUTO && d->stats) {
        int fused;
        KILN_TRY(stats_fused(ctx, &fused));
        if (fused) choice = GEMM_OWN;
    }
    if (choice == GEMM_AUTO && !lt_takes) {
        /* but at most 32 rows of A: cuBLASLt's product and the epilogue pass, 1.7-1.9x faster
         * than the own kernels' 128-row tiles there (gemm-auto with SR, step 28) */
        kiln_gemm_desc d0;
        batches b0;
        lt_plan p0;
        choice = d->M <= 32 && product_plan(ctx, d, &bt, &d0, &b0, &p0) ? GEMM_VENDOR : GEMM_OWN;
    }
    if ((choice == GEMM_OWN || choice == GEMM_WGMMA || choice == GEMM_AUTO) &&
        kiln__cuda_gemm_wgmma_eligible(ctx, d, &bt) &&
        (choice != GEMM_AUTO || kiln__cuda_gemm_wgmma_auto(d, &bt, st->sm_count))) {
        st->stats.gemm_own++;
        return kiln__cuda_gemm_wgmma(ctx, d, &bt);
    }
    if ((choice == GEMM_OWN || choice == GEMM_MMA) && kiln__cuda_gemm_mma_eligible(st->cc_major, d)) {
        st->stats.gemm_own++;
        return kiln__cuda_gemm_mma(ctx, d, &bt);
    }
    if ((choice == GEMM_OWN || choice == GEMM_FFMA) && kiln__cuda_gemm_ffma_eligible(d)) {
        st->stats.gemm_own++;
        return kiln__cuda_gemm_ffma(ctx, d, &bt);
    }
    if (!kiln__env_get(ctx, "KILN_GEMM_FALLBACK")) {
        int done = 0;
        if (lt_takes) {
            KILN_TRY(lt_run(ctx, d, &p, &bt, &done));
        } else {
            KILN_TRY(lt_then_pass(ctx, d, &bt, &done));
            st->stats.gemm_vendor_pass += done;
        }
        if (done) return KILN_OK;
    }
    st->stats.gemm_reference++;
    return fallback(ctx, d, &bt);
}

/* The GEMM under one snapshot of the KILN_* environment: the dispatch and the kernels' launch
 * read about a dozen variables, which as getenv calls cost ~2 us of host time a call on a
 * machine with a large environment (bench/NOTES.md step 29). */
kiln_status kiln__cuda_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    kiln__env_hold(ctx);
    kiln_status s = gemm_dispatch(ctx, d);
    kiln__env_release(ctx);
    return s;
}
