/*
 * tools/host-prof.c — where the host time of one small call through the C API goes: runs a
 * case many times on the calling thread under a sampling timer (SIGPROF to that thread every
 * 50 us of wall time: a POSIX timer on CLOCK_MONOTONIC, whose period is not rounded to the
 * kernel's tick as ITIMER_PROF's is; idle or spinning threads of a pool are not sampled), records the interrupted
 * instruction and the stack above it at each sample, then names them (dladdr for the object, addr2line for the
 * function, static ones included) and prints the leaf functions and the inclusive ones (a function counts once a sample
 * when it is anywhere on the stack), each as a share of the samples. For the per-call costs `kiln-bench overhead`
 * reports: on a GPU a 16-element assignment took 12 us of host time where the CPU backend's whole evaluation takes 1.1
 * us.
 *
 *   host-prof [assign|sum|bn|dot] [CALLS [FUNCTION]]
 *     assign  out = a + b, 16 f32 elements (the default)
 *     sum     out = sum(a), 16 f32 elements to one value (a reduction kernel)
 *     bn      out = rsqrt(var(a,0) + eps) * (a - mean(a,0)), 16 x 16 f32 (column passes)
 *     dot     kiln_dot 16 x 16 x 16 f32
 *   CALLS: timed calls after 200 warm-up calls (default 200 000)
 *   FUNCTION: also the first kiln function above each sample's frame whose name holds it,
 *     tallied (who calls malloc, say)
 * The device is the default one (KILN_DEVICE). Needs addr2line (binutils) for names; without
 * it the rows are object+offset. Linux, x86_64 or aarch64.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ucontext.h>

#include "kiln.h"

enum { DEPTH = 24, MAX_SAMPLES = 200000 };

typedef struct sample {
    int n; /* frames, leaf first */
    void *pc[DEPTH];
} sample;

static sample *samples;
static volatile int nsamples;

static void *interrupted_pc(void *uctx)
{
    ucontext_t *uc = uctx;
#if defined(__x86_64__)
    return (void *)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (void *)uc->uc_mcontext.pc;
#else
    (void)uc;
    return NULL;
#endif
}

/* The leaf from the signal context, then the callers above it in the unwound stack. */
static void on_prof(int sig, siginfo_t *si, void *uctx)
{
    (void)sig;
    (void)si;
    if (nsamples >= MAX_SAMPLES) return;
    sample *s = &samples[nsamples];
    void *bt[DEPTH + 8];
    int n = backtrace(bt, DEPTH + 8);
    void *leaf = interrupted_pc(uctx);
    int from = -1;
    for (int i = 0; i < n; i++)
        if (bt[i] == leaf) {
            from = i;
            break;
        }
    s->n = 0;
    s->pc[s->n++] = leaf;
    for (int i = from < 0 ? n : from + 1; i < n && s->n < DEPTH; i++) s->pc[s->n++] = bt[i];
    nsamples = nsamples + 1;
}

/* ---- names ---------------------------------------------------------------------------- */

typedef struct place {
    void *addr;
    char name[160]; /* "function (object)" */
} place;

static place *places;
static int nplaces, cap_places;

static int place_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const place *)a)->addr, y = (uintptr_t)((const place *)b)->addr;
    return (x > y) - (x < y);
}

static const char *name_of(void *addr)
{
    place key = {.addr = addr};
    place *p = bsearch(&key, places, (size_t)nplaces, sizeof *places, place_cmp);
    return p ? p->name : "?";
}

static void add_place(void *addr)
{
    if (nplaces == cap_places) {
        cap_places = cap_places ? 2 * cap_places : 4096;
        places = realloc(places, (size_t)cap_places * sizeof *places);
        if (!places) {
            fprintf(stderr, "host-prof: out of memory\n");
            exit(1);
        }
    }
    places[nplaces].addr = addr;
    places[nplaces].name[0] = '\0';
    nplaces++;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Every distinct address named: addr2line -f on each object's offsets (return addresses
 * one byte back, inside their call), the object+offset where it says "??" or is missing. */
