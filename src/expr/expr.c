/*
 * src/expr/expr.c — the expression builders: leaves, element-wise operators, generators,
 * reductions (with their lowering), reference counting and the accessors.
 *
 * Every builder consumes the kiln_expr* arguments it is given and returns a new reference,
 * also on error. A bad argument yields an ERROR node whose message names the argument; an
 * error node among the arguments is passed up unchanged (the first one, in argument
 * order). When malloc fails the result is a static out-of-memory node whose retain and
 * release do nothing. Shapes and result dtypes are computed here, eagerly; nothing is
 * evaluated (that is src/expr/plan.c and eval.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr/expr.h"

static char oom_msg[] = "kiln: out of host memory while building an expression";
static struct kiln_expr oom_node = {
    .refcount = -1,
    .kind = KILN_EN_ERROR,
    .dtype = KILN_DTYPE_AUTO,
    .status = KILN_ERR_OOM,
    .msg = oom_msg,
    .size = 1,
    .depth = 1,
};

/* ---- reference counting --------------------------------------------------------------- */

kiln_expr *kiln_expr_retain(kiln_expr *e)
{
    if (e && e->refcount >= 0) e->refcount++;
    return e;
}

void kiln_expr_release(kiln_expr *e)
{
    /* Iterative over a small explicit stack so that long chains do not exhaust the C stack. */
    kiln_expr *local[64];
    kiln_expr **stack = local;
    size_t n = 0, cap = 64;
    if (!e) return;
    stack[n++] = e;
    while (n > 0) {
        kiln_expr *x = stack[--n];
        if (x->refcount < 0) continue;
        if (--x->refcount > 0) continue;
        for (int i = 0; i < x->nchild; i++) {
            if (!x->child[i]) continue;
            if (n == cap) {
                size_t ncap = cap * 2;
                kiln_expr **ns = malloc(ncap * sizeof *ns);
                if (!ns) {
                    /* Out of memory while freeing: fall back to recursion for this child. */
                    kiln_expr_release(x->child[i]);
                    continue;
                }
                memcpy(ns, stack, n * sizeof *ns);
                if (stack != local) free(stack);
                stack = ns;
                cap = ncap;
            }
            stack[n++] = x->child[i];
        }
        if (x->kind == KILN_EN_TENSOR) kiln_tensor_release(x->tensor);
        if (x->kind == KILN_EN_ERROR) free(x->msg);
        free(x);
    }
    if (stack != local) free(stack);
}

static void release_all(int n, kiln_expr **args)
{
    for (int i = 0; i < n; i++) kiln_expr_release(args[i]);
}

/* ---- node construction ---------------------------------------------------------------- */

static kiln_expr *new_node(int kind)
{
    kiln_expr *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->refcount = 1;
    e->kind = (uint8_t)kind;
    e->dtype = KILN_DTYPE_F32;
    e->size = 1;
    e->depth = 1;
    return e;
}

/* An error node with a printf-style message. Consumes nothing. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static kiln_expr *
error_node(kiln_status status, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kiln_expr *e = new_node(KILN_EN_ERROR);
    if (!e) return &oom_node;
    size_t len = strlen(buf);
    e->msg = malloc(len + 1);
    if (!e->msg) {
        free(e);
        return &oom_node;
    }
    memcpy(e->msg, buf, len + 1);
    e->status = status;
    e->dtype = KILN_DTYPE_AUTO;
    return e;
}

/* Checks args for NULL and error nodes. Returns NULL when all are fine; otherwise the node
 * to return (all args consumed). */
static kiln_expr *check_args(const char *fn, int n, kiln_expr **args, const char *const *names)
{
    for (int i = 0; i < n; i++) {
        if (!args[i]) {
            release_all(n, args);
            return error_node(KILN_ERR_NULL, "%s: argument '%s' is NULL", fn, names[i]);
        }
    }
    for (int i = 0; i < n; i++) {
        if (args[i]->kind == KILN_EN_ERROR) {
            kiln_expr *err = kiln_expr_retain(args[i]);
            release_all(n, args);
            return err;
        }
    }
    return NULL;
}

