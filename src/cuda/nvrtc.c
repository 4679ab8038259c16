/*
 * src/cuda/nvrtc.c — run-time compilation and the kernel cache of the CUDA backend.
 *
 * A kernel is looked up by the hash of (its exact source, the device architecture, the
 * NVRTC version):
 *   1. the context's memory cache (hash -> module + function; the source is compared too);
 *   2. the disk cache: KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln; one
 *      file per kernel, "<key>.kbin", holding a header, the source and the CUBIN with an
 *      FNV-1a checksum over all of it. Entries are written to a temporary file and renamed
 *      into place, so a reader never sees half a file; an entry that is truncated, corrupt,
 *      of another key or another source is ignored and rewritten;
 *   3. NVRTC, for --gpu-architecture=sm_XY of the device (cubin, not PTX).
 * Values and sizes are kernel arguments (codegen.c), so they never reach the key.
 * Also here: the one checking helper per API (KILN_CK in cuda.h) and kernel launches.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cuda/cuda.h"

/* ---- checking helpers ------------------------------------------------------------------ */

kiln_status kiln__cuda_check_rt(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line)
{
    cudaError_t e = (cudaError_t)code;
    (void)cudaGetLastError(); /* clear the sticky-free error state */
    kiln_status st = (e == cudaErrorMemoryAllocation) ? KILN_ERR_OOM
                     : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) ? KILN_ERR_NO_DEVICE
                                                                                     : KILN_ERR_DRIVER;
    return kiln__error_at(ctx, st, file, line, "%s failed: %s (%s, %d)", expr, cudaGetErrorString(e),
                          cudaGetErrorName(e), code);
}

kiln_status kiln__cuda_check_drv(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line)
{
    CUresult r = (CUresult)code;
    const char *s = NULL, *n = NULL;
    const kiln_cuda_state *st = ctx ? (const kiln_cuda_state *)ctx->backend_state : NULL;
    if (st && st->cu.GetErrorString) st->cu.GetErrorString(r, &s);
    if (st && st->cu.GetErrorName) st->cu.GetErrorName(r, &n);
    kiln_status status = (r == CUDA_ERROR_OUT_OF_MEMORY) ? KILN_ERR_OOM
                         : (r == CUDA_ERROR_NO_DEVICE) ? KILN_ERR_NO_DEVICE
                                                       : KILN_ERR_DRIVER;
    return kiln__error_at(ctx, status, file, line, "%s failed: %s (%s, %d)", expr, s ? s : "driver error",
                          n ? n : "?", code);
}

kiln_status kiln__cuda_check_nvrtc(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line)
{
    return kiln__error_at(ctx, KILN_ERR_COMPILE, file, line, "%s failed: %s (%d)", expr,
                          nvrtcGetErrorString((nvrtcResult)code), code);
}

kiln_status kiln__cuda_check_lt(const kiln_ctx *ctx, int code, const char *expr, const char *file, int line)
{
    cublasStatus_t s = (cublasStatus_t)code;
    kiln_status st = (s == CUBLAS_STATUS_ALLOC_FAILED) ? KILN_ERR_OOM
                     : (s == CUBLAS_STATUS_NOT_SUPPORTED) ? KILN_ERR_UNSUPPORTED
                                                          : KILN_ERR_DRIVER;
    return kiln__error_at(ctx, st, file, line, "%s failed: %s (%s, %d)", expr, cublasLtGetStatusString(s),
                          cublasLtGetStatusName(s), code);
}

/* ---- hashing --------------------------------------------------------------------------- */

uint64_t kiln__cuda_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- disk cache ------------------------------------------------------------------------ */

#define ENTRY_MAGIC "KILNKRN1"

typedef struct entry_header {
    char magic[8];
    uint64_t key;
    uint64_t src_len;
    uint64_t bin_len;
    uint64_t checksum; /* FNV-1a of key, lengths, source and binary */
} entry_header;

