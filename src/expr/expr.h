/*
 * src/expr/expr.h — the body of a lazy expression node (kiln_expr), shared by the builders
 * (expr.c), the planner (plan.c) and eval (eval.c). Not public.
 *
 * Nodes are immutable once built and reference counted; builders consume their children's
 * references. Shapes are computed at build time (numpy broadcasting, aligned right), and so
 * is the result dtype. Composite operators are lowered here so that CSE in the planner
 * shares their parts: MEAN = SUM * (1/n), VAR = MEAN(SQR(x - MEAN(x))), STD = SQRT(VAR),
 * dropout = x * BERNOULLI(1-p) * (1/(1-p)). A keepdims=0 reduction is a keepdims reduction
 * under a SQUEEZE node.
 */
#ifndef KILN_EXPR_EXPR_H
#define KILN_EXPR_EXPR_H

#include "core/internal.h"
#include "expr/plan.h"

typedef enum kiln_enode_kind {
    KILN_EN_ERROR = 0, /* carries status + msg; no children */
    KILN_EN_TENSOR,    /* leaf: reads `tensor` (one reference held) */
    KILN_EN_SCALAR,    /* leaf: `value`; weak dtype */
    KILN_EN_GEN,       /* generator: op RAND, RANDN, BERNOULLI (p in `value`); shape () */
    KILN_EN_OP,        /* element-wise op (a kiln_pop with 1..3 operands, CAST included) */
    KILN_EN_REDUCE,    /* op RED_*; child shape with the `mask` axes set to 1 (keepdims) */
    KILN_EN_SQUEEZE    /* child's shape without the `mask` axes (all of size 1) */
} kiln_enode_kind;

struct kiln_expr {
    int64_t refcount;   /* < 0: a static node, retain/release do nothing */
    uint8_t kind;       /* kiln_enode_kind */
    uint8_t op;         /* kiln_pop for GEN, OP and REDUCE */
    uint8_t weak;       /* 1: no tensor leaf decides the dtype (scalars and generators only) */
    uint8_t frac;       /* 1: may produce non-integers (an integer result becomes f32) */
    kiln_dtype dtype;   /* the result dtype (kiln_expr_dtype); AUTO for error nodes */
    kiln_dtype cast_to; /* CAST: the target dtype */
    int ndim;
    int64_t shape[KILN_MAX_DIMS];
    int nchild;
    struct kiln_expr *child[3];
    uint32_t mask;       /* REDUCE: reduced axes of the child; SQUEEZE: removed axes of the child */
    double value;        /* SCALAR: the value; GEN BERNOULLI: p */
    kiln_tensor *tensor; /* TENSOR */
    kiln_status status;  /* ERROR */
    char *msg;           /* ERROR: malloc'd, or a static string when the node is static */
    double size;         /* number of nodes of the tree below (counting shared nodes again) */
    int depth;           /* 1 for a leaf; at most KILN_EXPR_MAX_DEPTH */
};

/* mean((x - mean(x))^2) over mask, keepdims, as two dependent reductions (x consumed): what
 * RED_VAR computes in one pass, for the backends that take the two passes instead
 * (kiln_backend.var_one_pass, KILN_VAR_PASSES; the planner lowers RED_VAR with it). */
kiln_expr *kiln__var_two_pass(kiln_expr *x, uint32_t mask);

/* The one-pass rule of a GPU-like memory (kiln_backend.var_one_pass): 1 for a variance of x
 * (dtype dt, shape[ndim]) over mask down columns (the last axis of extent > 1 kept) written
 * out (written, not broadcast back over x) of f16, bf16 or f32 from 256 rows; broadcast back
 * (or of other dtypes) from 1024 rows, of f32 at any size and of other dtypes whose elements
 * take more than cache_bytes; 0 otherwise (along rows, few rows, or x small enough that a
 * second walk hits the cache). Measured on the H100 (NOTES steps 57-58, 76, 77), the 256-row
 * rule also on the H200 (step 78). */
int kiln__var_one_pass_columns(kiln_dtype dt, int ndim, const int64_t *shape, uint32_t mask, double cache_bytes,
                               int written);

/* Deepest expression a builder makes (the planner walks trees recursively); deeper ones
 * are error nodes (KILN_ERR_LIMIT) asking to evaluate a part first. */
#define KILN_EXPR_MAX_DEPTH 4096

#endif /* KILN_EXPR_EXPR_H */
