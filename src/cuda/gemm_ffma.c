/*
 * src/cuda/gemm_ffma.c — kiln's f32 GEMM kernel without tensor cores (issue 5): FFMA on
 * CUDA cores, for f32 when TF32 is not allowed (and for f32 layouts the tf32 kernel does
 * not take), any compute capability:
 *   C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b,   f32 accumulation, no rounding.
 *
 * Design (bench/NOTES.md, "GEMM kernels (issue 5)", steps 9, 15 and 17): 128 x 128 tiles of C per
 * block of 256 threads, or 128 x 256 where the split model says so (WIDE: 8 x 16 accumulators
 * a thread, four column quadrants; cuBLAS's sm_90 SGEMM runs 256 x 128 tiles of 128
 * accumulators a thread), each thread an 8 x 8 (WIDE 8 x 16) register tile (4 x 4 quadrants
 * 64 apart, so that its shared-memory reads are float4s without bank conflicts; warps of
 * 4 x 8 threads by default, so a warp's reads of B are one wavefront); k walked in slices of BK (8 by
 * default, or 16) through two shared-memory buffers, the next slice fetched into registers
 * during this one's FFMAs (interior operands through pointers stepped each slice) and stored,
 * with the slice's barrier, before its last k step, so that the next slice's first fragments
 * load under that step's FFMAs; a k step's FFMAs column by column, the rows up and down in
 * turn (one operand repeats the last FFMA's: fewer register bank conflicts); both operands stored MN-major in shared memory (a K-major
 * operand is transposed on the way in), fetched as float4 where the operand's contiguous
 * axis has unit stride and 16-byte aligned rows (no bounds tests where the tile's rows and
 * the slice's k are all inside), else element by element with any strides (negative steps
 * included), zero-filled outside. One block per SM by default (no register cap: ~190
 * registers, no spills; two blocks capped at 128 spill, and measured slower). The
 * epilogue (alpha, bias per column, ReLU, beta * C) in registers with float4 stores where
 * C allows. Tiles in groups of 8 tile rows, batches along blockIdx.y
 * (kiln__cuda_gemm_tile_words, shared with gemm_mma.c). Split-K for one GEMM where a model
 * of whole waves says it pays (split_model: the fully-connected fprop/bprop shapes, few
 * tiles or a tile count just past a wave): blockIdx.y is then the k split, each split
 * writes an f32 partial to a workspace and the last block of a tile to arrive (the wgmma
 * kernel's counters) sums them in split order, so the bits do not depend on timing; where
 * all blocks fit the SMs at once (a cooperative launch), every block of the tile sums a
 * slice of it instead, in the same order.
 * The source depends only on kiln_gemm_ffma_cfg; no inline PTX, so tests/test_gemm_emu.c
 * runs it on the host as well.
 * This file holds the kernel's source and its launch description, free of CUDA headers (built
 * into every libkiln for tests/test_gemm_emu.c); gemm_ffma_launch.c runs it on a device.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_plan.h"

#define TILE    128
#define THREADS 256

/* The structure kiln_dot uses (KILN_FFMA_* override it) */
#define DEFAULT_BK    8
#define DEFAULT_MINB  1
#define DEFAULT_WARPS 1 /* 4 x 8 */
#define DEFAULT_ORDER 1 /* column by column, rows up and down */
#define DEFAULT_EARLY 1 /* the next slice's barrier before the last k step */
#define DEFAULT_WALK  1 /* interior operands walk pointers */
#define DEFAULT_WIDE  0 /* 128 x 128 tiles where the width rule does not run (no SM count) */

