/*
 * tests/gemm_emu.h — a host emulator for kiln's GEMM kernels: the wgmma kernel
 * (src/cuda/gemm_wgmma_kernel.cuh), so that its logic (the TMA boxes and their 128-byte
 * swizzle, the wgmma descriptors, the mbarrier ring and its phases, the persistent item
 * loop, split-K, the TMA-store epilogue) is checked on any machine with a C++ compiler, and
 * the FFMA kernel (src/cuda/gemm_ffma_kernel.cuh: plain CUDA C, its barriers and tiles).
 * tests/test_gemm_emu.c compiles a kernel's generated source as C++ with this header in
 * front, the wgmma kernel's "kg: PTX wrappers" and "kg: generated wgmma" blocks replaced by
 * tests/wgmma_emu_ptx.h, and tests/gemm_emu_launch.h behind it.
 *
 * Model: the clusters of the grid run one after another (a block is a cluster of one
 * unless the launch says otherwise); the threads of a cluster's blocks (384 each for
 * wgmma, 256 for FFMA) are coroutines (ucontext) that switch only where the kernel waits
 * (mbarrier waits, named and cluster barriers), so every interleaving the kernel's
 * synchronization allows is one it may get here, and a missing wait shows as a wrong
 * result or a deadlock report. Each block has its own shared memory (the dynamic, and the
 * static __shared__ variables swapped in around its turn) and barriers; a cluster address
 * (mapa) carries the block's rank + 1 in bits 24-27. TMA loads complete
 * when issued (as early as they can: the mbarrier transaction count still runs, expect_tx
 * then the boxes, a multicast's on every block of its mask); what reads shared memory
 * asynchronously reads it as late as it may: wgmma in the wgmma.wait_group that covers its
 * group, a TMA store in the bulk wait that covers its group, the mma.sync kernel's cp.async
 * writes in its cp.async.wait_group, each after the other threads had a turn.
 * Shared-memory addresses are offsets from EMU_SMEM_ORIGIN; the 128-byte swizzle
 * XORs address bits 4-6 with bits 7-9, as the hardware does on absolute addresses. wgmma:
 * each thread computes its own fragment (rows 16 warp + lane / 4 (+ 8), columns
 * 8 j + 2 (lane % 4) (+ 1)) from the descriptors. Not modelled: the hardware's timing,
 * memory-ordering subtleties between proxies (fences are no-ops), register limits.
 */
#ifndef KILN_TESTS_GEMM_EMU_H
#define KILN_TESTS_GEMM_EMU_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "core/numeric.h"

/* ---- CUDA C spellings on the host ------------------------------------------------------ */

#define __device__
#define __global__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(a, b)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
/* a kernel's static shared variables: one copy in the section emu_shared, which the launch
 * (gemm_emu_launch.h) gives each block that runs together a copy of, swapped in and out
 * around the block's turn in every sweep */
#define __shared__ static __attribute__((section("emu_shared")))

typedef unsigned long long kiln_w64;

struct alignas(8) float2 {
    float x, y;
};
static inline float2 make_float2(float x, float y) { return float2{x, y}; }
struct alignas(16) float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w) { return float4{x, y, z, w}; }

struct emu_dim3 {
    unsigned x, y, z;
};

/* ---- the block being run ----------------------------------------------------------------- */

#define EMU_MAX_THREADS 384
#define EMU_MAX_CLUSTER 16 /* blocks run together: a cluster, or the splits of a slice-summed tile */
#define EMU_SMEM_ORIGIN 16u /* the first dynamic shared byte's address (not 1024-aligned) */

struct emu_mbar {
    unsigned addr;
    int used;
    int expected, pending;
    long long tx;
    unsigned phase;
};

struct emu_state {
    unsigned char *smem; /* dynamic shared memory: address a is smem[a - EMU_SMEM_ORIGIN] */
    unsigned char *sshared; /* the block's copy of the static shared variables (section emu_shared) */
    size_t smem_bytes;
    emu_mbar bars[64];
    int nbars;
    int bar_arrived[32]; /* named barriers 0-15; 16 + w: warp w's lanes (warp-wide instructions) */
    unsigned bar_gen[32];
    unsigned long long warp_slot[EMU_MAX_THREADS / 32][32][6]; /* what each lane brings to one */
    ucontext_t sched;
    ucontext_t ctx[EMU_MAX_THREADS];
    char *stacks;
    int done[EMU_MAX_THREADS];
    int nthreads;
    int cur;
    emu_dim3 block_idx, grid_dim, thread_idx, block_dim;
};

/* the blocks of the cluster being run; emu is the one whose thread runs now */
static emu_state emu_blocks[EMU_MAX_CLUSTER];
static emu_state *emu_cur = &emu_blocks[0];
#define emu (*emu_cur)

/* what the cluster's blocks share */
static struct emu_global {
    int cluster;    /* blocks per cluster */
    long long idle; /* yields since the last change of any barrier: a deadlock when it grows */
    int deadlock;
    char error[256];
    int csync_arrived; /* barrier.cluster: arrivals and generation */
    unsigned csync_gen;
} emu_g;

#define threadIdx (emu.thread_idx)
#define blockIdx (emu.block_idx)
#define gridDim (emu.grid_dim)
#define blockDim (emu.block_dim)

static void emu_fail(const char *msg)
{
    if (!emu_g.error[0]) snprintf(emu_g.error, sizeof emu_g.error, "%s", msg);
}

