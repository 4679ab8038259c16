/*
 * src/cpu/cpu.h — internal declarations of the CPU backend (src/cpu). The backend's vtable
 * is kiln__cpu_backend (src/cpu/backend.c); the plan interpreter is src/cpu/exec.c; the GEMM
 * is src/cpu/gemm.c. Nothing here is public; everything runs on the calling thread.
 */
#ifndef KILN_CPU_CPU_H
#define KILN_CPU_CPU_H

#include "backend.h"
#include "core/internal.h"
#include "expr/plan.h"
#include "ops/dot.h"

/* Runs one kernel of a plan on the host (src/cpu/exec.c): block by block, without
 * full-size temporaries. The kernel is validated first; a malformed kernel gives
 * KILN_ERR_INTERNAL naming the instruction. Per-block buffers come from the context's
 * counting allocator (KILN_ERR_OOM under a memory limit). */
kiln_status kiln__cpu_exec_kernel(kiln_ctx *ctx, const kiln_plan_kernel *k);

/* Runs every kernel of the plan in order (src/cpu/exec.c). */
kiln_status kiln__cpu_run_plan(kiln_ctx *ctx, const kiln_plan *plan);

/* C = relu?(alpha A B + bias) + beta C per batch, on the host (src/cpu/gemm.c). */
kiln_status kiln__cpu_gemm(kiln_ctx *ctx, const kiln_gemm_desc *d);

#endif /* KILN_CPU_CPU_H */
