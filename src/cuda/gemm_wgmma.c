/*
 * src/cuda/gemm_wgmma.c — kiln's Hopper GEMM kernel (issue 5): wgmma tensor-core tiles fed
 * by TMA on compute capability 9.0 (sm_90a), for f16 and bf16 inputs, and for f32 inputs
 * read as tf32 where the context allows TF32, all with f32 accumulation:
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b,  one rounding of the f32 result,
 * the same semantics and epilogue as the mma.sync kernel (gemm_mma.c) and the reference.
 *
 * Design (bench/NOTES.md, "GEMM kernels (issue 5)", has the napkin math and the ladder):
 *  - 384 threads = 3 warpgroups. Warpgroup 0 produces: after setmaxnreg.dec one thread
 *    issues cp.async.bulk.tensor copies (TMA, 128-byte swizzle, zero fill past the edges)
 *    of the next k slice (one 128-byte row: 64 f16 / bf16 or 32 f32 elements) of A (128
 *    rows) and B (BN = 64, 128, 192 or 256 columns) into a ring of STAGES shared-memory stages,
 *    each guarded by a "full" mbarrier (transaction bytes) and an "empty" one (one arrival
 *    per consumer). Warpgroups 1 and 2 consume (setmaxnreg.inc): each runs
 *    wgmma.m64nBNk16 (k8 for tf32) on its 64 rows of the tile with BN / 2 f32 accumulators
 *    per thread, keeps one wgmma group in flight and releases a stage when the group that
 *    read it is done;
 *  - transposes are tensor maps: an operand with unit stride along K is copied K-major
 *    (boxes of one slice x rows), one with unit stride along M (N) MN-major (boxes of 64
 *    rows x one slice, wgmma's transpose bit; 16-bit inputs only, tf32 has none), so the
 *    op(A) op(B) forms read memory along rows;
 *  - persistent grid (one block per SM): block b takes work items b, b + grid, ... in
 *    groups of 8 tile rows (L2 reuse; row by row for the plain K <= 128 updates, whose A and B
 *    stay in L2 and whose C stores set the pace); the ring's phases run on across items, so the
 *    producer loads the next tile while the consumers store this one;
 *  - split-K where there are few tiles (pick_tiles): the k slices of a tile split over
 *    several work items whose f32 partials meet in a workspace; the last to arrive adds the
 *    others' and its own (from its registers) in split order, so the result does not depend
 *    on timing (it does on the split count, which follows the shape and the SM count). From
 *    4 splits up, where every item fits one wave, the rule sums in slices instead: a
 *    cooperative launch (every block resident), each block publishes its partial, and once
 *    a counter says all are there every block sums a slice of the tile, in the same order
 *    (fc1000 fprop: 8 splits, 0.72x of cuBLAS through the last block, 0.99x in slices).
 *    Opt-in (KILN_WGMMA_SPLIT_SUM=cluster, measured slower on the H100), the splits of a tile
 *    as one cluster: the partials stay in each block's shared memory and every block sums a
 *    slice of the tile through distributed shared memory, in the same order;
 *  - the epilogue works from the accumulators in registers, like gemm_mma.c's: alpha, bias
 *    (per column), ReLU, beta * C, one rounding (nearest, or stochastic keyed by the
 *    element's place: one Philox call for the eight elements a thread holds in 32 columns
 *    of a row, kiln_gemm_sr_bits; f32 C is not rounded); for C with 16-byte rows (16-bit, or
 *    f32 from tf32; the default, KILN_WGMMA_STORE=regs turns it off) each consumer stages its
 *    64 rows of C in shared memory (128-byte swizzled boxes: 64 16-bit or 32 f32 columns
 *    each) and one thread stores them with TMA, overlapping the
 *    next tile (1.7x faster than register stores on the K=128 updates), from two staging
 *    buffers per consumer where the tile's k slices fit the ring beside them (the updates:
 *    two stores in flight per consumer); f32 C only where a tile's k slices fit the ring
 *    beside its staging (the updates, on 128-wide tiles: 1.2-1.3x); otherwise, and for
 *    tiles summed in slices or clusters, stores of two neighbours from the registers.
 * Sizes, strides, pointers, alpha, beta, the seed and the tensor maps are arguments; the
 * source depends only on kiln_gemm_wgmma_cfg (gemm_plan.h); its fixed part is the CUDA text
 * of gemm_wgmma_kernel.cuh, embedded by CMake. Every PTX instruction sits in a marked
 * block ("kg: PTX wrappers", "kg: generated wgmma") that tests/test_gemm_emu.c replaces by
 * host emulations.
 *  - ping-pong (KILN_WGMMA_SCHED=pingpong): each consumer takes whole 128 x 128 tiles of
 *    its own (two m64 wgmma per k step), alternating work items in turn (a pair of turn
 *    barriers), so one's epilogue runs while the other's wgmma use the tensor cores;
 *    measured slower than the default on most shapes, so the rule's only for the plain f16
 *    K <= 128 updates with fewer than four waves of tiles or K <= 32 (those with more walk
 *    their tiles row by row on the cooperative kernel, which is faster there).
 *  - opt-in (KILN_WGMMA_MCAST=1, measured 2-21 % slower), clusters of two blocks with TMA
 *    multicast of B (MC): the blocks of a cluster take tile rows 2 i and 2 i + 1 of one column,
 *    each loads its own A and half of B (half the rows K-major, half the k rows of each box
 *    MN-major) into both blocks' stages (one L2 read of B for two tiles), and a stage is free
 *    once the consumers of both blocks released it.
 *  - 64-row tiles, unsplit (the rule's where 64-wide tiles of 128 rows would be unsplit and
 *    fill at most half the SMs, fc1000 bprop; 128 wide where A's K-major rows straddle
 *    128-byte lines and 64 x 128 tiles fill a quarter to a whole wave; 64 wide in place of
 *    split 64-wide tiles on one tile row where the 64-row tiles fill a wave to within 1/32,
 *    up to 144 k slices, fc4096 and fc9216 fprop): one consumer takes
 *    every k slice (KP1; KILN_WGMMA_KPAIR=one forces it), the other consumer idles; twice the
 *    tiles of 128-row ones, as cuBLASLt's 64 x 64 kernel there. Or k pairs (KILN_WGMMA_KPAIR=1,
 *    not the rule's: one consumer measured level to 8 % faster, NOTES step 32): the two
 *    consumers take alternate k slices (the ring even, each stage always the same consumer's,
 *    which alone waits on it and releases it), consumer 1's sums added to consumer 0's through
 *    shared memory, which runs the epilogue alone. fc1000 bprop kernel against kernel: 0.80x
 *    of cuBLASLt in 128-row tiles, 0.84x in 64 x 64 k pairs (NOTES step 30), 0.93x with one
 *    consumer 128 wide (step 32).
 *  - edge boxes: a K-major A (B) whose last tile row (column) holds fewer rows than a tile is
 *    loaded there through a second tensor map whose boxes hold those rows rounded up to 8
 *    (maps 3 and 4, word 21); the H100's TMA takes about as long for a box half past
 *    the edge as for a whole one in bounds, and longer with more of it past the edge (96 x 4096
 *    x 4096 0.0184 -> 0.0115 ms). The stage's rows past the edge box keep what they held and
 *    reach only C's rows past the edge, which are never stored.
 * Not here yet: stream-K.
 * This file holds the kernel's source and its launch description, free of CUDA headers (built
 * into every libkiln for tests/test_gemm_emu.c); gemm_wgmma_launch.c runs it on a device.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "cuda/gemm_plan.h"

#define BM        128
#define ROW_BYTES 128 /* a k slice of one row of A or B: one 128-byte swizzle row (64 f16, 32 f32) */
#define THREADS   384
#define SMEM_MAX  (227 * 1024) /* dynamic shared memory a block may have on 9.0 */
#define GROUP_M   8 /* tile rows per group of the tile order (word 41; KILN_WGMMA_GROUP_M overrides) */

/* The fixed part of the kernel, src/cuda/gemm_wgmma_kernel.cuh, embedded by CMake as
 * kiln_gemm_wgmma_kernel_src; kiln__cuda_gemm_wgmma_source puts the structure, kg_mma and
 * kg_acc_fence (their operand lists depend on BN) and the prelude in front of it. */
#include "kiln_gemm_wgmma_kernel_src.h"

/* ---- structure, source ------------------------------------------------------------------- */

/* Bytes of the C staging (tma_store: 64 rows x bn of C per consumer, twice that with
 * ping-pong's whole tiles per consumer; cbufs buffers of it). */
static int cstage_for(const kiln_gemm_wgmma_cfg *c)
{
    const int es = c->dtype == KILN_DTYPE_F32 ? 4 : 2;
    return c->tma_store ? (c->pingpong ? 2 : 1) * BM * c->bn * es * (c->cbufs > 1 ? 2 : 1) : 0;
}

/* Bytes of the staged bias (a bias, not k pairs nor ping-pong from the registers or with f32
 * C: two buffers of bn elements of C's type, per consumer with ping-pong, and their 16-byte
 * alignment after the barriers). */
static int bias_smem_for(const kiln_gemm_wgmma_cfg *c)
{
    const int es = c->dtype == KILN_DTYPE_F32 ? 4 : 2;
    const int staged = c->bias && !c->kpair && (!c->pingpong || (c->tma_store && es == 2));
    return staged ? (c->pingpong ? 4 : 2) * c->bn * es + 16 : 0;
}

/* Bytes of k pairs' exchange (kpair: consumer 1's 64 x bn f32 sums, after the bias area the
 * kernel's layout skips and their alignment). */
static int kp_smem_for(const kiln_gemm_wgmma_cfg *c) { return c->kpair == 1 ? 2 * c->bn * 4 + 32 + 64 * c->bn * 4 : 0; }

/* Rows of a tile: 64 for k pairs (and one consumer's 64-row tiles), else BM. */
static int bm_of(const kiln_gemm_wgmma_cfg *c) { return c->kpair ? 64 : BM; }

/* Stages that fit beside the staging of C and the bias, at most 7 (a cluster-summed split's
 * partial takes the ring over after the mainloop: 64 KiB, two stages of 128-wide tiles); with
 * one consumer on 64-row tiles (16 or 24 KiB stages) as many as fit, up to 16: on the H100
 * (graphed, f16, NOTES step 33) fc9216 fprop's 64 x 64 tiles 0.0326 -> 0.0297 ms at 13
 * stages, fc1000 bprop's 64 x 128 0.0062 -> 0.0061, fc4096 fprop level (cuBLASLt's 64 x 64
 * kernel there runs 13); the 128-row kernels measured slower with deeper rings (step 29). */
