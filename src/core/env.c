/*
 * src/core/env.c — environment variables that take one of a few words (the GEMM engines' and
 * kernels' overrides, read at every call): one place that reads them, checks them against
 * their choices and names the variable, its value and the choices in the error; and the
 * snapshot of KILN_* variables that a call reading many of them holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

kiln_status kiln__env_choice(const kiln_ctx *ctx, const char *who, const char *name, const char *const *values, int n,
                             int *index)
{
    *index = -1;
    const char *e = kiln__env_get(ctx, name);
    if (!e || !e[0]) return KILN_OK;
    for (int i = 0; i < n; i++)
        if (strcmp(e, values[i]) == 0) {
            *index = i;
            return KILN_OK;
        }
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (int i = 0; i < n && len < sizeof list; i++) {
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        int w = snprintf(list + len, sizeof list - len, "%s%s", sep, values[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
    return KILN_ERROR(ctx, KILN_ERR_ARG, "%s: environment variable %s='%s' is not %s", who, name, e, list);
}

extern char **environ;

void kiln__env_hold(kiln_ctx *ctx)
{
    ctx->env_held = 0;
    ctx->env_n = 0;
    size_t used = 0;
    for (char **e = environ; e && *e; e++) {
        if ((*e)[0] != 'K' || strncmp(*e, "KILN_", 5) != 0) continue; /* most fail the first test */
        size_t len = strlen(*e) + 1;
        if (ctx->env_n == (int)(sizeof ctx->env_at / sizeof ctx->env_at[0]) || len > sizeof ctx->env_text - used)
            return; /* too many or too long: no snapshot, getenv as before */
        memcpy(ctx->env_text + used, *e, len);
        ctx->env_at[ctx->env_n++] = (uint16_t)used;
        used += len;
    }
    ctx->env_held = 1;
}

void kiln__env_release(kiln_ctx *ctx)
{
    ctx->env_held = 0;
}

const char *kiln__env_get(const kiln_ctx *ctx, const char *name)
{
    if (!ctx || !ctx->env_held) return getenv(name);
    size_t len = strlen(name);
    for (int i = 0; i < ctx->env_n; i++) {
        const char *t = ctx->env_text + ctx->env_at[i];
        if (strncmp(t, name, len) == 0 && t[len] == '=') return t + len + 1;
    }
    return NULL;
}
