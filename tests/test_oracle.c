/*
 * tests/test_oracle.c — the cross-backend oracle. One table-driven test that runs every
 * element-wise operator, every reduction (each axis-set form, keepdims or not), the seed's
 * variance and batch-norm expressions, where / clip / cast, kiln_dot, the random generators
 * and stochastic rounding through the PUBLIC API on the context the environment picks
 * (kiln_ctx_create(&ctx, NULL): the CPU here, CUDA with KILN_DEVICE=cuda), and compares
 * each result with an f64 reference computed here on the host.
 *
 * Inputs are fresh random values (never zeros; positive ranges where the op needs them),
 * quantized to the input dtype on the host, written into views of several layouts
 * (contiguous, transposed, strided, reversed, strided-reversed-and-permuted) whose parent
 * storage is poisoned with NaN. Outputs are poisoned (NaN, or 99 for integers) before each
 * run, and for float outputs the poisoned parent of a strided destination is checked
 * afterwards for writes outside the view. Results are compared by relative error against a
 * per-dtype tolerance (f64 1e-12, f32 1e-5, f16 2e-3, bf16 1e-2; integer results exactly),
 * widened with sqrt(n) for reductions of n values. One line per failing case, then a summary.
 * What it is not: a test of error paths (the module tests do that) or of speed.
 */
#include <float.h>

#include "check.h"
#include "core/numeric.h"

static kiln_ctx *ctx;
static uint64_t rs;       /* test random state */
static int ncases, nfails; /* cases run / failed */
static int rot;           /* rotates layouts across cases */
static int n_noncontig;   /* operands that were non-contiguous views */

#define NDT 7
static const kiln_dtype FLOATS[4] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_BF16};
static const kiln_dtype ALLDT[NDT] = {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F16, KILN_DTYPE_BF16,
                                      KILN_DTYPE_I32, KILN_DTYPE_I8,  KILN_DTYPE_U8};

static int is_float(kiln_dtype dt) { return dt == KILN_DTYPE_F32 || dt == KILN_DTYPE_F64 || dt == KILN_DTYPE_F16 || dt == KILN_DTYPE_BF16; }

/* ---- host-side dtype model -------------------------------------------------------------- */

/* Float to integer as the library documents it: NaN -> 0, truncate toward zero, saturate. */
static double conv_int(double v, kiln_dtype dt)
{
    double lo = dt == KILN_DTYPE_I8 ? -128 : dt == KILN_DTYPE_U8 ? 0 : -2147483648.0;
    double hi = dt == KILN_DTYPE_I8 ? 127 : dt == KILN_DTYPE_U8 ? 255 : 2147483647.0;
    if (isnan(v)) return 0;
    v = trunc(v);
    return v < lo ? lo : v > hi ? hi : v;
}

/* The value a store of v into dtype dt keeps (round to nearest, once from double). */
static double qz(double v, kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F64: return v;
    case KILN_DTYPE_F32: return (double)(float)v;
    case KILN_DTYPE_F16: return kiln_f16_to_f32(kiln_f64_to_f16_rn(v));
    case KILN_DTYPE_BF16: return kiln_bf16_to_f32(kiln_f64_to_bf16_rn(v));
    default: return conv_int(v, dt);
    }
}

/* Relative tolerance of a result stored as dt. */
static double tol_store(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F64: return 1e-12;
    case KILN_DTYPE_F32: return 1e-5;
    case KILN_DTYPE_F16: return 2e-3;
    case KILN_DTYPE_BF16: return 1e-2;
    default: return 0; /* integers: exact */
    }
}

/* Arithmetic happens in f64 when some input is f64 or i32, else in f32. */
static int compute_f64(kiln_dtype a) { return a == KILN_DTYPE_F64 || a == KILN_DTYPE_I32; }
static double tol_compute(int f64) { return f64 ? 1e-13 : 1.5e-6; }

/* Tolerance for a result of dtype odt from inputs computed in f64 or not, reducing n values. */
static double tol_for(kiln_dtype odt, int f64, int64_t nred)
{
    if (!is_float(odt)) return 0;
    double t = tol_store(odt) + tol_compute(f64) * (1.0 + sqrt((double)nred));
    if (!f64 && odt == KILN_DTYPE_F64) t = 1e-5 * (1.0 + sqrt((double)nred) / 4);
    return t;
}

/* ---- operands: random data in views of several layouts ------------------------------------ */

enum { L_CONTIG, L_TRANS, L_STRIDED, L_NEG, L_MIX, L_COUNT };
static const char *LAYOUT_NAME[L_COUNT] = {"contig", "transposed", "strided", "reversed", "mixed"};

typedef struct opnd {
    kiln_tensor *view; /* the leaf the expression reads / the destination */
    kiln_tensor *base; /* its storage's own tensor */
    kiln_dtype dt;
    int nd, lay;
    int64_t shape[KILN_MAX_DIMS];
    int64_t n;
    double *h; /* the values, row-major over the view */
} opnd;

static int64_t numel(int nd, const int64_t *s)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* Makes a view of shape `shape` in layout `lay` over a parent filled with `fill`. Returns 0
 * on failure (reported). */
static int make_view(kiln_dtype dt, int nd, const int64_t *shape, int lay, double fill, opnd *o)
{
    memset(o, 0, sizeof *o);
    o->dt = dt;
    o->nd = nd;
    o->lay = lay;
    memcpy(o->shape, shape, sizeof(int64_t) * (size_t)nd);
    o->n = numel(nd, shape);
    o->h = calloc((size_t)(o->n ? o->n : 1), sizeof(double));
    int64_t bs[KILN_MAX_DIMS];
    kiln_slice sl[KILN_MAX_DIMS];
    for (int i = 0; i < nd; i++) sl[i] = KILN_SLICE_ALL;
    kiln_status st = KILN_OK;
    kiln_tensor *tmp = NULL;
    if (nd == 0) lay = L_CONTIG;
    switch (lay) {
    case L_CONTIG:
        st = kiln_tensor_full(ctx, dt, nd, shape, fill, &o->base);
        if (st == KILN_OK) o->view = kiln_tensor_retain(o->base);
        break;
    case L_TRANS: /* parent of the reversed shape, all axes reversed */
        for (int i = 0; i < nd; i++) bs[i] = shape[nd - 1 - i];
        st = kiln_tensor_full(ctx, dt, nd, bs, fill, &o->base);
        if (st == KILN_OK) st = kiln_tensor_permute(o->base, NULL, &o->view);
        break;
    case L_STRIDED: /* every other element, starting at 1, on every axis */
        for (int i = 0; i < nd; i++) {
            bs[i] = 2 * shape[i] + 1;
            sl[i] = KILN_SLICE_STEP(1, KILN_NONE, 2);
        }
        st = kiln_tensor_full(ctx, dt, nd, bs, fill, &o->base);
        if (st == KILN_OK) st = kiln_tensor_slice(o->base, nd, sl, &o->view);
        break;
    case L_NEG: /* every axis walked backwards */
        for (int i = 0; i < nd; i++) sl[i] = KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1);
        st = kiln_tensor_full(ctx, dt, nd, shape, fill, &o->base);
        if (st == KILN_OK) st = kiln_tensor_slice(o->base, nd, sl, &o->view);
        break;
    default: /* L_MIX: reversed-shape parent, last axis doubled and walked with step -2, then .T */
        for (int i = 0; i < nd; i++) bs[i] = shape[nd - 1 - i];
        bs[nd - 1] *= 2;
        sl[nd - 1] = KILN_SLICE_STEP(-1, KILN_NONE, -2);
        st = kiln_tensor_full(ctx, dt, nd, bs, fill, &o->base);
        if (st == KILN_OK) st = kiln_tensor_slice(o->base, nd, sl, &tmp);
        if (st == KILN_OK) st = kiln_tensor_permute(tmp, NULL, &o->view);
        kiln_tensor_release(tmp);
        break;
    }
    if (st != KILN_OK) {
        fprintf(stderr, "oracle: cannot make a %s %s view: %s\n", LAYOUT_NAME[lay], kiln_dtype_name(dt), kiln_last_error(ctx));
        check_failed_++;
        return 0;
    }
    if (!kiln_tensor_is_contiguous(o->view)) n_noncontig++;
    return 1;
}

static void opnd_free(opnd *o)
{
    kiln_tensor_release(o->view);
    kiln_tensor_release(o->base);
    free(o->h);
    memset(o, 0, sizeof *o);
}

/* Writes o->h into the view (checking the write and a read-back). */
static int opnd_upload(opnd *o)
{
    kiln_status st = kiln_tensor_write(o->view, o->h, KILN_DTYPE_F64);
    if (st != KILN_OK) {
        fprintf(stderr, "oracle: kiln_tensor_write: %s\n", kiln_last_error(ctx));
        check_failed_++;
        return 0;
    }
    double *back = malloc(sizeof(double) * (size_t)(o->n ? o->n : 1));
    kiln_tensor_read(o->view, back, KILN_DTYPE_F64);
    int bad = 0;
    for (int64_t i = 0; i < o->n; i++)
        if (!(back[i] == o->h[i] || (isnan(back[i]) && isnan(o->h[i])))) bad++;
    free(back);
    if (bad) {
        fprintf(stderr, "oracle: %s %s view: %d values read back differently\n", LAYOUT_NAME[o->lay], kiln_dtype_name(o->dt), bad);
        check_failed_++;
        return 0;
    }
    return 1;
}

