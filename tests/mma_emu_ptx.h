/*
 * tests/mma_emu_ptx.h — the emulations of the mma.sync kernel's PTX wrappers
 * (src/cuda/gemm_mma_kernel.cuh, its "kg: PTX wrappers" block: same names and signatures), for the
 * host emulator of tests/gemm_emu.h. The kernel's shared memory is a static array; its
 * address space here is offsets from the first pointer given to kg_smem (plus 16).
 * cp.async is queued per thread and copies in the cp.async.wait_group that covers its group,
 * after every other thread had a turn (a read of a stage before its wait, or a refill before
 * every reader is past the barrier, sees stale bytes). ldmatrix and mma.sync are
 * warp-wide: each lane leaves its address or fragments in its warp's slots, the 32 lanes
 * meet at a warp barrier, each takes what the instruction gives it, and they meet again
 * before the slots are reused. Fragment layouts (g = lane / 4, t = lane % 4):
 * ldmatrix.x4: lane i names row i % 8 of matrix i / 8; register j of lane l holds row g,
 * columns 2t, 2t + 1 of matrix j (.trans: rows 2t, 2t + 1 of column g);
 * mma.m16n8k16 row.col: a0 = A[g][2t..], a1 = A[g + 8][2t..], a2 = A[g][2t + 8..],
 * a3 = A[g + 8][2t + 8..]; b0 = B[2t..][g], b1 = B[2t + 8..][g]; d = D[g][2t], D[g][2t + 1],
 * D[g + 8][2t], D[g + 8][2t + 1].
 */

static const unsigned char *emu_mma_base;

static inline unsigned kg_smem(const void *p)
{
    if (!emu_mma_base) emu_mma_base = (const unsigned char *)p;
    return (unsigned)((const unsigned char *)p - emu_mma_base) + 16u;
}
static inline unsigned char *emu_mma_ptr(unsigned addr) { return (unsigned char *)emu_mma_base + (addr - 16u); }

enum { EMU_CP_QUEUE = 64 };
typedef struct emu_cp_op {
    unsigned dst;
    const void *src;
    int bytes, group;
} emu_cp_op;
static emu_cp_op emu_cpq[EMU_MAX_THREADS][EMU_CP_QUEUE];
static int emu_cpq_n[EMU_MAX_THREADS], emu_cpq_open[EMU_MAX_THREADS];
#define EMU_THREAD_START() (emu_cpq_n[emu.cur] = 0, emu_cpq_open[emu.cur] = 0)
#define EMU_THREAD_END()                                                                           \
    do {                                                                                           \
        if (emu_cpq_n[emu.cur] != 0) emu_fail("cp.async issued and never waited for (wait_group)"); \
    } while (0)
static inline void kg_cp16(unsigned dst, const void *src, int bytes)
{
    if (emu_cpq_n[emu.cur] == EMU_CP_QUEUE) emu_fail("cp.async: more copies in flight than the emulator queues");
    emu_cp_op *op = &emu_cpq[emu.cur][emu_cpq_n[emu.cur]++];
    op->dst = dst;
    op->src = src;
    op->bytes = bytes;
    op->group = emu_cpq_open[emu.cur];
}
static inline void kg_commit(void) { emu_cpq_open[emu.cur]++; }
/* all but the newest N committed groups have landed */
template <int N> static inline void kg_wait(void)
{
    emu_yield();
    const int t = emu.cur, last = emu_cpq_open[t] - N;
    int kept = 0;
    for (int i = 0; i < emu_cpq_n[t]; i++) {
        const emu_cp_op *op = &emu_cpq[t][i];
        if (op->group < last) {
            unsigned char *d = emu_mma_ptr(op->dst);
            memset(d, 0, 16);
            if (op->bytes > 0) memcpy(d, op->src, (size_t)op->bytes);
        } else {
            emu_cpq[t][kept++] = *op;
        }
    }
    emu_cpq_n[t] = kept;
}

