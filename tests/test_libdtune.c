/* libdtune: the public API as a compiler would call it (include/dtune/dtune.h
 * only, through the shared library). */
#include <dtune/dtune.h>
#include <string.h>

#include "tests/dt_test.h"

static void test_version(void) { CU_ASSERT_STRING_EQUAL(dtune_version(), DTUNE_VERSION); }

static void test_workload_canonical(void)
{
    char out[256], err[256];
    CU_ASSERT_EQUAL(dtune_workload_canonical("dense(K=768, N=768, M=seq; seq=1..128)", out,
                                             sizeof out, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(out, "dense(M=1..128,N=768,K=768)");
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("dense(M=1..128)", out, sizeof out, err,
                                                 sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "dim N is missing"));
    /* too small an output buffer is an error, with the size needed */
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("dense(M=1..128,N=768,K=768)", out, 10, err,
                                                 sizeof err), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "28 bytes needed"));
    /* NULL err is allowed */
    CU_ASSERT_NOT_EQUAL(dtune_workload_canonical("nope", out, sizeof out, NULL, 0), 0);
}

static void test_target_key(void)
{
    char key[128], err[256];
    CU_ASSERT_EQUAL(dtune_target_key(key, sizeof key, err, sizeof err), 0);
    CU_ASSERT_TRUE(strlen(key) > 5);
    CU_ASSERT_PTR_NOT_NULL(strchr(key, '-'));
    CU_ASSERT_NOT_EQUAL(dtune_target_key(key, 4, err, sizeof err), 0);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"version", test_version},
        {"workload keys are canonicalized", test_workload_canonical},
        {"target key of this machine", test_target_key},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"libdtune", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
