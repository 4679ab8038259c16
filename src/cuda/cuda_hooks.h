/*
 * src/cuda/cuda_hooks.h — the few CUDA-backend internals that tests and benchmarks may call:
 * the kernel-cache statistics of a context and dropping its in-memory kernel cache (so the
 * next use of a kernel goes to the disk cache). No CUDA headers here, so a test can include
 * it without the toolkit; a test declares the functions weak when CUDA may be absent.
 */
#ifndef KILN_CUDA_HOOKS_H
#define KILN_CUDA_HOOKS_H

#include <stdint.h>

#include "kiln.h"

typedef struct kiln_cuda_stats {
    int64_t compiles;         /* NVRTC compilations */
    int64_t mem_hits;         /* kernels found in the memory cache */
    int64_t disk_hits;        /* kernels loaded from the disk cache */
    int64_t disk_rejects;     /* disk entries found corrupt or truncated (then rebuilt) */
    int64_t disk_writes;      /* entries written to the disk cache */
    int64_t launches;         /* kernels launched */
    int64_t lt_queries;       /* cuBLASLt plans built (descriptors + heuristic query) */
    int64_t lt_hits;          /* cuBLASLt GEMMs that reused a cached plan */
    int64_t gemm_own;         /* GEMMs run by kiln's own kernels (wgmma, mma.sync, FFMA) */
    int64_t gemm_vendor_pass; /* GEMMs run as cuBLASLt's f32 product and kiln's epilogue pass */
    int64_t gemm_reference;   /* GEMMs run by the reference kernel (what neither can take) */
    int64_t reduce_splits;    /* reduction kernels launched with their rows split across blocks */
    int64_t reduce_lanes;     /* COLUMN-mode reductions launched with VEC columns a thread */
    int64_t reduce_segs;      /* ROW-mode reductions launched with a row on 1-32 lanes of a warp */
    int64_t reduce_shifts;    /* ROW-mode reductions launched walking rows off the vectors' alignment */
    int64_t reduce_row_caches; /* ROW-mode reductions launched keeping their rows' loads in shared memory */
    int64_t tightened;        /* 256-thread kernels taken compiled again for one more block an SM */
    double last_compile_ms;   /* NVRTC time of the last compilation */
    double last_get_ms;       /* time of the last kernel lookup (compile, disk or memory) */
} kiln_cuda_stats;

/* Copies ctx's kernel-cache statistics into *out. KILN_ERR_UNSUPPORTED on a non-CUDA ctx. */
kiln_status kiln__cuda_cache_stats(const kiln_ctx *ctx, kiln_cuda_stats *out);
/* Unloads every kernel of ctx's memory cache. KILN_ERR_UNSUPPORTED on a non-CUDA ctx. */
kiln_status kiln__cuda_cache_drop_memory(kiln_ctx *ctx);
/* The directory of the disk cache ("" when disabled), or NULL on a non-CUDA ctx. */
const char *kiln__cuda_cache_dir(const kiln_ctx *ctx);

/* Compiles `source` with NVRTC for ctx's device (through the kernel cache) and looks up
 * the kernel `name`; KILN_ERR_COMPILE carries the log and the source. For tests. */
kiln_status kiln__cuda_compile_source(kiln_ctx *ctx, const char *source, const char *name);

/* The CUDA C source of one plan kernel of src/expr/plan.h (malloc'd into *source), as the
 * backend generates it; split: a reduction kernel's form with its rows split across the
 * blocks of the grid's y (codegen.c; ignored without reductions). ctx only for errors: any
 * context will do. For tests (test_codegen_nvrtc compiles them without a GPU). */
struct kiln_plan_kernel;
kiln_status kiln__cuda_kernel_source(kiln_ctx *ctx, const struct kiln_plan_kernel *k, int split, char **source);

