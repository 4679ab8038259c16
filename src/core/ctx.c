/*
 * src/core/ctx.c — contexts: backend choice (KILN_DEVICE=cpu|cuda|auto), RNG seed and
 * stream counter, rounding and TF32 settings, the CPU thread count asked for (KILN_THREADS;
 * the CPU backend resolves and owns the threads), trace flags. The one place where backends
 * are registered. A context lives until the user has destroyed it and its last tensor
 * storage is gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "core/internal.h"

static kiln_status parse_device_env(kiln_device *dev)
{
    const char *e = getenv("KILN_DEVICE");
    if (!e || !*e || strcmp(e, "auto") == 0) {
        *dev = KILN_DEVICE_AUTO;
        return KILN_OK;
    }
    if (strcmp(e, "cpu") == 0) *dev = KILN_DEVICE_CPU;
    else if (strcmp(e, "cuda") == 0 || strcmp(e, "gpu") == 0) *dev = KILN_DEVICE_CUDA;
    else
        return KILN_ERROR(NULL, KILN_ERR_ARG,
                          "kiln_ctx_create: environment variable KILN_DEVICE='%s' is not one of cpu, cuda, auto", e);
    return KILN_OK;
}

/* KILN_THREADS: unset or empty = 0 (automatic), else an integer 0..KILN_MAX_THREADS. */
static kiln_status parse_threads_env(int *threads)
{
    const char *e = getenv("KILN_THREADS");
    *threads = 0;
    if (!e || !*e) return KILN_OK;
    long v = 0;
    const char *p = e;
    for (; *p >= '0' && *p <= '9' && v <= KILN_MAX_THREADS; p++) v = v * 10 + (*p - '0');
    if (*p != '\0' || v > KILN_MAX_THREADS)
        return KILN_ERROR(NULL, KILN_ERR_ARG,
                          "kiln_ctx_create: environment variable KILN_THREADS='%s' is not a thread count (an integer "
                          "from 0 to %d; 0 = one per online core)",
                          e, KILN_MAX_THREADS);
    *threads = (int)v;
    return KILN_OK;
}

static kiln_status init_backend(kiln_ctx *ctx, const kiln_backend *be)
{
    ctx->backend = be;
    ctx->device = be->device;
    snprintf(ctx->description, sizeof ctx->description, "%s", be->name);
    void *state = NULL;
    kiln_status st = be->init(ctx, &state);
    if (st != KILN_OK) {
        ctx->backend = NULL;
        return st;
    }
    ctx->backend_state = state;
    return KILN_OK;
}

kiln_status kiln_ctx_create(kiln_ctx **out, const kiln_ctx_args *args)
{
    if (!out) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_ctx_create: argument 'out' is NULL");
    kiln_ctx_args a = args ? *args : (kiln_ctx_args){0};
    kiln_device dev = a.device;
    if (dev == KILN_DEVICE_DEFAULT) KILN_TRY(parse_device_env(&dev));
    if (dev != KILN_DEVICE_CPU && dev != KILN_DEVICE_CUDA && dev != KILN_DEVICE_AUTO)
        return KILN_ERROR(NULL, KILN_ERR_ARG, "kiln_ctx_create: argument 'args->device' has the unknown value %d",
                          (int)dev);
    if (a.round != KILN_ROUND_DEFAULT && a.round != KILN_ROUND_NEAREST && a.round != KILN_ROUND_STOCHASTIC)
        return KILN_ERROR(NULL, KILN_ERR_ARG, "kiln_ctx_create: argument 'args->round' has the unknown value %d",
                          (int)a.round);
    if (a.device_index < 0)
        return KILN_ERROR(NULL, KILN_ERR_ARG, "kiln_ctx_create: argument 'args->device_index' is negative (%d)",
                          a.device_index);
    if (a.threads < 0 || a.threads > KILN_MAX_THREADS)
        return KILN_ERROR(NULL, KILN_ERR_ARG,
                          "kiln_ctx_create: argument 'args->threads' is %d, not from 0 to %d (0 = automatic)",
                          a.threads, KILN_MAX_THREADS);
    int threads = a.threads;
    if (threads == 0) KILN_TRY(parse_threads_env(&threads));

    kiln_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_OOM, "kiln_ctx_create: no host memory for a context");
    ctx->refcount = 1;
    ctx->seed = a.seed;
    ctx->round = a.round == KILN_ROUND_DEFAULT ? KILN_ROUND_NEAREST : a.round;
    ctx->allow_tf32 = a.allow_tf32 != 0;
    ctx->device_index = a.device_index;
    ctx->threads = threads;
    ctx->mem.limit = a.memory_limit;
    const char *trace = getenv("KILN_TRACE");
    ctx->trace_plan = trace && strstr(trace, "plan") != NULL;

    kiln_status st = KILN_OK;
    if (dev == KILN_DEVICE_CPU) {
        st = init_backend(ctx, &kiln__cpu_backend);
    } else {
#ifdef KILN_WITH_CUDA
        st = init_backend(ctx, &kiln__cuda_backend);
#else
        st = KILN_ERROR(ctx, KILN_ERR_NO_DEVICE, "the CUDA backend is not built into this kiln (no nvcc at build time)");
#endif
        if (st != KILN_OK && dev == KILN_DEVICE_AUTO) {
            fprintf(stderr, "kiln: no CUDA device (%s); using the CPU backend\n", kiln_last_error(ctx));
            st = init_backend(ctx, &kiln__cpu_backend);
        }
    }
    if (st != KILN_OK) {
        /* Move the message to the thread record: the context is about to go. */
        kiln__error_at(NULL, st, __FILE__, __LINE__, "kiln_ctx_create: %s", kiln_last_error(ctx));
        free(ctx->last_error);
        free(ctx);
        return st;
    }
    *out = ctx;
    return KILN_OK;
}

