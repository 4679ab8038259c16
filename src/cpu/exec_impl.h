/*
 * src/cpu/exec_impl.h — the typed half of the CPU plan interpreter, included twice by
 * src/cpu/exec.c: with T = float (compute_f64 == 0) and T = double (compute_f64 == 1).
 * It provides loads (input dtype -> T), stores (T -> output dtype with the output's
 * rounding), one function per instruction over a block, the reductions, and the driver
 * SFX(run) that walks the kernel's domain (see the mode descriptions in exec.c).
 * Needs: T, SFX(name) (adds the type suffix), KF(fn) (libm function for T), KILN_EXEC_F64.
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
static void SFX(eval)(const xk *x, int i, const seglist *sg, T *const *buf)
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
    case KILN_POP_TANH: U(KF(tanh)(v));
    case KILN_POP_RELU: U(v < zero ? zero : v); /* NaN < 0 is false: NaN stays */
    case KILN_POP_FINITE: U(isfinite(v) ? one : zero);
    case KILN_POP_SIGN: U(v > zero ? one : (v < zero ? -one : v)); /* 0 and NaN stay */
    case KILN_POP_CAST: {
        const kiln_dtype dt = (kiln_dtype)in->dtype;
        U(SFX(cast1)(v, dt));
    }
    case KILN_POP_ADD: BIN(v + w);
    case KILN_POP_SUB: BIN(v - w);
    case KILN_POP_MUL: BIN(v * w);
    case KILN_POP_DIV: BIN(v / w);
    case KILN_POP_POW: BIN(KF(pow)(v, w));
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

/* One reduction's accumulators for nl lanes: sum (SUM, in double across blocks), best
 * (MAX/MIN/ARG*; the per-block partial for SUM), idx (ARG*). */
typedef struct SFX(racc) {
    double *sum;
    T *best;
    int64_t *idx;
    T *nans; /* MAX/MIN in lanes: NaNs seen (the result is NaN when > 0) */
} SFX(racc);

static void SFX(red_init)(int op, int64_t nl, SFX(racc) r)
{
    const T inf = (T)INFINITY;
    for (int64_t l = 0; l < nl; l++) {
        r.sum[l] = 0.0;
        r.idx[l] = 0;
        r.nans[l] = 0;
        r.best[l] = (op == KILN_POP_RED_MIN || op == KILN_POP_RED_ARGMIN) ? inf : -inf;
    }
}

/* v holds kn values of each of nl lanes, lane after lane; k0 is the inner index of v's first
 * column. */
static void SFX(red_rows)(int op, const T *restrict v, int64_t nl, int64_t kn, int64_t k0, SFX(racc) r)
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
static void SFX(red_cols)(int op, const T *restrict v, int64_t nl, int64_t kn, int64_t k0, SFX(racc) r)
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
        case KILN_POP_RED_SUM: out[l] = (T)r.sum[l]; break;
        case KILN_POP_RED_ARGMAX:
        case KILN_POP_RED_ARGMIN: out[l] = (T)r.idx[l]; break;
        default: out[l] = r.nans[l] > 0 ? (T)NAN : r.best[l]; break;
        }
    }
}

/* ---- the driver ----------------------------------------------------------------------- */

static size_t SFX(rup)(size_t n)
{
    return (n + 63) / 64 * 64;
}

static kiln_status SFX(run)(xk *x)
{
    const kiln_plan_kernel *k = x->k;
    const int ni = k->ninstr, nio = x->nio, ew = x->mode == MODE_EW;
    const int col = x->mode == MODE_COL;
    const int last = x->nd - 1;
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
    const int64_t kcap = kn_max; /* inner points per block */
    /* Small domains get small buffers: B <= BLOCK, and B >= every lane count. */
    const size_t vb = SFX(rup)((size_t)B * sizeof(T));
    const size_t segb = SFX(rup)((size_t)B * sizeof(int32_t)) + SFX(rup)((size_t)B * sizeof(int64_t)) +
                        SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t));
    const size_t redb = SFX(rup)((size_t)B * sizeof(double)) + 2 * vb + SFX(rup)((size_t)B * sizeof(int64_t));
    const int nrowbuf = ew ? 0 : ni;
    size_t bytes = (size_t)(ni + nrowbuf) * vb + (size_t)x->nred * redb + 3 * segb +
                   SFX(rup)((size_t)B * (size_t)nio * sizeof(int64_t)) + 2 * SFX(rup)((size_t)B * sizeof(int64_t)) +
                   2 * SFX(rup)((size_t)ni * sizeof(T *)) + SFX(rup)((size_t)x->nred * sizeof(SFX(racc)));
    kiln_block *blk = NULL;
    KILN_TRY(kiln__mem_alloc(x->ctx, bytes, __FILE__, __LINE__, &blk));
    char *w = blk->ptr;
