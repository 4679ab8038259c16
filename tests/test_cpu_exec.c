/*
 * tests/test_cpu_exec.c — the CPU plan interpreter (src/cpu/exec.c) run on hand-built
 * kiln_plan kernels, compared with f64 references computed here: element-wise chains with
 * broadcast and transposed inputs into strided outputs, row and column reductions (FULL
 * and ROW outputs, several passes, in place), arg*, CAST, f16/bf16 stores with nearest and
 * stochastic rounding, RAND/RANDN/BERNOULLI indices, empty and rank-0 domains, malformed
 * plans. Also the backend's strided read/write. Outputs are poisoned before every run.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "cpu_kernels.h"

/* ---- element-wise --------------------------------------------------------------------- */

/* out[i, j] (a strided view) = relu(A[i, j] * Bt^T[i, j] + bias[j]) - sigmoid(c[i]) * exp(-A)
 *                              + where(A > 0.5, 2, 3)
 * A is (7, 129), Bt is (129, 7) read transposed, bias (129,), c (7, 1) broadcast. */
static void test_ew_chain(int f64)
{
    const int64_t M = 7, N = 129;
    double *ha = malloc(sizeof(double) * M * N), *hb = malloc(sizeof(double) * M * N);
    double hbias[129], hc[7];
    kiln_tensor *A = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){M, N}), -1, 1, ha);
    kiln_tensor *Bt = rand_tensor(KILN_DTYPE_F16, 2, ((int64_t[]){N, M}), -2, 2, hb);
    kiln_tensor *bias = rand_tensor(KILN_DTYPE_F64, 1, ((int64_t[]){N}), -1, 1, hbias);
    kiln_tensor *c = rand_tensor(KILN_DTYPE_BF16, 2, ((int64_t[]){M, 1}), -3, 3, hc);
    kiln_tensor *BtT = NULL, *big = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){M, 2 * N})), *out = NULL;
    CHECK_OK(g_ctx, kiln_tensor_transpose(Bt, 0, 1, &BtT));
    kiln_slice sl[2] = {KILN_SLICE_ALL, KILN_SLICE_STEP(1, KILN_NONE, 2)};
    CHECK_OK(g_ctx, kiln_tensor_slice(big, 2, sl, &out));

    kb b;
    kb_init(&b, 2, ((int64_t[]){M, N}), 0, f64);
    int ia = kb_input(&b, A, ((int[]){0, 1}));
    int ib = kb_input(&b, BtT, ((int[]){0, 1}));
    int ibias = kb_input(&b, bias, ((int[]){-1, 0}));
    int ic = kb_input(&b, c, ((int[]){0, 1}));
    int la = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, ia, 0, 0);
    int lb = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, ib, 0, 0);
    int lbias = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, ibias, 0, 0);
    int lc = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_ROW, ic, 0, 0); /* ROW in an EW kernel: same thing */
    int m = kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, la, lb, 0);
    int r = kb_op(&b, KILN_POP_RELU, KILN_SPACE_FULL, kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, m, lbias, 0), 0, 0);
    int sg = kb_op(&b, KILN_POP_SIGMOID, KILN_SPACE_ROW, lc, 0, 0);
    int e = kb_op(&b, KILN_POP_EXP, KILN_SPACE_FULL, kb_op(&b, KILN_POP_NEG, KILN_SPACE_FULL, la, 0, 0), 0, 0);
    int t1 = kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, r, kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, sg, e, 0), 0);
    int cond = kb_op(&b, KILN_POP_GT, KILN_SPACE_FULL, la,
                     kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 0.5), 0, 0), 0);
    int two = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 2.0), 0, 0);
    int three = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 3.0), 0, 0);
    int wh = kb_op(&b, KILN_POP_WHERE, KILN_SPACE_FULL, cond, two, three);
    int res = kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, t1, wh, 0);
    kb_out(&b, out, ((int[]){0, 1}), 0, res);
    CHECK_OK(g_ctx, kb_run(&b));

    double *got = read_all(big);
    double *want = malloc(sizeof(double) * M * 2 * N);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < 2 * N; j++) {
            double w = NAN;
            if (j % 2 == 1) {
                int64_t jj = j / 2;
                double av = ha[i * N + jj], bv = hb[jj * M + i];
                double x = av * bv + hbias[jj];
                x = x > 0 ? x : 0;
                w = x - 1.0 / (1.0 + exp(-hc[i])) * exp(-av) + (av > 0.5 ? 2.0 : 3.0);
            }
            want[i * 2 * N + j] = w;
        }
    check_array(f64 ? "ew chain f64" : "ew chain f32", got, want, M * 2 * N, f64 ? 1e-7 : 2e-6);
    free(got);
    free(want);
    free(ha);
    free(hb);
    kiln_tensor_release(A);
    kiln_tensor_release(Bt);
    kiln_tensor_release(BtT);
    kiln_tensor_release(bias);
    kiln_tensor_release(c);
    kiln_tensor_release(big);
    kiln_tensor_release(out);
}

static double ref_unary(kiln_pop op, double v)
{
    switch (op) {
    case KILN_POP_NEG: return -v;
    case KILN_POP_ABS: return fabs(v);
    case KILN_POP_SQR: return v * v;
    case KILN_POP_SQRT: return sqrt(v);
    case KILN_POP_RSQRT: return 1 / sqrt(v);
    case KILN_POP_RECIP: return 1 / v;
    case KILN_POP_EXP: return exp(v);
    case KILN_POP_EXP2: return exp2(v);
    case KILN_POP_LOG: return log(v);
    case KILN_POP_LOG2: return log2(v);
    case KILN_POP_SIGMOID: return 1 / (1 + exp(-v));
    case KILN_POP_TANH: return tanh(v);
    case KILN_POP_RELU: return v < 0 ? 0 : v;
    case KILN_POP_FINITE: return isfinite(v) ? 1 : 0;
    case KILN_POP_SIGN: return v > 0 ? 1 : (v < 0 ? -1 : v);
    case KILN_POP_LOG1P: return log1p(v);
    case KILN_POP_EXPM1: return expm1(v);
    case KILN_POP_SIN: return sin(v);
    case KILN_POP_COS: return cos(v);
    case KILN_POP_ERF: return erf(v);
    case KILN_POP_FLOOR: return floor(v);
    case KILN_POP_CEIL: return ceil(v);
    case KILN_POP_RINT: return rint(v);
    case KILN_POP_TRUNC: return trunc(v);
    default: return NAN;
    }
}

static double ref_binary(kiln_pop op, double v, double w)
{
    switch (op) {
    case KILN_POP_ADD: return v + w;
    case KILN_POP_SUB: return v - w;
    case KILN_POP_MUL: return v * w;
    case KILN_POP_DIV: return v / w;
    case KILN_POP_POW: return pow(v, w);
    case KILN_POP_FMOD: return fmod(v, w);
    case KILN_POP_MAX: return (isnan(v) || isnan(w)) ? NAN : (v > w ? v : w);
    case KILN_POP_MIN: return (isnan(v) || isnan(w)) ? NAN : (v < w ? v : w);
    case KILN_POP_EQ: return v == w;
    case KILN_POP_NE: return v != w;
    case KILN_POP_LT: return v < w;
    case KILN_POP_LE: return v <= w;
    case KILN_POP_GT: return v > w;
    case KILN_POP_GE: return v >= w;
    default: return NAN;
    }
}

/* Every unary and binary opcode on (3, 131) f32 data (positive, with a few specials), both
 * compute types. */
