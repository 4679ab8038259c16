/*
 * tools/dram-read.cu - how fast a GEMM's B streams from DRAM through TMA when nothing else is done
 * with it: B is K x N f16, N-major (kiln-bench's fc cases), cut into strips of W columns (the
 * tiles' width); a producer thread loads a strip's k slices (64 rows x W, boxes of 64 x 64 with
 * the 128-byte swizzle, as kiln's wgmma kernel) into a ring of stages and one consumer warp only
 * waits on each slice and releases it. Optionally each slice also loads an A box of R rows x 64 k
 * from a 128 x K A that every block reads (kiln's re-reads of A, from L2). A diagnostic for kernel
 * work on a GPU machine (sm_90a), not part of the library or of any test.
 *
 *   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o dram-read tools/dram-read.cu -lcuda
 *   ./dram-read                                  the list below
 *   ./dram-read --K 4096 --N 9216 --W 128 [--splits 1] [--flat 1] [--blocks 132] [--a-rows 128] [--stages 7]
 *
 * Two ways to share the work among the blocks:
 *   items (--flat 0): strips x splits items, item i the k slices [q kt / splits, (q + 1) kt / splits)
 *     of strip i / splits (q = i % splits), block b taking items b, b + G, ... (kiln's split-K);
 *   flat (--flat 1): the strips' k slices in strip order, block g taking [g U / G, (g + 1) U / G)
 *     of all U of them (stream-K's division: every block the same bytes, whatever the strip count).
 * Each case prints the median of 20 launches (events, after 3 untimed), B's bytes over it, and the
 * bytes the SMs took in (B and A) over it.
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "event-median.cuh"
#include "tma-ring.cuh"

struct Plan {
    int K, N, W, splits, flat, blocks, a_rows, stages;
};

struct Work {
    int kt, strips, items, a_rows, stages, flat, splits;
    unsigned stage_bytes, b_bytes;
    long long units;
};

constexpr int THREADS = 64; /* warp 0: the producer (lane 0); warp 1: the consumer (lane 0) */

/* slice u of block g's share -> (strip, k slice); the block's share [u0, u1) */
__device__ __forceinline__ void share(const Work &w, int g, int grid, long long *u0, long long *u1)
{
    *u0 = (long long)g * w.units / grid;
    *u1 = (long long)(g + 1) * w.units / grid;
}

/* the slices of item i: strip and [kb, ke) */
__device__ __forceinline__ void item_range(const Work &w, int i, int *strip, int *kb, int *ke)
{
    const int q = i % w.splits;
    *strip = i / w.splits;
    *kb = (int)((long long)q * w.kt / w.splits);
    *ke = (int)((long long)(q + 1) * w.kt / w.splits);
}

