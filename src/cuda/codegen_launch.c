/*
 * src/cuda/codegen_launch.c — runs one kernel of a plan on the CUDA backend: the choices a
 * launch makes around the source codegen.c writes, the compiled function from the kernel
 * cache, and the launch on the context's stream.
 *
 * prepare() makes the choices the source depends on (kplan): vector lanes and the row's
 * shift, COLUMN mode's lanes where they pay, the values kept across passes, the ROW tiles'
 * fill, short rows on warp segments, COLUMN mode's deeper workers, the divisions through a
 * row's reciprocal. run_kernel() then sizes the launch on the device (launch_shape: blocks
 * and grid; choose_split: rows split across the grid's y; the row cache in shared memory),
 * finds or compiles the function under its structural signature, fills the argument words
 * and launches. The test hooks (cuda_hooks.h) give the same source, signature and launch
 * choices without a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/codegen.h"

/* ---- driver ------------------------------------------------------------------------------ */

static kiln_status check_plan_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k)
{
    if (k->ndim < 0 || k->ndim > KILN_MAX_DIMS)
        return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': kernel rank %d out of range", k->ndim);
    if (k->ninstr <= 0 || k->out_instr < 0 || k->out_instr >= k->ninstr)
        return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': out_instr %d of %d instructions", k->out_instr,
                          k->ninstr);
    for (int t = 0; t < k->ninputs; t++)
        if (!kiln__cg_storage_type(k->inputs[t].dtype))
            return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'plan': input %d has unsupported dtype %d", t,
                              (int)k->inputs[t].dtype);
    if (!kiln__cg_storage_type(k->out.dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'plan': output has unsupported dtype %d", (int)k->out.dtype);
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (in->op >= KILN_POP_COUNT)
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': instr %d has opcode %d", i, in->op);
        kiln_pop op = (kiln_pop)in->op;
        if (op == KILN_POP_LOAD && (in->a < 0 || in->a >= k->ninputs))
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': LOAD %d of input %d (%d inputs)", i, in->a,
                              k->ninputs);
        if (op == KILN_POP_CONST && (in->a < 0 || in->a >= k->nconsts))
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': CONST %d of const %d", i, in->a);
        if ((op == KILN_POP_RAND || op == KILN_POP_RANDN || op == KILN_POP_BERNOULLI) &&
            (in->a < 0 || in->a >= k->nstreams))
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': generator %d of stream %d", i, in->a);
        if (op == KILN_POP_BERNOULLI && (in->b < 0 || in->b >= k->nconsts))
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': BERNOULLI %d of const %d", i, in->b);
        if (op == KILN_POP_CAST && !kiln__cg_storage_type((kiln_dtype)in->dtype))
            return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'plan': CAST %d to dtype %d", i, in->dtype);
        if (kiln__pop_is_reduction(op) && (k->reduce_mask == 0 || in->pass >= k->npasses))
            return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': reduction %d of pass %d (%d passes, mask %u)",
                              i, in->pass, k->npasses, k->reduce_mask);
    }
    return KILN_OK;
}

static unsigned pow2ceil(int64_t x)
{
    unsigned p = 1;
    while ((int64_t)p < x && p < (1u << 30)) p <<= 1;
    return p;
}


static void kplan_free(kplan *kp)
{
    kiln__cg_layout_free(&kp->l);
    kiln__cg_analysis_free(&kp->an);
}


/* Lanes per point: 16-byte accesses along the last (contiguous) axis when every tensor
 * that moves along it does so with stride 1, sizes and pointers allow it. 1 otherwise.
 * Element-wise and ROW mode: the lanes are neighbouring points (of one row). COLUMN mode
 * (the last axis kept): the lanes are neighbouring rows, each with its own reductions, and
 * the output moves along that axis too. */
static int vec_lanes(const kiln_plan_kernel *k, const kplan *kp)
{
    const layout *l = &kp->l;
    int ni = k->ninputs;
    int a = l->nd - 1;
    /* a reduction's row output is written one value at a time: in ROW mode it does not move
     * along the axis, in COLUMN mode it must with stride 1 (one value a lane) */
    int row_out = !kp->elementwise && k->out.is_row;
    size_t maxes = 0;
    int any = 0;
    for (int t = 0; t <= ni; t++) {
        if (t == ni && row_out) {
            if (kp->colmode && l->st[t][a] != 1) return 1;
            continue;
        }
        int64_t s = l->st[t][a];
        if (s != 0 && s != 1) return 1;
        if (t == ni && s != 1) return 1;
        if (s == 1) {
            size_t es = kiln_dtype_size(t < ni ? k->inputs[t].dtype : k->out.dtype);
            if (es > maxes) maxes = es;
            any = 1;
        }
    }
    if (!any) return 1;
    int vec = (int)(16 / maxes);
    if (vec > 8) vec = 8;
    /* where 16 bytes do not divide the axis (rows of 100 f16) or the alignment, element-wise and
     * ROW-mode kernels take 8- or 4-byte vectors; COLUMN mode's lanes (its rules measured at 16
     * bytes) take 16 or none */
    for (; vec >= 2; vec = kp->colmode ? 1 : vec / 2) {
        int ok = l->size[a] % vec == 0;
        for (int t = 0; t <= ni && ok; t++) {
            if (t == ni && row_out) continue;
            if (l->st[t][a] != 1) continue;
            size_t es = kiln_dtype_size(t < ni ? k->inputs[t].dtype : k->out.dtype);
            const char *base = t < ni ? k->inputs[t].base : k->out.base;
            if (!kiln__cuda_aligned(base, es * (size_t)vec)) ok = 0;
            for (int b = 0; b < a && ok; b++)
                if (l->st[t][b] % vec) ok = 0;
        }
        if (ok) return vec;
    }
    return 1;
}

/* The lanes of kernel k, 1 where not vectorised (COLUMN mode: not with KILN_REDUCE_COLVEC=0;
 * with =force kp->lanes_forced, so that prepare takes them without asking lanes_pay). */
static kiln_status choose_vec(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp, int *vec_out)
{
    const layout *l = &kp->l;
    *vec_out = 1;
    if (l->nd == 0) return KILN_OK;
    int a = l->nd - 1;
    if (kp->colmode) {
        static const char *const ways[] = {"0", "1", "force"};
        int env;
        KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_COLVEC", ways, 3, &env));
        if (env == 0) return KILN_OK;
        kp->lanes_forced = env == 2;
    } else if (!kp->elementwise && !l->red[a]) {
        return KILN_OK;
    }
    *vec_out = vec_lanes(k, kp);
    return KILN_OK;
}

/* ROW mode's rows whose length or start leaves them off the vectors' alignment (a language
 * model's 50257 logits a row: vec_lanes finds 1 lane, 2-byte loads). Where every tensor that
 * moves along the row starts each row the same number of points into its VEC-wide vectors
 * (bases and outer strides congruent mod VEC, VEC from the widest), and the row is the one
 * reduced axis, each row is walked in aligned VEC-wide vectors from the one holding its first
 * point: sh points of that vector (the row's address / es mod VEC, computed in the kernel) lie
 * before the row, and the vectors the row fills only partly, its first and last, are read and
 * written point by point, never outside the row. Sets kp->shift to the tensor whose address
 * gives sh and *vec to the full lanes; leaves both where the rule does not take it.
 * KILN_REDUCE_SHIFT=0: never; 1: wherever the layout allows; unset: where vec_lanes found
 * vectors of 4 bytes or less. */
