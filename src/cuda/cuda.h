/*
 * src/cuda/cuda.h — internal declarations of the CUDA backend: its per-context state, the
 * one checking macro every CUDA / driver / NVRTC / cuBLASLt call goes through, the plan ->
 * CUDA C code generator, the NVRTC kernel cache (memory + disk) and the cuBLASLt GEMM.
 * Not public; nothing outside src/cuda includes it (the core sees only kiln__cuda_backend).
 */
#ifndef KILN_CUDA_CUDA_H
#define KILN_CUDA_CUDA_H

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cublasLt.h>
#include <nvrtc.h>

#include "backend.h"
#include "cuda/gemm_plan.h" /* KILN_CUDA_COUNTERS */
#include "cuda/source.h"
#include "cuda/cuda_hooks.h"

/* ---- checking ------------------------------------------------------------------------- */

/* Checks one call of an API (rt = CUDA runtime, drv = driver, nvrtc, lt = cuBLASLt): on
 * failure records "<expression> failed: <driver's string> (<code>)" with file:line as ctx's
 * last error and returns the kiln status (OOM for out-of-memory codes, else DRIVER).
 * Use inside functions returning kiln_status:  KILN_CK(ctx, rt, cudaStreamSynchronize(s)); */
kiln_status kiln__cuda_check_rt(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line);
kiln_status kiln__cuda_check_drv(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line);
kiln_status kiln__cuda_check_nvrtc(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line);
kiln_status kiln__cuda_check_lt(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line);
#define KILN_CK(ctx, api, call)                                                                    \
    do {                                                                                       \
        int kiln__code = (int)(call);                                                          \
        if (kiln__code != 0) return kiln__cuda_check_##api((ctx), kiln__code, #call, __FILE__, __LINE__); \
    } while (0)

/* ---- state ---------------------------------------------------------------------------- */

typedef struct kiln_cuda_kentry {
    uint64_t key;       /* hash of source + arch + NVRTC version */
    char *source;       /* exact source, compared on lookup (no trust in 64-bit hashes) */
    CUmodule module;
    CUfunction fn;
    struct kiln_cuda_kentry *next;
} kiln_cuda_kentry;

#define KILN_CUDA_KBUCKETS 256

/* The structural fast map: a kernel's structural signature (codegen.c) -> its function,
 * so that a plan seen before skips source generation and hashing. */
typedef struct kiln_cuda_fentry {
    uint64_t hash;
    size_t len;
    unsigned char *sig;
    CUfunction fn;
    struct kiln_cuda_fentry *next;
} kiln_cuda_fentry;

/* Driver API entry points, fetched through the runtime (cudaGetDriverEntryPointByVersion)
 * so that libkiln does not link libcuda.so.1: a machine without a driver then still loads
 * the library, and the backend's init reports KILN_ERR_NO_DEVICE. */
typedef struct kiln_cuda_driver {
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*ModuleLoadData)(CUmodule *, const void *);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             CUstream, void **, void **);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    /* optional (NULL when the driver lacks them; the wgmma GEMM then stays unused) */
    CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **); /* clusters */
    CUresult (*OccupancyMaxActiveClusters)(int *, CUfunction, const CUlaunchConfig *); /* may be NULL */
    CUresult (*OccupancyMaxActiveBlocks)(int *, CUfunction, int, size_t); /* split reductions; may be NULL */
    CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction); /* codegen.c tighten; may be NULL */
    CUresult (*CtxGetCurrent)(CUcontext *); /* kiln__cuda_enter's check; may be NULL */
    CUresult (*TensorMapEncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                                     const cuuint64_t *, const cuuint32_t *, const cuuint32_t *,
                                     CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
                                     CUtensorMapFloatOOBfill);
} kiln_cuda_driver;


/* The cuBLASLt plan cache (gemm.c): a GEMM's problem key -> its matmul/layout descriptors
 * and the heuristic's algorithm, so that a repeated shape skips creating descriptors and
 * the heuristic query (tens of microseconds of host time per call otherwise). The key is
 * compared whole (memcmp: built from a zeroed struct); least recently used out when full. */