static void name_places(void)
{
    qsort(places, (size_t)nplaces, sizeof *places, place_cmp);
    int w = 0;
    for (int i = 0; i < nplaces; i++)
        if (w == 0 || places[w - 1].addr != places[i].addr) places[w++] = places[i];
    nplaces = w;
    char *done = calloc((size_t)nplaces, 1);
    for (int i = 0; i < nplaces; i++) {
        if (done[i]) continue;
        Dl_info di;
        if (!dladdr(places[i].addr, &di) || !di.dli_fname) {
            snprintf(places[i].name, sizeof places[i].name, "%p (unknown)", places[i].addr);
            done[i] = 1;
            continue;
        }
        const char *obj = di.dli_fname;
        uintptr_t base = (uintptr_t)di.dli_fbase;
        /* this object's addresses, in batches of 256 a command */
        int batch[256], nb = 0;
        for (int j = i; j <= nplaces; j++) {
            int flush = j == nplaces || nb == 256;
            Dl_info dj;
            if (!flush && !done[j] && dladdr(places[j].addr, &dj) && dj.dli_fname && strcmp(dj.dli_fname, obj) == 0) {
                batch[nb++] = j;
                done[j] = 1;
                flush = nb == 256;
            }
            if (!flush || nb == 0) continue;
            char cmd[256 * 20 + 1200];
            int len = snprintf(cmd, sizeof cmd, "addr2line -f -e '%s'", obj);
            for (int q = 0; q < nb; q++)
                len += snprintf(cmd + len, sizeof cmd - (size_t)len, " %#lx",
                                (unsigned long)((uintptr_t)places[batch[q]].addr - base - 1));
            snprintf(cmd + len, sizeof cmd - (size_t)len, " 2>/dev/null");
            FILE *f = popen(cmd, "r");
            char fn[512], loc[512];
            for (int q = 0; q < nb; q++) {
                place *p = &places[batch[q]];
                if (f && fgets(fn, sizeof fn, f) && fgets(loc, sizeof loc, f) && strncmp(fn, "??", 2) != 0) {
                    fn[strcspn(fn, "\n")] = '\0';
                    snprintf(p->name, sizeof p->name, "%.110s (%s)", fn, base_name(obj));
                } else {
                    snprintf(p->name, sizeof p->name, "%s+%#lx", base_name(obj),
                             (unsigned long)((uintptr_t)p->addr - base));
                }
            }
            if (f) pclose(f);
            nb = 0;
        }
    }
    free(done);
}

/* ---- tallies -------------------------------------------------------------------------- */

typedef struct tally {
    const char *name;
    int count;
} tally;

static int tally_cmp(const void *a, const void *b)
{
    int x = ((const tally *)a)->count, y = ((const tally *)b)->count;
    return (y > x) - (y < x);
}

static int tally_add(tally *t, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (t[i].name == name || strcmp(t[i].name, name) == 0) {
            t[i].count++;
            return n;
        }
    t[n].name = name;
    t[n].count = 1;
    return n + 1;
}

static void print_tally(const char *title, tally *t, int n, int total, int rows)
{
    qsort(t, (size_t)n, sizeof *t, tally_cmp);
    printf("\n%s (%% of %d samples)\n", title, total);
    for (int i = 0; i < n && i < rows; i++) printf("  %5.1f%%  %s\n", 100.0 * t[i].count / total, t[i].name);
}

/* ---- the cases ------------------------------------------------------------------------ */

typedef struct job {
    const char *which;
    kiln_tensor *a, *b, *out, *a2, *out2, *c16, *a16, *b16;
} job;