static const char kernel_src[] =
    "/* Tiles: a block of 256 threads computes a 128 x BN tile of C (BN 128, or 256 with WIDE),\n"
    " * walking K in slices of BK (8 or 16) through two shared-memory buffers (the next slice is\n"
    " * fetched into registers while this one is used, then stored into the other buffer). Both\n"
    " * operands sit MN-major in shared memory (As[k][m], Bs[k][n]), so a thread reads its 8 rows\n"
    " * of A and TN columns of B for one k as float4 loads. Thread (ty, tx) of the 16 x 16 grid\n"
    " * owns rows 4 ty + i and 64 + 4 ty + i, columns 64 q + 4 tx + j (i, j < 4, q < BN / 64):\n"
    " * 8 x TN f32 accumulators, 8 TN FFMA per k per thread (WIDE: 128 of them per six float4\n"
    " * loads, cuBLAS's SGEMM shape on sm_90: 256 x 128 tiles of 128 accumulators a thread).\n"
    " * WARPS 0: a warp is 2 x 16 threads of the grid (its B reads 16 float4s, two shared-memory\n"
    " * wavefronts); WARPS 1: 4 x 8 (one each). */\n"
    "typedef float ST;\n"
    "constexpr int BM = 128, BN = WIDE ? 256 : 128, NT = 256, TQ = BN / 64, TN = 4 * TQ;\n"
    "/* float4 fetches per thread and slice: of A, of B */\n"
    "constexpr int FPA = BK * BM / (4 * NT), FPB = BK * BN / (4 * NT);\n"
    "/* argument words: those of the mma.sync kernel (kiln__cuda_gemm_tile_words), then for\n"
    " * SPLIT the k slices per split, the f32 workspace and the arrival counters */\n"
    "constexpr int TW = 23 + 4 * MAXBAX;\n"
    "struct kiln_args { kiln_w64 w[TW + 3]; };\n"
    "\n"
    "/* One operand's slice: RT (the tile's rows) of R rows (m or n) by BK k of X, element (r, k)\n"
    " * at X[r * s_r + k * s_k], zero outside r < R, k < K. Fetch f of thread tid is float4 number\n"
    " * t = tid + NT f of the slice, four elements along the operand's contiguous axis: K-major\n"
    " * (KMAJ: k contiguous) row t / (BK / 4), k 4 (t % (BK / 4)) + q; MN-major rows\n"
    " * 4 (t % (RT / 4)) + q, k t / (RT / 4). VEC: one\n"
    " * float4 when all four are inside and 16-byte aligned (the host checked the strides and\n"
    " * the base); inside: the block's R rows and the slice's BK k are all inside (no tests). */\n"
    "template <int KMAJ, int VEC, int RT, int FPT>\n"
    "__device__ __forceinline__ void kg_fetch(float (&v)[FPT][4], const float *X, long long r0, long long R, long long k0,\n"
    "                                         long long K, long long s_r, long long s_k, int tid, bool inside) {\n"
    "#pragma unroll\n"
    "  for (int f = 0; f < FPT; f++) {\n"
    "    const int t = tid + NT * f;\n"
    "    const long long r = r0 + (KMAJ ? t / (BK / 4) : (t % (RT / 4)) * 4), k = k0 + (KMAJ ? (t % (BK / 4)) * 4 : t / (RT / 4));\n"
    "    const long long lim_r = KMAJ ? 1 : 4, lim_k = KMAJ ? 4 : 1; /* the walked axis gets 4 */\n"
    "    if (VEC && (inside || (r + lim_r <= R && k + lim_k <= K))) {\n"
    "      const float4 q = *(const float4 *)(X + r * s_r + k * s_k);\n"
    "      v[f][0] = q.x; v[f][1] = q.y; v[f][2] = q.z; v[f][3] = q.w;\n"
    "      continue;\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int q = 0; q < 4; q++) {\n"
    "      const long long rr = r + (KMAJ ? 0 : q), kk = k + (KMAJ ? q : 0);\n"
    "      v[f][q] = rr < R && kk < K ? X[rr * s_r + kk * s_k] : 0.0f;\n"
    "    }\n"
    "  }\n"
    "}\n"
    "/* WALK: fetch f's float4 of the slice at k0 (kg_fetch's element (r, k) of thread tid),\n"
    " * as a pointer that each slice steps by BK k: interior slices load through it, without\n"
    " * kg_fetch's 64-bit index arithmetic. A fetch past the R rows walks row 0 instead (in\n"
    " * bounds, aligned like r): its values reach only accumulators past M or N, which nothing\n"
    " * stores; the caller walks only where no fetch straddles R (K-major, or R % 4 == 0) */\n"
    "template <int KMAJ, int RT, int FPT>\n"
    "__device__ __forceinline__ void kg_walk_init(const float *(&q)[FPT], const float *X, long long r0, long long R,\n"
    "                                             long long k0, long long s_r, long long s_k, int tid) {\n"
    "#pragma unroll\n"
    "  for (int f = 0; f < FPT; f++) {\n"
    "    const int t = tid + NT * f;\n"
    "    const long long r = r0 + (KMAJ ? t / (BK / 4) : (t % (RT / 4)) * 4), k = k0 + (KMAJ ? (t % (BK / 4)) * 4 : t / (RT / 4));\n"
    "    q[f] = X + (!EDGE_WALK || r + (KMAJ ? 1 : 4) <= R ? r : 0) * s_r + k * s_k;\n"
    "  }\n"
    "}\n"
    "template <int FPT>\n"
    "__device__ __forceinline__ void kg_walk(float (&v)[FPT][4], const float *const (&q)[FPT]) {\n"
    "#pragma unroll\n"
    "  for (int f = 0; f < FPT; f++) {\n"
    "    const float4 x = *(const float4 *)q[f];\n"
    "    v[f][0] = x.x; v[f][1] = x.y; v[f][2] = x.z; v[f][3] = x.w;\n"
    "  }\n"
    "}\n"
    "/* ... into the MN-major buffer S[k][r] */\n"
    "template <int KMAJ, int RT, int FPT>\n"
    "__device__ __forceinline__ void kg_put(float (*S)[RT], const float (&v)[FPT][4], int tid) {\n"
    "#pragma unroll\n"
    "  for (int f = 0; f < FPT; f++) {\n"
    "    const int t = tid + NT * f;\n"
    "    if constexpr (KMAJ) {\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < 4; q++) S[(t % (BK / 4)) * 4 + q][t / (BK / 4)] = v[f][q];\n"
    "    } else {\n"
    "      *(float4 *)&S[t / (RT / 4)][(t % (RT / 4)) * 4] = make_float4(v[f][0], v[f][1], v[f][2], v[f][3]);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "\n"
    "/* a spinning thread's pause (nanosleep from sm_70; the host emulator yields there) */\n"
    "__device__ __forceinline__ void kg_pause() {\n"
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700\n"
    "  __nanosleep(64);\n"
    "#endif\n"
    "}\n"
    "/* A thread's fragments of k step k of a slice: its 8 rows of A and TN columns of B */\n"
    "__device__ __forceinline__ void kg_frag(float (&a)[8], float (&b)[TN], const float (*As)[BM], const float (*Bs)[BN],\n"
    "                                        int k, int ty, int tx) {\n"
    "  const float4 a0 = *(const float4 *)&As[k][ty * 4], a1 = *(const float4 *)&As[k][64 + ty * 4];\n"
    "  a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w; a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;\n"
    "#pragma unroll\n"
    "  for (int q = 0; q < TQ; q++) {\n"
    "    const float4 bq = *(const float4 *)&Bs[k][64 * q + tx * 4];\n"
    "    b[4 * q] = bq.x; b[4 * q + 1] = bq.y; b[4 * q + 2] = bq.z; b[4 * q + 3] = bq.w;\n"
    "  }\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NT, MINB) kiln_gemm_ffma(const __grid_constant__ kiln_args p) {\n"
    "  __shared__ __align__(16) float As[2][BK][BM];\n"
    "  __shared__ __align__(16) float Bs[2][BK][BN];\n"
    "  kg_grid_dep();\n"
    "  KG_TILE_ARGS(p);\n"
    "  const bool relu = p.w[21] != 0;\n"
    "  (void)bias; (void)bias_s; (void)beta;\n"
    "  int tm, tn;\n"
    "  kg_tile((int)blockIdx.x, (int)p.w[19], (int)p.w[20], &tm, &tn);\n"
    "  const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;\n"
    "  const int tid = (int)threadIdx.x;\n"
    "  const int ty = WARPS ? ((tid >> 6) << 2) | ((tid >> 3) & 3) : tid >> 4;\n"
    "  const int tx = WARPS ? (((tid >> 5) & 1) << 3) | (tid & 7) : tid & 15;\n"
    "  const int KT = (int)((K + BK - 1) / BK);\n"
    "  const bool m_in = m0 + BM <= M, n_in = n0 + BN <= N; /* the tile's rows (columns) all inside */\n"
    "  /* the epilogue of C[m][nb .. nb + 3] (m < M) from its f32 sums s: alpha, bias, ReLU,\n"
    "   * beta * C, one float4 store where C allows */\n"
    "  float *C = C0;\n"
    "  auto kg_out4 = [&](long long m, long long nb, const float *s) {\n"
    "    float o[4];\n"
    "#pragma unroll\n"
    "    for (int q = 0; q < 4; q++) {\n"
    "      const long long n = nb + q;\n"
    "      float v = alpha * s[q];\n"
    "      if (n < N) {\n"
    "        if constexpr (HAS_BIAS) v = v + bias[n * bias_s];\n"
    "        if (relu) v = v < 0.0f ? 0.0f : v;\n"
    "        if constexpr (HAS_BETA) v = v + beta * C[m * c_sm + n * c_sn];\n"
    "      }\n"
    "      o[q] = v;\n"
    "    }\n"
    "    float *dst = C + m * c_sm + nb * c_sn;\n"
    "    if (C_VEC && nb + 4 <= N) {\n"
    "      *(float4 *)dst = make_float4(o[0], o[1], o[2], o[3]);\n"
    "    } else {\n"
    "#pragma unroll\n"
    "      for (int q = 0; q < 4; q++)\n"
    "        if (nb + q < N) dst[q * c_sn] = o[q];\n"
    "    }\n"
    "  };\n"
    "  /* SPLIT (one batch): block (x, y) sums k slices [y kper, (y + 1) kper) of tile x */\n"
    "  int kb = 0, ke = KT;\n"
    "  if constexpr (SPLIT) {\n"
    "    const int kper = (int)p.w[TW];\n"
    "    kb = (int)blockIdx.y * kper;\n"
    "    ke = kb + kper < KT ? kb + kper : KT;\n"
    "  }\n"
    "\n"
    "  for (long long bi = SPLIT ? 0 : blockIdx.y; bi < NB; bi += SPLIT ? NB : gridDim.y) {\n"
    "    long long oa, ob, oc;\n"
    "    kg_batch(p.w, bi, &oa, &ob, &oc);\n"
    "    const float *A = A0 + oa, *B = B0 + ob;\n"
    "    C = C0 + oc;\n"
    "    float acc[8][TN];\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;\n"
    "    float va[FPA][4], vb[FPB][4];\n"
    "    bool k_in = (long long)(kb + 1) * BK <= K;\n"
    "    /* WALK: float4 operands walk pointers on interior tiles; EDGE_WALK: on edge tiles too\n"
    "     * where every fetch lies wholly inside the rows or wholly past them (K-major: one row\n"
    "     * a fetch; MN-major with M or N a multiple of 4) */\n"
    "    const bool a_walk = WALK && A_VEC && (m_in || (EDGE_WALK && (A_KMAJ || (M & 3) == 0)));\n"
    "    const bool b_walk = WALK && B_VEC && (n_in || (EDGE_WALK && (B_KMAJ || (N & 3) == 0)));\n"
    "    const float *qa[FPA], *qb[FPB];\n"
    "    kg_walk_init<A_KMAJ, BM, FPA>(qa, A, m0, M, (long long)kb * BK, a_sm, a_sk, tid);\n"
    "    kg_walk_init<B_KMAJ, BN, FPB>(qb, B, n0, N, (long long)kb * BK, b_sn, b_sk, tid);\n"
    "    const long long a_step = BK * a_sk, b_step = BK * b_sk;\n"
    "    if (a_walk && k_in) kg_walk<FPA>(va, qa);\n"
    "    else kg_fetch<A_KMAJ, A_VEC, BM, FPA>(va, A, m0, M, (long long)kb * BK, K, a_sm, a_sk, tid, m_in && k_in);\n"
    "    if (b_walk && k_in) kg_walk<FPB>(vb, qb);\n"
    "    else kg_fetch<B_KMAJ, B_VEC, BN, FPB>(vb, B, n0, N, (long long)kb * BK, K, b_sn, b_sk, tid, n_in && k_in);\n"
    "    kg_put<A_KMAJ, BM, FPA>(As[0], va, tid);\n"
    "    kg_put<B_KMAJ, BN, FPB>(Bs[0], vb, tid);\n"
    "    __syncthreads();\n"
    "    /* the fragments of k step 0 (EARLY: the loop reads each step's successor ahead) */\n"
    "    float a[8], b[TN];\n"
    "    if constexpr (EARLY) kg_frag(a, b, As[0], Bs[0], 0, ty, tx);\n"
    "    for (int kt = kb; kt < ke; kt++) {\n"
    "      const int cur = (kt - kb) & 1;\n"
    "      const bool more = kt + 1 < ke;\n"
    "      if (more) { /* the next slice into registers while this one is used */\n"
    "        k_in = (long long)(kt + 2) * BK <= K;\n"
    "#pragma unroll\n"
    "        for (int f = 0; f < FPA; f++) qa[f] += a_step;\n"
    "#pragma unroll\n"
    "        for (int f = 0; f < FPB; f++) qb[f] += b_step;\n"
    "        if (a_walk && k_in) kg_walk<FPA>(va, qa);\n"
    "        else kg_fetch<A_KMAJ, A_VEC, BM, FPA>(va, A, m0, M, (long long)(kt + 1) * BK, K, a_sm, a_sk, tid, m_in && k_in);\n"
    "        if (b_walk && k_in) kg_walk<FPB>(vb, qb);\n"
    "        else kg_fetch<B_KMAJ, B_VEC, BN, FPB>(vb, B, n0, N, (long long)(kt + 1) * BK, K, b_sn, b_sk, tid, n_in && k_in);\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int k = 0; k < BK; k++) {\n"
    "        float an[8], bn[TN];\n"
    "        if constexpr (EARLY) {\n"
    "          /* EARLY: step k + 1's fragments now; before the last step, the next slice goes\n"
    "           * into the other buffer (last read in slice kt - 1, before the barrier of its\n"
    "           * last step) and, past the barrier, its first fragments are read, their latency\n"
    "           * under the last step's FFMAs instead of exposed at the slice's start */\n"
    "          if (k + 1 < BK) {\n"
    "            kg_frag(an, bn, As[cur], Bs[cur], k + 1, ty, tx);\n"
    "          } else {\n"
    "            if (more) {\n"
    "              kg_put<A_KMAJ, BM, FPA>(As[cur ^ 1], va, tid);\n"
    "              kg_put<B_KMAJ, BN, FPB>(Bs[cur ^ 1], vb, tid);\n"
    "            }\n"
    "            __syncthreads();\n"
    "            kg_frag(an, bn, As[cur ^ 1], Bs[cur ^ 1], 0, ty, tx);\n"
    "          }\n"
    "        } else {\n"
    "          kg_frag(a, b, As[cur], Bs[cur], k, ty, tx);\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++)\n"
    "#pragma unroll\n"
    "          for (int ii = 0; ii < 8; ii++) {\n"
    "            /* ORDER 1: column by column, the rows up and down in turn, so that one operand\n"
    "             * of each FFMA repeats the last one's (the register reuse cache); 0: row by row */\n"
    "            const int i = ORDER ? ((j & 1) ? 7 - ii : ii) : (8 * j + ii) / TN;\n"
    "            const int jx = ORDER ? j : (8 * j + ii) % TN;\n"
    "            acc[i][jx] = fmaf(a[i], b[jx], acc[i][jx]);\n"
    "          }\n"
    "        if constexpr (EARLY) {\n"
    "#pragma unroll\n"
    "          for (int i = 0; i < 8; i++) a[i] = an[i];\n"
    "#pragma unroll\n"
    "          for (int j = 0; j < TN; j++) b[j] = bn[j];\n"
    "        }\n"
    "      }\n"
    "      if constexpr (!EARLY) {\n"
    "        if (more) {\n"
    "          /* the other buffer was last read in slice kt - 1, before the barrier that ended it */\n"
    "          kg_put<A_KMAJ, BM, FPA>(As[cur ^ 1], va, tid);\n"
    "          kg_put<B_KMAJ, BN, FPB>(Bs[cur ^ 1], vb, tid);\n"
    "        }\n"
    "        __syncthreads();\n"
    "      }\n"
    "    }\n"
    "\n"
    "    if constexpr (SPLIT) {\n"
    "      /* publish this split's partial (accumulator (i, j) of thread tid at (TN i + j) NT +\n"
    "       * tid), count the arrival; the block that arrives last adds the partials in split\n"
    "       * order (the same bits whatever the arrival order) and runs the epilogue */\n"
    "      __shared__ int kg_last;\n"
    "      const int splits = (int)gridDim.y, tile = (int)blockIdx.x;\n"
    "      float *ws = (float *)p.w[TW + 1];\n"
    "      int *counters = (int *)p.w[TW + 2];\n"
    "      float *part = ws + ((size_t)tile * splits + blockIdx.y) * (BM * BN) + tid;\n"
    "#pragma unroll\n"
    "      for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++) part[(TN * i + j) * NT] = acc[i][j];\n"
    "      __threadfence();\n"
    "      __syncthreads();\n"
    "      if constexpr (SLICES) {\n"
    "        /* every block of the tile sums a slice of it (a cooperative launch: all resident):\n"
    "         * the counter counts the arrivals (0 .. S), then the blocks done reading (S .. 2 S;\n"
    "         * the last zeroes it for the next launch). Units u = NT (TQ i + g) + t: columns\n"
    "         * 4 g .. 4 g + 3 of accumulator row i of thread t, block y taking [y U / S,\n"
    "         * (y + 1) U / S); the partials added in split order from 0, as the last block does */\n"
    "        const int *cnt = &counters[tile];\n"
    "        if (tid == 0) {\n"
    "          atomicAdd(&counters[tile], 1);\n"
    "          while (__ldcg(cnt) < splits) kg_pause();\n"
    "        }\n"
    "        __syncthreads();\n"
    "        __threadfence();\n"
    "        const float *base = ws + (size_t)tile * splits * (BM * BN);\n"
    "        constexpr int U = 8 * TQ * NT;\n"
    "        const int y = (int)blockIdx.y, u1 = (int)((long long)(y + 1) * U / splits);\n"
    "        for (int u = (int)((long long)y * U / splits) + tid; u < u1; u += NT) {\n"
    "          const int t = u % NT, i = u / NT / TQ, g = u / NT % TQ;\n"
    "          const int uty = WARPS ? ((t >> 6) << 2) | ((t >> 3) & 3) : t >> 4;\n"
    "          const int utx = WARPS ? (((t >> 5) & 1) << 3) | (t & 7) : t & 15;\n"
    "          const float *src = base + (size_t)(TN * i + 4 * g) * NT + t;\n"
    "          float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n"
    "#pragma unroll 4\n"
    "          for (int q = 0; q < splits; q++)\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < 4; e++) v[e] += __ldcg(src + (size_t)q * (BM * BN) + e * NT);\n"
    "          const long long m = m0 + uty * 4 + (i & 3) + 64 * (i >> 2);\n"
    "          if (m < M) kg_out4(m, n0 + utx * 4 + 64 * g, v);\n"
    "        }\n"
    "        __syncthreads();\n"
    "        if (tid == 0 && atomicAdd(&counters[tile], 1) == 2 * splits - 1) counters[tile] = 0;\n"
    "        return;\n"
    "      }\n"
    "      if (tid == 0) {\n"
    "        const int old = atomicAdd(&counters[tile], 1);\n"
    "        kg_last = old == splits - 1;\n"
    "        if (old == splits - 1) counters[tile] = 0; /* zero again for the next launch */\n"
    "      }\n"
    "      __syncthreads();\n"
    "      if (!kg_last) return;\n"
    "      __threadfence();\n"
    "      const float *own = ws + (size_t)tile * splits * (BM * BN) + tid;\n"
    "#pragma unroll\n"
    "      for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;\n"
    "      /* 128 independent loads in flight: two partials at a time on 128 x 128 tiles (the\n"
    "       * sum is latency-bound: 8 TN loads a thread per round trip), one on 128 x 256; the\n"
    "       * adds in split order either way */\n"
    "      int q = 0;\n"
    "      if constexpr (!WIDE) {\n"
    "        for (; q + 1 < splits; q += 2) {\n"
    "          float p0[8][TN], p1[8][TN];\n"
    "#pragma unroll\n"
    "          for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < TN; j++) {\n"
    "              p0[i][j] = __ldcg(own + (size_t)q * (BM * BN) + (TN * i + j) * NT);\n"
    "              p1[i][j] = __ldcg(own + (size_t)(q + 1) * (BM * BN) + (TN * i + j) * NT);\n"
    "            }\n"
    "#pragma unroll\n"
    "          for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "            for (int j = 0; j < TN; j++) acc[i][j] = (acc[i][j] + p0[i][j]) + p1[i][j];\n"
    "        }\n"
    "      }\n"
    "      for (; q < splits; q++)\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < 8; i++)\n"
    "#pragma unroll\n"
    "          for (int j = 0; j < TN; j++) acc[i][j] += __ldcg(own + (size_t)q * (BM * BN) + (TN * i + j) * NT);\n"
    "    }\n"
    "\n"
    "    /* epilogue: acc[i][j] is C[m][n], m = m0 + 4 ty + (i & 3) + 64 (i >> 2), n = n0 + 4 tx +\n"
    "     * (j & 3) + 64 (j >> 2) */\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < 8; i++) {\n"
    "      const long long m = m0 + ty * 4 + (i & 3) + 64 * (i >> 2);\n"
    "      if (m >= M) continue;\n"
    "#pragma unroll\n"
    "      for (int jh = 0; jh < TQ; jh++) kg_out4(m, n0 + tx * 4 + 64 * jh, &acc[i][4 * jh]);\n"
    "    }\n"
    "  }\n"
    "}\n";

