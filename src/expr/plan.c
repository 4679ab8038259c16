/*
 * src/expr/plan.c — the planner: turns dst[...] = e into a backend-neutral plan (plan.h).
 *
 * Steps: (1) the expression becomes a canonical DAG, identical subtrees merged by
 * hash-consing (CSE); (2) the output is checked and, when the root is a SQUEEZE, dst is
 * viewed with the squeezed axes put back; (3) a kernel domain (D, M) is chosen from a
 * reduction near the root whose input shape matches the output, and everything that fits
 * that domain is emitted into one kernel as SSA instructions; reductions that do not fit,
 * squeezes that are not transparent and subtrees past the kernel limits are MATERIALIZED
 * into temporaries by planning them recursively (their kernels come first); (4) leaves
 * that overlap dst with another mapping are copied first; (5) instruction spaces, pass
 * numbers, the compute type and the structural hash are filled in.
 * It does not run anything: backends (src/cpu, src/cuda) run the plan.
 *
 * Conventions a backend can rely on:
 *  - Pass numbers start at 0 (a reduction of values that need no reduction); npasses is
 *    the largest pass + 1. A reduction's argument is FULL (a row-valued argument is first
 *    copied into a FULL instruction).
 *  - A generator is FULL when any FULL instruction, a reduction or a FULL output uses it,
 *    else ROW (one number per row); ops follow their operands (FULL if any operand is).
 *    In an element-wise kernel (mask 0) every LOAD is FULL.
 *  - plan->temps holds the temporaries and the views the plan made (a squeezed view of a
 *    temporary, dst with squeezed axes put back); all are released by kiln__plan_free.
 *  - Only the last kernel writes dst; temporaries are written once, before they are read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "expr/expr.h"
#include "expr/plan.h"

#define MAX_INPUTS 64
#define MAX_INSTR  512
#define MAX_PASS   200 /* kiln_plan_instr.pass is a uint8_t */
#define SPACE_WILD 2   /* transient: generators (and ops on generators only) before resolution */

/* ---- opcode table --------------------------------------------------------------------- */

static const char *const pop_names[] = {
#define KILN_X_POP_NAME(name, nargs) #name,
    KILN_POP_LIST(KILN_X_POP_NAME)
#undef KILN_X_POP_NAME
};
static const int pop_nargs[] = {
#define KILN_X_POP_NARGS(name, nargs) nargs,
    KILN_POP_LIST(KILN_X_POP_NARGS)
#undef KILN_X_POP_NARGS
};
_Static_assert(sizeof pop_names / sizeof pop_names[0] == KILN_POP_COUNT, "pop_names out of sync");

const char *kiln__pop_name(kiln_pop op)
{
    if ((int)op < 0 || op >= KILN_POP_COUNT) return "?";
    return pop_names[op];
}

int kiln__pop_nargs(kiln_pop op)
{
    if ((int)op < 0 || op >= KILN_POP_COUNT) return 0;
    return pop_nargs[op];
}

/* ---- canonical DAG -------------------------------------------------------------------- */

typedef struct pnode {
    uint8_t kind; /* kiln_enode_kind */
    uint8_t op;   /* kiln_pop */
    uint8_t has_gen;
    uint8_t f64; /* subtree has an f64/i32 leaf or cast, or an arg-reduction */
    kiln_dtype cast_to;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int nchild;
    int child[3];
    uint32_t mask;
    double value;
    const kiln_tensor *tensor;
    const kiln_expr *gen; /* generators: the node object (identity) */
    uint64_t hash;
    double size;    /* tree size (shared nodes counted again) */
    double nleaves; /* tensor leaves in the tree (counted again) */
    /* planning state */
    kiln_tensor *temp; /* materialized value, read with a LOAD; owned by plan->temps */
    int force_mat;     /* materialize to keep a kernel under the limits */
    int has_stream;
    uint64_t stream;
} pnode;

typedef struct pbuild {
    kiln_ctx *ctx;
    kiln_plan *plan;
    int kcap, tcap;
    pnode *n;
    int nn, ncap;
    int *htab; /* node ids, -1 = empty */
    size_t hcap;
    const kiln_expr **ekey; /* expression pointer -> node id */
    int *eval;
    size_t ecap, ecount;
    int var_env;         /* KILN_VAR_PASSES: -2 not yet read, -1 unset, 0 "1", 1 "2" */
    int64_t dst_numel;   /* the destination's values (a variance with as many or more is written out) */
    kiln_expr **lowered; /* the two-pass forms made for RED_VAR nodes (their pointers key ekey) */
    int nlowered, clowered;
} pbuild;

/* The structural hashes of nodes and kernels: kiln__hash_bytes (core/internal.h). */
#define hash_bytes     kiln__hash_bytes
#define HASH_INIT      KILN_HASH_INIT
#define HASH_VAL(h, v) hash_bytes((h), &(v), sizeof(v))

static uint64_t ptr_hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static uint64_t node_key_hash(const pnode *p)
{
    uint64_t h = HASH_INIT;
    h = HASH_VAL(h, p->kind);
    h = HASH_VAL(h, p->op);
    h = HASH_VAL(h, p->cast_to);
    h = HASH_VAL(h, p->mask);
    h = HASH_VAL(h, p->ndim);
    h = hash_bytes(h, p->shape, sizeof(int64_t) * (size_t)p->ndim);
    h = hash_bytes(h, p->child, sizeof(int) * (size_t)p->nchild);
    h = HASH_VAL(h, p->value);
    h = HASH_VAL(h, p->gen);
    if (p->tensor) {
        const kiln_tensor *t = p->tensor;
        h = HASH_VAL(h, t->storage);
        h = HASH_VAL(h, t->offset);
        h = HASH_VAL(h, t->dtype);
        h = hash_bytes(h, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    }
    return h;
}

static int same_view(const kiln_tensor *a, const kiln_tensor *b)
{
    if (a == b) return 1;
    if (a->storage != b->storage || a->offset != b->offset || a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i] || a->strides[i] != b->strides[i]) return 0;
    return 1;
}

