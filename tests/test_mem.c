/*
 * tests/test_mem.c — memory accounting: in use, peak, cached, live blocks, the report by
 * file:line and tensor name, the cap turning into a clean KILN_ERR_OOM that names the
 * largest live allocations (also for temporaries of an evaluation), two contexts that do
 * not see each other's numbers, and wrapped foreign memory (kiln_tensor_wrap): listed in
 * the report as external, never counted, capped or cached.
 */
#include "check.h"

static kiln_ctx *ctx;

static kiln_mem_stats stats(kiln_ctx *c)
{
    kiln_mem_stats s;
    memset(&s, 0xff, sizeof s);
    CHECK_OK(c, kiln_mem_get_stats(c, &s));
    return s;
}

static void test_counts(void)
{
    kiln_mem_stats s0 = stats(ctx);
    int64_t shape[2] = {100, 250};
    kiln_tensor *a = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 2, shape, &a));
    kiln_mem_stats s1 = stats(ctx);
    CHECK_INT(s1.in_use - s0.in_use, 100000);
    CHECK_INT(s1.live_blocks - s0.live_blocks, 1);
    CHECK(s1.peak >= s1.in_use);
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F64, 2, shape, &b));
    kiln_mem_stats s2 = stats(ctx);
    CHECK_INT(s2.in_use - s0.in_use, 300000);
    /* views cost nothing */
    kiln_tensor *v = NULL;
    CHECK_OK(ctx, kiln_tensor_transpose(b, 0, 1, &v));
    CHECK_INT(stats(ctx).in_use, s2.in_use);
    kiln_tensor_release(b);
    CHECK_INT(stats(ctx).in_use, s2.in_use); /* the view keeps b's storage */
    kiln_tensor_release(v);
    kiln_mem_stats s3 = stats(ctx);
    CHECK_INT(s3.in_use, s1.in_use);
    CHECK(s3.cached >= 200000);
    CHECK_INT(s3.peak, s2.peak);
    /* the cached block is reused for a same-size allocation */
    int64_t before = s3.total_allocs;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F64, 2, shape, &b));
    kiln_mem_stats s4 = stats(ctx);
    CHECK_INT(s4.total_allocs, before + 1);
    CHECK(s4.cached < s3.cached);
    kiln_tensor_release(b);
    CHECK_OK(ctx, kiln_mem_release_cached(ctx));
    CHECK_INT(stats(ctx).cached, 0);
    CHECK_OK(ctx, kiln_mem_reset_peak(ctx));
    CHECK_INT(stats(ctx).peak, stats(ctx).in_use);
    kiln_tensor_release(a);
    CHECK_INT(stats(ctx).in_use, s0.in_use);
}

static void test_report(void)
{
    int64_t shape[1] = {1000};
    kiln_tensor *w = NULL, *x = NULL, *y = NULL;
    CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_F32, 1, shape, &w)); int line_w = __LINE__;
    CHECK_OK(ctx, kiln_tensor_set_name(w, "weights"));
    for (int i = 0; i < 2; i++) {
        kiln_tensor *t = NULL;
        CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F64, 1, shape, &t)); /* same site twice */
        if (i == 0) x = t; else y = t;
    }
    size_t need = 0;
    CHECK_OK(ctx, kiln_mem_report(ctx, NULL, 0, &need));
    CHECK(need > 10);
    char *buf = malloc(need);
    CHECK_OK(ctx, kiln_mem_report(ctx, buf, need, NULL));
    char site[64];
    snprintf(site, sizeof site, "test_mem.c:%d", line_w);
    CHECK(strstr(buf, site) != NULL);
    CHECK(strstr(buf, "'weights'") != NULL);
    CHECK(strstr(buf, "2 x") != NULL);        /* the loop's site, grouped */
    CHECK(strstr(buf, "in use") != NULL);
    /* largest first: the 16000-byte group before the 4000-byte weights */
    CHECK(strstr(buf, "15.6 KiB") != NULL && strstr(buf, "15.6 KiB") < strstr(buf, "'weights'"));
    /* a short buffer is truncated and terminated */
    char small[20];
    memset(small, 'x', sizeof small);
    CHECK_OK(ctx, kiln_mem_report(ctx, small, sizeof small, &need));
    CHECK(small[19] == '\0' && strlen(small) == 19);
    free(buf);
    kiln_tensor_release(w);
    kiln_tensor_release(x);
    kiln_tensor_release(y);
    CHECK_FAILS(ctx, kiln_mem_report(ctx, NULL, 10, NULL), KILN_ERR_NULL, "'buf'");
}

