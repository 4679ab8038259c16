/*
 * src/cuda/backend.c — the CUDA backend's vtable (src/backend.h): device and stream set-up
 * per context, raw device memory for the core's caching allocator (cudaMalloc/cudaFree,
 * never managed memory), host <-> device copies of any view with dtype conversion (staged
 * through a host buffer and kiln__convert_strided), plans (codegen.c), GEMM (gemm.c) and
 * synchronisation. Everything is queued on the context's one non-blocking stream.
 * A machine without a driver or a device gives KILN_ERR_NO_DEVICE from init, never a crash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda.h"
#include "expr/expr.h" /* kiln__var_one_pass_columns */

/* Makes the context's device current on the calling thread. The driver's current context is
 * a thread-local read: where it is already the device's primary context (every call but a
 * thread's first, unless the program switched devices) cudaSetDevice is skipped. */
kiln_status kiln__cuda_enter(kiln_ctx *ctx)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    CUcontext cur = NULL;
    if (st->primary && st->cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == st->primary) return KILN_OK;
    KILN_CK(ctx, rt, cudaSetDevice(st->device));
    return KILN_OK;
}

static void cuda_fini(void *state)
{
    kiln_cuda_state *st = state;
    if (!st) return;
    cudaSetDevice(st->device);
    if (st->stream) cudaStreamSynchronize(st->stream);
    kiln__cuda_cache_clear(st);
    kiln__cuda_lt_cache_clear(st);
    if (st->ev0) cudaEventDestroy(st->ev0);
    if (st->ev1) cudaEventDestroy(st->ev1);
    if (st->gemm_counters) cudaFree(st->gemm_counters);
    if (st->grid_sync) cudaFree(st->grid_sync);
    if (st->lt) cublasLtDestroy(st->lt);
    if (st->stream) cudaStreamDestroy(st->stream);
    free(st);
}

