/*
 * src/cuda/codegen.c — turns one kernel of a plan (src/expr/plan.h) into CUDA C, gets it
 * compiled through the kernel cache (nvrtc.c) and launches it on the context's stream.
 *
 * It computes what the CPU interpreter computes: the same domain, rows, spaces, passes,
 * strides, compute type, Philox indices and store rounding. What it is not: a planner (the
 * plan is taken as it is) or a place for op-specific hand-written kernels.
 *
 * Layout first: axes of size 1 are dropped and neighbouring axes merged where every tensor
 * (inputs, output, and the domain's own row-major index) steps through them as one. Then:
 *  - element-wise kernels (no reduced axis): a grid-stride loop, each thread computing UNR
 *    points before storing them (loads of several points in flight);
 *  - reduction kernels: ROW mode when the innermost axis is reduced (blockDim.x threads walk
 *    one row, blockDim.y rows per block, warp-shuffle + shared-memory reductions; a row that
 *    needs 32 threads or fewer takes a segment of W lanes of a warp, 32 / W rows a warp,
 *    reduced by shuffles within the segment alone) or COLUMN
 *    mode when it is not (blockDim.x consecutive rows side by side so loads are coalesced,
 *    blockDim.y threads split each row; with lanes, where the columns are contiguous and it
 *    pays, a thread owns VEC neighbouring rows, loaded 16 bytes at a time, each with its own
 *    accumulators and row values, vr<i>[VEC]). Every pass walks the row in tiles of nw*KMAX
 *    points; when the row fits in one tile, the FULL loads used by several passes stay in
 *    registers, so the row is read from memory once, and so do costly values a pass computes
 *    that a later one uses again (softmax's exp: keep_values). Longer rows are walked again
 *    per pass, computing them again (still one kernel).
 *  - split reductions: where too few blocks would walk too long rows (a sum to one value was
 *    one block: one SM walking the whole tensor), the rows are cut into G slices of whole
 *    tiles along the grid's y. Each block reduces its slice; its partial goes to a
 *    workspace; a grid barrier (a cooperative launch: every block resident) and every block
 *    folds the G partials of its row in slice order, so all blocks hold the same value and
 *    the result does not depend on timing. Later passes and the output pass then run on the
 *    block's own slice (in registers where the slice is one tile). G depends on the row
 *    length, the rows and how many blocks the device holds at once: the same shape on the
 *    same device always gives the same bits.
 * Sizes, strides, pointers, constants, Philox streams and the seed are kernel ARGUMENTS: a
 * flat array of 64-bit words passed by value. The source depends only on the structure
 * (which strides are 0 or 1, ops, dtypes, modes, the vector width the sizes allow, and in ROW
 * mode the row's length class: a segment of 1-32 lanes, a 16-bit worker's bytes), so a new eps,
 * or a new shape of the same class, does not recompile.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/codegen.h"

/* ---- layout ----------------------------------------------------------------------------- */

void kiln__cg_layout_free(layout *l)
{
    if (l->st != l->st_in) free(l->st);
    if (l->w_base != l->w_base_in) free(l->w_base);
    if (l->w_st != l->w_st_in) free(l->w_st);
}

kiln_status kiln__cg_layout_build(kiln_ctx *ctx, const kiln_plan_kernel *k, layout *l)
{
    memset(l, 0, sizeof *l);
    int ni = k->ninputs;
    l->nt = ni + 2;
    if (l->nt <= LAYOUT_NT) {
        l->st = l->st_in;
        l->w_base = l->w_base_in;
        l->w_st = l->w_st_in;
    } else {
        l->st = calloc((size_t)l->nt, sizeof *l->st);
        l->w_base = calloc((size_t)l->nt, sizeof *l->w_base);
        l->w_st = calloc((size_t)l->nt, sizeof *l->w_st);
    }
    if (!l->st || !l->w_base || !l->w_st) {
        kiln__cg_layout_free(l);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for a kernel layout");
    }
    /* domain row-major strides */
    int64_t dst[MAXD];
    int64_t acc = 1;
    for (int a = k->ndim - 1; a >= 0; a--) {
        dst[a] = acc;
        acc *= k->shape[a];
    }
    int nd = 0;
    for (int a = 0; a < k->ndim; a++) {
        if (k->shape[a] == 1) continue;
        l->size[nd] = k->shape[a];
        l->red[nd] = (k->reduce_mask >> a) & 1u;
        for (int t = 0; t < ni; t++) l->st[t][nd] = k->inputs[t].strides[a];
        l->st[ni][nd] = k->out.strides[a];
        l->st[ni + 1][nd] = dst[a];
        nd++;
    }
    /* merge axis a into a+1 when every tensor walks them as one */
    for (int a = nd - 2; a >= 0; a--) {
        if (l->red[a] != l->red[a + 1]) continue;
        int ok = 1;
        for (int t = 0; t < l->nt && ok; t++)
            if (l->st[t][a] != l->st[t][a + 1] * l->size[a + 1]) ok = 0;
        if (!ok) continue;
        l->size[a + 1] *= l->size[a];
        for (int b = a; b < nd - 1; b++) {
            l->size[b] = l->size[b + 1];
            l->red[b] = l->red[b + 1];
            for (int t = 0; t < l->nt; t++) l->st[t][b] = l->st[t][b + 1];
        }
        nd--;
    }
    l->nd = nd;
    l->R = 1;
    l->L = 1;
    for (int a = 0; a < nd; a++) {
        if (l->red[a])
            l->L *= l->size[a];
        else
            l->R *= l->size[a];
    }
    /* 32-bit index math when every index and offset stays far below 2^31 */
    int64_t lim = (int64_t)1 << 29;
    int small = l->R * l->L < lim;
    for (int t = 0; t < l->nt && small; t++) {
        int64_t span = 0;
        for (int a = 0; a < nd; a++) {
            int64_t s = l->st[t][a] < 0 ? -l->st[t][a] : l->st[t][a];
            if (s > lim) {
                small = 0;
                break;
            }
            span += s * (l->size[a] - 1);
            if (span >= lim) small = 0;
        }
    }
    l->idx32 = small;
    /* words: 0 seed, 1 R, 2 L, then sizes, then per tensor base + nonzero strides */
    int w = 3;
    for (int a = 0; a < nd; a++) l->w_size[a] = w++;
    for (int t = 0; t < l->nt; t++) {
        l->w_base[t] = (t == ni + 1) ? -1 : w++;
        for (int a = 0; a < nd; a++) l->w_st[t][a] = l->st[t][a] != 0 ? w++ : -1;
    }
    l->w_consts = w;
    w += k->nconsts;
    l->w_streams = w;
    w += k->nstreams;
    l->w_sr = w++;
    l->w_ws = w++;
    l->w_sync = w++;
    l->nwords = w;
    return KILN_OK;
}

void kiln__cg_layout_fill(kiln_ctx *ctx, const kiln_plan_kernel *k, const layout *l, uint64_t *words)
{
    int ni = k->ninputs;
    words[0] = ctx->seed;
    words[1] = (uint64_t)l->R;
    words[2] = (uint64_t)l->L;
    for (int a = 0; a < l->nd; a++) words[l->w_size[a]] = (uint64_t)l->size[a];
    for (int t = 0; t < l->nt; t++) {
        if (l->w_base[t] >= 0) {
            const char *base = t < ni ? k->inputs[t].base : k->out.base;
            words[l->w_base[t]] = (uint64_t)(uintptr_t)base;
        }
        for (int a = 0; a < l->nd; a++)
            if (l->w_st[t][a] >= 0) words[l->w_st[t][a]] = (uint64_t)l->st[t][a];
    }
    for (int c = 0; c < k->nconsts; c++) {
        uint64_t bits;
        memcpy(&bits, &k->consts[c], 8);
        words[l->w_consts + c] = bits;
    }
    for (int s = 0; s < k->nstreams; s++) words[l->w_streams + s] = k->streams[s];
    words[l->w_sr] = k->out.sr_stream;
    words[l->w_ws] = 0; /* a split reduction's launch sets them */
    words[l->w_sync] = 0;
}

/* ---- dtype helpers ------------------------------------------------------------------------ */

const char *kiln__cg_storage_type(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F32: return "float";
    case KILN_DTYPE_F16: return "unsigned short";
    case KILN_DTYPE_BF16: return "unsigned short";
    case KILN_DTYPE_F64: return "double";
    case KILN_DTYPE_I8: return "signed char";
    case KILN_DTYPE_U8: return "unsigned char";
    case KILN_DTYPE_I32: return "int";
    default: return NULL;
    }
}

/* Expression converting storage value `x` (text) of dtype dt to CT. */
static void emit_load_conv(kiln_sbuf *b, kiln_dtype dt, const char *x)
{
    switch (dt) {
    case KILN_DTYPE_F16: kiln__sbuf_printf(b, "(CT)kiln_h2f(%s)", x); break;
    case KILN_DTYPE_BF16: kiln__sbuf_printf(b, "(CT)kiln_bf2f(%s)", x); break;
    default: kiln__sbuf_printf(b, "(CT)(%s)", x); break;
    }
}