#define KILN_CUDA_LT_PLANS 64
typedef struct kiln_cuda_lt_key {
    int32_t type, type_d, scale, compute, opa, opb, epilogue; /* type: A and B; type_d: C = D */
    uint32_t al_a, al_b, al_d, al_bias; /* pointer alignments the algorithm may assume */
    int64_t m, n, k, lda, ldb, ldd;
    int64_t nb, sa, sb, sd;             /* merged batch count and strides */
    uint64_t workspace;                 /* bytes */
} kiln_cuda_lt_key;
typedef struct kiln_cuda_lt_entry {
    kiln_cuda_lt_key key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, ld;
    cublasLtMatmulAlgo_t algo;
    int usable;        /* 0: the heuristic found no algorithm (kiln's fallback kernel runs) */
    uint64_t ws_need;  /* bytes of workspace the algorithm needs (at most key.workspace) */
    uint64_t last_use; /* 0 = empty slot */
} kiln_cuda_lt_entry;

typedef struct kiln_cuda_state {
    kiln_cuda_driver cu;
    int device;
    CUcontext primary; /* the device's primary context (current in every call: kiln__cuda_enter) */
    int cc_major, cc_minor;
    int sm_count;
    int l2_bytes; /* the L2's size (the variance's one-pass rule, cuda_var_one_pass) */
    double dram_bps; /* the DRAM's peak bytes a second from its clock and bus width (0 where the
                      * driver does not say), in the device description; the wgmma tile rule's
                      * fast-memory default from KILN_GEMM_FAST_DRAM_BPS up (gemm_plan.h) */
    int max_threads;
    int smem_optin; /* a block's most dynamic shared memory, opted in (ROW mode's row cache) */
    int smem_sm;    /* an SM's shared memory (the row cache's blocks an SM) */
    cudaStream_t stream;
    cublasLtHandle_t lt;
    int nvrtc_major, nvrtc_minor;
    char arch[32];            /* "sm_86"; "sm_90a" on compute capability 9.0 (wgmma, setmaxnreg) */
    char cache_dir[1024];     /* "" = no disk cache */
    int sync_each;            /* KILN_CUDA_SYNC set: synchronize after every launch (debugging) */
    kiln_cuda_kentry *buckets[KILN_CUDA_KBUCKETS];
    kiln_cuda_fentry *fast[KILN_CUDA_KBUCKETS];
    kiln_cuda_stats stats;
    cudaEvent_t ev0, ev1;     /* benchmark timer (created on first use) */
    kiln_cuda_lt_entry lt_plans[KILN_CUDA_LT_PLANS];
    uint64_t lt_clock;        /* use counter of the plan cache */
    int gemm_no_coop;         /* the driver refused a cooperative GEMM launch: no more slice sums */
    CUfunction mc_fn[4];      /* wgmma kernels with multicast clusters and how many clusters of */
    int mc_pairs[4];          /* two run at once (cuOccupancyMaxActiveClusters), most recent first */
    int *gemm_counters;       /* split-K arrival counters of the wgmma GEMM (KILN_CUDA_COUNTERS
                               * ints, zero between launches; cudaMalloc'd on first use), then
                               * the own kernels' output statistics (two 64-bit words, zero
                               * between launches; kiln__cuda_gemm_stats_words) */
    unsigned *grid_sync;      /* the split reductions' grid barrier (codegen.c): arrivals and
                               * generation, two words, arrivals zero between launches
                               * (cudaMalloc'd on first use) */
    int reduce_no_coop;       /* the driver refused a cooperative reduction: no more splits */
} kiln_cuda_state;

static inline kiln_cuda_state *kiln__cuda_state(const kiln_ctx *ctx) { return (kiln_cuda_state *)ctx->backend_state; }


/* Makes the context's device current on the calling thread. */
kiln_status kiln__cuda_enter(kiln_ctx *ctx);

/* A context's long-lived device words (counters, barriers): bytes allocated and zeroed on
 * the stream into *words. KILN_ERR_OOM without a message when either fails: the callers
 * then take a path that needs no words (unsplit), so nothing has gone wrong for the user. */