static void test_all_ops(int f64)
{
    const int64_t R = 3, C = 131, n = R * C;
    double *ha = malloc(sizeof(double) * n), *hb = malloc(sizeof(double) * n);
    check_fill(&g_seed, ha, n, 0.05, 3);
    check_fill(&g_seed, hb, n, 0.05, 3);
    for (int64_t i = 0; i < n; i += 17) ha[i] = -ha[i]; /* some negatives */
    ha[5] = NAN;
    ha[6] = INFINITY;
    ha[7] = 0.0;
    ha[8] = hb[8]; /* equal pair */
    hb[9] = NAN;
    kiln_tensor *A = NULL, *B = NULL;
    CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F32, 2, ((int64_t[]){R, C}), ha, KILN_DTYPE_F64, &A));
    CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F32, 2, ((int64_t[]){R, C}), hb, KILN_DTYPE_F64, &B));
    CHECK_OK(g_ctx, kiln_tensor_read(A, ha, KILN_DTYPE_F64));
    CHECK_OK(g_ctx, kiln_tensor_read(B, hb, KILN_DTYPE_F64));
    double *want = malloc(sizeof(double) * n);
    for (int op = KILN_POP_NEG; op <= KILN_POP_GE; op++) {
        if (op == KILN_POP_CAST) continue;
        kiln_tensor *out = poison_tensor(KILN_DTYPE_F64, 2, ((int64_t[]){R, C}));
        kb b;
        kb_init(&b, 2, ((int64_t[]){R, C}), 0, f64);
        int la = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, A, ((int[]){0, 1})), 0, 0);
        int lb = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, B, ((int[]){0, 1})), 0, 0);
        int binary = op >= KILN_POP_ADD;
        int r = kb_op(&b, (kiln_pop)op, KILN_SPACE_FULL, la, binary ? lb : 0, 0);
        kb_out(&b, out, ((int[]){0, 1}), 0, r);
        CHECK_OK(g_ctx, kb_run(&b));
        for (int64_t i = 0; i < n; i++)
            want[i] = binary ? ref_binary((kiln_pop)op, ha[i], hb[i]) : ref_unary((kiln_pop)op, ha[i]);
        double *got = read_all(out);
        char what[64];
        snprintf(what, sizeof what, "op %s (%s)", kiln__pop_name((kiln_pop)op), f64 ? "f64" : "f32");
        check_array(what, got, want, n, f64 ? 1e-12 : 4e-6);
        free(got);
        kiln_tensor_release(out);
    }
    free(want);
    free(ha);
    free(hb);
    kiln_tensor_release(A);
    kiln_tensor_release(B);
}

/* ---- reductions ----------------------------------------------------------------------- */

/* Batch-norm shape: out = (x - mean(x, 1)) * rsqrt(var(x, 1) + eps), x (N, C), two passes and
 * a FULL output; in place when inplace is set. C long (several blocks per row) or short
 * (several rows per block). */
static void test_batchnorm(int64_t N, int64_t C, int f64, int inplace)
{
    double *hx = malloc(sizeof(double) * N * C);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -2, 5, hx);
    kiln_tensor *out = inplace ? kiln_tensor_retain(X) : poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    const double eps = 1e-5;
    kb b;
    kb_init(&b, 2, ((int64_t[]){N, C}), 2u, f64);
    int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
    int s1 = kb_red(&b, KILN_POP_RED_SUM, lx, 0);
    int invc = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 1.0 / (double)C), 0, 0);
    int mean = kb_op(&b, KILN_POP_MUL, KILN_SPACE_ROW, s1, invc, 0);
    int d = kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, mean, 0);
    int s2 = kb_red(&b, KILN_POP_RED_SUM, kb_op(&b, KILN_POP_SQR, KILN_SPACE_FULL, d, 0, 0), 1);
    int var = kb_op(&b, KILN_POP_MUL, KILN_SPACE_ROW, s2, invc, 0);
    int ve = kb_op(&b, KILN_POP_ADD, KILN_SPACE_ROW, var,
                   kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, eps), 0, 0), 0);
    int rs = kb_op(&b, KILN_POP_RSQRT, KILN_SPACE_ROW, ve, 0, 0);
    int res = kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, d, rs, 0);
    kb_out(&b, out, ((int[]){0, 1}), 0, res);
    CHECK_OK(g_ctx, kb_run(&b));
    double *want = malloc(sizeof(double) * N * C);
    for (int64_t i = 0; i < N; i++) {
        double m = 0, v = 0;
        for (int64_t j = 0; j < C; j++) m += hx[i * C + j];
        m /= (double)C;
        for (int64_t j = 0; j < C; j++) v += (hx[i * C + j] - m) * (hx[i * C + j] - m);
        v /= (double)C;
        for (int64_t j = 0; j < C; j++) want[i * C + j] = (hx[i * C + j] - m) / sqrt(v + eps);
    }
    double *got = read_all(out);
    char what[96];
    snprintf(what, sizeof what, "batchnorm (%lld, %lld) %s%s", (long long)N, (long long)C, f64 ? "f64" : "f32",
             inplace ? " in place" : "");
    check_array(what, got, want, N * C, 2e-5);
    free(got);
    free(want);
    free(hx);
    kiln_tensor_release(X);
    kiln_tensor_release(out);
}

/* Column-style: mean over axis 0 of x (N, C) into a ROW output (C,), and x - mean(x, 0) into a
 * FULL output; x is read through a transposed view for the second case (lanes strided). */
static void test_column(int64_t N, int64_t C, int f64, int transposed)
{
    double *hx = malloc(sizeof(double) * N * C);
    kiln_tensor *X = NULL, *Xs = NULL;
    if (transposed) { /* storage (C, N), view (N, C) */
        double *tmp = malloc(sizeof(double) * N * C);
        Xs = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){C, N}), -1, 3, tmp);
        CHECK_OK(g_ctx, kiln_tensor_transpose(Xs, 0, 1, &X));
        for (int64_t i = 0; i < N; i++)
            for (int64_t j = 0; j < C; j++) hx[i * C + j] = tmp[j * N + i];
        free(tmp);
    } else {
        X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -1, 3, hx);
    }
    kiln_tensor *mean_out = poison_tensor(KILN_DTYPE_F64, 1, ((int64_t[]){C}));
    kiln_tensor *full_out = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    double *want_m = malloc(sizeof(double) * C), *want_f = malloc(sizeof(double) * N * C);
    for (int64_t j = 0; j < C; j++) {
        double s = 0;
        for (int64_t i = 0; i < N; i++) s += hx[i * C + j];
        want_m[j] = s / (double)N;
        for (int64_t i = 0; i < N; i++) want_f[i * C + j] = hx[i * C + j] - want_m[j];
    }
    for (int full = 0; full < 2; full++) {
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), 1u, f64);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
        int s = kb_red(&b, KILN_POP_RED_SUM, lx, 0);
        int m = kb_op(&b, KILN_POP_MUL, KILN_SPACE_ROW, s,
                      kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 1.0 / (double)N), 0, 0), 0);
        if (full)
            kb_out(&b, full_out, ((int[]){0, 1}), 0, kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, m, 0));
        else
            kb_out(&b, mean_out, ((int[]){-1, 0}), 1, m);
        CHECK_OK(g_ctx, kb_run(&b));
    }
    double *gm = read_all(mean_out), *gf = read_all(full_out);
    char what[96];
    snprintf(what, sizeof what, "column mean (%lld, %lld) %s%s", (long long)N, (long long)C, f64 ? "f64" : "f32",
             transposed ? " transposed" : "");
    check_array(what, gm, want_m, C, 1e-5);
    check_array(what, gf, want_f, N * C, 1e-5);
    free(gm);
    free(gf);
    free(want_m);
    free(want_f);
    free(hx);
    kiln_tensor_release(X);
    kiln_tensor_release(Xs);
    kiln_tensor_release(mean_out);
    kiln_tensor_release(full_out);
}

/* ROW outputs of every reduction over the given axes of x (4, 5, 6), with NaNs and ties:
 * SUM, MAX, MIN, ARGMAX, ARGMIN (i32 output). The reduced axes may be any subset. */
