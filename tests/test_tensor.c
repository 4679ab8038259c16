/*
 * tests/test_tensor.c — tensors and views: constructors, dtype conversion through host
 * transfers, slicing (steps, negative steps, indices), permute/transpose, reshape (view or
 * LAYOUT error), broadcast_to, contiguous copies, names, tensors over foreign memory
 * (kiln_tensor_wrap: host buffers on a CPU context, kiln's own memory on the default
 * backend), and every bad-argument path.
 */
#include "check.h"

static kiln_ctx *ctx;
static kiln_ctx *cpu; /* a CPU context: host buffers are wrapped there whatever KILN_DEVICE says */
static uint64_t seed;

/* Reads t as f64 and checks element i (row-major in t's shape) == ref(i). */
static void check_values(const kiln_tensor *t, const double *ref, int64_t n, double tol)
{
    CHECK_INT(kiln_tensor_numel(t), n);
    double *got = malloc((size_t)(n ? n : 1) * sizeof *got);
    for (int64_t i = 0; i < n; i++) got[i] = NAN;
    CHECK_OK(ctx, kiln_tensor_read(t, got, KILN_DTYPE_F64));
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++)
        if (!(fabs(got[i] - ref[i]) <= tol * (fabs(ref[i]) > 1 ? fabs(ref[i]) : 1))) {
            fprintf(stderr, "  element %lld: got %.9g want %.9g\n", (long long)i, got[i], ref[i]);
            bad++;
        }
    CHECK(bad == 0);
    free(got);
}

/* A (4, 5, 6) tensor holding 0..119 as f64, plus its host copy. */
static kiln_tensor *make_iota(kiln_dtype dt, double *host)
{
    int64_t shape[3] = {4, 5, 6};
    for (int i = 0; i < 120; i++) host[i] = i;
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, dt, 3, shape, host, KILN_DTYPE_F64, &t));
    return t;
}

static void test_constructors(void)
{
    int64_t shape[2] = {3, 7};
    kiln_tensor *t = NULL;
    double ref[21];
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 2, shape, 2.5, &t));
    for (int i = 0; i < 21; i++) ref[i] = 2.5;
    check_values(t, ref, 21, 0);
    CHECK_INT(kiln_tensor_ndim(t), 2);
    CHECK_INT(kiln_tensor_dim(t, -1), 7);
    CHECK_INT(kiln_tensor_stride(t, 0), 7);
    CHECK(kiln_tensor_is_contiguous(t));
    kiln_tensor_release(t);

    CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_BF16, 2, shape, &t));
    for (int i = 0; i < 21; i++) ref[i] = 0;
    check_values(t, ref, 21, 0);
    kiln_tensor_release(t);
    CHECK_OK(ctx, kiln_tensor_ones(ctx, KILN_DTYPE_I8, 2, shape, &t));
    for (int i = 0; i < 21; i++) ref[i] = 1;
    check_values(t, ref, 21, 0);
    kiln_tensor_release(t);

    CHECK_OK(ctx, kiln_tensor_arange(ctx, KILN_DTYPE_I32, 3, -8, -2, &t));
    double ar[6] = {3, 1, -1, -3, -5, -7};
    check_values(t, ar, 6, 0);
    kiln_tensor_release(t);
    CHECK_OK(ctx, kiln_tensor_arange(ctx, KILN_DTYPE_F64, 0, 1, 0.25, &t));
    double ar2[4] = {0, 0.25, 0.5, 0.75};
    check_values(t, ar2, 4, 0);
    kiln_tensor_release(t);

    /* rank 0 and empty tensors */
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F64, 0, NULL, -3.25, &t));
    double r0 = -3.25;
    check_values(t, &r0, 1, 0);
    kiln_tensor_release(t);
    int64_t empty[3] = {2, 0, 5};
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 3, empty, 1.0, &t));
    CHECK_INT(kiln_tensor_numel(t), 0);
    CHECK(kiln_tensor_data(t) == NULL);
    kiln_tensor_release(t);
}

static void test_dtype_roundtrip(void)
{
    /* Every dtype pair through from_host / read, on values each dtype holds exactly. */
    const kiln_dtype all[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64,
                              KILN_DTYPE_I8,  KILN_DTYPE_U8,  KILN_DTYPE_I32};
    double vals[8] = {0, 1, 2, 3, 17, 100, 64, 5};
    int64_t n = 8;
    for (int a = 0; a < 7; a++)
        for (int b = 0; b < 7; b++) {
            kiln_tensor *t = NULL;
            /* a host buffer of dtype all[b], made by kiln's own read conversion */
            char host[64];
            kiln_dtype hd = all[b];
            kiln_tensor *src = NULL;
            CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F64, 1, &n, vals, KILN_DTYPE_F64, &src));
            CHECK_OK(ctx, kiln_tensor_read(src, host, hd));
            kiln_tensor_release(src);
            CHECK_OK(ctx, kiln_tensor_from_host(ctx, all[a], 1, &n, host, hd, &t));
            check_values(t, vals, 8, 0);
            kiln_tensor_release(t);
        }
    /* float -> int truncates toward zero and saturates, NaN -> 0 */
    double odd[6] = {-1.7, 2.9, 300, -300, NAN, 1e20};
    int64_t n6 = 6;
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_I8, 1, &n6, odd, KILN_DTYPE_F64, &t));
    double want_i8[6] = {-1, 2, 127, -128, 0, 127};
    check_values(t, want_i8, 6, 0);
    kiln_tensor_release(t);
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_U8, 1, &n6, odd, KILN_DTYPE_F64, &t));
    double want_u8[6] = {0, 2, 255, 0, 0, 255};
    check_values(t, want_u8, 6, 0);
    kiln_tensor_release(t);
    /* f64 -> f16 rounds once, to nearest */
    double fin[3] = {1.0 + 1.0 / 2048 + 1e-9, 65504, 1e6};
    int64_t n3 = 3;
    CHECK_OK(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F16, 1, &n3, fin, KILN_DTYPE_F64, &t));
    double want16[3] = {1.0 + 1.0 / 1024, 65504, INFINITY};
    double got[3];
    CHECK_OK(ctx, kiln_tensor_read(t, got, KILN_DTYPE_F64));
    for (int i = 0; i < 3; i++) CHECK(got[i] == want16[i]);
    kiln_tensor_release(t);
}