/* Expression rounding CT value `v` to dtype dt's storage (round to nearest). */
static void emit_store_conv(kiln_sbuf *b, kiln_dtype dt, int f64, const char *v)
{
    switch (dt) {
    case KILN_DTYPE_F32: kiln__sbuf_printf(b, "(float)(%s)", v); break;
    case KILN_DTYPE_F64: kiln__sbuf_printf(b, "(double)(%s)", v); break;
    case KILN_DTYPE_F16:
        if (f64)
            kiln__sbuf_printf(b, "(unsigned short)kiln_f64_to_f16_rn(%s)", v);
        else
            kiln__sbuf_printf(b, "kiln_f2h(%s)", v);
        break;
    case KILN_DTYPE_BF16:
        if (f64)
            kiln__sbuf_printf(b, "(unsigned short)kiln_f64_to_bf16_rn(%s)", v);
        else
            kiln__sbuf_printf(b, "(unsigned short)kiln_f32_to_bf16_rn(%s)", v);
        break;
    case KILN_DTYPE_I8: kiln__sbuf_printf(b, "kiln_to_i8(%s)", v); break;
    case KILN_DTYPE_U8: kiln__sbuf_printf(b, "kiln_to_u8(%s)", v); break;
    case KILN_DTYPE_I32: kiln__sbuf_printf(b, "kiln_to_i32(%s)", v); break;
    default: kiln__sbuf_puts(b, "0"); break;
    }
}

/* ---- instruction analysis -------------------------------------------------------------- */


void kiln__cg_analysis_free(analysis *a)
{
    if (a->level != a->level_in) free(a->level);
    if (a->first != a->first_in) free(a->first);
    if (a->multi != a->multi_in) free(a->multi);
    if (a->keep != a->keep_in) free(a->keep);
    if (a->chk != a->chk_in) free(a->chk);
    if (a->need != a->need_in) free(a->need);
}

int kiln__cg_arg_of(const kiln_plan_instr *in, int j)
{
    return j == 0 ? in->a : j == 1 ? in->b : in->c;
}

int kiln__cg_instr_nargs(const kiln_plan_instr *in)
{
    kiln_pop op = (kiln_pop)in->op;
    if (op == KILN_POP_LOAD || op == KILN_POP_CONST || op == KILN_POP_RAND || op == KILN_POP_RANDN ||
        op == KILN_POP_BERNOULLI)
        return 0;
    return kiln__pop_nargs(op);
}

/* Marks in need[] the FULL instructions that `root` (FULL) depends on without crossing ROW
 * values. */
static void mark_full(const kiln_plan_kernel *k, int root, char *need)
{
    if (root < 0 || k->instr[root].space != KILN_SPACE_FULL || need[root]) return;
    need[root] = 1;
    const kiln_plan_instr *in = &k->instr[root];
    int na = kiln__cg_instr_nargs(in);
    for (int j = 0; j < na; j++) mark_full(k, kiln__cg_arg_of(in, j), need);
}

/* What recomputing an instruction costs, roughly: library functions, divisions and the
 * generators (Philox) 8, the rest 1. */
int kiln__cg_op_cost(kiln_pop op)
{
    switch (op) {
    case KILN_POP_SQRT: case KILN_POP_RSQRT: case KILN_POP_RECIP: case KILN_POP_EXP: case KILN_POP_EXP2:
    case KILN_POP_LOG: case KILN_POP_LOG2: case KILN_POP_SIGMOID: case KILN_POP_TANH: case KILN_POP_LOG1P:
    case KILN_POP_EXPM1: case KILN_POP_SIN: case KILN_POP_COS: case KILN_POP_ERF: case KILN_POP_DIV:
    case KILN_POP_POW: case KILN_POP_FMOD: case KILN_POP_RAND: case KILN_POP_RANDN: case KILN_POP_BERNOULLI:
        return 8;
    default: return 1;
    }
}

/* mark_full for phase ph with the kept values: an instruction an earlier phase keeps
 * (an->keep[x] < ph) is marked 2, taken as it is, its operands not walked. */
static void mark_kept(const kiln_plan_kernel *k, const analysis *an, int root, int ph, char *need)
{
    if (root < 0 || k->instr[root].space != KILN_SPACE_FULL || need[root]) return;
    if (an->keep[root] >= 0 && an->keep[root] < ph) {
        need[root] = 2;
        return;
    }
    need[root] = 1;
    const kiln_plan_instr *in = &k->instr[root];
    int na = kiln__cg_instr_nargs(in);
    for (int j = 0; j < na; j++) mark_kept(k, an, kiln__cg_arg_of(in, j), ph, need);
}

/* need[] (cleared first) for phase ph: what pass ph's reductions reduce, or (ph = npasses)
 * the output where it is not a row value, marked by mark_kept. */
void kiln__cg_mark_phase(const kiln_plan_kernel *k, const analysis *an, int ph, char *need)
{
    memset(need, 0, (size_t)(k->ninstr > 0 ? k->ninstr : 0));
    if (ph < k->npasses) {
        for (int i = 0; i < k->ninstr; i++)
            if (kiln__pop_is_reduction((kiln_pop)k->instr[i].op) && k->instr[i].pass == ph)
                mark_kept(k, an, k->instr[i].a, ph, need);
    } else if (!k->out.is_row) {
        mark_kept(k, an, k->out_instr, ph, need);
    }
}

kiln_status kiln__cg_analyse(kiln_ctx *ctx, const kiln_plan_kernel *k, analysis *an)
{
    memset(an, 0, sizeof *an);
    int n = k->ninstr;
    an->n = n;
    if (n <= ANALYSIS_N) { /* zeroed by the memset */
        an->level = an->level_in;
        an->first = an->first_in;
        an->multi = an->multi_in;
        an->keep = an->keep_in;
        an->chk = an->chk_in;
        an->need = an->need_in;
    } else {
        an->level = calloc((size_t)n + 1, sizeof(int));
        an->first = calloc((size_t)n + 1, sizeof(int));
        an->multi = calloc((size_t)n + 1, sizeof(int));
        an->keep = calloc((size_t)n + 1, sizeof(int));
        an->chk = calloc((size_t)n + 1, sizeof(int));
        an->need = calloc((size_t)n + 1, 1);
    }
    if (!an->level || !an->first || !an->multi || !an->keep || !an->chk || !an->need) {
        kiln__cg_analysis_free(an);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for kernel analysis");
    }
    for (int i = 0; i < n; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        int na = kiln__cg_instr_nargs(in);
        for (int j = 0; j < na; j++) {
            int x = kiln__cg_arg_of(in, j);
            if (x < 0 || x >= i)
                return kiln__cg_analysis_free(an),
                       KILN_ERROR(ctx, KILN_ERR_INTERNAL, "argument 'plan': instr %d operand %d is %d (not SSA)", i,
                                  j, x);
        }
        an->first[i] = -1;
        an->keep[i] = -1;
        an->chk[i] = -1;
        if (in->space == KILN_SPACE_ROW) {
            int lv = 0;
            if (kiln__pop_is_reduction((kiln_pop)in->op)) {
                lv = in->pass + 1;
            } else {
                for (int j = 0; j < na; j++) {
                    int x = kiln__cg_arg_of(in, j);
                    if (k->instr[x].space == KILN_SPACE_FULL)
                        return kiln__cg_analysis_free(an),
                               KILN_ERROR(ctx, KILN_ERR_INTERNAL,
                                          "argument 'plan': ROW instr %d uses FULL instr %d", i, x);
                    if (an->level[x] > lv) lv = an->level[x];
                }
            }
            an->level[i] = lv;
        }
    }
    /* phases using each FULL load */
    int nph = k->npasses + 1;
    for (int ph = 0; ph < nph; ph++) {
        kiln__cg_mark_phase(k, an, ph, an->need); /* (nothing kept yet: mark_full's marks) */
        for (int i = 0; i < n; i++) {
            if (!an->need[i] || k->instr[i].op != KILN_POP_LOAD) continue;
            if (an->first[i] < 0)
                an->first[i] = ph;
            else
                an->multi[i] = 1;
        }
    }
    for (int i = 0; i < n; i++) an->ncached += an->multi[i];
    return KILN_OK;
}

/* ---- emitting instructions ------------------------------------------------------------- */

typedef struct gen {
    kiln_sbuf *b;
    const kiln_plan_kernel *k;
    const layout *l;
    const analysis *an;
    int f64;
    int elementwise;
    int vec;        /* lanes per point: 1, or 2..8 consecutive elements along the last axis */
    int split;      /* reductions: rows split across the grid's y (blockIdx.y = slice) */
    int nred;       /* reduction instructions: a split kernel's partials are nred x R x G */
    int colvec;     /* COLUMN mode with vec > 1: a worker owns VEC neighbouring rows (columns) */
    int red_lanes;  /* with lanes: value reductions of all VEC rows at once (kiln_col_red_lanes) */
    int seg;        /* ROW mode on short rows: W lanes a row (kiln_seg_*), 0 = more than a warp */
    int rdiv;       /* kplan's: kept values divided by row values through their reciprocals */
    int div_fast;   /* emitting the output walk that divides through the reciprocals (fast_div) */
    int shift;      /* ROW mode's rows off the vectors' alignment: each row walked from the aligned
                     * vector holding its first point (row_shift; -1 none, else the tensor whose
                     * address gives the row's shift sh) */
    int smem_row;   /* ROW mode's row cache (row_cache): the loads several phases use kept in
                     * shared memory (sc<i>[j], after the block reductions' slot a warp); 1 the
                     * whole row, 2 its first Lc vectors (the rest from global memory) */
    int smem_thread;
    char *need_all; /* a phase's instructions with nothing kept (the row longer than a tile) */
} gen;

/* Whether FULL instruction i divides a value an earlier pass computed (an.chk: kept, or
 * computed again here) by a row value, which the output's walk does through the row value's
 * reciprocal (kiln_div_row; row_divisions): f32 arithmetic, row values held as scalars. */
static int fast_div(const gen *g, int i)
{
    const kiln_plan_kernel *k = g->k;
    const kiln_plan_instr *in = &k->instr[i];
    return g->rdiv && !g->f64 && !g->colvec && in->op == KILN_POP_DIV && in->space == KILN_SPACE_FULL &&
           k->instr[in->b].space == KILN_SPACE_ROW && g->an->chk[in->a] >= 0;
}

/* Whether instruction x is a fast_div's divisor (operand 1: its reciprocal ry<x>) or dividend
 * (operand 0: the flag okn<x> that every point the thread computed is in kiln_div_row's range). */
