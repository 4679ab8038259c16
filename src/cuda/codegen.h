/*
 * src/cuda/codegen.h — what the two halves of the plan kernels' CUDA path share: codegen.c
 * (a plan kernel's layout, its instructions' analysis and its CUDA C source) and
 * codegen_launch.c (the choices a launch makes: vector lanes, modes, blocks, splits, the row
 * cache and deeper column workers; the kernel cache's structural key; the launch itself).
 * Private to those two files; the rest of the backend sees cuda.h and cuda_hooks.h.
 */
#ifndef KILN_CUDA_CODEGEN_H
#define KILN_CUDA_CODEGEN_H

#include "cuda/cuda.h"

#define MAXD KILN_MAX_DIMS
#define LAYOUT_NT 10    /* tensors a layout holds in place: 8 inputs, the output, the domain */
#define ANALYSIS_N 64   /* instructions an analysis holds in place */

/* A kernel's merged axes, strides and argument words. */
typedef struct layout {
    int nd;                   /* merged rank */
    int64_t size[MAXD];
    int red[MAXD];            /* 1 = reduced axis */
    int nt;                   /* tensors: inputs 0..ni-1, output ni, domain index ni+1 */
    int64_t (*st)[MAXD];      /* [nt][nd] strides in elements */
    int64_t R, L;             /* rows, points per row */
    int idx32;
    /* argument words */
    int w_size[MAXD];         /* word of each axis size */
    int *w_base;              /* [nt] pointer word (-1 for the domain index) */
    int (*w_st)[MAXD];        /* [nt][nd] stride word, -1 when the stride is 0 */
    int w_consts, w_streams, w_sr, nwords;
    int w_ws, w_sync;         /* split reductions: the partials' workspace, the grid barrier */
    /* the per-tensor arrays' storage for kernels of up to LAYOUT_NT tensors (every launch
     * builds a layout: a small call's host time had ~20 % in malloc and free) */
    int64_t st_in[LAYOUT_NT][MAXD];
    int w_base_in[LAYOUT_NT];
    int w_st_in[LAYOUT_NT][MAXD];
} layout;

/* Which loads and values each phase of a kernel needs, keeps and checks. */
typedef struct analysis {
    int n;
    int *level;     /* ROW instrs: 0 = before pass 0, p+1 = after pass p's reductions */
    int *first;     /* FULL LOADs: first phase that uses them (pass, npasses = output), -1 none */
    int *multi;     /* FULL LOADs used in >= 2 phases */
    char *need;     /* scratch [n] */
    int ncached;
    /* computed FULL values kept for later phases where the row fits one tile (keep_values):
     * keep[i] = the phase that computes and keeps instr i, -1 none; nkept of them */
    int *keep;
    int nkept;
    /* dividends of the output's divisions by a row value that a reduction pass computes
     * (row_divisions): chk[i] = the first pass that computes instr i, where each point is checked
     * against kiln_div_row's ranges (flag okn<i>), -1 none */
    int *chk;
    int level_in[ANALYSIS_N + 1], first_in[ANALYSIS_N + 1], multi_in[ANALYSIS_N + 1], keep_in[ANALYSIS_N + 1];
    int chk_in[ANALYSIS_N + 1];
    char need_in[ANALYSIS_N + 1];
} analysis;

/* Everything about one kernel that the launch needs besides the source. */
typedef struct kplan {
    layout l;
    analysis an;
    int elementwise, colmode, kmax, vec;
    int split; /* a reduction with its rows split across the grid's y (run_kernel decides) */
    int smem_thread; /* shared bytes for the block reductions: a thread's (COLUMN mode), a warp's (ROW) */
    int red_lanes;   /* see gen */
    int unsplit;     /* with lanes: unsplit even where the split rule would split (lanes_pay) */
    int lanes_forced; /* KILN_REDUCE_COLVEC=force: lanes wherever the layout allows */
    int nred;  /* reduction instructions (a split kernel's partials: nred x R x G) */
    int seg;   /* ROW mode: W (1-32) lanes a row where a row needs that few workers, else 0 */
    int keep;  /* KILN_REDUCE_KEEP: computed values kept for later phases (an.keep, keep_values) */
    int rdiv;  /* kept values divided by row values through the row's reciprocal (row_divisions):
                * 0 no, 1 yes, 2 where that costs no occupancy (choose_division, at compile) */
    int shift; /* ROW mode: rows walked in vectors from the aligned one holding their first point
                * (row_shift): -1 no, else the tensor whose address gives each row's shift */
    int row_tmax, row_minb; /* ROW mode (not segments): a block's most threads, and the blocks an
                             * SM its registers are bounded for: 1024 x 1 (64 registers), else
                             * the row cache's (row_cache) */
    int smem_row; /* ROW mode's row cache in shared memory (row_cache, at launch): 1 whole, 2 partial */
    int kmax_unfilled; /* kmax before row_fill, where it grew it for kept values alone; else 0 */
    int col_deep; /* COLUMN mode: narrowed blocks of deeper workers (col_depth) */
    int col_rows; /* with col_deep, the most rows a worker walks (COL_DEPTH, KILN_REDUCE_COLROWS) */
} kplan;

#define EW_UNR 4 /* element-wise kernels: the points a thread computes before storing them */

/* ---- codegen.c ----------------------------------------------------------------------------- */

kiln_status kiln__cg_layout_build(kiln_ctx *ctx, const kiln_plan_kernel *k, layout *l);
void kiln__cg_layout_free(layout *l);
/* the layout's argument words for one launch (pointers, sizes, strides, constants, streams) */
void kiln__cg_layout_fill(kiln_ctx *ctx, const kiln_plan_kernel *k, const layout *l, uint64_t *words);
/* the CUDA storage type of dt, NULL where the backend has none */
const char *kiln__cg_storage_type(kiln_dtype dt);
kiln_status kiln__cg_analyse(kiln_ctx *ctx, const kiln_plan_kernel *k, analysis *an);
void kiln__cg_analysis_free(analysis *a);
/* an instruction's j-th argument, and how many it has (LOAD, CONST and the generators: 0) */
int kiln__cg_arg_of(const kiln_plan_instr *in, int j);
int kiln__cg_instr_nargs(const kiln_plan_instr *in);
/* what recomputing an instruction costs, roughly: library functions, divisions and the
 * generators 8, the rest 1 (keep_values weighs the values it keeps by it) */
int kiln__cg_op_cost(kiln_pop op);
/* need[] (cleared first) for phase ph: what pass ph's reductions reduce, or (ph = npasses)
 * the output where it is not a row value */
void kiln__cg_mark_phase(const kiln_plan_kernel *k, const analysis *an, int ph, char *need);
/* the bytes of one vector of the row cache's load instruction i */
int kiln__cg_row_cache_load_bytes(const kiln_plan_kernel *k, const layout *l, int vec, int i);
/* the points a worker keeps in registers a tile (KMAX), by the loads several phases share; whether
 * k has a variance (its split partials take 24 bytes); the lanes a COLUMN variance folds a round */
int kiln__cg_kmax_for(const analysis *an, int vec);
int kiln__cg_has_var(const kiln_plan_kernel *k);
int kiln__cg_var_fold_lanes(const kiln_plan_kernel *k, int vec);
/* the source of kernel k as kp prepared it, into *src_out (malloc'd) */
kiln_status kiln__cg_generate(kiln_ctx *ctx, const kiln_plan_kernel *k, kplan *kp, char **src_out);

#endif /* KILN_CUDA_CODEGEN_H */
