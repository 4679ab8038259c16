/*
 * src/core/view.c — views: basic slicing (start:stop:step, negative steps, integer
 * indices), axis permutation, reshape (a view when the strides allow, else a LAYOUT error
 * saying why) and broadcast_to. A view is a new handle on the same storage.
 */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static kiln_status check_view_args(const kiln_tensor *t, const char *fn, kiln_tensor **out)
{
    if (!t) return KILN_ERROR(NULL, KILN_ERR_NULL, "%s: argument 't' is NULL", fn);
    if (!out) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "%s: argument 'out' is NULL", fn);
    return KILN_OK;
}

kiln_status kiln_tensor_slice(kiln_tensor *t, int n, const kiln_slice *s, kiln_tensor **out)
{
    KILN_TRY(check_view_args(t, "kiln_tensor_slice", out));
    if (n < 0 || n > t->ndim)
        return KILN_ERROR(t->ctx, KILN_ERR_ARG, "kiln_tensor_slice: argument 'n' is %d, tensor has %d axes", n, t->ndim);
    if (n > 0 && !s) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "kiln_tensor_slice: argument 's' is NULL with n %d", n);
    int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS], offset = t->offset;
    int nd = 0;
    for (int ax = 0; ax < t->ndim; ax++) {
        int64_t dim = t->shape[ax], st = t->strides[ax];
        if (ax >= n) {
            shape[nd] = dim;
            strides[nd++] = st;
            continue;
        }
        kiln_slice sl = s[ax];
        if (sl.index) {
            int64_t i = sl.start;
            if (i == KILN_NONE || i < -dim || i >= dim)
                return KILN_ERROR(t->ctx, KILN_ERR_BOUNDS,
                                  "kiln_tensor_slice: index %lld in s[%d] is out of bounds for axis %d of size %lld",
                                  (long long)i, ax, ax, (long long)dim);
            if (i < 0) i += dim;
            offset += i * st;
            continue;
        }
        int64_t step = sl.step == KILN_NONE ? 1 : sl.step;
        if (step == 0) return KILN_ERROR(t->ctx, KILN_ERR_ARG, "kiln_tensor_slice: s[%d].step is 0", ax);
        if (step == INT64_MIN)
            return KILN_ERROR(t->ctx, KILN_ERR_OVERFLOW, "kiln_tensor_slice: s[%d].step is too large", ax);
        int64_t start, stop;
        if (step > 0) {
            start = sl.start == KILN_NONE ? 0 : sl.start;
            stop = sl.stop == KILN_NONE ? dim : sl.stop;
            if (start < 0) start = start + dim < 0 ? 0 : start + dim;
            if (stop < 0) stop = stop + dim < 0 ? 0 : stop + dim;
            if (start > dim) start = dim;
            if (stop > dim) stop = dim;
        } else {
            start = sl.start == KILN_NONE ? dim - 1 : sl.start;
            stop = sl.stop == KILN_NONE ? -1 : sl.stop;
            if (sl.start != KILN_NONE && start < 0) start = start + dim < 0 ? -1 : start + dim;
            if (sl.stop != KILN_NONE && stop < 0) stop = stop + dim < 0 ? -1 : stop + dim;
            if (start > dim - 1) start = dim - 1;
            if (stop > dim - 1) stop = dim - 1;
        }
        /* written so that no step (up to +-INT64_MAX) overflows: the distance first, then the
         * step. st * step as numpy has it; it can overflow only where the axis keeps at most
         * one element (two or more keep |step| < dim, inside the tensor's own extent), and
         * there the stride is never stepped: st then */
        int64_t len = 0;
        if (step > 0 && stop > start) len = (stop - start - 1) / step + 1;
        if (step < 0 && start > stop) len = (start - stop - 1) / -step + 1;
        uint64_t st_abs = st < 0 ? -(uint64_t)st : (uint64_t)st;
        uint64_t step_abs = step < 0 ? -(uint64_t)step : (uint64_t)step;
        shape[nd] = len;
        strides[nd++] = st_abs != 0 && step_abs > (uint64_t)INT64_MAX / st_abs ? st : st * step;
        if (len > 0) offset += start * st;
    }
    return kiln__tensor_view(t, nd, shape, strides, offset, out);
}

