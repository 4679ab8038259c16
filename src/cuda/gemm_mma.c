/*
 * src/cuda/gemm_mma.c — kiln's first own GEMM kernel (issue 5, step 1): tensor-core tiles
 * with mma.sync for f16 and bf16 inputs, f32 accumulation, for sm_80 and later (on Hopper
 * the baseline before wgmma, and the path where wgmma is not available):
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b,  one rounding of the f32 result.
 *
 * Design (bench/NOTES.md, "GEMM kernels (issue 5)", has the napkin math):
 *  - a block of 256 threads (8 warps, 2 x 4) computes a 128 x 128 tile of C; each warp a
 *    64 x 32 sub-tile = 4 x 4 mma.sync.m16n8k16 tiles (64 f32 accumulators per thread);
 *  - K is walked in steps of 32 through a 3-stage ring in shared memory (48 KiB, static);
 *    fragments come from shared memory by ldmatrix (.trans for an MN-major tile); the
 *    layouts are XOR-swizzled on 16-byte chunks, so ldmatrix and the fills are free of bank
 *    conflicts;
 *  - an operand whose contiguous axis has unit stride in memory (and 16-byte aligned rows)
 *    is copied with 16-byte cp.async (zero-fill past the edges); any other operand (odd
 *    strides, negative steps, misaligned views) goes through registers element by
 *    element, fetched before a stage's math and stored to shared memory after it;
 *  - transposes are layouts: each operand is K-major or MN-major in shared memory, chosen
 *    from its strides, so all four op(A) op(B) forms read memory along its contiguous axis;
 *  - the epilogue works on the accumulators in registers: alpha, bias (per column n,
 *    stride bias_s), ReLU, beta * C, then one rounding (nearest, or stochastic with the
 *    bits kiln_gemm_sr_bits(seed, sr_stream, b*M + m, n, N), as the reference kernel and
 *    the CPU do, so the bits never depend on the tiling: one Philox call gives the bits of
 *    the eight elements a thread holds in one row of its warp's 32 columns) and the store (two neighbours as one
 *    32-bit word when C is contiguous along N);
 *  - batches along blockIdx.y (a grid-stride loop past 65535), tiles along blockIdx.x in
 *    groups of 8 tile rows for L2 reuse (kg_tile, kg_batch: gemm.c's shared helpers).
 * Sizes, strides, pointers, alpha, beta, the seed and the stream are kernel arguments; the
 * source depends only on kiln_gemm_mma_cfg (gemm_own.h), so a new shape does not recompile.
 * Measured on the H100: 0.38-0.41x cuBLASLt on the big squares (bench/NOTES.md).
 * Not here: split-K (a K-heavy GEMM with few tiles leaves SMs idle; gemm_wgmma.c has it).
 * This file holds the kernel's source and its launch description, free of CUDA headers (built
 * into every libkiln for tests/test_gemm_emu.c); gemm_mma_launch.c runs it on a device.
 */
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "cuda/gemm_plan.h"

#define BM      128 /* block tile, as in the source below */
#define BN      128
#define BK      32
#define THREADS 256
#define GROUP_M 8

/* The fixed part of the kernel; kiln__cuda_gemm_mma_source puts the structure (constexpr
 * values) and the prelude in front of it. */