/* ---- structure, source, launch ------------------------------------------------------------- */

/* One operand X as R rows (m or n) by K, strides s_r, s_k, batch strides bs[0..nb): K-major
 * in the kernel's sense when its K axis is the contiguous one; vec when that axis has unit
 * stride and every float4 of it starts 16-byte aligned in every batch. */
static void plan_operand(const char *x, int64_t R, int64_t K, int64_t s_r, int64_t s_k, const int64_t *bs, int nb,
                         int *kmajor, int *vec)
{
    int64_t a_r = s_r < 0 ? -s_r : s_r, a_k = s_k < 0 ? -s_k : s_k;
    *kmajor = R == 1 ? 1 : K == 1 ? 0 : s_k == 1 ? 1 : s_r == 1 ? 0 : a_k <= a_r;
    int al = kiln__cuda_aligned(x, 16);
    for (int i = 0; i < nb; i++) al = al && bs[i] % 4 == 0;
    *vec = al && (*kmajor ? s_k == 1 && (R == 1 || s_r % 4 == 0) : s_r == 1 && (K == 1 || s_k % 4 == 0));
}

int kiln__cuda_gemm_ffma_eligible(const kiln_gemm_desc *d)
{
    if (d->dtype != KILN_DTYPE_F32) return 0;
    if (d->M <= 0 || d->N <= 0 || d->K <= 0 || d->K > (int64_t)INT_MAX - 8) return 0;
    int64_t tm = (d->M + TILE - 1) / TILE, tn = (d->N + TILE - 1) / TILE;
    if (tn > INT_MAX / 8 || tm > INT_MAX / tn) return 0; /* tiles along blockIdx.x, in int */
    return 1;
}

