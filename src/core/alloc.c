/*
 * src/core/alloc.c — the context's counting, caching allocator. Backends hand out raw
 * memory (malloc on the CPU, cudaMalloc on CUDA); this layer rounds sizes to classes,
 * keeps freed blocks for reuse, counts bytes in use / peak / cached, enforces the cap and
 * remembers where each live block was made, for kiln_mem_report and OOM messages.
 * It also keeps the records of external blocks (foreign memory wrapped by
 * kiln_tensor_wrap): listed in the report, never counted, capped, cached or freed here.
 * Not thread-safe: a context is used by one thread at a time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "core/internal.h"

/* Size classes: multiples of 512 bytes up to 1 MiB, then of 2 MiB (device allocations are
 * expensive; small host ones are cheap either way). */
static size_t size_class(size_t size)
{
    const size_t small = 512, big = (size_t)2 << 20;
    if (size <= ((size_t)1 << 20)) return (size + small - 1) / small * small;
    if (size > SIZE_MAX - big) return 0;
    return (size + big - 1) / big * big;
}

static void human(char *buf, size_t cap, size_t bytes)
{
    if (bytes >= ((size_t)1 << 30)) snprintf(buf, cap, "%.2f GiB", (double)bytes / (double)((size_t)1 << 30));
    else if (bytes >= ((size_t)1 << 20)) snprintf(buf, cap, "%.2f MiB", (double)bytes / (double)((size_t)1 << 20));
    else if (bytes >= 1024) snprintf(buf, cap, "%.1f KiB", (double)bytes / 1024.0);
    else snprintf(buf, cap, "%zu B", bytes);
}

static const char *base_name(const char *file)
{
    if (!file) return "?";
    const char *s = strrchr(file, '/');
    return s ? s + 1 : file;
}

/* "4.00 MiB at foo.c:12 'w1'; 1.00 MiB at ..." for the n largest live blocks. */
static void largest_live(const kiln_mem *m, char *buf, size_t cap, int n)
{
    const kiln_block *top[8] = {0};
    if (n > 8) n = 8;
    for (const kiln_block *b = m->live; b; b = b->next) {
        for (int i = 0; i < n; i++) {
            if (!top[i] || b->size > top[i]->size) {
                for (int j = n - 1; j > i; j--) top[j] = top[j - 1];
                top[i] = b;
                break;
            }
        }
    }
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && top[i] && k < cap; i++) {
        char h[32];
        human(h, sizeof h, top[i]->size);
        int w = snprintf(buf + k, cap - k, "%s%s at %s:%d%s%s%s", i ? "; " : "", h, base_name(top[i]->file),
                         top[i]->line, top[i]->name[0] ? " '" : "", top[i]->name, top[i]->name[0] ? "'" : "");
        if (w < 0) break;
        k += (size_t)w < cap - k ? (size_t)w : cap - k;
    }
    if (!top[0]) snprintf(buf, cap, "none");
}

static kiln_status oom_error(kiln_ctx *ctx, size_t size, const char *file, int line, const char *why)
{
    char big[512], hs[32], hu[32], hl[32];
    largest_live(&ctx->mem, big, sizeof big, 3);
    human(hs, sizeof hs, size);
    human(hu, sizeof hu, ctx->mem.in_use);
    human(hl, sizeof hl, ctx->mem.limit);
    return kiln__error_at(ctx, KILN_ERR_OOM, file ? file : __FILE__, file ? line : __LINE__,
                          "allocating %s (%zu bytes) %s (in use %s%s%s); largest live allocations: %s", hs, size, why,
                          hu, ctx->mem.limit ? ", limit " : "", ctx->mem.limit ? hl : "", big);
}

/* The context's last error, set aside while an allocation that may be refused runs. */
typedef struct kiln_error_state {
    char *text;
    kiln_status status;
} kiln_error_state;

static void error_save(kiln_ctx *ctx, kiln_error_state *s)
{
    s->text = ctx->last_error;
    s->status = ctx->last_status;
    ctx->last_error = NULL;
}

/* Puts the saved error back when forget is set (what happened in between was no failure of
 * the caller's), else keeps the newer one and drops the saved. */
static void error_restore(kiln_ctx *ctx, kiln_error_state *s, int forget)
{
    if (forget || !ctx->last_error) {
        free(ctx->last_error);
        ctx->last_error = s->text;
        ctx->last_status = s->status;
    } else {
        free(s->text);
    }
}