static int pop_makes_fraction(int op)
{
    switch (op) {
    case KILN_POP_DIV:
    case KILN_POP_POW:
    case KILN_POP_SQRT:
    case KILN_POP_RSQRT:
    case KILN_POP_RECIP:
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
    case KILN_POP_RAND:
    case KILN_POP_RANDN: return 1;
    default: return 0;
    }
}

static int pop_gives_integers(int op)
{
    switch (op) {
    case KILN_POP_EQ:
    case KILN_POP_NE:
    case KILN_POP_LT:
    case KILN_POP_LE:
    case KILN_POP_GT:
    case KILN_POP_GE:
    case KILN_POP_FINITE:
    case KILN_POP_SIGN: return 1;
    default: return 0;
    }
}

/* Result dtype from strong dtype, weakness and fraction flag. */
static void settle_dtype(kiln_expr *e, kiln_dtype strong)
{
    if (e->weak || strong == KILN_DTYPE_AUTO) {
        e->dtype = KILN_DTYPE_F32;
        return;
    }
    e->dtype = strong;
    if (e->frac && !kiln__dtype_is_float(strong)) e->dtype = KILN_DTYPE_F32;
}

/* Element-wise node over n (1..3) operands with broadcasting. Consumes args. */
static kiln_expr *build_op(const char *fn, kiln_pop op, int n, kiln_expr **args, const char *const *names)
{
    kiln_expr *bad = check_args(fn, n, args, names);
    if (bad) return bad;
    int nd = args[0]->ndim;
    int64_t shape[KILN_MAX_DIMS];
    memcpy(shape, args[0]->shape, sizeof shape);
    for (int i = 1; i < n; i++) {
        for (int j = 0; j < i; j++) {
            int tn;
            int64_t tmp[KILN_MAX_DIMS];
            if (!kiln__broadcast_shapes(args[j]->ndim, args[j]->shape, args[i]->ndim, args[i]->shape, &tn, tmp)) {
                char sa[160], sb[160];
                kiln__shape_str(sa, sizeof sa, args[i]->ndim, args[i]->shape);
                kiln__shape_str(sb, sizeof sb, args[j]->ndim, args[j]->shape);
                release_all(n, args);
                return error_node(KILN_ERR_SHAPE, "%s: argument '%s' has shape %s, cannot broadcast with '%s' %s", fn,
                                  names[i], sa, names[j], sb);
            }
        }
        int tn;
        int64_t tmp[KILN_MAX_DIMS];
        kiln__broadcast_shapes(nd, shape, args[i]->ndim, args[i]->shape, &tn, tmp);
        nd = tn;
        memcpy(shape, tmp, sizeof shape);
    }
    for (int i = 0; i < n; i++) {
        if (args[i]->depth >= KILN_EXPR_MAX_DEPTH) {
            release_all(n, args);
            return error_node(KILN_ERR_LIMIT,
                              "%s: argument '%s' is already %d levels deep (the limit); evaluate a part of it first "
                              "(kiln_eval)",
                              fn, names[i], KILN_EXPR_MAX_DEPTH);
        }
    }
    kiln_expr *e = new_node(KILN_EN_OP);
    if (!e) {
        release_all(n, args);
        return &oom_node;
    }
    e->op = (uint8_t)op;
    e->ndim = nd;
    memcpy(e->shape, shape, sizeof shape);
    e->nchild = n;
    kiln_dtype strong = KILN_DTYPE_AUTO;
    int weak = 1, frac = pop_makes_fraction(op);
    for (int i = 0; i < n; i++) {
        e->child[i] = args[i];
        e->size += args[i]->size;
        if (args[i]->depth + 1 > e->depth) e->depth = args[i]->depth + 1;
        if (!args[i]->weak) {
            weak = 0;
            strong = strong == KILN_DTYPE_AUTO ? args[i]->dtype : kiln__dtype_promote(strong, args[i]->dtype);
        }
        if (args[i]->frac) frac = 1;
    }
    e->weak = (uint8_t)weak;
    e->frac = (uint8_t)(pop_gives_integers(op) ? 0 : frac);
    settle_dtype(e, strong);
    return e;
}