/* The split rule's model of a split launch's time, in units of k depth walked by a block of
 * 128 x 128 tiles: whole waves of blocks (slots at once) times each block's depth plus the
 * cost of writing its partial (~3 slices of 8: 64 KiB at a block's share of the bandwidth),
 * plus the last block's sum of s partials (~0.4 slice each); a 128 x 256 tile (wide) walks
 * its k at WIDE_COST times the narrow tile's time and has twice the partial. WIDE_COST sits
 * between the model's break-even ratios of the shapes measured either way on the H100
 * (2026-11-26, KILN_FFMA_BN=128,256): wide won at 1.74 (fc4096 fprop), 1.79 (fc36864 bprop)
 * and above, lost at 1.65 (the 1024 square), 1.24 (fc1000 bprop) and below. */
#define WIDE_COST 1.7
static double split_model(int64_t tiles, int64_t slots, int64_t s, int64_t depth, int wide)
{
    double waves = (double)((tiles * s + slots - 1) / slots), w = wide ? 2.0 : 1.0;
    double t = s == 1 ? waves * (double)depth : waves * ((double)depth + 24.0 * w) + 3.2 * w * (double)s;
    return wide ? WIDE_COST * t : t;
}

/* The split count of the lowest split_model for `tiles` tiles of kt slices of bk on `slots`
 * blocks at once, among those that keep every split >= 128 deep, at most 64 splits and the
 * workspace within 256 MiB (splits = 1 where one GEMM may not split); the whole waves are what
 * it weighs (fc fprop: 32 tiles on 264 slots split 8 ways, one wave, where 9 ways took two).
 * Returns the modelled time. */
