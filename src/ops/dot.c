/*
 * src/ops/dot.c — kiln_dot: checks the arguments of one (batched) GEMM
 *     C = relu?(alpha * op(A) @ op(B) + bias) + beta * C      (then rounding of 16-bit C)
 * and turns them into the backend-neutral kiln_gemm_desc of src/ops/dot.h, with the
 * transposes (trans_a / trans_b flags and transposed views alike) folded into strides and
 * the batch axes broadcast. It computes nothing itself: ctx->backend->gemm does. A bias
 * per row of C (bias_rows) is the backends' bias per column of the transposed problem
 * C^T = op(B)^T op(A)^T, so every backend and kernel fuses it the same way. The optional
 * statistics of C (max |x| over finite elements, count of non-finite ones) are two
 * reductions through the expression engine after the GEMM.
 * Sizes M or N of 0 (or an empty batch) do nothing (statistics 0, 0); K of 0 is passed on
 * (the backend then gives C = relu?(bias) + beta * C).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "core/internal.h"
#include "ops/dot.h"

static int dtype_supported(kiln_dtype dt)
{
    return dt == KILN_DTYPE_F32 || dt == KILN_DTYPE_F64 || dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16;
}

/* Checks one operand's context, rank and dtype. */
static kiln_status check_operand(kiln_ctx *ctx, const kiln_tensor *t, const char *name)
{
    char s[200];
    if (t->ctx != ctx)
        return KILN_ERROR(ctx, KILN_ERR_CONTEXT, "kiln_dot: argument '%s' belongs to another context than 'C'", name);
    if (t->ndim < 2)
        return KILN_ERROR(ctx, KILN_ERR_SHAPE, "kiln_dot: argument '%s' must have at least 2 axes, has %d (%s)", name,
                          t->ndim, kiln__tensor_str(s, sizeof s, t));
    if (!dtype_supported(t->dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE,
                          "kiln_dot: argument '%s' has dtype %s; kiln_dot supports f32, f64, f16 and bf16", name,
                          kiln_dtype_name(t->dtype));
    return KILN_OK;
}

/* The same GEMM on the transposed view of C: C^T = op(B)^T op(A)^T (A and B swap, M and
 * N swap, C's strides swap), so that d's bias, given per row of C, is per column. */
static void transpose_problem(kiln_gemm_desc *d)
{
    int64_t t = d->M;
    d->M = d->N;
    d->N = t;
    const char *p = d->a;
    d->a = d->b;
    d->b = p;
    int64_t a_sm = d->a_sm, a_sk = d->a_sk;
    d->a_sm = d->b_sn;
    d->a_sk = d->b_sk;
    d->b_sk = a_sk;
    d->b_sn = a_sm;
    t = d->c_sm;
    d->c_sm = d->c_sn;
    d->c_sn = t;
    for (int i = 0; i < d->nbatch; i++) {
        t = d->a_bstride[i];
        d->a_bstride[i] = d->b_bstride[i];
        d->b_bstride[i] = t;
    }
}

/* stats[0] = max |x| over the finite elements of C (0 when none), stats[1] = the number of
 * its non-finite elements: two reductions on C's backend, counted in f64. */
static kiln_status gemm_stats(kiln_tensor *C, kiln_tensor *stats)
{
    kiln_tensor *s[2] = {NULL, NULL};
    kiln_status st = KILN_OK;
    for (int i = 0; i < 2 && st == KILN_OK; i++) {
        kiln_slice ix[1] = {KILN_INDEX(i)};
        st = kiln_tensor_slice(stats, 1, ix, &s[i]);
    }
    if (st == KILN_OK && kiln_tensor_numel(C) == 0) {
        st = kiln_assign(s[0], kiln_scalar(0.0));
        if (st == KILN_OK) st = kiln_assign(s[1], kiln_scalar(0.0));
    } else if (st == KILN_OK) {
        kiln_expr *mag = kiln_where(kiln_finite(kiln_t(C)), kiln_abs(kiln_t(C)), kiln_scalar(0.0));
        st = kiln_assign(s[0], kiln_reduce(KILN_REDUCE_MAX, mag, 0, NULL, 0));
        if (st == KILN_OK) {
            kiln_expr *bad = kiln_sub(kiln_scalar(1.0), kiln_cast(kiln_finite(kiln_t(C)), KILN_DTYPE_F64));
            st = kiln_assign(s[1], kiln_reduce(KILN_REDUCE_SUM, bad, 0, NULL, 0));
        }
    }
    kiln_tensor_release(s[0]);
    kiln_tensor_release(s[1]);
    return st;
}

/* Checks the statistics output: C's context, f32 or f64, (2,), writable, apart from every
 * operand. */
static kiln_status check_stats(kiln_ctx *ctx, const kiln_tensor *stats, const kiln_tensor *C, const kiln_tensor *A,
                               const kiln_tensor *B, const kiln_tensor *bias)
{
    char s[200];
    if (stats->ctx != ctx)
        return KILN_ERROR(ctx, KILN_ERR_CONTEXT, "kiln_dot: argument 'stats' belongs to another context than 'C'");
    if (stats->dtype != KILN_DTYPE_F32 && stats->dtype != KILN_DTYPE_F64)
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "kiln_dot: argument 'stats' must be f32 or f64, is %s",
                          kiln_dtype_name(stats->dtype));
    if (stats->ndim != 1 || stats->shape[0] != 2)
        return KILN_ERROR(ctx, KILN_ERR_SHAPE, "kiln_dot: argument 'stats' must be (2,), is %s",
                          kiln__tensor_str(s, sizeof s, stats));
    if (kiln__tensor_has_aliasing(stats))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_dot: argument 'stats' (%s) is %s: it cannot be written",
                          kiln__tensor_str(s, sizeof s, stats), kiln__tensor_alias_reason(stats));
    const kiln_tensor *others[4] = {C, A, B, bias};
    static const char *names[4] = {"C", "A", "B", "bias"};
    for (int i = 0; i < 4; i++)
        if (others[i] && kiln__tensors_overlap(stats, others[i]))
            return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_dot: argument 'stats' overlaps '%s'", names[i]);
    return KILN_OK;
}

