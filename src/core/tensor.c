/*
 * src/core/tensor.c — tensor handles and their storage: constructors (kiln_tensor_wrap
 * included: a tensor over foreign memory), reference counts, host reads and writes,
 * accessors, names, and the geometry helpers (aliasing, overlap) the planner and ops use.
 * Views are made in src/core/view.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "core/internal.h"

static void contiguous_strides(int ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

/* Fills a fresh storage (its block already set) and tensor handle: one reference each, the
 * storage holding a reference on the context. */
static void handle_init(kiln_ctx *ctx, kiln_storage *st, kiln_tensor *t, kiln_dtype dtype, int ndim,
                        const int64_t *shape, const int64_t *strides, int64_t offset)
{
    st->refcount = 1;
    st->ctx = ctx;
    kiln__ctx_retain(ctx);
    t->refcount = 1;
    t->ctx = ctx;
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
    }
    t->offset = offset;
}

kiln_status kiln__tensor_new(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, const char *file,
                             int line, kiln_tensor **out)
{
    int64_t numel;
    KILN_TRY(kiln__check_shape(ctx, "shape", ndim, shape, kiln_dtype_size(dtype), &numel));
    kiln_storage *st = calloc(1, sizeof *st);
    kiln_tensor *t = calloc(1, sizeof *t);
    if (!st || !t) {
        free(st);
        free(t);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "no host memory for a tensor handle");
    }
    kiln_status s = kiln__mem_alloc(ctx, (size_t)numel * kiln_dtype_size(dtype), file, line, &st->block);
    if (s != KILN_OK) {
        free(st);
        free(t);
        return s;
    }
    int64_t strides[KILN_MAX_DIMS];
    contiguous_strides(ndim, shape, strides);
    handle_init(ctx, st, t, dtype, ndim, shape, strides, 0);
    *out = t;
    return KILN_OK;
}

kiln_status kiln__tensor_view(const kiln_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                              int64_t offset, kiln_tensor **out)
{
    kiln_tensor *v = calloc(1, sizeof *v);
    if (!v) return KILN_ERROR(t->ctx, KILN_ERR_OOM, "no host memory for a view handle");
    v->refcount = 1;
    v->ctx = t->ctx;
    v->storage = t->storage;
    v->storage->refcount++;
    v->dtype = t->dtype;
    v->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        v->shape[i] = shape[i];
        v->strides[i] = strides[i];
    }
    v->offset = offset;
    memcpy(v->name, t->name, sizeof v->name);
    *out = v;
    return KILN_OK;
}

kiln_tensor *kiln_tensor_retain(kiln_tensor *t)
{
    if (t) t->refcount++;
    return t;
}

void kiln_tensor_release(kiln_tensor *t)
{
    if (!t || --t->refcount > 0) return;
    kiln_storage *st = t->storage;
    free(t);
    if (--st->refcount > 0) return;
    kiln_ctx *ctx = st->ctx;
    kiln_block *b = st->block;
    free(st);
    kiln__mem_free(ctx, b); /* a wrapped block's release callback runs here, once */
    kiln__ctx_release(ctx);
}

char *kiln__tensor_base(const kiln_tensor *t)
{
    char *p = t->storage->block ? (char *)t->storage->block->ptr : NULL;
    if (!p) return NULL;
    return p + t->offset * (int64_t)kiln_dtype_size(t->dtype);
}

static bool has_zero_stride(const kiln_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] == 0 && t->shape[i] > 1) return true;
    return false;
}

bool kiln__tensor_has_aliasing(const kiln_tensor *t)
{
    return t->storage->aliased || has_zero_stride(t);
}

const char *kiln__tensor_alias_reason(const kiln_tensor *t)
{
    if (has_zero_stride(t)) return "a broadcast view (a stride 0 on an axis of size > 1)";
    return "a view of wrapped memory whose strides may reach one element twice";
}