/* A random value in [lo, hi) quantized to dt, never zero (integers: never 0 either). */
static double rnd(kiln_dtype dt, double lo, double hi)
{
    for (;;) {
        double v = check_uniform(&rs, lo, hi);
        if (!is_float(dt)) v = floor(v);
        v = qz(v, dt);
        if (v != 0 && v >= lo && v <= hi) return v;
    }
}

/* An input operand of random values in [lo, hi). */
static int make_input(kiln_dtype dt, int nd, const int64_t *shape, int lay, double lo, double hi, opnd *o)
{
    if (!make_view(dt, nd, shape, lay, NAN, o)) return 0;
    for (int64_t i = 0; i < o->n; i++) o->h[i] = rnd(dt, lo, hi);
    return opnd_upload(o);
}

/* A destination poisoned with NaN (99 for integers). */
static int make_output(kiln_dtype dt, int nd, const int64_t *shape, int lay, opnd *o)
{
    return make_view(dt, nd, shape, lay, is_float(dt) ? NAN : 99.0, o);
}

/* ---- comparing -------------------------------------------------------------------------- */

/* Compares the destination with ref (mag[i]: the scale of the error allowed at i; NULL
 * means |ref[i]|). Prints one line when the case fails. */
static void finish_case(const char *name, opnd *out, const double *ref, const double *mag, double tol)
{
    ncases++;
    int64_t n = out->n;
    double *got = malloc(sizeof(double) * (size_t)(n ? n : 1));
    kiln_status st = kiln_tensor_read(out->view, got, KILN_DTYPE_F64);
    double worst = 0;
    int64_t wi = -1;
    int refnan = 0;
    for (int64_t i = 0; st == KILN_OK && i < n; i++) {
        double r = ref[i], g = got[i], e;
        if (isnan(r)) {
            refnan = 1;
            e = isnan(g) ? 0 : INFINITY;
        } else if (isinf(r) || tol == 0) {
            e = g == r ? 0 : INFINITY;
        } else {
            double m = mag ? mag[i] : fabs(r);
            if (m < 1e-300) m = 1e-300;
            e = isnan(g) ? INFINITY : fabs(g - r) / m;
        }
        if (e > worst) worst = e, wi = i;
    }
    /* Writes outside the view: the poisoned parent of a float destination keeps exactly
     * n non-NaN elements. */
    int64_t outside = 0;
    if (st == KILN_OK && is_float(out->dt) && !refnan && out->base) {
        int64_t bn = kiln_tensor_numel(out->base);
        double *b = malloc(sizeof(double) * (size_t)(bn ? bn : 1));
        kiln_tensor_read(out->base, b, KILN_DTYPE_F64);
        int64_t fin = 0;
        for (int64_t i = 0; i < bn; i++) fin += !isnan(b[i]);
        outside = fin - n;
        free(b);
    }
    if (st != KILN_OK || worst > tol || outside != 0) {
        nfails++;
        check_failed_++;
        if (st != KILN_OK)
            printf("FAIL %s [out %s %s]: read back: %s\n", name, kiln_dtype_name(out->dt), LAYOUT_NAME[out->lay], kiln_last_error(ctx));
        else if (worst > tol)
            printf("FAIL %s [out %s %s]: max rel err %.3g > tol %.3g at flat %lld: got %.17g want %.17g\n", name,
                   kiln_dtype_name(out->dt), LAYOUT_NAME[out->lay], worst, tol, (long long)wi, got[wi], ref[wi]);
        else
            printf("FAIL %s [out %s %s]: %lld elements written outside the view\n", name, kiln_dtype_name(out->dt),
                   LAYOUT_NAME[out->lay], (long long)outside);
    } else {
        check_passed_++;
    }
    free(got);
}

/* Runs dst = e; on failure reports the case and returns 0. */
static int run_assign(const char *name, opnd *out, kiln_expr *e)
{
    kiln_status st = kiln_assign(out->view, e);
    if (st != KILN_OK) {
        ncases++;
        nfails++;
        check_failed_++;
        printf("FAIL %s [out %s %s]: kiln_assign returned %s: %s\n", name, kiln_dtype_name(out->dt), LAYOUT_NAME[out->lay],
               kiln_status_name(st), kiln_last_error(ctx));
        return 0;
    }
    return 1;
}

/* Checks that an expression has the dtype numpy-like promotion gives; reports otherwise. */
static int expect_dtype(const char *name, kiln_expr *e, kiln_dtype want)
{
    kiln_dtype got = kiln_expr_dtype(e);
    if (got == want) return 1;
    ncases++;
    nfails++;
    check_failed_++;
    const char *msg = NULL;
    kiln_status st = kiln_expr_status(e, &msg);
    printf("FAIL %s: expression dtype %s, expected %s (%s%s%s)\n", name, kiln_dtype_name(got), kiln_dtype_name(want),
           kiln_status_name(st), msg ? ": " : "", msg ? msg : "");
    kiln_expr_release(e);
    return 0;
}

/* ---- element-wise unary ------------------------------------------------------------------ */

typedef enum { U_NEG, U_ABS, U_SQR, U_SQRT, U_RSQRT, U_RECIP, U_EXP, U_EXP2, U_LOG, U_LOG2, U_SIGMOID, U_TANH, U_RELU,
               U_FINITE, U_SIGN, U_LOG1P, U_EXPM1, U_SIN, U_COS, U_ERF, U_FLOOR, U_CEIL, U_RINT, U_TRUNC, U_COUNT } unop;
static const struct {
    const char *name;
    kiln_expr *(*fn)(kiln_expr *);
    double lo, hi;
    int ints; /* meaningful on integers (result stays integer) */
} UN[U_COUNT] = {
    {"neg", kiln_neg, -3, 3, 1},          {"abs", kiln_abs, -3, 3, 1},
    {"sqr", kiln_sqr, -3, 3, 1},          {"sqrt", kiln_sqrt, 0.25, 4, 0},
    {"rsqrt", kiln_rsqrt, 0.25, 4, 0},    {"reciprocal", kiln_reciprocal, 0.25, 4, 0},
    {"exp", kiln_exp, -4, 4, 0},          {"exp2", kiln_exp2, -4, 4, 0},
    {"log", kiln_log, 0.25, 4, 0},        {"log2", kiln_log2, 0.25, 4, 0},
    {"sigmoid", kiln_sigmoid, -5, 5, 0},  {"tanh", kiln_tanh, -3, 3, 0},
    {"relu", kiln_relu, -3, 3, 1},        {"finite", kiln_finite, -3, 3, 0},
    {"sign", kiln_sign, -3, 3, 1},        {"log1p", kiln_log1p, -0.5, 4, 0},
    {"expm1", kiln_expm1, -3, 3, 0},      {"sin", kiln_sin, -7, 7, 0},
    {"cos", kiln_cos, -7, 7, 0},          {"erf", kiln_erf, -3, 3, 0},
    {"floor", kiln_floor, -4, 4, 1},      {"ceil", kiln_ceil, -4, 4, 1},
    {"rint", kiln_rint, -4, 4, 1},        {"trunc", kiln_trunc, -4, 4, 1},
};

static double un_ref(int op, double x)
{
    switch (op) {
    case U_NEG: return -x;
    case U_ABS: return fabs(x);
    case U_SQR: return x * x;
    case U_SQRT: return sqrt(x);
    case U_RSQRT: return 1 / sqrt(x);
    case U_RECIP: return 1 / x;
    case U_EXP: return exp(x);
    case U_EXP2: return exp2(x);
    case U_LOG: return log(x);
    case U_LOG2: return log2(x);
    case U_SIGMOID: return 1 / (1 + exp(-x));
    case U_TANH: return tanh(x);
    case U_RELU: return x > 0 ? x : 0;
    case U_FINITE: return isfinite(x) ? 1 : 0;
    case U_LOG1P: return log1p(x);
    case U_EXPM1: return expm1(x);
    case U_SIN: return sin(x);
    case U_COS: return cos(x);
    case U_ERF: return erf(x);
    case U_FLOOR: return floor(x);
    case U_CEIL: return ceil(x);
    case U_RINT: return rint(x);
    case U_TRUNC: return trunc(x);
    default: return x > 0 ? 1 : x < 0 ? -1 : 0;
    }
}

static void test_unary(void)
{
    static const int64_t shapes[3][3] = {{7, 13, 1}, {129, 3, 1}, {2, 3, 5}};
    static const int ranks[3] = {2, 2, 3};
    for (int op = 0; op < U_COUNT; op++) {
        for (int d = 0; d < NDT; d++) {
            kiln_dtype dt = ALLDT[d];
            if (!is_float(dt) && !UN[op].ints) continue;
            for (int s = 0; s < 3; s++) {
                int lay = rot++ % L_COUNT, olay = (rot / 2) % 3;
                char name[128];
                snprintf(name, sizeof name, "unary %s %s (in %s)", UN[op].name, kiln_dtype_name(dt), LAYOUT_NAME[lay]);
                double lo = UN[op].lo, hi = UN[op].hi;
                if (!is_float(dt)) lo = dt == KILN_DTYPE_U8 ? 1 : -11, hi = dt == KILN_DTYPE_U8 ? 16 : 12;
                opnd a, o;
                if (!make_input(dt, ranks[s], shapes[s], lay, lo, hi, &a)) continue;
                if (op == U_FINITE) { /* inject non-finite values */
                    for (int64_t i = 0; i < a.n; i += 4) a.h[i] = (i / 4) % 3 == 0 ? INFINITY : (i / 4) % 3 == 1 ? -INFINITY : NAN;
                    if (!opnd_upload(&a)) { opnd_free(&a); continue; }
                }
                kiln_dtype odt = op == U_FINITE && !is_float(dt) ? KILN_DTYPE_F32 : dt;
                if (!make_output(odt, ranks[s], shapes[s], olay, &o)) { opnd_free(&a); continue; }
                kiln_expr *e = UN[op].fn(kiln_t(a.view));
                if (expect_dtype(name, e, odt) && run_assign(name, &o, e)) {
                    double *ref = malloc(sizeof(double) * (size_t)a.n);
                    for (int64_t i = 0; i < a.n; i++) ref[i] = qz(un_ref(op, a.h[i]), odt);
                    finish_case(name, &o, ref, NULL, tol_for(odt, compute_f64(dt), 1));
                    free(ref);
                }
                opnd_free(&a);
                opnd_free(&o);
            }
        }
    }
}

