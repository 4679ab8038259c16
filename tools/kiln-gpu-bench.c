/*
 * tools/kiln-gpu-bench.c — the GPU half of `kiln-bench expr`: fused expressions on the CUDA
 * backend, timed with CUDA events on the context's stream, against a device-to-device
 * copy of the same bytes measured in the same run, and the kernel compile latencies
 * (first compile, in-memory hit, disk hit from a fresh process).
 *
 *   kiln-gpu-bench [--quick]          the table (exits 77 without a CUDA device)
 *   kiln-gpu-bench [--only NAMES] [--sizes RxC,RxC...] [--dtype f32|f16|bf16] [--split-ab | --ab VAR=V1,V2...]
 *                                     the cases so named (commas outside parentheses
 *                                     separate them: --only 'sum(A,0),sum(A)') on those
 *                                     shapes; no compile latencies; --ab: each timed with
 *                                     the environment variable VAR at each value in turn
 *                                     in one process (--split-ab: KILN_REDUCE_SPLIT=0,1,force);
 *                                     --dtype: that dtype alone (f32 and f16 by default;
 *                                     bf16 only so asked; for a profiler's --launch-skip)
 *   kiln-gpu-bench --disk-probe       (internal) one batch-norm in a fresh process, prints
 *                                     the kernel lookup time; run by the parent with the
 *                                     parent's KILN_CACHE_DIR
 *
 * Timing: each case runs 3 times to warm up, then 7 batches of REPS back-to-back
 * assignments between two events; the median batch time / REPS is reported, so the host's
 * plan building overlaps the device work as in a real program. GB/s counts the bytes that
 * must move (inputs read once, output written once); "copy" is cudaMemcpyAsync D2D of half
 * that many bytes (it reads and writes them), so copy/kiln is the fraction of copy
 * bandwidth reached. The reductions of everything (sum(A), A-max(A)) are one long row: split
 * across blocks by default, one block with KILN_REDUCE_SPLIT=0. Uses the public API plus
 * the CUDA backend's timing hooks.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln.h"
#include "cuda/cuda_hooks.h"

#pragma weak kiln__cuda_cache_stats
#pragma weak kiln__cuda_timer_start
#pragma weak kiln__cuda_timer_stop
#pragma weak kiln__cuda_time_copy

#define TRY(call)                                                                              \
    do {                                                                                       \
        kiln_status s_ = (call);                                                               \
        if (s_ != KILN_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, kiln_last_error(ctx)); \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

static kiln_ctx *ctx;

typedef struct data {
    kiln_tensor *A, *B, *bias, *out, *rowout, *one;
} data;

/* batch norm of x along axis: rsqrt(var(x) + 1e-5) * (x - mean(x)); consumes x */
static kiln_expr *normalized(kiln_expr *x, int axis)
{
    kiln_expr *norm = kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_expr_retain(x), axis), kiln_scalar(1e-5))),
                               kiln_sub(kiln_expr_retain(x), kiln_mean(kiln_expr_retain(x), axis)));
    kiln_expr_release(x);
    return norm;
}
static kiln_status bn(data *d) { return kiln_assign(d->A, normalized(kiln_t(d->A), 1)); }
/* batch norm of each column (features last, as NHWC): COLUMN mode, two passes and a write */
static kiln_status bn_columns(data *d) { return kiln_assign(d->A, normalized(kiln_t(d->A), 0)); }
/* the same into another tensor (the output competes with the second walk for the L2), and of the sum
 * of two tensors (two full-size inputs walked twice): codegen.c col_depth's bound, bench/NOTES.md step 79 */
static kiln_status bn_columns_out(data *d) { return kiln_assign(d->out, normalized(kiln_t(d->A), 0)); }
static kiln_status bn_columns_sum(data *d)
{
    return kiln_assign(d->out, normalized(kiln_add(kiln_t(d->A), kiln_t(d->B)), 0));
}
static kiln_status relu_ab(data *d)
{
    return kiln_assign(d->out, kiln_relu(kiln_add(kiln_mul(kiln_t(d->A), kiln_t(d->B)), kiln_t(d->bias))));
}
static kiln_status chain(data *d)
{
    return kiln_assign(d->out, kiln_add(kiln_mul(kiln_sigmoid(kiln_t(d->A)), kiln_t(d->B)),
                                        kiln_mul(kiln_sqr(kiln_sub(kiln_t(d->A), kiln_t(d->B))), kiln_scalar(0.5))));
}
static kiln_status variance(data *d)
{
    return kiln_assign(d->rowout, kiln_var(kiln_t(d->A), 1)); /* two passes or one: KILN_VAR_PASSES */
}
static kiln_status colvar(data *d)
{
    return kiln_assign(d->bias, kiln_reduce(KILN_REDUCE_VAR, kiln_t(d->A), 1, (const int[]){0}, 0));
}
static kiln_status colsum(data *d)
{
    return kiln_assign(d->bias, kiln_reduce(KILN_REDUCE_SUM, kiln_t(d->A), 1, (const int[]){0}, 0));
}

