/*
 * src/cuda/gemm_ffma_kernel.cuh - the fixed source of kiln's FFMA f32 GEMM kernel (CUDA C++ for
 * NVRTC). Not a header and not compiled on its own: CMake embeds this text into libkiln as a byte
 * array (kiln_gemm_ffma_kernel_src), and kiln__cuda_gemm_ffma_source (gemm_ffma.c) puts the
 * structure constants and the prelude in front of it.
 */
/* Tiles: a block of 256 threads computes a 128 x BN tile of C (BN 128, or 256 with WIDE),
 * walking K in slices of BK (8 or 16) through two shared-memory buffers (the next slice is
 * fetched into registers while this one is used, then stored into the other buffer). Both
 * operands sit MN-major in shared memory (As[k][m], Bs[k][n]), so a thread reads its 8 rows
 * of A and TN columns of B for one k as float4 loads. Thread (ty, tx) of the 16 x 16 grid
 * owns rows 4 ty + i and 64 + 4 ty + i, columns 64 q + 4 tx + j (i, j < 4, q < BN / 64):
 * 8 x TN f32 accumulators, 8 TN FFMA per k per thread (WIDE: 128 of them per six float4
 * loads, cuBLAS's SGEMM shape on sm_90: 256 x 128 tiles of 128 accumulators a thread).
 * WARPS 0: a warp is 2 x 16 threads of the grid (its B reads 16 float4s, two shared-memory
 * wavefronts); WARPS 1: 4 x 8 (one each). */
typedef float ST;
constexpr int BM = 128, BN = WIDE ? 256 : 128, NT = 256, TQ = BN / 64, TN = 4 * TQ;
/* float4 fetches per thread and slice: of A, of B */
constexpr int FPA = BK * BM / (4 * NT), FPB = BK * BN / (4 * NT);
/* argument words: those of the mma.sync kernel (kiln__cuda_gemm_tile_words), then for
 * SPLIT the k slices per split, the f32 workspace and the arrival counters, then (STATS) the
 * address of the output statistics' words (kg_stat_block) */
constexpr int TW = 23 + 4 * MAXBAX;
struct kiln_args { kiln_w64 w[TW + 4]; };

/* One operand's slice: RT (the tile's rows) of R rows (m or n) by BK k of X, element (r, k)
 * at X[r * s_r + k * s_k], zero outside r < R, k < K. Fetch f of thread tid is float4 number
 * t = tid + NT f of the slice, four elements along the operand's contiguous axis: K-major
 * (KMAJ: k contiguous) row t / (BK / 4), k 4 (t % (BK / 4)) + q; MN-major rows
 * 4 (t % (RT / 4)) + q, k t / (RT / 4). VEC: one
 * float4 when all four are inside and 16-byte aligned (the host checked the strides and
 * the base); inside: the block's R rows and the slice's BK k are all inside (no tests). */
template <int KMAJ, int VEC, int RT, int FPT>
__device__ __forceinline__ void kg_fetch(float (&v)[FPT][4], const float *X, long long r0, long long R, long long k0,
                                         long long K, long long s_r, long long s_k, int tid, bool inside) {
#pragma unroll
  for (int f = 0; f < FPT; f++) {
    const int t = tid + NT * f;
    const long long r = r0 + (KMAJ ? t / (BK / 4) : (t % (RT / 4)) * 4), k = k0 + (KMAJ ? (t % (BK / 4)) * 4 : t / (RT / 4));
    const long long lim_r = KMAJ ? 1 : 4, lim_k = KMAJ ? 4 : 1; /* the walked axis gets 4 */
    if (VEC && (inside || (r + lim_r <= R && k + lim_k <= K))) {
      const float4 q = *(const float4 *)(X + r * s_r + k * s_k);
      v[f][0] = q.x; v[f][1] = q.y; v[f][2] = q.z; v[f][3] = q.w;
      continue;
    }
#pragma unroll
    for (int q = 0; q < 4; q++) {
      const long long rr = r + (KMAJ ? 0 : q), kk = k + (KMAJ ? q : 0);
      v[f][q] = rr < R && kk < K ? X[rr * s_r + kk * s_k] : 0.0f;
    }
  }
}
/* WALK: fetch f's float4 of the slice at k0 (kg_fetch's element (r, k) of thread tid),
 * as a pointer that each slice steps by BK k: interior slices load through it, without
 * kg_fetch's 64-bit index arithmetic. A fetch past the R rows walks row 0 instead (in
 * bounds, aligned like r): its values reach only accumulators past M or N, which nothing
 * stores; the caller walks only where no fetch straddles R (K-major, or R % 4 == 0) */