static int node_key_eq(const pnode *a, const pnode *b)
{
    if (a->hash != b->hash || a->kind != b->kind || a->op != b->op || a->cast_to != b->cast_to || a->mask != b->mask ||
        a->ndim != b->ndim || a->nchild != b->nchild || a->gen != b->gen)
        return 0;
    if (memcmp(&a->value, &b->value, sizeof a->value) != 0) return 0;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    for (int i = 0; i < a->nchild; i++)
        if (a->child[i] != b->child[i]) return 0;
    if ((a->tensor == NULL) != (b->tensor == NULL)) return 0;
    if (a->tensor && !same_view(a->tensor, b->tensor)) return 0;
    return 1;
}

static kiln_status oom(pbuild *b)
{
    return KILN_ERROR(b->ctx, KILN_ERR_OOM, "kiln_assign: out of host memory while planning the expression");
}

static int htab_grow(pbuild *b)
{
    size_t ncap = b->hcap ? b->hcap * 2 : 16; /* small first: a few nodes stay in malloc's fast caches */
    int *t = malloc(ncap * sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < ncap; i++) t[i] = -1;
    for (int id = 0; id < b->nn; id++) {
        size_t k = (size_t)b->n[id].hash & (ncap - 1);
        while (t[k] >= 0) k = (k + 1) & (ncap - 1);
        t[k] = id;
    }
    free(b->htab);
    b->htab = t;
    b->hcap = ncap;
    return 0;
}

/* Returns the id of the node equal to *p, adding it when new; -1 on out of memory. */
static int intern(pbuild *b, pnode *p)
{
    p->hash = node_key_hash(p);
    if ((size_t)(b->nn + 1) * 2 > b->hcap && htab_grow(b)) return -1;
    size_t k = (size_t)p->hash & (b->hcap - 1);
    while (b->htab[k] >= 0) {
        if (node_key_eq(&b->n[b->htab[k]], p)) return b->htab[k];
        k = (k + 1) & (b->hcap - 1);
    }
    if (b->nn == b->ncap) {
        int ncap = b->ncap ? b->ncap * 2 : 4;
        pnode *nn = realloc(b->n, (size_t)ncap * sizeof *nn);
        if (!nn) return -1;
        b->n = nn;
        b->ncap = ncap;
    }
    b->n[b->nn] = *p;
    b->htab[k] = b->nn;
    return b->nn++;
}

static int emap_get(const pbuild *b, const kiln_expr *e)
{
    if (!b->ecap) return -1;
    size_t k = (size_t)ptr_hash(e) & (b->ecap - 1);
    while (b->ekey[k]) {
        if (b->ekey[k] == e) return b->eval[k];
        k = (k + 1) & (b->ecap - 1);
    }
    return -1;
}

static int emap_put(pbuild *b, const kiln_expr *e, int id)
{
    if ((b->ecount + 1) * 2 > b->ecap) {
        size_t ncap = b->ecap ? b->ecap * 2 : 16;
        const kiln_expr **nk = calloc(ncap, sizeof *nk);
        int *nv = malloc(ncap * sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return -1;
        }
        for (size_t i = 0; i < b->ecap; i++) {
            if (!b->ekey[i]) continue;
            size_t k = (size_t)ptr_hash(b->ekey[i]) & (ncap - 1);
            while (nk[k]) k = (k + 1) & (ncap - 1);
            nk[k] = b->ekey[i];
            nv[k] = b->eval[i];
        }
        free(b->ekey);
        free(b->eval);
        b->ekey = nk;
        b->eval = nv;
        b->ecap = ncap;
    }
    size_t k = (size_t)ptr_hash(e) & (b->ecap - 1);
    while (b->ekey[k]) k = (k + 1) & (b->ecap - 1);
    b->ekey[k] = e;
    b->eval[k] = id;
    b->ecount++;
    return 0;
}

static int is_wide(kiln_dtype dt)
{
    return dt == KILN_DTYPE_F64 || dt == KILN_DTYPE_I32;
}

static int canon(pbuild *b, const kiln_expr *e, kiln_status *st);

/* A variance (RED_VAR) where it takes two passes (KILN_VAR_PASSES, kiln_backend.var_one_pass):
 * canonicalizes mean((x - mean(x))^2) in its place, the same nodes the two-pass builder
 * always made (so the kernels are those the backend ran before RED_VAR). -1 on failure. */
static int canon_var_two_pass(pbuild *b, const kiln_expr *e, kiln_status *st)
{
    if (b->nlowered == b->clowered) {
        int ncap = b->clowered ? 2 * b->clowered : 4;
        kiln_expr **nl = realloc(b->lowered, (size_t)ncap * sizeof *nl);
        if (!nl) {
            *st = oom(b);
            return -1;
        }
        b->lowered = nl;
        b->clowered = ncap;
    }
    kiln_expr_retain(e->child[0]);
    kiln_expr *lo = kiln__var_two_pass(e->child[0], e->mask);
    b->lowered[b->nlowered++] = lo;
    int id = canon(b, lo, st);
    if (id >= 0 && emap_put(b, e, id)) {
        *st = oom(b);
        return -1;
    }
    return id;
}

