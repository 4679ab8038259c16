/*
 * src/cpu/exec_impl.h — the typed half of the CPU plan interpreter, included twice by
 * src/cpu/exec.c: with T = float (compute_f64 == 0) and T = double (compute_f64 == 1).
 * It provides loads (input dtype -> T), stores (T -> output dtype with the output's
 * rounding), one function per instruction over a block, the reductions, and the driver
 * SFX(run) that walks the kernel's domain (see the mode descriptions in exec.c).
 * Needs: T, SFX(name) (adds the type suffix), KF(fn) (libm function for T), KV(fn) (the
 * function of src/cpu/vmath.h for T = float where it has one, libm's for double), KILN_EXEC_F64.
 * Not a header to include anywhere else: it has no include guard on purpose.
 */

/* ---- conversions ---------------------------------------------------------------------- */

static inline kiln_u16 SFX(to_f16)(T v)
{
#if KILN_EXEC_F64
    return kiln_f64_to_f16_rn(v);
#else
    return kiln_f32_to_f16_rn(v);
#endif
}

static inline kiln_u16 SFX(to_bf16)(T v)
{
#if KILN_EXEC_F64
    return kiln_f64_to_bf16_rn(v);
#else
    return kiln_f32_to_bf16_rn(v);
#endif
}

/* Float to integer: truncate toward zero, saturate to [lo, hi], NaN -> 0. */
static inline int64_t SFX(sat)(T v, double lo, double hi)
{
    if (v != v) return 0;
    if (v <= (T)lo) return (int64_t)lo;
    if (v >= (T)hi) return (int64_t)hi;
    return (int64_t)v;
}

/* v rounded to dt as a store of dt would (round to nearest), back in T: CAST. */
static inline T SFX(cast1)(T v, kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F32: return (T)(float)v;
    case KILN_DTYPE_F64: return v;
    case KILN_DTYPE_F16: return (T)kiln_f16_to_f32(SFX(to_f16)(v));
    case KILN_DTYPE_BF16: return (T)kiln_bf16_to_f32(SFX(to_bf16)(v));
    case KILN_DTYPE_I8: return (T)SFX(sat)(v, -128.0, 127.0);
    case KILN_DTYPE_U8: return (T)SFX(sat)(v, 0.0, 255.0);
    case KILN_DTYPE_I32: return (T)SFX(sat)(v, -2147483648.0, 2147483647.0);
    default: return v;
    }
}

/* n values of dtype dt at p, stride s (elements), into dst. */
static void SFX(load_seg)(T *restrict dst, const char *p, kiln_dtype dt, int64_t s, int64_t n)
{
#define LOAD_LOOP(CT, EXPR)                                 \
    do {                                                    \
        const CT *restrict q = (const CT *)(const void *)p; \
        if (s == 1)                                         \
            for (int64_t j = 0; j < n; j++) {               \
                CT e = q[j];                                \
                dst[j] = (EXPR);                            \
            }                                               \
        else                                                \
            for (int64_t j = 0; j < n; j++) {               \
                CT e = q[j * s];                            \
                dst[j] = (EXPR);                            \
            }                                               \
    } while (0)
    switch (dt) {
    case KILN_DTYPE_F32: LOAD_LOOP(float, (T)e); break;
    case KILN_DTYPE_F64: LOAD_LOOP(double, (T)e); break;
    case KILN_DTYPE_F16: LOAD_LOOP(kiln_u16, (T)kiln_f16_to_f32(e)); break;
    case KILN_DTYPE_BF16: LOAD_LOOP(kiln_u16, (T)kiln_bf16_to_f32(e)); break;
    case KILN_DTYPE_I8: LOAD_LOOP(int8_t, (T)e); break;
    case KILN_DTYPE_U8: LOAD_LOOP(uint8_t, (T)e); break;
    case KILN_DTYPE_I32: LOAD_LOOP(int32_t, (T)e); break;
    default: break; /* dtypes were validated */
    }
#undef LOAD_LOOP
}

/* n values of src into dtype dt at p, stride s. sr: stochastic rounding of f16/bf16 with
 * the bits of (seed, stream, lin + j). */
static void SFX(store_seg)(char *p, kiln_dtype dt, int64_t s, const T *restrict src, int64_t n, int sr, uint64_t seed,
                           uint64_t stream, int64_t lin)
{
#define STORE_LOOP(CT, EXPR)                  \
    do {                                      \
        CT *restrict q = (CT *)(void *)p;     \
        if (s == 1)                           \
            for (int64_t j = 0; j < n; j++) { \
                T v = src[j];                 \
                q[j] = (EXPR);                \
            }                                 \
        else                                  \
            for (int64_t j = 0; j < n; j++) { \
                T v = src[j];                 \
                q[j * s] = (EXPR);            \
            }                                 \
    } while (0)
    switch (dt) {
    case KILN_DTYPE_F32: STORE_LOOP(float, (float)v); break;
    case KILN_DTYPE_F64: STORE_LOOP(double, (double)v); break;
    case KILN_DTYPE_F16:
        if (sr)
            STORE_LOOP(kiln_u16, kiln_f32_to_f16_sr((float)v, kiln_rng_bits(seed, stream, (uint64_t)(lin + j))));
        else
            STORE_LOOP(kiln_u16, SFX(to_f16)(v));
        break;
    case KILN_DTYPE_BF16:
        if (sr)
            STORE_LOOP(kiln_u16, kiln_f32_to_bf16_sr((float)v, kiln_rng_bits(seed, stream, (uint64_t)(lin + j))));
        else
            STORE_LOOP(kiln_u16, SFX(to_bf16)(v));
        break;
    case KILN_DTYPE_I8: STORE_LOOP(int8_t, (int8_t)SFX(sat)(v, -128.0, 127.0)); break;
    case KILN_DTYPE_U8: STORE_LOOP(uint8_t, (uint8_t)SFX(sat)(v, 0.0, 255.0)); break;
    case KILN_DTYPE_I32: STORE_LOOP(int32_t, (int32_t)SFX(sat)(v, -2147483648.0, 2147483647.0)); break;
    default: break;
    }
#undef STORE_LOOP
}

/* Stores the block src (laid out as the segments of sg) into the output. */
static void SFX(store)(const xk *x, const seglist *sg, const T *src)
{
    const kiln_plan_output *o = &x->k->out;
    const int64_t es = (int64_t)kiln_dtype_size(o->dtype);
    const int64_t s = ST(x, x->nio - 1, sg->ax);
    const int sr = o->round == KILN_ROUND_STOCHASTIC && (o->dtype == KILN_DTYPE_F16 || o->dtype == KILN_DTYPE_BF16);
    for (int g = 0; g < sg->n; g++) {
        int64_t off = sg->off[(size_t)g * x->nio + (size_t)(x->nio - 1)];
        SFX(store_seg)
        (o->base + (ptrdiff_t)(off * es), o->dtype, s, src, sg->len[g], sr, x->ctx->seed, o->sr_stream, sg->lin[g]);
        src += sg->len[g];
    }
}

