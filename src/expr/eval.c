/*
 * src/expr/eval.c — assignment and evaluation of expressions: kiln_assign, kiln_assign_ex
 * and kiln_eval_at. They check the arguments, build the plan (plan.c), print it when the
 * context traces plans (KILN_TRACE=plan), hand it to the context's backend and free it.
 * The expression is consumed on every path, success or failure.
 */
#include <stdio.h>

#include "backend.h"
#include "expr/expr.h"
#include "expr/plan.h"

kiln_status kiln_assign_ex(kiln_tensor *dst, kiln_expr *e, const kiln_assign_args *args)
{
    kiln_status st;
    if (!dst) {
        kiln_expr_release(e);
        return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_assign: argument 'dst' is NULL");
    }
    kiln_ctx *ctx = dst->ctx;
    kiln_round round = args ? args->round : KILN_ROUND_DEFAULT;
    if (round != KILN_ROUND_DEFAULT && round != KILN_ROUND_NEAREST && round != KILN_ROUND_STOCHASTIC) {
        kiln_expr_release(e);
        return KILN_ERROR(ctx, KILN_ERR_ARG, "kiln_assign_ex: argument 'args': round (%d) is not a kiln_round",
                          (int)round);
    }
    kiln_plan *plan = NULL;
    st = kiln__plan_build(dst, e, round, &plan);
    if (st == KILN_OK) {
        if (ctx->trace_plan) {
            char line[2048];
            kiln__plan_describe(plan, line, sizeof line);
            fprintf(stderr, "%s\n", line);
        }
        if (plan->nkernels > 0) {
            if (!ctx->backend || !ctx->backend->run_plan)
                st = KILN_ERROR(ctx, KILN_ERR_UNSUPPORTED, "kiln_assign: the %s backend cannot run expressions",
                                ctx->backend ? ctx->backend->name : "(no)");
            else
                st = ctx->backend->run_plan(ctx, plan);
        }
        kiln__plan_free(plan);
    }
    kiln_expr_release(e);
    return st;
}

kiln_status kiln_assign(kiln_tensor *dst, kiln_expr *e)
{
    return kiln_assign_ex(dst, e, NULL);
}

/* The context of the first tensor leaf of e (depth first), or NULL. */
static kiln_ctx *first_leaf_ctx(const kiln_expr *e)
{
    if (!e) return NULL;
    if (e->kind == KILN_EN_TENSOR) return e->tensor->ctx;
    for (int i = 0; i < e->nchild; i++) {
        kiln_ctx *c = first_leaf_ctx(e->child[i]);
        if (c) return c;
    }
    return NULL;
}

kiln_status kiln_eval_at(kiln_ctx *ctx, kiln_expr *e, kiln_dtype dtype, kiln_tensor **out, const char *file, int line)
{
    if (!ctx) ctx = first_leaf_ctx(e);
    if (!out) {
        kiln_expr_release(e);
        return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_eval: argument 'out' is NULL");
    }
    if (!e) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_eval: argument 'e' is NULL");
    if (e->kind == KILN_EN_ERROR) {
        kiln_status s = KILN_ERROR(ctx, e->status, "%s", e->msg);
        kiln_expr_release(e);
        return s;
    }
    if (!ctx) {
        kiln_expr_release(e);
        return KILN_ERROR(NULL, KILN_ERR_NULL,
                          "kiln_eval: argument 'ctx' is NULL and the expression has no tensor leaf");
    }
    if (dtype == KILN_DTYPE_AUTO) dtype = kiln_expr_dtype(e);
    if (!kiln__dtype_valid(dtype)) {
        kiln_expr_release(e);
        return KILN_ERROR(ctx, KILN_ERR_DTYPE, "kiln_eval: argument 'dtype' (%d) is not a dtype", (int)dtype);
    }
    kiln_tensor *t = NULL;
    kiln_status st = kiln__tensor_new(ctx, dtype, e->ndim, e->shape, file, line, &t);
    if (st != KILN_OK) {
        kiln_expr_release(e);
        return st;
    }
    st = kiln_assign(t, e);
    if (st != KILN_OK) {
        kiln_tensor_release(t);
        return st;
    }
    *out = t;
    return KILN_OK;
}