static void test_reduce_axes(uint32_t mask, int f64, int strided)
{
    const int64_t shape[3] = {4, 5, 6};
    double hx[120];
    check_fill(&g_seed, hx, 120, -4, 4);
    for (int i = 0; i < 120; i += 7) hx[i] = round(hx[i]); /* ties */
    hx[13] = NAN;
    hx[77] = NAN;
    hx[78] = NAN;
    kiln_tensor *X = NULL;
    if (strided) { /* X = big[:, ::2, :] of a (4, 10, 6) big: its axes do not merge */
        kiln_tensor *big = rand_tensor(KILN_DTYPE_F32, 3, ((int64_t[]){4, 10, 6}), -1, 1, NULL);
        kiln_slice sl[2] = {KILN_SLICE_ALL, KILN_SLICE_STEP(KILN_NONE, KILN_NONE, 2)};
        CHECK_OK(g_ctx, kiln_tensor_slice(big, 2, sl, &X));
        CHECK_OK(g_ctx, kiln_tensor_write(X, hx, KILN_DTYPE_F64));
        CHECK_OK(g_ctx, kiln_tensor_read(X, hx, KILN_DTYPE_F64));
        kiln_tensor_release(big);
    } else {
        CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F32, 3, shape, hx, KILN_DTYPE_F64, &X));
    }
    /* outer shape: the kept axes */
    int64_t oshape[3];
    int ond = 0, omap[3];
    for (int a = 0; a < 3; a++) {
        if (mask >> a & 1u) {
            omap[a] = -1;
        } else {
            omap[a] = ond;
            oshape[ond++] = shape[a];
        }
    }
    int64_t on = 1, in_n = 1;
    for (int a = 0; a < 3; a++) {
        if (mask >> a & 1u)
            in_n *= shape[a];
        else
            on *= shape[a];
    }
    const kiln_pop ops[5] = {KILN_POP_RED_SUM, KILN_POP_RED_MAX, KILN_POP_RED_MIN, KILN_POP_RED_ARGMAX,
                             KILN_POP_RED_ARGMIN};
    for (int q = 0; q < 5; q++) {
        kiln_dtype odt = q >= 3 ? KILN_DTYPE_I32 : KILN_DTYPE_F32;
        kiln_tensor *out = poison_tensor(odt, ond, oshape);
        kb b;
        kb_init(&b, 3, shape, mask, f64);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1, 2})), 0, 0);
        int r = kb_red(&b, ops[q], lx, 0);
        kb_out(&b, out, omap, 1, r);
        CHECK_OK(g_ctx, kb_run(&b));
        double *want = malloc(sizeof(double) * (size_t)on);
        /* reference: iterate outer points row-major, inner points row-major */
        for (int64_t o = 0; o < on; o++) {
            int64_t oi[3] = {0, 0, 0}, rem = o;
            for (int a = 2; a >= 0; a--)
                if (!(mask >> a & 1u)) {
                    oi[a] = rem % shape[a];
                    rem /= shape[a];
                }
            double acc = q == 0 ? 0 : (q == 1 || q == 3 ? -INFINITY : INFINITY);
            int64_t best = 0;
            int have_nan = 0;
            for (int64_t k = 0; k < in_n; k++) {
                int64_t ii[3] = {oi[0], oi[1], oi[2]}, rk = k;
                for (int a = 2; a >= 0; a--)
                    if (mask >> a & 1u) {
                        ii[a] = rk % shape[a];
                        rk /= shape[a];
                    }
                double v = hx[(ii[0] * 5 + ii[1]) * 6 + ii[2]];
                if (q == 0) acc += v;
                if (q == 1 || q == 2) {
                    if (isnan(v))
                        have_nan = 1;
                    else if (q == 1 ? v > acc : v < acc)
                        acc = v;
                }
                if ((q == 3 || q == 4) && !have_nan) {
                    if (isnan(v)) {
                        have_nan = 1;
                        best = k;
                    } else if (q == 3 ? v > acc : v < acc) {
                        acc = v;
                        best = k;
                    }
                }
            }
            want[o] = q >= 3 ? (double)best : (have_nan ? NAN : acc);
        }
        double *got = read_all(out);
        char what[64];
        snprintf(what, sizeof what, "reduce %s mask 0x%x %s%s", kiln__pop_name(ops[q]), (unsigned)mask,
                 f64 ? "f64" : "f32", strided ? " strided" : "");
        check_array(what, got, want, on, 1e-5);
        free(got);
        free(want);
        kiln_tensor_release(out);
    }
    kiln_tensor_release(X);
}

/* ROW-space loads (per-row and per-column parameters, strides 0 on the reduced axis) and a
 * ROW value stored into a FULL output (broadcast back), in row style and column style:
 *   row style    (reduce axis 1): out1[i, j] = sum_j((x[i, j] - g[i])^2) * h[i]   (FULL out)
 *   column style (reduce axis 0): out2[j]    = max_i(x[i, j] * g2[j]) + h2[j]    (ROW out,
 *                                 into a strided view) */
static void test_row_loads(int64_t N, int64_t C, int f64)
{
    double *hx = malloc(sizeof(double) * N * C), *hg = malloc(sizeof(double) * N), *hh = malloc(sizeof(double) * N);
    double *hg2 = malloc(sizeof(double) * C), *hh2 = malloc(sizeof(double) * C);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -2, 2, hx);
    kiln_tensor *G = rand_tensor(KILN_DTYPE_F16, 2, ((int64_t[]){N, 1}), -1, 1, hg);
    kiln_tensor *H = rand_tensor(KILN_DTYPE_F64, 1, ((int64_t[]){N}), 0.5, 1.5, hh);
    kiln_tensor *G2 = rand_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){C}), -1, 1, hg2);
    kiln_tensor *H2 = rand_tensor(KILN_DTYPE_BF16, 2, ((int64_t[]){1, C}), -1, 1, hh2);
    kiln_tensor *out1 = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    kiln_tensor *big2 = poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){3 * C})), *out2 = NULL;
    kiln_slice sl = KILN_SLICE_STEP(2, KILN_NONE, 3);
    CHECK_OK(g_ctx, kiln_tensor_slice(big2, 1, &sl, &out2));
    {
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), 2u, f64);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
        int lg = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_ROW, kb_input(&b, G, ((int[]){0, 1})), 0, 0);
        int lh = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_ROW, kb_input(&b, H, ((int[]){0, -1})), 0, 0);
        int d = kb_op(&b, KILN_POP_SQR, KILN_SPACE_FULL, kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, lg, 0), 0, 0);
        int r = kb_op(&b, KILN_POP_MUL, KILN_SPACE_ROW, kb_red(&b, KILN_POP_RED_SUM, d, 0), lh, 0);
        kb_out(&b, out1, ((int[]){0, 1}), 0, r);
        CHECK_OK(g_ctx, kb_run(&b));
    }
    {
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), 1u, f64);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
        int lg = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_ROW, kb_input(&b, G2, ((int[]){-1, 0})), 0, 0);
        int lh = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_ROW, kb_input(&b, H2, ((int[]){0, 1})), 0, 0);
        int m = kb_red(&b, KILN_POP_RED_MAX, kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, lx, lg, 0), 0);
        kb_out(&b, out2, ((int[]){-1, 0}), 1, kb_op(&b, KILN_POP_ADD, KILN_SPACE_ROW, m, lh, 0));
        CHECK_OK(g_ctx, kb_run(&b));
    }
    double *w1 = malloc(sizeof(double) * N * C), *w2 = malloc(sizeof(double) * 3 * C);
    for (int64_t i = 0; i < N; i++) {
        double acc = 0;
        for (int64_t j = 0; j < C; j++) acc += (hx[i * C + j] - hg[i]) * (hx[i * C + j] - hg[i]);
        for (int64_t j = 0; j < C; j++) w1[i * C + j] = acc * hh[i];
    }
    for (int64_t j = 0; j < 3 * C; j++) w2[j] = NAN;
    for (int64_t j = 0; j < C; j++) {
        double m = -INFINITY;
        for (int64_t i = 0; i < N; i++) m = hx[i * C + j] * hg2[j] > m ? hx[i * C + j] * hg2[j] : m;
        w2[2 + 3 * j] = m + hh2[j];
    }
    double *g1 = read_all(out1), *g2 = read_all(big2);
    check_array("row loads, row style", g1, w1, N * C, 2e-5);
    check_array("row loads, column style", g2, w2, 3 * C, 2e-6);
    free(g1);
    free(g2);
    free(w1);
    free(w2);
    free(hx);
    free(hg);
    free(hh);
    free(hg2);
    free(hh2);
    kiln_tensor_release(X);
    kiln_tensor_release(G);
    kiln_tensor_release(H);
    kiln_tensor_release(G2);
    kiln_tensor_release(H2);
    kiln_tensor_release(out1);
    kiln_tensor_release(big2);
    kiln_tensor_release(out2);
}

