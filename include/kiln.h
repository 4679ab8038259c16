/*
 * kiln.h — the one public header of kiln, a C library of numpy-like tensors for deep
 * learning on NVIDIA GPUs, with a CPU backend that runs every program without a GPU.
 *
 * Conventions (they hold for every declaration below):
 *  - Handles are opaque: kiln_ctx, kiln_tensor, kiln_expr.
 *  - Every fallible call returns kiln_status; results come back through out-parameters,
 *    which are left untouched on failure. kiln_last_error(ctx) holds the detail of the last
 *    failure in that context (the argument it names, shapes, dtypes, file:line).
 *    A failure that has no context to report into (a NULL context or tensor) is kept per
 *    thread and read with kiln_last_error(NULL).
 *  - Nothing a caller can do aborts or exits the process. A failed call leaves every tensor
 *    it was given with its contents unchanged.
 *  - Tensors are row-major (C order), rank 0..KILN_MAX_DIMS, shapes and strides int64,
 *    strides counted in elements.
 *
 * Ownership rules:
 *  - Tensors are reference counted. Every call that gives out a kiln_tensor* (constructors,
 *    views, kiln_eval) hands the caller one reference, which kiln_tensor_release drops.
 *    A view keeps its storage alive; releasing the tensor a view came from is fine.
 *  - Expressions are reference counted too, and every expression builder CONSUMES the
 *    references of the kiln_expr* arguments it is given and returns a new reference. So a
 *    nested call such as kiln_mul(kiln_sqrt(kiln_t(a)), kiln_sub(kiln_t(b), kiln_mean(kiln_t(b), 1)))
 *    owns everything it builds and needs no intermediate frees. kiln_assign and kiln_eval
 *    consume the expression as well. To use one node twice, take an extra reference with
 *    kiln_expr_retain; to drop a node you built but will not evaluate, kiln_expr_release.
 *  - kiln_t(tensor) does not consume the tensor: the leaf takes its own tensor reference,
 *    so the caller still owns (and must still release) its tensor.
 *  - Builders never fail loudly: a bad argument yields an error node that carries the
 *    status and the message; anything built on it is an error node too, and kiln_assign or
 *    kiln_eval return that status (and put the message into the context's last error).
 *    A builder handed NULL returns an error node naming the argument.
 */
#ifndef KILN_H
#define KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(KILN_BUILDING_DLL)
#define KILN_API __declspec(dllexport)
#elif defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_VERSION_HEX ((KILN_VERSION_MAJOR << 16) | (KILN_VERSION_MINOR << 8) | KILN_VERSION_PATCH)

/* "major.minor.patch" of the library that is linked (may differ from the macros above). */
KILN_API const char *kiln_version(void);

#define KILN_MAX_DIMS 8

/* ---------------------------------------------------------------------------------------
 * Status codes. Values are explicit and append-only, grouped in bands:
 * 1xx environment / driver / memory, 2xx bad argument, 3xx unsupported, 9xx internal.
 * ------------------------------------------------------------------------------------- */
#define KILN_STATUS_LIST(X)                                                                 \
    X(KILN_OK, 0, "ok")                                                                     \
    X(KILN_ERR_NO_DEVICE, 100, "no usable device or driver")                                \
    X(KILN_ERR_DRIVER, 101, "driver or runtime call failed")                                \
    X(KILN_ERR_OOM, 102, "out of memory or over the memory limit")                          \
    X(KILN_ERR_IO, 103, "file input/output failed")                                         \
    X(KILN_ERR_COMPILE, 104, "run-time kernel compilation failed")                          \
    X(KILN_ERR_ARG, 200, "bad argument")                                                    \
    X(KILN_ERR_NULL, 201, "NULL handle or pointer")                                         \
    X(KILN_ERR_SHAPE, 202, "shapes do not match or cannot broadcast")                       \
    X(KILN_ERR_DTYPE, 203, "unsupported dtype or dtype combination")                        \
    X(KILN_ERR_AXIS, 204, "axis out of range or repeated")                                  \
    X(KILN_ERR_BOUNDS, 205, "index or slice out of bounds")                                 \
    X(KILN_ERR_OVERFLOW, 206, "size does not fit in int64")                                 \
    X(KILN_ERR_ALIAS, 207, "write into a broadcast view whose elements alias")              \
    X(KILN_ERR_LAYOUT, 208, "the operation needs another memory layout (e.g. reshape)")     \
    X(KILN_ERR_CONTEXT, 209, "objects belong to different contexts or backends")            \
    X(KILN_ERR_UNSUPPORTED, 300, "not supported")                                           \
    X(KILN_ERR_LIMIT, 301, "an implementation limit was exceeded")                          \
    X(KILN_ERR_INTERNAL, 900, "internal error (a bug in kiln)")

