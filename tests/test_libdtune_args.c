/* libdtune: every public entry point of include/dtune/dtune.h given NULL and
 * garbage (NULL handles, strings and out-pointers, zero sizes, negative
 * counts, absurd thread counts, non-regular paths) returns an error code
 * with a message (dtune_errmsg, and err for the two calls that take one):
 * never a crash.  The handle is an empty dtune database, so every call that
 * gets past its arguments ends in "not found", never in EINVAL.
 *
 * Linked like every other suite (the modules and libdtune.so); only
 * test_libdtune has the compiler's minimal link line. */
#include <dtune/dtune.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db.h"
#include "tests/dt_test.h"

#define KEY "dense(M=1..64,N=64,K=32)"

static dtune *g_h;

static int setup(void)
{
    if (dt_test_suite_init())
        return 1;
    dt_db *db = NULL;
    dt_err e;
    if (dt_db_open(dt_test_path("empty.db"), DT_DB_CREATE, &db, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    dt_db_close(db);
    if (dtune_open(dt_test_path("empty.db"), &g_h) != DTUNE_OK) {
        fprintf(stderr, "%s\n", dtune_errmsg());
        return 1;
    }
    return 0;
}

static int teardown(void)
{
    dtune_close(g_h);
    return dt_test_suite_cleanup();
}

/* The last call failed with code and dtune_errmsg names what. */
#define CHECK_FAIL(call, code, what)                                                        \
    do {                                                                                    \
        int rc_ = (call);                                                                   \
        CU_ASSERT_EQUAL(rc_, (code));                                                       \
        CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), (what)));                             \
        if (rc_ != (code) || !strstr(dtune_errmsg(), (what)))                               \
            fprintf(stderr, "\n  %s: %d '%s' (want %d, '%s')\n", #call, rc_, dtune_errmsg(), \
                    (code), (what));                                                        \
    } while (0)