static inline int emu_lane(void) { return (int)threadIdx.x & 31; }
static inline int emu_warp(void) { return (int)threadIdx.x >> 5; }

static inline unsigned short emu_h(unsigned addr)
{
    unsigned short h;
    memcpy(&h, emu_mma_ptr(addr), 2);
    return h;
}

static inline void emu_ldsm(unsigned *r, unsigned addr, int trans)
{
    const int w = emu_warp(), l = emu_lane(), g = l >> 2, t = l & 3;
    emu.warp_slot[w][l][0] = addr;
    emu_sync(16 + w, 32);
    for (int j = 0; j < 4; j++) {
        unsigned short e0, e1;
        if (trans) { /* rows 2t and 2t + 1 of matrix j, column g */
            e0 = emu_h((unsigned)emu.warp_slot[w][8 * j + 2 * t][0] + 2u * (unsigned)g);
            e1 = emu_h((unsigned)emu.warp_slot[w][8 * j + 2 * t + 1][0] + 2u * (unsigned)g);
        } else { /* row g of matrix j, columns 2t and 2t + 1 */
            const unsigned row = (unsigned)emu.warp_slot[w][8 * j + g][0];
            e0 = emu_h(row + 4u * (unsigned)t);
            e1 = emu_h(row + 4u * (unsigned)t + 2u);
        }
        r[j] = (unsigned)e0 | ((unsigned)e1 << 16);
    }
    emu_sync(16 + w, 32);
}
static inline void kg_ldsm(unsigned *r, unsigned addr) { emu_ldsm(r, addr, 0); }
static inline void kg_ldsm_t(unsigned *r, unsigned addr) { emu_ldsm(r, addr, 1); }

static inline float emu_half(unsigned word, int hi)
{
    const unsigned short h = (unsigned short)(hi ? word >> 16 : word & 0xFFFFu);
    return BF16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
}

/* d (16 x 8, f32) += a (16 x 16) @ b (16 x 8) */
static inline void kg_mma(float *d, const unsigned *a, const unsigned *b)
{
    const int w = emu_warp(), l = emu_lane(), g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; i++) emu.warp_slot[w][l][i] = a[i];
    emu.warp_slot[w][l][4] = b[0];
    emu.warp_slot[w][l][5] = b[1];
    emu_sync(16 + w, 32);
    for (int q = 0; q < 4; q++) {
        const int row = g + 8 * (q >> 1), col = 2 * t + (q & 1);
        float s = d[q];
        for (int k = 0; k < 16; k++) {
            /* A[row][k]: lane (row % 8) * 4 + (k % 8) / 2, register row / 8 + 2 (k / 8) */
            const float x = emu_half((unsigned)emu.warp_slot[w][(row & 7) * 4 + ((k & 7) >> 1)][(row >> 3) + 2 * (k >> 3)],
                                     k & 1);
            /* B[k][col]: lane col * 4 + (k % 8) / 2, register k / 8 */
            const float y = emu_half((unsigned)emu.warp_slot[w][col * 4 + ((k & 7) >> 1)][4 + (k >> 3)], k & 1);
            s += x * y;
        }
        d[q] = s;
    }
    emu_sync(16 + w, 32);
}

/* redux.sync max and add over the warp: every lane leaves its values in its warp's slots, the
 * 32 meet, each takes the reductions, and they meet again before the slots are reused */
static inline void kg_warp_stat(unsigned &mag, unsigned &bad)
{
    const int w = emu_warp(), l = emu_lane();
    emu.warp_slot[w][l][0] = mag;
    emu.warp_slot[w][l][1] = bad;
    emu_sync(16 + w, 32);
    unsigned m = 0u, b = 0u;
    for (int i = 0; i < 32; i++) {
        const unsigned x = (unsigned)emu.warp_slot[w][i][0];
        m = x > m ? x : m;
        b += (unsigned)emu.warp_slot[w][i][1];
    }
    mag = m;
    bad = b;
    emu_sync(16 + w, 32);
}
