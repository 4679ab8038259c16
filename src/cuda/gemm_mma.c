/*
 * src/cuda/gemm_mma.c — kiln's first own GEMM kernel (issue 5, step 1): tensor-core tiles
 * with mma.sync for f16 and bf16 inputs, f32 accumulation, for sm_80 and later (on Hopper
 * the baseline before wgmma, and the path where wgmma is not available):
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b,  one rounding of the f32 result.
 *
 * Design (bench/NOTES.md, "GEMM kernels (issue 5)", has the napkin math):
 *  - a block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile of C; each warp a
 *    64 x 32 sub-tile = 4 x 4 mma.sync.m16n8k16 tiles (64 f32 accumulators per thread);
 *  - K is walked in steps of 32 through a 3-stage ring in shared memory (48 KiB, static);
 *    fragments come from shared memory by ldmatrix (.trans for an MN-major tile); the
 *    layouts are XOR-swizzled on 16-byte chunks, so ldmatrix and the fills are free of bank
 *    conflicts;
 *  - an operand whose contiguous axis has unit stride in memory (and 16-byte aligned rows)
 *    is copied with 16-byte cp.async (zero-fill past the edges); any other operand (odd
 *    strides, negative steps, misaligned views) goes through registers element by
 *    element, fetched before a stage's math and stored to shared memory after it;
 *  - transposes are layouts: each operand is K-major or MN-major in shared memory, chosen
 *    from its strides, so all four op(A) op(B) forms read memory along its contiguous axis;
 *  - the epilogue works on the accumulators in registers: alpha, bias (per column n,
 *    stride bias_s), ReLU, beta * C, then one rounding (nearest, or stochastic with the
 *    bits kiln_gemm_sr_bits(seed, sr_stream, b*M + m, n, N), as the reference kernel and
 *    the CPU do, so the bits never depend on the tiling: one Philox call gives the bits of
 *    the eight elements a thread holds in one row of its warp's 32 columns) and the store (two neighbours as one
 *    32-bit word when C is contiguous along N);
 *  - batches along blockIdx.y (a grid-stride loop past 65535), tiles along blockIdx.x in
 *    groups of 8 tile rows for L2 reuse (kg_tile, kg_batch: gemm.c's shared helpers).
 * Sizes, strides, pointers, alpha, beta, the seed and the stream are kernel arguments; the
 * source depends only on kiln_gemm_mma_cfg (gemm_own.h), so a new shape does not recompile.
 * Measured on the H100: 0.38-0.41x cuBLASLt on the big squares (bench/NOTES.md).
 * Not here: split-K (a K-heavy GEMM with few tiles leaves SMs idle; gemm_wgmma.c has it).
 * This file holds the kernel's source and its launch description, free of CUDA headers (built
 * into every libkiln for tests/test_gemm_emu.c); gemm_mma_launch.c runs it on a device.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cuda/gemm_plan.h"

#define BM      128 /* block tile, as in the source below */
#define BN      128
#define BK      32
#define THREADS 256
#define GROUP_M 8

/* The fixed part of the kernel, src/cuda/gemm_mma_kernel.cuh, embedded by CMake as
 * kiln_gemm_mma_kernel_src; kiln__cuda_gemm_mma_source puts the structure (constexpr
 * values) and the prelude in front of it. */
#include "kiln_gemm_mma_kernel_src.h"

/* ---- eligibility and the launch ---------------------------------------------------------- */

int kiln__cuda_gemm_mma_eligible(int cc_major, const kiln_gemm_desc *d)
{
    if (cc_major < 8) return 0; /* mma.sync bf16, ldmatrix, cp.async: sm_80 */
    if (d->dtype != KILN_DTYPE_F16 && d->dtype != KILN_DTYPE_BF16) return 0;
    if (d->M <= 0 || d->N <= 0 || d->K <= 0) return 0;
    if (d->K > (int64_t)INT_MAX - BK) return 0; /* the kernel counts k tiles in int */
    int64_t tm = (d->M + BM - 1) / BM, tn = (d->N + BN - 1) / BN;
    if (tn > INT_MAX / GROUP_M || tm > INT_MAX / tn) return 0; /* tiles along blockIdx.x, in int */
    return 1;
}