static int fast_div_operand(const gen *g, int x, int operand)
{
    for (int i = 0; i < g->k->ninstr; i++)
        if (fast_div(g, i) && (operand ? g->k->instr[i].b : g->k->instr[i].a) == x) return 1;
    return 0;
}

static const char *fn_name(int f64, const char *base)
{
    static char buf[8][32];
    static int slot;
    char *s = buf[slot++ & 7];
    snprintf(s, 32, "%s%s", base, f64 ? "" : "f");
    return s;
}

/* Whether tensor t steps along the row (stride 1 on the last axis) with vectors of vec > 1
 * elements: read / written vec at a time (is_vec; row_cache_load_bytes sizes the row cache by it). */
static int steps_along_row(const layout *l, int vec, int t)
{
    return vec > 1 && l->nd > 0 && l->st[t][l->nd - 1] == 1;
}

/* Whether tensor t is read / written VEC elements at a time. */
static int is_vec(const gen *g, int t)
{
    if (t == g->k->ninputs && g->colvec && g->k->out.is_row) return 0; /* one value a lane */
    return steps_along_row(g->l, g->vec, t);
}

/* The bytes a vector of the row cache's load instr i (an.multi[i]): as is_vec reads it. */
int kiln__cg_row_cache_load_bytes(const kiln_plan_kernel *k, const layout *l, int vec, int i)
{
    int t = k->instr[i].a;
    return (int)kiln_dtype_size(k->inputs[t].dtype) * (steps_along_row(l, vec, t) ? vec : 1);
}

/* The unsigned type of n bytes (a vector of VEC elements). */
static const char *vec_type(size_t n)
{
    switch (n) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned int";
    case 8: return "uint2";
    case 16: return "uint4";
    default: return NULL;
    }
}

/* Emits "CT v<i> = <expr>;" for instruction i; `lin` is the Philox index expression of the
 * instruction's space. LOADs other than vector lanes are emitted by emit_loads. */
static void emit_instr(gen *g, int i, const char *lin)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const kiln_plan_instr *in = &k->instr[i];
    int A = in->a, B = in->b, C = in->c;
    int f64 = g->f64;
    kiln__sbuf_printf(b, "      CT v%d = ", i);
    switch ((kiln_pop)in->op) {
    case KILN_POP_LOAD: {
        /* loads are emitted by emit_loads; here only the lane of a vector load */
        char x[64];
        snprintf(x, sizeof x, "u%d.e[l]", i);
        emit_load_conv(b, k->inputs[A].dtype, x);
        break;
    }
    case KILN_POP_CONST: kiln__sbuf_printf(b, "c%d", A); break;
    case KILN_POP_NEG: kiln__sbuf_printf(b, "-v%d", A); break;
    case KILN_POP_ABS: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "fabs"), A); break;
    case KILN_POP_SQR: kiln__sbuf_printf(b, "v%d * v%d", A, A); break;
    case KILN_POP_SQRT: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "sqrt"), A); break;
    case KILN_POP_RSQRT: kiln__sbuf_printf(b, "(CT)1 / %s(v%d)", fn_name(f64, "sqrt"), A); break;
    case KILN_POP_RECIP: kiln__sbuf_printf(b, "(CT)1 / v%d", A); break;
    case KILN_POP_EXP: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "exp"), A); break;
    case KILN_POP_EXP2: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "exp2"), A); break;
    case KILN_POP_LOG: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "log"), A); break;
    case KILN_POP_LOG2: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "log2"), A); break;
    case KILN_POP_SIGMOID: kiln__sbuf_printf(b, "(CT)1 / ((CT)1 + %s(-v%d))", fn_name(f64, "exp"), A); break;
    case KILN_POP_TANH: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "tanh"), A); break;
    case KILN_POP_LOG1P: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "log1p"), A); break;
    case KILN_POP_EXPM1: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "expm1"), A); break;
    case KILN_POP_SIN: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "sin"), A); break;
    case KILN_POP_COS: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "cos"), A); break;
    case KILN_POP_ERF: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "erf"), A); break;
    case KILN_POP_FLOOR: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "floor"), A); break;
    case KILN_POP_CEIL: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "ceil"), A); break;
    case KILN_POP_RINT: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "rint"), A); break;
    case KILN_POP_TRUNC: kiln__sbuf_printf(b, "%s(v%d)", fn_name(f64, "trunc"), A); break;
    case KILN_POP_RELU: kiln__sbuf_printf(b, "v%d < (CT)0 ? (CT)0 : v%d", A, A); break;
    case KILN_POP_FINITE: kiln__sbuf_printf(b, "(v%d - v%d) == (CT)0 ? (CT)1 : (CT)0", A, A); break;
    case KILN_POP_SIGN:
        kiln__sbuf_printf(b, "v%d > (CT)0 ? (CT)1 : v%d < (CT)0 ? (CT)-1 : v%d", A, A, A);
        break;
    case KILN_POP_CAST: {
        char v[32];
        snprintf(v, sizeof v, "v%d", A);
        kiln_dtype dt = (kiln_dtype)in->dtype;
        if (dt == KILN_DTYPE_F16 && !f64) {
            kiln__sbuf_printf(b, "(CT)kiln_h2f(kiln_f2h(v%d))", A);
        } else if (dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16) {
            kiln__sbuf_puts(b, dt == KILN_DTYPE_F16 ? "(CT)kiln_h2f(" : "(CT)kiln_bf2f(");
            emit_store_conv(b, dt, f64, v);
            kiln__sbuf_puts(b, ")");
        } else {
            kiln__sbuf_puts(b, "(CT)(");
            emit_store_conv(b, dt, f64, v);
            kiln__sbuf_puts(b, ")");
        }
        break;
    }
    case KILN_POP_ADD: kiln__sbuf_printf(b, "v%d + v%d", A, B); break;
    case KILN_POP_SUB: kiln__sbuf_printf(b, "v%d - v%d", A, B); break;
    case KILN_POP_MUL: kiln__sbuf_printf(b, "v%d * v%d", A, B); break;
    case KILN_POP_DIV:
        if (g->div_fast && fast_div(g, i))
            kiln__sbuf_printf(b, "kiln_div_row(v%d, v%d, ry%d)", A, B, B);
        else
            kiln__sbuf_printf(b, "v%d / v%d", A, B);
        break;
    case KILN_POP_POW: kiln__sbuf_printf(b, "%s(v%d, v%d)", fn_name(f64, "pow"), A, B); break;
    case KILN_POP_FMOD: kiln__sbuf_printf(b, "%s(v%d, v%d)", fn_name(f64, "fmod"), A, B); break;
    case KILN_POP_MAX: kiln__sbuf_printf(b, "kiln_op_max::f(v%d, v%d)", A, B); break;
    case KILN_POP_MIN: kiln__sbuf_printf(b, "kiln_op_min::f(v%d, v%d)", A, B); break;
    case KILN_POP_EQ: kiln__sbuf_printf(b, "v%d == v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_NE: kiln__sbuf_printf(b, "v%d != v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_LT: kiln__sbuf_printf(b, "v%d < v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_LE: kiln__sbuf_printf(b, "v%d <= v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_GT: kiln__sbuf_printf(b, "v%d > v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_GE: kiln__sbuf_printf(b, "v%d >= v%d ? (CT)1 : (CT)0", A, B); break;
    case KILN_POP_WHERE: kiln__sbuf_printf(b, "v%d != (CT)0 ? v%d : v%d", A, B, C); break;
    case KILN_POP_RAND:
        kiln__sbuf_printf(b, "(CT)kiln_rng_uniform(seed, s%d, (kiln_w64)(%s))", A, lin);
        break;
    case KILN_POP_RANDN:
        kiln__sbuf_printf(b, "(CT)kiln_rng_normal(seed, s%d, (kiln_w64)(%s))", A, lin);
        break;
    case KILN_POP_BERNOULLI:
        kiln__sbuf_printf(b, "(CT)kiln_rng_bernoulli(seed, s%d, (kiln_w64)(%s), (float)c%d)", A, lin, B);
        break;
    default: kiln__sbuf_puts(b, "(CT)0 /* reduction: set elsewhere */"); break;
    }
    kiln__sbuf_puts(b, ";\n");
}

/* The value to store for CT value `v` (text), Philox index `lin` for stochastic rounding. */
static void emit_store_value(gen *g, const char *v, const char *lin)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_output *o = &g->k->out;
    if (o->round == KILN_ROUND_STOCHASTIC && (o->dtype == KILN_DTYPE_F16 || o->dtype == KILN_DTYPE_BF16)) {
        kiln__sbuf_printf(b, "(unsigned short)kiln_f32_to_%s_sr((float)(%s), kiln_rng_bits(seed, srs, (kiln_w64)(%s)))",
                          o->dtype == KILN_DTYPE_F16 ? "f16" : "bf16", v, lin);
    } else {
        emit_store_conv(b, o->dtype, g->f64, v);
    }
}