static kiln_expr *unary(const char *fn, kiln_pop op, kiln_expr *x)
{
    static const char *const names[] = {"x"};
    kiln_expr *args[1] = {x};
    return build_op(fn, op, 1, args, names);
}

static kiln_expr *binary(const char *fn, kiln_pop op, kiln_expr *a, kiln_expr *b)
{
    static const char *const names[] = {"a", "b"};
    kiln_expr *args[2] = {a, b};
    return build_op(fn, op, 2, args, names);
}

/* Marks a freshly built node as producing non-integers (lowered means and dropout). */
static kiln_expr *force_frac(kiln_expr *e)
{
    if (e->kind == KILN_EN_ERROR || e->refcount < 0) return e;
    e->frac = 1;
    if (!e->weak && !kiln__dtype_is_float(e->dtype)) e->dtype = KILN_DTYPE_F32;
    return e;
}

/* ---- leaves --------------------------------------------------------------------------- */

kiln_expr *kiln_t(kiln_tensor *t)
{
    if (!t) return error_node(KILN_ERR_NULL, "kiln_t: argument 't' is NULL");
    kiln_expr *e = new_node(KILN_EN_TENSOR);
    if (!e) return &oom_node;
    e->tensor = kiln_tensor_retain(t);
    e->ndim = t->ndim;
    memcpy(e->shape, t->shape, sizeof e->shape);
    e->dtype = t->dtype;
    return e;
}

kiln_expr *kiln_scalar(double value)
{
    kiln_expr *e = new_node(KILN_EN_SCALAR);
    if (!e) return &oom_node;
    e->value = value;
    e->weak = 1;
    return e;
}

/* ---- element-wise --------------------------------------------------------------------- */

kiln_expr *kiln_neg(kiln_expr *x)
{
    return unary("kiln_neg", KILN_POP_NEG, x);
}
kiln_expr *kiln_abs(kiln_expr *x)
{
    return unary("kiln_abs", KILN_POP_ABS, x);
}
kiln_expr *kiln_sqr(kiln_expr *x)
{
    return unary("kiln_sqr", KILN_POP_SQR, x);
}
kiln_expr *kiln_sqrt(kiln_expr *x)
{
    return unary("kiln_sqrt", KILN_POP_SQRT, x);
}
kiln_expr *kiln_rsqrt(kiln_expr *x)
{
    return unary("kiln_rsqrt", KILN_POP_RSQRT, x);
}
kiln_expr *kiln_reciprocal(kiln_expr *x)
{
    return unary("kiln_reciprocal", KILN_POP_RECIP, x);
}
kiln_expr *kiln_exp(kiln_expr *x)
{
    return unary("kiln_exp", KILN_POP_EXP, x);
}
kiln_expr *kiln_exp2(kiln_expr *x)
{
    return unary("kiln_exp2", KILN_POP_EXP2, x);
}
kiln_expr *kiln_log(kiln_expr *x)
{
    return unary("kiln_log", KILN_POP_LOG, x);
}
kiln_expr *kiln_log2(kiln_expr *x)
{
    return unary("kiln_log2", KILN_POP_LOG2, x);
}
kiln_expr *kiln_sigmoid(kiln_expr *x)
{
    return unary("kiln_sigmoid", KILN_POP_SIGMOID, x);
}
kiln_expr *kiln_tanh(kiln_expr *x)
{
    return unary("kiln_tanh", KILN_POP_TANH, x);
}
kiln_expr *kiln_relu(kiln_expr *x)
{
    return unary("kiln_relu", KILN_POP_RELU, x);
}
kiln_expr *kiln_finite(kiln_expr *x)
{
    return unary("kiln_finite", KILN_POP_FINITE, x);
}
kiln_expr *kiln_sign(kiln_expr *x)
{
    return unary("kiln_sign", KILN_POP_SIGN, x);
}

