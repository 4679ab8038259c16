/*
 * src/cuda/gemm_ffma.c — kiln's f32 GEMM kernel without tensor cores (issue 5): FFMA on
 * CUDA cores, for f32 when TF32 is not allowed (and for f32 layouts the tf32 kernel does
 * not take), any compute capability:
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b,   f32 accumulation, no rounding.
 *
 * Design (bench/NOTES.md, "GEMM kernels (issue 5)", steps 9, 15 and 17): 128 x 128 tiles of C per
 * block of 256 threads, or 128 x 256 where the split model says so (WIDE: 8 x 16 accumulators
 * a thread, four column quadrants; cuBLAS's sm_90 SGEMM runs 256 x 128 tiles of 128
 * accumulators a thread), each thread an 8 x 8 (WIDE 8 x 16) register tile (4 x 4 quadrants
 * 64 apart, so that its shared-memory reads are float4s without bank conflicts; warps of
 * 4 x 8 threads by default, so a warp's reads of B are one wavefront); k walked in slices of BK (8 by
 * default, or 16) through two shared-memory buffers, the next slice fetched into registers
 * during this one's FFMAs (interior operands through pointers stepped each slice) and stored,
 * with the slice's barrier, before its last k step, so that the next slice's first fragments
 * load under that step's FFMAs; a k step's FFMAs column by column, the rows up and down in
 * turn (one operand repeats the last FFMA's: fewer register bank conflicts); both operands stored MN-major in shared memory (a K-major
 * operand is transposed on the way in), fetched as float4 where the operand's contiguous
 * axis has unit stride and 16-byte aligned rows (no bounds tests where the tile's rows and
 * the slice's k are all inside), else element by element with any strides (negative steps
 * included), zero-filled outside. One block per SM by default (no register cap: ~190
 * registers, no spills; two blocks capped at 128 spill, and measured slower). The
 * epilogue (alpha, bias per column, ReLU, beta * C) in registers with float4 stores where
 * C allows. Tiles in groups of 8 tile rows, batches along blockIdx.y
 * (kiln__cuda_gemm_tile_words, shared with gemm_mma.c). Split-K for one GEMM where a model
 * of whole waves says it pays (split_model: the fully-connected fprop/bprop shapes, few
 * tiles or a tile count just past a wave): blockIdx.y is then the k split, each split
 * writes an f32 partial to a workspace and the last block of a tile to arrive (the wgmma
 * kernel's counters) sums them in split order, so the bits do not depend on timing; where
 * all blocks fit the SMs at once (a cooperative launch), every block of the tile sums a
 * slice of it instead, in the same order.
 * The source depends only on kiln_gemm_ffma_cfg; no inline PTX, so tests/test_gemm_emu.c
 * runs it on the host as well.
 * This file holds the kernel's source and its launch description, free of CUDA headers (built
 * into every libkiln for tests/test_gemm_emu.c); gemm_ffma_launch.c runs it on a device.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_plan.h"

#define TILE    128
#define THREADS 256

/* The structure kiln_dot uses (KILN_FFMA_* override it) */
#define DEFAULT_BK    8
#define DEFAULT_MINB  1
#define DEFAULT_WARPS 1 /* 4 x 8 */
#define DEFAULT_ORDER 1 /* column by column, rows up and down */
#define DEFAULT_EARLY 1 /* the next slice's barrier before the last k step */
#define DEFAULT_WALK  1 /* interior operands walk pointers */
#define DEFAULT_WIDE  0 /* 128 x 128 tiles where the width rule does not run (no SM count) */

/* The fixed part of the kernel, src/cuda/gemm_ffma_kernel.cuh, embedded by CMake as
 * kiln_gemm_ffma_kernel_src; kiln__cuda_gemm_ffma_source puts the structure (constexpr
 * values) and the prelude in front of it. */
#include "kiln_gemm_ffma_kernel_src.h"

