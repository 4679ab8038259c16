/*
 * src/cuda/gemm_plan.c — the host-side pieces of the GPU GEMMs that need no CUDA headers
 * (gemm_plan.h): the batch axes merged, the argument words every GEMM kernel shares, the
 * tiled kernels' grid words and their shared device helpers as text. Used by the launches
 * (gemm.c, gemm_*.c) and, without the toolkit, by the kernels' host emulator
 * (tests/test_gemm_emu.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_plan.h"

void kiln__cuda_gemm_merge_batches(const kiln_gemm_desc *d, kiln_gemm_batches *bt)
{
    bt->n = 0;
    for (int i = 0; i < d->nbatch; i++) {
        if (d->batch_shape[i] == 1) continue;
        int j = bt->n++;
        bt->shape[j] = d->batch_shape[i];
        bt->sa[j] = d->a_bstride[i];
        bt->sb[j] = d->b_bstride[i];
        bt->sc[j] = d->c_bstride[i];
    }
    for (int i = bt->n - 2; i >= 0; i--) {
        int64_t n1 = bt->shape[i + 1];
        if (bt->sa[i] != bt->sa[i + 1] * n1 || bt->sb[i] != bt->sb[i + 1] * n1 || bt->sc[i] != bt->sc[i + 1] * n1)
            continue;
        bt->shape[i + 1] *= bt->shape[i];
        for (int j = i; j < bt->n - 1; j++) {
            bt->shape[j] = bt->shape[j + 1];
            bt->sa[j] = bt->sa[j + 1];
            bt->sb[j] = bt->sb[j + 1];
            bt->sc[j] = bt->sc[j + 1];
        }
        bt->n--;
    }
}

/* Granlund and Montgomery's multiply-and-shift for a divisor known at launch: with
 * 2^(s-1) < d <= 2^s, m = ceil(2^(31+s) / d) = (2^(31+s) + e) / d with 0 <= e < d <= 2^s, so
 * n m / 2^(31+s) = n / d + n e / (d 2^(31+s)), whose second term is below 2^31 2^s / (d 2^(31+s))
 * = 1 / d for n < 2^31: never enough to carry n / d past the next integer. m < 2^32 since
 * d > 2^(s-1) (d = 1: s = 0, m = 2^31). */
uint64_t kiln__cuda_gemm_div_word(int64_t d)
{
    int s = 0;
    while (((int64_t)1 << s) < d) s++;
    const uint64_t m = (((uint64_t)1 << (31 + s)) + (uint64_t)d - 1) / (uint64_t)d;
    return m | ((uint64_t)s << 32);
}

/* Words 0..18 of a GEMM kernel's arguments, shared by the reference kernel below and the
 * mma.sync kernel (gemm_mma.c): seed, stochastic-rounding stream, M, N, K, the pointers of
 * A, B, C and bias, the element strides, alpha, beta (as doubles' bits), the batch count. */
void kiln__cuda_gemm_words(const kiln_gemm_desc *d, uint64_t seed, int64_t nbatch, uint64_t *w)
{
    w[0] = seed;
    w[1] = d->sr_stream;
    w[2] = (uint64_t)d->M;
    w[3] = (uint64_t)d->N;
    w[4] = (uint64_t)d->K;
    w[5] = (uint64_t)(uintptr_t)d->a;
    w[6] = (uint64_t)(uintptr_t)d->b;
    w[7] = (uint64_t)(uintptr_t)d->c;
    w[8] = (uint64_t)(uintptr_t)d->bias;
    w[9] = (uint64_t)d->a_sm;
    w[10] = (uint64_t)d->a_sk;
    w[11] = (uint64_t)d->b_sk;
    w[12] = (uint64_t)d->b_sn;
    w[13] = (uint64_t)d->c_sm;
    w[14] = (uint64_t)d->c_sn;
    w[15] = (uint64_t)d->bias_s;
    memcpy(&w[16], &d->alpha, 8);
    memcpy(&w[17], &d->beta, 8);
    w[18] = (uint64_t)nbatch;
}

