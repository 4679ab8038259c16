/*
 * src/cuda/gemm_plan.h — the host-side description of kiln's own GEMM launches (issue 5),
 * free of CUDA headers so that tests can include it on any machine: the merged batch axes,
 * the wgmma kernel's structure and everything one of its launches needs, as computed from
 * the GEMM's description alone (kiln__cuda_gemm_wgmma_prepare, no device calls), and its
 * source as text. tests/test_gemm_emu.c runs such launches on a host emulator of the
 * kernel's PTX. Internal to src/cuda and the tests.
 */
#ifndef KILN_CUDA_GEMM_PLAN_H
#define KILN_CUDA_GEMM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "cuda/source.h"
#include "ops/dot.h"

/* Whether backend address p is a multiple of n bytes (vector loads, TMA, paired stores). */
static inline int kiln__cuda_aligned(const void *p, size_t n) { return ((uintptr_t)p % n) == 0; }

/* The split-K arrival counters of a context (one int per tile of a launch, zero between
 * launches): the most tiles a split launch may have. */
#define KILN_CUDA_COUNTERS 4096

/* The batch axes of a GEMM with the size-1 axes dropped and neighbours merged where A, B
 * and C all step through them as one (gemm.c). Strides in elements. */
typedef struct kiln_gemm_batches {
    int n;
    int64_t shape[KILN_MAX_DIMS];
    int64_t sa[KILN_MAX_DIMS], sb[KILN_MAX_DIMS], sc[KILN_MAX_DIMS];
} kiln_gemm_batches;

void kiln__cuda_gemm_merge_batches(const kiln_gemm_desc *d, kiln_gemm_batches *bt);

/* Words of the tiled kernels (mma.sync, FFMA): 0..18 (kiln__cuda_gemm_words), 19-20 tiles
 * along M and N, 21 ReLU, 22 merged batch axes, 23 + 4 i batch axis i (size, strides of A,
 * B, C); the grid: tiles along x, batches along y (at most 65535, the kernels loop). */
void kiln__cuda_gemm_tile_words(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed, int64_t tm,
                                int64_t tn, uint64_t *w, unsigned *gx, unsigned *gy);
/* CUDA C of the device helpers they share: KG_TILE_ARGS (the words as named constants),
 * kg_stat_add and kg_stat_out (the output statistics), kg_tile (grouped tile order),
 * kg_batch (batch offsets from the words); needs kiln_w64 (the prelude) and, for
 * KG_TILE_ARGS, the kernel's element type ST. */
extern const char kiln__cuda_gemm_tile_src[];
/* CUDA C of kiln_gemm_stats_out(w, out, s, f64), the one-thread kernel after an own GEMM that
 * added its output statistics to the words w (kiln__cuda_gemm_stats_words): out[0] = the f32
 * whose bits are w[0]'s low half (the largest finite magnitude), out[s] = w[1] (the non-finite
 * count, through f64 as kiln_dot's pass counts it), out f32 or (f64 != 0) f64; then w zeroed for
 * the next launch. */
extern const char kiln__cuda_gemm_stats_out_src[];
/* CUDA C of kg_grid_dep(), which every own GEMM kernel calls before it touches global memory:
 * on sm_90 and up it waits until the grid before it on the stream has completed and its
 * memory is visible (at once where the launch was not a programmatic dependent one;
 * kiln__cuda_gemm_launch); nothing elsewhere. */
extern const char kiln__cuda_gemm_dep_src[];
/* The text of the source gen(cfg) writes, malloc'd; NULL on no memory (for tests). */
char *kiln__cuda_gemm_text(void (*gen)(const void *, kiln_sbuf *), const void *cfg);
/* Words 0..18 of a GEMM kernel's argument array (layout in gemm_plan.c). */
void kiln__cuda_gemm_words(const kiln_gemm_desc *d, uint64_t seed, int64_t nbatch, uint64_t *w);

/* The structure of a wgmma kernel: dtype, which operands are K-major in shared memory (TMA
 * boxes along their unit-stride axis), the epilogue's costly options, the tile width. */