typedef enum kiln_status {
#define KILN_X_STATUS_ENUM(name, value, text) name = value,
    KILN_STATUS_LIST(KILN_X_STATUS_ENUM)
#undef KILN_X_STATUS_ENUM
} kiln_status;

/* A short constant description of a status ("out of memory or over the memory limit"). */
KILN_API const char *kiln_status_string(kiln_status s);
/* The status's name as text ("KILN_ERR_OOM"). */
KILN_API const char *kiln_status_name(kiln_status s);

/* ---------------------------------------------------------------------------------------
 * dtypes. One X-macro list: enum name, short name, size in bytes, is-float, CUDA C type.
 * Arithmetic on f16, bf16 and the 8-bit types is done in f32; on f64 and i32 in f64.
 * ------------------------------------------------------------------------------------- */
#define KILN_DTYPE_LIST(X)                                   \
    X(F32, f32, 4, 1, "float")                               \
    X(F16, f16, 2, 1, "__half")                              \
    X(BF16, bf16, 2, 1, "__nv_bfloat16")                     \
    X(F64, f64, 8, 1, "double")                              \
    X(I8, i8, 1, 0, "signed char")                           \
    X(U8, u8, 1, 0, "unsigned char")                         \
    X(I32, i32, 4, 0, "int")

typedef enum kiln_dtype {
    KILN_DTYPE_AUTO = 0, /* "choose for me": the promoted dtype where an API allows it */
#define KILN_X_DTYPE_ENUM(NAME, name, size, isfloat, ctype) KILN_DTYPE_##NAME,
    KILN_DTYPE_LIST(KILN_X_DTYPE_ENUM)
#undef KILN_X_DTYPE_ENUM
    KILN_DTYPE_COUNT
} kiln_dtype;

/* "f32", "f16", ...; "?" for a value outside the enum. */
KILN_API const char *kiln_dtype_name(kiln_dtype dt);
/* Element size in bytes; 0 for a value outside the enum. */
KILN_API size_t kiln_dtype_size(kiln_dtype dt);
/* Parses "f32", "float32", "float16", "half", "bfloat16", "f64", "float64", "double",
 * "i8", "int8", "u8", "uint8", "i32", "int32"; KILN_DTYPE_AUTO when unknown. */
KILN_API kiln_dtype kiln_dtype_from_name(const char *name);

/* ---------------------------------------------------------------------------------------
 * Context: the backend, its stream, the RNG seed and counter, the stochastic-rounding
 * setting, the allocator with its statistics and cap, the kernel cache and the last error.
 * Two contexts share nothing (a CPU context has its own worker threads); a context and the
 * objects made in it are used by one thread at a time.
 * ------------------------------------------------------------------------------------- */
typedef struct kiln_ctx kiln_ctx;
typedef struct kiln_tensor kiln_tensor;
typedef struct kiln_expr kiln_expr;

typedef enum kiln_device {
    KILN_DEVICE_DEFAULT = 0, /* from the environment: KILN_DEVICE=cpu|cuda|auto, else auto */
    KILN_DEVICE_CPU = 1,
    KILN_DEVICE_CUDA = 2,
    KILN_DEVICE_AUTO = 3 /* cuda when a device answers, else cpu with a one-line notice */
} kiln_device;

typedef enum kiln_round {
    KILN_ROUND_DEFAULT = 0,    /* whatever the context says */
    KILN_ROUND_NEAREST = 1,    /* round to nearest, ties to even */
    KILN_ROUND_STOCHASTIC = 2  /* f16/bf16 outputs: add random bits below the kept mantissa, truncate */
} kiln_round;

/* Context settings; zero in every field means the default. */
typedef struct kiln_ctx_args {
    kiln_device device;     /* default: KILN_DEVICE from the environment, else auto */
    uint64_t seed;          /* RNG seed; default 0 (every seed value, 0 included, is valid) */
    kiln_round round;       /* default rounding of 16-bit outputs: nearest */
    size_t memory_limit;    /* cap on bytes in use (cached bytes do not count); 0 = none */
    int allow_tf32;         /* CUDA: let f32 GEMM use TF32 tensor cores; default no */
    int device_index;       /* CUDA: which device; default 0 */
    int threads;            /* CPU: threads that run the work, the caller's included (1..256);
                               default: KILN_THREADS from the environment, else one per online
                               core (at most 64). Results never depend on it. */
} kiln_ctx_args;