kiln_expr *kiln_log1p(kiln_expr *x)
{
    return unary("kiln_log1p", KILN_POP_LOG1P, x);
}
kiln_expr *kiln_expm1(kiln_expr *x)
{
    return unary("kiln_expm1", KILN_POP_EXPM1, x);
}
kiln_expr *kiln_sin(kiln_expr *x)
{
    return unary("kiln_sin", KILN_POP_SIN, x);
}
kiln_expr *kiln_cos(kiln_expr *x)
{
    return unary("kiln_cos", KILN_POP_COS, x);
}
kiln_expr *kiln_erf(kiln_expr *x)
{
    return unary("kiln_erf", KILN_POP_ERF, x);
}
kiln_expr *kiln_floor(kiln_expr *x)
{
    return unary("kiln_floor", KILN_POP_FLOOR, x);
}
kiln_expr *kiln_ceil(kiln_expr *x)
{
    return unary("kiln_ceil", KILN_POP_CEIL, x);
}
kiln_expr *kiln_rint(kiln_expr *x)
{
    return unary("kiln_rint", KILN_POP_RINT, x);
}
kiln_expr *kiln_trunc(kiln_expr *x)
{
    return unary("kiln_trunc", KILN_POP_TRUNC, x);
}

kiln_expr *kiln_add(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_add", KILN_POP_ADD, a, b);
}
kiln_expr *kiln_sub(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_sub", KILN_POP_SUB, a, b);
}
kiln_expr *kiln_mul(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_mul", KILN_POP_MUL, a, b);
}
kiln_expr *kiln_div(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_div", KILN_POP_DIV, a, b);
}
kiln_expr *kiln_pow(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_pow", KILN_POP_POW, a, b);
}
kiln_expr *kiln_fmod(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_fmod", KILN_POP_FMOD, a, b);
}
kiln_expr *kiln_maximum(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_maximum", KILN_POP_MAX, a, b);
}
kiln_expr *kiln_minimum(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_minimum", KILN_POP_MIN, a, b);
}
kiln_expr *kiln_eq(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_eq", KILN_POP_EQ, a, b);
}
kiln_expr *kiln_ne(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_ne", KILN_POP_NE, a, b);
}
kiln_expr *kiln_lt(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_lt", KILN_POP_LT, a, b);
}
kiln_expr *kiln_le(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_le", KILN_POP_LE, a, b);
}
kiln_expr *kiln_gt(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_gt", KILN_POP_GT, a, b);
}
kiln_expr *kiln_ge(kiln_expr *a, kiln_expr *b)
{
    return binary("kiln_ge", KILN_POP_GE, a, b);
}

kiln_expr *kiln_clip(kiln_expr *x, double lo, double hi)
{
    if (isnan(lo) || isnan(hi) || lo > hi) {
        kiln_expr_release(x);
        if (isnan(lo)) return error_node(KILN_ERR_ARG, "kiln_clip: argument 'lo' is NaN");
        if (isnan(hi)) return error_node(KILN_ERR_ARG, "kiln_clip: argument 'hi' is NaN");
        return error_node(KILN_ERR_ARG, "kiln_clip: argument 'lo' (%g) is greater than argument 'hi' (%g)", lo, hi);
    }
    static const char *const names[] = {"x"};
    kiln_expr *args[1] = {x};
    kiln_expr *bad = check_args("kiln_clip", 1, args, names);
    if (bad) return bad;
    return kiln_minimum(kiln_maximum(x, kiln_scalar(lo)), kiln_scalar(hi));
}

kiln_expr *kiln_where(kiln_expr *c, kiln_expr *a, kiln_expr *b)
{
    static const char *const names[] = {"c", "a", "b"};
    kiln_expr *args[3] = {c, a, b};
    kiln_expr *e = build_op("kiln_where", KILN_POP_WHERE, 3, args, names);
    /* The condition does not decide the dtype: recompute from a and b. */
    if (e->kind == KILN_EN_OP) {
        kiln_dtype strong = KILN_DTYPE_AUTO;
        int weak = 1, frac = 0;
        for (int i = 1; i < 3; i++) {
            if (!e->child[i]->weak) {
                weak = 0;
                strong =
                    strong == KILN_DTYPE_AUTO ? e->child[i]->dtype : kiln__dtype_promote(strong, e->child[i]->dtype);
            }
            if (e->child[i]->frac) frac = 1;
        }
        e->weak = (uint8_t)weak;
        e->frac = (uint8_t)frac;
        settle_dtype(e, strong);
    }
    return e;
}

