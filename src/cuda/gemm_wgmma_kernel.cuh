/*
 * src/cuda/gemm_wgmma_kernel.cuh - the fixed source of kiln's wgmma GEMM kernel (sm_90a, CUDA C++ for
 * NVRTC). Not a header and not compiled on its own: CMake embeds this text into libkiln as a byte
 * array (kiln_gemm_wgmma_kernel_src), and kiln__cuda_gemm_wgmma_source (gemm_wgmma.c) puts the
 * structure constants (ES, BN, STAGES, SR, TMA_STORE, ...), kg_mma and kg_acc_fence (whose operand
 * lists depend on BN) and the prelude in front of it. tests/test_gemm_emu.c runs the same text on
 * its host emulator; tools/gemm-trace.py patches a copy of it with timer stamps.
 */
/* Tiles: a block of 3 warpgroups computes BM x BN tiles of C. Warpgroup 0 is the producer:
 * one thread issues the TMA copies of each BK-deep slice of A and B into a STAGES-deep
 * ring of shared-memory stages; warpgroups 1 and 2 are the consumers: each owns 64 rows of
 * the tile (m64nBNk16 wgmma, BN / 2 f32 accumulators per thread) and releases a stage when
 * its wgmma groups that read it are done. The grid is persistent: block b takes the work
 * items b, b + gridDim.x, ... (item = (batch * tiles + tile) * SPLITS + split), the ring's
 * phases running on across items, so the producer fills the next tile's stages during the
 * epilogue. With SPLITS > 1 (split-K, few tiles) item s of a tile sums its k slices
 * (kg_krange: split 0 the first k0, the others kper each after it) into an f32 partial in
 * the workspace; the block that arrives last at the tile's counter adds the partials in
 * split order (the same bits whatever the arrival order) and runs the epilogue. */
/* ES: bytes per element of A, B and C; a k slice is one 128-byte swizzle row (BK elements);
 * KSTEP: the k of one wgmma (16 for 16-bit inputs, 8 for tf32: 32 bytes either way) */
/* KP (k pairs): 64-row tiles whose k slices the two consumers take in turn (even, odd), consumer
 * 1's sums meeting consumer 0's in shared memory after the mainloop (64 x 64 tiles: twice the
 * tiles of 128 rows where those leave half the SMs idle, cuBLASLt's shape for fc1000 bprop) */
constexpr int BM = KP ? 64 : 128, BK = 128 / ES, KSTEP = TF32 ? 8 : 16, NT = 384;
constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int CHUNK = BK * 128; /* one 64-wide MN-major box (16-bit only): BK k rows of 128 bytes */
constexpr int NACC = BN / 2;       /* accumulators per consumer thread and 64-row block: 64 x BN / 128 */
/* PP (ping-pong): each consumer takes whole 128-row tiles (RB = 2 row blocks of 64) of its
 * own, alternating work items, so one's epilogue runs under the other's wgmma; else both
 * consumers share each tile (64 rows each, RB = 1) */
constexpr int RB = PP ? 2 : 1;
/* C staging of both consumers, CBUFS buffers each (two: a tile's staging is written while
 * the previous tile's store still reads the other), in boxes of 64 rows x CBOX columns
 * (128-byte rows: 64 16-bit or 32 f32 elements) */
constexpr int CES = TF32 ? 4 : 2, CBOX = 128 / CES; /* bytes of an element of C; columns of a box */
constexpr int CBUF_BYTES = RB * 64 * BN * CES, CSTAGE = TMA_STORE ? 2 * CBUFS * CBUF_BYTES : 0;
/* CLUSTER: the split-K partial of this block's tile (f32, element i of consumer thread ct at
 * i * 256 + ct), read by every block of the cluster, takes the ring's first stages once the
 * mainloop is through (one work item per block there) */
static_assert(!CLUSTER || STAGES * STAGE_BYTES >= BM * BN * 4, "the cluster partial fits the ring");
static_assert(STAGE_BYTES % 1024 == 0, "stages stay 1024-byte aligned (128-byte swizzle atoms)");
static_assert(!KP || KP1 || STAGES % 2 == 0, "k pairs: each stage always goes to the same consumer");
/* BIAS_SMEM (a bias, both consumers on one tile): each tile's BN bias values, loaded at the
 * item's start (under the mainloop's waits) by one consumer thread per 4 bytes (a column of
 * f32, a pair of 16-bit columns), go to shared memory as they are for the epilogue (two
 * buffers, alternating by item: one barrier a tile keeps a buffer from being written while it
 * is read). Per-column loads from the epilogue cost the K=128 updates 35-56 % (a load, a
 * clamp and two conversions per pair, and their latency in every group); staged as f32 the
 * 16-bit bias took the 2 KiB that 256-wide update tiles needed for their second C staging
 * buffer. Ping-pong with TMA stores of 16-bit C stages each consumer's own tile's bias the
 * same way (two buffers per consumer, written before its staging barrier: no barrier of its
 * own); ping-pong from the registers or with f32 C (whose 2 KiB would cost the ring a stage)
 * and k pairs keep the per-column loads */
constexpr bool BIAS_SMEM = HAS_BIAS && !KP && (!PP || (TMA_STORE && !TF32));
/* 64-row tiles (one consumer, or k pairs) read their bias into registers at the item's start
 * instead (BN / 4 of them: 16 or 32 beside 32 or 64 accumulators) */
constexpr bool BIAS_EARLY = HAS_BIAS && KP;
/* Stochastic rounding in the unsplit staged epilogue: the rare groups' values stashed
 * (predicated local stores) and rounded again once the tile's groups are through
 * (kg_stage_fix), so the groups are one straight line, their test one compare an element
 * (f16 and bf16 updates' full epilogue 4-11 % faster than with a branch per group, H100,
 * NOTES steps 25-26) */
constexpr bool SR_STASH = SR;

/* the kernel's one argument: the two tensor maps (cuTensorMapEncodeTiled's 128 opaque bytes)
 * and the argument words (kiln__cuda_gemm_wgmma): 0 seed, 1 SR stream, 2-4 M N K, 5-8 A B C
 * bias, 9-15 a_sm a_sk b_sk b_sn c_sm c_sn bias_s (elements), 16-17 alpha beta (f64 bits),
 * 18 batch count, 19-20 tiles along M and N, 21 ReLU (the kernel reads its RELU instead), 22
 * batch stride of C, 23-24 whether A and B have a batch coordinate in their maps, 25 k slices
 * (of BK), 26 splits, 27 k slices per split, 28 f32 workspace (tiles x splits x BM x BN), 29
 * arrival counters (int per tile),
 * 30-40 what stochastic rounding's Philox takes from the seed and stream alone
 * (kiln__cuda_gemm_wgmma_sr_words), 41 tile rows per group of the tile order (kg_item),
 * 42-46 the divisors of a work item (splits, tiles a batch, tiles a group, group_m, the last
 * group's rows) as kg_div words, 47 1 where every item is below 2^31 (kg_div applies);
 * tc: C's tensor map (boxes of 64 x 64, 128-byte swizzle) when TMA_STORE; tae, tbe: A's map
 * with boxes of the last tile row's rows (rounded up to 8), B's with the last tile column's,
 * where word 21 says so (K-major operands only): the bytes of A's edge box in its low half,
 * B's in its high half, 0 where there is none (this kernel reads its RELU, not word 21; the
 * word shares a constant-cache line with the tile counts read at the start, and the edge maps
 * come after the words, so a launch without edges reads what it did before they existed:
 * words 48-49 in a line of their own had cost fc1000 bprop 5-7 %, H100); stats (STATS): the
 * launch's output statistics, two 64-bit words the kernel's blocks add theirs to (atomics: max
 * and sum do not depend on the order), zero before the launch: the largest magnitude of a
 * finite element of C as f32 bits (the low half of word 0), the count of non-finite ones
 * (word 1); after the maps, read once a block at its end */
struct __align__(64) kg_tmap { kiln_w64 b[16]; };
struct __align__(64) kiln_args { kg_tmap ta, tb, tc; kiln_w64 w[48]; kg_tmap tae, tbe; kiln_w64 stats; };