/* Creates a context. args may be NULL (all defaults). On success *out owns one reference;
 * kiln_ctx_destroy drops it, and the context is freed once no tensor of it is alive.
 * Errors: KILN_ERR_NULL (out), KILN_ERR_ARG (bad device value or KILN_DEVICE text, threads
 * outside 0..256 or, when threads is 0, a KILN_THREADS text that is not such a number),
 * KILN_ERR_NO_DEVICE (cuda asked for and none answers, or backend not built in). */
KILN_API kiln_status kiln_ctx_create(kiln_ctx **out, const kiln_ctx_args *args);
/* Drops the caller's reference; NULL is a no-op. */
KILN_API void kiln_ctx_destroy(kiln_ctx *ctx);
/* The detail of the last failure in ctx (never NULL; "" when none). ctx NULL: the calling
 * thread's last failure that had no context. Valid until the next failing call. */
KILN_API const char *kiln_last_error(const kiln_ctx *ctx);
/* KILN_DEVICE_CPU or KILN_DEVICE_CUDA; KILN_DEVICE_DEFAULT for NULL. */
KILN_API kiln_device kiln_ctx_device(const kiln_ctx *ctx);
/* The backend's name ("cpu", "cuda") and, for information, what it runs on. */
KILN_API const char *kiln_ctx_backend_name(const kiln_ctx *ctx);
KILN_API const char *kiln_ctx_device_description(const kiln_ctx *ctx);
/* The number of threads the context's host work runs on, the calling thread included: on
 * the CPU backend the count resolved at creation (args->threads, KILN_THREADS, or one per
 * online core); 1 on CUDA, whose work runs on the GPU; 0 for NULL. The CPU backend starts
 * its threads at the first piece of work big enough to share; every result is bit for bit
 * the same for any thread count. */
KILN_API int kiln_ctx_threads(const kiln_ctx *ctx);
/* Reseeds the RNG and resets its counter to 0, so the same calls give the same numbers. */
KILN_API kiln_status kiln_ctx_set_seed(kiln_ctx *ctx, uint64_t seed);
/* Sets the default rounding of f16/bf16 outputs (KILN_ROUND_NEAREST or _STOCHASTIC). */
KILN_API kiln_status kiln_ctx_set_round(kiln_ctx *ctx, kiln_round round);
/* Allows (1) or forbids (0) TF32 for f32 GEMM on CUDA; no effect on the CPU. */
KILN_API kiln_status kiln_ctx_set_allow_tf32(kiln_ctx *ctx, int allow);
/* Waits until all work queued in ctx is done. */
KILN_API kiln_status kiln_ctx_synchronize(kiln_ctx *ctx);
/* The stream kiln queues ctx's work on, for interop: a cudaStream_t on CUDA (a non-blocking
 * stream of the context's own), NULL on the CPU (work runs in the call) and for NULL. A
 * DLPack consumer passes it as __dlpack__'s stream so that the producer's pending writes
 * are ordered before kiln's work. Valid while ctx lives; kiln owns it. */
KILN_API void *kiln_ctx_stream(const kiln_ctx *ctx);

/* ---------------------------------------------------------------------------------------
 * Memory accounting. One counting, caching allocator per context; every byte of tensor
 * storage, temporary and workspace kiln allocates goes through it. Foreign memory made a
 * tensor by kiln_tensor_wrap is not kiln's: it is listed in the report, never counted.
 * ------------------------------------------------------------------------------------- */
typedef struct kiln_mem_stats {
    size_t in_use;      /* bytes of live allocations (as asked for) */
    size_t peak;        /* highest in_use since creation or kiln_mem_reset_peak */
    size_t cached;      /* bytes freed by the library but kept for reuse */
    size_t limit;       /* the cap, 0 = none */
    int64_t live_blocks; /* number of live allocations */
    int64_t total_allocs; /* allocations made since creation */
} kiln_mem_stats;

KILN_API kiln_status kiln_mem_get_stats(const kiln_ctx *ctx, kiln_mem_stats *out);
KILN_API kiln_status kiln_mem_reset_peak(kiln_ctx *ctx);
/* Caps in_use at limit bytes (0 = no cap). A later allocation that would pass the cap fails
 * with KILN_ERR_OOM and a message naming the largest live allocations. Setting a cap below
 * what is in use already is allowed; it only affects later allocations. */
KILN_API kiln_status kiln_mem_set_limit(kiln_ctx *ctx, size_t limit);
/* Returns cached (freed but kept) blocks to the system or driver. */
KILN_API kiln_status kiln_mem_release_cached(kiln_ctx *ctx);
/* Writes a text report of live allocations grouped by site (file:line) and tensor name,
 * largest first, with totals, then live wrapped memory (kiln_tensor_wrap) the same way under
 * an "external" heading, into buf (always NUL-terminated when cap > 0). *needed (may be
 * NULL) receives the length of the whole report plus one; a short buffer truncates. */