/* ---- instructions --------------------------------------------------------------------- */

/* Evaluates instruction i (not a reduction) over the block sg into buf[i]; operands are
 * read from buf[a], buf[b], buf[c]. */
KILN_CPU_HOT static void SFX(eval)(const xk *x, int i, const seglist *sg, T *const *buf)
{
    const kiln_plan_kernel *k = x->k;
    const kiln_plan_instr *in = &k->instr[i];
    const int64_t n = sg->total;
    const int na = pop_nargs[in->op];
    T *restrict o = buf[i];
    const T *restrict a = na >= 1 ? buf[in->a] : NULL;
    const T *restrict b = na >= 2 ? buf[in->b] : NULL;
    const T *restrict c = na >= 3 ? buf[in->c] : NULL;
    const T one = 1, zero = 0;
#define U(EXPR)                       \
    for (int64_t j = 0; j < n; j++) { \
        const T v = a[j];             \
        o[j] = (EXPR);                \
    }                                 \
    break
#define BIN(EXPR)                     \
    for (int64_t j = 0; j < n; j++) { \
        const T v = a[j], w = b[j];   \
        o[j] = (EXPR);                \
    }                                 \
    break
    switch ((kiln_pop)in->op) {
    case KILN_POP_LOAD: {
        const kiln_plan_input *inp = &k->inputs[in->a];
        const int64_t es = (int64_t)kiln_dtype_size(inp->dtype);
        const int64_t s = ST(x, in->a, sg->ax);
        T *d = o;
        for (int g = 0; g < sg->n; g++) {
            int64_t off = sg->off[(size_t)g * x->nio + (size_t)in->a];
            SFX(load_seg)(d, inp->base + (ptrdiff_t)(off * es), inp->dtype, s, sg->len[g]);
            d += sg->len[g];
        }
        break;
    }
    case KILN_POP_CONST: {
        const T v = (T)k->consts[in->a];
        for (int64_t j = 0; j < n; j++) o[j] = v;
        break;
    }
    case KILN_POP_NEG: U(-v);
    case KILN_POP_ABS: U(KF(fabs)(v));
    case KILN_POP_SQR: U(v * v);
    case KILN_POP_SQRT: U(KF(sqrt)(v));
    case KILN_POP_RSQRT: U(one / KF(sqrt)(v));
    case KILN_POP_RECIP: U(one / v);
    case KILN_POP_EXP: U(KF(exp)(v));
    case KILN_POP_EXP2: U(KF(exp2)(v));
    case KILN_POP_LOG: U(KF(log)(v));
    case KILN_POP_LOG2: U(KF(log2)(v));
    case KILN_POP_SIGMOID: U(one / (one + KF(exp)(-v)));
    case KILN_POP_TANH: U(KV(tanh)(v));
    case KILN_POP_RELU: U(v < zero ? zero : v); /* NaN < 0 is false: NaN stays */
    case KILN_POP_FINITE: U(isfinite(v) ? one : zero);
    case KILN_POP_SIGN: U(v > zero ? one : (v < zero ? -one : v)); /* 0 and NaN stay */
    case KILN_POP_LOG1P: U(KV(log1p)(v));
    case KILN_POP_EXPM1: U(KV(expm1)(v));
    case KILN_POP_SIN: U(KF(sin)(v));
    case KILN_POP_COS: U(KF(cos)(v));
    case KILN_POP_ERF: U(KF(erf)(v));
    case KILN_POP_FLOOR: U(KF(floor)(v));
    case KILN_POP_CEIL: U(KF(ceil)(v));
    case KILN_POP_RINT: U(KF(rint)(v)); /* the default rounding mode: to nearest, ties to even */
    case KILN_POP_TRUNC: U(KF(trunc)(v));
    case KILN_POP_CAST: {
        const kiln_dtype dt = (kiln_dtype)in->dtype;
        U(SFX(cast1)(v, dt));
    }
    case KILN_POP_ADD: BIN(v + w);
    case KILN_POP_SUB: BIN(v - w);
    case KILN_POP_MUL: BIN(v * w);
    case KILN_POP_DIV: BIN(v / w);
    case KILN_POP_POW: BIN(KF(pow)(v, w));
    case KILN_POP_FMOD: BIN(KF(fmod)(v, w));
    case KILN_POP_MAX: BIN((v != v || w != w) ? v + w : (v > w ? v : w));
    case KILN_POP_MIN: BIN((v != v || w != w) ? v + w : (v < w ? v : w));
    case KILN_POP_EQ: BIN(v == w ? one : zero);
    case KILN_POP_NE: BIN(v != w ? one : zero);
    case KILN_POP_LT: BIN(v < w ? one : zero);
    case KILN_POP_LE: BIN(v <= w ? one : zero);
    case KILN_POP_GT: BIN(v > w ? one : zero);
    case KILN_POP_GE: BIN(v >= w ? one : zero);
    case KILN_POP_WHERE:
        for (int64_t j = 0; j < n; j++) o[j] = a[j] != zero ? b[j] : c[j];
        break;
    case KILN_POP_RAND:
    case KILN_POP_RANDN:
    case KILN_POP_BERNOULLI: {
        const uint64_t seed = x->ctx->seed, stream = k->streams[in->a];
        const float p = in->op == KILN_POP_BERNOULLI ? (float)k->consts[in->b] : 0.0f;
        T *d = o;
        for (int g = 0; g < sg->n; g++) {
            const uint64_t l0 = (uint64_t)sg->lin[g];
            const int64_t len = sg->len[g];
            if (in->op == KILN_POP_RAND)
                for (int64_t j = 0; j < len; j++) d[j] = (T)kiln_rng_uniform(seed, stream, l0 + (uint64_t)j);
            else if (in->op == KILN_POP_RANDN)
                for (int64_t j = 0; j < len; j++) d[j] = (T)kiln_rng_normal(seed, stream, l0 + (uint64_t)j);
            else
                for (int64_t j = 0; j < len; j++) d[j] = (T)kiln_rng_bernoulli(seed, stream, l0 + (uint64_t)j, p);
            d += len;
        }
        break;
    }
    default: break; /* reductions are accumulated by the driver */
    }
#undef U
#undef BIN
}

/* ---- reductions ----------------------------------------------------------------------- */

/* One reduction's accumulators for nl lanes: sum (SUM, in double across blocks; VAR: the
 * mean), best (MAX/MIN/ARG*; the per-block partial for SUM), idx (ARG*; VAR: the count), m2
 * (VAR: the sum of squared deviations from the mean, in double). */
typedef struct SFX(racc) {
    double *sum;
    T *best;
    int64_t *idx;
    T *nans; /* MAX/MIN in lanes: NaNs seen (the result is NaN when > 0) */
    double *m2;
} SFX(racc);

