/*
 * tools/kiln-bench.c — kiln's benchmark driver, the main job of `make bench`.
 *
 *   kiln-bench [expr|gemm|overhead|all|gemm-sweep|gemm-epilogue|gemm-auto|gemm-ab VAR=v1,v2] [--quick] [--tf32] [--graph] [--dtype f32,f16,...] [--only TEXT] [--help]
 *
 * expr: lazily fused expressions — batch-norm in place, two element-wise chains, the row
 *       variance, softmax along rows — each timed FUSED (one kiln_assign) and UNFUSED (one kiln_assign per
 *       operator into temporaries, the way a numpy-style library runs it), printing ms, GB/s
 *       of the bytes that must move (inputs read once + output written once) and the ratio
 *       unfused/fused measured in the same run.
 * gemm: kiln_dot at a few sizes, GFLOP/s (2*M*N*K flops). On a CUDA device each case runs
 *       twice, KILN_GEMM=vendor (cuBLASLt) and KILN_GEMM=own (kiln's own kernels: wgmma,
 *       mma.sync, FFMA), printing TFLOP/s of both, own/vendor and geometric means.
 * overhead: host time per call through the C API (a 16-element assignment, a small and the
 *       RBM's kiln_dot), with and without the device's queue drained.
 *
 * Timing: monotonic clock, warm-up runs, then the MEDIAN of N runs (N grows until about a
 * target time is spent), kiln_ctx_synchronize before every clock stop. Only the public API
 * (include/kiln.h) is used; building the expression is part of every timed run, as it is
 * for a user. Every case also checks its answer (fused against unfused; sampled GEMM
 * entries against an f64 dot product on the host), so a fast wrong answer shows as FAIL.
 * Exit status: 0 on success, 1 when a kiln call failed (its error is printed) or a check
 * failed, 2 on a bad command line.
 *
 * Adding a peer (cuBLAS, a device copy of the same bytes, PyTorch): measure it into
 * row.peer_ms and add the "peer" columns to the table (see table_add_peer); nothing else
 * changes.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "kiln.h"
#include "cuda/cuda_hooks.h"

/* --graph's CUDA graph helpers: weak, so a build without the CUDA backend links (the flag
 * then says it cannot run); the only internals kiln-bench uses */
#pragma weak kiln__cuda_graph_capture
#pragma weak kiln__cuda_graph_time
#pragma weak kiln__cuda_graph_free

#define MAX_REPS 201
#define MAX_COLS 12
#define EPS      1e-5

/* ---- the run's settings and state ---------------------------------------------------- */

struct row;

typedef struct bench {
    kiln_ctx *ctx;
    int quick;
    int gpu;          /* backend is not the CPU: GPU sizes */
    int ndtypes;      /* expr dtypes; gemm runs these too when --dtype is given */
    int dtypes_given; /* --dtype was on the command line */
    kiln_dtype dtypes[KILN_DTYPE_COUNT];
    int fails;           /* cases whose check failed */
    int tf32;            /* --tf32: the context allows TF32 for f32 GEMM (kiln's tf32 kernel too) */
    int graph;           /* --graph: GPU GEMM times from CUDA graphs of the calls (device time only) */
    int rotate;          /* --rotate N: the GEMM timings but gemm-sweep's take B's N copies in turn (0: one B) */
    const char *current; /* the case being run, for error messages */
    uint64_t rng;        /* host xorshift64* for input data */
    float *host;         /* scratch for input data */
    size_t host_cap;     /* floats */
    /* The expr table's peer, measured in the same run on the same number of bytes; NULL =
     * no peer columns. CPU: a host memcpy (the copy ceiling). */
    kiln_status (*expr_peer)(struct bench *b, const struct row *r, double *ms);
    const char *expr_peer_title, *expr_peer_ratio_title;
    char *copy_src, *copy_dst; /* buffers of the host memcpy peer */
    size_t copy_cap;
    /* GPU gemm: sums of log(vendor ms / own ms) and counts, by [dtype][fully connected], and
     * the lowest ratio with its case (issue 5's targets: none below 0.9x) */
    double gemm_log_ratio[KILN_DTYPE_COUNT][2];
    int gemm_count[KILN_DTYPE_COUNT][2];
    double gemm_min_ratio[KILN_DTYPE_COUNT][2];
    char gemm_min_case[KILN_DTYPE_COUNT][2][64];
    double last_host_ms; /* time_median's median host time per call of a batch, up to its last return */
    const char *only;    /* --only: the GPU gemm cases whose name holds this text (NULL = all) */
    const struct gemm_case *shapes; /* --shapes: gemm-auto's or gemm-ab's cases in place of their lists (NULL) */
    size_t nshapes;
} bench;

/* Prints a failed kiln call with the context's last error; returns its status. */
static kiln_status report(const bench *b, kiln_status st, const char *call, int line)
{
    fprintf(stderr, "kiln-bench: %s: %s (kiln-bench.c:%d) failed: %s\n", b->current ? b->current : "setup", call, line,
            kiln_last_error(b->ctx));
    return st;
}

/* A kiln call inside a function that has a `bench *b`, a `kiln_status st` and a `done:`
 * label that releases what was made. */
#define TRY(call)                           \
    do {                                    \
        st = (call);                        \
        if (st != KILN_OK) {                \
            report(b, st, #call, __LINE__); \
            goto done;                      \
        }                                   \
    } while (0)

/* One step of an unfused sequence: return its status when it fails. */
#define STEP(call)                                \
    do {                                          \
        kiln_status step_st_ = (call);            \
        if (step_st_ != KILN_OK) return step_st_; \
    } while (0)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint64_t rand_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* ---- the table printer --------------------------------------------------------------- */

/* One measured case. Fields a case does not have stay NAN / "". */
typedef struct row {
    char name[40];
    char dtype[8];
    char shape[32];
    double ms;         /* median time of the measured (fused) way */
    double bytes;      /* bytes that must move, for GB/s */
    double flops;      /* for GFLOP/s */
    double unfused_ms; /* median time of the unfused way */
    double peer_ms;    /* median time of the peer (e.g. cuBLAS, a copy of the same bytes) */
    double own_ms;     /* GPU gemm: median time with KILN_GEMM=own (ms is KILN_GEMM=vendor) */
    double host_ms, own_host_ms; /* GPU gemm: host time per call (enqueue, before the wait) */
    char gpu_state[24]; /* GPU gemm: SM clock (MHz) and board power (W) read after the timings */
    double err;        /* largest relative error the check found */
    double tol;        /* the check's tolerance */
} row;

typedef void (*cell_fn)(const row *r, char *buf, size_t cap);

typedef struct column {
    const char *title;
    int width;
    int left; /* left-aligned (text) */
    cell_fn cell;
} column;

typedef struct table {
    int ncols;
    column cols[MAX_COLS];
} table;

static void table_add(table *t, const char *title, int width, int left, cell_fn cell)
{
    if (t->ncols < MAX_COLS) t->cols[t->ncols++] = (column){title, width, left, cell};
}

static void fmt_ms(double ms, char *buf, size_t cap)
{
    if (isnan(ms))
        snprintf(buf, cap, "-");
    else if (ms < 1.0)
        snprintf(buf, cap, "%.4f", ms);
    else if (ms < 100.0)
        snprintf(buf, cap, "%.3f", ms);
    else
        snprintf(buf, cap, "%.1f", ms);
}

/* value through fmt, or "-" when the measurement ms it comes from is missing (NaN). */
static void fmt_measured(char *buf, size_t cap, double ms, const char *fmt, double value)
{
    if (isnan(ms))
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, fmt, value);
}

static void cell_name(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", r->name);
}
static void cell_dtype(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", r->dtype);
}
static void cell_shape(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", r->shape);
}
static void cell_ms(const row *r, char *buf, size_t cap)
{
    fmt_ms(r->ms, buf, cap);
}
static void cell_gbs(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.2f", r->bytes / (r->ms * 1e6));
}
static void cell_gflops(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.1f", r->flops / (r->ms * 1e6));
}
static void cell_tflops(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.1f", r->flops / (r->ms * 1e9));
}
static void cell_own_ms(const row *r, char *buf, size_t cap)
{
    fmt_ms(r->own_ms, buf, cap);
}
static void cell_own_tflops(const row *r, char *buf, size_t cap)
{
    fmt_measured(buf, cap, r->own_ms, "%.1f", r->flops / (r->own_ms * 1e9));
}
/* own TFLOP/s / vendor TFLOP/s: above 1 means kiln's kernel is faster. */
static void cell_own_ratio(const row *r, char *buf, size_t cap)
{
    fmt_measured(buf, cap, r->own_ms, "%.2fx", r->ms / r->own_ms);
}
static void cell_unfused_ms(const row *r, char *buf, size_t cap)
{
    fmt_ms(r->unfused_ms, buf, cap);
}
static void cell_unfused_ratio(const row *r, char *buf, size_t cap)
{
    fmt_measured(buf, cap, r->unfused_ms, "%.2fx", r->unfused_ms / r->ms);
}
static void cell_peer_ms(const row *r, char *buf, size_t cap)
{
    fmt_ms(r->peer_ms, buf, cap);
}
/* peer time / kiln time: above 1 means kiln is faster than the peer. */
static void cell_peer_ratio(const row *r, char *buf, size_t cap)
{
    fmt_measured(buf, cap, r->peer_ms, "%.2fx", r->peer_ms / r->ms);
}
/* host time per call of vendor / own (the calls of a batch up to the last return): where it
 * is near the ms columns the host, not the kernel, set the pace */
static void cell_host_us(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.1f/%.1f", r->host_ms * 1e3, r->own_host_ms * 1e3);
}
static void cell_gpu_state(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", r->gpu_state[0] ? r->gpu_state : "-");
}
static void cell_check(const row *r, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s %.0e", r->err <= r->tol ? "ok" : "FAIL", r->err);
}

/* The first columns of every table: the case, its dtype and its shape. */
static void table_add_case_columns(table *t, const char *shape_title, int shape_width)
{
    table_add(t, "case", 14, 1, cell_name);
    table_add(t, "dtype", 5, 1, cell_dtype);
    table_add(t, shape_title, shape_width, 1, cell_shape);
}

/* The two columns of a peer measured in the same run: its time and peer/kiln. */
static void table_add_peer(table *t, const char *peer_title, const char *ratio_title)
{
    table_add(t, peer_title, 10, 0, cell_peer_ms);
    table_add(t, ratio_title, 10, 0, cell_peer_ratio);
}

static void table_print_header(const table *t, const char *title)
{
    printf("\n%s\n", title);
    int total = 0;
    for (int i = 0; i < t->ncols; i++) {
        if (i == t->ncols - 1 && t->cols[i].left)
            printf("%s%s", i ? "  " : "", t->cols[i].title);
        else
            printf("%s%*s", i ? "  " : "", t->cols[i].left ? -t->cols[i].width : t->cols[i].width, t->cols[i].title);
        total += t->cols[i].width + (i ? 2 : 0);
    }
    printf("\n");
    for (int i = 0; i < total; i++) putchar('-');
    printf("\n");
}

static void table_print_row(const table *t, const row *r)
{
    char buf[64];
    for (int i = 0; i < t->ncols; i++) {
        t->cols[i].cell(r, buf, sizeof buf);
        if (i == t->ncols - 1 && t->cols[i].left) /* no trailing blanks */
            printf("%s%s", i ? "  " : "", buf);
        else
            printf("%s%*s", i ? "  " : "", t->cols[i].left ? -t->cols[i].width : t->cols[i].width, buf);
    }
    printf("\n");
    fflush(stdout);
}

static row row_new(const char *name, kiln_dtype dt)
{
    row r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.dtype, sizeof r.dtype, "%s", kiln_dtype_name(dt));
    r.ms = r.unfused_ms = r.peer_ms = r.own_ms = NAN;
    r.bytes = r.flops = NAN;
    r.err = 0.0;
    r.tol = 0.0;
    return r;
}

/* ---- timing -------------------------------------------------------------------------- */

typedef kiln_status (*run_fn)(void *arg);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static kiln_status gemm_run_once(void *arg);

/* --graph: `batch` calls of fn captured into one CUDA graph, whose launches are timed between
 * two events (the kernels back to back on the device, the host's enqueueing and its gaps out
 * of the count) until about `target` ms are spent (at least min_reps launches): the median
 * per call. A kernel-to-kernel figure for small GEMMs, where a call's host time (kiln's and
 * cuBLASLt's) can exceed its kernel's (bench/NOTES.md step 25). last_host_ms is NaN. */