/* Converts e into the canonical DAG; returns the node id or -1 (status recorded). */
static int canon(pbuild *b, const kiln_expr *e, kiln_status *st)
{
    int id = emap_get(b, e);
    if (id >= 0) return id;
    if (e->kind == KILN_EN_REDUCE && e->op == KILN_POP_RED_VAR) {
        if (b->var_env < -1) { /* KILN_VAR_PASSES=1|2, else the backend's rule */
            static const char *const ways[] = {"1", "2"};
            kiln_status s = kiln__env_choice(b->ctx, "kiln_assign", "KILN_VAR_PASSES", ways, 2, &b->var_env);
            if (s != KILN_OK) {
                *st = s;
                return -1;
            }
        }
        const kiln_backend *be = b->ctx->backend;
        const kiln_expr *x = e->child[0];
        int64_t var_numel = 1; /* the variance's values: x's extents outside mask */
        for (int a = 0; a < x->ndim; a++)
            if (!((e->mask >> a) & 1u)) var_numel *= x->shape[a];
        const int written = b->dst_numel <= var_numel;
        int one = b->var_env == 0 || (b->var_env < 0 && be && be->var_one_pass &&
                                      be->var_one_pass(b->ctx, x->dtype, x->ndim, x->shape, e->mask, written));
        if (!one) return canon_var_two_pass(b, e, st);
    }
    pnode p;
    memset(&p, 0, sizeof p);
    p.kind = e->kind;
    p.op = e->op;
    p.cast_to = e->cast_to;
    p.ndim = e->ndim;
    memcpy(p.shape, e->shape, sizeof p.shape);
    p.mask = e->mask;
    p.size = 1;
    switch ((kiln_enode_kind)e->kind) {
    case KILN_EN_ERROR: *st = KILN_ERROR(b->ctx, e->status, "%s", e->msg); return -1;
    case KILN_EN_TENSOR:
        if (e->tensor->ctx != b->ctx) {
            char buf[200];
            *st = KILN_ERROR(b->ctx, KILN_ERR_CONTEXT,
                             "kiln_assign: argument 'e' reads tensor %s of another context than 'dst'",
                             kiln__tensor_str(buf, sizeof buf, e->tensor));
            return -1;
        }
        p.tensor = e->tensor;
        p.f64 = (uint8_t)is_wide(e->tensor->dtype);
        p.nleaves = 1;
        break;
    case KILN_EN_SCALAR: p.value = e->value; break;
    case KILN_EN_GEN:
        p.value = e->value;
        p.gen = e;
        p.has_gen = 1;
        break;
    case KILN_EN_OP:
    case KILN_EN_REDUCE:
    case KILN_EN_SQUEEZE:
        p.nchild = e->nchild;
        for (int i = 0; i < e->nchild; i++) {
            int c = canon(b, e->child[i], st);
            if (c < 0) return -1;
            p.child[i] = c;
            const pnode *cn = &b->n[c];
            p.size += cn->size;
            p.nleaves += cn->nleaves;
            p.has_gen |= cn->has_gen;
            p.f64 |= cn->f64;
        }
        if (e->kind == KILN_EN_OP && e->op == KILN_POP_CAST && is_wide(e->cast_to)) p.f64 = 1;
        if (e->kind == KILN_EN_REDUCE && (e->op == KILN_POP_RED_ARGMAX || e->op == KILN_POP_RED_ARGMIN)) p.f64 = 1;
        break;
    default:
        *st = KILN_ERROR(b->ctx, KILN_ERR_INTERNAL, "kiln_assign: argument 'e' has a node of unknown kind %d",
                         (int)e->kind);
        return -1;
    }
    id = intern(b, &p);
    if (id < 0 || emap_put(b, e, id)) {
        *st = oom(b);
        return -1;
    }
    return id;
}

/* ---- plan bookkeeping ----------------------------------------------------------------- */

static kiln_status add_temp(pbuild *b, kiln_tensor *t)
{
    kiln_plan *P = b->plan;
    if (P->ntemps == b->tcap) {
        int ncap = b->tcap ? b->tcap * 2 : 8;
        kiln_tensor **nt = realloc(P->temps, (size_t)ncap * sizeof *nt);
        if (!nt) {
            kiln_tensor_release(t);
            return oom(b);
        }
        P->temps = nt;
        b->tcap = ncap;
    }
    P->temps[P->ntemps++] = t;
    return KILN_OK;
}

static void kernel_free(kiln_plan_kernel *k)
{
    free(k->inputs);
    free(k->consts);
    free(k->streams);
    free(k->instr);
}

void kiln__plan_free(kiln_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->nkernels; i++) kernel_free(&p->kernels[i]);
    free(p->kernels);
    for (int i = 0; i < p->ntemps; i++) kiln_tensor_release(p->temps[i]);
    free(p->temps);
    free(p);
}

/* ---- one kernel ----------------------------------------------------------------------- */

typedef struct kst {
    pbuild *b;
    int root;
    int is_top;
    int nd;
    int64_t D[KILN_MAX_DIMS];
    uint32_t M;
    kiln_tensor *out;
    int64_t ostr[KILN_MAX_DIMS];
    int is_row;
    kiln_plan_instr *ins;
    uint8_t *forced;
    int *dep;
    int ni, ci;
    kiln_plan_input *in;
    int nin, cin;
    double *cs;
    int ncs, ccs;
    uint64_t *st;
    int nst, cst;
    int *memo;
    int over;
    kiln_status status;
} kst;

#define EMIT_ERR  (-1)
#define EMIT_OVER (-2)

static kiln_status plan_into(pbuild *b, kiln_tensor *out, int root, int is_top, kiln_round round);

static void kst_free(kst *k)
{
    free(k->ins);
    free(k->forced);
    free(k->dep);
    free(k->in);
    free(k->cs);
    free(k->st);
    free(k->memo);
}

/* Doubles *p's room from 4: most plans hold one kernel of a few inputs, and a first block of
 * 32 (kernels of ~200 bytes, inputs of ~90) was past malloc's small caches (tools/host-prof:
 * its consolidations were a tenth of a small assignment's host time). */
static int grow(void **p, int *cap, size_t elem)
{
    int ncap = *cap ? *cap * 2 : 4;
    void *np = realloc(*p, (size_t)ncap * elem);
    if (!np) return -1;
    *p = np;
    *cap = ncap;
    return 0;
}