typedef struct kiln_gemm_wgmma_cfg {
    kiln_dtype dtype; /* F16, BF16, or F32 (tf32 in the tensor cores, K-major operands only) */
    int a_kmajor, b_kmajor;
    int bias, beta, sr, c_pair;
    int alpha1; /* alpha is 1 in f32: the epilogue skips its multiply */
    int relu;   /* ReLU in the epilogue (a structure bit: as a run-time flag its select cost two
                 * instructions an element, if-converted, with ReLU off too) */
    int bn; /* 64, 128, 192 or 256 columns of C per tile (BM is 128) */
    int tma_store; /* C staged in shared memory and stored by TMA (KILN_WGMMA_STORE=tma) */
    int pingpong;  /* each consumer warpgroup on 128 x 128 tiles of its own (KILN_WGMMA_SCHED) */
    int sr_unroll; /* register-store epilogue groups unrolled with stochastic rounding
                    * (KILN_WGMMA_SR_UNROLL; 4) */
    int cbufs;     /* tma_store: C staging buffers per consumer, 1 or 2 (KILN_WGMMA_CBUFS) */
    int cluster;   /* split-K: the splits of a tile are one cluster of blocks whose partials meet in
                    * distributed shared memory, each block summing and storing a slice of the tile
                    * (KILN_WGMMA_SPLIT_SUM=cluster); 0 = through the workspace, the last block sums */
    int slice_sum; /* split-K: every block of a tile sums a slice of it from the partials in the
                    * workspace, all blocks resident together (a cooperative launch; the rule's
                    * choice where every work item fits the first wave, KILN_WGMMA_SPLIT_SUM=slices) */
    int mcast;     /* clusters of two blocks on tile rows 2 i, 2 i + 1 sharing B through TMA multicast
                    * (unsplit, not ping-pong; KILN_WGMMA_MCAST) */
    int kpair;     /* 64-row tiles (64 or 128 wide, unsplit; KILN_WGMMA_KPAIR): 1 = k pairs, the two
                    * consumers taking the k slices in turn, consumer 1's sums added to consumer
                    * 0's through shared memory; 2 = one consumer taking every slice */
    int stages_cap; /* the most stages of the ring (0 = the rule's: 7, or as many as fit up to 16
                     * with one consumer on 64-row tiles; KILN_WGMMA_STAGES) */
    int edge;       /* word 21 names an edge box (A's or B's): the producer's per-item choice of map
                     * and bytes is compiled only into such launches (with it in every launch,
                     * fc1000 bprop bf16 ran 3 % slower on the H100; bench/NOTES.md step 35) */
    int bhint;      /* B's TMA loads carry an evict_first L2 policy (B streamed once through L2, so that
                     * what is read again, A, stays there; KILN_WGMMA_BHINT) */
    int chint;      /* C's TMA stores carry an L2 policy: 0 none, 1 evict_first (the rule's where the tiles go
                     * row by row), 2 evict_last (KILN_WGMMA_CHINT) */
    int early_sr;   /* stochastic rounding's Philox words of the tile computed at the item's start, before
                     * its first stage lands (unsplit staged tiles of 64-128 columns, not k pairs, one item a
                     * block) */
    int stats;      /* the output statistics in the epilogue (the GEMM asks for them): each consumer thread's
                     * over the elements it stores, a block's in shared memory, the launch's in the words
                     * at the argument's `stats` (kg_stat_flush) */
    int ws_split;   /* split-K summed by the tile's last block through the workspace (splits > 1, neither a
                     * cluster nor slice sums): only such kernels compile the mainloop's arrival count and the
                     * last block's sum (in the others ptxas had kept the count's test, a branch, between each
                     * slice's wait and its first wgmma) */
} kiln_gemm_wgmma_cfg;

/* 1 when the wgmma kernel takes d on ctx's device: compute capability 9.0 with the tensor-
 * map entry points, f16 / bf16, A and B each with a unit-stride axis, 16-byte aligned
 * addresses and 16-byte multiples for the other strides, at most one batch axis (after
 * merging) with non-negative 16-byte-multiple strides, sizes within int. */
int kiln__cuda_gemm_wgmma_eligible(const kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt);
/* The GEMM's part of that (everything but the device; gemm_wgmma.c, the rest in
 * gemm_wgmma_launch.c). */
int kiln__cuda_gemm_wgmma_shape_ok(const kiln_gemm_desc *d, const kiln_gemm_batches *bt);
/* A tensor map as cuTensorMapEncodeTiled takes it (128-byte swizzle): dims
 * (inner, outer, batch) in elements, byte strides of the outer and batch axes, the box. */
typedef struct kiln_gemm_tmap_desc {
    int used;
    int elem_bytes; /* 2 (f16, bf16) or 4 (f32 read as tf32) */
    const void *base;
    uint64_t dims[3];
    uint64_t strides[2];
    unsigned box[2];
} kiln_gemm_tmap_desc;