/* ---- element-wise binary with broadcasting ------------------------------------------------ */

typedef enum { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_FMOD, B_MAX, B_MIN, B_EQ, B_NE, B_LT, B_LE, B_GT, B_GE, B_COUNT } binop;
static const struct {
    const char *name;
    kiln_expr *(*fn)(kiln_expr *, kiln_expr *);
    int ints, cmp;
} BIN[B_COUNT] = {
    {"add", kiln_add, 1, 0},     {"sub", kiln_sub, 1, 0}, {"mul", kiln_mul, 1, 0}, {"div", kiln_div, 0, 0},
    {"pow", kiln_pow, 0, 0},     {"fmod", kiln_fmod, 1, 0}, {"maximum", kiln_maximum, 1, 0}, {"minimum", kiln_minimum, 1, 0},
    {"eq", kiln_eq, 1, 1},       {"ne", kiln_ne, 1, 1},   {"lt", kiln_lt, 1, 1},   {"le", kiln_le, 1, 1},
    {"gt", kiln_gt, 1, 1},       {"ge", kiln_ge, 1, 1},
};

static double bin_ref(int op, double a, double b)
{
    switch (op) {
    case B_ADD: return a + b;
    case B_SUB: return a - b;
    case B_MUL: return a * b;
    case B_DIV: return a / b;
    case B_POW: return pow(a, b);
    case B_FMOD: return fmod(a, b); /* exact; NaN (an integer 0) for b = 0 */
    case B_MAX: return a > b ? a : b;
    case B_MIN: return a < b ? a : b;
    case B_EQ: return a == b;
    case B_NE: return a != b;
    case B_LT: return a < b;
    case B_LE: return a <= b;
    case B_GT: return a > b;
    default: return a >= b;
    }
}

enum { F_SAME, F_ROW, F_COL, F_SCALAR_R, F_SCALAR_L, F_COUNT };
static const char *FORM_NAME[F_COUNT] = {"same shape", "row (C,)", "column (N,1)", "tensor op scalar", "scalar op tensor"};

static void test_binary(void)
{
    static const int64_t shapes[2][2] = {{7, 13}, {129, 3}};
    for (int op = 0; op < B_COUNT; op++) {
        for (int d = 0; d < NDT; d++) {
            kiln_dtype dt = ALLDT[d];
            if (!is_float(dt) && !BIN[op].ints) continue;
            for (int f = 0; f < F_COUNT; f++) {
                const int64_t *S = shapes[(rot / 3) % 2];
                int lay = rot++ % L_COUNT, lay2 = (rot * 7) % L_COUNT, olay = (rot / 5) % 3;
                char name[160];
                snprintf(name, sizeof name, "binary %s %s %s (in %s/%s)", BIN[op].name, kiln_dtype_name(dt), FORM_NAME[f],
                         LAYOUT_NAME[lay], LAYOUT_NAME[lay2]);
                /* value ranges */
                double alo = -2, ahi = 2, blo = -2, bhi = 2, c = 0.75;
                if (op == B_DIV) blo = 0.5, bhi = 2, c = 1.25;
                if (op == B_POW) alo = 0.5, ahi = 2, c = 1.5;
                if (!is_float(dt)) {
                    alo = blo = dt == KILN_DTYPE_U8 ? 1 : -11;
                    ahi = bhi = dt == KILN_DTYPE_U8 ? 16 : 12;
                    c = 3;
                }
                int64_t bs[2];
                int bnd = 2;
                if (f == F_ROW) bnd = 1, bs[0] = S[1];
                if (f == F_COL) bs[0] = S[0], bs[1] = 1;
                if (f == F_SAME) bs[0] = S[0], bs[1] = S[1];
                opnd a, b, o;
                memset(&b, 0, sizeof b);
                if (!make_input(dt, 2, S, lay, alo, ahi, &a)) continue;
                int hasb = f <= F_COL;
                if (hasb) {
                    if (!make_input(dt, bnd, bs, lay2, blo, bhi, &b)) { opnd_free(&a); continue; }
                    if (BIN[op].cmp && f == F_SAME) /* ties */
                        for (int64_t i = 0; i < b.n; i += 3) b.h[i] = a.h[i];
                    if (BIN[op].cmp && f == F_SAME && !opnd_upload(&b)) { opnd_free(&a); opnd_free(&b); continue; }
                }
                /* comparisons against the scalar: also ties */
                if (BIN[op].cmp && !hasb) {
                    for (int64_t i = 0; i < a.n; i += 4) a.h[i] = c;
                    if (!opnd_upload(&a)) { opnd_free(&a); continue; }
                }
                kiln_dtype odt = dt;
                if (!make_output(odt, 2, S, olay, &o)) { opnd_free(&a); opnd_free(&b); continue; }
                kiln_expr *e;
                if (f == F_SCALAR_R) e = BIN[op].fn(kiln_t(a.view), kiln_scalar(c));
                else if (f == F_SCALAR_L) e = BIN[op].fn(kiln_scalar(c), kiln_t(a.view));
                else e = BIN[op].fn(kiln_t(a.view), kiln_t(b.view));
                if (expect_dtype(name, e, odt) && run_assign(name, &o, e)) {
                    double *ref = malloc(sizeof(double) * (size_t)o.n), *mag = malloc(sizeof(double) * (size_t)o.n);
                    for (int64_t i = 0; i < S[0]; i++)
                        for (int64_t j = 0; j < S[1]; j++) {
                            int64_t k = i * S[1] + j;
                            double x = a.h[k], y = c;
                            if (f == F_SAME) y = b.h[k];
                            if (f == F_ROW) y = b.h[j];
                            if (f == F_COL) y = b.h[i];
                            double r = f == F_SCALAR_L ? bin_ref(op, y, x) : bin_ref(op, x, y);
                            ref[k] = qz(r, odt);
                            mag[k] = (op == B_ADD || op == B_SUB) ? fabs(x) + fabs(y) : fabs(r);
                        }
                    finish_case(name, &o, ref, mag, BIN[op].cmp ? 0 : tol_for(odt, compute_f64(dt), 1));
                    free(ref);
                    free(mag);
                }
                opnd_free(&a);
                opnd_free(&b);
                opnd_free(&o);
            }
        }
    }
}

/* Mixed dtypes: promotion and compute in the wider type. */
static void test_mixed(void)
{
    static const struct { kiln_dtype a, b, want; } P[] = {
        {KILN_DTYPE_F16, KILN_DTYPE_F32, KILN_DTYPE_F32}, {KILN_DTYPE_BF16, KILN_DTYPE_F16, KILN_DTYPE_F32},
        {KILN_DTYPE_F32, KILN_DTYPE_F64, KILN_DTYPE_F64}, {KILN_DTYPE_I8, KILN_DTYPE_F16, KILN_DTYPE_F16},
        {KILN_DTYPE_I32, KILN_DTYPE_F32, KILN_DTYPE_F32}, {KILN_DTYPE_I8, KILN_DTYPE_U8, KILN_DTYPE_I32},
        {KILN_DTYPE_U8, KILN_DTYPE_BF16, KILN_DTYPE_BF16}, {KILN_DTYPE_I8, KILN_DTYPE_I32, KILN_DTYPE_I32},
    };
    const int64_t S[2] = {5, 11};
    for (size_t p = 0; p < sizeof P / sizeof P[0]; p++) {
        for (int op = B_ADD; op <= B_MUL; op++) {
            int lay = rot++ % L_COUNT;
            char name[160];
            snprintf(name, sizeof name, "mixed %s %s %s (in %s)", BIN[op].name, kiln_dtype_name(P[p].a), kiln_dtype_name(P[p].b),
                     LAYOUT_NAME[lay]);
            opnd a, b, o;
            double lo = is_float(P[p].a) ? -2 : P[p].a == KILN_DTYPE_U8 ? 1 : -9, hi = is_float(P[p].a) ? 2 : 10;
            double lo2 = is_float(P[p].b) ? -2 : P[p].b == KILN_DTYPE_U8 ? 1 : -9, hi2 = is_float(P[p].b) ? 2 : 10;
            if (!make_input(P[p].a, 2, S, lay, lo, hi, &a)) continue;
            if (!make_input(P[p].b, 2, S, (lay + 2) % L_COUNT, lo2, hi2, &b)) { opnd_free(&a); continue; }
            kiln_dtype odt = P[p].want;
            if (!make_output(odt, 2, S, L_CONTIG, &o)) { opnd_free(&a); opnd_free(&b); continue; }
            kiln_expr *e = BIN[op].fn(kiln_t(a.view), kiln_t(b.view));
            if (expect_dtype(name, e, odt) && run_assign(name, &o, e)) {
                double *ref = malloc(sizeof(double) * (size_t)o.n), *mag = malloc(sizeof(double) * (size_t)o.n);
                for (int64_t i = 0; i < o.n; i++) {
                    double r = bin_ref(op, a.h[i], b.h[i]);
                    ref[i] = qz(r, odt);
                    mag[i] = op == B_MUL ? fabs(r) : fabs(a.h[i]) + fabs(b.h[i]);
                }
                int f64 = compute_f64(P[p].a) || compute_f64(P[p].b) || odt == KILN_DTYPE_F64;
                finish_case(name, &o, ref, mag, tol_for(odt, f64, 1));
                free(ref);
                free(mag);
            }
            opnd_free(&a);
            opnd_free(&b);
            opnd_free(&o);
        }
    }
}

