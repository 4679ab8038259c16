/*
 * tools/store-rate.cu - how fast a GEMM's C reaches DRAM when it is written the way kiln's K = 128
 * weight updates write it: 132 persistent blocks walking 128-row tiles in kiln's grouped tile order
 * (groups of `--group` tile rows that walk the tile columns together), each tile stored from shared
 * memory by TMA in boxes of 64 rows x 128 bytes (128-byte swizzle, one bulk group a tile, two
 * staging buffers: a buffer is refilled once the store before the last has read it), against the
 * same tiles stored from registers and against a plain contiguous write stream. A diagnostic for
 * kernel work on a GPU machine (sm_90a), not part of the library or of any test.
 *
 *   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -std=c++17 -o store-rate tools/store-rate.cu -lcuda
 *   ./store-rate [--M 36864] [--N 3072] [--bn 128] [--group 8] [--delay CYCLES] [--blocks 132]
 *
 * Every case prints the median of 20 launches (events, after 3 untimed) and C's bytes over it.
 * --delay spins that many clock cycles before each tile's store (the epilogue's work a tile, which
 * the stores of earlier tiles may hide). The data is whatever shared memory holds: the bytes, not
 * their values, are measured (no compressible allocation is used).
 */
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "event-median.cuh"

constexpr int THREADS = 256;

struct Args {
    int M, N, BN, group, tiles_m, tiles_n;
    long long delay;
};

/* kiln's kg_item without batches: item -> (tile row, tile column) */
__device__ __forceinline__ void tile_of(const Args &a, int item, int *tm, int *tn)
{
    const int per_group = a.group * a.tiles_n, group = item / per_group, first_m = group * a.group;
    const int r = item - group * per_group;
    const int gsize = a.tiles_m - first_m < a.group ? a.tiles_m - first_m : a.group;
    *tm = first_m + r % gsize;
    *tn = r / gsize;
}

__device__ __forceinline__ void spin(long long cycles)
{
    if (cycles <= 0) return;
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

/* a contiguous write stream: 16 bytes a thread, grid-stride */
__global__ void __launch_bounds__(THREADS) fill(uint4 *c, long long n16)
{
    const uint4 v = make_uint4(threadIdx.x, blockIdx.x, 1, 2);
    for (long long i = blockIdx.x * (long long)THREADS + threadIdx.x; i < n16; i += (long long)gridDim.x * THREADS)
        c[i] = v;
}

/* the tiles from registers: a row of BN halves is BN / 8 chunks of 16 bytes, the block's threads
 * over the tile's chunks row by row */
__global__ void __launch_bounds__(THREADS) tiles_regs(Args a, unsigned short *c)
{
    const int items = a.tiles_m * a.tiles_n, cpr = a.BN / 8;
    const uint4 v = make_uint4(threadIdx.x, blockIdx.x, 1, 2);
    for (int item = blockIdx.x; item < items; item += gridDim.x) {
        int tm, tn;
        tile_of(a, item, &tm, &tn);
        if (threadIdx.x == 0) spin(a.delay);
        __syncthreads();
        for (int i = threadIdx.x; i < 128 * cpr; i += THREADS) {
            const long long row = (long long)tm * 128 + i / cpr, col = (long long)tn * a.BN + (i % cpr) * 8;
            *(uint4 *)(c + row * a.N + col) = v;
        }
    }
}

/* the tiles by TMA from two staging buffers of 128 x BN halves (boxes of 64 rows x 64 columns,
 * 8 KiB each, column block b's two boxes at 2 b and 2 b + 1), one thread issuing */
__global__ void __launch_bounds__(THREADS) tiles_tma(const __grid_constant__ CUtensorMap map, Args a)
{
    extern __shared__ unsigned char raw[];
    const unsigned base = ((unsigned)__cvta_generic_to_shared(raw) + 1023u) & ~1023u;
    const unsigned tile_bytes = 128u * (unsigned)a.BN * 2u;
    if (threadIdx.x != 0) return;
    const int items = a.tiles_m * a.tiles_n;
    int buf = 0;
    for (int item = blockIdx.x; item < items; item += gridDim.x, buf ^= 1) {
        int tm, tn;
        tile_of(a, item, &tm, &tn);
        /* the store two tiles back (this buffer's) has read it */
        asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
        spin(a.delay);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        const unsigned s = base + (unsigned)buf * tile_bytes;
        for (int b = 0; b < a.BN / 64; b++)
            for (int h = 0; h < 2; h++)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(&map),
                             "r"(s + (unsigned)(2 * b + h) * 8192u), "r"(tn * a.BN + 64 * b), "r"(tm * 128 + 64 * h)
                             : "memory");
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    }
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

int main(int argc, char **argv)
{
    Args a = {36864, 3072, 128, 8, 0, 0, 0};
    int blocks = 132;
    for (int i = 1; i + 1 < argc; i += 2) {
        const long v = strtol(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--M")) a.M = (int)v;
        else if (!strcmp(argv[i], "--N")) a.N = (int)v;
        else if (!strcmp(argv[i], "--bn")) a.BN = (int)v;
        else if (!strcmp(argv[i], "--group")) a.group = (int)v;
        else if (!strcmp(argv[i], "--delay")) a.delay = v;
        else if (!strcmp(argv[i], "--blocks")) blocks = (int)v;
        else {
            fprintf(stderr, "store-rate: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (a.M % 128 || a.BN % 64 || a.BN > 256 || a.N % a.BN || a.group < 1 || blocks < 1) {
        fprintf(stderr, "store-rate: M a multiple of 128, BN of 64 up to 256 dividing N, group and blocks >= 1\n");
        return 2;
    }
    a.tiles_m = a.M / 128;
    a.tiles_n = a.N / a.BN;
    const double bytes = 2.0 * a.M * a.N;
    unsigned short *c = NULL;
    if (cudaMalloc(&c, (size_t)bytes) != cudaSuccess) {
        fprintf(stderr, "store-rate: no memory for C\n");
        return 1;
    }
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)a.N, (cuuint64_t)a.M}, strides[1] = {(cuuint64_t)a.N * 2};
    cuuint32_t box[2] = {64, 64}, estr[2] = {1, 1};
    if (cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, c, dims, strides, box, estr,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        fprintf(stderr, "store-rate: cuTensorMapEncodeTiled failed\n");
        return 1;
    }
    const int smem = 2 * 128 * a.BN * 2 + 1024;
    cudaFuncSetAttribute(tiles_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    const float t_fill = median_ms([&] {
        fill<<<blocks, THREADS>>>((uint4 *)c, (long long)(bytes / 16));
        return cudaGetLastError();
    });
    const float t_regs = median_ms([&] {
        tiles_regs<<<blocks, THREADS>>>(a, c);
        return cudaGetLastError();
    });
    const float t_tma = median_ms([&] {
        tiles_tma<<<blocks, THREADS, smem>>>(map, a);
        return cudaGetLastError();
    });
    printf("C %d x %d f16 (%.0f MB), %d blocks, tiles 128 x %d, group %d, delay %lld cycles a tile:\n", a.M, a.N,
           bytes / 1e6, blocks, a.BN, a.group, a.delay);
    printf("  fill %.4f ms %.2f TB/s   tiles from registers %.4f ms %.2f TB/s   tiles by TMA %.4f ms %.2f TB/s\n", t_fill,
           bytes / t_fill / 1e9, t_regs, bytes / t_regs / 1e9, t_tma, bytes / t_tma / 1e9);
    cudaFree(c);
    return 0;
}