static kiln_status cuda_init(kiln_ctx *ctx, void **state)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return KILN_ERROR(ctx, KILN_ERR_NO_DEVICE, "argument 'device': no usable CUDA driver or device (%s: %s)",
                          cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (n <= 0) return KILN_ERROR(ctx, KILN_ERR_NO_DEVICE, "argument 'device': the CUDA driver reports no device");
    if (ctx->device_index < 0 || ctx->device_index >= n)
        return KILN_ERROR(ctx, KILN_ERR_NO_DEVICE, "argument 'device_index': %d, but there are %d CUDA device(s)",
                          ctx->device_index, n);
    kiln_cuda_state *st = calloc(1, sizeof *st);
    if (!st) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'ctx': no host memory for the CUDA backend state");
    st->device = ctx->device_index;
    /* From here on errors go through cleanup; ctx->backend_state is set so macros work. */
    void *saved = ctx->backend_state;
    ctx->backend_state = st;
    kiln_status s = KILN_OK;
#define INIT_CK(api, call)                                                                     \
    do {                                                                                       \
        int c_ = (int)(call);                                                                  \
        if (c_ != 0) {                                                                         \
            s = kiln__cuda_check_##api(ctx, c_, #call, __FILE__, __LINE__);                   \
            goto fail;                                                                         \
        }                                                                                      \
    } while (0)
    INIT_CK(rt, cudaSetDevice(st->device));
    {
        struct {
            const char *name;
            void **fn;
        } syms[] = {
            {"cuGetErrorString", (void **)&st->cu.GetErrorString},
            {"cuGetErrorName", (void **)&st->cu.GetErrorName},
            {"cuModuleLoadData", (void **)&st->cu.ModuleLoadData},
            {"cuModuleGetFunction", (void **)&st->cu.ModuleGetFunction},
            {"cuModuleUnload", (void **)&st->cu.ModuleUnload},
            {"cuLaunchKernel", (void **)&st->cu.LaunchKernel},
            {"cuDeviceGet", (void **)&st->cu.DeviceGet},
            {"cuDeviceGetName", (void **)&st->cu.DeviceGetName},
            {"cuDeviceTotalMem", (void **)&st->cu.DeviceTotalMem},
        };
        for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
            enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
            cudaError_t e2 = cudaGetDriverEntryPointByVersion(syms[i].name, syms[i].fn, 12000, cudaEnableDefault, &q);
            if (e2 != cudaSuccess || q != cudaDriverEntryPointSuccess || !*syms[i].fn) {
                (void)cudaGetLastError();
                s = KILN_ERROR(ctx, KILN_ERR_NO_DEVICE, "argument 'device': the CUDA driver lacks %s (%s)",
                               syms[i].name, cudaGetErrorString(e2));
                goto fail;
            }
        }
    }
    { /* optional entry points: the wgmma GEMM's tensor maps and its shared-memory size; the
       * split reductions' occupancy; a kernel's registers and local memory (codegen.c tighten);
       * the current context (kiln__cuda_enter) */
        struct {
            const char *name;
            void **fn;
        } opt[] = {{"cuFuncSetAttribute", (void **)&st->cu.FuncSetAttribute},
                   {"cuTensorMapEncodeTiled", (void **)&st->cu.TensorMapEncodeTiled},
                   {"cuLaunchKernelEx", (void **)&st->cu.LaunchKernelEx},
                   {"cuOccupancyMaxActiveClusters", (void **)&st->cu.OccupancyMaxActiveClusters},
                   {"cuOccupancyMaxActiveBlocksPerMultiprocessor", (void **)&st->cu.OccupancyMaxActiveBlocks},
                   {"cuFuncGetAttribute", (void **)&st->cu.FuncGetAttribute},
                   {"cuCtxGetCurrent", (void **)&st->cu.CtxGetCurrent}};
        for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
            enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
            if (cudaGetDriverEntryPointByVersion(opt[i].name, opt[i].fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
                q != cudaDriverEntryPointSuccess) {
                (void)cudaGetLastError();
                *opt[i].fn = NULL;
            }
        }
    }
    INIT_CK(rt, cudaFree(0)); /* creates (or retains) the primary context */
    /* the primary context, for kiln__cuda_enter's check (without it every call sets the device) */
    if (!st->cu.CtxGetCurrent || st->cu.CtxGetCurrent(&st->primary) != CUDA_SUCCESS) st->primary = NULL;
    INIT_CK(rt, cudaDeviceGetAttribute(&st->cc_major, cudaDevAttrComputeCapabilityMajor, st->device));
    INIT_CK(rt, cudaDeviceGetAttribute(&st->cc_minor, cudaDevAttrComputeCapabilityMinor, st->device));
    INIT_CK(rt, cudaDeviceGetAttribute(&st->sm_count, cudaDevAttrMultiProcessorCount, st->device));
    INIT_CK(rt, cudaDeviceGetAttribute(&st->l2_bytes, cudaDevAttrL2CacheSize, st->device));
    INIT_CK(rt, cudaDeviceGetAttribute(&st->max_threads, cudaDevAttrMaxThreadsPerBlock, st->device));
    if (cudaDeviceGetAttribute(&st->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device) != cudaSuccess ||
        cudaDeviceGetAttribute(&st->smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, st->device) != cudaSuccess)
        st->smem_optin = st->smem_sm = 0; /* no row cache in shared memory */
    { /* double data rate: two transfers a clock (kHz) over the bus (bits); not fatal */
        int khz = 0, bits = 0;
        if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, st->device) != cudaSuccess ||
            cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, st->device) != cudaSuccess) {
            (void)cudaGetLastError();
            khz = bits = 0;
        }
        st->dram_bps = 2.0 * (double)khz * 1e3 * (double)bits / 8.0;
    }
    INIT_CK(rt, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    INIT_CK(lt, cublasLtCreate(&st->lt));
    INIT_CK(nvrtc, nvrtcVersion(&st->nvrtc_major, &st->nvrtc_minor));
#undef INIT_CK
    /* compute capability 9.0 compiles for sm_90a: the arch-specific target with wgmma and
     * setmaxnreg (its cubins run on 9.0 devices only, which is what this context has) */
    snprintf(st->arch, sizeof st->arch, "sm_%d%d%s", st->cc_major, st->cc_minor,
             st->cc_major == 9 && st->cc_minor == 0 ? "a" : "");
    st->sync_each = getenv("KILN_CUDA_SYNC") != NULL;
    kiln__cuda_cache_init_dir(st);
    {
        char name[256] = "?";
        size_t total = 0;
        CUdevice dev;
        if (st->cu.DeviceGet(&dev, st->device) == CUDA_SUCCESS) {
            st->cu.DeviceGetName(name, (int)sizeof name, dev);
            st->cu.DeviceTotalMem(&total, dev);
        }
        snprintf(ctx->description, sizeof ctx->description,
                 "cuda: %s (%s, %d SMs, %.1f GiB at %.2f TB/s peak), NVRTC %d.%d", name, st->arch, st->sm_count,
                 (double)total / (1024.0 * 1024.0 * 1024.0), st->dram_bps * 1e-12, st->nvrtc_major, st->nvrtc_minor);
    }
    ctx->backend_state = saved;
    *state = st;
    return KILN_OK;
fail:
    ctx->backend_state = saved;
    if (s == KILN_ERR_DRIVER && st->stream == NULL) s = KILN_ERR_NO_DEVICE;
    cuda_fini(st);
    return s;
}