/* ---- structure, source, launch ------------------------------------------------------------- */

/* One operand X as R rows (m or n) by K, strides s_r, s_k, batch strides bs[0..nb): K-major
 * in the kernel's sense when its K axis is the contiguous one; vec when that axis has unit
 * stride and every float4 of it starts 16-byte aligned in every batch. */
static void plan_operand(const char *x, int64_t R, int64_t K, int64_t s_r, int64_t s_k, const int64_t *bs, int nb,
                         int *kmajor, int *vec)
{
    int64_t a_r = s_r < 0 ? -s_r : s_r, a_k = s_k < 0 ? -s_k : s_k;
    *kmajor = R == 1 ? 1 : K == 1 ? 0 : s_k == 1 ? 1 : s_r == 1 ? 0 : a_k <= a_r;
    int al = kiln__cuda_aligned(x, 16);
    for (int i = 0; i < nb; i++) al = al && bs[i] % 4 == 0;
    *vec = al && (*kmajor ? s_k == 1 && (R == 1 || s_r % 4 == 0) : s_r == 1 && (K == 1 || s_k % 4 == 0));
}

int kiln__cuda_gemm_ffma_eligible(const kiln_gemm_desc *d)
{
    if (d->dtype != KILN_DTYPE_F32) return 0;
    if (d->M <= 0 || d->N <= 0 || d->K <= 0 || d->K > (int64_t)INT_MAX - 8) return 0;
    int64_t tm = (d->M + TILE - 1) / TILE, tn = (d->N + TILE - 1) / TILE;
    if (tn > INT_MAX / 8 || tm > INT_MAX / tn) return 0; /* tiles along blockIdx.x, in int */
    return 1;
}

/* The split rule's model of a split launch's time, in units of k depth walked by a block of
 * 128 x 128 tiles: whole waves of blocks (slots at once) times each block's depth plus the
 * cost of writing its partial (~3 slices of 8: 64 KiB at a block's share of the bandwidth),
 * plus the last block's sum of s partials (~0.4 slice each); a 128 x 256 tile (wide) walks
 * its k at WIDE_COST times the narrow tile's time and has twice the partial. WIDE_COST sits
 * between the model's break-even ratios of the shapes measured either way on the H100
 * (2026-11-26, KILN_FFMA_BN=128,256): wide won at 1.74 (fc4096 fprop), 1.79 (fc36864 bprop)
 * and above, lost at 1.65 (the 1024 square), 1.24 (fc1000 bprop) and below. */
#define WIDE_COST 1.7
static double split_model(int64_t tiles, int64_t slots, int64_t s, int64_t depth, int wide)
{
    double waves = (double)((tiles * s + slots - 1) / slots), w = wide ? 2.0 : 1.0;
    double t = s == 1 ? waves * (double)depth : waves * ((double)depth + 24.0 * w) + 3.2 * w * (double)s;
    return wide ? WIDE_COST * t : t;
}

/* The split count of the lowest split_model for `tiles` tiles of kt slices of bk on `slots`
 * blocks at once, among those that keep every split >= 128 deep, at most 64 splits and the
 * workspace within 256 MiB (splits = 1 where one GEMM may not split); the whole waves are what
 * it weighs (fc fprop: 32 tiles on 264 slots split 8 ways, one wave, where 9 ways took two).
 * Returns the modelled time. */
static double plan_splits(int64_t tiles, int64_t slots, int64_t kt, int bk, int wide, int may_split, int64_t *splits,
                          int64_t *kper_out)
{
    const int64_t bn = wide ? 256 : TILE;
    int64_t smax = may_split ? kt * bk / 128 : 1;
    if (smax > 64) smax = 64;
    double best = split_model(tiles, slots, 1, kt * bk, wide);
    *splits = 1;
    *kper_out = kt;
    for (int64_t s = 2; s <= smax; s++) {
        int64_t kper = (kt + s - 1) / s;
        if ((kt + kper - 1) / kper != s) continue; /* the same as a smaller count */
        if ((uint64_t)tiles * (uint64_t)s * TILE * (uint64_t)bn * sizeof(float) > ((uint64_t)256 << 20)) break;
        double t = split_model(tiles, slots, s, kper * bk, wide);
        if (t < best) best = t, *splits = s, *kper_out = kper;
    }
    return best;
}