static int stages_for(const kiln_gemm_wgmma_cfg *c)
{
    int stage = (bm_of(c) + c->bn) * ROW_BYTES;
    int n = (SMEM_MAX - 1024 - 256 - cstage_for(c) - bias_smem_for(c) - kp_smem_for(c)) / stage;
    const int cap = c->stages_cap > 0 ? c->stages_cap : c->kpair == 2 ? 16 : 7;
    if (n > cap) n = cap;
    /* A consumer still holds its previous slice's stage while it waits for the next slice (one
     * wgmma group stays in flight), so the ring needs two stages, and k pairs four: an even
     * ring, each stage always going to the same consumer (the kernel's KP comment), two of them
     * each. Fewer deadlock on an item of more slices than a consumer's stages. */
    if (c->kpair == 1 && (n & 1)) n--;
    if (n < (c->kpair == 1 ? 4 : 2)) n = c->kpair == 1 ? 4 : 2;
    return n;
}

static unsigned smem_for(const kiln_gemm_wgmma_cfg *c)
{
    int s = stages_for(c);
    /* full and empty barriers per stage, the two turn barriers (ping-pong), the two cluster
     * barriers, the split-K last flag (8 bytes), the statistics' two words, the staged bias */
    return (unsigned)(1024 + s * (bm_of(c) + c->bn) * ROW_BYTES + cstage_for(c) + 16 * s + 40 + (c->stats ? 8 : 0) +
                      bias_smem_for(c) + kp_smem_for(c));
}

/* 1 where c's shared memory fits a block's dynamic allowance */
static int smem_fits(const kiln_gemm_wgmma_cfg *c)
{
    return smem_for(c) <= SMEM_MAX;
}

void kiln__cuda_gemm_wgmma_source(const kiln_gemm_wgmma_cfg *c, kiln_sbuf *b)
{
    kiln__cuda_prelude(b);
    kiln__sbuf_puts(b, "\n/* ---- kiln_gemm_wgmma (src/cuda/gemm_wgmma.c) ---- */\n");
    const int tf32 = c->dtype == KILN_DTYPE_F32, bf16 = c->dtype == KILN_DTYPE_BF16;
    kiln__sbuf_puts(b, tf32 ? "typedef float ST; /* f32 in memory, tf32 in the tensor cores */\n"
                            : "typedef unsigned short ST; /* f16 or bf16 bits */\n");
    kiln__sbuf_printf(b, "constexpr int TF32 = %d, BF16 = %d, ES = %d, A_KMAJ = %d, B_KMAJ = %d, BN = %d, STAGES = %d;\n",
                      tf32, bf16, tf32 ? 4 : 2, c->a_kmajor, c->b_kmajor, c->bn, stages_for(c));
    kiln__sbuf_printf(b, "constexpr int HAS_BIAS = %d, HAS_BETA = %d, SR = %d, C_PAIR = %d, TMA_STORE = %d, PP = %d;\n",
                      c->bias, c->beta, c->sr, c->c_pair, c->tma_store, c->pingpong);
    /* ALPHA1: alpha is 1 in f32, its product the sum itself (a multiply an element less in an
     * epilogue whose instructions set the K=128 updates' pace) */
    kiln__sbuf_printf(b, "constexpr int ALPHA1 = %d;\n", c->alpha1 ? 1 : 0);
    /* RELU: a run-time flag's select was if-converted into a compare and a select an element
     * that ran with ReLU off too (two of the plain staged epilogue's ~4 instructions an element) */
    kiln__sbuf_printf(b, "constexpr int RELU = %d;\n", c->relu ? 1 : 0);
    /* EDGE: word 21 names an edge box; launches without one compile no per-item map choice */
    kiln__sbuf_printf(b, "constexpr int EDGE = %d;\n", c->edge ? 1 : 0);
    /* BHINT: B's loads carry an evict_first L2 policy (kg_tma_b) */
    kiln__sbuf_printf(b, "constexpr int BHINT = %d;\n", c->bhint ? 1 : 0);
    kiln__sbuf_printf(b, "constexpr int CHINT = %d;\n", c->chint);
    /* EARLY_SR: the tile's random words at the item's start (kg: the consumer's item loop) */
    kiln__sbuf_printf(b, "constexpr int EARLY_SR = %d;\n", c->early_sr ? 1 : 0);
    /* WS_SPLIT: split-K through the workspace, the tile's last block summing (kg: the mainloop's
     * arrival count, the epilogue's sum) */
    kiln__sbuf_printf(b, "constexpr int WS_SPLIT = %d;\n", c->ws_split ? 1 : 0);
    /* STATS: the output statistics in the epilogue (kg_stat, kg_stat_flush) */
    kiln__sbuf_printf(b, "constexpr int STATS = %d;\n", c->stats ? 1 : 0);
    kiln__sbuf_printf(b,
                      "constexpr int SR_UNROLL = %d, CBUFS = %d, CLUSTER = %d, SLICE_SUM = %d, MC = %d, KP = %d, KP1 = %d;\n",
                      c->sr_unroll > 1 ? c->sr_unroll : 1, c->cbufs > 1 ? 2 : 1, c->cluster ? 1 : 0,
                      c->slice_sum ? 1 : 0, c->mcast ? 1 : 0, c->kpair ? 1 : 0, c->kpair == 2 ? 1 : 0);
    /* the dtype's conversions and the paired store of two neighbours of C */
    if (tf32) {
        kiln__sbuf_puts(b, "__device__ __forceinline__ float kg_f32(ST h) { return h; }\n"
                           "__device__ __forceinline__ ST kg_round_rn(float v) { return v; }\n"
                           "__device__ __forceinline__ ST kg_round_sr(float v, unsigned) { return v; }\n"
                           "__device__ __forceinline__ void kg_store_pair(ST *dst, ST a, ST b) {\n"
                           "  *(float2 *)dst = make_float2(a, b);\n}\n");
    } else {
        kiln__sbuf_printf(b,
                          "__device__ __forceinline__ float kg_f32(ST h) { return %s(h); }\n"
                          "__device__ __forceinline__ ST kg_round_rn(float v) { return (ST)%s(v); }\n"
                          "/* stochastic rounding of v with 16 random bits on top (kg_sr_half) */\n"
                          "__device__ __forceinline__ ST kg_round_sr(float v, unsigned bits) { return (ST)%s(v, bits); }\n"
                          "__device__ __forceinline__ void kg_store_pair(ST *dst, ST a, ST b) {\n"
                          "  *(unsigned *)dst = (unsigned)a | ((unsigned)b << 16);\n}\n",
                          bf16 ? "kiln_bf2f" : "kiln_h2f", bf16 ? "kiln_f32_to_bf16_rn" : "kiln_f2h",
                          bf16 ? "kiln_f32_to_bf16_sr" : "kiln_f16_sr13_fast");
    }
    /* d (64 x BN, f32, this warpgroup's fragment) += a (64 x KSTEP) @ b (KSTEP x BN), both from
     * shared memory through descriptors; the transpose bits say which is MN-major (16-bit
     * inputs only: tf32 takes K-major operands and no transpose arguments) */
    int nacc = c->bn / 2;
    const char *ty = tf32 ? "tf32" : bf16 ? "bf16" : "f16";
    kiln__sbuf_puts(b, "/* kg: generated wgmma */\n");
    /* d = A B + (scale_d ? d : 0): scale-d, wgmma's predicate operand, from the int */
    kiln__sbuf_puts(b, "__device__ __forceinline__ void kg_mma(float *d, kiln_w64 da, kiln_w64 db, int scale_d) {\n"
                       "  asm volatile(\"{\\n\"\n");
    kiln__sbuf_printf(b, "    \".reg .pred sd;\\n\"\n    \"setp.ne.b32 sd, %%%d, 0;\\n\"\n", nacc + 2);
    kiln__sbuf_printf(b, "    \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s\\n\"\n    \"  {", c->bn, tf32 ? 8 : 16, ty,
                      ty);
    for (int i = 0; i < nacc; i++) kiln__sbuf_printf(b, "%%%d%s", i, i + 1 < nacc ? (i % 16 == 15 ? ",\"\n    \"   " : ", ") : "");
    if (tf32)
        kiln__sbuf_printf(b, "},\\n\"\n    \"  %%%d, %%%d, sd, 1, 1;\\n}\\n\"\n    : ", nacc, nacc + 1);
    else
        kiln__sbuf_printf(b, "},\\n\"\n    \"  %%%d, %%%d, sd, 1, 1, %d, %d;\\n}\\n\"\n    : ", nacc, nacc + 1,
                          !c->a_kmajor, !c->b_kmajor);
    for (int i = 0; i < nacc; i++) kiln__sbuf_printf(b, "\"+f\"(d[%d])%s", i, i + 1 < nacc ? (i % 8 == 7 ? ",\n      " : ", ") : "");
    kiln__sbuf_puts(b, "\n    : \"l\"(da), \"l\"(db), \"r\"(scale_d));\n}\n");
    /* an item's accumulators before its first wgmma (scale-d 0): defined by no instruction, so
     * that ptxas keeps their registers as it did with zeros moved in (left undefined, it
     * allocated them anew and moved them around the epilogue: +48 moves a 64-element group) */
    kiln__sbuf_puts(b, "__device__ __forceinline__ void kg_acc_start(float *d) {\n#pragma unroll\n"
                       "  for (int i = 0; i < BN / 2; i++) asm volatile(\"\" : \"=f\"(d[i]));\n}\n");
    /* after wgmma.wait_group: the accumulators are final here, no read moves above it */
    kiln__sbuf_puts(b, "__device__ __forceinline__ void kg_acc_fence(float *d) {\n#pragma unroll\n"
                       "  for (int i = 0; i < BN / 2; i++) asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n}\n");
    kiln__sbuf_puts(b, "/* kg: end of generated wgmma */\n");
    kiln__sbuf_puts(b, kiln__cuda_gemm_dep_src);
    kiln__sbuf_puts(b, kiln_gemm_wgmma_kernel_src);
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_wgmma_source(cfg, b); }

char *kiln__cuda_gemm_wgmma_source_text(const kiln_gemm_wgmma_cfg *cfg)
{
    return kiln__cuda_gemm_text(gen_source, cfg);
}

/* ---- eligibility, tensor maps, the launch ------------------------------------------------- */