/* Declarations at kernel start: sizes, pointers, strides, constants, streams. */
static void emit_header(gen *g)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const layout *l = g->l;
    int ni = k->ninputs;
    kiln__sbuf_puts(b, "  const kiln_w64 seed = p.w[0]; (void)seed;\n");
    if (g->shift >= 0) /* the row shift: L, the row's vectors, follows from its start (gen_reduction) */
        kiln__sbuf_puts(b, "  const IDX R = (IDX)p.w[1]; const IDX Lel = (IDX)p.w[2];\n");
    else
        kiln__sbuf_puts(b, "  const IDX R = (IDX)p.w[1]; const IDX L = (IDX)p.w[2]; (void)L;\n");
    for (int a = 0; a < l->nd; a++) kiln__sbuf_printf(b, "  const IDX S%d = (IDX)p.w[%d]; (void)S%d;\n", a, l->w_size[a], a);
    for (int t = 0; t <= ni; t++) {
        kiln_dtype dt = t < ni ? k->inputs[t].dtype : k->out.dtype;
        if (t < ni)
            kiln__sbuf_printf(b, "  const %s *__restrict__ in%d = (const %s *)p.w[%d];\n", kiln__cg_storage_type(dt), t,
                              kiln__cg_storage_type(dt), l->w_base[t]);
        else
            kiln__sbuf_printf(b, "  %s *outp = (%s *)p.w[%d];\n", kiln__cg_storage_type(dt), kiln__cg_storage_type(dt), l->w_base[t]);
    }
    for (int t = 0; t < l->nt; t++)
        for (int a = 0; a < l->nd; a++)
            if (l->w_st[t][a] >= 0) {
                if (l->st[t][a] == 1)
                    kiln__sbuf_printf(b, "  const IDX T%d_%d = 1;\n", t, a);
                else
                    kiln__sbuf_printf(b, "  const IDX T%d_%d = (IDX)(long long)p.w[%d];\n", t, a, l->w_st[t][a]);
            }
    for (int c = 0; c < k->nconsts; c++)
        kiln__sbuf_printf(b, "  const CT c%d = (CT)__longlong_as_double((long long)p.w[%d]); (void)c%d;\n", c,
                          l->w_consts + c, c);
    for (int s = 0; s < k->nstreams; s++)
        kiln__sbuf_printf(b, "  const kiln_w64 s%d = p.w[%d];\n", s, l->w_streams + s);
    kiln__sbuf_printf(b, "  const kiln_w64 srs = p.w[%d]; (void)srs;\n", l->w_sr);
}

/* Offsets of every tensor for the coordinates of `idx` over the axes with red == want;
 * names "<pre><t>". Declares c_<pre><a> coordinates. */
static void emit_offsets(gen *g, const char *idx, int want, const char *pre, const char *indent)
{
    kiln_sbuf *b = g->b;
    const layout *l = g->l;
    int axes[MAXD], na = 0;
    for (int a = 0; a < l->nd; a++)
        if (l->red[a] == want) axes[na++] = a;
    if (na == 0) {
        for (int t = 0; t < l->nt; t++) kiln__sbuf_printf(b, "%sconst IDX %s%d = 0; (void)%s%d;\n", indent, pre, t, pre, t);
        return;
    }
    kiln__sbuf_printf(b, "%sIDX %st_ = %s;\n", indent, pre, idx);
    for (int j = na - 1; j >= 1; j--) {
        int a = axes[j];
        kiln__sbuf_printf(b, "%sconst IDX %sc%d = (%st_ %% S%d)%s; %st_ /= S%d;\n", indent, pre, a, pre, a,
                          (a == l->nd - 1 && g->vec > 1) ? " * VEC" : "", pre, a);
    }
    kiln__sbuf_printf(b, "%sconst IDX %sc%d = %st_%s;\n", indent, pre, axes[0], pre,
                      (na == 1 && axes[0] == l->nd - 1 && g->vec > 1) ? " * VEC" : "");
    for (int t = 0; t < l->nt; t++) {
        kiln__sbuf_printf(b, "%sconst IDX %s%d = 0", indent, pre, t);
        for (int j = 0; j < na; j++) {
            int a = axes[j];
            if (l->w_st[t][a] >= 0) kiln__sbuf_printf(b, " + %sc%d * T%d_%d", pre, a, t, a);
        }
        kiln__sbuf_printf(b, "; (void)%s%d;\n", pre, t);
    }
}

/* Union types of the vector loads / stores: U<t> { VT v; ST e[VEC]; } for each tensor. */
static void emit_unions(gen *g)
{
    const kiln_plan_kernel *k = g->k;
    int ni = k->ninputs;
    kiln__sbuf_printf(g->b, "#define VEC %d\n", g->vec);
    for (int t = 0; t <= ni; t++) {
        kiln_dtype dt = t < ni ? k->inputs[t].dtype : k->out.dtype;
        size_t es = kiln_dtype_size(dt);
        int vec = is_vec(g, t) ? g->vec : 1;
        kiln__sbuf_printf(g->b, "union U%d { %s v; %s e[%d]; };\n", t, vec_type(es * (size_t)vec), kiln__cg_storage_type(dt), vec);
    }
}

/* Loads of the FULL (or, element-wise, every) LOAD instruction marked in need[], at point
 * offsets "<ro>%d + <io>%d". cache: analysis-driven register caching across passes
 * (reductions), with `phase` the current phase. */
static void emit_loads(gen *g, const char *need, int phase, int reduction)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const analysis *an = g->an;
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (!need[i] || in->op != KILN_POP_LOAD) continue;
        if (reduction && in->space != KILN_SPACE_FULL) continue;
        int t = in->a;
        char off[64];
        if (reduction)
            snprintf(off, sizeof off, "ro%d + io%d", t, t);
        else
            snprintf(off, sizeof off, "ro%d", t);
        int cache = reduction && an->multi[i] ? (an->first[i] == phase ? 1 : 2) : 0;
        if (cache == 2 && g->smem_row == 1) { /* the row cache: stored by the load's first phase */
            kiln__sbuf_printf(b, "      U%d u%d; u%d%s = sc%d[j];\n", t, i, i, is_vec(g, t) ? ".v" : "", i);
            continue;
        }
        /* a later phase's source other than the row: the register cache's, or the partial row
         * cache's (its first Lc vectors) */
        const char *kcond = g->smem_row == 2 ? "j < Lc" : "fits";
        char ksrc[32];
        snprintf(ksrc, sizeof ksrc, g->smem_row == 2 ? "sc%d[j]" : "cc%d[kk]", i);
        if (is_vec(g, t) && reduction && g->shift >= 0) {
            /* the row shift: the row's partly filled vectors point by point */
            kiln_dtype dt = k->inputs[t].dtype;
            const char *vt = vec_type(kiln_dtype_size(dt) * (size_t)g->vec);
            kiln__sbuf_printf(b, "      U%d u%d;\n      ", t, i);
            if (cache == 2) kiln__sbuf_printf(b, "if (%s) u%d.v = %s;\n      else ", kcond, i, ksrc);
            kiln__sbuf_printf(b,
                              "if (lm == (1u << VEC) - 1u) u%d.v = *(const %s *)(in%d + %s);\n"
                              "      else {\n        u%d.v = {};\n"
                              "#pragma unroll\n        for (int q = 0; q < VEC; q++)\n"
                              "          if ((lm >> q) & 1u) u%d.e[q] = in%d[%s + q];\n      }\n",
                              i, vt, t, off, i, i, t, off);
        } else if (is_vec(g, t)) {
            kiln_dtype dt = k->inputs[t].dtype;
            const char *vt = vec_type(kiln_dtype_size(dt) * (size_t)g->vec);
            kiln__sbuf_printf(b, "      U%d u%d; u%d.v = ", t, i, i);
            if (cache == 2) kiln__sbuf_printf(b, "%s ? %s : ", kcond, ksrc);
            kiln__sbuf_printf(b, "*(const %s *)(in%d + %s);\n", vt, t, off);
        } else {
            char x[96];
            snprintf(x, sizeof x, "in%d[%s]", t, off);
            kiln__sbuf_printf(b, "      U%d u%d; u%d.e[0] = ", t, i, i);
            if (cache == 2) kiln__sbuf_printf(b, "%s ? %s.e[0] : ", kcond, ksrc);
            kiln__sbuf_printf(b, "%s;\n", x);
        }
        if (cache == 1 && g->smem_row)
            kiln__sbuf_printf(b, "      %ssc%d[j] = u%d%s;\n", g->smem_row == 2 ? "if (j < Lc) " : "", i, i,
                              is_vec(g, t) ? ".v" : "");
        else if (cache == 1)
            kiln__sbuf_printf(b, "      if (fits) cc%d[kk] = u%d%s;\n", i, i, is_vec(g, t) ? ".v" : "");
    }
}

/* Per-lane scalar value of a non-vector load (the same for every lane). */
static void emit_lane_loads(gen *g, const char *need, int reduction)
{
    const kiln_plan_kernel *k = g->k;
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (!need[i] || in->op != KILN_POP_LOAD) continue;
        if (reduction && in->space != KILN_SPACE_FULL) continue;
        char x[64];
        snprintf(x, sizeof x, is_vec(g, in->a) ? "u%d.e[l]" : "u%d.e[0]", i);
        kiln__sbuf_printf(g->b, "      CT v%d = ", i);
        emit_load_conv(g->b, k->inputs[in->a].dtype, x);
        kiln__sbuf_puts(g->b, ";\n");
    }
}

/* The store of rs[u] at outp + oo[u] (vector or scalar). */
static void emit_final_store(gen *g, const char *u)
{
    int ni = g->k->ninputs;
    if (is_vec(g, ni) && g->shift >= 0) { /* the row shift: partly filled vectors point by point */
        size_t es = kiln_dtype_size(g->k->out.dtype);
        kiln__sbuf_printf(g->b,
                          "      const unsigned lm = kiln_lanes_in((j0 + (IDX)%s * nw + wk) * VEC - sh, Lel, VEC);\n"
                          "      if (lm == (1u << VEC) - 1u) *(%s *)(outp + oo[%s]) = rs[%s].v;\n"
                          "      else {\n#pragma unroll\n        for (int q = 0; q < VEC; q++)\n"
                          "          if ((lm >> q) & 1u) outp[oo[%s] + q] = rs[%s].e[q];\n      }\n",
                          u, vec_type(es * (size_t)g->vec), u, u, u, u);
    } else if (is_vec(g, ni)) {
        size_t es = kiln_dtype_size(g->k->out.dtype);
        kiln__sbuf_printf(g->b, "      *(%s *)(outp + oo[%s]) = rs[%s].v;\n", vec_type(es * (size_t)g->vec), u, u);
    } else {
        kiln__sbuf_printf(g->b, "      outp[oo[%s]] = rs[%s].e[0];\n", u, u);
    }
}

