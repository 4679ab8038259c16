/*
 * src/cuda/source.h — a growing string buffer for generated CUDA C and the prelude every
 * generated source starts with (source.c). Free of CUDA headers, like gemm_plan.h: the own
 * GEMM kernels' sources are generated without the toolkit too (the host emulator's tests).
 * Internal to src/cuda.
 */
#ifndef KILN_CUDA_SOURCE_H
#define KILN_CUDA_SOURCE_H

#include <stddef.h>

/* ---- source buffer -------------------------------------------------------------------- */

typedef struct kiln_sbuf {
    char *p;
    size_t len, cap;
    int oom;   /* set when a malloc failed; the text is then incomplete */
} kiln_sbuf;

void kiln__sbuf_printf(kiln_sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void kiln__sbuf_puts(kiln_sbuf *b, const char *s);
/* Room for `more` bytes and a terminator; 0 (and b->oom set) when a malloc failed. */
int kiln__sbuf_reserve(kiln_sbuf *b, size_t more);
void kiln__sbuf_free(kiln_sbuf *b);

/* The shared prelude of every generated source: numeric.h (Philox, conversions, SR), the
 * dtype load/store helpers and the block reductions. Appended to b. */
void kiln__cuda_prelude(kiln_sbuf *b);

#endif