KILN_API kiln_status kiln_mem_report(const kiln_ctx *ctx, char *buf, size_t cap, size_t *needed);

/* ---------------------------------------------------------------------------------------
 * Tensors. Functions that allocate storage record the caller's file:line for the memory
 * report; each is a macro over an _at function that language bindings call with their own
 * site (file may be NULL).
 * ------------------------------------------------------------------------------------- */

/* Uninitialised tensor of the given shape (ndim 0..8, each size >= 0), contiguous.
 * Errors: NULL (ctx, shape when ndim > 0, out), DTYPE, ARG (ndim, negative size),
 * OVERFLOW (element or byte count past int64), OOM. */
KILN_API kiln_status kiln_tensor_empty_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                          kiln_tensor **out, const char *file, int line);
/* Tensor filled with value (converted to dtype with round-to-nearest; zeros/ones are
 * full with 0 and 1). */
KILN_API kiln_status kiln_tensor_full_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape, double value,
                                         kiln_tensor **out, const char *file, int line);
/* 1-D tensor [start, start+step, ...] with n = ceil((stop-start)/step) elements (numpy's
 * arange). Errors: ARG (step 0, non-finite start/stop/step). */
KILN_API kiln_status kiln_tensor_arange_at(kiln_ctx *ctx, kiln_dtype dtype, double start, double stop, double step,
                                           kiln_tensor **out, const char *file, int line);
/* New contiguous tensor of dtype from a contiguous host buffer of src_dtype holding
 * prod(shape) elements; values are converted (float to int truncates toward zero and
 * saturates; NaN becomes 0). */
KILN_API kiln_status kiln_tensor_from_host_at(kiln_ctx *ctx, kiln_dtype dtype, int ndim, const int64_t *shape,
                                              const void *src, kiln_dtype src_dtype, kiln_tensor **out,
                                              const char *file, int line);
/* New contiguous tensor with the values of t (any view) in dtype (KILN_DTYPE_AUTO: t's). */
KILN_API kiln_status kiln_tensor_copy_at(const kiln_tensor *t, kiln_dtype dtype, kiln_tensor **out, const char *file,
                                         int line);
/* t itself (a new reference) when it is already contiguous, otherwise a contiguous copy. */
KILN_API kiln_status kiln_tensor_contiguous_at(kiln_tensor *t, kiln_tensor **out, const char *file, int line);

/* Tensor over foreign memory, without a copy (zero-copy import from numpy, PyTorch, CuPy,
 * DLPack). data is the address of element [0,...,0]; the view has ndim axes (0..8) of
 * shape[i] >= 0 elements and strides[i] elements between neighbours along axis i (any sign,
 * 0 included; strides NULL = row-major contiguous). Element (i0, i1, ...) is at
 * data + (i0*strides[0] + i1*strides[1] + ...) * kiln_dtype_size(dtype).
 * Where the memory must be: host memory on the CPU backend; on the CUDA backend device memory
 * of the context's device (ctx's device_index). kiln cannot check this: the caller promises
 * it. data must be aligned to the element size.
 * Ownership: kiln does not own the memory. It is not counted in kiln_mem_stats (in_use, peak,
 * live_blocks), the memory cap does not apply to it, and kiln_mem_report lists it apart, as
 * "external", with the caller's file:line and the tensor's name. The memory must stay valid
 * until release(user) is called (release may be NULL): once, when the last reference to the
 * storage goes (the tensor, its views, expressions holding it), after the context's queued
 * work has finished. On failure release is NOT called and the caller still owns the memory.
 * Writes: the tensor is written like any other (assign, kiln_tensor_write, kiln_dot), and
 * the writes land in the caller's memory. A stride 0 on an axis of size > 1 makes the view
 * read-only as a broadcast view is; strides that may reach one element twice otherwise
 * (overlapping, e.g. shape (3, 3) strides (1, 1)) make the tensor and every view of it
 * read-only: writes fail with ALIAS. Reads work in every case. Two wraps of the same memory
 * are known to overlap (assignments between them stay correct).
 * Errors: NULL (ctx, out, shape when ndim > 0, data when there are elements), DTYPE, ARG
 * (ndim, negative size, data not aligned), OVERFLOW (element count, or the extent the strides
 * reach, past int64 or outside the address space), OOM (host memory for the handle). */
KILN_API kiln_status kiln_tensor_wrap_at(kiln_ctx *ctx, void *data, kiln_dtype dtype, int ndim, const int64_t *shape,
                                         const int64_t *strides, void (*release)(void *user), void *user,
                                         kiln_tensor **out, const char *file, int line);