/* argmax over a long row (several blocks) and a wide column group (several lane groups). */
static void test_argmax_long(void)
{
    const int64_t N = 3, C = 1500;
    double *hx = malloc(sizeof(double) * N * C);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -1, 1, hx);
    /* plant maxima: row 0 at 1234 (second block) and a tie at 1300; row 2 at 0 */
    double big = 7.0;
    CHECK_OK(g_ctx, kiln_tensor_read(X, hx, KILN_DTYPE_F64));
    hx[0 * C + 1234] = big;
    hx[0 * C + 1300] = big;
    hx[2 * C + 0] = big;
    CHECK_OK(g_ctx, kiln_tensor_write(X, hx, KILN_DTYPE_F64));
    kiln_tensor *rowo = poison_tensor(KILN_DTYPE_I32, 1, ((int64_t[]){N}));
    kiln_tensor *colo = poison_tensor(KILN_DTYPE_I32, 1, ((int64_t[]){C}));
    for (int axis = 1; axis >= 0; axis--) {
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), axis ? 2u : 1u, 0);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
        int r = kb_red(&b, KILN_POP_RED_ARGMAX, lx, 0);
        kb_out(&b, axis ? rowo : colo, axis ? ((int[]){0, -1}) : ((int[]){-1, 0}), 1, r);
        CHECK_OK(g_ctx, kb_run(&b));
    }
    double *gr = read_all(rowo), *gc = read_all(colo);
    double wr[3], *wc = malloc(sizeof(double) * C);
    for (int64_t i = 0; i < N; i++) {
        int64_t bi = 0;
        for (int64_t j = 1; j < C; j++)
            if (hx[i * C + j] > hx[i * C + bi]) bi = j;
        wr[i] = (double)bi;
    }
    for (int64_t j = 0; j < C; j++) {
        int64_t bi = 0;
        for (int64_t i = 1; i < N; i++)
            if (hx[i * C + j] > hx[bi * C + j]) bi = i;
        wc[j] = (double)bi;
    }
    CHECK_INT(gr[0], 1234);
    check_array("argmax long rows", gr, wr, N, 0);
    check_array("argmax columns", gc, wc, C, 0);
    free(gr);
    free(gc);
    free(wc);
    free(hx);
    kiln_tensor_release(X);
    kiln_tensor_release(rowo);
    kiln_tensor_release(colo);
}

/* softmax over axis 1 of (N, C): max pass 0, sum of exp pass 1, FULL output; also with
 * the reduced axis first (column style) through a transposed domain. */
static void test_softmax(int64_t N, int64_t C, int f64)
{
    double *hx = malloc(sizeof(double) * N * C);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -5, 5, hx);
    kiln_tensor *out = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    for (int colstyle = 0; colstyle < 2; colstyle++) {
        /* colstyle: domain (C, N) with axis 0 reduced, X and out read through (1, 0) maps */
        kb b;
        kb_init(&b, 2, colstyle ? ((int64_t[]){C, N}) : ((int64_t[]){N, C}), colstyle ? 1u : 2u, f64);
        const int *map = colstyle ? ((int[]){1, 0}) : ((int[]){0, 1});
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, map), 0, 0);
        int mx = kb_red(&b, KILN_POP_RED_MAX, lx, 0);
        int e = kb_op(&b, KILN_POP_EXP, KILN_SPACE_FULL, kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, mx, 0), 0, 0);
        int s = kb_red(&b, KILN_POP_RED_SUM, e, 1);
        int res = kb_op(&b, KILN_POP_DIV, KILN_SPACE_FULL, e, s, 0);
        kb_out(&b, out, map, 0, res);
        CHECK_OK(g_ctx, kb_run(&b));
        double *want = malloc(sizeof(double) * N * C);
        for (int64_t i = 0; i < N; i++) {
            double m = -INFINITY, z = 0;
            for (int64_t j = 0; j < C; j++) m = hx[i * C + j] > m ? hx[i * C + j] : m;
            for (int64_t j = 0; j < C; j++) z += exp(hx[i * C + j] - m);
            for (int64_t j = 0; j < C; j++) want[i * C + j] = exp(hx[i * C + j] - m) / z;
        }
        double *got = read_all(out);
        check_array(colstyle ? "softmax column style" : "softmax row style", got, want, N * C, 1e-5);
        free(got);
        free(want);
    }
    free(hx);
    kiln_tensor_release(X);
    kiln_tensor_release(out);
}

/* Kept values (exec.c analyse_keep): softmax along rows (exp kept from the sum's pass for
 * the output) and t = sin(x) * u, u uniform random, out = t - max(t) + sum(t) (sin and the
 * generator kept from the statistics' pass, the product computed again), each run with
 * KILN_CPU_KEEP=0 and unset: the same bits, on short rows (several a block), rows of one
 * block, rows of several blocks, a few rows (chunked walks) and, past the buffers' bounds,
 * long rows computed again; softmax also against the f64 reference. */
static void test_keep_bits(int64_t N, int64_t C, int f64)
{
    double *hx = malloc(sizeof(double) * (size_t)(N * C));
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -5, 5, hx);
    for (int kind = 0; kind < 2; kind++) {
        double *got[2] = {NULL, NULL};
        for (int keep = 0; keep < 2; keep++) {
            if (keep)
                unsetenv("KILN_CPU_KEEP");
            else
                setenv("KILN_CPU_KEEP", "0", 1);
            kiln_tensor *out = poison_tensor(f64 ? KILN_DTYPE_F64 : KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
            kb b;
            kb_init(&b, 2, ((int64_t[]){N, C}), 2u, f64);
            int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
            int res;
            if (kind == 0) {
                int mx = kb_red(&b, KILN_POP_RED_MAX, lx, 0);
                int e = kb_op(&b, KILN_POP_EXP, KILN_SPACE_FULL, kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, mx, 0), 0, 0);
                res = kb_op(&b, KILN_POP_DIV, KILN_SPACE_FULL, e, kb_red(&b, KILN_POP_RED_SUM, e, 1), 0);
            } else {
                int u = kb_op(&b, KILN_POP_RAND, KILN_SPACE_FULL, kb_stream(&b, 77), 0, 0);
                int t = kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, kb_op(&b, KILN_POP_SIN, KILN_SPACE_FULL, lx, 0, 0), u, 0);
                int sum = kb_red(&b, KILN_POP_RED_SUM, t, 0);
                int mx = kb_red(&b, KILN_POP_RED_MAX, t, 0);
                res = kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, t, mx, 0), sum, 0);
            }
            kb_out(&b, out, ((int[]){0, 1}), 0, res);
            CHECK_OK(g_ctx, kb_run(&b));
            got[keep] = read_all(out);
            kiln_tensor_release(out);
        }
        int64_t diff = 0;
        for (int64_t i = 0; i < N * C; i++) diff += memcmp(&got[0][i], &got[1][i], sizeof(double)) != 0;
        if (diff)
            fprintf(stderr, "  keep %lldx%lld kind %d f64 %d: %lld values differ kept and computed again\n", (long long)N,
                    (long long)C, kind, f64, (long long)diff);
        CHECK(diff == 0);
        if (kind == 0) {
            double *want = malloc(sizeof(double) * (size_t)(N * C));
            for (int64_t i = 0; i < N; i++) {
                double m = -INFINITY, z = 0;
                for (int64_t j = 0; j < C; j++) m = hx[i * C + j] > m ? hx[i * C + j] : m;
                for (int64_t j = 0; j < C; j++) z += exp(hx[i * C + j] - m);
                for (int64_t j = 0; j < C; j++) want[i * C + j] = exp(hx[i * C + j] - m) / z;
            }
            check_array("softmax, kept exp", got[1], want, N * C, 1e-5);
            free(want);
        }
        free(got[0]);
        free(got[1]);
    }
    unsetenv("KILN_CPU_KEEP");
    free(hx);
    kiln_tensor_release(X);
}

/* A bad KILN_CPU_KEEP is a KILN_ERR_ARG naming it (read where a ROW kernel has a value to keep). */
static void test_keep_knob(void)
{
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){8, 8}), -1, 1, NULL);
    kiln_tensor *out = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){8, 8}));
    kb b;
    kb_init(&b, 2, ((int64_t[]){8, 8}), 2u, 0);
    int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
    int e = kb_op(&b, KILN_POP_EXP, KILN_SPACE_FULL, lx, 0, 0);
    kb_out(&b, out, ((int[]){0, 1}), 0, kb_op(&b, KILN_POP_DIV, KILN_SPACE_FULL, e, kb_red(&b, KILN_POP_RED_SUM, e, 0), 0));
    setenv("KILN_CPU_KEEP", "yes", 1);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_ARG, "KILN_CPU_KEEP");
    unsetenv("KILN_CPU_KEEP");
    kiln_tensor_release(out);
    kiln_tensor_release(X);
}

/* ---- casts, stores, random numbers ---------------------------------------------------- */