static kiln_status time_graph(bench *b, run_fn fn, void *arg, int batch, double target, int min_reps, double *ms_out)
{
    kiln_status st = KILN_OK;
    double t[MAX_REPS];
    void *graph = NULL;
    int n = 0;
    b->last_host_ms = NAN;
    TRY(kiln__cuda_graph_capture(b->ctx, fn, arg, batch, &graph));
    double spent = 0.0, upload = 0.0;
    TRY(kiln__cuda_graph_time(b->ctx, graph, &upload)); /* the first launch uploads the graph: not counted */
    for (; n < MAX_REPS; n++) {
        TRY(kiln__cuda_graph_time(b->ctx, graph, &t[n]));
        spent += t[n];
        t[n] /= batch;
        if (n + 1 >= min_reps && spent >= target) {
            n++;
            break;
        }
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *ms_out = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
done:
    if (graph) kiln__cuda_graph_free(graph);
    return st;
}

/* Runs fn a few times to warm up (plan building, kernel compilation, caches), then times
 * it run by run — each run ends with kiln_ctx_synchronize before the clock stops — until
 * about the target time is spent (at least min_reps runs), and gives the median in ms. */
static kiln_status time_median(bench *b, run_fn fn, void *arg, double *ms_out)
{
    kiln_status st = KILN_OK;
    double t[MAX_REPS], th[MAX_REPS];
    int warm = b->gpu ? 3 : 1;
    double target = b->quick ? (b->gpu ? 50.0 : 60.0) : (b->gpu ? 300.0 : 400.0);
    int min_reps = b->quick ? 3 : 5;

    double one = 0.0;
    for (int i = 0; i < warm; i++) {
        double t0 = now_ms();
        TRY(fn(arg));
        TRY(kiln_ctx_synchronize(b->ctx));
        one = now_ms() - t0;
    }
    /* On a GPU a sample is `batch` calls back to back, then one synchronization: a
     * kernel of tens of microseconds is then timed, not the host's launch-and-wait. */
    int batch = 1;
    if (b->gpu && one < 1.0) batch = one <= 0.01 ? 100 : (int)(1.0 / one) + 1;
    if (b->gpu && b->graph && fn == gemm_run_once) { /* the GEMM timings; expressions as before */
        st = time_graph(b, fn, arg, batch, target, min_reps, ms_out);
        goto done;
    }
    int reps = MAX_REPS;
    double spent = 0.0;
    int n = 0;
    for (; n < reps; n++) {
        double t0 = now_ms();
        for (int i = 0; i < batch; i++) TRY(fn(arg));
        th[n] = (now_ms() - t0) / batch;
        TRY(kiln_ctx_synchronize(b->ctx));
        t[n] = (now_ms() - t0) / batch;
        spent += t[n] * (batch - 1);
        spent += t[n];
        if (n + 1 >= min_reps && spent >= target) {
            n++;
            break;
        }
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    qsort(th, (size_t)n, sizeof th[0], cmp_double);
    *ms_out = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    b->last_host_ms = (n % 2) ? th[n / 2] : 0.5 * (th[n / 2 - 1] + th[n / 2]);
done:
    return st;
}

/* ---- input data ---------------------------------------------------------------------- */

/* A new (ndim, shape) tensor of dtype with uniform values in [lo, hi) made on the host. */
static kiln_status random_tensor(bench *b, kiln_dtype dt, int ndim, const int64_t *shape, double lo, double hi,
                                 kiln_tensor **out)
{
    kiln_status st = KILN_OK;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) n *= (size_t)shape[i];
    if (n > b->host_cap) {
        float *p = realloc(b->host, n * sizeof *p);
        if (!p) {
            fprintf(stderr, "kiln-bench: %s: out of host memory for %zu floats\n", b->current, n);
            return KILN_ERR_OOM;
        }
        b->host = p;
        b->host_cap = n;
    }
    for (size_t i = 0; i < n; i++)
        b->host[i] = (float)(lo + (hi - lo) * (double)(rand_u64(&b->rng) >> 40) * (1.0 / 16777216.0));
    TRY(kiln_tensor_from_host(b->ctx, dt, ndim, shape, b->host, KILN_DTYPE_F32, out));
done:
    return st;
}

/* Largest |x - y| / max(1, |y|) over all elements, computed by kiln in f64. */
static kiln_status max_rel_diff(bench *b, kiln_tensor *x, kiln_tensor *y, double *out)
{
    kiln_status st = KILN_OK;
    kiln_tensor *r = NULL;
    kiln_expr *yy = kiln_cast(kiln_t(y), KILN_DTYPE_F64);
    kiln_expr *d = kiln_div(kiln_abs(kiln_sub(kiln_cast(kiln_t(x), KILN_DTYPE_F64), kiln_expr_retain(yy))),
                            kiln_maximum(kiln_abs(yy), kiln_scalar(1.0)));
    TRY(kiln_eval(b->ctx, kiln_reduce(KILN_REDUCE_MAX, d, 0, NULL, 0), KILN_DTYPE_F64, &r));
    TRY(kiln_tensor_read(r, out, KILN_DTYPE_F64));
done:
    kiln_tensor_release(r);
    return st;
}

static double tolerance(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F64: return 1e-10;
    case KILN_DTYPE_F32: return 1e-4;
    case KILN_DTYPE_F16: return 1e-2;
    case KILN_DTYPE_BF16: return 6e-2;
    default: return 1e-4;
    }
}

/* ---- expressions --------------------------------------------------------------------- */

/* The tensors of one (n, c) size. The unfused way writes its intermediate results into
 * the temporaries, allocated once outside the timed runs (as a caching allocator would
 * hand them out). */
typedef struct expr_data {
    int64_t n, c;
    kiln_tensor *a, *b, *bias; /* (n, c), (n, c), (c,) */
    kiln_tensor *row[3];       /* (n, 1) temporaries */
    kiln_tensor *full[5];      /* (n, c) temporaries */
} expr_data;

typedef kiln_status (*expr_fn)(expr_data *d, kiln_tensor *dst);

typedef struct expr_case {
    const char *name;
    const char *formula;
    int in_place;          /* dst starts as a copy of A and the case reads and overwrites it */
    int row_out;           /* dst is (n, 1), else (n, c) */
    double k_nc, k_c, k_n; /* bytes that must move = elem * (k_nc*n*c + k_c*c + k_n*n) */
    expr_fn fused, unfused;
} expr_case;

/* (a) batch-norm in place: X = rsqrt(var(X,1) + eps) * (X - mean(X,1)) */
static kiln_status bn_fused(expr_data *d, kiln_tensor *x)
{
    (void)d;
    return kiln_assign(x, kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(x), 1), kiln_scalar(EPS))),
                                   kiln_sub(kiln_t(x), kiln_mean(kiln_t(x), 1))));
}
static kiln_status bn_unfused(expr_data *d, kiln_tensor *x)
{
    kiln_tensor *m = d->row[0], *v = d->row[1], *r = d->row[2], *xc = d->full[0];
    STEP(kiln_assign(m, kiln_mean(kiln_t(x), 1)));
    STEP(kiln_assign(xc, kiln_sub(kiln_t(x), kiln_t(m))));
    STEP(kiln_assign(v, kiln_var(kiln_t(x), 1)));
    STEP(kiln_assign(r, kiln_add(kiln_t(v), kiln_scalar(EPS))));
    STEP(kiln_assign(v, kiln_rsqrt(kiln_t(r))));
    return kiln_assign(x, kiln_mul(kiln_t(v), kiln_t(xc)));
}

/* (b1) C = relu(A*B + bias), bias (c,) broadcast along the rows */
static kiln_status relu_fused(expr_data *d, kiln_tensor *out)
{
    return kiln_assign(out, kiln_relu(kiln_add(kiln_mul(kiln_t(d->a), kiln_t(d->b)), kiln_t(d->bias))));
}
static kiln_status relu_unfused(expr_data *d, kiln_tensor *out)
{
    STEP(kiln_assign(d->full[0], kiln_mul(kiln_t(d->a), kiln_t(d->b))));
    STEP(kiln_assign(d->full[1], kiln_add(kiln_t(d->full[0]), kiln_t(d->bias))));
    return kiln_assign(out, kiln_relu(kiln_t(d->full[1])));
}

/* (b2) C = sigmoid(A)*B + sqr(A-B)*0.5 */
static kiln_status chain_fused(expr_data *d, kiln_tensor *out)
{
    return kiln_assign(out, kiln_add(kiln_mul(kiln_sigmoid(kiln_t(d->a)), kiln_t(d->b)),
                                     kiln_mul(kiln_sqr(kiln_sub(kiln_t(d->a), kiln_t(d->b))), kiln_scalar(0.5))));
}
static kiln_status chain_unfused(expr_data *d, kiln_tensor *out)
{
    kiln_tensor **f = d->full;
    STEP(kiln_assign(f[0], kiln_sigmoid(kiln_t(d->a))));
    STEP(kiln_assign(f[1], kiln_mul(kiln_t(f[0]), kiln_t(d->b))));
    STEP(kiln_assign(f[2], kiln_sub(kiln_t(d->a), kiln_t(d->b))));
    STEP(kiln_assign(f[3], kiln_sqr(kiln_t(f[2]))));
    STEP(kiln_assign(f[4], kiln_mul(kiln_t(f[3]), kiln_scalar(0.5))));
    return kiln_assign(out, kiln_add(kiln_t(f[1]), kiln_t(f[4])));
}

/* (c) row variance: V = mean(sqr(A - mean(A,1)), 1), V is (n, 1) */
static kiln_status var_fused(expr_data *d, kiln_tensor *out)
{
    return kiln_assign(out, kiln_mean(kiln_sqr(kiln_sub(kiln_t(d->a), kiln_mean(kiln_t(d->a), 1))), 1));
}
static kiln_status var_unfused(expr_data *d, kiln_tensor *out)
{
    STEP(kiln_assign(d->row[0], kiln_mean(kiln_t(d->a), 1)));
    STEP(kiln_assign(d->full[0], kiln_sub(kiln_t(d->a), kiln_t(d->row[0]))));
    STEP(kiln_assign(d->full[1], kiln_sqr(kiln_t(d->full[0]))));
    return kiln_assign(out, kiln_mean(kiln_t(d->full[1]), 1));
}

/* (d) softmax along rows: C = exp(A - max(A,1)) / sum(exp(A - max(A,1)), 1) */
static kiln_status softmax_fused(expr_data *d, kiln_tensor *out)
{
    kiln_expr *e = kiln_exp(kiln_sub(kiln_t(d->a), kiln_max(kiln_t(d->a), 1)));
    return kiln_assign(out, kiln_div(kiln_expr_retain(e), kiln_sum(e, 1)));
}
static kiln_status softmax_unfused(expr_data *d, kiln_tensor *out)
{
    STEP(kiln_assign(d->row[0], kiln_max(kiln_t(d->a), 1)));
    STEP(kiln_assign(d->full[0], kiln_sub(kiln_t(d->a), kiln_t(d->row[0]))));
    STEP(kiln_assign(d->full[1], kiln_exp(kiln_t(d->full[0]))));
    STEP(kiln_assign(d->row[1], kiln_sum(kiln_t(d->full[1]), 1)));
    return kiln_assign(out, kiln_div(kiln_t(d->full[1]), kiln_t(d->row[1])));
}

static const expr_case expr_cases[] = {
    {"batchnorm", "A = rsqrt(var(A,1)+eps)*(A-mean(A,1))", 1, 0, 2, 0, 0, bn_fused, bn_unfused},
    {"relu_bias", "C = relu(A*B + bias)", 0, 0, 3, 1, 0, relu_fused, relu_unfused},
    {"sigmoid_chain", "C = sigmoid(A)*B + sqr(A-B)*0.5", 0, 0, 3, 0, 0, chain_fused, chain_unfused},
    {"variance", "V = mean(sqr(A-mean(A,1)),1)", 0, 1, 1, 0, 1, var_fused, var_unfused},
    {"softmax", "C = exp(A-max(A,1))/sum(exp(A-max(A,1)),1)", 0, 0, 2, 0, 0, softmax_fused, softmax_unfused},
};
#define NEXPR_CASES ((int)(sizeof expr_cases / sizeof expr_cases[0]))

typedef struct expr_run {
    expr_data *d;
    expr_fn fn;
    kiln_tensor *dst;
} expr_run;

static kiln_status expr_run_once(void *arg)
{
    expr_run *r = arg;
    return r->fn(r->d, r->dst);
}

static void expr_data_release(expr_data *d)
{
    kiln_tensor_release(d->a);
    kiln_tensor_release(d->b);
    kiln_tensor_release(d->bias);
    for (int i = 0; i < 3; i++) kiln_tensor_release(d->row[i]);
    for (int i = 0; i < 5; i++) kiln_tensor_release(d->full[i]);
    memset(d, 0, sizeof *d);
}

