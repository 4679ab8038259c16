/*
 * tools/ring-rate.cu - how fast one SM's TMA ring runs: a producer thread loading k slices by
 * TMA into a ring of stages, one or two consumer warpgroups waiting on each slice, multiplying
 * it with four m64n64k16 wgmma (or not), and releasing it. A diagnostic for kernel work on a GPU
 * machine (sm_90a), not part of the library or of any test.
 *
 *   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o ring-rate tools/ring-rate.cu -lcuda
 *   ./ring-rate                      the sweep below with the general kernel (`ring`)
 *   ./ring-rate --tight [--a-inner 1000] [--slices N]
 *                                    the tight kernels (`ring_tight`): ring depth and consumers
 *                                    at compile time, no stamps; what the loads alone allow
 *   ./ring-rate --stages S --consumers C --mma 0|1 --early 0|1 --load-a 0|1 --blocks B
 *               [--poll1 1] [--wait 0|1|2] [--delay CYCLES] [--no-release 1|2] [--trace]
 *                                    one case of the general kernel, with block 0's stamps
 *
 * The loads are those of kiln's 64 x 64 tiles on fc1000 bprop (bench/NOTES.md steps 30-31): A is
 * 128 x 1024 f16 (--a-inner 1000: 128 x 1000, rows 2000 bytes apart, as fc1000 bprop's dY),
 * K-major, a box of 64 rows by 64 k; B is 1024 x 4096 f16, MN-major, a box of 64 k rows by 64
 * columns; 128-byte swizzle; 16 KiB a slice. Block b takes tile row b % 2 and tile column
 * b / 2 % 64, as kiln's 128 blocks do. Each case prints the block's clock64 span from the
 * producer's first load to the last consumer's release, per slice, and the launch's time
 * between events (a median of 20, launch overhead included); the tight kernels also the cycles
 * to consumer 0's first full stage and the pace a slice after it.
 *
 * General kernel's cases: the ring's stages; one consumer taking every slice or two taking
 * alternate ones (ring position parity, kiln's k pairs); wgmma or none; a stage released once
 * the consumer's next slice is issued and its previous group done (wait_group 1, kiln's) or as
 * soon as its own group is done (wait_group 0); A and B loaded or B alone; 1 block or 128. Its
 * loop branches on run-time options and stamps each slice: that costs ~250 cycles a slice by
 * itself (~550 more with the run-time divisions it first had), so its figures bound the loop,
 * not the loads; the tight kernels are the measure of the loads. The tight variants: two producer warps (A's box from
 * one, B's from the other) and A as two 64-byte-row boxes (64-byte swizzle; descriptors left
 * as they are, a timing of the loads only); consumers that only wait and release (none);
 * each tile column starting its k slices elsewhere (tightR); and clusters of two blocks
 * (ring_mc): B shared by multicast with the partner's stage released by a remote arrive at the
 * cluster's release scope (mcastB), relaxed (mcastR) or at the default CTA scope (mcastD,
 * kiln's), the cluster launch alone with no multicast (clustr), or clusters of two tile
 * columns sharing A instead (mcastA, default-scope release); and A loaded by the producer
 * warpgroup's threads through 16-byte cp.async instead of a TMA box (cpasyA).
 *
 * Measured on an H100 SXM (2026-11-27, NOTES step 31): the tight ring runs ~290-310 cycles a
 * 16 KiB slice with 1 block or 128, 6-12 stages, 1 or 2 consumers, 1 or 2 producer warps: the
 * SM's TMA takes ~2.4 cycles a 128-byte box row. With A's rows 2000 bytes apart (most box rows
 * straddle two 128-byte lines) ~505-535 with 128 blocks but ~345 with one; with 64-byte rows
 * 402 (aligned) and 745 (2000 bytes). Loads alone (no wgmma): 245-290. Multicast of B: as fast
 * as the cluster launch alone (~265-310) with a relaxed or default-scope remote release, ~850-880
 * with a cluster-scope one. Sharing A: ~10 % less at 2000 bytes, more when aligned. A through
 * cp.async: slower both ways.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "event-median.cuh"
#include "tma-ring.cuh"

constexpr int KT_MAX = 16;        /* k slices the matrices hold; longer runs wrap around */
constexpr int STAGE_BYTES = 16384; /* A's box then B's, 8 KiB each */

struct Case {
    int stages, consumers, mma, early, load_a, blocks, poll1;
};

/* The ring in the dynamic shared memory: the stages from its first 1024-byte boundary (*base;
 * the 128-byte swizzle repeats every 1024 bytes), then the barriers (*bars), full[s] at bars + 16 s
 * and empty[s] at bars + 16 s + 8, set up by thread 0 with the arrivals each phase takes; every
 * thread of the block calls it (it ends in __syncthreads; a cluster's kernel then meets its partner). */