static double plan_splits(int64_t tiles, int64_t slots, int64_t kt, int bk, int wide, int may_split, int64_t *splits,
                          int64_t *kper_out)
{
    const int64_t bn = wide ? 256 : TILE;
    int64_t smax = may_split ? kt * bk / 128 : 1;
    if (smax > 64) smax = 64;
    double best = split_model(tiles, slots, 1, kt * bk, wide);
    *splits = 1;
    *kper_out = kt;
    for (int64_t s = 2; s <= smax; s++) {
        int64_t kper = (kt + s - 1) / s;
        if ((kt + kper - 1) / kper != s) continue; /* the same as a smaller count */
        if ((uint64_t)tiles * (uint64_t)s * TILE * (uint64_t)bn * sizeof(float) > ((uint64_t)256 << 20)) break;
        double t = split_model(tiles, slots, s, kper * bk, wide);
        if (t < best) best = t, *splits = s, *kper_out = kper;
    }
    return best;
}

void kiln__cuda_gemm_ffma_prepare(const kiln_gemm_desc *d, const kiln_gemm_batches *bt, int sms,
                                  const kiln_gemm_ffma_opts *o, kiln_gemm_ffma_launch *l)
{
    memset(l, 0, sizeof *l);
    kiln_gemm_ffma_cfg *c = &l->cfg;
    plan_operand(d->a, d->M, d->K, d->a_sm, d->a_sk, bt->sa, bt->n, &c->a_kmajor, &c->a_vec);
    plan_operand(d->b, d->N, d->K, d->b_sn, d->b_sk, bt->sb, bt->n, &c->b_kmajor, &c->b_vec);
    c->bias = d->bias != NULL;
    c->beta = d->beta != 0.0;
    c->c_vec = d->c_sn == 1 && (d->M == 1 || d->c_sm % 4 == 0) && kiln__cuda_aligned(d->c, 16);
    for (int i = 0; i < bt->n; i++) c->c_vec = c->c_vec && bt->sc[i] % 4 == 0;
    c->bk = o && o->bk ? o->bk : DEFAULT_BK;
    c->minb = o && o->minb ? o->minb : DEFAULT_MINB;
    c->warps = o && o->warps ? o->warps - 1 : DEFAULT_WARPS;
    c->order = o && o->order ? o->order - 1 : DEFAULT_ORDER;
    c->early = o && o->early ? o->early - 1 : DEFAULT_EARLY;
    c->walk = o && o->walk ? o->walk - 1 : DEFAULT_WALK;
    int64_t nb = bt->n ? bt->shape[0] : 1, tm = (d->M + TILE - 1) / TILE, kt8 = (d->K + 7) / 8;
    const int may_split = nb == 1 && sms > 0;
    if (o && o->bn) {
        c->wide = o->bn == 256;
    } else if (sms > 0) {
        /* the width by the model: 128 x 256 tiles where their time is lower (the big squares
         * 2 %, fc fprop/bprop 4-11 %, the K = 128 updates 1-7 % faster than 128 x 128 on the
         * H100, 2026-11-26; fc1000 fprop/bprop 24-36 % and the 1024 square 4 % slower, where
         * half the tiles leave SMs idle or split too thin) */
        int64_t s_n, kper_n, s_w, kper_w, kt = (d->K + c->bk - 1) / c->bk;
        int64_t tiles_n = nb * tm * ((d->N + TILE - 1) / TILE), tiles_w = nb * tm * ((d->N + 255) / 256);
        double t_n = plan_splits(tiles_n, (int64_t)c->minb * sms, kt, c->bk, 0,
                                 may_split && tiles_n <= KILN_CUDA_COUNTERS, &s_n, &kper_n);
        double t_w = plan_splits(tiles_w, sms, kt8, 8, 1, may_split && tiles_w <= KILN_CUDA_COUNTERS, &s_w, &kper_w);
        c->wide = t_w < t_n;
    } else {
        c->wide = DEFAULT_WIDE;
    }
    if (c->wide) { /* 128 accumulators a thread: one block per SM, k slices of 8 (the static
                    * shared memory of two 16-deep buffers would pass 48 KiB) */
        c->minb = 1;
        c->bk = 8;
    }
    const int64_t bn = c->wide ? 256 : TILE;
    int64_t tn = (d->N + bn - 1) / bn;
    kiln__cuda_gemm_tile_words(d, bt, 0, tm, tn, l->w, &l->gx, &l->gy);
    l->nw = KILN_GEMM_FFMA_WORDS;
    l->threads = THREADS;
    /* split-K (one GEMM): plan_splits's count */
    int64_t tiles = tm * tn, kt = (d->K + c->bk - 1) / c->bk, best_s = 1, best_kper = kt;
    if (may_split && tiles <= KILN_CUDA_COUNTERS)
        plan_splits(tiles, (int64_t)c->minb * sms, kt, c->bk, c->wide, 1, &best_s, &best_kper);
    if (best_s > 1) {
        c->split = 1;
        l->gy = (unsigned)best_s;
        l->w[KILN_GEMM_FFMA_W_KPER] = (uint64_t)best_kper;
        l->ws_bytes = (size_t)tiles * (size_t)best_s * TILE * (size_t)bn * sizeof(float);
    }
    /* slice sums where every block of the launch fits the SMs at once (a cooperative launch;
     * not where the driver refused one, or KILN_FFMA_SLICES=0): the last block's sum of the
     * partials, ~1 MiB a tile through one SM, becomes every block's sum of a slice */
    c->slices = c->split && (int64_t)l->gx * l->gy <= sms && !(o && (o->no_coop || o->slices == 1));
    /* the walk on edge tiles where the launch has some it applies to (f32 fc1000 update: a
     * 232-wide last tile in one wave, which set the time: 11 % faster with it; fc1000 fprop
     * 3 %), and in every unsplit 128 x 256 kernel, whose register allocation with it ran the
     * squares 1-2 % faster; not in split kernels without such edges, 2.5-3 % slower with it
     * (fc bprop, the 1024 square; H100, 2026-11-26, bench/NOTES.md step 22) */
    const int a_edge = c->a_vec && d->M % TILE != 0 && (c->a_kmajor || d->M % 4 == 0);
    const int b_edge = c->b_vec && d->N % bn != 0 && (c->b_kmajor || d->N % 4 == 0);
    c->edge_walk = c->walk && (a_edge || b_edge || (c->wide && !c->split));
}