/* Argument words of the wgmma kernel (layout in its source; 28-29 are the split-K
 * workspace and counters, filled at launch; 30-40 stochastic rounding's Philox constants; 41
 * the tile rows per group of the tile order; 42-46 the work-item divisors as
 * kiln__cuda_gemm_div_word words, 47 whether they apply; word 21, ReLU for the other kernels,
 * holds the bytes of A's edge box in its low half and B's in its high half, 0 where there is
 * none). */
#define KILN_GEMM_WGMMA_WORDS 48

/* A divisor d (1 <= d < 2^31) as one word for the kernels' kg_div: the multiplier
 * m = ceil(2^(31 + s) / d) < 2^32 in the low half, s = ceil(log2 d) in the high half; then
 * n / d = (n m) >> (31 + s) for every n < 2^31. */
uint64_t kiln__cuda_gemm_div_word(int64_t d);

/* Everything one launch needs, from the description alone (no device calls): the kernel's
 * structure, the tensor maps of A, B and (tma_store) C, the words, the persistent grid,
 * the dynamic shared memory, the split-K workspace (0 = unsplit). Tests run the same
 * launch on a host emulator of the kernel's PTX. */
typedef struct kiln_gemm_wgmma_launch {
    kiln_gemm_wgmma_cfg cfg;
    /* A, B, C (tma_store), then the edge maps: A's boxes for the last tile row and B's for the
     * last tile column, where the operand is K-major and that row (column) has fewer rows than
     * a tile: boxes of its rows rounded up to 8, so that TMA fills few rows past the edge (on the
     * H100 a box half past M took as long as a whole one in bounds or longer: 96 x 4096 x 4096
     * 0.0184 ms with 64-row boxes, 0.0115 with the edge boxes; bench/NOTES.md step 34) */
    kiln_gemm_tmap_desc map[5];
    uint64_t w[KILN_GEMM_WGMMA_WORDS];
    int64_t tiles;
    unsigned grid, threads, smem;
    unsigned cluster; /* cfg.cluster: blocks per cluster (= the splits; the grid a multiple); else 0 */
    int cooperative;  /* cfg.slice_sum: every block resident at once (a cooperative launch) */
    int update_order; /* the rule's plain weight updates (K 33-128, four waves of tiles or more): tiles
                       * walked row by row (group 1) and, staged, C stored evict_first (cfg.chint) */
    size_t ws_bytes;
} kiln_gemm_wgmma_launch;

/* Choices for the tile rule (kiln_dot reads them from KILN_WGMMA_*; tests set them):
 * tma_store 1 = C through shared memory and TMA where C allows it (kiln_dot's default),
 * 0 = from the registers; bn 64, 128, 192 or 256 (0 = the rule's; a forced width takes the
 * splits its own tile count asks for); splits (0 = the rule's)
 * the number of k splits (clamped to the k slices and the counter array). */
typedef struct kiln_gemm_wgmma_opts {
    int tma_store;
    int stage_deep; /* f32 C staged (at most 128 wide) even where a tile's k slices overrun the ring left
                     * beside the staging (KILN_WGMMA_STORE=tma-deep) */
    int bn;
    int splits;
    int pingpong;  /* 0 = the rule's, 1 = cooperative, 2 = ping-pong (then BN 128, no split) */
    int sr_unroll; /* 0 = the default (4) */
    int cbufs;     /* C staging buffers per consumer, 1 or 2 (0 = the rule's) */
    int split_sum; /* 0 = the rule's, 1 = a cluster where it applies, 2 = the workspace (the last
                    * block sums), 3 = slices where they apply (the rule's choice there) */
    int no_cluster; /* the device cannot launch clusters: split sums go through the workspace */
    int no_coop;    /* no cooperative launches (the driver refused one): no slice sums */
    int mcast;      /* 0 = the rule's (off), 1 = off, 2 = on where it applies (KILN_WGMMA_MCAST) */
    int mc_pairs;   /* clusters of two the device runs at once with this kernel (0 = SMs / 2) */
    int kpair;      /* 0 = the rule's, 1 = off, 2 = k pairs, 3 = one consumer (64-row tiles, unsplit) */
    int group_m;    /* tile rows per group of the tile order (0 = the rule's; KILN_WGMMA_GROUP_M) */
    int grid;       /* persistent blocks, at most one an SM (0 = the rule's; KILN_WGMMA_GRID) */
    int stages;     /* the ring's most stages, 1-16 (0 = the rule's; KILN_WGMMA_STAGES) */
    int bhint;      /* 0 = the rule's, 1 off, 2 on (KILN_WGMMA_BHINT) */
    int chint;      /* 0 = the rule's, 1 none, 2 evict_first, 3 evict_last (KILN_WGMMA_CHINT) */
    int early_sr;   /* 0 = the rule's, 1 off, 2 on where it applies (KILN_WGMMA_EARLY_SR) */
    int fast_dram;  /* the one-tile-row plans of pick_tiles for a device whose DRAM peaks at 4 TB/s or
                     * more (the H200's 4.8, not the H100's 3.35; bench/NOTES.md steps 47-48); kiln_dot:
                     * KILN_WGMMA_FAST_DRAM=0|1, unset where the context's peak is KILN_GEMM_FAST_DRAM_BPS
                     * or more */
} kiln_gemm_wgmma_opts;