/* Runs every expression case at one size and dtype, one table row each. */
static kiln_status expr_size(bench *b, const table *t, kiln_dtype dt, int64_t n, int64_t c)
{
    kiln_status st = KILN_OK;
    expr_data d = {.n = n, .c = c};
    kiln_tensor *fused_dst = NULL, *unfused_dst = NULL;
    int64_t nc[2] = {n, c}, n1[2] = {n, 1};

    b->current = "expr setup";
    TRY(random_tensor(b, dt, 2, nc, -2.0, 2.0, &d.a));
    TRY(random_tensor(b, dt, 2, nc, -2.0, 2.0, &d.b));
    TRY(random_tensor(b, dt, 1, &c, -1.0, 1.0, &d.bias));
    for (int i = 0; i < 3; i++) TRY(kiln_tensor_empty(b->ctx, dt, 2, n1, &d.row[i]));
    for (int i = 0; i < 5; i++) TRY(kiln_tensor_empty(b->ctx, dt, 2, nc, &d.full[i]));

    for (int k = 0; k < NEXPR_CASES; k++) {
        const expr_case *ec = &expr_cases[k];
        row r = row_new(ec->name, dt);
        snprintf(r.shape, sizeof r.shape, "%" PRId64 "x%" PRId64, n, c);
        b->current = ec->formula;
        if (ec->in_place) {
            TRY(kiln_tensor_copy(d.a, KILN_DTYPE_AUTO, &fused_dst));
            TRY(kiln_tensor_copy(d.a, KILN_DTYPE_AUTO, &unfused_dst));
        } else {
            TRY(kiln_tensor_full(b->ctx, dt, 2, ec->row_out ? n1 : nc, NAN, &fused_dst));
            TRY(kiln_tensor_full(b->ctx, dt, 2, ec->row_out ? n1 : nc, NAN, &unfused_dst));
        }
        /* The check: one fused and one unfused run on the same data agree. */
        TRY(ec->fused(&d, fused_dst));
        TRY(ec->unfused(&d, unfused_dst));
        TRY(max_rel_diff(b, fused_dst, unfused_dst, &r.err));
        r.tol = tolerance(dt);
        if (!(r.err <= r.tol)) b->fails++;

        expr_run fr = {&d, ec->fused, fused_dst}, ur = {&d, ec->unfused, unfused_dst};
        TRY(time_median(b, expr_run_once, &fr, &r.ms));
        TRY(time_median(b, expr_run_once, &ur, &r.unfused_ms));
        r.bytes = (double)kiln_dtype_size(dt) *
                  (ec->k_nc * (double)n * (double)c + ec->k_c * (double)c + ec->k_n * (double)n);
        if (b->expr_peer) TRY(b->expr_peer(b, &r, &r.peer_ms));
        table_print_row(t, &r);
        kiln_tensor_release(fused_dst);
        kiln_tensor_release(unfused_dst);
        fused_dst = unfused_dst = NULL;
    }
done:
    kiln_tensor_release(fused_dst);
    kiln_tensor_release(unfused_dst);
    expr_data_release(&d);
    if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
    return st;
}

static kiln_status run_expr(bench *b)
{
    static const int64_t cpu_sizes[][2] = {{256, 256}, {1024, 1024}, {4096, 1024}};
    static const int64_t gpu_sizes[][2] = {{1024, 1024}, {8192, 8192}, {65536, 1024}, {1024, 65536}};
    const int64_t(*sizes)[2] = b->gpu ? gpu_sizes : cpu_sizes;
    int nsizes = b->gpu ? 4 : 3;
    if (b->quick) nsizes = 2;

    table t = {0};
    table_add_case_columns(&t, "shape", 11);
    table_add(&t, "fused ms", 9, 0, cell_ms);
    table_add(&t, "GB/s", 8, 0, cell_gbs);
    table_add(&t, "unfused ms", 10, 0, cell_unfused_ms);
    table_add(&t, "unf/fused", 9, 0, cell_unfused_ratio);
    if (b->expr_peer) table_add_peer(&t, b->expr_peer_title, b->expr_peer_ratio_title);
    table_add(&t, "check", 10, 1, cell_check);

    printf("\nexpr cases:\n");
    for (int k = 0; k < NEXPR_CASES; k++) printf("  %-14s %s\n", expr_cases[k].name, expr_cases[k].formula);
    table_print_header(&t, "expr: fused = one kiln_assign; unfused = one kiln_assign per operator "
                           "into temporaries; GB/s of the fused run");
    for (int di = 0; di < b->ndtypes; di++) {
        for (int s = 0; s < nsizes; s++) {
            kiln_status st = expr_size(b, &t, b->dtypes[di], sizes[s][0], sizes[s][1]);
            if (st != KILN_OK) return st;
        }
    }
    return KILN_OK;
}

/* ---- GEMM ---------------------------------------------------------------------------- */

typedef struct gemm_case {
    int64_t m, n, k;
    int trans_b; /* B is stored (n, k) and used as B^T */
    const char *name;
    int fc;      /* one of the fully-connected shapes (their geometric mean is printed) */
} gemm_case;

enum { ROTATE_MAX = 16 };
typedef struct gemm_run {
    kiln_tensor *c, *a, *b;
    kiln_gemm_args args;
    /* --rotate N: the timed calls take B from these N copies in turn (b_set[0] is b; nrot 0:
     * always b), so that no call finds its B in L2 from the call before */
    kiln_tensor *b_set[ROTATE_MAX];
    int nrot, next;
} gemm_run;

/* The case as a GPU run of dtype dt takes it: f32 with --tf32 on a GPU has B stored (N, K)
 * (nn.Linear's weight layout), the K-major operands kiln's tf32 kernel takes */
static gemm_case gemm_case_as_run(const bench *b, kiln_dtype dt, const gemm_case *gc)
{
    gemm_case r = *gc;
    if (b->gpu && b->tf32 && dt == KILN_DTYPE_F32) r.trans_b = 1;
    return r;
}

/* The GEMM check's tolerance (gemm_check's relative error): f32 products are exact in f64,
 * so only the accumulation order and the output rounding differ; 16-bit C is rounded once
 * to 8 (bf16) or 11 (f16) bits; tf32 reads 10-bit inputs. */
static double gemm_tolerance(const bench *b, kiln_dtype dt)
{
    return dt == KILN_DTYPE_F16 ? 2e-3 : dt == KILN_DTYPE_BF16 ? 1e-2 : dt == KILN_DTYPE_F64 ? 1e-12 : b->tf32 ? 2e-3 : 1e-5;
}

static kiln_status gemm_run_once(void *arg)
{
    gemm_run *g = arg;
    kiln_tensor *b = g->nrot > 1 ? g->b_set[g->next++ % g->nrot] : g->b;
    return kiln_dot(g->c, g->a, b, 1.0, 0.0, &g->args);
}

/* --rotate N: B's other N - 1 copies (random, as B), which g's calls take in turn from here
 * on; after the checks, which read g->b */
static kiln_status gemm_rotate_b(bench *b, kiln_dtype dt, gemm_run *g)
{
    kiln_status st = KILN_OK;
    if (b->rotate < 2) return KILN_OK;
    const int64_t bshape[2] = {kiln_tensor_shape(g->b)[0], kiln_tensor_shape(g->b)[1]};
    g->b_set[0] = g->b;
    for (g->nrot = 1; g->nrot < b->rotate; g->nrot++)
        TRY(random_tensor(b, dt, 2, bshape, -1.0, 1.0, &g->b_set[g->nrot]));
done:
    return st;
}

/* g's tensors, B's copies included */
static void gemm_run_release(gemm_run *g)
{
    kiln_tensor_release(g->a);
    kiln_tensor_release(g->b);
    kiln_tensor_release(g->c);
    kiln_tensor_release(g->args.stats);
    g->args.stats = NULL;
    for (int i = 1; i < g->nrot; i++) kiln_tensor_release(g->b_set[i]);
}

/* Compares 16 sampled entries of C with an f64 dot product of the same (rounded) inputs
 * (plus the run's bias and ReLU), read back through row and column views. Error:
 * |c - ref| / (sum_k |a_k b_k| + |bias_n|). */
static kiln_status gemm_check(bench *b, const gemm_case *gc, gemm_run *g, double *err_out)
{
    kiln_status st = KILN_OK;
    kiln_tensor *ar = NULL, *bc = NULL, *cv = NULL, *bn = NULL;
    double *av = malloc((size_t)gc->k * sizeof *av), *bv = malloc((size_t)gc->k * sizeof *bv);
    double worst = 0.0;
    if (!av || !bv) {
        fprintf(stderr, "kiln-bench: %s: out of host memory\n", b->current);
        st = KILN_ERR_OOM;
        goto done;
    }
    uint64_t s = 0x5EED ^ (uint64_t)gc->m;
    for (int i = 0; i < 16; i++) {
        int64_t mi = (int64_t)(rand_u64(&s) % (uint64_t)gc->m), nj = (int64_t)(rand_u64(&s) % (uint64_t)gc->n);
        if (i == 0) mi = 0, nj = 0;
        if (i == 1) mi = gc->m - 1, nj = gc->n - 1;
        kiln_slice arow[1] = {KILN_INDEX(mi)};
        kiln_slice bcol[2] = {KILN_SLICE_ALL, KILN_INDEX(nj)};
        kiln_slice brow[1] = {KILN_INDEX(nj)};
        kiln_slice cel[2] = {KILN_INDEX(mi), KILN_INDEX(nj)};
        double cval = 0.0, ref = 0.0, mag = 0.0;
        TRY(kiln_tensor_slice(g->a, 1, arow, &ar));
        if (gc->trans_b)
            TRY(kiln_tensor_slice(g->b, 1, brow, &bc));
        else
            TRY(kiln_tensor_slice(g->b, 2, bcol, &bc));
        TRY(kiln_tensor_slice(g->c, 2, cel, &cv));
        TRY(kiln_tensor_read(ar, av, KILN_DTYPE_F64));
        TRY(kiln_tensor_read(bc, bv, KILN_DTYPE_F64));
        TRY(kiln_tensor_read(cv, &cval, KILN_DTYPE_F64));
        for (int64_t q = 0; q < gc->k; q++) {
            ref += av[q] * bv[q];
            mag += fabs(av[q] * bv[q]);
        }
        if (g->args.bias) {
            double bval = 0.0;
            kiln_slice bel[1] = {KILN_INDEX(nj)};
            TRY(kiln_tensor_slice((kiln_tensor *)g->args.bias, 1, bel, &bn));
            TRY(kiln_tensor_read(bn, &bval, KILN_DTYPE_F64));
            kiln_tensor_release(bn);
            bn = NULL;
            ref += bval;
            mag += fabs(bval);
        }
        if (g->args.relu && ref < 0.0) ref = 0.0;
        double e = fabs(cval - ref) / (mag > 0.0 ? mag : 1.0);
        if (!(e <= worst)) worst = e; /* keeps NaN */
        kiln_tensor_release(ar);
        kiln_tensor_release(bc);
        kiln_tensor_release(cv);
        ar = bc = cv = NULL;
    }
    *err_out = worst;
done:
    kiln_tensor_release(ar);
    kiln_tensor_release(bc);
    kiln_tensor_release(cv);
    kiln_tensor_release(bn);
    free(av);
    free(bv);
    return st;
}

/* The SM clock (MHz) and the board power (W) right now, through nvidia-smi (the GPU machines
 * have it; no NVML link needed); 0 when they cannot be read. */
static int read_gpu_clock_power(double *mhz, double *w)
{
    *mhz = *w = 0.0;
    FILE *f = popen("nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits 2>/dev/null", "r");
    if (!f) return 0;
    const int ok = fscanf(f, "%lf , %lf", mhz, w) == 2;
    pclose(f);
    return ok;
}

/* The same as "1980/512" (MHz/W); "" when it cannot be read. */
static void read_gpu_state(char *buf, size_t cap)
{
    double mhz, w;
    buf[0] = 0;
    if (read_gpu_clock_power(&mhz, &w)) snprintf(buf, cap, "%.0f/%.0f", mhz, w);
}

/* On a GPU: sets KILN_GEMM (read by kiln at every call) for the runs that follow. */
static void gemm_engine(const bench *b, const char *engine)
{
    if (b->gpu) setenv("KILN_GEMM", engine, 1);
}

/* The environment of way i of an interleaved timing (il_time). */
typedef void (*il_set_fn)(int i, void *arg);

enum { IL_ROUNDS = 6, IL_MAX_WAYS = 9 };

/* Times nway ways of running g (set(i, arg) puts way i's environment in place: KILN_GEMM,
 * the kernels' overrides) interleaved: rounds (at most IL_ROUNDS) rounds, each timing every
 * way once (a quick time_median), in order in even rounds and in reverse in odd ones, so
 * that the clock and power drifting over a case (the GPU warming up, the power cap) meet
 * every way alike; timed one after the other, whichever went second ran on a hotter chip
 * (H100, 2026-11-26: one way's rounds of the 4096 square spanned 0.181-0.231 ms). Per way:
 * the median over the rounds in ms[i], the fastest and slowest rounds in lo[i], hi[i], the
 * median host time per call (time_median's last_host_ms) in host[i], and the SM clock read
 * right after its last round in mhz[i] (0 where nvidia-smi cannot tell; one read a way, as the
 * read takes tens of ms with the GPU idle) (lo, hi, host, mhz may be NULL). */
static kiln_status il_time(bench *b, gemm_run *g, int rounds, int nway, il_set_fn set, void *arg, double *ms,
                           double *lo, double *hi, double *host, double *mhz)
{
    kiln_status st = KILN_OK;
    double t[IL_MAX_WAYS][IL_ROUNDS], th[IL_MAX_WAYS][IL_ROUNDS];
    const int quick = b->quick;
    b->quick = 1;
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < nway; j++) {
            const int i = r % 2 ? nway - 1 - j : j;
            set(i, arg);
            TRY(time_median(b, gemm_run_once, g, &t[i][r]));
            th[i][r] = b->last_host_ms;
            double w;
            if (mhz && r == rounds - 1) read_gpu_clock_power(&mhz[i], &w);
        }
    for (int i = 0; i < nway; i++) {
        qsort(t[i], (size_t)rounds, sizeof t[i][0], cmp_double);
        qsort(th[i], (size_t)rounds, sizeof th[i][0], cmp_double);
        ms[i] = rounds % 2 ? t[i][rounds / 2] : 0.5 * (t[i][rounds / 2 - 1] + t[i][rounds / 2]);
        if (host) host[i] = rounds % 2 ? th[i][rounds / 2] : 0.5 * (th[i][rounds / 2 - 1] + th[i][rounds / 2]);
        if (lo) lo[i] = t[i][0];
        if (hi) hi[i] = t[i][rounds - 1];
    }
done:
    b->quick = quick;
    return st;
}