/* where, clip, cast. */
static void test_where_clip_cast(void)
{
    const int64_t S[2] = {9, 17};
    for (int d = 0; d < NDT; d++) {
        kiln_dtype dt = ALLDT[d];
        double lo = is_float(dt) ? -2 : dt == KILN_DTYPE_U8 ? 1 : -11, hi = is_float(dt) ? 2 : 12;
        double thr = is_float(dt) ? 0.25 : 5, clo = is_float(dt) ? -0.5 : 3, chi = is_float(dt) ? 0.75 : 8;
        /* where(a > thr, b (row-broadcast), scalar) */
        {
            int lay = rot++ % L_COUNT;
            char name[128];
            snprintf(name, sizeof name, "where %s (in %s)", kiln_dtype_name(dt), LAYOUT_NAME[lay]);
            opnd a, b, o;
            int64_t bs[1] = {S[1]};
            if (make_input(dt, 2, S, lay, lo, hi, &a)) {
                if (make_input(dt, 1, bs, (lay + 1) % L_COUNT, lo, hi, &b)) {
                    if (make_output(dt, 2, S, rot % 3, &o)) {
                        kiln_expr *e = kiln_where(kiln_gt(kiln_t(a.view), kiln_scalar(thr)), kiln_t(b.view), kiln_scalar(-2));
                        if (expect_dtype(name, e, dt) && run_assign(name, &o, e)) {
                            double *ref = malloc(sizeof(double) * (size_t)o.n);
                            for (int64_t i = 0; i < S[0]; i++)
                                for (int64_t j = 0; j < S[1]; j++)
                                    ref[i * S[1] + j] = qz(a.h[i * S[1] + j] > thr ? b.h[j] : -2, dt);
                            finish_case(name, &o, ref, NULL, 0);
                            free(ref);
                        }
                        opnd_free(&o);
                    }
                    opnd_free(&b);
                }
                opnd_free(&a);
            }
        }
        /* clip(x, lo, hi) */
        {
            int lay = rot++ % L_COUNT;
            char name[128];
            snprintf(name, sizeof name, "clip %s (in %s)", kiln_dtype_name(dt), LAYOUT_NAME[lay]);
            opnd a, o;
            if (make_input(dt, 2, S, lay, lo, hi, &a)) {
                if (make_output(dt, 2, S, rot % 3, &o)) {
                    kiln_expr *e = kiln_clip(kiln_t(a.view), clo, chi);
                    if (expect_dtype(name, e, dt) && run_assign(name, &o, e)) {
                        double *ref = malloc(sizeof(double) * (size_t)o.n);
                        for (int64_t i = 0; i < o.n; i++) ref[i] = qz(a.h[i] < clo ? clo : a.h[i] > chi ? chi : a.h[i], dt);
                        finish_case(name, &o, ref, NULL, 0);
                        free(ref);
                    }
                    opnd_free(&o);
                }
                opnd_free(&a);
            }
        }
        /* cast(x, to) for every target, read through an f64 destination (exact) and through a
         * destination of the target dtype */
        for (int d2 = 0; d2 < NDT; d2++) {
            kiln_dtype to = ALLDT[d2];
            for (int via = 0; via < 2; via++) {
                int lay = rot++ % L_COUNT;
                char name[160];
                snprintf(name, sizeof name, "cast %s -> %s into %s (in %s)", kiln_dtype_name(dt), kiln_dtype_name(to),
                         via ? kiln_dtype_name(to) : "f64", LAYOUT_NAME[lay]);
                opnd a, o;
                kiln_dtype odt = via ? to : KILN_DTYPE_F64;
                if (!make_input(dt, 2, S, lay, is_float(dt) ? -300.0 : lo * 20, is_float(dt) ? 300.0 : hi * 20, &a)) continue;
                if (!make_output(odt, 2, S, rot % 3, &o)) { opnd_free(&a); continue; }
                kiln_expr *e = kiln_cast(kiln_t(a.view), to);
                if (expect_dtype(name, e, to) && run_assign(name, &o, e)) {
                    double *ref = malloc(sizeof(double) * (size_t)o.n);
                    for (int64_t i = 0; i < o.n; i++) ref[i] = qz(qz(a.h[i], to), odt);
                    finish_case(name, &o, ref, NULL, 0);
                    free(ref);
                }
                opnd_free(&a);
                opnd_free(&o);
            }
        }
    }
}

/* ---- reductions -------------------------------------------------------------------------- */

static const struct {
    const char *name;
    kiln_reduce_op op;
    int ints; /* result integer for integer input */
} RED[] = {
    {"sum", KILN_REDUCE_SUM, 1},   {"mean", KILN_REDUCE_MEAN, 0}, {"max", KILN_REDUCE_MAX, 1},
    {"min", KILN_REDUCE_MIN, 1},   {"var", KILN_REDUCE_VAR, 0},   {"std", KILN_REDUCE_STD, 0},
    {"argmax", KILN_REDUCE_ARGMAX, 1}, {"argmin", KILN_REDUCE_ARGMIN, 1}, {"prod", KILN_REDUCE_PROD, 1},
};
#define NRED ((int)(sizeof RED / sizeof RED[0]))

/* Axis-set forms over a rank-3 input: the axes as passed (naxes -1: NULL, reduce all). */
static const struct { int naxes; int axes[3]; } AXES[] = {
    {1, {0}}, {1, {1}}, {1, {2}}, {1, {-1}}, {2, {0, 1}}, {2, {0, 2}}, {2, {1, 2}}, {2, {-1, -3}}, {3, {2, 0, 1}}, {-1, {0}},
};
#define NAXES ((int)(sizeof AXES / sizeof AXES[0]))

/* Reference reduction of x (rank 3, shape s) over mask. Output row-major over the kept
 * axes. ref and mag have one entry per output element. */
static void reduce_ref(int op, kiln_dtype odt, const double *x, const int64_t *s, unsigned mask, double *ref, double *mag,
                       int64_t *nred)
{
    int64_t os[3], rsz[3];
    for (int a = 0; a < 3; a++) {
        os[a] = (mask >> a) & 1 ? 1 : s[a];
        rsz[a] = (mask >> a) & 1 ? s[a] : 1;
    }
    int64_t nout = os[0] * os[1] * os[2], nr = rsz[0] * rsz[1] * rsz[2];
    *nred = nr;
    for (int64_t o = 0; o < nout; o++) {
        int64_t oi[3] = {o / (os[1] * os[2]), (o / os[2]) % os[1], o % os[2]};
        double sum = 0, sabs = 0, sq = 0, mx = -INFINITY, mn = INFINITY, prod = 1;
        int64_t amx = 0, amn = 0;
        for (int64_t r = 0; r < nr; r++) {
            int64_t ri[3] = {r / (rsz[1] * rsz[2]), (r / rsz[2]) % rsz[1], r % rsz[2]};
            int64_t idx[3];
            for (int a = 0; a < 3; a++) idx[a] = (mask >> a) & 1 ? ri[a] : oi[a];
            double v = x[(idx[0] * s[1] + idx[1]) * s[2] + idx[2]];
            sum += v;
            prod *= v;
            sabs += fabs(v);
            sq += v * v;
            if (v > mx) mx = v, amx = r;
            if (v < mn) mn = v, amn = r;
        }
        double mean = sum / (double)nr, dev = 0;
        for (int64_t r = 0; r < nr; r++) {
            int64_t ri[3] = {r / (rsz[1] * rsz[2]), (r / rsz[2]) % rsz[1], r % rsz[2]};
            int64_t idx[3];
            for (int a = 0; a < 3; a++) idx[a] = (mask >> a) & 1 ? ri[a] : oi[a];
            double v = x[(idx[0] * s[1] + idx[1]) * s[2] + idx[2]] - mean;
            dev += v * v;
        }
        double var = dev / (double)nr, r, m;
        switch (op) {
        case KILN_REDUCE_SUM: r = sum, m = sabs; break;
        case KILN_REDUCE_MEAN: r = mean, m = sabs / (double)nr; break;
        case KILN_REDUCE_MAX: r = mx, m = fabs(mx); break;
        case KILN_REDUCE_MIN: r = mn, m = fabs(mn); break;
        case KILN_REDUCE_VAR: r = var, m = sq / (double)nr; break;
        case KILN_REDUCE_STD: r = sqrt(var), m = sqrt(sq / (double)nr); break;
        case KILN_REDUCE_ARGMAX: r = (double)amx, m = 1; break;
        case KILN_REDUCE_PROD: r = prod, m = fabs(prod); break;
        default: r = (double)amn, m = 1; break;
        }
        ref[o] = qz(r, odt);
        mag[o] = m;
    }
}