/* kg: PTX wrappers */
__device__ __forceinline__ unsigned kg_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void kg_bar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void kg_bar_expect(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void kg_bar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void kg_bar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
/* TMA: the box at coordinates (c0, c1, c2) of map into shared memory at dst, completing
 * its bytes on bar */
__device__ __forceinline__ void kg_tma(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
/* B's boxes: kg_tma, where BHINT with an evict_first L2 policy (B streamed once: its lines
 * go first, A's stay) */
__device__ __forceinline__ void kg_tma_b(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar) {
  if constexpr (BHINT) {
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint"
                 " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
                 :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "l"(pol)
                 : "memory");
  } else {
    kg_tma(dst, map, c0, c1, c2, bar);
  }
}
/* MC: the same into shared memory at dst of every block of the cluster in mask (the same
 * offset in each), completing its bytes on bar of each */
__device__ __forceinline__ void kg_tma_mc(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar,
                                          unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
               :: "r"(dst), "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
               : "memory");
}
/* TMA store: the box at (c0, c1, c2) of map from shared memory at src (a bulk group) */
__device__ __forceinline__ void kg_tma_store(const kg_tmap *map, unsigned src, int c0, int c1, int c2) {
  if constexpr (CHINT == 0) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n"
                 :: "l"((unsigned long long)map), "r"(src), "r"(c0), "r"(c1), "r"(c2) : "memory");
  } else {
    unsigned long long pol;
    if constexpr (CHINT == 1)
      asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
    else
      asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint [%0, {%2, %3, %4}], [%1], %5;\n"
                 :: "l"((unsigned long long)map), "r"(src), "r"(c0), "r"(c1), "r"(c2), "l"(pol) : "memory");
  }
}
__device__ __forceinline__ void kg_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void kg_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void kg_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory");
}
__device__ __forceinline__ void kg_fence_bar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void kg_regs_producer() { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory"); }
__device__ __forceinline__ void kg_regs_consumer() { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory"); }
/* named barrier id among n threads */
__device__ __forceinline__ void kg_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ unsigned kg_ld_shared(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void kg_st_shared(unsigned addr, unsigned v) {
  asm volatile("st.shared.u32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}
/* shared-memory reductions of one word (STATS: a block's statistics) */
__device__ __forceinline__ void kg_red_shared_max(unsigned addr, unsigned v) {
  asm volatile("red.shared.max.u32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ void kg_red_shared_add(unsigned addr, unsigned v) {
  asm volatile("red.shared.add.u32 [%0], %1;\n" :: "r"(addr), "r"(v) : "memory");
}
/* the lane-wise maximum of two pairs of unsigned 16-bit halves (one VIMNMX on sm_90) */
__device__ __forceinline__ unsigned kg_max_u16x2(unsigned a, unsigned b) {
  unsigned d;
  asm("max.u16x2 %0, %1, %2;\n" : "=r"(d) : "r"(a), "r"(b));
  return d;
}
/* generic-proxy stores to shared memory become visible to TMA (the async proxy) */
__device__ __forceinline__ void kg_fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void kg_bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/* this thread's bulk store groups but the newest PENDING have read their shared memory (it
 * may be written again) */
template <int PENDING> __device__ __forceinline__ void kg_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" :: "n"(PENDING) : "memory");
}
/* the tensor map's descriptor fetched ahead of its first TMA (a miss there costs the first
 * load its latency again) */
__device__ __forceinline__ void kg_prefetch_map(const kg_tmap *map) {
  asm volatile("prefetch.tensormap [%0];\n" :: "l"((unsigned long long)map) : "memory");
}
/* lo, hi rounded to nearest f16 / bf16 in one instruction: lo in the low half (a NaN comes
 * out as the canonical NaN) */
__device__ __forceinline__ unsigned kg_cvt_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
/* lo, hi rounded toward zero to f16 in one instruction (stochastic rounding's truncation) */
__device__ __forceinline__ unsigned kg_cvt_rz_f16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rz.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
/* x * s rounded toward zero (s a power of two: f16 stochastic rounding's scaling into f32's
 * subnormals, kg_stage_words) */
__device__ __forceinline__ float kg_mul_rz(float x, float s) {
  float r;
  asm("mul.rz.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(s));
  return r;
}
__device__ __forceinline__ unsigned kg_cvt_bf16x2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
/* ReLU of a word of two f16 / bf16 halves, each read as a 16-bit integer: a half with its sign
 * set (a negative, -0, -inf) becomes +0, the others (positives, +inf, the canonical NaN
 * 0x7FFF) pass; one max.s16x2 (sm_90) a word where the f32 form takes a compare and a select
 * an element (RELU_WORDS) */
__device__ __forceinline__ unsigned kg_relu_h2(unsigned w) {
  unsigned r;
  asm("max.s16x2 %0, %1, %2;" : "=r"(r) : "r"(w), "r"(0u));
  return r;
}
/* clusters (CLUSTER): the blocks of a cluster at one barrier (all threads of each); the
 * address of addr in the shared memory of the cluster's block rank; a load from such an
 * address; an arrival on a block's mbarrier from another block of the cluster (release at
 * cluster scope: this thread's and, after a barrier, its block's writes go before it); a
 * wait that acquires at cluster scope */
__device__ __forceinline__ void kg_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ unsigned kg_mapa(unsigned addr, int rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
/* split-K: a load of a split tile's counter that acquires at GPU scope (the partials
 * published before the arrivals it counts are visible after it) */
__device__ __forceinline__ int kg_ld_acquire(const int *p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ float kg_ld_cluster(unsigned addr) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(addr));
  return v;
}
/* two neighbouring f32 of shared memory (addr 8-byte aligned) */
__device__ __forceinline__ void kg_ld_shared_f32x2(unsigned addr, float &x, float &y) {
  asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(x), "=f"(y) : "r"(addr) : "memory");
}
__device__ __forceinline__ void kg_st_shared_f32(unsigned addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;\n" :: "r"(addr), "f"(v) : "memory");
}
/* two neighbouring f32 into shared memory (addr 8-byte aligned) */
__device__ __forceinline__ void kg_st_shared_f32x2(unsigned addr, float x, float y) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" :: "r"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ void kg_fence_cluster() { asm volatile("fence.acq_rel.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void kg_bar_arrive_cluster(unsigned remote) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}
/* MC: a consumer's release of a stage on the other block's empty barrier: its wgmma reads
 * are done (wgmma.wait_group), nothing of its own to publish, so no cluster-scope release
 * (CUTLASS's cluster barrier arrives so; with .release.cluster here, and the producer's
 * wait at .acquire.cluster, a stage took ~1 us whatever its size: 1.6-2.6x slower) */
__device__ __forceinline__ void kg_bar_arrive_remote(unsigned remote) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}
__device__ __forceinline__ void kg_bar_wait_cluster(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
/* a * b as 64 bits: one IMAD.WIDE.U32 (as C the compiler made Philox's products 64-bit
 * multiplies, or split one multiplier of two into IMAD.HI and IMAD) */
__device__ __forceinline__ kiln_w64 kg_mul_wide(unsigned a, unsigned b) {
  kiln_w64 r;
  asm("mul.wide.u32 %0, %1, %2;\n" : "=l"(r) : "r"(a), "r"(b));
  return r;
}
/* kg: end of PTX wrappers */


/* kiln_philox4x32_r(seed, stream, ctr, KILN_GEMM_SR_ROUNDS), bit for bit, with what depends
 * on the seed and stream alone read from the words (kiln__cuda_gemm_wgmma_sr_words): round 0's
 * product of the stream's low word folded with the key (39, 40), the bumped keys of rounds
 * 1, 2, ... (30, 31, ..., k0 in the low half), each a constant operand of its xor: per call of
 * R rounds 2 R - 1 wide multiplies and 2 R xors, none of the key schedule's adds; each
 * multiply one IMAD.WIDE (kg_mul_wide, where high and low halves in C took 1.5 times the
 * multiply instructions) */
__device__ __forceinline__ kiln_philox4 kg_philox_sr(const kiln_args &p, kiln_w64 ctr) {
  const unsigned lo = (unsigned)ctr;
  unsigned c0 = (unsigned)p.w[39] ^ (unsigned)(ctr >> 32), c1 = (unsigned)(p.w[39] >> 32);
  const kiln_w64 q = kg_mul_wide(0xD2511F53u, lo);
  unsigned c2 = (unsigned)(q >> 32) ^ (unsigned)p.w[40], c3 = (unsigned)q;
#pragma unroll
  for (int r = 1; r < KILN_GEMM_SR_ROUNDS; r++) {
    const unsigned k0 = (unsigned)p.w[29 + r], k1 = (unsigned)(p.w[29 + r] >> 32);
    const kiln_w64 q0 = kg_mul_wide(0xD2511F53u, c0), q1 = kg_mul_wide(0xCD9E8D57u, c2);
    c0 = (unsigned)(q1 >> 32) ^ c1 ^ k0;
    c1 = (unsigned)q1;
    c2 = (unsigned)(q0 >> 32) ^ c3 ^ k1;
    c3 = (unsigned)q0;
  }
  kiln_philox4 g;
  g.v[0] = c0;
  g.v[1] = c1;
  g.v[2] = c2;
  g.v[3] = c3;
  return g;
}
/* The Philox counter of the group of C's row m of batch bi from column n (kiln_gemm_sr_counter;
 * the next group of the row, 32 columns on, has the counter + 4) */
__device__ __forceinline__ kiln_w64 kg_sr_ctr(const kiln_args &p, long long bi, long long m, long long n) {
  return kiln_gemm_sr_counter((kiln_w64)(bi * (long long)p.w[2] + m), (kiln_w64)n, p.w[3]);
}
/* Stochastic rounding: the Philox output of the group of C[m][n] (kiln_gemm_sr_bits), which
 * a thread shares among its eight elements of row m in the 32 columns from n - n % 32 (its
 * pairs n + 8 jj, jj < 4, where 8 | n - n % 32 - 2 (lane % 4)); column n + 8 jj + e takes
 * half e of word jj */
__device__ __forceinline__ kiln_philox4 kg_sr_group(const kiln_args &p, long long bi, long long m, long long n) {
  return kg_philox_sr(p, kg_sr_ctr(p, bi, m, n));
}
__device__ __forceinline__ unsigned kg_sr_half(const kiln_philox4 &g, int jj, int e) {
  return e ? (g.v[jj] & 0xFFFF0000u) : (g.v[jj] << 16);
}

/* The epilogue's values that every element shares, read once per kernel (as a per-pair read
 * the f64 alpha cost a conversion per pair) */
struct kg_epi {
  float alpha, beta;
  bool bias_pairs; /* a contiguous, 4-byte aligned bias: kg_bias_group_staged reads pairs */
};
/* The bias of columns n and n + 1 (0 past N), read through the non-coherent cache */
__device__ __forceinline__ void kg_bias_pair(const kiln_args &p, long long n, float &b0, float &b1) {
  const long long N = (long long)p.w[3], bs = (long long)p.w[15];
  const ST *bias = (const ST *)p.w[8];
  b0 = n < N ? kg_f32(__ldg(bias + n * bs)) : 0.0f;
  b1 = n + 1 < N ? kg_f32(__ldg(bias + (n + 1) * bs)) : 0.0f;
}
/* The bias of a thread's eight columns of the 32-column group from n - n % 32 (pairs
 * n + 8 jj): loaded once for both of its rows, all eight loads in flight before any use,
 * and ahead of the group's shared-memory stores, which generic loads could not pass */
__device__ __forceinline__ void kg_bias_group(const kiln_args &p, long long n, float (&b)[8]) {
#pragma unroll
  for (int jj = 0; jj < 4; jj++) kg_bias_pair(p, n + 8 * jj, b[2 * jj], b[2 * jj + 1]);
}
/* kg_bias_group for the staged (TMA-store) epilogue: with ep.bias_pairs each 32-bit load
 * brings columns n and n + 1 (n is even, the bias 4-byte aligned), the column clamped to
 * N - 2 instead of tested (N is a multiple of 8 for TMA stores; what lies past N is
 * clipped by the store): one load, a min and two conversions per pair where the general
 * form spends two 64-bit compares and two 2-byte loads */
__device__ __forceinline__ void kg_bias_group_staged(const kiln_args &p, const kg_epi &ep, long long n,
                                                     float (&b)[8]) {
  if constexpr (!TF32) {
    if (ep.bias_pairs) {
      const int last = (int)p.w[3] - 2;
      const ST *bias = (const ST *)p.w[8];
#pragma unroll
      for (int jj = 0; jj < 4; jj++) {
        const int c = (int)n + 8 * jj < last ? (int)n + 8 * jj : last;
        const unsigned u = __ldg((const unsigned *)(bias + c));
        b[2 * jj] = kg_f32((ST)(u & 0xFFFFu));
        b[2 * jj + 1] = kg_f32((ST)(u >> 16));
      }
      return;
    }
  }
  kg_bias_group(p, n, b);
}
/* BIAS_SMEM: the bias of a thread's eight columns of 32-column group J of the tile from its
 * copy in shared memory at bsm (column c at bsm + ES c): four paired loads */
__device__ __forceinline__ void kg_bias_group_smem(unsigned bsm, int J, int lane, float (&b)[8]) {
#pragma unroll
  for (int jj = 0; jj < 4; jj++) {
    const unsigned at = bsm + (unsigned)(32 * J + 8 * jj + 2 * (lane & 3)) * ES;
    if constexpr (TF32) {
      kg_ld_shared_f32x2(at, b[2 * jj], b[2 * jj + 1]);
    } else {
      const unsigned u = kg_ld_shared(at);
      b[2 * jj] = kg_f32((ST)(u & 0xFFFFu));
      b[2 * jj + 1] = kg_f32((ST)(u >> 16));
    }
  }
}

/* STATS: a thread's part of the output statistics, over the elements of C it stores (their
 * final bits, as rounded): the largest magnitude of a finite one, as its bits with the sign
 * cleared (within one format the finite magnitudes order as those bits do), held through the
 * kernel, and the count of non-finite ones, counted where an epilogue step meets them and added
 * to the block's count in shared memory at its end (one register less through the mainloop: the
 * bf16 updates' kernel with SR spilled with both held); with STATS off every helper here is
 * empty */
struct kg_stats {
  unsigned mag, bad;
};
constexpr unsigned KG_INF_BITS = TF32 ? 0x7F800000u : BF16 ? 0x7F80u : 0x7C00u;
__device__ __forceinline__ void kg_stat(kg_stats &s, ST v) {
  if constexpr (STATS) {
    const unsigned mag = TF32 ? kiln_f32_bits(v) & 0x7FFFFFFFu : (unsigned)v & 0x7FFFu;
    const bool bad = mag >= KG_INF_BITS;
    s.bad += bad ? 1u : 0u;
    s.mag = bad || mag < s.mag ? s.mag : mag;
  }
}
/* a step's non-finite count t.bad into the block's at ss + 4, its magnitude back into mag */
__device__ __forceinline__ void kg_stat_end(const kg_stats &t, unsigned &mag, unsigned ss) {
  if constexpr (STATS) {
    mag = t.mag;
    if (t.bad) kg_red_shared_add(ss + 4, t.bad);
  }
}
/* the block's statistics into the launch's (p.stats) at the kernel's end, by the consumer
 * threads (KP1: consumer 0's alone): each thread's magnitude as f32 bits reduced into the
 * block's word at ss (zeroed at the block's start, as the count at ss + 4), then one thread's
 * atomics */
__device__ __forceinline__ void kg_stat_flush(const kiln_args &p, unsigned mag, unsigned ss, int ct) {
  if constexpr (STATS) {
    const unsigned f = TF32 ? mag : BF16 ? mag << 16 : kiln_f32_bits(kg_f32((ST)mag));
    if (f) kg_red_shared_max(ss, f);
    kg_sync(1, KP1 ? 128 : 256);
    if (ct == 0) {
      unsigned long long *out = (unsigned long long *)p.stats;
      const unsigned bmag = kg_ld_shared(ss), bad = kg_ld_shared(ss + 4);
      if (bmag) atomicMax((unsigned *)out, bmag);
      if (bad) atomicAdd(out + 1, (unsigned long long)bad);
    }
  }
}

/* C[m][n], C[m][n + 1] (the second only if n + 1 < N) of batch bi from the f32 sums v0, v1:
 * alpha, bias (per column: b0, b1 from kg_bias_pair), ReLU, beta * C, one rounding
 * (stochastic: word jj of the pair's group g), the store (one 32-bit word when C allows).
 * The caller checks m < M and n < N. */
__device__ __forceinline__ void kg_pair_value(const kiln_args &p, long long bi, long long m, long long n,
                                              float v0, float v1, float b0, float b1, const kiln_philox4 &g,
                                              int jj, ST (&o)[2]) {
  const long long N = (long long)p.w[3], c_sm = (long long)p.w[13], c_sn = (long long)p.w[14];
  const ST *C = (const ST *)p.w[7] + bi * (long long)p.w[22];
  const float alpha = (float)__longlong_as_double((long long)p.w[16]);
  const bool two = n + 1 < N;
  o[1] = 0;
#pragma unroll
  for (int e = 0; e < 2; e++) {
    if (e == 1 && !two) break;
    float v = ALPHA1 ? (e ? v1 : v0) : alpha * (e ? v1 : v0);
    if constexpr (HAS_BIAS) v = v + (e ? b1 : b0);
    if constexpr (RELU) v = v <= 0.0f ? 0.0f : v; /* maximum(v, +0): -0 too becomes +0, NaN stays */
    if constexpr (HAS_BETA)
      v = v + (float)__longlong_as_double((long long)p.w[17]) * kg_f32(C[m * c_sm + (n + e) * c_sn]);
    if constexpr (SR) {
      o[e] = kg_round_sr(v, kg_sr_half(g, jj, e));
    } else {
      o[e] = kg_round_rn(v);
    }
  }
}
/* ReLU on the rounded words (kg_relu_words, in kg_stage_words and kg_stage_words_exact) where C
 * is 16-bit and no beta * C follows it. The same outputs as the f32 form before the rounding:
 * a value <= 0 rounds to a half with its sign set or to +0, both +0 after it, a positive one
 * to a positive half, and every NaN here is the FP pipes' canonical, positive one (see
 * kg_stage_words). Where the rule's plan is epilogue-bound (the K = 128 updates) the f32
 * form's compare and select were ~2 of its ~17 instructions an element (NOTES step 38) */
constexpr bool RELU_WORDS = RELU && !HAS_BETA && !TF32;
__device__ __forceinline__ void kg_relu_words(unsigned (&w)[8]) {
  if constexpr (RELU_WORDS) {
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = kg_relu_h2(w[i]);
  }
}
/* C[m][n], C[m][n + 1] in f32 for the shared-memory staging (TMA stores): kg_pair_value's
 * arithmetic without its bounds checks (the store clips what lies past M and N; the sums
 * there are zeros, the bias 0), straight-line code with the uniforms of ep; only beta's
 * reads of C look at the bounds */
__device__ __forceinline__ void kg_stage_pair(const kiln_args &p, const kg_epi &ep, long long bi, long long m,
                                              long long n, float v0, float v1, float b0, float b1, float &x0,
                                              float &x1) {
  float v[2] = {ALPHA1 ? v0 : ep.alpha * v0, ALPHA1 ? v1 : ep.alpha * v1};
#pragma unroll
  for (int e = 0; e < 2; e++) {
    if constexpr (HAS_BIAS) v[e] = v[e] + (e ? b1 : b0);
    if constexpr (RELU && !RELU_WORDS) v[e] = v[e] <= 0.0f ? 0.0f : v[e]; /* as kg_pair_value's */
    if constexpr (HAS_BETA) {
      const long long M = (long long)p.w[2], N = (long long)p.w[3];
      const ST *C = (const ST *)p.w[7] + bi * (long long)p.w[22];
      if (m < M && n + e < N) v[e] = v[e] + ep.beta * kg_f32(C[m * (long long)p.w[13] + (n + e) * (long long)p.w[14]]);
    }
  }
  x0 = v[0];
  x1 = v[1];
}
/* A thread's 16 values of one 32-column group (x[8 h + 2 jj + e]: row h, pair jj, element
 * e) rounded into its 8 staging words w[4 h + jj], the first element in the low half, then
 * their ReLU where RELU_WORDS.
 * Stochastic: half e of word jj of the row's Philox group. Nearest: one cvt.rn.*x2 per
 * word. A NaN here is always the FP pipes' canonical 0x7FFFFFFF (the tensor cores' sums,
 * FMUL, FADD and FFMA give it for any NaN operand), which cvt.rn.bf16x2 and kiln's own
 * rounding both make 0x7FFF, so bf16 tests no group for NaNs (the test cost fc1000 bprop
 * 4.5 % and its update 4 %, H100, NOTES step 38; test_cuda_backend's gemm_nan_canonical
 * holds every engine to it).
 * Stochastic: the straight-line rounding of the common case (kg_sr_rare false), whatever the
 * values; a group that is not takes kg_stage_words_exact (kg_stage_group) */
/* Stochastic rounding's common case tested for a group's 16 values: every value finite (bf16),
 * every |x| below 65504 (f16); true where one is not */
__device__ __forceinline__ bool kg_sr_rare(const float (&x)[16]) {
  bool rare = false;
#pragma unroll
  for (int i = 0; i < 16; i++) {
    if constexpr (BF16) {
      rare |= !(fabsf(x[i]) <= 3.40282347e38f); /* one compare of |x| (false for inf, NaN) */
    } else {
      rare |= !(fabsf(x[i]) < 65504.0f); /* one compare (true for NaN) */
    }
  }
  return rare;
}
__device__ __forceinline__ void kg_stage_words(const float (&x)[16], const kiln_philox4 (&g)[2], unsigned (&w)[8]) {
  if constexpr (SR) {
    if constexpr (BF16) {
      /* bf16 (finite): the 16 random bits added to the bits of x (to its magnitude: a finite
       * f32 plus 0xFFFF stays below the sign bit), the top halves of a pair packed into one
       * word: kiln_f32_to_bf16_sr's bits in an add an element and a permute a pair (right
       * where the test passed) */
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const unsigned v = g[i >> 2].v[i & 3]; /* word jj = i % 4 of row i / 4's group */
        const unsigned t0 = kiln_f32_bits(x[2 * i]) + (v & 0xFFFFu), t1 = kiln_f32_bits(x[2 * i + 1]) + (v >> 16);
        w[i] = (t0 >> 16) | (t1 & 0xFFFF0000u);
      }
    } else {
      /* f16 (right where |x| < 65504, zeros and the subnormal range included):
       * kiln_f32_to_f16_sr13 through f32's subnormals. s = x 2^-112 rounded toward zero is
       * an f32 whose bits above the low 13 are f16's bits of |x| (f16's exponent is f32's
       * less 112, and below 2^-14 f32's subnormal unit 2^-149 is 2^-37 scaled: floor(|x|
       * 2^37)), the sign in bit 31; the 13 random bits added to those bits (below 2^-96
       * nothing carries into the sign), the sum scaled back by 2^112 (exact) and truncated by
       * one cvt.rz per pair (below 65504 a carry reaches at most 65504, so rounding toward
       * zero never clamps; from 65504 up, inf and NaN the exact path rounds). The two
       * multiplies run on the FMA pipes the Philox multiplies leave idle. The test and the
       * branch per group of the old form (only [2^-14, 65504) inline) cost f16 SR 10-16 %
       * of the updates (H100, NOTES step 26) */
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const unsigned v = g[i >> 2].v[i & 3]; /* word jj = i % 4 of row i / 4's group */
        /* the low half's bits moved up by a byte permute (v << 16, opaque to the compiler, which
         * made (v << 16) >> 19 a shift, a mask and an add): then each element's add of its
         * top 13 bits is one LEA.HI */
        const unsigned vl = __byte_perm(v, 0u, 0x1044u);
        const float s0 = kg_mul_rz(x[2 * i], 0x1p-112f), s1 = kg_mul_rz(x[2 * i + 1], 0x1p-112f);
        const float t0 = __uint_as_float(kiln_f32_bits(s0) + (vl >> 19)) * 0x1p112f;
        const float t1 = __uint_as_float(kiln_f32_bits(s1) + (v >> 19)) * 0x1p112f;
        w[i] = kg_cvt_rz_f16x2(t0, t1);
      }
    }
  } else if constexpr (BF16) {
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = kg_cvt_bf16x2(x[2 * i], x[2 * i + 1]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = kg_cvt_f16x2(x[2 * i], x[2 * i + 1]);
  }
  kg_relu_words(w);
}
/* kg_stage_words' stochastic rounding, exact for every value: a rolled loop of one pair a turn,
 * the group's values and words rotated through the first places (constant indices keep them
 * in registers), its code once per call site (unrolled, the 16 inlined exact roundings of each
 * group made the code too big to fetch) */
__device__ __forceinline__ void kg_stage_words_exact(const float (&x)[16], const kiln_philox4 (&g)[2],
                                                     unsigned (&w)[8]) {
  float xr[16];
  unsigned gw[8];
#pragma unroll
  for (int i = 0; i < 16; i++) xr[i] = x[i];
#pragma unroll
  for (int i = 0; i < 8; i++) {
    gw[i] = g[i >> 2].v[i & 3];
    w[i] = 0;
  }
#pragma unroll 1
  for (int i = 0; i < 8; i++) {
    const unsigned word = (unsigned)kg_round_sr(xr[0], gw[0] << 16) |
                          ((unsigned)kg_round_sr(xr[1], gw[0] & 0xFFFF0000u) << 16);
#pragma unroll
    for (int k = 0; k < 14; k++) xr[k] = xr[k + 2];
#pragma unroll
    for (int k = 0; k < 7; k++) {
      gw[k] = gw[k + 1];
      w[k] = w[k + 1];
    }
    w[7] = word; /* after the eighth turn the first word has moved down to w[0] */
  }
  kg_relu_words(w);
}
__device__ __forceinline__ void kg_out_pair(const kiln_args &p, long long bi, long long m, long long n,
                                            float v0, float v1, float b0, float b1, const kiln_philox4 &g, int jj,
                                            kg_stats &st) {
  const long long N = (long long)p.w[3], c_sm = (long long)p.w[13], c_sn = (long long)p.w[14];
  ST *C = (ST *)p.w[7] + bi * (long long)p.w[22];
  const bool two = n + 1 < N;
  ST o[2];
  kg_pair_value(p, bi, m, n, v0, v1, b0, b1, g, jj, o);
  kg_stat(st, o[0]);
  if (two) kg_stat(st, o[1]);
  ST *dst = C + m * c_sm + n * c_sn;
  if (C_PAIR && two) {
    kg_store_pair(dst, o[0], o[1]);
  } else {
    dst[0] = o[0];
    if (two) dst[c_sn] = o[1];
  }
}

/* The launch's kg_epi (alpha, beta; whether the bias can be read in pairs) */
__device__ __forceinline__ kg_epi kg_epi_of(const kiln_args &p) {
  return kg_epi{(float)__longlong_as_double((long long)p.w[16]), (float)__longlong_as_double((long long)p.w[17]),
                p.w[15] == 1 && (p.w[8] & 3) == 0};
}
/* One 32-column group of a thread's values into a 64-row block of the C staging at cs (the
 * block's BN / CBOX swizzled boxes of 64 rows x CBOX): a[4 jj + 2 h + e] is the f32 sum of
 * C[m0 + 8 h][n + 8 jj + e], bv the group's bias, sc0 and sc1 the Philox counters of its rows
 * (kg_sr_ctr; the caller steps them by 4 a group), r0 = 16 warp + lane / 4 the thread's first
 * row in the block, J the group (tile columns 32 J + 8 jj + 2 (lane % 4) + e). Both rows'
 * random words first, then the math (kg_stage_pair), the rounding (kg_stage_words; f32 C
 * goes unrounded, a pair as one 8-byte store) and the stores of column c of row r at
 * (c / CBOX) * 8192 + r * 128 + (q ^ r % 8) * 16 + the pair's place in 16-byte chunk q (the
 * map's 128-byte swizzle: the eight rows of one store instruction land in eight different
 * bank groups; kg_stage_store). Stochastic rounding tests the group (kg_sr_rare): with stash
 * null a group that fails it is rounded exactly at once (a branch); else the straight-line
 * words are stored whatever the test, a failing group's 16 values go to stash (predicated
 * stores, no branch) and the test is returned, for kg_stage_fix (SR_STASH) */
__device__ __forceinline__ void kg_stage_store(unsigned cs, int r0, int J, int lane, const float (&x)[16],
                                               const unsigned (&w)[8]) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    const int r = r0 + 8 * h;
#pragma unroll
    for (int jj = 0; jj < 4; jj++) {
      const int c = 32 * J + 8 * jj + 2 * (lane & 3), q = (c % CBOX) * CES / 16;
      const unsigned at = cs + (c / CBOX) * 8192 + r * 128 + ((q ^ (r & 7)) << 4) + (c % CBOX) * CES % 16;
      if constexpr (TF32)
        kg_st_shared_f32x2(at, x[8 * h + 2 * jj], x[8 * h + 2 * jj + 1]);
      else
        kg_st_shared(at, w[4 * h + jj]);
    }
  }
}
/* STATS over a thread's staged row block at cs as kg_stage_store placed it (read back once every
 * group is staged, kg_stage_fix's too: the bits as stored; each thread reads its own), m0 and nb
 * its first row and group 0's first column. Group by group (a rolled loop: its code once): where
 * the group lies inside M and N (a staged row or column past C holds the bias or sums of stale
 * stage rows, and is never stored) and every element is finite, its largest magnitude alone (a
 * mask and half a two-lane max a 16-bit element, max.u16x2 on the words; a mask and a max an f32
 * one); else element by element. Read back, not taken from the registers that made the words:
 * with those kept for it the SR updates' kernels spilled */
__device__ __forceinline__ void kg_stat_staged(const kiln_args &p, unsigned &mag, unsigned ss, unsigned cs, int r0,
                                               int lane, long long m0, long long nb) {
  if constexpr (STATS) {
    const long long M = (long long)p.w[2], N = (long long)p.w[3], room = N - nb - 25;
    /* groups J < inside lie wholly inside (rows m0 and m0 + 8, columns to nb + 32 J + 25) */
    const int inside = m0 + 8 >= M || room <= 0 ? 0 : room >= BN ? BN / 32 : (int)((room + 31) / 32);
    kg_stats t = {mag, 0u};
#pragma unroll 1
    for (int J = 0; J < BN / 32; J++) {
      unsigned u[8][2]; /* pair jj of row h: u[4 h + jj] (16-bit: one word; f32: two) */
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const int r = r0 + 8 * (i >> 2), c = 32 * J + 8 * (i & 3) + 2 * (lane & 3), q = (c % CBOX) * CES / 16;
        const unsigned at = cs + (c / CBOX) * 8192 + r * 128 + ((q ^ (r & 7)) << 4) + (c % CBOX) * CES % 16;
        if constexpr (TF32) {
          float f0, f1;
          kg_ld_shared_f32x2(at, f0, f1);
          u[i][0] = kiln_f32_bits(f0);
          u[i][1] = kiln_f32_bits(f1);
        } else {
          u[i][0] = kg_ld_shared(at);
          u[i][1] = 0u;
        }
      }
      unsigned g = 0u;
#pragma unroll
      for (int i = 0; i < 8; i++) {
        if constexpr (TF32)
          g = max(g, max(u[i][0] & 0x7FFFFFFFu, u[i][1] & 0x7FFFFFFFu));
        else
          g = kg_max_u16x2(g, u[i][0] & 0x7FFF7FFFu);
      }
      if constexpr (!TF32) g = max(g & 0xFFFFu, g >> 16);
      if (J < inside && g < KG_INF_BITS) {
        t.mag = max(t.mag, g);
        continue;
      }
#pragma unroll
      for (int i = 0; i < 8; i++) {
        const long long m = m0 + 8 * (i >> 2), cn = nb + 32 * J + 8 * (i & 3);
        ST v0, v1;
        if constexpr (TF32) {
          v0 = (ST)__uint_as_float(u[i][0]);
          v1 = (ST)__uint_as_float(u[i][1]);
        } else {
          v0 = (ST)(u[i][0] & 0xFFFFu);
          v1 = (ST)(u[i][0] >> 16);
        }
        if (m < M && cn < N) kg_stat(t, v0);
        if (m < M && cn + 1 < N) kg_stat(t, v1);
      }
    }
    kg_stat_end(t, mag, ss);
  }
}
__device__ __forceinline__ bool kg_stage_group(const kiln_args &p, const kg_epi &ep, long long bi, long long m0,
                                               long long n, kiln_w64 sc0, kiln_w64 sc1, const float *a,
                                               const float (&bv)[8], unsigned cs, int r0, int J, int lane,
                                               float4 *stash = nullptr, const kiln_philox4 *pre = nullptr) {
  /* both rows' words, past M too (the store clips those rows): with a test per row the words
   * were zeroed first and branched around, ~16 instructions a group of 16 elements; pre, where
   * given, holds them already (the split sums' early words) */
  kiln_philox4 g[2] = {};
  if constexpr (SR) {
    g[0] = pre ? pre[0] : kg_philox_sr(p, sc0);
    g[1] = pre ? pre[1] : kg_philox_sr(p, sc1);
  }
  float x[16];
#pragma unroll
  for (int h = 0; h < 2; h++)
#pragma unroll
    for (int jj = 0; jj < 4; jj++)
      kg_stage_pair(p, ep, bi, m0 + 8 * h, n + 8 * jj, a[4 * jj + 2 * h], a[4 * jj + 2 * h + 1], bv[2 * jj],
                    bv[2 * jj + 1], x[8 * h + 2 * jj], x[8 * h + 2 * jj + 1]);
  unsigned w[8];
  bool rare = false;
  if constexpr (SR) {
    rare = kg_sr_rare(x);
    if (stash) {
      kg_stage_words(x, g, w);
      if (rare) {
#pragma unroll
        for (int k = 0; k < 4; k++) stash[k] = make_float4(x[4 * k], x[4 * k + 1], x[4 * k + 2], x[4 * k + 3]);
      }
    } else if (rare) {
      kg_stage_words_exact(x, g, w);
    } else {
      kg_stage_words(x, g, w);
    }
  } else if constexpr (!TF32) {
    kg_stage_words(x, g, w);
  }
  kg_stage_store(cs, r0, J, lane, x, w);
  return rare;
}
/* Stochastic rounding in the unsplit staged epilogue: the groups whose bit is set in rare
 * rounded again exactly from their values in stash (kg_stage_group) into the staging at cs, sc0
 * and sc1 group 0's Philox counters (a rolled loop: its code once) */