/* il_set_fn of the gemm table: way 0 cuBLASLt, way 1 kiln's own kernels */
static void il_engine(int i, void *arg)
{
    (void)arg;
    setenv("KILN_GEMM", i ? "own" : "vendor", 1);
}

static kiln_status gemm_one(bench *b, const table *t, kiln_dtype dt, const gemm_case *gc)
{
    kiln_status st = KILN_OK;
    gemm_run g = {0};
    /* kiln's own kernels cover f16, bf16 and f32 (FFMA; with --tf32 the tf32 wgmma kernel,
     * whose B is K-major: the f32 rows then store B as (N, K)); f64 would time the vendor
     * path twice */
    int own = b->gpu && (dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16 || dt == KILN_DTYPE_F32);
    int64_t ashape[2] = {gc->m, gc->k}, cshape[2] = {gc->m, gc->n};
    int64_t bshape[2] = {gc->trans_b ? gc->n : gc->k, gc->trans_b ? gc->k : gc->n};
    row r = row_new(gc->name, dt);
    snprintf(r.shape, sizeof r.shape, "%" PRId64 "x%" PRId64 "x%" PRId64 "%s", gc->m, gc->n, gc->k,
             gc->trans_b ? " B^T" : "");
    b->current = "gemm";
    TRY(random_tensor(b, dt, 2, ashape, -1.0, 1.0, &g.a));
    TRY(random_tensor(b, dt, 2, bshape, -1.0, 1.0, &g.b));
    TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g.c));
    g.args.trans_b = gc->trans_b;
    gemm_engine(b, "vendor");
    TRY(gemm_run_once(&g));
    TRY(gemm_check(b, gc, &g, &r.err));
    r.tol = gemm_tolerance(b, dt);
    if (!own) {
        TRY(gemm_rotate_b(b, dt, &g));
        TRY(time_median(b, gemm_run_once, &g, &r.ms));
        r.host_ms = b->last_host_ms;
    } else { /* the same case with KILN_GEMM=own, on a C full of NaN again; then both timed
              * interleaved (il_time) */
        double err = 0.0, ms[2];
        kiln_tensor_release(g.c);
        g.c = NULL;
        TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g.c));
        gemm_engine(b, "own");
        TRY(gemm_run_once(&g));
        TRY(gemm_check(b, gc, &g, &err));
        if (!isnan(r.err) && !(err <= r.err)) r.err = err; /* the worse of the two (a NaN stays) */
        TRY(gemm_rotate_b(b, dt, &g));
        double host[2];
        TRY(il_time(b, &g, b->quick ? 3 : IL_ROUNDS, 2, il_engine, NULL, ms, NULL, NULL, host, NULL));
        r.ms = ms[0];
        r.own_ms = ms[1];
        r.host_ms = host[0];
        r.own_host_ms = host[1];
    }
    if (b->gpu) read_gpu_state(r.gpu_state, sizeof r.gpu_state);
    if (own && r.own_ms > 0) {
        b->gemm_log_ratio[dt][gc->fc] += log(r.ms / r.own_ms);
        if (b->gemm_count[dt][gc->fc]++ == 0 || r.ms / r.own_ms < b->gemm_min_ratio[dt][gc->fc]) {
            b->gemm_min_ratio[dt][gc->fc] = r.ms / r.own_ms;
            snprintf(b->gemm_min_case[dt][gc->fc], sizeof b->gemm_min_case[dt][gc->fc], "%s %lldx%lldx%lld%s", gc->name,
                     (long long)gc->m, (long long)gc->n, (long long)gc->k, gc->trans_b ? " B^T" : "");
        }
    }
    if (!(r.err <= r.tol)) b->fails++;
    r.flops = 2.0 * (double)gc->m * (double)gc->n * (double)gc->k;
    table_print_row(t, &r);
done:
    gemm_run_release(&g);
    if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
    return st;
}

/* GPU: the list of reference/PEERS-H100.md: the fully-connected layers of AlexNet,
 * Overfeat and VGG at batch 128 (fprop m = 128, n = out, k = in; bprop m = 128, n = in,
 * k = out; update m = in, n = out, k = 128), squares 1024-8192, and B^T at 8192. */
static const gemm_case gpu_cases[] = {
    {4096, 4096, 4096, 0, "square", 0},         {8192, 8192, 8192, 0, "square", 0},
    {128, 4096, 9216, 0, "fc9216 fprop", 1},    {128, 9216, 4096, 0, "fc9216 bprop", 1},
    {9216, 4096, 128, 0, "fc9216 update", 1},   {128, 4096, 4096, 0, "fc4096 fprop", 1},
    {128, 4096, 4096, 0, "fc4096 bprop", 1},    {4096, 4096, 128, 0, "fc4096 update", 1},
    {128, 1000, 4096, 0, "fc1000 fprop", 1},    {128, 4096, 1000, 0, "fc1000 bprop", 1},
    {4096, 1000, 128, 0, "fc1000 update", 1},   {128, 3072, 36864, 0, "fc36864 fprop", 1},
    {128, 36864, 3072, 0, "fc36864 bprop", 1},  {36864, 3072, 128, 0, "fc36864 update", 1},
    {128, 4096, 25088, 0, "fc25088 fprop", 1},  {128, 25088, 4096, 0, "fc25088 bprop", 1},
    {25088, 4096, 128, 0, "fc25088 update", 1}, {1024, 1024, 1024, 0, "square", 0},
    {2048, 2048, 2048, 0, "square", 0},         {8192, 8192, 8192, 1, "square B^T", 0},
};

static kiln_status run_gemm(bench *b)
{
    /* CPU: small to mid squares, a fully-connected layer's shape (batch 128), C = A B^T. */
    static const gemm_case cpu_cases[] = {
        {256, 256, 256, 0, "square", 0},
        {1024, 1024, 1024, 0, "square", 0},
        {128, 4096, 1024, 0, "fc fprop", 0},
        {1024, 1024, 1024, 1, "square B^T", 0},
    };
    static const gemm_case cpu_cases_16[] = {
        {256, 256, 256, 0, "square", 0},
        {512, 512, 512, 0, "square", 0},
    };

    table t = {0};
    table_add_case_columns(&t, "M x N x K", 20);
    if (b->gpu) { /* KILN_GEMM=vendor, then =own (f16 / bf16); the check covers both */
        table_add(&t, "vendor ms", 9, 0, cell_ms);
        table_add(&t, "TFLOP/s", 8, 0, cell_tflops);
        table_add(&t, "own ms", 9, 0, cell_own_ms);
        table_add(&t, "TFLOP/s", 8, 0, cell_own_tflops);
        table_add(&t, "own/vendor", 10, 0, cell_own_ratio);
        table_add(&t, "MHz/W", 9, 0, cell_gpu_state);
        table_add(&t, "host us v/o", 11, 0, cell_host_us);
    } else {
        table_add(&t, "ms", 9, 0, cell_ms);
        table_add(&t, "GFLOP/s", 9, 0, cell_gflops);
    }
    table_add(&t, "check", 10, 1, cell_check);
    table_print_header(&t, b->gpu ? "gemm: kiln_dot, C = A @ B (alpha 1, beta 0), TFLOP/s = 2*M*N*K / time; "
                                    "vendor = KILN_GEMM=vendor (cuBLASLt), own = KILN_GEMM=own (kiln's kernel); host us "
                                    "v/o = host time per call (vendor/own): near the ms the host sets the pace"
                                  : "gemm: kiln_dot, C = A @ B (alpha 1, beta 0), GFLOP/s = 2*M*N*K / time");
    /* KILN_GEMM is set per run below; the caller's value comes back at the end */
    const char *prev_env = getenv("KILN_GEMM");
    char prev[64] = "";
    int had_prev = prev_env != NULL;
    if (had_prev) snprintf(prev, sizeof prev, "%s", prev_env);
    kiln_status result = KILN_OK;

    /* Default: f32 and f16 on every backend. */
    /* Default: f32 and f16 on the CPU; f16, bf16 and f32 on a GPU. */
    static const kiln_dtype gemm_default[] = {KILN_DTYPE_F32, KILN_DTYPE_F16};
    static const kiln_dtype gemm_default_gpu[] = {KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F32};
    const kiln_dtype *dts = b->dtypes_given ? b->dtypes : b->gpu ? gemm_default_gpu : gemm_default;
    int ndts = b->dtypes_given ? b->ndtypes : b->gpu ? 3 : 2;
    for (int di = 0; di < ndts; di++) {
        kiln_dtype dt = dts[di];
        const gemm_case *cases;
        int ncases;
        if (b->gpu) {
            cases = gpu_cases;
            ncases = (int)(sizeof gpu_cases / sizeof gpu_cases[0]);
            if (b->quick) ncases = 2;
        } else if (kiln_dtype_size(dt) <= 2) {
            cases = cpu_cases_16;
            ncases = b->quick ? 1 : (int)(sizeof cpu_cases_16 / sizeof cpu_cases_16[0]);
        } else {
            cases = cpu_cases;
            ncases = b->quick ? 2 : (int)(sizeof cpu_cases / sizeof cpu_cases[0]);
        }
        for (int i = 0; i < ncases && result == KILN_OK; i++) {
            const gemm_case gc = gemm_case_as_run(b, dt, &cases[i]);
            if (b->gpu && b->only && !strstr(gc.name, b->only)) continue;
            result = gemm_one(b, &t, dt, &gc);
        }
        if (result != KILN_OK) break;
    }
    if (b->gpu) {
        if (had_prev)
            setenv("KILN_GEMM", prev, 1);
        else
            unsetenv("KILN_GEMM");
        for (int d = 0; d < KILN_DTYPE_COUNT; d++)
            for (int fc = 1; fc >= 0; fc--)
                if (b->gemm_count[d][fc])
                    printf("own/vendor, geometric mean over the %d %s cases in %s%s: %.2fx (lowest %.2fx, %s)\n",
                           b->gemm_count[d][fc], fc ? "fully-connected" : "square", kiln_dtype_name((kiln_dtype)d),
                           d == KILN_DTYPE_F32 && b->tf32 ? " (TF32)" : "",
                           exp(b->gemm_log_ratio[d][fc] / b->gemm_count[d][fc]), b->gemm_min_ratio[d][fc],
                           b->gemm_min_case[d][fc]);
    }
    return result;
}

/* The inputs of a GPU gemm case (A and B random in [-1, 1), B stored transposed where the
 * case says, C full of NaN) and cuBLASLt's time on them (not timed when vendor_ms is NULL: a
 * caller that times it itself); KILN_GEMM is "own" afterwards. */
static kiln_status gemm_case_inputs(bench *b, kiln_dtype dt, const gemm_case *gc, gemm_run *g, double *vendor_ms)
{
    kiln_status st = KILN_OK;
    int64_t ashape[2] = {gc->m, gc->k}, cshape[2] = {gc->m, gc->n};
    int64_t bshape[2] = {gc->trans_b ? gc->n : gc->k, gc->trans_b ? gc->k : gc->n};
    TRY(random_tensor(b, dt, 2, ashape, -1.0, 1.0, &g->a));
    TRY(random_tensor(b, dt, 2, bshape, -1.0, 1.0, &g->b));
    TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g->c));
    g->args.trans_b = gc->trans_b;
    setenv("KILN_GEMM", "vendor", 1);
    TRY(gemm_run_once(g));
    if (vendor_ms) TRY(time_median(b, gemm_run_once, g, vendor_ms));
    setenv("KILN_GEMM", "own", 1);
done:
    return st;
}

/* ---- gemm sweep ------------------------------------------------------------------------ */

/* kiln-bench gemm-sweep (a GPU with kiln's wgmma kernel): for the fully-connected shapes of
 * the gemm list and its 4096 and 1024 squares,
 * cuBLASLt's time, then kiln's kernel with the tile rule's choice and with every forced
 * choice of tile width (KILN_WGMMA_BN), k splits (KILN_WGMMA_SPLITS) and epilogue store
 * (KILN_WGMMA_STORE), and ping-pong (KILN_WGMMA_SCHED) with either store, each as
 * vendor/own (above 1 = kiln faster) and the sampled check: the data behind the tile rule
 * (src/cuda/gemm_wgmma.c, pick_tiles). Quick timing. */
static kiln_status sweep_one(bench *b, gemm_run *g, const gemm_case *gc, int64_t *cshape, kiln_dtype dt, double vendor,
                             double *ratio)
{
    kiln_status st = KILN_OK;
    double err = 0.0, ms = 0.0;
    kiln_tensor_release(g->c);
    g->c = NULL;
    TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g->c));
    TRY(gemm_run_once(g));
    TRY(gemm_check(b, gc, g, &err));
    TRY(time_median(b, gemm_run_once, g, &ms));
    *ratio = vendor / ms;
    if (!(err <= (dt == KILN_DTYPE_BF16 ? 1e-2 : 2e-3))) {
        b->fails++;
        *ratio = -1.0;
    }
done:
    return st;
}