#ifndef KILN_CPU_VAR_MERGE
#define KILN_CPU_VAR_MERGE
/* Chan's merge of a variance's partials: (n, mean, m2) followed by (nb, mb, m2b). A NaN or an
 * infinity in either makes the mean or m2 NaN, as the two-pass form would. */
static inline void var_merge(int64_t *n, double *mean, double *m2, int64_t nb, double mb, double m2b)
{
    if (nb == 0) return;
    if (*n == 0) {
        *n = nb;
        *mean = mb;
        *m2 = m2b;
        return;
    }
    const int64_t nn = *n + nb;
    const double d = mb - *mean;
    *mean += d * ((double)nb / (double)nn);
    *m2 += m2b + d * d * ((double)*n * (double)nb / (double)nn);
    *n = nn;
}
#endif

static void SFX(red_init)(int op, int64_t nl, SFX(racc) r)
{
    const T inf = (T)INFINITY;
    for (int64_t l = 0; l < nl; l++) {
        r.sum[l] = op == KILN_POP_RED_PROD ? 1.0 : 0.0;
        r.m2[l] = 0.0;
        r.idx[l] = 0;
        r.nans[l] = 0;
        r.best[l] = (op == KILN_POP_RED_MIN || op == KILN_POP_RED_ARGMIN) ? inf : -inf;
    }
}

/* v holds kn values of each of nl lanes, lane after lane; k0 is the inner index of v's first
 * column. */
KILN_CPU_HOT static void SFX(red_rows)(int op, const T *restrict v, int64_t nl, int64_t kn, int64_t k0, SFX(racc) r)
{
    for (int64_t l = 0; l < nl; l++) {
        const T *restrict p = v + l * kn;
        switch (op) {
        case KILN_POP_RED_SUM: {
            T part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t j = 0;
            for (; j + 8 <= kn; j += 8)
                for (int q = 0; q < 8; q++) part[q] += p[j + q];
            T s = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
            for (; j < kn; j++) s += p[j];
            r.sum[l] += (double)s;
            break;
        }
        case KILN_POP_RED_PROD: { /* as SUM: 8 partial products in the compute type, the block's in double */
            T part[8] = {1, 1, 1, 1, 1, 1, 1, 1};
            int64_t j = 0;
            for (; j + 8 <= kn; j += 8)
                for (int q = 0; q < 8; q++) part[q] *= p[j + q];
            T s = ((part[0] * part[1]) * (part[2] * part[3])) * ((part[4] * part[5]) * (part[6] * part[7]));
            for (; j < kn; j++) s *= p[j];
            r.sum[l] *= (double)s;
            break;
        }
        case KILN_POP_RED_VAR: { /* the block's mean and m2 in the compute type, 8 independent
                                    * partials each (vectorizable, as SUM's block sums), the
                                    * corrected two-pass form (the deviations' sum r fixes
                                    * the mean's rounding), merged across blocks in double */
            T s8[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q8[8] = {0, 0, 0, 0, 0, 0, 0, 0}, r8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            int64_t j = 0;
            for (; j + 8 <= kn; j += 8)
                for (int q = 0; q < 8; q++) s8[q] += p[j + q];
            T bs = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
            for (; j < kn; j++) bs += p[j];
            const T bm = bs / (T)kn;
            for (j = 0; j + 8 <= kn; j += 8)
                for (int q = 0; q < 8; q++) {
                    const T d = p[j + q] - bm;
                    r8[q] += d;
                    q8[q] += d * d;
                }
            T bq = ((q8[0] + q8[1]) + (q8[2] + q8[3])) + ((q8[4] + q8[5]) + (q8[6] + q8[7]));
            T br = ((r8[0] + r8[1]) + (r8[2] + r8[3])) + ((r8[4] + r8[5]) + (r8[6] + r8[7]));
            for (; j < kn; j++) {
                const T d = p[j] - bm;
                br += d;
                bq += d * d;
            }
            const double rd = (double)br;
            var_merge(&r.idx[l], &r.sum[l], &r.m2[l], kn, (double)bm + rd / (double)kn,
                      (double)bq - rd * rd / (double)kn);
            break;
        }
        case KILN_POP_RED_MAX:
        case KILN_POP_RED_MIN: {
            /* 8 independent partial results and a NaN count (vectorizable: a NaN-sticky
             * select is not); any NaN makes the result NaN. */
            const int mx = op == KILN_POP_RED_MAX;
            T m = r.best[l];
            if (m != m) break;
            T m8[8], n8[8];
            for (int q = 0; q < 8; q++) {
                m8[q] = m;
                n8[q] = 0;
            }
            int64_t j = 0;
            if (mx)
                for (; j + 8 <= kn; j += 8)
                    for (int q = 0; q < 8; q++) {
                        const T y = p[j + q];
                        m8[q] = y > m8[q] ? y : m8[q];
                        n8[q] += y != y ? (T)1 : (T)0;
                    }
            else
                for (; j + 8 <= kn; j += 8)
                    for (int q = 0; q < 8; q++) {
                        const T y = p[j + q];
                        m8[q] = y < m8[q] ? y : m8[q];
                        n8[q] += y != y ? (T)1 : (T)0;
                    }
            T nn = 0;
            for (int q = 0; q < 8; q++) {
                m = (mx ? m8[q] > m : m8[q] < m) ? m8[q] : m;
                nn += n8[q];
            }
            for (; j < kn; j++) {
                m = (mx ? p[j] > m : p[j] < m) ? p[j] : m;
                nn += p[j] != p[j] ? (T)1 : (T)0;
            }
            r.best[l] = nn > 0 ? (T)NAN : m;
            break;
        }
        case KILN_POP_RED_ARGMAX:
        case KILN_POP_RED_ARGMIN: {
            T m = r.best[l];
            int64_t ix = r.idx[l];
            const int mx = op == KILN_POP_RED_ARGMAX;
            for (int64_t j = 0; j < kn && m == m; j++) {
                const T y = p[j];
                if ((mx ? y > m : y < m) || y != y) {
                    m = y;
                    ix = k0 + j;
                }
            }
            r.best[l] = m;
            r.idx[l] = ix;
            break;
        }
        default: break;
        }
    }
}

/* v holds nl lanes for each of kn inner points, point after point (lanes innermost). */
KILN_CPU_HOT static void SFX(red_cols)(int op, const T *restrict v, int64_t nl, int64_t kn, int64_t k0, SFX(racc) r)
{
    T *restrict best = r.best;
    switch (op) {
    case KILN_POP_RED_SUM:
        for (int64_t l = 0; l < nl; l++) best[l] = 0;
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            for (int64_t l = 0; l < nl; l++) best[l] += p[l];
        }
        for (int64_t l = 0; l < nl; l++) r.sum[l] += (double)best[l];
        break;
    case KILN_POP_RED_PROD:
        for (int64_t l = 0; l < nl; l++) best[l] = 1;
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            for (int64_t l = 0; l < nl; l++) best[l] *= p[l];
        }
        for (int64_t l = 0; l < nl; l++) r.sum[l] *= (double)best[l];
        break;
    case KILN_POP_RED_VAR: /* Welford's update a point, in double */
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            const double inv = 1.0 / (double)(r.idx[0] + 1); /* every lane has seen as many */
            for (int64_t l = 0; l < nl; l++) {
                const double y = (double)p[l], d = y - r.sum[l];
                r.sum[l] += d * inv;
                r.m2[l] += d * (y - r.sum[l]);
            }
            for (int64_t l = 0; l < nl; l++) r.idx[l]++;
        }
        break;
    case KILN_POP_RED_MAX: /* NaNs are counted apart: a NaN-sticky select does not vectorize */
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            T *restrict nans = r.nans;
            for (int64_t l = 0; l < nl; l++) {
                best[l] = p[l] > best[l] ? p[l] : best[l];
                nans[l] += p[l] != p[l] ? (T)1 : (T)0;
            }
        }
        break;
    case KILN_POP_RED_MIN:
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            T *restrict nans = r.nans;
            for (int64_t l = 0; l < nl; l++) {
                best[l] = p[l] < best[l] ? p[l] : best[l];
                nans[l] += p[l] != p[l] ? (T)1 : (T)0;
            }
        }
        break;
    case KILN_POP_RED_ARGMAX:
    case KILN_POP_RED_ARGMIN: {
        const int mx = op == KILN_POP_RED_ARGMAX;
        for (int64_t j = 0; j < kn; j++) {
            const T *restrict p = v + j * nl;
            for (int64_t l = 0; l < nl; l++) {
                const T y = p[l], m = best[l];
                if (m == m && ((mx ? y > m : y < m) || y != y)) {
                    best[l] = y;
                    r.idx[l] = k0 + j;
                }
            }
        }
        break;
    }
    default: break;
    }
}