static kiln_status row_shift(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp, int *vec)
{
    const layout *l = &kp->l;
    const int ni = k->ninputs, a = l->nd - 1;
    kp->shift = -1;
    if (kp->elementwise || kp->colmode || l->nd < 1 || !l->red[a]) return KILN_OK;
    for (int b = 0; b < a; b++)
        if (l->red[b]) return KILN_OK; /* a row of several runs */
    static const char *const ways[] = {"0", "1"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_SHIFT", ways, 2, &env));
    if (env == 0) return KILN_OK;
    int ref = -1;
    size_t maxes = 0;
    for (int t = 0; t <= ni; t++) {
        if (t == ni && k->out.is_row) continue; /* one value a row: not along it */
        int64_t st = l->st[t][a];
        if (st == 0) continue;
        if (st != 1) return KILN_OK;
        size_t e = kiln_dtype_size(t < ni ? k->inputs[t].dtype : k->out.dtype);
        if (ref < 0) ref = t;
        if (e > maxes) maxes = e;
    }
    if (ref < 0) return KILN_OK;
    int full = (int)(16 / maxes);
    if (full > 8) full = 8;
    if (full <= *vec || l->L < 2 * full) return KILN_OK;
    if (env < 0 && (size_t)*vec * maxes > 4) return KILN_OK;
    /* each tensor's row starts the same number of points into its own VEC-wide vectors */
    uintptr_t rsh = 0;
    for (int t = 0; t <= ni; t++) {
        if ((t == ni && k->out.is_row) || l->st[t][a] == 0) continue;
        const char *base = t < ni ? k->inputs[t].base : k->out.base;
        size_t es = kiln_dtype_size(t < ni ? k->inputs[t].dtype : k->out.dtype);
        if ((uintptr_t)base % es) return KILN_OK;
        if (t == ref) rsh = ((uintptr_t)base / es) % (uintptr_t)full;
        if (((uintptr_t)base / es) % (uintptr_t)full != rsh) return KILN_OK;
        for (int b = 0; b < a; b++)
            if (((l->st[t][b] - l->st[ref][b]) % full) != 0) return KILN_OK;
    }
    kp->shift = ref;
    *vec = full;
    return KILN_OK;
}

/* The vectors a ROW-mode row takes: L / vec, or with the row shift the most any row's start
 * can make (its first and last vectors partly outside it). */
static int64_t row_vectors(const kplan *kp)
{
    const int64_t L = kp->l.L, v = kp->vec;
    return kp->shift >= 0 ? (L + 2 * v - 2) / v : L / v;
}

/* The size in bytes of k's widest input dtype (0 without inputs). */
static size_t widest_input(const kiln_plan_kernel *k)
{
    size_t widest = 0;
    for (int t = 0; t < k->ninputs; t++)
        if (kiln_dtype_size(k->inputs[t].dtype) > widest) widest = kiln_dtype_size(k->inputs[t].dtype);
    return widest;
}

/* The points a worker and shared bytes of kernel k at `vec` lanes. */
static void set_lanes(const kiln_plan_kernel *k, kplan *kp, int vec)
{
    kp->vec = vec;
    kp->kmax = kp->elementwise ? 1 : kiln__cg_kmax_for(&kp->an, vec);
    /* COLUMN mode's lanes are rows, not points: a worker's kmax loads of 16 bytes hold the
     * bytes of scalar COLUMN mode's (8 points a worker where values stay cached for a later
     * pass), twice those in one pass with nothing cached */
    if (kp->colmode && vec > 1) {
        int kv = (kp->an.ncached == 0 && k->npasses == 1 ? 32 : 8) / vec;
        kp->kmax = kv < 1 ? 1 : kv > 8 ? 8 : kv;
    }
    /* COLUMN mode takes 16 points a worker only in one pass to one value a column, from
     * inputs of 2 bytes or less in f32 arithmetic (f16 column sums 2-7 % faster than at 8,
     * bench/NOTES.md step 54; f32 was level). Where the values stay cached for a later pass
     * 16 spill (batch norm: 192 bytes in f16, 392 in f64). */
    size_t widest = widest_input(k);
    if (kp->colmode && kp->kmax > 8 && (k->compute_f64 || widest > 2 || k->npasses > 1 || !k->out.is_row))
        kp->kmax = 8;
    /* a value and an index; with lanes all VEC values at once (kiln_col_red_lanes) where that
     * stays within 32 bytes a thread (32 KB a block), else lane by lane */
    int lane_bytes = vec * (k->compute_f64 ? 8 : 4);
    kp->red_lanes = kp->colmode && vec > 1 && lane_bytes <= 32;
    kp->smem_thread = kp->red_lanes && lane_bytes > 16 ? lane_bytes : 16;
    /* a variance's partial is three values (m2, mean, count): 24 bytes a thread in f64; with
     * lanes the count and var_fold_lanes' lanes' two values */
    if (kiln__cg_has_var(k)) {
        int var_bytes = 24;
        if (kp->colmode && vec > 1) var_bytes = 8 + 2 * kiln__cg_var_fold_lanes(k, vec) * (k->compute_f64 ? 8 : 4);
        if (kp->smem_thread < var_bytes) kp->smem_thread = var_bytes;
    }
}

static void launch_shape(const kiln_cuda_state *st, const kplan *kp, int64_t R, int64_t L, int narrow,
                         unsigned *gx, unsigned *bx, unsigned *by, unsigned *smem);
static kiln_status split_slices(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, const kplan *kp,
                                unsigned gx, int64_t workers, int64_t tiles, int occ, int *G);

/* Whether COLUMN mode's lanes pay on the device: a thread owning VEC columns leaves VEC times
 * fewer threads, so unsplit they pay only where the narrowest blocks still give one an SM
 * (H100: 0.55-0.86x of no lanes at 512-8192 x 1024 f16 otherwise, bench/NOTES.md step 55).
 * Sets kp->unsplit where the unsplit blocks fill the device and walk their rows in under 4
 * tiles: a split's barriers would cost more (batch norm 256 x 8192 f16: 0.54x split). */
static int lanes_pay(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, kplan *kp)
{
    int64_t R = kp->l.R / kp->vec, L = kp->l.L;
    /* Few lane columns leave one or two blocks along x and the work to the split's slices: f16
     * batch norm over 4096 x 64 (8 lane columns) ran at 0.70x of no lanes. One pass with
     * nothing cached (a column sum) gains only from 256 lane columns up: at 32-128 it ran
     * 0.86-1.04x (100000 x 256 f32 0.86x, f16 0.94x; x 1024 f16 0.97-1.04x; H100, NOTES step 55),
     * where a cached batch norm over 100000 x 256 f16 (32 lane columns) gained 1.91x.
     * A one-pass variance to one value a column is not such a pass: without lanes Welford's
     * update divides by the count at every point, with lanes once for all of a worker's lanes.
     * H100 var(A,0) (bench/NOTES.md step 76), lanes against none: 16-bit inputs 1.76-1.93x at
     * 4-128 lane columns (1600000 x 32 to 200000 x 512); f32 1.09-1.21x at 8-16, 1.00x at 32,
     * 0.97x at 64, 1.03x at 128, so f32 keeps the sums' rule from 32 up. */
    const int one_pass = k->npasses == 1 && kp->an.ncached == 0;
    const int var_lanes = one_pass && kiln__cg_has_var(k) && (widest_input(k) <= 2 || R < 32);
    if (!var_lanes && (R < 32 || (one_pass && R < 256))) return 0;
    unsigned gx, bx, by, smem, gxn, bxn, byn;
    launch_shape(st, kp, R, L, 0, &gx, &bx, &by, &smem);
    launch_shape(st, kp, R, L, 1, &gxn, &bxn, &byn, &smem);
    int64_t tiles = (L + (int64_t)by * kp->kmax - 1) / ((int64_t)by * kp->kmax);
    int64_t tiles_n = (L + (int64_t)byn * kp->kmax - 1) / ((int64_t)byn * kp->kmax);
    int G = 1;
    if (split_slices(ctx, st, k, kp, gx, by, tiles, 1, &G) != KILN_OK) G = 1; /* run_kernel reports it */
    kp->unsplit = gxn >= (unsigned)st->sm_count && tiles_n < 4;
    /* from 256 lane columns a variance's lanes pay even where its blocks do not fill the device:
     * one pass over f16 4096 x 4096 (512 lane columns) ran 2.48x faster with them, over 4096 x 512
     * (64) 0.73x (step 76) */
    return (var_lanes && R >= 256) || (G > 1 && !kp->unsplit) || gxn >= (unsigned)st->sm_count;
}

/* ROW mode's worker over inputs narrower than 4 bytes in f32 arithmetic (f16, bf16, i8, u8):
 * kmax_for counts values, 16 a worker, so a worker caches 32 bytes of an f16 row where it
 * caches 64 of an f32 one, and a row takes twice the workers, in the same registers (a
 * vector is 16 raw bytes either way). On the H100 f16 var(A,1) at 8192 x 8192 reached 0.71
 * of copy bandwidth where f32 reached 0.87 (NOTES step 57). KILN_REDUCE_ROWFILL=1 gives the
 * narrow worker f32's bytes (kmax times 4 / the widest input's size, at most 8 vectors): half
 * the workers a row, twice the bytes each in flight, half the block-wide folds. Unset: where
 * the output is one value a row, or where values are kept (keep_values) over unshifted rows
 * that need more than a warp and, doubled, at most 256 workers or one tile where undoubled
 * they would split; 0 never; 1 everywhere. */
static kiln_status row_fill(kiln_ctx *ctx, const kiln_plan_kernel *k, const kiln_cuda_state *st, kplan *kp)
{
    if (kp->elementwise || kp->colmode || kp->vec < 2 || k->compute_f64) return KILN_OK;
    static const char *const ways[] = {"0", "1"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_ROWFILL", ways, 2, &env));
    /* unset: where the kernel writes one value a row (a reduction that is not broadcast back:
     * H100 f16 var(A,1) 1.03-1.26x, sums level); a row written back whole (batch norm along
     * rows) ran 0.82-0.87x with it (NOTES step 58) */
    /* and where the kernel keeps computed values for a later phase and its row needs more than a
     * warp: softmax along rows then computes exp once a point and walks 1024-wide f16 rows on one
     * warp (bench/NOTES.md step 63); not on shifted rows, whose lane masks and partial vectors
     * made the doubled walk spill (f16 softmax 88 bytes, bf16 216, at 64 registers): H100
     * softmax undoubled 1.04-1.24x faster in f16 and 1.04-1.40x in bf16 on 4096 x 10001, 16001
     * and 4001 (f16 0.975x there), 8192 x 8193, split rows of 50257 and 128257 (step 73); and
     * only where the doubled walk needs at most 256 workers (blocks of 256 threads or fewer,
     * rows up to 8192 16-bit values): H100 unshifted softmax, doubled against undoubled, 1.18-1.34x
     * at 6000-8192 wide, 0.95x (f16) and 1.03x (bf16) at 4000, 0.81-0.86x at 10000-16384, where
     * the doubled blocks are 512 threads (step 73); or where the rows are few enough to split
     * (a block a row, at most half an SM a row) and the doubled walk fits one 1024-thread tile
     * where the undoubled one needs two or more: doubled, the row stays on one block and skips
     * the split's grid barriers, and then takes the row cache, which undoes the doubled walk
     * (cached_kmax). H200 softmax 8 x 32000 and 16 x 20000, f16 and bf16: split undoubled
     * 14.1-15.3 us, unsplit and cached with the walk doubled (ROWFILL=1) 9.1-13.1 us; the
     * undone walk's time there is not measured yet. 2 x 65536 splits either way and ran
     * 1.2-1.3x faster undoubled, in twice the slices (step 74) */
    size_t widest = widest_input(k);
    if (widest == 0 || widest >= 4) return KILN_OK;
    int km = kp->kmax * (int)(4 / widest);
    if (km > 8) km = 8;
    int64_t Lv = row_vectors(kp), need = (Lv + kp->kmax - 1) / kp->kmax, need_filled = (Lv + km - 1) / km;
    int unsplits = st && kp->l.R * 2 <= st->sm_count && need > 1024 && need_filled <= 1024;
    int keeps = kp->an.nkept > 0 && need > 32 && kp->shift < 0 && (need_filled <= 256 || unsplits);
    if (env == 0 || (env < 0 && !k->out.is_row && !keeps)) return KILN_OK;
    if (env < 0 && !k->out.is_row) kp->kmax_unfilled = kp->kmax; /* for the kept values alone */
    kp->kmax = km;
    return KILN_OK;
}

/* Whether the values keep_values keeps, kmax vectors of VEC a kept instruction, stay within 128
 * bytes of registers a thread (keep_cap's bound, which shift_fit keeps to). */
static int kept_fit(const kiln_plan_kernel *k, const kplan *kp, int kmax)
{
    return (int64_t)kp->an.nkept * kmax * kp->vec * (k->compute_f64 ? 8 : 4) <= 128;
}

/* The row shift's extra vector can push a row just past a power of two of workers (8191 f32
 * values: 2049 vectors, 513 workers of 4, a 1024-thread block half idle; 0.64x of the 512
 * unshifted threads, H100, bench/NOTES.md step 66): there a worker takes one more vector, where
 * that keeps the kept values within keep_cap's bound. */
static void shift_fit(const kiln_plan_kernel *k, kplan *kp)
{
    if (kp->shift < 0) return;
    int64_t Lv = row_vectors(kp), need = (Lv + kp->kmax - 1) / kp->kmax;
    if (need <= 32 || need > 1024) return;
    int64_t half = (int64_t)pow2ceil(need) / 2;
    if ((Lv + half - 1) / half != kp->kmax + 1) return;
    if (!kept_fit(k, kp, kp->kmax + 1)) return;
    kp->kmax++;
}

/* ROW mode's short rows: a row that needs 32 workers or fewer (ceil(L / kmax) in the kernel's
 * units) takes W lanes of a warp, W that count rounded up to a power of two: blocks of
 * W x (256 / W) threads, 32 / W rows a warp, reduced by segment butterflies (kiln_seg_*: no
 * shared memory, no barrier), never split. A row of one warp (W = 32) so gets its max and min
 * from lane 0, one bit pattern where lanes met +0 and -0 in another order. With a warp a row, a row of 32 f16 values (4
 * vectors) kept 4 of 32 lanes busy: softmax over 1048576 x 32 f16 ran at 0.09 of copy
 * bandwidth on the H100 (bench/NOTES.md step 61). KILN_REDUCE_SEG=0 keeps a warp a row (for
 * measuring); 1 and unset take the segments. */
static kiln_status row_segments(kiln_ctx *ctx, kplan *kp)
{
    kp->seg = 0;
    if (kp->elementwise || kp->colmode) return KILN_OK;
    static const char *const ways[] = {"0", "1"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_SEG", ways, 2, &env));
    if (env == 0) return KILN_OK;
    int64_t need = (row_vectors(kp) + kp->kmax - 1) / kp->kmax;
    if (need <= 32) kp->seg = (int)pow2ceil(need);
    return KILN_OK;
}

/* COLUMN mode's narrowed unsplit blocks take fewer workers a column, so that each walks up to
 * col_rows rows (COL_DEPTH unless KILN_REDUCE_COLROWS says) before the block's fold, while the grid
 * keeps more than COL_DEPTH_THREADS threads an SM (launch_shape). Short wide columns had one to
 * four rows a worker, a fold of up to 8 levels and two waves of 1024-thread blocks: on the H100 f16
 * 1024 x 16384 column sums ran 1.6x and its one-pass variance 2.6x faster with deeper workers
 * (bench/NOTES.md step 77). Kernels that read their inputs once (one pass, the reductions written
 * out) always take them. Kernels that walk the data again (two-pass variances, batch norm) take
 * them only where the bytes their inputs hold (walked_bytes) fit in COL_REWALK_L2 of the L2: a
 * deeper worker walks more rows than it keeps in registers, so its second walk reads them again,
 * from the L2 where they fit. On the H100 (50 MiB) f32 batch norm and two-pass variances gained
 * 1.07-1.89x in 27 of 28 cases over 14 shapes of 8-44 MB (0.98x the other) and lost up to 22 % over
 * 8 shapes of 50-67 MB; 16-bit ones gained 1.17-1.63x at the four shapes of 8-34 MB where they move
 * (step 79). KILN_REDUCE_COLDEPTH=0 never, =all every COLUMN kernel at any size, with the lanes and
 * split choices as without (both for measuring); 1 and unset: the rule. KILN_REDUCE_COLROWS=16, 32
 * or 64 sets the rows a worker may walk (for measuring: step 77 saw f16 2048 x 16384 one-pass
 * variances 1.60x at 32 against 1.36x at 16, and vec-1 f16 column sums gain at 32-64). */
enum { COL_DEPTH = 16, COL_DEPTH_THREADS = 512 };
#define COL_REWALK_L2 0.875

/* The bytes k's inputs hold over its domain: each input's dtype size times the extents of the axes
 * it moves along (a broadcast axis, stride 0, adds nothing: batch norm's scale and shift are a row). */
static double walked_bytes(const kiln_plan_kernel *k)
{
    double total = 0;
    for (int t = 0; t < k->ninputs; t++) {
        double bytes = (double)kiln_dtype_size(k->inputs[t].dtype);
        for (int a = 0; a < k->ndim; a++)
            if (k->inputs[t].strides[a] != 0) bytes *= (double)k->shape[a];
        total += bytes;
    }
    return total;
}

/* st: the device (NULL for the hooks' source, which no launch shape reads: no deeper workers) */
static kiln_status col_depth(kiln_ctx *ctx, const kiln_plan_kernel *k, const kiln_cuda_state *st, kplan *kp)
{
    kp->col_deep = 0;
    kp->col_rows = COL_DEPTH;
    if (!kp->colmode || !st) return KILN_OK;
    static const char *const ways[] = {"0", "1", "all"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_COLDEPTH", ways, 3, &env));
    const int one_walk = k->npasses == 1 && k->out.is_row;
    kp->col_deep = env == 2 || (env != 0 && (one_walk || walked_bytes(k) <= COL_REWALK_L2 * st->l2_bytes));
    static const char *const rows[] = {"16", "32", "64"};
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_COLROWS", rows, 3, &env));
    kp->col_rows = env < 0 ? COL_DEPTH : 16 << env;
    return KILN_OK;
}

/* The output's divisions by a row value of a value an earlier pass computed (softmax's
 * exp(x - max) / sum), kept or computed again: as a multiply by the row value's correctly
 * rounded reciprocal and one Markstein correction (kiln_div_row in source.c: three instructions
 * a point in place of div.rn's reciprocal, refinement, range check and correction), the same
 * bits as a / b. The first pass that computes the dividend (an.chk) checks each point against
 * the correction's ranges (kiln_div_in, flag okn<a>); the output's walk divides through the
 * reciprocal where all the thread's points were in range and the divisor's reciprocal exists
 * (ry<b> != 0), else at every point as before (bench/NOTES.md steps 64, 71). Decided after
 * keep_cap; unset, kept where it costs no occupancy (choose_division) and not on a row cached
 * whole and unshifted (cached_division). KILN_REDUCE_DIV=0 divides at every point, =1 always
 * takes the reciprocal (both for measuring). */
static kiln_status row_divisions(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp)
{
    analysis *an = &kp->an;
    kp->rdiv = 0;
    for (int i = 0; i < k->ninstr; i++) an->chk[i] = -1;
    if (kp->elementwise || kp->colmode || k->compute_f64 || k->npasses < 1 || k->out.is_row) return KILN_OK;
    static const char *const ways[] = {"0", "1"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_DIV", ways, 2, &env));
    if (env == 0) return KILN_OK;
    /* the first reduction pass that computes each instruction (a kept value: the pass that keeps it) */
    int ndiv = 0;
    for (int ph = 0; ph < k->npasses; ph++) {
        kiln__cg_mark_phase(k, an, ph, an->need);
        for (int i = 0; i < k->ninstr; i++)
            if (an->need[i] == 1 && an->chk[i] < 0) an->chk[i] = ph;
    }
    /* of them, the computed dividends of the output's divisions by a row value */
    memset(an->need, 0, (size_t)k->ninstr);
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (in->op == KILN_POP_DIV && in->space == KILN_SPACE_FULL && k->instr[in->b].space == KILN_SPACE_ROW &&
            k->instr[in->a].op != KILN_POP_LOAD && an->chk[in->a] >= 0)
            an->need[in->a] = 1;
    }
    for (int i = 0; i < k->ninstr; i++) {
        if (!an->need[i]) an->chk[i] = -1;
        ndiv += an->chk[i] >= 0;
    }
    if (ndiv) kp->rdiv = env == 1 ? 1 : 2;
    return KILN_OK;
}

/* ROW mode's computed values kept for a later phase. A value a pass computes and a later
 * phase uses again (softmax's exp(x - max(x)): the sum's pass, then the output) was computed
 * again there, from the kept loads; where recomputing it costs a library function, a division
 * or a generator (op_cost), the first phase keeps it in registers (kv<i>[kmax][VEC]) and later
 * phases take it, where the row fits one tile. softmax(A,1) f16 on the H100 issued 2x batch
 * norm's instructions, its issue slots 85 % busy, DRAM 45 % (bench/NOTES.md step 63). Decided
 * here from the structure alone; keep_cap bounds the registers once kmax is final.
 * KILN_REDUCE_KEEP=0 keeps none, =force past keep_cap's bound (both for measuring). */
static kiln_status keep_values(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp)
{
    analysis *an = &kp->an;
    const int n = k->ninstr;
    an->nkept = 0;
    for (int i = 0; i < n; i++) an->keep[i] = -1;
    kp->keep = 0;
    if (kp->elementwise || kp->colmode || k->npasses < 1 || n < 1) return KILN_OK;
    const size_t nb = (size_t)n;
    static const char *const ways[] = {"0", "1", "force"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_KEEP", ways, 3, &env));
    if (env == 0) return KILN_OK;
    /* heavy[i]: recomputing i's FULL subgraph runs an op of cost 8 (operands precede users) */
    char heavy_in[ANALYSIS_N + 1], *heavy = n <= ANALYSIS_N ? heavy_in : malloc(nb);
    int comp_in[ANALYSIS_N + 1], *comp = n <= ANALYSIS_N ? comp_in : malloc(nb * sizeof *comp);
    if (!heavy || !comp) {
        if (heavy != heavy_in) free(heavy);
        if (comp != comp_in) free(comp);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for kernel analysis");
    }
    for (int i = 0; i < n; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        heavy[i] = 0;
        comp[i] = -1;
        if (in->space != KILN_SPACE_FULL || in->op == KILN_POP_LOAD) continue;
        heavy[i] = kiln__cg_op_cost((kiln_pop)in->op) >= 8;
        for (int j = 0; j < kiln__cg_instr_nargs(in); j++) heavy[i] |= heavy[kiln__cg_arg_of(in, j)];
    }
    /* phase by phase: what it computes (need 1) and what it takes from an earlier phase */
    char *need = an->need;
    for (int ph = 0; ph <= k->npasses; ph++) {
        if (ph == k->npasses && k->out.is_row) break;
        for (int i = 0; i < n; i++) /* a heavy value an earlier phase computed: kept there */
            if (heavy[i] && comp[i] >= 0 && comp[i] < ph && an->keep[i] < 0) an->keep[i] = comp[i];
        kiln__cg_mark_phase(k, an, ph, need);
        for (int i = 0; i < n; i++)
            if (need[i] == 1 && comp[i] < 0) comp[i] = ph;
    }
    /* a candidate no later phase reaches (marked 2) is not kept (taken[] in heavy's storage) */
    char *taken = heavy;
    memset(taken, 0, nb);
    for (int ph = 1; ph <= k->npasses; ph++) {
        if (ph == k->npasses && k->out.is_row) break;
        kiln__cg_mark_phase(k, an, ph, need);
        for (int i = 0; i < n; i++) taken[i] |= need[i] == 2;
    }
    for (int i = 0; i < n; i++) {
        if (!taken[i]) an->keep[i] = -1;
        an->nkept += an->keep[i] >= 0;
    }
    if (heavy != heavy_in) free(heavy);
    if (comp != comp_in) free(comp);
    kp->keep = env == 2 ? 2 : 1;
    return KILN_OK;
}

/* Nothing kept (the output computes its values again; its divisions through the reciprocal
 * stay, their checks made where the dividend is first computed: row_divisions). */
static void keep_none(const kiln_plan_kernel *k, kplan *kp)
{
    for (int i = 0; i < k->ninstr; i++) kp->an.keep[i] = -1;
    kp->an.nkept = 0;
}

/* The registers kept values take, kmax x VEC a kept instruction, once kmax is final: at most
 * 128 bytes a thread, else none (KILN_REDUCE_KEEP=force: any number, for measuring). */
static void keep_cap(const kiln_plan_kernel *k, kplan *kp)
{
    if (kp->keep == 2 || kept_fit(k, kp, kp->kmax)) return;
    keep_none(k, kp);
}

/* The bytes ROW mode's row cache takes for rows of Lc vectors: a 16-byte aligned region of Lc
 * vectors (or points) for each load that several phases use (an.multi). */
static int64_t row_cache_bytes(const kiln_plan_kernel *k, const kplan *kp, int64_t Lc)
{
    int64_t bytes = 0;
    for (int i = 0; i < k->ninstr; i++)
        if (kp->an.multi[i]) bytes += (Lc * kiln__cg_row_cache_load_bytes(k, &kp->l, kp->vec, i) + 15) & ~(int64_t)15;
    return bytes;
}

/* A partial row cache's length: the vectors of each cached load that `room` bytes hold, less
 * a region's alignment each (the kernel finds the same from its dynamic shared memory). */
static int64_t row_cache_fits(const kiln_plan_kernel *k, const kplan *kp, int64_t room)
{
    int64_t nload = 0, vector_bytes = 0;
    for (int i = 0; i < k->ninstr; i++)
        if (kp->an.multi[i]) {
            nload++;
            vector_bytes += kiln__cg_row_cache_load_bytes(k, &kp->l, kp->vec, i);
        }
    room -= 16 * nload;
    return room > 0 && vector_bytes > 0 ? room / vector_bytes : 0;
}

/* The rule's division (kp->rdiv 2) on a row cached whole and unshifted: at every point. There
 * the output's reciprocal costs more than it saves (H100, f16 softmax 4096 x 32000 0.246 ->
 * 0.262 ms, 4096 x 24576 0.96x; shifted and partly cached rows 1.02-1.14x faster): the dividend's
 * range check (kiln_div_in: three FSETP a point and their PLOP3) lands in the sum's pass, which
 * on such a row has no lane code beside it (its SASS +33 %, against +1 % on a shifted row, whose
 * lane branches become predicates), and the kernel issues less often (ncu: 0.83 -> 0.75 a cycle,
 * 7 % fewer instructions; bench/NOTES.md step 71). */
static void cached_division(kplan *kp)
{
    if (kp->smem_row == 1 && kp->shift < 0 && kp->rdiv == 2) kp->rdiv = 0;
}

/* The vectors a worker of a cached kernel walks: row_fill's doubling for kept values undone (a
 * cached kernel keeps none, and the doubled walk spilled at the rule's 40 registers; bench/NOTES.md
 * step 70). */
static int cached_kmax(const kplan *kp)
{
    return kp->kmax_unfilled > 0 ? kp->kmax_unfilled : kp->kmax;
}

/* The block rule of row_cache (below); a hook for tests (cuda_hooks.h). */
int kiln__cuda_row_cache_block(int rule, int64_t need, int64_t cache, int smem_thread, int smem_optin, int smem_sm,
                               int *t_out, int *b_out)
{
    *t_out = *b_out = 0;
    if (need <= 512) return 0; /* a block of 512 threads or fewer: not one an SM */
    int64_t best_threads = need > 1024 ? 0 : 1024; /* fits the registers: beat their one block */
    for (int t = 1024; t >= (rule ? 256 : 1024); t /= 2) {
        if (t == 1024 && need <= 1024) continue; /* the register plan's own block */
        const int64_t bytes = cache + (int64_t)(t >> 5) * smem_thread; /* a slot a warp */
        if (bytes > smem_optin) continue;
        int64_t b = smem_sm / (bytes + 1024);
        if (b > 2048 / t) b = 2048 / t;
        if (b > 65536 / (t * 40)) b = 65536 / (t * 40);
        if (b < 1 || b * t < best_threads || (b * t == best_threads && *t_out == 0 && need <= 1024)) continue;
        *t_out = t;
        *b_out = (int)b;
        best_threads = b * t;
    }
    return *t_out != 0;
}

/* ROW mode's row cache, decided at launch for an unsplit kernel whose rows need more than 512
 * workers (a block of 1024 threads, one an SM at up to 64 registers): the loads that several
 * phases use are stored in shared memory by their first phase and read from there by the later
 * ones (each thread reads back only the vectors it stored: no barrier), in place of walking the
 * row again from L2 or holding it in registers.
 * Unset (or KILN_REDUCE_SMEM=1), the rule: T threads (1024, 512 or 256), B an SM
 * (__launch_bounds__(T, B)), the T whose B blocks hold the most threads an SM, with B bounded by
 * the shared memory (the cache, the block reductions' slot a warp and the 1 KB the driver keeps a
 * block), 2048 threads and 40 registers a thread; on a tie the smaller T (more rows at once, their
 * phases overlapping); rows that fit a tile of 1024 threads (their values in registers) take the
 * cache only where it holds more threads an SM than that one block (H100, against no cache: f16
 * softmax 2048 x 50257 0.393 -> 0.272 ms on 512 x 2, 4096 x 32000 0.390 -> 0.296; bench/NOTES.md
 * step 68; 0.246 with row_fill's doubled walk undone, step 70). A row the opted-in shared memory
 * cannot hold caches its first part (smem_row 2: the kernel finds how much from its dynamic
 * shared memory) on 1024 threads, one block an SM, all of it (H100, against no cache: f16
 * softmax 1024 x 128257 0.470 -> 0.411 ms, batch norm f16 512 x 200003 1.27x, 128 x 1000003
 * with 6 % cached 1.02-1.04x; 512 x 2, 1024 x 2 or 512 x 3 were never faster; step 69).
 * KILN_REDUCE_SMEM=tile, the first form: rows longer than the 1024-thread block's tile, on that
 * block, whole (f16 2048 x 50257 0.364 ms). KILN_REDUCE_SMEM=0 never. Sets the block (*bx, *smem)
 * where taken. */
static kiln_status row_cache(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, kplan *kp, int64_t L,
                             unsigned *bx, unsigned by, unsigned *smem)
{
    kp->smem_row = 0;
    if (kp->elementwise || kp->colmode || kp->seg || kp->split || kp->an.ncached == 0 || by != 1 || *bx != 1024 ||
        !st || st->smem_optin <= 0 || st->smem_sm <= 0 || !st->cu.FuncSetAttribute)
        return KILN_OK;
    static const char *const ways[] = {"0", "1", "tile"};
    int env;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_SMEM", ways, 3, &env));
    if (env == 0) return KILN_OK;
    const int kmax_was = kp->kmax;
    if (env != 2) kp->kmax = cached_kmax(kp);
    const int64_t need = (L + kp->kmax - 1) / kp->kmax, cache = row_cache_bytes(k, kp, row_vectors(kp));
    int best_t, best_b;
    if (!kiln__cuda_row_cache_block(env != 2, need, cache, kp->smem_thread, st->smem_optin, st->smem_sm,
                                    &best_t, &best_b)) {
        /* the rule, a row too long for the cache: its first part (above) */
        if (env == 2 || need <= 1024 || row_cache_fits(k, kp, st->smem_optin - 32 * (int64_t)kp->smem_thread) < 1) {
            kp->kmax = kmax_was;
            return KILN_OK;
        }
        kp->smem_row = 2;
        kp->row_tmax = 1024;
        kp->row_minb = 1;
        keep_none(k, kp);
        *smem = (unsigned)st->smem_optin;
        return KILN_OK;
    }
    kp->smem_row = 1;
    kp->row_tmax = best_t;
    kp->row_minb = best_b;
    keep_none(k, kp); /* a cached kernel keeps no values in registers (rows that fit a tile too) */
    cached_division(kp);
    *bx = (unsigned)best_t;
    *smem = (unsigned)(cache + (int64_t)(best_t >> 5) * kp->smem_thread);
    return KILN_OK;
}

/* Layout, analysis and launch choices of kernel k. st: the device, whose size decides
 * whether COLUMN mode takes lanes (NULL: it takes them wherever the layout allows). */
static kiln_status prepare(kiln_ctx *ctx, const kiln_plan_kernel *k, const kiln_cuda_state *st, kplan *kp)
{
    memset(kp, 0, sizeof *kp);
    kp->row_tmax = 1024; /* the block's bounds until the row cache takes others (row_cache) */
    kp->row_minb = 1;
    KILN_TRY(kiln__cg_layout_build(ctx, k, &kp->l));
    kiln_status s = kiln__cg_analyse(ctx, k, &kp->an);
    if (s != KILN_OK) {
        kiln__cg_layout_free(&kp->l);
        return s;
    }
    const layout *l = &kp->l;
    kp->elementwise = k->reduce_mask == 0;
    kp->colmode = !kp->elementwise && l->nd > 0 && !l->red[l->nd - 1] && l->R > 1;
    for (int i = 0; i < k->ninstr; i++) kp->nred += kiln__pop_is_reduction((kiln_pop)k->instr[i].op);
    int vec;
    s = choose_vec(ctx, k, kp, &vec);
    if (s == KILN_OK) s = row_shift(ctx, k, kp, &vec);
    if (s != KILN_OK) {
        kplan_free(kp);
        return s;
    }
    set_lanes(k, kp, vec);
    if (st && kp->colmode && vec > 1 && !kp->lanes_forced && !lanes_pay(ctx, st, k, kp)) {
        kp->unsplit = 0;
        set_lanes(k, kp, 1);
    }
    s = keep_values(ctx, k, kp);
    if (s == KILN_OK) s = row_fill(ctx, k, st, kp);
    if (s == KILN_OK) shift_fit(k, kp);
    if (s == KILN_OK) s = row_segments(ctx, kp);
    if (s == KILN_OK) s = col_depth(ctx, k, st, kp);
    if (s == KILN_OK) keep_cap(k, kp);
    if (s == KILN_OK) s = row_divisions(ctx, k, kp);
    if (s != KILN_OK) kplan_free(kp);
    return s;
}

/* The structural signature: everything the generated source depends on, written into
 * out[0..cap) as far as it fits; returns its whole length (the caller retries with a buffer
 * that large when it did not fit). */
static size_t signature(const kiln_plan_kernel *k, const kplan *kp, unsigned char *out, size_t cap)
{
    const layout *l = &kp->l;
    int hdr[25] = {k->ninstr, k->ninputs, k->nconsts, k->nstreams, (int)k->out.dtype,
                   (int)(k->out.round == KILN_ROUND_STOCHASTIC), k->out.is_row, k->compute_f64 != 0,
                   k->npasses, k->out_instr, l->nd, l->idx32, kp->elementwise, kp->colmode, kp->kmax, kp->vec,
                   kp->split, kp->seg, kp->keep, kp->an.nkept, kp->rdiv, kp->shift,
                   kp->row_tmax, kp->row_minb, kp->smem_row};
    size_t len = 0;
#define PUT(src_, n)                                                                            \
    do {                                                                                        \
        if (len + (n) <= cap) memcpy(out + len, (src_), (n));                                   \
        len += (n);                                                                             \
    } while (0)
    PUT(hdr, sizeof hdr);
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        int32_t w[7] = {in->op, in->space, in->dtype, in->pass, in->a, in->b, in->c};
        PUT(w, sizeof w);
    }
    for (int t = 0; t < k->ninputs; t++) {
        int d = (int)k->inputs[t].dtype;
        PUT(&d, sizeof d);
    }
    for (int a = 0; a < l->nd; a++) {
        unsigned char c = (unsigned char)l->red[a];
        PUT(&c, 1);
        for (int t = 0; t < l->nt; t++) {
            c = (unsigned char)(l->st[t][a] == 0 ? 0 : l->st[t][a] == 1 ? 1 : 2);
            PUT(&c, 1);
        }
    }
#undef PUT
    return len;
}


/* Kernel k prepared as the test hooks below see it: no device (COLUMN mode takes lanes
 * wherever the layout allows), rows split across the grid's y or not. */
static kiln_status prepare_for_hooks(kiln_ctx *ctx, const kiln_plan_kernel *k, int split, kplan *kp)
{
    KILN_TRY(check_plan_kernel(ctx, k));
    KILN_TRY(prepare(ctx, k, NULL, kp));
    kp->split = split != 0;
    if (kp->split) kp->seg = 0; /* run_kernel never splits a short-row kernel */
    /* the row cache, for the source's tests, with KILN_REDUCE_SMEM=1 alone: on rows longer
     * than a 1024-thread tile (no device to size the rule's block against) */
    const char *e = kiln__env_get(ctx, "KILN_REDUCE_SMEM");
    if (!kp->split && !kp->elementwise && !kp->colmode && !kp->seg && kp->an.ncached > 0 && e && strcmp(e, "1") == 0) {
        unsigned gx, bx, by, smem;
        int64_t L = kp->shift >= 0 ? row_vectors(kp) : kp->l.L / kp->vec;
        launch_shape(NULL, kp, kp->l.R, L, 0, &gx, &bx, &by, &smem);
        const int kmax_was = kp->kmax;
        kp->kmax = cached_kmax(kp); /* as row_cache */
        kp->smem_row = by == 1 && L > (int64_t)bx * kp->kmax;
        if (!kp->smem_row) kp->kmax = kmax_was;
        /* partial where the H100's 227 KB a block (its opt-in) hold less than the row */
        if (kp->smem_row && row_cache_fits(k, kp, 232448 - 32 * (int64_t)kp->smem_thread) < row_vectors(kp))
            kp->smem_row = 2;
        if (kp->smem_row) keep_none(k, kp); /* as row_cache */
        cached_division(kp);
    }
    return KILN_OK;
}

kiln_status kiln__cuda_kernel_source(kiln_ctx *ctx, const kiln_plan_kernel *k, int split, char **source)
{
    kplan kp;
    KILN_TRY(prepare_for_hooks(ctx, k, split, &kp));
    kiln_status s = kiln__cg_generate(ctx, k, &kp, source);
    kplan_free(&kp);
    return s;
}

kiln_status kiln__cuda_kernel_signature(kiln_ctx *ctx, const kiln_plan_kernel *k, int split, unsigned char **sig,
                                        size_t *len)
{
    *sig = NULL;
    *len = 0;
    kplan kp;
    KILN_TRY(prepare_for_hooks(ctx, k, split, &kp));
    size_t n = signature(k, &kp, NULL, 0);
    unsigned char *p = malloc(n ? n : 1);
    if (p) signature(k, &kp, p, n);
    kplan_free(&kp);
    if (!p) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for a kernel signature");
    *sig = p;
    *len = n;
    return KILN_OK;
}

/* src compiled asking ptxas for `blocks` blocks of 256 threads an SM (__launch_bounds__(256,
 * blocks) in place of __launch_bounds__(256)) into *fn where it runs them with no local memory
 * (no spills); *fn unchanged otherwise. */
static kiln_status tighten(kiln_ctx *ctx, const char *src, int blocks, CUfunction *fn)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    static const char bound[] = "__launch_bounds__(256)";
    const char *at = strstr(src, bound);
    if (!at || blocks < 1 || blocks > 8 || !st->cu.FuncGetAttribute) return KILN_OK;
    size_t n = strlen(src), head = (size_t)(at - src);
    char *src2 = malloc(n + 16);
    if (!src2) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel source");
    memcpy(src2, src, head);
    int w = snprintf(src2 + head, 32, "__launch_bounds__(256, %d)", blocks);
    memcpy(src2 + head + (size_t)w, at + sizeof bound - 1, n - head - (sizeof bound - 1) + 1);
    CUfunction f2 = NULL;
    kiln_status s = kiln__cuda_get_kernel(ctx, src2, "kiln_kernel", &f2);
    free(src2);
    int local = -1, b2 = 0;
    if (s == KILN_OK && st->cu.FuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f2) == CUDA_SUCCESS &&
        st->cu.OccupancyMaxActiveBlocks(&b2, f2, 256, 0) == CUDA_SUCCESS && local == 0 && b2 >= blocks) {
        *fn = f2;
        st->stats.tightened++;
    }
    return s;
}

/* KILN_REDUCE_DIV unset (kp->rdiv 2): *fn, compiled from src with the output's divisions
 * through the row's reciprocal (row_divisions), is kept where it costs no occupancy against the
 * kernel that divides at every point. The reciprocal adds a register or two, which ptxas can
 * round up to a step of occupancy (softmax over 131072 x 250 f16: 40 -> 48 registers, 6 -> 5
 * blocks an SM, 0.88x; bench/NOTES.md step 64). A 256-thread kernel (ROW segments) is first
 * compiled again asking for one more block an SM (tighten), taken where nothing spills (softmax
 * f16 over 96-1024 wide rows 1.02-1.09x faster); a row-cache kernel keeps it where it spills
 * nothing (its launch bounds hold the rule's blocks an SM at any register count); other kernels
 * compare their registers. Where it still runs fewer blocks, or rounds up to more registers, or
 * spills, *fn becomes the other. */
static kiln_status choose_division(kiln_ctx *ctx, const kiln_plan_kernel *k, const kplan *kp, const char *src,
                                   CUfunction *fn)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (!st->cu.FuncGetAttribute || !st->cu.OccupancyMaxActiveBlocks) return KILN_OK;
    kplan plain = *kp; /* the same layout and analysis, read only */
    plain.rdiv = 0;
    char *src0 = NULL;
    CUfunction f0 = NULL;
    kiln_status s = kiln__cg_generate(ctx, k, &plain, &src0);
    if (s == KILN_OK) s = kiln__cuda_get_kernel(ctx, src0, "kiln_kernel", &f0);
    free(src0);
    if (s != KILN_OK) return s;
    int r1 = 0, r0 = 0, b1 = 0, b0 = 0;
    if (st->cu.FuncGetAttribute(&r1, CU_FUNC_ATTRIBUTE_NUM_REGS, *fn) != CUDA_SUCCESS ||
        st->cu.FuncGetAttribute(&r0, CU_FUNC_ATTRIBUTE_NUM_REGS, f0) != CUDA_SUCCESS)
        return KILN_OK;
    if (kp->seg) {
        if (st->cu.OccupancyMaxActiveBlocks(&b1, *fn, 256, 0) != CUDA_SUCCESS ||
            st->cu.OccupancyMaxActiveBlocks(&b0, f0, 256, 0) != CUDA_SUCCESS)
            return KILN_OK;
        if (b1 < 8) { /* one more block an SM where that spills nothing */
            CUfunction ft = *fn;
            s = tighten(ctx, src, b1 + 1, &ft);
            if (ft != *fn) b1++;
            *fn = ft;
        }
        if (b1 < b0) *fn = f0;
        return s;
    }
    if (kp->smem_row) { /* the launch bounds hold the row cache's blocks an SM: the reciprocal, unless it spills */
        int local = -1;
        if (st->cu.FuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, *fn) != CUDA_SUCCESS || local > 0)
            *fn = f0;
        return KILN_OK;
    }
    if ((r1 + 7) / 8 > (r0 + 7) / 8) *fn = f0;
    return KILN_OK;
}

