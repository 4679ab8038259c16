/*
 * src/core/dtype.c — dtype traits (from the one X-macro list in kiln.h), promotion, and
 * host-side conversion between dtypes (the CPU backend's loads and stores and every host
 * buffer copy go through here). 16-bit float formats use src/core/numeric.h, the same
 * code the GPU runs.
 */
#include <math.h>
#include <string.h>

#include "core/internal.h"
#include "core/numeric.h"

typedef struct dtype_traits {
    const char *name;
    size_t size;
    bool is_float;
    const char *ctype;
} dtype_traits;

static const dtype_traits traits[KILN_DTYPE_COUNT] = {
    [KILN_DTYPE_AUTO] = {"auto", 0, false, "void"},
#define KILN_X_DTYPE_TRAITS(NAME, name, size, isfloat, ctype) [KILN_DTYPE_##NAME] = {#name, size, isfloat, ctype},
    KILN_DTYPE_LIST(KILN_X_DTYPE_TRAITS)
#undef KILN_X_DTYPE_TRAITS
};
_Static_assert(KILN_DTYPE_COUNT == 8, "dtype list changed: review promotion and conversions");

bool kiln__dtype_valid(kiln_dtype dt) { return dt > KILN_DTYPE_AUTO && dt < KILN_DTYPE_COUNT; }

const char *kiln_dtype_name(kiln_dtype dt) { return kiln__dtype_valid(dt) ? traits[dt].name : "?"; }

size_t kiln_dtype_size(kiln_dtype dt) { return kiln__dtype_valid(dt) ? traits[dt].size : 0; }

bool kiln__dtype_is_float(kiln_dtype dt) { return kiln__dtype_valid(dt) && traits[dt].is_float; }

const char *kiln__dtype_ctype(kiln_dtype dt) { return kiln__dtype_valid(dt) ? traits[dt].ctype : "void"; }

kiln_dtype kiln_dtype_from_name(const char *name)
{
    static const struct {
        const char *name;
        kiln_dtype dt;
    } names[] = {
        {"f32", KILN_DTYPE_F32},      {"float32", KILN_DTYPE_F32}, {"float", KILN_DTYPE_F32},
        {"f16", KILN_DTYPE_F16},      {"float16", KILN_DTYPE_F16}, {"half", KILN_DTYPE_F16},
        {"bf16", KILN_DTYPE_BF16},    {"bfloat16", KILN_DTYPE_BF16}, {"f64", KILN_DTYPE_F64},
        {"float64", KILN_DTYPE_F64},  {"double", KILN_DTYPE_F64},  {"i8", KILN_DTYPE_I8},
        {"int8", KILN_DTYPE_I8},      {"u8", KILN_DTYPE_U8},       {"uint8", KILN_DTYPE_U8},
        {"i32", KILN_DTYPE_I32},      {"int32", KILN_DTYPE_I32},
    };
    if (!name) return KILN_DTYPE_AUTO;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].name, name) == 0) return names[i].dt;
    return KILN_DTYPE_AUTO;
}

/* Float types win over integer types (as in PyTorch: an i32 tensor times an f16 tensor is
 * f16); among floats the wider wins and f16 with bf16 meet at f32; among integers i32 wins
 * and i8 with u8 meet at i32. */
kiln_dtype kiln__dtype_promote(kiln_dtype a, kiln_dtype b)
{
    if (!kiln__dtype_valid(a)) return b;
    if (!kiln__dtype_valid(b)) return a;
    if (a == b) return a;
    bool fa = traits[a].is_float, fb = traits[b].is_float;
    if (fa != fb) return fa ? a : b;
    if (fa) {
        if (a == KILN_DTYPE_F64 || b == KILN_DTYPE_F64) return KILN_DTYPE_F64;
        return KILN_DTYPE_F32; /* f32 with a 16-bit type, or f16 with bf16 */
    }
    return KILN_DTYPE_I32; /* i32 with anything, or i8 with u8 */
}

/* ---- conversions ---------------------------------------------------------------------- */

static double sat_trunc(double v, double lo, double hi)
{
    if (v != v) return 0.0;
    if (v <= lo) return lo;
    if (v >= hi) return hi;
    return trunc(v);
}

double kiln__load_f64(const void *p, kiln_dtype dt)
{
    switch (dt) {
    case KILN_DTYPE_F32: return *(const float *)p;
    case KILN_DTYPE_F16: return kiln_f16_to_f32(*(const uint16_t *)p);
    case KILN_DTYPE_BF16: return kiln_bf16_to_f32(*(const uint16_t *)p);
    case KILN_DTYPE_F64: return *(const double *)p;
    case KILN_DTYPE_I8: return *(const int8_t *)p;
    case KILN_DTYPE_U8: return *(const uint8_t *)p;
    case KILN_DTYPE_I32: return *(const int32_t *)p;
    default: return 0.0;
    }
}