kiln_expr *kiln_cast(kiln_expr *x, kiln_dtype dtype)
{
    if (!kiln__dtype_valid(dtype)) {
        kiln_expr_release(x);
        return error_node(KILN_ERR_DTYPE, "kiln_cast: argument 'dtype' (%d) is not a dtype", (int)dtype);
    }
    kiln_expr *e = unary("kiln_cast", KILN_POP_CAST, x);
    if (e->kind == KILN_EN_OP) {
        e->cast_to = dtype;
        e->dtype = dtype;
        e->weak = 0;
        e->frac = 0;
    }
    return e;
}

/* ---- generators ----------------------------------------------------------------------- */

static kiln_expr *generator(kiln_pop op, double p)
{
    kiln_expr *e = new_node(KILN_EN_GEN);
    if (!e) return &oom_node;
    e->op = (uint8_t)op;
    e->value = p;
    e->weak = 1;
    e->frac = (uint8_t)pop_makes_fraction(op);
    return e;
}

kiln_expr *kiln_rand(void)
{
    return generator(KILN_POP_RAND, 0.0);
}
kiln_expr *kiln_randn(void)
{
    return generator(KILN_POP_RANDN, 0.0);
}

kiln_expr *kiln_bernoulli(double p)
{
    if (!(p >= 0.0 && p <= 1.0))
        return error_node(KILN_ERR_ARG, "kiln_bernoulli: argument 'p' (%g) is not in [0, 1]", p);
    return generator(KILN_POP_BERNOULLI, p);
}

kiln_expr *kiln_dropout(kiln_expr *x, double p)
{
    if (!(p >= 0.0 && p < 1.0)) {
        kiln_expr_release(x);
        return error_node(KILN_ERR_ARG, "kiln_dropout: argument 'p' (%g) is not in [0, 1)", p);
    }
    static const char *const names[] = {"x"};
    kiln_expr *args[1] = {x};
    kiln_expr *bad = check_args("kiln_dropout", 1, args, names);
    if (bad) return bad;
    return force_frac(kiln_mul(kiln_mul(x, kiln_bernoulli(1.0 - p)), kiln_scalar(1.0 / (1.0 - p))));
}

/* ---- reductions ----------------------------------------------------------------------- */

/* A keepdims reduction node (op RED_*) of x over mask. Consumes x (not an error node). */
static kiln_expr *reduce_node(kiln_pop op, kiln_expr *x, uint32_t mask)
{
    kiln_expr *e = new_node(KILN_EN_REDUCE);
    if (!e) {
        kiln_expr_release(x);
        return &oom_node;
    }
    e->op = (uint8_t)op;
    e->ndim = x->ndim;
    for (int i = 0; i < x->ndim; i++) e->shape[i] = (mask >> i) & 1u ? 1 : x->shape[i];
    e->nchild = 1;
    e->child[0] = x;
    e->mask = mask;
    e->size = x->size + 1;
    e->depth = x->depth + 1;
    if (op == KILN_POP_RED_ARGMAX || op == KILN_POP_RED_ARGMIN) {
        e->dtype = KILN_DTYPE_I32;
        e->weak = 0;
        e->frac = 0;
    } else {
        e->dtype = x->dtype;
        e->weak = x->weak;
        e->frac = x->frac;
    }
    return e;
}

