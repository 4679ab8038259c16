/*
 * tools/gemm-src.c - the CUDA source of the GEMM kernel kiln would build for one product
 * (wgmma, mma.sync or FFMA), without a GPU.
 *
 * A diagnostic for kernel work, not part of the library. It runs the tile rule
 * (kiln__cuda_gemm_wgmma_prepare; with --kernel mma or ffma, that kernel's prepare) on a
 * packed row-major product and writes that plan's generated kernel source to stdout, the
 * plan in one line to stderr. The source is what
 * NVRTC compiles at run time, so `nvcc -arch=sm_90a -cubin --fmad=false -std=c++17
 * -Xptxas -v` gives its registers and spills and cuobjdump its SASS on any machine.
 * tools/gemm-sass.sh does both. Why it exists: an EARLY_SR kernel of the same registers and
 * spills as the plain one ran 2-7 % slower because ptxas had moved work into every mainloop
 * slice (bench/NOTES.md step 43).
 *
 *   gemm-src MxNxK [--kernel wgmma|mma|ffma] [--dtype f16|bf16|tf32|f32]
 *            [--epilogue bias,relu,sr,stats,beta] [--bt] [--sms N] [--opt NAME=VALUE ...]
 *
 * A (M, K) @ B (K, N) = C (M, N), all row-major (--bt: B stored (N, K), K-major); stats: the
 * output statistics in the epilogue (kiln_dot's stats); beta: beta 0.5 (C read back). The
 * mma.sync kernel takes f16 and bf16, FFMA f32 (the default dtype there). --opt sets a
 * field of kiln_gemm_wgmma_opts (src/cuda/gemm_plan.h) with its encoding there, 0 = the
 * rule's, as the KILN_WGMMA_* variables do: bn, splits, pingpong, cbufs, split_sum, mcast,
 * kpair, group_m, grid, stages, bhint, chint, early_sr, tma_store (default 1), stage_deep,
 * fast_dram (1: the rule for a device whose DRAM peaks at 4 TB/s or more).
 * A bad argument is an error naming it (exit 2).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/gemm_plan.h"

static int usage(const char *bad, const char *why)
{
    fprintf(stderr, "gemm-src: %s: %s\n", bad, why);
    fprintf(stderr, "usage: gemm-src MxNxK [--kernel wgmma|mma|ffma] [--dtype f16|bf16|tf32|f32] "
                    "[--epilogue bias,relu,sr,stats,beta] [--bt] [--sms N] [--opt NAME=VALUE ...]\n");
    return 2;
}

/* Writes a generated source (malloc'd; NULL: out of memory) to stdout and frees it; the exit status */
static int put_source(char *src)
{
    if (!src) {
        fprintf(stderr, "gemm-src: out of memory\n");
        return 1;
    }
    fputs(src, stdout);
    free(src);
    return 0;
}