/* the reductions of everything: one long row (split across blocks, codegen.c) */
static kiln_status total(data *d) { return kiln_assign(d->one, kiln_reduce(KILN_REDUCE_SUM, kiln_t(d->A), 0, NULL, 0)); }
static kiln_status minus_max(data *d)
{
    return kiln_assign(d->out, kiln_sub(kiln_t(d->A), kiln_reduce(KILN_REDUCE_MAX, kiln_t(d->A), 0, NULL, 1)));
}

/* softmax along rows: a row max and a row sum of exps broadcast back (ROW mode, two reductions) */
static kiln_status softmax_rows(data *d)
{
    kiln_expr *x = kiln_t(d->A);
    kiln_expr *ex = kiln_exp(kiln_sub(kiln_expr_retain(x), kiln_max(kiln_expr_retain(x), 1)));
    kiln_expr_release(x);
    return kiln_assign(d->out, kiln_div(kiln_expr_retain(ex), kiln_sum(ex, 1)));
}

/* element-wise activations through the math library's functions (erf, log1p, expm1) */
static kiln_status gelu(data *d)
{
    kiln_expr *x = kiln_t(d->A);
    return kiln_assign(d->out, kiln_mul(kiln_mul(kiln_expr_retain(x), kiln_scalar(0.5)),
                                        kiln_add(kiln_scalar(1), kiln_erf(kiln_mul(x, kiln_scalar(0.7071067811865476))))));
}
static kiln_status softplus(data *d)
{
    kiln_expr *x = kiln_t(d->A);
    return kiln_assign(d->out, kiln_add(kiln_relu(kiln_expr_retain(x)), kiln_log1p(kiln_exp(kiln_neg(kiln_abs(x))))));
}
static kiln_status rowprod(data *d)
{
    return kiln_assign(d->rowout, kiln_reduce(KILN_REDUCE_PROD, kiln_t(d->A), 1, (const int[]){1}, 1));
}

typedef struct bcase {
    const char *name;
    kiln_status (*fn)(data *);
    int nin;     /* full-size inputs read */
    int out;     /* 1: full-size output, 0: one value per row, 2: one per column, 3: one value */
} bcase;

static const bcase cases[] = {
    {"relu(A*B+bias)", relu_ab, 2, 1},
    {"sigmoid(A)*B+sqr(A-B)/2", chain, 2, 1},
    {"batchnorm A in place", bn, 1, 1},
    {"batchnorm(A,0) in place", bn_columns, 1, 1},
    {"batchnorm(A,0) to out", bn_columns_out, 1, 1},
    {"batchnorm(A+B,0) to out", bn_columns_sum, 2, 1},
    {"var(A,1)", variance, 1, 0},
    {"var(A,0)", colvar, 1, 2},
    {"sum(A,0)", colsum, 1, 2},
    {"sum(A)", total, 1, 3},
    {"A-max(A)", minus_max, 1, 1},
    {"softmax(A,1)", softmax_rows, 1, 1},
    {"gelu(A)", gelu, 1, 1},
    {"softplus(A)", softplus, 1, 1},
    {"prod(A,1)", rowprod, 1, 0},
};