/* How one operand X (R rows of m or n by K, element (r, k) at x + r*s_r + k*s_k, batch
 * stride s_b when batched) goes into tensor maps: K-major when its K axis has unit stride
 * (or K is 1), MN-major when its R axis has, the other stride a positive 16-byte multiple
 * (or its axis of size 1). 0 when neither. */
static int operand_major(int64_t R, int64_t K, int64_t s_r, int64_t s_k, int es, int *kmajor)
{
    const int64_t q = 16 / es; /* elements in 16 bytes */
    /* rows that do not overlap: s_r >= K (K-major), s_k >= R (MN-major); tf32 (es 4) is
     * K-major only */
    if ((s_k == 1 || K == 1) && (R == 1 || (s_r >= K && s_r % q == 0))) {
        *kmajor = 1;
        return 1;
    }
    if (es == 2 && (s_r == 1 || R == 1) && (K == 1 || (s_k >= R && s_k % q == 0))) {
        *kmajor = 0;
        return 1;
    }
    return 0;
}

/* Elements from the first to one past the last of an R x K operand (positive strides). */
static int64_t matrix_span(int64_t R, int64_t K, int64_t s_r, int64_t s_k)
{
    return (R - 1) * (R > 1 ? s_r : 0) + (K - 1) * (K > 1 ? s_k : 0) + 1;
}

int kiln__cuda_gemm_wgmma_shape_ok(const kiln_gemm_desc *d, const kiln_gemm_batches *bt)
{
    /* f16 / bf16; f32 as tf32 where the context allows TF32 */
    if (d->dtype != KILN_DTYPE_F16 && d->dtype != KILN_DTYPE_BF16 && !(d->dtype == KILN_DTYPE_F32 && d->allow_tf32))
        return 0;
    const int es = (int)kiln_dtype_size(d->dtype), q = 16 / es;
    if (d->M <= 0 || d->N <= 0 || d->K <= 0) return 0;
    if (d->M > INT_MAX - 256 || d->N > INT_MAX - 256 || d->K > INT_MAX - 64) return 0; /* TMA coordinates: int */
    if (!kiln__cuda_aligned(d->a, 16) || !kiln__cuda_aligned(d->b, 16) || bt->n > 1) return 0;
    int km;
    if (!operand_major(d->M, d->K, d->a_sm, d->a_sk, es, &km) || !operand_major(d->N, d->K, d->b_sn, d->b_sk, es, &km))
        return 0;
    if (bt->n == 1) { /* batches that do not overlap (or broadcast: stride 0) */
        if (bt->shape[0] > INT_MAX) return 0;
        if (bt->sa[0] < 0 || bt->sa[0] % q != 0 || bt->sb[0] < 0 || bt->sb[0] % q != 0) return 0;
        if (bt->sa[0] != 0 && bt->sa[0] < matrix_span(d->M, d->K, d->a_sm, d->a_sk)) return 0;
        if (bt->sb[0] != 0 && bt->sb[0] < matrix_span(d->N, d->K, d->b_sn, d->b_sk)) return 0;
    }
    int64_t tm = (d->M + BM - 1) / BM, tn = (d->N + 127) / 128, nb = bt->n ? bt->shape[0] : 1;
    if (tm * tn > INT_MAX / 8 || nb > INT64_MAX / (tm * tn)) return 0;
    return 1;
}

/* One operand's tensor map as cuTensorMapEncodeTiled takes it: dims (inner, outer, batch)
 * in elements, byte strides of the outer and batch axes, the box. Axes of size 1 get a
 * harmless stride (TMA wants positive 16-byte multiples even where it never steps). */
static void map_desc(kiln_gemm_tmap_desc *m, const char *x, int es, int64_t inner, int64_t outer, int64_t s_outer,
                     int64_t nb, int64_t s_b, unsigned box_inner, unsigned box_outer)
{
    int64_t row = ((inner * es + 15) / 16) * 16; /* bytes */
    if (outer == 1 || s_outer <= 0) s_outer = row / es;
    if (nb == 1 || s_b <= 0) s_b = ((outer * s_outer * es + 15) / 16) * 16 / es;
    m->used = 1;
    m->elem_bytes = es;
    m->base = x;
    m->dims[0] = (uint64_t)inner;
    m->dims[1] = (uint64_t)outer;
    m->dims[2] = (uint64_t)nb;
    m->strides[0] = (uint64_t)(s_outer * es);
    m->strides[1] = (uint64_t)(s_b * es);
    m->box[0] = box_inner;
    m->box[1] = box_outer;
}

/* The edge map of a K-major operand (rows of 128 bytes; boxes of tile rows) whose last tile
 * has fewer than tile rows: a copy of its map with boxes of those rows rounded up to 8 (at
 * most 7 past the edge, one 1024-byte swizzle atom). On the H100 a box that lies half past
 * the edge costs about what a whole box in bounds does, and more with fewer rows in bounds:
 * 96 x 4096 x 4096 (64-row boxes, the second tile row's half past M) took 0.0183 ms against
 * 0.0118 with every box in bounds, 192 x 4096 x 4096 (128-row boxes) 0.0286 against 0.0157
 * (bench/NOTES.md step 34). Returns the edge box's bytes (a half of the kernel's word 21), 0
 * where there is none. */
static uint64_t edge_map(kiln_gemm_tmap_desc *edge, const kiln_gemm_tmap_desc *full, int kmajor, int64_t rows,
                         int tile)
{
    const int64_t last = rows % tile, box = (last + 7) / 8 * 8;
    if (!kmajor || !full->used || last == 0 || box >= tile) return 0;
    *edge = *full;
    edge->box[1] = (unsigned)box;
    return (uint64_t)box * ROW_BYTES;
}

/* Whether the 128-byte rows TMA reads of an operand start off 32-byte sectors: its base, its
 * row stride or its batch stride in bytes not a multiple of 32 (N = 1000 in 16 bits: every other
 * row 16 bytes off; `row` is B's k stride for an N-major B, A's m stride for a K-major A). On the
 * H100 TMA reads such rows with several times the L2 requests of aligned ones (ncu, 4096 x 1000 x
 * 1024 with B (K, N): 1.34 M L2 read requests for kiln's kernel against 0.35 M at N = 1024), and
 * where many tiles read them the time follows: B read by many tile rows 0.0201 ms against 0.0145
 * at N = 1024 and 0.0155 at N = 1008, whose 2016-byte rows are whole sectors though not whole
 * lines; dY of fc1000 bprop read K-major by 32 tile columns 0.0062 ms against 0.0045-0.0049 at K =
 * 1024 (bench/NOTES.md steps 35-36). */
static int rows_off_sector(const void *base, int64_t row, int64_t batch, int es)
{
    return (uintptr_t)base % 32 != 0 || (row * es) % 32 != 0 || (batch * es) % 32 != 0;
}
static int b_rows_off_sector(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int es)
{
    return rows_off_sector(d->b, d->b_sk, bt->n == 1 ? bt->sb[0] : 0, es);
}
static int a_rows_off_sector(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int es)
{
    return rows_off_sector(d->a, d->a_sm, bt->n == 1 ? bt->sa[0] : 0, es);
}

/* Slices split 0 of a long split-K tile takes beyond the others (kiln__cuda_gemm_wgmma_prepare):
 * about the time a partial's write and count take (~2 us) over one slice's (~0.4 us at BM =
 * BN = 128 on the H100) */
#define SPLIT_LEAD 4

/* One row of tiles (M <= 128, one batch: the batch-128 bprop shapes) with more 128-wide tiles
 * than SMs streams B from DRAM once; A (at most 128 rows) stays in L2. Each width's time by
 * rounds of the persistent grid (every term is per k slice, so K drops out): a round of m
 * tiles takes the longest of one tile's bytes through its SM (BM + w rows of 128 bytes at
 * ~85 GB/s, what one block streamed on the H100: 1 MiB in 12.4 us, fc4096 fprop's trace of
 * 2026-11-25), the round's B from DRAM (m w rows at ~2.9 TB/s, the marginal rate of the long
 * fprop shapes) and its tensor work (2 BM w 64 flops at ~7.5 TFLOP/s per SM; tf32's slice
 * holds half the k at half the rate, the same time). The widest of
 * equal times wins (fewer, longer tiles). fc36864 bprop (288 / 192 / 144 tiles): 90 / 78 /
 * 99 model-us, 192-wide; the others keep the widths measured best (fc9216 bprop 128,
 * fc25088 bprop 192 ~ 256). */
static int stream_width(int64_t N, int sms)
{
    static const int widths[3] = {256, 192, 128};
    int best = 128;
    double best_t = 0.0;
    for (int i = 0; i < 3; i++) {
        const int w = widths[i];
        const int64_t tiles = (N + w - 1) / w;
        const double sm_t = (double)(BM + w) * 128.0 / 85e9, tc_t = 2.0 * BM * w * 64.0 / 7.5e12;
        const double one = sm_t > tc_t ? sm_t : tc_t;
        double t = 0.0;
        for (int64_t left = tiles; left > 0; left -= sms) {
            const int64_t m = left < sms ? left : sms;
            const double dram_t = (double)m * w * 128.0 / 2.9e12;
            t += dram_t > one ? dram_t : one;
        }
        if (i == 0 || t < best_t * 0.98) {
            best = w;
            best_t = t;
        }
    }
    return best;
}

/* The k splits of a GEMM of `tiles` tiles, kt slices deep: none from 64 tiles up; below,
 * about 64 work items, 96 where 64 would make two splits of at most 32 slices (fc4096
 * fprop/bprop: 3 splits 0.0153 ms against 2 0.0160, one A/B on the H100 with the split lead;
 * the longer fc9216 and fc25088 fprop ran 11-12 % slower at 3), with at least 16 slices a
 * split, or 8 where that makes 4 splits or more and slices may sum them (pick_tiles). */
static int pick_splits(int64_t tiles, int64_t kt, int slices)
{
    if (tiles >= 64 || tiles >= KILN_CUDA_COUNTERS) return 1;
    const int64_t items = tiles >= 32 && kt <= 64 ? 96 : 64;
    int64_t s = (items + tiles - 1) / tiles, s8 = s < kt / 8 ? s : kt / 8;
    if (slices && s8 >= 4)
        s = s8;
    else if (s > kt / 16)
        s = kt / 16;
    return s > 1 ? (int)s : 1;
}

/* The k splits of `tiles` 64-wide tiles that all fit one wave of sms blocks: as many as
 * the wave holds, at least 16 slices each (pick_tiles). */
