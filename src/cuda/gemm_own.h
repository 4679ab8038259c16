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

/* The function `name` of an own GEMM kernel whose source depends only on its structure:
 * sig (n words, a tag first so that no plan-kernel signature collides) through the fast
 * map, else gen(cfg) through the source-keyed cache; a kernel that needs more than 48 KiB
 * of dynamic shared memory (smem) gets that limit raised when it is loaded. (gemm.c) */
kiln_status kiln__cuda_gemm_kernel(kiln_ctx *ctx, const int32_t *sig, size_t n, void (*gen)(const void *, kiln_sbuf *),
                                   const void *cfg, const char *name, unsigned smem, CUfunction *fn);
/* The split-K arrival counters (st->gemm_counters, KILN_CUDA_COUNTERS ints, zero between
 * launches), allocated and zeroed on first use; an error when the device has no room (the
 * caller then runs unsplit). (gemm.c) */
kiln_status kiln__cuda_gemm_counters(kiln_ctx *ctx);
/* Where d asks for the output statistics (d->stats) and KILN_GEMM_STATS is fused, the words an own
 * kernel adds them to in its epilogue (two 64-bit words after the split-K counters, zero between
 * launches: f32 bits of the largest finite magnitude in the low half of the first, the
 * non-finite count in the second) into *words; NULL where d asks for none, KILN_GEMM_STATS is
 * pass (kiln_dot's pass over C), or the counters cannot be had (the pass then too). Unset is
 * fused. A bad KILN_GEMM_STATS is an error naming it.
 * (gemm.c) */
kiln_status kiln__cuda_gemm_stats_words(kiln_ctx *ctx, const kiln_gemm_desc *d, unsigned long long **words);
/* After a kernel that added to those words for d: d's stats from them (a one-thread kernel on
 * the stream, which zeroes the words again), *d->stats_done set. (gemm.c) */
kiln_status kiln__cuda_gemm_stats_finish(kiln_ctx *ctx, const kiln_gemm_desc *d);
/* Launches an own GEMM kernel (its parameters as params, or the flat words as extra) with
 * the attributes at; at.early (the caller's wish) stays only where the device has
 * programmatic dependent launches (sm_90 and up), the launch is not cooperative (measured
 * no faster there) and KILN_GEMM_PDL is not 0. Every own GEMM kernel starts with
 * kg_grid_dep (kiln__cuda_gemm_dep_src), so its set-up overlaps the previous kernel's
 * finish. A bad KILN_GEMM_PDL is an error naming it; *refused as kiln__cuda_launch_ex.
 * (gemm.c) */
kiln_status kiln__cuda_gemm_launch(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned smem,
                                   kiln_cuda_launch_attrs at, void **params, void **extra, int *refused);
/* The same for a kernel of flat argument words (mma.sync, FFMA: `words` holds the whole of its
 * kiln_args struct, KILN_GEMM_MMA_WORDS / KILN_GEMM_FFMA_WORDS): no cluster, no dynamic shared
 * memory, cooperative where asked (FFMA slice sums; *refused as kiln__cuda_gemm_launch), else
 * early where kiln__cuda_gemm_launch allows it. */
kiln_status kiln__cuda_gemm_launch_words(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx,
                                         const uint64_t *words, int cooperative, int *refused);

/* ---- mma.sync kernel (gemm_mma.c) ------------------------------------------------------- */

/* (structure, launch, eligibility and preparation in gemm_plan.h) */
/* Runs an eligible d on ctx's stream (kernel through the structural map and the cache). */
kiln_status kiln__cuda_gemm_mma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

/* ---- wgmma kernel (gemm_wgmma.c) -------------------------------------------------------- */

/* Runs an eligible d on ctx's stream. */
kiln_status kiln__cuda_gemm_wgmma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

/* ---- FFMA kernel (gemm_ffma.c; structure and launch in gemm_plan.h) --------------------- */

/* Runs an eligible d on ctx's stream. */
kiln_status kiln__cuda_gemm_ffma(kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);

#endif /* KILN_CUDA_GEMM_OWN_H */