static void test_slices(void)
{
    double host[120];
    kiln_tensor *t = make_iota(KILN_DTYPE_F32, host);
    kiln_tensor *v = NULL;
    /* t[1:4:2, ::-1, -2] */
    kiln_slice s[3] = {KILN_SLICE_STEP(1, 4, 2), KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1), KILN_INDEX(-2)};
    CHECK_OK(ctx, kiln_tensor_slice(t, 3, s, &v));
    CHECK_INT(kiln_tensor_ndim(v), 2);
    CHECK_INT(kiln_tensor_dim(v, 0), 2);
    CHECK_INT(kiln_tensor_dim(v, 1), 5);
    double ref[10];
    int k = 0;
    for (int i = 1; i < 4; i += 2)
        for (int j = 4; j >= 0; j--) ref[k++] = i * 30 + j * 6 + 4;
    check_values(v, ref, 10, 0);
    CHECK(!kiln_tensor_is_contiguous(v));

    /* a view of a view, with a negative step and clamped bounds: v[::-1, 10:-100:-2] */
    kiln_tensor *w = NULL;
    kiln_slice s2[2] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1), KILN_SLICE_STEP(10, -100, -2)};
    CHECK_OK(ctx, kiln_tensor_slice(v, 2, s2, &w));
    CHECK_INT(kiln_tensor_dim(w, 1), 3);
    k = 0;
    double ref2[6];
    for (int i = 1; i >= 0; i--)
        for (int j = 4; j >= 0; j -= 2) ref2[k++] = ref[i * 5 + j];
    check_values(w, ref2, 6, 0);

    /* writes through a view show in the base */
    double twos[6] = {-1, -2, -3, -4, -5, -6};
    CHECK_OK(ctx, kiln_tensor_write(w, twos, KILN_DTYPE_F64));
    double all[120];
    CHECK_OK(ctx, kiln_tensor_read(t, all, KILN_DTYPE_F64));
    /* w[0][0] is v[1][4] is t[3, 0, 4] */
    CHECK(all[3 * 30 + 0 * 6 + 4] == -1);
    CHECK(all[3 * 30 + 4 * 6 + 4] == -3);
    CHECK(all[1 * 30 + 0 * 6 + 4] == -4);
    kiln_tensor_release(w);
    kiln_tensor_release(v);

    /* empty slices */
    kiln_slice s3[1] = {KILN_SLICE(3, 1)};
    CHECK_OK(ctx, kiln_tensor_slice(t, 1, s3, &v));
    CHECK_INT(kiln_tensor_numel(v), 0);
    kiln_tensor_release(v);

    /* steps as large as int64 holds (the length and the stride once overflowed): each keeps
     * the one element where it starts; and a step of 3 over 4 rows keeps rows 0 and 3 */
    const struct {
        kiln_slice s;
        int64_t len, first; /* rows kept, the first row */
    } big[] = {
        {KILN_SLICE_STEP(1, KILN_NONE, INT64_MAX), 1, 1},
        {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, INT64_MAX), 1, 0},
        {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -INT64_MAX), 1, 3},
        {KILN_SLICE_STEP(2, KILN_NONE, INT64_MIN + 1), 1, 2},
        {KILN_SLICE_STEP(-1, -100, INT64_MIN + 1), 1, 3},
        {KILN_SLICE_STEP(INT64_MIN + 1, INT64_MAX, INT64_MAX), 1, 0},
        {KILN_SLICE_STEP(INT64_MAX, INT64_MIN + 1, -INT64_MAX), 1, 3},
        {KILN_SLICE_STEP(0, 4, 3), 2, 0},
    };
    double now[120]; /* t as the writes above left it */
    CHECK_OK(ctx, kiln_tensor_read(t, now, KILN_DTYPE_F64));
    for (size_t b = 0; b < sizeof big / sizeof big[0]; b++) {
        v = NULL;
        CHECK_OK(ctx, kiln_tensor_slice(t, 1, &big[b].s, &v));
        if (!v) continue;
        CHECK_INT(kiln_tensor_dim(v, 0), big[b].len);
        double want[60];
        for (int64_t r = 0; r < big[b].len; r++)
            for (int j = 0; j < 30; j++) want[r * 30 + j] = now[(big[b].first + 3 * r) * 30 + j];
        check_values(v, want, big[b].len * 30, 0);
        kiln_tensor_release(v);
    }

    /* errors */
    kiln_slice bad[1] = {KILN_INDEX(4)};
    v = NULL;
    CHECK_FAILS(ctx, kiln_tensor_slice(t, 1, bad, &v), KILN_ERR_BOUNDS, "index 4");
    CHECK(v == NULL);
    kiln_slice bad2[2] = {KILN_SLICE_ALL, KILN_SLICE_STEP(0, 2, 0)};
    CHECK_FAILS(ctx, kiln_tensor_slice(t, 2, bad2, &v), KILN_ERR_ARG, "s[1].step");
    CHECK_FAILS(ctx, kiln_tensor_slice(t, 4, bad2, &v), KILN_ERR_ARG, "'n'");
    CHECK_FAILS(NULL, kiln_tensor_slice(NULL, 1, bad2, &v), KILN_ERR_NULL, "'t'");
    kiln_tensor_release(t);
}