kiln_status kiln_dot(kiln_tensor *C, const kiln_tensor *A, const kiln_tensor *B, double alpha, double beta,
                     const kiln_gemm_args *args)
{
    /* ---- handles and context ---- */
    kiln_ctx *ctx = C ? C->ctx : A ? A->ctx : B ? B->ctx : NULL;
    if (!C) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_dot: argument 'C' is NULL");
    if (!A) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_dot: argument 'A' is NULL");
    if (!B) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_dot: argument 'B' is NULL");
    static const kiln_gemm_args no_args;
    if (!args) args = &no_args;
    const kiln_tensor *bias = args->bias;
    char sa[200], sb[200], sc[200];

    if (!isfinite(alpha))
        return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_dot: argument 'alpha' must be finite, is %g", alpha);
    if (!isfinite(beta)) return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_dot: argument 'beta' must be finite, is %g", beta);
    if (args->round != KILN_ROUND_DEFAULT && args->round != KILN_ROUND_NEAREST && args->round != KILN_ROUND_STOCHASTIC)
        return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_dot: argument 'args->round' has an invalid value (%d)",
                          (int)args->round);

    KILN_TRY(check_operand(ctx, C, "C"));
    KILN_TRY(check_operand(ctx, A, "A"));
    KILN_TRY(check_operand(ctx, B, "B"));
    if (A->dtype != C->dtype || B->dtype != C->dtype) {
        const char *bad = A->dtype != C->dtype ? "A" : "B";
        kiln_dtype bdt = A->dtype != C->dtype ? A->dtype : B->dtype;
        return KILN_ERROR(ctx, KILN_ERR_DTYPE,
                          "kiln_dot: argument '%s' has dtype %s but 'C' has %s (A, B and C must share one dtype)", bad,
                          kiln_dtype_name(bdt), kiln_dtype_name(C->dtype));
    }

    /* ---- matrix sizes after op() ---- */
    int trans_a = args->trans_a != 0, trans_b = args->trans_b != 0;
    int ra = A->ndim, rb = B->ndim, rc = C->ndim;
    int64_t M = trans_a ? A->shape[ra - 1] : A->shape[ra - 2];
    int64_t K = trans_a ? A->shape[ra - 2] : A->shape[ra - 1];
    int64_t Kb = trans_b ? B->shape[rb - 1] : B->shape[rb - 2];
    int64_t N = trans_b ? B->shape[rb - 2] : B->shape[rb - 1];
    if (K != Kb)
        return KILN_ERROR(
            ctx, KILN_ERR_SHAPE,
            "kiln_dot: argument 'B': op(B) is (K=%lld, N=%lld) but op(A) is (M=%lld, K=%lld); K must match "
            "(A is %s%s, B is %s%s)",
            (long long)Kb, (long long)N, (long long)M, (long long)K, kiln__tensor_str(sa, sizeof sa, A),
            trans_a ? " with trans_a" : "", kiln__tensor_str(sb, sizeof sb, B), trans_b ? " with trans_b" : "");
    if (C->shape[rc - 2] != M || C->shape[rc - 1] != N)
        return KILN_ERROR(ctx, KILN_ERR_SHAPE,
                          "kiln_dot: argument 'C' is %s but op(A) @ op(B) is (M=%lld, N=%lld) in its last two axes",
                          kiln__tensor_str(sc, sizeof sc, C), (long long)M, (long long)N);

    /* ---- batch axes: A's and B's broadcast together, and must equal C's ---- */
    int nbatch = 0;
    int64_t batch[KILN_MAX_DIMS];
    if (!kiln__broadcast_shapes(ra - 2, A->shape, rb - 2, B->shape, &nbatch, batch)) {
        char s1[160], s2[160];
        return KILN_ERROR(ctx, KILN_ERR_SHAPE, "kiln_dot: arguments 'A' and 'B': batch axes %s and %s do not broadcast",
                          kiln__shape_str(s1, sizeof s1, ra - 2, A->shape),
                          kiln__shape_str(s2, sizeof s2, rb - 2, B->shape));
    }
    int batch_ok = nbatch == rc - 2;
    for (int i = 0; batch_ok && i < nbatch; i++) batch_ok = batch[i] == C->shape[i];
    if (!batch_ok) {
        char s1[160], s2[160];
        return KILN_ERROR(
            ctx, KILN_ERR_SHAPE, "kiln_dot: argument 'C' has batch axes %s but those of 'A' and 'B' broadcast to %s",
            kiln__shape_str(s1, sizeof s1, rc - 2, C->shape), kiln__shape_str(s2, sizeof s2, nbatch, batch));
    }

    /* ---- bias ---- */
    if (bias) {
        if (bias->ctx != ctx)
            return KILN_ERROR(ctx, KILN_ERR_CONTEXT, "kiln_dot: argument 'bias' belongs to another context than 'C'");
        if (bias->dtype != C->dtype)
            return KILN_ERROR(ctx, KILN_ERR_DTYPE, "kiln_dot: argument 'bias' has dtype %s but 'C' has %s",
                              kiln_dtype_name(bias->dtype), kiln_dtype_name(C->dtype));
        int64_t want = args->bias_rows ? M : N;
        if (bias->ndim != 1 || bias->shape[0] != want)
            return KILN_ERROR(ctx, KILN_ERR_SHAPE, "kiln_dot: argument 'bias' must be (%s,) = (%lld,)%s, is %s",
                              args->bias_rows ? "M" : "N", (long long)want, args->bias_rows ? " (bias_rows)" : "",
                              kiln__tensor_str(sa, sizeof sa, bias));
    }

    /* ---- aliasing ---- */
    if (kiln__tensor_has_aliasing(C))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS,
                          "kiln_dot: argument 'C' (%s) is %s: its elements alias, it cannot be written",
                          kiln__tensor_str(sc, sizeof sc, C), kiln__tensor_alias_reason(C));
    if (kiln__tensors_overlap(C, A)) return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_dot: argument 'C' overlaps 'A'");
    if (kiln__tensors_overlap(C, B)) return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_dot: argument 'C' overlaps 'B'");
    if (bias && kiln__tensors_overlap(C, bias))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_dot: argument 'C' overlaps 'bias'");
    kiln_tensor *stats = args->stats;
    if (stats) KILN_TRY(check_stats(ctx, stats, C, A, B, bias));

    if (!ctx->backend || !ctx->backend->gemm)
        return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "kiln_dot: the %s backend has no GEMM",
                          ctx->backend ? ctx->backend->name : "(none)");

    /* ---- nothing to do ---- */
    if (M == 0 || N == 0) return stats ? gemm_stats(C, stats) : KILN_OK;
    for (int i = 0; i < nbatch; i++)
        if (batch[i] == 0) return stats ? gemm_stats(C, stats) : KILN_OK;

    /* ---- the descriptor ---- */
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = C->dtype;
    d.M = M;
    d.N = N;
    d.K = K;
    d.nbatch = nbatch;
    for (int i = 0; i < nbatch; i++) {
        d.batch_shape[i] = batch[i];
        /* Operand axis aligned at the right; absent or size-1 axes broadcast (stride 0). */
        int ia = i - (nbatch - (ra - 2)), ib = i - (nbatch - (rb - 2));
        d.a_bstride[i] = (ia >= 0 && A->shape[ia] != 1) ? A->strides[ia] : 0;
        d.b_bstride[i] = (ib >= 0 && B->shape[ib] != 1) ? B->strides[ib] : 0;
        d.c_bstride[i] = C->strides[i];
    }
    d.a = kiln__tensor_base(A);
    d.b = kiln__tensor_base(B);
    d.c = kiln__tensor_base(C);
    d.a_sm = trans_a ? A->strides[ra - 1] : A->strides[ra - 2];
    d.a_sk = trans_a ? A->strides[ra - 2] : A->strides[ra - 1];
    d.b_sk = trans_b ? B->strides[rb - 1] : B->strides[rb - 2];
    d.b_sn = trans_b ? B->strides[rb - 2] : B->strides[rb - 1];
    d.c_sm = C->strides[rc - 2];
    d.c_sn = C->strides[rc - 1];
    if (bias) {
        d.bias = kiln__tensor_base(bias);
        d.bias_s = bias->strides[0];
    }
    d.alpha = alpha;
    d.beta = beta;
    d.relu = args->relu != 0;
    kiln_round round = args->round != KILN_ROUND_DEFAULT ? args->round : ctx->round;
    int is16 = d.dtype == KILN_DTYPE_F16 || d.dtype == KILN_DTYPE_BF16;
    d.round = (round == KILN_ROUND_STOCHASTIC && is16) ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
    if (d.round == KILN_ROUND_STOCHASTIC) d.sr_stream = kiln__ctx_take_streams(ctx, 1);
    d.allow_tf32 = ctx->allow_tf32;
    int stats_done = 0;
    if (stats) {
        d.stats = kiln__tensor_base(stats);
        d.stats_dtype = stats->dtype;
        d.stats_s = stats->strides[0];
        d.stats_done = &stats_done;
    }
    if (bias && args->bias_rows) transpose_problem(&d);
    kiln_status st = ctx->backend->gemm(ctx, &d);
    if (st == KILN_OK && stats && !stats_done) st = gemm_stats(C, stats);
    return st;
}