static int push(kst *k, kiln_pop op, int a, int bb, int c, int space, int dtype)
{
    if (k->ni >= MAX_INSTR) {
        k->over = 1;
        return EMIT_OVER;
    }
    if (k->ni == k->ci) {
        int ncap = k->ci ? k->ci * 2 : 32;
        kiln_plan_instr *ni = realloc(k->ins, (size_t)ncap * sizeof *ni);
        if (ni) k->ins = ni;
        uint8_t *nf = ni ? realloc(k->forced, (size_t)ncap * sizeof *nf) : NULL;
        if (nf) k->forced = nf;
        int *nd = nf ? realloc(k->dep, (size_t)ncap * sizeof *nd) : NULL;
        if (!nd) {
            k->status = oom(k->b);
            return EMIT_ERR;
        }
        k->dep = nd;
        k->ci = ncap;
    }
    kiln_plan_instr *I = &k->ins[k->ni];
    memset(I, 0, sizeof *I);
    I->op = (uint8_t)op;
    I->space = (uint8_t)space;
    I->dtype = (uint8_t)dtype;
    I->a = a;
    I->b = bb;
    I->c = c;
    k->forced[k->ni] = 0;
    int dep = -1;
    for (int i = 0; i < kiln__pop_nargs(op); i++) {
        int o = i == 0 ? a : i == 1 ? bb : c;
        if (k->dep[o] > dep) dep = k->dep[o];
    }
    k->dep[k->ni] = dep;
    return k->ni++;
}

/* Strides of view t per domain axis (t's shape aligned right in D; 0 where broadcast). */
static void domain_strides(const kst *k, const kiln_tensor *t, int64_t *s)
{
    for (int i = 0; i < k->nd; i++) {
        int j = i - (k->nd - t->ndim);
        s[i] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
    }
}

static int add_input(kst *k, const kiln_tensor *t)
{
    for (int i = 0; i < k->nin; i++)
        if (k->in[i].tensor == t) return i;
    if (k->nin >= MAX_INPUTS) {
        k->over = 1;
        return EMIT_OVER;
    }
    if (k->nin == k->cin && grow((void **)&k->in, &k->cin, sizeof *k->in)) {
        k->status = oom(k->b);
        return EMIT_ERR;
    }
    kiln_plan_input *I = &k->in[k->nin];
    memset(I, 0, sizeof *I);
    I->tensor = t;
    I->base = kiln__tensor_base(t);
    I->dtype = t->dtype;
    domain_strides(k, t, I->strides);
    return k->nin++;
}

static int add_const(kst *k, double v)
{
    for (int i = 0; i < k->ncs; i++)
        if (memcmp(&k->cs[i], &v, sizeof v) == 0) return i;
    if (k->ncs == k->ccs && grow((void **)&k->cs, &k->ccs, sizeof *k->cs)) {
        k->status = oom(k->b);
        return EMIT_ERR;
    }
    k->cs[k->ncs] = v;
    return k->ncs++;
}

static int add_stream(kst *k, pnode *p)
{
    if (!p->has_stream) {
        p->stream = kiln__ctx_take_streams(k->b->ctx, 1);
        p->has_stream = 1;
    }
    for (int i = 0; i < k->nst; i++)
        if (k->st[i] == p->stream) return i;
    if (k->nst == k->cst && grow((void **)&k->st, &k->cst, sizeof *k->st)) {
        k->status = oom(k->b);
        return EMIT_ERR;
    }
    k->st[k->nst] = p->stream;
    return k->nst++;
}

static int emit_load(kst *k, const kiln_tensor *t)
{
    int i = add_input(k, t);
    if (i < 0) return i;
    int space = KILN_SPACE_FULL;
    if (k->M) {
        space = KILN_SPACE_ROW;
        for (int a = 0; a < k->nd; a++)
            if (((k->M >> a) & 1u) && k->in[i].strides[a] != 0) space = KILN_SPACE_FULL;
    }
    return push(k, KILN_POP_LOAD, i, 0, 0, space, 0);
}

/* Whether the removed axes of a squeeze are exactly its leading axes. */
static int squeeze_is_leading(const pnode *p)
{
    uint32_t m = p->mask;
    return (m & (m + 1)) == 0;
}

/* Pads shape (rank r) on the left with 1s to rank nd. */
static void pad_shape(int r, const int64_t *s, int nd, int64_t *o)
{
    for (int i = 0; i < nd; i++) {
        int j = i - (nd - r);
        o[i] = j < 0 ? 1 : s[j];
    }
}

/* A reduction fits the kernel when its input shape is D and its axes are M (padded). */
static int reduce_fits(const kst *k, const pnode *p)
{
    if (!k->M) return 0;
    const pnode *c = &k->b->n[p->child[0]];
    if (c->ndim > k->nd) return 0;
    int64_t s[KILN_MAX_DIMS];
    pad_shape(c->ndim, c->shape, k->nd, s);
    for (int i = 0; i < k->nd; i++)
        if (s[i] != k->D[i]) return 0;
    return (p->mask << (k->nd - c->ndim)) == k->M;
}

static kiln_status materialize(pbuild *b, int id);

/* Whether view t read at the domain maps every point onto the element dst writes there. */
static int same_mapping(const kst *k, const kiln_tensor *t)
{
    /* (element sizes differ only between two wraps of one foreign buffer) */
    if (kiln__tensor_base(t) != kiln__tensor_base(k->out) ||
        kiln_dtype_size(t->dtype) != kiln_dtype_size(k->out->dtype))
        return 0;
    int64_t s[KILN_MAX_DIMS];
    domain_strides(k, t, s);
    for (int i = 0; i < k->nd; i++)
        if (k->D[i] > 1 && s[i] != k->ostr[i]) return 0;
    return 1;
}

static int emit(kst *k, int id);

/* A FULL-space copy of instruction x (reductions need FULL arguments). */
static int full_copy(kst *k, int x)
{
    kiln_plan_instr I = k->ins[x];
    int r;
    if (I.op == KILN_POP_LOAD || (kiln__pop_nargs(I.op) > 0 && !kiln__pop_is_reduction(I.op))) {
        r = push(k, I.op, I.a, I.b, I.c, KILN_SPACE_FULL, I.dtype);
    } else {
        int z = add_const(k, 0.0);
        if (z < 0) return z;
        int zc = push(k, KILN_POP_CONST, z, 0, 0, KILN_SPACE_ROW, 0);
        if (zc < 0) return zc;
        r = push(k, KILN_POP_ADD, x, zc, 0, KILN_SPACE_FULL, 0);
    }
    if (r >= 0) k->forced[r] = 1;
    return r;
}