#define kiln_tensor_empty(ctx, dtype, ndim, shape, out) \
    kiln_tensor_empty_at((ctx), (dtype), (ndim), (shape), (out), __FILE__, __LINE__)
#define kiln_tensor_full(ctx, dtype, ndim, shape, value, out) \
    kiln_tensor_full_at((ctx), (dtype), (ndim), (shape), (value), (out), __FILE__, __LINE__)
#define kiln_tensor_zeros(ctx, dtype, ndim, shape, out) \
    kiln_tensor_full_at((ctx), (dtype), (ndim), (shape), 0.0, (out), __FILE__, __LINE__)
#define kiln_tensor_ones(ctx, dtype, ndim, shape, out) \
    kiln_tensor_full_at((ctx), (dtype), (ndim), (shape), 1.0, (out), __FILE__, __LINE__)
#define kiln_tensor_arange(ctx, dtype, start, stop, step, out) \
    kiln_tensor_arange_at((ctx), (dtype), (start), (stop), (step), (out), __FILE__, __LINE__)
#define kiln_tensor_from_host(ctx, dtype, ndim, shape, src, src_dtype, out) \
    kiln_tensor_from_host_at((ctx), (dtype), (ndim), (shape), (src), (src_dtype), (out), __FILE__, __LINE__)
#define kiln_tensor_copy(t, dtype, out) kiln_tensor_copy_at((t), (dtype), (out), __FILE__, __LINE__)
#define kiln_tensor_contiguous(t, out) kiln_tensor_contiguous_at((t), (out), __FILE__, __LINE__)
#define kiln_tensor_wrap(ctx, data, dtype, ndim, shape, strides, release, user, out)                            \
    kiln_tensor_wrap_at((ctx), (data), (dtype), (ndim), (shape), (strides), (release), (user), (out), __FILE__, \
                        __LINE__)

/* Takes one more reference (returns t); NULL-safe. */
KILN_API kiln_tensor *kiln_tensor_retain(kiln_tensor *t);
/* Drops one reference; the storage is freed with its last view. NULL is a no-op. */
KILN_API void kiln_tensor_release(kiln_tensor *t);

/* Copies the elements of t (any view), in row-major order, into the contiguous host buffer
 * dst as dst_dtype (prod(shape) elements). */
KILN_API kiln_status kiln_tensor_read(const kiln_tensor *t, void *dst, kiln_dtype dst_dtype);
/* Copies prod(shape) elements from the contiguous host buffer src (src_dtype) into t (any
 * writable view), in row-major order. Errors: ALIAS when t is a broadcast view. */
KILN_API kiln_status kiln_tensor_write(kiln_tensor *t, const void *src, kiln_dtype src_dtype);

/* Accessors; all NULL-safe (0 / NULL / AUTO for NULL). */
KILN_API kiln_ctx *kiln_tensor_ctx(const kiln_tensor *t);
KILN_API kiln_dtype kiln_tensor_dtype(const kiln_tensor *t);
KILN_API int kiln_tensor_ndim(const kiln_tensor *t);
/* Size of axis (negative counts from the end); -1 when out of range. */
KILN_API int64_t kiln_tensor_dim(const kiln_tensor *t, int axis);
/* Stride of axis in elements (0 on broadcast axes); 0 when out of range. */
KILN_API int64_t kiln_tensor_stride(const kiln_tensor *t, int axis);
/* Pointer to the shape / strides arrays (ndim entries), valid while t lives. */
KILN_API const int64_t *kiln_tensor_shape(const kiln_tensor *t);
KILN_API const int64_t *kiln_tensor_strides(const kiln_tensor *t);
/* Number of elements (1 for rank 0). */
KILN_API int64_t kiln_tensor_numel(const kiln_tensor *t);
/* 1 when the view is row-major contiguous. */
KILN_API int kiln_tensor_is_contiguous(const kiln_tensor *t);
/* Address of element [0,...,0] in the backend's memory (a device pointer on CUDA), for
 * interop. NULL for an empty tensor. */
KILN_API void *kiln_tensor_data(const kiln_tensor *t);
/* Names a tensor (copied, up to 63 bytes); the name shows in the memory report and in
 * error messages. name NULL clears it. */
KILN_API kiln_status kiln_tensor_set_name(kiln_tensor *t, const char *name);
/* The name, or "" when unnamed. */
KILN_API const char *kiln_tensor_name(const kiln_tensor *t);

/* ---------------------------------------------------------------------------------------
 * Views: new handles on the same storage (writes through one show through the others).
 * ------------------------------------------------------------------------------------- */

/* "Omitted" marker for kiln_slice fields (numpy's ':' parts). */
#define KILN_NONE INT64_MIN