static void test_permute_reshape(void)
{
    double host[120];
    kiln_tensor *t = make_iota(KILN_DTYPE_F64, host);
    kiln_tensor *p = NULL, *r = NULL;
    int axes[3] = {2, 0, -2};
    CHECK_OK(ctx, kiln_tensor_permute(t, axes, &p));
    double ref[120];
    int k = 0;
    for (int c = 0; c < 6; c++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 5; b++) ref[k++] = a * 30 + b * 6 + c;
    check_values(p, ref, 120, 0);

    /* reshape of a permuted tensor: merging (4, 5) works (contiguous with each other), merging (6, 4) does not */
    int64_t ok_shape[2] = {6, 20};
    CHECK_OK(ctx, kiln_tensor_reshape(p, 2, ok_shape, &r));
    check_values(r, ref, 120, 0);
    kiln_tensor_release(r);
    int64_t bad_shape[2] = {24, 5};
    r = NULL;
    CHECK_FAILS(ctx, kiln_tensor_reshape(p, 2, bad_shape, &r), KILN_ERR_LAYOUT, "contiguous");
    CHECK(r == NULL);
    /* after a contiguous copy it works */
    kiln_tensor *c = NULL;
    CHECK_OK(ctx, kiln_tensor_contiguous(p, &c));
    CHECK(kiln_tensor_is_contiguous(c));
    CHECK_OK(ctx, kiln_tensor_reshape(c, 2, bad_shape, &r));
    check_values(r, ref, 120, 0);
    kiln_tensor_release(r);
    kiln_tensor_release(c);

    /* -1 inference, size-1 axes, rank 0 */
    int64_t inf_shape[4] = {2, 1, -1, 3};
    CHECK_OK(ctx, kiln_tensor_reshape(t, 4, inf_shape, &r));
    CHECK_INT(kiln_tensor_dim(r, 2), 20);
    check_values(r, host, 120, 0);
    kiln_tensor_release(r);
    int64_t two_inf[2] = {-1, -1};
    CHECK_FAILS(ctx, kiln_tensor_reshape(t, 2, two_inf, &r), KILN_ERR_ARG, "more than one -1");
    int64_t wrong[2] = {7, 17};
    CHECK_FAILS(ctx, kiln_tensor_reshape(t, 2, wrong, &r), KILN_ERR_SHAPE, "'shape'");

    /* transpose = swap two axes */
    kiln_tensor *tt = NULL;
    CHECK_OK(ctx, kiln_tensor_transpose(t, 0, -1, &tt));
    CHECK_INT(kiln_tensor_dim(tt, 0), 6);
    CHECK_INT(kiln_tensor_stride(tt, 2), 30);
    CHECK_FAILS(ctx, kiln_tensor_transpose(t, 0, 3, &r), KILN_ERR_AXIS, "'axis1'");
    int dup[3] = {0, 0, 1};
    CHECK_FAILS(ctx, kiln_tensor_permute(t, dup, &r), KILN_ERR_AXIS, "repeats");
    kiln_tensor_release(tt);

    /* a reversed (negative-stride) view reshaped where possible */
    kiln_slice rev[1] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1)};
    kiln_tensor *rv = NULL;
    int64_t n = 120, shp[1] = {120};
    kiln_tensor *flat = NULL;
    CHECK_OK(ctx, kiln_tensor_reshape(t, 1, shp, &flat));
    CHECK_OK(ctx, kiln_tensor_slice(flat, 1, rev, &rv));
    int64_t sq[2] = {12, 10};
    CHECK_OK(ctx, kiln_tensor_reshape(rv, 2, sq, &r));
    double rref[120];
    for (int i = 0; i < 120; i++) rref[i] = 119 - i;
    check_values(r, rref, n, 0);
    kiln_tensor_release(r);
    kiln_tensor_release(rv);
    kiln_tensor_release(flat);
    kiln_tensor_release(p);
    kiln_tensor_release(t);
}