static uint64_t entry_checksum(const entry_header *h, const char *src, const void *bin)
{
    uint64_t c = kiln__cuda_fnv1a(KILN_FNV_INIT, &h->key, 8);
    c = kiln__cuda_fnv1a(c, &h->src_len, 8);
    c = kiln__cuda_fnv1a(c, &h->bin_len, 8);
    c = kiln__cuda_fnv1a(c, src, (size_t)h->src_len);
    return kiln__cuda_fnv1a(c, bin, (size_t)h->bin_len);
}

static int mkdir_p(const char *path)
{
    char tmp[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i < n; i++) {
        if (tmp[i] != '/') continue;
        tmp[i] = 0;
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        tmp[i] = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* Picks the cache directory (creating it); "" when none can be used. */
static void pick_cache_dir(kiln_cuda_state *st)
{
    const char *e = getenv("KILN_CACHE_DIR");
    char buf[1024];
    buf[0] = 0;
    if (e && e[0]) {
        snprintf(buf, sizeof buf, "%s", e);
    } else if ((e = getenv("XDG_CACHE_HOME")) && e[0]) {
        snprintf(buf, sizeof buf, "%s/kiln", e);
    } else if ((e = getenv("HOME")) && e[0]) {
        snprintf(buf, sizeof buf, "%s/.cache/kiln", e);
    }
    if (buf[0] && mkdir_p(buf) == 0)
        snprintf(st->cache_dir, sizeof st->cache_dir, "%s", buf);
    else
        st->cache_dir[0] = 0;
}

static void entry_path(const kiln_cuda_state *st, uint64_t key, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%016llx.kbin", st->cache_dir, (unsigned long long)key);
}

/* Reads a valid entry's binary (malloc'd) or returns NULL; *rejected = 1 when a file was
 * there but unusable. */
static void *disk_read(const kiln_cuda_state *st, uint64_t key, const char *src, size_t *bin_len, int *rejected)
{
    *rejected = 0;
    if (!st->cache_dir[0]) return NULL;
    char path[1100];
    entry_path(st, key, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    entry_header h;
    void *data = NULL;
    size_t srclen = strlen(src);
    *rejected = 1;
    if (fread(&h, sizeof h, 1, f) != 1) goto out;
    if (memcmp(h.magic, ENTRY_MAGIC, 8) != 0 || h.key != key || h.src_len != srclen || h.bin_len == 0 ||
        h.bin_len > ((uint64_t)1 << 30))
        goto out;
    data = malloc((size_t)(h.src_len + h.bin_len) + 1);
    if (!data) goto out;
    if (fread(data, 1, (size_t)(h.src_len + h.bin_len), f) != (size_t)(h.src_len + h.bin_len)) goto bad;
    if (fgetc(f) != EOF) goto bad; /* trailing bytes: not our file */
    if (entry_checksum(&h, data, (char *)data + h.src_len) != h.checksum) goto bad;
    if (memcmp(data, src, srclen) != 0) goto bad;
    memmove(data, (char *)data + h.src_len, (size_t)h.bin_len);
    *bin_len = (size_t)h.bin_len;
    *rejected = 0;
    fclose(f);
    return data;
bad:
    free(data);
    data = NULL;
out:
    fclose(f);
    return NULL;
}

/* Writes an entry through a temporary file and rename; failures are silent (the cache is
 * an optimisation). Returns 1 when written. */
static int disk_write(const kiln_cuda_state *st, uint64_t key, const char *src, const void *bin, size_t bin_len)
{
    if (!st->cache_dir[0]) return 0;
    char path[1100], tmp[1200];
    entry_path(st, key, path, sizeof path);
    static unsigned long long counter;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%llu", path, (long)getpid(), ++counter);
    FILE *f = fopen(tmp, "wb");
    if (!f) return 0;
    entry_header h;
    memcpy(h.magic, ENTRY_MAGIC, 8);
    h.key = key;
    h.src_len = strlen(src);
    h.bin_len = bin_len;
    h.checksum = entry_checksum(&h, src, bin);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(src, 1, (size_t)h.src_len, f) == (size_t)h.src_len &&
             fwrite(bin, 1, bin_len, f) == bin_len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return 0;
    }
    return 1;
}

/* ---- NVRTC ----------------------------------------------------------------------------- */

static kiln_status compile(kiln_ctx *ctx, const char *src, void **bin, size_t *bin_len)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    nvrtcProgram prog;
    KILN_CK(ctx, nvrtc, nvrtcCreateProgram(&prog, src, "kiln_kernel.cu", 0, NULL, NULL));
    char archopt[64];
    snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", st->arch);
    const char *opts[] = {archopt, "--fmad=false", "-default-device", "--std=c++17", "-w"};
    double t0 = now_ms();
    nvrtcResult r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    st->stats.last_compile_ms = now_ms() - t0;
    st->stats.compiles++;
    if (r != NVRTC_SUCCESS) {
        size_t loglen = 0;
        char *log = NULL;
        if (nvrtcGetProgramLogSize(prog, &loglen) == NVRTC_SUCCESS && loglen > 0) {
            log = malloc(loglen + 1);
            if (log && nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS) log[0] = 0;
        }
        kiln_status s = KILN_ERROR(ctx, KILN_ERR_COMPILE,
                                   "argument 'plan': NVRTC failed (%s) for %s:\n--- log ---\n%s\n--- source ---\n%s",
                                   nvrtcGetErrorString(r), st->arch, log ? log : "(no log)", src);
        free(log);
        nvrtcDestroyProgram(&prog);
        return s;
    }
    size_t n = 0;
    kiln_status s = KILN_OK;
    nvrtcResult rr = nvrtcGetCUBINSize(prog, &n);
    if (rr != NVRTC_SUCCESS || n == 0) {
        s = kiln__cuda_check_nvrtc(ctx, rr == NVRTC_SUCCESS ? (int)NVRTC_ERROR_INTERNAL_ERROR : (int)rr,
                                   "nvrtcGetCUBINSize(prog, &n)", __FILE__, __LINE__);
    } else {
        *bin = malloc(n);
        if (!*bin) {
            s = KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for a %zu-byte cubin", n);
        } else if ((rr = nvrtcGetCUBIN(prog, *bin)) != NVRTC_SUCCESS) {
            free(*bin);
            *bin = NULL;
            s = kiln__cuda_check_nvrtc(ctx, (int)rr, "nvrtcGetCUBIN(prog, *bin)", __FILE__, __LINE__);
        } else {
            *bin_len = n;
        }
    }
    nvrtcDestroyProgram(&prog);
    return s;
}

/* ---- the cache ------------------------------------------------------------------------- */

static uint64_t kernel_key(const kiln_cuda_state *st, const char *src)
{
    uint64_t h = kiln__cuda_fnv1a(KILN_FNV_INIT, src, strlen(src));
    h = kiln__cuda_fnv1a(h, st->arch, strlen(st->arch));
    int v[2] = {st->nvrtc_major, st->nvrtc_minor};
    return kiln__cuda_fnv1a(h, v, sizeof v);
}

kiln_status kiln__cuda_get_kernel(kiln_ctx *ctx, const char *src, const char *name, CUfunction *fn)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    double t0 = now_ms();
    uint64_t key = kernel_key(st, src);
    unsigned bucket = (unsigned)(key % KILN_CUDA_KBUCKETS);
    for (kiln_cuda_kentry *e = st->buckets[bucket]; e; e = e->next) {
        if (e->key == key && strcmp(e->source, src) == 0) {
            *fn = e->fn;
            st->stats.mem_hits++;
            st->stats.last_get_ms = now_ms() - t0;
            return KILN_OK;
        }
    }
    size_t srclen = strlen(src);
    kiln_cuda_kentry *e = calloc(1, sizeof *e);
    char *copy = malloc(srclen + 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "argument 'plan': no host memory for the kernel cache");
    }
    memcpy(copy, src, srclen + 1);
    size_t bin_len = 0;
    int rejected = 0;
    void *bin = disk_read(st, key, src, &bin_len, &rejected);
    int from_disk = bin != NULL;
    if (rejected) st->stats.disk_rejects++;
    kiln_status s = KILN_OK;
    if (!bin) s = compile(ctx, src, &bin, &bin_len);
    if (s == KILN_OK) {
        CUresult r = st->cu.ModuleLoadData(&e->module, bin);
        if (r != CUDA_SUCCESS && from_disk) {
            /* a checksummed entry the driver refuses: rebuild it */
            st->stats.disk_rejects++;
            free(bin);
            bin = NULL;
            from_disk = 0;
            s = compile(ctx, src, &bin, &bin_len);
            if (s == KILN_OK) r = st->cu.ModuleLoadData(&e->module, bin);
        }
        if (s == KILN_OK && r != CUDA_SUCCESS)
            s = kiln__cuda_check_drv(ctx, (int)r, "st->cu.ModuleLoadData(&e->module, bin)", __FILE__, __LINE__);
    }
    if (s == KILN_OK) {
        CUresult r = st->cu.ModuleGetFunction(&e->fn, e->module, name);
        if (r != CUDA_SUCCESS) {
            s = kiln__cuda_check_drv(ctx, (int)r, "st->cu.ModuleGetFunction(&e->fn, e->module, name)", __FILE__, __LINE__);
            st->cu.ModuleUnload(e->module);
        }
    }
    if (s == KILN_OK) {
        if (from_disk)
            st->stats.disk_hits++;
        else if (disk_write(st, key, src, bin, bin_len))
            st->stats.disk_writes++;
    }
    free(bin);
    if (s != KILN_OK) {
        free(copy);
        free(e);
        return s;
    }
    e->key = key;
    e->source = copy;
    e->next = st->buckets[bucket];
    st->buckets[bucket] = e;
    *fn = e->fn;
    st->stats.last_get_ms = now_ms() - t0;
    return KILN_OK;
}