/* The DRAM peak (bytes a second, kiln_cuda_state.dram_bps) from which kiln_dot's wgmma tile rule
 * takes its fast-memory plans (fast_dram) unless KILN_WGMMA_FAST_DRAM says otherwise */
#define KILN_GEMM_FAST_DRAM_BPS 4.0e12

/* Words 30-40 from the seed (w[0]) and stream (w[1]): what the kernel's Philox takes from
 * them alone (round 0's product of the stream, the keys of rounds 1 to KILN_GEMM_SR_ROUNDS - 1;
 * words 30-38 hold up to ten rounds). */
void kiln__cuda_gemm_wgmma_sr_words(uint64_t *w);

/* Fills *l for an eligible d on a device of sm_count SMs. */
void kiln__cuda_gemm_wgmma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sm_count, uint64_t seed,
                                   const kiln_gemm_wgmma_opts *opts, kiln_gemm_wgmma_launch *l);
/* Makes *l unsplit (no workspace to be had); grid > 0 is KILN_WGMMA_GRID's, applied again. */
void kiln__cuda_gemm_wgmma_unsplit(kiln_gemm_wgmma_launch *l, int sm_count, int grid);
/* Whether KILN_GEMM=auto (the default) takes an eligible d to the wgmma kernel rather than
 * cuBLASLt on a device of sm_count SMs: the tile rule's plan (no overrides) in a class
 * measured ahead of cuBLASLt (gemm_wgmma.c). */
int kiln__cuda_gemm_wgmma_auto(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sm_count);
/* The CUDA C source of cfg's kernel ("kiln_gemm_wgmma"), malloc'd; NULL on no memory. */
/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_wgmma") to b; b->oom on failure. */
void kiln__cuda_gemm_wgmma_source(const kiln_gemm_wgmma_cfg *cfg, kiln_sbuf *b);
char *kiln__cuda_gemm_wgmma_source_text(const kiln_gemm_wgmma_cfg *cfg);

/* Words of the tiled kernels (the mma.sync and FFMA kernels): room for every batch rank. */
#define KILN_GEMM_TILE_WORDS (23 + 4 * KILN_MAX_DIMS)

/* ---- the mma.sync kernel (gemm_mma.c) ---- */

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
    int stats;  /* the output statistics in the epilogue (the GEMM asks for them) */
} kiln_gemm_mma_cfg;

/* Argument words of every launch (room for KILN_MAX_DIMS batch axes), then the address of the
 * output statistics' words (kiln__cuda_gemm_stats_words; cfg.stats). */
#define KILN_GEMM_MMA_W_STATS KILN_GEMM_TILE_WORDS
#define KILN_GEMM_MMA_WORDS   (KILN_GEMM_TILE_WORDS + 1)

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
/* The CUDA C source of cfg's kernel ("kiln_gemm_mma"), malloc'd; NULL on no memory. */
/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_mma") to b; b->oom on failure. */
void kiln__cuda_gemm_mma_source(const kiln_gemm_mma_cfg *cfg, kiln_sbuf *b);
char *kiln__cuda_gemm_mma_source_text(const kiln_gemm_mma_cfg *cfg);

/* ---- the FFMA kernel (gemm_ffma.c) ---- */

/* Its structure: which operands are K-major (k contiguous) and fetched as float4, the
 * epilogue's options, float4 stores of C. */