template <int KMAJ, int RT, int FPT>
__device__ __forceinline__ void kg_walk_init(const float *(&q)[FPT], const float *X, long long r0, long long R,
                                             long long k0, long long s_r, long long s_k, int tid) {
#pragma unroll
  for (int f = 0; f < FPT; f++) {
    const int t = tid + NT * f;
    const long long r = r0 + (KMAJ ? t / (BK / 4) : (t % (RT / 4)) * 4), k = k0 + (KMAJ ? (t % (BK / 4)) * 4 : t / (RT / 4));
    q[f] = X + (!EDGE_WALK || r + (KMAJ ? 1 : 4) <= R ? r : 0) * s_r + k * s_k;
  }
}
template <int FPT>
__device__ __forceinline__ void kg_walk(float (&v)[FPT][4], const float *const (&q)[FPT]) {
#pragma unroll
  for (int f = 0; f < FPT; f++) {
    const float4 x = *(const float4 *)q[f];
    v[f][0] = x.x; v[f][1] = x.y; v[f][2] = x.z; v[f][3] = x.w;
  }
}
/* ... into the MN-major buffer S[k][r] */
template <int KMAJ, int RT, int FPT>
__device__ __forceinline__ void kg_put(float (*S)[RT], const float (&v)[FPT][4], int tid) {
#pragma unroll
  for (int f = 0; f < FPT; f++) {
    const int t = tid + NT * f;
    if constexpr (KMAJ) {
#pragma unroll
      for (int q = 0; q < 4; q++) S[(t % (BK / 4)) * 4 + q][t / (BK / 4)] = v[f][q];
    } else {
      *(float4 *)&S[t / (RT / 4)][(t % (RT / 4)) * 4] = make_float4(v[f][0], v[f][1], v[f][2], v[f][3]);
    }
  }
}

/* a spinning thread's pause (nanosleep from sm_70; the host emulator yields there) */
__device__ __forceinline__ void kg_pause() {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
  __nanosleep(64);
#endif
}
/* A thread's fragments of k step k of a slice: its 8 rows of A and TN columns of B */
__device__ __forceinline__ void kg_frag(float (&a)[8], float (&b)[TN], const float (*As)[BM], const float (*Bs)[BN],
                                        int k, int ty, int tx) {
  const float4 a0 = *(const float4 *)&As[k][ty * 4], a1 = *(const float4 *)&As[k][64 + ty * 4];
  a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w; a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
#pragma unroll
  for (int q = 0; q < TQ; q++) {
    const float4 bq = *(const float4 *)&Bs[k][64 * q + tx * 4];
    b[4 * q] = bq.x; b[4 * q + 1] = bq.y; b[4 * q + 2] = bq.z; b[4 * q + 3] = bq.w;
  }
}

/* STATS: a thread's statistics of one tile's epilogue (f: its magnitude as f32 bits) into the
 * block's two shared words sw (zeroed at the block's start, a barrier since), at the epilogue's
 * end, so that nothing of them lives through the next mainloop; kg_stat_block, by every thread
 * of the block at its end: the block's into the launch's (kg_stat_out) by one thread */
