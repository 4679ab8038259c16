/*
 * src/cpu/exec.c — the CPU plan interpreter. Runs one kernel of a kiln_plan (its meaning is
 * in src/expr/plan.h) block by block: every instruction is evaluated over a block of at most
 * BLOCK points into a small per-instruction buffer, so no full-size temporary is ever made.
 *
 * The domain is first normalized: size-1 axes dropped, neighbouring axes that every input
 * and the output walk contiguously (and that are both reduced or both kept) merged. Linear
 * indices (RNG, stochastic rounding, arg*) are unchanged by this. Then one of three modes:
 *   EW  (reduce_mask 0): blocks are runs of BLOCK consecutive points of the domain.
 *   ROW (the innermost axis is reduced, e.g. mean over axis 1 of (N, C)): one row at a time
 *       walked in blocks of BLOCK, or, when a row is short, several whole rows per block.
 *       Values of a block are laid out row after row: v[lane * kn + k].
 *   COL (the innermost axis is kept, e.g. mean over axis 0 of (N, C)): a group of up to
 *       BLOCK consecutive rows along the innermost axis are "lanes"; the block holds kn
 *       inner points for all lanes, v[k * nl + lane], so memory is read with unit stride and
 *       the accumulators are vectors.
 * A block is a list of segments along the innermost axis of the domain (the typed code in
 * exec_impl.h loads and stores whole segments with strided or unit-stride loops). Blocks
 * are sized to the domain (at most BLOCK values), and the workspace comes from the
 * context's counting allocator.
 *
 * Numbers: f32 compute uses the f32 libm functions (tanh, expm1 and log1p: src/cpu/vmath.h's, correctly
 * rounded in effect); SUM (PROD) adds (multiplies) in the compute type within a
 * block and in double across blocks (and across chunks, see Threads); MAX/MIN propagate NaN; ARG* give the first index
 * of the extreme (a NaN counts as the extreme). In f32 compute an ARG* index above 2^24 is not exact (the planner
 * should pick f64 compute for such rows). Stochastic rounding from f64 compute rounds to f32 first (the recipe in
 * core/numeric.h is defined on f32).
 *
 * Per row group: ROW-space instructions that need no reduction are computed first; then for
 * each pass p the row is walked, the FULL instructions the pass's reductions need are
 * evaluated block by block and accumulated; the pass's reductions are finalized and the ROW
 * instructions that became computable are evaluated; last the output pass stores (FULL
 * output: another walk; ROW output: one value per row). All of a row group's values are
 * complete before its output is written, and a block is loaded whole before it is stored,
 * so the destination may be an input read at the same points (in place). A destination
 * that overlaps an input in any other way needs a temporary (the planner's job).
 *
 * Kept values (ROW mode, analyse_keep): a costly FULL value (a library function, a division,
 * a generator) that a pass computes and a later walk needs again is kept from the first walk
 * (its block buffer when the row group is one block, else a row buffer) and taken by the
 * later ones: softmax computes its exp once. The same values in the same order, so the same
 * bits; KILN_CPU_KEEP=0 computes them again.
 *
 * Threads (src/cpu/pool.c): the work is cut into tasks by the kernel's shape alone, never
 * by the thread count, and each output element is computed by one task in the serial order,
 * so results are bit for bit the same for 1 and N threads:
 *   EW: a task is a run of TASK_POINTS consecutive points (whole blocks).
 *   ROW/COL: a task is a run of whole row groups (the groups the serial walk makes, as many
 *       as fill about TASK_POINTS points); each row is reduced by one task as it always was.
 *   Few row groups (under GROUPS_FEW) with a long inner walk (a full reduction, a column
 *       reduction of a narrow tensor, a few long rows): each group in turn, its walks cut
 *       into chunks of CHUNK_BLOCKS whole blocks or more (at most CHUNKS_MAX chunks, from k
 *       = 0; the chunk size depends on the shape only). Each chunk reduces into its own
 *       partial accumulators, and the calling thread combines the partials in chunk order
 *       after the walk (SUM/PROD: the chunks' double sums/products combined in order; MAX/MIN/ARG*: the same
 *       answers as one walk, ARG* the first index). Every pass ends before the next walk
 *       starts. This changes the association of a long SUM against one walk (the chunk sums
 *       are added, not the block sums one by one) and, with ties of -0 and +0, which zero a
 *       MAX/MIN gives, the same way for every thread count.
 * Each worker has its own block buffers (from the counting allocator, taken by the calling
 * thread before any task runs); tasks write only their own output points, so the in-place
 * rule above carries over: an element read in place is read and written by one task (and in
 * chunked walks, written only in the output walk, after every pass has read it). A kernel
 * that breaks the rule (split_ok) runs on the calling thread alone. Work under
 * KILN_CPU_PAR_MIN points (src/cpu/pool.c) also stays on the calling thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/numeric.h"
#include "cpu/cpu.h"
#include "cpu/vmath.h"

/* Points per block (values per instruction buffer). Overridable for testing the block
 * boundaries: -DKILN_CPU_BLOCK=16. */