typedef struct kiln_gemm_ffma_cfg {
    int a_kmajor, a_vec, b_kmajor, b_vec;
    int bias, beta, c_vec;
    int split; /* split-K: blockIdx.y is the k split, partials meet in a workspace */
    int bk;    /* k slice depth: 8 or 16 */
    int minb;  /* blocks per SM the registers are capped for (__launch_bounds__): 1 or 2 */
    int warps; /* thread layout of a warp in the 16 x 16 grid: 0 2 x 16, 1 4 x 8 */
    int wide;  /* 128 x 256 tiles, 8 x 16 accumulators a thread (else 128 x 128, 8 x 8) */
    int order; /* the FFMA block's order: 1 column by column, rows up and down in turn; 0 row by row */
    int early; /* 1: the next slice stored and the barrier passed before the last k step */
    int walk;  /* 1: interior float4 operands fetched through pointers stepped each slice */
    int slices; /* split: every block of a tile sums a slice of it (a cooperative launch) */
    int edge_walk; /* walk: edge tiles walk too where each fetch is wholly inside or past the rows */
    int stats;     /* the output statistics in the epilogue (the GEMM asks for them) */
} kiln_gemm_ffma_cfg;

/* Overrides of the FFMA kernel's structure (0 = the default): KILN_FFMA_BK, KILN_FFMA_MINB,
 * KILN_FFMA_WARPS, KILN_FFMA_BN (benchmarks sweep them; warps 1 = 2 x 16, 2 = 4 x 8; bn 128
 * or 256, which takes one block per SM and k slices of 8 whatever bk and minb say);
 * KILN_FFMA_ORDER (1 rows, 2 columns), KILN_FFMA_EARLY, KILN_FFMA_WALK, KILN_FFMA_SLICES
 * (1 off, 2 on); no_coop: the context's driver refused a cooperative launch. */
typedef struct kiln_gemm_ffma_opts {
    int bk, minb, warps, bn, order, early, walk;
    int slices;  /* 0 the rule's, 1 off, 2 where it fits */
    int no_coop; /* no cooperative launches (the driver refused one): no slice sums */
} kiln_gemm_ffma_opts;

/* Argument words: the tile words, then (split-K) the k slices per split, the f32
 * workspace (tiles x splits x 128 x 128) and the arrival counters (an int per tile, zero
 * between launches), then the address of the output statistics' words (cfg.stats). */
#define KILN_GEMM_FFMA_W_KPER     KILN_GEMM_TILE_WORDS
#define KILN_GEMM_FFMA_W_WS       (KILN_GEMM_TILE_WORDS + 1)
#define KILN_GEMM_FFMA_W_COUNTERS (KILN_GEMM_TILE_WORDS + 2)
#define KILN_GEMM_FFMA_W_STATS    (KILN_GEMM_TILE_WORDS + 3)
#define KILN_GEMM_FFMA_WORDS      (KILN_GEMM_TILE_WORDS + 4)

typedef struct kiln_gemm_ffma_launch {
    kiln_gemm_ffma_cfg cfg;
    uint64_t w[KILN_GEMM_FFMA_WORDS];
    int nw;
    unsigned gx, gy, threads;
    size_t ws_bytes; /* split-K workspace (0 = unsplit) */
} kiln_gemm_ffma_launch;

/* 1 when the FFMA kernel takes d: f32, M, N, K > 0, the tile count within int. */
int kiln__cuda_gemm_ffma_eligible(const kiln_gemm_desc *d);
/* Fills *l for an eligible d (no device calls). sms: the device's SMs for the split rule
 * (one unbatched GEMM splits its k slices where the modelled time, whole waves of blocks
 * times the split's depth plus the cost of its partial, is lower; each split >= 128
 * deep); 0 = never split. o: overrides (NULL = none). */
void kiln__cuda_gemm_ffma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sms,
                                  const kiln_gemm_ffma_opts *o, kiln_gemm_ffma_launch *l);
/* The CUDA C source of cfg's kernel ("kiln_gemm_ffma"), malloc'd; NULL on no memory. */
/* Appends the CUDA C source of cfg's kernel ("kiln_gemm_ffma") to b; b->oom on failure. */
void kiln__cuda_gemm_ffma_source(const kiln_gemm_ffma_cfg *cfg, kiln_sbuf *b);
char *kiln__cuda_gemm_ffma_source_text(const kiln_gemm_ffma_cfg *cfg);

#endif /* KILN_CUDA_GEMM_PLAN_H */