static int emit_node(kst *k, int id)
{
    pbuild *b = k->b;
    pnode *p = &b->n[id];
    if (p->temp) return emit_load(k, p->temp);
    if (p->force_mat && id != k->root) {
        kiln_status s = materialize(b, id);
        if (s != KILN_OK) {
            k->status = s;
            return EMIT_ERR;
        }
        return emit_load(k, b->n[id].temp);
    }
    switch ((kiln_enode_kind)p->kind) {
    case KILN_EN_TENSOR:
        if (k->is_top && kiln__tensors_overlap(p->tensor, k->out) && !same_mapping(k, p->tensor)) {
            kiln_status s = materialize(b, id);
            if (s != KILN_OK) {
                k->status = s;
                return EMIT_ERR;
            }
            return emit_load(k, b->n[id].temp);
        }
        return emit_load(k, p->tensor);
    case KILN_EN_SCALAR: {
        int c = add_const(k, p->value);
        if (c < 0) return c;
        return push(k, KILN_POP_CONST, c, 0, 0, KILN_SPACE_ROW, 0);
    }
    case KILN_EN_GEN: {
        int s = add_stream(k, p);
        if (s < 0) return s;
        int c = 0;
        if (p->op == KILN_POP_BERNOULLI) {
            c = add_const(k, p->value);
            if (c < 0) return c;
        }
        return push(k, (kiln_pop)p->op, s, c, 0, SPACE_WILD, 0);
    }
    case KILN_EN_OP: {
        int a[3] = {0, 0, 0};
        int full = 0, row = 0;
        for (int i = 0; i < p->nchild; i++) {
            a[i] = emit(k, p->child[i]);
            if (a[i] < 0) return a[i];
            int sp = k->ins[a[i]].space;
            if (sp == KILN_SPACE_FULL) full = 1;
            if (sp == KILN_SPACE_ROW) row = 1;
        }
        int space = full ? KILN_SPACE_FULL : row ? KILN_SPACE_ROW : SPACE_WILD;
        int dt = p->op == KILN_POP_CAST ? (int)p->cast_to : 0;
        return push(k, (kiln_pop)p->op, a[0], a[1], a[2], space, dt);
    }
    case KILN_EN_SQUEEZE:
        if (squeeze_is_leading(p)) return emit(k, p->child[0]);
        {
            kiln_status s = materialize(b, id);
            if (s != KILN_OK) {
                k->status = s;
                return EMIT_ERR;
            }
            return emit_load(k, b->n[id].temp);
        }
    case KILN_EN_REDUCE: {
        if (!reduce_fits(k, p)) {
            if (id == k->root && !k->is_top) break; /* a temporary's own reduction always fits */
            kiln_status s = materialize(b, id);
            if (s != KILN_OK) {
                k->status = s;
                return EMIT_ERR;
            }
            return emit_load(k, b->n[id].temp);
        }
        int a = emit(k, p->child[0]);
        if (a < 0) return a;
        if (k->ins[a].space == KILN_SPACE_ROW) {
            a = full_copy(k, a);
            if (a < 0) return a;
        } else if (k->ins[a].space == SPACE_WILD) {
            k->ins[a].space = KILN_SPACE_FULL;
            k->forced[a] = 1;
        }
        int pass = k->dep[a] < 0 ? 0 : k->dep[a] + 1;
        if (pass > MAX_PASS) { /* pass numbers are 8 bits: split the kernel instead */
            k->over = 1;
            return EMIT_OVER;
        }
        int r = push(k, (kiln_pop)p->op, a, 0, 0, KILN_SPACE_ROW, 0);
        if (r < 0) return r;
        k->ins[r].pass = (uint8_t)pass;
        k->dep[r] = pass;
        return r;
    }
    default: break;
    }
    k->status = KILN_ERROR(b->ctx, KILN_ERR_INTERNAL, "kiln_assign: argument 'e': cannot plan node kind %d op %s",
                           (int)p->kind, kiln__pop_name((kiln_pop)p->op));
    return EMIT_ERR;
}

static int emit(kst *k, int id)
{
    if (k->memo[id] >= 0) return k->memo[id];
    int r = emit_node(k, id);
    if (r >= 0) k->memo[id] = r;
    return r;
}

/* Resolves generator spaces and makes every op's space follow its operands. */
static kiln_status settle_spaces(kst *k, int out_instr)
{
    uint8_t *need_full = calloc((size_t)k->ni + 1, 1);
    if (!need_full) return oom(k->b);
    if (!k->is_row) need_full[out_instr] = 1;
    for (int i = k->ni - 1; i >= 0; i--) {
        kiln_plan_instr *I = &k->ins[i];
        if (I->space == SPACE_WILD) I->space = need_full[i] ? KILN_SPACE_FULL : KILN_SPACE_ROW;
        int n = kiln__pop_nargs((kiln_pop)I->op);
        int user_full = I->space == KILN_SPACE_FULL || kiln__pop_is_reduction((kiln_pop)I->op);
        for (int j = 0; j < n && user_full; j++) {
            int o = j == 0 ? I->a : j == 1 ? I->b : I->c;
            need_full[o] = 1;
        }
    }
    free(need_full);
    for (int i = 0; i < k->ni; i++) {
        kiln_plan_instr *I = &k->ins[i];
        int n = kiln__pop_nargs((kiln_pop)I->op);
        if (n == 0 || kiln__pop_is_reduction((kiln_pop)I->op) || k->forced[i]) continue;
        int full = 0;
        for (int j = 0; j < n; j++) {
            int o = j == 0 ? I->a : j == 1 ? I->b : I->c;
            if (k->ins[o].space == KILN_SPACE_FULL) full = 1;
        }
        I->space = full ? KILN_SPACE_FULL : KILN_SPACE_ROW;
    }
    if (k->is_row && k->ins[out_instr].space == KILN_SPACE_FULL)
        return KILN_ERROR(k->b->ctx, KILN_ERR_UNSUPPORTED,
                          "kiln_assign: argument 'e' uses one random generator both per row and per element");
    return KILN_OK;
}