kiln_status kiln__cuda_zeroed_words(kiln_ctx *ctx, size_t bytes, void **words);

/* FNV-1a over n bytes, continuing from h (KILN_FNV_INIT to start): the keys and checksums
 * of the kernel cache's entries (stored on disk, so it does not change; the in-process map
 * by signature hashes with kiln__hash_bytes). */
#define KILN_FNV_INIT 0xcbf29ce484222325ull
uint64_t kiln__cuda_fnv1a(uint64_t h, const void *p, size_t n);

/* ---- kernel cache (nvrtc.c) ----------------------------------------------------------- */

/* Returns the function `name` of source (compiled for the device, from the memory cache,
 * the disk cache, or NVRTC). KILN_ERR_COMPILE carries the log and the source. */
kiln_status kiln__cuda_get_kernel(kiln_ctx *ctx, const char *source, const char *name, CUfunction *fn);
/* Picks (and creates) the disk cache directory into st->cache_dir. */
void kiln__cuda_cache_init_dir(kiln_cuda_state *st);
/* Drops every cached module (at fini). */
void kiln__cuda_cache_clear(kiln_cuda_state *st);
/* The structural fast map (st->fast; plan kernels and GEMM kernels): find returns 1 and
 * the function when sig (len bytes) is there, and always the hash of sig into *hash; add
 * remembers fn under a copy of sig (on no host memory it remembers nothing: the next call
 * generates the source again, slower but not wrong). */
int kiln__cuda_fast_find(kiln_cuda_state *st, const void *sig, size_t len, uint64_t *hash, CUfunction *fn);
void kiln__cuda_fast_add(kiln_cuda_state *st, uint64_t hash, const void *sig, size_t len, CUfunction fn);
/* Launches fn with the flat argument words (a struct of nwords u64, passed by value). */
kiln_status kiln__cuda_launch(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                              unsigned smem, const uint64_t *words, int nwords);
/* What a launch through cuLaunchKernelEx adds to grid, block and shared memory. */
typedef struct kiln_cuda_launch_attrs {
    unsigned cluster; /* blocks per cluster along x (the grid's x a multiple); 0 = none */
    int cooperative;  /* every block resident at once */
    /* programmatic dependent launch: the kernel may start before the previous kernel on the
     * stream has finished (once that kernel's blocks have all exited, or all executed
     * griddepcontrol.launch_dependents, which no kiln kernel does), so its set-up overlaps
     * the other's memory flush. Only for kernels that touch no global memory before
     * griddepcontrol.wait (the own GEMMs' kg_grid_dep); sm_90 and up */
    int early;
} kiln_cuda_launch_attrs;
/* Launches fn through cuLaunchKernelEx with the attributes at: its parameters as params
 * (cuLaunchKernelEx's kernelParams) or the flat words as extra. A struct parameter aligned
 * to more than 8 bytes (the wgmma kernel's, with its 64-byte CUtensorMaps) must go as
 * params: the driver places it by the kernel's own layout, where the flat buffer landed it
 * 48 bytes off. A cooperative launch the
 * driver refuses as too large (fewer SMs to be had than blocks: MPS, green contexts) is not
 * an error: *refused is set and nothing runs. */
kiln_status kiln__cuda_launch_ex(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                                 unsigned smem, const kiln_cuda_launch_attrs *at, void **params, void **extra,
                                 int *refused);

/* ---- code generation (codegen.c) ------------------------------------------------------ */

/* kiln__cuda_kernel_source and kiln__cuda_kernel_signature (one plan kernel's source and
 * fast-map key, for tests): cuda_hooks.h */
/* Generates, compiles (through the cache) and launches one plan kernel. */
kiln_status kiln__cuda_run_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k);

/* ---- GEMM (gemm.c) -------------------------------------------------------------------- */

kiln_status kiln__cuda_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d);
/* Drops every cached cuBLASLt plan (at fini). */
void kiln__cuda_lt_cache_clear(kiln_cuda_state *st);

#endif /* KILN_CUDA_CUDA_H */