void kiln__cuda_cache_clear(kiln_cuda_state *st)
{
    for (int b = 0; b < KILN_CUDA_KBUCKETS; b++) {
        kiln_cuda_fentry *f = st->fast[b];
        while (f) {
            kiln_cuda_fentry *n = f->next;
            free(f->sig);
            free(f);
            f = n;
        }
        st->fast[b] = NULL;
        kiln_cuda_kentry *e = st->buckets[b];
        while (e) {
            kiln_cuda_kentry *n = e->next;
            st->cu.ModuleUnload(e->module);
            free(e->source);
            free(e);
            e = n;
        }
        st->buckets[b] = NULL;
    }
}

void kiln__cuda_cache_init_dir(kiln_cuda_state *st) { pick_cache_dir(st); }

int kiln__cuda_fast_find(kiln_cuda_state *st, const void *sig, size_t len, uint64_t *hash, CUfunction *fn)
{
    uint64_t h = kiln__hash_bytes(KILN_HASH_INIT, sig, len); /* in-process only */
    *hash = h;
    for (kiln_cuda_fentry *e = st->fast[h % KILN_CUDA_KBUCKETS]; e; e = e->next) {
        if (e->hash == h && e->len == len && memcmp(e->sig, sig, len) == 0) {
            *fn = e->fn;
            return 1;
        }
    }
    return 0;
}