static void test_cast(int f64)
{
    const int64_t n = 40;
    double hx[40];
    check_fill(&g_seed, hx, n, -400, 400);
    hx[0] = NAN;
    hx[1] = 1e10;
    hx[2] = -1e10;
    hx[3] = 2.5;
    hx[4] = -2.5;
    hx[5] = 1.0 + 1.0 / 2048.0; /* f16 tie: rounds to even 1.0 */
    hx[6] = 70000.0;            /* beyond f16: inf */
    kiln_tensor *X = NULL;
    CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F64, 1, ((int64_t[]){n}), hx, KILN_DTYPE_F64, &X));
    const kiln_dtype dts[6] = {KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_I8,
                               KILN_DTYPE_U8,  KILN_DTYPE_I32,  KILN_DTYPE_F32};
    for (int q = 0; q < 6; q++) {
        kiln_tensor *out = poison_tensor(KILN_DTYPE_F64, 1, ((int64_t[]){n}));
        kb b;
        kb_init(&b, 1, ((int64_t[]){n}), 0, f64);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0})), 0, 0);
        int c = kb_op(&b, KILN_POP_CAST, KILN_SPACE_FULL, lx, 0, 0);
        b.ins[c].dtype = (uint8_t)dts[q];
        kb_out(&b, out, ((int[]){0}), 0, c);
        CHECK_OK(g_ctx, kb_run(&b));
        double want[40];
        for (int64_t i = 0; i < n; i++) {
            double v = f64 ? hx[i] : (double)(float)hx[i];
            double w;
            switch (dts[q]) {
            case KILN_DTYPE_F16:
                w = f64 ? kiln_f16_to_f32(kiln_f64_to_f16_rn(v)) : kiln_f16_to_f32(kiln_f32_to_f16_rn((float)v));
                break;
            case KILN_DTYPE_BF16:
                w = f64 ? kiln_bf16_to_f32(kiln_f64_to_bf16_rn(v)) : kiln_bf16_to_f32(kiln_f32_to_bf16_rn((float)v));
                break;
            case KILN_DTYPE_I8: w = isnan(v) ? 0 : v >= 127 ? 127 : v <= -128 ? -128 : trunc(v); break;
            case KILN_DTYPE_U8: w = isnan(v) ? 0 : v >= 255 ? 255 : v <= 0 ? 0 : trunc(v); break;
            case KILN_DTYPE_I32:
                w = isnan(v)             ? 0
                    : v >= 2147483647.0  ? (f64 ? 2147483647.0 : 2147483648.0)
                    : v <= -2147483648.0 ? -2147483648.0
                                         : trunc(v);
                break;
            default: w = (float)v; break;
            }
            want[i] = w;
        }
        double *got = read_all(out);
        char what[48];
        snprintf(what, sizeof what, "cast to %s (%s)", kiln_dtype_name(dts[q]), f64 ? "f64" : "f32");
        check_array(what, got, want, n, 0);
        if (dts[q] == KILN_DTYPE_F16) {
            CHECK(got[5] == 1.0);
            CHECK(isinf(got[6]));
        }
        free(got);
        kiln_tensor_release(out);
    }
    kiln_tensor_release(X);
}

/* Stores into f16 and bf16 with nearest and stochastic rounding; stores into ints. */
static void test_store_rounding(void)
{
    const int64_t R = 9, C = 301, n = R * C;
    double *hx = malloc(sizeof(double) * n);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){R, C}), -3, 3, hx);
    const uint64_t stream = 4242;
    for (int dt16 = 0; dt16 < 2; dt16++) {
        kiln_dtype dt = dt16 ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
        for (int sr = 0; sr < 2; sr++) {
            kiln_tensor *out = poison_tensor(dt, 2, ((int64_t[]){R, C}));
            kb b;
            kb_init(&b, 2, ((int64_t[]){R, C}), 0, 0);
            int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
            int r = kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, lx,
                          kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 1.0 / 3.0), 0, 0), 0);
            kb_out(&b, out, ((int[]){0, 1}), 0, r);
            b.k.out.round = sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
            b.k.out.sr_stream = stream;
            CHECK_OK(g_ctx, kb_run(&b));
            kiln_u16 *got = malloc(sizeof(kiln_u16) * n);
            memcpy(got, kiln_tensor_data(out), sizeof(kiln_u16) * n);
            int64_t bad = -1;
            double bias = 0;
            for (int64_t i = 0; i < n; i++) {
                float v = (float)hx[i] * (float)(1.0 / 3.0);
                kiln_u32 bits = kiln_rng_bits(g_ctx->seed, stream, (uint64_t)i);
                kiln_u16 w = dt16 ? (sr ? kiln_f32_to_bf16_sr(v, bits) : kiln_f32_to_bf16_rn(v))
                                  : (sr ? kiln_f32_to_f16_sr(v, bits) : kiln_f32_to_f16_rn(v));
                if (got[i] != w && bad < 0) bad = i;
                double g = dt16 ? kiln_bf16_to_f32(got[i]) : kiln_f16_to_f32(got[i]);
                bias += g - (double)v;
            }
            if (bad >= 0)
                fprintf(stderr, "store %s sr=%d: index %lld differs\n", kiln_dtype_name(dt), sr, (long long)bad);
            CHECK(bad < 0);
            /* SR is unbiased: the mean error is far below one ulp (f16 ulp at 1 is 2^-10). */
            if (sr) CHECK(fabs(bias / (double)n) < (dt16 ? 1e-3 : 1e-4));
            free(got);
            kiln_tensor_release(out);
        }
    }
    free(hx);
    kiln_tensor_release(X);
}

/* Stochastic rounding of ROW outputs uses the index in the outer space: bf16/f16 of an
 * exact row value (a max) in row and column style. */
static void test_row_sr(void)
{
    const int64_t N = 37, C = 19;
    double *hx = malloc(sizeof(double) * N * C);
    kiln_tensor *X = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -3, 3, hx);
    const uint64_t stream = 777;
    for (int colstyle = 0; colstyle < 2; colstyle++)
        for (int dt16 = 0; dt16 < 2; dt16++) {
            kiln_dtype dt = dt16 ? KILN_DTYPE_BF16 : KILN_DTYPE_F16;
            int64_t no = colstyle ? C : N, ni = colstyle ? N : C;
            kiln_tensor *o = poison_tensor(dt, 1, ((int64_t[]){no}));
            kb b;
            kb_init(&b, 2, ((int64_t[]){N, C}), colstyle ? 1u : 2u, 0);
            int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, X, ((int[]){0, 1})), 0, 0);
            kb_out(&b, o, colstyle ? ((int[]){-1, 0}) : ((int[]){0, -1}), 1, kb_red(&b, KILN_POP_RED_MAX, lx, 0));
            b.k.out.round = KILN_ROUND_STOCHASTIC;
            b.k.out.sr_stream = stream;
            CHECK_OK(g_ctx, kb_run(&b));
            const kiln_u16 *got = kiln_tensor_data(o);
            int64_t bad = -1;
            for (int64_t i = 0; i < no; i++) {
                double m = -INFINITY;
                for (int64_t j = 0; j < ni; j++) {
                    double v = colstyle ? hx[j * C + i] : hx[i * C + j];
                    m = v > m ? v : m;
                }
                kiln_u32 bits = kiln_rng_bits(g_ctx->seed, stream, (uint64_t)i);
                kiln_u16 w = dt16 ? kiln_f32_to_bf16_sr((float)m, bits) : kiln_f32_to_f16_sr((float)m, bits);
                if (got[i] != w && bad < 0) bad = i;
            }
            if (bad >= 0)
                fprintf(stderr, "row SR colstyle=%d %s: index %lld differs\n", colstyle, kiln_dtype_name(dt),
                        (long long)bad);
            CHECK(bad < 0);
            kiln_tensor_release(o);
        }
    free(hx);
    kiln_tensor_release(X);
}

/* RAND / RANDN / BERNOULLI in FULL space (index in D) and ROW space (index in the outer
 * space) of a reduction kernel, and in an EW kernel over a strided output. */