static void SFX(red_final)(int op, int64_t nl, SFX(racc) r, T *restrict out)
{
    for (int64_t l = 0; l < nl; l++) {
        switch (op) {
        case KILN_POP_RED_SUM:
        case KILN_POP_RED_PROD: out[l] = (T)r.sum[l]; break;
        case KILN_POP_RED_VAR: out[l] = r.idx[l] > 0 ? (T)(r.m2[l] / (double)r.idx[l]) : (T)NAN; break;
        case KILN_POP_RED_ARGMAX:
        case KILN_POP_RED_ARGMIN: out[l] = (T)r.idx[l]; break;
        default: out[l] = r.nans[l] > 0 ? (T)NAN : r.best[l]; break;
        }
    }
}

/* r = r followed by p, for nl lanes: p holds what one chunk of the inner points gave (its
 * accumulators started from red_init), r what the chunks before it gave. Applied in chunk
 * order, this gives every operation's meaning over the whole row: SUM adds the chunk sums in
 * double in order; MAX/MIN keep NaN; ARG* keep the first index of the extreme (a later chunk
 * wins only when strictly better or NaN, and nothing wins after a NaN). */
static void SFX(red_combine)(int op, int64_t nl, SFX(racc) r, SFX(racc) p)
{
    for (int64_t l = 0; l < nl; l++) {
        const T m = r.best[l], y = p.best[l];
        switch (op) {
        case KILN_POP_RED_SUM: r.sum[l] += p.sum[l]; break;
        case KILN_POP_RED_PROD: r.sum[l] *= p.sum[l]; break;
        case KILN_POP_RED_VAR: var_merge(&r.idx[l], &r.sum[l], &r.m2[l], p.idx[l], p.sum[l], p.m2[l]); break;
        case KILN_POP_RED_MAX:
        case KILN_POP_RED_MIN:
            r.nans[l] += p.nans[l];
            if (m == m && (y != y || (op == KILN_POP_RED_MAX ? y > m : y < m))) r.best[l] = y;
            break;
        case KILN_POP_RED_ARGMAX:
        case KILN_POP_RED_ARGMIN:
            if (m == m && (y != y || (op == KILN_POP_RED_ARGMAX ? y > m : y < m))) {
                r.best[l] = y;
                r.idx[l] = p.idx[l];
            }
            break;
        default: break;
        }
    }
}

/* ---- the driver ----------------------------------------------------------------------- */

static size_t SFX(rup)(size_t n)
{
    return (n + 63) / 64 * 64;
}

/* One worker's scratch: a buffer per instruction (valp; rowp for ROW values), the
 * reductions' accumulators, the block's and the row group's segments, the lanes' offsets
 * and indices. */
typedef struct SFX(wsp) {
    T **valp, **rowp;
    T **valo; /* the worker's own buffer of each instruction (valp[i] may point at an input instead) */
    T **keep; /* [nkeep]: a row of each kept instruction (rows of several blocks; job keep_len) */
    SFX(racc) * acc;
    seglist fs, rs;
    int64_t *lane_off, *lane_lin, *lane_olin;
} SFX(wsp);

/* One kernel's run, shared by its workers. Geometry is fixed before any task runs and
 * depends on the kernel alone (never on the thread count). */
typedef struct SFX(job) {
    xk *x;
    int64_t nl_max, kn_max, B; /* lanes per row group, inner points per block, values per block */
    size_t wbytes;             /* one worker's scratch */
    SFX(wsp) * ws;             /* [nworkers], carved before any task runs */
    seglist ps;                /* short rows: the segments of one whole row, relative to its start */
    int64_t ew_points;         /* EW: points per task */
    int64_t ngroups, gpl, gpt; /* row groups; COL: per line of the innermost kept axis; per task */
    /* chunked walks (few row groups, long inner walks): the group being run, in worker 0's
     * scratch, and per chunk of inner points its partial accumulators */
    SFX(wsp) * g;
    int64_t nl;
    int wk;
    int64_t ch, nchunks;
    SFX(racc) * part; /* [nchunks][nred] */
    int keep;         /* kept values taken (x->nkeep > 0; chunked walks: rows up to KEEP_CHUNKED_MAX) */
    int64_t keep_len; /* values of a worker's row buffer per kept instruction, 0: none */
    T **kshared;      /* chunked walks: [nkeep] the group's row of each kept instruction, shared by the chunks */
} SFX(job);

