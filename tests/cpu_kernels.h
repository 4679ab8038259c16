/*
 * tests/cpu_kernels.h — hand-built kiln_plan kernels for the CPU interpreter's tests
 * (test_cpu_exec.c, test_cpu_threads.c): a kernel builder (kb_*), random and poisoned
 * tensors in the test's context g_ctx, and a generator of random kernels (fz_build). Every
 * function is static: each test includes it once.
 */
#ifndef KILN_TESTS_CPU_KERNELS_H
#define KILN_TESTS_CPU_KERNELS_H

#include "check.h"
#include "core/numeric.h"
#include "cpu/cpu.h"

static uint64_t g_seed;
static kiln_ctx *g_ctx;

/* ---- building kernels ----------------------------------------------------------------- */

typedef struct kb {
    kiln_plan_kernel k;
    kiln_plan_input in[8];
    double consts[16];
    uint64_t streams[4];
    kiln_plan_instr ins[48];
} kb;

static void kb_init(kb *b, int ndim, const int64_t *shape, uint32_t mask, int f64)
{
    memset(b, 0, sizeof *b);
    b->k.ndim = ndim;
    for (int a = 0; a < ndim; a++) b->k.shape[a] = shape[a];
    b->k.reduce_mask = mask;
    b->k.compute_f64 = f64;
    b->k.inputs = b->in;
    b->k.consts = b->consts;
    b->k.streams = b->streams;
    b->k.instr = b->ins;
    b->k.out.round = KILN_ROUND_NEAREST;
}

/* Strides of tensor t along the domain axes: map[d] = the tensor axis of domain axis d,
 * or -1 (broadcast). */
static void map_strides(const kiln_tensor *t, int ndim, const int *map, int64_t *strides)
{
    const int64_t *sh = kiln_tensor_shape(t), *st = kiln_tensor_strides(t);
    for (int d = 0; d < ndim; d++) strides[d] = (map[d] >= 0 && sh[map[d]] != 1) ? st[map[d]] : 0;
}

static int kb_input(kb *b, const kiln_tensor *t, const int *map)
{
    int j = b->k.ninputs++;
    b->in[j].tensor = t;
    b->in[j].base = kiln__tensor_base(t);
    b->in[j].dtype = kiln_tensor_dtype(t);
    map_strides(t, b->k.ndim, map, b->in[j].strides);
    return j;
}

static int kb_const(kb *b, double v)
{
    b->consts[b->k.nconsts] = v;
    return b->k.nconsts++;
}

static int kb_stream(kb *b, uint64_t s)
{
    b->streams[b->k.nstreams] = s;
    return b->k.nstreams++;
}

static int kb_op(kb *b, kiln_pop op, kiln_space sp, int a, int bb, int c)
{
    int i = b->k.ninstr++;
    b->ins[i] = (kiln_plan_instr){.op = (uint8_t)op, .space = (uint8_t)sp, .a = a, .b = bb, .c = c};
    return i;
}

static int kb_red(kb *b, kiln_pop op, int a, int pass)
{
    int i = kb_op(b, op, KILN_SPACE_ROW, a, 0, 0);
    b->ins[i].pass = (uint8_t)pass;
    if (pass + 1 > b->k.npasses) b->k.npasses = pass + 1;
    return i;
}

static void kb_out(kb *b, kiln_tensor *t, const int *map, int is_row, int instr)
{
    b->k.out.tensor = t;
    b->k.out.base = kiln__tensor_base(t);
    b->k.out.dtype = kiln_tensor_dtype(t);
    map_strides(t, b->k.ndim, map, b->k.out.strides);
    b->k.out.is_row = is_row;
    b->k.out_instr = instr;
}

static inline kiln_status kb_run(kb *b)
{
    return kiln__cpu_exec_kernel(g_ctx, &b->k);
}

/* ---- tensors -------------------------------------------------------------------------- */

/* Random tensor of dtype; host receives the stored values (as doubles). */
static kiln_tensor *rand_tensor(kiln_dtype dt, int nd, const int64_t *shape, double lo, double hi, double *host)
{
    int64_t n = 1;
    for (int a = 0; a < nd; a++) n *= shape[a];
    double *tmp = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    check_fill(&g_seed, tmp, n, lo, hi);
    kiln_tensor *t = NULL;
    CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, dt, nd, shape, tmp, KILN_DTYPE_F64, &t));
    if (host) CHECK_OK(g_ctx, kiln_tensor_read(t, host, KILN_DTYPE_F64));
    free(tmp);
    return t;
}

static kiln_tensor *poison_tensor(kiln_dtype dt, int nd, const int64_t *shape)
{
    kiln_tensor *t = NULL;
    double v = kiln__dtype_is_float(dt) ? NAN : -77.0;
    CHECK_OK(g_ctx, kiln_tensor_full(g_ctx, dt, nd, shape, v, &t));
    return t;
}