static int64_t iabs(int64_t x)
{
    return x < 0 ? -x : x;
}

/* One operand X as R rows (m or n) by K: element (r, k) at x + r*s_r + k*s_k, batch
 * strides bs[0..nb). vec when every 16-byte chunk along the unit-stride axis starts on a
 * 16-byte boundary in every batch; else the shared layout follows the smaller stride, so
 * that neighbouring threads read neighbouring elements. */
static void plan_operand(const char *x, int64_t R, int64_t K, int64_t s_r, int64_t s_k, const int64_t *bs, int nb,
                         int *kmajor, int *vec)
{
    int al = kiln__cuda_aligned(x, 16);
    for (int i = 0; i < nb; i++) al = al && bs[i] % 8 == 0;
    if (al && s_k == 1 && (R == 1 || s_r % 8 == 0)) {
        *kmajor = 1;
        *vec = 1;
    } else if (al && s_r == 1 && (K == 1 || s_k % 8 == 0)) {
        *kmajor = 0;
        *vec = 1;
    } else {
        *vec = 0;
        *kmajor = R == 1 ? 1 : K == 1 ? 0 : iabs(s_k) <= iabs(s_r);
    }
}

void kiln__cuda_gemm_mma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed,
                                 kiln_gemm_mma_launch *l)
{
    memset(l, 0, sizeof *l);
    kiln_gemm_mma_cfg *c = &l->cfg;
    c->dtype = d->dtype;
    plan_operand(d->a, d->M, d->K, d->a_sm, d->a_sk, bt->sa, bt->n, &c->a_kmajor, &c->a_vec);
    plan_operand(d->b, d->N, d->K, d->b_sn, d->b_sk, bt->sb, bt->n, &c->b_kmajor, &c->b_vec);
    c->bias = d->bias != NULL;
    c->beta = d->beta != 0.0;
    c->sr = d->round == KILN_ROUND_STOCHASTIC;
    c->stats = d->stats != NULL;
    c->c_pair = d->c_sn == 1 && (d->M == 1 || d->c_sm % 2 == 0) && kiln__cuda_aligned(d->c, 4);
    for (int i = 0; i < bt->n; i++) c->c_pair = c->c_pair && bt->sc[i] % 2 == 0;

    int64_t tm = (d->M + BM - 1) / BM, tn = (d->N + BN - 1) / BN;
    kiln__cuda_gemm_tile_words(d, bt, seed, tm, tn, l->w, &l->gx, &l->gy);
    l->nw = KILN_GEMM_MMA_WORDS; /* the kernel's argument struct has room for every batch rank */
    l->threads = THREADS;
}

void kiln__cuda_gemm_mma_source(const kiln_gemm_mma_cfg *c, kiln_sbuf *b)
{
    kiln__cuda_prelude(b);
    kiln__sbuf_puts(b, "\n/* ---- kiln_gemm_mma (src/cuda/gemm_mma.c) ---- */\n");
    kiln__sbuf_puts(b, "typedef unsigned short ST; /* f16 or bf16 bits */\n");
    kiln__sbuf_printf(b, "constexpr int BF16 = %d, A_KMAJ = %d, A_VEC = %d, B_KMAJ = %d, B_VEC = %d;\n",
                      c->dtype == KILN_DTYPE_BF16, c->a_kmajor, c->a_vec, c->b_kmajor, c->b_vec);
    kiln__sbuf_printf(b, "constexpr int HAS_BIAS = %d, HAS_BETA = %d, SR = %d, C_PAIR = %d, MAXBAX = %d;\n", c->bias,
                      c->beta, c->sr, c->c_pair, KILN_MAX_DIMS);
    kiln__sbuf_printf(b, "constexpr int STATS = %d; /* the output statistics (kg_stat_add) */\n", c->stats ? 1 : 0);
    kiln__sbuf_puts(b, kiln__cuda_gemm_tile_src);
    kiln__sbuf_puts(b, kiln__cuda_gemm_dep_src);
    kiln__sbuf_puts(b, kiln_gemm_mma_kernel_src);
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_mma_source(cfg, b); }

char *kiln__cuda_gemm_mma_source_text(const kiln_gemm_mma_cfg *cfg) { return kiln__cuda_gemm_text(gen_source, cfg); }