char *kiln__cuda_gemm_text(void (*gen)(const void *, kiln_sbuf *), const void *cfg)
{
    kiln_sbuf b = {0};
    gen(cfg, &b);
    if (b.oom) {
        kiln__sbuf_free(&b);
        return NULL;
    }
    return b.p;
}

/* The device helpers every tiled GEMM kernel shares (mma.sync, FFMA, wgmma): the grouped
 * tile order and the batch offsets (words 22.. of kiln__cuda_gemm_tile_words). */
const char kiln__cuda_gemm_stats_out_src[] =
    "/* ---- kiln_gemm_stats_out (src/cuda/gemm_plan.c) ---- */\n"
    "extern \"C\" __global__ void kiln_gemm_stats_out(unsigned long long *w, char *out, long long s,\n"
    "                                                 int f64) {\n"
    "  const float mag = __uint_as_float((unsigned)w[0]);\n"
    "  const double bad = (double)w[1];\n"
    "  if (f64) {\n"
    "    ((double *)out)[0] = mag;\n"
    "    ((double *)out)[s] = bad;\n"
    "  } else {\n"
    "    ((float *)out)[0] = mag;\n"
    "    ((float *)out)[s] = (float)bad;\n"
    "  }\n"
    "  w[0] = 0;\n"
    "  w[1] = 0;\n"
    "}\n";

const char kiln__cuda_gemm_tile_src[] =
    "/* the argument words 2..18 of a tiled kernel (kiln__cuda_gemm_words) as named constants, ST\n"
    " * being the kernel's element type */\n"
    "#define KG_TILE_ARGS(p) \\\n"
    "  const long long M = (long long)(p).w[2], N = (long long)(p).w[3], K = (long long)(p).w[4]; \\\n"
    "  const ST *A0 = (const ST *)(p).w[5]; \\\n"
    "  const ST *B0 = (const ST *)(p).w[6]; \\\n"
    "  ST *C0 = (ST *)(p).w[7]; \\\n"
    "  const ST *bias = (const ST *)(p).w[8]; \\\n"
    "  const long long a_sm = (long long)(p).w[9], a_sk = (long long)(p).w[10], b_sk = (long long)(p).w[11]; \\\n"
    "  const long long b_sn = (long long)(p).w[12], c_sm = (long long)(p).w[13], c_sn = (long long)(p).w[14]; \\\n"
    "  const long long bias_s = (long long)(p).w[15]; \\\n"
    "  const float alpha = (float)__longlong_as_double((long long)(p).w[16]); \\\n"
    "  const float beta = (float)__longlong_as_double((long long)(p).w[17]); \\\n"
    "  const long long NB = (long long)(p).w[18]\n"
    "/* the argument words through a pointer the compiler cannot follow: an epilogue that reads its\n"
    " * arguments through it loads them again (from the constant bank) instead of holding them in\n"
    " * registers across the main loop, where they made the tiled kernels spill */\n"
    "__device__ __forceinline__ const kiln_w64 *kg_words_again(const kiln_w64 *w) {\n"
    "#if defined(__CUDA_ARCH__)\n"
    "  asm volatile(\"mov.b64 %0, %0;\\n\" : \"+l\"(w));\n"
    "#endif\n"
    "  return w;\n"
    "}\n"
    "/* the output statistics of a tiled kernel (STATS): an element's bits m, its sign cleared,\n"
    " * against the format's infinity bits inf into a thread's largest finite magnitude and\n"
    " * non-finite count; kg_stat_out adds a block's or a warp's (f: the magnitude as f32 bits) to\n"
    " * the launch's words at out (f32 bits of the largest magnitude in the low half of out[0], the\n"
    " * count in out[1]): max and sum, so the result does not depend on the blocks' order */\n"
    "__device__ __forceinline__ void kg_stat_add(unsigned &mag, unsigned &bad, unsigned m, unsigned inf) {\n"
    "  const bool nf = m >= inf;\n"
    "  bad += nf ? 1u : 0u;\n"
    "  mag = nf || m < mag ? mag : m;\n"
    "}\n"
    "__device__ __forceinline__ void kg_stat_out(unsigned long long *out, unsigned f, unsigned bad) {\n"
    "  if (f) atomicMax((unsigned *)out, f);\n"
    "  if (bad) atomicAdd(out + 1, (unsigned long long)bad);\n"
    "}\n"
    "/* tile pid of a tiles_m x tiles_n grid -> (tm, tn), in groups of 8 tile rows that walk the\n"
    " * tile columns together (their B tiles stay in L2) */\n"
    "__device__ __forceinline__ void kg_tile(int pid, int tiles_m, int tiles_n, int *tm, int *tn) {\n"
    "  const int per_group = 8 * tiles_n, first_m = (pid / per_group) * 8;\n"
    "  const int gsize = tiles_m - first_m < 8 ? tiles_m - first_m : 8;\n"
    "  *tm = first_m + (pid % per_group) % gsize;\n"
    "  *tn = (pid % per_group) / gsize;\n"
    "}\n"
    "/* batch bi -> element offsets of A, B and C through the merged batch axes (words 22 and\n"
    " * 23 + 4 i: size, strides of A, B, C) */\n"
    "__device__ __forceinline__ void kg_batch(const kiln_w64 *w, long long bi, long long *oa, long long *ob,\n"
    "                                         long long *oc) {\n"
    "  long long a = 0, b = 0, c = 0, t = bi;\n"
    "  for (int i = (int)w[22] - 1; i >= 0; i--) {\n"
    "    const long long sz = (long long)w[23 + 4 * i], x = t % sz;\n"
    "    t /= sz;\n"
    "    a += x * (long long)w[24 + 4 * i];\n"
    "    b += x * (long long)w[25 + 4 * i];\n"
    "    c += x * (long long)w[26 + 4 * i];\n"
    "  }\n"
    "  *oa = a;\n"
    "  *ob = b;\n"
    "  *oc = c;\n"
    "}\n";