static kiln_status cuda_raw_alloc(kiln_ctx *ctx, size_t size, void **ptr)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    cudaError_t e = cudaSetDevice(st->device);
    void *p = NULL;
    if (e == cudaSuccess) e = cudaMalloc(&p, size);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return KILN_ERROR(ctx, e == cudaErrorMemoryAllocation ? KILN_ERR_OOM : KILN_ERR_DRIVER,
                          "argument 'size': cudaMalloc of %zu bytes failed: %s", size, cudaGetErrorString(e));
    }
    *ptr = p;
    return KILN_OK;
}

static void cuda_raw_free(kiln_ctx *ctx, void *ptr, size_t size)
{
    (void)size;
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    cudaSetDevice(st->device);
    cudaFree(ptr);
}

/* ---- host <-> device ------------------------------------------------------------------- */

/* Element offsets of the lowest and one past the highest element of view t, relative to
 * element [0..0]. */
static void view_span(const kiln_tensor *t, int64_t *lo, int64_t *hi)
{
    int64_t a = 0, b = 0;
    for (int i = 0; i < t->ndim; i++) {
        int64_t d = t->strides[i] * (t->shape[i] - 1);
        if (d < 0)
            a += d;
        else
            b += d;
    }
    *lo = a;
    *hi = b + 1;
}

/* Walks view t (strided, element 0 at `vbase`, host memory) against the contiguous host
 * buffer `host`, converting row by row along the last axis. to_view: host -> view. */
static void walk_convert(const kiln_tensor *t, char *vbase, char *host, kiln_dtype host_dt, int to_view)
{
    size_t ves = kiln_dtype_size(t->dtype), hes = kiln_dtype_size(host_dt);
    int nd = t->ndim;
    if (nd == 0) {
        if (to_view)
            kiln__convert_strided(vbase, t->dtype, 1, host, host_dt, 1, 1);
        else
            kiln__convert_strided(host, host_dt, 1, vbase, t->dtype, 1, 1);
        return;
    }
    int64_t inner = t->shape[nd - 1], ist = t->strides[nd - 1];
    int64_t idx[KILN_MAX_DIMS] = {0};
    int64_t rows = 1;
    for (int i = 0; i < nd - 1; i++) rows *= t->shape[i];
    for (int64_t r = 0; r < rows; r++) {
        int64_t off = 0;
        for (int i = 0; i < nd - 1; i++) off += idx[i] * t->strides[i];
        char *v = vbase + off * (int64_t)ves;
        char *h = host + r * inner * (int64_t)hes;
        if (to_view)
            kiln__convert_strided(v, t->dtype, ist, h, host_dt, 1, inner);
        else
            kiln__convert_strided(h, host_dt, 1, v, t->dtype, ist, inner);
        for (int i = nd - 2; i >= 0; i--) {
            if (++idx[i] < t->shape[i]) break;
            idx[i] = 0;
        }
    }
}