static void test_rand(void)
{
    const int64_t N = 6, C = 77;
    const uint64_t s0 = 11, s1 = 12, s2 = 13;
    kiln_tensor *out = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    kiln_tensor *rowo = poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){N}));
    /* EW: out = rand + 10 * bernoulli(0.3) + 100 * randn */
    {
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), 0, 0);
        int u = kb_op(&b, KILN_POP_RAND, KILN_SPACE_FULL, kb_stream(&b, s0), 0, 0);
        int be = kb_op(&b, KILN_POP_BERNOULLI, KILN_SPACE_FULL, kb_stream(&b, s1), kb_const(&b, 0.3), 0);
        int nr = kb_op(&b, KILN_POP_RANDN, KILN_SPACE_FULL, kb_stream(&b, s2), 0, 0);
        int ten = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 10.0), 0, 0);
        int hun = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 100.0), 0, 0);
        int t = kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, u, kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, be, ten, 0), 0);
        t = kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, t, kb_op(&b, KILN_POP_MUL, KILN_SPACE_FULL, nr, hun, 0), 0);
        kb_out(&b, out, ((int[]){0, 1}), 0, t);
        CHECK_OK(g_ctx, kb_run(&b));
        double *got = read_all(out), *want = malloc(sizeof(double) * N * C);
        for (int64_t i = 0; i < N * C; i++) {
            float u0 = kiln_rng_uniform(g_ctx->seed, s0, (uint64_t)i);
            float b0 = kiln_rng_bernoulli(g_ctx->seed, s1, (uint64_t)i, 0.3f);
            float n0 = kiln_rng_normal(g_ctx->seed, s2, (uint64_t)i);
            want[i] = (double)((u0 + b0 * 10.0f) + n0 * 100.0f);
        }
        check_array("rand ew", got, want, N * C, 0);
        free(got);
        free(want);
    }
    /* reduction: rowo[i] = sum_j rand_full[i, j] + rand_row[i] (FULL index i*C+j, ROW index i),
     * reduced over axis 1; and over axis 0 (column style) for the ROW index too */
    for (int colstyle = 0; colstyle < 2; colstyle++) {
        kiln_tensor *o = colstyle ? poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){C})) : kiln_tensor_retain(rowo);
        kb b;
        kb_init(&b, 2, ((int64_t[]){N, C}), colstyle ? 1u : 2u, 0);
        int u = kb_op(&b, KILN_POP_RAND, KILN_SPACE_FULL, kb_stream(&b, s0), 0, 0);
        int s = kb_red(&b, KILN_POP_RED_SUM, u, 0);
        int ur = kb_op(&b, KILN_POP_RAND, KILN_SPACE_ROW, kb_stream(&b, s1), 0, 0);
        int r = kb_op(&b, KILN_POP_ADD, KILN_SPACE_ROW, s, ur, 0);
        kb_out(&b, o, colstyle ? ((int[]){-1, 0}) : ((int[]){0, -1}), 1, r);
        CHECK_OK(g_ctx, kb_run(&b));
        int64_t no = colstyle ? C : N, ni = colstyle ? N : C;
        double *got = read_all(o), *want = malloc(sizeof(double) * no);
        for (int64_t i = 0; i < no; i++) {
            double acc = 0;
            for (int64_t j = 0; j < ni; j++) {
                int64_t lin = colstyle ? j * C + i : i * C + j;
                acc += kiln_rng_uniform(g_ctx->seed, s0, (uint64_t)lin);
            }
            want[i] = acc + kiln_rng_uniform(g_ctx->seed, s1, (uint64_t)i);
        }
        check_array(colstyle ? "rand column reduction" : "rand row reduction", got, want, no, 1e-5);
        free(got);
        free(want);
        kiln_tensor_release(o);
    }
    kiln_tensor_release(out);
    kiln_tensor_release(rowo);
}

/* ---- random kernels against a point-by-point reference ---------------------------------- */

/* The reference evaluates instruction i at the domain point P (int64[ndim]) in double,
 * straight from the plan's meaning in src/expr/plan.h: reductions walk the row's inner
 * points in row-major order (memoized per row). */
typedef struct fuzz_ref {
    const kiln_plan_kernel *k;
    int64_t olin_of[KILN_MAX_DIMS], lin_of[KILN_MAX_DIMS];
    int64_t outer_n;
    double *memo; /* [ninstr][outer_n] */
    char *have;
} fuzz_ref;

static int64_t fz_outer_index(const fuzz_ref *f, const int64_t *P)
{
    int64_t o = 0;
    for (int d = 0; d < f->k->ndim; d++) o += P[d] * f->olin_of[d];
    return o;
}

static double fz_eval(fuzz_ref *f, int i, const int64_t *P)
{
    const kiln_plan_kernel *k = f->k;
    const kiln_plan_instr *in = &k->instr[i];
    int64_t lin = 0;
    for (int d = 0; d < k->ndim; d++) lin += P[d] * f->lin_of[d];
    int row_space = in->space == KILN_SPACE_ROW && k->reduce_mask != 0;
    int64_t rng_index = row_space ? fz_outer_index(f, P) : lin;
    switch ((kiln_pop)in->op) {
    case KILN_POP_LOAD: {
        const kiln_plan_input *x = &k->inputs[in->a];
        int64_t off = 0;
        for (int d = 0; d < k->ndim; d++) off += P[d] * x->strides[d];
        return kiln__load_f64(x->base + off * (int64_t)kiln_dtype_size(x->dtype), x->dtype);
    }
    case KILN_POP_CONST: return k->consts[in->a];
    case KILN_POP_RAND: return kiln_rng_uniform(g_ctx->seed, k->streams[in->a], (uint64_t)rng_index);
    case KILN_POP_WHERE: return fz_eval(f, in->a, P) != 0 ? fz_eval(f, in->b, P) : fz_eval(f, in->c, P);
    case KILN_POP_RED_SUM:
    case KILN_POP_RED_MAX:
    case KILN_POP_RED_MIN:
    case KILN_POP_RED_ARGMAX:
    case KILN_POP_RED_ARGMIN: {
        int64_t o = fz_outer_index(f, P);
        size_t key = (size_t)i * (size_t)f->outer_n + (size_t)o;
        if (f->have[key]) return f->memo[key];
        int64_t Q[KILN_MAX_DIMS];
        for (int d = 0; d < k->ndim; d++) Q[d] = (k->reduce_mask >> d & 1u) ? 0 : P[d];
        double acc = in->op == KILN_POP_RED_SUM                                      ? 0
                     : (in->op == KILN_POP_RED_MAX || in->op == KILN_POP_RED_ARGMAX) ? -INFINITY
                                                                                     : INFINITY;
        int64_t best = 0, kidx = 0;
        int nan = 0;
        for (;;) {
            double v = fz_eval(f, in->a, Q);
            switch (in->op) {
            case KILN_POP_RED_SUM: acc += v; break;
            case KILN_POP_RED_MAX:
                if (isnan(v))
                    nan = 1;
                else if (v > acc)
                    acc = v;
                break;
            case KILN_POP_RED_MIN:
                if (isnan(v))
                    nan = 1;
                else if (v < acc)
                    acc = v;
                break;
            default:
                if (!nan && (isnan(v) || (in->op == KILN_POP_RED_ARGMAX ? v > acc : v < acc))) {
                    acc = v;
                    best = kidx;
                    nan = isnan(v);
                }
                break;
            }
            kidx++;
            int d = k->ndim - 1;
            for (; d >= 0; d--) {
                if (!(k->reduce_mask >> d & 1u)) continue;
                if (++Q[d] < k->shape[d]) break;
                Q[d] = 0;
            }
            if (d < 0) break;
        }
        double r = (in->op == KILN_POP_RED_ARGMAX || in->op == KILN_POP_RED_ARGMIN) ? (double)best : (nan ? NAN : acc);
        f->have[key] = 1;
        f->memo[key] = r;
        return r;
    }
    default: break;
    }
    double a = fz_eval(f, in->a, P);
    if (kiln__pop_nargs((kiln_pop)in->op) == 1) return ref_unary((kiln_pop)in->op, a);
    return ref_binary((kiln_pop)in->op, a, fz_eval(f, in->b, P));
}

/* One random kernel: shape, reduced axes, inputs (broadcast, transposed, sliced; some
 * row-valued), a random SSA program with reductions in several passes, a FULL or ROW output. */