/* ---- element-wise kernels ---------------------------------------------------------------- */

static void gen_elementwise(gen *g)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    int ni = k->ninputs;
    char *need = g->an->need;
    memset(need, 1, (size_t)k->ninstr);
    emit_header(g);
    kiln__sbuf_puts(b, "  const IDX nth = (IDX)gridDim.x * blockDim.x;\n");
    kiln__sbuf_printf(b, "  for (IDX i0 = (IDX)blockIdx.x * blockDim.x + threadIdx.x; i0 < R; i0 += %d * nth) {\n", EW_UNR);
    kiln__sbuf_printf(b, "    U%d rs[%d]; IDX oo[%d];\n", ni, EW_UNR, EW_UNR);
    kiln__sbuf_printf(b, "#pragma unroll\n    for (int u = 0; u < %d; u++) {\n", EW_UNR);
    kiln__sbuf_puts(b, "     const IDX i = i0 + u * nth;\n     if (i < R) {\n");
    emit_offsets(g, "i", 0, "ro", "      ");
    emit_loads(g, need, 0, 0);
    kiln__sbuf_printf(b, "#pragma unroll\n      for (int l = 0; l < %d; l++) {\n", is_vec(g, ni) ? g->vec : 1);
    emit_lane_loads(g, need, 0);
    char lin[48];
    snprintf(lin, sizeof lin, "ro%d + l", ni + 1);
    for (int i = 0; i < k->ninstr; i++)
        if (k->instr[i].op != KILN_POP_LOAD) emit_instr(g, i, lin);
    char v[32];
    snprintf(v, sizeof v, "v%d", k->out_instr);
    kiln__sbuf_puts(b, "      rs[u].e[l] = ");
    emit_store_value(g, v, lin);
    kiln__sbuf_printf(b, ";\n      }\n      oo[u] = ro%d;\n     }\n    }\n", ni);
    kiln__sbuf_printf(b, "#pragma unroll\n    for (int u = 0; u < %d; u++) {\n", EW_UNR);
    kiln__sbuf_puts(b, "     if (i0 + u * nth < R) {\n");
    emit_final_store(g, "u");
    kiln__sbuf_puts(b, "     }\n    }\n  }\n");
}

/* ---- reduction kernels ------------------------------------------------------------------- */

int kiln__cg_kmax_for(const analysis *an, int vec)
{
    int k;
    if (an->ncached <= 1)
        k = 16;
    else {
        k = 24 / an->ncached;
        k = k < 1 ? 1 : k > 8 ? 8 : k;
    }
    k /= vec;
    return k < 1 ? 1 : k;
}

static const char *red_opname(kiln_pop op)
{
    switch (op) {
    case KILN_POP_RED_SUM: return "kiln_op_sum";
    case KILN_POP_RED_PROD: return "kiln_op_prod";
    case KILN_POP_RED_MAX: return "kiln_op_max";
    case KILN_POP_RED_MIN: return "kiln_op_min";
    default: return NULL;
    }
}

/* The identity of reduction op (text of a CT value); arg reductions start from it with
 * index -1. */
static const char *red_identity(kiln_pop op)
{
    switch (op) {
    case KILN_POP_RED_SUM: return "(CT)0";
    case KILN_POP_RED_PROD: return "(CT)1";
    case KILN_POP_RED_MAX:
    case KILN_POP_RED_ARGMAX: return "-(CT)__longlong_as_double(0x7ff0000000000000LL)";
    case KILN_POP_RED_MIN:
    case KILN_POP_RED_ARGMIN: return "(CT)__longlong_as_double(0x7ff0000000000000LL)";
    default: return "(CT)0";
    }
}

static int is_arg_red(kiln_pop op) { return op == KILN_POP_RED_ARGMAX || op == KILN_POP_RED_ARGMIN; }
/* RED_VAR: a<i> the sum of squared deviations, m<i> the mean, x<i> the count (Welford). With
 * lanes the VEC rows a worker owns see the same points, so x<i> is one count a worker and
 * rn<i> its reciprocal, taken once a point for all lanes. */
static int is_var_red(kiln_pop op) { return op == KILN_POP_RED_VAR; }

/* Whether kernel k has a variance: its split partials take 24 bytes (value, count, mean), else 16. */
int kiln__cg_has_var(const kiln_plan_kernel *k)
{
    for (int i = 0; i < k->ninstr; i++)
        if (is_var_red((kiln_pop)k->instr[i].op)) return 1;
    return 0;
}

/* COLUMN mode with vec lanes: the lanes kiln_col_var_lanes folds a round, 32 bytes of values
 * (m2 and mean) a thread, so with the count a thread's shared bytes stay 40 and a 1024-thread
 * block's 40 KB, inside the 48 KB a launch gets without opting in. */
int kiln__cg_var_fold_lanes(const kiln_plan_kernel *k, int vec)
{
    int c = k->compute_f64 ? 2 : 4;
    return c < vec ? c : vec;
}

/* COLUMN mode with lanes: a loop over the VEC rows a worker owns (nothing otherwise), and
 * the suffix that picks one row's accumulator or row value. */
static void lanes_open(gen *g)
{
    if (g->colvec) kiln__sbuf_puts(g->b, "#pragma unroll\n  for (int l = 0; l < VEC; l++) {\n");
}

static void lanes_close(gen *g)
{
    if (g->colvec) kiln__sbuf_puts(g->b, "  }\n");
}

static const char *lane(const gen *g) { return g->colvec ? "[l]" : ""; }

/* The block's reduction of a<i> (and x<i> for arg reductions) over the workers. */
static void emit_block_red(gen *g, int i, const char *mode)
{
    kiln_pop op = (kiln_pop)g->k->instr[i].op;
    const char *x = lane(g);
    if (g->seg) { /* ROW mode, W lanes a row: no lanes, no shared memory */
        if (is_arg_red(op))
            kiln__sbuf_printf(g->b, "  kiln_seg_arg<%d, %d>(a%d, x%d);\n", op == KILN_POP_RED_ARGMAX, g->seg, i, i);
        else if (is_var_red(op))
            kiln__sbuf_printf(g->b, "  kiln_seg_var<%d>(a%d, m%d, x%d);\n", g->seg, i, i, i);
        else
            kiln__sbuf_printf(g->b, "  a%d = kiln_seg_red<%s, %d>(a%d);\n", i, red_opname(op), g->seg, i);
        return;
    }
    if (g->red_lanes && !is_arg_red(op) && !is_var_red(op)) { /* all lanes in one reduction (kplan's smem) */
        kiln__sbuf_printf(g->b, "  kiln_col_red_lanes<%s>(a%d, kiln_sm);\n", red_opname(op), i);
        return;
    }
    if (is_var_red(op) && g->colvec) { /* the lanes share the worker's one count: folded together */
        kiln__sbuf_printf(g->b, "  kiln_col_var_lanes<VEC, %d>(a%d, m%d, x%d, kiln_sm);\n", kiln__cg_var_fold_lanes(g->k, g->vec),
                          i, i, i);
        return;
    }
    lanes_open(g);
    if (is_arg_red(op))
        kiln__sbuf_printf(g->b, "  kiln_%s_arg<%d>(a%d%s, x%d%s, kiln_sm);\n", mode, op == KILN_POP_RED_ARGMAX, i, x, i,
                          x);
    else if (is_var_red(op))
        kiln__sbuf_printf(g->b, "  kiln_%s_var(a%d, m%d, x%d, kiln_sm);\n", mode, i, i, i);
    else
        kiln__sbuf_printf(g->b, "  a%d%s = kiln_%s_red<%s>(a%d%s, kiln_sm);\n", i, x, mode, red_opname(op), i, x);
    lanes_close(g);
}

/* Split reductions, after every block reduced its slice for pass ph: each row's leader
 * publishes the block's partials (slot = the reduction's rank among all reductions), one
 * grid barrier, then every worker folds its share of the row's G partials (worker w takes
 * slices w, w + nw, ...) and the block reduces over the workers: a fixed order, so every
 * block of the row ends with the same bits (after a row output's last pass, only slice 0's
 * blocks, which store it). With lanes, a slice's VEC partials of a row
 * are neighbours in the workspace ([reduction][row][slice][lane]). */
