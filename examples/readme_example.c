/* examples/readme_example.c — the README's example, built and run by tests/test_readme.c. */
#include <math.h>
#include <stdio.h>

#include "kiln.h"

/* Every kiln call returns a status; on failure print the detail and clean up. */
#define TRY(call)                                                                      \
    do {                                                                               \
        kiln_status st_ = (call);                                                      \
        if (st_ != KILN_OK) {                                                          \
            fprintf(stderr, "%s failed: %s: %s\n", #call, kiln_status_name(st_),       \
                    kiln_last_error(ctx));                                             \
            goto done;                                                                 \
        }                                                                              \
    } while (0)

enum { N = 4, C = 6, K = 3 };

int main(void)
{
    kiln_ctx *ctx = NULL;
    kiln_tensor *A = NULL, *V = NULL, *W = NULL, *Y = NULL;
    const int64_t shape_A[2] = {N, C}, shape_V[2] = {N, 1}, shape_W[2] = {C, K}, shape_Y[2] = {N, K};
    int rc = 1;

    /* A context picks the backend (KILN_DEVICE=cpu|cuda|auto) and owns the RNG seed. */
    TRY(kiln_ctx_create(&ctx, &(kiln_ctx_args){.seed = 42}));
    printf("kiln %s, backend %s (%s)\n", kiln_version(), kiln_ctx_backend_name(ctx),
           kiln_ctx_device_description(ctx));

    /* A random (N, C) tensor: rand() takes the shape of what it is assigned to. */
    TRY(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape_A, &A));
    TRY(kiln_assign(A, kiln_mul(kiln_rand(), kiln_scalar(10.0))));

    /* The variance of every row, one fused expression. Builders consume their
     * arguments, so nested calls need no frees; kiln_t(A) does not consume A. */
    TRY(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape_V, &V));
    TRY(kiln_assign(V, kiln_mean(kiln_sqr(kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1))), 1)));

    /* Batch-norm in place: A = rsqrt(var(A,1) + eps) * (A - mean(A,1)). */
    TRY(kiln_assign(A, kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(A), 1), kiln_scalar(1e-5))),
                                kiln_sub(kiln_t(A), kiln_mean(kiln_t(A), 1)))));

    /* GEMM: Y = A @ W with W (C, K) made from host data. */
    float w[C * K];
    for (int i = 0; i < C * K; i++) w[i] = 0.1f * (float)(i % 7) - 0.3f;
    TRY(kiln_tensor_from_host(ctx, KILN_DTYPE_F32, 2, shape_W, w, KILN_DTYPE_F32, &W));
    TRY(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape_Y, &Y));
    TRY(kiln_dot(Y, A, W, 1.0, 0.0, NULL));

    /* Read the results back to the host and print them. */
    float a[N][C], v[N], y[N][K];
    TRY(kiln_tensor_read(A, a, KILN_DTYPE_F32));
    TRY(kiln_tensor_read(V, v, KILN_DTYPE_F32));
    TRY(kiln_tensor_read(Y, y, KILN_DTYPE_F32));
    int ok = 1;
    for (int i = 0; i < N; i++) {
        double mean = 0.0, var = 0.0;
        for (int j = 0; j < C; j++) mean += a[i][j] / C;
        for (int j = 0; j < C; j++) var += (a[i][j] - mean) * (a[i][j] - mean) / C;
        printf("row %d: variance %8.4f -> after batch-norm mean %+.1e variance %.4f;"
               " y = [%+.4f %+.4f %+.4f]\n", i, v[i], mean, var, y[i][0], y[i][1], y[i][2]);
        ok = ok && v[i] > 0.0f && fabs(mean) < 1e-4 && fabs(var - 1.0) < 1e-3;
    }

    /* Every byte of tensor storage goes through the context's counting allocator. */
    kiln_mem_stats ms;
    TRY(kiln_mem_get_stats(ctx, &ms));
    printf("memory: %zu bytes in use in %lld blocks, peak %zu\n", ms.in_use, (long long)ms.live_blocks,
           ms.peak);
    rc = ok ? 0 : 1;
done:
    kiln_tensor_release(A);
    kiln_tensor_release(V);
    kiln_tensor_release(W);
    kiln_tensor_release(Y);
    kiln_ctx_destroy(ctx);
    return rc;
}