const char kiln__cuda_gemm_dep_src[] =
    "/* programmatic dependent launch (kiln__cuda_gemm_launch): the set-up above this call may run\n"
    " * while the previous kernel on the stream finishes; global memory only after the wait. No\n"
    " * griddepcontrol.launch_dependents: the next grid starts as this one's blocks exit (an\n"
    " * explicit trigger at the start let the next grid's blocks sit on the SMs this one left\n"
    " * idle, and grids of 72-98 blocks ran 2-23 % slower; bench/NOTES.md step 11) */\n"
    "__device__ __forceinline__ void kg_grid_dep() {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900\n"
    "  asm volatile(\"griddepcontrol.wait;\\n\" ::: \"memory\");\n"
    "#endif\n"
    "}\n";

void kiln__cuda_gemm_tile_words(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed, int64_t tm,
                                int64_t tn, uint64_t *w, unsigned *gx, unsigned *gy)
{
    int64_t nb = 1;
    for (int i = 0; i < bt->n; i++) nb *= bt->shape[i];
    kiln__cuda_gemm_words(d, seed, nb, w);
    w[19] = (uint64_t)tm;
    w[20] = (uint64_t)tn;
    w[21] = d->relu != 0;
    w[22] = (uint64_t)bt->n;
    for (int i = 0; i < bt->n; i++) {
        w[23 + 4 * i] = (uint64_t)bt->shape[i];
        w[24 + 4 * i] = (uint64_t)bt->sa[i];
        w[25 + 4 * i] = (uint64_t)bt->sb[i];
        w[26 + 4 * i] = (uint64_t)bt->sc[i];
    }
    *gx = (unsigned)(tm * tn);
    *gy = (unsigned)(nb < 65535 ? nb : 65535);
}

