#!/usr/bin/env python3
"""tools/wgmma-rate.py - how fast warpgroups issue wgmma on this GPU, alone on one SM.

A diagnostic for kernel work on a GPU machine (sm_90a, nvcc on the PATH), not part of the
library. It writes a CUDA file with one kernel per case, builds it with nvcc and runs each
case on one block: every warpgroup of the block issues `reps` groups of four
m64nNk16 f16 wgmma (f32 accumulators, both operands in shared memory with the 128-byte
swizzle, the descriptors kiln's kernel uses), one group in flight (wait_group 1, as kiln's
consumers), and the block's clock64 span is divided by the wgmma count.

Cases: N = 64, 128, 256; one accumulator set or two (k steps alternating between them, so
that consecutive wgmma write different registers); B K-major or MN-major (wgmma's transpose
bit); one or two warpgroups at once. The table gives cycles per wgmma per warpgroup and the
block's rate against 4096 dense f16 FLOP a cycle an SM (H100 SXM: 989 TFLOP/s at 1.83 GHz on
132 SMs).

  python3 tools/wgmma-rate.py [--reps 512] [--keep DIR]

Written for bench/NOTES.md step 30's question: kiln's 64 x 64 k-pair consumers issued four
m64n64k16 in ~515 cycles with the tensor cores otherwise idle. Answer (H100 SXM, 2026-11-27,
NOTES step 31): every case runs at 99.6-99.9 % of the SM's rate (m64n64k16: 32.1 cycles alone,
64.2 each with two warpgroups), B K-major or MN-major, one accumulator set or two: the
instruction is not the floor; tools/ring-rate.cu times what is.
"""
import os
import shutil
import subprocess
import sys
import tempfile

CASES = [(n, sets, tb, wg) for n in (64, 128, 256) for sets in (1, 2) for tb in (0, 1) for wg in (1, 2)
         if n * sets <= 256]
PEAK = 4096  # dense f16 FLOP a cycle an SM


def mma_fn(n, tb):
    """A device function issuing one m64nNk16 wgmma on N/2 accumulators."""
    acc = n // 2
    regs = ", ".join("%%%d" % i for i in range(acc))
    cons = ", ".join('"+f"(d[%d])' % i for i in range(acc))
    return (
        "__device__ __forceinline__ void mma_%d_%d(float *d, unsigned long long da, unsigned long long db) {\n"
        '  asm volatile("{\\n.reg .pred p;\\nsetp.eq.u32 p, 1, 1;\\n"\n'
        '               "wgmma.mma_async.sync.aligned.m64n%dk16.f32.f16.f16 {%s}, %%%d, %%%d, p, 1, 1, 0, %d;\\n}\\n"\n'
        '               : %s : "l"(da), "l"(db));\n'
        "}\n" % (n, tb, n, regs, acc, acc + 1, tb, cons))