void kiln__store_f64(void *p, kiln_dtype dt, double v)
{
    switch (dt) {
    case KILN_DTYPE_F32: *(float *)p = (float)v; break;
    case KILN_DTYPE_F16: *(uint16_t *)p = kiln_f64_to_f16_rn(v); break;
    case KILN_DTYPE_BF16: *(uint16_t *)p = kiln_f64_to_bf16_rn(v); break;
    case KILN_DTYPE_F64: *(double *)p = v; break;
    case KILN_DTYPE_I8: *(int8_t *)p = (int8_t)sat_trunc(v, -128.0, 127.0); break;
    case KILN_DTYPE_U8: *(uint8_t *)p = (uint8_t)sat_trunc(v, 0.0, 255.0); break;
    case KILN_DTYPE_I32: *(int32_t *)p = (int32_t)sat_trunc(v, -2147483648.0, 2147483647.0); break;
    default: break;
    }
}

enum { CHUNK = 512 };

/* Loads n elements (stride s) of dtype dt into buf as double. */
static void load_chunk(double *restrict buf, const char *src, kiln_dtype dt, int64_t s, int64_t n)
{
    switch (dt) {
#define LOAD_CASE(DT, T, EXPR)                                     \
    case DT: {                                                     \
        const T *p = (const T *)src;                               \
        for (int64_t i = 0; i < n; i++) { T x = p[i * s]; buf[i] = (EXPR); } \
        break;                                                     \
    }
        LOAD_CASE(KILN_DTYPE_F32, float, (double)x)
        LOAD_CASE(KILN_DTYPE_F16, uint16_t, (double)kiln_f16_to_f32(x))
        LOAD_CASE(KILN_DTYPE_BF16, uint16_t, (double)kiln_bf16_to_f32(x))
        LOAD_CASE(KILN_DTYPE_F64, double, x)
        LOAD_CASE(KILN_DTYPE_I8, int8_t, (double)x)
        LOAD_CASE(KILN_DTYPE_U8, uint8_t, (double)x)
        LOAD_CASE(KILN_DTYPE_I32, int32_t, (double)x)
#undef LOAD_CASE
    default:
        for (int64_t i = 0; i < n; i++) buf[i] = 0.0;
        break;
    }
}

static void store_chunk(char *dst, kiln_dtype dt, int64_t s, const double *restrict buf, int64_t n)
{
    switch (dt) {
    case KILN_DTYPE_F32: { float *p = (float *)dst; for (int64_t i = 0; i < n; i++) p[i * s] = (float)buf[i]; break; }
    case KILN_DTYPE_F64: { double *p = (double *)dst; for (int64_t i = 0; i < n; i++) p[i * s] = buf[i]; break; }
    default:
        for (int64_t i = 0; i < n; i++) kiln__store_f64(dst + i * s * (int64_t)traits[dt].size, dt, buf[i]);
        break;
    }
}

void kiln__convert_strided(void *dst, kiln_dtype dst_dt, int64_t dst_stride, const void *src, kiln_dtype src_dt,
                           int64_t src_stride, int64_t n)
{
    if (n <= 0 || !kiln__dtype_valid(dst_dt) || !kiln__dtype_valid(src_dt)) return;
    size_t ds = traits[dst_dt].size, ss = traits[src_dt].size;
    char *d = dst;
    const char *s = src;
    if (dst_dt == src_dt) {
        if (dst_stride == 1 && src_stride == 1) {
            memmove(d, s, (size_t)n * ds);
            return;
        }
        for (int64_t i = 0; i < n; i++) memcpy(d + i * dst_stride * (int64_t)ds, s + i * src_stride * (int64_t)ss, ds);
        return;
    }
    /* f32 <-> 16-bit floats directly: one rounding, no detour through double. */
    if (src_dt == KILN_DTYPE_F32 && (dst_dt == KILN_DTYPE_F16 || dst_dt == KILN_DTYPE_BF16)) {
        const float *p = (const float *)s;
        uint16_t *q = (uint16_t *)d;
        if (dst_dt == KILN_DTYPE_F16)
            for (int64_t i = 0; i < n; i++) q[i * dst_stride] = kiln_f32_to_f16_rn(p[i * src_stride]);
        else
            for (int64_t i = 0; i < n; i++) q[i * dst_stride] = kiln_f32_to_bf16_rn(p[i * src_stride]);
        return;
    }
    double buf[CHUNK];
    for (int64_t i0 = 0; i0 < n; i0 += CHUNK) {
        int64_t m = n - i0 < CHUNK ? n - i0 : CHUNK;
        load_chunk(buf, s + i0 * src_stride * (int64_t)ss, src_dt, src_stride, m);
        store_chunk(d + i0 * dst_stride * (int64_t)ds, dst_dt, dst_stride, buf, m);
    }
}
