/*
 * src/cpu/cpu.h — internal declarations of the CPU backend (src/cpu). The backend's vtable
 * is kiln__cpu_backend (src/cpu/backend.c); the plan interpreter is src/cpu/exec.c; the GEMM
 * is src/cpu/gemm.c; the worker threads are src/cpu/pool.c. Nothing here is public.
 * Work is shared among the context's threads so that every result is bit for bit the same
 * for any thread count (see exec.c and gemm.c for how each splits its work).
 */
#ifndef KILN_CPU_CPU_H
#define KILN_CPU_CPU_H

#include "backend.h"
#include "core/internal.h"
#include "expr/plan.h"
#include "ops/dot.h"

/* ---- threads (src/cpu/pool.c) --------------------------------------------------------- */

struct kiln_cpu_pool;

/* The CPU backend's state of a context (ctx->backend_state). */
typedef struct kiln_cpu_state {
    int nthreads;               /* threads to run on, the caller's included (>= 1) */
    struct kiln_cpu_pool *pool; /* the other nthreads - 1; NULL until first needed */
    int pool_failed;            /* no thread could be started: stay on the calling thread */
} kiln_cpu_state;

/* One task of a job: task in [0, ntasks), worker in [0, nworkers) (0 = the caller). */
typedef void (*kiln_cpu_task_fn)(void *arg, int64_t task, int worker);

/* How many workers a job of ntasks tasks and `work` elements in all should run on: 1 (the
 * calling thread alone) for small work, one thread, or a context of another backend; else
 * at most the context's thread count. Starts the pool at the first call that needs it
 * (when no thread can be started, every job stays on the calling thread). The caller sizes
 * per-worker scratch by the answer, then calls kiln__cpu_parallel with it. */
int kiln__cpu_workers(kiln_ctx *ctx, int64_t ntasks, int64_t work);

/* Runs fn(arg, t, w) for every t in [0, ntasks) on up to nworkers workers (kiln__cpu_workers's
 * answer; the caller is worker 0) and returns when all are done; what the tasks wrote is
 * then visible to the caller. cost estimates the job in instruction-points (points times the
 * cost of their instructions, about 0.1 ns each here); threads that are asleep are woken only
 * for a cost of KILN_CPU_WAKE_MIN or more. Which worker runs which task varies: a task's
 * result must not depend on w, and tasks must not write what other tasks read. Tasks
 * cannot fail. */
void kiln__cpu_parallel(kiln_ctx *ctx, int nworkers, int64_t ntasks, int64_t cost, kiln_cpu_task_fn fn, void *arg);

/* Stops and joins the pool's threads (NULL-safe). */
void kiln__cpu_pool_destroy(struct kiln_cpu_pool *pool);

/* For tests: jobs shared with the pool so far, and tasks the pool's threads ran (0 and 0
 * before the pool exists). */
void kiln__cpu_pool_stats(const kiln_ctx *ctx, int64_t *shared_jobs, int64_t *helped_tasks);

/* ---- plans and GEMM ------------------------------------------------------------------- */

/* Runs one kernel of a plan on the host (src/cpu/exec.c): block by block, without
 * full-size temporaries, on the context's threads. The kernel is validated first; a
 * malformed kernel gives KILN_ERR_INTERNAL naming the instruction. Per-block buffers, one set
 * per worker, come from the context's counting allocator (when a memory limit leaves no room
 * for several sets the kernel runs on one; KILN_ERR_OOM when not even that fits). */
kiln_status kiln__cpu_exec_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k);

/* Runs every kernel of the plan in order (src/cpu/exec.c). */
kiln_status kiln__cpu_run_plan(kiln_ctx *ctx, const kiln_plan *plan);

/* C = relu?(alpha A B + bias) + beta C per batch, on the host (src/cpu/gemm.c); the built-in
 * engine on the context's threads. */
kiln_status kiln__cpu_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d);

#endif /* KILN_CPU_CPU_H */