void kiln__tensor_byte_range(const kiln_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t es = (int64_t)kiln_dtype_size(t->dtype);
    int64_t a = t->offset, b = t->offset;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0) {
            *lo = *hi = t->offset * es;
            return;
        }
        int64_t span = (t->shape[i] - 1) * t->strides[i];
        if (span < 0) a += span;
        else b += span;
    }
    *lo = a * es;
    *hi = (b + 1) * es;
}

bool kiln__tensors_overlap(const kiln_tensor *a, const kiln_tensor *b)
{
    int64_t alo, ahi, blo, bhi;
    kiln__tensor_byte_range(a, &alo, &ahi);
    kiln__tensor_byte_range(b, &blo, &bhi);
    if (alo == ahi || blo == bhi) return false;
    if (a->storage == b->storage) return alo < bhi && blo < ahi;
    /* Two storages share bytes only when one wraps foreign memory (which may be another
     * wrap of the same memory, or kiln's own): compare addresses. */
    const kiln_block *ba = a->storage->block, *bb = b->storage->block;
    if (!ba->external && !bb->external) return false;
    uintptr_t pa = (uintptr_t)ba->ptr, pb = (uintptr_t)bb->ptr;
    return pa + (uintptr_t)alo < pb + (uintptr_t)bhi && pb + (uintptr_t)blo < pa + (uintptr_t)ahi;
}

const char *kiln__tensor_str(char *buf, size_t cap, const kiln_tensor *t)
{
    char sh[160];
    kiln__shape_str(sh, sizeof sh, t->ndim, t->shape);
    if (t->name[0]) snprintf(buf, cap, "%s %s '%s'", kiln_dtype_name(t->dtype), sh, t->name);
    else snprintf(buf, cap, "%s %s", kiln_dtype_name(t->dtype), sh);
    return buf;
}

/* ---- constructors --------------------------------------------------------------------- */

static kiln_status check_new(kiln_ctx *ctx, const char *fn, kiln_dtype dtype, kiln_tensor **out)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "%s: argument 'ctx' is NULL", fn);
    if (!out) return KILN_ERROR(ctx, KILN_ERR_NULL, "%s: argument 'out' is NULL", fn);
    if (!kiln__dtype_valid(dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "%s: argument 'dtype' is not a valid dtype (%d)", fn, (int)dtype);
    return KILN_OK;
}

kiln_status kiln_tensor_empty_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, kiln_tensor **out,
                                 const char *file, int line)
{
    KILN_TRY(check_new(ctx, "kiln_tensor_empty", dtype, out));
    return kiln__tensor_new(ctx, dtype, ndim, shape, file, line, out);
}

kiln_status kiln_tensor_full_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, double value,
                                kiln_tensor **out, const char *file, int line)
{
    KILN_TRY(check_new(ctx, "kiln_tensor_full", dtype, out));
    kiln_tensor *t;
    KILN_TRY(kiln__tensor_new(ctx, dtype, ndim, shape, file, line, &t));
    kiln_status st = kiln_assign(t, kiln_scalar(value));
    if (st != KILN_OK) {
        kiln_tensor_release(t);
        return st;
    }
    *out = t;
    return KILN_OK;
}

kiln_status kiln_tensor_arange_at(kiln_ctx *ctx, kiln_dtype dtype, double start, double stop, double step,
                                  kiln_tensor **out, const char *file, int line)
{
    KILN_TRY(check_new(ctx, "kiln_tensor_arange", dtype, out));
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
        return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_tensor_arange: arguments 'start', 'stop', 'step' must be finite");
    if (step == 0) return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_tensor_arange: argument 'step' is 0");
    double nd = ceil((stop - start) / step);
    if (nd < 0) nd = 0;
    if (nd > 9.0e15) return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "kiln_tensor_arange: %.6g elements are too many", nd);
    int64_t n = (int64_t)nd;
    double *host = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (!host) return KILN_ERROR(ctx, KILN_ERR_OOM, "kiln_tensor_arange: no host memory for %lld values", (long long)n);
    for (int64_t i = 0; i < n; i++) host[i] = start + (double)i * step;
    kiln_status st = kiln_tensor_from_host_at(ctx, dtype, 1, &n, host, KILN_DTYPE_F64, out, file, line);
    free(host);
    return st;
}