static uint64_t kernel_hash(const kiln_plan_kernel *K)
{
    uint64_t h = HASH_INIT;
    h = HASH_VAL(h, K->ndim);
    h = HASH_VAL(h, K->reduce_mask);
    h = HASH_VAL(h, K->compute_f64);
    h = HASH_VAL(h, K->npasses);
    h = HASH_VAL(h, K->out.is_row);
    h = HASH_VAL(h, K->out.dtype);
    h = HASH_VAL(h, K->out.round);
    h = HASH_VAL(h, K->ninputs);
    h = HASH_VAL(h, K->nconsts);
    h = HASH_VAL(h, K->nstreams);
    h = HASH_VAL(h, K->ninstr);
    h = HASH_VAL(h, K->out_instr);
    for (int i = 0; i < K->ninstr; i++) {
        const kiln_plan_instr *I = &K->instr[i];
        uint8_t bytes[4] = {I->op, I->space, I->dtype, I->pass};
        h = hash_bytes(h, bytes, sizeof bytes);
        h = HASH_VAL(h, I->a);
        h = HASH_VAL(h, I->b);
        h = HASH_VAL(h, I->c);
    }
    for (int i = 0; i <= K->ninputs; i++) {
        const int64_t *s = i < K->ninputs ? K->inputs[i].strides : K->out.strides;
        kiln_dtype dt = i < K->ninputs ? K->inputs[i].dtype : K->out.dtype;
        h = HASH_VAL(h, dt);
        uint32_t zero = 0;
        for (int a = 0; a < K->ndim; a++)
            if (s[a] == 0) zero |= 1u << a;
        uint8_t inner1 = K->ndim > 0 && s[K->ndim - 1] == 1;
        h = HASH_VAL(h, zero);
        h = HASH_VAL(h, inner1);
    }
    return h;
}

/* Picks the domain of a kernel writing out = root; fills k->nd, D, M, is_row, ostr. */
static kiln_status choose_domain(pbuild *b, kst *k, const kiln_tensor *out, int root)
{
    uint8_t *seen = calloc((size_t)b->nn, 1);
    int *stack = malloc(((size_t)b->nn * 3 + 1) * sizeof *stack);
    int *list = malloc(((size_t)b->nn + 1) * sizeof *list);
    if (!seen || !stack || !list) {
        free(seen);
        free(stack);
        free(list);
        return oom(b);
    }
    int ns = 0, nl = 0;
    stack[ns++] = root;
    while (ns > 0) {
        int id = stack[--ns];
        if (seen[id]) continue;
        seen[id] = 1;
        const pnode *p = &b->n[id];
        if (id != root && (p->temp || p->force_mat)) continue;
        if (p->kind == KILN_EN_REDUCE) {
            list[nl++] = id;
            continue;
        }
        if (p->kind == KILN_EN_SQUEEZE && !squeeze_is_leading(p)) continue;
        for (int i = p->nchild - 1; i >= 0; i--)
            if (!seen[p->child[i]]) stack[ns++] = p->child[i];
    }
    int best = -1, best_row = -1;
    for (int i = 0; i < nl && best < 0; i++) {
        const pnode *R = &b->n[list[i]];
        const pnode *c = &b->n[R->child[0]];
        int nd = c->ndim > out->ndim ? c->ndim : out->ndim;
        int64_t Dp[KILN_MAX_DIMS], Op[KILN_MAX_DIMS];
        pad_shape(c->ndim, c->shape, nd, Dp);
        pad_shape(out->ndim, out->shape, nd, Op);
        uint32_t Mp = R->mask << (nd - c->ndim);
        int full = 1, row = 1;
        for (int a = 0; a < nd; a++) {
            if (Op[a] != Dp[a]) full = 0;
            if (Op[a] != (((Mp >> a) & 1u) ? 1 : Dp[a])) row = 0;
        }
        if (full)
            best = list[i];
        else if (row && best_row < 0)
            best_row = list[i];
    }
    free(seen);
    free(stack);
    free(list);
    int pick = best >= 0 ? best : best_row;
    if (pick >= 0) {
        const pnode *R = &b->n[pick];
        const pnode *c = &b->n[R->child[0]];
        k->nd = c->ndim > out->ndim ? c->ndim : out->ndim;
        pad_shape(c->ndim, c->shape, k->nd, k->D);
        k->M = R->mask << (k->nd - c->ndim);
        k->is_row = best < 0;
    } else {
        k->nd = out->ndim;
        memcpy(k->D, out->shape, sizeof k->D);
        k->M = 0;
        k->is_row = 0;
    }
    for (int i = 0; i < k->nd; i++) {
        int j = i - (k->nd - out->ndim);
        k->ostr[i] = (j < 0 || ((k->M >> i) & 1u && k->is_row)) ? 0 : out->strides[j];
    }
    return KILN_OK;
}

/* Picks a node of the last kernel attempt to materialize so the kernel gets smaller; -1 if
 * none. Prefers the largest subtree that fits the limits comfortably. */
static int pick_split(const kst *k)
{
    const pbuild *b = k->b;
    int best = -1, any = -1;
    for (int id = 0; id < b->nn; id++) {
        const pnode *p = &b->n[id];
        if (k->memo[id] < 0 || id == k->root || p->temp || p->force_mat) continue;
        if (p->kind != KILN_EN_OP && p->kind != KILN_EN_REDUCE) continue;
        if (p->has_gen) {
            /* A generator's numbers depend on where it is evaluated: only split at D's shape. */
            int64_t s[KILN_MAX_DIMS];
            if (p->ndim > k->nd) continue;
            pad_shape(p->ndim, p->shape, k->nd, s);
            if (memcmp(s, k->D, sizeof(int64_t) * (size_t)k->nd) != 0) continue;
        }
        if (p->size < 2) continue;
        if (any < 0 || p->size > b->n[any].size) any = id;
        if (p->size <= MAX_INSTR / 2 && p->nleaves <= MAX_INPUTS / 2 && (best < 0 || p->size > b->n[best].size))
            best = id;
    }
    return best >= 0 ? best : any;
}