__device__ __forceinline__ void start_ring(int stages, unsigned full_count, unsigned empty_count, unsigned *base, unsigned *bars)
{
    extern __shared__ unsigned char raw[];
    *base = (smem_addr(raw) + 1023u) & ~1023u;
    *bars = *base + (unsigned)stages * STAGE_BYTES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; s++) {
            bar_init(*bars + 16 * s, full_count);
            bar_init(*bars + 16 * s + 8, empty_count);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
}

/* wait_mode 0: try_wait with no suspend-time hint (kiln's kg_bar_wait); 1: test_wait, never
 * suspending; 2: try_wait with a 10 ms hint (CUTLASS's) */
__constant__ int wait_mode;
/* cycles the consumers idle before their first wait (0: none): do they then run through slices already there? */
__constant__ int delay_cycles;
/* 1: the consumers never release a stage (for runs of at most --stages slices: is the release the cost?) */
__constant__ int no_release;

__device__ __forceinline__ void bar_wait(unsigned bar, unsigned phase)
{
    if (wait_mode == 1)
        asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                     "mbarrier.test_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     "@!done bra wait_%=;\n}\n" ::"r"(bar),
                     "r"(phase)
                     : "memory");
    else if (wait_mode == 2)
        asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, 10000000;\n"
                     "@!done bra wait_%=;\n}\n" ::"r"(bar),
                     "r"(phase)
                     : "memory");
    else
        asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                     "@!done bra wait_%=;\n}\n" ::"r"(bar),
                     "r"(phase)
                     : "memory");
}


/* The producer's ring, one k slice at a time: wait until the slice's stage is free (its empty
 * barrier's previous phase; the first round finds every stage free; `moded`: by bar_wait's
 * --wait form, else try_wait), then load(stage address, its full barrier, k, slice), which
 * makes the expect and the loads as the kernel wants them; k from k0, wrapping at KT_MAX; the
 * stage and its round counted as the loop goes (no division a slice). */
template <typename Load>
__device__ __forceinline__ void produce(unsigned base, unsigned bars, int stages, int slices, int k0, bool moded, Load load)
{
    for (int it = 0, s = 0, round = 0, k = k0; it < slices; it++) {
        if (round > 0) {
            if (moded)
                bar_wait(bars + 16 * s + 8, (unsigned)((round - 1) & 1));
            else
                bar_wait_plain(bars + 16 * s + 8, (unsigned)((round - 1) & 1));
        }
        load(base + (unsigned)s * STAGE_BYTES, bars + 16 * s, k, it);
        k = k + 1 == KT_MAX ? 0 : k + 1;
        if (++s == stages) {
            s = 0;
            round++;
        }
    }
}


/* d (64 x 64 f32 fragment) += A (64 x 16, K-major) B (16 x 64, MN-major), both by descriptor */
__device__ __forceinline__ void mma(float *d, unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "%32, %33, p, 1, 1, 0, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                   "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),
                   "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),
                   "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db));
}

/* out[4 b] = the producer's first clock64, out[4 b + 1 + c] = consumer c's last, out[4 b + 3] (the
 * tight kernels) consumer 0's first full stage */