static const char kernel_src[] =
    "/* Tiles: a block of 8 warps computes a BM x BN tile of C, walking K in steps of BK through a\n"
    " * STAGES-deep ring of shared-memory stages; warp w owns the WM x WN sub-tile at\n"
    " * (w / 4, w % 4), i.e. MI x NI mma tiles of 16 x 8. */\n"
    "constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3, NT = 256;\n"
    "constexpr int WM = 64, WN = 32, MI = WM / 16, NI = WN / 8;\n"
    "constexpr int TILE = BM * BK; /* elements of one operand in one stage (BN * BK is the same) */\n"
    "static_assert(BM == BN && NT == 256 && BK == 32, \"the loaders below assume these\");\n"
    "static_assert(WN == 32, \"stochastic rounding: one Philox group per row of a warp's 32 columns\");\n"
    "/* argument words (kiln__cuda_gemm_mma_prepare): 0 seed, 1 SR stream, 2-4 M N K, 5-8 A B C\n"
    " * bias, 9-15 a_sm a_sk b_sk b_sn c_sm c_sn bias_s (elements), 16-17 alpha beta (f64 bits),\n"
    " * 18 batch count, 19-20 tiles along M and N, 21 ReLU (0 or 1), 22 merged batch axes,\n"
    " * 23 + 4i: batch axis i (size, then the strides of A, B and C). ReLU and the batch rank\n"
    " * are arguments, not structure: they cost no registers, and fewer kernels get compiled. */\n"
    "struct kiln_args { kiln_w64 w[23 + 4 * MAXBAX]; };\n"
    "\n"
    "/* Shared-memory layouts, offsets in elements, swizzled on 16-byte chunks so that the eight\n"
    " * 16-byte rows one ldmatrix reads (and the chunks one cp.async phase writes) fall in\n"
    " * distinct bank groups:\n"
    " *   K-major tile, 128 rows (m or n) of BK = 32 k (64 bytes): chunk k/8 of row r is stored\n"
    " *   at chunk (k/8) ^ ((r/2) % 4);\n"
    " *   MN-major tile, BK rows (k) of 128 (m or n) (256 bytes): chunk r/8 of row k is stored at\n"
    " *   chunk (r/8) ^ (k % 8). */\n"
    "__device__ __forceinline__ int kg_off_k(int r, int k) {\n"
    "  return r * BK + ((((k >> 3) ^ (r >> 1)) & 3) << 3) + (k & 7);\n"
    "}\n"
    "__device__ __forceinline__ int kg_off_mn(int k, int r) {\n"
    "  return k * BM + (((r >> 3) ^ (k & 7)) << 3) + (r & 7);\n"
    "}\n"
    "\n"
    "/* kg: PTX wrappers */\n"
    "__device__ __forceinline__ unsigned kg_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }\n"
    "/* 16 bytes global -> shared, the first `bytes` (0..16) read, the rest zero-filled */\n"
    "__device__ __forceinline__ void kg_cp16(unsigned dst, const void *src, int bytes) {\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\"\n"
    "               :: \"r\"(dst), \"l\"(src), \"r\"(bytes) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kg_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n"
    "template <int N> __device__ __forceinline__ void kg_wait() {\n"
    "  asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void kg_ldsm(unsigned *r, unsigned addr) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(addr));\n"
    "}\n"
    "__device__ __forceinline__ void kg_ldsm_t(unsigned *r, unsigned addr) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(addr));\n"
    "}\n"
    "/* d (16 x 8, f32) += a (16 x 16) @ b (16 x 8) */\n"
    "__device__ __forceinline__ void kg_mma(float *d, const unsigned *a, const unsigned *b) {\n"
    "  if constexpr (BF16)\n"
    "    asm(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32\\n\"\n"
    "        \"  {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "        : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "  else\n"
    "    asm(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\\n\"\n"
    "        \"  {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "        : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
    "        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "/* kg: end of PTX wrappers */\n"
    "\n"
    "__device__ __forceinline__ float kg_f32(ST h) {\n"
    "  if constexpr (BF16) return kiln_bf2f(h); else return kiln_h2f(h);\n"
    "}\n"
    "/* stochastic rounding of v with the bits of its place (kiln_gemm_sr_bits) */\n"
    "__device__ __forceinline__ ST kg_round_sr(float v, unsigned bits) {\n"
    "  if constexpr (BF16) return (ST)kiln_f32_to_bf16_sr(v, bits); else return (ST)kiln_f16_sr13_fast(v, bits);\n"
    "}\n"
    "\n"
    "/* One operand tile: element (r, k) of the tile is X[(r0 + r) * s_r + (k0 + k) * s_k] for\n"
    " * r0 + r < R and k0 + k < K, else 0; KMAJ picks the shared layout. */\n"
    "\n"
    "/* vec: 16-byte cp.async; K-major needs s_k == 1, MN-major s_r == 1. Chunks that run past\n"
    " * the contiguous axis read only what is inside; chunks outside read nothing (zero-fill). */\n"
    "template <int KMAJ>\n"
    "__device__ __forceinline__ void kg_load_vec(unsigned dst, const ST *X, long long r0, long long R, long long k0,\n"
    "                                            long long K, long long s_r, long long s_k, int tid) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < TILE / 8 / NT; i++) {\n"
    "    const int q = tid + i * NT;\n"
    "    const int r = KMAJ ? q >> 2 : (q & 15) << 3, k = KMAJ ? (q & 3) << 3 : q >> 4;\n"
    "    const long long gr = r0 + r, gk = k0 + k;\n"
    "    int bytes = 0;\n"
    "    const ST *src = X;\n"
    "    if (gr < R && gk < K) {\n"
    "      const long long left = KMAJ ? K - gk : R - gr;\n"
    "      bytes = left >= 8 ? 16 : (int)left * 2;\n"
    "      src = KMAJ ? X + gr * s_r + gk : X + gk * s_k + gr;\n"
    "    }\n"
    "    kg_cp16(dst + 2 * (KMAJ ? kg_off_k(r, k) : kg_off_mn(k, r)), src, bytes);\n"
    "  }\n"
    "}\n"
    "\n"
    "/* scalar: any strides; SCAL elements per thread, walked along the shared layout's\n"
    " * contiguous axis (the one the host chose for the smaller stride), fetched into registers\n"
    " * (two per word) before a stage's math and put into shared memory after it. Thread tid\n"
    " * takes, for i = 0 .. SCAL-1, K-major: row tid / 32 + 8 i, k tid % 32; MN-major: row\n"
    " * tid % 128, k tid / 128 + 2 i. */\n"
    "constexpr int SCAL = TILE / NT;\n"
    "template <int KMAJ>\n"
    "__device__ __forceinline__ void kg_fetch(unsigned (&v)[SCAL / 2], const ST *X, long long r0, long long R,\n"
    "                                         long long k0, long long K, long long s_r, long long s_k, int tid) {\n"
    "  const long long gr = r0 + (KMAJ ? tid >> 5 : tid & 127), gk = k0 + (KMAJ ? tid & 31 : tid >> 7);\n"
    "  /* how far the walked axis (r for K-major, k for MN-major) stays inside from this thread's\n"
    "   * first element, 0 when its fixed coordinate is outside; element i is at walked offset\n"
    "   * (K-major) 8 i or (MN-major) 2 i */\n"
    "  const long long left = !(KMAJ ? gk < K : gr < R) ? 0 : KMAJ ? R - gr : K - gk;\n"
    "  const int inside = left <= 0 ? 0 : left >= 8 * SCAL ? 8 * SCAL : (int)left;\n"
    "  const long long step = KMAJ ? 8 * s_r : 2 * s_k;\n"
    "  const ST *x = X + gr * s_r + gk * s_k; /* only dereferenced inside */\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < SCAL; i++, x += step) {\n"
    "    const unsigned e = (KMAJ ? 8 * i : 2 * i) < inside ? (unsigned)*x : 0u;\n"
    "    if (i & 1) v[i >> 1] |= e << 16; else v[i >> 1] = e;\n"
    "  }\n"
    "}\n"
    "/* The swizzle of K-major row r depends on (r / 2) % 4, unchanged by r += 8; that of\n"
    " * MN-major row k on k % 8, unchanged by k += 8: so the offsets are a few per-thread bases\n"
    " * plus constants. */\n"
    "template <int KMAJ>\n"
    "__device__ __forceinline__ void kg_put(ST *tile, const unsigned (&v)[SCAL / 2], int tid) {\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < SCAL; i++) {\n"
    "    const ST e = (ST)(v[i >> 1] >> (16 * (i & 1)));\n"
    "    if constexpr (KMAJ) tile[kg_off_k(tid >> 5, tid & 31) + i * 8 * BK] = e;\n"
    "    else tile[kg_off_mn((tid >> 7) + 2 * (i & 3), tid & 127) + (i >> 2) * 8 * BM] = e;\n"
    "  }\n"
    "}\n"
    "\n"
    "/* The warp's MI x NI mma tiles over one stage (BK = two k16 steps). Fragments by ldmatrix:\n"
    " * A (16 x 16) as 4 8x8 matrices (m 0-7 | 8-15) x (k 0-7 | 8-15), B as 2 n8 tiles of\n"
    " * (k 0-7 | 8-15); .trans where the shared tile is MN-major. */\n"
    "__device__ __forceinline__ void kg_stage(float (&acc)[MI][NI][4], unsigned sa, unsigned sb, int wm, int wn,\n"
    "                                         int lane) {\n"
    "  const int j = lane >> 3, l7 = lane & 7;\n"
    "#pragma unroll\n"
    "  for (int kk = 0; kk < BK; kk += 16) {\n"
    "    unsigned af[MI][4], bf[NI][2];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++) {\n"
    "      const int m = wm * WM + i * 16;\n"
    "      if constexpr (A_KMAJ)\n"
    "        kg_ldsm(af[i], sa + 2 * kg_off_k(m + (lane & 15), kk + ((lane >> 4) << 3)));\n"
    "      else\n"
    "        kg_ldsm_t(af[i], sa + 2 * kg_off_mn(kk + l7 + ((j >> 1) << 3), m + ((j & 1) << 3)));\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int p = 0; p < NI / 2; p++) {\n"
    "      const int n = wn * WN + p * 16;\n"
    "      unsigned t[4];\n"
    "      if constexpr (B_KMAJ)\n"
    "        kg_ldsm(t, sb + 2 * kg_off_k(n + l7 + ((j >> 1) << 3), kk + ((j & 1) << 3)));\n"
    "      else\n"
    "        kg_ldsm_t(t, sb + 2 * kg_off_mn(kk + l7 + ((j & 1) << 3), n + ((j >> 1) << 3)));\n"
    "      bf[2 * p][0] = t[0];\n"
    "      bf[2 * p][1] = t[1];\n"
    "      bf[2 * p + 1][0] = t[2];\n"
    "      bf[2 * p + 1][1] = t[3];\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < NI; q++) kg_mma(acc[i][q], af[i], bf[q]);\n"
    "  }\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NT, 2) kiln_gemm_mma(const __grid_constant__ kiln_args p) {\n"
    "  /* stage s: A at s * 2 * TILE, B at s * 2 * TILE + TILE */\n"
    "  __shared__ __align__(128) ST smem[STAGES * 2 * TILE];\n"
    "  kg_grid_dep();\n"
    "  KG_TILE_ARGS(p);\n"
    "  const int tiles_m = (int)p.w[19], tiles_n = (int)p.w[20];\n"
    "  const bool relu = p.w[21] != 0;\n"

    "  (void)bias; (void)bias_s; (void)beta;\n"
    "\n"
    "  int tm, tn;\n"
    "  kg_tile((int)blockIdx.x, tiles_m, tiles_n, &tm, &tn);\n"
    "  const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;\n"
    "\n"
    "  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;\n"
    "  const int KT = (int)((K + BK - 1) / BK);\n"
    "  const unsigned s0 = kg_smem(smem);\n"
    "\n"
    "  for (long long bi = blockIdx.y; bi < NB; bi += gridDim.y) {\n"
    "    long long oa, ob, oc;\n"
    "    kg_batch(p.w, bi, &oa, &ob, &oc);\n"
    "    const ST *A = A0 + oa;\n"
    "    const ST *B = B0 + ob;\n"
    "    ST *C = C0 + oc;\n"
    "\n"
    "    float acc[MI][NI][4];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < NI; q++)\n"
    "#pragma unroll\n"
    "        for (int r = 0; r < 4; r++) acc[i][q][r] = 0.0f;\n"
    "    unsigned ra[SCAL / 2], rb[SCAL / 2]; /* the scalar loads in flight (unused, and dropped, for vec) */\n"
    "    (void)ra; (void)rb;\n"
    "\n"
    "    /* prologue: stages 0 .. STAGES-2 in flight (one commit group each, maybe empty) */\n"
    "#pragma unroll\n"
    "    for (int s = 0; s < STAGES - 1; s++) {\n"
    "      if (s < KT) {\n"
    "        const long long k0 = (long long)s * BK;\n"
    "        const int sa = s * 2 * TILE, sb = sa + TILE; /* element offsets of the stage's A and B */\n"
    "        if constexpr (A_VEC) {\n"
    "          kg_load_vec<A_KMAJ>(s0 + 2 * sa, A, m0, M, k0, K, a_sm, a_sk, tid);\n"
    "        } else {\n"
    "          kg_fetch<A_KMAJ>(ra, A, m0, M, k0, K, a_sm, a_sk, tid);\n"
    "          kg_put<A_KMAJ>(smem + sa, ra, tid);\n"
    "        }\n"
    "        if constexpr (B_VEC) {\n"
    "          kg_load_vec<B_KMAJ>(s0 + 2 * sb, B, n0, N, k0, K, b_sn, b_sk, tid);\n"
    "        } else {\n"
    "          kg_fetch<B_KMAJ>(rb, B, n0, N, k0, K, b_sn, b_sk, tid);\n"
    "          kg_put<B_KMAJ>(smem + sb, rb, tid);\n"
    "        }\n"
    "      }\n"
    "      kg_commit();\n"
    "    }\n"
    "\n"
    "    /* main loop: wait for stage kt, start stage kt + STAGES-1 into the slot that stage\n"
    "     * kt-1 used (everyone is past it: the barrier), compute stage kt */\n"
    "    for (int kt = 0; kt < KT; kt++) {\n"
    "      kg_wait<STAGES - 2>();\n"
    "      __syncthreads();\n"
    "      const int nk = kt + STAGES - 1, na = (nk % STAGES) * 2 * TILE, nb = na + TILE;\n"
    "      const bool more = nk < KT;\n"
    "      if (more) {\n"
    "        const long long k0 = (long long)nk * BK;\n"
    "        if constexpr (A_VEC) kg_load_vec<A_KMAJ>(s0 + 2 * na, A, m0, M, k0, K, a_sm, a_sk, tid);\n"
    "        else kg_fetch<A_KMAJ>(ra, A, m0, M, k0, K, a_sm, a_sk, tid);\n"
    "        if constexpr (B_VEC) kg_load_vec<B_KMAJ>(s0 + 2 * nb, B, n0, N, k0, K, b_sn, b_sk, tid);\n"
    "        else kg_fetch<B_KMAJ>(rb, B, n0, N, k0, K, b_sn, b_sk, tid);\n"
    "      }\n"
    "      kg_commit();\n"
    "      const int ca = (kt % STAGES) * 2 * TILE;\n"
    "      kg_stage(acc, s0 + 2 * ca, s0 + 2 * (ca + TILE), wm, wn, lane);\n"
    "      if (more) {\n"
    "        if constexpr (!A_VEC) kg_put<A_KMAJ>(smem + na, ra, tid);\n"
    "        if constexpr (!B_VEC) kg_put<B_KMAJ>(smem + nb, rb, tid);\n"
    "      }\n"
    "    }\n"
    "    kg_wait<0>();\n"
    "    __syncthreads(); /* the next batch's prologue refills the stages */\n"
    "\n"
    "    /* epilogue from the accumulators: acc[i][q][2h + e] is C[m][n], m = row g (+ 8 for\n"
    "     * h = 1) of mma tile i, n = column 2 * (lane % 4) + e of n8 tile q */\n"
    "    const int g = lane >> 2, t4 = lane & 3;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < MI; i++)\n"
    "#pragma unroll\n"
    "      for (int h = 0; h < 2; h++) {\n"
    "        const long long m = m0 + wm * WM + i * 16 + g + h * 8;\n"
    "        if (m >= M) continue;\n"
    "        /* SR: this row's group of the warp's 32 columns (n0 + wn * WN is a multiple of 32):\n"
    "         * column 2 t4 + e of n8 tile q takes half e of word q */\n"
    "        kiln_philox4 sr = {};\n"
    "        if constexpr (SR)\n"
    "          sr = kiln_philox4x32_r(p.w[0], p.w[1], kiln_gemm_sr_counter((kiln_w64)(bi * M + m), (kiln_w64)(n0 + wn * WN + t4 * 2), (kiln_w64)N), KILN_GEMM_SR_ROUNDS);\n"
    "#pragma unroll\n"
    "        for (int q = 0; q < NI; q++) {\n"
    "          const long long n = n0 + wn * WN + q * 8 + t4 * 2;\n"
    "          if (n >= N) continue;\n"
    "          ST o[2];\n"
    "#pragma unroll\n"
    "          for (int e = 0; e < 2; e++) {\n"
    "            if (e == 1 && n + 1 >= N) break;\n"
    "            float v = alpha * acc[i][q][2 * h + e];\n"
    "            if constexpr (HAS_BIAS) v = v + kg_f32(bias[(n + e) * bias_s]);\n"
    "            if (relu) v = v < 0.0f ? 0.0f : v;\n"
    "            if constexpr (HAS_BETA) v = v + beta * kg_f32(C[m * c_sm + (n + e) * c_sn]);\n"
    "            if constexpr (SR) {\n"
    "              o[e] = kg_round_sr(v, e ? (sr.v[q] & 0xFFFF0000u) : (sr.v[q] << 16));\n"
    "            } else {\n"
    "              o[e] = BF16 ? (ST)kiln_f32_to_bf16_rn(v) : kiln_f2h(v);\n"
    "            }\n"
    "          }\n"
    "          ST *dst = C + m * c_sm + n * c_sn;\n"
    "          if (C_PAIR && n + 1 < N) {\n"
    "            *(unsigned *)dst = (unsigned)o[0] | ((unsigned)o[1] << 16);\n"
    "          } else {\n"
    "            dst[0] = o[0];\n"
    "            if (n + 1 < N) dst[c_sn] = o[1];\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "  }\n"
    "}\n";