static int split64(int64_t tiles, int64_t kt, int sms)
{
    int64_t s = sms / tiles;
    if (s > kt / 16) s = kt / 16;
    if (tiles >= KILN_CUDA_COUNTERS) s = 1;
    return s > 1 ? (int)s : 1;
}

/* The tile rule: the tile width BN (64, 128, 192 or 256) and the number of k splits for an M x N
 * GEMM of kt slices in nb batches on sms SMs, fitted to the H100 sweep of 2026-11-23
 * (kiln-bench gemm-sweep, f16; bench/NOTES.md):
 *  - one row of tiles with more 128-wide tiles than SMs: stream_width's model;
 *  - 256-wide tiles when they alone fill the SMs (squares, the K=128 weight updates), or
 *    when the 128-wide ones would need a second wave (fc25088 bprop: 98 vs 196 tiles);
 *    128-wide when N <= 128;
 *  - but 128-wide where the 256-wide ones leave the second of two waves mostly empty and the
 *    128-wide fill more of their last (fitted on fc36864 bprop, 144 tiles on 132 SMs, before
 *    stream_width took the one-row shapes: 288 of 128 ran 0.86x of cuBLAS against 0.79x in
 *    two sweeps of 2026-11-24), and for K <= 128 when the 256-wide ones make at most one
 *    wave (fc1000 update: 128 vs 256 tiles, 1.36x / 0.93x of cuBLAS against 1.20x / 0.81x:
 *    a second tile per SM loads under the first one's stores);
 *  - 64-wide tiles where all of them fit one wave (N > 128): split over k into as many work
 *    items as fit the wave, at least 16 slices a split, the partials summed by the last block
 *    (split64). Every shape with fewer than 64 tiles of 128 lands here on 132 SMs. H100 sweep
 *    of 2026-11-26 (bench/NOTES.md step 14; own/cuBLASLt, f16 / bf16): fc4096 fprop and bprop
 *    1.21-1.25x at 64 wide in 2 splits against 0.94-0.96x for 128 in 3; fc1000 fprop 1.01-1.04x
 *    in 4 against 0.87-0.91x (128 in 8 slices); fc1000 bprop 0.86-0.91x unsplit against
 *    0.70-0.73x; the 1024 square 1.08-1.18x against 0.81-0.87x; fc9216 fprop 0.98x against
 *    0.93x; fc25088 / fc36864 fprop within the noise of their 128-wide splits. Splits summed
 *    in slices ran 5-14 % slower here (half the partial to read); but 128-wide tiles in two
 *    splits on two tile rows or more where the 64-wide ones would go unsplit over at least
 *    half a wave and K has 128 slices or more (batch-256 fprop of long K; step 28);
 *  - otherwise 128-wide tiles (the batch-128 fprop and bprop shapes: 72 tiles of 128 ran
 *    1.4x faster than 36 of 256), split over k only while there are fewer than 64 tiles
 *    (forced widths, N <= 128, or fewer SMs than the 64-wide tiles).
 *    These shapes read the weights once and are bound by DRAM: into about 64 work items,
 *    96 where 64 would make two splits of at most 32 slices (more bought nothing, even where
 *    the splits sum in slices: fc4096 fprop 0.84x of cuBLAS at 2 splits, 0.79x at 4 in
 *    slices, fc9216 fprop 0.88x / 0.83x; H100, 2026-11-24; fc4096 fprop's 3 splits won once
 *    the split lead hid the partials' writes) with at least 16 slices each, or 8 where that
 *    makes 4 splits or more (slices: every block of a tile then sums a part of it, where the
 *    last block's serial sum grows with the splits: fc1000 fprop 0.99x at 8 splits in
 *    slices, 0.72x through the last block). */
static int pick_tiles(int64_t M, int64_t N, int64_t kt, int64_t nb, int sms, int slices, int fast, int *splits_out,
                      int *sum_slices)
{
    *splits_out = 1;
    *sum_slices = 0;
    if (N <= 128) return 128;
    int64_t tm = nb * ((M + BM - 1) / BM);
    const int64_t tiles64 = tm * ((N + 63) / 64);
    if (tiles64 <= sms) {
        *splits_out = split64(tiles64, kt, sms);
        /* fast: 16-bit operands on a device whose DRAM peaks at 4 TB/s or more (the H200), one
         * tile row whose 64-wide split plan leaves a quarter of the SMs idle or more. There the
         * H100's plan streams B too slowly: on the H200 (gemm-sweep, graphed, f16, own / cuBLASLt;
         * bench/NOTES.md step 47) fc36864 fprop's 48 tiles in 2 splits ran 0.89x, 128-wide tiles
         * in 3 splits 0.97x (summed through the workspace or in slices alike), in 4 0.96x
         * through the workspace and 0.92x in slices (the rule's sum from 4 splits up); fc1000
         * fprop's 16 tiles in 4 splits 0.80-0.81x, in 8 splits of 8 slices summed in slices
         * 0.90x (through the workspace 0.82x; 128 wide in 8 slice-summed splits 0.80x). Plans that
         * fill the SMs (fc4096, fc9216 and fc25088 fprop: 128 blocks) stay, 1.05-1.17x there */
        const int64_t blocks64 = tiles64 * *splits_out;
        if (fast && tm == 1 && 4 * blocks64 <= 3 * (int64_t)sms) {
            const int64_t tiles128 = (N + 127) / 128;
            int64_t s128 = blocks64 / tiles128, s8 = sms / tiles64;
            if (s128 > 3) s128 = 3;
            if (s8 > kt / 8) s8 = kt / 8;
            if (kt >= 128 && s128 >= 2 && s128 <= kt / 16 && tiles128 < KILN_CUDA_COUNTERS) {
                *splits_out = (int)s128; /* long K: strips twice as wide, at most as many blocks */
                return 128;
            }
            if (kt < 128 && slices && s8 >= 4 && s8 > *splits_out && tiles64 < KILN_CUDA_COUNTERS) {
                *splits_out = (int)s8; /* short K: 8 slices a split, summed in slices */
                *sum_slices = 1;
                return 64;
            }
        }
        /* but two tile rows or more whose 64-wide tiles make more than half a wave unsplit,
         * of at least 128 slices: 128-wide tiles in two splits, as many work items with a
         * third less to load a flop. H100 (bench/NOTES.md step 28; f16 / bf16, ms, two rounds):
         * 256 x 4096 x 25088 0.090-0.092 / 0.086-0.087 against 0.110-0.123 at 64 wide and
         * cuBLASLt's 0.104-0.112; 256 x 4096 x 9216 -7 to -13 %, 512 x 2048 x 8192 -8 to -14 %;
         * at 64 slices (256 x 4096 x 4096) 0-7 % slower, so not there. tf32 (slices of 32 k):
         * 256 x 4096 x 25088 0.204 against 0.242 (cuBLASLt 0.213), 256 x 4096 x 4096 -2.5 % */
        const int64_t tiles128 = tm * ((N + 127) / 128);
        if (*splits_out == 1 && tm >= 2 && 2 * tiles128 <= sms && kt >= 128 && tiles128 < KILN_CUDA_COUNTERS) {
            *splits_out = 2;
            return 128;
        }
        return 64;
    }
    if (tm == 1 && (N + 127) / 128 > sms) return stream_width(N, sms);
    int64_t tiles256 = tm * ((N + 255) / 256), tiles128 = tm * ((N + 127) / 128);
    if (tiles256 > sms && tiles256 < 2 * sms) { /* the fill of the last wave: busy / (waves x sms) */
        double fill256 = (double)tiles256 / (double)(((tiles256 + sms - 1) / sms) * sms);
        double fill128 = (double)tiles128 / (double)(((tiles128 + sms - 1) / sms) * sms);
        if (fill128 > fill256 + 0.1) return 128;
    }
    if (tiles256 <= sms && tiles128 > sms && kt <= 2) return 128;
    if (tiles256 >= sms || tiles128 > sms) return 256;
    *splits_out = pick_splits(tiles128, kt, slices);
    return 128;
}

/* Whether C can go out through shared memory and TMA stores: unit stride along N, rows
 * and batches 16-byte multiples that do not overlap, a 16-byte aligned address, and N a
 * 16-byte multiple: a TMA store writes whole 16-byte chunks, so past a ragged N it would
 * overwrite up to 7 elements beyond the row (seen on the H100: test_dot's padded C). */
static int c_is_tma_target(const kiln_gemm_desc *d, const kiln_gemm_batches *bt)
{
    if (!kiln__cuda_aligned(d->c, 16) || d->c_sn != 1 || (d->N * (int64_t)kiln_dtype_size(d->dtype)) % 16 != 0)
        return 0;
    const int64_t es = (int64_t)kiln_dtype_size(d->dtype);
    if (d->M > 1 && (d->c_sm < d->N || d->c_sm * es % 16 != 0)) return 0;
    if (bt->n == 1 && (bt->sc[0] * es % 16 != 0 || bt->sc[0] < matrix_span(d->M, d->N, d->c_sm, 1))) return 0;
    return 1;
}

/* words 30-38 hold the keys of rounds 1-9: ten rounds at most (a round past them would read
 * word 39, round 0's product, as its key) */
_Static_assert(KILN_GEMM_SR_ROUNDS >= 1 && KILN_GEMM_SR_ROUNDS <= 10,
               "KILN_GEMM_SR_ROUNDS: the kernel's words hold 1 to 10 rounds");

void kiln__cuda_gemm_wgmma_sr_words(uint64_t *w)
{
    /* kiln_philox4x32_r(.., KILN_GEMM_SR_ROUNDS) with key w[0] and the counter's high word w[1]
     * (the stream): round 0 multiplies the stream's low word by 0xCD9E8D57 whatever the
     * counter's low word is, so its product's high half ^ k0 (low half of 39), its low half
     * (high half of 39) and the stream's high word ^ k1 (40) are the launch's; the keys of
     * rounds 1, 2, ... are 30, 31, ... (rounds past the last zero) */
    const uint32_t k0 = (uint32_t)w[0], k1 = (uint32_t)(w[0] >> 32);
    const uint64_t p1 = (uint64_t)0xCD9E8D57u * (uint32_t)w[1];
    w[39] = (uint64_t)((uint32_t)(p1 >> 32) ^ k0) | ((uint64_t)(uint32_t)p1 << 32);
    w[40] = (uint64_t)((uint32_t)(w[1] >> 32) ^ k1);
    for (uint32_t r = 1; r < 10; r++)
        w[29 + r] = r < KILN_GEMM_SR_ROUNDS
                        ? (uint64_t)(k0 + r * 0x9E3779B9u) | ((uint64_t)(k1 + r * 0xBB67AE85u) << 32)
                        : 0u;
}