/* mean of x over mask, keepdims (x consumed, not an error node). */
static kiln_expr *mean_keep(kiln_expr *x, uint32_t mask)
{
    double n = 1.0;
    if (x->kind == KILN_EN_ERROR) return x;
    for (int i = 0; i < x->ndim; i++)
        if ((mask >> i) & 1u) n *= (double)x->shape[i];
    if (mask == 0) return force_frac(kiln_mul(x, kiln_scalar(1.0)));
    return force_frac(kiln_mul(reduce_node(KILN_POP_RED_SUM, x, mask), kiln_scalar(1.0 / n)));
}

int kiln__var_one_pass_columns(kiln_dtype dt, int ndim, const int64_t *shape, uint32_t mask, double cache_bytes,
                               int written)
{
    int last = ndim - 1;
    while (last >= 0 && shape[last] == 1) last--;
    if (last < 0 || ((mask >> last) & 1u)) return 0; /* along rows, or one point */
    double points = 1, rows = 1;
    for (int a = 0; a < ndim; a++) {
        points *= (double)shape[a];
        if ((mask >> a) & 1u) rows *= (double)shape[a];
    }
    /* Broadcast back (batch norm) from 1024 rows: f32 at any size, the rest past the cache. H100
     * since the lanes of step 76 (bench/NOTES.md), one pass against two: f32 batch norm down the
     * columns 0.98-1.28x below the L2 too (4096 x 512 to 1024 x 16384); f16 / bf16 1024 x 65536
     * 1.09-1.13x, below the L2 0.83-0.98x; i32 and 8-byte inputs (f64 arithmetic) past the
     * cache, as measured in steps 57-58. Written out, f16 / bf16 / f32 from 256 rows at any
     * size: with step 77's deeper workers one pass ran 1.15-2.0x faster than two (f16 1024 x
     * 16384 1.86x, 512 x 8192 1.15x, 256 x 65536 1.63x; f32 512 x 8192 1.83x, 256 x 65536
     * 1.41x; H200 f16 / bf16 / f32 1.14-2.09x, step 78); below 256 rows unmeasured. */
    if (written && rows >= 256 && (dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16 || dt == KILN_DTYPE_F32)) return 1;
    if (rows < 1024) return 0;
    return dt == KILN_DTYPE_F32 || points * (double)kiln_dtype_size(dt) > cache_bytes;
}

kiln_expr *kiln__var_two_pass(kiln_expr *x, uint32_t mask)
{
    kiln_expr_retain(x);
    kiln_expr *m = mean_keep(x, mask);
    return mean_keep(kiln_sqr(kiln_sub(x, m)), mask);
}

static kiln_expr *squeeze_node(kiln_expr *x, uint32_t mask)
{
    if (x->kind == KILN_EN_ERROR || mask == 0) return x;
    kiln_expr *e = new_node(KILN_EN_SQUEEZE);
    if (!e) {
        kiln_expr_release(x);
        return &oom_node;
    }
    int nd = 0;
    for (int i = 0; i < x->ndim; i++)
        if (!((mask >> i) & 1u)) e->shape[nd++] = x->shape[i];
    e->ndim = nd;
    e->nchild = 1;
    e->child[0] = x;
    e->mask = mask;
    e->size = x->size + 1;
    e->depth = x->depth + 1;
    e->dtype = x->dtype;
    e->weak = x->weak;
    e->frac = x->frac;
    return e;
}