static kiln_status run_gemm_sweep(bench *b)
{
    /* rows: tile width, epilogue store and split sum (the register store row is left out:
     * the rule takes TMA stores wherever C allows them; split tiles summed in slices store
     * from the registers, and where their items overflow the SMs they are the workspace's) */
    static const int splits[8] = {1, 2, 3, 4, 6, 8, 12, 16};
    static const struct {
        int bn;
        const char *store, *sum;
    } rows[] = {{256, "tma", "workspace"}, {128, "tma", "workspace"}, {128, "tma", "slices"},
                {64, "tma", "workspace"},  {64, "tma", "slices"}};
    enum { NROWS = sizeof rows / sizeof rows[0] };
    static const char *stores[2] = {"regs", "tma"};
    enum { NSPLITS = sizeof splits / sizeof splits[0] };
    kiln_status st = KILN_OK;
    kiln_dtype dt = b->dtypes_given ? b->dtypes[0] : KILN_DTYPE_F16;
    int quick = b->quick;
    b->quick = 1;
    printf("\ngemm-sweep (%s): own/vendor time ratio per tile width x epilogue store (rows) and k splits "
           "(columns); rule = KILN_GEMM=own with no overrides; FAIL = the check failed\n",
           kiln_dtype_name(dt));
    for (size_t i = 0; i < sizeof gpu_cases / sizeof gpu_cases[0] && st == KILN_OK; i++) {
        const gemm_case gcase = gemm_case_as_run(b, dt, &gpu_cases[i]), *gc = &gcase;
        if (!gc->fc && i != 0 && !(gc->m == 1024 && gc->n == 1024)) continue; /* fc, the 4096 and 1024 squares */
        if (b->only && !strstr(gc->name, b->only)) continue;
        gemm_run g = {0};
        int64_t cshape[2] = {gc->m, gc->n};
        double vendor = 0.0, rule = 0.0, best = 0.0;
        char bestcfg[48] = "-";
        b->current = "gemm-sweep";
        TRY(gemm_case_inputs(b, dt, gc, &g, &vendor));
        TRY(sweep_one(b, &g, gc, cshape, dt, vendor, &rule));
        printf("%-15s %" PRId64 "x%" PRId64 "x%" PRId64 "%s: vendor %.4f ms, rule %.2fx\n", gc->name, gc->m, gc->n, gc->k,
               gc->trans_b ? " B^T" : "", vendor, rule);
        printf("    %-15s", "BN/store/sum");
        for (int si = 0; si < NSPLITS; si++) printf("  split %-2d", splits[si]);
        printf("\n");
        for (int ri = 0; ri < NROWS && st == KILN_OK; ri++) {
                char bn[8];
                snprintf(bn, sizeof bn, "%d", rows[ri].bn);
                setenv("KILN_WGMMA_BN", bn, 1);
                setenv("KILN_WGMMA_STORE", rows[ri].store, 1);
                setenv("KILN_WGMMA_SPLIT_SUM", rows[ri].sum, 1);
                printf("    %3d/%s/%-9s", rows[ri].bn, rows[ri].store, rows[ri].sum);
                for (int si = 0; si < NSPLITS && st == KILN_OK; si++) {
                    if (splits[si] > 1 && gc->k / 64 < 2 * splits[si]) {
                        printf("  %8s", "-");
                        continue;
                    }
                    char sp[8];
                    snprintf(sp, sizeof sp, "%d", splits[si]);
                    setenv("KILN_WGMMA_SPLITS", sp, 1);
                    double r = 0.0;
                    st = sweep_one(b, &g, gc, cshape, dt, vendor, &r);
                    if (st != KILN_OK) break;
                    if (r < 0)
                        printf("  %8s", "FAIL");
                    else
                        printf("  %7.2fx", r);
                    if (r > best) {
                        best = r;
                        snprintf(bestcfg, sizeof bestcfg, "BN %d, %d split%s, %s store, %s", rows[ri].bn,
                                 splits[si], splits[si] > 1 ? "s" : "", rows[ri].store, rows[ri].sum);
                    }
                }
                printf("\n");
                unsetenv("KILN_WGMMA_SPLITS");
            }
        unsetenv("KILN_WGMMA_BN");
        unsetenv("KILN_WGMMA_STORE");
        unsetenv("KILN_WGMMA_SPLIT_SUM");
        /* ping-pong (128-wide, unsplit), with each epilogue store */
        setenv("KILN_WGMMA_SCHED", "pingpong", 1);
        printf("    ping-pong:");
        for (int so = 0; so < 2 && st == KILN_OK; so++) {
            double r = 0.0;
            setenv("KILN_WGMMA_STORE", stores[so], 1);
            st = sweep_one(b, &g, gc, cshape, dt, vendor, &r);
            if (st != KILN_OK) break;
            if (r < 0)
                printf("  %s FAIL", stores[so]);
            else
                printf("  %s %.2fx", stores[so], r);
            if (r > best) {
                best = r;
                snprintf(bestcfg, sizeof bestcfg, "ping-pong, %s store", stores[so]);
            }
        }
        printf("\n");
        unsetenv("KILN_WGMMA_SCHED");
        unsetenv("KILN_WGMMA_STORE");
        printf("    best: %.2fx (%s)\n", best, bestcfg);
    done:
        gemm_run_release(&g);
        if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
    }
    unsetenv("KILN_GEMM");
    b->quick = quick;
    return st;
}

/* ---- gemm A/B ------------------------------------------------------------------------------ */

/* The epilogue flags of --epilogue (gemm-one, gemm-auto, gemm-ab); stats: the output
 * statistics (kiln_gemm_args.stats, an f32 (2,) tensor) */
enum { ONE_BIAS = 1, ONE_RELU = 2, ONE_SR = 4, ONE_STATS = 8 };

/* The flags of --epilogue's list (NULL: none) into *flags; 0 (after a message) when it is not
 * a list of bias, relu, sr, stats. */
static int parse_epilogue(const char *epilogue, int *flags)
{
    *flags = 0;
    if (!epilogue) return 1;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", epilogue);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "bias"))
            *flags |= ONE_BIAS;
        else if (!strcmp(tok, "relu"))
            *flags |= ONE_RELU;
        else if (!strcmp(tok, "sr"))
            *flags |= ONE_SR;
        else if (!strcmp(tok, "stats"))
            *flags |= ONE_STATS;
        else {
            fprintf(stderr, "kiln-bench: --epilogue: '%s' is not a list of bias, relu, sr, stats\n", epilogue);
            return 0;
        }
    }
    return 1;
}

/* The epilogue of --epilogue's flags on g: a random bias over C's gc->n columns (into *bias,
 * which the caller releases), ReLU, stochastic rounding of the 16-bit C, the output
 * statistics (g->args.stats, released with g) */
static kiln_status gemm_epilogue_args(bench *b, kiln_dtype dt, const gemm_case *gc, int flags, gemm_run *g,
                                      kiln_tensor **bias)
{
    *bias = NULL;
    if (flags & ONE_BIAS) {
        kiln_status st = random_tensor(b, dt, 1, &gc->n, -1.0, 1.0, bias);
        if (st != KILN_OK) return st;
        g->args.bias = *bias;
    }
    g->args.relu = (flags & ONE_RELU) != 0;
    if (flags & ONE_SR) g->args.round = KILN_ROUND_STOCHASTIC; /* else the context's: nearest */
    if (flags & ONE_STATS) {
        const int64_t two = 2;
        return kiln_tensor_empty(b->ctx, KILN_DTYPE_F32, 1, &two, &g->args.stats);
    }
    return KILN_OK;
}

/* kiln-bench gemm-ab VAR=v1,v2,... [--epilogue bias,relu,sr,stats] (CUDA): an A/B test of one
 * environment setting of kiln's own GEMM kernels (KILN_GEMM_PDL=0,1; KILN_WGMMA_BN=128,256;
 * ...) on the gemm cases (--only filters; first --dtype, default f16), plain or with the
 * epilogue asked for: per case cuBLASLt (KILN_GEMM=vendor: with stochastic rounding its
 * product and kiln's epilogue pass) and KILN_GEMM=own with each value timed interleaved
 * (il_time), so that all meet the same clocks and power; per value the median over the rounds
 * (ms), own/vendor, and the time against the first value's. Each value's first run is checked
 * like the gemm table's (stochastic rounding: up to twice its tolerance). */
enum { AB_MAX_VALUES = IL_MAX_WAYS - 1 };

/* il_set_fn of gemm-ab: way 0 cuBLASLt, way v + 1 kiln's kernels with var = values[v] */
typedef struct ab_ways {
    const char *var;
    char **values;
} ab_ways;

static void ab_set(int i, void *arg)
{
    const ab_ways *w = arg;
    setenv("KILN_GEMM", i ? "own" : "vendor", 1);
    if (i) setenv(w->var, w->values[i - 1], 1);
}

static kiln_status run_gemm_ab(bench *b, const char *spec, int flags)
{
    char var[64], list[256], *values[AB_MAX_VALUES];
    const char *eq = strchr(spec, '=');
    int nv = 0;
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof var || strlen(eq + 1) >= sizeof list) {
        fprintf(stderr, "kiln-bench: gemm-ab: '%s' is not VAR=value,value,...\n", spec);
        return KILN_ERR_ARG;
    }
    snprintf(var, sizeof var, "%.*s", (int)(eq - spec), spec);
    snprintf(list, sizeof list, "%s", eq + 1);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (nv == AB_MAX_VALUES) {
            fprintf(stderr, "kiln-bench: gemm-ab: more than %d values in '%s'\n", AB_MAX_VALUES, spec);
            return KILN_ERR_ARG;
        }
        values[nv++] = tok;
    }
    if (nv < 2) {
        fprintf(stderr, "kiln-bench: gemm-ab: '%s' names fewer than two values\n", spec);
        return KILN_ERR_ARG;
    }
    const kiln_dtype dt = b->dtypes_given ? b->dtypes[0] : KILN_DTYPE_F16;
    if ((flags & ONE_SR) && dt != KILN_DTYPE_F16 && dt != KILN_DTYPE_BF16) {
        fprintf(stderr, "kiln-bench: gemm-ab: --epilogue sr rounds a 16-bit C; --dtype is %s\n", kiln_dtype_name(dt));
        return KILN_ERR_ARG;
    }
    if (kiln_ctx_device(b->ctx) != KILN_DEVICE_CUDA) {
        printf("gemm-ab: needs a CUDA device (kiln's GEMM kernels): nothing to time on %s\n",
               kiln_ctx_backend_name(b->ctx));
        return KILN_OK;
    }
    kiln_status st = KILN_OK;
    const double tol = gemm_tolerance(b, dt) * (flags & ONE_SR ? 2.0 : 1.0);
    int quick = b->quick;
    b->quick = 1;
    printf("\ngemm-ab (%s%s%s%s): cuBLASLt and %s's values over %d interleaved rounds; per value: median ms over the "
           "rounds, own/vendor, time / first value's time\n",
           kiln_dtype_name(dt), flags & ONE_BIAS ? " +bias" : "", flags & ONE_RELU ? " +relu" : "",
           flags & ONE_SR ? " +sr" : "", var, IL_ROUNDS);
    const gemm_case *cases = b->shapes ? b->shapes : gpu_cases;
    const size_t ncases = b->shapes ? b->nshapes : sizeof gpu_cases / sizeof gpu_cases[0];
    for (size_t i = 0; i < ncases && st == KILN_OK; i++) {
        const gemm_case gcase = gemm_case_as_run(b, dt, &cases[i]), *gc = &gcase;
        if (b->only && !strstr(gc->name, b->only)) continue;
        gemm_run g = {0};
        kiln_tensor *bias = NULL;
        double vendor = 0.0;
        b->current = "gemm-ab";
        TRY(gemm_case_inputs(b, dt, gc, &g, NULL)); /* cuBLASLt is timed in the rounds below */
        TRY(gemm_epilogue_args(b, dt, gc, flags, &g, &bias));
        for (int v = 0; v < nv; v++) { /* each value's result, from a poisoned C */
            double err = 0.0;
            setenv(var, values[v], 1);
            TRY(kiln_assign(g.c, kiln_scalar(NAN)));
            TRY(gemm_run_once(&g));
            TRY(gemm_check(b, gc, &g, &err));
            if (!(err <= tol)) {
                printf("  %s %s=%s: check FAILED (error %.1e)\n", gc->name, var, values[v], err);
                b->fails++;
            }
        }
        TRY(gemm_rotate_b(b, dt, &g));
        ab_ways w = {var, values};
        double ms[IL_MAX_WAYS], lo[IL_MAX_WAYS], hi[IL_MAX_WAYS];
        TRY(il_time(b, &g, IL_ROUNDS, nv + 1, ab_set, &w, ms, lo, hi, NULL, NULL));
        vendor = ms[0];
        printf("%-15s %" PRId64 "x%" PRId64 "x%" PRId64 "%s: vendor %.4f ms  (rounds %.4f-%.4f)\n", gc->name, gc->m, gc->n,
               gc->k, gc->trans_b ? " B^T" : "", vendor, lo[0], hi[0]);
        for (int v = 0; v < nv; v++)
            printf("    %s=%-10s %8.4f ms  %5.2fx of vendor  %6.3f of the first  (rounds %.4f-%.4f)\n", var, values[v],
                   ms[v + 1], vendor / ms[v + 1], ms[v + 1] / ms[1], lo[v + 1], hi[v + 1]);
    done:
        gemm_run_release(&g);
        kiln_tensor_release(bias);
        if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
    }
    unsetenv(var);
    unsetenv("KILN_GEMM");
    b->quick = quick;
    return st;
}

/* ---- gemm auto --------------------------------------------------------------------------- */

