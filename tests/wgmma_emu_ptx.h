/*
 * tests/wgmma_emu_ptx.h — the emulations of the wgmma kernel's PTX wrappers (its "kg: PTX
 * wrappers" block, same names and signatures) and of its generated wgmma instruction
 * (kg_mma, kg_acc_fence). Included in place of those blocks by tests/test_gemm_emu.c,
 * after the kernel's structure constants and kg_tmap; see tests/gemm_emu.h for the model.
 * A tensor map here is the emulator's own: b[0] base address, b[1..3] dims (elements),
 * b[4..5] byte strides of the outer and batch axes, b[6..7] the box (inner, outer), b[8]
 * the element size in bytes.
 */

static inline unsigned kg_smem(const void *p)
{
    return (unsigned)((const unsigned char *)p - emu.smem) + EMU_SMEM_ORIGIN;
}
static inline void kg_bar_init(unsigned bar, unsigned count)
{
    emu_mbar *b = emu_bar(bar, 1);
    b->expected = b->pending = (int)count;
    b->tx = 0;
    b->phase = 0;
    b->used = 1;
}
static inline void kg_bar_expect(unsigned bar, unsigned bytes)
{
    emu_mbar *b = emu_bar(bar, 0);
    b->tx += bytes;
    b->pending--;
    emu_bar_check(b);
}
static inline void kg_bar_arrive(unsigned bar)
{
    emu_mbar *b = emu_bar(bar, 0);
    b->pending--;
    if (b->pending < 0) emu_fail("mbarrier: more arrivals than expected");
    emu_bar_check(b);
}
/* try_wait.parity P succeeds once the phase of parity P has completed */
static inline void kg_bar_wait(unsigned bar, unsigned parity)
{
    emu_mbar *b = emu_bar(bar, 0);
    while ((b->phase & 1u) == (parity & 1u) && !emu_g.deadlock) emu_yield();
}
/* clusters: addresses from mapa carry the block's rank + 1 in bits 24-27 */
static inline void kg_cluster_sync(void) { emu_cluster_sync(); }
static inline unsigned kg_mapa(unsigned addr, int rank)
{
    if (rank < 0 || rank >= emu_g.cluster || addr >= (1u << 24)) emu_fail("mapa: rank outside the cluster");
    return addr | ((unsigned)(rank + 1) << 24);
}
/* a spin on a global counter: the other blocks of the group run before the value is read */
static inline int kg_ld_acquire(const int *p)
{
    emu_yield();
    return *p;
}
static inline float kg_ld_cluster(unsigned addr)
{
    unsigned local;
    emu_state *blk = emu_cluster_block(addr, &local), *self = emu_cur;
    emu_cur = blk; /* emu_ptr checks against that block's shared memory */
    float v;
    memcpy(&v, emu_ptr(local, 4), 4);
    emu_cur = self;
    return v;
}
static inline void kg_ld_shared_f32x2(unsigned addr, float &x, float &y)
{
    if (addr % 8 != 0) emu_fail("ld.shared.v2.f32: address not 8-byte aligned");
    memcpy(&x, emu_ptr(addr, 4), 4);
    memcpy(&y, emu_ptr(addr + 4, 4), 4);
}
static inline void kg_st_shared_f32(unsigned addr, float v) { memcpy(emu_ptr(addr, 4), &v, 4); }
static inline void kg_st_shared_f32x2(unsigned addr, float x, float y)
{
    if (addr % 8u != 0) emu_fail("st.shared.v2.f32: an address not 8-byte aligned");
    memcpy(emu_ptr(addr, 4), &x, 4);
    memcpy(emu_ptr(addr + 4u, 4), &y, 4);
}
static inline void kg_fence_cluster(void) {}
static inline void kg_bar_arrive_cluster(unsigned remote)
{
    unsigned local;
    emu_state *blk = emu_cluster_block(remote, &local);
    emu_mbar *b = emu_bar_of(blk, local, 0);
    b->pending--;
    if (b->pending < 0) emu_fail("mbarrier: more arrivals than expected (cluster)");
    emu_bar_check(b);
}
static inline void kg_bar_wait_cluster(unsigned bar, unsigned parity) { kg_bar_wait(bar, parity); }
static inline void kg_bar_arrive_remote(unsigned remote) { kg_bar_arrive_cluster(remote); }
static inline kiln_w64 kg_mul_wide(unsigned a, unsigned b) { return (kiln_w64)a * b; }
/* Copies the box at (c0, c1, c2) of map between global memory and shared memory at smem
 * (128-byte swizzled rows of 128 bytes): a load zero-fills what lies outside the tensor, a
 * store skips it. Returns the box's bytes. */