static void test_identity(void)
{
    CU_ASSERT_PTR_NOT_NULL(dtune_version());
    char out[DTUNE_TARGET_MAX], err[128];
    /* the issue: dtune_target_key(NULL, 128, err, 64) crashed */
    strcpy(err, "unchanged");
    CHECK_FAIL(dtune_target_key(NULL, 128, err, 64), DTUNE_EINVAL, "out");
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "out"));
    CHECK_FAIL(dtune_target_key(NULL, 0, err, sizeof err), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_target_key(out, 0, err, sizeof err), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_target_key(out, 3, NULL, 64), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_target_key(NULL, 0, NULL, 0), DTUNE_EINVAL, "out");
    CU_ASSERT_EQUAL(dtune_target_key(out, sizeof out, NULL, 0), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(dtune_errmsg(), "");
    /* an err of size 0 is not written */
    err[0] = 'x';
    CU_ASSERT_EQUAL(dtune_target_key(out, 2, err, 0), DTUNE_EINVAL);
    CU_ASSERT_EQUAL(err[0], 'x');

    CHECK_FAIL(dtune_machine_key(NULL, 128), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_machine_key(NULL, 0), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_machine_key(out, 0), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_canonicalize(NULL, out, sizeof out), DTUNE_EINVAL, "key");
    CHECK_FAIL(dtune_canonicalize(KEY, NULL, 16), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_canonicalize(KEY, NULL, 0), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_canonicalize("", out, sizeof out), DTUNE_EINVAL, "");
    CHECK_FAIL(dtune_workload_canonical(NULL, out, sizeof out, err, sizeof err), DTUNE_EINVAL,
               "key");
    CHECK_FAIL(dtune_workload_canonical(KEY, NULL, 16, err, sizeof err), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_workload_canonical(KEY, out, 0, err, sizeof err), DTUNE_EINVAL,
               "too small");
    CHECK_FAIL(dtune_workload_canonical(KEY, NULL, 0, NULL, 99), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_workload_canonical("", out, sizeof out, NULL, 0), DTUNE_EINVAL, "");
    CU_ASSERT_NOT_EQUAL(dtune_errmsg()[0], '\0');
    /* a megabyte of garbage */
    size_t big = 1 << 20;
    char *junk = malloc(big + 1);
    memset(junk, '(', big);
    junk[big] = '\0';
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical(junk, out, sizeof out, err, sizeof err), 0);
    for (size_t i = 0; i < big; i++)
        junk[i] = (char)(1 + i % 255);
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical(junk, out, sizeof out, err, sizeof err), 0);
    free(junk);
    /* issue 42: a message quoting the caller's text escapes its control
     * characters, as the CLI does (a raw newline could forge a log line) */
    CU_ASSERT_EQUAL(dtune_workload_canonical("dense(M=1..8,\nN=16,\x1b[31mK=16)", out, sizeof out,
                                             err, sizeof err),
                    DTUNE_EINVAL);
    CU_ASSERT_PTR_NULL(strchr(dtune_errmsg(), '\n'));
    CU_ASSERT_PTR_NULL(strchr(dtune_errmsg(), '\x1b'));
    CU_ASSERT_PTR_NOT_NULL(strstr(dtune_errmsg(), "\\n"));
    CU_ASSERT_PTR_NULL(strchr(err, '\n'));
    CU_ASSERT_EQUAL(dtune_workload_canonical(KEY, out, sizeof out, NULL, 0), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(out, KEY);

    /* the back-end of an annotation for a workload's dtype */
#define ANN(extra)                                                                         \
    "{\"sketch\":\"blocked\",\"isa\":\"avx512\",\"mr\":16,\"nr\":32,\"kc\":256,"                 \
    "\"mc\":128,\"nc\":768,\"unroll\":1,\"prefetch\":0,\"store\":\"mask\","                      \
    "\"order\":\"m_inner\",\"par\":\"n\",\"threads\":1" extra "}"
    const char *a_vec = ANN(""), *a_amx = ANN(",\"unit\":\"amx\"");
#undef ANN
    char be[DTUNE_NAME_MAX];
    CU_ASSERT_EQUAL(dtune_backend(KEY, a_vec, be, sizeof be), DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(be, "f32/avx512");
    CU_ASSERT_EQUAL(dtune_backend("dense(M=1..8,N=32,K=32,dtype=bf16)", a_amx, be, sizeof be),
                    DTUNE_OK);
    CU_ASSERT_STRING_EQUAL(be, "bf16/amx");
    CHECK_FAIL(dtune_backend(NULL, a_vec, be, sizeof be), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_backend(KEY, NULL, be, sizeof be), DTUNE_EINVAL, "annotation");
    CHECK_FAIL(dtune_backend(KEY, a_vec, NULL, 64), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_backend(KEY, a_vec, be, 4), DTUNE_EINVAL, "too small");
    CHECK_FAIL(dtune_backend(KEY, "{\"mr\":", be, sizeof be), DTUNE_EINVAL, "annotation");
    CHECK_FAIL(dtune_backend(KEY, a_amx, be, sizeof be), DTUNE_EINVAL, "no back-end");
    CHECK_FAIL(dtune_backend("dense(M=", a_vec, be, sizeof be), DTUNE_EINVAL, "");

    /* any code has a name */
    const int codes[] = {0, -1, -10, -11, 1, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(dtune_errstr(codes[i]));
    CU_ASSERT_PTR_NOT_NULL(dtune_errmsg());
}

static void test_open_close(void)
{
    dtune *h = (dtune *)0x1;
    CHECK_FAIL(dtune_open(NULL, &h), DTUNE_EINVAL, "path");
    CU_ASSERT_PTR_NULL(h);
    CHECK_FAIL(dtune_open(dt_test_path("empty.db"), NULL), DTUNE_EINVAL, "out");
    h = (dtune *)0x1;
    CU_ASSERT_NOT_EQUAL(dtune_open("", &h), DTUNE_OK);
    CU_ASSERT_NOT_EQUAL(dtune_errmsg()[0], '\0');
    CU_ASSERT_PTR_NULL(h);
    /* a directory, a FIFO (which must not block), a device */
    CU_ASSERT_NOT_EQUAL(dtune_open(dt_test_suite_dir, &h), DTUNE_OK);
    CU_ASSERT_PTR_NULL(h);
    const char *fifo = dt_test_path("fifo.db");
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    alarm(20);
    CU_ASSERT_NOT_EQUAL(dtune_open(fifo, &h), DTUNE_OK);
    alarm(0);
    CU_ASSERT_PTR_NULL(h);
    CU_ASSERT_NOT_EQUAL(dtune_open("/dev/zero", &h), DTUNE_OK);
    CU_ASSERT_PTR_NULL(h);
    /* a path far longer than PATH_MAX */
    char *longp = malloc(3 * PATH_MAX);
    memset(longp, 'a', 3 * PATH_MAX - 1);
    longp[3 * PATH_MAX - 1] = '\0';
    CU_ASSERT_NOT_EQUAL(dtune_open(longp, &h), DTUNE_OK);
    CU_ASSERT_PTR_NULL(h);
    free(longp);

    dtune_close(NULL);
    dtune_free(NULL);
    dtune_set_refresh_ms(NULL, 5);
    dtune_set_refresh_ms(g_h, -1);
    dtune_set_refresh_ms(g_h, INT_MIN);
    dtune_set_refresh_ms(g_h, INT_MAX);
    dtune_set_refresh_ms(g_h, DTUNE_REFRESH_MS);
}

static void test_lookup(void)
{
    dtune_schedule s;
    CHECK_FAIL(dtune_lookup(NULL, KEY, "M=3", NULL, 0, &s), DTUNE_EINVAL, "db");
    CHECK_FAIL(dtune_lookup(g_h, NULL, "M=3", NULL, 0, &s), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_lookup(g_h, KEY, NULL, NULL, 0, &s), DTUNE_EINVAL, "shape");
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", NULL, 0, NULL), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", NULL, -1, &s), DTUNE_EINVAL, "threads");
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", NULL, INT_MIN, &s), DTUNE_EINVAL, "threads");
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", NULL, INT_MAX, &s), DTUNE_EINVAL, "threads");
    CHECK_FAIL(dtune_lookup(g_h, "", "M=3", NULL, 0, &s), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", "", 0, &s), DTUNE_EINVAL, "target");
    CU_ASSERT_NOT_EQUAL(dtune_lookup(g_h, "not a key", "M=3", NULL, 0, &s), DTUNE_OK);
    CU_ASSERT_NOT_EQUAL(dtune_lookup(g_h, KEY, "M=", NULL, 0, &s), DTUNE_OK);
    CU_ASSERT_NOT_EQUAL(dtune_lookup(g_h, KEY, "garbage\x1b[2J", "x86_64-\x01", 0, &s),
                        DTUNE_OK);
    /* the arguments are fine: only the schedule is missing */
    CHECK_FAIL(dtune_lookup(g_h, KEY, "M=3", NULL, 1, &s), DTUNE_ENOTFOUND, "");

    int64_t v = 3;
    CHECK_FAIL(dtune_lookup_values(NULL, KEY, &v, 1, NULL, 0, &s), DTUNE_EINVAL, "db");
    CHECK_FAIL(dtune_lookup_values(g_h, NULL, &v, 1, NULL, 0, &s), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, NULL, 1, NULL, 0, &s), DTUNE_EINVAL, "vals");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, -1, NULL, 0, &s), DTUNE_EINVAL, "nvals");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, INT_MIN, NULL, 0, &s), DTUNE_EINVAL, "nvals");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, INT_MAX, NULL, 0, &s), DTUNE_EINVAL, "nvals");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, 1, NULL, 0, NULL), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, 1, NULL, -5, &s), DTUNE_EINVAL, "threads");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, 1, NULL, INT_MAX, &s), DTUNE_EINVAL,
               "threads");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, 1, "", 0, &s), DTUNE_EINVAL, "target");
    CHECK_FAIL(dtune_lookup_values(g_h, KEY, &v, 1, NULL, 0, &s), DTUNE_ENOTFOUND, "");
}

