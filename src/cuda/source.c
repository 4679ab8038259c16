/*
 * src/cuda/source.c — the text every generated CUDA source is built from: a growing string
 * buffer (kiln_sbuf) and the prelude pasted at the top of each kernel (src/core/numeric.h's
 * text, the dtype load/store helpers, the block reductions). No CUDA headers: the kernel
 * sources of the own GEMMs are generated and emulated on machines without the toolkit
 * (tests/test_gemm_emu.c), and by the CUDA backend (codegen.c, gemm*.c) to compile them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/source.h"

#if defined(__has_include)
#if __has_include("kiln_numeric_src.h")
#include "kiln_numeric_src.h" /* static const char kiln_numeric_src[]: src/core/numeric.h's text */
#define KILN_HAVE_NUMERIC_SRC 1
#endif
#endif

/* ---- string buffer --------------------------------------------------------------------- */

int kiln__sbuf_reserve(kiln_sbuf *b, size_t more)
{
    if (b->oom) return 0;
    if (b->len + more + 1 <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void kiln__sbuf_printf(kiln_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (!kiln__sbuf_reserve(b, (size_t)n)) return;
    if ((size_t)n < sizeof tmp) {
        memcpy(b->p + b->len, tmp, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void kiln__sbuf_puts(kiln_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (!kiln__sbuf_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

void kiln__sbuf_free(kiln_sbuf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- the prelude ------------------------------------------------------------------------ */

static const char prelude_src[] =
    "typedef unsigned long long kiln_w64;\n"
    "__device__ __forceinline__ float kiln_h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
    "__device__ __forceinline__ unsigned short kiln_f2h(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
    "__device__ __forceinline__ float kiln_bf2f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }\n"
    /* The GEMM outputs' f32 -> f16 stochastic rounding (kiln_f32_to_f16_sr13, same bits) with
     * the common cases inline: the normal range below 65536 is an add, a shift and a clamp,
     * and a zero (half of a ReLU's outputs) keeps its sign; NaN, inf, overflow and the
     * subnormal range go out of line (inlined into every copy of an unrolled GEMM epilogue they made its code
     * several times larger). With zeros sent out of line too, a ReLU epilogue took the
     * divergent call for nearly every element: f16 SR + ReLU cost 3x SR alone. */
    "__device__ __noinline__ unsigned short kiln_f16_sr13_rare(float x, unsigned bits) { return kiln_f32_to_f16_sr13(x, bits); }\n"
    "__device__ __forceinline__ unsigned short kiln_f16_sr13_fast(float x, unsigned bits) {\n"
    "  const unsigned u = __float_as_uint(x);\n"
    "  if (kiln_f16_sr_is_normal(u)) return kiln_f32_to_f16_sr_normal(u, bits);\n"
    "  if ((u << 1) == 0u) return (unsigned short)(u >> 16); /* +-0 */\n"
    "  return kiln_f16_sr13_rare(x, bits);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ signed char kiln_to_i8(T x) { return x != x ? 0 : x <= (T)-128 ? -128 : x >= (T)127 ? 127 : (signed char)x; }\n"
    "template <class T> __device__ __forceinline__ unsigned char kiln_to_u8(T x) { return x != x ? 0 : x <= (T)0 ? 0 : x >= (T)255 ? 255 : (unsigned char)x; }\n"
    "template <class T> __device__ __forceinline__ int kiln_to_i32(T x) { return x != x ? 0 : x <= (T)-2147483648.0 ? (-2147483647 - 1) : x >= (T)2147483647.0 ? 2147483647 : (int)x; }\n"
    "struct kiln_op_sum { static constexpr bool commutes = true; template <class T> __device__ __forceinline__ static T f(T a, T b) { return a + b; } };\n"
    "struct kiln_op_prod { static constexpr bool commutes = true; template <class T> __device__ __forceinline__ static T f(T a, T b) { return a * b; } };\n"
    "struct kiln_op_max { static constexpr bool commutes = false; template <class T> __device__ __forceinline__ static T f(T a, T b) { return (a != a || a > b) ? a : b; } };\n"
    "struct kiln_op_min { static constexpr bool commutes = false; template <class T> __device__ __forceinline__ static T f(T a, T b) { return (a != a || a < b) ? a : b; } };\n"
    /* arg reductions: (value, index), index < 0 = nothing seen; first index wins ties; NaN
     * counts as the extreme (the first NaN wins). */
    "template <int MAXI, class T> __device__ __forceinline__ void kiln_arg_comb(T &v, long long &i, T v2, long long i2) {\n"
    "  if (i2 < 0) return;\n"
    "  bool take;\n"
    "  if (i < 0) take = true;\n"
    "  else { bool n1 = v != v, n2 = v2 != v2;\n"
    "    if (n1 || n2) take = (n1 && n2) ? i2 < i : n2;\n"
    "    else if (MAXI ? v2 > v : v2 < v) take = true;\n"
    "    else if (v2 == v) take = i2 < i;\n"
    "    else take = false; }\n"
    "  if (take) { v = v2; i = i2; }\n"
    "}\n"
    /* variance (RED_VAR): a partial is (m2, mean, n), n = 0 nothing seen; Welford's update a
     * point, Chan's merge of partials in a fixed order (deterministic). A NaN or an infinity
     * makes the mean or m2 NaN, as the two-pass form would. */
    "__device__ __forceinline__ float kiln_var_div(float a, float b) { return __fdividef(a, b); }\n"
    "__device__ __forceinline__ double kiln_var_div(double a, double b) { return a / b; }\n"
    "template <class T> __device__ __forceinline__ void kiln_var_add(T &m2, T &mean, long long &n, T v) {\n"
    "  n += 1; const T d = v - mean; mean += kiln_var_div(d, (T)n); m2 += d * (v - mean);\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kiln_var_upd(T &m2, T &mean, T rn, T v) {\n"
    "  const T d = v - mean; mean += d * rn; m2 += d * (v - mean);\n"
    "}\n"
    /* Chan's merge written symmetrically: comb(a, b) and comb(b, a) give the same bits (each
     * side's weight from its own count, products and sums that commute, and the mean's two
     * terms rounded apart so no contraction into an FMA can favour one side). A butterfly of
     * merges then leaves every lane with the same partial, as the broadcast of a variance
     * back into its row needs. */
    "__device__ __forceinline__ float kiln_mul_rn(float a, float b) { return __fmul_rn(a, b); }\n"
    "__device__ __forceinline__ double kiln_mul_rn(double a, double b) { return __dmul_rn(a, b); }\n"
    /* the merge's weights depend on the two counts alone: with lanes (COLUMN mode, every lane of a
     * worker saw the same points) one set of weights serves all of a worker's lanes */
    "template <class T> struct kiln_var_w { T wa, wb, w; };\n"
    "template <class T> __device__ __forceinline__ kiln_var_w<T> kiln_var_weights(long long n, long long nb) {\n"
    "  const T r = kiln_var_div((T)1, (T)(n + nb));\n"
    "  return {kiln_mul_rn((T)n, r), kiln_mul_rn((T)nb, r), kiln_mul_rn(kiln_mul_rn((T)n, (T)nb), r)};\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kiln_var_merge(T &m2, T &mean, T m2b, T mb, const kiln_var_w<T> &q) {\n"
    "  const T d = mb - mean;\n"
    "  mean = kiln_mul_rn(mean, q.wa) + kiln_mul_rn(mb, q.wb); m2 = (m2 + m2b) + kiln_mul_rn(d, d) * q.w;\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kiln_var_comb(T &m2, T &mean, long long &n, T m2b, T mb, long long nb) {\n"
    "  if (nb == 0) return;\n"
    "  if (n == 0) { m2 = m2b; mean = mb; n = nb; return; }\n"
    "  kiln_var_merge(m2, mean, m2b, mb, kiln_var_weights<T>(n, nb)); n += nb;\n"
    "}\n"
    /* ROW mode: workers along x (blockDim.x a power of two >= 32), rows along y; a slot of shared
     * memory a warp (codegen.c launch_shape: smem_thread bytes a warp, not a thread). */
    "template <class Op, class T> __device__ __forceinline__ T kiln_row_red(T v, void *smv) {\n"
    "  T *sm = (T *)smv;\n"
    "#pragma unroll\n"
    "  for (int o = 16; o > 0; o >>= 1) v = Op::f(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "  const int nwarp = blockDim.x >> 5;\n"
    "  if (nwarp == 1) return v;\n"
    "  if ((threadIdx.x & 31) == 0) sm[threadIdx.y * nwarp + (threadIdx.x >> 5)] = v;\n"
    "  __syncthreads();\n"
    "  T r;\n"
    "  if (Op::commutes) {\n"
    /* every warp combines the nwarp (a power of two) partials with the same butterfly, lane l
     * starting from partial l % nwarp: one load and log2(nwarp) steps a thread, not nwarp loads
     * and combinations. Op(a, b) == Op(b, a) bit for bit, so every lane of every warp ends with
     * the same bits, as the serial walk below gives (max/min are not: their +0 and -0) */
    "    r = sm[threadIdx.y * nwarp + ((threadIdx.x & 31) & (nwarp - 1))];\n"
    "    for (int o = nwarp >> 1; o > 0; o >>= 1) r = Op::f(r, __shfl_xor_sync(0xffffffffu, r, o));\n"
    "  } else {\n"
    "    r = sm[threadIdx.y * nwarp];\n"
    "    for (int w = 1; w < nwarp; w++) r = Op::f(r, sm[threadIdx.y * nwarp + w]);\n"
    "  }\n"
    "  __syncthreads();\n"
    "  return r;\n"
    "}\n"
    "template <int MAXI, class T> __device__ __forceinline__ void kiln_row_arg(T &v, long long &i, void *smv) {\n"
    "#pragma unroll\n"
    "  for (int o = 16; o > 0; o >>= 1) { T v2 = __shfl_xor_sync(0xffffffffu, v, o); long long i2 = __shfl_xor_sync(0xffffffffu, i, o); kiln_arg_comb<MAXI>(v, i, v2, i2); }\n"
    "  const int nwarp = blockDim.x >> 5;\n"
    "  if (nwarp == 1) return;\n"
    "  T *sv = (T *)smv; long long *si = (long long *)(sv + nwarp * blockDim.y);\n"
    "  if ((threadIdx.x & 31) == 0) { sv[threadIdx.y * nwarp + (threadIdx.x >> 5)] = v; si[threadIdx.y * nwarp + (threadIdx.x >> 5)] = i; }\n"
    "  __syncthreads();\n"
    /* the butterfly of kiln_row_red: kiln_arg_comb picks the same (value, index) either way round */
    "  const int w0 = threadIdx.y * nwarp + ((threadIdx.x & 31) & (nwarp - 1));\n"
    "  v = sv[w0]; i = si[w0];\n"
    "  for (int o = nwarp >> 1; o > 0; o >>= 1) { T v2 = __shfl_xor_sync(0xffffffffu, v, o); long long i2 = __shfl_xor_sync(0xffffffffu, i, o); kiln_arg_comb<MAXI>(v, i, v2, i2); }\n"
    "  __syncthreads();\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kiln_row_var(T &m2, T &mean, long long &n, void *smv) {\n"
    "#pragma unroll\n"
    "  for (int o = 16; o > 0; o >>= 1) { T a2 = __shfl_xor_sync(0xffffffffu, m2, o), b2 = __shfl_xor_sync(0xffffffffu, mean, o); long long n2 = __shfl_xor_sync(0xffffffffu, n, o); kiln_var_comb(m2, mean, n, a2, b2, n2); }\n"
    "  const int nwarp = blockDim.x >> 5;\n"
    "  if (nwarp == 1) return;\n"
    "  const int nws = nwarp * blockDim.y, at = threadIdx.y * nwarp;\n"
    "  T *sa = (T *)smv, *sb = sa + nws; long long *sn = (long long *)(sb + nws);\n"
    "  if ((threadIdx.x & 31) == 0) { sa[at + (threadIdx.x >> 5)] = m2; sb[at + (threadIdx.x >> 5)] = mean; sn[at + (threadIdx.x >> 5)] = n; }\n"
    "  __syncthreads();\n"
    /* the butterfly of kiln_row_red over the symmetric merge: log2(nwarp) merges a thread, not nwarp - 1 */
    "  const int w0 = at + ((threadIdx.x & 31) & (nwarp - 1));\n"
    "  m2 = sa[w0]; mean = sb[w0]; n = sn[w0];\n"
    "  for (int o = nwarp >> 1; o > 0; o >>= 1) { T a2 = __shfl_xor_sync(0xffffffffu, m2, o), b2 = __shfl_xor_sync(0xffffffffu, mean, o); long long n2 = __shfl_xor_sync(0xffffffffu, n, o); kiln_var_comb(m2, mean, n, a2, b2, n2); }\n"
    "  __syncthreads();\n"
    "}\n"
    /* ROW mode on short rows: a row takes a W-lane segment of a warp (blockDim.x = W, a power
     * of two <= 32; 32 / W rows a warp), reduced by an xor butterfly over the segment alone: no
     * shared memory, no barrier. Every lane of a segment ends with the same bits: sums, products,
     * the arg and variance merges are symmetric; max and min (whose +0 and -0 are not) take the
     * segment's lane 0. The whole block calls these (rows past R too): full-warp masks. */
    "template <class Op, int W, class T> __device__ __forceinline__ T kiln_seg_red(T v) {\n"
    "#pragma unroll\n"
    "  for (int o = W >> 1; o > 0; o >>= 1) v = Op::f(v, __shfl_xor_sync(0xffffffffu, v, o));\n"
    "  if (!Op::commutes && W > 1) v = __shfl_sync(0xffffffffu, v, 0, W);\n"
    "  return v;\n"
    "}\n"
    "template <int MAXI, int W, class T> __device__ __forceinline__ void kiln_seg_arg(T &v, long long &i) {\n"
    "#pragma unroll\n"
    "  for (int o = W >> 1; o > 0; o >>= 1) { T v2 = __shfl_xor_sync(0xffffffffu, v, o); long long i2 = __shfl_xor_sync(0xffffffffu, i, o); kiln_arg_comb<MAXI>(v, i, v2, i2); }\n"
    "}\n"
    "template <int W, class T> __device__ __forceinline__ void kiln_seg_var(T &m2, T &mean, long long &n) {\n"
    "#pragma unroll\n"
    "  for (int o = W >> 1; o > 0; o >>= 1) { T a2 = __shfl_xor_sync(0xffffffffu, m2, o), b2 = __shfl_xor_sync(0xffffffffu, mean, o); long long n2 = __shfl_xor_sync(0xffffffffu, n, o); kiln_var_comb(m2, mean, n, a2, b2, n2); }\n"
    "}\n"
    /* A kept value a divided by a row value b (softmax's exp(x - max) / sum): the row takes
     * y = 1/b correctly rounded once (kiln_rcp_row: 0 unless b is in [2^-24, 2^24]), each point
     * q0 = a y, r = q0 b - a (exact, by the FMA) and q = q0 - r y rounded once: Markstein's
     * correction, the last step of the hardware's own div.rn, here with a reciprocal at least as
     * accurate as its refined one. Where a is 0 or |a| is in [2^-100, 2^100] (kiln_div_in, NaN
     * in too), every step stays normal and q is a / b's bits, +-0 included (b being positive);
     * codegen.c divides as before where a kept point or b is outside (bench/NOTES.md step 64). */
    "__device__ __forceinline__ float kiln_rcp_row(float b) {\n"
    "  return b >= 0x1p-24f && b <= 0x1p24f ? __frcp_rn(b) : 0.0f;\n"
    "}\n"
    /* kiln_div_in as two tests: |a| not above 2^100 (NaN passes), and 2 bits(a) - 1 as unsigned
     * not below 2 bits(2^-100) - 1 (+-0 wraps to the top; a nonzero |a| below 2^-100 lands
     * under): one FSETP, one IMAD and one ISETP a point, both tests folding into the caller's
     * predicate, where |a|'s three comparisons took three FSETP and a PLOP3; the same answer as
     * !(|a| > 2^100) && !(0 < |a| < 2^-100) on all 2^32 floats (tools/div-in-check.c;
     * H100 f16 softmax 0-1.8 % faster, bench/NOTES.md step 73). */
    "__device__ __forceinline__ bool kiln_div_in(float a) {\n"
    "  return !(fabsf(a) > 0x1p100f) & (__float_as_uint(a) * 2u - 1u >= 0x1affffffu);\n"
    "}\n"
    "__device__ __forceinline__ float kiln_div_row(float a, float b, float y) {\n"
    "  const float q = __fmul_rn(a, y);\n"
    "  return __fmaf_rn(-__fmaf_rn(q, b, -a), y, q);\n"
    "}\n"
    /* ROW mode's row shift (codegen.c row_shift): the lanes of the V-wide vector whose first
     * point is e0 of the row that lie in the row [0, n), as bits; j < L keeps e0 < n, and e0 >
     * -V, so the row holds lanes lo..hi-1 with lo < hi. */
    "template <class I> __device__ __forceinline__ unsigned kiln_lanes_in(I e0, I n, int V) {\n"
    "  const int lo = e0 < 0 ? (int)-e0 : 0, hi = n - e0 < (I)V ? (int)(n - e0) : V;\n"
    "  return (2u << (hi - 1)) - (1u << lo);\n"
    "}\n"
    /* COLUMN mode: rows along x, workers along y. */
    "template <class Op, class T> __device__ __forceinline__ T kiln_col_red(T v, void *smv) {\n"
    "  if (blockDim.y == 1) return v;\n"
    "  T *sm = (T *)smv;\n"
    "  const int me = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  sm[me] = v;\n"
    "  __syncthreads();\n"
    "  for (int s = blockDim.y >> 1; s > 0; s >>= 1) {\n"
    "    if ((int)threadIdx.y < s) sm[me] = Op::f(sm[me], sm[me + s * blockDim.x]);\n"
    "    __syncthreads();\n"
    "  }\n"
    "  T r = sm[threadIdx.x];\n"
    "  __syncthreads();\n"
    "  return r;\n"
    "}\n"
    /* COLUMN mode with lanes: a worker's N rows at once (N x blockDim shared values), one
     * barrier a step for all of them */
    "template <class Op, int N, class T> __device__ __forceinline__ void kiln_col_red_lanes(T (&v)[N], void *smv) {\n"
    "  if (blockDim.y == 1) return;\n"
    "  T *sm = (T *)smv;\n"
    "  const int me = threadIdx.y * blockDim.x + threadIdx.x, nt = blockDim.x * blockDim.y;\n"
    "#pragma unroll\n"
    "  for (int l = 0; l < N; l++) sm[l * nt + me] = v[l];\n"
    "  __syncthreads();\n"
    "  for (int s = blockDim.y >> 1; s > 0; s >>= 1) {\n"
    "    if ((int)threadIdx.y < s) {\n"
    "#pragma unroll\n"
    "      for (int l = 0; l < N; l++) sm[l * nt + me] = Op::f(sm[l * nt + me], sm[l * nt + me + s * blockDim.x]);\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "#pragma unroll\n"
    "  for (int l = 0; l < N; l++) v[l] = sm[l * nt + threadIdx.x];\n"
    "  __syncthreads();\n"
    "}\n"
    "template <int MAXI, class T> __device__ __forceinline__ void kiln_col_arg(T &v, long long &i, void *smv) {\n"
    "  if (blockDim.y == 1) return;\n"
    "  T *sv = (T *)smv; long long *si = (long long *)(sv + blockDim.x * blockDim.y);\n"
    "  const int me = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  sv[me] = v; si[me] = i;\n"
    "  __syncthreads();\n"
    "  for (int s = blockDim.y >> 1; s > 0; s >>= 1) {\n"
    "    if ((int)threadIdx.y < s) { T a = sv[me]; long long ia = si[me];\n"
    "      kiln_arg_comb<MAXI>(a, ia, sv[me + s * blockDim.x], si[me + s * blockDim.x]); sv[me] = a; si[me] = ia; }\n"
    "    __syncthreads();\n"
    "  }\n"
    "  v = sv[threadIdx.x]; i = si[threadIdx.x];\n"
    "  __syncthreads();\n"
    "}\n"
    "template <class T> __device__ __forceinline__ void kiln_col_var(T &m2, T &mean, long long &n, void *smv) {\n"
    "  if (blockDim.y == 1) return;\n"
    "  const int nt = blockDim.x * blockDim.y, me = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  T *sa = (T *)smv, *sb = sa + nt; long long *sn = (long long *)(sb + nt);\n"
    "  sa[me] = m2; sb[me] = mean; sn[me] = n;\n"
    "  __syncthreads();\n"
    "  for (int s = blockDim.y >> 1; s > 0; s >>= 1) {\n"
    "    if ((int)threadIdx.y < s) { T a = sa[me], b = sb[me]; long long c = sn[me];\n"
    "      const int o = me + s * blockDim.x; kiln_var_comb(a, b, c, sa[o], sb[o], sn[o]); sa[me] = a; sb[me] = b; sn[me] = c; }\n"
    "    __syncthreads();\n"
    "  }\n"
    "  m2 = sa[threadIdx.x]; mean = sb[threadIdx.x]; n = sn[threadIdx.x];\n"
    "  __syncthreads();\n"
    "}\n"
    /* COLUMN mode with lanes: the N lanes of a worker share one count, so the block folds them
     * together, C lanes a round of kiln_col_var's tree (the count and 2 C values a thread:
     * codegen.c's smem_thread), one set of weights a merge for all C. The same merges in the
     * same order as kiln_col_var lane by lane, so the same bits, in N / C rounds of barriers
     * where lane by lane took N (H100 f16 var(A,0) 8192 x 8192: 8 lanes, 256 workers a column,
     * 80 barriers a block, bench/NOTES.md step 76). */
    "template <int N, int C, class T> __device__ __forceinline__ void kiln_col_var_lanes(T (&m2)[N], T (&mean)[N], long long &n, void *smv) {\n"
    "  if (blockDim.y == 1) return;\n"
    "  const int nt = blockDim.x * blockDim.y, me = threadIdx.y * blockDim.x + threadIdx.x;\n"
    "  long long *sn = (long long *)smv; T *sv = (T *)(sn + nt);\n"
    "  const long long n0 = n;\n"
    "#pragma unroll\n"
    "  for (int c0 = 0; c0 < N; c0 += C) {\n"
    "    sn[me] = n0;\n"
    "#pragma unroll\n"
    "    for (int l = 0; l < C && c0 + l < N; l++) { sv[2 * l * nt + me] = m2[c0 + l]; sv[(2 * l + 1) * nt + me] = mean[c0 + l]; }\n"
    "    __syncthreads();\n"
    "    for (int s = blockDim.y >> 1; s > 0; s >>= 1) {\n"
    "      const int o = me + s * blockDim.x;\n"
    "      if ((int)threadIdx.y < s && sn[o] != 0) {\n"
    "        const long long na = sn[me], nb = sn[o];\n"
    "        if (na == 0) {\n"
    "#pragma unroll\n"
    "          for (int l = 0; l < C && c0 + l < N; l++) { sv[2 * l * nt + me] = sv[2 * l * nt + o]; sv[(2 * l + 1) * nt + me] = sv[(2 * l + 1) * nt + o]; }\n"
    "        } else {\n"
    "          const kiln_var_w<T> q = kiln_var_weights<T>(na, nb);\n"
    "#pragma unroll\n"
    "          for (int l = 0; l < C && c0 + l < N; l++) {\n"
    "            T a = sv[2 * l * nt + me], b = sv[(2 * l + 1) * nt + me];\n"
    "            kiln_var_merge(a, b, sv[2 * l * nt + o], sv[(2 * l + 1) * nt + o], q);\n"
    "            sv[2 * l * nt + me] = a; sv[(2 * l + 1) * nt + me] = b;\n"
    "          }\n"
    "        }\n"
    "        sn[me] = na + nb;\n"
    "      }\n"
    "      __syncthreads();\n"
    "    }\n"
    "    n = sn[threadIdx.x];\n"
    "#pragma unroll\n"
    "    for (int l = 0; l < C && c0 + l < N; l++) { m2[c0 + l] = sv[2 * l * nt + threadIdx.x]; mean[c0 + l] = sv[(2 * l + 1) * nt + threadIdx.x]; }\n"
    "    __syncthreads();\n"
    "  }\n"
    "}\n";

void kiln__cuda_prelude(kiln_sbuf *b)
{
#ifdef KILN_HAVE_NUMERIC_SRC
    kiln__sbuf_puts(b, "/* ---- src/core/numeric.h ---- */\n");
    kiln__sbuf_puts(b, kiln_numeric_src);
    kiln__sbuf_puts(b, "\n/* ---- kiln prelude ---- */\n");
#else
    kiln__sbuf_puts(b, "#error \"kiln was built without src/core/numeric.h\"\n");
#endif
    kiln__sbuf_puts(b, prelude_src);
}