static unsigned char *emu_ptr(unsigned addr, unsigned bytes)
{
    if (addr < EMU_SMEM_ORIGIN || addr - EMU_SMEM_ORIGIN + bytes > emu.smem_bytes) {
        char m[128];
        snprintf(m, sizeof m, "shared-memory access out of bounds: address %u, %u bytes", addr, bytes);
        emu_fail(m);
        static unsigned char sink[64];
        return sink;
    }
    return emu.smem + (addr - EMU_SMEM_ORIGIN);
}

/* 128-byte swizzle of a shared-memory address */
static unsigned emu_swz(unsigned a) { return a ^ (((a >> 7) & 7u) << 4); }

static void emu_progress(void) { emu_g.idle = 0; }

/* switch back to the scheduler (a waiting thread) */
static void emu_yield(void)
{
    if (++emu_g.idle > 4000000LL) {
        emu_g.deadlock = 1;
        emu_fail("deadlock: every thread waits");
    }
    swapcontext(&emu.ctx[emu.cur], &emu.sched);
}

/* the mbarrier at addr of block blk (its shared memory) */
static emu_mbar *emu_bar_of(emu_state *blk, unsigned addr, int create)
{
    for (int i = 0; i < blk->nbars; i++)
        if (blk->bars[i].addr == addr) return &blk->bars[i];
    if (!create || blk->nbars == 64) {
        emu_fail("mbarrier used before mbarrier.init");
        static emu_mbar dummy;
        return &dummy;
    }
    emu_mbar *b = &blk->bars[blk->nbars++];
    memset(b, 0, sizeof *b);
    b->addr = addr;
    return b;
}

static emu_mbar *emu_bar(unsigned addr, int create) { return emu_bar_of(emu_cur, addr, create); }

/* the block and local address of a shared::cluster address (mapa's: rank + 1 in bits 24-27) */
static emu_state *emu_cluster_block(unsigned addr, unsigned *local)
{
    const unsigned r = addr >> 24;
    *local = addr & 0xFFFFFFu;
    if (r == 0 || (int)r > emu_g.cluster) {
        emu_fail("shared::cluster address without a block rank of the cluster (mapa)");
        return emu_cur;
    }
    return &emu_blocks[r - 1];
}

/* barrier.cluster: every thread of every block of the cluster */
static void emu_cluster_sync(void)
{
    unsigned g = emu_g.csync_gen;
    if (++emu_g.csync_arrived == emu_g.cluster * emu.nthreads) {
        emu_g.csync_arrived = 0;
        emu_g.csync_gen++;
        emu_progress();
        return;
    }
    while (emu_g.csync_gen == g && !emu_g.deadlock) emu_yield();
}

static void emu_bar_check(emu_mbar *b)
{
    if (b->pending == 0 && b->tx == 0) {
        b->phase ^= 1u;
        b->pending = b->expected;
        emu_progress();
    }
}

/* barrier id among n threads (bar.sync; __syncthreads is id 0 among all) */
static void emu_sync(int id, int n)
{
    unsigned g = emu.bar_gen[id];
    if (++emu.bar_arrived[id] == n) {
        emu.bar_arrived[id] = 0;
        emu.bar_gen[id]++;
        emu_progress();
        return;
    }
    while (emu.bar_gen[id] == g && !emu_g.deadlock) emu_yield();
}

/* ---- CUDA built-ins ------------------------------------------------------------------------ */

static inline void __syncthreads(void) { emu_sync(0, emu.nthreads); }
static inline void __threadfence(void) {}
/* atomicAdd on int, unsigned and unsigned long long */
template <class T> static inline T atomicAdd(T *p, T v)
{
    T o = *p;
    *p = o + v;
    emu_progress();
    return o;
}
static inline unsigned atomicMax(unsigned *p, unsigned v)
{
    unsigned o = *p;
    *p = o > v ? o : v;
    emu_progress();
    return o;
}
static inline float __ldcg(const float *p) { return *p; }
static inline int __ldcg(const int *p) { return *p; }
/* a spinning thread's pause: back to the scheduler (another block's thread runs) */
static inline void __nanosleep(unsigned) { emu_yield(); }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
/* PTX prmt.b32 (default mode): byte i of the result is byte (s >> 4 i) & 7 of {b, a} (a the
 * low word), or that byte's sign bit replicated where bit 3 of the nibble is set */
static inline unsigned __byte_perm(unsigned a, unsigned b, unsigned s)
{
    const unsigned long long x = (unsigned long long)b << 32 | a;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned nib = (s >> (4 * i)) & 15u, byte = (unsigned)(x >> (8 * (nib & 7u))) & 0xFFu;
        r |= ((nib & 8u) ? ((byte & 0x80u) ? 0xFFu : 0u) : byte) << (8 * i);
    }
    return r;
}
template <class T> static inline T __ldg(const T *p) { return *p; }
static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline double __longlong_as_double(long long x)
{
    double d;
    memcpy(&d, &x, 8);
    return d;
}
static inline float kiln_h2f(unsigned short h) { return kiln_f16_to_f32(h); }
static inline unsigned short kiln_f2h(float f) { return kiln_f32_to_f16_rn(f); }
static inline float kiln_bf2f(unsigned short h) { return kiln_bf16_to_f32(h); }
static inline unsigned short kiln_f16_sr13_fast(float x, unsigned bits)
{
    const unsigned u = kiln_f32_bits(x);
    if (kiln_f16_sr_is_normal(u)) return kiln_f32_to_f16_sr_normal(u, bits);
    if ((u << 1) == 0u) return (unsigned short)(u >> 16); /* +-0, as the CUDA prelude */
    return kiln_f32_to_f16_sr13(x, bits);
}

#endif /* KILN_TESTS_GEMM_EMU_H */