__global__ void __launch_bounds__(384, 1)
    ring(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap bmap, int slices, int stages,
         int consumers, int mma_on, int early, int load_a, int poll1, long long *out, float *sink, long long *trace)
{
    unsigned base, bars;
    start_ring(stages, 1, 1, &base, &bars);
    const int wg = threadIdx.x >> 7, lt = threadIdx.x & 127;
    const int tm = blockIdx.x & 1, tn = (blockIdx.x >> 1) & 63;
    const unsigned bytes = (load_a ? 8192u : 0u) + 8192u;
    if (wg == 0) {
        if (lt == 0) {
            out[4 * blockIdx.x] = clock64();
            produce(base, bars, stages, slices, 0, true, [&](unsigned dst, unsigned full, int k, int it) {
                bar_expect(full, bytes);
                if (load_a) tma_load(dst, &amap, k * 64, tm * 64, full);
                tma_load(dst + 8192u, &bmap, tn * 64, k * 64, full);
                if (blockIdx.x == 0 && it < 64) trace[64 + it] = clock64();
            });
            if (no_release == 2) /* the producer itself sees each slice land (runs of at most --stages slices) */
                for (int it = 0; it < slices; it++) {
                    bar_wait(bars + 16 * it, 0);
                    if (blockIdx.x == 0 && it < 64) trace[it] = clock64();
                }
        }
        return;
    }
    const int c = wg - 1;
    if (no_release == 2) return;
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.0f;
    /* descriptors: address >> 4, leading byte offset (1 K-major, 8192 >> 4 MN-major), stride
     * 1024 >> 4, 128-byte swizzle */
    const unsigned long long hi = (unsigned long long)((1024u >> 4) | (1u << 30)) << 32;
    int prev = -1;
    if (delay_cycles) {
        const long long t0 = clock64();
        while (clock64() - t0 < delay_cycles) {
        }
    }
    for (int it = 0, s = -1, round = 0; it < slices; it++) {
        if (++s == stages) {
            s = 0;
            round++;
        }
        if ((it & (consumers - 1)) != c) continue;
        if (blockIdx.x == 0 && lt == 0 && it < 64) trace[128 + it] = clock64();
        if (!poll1) {
            bar_wait(bars + 16 * s, (unsigned)(round & 1));
        } else { /* one thread polls, the warpgroup meets it at a named barrier */
            if (lt == 0) bar_wait(bars + 16 * s, (unsigned)(round & 1));
            asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
        }
        if (blockIdx.x == 0 && lt == 0 && it < 64) trace[it] = clock64();
        const unsigned a = base + (unsigned)s * STAGE_BYTES, b = a + 8192u;
        if (mma_on) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++)
                mma(acc, hi | ((((a & 0x3FFFFu) >> 4) + 2u * kk) | (1u << 16)),
                    hi | ((((b & 0x3FFFFu) >> 4) + 128u * kk) | ((8192u >> 4) << 16)));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            if (early) {
                asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
                if (lt == 0) bar_arrive(bars + 16 * s + 8);
                continue;
            }
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (prev >= 0 && lt == 0) bar_arrive(bars + 16 * prev + 8);
            prev = s;
        } else if (lt == 0 && !no_release) {
            bar_arrive(bars + 16 * s + 8);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (prev >= 0 && lt == 0) bar_arrive(bars + 16 * prev + 8);
    if (lt == 0) out[4 * blockIdx.x + 1 + c] = clock64();
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++) sum += acc[i];
    if (sum == 1234.5f) sink[threadIdx.x] = sum; /* keeps the sums alive */
}

/* One consumer warpgroup of the tight kernels: its slices are every STEP-th from `first`, the
 * stage and phase counted as it goes; on each it waits for the full barrier, multiplies the
 * slice with four m64n64k16 (MMA; PROXY: after an async-proxy fence, for stages written by
 * cp.async), keeps one wgmma group in flight and releases the previous slice's stage through
 * release(stage), the last one after its final group. The sums go to sink only on a value they
 * never take (they stay alive). */
template <int STAGES, int STEP, int MMA, int PROXY, typename Release>
__device__ __forceinline__ void consume(unsigned base, unsigned bars, int first, int slices, Release release, float *sink)
{
    float acc[32];
#pragma unroll
    for (int i = 0; i < 32; i++) acc[i] = 0.0f;
    /* descriptors: address >> 4, leading byte offset (1 K-major, 8192 >> 4 MN-major), stride
     * 1024 >> 4, 128-byte swizzle */
    const unsigned long long hi = (unsigned long long)((1024u >> 4) | (1u << 30)) << 32;
    const unsigned alo = ((base & 0x3FFFFu) >> 4) | (1u << 16), blo = (((base + 8192u) & 0x3FFFFu) >> 4) | ((8192u >> 4) << 16);
    unsigned s = (unsigned)first, phase = 0, prev = 0;
    bool held = false;
    for (int it = first; it < slices; it += STEP) {
        bar_wait_plain(bars + 16 * s, phase);
        if (PROXY) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        const unsigned so = s * (STAGE_BYTES >> 4);
        if (MMA) {
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int kk = 0; kk < 4; kk++) mma(acc, hi | (alo + so + 2u * kk), hi | (blo + so + 128u * kk));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        }
        if (held) release(prev);
        prev = s;
        held = true;
        s += STEP;
        if (s >= (unsigned)STAGES) {
            s -= STAGES;
            phase ^= 1u;
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    if (held) release(prev);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 32; i++) sum += acc[i];
    if (sum == 1234.5f) sink[threadIdx.x] = sum;
}

/* The same ring with the consumer loop written tight: the ring's depth and the consumer count
 * known at compile time, each consumer visiting only its own slices with its stage and phase
 * counted as it goes, the descriptors' low words formed once (a stage adds a constant), no
 * stamps in the loop. What a k-pair consumer costs when it does nothing but its slices. */
