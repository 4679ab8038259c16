/*
 * src/core/shape.c — shape arithmetic shared by every module: validation with overflow
 * checks, numpy broadcasting, printing.
 */
#include <stdio.h>

#include "core/internal.h"

int64_t kiln__numel(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

kiln_status kiln__check_shape(const kiln_ctx *ctx, const char *what, int ndim, const int64_t *shape, size_t elem_size,
                              int64_t *numel)
{
    if (ndim < 0 || ndim > KILN_MAX_DIMS)
        return KILN_ERROR(ctx, KILN_ERR_ARG, "argument '%s': ndim %d is outside 0..%d", what, ndim, KILN_MAX_DIMS);
    if (ndim > 0 && !shape) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument '%s': shape is NULL with ndim %d", what, ndim);
    int64_t n = 1;
    bool zero = false;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return KILN_ERROR(ctx, KILN_ERR_ARG, "argument '%s': size %lld of axis %d is negative", what,
                              (long long)shape[i], i);
        if (shape[i] == 0) zero = true;
    }
    if (!zero) {
        for (int i = 0; i < ndim; i++) {
            if (shape[i] != 0 && n > INT64_MAX / shape[i])
                return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "argument '%s': the element count overflows int64 at axis %d",
                                  what, i);
            n *= shape[i];
        }
        if (elem_size && (uint64_t)n > (uint64_t)(INT64_MAX / (int64_t)elem_size))
            return KILN_ERROR(ctx, KILN_ERR_OVERFLOW, "argument '%s': %lld elements of %zu bytes overflow int64 bytes",
                              what, (long long)n, elem_size);
    } else {
        n = 0;
    }
    if (numel) *numel = n;
    return KILN_OK;
}

bool kiln__broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out)
{
    int n = na > nb ? na : nb;
    if (n > KILN_MAX_DIMS) return false;
    int64_t tmp[KILN_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int ia = na - n + i, ib = nb - n + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1) tmp[i] = da;
        else if (da == 1) tmp[i] = db;
        else return false;
    }
    for (int i = 0; i < n; i++) out[i] = tmp[i];
    *nout = n;
    return true;
}

const char *kiln__shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = 0;
    int w = snprintf(buf, cap, "(");
    if (w > 0) k = (size_t)w < cap ? (size_t)w : cap;
    for (int i = 0; i < ndim && k < cap; i++) {
        w = snprintf(buf + k, cap - k, i ? ", %lld" : "%lld", (long long)shape[i]);
        if (w > 0) k += (size_t)w < cap - k ? (size_t)w : cap - k;
    }
    if (k < cap) snprintf(buf + k, cap - k, ndim == 1 ? ",)" : ")");
    return buf;
}