static void SFX(carve)(const SFX(job) * j, char *w, SFX(wsp) * s)
{
    const xk *x = j->x;
    const int ni = x->k->ninstr, nio = x->nio;
    const int64_t B = j->B;
#define CARVE(ptr, type, count)                        \
    do {                                               \
        ptr = (type *)(void *)w;                       \
        w += SFX(rup)((size_t)(count) * sizeof(type)); \
    } while (0)
    s->fs.ax = s->rs.ax = x->nd - 1;
    CARVE(s->valp, T *, ni);
    CARVE(s->valo, T *, ni);
    CARVE(s->rowp, T *, ni);
    CARVE(s->acc, SFX(racc), x->nred);
    for (int i = 0; i < ni; i++) {
        CARVE(s->valp[i], T, B);
        s->valo[i] = s->valp[i];
    }
    for (int i = 0; i < ni; i++) {
        if (x->mode == MODE_EW)
            s->rowp[i] = s->valp[i];
        else
            CARVE(s->rowp[i], T, B);
    }
    for (int r = 0; r < x->nred; r++) {
        CARVE(s->acc[r].sum, double, B);
        CARVE(s->acc[r].best, T, B);
        CARVE(s->acc[r].idx, int64_t, B);
        CARVE(s->acc[r].nans, T, B);
        CARVE(s->acc[r].m2, double, B);
    }
    CARVE(s->fs.len, int32_t, B);
    CARVE(s->fs.lin, int64_t, B);
    CARVE(s->fs.off, int64_t, B * nio);
    CARVE(s->rs.len, int32_t, B);
    CARVE(s->rs.lin, int64_t, B);
    CARVE(s->rs.off, int64_t, B * nio);
    CARVE(s->lane_off, int64_t, B * nio);
    CARVE(s->lane_lin, int64_t, B);
    CARVE(s->lane_olin, int64_t, B);
    s->keep = NULL;
    if (j->keep_len > 0) {
        CARVE(s->keep, T *, x->nkeep);
        for (int q = 0; q < x->nkeep; q++) CARVE(s->keep[q], T, j->keep_len);
    }
#undef CARVE
}

/* The bytes SFX(carve) takes. */
static size_t SFX(wsp_bytes)(const xk *x, int64_t B)
{
    const int ni = x->k->ninstr, nio = x->nio;
    const size_t vb = SFX(rup)((size_t)B * sizeof(T));
    const size_t segb = SFX(rup)((size_t)B * sizeof(int32_t)) + SFX(rup)((size_t)B * sizeof(int64_t)) +
                        SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t));
    const size_t redb = 2 * SFX(rup)((size_t)B * sizeof(double)) + 2 * vb + SFX(rup)((size_t)B * sizeof(int64_t));
    const int nrowbuf = x->mode == MODE_EW ? 0 : ni;
    return (size_t)(ni + nrowbuf) * vb + (size_t)x->nred * redb + 2 * segb +
           SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t)) + 2 * SFX(rup)((size_t)B * sizeof(int64_t)) +
           3 * SFX(rup)((size_t)ni * sizeof(T *)) + SFX(rup)((size_t)x->nred * sizeof(SFX(racc)));
}

/* FULL instruction i over the block sg into s->valp[i]. A LOAD of an input stored as T whose
 * block is one unit-stride run of memory is not copied: valp[i] points at the input (only
 * read; an output stored in place is written after the block's last read, and only where it
 * meets the input point for point, the planner's rule). Else valp[i] is the worker's buffer. */
static void SFX(eval_full)(const xk *x, int i, const seglist *sg, SFX(wsp) * s)
{
    const kiln_plan_instr *in = &x->k->instr[i];
    s->valp[i] = s->valo[i];
    if (in->op == KILN_POP_LOAD && sg->n > 0) {
        const kiln_plan_input *inp = &x->k->inputs[in->a];
#if KILN_EXEC_F64
        const kiln_dtype tdt = KILN_DTYPE_F64;
#else
        const kiln_dtype tdt = KILN_DTYPE_F32;
#endif
        if (inp->dtype == tdt && ST(x, in->a, sg->ax) == 1) {
            const size_t nio = (size_t)x->nio;
            int64_t at = sg->off[in->a];
            int run = 1;
            for (int g = 0; g + 1 < sg->n && run; g++) {
                at += sg->len[g];
                run = sg->off[(size_t)(g + 1) * nio + (size_t)in->a] == at;
            }
            if (run) {
                s->valp[i] = (T *)(void *)(inp->base + (ptrdiff_t)(sg->off[in->a] * (int64_t)sizeof(T)));
                return;
            }
        }
    }
    SFX(eval)(x, i, sg, s->valp);
}

/* EW task t: the points [t * ew_points, ...) in blocks of B. */
static void SFX(ew_task)(void *arg, int64_t t, int worker)
{
    const SFX(job) *j = arg;
    const xk *x = j->x;
    SFX(wsp) *s = &j->ws[worker];
    int all[KILN_MAX_DIMS];
    for (int d = 0; d < x->nd; d++) all[d] = d;
    for (int io = 0; io < x->nio; io++) s->lane_off[io] = 0;
    const int64_t end = (t + 1) * j->ew_points < x->numel ? (t + 1) * j->ew_points : x->numel;
    for (int64_t start = t * j->ew_points; start < end; start += j->B) {
        const int64_t n = end - start < j->B ? end - start : j->B;
        s->fs.n = 0;
        s->fs.total = 0;
        gen_segs(x, all, x->nd, 0, s->lane_off, 0, start, n, &s->fs);
        for (int q = 0; q < x->nfull[0]; q++) SFX(eval_full)(x, x->full_list[q], &s->fs, s);
        SFX(store)(x, &s->fs, s->valp[x->k->out_instr]);
    }
}

/* Sets s's row group to the one whose first outer point is oidx (indexed by domain axis;
 * advanced past the group): its lanes (offsets, indices) and row segments rs. first_row is
 * the group's first row (ROW mode). Returns the group's lane count. */
static int64_t SFX(group_at)(const SFX(job) * j, SFX(wsp) * s, int64_t *oidx, int64_t first_row)
{
    const xk *x = j->x;
    const int nio = x->nio, last = x->nd - 1;
    int64_t nl;
    seglist *rs = &s->rs;
    if (x->mode == MODE_COL) {
        nl = x->shape[last] - oidx[last];
        if (nl > j->nl_max) nl = j->nl_max;
        point_at(x, oidx, x->outer, x->nouter, s->lane_off, &s->lane_lin[0], &s->lane_olin[0]);
        odo_step(x, oidx, x->outer, x->nouter, nl);
        rs->ax = last;
        rs->n = 1;
        rs->len[0] = (int32_t)nl;
        rs->lin[0] = s->lane_olin[0];
        for (int io = 0; io < nio; io++) rs->off[io] = s->lane_off[io];
    } else {
        nl = x->outer_n - first_row;
        if (nl > j->nl_max) nl = j->nl_max;
        const int lo = x->nouter > 0 ? x->outer[x->nouter - 1] : 0; /* the innermost kept axis */
        rs->ax = lo;
        rs->n = 0;
        for (int64_t l = 0; l < nl; l++) {
            int64_t *lof = s->lane_off + l * nio;
            if (l > 0 && oidx[lo] != 0) { /* next point along the innermost kept axis */
                for (int io = 0; io < nio; io++) lof[io] = lof[io - nio] + ST(x, io, lo);
                s->lane_lin[l] = s->lane_lin[l - 1] + x->lin[lo];
                s->lane_olin[l] = s->lane_olin[l - 1] + x->olin[lo];
                rs->len[rs->n - 1]++; /* the row values continue the current segment */
            } else {
                point_at(x, oidx, x->outer, x->nouter, lof, &s->lane_lin[l], &s->lane_olin[l]);
                rs->len[rs->n] = 1;
                rs->lin[rs->n] = s->lane_olin[l];
                for (int io = 0; io < nio; io++) rs->off[(size_t)rs->n * nio + io] = lof[io];
                rs->n++;
            }
            odo_step(x, oidx, x->outer, x->nouter, 1);
        }
    }
    rs->total = nl;
    return nl;
}