__global__ void __launch_bounds__(THREADS, 1) stream(const __grid_constant__ CUtensorMap mb,
                                                     const __grid_constant__ CUtensorMap ma, Work w)
{
    extern __shared__ unsigned char raw[];
    const unsigned base = (smem_addr(raw) + 1023u) & ~1023u;
    const unsigned bars = base + (unsigned)w.stages * w.stage_bytes; /* full[s] at 16 s, empty[s] at 16 s + 8 */
    if (threadIdx.x == 0) {
        for (int s = 0; s < w.stages; s++) {
            bar_init(bars + 16 * s, 1);
            bar_init(bars + 16 * s + 8, 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if ((threadIdx.x & 31) != 0) return;
    const bool producer = threadIdx.x == 0;
    unsigned it = 0;
    /* visit(strip, k) for every slice of this block, in order */
    auto run = [&](auto visit) {
        if (w.flat) {
            long long u0, u1;
            share(w, (int)blockIdx.x, (int)gridDim.x, &u0, &u1);
            for (long long u = u0; u < u1; u++) visit((int)(u / w.kt), (int)(u % w.kt));
        } else {
            for (int i = (int)blockIdx.x; i < w.items; i += (int)gridDim.x) {
                int strip, kb, ke;
                item_range(w, i, &strip, &kb, &ke);
                for (int k = kb; k < ke; k++) visit(strip, k);
            }
        }
    };
    if (producer) {
        run([&](int strip, int k) {
            const unsigned s = it % w.stages, round = it / w.stages, full = bars + 16 * s;
            if (round > 0) bar_wait_plain(bars + 16 * s + 8, (round - 1) & 1);
            bar_expect(full, w.stage_bytes);
            const unsigned dst = base + s * w.stage_bytes;
            for (int c = 0; c < (int)(w.b_bytes / 8192u); c++) tma_load(dst + 8192u * c, &mb, strip * (int)(w.b_bytes / 128u) + 64 * c, 64 * k, full);
            if (w.a_rows) tma_load(dst + w.b_bytes, &ma, 64 * k, 0, full);
            it++;
        });
    } else {
        run([&](int, int) {
            const unsigned s = it % w.stages, round = it / w.stages;
            bar_wait_plain(bars + 16 * s, round & 1);
            bar_arrive(bars + 16 * s + 8);
            it++;
        });
    }
}

static int encode(CUtensorMap *m, void *base, unsigned long long inner, unsigned long long outer, unsigned box_outer)
{
    cuuint64_t dims[2] = {inner, outer}, strides[1] = {inner * 2};
    cuuint32_t box[2] = {64, box_outer}, estr[2] = {1, 1};
    const CUresult r = cuTensorMapEncodeTiled(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, base, dims, strides, box, estr,
                                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) fprintf(stderr, "dram-read: cuTensorMapEncodeTiled failed (%d)\n", (int)r);
    return r != CUDA_SUCCESS;
}

/* one case; 0, or 1 after a message */
static int run_case(const Plan &pl, int sms)
{
    if (pl.K % 64 || pl.W % 64 || pl.N % pl.W || pl.W > 256 || (pl.a_rows && pl.a_rows != 64 && pl.a_rows != 128)) {
        fprintf(stderr, "dram-read: K a multiple of 64, W 64-256 in 64s dividing N, --a-rows 0, 64 or 128\n");
        return 1;
    }
    Work w = {};
    w.kt = pl.K / 64;
    w.strips = pl.N / pl.W;
    w.splits = pl.splits > 0 ? pl.splits : 1;
    w.items = w.strips * w.splits;
    w.units = (long long)w.strips * w.kt;
    w.flat = pl.flat;
    w.a_rows = pl.a_rows;
    w.b_bytes = (unsigned)pl.W * 128u;
    w.stage_bytes = w.b_bytes + (unsigned)pl.a_rows * 128u;
    const int fit = (int)((220u * 1024u) / w.stage_bytes);
    w.stages = pl.stages > 0 && pl.stages < fit ? pl.stages : fit;
    const int cap = pl.blocks > 0 ? pl.blocks : sms; /* flat: every block a share; items: at most one block an item */
    const int grid = pl.flat || w.items > cap ? cap : w.items;
    const size_t b_size = (size_t)pl.K * pl.N * 2, a_size = (size_t)128 * pl.K * 2;
    void *b = nullptr, *a = nullptr;
    if (cudaMalloc(&b, b_size) != cudaSuccess || cudaMalloc(&a, a_size) != cudaSuccess) {
        fprintf(stderr, "dram-read: cudaMalloc failed\n");
        cudaFree(b);
        return 1;
    }
    cudaMemset(b, 0x3c, b_size); /* any bytes: the loads, not the values, are timed */
    cudaMemset(a, 0x3c, a_size);
    CUtensorMap mb, ma;
    int bad = encode(&mb, b, (unsigned long long)pl.N, (unsigned long long)pl.K, 64);
    bad |= encode(&ma, a, (unsigned long long)pl.K, 128ull, pl.a_rows ? (unsigned)pl.a_rows : 64u);
    const size_t smem = (size_t)w.stages * w.stage_bytes + 1024 + 16 * (size_t)w.stages;
    cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    const float ms = bad ? -1.0f : median_ms([&] {
        stream<<<grid, THREADS, smem>>>(mb, ma, w);
        return cudaGetLastError();
    });
    const double all = (double)b_size + (double)w.units * pl.a_rows * 128.0;
    printf("K %6d N %6d W %3d %-5s splits %d blocks %3d stages %2d A rows %3d: %.4f ms  B %6.0f GB/s  taken in %6.0f GB/s\n",
           pl.K, pl.N, pl.W, pl.flat ? "flat" : "items", w.splits, grid, w.stages, pl.a_rows, ms, b_size / (ms * 1e6),
           all / (ms * 1e6));
    cudaFree(b);
    cudaFree(a);
    return ms < 0;
}

int main(int argc, char **argv)
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    Plan one = {0, 0, 0, 1, 0, 0, 0, 0};
    int given = 0;
    for (int i = 1; i < argc; i++) {
        int *dst = !strcmp(argv[i], "--K")        ? &one.K
                   : !strcmp(argv[i], "--N")      ? &one.N
                   : !strcmp(argv[i], "--W")      ? &one.W
                   : !strcmp(argv[i], "--splits") ? &one.splits
                   : !strcmp(argv[i], "--flat")   ? &one.flat
                   : !strcmp(argv[i], "--blocks") ? &one.blocks
                   : !strcmp(argv[i], "--a-rows") ? &one.a_rows
                   : !strcmp(argv[i], "--stages") ? &one.stages
                                                  : nullptr;
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "dram-read: '%s': options --K --N --W --splits --flat --blocks --a-rows --stages, each with a number\n",
                    argv[i]);
            return 2;
        }
        *dst = atoi(argv[++i]);
        given = 1;
    }
    if (given) return run_case(one, sms);
    /* B's streams of kiln's plans for the fc fprop / bprop shapes (the rule's width, splits and
     * blocks), each against the same bytes divided flat over every SM; then a plain 512 MiB
     * stream (the read roofline) */
    static const Plan list[] = {
        {4096, 9216, 128, 1, 0, 0, 128, 0},  {4096, 9216, 128, 1, 1, 0, 128, 0},   /* fc9216 bprop: 72 tiles */
        {4096, 9216, 128, 1, 0, 0, 0, 0},    {4096, 9216, 128, 1, 1, 0, 0, 0},
        {4096, 25088, 256, 1, 0, 0, 128, 0}, {4096, 25088, 256, 1, 1, 0, 128, 0},  /* fc25088 bprop: 98 */
        {36864, 3072, 64, 2, 0, 0, 128, 0},  {36864, 3072, 64, 1, 1, 0, 128, 0},   /* fc36864 fprop: 48 x 2 */
        {3072, 36864, 192, 1, 0, 96, 128, 0}, {3072, 36864, 192, 1, 1, 0, 128, 0}, /* fc36864 bprop: 192 on 96 */
        {9216, 4096, 64, 2, 0, 0, 64, 0},    {9216, 4096, 64, 1, 1, 0, 64, 0},     /* fc9216 fprop (64-row tiles) */
        {25088, 4096, 64, 2, 0, 0, 128, 0},  {25088, 4096, 64, 1, 1, 0, 128, 0},   /* fc25088 fprop: 64 x 2 */
        {32768, 8192, 256, 1, 1, 0, 0, 0},   {32768, 8192, 256, 1, 1, 264, 0, 0},  /* 512 MiB, no A */
        {32768, 8192, 64, 1, 1, 0, 0, 0},    {32768, 8192, 128, 4, 0, 0, 0, 0},
    };
    int bad = 0;
    for (const Plan &p : list) bad |= run_case(p, sms);
    return bad;
}