static void test_broadcast(void)
{
    double host[120];
    kiln_tensor *t = make_iota(KILN_DTYPE_F32, host);
    kiln_slice s[2] = {KILN_INDEX(1), KILN_SLICE(2, 3)}; /* (1, 6) */
    kiln_tensor *row = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_tensor_slice(t, 2, s, &row));
    int64_t shape[3] = {2, 3, 6};
    CHECK_OK(ctx, kiln_tensor_broadcast_to(row, 3, shape, &b));
    CHECK_INT(kiln_tensor_stride(b, 0), 0);
    CHECK_INT(kiln_tensor_stride(b, 1), 0);
    double ref[36];
    for (int i = 0; i < 36; i++) ref[i] = 30 + 12 + i % 6;
    check_values(b, ref, 36, 0);
    /* a broadcast view cannot be written */
    CHECK_FAILS(ctx, kiln_tensor_write(b, ref, KILN_DTYPE_F64), KILN_ERR_ALIAS, "'t'");
    CHECK_FAILS(ctx, kiln_assign(b, kiln_scalar(1)), KILN_ERR_ALIAS, "dst");
    /* values unchanged */
    check_values(b, ref, 36, 0);
    int64_t bad[2] = {3, 5};
    kiln_tensor *x = NULL;
    CHECK_FAILS(ctx, kiln_tensor_broadcast_to(row, 2, bad, &x), KILN_ERR_SHAPE, "'shape'");
    int64_t few[1] = {6};
    CHECK_FAILS(ctx, kiln_tensor_broadcast_to(row, 1, few, &x), KILN_ERR_SHAPE, "fewer axes");
    CHECK(x == NULL);
    kiln_tensor_release(b);
    kiln_tensor_release(row);
    kiln_tensor_release(t);
}

static void test_copy_names(void)
{
    double host[120];
    kiln_tensor *t = make_iota(KILN_DTYPE_F32, host);
    kiln_tensor *tt = NULL, *c = NULL;
    CHECK_OK(ctx, kiln_tensor_permute(t, NULL, &tt));
    CHECK_OK(ctx, kiln_tensor_copy(tt, KILN_DTYPE_F16, &c));
    CHECK_INT(kiln_tensor_dtype(c), KILN_DTYPE_F16);
    CHECK(kiln_tensor_is_contiguous(c));
    double ref[120];
    int k = 0;
    for (int c2 = 0; c2 < 6; c2++)
        for (int b = 0; b < 5; b++)
            for (int a = 0; a < 4; a++) ref[k++] = a * 30 + b * 6 + c2;
    check_values(c, ref, 120, 0);
    /* the copy is independent */
    double z[120] = {0};
    CHECK_OK(ctx, kiln_tensor_write(t, z, KILN_DTYPE_F64));
    check_values(c, ref, 120, 0);
    CHECK_OK(ctx, kiln_tensor_set_name(c, "weights"));
    CHECK(strcmp(kiln_tensor_name(c), "weights") == 0);
    CHECK_OK(ctx, kiln_tensor_set_name(c, NULL));
    CHECK(strcmp(kiln_tensor_name(c), "") == 0);
    kiln_tensor_release(c);
    kiln_tensor_release(tt);
    /* releasing the base before the view keeps storage alive */
    kiln_tensor *v = NULL;
    kiln_slice s[1] = {KILN_INDEX(2)};
    CHECK_OK(ctx, kiln_tensor_slice(t, 1, s, &v));
    kiln_tensor_release(t);
    double z30[30] = {0};
    check_values(v, z30, 30, 0);
    kiln_tensor_release(v);
}

static void test_bad_args(void)
{
    kiln_tensor *t = NULL;
    int64_t shape[2] = {3, -1};
    CHECK_FAILS(NULL, kiln_tensor_empty(NULL, KILN_DTYPE_F32, 2, shape, &t), KILN_ERR_NULL, "'ctx'");
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape, &t), KILN_ERR_ARG, "negative");
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, (kiln_dtype)99, 1, shape, &t), KILN_ERR_DTYPE, "'dtype'");
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 9, shape, &t), KILN_ERR_ARG, "ndim");
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, shape, NULL), KILN_ERR_NULL, "'out'");
    int64_t huge[3] = {1LL << 40, 1LL << 40, 1LL << 10};
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 3, huge, &t), KILN_ERR_OVERFLOW, "overflows");
    int64_t big[2] = {1LL << 31, 1LL << 31}; /* fits int64 elements, too many bytes for f64 */
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F64, 2, big, &t), KILN_ERR_OVERFLOW, "bytes");
    CHECK(t == NULL);
    CHECK_FAILS(ctx, kiln_tensor_arange(ctx, KILN_DTYPE_F32, 0, 5, 0, &t), KILN_ERR_ARG, "'step'");
    CHECK_FAILS(ctx, kiln_tensor_arange(ctx, KILN_DTYPE_F32, 0, INFINITY, 1, &t), KILN_ERR_ARG, "finite");
    int64_t two = 2;
    CHECK_FAILS(ctx, kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 1, &two, NULL, KILN_DTYPE_F32, &t), KILN_ERR_NULL, "'src'");
    CHECK_FAILS(NULL, kiln_tensor_read(NULL, NULL, KILN_DTYPE_F32), KILN_ERR_NULL, "'t'");
    CHECK_FAILS(NULL, kiln_tensor_set_name(NULL, "x"), KILN_ERR_NULL, "'t'");
    /* accessors are NULL-safe */
    CHECK_INT(kiln_tensor_ndim(NULL), 0);
    CHECK_INT(kiln_tensor_dim(NULL, 0), -1);
    CHECK(kiln_tensor_shape(NULL) == NULL);
    kiln_tensor_release(NULL);
}