void kiln__cuda_gemm_ffma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sms,
                                  const kiln_gemm_ffma_opts *o, kiln_gemm_ffma_launch *l)
{
    memset(l, 0, sizeof *l);
    kiln_gemm_ffma_cfg *c = &l->cfg;
    plan_operand(d->a, d->M, d->K, d->a_sm, d->a_sk, bt->sa, bt->n, &c->a_kmajor, &c->a_vec);
    plan_operand(d->b, d->N, d->K, d->b_sn, d->b_sk, bt->sb, bt->n, &c->b_kmajor, &c->b_vec);
    c->bias = d->bias != NULL;
    c->stats = d->stats != NULL;
    c->beta = d->beta != 0.0;
    c->c_vec = d->c_sn == 1 && (d->M == 1 || d->c_sm % 4 == 0) && kiln__cuda_aligned(d->c, 16);
    for (int i = 0; i < bt->n; i++) c->c_vec = c->c_vec && bt->sc[i] % 4 == 0;
    c->bk = o && o->bk ? o->bk : DEFAULT_BK;
    c->minb = o && o->minb ? o->minb : DEFAULT_MINB;
    c->warps = o && o->warps ? o->warps - 1 : DEFAULT_WARPS;
    c->order = o && o->order ? o->order - 1 : DEFAULT_ORDER;
    c->early = o && o->early ? o->early - 1 : DEFAULT_EARLY;
    c->walk = o && o->walk ? o->walk - 1 : DEFAULT_WALK;
    int64_t nb = bt->n ? bt->shape[0] : 1, tm = (d->M + TILE - 1) / TILE, kt8 = (d->K + 7) / 8;
    const int may_split = nb == 1 && sms > 0;
    if (o && o->bn) {
        c->wide = o->bn == 256;
    } else if (sms > 0) {
        /* the width by the model: 128 x 256 tiles where their time is lower (the big squares
         * 2 %, fc fprop/bprop 4-11 %, the K = 128 updates 1-7 % faster than 128 x 128 on the
         * H100, 2026-11-26; fc1000 fprop/bprop 24-36 % and the 1024 square 4 % slower, where
         * half the tiles leave SMs idle or split too thin) */
        int64_t s_n, kper_n, s_w, kper_w, kt = (d->K + c->bk - 1) / c->bk;
        int64_t tiles_n = nb * tm * ((d->N + TILE - 1) / TILE), tiles_w = nb * tm * ((d->N + 255) / 256);
        double t_n = plan_splits(tiles_n, (int64_t)c->minb * sms, kt, c->bk, 0,
                                 may_split && tiles_n <= KILN_CUDA_COUNTERS, &s_n, &kper_n);
        double t_w = plan_splits(tiles_w, sms, kt8, 8, 1, may_split && tiles_w <= KILN_CUDA_COUNTERS, &s_w, &kper_w);
        c->wide = t_w < t_n;
    } else {
        c->wide = DEFAULT_WIDE;
    }
    if (c->wide) { /* 128 accumulators a thread: one block per SM, k slices of 8 (the static
                    * shared memory of two 16-deep buffers would pass 48 KiB) */
        c->minb = 1;
        c->bk = 8;
    }
    const int64_t bn = c->wide ? 256 : TILE;
    int64_t tn = (d->N + bn - 1) / bn;
    kiln__cuda_gemm_tile_words(d, bt, 0, tm, tn, l->w, &l->gx, &l->gy);
    l->nw = KILN_GEMM_FFMA_WORDS;
    l->threads = THREADS;
    /* split-K (one GEMM): plan_splits's count */
    int64_t tiles = tm * tn, kt = (d->K + c->bk - 1) / c->bk, best_s = 1, best_kper = kt;
    if (may_split && tiles <= KILN_CUDA_COUNTERS)
        plan_splits(tiles, (int64_t)c->minb * sms, kt, c->bk, c->wide, 1, &best_s, &best_kper);
    if (best_s > 1) {
        c->split = 1;
        l->gy = (unsigned)best_s;
        l->w[KILN_GEMM_FFMA_W_KPER] = (uint64_t)best_kper;
        l->ws_bytes = (size_t)tiles * (size_t)best_s * TILE * (size_t)bn * sizeof(float);
    }
    /* slice sums where every block of the launch fits the SMs at once (a cooperative launch;
     * not where the driver refused one, or KILN_FFMA_SLICES=0): the last block's sum of the
     * partials, ~1 MiB a tile through one SM, becomes every block's sum of a slice */
    c->slices = c->split && (int64_t)l->gx * l->gy <= sms && !(o && (o->no_coop || o->slices == 1));
    /* the walk on edge tiles where the launch has some it applies to (f32 fc1000 update: a
     * 232-wide last tile in one wave, which set the time: 11 % faster with it; fc1000 fprop
     * 3 %), and in every unsplit 128 x 256 kernel, whose register allocation with it ran the
     * squares 1-2 % faster; not in split kernels without such edges, 2.5-3 % slower with it
     * (fc bprop, the 1024 square; H100, 2026-11-26, bench/NOTES.md step 22) */
    const int a_edge = c->a_vec && d->M % TILE != 0 && (c->a_kmajor || d->M % 4 == 0);
    const int b_edge = c->b_vec && d->N % bn != 0 && (c->b_kmajor || d->N % 4 == 0);
    c->edge_walk = c->walk && (a_edge || b_edge || (c->wide && !c->split));
}