static inline long long emu_box(const kg_tmap *map, unsigned smem, int c0, int c1, int c2, int store)
{
    unsigned char *base = (unsigned char *)map->b[0];
    const long long d0 = (long long)map->b[1], d1 = (long long)map->b[2], d2 = (long long)map->b[3];
    const long long s1 = (long long)map->b[4], s2 = (long long)map->b[5];
    const int bi = (int)map->b[6], bo = (int)map->b[7], es = (int)map->b[8];
    if (bi * es != 128 || (smem & 1023u) != 0) emu_fail("TMA: box rows must be 128 bytes at a 1024-byte boundary");
    for (int o = 0; o < bo; o++)
        for (int i = 0; i < bi; i++) {
            const long long x = c0 + i, y = c1 + o, z = c2;
            /* an H100 TMA store writes whole 16-byte chunks: past the inner extent up to the
             * next 16-byte boundary (seen on the H100 by test_dot, 2026-11-23; also
             * triton-lang/triton issue 11583); loads clip (and zero-fill) per element */
            const long long d0_eff = store ? ((d0 * es + 15) / 16) * 16 / es : d0;
            const int inside = x >= 0 && x < d0_eff && y >= 0 && y < d1 && z >= 0 && z < d2;
            unsigned char *s = emu_ptr(emu_swz(smem + (unsigned)(o * 128 + i * es)), (unsigned)es);
            unsigned char *g = base + z * s2 + y * s1 + x * es;
            if (store) {
                if (inside) memcpy(g, s, (size_t)es);
            } else {
                unsigned char v[4] = {0, 0, 0, 0};
                if (inside) memcpy(v, g, (size_t)es);
                memcpy(s, v, (size_t)es);
            }
        }
    return (long long)bi * bo * es;
}
static inline void kg_tma(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar)
{
    const long long bytes = emu_box(map, dst, c0, c1, c2, 0);
    emu_mbar *b = emu_bar(bar, 0);
    b->tx -= bytes;
    emu_bar_check(b);
}
/* B's boxes (BHINT: with an L2 policy, which changes no data) */
static inline void kg_tma_b(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar)
{
    kg_tma(dst, map, c0, c1, c2, bar);
}
/* multicast: the box into every block of mask at dst, each block's bar completing its bytes
 * (the partner's may land before that block's own expect_tx: the phase waits for both) */
static inline void kg_tma_mc(unsigned dst, const kg_tmap *map, int c0, int c1, int c2, unsigned bar,
                             unsigned short mask)
{
    if (mask == 0 || (mask >> emu_g.cluster) != 0) emu_fail("TMA multicast: the mask names a block outside the cluster");
    emu_state *self = emu_cur;
    for (int r = 0; r < emu_g.cluster; r++) {
        if (!((mask >> r) & 1)) continue;
        unsigned local;
        emu_cur = emu_cluster_block(kg_mapa(dst, r), &local);
        const long long bytes = emu_box(map, local, c0, c1, c2, 0);
        emu_mbar *b = emu_bar(bar, 0);
        b->tx -= bytes;
        emu_bar_check(b);
        emu_cur = self;
    }
}
/* TMA stores read the staging at some time before the cp.async.bulk.wait_group.read that
 * covers their bulk group: each is queued with its group and copied in that wait, after the
 * other threads had a turn (a staging buffer written again before the wait shows in C) */