/* The bytes case bc must move on an N x C shape: inputs read once, the output written once. */
static double case_bytes(const bcase *bc, int64_t N, int64_t C, size_t es)
{
    double bytes = (double)bc->nin * (double)(N * C) * (double)es;
    bytes += bc->out == 1   ? (double)(N * C) * (double)es
             : bc->out == 0 ? (double)N * es
             : bc->out == 2 ? (double)C * es
                            : 4.0;
    if (bc->fn == relu_ab) bytes += (double)C * es; /* the bias */
    return bytes;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double time_case(const bcase *c, data *d, int reps)
{
    for (int i = 0; i < 3; i++) TRY(c->fn(d));
    TRY(kiln_ctx_synchronize(ctx));
    double t[7];
    for (int b = 0; b < 7; b++) {
        TRY(kiln__cuda_timer_start(ctx));
        for (int i = 0; i < reps; i++) TRY(c->fn(d));
        TRY(kiln__cuda_timer_stop(ctx, &t[b]));
        t[b] /= reps;
    }
    qsort(t, 7, sizeof t[0], cmpd);
    return t[3];
}

static void fill(kiln_tensor *t, double lo, double hi)
{
    TRY(kiln_assign(t, kiln_add(kiln_mul(kiln_rand(), kiln_scalar(hi - lo)), kiln_scalar(lo))));
}

static data data_make(kiln_dtype dt, const int64_t *size)
{
    data d = {0};
    int64_t rows[2] = {size[0], 1}, cols[1] = {size[1]};
    TRY(kiln_tensor_empty(ctx, dt, 2, size, &d.A));
    TRY(kiln_tensor_empty(ctx, dt, 2, size, &d.B));
    TRY(kiln_tensor_empty(ctx, dt, 2, size, &d.out));
    TRY(kiln_tensor_empty(ctx, dt, 1, cols, &d.bias));
    TRY(kiln_tensor_empty(ctx, dt, 2, rows, &d.rowout));
    TRY(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 0, NULL, &d.one));
    fill(d.A, -2, 3);
    fill(d.B, -1, 1);
    fill(d.bias, -1, 1);
    return d;
}

static void data_free(data *d)
{
    kiln_tensor_release(d->A);
    kiln_tensor_release(d->B);
    kiln_tensor_release(d->out);
    kiln_tensor_release(d->bias);
    kiln_tensor_release(d->rowout);
    kiln_tensor_release(d->one);
    TRY(kiln_mem_release_cached(ctx));
}

/* 1 when name is one of the comma-separated names of list (commas inside parentheses
 * belong to the names); every name when list is NULL */
static int named(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *e = p;
        int depth = 0;
        while (*e && !(*e == ',' && depth == 0)) {
            depth += (*e == '(') - (*e == ')');
            e++;
        }
        if ((size_t)(e - p) == n && strncmp(p, name, n) == 0) return 1;
        p = *e ? e + 1 : e;
    }
    return 0;
}

#define MAX_SIZES 32

/* One timed case: its shape, dtype, data and the bytes it must move, the copy of those
 * bytes timed alongside, and the printed row's first columns. */
typedef struct bench_row {
    const bcase *bc;
    data *d;
    int64_t N, C;
    kiln_dtype dt;
    int reps;
    double bytes, copy_ms;
} bench_row;

/* Calls fn for each named case on each size (the first two with quick) in f32 and f16, or in
 * the one dtype --dtype names (bf16 included), with the row's first columns printed (the case,
 * dtype and shape) and its copy timed. */
static kiln_dtype only_dtype = KILN_DTYPE_AUTO; /* --dtype: AUTO = f32 and f16 */

static void for_each_case(int quick, const char *only, int64_t (*sizes)[2], int nsizes,
                          void (*fn)(const bench_row *, void *), void *arg)
{
    kiln_dtype dts[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16};
    for (int s = 0; s < nsizes; s++) {
        if (quick && s > 1) break;
        for (int di = 0; di < 3; di++) {
            if (only_dtype == KILN_DTYPE_AUTO ? dts[di] == KILN_DTYPE_BF16 : dts[di] != only_dtype) continue;
            bench_row r = {.dt = dts[di], .N = sizes[s][0], .C = sizes[s][1]};
            data d = data_make(r.dt, sizes[s]);
            r.d = &d;
            r.reps = r.N * r.C >= (1 << 22) ? 10 : 100;
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                r.bc = &cases[c];
                if (!named(only, r.bc->name)) continue;
                r.bytes = case_bytes(r.bc, r.N, r.C, kiln_dtype_size(r.dt));
                TRY(kiln__cuda_time_copy(ctx, (size_t)(r.bytes / 2), 21, &r.copy_ms));
                char shape[32];
                snprintf(shape, sizeof shape, "%lldx%lld", (long long)r.N, (long long)r.C);
                printf("%-26s %-5s %-13s", r.bc->name, kiln_dtype_name(r.dt), shape);
                fn(&r, arg);
                fflush(stdout);
            }
            data_free(&d);
        }
    }
}

static void table_row(const bench_row *r, void *arg)
{
    (void)arg;
    double ms = time_case(r->bc, r->d, r->reps);
    printf(" %9.4f %9.1f %9.1f %9.2f\n", ms, r->bytes / ms * 1e-6, r->bytes / r->copy_ms * 1e-6, r->copy_ms / ms);
}