__device__ __forceinline__ void kg_stage_fix(const kiln_args &p, kiln_w64 sc0, kiln_w64 sc1, const float4 *stash,
                                             unsigned cs, int r0, int lane, unsigned rare) {
#pragma unroll 1
  for (int J = 0; J < BN / 32; J++) {
    if (!((rare >> J) & 1u)) continue;
    float x[16];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const float4 v = stash[4 * J + k];
      x[4 * k] = v.x;
      x[4 * k + 1] = v.y;
      x[4 * k + 2] = v.z;
      x[4 * k + 3] = v.w;
    }
    const kiln_philox4 g[2] = {kg_philox_sr(p, sc0 + 4 * J), kg_philox_sr(p, sc1 + 4 * J)};
    unsigned w[8];
    kg_stage_words_exact(x, g, w);
    kg_stage_store(cs, r0, J, lane, x, w);
  }
}
/* The same group straight from the registers to C, pair by pair (the checked form of
 * kg_out_pair: any C, ragged edges) */
__device__ __forceinline__ void kg_out_group(const kiln_args &p, long long bi, long long m0, long long n,
                                             const float *a, const float (&bv)[8], unsigned &mag, unsigned ss) {
  const long long M = (long long)p.w[2], N = (long long)p.w[3];
  kg_stats st = {mag, 0u};
  kiln_philox4 g[2] = {};
#pragma unroll
  for (int h = 0; h < 2; h++)
    if (SR && m0 + 8 * h < M) g[h] = kg_sr_group(p, bi, m0 + 8 * h, n);
#pragma unroll
  for (int h = 0; h < 2; h++) {
    if (m0 + 8 * h >= M) continue;
#pragma unroll
    for (int jj = 0; jj < 4; jj++)
      if (n + 8 * jj < N)
        kg_out_pair(p, bi, m0 + 8 * h, n + 8 * jj, a[4 * jj + 2 * h], a[4 * jj + 2 * h + 1], bv[2 * jj],
                    bv[2 * jj + 1], g[h], jj, st);
  }
  kg_stat_end(st, mag, ss);
}