kiln_status kiln_tensor_from_host_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, const void *src,
                                     kiln_dtype src_dtype, kiln_tensor **out, const char *file, int line)
{
    KILN_TRY(check_new(ctx, "kiln_tensor_from_host", dtype, out));
    if (!kiln__dtype_valid(src_dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "kiln_tensor_from_host: argument 'src_dtype' is not a valid dtype (%d)",
                          (int)src_dtype);
    int64_t numel;
    KILN_TRY(kiln__check_shape(ctx, "shape", ndim, shape, kiln_dtype_size(dtype), &numel));
    if (!src && numel > 0) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_tensor_from_host: argument 'src' is NULL");
    kiln_tensor *t;
    KILN_TRY(kiln__tensor_new(ctx, dtype, ndim, shape, file, line, &t));
    kiln_status st = numel ? ctx->backend->write(ctx, t, src, src_dtype) : KILN_OK;
    if (st != KILN_OK) {
        kiln_tensor_release(t);
        return st;
    }
    *out = t;
    return KILN_OK;
}

kiln_status kiln_tensor_copy_at(const kiln_tensor *t, kiln_dtype dtype, kiln_tensor **out, const char *file, int line)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_tensor_copy: argument 't' is NULL");
    if (dtype == KILN_DTYPE_AUTO) dtype = t->dtype;
    KILN_TRY(check_new(t->ctx, "kiln_tensor_copy", dtype, out));
    kiln_tensor *c;
    KILN_TRY(kiln__tensor_new(t->ctx, dtype, t->ndim, t->shape, file, line, &c));
    kiln_status st = kiln_assign(c, kiln_t((kiln_tensor *)t));
    if (st != KILN_OK) {
        kiln_tensor_release(c);
        return st;
    }
    *out = c;
    return KILN_OK;
}

kiln_status kiln_tensor_contiguous_at(kiln_tensor *t, kiln_tensor **out, const char *file, int line)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_tensor_contiguous: argument 't' is NULL");
    if (!out) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "kiln_tensor_contiguous: argument 'out' is NULL");
    if (kiln_tensor_is_contiguous(t)) {
        *out = kiln_tensor_retain(t);
        return KILN_OK;
    }
    return kiln_tensor_copy_at(t, t->dtype, out, file, line);
}

/* ---- wrapped foreign memory ----------------------------------------------------------- */

/* A sufficient test that no two indices reach one element: with the axes of size > 1 sorted
 * by |stride|, each |stride| passes the reach of the axes inside it. Axes with stride 0 are
 * left out (they alias plainly and kiln__tensor_has_aliasing sees them on every view). */
static bool strides_may_overlap(int ndim, const int64_t *shape, const int64_t *strides)
{
    int64_t s[KILN_MAX_DIMS], n[KILN_MAX_DIMS];
    int k = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 1 || strides[i] == 0) continue;
        int64_t a = strides[i] < 0 ? -strides[i] : strides[i];
        int j = k++;
        while (j > 0 && s[j - 1] > a) {
            s[j] = s[j - 1];
            n[j] = n[j - 1];
            j--;
        }
        s[j] = a;
        n[j] = shape[i];
    }
    int64_t reach = 0; /* the largest offset the inner axes reach (no overflow: checked by the caller) */
    for (int i = 0; i < k; i++) {
        if (s[i] <= reach) return true;
        reach += (n[i] - 1) * s[i];
    }
    return false;
}

