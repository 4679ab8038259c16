/*
 * src/backend.h — the one internal interface between kiln's core and a backend.
 * Each backend (src/cpu, src/cuda) defines one const struct kiln_backend; src/core/ctx.c
 * registers them (the only place with #ifdef KILN_WITH_CUDA besides CMake).
 * Entries marked "optional" may be NULL; the core then reports KILN_ERR_UNSUPPORTED.
 * Every entry reports failures through KILN_ERROR(ctx, ...) and returns the status.
 */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H

#include "core/internal.h"
#include "expr/plan.h"
#include "ops/dot.h"

typedef struct kiln_backend {
    const char *name;   /* "cpu", "cuda" */
    kiln_device device;

    /* Sets up the backend for ctx (device, stream, handles); stores its private state in
     * *state. KILN_ERR_NO_DEVICE when there is nothing to run on. ctx->device_index,
     * ctx->allow_tf32, ctx->threads are set before the call. May write ctx->description;
     * the CPU backend writes ctx->threads (the count it resolved). */
    kiln_status (*init)(kiln_ctx *ctx, void **state);
    /* Tears down the state (NULL-safe). Called after every block has been freed. */
    void (*fini)(void *state);

    /* Raw memory of size > 0 bytes, aligned to at least 256 bytes. No counting here: the
     * core's allocator (src/core/alloc.c) counts, caps and caches on top. */
    kiln_status (*raw_alloc)(kiln_ctx *ctx, size_t size, void **ptr);
    void (*raw_free)(kiln_ctx *ctx, void *ptr, size_t size);

    /* Host buffer <-> tensor view, with dtype conversion. The host side is contiguous in
     * row-major order of the view's shape; the view may have any strides. */
    kiln_status (*write)(kiln_ctx *ctx, kiln_tensor *dst, const void *src, kiln_dtype src_dtype);
    kiln_status (*read)(kiln_ctx *ctx, const kiln_tensor *src, void *dst, kiln_dtype dst_dtype);

    /* Runs every kernel of the plan in order (queued on the context's stream). */
    kiln_status (*run_plan)(kiln_ctx *ctx, const kiln_plan *plan);

    /* C = relu?(alpha A B + bias) + beta C per batch (src/ops/dot.h). */
    kiln_status (*gemm)(kiln_ctx *ctx, const kiln_gemm_desc *desc);

    /* Waits for queued work (optional: NULL = nothing is ever queued). */
    kiln_status (*synchronize)(kiln_ctx *ctx);

    /* Whether a variance (RED_VAR) of x (dtype dt, shape[ndim]) over the axes in mask runs
     * in one pass (1: Welford's partials, one walk of x) or as mean((x - mean(x))^2), two
     * dependent reductions (0: the planner lowers it). written: 1 where the assignment's
     * destination holds no more values than the variance (it is written out, not broadcast
     * back over x as batch norm does). KILN_VAR_PASSES=1|2 overrides it (src/expr/plan.c).
     * Optional: NULL = two passes. */
    int (*var_one_pass)(const kiln_ctx *ctx, kiln_dtype dt, int ndim, const int64_t *shape, uint32_t mask,
                        int written);

    /* The stream work is queued on, as the API's handle (cudaStream_t on CUDA), for interop
     * (kiln_ctx_stream). Optional: NULL = no stream, work runs in the call. */
    void *(*stream)(const kiln_ctx *ctx);
} kiln_backend;

extern const kiln_backend kiln__cpu_backend;
#ifdef KILN_WITH_CUDA
extern const kiln_backend kiln__cuda_backend;
#endif

#endif /* KILN_BACKEND_H */