/* One axis of a basic slice: start:stop:step with numpy's meaning (negative start/stop
 * count from the end; KILN_NONE = omitted; step != 0, negative steps walk backwards).
 * With index set to 1, the axis is indexed by start alone and removed from the result. */
typedef struct kiln_slice {
    int64_t start, stop, step;
    int index;
} kiln_slice;

#define KILN_SLICE_ALL ((kiln_slice){KILN_NONE, KILN_NONE, KILN_NONE, 0})
#define KILN_SLICE(a, b) ((kiln_slice){(a), (b), KILN_NONE, 0})
#define KILN_SLICE_STEP(a, b, s) ((kiln_slice){(a), (b), (s), 0})
#define KILN_INDEX(i) ((kiln_slice){(i), KILN_NONE, KILN_NONE, 1})

/* View of t with the first n axes sliced by s[0..n-1] (the remaining axes whole).
 * Out-of-range start/stop clamp as in numpy; an out-of-range index is BOUNDS. */
KILN_API kiln_status kiln_tensor_slice(kiln_tensor *t, int n, const kiln_slice *s, kiln_tensor **out);
/* View with axes permuted: out.shape[i] = t.shape[axes[i]]; axes a permutation of 0..ndim-1
 * (negative values count from the end). axes NULL reverses the axes (numpy's .T). */
KILN_API kiln_status kiln_tensor_permute(kiln_tensor *t, const int *axes, kiln_tensor **out);
/* Swaps two axes. */
KILN_API kiln_status kiln_tensor_transpose(kiln_tensor *t, int axis0, int axis1, kiln_tensor **out);
/* View with a new shape of the same element count; one size may be -1 (inferred). Fails
 * with LAYOUT (and says which axes) when t's strides cannot express the new shape without a
 * copy; kiln_tensor_contiguous first then. */
KILN_API kiln_status kiln_tensor_reshape(kiln_tensor *t, int ndim, const int64_t *shape, kiln_tensor **out);
/* View broadcast to shape with numpy's rules (stride 0 on new or size-1 axes). Such a
 * view is read-only: assigning into it fails with ALIAS. */
KILN_API kiln_status kiln_tensor_broadcast_to(kiln_tensor *t, int ndim, const int64_t *shape, kiln_tensor **out);

/* ---------------------------------------------------------------------------------------
 * Lazy expressions. Nothing is computed until kiln_assign or kiln_eval. Shapes follow
 * numpy broadcasting (aligned at the right). The whole assignment becomes the fewest
 * kernels the backend can run it in; identical subtrees are computed once.
 * Arithmetic runs in f32, or in f64 where a kernel has an f64 or i32 leaf or cast (so i32 sums and
 * products are exact up to 2^53). Stores convert to the destination's dtype: floats round to
 * nearest (or stochastically, kiln_round); integers truncate toward zero and saturate, NaN
 * giving 0 (uint8 250 * 2 is 255 and int8 -(-128) is 127, where numpy would wrap).
 * All builders consume their kiln_expr* arguments (see the ownership rules above).
 * ------------------------------------------------------------------------------------- */

/* Leaf reading tensor t (takes its own reference on t; t is not consumed). */
KILN_API kiln_expr *kiln_t(kiln_tensor *t);
/* Scalar leaf. Scalars are "weak" as in numpy: they do not widen the result dtype. */
KILN_API kiln_expr *kiln_scalar(double value);

/* Element-wise unary functions. sqr(x)=x*x, rsqrt(x)=1/sqrt(x), reciprocal(x)=1/x,
 * sigmoid(x)=1/(1+exp(-x)), relu(x)=max(x,0), finite(x)=1 if x is finite else 0,
 * sign(x) in {-1,0,1}. log1p(x)=log(1+x) and expm1(x)=exp(x)-1 keep their accuracy near x=0;
 * erf is the error function (GELU's). floor, ceil, rint (to nearest, ties to even, as numpy's
 * rint/round) and trunc (toward zero) keep an integer dtype; the others give a float dtype, as
 * sqrt does. */
