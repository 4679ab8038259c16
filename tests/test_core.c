/*
 * tests/test_core.c — statuses and their bands, version, dtype traits and promotion,
 * context creation (KILN_DEVICE parsing, bad arguments, the CPU fallback notice), seeds and
 * settings, NULL handles everywhere in the context API, and the environment-choice helper
 * (kiln__env_choice) the GEMM overrides are read with.
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

int main(void)
{
    test_status();
    test_dtypes();
    test_ctx();
    test_env_choice();
    return check_finish();
}