static void test_reductions(void)
{
    static const int64_t shapes[3][3] = {{5, 7, 9}, {2, 129, 3}, {1, 6, 1}};
    for (int op = 0; op < NRED; op++) {
        for (int d = 0; d < NDT; d++) {
            kiln_dtype dt = ALLDT[d];
            if (!is_float(dt) && !RED[op].ints && dt != KILN_DTYPE_I8) continue; /* i8 mean/var: the f32 path */
            for (int ax = 0; ax < NAXES; ax++) {
                for (int keep = 0; keep < 2; keep++) {
                    const int64_t *S = shapes[(rot / 4) % 3];
                    int lay = rot++ % L_COUNT;
                    unsigned mask = 0;
                    if (AXES[ax].naxes < 0) mask = 7;
                    for (int i = 0; i < AXES[ax].naxes; i++) mask |= 1u << ((AXES[ax].axes[i] + 3) % 3);
                    char name[192], axs[32] = "";
                    if (AXES[ax].naxes < 0) snprintf(axs, sizeof axs, "all (NULL)");
                    for (int i = 0; i < AXES[ax].naxes; i++)
                        snprintf(axs + strlen(axs), sizeof axs - strlen(axs), "%s%d", i ? "," : "", AXES[ax].axes[i]);
                    snprintf(name, sizeof name, "reduce %s %s axes {%s} keepdims %d shape (%lld,%lld,%lld) (in %s)", RED[op].name,
                             kiln_dtype_name(dt), axs, keep, (long long)S[0], (long long)S[1], (long long)S[2], LAYOUT_NAME[lay]);
                    double lo = is_float(dt) ? -2 : dt == KILN_DTYPE_U8 ? 1 : -11, hi = is_float(dt) ? 2 : 12;
                    if (RED[op].op == KILN_REDUCE_PROD) { /* products of hundreds of terms that stay in range */
                        lo = is_float(dt) ? 0.8 : dt == KILN_DTYPE_U8 ? 1 : -1; /* integers: -1, 1, 2 */
                        hi = is_float(dt) ? 1.25 : 3;
                    }
                    opnd a, o;
                    if (!make_input(dt, 3, S, lay, lo, hi, &a)) continue;
                    int64_t osh[3];
                    int ond = 0;
                    for (int i = 0; i < 3; i++) {
                        if (!((mask >> i) & 1)) osh[ond++] = S[i];
                        else if (keep) osh[ond++] = 1;
                    }
                    kiln_dtype odt = dt;
                    if (RED[op].op == KILN_REDUCE_ARGMAX || RED[op].op == KILN_REDUCE_ARGMIN) odt = KILN_DTYPE_I32;
                    else if (!is_float(dt) && !RED[op].ints) odt = KILN_DTYPE_F32;
                    if (!make_output(odt, ond, osh, ond >= 2 ? rot % 3 : L_CONTIG, &o)) { opnd_free(&a); continue; }
                    kiln_expr *e = kiln_reduce(RED[op].op, kiln_t(a.view), AXES[ax].naxes < 0 ? 0 : AXES[ax].naxes,
                                               AXES[ax].naxes < 0 ? NULL : AXES[ax].axes, keep);
                    if (expect_dtype(name, e, odt) && run_assign(name, &o, e)) {
                        double *ref = malloc(sizeof(double) * (size_t)o.n), *mag = malloc(sizeof(double) * (size_t)o.n);
                        int64_t nred;
                        reduce_ref(RED[op].op, odt, a.h, S, mask, ref, mag, &nred);
                        int exact = RED[op].op == KILN_REDUCE_MAX || RED[op].op == KILN_REDUCE_MIN || !is_float(odt);
                        double tol = exact ? 0 : tol_for(odt, compute_f64(dt), nred);
                        if (RED[op].op == KILN_REDUCE_VAR || RED[op].op == KILN_REDUCE_STD) tol *= 2;
                        if (RED[op].op == KILN_REDUCE_PROD) tol *= 4; /* every factor's rounding counts relatively */
                        finish_case(name, &o, ref, mag, tol);
                        free(ref);
                        free(mag);
                    }
                    opnd_free(&a);
                    opnd_free(&o);
                }
            }
        }
    }
    /* The one-axis shorthands keep the axis, so the result broadcasts back: x - mean(x, 1). */
    for (int d = 0; d < 4; d++) {
        kiln_dtype dt = FLOATS[d];
        const int64_t S[2] = {11, 37};
        kiln_expr *(*const fns[6])(kiln_expr *, int) = {kiln_sum, kiln_mean, kiln_max, kiln_min, kiln_var, kiln_std};
        static const char *fnames[6] = {"sum", "mean", "max", "min", "var", "std"};
        for (int k = 0; k < 6; k++) {
            for (int axis = 0; axis < 2; axis++) {
                int lay = rot++ % L_COUNT;
                char name[128];
                snprintf(name, sizeof name, "x - %s(x, %d) %s (in %s)", fnames[k], axis, kiln_dtype_name(dt), LAYOUT_NAME[lay]);
                opnd a, o;
                if (!make_input(dt, 2, S, lay, -2, 2, &a)) continue;
                if (!make_output(dt, 2, S, rot % 3, &o)) { opnd_free(&a); continue; }
                kiln_expr *e = kiln_sub(kiln_t(a.view), fns[k](kiln_t(a.view), axis));
                if (run_assign(name, &o, e)) {
                    double *ref = malloc(sizeof(double) * (size_t)o.n), *mag = malloc(sizeof(double) * (size_t)o.n);
                    int64_t S3[3] = {S[0], S[1], 1}, nred;
                    int64_t nr = axis ? S[0] : S[1];
                    double *r = malloc(sizeof(double) * (size_t)nr), *m = malloc(sizeof(double) * (size_t)nr);
                    static const kiln_reduce_op rop[6] = {KILN_REDUCE_SUM, KILN_REDUCE_MEAN, KILN_REDUCE_MAX,
                                                          KILN_REDUCE_MIN, KILN_REDUCE_VAR, KILN_REDUCE_STD};
                    reduce_ref(rop[k], KILN_DTYPE_F64, a.h, S3, 1u << axis, r, m, &nred);
                    for (int64_t i = 0; i < S[0]; i++)
                        for (int64_t j = 0; j < S[1]; j++) {
                            int64_t q = axis ? i : j;
                            ref[i * S[1] + j] = qz(a.h[i * S[1] + j] - r[q], dt);
                            mag[i * S[1] + j] = fabs(a.h[i * S[1] + j]) + m[q];
                        }
                    finish_case(name, &o, ref, mag, 2 * tol_for(dt, compute_f64(dt), nred));
                    free(r);
                    free(m);
                    free(ref);
                    free(mag);
                }
                opnd_free(&a);
                opnd_free(&o);
            }
        }
    }
}

/* ---- the seed's expressions ---------------------------------------------------------------- */

/* Row statistics of an (N, C) matrix along axis (1: per row, 0: per column). */
static void stats2(const double *x, int64_t N, int64_t C, int axis, double *mean, double *var, double *mx, double *sabs)
{
    int64_t nout = axis ? N : C, nr = axis ? C : N;
    for (int64_t o = 0; o < nout; o++) {
        double s = 0, m = -INFINITY, sa = 0;
        for (int64_t r = 0; r < nr; r++) {
            double v = axis ? x[o * C + r] : x[r * C + o];
            s += v;
            sa += fabs(v);
            if (v > m) m = v;
        }
        double mu = s / (double)nr, dv = 0;
        for (int64_t r = 0; r < nr; r++) {
            double v = (axis ? x[o * C + r] : x[r * C + o]) - mu;
            dv += v * v;
        }
        mean[o] = mu;
        var[o] = dv / (double)nr;
        if (mx) mx[o] = m;
        if (sabs) sabs[o] = sa;
    }
}

enum { X_VARIANCE, X_BN_INPLACE, X_BN_NERVANA, X_BN_AXIS0, X_SOFTMAX, X_STD_SQUEEZE, X_CHAIN, X_REDRED, X_COUNT };
static const char *XNAME[X_COUNT] = {
    "variance mean(sqr(A - mean(A,1)),1)", "batch-norm in place A = rsqrt(var(A,1)+eps)*(A-mean(A,1))",
    "batch-norm reciprocal(sqrt(var(A,1)+eps))*(A-mean(A,1))", "batch-norm over axis 0", "softmax rows",
    "std(A,1,keepdims 0) + max(A,1,keepdims 0)", "relu(A*w + b) - sigmoid(A)/(1+abs(w))", "sum(max(A,1),0)"};

