/*
 * tools/lt-algos.c — what cuBLASLt offers for one GEMM shape: asks the heuristic for up to
 * 16 algorithms, times each (CUDA events, median of 25 runs after 5 warm-ups) and prints its
 * configuration (algorithm id, tile, stages, split-K count and reduction scheme, swizzle,
 * custom option) with the workspace it needs. A diagnostic for kiln's vendor path: it shows
 * whether the heuristic's first choice is the fastest one it knows.
 *
 *   lt-algos TYPE M N K OPA OPB [workspace-MiB [bias]]
 *     TYPE f32 | tf32 | f16 | bf16; OPA/OPB N or T; column-major, packed leading dimensions
 *     (A is M x K under OPA, B is K x N under OPB, D is M x N); bias: the BIAS epilogue (a
 *     vector of M, as kiln's fused `dot(...) + row vector` asks for).
 *   LT_REDUCTION_MASK=N (environment): CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, e.g. 2 for
 *     COMPUTE_TYPE only (split-K partials summed in f32), 0xff or unset for any scheme.
 * Exits 77 without a CUDA device.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#define CK(call)                                                                                 \
    do {                                                                                         \
        int c_ = (int)(call);                                                                    \
        if (c_ != 0) {                                                                           \
            fprintf(stderr, "lt-algos: %s failed (%d) at line %d\n", #call, c_, __LINE__);       \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int cfg(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr)
{
    int v = 0; /* every attribute printed here is a 32-bit value */
    size_t got = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(algo, attr, &v, sizeof v, &got) != CUBLAS_STATUS_SUCCESS) return -1;
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: lt-algos f32|tf32|f16|bf16 M N K N|T N|T [workspace-MiB [bias]]\n");
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "lt-algos: no CUDA device\n");
        return 77;
    }
    const char *ty = argv[1];
    int64_t m = atoll(argv[2]), n = atoll(argv[3]), k = atoll(argv[4]);
    cublasOperation_t opa = argv[5][0] == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = argv[6][0] == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
    size_t wsize = (size_t)((argc > 7 ? atof(argv[7]) : 8.0) * 1048576.0);
    int with_bias = argc > 8 && !strcmp(argv[8], "bias");
    cudaDataType_t dt = CUDA_R_32F;
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    size_t es = 4;
    if (!strcmp(ty, "tf32")) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (!strcmp(ty, "f16")) dt = CUDA_R_16F, es = 2;
    else if (!strcmp(ty, "bf16")) dt = CUDA_R_16BF, es = 2;
    else if (strcmp(ty, "f32") != 0) {
        fprintf(stderr, "lt-algos: TYPE must be f32, tf32, f16 or bf16, not '%s'\n", ty);
        return 2;
    }
    if (m < 1 || n < 1 || k < 1) {
        fprintf(stderr, "lt-algos: M, N and K must be positive\n");
        return 2;
    }
    int64_t ar = opa == CUBLAS_OP_N ? m : k, ac = opa == CUBLAS_OP_N ? k : m;
    int64_t br = opb == CUBLAS_OP_N ? k : n, bc = opb == CUBLAS_OP_N ? n : k;
    void *a, *b, *d, *ws = NULL;
    CK(cudaMalloc(&a, (size_t)(ar * ac) * es));
    CK(cudaMalloc(&b, (size_t)(br * bc) * es));
    CK(cudaMalloc(&d, (size_t)(m * n) * es));
    if (wsize) CK(cudaMalloc(&ws, wsize));
    void *bias = NULL;
    CK(cudaMalloc(&bias, (size_t)m * es));
    CK(cudaMemset(bias, 0x3c, (size_t)m * es));
    CK(cudaMemset(a, 0x3c, (size_t)(ar * ac) * es)); /* small finite values in every type */
    CK(cudaMemset(b, 0x3c, (size_t)(br * bc) * es));
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    CK(cublasLtMatmulDescCreate(&op, ct, CUDA_R_32F));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (with_bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    }
    cublasLtMatrixLayout_t la, lb, ld;
    CK(cublasLtMatrixLayoutCreate(&la, dt, (uint64_t)ar, (uint64_t)ac, ar));
    CK(cublasLtMatrixLayoutCreate(&lb, dt, (uint64_t)br, (uint64_t)bc, br));
    CK(cublasLtMatrixLayoutCreate(&ld, dt, (uint64_t)m, (uint64_t)n, m));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsize, sizeof wsize));
    const char *mask_env = getenv("LT_REDUCTION_MASK");
    if (mask_env && *mask_env) {
        char *end = NULL;
        unsigned long mv = strtoul(mask_env, &end, 0);
        if (*end || mv > 0xffffffffUL) {
            fprintf(stderr, "lt-algos: LT_REDUCTION_MASK must be a 32-bit number, not '%s'\n", mask_env);
            return 2;
        }
        uint32_t mask = (uint32_t)mv;
        CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof mask));
        printf("reduction scheme mask 0x%x\n", mask);
    }
    enum { NREQ = 16 };
    cublasLtMatmulHeuristicResult_t res[NREQ];
    int nres = 0;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, NREQ, res, &nres));
    float alpha = 1.0f, beta = 0.0f;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double flop = 2.0 * (double)m * (double)n * (double)k;
    printf("%s M=%lld N=%lld K=%lld op%c%c%s workspace %.1f MiB: %d algorithms\n", ty, (long long)m, (long long)n,
           (long long)k, argv[5][0], argv[6][0], with_bias ? " +bias" : "", wsize / 1048576.0, nres);
    printf("%3s %5s %5s %6s %6s %6s %6s %7s %7s %10s %9s %8s\n", "#", "id", "tile", "stages", "splitk", "reduce",
           "swizz", "custom", "ws-KiB", "median-us", "TFLOP/s", "waves");
    for (int i = 0; i < nres; i++) {
        enum { WARM = 5, RUNS = 25 };
        float us[RUNS];
        int ok = 1;
        for (int r = 0; r < WARM + RUNS && ok; r++) {
            CK(cudaEventRecord(e0, s));
            ok = cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &res[i].algo, ws, wsize, s) ==
                 CUBLAS_STATUS_SUCCESS;
            CK(cudaEventRecord(e1, s));
            CK(cudaEventSynchronize(e1));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (r >= WARM) us[r - WARM] = ms * 1000.0f;
        }
        const cublasLtMatmulAlgo_t *al = &res[i].algo;
        printf("%3d %5d %5d %6d %6d %6d %6d %7d %7zu ", i, cfg(al, CUBLASLT_ALGO_CONFIG_ID),
               cfg(al, CUBLASLT_ALGO_CONFIG_TILE_ID), cfg(al, CUBLASLT_ALGO_CONFIG_STAGES_ID),
               cfg(al, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), cfg(al, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME),
               cfg(al, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), cfg(al, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION),
               res[i].workspaceSize / 1024);
        if (!ok) {
            printf("%10s\n", "failed");
            continue;
        }
        qsort(us, RUNS, sizeof us[0], cmp_float);
        printf("%10.1f %9.2f %8.2f\n", us[RUNS / 2], flop / (us[RUNS / 2] * 1e-6) / 1e12, res[i].wavesCount);
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(ld);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
    cudaFree(a);
    cudaFree(b);
    cudaFree(d);
    cudaFree(bias);
    if (ws) cudaFree(ws);
    return 0;
}
