/*
 * tests/test_core.c — statuses and their bands, version, dtype traits and promotion,
 * context creation (KILN_DEVICE parsing, bad arguments, the CPU fallback notice), seeds and
 * settings, NULL handles everywhere in the context API, and the environment-choice helper
 * (kiln__env_choice) the GEMM overrides are read with, and the KILN_* snapshot a GEMM call
 * holds (kiln__env_hold).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "check.h"
#include "core/internal.h"

static void test_status(void)
{
    CHECK(strcmp(kiln_status_name(KILN_ERR_OOM), "KILN_ERR_OOM") == 0);
    CHECK(strstr(kiln_status_string(KILN_ERR_OOM), "memory") != NULL);
    CHECK(KILN_ERR_OOM / 100 == 1 && KILN_ERR_SHAPE / 100 == 2 && KILN_ERR_UNSUPPORTED / 100 == 3 &&
          KILN_ERR_INTERNAL / 100 == 9);
    CHECK(strcmp(kiln_status_name((kiln_status)12345), "KILN_STATUS_UNKNOWN") == 0);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH);
    CHECK(strcmp(kiln_version(), v) == 0);
}

static void test_dtypes(void)
{
    CHECK(strcmp(kiln_dtype_name(KILN_DTYPE_BF16), "bf16") == 0);
    CHECK_INT(kiln_dtype_size(KILN_DTYPE_F64), 8);
    CHECK_INT(kiln_dtype_size(KILN_DTYPE_U8), 1);
    CHECK_INT(kiln_dtype_size((kiln_dtype)42), 0);
    CHECK(strcmp(kiln_dtype_name((kiln_dtype)42), "?") == 0);
    CHECK_INT(kiln_dtype_from_name("float16"), KILN_DTYPE_F16);
    CHECK_INT(kiln_dtype_from_name("int32"), KILN_DTYPE_I32);
    CHECK_INT(kiln_dtype_from_name("complex64"), KILN_DTYPE_AUTO);
    CHECK_INT(kiln_dtype_from_name(NULL), KILN_DTYPE_AUTO);
}

static void test_ctx(void)
{
    kiln_ctx *c = NULL;
    CHECK_FAILS(NULL, kiln_ctx_create(NULL, NULL), KILN_ERR_NULL, "'out'");
    CHECK_FAILS(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = (kiln_device)9}), KILN_ERR_ARG, "'args->device'");
    CHECK_FAILS(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.round = (kiln_round)7}), KILN_ERR_ARG, "'args->round'");
    CHECK(c == NULL);
    const char *old = getenv("KILN_DEVICE");
    char saved[64] = "";
    if (old) snprintf(saved, sizeof saved, "%s", old);
    setenv("KILN_DEVICE", "tpu", 1);
    CHECK_FAILS(NULL, kiln_ctx_create(&c, NULL), KILN_ERR_ARG, "KILN_DEVICE");
    setenv("KILN_DEVICE", "cpu", 1);
    CHECK_OK(NULL, kiln_ctx_create(&c, NULL));
    CHECK_INT(kiln_ctx_device(c), KILN_DEVICE_CPU);
    CHECK(strcmp(kiln_ctx_backend_name(c), "cpu") == 0);
    CHECK(strlen(kiln_ctx_device_description(c)) > 0);
    kiln_ctx_destroy(c);
    /* auto always gives a working context (cuda when a device answers, else cpu) */
    setenv("KILN_DEVICE", "auto", 1);
    CHECK_OK(NULL, kiln_ctx_create(&c, NULL));
    CHECK(kiln_ctx_device(c) == KILN_DEVICE_CPU || kiln_ctx_device(c) == KILN_DEVICE_CUDA);
    kiln_ctx_destroy(c);
    if (old) setenv("KILN_DEVICE", saved, 1);
    else unsetenv("KILN_DEVICE");

    CHECK_OK(NULL, kiln_ctx_create(&c, &(kiln_ctx_args){.device = KILN_DEVICE_CPU, .seed = 7}));
    CHECK_OK(c, kiln_ctx_set_seed(c, 11));
    CHECK_OK(c, kiln_ctx_set_round(c, KILN_ROUND_STOCHASTIC));
    CHECK_FAILS(c, kiln_ctx_set_round(c, KILN_ROUND_DEFAULT), KILN_ERR_ARG, "'round'");
    CHECK_OK(c, kiln_ctx_set_allow_tf32(c, 1));
    CHECK_OK(c, kiln_ctx_synchronize(c));
    CHECK(kiln_ctx_stream(c) == NULL); /* the CPU backend queues nothing */
    kiln_ctx_destroy(c);
    kiln_ctx_destroy(NULL);
    CHECK(kiln_ctx_stream(NULL) == NULL);

    CHECK_FAILS(NULL, kiln_ctx_set_seed(NULL, 1), KILN_ERR_NULL, "'ctx'");
    CHECK_FAILS(NULL, kiln_ctx_set_round(NULL, KILN_ROUND_NEAREST), KILN_ERR_NULL, "'ctx'");
    CHECK_FAILS(NULL, kiln_ctx_synchronize(NULL), KILN_ERR_NULL, "'ctx'");
    CHECK_INT(kiln_ctx_device(NULL), KILN_DEVICE_DEFAULT);
    CHECK(strcmp(kiln_last_error(NULL), "") != 0); /* the last context-less failure is kept */
}