static void test_source_export(void)
{
    char *src = (char *)0x1;
    CHECK_FAIL(dtune_kernel_source(NULL, 1, NULL, &src), DTUNE_EINVAL, "db");
    CU_ASSERT_PTR_NULL(src);
    CHECK_FAIL(dtune_kernel_source(g_h, 1, NULL, NULL), DTUNE_EINVAL, "src");
    src = (char *)0x1;
    CHECK_FAIL(dtune_kernel_source(g_h, -1, NULL, &src), DTUNE_EINVAL, "kernel");
    CU_ASSERT_PTR_NULL(src);
    CHECK_FAIL(dtune_kernel_source(g_h, 0, NULL, &src), DTUNE_EINVAL, "kernel");
    CHECK_FAIL(dtune_kernel_source(g_h, INT64_MIN, KEY, &src), DTUNE_EINVAL, "kernel");
    CHECK_FAIL(dtune_kernel_source(g_h, 1, "", &src), DTUNE_EINVAL, "workload");
    CU_ASSERT_NOT_EQUAL(dtune_kernel_source(g_h, 1, "dense(", &src), DTUNE_OK);
    CU_ASSERT_PTR_NULL(src);
    CHECK_FAIL(dtune_kernel_source(g_h, INT64_MAX, NULL, &src), DTUNE_ENOTFOUND, "");
    CU_ASSERT_PTR_NULL(src);

    const char *out = dt_test_path("k.c");
    CHECK_FAIL(dtune_export(NULL, KEY, NULL, 0, out), DTUNE_EINVAL, "db");
    CHECK_FAIL(dtune_export(g_h, NULL, NULL, 0, out), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_export(g_h, KEY, NULL, 0, NULL), DTUNE_EINVAL, "out_c_path");
    CHECK_FAIL(dtune_export(g_h, KEY, NULL, 0, ""), DTUNE_EINVAL, "out_c_path");
    CHECK_FAIL(dtune_export(g_h, "", NULL, 0, out), DTUNE_EINVAL, "workload");
    CHECK_FAIL(dtune_export(g_h, KEY, "", 0, out), DTUNE_EINVAL, "target");
    CHECK_FAIL(dtune_export(g_h, KEY, NULL, -1, out), DTUNE_EINVAL, "threads");
    CHECK_FAIL(dtune_export(g_h, KEY, NULL, INT_MAX, out), DTUNE_EINVAL, "threads");
    CU_ASSERT_NOT_EQUAL(dtune_export(g_h, KEY, NULL, 0, dt_test_suite_dir), DTUNE_OK);
    CU_ASSERT_NOT_EQUAL(dtune_errmsg()[0], '\0');
    CHECK_FAIL(dtune_export(g_h, KEY, NULL, 0, out), DTUNE_ENOTFOUND, "");
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat(out, &st), 0); /* nothing written */
}