/* Words 42-47: the divisors of the kernel's work items (kg_tile_of, kg_item) as kg_div words,
 * as the kernel sees them (multicast pairs tile rows: item_rows), and whether every item and
 * divisor is below 2^31 so that they apply (else the kernel divides) */
static void item_divisors(kiln_gemm_wgmma_launch *l)
{
    uint64_t *w = l->w;
    const int64_t nb = (int64_t)w[18], tm = (int64_t)w[19], tn = (int64_t)w[20], splits = (int64_t)w[26];
    const int64_t rows = l->cfg.mcast ? (tm + 1) / 2 : tm, group = (int64_t)w[41];
    const int64_t per_batch = rows * tn, per_group = group * tn, groups = (rows + group - 1) / group;
    const int64_t last = rows - (groups - 1) * group, lim = (int64_t)1 << 31;
    w[47] = nb * per_batch * splits < lim && per_group < lim;
    w[42] = kiln__cuda_gemm_div_word(splits);
    w[43] = kiln__cuda_gemm_div_word(per_batch < lim ? per_batch : 1);
    w[44] = kiln__cuda_gemm_div_word(per_group < lim ? per_group : 1);
    w[45] = kiln__cuda_gemm_div_word(group);
    w[46] = kiln__cuda_gemm_div_word(last);
}

/* The persistent blocks of an unsplit launch of `tiles` tiles on `rows` rows of tiles (batches
 * x tile rows): one an SM, at most one a tile; but one row of tiles past a wave (fc36864 bprop:
 * 192 tiles of 192 on 132 SMs) gets as many blocks as make the rounds even (96, two tiles
 * each), so that the last round streams through all of them, not through the 60 SMs a full
 * grid leaves it (-2.6 to -2.9 % f16 and bf16; 128-wide tiles on 72 or 96 blocks -6 %; on the
 * squares a grid of 128 for 512 tiles measured level; H100, 2026-11-26, bench/NOTES.md step
 * 22). Not measured with ping-pong, which keeps the full grid. */
static unsigned tile_grid(int64_t tiles, int64_t rows, int pingpong, int sm_count)
{
    if (tiles <= sm_count) return (unsigned)tiles;
    if (rows != 1 || pingpong) return (unsigned)sm_count;
    const int64_t rounds = (tiles + sm_count - 1) / sm_count;
    return (unsigned)((tiles + rounds - 1) / rounds);
}

/* KILN_WGMMA_GRID (grid > 0): at most that many persistent blocks, at most one an SM and one a
 * work item, where no block waits for another's (not in clusters or slice sums) */
static void forced_grid(kiln_gemm_wgmma_launch *l, int64_t items, int sm_count, int grid)
{
    if (grid <= 0 || l->cluster || l->cfg.slice_sum) return;
    const unsigned full = (unsigned)(items < sm_count ? items : sm_count);
    l->grid = (unsigned)grid < full ? (unsigned)grid : full;
}

