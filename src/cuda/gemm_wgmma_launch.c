/*
 * src/cuda/gemm_wgmma_launch.c — runs kiln's wgmma GEMM kernel (gemm_wgmma.c: its source and
 * the launch description) on the context's device: whether the device and the GEMM can take
 * it, the KILN_WGMMA_* overrides, the tensor maps encoded through the driver, the split-K
 * workspace, the kernel through the cache, the (cooperative or cluster) launch.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_own.h"

int kiln__cuda_gemm_wgmma_eligible(const kiln_ctx *ctx, const kiln_gemm_desc *d, const kiln_gemm_batches *bt)
{
    const kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (st->cc_major != 9 || st->cc_minor != 0 || !st->cu.TensorMapEncodeTiled || !st->cu.FuncSetAttribute) return 0;
    return kiln__cuda_gemm_wgmma_shape_ok(d, bt);
}

static kiln_status encode_map(kiln_ctx *ctx, CUtensorMap *map, kiln_dtype dt, const kiln_gemm_tmap_desc *m,
                              const char *what)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    cuuint64_t dims[3] = {m->dims[0], m->dims[1], m->dims[2]};
    cuuint64_t strides[2] = {m->strides[0], m->strides[1]};
    cuuint32_t box[3] = {m->box[0], m->box[1], 1}, estr[3] = {1, 1, 1};
    CUresult r = st->cu.TensorMapEncodeTiled(map,
                                             dt == KILN_DTYPE_BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                             : dt == KILN_DTYPE_F32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                                    : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                                             3, (void *)m->base, dims, strides, box, estr,
                                             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return KILN_ERROR(ctx, KILN_ERR_DRIVER,
                          "kiln_dot: argument '%s': cuTensorMapEncodeTiled failed (%d) for dims (%llu, %llu, %llu), "
                          "strides (%llu, %llu) bytes",
                          what, (int)r, (unsigned long long)m->dims[0], (unsigned long long)m->dims[1],
                          (unsigned long long)m->dims[2], (unsigned long long)m->strides[0],
                          (unsigned long long)m->strides[1]);
    return KILN_OK;
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_wgmma_source(cfg, b); }

/* The overrides of the tile rule from the environment, read at every call (benchmarks
 * sweep them): KILN_WGMMA_STORE=tma|regs|tma-deep (tma, the default, where C allows it: 16-bit,
 * unit stride along N, 16-byte rows; f32 where the rule finds the ring deep enough or the tile's k
 * slices few; tma-deep: f32 staged at any depth), KILN_WGMMA_SCHED=coop|pingpong (coop, both consumers
 * on one tile, is the rule's but for the plain f16 K <= 128 updates that are not walked row by
 * row: ping-pong measured slower on most other shapes),
 * KILN_WGMMA_KPAIR=0|1|one (64-row tiles, 64 wide or KILN_WGMMA_BN=128's, unsplit: 1 the two
 * consumers taking the k slices in turn, one a single consumer taking them all),
 * KILN_WGMMA_BN=64|128|192|256, KILN_WGMMA_SPLITS=1..64,
 * KILN_WGMMA_SR_UNROLL=1|2|4 (groups of the register-store epilogue unrolled together with
 * stochastic rounding; 4, the default; 1 keeps the code smallest; the staged epilogue unrolls
 * them all),
 * KILN_WGMMA_CBUFS=1|2 (C staging buffers per consumer with TMA stores; the rule's: 2 where
 * a tile's k slices fit the ring beside two buffers), KILN_WGMMA_SPLIT_SUM=cluster|workspace
 * (where split tiles meet: the workspace, the default, or a cluster where it applies),
 * KILN_WGMMA_MCAST=0|1 (clusters of two sharing B through TMA multicast: off, or on wherever
 * the launch is unsplit with two tile rows or more, k pairs' 64-row tiles included; unset, the
 * rule's: on for an N-major B whose rows start off 32-byte sectors, read by eight tile rows or
 * more), KILN_WGMMA_GROUP_M=1..1024
 * (tile rows per group of the tile order; 8 by default, 1 for the rule's plain updates),
 * KILN_WGMMA_CHINT=0|first|last (C's TMA stores with no L2 policy, evict_first or evict_last;
 * unset, the rule's: evict_first where the tiles go row by row), KILN_WGMMA_GRID=1..65536 (persistent
 * blocks, at most one an SM and one a work item; not for cluster or slice-summed launches),
 * KILN_WGMMA_BHINT=0|1 (B's TMA loads with an evict_first L2 policy: off, or on wherever
 * B is not multicast; unset, the rule's: on where at most two tile rows stream 48 MiB or more
 * of B), KILN_WGMMA_STAGES=1..16 (the ring's most stages; 7 by default, fewer where shared memory
 * runs out: deeper rings measured slower, bench/NOTES.md step 29; as many as fit with one
 * consumer on 64-row tiles, step 33; never fewer than two, four with k pairs, which the ring
 * needs), KILN_WGMMA_EARLY_SR=0|1 (stochastic rounding's Philox words of a tile made at its
 * item's start instead of in the epilogue: off, or on wherever the epilogue stages C unsplit
 * on tiles of at most 128 columns, not ping-pong, multicast or k pairs; unset, the rule's: on
 * where every block has one item, bench/NOTES.md steps 42-43), KILN_WGMMA_FAST_DRAM=0|1 (the
 * tile rule's one-row plans for a device whose DRAM peaks at 4 TB/s or more: on, or the H100's;
 * unset: on where the context's peak, st->dram_bps, is KILN_GEMM_FAST_DRAM_BPS or more: the H200,
 * whose kernels for these plans are byte for byte the ones gemm-sweep measured forced there,
 * bench/NOTES.md steps 47-48).
 * A value that is none of these is an error naming the variable. */