static void test_expressions(void)
{
    static const int64_t shapes[3][2] = {{128, 32}, {7, 129}, {1, 5}};
    const double eps = 0.001;
    for (int x = 0; x < X_COUNT; x++) {
        for (int d = 0; d < 4; d++) {
            kiln_dtype dt = FLOATS[d];
            for (int s = 0; s < 3; s++) {
                const int64_t *S = shapes[s];
                int64_t N = S[0], C = S[1];
                int lay = rot++ % L_COUNT;
                char name[192];
                snprintf(name, sizeof name, "%s %s (%lld,%lld) (in %s)", XNAME[x], kiln_dtype_name(dt), (long long)N, (long long)C,
                         LAYOUT_NAME[lay]);
                opnd a, w, b, o;
                memset(&w, 0, sizeof w);
                memset(&b, 0, sizeof b);
                memset(&o, 0, sizeof o);
                if (!make_input(dt, 2, S, lay, x == X_BN_INPLACE || x == X_VARIANCE ? 0.0 : -2.0, 2.0, &a)) continue;
                double *mean = malloc(sizeof(double) * (size_t)(N + C)), *var = malloc(sizeof(double) * (size_t)(N + C));
                double *mx = malloc(sizeof(double) * (size_t)(N + C)), *sabs = malloc(sizeof(double) * (size_t)(N + C));
                int64_t on = N * C, ond = 2, osh[2] = {N, C};
                if (x == X_VARIANCE) osh[1] = 1, on = N;
                if (x == X_STD_SQUEEZE) ond = 1, osh[0] = N, on = N;
                if (x == X_REDRED) osh[0] = 1, osh[1] = 1, on = 1;
                double *ref = malloc(sizeof(double) * (size_t)on), *mag = malloc(sizeof(double) * (size_t)on);
                kiln_expr *e = NULL;
                int64_t nred = C;
                if (x == X_CHAIN) {
                    int64_t ws[1] = {C}, bsh[2] = {N, 1};
                    if (!make_input(dt, 1, ws, (lay + 1) % L_COUNT, -2, 2, &w) || !make_input(dt, 2, bsh, L_CONTIG, -2, 2, &b)) goto next;
                }
                if (x != X_BN_INPLACE && !make_output(dt, ond, osh, ond == 2 ? rot % 3 : L_CONTIG, &o)) goto next;
                opnd *dst = x == X_BN_INPLACE ? &a : &o;
                kiln_tensor *A = a.view;
                switch (x) {
                case X_VARIANCE:
                    e = kiln_mean(kiln_sqr(kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1))), 1);
                    stats2(a.h, N, C, 1, mean, var, NULL, NULL);
                    for (int64_t i = 0; i < N; i++) {
                        double sq = 0;
                        for (int64_t j = 0; j < C; j++) sq += a.h[i * C + j] * a.h[i * C + j];
                        ref[i] = qz(var[i], dt), mag[i] = sq / (double)C;
                    }
                    break;
                case X_BN_INPLACE:
                case X_BN_NERVANA:
                case X_BN_AXIS0: {
                    int axis = x == X_BN_AXIS0 ? 0 : 1;
                    nred = axis ? C : N;
                    if (x == X_BN_INPLACE)
                        e = kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), 1), kiln_scalar(eps))), kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1)));
                    else if (x == X_BN_NERVANA)
                        e = kiln_mul(kiln_reciprocal(kiln_sqrt(kiln_add(kiln_var(kiln_t(A), 1), kiln_scalar(eps)))),
                                     kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1)));
                    else
                        e = kiln_mul(kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 0)), kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), 0), kiln_scalar(eps))));
                    stats2(a.h, N, C, axis, mean, var, NULL, NULL);
                    for (int64_t i = 0; i < N; i++)
                        for (int64_t j = 0; j < C; j++) {
                            int64_t q = axis ? i : j;
                            double rs_ = 1 / sqrt(var[q] + eps);
                            ref[i * C + j] = qz((a.h[i * C + j] - mean[q]) * rs_, dt);
                            /* x - mean cancels: the error scale is the row's spread */
                            mag[i * C + j] = fabs(ref[i * C + j]) + (fabs(a.h[i * C + j]) + fabs(mean[q])) * rs_ * 0.05 + 1e-3;
                        }
                    break;
                }
                case X_SOFTMAX: {
                    kiln_expr *ex = kiln_exp(kiln_sub(kiln_t(A), kiln_max(kiln_t(A), 1)));
                    kiln_expr_retain(ex);
                    e = kiln_div(ex, kiln_sum(ex, 1));
                    stats2(a.h, N, C, 1, mean, var, mx, NULL);
                    for (int64_t i = 0; i < N; i++) {
                        double z = 0;
                        for (int64_t j = 0; j < C; j++) z += exp(a.h[i * C + j] - mx[i]);
                        for (int64_t j = 0; j < C; j++) ref[i * C + j] = qz(exp(a.h[i * C + j] - mx[i]) / z, dt), mag[i * C + j] = fabs(ref[i * C + j]);
                    }
                    break;
                }
                case X_STD_SQUEEZE: {
                    int ax1[1] = {1};
                    /* (N,) = std over axis 1 without keepdims, plus max over axis 1 without keepdims */
                    e = kiln_add(kiln_reduce(KILN_REDUCE_STD, kiln_t(A), 1, ax1, 0), kiln_reduce(KILN_REDUCE_MAX, kiln_t(A), 1, ax1, 0));
                    stats2(a.h, N, C, 1, mean, var, mx, NULL);
                    for (int64_t i = 0; i < N; i++) ref[i] = qz(sqrt(var[i]) + mx[i], dt), mag[i] = fabs(mx[i]) + 2 + sqrt(var[i]);
                    break;
                }
                case X_CHAIN:
                    e = kiln_sub(kiln_relu(kiln_add(kiln_mul(kiln_t(A), kiln_t(w.view)), kiln_t(b.view))),
                                 kiln_div(kiln_sigmoid(kiln_t(A)), kiln_add(kiln_scalar(1), kiln_abs(kiln_t(w.view)))));
                    nred = 1;
                    for (int64_t i = 0; i < N; i++)
                        for (int64_t j = 0; j < C; j++) {
                            double av = a.h[i * C + j], wv = w.h[j], bv = b.h[i];
                            double t1 = av * wv + bv, t2 = 1 / (1 + exp(-av)) / (1 + fabs(wv));
                            ref[i * C + j] = qz((t1 > 0 ? t1 : 0) - t2, dt);
                            mag[i * C + j] = fabs(av * wv) + fabs(bv) + t2;
                        }
                    break;
                default: { /* X_REDRED */
                    e = kiln_sum(kiln_max(kiln_t(A), 1), 0);
                    stats2(a.h, N, C, 1, mean, var, mx, NULL);
                    double s2 = 0, sa = 0;
                    for (int64_t i = 0; i < N; i++) s2 += mx[i], sa += fabs(mx[i]);
                    ref[0] = qz(s2, dt), mag[0] = sa;
                    nred = N;
                    break;
                }
                }
                if (run_assign(name, dst, e)) {
                    double tol = tol_for(dt, compute_f64(dt), nred) * 2;
                    finish_case(name, dst, ref, mag, tol);
                }
            next:
                free(mean);
                free(var);
                free(mx);
                free(sabs);
                free(ref);
                free(mag);
                opnd_free(&a);
                opnd_free(&w);
                opnd_free(&b);
                opnd_free(&o);
            }
        }
    }
}

/* ---- GEMM -------------------------------------------------------------------------------- */

static void test_dot(void)
{
    static const int64_t sizes[4][3] = {{1, 1, 1}, {7, 13, 129}, {33, 17, 5}, {64, 3, 40}}; /* M, N, K */
    for (int d = 0; d < 4; d++) {
        kiln_dtype dt = FLOATS[d];
        for (int sz = 0; sz < 4; sz++) {
            for (int variant = 0; variant < 6; variant++) {
                int64_t M = sizes[sz][0], N = sizes[sz][1], K = sizes[sz][2];
                int ta = variant & 1, tb = (variant >> 1) & 1, batch = variant == 5;
                int relu = variant == 3 || variant == 5, use_bias = variant >= 2;
                double alpha = variant == 4 ? -0.75 : 1.5, beta = variant == 2 || variant == 4 ? -0.5 : 0.0;
                int64_t B0 = batch ? 3 : 1;
                int lay = rot++ % L_COUNT, lay2 = (rot * 3) % L_COUNT;
                char name[192];
                snprintf(name, sizeof name, "dot %s M=%lld N=%lld K=%lld trans_a=%d trans_b=%d bias=%d relu=%d alpha=%g beta=%g%s (A %s, B %s)",
                         kiln_dtype_name(dt), (long long)M, (long long)N, (long long)K, ta, tb, use_bias, relu, alpha, beta,
                         batch ? " batch 3 x broadcast B" : "", LAYOUT_NAME[lay], LAYOUT_NAME[lay2]);
                /* A passed as (B0, M, K) or (B0, K, M) when trans_a; B as (K, N) or (N, K). */
                int64_t as[3] = {B0, ta ? K : M, ta ? M : K}, bs[2] = {tb ? N : K, tb ? K : N}, cs[3] = {B0, M, N}, bias_s[1] = {N};
                opnd A, B, C, bias;
                memset(&bias, 0, sizeof bias);
                if (!make_input(dt, batch ? 3 : 2, batch ? as : as + 1, lay, -1, 1, &A)) continue;
                if (!make_input(dt, 2, bs, lay2, -1, 1, &B)) { opnd_free(&A); continue; }
                if (use_bias && !make_input(dt, 1, bias_s, L_STRIDED, -1, 1, &bias)) { opnd_free(&A); opnd_free(&B); continue; }
                int okc;
                if (beta != 0) {
                    okc = make_input(dt, batch ? 3 : 2, batch ? cs : cs + 1, rot % 3, -1, 1, &C);
                } else {
                    okc = make_output(dt, batch ? 3 : 2, batch ? cs : cs + 1, rot % 3, &C); /* NaN: beta 0 must not read C */
                }
                if (!okc) { opnd_free(&A); opnd_free(&B); opnd_free(&bias); continue; }
                int64_t n = B0 * M * N;
                double *ref = malloc(sizeof(double) * (size_t)n), *mag = malloc(sizeof(double) * (size_t)n);
                for (int64_t bb = 0; bb < B0; bb++)
                    for (int64_t m = 0; m < M; m++)
                        for (int64_t j = 0; j < N; j++) {
                            double s = 0, sa = 0;
                            for (int64_t k = 0; k < K; k++) {
                                double av = ta ? A.h[(bb * K + k) * M + m] : A.h[(bb * M + m) * K + k];
                                double bv = tb ? B.h[j * K + k] : B.h[k * N + j];
                                s += av * bv;
                                sa += fabs(av * bv);
                            }
                            double t = alpha * s + (use_bias ? bias.h[j] : 0);
                            if (relu && t < 0) t = 0;
                            int64_t ci = (bb * M + m) * N + j;
                            double cold = beta != 0 ? C.h[ci] : 0;
                            ref[ci] = qz(t + beta * cold, dt);
                            mag[ci] = fabs(alpha) * sa + (use_bias ? fabs(bias.h[j]) : 0) + fabs(beta * cold) + 1e-30;
                        }
                kiln_gemm_args args = {.trans_a = ta, .trans_b = tb, .relu = relu, .bias = use_bias ? bias.view : NULL};
                kiln_status st = kiln_dot(C.view, A.view, B.view, alpha, beta, &args);
                if (st != KILN_OK) {
                    ncases++;
                    nfails++;
                    check_failed_++;
                    printf("FAIL %s: kiln_dot returned %s: %s\n", name, kiln_status_name(st), kiln_last_error(ctx));
                } else {
                    finish_case(name, &C, ref, mag, tol_for(dt, compute_f64(dt), K));
                }
                free(ref);
                free(mag);
                opnd_free(&A);
                opnd_free(&B);
                opnd_free(&C);
                opnd_free(&bias);
            }
        }
    }
}