template <int STAGES, int CONSUMERS, int PSPLIT, int A64 = 0, int MMA = 1, int ROT = 0>
__global__ void __launch_bounds__(384, 1)
    ring_tight(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap bmap, int slices, long long *out,
               float *sink)
{
    unsigned base, bars;
    start_ring(STAGES, PSPLIT ? 2 : 1, 1, &base, &bars);
    const int wg = threadIdx.x >> 7, lt = threadIdx.x & 127;
    const int tm = blockIdx.x & 1, tn = (blockIdx.x >> 1) & 63;
    if (wg == 0) {
        /* PSPLIT: warp 0 issues A's boxes, warp 1 B's, each arriving on the full barrier with
         * its own bytes; else thread 0 issues both */
        const int pw = lt >> 5;
        if ((lt & 31) == 0 && (pw == 0 || (PSPLIT && pw == 1))) {
            if (lt == 0) out[4 * blockIdx.x] = clock64();
            /* ROT: each tile column starts its k slices at a different place (tn * 5 mod 16), so
             * that the 64 blocks reading one tile row of A do not ask for the same lines at once */
            produce(base, bars, STAGES, slices, ROT ? (tn * 5) % KT_MAX : 0, false, [&](unsigned dst, unsigned full, int k, int) {
                bar_expect(full, PSPLIT ? STAGE_BYTES / 2 : STAGE_BYTES);
                /* A64: A as two boxes of 32 columns (64-byte rows, 64-byte swizzle; the wgmma
                 * descriptors are left as they are: a timing of the loads, not a product) */
                if (pw == 0 && A64) {
                    tma_load(dst, &amap, k * 64, tm * 64, full);
                    tma_load(dst + 4096u, &amap, k * 64 + 32, tm * 64, full);
                } else if (pw == 0) {
                    tma_load(dst, &amap, k * 64, tm * 64, full);
                }
                if (!PSPLIT || pw == 1) tma_load(dst + 8192u, &bmap, tn * 64, k * 64, full);
            });
        }
        return;
    }
    const int c = wg - 1;
    if (threadIdx.x == 128) { /* when the first stage lands (consume's own wait on it then passes at once) */
        bar_wait_plain(bars, 0);
        out[4 * blockIdx.x + 3] = clock64();
    }
    consume<STAGES, CONSUMERS, MMA, 0>(base, bars, c, slices, [&](unsigned st) { if (lt == 0) bar_arrive(bars + 16 * st + 8); }, sink);
    if (lt == 0) out[4 * blockIdx.x + 1 + c] = clock64();
}

/* The tight ring with A loaded by the producer warpgroup's 128 threads through cp.async (16
 * bytes each, four a thread a slice, into the 128-byte-swizzled rows the descriptors expect)
 * and B by TMA: the full barrier takes thread 0's expect (B's bytes) and each thread's
 * cp.async arrival. Does a per-thread load take fc1000 bprop's 2000-byte rows better than a
 * TMA box? `a` is A itself, `lda` its row length in elements. */
template <int STAGES>
__global__ void __launch_bounds__(384, 1)
    ring_ldgsts(const unsigned short *a, int lda, const __grid_constant__ CUtensorMap bmap, int slices, long long *out,
                float *sink)
{
    unsigned base, bars;
    start_ring(STAGES, 129, 1, &base, &bars);
    const int wg = threadIdx.x >> 7, lt = threadIdx.x & 127;
    const int tm = blockIdx.x & 1, tn = (blockIdx.x >> 1) & 63;
    if (wg == 0) {
        if (lt == 0) out[4 * blockIdx.x] = clock64();
        produce(base, bars, STAGES, slices, 0, false, [&](unsigned dst, unsigned full, int k, int) {
            if (lt == 0) {
                bar_expect(full, 8192u);
                tma_load(dst + 8192u, &bmap, tn * 64, k * 64, full);
            }
#pragma unroll
            for (int q = 0; q < 4; q++) { /* chunk c of row r: thread lt's q-th of 512 */
                const int id = q * 128 + lt, r = id >> 3, c = id & 7;
                const unsigned short *src = a + (size_t)(tm * 64 + r) * lda + k * 64 + c * 8;
                const unsigned d = dst + (unsigned)r * 128u + (unsigned)((c ^ (r & 7)) * 16);
                asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
            }
            asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(full) : "memory");
        });
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }
    /* the consumers as in ring_tight (two, alternate slices), fencing cp.async's generic-proxy
     * writes before wgmma reads them through the async proxy */
    const int c = wg - 1;
    consume<STAGES, 2, 1, 1>(base, bars, c, slices, [&](unsigned st) { if (lt == 0) bar_arrive(bars + 16 * st + 8); }, sink);
    if (lt == 0) out[4 * blockIdx.x + 1 + c] = clock64();
}