static void emit_split_exchange(gen *g, int ph, const char *mode)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const char *x = lane(g);
    const char *vec = g->colvec ? " * VEC" : "";
    int slot = 0;
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (!kiln__pop_is_reduction((kiln_pop)in->op)) continue;
        if (in->pass == ph) {
            kiln__sbuf_printf(b, "  if (act && wk == 0) {\n    const long long q = (((long long)%d * R + r) * G + gs)%s;\n",
                              slot, vec);
            lanes_open(g);
            kiln__sbuf_printf(b, "    __stcg(wsv + q%s, (double)a%d%s);\n", g->colvec ? " + l" : "", i, x);
            if (is_arg_red((kiln_pop)in->op) || is_var_red((kiln_pop)in->op))
                kiln__sbuf_printf(b, "    __stcg(wsx + q%s, x%d%s);\n", g->colvec ? " + l" : "", i,
                                  is_var_red((kiln_pop)in->op) ? "" : x);
            if (is_var_red((kiln_pop)in->op))
                kiln__sbuf_printf(b, "    __stcg(wsm + q%s, (double)m%d%s);\n", g->colvec ? " + l" : "", i, x);
            lanes_close(g);
            kiln__sbuf_puts(b, "  }\n");
        }
        slot++;
    }
    kiln__sbuf_puts(b, "  kiln_grid_sync(gsync);\n");
    /* the last pass of a reduction to one value a row: only slice 0 stores it, so only its
     * blocks fold (every block folding reads G x G partials a row) */
    int first_only = k->out.is_row && ph == k->npasses - 1;
    if (first_only) kiln__sbuf_puts(b, "  if (gs == 0) {\n");
    slot = 0;
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        kiln_pop op = (kiln_pop)in->op;
        if (!kiln__pop_is_reduction(op)) continue;
        if (in->pass == ph) {
            if (is_var_red(op)) kiln__sbuf_printf(b, "  x%d = 0;\n", i);
            lanes_open(g);
            kiln__sbuf_printf(b, "  a%d%s = %s;\n", i, x, red_identity(op));
            if (is_arg_red(op)) kiln__sbuf_printf(b, "  x%d%s = -1;\n", i, x);
            if (is_var_red(op)) kiln__sbuf_printf(b, "  m%d%s = (CT)0;\n", i, x);
            lanes_close(g);
            kiln__sbuf_printf(b, "  if (act) {\n    const long long q0 = ((long long)%d * R + r) * G%s;\n"
                                 "    for (int q = wk; q < G; q += nw) {\n", slot, vec);
            /* with lanes the VEC partials of a slice are neighbours: loaded together */
            const char *at = g->colvec ? "q0 + (long long)q * VEC + l" : "q0 + q";
            if (is_var_red(op)) /* every lane merges from the same count; all end equal */
                kiln__sbuf_printf(b, "      long long n_ = x%d;\n", i);
            lanes_open(g);
            if (is_arg_red(op))
                kiln__sbuf_printf(b, "      kiln_arg_comb<%d>(a%d%s, x%d%s, (CT)__ldcg(wsv + %s), __ldcg(wsx + %s));\n",
                                  op == KILN_POP_RED_ARGMAX, i, x, i, x, at, at);
            else if (is_var_red(op))
                kiln__sbuf_printf(b,
                                  "      n_ = x%d; kiln_var_comb(a%d%s, m%d%s, n_, (CT)__ldcg(wsv + %s), "
                                  "(CT)__ldcg(wsm + %s), __ldcg(wsx + %s));\n",
                                  i, i, x, i, x, at, at, at);
            else
                kiln__sbuf_printf(b, "      a%d%s = %s::f(a%d%s, (CT)__ldcg(wsv + %s));\n", i, x, red_opname(op), i, x, at);
            lanes_close(g);
            if (is_var_red(op)) kiln__sbuf_printf(b, "      x%d = n_;\n", i);
            kiln__sbuf_puts(b, "    }\n  }\n");
            emit_block_red(g, i, mode);
        }
        slot++;
    }
    if (first_only) kiln__sbuf_puts(b, "  }\n");
}

/* The device side of split reductions, emitted ahead of such a kernel only: the grid
 * barrier. Every block of a cooperative launch arrives once; the last to arrive zeroes the
 * arrivals and moves the generation on, the others wait for the move. The generation is
 * read before arriving, so a block cannot miss the move it waits for; the arrivals are
 * zero again by the time any block leaves, ready for the next barrier or launch. */
static const char grid_sync_src[] =
    "__device__ __forceinline__ void kiln_grid_sync(unsigned *w) {\n"
    "  __syncthreads();\n"
    "  if (threadIdx.x == 0 && threadIdx.y == 0) {\n"
    "    volatile unsigned *vw = w;\n"
    "    const unsigned gen = vw[1];\n"
    "    const unsigned n = gridDim.x * gridDim.y * gridDim.z;\n"
    "    __threadfence();\n"
    "    if (atomicAdd(w, 1u) == n - 1u) {\n"
    "      vw[0] = 0u;\n"
    "      __threadfence();\n"
    "      atomicAdd(w + 1, 1u);\n"
    "    } else {\n"
    "      while (vw[1] == gen) {\n"
    "#if __CUDA_ARCH__ >= 700\n"
    "        __nanosleep(32);\n"
    "#endif\n"
    "      }\n"
    "    }\n"
    "    __threadfence();\n"
    "  }\n"
    "  __syncthreads();\n"
    "}\n";

/* With lanes, a row value is an array vr<i>[VEC]; inside a lane loop "const CT v<x> =
 * vr<x>[l]" lets emit_instr name it as it does a scalar. Aliases of instruction i's row
 * operands (row-space, at `level` or below). */
static void emit_row_aliases(gen *g, int i, int level, const char *indent)
{
    const kiln_plan_kernel *k = g->k;
    const kiln_plan_instr *in = &k->instr[i];
    int na = kiln__cg_instr_nargs(in);
    for (int j = 0; j < na; j++) {
        int x = kiln__cg_arg_of(in, j), dup = 0;
        for (int m = 0; m < j; m++) dup |= kiln__cg_arg_of(in, m) == x;
        if (dup || k->instr[x].space != KILN_SPACE_ROW || g->an->level[x] > level) continue;
        kiln__sbuf_printf(g->b, "%sconst CT v%d = vr%d[l];\n", indent, x, x);
    }
}

/* The row values of `level` (computed once a row; with lanes once each of the VEC rows). */
static void emit_row_level(gen *g, int level)
{
    const kiln_plan_kernel *k = g->k;
    for (int i = 0; i < k->ninstr; i++) {
        const kiln_plan_instr *in = &k->instr[i];
        if (in->space != KILN_SPACE_ROW || kiln__pop_is_reduction((kiln_pop)in->op)) continue;
        if (g->an->level[i] != level) continue;
        if (g->colvec) {
            kiln__sbuf_printf(g->b, "  CT vr%d[VEC];\n", i);
            lanes_open(g);
            emit_row_aliases(g, i, level, "    ");
        }
        if (in->op == KILN_POP_LOAD) {
            kiln__sbuf_printf(g->b, "  CT v%d = ", i);
            char x[64];
            snprintf(x, sizeof x, "in%d[ro%d%s]", in->a, in->a, g->colvec && is_vec(g, in->a) ? " + l" : "");
            emit_load_conv(g->b, k->inputs[in->a].dtype, x);
            kiln__sbuf_puts(g->b, ";\n");
        } else {
            emit_instr(g, i, g->colvec ? "rr * VEC + l" : "rr");
        }
        if (fast_div_operand(g, i, 1)) kiln__sbuf_printf(g->b, "  const CT ry%d = kiln_rcp_row(v%d);\n", i, i);
        if (g->colvec) {
            kiln__sbuf_printf(g->b, "    vr%d[l] = v%d;\n", i, i);
            lanes_close(g);
        }
    }
}

/* The output's fast_div instructions among those need[] marks computed here: their count, and
 * "okn<a> && ry<b> != 0.0f && ..." into cond (every kept dividend in range, every divisor's
 * reciprocal there). */
static int out_fast_divs(const gen *g, const char *need, kiln_sbuf *cond)
{
    int n = 0;
    for (int i = 0; i < g->k->ninstr; i++)
        if (need[i] == 1 && fast_div(g, i))
            kiln__sbuf_printf(cond, "%sokn%d && ry%d != 0.0f", n++ ? " && " : "", g->k->instr[i].a, g->k->instr[i].b);
    return n;
}

/* One phase's walk over the row (reduction pass ph, or the output pass ph = npasses): tiles of
 * nw * kmax points, the loads, the instructions need[] marks (1 computed here, 2 taken from
 * the values kv<i> an earlier phase kept), then the reductions' updates or the output's
 * stores. Leaves the phase's own block open. */