kiln_status kiln_tensor_wrap_at(kiln_ctx *ctx, void *data, kiln_dtype dtype, int ndim, const int64_t *shape,
                                const int64_t *strides, void (*release)(void *user), void *user, kiln_tensor **out,
                                const char *file, int line)
{
    const char *fn = "kiln_tensor_wrap";
    KILN_TRY(check_new(ctx, fn, dtype, out));
    size_t es = kiln_dtype_size(dtype);
    int64_t numel;
    KILN_TRY(kiln__check_shape(ctx, "shape", ndim, shape, es, &numel));
    int64_t st[KILN_MAX_DIMS];
    if (strides) {
        for (int i = 0; i < ndim; i++) st[i] = strides[i];
    } else {
        contiguous_strides(ndim, shape, st);
    }
    /* The elements reach from data - below to data + above (in elements). */
    int64_t below = 0, above = 0;
    bool aliased = false;
    if (numel > 0) {
        if (!data)
            return KILN_ERROR(ctx, KILN_ERR_NULL, "%s: argument 'data' is NULL with %lld elements", fn,
                              (long long)numel);
        if ((uintptr_t)data % es != 0)
            return KILN_ERROR(ctx, KILN_ERR_ARG,
                              "%s: argument 'data' (%p) is not aligned to the %zu-byte elements of %s", fn, data, es,
                              kiln_dtype_name(dtype));
        for (int i = 0; i < ndim; i++) {
            if (shape[i] == 1) continue; /* any stride, never used */
            if (st[i] == INT64_MIN)
                return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "%s: argument 'strides': strides[%d] = %lld overflows int64",
                                  fn, i, (long long)st[i]);
            int64_t a = st[i] < 0 ? -st[i] : st[i];
            if (a > INT64_MAX / (shape[i] - 1))
                return KILN_ERROR(ctx, KILN_ERR_OVERFLOW,
                                  "%s: argument 'strides': axis %d reaches %lld x %lld elements, past int64", fn, i,
                                  (long long)(shape[i] - 1), (long long)a);
            int64_t span = (shape[i] - 1) * a, *side = st[i] < 0 ? &below : &above;
            if (*side > INT64_MAX - span)
                return KILN_ERROR(ctx, KILN_ERR_OVERFLOW,
                                  "%s: argument 'strides': the extent overflows int64 at axis %d", fn, i);
            *side += span;
        }
        if (below > INT64_MAX - above - 1 || below + above + 1 > INT64_MAX / (int64_t)es)
            return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "%s: argument 'strides': the extent in bytes overflows int64",
                              fn);
        uintptr_t p = (uintptr_t)data, lo = (uintptr_t)below * es, hi = (uintptr_t)(above + 1) * es;
        if (lo > p || hi - 1 > UINTPTR_MAX - p)
            return KILN_ERROR(ctx, KILN_ERR_OVERFLOW,
                              "%s: argument 'strides': the view reaches outside the address space from 'data' (%p)", fn,
                              data);
        aliased = strides_may_overlap(ndim, shape, st);
    }
    kiln_storage *sto = calloc(1, sizeof *sto);
    kiln_tensor *t = calloc(1, sizeof *t);
    if (!sto || !t) {
        free(sto);
        free(t);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "%s: no host memory for a tensor handle", fn);
    }
    /* The storage starts at the lowest byte the view touches, so offsets stay >= 0. */
    char *start = numel > 0 ? (char *)data - below * (int64_t)es : (char *)data;
    size_t bytes = numel > 0 ? (size_t)(below + above + 1) * es : 0;
    kiln_status s = kiln__mem_wrap(ctx, start, bytes, release, user, file, line, &sto->block);
    if (s != KILN_OK) {
        free(sto);
        free(t);
        return s;
    }
    sto->aliased = aliased;
    handle_init(ctx, sto, t, dtype, ndim, shape, st, numel > 0 ? below : 0);
    *out = t;
    return KILN_OK;
}

