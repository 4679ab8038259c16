/*
 * tests/nvrtc_compile.h — NVRTC for the tests that compile kernel sources on a machine with
 * the CUDA toolkit and no GPU (test_gemm_nvrtc: the own GEMM kernels; test_codegen_nvrtc:
 * the expression engine's kernels): its entry points by dlsym (no link dependency, so
 * CPU-only builds run these tests too, skipping) and one compile as the backend does it
 * (src/cuda/nvrtc.c's options) for sm_90a, with ptxas's register and spill report.
 */
#ifndef KILN_TESTS_NVRTC_COMPILE_H
#define KILN_TESTS_NVRTC_COMPILE_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* NVRTC's entry points, by dlsym (no link dependency: CPU-only builds run this too) */
typedef struct nvrtc_api {
    int (*create)(void **prog, const char *src, const char *name, int nh, const char *const *h,
                  const char *const *hn);
    int (*compile)(void *prog, int nopt, const char *const *opts);
    int (*log_size)(void *prog, size_t *n);
    int (*log)(void *prog, char *log);
    int (*destroy)(void **prog);
    const char *(*error)(int r);
} nvrtc_api;

static int load_nvrtc(nvrtc_api *api)
{
    static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12",
                                        "/usr/local/cuda/lib64/libnvrtc.so"};
    void *h = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return 0;
    *(void **)&api->create = dlsym(h, "nvrtcCreateProgram");
    *(void **)&api->compile = dlsym(h, "nvrtcCompileProgram");
    *(void **)&api->log_size = dlsym(h, "nvrtcGetProgramLogSize");
    *(void **)&api->log = dlsym(h, "nvrtcGetProgramLog");
    *(void **)&api->destroy = dlsym(h, "nvrtcDestroyProgram");
    *(void **)&api->error = dlsym(h, "nvrtcGetErrorString");
    return api->create && api->compile && api->log_size && api->log && api->destroy && api->error;
}

/* Compiles src (malloc'd; freed here) as the backend does, for sm_90a; 1 on success. The
 * ptxas report's register and spill counts into *regs and *spill (bytes of spill stores). */
static int compile(const nvrtc_api *api, char *src, const char *what, int *regs, int *spill)
{
    *regs = -1;
    *spill = -1;
    if (!src) {
        fprintf(stderr, "  %s: no source\n", what);
        return 0;
    }
    void *prog = NULL;
    int r = api->create(&prog, src, what, 0, NULL, NULL);
    if (r != 0) {
        fprintf(stderr, "  %s: nvrtcCreateProgram: %s\n", what, api->error(r));
        free(src);
        return 0;
    }
    const char *opts[] = {"--gpu-architecture=sm_90a", "--fmad=false", "-default-device", "--std=c++17", "-w",
                          "--ptxas-options=-v"};
    r = api->compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
    size_t n = 0;
    api->log_size(prog, &n);
    char *log = malloc(n + 1);
    if (log) {
        log[0] = 0;
        api->log(prog, log);
        log[n] = 0;
        const char *p = strstr(log, "bytes spill stores");
        if (p) {
            const char *q = p;
            while (q > log && q[-1] == ' ') q--;
            while (q > log && q[-1] >= '0' && q[-1] <= '9') q--;
            *spill = atoi(q);
        }
        p = strstr(log, "Used ");
        if (p) *regs = atoi(p + 5);
    }
    if (r != 0) fprintf(stderr, "  %s: %s\n%s\n", what, api->error(r), log ? log : "");
    free(log);
    api->destroy(&prog);
    free(src);
    return r == 0;
}

/* NVRTC loaded into *api where this run can compile: 0 (with the reason printed) under a
 * sanitizer (NVRTC is not built for one) or where no NVRTC library loads; the caller then
 * skips. */
static int nvrtc_ready(nvrtc_api *api)
{
    if (CHECK_UNDER_SANITIZER) {
        printf("under a sanitizer: skipped (NVRTC is not built for one)\n");
        return 0;
    }
    if (!load_nvrtc(api)) {
        printf("no NVRTC library loads here: skipped\n");
        return 0;
    }
    return 1;
}

#endif /* KILN_TESTS_NVRTC_COMPILE_H */