/* The kernel of k: from the structural fast map, else generated and fetched through the
 * source-keyed cache (memory, disk, NVRTC), its division chosen (choose_division), and
 * remembered in the fast map. */
static kiln_status get_function(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp, CUfunction *fn)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* on the stack for kernels of up to ~60 instructions, the heap past that */
    unsigned char sig_stack[2048], *sig = sig_stack;
    size_t len = signature(k, kp, sig_stack, sizeof sig_stack);
    if (len > sizeof sig_stack) {
        sig = malloc(len);
        if (!sig) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for a kernel signature");
        signature(k, kp, sig, len);
    }
    uint64_t h;
    if (kiln__cuda_fast_find(st, sig, len, &h, fn)) {
        st->stats.mem_hits++;
        if (sig != sig_stack) free(sig);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        st->stats.last_get_ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6;
        return KILN_OK;
    }
    char *src = NULL;
    kiln_status s = kiln__cg_generate(ctx, k, kp, &src);
    if (s == KILN_OK) s = kiln__cuda_get_kernel(ctx, src, "kiln_kernel", fn);
    if (s == KILN_OK && kp->rdiv == 2) s = choose_division(ctx, k, kp, src, fn);
    /* the row cache's shared memory past 48 KB (set once: the fast map keeps the function) */
    if (s == KILN_OK && kp->smem_row) {
        int code = (int)st->cu.FuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, st->smem_optin);
        if (code != 0) s = kiln__cuda_check_drv(ctx, code, "cuFuncSetAttribute(row cache)", __FILE__, __LINE__);
    }
    free(src);
    if (s == KILN_OK) kiln__cuda_fast_add(st, h, sig, len, *fn);
    if (sig != sig_stack) free(sig);
    return s;
}