/* The structural signature under which the backend's in-process map (get_function's fast
 * map) keeps the function of plan kernel k, prepared as kiln__cuda_kernel_source prepares it:
 * malloc'd into *sig, its length into *len. Two kernels with one signature must have one
 * source, or the map would hand one the other's function; test_plan checks that. */
kiln_status kiln__cuda_kernel_signature(kiln_ctx *ctx, const struct kiln_plan_kernel *k, int split, unsigned char **sig,
                                        size_t *len);

/* The row cache's block (codegen.c row_cache) for rows of `need` workers at 1024 threads a
 * block, `cache` bytes of cached loads a row and `smem_thread` bytes of the block reductions a
 * warp, on a device of `smem_optin` bytes of shared memory a block (opted in) and `smem_sm` an
 * SM: 1 with the threads *t and blocks an SM *b where the whole row's cache is taken, else 0.
 * rule: 0 KILN_REDUCE_SMEM=tile (1024 threads, rows longer than their tile), 1 the rule (unset or
 * =1). Pure: for tests without a GPU. */
int kiln__cuda_row_cache_block(int rule, int64_t need, int64_t cache, int smem_thread, int smem_optin, int smem_sm,
                               int *t, int *b);

/* The launch choices the CUDA backend makes for plan kernel k (codegen.c run_kernel), made
 * without a GPU for a device of sm_count SMs with smem_optin bytes of shared memory a block
 * (opted in), smem_sm an SM and an L2 of l2_bytes: whether its rows split across blocks, whether
 * unsplit rows take the row cache (0 no, 1 the whole row, 2 its first part), the vectors a worker
 * walks, the threads of a block, and the forms the backend's counters count (COLUMN mode's lanes,
 * short rows on a segment of a warp, the row shift). As run_kernel makes them before it compiles:
 * the split at one block an SM (the occupancy only adds slices) and its workspace assumed. For
 * tests: a rule change that moves a shape to another kernel shows here, where the GPU suite
 * would count it. */
typedef struct kiln_cuda_launch_choice {
    int split, row_cache, kmax, threads, lanes, seg, shift;
} kiln_cuda_launch_choice;
kiln_status kiln__cuda_launch_choice(kiln_ctx *ctx, const struct kiln_plan_kernel *k, int sm_count, int smem_optin,
                                     int smem_sm, int l2_bytes, kiln_cuda_launch_choice *out);

/* Benchmark helpers. kiln__cuda_timer_start/_stop record CUDA events on ctx's stream and
 * give the device time between them in ms. kiln__cuda_time_copy times a device-to-device
 * cudaMemcpyAsync of `bytes` bytes (buffers from ctx's allocator): the median of `reps`
 * copies after a warm-up, into *ms. */
kiln_status kiln__cuda_timer_start(kiln_ctx *ctx);
kiln_status kiln__cuda_timer_stop(kiln_ctx *ctx, double *ms);
kiln_status kiln__cuda_time_copy(kiln_ctx *ctx, size_t bytes, int reps, double *ms);

/* Kernel-to-kernel timing (kiln-bench --graph): kiln__cuda_graph_capture records the work
 * `calls` runs of fn(arg) queue on ctx's stream into a CUDA graph (relaxed capture: the
 * allocator's cache serves the calls' workspaces; a call that would need the driver's
 * synchronous API fails the capture) and instantiates it into *graph; each
 * kiln__cuda_graph_time launches it once between two events on the stream and gives the
 * device time in ms, the host's enqueueing out of the count; kiln__cuda_graph_free drops
 * it. A failed call of fn, or a capture the driver refuses, ends the capture and leaves
 * the stream as it was; the error names which. */
kiln_status kiln__cuda_graph_capture(kiln_ctx *ctx, kiln_status (*fn)(void *arg), void *arg, int calls, void **graph);
kiln_status kiln__cuda_graph_time(kiln_ctx *ctx, void *graph, double *ms);
void kiln__cuda_graph_free(void *graph);

#endif /* KILN_CUDA_HOOKS_H */