/* A whole number from lo to hi in text into *out; 0 where text is not one */
static int parse_int(const char *text, long lo, long hi, int *out)
{
    char *end;
    const long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

/* --opt NAME=VALUE into the field of o it names; 0 where it names none or the value is bad */
static int set_opt(kiln_gemm_wgmma_opts *o, const char *spec)
{
    static const struct {
        const char *name;
        size_t offset;
        int most;
    } fields[] = {
        {"bn", offsetof(kiln_gemm_wgmma_opts, bn), 256},
        {"splits", offsetof(kiln_gemm_wgmma_opts, splits), 64},
        {"pingpong", offsetof(kiln_gemm_wgmma_opts, pingpong), 2},
        {"cbufs", offsetof(kiln_gemm_wgmma_opts, cbufs), 2},
        {"split_sum", offsetof(kiln_gemm_wgmma_opts, split_sum), 3},
        {"mcast", offsetof(kiln_gemm_wgmma_opts, mcast), 2},
        {"kpair", offsetof(kiln_gemm_wgmma_opts, kpair), 3},
        {"group_m", offsetof(kiln_gemm_wgmma_opts, group_m), 1024},
        {"grid", offsetof(kiln_gemm_wgmma_opts, grid), 65536},
        {"stages", offsetof(kiln_gemm_wgmma_opts, stages), 16},
        {"bhint", offsetof(kiln_gemm_wgmma_opts, bhint), 2},
        {"chint", offsetof(kiln_gemm_wgmma_opts, chint), 3},
        {"early_sr", offsetof(kiln_gemm_wgmma_opts, early_sr), 2},
        {"tma_store", offsetof(kiln_gemm_wgmma_opts, tma_store), 1},
        {"stage_deep", offsetof(kiln_gemm_wgmma_opts, stage_deep), 1},
        {"fast_dram", offsetof(kiln_gemm_wgmma_opts, fast_dram), 1},
    };
    const char *eq = strchr(spec, '=');
    if (!eq) return 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strlen(fields[i].name) != (size_t)(eq - spec) || strncmp(fields[i].name, spec, (size_t)(eq - spec)))
            continue;
        return parse_int(eq + 1, 0, fields[i].most, (int *)((char *)o + fields[i].offset));
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage("(no shape)", "give the product as MxNxK");
    long long M, N, K;
    char tail;
    if (sscanf(argv[1], "%lldx%lldx%lld%c", &M, &N, &K, &tail) != 3 || M < 1 || N < 1 || K < 1 || M > INT32_MAX ||
        N > INT32_MAX || K > INT32_MAX)
        return usage(argv[1], "not a shape MxNxK of positive sizes");
    kiln_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = KILN_DTYPE_F16;
    d.M = M, d.N = N, d.K = K;
    d.a = d.b = d.c = (char *)(uintptr_t)4096; /* 16-byte aligned; the plan reads no memory */
    d.a_sm = K, d.a_sk = 1, d.b_sk = N, d.b_sn = 1, d.c_sm = N, d.c_sn = 1, d.bias_s = 1;
    d.alpha = 1.0;
    kiln_gemm_wgmma_opts o;
    memset(&o, 0, sizeof o);
    o.tma_store = 1;
    int sms = 132, dtype_given = 0;
    enum { WGMMA, MMA, FFMA } kernel = WGMMA;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--bt")) {
            d.b_sk = 1, d.b_sn = K;
        } else if (!strcmp(a, "--kernel") && v) {
            i++;
            if (!strcmp(v, "wgmma"))
                kernel = WGMMA;
            else if (!strcmp(v, "mma"))
                kernel = MMA;
            else if (!strcmp(v, "ffma"))
                kernel = FFMA;
            else
                return usage(v, "--kernel is wgmma, mma or ffma");
        } else if (!strcmp(a, "--dtype") && v) {
            i++;
            dtype_given = 1;
            if (!strcmp(v, "f16"))
                d.dtype = KILN_DTYPE_F16;
            else if (!strcmp(v, "bf16"))
                d.dtype = KILN_DTYPE_BF16;
            else if (!strcmp(v, "tf32"))
                d.dtype = KILN_DTYPE_F32, d.allow_tf32 = 1;
            else if (!strcmp(v, "f32"))
                d.dtype = KILN_DTYPE_F32, d.allow_tf32 = 0;
            else
                return usage(v, "--dtype is f16, bf16, tf32 or f32");
        } else if (!strcmp(a, "--epilogue") && v) {
            i++;
            char list[64];
            if (strlen(v) >= sizeof list) return usage(v, "--epilogue too long");
            strcpy(list, v);
            for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!strcmp(t, "bias"))
                    d.bias = (const char *)(uintptr_t)4096;
                else if (!strcmp(t, "relu"))
                    d.relu = 1;
                else if (!strcmp(t, "sr"))
                    d.round = KILN_ROUND_STOCHASTIC;
                else if (!strcmp(t, "stats"))
                    d.stats = (char *)(uintptr_t)8192;
                else if (!strcmp(t, "beta"))
                    d.beta = 0.5;
                else
                    return usage(t, "--epilogue takes bias, relu, sr, stats and beta");
            }
        } else if (!strcmp(a, "--sms") && v) {
            i++;
            if (!parse_int(v, 1, 1024, &sms)) return usage(v, "--sms is a count of SMs from 1 to 1024");
        } else if (!strcmp(a, "--opt") && v) {
            i++;
            if (!set_opt(&o, v))
                return usage(
                    v, "--opt is NAME=VALUE for a field of kiln_gemm_wgmma_opts (see the top of tools/gemm-src.c)");
        } else {
            return usage(a, v || a[0] != '-' ? "unknown argument" : "needs a value");
        }
    }
    if (kernel == FFMA && !dtype_given) d.dtype = KILN_DTYPE_F32;
    if (kernel == MMA && d.dtype == KILN_DTYPE_F32)
        return usage("--dtype", "the mma.sync kernel takes f16 and bf16");
    if (kernel == FFMA && (d.dtype != KILN_DTYPE_F32 || d.allow_tf32))
        return usage("--dtype", "the FFMA kernel takes f32");
    if (d.round == KILN_ROUND_STOCHASTIC && d.dtype == KILN_DTYPE_F32)
        return usage("sr", "stochastic rounding needs a 16-bit C (--dtype f16 or bf16)");
    if (kernel == WGMMA && d.dtype == KILN_DTYPE_F32 && !d.allow_tf32)
        return usage("--dtype", "the wgmma kernel takes f16, bf16 and tf32 (f32: --kernel ffma)");
    kiln_gemm_batches bt;
    kiln__cuda_gemm_merge_batches(&d, &bt);
    if (kernel != WGMMA) {
        char *src;
        if (kernel == MMA) {
            kiln_gemm_mma_launch l;
            kiln__cuda_gemm_mma_prepare(&d, &bt, 1, &l);
            fprintf(stderr, "gemm-src %s: mma.sync, grid %u x %u\n", argv[1], l.gx, l.gy);
            src = kiln__cuda_gemm_mma_source_text(&l.cfg);
        } else {
            kiln_gemm_ffma_launch l;
            kiln__cuda_gemm_ffma_prepare(&d, &bt, sms, NULL, &l);
            fprintf(stderr, "gemm-src %s: FFMA, grid %u x %u\n", argv[1], l.gx, l.gy);
            src = kiln__cuda_gemm_ffma_source_text(&l.cfg);
        }
        return put_source(src);
    }
    if (!kiln__cuda_gemm_wgmma_shape_ok(&d, &bt))
        return usage(argv[1], "not a product the wgmma kernel takes (rows of whole 16-byte chunks)");
    kiln_gemm_wgmma_launch l;
    kiln__cuda_gemm_wgmma_prepare(&d, &bt, sms, 1, &o, &l);
    const kiln_gemm_wgmma_cfg *c = &l.cfg;
    fprintf(
        stderr,
        "gemm-src %s: bn %d, kpair %d, splits %d, grid %u, tiles %lld, smem %u, workspace %zu bytes; pingpong %d, "
        "cluster %d, slice_sum %d, mcast %d, tma_store %d, cbufs %d, stages_cap %d, bhint %d, chint %d, early_sr %d, "
        "group_m %d, ws_split %d\n",
        argv[1], c->bn, c->kpair, (int)l.w[26], l.grid, (long long)l.tiles, (unsigned)l.smem, l.ws_bytes, c->pingpong,
        c->cluster, c->slice_sum, c->mcast, c->tma_store, c->cbufs, c->stages_cap, c->bhint, c->chint, c->early_sr,
        (int)l.w[41], c->ws_split);
    return put_source(kiln__cuda_gemm_wgmma_source_text(c));
}