/* The launch geometry of a kernel: grid x, block, shared memory (a split adds the grid's
 * y). R and L in the kernel's units (vectors along a vectorised axis). COLUMN mode's blocks
 * are 32 threads wide, or with `narrow` down to 8 (with lanes 4, of VEC columns each) while
 * that makes more blocks, towards two an SM; with lanes, also unnarrowed, towards 16. */
static void launch_shape(const kiln_cuda_state *st, const kplan *kp, int64_t R, int64_t L, int narrow,
                         unsigned *gx, unsigned *bx, unsigned *by, unsigned *smem)
{
    int kmax = kp->kmax;
    *smem = 0;
    if (kp->elementwise) {
        *bx = 256;
        *by = 1;
        int64_t blocks = (R + (int64_t)*bx * EW_UNR - 1) / ((int64_t)*bx * EW_UNR);
        int64_t cap = (int64_t)st->sm_count * 16;
        if (blocks > cap) blocks = cap;
        if (blocks < 1) blocks = 1;
        *gx = (unsigned)blocks;
    } else if (kp->seg) { /* W lanes a row, 256 / W rows a block, at least a warp */
        unsigned rb = 256 / (unsigned)kp->seg, rmin = 32 / (unsigned)kp->seg;
        if ((int64_t)rb > R) rb = pow2ceil(R);
        if (rb < rmin) rb = rmin;
        *bx = (unsigned)kp->seg;
        *by = rb;
        *gx = (unsigned)((R + rb - 1) / rb);
    } else if (!kp->colmode) {
        int64_t need = (L + kmax - 1) / kmax;
        unsigned t = pow2ceil(need);
        if (t < 32) t = 32;
        if (t > (unsigned)kp->row_tmax) t = (unsigned)kp->row_tmax;
        unsigned rb = t >= 256 ? 1 : 256 / t;
        if ((int64_t)rb > R) rb = (unsigned)pow2ceil(R);
        *bx = t;
        *by = rb;
        *gx = (unsigned)((R + rb - 1) / rb);
        *smem = (t >> 5) * rb * (unsigned)kp->smem_thread; /* a warp's slot (kiln_row_red) */
    } else {
        /* a block's row: at least 16 bytes; with lanes (16 bytes a thread) 64. With lanes the
         * blocks narrow to make 16 along x even when split: fewer along x, a split has more
         * slices along y, and where every block folds its rows' G partials the folds grow as
         * G squared (batch norm 32768 x 4096 f16: 3.8x no lanes' speed at 32 threads, 1.0x at
         * 4; 100000 x 256: 1.4x at 32, 1.9x at 4; bench/NOTES.md step 55) */
        unsigned tx = 32, txmin = kp->vec > 1 ? 4 : 8;
        int64_t want = narrow ? 2 * (int64_t)st->sm_count : kp->vec > 1 ? 16 : 0;
        while ((narrow || kp->vec > 1) && tx > txmin && (R + tx - 1) / tx < want) tx /= 2;
        if ((int64_t)tx > R) tx = pow2ceil(R);
        int64_t need = (L + kmax - 1) / kmax;
        unsigned ty = pow2ceil(need);
        unsigned tymax = 1024 / tx;
        if (ty > tymax) ty = tymax;
        if (ty < 1) ty = 1;
        /* deeper workers (col_depth): halve the workers a column while each would walk at most
         * col_rows rows and the grid keep more than COL_DEPTH_THREADS threads an SM, a warp a block */
        const int64_t blocks = (R + tx - 1) / tx;
        while (narrow && kp->col_deep && ty > 1 && tx * (ty / 2) >= 32 && (L + ty / 2 - 1) / (ty / 2) <= kp->col_rows &&
               blocks * tx * (ty / 2) > (int64_t)COL_DEPTH_THREADS * st->sm_count)
            ty /= 2;
        *bx = tx;
        *by = ty;
        *gx = (unsigned)((R + tx - 1) / tx);
        *smem = *bx * *by * (unsigned)kp->smem_thread;
    }
}