static kiln_expr *reduce_impl(const char *fn, const char *axes_name, kiln_reduce_op op, kiln_expr *x, int naxes,
                              const int *axes, int keepdims)
{
    static const char *const names[] = {"x"};
    kiln_expr *args[1] = {x};
    if ((int)op < 0 || op >= KILN_REDUCE_COUNT) {
        kiln_expr_release(x);
        return error_node(KILN_ERR_ARG, "%s: argument 'op' (%d) is not a kiln_reduce_op", fn, (int)op);
    }
    kiln_expr *bad = check_args(fn, 1, args, names);
    if (bad) return bad;
    char sh[160];
    uint32_t mask = 0;
    if (x->depth >= KILN_EXPR_MAX_DEPTH - 8) {
        int depth = x->depth;
        kiln_expr_release(x);
        return error_node(KILN_ERR_LIMIT,
                          "%s: argument 'x' is %d levels deep, too close to the limit %d; evaluate a part of it "
                          "first (kiln_eval)",
                          fn, depth, KILN_EXPR_MAX_DEPTH);
    }
    if (naxes < 0 || naxes > KILN_MAX_DIMS) {
        kiln_expr_release(x);
        return error_node(KILN_ERR_AXIS, "%s: argument 'naxes' (%d) is not in [0, %d]", fn, naxes, KILN_MAX_DIMS);
    }
    if (naxes > 0 && !axes) {
        kiln_expr_release(x);
        return error_node(KILN_ERR_NULL, "%s: argument '%s' is NULL with naxes %d", fn, axes_name, naxes);
    }
    if (naxes == 0 && !axes) {
        mask = x->ndim ? (uint32_t)((1u << x->ndim) - 1u) : 0u;
    } else {
        for (int i = 0; i < naxes; i++) {
            int a = axes[i];
            if (a < -x->ndim || a >= x->ndim) {
                kiln__shape_str(sh, sizeof sh, x->ndim, x->shape);
                kiln_expr_release(x);
                return error_node(KILN_ERR_AXIS, "%s: argument '%s': axis %d is out of range for 'x' of shape %s", fn,
                                  axes_name, a, sh);
            }
            if (a < 0) a += x->ndim;
            if ((mask >> a) & 1u) {
                kiln__shape_str(sh, sizeof sh, x->ndim, x->shape);
                kiln_expr_release(x);
                return error_node(KILN_ERR_AXIS, "%s: argument '%s': axis %d is repeated (x has shape %s)", fn,
                                  axes_name, axes[i], sh);
            }
            mask |= 1u << a;
        }
    }
    kiln_expr *r;
    switch (op) {
    case KILN_REDUCE_SUM:
    case KILN_REDUCE_PROD:
    case KILN_REDUCE_MAX:
    case KILN_REDUCE_MIN:
        if (mask == 0) return x;
        r = reduce_node(op == KILN_REDUCE_SUM    ? KILN_POP_RED_SUM
                        : op == KILN_REDUCE_PROD ? KILN_POP_RED_PROD
                        : op == KILN_REDUCE_MAX  ? KILN_POP_RED_MAX
                                                 : KILN_POP_RED_MIN,
                        x, mask);
        break;
    case KILN_REDUCE_ARGMAX:
    case KILN_REDUCE_ARGMIN:
        /* an empty reduced axis has no index to give (0 would name an element that is not
         * there); numpy and the Python package raise here too */
        for (int a = 0; a < x->ndim; a++)
            if (((mask >> a) & 1u) && x->shape[a] == 0) {
                kiln__shape_str(sh, sizeof sh, x->ndim, x->shape);
                kiln_expr_release(x);
                return error_node(KILN_ERR_SHAPE,
                                  "%s: argument 'x' of shape %s is empty along reduced axis %d: an %s has no "
                                  "index to give",
                                  fn, sh, a, op == KILN_REDUCE_ARGMAX ? "argmax" : "argmin");
            }
        if (mask == 0) return kiln_cast(kiln_mul(kiln_finite(x), kiln_scalar(0.0)), KILN_DTYPE_I32);
        r = reduce_node(op == KILN_REDUCE_ARGMAX ? KILN_POP_RED_ARGMAX : KILN_POP_RED_ARGMIN, x, mask);
        break;
    case KILN_REDUCE_MEAN: r = mean_keep(x, mask); break;
    case KILN_REDUCE_VAR:
    case KILN_REDUCE_STD: {
        if (mask == 0) { /* nothing reduced: (x - x)^2, 0 or NaN as the two-pass form gives */
            kiln_expr_retain(x);
            r = force_frac(kiln_sqr(kiln_sub(x, x)));
        } else { /* one pass: RED_VAR's Welford update and Chan's merges, mean((x - mean(x))^2) */
            r = force_frac(reduce_node(KILN_POP_RED_VAR, x, mask));
        }
        if (r->kind == KILN_EN_ERROR) return r;
        if (op == KILN_REDUCE_STD) r = kiln_sqrt(r);
        break;
    }
    default:
        kiln_expr_release(x);
        return error_node(KILN_ERR_ARG, "%s: argument 'op' (%d) is not a kiln_reduce_op", fn, (int)op);
    }
    if (!keepdims) r = squeeze_node(r, mask);
    return r;
}