void kiln__cuda_fast_add(kiln_cuda_state *st, uint64_t hash, const void *sig, size_t len, CUfunction fn)
{
    kiln_cuda_fentry *e = malloc(sizeof *e);
    unsigned char *copy = malloc(len ? len : 1);
    if (!e || !copy) {
        free(e);
        free(copy);
        return;
    }
    memcpy(copy, sig, len);
    e->hash = hash;
    e->len = len;
    e->sig = copy;
    e->fn = fn;
    unsigned bucket = (unsigned)(hash % KILN_CUDA_KBUCKETS);
    e->next = st->fast[bucket];
    st->fast[bucket] = e;
}

static int is_cuda_ctx(const kiln_ctx *ctx)
{
    return ctx && ctx->backend == &kiln__cuda_backend && ctx->backend_state;
}

kiln_status kiln__cuda_cache_stats(const kiln_ctx *ctx, kiln_cuda_stats *out)
{
    if (!is_cuda_ctx(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    if (!out) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'out' is NULL");
    *out = kiln__cuda_state(ctx)->stats;
    return KILN_OK;
}

kiln_status kiln__cuda_cache_drop_memory(kiln_ctx *ctx)
{
    if (!is_cuda_ctx(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    kiln__cuda_cache_clear(st);
    return KILN_OK;
}

kiln_status kiln__cuda_compile_source(kiln_ctx *ctx, const char *source, const char *name)
{
    if (!is_cuda_ctx(ctx)) return KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "argument 'ctx': not a CUDA context");
    if (!source || !name) return KILN_ERROR(ctx, KILN_ERR_NULL, "argument 'source' or 'name' is NULL");
    KILN_TRY(kiln__cuda_enter(ctx));
    CUfunction fn;
    return kiln__cuda_get_kernel(ctx, source, name, &fn);
}

const char *kiln__cuda_cache_dir(const kiln_ctx *ctx)
{
    if (!is_cuda_ctx(ctx)) return NULL;
    return kiln__cuda_state(ctx)->cache_dir;
}

/* ---- launching ------------------------------------------------------------------------- */

static kiln_status launch(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                         unsigned smem, void **params, void **extra)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    KILN_CK(ctx, drv, st->cu.LaunchKernel(fn, gx, gy, 1, bx, by, 1, smem, (CUstream)st->stream, params, extra));
    st->stats.launches++;
    if (st->sync_each) KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    return KILN_OK;
}

kiln_status kiln__cuda_launch(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                              unsigned smem, const uint64_t *words, int nwords)
{
    size_t size = (size_t)nwords * 8;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)words, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                     CU_LAUNCH_PARAM_END};
    return launch(ctx, fn, gx, gy, bx, by, smem, NULL, extra);
}