static void fuzz_one(int iter)
{
    static const int64_t sizes[] = {1, 2, 3, 5, 7, 13, 33};
    fz_kernel fk;
    fz_build(&fk, &g_seed, sizes, 7, 3000, 1);
    kb *const b = &fk.b;
    const int ndim = fk.ndim, out_i = fk.out_i, is_row = fk.is_row;
    const int64_t *shape = fk.shape, numel = fk.numel;
    const uint32_t mask = fk.mask;
    kiln_tensor *out = fk.out;
    kiln_status st = kb_run(b);
    CHECK_OK(g_ctx, st);
    if (st == KILN_OK) {
        fuzz_ref f = {.k = &b->k};
        int64_t l = 1, ol = 1;
        for (int d = ndim - 1; d >= 0; d--) {
            f.lin_of[d] = l;
            l *= shape[d];
            f.olin_of[d] = (mask >> d & 1u) ? 0 : ol;
            if (!(mask >> d & 1u)) ol *= shape[d];
        }
        f.outer_n = ol;
        f.memo = malloc(sizeof(double) * (size_t)b->k.ninstr * (size_t)ol);
        f.have = calloc((size_t)b->k.ninstr * (size_t)ol, 1);
        double *got = read_all(out);
        int64_t on = kiln_tensor_numel(out);
        double *want = malloc(sizeof(double) * (size_t)on);
        for (int64_t q = 0; q < on; q++) want[q] = NAN;
        int64_t P[KILN_MAX_DIMS] = {0};
        for (int64_t p = 0; p < numel; p++) {
            int64_t rem = p, oq = 0, om = 1;
            int skip = 0;
            for (int d = ndim - 1; d >= 0; d--) {
                P[d] = rem % shape[d];
                rem /= shape[d];
                if (is_row && (mask >> d & 1u)) {
                    if (P[d] != 0) skip = 1;
                } else {
                    oq += P[d] * om;
                    om *= shape[d];
                }
            }
            if (!skip) want[oq] = fz_eval(&f, out_i, P);
        }
        char what[64];
        snprintf(what, sizeof what, "fuzz %d (rank %d mask 0x%x %s)", iter, ndim, (unsigned)mask,
                 is_row ? "row" : "full");
        check_array(what, got, want, on, 1e-9);
        free(got);
        free(want);
        free(f.memo);
        free(f.have);
    }
    fz_release(&fk);
}

/* ---- edge cases ----------------------------------------------------------------------- */

static void test_edges(void)
{
    /* rank 0: out = x * 2 */
    {
        double v = 1.75;
        kiln_tensor *x = NULL, *o = poison_tensor(KILN_DTYPE_F32, 0, NULL);
        CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F32, 0, NULL, &v, KILN_DTYPE_F64, &x));
        kb b;
        kb_init(&b, 0, NULL, 0, 0);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, x, NULL), 0, 0);
        kb_out(&b, o, NULL, 0, kb_op(&b, KILN_POP_ADD, KILN_SPACE_FULL, lx, lx, 0));
        CHECK_OK(g_ctx, kb_run(&b));
        double g = 0;
        CHECK_OK(g_ctx, kiln_tensor_read(o, &g, KILN_DTYPE_F64));
        CHECK_NEAR(g, 3.5, 0);
        kiln_tensor_release(x);
        kiln_tensor_release(o);
    }
    /* empty kept axis: nothing is written (and nothing is read) */
    {
        kiln_tensor *o = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){0, 5}));
        kb b;
        kb_init(&b, 2, ((int64_t[]){0, 5}), 0, 0);
        int c = kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 1.0), 0, 0);
        kb_out(&b, o, ((int[]){0, 1}), 0, c);
        CHECK_OK(g_ctx, kb_run(&b));
        kiln_tensor_release(o);
    }
    /* empty reduced axis with a ROW output: SUM 0, MAX -inf, MIN +inf, ARGMAX 0 */
    {
        kiln_tensor *x = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){3, 0}));
        const kiln_pop ops[4] = {KILN_POP_RED_SUM, KILN_POP_RED_MAX, KILN_POP_RED_MIN, KILN_POP_RED_ARGMAX};
        const double want[4] = {0, -INFINITY, INFINITY, 0};
        for (int q = 0; q < 4; q++) {
            kiln_tensor *o = poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){3}));
            kb b;
            kb_init(&b, 2, ((int64_t[]){3, 0}), 2u, q & 1);
            int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, x, ((int[]){0, 1})), 0, 0);
            kb_out(&b, o, ((int[]){0, -1}), 1, kb_red(&b, ops[q], lx, 0));
            CHECK_OK(g_ctx, kb_run(&b));
            double g[3];
            CHECK_OK(g_ctx, kiln_tensor_read(o, g, KILN_DTYPE_F64));
            double w[3] = {want[q], want[q], want[q]};
            check_array("empty reduction", g, w, 3, 0);
            kiln_tensor_release(o);
        }
        kiln_tensor_release(x);
    }
    /* reduction over a size-1 axis (nothing left to reduce after normalization) */
    {
        double hx[7];
        kiln_tensor *x = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){7, 1}), -1, 1, hx);
        kiln_tensor *o = poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){7}));
        kb b;
        kb_init(&b, 2, ((int64_t[]){7, 1}), 2u, 0);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, x, ((int[]){0, 1})), 0, 0);
        kb_out(&b, o, ((int[]){0, -1}), 1, kb_red(&b, KILN_POP_RED_MAX, lx, 0));
        CHECK_OK(g_ctx, kb_run(&b));
        double *g = read_all(o);
        check_array("reduce size-1 axis", g, hx, 7, 0);
        free(g);
        kiln_tensor_release(x);
        kiln_tensor_release(o);
    }
    /* a domain of one point with a full reduction, f64 compute */
    {
        double v = -2.5;
        kiln_tensor *x = NULL, *o = poison_tensor(KILN_DTYPE_F64, 0, NULL);
        CHECK_OK(g_ctx, kiln_tensor_from_host(g_ctx, KILN_DTYPE_F64, 1, ((int64_t[]){1}), &v, KILN_DTYPE_F64, &x));
        kb b;
        kb_init(&b, 1, ((int64_t[]){1}), 1u, 1);
        int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&b, x, ((int[]){0})), 0, 0);
        kb_out(&b, o, ((int[]){-1}), 1, kb_red(&b, KILN_POP_RED_SUM, lx, 0));
        CHECK_OK(g_ctx, kb_run(&b));
        double g = 0;
        CHECK_OK(g_ctx, kiln_tensor_read(o, &g, KILN_DTYPE_F64));
        CHECK_NEAR(g, -2.5, 0);
        kiln_tensor_release(x);
        kiln_tensor_release(o);
    }
}

/* Malformed kernels are reported as internal errors naming the plan, never crash. */
static void test_errors(void)
{
    kiln_tensor *x = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){4, 5}));
    kiln_tensor *o = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){4, 5}));
    kb b;
    /* operand not earlier */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 0, 0);
    kb_op(&b, KILN_POP_NEG, KILN_SPACE_FULL, 0, 0, 0);
    kb_out(&b, o, ((int[]){0, 1}), 0, 0);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "argument 'plan'");
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "not an earlier instruction");
    /* LOAD of a missing input */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 0, 0);
    kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, 3, 0, 0);
    kb_out(&b, o, ((int[]){0, 1}), 0, 0);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "argument 'plan'");
    /* reduction in an element-wise kernel */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 0, 0);
    kb_input(&b, x, ((int[]){0, 1}));
    kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, 0, 0, 0);
    kb_op(&b, KILN_POP_RED_SUM, KILN_SPACE_ROW, 0, 0, 0);
    kb_out(&b, o, ((int[]){0, 1}), 0, 1);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "argument 'plan'");
    /* ROW instruction used before its pass is done: mean used inside pass 0 */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 2u, 0);
    kb_input(&b, x, ((int[]){0, 1}));
    int lx = kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, 0, 0, 0);
    int s = kb_red(&b, KILN_POP_RED_SUM, lx, 0);
    int d = kb_op(&b, KILN_POP_SUB, KILN_SPACE_FULL, lx, s, 0);
    int s2 = kb_red(&b, KILN_POP_RED_SUM, d, 0); /* should be pass 1 */
    kb_out(&b, o, ((int[]){0, -1}), 1, s2);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "pass");
    /* ROW output of a FULL value */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 2u, 0);
    kb_input(&b, x, ((int[]){0, 1}));
    kb_op(&b, KILN_POP_LOAD, KILN_SPACE_FULL, 0, 0, 0);
    kb_red(&b, KILN_POP_RED_SUM, 0, 0);
    kb_out(&b, o, ((int[]){0, -1}), 1, 0);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "argument 'plan'");
    /* bad opcode, bad out_instr, bad pass */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 0, 0);
    kb_op(&b, (kiln_pop)200, KILN_SPACE_FULL, 0, 0, 0);
    kb_out(&b, o, ((int[]){0, 1}), 0, 0);
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "opcode");
    b.k.out_instr = 5;
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "out_instr");
    /* no output address */
    kb_init(&b, 2, ((int64_t[]){4, 5}), 0, 0);
    kb_out(&b, o, ((int[]){0, 1}), 0, kb_op(&b, KILN_POP_CONST, KILN_SPACE_ROW, kb_const(&b, 1.0), 0, 0));
    b.k.out.base = NULL;
    CHECK_FAILS(g_ctx, kb_run(&b), KILN_ERR_INTERNAL, "argument 'plan'");
    CHECK_FAILS(g_ctx, kiln__cpu_exec_kernel(g_ctx, NULL), KILN_ERR_NULL, "argument 'kernel'");
    CHECK_FAILS(g_ctx, kiln__cpu_run_plan(g_ctx, NULL), KILN_ERR_NULL, "argument 'plan'");
    kiln_tensor_release(x);
    kiln_tensor_release(o);
}

