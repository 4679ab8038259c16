/*
 * src/ops/dot.h — the checked, backend-neutral description of one (batched) GEMM, made by
 * src/ops/dot.c from kiln_dot's arguments and run by a backend's gemm entry.
 *
 *   for every batch index b (row-major over batch_shape):
 *     C_b = relu?(alpha * A_b @ B_b + bias) + beta * C_b     (then rounding of 16-bit C)
 *   A_b is (M, K), B_b is (K, N), C_b is (M, N), bias is (N,) or absent.
 * Transposes are already folded into the strides: A_b[m, k] is at a + m*a_sm + k*a_sk.
 */
#ifndef KILN_OPS_DOT_H
#define KILN_OPS_DOT_H

#include "core/internal.h"

typedef struct kiln_gemm_desc {
    kiln_dtype dtype;                 /* of A, B, C and bias */
    int64_t M, N, K;
    int nbatch;                       /* number of batch axes (0 = plain GEMM) */
    int64_t batch_shape[KILN_MAX_DIMS];
    int64_t a_bstride[KILN_MAX_DIMS]; /* per batch axis, elements; 0 = broadcast */
    int64_t b_bstride[KILN_MAX_DIMS];
    int64_t c_bstride[KILN_MAX_DIMS];
    const char *a, *b;                /* backend addresses of element [0..0] */
    char *c;
    const char *bias;                 /* NULL = none */
    int64_t a_sm, a_sk;               /* A strides along M and K, elements (may be 0 or negative) */
    int64_t b_sk, b_sn;
    int64_t c_sm, c_sn;
    int64_t bias_s;                   /* bias stride along N */
    double alpha, beta;
    int relu;
    kiln_round round;                 /* resolved: NEAREST or STOCHASTIC */
    uint64_t sr_stream;               /* Philox stream for stochastic rounding of C */
    int allow_tf32;
    /* The output statistics (kiln_dot's stats; NULL = not asked for): a backend that computes
     * them with the product writes stats[0] = max |x| over the finite elements of C (0 when
     * none) and stats[1] = the count of its non-finite ones, as kiln_dot's pass over C would,
     * into `stats` (stats_dtype F32 or F64, stride stats_s elements) and sets *stats_done to 1;
     * where it leaves *stats_done 0, kiln_dot runs that pass after it. */
    char *stats;
    kiln_dtype stats_dtype;
    int64_t stats_s;
    int *stats_done;
} kiln_gemm_desc;

#endif /* KILN_OPS_DOT_H */
