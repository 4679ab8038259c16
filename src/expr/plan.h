/*
 * src/expr/plan.h — the backend-neutral plan of one assignment, built by src/expr and run
 * by a backend (src/cpu interprets it; src/cuda turns each kernel into CUDA C).
 *
 * A plan is an ordered list of kernels. Each kernel iterates over a DOMAIN: a shape D of
 * rank ndim and a set of REDUCED axes M (bit i of reduce_mask = axis i of D). The points
 * of D with the reduced axes removed are ROWS (the outer space); for each row the kernel
 * walks the reduced axes (the inner space). A kernel with reduce_mask 0 is purely
 * element-wise: every point is its own row.
 *
 * The kernel's program is SSA: instr[i] may use only instr[j] with j < i. Every
 * instruction lives in one SPACE:
 *   FULL — one value per point of D;
 *   ROW  — one value per row (constant along the reduced axes).
 * A reduction (RED_*) takes a FULL argument and yields a ROW value; ROW values may be used
 * by FULL instructions (broadcast along the reduced axes). LOADs of inputs whose strides
 * are 0 on every reduced axis, CONSTs and instructions on ROW values only are ROW.
 * Every reduction has a PASS number: 1 + the largest pass of any reduction its argument
 * depends on (0 when none). A backend runs, per row, the passes in order (all reductions of
 * one pass may share one walk of the row), then the output pass, which evaluates out_instr
 * and stores it (at every point when the output is FULL, once per row when it is ROW).
 *
 * Arithmetic is done in f64 when compute_f64 is set, else in f32; values are loaded from
 * the input's dtype into the compute type, and stored with the output's rounding.
 *
 * Random numbers: RAND, RANDN and BERNOULLI draw from Philox4x32-10 with key = the
 * context seed and counter = (index, stream) where stream = streams[instr.a] and index is
 * the row-major linear index of the point in the instruction's space (FULL: in D; ROW: in
 * the outer space). The exact recipe is in src/core/numeric.h, shared by both backends.
 * Stochastic rounding of the output uses stream out.sr_stream and the linear index of the
 * stored element in the output's space.
 */
#ifndef KILN_EXPR_PLAN_H
#define KILN_EXPR_PLAN_H

#include <stdint.h>

#include "core/internal.h"

/* Instruction opcodes: name, number of instruction operands (a, b, c). */
#define KILN_POP_LIST(X)                                                                          \
    X(LOAD, 0)      /* inputs[a] at the current point */                                          \
    X(CONST, 0)     /* consts[a] */                                                               \
    X(NEG, 1)                                                                                     \
    X(ABS, 1)                                                                                     \
    X(SQR, 1)                                                                                     \
    X(SQRT, 1)                                                                                    \
    X(RSQRT, 1)                                                                                   \
    X(RECIP, 1)                                                                                   \
    X(EXP, 1)                                                                                     \
    X(EXP2, 1)                                                                                    \
    X(LOG, 1)                                                                                     \
    X(LOG2, 1)                                                                                    \
    X(SIGMOID, 1)                                                                                 \
    X(TANH, 1)                                                                                    \
    X(RELU, 1)                                                                                    \
    X(FINITE, 1)                                                                                  \
    X(SIGN, 1)                                                                                    \
    X(LOG1P, 1)     /* log(1 + a), accurate near 0 */                                             \
    X(EXPM1, 1)     /* exp(a) - 1, accurate near 0 */                                             \
    X(SIN, 1)                                                                                     \
    X(COS, 1)                                                                                     \
    X(ERF, 1)                                                                                     \
    X(FLOOR, 1)                                                                                   \
    X(CEIL, 1)                                                                                    \
    X(RINT, 1)      /* to the nearest integer, ties to even */                                    \
    X(TRUNC, 1)     /* towards 0 */                                                               \
    X(CAST, 1)      /* round a to instr.dtype as a store of that dtype would (no SR) */           \
    X(ADD, 2)                                                                                     \
    X(SUB, 2)                                                                                     \
    X(MUL, 2)                                                                                     \
    X(DIV, 2)                                                                                     \
    X(POW, 2)                                                                                     \
    X(FMOD, 2)      /* C's fmod: a - trunc(a / b) * b, exact, the sign of a; NaN for b = 0 */     \
    X(MAX, 2)       /* NaN-propagating maximum */                                                 \
    X(MIN, 2)                                                                                     \
    X(EQ, 2)                                                                                      \
    X(NE, 2)                                                                                      \
    X(LT, 2)                                                                                      \
    X(LE, 2)                                                                                      \
    X(GT, 2)                                                                                      \
    X(GE, 2)                                                                                      \
    X(WHERE, 3)     /* a != 0 ? b : c */                                                          \
    X(RAND, 0)      /* uniform [0,1), stream streams[a] */                                       \
    X(RANDN, 0)     /* standard normal, stream streams[a] */                                     \
    X(BERNOULLI, 0) /* 1 with probability consts[b], stream streams[a] */                        \
    X(RED_SUM, 1)   /* sum of a over the reduced axes of the row */                              \
    X(RED_PROD, 1)  /* product of a over the reduced axes of the row */                          \
    X(RED_MAX, 1)                                                                                 \
    X(RED_MIN, 1)                                                                                 \
    X(RED_VAR, 1)    /* population variance of a over the reduced axes, in one pass (Welford's \
                        update a point, Chan's merge of partial counts, means and M2 sums) */   \
    X(RED_ARGMAX, 1) /* index (row-major over the reduced axes) of the first maximum */          \
    X(RED_ARGMIN, 1)