def kernel(n, sets, tb):
    name = "rate_%d_%d_%d" % (n, sets, tb)
    return name, """
extern "C" __global__ void __launch_bounds__(256, 1) %(name)s(long long *out, int reps) {
  extern __shared__ unsigned char sm[];
  const unsigned raw = (unsigned)__cvta_generic_to_shared(sm), base = (raw + 1023u) & ~1023u;
  /* ones in A and B (the values do not change the timing; finite keeps the sums finite) */
  for (unsigned i = threadIdx.x; i < 50u * 1024u / 4u; i += blockDim.x) ((unsigned *)sm)[i] = 0x3c003c00u;
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
  __syncthreads();
  /* A: 64 rows x 128 bytes K-major at base; B at base + 16 KiB: K-major rows of 128 bytes, or
   * MN-major 64-wide chunks of 64 k rows (8 KiB apart); low word: address >> 4 and the leading
   * byte offset >> 4; high word: stride 1024 >> 4 and the 128-byte swizzle */
  const unsigned alo = ((base & 0x3FFFFu) >> 4) | (1u << 16);
  const unsigned blo = (((base + 16384u) & 0x3FFFFu) >> 4) | ((%(tb)d ? 8192u >> 4 : 1u) << 16);
  const unsigned long long hi = (unsigned long long)((1024u >> 4) | (1u << 30)) << 32;
  float acc[%(sets)d][%(half)d];
#pragma unroll
  for (int s = 0; s < %(sets)d; s++)
#pragma unroll
    for (int i = 0; i < %(half)d; i++) acc[s][i] = 0.0f;
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
  const long long t0 = clock64();
  for (int r = 0; r < reps; r++) {
    asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
#pragma unroll
    for (int kk = 0; kk < 4; kk++)
      mma_%(n)d_%(tb)d(acc[kk %% %(sets)d], hi | (alo + 2u * kk), hi | (blo + (%(tb)d ? 128u : 2u) * kk));
    asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;\\n" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
  const long long t1 = clock64();
  float sum = 0.0f;
#pragma unroll
  for (int s = 0; s < %(sets)d; s++)
#pragma unroll
    for (int i = 0; i < %(half)d; i++) sum += acc[s][i];
  if ((threadIdx.x & 127) == 0) out[threadIdx.x >> 7] = t1 - t0;
  if (sum == 1234.5f) out[2] = 1; /* keeps the sums alive */
}
""" % {"name": name, "n": n, "sets": sets, "tb": tb, "half": n // 2}


def source(reps):
    parts = ["#include <cstdio>\n#include <cuda_runtime.h>\n"]
    for n in (64, 128, 256):
        for tb in (0, 1):
            parts.append(mma_fn(n, tb))
    calls = []
    for (n, sets, tb, wg) in CASES:
        name, text = kernel(n, sets, tb)
        if text not in parts:
            parts.append(text)
        calls.append('  failed |= run((const void *)%s, %d, %d, %d, %d, %d, out, "%s");\n' % (name, n, sets, tb, wg, reps, name))
    parts.append("""
static int run(const void *k, int n, int sets, int tb, int wg, int reps, long long *out, const char *name) {
  const int smem = 50 * 1024;
  if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
    printf("%%s: cudaFuncSetAttribute failed\\n", name);
    return 1;
  }
  long long h[3] = {0, 0, 0};
  for (int round = 0; round < 2; round++) { /* the first round warms up */
    void *args[] = {&out, &reps};
    cudaMemset(out, 0, 3 * sizeof(long long));
    if (cudaLaunchKernel(k, dim3(1), dim3(128 * wg), args, smem, 0) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
      printf("%%s: launch failed: %%s\\n", name, cudaGetErrorString(cudaGetLastError()));
      return 1;
    }
    cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  }
  const double span = (double)(h[0] > h[1] ? h[0] : h[1]), per = span / (4.0 * reps);
  const double flop = 2.0 * 64 * n * 16 * wg;
  printf("N %%3d  sets %%d  B %%s  warpgroups %%d   %%7.1f cycles a wgmma   %%5.1f %%%% of the SM's rate\\n", n, sets,
         tb ? "MN-major" : "K-major ", wg, per, 100.0 * flop / (per * %d));
  return 0;
}
int main() {
  long long *out;
  if (cudaMalloc(&out, 3 * sizeof(long long)) != cudaSuccess) { printf("no GPU\\n"); return 1; }
  int failed = 0;
%s  cudaFree(out);
  return failed;
}
""" % (PEAK, "".join(calls)))
    return "".join(parts)


def main(argv):
    reps = 512
    keep = None
    i = 0
    while i < len(argv):
        if argv[i] in ("--reps", "--keep") and i + 1 < len(argv):
            if argv[i] == "--keep":
                keep = argv[i + 1]
            elif not argv[i + 1].isdigit() or not 0 < int(argv[i + 1]) <= 1 << 20:
                sys.stderr.write("wgmma-rate: --reps: '%s' is not a whole number from 1 to 1048576\n" % argv[i + 1])
                return 2
            else:
                reps = int(argv[i + 1])
            i += 2
        else:
            sys.stderr.write("wgmma-rate: '%s' is not --reps N or --keep DIR\n" % argv[i])
            return 2
    work = keep or tempfile.mkdtemp(prefix="wgmma-rate-")
    os.makedirs(work, exist_ok=True)
    cu = os.path.join(work, "wgmma_rate.cu")
    exe = os.path.join(work, "wgmma_rate")
    with open(cu, "w") as f:
        f.write(source(reps))
    r = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-o", exe, cu])
    if r.returncode == 0:
        r = subprocess.run([exe])
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return r.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