kiln_status kiln_tensor_permute(kiln_tensor *t, const int *axes, kiln_tensor **out)
{
    KILN_TRY(check_view_args(t, "kiln_tensor_permute", out));
    int64_t shape[KILN_MAX_DIMS], strides[KILN_MAX_DIMS];
    bool seen[KILN_MAX_DIMS] = {0};
    for (int i = 0; i < t->ndim; i++) {
        int a = axes ? axes[i] : t->ndim - 1 - i;
        if (a < -t->ndim || a >= t->ndim)
            return KILN_ERROR(t->ctx, KILN_ERR_AXIS, "kiln_tensor_permute: axes[%d] = %d is out of range for %d axes", i,
                              a, t->ndim);
        if (a < 0) a += t->ndim;
        if (seen[a]) return KILN_ERROR(t->ctx, KILN_ERR_AXIS, "kiln_tensor_permute: axes[%d] repeats axis %d", i, a);
        seen[a] = true;
        shape[i] = t->shape[a];
        strides[i] = t->strides[a];
    }
    return kiln__tensor_view(t, t->ndim, shape, strides, t->offset, out);
}

kiln_status kiln_tensor_transpose(kiln_tensor *t, int axis0, int axis1, kiln_tensor **out)
{
    KILN_TRY(check_view_args(t, "kiln_tensor_transpose", out));
    int a0 = axis0 < 0 ? axis0 + t->ndim : axis0, a1 = axis1 < 0 ? axis1 + t->ndim : axis1;
    if (a0 < 0 || a0 >= t->ndim)
        return KILN_ERROR(t->ctx, KILN_ERR_AXIS, "kiln_tensor_transpose: argument 'axis0' = %d is out of range for %d axes",
                          axis0, t->ndim);
    if (a1 < 0 || a1 >= t->ndim)
        return KILN_ERROR(t->ctx, KILN_ERR_AXIS, "kiln_tensor_transpose: argument 'axis1' = %d is out of range for %d axes",
                          axis1, t->ndim);
    int axes[KILN_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) axes[i] = i;
    axes[a0] = a1;
    axes[a1] = a0;
    return kiln_tensor_permute(t, axes, out);
}