/* ---- host transfers ------------------------------------------------------------------- */

kiln_status kiln_tensor_read(const kiln_tensor *t, void *dst, kiln_dtype dst_dtype)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_tensor_read: argument 't' is NULL");
    if (!kiln__dtype_valid(dst_dtype))
        return KILN_ERROR(t->ctx, KILN_ERR_DTYPE, "kiln_tensor_read: argument 'dst_dtype' is not a valid dtype (%d)",
                          (int)dst_dtype);
    int64_t n = kiln__numel(t->ndim, t->shape);
    if (n == 0) return KILN_OK;
    if (!dst) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "kiln_tensor_read: argument 'dst' is NULL");
    return t->ctx->backend->read(t->ctx, t, dst, dst_dtype);
}

kiln_status kiln_tensor_write(kiln_tensor *t, const void *src, kiln_dtype src_dtype)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_tensor_write: argument 't' is NULL");
    if (!kiln__dtype_valid(src_dtype))
        return KILN_ERROR(t->ctx, KILN_ERR_DTYPE, "kiln_tensor_write: argument 'src_dtype' is not a valid dtype (%d)",
                          (int)src_dtype);
    if (kiln__tensor_has_aliasing(t)) {
        char s[200];
        return KILN_ERROR(t->ctx, KILN_ERR_ALIAS, "kiln_tensor_write: argument 't' (%s) is %s: its elements alias",
                          kiln__tensor_str(s, sizeof s, t), kiln__tensor_alias_reason(t));
    }
    int64_t n = kiln__numel(t->ndim, t->shape);
    if (n == 0) return KILN_OK;
    if (!src) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "kiln_tensor_write: argument 'src' is NULL");
    return t->ctx->backend->write(t->ctx, t, src, src_dtype);
}

/* ---- accessors ------------------------------------------------------------------------ */

kiln_ctx *kiln_tensor_ctx(const kiln_tensor *t) { return t ? t->ctx : NULL; }
kiln_dtype kiln_tensor_dtype(const kiln_tensor *t) { return t ? t->dtype : KILN_DTYPE_AUTO; }
int kiln_tensor_ndim(const kiln_tensor *t) { return t ? t->ndim : 0; }
const int64_t *kiln_tensor_shape(const kiln_tensor *t) { return t ? t->shape : NULL; }
const int64_t *kiln_tensor_strides(const kiln_tensor *t) { return t ? t->strides : NULL; }
int64_t kiln_tensor_numel(const kiln_tensor *t) { return t ? kiln__numel(t->ndim, t->shape) : 0; }

int64_t kiln_tensor_dim(const kiln_tensor *t, int axis)
{
    if (!t) return -1;
    if (axis < 0) axis += t->ndim;
    return axis >= 0 && axis < t->ndim ? t->shape[axis] : -1;
}

int64_t kiln_tensor_stride(const kiln_tensor *t, int axis)
{
    if (!t) return 0;
    if (axis < 0) axis += t->ndim;
    return axis >= 0 && axis < t->ndim ? t->strides[axis] : 0;
}

int kiln_tensor_is_contiguous(const kiln_tensor *t)
{
    if (!t) return 0;
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return 1;
        if (t->shape[i] != 1 && t->strides[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

void *kiln_tensor_data(const kiln_tensor *t)
{
    if (!t || kiln__numel(t->ndim, t->shape) == 0) return NULL;
    return kiln__tensor_base(t);
}

kiln_status kiln_tensor_set_name(kiln_tensor *t, const char *name)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_tensor_set_name: argument 't' is NULL");
    snprintf(t->name, sizeof t->name, "%s", name ? name : "");
    kiln_block *b = t->storage->block;
    if (b) snprintf(b->name, sizeof b->name, "%s", t->name);
    return KILN_OK;
}

const char *kiln_tensor_name(const kiln_tensor *t) { return t ? t->name : ""; }
