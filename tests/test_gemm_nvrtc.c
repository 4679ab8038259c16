/*
 * tests/test_gemm_nvrtc.c — kiln's own GEMM kernels through NVRTC, as the CUDA backend builds
 * them, on a machine with the CUDA toolkit's NVRTC and no GPU.
 *
 * test_gemm_emu runs the kernels' logic on a host emulator, compiled by the host's C++
 * compiler; what only NVRTC would reject (a device built-in, an inline PTX operand, a
 * constexpr branch that does not type-check, 48 KiB of static shared memory) would show only on
 * a GPU visit. This test generates the sources the tile rules pick for a spread of
 * products (the squares, the fully-connected shapes' fprop, bprop and update, split-K, k
 * pairs, ping-pong, multicast, register stores, tf32, ragged edges, batches; mma.sync and
 * FFMA structures), each plain and with the output statistics, and the statistics' finishing
 * kernel, and compiles each for sm_90a
 * with the backend's options (src/cuda/nvrtc.c) and ptxas's report, printing the registers
 * and spills. Skips where no NVRTC library loads (or under a sanitizer: NVRTC is not built
 * for one).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda/gemm_plan.h"

#include "gemm_generators.h"
#include "nvrtc_compile.h"

#pragma weak kiln__cuda_gemm_stats_out_src


/* A packed row-major product (B stored (N, K) where bt), at 256-byte aligned addresses the
 * kernels never touch here */
static kiln_gemm_desc product(kiln_dtype dt, int64_t nb, int64_t M, int64_t N, int64_t K, int bt, int bias, int relu,
                              int sr, int stats)
{
    static char place[256] __attribute__((aligned(256)));
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = dt;
    d.M = M, d.N = N, d.K = K;
    d.nbatch = nb > 1;
    d.batch_shape[0] = nb;
    d.a_bstride[0] = M * K, d.b_bstride[0] = K * N, d.c_bstride[0] = M * N;
    d.a = place, d.b = place, d.c = place;
    d.a_sm = K, d.a_sk = 1;
    d.b_sk = bt ? 1 : N, d.b_sn = bt ? K : 1;
    d.c_sm = N, d.c_sn = 1;
    d.alpha = 1.0;
    d.relu = relu;
    d.allow_tf32 = dt == KILN_DTYPE_F32;
    if (bias) d.bias = place, d.bias_s = 1;
    d.round = sr ? KILN_ROUND_STOCHASTIC : KILN_ROUND_NEAREST;
    if (stats) d.stats = place, d.stats_dtype = KILN_DTYPE_F32, d.stats_s = 1;
    return d;
}