/* wgmma shared-memory descriptors: the low word holds the start address >> 4 (14 bits) and the
 * leading byte offset >> 4, the high word the stride byte offset >> 4 (1024: 8 rows of 128
 * bytes) and the 128-byte swizzle. A stage or a k step further on adds to the low word's
 * address field alone (shared-memory offsets stay below 2^18: no carry out of it), so a
 * consumer forms one low word per operand before its loop and adds constants to it (built
 * anew from the address for every wgmma, a descriptor cost ~10 instructions and four moves
 * to uniform registers: 79 instructions an own slice of fc1000 bprop's consumers, NOTES
 * step 30) */
__device__ __forceinline__ unsigned kg_desc_lo(unsigned addr, unsigned lbo) {
  return ((addr & 0x3FFFFu) >> 4) | ((lbo >> 4) << 16);
}
__device__ __forceinline__ kiln_w64 kg_desc_w(unsigned lo) {
  return ((kiln_w64)((1024u >> 4) | (1u << 30)) << 32) | lo;
}
/* a consumer's release of the stage whose empty barrier is bar; MC: on both blocks' */
__device__ __forceinline__ void kg_release(unsigned bar, int rank) {
  kg_bar_arrive(bar);
  if constexpr (MC) kg_bar_arrive_remote(kg_mapa(bar, rank ^ 1));
}
/* n / d for n < 2^31 through d's word dw (kiln__cuda_gemm_div_word: the multiplier in the
 * low half, the shift in the high one): a wide multiply and a shift, where a division took
 * ~20 instructions and a reciprocal's latency (the tile set-up was a fifth of the K = 128
 * updates' warp samples, ncu 2026-11-26) */