static kiln_status cuda_write(kiln_ctx *ctx, kiln_tensor *dst, const void *src, kiln_dtype src_dtype)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    int64_t n = kiln__numel(dst->ndim, dst->shape);
    if (n == 0) return KILN_OK;
    if (kiln__tensor_has_aliasing(dst))
        return KILN_ERROR(ctx, KILN_ERR_ALIAS, "argument 'dst': a broadcast view cannot be written");
    KILN_TRY(kiln__cuda_enter(ctx));
    size_t es = kiln_dtype_size(dst->dtype);
    char *base = kiln__tensor_base(dst);
    if (kiln_tensor_is_contiguous(dst)) {
        if (src_dtype == dst->dtype) {
            KILN_CK(ctx, rt, cudaMemcpyAsync(base, src, (size_t)n * es, cudaMemcpyHostToDevice, st->stream));
            KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
            return KILN_OK;
        }
        char *stage = malloc((size_t)n * es);
        if (!stage) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'src': no host memory to stage %lld elements", (long long)n);
        kiln__convert_strided(stage, dst->dtype, 1, src, src_dtype, 1, n);
        cudaError_t e = cudaMemcpyAsync(base, stage, (size_t)n * es, cudaMemcpyHostToDevice, st->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
        free(stage);
        KILN_CK(ctx, rt, e);
        return KILN_OK;
    }
    /* strided view: read the span, scatter into it, write it back */
    int64_t lo, hi;
    view_span(dst, &lo, &hi);
    size_t bytes = (size_t)(hi - lo) * es;
    char *stage = malloc(bytes);
    if (!stage) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'dst': no host memory to stage %zu bytes", bytes);
    char *dbase = base + lo * (int64_t)es;
    cudaError_t e = cudaMemcpyAsync(stage, dbase, bytes, cudaMemcpyDeviceToHost, st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e == cudaSuccess) {
        walk_convert(dst, stage - lo * (int64_t)es, (char *)src, src_dtype, 1);
        e = cudaMemcpyAsync(dbase, stage, bytes, cudaMemcpyHostToDevice, st->stream);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    }
    free(stage);
    KILN_CK(ctx, rt, e);
    return KILN_OK;
}

static kiln_status cuda_read(kiln_ctx *ctx, const kiln_tensor *srct, void *dst, kiln_dtype dst_dtype)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    int64_t n = kiln__numel(srct->ndim, srct->shape);
    if (n == 0) return KILN_OK;
    KILN_TRY(kiln__cuda_enter(ctx));
    size_t es = kiln_dtype_size(srct->dtype);
    char *base = kiln__tensor_base(srct);
    if (kiln_tensor_is_contiguous(srct) && dst_dtype == srct->dtype) {
        KILN_CK(ctx, rt, cudaMemcpyAsync(dst, base, (size_t)n * es, cudaMemcpyDeviceToHost, st->stream));
        KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
        return KILN_OK;
    }
    int64_t lo, hi;
    view_span(srct, &lo, &hi);
    size_t bytes = (size_t)(hi - lo) * es;
    char *stage = malloc(bytes);
    if (!stage) return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'src': no host memory to stage %zu bytes", bytes);
    cudaError_t e = cudaMemcpyAsync(stage, base + lo * (int64_t)es, bytes, cudaMemcpyDeviceToHost, st->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(st->stream);
    if (e == cudaSuccess) walk_convert(srct, stage - lo * (int64_t)es, dst, dst_dtype, 0);
    free(stage);
    KILN_CK(ctx, rt, e);
    return KILN_OK;
}