int main(void)
{
    if (!kiln__cuda_gemm_wgmma_prepare || !kiln__cuda_gemm_wgmma_source_text || !kiln__cuda_gemm_mma_prepare ||
        !kiln__cuda_gemm_mma_source_text || !kiln__cuda_gemm_ffma_prepare || !kiln__cuda_gemm_ffma_source_text ||
        !kiln__cuda_gemm_merge_batches || !kiln__cuda_gemm_stats_out_src) {
        printf("the library has no GEMM kernel generators: skipped\n");
        return CHECK_SKIP;
    }
    nvrtc_api api;
    if (!nvrtc_ready(&api)) return CHECK_SKIP;
    const kiln_dtype F16 = KILN_DTYPE_F16, BF16 = KILN_DTYPE_BF16, F32 = KILN_DTYPE_F32;
    /* the wgmma plans: the product, then the rule's options (KILN_WGMMA_* as kiln_gemm_wgmma_opts) */
    static const struct {
        kiln_dtype dt;
        int64_t nb, M, N, K;
        int bt, bias, relu, sr, sms;
        kiln_gemm_wgmma_opts o;
    } wg[] = {
        {KILN_DTYPE_F16, 1, 4096, 4096, 4096, 0, 0, 0, 0, 132, {.tma_store = 1}},
        {KILN_DTYPE_F16, 1, 4096, 4096, 4096, 0, 1, 1, 1, 132, {.tma_store = 1}},
        {KILN_DTYPE_BF16, 1, 8192, 8192, 8192, 0, 0, 0, 0, 132, {.tma_store = 1}},
        {KILN_DTYPE_F16, 1, 128, 4096, 9216, 0, 1, 1, 1, 132, {.tma_store = 1}},                 /* k pairs */
        {KILN_DTYPE_BF16, 1, 128, 1000, 4096, 0, 1, 0, 0, 132, {.tma_store = 1}},                /* split-K */
        {KILN_DTYPE_F16, 1, 4096, 4096, 128, 0, 1, 1, 1, 132, {.tma_store = 1}},                 /* update */
        {KILN_DTYPE_BF16, 1, 4096, 4096, 128, 0, 0, 0, 1, 132, {.tma_store = 1}},
        {KILN_DTYPE_F16, 1, 4096, 4096, 128, 0, 0, 0, 0, 132, {.tma_store = 1}},                 /* ping-pong */
        {KILN_DTYPE_F16, 1, 1000, 4096, 128, 1, 0, 0, 0, 132, {.tma_store = 1, .mcast = 2}},     /* multicast */
        {KILN_DTYPE_F16, 1, 4096, 4096, 4096, 0, 1, 0, 1, 132, {.tma_store = 0}},                /* register stores */
        {KILN_DTYPE_F16, 1, 128, 128, 65536, 0, 0, 0, 1, 132, {.tma_store = 1, .splits = 8, .split_sum = 1}},
        {KILN_DTYPE_F16, 1, 128, 128, 65536, 0, 1, 0, 0, 132, {.tma_store = 1, .splits = 8, .split_sum = 3}},
        {KILN_DTYPE_F16, 1, 128, 128, 65536, 0, 0, 1, 0, 132, {.tma_store = 0, .splits = 8, .split_sum = 2}},
        {KILN_DTYPE_F32, 1, 4096, 4096, 4096, 1, 1, 1, 0, 132, {.tma_store = 1}},                /* tf32 */
        {KILN_DTYPE_F32, 1, 128, 4096, 9216, 1, 0, 0, 0, 132, {.tma_store = 1}},
        {KILN_DTYPE_BF16, 3, 70, 200, 64, 0, 1, 1, 1, 8, {.tma_store = 1}},                      /* batches */
        {KILN_DTYPE_F16, 1, 128, 4096, 9216, 0, 1, 1, 1, 132, {.tma_store = 1, .fast_dram = 1}}, /* the H200's */
    };
    int ok = 0, all = 0;
    char what[160];
    printf("%-64s %-6s %5s %6s\n", "kernel", "stats", "regs", "spill");
    for (size_t i = 0; i < sizeof wg / sizeof wg[0]; i++)
        for (int stats = 0; stats < 2; stats++) {
            kiln_gemm_desc d = product(wg[i].dt, wg[i].nb, wg[i].M, wg[i].N, wg[i].K, wg[i].bt, wg[i].bias,
                                       wg[i].relu, wg[i].sr, stats);
            kiln_gemm_batches bt;
            kiln__cuda_gemm_merge_batches(&d, &bt);
            kiln_gemm_wgmma_launch l;
            kiln__cuda_gemm_wgmma_prepare(&d, &bt, wg[i].sms, 1, &wg[i].o, &l);
            CHECK_INT(l.cfg.stats, stats);
            snprintf(what, sizeof what, "wgmma %s %lldx%lldx%lldx%lld%s%s%s%s bn %d split %d", kiln_dtype_name(wg[i].dt),
                     (long long)wg[i].nb, (long long)wg[i].M, (long long)wg[i].N, (long long)wg[i].K,
                     wg[i].bias ? " bias" : "", wg[i].relu ? " relu" : "", wg[i].sr ? " sr" : "",
                     l.cfg.tma_store ? "" : " regs", l.cfg.bn, (int)l.w[26]);
            int regs, spill;
            const int good = compile(&api, kiln__cuda_gemm_wgmma_source_text(&l.cfg), what, &regs, &spill);
            printf("%-64s %-6d %5d %6d%s\n", what, stats, regs, spill, good ? "" : "  FAILED");
            ok += good, all++;
        }
    /* the tiled kernels: mma.sync (16-bit) and FFMA (f32) on a square, an update, a split
     * and a ragged product, plain and with bias, ReLU (and SR) */
    static const struct {
        int64_t M, N, K;
        int epi;
    } tiled[] = {{4096, 4096, 4096, 0}, {4096, 4096, 128, 1}, {64, 120, 5000, 0}, {129, 135, 70, 1}};
    const kiln_dtype tdt[3] = {F16, BF16, F32};
    for (size_t i = 0; i < sizeof tiled / sizeof tiled[0]; i++)
        for (int t = 0; t < 3; t++)
            for (int stats = 0; stats < 2; stats++) {
                const int epi = tiled[i].epi;
                kiln_gemm_desc d = product(tdt[t], 1, tiled[i].M, tiled[i].N, tiled[i].K, 0, epi, epi,
                                           epi && tdt[t] != F32, stats);
                d.allow_tf32 = 0;
                kiln_gemm_batches bt;
                kiln__cuda_gemm_merge_batches(&d, &bt);
                char *src;
                if (tdt[t] == F32) {
                    kiln_gemm_ffma_launch l;
                    kiln__cuda_gemm_ffma_prepare(&d, &bt, 132, NULL, &l);
                    CHECK_INT(l.cfg.stats, stats);
                    src = kiln__cuda_gemm_ffma_source_text(&l.cfg);
                } else {
                    kiln_gemm_mma_launch l;
                    kiln__cuda_gemm_mma_prepare(&d, &bt, 1, &l);
                    CHECK_INT(l.cfg.stats, stats);
                    src = kiln__cuda_gemm_mma_source_text(&l.cfg);
                }
                snprintf(what, sizeof what, "%s %s %lldx%lldx%lld%s", tdt[t] == F32 ? "ffma" : "mma.sync",
                         kiln_dtype_name(tdt[t]), (long long)tiled[i].M, (long long)tiled[i].N, (long long)tiled[i].K,
                         epi ? (tdt[t] == F32 ? " bias relu" : " bias relu sr") : "");
                int regs, spill;
                const int good = compile(&api, src, what, &regs, &spill);
                printf("%-64s %-6d %5d %6d%s\n", what, stats, regs, spill, good ? "" : "  FAILED");
                ok += good, all++;
            }
    /* the statistics' finish after a kernel that computed them (gemm.c) */
    {
        int regs, spill;
        const int good = compile(&api, strdup(kiln__cuda_gemm_stats_out_src), "kiln_gemm_stats_out", &regs, &spill);
        printf("%-64s %-6s %5d %6d%s\n", "kiln_gemm_stats_out", "-", regs, spill, good ? "" : "  FAILED");
        ok += good, all++;
    }
    (void)BF16;
    printf("%d of %d kernels compiled\n", ok, all);
    CHECK_INT(ok, all);
    return check_finish();
}