/* Walk wk of the row group g (nl lanes; its lanes and ROW values) over the inner points
 * [k_begin, k_end), block by block in s's buffers: evaluates the walk's FULL instructions and
 * accumulates the pass's reductions into acc, or (the output walk) stores the output. Block
 * boundaries are multiples of kn_max from k = 0, whatever k_begin is (it is one). */
static void SFX(walk)(const SFX(job) * j, SFX(wsp) * s, const SFX(wsp) * g, int64_t nl, int wk, int64_t k_begin,
                      int64_t k_end, SFX(racc) * acc)
{
    const xk *x = j->x;
    const kiln_plan_kernel *k = x->k;
    const int ni = k->ninstr, nio = x->nio, col = x->mode == MODE_COL;
    const int is_out = wk >= k->npasses;
    const int *reds = x->red_list + (size_t)wk * ni;
    const int *fulls = x->full_list + (size_t)wk * ni;
    const int64_t kcap = j->kn_max;
    seglist *fs = &s->fs;
    /* kept values: a group of one block keeps them in the instructions' own buffers; a row of
     * several, in the worker's row buffers (analyse_keep) */
    const int single = nl > 1 || x->inner_n <= j->kn_max;
    T *const *kbuf = j->kshared ? j->kshared : s->keep;
    const int keep = j->keep && (single || kbuf != NULL);
    const int *evals = keep ? x->kfull_list + (size_t)wk * ni : fulls;
    const int nevals = keep ? x->nkfull[wk] : x->nfull[wk];
    const int *exps = (keep ? x->kexp_list : x->exp_list) + (size_t)wk * ni;
    const int nexps = keep ? x->nkexp[wk] : x->nexp[wk];
    /* ROW values read by this walk's FULL work, broadcast over the block layout. */
    for (int t = 0; t < nexps; t++) {
        const T *rv = g->rowp[exps[t]];
        T *d = s->valp[exps[t]];
        if (col) {
            for (int64_t q = 0; q < kcap; q++)
                for (int64_t l = 0; l < nl; l++) d[q * nl + l] = rv[l];
        } else {
            for (int64_t l = 0; l < nl; l++)
                for (int64_t q = 0; q < kcap; q++) d[l * kcap + q] = rv[l];
        }
    }
    for (int64_t k0 = k_begin; k0 < k_end;) {
        const int64_t kn = k_end - k0 < j->kn_max ? k_end - k0 : j->kn_max;
        fs->n = 0;
        fs->total = 0;
        if (col)
            gen_segs(x, x->inner, x->ninner, nl, g->lane_off, g->lane_lin[0], k0, kn, fs);
        else if (nl == 1)
            gen_segs(x, x->inner, x->ninner, 0, g->lane_off, g->lane_lin[0], k0, kn, fs);
        else /* whole short rows: the row's segment pattern shifted to each lane */
            for (int64_t l = 0; l < nl; l++) {
                const int64_t *lof = g->lane_off + l * nio;
                for (int q = 0; q < j->ps.n; q++) {
                    int sn = fs->n++;
                    fs->len[sn] = j->ps.len[q];
                    fs->lin[sn] = j->ps.lin[q] + g->lane_lin[l];
                    for (int io = 0; io < nio; io++)
                        fs->off[(size_t)sn * nio + io] = j->ps.off[(size_t)q * nio + io] + lof[io];
                }
                fs->total += j->ps.total;
            }
        if (keep)
            for (int t = 0; t < x->ntake[wk]; t++) {
                const int i = x->take_list[(size_t)wk * ni + t];
                s->valp[i] = single ? s->valo[i] : kbuf[x->keep_slot[i]] + k0;
            }
        for (int t = 0; t < nevals; t++) SFX(eval_full)(x, evals[t], fs, s);
        if (keep && !single)
            for (int t = 0; t < x->nkeepw[wk]; t++) {
                const int i = x->keepw_list[(size_t)wk * ni + t];
                memcpy(kbuf[x->keep_slot[i]] + k0, s->valp[i], (size_t)kn * sizeof(T));
            }
        if (is_out) {
            SFX(store)(x, fs, s->valp[k->out_instr]);
        } else {
            for (int t = 0; t < x->nredw[wk]; t++) {
                const int i = reds[t];
                const T *v = s->valp[k->instr[i].a];
                if (col)
                    SFX(red_cols)(k->instr[i].op, v, nl, kn, k0, acc[x->redslot[i]]);
                else
                    SFX(red_rows)(k->instr[i].op, v, nl, kn, k0, acc[x->redslot[i]]);
            }
        }
        k0 += kn;
    }
}

/* Initializes acc for walk wk's reductions. */
static void SFX(walk_init)(const xk *x, int wk, int64_t nl, SFX(racc) * acc)
{
    const int *reds = x->red_list + (size_t)wk * x->k->ninstr;
    for (int t = 0; t < x->nredw[wk]; t++) {
        const int i = reds[t];
        SFX(red_init)(x->k->instr[i].op, nl, acc[x->redslot[i]]);
    }
}

/* After walk wk (a pass): its reductions' results into the ROW buffers, then the ROW
 * instructions that became computable. */
static void SFX(walk_finish)(const xk *x, SFX(wsp) * s, int wk, int64_t nl)
{
    const int ni = x->k->ninstr;
    const int *reds = x->red_list + (size_t)wk * ni;
    for (int t = 0; t < x->nredw[wk]; t++) {
        const int i = reds[t];
        SFX(red_final)(x->k->instr[i].op, nl, s->acc[x->redslot[i]], s->rowp[i]);
    }
    const int *rows = x->row_list + (size_t)(wk + 1) * ni;
    for (int t = 0; t < x->nrow[wk + 1]; t++) SFX(eval)(x, rows[t], &s->rs, s->rowp);
}

/* A pass that reduces nothing walks nothing. */
static int SFX(walk_idle)(const xk *x, int wk)
{
    return wk < x->k->npasses && x->nredw[wk] == 0;
}