__device__ __forceinline__ void kg_stat_put(unsigned *sw, unsigned f, unsigned bad) {
  if (f) atomicMax(&sw[0], f);
  if (bad) atomicAdd(&sw[1], bad);
}
__device__ __forceinline__ void kg_stat_block(unsigned long long *out, unsigned *sw, int tid) {
  __syncthreads();
  if (tid == 0) kg_stat_out(out, sw[0], sw[1]);
}

/* What the epilogue reads: batch bi's C and the epilogue's arguments, taken from the words
 * again where the epilogue starts (kg_words_again): held in registers from the kernel's start,
 * they made the 128 x 256 kernel with a bias spill 136-152 bytes */
struct kg_epi {
  float *C;
  const float *bias;
  long long N, c_sm, c_sn, bias_s;
  float alpha, beta;
  bool relu;
};
__device__ __forceinline__ kg_epi kg_epi_args(const kiln_w64 *w, long long bi) {
  long long oa, ob, oc;
  kg_batch(w, bi, &oa, &ob, &oc);
  kg_epi e;
  e.C = (float *)w[7] + oc;
  e.bias = (const float *)w[8];
  e.N = (long long)w[3];
  e.c_sm = (long long)w[13], e.c_sn = (long long)w[14], e.bias_s = (long long)w[15];
  e.alpha = (float)__longlong_as_double((long long)w[16]);
  e.beta = (float)__longlong_as_double((long long)w[17]);
  e.relu = w[21] != 0;
  return e;
}
/* the epilogue of C[m][nb .. nb + 3] (m < M) from its f32 sums s: alpha, bias, ReLU, beta * C,
 * one float4 store where C allows. The tests against N guard the loads and stores, not the
 * arithmetic (branches around it spilled too). STATS: the stored elements into smag, sbad. */
__device__ __forceinline__ void kg_out4(const kg_epi &e, long long m, long long nb, const float *s, unsigned &smag,
                                        unsigned &sbad) {
  float o[4];
#pragma unroll
  for (int q = 0; q < 4; q++) {
    const long long n = nb + q;
    const bool in = n < e.N;
    float v = e.alpha * s[q];
    if constexpr (HAS_BIAS) v = v + (in ? e.bias[n * e.bias_s] : 0.0f);
    if (e.relu) v = v <= 0.0f ? 0.0f : v; /* maximum(v, +0): -0 becomes +0, NaN stays */
    if constexpr (HAS_BETA) v = v + (in ? e.beta * e.C[m * e.c_sm + n * e.c_sn] : 0.0f);
    o[q] = v;
    if (STATS && in) kg_stat_add(smag, sbad, kiln_f32_bits(v) & 0x7FFFFFFFu, 0x7F800000u);
  }
  float *dst = e.C + m * e.c_sm + nb * e.c_sn;
  if (C_VEC && nb + 4 <= e.N) {
    *(float4 *)dst = make_float4(o[0], o[1], o[2], o[3]);
  } else {
#pragma unroll
    for (int q = 0; q < 4; q++)
      if (nb + q < e.N) dst[q * e.c_sn] = o[q];
  }
}