kiln_status kiln__cuda_launch_ex(kiln_ctx *ctx, CUfunction fn, unsigned gx, unsigned gy, unsigned bx, unsigned by,
                                 unsigned smem, const kiln_cuda_launch_attrs *at, void **params, void **extra,
                                 int *refused)
{
    kiln_cuda_state *st = kiln__cuda_state(ctx);
    *refused = 0;
    if (!st->cu.LaunchKernelEx)
        return KILN_ERROR(ctx, KILN_ERR_DRIVER, "argument 'at': the CUDA driver lacks cuLaunchKernelEx");
    CUlaunchAttribute attr[3];
    memset(attr, 0, sizeof attr);
    unsigned na = 0;
    if (at->cluster) {
        attr[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[na].value.clusterDim.x = at->cluster;
        attr[na].value.clusterDim.y = 1;
        attr[na].value.clusterDim.z = 1;
        na++;
    }
    if (at->cooperative) {
        attr[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        attr[na].value.cooperative = 1;
        na++;
    }
    if (at->early) {
        attr[na].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr[na].value.programmaticStreamSerializationAllowed = 1;
        na++;
    }
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = gx, cfg.gridDimY = gy, cfg.gridDimZ = 1;
    cfg.blockDimX = bx, cfg.blockDimY = by, cfg.blockDimZ = 1;
    cfg.sharedMemBytes = smem;
    cfg.hStream = (CUstream)st->stream;
    cfg.attrs = attr;
    cfg.numAttrs = na;
    CUresult e = st->cu.LaunchKernelEx(&cfg, fn, params, extra);
    if (at->cooperative && e == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE) {
        *refused = 1;
        return KILN_OK;
    }
    KILN_CK(ctx, drv, e);
    st->stats.launches++;
    if (st->sync_each) KILN_CK(ctx, rt, cudaStreamSynchronize(st->stream));
    return KILN_OK;
}