static void run_table(int quick, const char *only, int64_t (*sizes)[2], int nsizes)
{
    printf("%-26s %-5s %-13s %9s %9s %9s %9s\n", "case", "dtype", "shape", "ms", "GB/s", "copyGB/s", "copy/kiln");
    for_each_case(quick, only, sizes, nsizes, table_row, NULL);
}

/* --ab VAR=V1,V2,...: each case and shape timed with VAR at each value in turn, three
 * rounds in this one process (the median of the rounds each way), so that every value sees
 * the same machine state; the ratios are the first value's time over each other's, and the
 * copy of the case's bytes is timed alongside (copy/last: the last value's fraction of copy
 * bandwidth). And relu(A*B+bias) on 256x256 f32, an element-wise kernel, before the first
 * case and after the last, to show whether the cases (cooperative launches under
 * KILN_REDUCE_SPLIT) leave later launches slower. */
#define AB_MAX 4

typedef struct ab_arg {
    const char *var;
    const char *const *values;
    int nv;
} ab_arg;

static void ab_row(const bench_row *r, void *arg)
{
    const ab_arg *ab = arg;
    double t[AB_MAX][3];
    for (int k = 0; k < 3; k++)
        for (int v = 0; v < ab->nv; v++) {
            setenv(ab->var, ab->values[v], 1);
            t[v][k] = time_case(r->bc, r->d, r->reps);
        }
    unsetenv(ab->var);
    for (int v = 0; v < ab->nv; v++) qsort(t[v], 3, sizeof t[v][0], cmpd);
    for (int v = 0; v < ab->nv; v++) printf(" %9.4f", t[v][1]);
    for (int v = 1; v < ab->nv; v++) printf(" %9.2f", t[0][1] / t[v][1]);
    printf(" %9.2f\n", r->copy_ms / t[ab->nv - 1][1]);
}

static void run_env_ab(const char *var, const char *const *values, int nv, const char *only, int64_t (*sizes)[2],
                       int nsizes)
{
    int64_t small[2] = {256, 256};
    data e = data_make(KILN_DTYPE_F32, small);
    double ew_before = time_case(&cases[0], &e, 100);
    printf("%s A/B\n%-26s %-5s %-13s", var, "case", "dtype", "shape");
    for (int v = 0; v < nv; v++) printf(" %9.9s", values[v]);
    for (int v = 1; v < nv; v++) printf(" %4.4s/%-4.4s", values[0], values[v]);
    printf(" %9s\n", "copy/last");
    ab_arg ab = {var, values, nv};
    for_each_case(0, only, sizes, nsizes, ab_row, &ab);
    double ew_after = time_case(&cases[0], &e, 100);
    printf("\nrelu(A*B+bias) f32 256x256: %.4f ms before the cases, %.4f ms after them\n", ew_before, ew_after);
    data_free(&e);
}

/* One batch-norm on a (64, 1000) f32 tensor; returns the lookup time of its kernel. */
static double probe_once(kiln_cuda_stats *st)
{
    int64_t shape[2] = {64, 1000};
    data d = {0};
    TRY(kiln_tensor_ones(ctx, KILN_DTYPE_F32, 2, shape, &d.A));
    TRY(bn(&d));
    TRY(kiln_ctx_synchronize(ctx));
    TRY(kiln__cuda_cache_stats(ctx, st));
    kiln_tensor_release(d.A);
    return st->last_get_ms;
}