/* ---- kiln_tensor_wrap ------------------------------------------------------------------- */

static const kiln_dtype all_dtypes[] = {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64,
                                        KILN_DTYPE_I8,  KILN_DTYPE_U8,  KILN_DTYPE_I32};

/* Counts release calls: the user pointer of every wrap below. */
typedef struct released {
    int calls;
} released;
static void on_release(void *user)
{
    ((released *)user)->calls++;
}

/* n random host values that hold exactly in dtype dt and are never 0, as f64 in *ref and as
 * dt's bytes in buf (kiln's own conversion, through a tensor of the CPU context). */
static void random_buffer(kiln_dtype dt, int64_t n, double *ref, void *buf)
{
    for (int64_t i = 0; i < n; i++) {
        double v = dt == KILN_DTYPE_U8 ? (double)(1 + check_rand_u64(&seed) % 200)
                   : dt == KILN_DTYPE_I8 || dt == KILN_DTYPE_I32
                       ? (double)(1 + check_rand_u64(&seed) % 100) * (check_rand_u64(&seed) & 1 ? -1 : 1)
                       : check_uniform(&seed, 0.25, 4.0) * (check_rand_u64(&seed) & 1 ? -1 : 1);
        ref[i] = v;
    }
    kiln_tensor *t = NULL;
    CHECK_OK(cpu, kiln_tensor_from_host(cpu, dt, 1, &n, ref, KILN_DTYPE_F64, &t));
    CHECK_OK(cpu, kiln_tensor_read(t, buf, dt));             /* the rounded values ... */
    CHECK_OK(cpu, kiln_tensor_read(t, ref, KILN_DTYPE_F64)); /* ... are the reference */
    kiln_tensor_release(t);
}

static void test_wrap_dtypes(void)
{
    enum { N = 4 * 6 };
    for (int k = 0; k < 7; k++) {
        kiln_dtype dt = all_dtypes[k];
        size_t es = kiln_dtype_size(dt);
        double ref[N], got[N];
        unsigned char *buf = malloc(N * es), *want = malloc(N * es), *before = malloc(N * es);
        random_buffer(dt, N, ref, buf);
        memcpy(before, buf, N * es);
        int64_t shape[2] = {4, 6};
        kiln_tensor *w = NULL;
        released r = {0};
        CHECK_OK(cpu, kiln_tensor_wrap(cpu, buf, dt, 2, shape, NULL, on_release, &r, &w));
        CHECK(kiln_tensor_data(w) == buf);
        CHECK(kiln_tensor_is_contiguous(w));
        CHECK_INT(kiln_tensor_dtype(w), dt);
        CHECK_INT(kiln_tensor_stride(w, 0), 6);
        check_values(w, ref, N, 0);
        /* a write through a view lands in the host buffer: rows 1..2 = 2*x + 1, the same
         * assignment on a native copy gives the bytes expected */
        kiln_tensor *native = NULL, *v = NULL, *nv = NULL;
        CHECK_OK(cpu, kiln_tensor_copy(w, KILN_DTYPE_AUTO, &native));
        kiln_slice rows[1] = {KILN_SLICE(1, 3)};
        CHECK_OK(cpu, kiln_tensor_slice(w, 1, rows, &v));
        CHECK_OK(cpu, kiln_tensor_slice(native, 1, rows, &nv));
        CHECK_OK(cpu, kiln_assign(v, kiln_add(kiln_mul(kiln_t(v), kiln_scalar(2)), kiln_scalar(1))));
        CHECK_OK(cpu, kiln_assign(nv, kiln_add(kiln_mul(kiln_t(nv), kiln_scalar(2)), kiln_scalar(1))));
        CHECK_OK(cpu, kiln_tensor_read(native, want, dt));
        CHECK(memcmp(buf, want, N * es) == 0);
        CHECK(memcmp(buf + 6 * es, before + 6 * es, 12 * es) != 0); /* rows 1..2 did change */
        CHECK_OK(cpu, kiln_tensor_read(w, got, KILN_DTYPE_F64));
        CHECK(got[0] == ref[0] && got[23] == ref[23]); /* rows 0 and 3 untouched */
        /* kiln_tensor_write through a transposed view */
        kiln_tensor *wt = NULL;
        CHECK_OK(cpu, kiln_tensor_transpose(w, 0, 1, &wt));
        double src[N];
        for (int i = 0; i < N; i++) src[i] = ref[(i % 4) * 6 + i / 4]; /* wt's row-major order of ref */
        CHECK_OK(cpu, kiln_tensor_write(wt, src, KILN_DTYPE_F64));
        check_values(w, ref, N, 0);
        kiln_tensor_release(wt);
        kiln_tensor_release(nv);
        kiln_tensor_release(v);
        kiln_tensor_release(native);
        CHECK_INT(r.calls, 0);
        kiln_tensor_release(w);
        CHECK_INT(r.calls, 1);
        free(buf);
        free(want);
        free(before);
    }
}