typedef enum kiln_pop {
#define KILN_X_POP_ENUM(name, nargs) KILN_POP_##name,
    KILN_POP_LIST(KILN_X_POP_ENUM)
#undef KILN_X_POP_ENUM
        KILN_POP_COUNT
} kiln_pop;

/* Name ("ADD") and operand count of an opcode. */
const char *kiln__pop_name(kiln_pop op);
int kiln__pop_nargs(kiln_pop op);
static inline int kiln__pop_is_reduction(kiln_pop op) { return op >= KILN_POP_RED_SUM && op <= KILN_POP_RED_ARGMIN; }

typedef enum kiln_space { KILN_SPACE_FULL = 0, KILN_SPACE_ROW = 1 } kiln_space;

typedef struct kiln_plan_instr {
    uint8_t op;      /* kiln_pop */
    uint8_t space;   /* kiln_space */
    uint8_t dtype;   /* CAST: the target dtype; otherwise 0 */
    uint8_t pass;    /* reductions: their pass */
    int32_t a, b, c; /* operands: instruction indices, or input/const/stream indices */
} kiln_plan_instr;

typedef struct kiln_plan_input {
    const kiln_tensor *tensor;        /* the view read: a leaf of the expression or a temporary */
    char *base;                       /* backend address of element [0..0] of the view */
    kiln_dtype dtype;
    int64_t strides[KILN_MAX_DIMS];   /* elements per step along each axis of the DOMAIN; 0 = broadcast */
} kiln_plan_input;

typedef struct kiln_plan_output {
    kiln_tensor *tensor;              /* the destination view (possibly dst reshaped) */
    char *base;
    kiln_dtype dtype;
    int64_t strides[KILN_MAX_DIMS];   /* per DOMAIN axis; 0 on reduced axes when row-valued */
    int is_row;                       /* 1: one value per row (output space = outer space) */
    kiln_round round;                 /* KILN_ROUND_NEAREST or KILN_ROUND_STOCHASTIC, resolved */
    uint64_t sr_stream;               /* Philox stream for stochastic rounding */
} kiln_plan_output;

typedef struct kiln_plan_kernel {
    int ndim;                         /* rank of the domain, >= 0 */
    int64_t shape[KILN_MAX_DIMS];
    uint32_t reduce_mask;
    int compute_f64;
    int npasses;                      /* number of reduction passes (0 when none) */
    int ninputs, nconsts, nstreams, ninstr;
    kiln_plan_input *inputs;
    double *consts;                   /* values: kernel arguments, not part of the hash */
    uint64_t *streams;                /* Philox stream ids: kernel arguments */
    kiln_plan_instr *instr;
    int out_instr;                    /* the instruction whose value is stored */
    kiln_plan_output out;
    uint64_t hash;                    /* structure only: ops, spaces, dtypes, ranks, mask,
                                         which strides are 0 or 1; not sizes or values */
} kiln_plan_kernel;

typedef struct kiln_plan {
    int nkernels;
    kiln_plan_kernel *kernels;        /* run in order; later kernels read earlier temporaries */
    int ntemps;
    kiln_tensor **temps;              /* owned by the plan, released with it */
} kiln_plan;

/* Builds the plan of dst[...] = e (e not consumed). On failure returns the status with the
 * message recorded in dst's context. */
kiln_status kiln__plan_build(kiln_tensor *dst, const kiln_expr *e, kiln_round round, kiln_plan **out);
void kiln__plan_free(kiln_plan *p);
/* One line "kiln: plan kernels=N ..." describing the plan (for KILN_TRACE=plan), into buf. */
void kiln__plan_describe(const kiln_plan *p, char *buf, size_t cap);

#endif /* KILN_EXPR_PLAN_H */
