/*
 * src/core/status.c — status names and texts, the last-error record of a context (and the
 * per-thread record for failures that have no context), the library version.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

const char *kiln_version(void)
{
    return KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(KILN_VERSION_MINOR) "." KILN_STR(KILN_VERSION_PATCH);
}

const char *kiln_status_string(kiln_status s)
{
    switch (s) {
#define KILN_X_STATUS_TEXT(name, value, text) \
    case name:                                \
        return text;
        KILN_STATUS_LIST(KILN_X_STATUS_TEXT)
#undef KILN_X_STATUS_TEXT
    }
    return "unknown status";
}

const char *kiln_status_name(kiln_status s)
{
    switch (s) {
#define KILN_X_STATUS_NAME(name, value, text) \
    case name:                                \
        return #name;
        KILN_STATUS_LIST(KILN_X_STATUS_NAME)
#undef KILN_X_STATUS_NAME
    }
    return "KILN_STATUS_UNKNOWN";
}

/* The one piece of per-thread state: the text of the last failure that had no context to
 * report into (a NULL handle). It is not shared between threads. */
static _Thread_local char thread_error[1024];

kiln_status kiln__verror_at(const kiln_ctx *cctx, kiln_status status, const char *file, int line, const char *fmt,
                            va_list ap)
{
    char msg[4096];
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : (file ? file : "?");
    int n = snprintf(msg, sizeof msg, "%s: ", kiln_status_name(status));
    if (n < 0) n = 0;
    if ((size_t)n < sizeof msg) {
        int m = vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
        if (m > 0) n += m;
    }
    if ((size_t)n < sizeof msg) snprintf(msg + n, sizeof msg - (size_t)n, " [%s:%d]", base, line);
    if (!cctx) {
        snprintf(thread_error, sizeof thread_error, "%s", msg);
        return status;
    }
    /* The last error is bookkeeping, not state the caller sees as const. */
    kiln_ctx *ctx = (kiln_ctx *)cctx;
    size_t len = strlen(msg);
    char *copy = malloc(len + 1);
    if (copy) {
        memcpy(copy, msg, len + 1);
        free(ctx->last_error);
        ctx->last_error = copy;
    }
    ctx->last_status = status;
    return status;
}

kiln_status kiln__error_at(const kiln_ctx *ctx, kiln_status status, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kiln_status s = kiln__verror_at(ctx, status, file, line, fmt, ap);
    va_end(ap);
    return s;
}

/* Long messages (an NVRTC log with its source) do not fit the fixed buffer above: this
 * variant appends a preformatted tail of any length. */
kiln_status kiln__error_long(const kiln_ctx *cctx, kiln_status status, const char *head, const char *tail)
{
    if (!cctx) return kiln__error_at(NULL, status, __FILE__, __LINE__, "%s", head);
    kiln_ctx *ctx = (kiln_ctx *)cctx;
    size_t hl = strlen(head), tl = tail ? strlen(tail) : 0;
    size_t nl = strlen(kiln_status_name(status)) + 2;
    char *m = malloc(nl + hl + tl + 2);
    if (!m) return kiln__error_at(cctx, status, __FILE__, __LINE__, "%s", head);
    snprintf(m, nl + hl + tl + 2, "%s: %s\n%s", kiln_status_name(status), head, tail ? tail : "");
    free(ctx->last_error);
    ctx->last_error = m;
    ctx->last_status = status;
    return status;
}

const char *kiln_last_error(const kiln_ctx *ctx)
{
    if (!ctx) return thread_error;
    return ctx->last_error ? ctx->last_error : "";
}