/* ---- eligibility and the launch ---------------------------------------------------------- */

int kiln__cuda_gemm_mma_eligible(int cc_major, const kiln_gemm_desc *d)
{
    if (cc_major < 8) return 0; /* mma.sync bf16, ldmatrix, cp.async: sm_80 */
    if (d->dtype != KILN_DTYPE_F16 && d->dtype != KILN_DTYPE_BF16) return 0;
    if (d->M <= 0 || d->N <= 0 || d->K <= 0) return 0;
    if (d->K > (int64_t)INT_MAX - BK) return 0; /* the kernel counts k tiles in int */
    int64_t tm = (d->M + BM - 1) / BM, tn = (d->N + BN - 1) / BN;
    if (tn > INT_MAX / GROUP_M || tm > INT_MAX / tn) return 0; /* tiles along blockIdx.x, in int */
    return 1;
}

static int64_t iabs(int64_t x)
{
    return x < 0 ? -x : x;
}

/* One operand X as R rows (m or n) by K: element (r, k) at x + r*s_r + k*s_k, batch
 * strides bs[0..nb). vec when every 16-byte chunk along the unit-stride axis starts on a
 * 16-byte boundary in every batch; else the shared layout follows the smaller stride, so
 * that neighbouring threads read neighbouring elements. */