void kiln__cuda_gemm_wgmma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sm_count, uint64_t seed,
                                   const kiln_gemm_wgmma_opts *opts, kiln_gemm_wgmma_launch *l)
{
    memset(l, 0, sizeof *l);
    kiln_gemm_wgmma_cfg *c = &l->cfg;
    const int es = (int)kiln_dtype_size(d->dtype), bk = 128 / es; /* a k slice: one 128-byte row */
    c->dtype = d->dtype;
    operand_major(d->M, d->K, d->a_sm, d->a_sk, es, &c->a_kmajor);
    operand_major(d->N, d->K, d->b_sn, d->b_sk, es, &c->b_kmajor);
    c->bias = d->bias != NULL;
    c->beta = d->beta != 0.0;
    c->alpha1 = (float)d->alpha == 1.0f;
    c->relu = d->relu != 0;
    c->stats = d->stats != NULL;
    c->sr = es == 2 && d->round == KILN_ROUND_STOCHASTIC; /* f32 C is not rounded */
    c->c_pair = d->c_sn == 1 && (d->M == 1 || d->c_sm % 2 == 0) && ((uintptr_t)d->c % (2u * (unsigned)es)) == 0 &&
                (bt->n == 0 || bt->sc[0] % 2 == 0);
    int64_t nb = bt->n ? bt->shape[0] : 1;
    int64_t kt = (d->K + bk - 1) / bk;
    int splits = 1;
    /* slice sums where they may apply: not turned off, not a cluster's or the workspace's */
    const int slices_ok = !(opts && (opts->no_coop || opts->split_sum == 1 || opts->split_sum == 2));
    const int fast = opts && opts->fast_dram && es == 2; /* (tf32 not measured that way) */
    int sum_slices = 0; /* the rule's 64-wide splits that it sums in slices (fast, short K) */
    c->bn = pick_tiles(d->M, d->N, kt, nb, sm_count, slices_ok, fast, &splits, &sum_slices);
    if (opts && (opts->bn == 64 || opts->bn == 128 || opts->bn == 192 || opts->bn == 256) && opts->bn != c->bn) {
        /* a forced width: the splits its own tile count asks for */
        const int64_t tiles = nb * ((d->M + BM - 1) / BM) * ((d->N + opts->bn - 1) / opts->bn);
        c->bn = opts->bn;
        splits = c->bn == 64 && tiles <= sm_count ? split64(tiles, kt, sm_count) : pick_splits(tiles, kt, slices_ok);
        sum_slices = 0;
    }
    /* The plain weight updates (C = alpha A B, K from 33 to 128: one or two k slices in 16 bits,
     * up to four in tf32; unsplit, four waves of tiles or more, B at most 4 MiB) walk their
     * tiles row by row (group_m 1, below) on the cooperative schedule. There the C stores set
     * the pace, and A and B stay in L2 in any order. On the H100 (graphed, bench/NOTES.md step 39) row order
     * beat groups of 8 tile rows by 2-6 % at K = 64, 96 and 128 in f16 and bf16 (36864 x 3072,
     * 25088 x 4096, 9216 x 4096, 8192 x 8192, 65536 x 1024), and in row order the cooperative
     * schedule beat ping-pong by 1-2 %. Left to groups of 8, where row order measured level or
     * slower: fewer than four waves of tiles (2048 x 2048 x 128 +2-7 %, fc4096's update -1 to
     * +2 %, fc1000's +0-3 %), K of 32 or less (4096 x 4096 x 32 bf16 +7 %), a wide B (1024 x
     * 65536 x 128, B 16 MiB: +25 %, B read again by every tile row), and a bias or stochastic
     * rounding (the epilogue's instructions set the pace: level or slower; with bias, ReLU and SR
     * level, 0.995-1.018, step 44). ReLU alone takes the plain updates' plan in 16 bits, where
     * the kernel applies it to the rounded words (RELU_WORDS, half an instruction an element):
     * its cost over plain on the fc9216 / fc36864 updates fell from 12.0-12.7 / 6.8-9.0 % to
     * 0.6-2.4 / 0.0-2.9 % (f16 and bf16, graphed, both trees in one run, step 45), the evict_first
     * stores 2-4.5 % of it, row order against groups of 8 level (0.92-1.05 by shape, geomean
     * 0.99); tf32 keeps its f32 ReLU and its groups of 8 (not measured in row order). In tf32
     * (B stored (N, K)) row order with evict_first stores (chint, below) took fc9216 / fc36864 /
     * fc25088's updates 8.7 / 11.3 / 8.8 % and the K = 64-128 updates 3-14 % faster, none slower
     * (tree A/B, three rounds, bench/NOTES.md step 40). */
    const int64_t tiles_rule = nb * ((d->M + BM - 1) / BM) * ((d->N + c->bn - 1) / c->bn);
    const int update_order = !c->bias && !(c->relu && d->dtype == KILN_DTYPE_F32) && !c->sr && !c->beta && d->K > 32 &&
                             d->K <= 128 && splits == 1 &&
                             tiles_rule >= 4 * (int64_t)sm_count && d->K * d->N * es <= ((int64_t)4 << 20);
    /* Ping-pong (KILN_WGMMA_SCHED=pingpong forces it, =coop keeps the cooperative schedule), the
     * rule's for the other plain f16 K <= 128 weight updates: each consumer's epilogue of a whole
     * tile runs under the other's wgmma, and there the epilogue, not the wgmma, sets the pace.
     * On the H100 (bench/NOTES.md step 21; groups of 8) f16 fc9216 / fc4096 / fc36864 / fc25088
     * updates 2.6-6.7 % faster than cooperative, fc1000 level; bf16 either side (-4 to +3 %);
     * with a bias (10-22 % against 0-9 %), ReLU (4.6-8.5 % against 0-3 %: level on fc9216, 3-4 %
     * behind on fc4096 and fc36864) or stochastic rounding (92-109 % against 69-80 %) the
     * cooperative kernel is the faster, so only C = alpha A B */
    const int pp_rule = d->dtype == KILN_DTYPE_F16 && !c->bias && !c->relu && !c->sr && !c->beta && kt <= 2 &&
                        splits == 1 && !update_order &&
                        nb * ((d->M + BM - 1) / BM) * ((d->N + 127) / 128) >= sm_count && opts && opts->tma_store &&
                        !opts->bn && !opts->splits && !opts->cbufs && opts->kpair != 2 && opts->mcast != 2 &&
                        c_is_tma_target(d, bt); /* (not where a forced knob asks for what ping-pong lacks) */
    c->pingpong = opts && (opts->pingpong ? opts->pingpong == 2 : pp_rule);
    c->sr_unroll = c->sr ? (opts && opts->sr_unroll > 0 ? opts->sr_unroll : 4) : 0;
    if (c->pingpong) { /* a whole 128 x 128 tile per consumer: 128 accumulators; never split */
        c->bn = 128;
        splits = 1;
    }
    /* 64-row tiles, unsplit (kpair): one consumer taking every k slice (the rule's), or k pairs
     * (the two consumers taking alternate slices, consumer 1's sums added to consumer 0's
     * through shared memory; only forced: KILN_WGMMA_KPAIR=1). 64 wide where the rule's 64-wide
     * tiles of 128 rows are unsplit and fill at most half the SMs (fc1000 bprop: 64 tiles of
     * 128 rows, 128 of 64 rows; not where the width or the splits are forced). KILN_WGMMA_KPAIR=1
     * or =one forces them, 64 wide (128 with KILN_WGMMA_BN=128; wider would leave k pairs' ring
     * fewer than the four stages they need) */
    const int64_t tiles64 = nb * ((d->M + BM - 1) / BM) * ((d->N + 63) / 64);
    const int kp_rule = c->bn == 64 && splits == 1 && d->M > 64 && 2 * tiles64 <= sm_count &&
                        !(opts && (opts->bn || opts->splits));
    /* 128 wide (64 x 128 tiles) where A is K-major with rows that straddle 128-byte lines (dY
     * of fc1000 bprop: 2000-byte rows), the rule's tiles are unsplit and the 64 x 128 tiles fill
     * more than a quarter of the SMs and at most a wave: each A row is then read by half as
     * many tile columns, and with 64 blocks or more the blocks' loads keep up. On the H100
     * (graphed, f16, one consumer; NOTES step 32): 128 x 4096 x 1000 0.0068 -> 0.0063 ms against
     * 64 wide; 192 / 256 x 4096 x 1000 and 128 x 8192 x 1000 0.0097-0.0110 -> 0.0071-0.0084
     * against 128-row tiles; with aligned rows (K = 1024) or at most 32 tiles (128 x 2048 x 1000)
     * the 64-wide tiles stay ahead. One consumer against k pairs: level to 8 % faster on every
     * shape measured (128 x 4096 x 1024 64 wide 0.0049 -> 0.0045, fc1000 bprop 0.0065 ->
     * 0.0063): no sums to exchange, no wait for the other consumer's last slice */
    const int64_t tiles128 = nb * ((d->M + 63) / 64) * ((d->N + 127) / 128);
    const int a_straddles = c->a_kmajor && (((uintptr_t)d->a % 128u) != 0 || (d->a_sm * es) % 128 != 0);
    const int kp128_rule = es == 2 && a_straddles && splits == 1 && d->M > 64 && 4 * tiles128 > sm_count &&
                           tiles128 <= sm_count && !(opts && (opts->bn || opts->splits));
    /* 64 wide, unsplit, in place of the rule's two or more splits of 64-wide tiles on one tile
     * row where the 64-row tiles fill the SMs to within 1/32 of a wave, up to 144 k slices
     * (K 9216). The one-consumer launch costs about the same whatever N up to a wave (each
     * block's 16 KiB slices at its ingest limit), the split launch grows with N (its bytes) and
     * pays the partials' tail, so they cross just under a wave. On the H100 (graphed, f16,
     * ms, 7 stages; NOTES step 33): 128 x 4096 x K for K 2048 / 3072 / 4096 / 6144 / 9216:
     * 0.0088 -> 0.0072, 0.0108 -> 0.0097, 0.0128 -> 0.0122, 0.0235 -> 0.0222, 0.0322 -> 0.0318
     * (bf16 alike); K 10240 level, 12288 1 % slower; 128 x 4224 x 4096 (132 tiles) 0.0130 ->
     * 0.0123; 120 and 112 tiles (N 3840, 3584) 5-6 % slower. With B cold (gemm-one --rotate
     * 4, the ring as deep as fits) 128 x 4096 x 4096 0.0169 -> 0.0143 (cuBLASLt 0.0144); B
     * repeated call after call (the gemm table) some machines keep it partly in L2 for the
     * split launch (0.0118, level) */
    const int kpfill_rule = es == 2 && c->bn == 64 && splits > 1 && nb == 1 && d->M > 64 && d->M <= BM &&
                            64 * tiles64 >= 31 * (int64_t)sm_count && 2 * tiles64 <= sm_count && kt <= 144 &&
                            !(opts && (opts->bn || opts->splits));
    c->kpair = c->pingpong                               ? 0
               : opts && opts->kpair                     ? (opts->kpair >= 2 ? opts->kpair - 1 : 0)
               : kp_rule || kp128_rule || kpfill_rule    ? 2
                                                         : 0;
    c->stages_cap = opts && opts->stages > 0 ? opts->stages : 0;
    if (c->kpair) {
        c->bn = opts && opts->kpair >= 2 ? (opts->bn == 128 ? 128 : 64) : kp128_rule ? 128 : 64;
        splits = 1;
    }
    const int bm = bm_of(c);
    if (opts && opts->splits > 0 && !c->pingpong && !c->kpair) {
        int64_t tiles = nb * ((d->M + bm - 1) / bm) * ((d->N + c->bn - 1) / c->bn);
        splits = opts->splits;
        sum_slices = 0;
        if (splits > kt) splits = (int)kt;
        if (tiles >= KILN_CUDA_COUNTERS) splits = 1;
    }
    c->tma_store = opts && opts->tma_store && c_is_tma_target(d, bt); /* 16-bit C, or f32 (tf32) */
    if (c->tma_store && es == 4) {
        /* f32 C's staging is twice the 16-bit one's (128 KiB for a 256-wide tile, leaving the
         * ring two stages): staged where a tile's k slices all fit the ring beside it, or number
         * at most 36 (deep, below), on 128-wide tiles where the rule's width leaves too few
         * stages (unless the width was forced). The K = 128 updates: 0.73-0.79x of cuBLASLt's
         * TF32 from the registers at 256 wide, 0.95-1.38x staged at 128 (H100, 2026-11-25);
         * deep-K shapes lost 2-50 % staged with the shallower ring (bench/NOTES.md, step 13) */
        const int64_t kslices = (kt + splits - 1) / splits;
        kiln_gemm_wgmma_cfg narrow = *c;
        narrow.bn = 128;
        /* (stages_for never says fewer than two: whether two fit beside the staging is
         * smem_for's to say; a 256-wide tile with a bias needs 88 bytes more than there are) */
        /* Up to 36 k slices (K 1152) f32 C is staged even where the tile's slices overrun the
         * ring left beside the staging (5 stages at 128 wide; KILN_WGMMA_STORE=tma-deep forces it
         * at any depth): on the H100 (graphed, gemm-ab, bench/NOTES.md step 40) 4096 x 4096 x 256
         * 0.83x -> 0.98x of cuBLASLt's TF32, 25088 x 4096 x 256 0.76x -> 0.88x, 4096 x 4096 x 512
         * 0.80x -> 0.91x, 4096 x 1000 x 256 0.93x -> 1.13x, 25088 x 512 x 256 0.95x -> 1.06x,
         * 8192 x 1024 x 1024 and 16384 x 4096 x 1024 -6 and -9 %, 100352 x 128 x 1152 -2 %;
         * deeper, level or slower (1024 x 4096 x 4096 +1 %, 6272 x 512 x 4608 +5 %, 4608 x 512 x
         * 6272 +8.5 %): there the ring, not the store, sets the pace. On 64-wide tiles the same
         * (one gemm-ab, step 40): 256 x 1000 x 4096 -7 %, fc1000 fprop / bprop -2 / -1 %, 130 x
         * 4000 x 300 -3 %, 1000 x 1000 x 1000 -2 %, the 1024 square level. Not 64-row tiles (k
         * pairs, one consumer: not measured) */
        const int deep = opts->stage_deep || (kslices <= 36 && !c->kpair);
        if (kslices > stages_for(c) || !smem_fits(c)) {
            if (opts->bn == 0 && !c->pingpong && c->bn > 128 && (deep || kslices <= stages_for(&narrow)) &&
                smem_fits(&narrow))
                c->bn = 128;
            else if (!deep || !smem_fits(c))
                c->tma_store = 0;
        }
    }
    int a_bat = bt->n == 1 && bt->sa[0] != 0, b_bat = bt->n == 1 && bt->sb[0] != 0;
    if (c->a_kmajor)
        map_desc(&l->map[0], d->a, es, d->K, d->M, d->a_sm, a_bat ? nb : 1, a_bat ? bt->sa[0] : 0, (unsigned)bk,
                 (unsigned)bm);
    else
        map_desc(&l->map[0], d->a, es, d->M, d->K, d->a_sk, a_bat ? nb : 1, a_bat ? bt->sa[0] : 0, 64, (unsigned)bk);
    if (c->b_kmajor)
        map_desc(&l->map[1], d->b, es, d->K, d->N, d->b_sn, b_bat ? nb : 1, b_bat ? bt->sb[0] : 0, (unsigned)bk,
                 (unsigned)c->bn);
    else
        map_desc(&l->map[1], d->b, es, d->N, d->K, d->b_sk, b_bat ? nb : 1, b_bat ? bt->sb[0] : 0, 64, (unsigned)bk);
    if (c->tma_store) /* C as (N, M, batch); boxes of 128-byte rows (64 or 32 columns) x 64 rows */
        map_desc(&l->map[2], d->c, es, d->N, d->M, d->c_sm, nb, bt->n ? bt->sc[0] : 0, (unsigned)(128 / es), 64);
    int64_t tm = (d->M + bm - 1) / bm, tn = (d->N + c->bn - 1) / c->bn;
    uint64_t *w = l->w;
    kiln__cuda_gemm_words(d, seed, nb, w);
    kiln__cuda_gemm_wgmma_sr_words(w);
    w[19] = (uint64_t)tm;
    w[20] = (uint64_t)tn;
    w[21] = 0; /* the edge boxes' bytes, set below (this kernel reads its RELU, not word 21) */
    w[22] = (uint64_t)(bt->n ? bt->sc[0] : 0);
    w[23] = (uint64_t)a_bat;
    w[24] = (uint64_t)b_bat;
    w[25] = (uint64_t)kt;
    /* (a group of more rows than there are is all of them: clamped, so that the kernel's
     * group x tile-columns product stays within the tiles of a batch) */
    const int64_t group = opts && opts->group_m > 0 ? opts->group_m : update_order ? 1 : GROUP_M;
    w[41] = (uint64_t)(group < tm ? group : tm);
    int64_t kper = (kt + splits - 1) / splits;
    splits = (int)((kt + kper - 1) / kper); /* every split gets at least one slice */
    /* Split 0 takes the first k0 = kt - (splits - 1) kper slices (kg_krange), at most kper. Where
     * the splits are long (16 slices or more) the others take SPLIT_LEAD / splits fewer each and
     * split 0 about SPLIT_LEAD more than they: its block arrives last at the tile's counter, and
     * the others write their partials (~2 us on the H100: 64 KiB each, the fence, the count;
     * fc4096 fprop's trace of 2026-11-25) while it runs its last slices, instead of the last
     * block waiting for them. The slice boundaries follow the shape alone, whichever way the
     * splits are summed (the same bits). */
    if (splits > 1 && kt >= 16 * (int64_t)splits) kper = (kt - SPLIT_LEAD + splits - 1) / splits;
    /* The split sums in a cluster (KILN_WGMMA_SPLIT_SUM=cluster, where it applies): the
     * splits of a tile are the blocks of one cluster, at most 8 (the portable cluster size),
     * on 64- or 128-wide tiles (the f32 partial, 32 or 64 KiB, takes over the ring's first
     * stages after the mainloop), not ping-pong, and one work item per block (every tile's
     * cluster in the first wave: nothing loads into the ring after the mainloop). Every tile
     * is split there,
     * so C goes out from the registers (no staging, one more stage). Not the rule's choice:
     * on the H100 the fprop shapes ran 6-15 % slower than through the workspace at every
     * split count (bench/NOTES.md, step 7; the clusters pack their blocks into fewer GPCs). */
    int64_t ntiles = nb * ((d->M + bm - 1) / bm) * ((d->N + c->bn - 1) / c->bn);
    c->cluster = splits > 1 && splits <= 8 && c->bn <= 128 && !c->pingpong && ntiles <= sm_count / splits &&
                 opts && opts->split_sum == 1 && !opts->no_cluster;
    /* Slice sums (the rule's choice from 4 splits up but on 64-wide tiles, there only for its
     * fast-memory splits of 8 slices (pick_tiles), or KILN_WGMMA_SPLIT_SUM=slices) where every
     * work item is in the first wave: one block per split of every tile, all resident together
     * (at most one block fits an SM; the launch is cooperative, so the driver refuses it rather
     * than leaving a block waiting for one that cannot start). As with clusters every tile is
     * split, so C goes out from the registers. */
    c->slice_sum = splits > 1 && !c->cluster && !c->pingpong && ntiles * splits <= sm_count && slices_ok &&
                   ((splits >= 4 && (c->bn != 64 || sum_slices)) || (opts && opts->split_sum == 3));
    if (c->cluster || c->slice_sum) {
        c->tma_store = 0;
        l->map[2].used = 0;
    }
    /* Two C staging buffers per consumer where a tile's k slices all fit the ring that is left
     * (the K=128 weight updates): there the C store, not the wgmma, sets the pace, and with one
     * buffer each tile's epilogue waits for the previous tile's store to have left shared
     * memory. Deep-K tiles keep one buffer and the deeper ring. */
    if (c->tma_store && !c->pingpong && splits == 1) {
        /* (stages_for never says fewer than two stages, so the fit is smem_for's: f32 C's two
         * 256-wide buffers, 256 KiB, had passed for a fit and failed the launch: tf32 at K <= 64,
         * wide N, bench/NOTES.md step 39; a forced 2 that cannot fit gets one too) */
        kiln_gemm_wgmma_cfg two = *c;
        two.cbufs = 2;
        const int two_fit = smem_fits(&two);
        int fits = two_fit && kper <= stages_for(&two);
        c->cbufs = opts && opts->cbufs ? opts->cbufs : fits ? 2 : 1;
        if (!two_fit) c->cbufs = 1;
    } else {
        c->cbufs = 1;
    }
    w[26] = (uint64_t)splits;
    w[27] = (uint64_t)kper;
    /* TMA multicast of B in clusters of two (tile rows 2 i and 2 i + 1), KILN_WGMMA_MCAST=1
     * forcing it on, =0 off: unsplit, not ping-pong, at least two tile rows. Not the rule's
     * choice in general: measured 2-4 % slower than without on the squares and 3-15 % on the
     * K=128 updates (H100, 2026-11-25, bench/NOTES.md step 11): one block per SM already has
     * the L2 bandwidth it needs where B's rows are whole sectors.
     * The rule's multicast: an N-major B whose rows start off 32-byte sectors read by eight tile
     * rows or more, at least 8 k slices, every pair of tile rows in the first wave; each row of
     * B then crosses L2 once per pair (H100, graphed: 4096 x 1000 x 1024 0.0201 -> 0.0171 ms,
     * 4096 x 1000 x 4096 0.0724 -> 0.0555, 1024 x 1000 x 4096 0.0278 -> 0.0233, 4096 x 1000 x
     * 512 0.0120 -> 0.0117; at 4 k slices 8 % slower, with pairs past a wave 33 %; step 35) */
    const int mcast_rule = es == 2 && !c->b_kmajor && !c->kpair && tm >= 8 && kt >= 8 &&
                           2 * nb * ((tm + 1) / 2) * tn <= sm_count && b_rows_off_sector(d, bt, es);
    c->mcast = splits == 1 && !c->pingpong && !c->cluster && !c->slice_sum && tm >= 2 &&
               (opts && opts->mcast ? opts->mcast == 2 : mcast_rule);
    if (c->mcast) /* each block loads half of B: half the rows (K-major), half the k rows of each box */
        l->map[1].box[1] = c->b_kmajor ? (unsigned)c->bn / 2 : (unsigned)bk / 2;
    /* The edge boxes (maps 3 and 4; word 21, which this kernel does not read for ReLU): B's only
     * without multicast (whose boxes are half a tile's rows) */
    w[21] = edge_map(&l->map[3], &l->map[0], c->a_kmajor, d->M, bm) |
            edge_map(&l->map[4], &l->map[1], c->b_kmajor && !c->mcast, d->N, c->bn) << 32;
    c->edge = w[21] != 0;
    /* B's loads marked evict_first where B streams through L2 once and past its size: at most two
     * tile rows read it (M <= 256 on 128-row tiles, M <= 128 on 64-row ones), B not shared by the
     * batches, 48 MiB or more in all (the H100's L2 holds 50 MB), not multicast (whose loads are
     * the cluster's). A, which every tile column reads again, then keeps its lines. H100, f16 /
     * bf16, graphed, warm and with B cold (bench/NOTES.md step 37): fc36864 bprop -3.5 to -3.7 %,
     * fc25088 fprop -3.6 to -4.5 %, fc9216 fprop -0.7 to -3.1 %, 256 x 36864 x 3072 -6.6 %, fc9216
     * / fc25088 bprop -0.4 to -1 %; fc36864 fprop +0.2-0.9 %, 128 x 16384 x 8192 +1 %, 128 x 12288
     * x 12288 +1.3 %; below the L2's size (fc4096, 32 MB) +1 % warm, -1.7 % cold, so left out. */
    const int b_shared = bt->n && bt->sb[0] == 0;
    const double b_bytes = (double)(b_shared ? 1 : nb) * (double)d->K * (double)d->N * (double)es;
    const int bhint_rule = tm <= 2 && !b_shared && b_bytes >= 48.0 * 1024 * 1024;
    c->bhint = !c->mcast && (opts && opts->bhint ? opts->bhint == 2 : bhint_rule);
    /* C's TMA stores with an evict_first L2 policy where the tiles go row by row (update_order):
     * C, written once, leaves L2 in the order it was written, and DRAM takes the stream faster
     * (H100, graphed, bench/NOTES.md step 39: the K = 64 updates 13-15 % faster, K = 128 1-7 %,
     * 8192 x 8192 x 128 8-10 %; in groups of 8 the same policy was level to 11 % slower, step 37) */
    c->chint = opts && opts->chint ? opts->chint - 1 : update_order && c->tma_store ? 1 : 0;
    l->update_order = update_order;
    l->tiles = nb * tm * tn;
    l->ws_bytes = splits > 1 && !c->cluster ? (size_t)l->tiles * (size_t)splits * (size_t)bm * (size_t)c->bn * sizeof(float) : 0;
    /* (a launch that falls back to one split keeps its kernel: kiln__cuda_gemm_wgmma_unsplit) */
    c->ws_split = splits > 1 && !c->cluster && !c->slice_sum && !c->pingpong;
    int64_t items = l->tiles * splits;
    l->grid = splits == 1 ? tile_grid(l->tiles, nb * tm, c->pingpong, sm_count)
                          : (unsigned)(items < sm_count ? items : sm_count);
    if (c->cluster) { /* a cluster per tile, a block per split: every item in the first wave */
        l->grid = (unsigned)items;
        l->cluster = (unsigned)splits;
    }
    if (c->mcast) { /* a cluster per pair of tile rows, as many as run at once */
        int64_t pairs = nb * ((tm + 1) / 2) * tn, cap = opts && opts->mc_pairs > 0 ? opts->mc_pairs : sm_count / 2;
        if (cap < 1) cap = 1;
        l->grid = (unsigned)(2 * (pairs < cap ? pairs : cap));
        l->cluster = 2;
    }
    forced_grid(l, items, sm_count, opts ? opts->grid : 0);
    l->cooperative = c->slice_sum;
    /* The SR words at the item's start where each block has one item, on the cooperative tiles
     * (fc bprop) and one consumer's 64-row tiles (fc fprop): there the epilogue is the launch's
     * tail, and the words made while the first stage lands leave it (H100, bench/NOTES.md steps
     * 42-43: fc9216 bprop's full epilogue 5.7-6.9 % -> 3.6-4.5 %; on one consumer's tiles, once
     * the kernel kept the split check out of these mainloops, fc4096 fprop / bprop 6-7 % faster,
     * fc9216 fprop level to 2 %, fc1000 bprop level); not where blocks have several items (the
     * squares, the updates: there v19c's words under the mainloop cost more than they saved) */
    const int early_fits = c->sr && c->tma_store && !c->pingpong && !c->mcast && !c->cluster && !c->slice_sum &&
                           c->kpair != 1 && splits == 1 && c->bn <= 128;
    const int early_asked = opts ? opts->early_sr : 0; /* KILN_WGMMA_EARLY_SR: 1 off, 2 on where it fits */
    c->early_sr = early_fits && (early_asked ? early_asked == 2 : l->tiles <= (int64_t)l->grid);
    l->threads = THREADS;
    l->smem = smem_for(c);
    item_divisors(l);
}