/* kiln__env_choice: unset and empty give -1, each choice its position, anything else an
 * error naming the variable, the value and every choice */
static void test_env_choice(void)
{
    static const char *const three[] = {"cluster", "workspace", "slices"}, *const two[] = {"0", "1"};
    const char *name = "KILN_TEST_ENV_CHOICE";
    int i = 7;
    unsetenv(name);
    CHECK_OK(NULL, kiln__env_choice(NULL, "test", name, three, 3, &i));
    CHECK_INT(i, -1);
    setenv(name, "", 1);
    i = 7;
    CHECK_OK(NULL, kiln__env_choice(NULL, "test", name, three, 3, &i));
    CHECK_INT(i, -1);
    for (int k = 0; k < 3; k++) {
        setenv(name, three[k], 1);
        CHECK_OK(NULL, kiln__env_choice(NULL, "test", name, three, 3, &i));
        CHECK_INT(i, k);
    }
    setenv(name, "slice", 1);
    CHECK_FAILS(NULL, kiln__env_choice(NULL, "test", name, three, 3, &i), KILN_ERR_ARG,
                "test: environment variable KILN_TEST_ENV_CHOICE='slice' is not cluster, workspace or slices");
    CHECK_INT(i, -1);
    setenv(name, "2", 1);
    CHECK_FAILS(NULL, kiln__env_choice(NULL, "test", name, two, 2, &i), KILN_ERR_ARG, "='2' is not 0 or 1");
    unsetenv(name);
}

/* kiln__env_hold: while held, reads see the KILN_* variables as they were at the hold (only
 * those), choices read through it too; after the release, and at the next hold, the
 * environment as it is now; a snapshot that cannot hold every KILN_ variable is not taken. */
static void test_env_hold(void)
{
    kiln_ctx *ctx = NULL;
    CHECK_OK(NULL, kiln_ctx_create(&ctx, &(kiln_ctx_args){.device = KILN_DEVICE_CPU}));
    static const char *const two[] = {"cluster", "slices"};
    setenv("KILN_TEST_HOLD_A", "slices", 1);
    setenv("KILN_TEST_HOLD_AB", "cluster", 1);
    unsetenv("KILN_TEST_HOLD");
    setenv("NOT_KILN_TEST_HOLD_A", "x", 1);
    kiln__env_hold(ctx);
    CHECK(ctx->env_held);
    setenv("KILN_TEST_HOLD_A", "cluster", 1); /* changed under the hold: not seen until the next */
    setenv("KILN_TEST_HOLD", "new", 1);
    const char *v = kiln__env_get(ctx, "KILN_TEST_HOLD_A");
    CHECK(v && strcmp(v, "slices") == 0);
    v = kiln__env_get(ctx, "KILN_TEST_HOLD_AB"); /* a name that starts another's */
    CHECK(v && strcmp(v, "cluster") == 0);
    CHECK(kiln__env_get(ctx, "KILN_TEST_HOLD") == NULL);
    CHECK(kiln__env_get(ctx, "KILN_TEST") == NULL);
    CHECK(kiln__env_get(ctx, "NOT_KILN_TEST_HOLD_A") == NULL); /* only KILN_ names are kept */
    int i = -2;
    CHECK_OK(ctx, kiln__env_choice(ctx, "test", "KILN_TEST_HOLD_A", two, 2, &i));
    CHECK_INT(i, 1);
    kiln__env_release(ctx);
    v = kiln__env_get(ctx, "KILN_TEST_HOLD_A");
    CHECK(v && strcmp(v, "cluster") == 0);
    kiln__env_hold(ctx);
    v = kiln__env_get(ctx, "KILN_TEST_HOLD");
    CHECK(v && strcmp(v, "new") == 0);
    kiln__env_release(ctx);
    /* more KILN_ variables than the snapshot has room for: none taken, getenv answers */
    char name[64];
    for (int k = 0; k < 40; k++) {
        snprintf(name, sizeof name, "KILN_TEST_HOLD_MANY_%d", k);
        setenv(name, "1", 1);
    }
    kiln__env_hold(ctx);
    CHECK(!ctx->env_held);
    setenv("KILN_TEST_HOLD_A", "slices", 1);
    v = kiln__env_get(ctx, "KILN_TEST_HOLD_A");
    CHECK(v && strcmp(v, "slices") == 0);
    kiln__env_release(ctx);
    for (int k = 0; k < 40; k++) {
        snprintf(name, sizeof name, "KILN_TEST_HOLD_MANY_%d", k);
        unsetenv(name);
    }
    const char *names[] = {"KILN_TEST_HOLD_A", "KILN_TEST_HOLD_AB", "KILN_TEST_HOLD", "NOT_KILN_TEST_HOLD_A"};
    for (int k = 0; k < 4; k++) unsetenv(names[k]);
    kiln_ctx_destroy(ctx);
}

int main(void)
{
    test_status();
    test_dtypes();
    test_ctx();
    test_env_choice();
    test_env_hold();
    return check_finish();
}
