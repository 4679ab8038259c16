/*
 * src/cpu/pool.c — the CPU backend's worker threads: one small pool per context, started
 * at the first piece of work worth sharing and joined when the context goes (cpu_fini).
 *
 * A job is a count of independent tasks and a function; kiln__cpu_parallel runs it on the
 * calling thread (worker 0) and on up to nworkers - 1 pool threads, which take task indices
 * from a shared counter, and returns when every task is done. The caller never waits for a
 * thread that is still asleep: a thread that wakes after the caller has taken the last task
 * skips the job. Waking a sleeping thread costs tens of microseconds (more in a VM), about
 * what a small job takes, so both sides spin briefly before they sleep (SPIN_NS): a thread
 * that finished a job watches for the next one, and the caller watches for the threads that
 * joined its job to finish; kernels issued back to back then start without a wake-up. Jobs
 * that cost less than KILN_CPU_WAKE_MIN do not wake sleeping threads at all (they are shared
 * with spinning ones only). Which worker runs which task thus varies from run to run; the callers
 * (src/cpu/exec_impl.h, src/cpu/gemm.c) make every task's result independent of that: the
 * worker index only picks scratch memory, tasks write disjoint outputs, and anything
 * combined across tasks is combined by the caller in task order afterwards.
 *
 * Not a general pool: a context is used by one thread at a time, so there is one caller
 * and one job at a time. Nothing here is global: two contexts have two pools. Worker
 * threads block every signal (the process's handlers run on the application's threads).
 * After fork() the child has no worker threads: a pool made by another process is not
 * used (the child runs everything on the calling thread) and not joined.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cpu/cpu.h"

/* Below this many elements of work a job stays on the calling thread; each worker gets at
 * least half of it. Overridable for tests: -DKILN_CPU_PAR_MIN=64. */
#ifndef KILN_CPU_PAR_MIN
#define KILN_CPU_PAR_MIN 32768
#endif

/* Threads asleep are woken only for jobs that cost at least this many instruction-points
 * (about 100 us of work); smaller jobs are shared with the threads still spinning after the
 * last job, if any. On the 2-core VM of bench/NOTES.md pthread_cond_signal costs the caller
 * about 13 us and the thread runs 30 to 60 us later. */
#ifndef KILN_CPU_WAKE_MIN
#define KILN_CPU_WAKE_MIN (1 << 20)
#endif

/* How long a thread spins (watching an atomic) before it sleeps on a condition variable. */
#define SPIN_NS 50000

typedef struct worker {
    struct kiln_cpu_pool *pool;
    int id; /* 1..nthreads-1 */
} worker;

struct kiln_cpu_pool {
    int nthreads; /* pool threads started + 1 (the caller) */
    pid_t pid;    /* the process that started them */
    pthread_t *tids;
    worker *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new job or stop */
    pthread_cond_t done; /* a joined worker finished */
    /* the current job; written under mu (generation also read without it, by spinners) */
    _Atomic uint64_t generation;
    int stop;
    int closed;   /* the caller has finished its share: late threads skip the job */
    int nworkers; /* workers that may take part (the caller included) */
    int joined;
    _Atomic uint64_t finished; /* written under mu, read without it by the spinning caller */
    int sleepers;              /* threads waiting on wake */
    int caller_waits;          /* the caller waits on done */
    kiln_cpu_task_fn fn;
    void *arg;
    int64_t ntasks;
    _Atomic int64_t next; /* next task index */
    /* for tests (kiln__cpu_pool_stats); under mu */
    int64_t shared_jobs, helped_tasks;
};

/* Takes tasks until none is left; returns how many it ran. */
static int64_t run_tasks(struct kiln_cpu_pool *p, kiln_cpu_task_fn fn, void *arg, int64_t ntasks, int id)
{
    int64_t ran = 0;
    for (;; ran++) {
        int64_t t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= ntasks) break;
        fn(arg, t, id);
    }
    return ran;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spins up to SPIN_NS until *a != v (want_change) or *a == v (!want_change); returns
 * whether that happened. */