/* A count from 1 to most in the environment variable name into *out (unset: unchanged). */
static kiln_status env_count(kiln_ctx *ctx, const char *name, long most, int *out)
{
    const char *e = kiln__env_get(ctx, name);
    if (!e || !e[0]) return KILN_OK;
    char *end = NULL;
    long v = strtol(e, &end, 10);
    if (!end || *end || v < 1 || v > most)
        return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_dot: environment variable %s='%s' is not a number from 1 to %ld",
                          name, e, most);
    *out = (int)v;
    return KILN_OK;
}

static kiln_status read_opts(kiln_ctx *ctx, double dram_bps, kiln_gemm_wgmma_opts *o)
{
    static const char *const stores[] = {"tma", "regs", "tma-deep"}, *const scheds[] = {"coop", "pingpong"},
                             *const widths[] = {"64", "128", "192", "256"}, *const unrolls[] = {"1", "2", "4"},
                             *const counts[] = {"1", "2"}, *const off_on[] = {"0", "1"},
                             *const kpairs[] = {"0", "1", "one"},
                             *const sums[] = {"cluster", "workspace", "slices"},
                             *const hints[] = {"0", "first", "last"};
    memset(o, 0, sizeof *o);
    int i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_STORE", stores, 3, &i));
    o->tma_store = i != 1; /* TMA where C allows it: measured faster or equal on every swept shape */
    o->stage_deep = i == 2;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_SCHED", scheds, 2, &i));
    o->pingpong = i + 1; /* 0 = the rule's, 1 cooperative, 2 ping-pong */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_BN", widths, 4, &i));
    o->bn = i < 0 ? 0 : 64 + 64 * i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_SR_UNROLL", unrolls, 3, &i));
    o->sr_unroll = i < 0 ? 0 : 1 << i;
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_CBUFS", counts, 2, &i));
    o->cbufs = i + 1; /* 0 = the rule's */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_MCAST", off_on, 2, &i));
    o->mcast = i + 1; /* 0 = the rule's, 1 off, 2 on */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_KPAIR", kpairs, 3, &i));
    o->kpair = i + 1; /* 0 = the rule's, 1 off, 2 k pairs, 3 one consumer */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_SPLIT_SUM", sums, 3, &i));
    o->split_sum = i + 1; /* 0 = the rule's, 1 cluster, 2 workspace, 3 slices */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_BHINT", off_on, 2, &i));
    o->bhint = i + 1; /* 0 = the rule's, 1 off, 2 on */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_CHINT", hints, 3, &i));
    o->chint = i + 1; /* 0 = the rule's, 1 none, 2 evict_first, 3 evict_last */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_EARLY_SR", off_on, 2, &i));
    o->early_sr = i + 1; /* 0 = the rule's, 1 off, 2 on where it applies */
    KILN_TRY(kiln__env_choice(ctx, "kiln_dot", "KILN_WGMMA_FAST_DRAM", off_on, 2, &i));
    o->fast_dram = i < 0 ? dram_bps >= KILN_GEMM_FAST_DRAM_BPS : i == 1;
    KILN_TRY(env_count(ctx, "KILN_WGMMA_SPLITS", 64, &o->splits));
    KILN_TRY(env_count(ctx, "KILN_WGMMA_GROUP_M", 1024, &o->group_m));
    KILN_TRY(env_count(ctx, "KILN_WGMMA_GRID", 65536, &o->grid));
    KILN_TRY(env_count(ctx, "KILN_WGMMA_STAGES", 16, &o->stages));
    if (o->kpair >= 2 && o->bn > 128)
        return KILN_ERROR(ctx, KILN_ERR_ARG,
                          "kiln_dot: environment variable KILN_WGMMA_BN=%d with KILN_WGMMA_KPAIR=%s: its 64-row tiles "
                          "take 64 or 128",
                          o->bn, o->kpair == 2 ? "1" : "one");
    return KILN_OK;
}

