/*
 * src/cuda/gemm_own.h — kiln's own GEMM kernels on the GPU (issue 5), beside the cuBLASLt
 * path and the reference kernel of gemm.c, which chooses between them (KILN_GEMM):
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b   for every batch index b,
 * with exactly the semantics of the reference kernel (src/ops/dot.h; one rounding of the
 * f32 result, stochastic rounding keyed by the element's index, never by the tiling).
 * gemm_wgmma.c: wgmma tiles fed by TMA, persistent, deterministic split-K (sm_90a), for
 * operands TMA can read (f16, bf16, and f32 as tf32 when TF32 is allowed); gemm_mma.c:
 * mma.sync tiles for f16 / bf16 of any strides (sm_80 and later); gemm_ffma.c: FFMA tiles
 * for f32 of any strides. All accumulate in f32. The ladder and its measurements:
 * bench/NOTES.md; the host-side launch descriptions (no CUDA headers): gemm_plan.h.
 * Internal to src/cuda, like cuda.h.
 */
#ifndef KILN_CUDA_GEMM_OWN_H
#define KILN_CUDA_GEMM_OWN_H

#include "cuda/cuda.h"
#include "cuda/gemm_plan.h"

/* Words of the tiled kernels (mma.sync, FFMA): 0..18 (kiln__cuda_gemm_words), 19-20 tiles
 * along M and N, 21 ReLU, 22 merged batch axes, 23 + 4 i batch axis i (size, strides of A,
 * B, C); the grid: tiles along x, batches along y (at most 65535, the kernels loop). */
void kiln__cuda_gemm_tile_words(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed, int64_t tm,
                                int64_t tn, uint64_t *w, unsigned *gx, unsigned *gy);
/* CUDA C of the device helpers they share: KG_TILE_ARGS (the words as named constants),
 * kg_tile (grouped tile order), kg_batch (batch offsets from the words); needs kiln_w64
 * (the prelude) and, for KG_TILE_ARGS, the kernel's element type ST. */
extern const char kiln__cuda_gemm_tile_src[];
/* The text of the source gen(cfg) writes, malloc'd; NULL on no memory (for tests). */
char *kiln__cuda_gemm_text(void (*gen)(const void *, kiln_sbuf *), const void *cfg);
/* Words 0..18 of a GEMM kernel's argument array (layout in gemm.c). */
void kiln__cuda_gemm_words(const kiln_gemm_desc *d, uint64_t seed, int64_t nbatch, uint64_t *w);

/* The function `name` of an own GEMM kernel whose source depends only on its structure:
 * sig (n words, a tag first so that no plan-kernel signature collides) through the fast
 * map, else gen(cfg) through the source-keyed cache; a kernel that needs more than 48 KiB
 * of dynamic shared memory (smem) gets that limit raised when it is loaded. (gemm.c) */
kiln_status kiln__cuda_gemm_kernel(kiln_ctx *ctx, const int32_t *sig, size_t n, void (*gen)(const void *, kiln_sbuf *),
                                   const void *cfg, const char *name, unsigned smem, CUfunction *fn);

/* ---- mma.sync kernel (gemm_mma.c) ------------------------------------------------------- */

/* Everything the generated source depends on (at most 2 x 16 x 16 = 512 kernels, far
 * fewer in use); sizes, strides, pointers, alpha, beta, ReLU, the batch axes, the seed and
 * the stream are kernel arguments. An operand is either K-major in shared memory (its K
 * axis contiguous there) or MN-major, and loaded either with 16-byte cp.async (vec: its
 * contiguous axis has unit stride in memory, the other stride, the batch strides and the
 * address are 16-byte multiples) or element by element through registers. The epilogue's
 * options that cost registers are structure, so that the plain kernel has none to spare
 * for them (ptxas spilled in the main loop when they were arguments). */
typedef struct kiln_gemm_mma_cfg {
    kiln_dtype dtype; /* F16 or BF16 */
    int a_kmajor, a_vec;
    int b_kmajor, b_vec;
    int bias;   /* a bias is added */
    int beta;   /* beta != 0: C is read */
    int sr;     /* stochastic rounding of C (an out-of-line Philox call) */
    int c_pair; /* two neighbouring elements of C stored as one 32-bit word */
} kiln_gemm_mma_cfg;

/* Argument words of every launch (room for KILN_MAX_DIMS batch axes). */
#define KILN_GEMM_MMA_WORDS KILN_GEMM_TILE_WORDS

/* One launch: the structure, the argument words and the grid (blocks of `threads`). */
typedef struct kiln_gemm_mma_launch {
    kiln_gemm_mma_cfg cfg;
    uint64_t w[KILN_GEMM_MMA_WORDS];
    int nw;
    unsigned gx, gy, threads;
} kiln_gemm_mma_launch;

/* 1 when the kernel takes d on a device of compute capability cc_major.x: f16 or bf16,
 * M, N, K > 0, K and the tile count within int. */
int kiln__cuda_gemm_mma_eligible(int cc_major, const kiln_gemm_desc *d);
/* Fills *l for an eligible d (seed: the context's seed for stochastic rounding). */
void kiln__cuda_gemm_mma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed,
                                 kiln_gemm_mma_launch *l);
/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_mma") to b; b->oom on failure. */
void kiln__cuda_gemm_mma_source(const kiln_gemm_mma_cfg *cfg, kiln_sbuf *b);
/* Runs an eligible d on ctx's stream (kernel through the structural map and the cache). */
kiln_status kiln__cuda_gemm_mma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

/* ---- wgmma kernel (gemm_wgmma.c) -------------------------------------------------------- */

/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_wgmma") to b. */
void kiln__cuda_gemm_wgmma_source(const kiln_gemm_wgmma_cfg *cfg, kiln_sbuf *b);
/* Runs an eligible d on ctx's stream. */
kiln_status kiln__cuda_gemm_wgmma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

/* ---- FFMA kernel (gemm_ffma.c; structure and launch in gemm_plan.h) --------------------- */

/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_ffma") to b. */
void kiln__cuda_gemm_ffma_source(const kiln_gemm_ffma_cfg *cfg, kiln_sbuf *b);
/* Runs an eligible d on ctx's stream. */
kiln_status kiln__cuda_gemm_ffma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

#endif /* KILN_CUDA_GEMM_OWN_H */
