/*
 * src/cuda/gemm_mma_launch.c — runs kiln's mma.sync GEMM kernel (gemm_mma.c: its source and the
 * launch description) on the context's device: the kernel through the cache, the launch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_own.h"

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_mma_source(cfg, b); }

kiln_status kiln__cuda_gemm_mma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt)
{
    kiln_gemm_mma_launch l;
    kiln__cuda_gemm_mma_prepare(d, bt, ctx->seed, &l);
    /* a tag ("GKMM") and this kernel's version first: codegen.c's signatures never start so */
    const kiln_gemm_mma_cfg *c = &l.cfg;
    const int32_t sig[11] = {0x4d4d4b47, 3,       (int32_t)c->dtype, c->a_kmajor, c->a_vec, c->b_kmajor,
                             c->b_vec,   c->bias, c->beta,           c->sr,       c->c_pair};
    CUfunction fn;
    KILN_TRY(kiln__cuda_gemm_kernel(ctx, sig, 11, gen_source, c, "kiln_gemm_mma", 0, &fn));
    int refused;
    return kiln__cuda_gemm_launch_words(ctx, fn, l.gx, l.gy, l.threads, l.w, 0, &refused);
}