/* The kernel's argument: three tensor maps (C's only with tma_store), the words (layout in the
 * kernel source), then the edge maps where the plan has them, then the output statistics'
 * words (cfg.stats). */
typedef struct wg_args {
    CUtensorMap ta, tb, tc;
    uint64_t w[KILN_GEMM_WGMMA_WORDS];
    CUtensorMap tae, tbe;
    uint64_t stats;
} wg_args;

/* The grid of a multicast launch: at most as many clusters of two as the device runs at once
 * with this kernel (cuOccupancyMaxActiveClusters, remembered per kernel; a cluster lives in
 * one GPC, so an SM left over in a GPC of odd size takes none), the kernel's persistent loop
 * taking the rest. Without the query: the plan's (SMs / 2 clusters). */
static unsigned mc_grid(kiln_cuda_state *st, CUfunction fn, const kiln_gemm_wgmma_launch *l)
{
    int n = 0, hit = -1;
    for (int i = 0; i < 4 && hit < 0; i++)
        if (st->mc_fn[i] == fn) hit = i;
    if (hit >= 0) {
        n = st->mc_pairs[hit];
    } else if (st->cu.OccupancyMaxActiveClusters) {
        CUlaunchAttribute at;
        memset(&at, 0, sizeof at);
        at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at.value.clusterDim.x = 2;
        at.value.clusterDim.y = 1;
        at.value.clusterDim.z = 1;
        CUlaunchConfig cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.gridDimX = l->grid, cfg.gridDimY = 1, cfg.gridDimZ = 1;
        cfg.blockDimX = l->threads, cfg.blockDimY = 1, cfg.blockDimZ = 1;
        cfg.sharedMemBytes = l->smem;
        cfg.hStream = (CUstream)st->stream;
        cfg.attrs = &at;
        cfg.numAttrs = 1;
        if (st->cu.OccupancyMaxActiveClusters(&n, fn, &cfg) != CUDA_SUCCESS) n = 0;
        memmove(st->mc_fn + 1, st->mc_fn, 3 * sizeof st->mc_fn[0]);
        memmove(st->mc_pairs + 1, st->mc_pairs, 3 * sizeof st->mc_pairs[0]);
        st->mc_fn[0] = fn;
        st->mc_pairs[0] = n;
    }
    return n > 0 && 2u * (unsigned)n < l->grid ? 2u * (unsigned)n : l->grid;
}