static void run_latency(const char *self)
{
    char dir[] = "/tmp/kiln-bench-cache-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return;
    }
    setenv("KILN_CACHE_DIR", dir, 1);
    kiln_ctx *saved = ctx;
    kiln_ctx_args a = {.device = KILN_DEVICE_CUDA};
    TRY(kiln_ctx_create(&ctx, &a));
    kiln_cuda_stats st;
    double first = probe_once(&st);
    double nvrtc = st.last_compile_ms;
    double mem = probe_once(&st);
    kiln_ctx_destroy(ctx);
    ctx = saved;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "KILN_CACHE_DIR='%s' '%s' --disk-probe", dir, self);
    FILE *p = popen(cmd, "r");
    double disk = -1;
    long hits = -1, compiles = -1;
    if (p) {
        if (fscanf(p, "%lf %ld %ld", &disk, &hits, &compiles) != 3) disk = -1;
        pclose(p);
    }
    printf("\ncompile latency, batch-norm kernel (one kernel):\n");
    printf("  first compile: %.2f ms lookup (NVRTC %.2f ms)\n", first, nvrtc);
    printf("  memory hit:    %.4f ms\n", mem);
    printf("  disk hit (fresh process): %.3f ms (disk hits %ld, compiles %ld)\n", disk, hits, compiles);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    int quick = 0, probe = 0, nab = 0;
    const char *ab_var = NULL, *ab_values[AB_MAX];
    char ab_buf[256];
    const char *only = NULL;
    int64_t sizes[MAX_SIZES][2] = {{256, 256}, {8192, 8192}, {65536, 1024}, {1024, 65536}};
    int nsizes = 4, chosen = 0; /* chosen: --only or --sizes given */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--disk-probe") == 0) {
            probe = 1;
        } else if (strcmp(argv[i], "--split-ab") == 0) {
            static const char *const split_values[] = {"0", "1", "force"};
            ab_var = "KILN_REDUCE_SPLIT";
            for (nab = 0; nab < 3; nab++) ab_values[nab] = split_values[nab];
            chosen = 1;
        } else if (strcmp(argv[i], "--ab") == 0 && i + 1 < argc) {
            snprintf(ab_buf, sizeof ab_buf, "%s", argv[++i]);
            char *eq = strchr(ab_buf, '=');
            nab = 0;
            int extra = 0; /* values past AB_MAX: an error, not dropped */
            if (eq) {
                *eq = '\0';
                ab_var = ab_buf;
                for (char *v = strtok(eq + 1, ","); v; v = strtok(NULL, ","))
                    if (nab < AB_MAX)
                        ab_values[nab++] = v;
                    else
                        extra++;
            }
            if (!eq || !ab_buf[0] || nab < 2 || extra) {
                fprintf(stderr, "kiln-gpu-bench: --ab wants VAR=V1,V2[,...] (2 to %d values), got '%s'\n", AB_MAX, argv[i]);
                return 2;
            }
            chosen = 1;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            only = argv[++i];
            chosen = 1;
        } else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc) {
            i++;
            if (strcmp(argv[i], "f32") == 0)
                only_dtype = KILN_DTYPE_F32;
            else if (strcmp(argv[i], "f16") == 0)
                only_dtype = KILN_DTYPE_F16;
            else if (strcmp(argv[i], "bf16") == 0)
                only_dtype = KILN_DTYPE_BF16;
            else {
                fprintf(stderr, "kiln-gpu-bench: --dtype wants f32, f16 or bf16, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            const char *p = argv[++i];
            nsizes = 0;
            chosen = 1;
            while (*p) {
                long long r, c;
                int used = 0;
                if (nsizes == MAX_SIZES || sscanf(p, "%lldx%lld%n", &r, &c, &used) != 2 || r < 1 || c < 1) {
                    fprintf(stderr, "kiln-gpu-bench: --sizes wants RxC[,RxC...] (at most %d), at '%s'\n", MAX_SIZES, p);
                    return 2;
                }
                sizes[nsizes][0] = r, sizes[nsizes][1] = c;
                nsizes++;
                p += used;
                if (*p == ',') p++;
            }
        } else {
            fprintf(stderr, "kiln-gpu-bench: unknown argument '%s' (--quick, --only NAMES, --sizes RxC,..., --dtype f32|f16|bf16, --split-ab, --ab VAR=V1,V2)\n", argv[i]);
            return 2;
        }
    }
    kiln_ctx_args a = {.device = KILN_DEVICE_CUDA, .seed = 7};
    if (!kiln__cuda_timer_start || kiln_ctx_create(&ctx, &a) != KILN_OK) {
        fprintf(stderr, "kiln-gpu-bench: no CUDA backend or device (%s)\n", kiln_last_error(NULL));
        return 77;
    }
    if (probe) {
        kiln_cuda_stats st;
        double ms = probe_once(&st);
        printf("%f %ld %ld\n", ms, (long)st.disk_hits, (long)st.compiles);
        kiln_ctx_destroy(ctx);
        return 0;
    }
    printf("kiln-gpu-bench: %s\n", kiln_ctx_device_description(ctx));
    if (!chosen) { /* the full table: with the compile latencies */
        run_latency(argv[0]);
        printf("\n");
    }
    if (nab)
        run_env_ab(ab_var, ab_values, nab, only, sizes, nsizes);
    else
        run_table(quick, only, sizes, nsizes);
    kiln_ctx_destroy(ctx);
    return 0;
}
