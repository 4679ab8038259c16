/*
 * src/cuda/gemm_ffma_launch.c — runs kiln's FFMA f32 GEMM kernel (gemm_ffma.c: its source and
 * the launch description) on the context's device: the KILN_FFMA_* overrides, the split-K
 * workspace and counters, the kernel through the cache, the launch (cooperative for slice
 * sums; where the driver refuses one, again without them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_own.h"

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_ffma_source(cfg, b); }

/* The overrides from the environment, read at every call (benchmarks sweep them):
 * KILN_FFMA_BK=8|16, KILN_FFMA_MINB=1|2, KILN_FFMA_WARPS=2x16|4x8, KILN_FFMA_BN=128|256,
 * KILN_FFMA_ORDER=rows|cols, KILN_FFMA_EARLY=0|1, KILN_FFMA_WALK=0|1, KILN_FFMA_SLICES=0|1
 * (the README's table says what each does). A value that is none of these is an error naming
 * the variable. */
static kiln_status read_opts(kiln_ctx *ctx, kiln_gemm_ffma_opts *o)
{
    static const char *const depths[] = {"8", "16"}, *const counts[] = {"1", "2"}, *const warps[] = {"2x16", "4x8"},
                             *const widths[] = {"128", "256"},
                             *const orders[] = {"rows", "cols"}, *const flags[] = {"0", "1"};
    memset(o, 0, sizeof *o);
    int i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_BK", depths, 2, &i));
    o->bk = i < 0 ? 0 : 8 << i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_MINB", counts, 2, &i));
    o->minb = i + 1;  /* 0 = the default */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_WARPS", warps, 2, &i));
    o->warps = i + 1; /* 0 = the default, 1 = 2 x 16, 2 = 4 x 8 */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_BN", widths, 2, &i));
    o->bn = i < 0 ? 0 : 128 << i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_ORDER", orders, 2, &i));
    o->order = i + 1; /* 0 = the default, 1 = rows, 2 = columns */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_EARLY", flags, 2, &i));
    o->early = i + 1;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_WALK", flags, 2, &i));
    o->walk = i + 1;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_FFMA_SLICES", flags, 2, &i));
    o->slices = i + 1;
    o->no_coop = kiln__cuda_state(ctx)->gemm_no_coop;
    return KILN_OK;
}

kiln_status kiln__cuda_gemm_ffma(kiln_ctx *ctx, const kiln_gemm_desc *d_in, const kiln_gemm_batches *bt)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    /* the output statistics in the epilogue where their words can be had, else kiln_dot's pass */
    kiln_gemm_desc dl = *d_in;
    const kiln_gemm_desc *d = &dl;
    unsigned long long *stats_words;
    KILN_TRY(kiln__cuda_gemm_stats_words(ctx, &dl, &stats_words));
    if (!stats_words) dl.stats = NULL;
    kiln_gemm_ffma_opts o;
    kiln_status r = read_opts(ctx, &o);
    if (r != KILN_OK) return r;
    kiln_gemm_ffma_launch l;
    kiln__cuda_gemm_ffma_prepare(d, bt, st->sm_count, &o, &l);
    /* the workspace is stream-ordered (see kiln__cuda_gemm_wgmma); without it or the
     * counters (the memory cap, the device full) the GEMM runs unsplit */
    kiln_block *ws = NULL;
    if (l.ws_bytes &&
        (kiln__cuda_gemm_counters(ctx) != KILN_OK || kiln__mem_try_alloc(ctx, l.ws_bytes, __FILE__, __LINE__, &ws) != KILN_OK)) {
        ws = NULL;
        kiln__cuda_gemm_ffma_prepare(d, bt, 0, &o, &l);
    }
    if (ws) {
        l.w[KILN_GEMM_FFMA_W_WS] = (uint64_t)(uintptr_t)ws->ptr;
        l.w[KILN_GEMM_FFMA_W_COUNTERS] = (uint64_t)(uintptr_t)st->gemm_counters;
    }
    l.w[KILN_GEMM_FFMA_W_STATS] = (uint64_t)(uintptr_t)stats_words;
    const kiln_gemm_ffma_cfg *c = &l.cfg;
    /* a tag ("GKFF") and this kernel's version first, then every field of the configuration:
     * a field left out would let two sources share one key of the fast map */
    _Static_assert(sizeof(kiln_gemm_ffma_cfg) == 18 * sizeof(int32_t),
                   "a new field of kiln_gemm_ffma_cfg goes into this signature too");
    const int32_t sig[20] = {0x46464b47, 11,       c->a_kmajor, c->a_vec,  c->b_kmajor,  c->b_vec, c->bias,
                             c->beta,    c->c_vec, c->split,    c->bk,     c->minb,      c->warps, c->wide,
                             c->order,   c->early, c->walk,     c->slices, c->edge_walk, c->stats};
    CUfunction fn;
    r = kiln__cuda_gemm_kernel(ctx, sig, 20, gen_source, c, "kiln_gemm_ffma", 0, &fn);
    int refused = 0;
    if (r == KILN_OK) r = kiln__cuda_gemm_launch_words(ctx, fn, l.gx, l.gy, l.threads, l.w, c->slices, &refused);
    kiln__mem_free(ctx, ws);
    /* the driver would not have every block resident: slice sums are off for this context,
     * and the GEMM runs again without */
    if (r == KILN_OK && refused) {
        st->gemm_no_coop = 1;
        return kiln__cuda_gemm_ffma(ctx, d_in, bt);
    }
    if (r == KILN_OK && c->stats) r = kiln__cuda_gemm_stats_finish(ctx, d);
    return r;
}