static void plan_operand(const char *x, int64_t R, int64_t K, int64_t s_r, int64_t s_k, const int64_t *bs, int nb,
                         int *kmajor, int *vec)
{
    int al = kiln__cuda_aligned(x, 16);
    for (int i = 0; i < nb; i++) al = al && bs[i] % 8 == 0;
    if (al && s_k == 1 && (R == 1 || s_r % 8 == 0)) {
        *kmajor = 1;
        *vec = 1;
    } else if (al && s_r == 1 && (K == 1 || s_k % 8 == 0)) {
        *kmajor = 0;
        *vec = 1;
    } else {
        *vec = 0;
        *kmajor = R == 1 ? 1 : K == 1 ? 0 : iabs(s_k) <= iabs(s_r);
    }
}

void kiln__cuda_gemm_mma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, uint64_t seed,
                                 kiln_gemm_mma_launch *l)
{
    memset(l, 0, sizeof *l);
    kiln_gemm_mma_cfg *c = &l->cfg;
    c->dtype = d->dtype;
    plan_operand(d->a, d->M, d->K, d->a_sm, d->a_sk, bt->sa, bt->n, &c->a_kmajor, &c->a_vec);
    plan_operand(d->b, d->N, d->K, d->b_sn, d->b_sk, bt->sb, bt->n, &c->b_kmajor, &c->b_vec);
    c->bias = d->bias != NULL;
    c->beta = d->beta != 0.0;
    c->sr = d->round == KILN_ROUND_STOCHASTIC;
    c->c_pair = d->c_sn == 1 && (d->M == 1 || d->c_sm % 2 == 0) && kiln__cuda_aligned(d->c, 4);
    for (int i = 0; i < bt->n; i++) c->c_pair = c->c_pair && bt->sc[i] % 2 == 0;

    int64_t tm = (d->M + BM - 1) / BM, tn = (d->N + BN - 1) / BN;
    kiln__cuda_gemm_tile_words(d, bt, seed, tm, tn, l->w, &l->gx, &l->gy);
    l->nw = KILN_GEMM_MMA_WORDS; /* the kernel's argument struct has room for every batch rank */
    l->threads = THREADS;
}