/* The grid barrier's two words (zeroed once; every barrier leaves the arrivals at zero). */
static kiln_status grid_sync_words(kiln_ctx *ctx)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (st->grid_sync) return KILN_OK;
    void *w = NULL;
    KILN_TRY(kiln__cuda_zeroed_words(ctx, 2 * sizeof(unsigned), &w));
    st->grid_sync = w;
    return KILN_OK;
}

/* Slices for a split reduction of gx blocks of rows, each row `tiles` tiles long: 1 (no
 * split) unless too few blocks would walk rows long enough; then as many as the device
 * holds at once (occ blocks an SM), at most one a tile. KILN_REDUCE_SPLIT=0: never;
 * =force: wherever rows are two tiles or more (for measuring the rule).
 * Long enough (H100, bench/NOTES.md step 54, unsplit against forced splits in one process):
 * a split pays from 16 tiles a row (12 lose ~8 %) for one pass to a few values, from 32
 * along columns (16 lose ~5 %; 24 set between), from 8 for two passes (variance; 4 lose),
 * and from 2 where the row is also written back whole (x - max(x): 4 tiles win 1.0-1.45x). */
static kiln_status split_slices(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, const kplan *kp,
                                unsigned gx, int64_t workers, int64_t tiles, int occ, int *G)
{
    static const char *const ways[] = {"0", "1", "force"};
    int env;
    *G = 1;
    if (kp->elementwise) return KILN_OK;
    KILN_TRY(kiln__env_choice(ctx, "kiln_eval", "KILN_REDUCE_SPLIT", ways, 3, &env));
    if (env == 0 || st->reduce_no_coop || !st->cu.LaunchKernelEx) return KILN_OK;
    /* (down columns measured at 16 points a worker: 24 tiles = 12 288 rows, at any kmax) */
    int64_t min_tiles = env == 2 || !k->out.is_row ? 2 : k->npasses > 1 ? 8 : kp->colmode ? 24 * 16 / kp->kmax : 16;
    /* with lanes the blocks are 4 threads wide, more workers: the same 12 288 rows */
    if (env != 2 && k->out.is_row && k->npasses == 1 && kp->colmode && kp->vec > 1)
        min_tiles = (12288 + workers * kp->kmax - 1) / (workers * kp->kmax);
    if ((int64_t)gx * 2 > st->sm_count || tiles < min_tiles) return KILN_OK;
    int64_t g = (int64_t)st->sm_count * (occ < 1 ? 1 : occ) / gx;
    if (g > tiles) g = tiles;
    if (g > 65535) g = 65535;
    *G = g < 2 ? 1 : (int)g;
    return KILN_OK;
}

