/* End-to-end: `dtune measure` into a database, then `dtune model train` and
 * `dtune model stats` through the real binary; empty and too-small
 * databases are refused (exit 2). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/dt_test.h"

static char *g_dir;

static int setup(void)
{
    g_dir = dt_test_tmpdir();
    return g_dir ? 0 : 1;
}

static int teardown(void)
{
    dt_test_rmtree(g_dir);
    free(g_dir);
    return 0;
}

/* Runs dtune with args; returns its parsed stdout (NULL unless exit 0). */
static void test_train_and_stats(void)
{
    char args[2048];
    int code;
    dt_test_proc p;
    CU_ASSERT_EQUAL_FATAL(dt_test_run_dtune(&p,
                                            "measure 'dense(M=1..64,N=64,K=64)' --sample 6 "
                                            "--shapes '{1,3,8,17,32,64}' --min-time 1 "
                                            "--db '%s/m.db' --json",
                                            g_dir),
                          0);
    dt_test_proc_free(&p);

    snprintf(args, sizeof args, "model train --db '%s/m.db' --json", g_dir);
    json_t *t = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    json_int_t records = json_integer_value(json_object_get(t, "records"));
    CU_ASSERT_TRUE(records >= 30);
    json_t *tau = json_object_get(t, "kendall_tau");
    CU_ASSERT_TRUE(json_is_number(tau));
    double tv = json_number_value(tau);
    CU_ASSERT_TRUE(tv >= -1.0 && tv <= 1.0);
    printf("\n  holdout Kendall tau %.3f on %lld records\n", tv, (long long)records);
    CU_ASSERT_TRUE(json_integer_value(json_object_get(t, "holdout")) >= 1);
    CU_ASSERT_TRUE(json_integer_value(json_object_get(t, "model_bytes")) > 0);

    snprintf(args, sizeof args, "model stats --db '%s/m.db' --json", g_dir);
    json_t *s = dt_test_run_dtune_json(&code, args);
    CU_ASSERT_EQUAL_FATAL(code, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(s, "records")), records);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(s, "model_id")),
                    json_integer_value(json_object_get(t, "model_id")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(s, "model_bytes")),
                    json_integer_value(json_object_get(t, "model_bytes")));
    json_t *m = json_object_get(s, "metrics");
    CU_ASSERT_TRUE(json_is_number(json_object_get(m, "kendall_tau")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(m, "records")), records);
    json_decref(s);
    json_decref(t);

    /* text output, and another op has no model */
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model stats --db '%s/m.db'", g_dir), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "records:"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model stats --db '%s/m.db' --op batch_matmul", g_dir),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "no cost model"));
    dt_test_proc_free(&p);
}

static void test_empty_and_too_few(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL_FATAL(dt_test_run_dtune(&p, "db init --db '%s/empty.db'", g_dir), 0);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model stats --db '%s/empty.db'", g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "run dtune model train"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model train --db '%s/empty.db'", g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "run dtune measure first"));
    dt_test_proc_free(&p);

    CU_ASSERT_EQUAL_FATAL(dt_test_run_dtune(&p,
                                            "measure 'dense(M=1..64,N=64,K=64)' --sample 1 "
                                            "--shapes '{1,2}' --min-time 1 --db '%s/few.db'",
                                            g_dir),
                          0);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model train --db '%s/few.db'", g_dir), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.err, "at least 10"));
    dt_test_proc_free(&p);
}

static void test_usage(void)
{
    dt_test_proc p;
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "train"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model train --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(p.out, "--holdout"));
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model stats --help"), 0);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model frobnicate"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model train --holdout 2"), 1);
    dt_test_proc_free(&p);
    CU_ASSERT_EQUAL(dt_test_run_dtune(&p, "model stats --op conv3d"), 1);
    dt_test_proc_free(&p);
}

int main(void)
{
    /* kernels built by these tests go to a private cache */
    char *dir = dt_test_tmpdir();
    setenv("DTUNE_CACHE_DIR", dir, 1);
    CU_TestInfo tests[] = {
        {"measure, train, stats", test_train_and_stats},
        {"empty and too small databases", test_empty_and_too_few},
        {"usage", test_usage},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"e2e model", setup, teardown, NULL, NULL, tests},
                             CU_SUITE_INFO_NULL};
    int rc = dt_test_main(suites);
    dt_test_rmtree(dir);
    free(dir);
    return rc;
}