/* kiln-bench gemm-auto [--epilogue bias,relu,sr,stats] (CUDA): the dispatch of KILN_GEMM=auto
 * (kiln's default) on deep-learning shapes beyond the list — fully-connected layers
 * at batches 1-1024, transformer projections and their weight gradients, convolutions as
 * GEMMs (implicit im2col sizes), ragged and small sizes. Per case cuBLASLt, kiln's own
 * kernels and auto are timed interleaved (il_time) with the epilogue asked for, each checked
 * against the f64 reference; auto/best is auto's time over the faster of the other two
 * (1.00 where auto picks the faster engine). With stochastic rounding the vendor side is
 * kiln's reference kernel (cuBLASLt cannot round so), as KILN_GEMM=vendor gives it. */
static const gemm_case auto_cases[] = {
    {1, 4096, 4096, 0, "fc4096 b1 fprop", 1},       {16, 4096, 4096, 0, "fc4096 b16 fprop", 1},
    {32, 4096, 4096, 0, "fc4096 b32 fprop", 1},     {4096, 4096, 32, 0, "fc4096 b32 update", 1},
    {64, 4096, 9216, 0, "fc9216 b64 fprop", 1},     {64, 9216, 4096, 0, "fc9216 b64 bprop", 1},
    {9216, 4096, 64, 0, "fc9216 b64 update", 1},    {96, 4096, 4096, 0, "fc4096 b96 fprop", 1},
    {192, 4096, 4096, 0, "fc4096 b192 fprop", 1},   {200, 4096, 4096, 0, "fc4096 b200 fprop", 1},
    {256, 4096, 4096, 0, "fc4096 b256 fprop", 1},
    {4096, 4096, 256, 0, "fc4096 b256 update", 1},  {256, 4096, 25088, 0, "fc25088 b256 fprop", 1},
    {256, 25088, 4096, 0, "fc25088 b256 bprop", 1}, {25088, 4096, 256, 0, "fc25088 b256 update", 1},
    {256, 1000, 4096, 0, "fc1000 b256 fprop", 1},   {256, 4096, 1000, 0, "fc1000 b256 bprop", 1},
    {4096, 1000, 256, 0, "fc1000 b256 update", 1},  {512, 4096, 4096, 0, "fc4096 b512 fprop", 1},
    {4096, 4096, 512, 0, "fc4096 b512 update", 1},  {1024, 4096, 4096, 0, "fc4096 b1024 fprop", 1},
    {8192, 3072, 1024, 0, "qkv d1024", 0},          {8192, 1024, 1024, 0, "attn out d1024", 0},
    {8192, 4096, 1024, 0, "mlp up d1024", 0},       {8192, 1024, 4096, 0, "mlp down d1024", 0},
    {1024, 4096, 8192, 0, "wgrad up d1024", 0},     {4096, 11008, 4096, 0, "mlp up d4096", 0},
    {4096, 4096, 11008, 0, "mlp down d4096", 0},    {4096, 4096, 8192, 0, "wgrad d4096", 0},
    {4096, 32000, 4096, 0, "lm head 32000", 0},     {2048, 50304, 768, 0, "lm head 50304", 0},
    {100352, 128, 1152, 0, "conv 3x3 56x56 c128", 0}, {25088, 512, 256, 0, "conv 1x1 28x28", 0},
    {6272, 512, 4608, 0, "conv 3x3 14x14 c512", 0}, {4608, 512, 6272, 0, "conv wgrad c512", 0},
    {1000, 1000, 1000, 0, "ragged", 0},             {776, 2056, 520, 0, "ragged", 0},
    {256, 256, 256, 0, "small", 0},                 {512, 512, 512, 0, "small", 0},
    {256, 256, 65536, 0, "long k", 0},
};

/* il_set_fn of gemm-auto: way 0 cuBLASLt, 1 kiln's own kernels, 2 auto */
static void auto_set(int i, void *arg)
{
    (void)arg;
    setenv("KILN_GEMM", i == 0 ? "vendor" : i == 1 ? "own" : "auto", 1);
}

static kiln_status run_gemm_auto(bench *b, int flags)
{
    static const char *const engines[] = {"vendor", "own", "auto"};
    kiln_status st = KILN_OK;
    int quick = b->quick;
    const int ndt = b->dtypes_given ? b->ndtypes : 2;
    kiln_dtype dts[KILN_DTYPE_COUNT] = {KILN_DTYPE_F16, KILN_DTYPE_BF16};
    if (b->dtypes_given)
        for (int i = 0; i < ndt; i++) dts[i] = b->dtypes[i];
    const int bias_on = flags & ONE_BIAS, relu = flags & ONE_RELU, sr = flags & ONE_SR;
    printf("\ngemm-auto%s%s%s: ms of cuBLASLt (vendor), kiln's own kernels and KILN_GEMM=auto, timed interleaved; "
           "auto/best = auto's time / the faster of vendor and own\n",
           bias_on ? " +bias" : "", relu ? " +relu" : "", sr ? " +sr" : "");
    printf("%-20s %-5s %-20s %10s %10s %10s %10s %9s  %s\n", "case", "dtype", "M x N x K", "vendor ms", "own ms",
           "auto ms", "own/vendor", "auto/best", "check");
    for (int di = 0; di < ndt && st == KILN_OK; di++) {
        const kiln_dtype dt = dts[di];
        double log_vendor = 0.0, log_best = 0.0, worst = 0.0;
        int count = 0;
        char worst_case[64] = "";
        if (sr && dt != KILN_DTYPE_F16 && dt != KILN_DTYPE_BF16) continue; /* stochastic rounding: 16-bit C */
        const gemm_case *cases = b->shapes ? b->shapes : auto_cases;
        const size_t ncases = b->shapes ? b->nshapes : sizeof auto_cases / sizeof auto_cases[0];
        for (size_t i = 0; i < ncases && st == KILN_OK; i++) {
            const gemm_case gcase = gemm_case_as_run(b, dt, &cases[i]), *gc = &gcase;
            if (b->only && !strstr(gc->name, b->only)) continue;
            gemm_run g = {0};
            kiln_tensor *bias = NULL;
            double ms[3], err = 0.0, tol = gemm_tolerance(b, dt) * (sr ? 2.0 : 1.0);
            b->current = "gemm-auto";
            TRY(gemm_case_inputs(b, dt, gc, &g, NULL));
            TRY(gemm_epilogue_args(b, dt, gc, flags, &g, &bias));
            for (int w = 0; w < 3; w++) { /* each engine's result, from a poisoned C */
                double e = 0.0;
                auto_set(w, NULL);
                TRY(kiln_assign(g.c, kiln_scalar(NAN)));
                TRY(gemm_run_once(&g));
                TRY(gemm_check(b, gc, &g, &e));
                if (!(e <= err)) err = e; /* keeps NaN */
                if (!(e <= tol)) printf("  %s %s KILN_GEMM=%s: check FAILED (error %.1e)\n", gc->name, kiln_dtype_name(dt),
                                        engines[w], e);
            }
            if (!(err <= tol)) b->fails++;
            TRY(gemm_rotate_b(b, dt, &g));
            TRY(il_time(b, &g, quick ? 3 : IL_ROUNDS, 3, auto_set, NULL, ms, NULL, NULL, NULL, NULL));
            const double best = ms[0] < ms[1] ? ms[0] : ms[1], ratio = ms[2] / best;
            log_vendor += log(ms[0] / ms[2]);
            log_best += log(ratio);
            if (count++ == 0 || ratio > worst) {
                worst = ratio;
                snprintf(worst_case, sizeof worst_case, "%s %" PRId64 "x%" PRId64 "x%" PRId64, gc->name, gc->m, gc->n,
                         gc->k);
            }
            char shape[32];
            snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64 "x%" PRId64 "%s", gc->m, gc->n, gc->k,
                     gc->trans_b ? "t" : "");
            printf("%-20s %-5s %-20s %10.4f %10.4f %10.4f %9.2fx %9.2f  %s %.0e\n", gc->name, kiln_dtype_name(dt), shape,
                   ms[0], ms[1], ms[2], ms[0] / ms[1], ratio, err <= tol ? "ok" : "FAIL", err);
        done:
            gemm_run_release(&g);
            kiln_tensor_release(bias);
            if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
        }
        if (count)
            printf("%s over %d cases: auto's speed-up over vendor %.2fx (geometric mean), auto/best %.3f (geometric "
                   "mean), worst %.2f (%s)\n",
                   kiln_dtype_name(dt), count, exp(log_vendor / count), exp(log_best / count), worst, worst_case);
    }
    unsetenv("KILN_GEMM");
    return st;
}

/* ---- gemm epilogue ----------------------------------------------------------------------- */

/* kiln-bench gemm-epilogue (CUDA): what the full epilogue costs kiln's own kernels — each
 * shape timed with KILN_GEMM=own plain (C = A @ B, nearest rounding), with each part alone
 * (bias, ReLU, stochastic rounding of the 16-bit C: the three percentages) and with all
 * three (full), and cuBLASLt plain and with its bias + ReLU epilogue (no stochastic rounding
 * there) for scale, all seven timed interleaved (il_time); the cost is full / plain - 1
 * (target <= 3 %), the check the worst own run against the f64 reference (bias and ReLU in). */
/* The runs of a gemm-epilogue case, timed interleaved (il_time): own plain, own + bias, own +
 * ReLU, own + SR, own full, vendor, vendor + bias + ReLU */
enum { EPI_RUNS = 7 };

typedef struct epi_ways {
    gemm_run *g;
    kiln_tensor *bias;
} epi_ways;

static void epi_set(int run, void *arg)
{
    static const int r_bias[EPI_RUNS] = {0, 1, 0, 0, 1, 0, 1}, r_relu[EPI_RUNS] = {0, 0, 1, 0, 1, 0, 1},
                     r_sr[EPI_RUNS] = {0, 0, 0, 1, 1, 0, 0};
    const epi_ways *w = arg;
    setenv("KILN_GEMM", run < 5 ? "own" : "vendor", 1);
    w->g->args.bias = r_bias[run] ? w->bias : NULL;
    w->g->args.relu = r_relu[run];
    w->g->args.round = r_sr[run] ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
}

static kiln_status run_gemm_epilogue(bench *b)
{
    /* rows of gpu_cases: squares 4096 and 8192, fc9216 fprop / bprop / update, fc4096 update,
     * fc36864 update (the K=128 updates are all epilogue, where its cost shows most) */
    static const int pick[] = {0, 1, 2, 3, 4, 7, 13};
    kiln_status st = KILN_OK;
    int quick = b->quick;
    b->quick = 1;
    int ndt = b->dtypes_given ? b->ndtypes : 2;
    kiln_dtype dts[KILN_DTYPE_COUNT] = {KILN_DTYPE_F16, KILN_DTYPE_BF16};
    if (b->dtypes_given)
        for (int i = 0; i < ndt; i++) dts[i] = b->dtypes[i];
    printf("\ngemm-epilogue: ms of kiln's own kernel plain, the cost of bias, ReLU and stochastic rounding alone "
           "and together (full), cuBLASLt plain and with bias + ReLU; cost = own full / own plain - 1 "
           "(target <= 3 %%); MHz p/f: the SM clock read after the plain and the full runs' last rounds\n");
    printf("%-15s %-5s %-20s %10s %7s %7s %7s %10s %7s %10s %10s  %-9s  %s\n", "case", "dtype", "M x N x K", "own ms",
           "+bias", "+relu", "+sr", "full ms", "cost", "vendor ms", "v+bias ms", "MHz p/f", "check");
    for (int di = 0; di < ndt && st == KILN_OK; di++) {
        kiln_dtype dt = dts[di];
        if (dt != KILN_DTYPE_F16 && dt != KILN_DTYPE_BF16) continue; /* stochastic rounding: 16-bit C */
        for (size_t i = 0; i < sizeof pick / sizeof pick[0] && st == KILN_OK; i++) {
            const gemm_case *gc = &gpu_cases[pick[i]];
            if (b->only && !strstr(gc->name, b->only)) continue;
            gemm_run g = {0};
            kiln_tensor *bias = NULL;
            int64_t ashape[2] = {gc->m, gc->k}, bshape[2] = {gc->k, gc->n}, cshape[2] = {gc->m, gc->n};
            double t[EPI_RUNS] = {0}, mhz[EPI_RUNS] = {0}, err = 0.0, worst = 0.0;
            b->current = "gemm-epilogue";
            TRY(random_tensor(b, dt, 2, ashape, -1.0, 1.0, &g.a));
            TRY(random_tensor(b, dt, 2, bshape, -1.0, 1.0, &g.b));
            TRY(random_tensor(b, dt, 1, &cshape[1], -1.0, 1.0, &bias));
            TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g.c));
            epi_ways w = {&g, bias};
            for (int run = 0; run < 5 && st == KILN_OK; run++) { /* the own runs' checks */
                epi_set(run, &w);
                TRY(gemm_run_once(&g));
                TRY(gemm_check(b, gc, &g, &err));
                if (!(err <= worst)) worst = err; /* keeps NaN */
            }
            TRY(gemm_rotate_b(b, dt, &g));
            TRY(il_time(b, &g, quick ? 3 : IL_ROUNDS, EPI_RUNS, epi_set, &w, t, NULL, NULL, NULL, mhz));
            double tol = dt == KILN_DTYPE_F16 ? 2e-3 : 1e-2;
            if (!(worst <= tol)) b->fails++;
            char shape[32];
            snprintf(shape, sizeof shape, "%" PRId64 "x%" PRId64 "x%" PRId64, gc->m, gc->n, gc->k);
            char clocks[24] = "-"; /* the SM clock read after the plain and the full runs */
            if (mhz[0] > 0 && mhz[4] > 0) snprintf(clocks, sizeof clocks, "%.0f/%.0f", mhz[0], mhz[4]);
            printf("%-15s %-5s %-20s %10.4f %6.1f%% %6.1f%% %6.1f%% %10.4f %6.1f%% %10.4f %10.4f  %-9s  %s %.0e\n",
                   gc->name, kiln_dtype_name(dt), shape, t[0], (t[1] / t[0] - 1.0) * 100.0, (t[2] / t[0] - 1.0) * 100.0,
                   (t[3] / t[0] - 1.0) * 100.0, t[4], (t[4] / t[0] - 1.0) * 100.0, t[5], t[6], clocks,
                   worst <= tol ? "ok" : "FAIL", worst);
        done:
            gemm_run_release(&g);
            kiln_tensor_release(bias);
            if (st == KILN_OK) st = kiln_mem_release_cached(b->ctx);
        }
    }
    unsetenv("KILN_GEMM");
    b->quick = quick;
    return st;
}