static void test_cap(void)
{
    kiln_mem_stats s0 = stats(ctx);
    int64_t shape[1] = {250000}; /* 1 MB in f32 */
    kiln_tensor *big = NULL, *t = NULL;
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, shape, 3.0, &big));
    CHECK_OK(ctx, kiln_tensor_set_name(big, "big"));
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, s0.in_use + 1500000));
    CHECK_INT(stats(ctx).limit, s0.in_use + 1500000);
    CHECK_FAILS(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, shape, &t), KILN_ERR_OOM, "'big'");
    CHECK(t == NULL);
    CHECK(strstr(kiln_last_error(ctx), "test_mem.c") != NULL);
    CHECK(strstr(kiln_last_error(ctx), "limit") != NULL);
    /* an evaluation that needs a temporary fails cleanly, destination untouched:
     * big = big - mean(big) over all axes of a reversed view needs a copy of the overlap */
    int64_t small_shape[1] = {100000};
    kiln_tensor *small = NULL;
    CHECK_OK(ctx, kiln_tensor_full(ctx, KILN_DTYPE_F32, 1, small_shape, 1.0, &small));
    kiln_slice rev[1] = {KILN_SLICE_STEP(KILN_NONE, KILN_NONE, -1)};
    kiln_tensor *r = NULL;
    CHECK_OK(ctx, kiln_tensor_slice(big, 1, rev, &r));
    /* big = reversed(big) + 1 in place needs a temporary copy of big: 1 MB more than the cap allows */
    kiln_status st = kiln_assign(big, kiln_add(kiln_t(r), kiln_scalar(1)));
    CHECK_INT(st, KILN_ERR_OOM);
    float probe[4];
    kiln_tensor *head = NULL;
    kiln_slice h[1] = {KILN_SLICE(0, 4)};
    CHECK_OK(ctx, kiln_tensor_slice(big, 1, h, &head));
    CHECK_OK(ctx, kiln_tensor_read(head, probe, KILN_DTYPE_F32));
    CHECK(probe[0] == 3.0f && probe[3] == 3.0f);
    /* raising the cap makes the same call work */
    CHECK_OK(ctx, kiln_mem_set_limit(ctx, 0));
    CHECK_OK(ctx, kiln_assign(big, kiln_add(kiln_t(r), kiln_scalar(1))));
    CHECK_OK(ctx, kiln_tensor_read(head, probe, KILN_DTYPE_F32));
    CHECK(probe[0] == 4.0f);
    kiln_tensor_release(head);
    kiln_tensor_release(r);
    kiln_tensor_release(small);
    kiln_tensor_release(big);
    CHECK_INT(stats(ctx).in_use, s0.in_use);
}

static void test_two_contexts(void)
{
    kiln_ctx *other = NULL;
    CHECK_OK(NULL, kiln_ctx_create(&other, &(kiln_ctx_args){.device = kiln_ctx_device(ctx), .memory_limit = 4096}));
    int64_t shape[1] = {10000};
    kiln_tensor *a = NULL, *b = NULL;
    CHECK_OK(ctx, kiln_tensor_empty(ctx, KILN_DTYPE_F32, 1, shape, &a)); /* no cap here */
    CHECK_FAILS(other, kiln_tensor_empty(other, KILN_DTYPE_F32, 1, shape, &b), KILN_ERR_OOM, "limit");
    CHECK_INT(stats(other).in_use, 0);
    CHECK(stats(ctx).in_use >= 40000);
    /* the error went to `other`, not to ctx */
    CHECK(strstr(kiln_last_error(ctx), "limit") == NULL || strstr(kiln_last_error(other), "limit") != NULL);
    /* mixing contexts in one expression is refused */
    int64_t s1[1] = {4};
    CHECK_OK(other, kiln_tensor_zeros(other, KILN_DTYPE_F32, 1, s1, &b));
    kiln_tensor *c = NULL;
    CHECK_OK(ctx, kiln_tensor_zeros(ctx, KILN_DTYPE_F32, 1, s1, &c));
    CHECK_FAILS(ctx, kiln_assign(c, kiln_add(kiln_t(c), kiln_t(b))), KILN_ERR_CONTEXT, "context");
    kiln_tensor_release(c);
    kiln_tensor_release(b);
    kiln_tensor_release(a);
    /* destroying a context with live tensors keeps it until they go */
    kiln_tensor *keep = NULL;
    CHECK_OK(other, kiln_tensor_zeros(other, KILN_DTYPE_F32, 1, s1, &keep));
    kiln_ctx_destroy(other);
    float z[4] = {1, 1, 1, 1};
    CHECK_OK(NULL, kiln_tensor_read(keep, z, KILN_DTYPE_F32));
    CHECK(z[0] == 0 && z[3] == 0);
    kiln_tensor_release(keep);
    CHECK_FAILS(NULL, kiln_mem_get_stats(NULL, NULL), KILN_ERR_NULL, "'ctx'");
    CHECK_FAILS(NULL, kiln_mem_set_limit(NULL, 1), KILN_ERR_NULL, "'ctx'");
}

static void count_release(void *user)
{
    ++*(int *)user;
}

