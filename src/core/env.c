/*
 * src/core/env.c — environment variables that take one of a few words (the GEMM engines' and
 * kernels' overrides, read at every call): one place that reads them, checks them against
 * their choices and names the variable, its value and the choices in the error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

kiln_status kiln__env_choice(const kiln_ctx *ctx, const char *who, const char *name, const char *const *values, int n,
                             int *index)
{
    *index = -1;
    const char *e = getenv(name);
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