static double *read_all(const kiln_tensor *t)
{
    int64_t n = kiln_tensor_numel(t);
    double *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    CHECK_OK(g_ctx, kiln_tensor_read(t, h, KILN_DTYPE_F64));
    return h;
}

/* Compares n values; counts one CHECK per array (prints the first bad index). */
static void check_array(const char *what, const double *got, const double *want, int64_t n, double tol)
{
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        double s = fabs(want[i]) > 1.0 ? fabs(want[i]) : 1.0;
        int ok = (isnan(got[i]) && isnan(want[i])) || got[i] == want[i] || fabs(got[i] - want[i]) <= tol * s;
        if (!ok) bad = i;
    }
    if (bad >= 0) fprintf(stderr, "%s: index %lld: got %.17g want %.17g\n", what, (long long)bad, got[bad], want[bad]);
    CHECK(bad < 0);
}

/* ---- random kernels ------------------------------------------------------------------- */

static int fz_pick(uint64_t *s, int n)
{
    return (int)(check_rand_u64(s) % (uint64_t)n);
}

/* A random kernel of fz_build: the kernel, its domain, and the tensors it uses. */
typedef struct fz_kernel {
    kb b;
    int ndim;
    int64_t shape[KILN_MAX_DIMS], numel;
    uint32_t mask;
    int out_i, is_row;    /* the stored instruction; ROW output (one value per row) */
    kiln_tensor *out;     /* f64, poisoned; (shape) or, ROW, shape's kept axes */
    kiln_tensor *keep[8]; /* the input views */
    int nkeep;
} fz_kernel;

/* One random kernel into f: rank 1..4 with axis sizes drawn from sizes[0..nsizes-1] (an axis
 * that would take the domain past cap points is 1), reduced axes, inputs (broadcast,
 * transposed, sliced; some row-valued), a random SSA program with reductions in several
 * passes, RAND, a FULL or ROW output. f64: the compute type. fz_release frees it. */