#ifndef KILN_CPU_BLOCK
#define KILN_CPU_BLOCK 512
#endif
#define BLOCK ((int64_t)KILN_CPU_BLOCK)

enum { MODE_EW = 0, MODE_ROW = 1, MODE_COL = 2 };

/* Task sizes (see Threads above): points of an EW task, and of a row-group task at least;
 * blocks of a chunk at least, and chunks of a walk at most; below GROUPS_FEW row groups a
 * long inner walk is cut into chunks. They depend on nothing but these constants. */
enum { TASK_POINTS = 8 * KILN_CPU_BLOCK, CHUNK_BLOCKS = 16, CHUNKS_MAX = 128, GROUPS_FEW = 16 };
/* Longest row (points) whose kept values a worker holds whole (analyse_keep; 1 MiB of f32),
 * and the longest a chunked walk's workers share (16 MiB of f32 for each kept value). */
enum { KEEP_ROW_MAX = 1 << 18, KEEP_CHUNKED_MAX = 1 << 22 };

static const int8_t pop_nargs[] = {
#define X_NARGS(name, nargs) nargs,
    KILN_POP_LIST(X_NARGS)
#undef X_NARGS
};
static const char *const pop_names[] = {
#define X_NAME(name, nargs) #name,
    KILN_POP_LIST(X_NAME)
#undef X_NAME
};
_Static_assert(sizeof pop_nargs / sizeof pop_nargs[0] == KILN_POP_COUNT, "one entry per opcode");

/* A block: segments along one axis of the normalized domain (the innermost one, except for
 * the row values of short rows, which run along the innermost kept axis). Along a segment
 * the RNG index grows by 1 (it is the innermost axis of the index's space). */
typedef struct seglist {
    int ax;        /* the domain axis the segments run along */
    int n;         /* segments */
    int64_t total; /* values */
    int32_t *len;  /* [n] */
    int64_t *lin;  /* [n] RNG / rounding index of the segment's first value */
    int64_t *off;  /* [n][nio] element offset of the first value per input, the output last */
} seglist;

/* One kernel, normalized and analysed. */
typedef struct xk {
    kiln_ctx *ctx;
    const kiln_plan_kernel *k;
    int mode;
    int nd;
    int64_t shape[KILN_MAX_DIMS];
    int red[KILN_MAX_DIMS];
    int64_t lin[KILN_MAX_DIMS];  /* row-major strides of the linear index in D */
    int64_t olin[KILN_MAX_DIMS]; /* of the linear index in the outer space (0 on reduced axes) */
    int nio;                     /* inputs + 1; index ninputs is the output */
    int64_t *st;                 /* [nio][KILN_MAX_DIMS] strides along the normalized axes */
    int nouter, outer[KILN_MAX_DIMS];
    int ninner, inner[KILN_MAX_DIMS];
    int64_t outer_n, inner_n, numel;
    /* analysis (malloc'd together in `mem`) */
    uint8_t *space; /* effective space per instruction */
    int *ready;     /* -1: computable before any pass; p: after pass p's reductions */
    int *redslot;   /* per instruction: index among the reductions, -1 otherwise */
    int nred;
    int nwalks;             /* EW: 1; else npasses + (FULL output ? 1 : 0) */
    int *full_list, *nfull; /* [walk][ninstr]: FULL instructions a walk evaluates, in order */
    int *exp_list, *nexp;   /* [walk][ninstr]: ROW instructions a walk reads (broadcast) */
    int *red_list, *nredw;  /* [walk][ninstr]: reductions of the walk's pass */
    int *row_list, *nrow;   /* [stage][ninstr]: ROW instructions with ready == stage - 1 */
    /* ROW mode's kept values (analyse_keep; malloc'd together in `kmem`): a costly FULL value
     * that a pass computes and a later walk uses again is taken from the first walk's buffer,
     * not computed again */
    int nkeep;                /* kept instructions */
    int *keep_walk;           /* per instruction: the walk that computes and keeps it, -1 none */
    int *keep_slot;           /* per instruction: its buffer among the nkeep, -1 none */
    int *kfull_list, *nkfull; /* [walk][ninstr]: FULL instructions a walk evaluates when it takes kept ones */
    int *take_list, *ntake;   /* [walk][ninstr]: kept instructions a walk takes */
    int *keepw_list, *nkeepw; /* [walk][ninstr]: instructions a walk keeps */
    int *kexp_list, *nkexp;   /* [walk][ninstr]: ROW instructions a walk reads when it takes kept ones */
    void *kmem;
    void *mem;
    int split_ok; /* the points may be shared among threads (see split_ok) */
} xk;

