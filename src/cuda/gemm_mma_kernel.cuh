/*
 * src/cuda/gemm_mma_kernel.cuh - the fixed source of kiln's mma.sync GEMM kernel (f16 / bf16, sm_80
 * and up; CUDA C++ for NVRTC). Not a header and not compiled on its own: CMake embeds this text into
 * libkiln as a byte array (kiln_gemm_mma_kernel_src), and kiln__cuda_gemm_mma_source (gemm_mma.c)
 * puts the structure constants and the prelude in front of it.
 */
/* Tiles: a block of 8 warps computes a BM x BN tile of C, walking K in steps of BK through a
 * STAGES-deep ring of shared-memory stages; warp w owns the WM x WN sub-tile at
 * (w / 4, w % 4), i.e. MI x NI mma tiles of 16 x 8. */
constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3, NT = 256;
constexpr int WM = 64, WN = 32, MI = WM / 16, NI = WN / 8;
constexpr int TILE = BM * BK; /* elements of one operand in one stage (BN * BK is the same) */
static_assert(BM == BN && NT == 256 && BK == 32, "the loaders below assume these");
static_assert(WN == 32, "stochastic rounding: one Philox group per row of a warp's 32 columns");
/* argument words (kiln__cuda_gemm_mma_prepare): 0 seed, 1 SR stream, 2-4 M N K, 5-8 A B C
 * bias, 9-15 a_sm a_sk b_sk b_sn c_sm c_sn bias_s (elements), 16-17 alpha beta (f64 bits),
 * 18 batch count, 19-20 tiles along M and N, 21 ReLU (0 or 1), 22 merged batch axes,
 * 23 + 4i: batch axis i (size, then the strides of A, B and C). ReLU and the batch rank
 * are arguments, not structure: they cost no registers, and fewer kernels get compiled.
 * Then (STATS) the address of the output statistics' words (kg_stat_block). */
struct kiln_args { kiln_w64 w[24 + 4 * MAXBAX]; };

/* Shared-memory layouts, offsets in elements, swizzled on 16-byte chunks so that the eight
 * 16-byte rows one ldmatrix reads (and the chunks one cp.async phase writes) fall in
 * distinct bank groups:
 *   K-major tile, 128 rows (m or n) of BK = 32 k (64 bytes): chunk k/8 of row r is stored
 *   at chunk (k/8) ^ ((r/2) % 4);
 *   MN-major tile, BK rows (k) of 128 (m or n) (256 bytes): chunk r/8 of row k is stored at
 *   chunk (r/8) ^ (k % 8). */
__device__ __forceinline__ int kg_off_k(int r, int k) {
  return r * BK + ((((k >> 3) ^ (r >> 1)) & 3) << 3) + (k & 7);
}
__device__ __forceinline__ int kg_off_mn(int k, int r) {
  return k * BM + (((r >> 3) ^ (k & 7)) << 3) + (r & 7);
}

