/*
 * tests/check.h — the small assert header of kiln's C tests. Each CHECK prints both sides
 * and the location on failure and counts the failure; a test's main ends with
 * `return check_finish();` which prints "N passed, N failed" and returns 0 or 1.
 * A test that needs something this machine lacks returns CHECK_SKIP (77, ctest's skip code).
 */
#ifndef KILN_TESTS_CHECK_H
#define KILN_TESTS_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

#define CHECK_SKIP 77

/* 1 in a build under AddressSanitizer or ThreadSanitizer (GCC's and Clang's spellings): tests
 * that start processes of their own or load libraries not built for one skip there */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CHECK_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CHECK_UNDER_SANITIZER 1
#endif
#endif
#ifndef CHECK_UNDER_SANITIZER
#define CHECK_UNDER_SANITIZER 0
#endif

static int check_passed_, check_failed_;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (cond) {                                                                          \
            check_passed_++;                                                                 \
        } else {                                                                             \
            check_failed_++;                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);        \
        }                                                                                    \
    } while (0)

#define CHECK_INT(a, b)                                                                      \
    do {                                                                                     \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                      \
        if (check_a_ == check_b_) {                                                          \
            check_passed_++;                                                                 \
        } else {                                                                             \
            check_failed_++;                                                                 \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld vs %lld\n", __FILE__, __LINE__, #a, #b, \
                    check_a_, check_b_);                                                     \
        }                                                                                    \
    } while (0)

/* |a - b| <= tol * max(1, |b|) */
#define CHECK_NEAR(a, b, tol)                                                                \
    do {                                                                                     \
        double check_a_ = (double)(a), check_b_ = (double)(b), check_t_ = (double)(tol);     \
        double check_s_ = fabs(check_b_) > 1.0 ? fabs(check_b_) : 1.0;                       \
        if (fabs(check_a_ - check_b_) <= check_t_ * check_s_ ||                              \
            (isnan(check_a_) && isnan(check_b_))) {                                          \
            check_passed_++;                                                                 \
        } else {                                                                             \
            check_failed_++;                                                                 \
            fprintf(stderr, "%s:%d: %s ~ %s failed: %.17g vs %.17g (tol %g)\n", __FILE__,   \
                    __LINE__, #a, #b, check_a_, check_b_, check_t_);                         \
        }                                                                                    \
    } while (0)

/* A kiln call that must succeed; prints the context's last error otherwise. */
#define CHECK_OK(ctx, call)                                                                  \
    do {                                                                                     \
        kiln_status check_s_ = (call);                                                       \
        if (check_s_ == KILN_OK) {                                                           \
            check_passed_++;                                                                 \
        } else {                                                                             \
            check_failed_++;                                                                 \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call,       \
                    kiln_status_name(check_s_), kiln_last_error(ctx));                       \
        }                                                                                    \
    } while (0)

/* A kiln call that must fail with `status` and a last-error message containing `needle`. */
#define CHECK_FAILS(ctx, call, status, needle)                                               \
    do {                                                                                     \
        kiln_status check_s_ = (call);                                                       \
        const char *check_m_ = kiln_last_error(ctx);                                         \
        if (check_s_ == (status) && strstr(check_m_, (needle)) != NULL) {                    \
            check_passed_++;                                                                 \
        } else {                                                                             \
            check_failed_++;                                                                 \
            fprintf(stderr, "%s:%d: %s: expected %s with \"%s\", got %s: \"%s\"\n",         \
                    __FILE__, __LINE__, #call, kiln_status_name(status), (needle),           \
                    kiln_status_name(check_s_), check_m_);                                   \
        }                                                                                    \
    } while (0)

static inline int check_finish(void)
{
    printf("%d passed, %d failed\n", check_passed_, check_failed_);
    return check_failed_ ? 1 : 0;
}

/* Test random numbers (independent of kiln's RNG): xorshift64*, seeded per test. */
static inline uint64_t check_rand_u64(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
/* Uniform in [lo, hi). */
static inline double check_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(check_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}
/* Fills a double buffer with fresh random values in [lo, hi). */
static inline void check_fill(uint64_t *s, double *buf, int64_t n, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) buf[i] = check_uniform(s, lo, hi);
}
/* A seed from the environment (KILN_TEST_SEED) or the clock, printed so a failure can be
 * replayed. */
static inline uint64_t check_seed(void)
{
    const char *e = getenv("KILN_TEST_SEED");
    uint64_t s = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull;
    if (s == 0) s = 1;
    printf("KILN_TEST_SEED=%" PRIu64 "\n", s);
    return s;
}

#endif /* KILN_TESTS_CHECK_H */