extern "C" __global__ void __launch_bounds__(NT, MINB) kiln_gemm_ffma(const __grid_constant__ kiln_args p) {
  __shared__ __align__(16) float As[2][BK][BM];
  __shared__ __align__(16) float Bs[2][BK][BN];
  kg_grid_dep();
  KG_TILE_ARGS(p);
  /* C, the bias, alpha, beta and ReLU: the epilogue reads them from the words again (kg_epi) */
  (void)C0; (void)bias; (void)bias_s; (void)alpha; (void)beta; (void)c_sm; (void)c_sn;
  int tm, tn;
  kg_tile((int)blockIdx.x, (int)p.w[19], (int)p.w[20], &tm, &tn);
  const long long m0 = (long long)tm * BM, n0 = (long long)tn * BN;
  const int tid = (int)threadIdx.x;
  const int ty = WARPS ? ((tid >> 6) << 2) | ((tid >> 3) & 3) : tid >> 4;
  const int tx = WARPS ? (((tid >> 5) & 1) << 3) | (tid & 7) : tid & 15;
  const int KT = (int)((K + BK - 1) / BK);
  const bool m_in = m0 + BM <= M, n_in = n0 + BN <= N; /* the tile's rows (columns) all inside */
  /* STATS: this thread's largest finite magnitude (f32 bits) and non-finite count over one
   * tile's epilogue (kg_out4; zeroed before it, put into the block's kg_sw after it) */
  __shared__ unsigned kg_sw[2];
  unsigned smag = 0u, sbad = 0u;
  if constexpr (STATS) {
    if (tid == 0) kg_sw[0] = kg_sw[1] = 0u;
    __syncthreads();
  }
  /* SPLIT (one batch): block (x, y) sums k slices [y kper, (y + 1) kper) of tile x */
  int kb = 0, ke = KT;
  if constexpr (SPLIT) {
    const int kper = (int)p.w[TW];
    kb = (int)blockIdx.y * kper;
    ke = kb + kper < KT ? kb + kper : KT;
  }

  for (long long bi = SPLIT ? 0 : blockIdx.y; bi < NB; bi += SPLIT ? NB : gridDim.y) {
    long long oa, ob, oc;
    kg_batch(p.w, bi, &oa, &ob, &oc);
    const float *A = A0 + oa, *B = B0 + ob;
    (void)oc;
    float acc[8][TN];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    float va[FPA][4], vb[FPB][4];
    bool k_in = (long long)(kb + 1) * BK <= K;
    /* WALK: float4 operands walk pointers on interior tiles; EDGE_WALK: on edge tiles too
     * where every fetch lies wholly inside the rows or wholly past them (K-major: one row
     * a fetch; MN-major with M or N a multiple of 4) */
    const bool a_walk = WALK && A_VEC && (m_in || (EDGE_WALK && (A_KMAJ || (M & 3) == 0)));
    const bool b_walk = WALK && B_VEC && (n_in || (EDGE_WALK && (B_KMAJ || (N & 3) == 0)));
    const float *qa[FPA], *qb[FPB];
    kg_walk_init<A_KMAJ, BM, FPA>(qa, A, m0, M, (long long)kb * BK, a_sm, a_sk, tid);
    kg_walk_init<B_KMAJ, BN, FPB>(qb, B, n0, N, (long long)kb * BK, b_sn, b_sk, tid);
    const long long a_step = BK * a_sk, b_step = BK * b_sk;
    if (a_walk && k_in) kg_walk<FPA>(va, qa);
    else kg_fetch<A_KMAJ, A_VEC, BM, FPA>(va, A, m0, M, (long long)kb * BK, K, a_sm, a_sk, tid, m_in && k_in);
    if (b_walk && k_in) kg_walk<FPB>(vb, qb);
    else kg_fetch<B_KMAJ, B_VEC, BN, FPB>(vb, B, n0, N, (long long)kb * BK, K, b_sn, b_sk, tid, n_in && k_in);
    kg_put<A_KMAJ, BM, FPA>(As[0], va, tid);
    kg_put<B_KMAJ, BN, FPB>(Bs[0], vb, tid);
    __syncthreads();
    /* the fragments of k step 0 (EARLY: the loop reads each step's successor ahead) */
    float a[8], b[TN];
    if constexpr (EARLY) kg_frag(a, b, As[0], Bs[0], 0, ty, tx);
    for (int kt = kb; kt < ke; kt++) {
      const int cur = (kt - kb) & 1;
      const bool more = kt + 1 < ke;
      if (more) { /* the next slice into registers while this one is used */
        k_in = (long long)(kt + 2) * BK <= K;
#pragma unroll
        for (int f = 0; f < FPA; f++) qa[f] += a_step;
#pragma unroll
        for (int f = 0; f < FPB; f++) qb[f] += b_step;
        if (a_walk && k_in) kg_walk<FPA>(va, qa);
        else kg_fetch<A_KMAJ, A_VEC, BM, FPA>(va, A, m0, M, (long long)(kt + 1) * BK, K, a_sm, a_sk, tid, m_in && k_in);
        if (b_walk && k_in) kg_walk<FPB>(vb, qb);
        else kg_fetch<B_KMAJ, B_VEC, BN, FPB>(vb, B, n0, N, (long long)(kt + 1) * BK, K, b_sn, b_sk, tid, n_in && k_in);
      }
#pragma unroll
      for (int k = 0; k < BK; k++) {
        float an[8], bn[TN];
        if constexpr (EARLY) {
          /* EARLY: step k + 1's fragments now; before the last step, the next slice goes
           * into the other buffer (last read in slice kt - 1, before the barrier of its
           * last step) and, past the barrier, its first fragments are read, their latency
           * under the last step's FFMAs instead of exposed at the slice's start */
          if (k + 1 < BK) {
            kg_frag(an, bn, As[cur], Bs[cur], k + 1, ty, tx);
          } else {
            if (more) {
              kg_put<A_KMAJ, BM, FPA>(As[cur ^ 1], va, tid);
              kg_put<B_KMAJ, BN, FPB>(Bs[cur ^ 1], vb, tid);
            }
            __syncthreads();
            kg_frag(an, bn, As[cur ^ 1], Bs[cur ^ 1], 0, ty, tx);
          }
        } else {
          kg_frag(a, b, As[cur], Bs[cur], k, ty, tx);
        }
#pragma unroll
        for (int j = 0; j < TN; j++)
#pragma unroll
          for (int ii = 0; ii < 8; ii++) {
            /* ORDER 1: column by column, the rows up and down in turn, so that one operand
             * of each FFMA repeats the last one's (the register reuse cache); 0: row by row */
            const int i = ORDER ? ((j & 1) ? 7 - ii : ii) : (8 * j + ii) / TN;
            const int jx = ORDER ? j : (8 * j + ii) % TN;
            acc[i][jx] = fmaf(a[i], b[jx], acc[i][jx]);
          }
        if constexpr (EARLY) {
#pragma unroll
          for (int i = 0; i < 8; i++) a[i] = an[i];
#pragma unroll
          for (int j = 0; j < TN; j++) b[j] = bn[j];
        }
      }
      if constexpr (!EARLY) {
        if (more) {
          /* the other buffer was last read in slice kt - 1, before the barrier that ended it */
          kg_put<A_KMAJ, BM, FPA>(As[cur ^ 1], va, tid);
          kg_put<B_KMAJ, BN, FPB>(Bs[cur ^ 1], vb, tid);
        }
        __syncthreads();
      }
    }

    if constexpr (SPLIT) {
      /* publish this split's partial (accumulator (i, j) of thread tid at (TN i + j) NT +
       * tid), count the arrival; the block that arrives last adds the partials in split
       * order (the same bits whatever the arrival order) and runs the epilogue */
      __shared__ int kg_last;
      const int splits = (int)gridDim.y, tile = (int)blockIdx.x;
      float *ws = (float *)p.w[TW + 1];
      int *counters = (int *)p.w[TW + 2];
      float *part = ws + ((size_t)tile * splits + blockIdx.y) * (BM * BN) + tid;
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) part[(TN * i + j) * NT] = acc[i][j];
      __threadfence();
      __syncthreads();
      if constexpr (SLICES) {
        /* every block of the tile sums a slice of it (a cooperative launch: all resident):
         * the counter counts the arrivals (0 .. S), then the blocks done reading (S .. 2 S;
         * the last zeroes it for the next launch). Units u = NT (TQ i + g) + t: columns
         * 4 g .. 4 g + 3 of accumulator row i of thread t, block y taking [y U / S,
         * (y + 1) U / S); the partials added in split order from 0, as the last block does */
        const int *cnt = &counters[tile];
        if (tid == 0) {
          atomicAdd(&counters[tile], 1);
          while (__ldcg(cnt) < splits) kg_pause();
        }
        __syncthreads();
        __threadfence();
        const float *base = ws + (size_t)tile * splits * (BM * BN);
        constexpr int U = 8 * TQ * NT;
        smag = sbad = 0u;
        const kg_epi e = kg_epi_args(kg_words_again(p.w), bi);
        const int y = (int)blockIdx.y, u1 = (int)((long long)(y + 1) * U / splits);
        for (int u = (int)((long long)y * U / splits) + tid; u < u1; u += NT) {
          const int t = u % NT, i = u / NT / TQ, g = u / NT % TQ;
          const int uty = WARPS ? ((t >> 6) << 2) | ((t >> 3) & 3) : t >> 4;
          const int utx = WARPS ? (((t >> 5) & 1) << 3) | (t & 7) : t & 15;
          const float *src = base + (size_t)(TN * i + 4 * g) * NT + t;
          float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 4
          for (int q = 0; q < splits; q++)
#pragma unroll
            for (int e = 0; e < 4; e++) v[e] += __ldcg(src + (size_t)q * (BM * BN) + e * NT);
          const long long m = m0 + uty * 4 + (i & 3) + 64 * (i >> 2);
          if (m < M) kg_out4(e, m, n0 + utx * 4 + 64 * g, v, smag, sbad);
        }
        __syncthreads();
        if (tid == 0 && atomicAdd(&counters[tile], 1) == 2 * splits - 1) counters[tile] = 0;
        if constexpr (STATS) {
          kg_stat_put(kg_sw, smag, sbad);
          kg_stat_block((unsigned long long *)p.w[TW + 3], kg_sw, tid);
        }
        return;
      }
      if (tid == 0) {
        const int old = atomicAdd(&counters[tile], 1);
        kg_last = old == splits - 1;
        if (old == splits - 1) counters[tile] = 0; /* zero again for the next launch */
      }
      __syncthreads();
      if (!kg_last) return;
      __threadfence();
      const float *own = ws + (size_t)tile * splits * (BM * BN) + tid;
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
      /* 128 independent loads in flight: two partials at a time on 128 x 128 tiles (the
       * sum is latency-bound: 8 TN loads a thread per round trip), one on 128 x 256; the
       * adds in split order either way */
      int q = 0;
      if constexpr (!WIDE) {
        for (; q + 1 < splits; q += 2) {
          float p0[8][TN], p1[8][TN];
#pragma unroll
          for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) {
              p0[i][j] = __ldcg(own + (size_t)q * (BM * BN) + (TN * i + j) * NT);
              p1[i][j] = __ldcg(own + (size_t)(q + 1) * (BM * BN) + (TN * i + j) * NT);
            }
#pragma unroll
          for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < TN; j++) acc[i][j] = (acc[i][j] + p0[i][j]) + p1[i][j];
        }
      }
      for (; q < splits; q++)
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
          for (int j = 0; j < TN; j++) acc[i][j] += __ldcg(own + (size_t)q * (BM * BN) + (TN * i + j) * NT);
    }

    /* epilogue: acc[i][j] is C[m][n], m = m0 + 4 ty + (i & 3) + 64 (i >> 2), n = n0 + 4 tx +
     * (j & 3) + 64 (j >> 2) */
    smag = sbad = 0u;
    const kg_epi e = kg_epi_args(kg_words_again(p.w), bi);
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const long long m = m0 + ty * 4 + (i & 3) + 64 * (i >> 2);
      if (m >= M) continue;
#pragma unroll
      for (int jh = 0; jh < TQ; jh++) kg_out4(e, m, n0 + tx * 4 + 64 * jh, &acc[i][4 * jh], smag, sbad);
    }
    if constexpr (STATS) kg_stat_put(kg_sw, smag, sbad);
  }
  if constexpr (STATS) kg_stat_block((unsigned long long *)p.w[TW + 3], kg_sw, tid);
}
