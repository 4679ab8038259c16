/*
 * tools/tma-ring.cuh - the mbarrier and TMA-load wrappers of the diagnostic tools' rings
 * (tools/ring-rate.cu, tools/dram-read.cu; neither is part of the library): a shared-memory
 * address, a barrier's set-up, arrivals, the expected bytes, the spin on a phase, and one 2-D
 * tensor-map load completing on a barrier. sm_90a.
 */
#pragma once
#include <cuda.h>

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void bar_expect(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ void bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* spin on try_wait (no suspend-time hint, as kiln's kg_bar_wait) until the barrier's phase
 * `phase` has completed */
__device__ __forceinline__ void bar_wait_plain(unsigned bar, unsigned phase)
{
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(bar),
                 "r"(phase)
                 : "memory");
}

/* one box of map at (c0 inner, c1 outer) into shared memory at dst, its bytes counted on bar */
__device__ __forceinline__ void tma_load(unsigned dst, const CUtensorMap *map, int c0, int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