kiln_status kiln__mem_alloc(kiln_ctx *ctx, size_t size, const char *file, int line, kiln_block **out)
{
    kiln_mem *m = &ctx->mem;
    if (m->limit && (size > m->limit || m->in_use > m->limit - size))
        return oom_error(ctx, size, file, line, "would pass the memory limit");
    kiln_block *b = calloc(1, sizeof *b);
    if (!b) return oom_error(ctx, size, file, line, "failed on the host (block record)");
    b->size = size;
    b->file = file;
    b->line = line;
    if (size > 0) {
        size_t cls = size_class(size);
        if (cls == 0) {
            free(b);
            return oom_error(ctx, size, file, line, "is past any size class");
        }
        /* Best fit among cached blocks no more than twice the size asked for. */
        kiln_cached_block **best = NULL;
        for (kiln_cached_block **p = &m->free_list; *p; p = &(*p)->next)
            if ((*p)->capacity >= cls && (*p)->capacity / 2 <= cls && (!best || (*p)->capacity < (*best)->capacity))
                best = p;
        if (best) {
            kiln_cached_block *c = *best;
            *best = c->next;
            b->ptr = c->ptr;
            b->capacity = c->capacity;
            m->cached -= c->capacity;
            free(c);
        } else {
            kiln_status st;
            if (m->free_list) { /* a refusal here is not the caller's failure: the cache goes first */
                kiln_error_state saved;
                error_save(ctx, &saved);
                st = ctx->backend->raw_alloc(ctx, cls, &b->ptr);
                if (st == KILN_ERR_OOM) {
                    kiln__mem_release_all_cached(ctx);
                    st = ctx->backend->raw_alloc(ctx, cls, &b->ptr);
                }
                error_restore(ctx, &saved, st == KILN_OK);
            } else {
                st = ctx->backend->raw_alloc(ctx, cls, &b->ptr);
            }
            if (st != KILN_OK) {
                free(b);
                if (st == KILN_ERR_OOM) return oom_error(ctx, size, file, line, "failed: the backend is out of memory");
                return st;
            }
            b->capacity = cls;
        }
    }
    m->in_use += size;
    if (m->in_use > m->peak) m->peak = m->in_use;
    m->live_blocks++;
    m->total_allocs++;
    b->next = m->live;
    if (m->live) m->live->prev = b;
    m->live = b;
    *out = b;
    return KILN_OK;
}

kiln_status kiln__mem_try_alloc(kiln_ctx *ctx, size_t size, const char *file, int line, kiln_block **out)
{
    kiln_error_state saved;
    error_save(ctx, &saved);
    kiln_status st = kiln__mem_alloc(ctx, size, file, line, out);
    error_restore(ctx, &saved, st == KILN_OK || st == KILN_ERR_OOM);
    return st;
}

kiln_status kiln__mem_wrap(kiln_ctx *ctx, void *ptr, size_t size, void (*release)(void *user), void *user,
                           const char *file, int line, kiln_block **out)
{
    kiln_mem *m = &ctx->mem;
    kiln_block *b = calloc(1, sizeof *b);
    if (!b)
        return kiln__error_at(ctx, KILN_ERR_OOM, file ? file : __FILE__, file ? line : __LINE__,
                              "no host memory for the record of a wrapped block");
    b->ptr = ptr;
    b->size = size;
    b->file = file;
    b->line = line;
    b->external = true;
    b->release = release;
    b->user = user;
    b->next = m->external;
    if (m->external) m->external->prev = b;
    m->external = b;
    m->external_blocks++;
    m->external_bytes += size;
    *out = b;
    return KILN_OK;
}

/* Unlinks and frees an external block's record, then hands the memory back to its owner.
 * Work queued on the context's stream may still use the memory: wait for it first. */
static void free_external(kiln_ctx *ctx, kiln_block *b)
{
    kiln_mem *m = &ctx->mem;
    if (b->prev)
        b->prev->next = b->next;
    else
        m->external = b->next;
    if (b->next) b->next->prev = b->prev;
    m->external_blocks--;
    m->external_bytes -= b->size;
    void (*release)(void *) = b->release;
    void *user = b->user;
    free(b);
    if (ctx->backend && ctx->backend->synchronize) (void)ctx->backend->synchronize(ctx);
    if (release) release(user);
}

void kiln__mem_free(kiln_ctx *ctx, kiln_block *b)
{
    if (!b) return;
    if (b->external) {
        free_external(ctx, b);
        return;
    }
    kiln_mem *m = &ctx->mem;
    if (b->prev) b->prev->next = b->next;
    else m->live = b->next;
    if (b->next) b->next->prev = b->prev;
    m->in_use -= b->size;
    m->live_blocks--;
    if (b->ptr) {
        kiln_cached_block *c = malloc(sizeof *c);
        if (c) {
            c->ptr = b->ptr;
            c->capacity = b->capacity;
            c->next = m->free_list;
            m->free_list = c;
            m->cached += b->capacity;
        } else {
            ctx->backend->raw_free(ctx, b->ptr, b->capacity);
        }
    }
    free(b);
}

void kiln__mem_release_all_cached(kiln_ctx *ctx)
{
    kiln_mem *m = &ctx->mem;
    while (m->free_list) {
        kiln_cached_block *c = m->free_list;
        m->free_list = c->next;
        ctx->backend->raw_free(ctx, c->ptr, c->capacity);
        free(c);
    }
    m->cached = 0;
}

/* ---- public --------------------------------------------------------------------------- */