static void test_wrap_strided(void)
{
    enum { N = 4 * 6 };
    float h[N];
    double ref[N], want[N];
    random_buffer(KILN_DTYPE_F32, N, ref, h);
    kiln_tensor *w = NULL;
    /* transposed: (6, 4) with strides (1, 6) */
    int64_t tshape[2] = {6, 4}, tstr[2] = {1, 6};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, tshape, tstr, NULL, NULL, &w));
    CHECK(!kiln_tensor_is_contiguous(w));
    for (int i = 0; i < N; i++) want[i] = ref[(i % 4) * 6 + i / 4];
    check_values(w, want, N, 0);
    kiln_tensor_release(w);
    /* every other column: (4, 3) with strides (6, 2) */
    int64_t cshape[2] = {4, 3}, cstr[2] = {6, 2};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, cshape, cstr, NULL, NULL, &w));
    for (int i = 0; i < 12; i++) want[i] = ref[(i / 3) * 6 + (i % 3) * 2];
    check_values(w, want, 12, 0);
    kiln_tensor_release(w);
    /* negative strides: data points at the last element, (4, 6) with strides (-6, -1) */
    int64_t shape[2] = {4, 6}, rstr[2] = {-6, -1};
    released r = {0};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, &h[N - 1], KILN_DTYPE_F32, 2, shape, rstr, on_release, &r, &w));
    CHECK(kiln_tensor_data(w) == &h[N - 1]);
    for (int i = 0; i < N; i++) want[i] = ref[N - 1 - i];
    check_values(w, want, N, 0);
    CHECK_OK(cpu, kiln_assign(w, kiln_mul(kiln_t(w), kiln_scalar(-2))));
    int ok = 1;
    for (int i = 0; i < N; i++) ok &= h[i] == (float)(-2 * ref[i]);
    CHECK(ok);
    /* two wraps of the same memory overlap: a = reversed(a) needs (and gets) a temporary
     * (the buffer spans several CPU blocks, so reading while writing would show) */
    enum { BIG = 48 * 50 };
    float *hb = malloc(BIG * sizeof *hb);
    double *rb = malloc(BIG * sizeof *rb);
    random_buffer(KILN_DTYPE_F32, BIG, rb, hb);
    int64_t bigshape[2] = {48, 50}, bigrev[2] = {-50, -1};
    kiln_tensor *a = NULL, *ar = NULL;
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, hb, KILN_DTYPE_F32, 2, bigshape, NULL, NULL, NULL, &a));
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, &hb[BIG - 1], KILN_DTYPE_F32, 2, bigshape, bigrev, NULL, NULL, &ar));
    CHECK_OK(cpu, kiln_assign(a, kiln_t(ar)));
    ok = 1;
    for (int i = 0; i < BIG; i++) ok &= hb[i] == (float)rb[BIG - 1 - i];
    CHECK(ok);
    kiln_tensor_release(ar);
    kiln_tensor_release(a);
    free(hb);
    free(rb);
    /* a lazy expression keeps the storage alive after the tensor goes */
    kiln_expr *e = kiln_t(w);
    kiln_tensor_release(w);
    CHECK_INT(r.calls, 0);
    kiln_tensor *sum = NULL;
    CHECK_OK(cpu, kiln_eval(cpu, kiln_reduce(KILN_REDUCE_SUM, e, 0, NULL, 0), KILN_DTYPE_F64, &sum));
    CHECK_INT(r.calls, 1); /* kiln_eval consumed the last reference */
    double total = 0, expect = 0;
    CHECK_OK(cpu, kiln_tensor_read(sum, &total, KILN_DTYPE_F64));
    for (int i = 0; i < N; i++) expect += h[i];
    CHECK_NEAR(total, expect, 1e-5);
    kiln_tensor_release(sum);

    /* stride 0: reads broadcast, writes fail as for a broadcast view */
    int64_t bshape[2] = {3, 6}, bstr[2] = {0, 1};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, bshape, bstr, NULL, NULL, &w));
    for (int i = 0; i < 18; i++) want[i] = h[i % 6];
    check_values(w, want, 18, 0);
    CHECK_FAILS(cpu, kiln_assign(w, kiln_scalar(1)), KILN_ERR_ALIAS, "broadcast");
    CHECK_FAILS(cpu, kiln_tensor_write(w, want, KILN_DTYPE_F64), KILN_ERR_ALIAS, "'t'");
    kiln_tensor *row = NULL;
    kiln_slice first[1] = {KILN_INDEX(0)};
    CHECK_OK(cpu, kiln_tensor_slice(w, 1, first, &row)); /* one row of it does not alias */
    CHECK_OK(cpu, kiln_assign(row, kiln_add(kiln_t(row), kiln_scalar(1))));
    CHECK(h[0] == (float)want[0] + 1);
    kiln_tensor_release(row);
    kiln_tensor_release(w);

    /* overlapping strides: (3, 3) with strides (1, 1) reads h[i + j]; it and its views are
     * read-only */
    int64_t oshape[2] = {3, 3}, ostr[2] = {1, 1};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, oshape, ostr, NULL, NULL, &w));
    for (int i = 0; i < 9; i++) want[i] = h[i / 3 + i % 3];
    check_values(w, want, 9, 0);
    CHECK_FAILS(cpu, kiln_assign(w, kiln_scalar(1)), KILN_ERR_ALIAS, "wrapped memory");
    CHECK_FAILS(cpu, kiln_tensor_write(w, want, KILN_DTYPE_F64), KILN_ERR_ALIAS, "'t'");
    CHECK_OK(cpu, kiln_tensor_slice(w, 1, first, &row));
    CHECK_FAILS(cpu, kiln_assign(row, kiln_scalar(1)), KILN_ERR_ALIAS, "'dst'");
    kiln_tensor *sq = NULL;
    int64_t s33[2] = {3, 3};
    CHECK_OK(cpu, kiln_tensor_zeros(cpu, KILN_DTYPE_F32, 2, s33, &sq));
    CHECK_FAILS(cpu, kiln_dot(w, sq, sq, 1, 0, NULL), KILN_ERR_ALIAS, "'C'");
    kiln_tensor_release(sq);
    kiln_tensor_release(row);
    kiln_tensor_release(w);
    CHECK(h[1] == (float)want[1]); /* nothing was written */
    /* strides that interleave without overlap are writable: (2, 2) with strides (3, 2)
     * reaches h[0], h[2], h[3], h[5] */
    int64_t ishape[2] = {2, 2}, istr[2] = {3, 2};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, ishape, istr, NULL, NULL, &w));
    CHECK_OK(cpu, kiln_assign(w, kiln_scalar(7)));
    CHECK(h[0] == 7 && h[2] == 7 && h[3] == 7 && h[5] == 7);
    CHECK(h[1] != 7 && h[4] != 7 && h[6] != 7);
    kiln_tensor_release(w);

    /* rank 0 and empty wraps (an empty one may have a NULL pointer) */
    double one = 0;
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, &h[3], KILN_DTYPE_F32, 0, NULL, NULL, NULL, NULL, &w));
    CHECK_OK(cpu, kiln_tensor_read(w, &one, KILN_DTYPE_F64));
    CHECK(one == h[3]);
    kiln_tensor_release(w);
    int64_t eshape[2] = {0, 5};
    released re = {0};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, NULL, KILN_DTYPE_F32, 2, eshape, NULL, on_release, &re, &w));
    CHECK_INT(kiln_tensor_numel(w), 0);
    CHECK(kiln_tensor_data(w) == NULL);
    CHECK_OK(cpu, kiln_assign(w, kiln_scalar(1)));
    kiln_tensor_release(w);
    CHECK_INT(re.calls, 1);
}