/* kg: PTX wrappers */
__device__ __forceinline__ unsigned kg_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
/* 16 bytes global -> shared, the first `bytes` (0..16) read, the rest zero-filled */
__device__ __forceinline__ void kg_cp16(unsigned dst, const void *src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kg_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void kg_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void kg_ldsm(unsigned *r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void kg_ldsm_t(unsigned *r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
/* d (16 x 8, f32) += a (16 x 16) @ b (16 x 8) */
__device__ __forceinline__ void kg_mma(float *d, const unsigned *a, const unsigned *b) {
  if constexpr (BF16)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32\n"
        "  {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32\n"
        "  {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* a warp's largest magnitude and count, in every lane (redux.sync: the max and the sum over the
 * warp; every lane calls it) */
__device__ __forceinline__ void kg_warp_stat(unsigned &mag, unsigned &bad) {
  asm volatile("redux.sync.max.u32 %0, %0, 0xffffffff;\n" : "+r"(mag));
  asm volatile("redux.sync.add.u32 %0, %0, 0xffffffff;\n" : "+r"(bad));
}
/* kg: end of PTX wrappers */

__device__ __forceinline__ float kg_f32(ST h) {
  if constexpr (BF16) return kiln_bf2f(h); else return kiln_h2f(h);
}
/* stochastic rounding of v with the bits of its place (kiln_gemm_sr_bits) */
__device__ __forceinline__ ST kg_round_sr(float v, unsigned bits) {
  if constexpr (BF16) return (ST)kiln_f32_to_bf16_sr(v, bits); else return (ST)kiln_f16_sr13_fast(v, bits);
}

/* One operand tile: element (r, k) of the tile is X[(r0 + r) * s_r + (k0 + k) * s_k] for
 * r0 + r < R and k0 + k < K, else 0; KMAJ picks the shared layout. */

/* vec: 16-byte cp.async; K-major needs s_k == 1, MN-major s_r == 1. Chunks that run past
 * the contiguous axis read only what is inside; chunks outside read nothing (zero-fill).
 * Chunk i (< CH) of thread tid is number q = tid + NT i of the tile, at row r, k:
 *   K-major: r = q / 4, k = 8 (q % 4): the chunks share k, their rows NT / 4 apart;
 *   MN-major: r = 8 (q % 16), k = q / 16: they share r, their k NT / 16 apart.
 * Stages are loaded in k order, each once, so a walker keeps the chunks' addresses and what
 * is left of K from one stage to the next (a constant step), and the loop does no 64-bit
 * index arithmetic: recomputed at every stage, the indices made the main loop spill. */
constexpr int CH = TILE / 8 / NT;
static_assert(CH == 2 && NT % 16 == 0, "two chunks an operand a stage");
template <int KMAJ> struct kg_vec_walk {
  const ST *src[CH]; /* the chunks' next addresses (rows outside: row 0's, never read) */
  long long left;    /* K less the next stage's k of chunk 0 */
  long long step;    /* elements between stages: BK (K-major), BK s_k (MN-major) */
  int in;            /* K-major: bit i for chunk i's row inside; MN-major: bytes of r inside (0..16) */
  int dst;           /* byte offset of chunk 0 in a stage's tile */
};
template <int KMAJ>
__device__ __forceinline__ kg_vec_walk<KMAJ> kg_walk_init(const ST *X, long long r0, long long R, long long K,
                                                         long long s_r, long long s_k, int tid) {
  kg_vec_walk<KMAJ> w;
  if constexpr (KMAJ) {
    const int k = (tid & 3) << 3;
    w.in = 0;
#pragma unroll
    for (int i = 0; i < CH; i++) {
      const long long gr = r0 + (tid >> 2) + i * (NT / 4);
      w.in |= (gr < R ? 1 : 0) << i;
      w.src[i] = X + (gr < R ? gr : 0) * s_r + k;
    }
    w.left = K - k;
    w.step = BK;
    w.dst = 2 * kg_off_k(tid >> 2, k);
  } else {
    const long long gr = r0 + ((tid & 15) << 3);
    w.in = gr >= R ? 0 : R - gr >= 8 ? 16 : (int)(R - gr) * 2;
#pragma unroll
    for (int i = 0; i < CH; i++) w.src[i] = X + ((tid >> 4) + i * (NT / 16)) * s_k + (gr < R ? gr : 0);
    w.left = K - (tid >> 4);
    w.step = BK * s_k;
    w.dst = 2 * kg_off_mn(tid >> 4, (tid & 15) << 3);
  }
  return w;
}
/* the walker's next stage into the tile at shared address tile, then a step along K */
template <int KMAJ> __device__ __forceinline__ void kg_walk_load(kg_vec_walk<KMAJ> &w, unsigned tile) {
#pragma unroll
  for (int i = 0; i < CH; i++) {
    int bytes;
    if constexpr (KMAJ) {
      bytes = !((w.in >> i) & 1) || w.left <= 0 ? 0 : w.left >= 8 ? 16 : (int)w.left * 2;
      kg_cp16(tile + w.dst + 2 * i * (NT / 4) * BK, w.src[i], bytes);
    } else {
      bytes = w.left > i * (NT / 16) ? w.in : 0;
      kg_cp16(tile + w.dst + 2 * i * (NT / 16) * BM, w.src[i], bytes);
    }
    w.src[i] += w.step;
  }
  w.left -= BK;
}

/* scalar: any strides; SCAL elements per thread, walked along the shared layout's
 * contiguous axis (the one the host chose for the smaller stride), fetched into registers
 * (two per word) before a stage's math and put into shared memory after it. Thread tid
 * takes, for i = 0 .. SCAL-1, K-major: row tid / 32 + 8 i, k tid % 32; MN-major: row
 * tid % 128, k tid / 128 + 2 i. */
constexpr int SCAL = TILE / NT;
template <int KMAJ>
__device__ __forceinline__ void kg_fetch(unsigned (&v)[SCAL / 2], const ST *X, long long r0, long long R,
                                         long long k0, long long K, long long s_r, long long s_k, int tid) {
  const long long gr = r0 + (KMAJ ? tid >> 5 : tid & 127), gk = k0 + (KMAJ ? tid & 31 : tid >> 7);
  /* how far the walked axis (r for K-major, k for MN-major) stays inside from this thread's
   * first element, 0 when its fixed coordinate is outside; element i is at walked offset
   * (K-major) 8 i or (MN-major) 2 i */
  const long long left = !(KMAJ ? gk < K : gr < R) ? 0 : KMAJ ? R - gr : K - gk;
  const int inside = left <= 0 ? 0 : left >= 8 * SCAL ? 8 * SCAL : (int)left;
  const long long step = KMAJ ? 8 * s_r : 2 * s_k;
  const ST *x = X + gr * s_r + gk * s_k; /* only dereferenced inside */
#pragma unroll
  for (int i = 0; i < SCAL; i++, x += step) {
    const unsigned e = (KMAJ ? 8 * i : 2 * i) < inside ? (unsigned)*x : 0u;
    if (i & 1) v[i >> 1] |= e << 16; else v[i >> 1] = e;
  }
}
/* The swizzle of K-major row r depends on (r / 2) % 4, unchanged by r += 8; that of
 * MN-major row k on k % 8, unchanged by k += 8: so the offsets are a few per-thread bases
 * plus constants. */
template <int KMAJ>
__device__ __forceinline__ void kg_put(ST *tile, const unsigned (&v)[SCAL / 2], int tid) {
#pragma unroll
  for (int i = 0; i < SCAL; i++) {
    const ST e = (ST)(v[i >> 1] >> (16 * (i & 1)));
    if constexpr (KMAJ) tile[kg_off_k(tid >> 5, tid & 31) + i * 8 * BK] = e;
    else tile[kg_off_mn((tid >> 7) + 2 * (i & 3), tid & 127) + (i >> 2) * 8 * BM] = e;
  }
}

/* The warp's MI x NI mma tiles over one stage (BK = two k16 steps). Fragments by ldmatrix:
 * A (16 x 16) as 4 8x8 matrices (m 0-7 | 8-15) x (k 0-7 | 8-15), B as 2 n8 tiles of
 * (k 0-7 | 8-15); .trans where the shared tile is MN-major. The swizzles leave a K-major row
 * step of 8 and an MN-major k step of 8 as plain offsets (kg_off_k(r + 8 a, k) = kg_off_k(r, k)
 * + 8 a BK, kg_off_mn(k + 8 a, r) = kg_off_mn(k, r) + 8 a BM), written so that the
 * addresses are a few per-thread bases and constants, not one register each. */
__device__ __forceinline__ void kg_stage(float (&acc)[MI][NI][4], unsigned sa, unsigned sb, int wm, int wn,
                                         int lane) {
  const int j = lane >> 3, l7 = lane & 7;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    unsigned af[MI][4], bf[NI][2];
#pragma unroll
    for (int i = 0; i < MI; i++) {
      const int m = wm * WM + i * 16;
      if constexpr (A_KMAJ)
        kg_ldsm(af[i], sa + 2 * (m * BK + kg_off_k(lane & 15, kk + ((lane >> 4) << 3))));
      else
        kg_ldsm_t(af[i], sa + 2 * (kk * BM + kg_off_mn(l7 + ((j >> 1) << 3), m + ((j & 1) << 3))));
    }
#pragma unroll
    for (int p = 0; p < NI / 2; p++) {
      const int n = wn * WN + p * 16;
      unsigned t[4];
      if constexpr (B_KMAJ)
        kg_ldsm(t, sb + 2 * (n * BK + kg_off_k(l7 + ((j >> 1) << 3), kk + ((j & 1) << 3))));
      else
        kg_ldsm_t(t, sb + 2 * (kk * BM + kg_off_mn(l7 + ((j & 1) << 3), n + ((j >> 1) << 3))));
      bf[2 * p][0] = t[0];
      bf[2 * p][1] = t[1];
      bf[2 * p + 1][0] = t[2];
      bf[2 * p + 1][1] = t[3];
    }
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
      for (int q = 0; q < NI; q++) kg_mma(acc[i][q], af[i], bf[q]);
  }
}

/* The epilogue of batch bi's tile from the accumulators: acc[i][q][2h + e] is C[m][n], m =
 * mw + 16 i + 8 h, n = nw + 8 q + e (mw, nw: the thread's first element, row g = lane / 4 and
 * column 2 (lane % 4) of the warp's WM x WN sub-tile). The arguments come from the words w
 * again and the elements are addressed by small offsets from the thread's first, so that
 * little lives through the main loop. CHECK: test rows and columns against C's edge; a warp
 * whose sub-tile lies inside C goes without (with the tests in every tile, and 64-bit
 * indices, the plain kernel spilled 76-100 bytes at its 128 registers). */
template <bool CHECK>
__device__ __forceinline__ void kg_epilogue(const float (&acc)[MI][NI][4], const kiln_w64 *w, long long bi,
                                            long long mw, long long nw, unsigned &smag, unsigned &sbad) {
  const long long M = (long long)w[2], N = (long long)w[3];
  long long oa, ob, oc;
  kg_batch(w, bi, &oa, &ob, &oc);
  const long long c_sm = (long long)w[13], c_sn = (long long)w[14];
  ST *const Cw = (ST *)w[7] + oc + mw * c_sm + nw * c_sn;
  const long long bias_s = (long long)w[15];
  const ST *const bias_w = HAS_BIAS ? (const ST *)w[8] + nw * bias_s : nullptr;
  const float alpha = (float)__longlong_as_double((long long)w[16]);
  const float beta = (float)__longlong_as_double((long long)w[17]);
  const bool relu = w[21] != 0;
  (void)beta; (void)bias_s;
  /* how many of the thread's rows and columns lie inside C, clamped to the sub-tile */
  const int rows = !CHECK ? WM : M - mw <= 0 ? 0 : M - mw >= WM ? WM : (int)(M - mw);
  const int cols = !CHECK ? WN : N - nw <= 0 ? 0 : N - nw >= WN ? WN : (int)(N - nw);
#pragma unroll
  for (int i = 0; i < MI; i++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const int r = i * 16 + h * 8;
      const bool rin = !CHECK || r < rows;
      ST *const crow = Cw + r * c_sm;
      /* SR: this row's group of the warp's 32 columns (nw - 2 (lane % 4) is a multiple of
       * 32): column 2 (lane % 4) + e of n8 tile q takes half e of word q */
      kiln_philox4 sr = {};
      if constexpr (SR)
        sr = kiln_philox4x32_r(w[0], w[1], kiln_gemm_sr_counter((kiln_w64)(bi * M + mw + r), (kiln_w64)nw, (kiln_w64)N),
                               KILN_GEMM_SR_ROUNDS);
#pragma unroll
      for (int q = 0; q < NI; q++) {
        const int c = q * 8;
        /* the tests guard the loads and stores, not the arithmetic (branches around each
         * row's and column's work made the checked form spill) */
        const bool one = !CHECK || (rin && c < cols), two = !CHECK || (rin && c + 1 < cols);
        ST o[2];
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const bool in = e ? two : one;
          float v = alpha * acc[i][q][2 * h + e];
          if constexpr (HAS_BIAS) v = v + (in ? kg_f32(bias_w[(c + e) * bias_s]) : 0.0f);
          if (relu) v = v <= 0.0f ? 0.0f : v; /* maximum(v, +0): -0 becomes +0, NaN stays */
          if constexpr (HAS_BETA) v = v + (in ? beta * kg_f32(crow[(c + e) * c_sn]) : 0.0f);
          if constexpr (SR) {
            o[e] = kg_round_sr(v, e ? (sr.v[q] & 0xFFFF0000u) : (sr.v[q] << 16));
          } else {
            o[e] = BF16 ? (ST)kiln_f32_to_bf16_rn(v) : kiln_f2h(v);
          }
        }
        if constexpr (STATS) {
          if (one) kg_stat_add(smag, sbad, o[0] & 0x7FFFu, BF16 ? 0x7F80u : 0x7C00u);
          if (two) kg_stat_add(smag, sbad, o[1] & 0x7FFFu, BF16 ? 0x7F80u : 0x7C00u);
        }
        ST *dst = crow + c * c_sn;
        if (C_PAIR && two) {
          *(unsigned *)dst = (unsigned)o[0] | ((unsigned)o[1] << 16);
        } else {
          if (one) dst[0] = o[0];
          if (two) dst[c_sn] = o[1];
        }
      }
    }
}

/* The edge tiles' epilogue out of line where stochastic rounding meets a bias or beta: inline,
 * its Philox and tests made ptxas keep main-loop values in local memory (9 reloads a k step,
 * sm_80 and sm_90a); called, the accumulators go through the stack on edge tiles only. */
constexpr bool EDGE_CALL = SR && (HAS_BIAS || HAS_BETA);
__device__ __noinline__ void kg_epilogue_edge(const float (&acc)[MI][NI][4], const kiln_w64 *w, long long bi,
                                              long long mw, long long nw, unsigned &smag, unsigned &sbad) {
  kg_epilogue<true>(acc, w, bi, mw, nw, smag, sbad);
}

extern "C" __global__ void __launch_bounds__(NT, 2) kiln_gemm_mma(const __grid_constant__ kiln_args p) {
  /* stage s: A at s * 2 * TILE, B at s * 2 * TILE + TILE */
  __shared__ __align__(128) ST smem[STAGES * 2 * TILE];
  kg_grid_dep();
  KG_TILE_ARGS(p);
  const int tiles_m = (int)p.w[19], tiles_n = (int)p.w[20];
  /* C, the bias, alpha, beta and ReLU: kg_epilogue reads them from the words again */
  (void)C0; (void)bias; (void)bias_s; (void)alpha; (void)beta; (void)c_sm; (void)c_sn;

  int tm, tn;
  kg_tile((int)blockIdx.x, tiles_m, tiles_n, &tm, &tn);
  const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;

  const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5, wm = warp >> 2, wn = warp & 3;
  const int KT = (int)((K + BK - 1) / BK);
  const unsigned s0 = kg_smem(smem);
  /* STATS: this thread's largest finite magnitude (f16 / bf16 bits) and non-finite count over
   * the elements it stores, every batch's (the stage buffers fill the 48 KiB of static shared
   * memory: a warp's go to the launch's words, kg_warp_stat) */
  unsigned smag = 0u, sbad = 0u;

  for (long long bi = blockIdx.y; bi < NB; bi += gridDim.y) {
    long long oa, ob, oc;
    kg_batch(p.w, bi, &oa, &ob, &oc);
    const ST *A = A0 + oa;
    const ST *B = B0 + ob;
    (void)oc;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
      for (int q = 0; q < NI; q++)
#pragma unroll
        for (int r = 0; r < 4; r++) acc[i][q][r] = 0.0f;
    unsigned ra[SCAL / 2], rb[SCAL / 2]; /* the scalar loads in flight (unused, and dropped, for vec) */
    (void)ra; (void)rb;
    kg_vec_walk<A_KMAJ> wa = {};
    kg_vec_walk<B_KMAJ> wb = {};
    if constexpr (A_VEC) wa = kg_walk_init<A_KMAJ>(A, m0, M, K, a_sm, a_sk, tid);
    if constexpr (B_VEC) wb = kg_walk_init<B_KMAJ>(B, n0, N, K, b_sn, b_sk, tid);
    (void)wa; (void)wb;

    /* prologue: stages 0 .. STAGES-2 in flight (one commit group each, maybe empty) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
      if (s < KT) {
        const long long k0 = (long long)s * BK;
        const int sa = s * 2 * TILE, sb = sa + TILE; /* element offsets of the stage's A and B */
        if constexpr (A_VEC) {
          kg_walk_load<A_KMAJ>(wa, s0 + 2 * sa);
        } else {
          kg_fetch<A_KMAJ>(ra, A, m0, M, k0, K, a_sm, a_sk, tid);
          kg_put<A_KMAJ>(smem + sa, ra, tid);
        }
        if constexpr (B_VEC) {
          kg_walk_load<B_KMAJ>(wb, s0 + 2 * sb);
        } else {
          kg_fetch<B_KMAJ>(rb, B, n0, N, k0, K, b_sn, b_sk, tid);
          kg_put<B_KMAJ>(smem + sb, rb, tid);
        }
      }
      kg_commit();
    }

    /* main loop: wait for stage kt, start stage kt + STAGES-1 into the slot that stage
     * kt-1 used (everyone is past it: the barrier), compute stage kt */
    for (int kt = 0; kt < KT; kt++) {
      kg_wait<STAGES - 2>();
      __syncthreads();
      const int nk = kt + STAGES - 1, na = (nk % STAGES) * 2 * TILE, nb = na + TILE;
      const bool more = nk < KT;
      if (more) {
        const long long k0 = (long long)nk * BK;
        if constexpr (A_VEC) kg_walk_load<A_KMAJ>(wa, s0 + 2 * na);
        else kg_fetch<A_KMAJ>(ra, A, m0, M, k0, K, a_sm, a_sk, tid);
        if constexpr (B_VEC) kg_walk_load<B_KMAJ>(wb, s0 + 2 * nb);
        else kg_fetch<B_KMAJ>(rb, B, n0, N, k0, K, b_sn, b_sk, tid);
      }
      kg_commit();
      const int ca = (kt % STAGES) * 2 * TILE;
      kg_stage(acc, s0 + 2 * ca, s0 + 2 * (ca + TILE), wm, wn, lane);
      if (more) {
        if constexpr (!A_VEC) kg_put<A_KMAJ>(smem + na, ra, tid);
        if constexpr (!B_VEC) kg_put<B_KMAJ>(smem + nb, rb, tid);
      }
    }
    kg_wait<0>();
    __syncthreads(); /* the next batch's prologue refills the stages */

    /* the epilogue; the tests against C's edge only where the warp's sub-tile crosses it */
    const long long mw = m0 + wm * WM, nw = n0 + wn * WN;
    const kiln_w64 *w = kg_words_again(p.w);
    const long long me = mw + (lane >> 2), ne = nw + (lane & 3) * 2;
    if (mw + WM <= M && nw + WN <= N) kg_epilogue<false>(acc, w, bi, me, ne, smag, sbad);
    else if constexpr (EDGE_CALL) kg_epilogue_edge(acc, w, bi, me, ne, smag, sbad);
    else kg_epilogue<true>(acc, w, bi, me, ne, smag, sbad);
  }
  if constexpr (STATS) {
    kg_warp_stat(smag, sbad);
    if (lane == 0)
      kg_stat_out((unsigned long long *)p.w[23 + 4 * MAXBAX],
                  BF16 ? smag << 16 : kiln_f32_bits(kiln_h2f((unsigned short)smag)), sbad);
  }
}