/* Runs the whole row group set up in s (nl lanes): ROW values, the passes, the output. */
static void SFX(group_run)(const SFX(job) * j, SFX(wsp) * s, int64_t nl)
{
    const xk *x = j->x;
    const kiln_plan_kernel *k = x->k;
    for (int t = 0; t < x->nrow[0]; t++) SFX(eval)(x, x->row_list[t], &s->rs, s->rowp);
    for (int wk = 0; wk < x->nwalks; wk++) {
        const int is_out = wk >= k->npasses;
        if (!is_out) SFX(walk_init)(x, wk, nl, s->acc);
        if (!SFX(walk_idle)(x, wk)) SFX(walk)(j, s, s, nl, wk, 0, x->inner_n, s->acc);
        if (!is_out) SFX(walk_finish)(x, s, wk, nl);
    }
    if (k->out.is_row) SFX(store)(x, &s->rs, s->rowp[k->out_instr]);
}

/* The first outer point of row group g (indexed by domain axis) into oidx. */
static void SFX(group_start)(const SFX(job) * j, int64_t g, int64_t *oidx)
{
    const xk *x = j->x;
    int64_t r;
    int n = x->nouter;
    for (int d = 0; d < KILN_MAX_DIMS; d++) oidx[d] = 0;
    if (x->mode == MODE_COL) { /* lines of the innermost kept axis, gpl groups each */
        oidx[x->nd - 1] = g % j->gpl * j->nl_max;
        r = g / j->gpl;
        n--; /* the innermost kept axis is the last outer axis */
    } else {
        r = g * j->nl_max;
    }
    for (int a = n - 1; a >= 0; a--) {
        const int d = x->outer[a];
        oidx[d] = r % x->shape[d];
        r /= x->shape[d];
    }
}

/* Row-group task t: groups [t * gpt, ...) one after the other, each whole. */
static void SFX(rows_task)(void *arg, int64_t t, int worker)
{
    const SFX(job) *j = arg;
    SFX(wsp) *s = &j->ws[worker];
    int64_t oidx[KILN_MAX_DIMS];
    const int64_t g0 = t * j->gpt, g1 = g0 + j->gpt < j->ngroups ? g0 + j->gpt : j->ngroups;
    SFX(group_start)(j, g0, oidx);
    for (int64_t g = g0; g < g1; g++) {
        const int64_t nl = SFX(group_at)(j, s, oidx, g * j->nl_max);
        SFX(group_run)(j, s, nl);
    }
}

/* Chunk task t of the current walk of the current group: the inner points
 * [t * ch, (t + 1) * ch), accumulated into the chunk's own partials (a pass) or stored. */
static void SFX(chunk_task)(void *arg, int64_t t, int worker)
{
    const SFX(job) *j = arg;
    const xk *x = j->x;
    SFX(racc) *acc = j->part + (size_t)t * (size_t)x->nred;
    const int64_t k0 = t * j->ch, k1 = k0 + j->ch < x->inner_n ? k0 + j->ch : x->inner_n;
    if (j->wk < x->k->npasses) SFX(walk_init)(x, j->wk, j->nl, acc);
    SFX(walk)(j, &j->ws[worker], j->g, j->nl, j->wk, k0, k1, acc);
}

static kiln_status SFX(run)(xk *x)
{
    const kiln_plan_kernel *k = x->k;
    const int ni = k->ninstr, nio = x->nio, ew = x->mode == MODE_EW;
    const int col = x->mode == MODE_COL;
    const int last = x->nd - 1;
    SFX(job) j;
    memset(&j, 0, sizeof j);
    j.x = x;
    /* Block geometry: nl_max lanes (rows) of at most kn_max inner points; B values. */
    int64_t nl_max = 1, kn_max = 1, B;
    if (ew) {
        B = x->numel < BLOCK ? x->numel : BLOCK;
    } else {
        if (col) {
            nl_max = x->shape[last] < BLOCK ? x->shape[last] : BLOCK;
            kn_max = BLOCK / nl_max;
        } else if (x->inner_n > 0 && x->inner_n * 2 <= BLOCK) {
            nl_max = BLOCK / x->inner_n; /* several short rows per block */
            if (nl_max > x->outer_n) nl_max = x->outer_n;
            kn_max = x->inner_n;
        } else {
            kn_max = BLOCK;
        }
        if (kn_max > x->inner_n) kn_max = x->inner_n;
        B = nl_max * (kn_max > 0 ? kn_max : 1);
    }
    j.nl_max = nl_max;
    j.kn_max = kn_max;
    j.B = B; /* small domains get small buffers: B <= BLOCK, and B >= every lane count */
    j.wbytes = SFX(wsp_bytes)(x, B);

    /* Tasks. EW: runs of TASK_POINTS points. Else row groups (COL: gpl per line of the
     * innermost kept axis), gpt per task; or, with few groups and long inner walks, each
     * group alone with every walk cut into chunks of whole blocks. */
    const size_t segb = SFX(rup)((size_t)B * sizeof(int32_t)) + SFX(rup)((size_t)B * sizeof(int64_t)) +
                        SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t));
    int64_t ntasks;
    int chunked = 0;
    size_t shared = segb + SFX(rup)((size_t)nio * sizeof(int64_t)), partb = 0;
    if (ew) {
        j.ew_points = TASK_POINTS / B * B;
        ntasks = (x->numel + j.ew_points - 1) / j.ew_points;
    } else {
        if (col) {
            j.gpl = (x->shape[last] + nl_max - 1) / nl_max;
            j.ngroups = x->outer_n / x->shape[last] * j.gpl;
        } else {
            j.ngroups = (x->outer_n + nl_max - 1) / nl_max;
        }
        const int64_t gpoints = nl_max * (x->inner_n > 0 ? x->inner_n : 1);
        j.gpt = gpoints >= TASK_POINTS ? 1 : (TASK_POINTS + gpoints - 1) / gpoints;
        ntasks = (j.ngroups + j.gpt - 1) / j.gpt;
        if (j.ngroups < GROUPS_FEW && kn_max > 0) {
            const int64_t nb = (x->inner_n + kn_max - 1) / kn_max; /* blocks per walk */
            int64_t bpc = (nb + CHUNKS_MAX - 1) / CHUNKS_MAX;
            if (bpc < CHUNK_BLOCKS) bpc = CHUNK_BLOCKS;
            j.ch = bpc * kn_max;
            j.nchunks = (nb + bpc - 1) / bpc;
            chunked = j.nchunks > 1;
        }
        if (chunked) {
            ntasks = j.nchunks;
            partb = 3 * SFX(rup)((size_t)nl_max * sizeof(double)) + 2 * SFX(rup)((size_t)nl_max * sizeof(T));
            shared += SFX(rup)((size_t)j.nchunks * (size_t)x->nred * sizeof(SFX(racc))) +
                      (size_t)j.nchunks * (size_t)x->nred * partb;
        }
    }
    /* kept values (analyse_keep): rows of several blocks up to KEEP_ROW_MAX points keep theirs
     * in a row buffer per kept instruction and worker; chunked walks (a few long rows, each
     * chunk's worker another) in one row buffer per kept instruction that the chunks share,
     * up to KEEP_CHUNKED_MAX points; longer rows compute them again */
    const size_t krow = (size_t)x->nkeep * SFX(rup)((size_t)x->inner_n * sizeof(T)) +
                        SFX(rup)((size_t)x->nkeep * sizeof(T *));
    j.keep = x->nkeep > 0 && (!chunked || x->inner_n <= KEEP_CHUNKED_MAX);
    if (j.keep && chunked) {
        shared += krow;
    } else if (j.keep && nl_max == 1 && x->inner_n > kn_max && x->inner_n <= KEEP_ROW_MAX) {
        j.keep_len = x->inner_n;
        j.wbytes += krow;
    }
    /* work: points (whether to share at all); cost: points x instruction costs (whether to
     * wake sleeping threads), per walk for a chunked one */
    const int64_t work = chunked ? nl_max * x->inner_n : x->numel;
    int64_t cost = 0;
    for (int wk = 0; wk < x->nwalks; wk++) cost += walk_cost(x, wk);
    cost *= work;
    int nw = x->split_ok ? kiln__cpu_workers(x->ctx, ntasks, work) : 1;

    /* Under a memory limit the workers' scratch may not fit where one's does: then one. */
    kiln_block *blk = NULL;