#define ST(x, io, d) ((x)->st[(size_t)(io)*KILN_MAX_DIMS + (size_t)(d)])

static int64_t in_stride(const kiln_plan_kernel *k, int io, int a)
{
    return io < k->ninputs ? k->inputs[io].strides[a] : k->out.strides[a];
}

static const char *pop_name(int op)
{
    return op >= 0 && op < KILN_POP_COUNT ? pop_names[op] : "?";
}

/* ---- validation and normalization ----------------------------------------------------- */

#define BAD(...) KILN_ERROR(x->ctx, KILN_ERR_INTERNAL, "argument 'plan': " __VA_ARGS__)

static kiln_status check_kernel(xk *x)
{
    const kiln_plan_kernel *k = x->k;
    if (k->ndim < 0 || k->ndim > KILN_MAX_DIMS) return BAD("kernel rank %d is outside 0..%d", k->ndim, KILN_MAX_DIMS);
    for (int a = 0; a < k->ndim; a++)
        if (k->shape[a] < 0) return BAD("domain axis %d has negative size %lld", a, (long long)k->shape[a]);
    if (k->ndim < 32 && (k->reduce_mask >> k->ndim) != 0)
        return BAD("reduce_mask 0x%x names axes beyond rank %d", (unsigned)k->reduce_mask, k->ndim);
    if (k->ninputs < 0 || (k->ninputs > 0 && !k->inputs)) return BAD("bad input list (%d inputs)", k->ninputs);
    if (k->nconsts < 0 || (k->nconsts > 0 && !k->consts)) return BAD("bad constant list (%d)", k->nconsts);
    if (k->nstreams < 0 || (k->nstreams > 0 && !k->streams)) return BAD("bad stream list (%d)", k->nstreams);
    if (k->ninstr <= 0 || !k->instr) return BAD("kernel has no instructions");
    if (k->out_instr < 0 || k->out_instr >= k->ninstr)
        return BAD("out_instr %d is not an instruction (0..%d)", k->out_instr, k->ninstr - 1);
    if (!kiln__dtype_valid(k->out.dtype)) return BAD("output dtype %d is invalid", (int)k->out.dtype);
    if (k->npasses < 0) return BAD("npasses %d is negative", k->npasses);
    if (k->reduce_mask == 0 && k->npasses != 0) return BAD("element-wise kernel with %d passes", k->npasses);
    for (int j = 0; j < k->ninputs; j++)
        if (!kiln__dtype_valid(k->inputs[j].dtype))
            return BAD("input %d has invalid dtype %d", j, (int)k->inputs[j].dtype);
    return KILN_OK;
}

/* Fills the normalized geometry. *nothing = 1 when there is nothing to compute. */
static void normalize(xk *x, int *nothing)
{
    const kiln_plan_kernel *k = x->k;
    int inner_empty = 0;
    *nothing = 0;
    for (int a = 0; a < k->ndim; a++) {
        int r = (int)((k->reduce_mask >> a) & 1u);
        if (k->shape[a] == 0) {
            /* An empty kept axis, or an empty D with a FULL output: no point to store. */
            if (!r || !k->out.is_row) {
                *nothing = 1;
                return;
            }
            inner_empty = 1;
        }
    }
    int nd = 0;
    for (int a = 0; a < k->ndim; a++) {
        int r = (int)((k->reduce_mask >> a) & 1u);
        if (inner_empty && r) continue; /* rows then have no inner points at all */
        if (k->shape[a] == 1) continue;
        if (nd > 0 && x->red[nd - 1] == r) {
            int ok = 1;
            for (int io = 0; io < x->nio && ok; io++)
                if (ST(x, io, nd - 1) != in_stride(k, io, a) * k->shape[a]) ok = 0;
            if (ok) {
                x->shape[nd - 1] *= k->shape[a];
                for (int io = 0; io < x->nio; io++) ST(x, io, nd - 1) = in_stride(k, io, a);
                continue;
            }
        }
        x->shape[nd] = k->shape[a];
        x->red[nd] = r;
        for (int io = 0; io < x->nio; io++) ST(x, io, nd) = in_stride(k, io, a);
        nd++;
    }
    if (nd == 0) { /* one point */
        x->shape[0] = 1;
        x->red[0] = 0;
        for (int io = 0; io < x->nio; io++) ST(x, io, 0) = 0;
        nd = 1;
    }
    x->nd = nd;
    int64_t l = 1, ol = 1;
    x->outer_n = 1;
    x->inner_n = inner_empty ? 0 : 1;
    x->nouter = x->ninner = 0;
    for (int a = nd - 1; a >= 0; a--) {
        x->lin[a] = l;
        l *= x->shape[a];
        if (x->red[a]) {
            x->olin[a] = 0;
            x->inner_n *= x->shape[a];
        } else {
            x->olin[a] = ol;
            ol *= x->shape[a];
            x->outer_n *= x->shape[a];
        }
    }
    x->numel = l;
    for (int a = 0; a < nd; a++) {
        if (x->red[a])
            x->inner[x->ninner++] = a;
        else
            x->outer[x->nouter++] = a;
    }
    if (k->reduce_mask == 0)
        x->mode = MODE_EW;
    else
        x->mode = x->red[nd - 1] ? MODE_ROW : MODE_COL;
}