/* The tight ring in clusters of two blocks on tile rows 0 and 1 of one tile column, sharing B as
 * kiln's KILN_WGMMA_MCAST does: each block loads its own A box and half of B's (32 of the 64 k
 * rows) into both blocks' stages by TMA multicast; a stage's empty barrier takes both blocks'
 * consumers (the partner's loads write into it), its full barrier 16 KiB. Does sharing a load
 * raise what one SM takes in? */
__device__ __forceinline__ void tma_load_mc(unsigned dst, const CUtensorMap *map, int c0, int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"((unsigned short)3)
                 : "memory");
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

template <int STAGES, int MMA, int RELAXED = 0, int NOMC = 0, int SHARE_A = 0>
__global__ void __launch_bounds__(384, 1)
    ring_mc(const __grid_constant__ CUtensorMap amap, const __grid_constant__ CUtensorMap bhalf, int slices, long long *out,
            float *sink)
{
    unsigned base, bars;
    start_ring(STAGES, 1, NOMC ? 1 : 2, &base, &bars);
    const int wg = threadIdx.x >> 7, lt = threadIdx.x & 127;
    /* SHARE_A: the two blocks of a cluster are tile columns 2 j, 2 j + 1 of one tile row and share
     * A instead (each loads 32 of its 64 rows into both; `amap` is then A's 32-row map, `bhalf`
     * B's whole one) */
    const int rank = blockIdx.x & 1, tn = SHARE_A ? (2 * ((blockIdx.x >> 2) & 31) + rank) : (blockIdx.x >> 1) & 63;
    const int tm = SHARE_A ? (blockIdx.x >> 1) & 1 : rank;
    cluster_sync();
    if (wg == 0) {
        if (lt == 0) {
            out[4 * blockIdx.x] = clock64();
            produce(base, bars, STAGES, slices, 0, false, [&](unsigned dst, unsigned full, int k, int) {
                bar_expect(full, STAGE_BYTES);
                if (SHARE_A) { /* half of A into both blocks, this block's whole B */
                    tma_load_mc(dst + 4096u * rank, &amap, k * 64, tm * 64 + 32 * rank, full);
                    tma_load(dst + 8192u, &bhalf, tn * 64, k * 64, full);
                } else if (NOMC) { /* the cluster launch alone, each block loading its whole B (bhalf is B's map) */
                    tma_load(dst, &amap, k * 64, tm * 64, full);
                    tma_load(dst + 8192u, &bhalf, tn * 64, k * 64, full);
                } else { /* this block's A, half of B into both blocks */
                    tma_load(dst, &amap, k * 64, tm * 64, full);
                    tma_load_mc(dst + 8192u + 4096u * rank, &bhalf, tn * 64, k * 64 + 32 * rank, full);
                }
            });
        }
    } else if (wg == 1) {
        /* this block's empty barrier (thread 0) and the partner's (thread 32): RELAXED 0 a release
         * at the cluster's scope, 1 a relaxed arrive (the consumer wrote nothing the partner
         * reads), 2 the default (release at the CTA's scope, as kiln and CUTLASS) */
        auto release = [&](unsigned st) {
            const unsigned e = bars + 16 * st + 8;
            if (lt == 0) bar_arrive(e);
            if (lt == 32 && !NOMC) {
                unsigned r;
                asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(e), "r"(rank ^ 1));
                if (RELAXED == 1)
                    asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(r) : "memory");
                else if (RELAXED == 2)
                    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(r) : "memory");
                else
                    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(r) : "memory");
            }
        };
        consume<STAGES, 1, MMA, 0>(base, bars, 0, slices, release, sink);
        if (lt == 0) out[4 * blockIdx.x + 1] = clock64();
    }
    cluster_sync(); /* no block leaves while its partner may still write into it or arrive on it */
}