/* KILN_GEMM=auto's choice. The plan classes where the wgmma kernel ran ahead of cuBLASLt in
 * every f16 and bf16 table of 2026-11-25 on the H100 (bench/results/
 * 2026-11-25-cuda-h100-session4.md, calls 1, 3, 4 and 6):
 *  - one row of tiles (M <= 128, one batch), unsplit, from 64 tiles to one wave: fc9216
 *    bprop 1.08-1.13x, fc25088 bprop 1.11-1.14x;
 *  - split tiles of 128 k slices or more a split: fc25088 fprop 1.12-1.14x, fc36864 fprop
 *    1.02-1.04x (at 64 wide since 2026-11-26: 1.10x, 1.04x).
 * 64-wide tiles (the rule's since 2026-11-26; bench/results/2026-11-26-cuda-h100.md, call 3):
 *  - split, at most 32 k slices a split: fc4096 fprop/bprop 1.21-1.26x, fc1000 fprop
 *    0.98-1.02x; tf32 fc1000 fprop / bprop 1.43x / 1.36x;
 *  - unsplit on more than one tile row: the 1024 square 1.11x / 1.55x / 1.40x (f16, bf16,
 *    tf32); not on one row (fc1000 bprop 0.85x), nor in k pairs (fc1000 bprop 0.93-0.96x).
 * Elsewhere cuBLASLt stays: fc9216 fprop 0.96-0.97x (64 wide, 72 slices a split; tf32's 144
 * take the class above: 1.14x), fc4096 tf32 0.95x (62 slices), fc36864 bprop 0.90-0.97x,
 * the K = 128 updates but the plain f16 ones (cooperative: either side of 1.0x by dtype and
 * run), the larger squares
 * within the clock's noise of 1.0x. The plain f16 K <= 128 updates in ping-pong (the schedule
 * rule's) go to the wgmma kernel: 1.03-1.23x (2026-11-26, tenth session, call 5) and
 * 1.05-1.25x in the closing table (call 6).
 * f32 read as tf32 (B stored (N, K)), the same classes against cuBLASLt's TF32 in both
 * tables of 2026-11-25 (fifth session): fc9216 / fc25088 bprop 1.02-1.03x / 1.07-1.08x;
 * fc9216 / fc25088 / fc36864 fprop (144, 392, 384 slices of 32 k a split) 1.07x /
 * 1.05-1.06x / 1.07-1.08x; fc4096 fprop/bprop (0.87-0.88x) stay with cuBLASLt.
 * kiln-bench gemm-auto (2026-11-26, sixteenth session; bench/NOTES.md step 27), shapes beyond
 * the list:
 *  - at most 64 rows of A go to cuBLASLt: the kernel's 128-row tiles run half empty or worse
 *    (batch 1-64 fprop / bprop 0.46-0.71x, where the classes above took some);
 *  - 16-bit products of at most 2^29 flops go to the wgmma kernel: a call's host time sets
 *    the pace there (kiln ~4.5 us, cuBLASLt 7-11 us; the 256 and 512 squares 1.45-1.55x);
 *  - 16-bit unsplit launches of tiles 128 wide or more, on two tile rows or more, filling
 *    three quarters of a wave or more, go to the wgmma kernel: transformer projections and
 *    their weight gradients, convolutions as GEMMs, the updates of K 32-512, the squares
 *    from 2048: 1.00-1.28x (two at 0.96-0.99x); under that (a conv's 98 tiles of K 4608,
 *    72 of K 6272) cuBLASLt's split k wins (0.63-0.79x);
 *  - 64-wide unsplit tiles need four tile rows (the batch-256 fprop shapes on two lost,
 *    0.69-0.97x), or two with at most 16 k slices (2026-11-27, twenty-fourth session, after
 *    the edge boxes: M 136-256 x N 4096 x K 512-1024 1.02-1.20x in f16). */