/* The kernel calls with NULL handles, ids out of range and NULL out-pointers
 * (their checks on a loaded kernel: tests/test_libdtune_kernel.c). */
static void test_kernel_calls(void)
{
    dtune_kernel *k = (dtune_kernel *)0x1;
    CHECK_FAIL(dtune_kernel_load(NULL, 1, &k), DTUNE_EINVAL, "db");
    CU_ASSERT_PTR_NULL(k);
    CHECK_FAIL(dtune_kernel_load(g_h, 1, NULL), DTUNE_EINVAL, "out");
    CHECK_FAIL(dtune_kernel_load(g_h, 0, &k), DTUNE_EINVAL, "kernel id");
    CHECK_FAIL(dtune_kernel_load(g_h, INT64_MIN, &k), DTUNE_EINVAL, "kernel id");
    CHECK_FAIL(dtune_kernel_load(g_h, INT64_MAX, &k), DTUNE_ENOTFOUND, "no kernel");
    CU_ASSERT_PTR_NULL(k);
    dtune_kernel_info in;
    size_t bytes;
    int64_t dims[3] = {1, 1, 1};
    dtune_kernel_args a = {.dims = dims};
    CHECK_FAIL(dtune_kernel_info_get(NULL, &in), DTUNE_EINVAL, "k is NULL");
    CHECK_FAIL(dtune_kernel_packed_size(NULL, dims, 3, &bytes), DTUNE_EINVAL, "k is NULL");
    CHECK_FAIL(dtune_kernel_pack(NULL, dims, 3, dims, NULL, dims, 8), DTUNE_EINVAL, "k is NULL");
    CHECK_FAIL(dtune_kernel_run(NULL, &a), DTUNE_EINVAL, "k is NULL");
    dtune_kernel_close(NULL);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"version, target key, canonical keys, errstr: NULL and garbage", test_identity},
        {"dtune_open / close / set_refresh_ms: NULL, empty, FIFO, device", test_open_close},
        {"dtune_lookup / lookup_values: NULL, counts, threads", test_lookup},
        {"dtune_kernel_source / export: NULL, ids, paths, threads", test_source_export},
        {"dtune_kernel_*: NULL, ids", test_kernel_calls},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"libdtune arguments", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