static int make_map(CUtensorMap *m, void *base, unsigned long long inner, unsigned long long outer, unsigned box_inner = 64,
                    unsigned box_outer = 64)
{
    cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
    cuuint32_t box[2] = {box_inner, box_outer}, estr[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                        box_inner == 64 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_64B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) fprintf(stderr, "ring-rate: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    return r == CUDA_SUCCESS ? 0 : 1;
}

/* The block mean of clock64 cycles a slice: out[4 b] the producer's first load, out[4 b + 1 + c]
 * consumer c's end. */
static double cycles_a_slice(const long long *out, int blocks, int consumers, int slices)
{
    std::vector<long long> h(4 * 128);
    cudaMemcpy(h.data(), out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost);
    double span = 0;
    for (int bl = 0; bl < blocks; bl++) {
        long long end = h[4 * bl + 1];
        if (consumers == 2) end = std::max(end, h[4 * bl + 2]);
        span += (double)(end - h[4 * bl]);
    }
    return span / blocks / slices;
}

/* The tight kernels' block means: cycles from the producer's first load to consumer 0's first full
 * stage (*first), and cycles a slice from there to the last release (*then, over slices - 1). */
static void first_then(const long long *out, int blocks, int consumers, int slices, double *first, double *then)
{
    std::vector<long long> h(4 * 128);
    cudaMemcpy(h.data(), out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost);
    double f = 0, t = 0;
    for (int bl = 0; bl < blocks; bl++) {
        long long end = h[4 * bl + 1];
        if (consumers == 2) end = std::max(end, h[4 * bl + 2]);
        f += (double)(h[4 * bl + 3] - h[4 * bl]);
        t += (double)(end - h[4 * bl + 3]);
    }
    *first = f / blocks;
    *then = slices > 1 ? t / blocks / (slices - 1) : 0.0;
}

/* the tight kernel at one ring depth and consumer count: cycles a slice (block mean), launch us */
template <int STAGES, int CONSUMERS, int PSPLIT = 0, int A64 = 0, int MMA = 1, int ROT = 0>
static int run_tight(const CUtensorMap &amap, const CUtensorMap &bmap, int slices, int blocks, long long *out, float *sink)
{
    const int smem = STAGES * STAGE_BYTES + 16 * STAGES + 1024;
    auto kern = ring_tight<STAGES, CONSUMERS, PSPLIT, A64, MMA, ROT>;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) return 1;
    const float ms = median_ms([&] {
        kern<<<blocks, 128 * (1 + CONSUMERS), smem>>>(amap, bmap, slices, out, sink);
        return cudaGetLastError();
    });
    if (ms < 0) return 1;
    double first, then;
    first_then(out, blocks, CONSUMERS, slices, &first, &then);
    printf("%s %6d %6d %9d %-7s wait 1   A+B     %12.0f %11.2f %11.0f %10.0f\n", ROT ? "tightR" : A64 ? "tightA" : PSPLIT ? "tight2" : "tight ",
           blocks, STAGES, CONSUMERS, MMA ? "wgmma" : "none", cycles_a_slice(out, blocks, CONSUMERS, slices), 1000.0 * ms, first, then);
    return 0;
}

/* the cluster kernel: 128 blocks in clusters of two, one consumer each */
template <int STAGES, int MMA, int RELAXED = 0, int NOMC = 0, int SHARE_A = 0>
static int run_mc(const CUtensorMap &amap, const CUtensorMap &bhalf, int slices, long long *out, float *sink)
{
    const int smem = STAGES * STAGE_BYTES + 16 * STAGES + 1024;
    auto kern = ring_mc<STAGES, MMA, RELAXED, NOMC, SHARE_A>;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) return 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(128);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    const float ms = median_ms([&] { return cudaLaunchKernelEx(&cfg, kern, amap, bhalf, slices, out, sink); });
    if (ms < 0) return 1;
    printf("%s %6d %6d %9d %-7s wait 1   A+B/2   %12.0f %11.2f\n",
           SHARE_A ? "mcastA" : NOMC ? "clustr" : RELAXED == 2 ? "mcastD" : RELAXED ? "mcastR" : "mcastB", 128, STAGES, 1,
           MMA ? "wgmma" : "none", cycles_a_slice(out, 128, 1, slices), 1000.0 * ms);
    return 0;
}

/* the cp.async kernel on 128 blocks, two consumers */
template <int STAGES>
static int run_ldgsts(const unsigned short *a, int lda, const CUtensorMap &bmap, int slices, long long *out, float *sink)
{
    const int smem = STAGES * STAGE_BYTES + 16 * STAGES + 1024;
    auto kern = ring_ldgsts<STAGES>;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) return 1;
    const float ms = median_ms([&] {
        kern<<<128, 384, smem>>>(a, lda, bmap, slices, out, sink);
        return cudaGetLastError();
    });
    if (ms < 0) return 1;
    printf("cpasyA %6d %6d %9d wgmma   wait 1   A+B     %12.0f %11.2f\n", 128, STAGES, 2, cycles_a_slice(out, 128, 2, slices),
           1000.0 * ms);
    return 0;
}

