/*
 * src/core/internal.h — the bodies of kiln's handles and the helpers every module shares:
 * error reporting into the context, the counting allocator, tensor storage.
 * Not public: nothing here is installed or used by the Python layer.
 */
#ifndef KILN_CORE_INTERNAL_H
#define KILN_CORE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kiln.h"

struct kiln_backend;

/* ---- in-process hashing ---------------------------------------------------------------- */

/* The structural hash of in-process tables (the planner's CSE table and kernel keys, the
 * CUDA backend's kernel map by signature; never stored on disk): eight bytes a step, a
 * multiply and a shift that brings the product's high bits down to the low ones a table's
 * index takes. Byte-at-a-time FNV-1a, which it replaced, took a fifth of a 16-element
 * assignment's host time on the CPU backend (tools/host-prof). */
#define KILN_HASH_INIT 14695981039346656037ull
static inline uint64_t kiln__hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (; n >= 8; c += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    if (n) {
        uint64_t w = (uint64_t)n << 56;
        memcpy(&w, c, n); /* the tail's bytes over the low end; its length stays in the top byte */
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h;
}

/* ---- errors --------------------------------------------------------------------------- */

/* Records status and a printf-style message (prefixed with file:line) as ctx's last error
 * (ctx NULL: the thread's context-less error) and returns status. */
kiln_status kiln__error_at(const kiln_ctx *ctx, kiln_status status, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
kiln_status kiln__verror_at(const kiln_ctx *ctx, kiln_status status, const char *file, int line, const char *fmt,
                            va_list ap);
#define KILN_ERROR(ctx, status, ...) kiln__error_at((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)
/* Like kiln__error_at for messages of any length (a compiler log and a generated source):
 * the message is "NAME: head\ntail". */
kiln_status kiln__error_long(const kiln_ctx *ctx, kiln_status status, const char *head, const char *tail);

/* Environment variable `name` as one of values[0..n): *index its position, -1 where it is
 * unset or empty; any other value is KILN_ERR_ARG on ctx, "who: environment variable
 * NAME='value' is not a, b or c". (env.c) */
kiln_status kiln__env_choice(const kiln_ctx *ctx, const char *who, const char *name, const char *const *values, int n,
                             int *index);
/* The value of environment variable `name` (NULL when unset): from ctx's snapshot while one
 * is held, else getenv. (env.c) */
const char *kiln__env_get(const kiln_ctx *ctx, const char *name);
/* Takes a snapshot of the KILN_* variables into ctx, in one pass over the environment, for
 * a call that reads many of them (a GEMM reads about a dozen: a dozen getenv scans of a
 * large environment cost microseconds of host time a call); kiln__env_release ends it.
 * Every call takes its own, so a variable changed between calls is seen at the next. A
 * snapshot that would not fit is not taken (reads then go to getenv). */
void kiln__env_hold(kiln_ctx *ctx);
void kiln__env_release(kiln_ctx *ctx);

/* Propagates a failing status. */
#define KILN_TRY(expr)                                                                      \
    do {                                                                                    \
        kiln_status kiln__st = (expr);                                                      \
        if (kiln__st != KILN_OK) return kiln__st;                                           \
    } while (0)

/* ---- dtypes --------------------------------------------------------------------------- */

bool kiln__dtype_valid(kiln_dtype dt);
bool kiln__dtype_is_float(kiln_dtype dt);
/* The CUDA C type that stores dt ("float", "__half", ...). */
const char *kiln__dtype_ctype(kiln_dtype dt);
/* numpy-like promotion of two dtypes: float beats int, wider beats narrower, f16 with
 * bf16 gives f32, i8 with u8 gives i32 (the smallest type holding both here). */
kiln_dtype kiln__dtype_promote(kiln_dtype a, kiln_dtype b);

/* Converts n elements between dtypes on the host. src and dst strides are in elements
 * (may be negative). Float to int: truncate toward zero, saturate, NaN -> 0. Float to
 * f16/bf16: round to nearest even. */
void kiln__convert_strided(void *dst, kiln_dtype dst_dt, int64_t dst_stride, const void *src, kiln_dtype src_dt,
                           int64_t src_stride, int64_t n);
/* One element to / from double, with the same rules. */
double kiln__load_f64(const void *p, kiln_dtype dt);
void kiln__store_f64(void *p, kiln_dtype dt, double v);

/* ---- shapes --------------------------------------------------------------------------- */

/* Checks ndim and shape (0..8 axes, sizes >= 0, element count fits int64 and bytes fit
 * size_t); names the argument `what` in the error. Returns numel through *numel. */
kiln_status kiln__check_shape(const kiln_ctx *ctx, const char *what, int ndim, const int64_t *shape, size_t elem_size,
                              int64_t *numel);
/* numpy broadcast of two shapes into out (rank max(na, nb)); false when incompatible. */
bool kiln__broadcast_shapes(int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out);
/* "(2, 3, 4)" into buf; returns buf. */
const char *kiln__shape_str(char *buf, size_t cap, int ndim, const int64_t *shape);
int64_t kiln__numel(int ndim, const int64_t *shape);

/* ---- memory --------------------------------------------------------------------------- */

/* One live allocation of backend memory, or one external block: foreign memory that
 * kiln_tensor_wrap made a tensor of. An external block is not counted, capped or cached;
 * freeing it calls its release callback instead. */
typedef struct kiln_block {
    void *ptr;          /* backend memory (host for cpu, device for cuda) */
    size_t size;        /* bytes asked for (external: bytes the wrapped view spans) */
    size_t capacity;    /* bytes of the underlying block (size class); 0 when external */
    const char *file;   /* allocation site; static string or NULL */
    int line;
    char name[64];      /* tensor name, "" when unnamed */
    bool external;      /* foreign memory (kiln_tensor_wrap) */
    void (*release)(void *user); /* external: called once when the block is freed; may be NULL */
    void *user;
    struct kiln_block *prev, *next; /* the context's live list (external: its external list) */
} kiln_block;

typedef struct kiln_cached_block {
    void *ptr;
    size_t capacity;
    struct kiln_cached_block *next;
} kiln_cached_block;

typedef struct kiln_mem {
    size_t in_use, peak, cached, limit;
    int64_t live_blocks, total_allocs;
    kiln_block *live;            /* doubly linked list of live blocks */
    kiln_cached_block *free_list; /* cached blocks, any size */
    kiln_block *external;         /* doubly linked list of live external blocks */
    int64_t external_blocks;      /* their number */
    size_t external_bytes;        /* sum of their sizes (for the report only) */
} kiln_mem;

/* Allocates size bytes (size 0 gives a block with ptr NULL) of backend memory through the
 * context's caching allocator, counted and capped. The site is recorded for the report. */
kiln_status kiln__mem_alloc(kiln_ctx *ctx, size_t size, const char *file, int line, kiln_block **out);
/* The same for a block the caller can do without (a workspace with a slower way around it):
 * a refusal for memory (KILN_ERR_OOM) leaves the context's last error as it was, since the
 * caller's call goes on and need not fail. */
kiln_status kiln__mem_try_alloc(kiln_ctx *ctx, size_t size, const char *file, int line, kiln_block **out);
/* Records an external block over foreign memory at ptr spanning size bytes (for the report;
 * nothing is allocated, counted or capped). release(user) runs once when the block is freed. */
kiln_status kiln__mem_wrap(kiln_ctx *ctx, void *ptr, size_t size, void (*release)(void *user), void *user,
                           const char *file, int line, kiln_block **out);
/* Returns a block to the cache; NULL is a no-op. An external block never enters the cache:
 * the context's queued work is waited for, the record is freed, then its release runs. */
void kiln__mem_free(kiln_ctx *ctx, kiln_block *b);
/* Frees everything cached (and, at context teardown, reports nothing: live blocks are owned
 * by tensors, which keep the context alive). */
void kiln__mem_release_all_cached(kiln_ctx *ctx);

/* ---- context -------------------------------------------------------------------------- */

/* The most threads a context may be given (kiln_ctx_args.threads, KILN_THREADS). */
#define KILN_MAX_THREADS 256

struct kiln_ctx {
    int64_t refcount;                 /* the user's reference + one per live storage */
    const struct kiln_backend *backend;
    void *backend_state;              /* owned by the backend */
    kiln_device device;
    uint64_t seed;
    uint64_t rng_counter;             /* next Philox stream id */
    kiln_round round;
    int allow_tf32;
    int device_index;
    int threads;                      /* before init: threads asked for (0 = automatic); the CPU
                                         backend's init writes the count it runs on */
    int trace_plan;                   /* KILN_TRACE contains "plan" */
    kiln_mem mem;
    kiln_status last_status;
    char *last_error;                 /* malloc'd, NUL-terminated; NULL = none */
    char description[192];
    /* the KILN_* environment while a call holds a snapshot (kiln__env_hold): env_n entries
     * "NAME=value" packed in env_text from env_at[i]; env_held 0: none, read getenv */
    int env_held;
    int env_n;
    uint16_t env_at[32];
    char env_text[2048];
};

void kiln__ctx_retain(kiln_ctx *ctx);
void kiln__ctx_release(kiln_ctx *ctx);
/* Takes n consecutive Philox stream ids; returns the first. */
uint64_t kiln__ctx_take_streams(kiln_ctx *ctx, uint64_t n);

/* ---- tensors -------------------------------------------------------------------------- */

typedef struct kiln_storage {
    int64_t refcount;
    kiln_ctx *ctx;       /* holds a context reference */
    kiln_block *block;   /* NULL-ptr block for zero bytes */
    bool aliased;        /* wrapped with strides that may reach one element twice: every view
                            of it is read-only (as a broadcast view is) */
} kiln_storage;

struct kiln_tensor {
    int64_t refcount;
    kiln_ctx *ctx;
    kiln_storage *storage;
    kiln_dtype dtype;
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int64_t strides[KILN_MAX_DIMS]; /* elements; 0 on broadcast axes; may be negative */
    int64_t offset;                 /* elements from the storage start to element [0..0] */
    char name[64];
};

/* New contiguous tensor with fresh storage. */
kiln_status kiln__tensor_new(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, const char *file,
                             int line, kiln_tensor **out);
/* New handle on t's storage with the given geometry (no checks beyond allocation). */
kiln_status kiln__tensor_view(const kiln_tensor *t, int ndim, const int64_t *shape, const int64_t *strides,
                              int64_t offset, kiln_tensor **out);
/* Address of element [0..0] in backend memory. */
char *kiln__tensor_base(const kiln_tensor *t);
/* true when some element may be reachable through two indices: a stride 0 on an axis of
 * size > 1, or a view of wrapped memory whose strides overlap. Such views are read-only. */
bool kiln__tensor_has_aliasing(const kiln_tensor *t);
/* Why t has aliasing, for messages: "a broadcast view (...)" or "a view of wrapped memory ...". */
const char *kiln__tensor_alias_reason(const kiln_tensor *t);
/* The byte range [lo, hi) that t touches in its storage (lo == hi for an empty tensor). */
void kiln__tensor_byte_range(const kiln_tensor *t, int64_t *lo, int64_t *hi);
/* Whether two views may touch the same bytes: overlapping ranges of one storage, or of two
 * storages when one is wrapped memory (then the addresses are compared). */
bool kiln__tensors_overlap(const kiln_tensor *a, const kiln_tensor *b);
/* Human-readable "f32 (2, 3) 'name'" for messages. */
const char *kiln__tensor_str(char *buf, size_t cap, const kiln_tensor *t);

#endif /* KILN_CORE_INTERNAL_H */