/* ---- one gemm ------------------------------------------------------------------------- */

/* kiln-bench gemm-one MxNxK[t] [--epilogue bias,relu,sr,stats] [--dtype DT] [--rotate N]: one GEMM,
 * C = A @ B with A (M, K), B (K, N) (stored (N, K) with the suffix t, and for f32 with --tf32
 * on a GPU, as in the gemm table), random inputs, the epilogue asked for, through whichever
 * engine KILN_GEMM and the backend pick: a warm-up call, the sampled f64 check, then the
 * timed calls (with --rotate N, taking B from N copies in turn). For profilers: the warm-up
 * is kernel launch 1 of the GEMM, so
 *   ncu --kernel-name regex:kiln_gemm --launch-skip 1 --launch-count 1 kiln-bench gemm-one ...
 * profiles a timed call. */

/* The shape and the epilogue's flags of gemm-one from its arguments; 0 (after a message
 * naming the bad one) when they are not MxNxK and a list of bias, relu, sr. */
static int parse_gemm_one(const char *shape, const char *epilogue, gemm_case *gc, int *flags)
{
    char tail = 0, extra = 0;
    const int got = sscanf(shape, "%" SCNd64 "x%" SCNd64 "x%" SCNd64 "%c%c", &gc->m, &gc->n, &gc->k, &tail, &extra);
    if ((got != 3 && !(got == 4 && tail == 't')) || gc->m < 1 || gc->n < 1 || gc->k < 1) {
        fprintf(stderr, "kiln-bench: shape '%s' is not MxNxK or MxNxKt with positive sizes\n", shape);
        return 0;
    }
    gc->trans_b = got == 4; /* MxNxKt: B stored (N, K), read as its transpose */
    return parse_epilogue(epilogue, flags);
}

/* gemm-auto / gemm-ab --shapes MxNxK[t],...: the cases (named "shapes") into *out (malloc'd, *n of
 * them); 0 (after a message naming the bad one) when one is not a shape as gemm-one takes. */
static int parse_shapes(const char *list, gemm_case **out, size_t *n)
{
    size_t cap = 1;
    for (const char *p = list; *p; p++) cap += *p == ',';
    gemm_case *cases = calloc(cap, sizeof *cases);
    char *buf = strdup(list);
    if (!cases || !buf) {
        fprintf(stderr, "kiln-bench: --shapes: out of memory\n");
        free(cases);
        free(buf);
        return 0;
    }
    size_t count = 0;
    int flags = 0, ok = 1;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        cases[count] = (gemm_case){0, 0, 0, 0, "shapes", 0};
        ok = parse_gemm_one(tok, NULL, &cases[count], &flags);
        count += ok;
    }
    free(buf);
    if (!ok || count == 0) {
        if (ok) fprintf(stderr, "kiln-bench: --shapes: '%s' names no shape\n", list);
        free(cases);
        return 0;
    }
    *out = cases;
    *n = count;
    return 1;
}

static kiln_status run_gemm_one(bench *b, gemm_case gc, int flags)
{
    kiln_status st = KILN_OK;
    const int bias = flags & ONE_BIAS, relu = flags & ONE_RELU, sr = flags & ONE_SR;
    kiln_dtype dt = b->dtypes_given ? b->dtypes[0] : b->gpu ? KILN_DTYPE_F16 : KILN_DTYPE_F32;
    gc = gemm_case_as_run(b, dt, &gc); /* tf32: B stored (N, K), as the gemm table has it */
    gemm_run g = {0};
    kiln_tensor *bt = NULL;
    int64_t ashape[2] = {gc.m, gc.k}, bshape[2] = {gc.trans_b ? gc.n : gc.k, gc.trans_b ? gc.k : gc.n};
    int64_t cshape[2] = {gc.m, gc.n};
    double ms = 0.0, err = 0.0;
    b->current = "gemm-one";
    TRY(random_tensor(b, dt, 2, ashape, -1.0, 1.0, &g.a));
    TRY(random_tensor(b, dt, 2, bshape, -1.0, 1.0, &g.b));
    TRY(kiln_tensor_full(b->ctx, dt, 2, cshape, NAN, &g.c));
    TRY(gemm_epilogue_args(b, dt, &gc, flags, &g, &bt));
    g.args.trans_b = gc.trans_b;
    TRY(gemm_run_once(&g));
    TRY(gemm_check(b, &gc, &g, &err));
    TRY(gemm_rotate_b(b, dt, &g));
    TRY(time_median(b, gemm_run_once, &g, &ms));
    {
        /* stochastic rounding: up to one unit of the last place where nearest gives half */
        const int ok = err <= gemm_tolerance(b, dt) * (sr ? 2.0 : 1.0);
        if (!ok) b->fails++;
        char rot[32] = "";
        if (b->rotate > 1) snprintf(rot, sizeof rot, " (B x %d)", b->rotate);
        printf("\ngemm-one %s %" PRId64 "x%" PRId64 "x%" PRId64 "%s%s%s%s%s (KILN_GEMM=%s): %.4f ms, %.1f TFLOP/s, check %s %.0e\n",
               kiln_dtype_name(dt), gc.m, gc.n, gc.k, gc.trans_b ? " B^T" : "", bias ? " +bias" : "", relu ? " +relu" : "", sr ? " +sr" : "", rot,
               getenv("KILN_GEMM") ? getenv("KILN_GEMM") : "auto", ms, 2.0 * (double)gc.m * (double)gc.n * (double)gc.k / (ms * 1e9),
               ok ? "ok" : "FAIL", err);
    }
done:
    gemm_run_release(&g);
    kiln_tensor_release(bt);
    return st;
}

/* ---- overhead ------------------------------------------------------------------------ */

/* kiln-bench overhead: the host cost of one call through the C API, paid per operation
 * whatever its size — an evaluated 16-element assignment (plan building, kernel lookup,
 * launch), the same into a 0-element view (checks and planning of an empty plan, no
 * backend call: the difference is mostly the backend's per-kernel cost), a tensor made
 * and released, a synchronisation of an idle context, a 16x16x16 kiln_dot, and the RBM's
 * 128x784 @ 784x4096 f32 kiln_dot. Each: N calls timed up to the last return (host
 * us/call), then with the device's queue drained (us/call; above the host figure when the
 * device, not the host, sets the pace). */
typedef kiln_status (*overhead_fn)(void *arg);
typedef struct overhead_dot {
    kiln_tensor *c, *a, *b;
} overhead_dot;
static kiln_status overhead_assign(void *arg)
{
    kiln_tensor **t = arg;
    return kiln_assign(t[2], kiln_add(kiln_t(t[0]), kiln_t(t[1])));
}
static kiln_status overhead_gemm(void *arg)
{
    overhead_dot *d = arg;
    return kiln_dot(d->c, d->a, d->b, 1.0, 0.0, NULL);
}
/* a 16-element f32 tensor made and released: the caching allocator's round trip */
static kiln_status overhead_tensor(void *arg)
{
    kiln_ctx *ctx = arg;
    int64_t n = 16;
    kiln_tensor *t = NULL;
    kiln_status st = kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, &n, &t);
    kiln_tensor_release(t);
    return st;
}
static kiln_status overhead_sync(void *arg) { return kiln_ctx_synchronize(arg); }

static kiln_status overhead_row(bench *b, const char *what, overhead_fn fn, void *arg, int n)
{
    kiln_status st = KILN_OK;
    for (int i = 0; i < 50 && st == KILN_OK; i++) st = fn(arg); /* warm-up: kernels, plans */
    if (st == KILN_OK) st = kiln_ctx_synchronize(b->ctx);
    double t0 = now_ms(), t1 = t0;
    for (int i = 0; i < n && st == KILN_OK; i++) st = fn(arg);
    t1 = now_ms();
    if (st == KILN_OK) st = kiln_ctx_synchronize(b->ctx);
    double t2 = now_ms();
    if (st != KILN_OK) return report(b, st, what, __LINE__);
    printf("  %-46s %9.2f us host %9.2f us drained\n", what, (t1 - t0) * 1e3 / n, (t2 - t0) * 1e3 / n);
    return KILN_OK;
}

static kiln_status run_overhead(bench *b)
{
    kiln_status st = KILN_OK;
    int n = b->quick ? 2000 : 20000;
    int64_t n16 = 16, sq[2] = {16, 16}, x[2] = {128, 784}, w[2] = {784, 4096}, h[2] = {128, 4096};
    kiln_tensor *t16[3] = {NULL, NULL, NULL}, *t0[3] = {NULL, NULL, NULL};
    int64_t n0 = 0;
    overhead_dot small = {0}, rbm = {0};
    b->current = "overhead";
    printf("\noverhead: host time per call through the C API (%s)\n", kiln_ctx_backend_name(b->ctx));
    TRY(random_tensor(b, KILN_DTYPE_F32, 1, &n16, -1.0, 1.0, &t16[0]));
    TRY(random_tensor(b, KILN_DTYPE_F32, 1, &n16, -1.0, 1.0, &t16[1]));
    TRY(kiln_tensor_full(b->ctx, KILN_DTYPE_F32, 1, &n16, NAN, &t16[2]));
    TRY(overhead_row(b, "kiln_assign out = a + b, 16 elements f32", overhead_assign, t16, n));
    for (int i = 0; i < 3; i++) TRY(kiln_tensor_empty(b->ctx, KILN_DTYPE_F32, 1, &n0, &t0[i]));
    TRY(overhead_row(b, "kiln_assign out = a + b, 0 elements (no kernel)", overhead_assign, t0, n));
    TRY(overhead_row(b, "kiln_tensor_empty + release, 16 f32", overhead_tensor, b->ctx, n));
    TRY(overhead_row(b, "kiln_ctx_synchronize, idle", overhead_sync, b->ctx, n));
    TRY(random_tensor(b, KILN_DTYPE_F32, 2, sq, -1.0, 1.0, &small.a));
    TRY(random_tensor(b, KILN_DTYPE_F32, 2, sq, -1.0, 1.0, &small.b));
    TRY(kiln_tensor_full(b->ctx, KILN_DTYPE_F32, 2, sq, NAN, &small.c));
    TRY(overhead_row(b, "kiln_dot 16x16x16 f32", overhead_gemm, &small, n / 4));
    TRY(random_tensor(b, KILN_DTYPE_F32, 2, x, -1.0, 1.0, &rbm.a));
    TRY(random_tensor(b, KILN_DTYPE_F32, 2, w, -1.0, 1.0, &rbm.b));
    TRY(kiln_tensor_full(b->ctx, KILN_DTYPE_F32, 2, h, NAN, &rbm.c));
    TRY(overhead_row(b, "kiln_dot 128x4096x784 f32 (the RBM's)", overhead_gemm, &rbm, b->gpu ? 2000 : 20));
done:
    for (int i = 0; i < 3; i++) {
        kiln_tensor_release(t16[i]);
        kiln_tensor_release(t0[i]);
    }
    overhead_dot *ds[2] = {&small, &rbm};
    for (int i = 0; i < 2; i++) {
        kiln_tensor_release(ds[i]->a);
        kiln_tensor_release(ds[i]->b);
        kiln_tensor_release(ds[i]->c);
    }
    return st;
}

/* ---- main ---------------------------------------------------------------------------- */

/* The CPU's copy ceiling: median ms of a host memcpy that moves r->bytes (r->bytes / 2
 * read and as many written). */
