/*
 * src/cuda/gemm_mma_launch.c — runs kiln's mma.sync GEMM kernel (gemm_mma.c: its source and the
 * launch description) on the context's device: the kernel through the cache, the launch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_own.h"

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_mma_source(cfg, b); }

kiln_status kiln__cuda_gemm_mma(kiln_ctx *ctx, const kiln_gemm_desc *d_in, const kiln_gemm_batches *bt)
{
    /* the output statistics in the epilogue where their words can be had, else kiln_dot's pass */
    kiln_gemm_desc d = *d_in;
    unsigned long long *stats_words;
    KILN_TRY(kiln__cuda_gemm_stats_words(ctx, &d, &stats_words));
    if (!stats_words) d.stats = NULL;
    kiln_gemm_mma_launch l;
    kiln__cuda_gemm_mma_prepare(&d, bt, ctx->seed, &l);
    l.w[KILN_GEMM_MMA_W_STATS] = (uint64_t)(uintptr_t)stats_words;
    /* a tag ("GKMM") and this kernel's version first (codegen.c's signatures never start so),
     * then every field of the configuration: one left out would let two sources share a key */
    _Static_assert(sizeof(kiln_gemm_mma_cfg) == 10 * sizeof(int32_t),
                   "a new field of kiln_gemm_mma_cfg goes into this signature too");
    const kiln_gemm_mma_cfg *c = &l.cfg;
    const int32_t sig[12] = {0x4d4d4b47, 4,       (int32_t)c->dtype, c->a_kmajor, c->a_vec, c->b_kmajor,
                             c->b_vec,   c->bias, c->beta,           c->sr,       c->c_pair, c->stats};
    CUfunction fn;
    KILN_TRY(kiln__cuda_gemm_kernel(ctx, sig, 12, gen_source, c, "kiln_gemm_mma", 0, &fn));
    int refused;
    KILN_TRY(kiln__cuda_gemm_launch_words(ctx, fn, l.gx, l.gy, l.threads, l.w, 0, &refused));
    return c->stats ? kiln__cuda_gemm_stats_finish(ctx, &d) : KILN_OK;
}