void kiln__ctx_retain(kiln_ctx *ctx) { ctx->refcount++; }

void kiln__ctx_release(kiln_ctx *ctx)
{
    if (!ctx || --ctx->refcount > 0) return;
    kiln__mem_release_all_cached(ctx);
    if (ctx->backend && ctx->backend->fini) ctx->backend->fini(ctx->backend_state);
    /* Blocks still live here would be a kiln bug: storages hold context references. */
    free(ctx->last_error);
    free(ctx);
}

void kiln_ctx_destroy(kiln_ctx *ctx) { kiln__ctx_release(ctx); }

kiln_device kiln_ctx_device(const kiln_ctx *ctx) { return ctx ? ctx->device : KILN_DEVICE_DEFAULT; }

const char *kiln_ctx_backend_name(const kiln_ctx *ctx) { return ctx && ctx->backend ? ctx->backend->name : ""; }

const char *kiln_ctx_device_description(const kiln_ctx *ctx) { return ctx ? ctx->description : ""; }

int kiln_ctx_threads(const kiln_ctx *ctx)
{
    if (!ctx) return 0;
    return ctx->backend == &kiln__cpu_backend ? ctx->threads : 1;
}

kiln_status kiln_ctx_set_seed(kiln_ctx *ctx, uint64_t seed)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_ctx_set_seed: argument 'ctx' is NULL");
    ctx->seed = seed;
    ctx->rng_counter = 0;
    return KILN_OK;
}

kiln_status kiln_ctx_set_round(kiln_ctx *ctx, kiln_round round)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_ctx_set_round: argument 'ctx' is NULL");
    if (round != KILN_ROUND_NEAREST && round != KILN_ROUND_STOCHASTIC)
        return KILN_ERROR(ctx, KILN_ERR_ARG,
                          "kiln_ctx_set_round: argument 'round' must be KILN_ROUND_NEAREST or KILN_ROUND_STOCHASTIC, "
                          "not %d",
                          (int)round);
    ctx->round = round;
    return KILN_OK;
}

kiln_status kiln_ctx_set_allow_tf32(kiln_ctx *ctx, int allow)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_ctx_set_allow_tf32: argument 'ctx' is NULL");
    ctx->allow_tf32 = allow != 0;
    return KILN_OK;
}

kiln_status kiln_ctx_synchronize(kiln_ctx *ctx)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_ctx_synchronize: argument 'ctx' is NULL");
    return ctx->backend->synchronize ? ctx->backend->synchronize(ctx) : KILN_OK;
}

void *kiln_ctx_stream(const kiln_ctx *ctx)
{
    return ctx && ctx->backend && ctx->backend->stream ? ctx->backend->stream(ctx) : NULL;
}

uint64_t kiln__ctx_take_streams(kiln_ctx *ctx, uint64_t n)
{
    uint64_t first = ctx->rng_counter;
    ctx->rng_counter += n;
    return first;
}