/* the value of option name at argv[i + 1], a whole number from lo to hi, or -1 (after a message) */
static int option(int argc, char **argv, int i, int lo, int hi)
{
    char *end = NULL;
    long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
    if (i + 1 >= argc || !end || *end || v < lo || v > hi) {
        fprintf(stderr, "ring-rate: %s takes a whole number from %d to %d\n", argv[i], lo, hi);
        return -1;
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    /* one case from the options, or the sweep below where none names one */
    int slices = 16, trace_on = 0, tight = 0, one = 0, a_inner = 1024, wait_sel = 0, delay = 0, norel = 0;
    Case c1 = {6, 2, 1, 0, 1, 128, 0};
    for (int i = 1; i < argc; i++) {
        int *dst = !strcmp(argv[i], "--slices")      ? &slices
                   : !strcmp(argv[i], "--wait")      ? &wait_sel
                   : !strcmp(argv[i], "--a-inner")   ? &a_inner
                   : !strcmp(argv[i], "--delay")     ? &delay
                   : !strcmp(argv[i], "--no-release") ? &norel
                   : !strcmp(argv[i], "--stages")    ? &c1.stages
                   : !strcmp(argv[i], "--consumers") ? &c1.consumers
                   : !strcmp(argv[i], "--mma")       ? &c1.mma
                   : !strcmp(argv[i], "--early")     ? &c1.early
                   : !strcmp(argv[i], "--load-a")    ? &c1.load_a
                   : !strcmp(argv[i], "--blocks")    ? &c1.blocks
                   : !strcmp(argv[i], "--poll1")     ? &c1.poll1
                                                     : NULL;
        if (!strcmp(argv[i], "--tight")) {
            tight = 1;
            continue;
        }
        if (!strcmp(argv[i], "--trace")) {
            trace_on = 1;
            continue;
        }
        if (!dst) {
            fprintf(stderr, "ring-rate: '%s' is not an option (--slices --stages --consumers --mma --early --load-a "
                            "--blocks --poll1 --wait --delay --no-release --trace --tight --a-inner)\n", argv[i]);
            return 2;
        }
        const int hi = dst == &a_inner ? 1024 : dst == &slices || dst == &delay ? 1 << 20 : dst == &wait_sel ? 2 : dst == &norel ? 2 : dst == &c1.stages ? 12 : dst == &c1.consumers ? 2 : dst == &c1.blocks ? 128 : 1;
        const int v = option(argc, argv, i, dst == &c1.mma || dst == &c1.early || dst == &c1.load_a || dst == &c1.poll1 || dst == &wait_sel || dst == &delay || dst == &norel ? 0 : dst == &a_inner ? 64 : 1, hi);
        if (v < 0) return 2;
        *dst = v;
        one |= dst != &slices && dst != &wait_sel && dst != &delay && dst != &norel && dst != &a_inner;
        i++;
    }
    if (c1.consumers == 2 && c1.stages % 2) {
        fprintf(stderr, "ring-rate: --consumers 2 takes an even --stages (each stage one consumer's)\n");
        return 2;
    }
    void *a, *b;
    long long *out, *trace;
    float *sink;
    if (cudaMalloc(&a, 128 * 1024 * 2) != cudaSuccess || cudaMalloc(&b, 1024 * 4096 * 2) != cudaSuccess ||
        cudaMalloc(&out, 4 * 128 * sizeof(long long)) != cudaSuccess || cudaMalloc(&sink, 384 * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&trace, 192 * sizeof(long long)) != cudaSuccess) {
        fprintf(stderr, "ring-rate: no GPU memory (%s)\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    cudaMemset(a, 0x3c, 128 * 1024 * 2); /* 0x3c3c: ~1.06 in f16, finite sums */
    cudaMemset(b, 0x3c, 1024 * 4096 * 2);
    CUtensorMap amap, bmap, amap64, bhalf, ahalf;
    if (make_map(&amap, a, (unsigned long long)a_inner, 128) || make_map(&bmap, b, 4096, 1024) ||
        make_map(&amap64, a, (unsigned long long)a_inner, 128, 32) || make_map(&bhalf, b, 4096, 1024, 64, 32) ||
        make_map(&ahalf, a, (unsigned long long)a_inner, 128, 64, 32))
        return 1;
    if (tight) {
        printf("slices a block %d; the tight consumer loop\n", slices);
        printf("kernel blocks stages consumers mma     release  loads   cycles/slice   launch us  first full  then/slice\n");
        int bad = 0;
        for (int blocks : {1, 128}) {
            bad |= run_tight<4, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<4, 2>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<8, 2>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<12, 2>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 1, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<12, 2, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 0, 1>(amap64, bmap, slices, blocks, out, sink);
            bad |= run_tight<12, 2, 0, 1>(amap64, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 0, 0, 0>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<12, 2, 0, 0, 0>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 0, 1, 0>(amap64, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 0, 0, 1, 1>(amap, bmap, slices, blocks, out, sink);
            bad |= run_tight<6, 2, 0, 0, 0, 1>(amap, bmap, slices, blocks, out, sink);
        }
        bad |= run_mc<6, 1>(amap, bhalf, slices, out, sink);
        bad |= run_mc<12, 1>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 0>(amap, bhalf, slices, out, sink);
        bad |= run_mc<12, 0>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 1, 1>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 0, 1>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 1, 2>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 0, 2>(amap, bhalf, slices, out, sink);
        bad |= run_mc<6, 1, 0, 1>(amap, bmap, slices, out, sink);
        bad |= run_mc<6, 0, 0, 1>(amap, bmap, slices, out, sink);
        bad |= run_mc<6, 1, 2, 0, 1>(ahalf, bmap, slices, out, sink);
        bad |= run_mc<6, 0, 2, 0, 1>(ahalf, bmap, slices, out, sink);
        bad |= run_mc<12, 1, 2, 0, 1>(ahalf, bmap, slices, out, sink);
        bad |= run_ldgsts<6>((const unsigned short *)a, a_inner, bmap, slices, out, sink);
        bad |= run_ldgsts<12>((const unsigned short *)a, a_inner, bmap, slices, out, sink);
        return bad;
    }
    std::vector<Case> cases;
    if (cudaMemcpyToSymbol(wait_mode, &wait_sel, sizeof wait_sel) != cudaSuccess ||
        cudaMemcpyToSymbol(delay_cycles, &delay, sizeof delay) != cudaSuccess ||
        cudaMemcpyToSymbol(no_release, &norel, sizeof norel) != cudaSuccess) {
        fprintf(stderr, "ring-rate: cudaMemcpyToSymbol failed\n");
        return 1;
    }
    if (one)
        cases.push_back(c1);
    else
        for (int blocks : {1, 128})
            for (int stages : {4, 6, 8, 12})
                for (int consumers : {1, 2})
                    for (int mma_on : {0, 1})
                        for (int early : {0, 1})
                            for (int load_a : {1, 0})
                                if ((mma_on || !early) && !(consumers == 2 && stages % 2))
                                    cases.push_back({stages, consumers, mma_on, early, load_a, blocks, 0});
    printf("slices a block %d; clock64 cycles a slice (block mean), launch us (median of 20)\n", slices);
    printf("blocks stages consumers mma     release  loads   cycles/slice   launch us\n");
    int failed = 0;
    for (const Case &k : cases) {
        const int smem = k.stages * STAGE_BYTES + 16 * k.stages + 1024;
        if (cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
            fprintf(stderr, "ring-rate: %d stages: cudaFuncSetAttribute failed\n", k.stages);
            failed = 1;
            continue;
        }
        const float ms = median_ms([&] {
            ring<<<k.blocks, 128 * (1 + k.consumers), smem>>>(amap, bmap, slices, k.stages, k.consumers, k.mma, k.early,
                                                            k.load_a, k.poll1, out, sink, trace);
            return cudaGetLastError();
        });
        if (ms < 0) return 1;
        std::vector<long long> h(3), tr(192);
        cudaMemcpy(h.data(), out, h.size() * sizeof(long long), cudaMemcpyDeviceToHost);
        cudaMemcpy(tr.data(), trace, tr.size() * sizeof(long long), cudaMemcpyDeviceToHost);
        /* --no-release 2: the consumers leave at once and stamp no end */
        const double per = norel == 2 ? 0.0 : cycles_a_slice(out, k.blocks, k.consumers, slices);
        printf("%6d %6d %9d %-7s %-8s %-7s %12.0f %11.2f\n", k.blocks, k.stages, k.consumers, k.mma ? "wgmma" : "none",
               !k.mma ? "at once" : k.early ? "wait 0" : "wait 1", k.load_a ? "A+B" : "B", per, 1000.0 * ms);
        if (trace_on) {
            printf("block 0: each slice's data seen (cycles after the first load's issue):");
            for (int it = 0; it < slices && it < 64; it++) printf("%s%lld", it % 16 ? " " : "\n  ", tr[it] - h[0]);
            printf("\nblock 0: each slice's wait begun (cycles after the first load's issue):");
            for (int it = 0; it < slices && it < 64; it++) printf("%s%lld", it % 16 ? " " : "\n  ", tr[128 + it] - h[0]);
            printf("\nblock 0: each slice's loads issued (cycles after the first load's issue):");
            for (int it = 0; it < slices && it < 64; it++) printf("%s%lld", it % 16 ? " " : "\n  ", tr[64 + it] - h[0]);
            printf("\n");
        }
    }
    cudaFree(a);
    cudaFree(b);
    cudaFree(out);
    cudaFree(sink);
    cudaFree(trace);
    return failed;
}