static void emit_phase_loop(gen *g, int ph, const char *need, int kmax)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const analysis *an = g->an;
    const int ni = k->ninputs, out_phase = ph == k->npasses;
    const char *x = lane(g);
    char lin[64];
    snprintf(lin, sizeof lin, "ro%d + io%d + l", ni + 1, ni + 1);
    if (g->split)
        kiln__sbuf_puts(b, "  for (IDX j0 = jb; j0 < je; j0 += tile) {\n");
    else
        kiln__sbuf_printf(b, "  for (IDX j0 = 0; j0 < L; j0 += (IDX)nw * %d) {\n", kmax);
    kiln__sbuf_printf(b, "#pragma unroll\n    for (int kk = 0; kk < %d; kk++) {\n", kmax);
    kiln__sbuf_puts(b, "     const IDX j = j0 + (IDX)kk * nw + wk;\n     if (act && j < L) {\n");
    /* the row shift: the vector's first point e0 in the row, and whether it lies wholly in it */
    if (g->shift >= 0)
        kiln__sbuf_puts(b, "      const IDX e0 = j * VEC - sh; const unsigned lm = kiln_lanes_in(e0, Lel, VEC);\n");
    /* what a lane's contribution to the reductions waits on: with the row shift, the lane in the row */
    const char *in_row = g->shift >= 0 ? "if ((lm >> l) & 1u) " : "";
    emit_offsets(g, "j", 1, "io", "      ");
    emit_loads(g, need, ph, 1);
    kiln__sbuf_printf(b, "#pragma unroll\n      for (int l = 0; l < %d; l++) {\n", g->vec);
    emit_lane_loads(g, need, 1);
    if (g->colvec) /* the row values this phase's points use, of this lane's row: operands,
                    * the output itself (a row value broadcast back), reductions' inputs */
        for (int r = 0; r < k->ninstr; r++) {
            if (k->instr[r].space != KILN_SPACE_ROW || an->level[r] > ph) continue;
            int used = out_phase && r == k->out_instr;
            for (int i = 0; i < k->ninstr && !used; i++) {
                const kiln_plan_instr *in = &k->instr[i];
                if (!out_phase && kiln__pop_is_reduction((kiln_pop)in->op) && in->pass == ph && in->a == r) used = 1;
                if (!need[i] || in->op == KILN_POP_LOAD) continue;
                for (int j = 0; j < kiln__cg_instr_nargs(in); j++) used |= kiln__cg_arg_of(in, j) == r;
            }
            if (used) kiln__sbuf_printf(b, "      const CT v%d = vr%d[l];\n", r, r);
        }
    for (int i = 0; i < k->ninstr; i++) {
        if (need[i] == 2) { /* kept by the phase that computed it */
            kiln__sbuf_printf(b, "      const CT v%d = kv%d[kk][l];\n", i, i);
        } else if (need[i] && k->instr[i].op != KILN_POP_LOAD) {
            emit_instr(g, i, lin);
            if (an->keep[i] == ph) kiln__sbuf_printf(b, "      if (fits) kv%d[kk][l] = v%d;\n", i, i);
            if (an->chk[i] == ph && fast_div_operand(g, i, 0) && g->shift >= 0)
                kiln__sbuf_printf(b, "      okn%d = okn%d & (kiln_div_in(v%d) || !((lm >> l) & 1u));\n", i, i, i);
            else if (an->chk[i] == ph && fast_div_operand(g, i, 0))
                kiln__sbuf_printf(b, "      okn%d = okn%d & kiln_div_in(v%d);\n", i, i, i);
        }
    }
    if (!out_phase) {
        for (int i = 0; i < k->ninstr; i++) {
            const kiln_plan_instr *in = &k->instr[i];
            if (!kiln__pop_is_reduction((kiln_pop)in->op) || in->pass != ph) continue;
            kiln_pop op = (kiln_pop)in->op;
            /* the point's index along the row: with lanes the row's own j */
            if ((op == KILN_POP_RED_ARGMAX || op == KILN_POP_RED_ARGMIN) && g->shift >= 0)
                kiln__sbuf_printf(b, "      %skiln_arg_comb<%d>(a%d, x%d, v%d, (long long)(e0 + l));\n", in_row,
                                  op == KILN_POP_RED_ARGMAX, i, i, in->a);
            else if (op == KILN_POP_RED_ARGMAX || op == KILN_POP_RED_ARGMIN)
                kiln__sbuf_printf(b, "      kiln_arg_comb<%d>(a%d%s, x%d%s, v%d, (long long)j%s);\n",
                                  op == KILN_POP_RED_ARGMAX, i, x, i, x, in->a, g->colvec ? "" : " * VEC + l");
            else if (is_var_red(op) && g->colvec) /* the count and its reciprocal once a point */
                kiln__sbuf_printf(b,
                                  "      if (l == 0) { x%d += 1; rn%d = kiln_var_div((CT)1, (CT)x%d); }\n"
                                  "      kiln_var_upd(a%d[l], m%d[l], rn%d, v%d);\n",
                                  i, i, i, i, i, i, in->a);
            else if (is_var_red(op))
                kiln__sbuf_printf(b, "      %skiln_var_add(a%d, m%d, x%d, v%d);\n", in_row, i, i, i, in->a);
            else
                kiln__sbuf_printf(b, "      %sa%d%s = %s::f(a%d%s, v%d);\n", in_row, i, x, red_opname(op), i, x, in->a);
        }
        kiln__sbuf_puts(b, "      }\n     }\n    }\n  }\n");
    } else {
        char v[32];
        snprintf(v, sizeof v, "v%d", k->out_instr);
        kiln__sbuf_puts(b, "      rs[kk].e[l] = ");
        emit_store_value(g, v, lin);
        kiln__sbuf_printf(b, ";\n      }\n      oo[kk] = ro%d + io%d;\n     }\n    }\n", ni, ni);
        kiln__sbuf_printf(b, "#pragma unroll\n    for (int kk = 0; kk < %d; kk++) {\n", kmax);
        kiln__sbuf_puts(b, "     if (act && j0 + (IDX)kk * nw + wk < L) {\n");
        emit_final_store(g, "kk");
        kiln__sbuf_puts(b, "     }\n    }\n  }\n");
    }
}

/* The output's walk twice, under `if (cond)` through the row values' reciprocals (fast_div) and
 * else dividing at every point; once, dividing, where cond is NULL (no fast_div). */
static void emit_division_choice(gen *g, int ph, const char *need, int kmax, const kiln_sbuf *cond)
{
    kiln_sbuf *b = g->b;
    if (cond) {
        kiln__sbuf_printf(b, "  if (%s) {\n", cond->oom ? "false" : cond->p);
        g->div_fast = 1;
        emit_phase_loop(g, ph, need, kmax);
        g->div_fast = 0;
        kiln__sbuf_puts(b, "  } else {\n");
    }
    emit_phase_loop(g, ph, need, kmax);
    if (cond) kiln__sbuf_puts(b, "  }\n");
}