static void test_wrap_dot(void)
{
    /* C = A @ B with all three wrapped (A transposed through its strides) */
    double a[6], b[6];
    float af[6], bf[6], c[4] = {9, 9, 9, 9};
    random_buffer(KILN_DTYPE_F32, 6, a, af);
    random_buffer(KILN_DTYPE_F32, 6, b, bf);
    int64_t ashape[2] = {2, 3}, astr[2] = {1, 2}; /* A[i][k] = af[k*2 + i] */
    int64_t bshape[2] = {3, 2}, cshape[2] = {2, 2};
    kiln_tensor *A = NULL, *B = NULL, *C = NULL, *C2 = NULL;
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, af, KILN_DTYPE_F32, 2, ashape, astr, NULL, NULL, &A));
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, bf, KILN_DTYPE_F32, 2, bshape, NULL, NULL, NULL, &B));
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, c, KILN_DTYPE_F32, 2, cshape, NULL, NULL, NULL, &C));
    CHECK_OK(cpu, kiln_dot(C, A, B, 1, 0, NULL));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            double s = 0;
            for (int k = 0; k < 3; k++) s += a[k * 2 + i] * b[k * 2 + j];
            CHECK_NEAR(c[i * 2 + j], s, 1e-5);
        }
    /* C wrapping A's memory again is an overlap kiln sees */
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, af, KILN_DTYPE_F32, 2, cshape, NULL, NULL, NULL, &C2));
    CHECK_FAILS(cpu, kiln_dot(C2, A, B, 1, 0, NULL), KILN_ERR_ALIAS, "overlaps 'A'");
    kiln_tensor_release(C2);
    kiln_tensor_release(C);
    kiln_tensor_release(B);
    kiln_tensor_release(A);
}

/* Wraps kiln's own memory of the default backend (a device pointer on CUDA): the same
 * storage seen through two handles, on whichever backend the tests run. */