void kiln__cuda_gemm_mma_source(const kiln_gemm_mma_cfg *c, kiln_sbuf *b)
{
    kiln__cuda_prelude(b);
    kiln__sbuf_puts(b, "\n/* ---- kiln_gemm_mma (src/cuda/gemm_mma.c) ---- */\n");
    kiln__sbuf_puts(b, "typedef unsigned short ST; /* f16 or bf16 bits */\n");
    kiln__sbuf_printf(b, "constexpr int BF16 = %d, A_KMAJ = %d, A_VEC = %d, B_KMAJ = %d, B_VEC = %d;\n",
                      c->dtype == KILN_DTYPE_BF16, c->a_kmajor, c->a_vec, c->b_kmajor, c->b_vec);
    kiln__sbuf_printf(b, "constexpr int HAS_BIAS = %d, HAS_BETA = %d, SR = %d, C_PAIR = %d, MAXBAX = %d;\n", c->bias,
                      c->beta, c->sr, c->c_pair, KILN_MAX_DIMS);
    kiln__sbuf_puts(b, kiln__cuda_gemm_tile_src);
    kiln__sbuf_puts(b, kiln__cuda_gemm_dep_src);
    kiln__sbuf_puts(b, kernel_src);
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_mma_source(cfg, b); }

char *kiln__cuda_gemm_mma_source_text(const kiln_gemm_mma_cfg *cfg) { return kiln__cuda_gemm_text(gen_source, cfg); }