static void gen_reduction(gen *g, int colmode, int kmax)
{
    kiln_sbuf *b = g->b;
    const kiln_plan_kernel *k = g->k;
    const analysis *an = g->an;
    int ni = k->ninputs;
    char *need = an->need;
    const char *x = lane(g);
    emit_header(g);
    kiln__sbuf_puts(b, "  extern __shared__ double kiln_sm[];\n");
    if (colmode)
        kiln__sbuf_puts(b, "  const int wk = threadIdx.y, nw = blockDim.y;\n"
                           "  const IDX r = (IDX)blockIdx.x * blockDim.x + threadIdx.x;\n");
    else
        kiln__sbuf_puts(b, "  const int wk = threadIdx.x, nw = blockDim.x;\n"
                           "  const IDX r = (IDX)blockIdx.x * blockDim.y + threadIdx.y;\n");
    kiln__sbuf_puts(b, "  const bool act = r < R;\n  const IDX rr = act ? r : 0;\n");
    if (g->shift >= 0) {
        /* the row shift: sh points of the aligned vector holding the row's first point lie
         * before it; every tensor along the row starts sh points early, and the row takes L
         * vectors */
        const layout *l = g->l;
        int t0 = g->shift, a = l->nd - 1;
        emit_offsets(g, "rr", 0, "rq", "  ");
        char ptr[16];
        if (t0 < ni)
            snprintf(ptr, sizeof ptr, "in%d", t0);
        else
            snprintf(ptr, sizeof ptr, "outp");
        kiln__sbuf_printf(b, "  const int sh = (int)(((unsigned long long)(%s + rq%d) / sizeof(*%s)) %% VEC);\n", ptr, t0,
                          ptr);
        for (int t = 0; t < l->nt; t++)
            kiln__sbuf_printf(b, "  const IDX ro%d = rq%d%s; (void)ro%d;\n", t, t, l->st[t][a] == 1 ? " - sh" : "", t);
        kiln__sbuf_puts(b, "  const IDX L = (Lel + sh + VEC - 1) / VEC;\n");
    } else {
        emit_offsets(g, "rr", 0, "ro", "  ");
    }
    if (g->split) {
        /* this block's slice: tiles [ntl*gs/G, ntl*(gs+1)/G) of the row's ntl */
        kiln__sbuf_printf(b,
                          "  const int gs = (int)blockIdx.y, G = (int)gridDim.y;\n"
                          "  double *wsv = (double *)p.w[%d];\n"
                          "  long long *wsx = (long long *)(wsv + (long long)%d * R * %d * G); (void)wsx;\n"
                          "  unsigned *gsync = (unsigned *)p.w[%d];\n"
                          "  const IDX tile = (IDX)nw * %d, ntl = (L + tile - 1) / tile;\n"
                          "  const IDX jb = (IDX)((long long)ntl * gs / G) * tile;\n"
                          "  IDX je = (IDX)((long long)ntl * (gs + 1) / G) * tile;\n"
                          "  if (je > L) je = L;\n"
                          "  const bool fits = je - jb <= tile; (void)fits;\n",
                          g->l->w_ws, g->nred, g->colvec ? g->vec : 1, g->l->w_sync, kmax);
        if (kiln__cg_has_var(k)) /* a variance's means: a third array after the values and the counts */
            kiln__sbuf_printf(b, "  double *wsm = (double *)(wsx + (long long)%d * R * %d * G);\n", g->nred,
                              g->colvec ? g->vec : 1);
    } else {
        kiln__sbuf_printf(b, "  const bool fits = L <= (IDX)nw * %d; (void)fits;\n", kmax);
    }
    if (g->smem_row) { /* the row cache: Lc vectors a load, each region 16-byte aligned */
        const char *whole = g->shift >= 0 ? "(Lel + 2 * VEC - 2) / VEC" : "L";
        if (g->smem_row == 2) { /* partial: the first Lc vectors the launch's shared memory holds */
            int nload = 0, row_bytes = 0; /* the loads cached; their bytes a vector (as row_cache_fits) */
            for (int i = 0; i < k->ninstr; i++)
                if (an->multi[i]) {
                    nload++;
                    row_bytes += kiln__cg_row_cache_load_bytes(k, g->l, g->vec, i);
                }
            kiln__sbuf_printf(b, "  unsigned dsm; asm(\"mov.u32 %%0, %%%%dynamic_smem_size;\" : \"=r\"(dsm));\n"
                                 "  const IDX Lcap = (IDX)((dsm - (unsigned)(nw >> 5) * blockDim.y * %du - %du) / %du);\n"
                                 "  const IDX Lc = %s < Lcap ? %s : Lcap;\n",
                              g->smem_thread, 16 * nload, row_bytes, whole, whole);
        } else {
            kiln__sbuf_printf(b, "  const IDX Lc = %s;\n", whole);
        }
        kiln__sbuf_printf(b, "  char *rowc = (char *)kiln_sm + (size_t)(nw >> 5) * blockDim.y * %d;\n", g->smem_thread);
        for (int i = 0; i < k->ninstr; i++)
            if (an->multi[i]) {
                int t = k->instr[i].a;
                char ty[16];
                if (is_vec(g, t))
                    snprintf(ty, sizeof ty, "%s", vec_type(kiln_dtype_size(k->inputs[t].dtype) * (size_t)g->vec));
                else
                    snprintf(ty, sizeof ty, "U%d", t);
                kiln__sbuf_printf(b, "  %s *sc%d = (%s *)rowc; rowc += ((size_t)Lc * sizeof(%s) + 15) & ~(size_t)15;\n",
                                  ty, i, ty, ty);
            }
    }
    for (int i = 0; i < k->ninstr && !g->smem_row; i++)
        if (an->multi[i]) {
            int t = k->instr[i].a;
            if (is_vec(g, t))
                kiln__sbuf_printf(b, "  %s cc%d[%d];\n",
                                  vec_type(kiln_dtype_size(k->inputs[t].dtype) * (size_t)g->vec), i, kmax);
            else
                kiln__sbuf_printf(b, "  U%d cc%d[%d];\n", t, i, kmax);
        }
    const char *red = colmode ? "col" : "row";
    for (int i = 0; i < k->ninstr; i++)
        if (kiln__pop_is_reduction((kiln_pop)k->instr[i].op)) {
            kiln__sbuf_printf(b, g->colvec ? "  CT vr%d[VEC];\n" : "  CT v%d;\n", i);
            if (fast_div_operand(g, i, 1)) kiln__sbuf_printf(b, "  CT ry%d;\n", i);
        }
    for (int i = 0; i < k->ninstr; i++) {
        if (an->keep[i] >= 0) kiln__sbuf_printf(b, "  CT kv%d[%d][%d];\n", i, kmax, g->vec);
        if (an->chk[i] >= 0 && fast_div_operand(g, i, 0)) kiln__sbuf_printf(b, "  bool okn%d = true;\n", i);
    }
    emit_row_level(g, 0);
    for (int ph = 0; ph <= k->npasses; ph++) {
        int out_phase = ph == k->npasses;
        if (out_phase && k->out.is_row) break;
        memset(need, 0, (size_t)k->ninstr);
        memset(g->need_all, 0, (size_t)k->ninstr);
        kiln__sbuf_printf(b, "  /* %s */\n  {\n", out_phase ? "output pass" : "reduction pass");
        if (!out_phase) {
            for (int i = 0; i < k->ninstr; i++) {
                const kiln_plan_instr *in = &k->instr[i];
                if (!kiln__pop_is_reduction((kiln_pop)in->op) || in->pass != ph) continue;
                mark_kept(k, an, in->a, ph, need);
                mark_full(k, in->a, g->need_all);
                kiln_pop op = (kiln_pop)in->op;
                if (g->colvec) {
                    kiln__sbuf_printf(b, "  CT a%d[VEC];\n", i);
                    if (is_arg_red(op)) kiln__sbuf_printf(b, "  long long x%d[VEC];\n", i);
                    if (is_var_red(op)) kiln__sbuf_printf(b, "  CT m%d[VEC]; long long x%d = 0; CT rn%d = (CT)0;\n", i, i, i);
                    lanes_open(g);
                }
                if (is_arg_red(op))
                    kiln__sbuf_printf(b, "  %sa%d%s = (CT)0; %sx%d%s = -1;\n", g->colvec ? "" : "CT ", i, x,
                                      g->colvec ? "" : "long long ", i, x);
                else if (is_var_red(op) && g->colvec)
                    kiln__sbuf_printf(b, "  a%d[l] = (CT)0; m%d[l] = (CT)0;\n", i, i);
                else if (is_var_red(op))
                    kiln__sbuf_printf(b, "  CT a%d = (CT)0, m%d = (CT)0; long long x%d = 0;\n", i, i, i);
                else
                    kiln__sbuf_printf(b, "  %sa%d%s = %s;\n", g->colvec ? "" : "CT ", i, x, red_identity(op));
                lanes_close(g);
            }
        } else {
            mark_kept(k, an, k->out_instr, ph, need);
            mark_full(k, k->out_instr, g->need_all);
            kiln__sbuf_printf(b, "  U%d rs[%d]; IDX oo[%d];\n", ni, kmax, kmax);
        }
        int kept = 0;
        for (int i = 0; i < k->ninstr; i++) kept |= need[i] == 2;
        /* the output divides by row values through their reciprocals (fast_div) where every
         * dividend the thread computed and every divisor is in kiln_div_row's ranges */
        kiln_sbuf cond = {0};
        int nfast = out_phase ? out_fast_divs(g, need, &cond) : 0;
        if (kept) { /* a tile that holds the whole row has the kept values; a longer row computes them again */
            kiln__sbuf_puts(b, "  if (fits) {\n");
            emit_division_choice(g, ph, need, kmax, nfast ? &cond : NULL);
            kiln__sbuf_puts(b, "  } else {\n");
            emit_phase_loop(g, ph, g->need_all, kmax);
            kiln__sbuf_puts(b, "  }\n");
        } else { /* the dividends computed again (step 70), or no division through a reciprocal */
            emit_division_choice(g, ph, need, kmax, nfast ? &cond : NULL);
        }
        kiln__sbuf_free(&cond);
        if (!out_phase) {
            for (int i = 0; i < k->ninstr; i++) {
                const kiln_plan_instr *in = &k->instr[i];
                if (kiln__pop_is_reduction((kiln_pop)in->op) && in->pass == ph) emit_block_red(g, i, red);
            }
            if (g->split) emit_split_exchange(g, ph, red);
            for (int i = 0; i < k->ninstr; i++) {
                const kiln_plan_instr *in = &k->instr[i];
                if (!kiln__pop_is_reduction((kiln_pop)in->op) || in->pass != ph) continue;
                lanes_open(g);
                if (is_arg_red((kiln_pop)in->op))
                    kiln__sbuf_printf(b, "  a%d%s = x%d%s < 0 ? (CT)0 : (CT)x%d%s;\n", i, x, i, x, i, x);
                if (is_var_red((kiln_pop)in->op)) /* no point: NaN, as the two-pass mean of nothing */
                    kiln__sbuf_printf(b, "  a%d%s = x%d > 0 ? a%d%s / (CT)x%d : (CT)__longlong_as_double(0x7ff8000000000000LL);\n",
                                      i, x, i, i, x, i);
                kiln__sbuf_printf(b, "  v%s%d%s = a%d%s;\n", g->colvec ? "r" : "", i, x, i, x);
                if (fast_div_operand(g, i, 1)) kiln__sbuf_printf(b, "  ry%d = kiln_rcp_row(v%d);\n", i, i);
                lanes_close(g);
            }
            kiln__sbuf_puts(b, "  }\n");
            emit_row_level(g, ph + 1);
        } else {
            kiln__sbuf_puts(b, "  }\n");
        }
    }
    if (k->out.is_row) {
        kiln__sbuf_printf(b, "  if (act && wk == 0%s) {\n", g->split ? " && gs == 0" : "");
        lanes_open(g);
        kiln__sbuf_printf(b, "    outp[ro%d%s] = ", ni, g->colvec ? " + l" : "");
        char v[32];
        snprintf(v, sizeof v, g->colvec ? "vr%d[l]" : "v%d", k->out_instr);
        emit_store_value(g, v, g->colvec ? "r * VEC + l" : "r");
        kiln__sbuf_puts(b, ";\n");
        lanes_close(g);
        kiln__sbuf_puts(b, "  }\n");
    }
}


/* Generates the source of kernel k into *src (malloc'd). */
kiln_status kiln__cg_generate(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp, char **src_out)
{
    const layout *l = &kp->l;
    gen g = {0};
    kiln_sbuf src = {0};
    char need_all_in[ANALYSIS_N + 1];
    g.need_all = k->ninstr <= ANALYSIS_N ? need_all_in : malloc((size_t)k->ninstr);
    if (!g.need_all) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel source");
    g.b = &src;
    g.k = k;
    g.l = l;
    g.an = &kp->an;
    g.f64 = k->compute_f64 != 0;
    g.elementwise = kp->elementwise;
    g.vec = kp->vec;
    g.split = kp->split && !kp->elementwise;
    g.nred = kp->nred;
    g.colvec = kp->colmode && kp->vec > 1;
    g.red_lanes = kp->red_lanes;
    g.seg = kp->seg;
    g.rdiv = kp->rdiv;
    g.shift = kp->shift;
    g.smem_row = kp->smem_row;
    g.smem_thread = kp->smem_thread;
    kiln__cuda_prelude(&src);
    if (g.split) kiln__sbuf_puts(&src, grid_sync_src);
    kiln__sbuf_printf(&src, "typedef %s IDX;\ntypedef %s CT;\n", l->idx32 ? "int" : "long long",
                      g.f64 ? "double" : "float");
    emit_unions(&g);
    kiln__sbuf_printf(&src, "struct kiln_args { kiln_w64 w[%d]; };\n", l->nwords);
    if (kp->elementwise || kp->seg || kp->colmode || kp->row_minb == 1)
        kiln__sbuf_printf(&src,
                          "extern \"C\" __global__ void __launch_bounds__(%d) kiln_kernel(const __grid_constant__ kiln_args p) {\n",
                          kp->elementwise || kp->seg ? 256 : 1024);
    else
        kiln__sbuf_printf(&src,
                          "extern \"C\" __global__ void __launch_bounds__(%d, %d) kiln_kernel(const __grid_constant__ kiln_args p) {\n",
                          kp->row_tmax, kp->row_minb);
    if (kp->elementwise)
        gen_elementwise(&g);
    else
        gen_reduction(&g, kp->colmode, kp->kmax);
    kiln__sbuf_puts(&src, "}\n");
    if (g.need_all != need_all_in) free(g.need_all);
    if (src.oom) {
        kiln__sbuf_free(&src);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel source");
    }
    *src_out = src.p;
    return KILN_OK;
}