static int spin_until(_Atomic uint64_t *a, uint64_t v, int want_change)
{
    int64_t t0 = 0;
    for (int i = 0;; i++) {
        if ((atomic_load_explicit(a, memory_order_acquire) != v) == want_change) return 1;
        cpu_relax();
        if ((i & 63) == 63) {
            int64_t t = now_ns();
            if (t0 == 0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                return 0;
        }
    }
}

static void *worker_main(void *arg_)
{
    worker *w = arg_;
    struct kiln_cpu_pool *p = w->pool;
    uint64_t seen = 0;
    for (;;) {
        spin_until(&p->generation, seen, 1);
        pthread_mutex_lock(&p->mu);
        while (!p->stop && atomic_load_explicit(&p->generation, memory_order_relaxed) == seen) {
            p->sleepers++;
            pthread_cond_wait(&p->wake, &p->mu);
            p->sleepers--;
        }
        if (p->stop) break;
        seen = atomic_load_explicit(&p->generation, memory_order_relaxed);
        if (p->closed || w->id >= p->nworkers) {
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        p->joined++;
        kiln_cpu_task_fn fn = p->fn;
        void *arg = p->arg;
        int64_t ntasks = p->ntasks;
        pthread_mutex_unlock(&p->mu);
        int64_t ran = run_tasks(p, fn, arg, ntasks, w->id);
        pthread_mutex_lock(&p->mu);
        p->helped_tasks += ran;
        atomic_fetch_add_explicit(&p->finished, 1, memory_order_release);
        if (p->caller_waits && atomic_load_explicit(&p->finished, memory_order_relaxed) == (uint64_t)p->joined)
            pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Starts up to nthreads - 1 threads; NULL when none could be started (or no memory). */
static struct kiln_cpu_pool *pool_create(int nthreads)
{
    struct kiln_cpu_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->tids = calloc((size_t)nthreads, sizeof *p->tids);
    p->workers = calloc((size_t)nthreads, sizeof *p->workers);
    if (!p->tids || !p->workers || pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->tids);
        free(p->workers);
        free(p);
        return NULL;
    }
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    atomic_init(&p->generation, 0);
    atomic_init(&p->finished, 0);
    p->pid = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the threads inherit it */
    int started = 0;
    for (int i = 1; i < nthreads; i++) {
        p->workers[i] = (worker){p, i};
        if (pthread_create(&p->tids[i], NULL, worker_main, &p->workers[i]) != 0) break;
        started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    p->nthreads = started + 1;
    if (started == 0) {
        kiln__cpu_pool_destroy(p);
        return NULL;
    }
    return p;
}

void kiln__cpu_pool_destroy(struct kiln_cpu_pool *p)
{
    if (!p) return;
    if (p->pid == getpid()) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        atomic_fetch_add_explicit(&p->generation, 1, memory_order_release); /* ends the spins */
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int i = 1; i < p->nthreads; i++) pthread_join(p->tids[i], NULL);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->done);
        pthread_mutex_destroy(&p->mu);
    } /* else: a fork's child; the threads are not there, their records leak */
    free(p->tids);
    free(p->workers);
    free(p);
}

static kiln_cpu_state *cpu_state(kiln_ctx *ctx)
{
    return ctx && ctx->backend == &kiln__cpu_backend ? ctx->backend_state : NULL;
}

int kiln__cpu_workers(kiln_ctx *ctx, int64_t ntasks, int64_t work)
{
    kiln_cpu_state *s = cpu_state(ctx);
    if (!s || s->nthreads <= 1 || ntasks <= 1 || work < KILN_CPU_PAR_MIN) return 1;
    if (!s->pool && !s->pool_failed) {
        s->pool = pool_create(s->nthreads);
        s->pool_failed = s->pool == NULL;
    }
    if (!s->pool || s->pool->pid != getpid()) return 1;
    int64_t n = s->pool->nthreads;
    if (n > ntasks) n = ntasks;
    if (n > work / (KILN_CPU_PAR_MIN / 2)) n = work / (KILN_CPU_PAR_MIN / 2);
    return n < 1 ? 1 : (int)n;
}

void kiln__cpu_parallel(kiln_ctx *ctx, int nworkers, int64_t ntasks, int64_t cost, kiln_cpu_task_fn fn, void *arg)
{
    kiln_cpu_state *s = cpu_state(ctx);
    struct kiln_cpu_pool *p = s ? s->pool : NULL;
    if (nworkers <= 1 || !p || ntasks <= 1) {
        for (int64_t t = 0; t < ntasks; t++) fn(arg, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    p->nworkers = nworkers < p->nthreads ? nworkers : p->nthreads;
    p->joined = 0;
    atomic_store_explicit(&p->finished, 0, memory_order_relaxed);
    p->closed = 0;
    p->shared_jobs++;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    if (p->sleepers > 0 && cost >= KILN_CPU_WAKE_MIN) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);

    run_tasks(p, fn, arg, ntasks, 0);

    /* No thread joins after this; wait for those that did (spinning first). */
    pthread_mutex_lock(&p->mu);
    p->closed = 1;
    const uint64_t joined = (uint64_t)p->joined;
    pthread_mutex_unlock(&p->mu);
    if (!spin_until(&p->finished, joined, 0)) {
        pthread_mutex_lock(&p->mu);
        p->caller_waits = 1;
        while (atomic_load_explicit(&p->finished, memory_order_relaxed) < joined) pthread_cond_wait(&p->done, &p->mu);
        p->caller_waits = 0;
        pthread_mutex_unlock(&p->mu);
    }
}

void kiln__cpu_pool_stats(const kiln_ctx *ctx, int64_t *shared_jobs, int64_t *helped_tasks)
{
    const kiln_cpu_state *s = ctx && ctx->backend == &kiln__cpu_backend ? ctx->backend_state : NULL;
    struct kiln_cpu_pool *p = s ? s->pool : NULL;
    *shared_jobs = *helped_tasks = 0;
    if (!p || p->pid != getpid()) return;
    pthread_mutex_lock(&p->mu);
    *shared_jobs = p->shared_jobs;
    *helped_tasks = p->helped_tasks;
    pthread_mutex_unlock(&p->mu);
}