kiln_status kiln_mem_get_stats(const kiln_ctx *ctx, kiln_mem_stats *out)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_mem_get_stats: argument 'ctx' is NULL");
    if (!out) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_mem_get_stats: argument 'out' is NULL");
    const kiln_mem *m = &ctx->mem;
    *out = (kiln_mem_stats){.in_use = m->in_use, .peak = m->peak, .cached = m->cached, .limit = m->limit,
                            .live_blocks = m->live_blocks, .total_allocs = m->total_allocs};
    return KILN_OK;
}

kiln_status kiln_mem_reset_peak(kiln_ctx *ctx)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_mem_reset_peak: argument 'ctx' is NULL");
    ctx->mem.peak = ctx->mem.in_use;
    return KILN_OK;
}

kiln_status kiln_mem_set_limit(kiln_ctx *ctx, size_t limit)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_mem_set_limit: argument 'ctx' is NULL");
    ctx->mem.limit = limit;
    return KILN_OK;
}

kiln_status kiln_mem_release_cached(kiln_ctx *ctx)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_mem_release_cached: argument 'ctx' is NULL");
    kiln__mem_release_all_cached(ctx);
    return KILN_OK;
}

typedef struct site_total {
    const char *file;
    int line;
    const char *name;
    size_t bytes;
    int64_t count;
} site_total;

static int by_bytes_desc(const void *a, const void *b)
{
    const site_total *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* Appends formatted text to buf at *k, counting the full length in *len even past cap. */
static void emit(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char tmp[512];
    int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (w <= 0) return;
    size_t n = (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1;
    if (buf && *len + 1 < cap) {
        size_t room = cap - 1 - *len;
        memcpy(buf + *len, tmp, n < room ? n : room);
        buf[*len + (n < room ? n : room)] = '\0';
    }
    *len += n;
}

/* Groups the blocks of one list by site (file:line) and name, largest first, into *out
 * (malloc'd, *n entries; NULL when the list is empty). false when out of host memory. */
static bool group_sites(const kiln_block *list, int64_t count, site_total **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (count <= 0) return true;
    site_total *sites = calloc((size_t)count, sizeof *sites);
    if (!sites) return false;
    size_t nsites = 0;
    for (const kiln_block *b = list; b; b = b->next) {
        size_t i = 0;
        for (; i < nsites; i++)
            if (sites[i].line == b->line && strcmp(sites[i].name, b->name) == 0 &&
                strcmp(base_name(sites[i].file), base_name(b->file)) == 0)
                break;
        if (i == nsites) sites[nsites++] = (site_total){b->file, b->line, b->name, 0, 0};
        sites[i].bytes += b->size;
        sites[i].count++;
    }
    qsort(sites, nsites, sizeof *sites, by_bytes_desc);
    *out = sites;
    *n = nsites;
    return true;
}

static void emit_sites(char *buf, size_t cap, size_t *len, const site_total *sites, size_t n)
{
    char h[32];
    for (size_t i = 0; i < n; i++) {
        human(h, sizeof h, sites[i].bytes);
        emit(buf, cap, len, "  %12s  %5lld x  %s:%d%s%s%s\n", h, (long long)sites[i].count, base_name(sites[i].file),
             sites[i].line, sites[i].name[0] ? "  '" : "", sites[i].name, sites[i].name[0] ? "'" : "");
    }
}

kiln_status kiln_mem_report(const kiln_ctx *ctx, char *buf, size_t cap, size_t *needed)
{
    if (!ctx) return KILN_ERROR(NULL, KILN_ERR_NULL, "kiln_mem_report: argument 'ctx' is NULL");
    if (!buf && cap) return KILN_ERROR(ctx, KILN_ERR_NULL, "kiln_mem_report: argument 'buf' is NULL with cap %zu", cap);
    const kiln_mem *m = &ctx->mem;
    site_total *sites = NULL, *ext = NULL;
    size_t nsites = 0, next = 0;
    if (!group_sites(m->live, m->live_blocks, &sites, &nsites) ||
        !group_sites(m->external, m->external_blocks, &ext, &next)) {
        free(sites);
        return KILN_ERROR(ctx, KILN_ERR_OOM, "kiln_mem_report: no host memory for the report");
    }
    if (buf && cap) buf[0] = '\0';
    size_t len = 0;
    char h1[32], h2[32], h3[32], h4[32];
    human(h1, sizeof h1, m->in_use);
    human(h2, sizeof h2, m->peak);
    human(h3, sizeof h3, m->cached);
    if (m->limit) human(h4, sizeof h4, m->limit);
    else snprintf(h4, sizeof h4, "none");
    emit(buf, cap, &len, "kiln memory (%s): in use %s in %lld blocks, peak %s, cached %s, limit %s\n",
         ctx->backend ? ctx->backend->name : "?", h1, (long long)m->live_blocks, h2, h3, h4);
    emit_sites(buf, cap, &len, sites, nsites);
    if (m->external_blocks > 0) {
        human(h1, sizeof h1, m->external_bytes);
        emit(buf, cap, &len, "external (wrapped foreign memory, not counted above): %s in %lld blocks\n", h1,
             (long long)m->external_blocks);
        emit_sites(buf, cap, &len, ext, next);
    }
    free(sites);
    free(ext);
    if (needed) *needed = len + 1;
    return KILN_OK;
}