/* The kernel's extent in its own units: R rows of L, L in vectors along the last axis where it
 * takes vectors (element-wise and COLUMN mode kernels: VEC rows a worker, R in vectors), in
 * points with the row shift (each row its own vectors). */
static void kernel_extent(const kplan *kp, int64_t *R, int64_t *L)
{
    *R = kp->l.R;
    *L = kp->l.L;
    if (kp->shift >= 0)
        *L = row_vectors(kp);
    else if (kp->vec > 1 && (kp->elementwise || kp->colmode))
        *R /= kp->vec;
    else if (kp->vec > 1)
        *L /= kp->vec;
}

/* run_kernel's choices before it compiles anything: the blocks for R x L (COLUMN mode first
 * tries blocks 32 columns wide: a row of a block reads whole sectors) and the split's slices
 * at one block an SM (*G, 1 where the rows stay unsplit; the occupancy can raise a G above 1,
 * never bring it to 1). */
static kiln_status choose_split(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, const kplan *kp,
                                int64_t R, int64_t L, unsigned *gx, unsigned *bx, unsigned *by, unsigned *smem,
                                int64_t *workers, int64_t *tiles, int *G)
{
    launch_shape(st, kp, R, L, 0, gx, bx, by, smem);
    *workers = kp->colmode ? *by : *bx;
    *tiles = kp->elementwise ? 1 : (L + *workers * kp->kmax - 1) / (*workers * kp->kmax);
    *G = 1;
    KILN_TRY(split_slices(ctx, st, k, kp, *gx, *workers, *tiles, 1, G));
    if (kp->unsplit || kp->seg) *G = 1;
    return KILN_OK;
}