/* ---- plans, gemm, sync ------------------------------------------------------------------ */

static kiln_status cuda_run_plan(kiln_ctx *ctx, const kiln_plan *plan)
{
    if (!plan) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'plan' is NULL");
    KILN_TRY(kiln__cuda_enter(ctx));
    for (int i = 0; i < plan->nkernels; i++) KILN_TRY(kiln__cuda_run_kernel(ctx, &plan->kernels[i]));
    return KILN_OK;
}

static kiln_status cuda_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d)
{
    if (!d) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'desc' is NULL");
    KILN_TRY(kiln__cuda_enter(ctx));
    return kiln__cuda_gemm(ctx, d);
}

/* One pass for a variance down columns (the last axis kept: COLUMN mode) where it pays, with
 * the L2's size as the cache (kiln__var_one_pass_columns: the rule and its measurements);
 * along rows (ROW mode) two passes: a block's row is held on chip for the second pass, and
 * Welford's update a point is a dependent chain with a division in it (0.39-0.93x, NOTES
 * step 57). */
static int cuda_var_one_pass(const kiln_ctx *ctx, kiln_dtype dt, int ndim, const int64_t *shape, uint32_t mask,
                             int written)
{
    return kiln__var_one_pass_columns(dt, ndim, shape, mask, (double)kiln__cuda_state(ctx)->l2_bytes, written);
}

static kiln_status cuda_synchronize(kiln_ctx *ctx)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    KILN_TRY(kiln__cuda_enter(ctx));
    KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    return KILN_OK;
}