void kiln__cuda_gemm_ffma_source(const kiln_gemm_ffma_cfg *c, kiln_sbuf *b)
{
    kiln__cuda_prelude(b);
    kiln__sbuf_puts(b, "\n/* ---- kiln_gemm_ffma (src/cuda/gemm_ffma.c) ---- */\n");
    kiln__sbuf_printf(b, "constexpr int A_KMAJ = %d, A_VEC = %d, B_KMAJ = %d, B_VEC = %d, MAXBAX = %d;\n", c->a_kmajor,
                      c->a_vec, c->b_kmajor, c->b_vec, KILN_MAX_DIMS);
    kiln__sbuf_printf(b, "constexpr int HAS_BIAS = %d, HAS_BETA = %d, C_VEC = %d, SPLIT = %d;\n", c->bias, c->beta,
                      c->c_vec, c->split);
    kiln__sbuf_printf(b, "constexpr int BK = %d, MINB = %d, WARPS = %d, WIDE = %d, ORDER = %d, EARLY = %d, WALK = %d;\n",
                      c->bk, c->minb, c->warps, c->wide, c->order, c->early, c->walk);
    kiln__sbuf_printf(b, "constexpr int SLICES = %d, EDGE_WALK = %d;\n", c->slices, c->edge_walk);
    kiln__sbuf_printf(b, "constexpr int STATS = %d; /* the output statistics (kg_stat_add) */\n", c->stats ? 1 : 0);
    kiln__sbuf_puts(b, kiln__cuda_gemm_tile_src);
    kiln__sbuf_puts(b, kiln__cuda_gemm_dep_src);
    kiln__sbuf_puts(b, kiln_gemm_ffma_kernel_src);
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_ffma_source(cfg, b); }

char *kiln__cuda_gemm_ffma_source_text(const kiln_gemm_ffma_cfg *cfg) { return kiln__cuda_gemm_text(gen_source, cfg); }