__device__ __forceinline__ unsigned kg_div(unsigned n, kiln_w64 dw) {
  return (unsigned)(((unsigned long long)n * (unsigned)dw) >> (31u + (unsigned)(dw >> 32)));
}
/* The tile of work item `item` (its split: item - tile * splits) */
__device__ __forceinline__ long long kg_tile_of(const kiln_args &p, long long item, int splits) {
  return p.w[47] ? (long long)kg_div((unsigned)item, p.w[42]) : item / splits;
}
/* Work item -> (batch, tile row, tile column), tiles in groups of group_m tile rows that
 * walk the tile columns together (the blocks running at once share A's and B's slices in L2) */
__device__ __forceinline__ void kg_item(const kiln_args &p, long long item, int tiles_m, int tiles_n, int group_m,
                                        long long *bi, int *tm, int *tn) {
  const bool fast = p.w[47] != 0;
  const long long per_batch = (long long)tiles_m * tiles_n;
  *bi = fast ? (long long)kg_div((unsigned)item, p.w[43]) : item / per_batch;
  const int pid = (int)(item - *bi * per_batch), per_group = group_m * tiles_n;
  const int group = fast ? (int)kg_div((unsigned)pid, p.w[44]) : pid / per_group;
  const int first_m = group * group_m, r = pid - group * per_group;
  const bool last = tiles_m - first_m < group_m;
  const int gsize = last ? tiles_m - first_m : group_m;
  const int q = fast ? (int)kg_div((unsigned)r, last ? p.w[46] : p.w[45]) : r / gsize;
  *tm = first_m + (r - q * gsize);
  *tn = q;
}

/* the k slices [*kb, *ke) of split `split`: split 0 takes the first k0 = KT - (splits - 1) kper
 * (a few more than the others where the rule asks: its block is then the last to arrive and
 * the others' partials are written under its last slices), split s >= 1 kper after them */
__device__ __forceinline__ void kg_krange(int split, int KT, int splits, int kper, int *kb, int *ke) {
  const int k0 = KT - (splits - 1) * kper;
  *kb = split == 0 ? 0 : k0 + (split - 1) * kper;
  *ke = split == 0 ? k0 : *kb + kper;
}