enum { EMU_STORE_QUEUE = 64 };
typedef struct emu_store_op {
    const kg_tmap *map;
    unsigned src;
    int c0, c1, c2, group;
    unsigned long long sum; /* of the box's shared memory at the issue */
} emu_store_op;
/* FNV-1a of the shared memory a store's box reads (its rows of 128 bytes) */
static inline unsigned long long emu_box_sum(const kg_tmap *map, unsigned src)
{
    const unsigned bytes = (unsigned)map->b[7] * 128u;
    const unsigned char *s = emu_ptr(src, bytes);
    unsigned long long h = 1469598103934665603ull;
    for (unsigned i = 0; i < bytes; i++) h = (h ^ s[i]) * 1099511628211ull;
    return h;
}
static emu_store_op emu_stq[EMU_MAX_CLUSTER][EMU_MAX_THREADS][EMU_STORE_QUEUE];
static int emu_stq_n[EMU_MAX_CLUSTER][EMU_MAX_THREADS], emu_stq_open[EMU_MAX_CLUSTER][EMU_MAX_THREADS];
static inline void kg_tma_store(const kg_tmap *map, unsigned src, int c0, int c1, int c2)
{
    const int b = (int)(emu_cur - emu_blocks), t = emu.cur;
    if (emu_stq_n[b][t] == EMU_STORE_QUEUE) emu_fail("TMA store: more in flight than the emulator queues");
    emu_store_op *op = &emu_stq[b][t][emu_stq_n[b][t]++];
    op->map = map;
    op->src = src;
    op->c0 = c0, op->c1 = c1, op->c2 = c2;
    op->group = emu_stq_open[b][t];
    op->sum = emu_box_sum(map, src);
}
/* wgmma is asynchronous: what kg_mma issues reads shared memory at some time before the
 * wgmma.wait_group that covers its group. Each call is queued with its group (kg_mma) and the
 * groups a wait covers run in kg_wg_wait, after every other thread had a turn: a stage
 * released before the wgmma that read it were waited for, or refilled by a producer that did
 * not wait for every consumer reading it (a multicast partner's too), gives wrong sums here */