kiln_status kiln__cuda_gemm_wgmma(kiln_ctx *ctx, const kiln_gemm_desc *d_in, const kiln_gemm_batches *bt)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    /* the output statistics in the epilogue where their words can be had, else kiln_dot's pass */
    kiln_gemm_desc dl = *d_in;
    const kiln_gemm_desc *d = &dl;
    unsigned long long *stats_words;
    KILN_TRY(kiln__cuda_gemm_stats_words(ctx, &dl, &stats_words));
    if (!stats_words) dl.stats = NULL;
    kiln_gemm_wgmma_opts o;
    KILN_TRY(read_opts(ctx, st->dram_bps, &o));
    o.no_cluster = !st->cu.LaunchKernelEx;
    o.no_coop = !st->cu.LaunchKernelEx || st->gemm_no_coop;
    kiln_gemm_wgmma_launch l;
    kiln__cuda_gemm_wgmma_prepare(d, bt, st->sm_count, ctx->seed, &o, &l);
    const kiln_gemm_wgmma_cfg *c = &l.cfg;
    kiln_block *ws = NULL;
    /* The workspace is stream-ordered: the block goes back to the cache after the launch,
     * and whatever reuses it next runs after this kernel on the same stream. Without
     * counters or workspace (the memory cap, the device full) the GEMM runs unsplit. */
    if (l.ws_bytes &&
        (kiln__cuda_gemm_counters(ctx) != KILN_OK || kiln__mem_try_alloc(ctx, l.ws_bytes, __FILE__, __LINE__, &ws) != KILN_OK)) {
        ws = NULL;
        kiln__cuda_gemm_wgmma_unsplit(&l, st->sm_count, o.grid);
    }
    wg_args args; /* CUtensorMap is 64-byte aligned; the launch copies the whole struct */
    memset(&args, 0, sizeof args);
    memcpy(args.w, l.w, sizeof args.w);
    if (ws) {
        args.w[28] = (uint64_t)(uintptr_t)ws->ptr;
        args.w[29] = (uint64_t)(uintptr_t)st->gemm_counters;
    }
    args.stats = (uint64_t)(uintptr_t)stats_words;
    kiln_status r = encode_map(ctx, &args.ta, d->dtype, &l.map[0], "A");
    if (r == KILN_OK) r = encode_map(ctx, &args.tb, d->dtype, &l.map[1], "B");
    if (r == KILN_OK && c->tma_store) r = encode_map(ctx, &args.tc, d->dtype, &l.map[2], "C");
    if (r == KILN_OK && l.map[3].used) r = encode_map(ctx, &args.tae, d->dtype, &l.map[3], "A");
    if (r == KILN_OK && l.map[4].used) r = encode_map(ctx, &args.tbe, d->dtype, &l.map[4], "B");
    /* a tag ("GKWG") and this kernel's version first, then every field of the configuration:
     * a field left out would let two sources share one key of the fast map */
    _Static_assert(sizeof(kiln_gemm_wgmma_cfg) == 25 * sizeof(int32_t),
                   "a new field of kiln_gemm_wgmma_cfg goes into this signature too");
    const int32_t sig[27] = {0x47574b47,   22,         (int32_t)c->dtype, c->a_kmajor,  c->b_kmajor,  c->bias,
                             c->beta,      c->sr,      c->c_pair,         c->bn,        c->tma_store, c->pingpong,
                             c->sr_unroll, c->cbufs,   c->cluster,        c->slice_sum, c->mcast,     c->kpair,
                             c->alpha1,    c->relu,    c->stages_cap,     c->edge,      c->bhint,     c->chint,
                             c->early_sr,  c->ws_split, c->stats};
    CUfunction fn;
    int refused = 0;
    if (r == KILN_OK) r = kiln__cuda_gemm_kernel(ctx, sig, 27, gen_source, c, "kiln_gemm_wgmma", l.smem, &fn);
    if (r == KILN_OK && c->mcast) l.grid = mc_grid(st, fn, &l);
    if (r == KILN_OK) {
        const kiln_cuda_launch_attrs at = {.cluster = l.cluster, .cooperative = l.cooperative, .early = 1};
        void *params[1] = {&args};
        r = kiln__cuda_gemm_launch(ctx, fn, l.grid, 1, l.threads, l.smem, at, params, NULL, &refused);
    }
    kiln__mem_free(ctx, ws);
    /* the driver would not have every block resident (fewer SMs to be had than it has):
     * slice sums are off for this context, and the GEMM runs again without */
    if (r == KILN_OK && refused) {
        st->gemm_no_coop = 1;
        return kiln__cuda_gemm_wgmma(ctx, d_in, bt);
    }
    if (r == KILN_OK && c->stats) r = kiln__cuda_gemm_stats_finish(ctx, d);
    return r;
}