static kiln_status host_copy_peer(bench *b, const row *r, double *ms_out)
{
    size_t half = (size_t)(r->bytes / 2.0);
    if (half > b->copy_cap) {
        free(b->copy_src);
        free(b->copy_dst);
        b->copy_src = malloc(half);
        b->copy_dst = malloc(half);
        if (!b->copy_src || !b->copy_dst) {
            b->copy_cap = 0;
            fprintf(stderr, "kiln-bench: %s: out of host memory for the memcpy peer\n", b->current);
            return KILN_ERR_OOM;
        }
        memset(b->copy_src, 1, half);
        memset(b->copy_dst, 2, half);
        b->copy_cap = half;
    }
    double t[MAX_REPS], spent = 0.0, target = b->quick ? 30.0 : 100.0;
    int n = 0;
    memcpy(b->copy_dst, b->copy_src, half); /* warm-up */
    while (n < MAX_REPS) {
        double t0 = now_ms();
        memcpy(b->copy_dst, b->copy_src, half);
        t[n] = now_ms() - t0;
        b->copy_src[n % (half ? half : 1)] ^= b->copy_dst[half ? half - 1 : 0]; /* keep the copy observable */
        spent += t[n++];
        if (n >= 5 && spent >= target) break;
    }
    qsort(t, (size_t)n, sizeof t[0], cmp_double);
    *ms_out = (n % 2) ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    return KILN_OK;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln-bench [expr|gemm|overhead|all|gemm-sweep|gemm-epilogue|gemm-auto|gemm-one MxNxK[t]|\n"
               "                   gemm-ab VAR=v1,v2]\n"
               "                  [--quick]\n"
               "                  [--dtype f32,f16,...] [--only TEXT] [--epilogue bias,relu,sr,stats] [--tf32] [--graph]\n"
               "                  [--rotate N] [--shapes MxNxK[t],...]\n"
               "  expr    fused vs unfused expressions (ms, GB/s, unfused/fused)\n"
               "  gemm    kiln_dot (ms, GFLOP/s)\n"
               "  overhead  host time per call: a small assignment, a small and the RBM's kiln_dot\n"
               "  all     expr, gemm and overhead (default)\n"
               "  gemm-sweep  (CUDA) kiln's wgmma GEMM over forced tile widths, k splits and\n"
               "          epilogue stores against cuBLASLt, per shape (first --dtype, default f16)\n"
               "  gemm-epilogue  (CUDA) the cost of bias + ReLU + stochastic rounding in kiln's\n"
               "          own kernels (f16, bf16)\n"
               "  gemm-auto  (CUDA) KILN_GEMM=auto against cuBLASLt and kiln's own kernels on more\n"
               "          deep-learning shapes (--dtype, default f16,bf16; --epilogue as gemm-one;\n"
               "          --shapes MxNxK[t],... in place of its list, as for gemm-ab)\n"
               "  gemm-ab VAR=v1,v2,...  (CUDA) kiln's own GEMM with the environment variable VAR at\n"
               "          each value in turn, rounds interleaved, per gemm case (first --dtype; --shapes\n"
               "          MxNxK[t],... in place of the gemm cases; --epilogue as gemm-one)\n"
               "  gemm-one MxNxK[t]  one GEMM, A (M, K) @ B (K, N) (B stored (N, K) with t), through\n"
               "          the engine KILN_GEMM picks:\n"
               "          a warm-up call, the check, the timed calls (first --dtype, default f16 on a\n"
               "          GPU, f32 on the CPU; --epilogue adds bias, relu, sr); for profilers\n"
               "  --quick fewer sizes and shorter timing\n"
               "  --only TEXT  GPU gemm, gemm-sweep, gemm-epilogue, gemm-ab: only the cases whose name holds TEXT\n"
               "  --rotate N  gemm, gemm-epilogue, gemm-auto, gemm-ab, gemm-one: the timed calls take B\n"
               "          from N copies in turn (2-16; N times B's bytes past the L2 keeps any call from\n"
               "          finding its B there from the call before, as in a training step)\n"
               "  --tf32  allow TF32 for f32 GEMM (cuBLASLt's and kiln's tf32 kernel, A and B K-major)\n"
               "  --graph (CUDA) time GEMM cases as CUDA graphs of back-to-back calls: device time\n"
               "          only, the host's enqueueing out of the count (host us columns read nan)\n"
               "  --dtype float dtypes to run: f32, f16, bf16, f64 (default: expr f32 on the CPU and\n"
               "          f32,f16 on a GPU; gemm f32,f16)\n"
               "The backend comes from KILN_DEVICE=cpu|cuda|auto (default auto).\n");
}

static int parse_dtypes(bench *b, const char *list)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    b->ndtypes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        kiln_dtype dt = kiln_dtype_from_name(tok);
        if ((dt != KILN_DTYPE_F32 && dt != KILN_DTYPE_F16 && dt != KILN_DTYPE_BF16 && dt != KILN_DTYPE_F64) ||
            b->ndtypes >= KILN_DTYPE_COUNT) {
            fprintf(stderr, "kiln-bench: --dtype: '%s' is not a list of f32, f16, bf16, f64\n", list);
            return 0;
        }
        b->dtypes[b->ndtypes++] = dt;
    }
    return b->ndtypes > 0;
}

/* On a GPU the expr cases are also timed by tools/kiln-gpu-bench (built next to this
 * program): CUDA events, the ratio to a device-to-device copy of the same bytes measured in
 * the same run, and the kernel compile latencies. Its failure is reported, not fatal. */
static void run_gpu_bench(const char *self, int quick)
{
    char cmd[4096];
    const char *slash = strrchr(self, '/');
    int dirlen = slash ? (int)(slash - self) : 1;
    snprintf(cmd, sizeof cmd, "'%.*s/kiln-gpu-bench'%s", dirlen, slash ? self : ".", quick ? " --quick" : "");
    printf("\nexpr against a device-to-device copy (kiln-gpu-bench):\n");
    fflush(stdout);
    int rc = system(cmd);
    if (rc != 0) printf("kiln-gpu-bench: exit status %d\n", rc);
}

int main(int argc, char **argv)
{
    bench b = {0};
    int do_expr = 1, do_gemm = 1, do_sweep = 0, do_overhead = 1, do_epilogue = 0, do_auto = 0;
    const char *dtype_list = NULL, *one_shape = NULL, *one_epilogue = NULL, *ab_spec = NULL, *shapes_list = NULL;
    gemm_case *shapes = NULL;
    b.rng = 0x9E3779B97F4A7C15ull;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "expr")) {
            do_expr = 1, do_gemm = do_overhead = 0;
        } else if (!strcmp(argv[i], "gemm")) {
            do_expr = do_overhead = 0, do_gemm = 1;
        } else if (!strcmp(argv[i], "overhead")) {
            do_expr = do_gemm = 0, do_overhead = 1;
        } else if (!strcmp(argv[i], "all")) {
            do_expr = do_gemm = do_overhead = 1;
        } else if (!strcmp(argv[i], "gemm-sweep")) {
            do_expr = do_gemm = do_overhead = 0, do_sweep = 1;
        } else if (!strcmp(argv[i], "gemm-epilogue")) {
            do_expr = do_gemm = do_overhead = 0, do_epilogue = 1;
        } else if (!strcmp(argv[i], "gemm-auto")) {
            do_expr = do_gemm = do_overhead = 0, do_auto = 1;
        } else if (!strcmp(argv[i], "gemm-ab") && i + 1 < argc) {
            do_expr = do_gemm = do_overhead = 0, ab_spec = argv[++i];
        } else if (!strcmp(argv[i], "gemm-one") && i + 1 < argc) {
            do_expr = do_gemm = do_overhead = 0, one_shape = argv[++i];
        } else if (!strcmp(argv[i], "--epilogue") && i + 1 < argc) {
            one_epilogue = argv[++i];
        } else if (!strcmp(argv[i], "--rotate") && i + 1 < argc) {
            char *end = NULL;
            const long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 2 || v > ROTATE_MAX) {
                fprintf(stderr, "kiln-bench: --rotate: '%s' is not a whole number from 2 to %d\n", argv[i], ROTATE_MAX);
                return 2;
            }
            b.rotate = (int)v;
        } else if (!strcmp(argv[i], "--quick")) {
            b.quick = 1;
        } else if (!strcmp(argv[i], "--tf32")) {
            b.tf32 = 1;
        } else if (!strcmp(argv[i], "--graph")) {
            b.graph = 1;
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            dtype_list = argv[++i];
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            b.only = argv[++i];
        } else if (!strcmp(argv[i], "--shapes") && i + 1 < argc) {
            shapes_list = argv[++i];
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "kiln-bench: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    if (b.rotate && (do_sweep || !(do_gemm || do_epilogue || do_auto || ab_spec || one_shape))) {
        fprintf(stderr, "kiln-bench: --rotate goes with gemm, gemm-epilogue, gemm-auto, gemm-ab or gemm-one\n");
        usage(stderr);
        return 2;
    }
    if (one_epilogue && !one_shape && !do_auto && !ab_spec) {
        fprintf(stderr, "kiln-bench: --epilogue goes with gemm-one, gemm-auto or gemm-ab\n");
        usage(stderr);
        return 2;
    }
    if (shapes_list && !do_auto && !ab_spec) {
        fprintf(stderr, "kiln-bench: --shapes goes with gemm-auto or gemm-ab\n");
        usage(stderr);
        return 2;
    }
    if (shapes_list && !parse_shapes(shapes_list, &shapes, &b.nshapes)) return 2;
    b.shapes = shapes;
    gemm_case one_case = {0, 0, 0, 0, "gemm-one", 0};
    int one_flags = 0;
    if (one_shape && !parse_gemm_one(one_shape, one_epilogue, &one_case, &one_flags)) return 2;
    if ((do_auto || ab_spec) && !parse_epilogue(one_epilogue, &one_flags)) return 2;
    setvbuf(stdout, NULL, _IOLBF, 0); /* rows survive a run cut short (a time limit) */
    kiln_status st = kiln_ctx_create(&b.ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "kiln-bench: kiln_ctx_create failed (%s): %s\n", kiln_status_name(st), kiln_last_error(NULL));
        return 1;
    }
    b.gpu = kiln_ctx_device(b.ctx) != KILN_DEVICE_CPU;
    if (b.graph && (!b.gpu || !kiln__cuda_graph_capture)) {
        fprintf(stderr, "kiln-bench: --graph times CUDA graphs and needs the CUDA backend on a GPU; this run is on %s\n",
                kiln_ctx_backend_name(b.ctx));
        kiln_ctx_destroy(b.ctx);
        return 2;
    }
    if (b.tf32 && (st = kiln_ctx_set_allow_tf32(b.ctx, 1)) != KILN_OK) {
        fprintf(stderr, "kiln-bench: kiln_ctx_set_allow_tf32 failed: %s\n", kiln_last_error(b.ctx));
        kiln_ctx_destroy(b.ctx);
        return 1;
    }
    if (dtype_list) {
        b.dtypes_given = 1;
        if (!parse_dtypes(&b, dtype_list)) {
            kiln_ctx_destroy(b.ctx);
            return 2;
        }
    } else {
        b.dtypes[b.ndtypes++] = KILN_DTYPE_F32;
        if (b.gpu) b.dtypes[b.ndtypes++] = KILN_DTYPE_F16;
    }

    char when[64] = "?";
    time_t now = time(NULL);
    struct tm tmv;
    if (gmtime_r(&now, &tmv)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tmv);
    struct utsname un;
    int have_un = uname(&un) == 0;
    printf("kiln-bench: kiln %s, backend %s: %s\n", kiln_version(), kiln_ctx_backend_name(b.ctx),
           kiln_ctx_device_description(b.ctx));
    printf("%s on %s (%s %s), mode %s; times are medians of >= %d runs after warm-up\n", when,
           have_un ? un.nodename : "?", have_un ? un.sysname : "?", have_un ? un.machine : "?",
           b.quick ? "quick" : "full", b.quick ? 3 : 5);
    if (b.graph)
        printf("--graph: GEMM times are device times of CUDA graphs of back-to-back calls (the host's enqueueing "
               "not counted)\n");
    if (b.rotate)
        printf("--rotate %d: GEMM calls are timed taking B from %d copies in turn (no call finds its B in L2 from the "
               "call before)\n",
               b.rotate, b.rotate);
    if (!b.gpu) {
        b.expr_peer = host_copy_peer;
        b.expr_peer_title = "memcpy ms";
        b.expr_peer_ratio_title = "of memcpy";
    }

    double t0 = now_ms();
    if (do_expr) st = run_expr(&b);
    if (do_expr && st == KILN_OK && b.gpu) run_gpu_bench(argv[0], b.quick);
    if (do_gemm && st == KILN_OK) st = run_gemm(&b);
    if (do_overhead && st == KILN_OK) st = run_overhead(&b);
    if (one_shape && st == KILN_OK) st = run_gemm_one(&b, one_case, one_flags);
    if (ab_spec && st == KILN_OK) st = run_gemm_ab(&b, ab_spec, one_flags);
    if ((do_sweep || do_epilogue || do_auto) && st == KILN_OK) {
        if (kiln_ctx_device(b.ctx) == KILN_DEVICE_CUDA)
            st = do_sweep ? run_gemm_sweep(&b) : do_epilogue ? run_gemm_epilogue(&b) : run_gemm_auto(&b, one_flags);
        else
            printf("%s: needs a CUDA device (kiln's GEMM kernels): nothing to time on %s\n",
                   do_sweep ? "gemm-sweep" : do_epilogue ? "gemm-epilogue" : "gemm-auto", kiln_ctx_backend_name(b.ctx));
    }

    kiln_mem_stats ms;
    if (st == KILN_OK && kiln_mem_get_stats(b.ctx, &ms) == KILN_OK)
        printf("\nmemory: peak %.1f MiB through kiln's allocator, %" PRId64 " allocations, %zu bytes still in use\n",
               (double)ms.peak / (1 << 20), ms.total_allocs, ms.in_use);
    printf("total %.1f s; %s\n", (now_ms() - t0) * 1e-3,
           st != KILN_OK ? "FAILED (a kiln call failed, see above)"
           : b.fails     ? "FAILED (a check failed)"
                         : "all checks ok");
    kiln_ctx_destroy(b.ctx);
    free(b.host);
    free(b.copy_src);
    free(b.copy_dst);
    free(shapes);
    return (st != KILN_OK || b.fails) ? 1 : 0;
}