#define CARVE(ptr, type, count)                        \
    do {                                               \
        ptr = (type *)(void *)w;                       \
        w += SFX(rup)((size_t)(count) * sizeof(type)); \
    } while (0)
    T **valp, **rowp;
    SFX(racc) * acc;
    int64_t *lane_off, *lane_lin, *lane_olin;
    seglist fs, rs, ps;
    fs.ax = rs.ax = ps.ax = x->nd - 1;
    CARVE(valp, T *, ni);
    CARVE(rowp, T *, ni);
    CARVE(acc, SFX(racc), x->nred);
    for (int i = 0; i < ni; i++) CARVE(valp[i], T, B);
    for (int i = 0; i < ni; i++) {
        if (ew)
            rowp[i] = valp[i];
        else
            CARVE(rowp[i], T, B);
    }
    for (int r = 0; r < x->nred; r++) {
        CARVE(acc[r].sum, double, B);
        CARVE(acc[r].best, T, B);
        CARVE(acc[r].idx, int64_t, B);
        CARVE(acc[r].nans, T, B);
    }
    CARVE(fs.len, int32_t, B);
    CARVE(fs.lin, int64_t, B);
    CARVE(fs.off, int64_t, B * nio);
    CARVE(rs.len, int32_t, B);
    CARVE(rs.lin, int64_t, B);
    CARVE(rs.off, int64_t, B * nio);
    CARVE(ps.len, int32_t, B);
    CARVE(ps.lin, int64_t, B);
    CARVE(ps.off, int64_t, B * nio);
    CARVE(lane_off, int64_t, B * nio);
    CARVE(lane_lin, int64_t, B);
    CARVE(lane_olin, int64_t, B);