kiln_expr *kiln_reduce(kiln_reduce_op op, kiln_expr *x, int naxes, const int *axes, int keepdims)
{
    return reduce_impl("kiln_reduce", "axes", op, x, naxes, axes, keepdims);
}

#define KILN_X_SHORTHAND(name, OP)                                                   \
    kiln_expr *kiln_##name(kiln_expr *x, int axis)                                   \
    {                                                                                \
        return reduce_impl("kiln_" #name, "axis", KILN_REDUCE_##OP, x, 1, &axis, 1); \
    }
KILN_X_SHORTHAND(sum, SUM)
KILN_X_SHORTHAND(mean, MEAN)
KILN_X_SHORTHAND(max, MAX)
KILN_X_SHORTHAND(min, MIN)
KILN_X_SHORTHAND(var, VAR)
KILN_X_SHORTHAND(std, STD)
KILN_X_SHORTHAND(argmax, ARGMAX)
KILN_X_SHORTHAND(argmin, ARGMIN)
#undef KILN_X_SHORTHAND

/* ---- accessors ------------------------------------------------------------------------ */

kiln_status kiln_expr_status(const kiln_expr *e, const char **msg)
{
    if (!e) {
        if (msg) *msg = "kiln_expr_status: argument 'e' is NULL";
        return KILN_ERR_NULL;
    }
    if (e->kind == KILN_EN_ERROR) {
        if (msg) *msg = e->msg;
        return e->status;
    }
    if (msg) *msg = "";
    return KILN_OK;
}

int kiln_expr_ndim(const kiln_expr *e)
{
    return e ? e->ndim : 0;
}

const int64_t *kiln_expr_shape(const kiln_expr *e)
{
    return e ? e->shape : NULL;
}

/* A depth-first walk over the graph with an open-addressing set of the nodes seen (a power
 * of two at least twice the nodes, grown as they come). */
int64_t kiln_expr_nodes(const kiln_expr *e)
{
    if (!e) return 0;
    size_t cap = 64, n = 0, top = 0, stack_cap = 64;
    const kiln_expr **set = calloc(cap, sizeof *set), **stack = malloc(stack_cap * sizeof *stack);
    int64_t result = -1;
    if (!set || !stack) goto done;
    stack[top++] = e;
    while (top) {
        const kiln_expr *x = stack[--top];
        size_t h = ((uintptr_t)x >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1);
        while (set[h] && set[h] != x) h = (h + 1) & (cap - 1);
        if (set[h]) continue;
        set[h] = x;
        if (++n * 2 > cap) {
            size_t ncap = cap * 2;
            const kiln_expr **ns = calloc(ncap, sizeof *ns);
            if (!ns) goto done;
            for (size_t i = 0; i < cap; i++) {
                if (!set[i]) continue;
                size_t g = ((uintptr_t)set[i] >> 4) * 0x9E3779B97F4A7C15ull & (ncap - 1);
                while (ns[g]) g = (g + 1) & (ncap - 1);
                ns[g] = set[i];
            }
            free(set);
            set = ns;
            cap = ncap;
        }
        for (int c = 0; c < x->nchild; c++) {
            if (!x->child[c]) continue;
            if (top == stack_cap) {
                const kiln_expr **nst = realloc(stack, stack_cap * 2 * sizeof *nst);
                if (!nst) goto done;
                stack = nst;
                stack_cap *= 2;
            }
            stack[top++] = x->child[c];
        }
    }
    result = (int64_t)n;
done:
    free(set);
    free(stack);
    return result;
}

kiln_dtype kiln_expr_dtype(const kiln_expr *e)
{
    if (!e || e->kind == KILN_EN_ERROR) return KILN_DTYPE_AUTO;
    return e->dtype;
}