static kiln_status run_once(job *j)
{
    int ax0 = 0;
    if (!strcmp(j->which, "assign")) return kiln_assign(j->out, kiln_add(kiln_t(j->a), kiln_t(j->b)));
    if (!strcmp(j->which, "sum")) return kiln_assign(j->out2, kiln_reduce(KILN_REDUCE_SUM, kiln_t(j->a), 0, NULL, 0));
    if (!strcmp(j->which, "bn"))
        return kiln_assign(j->a2, kiln_mul(kiln_rsqrt(kiln_add(kiln_var(kiln_t(j->a2), ax0), kiln_scalar(1e-5))),
                                           kiln_sub(kiln_t(j->a2), kiln_mean(kiln_t(j->a2), ax0))));
    return kiln_dot(j->c16, j->a16, j->b16, 1.0, 0.0, NULL);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

#define CK(call)                                                                            \
    do {                                                                                    \
        kiln_status s_ = (call);                                                            \
        if (s_ != KILN_OK) {                                                                \
            fprintf(stderr, "host-prof: %s: %s\n", #call, ctx ? kiln_last_error(ctx) : ""); \
            return 1;                                                                       \
        }                                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    const char *which = argc > 1 ? argv[1] : "assign";
    long calls = argc > 2 ? atol(argv[2]) : 200000;
    if (strcmp(which, "assign") && strcmp(which, "sum") && strcmp(which, "bn") && strcmp(which, "dot")) {
        fprintf(stderr, "host-prof: the case must be assign, sum, bn or dot, not '%s'\n", which);
        return 2;
    }
    if (calls < 1) {
        fprintf(stderr, "host-prof: CALLS must be a positive count, not '%s'\n", argv[2]);
        return 2;
    }
    kiln_ctx *ctx = NULL;
    CK(kiln_ctx_create(&ctx, NULL));
    int64_t n16 = 16, sq[2] = {16, 16}, one = 1;
    job j = {.which = which};
    CK(kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, &n16, 0.5, &j.a));
    CK(kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, &n16, 0.25, &j.b));
    CK(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, &n16, &j.out));
    CK(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, &one, &j.out2));
    kiln_tensor **rnd[3] = {&j.a2, &j.a16, &j.b16};
    for (int i = 0; i < 3; i++) {
        CK(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, sq, rnd[i]));
        CK(kiln_assign(*rnd[i], kiln_rand()));
    }
    CK(kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, sq, &j.c16));
    for (int i = 0; i < 200; i++) CK(run_once(&j));
    CK(kiln_ctx_synchronize(ctx));

    samples = calloc(MAX_SAMPLES, sizeof *samples);
    if (!samples) {
        fprintf(stderr, "host-prof: out of memory for %d samples\n", MAX_SAMPLES);
        return 1;
    }
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder before the first signal */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = (int)syscall(SYS_gettid); /* sigev_notify_thread_id */
    timer_t timer;
    if (timer_create(CLOCK_MONOTONIC, &sev, &timer) != 0) {
        perror("host-prof: timer_create");
        return 1;
    }
    struct itimerspec it = {{0, 50000}, {0, 50000}}, off = {{0, 0}, {0, 0}};
    double t0 = now_us();
    timer_settime(timer, 0, &it, NULL);
    for (long i = 0; i < calls; i++) CK(run_once(&j));
    double t1 = now_us();
    timer_settime(timer, 0, &off, NULL);
    timer_delete(timer);
    CK(kiln_ctx_synchronize(ctx));
    printf("host-prof %s on %s: %ld calls, %.2f us of host time a call (sampled), %d samples\n", which,
           kiln_ctx_backend_name(ctx), calls, (t1 - t0) / (double)calls, nsamples);
    int total = nsamples;
    if (total == 0) return 0;

    for (int i = 0; i < total; i++)
        for (int f = 0; f < samples[i].n; f++) add_place(samples[i].pc[f]);
    name_places();
    tally *leaf = calloc((size_t)nplaces + 1, sizeof *leaf), *incl = calloc((size_t)nplaces + 1, sizeof *incl);
    int nleaf = 0, nincl = 0;
    for (int i = 0; i < total; i++) {
        const sample *s = &samples[i];
        nleaf = tally_add(leaf, nleaf, name_of(s->pc[0]));
        const char *seen[DEPTH];
        int nseen = 0;
        for (int f = 0; f < s->n; f++) {
            const char *nm = name_of(s->pc[f]);
            int dup = 0;
            for (int q = 0; q < nseen; q++) dup |= strcmp(seen[q], nm) == 0;
            if (dup) continue;
            seen[nseen++] = nm;
            nincl = tally_add(incl, nincl, nm);
        }
    }
    print_tally("leaf functions", leaf, nleaf, total, 30);
    print_tally("inclusive (on the stack)", incl, nincl, total, 45);
    if (argc > 3) {
        int ncall = 0, hits = 0;
        memset(leaf, 0, ((size_t)nplaces + 1) * sizeof *leaf);
        for (int i = 0; i < total; i++) {
            const sample *s = &samples[i];
            int f = 0;
            while (f < s->n && !strstr(name_of(s->pc[f]), argv[3])) f++;
            if (f == s->n) continue;
            hits++;
            while (f < s->n && !strstr(name_of(s->pc[f]), "(libkiln")) f++;
            ncall = tally_add(leaf, ncall, f < s->n ? name_of(s->pc[f]) : "(no kiln caller)");
        }
        char title[256];
        snprintf(title, sizeof title, "kiln callers of '%s' (%d samples hold it)", argv[3], hits);
        print_tally(title, leaf, ncall, total, 25);
    }
    free(leaf);
    free(incl);
    free(samples);
    free(places);
    kiln_tensor_release(j.a);
    kiln_tensor_release(j.b);
    kiln_tensor_release(j.out);
    kiln_tensor_release(j.out2);
    kiln_tensor_release(j.a2);
    kiln_tensor_release(j.a16);
    kiln_tensor_release(j.b16);
    kiln_tensor_release(j.c16);
    kiln_ctx_destroy(ctx);
    return 0;
}