static kiln_status visit(xk *x, int i, int walk, int pass, uint8_t *mark)
{
    if (mark[i]) return KILN_OK;
    mark[i] = 1;
    const kiln_plan_instr *in = &x->k->instr[i];
    if (x->space[i] == KILN_SPACE_ROW) {
        if (x->ready[i] >= pass)
            return BAD("instruction %d (%s) is used in pass %d but is known only after pass %d", i, pop_name(in->op),
                       pass, x->ready[i]);
        x->exp_list[walk * x->k->ninstr + x->nexp[walk]++] = i;
        return KILN_OK;
    }
    int na = pop_nargs[in->op];
    const int32_t ops[3] = {in->a, in->b, in->c};
    for (int j = 0; j < na; j++) KILN_TRY(visit(x, ops[j], walk, pass, mark));
    return KILN_OK;
}

static kiln_status analyse(xk *x)
{
    const kiln_plan_kernel *k = x->k;
    int ni = k->ninstr, np = k->npasses;
    int ew = x->mode == MODE_EW;
    int full_out = !ew && !k->out.is_row;
    x->nwalks = ew ? 1 : np + full_out;
    int nstages = ew ? 0 : np + 1;
    size_t nlists = (size_t)x->nwalks * 3 + (size_t)nstages;
    size_t bytes = (size_t)ni * (sizeof(uint8_t) * 2 + sizeof(int) * 2) + nlists * (size_t)(ni + 1) * sizeof(int);
    x->mem = calloc(1, bytes);
    if (!x->mem) return KILN_ERROR(x->ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel's analysis");
    int *ip = x->mem;
    x->ready = ip;
    x->redslot = ip + ni;
    x->full_list = ip + 2 * ni;
    x->exp_list = x->full_list + (size_t)x->nwalks * ni;
    x->red_list = x->exp_list + (size_t)x->nwalks * ni;
    x->row_list = x->red_list + (size_t)x->nwalks * ni;
    x->nfull = x->row_list + (size_t)nstages * ni;
    x->nexp = x->nfull + x->nwalks;
    x->nredw = x->nexp + x->nwalks;
    x->nrow = x->nredw + x->nwalks;
    x->space = (uint8_t *)(x->nrow + nstages);
    uint8_t *mark = x->space + ni;

    x->nred = 0;
    for (int i = 0; i < ni; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (in->op >= KILN_POP_COUNT) return BAD("instruction %d has unknown opcode %d", i, in->op);
        int na = pop_nargs[in->op];
        const int32_t ops[3] = {in->a, in->b, in->c};
        for (int j = 0; j < na; j++)
            if (ops[j] < 0 || ops[j] >= i)
                return BAD("instruction %d (%s) operand %d = %d is not an earlier instruction", i, pop_name(in->op), j,
                           ops[j]);
        switch (in->op) {
        case KILN_POP_LOAD:
            if (in->a < 0 || in->a >= k->ninputs)
                return BAD("instruction %d (LOAD) reads input %d of %d", i, in->a, k->ninputs);
            break;
        case KILN_POP_CONST:
            if (in->a < 0 || in->a >= k->nconsts)
                return BAD("instruction %d (CONST) reads constant %d of %d", i, in->a, k->nconsts);
            break;
        case KILN_POP_BERNOULLI:
            if (in->b < 0 || in->b >= k->nconsts)
                return BAD("instruction %d (BERNOULLI) reads constant %d of %d", i, in->b, k->nconsts);
            /* fall through */
        case KILN_POP_RAND:
        case KILN_POP_RANDN:
            if (in->a < 0 || in->a >= k->nstreams)
                return BAD("instruction %d (%s) uses stream %d of %d", i, pop_name(in->op), in->a, k->nstreams);
            break;
        case KILN_POP_CAST:
            if (!kiln__dtype_valid((kiln_dtype)in->dtype))
                return BAD("instruction %d (CAST) to invalid dtype %d", i, in->dtype);
            break;
        default: break;
        }
        int isred = kiln__pop_is_reduction((kiln_pop)in->op);
        x->redslot[i] = -1;
        if (ew) {
            if (isred) return BAD("instruction %d (%s) reduces in an element-wise kernel", i, pop_name(in->op));
            x->space[i] = KILN_SPACE_FULL;
            x->ready[i] = -1;
            continue;
        }
        if (isred) {
            if (in->pass >= np) return BAD("instruction %d (%s) has pass %d of %d", i, pop_name(in->op), in->pass, np);
            if (x->ready[in->a] >= in->pass)
                return BAD("instruction %d (%s) in pass %d reduces a value known only after pass %d", i,
                           pop_name(in->op), in->pass, x->ready[in->a]);
            x->space[i] = KILN_SPACE_ROW;
            x->ready[i] = in->pass;
            x->redslot[i] = x->nred++;
            continue;
        }
        if (in->space != KILN_SPACE_FULL && in->space != KILN_SPACE_ROW)
            return BAD("instruction %d (%s) has unknown space %d", i, pop_name(in->op), in->space);
        x->space[i] = in->space;
        int rd = -1;
        for (int j = 0; j < na; j++) {
            if (x->ready[ops[j]] > rd) rd = x->ready[ops[j]];
            if (in->space == KILN_SPACE_ROW && x->space[ops[j]] != KILN_SPACE_ROW)
                return BAD("ROW instruction %d (%s) uses FULL instruction %d", i, pop_name(in->op), ops[j]);
        }
        x->ready[i] = rd;
        if (in->op == KILN_POP_LOAD && in->space == KILN_SPACE_ROW)
            for (int d = 0; d < x->ninner; d++)
                if (ST(x, in->a, x->inner[d]) != 0)
                    return BAD("ROW instruction %d loads input %d, which varies along a reduced axis", i, in->a);
    }
    if (!ew && k->out.is_row) {
        if (x->space[k->out_instr] != KILN_SPACE_ROW)
            return BAD("row-valued output stores FULL instruction %d", k->out_instr);
        for (int d = 0; d < x->ninner; d++)
            if (ST(x, x->nio - 1, x->inner[d]) != 0) return BAD("row-valued output has a stride on a reduced axis");
    }
    /* Walk lists: what each pass's walk evaluates. */
    for (int w = 0; w < x->nwalks; w++) {
        int pass = ew ? 0 : w; /* the output walk has pass np: everything is known */
        memset(mark, 0, (size_t)ni);
        if (!ew && w < np) {
            for (int i = 0; i < ni; i++) {
                if (x->redslot[i] >= 0 && k->instr[i].pass == w) {
                    x->red_list[(size_t)w * ni + x->nredw[w]++] = i;
                    KILN_TRY(visit(x, k->instr[i].a, w, pass, mark));
                }
            }
        } else {
            KILN_TRY(visit(x, k->out_instr, w, ew ? 0 : np, mark));
        }
        for (int i = 0; i < ni; i++)
            if (mark[i] && x->space[i] == KILN_SPACE_FULL) x->full_list[(size_t)w * ni + x->nfull[w]++] = i;
    }
    for (int s = 0; s < nstages; s++)
        for (int i = 0; i < ni; i++)
            if (x->space[i] == KILN_SPACE_ROW && x->redslot[i] < 0 && x->ready[i] == s - 1)
                x->row_list[(size_t)s * ni + x->nrow[s]++] = i;
    return KILN_OK;
}

/* Marks for walk w what it needs from `i` when it takes the values kept by earlier walks:
 * FULL instructions to evaluate, the kept ones (keep_walk < w) it stops at, and the ROW
 * values they read. */
static void keep_visit(const xk *x, int i, int w, uint8_t *mark)
{
    if (mark[i]) return;
    mark[i] = 1;
    if (x->space[i] != KILN_SPACE_FULL) return;
    if (x->keep_walk[i] >= 0 && x->keep_walk[i] < w) return;
    const kiln_plan_instr *in = &x->k->instr[i];
    const int32_t ops[3] = {in->a, in->b, in->c};
    for (int j = 0; j < pop_nargs[in->op]; j++) keep_visit(x, ops[j], w, mark);
}

static int64_t op_cost(int op);

/* ROW mode: a FULL instruction of cost 8 (a library function, a division, a generator; not a
 * LOAD) that one walk evaluates and a later walk evaluates again is kept by the first (its
 * block buffer, or a row-sized buffer where a row takes several blocks: exec_impl.h's walk)
 * and taken by the later ones, which then evaluate only what else they need. Softmax along
 * rows so computes exp(x - max(x)) once, in the sum's pass (it ran twice, 23.5 ms for 4096 x
 * 1024 f32 where the exp alone took 9.1; bench/NOTES.md step 63). The values and their
 * order are those computed again: the same bits. KILN_CPU_KEEP=0 keeps none (for measuring). */
static kiln_status analyse_keep(xk *x)
{
    const kiln_plan_kernel *k = x->k;
    const int ni = k->ninstr, nw = x->nwalks;
    x->nkeep = 0;
    if (x->mode != MODE_ROW || nw < 2) return KILN_OK;
    static const char *const ways[] = {"0", "1"};
    int env;
    KILN_TRY(kiln__env_choice(x->ctx, "kiln_eval", "KILN_CPU_KEEP", ways, 2, &env));
    if (env == 0) return KILN_OK;
    int cand = 0;
    for (int i = 0; i < ni && !cand; i++)
        cand = x->space[i] == KILN_SPACE_FULL && k->instr[i].op != KILN_POP_LOAD && op_cost(k->instr[i].op) == 8;
    if (!cand) return KILN_OK;
    size_t bytes = ((size_t)ni * 2 + (size_t)nw * 4 * (size_t)(ni + 1)) * sizeof(int) + (size_t)ni;
    x->kmem = calloc(1, bytes);
    if (!x->kmem) return KILN_ERROR(x->ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel's analysis");
    int *ip = x->kmem;
    x->keep_walk = ip;
    x->keep_slot = ip + ni;
    x->kfull_list = ip + 2 * ni;
    x->take_list = x->kfull_list + (size_t)nw * ni;
    x->keepw_list = x->take_list + (size_t)nw * ni;
    x->kexp_list = x->keepw_list + (size_t)nw * ni;
    x->nkfull = x->kexp_list + (size_t)nw * ni;
    x->ntake = x->nkfull + nw;
    x->nkeepw = x->ntake + nw;
    x->nkexp = x->nkeepw + nw;
    uint8_t *mark = (uint8_t *)(x->nkexp + nw);
    for (int i = 0; i < ni; i++) {
        x->keep_walk[i] = x->keep_slot[i] = -1;
        if (x->space[i] != KILN_SPACE_FULL || k->instr[i].op == KILN_POP_LOAD || op_cost(k->instr[i].op) != 8) continue;
        int first = -1, again = 0;
        for (int w = 0; w < nw; w++)
            for (int t = 0; t < x->nfull[w]; t++)
                if (x->full_list[(size_t)w * ni + t] == i) {
                    if (first < 0)
                        first = w;
                    else
                        again = 1;
                }
        if (!again) continue;
        x->keep_walk[i] = first;
        x->keep_slot[i] = x->nkeep++;
        x->keepw_list[(size_t)first * ni + x->nkeepw[first]++] = i;
    }
    if (x->nkeep == 0) {
        free(x->kmem);
        x->kmem = NULL;
        return KILN_OK;
    }
    for (int w = 0; w < nw; w++) {
        memset(mark, 0, (size_t)ni);
        if (w < k->npasses) {
            for (int t = 0; t < x->nredw[w]; t++) keep_visit(x, k->instr[x->red_list[(size_t)w * ni + t]].a, w, mark);
        } else {
            keep_visit(x, k->out_instr, w, mark);
        }
        for (int i = 0; i < ni; i++) {
            if (!mark[i]) continue;
            if (x->space[i] != KILN_SPACE_FULL)
                x->kexp_list[(size_t)w * ni + x->nkexp[w]++] = i;
            else if (x->keep_walk[i] >= 0 && x->keep_walk[i] < w)
                x->take_list[(size_t)w * ni + x->ntake[w]++] = i;
            else
                x->kfull_list[(size_t)w * ni + x->nkfull[w]++] = i;
        }
    }
    return KILN_OK;
}

/* ---- segments ------------------------------------------------------------------------- */

/* Appends to s the points [start, start + count) of the row-major space spanned by the
 * axes ax[0..na-1] (offsets relative to base_off / base_lin). lanes == 0: segments run
 * along ax[na-1], which is the innermost axis of the domain. lanes > 0: every point is one
 * segment of `lanes` values along the innermost axis (which is not in ax). */
static void gen_segs(const xk *x, const int *ax, int na, int64_t lanes, const int64_t *base_off, int64_t base_lin,
                     int64_t start, int64_t count, seglist *s)
{
    int64_t idx[KILN_MAX_DIMS];
    int64_t r = start;
    for (int a = na - 1; a >= 0; a--) {
        idx[a] = r % x->shape[ax[a]];
        r /= x->shape[ax[a]];
    }
    const int nio = x->nio;
    while (count > 0) {
        int64_t len, adv;
        if (lanes) {
            len = lanes;
            adv = 1;
        } else {
            len = x->shape[ax[na - 1]] - idx[na - 1];
            if (len > count) len = count;
            adv = len;
        }
        int sn = s->n++;
        int64_t *off = s->off + (size_t)sn * nio;
        int64_t lin = base_lin;
        for (int io = 0; io < nio; io++) off[io] = base_off[io];
        for (int a = 0; a < na; a++) {
            int d = ax[a];
            lin += idx[a] * x->lin[d];
            for (int io = 0; io < nio; io++) off[io] += idx[a] * ST(x, io, d);
        }
        s->len[sn] = (int32_t)len;
        s->lin[sn] = lin;
        s->total += len;
        count -= adv;
        if (na == 0) break;
        int a = na - 1;
        idx[a] += adv;
        while (a > 0 && idx[a] >= x->shape[ax[a]]) {
            idx[a] = 0;
            a--;
            idx[a]++;
        }
    }
}

/* Offsets, D-linear and outer-linear index of the point idx (indexed by domain axis) over
 * the axes ax[0..na-1]. */
static void point_at(const xk *x, const int64_t *idx, const int *ax, int na, int64_t *off, int64_t *lin, int64_t *olin)
{
    int64_t l = 0, ol = 0;
    for (int io = 0; io < x->nio; io++) off[io] = 0;
    for (int a = 0; a < na; a++) {
        int d = ax[a];
        l += idx[d] * x->lin[d];
        ol += idx[d] * x->olin[d];
        for (int io = 0; io < x->nio; io++) off[io] += idx[d] * ST(x, io, d);
    }
    *lin = l;
    *olin = ol;
}

/* Advances idx (indexed by domain axis) over the axes ax[0..na-1] by `by` points along the
 * last one (by <= what is left along it). */
static void odo_step(const xk *x, int64_t *idx, const int *ax, int na, int64_t by)
{
    if (na == 0) return;
    int a = na - 1;
    idx[ax[a]] += by;
    while (a > 0 && idx[ax[a]] >= x->shape[ax[a]]) {
        idx[ax[a]] = 0;
        a--;
        idx[ax[a]]++;
    }
}

/* ---- threads --------------------------------------------------------------------------- */

/* Rough relative cost of one instruction at one point, for the pool's decision to wake its
 * threads (kiln__cpu_parallel): libm calls and random numbers count 8, the rest 1. */
static int64_t op_cost(int op)
{
    switch (op) {
    case KILN_POP_EXP:
    case KILN_POP_EXP2:
    case KILN_POP_LOG:
    case KILN_POP_LOG2:
    case KILN_POP_SIGMOID:
    case KILN_POP_TANH:
    case KILN_POP_LOG1P:
    case KILN_POP_EXPM1:
    case KILN_POP_SIN:
    case KILN_POP_COS:
    case KILN_POP_ERF:
    case KILN_POP_POW:
    case KILN_POP_FMOD:
    case KILN_POP_RAND:
    case KILN_POP_RANDN:
    case KILN_POP_BERNOULLI: return 8;
    default: return 1;
    }
}

/* The cost of walk w at one point: its FULL instructions and, for the output walk, the store. */
static int64_t walk_cost(const xk *x, int w)
{
    int64_t c = w == x->nwalks - 1 && !(x->mode != MODE_EW && x->k->out.is_row) ? 1 : 0;
    for (int t = 0; t < x->nfull[w]; t++) c += op_cost(x->k->instr[x->full_list[(size_t)w * x->k->ninstr + t]].op);
    return c;
}

/* The bytes [*lo, *hi) that io's view of the normalized domain touches. */
static void io_range(const xk *x, int io, uintptr_t *lo, uintptr_t *hi)
{
    const kiln_plan_kernel *k = x->k;
    const char *base = io < k->ninputs ? k->inputs[io].base : k->out.base;
    const int64_t es = (int64_t)kiln_dtype_size(io < k->ninputs ? k->inputs[io].dtype : k->out.dtype);
    int64_t a = 0, b = 0;
    for (int d = 0; d < x->nd; d++) {
        const int64_t e = (x->shape[d] - 1) * ST(x, io, d);
        if (e < 0)
            a += e;
        else
            b += e;
    }
    *lo = (uintptr_t)base + (uintptr_t)(a * es); /* wraps back for a < 0 */
    *hi = (uintptr_t)base + (uintptr_t)((b + 1) * es);
}

/* Whether the kernel's points may be shared among threads. Threads own disjoint sets of
 * output points (whole rows, or whole blocks of an element-wise domain, or, chunk by chunk,
 * inner points of a row between barriers), so this holds when no two points store into one
 * element (no stride 0 where the output varies) and every input that may touch the output's
 * bytes reads them through the output's own mapping (in place, the rule above), i.e. each
 * thread reads only elements it alone writes. Kernels from src/expr always pass; any other
 * is run on the calling thread, in the serial order. */
static int split_ok(const xk *x)
{
    const kiln_plan_kernel *k = x->k;
    const int out = x->nio - 1;
    for (int d = 0; d < x->nd; d++)
        if (ST(x, out, d) == 0 && x->shape[d] > 1 && !(x->red[d] && k->out.is_row)) return 0;
    uintptr_t olo, ohi;
    io_range(x, out, &olo, &ohi);
    for (int j = 0; j < k->ninputs; j++) {
        uintptr_t lo, hi;
        io_range(x, j, &lo, &hi);
        if (hi <= olo || ohi <= lo) continue;
        if (k->inputs[j].base != k->out.base || kiln_dtype_size(k->inputs[j].dtype) != kiln_dtype_size(k->out.dtype))
            return 0;
        for (int d = 0; d < x->nd; d++)
            if (ST(x, j, d) != ST(x, out, d)) return 0;
    }
    return 1;
}

/* ---- the typed interpreter ------------------------------------------------------------ */

/* The hot loops (an instruction over a block, the reductions) compiled twice on x86-64 with
 * GCC, for AVX2 and for the baseline, the loader picking one (ifunc): 10-20 % less CPU time
 * on batch norm and relu(A*B+bias) on a 2-core AVX-512 machine. The same bits either way:
 * kiln builds with -ffp-contract=off and without -ffast-math, so vectors neither fuse nor
 * reorder the arithmetic. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define KILN_CPU_HOT __attribute__((target_clones("avx2", "default")))
#else
#define KILN_CPU_HOT
#endif

/* f32's tanh, expm1 and log1p: src/cpu/vmath.h's, which GCC vectorizes (3.4x, 2.9x and 1.6x
 * libm's speed on AVX2, correctly rounded but for ~1e-12 relative; the baseline clone's log1p is
 * 1.4x slower than libm's) */
#define T             float
#define SFX(name)     name##_f32
#define KF(fn)        fn##f
#define KV(fn)        kiln_vm_##fn##f
#define KILN_EXEC_F64 0
#include "cpu/exec_impl.h"
#undef T
#undef SFX
#undef KF
#undef KV
#undef KILN_EXEC_F64

#define T             double
#define SFX(name)     name##_f64
#define KF(fn)        fn
#define KV(fn)        fn
#define KILN_EXEC_F64 1
#include "cpu/exec_impl.h"
#undef T
#undef SFX
#undef KF
#undef KV
#undef KILN_EXEC_F64

/* ---- entry points --------------------------------------------------------------------- */

kiln_status kiln__cpu_exec_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k)
{
    if (!k) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'kernel': NULL");
    xk x;
    memset(&x, 0, sizeof x);
    x.ctx = ctx;
    x.k = k;
    KILN_TRY(check_kernel(&x));
    x.nio = k->ninputs + 1;
    x.st = malloc((size_t)x.nio * KILN_MAX_DIMS * sizeof(int64_t));
    if (!x.st) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel's strides");
    int nothing = 0;
    normalize(&x, &nothing);
    kiln_status st = KILN_OK;
    if (!nothing) {
        if (!k->out.base) st = KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': the output has no address");
        /* (with an empty inner space, an empty input legitimately has no address) */
        for (int j = 0; j < k->ninputs && st == KILN_OK && x.inner_n > 0; j++)
            if (!k->inputs[j].base)
                st = KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': input %d has no address", j);
    }
    if (!nothing && st == KILN_OK) st = analyse(&x);
    if (!nothing && st == KILN_OK) st = analyse_keep(&x);
    if (!nothing && st == KILN_OK) x.split_ok = split_ok(&x);
    if (!nothing && st == KILN_OK) st = k->compute_f64 ? run_f64(&x) : run_f32(&x);
    free(x.kmem);
    free(x.mem);
    free(x.st);
    return st;
}

kiln_status kiln__cpu_run_plan(kiln_ctx *ctx, const kiln_plan *plan)
{
    if (!plan) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'plan': NULL");
    if (plan->nkernels < 0 || (plan->nkernels > 0 && !plan->kernels))
        return KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': bad kernel list (%d kernels)", plan->nkernels);
    for (int i = 0; i < plan->nkernels; i++) KILN_TRY(kiln__cpu_exec_kernel(ctx, &plan->kernels[i]));
    return KILN_OK;
}