KILN_API kiln_expr *kiln_neg(kiln_expr *x);
KILN_API kiln_expr *kiln_abs(kiln_expr *x);
KILN_API kiln_expr *kiln_sqr(kiln_expr *x);
KILN_API kiln_expr *kiln_sqrt(kiln_expr *x);
KILN_API kiln_expr *kiln_rsqrt(kiln_expr *x);
KILN_API kiln_expr *kiln_reciprocal(kiln_expr *x);
KILN_API kiln_expr *kiln_exp(kiln_expr *x);
KILN_API kiln_expr *kiln_exp2(kiln_expr *x);
KILN_API kiln_expr *kiln_log(kiln_expr *x);
KILN_API kiln_expr *kiln_log2(kiln_expr *x);
KILN_API kiln_expr *kiln_sigmoid(kiln_expr *x);
KILN_API kiln_expr *kiln_tanh(kiln_expr *x);
KILN_API kiln_expr *kiln_relu(kiln_expr *x);
KILN_API kiln_expr *kiln_finite(kiln_expr *x);
KILN_API kiln_expr *kiln_sign(kiln_expr *x);
KILN_API kiln_expr *kiln_log1p(kiln_expr *x);
KILN_API kiln_expr *kiln_expm1(kiln_expr *x);
KILN_API kiln_expr *kiln_sin(kiln_expr *x);
KILN_API kiln_expr *kiln_cos(kiln_expr *x);
KILN_API kiln_expr *kiln_erf(kiln_expr *x);
KILN_API kiln_expr *kiln_floor(kiln_expr *x);
KILN_API kiln_expr *kiln_ceil(kiln_expr *x);
KILN_API kiln_expr *kiln_rint(kiln_expr *x);
KILN_API kiln_expr *kiln_trunc(kiln_expr *x);

/* Element-wise binary functions with broadcasting. pow(a,b)=a^b; fmod(a,b) is C's fmod (the
 * exact remainder of a / b truncated, with a's sign; NaN where b = 0 or a is infinite, so 0 in an
 * integer dtype); comparisons give 1 or 0. */