/* A plan of two kernels: t = x * x into a temporary, then out = sum(t, 1). Also the memory
 * of the interpreter's workspace is returned. */
static void test_two_kernels(void)
{
    const int64_t N = 5, C = 33;
    double hx[5 * 33];
    kiln_tensor *x = rand_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}), -1, 1, hx);
    kiln_tensor *t = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){N, C}));
    kiln_tensor *o = poison_tensor(KILN_DTYPE_F32, 1, ((int64_t[]){N}));
    kb k1, k2;
    kb_init(&k1, 2, ((int64_t[]){N, C}), 0, 0);
    int l = kb_op(&k1, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&k1, x, ((int[]){0, 1})), 0, 0);
    kb_out(&k1, t, ((int[]){0, 1}), 0, kb_op(&k1, KILN_POP_SQR, KILN_SPACE_FULL, l, 0, 0));
    kb_init(&k2, 2, ((int64_t[]){N, C}), 2u, 0);
    l = kb_op(&k2, KILN_POP_LOAD, KILN_SPACE_FULL, kb_input(&k2, t, ((int[]){0, 1})), 0, 0);
    kb_out(&k2, o, ((int[]){0, -1}), 1, kb_red(&k2, KILN_POP_RED_SUM, l, 0));
    kiln_plan_kernel ks[2] = {k1.k, k2.k};
    kiln_plan plan = {.nkernels = 2, .kernels = ks};
    kiln_mem_stats before, after;
    CHECK_OK(g_ctx, kiln_mem_get_stats(g_ctx, &before));
    CHECK_OK(g_ctx, kiln__cpu_run_plan(g_ctx, &plan));
    CHECK_OK(g_ctx, kiln_mem_get_stats(g_ctx, &after));
    CHECK_INT(after.in_use, before.in_use);
    double g[5], w[5];
    CHECK_OK(g_ctx, kiln_tensor_read(o, g, KILN_DTYPE_F64));
    for (int64_t i = 0; i < N; i++) {
        w[i] = 0;
        for (int64_t j = 0; j < C; j++) w[i] += (double)((float)hx[i * C + j] * (float)hx[i * C + j]);
    }
    check_array("two kernels", g, w, N, 1e-5);
    kiln_tensor_release(x);
    kiln_tensor_release(t);
    kiln_tensor_release(o);
}

/* The backend's strided read / write with dtype conversion. */
static void test_read_write(void)
{
    const int64_t A = 4, B = 6, C = 5;
    double h[120], back[120];
    kiln_tensor *t = rand_tensor(KILN_DTYPE_F64, 3, ((int64_t[]){A, B, C}), -9, 9, h);
    /* view: t[:, ::-2, 1:4] permuted to (axis 2, axis 0, axis 1) */
    kiln_tensor *v1 = NULL, *v2 = NULL;
    kiln_slice sl[3] = {KILN_SLICE_ALL, KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -2), KILN_SLICE(1, 4)};
    CHECK_OK(g_ctx, kiln_tensor_slice(t, 3, sl, &v1));
    CHECK_OK(g_ctx, kiln_tensor_permute(v1, ((int[]){2, 0, 1}), &v2));
    int64_t nv = kiln_tensor_numel(v2);
    CHECK_INT(nv, 3 * 4 * 3);
    float got[36];
    CHECK_OK(g_ctx, kiln_tensor_read(v2, got, KILN_DTYPE_F32));
    int64_t bad = -1, q = 0;
    for (int64_t k = 0; k < 3; k++)
        for (int64_t i = 0; i < A; i++)
            for (int64_t jj = 0; jj < 3; jj++, q++) {
                int64_t j = B - 1 - 2 * jj;
                if (got[q] != (float)h[(i * B + j) * C + (k + 1)] && bad < 0) bad = q;
            }
    CHECK(bad < 0);
    /* write through the view: i8 values, then read all back */
    int8_t w[36];
    for (int i = 0; i < 36; i++) w[i] = (int8_t)(i - 18);
    CHECK_OK(g_ctx, kiln_tensor_write(v2, w, KILN_DTYPE_I8));
    CHECK_OK(g_ctx, kiln_tensor_read(t, back, KILN_DTYPE_F64));
    q = 0;
    for (int64_t k = 0; k < 3; k++)
        for (int64_t i = 0; i < A; i++)
            for (int64_t jj = 0; jj < 3; jj++, q++) h[(i * B + (B - 1 - 2 * jj)) * C + (k + 1)] = (double)w[q];
    check_array("strided write", back, h, 120, 0);
    kiln_tensor_release(v1);
    kiln_tensor_release(v2);
    kiln_tensor_release(t);
    /* empty views read and write nothing */
    kiln_tensor *e = poison_tensor(KILN_DTYPE_F32, 2, ((int64_t[]){3, 0}));
    float dummy = 5.0f;
    CHECK_OK(g_ctx, kiln_tensor_read(e, &dummy, KILN_DTYPE_F32));
    CHECK_OK(g_ctx, kiln_tensor_write(e, &dummy, KILN_DTYPE_F32));
    CHECK(dummy == 5.0f);
    kiln_tensor_release(e);
    CHECK(strncmp(kiln_ctx_device_description(g_ctx), "cpu: ", 5) == 0);
    CHECK(strstr(kiln_ctx_device_description(g_ctx), "GEMM: ") != NULL);
}

int main(void)
{
    g_seed = check_seed();
    CHECK_OK(NULL, kiln_ctx_create(&g_ctx, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .seed = 1234}));
    if (!g_ctx) return check_finish();
    for (int f64 = 0; f64 < 2; f64++) {
        test_ew_chain(f64);
        test_all_ops(f64);
        test_batchnorm(5, 1000, f64, 0);
        test_batchnorm(57, 13, f64, 0);
        test_batchnorm(3, 129, f64, 1);
        test_batchnorm(1, 1, f64, 0);
        test_column(300, 37, f64, 0);
        test_column(129, 1100, f64, 0);
        test_column(7, 3, f64, 1);
        test_softmax(33, 10, f64);
        test_softmax(4, 700, f64);
        test_keep_bits(300, 40, f64);  /* short rows, several a block */
        test_keep_bits(50, 400, f64);  /* a row a block */
        test_keep_bits(40, 1500, f64);  /* rows of several blocks: the workers' row buffers */
        test_keep_bits(3, 30000, f64);  /* a few long rows: chunked walks, a buffer the chunks share */
        test_keep_bits(17, 300000, f64); /* past the workers' buffers' bound: computed again */
        if (!f64) test_keep_bits(1, (1 << 22) + 700, f64); /* past the chunks' bound: computed again */
        for (uint32_t mask = 1; mask < 8; mask++) test_reduce_axes(mask, f64, 0);
        for (uint32_t mask = 1; mask < 8; mask++) test_reduce_axes(mask, f64, 1);
        test_row_loads(57, 13, f64);
        test_row_loads(3, 700, f64);
        test_cast(f64);
    }
    test_argmax_long();
    test_store_rounding();
    test_row_sr();
    test_rand();
    test_edges();
    test_errors();
    test_two_kernels();
    test_keep_knob();
    for (int it = 0; it < 300; it++) fuzz_one(it);
    test_read_write();
    kiln_ctx_destroy(g_ctx);
    return check_finish();
}
