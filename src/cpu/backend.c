/*
 * src/cpu/backend.c — the CPU backend's vtable (kiln__cpu_backend, see src/backend.h):
 * host memory with 256-byte alignment, host <-> view copies with dtype conversion, plan
 * execution (src/cpu/exec.c) and GEMM (src/cpu/gemm.c). Its state per context is the thread
 * count and the worker pool (src/cpu/pool.c). All work is done when a call returns (the
 * workers only help the calling thread inside the call), so there is nothing to synchronize.
 */
#define _POSIX_C_SOURCE 200809L /* sysconf */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "cpu/cpu.h"

#ifndef KILN_GEMM_IMPL
#define KILN_GEMM_IMPL "unknown"
#endif

/* "Intel(R) Xeon(R) ..." from /proc/cpuinfo into buf, or "" when unreadable. */
static void cpu_model(char *buf, size_t cap)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *p = strchr(line, ':');
        if (!p) break;
        p++;
        while (*p == ' ' || *p == '\t') p++;
        snprintf(buf, cap, "%s", p);
        size_t n = strlen(buf);
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
        break;
    }
    fclose(f);
}

/* Threads when none are asked for: one per online core, at most this many. */
enum { AUTO_THREADS_MAX = 64 };

static kiln_status cpu_init(kiln_ctx *ctx, void **state)
{
    int n = ctx->threads;
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores < 1 ? 1 : cores > AUTO_THREADS_MAX ? AUTO_THREADS_MAX : (int)cores;
    }
    kiln_cpu_state *s = calloc(1, sizeof *s);
    if (!s) return KILN_ERROR(ctx, KILN_ERR_OOM, "no host memory for the CPU backend's state");
    s->nthreads = n;
    ctx->threads = n;
    char model[128];
    cpu_model(model, sizeof model);
    snprintf(ctx->description, sizeof ctx->description, "cpu: %.48s, %d thread%s, GEMM: %.64s",
             model[0] ? model : "unknown model", n, n == 1 ? "" : "s", KILN_GEMM_IMPL);
    *state = s;
    return KILN_OK;
}

static void cpu_fini(void *state)
{
    kiln_cpu_state *s = state;
    if (!s) return;
    kiln__cpu_pool_destroy(s->pool);
    free(s);
}

static kiln_status cpu_raw_alloc(kiln_ctx *ctx, size_t size, void **ptr)
{
    const size_t align = 256;
    if (size == 0 || size > SIZE_MAX - align)
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'size': cannot allocate %zu bytes of host memory", size);
    size_t rounded = (size + align - 1) / align * align;
    void *p = aligned_alloc(align, rounded);
    if (!p) return KILN_ERROR(ctx, KILN_ERR_OOM, "host allocation of %zu bytes failed (aligned_alloc)", rounded);
    *ptr = p;
    return KILN_OK;
}

static void cpu_raw_free(kiln_ctx *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

/* A view reduced to its essentials for copying: size-1 axes dropped, axes that are
 * contiguous with each other merged. The last axis is the one copied per call. */
typedef struct flat_view {
    int nd;
    int64_t shape[KILN_MAX_DIMS];
    int64_t strides[KILN_MAX_DIMS];
} flat_view;

/* Returns 0 when the view is empty. */
static int flatten(const kiln_tensor *t, flat_view *v)
{
    v->nd = 0;
    for (int a = 0; a < t->ndim; a++) {
        if (t->shape[a] == 0) return 0;
        if (t->shape[a] == 1) continue;
        /* The host side is contiguous, so two axes merge only when the view's are too. */
        if (v->nd > 0 && v->strides[v->nd - 1] == t->strides[a] * t->shape[a]) {
            v->shape[v->nd - 1] *= t->shape[a];
            v->strides[v->nd - 1] = t->strides[a];
            continue;
        }
        v->shape[v->nd] = t->shape[a];
        v->strides[v->nd] = t->strides[a];
        v->nd++;
    }
    if (v->nd == 0) { /* rank 0 or all sizes 1: one element */
        v->nd = 1;
        v->shape[0] = 1;
        v->strides[0] = 1;
    }
    return 1;
}

/* Copies between the contiguous host buffer `host` and the view (to_view: host -> view). */
static void copy_view(const kiln_tensor *t, void *host, kiln_dtype host_dt, int to_view)
{
    flat_view v;
    if (!flatten(t, &v)) return;
    char *base = kiln__tensor_base(t);
    size_t vs = kiln_dtype_size(t->dtype), hs = kiln_dtype_size(host_dt);
    int last = v.nd - 1;
    int64_t n = v.shape[last], s = v.strides[last];
    int64_t idx[KILN_MAX_DIMS] = {0};
    int64_t off = 0; /* element offset of the current row in the view */
    char *h = host;
    for (;;) {
        char *p = base + off * (int64_t)vs;
        if (to_view)
            kiln__convert_strided(p, t->dtype, s, h, host_dt, 1, n);
        else
            kiln__convert_strided(h, host_dt, 1, p, t->dtype, s, n);
        h += n * (int64_t)hs;
        /* odometer over the outer axes */
        int a = last - 1;
        for (; a >= 0; a--) {
            idx[a]++;
            off += v.strides[a];
            if (idx[a] < v.shape[a]) break;
            off -= idx[a] * v.strides[a];
            idx[a] = 0;
        }
        if (a < 0) break;
    }
}

static kiln_status cpu_write(kiln_ctx *ctx, kiln_tensor *dst, const void *src, kiln_dtype src_dtype)
{
    if (!kiln__dtype_valid(src_dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'src_dtype': invalid dtype %d", (int)src_dtype);
    if (kiln__tensor_has_aliasing(dst))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS, "argument 'dst': cannot write into a broadcast view");
    copy_view(dst, (void *)(uintptr_t)src, src_dtype, 1);
    return KILN_OK;
}

static kiln_status cpu_read(kiln_ctx *ctx, const kiln_tensor *src, void *dst, kiln_dtype dst_dtype)
{
    if (!kiln__dtype_valid(dst_dtype))
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "argument 'dst_dtype': invalid dtype %d", (int)dst_dtype);
    copy_view(src, dst, dst_dtype, 0);
    return KILN_OK;
}

const kiln_backend kiln__cpu_backend = {
    .name = "cpu",
    .device = KILN_DEVICE_CPU,
    .init = cpu_init,
    .fini = cpu_fini,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .write = cpu_write,
    .read = cpu_read,
    .run_plan = kiln__cpu_run_plan,
    .gemm = kiln__cpu_gemm,
    .synchronize = NULL,
    /* one pass (KILN_VAR_PASSES=1) measured 5-10 % slower on batch norm here (2 threads,
     * 1024-4096 x 1024 f32, bench/NOTES.md step 56): the interpreter is bound by its
     * arithmetic, not by the extra walk, so two passes stay its default */
    .var_one_pass = NULL,
    .stream = NULL,
};