enum { EMU_MMA_QUEUE = 32 };
typedef struct emu_mma_op {
    float *d;
    kiln_w64 da, db;
    int scale_d; /* 0: d's old values not read (the item's first wgmma) */
    int group;
} emu_mma_op;
static emu_mma_op emu_mmaq[EMU_MAX_CLUSTER][EMU_MAX_THREADS][EMU_MMA_QUEUE];
static int emu_mmaq_n[EMU_MAX_CLUSTER][EMU_MAX_THREADS], emu_mmaq_open[EMU_MAX_CLUSTER][EMU_MAX_THREADS];
static inline void emu_mma_now(float *d, kiln_w64 da, kiln_w64 db, int scale_d);
static inline int emu_block_rank(void) { return (int)(emu_cur - emu_blocks); }
static inline void emu_mmaq_reset(void)
{
    emu_mmaq_n[emu_block_rank()][emu.cur] = 0;
    emu_mmaq_open[emu_block_rank()][emu.cur] = 0;
    emu_stq_n[emu_block_rank()][emu.cur] = 0;
    emu_stq_open[emu_block_rank()][emu.cur] = 0;
}
static inline void emu_mmaq_end(void)
{
    if (emu_mmaq_n[emu_block_rank()][emu.cur] != 0) emu_fail("wgmma issued and never waited for (wgmma.wait_group)");
    if (emu_stq_n[emu_block_rank()][emu.cur] != 0)
        emu_fail("TMA store issued and never waited for (cp.async.bulk.wait_group.read)");
}
#define EMU_THREAD_START() emu_mmaq_reset()
#define EMU_THREAD_END() emu_mmaq_end()
static inline void kg_wg_fence(void) {}
static inline void kg_wg_commit(void) { emu_mmaq_open[emu_block_rank()][emu.cur]++; }
/* all but the newest N committed groups done */
template <int N> static inline void kg_wg_wait(void)
{
    emu_yield();
    const int b = emu_block_rank(), t = emu.cur, last = emu_mmaq_open[b][t] - N;
    emu_mma_op *q = emu_mmaq[b][t];
    int n = emu_mmaq_n[b][t], kept = 0;
    for (int i = 0; i < n; i++) {
        if (q[i].group < last)
            emu_mma_now(q[i].d, q[i].da, q[i].db, q[i].scale_d);
        else
            q[kept++] = q[i];
    }
    emu_mmaq_n[b][t] = kept;
}
static inline void kg_fence_bar_init(void) {}
static inline void kg_regs_producer(void) {}
static inline void kg_regs_consumer(void) {}
static inline void kg_sync(int id, int n) { emu_sync(id, n); }
static inline unsigned kg_ld_shared(unsigned addr)
{
    unsigned v;
    memcpy(&v, emu_ptr(addr, 4), 4);
    return v;
}
static inline void kg_st_shared(unsigned addr, unsigned v) { memcpy(emu_ptr(addr, 4), &v, 4); }
static inline void kg_red_shared_max(unsigned addr, unsigned v)
{
    const unsigned o = kg_ld_shared(addr);
    kg_st_shared(addr, o > v ? o : v);
}
static inline void kg_red_shared_add(unsigned addr, unsigned v) { kg_st_shared(addr, kg_ld_shared(addr) + v); }
static inline unsigned kg_max_u16x2(unsigned a, unsigned b)
{
    const unsigned lo = (a & 0xFFFFu) > (b & 0xFFFFu) ? a & 0xFFFFu : b & 0xFFFFu;
    return ((a >> 16) > (b >> 16) ? a & 0xFFFF0000u : b & 0xFFFF0000u) | lo;
}
static inline void kg_fence_async_smem(void) {}
static inline void kg_bulk_commit(void) { emu_stq_open[emu_cur - emu_blocks][emu.cur]++; }
/* this thread's bulk groups but the newest PENDING have read their staging */
template <int PENDING> static inline void kg_bulk_wait_read(void)
{
    emu_yield();
    const int b = (int)(emu_cur - emu_blocks), t = emu.cur, last = emu_stq_open[b][t] - PENDING;
    int kept = 0;
    for (int i = 0; i < emu_stq_n[b][t]; i++) {
        const emu_store_op *op = &emu_stq[b][t][i];
        if (op->group < last) {
            /* the hardware reads the box at some time between the issue and this wait: shared
             * memory written after the issue makes the stored values a race */
            if (emu_box_sum(op->map, op->src) != op->sum) emu_fail("TMA store: its box of shared memory changed after the store was issued");
            (void)emu_box(op->map, op->src, op->c0, op->c1, op->c2, 1);
        }
        else
            emu_stq[b][t][kept++] = *op;
    }
    emu_stq_n[b][t] = kept;
}
static inline void kg_prefetch_map(const kg_tmap *) {}
/* the paired conversions, element by element (NaN bits aside, which kg_pack_rn fixes for bf16) */
static inline unsigned kg_cvt_f16x2(float lo, float hi)
{
    return (unsigned)kiln_f32_to_f16_rn(lo) | ((unsigned)kiln_f32_to_f16_rn(hi) << 16);
}
static inline unsigned kg_cvt_rz_f16x2(float lo, float hi)
{
    return (unsigned)kiln_f32_to_f16_rz(lo) | ((unsigned)kiln_f32_to_f16_rz(hi) << 16);
}
/* x * s rounded toward zero: the product in double (exact for a power of two s), to f32 by
 * nearest and one step back toward zero where that went past it */
static inline float kg_mul_rz(float x, float s)
{
    const double d = (double)x * (double)s;
    float f = (float)d;
    if (fabs((double)f) > fabs(d)) f = nextafterf(f, 0.0f);
    return f;
}
/* max.s16x2 w, 0: each half read as a signed 16-bit integer, a negative one (sign set) made 0 */
static inline unsigned kg_relu_h2(unsigned w)
{
    const unsigned lo = (w & 0x8000u) ? 0u : (w & 0xFFFFu), hi = (w & 0x80000000u) ? 0u : (w >> 16);
    return lo | (hi << 16);
}
/* cvt.rn.bf16x2.f32: a NaN becomes the canonical 0x7FFF, whatever its payload */
static inline unsigned kg_cvt_bf16x2(float lo, float hi)
{
    const unsigned l = lo != lo ? 0x7FFFu : (unsigned)kiln_f32_to_bf16_rn(lo);
    const unsigned h = hi != hi ? 0x7FFFu : (unsigned)kiln_f32_to_bf16_rn(hi);
    return l | (h << 16);
}