static kiln_status kernel_emit(pbuild *b, kst *k, int root)
{
    for (;;) {
        k->ni = k->nin = k->ncs = k->nst = 0;
        k->over = 0;
        k->status = KILN_OK;
        for (int i = 0; i < b->nn; i++) k->memo[i] = -1;
        int r = emit(k, root);
        if (r >= 0) return KILN_OK;
        if (r == EMIT_ERR) return k->status;
        int s = pick_split(k);
        if (s < 0)
            return KILN_ERROR(b->ctx, KILN_ERR_LIMIT,
                              "kiln_assign: argument 'e' cannot be split to fit a kernel "
                              "(%d inputs, %d instructions at most)",
                              MAX_INPUTS, MAX_INSTR);
        b->n[s].force_mat = 1;
    }
}

static kiln_status plan_into(pbuild *b, kiln_tensor *out, int root, int is_top, kiln_round round)
{
    if (kiln__numel(out->ndim, out->shape) == 0) return KILN_OK;
    kst k;
    memset(&k, 0, sizeof k);
    k.b = b;
    k.root = root;
    k.is_top = is_top;
    k.out = out;
    kiln_status s = choose_domain(b, &k, out, root);
    if (s != KILN_OK) return s;
    k.memo = malloc((size_t)b->nn * sizeof *k.memo);
    if (!k.memo) return oom(b);
    s = kernel_emit(b, &k, root);
    if (s == KILN_OK) s = settle_spaces(&k, k.memo[root]);
    if (s != KILN_OK) {
        kst_free(&k);
        return s;
    }
    kiln_plan *P = b->plan;
    if (P->nkernels == b->kcap && grow((void **)&P->kernels, &b->kcap, sizeof *P->kernels)) {
        kst_free(&k);
        return oom(b);
    }
    kiln_plan_kernel *K = &P->kernels[P->nkernels];
    memset(K, 0, sizeof *K);
    K->ndim = k.nd;
    memcpy(K->shape, k.D, sizeof K->shape);
    K->reduce_mask = k.M;
    int npasses = 0, f64 = is_wide(out->dtype);
    for (int i = 0; i < k.ni; i++) {
        if (kiln__pop_is_reduction((kiln_pop)k.ins[i].op) && k.ins[i].pass + 1 > npasses) npasses = k.ins[i].pass + 1;
        if (k.ins[i].op == KILN_POP_CAST && is_wide((kiln_dtype)k.ins[i].dtype)) f64 = 1;
    }
    for (int i = 0; i < k.nin; i++)
        if (is_wide(k.in[i].dtype)) f64 = 1;
    K->compute_f64 = f64;
    K->npasses = npasses;
    K->ninputs = k.nin;
    K->nconsts = k.ncs;
    K->nstreams = k.nst;
    K->ninstr = k.ni;
    K->inputs = k.in;
    K->consts = k.cs;
    K->streams = k.st;
    K->instr = k.ins;
    k.in = NULL;
    k.cs = NULL;
    k.st = NULL;
    k.ins = NULL;
    K->out_instr = k.memo[root];
    K->out.tensor = out;
    K->out.base = kiln__tensor_base(out);
    K->out.dtype = out->dtype;
    memcpy(K->out.strides, k.ostr, sizeof K->out.strides);
    K->out.is_row = k.is_row;
    K->out.round = KILN_ROUND_NEAREST;
    if (round == KILN_ROUND_STOCHASTIC && (out->dtype == KILN_DTYPE_F16 || out->dtype == KILN_DTYPE_BF16)) {
        K->out.round = KILN_ROUND_STOCHASTIC;
        K->out.sr_stream = kiln__ctx_take_streams(b->ctx, 1);
    }
    K->hash = kernel_hash(K);
    P->nkernels++;
    kst_free(&k);
    return KILN_OK;
}

/* Evaluates node id into a temporary (or, for a squeeze, a view of one) and records it in
 * the node, so every later use is a LOAD. */
static kiln_status materialize(pbuild *b, int id)
{
    pnode *p = &b->n[id];
    if (p->temp) return KILN_OK;
    if (p->kind == KILN_EN_SQUEEZE) {
        int c = p->child[0];
        KILN_TRY(materialize(b, c));
        kiln_tensor *ct = b->n[c].temp;
        int64_t strides[KILN_MAX_DIMS];
        int nd = 0;
        for (int i = 0; i < ct->ndim; i++)
            if (!((p->mask >> i) & 1u)) strides[nd++] = ct->strides[i];
        kiln_tensor *v;
        KILN_TRY(kiln__tensor_view(ct, p->ndim, p->shape, strides, ct->offset, &v));
        KILN_TRY(add_temp(b, v));
        b->n[id].temp = v;
        return KILN_OK;
    }
    kiln_dtype dt;
    if (p->kind == KILN_EN_TENSOR)
        dt = p->tensor->dtype;
    else if (p->kind == KILN_EN_REDUCE && (p->op == KILN_POP_RED_ARGMAX || p->op == KILN_POP_RED_ARGMIN))
        dt = KILN_DTYPE_I32;
    else
        dt = p->f64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32;
    kiln_tensor *t;
    KILN_TRY(kiln__tensor_new(b->ctx, dt, p->ndim, p->shape, __FILE__, __LINE__, &t));
    KILN_TRY(add_temp(b, t));
    KILN_TRY(plan_into(b, t, id, 0, KILN_ROUND_NEAREST));
    b->n[id].temp = t;
    return KILN_OK;
}

/* ---- entry points --------------------------------------------------------------------- */

static void pbuild_free(pbuild *b)
{
    for (int i = 0; i < b->nlowered; i++) kiln_expr_release(b->lowered[i]);
    free(b->lowered);
    free(b->n);
    free(b->htab);
    free(b->ekey);
    free(b->eval);
}