/* run_kernel's choices for a kernel that stays unsplit: COLUMN mode narrows its blocks to make
 * more of them; unsplit rows longer than a tile never take kept values (their registers would
 * only crowd the walks that compute them again: f16 rows of 50257 spilled 88 bytes); ROW mode's
 * row cache. */
static kiln_status choose_unsplit(kiln_ctx *ctx, const kiln_cuda_state *st, const kiln_plan_kernel *k, kplan *kp,
                                  int64_t R, int64_t L, unsigned *gx, unsigned *bx, unsigned *by, unsigned *smem)
{
    if (kp->colmode)
        launch_shape(st, kp, R, L, 1, gx, bx, by, smem);
    else if (!kp->elementwise && kp->an.nkept > 0 && kp->keep != 2 && L > (int64_t)*bx * kp->kmax)
        keep_none(k, kp);
    if (kp->elementwise || kp->colmode) return KILN_OK;
    return row_cache(ctx, st, k, kp, L, bx, *by, smem);
}

static kiln_status run_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    kplan kp;
    KILN_TRY(prepare(ctx, k, st, &kp));
    const layout *l = &kp.l;
    uint64_t wstack[256];
    uint64_t *words = l->nwords <= 256 ? wstack : malloc((size_t)l->nwords * 8);
    if (!words) {
        kplan_free(&kp);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for kernel arguments");
    }
    kiln__cg_layout_fill(ctx, k, l, words);
    int vec = kp.vec;
    int64_t R, L;
    kernel_extent(&kp, &R, &L);
    if (kp.shift < 0 && vec > 1) { /* sizes in vectors along the last axis */
        words[l->w_size[l->nd - 1]] = (uint64_t)(l->size[l->nd - 1] / vec);
        words[1] = (uint64_t)R;
        words[2] = (uint64_t)L;
    }
    /* a split reduction: its function, the slices the device holds, the workspace */
    unsigned gx, bx, by, smem;
    int64_t workers, tiles;
    int G = 1;
    kiln_block *ws = NULL;
    CUfunction fn;
    kiln_status s = choose_split(ctx, st, k, &kp, R, L, &gx, &bx, &by, &smem, &workers, &tiles, &G);
    if (s == KILN_OK && G > 1) {
        kp.split = 1;
        s = get_function(ctx, k, &kp, &fn);
        int occ = 1;
        if (s == KILN_OK && st->cu.OccupancyMaxActiveBlocks &&
            st->cu.OccupancyMaxActiveBlocks(&occ, fn, (int)(bx * by), smem) != CUDA_SUCCESS)
            occ = 1;
        if (s == KILN_OK) s = split_slices(ctx, st, k, &kp, gx, workers, tiles, occ, &G);
        if (s == KILN_OK && G > 1 &&
            (grid_sync_words(ctx) != KILN_OK ||
             kiln__mem_try_alloc(ctx, (size_t)kp.nred * (size_t)(R * (kp.colmode ? vec : 1)) * (size_t)G * (kiln__cg_has_var(k) ? 24 : 16), __FILE__, __LINE__, &ws) != KILN_OK))
            ws = NULL;
        if (!ws) {
            G = 1;
            kp.split = 0;
        }
    }
    if (s == KILN_OK && !kp.split) {
        s = choose_unsplit(ctx, st, k, &kp, R, L, &gx, &bx, &by, &smem);
        if (s == KILN_OK) s = get_function(ctx, k, &kp, &fn);
        /* the row cache's register bound: where ptxas spilled to meet it, a block an SM fewer */
        int local = 0;
        while (s == KILN_OK && kp.smem_row && kp.row_minb > 1 && st->cu.FuncGetAttribute &&
               st->cu.FuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fn) == CUDA_SUCCESS && local > 0) {
            kp.row_minb--;
            s = get_function(ctx, k, &kp, &fn);
        }
    }
    if (s == KILN_OK && kp.split) {
        words[l->w_ws] = (uint64_t)(uintptr_t)ws->ptr;
        words[l->w_sync] = (uint64_t)(uintptr_t)st->grid_sync;
        /* the words as the kernel's one parameter: cooperative launches so given also run
         * inside a graph capture (see kiln__cuda_gemm_launch_words) */
        void *params[1] = {(void *)words};
        const kiln_cuda_launch_attrs at = {.cooperative = 1};
        int refused = 0;
        s = kiln__cuda_launch_ex(ctx, fn, gx, (unsigned)G, bx, by, smem, &at, params, NULL, &refused);
        kiln__mem_free(ctx, ws); /* stream-ordered reuse */
        if (s == KILN_OK && !refused) st->stats.reduce_splits++;
        if (s == KILN_OK && refused) {
            /* the driver would not have every block resident (MPS, green contexts): no more
             * splits in this context, and this kernel again unsplit */
            st->reduce_no_coop = 1;
            if (words != wstack) free(words);
            kplan_free(&kp);
            return run_kernel(ctx, k);
        }
    } else if (s == KILN_OK) {
        s = kiln__cuda_launch(ctx, fn, gx, 1, bx, by, smem, words, l->nwords);
    }
    if (s == KILN_OK && kp.colmode && kp.vec > 1) st->stats.reduce_lanes++;
    if (s == KILN_OK && kp.seg) st->stats.reduce_segs++;
    if (s == KILN_OK && kp.shift >= 0) st->stats.reduce_shifts++;
    if (s == KILN_OK && kp.smem_row) st->stats.reduce_row_caches++;
    if (words != wstack) free(words);
    kplan_free(&kp);
    return s;
}