kiln_status kiln__cuda_zeroed_words(kiln_ctx *ctx, size_t bytes, void **words)
{
    void *w = NULL;
    if (cudaMalloc(&w, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return KILN_ERR_OOM;
    }
    if (cudaMemsetAsync(w, 0, bytes, kiln__cuda_state(ctx)->stream) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaFree(w);
        return KILN_ERR_OOM;
    }
    *words = w;
    return KILN_OK;
}

static void *cuda_stream(const kiln_ctx *ctx)
{
    return (void *)kiln__cuda_state(ctx)->stream;
}

/* ---- benchmark hooks (cuda_hooks.h) ------------------------------------------------------ */

static int is_cuda(const kiln_ctx *ctx) { return ctx && ctx->backend == &kiln__cuda_backend && ctx->backend_state; }

kiln_status kiln__cuda_timer_start(kiln_ctx *ctx)
{
    if (!is_cuda(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    KILN_TRY(kiln__cuda_enter(ctx));
    if (!st->ev0) KILN_CK(ctx, rt, cudaEventCreate(&st->ev0));
    if (!st->ev1) KILN_CK(ctx, rt, cudaEventCreate(&st->ev1));
    KILN_CK(ctx, rt, cudaEventRecord(st->ev0, st->stream));
    return KILN_OK;
}

kiln_status kiln__cuda_timer_stop(kiln_ctx *ctx, double *ms)
{
    if (!is_cuda(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (!st->ev0 || !st->ev1) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'ctx': timer not started");
    KILN_CK(ctx, rt, cudaEventRecord(st->ev1, st->stream));
    KILN_CK(ctx, rt, cudaEventSynchronize(st->ev1));
    float f = 0;
    KILN_CK(ctx, rt, cudaEventElapsedTime(&f, st->ev0, st->ev1));
    *ms = f;
    return KILN_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

kiln_status kiln__cuda_time_copy(kiln_ctx *ctx, size_t bytes, int reps, double *ms)
{
    if (!is_cuda(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    if (reps < 1 || reps > 10000) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'reps': %d not in 1..10000", reps);
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    kiln_block *a = NULL, *b = NULL;
    KILN_TRY(kiln__mem_alloc(ctx, bytes, __FILE__, __LINE__, &a));
    kiln_status s = kiln__mem_alloc(ctx, bytes, __FILE__, __LINE__, &b);
    double *t = malloc((size_t)reps * sizeof *t);
    if (s == KILN_OK && !t) s = KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'reps': no host memory");
    if (s == KILN_OK) s = cudaMemsetAsync(a->ptr, 1, bytes, st->stream) == cudaSuccess ? KILN_OK
                          : KILN_ERROR(ctx, KILN_ERR_DRIVER, "argument 'bytes': cudaMemsetAsync failed");
    for (int i = -3; i < reps && s == KILN_OK; i++) {
        s = kiln__cuda_timer_start(ctx);
        if (s == KILN_OK && cudaMemcpyAsync(b->ptr, a->ptr, bytes, cudaMemcpyDeviceToDevice, st->stream) != cudaSuccess)
            s = KILN_ERROR(ctx, KILN_ERR_DRIVER, "argument 'bytes': cudaMemcpyAsync of %zu bytes failed", bytes);
        double m = 0;
        if (s == KILN_OK) s = kiln__cuda_timer_stop(ctx, &m);
        if (i >= 0) t[i] = m;
    }
    if (s == KILN_OK) {
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        *ms = t[reps / 2];
    }
    free(t);
    kiln__mem_free(ctx, a);
    kiln__mem_free(ctx, b);
    return s;
}

kiln_status kiln__cuda_graph_capture(kiln_ctx *ctx, kiln_status (*fn)(void *arg), void *arg, int calls, void **graph)
{
    if (!is_cuda(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    if (!fn || !graph) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'fn' or 'graph' is NULL");
    if (calls < 1) return KILN_ERROR(ctx, KILN_ERR_ARG, "argument 'calls': %d is not a positive count", calls);
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    if (st->sync_each)
        return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': KILN_CUDA_SYNC waits after every launch, "
                                                      "which a graph capture cannot hold");
    KILN_TRY(kiln__cuda_enter(ctx));
    KILN_CK(ctx, rt, cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeRelaxed));
    kiln_status s = KILN_OK;
    for (int i = 0; i < calls && s == KILN_OK; i++) s = fn(arg);
    cudaGraph_t g = NULL;
    cudaError_t e = cudaStreamEndCapture(st->stream, &g);
    if (s != KILN_OK || e != cudaSuccess) {
        if (g) cudaGraphDestroy(g);
        (void)cudaGetLastError();
        if (s != KILN_OK) return s; /* the call's own error is the one to read */
        return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'fn': the driver refused the capture: %s",
                          cudaGetErrorString(e));
    }
    cudaGraphExec_t x = NULL;
    e = cudaGraphInstantiate(&x, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'fn': the captured graph did not instantiate: %s",
                          cudaGetErrorString(e));
    }
    *graph = (void *)x;
    return KILN_OK;
}

kiln_status kiln__cuda_graph_time(kiln_ctx *ctx, void *graph, double *ms)
{
    if (!is_cuda(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    if (!graph || !ms) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'graph' or 'ms' is NULL");
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    KILN_TRY(kiln__cuda_timer_start(ctx));
    KILN_CK(ctx, rt, cudaGraphLaunch((cudaGraphExec_t)graph, st->stream));
    return kiln__cuda_timer_stop(ctx, ms);
}

void kiln__cuda_graph_free(void *graph)
{
    if (graph) cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

const kiln_backend kiln__cuda_backend = {
    .name = "cuda",
    .device = KILN_DEVICE_CUDA,
    .init = cuda_init,
    .fini = cuda_fini,
    .raw_alloc = cuda_raw_alloc,
    .raw_free = cuda_raw_free,
    .write = cuda_write,
    .read = cuda_read,
    .run_plan = cuda_run_plan,
    .gemm = cuda_gemm,
    .synchronize = cuda_synchronize,
    .var_one_pass = cuda_var_one_pass,
    .stream = cuda_stream,
};