/* ---- random numbers ------------------------------------------------------------------------ */

/* Reports a statistics case. */
static void stat_case(const char *name, int ok, const char *detail)
{
    ncases++;
    if (ok) {
        check_passed_++;
    } else {
        nfails++;
        check_failed_++;
        printf("FAIL %s: %s\n", name, detail);
    }
}

/* Finds the Philox stream s (near the context's counter) for which f(seed, s, i) matches
 * every element; -1 when none. */
static int64_t find_stream(const double *got, int64_t n, uint64_t seed, int kind, double p)
{
    for (uint64_t s = 0; s < 64; s++) {
        int64_t i;
        for (i = 0; i < n; i++) {
            double want = kind == 0 ? kiln_rng_uniform(seed, s, (kiln_u64)i)
                          : kind == 1 ? kiln_rng_normal(seed, s, (kiln_u64)i)
                                      : kiln_rng_bernoulli(seed, s, (kiln_u64)i, (float)p);
            if (got[i] != want) break;
        }
        if (i == n) return (int64_t)s;
    }
    return -1;
}

static void test_random(void)
{
    const uint64_t seed = 0x5EEDull + (rs & 0xFFFF);
    char detail[256];
    const int64_t S[2] = {256, 257};
    const int64_t n = S[0] * S[1];
    for (int lay = 0; lay < 3; lay++) {
        kiln_ctx_set_seed(ctx, seed);
        opnd o;
        /* rand */
        if (!make_output(KILN_DTYPE_F32, 2, S, lay, &o)) return;
        if (run_assign("rand", &o, kiln_rand())) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            double sum = 0, sq = 0;
            int range = 1;
            for (int64_t i = 0; i < n; i++) {
                sum += g[i], sq += g[i] * g[i];
                if (!(g[i] >= 0 && g[i] < 1)) range = 0;
            }
            double mean = sum / n, var = sq / n - mean * mean;
            snprintf(detail, sizeof detail, "range ok %d, mean %.5f (0.5 +- %.5f), var %.5f (0.08333)", range, mean, 6 * sqrt(1.0 / 12 / n), var);
            stat_case("rand statistics", range && fabs(mean - 0.5) < 6 * sqrt(1.0 / 12 / n) && fabs(var - 1.0 / 12) < 6 * sqrt(1.0 / 180 / n), detail);
            int64_t s = find_stream(g, n, seed, 0, 0);
            snprintf(detail, sizeof detail, "no Philox stream 0..63 of seed %llu gives kiln_rng_uniform(seed, stream, row-major index) for every element (%s dst)",
                     (unsigned long long)seed, LAYOUT_NAME[lay]);
            stat_case("rand bits follow src/core/numeric.h", s >= 0, detail);
            free(g);
        }
        opnd_free(&o);
        /* randn */
        if (!make_output(KILN_DTYPE_F32, 2, S, (lay + 1) % 3, &o)) return;
        if (run_assign("randn", &o, kiln_randn())) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            double s1 = 0, s2 = 0, s4 = 0;
            int64_t tail = 0;
            for (int64_t i = 0; i < n; i++) {
                s1 += g[i], s2 += g[i] * g[i], s4 += g[i] * g[i] * g[i] * g[i];
                tail += fabs(g[i]) > 3;
            }
            double m = s1 / n, v = s2 / n, k4 = s4 / n, tf = (double)tail / n;
            snprintf(detail, sizeof detail, "mean %.5f var %.5f m4 %.4f tail %.6f (0, 1, 3, 0.0027)", m, v, k4, tf);
            stat_case("randn statistics",
                      fabs(m) < 6 / sqrt((double)n) && fabs(v - 1) < 6 * sqrt(2.0 / n) && fabs(k4 - 3) < 6 * sqrt(96.0 / n) &&
                          fabs(tf - 0.0026998) < 6 * sqrt(0.0027 / n),
                      detail);
            int64_t s = find_stream(g, n, seed, 1, 0);
            snprintf(detail, sizeof detail, "no Philox stream 0..63 of seed %llu gives kiln_rng_normal for every element", (unsigned long long)seed);
            stat_case("randn bits follow src/core/numeric.h", s >= 0, detail);
            free(g);
        }
        opnd_free(&o);
    }
    /* bernoulli and dropout, in f16 and bf16 destinations too */
    for (int d = 0; d < 4; d++) {
        kiln_dtype dt = FLOATS[d];
        opnd o, x;
        const double p = 0.3;
        kiln_ctx_set_seed(ctx, seed + 1);
        if (!make_output(dt, 2, S, rot++ % 3, &o)) return;
        char name[96];
        snprintf(name, sizeof name, "bernoulli(0.3) %s", kiln_dtype_name(dt));
        if (run_assign(name, &o, kiln_bernoulli(p))) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            int64_t ones = 0, other = 0;
            for (int64_t i = 0; i < n; i++) ones += g[i] == 1, other += g[i] != 0 && g[i] != 1;
            double f = (double)ones / n;
            snprintf(detail, sizeof detail, "fraction of ones %.5f (0.3), %lld values neither 0 nor 1", f, (long long)other);
            stat_case(name, other == 0 && fabs(f - p) < 6 * sqrt(p * (1 - p) / n), detail);
            free(g);
        }
        opnd_free(&o);
        /* dropout(x, 0.25) = x * bernoulli(0.75) / 0.75 */
        snprintf(name, sizeof name, "dropout(x, 0.25) %s", kiln_dtype_name(dt));
        if (!make_input(dt, 2, S, rot++ % L_COUNT, 0.5, 2, &x)) return;
        if (!make_output(dt, 2, S, rot % 3, &o)) { opnd_free(&x); return; }
        if (run_assign(name, &o, kiln_dropout(kiln_t(x.view), 0.25))) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            int64_t kept = 0, bad = 0;
            for (int64_t i = 0; i < n; i++) {
                if (g[i] == 0) continue;
                kept++;
                double want = qz(x.h[i] / 0.75, dt);
                if (fabs(g[i] - want) > tol_for(dt, compute_f64(dt), 1) * fabs(want)) bad++;
            }
            double f = (double)kept / n;
            snprintf(detail, sizeof detail, "kept fraction %.5f (0.75), %lld kept values differ from x/0.75", f, (long long)bad);
            stat_case(name, bad == 0 && fabs(f - 0.75) < 6 * sqrt(0.75 * 0.25 / n), detail);
            free(g);
        }
        opnd_free(&o);
        opnd_free(&x);
    }
    /* rand in an expression, and one generator node used twice gives the same numbers */
    {
        opnd o;
        kiln_ctx_set_seed(ctx, seed + 2);
        if (!make_output(KILN_DTYPE_F32, 2, S, L_TRANS, &o)) return;
        kiln_expr *r = kiln_rand();
        kiln_expr_retain(r);
        if (run_assign("rand() - rand() (one node used twice)", &o, kiln_sub(r, r))) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            int64_t nz = 0;
            for (int64_t i = 0; i < n; i++) nz += g[i] != 0;
            snprintf(detail, sizeof detail, "%lld of %lld elements nonzero", (long long)nz, (long long)n);
            stat_case("one generator node used twice gives the same numbers", nz == 0, detail);
            free(g);
        }
        if (run_assign("2*rand()-1", &o, kiln_sub(kiln_mul(kiln_scalar(2), kiln_rand()), kiln_scalar(1)))) {
            double *g = malloc(sizeof(double) * (size_t)n);
            kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
            double sum = 0;
            int range = 1;
            for (int64_t i = 0; i < n; i++) sum += g[i], range &= g[i] >= -1 && g[i] < 1;
            snprintf(detail, sizeof detail, "range ok %d mean %.5f", range, sum / n);
            stat_case("2*rand()-1 statistics", range && fabs(sum / n) < 6 * sqrt(1.0 / 3 / n), detail);
            free(g);
        }
        opnd_free(&o);
        /* reseeding repeats the numbers */
        opnd o1, o2;
        if (make_output(KILN_DTYPE_F32, 2, S, L_CONTIG, &o1) && make_output(KILN_DTYPE_F32, 2, S, L_STRIDED, &o2)) {
            kiln_ctx_set_seed(ctx, 77);
            int ok = run_assign("randn after seed 77", &o1, kiln_randn());
            kiln_ctx_set_seed(ctx, 77);
            ok = ok && run_assign("randn after seed 77 again", &o2, kiln_randn());
            if (ok) {
                double *g1 = malloc(sizeof(double) * (size_t)n), *g2 = malloc(sizeof(double) * (size_t)n);
                kiln_tensor_read(o1.view, g1, KILN_DTYPE_F64);
                kiln_tensor_read(o2.view, g2, KILN_DTYPE_F64);
                int64_t diff = 0;
                for (int64_t i = 0; i < n; i++) diff += g1[i] != g2[i];
                snprintf(detail, sizeof detail, "%lld elements differ", (long long)diff);
                stat_case("kiln_ctx_set_seed repeats the numbers", diff == 0, detail);
                free(g1);
                free(g2);
            }
        }
        opnd_free(&o1);
        opnd_free(&o2);
    }
}