kiln_status kiln__cuda_run_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k)
{
    KILN_TRY(check_plan_kernel(ctx, k));
    for (int a = 0; a < k->ndim; a++) /* nothing to store: an empty outer space */
        if (k->shape[a] == 0 && !((k->reduce_mask >> a) & 1u)) return KILN_OK;
    return run_kernel(ctx, k);
}

/* The driver entry points whose presence the launch choices ask about (never called). */
static CUresult no_set_attribute(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f;
    (void)a;
    (void)v;
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult no_launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra)
{
    (void)c;
    (void)f;
    (void)params;
    (void)extra;
    return CUDA_ERROR_NOT_SUPPORTED;
}

kiln_status kiln__cuda_launch_choice(kiln_ctx *ctx, const kiln_plan_kernel *k, int sm_count, int smem_optin,
                                     int smem_sm, int l2_bytes, kiln_cuda_launch_choice *out)
{
    if (!out) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'out': NULL");
    memset(out, 0, sizeof *out);
    if (sm_count < 1) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'sm_count': %d SMs", sm_count);
    if (smem_optin < 0 || smem_sm < smem_optin)
        return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'smem_optin': %d bytes a block against %d an SM", smem_optin,
                          smem_sm);
    if (l2_bytes < 1) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'l2_bytes': %d bytes of L2", l2_bytes);
    KILN_TRY(check_plan_kernel(ctx, k));
    for (int a = 0; a < k->ndim; a++) /* nothing to store: no launch */
        if (k->shape[a] == 0 && !((k->reduce_mask >> a) & 1u)) return KILN_OK;
    kiln_cuda_state *st = calloc(1, sizeof *st);
    if (!st) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'k': no host memory for the device's description");
    st->sm_count = sm_count;
    st->smem_optin = smem_optin;
    st->smem_sm = smem_sm;
    st->l2_bytes = l2_bytes;
    st->cu.FuncSetAttribute = no_set_attribute;
    st->cu.LaunchKernelEx = no_launch_ex;
    kplan kp;
    kiln_status s = prepare(ctx, k, st, &kp);
    if (s == KILN_OK) {
        int64_t R, L, workers, tiles;
        unsigned gx, bx, by, smem;
        int G = 1;
        kernel_extent(&kp, &R, &L);
        s = choose_split(ctx, st, k, &kp, R, L, &gx, &bx, &by, &smem, &workers, &tiles, &G);
        if (s == KILN_OK && G == 1) s = choose_unsplit(ctx, st, k, &kp, R, L, &gx, &bx, &by, &smem);
        out->split = G > 1;
        out->row_cache = kp.smem_row;
        out->kmax = kp.kmax;
        out->threads = (int)(bx * by);
        out->lanes = kp.colmode && kp.vec > 1;
        out->seg = kp.seg != 0;
        out->shift = kp.shift >= 0;
        kplan_free(&kp);
    }
    free(st);
    return s;
}