void kiln__cuda_gemm_ffma_source(const kiln_gemm_ffma_cfg *c, kiln_sbuf *b)
{
    kiln__cuda_prelude(b);
    kiln__sbuf_puts(b, "\n/* ---- kiln_gemm_ffma (src/cuda/gemm_ffma.c) ---- */\n");
    kiln__sbuf_printf(b, "constexpr int A_KMAJ = %d, A_VEC = %d, B_KMAJ = %d, B_VEC = %d, MAXBAX = %d;\n", c->a_kmajor,
                      c->a_vec, c->b_kmajor, c->b_vec, KILN_MAX_DIMS);
    kiln__sbuf_printf(b, "constexpr int HAS_BIAS = %d, HAS_BETA = %d, C_VEC = %d, SPLIT = %d;\n", c->bias, c->beta,
                      c->c_vec, c->split);
    kiln__sbuf_printf(b, "constexpr int BK = %d, MINB = %d, WARPS = %d, WIDE = %d, ORDER = %d, EARLY = %d, WALK = %d;\n",
                      c->bk, c->minb, c->warps, c->wide, c->order, c->early, c->walk);
    kiln__sbuf_printf(b, "constexpr int SLICES = %d, EDGE_WALK = %d;\n", c->slices, c->edge_walk);
    kiln__sbuf_puts(b, kiln__cuda_gemm_tile_src);
    kiln__sbuf_puts(b, kiln__cuda_gemm_dep_src);
    kiln__sbuf_puts(b, kernel_src);
}

static void gen_source(const void *cfg, kiln_sbuf *b) { kiln__cuda_gemm_ffma_source(cfg, b); }

char *kiln__cuda_gemm_ffma_source_text(const kiln_gemm_ffma_cfg *cfg) { return kiln__cuda_gemm_text(gen_source, cfg); }

