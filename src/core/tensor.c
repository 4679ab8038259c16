/*
 * src/core/tensor.c — tensor handles and their storage: constructors, reference counts,
 * host reads and writes, accessors, names, and the geometry helpers (aliasing, overlap)
 * the planner and ops use. Views are made in src/core/view.c.
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
    st->refcount = 1;
    st->ctx = ctx;
    kiln__ctx_retain(ctx);
    t->refcount = 1;
    t->ctx = ctx;
    t->storage = st;
    t->dtype = dtype;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    contiguous_strides(ndim, shape, t->strides);
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
    kiln__mem_free(ctx, st->block);
    free(st);
    kiln__ctx_release(ctx);
}

char *kiln__tensor_base(const kiln_tensor *t)
{
    char *p = t->storage->block ? (char *)t->storage->block->ptr : NULL;
    if (!p) return NULL;
    return p + t->offset * (int64_t)kiln_dtype_size(t->dtype);
}

bool kiln__tensor_has_aliasing(const kiln_tensor *t)
{
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] == 0 && t->shape[i] > 1) return true;
    return false;
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
    if (a->storage != b->storage) return false;
    int64_t alo, ahi, blo, bhi;
    kiln__tensor_byte_range(a, &alo, &ahi);
    kiln__tensor_byte_range(b, &blo, &bhi);
    if (alo == ahi || blo == bhi) return false;
    return alo < bhi && blo < ahi;
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
    if (nd > 9.0e15) return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "kiln_tensor_arange: %.0f elements are too many", nd);
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
        return KILN_ERROR(t->ctx, KILN_ERR_ALIAS,
                          "kiln_tensor_write: argument 't' (%s) is a broadcast view: its elements alias",
                          kiln__tensor_str(s, sizeof s, t));
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