/* ---- stochastic rounding through an assignment ----------------------------------------------- */

/* The two values of dt around v: truncated toward zero, and one step further. */
static void neighbours(double v, kiln_dtype dt, double *lo, double *hi)
{
    int mb = dt == KILN_DTYPE_BF16 ? 7 : 10, e;
    frexp(fabs(v), &e); /* |v| in [2^(e-1), 2^e) */
    double u = ldexp(1.0, e - 1 - mb);
    *lo = copysign(floor(fabs(v) / u) * u, v);
    *hi = *lo + copysign(u, v);
}

static void test_sr(void)
{
    const int64_t S[2] = {256, 256};
    const int64_t n = S[0] * S[1];
    char detail[256];
    for (int bf = 0; bf < 2; bf++) {
        kiln_dtype dt = bf ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
        /* x = 1 + 0.3 ulp everywhere: RN gives 1 (a systematic error of 0.3 ulp); SR's mean is x */
        double ulp = bf ? ldexp(1, -7) : ldexp(1, -10);
        const double v1 = qz(1 + 0.3 * ulp, KILN_DTYPE_F32), v2 = qz(-3 * (1 + 0.3 * ulp), KILN_DTYPE_F32);
        for (int mode = 0; mode < 2; mode++) {
            opnd x, o;
            if (!make_input(KILN_DTYPE_F32, 2, S, rot++ % L_COUNT, 0, 1, &x)) return;
            for (int64_t i = 0; i < n; i++) x.h[i] = (i & 1) ? v1 : v2; /* two values between neighbours */
            if (!opnd_upload(&x)) { opnd_free(&x); return; }
            if (!make_output(dt, 2, S, mode ? L_TRANS : L_CONTIG, &o)) { opnd_free(&x); return; }
            kiln_ctx_set_seed(ctx, 4242);
            kiln_assign_args args = {.round = mode ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST};
            char name[96];
            snprintf(name, sizeof name, "%s assignment to %s", mode ? "stochastic" : "nearest", kiln_dtype_name(dt));
            kiln_status st = kiln_assign_ex(o.view, kiln_t(x.view), &args);
            if (st != KILN_OK) {
                stat_case(name, 0, kiln_last_error(ctx));
            } else {
                double *g = malloc(sizeof(double) * (size_t)n);
                kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
                double err = 0;
                int64_t bad = 0;
                for (int64_t i = 0; i < n; i++) {
                    double want = x.h[i];
                    err += g[i] - want;
                    /* always one of the two neighbours */
                    double lo, hi;
                    neighbours(want, dt, &lo, &hi);
                    if (!(g[i] == lo || g[i] == hi)) bad++;
                }
                double mean_err = err / n;
                /* per element the SR error has sd ~ 0.46 ulp (0.3 ulp) or 0.9 ulp (-3x: 0.6 of 2 ulp) */
                double se = 1.0 * ulp / sqrt((double)n);
                if (mode) {
                    snprintf(detail, sizeof detail, "mean error %.3g ulp (want 0 +- %.3g), %lld values not a neighbour", mean_err / ulp, 6 * se / ulp, (long long)bad);
                    stat_case(name, fabs(mean_err) < 6 * se && bad == 0, detail);
                    /* the bits: kiln_f32_to_*_sr(x, kiln_rng_bits(seed, stream, row-major index)) for one stream */
                    int64_t found = -1;
                    for (uint64_t s = 0; s < 64 && found < 0; s++) {
                        int64_t i;
                        for (i = 0; i < n; i++) {
                            kiln_u32 b = kiln_rng_bits(4242, s, (kiln_u64)i);
                            float xf = (float)x.h[i];
                            double want = bf ? kiln_bf16_to_f32(kiln_f32_to_bf16_sr(xf, b)) : kiln_f16_to_f32(kiln_f32_to_f16_sr(xf, b));
                            if (g[i] != want) break;
                        }
                        if (i == n) found = (int64_t)s;
                    }
                    stat_case("stochastic rounding bits follow src/core/numeric.h", found >= 0,
                              "no Philox stream 0..63 of seed 4242 gives kiln_f32_to_*_sr(x, kiln_rng_bits(seed, stream, index))");
                } else {
                    /* RN: 1 for the first value, and for -3x the nearest; error systematic */
                    double sys = ((qz(v1, dt) - v1) + (qz(v2, dt) - v2)) / 2;
                    snprintf(detail, sizeof detail, "mean error %.3g ulp, want the systematic %.3g ulp", mean_err / ulp, sys / ulp);
                    stat_case(name, fabs(mean_err - sys) < 1e-9 * ulp && fabs(sys) > 0.1 * ulp, detail);
                }
                free(g);
            }
            opnd_free(&x);
            opnd_free(&o);
        }
    }
    /* The context's setting applies when the call does not say. */
    {
        opnd x, o;
        kiln_dtype dt = KILN_DTYPE_F16;
        double xv = qz(1 + 0.3 * ldexp(1, -10), KILN_DTYPE_F32);
        if (!make_input(KILN_DTYPE_F32, 2, S, L_CONTIG, 0, 1, &x)) return;
        for (int64_t i = 0; i < n; i++) x.h[i] = xv;
        if (opnd_upload(&x) && make_output(dt, 2, S, L_CONTIG, &o)) {
            kiln_ctx_set_round(ctx, KILN_ROUND_STOCHASTIC);
            if (run_assign("stochastic by the context", &o, kiln_mul(kiln_t(x.view), kiln_scalar(1)))) {
                double *g = malloc(sizeof(double) * (size_t)n);
                kiln_tensor_read(o.view, g, KILN_DTYPE_F64);
                int64_t up = 0;
                for (int64_t i = 0; i < n; i++) up += g[i] > 1;
                double f = (double)up / n;
                snprintf(detail, sizeof detail, "fraction rounded up %.4f (0.3)", f);
                stat_case("stochastic rounding set on the context", fabs(f - 0.3) < 6 * sqrt(0.21 / n), detail);
                free(g);
            }
            kiln_ctx_set_round(ctx, KILN_ROUND_NEAREST);
        }
        opnd_free(&x);
        opnd_free(&o);
    }
}

int main(void)
{
    rs = check_seed();
    kiln_status st = kiln_ctx_create(&ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "oracle: kiln_ctx_create: %s\n", kiln_last_error(NULL));
        return 1;
    }
    printf("oracle: backend %s (%s)\n", kiln_ctx_backend_name(ctx), kiln_ctx_device_description(ctx));
    struct { const char *name; void (*fn)(void); } groups[] = {
        {"unary", test_unary},           {"binary", test_binary},         {"mixed", test_mixed},
        {"where/clip/cast", test_where_clip_cast}, {"reductions", test_reductions}, {"expressions", test_expressions},
        {"dot", test_dot},               {"random", test_random},         {"stochastic rounding", test_sr},
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        int c0 = ncases, f0 = nfails;
        groups[g].fn();
        printf("oracle: %-20s %4d cases, %d failed\n", groups[g].name, ncases - c0, nfails - f0);
    }
    kiln_ctx_synchronize(ctx);
    /* Everything was released: no live blocks remain (temporaries included). */
    kiln_mem_stats ms;
    if (kiln_mem_get_stats(ctx, &ms) == KILN_OK) {
        if (ms.live_blocks != 0) printf("FAIL %lld blocks still live after every tensor was released\n", (long long)ms.live_blocks);
        CHECK_INT(ms.live_blocks, 0);
    }
    printf("oracle: %d cases, %d failed (backend %s); %d operands were non-contiguous views\n", ncases, nfails,
           kiln_ctx_backend_name(ctx), n_noncontig);
    CHECK(n_noncontig > ncases); /* the layouts really are non-contiguous */
    kiln_ctx_destroy(ctx);
    return check_finish();
}