kiln_status kiln_tensor_reshape(kiln_tensor *t, int ndim, const int64_t *shape, kiln_tensor **out)
{
    KILN_TRY(check_view_args(t, "kiln_tensor_reshape", out));
    if (ndim < 0 || ndim > KILN_MAX_DIMS)
        return KILN_ERROR(t->ctx, KILN_ERR_ARG, "kiln_tensor_reshape: argument 'ndim' %d is outside 0..%d", ndim,
                          KILN_MAX_DIMS);
    if (ndim > 0 && !shape) return KILN_ERROR(t->ctx, KILN_ERR_NULL, "kiln_tensor_reshape: argument 'shape' is NULL");
    int64_t numel = kiln__numel(t->ndim, t->shape);
    int64_t ns[KILN_MAX_DIMS];
    int infer = -1;
    int64_t known = 1;
    for (int i = 0; i < ndim; i++) {
        ns[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0)
                return KILN_ERROR(t->ctx, KILN_ERR_ARG, "kiln_tensor_reshape: argument 'shape' has more than one -1");
            infer = i;
        } else if (shape[i] < 0) {
            return KILN_ERROR(t->ctx, KILN_ERR_ARG, "kiln_tensor_reshape: shape[%d] = %lld is negative", i,
                              (long long)shape[i]);
        } else {
            if (shape[i] != 0 && known > INT64_MAX / shape[i])
                return KILN_ERROR(t->ctx, KILN_ERR_OVERFLOW, "kiln_tensor_reshape: argument 'shape' overflows int64");
            known *= shape[i];
        }
    }
    char a[160], b[160];
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return KILN_ERROR(t->ctx, KILN_ERR_SHAPE, "kiln_tensor_reshape: cannot infer -1 in shape %s for %lld elements",
                              kiln__shape_str(a, sizeof a, ndim, shape), (long long)numel);
        ns[infer] = numel / known;
        known = numel;
    }
    if (known != numel)
        return KILN_ERROR(t->ctx, KILN_ERR_SHAPE, "kiln_tensor_reshape: argument 'shape' %s has %lld elements, tensor %s has %lld",
                          kiln__shape_str(a, sizeof a, ndim, ns), (long long)known,
                          kiln__shape_str(b, sizeof b, t->ndim, t->shape), (long long)numel);
    int64_t nst[KILN_MAX_DIMS];
    if (numel == 0) {
        int64_t s = 1;
        for (int i = ndim - 1; i >= 0; i--) {
            nst[i] = s;
            s *= ns[i] > 0 ? ns[i] : 1;
        }
        return kiln__tensor_view(t, ndim, ns, nst, t->offset, out);
    }
    /* Old axes without the size-1 ones. */
    int64_t od[KILN_MAX_DIMS], os[KILN_MAX_DIMS];
    int on = 0;
    for (int i = 0; i < t->ndim; i++)
        if (t->shape[i] != 1) {
            od[on] = t->shape[i];
            os[on++] = t->strides[i];
        }
    /* Walk groups of old and new axes with equal products (numpy's no-copy reshape). */
    int oi = 0, ni = 0;
    while (ni < ndim) {
        if (ns[ni] == 1) { /* filled in below */
            ni++;
            continue;
        }
        if (oi >= on) break;
        int o0 = oi, n0 = ni;
        int64_t po = od[oi++], pn = ns[ni++];
        while (po != pn) {
            if (po < pn) po *= od[oi++];
            else {
                while (ni < ndim && ns[ni] == 1) ni++;
                pn *= ns[ni++];
            }
        }
        for (int k = o0; k < oi - 1; k++)
            if (os[k] != os[k + 1] * od[k + 1])
                return KILN_ERROR(t->ctx, KILN_ERR_LAYOUT,
                                  "kiln_tensor_reshape: tensor %s with strides %s cannot be viewed as %s: the axes that "
                                  "merge are not contiguous with each other; make it contiguous first",
                                  kiln__shape_str(a, sizeof a, t->ndim, t->shape),
                                  kiln__shape_str(b, sizeof b, t->ndim, t->strides),
                                  kiln__shape_str((char[160]){0}, 160, ndim, ns));
        /* New axes n0..ni-1 take strides from the group's innermost old stride. */
        int64_t s = os[oi - 1];
        for (int k = ni - 1; k >= n0; k--) {
            nst[k] = s;
            if (ns[k] != 1) s *= ns[k];
        }
    }
    /* Size-1 new axes: any stride works; give the contiguous-looking one. */
    for (int k = ndim - 1; k >= 0; k--)
        if (ns[k] == 1) nst[k] = k + 1 < ndim ? nst[k + 1] * ns[k + 1] : 1;
    return kiln__tensor_view(t, ndim, ns, nst, t->offset, out);
}

kiln_status kiln_tensor_broadcast_to(kiln_tensor *t, int ndim, const int64_t *shape, kiln_tensor **out)
{
    KILN_TRY(check_view_args(t, "kiln_tensor_broadcast_to", out));
    KILN_TRY(kiln__check_shape(t->ctx, "shape", ndim, shape, kiln_dtype_size(t->dtype), NULL));
    char a[160], b[160];
    if (ndim < t->ndim)
        return KILN_ERROR(t->ctx, KILN_ERR_SHAPE, "kiln_tensor_broadcast_to: argument 'shape' %s has fewer axes than the tensor %s",
                          kiln__shape_str(a, sizeof a, ndim, shape), kiln__shape_str(b, sizeof b, t->ndim, t->shape));
    int64_t st[KILN_MAX_DIMS];
    for (int i = 0; i < ndim; i++) {
        int j = i - (ndim - t->ndim);
        if (j < 0) {
            st[i] = 0;
        } else if (t->shape[j] == shape[i]) {
            st[i] = t->strides[j];
        } else if (t->shape[j] == 1) {
            st[i] = 0;
        } else {
            return KILN_ERROR(t->ctx, KILN_ERR_SHAPE,
                              "kiln_tensor_broadcast_to: tensor %s cannot broadcast to argument 'shape' %s (axis %d: %lld vs %lld)",
                              kiln__shape_str(b, sizeof b, t->ndim, t->shape), kiln__shape_str(a, sizeof a, ndim, shape), i,
                              (long long)t->shape[j], (long long)shape[i]);
        }
    }
    return kiln__tensor_view(t, ndim, shape, st, t->offset, out);
}