static void test_wrap_backend_memory(void)
{
    enum { R = 40, C = 50, N = R * C }; /* several CPU blocks */
    kiln_tensor *t = NULL;
    CHECK_OK(ctx, kiln_tensor_arange(ctx, KILN_DTYPE_F32, 1, N + 1, 1, &t));
    int64_t shape[2] = {R, C};
    kiln_tensor *w = NULL;
    released r = {0};
    CHECK_OK(ctx, kiln_tensor_wrap(ctx, kiln_tensor_data(t), KILN_DTYPE_F32, 2, shape, NULL, on_release, &r, &w));
    double *want = malloc(N * sizeof *want);
    for (int i = 0; i < N; i++) want[i] = i + 1;
    check_values(w, want, N, 0);
    /* t = reversed(w) * 2 in place: t and w are two storages over one memory */
    kiln_slice rev[2] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1), KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1)};
    kiln_tensor *wr = NULL, *t2 = NULL;
    CHECK_OK(ctx, kiln_tensor_slice(w, 2, rev, &wr));
    CHECK_OK(ctx, kiln_tensor_reshape(t, 2, shape, &t2));
    CHECK_OK(ctx, kiln_assign(t2, kiln_mul(kiln_t(wr), kiln_scalar(2))));
    for (int i = 0; i < N; i++) want[i] = 2.0 * (N - i);
    check_values(t, want, N, 0);
    check_values(w, want, N, 0);
    kiln_tensor_release(t2);
    kiln_tensor_release(wr);
    kiln_tensor_release(w);
    CHECK_INT(r.calls, 1);
    kiln_tensor_release(t);
    free(want);
}

static void test_wrap_errors(void)
{
    float h[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int64_t shape[2] = {2, 4};
    kiln_tensor *w = NULL;
    released r = {0};
    CHECK_FAILS(NULL, kiln_tensor_wrap(NULL, h, KILN_DTYPE_F32, 2, shape, NULL, on_release, &r, &w), KILN_ERR_NULL,
                "'ctx'");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, shape, NULL, on_release, &r, NULL), KILN_ERR_NULL,
                "'out'");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, (kiln_dtype)99, 2, shape, NULL, on_release, &r, &w), KILN_ERR_DTYPE,
                "'dtype'");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_AUTO, 2, shape, NULL, on_release, &r, &w), KILN_ERR_DTYPE,
                "'dtype'");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 9, shape, NULL, on_release, &r, &w), KILN_ERR_ARG,
                "ndim");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, -1, shape, NULL, on_release, &r, &w), KILN_ERR_ARG,
                "ndim");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, NULL, NULL, on_release, &r, &w), KILN_ERR_NULL,
                "'shape'");
    int64_t neg[2] = {2, -4};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, neg, NULL, on_release, &r, &w), KILN_ERR_ARG,
                "negative");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, NULL, KILN_DTYPE_F32, 2, shape, NULL, on_release, &r, &w), KILN_ERR_NULL,
                "'data'");
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, (char *)h + 1, KILN_DTYPE_F32, 2, shape, NULL, on_release, &r, &w),
                KILN_ERR_ARG, "'data'");
    CHECK(strstr(kiln_last_error(cpu), "aligned") != NULL);
    int64_t huge[3] = {1LL << 40, 1LL << 40, 1LL << 10};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 3, huge, NULL, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'shape'");
    int64_t big[2] = {1LL << 31, 1LL << 31}; /* fits int64 elements, too many bytes for f64 */
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F64, 2, big, NULL, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'shape'");
    /* strides: one axis past int64, the sum past int64, the bytes past int64, INT64_MIN,
     * below address 0 */
    int64_t s3 = 3, s2[2] = {2, 2};
    int64_t st_axis[1] = {INT64_MAX / 2 + 1};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 1, &s3, st_axis, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'strides'");
    int64_t st_sum[2] = {INT64_MAX / 2 + 1, INT64_MAX / 2 + 1};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, s2, st_sum, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'strides'");
    int64_t st_bytes[1] = {INT64_MAX / 4};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F64, 1, &s3, st_bytes, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'strides'");
    int64_t st_min[1] = {INT64_MIN};
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 1, &s3, st_min, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'strides'");
    int64_t st_low[1] = {-(1LL << 58)}; /* 2^60 bytes below a user-space address */
    CHECK_FAILS(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 1, &s3, st_low, on_release, &r, &w), KILN_ERR_OVERFLOW,
                "'strides'");
    CHECK(w == NULL);
    CHECK_INT(r.calls, 0); /* a failed wrap never calls release: the caller still owns the memory */
    /* any stride on a size-1 axis is fine (never used) */
    int64_t one[2] = {1, 4}, anyst[2] = {INT64_MIN, 1};
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, h, KILN_DTYPE_F32, 2, one, anyst, on_release, &r, &w));
    double want[4] = {1, 2, 3, 4};
    check_values(w, want, 4, 0);
    kiln_tensor_release(w);
    CHECK_INT(r.calls, 1);
}

int main(void)
{
    kiln_status st = kiln_ctx_create(&ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "no context: %s\n", kiln_last_error(NULL));
        return st == KILN_ERR_NO_DEVICE ? CHECK_SKIP : 1;
    }
    printf("backend: %s\n", kiln_ctx_backend_name(ctx));
    seed = check_seed();
    if (kiln_ctx_create(&cpu, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}) != KILN_OK) {
        fprintf(stderr, "no CPU context: %s\n", kiln_last_error(NULL));
        return 1;
    }
    test_constructors();
    test_dtype_roundtrip();
    test_slices();
    test_permute_reshape();
    test_broadcast();
    test_copy_names();
    test_bad_args();
    test_wrap_dtypes();
    test_wrap_strided();
    test_wrap_dot();
    test_wrap_backend_memory();
    test_wrap_errors();
    kiln_ctx_destroy(cpu);
    kiln_ctx_destroy(ctx);
    return check_finish();
}