int kiln__cuda_gemm_wgmma_auto(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sm_count)
{
    const int tf32 = d->dtype == KILN_DTYPE_F32;
    if (d->dtype != KILN_DTYPE_F16 && d->dtype != KILN_DTYPE_BF16 && !(tf32 && d->allow_tf32)) return 0;
    if (d->M <= 64) return 0;
    const kiln_gemm_wgmma_opts rule = {.tma_store = 1}; /* the tile rule's own choices */
    kiln_gemm_wgmma_launch l;
    kiln__cuda_gemm_wgmma_prepare(d, bt, sm_count, 0, &rule, &l);
    const int64_t splits = (int64_t)l.w[26], kper = (int64_t)l.w[27];
    const int64_t rows = (int64_t)l.w[18] * (int64_t)l.w[19]; /* batches x tile rows */
    if (l.cfg.pingpong) return 1; /* the plain f16 updates: 1.03-1.23x (session 10, call 5) */
    const double flops = 2.0 * (double)d->M * (double)d->N * (double)d->K * (double)l.w[18];
    /* small tf32 products (at most 2^31 flops, half of tf32's rate beside f16's 2^29 at a
     * quarter): 1.03-2.3x over cuBLASLt's TF32, whose host time and tiles are set for larger
     * ones (gemm-auto --dtype f32 --tf32, bench/NOTES.md step 28) */
    if (tf32 && flops <= 2147483648.0) return 1;
    /* the plain tf32 weight updates the tile rule walks row by row with C staged and stored
     * evict_first: 1.02-1.25x over cuBLASLt's TF32 (fc9216 / fc36864 / fc25088 update
     * 1.13 / 1.05 / 1.04x; 36864 x 3072 x 64 1.00x, 8192 x 8192 x 128 1.25x; H100, graphed,
     * bench/NOTES.md step 40) */
    if (tf32 && l.update_order && l.cfg.tma_store) return 1;
    /* tf32 on two to four tile rows of one batch (M 129-512), unsplit or in two splits:
     * 1.03-1.48x over cuBLASLt's TF32 with B warm and cold (192 / 256 / 512 x 4096 x 4096 1.07 /
     * 1.05 / 1.03x, 200 x 4096 x 4096 1.40x, 512 x 2048 x 8192 1.27x, 384 x 25088 x 4096 1.46x,
     * 512 x 1024 x 4096 1.20x; level at 512 x 8192 x 8192 and 384 x 2048 x 8192, 0.99x; H100,
     * graphed, bench/NOTES.md step 40), not unsplit 64-wide tiles (256 x 3072 x 3072 0.97-0.99x)
     * nor 64-row ones (not measured) */
    if (tf32 && l.w[18] == 1 && l.w[19] >= 2 && l.w[19] <= 4 && splits <= 2 && !(splits == 1 && l.cfg.bn == 64) &&
        !l.cfg.kpair)
        return 1;
    if (!tf32) {
        if (flops <= (double)(1 << 29)) return 1;
        /* an N-major B whose rows start off 32-byte sectors, read by four tile rows or more
         * over 4 k slices or more: cuBLASLt (4096 x 1000 x 256-4096 0.68-0.92x, 0.86-0.92x with
         * the rule's multicast; 1024 x 1000 x 4096 0.77x, 0.92x; 776 x 2056 x 520 0.86-0.88x;
         * kiln's own stays for the K = 128 updates, fc1000's 1.06-1.09x, and two tile rows,
         * fc1000 b256 fprop, 1.16x; step 35) */
        if (!l.cfg.b_kmajor && rows >= 4 && (int64_t)l.w[25] >= 4 && b_rows_off_sector(d, bt, 2)) return 0;
        /* a K-major A of at most 128 rows (one batch) whose rows start off 32-byte sectors, read
         * by eight tile columns or more: cuBLASLt (128 x 4096-16384 x 1000-3000 0.71-0.86x, 128 x
         * 25088 x 1000 level; neither cp.async loads nor k slices offset per tile column helped,
         * bench/NOTES.md step 36) */
        if (l.cfg.a_kmajor && d->M <= 128 && l.w[18] == 1 && (int64_t)l.w[20] >= 8 && a_rows_off_sector(d, bt, 2))
            return 0;
        /* pick_tiles' two splits of 128-wide tiles on two tile rows or more: 1.0-1.22x (step 28) */
        if (splits == 2 && l.cfg.bn == 128 && rows >= 2) return 1;
        /* (not k pairs 128 wide: 256 x 4096 x 1000 0.96x, NOTES step 32) */
        if (splits == 1 && rows >= 2 && l.cfg.bn != 64 && !l.cfg.kpair && 4 * l.tiles >= 3 * (int64_t)sm_count) return 1;
        /* two tile rows of one batch (M 129-256) in unsplit 64-wide tiles, three quarters of a
         * wave or more, at most 16 k slices (K <= 1024 at f16): 1.02-1.20x (bf16 0.97-1.16x),
         * weights repeated and cold; deeper K goes either way by M (0.89-1.36x: cuBLASLt changes
         * kernels at M 192), so it stays there (bench/NOTES.md step 35) */
        if (splits == 1 && l.cfg.bn == 64 && !l.cfg.kpair && l.w[18] == 1 && l.w[19] == 2 && kper <= 16 &&
            4 * l.tiles >= 3 * (int64_t)sm_count)
            return 1;
    }
    /* 64-row tiles filling a wave (tile rule's kpfill_rule, or its unsplit kp_rule on such a
     * count): own up to 144 k slices (128 x 4096 x 2048-4096: 1.12-1.21x; 128 x 4096 x 1024
     * 1.11x; 128 x 4096 x 6144-9216 1.05-1.06x in f16 and bf16, weights repeated and cold, since
     * the ring is as deep as fits and B's loads go evict_first: NOTES steps 33, 37), cuBLASLt
     * beyond (128 x 4096 x 12288, 192 slices: 0.99-1.00x); but not two tile rows of one batch
     * with the second part-full (M 65-127): cuBLASLt keeps B in L2 across calls there (M 96-124
     * x N 4096 x K 1024-4096 0.85-0.91x repeated, 0.98-1.00x cold; step 35) */
    if (!tf32 && splits == 1 && l.cfg.bn == 64 && l.cfg.kpair && 32 * l.tiles >= 31 * (int64_t)sm_count)
        return (int64_t)l.w[25] <= 144 && !(l.w[18] == 1 && l.w[19] == 2 && d->M < 128);
    if (splits == 1 && l.cfg.bn == 64) return rows >= 4 && !l.cfg.kpair;
    if (splits == 1) return rows == 1 && l.tiles >= 64 && l.tiles <= sm_count;
    /* a few 64-wide tiles split 16 ways or more (256 x 256 x 65536): cuBLASLt, 1.14-1.29x ahead
     * of the wgmma kernel in tf32 and 1.3x in f16 / bf16 (step 28) */
    if (l.cfg.bn == 64 && splits >= 16) return 0;
    return kper >= 128 || (l.cfg.bn == 64 && kper <= 32);
}

void kiln__cuda_gemm_wgmma_unsplit(kiln_gemm_wgmma_launch *l, int sm_count, int grid)
{
    l->w[42] = kiln__cuda_gemm_div_word(1);
    /* (a slice-summed launch stays structured so: its kernel then runs one split, stores
     * from the registers and needs neither workspace nor a cooperative launch) */
    l->cooperative = 0;
    l->w[26] = 1;
    l->w[27] = l->w[25];
    l->ws_bytes = 0;
    l->grid = tile_grid(l->tiles, (int64_t)l->w[18] * (int64_t)l->w[19], l->cfg.pingpong, sm_count);
    forced_grid(l, l->tiles, sm_count, grid);
}