extern "C" __global__ void __launch_bounds__(NT, 1) kiln_gemm_wgmma(const __grid_constant__ kiln_args p) {
  extern __shared__ unsigned char kg_dyn[];
  /* stages from the first 1024-byte boundary (the swizzle pattern repeats every 1024 bytes
   * and the descriptors assume it starts there); then full[STAGES], empty[STAGES] */
  const unsigned sbase = (kg_smem(kg_dyn) + 1023u) & ~1023u;
  /* TMA_STORE: each consumer's RB * 64 x BN staging of C (BN / CBOX swizzled boxes of 64 rows
   * x CBOX per 64 rows) */
  const unsigned cstage = sbase + STAGES * STAGE_BYTES;
  const unsigned psum = sbase; /* CLUSTER: this block's partial, over the ring */
  const unsigned full0 = cstage + CSTAGE, empty0 = full0 + 8 * STAGES;
  /* PP: turn0 + 8 c = consumer c's turn: its mainloop starts once the other consumer's
   * previous mainloop is through the ring, so its waits are never rounds ahead of a stage */
  const unsigned turn0 = empty0 + 8 * STAGES;
  /* CLUSTER: cl_ready completes a phase when every block of the cluster has its partial of the
   * tile in shared memory, cl_read when every block has read this block's partial */
  const unsigned cl_ready = turn0 + 16, cl_read = cl_ready + 8;
  /* split-K through the workspace: 1 when this block arrived last at the tile's counter (a
   * word of the dynamic shared memory, like every other per-block value here) */
  const unsigned last_flag = cl_read + 8;
  /* STATS: the block's statistics (f32 bits of the largest finite magnitude, the non-finite count) */
  const unsigned stat_smem = last_flag + 8;
  const unsigned bias_smem = (stat_smem + (STATS ? 8 : 0) + 15) & ~15u; /* BIAS_SMEM: 2 x BN x ES bytes */
  /* KP: consumer 1's 64 x BN f32 sums (element i of its thread t at i * 128 + t) */
  const unsigned kp_sums = (bias_smem + 2 * BN * 4 + 15) & ~15u;
  const int tid = (int)threadIdx.x, wg = tid >> 7;
  const long long NB = (long long)p.w[18];
  const int tiles_m = (int)p.w[19], tiles_n = (int)p.w[20], group_m = (int)p.w[41];
  const int KT = (int)p.w[25], splits = (int)p.w[26], kper = (int)p.w[27];
  /* MC: the two blocks of a cluster take tile rows 2 i and 2 i + 1 of the work items' tile row
   * i (with an odd tiles_m the last item's second row lies past M: that block loads zeros
   * into A, shares B, and stores nothing) */
  const int rank = MC ? (int)(blockIdx.x & 1u) : 0, item_rows = MC ? (tiles_m + 1) >> 1 : tiles_m;
  const long long items = NB * item_rows * tiles_n * splits;
  const long long first = MC ? blockIdx.x >> 1 : blockIdx.x, step = MC ? gridDim.x >> 1 : gridDim.x;

  if (tid == 0) {
    kg_prefetch_map(&p.ta);
    kg_prefetch_map(&p.tb);
    if constexpr (TMA_STORE) kg_prefetch_map(&p.tc);
    if ((unsigned)p.w[21]) kg_prefetch_map(&p.tae);
    if ((unsigned)(p.w[21] >> 32)) kg_prefetch_map(&p.tbe);
    for (int s = 0; s < STAGES; s++) {
      kg_bar_init(full0 + 8 * s, 1);
      /* the consumers that read a stage (ping-pong and k pairs: one); MC, both blocks' (either
       * block's producer writes half of B into both) */
      kg_bar_init(empty0 + 8 * s, (PP || KP ? 1 : 2) * (MC ? 2 : 1));
    }
    if (PP) {
      kg_bar_init(turn0, 1);
      kg_bar_init(turn0 + 8, 1);
    }
    if (CLUSTER) { /* one arrival per block of the cluster (= the splits) */
      kg_bar_init(cl_ready, (unsigned)p.w[26]);
      kg_bar_init(cl_read, (unsigned)p.w[26]);
    }
    if (STATS) {
      kg_st_shared(stat_smem, 0u);
      kg_st_shared(stat_smem + 4, 0u);
    }
    kg_fence_bar_init();
  }
  /* the launch's words above and the block's first work item, read and decoded before the
   * barrier below and the grid-dependency wait: the first reads of the argument words miss
   * the constant cache, and their chain in the decode had put the producer's first load ~1.4k
   * cycles after the wait (fc1000 bprop, H100, NOTES step 32); here they overlap the maps'
   * prefetch, the barriers' set-up and the previous kernel's tail (the empty asm makes them
   * happen here, not at their first use) */
  long long tile0 = 0, bi0 = 0;
  int tm0 = 0, tn0 = 0;
  if (first < items) {
    tile0 = kg_tile_of(p, first, splits);
    kg_item(p, tile0, item_rows, tiles_n, group_m, &bi0, &tm0, &tn0);
  }
  asm volatile("" : "+l"(tile0), "+l"(bi0), "+r"(tm0), "+r"(tn0));
  __syncthreads();
  /* every block's barriers are set up before another block of the cluster arrives on them */
  if constexpr (CLUSTER || MC) kg_cluster_sync();
  kg_grid_dep(); /* the barriers and the maps' prefetch above overlap the previous kernel */

  if (wg == 0) {
    /* producer */
    kg_regs_producer();
    if (tid == 0) {
      const int a_bat = (int)p.w[23], b_bat = (int)p.w[24];
      unsigned it = 0;
      for (long long item = first; item < items; item += step) {
        long long bi = bi0, tile = tile0;
        int tm = tm0, tn = tn0;
        if (item != first) {
          tile = kg_tile_of(p, item, splits);
          kg_item(p, tile, item_rows, tiles_n, group_m, &bi, &tm, &tn);
        }
        if constexpr (MC) tm = 2 * tm + rank;
        const int m0 = tm * BM, n0 = tn * BN, ab = a_bat ? (int)bi : 0, bb = b_bat ? (int)bi : 0;
        /* the last tile row (column) of a K-major A (B) with fewer rows than a tile: boxes of
         * its rows, so TMA does not fill a box's worth past the edge; the stage's other rows
         * keep what they held, which reaches only C's rows (columns) past the edge, never stored */
        const unsigned a_edge_bytes = (unsigned)p.w[21], b_edge_bytes = (unsigned)(p.w[21] >> 32);
        const bool a_edge = EDGE && A_KMAJ && a_edge_bytes && tm == tiles_m - 1;
        const bool b_edge = EDGE && B_KMAJ && !MC && b_edge_bytes && tn == tiles_n - 1;
        const unsigned edge_bytes = STAGE_BYTES - (a_edge ? A_BYTES - a_edge_bytes : 0u) -
                                    (b_edge ? B_BYTES - b_edge_bytes : 0u);
        int kb, ke;
        kg_krange((int)(item - tile * splits), KT, splits, kper, &kb, &ke);
        /* the item's slices from maps ma, mb with bytes a stage: called with the maps' constant
         * addresses apart from edge items (a map chosen at run time in every item had cost
         * fc4096 fprop 4 %, 0.0118 -> 0.0123 ms, H100) */
        auto slices = [&](const kg_tmap *ma, const kg_tmap *mb, unsigned bytes) __attribute__((always_inline)) {
          for (int kt = kb; kt < ke; kt++, it++) {
            const unsigned s = it % STAGES, round = it / STAGES;
            if (round > 0) kg_bar_wait(empty0 + 8 * s, (round - 1) & 1);
            const unsigned full = full0 + 8 * s, sa = sbase + s * STAGE_BYTES, sb = sa + A_BYTES;
            kg_bar_expect(full, bytes);
            const int k0 = kt * BK;
            if constexpr (A_KMAJ) {
              kg_tma(sa, ma, k0, m0, ab, full);
            } else {
#pragma unroll
              for (int c = 0; c < BM / 64; c++) kg_tma(sa + c * CHUNK, ma, m0 + 64 * c, k0, ab, full);
            }
            if constexpr (MC && B_KMAJ) { /* this block's half of the rows (the map's box: BN / 2) */
              kg_tma_mc(sb + rank * (BN / 2) * 128, mb, k0, n0 + rank * (BN / 2), bb, full, 3);
            } else if constexpr (MC) {
              /* this block's half of every 64-wide box: k rows [rank BK / 2, (rank + 1) BK / 2) (the
               * map's box: BK / 2 rows; 4 KiB into the chunk, whole 1024-byte swizzle atoms), so the
               * two blocks issue the same bytes whatever the box count (with every other box, one
               * 64-wide box left all of B to rank 0) */
#pragma unroll
              for (int c = 0; c < BN / 64; c++)
                kg_tma_mc(sb + c * CHUNK + rank * (BK / 2) * 128, mb, n0 + 64 * c, k0 + rank * (BK / 2), bb, full, 3);
            } else if constexpr (B_KMAJ) {
              kg_tma_b(sb, mb, k0, n0, bb, full);
            } else {
#pragma unroll
              for (int c = 0; c < BN / 64; c++) kg_tma_b(sb + c * CHUNK, mb, n0 + 64 * c, k0, bb, full);
            }
          }
        };
        if (a_edge || b_edge)
          slices(a_edge ? &p.tae : &p.ta, b_edge ? &p.tbe : &p.tb, edge_bytes);
        else
          slices(&p.ta, &p.tb, STAGE_BYTES);
      }
    }
    /* MC: no block leaves while the other may still arrive on its barriers (the last stages'
     * releases) */
    if constexpr (MC) kg_cluster_sync();
    return;
  }

  /* consumers */
  kg_regs_consumer();
  /* KP1: consumer 0 takes every slice of its 64-row tiles and consumer 1 has none (no sums to
   * exchange, no wait for the other's last slice: fc1000 bprop's k pairs spent ~500 cycles a
   * tile there, NOTES step 32) */
  if (KP1 && wg == 2) {
    /* (MC: the cluster's closing barrier counts every thread, an idle one's too: without it
     * the cluster hangs) */
    if constexpr (MC) kg_cluster_sync();
    return;
  }
  const int cw = wg - 1, ltid = tid & 127, warp = ltid >> 5, lane = tid & 31;
  const bool leader = ltid == 0;
  float *ws = (float *)p.w[28];
  int *counters = (int *)p.w[29];
  const int ct = tid - 128; /* 0 .. 255 over both consumers */
  /* the descriptors' low words of stage 0's A and B at k 0 (kg_desc_lo) */
  const unsigned a_lo0 = kg_desc_lo(sbase, A_KMAJ ? 16u : (unsigned)CHUNK);
  const unsigned b_lo0 = kg_desc_lo(sbase + A_BYTES, B_KMAJ ? 16u : (unsigned)CHUNK);
  unsigned it = 0;
  unsigned stored = 0; /* tiles this consumer stored through TMA: their staging buffer alternates */
  unsigned st = 0u; /* STATS: this thread's largest finite magnitude, over every item (kg_stats) */
  long long local = 0; /* this block's items so far (ping-pong: consumer cw takes the ones of its parity) */
  for (long long item = first; item < items; item += step, local++) {
    const long long tile = item == first ? tile0 : kg_tile_of(p, item, splits);
    const int split = (int)(item - tile * splits);
    int kb, ke;
    kg_krange(split, KT, splits, kper, &kb, &ke);
    if (PP && (local & 1) != cw) { /* the other consumer's item: its slices pass through the ring */
      it += (unsigned)(ke - kb);
      continue;
    }
    if (PP) { /* this consumer's item n = local / 2: after the other's item n - 1 + cw */
      const long long n = local >> 1;
      if (cw == 1)
        kg_bar_wait(turn0 + 8, (unsigned)(n & 1));
      else if (n > 0)
        kg_bar_wait(turn0, (unsigned)((n - 1) & 1));
    }
    long long bi = bi0;
    int tm = tm0, tn = tn0;
    if (item != first) kg_item(p, tile, item_rows, tiles_n, group_m, &bi, &tm, &tn);
    if constexpr (MC) tm = 2 * tm + rank;
    /* BIAS_SMEM: this thread's 4 bytes of the tile's bias: column ct (f32), columns 2 ct and
     * 2 ct + 1 (16-bit; 0 past N) */
    unsigned bias_mine = 0;
    if constexpr (BIAS_SMEM) {
      const ST *bias = (const ST *)p.w[8];
      const long long N = (long long)p.w[3], bs = (long long)p.w[15];
      const int bt = PP ? ltid : ct; /* the thread's place among its tile's consumers */
      if constexpr (TF32) {
        const long long n = (long long)tn * BN + bt;
        if (bt < BN && n < N) bias_mine = kiln_f32_bits(__ldg(bias + n * bs));
      } else if (bt < BN / 2) {
        const long long n = (long long)tn * BN + 2 * bt;
        if (n < N) bias_mine = (unsigned)__ldg(bias + n * bs);
        if (n + 1 < N) bias_mine |= (unsigned)__ldg(bias + (n + 1) * bs) << 16;
      }
    }
    /* BIAS_EARLY (64-row tiles, which stage no bias): the tile's bias read into registers at the
     * item's start, so that its loads land under the mainloop, not in the epilogue's tail (the
     * first group's loads from the epilogue cost fc9216 fprop's 64 x 64 tiles 0.55-0.65 us of a
     * ~29 us launch, H100, bench/NOTES.md step 41); the TMA-store form of the loads where C is
     * staged (kg_bias_group_staged), the bounds-tested one elsewhere */
    float bias_early[BIAS_EARLY ? BN / 32 : 1][8];
    if constexpr (BIAS_EARLY) {
      const long long nbe = (long long)tn * BN + 2 * (lane & 3);
#pragma unroll
      for (int J = 0; J < BN / 32; J++) {
        if constexpr (TMA_STORE)
          kg_bias_group_staged(p, kg_epi_of(p), nbe + 32 * J, bias_early[J]);
        else
          kg_bias_group(p, nbe + 32 * J, bias_early[J]);
      }
    }
    /* EARLY_SR (the host's rule: one item a block, unsplit, staged, at most 128 wide, not k pairs): both rows'
     * random words of every group of this thread (kg_stage_group's `pre`), made while the item's
     * first stage is on its way instead of in the epilogue, the launch's tail */
    kiln_philox4 sr_early[EARLY_SR ? 2 * (BN / 32) : 1];
    if constexpr (EARLY_SR) {
      const long long mre = (long long)tm * BM + cw * 64 + warp * 16 + (lane >> 2);
      const long long nbe = (long long)tn * BN + 2 * (lane & 3);
      const kiln_w64 s0 = kg_sr_ctr(p, bi, mre, nbe), s1 = kg_sr_ctr(p, bi, mre + 8, nbe);
#pragma unroll
      for (int J = 0; J < BN / 32; J++) {
        sr_early[2 * J] = kg_philox_sr(p, s0 + 4 * J);
        sr_early[2 * J + 1] = kg_philox_sr(p, s1 + 4 * J);
      }
    }
    /* the cooperative kernel's accumulators start at the item's first wgmma (scale-d 0: its
     * sums alone), not at zeros moved in (64 instructions a thread and tile: K = 128 updates
     * with SR 2-4 % faster); ping-pong's at zeros (its plain f16 updates were 1.6-4.4 %
     * slower without them; H100, 2026-11-26, NOTES step 24). Only k pairs' consumer 1 can
     * multiply nothing (a one-slice item): then its sums are not passed on */
    float acc[RB * NACC];
#pragma unroll
    for (int rb = 0; rb < RB; rb++) {
      if constexpr (PP) {
#pragma unroll
        for (int i = 0; i < NACC; i++) acc[rb * NACC + i] = 0.0f;
      } else {
        kg_acc_start(acc + rb * NACC);
      }
    }
    unsigned prev = 0;
    bool held = false; /* a stage of this item is held (its wgmma group may be in flight) */
    /* split-K through the workspace: the tile's arrival is counted ARRIVE_EARLY slices
     * before the mainloop's end (the atomic's round trip, ~0.7 us, under the last slices'
     * wgmma instead of after them); it only picks the block that sums (the last to arrive,
     * running the others' items: they arrived), the partials are published by their own
     * count. Only WS_SPLIT kernels compile it: in the others ptxas kept the check (a branch around
     * the atomic) between each slice's wait and its first wgmma, and with EARLY_SR's Philox keys
     * held in uniform registers recomputed its bounds there every slice (some twenty dependent
     * instructions; fc9216 fprop's full epilogue 2-7 % slower with the words early, H100, NOTES
     * step 43); WS_SPLIT && splits == 1 where a split launch fell back to one split */
    constexpr int ARRIVE_EARLY = 4;
    const bool ws_split = WS_SPLIT && splits > 1;
    const int k_arrive = ke - ARRIVE_EARLY > kb ? ke - ARRIVE_EARLY : kb;
    int arrival = 0;
    /* k pairs (KP && !KP1): this consumer's slices are those of its parity in the ring's count
     * (it), so that with an even STAGES each stage always goes to the same consumer, which alone
     * waits on it and releases it and so sees every phase of its full barrier in turn (the other's
     * slices pass untouched: a wait and a release a slice less for each; fc1000 bprop's consumers
     * had spent ~350 cycles on each slice of the other's, NOTES step 30). Where an item's slice
     * count is odd the parities swap from item to item; the tile's sum is the same either way (the
     * even slices' sum plus the odd slices', each in k order, and a + b = b + a) */
    const unsigned it0 = it;
    /* the loop visits this consumer's slices only (k pairs: every second one; KP1: all), the stage
     * and its phase counted as it goes, not a division, a modulo and a skipped iteration a slice:
     * fc1000 bprop's first item with 8 blocks ~410 -> ~340 cycles a slice (H100, NOTES step 32);
     * with 128 blocks dY's 2000-byte rows bound its loads either way */
    constexpr unsigned STEP = KP && !KP1 ? 2u : 1u;
    const unsigned nsl = (unsigned)(ke - kb), j0 = KP && !KP1 ? (unsigned)((int)(it0 & 1u) != cw) : 0u;
    unsigned s = (it0 + j0) % STAGES, ph = ((it0 + j0) / STAGES) & 1u;
    it = it0 + nsl;
    for (unsigned j = j0; j < nsl; j += STEP) {
      kg_bar_wait(full0 + 8 * s, ph);
      /* K-major: rows of 128 bytes, 8-row groups 1024 bytes apart, a KSTEP = +32 bytes (+2 in
       * the descriptor) in the row; MN-major: 64-wide chunks CHUNK bytes apart, k rows of 128
       * bytes, k16 = +2048 bytes (+128) */
      const unsigned so = s * (STAGE_BYTES >> 4);
      kg_wg_fence();
#pragma unroll
      for (int kk = 0; kk < BK / KSTEP; kk++) {
        const kiln_w64 db = kg_desc_w(b_lo0 + so + (B_KMAJ ? 2u : 128u) * kk);
#pragma unroll
        for (int rb = 0; rb < RB; rb++) { /* the 64-row blocks of A this consumer multiplies */
          const int r64 = PP ? rb : KP ? 0 : cw;
          const kiln_w64 da = kg_desc_w(a_lo0 + so + ((A_KMAJ ? 64u * 128u : (unsigned)CHUNK) >> 4) * r64 +
                                        (A_KMAJ ? 2u : 128u) * kk);
          kg_mma(acc + rb * NACC, da, db, PP || kk > 0 || held);
        }
      }
      kg_wg_commit();
      /* the arrival after the slice's wgmma are issued: before them its branch had kept ptxas
       * from moving the slice's descriptor math above the wait (bench/NOTES.md step 43) */
      if (ws_split && ct == 0 && kb + (int)j == k_arrive) arrival = atomicAdd(&counters[tile], 1);
      /* one group stays in flight: the previous slice's group is done, release its stage */
      kg_wg_wait<1>();
      if (held && leader) kg_release(empty0 + 8 * prev, rank);
      prev = s;
      held = true;
      s += STEP;
      if (s >= (unsigned)STAGES) {
        s -= STAGES;
        ph ^= 1u;
      }
    }
    if (PP && leader) kg_bar_arrive(turn0 + 8 * (1 - cw)); /* the other consumer's turn */
    kg_wg_wait<0>();
    if (held && leader) kg_release(empty0 + 8 * prev, rank);
    kg_acc_fence(acc);
    if constexpr (PP) kg_acc_fence(acc + NACC);
    if constexpr (KP && !KP1) {
      /* consumer 1's sums (its parity's slices) to consumer 0, which adds them to its own (or
       * takes them, having held none: a one-slice item of consumer 1's), and alone runs the
       * epilogue of the 64-row tile; the second barrier keeps the next tile's sums from
       * overwriting these before read */
      const bool held1 = ke - kb > 1 || (it0 & 1u) == 1u; /* consumer 1 held a slice */
      if (cw == 1 && held) {
#pragma unroll
        for (int i = 0; i < NACC; i++) kg_st_shared_f32(kp_sums + (unsigned)(i * 128 + ltid) * 4u, acc[i]);
      }
      kg_sync(1, 256);
      if (cw == 0 && held1) {
#pragma unroll
        for (int i = 0; i < NACC; i++) {
          const float x = __uint_as_float(kg_ld_shared(kp_sums + (unsigned)(i * 128 + ltid) * 4u));
          acc[i] = held ? acc[i] + x : x;
        }
      }
      kg_sync(1, 256);
      if (cw == 1) continue;
    }

    if ((CLUSTER || SLICE_SUM) && splits > 1) {
      /* split-K with every block of the tile summing a slice of it (one block per split, one
       * work item per block, all of them resident together): each block publishes its
       * partial, and once all are there sums a slice of the tile over the partials in split
       * order (the bits of the workspace path: the same order from 0) and stores it.
       * CLUSTER: the tile's blocks are one cluster (ranks = splits); the partial goes to the
       * block's shared memory over the ring (idle now: every load of the item has landed,
       * and after this barrier both consumers' wgmma have read their stages), arrivals on
       * every block's cl_ready say it is there. SLICE_SUM (a cooperative launch): the partial
       * goes to the workspace as in the last-block sum, the tile's counter counts the
       * arrivals (0 .. S) and then the blocks done reading (S .. 2 S; the last zeroes it).
       * Units u = 256 J + t of the tile: 32-column group J of consumer thread t's fragment,
       * block s taking [s U / S, (s + 1) U / S) */
      float *part = ws + (size_t)tile * splits * (BM * BN);
      if constexpr (CLUSTER) {
        kg_sync(1, 256);
#pragma unroll
        for (int i = 0; i < NACC; i++) kg_st_shared_f32(psum + (unsigned)(i * 256 + ct) * 4u, acc[i]);
        kg_sync(1, 256);
        if (ct == 0) {
          kg_fence_cluster();
          for (int q = 0; q < splits; q++) kg_bar_arrive_cluster(kg_mapa(cl_ready, q));
        }
        kg_bar_wait_cluster(cl_ready, (unsigned)(local & 1));
      } else {
#pragma unroll
        for (int i = 0; i < NACC; i++) part[(size_t)split * (BM * BN) + i * 256 + ct] = acc[i];
        __threadfence();
        kg_sync(1, 256);
        if (ct == 0) {
          atomicAdd(&counters[tile], 1);
          while (kg_ld_acquire(&counters[tile]) < splits) {
          }
        }
        kg_sync(1, 256);
        __threadfence();
      }
      constexpr int U = (BN / 32) * 256;
      const int u1 = (split + 1) * U / splits;
      for (int u = split * U / splits + ct; u < u1; u += 256) {
        const int J = u >> 8, t = u & 255, tl = t & 31, r0 = ((t & 127) >> 5) * 16 + (tl >> 2);
        float v[16];
#pragma unroll
        for (int k = 0; k < 16; k++) v[k] = 0.0f;
        /* four partials' loads in flight at a time (the sums stay in split order): one at a
         * time, fc1000 fprop's 8 splits took 8 L2 round trips after the mainloop */
#pragma unroll 4
        for (int q = 0; q < splits; q++) {
          float x[16];
          if constexpr (CLUSTER) {
            const unsigned src = kg_mapa(psum, q) + (unsigned)(16 * J * 256 + t) * 4u;
#pragma unroll
            for (int k = 0; k < 16; k++) x[k] = kg_ld_cluster(src + k * 1024);
          } else {
            const float *src = part + (size_t)q * (BM * BN) + 16 * J * 256 + t;
#pragma unroll
            for (int k = 0; k < 16; k++) x[k] = __ldcg(src + k * 256);
          }
#pragma unroll
          for (int k = 0; k < 16; k++) v[k] += x[k];
        }
        const long long n = (long long)tn * BN + 32 * J + 2 * (tl & 3);
        float bv[8] = {};
        if constexpr (HAS_BIAS) kg_bias_group(p, n, bv);
        kg_out_group(p, bi, (long long)tm * BM + (t >> 7) * 64 + r0, n, v, bv, st, stat_smem);
      }
      kg_sync(1, 256); /* this block's reads of the partials are done */
      if (ct == 0) {
        if constexpr (CLUSTER) {
          for (int q = 0; q < splits; q++) kg_bar_arrive_cluster(kg_mapa(cl_read, q));
        } else if (atomicAdd(&counters[tile], 1) == 2 * splits - 1) {
          counters[tile] = 0; /* every block has read: zero again for the next launch */
        }
      }
      continue;
    }
    if (WS_SPLIT && splits > 1) {
      /* split-K through the workspace: the arrival was counted in the mainloop (the low 16
       * bits of the tile's counter, ARRIVE_EARLY slices before its end). A block that is not
       * the last publishes its partial (element i of consumer thread ct at i * 256 + ct) and
       * counts it written (bits 16 and up); the last waits until the others' are written
       * (their blocks are running: they arrived) and adds all partials in split order, its
       * own from the registers: the bits of summing them all from memory, whichever block is
       * last, with one partial less written and read */
      kg_sync(1, 256); /* both consumers' accumulators are final, the last item's flag read */
      if (ct == 0) kg_st_shared(last_flag, (arrival & 0xFFFF) == splits - 1);
      kg_sync(1, 256);
      if (!kg_ld_shared(last_flag)) {
        float *part = ws + (size_t)tile * splits * (BM * BN);
#pragma unroll
        for (int i = 0; i < NACC; i++) part[(size_t)split * (BM * BN) + i * 256 + ct] = acc[i];
        __threadfence();
        kg_sync(1, 256);
        if (ct == 0) atomicAdd(&counters[tile], 1 << 16);
        continue;
      }
      const int r0 = warp * 16 + (lane >> 2);
      const long long m0 = (long long)tm * BM + cw * 64 + r0, nb = (long long)tn * BN + 2 * (lane & 3);
      const kiln_w64 sc0 = SR ? kg_sr_ctr(p, bi, m0, nb) : 0, sc1 = SR ? kg_sr_ctr(p, bi, m0 + 8, nb) : 0;
      /* EARLY_WORDS (64-wide tiles with SR and TMA stores, every fc fprop shape's): the tile's
       * random words (two groups, both rows: 16 registers) while the others' partials are
       * still being written, not in the tail after the wait */
      constexpr bool EARLY_WORDS = SR && TMA_STORE && NACC == 32;
      kiln_philox4 ew[EARLY_WORDS ? 4 : 1];
      if constexpr (EARLY_WORDS) {
#pragma unroll
        for (int J = 0; J < 2; J++) {
          ew[2 * J] = kg_philox_sr(p, sc0 + 4 * J);
          ew[2 * J + 1] = kg_philox_sr(p, sc1 + 4 * J);
        }
      }
      if (ct == 0) {
        while ((kg_ld_acquire(&counters[tile]) >> 16) < splits - 1) {
        }
        counters[tile] = 0; /* every other block is through: zero again for the next launch */
      }
      /* BIAS_SMEM: the tile's bias into this item's buffer (local % 2, as the unsplit tiles':
       * the item before used the other one, and its barriers are passed), read after the
       * barrier. From global memory group by group after each chunk's partials it cost the
       * fc fprop shapes an L2 latency a chunk (~1 us of fc9216 fprop's 33, H100) */
      const unsigned bsm_sum = bias_smem + (unsigned)(local & 1) * (BN * ES);
      if constexpr (BIAS_SMEM) {
        if (ct < BN * ES / 4) kg_st_shared(bsm_sum + (unsigned)ct * 4u, bias_mine);
      }
      kg_sync(1, 256);
      __threadfence();
      /* the sums in split order, RCH elements at a time (the accumulators rotate down by RCH
       * after each chunk, so this chunk's own elements are acc[0 .. RCH - 1] in registers): the
       * RCH loads of one partial are in flight together, so the wait is one L2 latency per
       * partial and chunk, not per element; one chunk for 128-wide tiles, two for 192-wide,
       * four of 32 for 256-wide (64 spill there) (32 at a time cost a 128-wide tile a second
       * latency: ~1.8 us from the others' partial to the store on the H100, against ~0.6 us
       * for an unsplit tile's epilogue) */
      constexpr int RCH = NACC <= 64 ? NACC : NACC == 96 ? 48 : 32;
      const float *own = ws + (size_t)tile * splits * (BM * BN) + ct;
      /* with TMA stores the sums go out as the unsplit tiles' do (kg_stage_words into this
       * consumer's staging, one bulk store); else pair by pair from the registers */
      const unsigned cs = cstage + (cw * CBUFS + stored % CBUFS) * CBUF_BYTES;
      const kg_epi ep = kg_epi_of(p);
      if constexpr (TMA_STORE) {
        if (leader) kg_bulk_wait_read<CBUFS - 1>();
        kg_sync(2 + cw, 128);
      }
      /* 64-wide tiles (32 accumulators) load QB = 4 partials together, then add them in split
       * order: one L2 latency per four partials (fc1000 fprop's last block summed its 4 splits'
       * in ~2.6 us, one partial at a time; gemm-trace, H100, 2026-11-26). Wider tiles load one
       * at a time, as before: beside 128 accumulators four spilled (the 256-wide kernels 1.7x
       * slower), and even the batched loop's form with one spilled a word */
      constexpr int QB = NACC <= 32 ? 4 : 1;
#pragma unroll 1
      for (int i0 = 0; i0 < NACC; i0 += RCH) {
        float v[RCH];
#pragma unroll
        for (int k = 0; k < RCH; k++) v[k] = 0.0f;
        if constexpr (QB == 1) {
          for (int q = 0; q < splits; q++) {
            const float *src = own + (size_t)q * (BM * BN) + i0 * 256;
            float t[RCH];
            if (q == split) {
#pragma unroll
              for (int k = 0; k < RCH; k++) t[k] = acc[k];
            } else {
#pragma unroll
              for (int k = 0; k < RCH; k++) t[k] = __ldcg(src + k * 256);
            }
#pragma unroll
            for (int k = 0; k < RCH; k++) v[k] += t[k];
          }
        } else {
          for (int q0 = 0; q0 < splits; q0 += QB) {
            float t[QB][RCH];
#pragma unroll
            for (int u = 0; u < QB; u++) {
              const int q = q0 + u;
              if (q < splits && q != split) {
                const float *src = own + (size_t)q * (BM * BN) + i0 * 256;
#pragma unroll
                for (int k = 0; k < RCH; k++) t[u][k] = __ldcg(src + k * 256);
              }
            }
#pragma unroll
            for (int u = 0; u < QB; u++) {
              const int q = q0 + u;
              if (q == split) {
#pragma unroll
                for (int k = 0; k < RCH; k++) v[k] += acc[k];
              } else if (q < splits) {
#pragma unroll
                for (int k = 0; k < RCH; k++) v[k] += t[u][k];
              }
            }
          }
        }
#pragma unroll
        for (int i = 0; i < NACC - RCH; i++) acc[i] = acc[i + RCH]; /* the next chunk's own down */
        /* v[16 gi + 4 jj + 2 h + e] is element e of pair jj, row h, in group J = i0 / 16 + gi */
        if constexpr (TMA_STORE) {
#pragma unroll
          for (int gi = 0; gi < RCH / 16; gi++) {
            const int J = i0 / 16 + gi;
            float bv[8] = {};
            if constexpr (BIAS_SMEM)
              kg_bias_group_smem(bsm_sum, J, lane, bv);
            else if constexpr (HAS_BIAS)
              kg_bias_group_staged(p, ep, nb + 32 * J, bv);
            kg_stage_group(p, ep, bi, m0, nb + 32 * J, sc0 + 4 * J, sc1 + 4 * J, v + 16 * gi, bv, cs, r0, J, lane,
                           nullptr, EARLY_WORDS ? ew + 2 * J : nullptr);
          }
          continue;
        }
#pragma unroll
        for (int gi = 0; gi < RCH / 16; gi++) {
          const int J = i0 / 16 + gi;
          float bv[8] = {};
          if constexpr (BIAS_SMEM)
            kg_bias_group_smem(bsm_sum, J, lane, bv);
          else if constexpr (HAS_BIAS)
            kg_bias_group(p, nb + 32 * J, bv);
          kg_out_group(p, bi, m0, nb + 32 * J, v + 16 * gi, bv, st, stat_smem);
        }
      }
      if constexpr (TMA_STORE) {
        kg_stat_staged(p, st, stat_smem, cs, r0, lane, m0, nb);
        kg_fence_async_smem();
        kg_sync(2 + cw, 128);
        if (leader) {
#pragma unroll
          for (int b = 0; b < BN / CBOX; b++)
            kg_tma_store(&p.tc, cs + b * 8192, tn * BN + CBOX * b, tm * BM + cw * 64, (int)bi);
          kg_bulk_commit();
        }
        stored++;
      }
      continue;
    }

    /* epilogue from the accumulators: acc[rb * NACC + 4 j + 2 h + e] is C[m][n] with m = 16 warp
     * + lane / 4 + 8 h of the 64-row block (rb, or this consumer's half), n = 8 j + 2 (lane % 4)
     * + e. It walks the tile 32 columns (j = 4 J .. 4 J + 3, one stochastic-rounding group per
     * row) at a time in a loop that is not unrolled, rotating the next group's accumulators
     * into acc[rb * NACC + 0 .. 15]: the code stays a few KB (fully unrolled, a BN = 256 tile
     * with bias and stochastic rounding was ~9000 instructions run once per tile, and the
     * instruction fetch, not the math, set the epilogue's time) */
    const long long nb = (long long)tn * BN + 2 * (lane & 3);
    /* PP: consumer cw's two buffers, alternating by its own items (local / 2) */
    const unsigned bsm = PP ? bias_smem + (unsigned)(2 * cw + ((local >> 1) & 1)) * (BN * ES)
                            : bias_smem + (unsigned)(local & 1) * (BN * ES);
    if constexpr (BIAS_SMEM && !PP) {
      if (ct < BN * ES / 4) kg_st_shared(bsm + (unsigned)ct * 4u, bias_mine);
      kg_sync(1, 256);
    }
    const int r0 = warp * 16 + (lane >> 2); /* the thread's first row in a 64-row block */
    const long long m0 = (long long)tm * BM + r0;
    /* the staged groups are all unrolled (a rolled group loop moves the next groups'
     * accumulators down: as a loop that cost the plain K=128 updates 19-35 %, and SR ~1.75
     * instructions an element on 256-wide tiles); with stochastic rounding straight-line
     * whatever the values, the rare groups rounded again at the end (SR_STASH). The
     * register stores' groups round pair by pair, each pair's exact path inlined: with SR
     * SR_UNROLL of them unrolled (4: more made the code too big to fetch) */
    constexpr int REG_UNROLL = SR ? SR_UNROLL : BN / 32;
    if constexpr (TMA_STORE) {
      /* into this consumer's staging buffer stored % CBUFS (the store of the tile that used
       * it last has read it: wait_group.read by the thread that issued it, leaving the
       * CBUFS - 1 newer stores in flight, then the warpgroup's barrier), row r of 64-row block rb,
       * 16-byte chunk q of box b at (rb * BN / CBOX + b) * 8192 + r * 128 + (q ^ r % 8) * 16 (the
       * map's 128-byte swizzle; the eight rows of one store instruction land in eight
       * different bank groups), then one thread stores the boxes; TMA clips what lies past
       * M and N */
      const unsigned cs = cstage + (cw * CBUFS + stored % CBUFS) * CBUF_BYTES;
      const kg_epi ep = kg_epi_of(p);
      if (leader) kg_bulk_wait_read<CBUFS - 1>();
      if constexpr (BIAS_SMEM && PP) { /* read after the barrier below */
        if (ltid < BN * ES / 4) kg_st_shared(bsm + (unsigned)ltid * 4u, bias_mine);
      }
      kg_sync(2 + cw, 128);
      /* EARLY_BOXES: each box goes out as soon as its groups are staged (a fence, the
       * warpgroup's barrier, the leader's store; the tile's stores one bulk group, committed
       * at the end), so the stores stream under the rest of the epilogue: bf16 updates 2-4 %
       * faster (H100, NOTES step 26). Not with stochastic rounding, whose straight line the
       * barriers cut (its multi-wave updates 8-15 % slower so), nor with one box a row block;
       * nor for f32 C (tf32: eight boxes a 256-wide row block, no gain measured) */
      constexpr bool EARLY_BOXES = BN / CBOX > 1 && !SR && !TF32;
#pragma unroll
      for (int rb = 0; rb < RB; rb++) {
        float *a = acc + rb * NACC;
        /* each group's bias loads come before its stores (generic loads do not pass them):
         * in the SR loop those of group J + 1 fly while group J is computed and stored (the
         * unrolled form schedules them itself; there, loading ahead spills); both rows'
         * random words come before the group's math and stores */
        float bv[8] = {};
        if constexpr (HAS_BIAS && SR && !BIAS_SMEM && !BIAS_EARLY) kg_bias_group_staged(p, ep, nb, bv);
        const long long mr = m0 + (PP ? rb : cw) * 64;
        const kiln_w64 sc0 = SR ? kg_sr_ctr(p, bi, mr, nb) : 0, sc1 = SR ? kg_sr_ctr(p, bi, mr + 8, nb) : 0;
        /* SR: bit J, group J needs the exact rounding, its values in stash[4 J ..] */
        unsigned rare = 0u;
        float4 stash[SR_STASH ? BN / 8 : 1];
#pragma unroll
        for (int J = 0; J < BN / 32; J++) {
          float bnext[8] = {};
          if constexpr (BIAS_SMEM) {
            kg_bias_group_smem(bsm, J, lane, bv);
          } else if constexpr (BIAS_EARLY) {
#pragma unroll
            for (int i = 0; i < 8; i++) bv[i] = bias_early[J][i];
          } else if constexpr (HAS_BIAS && SR) {
            if (J + 1 < BN / 32) kg_bias_group_staged(p, ep, nb + 32 * (J + 1), bnext);
          } else if constexpr (HAS_BIAS) {
            kg_bias_group_staged(p, ep, nb + 32 * J, bv);
          }
          if (kg_stage_group(p, ep, bi, mr, nb + 32 * J, sc0 + 4 * J, sc1 + 4 * J, a, bv,
                             cs + rb * (BN / CBOX) * 8192, r0, J, lane, SR_STASH ? stash + 4 * J : nullptr,
                             EARLY_SR ? sr_early + 2 * J : nullptr))
            rare |= 1u << J;
#pragma unroll
          for (int i = 0; i < NACC - 16; i++) a[i] = a[i + 16];
#pragma unroll
          for (int i = 0; i < 8; i++) bv[i] = SR ? bnext[i] : bv[i];
          if (EARLY_BOXES && (32 * (J + 1)) % CBOX == 0) { /* box b of row block rb is staged */
            const int b = 32 * (J + 1) / CBOX - 1;
            kg_fence_async_smem();
            kg_sync(2 + cw, 128);
            if (leader)
              kg_tma_store(&p.tc, cs + (rb * (BN / CBOX) + b) * 8192, tn * BN + CBOX * b,
                           tm * BM + (PP ? rb : cw) * 64, (int)bi);
          }
        }
        if constexpr (SR_STASH) {
          if (rare) kg_stage_fix(p, sc0, sc1, stash, cs + rb * (BN / CBOX) * 8192, r0, lane, rare);
        }
        kg_stat_staged(p, st, stat_smem, cs + rb * (BN / CBOX) * 8192, r0, lane, mr, nb);
      }
      if constexpr (!EARLY_BOXES) {
        kg_fence_async_smem();
        kg_sync(2 + cw, 128);
        if (leader) {
#pragma unroll
          for (int rb = 0; rb < RB; rb++)
#pragma unroll
            for (int b = 0; b < BN / CBOX; b++)
              kg_tma_store(&p.tc, cs + (rb * (BN / CBOX) + b) * 8192, tn * BN + CBOX * b,
                           tm * BM + (PP ? rb : cw) * 64, (int)bi);
        }
      }
      if (leader) kg_bulk_commit();
      stored++;
    } else {
#pragma unroll
      for (int rb = 0; rb < RB; rb++) {
        float *a = acc + rb * NACC;
        float bv[8] = {};
        if constexpr (HAS_BIAS && SR && !BIAS_SMEM && !BIAS_EARLY) kg_bias_group(p, nb, bv);
#pragma unroll REG_UNROLL
        for (int J = 0; J < BN / 32; J++) {
          float bnext[8] = {};
          if constexpr (BIAS_SMEM) {
            kg_bias_group_smem(bsm, J, lane, bv);
          } else if constexpr (BIAS_EARLY) {
#pragma unroll
            for (int i = 0; i < 8; i++) bv[i] = bias_early[J][i];
          } else if constexpr (HAS_BIAS && SR) {
            if (J + 1 < BN / 32) kg_bias_group(p, nb + 32 * (J + 1), bnext);
          } else if constexpr (HAS_BIAS) {
            kg_bias_group(p, nb + 32 * J, bv);
          }
          kg_out_group(p, bi, m0 + (PP ? rb : cw) * 64, nb + 32 * J, a, bv, st, stat_smem);
#pragma unroll
          for (int i = 0; i < NACC - 16; i++) a[i] = a[i + 16];
#pragma unroll
          for (int i = 0; i < 8; i++) bv[i] = SR ? bnext[i] : bv[i];
        }
      }
    }
  }
  kg_stat_flush(p, st, stat_smem, ct);
  /* the last stores of C have read the staging before the block's shared memory goes (their
   * writes complete with the kernel, as every other store) */
  if (TMA_STORE && leader) kg_bulk_wait_read<0>();
  /* and the cluster's other blocks have read this block's last partial */
  if (CLUSTER && splits > 1 && ct == 0 && local > 0) kg_bar_wait_cluster(cl_read, (unsigned)((local - 1) & 1));
  if constexpr (MC) kg_cluster_sync(); /* (the producer's) */
}