/* ---- the wgmma instruction ------------------------------------------------------------- */

/* Element (r, k) of an operand in shared memory through descriptor desc: K-major (rows of
 * 128 bytes, 8-row groups SBO apart) or MN-major (64-wide chunks LBO apart, k rows of 128
 * bytes, 8-k groups SBO apart), 128-byte swizzle on the address. */
static inline float emu_operand(kiln_w64 desc, int kmajor, int r, int k)
{
    const unsigned start = (unsigned)(desc & 0x3FFF) << 4, lbo = (unsigned)((desc >> 16) & 0x3FFF) << 4;
    const unsigned sbo = (unsigned)((desc >> 32) & 0x3FFF) << 4;
    if (((desc >> 62) & 3) != 1) emu_fail("wgmma descriptor: not the 128-byte swizzle");
    if (TF32 && !kmajor) emu_fail("wgmma: tf32 operands must be K-major");
    unsigned a = kmajor ? start + (unsigned)(r / 8) * sbo + (unsigned)(r % 8) * 128 + (unsigned)(k * ES)
                        : start + (unsigned)(r / 64) * lbo + (unsigned)(k / 8) * sbo + (unsigned)(k % 8) * 128 +
                              (unsigned)((r % 64) * ES);
    if (TF32) { /* the tensor cores read the top 19 bits of each f32 */
        unsigned u;
        memcpy(&u, emu_ptr(emu_swz(a), 4), 4);
        u &= 0xFFFFE000u;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    unsigned short h;
    memcpy(&h, emu_ptr(emu_swz(a), 2), 2);
    return BF16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
}

/* issued: queued in the thread's open group (run by the kg_wg_wait that covers it) */
static inline void kg_mma(float *d, kiln_w64 da, kiln_w64 db, int scale_d)
{
    const int b = emu_block_rank(), t = emu.cur;
    if (emu_mmaq_n[b][t] == EMU_MMA_QUEUE) emu_fail("wgmma: more calls in flight than the emulator queues");
    emu_mma_op *op = &emu_mmaq[b][t][emu_mmaq_n[b][t]++];
    op->d = d;
    op->da = da;
    op->db = db;
    op->scale_d = scale_d;
    op->group = emu_mmaq_open[b][t];
}
/* d (this thread's part of the 64 x BN f32 fragment) = A (64 x KSTEP) @ B (KSTEP x BN) + (scale_d ?
 * d : 0) */
static inline void emu_mma_now(float *d, kiln_w64 da, kiln_w64 db, int scale_d)
{
    const int ltid = (int)threadIdx.x & 127, warp = ltid >> 5, lane = ltid & 31;
    for (int j = 0; j < BN / 8; j++)
        for (int h = 0; h < 2; h++)
            for (int e = 0; e < 2; e++) {
                const int row = warp * 16 + (lane >> 2) + 8 * h, col = 8 * j + 2 * (lane & 3) + e;
                float s = scale_d ? d[4 * j + 2 * h + e] : 0.0f;
                for (int k = 0; k < KSTEP; k++) s += emu_operand(da, A_KMAJ, row, k) * emu_operand(db, B_KMAJ, col, k);
                d[4 * j + 2 * h + e] = s;
            }
}
/* the item's accumulators before its first wgmma: NaNs here, which a first wgmma that read
 * them (scale-d 1) or sums passed on without one would carry into C */
static inline void kg_acc_start(float *d)
{
    for (int i = 0; i < BN / 2; i++) d[i] = NAN;
}
static inline void kg_acc_fence(float *d) { (void)d; }