kiln_status kiln__plan_build(kiln_tensor *dst, const kiln_expr *e, kiln_round round, kiln_plan **out)
{
    if (!dst) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_assign: argument 'dst' is NULL");
    kiln_ctx *ctx = dst->ctx;
    if (!e) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_assign: argument 'e' is NULL");
    if (!out) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln__plan_build: argument 'out' is NULL");
    if (e->kind == KILN_EN_ERROR) return KILN_ERROR(ctx, e->status, "%s", e->msg);
    char sd[160], se[160];
    int bn;
    int64_t bs[KILN_MAX_DIMS];
    /* numpy's assignment rule: e broadcasts to dst; extra leading axes of e must be 1. */
    int extra = e->ndim > dst->ndim ? e->ndim - dst->ndim : 0;
    int ok = kiln__broadcast_shapes(e->ndim - extra, e->shape + extra, dst->ndim, dst->shape, &bn, bs) &&
             bn == dst->ndim;
    for (int i = 0; ok && i < bn; i++)
        if (bs[i] != dst->shape[i]) ok = 0;
    for (int i = 0; ok && i < extra; i++)
        if (e->shape[i] != 1) ok = 0;
    if (!ok)
        return KILN_ERROR(
            ctx, KILN_ERR_SHAPE,
            "kiln_assign: argument 'dst' has shape %s, the expression's shape %s does not broadcast to it",
            kiln__shape_str(sd, sizeof sd, dst->ndim, dst->shape), kiln__shape_str(se, sizeof se, e->ndim, e->shape));
    if (kiln__tensor_has_aliasing(dst))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS, "kiln_assign: argument 'dst' (%s) is %s; its elements alias",
                          kiln__tensor_str(sd, sizeof sd, dst), kiln__tensor_alias_reason(dst));
    if (round == KILN_ROUND_DEFAULT) round = ctx->round;
    if (round != KILN_ROUND_STOCHASTIC) round = KILN_ROUND_NEAREST;

    pbuild b;
    memset(&b, 0, sizeof b);
    b.ctx = ctx;
    b.var_env = -2;
    b.dst_numel = kiln_tensor_numel(dst);
    b.plan = calloc(1, sizeof *b.plan);
    if (!b.plan) return oom(&b);
    kiln_status st = KILN_OK;
    int root = canon(&b, e, &st);
    if (root < 0) goto fail;

    kiln_tensor *target = dst;
    if (extra > 0) { /* dst seen with e's leading size-1 axes */
        int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS];
        for (int i = 0; i < e->ndim; i++) {
            shape[i] = i < extra ? 1 : dst->shape[i - extra];
            strides[i] = i < extra ? 0 : dst->strides[i - extra];
        }
        kiln_tensor *v;
        st = kiln__tensor_view(dst, e->ndim, shape, strides, dst->offset, &v);
        if (st != KILN_OK) goto fail;
        st = add_temp(&b, v);
        if (st != KILN_OK) goto fail;
        target = v;
    }
    /* A squeeze at the root: write through a view of dst with the squeezed axes put back. */
    while (b.n[root].kind == KILN_EN_SQUEEZE) {
        const pnode *sq = &b.n[root];
        const pnode *c = &b.n[sq->child[0]];
        int lead = target->ndim - sq->ndim;
        if (lead + c->ndim > KILN_MAX_DIMS) break;
        int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS];
        int nd = 0, j = lead;
        for (int i = 0; i < lead; i++, nd++) {
            shape[nd] = target->shape[i];
            strides[nd] = target->strides[i];
        }
        for (int i = 0; i < c->ndim; i++, nd++) {
            if ((sq->mask >> i) & 1u) {
                shape[nd] = 1;
                strides[nd] = 0;
            } else {
                shape[nd] = target->shape[j];
                strides[nd] = target->strides[j];
                j++;
            }
        }
        kiln_tensor *v;
        st = kiln__tensor_view(target, nd, shape, strides, target->offset, &v);
        if (st != KILN_OK) goto fail;
        st = add_temp(&b, v);
        if (st != KILN_OK) goto fail;
        target = v;
        root = sq->child[0];
    }
    st = plan_into(&b, target, root, 1, round);
    if (st != KILN_OK) goto fail;
    pbuild_free(&b);
    *out = b.plan;
    return KILN_OK;
fail:
    pbuild_free(&b);
    kiln__plan_free(b.plan);
    return st;
}

void kiln__plan_describe(const kiln_plan *p, char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    size_t k = 0;
#define APPEND(...)                                                       \
    do {                                                                  \
        if (k < cap) {                                                    \
            int w_ = snprintf(buf + k, cap - k, __VA_ARGS__);             \
            if (w_ > 0) k += (size_t)w_ < cap - k ? (size_t)w_ : cap - k; \
        }                                                                 \
    } while (0)
    if (!p) {
        APPEND("kiln: plan (null)");
        return;
    }
    APPEND("kiln: plan kernels=%d temps=%d", p->nkernels, p->ntemps);
    for (int i = 0; i < p->nkernels; i++) {
        const kiln_plan_kernel *K = &p->kernels[i];
        char sh[160];
        int nred = 0;
        for (int j = 0; j < K->ninstr; j++) nred += kiln__pop_is_reduction((kiln_pop)K->instr[j].op);
        APPEND(" | k%d domain=%s mask=0x%x passes=%d instr=%d reductions=%d inputs=%d consts=%d streams=%d out=%s %s%s "
               "compute=%s hash=%016llx",
               i, kiln__shape_str(sh, sizeof sh, K->ndim, K->shape), (unsigned)K->reduce_mask, K->npasses, K->ninstr,
               nred, K->ninputs, K->nconsts, K->nstreams, K->out.is_row ? "row" : "full", kiln_dtype_name(K->out.dtype),
               K->out.round == KILN_ROUND_STOCHASTIC ? " sr" : "", K->compute_f64 ? "f64" : "f32",
               (unsigned long long)K->hash);
    }
#undef APPEND
}