#undef CARVE

    if (ew) {
        int all[KILN_MAX_DIMS];
        for (int d = 0; d < x->nd; d++) all[d] = d;
        for (int io = 0; io < nio; io++) lane_off[io] = 0;
        /* (threads: split [0, numel) into chunks of whole blocks) */
        for (int64_t start = 0; start < x->numel; start += B) {
            int64_t n = x->numel - start < B ? x->numel - start : B;
            fs.n = 0;
            fs.total = 0;
            gen_segs(x, all, x->nd, 0, lane_off, 0, start, n, &fs);
            for (int t = 0; t < x->nfull[0]; t++) SFX(eval)(x, x->full_list[t], &fs, valp);
            SFX(store)(x, &fs, valp[k->out_instr]);
        }
        kiln__mem_free(x->ctx, blk);
        return KILN_OK;
    }

    int64_t oidx[KILN_MAX_DIMS] = {0};
    int64_t rows_done = 0;
    /* Short rows (several per block): the segments of one whole row, relative to its start. */
    ps.n = 0;
    ps.total = 0;
    if (!col && nl_max > 1) {
        for (int io = 0; io < nio; io++) lane_off[io] = 0;
        gen_segs(x, x->inner, x->ninner, 0, lane_off, 0, 0, x->inner_n, &ps);
    }
    /* (threads: split the row groups) */
    while (rows_done < x->outer_n) {
        int64_t nl;
        if (col) {
            nl = x->shape[last] - oidx[last];
            if (nl > nl_max) nl = nl_max;
            point_at(x, oidx, x->outer, x->nouter, lane_off, &lane_lin[0], &lane_olin[0]);
            odo_step(x, oidx, x->outer, x->nouter, nl);
            rs.n = 1;
            rs.len[0] = (int32_t)nl;
            rs.lin[0] = lane_olin[0];
            for (int io = 0; io < nio; io++) rs.off[io] = lane_off[io];
        } else {
            nl = x->outer_n - rows_done;
            if (nl > nl_max) nl = nl_max;
            const int lo = x->nouter > 0 ? x->outer[x->nouter - 1] : 0; /* the innermost kept axis */
            rs.ax = lo;
            rs.n = 0;
            for (int64_t l = 0; l < nl; l++) {
                int64_t *lof = lane_off + l * nio;
                if (l > 0 && oidx[lo] != 0) { /* next point along the innermost kept axis */
                    for (int io = 0; io < nio; io++) lof[io] = lof[io - nio] + ST(x, io, lo);
                    lane_lin[l] = lane_lin[l - 1] + x->lin[lo];
                    lane_olin[l] = lane_olin[l - 1] + x->olin[lo];
                    rs.len[rs.n - 1]++; /* the row values continue the current segment */
                } else {
                    point_at(x, oidx, x->outer, x->nouter, lof, &lane_lin[l], &lane_olin[l]);
                    rs.len[rs.n] = 1;
                    rs.lin[rs.n] = lane_olin[l];
                    for (int io = 0; io < nio; io++) rs.off[(size_t)rs.n * nio + io] = lof[io];
                    rs.n++;
                }
                odo_step(x, oidx, x->outer, x->nouter, 1);
            }
        }
        rs.total = nl;
        rows_done += nl;

        for (int t = 0; t < x->nrow[0]; t++) SFX(eval)(x, x->row_list[t], &rs, rowp);
        for (int wk = 0; wk < x->nwalks; wk++) {
            const int is_out = wk >= k->npasses;
            const int *reds = x->red_list + (size_t)wk * ni;
            const int *fulls = x->full_list + (size_t)wk * ni;
            const int *exps = x->exp_list + (size_t)wk * ni;
            for (int t = 0; t < x->nredw[wk]; t++) {
                int i = reds[t];
                SFX(red_init)(k->instr[i].op, nl, acc[x->redslot[i]]);
            }
            /* ROW values read by this walk's FULL work, broadcast over the block layout. */
            for (int t = 0; t < x->nexp[wk]; t++) {
                const T *rv = rowp[exps[t]];
                T *d = valp[exps[t]];
                if (col) {
                    for (int64_t j = 0; j < kcap; j++)
                        for (int64_t l = 0; l < nl; l++) d[j * nl + l] = rv[l];
                } else {
                    for (int64_t l = 0; l < nl; l++)
                        for (int64_t j = 0; j < kcap; j++) d[l * kcap + j] = rv[l];
                }
            }
            int64_t k0 = 0;
            const int idle = !is_out && x->nredw[wk] == 0; /* a pass without reductions */
            while (k0 < x->inner_n && !idle) {
                int64_t kn = x->inner_n - k0 < kn_max ? x->inner_n - k0 : kn_max;
                fs.n = 0;
                fs.total = 0;
                if (col)
                    gen_segs(x, x->inner, x->ninner, nl, lane_off, lane_lin[0], k0, kn, &fs);
                else if (nl == 1)
                    gen_segs(x, x->inner, x->ninner, 0, lane_off, lane_lin[0], k0, kn, &fs);
                else /* whole short rows: the row's segment pattern shifted to each lane */
                    for (int64_t l = 0; l < nl; l++) {
                        const int64_t *lof = lane_off + l * nio;
                        for (int g = 0; g < ps.n; g++) {
                            int sn = fs.n++;
                            fs.len[sn] = ps.len[g];
                            fs.lin[sn] = ps.lin[g] + lane_lin[l];
                            for (int io = 0; io < nio; io++)
                                fs.off[(size_t)sn * nio + io] = ps.off[(size_t)g * nio + io] + lof[io];
                        }
                        fs.total += ps.total;
                    }
                for (int t = 0; t < x->nfull[wk]; t++) SFX(eval)(x, fulls[t], &fs, valp);
                if (is_out) {
                    SFX(store)(x, &fs, valp[k->out_instr]);
                } else {
                    for (int t = 0; t < x->nredw[wk]; t++) {
                        int i = reds[t];
                        const T *v = valp[k->instr[i].a];
                        if (col)
                            SFX(red_cols)(k->instr[i].op, v, nl, kn, k0, acc[x->redslot[i]]);
                        else
                            SFX(red_rows)(k->instr[i].op, v, nl, kn, k0, acc[x->redslot[i]]);
                    }
                }
                k0 += kn;
            }
            if (!is_out) {
                for (int t = 0; t < x->nredw[wk]; t++) {
                    int i = reds[t];
                    SFX(red_final)(k->instr[i].op, nl, acc[x->redslot[i]], rowp[i]);
                }
                const int *rows = x->row_list + (size_t)(wk + 1) * ni;
                for (int t = 0; t < x->nrow[wk + 1]; t++) SFX(eval)(x, rows[t], &rs, rowp);
            }
        }
        if (k->out.is_row) SFX(store)(x, &rs, rowp[k->out_instr]);
    }
    kiln__mem_free(x->ctx, blk);
    return KILN_OK;
}