#define RUN_BYTES(nw) ((size_t)(nw) * (j.wbytes + sizeof(SFX(wsp))) + 64 + shared)
    kiln_status st = nw > 1 ? kiln__mem_try_alloc(x->ctx, RUN_BYTES(nw), __FILE__, __LINE__, &blk)
                             : kiln__mem_alloc(x->ctx, RUN_BYTES(nw), __FILE__, __LINE__, &blk);
    if (st == KILN_ERR_OOM && nw > 1) {
        nw = 1;
        st = kiln__mem_alloc(x->ctx, RUN_BYTES(1), __FILE__, __LINE__, &blk);
    }
#undef RUN_BYTES
    KILN_TRY(st);
    char *w = (char *)blk->ptr + (size_t)nw * j.wbytes;
    j.ws = (SFX(wsp) *)(void *)w;
    w += SFX(rup)((size_t)nw * sizeof(SFX(wsp)));
    for (int q = 0; q < nw; q++) SFX(carve)(&j, (char *)blk->ptr + (size_t)q * j.wbytes, &j.ws[q]);
    j.ps.ax = last;
    j.ps.len = (int32_t *)(void *)w;
    w += SFX(rup)((size_t)B * sizeof(int32_t));
    j.ps.lin = (int64_t *)(void *)w;
    w += SFX(rup)((size_t)B * sizeof(int64_t));
    j.ps.off = (int64_t *)(void *)w;
    w += SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t));
    if (chunked) {
        j.part = (SFX(racc) *)(void *)w;
        w += SFX(rup)((size_t)j.nchunks * (size_t)x->nred * sizeof(SFX(racc)));
        for (int64_t c = 0; c < j.nchunks * x->nred; c++) {
            SFX(racc) *r = &j.part[c];
            r->sum = (double *)(void *)w;
            w += SFX(rup)((size_t)nl_max * sizeof(double));
            r->idx = (int64_t *)(void *)w;
            w += SFX(rup)((size_t)nl_max * sizeof(int64_t));
            r->best = (T *)(void *)w;
            w += SFX(rup)((size_t)nl_max * sizeof(T));
            r->nans = (T *)(void *)w;
            w += SFX(rup)((size_t)nl_max * sizeof(T));
            r->m2 = (double *)(void *)w;
            w += SFX(rup)((size_t)nl_max * sizeof(double));
        }
    }
    if (j.keep && chunked) {
        j.kshared = (T **)(void *)w;
        w += SFX(rup)((size_t)x->nkeep * sizeof(T *));
        for (int q = 0; q < x->nkeep; q++) {
            j.kshared[q] = (T *)(void *)w;
            w += SFX(rup)((size_t)x->inner_n * sizeof(T));
        }
    }
    /* Short rows (several per block): the segments of one whole row, relative to its start. */
    j.ps.n = 0;
    j.ps.total = 0;
    if (!ew && !col && nl_max > 1) {
        int64_t *zero = (int64_t *)(void *)w; /* offsets of the row's start: 0 */
        for (int io = 0; io < nio; io++) zero[io] = 0;
        gen_segs(x, x->inner, x->ninner, 0, zero, 0, 0, x->inner_n, &j.ps);
    }

    if (ew) {
        kiln__cpu_parallel(x->ctx, nw, ntasks, cost, SFX(ew_task), &j);
    } else if (!chunked) {
        kiln__cpu_parallel(x->ctx, nw, ntasks, cost, SFX(rows_task), &j);
    } else {
        /* Few groups: each one on the calling thread, its walks cut into chunks run by every
         * worker; a pass's chunk partials are combined here, in chunk order. The group's
         * state is in worker 0's scratch: its ROW buffers, accumulators and lanes, which
         * the chunk tasks only read (worker 0's tasks use its block buffers and fs). */
        SFX(wsp) g = j.ws[0];
        j.g = &g;
        int64_t oidx[KILN_MAX_DIMS] = {0};
        for (int64_t gi = 0; gi < j.ngroups; gi++) {
            const int64_t nl = SFX(group_at)(&j, &g, oidx, gi * nl_max);
            j.nl = nl;
            for (int t = 0; t < x->nrow[0]; t++) SFX(eval)(x, x->row_list[t], &g.rs, g.rowp);
            for (int wk = 0; wk < x->nwalks; wk++) {
                const int is_out = wk >= k->npasses;
                if (!is_out) SFX(walk_init)(x, wk, nl, g.acc);
                if (!SFX(walk_idle)(x, wk)) {
                    j.wk = wk;
                    kiln__cpu_parallel(x->ctx, nw, j.nchunks, work * walk_cost(x, wk), SFX(chunk_task), &j);
                    const int *reds = x->red_list + (size_t)wk * ni;
                    for (int t = 0; t < x->nredw[wk] && !is_out; t++) {
                        const int i = reds[t], r = x->redslot[i];
                        for (int64_t c = 0; c < j.nchunks; c++)
                            SFX(red_combine)(k->instr[i].op, nl, g.acc[r], j.part[(size_t)c * x->nred + r]);
                    }
                }
                if (!is_out) SFX(walk_finish)(x, &g, wk, nl);
            }
            if (k->out.is_row) SFX(store)(x, &g.rs, g.rowp[k->out_instr]);
        }
    }
    kiln__mem_free(x->ctx, blk);
    return KILN_OK;
}