static void test_external(void)
{
    /* host buffers go into a CPU context (wrapping them on CUDA would break the contract) */
    kiln_ctx *cpu = NULL;
    CHECK_OK(NULL, kiln_ctx_create(&cpu, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}));
    int64_t shape[1] = {250000}; /* 1 MB of f32 */
    kiln_tensor *own = NULL;
    CHECK_OK(cpu, kiln_tensor_full(cpu, KILN_DTYPE_F32, 1, shape, 1.0, &own));
    kiln_mem_stats s0 = stats(cpu);
    /* a cap already reached does not refuse foreign memory */
    CHECK_OK(cpu, kiln_mem_set_limit(cpu, s0.in_use));
    float *buf = malloc(250000 * sizeof *buf);
    for (int i = 0; i < 250000; i++) buf[i] = (float)(i % 97) + 0.5f;
    kiln_tensor *w = NULL, *v = NULL;
    int released = 0;
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, buf, KILN_DTYPE_F32, 1, shape, NULL, count_release, &released, &w));
    int line_w = __LINE__ - 1;
    CHECK_OK(cpu, kiln_tensor_set_name(w, "foreign"));
    kiln_mem_stats s1 = stats(cpu);
    CHECK_INT(s1.in_use, s0.in_use);
    CHECK_INT(s1.peak, s0.peak);
    CHECK_INT(s1.live_blocks, s0.live_blocks);
    CHECK_INT(s1.total_allocs, s0.total_allocs);
    /* the report lists it apart, with its site and name */
    size_t need = 0;
    CHECK_OK(cpu, kiln_mem_report(cpu, NULL, 0, &need));
    char *rep = malloc(need);
    CHECK_OK(cpu, kiln_mem_report(cpu, rep, need, NULL));
    char site[64];
    snprintf(site, sizeof site, "test_mem.c:%d  'foreign'", line_w);
    const char *ext = strstr(rep, "external");
    CHECK(ext != NULL);
    CHECK(ext && strstr(ext, site) != NULL);                    /* under the external heading */
    CHECK(ext && strstr(ext, "976.6 KiB") != NULL);             /* 1,000,000 bytes */
    CHECK(strstr(rep, "in use 976.6 KiB in 1 blocks") != NULL); /* only kiln's own block counts */
    free(rep);
    /* views are free; work on it needs at most kiln's usual workspace (so no cap now) */
    CHECK_OK(cpu, kiln_mem_set_limit(cpu, 0));
    kiln_slice half[1] = {KILN_SLICE(0, 125000)};
    CHECK_OK(cpu, kiln_tensor_slice(w, 1, half, &v));
    CHECK_OK(cpu, kiln_assign(v, kiln_add(kiln_t(v), kiln_t(v))));
    CHECK(buf[3] == 7.0f && buf[200000] == (float)(200000 % 97) + 0.5f);
    CHECK_INT(stats(cpu).in_use, s0.in_use);
    kiln_tensor_release(w);
    CHECK_INT(released, 0); /* the view keeps it */
    kiln_tensor_release(v);
    CHECK_INT(released, 1);
    /* gone from the report, nothing cached: the foreign pointer never enters the cache */
    kiln_mem_stats s2 = stats(cpu);
    CHECK(s2.cached < s0.cached + 1000000); /* the workspace of the assignment at most */
    CHECK_INT(s2.in_use, s0.in_use);
    CHECK_OK(cpu, kiln_mem_report(cpu, NULL, 0, &need));
    rep = malloc(need);
    CHECK_OK(cpu, kiln_mem_report(cpu, rep, need, NULL));
    CHECK(strstr(rep, "external") == NULL);
    free(rep);
    /* a new allocation of the same size cannot get the foreign buffer back */
    kiln_tensor *fresh = NULL;
    CHECK_OK(cpu, kiln_tensor_empty(cpu, KILN_DTYPE_F32, 1, shape, &fresh));
    CHECK(kiln_tensor_data(fresh) != (void *)buf);
    kiln_tensor_release(fresh);
    kiln_tensor_release(own);
    free(buf);
    /* a wrapped tensor keeps its context alive, and the release runs at its end */
    float small[4] = {1, 2, 3, 4};
    int64_t four = 4;
    released = 0;
    CHECK_OK(cpu, kiln_tensor_wrap(cpu, small, KILN_DTYPE_F32, 1, &four, NULL, count_release, &released, &w));
    kiln_ctx_destroy(cpu);
    float back[4] = {0};
    CHECK_OK(NULL, kiln_tensor_read(w, back, KILN_DTYPE_F32));
    CHECK(back[3] == 4.0f);
    kiln_tensor_release(w);
    CHECK_INT(released, 1);
}

int main(void)
{
    kiln_status st = kiln_ctx_create(&ctx, NULL);
    if (st != KILN_OK) {
        fprintf(stderr, "no context: %s\n", kiln_last_error(NULL));
        return st == KILN_ERR_NO_DEVICE ? CHECK_SKIP : 1;
    }
    test_counts();
    test_report();
    test_cap();
    test_two_contexts();
    test_external();
    kiln_ctx_destroy(ctx);
    return check_finish();
}
