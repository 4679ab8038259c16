/*
 * tests/test_readme.c — keeps the README honest. It compiles examples/readme_example.c
 * (its main renamed) and runs it, so the README's example builds and works; it checks that
 * README.md contains the example file verbatim, that the environment variables and commands
 * the README documents are the ones the code reads, and that the source tree it maps exists.
 */
#include <sys/stat.h>

#include "check.h"

#define main readme_example_main
#include "../examples/readme_example.c"
#undef main
#undef TRY

/* The repository root, from this file's path (CMake compiles it by absolute path) or from
 * KILN_SOURCE_DIR. */
static void source_root(char *buf, size_t cap)
{
    const char *env = getenv("KILN_SOURCE_DIR");
    if (env && *env) {
        snprintf(buf, cap, "%s/", env);
        return;
    }
    snprintf(buf, cap, "%s", __FILE__);
    char *p = strstr(buf, "tests/test_readme.c");
    if (p)
        *p = '\0';
    else
        snprintf(buf, cap, "../");
}

/* The whole file as a NUL-terminated malloc'd string, or NULL. */
static char *slurp(const char *root, const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", root, rel);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return NULL;
    }
    char *s = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 65536;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                fclose(f);
                return NULL;
            }
            s = t;
        }
        size_t got = fread(s + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    fclose(f);
    s[n] = '\0';
    return s;
}

static int exists(const char *root, const char *rel)
{
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s%s", root, rel);
    return stat(path, &sb) == 0;
}

int main(void)
{
    char root[4096];
    source_root(root, sizeof root);

    /* 1. The example runs and its own checks pass (statuses, batch-norm rows mean 0 var 1). */
    CHECK_INT(readme_example_main(), 0);

    /* 2. README.md holds the example file verbatim. */
    char *readme = slurp(root, "README.md");
    char *example = slurp(root, "examples/readme_example.c");
    CHECK(readme != NULL);
    CHECK(example != NULL);
    if (readme && example) {
        int found = strstr(readme, example) != NULL;
        CHECK(found);
        if (!found)
            fprintf(stderr, "README.md does not contain examples/readme_example.c verbatim: copy the file "
                            "into the README's C block\n");
    }

    /* 3. What the README documents exists. */
    if (readme) {
        static const char *const mentions[] = {"make test",       "make bench",         "KILN_DEVICE",
                                               "KILN_TRACE=plan", "KILN_TEST_SEED",     "kiln_mem_get_stats",
                                               "kiln_mem_report", "kiln_mem_set_limit", "kiln_expr_retain"};
        for (size_t i = 0; i < sizeof mentions / sizeof mentions[0]; i++) {
            int has = strstr(readme, mentions[i]) != NULL;
            CHECK(has);
            if (!has) fprintf(stderr, "README.md does not mention %s\n", mentions[i]);
        }
        static const char *const tree[] = {"include/kiln.h", "src/core", "src/expr", "src/ops",  "src/cpu",
                                           "tests",          "tools",    "bench",    "Makefile", "CMakeLists.txt"};
        for (size_t i = 0; i < sizeof tree / sizeof tree[0]; i++) {
            int has = exists(root, tree[i]);
            CHECK(has);
            if (!has) fprintf(stderr, "the README's source map names %s, which does not exist\n", tree[i]);
        }
    }
    free(readme);
    free(example);
    return check_finish();
}