KILN_API kiln_expr *kiln_add(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_sub(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_mul(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_div(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_pow(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_fmod(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_maximum(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_minimum(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_eq(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_ne(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_lt(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_le(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_gt(kiln_expr *a, kiln_expr *b);
KILN_API kiln_expr *kiln_ge(kiln_expr *a, kiln_expr *b);
/* clip(x, lo, hi) = minimum(maximum(x, lo), hi). Error node when lo > hi. */
KILN_API kiln_expr *kiln_clip(kiln_expr *x, double lo, double hi);
/* where(c, a, b) = a where c != 0, else b. */
KILN_API kiln_expr *kiln_where(kiln_expr *c, kiln_expr *a, kiln_expr *b);
/* Converts x to dtype (rounding/truncating as a store to that dtype would); the result
 * has that dtype. */
KILN_API kiln_expr *kiln_cast(kiln_expr *x, kiln_dtype dtype);

/* Random generators. They have no shape of their own: each takes the shape of what it is
 * broadcast against, and every element gets its own number. Streams come from the
 * context's seed and counter (Philox4x32-10, identical on CPU and GPU, see src/core/numeric.h).
 * rand: uniform in [0, 1); randn: standard normal; bernoulli(p): 1 with probability p,
 * else 0 (error node unless 0 <= p <= 1). A generator node used twice (kiln_expr_retain)
 * gives the same numbers at both uses within one evaluation. */
KILN_API kiln_expr *kiln_rand(void);
KILN_API kiln_expr *kiln_randn(void);
KILN_API kiln_expr *kiln_bernoulli(double p);
/* Inverted dropout: x * bernoulli(1-p) / (1-p); error node unless 0 <= p < 1. */
KILN_API kiln_expr *kiln_dropout(kiln_expr *x, double p);

/* Reductions. */
typedef enum kiln_reduce_op {
    KILN_REDUCE_SUM = 0,
    KILN_REDUCE_MEAN,
    KILN_REDUCE_MAX,
    KILN_REDUCE_MIN,
    KILN_REDUCE_VAR, /* population variance, mean((x - mean(x))^2) */
    KILN_REDUCE_STD, /* sqrt(var) */
    KILN_REDUCE_ARGMAX, /* i32 index into the reduced axes, flattened row-major; first of ties */
    KILN_REDUCE_ARGMIN,
    KILN_REDUCE_PROD, /* product; in the compute type within a block, in double across blocks */
    KILN_REDUCE_COUNT
} kiln_reduce_op;

/* Reduces x over the naxes axes listed (negative values count from the end, no repeats);
 * axes NULL with naxes 0 reduces over all axes. keepdims 1 keeps reduced axes as size 1
 * (then the result broadcasts back against x), 0 removes them (numpy's default).
 * Over no elements (a reduced axis of size 0): sum 0, prod 1, max -inf, min +inf (their
 * identities), mean, var and std NaN; argmax and argmin give an error node (SHAPE: there is
 * no index to give). */
KILN_API kiln_expr *kiln_reduce(kiln_reduce_op op, kiln_expr *x, int naxes, const int *axes, int keepdims);
/* Shorthands over one axis that keep the reduced axis (nervanagpu's style, so the result
 * broadcasts back into x): kiln_mean(x, 1) of an (N, C) x is (N, 1). */
KILN_API kiln_expr *kiln_sum(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_mean(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_max(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_min(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_var(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_std(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_argmax(kiln_expr *x, int axis);
KILN_API kiln_expr *kiln_argmin(kiln_expr *x, int axis);

/* Reference counting of expression nodes; both NULL-safe. */
KILN_API kiln_expr *kiln_expr_retain(kiln_expr *e);
KILN_API void kiln_expr_release(kiln_expr *e);

/* Inspecting a node without consuming it. kiln_expr_status gives KILN_OK or the error the
 * node carries (and its message through *msg, may be NULL). */
KILN_API kiln_status kiln_expr_status(const kiln_expr *e, const char **msg);
KILN_API int kiln_expr_ndim(const kiln_expr *e);
KILN_API const int64_t *kiln_expr_shape(const kiln_expr *e);
/* The dtype kiln_eval would give the result (promotion of the leaves; i32 for arg*). */
KILN_API kiln_dtype kiln_expr_dtype(const kiln_expr *e);
/* The distinct nodes of e's graph, leaves and scalars included: a subexpression used twice
 * counts once (it is computed once). 0 for NULL; -1 when memory for the walk ran out. */
KILN_API int64_t kiln_expr_nodes(const kiln_expr *e);

/* Per-assignment settings; zero means the default. */
typedef struct kiln_assign_args {
    kiln_round round; /* rounding of f16/bf16 outputs; default: the context's */
} kiln_assign_args;

/* dst[...] = e. The shape of e must broadcast to dst's shape. dst may be any writable view
 * and may be read by e (in place, reductions of dst included). Consumes e, also on error.
 * Errors: the error node's status, NULL, SHAPE, ALIAS (dst is a broadcast view), CONTEXT
 * (leaves of another context), DTYPE, OOM (temporaries). */
KILN_API kiln_status kiln_assign(kiln_tensor *dst, kiln_expr *e);
KILN_API kiln_status kiln_assign_ex(kiln_tensor *dst, kiln_expr *e, const kiln_assign_args *args);
/* Evaluates e into a new contiguous tensor of e's shape and of dtype (KILN_DTYPE_AUTO: the
 * promoted dtype). ctx may be NULL when e has a tensor leaf (its context is used). */
KILN_API kiln_status kiln_eval_at(kiln_ctx *ctx, kiln_expr *e, kiln_dtype dtype, kiln_tensor **out, const char *file,
                                  int line);
#define kiln_eval(ctx, e, dtype, out) kiln_eval_at((ctx), (e), (dtype), (out), __FILE__, __LINE__)

/* ---------------------------------------------------------------------------------------
 * GEMM.  C = relu?(alpha * op(A) @ op(B) + bias) + beta * C, then rounding.
 * Row-major; A is (..., M, K), B is (..., K, N), C is (..., M, N) after op() (a transpose
 * of the last two axes when trans_a / trans_b is set; transposed views work as well).
 * Leading (batch) axes broadcast numpy-style between A and B and must equal C's.
 * Any strides; f32 and f64 through BLAS where present, f16 and bf16 computed in f32.
 * All of A, B, C have one dtype; bias is (N,) (one value per column) or, with bias_rows,
 * (M,) (one value per row), of C's dtype. stats, when given, receives numerical statistics
 * of the result C (after bias, ReLU, beta and rounding): stats[0] = the largest |x| over
 * its finite elements (0 when there are none), stats[1] = the number of its non-finite
 * elements (NaN, +-inf); an f32 stats counts exactly up to 2^24, an f64 one up to 2^53.
 * ------------------------------------------------------------------------------------- */
typedef struct kiln_gemm_args {
    int trans_a, trans_b;     /* use A^T / B^T (last two axes) */
    int relu;                 /* apply maximum(., +0) after the bias (-0 becomes +0, NaN stays) */
    const kiln_tensor *bias;  /* (N,) added to every row before relu, or (M,) added to every
                                 column with bias_rows; NULL = none */
    kiln_round round;         /* rounding of f16/bf16 C; default: the context's */
    int bias_rows;            /* 1: bias holds one value per row of C, (M,) */
    kiln_tensor *stats;       /* NULL, or an f32 / f64 (2,) tensor: [max |C| finite, count non-finite] */
} kiln_gemm_args;

/* args may be NULL (no transposes, no bias, no relu). Errors: NULL, SHAPE (names the
 * mismatched dims), DTYPE, ALIAS (C broadcast or overlapping A or B; stats overlapping any
 * operand), CONTEXT. */
KILN_API kiln_status kiln_dot(kiln_tensor *C, const kiln_tensor *A, const kiln_tensor *B, double alpha, double beta,
                              const kiln_gemm_args *args);

#ifdef __cplusplus
}
#endif
#endif /* KILN_H */