static void fz_build(fz_kernel *f, uint64_t *s, const int64_t *sizes, int nsizes, int64_t cap, int f64)
{
    kb *b = &f->b;
    int ndim = 1 + fz_pick(s, 4);
    int64_t shape[KILN_MAX_DIMS];
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        shape[d] = sizes[fz_pick(s, nsizes)];
        if (numel * shape[d] > cap) shape[d] = 1;
        numel *= shape[d];
    }
    uint32_t mask = fz_pick(s, 4) == 0 ? 0u : (uint32_t)fz_pick(s, 1 << ndim);
    kb_init(b, ndim, shape, mask, f64);
    kiln_tensor **keep = f->keep;
    int nkeep = 0;
    int ninputs = 1 + fz_pick(s, 3);
    int full_loads[4], nfull_loads = 0, row_loads[4], nrow_loads = 0;
    for (int j = 0; j < ninputs; j++) {
        int rowin = mask != 0 && fz_pick(s, 3) == 0;
        int64_t ishape[KILN_MAX_DIMS];
        for (int d = 0; d < ndim; d++) ishape[d] = ((rowin && (mask >> d & 1u)) || fz_pick(s, 6) == 0) ? 1 : shape[d];
        /* storage: axes in a random order, one axis maybe twice as long (then sliced ::2) */
        int perm[KILN_MAX_DIMS], inv[KILN_MAX_DIMS];
        for (int d = 0; d < ndim; d++) perm[d] = d;
        for (int d = ndim - 1; d > 0; d--) {
            int e = fz_pick(s, d + 1), t = perm[d];
            perm[d] = perm[e];
            perm[e] = t;
        }
        for (int d = 0; d < ndim; d++) inv[perm[d]] = d;
        int sliced = fz_pick(s, 3) == 0 ? fz_pick(s, ndim) : -1;
        int64_t sshape[KILN_MAX_DIMS];
        for (int d = 0; d < ndim; d++) sshape[d] = ishape[perm[d]] * (perm[d] == sliced ? 2 : 1);
        const kiln_dtype dts[4] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_BF16};
        kiln_tensor *st = rand_tensor(dts[fz_pick(s, 4)], ndim, sshape, -2, 2, NULL), *pv = NULL, *v = NULL;
        CHECK_OK(g_ctx, kiln_tensor_permute(st, inv, &pv));
        if (sliced >= 0) {
            kiln_slice sl[KILN_MAX_DIMS];
            for (int d = 0; d < ndim; d++) sl[d] = d == sliced ? KILN_SLICE_STEP(1, KILN_NONE, 2) : KILN_SLICE_ALL;
            CHECK_OK(g_ctx, kiln_tensor_slice(pv, ndim, sl, &v));
            kiln_tensor_release(pv);
        } else {
            v = pv;
        }
        kiln_tensor_release(st);
        keep[nkeep++] = v;
        int map[KILN_MAX_DIMS];
        for (int d = 0; d < ndim; d++) map[d] = d;
        int ix = kb_input(b, v, map);
        int li = kb_op(b, KILN_POP_LOAD, rowin ? KILN_SPACE_ROW : KILN_SPACE_FULL, ix, 0, 0);
        if (rowin)
            row_loads[nrow_loads++] = li;
        else
            full_loads[nfull_loads++] = li;
    }
    (void)full_loads;
    (void)row_loads;
    int ready[64];
    for (int i = 0; i < b->k.ninstr; i++) ready[i] = -1;
    int nsteps = 3 + fz_pick(s, 10);
    static const kiln_pop un[] = {KILN_POP_NEG,  KILN_POP_ABS,  KILN_POP_SQR, KILN_POP_SIGMOID,
                                  KILN_POP_TANH, KILN_POP_RELU, KILN_POP_SIGN};
    static const kiln_pop bin[] = {KILN_POP_ADD, KILN_POP_SUB, KILN_POP_MUL, KILN_POP_MAX,
                                   KILN_POP_MIN, KILN_POP_LT,  KILN_POP_GE};
    static const kiln_pop red[] = {KILN_POP_RED_SUM, KILN_POP_RED_MAX, KILN_POP_RED_MIN, KILN_POP_RED_ARGMAX,
                                   KILN_POP_RED_ARGMIN};
    for (int step = 0; step < nsteps && b->k.ninstr < 40; step++) {
        int n = b->k.ninstr;
        int a = n - 1 - fz_pick(s, n < 4 ? n : 4), bb = fz_pick(s, n), c = fz_pick(s, n);
        int kind = fz_pick(s, 10);
        int i;
        if (kind < 3) {
            i = kb_op(b, un[fz_pick(s, 7)], b->ins[a].space, a, 0, 0);
        } else if (kind < 6) {
            i = kb_op(b, bin[fz_pick(s, 7)],
                      (b->ins[a].space == KILN_SPACE_ROW && b->ins[bb].space == KILN_SPACE_ROW) ? KILN_SPACE_ROW
                                                                                                : KILN_SPACE_FULL,
                      a, bb, 0);
        } else if (kind == 6) {
            kiln_space sp = (b->ins[a].space == KILN_SPACE_ROW && b->ins[bb].space == KILN_SPACE_ROW &&
                             b->ins[c].space == KILN_SPACE_ROW)
                                ? KILN_SPACE_ROW
                                : KILN_SPACE_FULL;
            i = kb_op(b, KILN_POP_WHERE, sp, a, bb, c);
        } else if (kind == 7) {
            int si = b->k.nstreams < 4 ? kb_stream(b, 100 + (uint64_t)step) : fz_pick(s, 4);
            i = kb_op(b, KILN_POP_RAND, fz_pick(s, 2) && mask ? KILN_SPACE_ROW : KILN_SPACE_FULL, si, 0, 0);
        } else if (kind == 8) {
            int ci = b->k.nconsts < 16 ? kb_const(b, check_uniform(s, -1, 1)) : fz_pick(s, 16);
            i = kb_op(b, KILN_POP_CONST, KILN_SPACE_ROW, ci, 0, 0);
        } else {
            if (!mask) continue;
            i = kb_red(b, red[fz_pick(s, 5)], a, ready[a] + 1);
        }
        int r = -1;
        if (kiln__pop_is_reduction((kiln_pop)b->ins[i].op)) {
            r = b->ins[i].pass;
        } else {
            int na = kiln__pop_nargs((kiln_pop)b->ins[i].op);
            const int ops[3] = {b->ins[i].a, b->ins[i].b, b->ins[i].c};
            for (int q = 0; q < na; q++) r = ready[ops[q]] > r ? ready[ops[q]] : r;
        }
        ready[i] = r;
    }
    /* output: ROW (the last ROW instruction) or FULL (the last instruction) */
    int out_i = b->k.ninstr - 1, is_row = 0;
    if (mask && fz_pick(s, 2)) {
        for (int i = b->k.ninstr - 1; i >= 0; i--)
            if (b->ins[i].space == KILN_SPACE_ROW) {
                out_i = i;
                is_row = 1;
                break;
            }
    }
    int64_t oshape[KILN_MAX_DIMS];
    int omap[KILN_MAX_DIMS], ond = 0;
    for (int d = 0; d < ndim; d++) {
        if (is_row && (mask >> d & 1u)) {
            omap[d] = -1;
        } else {
            omap[d] = ond;
            oshape[ond++] = shape[d];
        }
    }
    f->out = poison_tensor(KILN_DTYPE_F64, ond, oshape);
    kb_out(b, f->out, omap, is_row, out_i);
    f->nkeep = nkeep;
    f->ndim = ndim;
    for (int d = 0; d < ndim; d++) f->shape[d] = shape[d];
    f->numel = numel;
    f->mask = mask;
    f->out_i = out_i;
    f->is_row = is_row;
}

static void fz_release(fz_kernel *f)
{
    kiln_tensor_release(f->out);
    for (int j = 0; j < f->nkeep; j++) kiln_tensor_release(f->keep[j]);
    f->out = NULL;
    f->nkeep = 0;
}

#endif /* KILN_TESTS_CPU_KERNELS_H */
