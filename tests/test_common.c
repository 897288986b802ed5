/* common/: error helpers, JSON value locations, file reads. */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "common/json_locate.h"
#include "tests/dt_test.h"

static void test_errors(void)
{
    dt_err e;
    CU_ASSERT_EQUAL(dt_errf(&e, DT_EINVAL, "bad %s", "thing"), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "bad thing");
    CU_ASSERT_EQUAL(dt_err_prefix(&e, "file %d", 3), DT_EINVAL);
    CU_ASSERT_STRING_EQUAL(e.msg, "file 3: bad thing");
    CU_ASSERT_EQUAL(dt_errf(NULL, DT_EIO, "dropped"), DT_EIO);
    dt_err_clear(&e);
    CU_ASSERT_EQUAL(e.code, DT_OK);
    CU_ASSERT_STRING_EQUAL(e.msg, "");
    CU_ASSERT_EQUAL(dt_exit_code(DT_OK), 0);
    CU_ASSERT_EQUAL(dt_exit_code(DT_EINVAL), 2);
    CU_ASSERT_EQUAL(dt_exit_code(DT_ENOTDTUNE), 2);
    CU_ASSERT_EQUAL(dt_exit_code(DT_EIO), 3);
    CU_ASSERT_EQUAL(dt_exit_code(DT_EDB), 3);
    CU_ASSERT_STRING_EQUAL(dt_strerror(DT_EDB), "database error");
    /* a long message is cut, never overflows */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    dt_errf(&e, DT_EINVAL, "%s", big);
    dt_err_prefix(&e, "%s", big);
    CU_ASSERT_EQUAL(strlen(e.msg), DT_ERR_MSG_MAX - 1);
}

static void test_json_locate(void)
{
    const char *text = "{\n  \"a\": [1, {\"b\": \"x\"}],\n  \"c\\\"d\": 5,\n  \"e\": {}\n}";
    int line, col;
    dt_json_seg p1[] = {{"a", 0}, {NULL, 1}, {"b", 0}};
    CU_ASSERT_EQUAL(dt_json_locate(text, strlen(text), p1, 3, 0, &line, &col), 0);
    CU_ASSERT_EQUAL(line, 2);
    CU_ASSERT_EQUAL(col, 18);
    CU_ASSERT_EQUAL(dt_json_locate(text, strlen(text), p1, 3, 1, &line, &col), 0);
    CU_ASSERT_EQUAL(col, 13);
    dt_json_seg p2[] = {{"c\"d", 0}};
    CU_ASSERT_EQUAL(dt_json_locate(text, strlen(text), p2, 1, 0, &line, &col), 0);
    CU_ASSERT_EQUAL(line, 3);
    CU_ASSERT_EQUAL(col, 11);
    dt_json_seg p3[] = {{"a", 0}, {NULL, 7}};
    CU_ASSERT_EQUAL(dt_json_locate(text, strlen(text), p3, 2, 0, &line, &col), -1);
    CU_ASSERT_EQUAL(line, 2); /* the deepest value found: the array */
    CU_ASSERT_EQUAL(col, 8);
    dt_json_seg p4[] = {{"zz", 0}};
    CU_ASSERT_EQUAL(dt_json_locate(text, strlen(text), p4, 1, 0, &line, &col), -1);
    CU_ASSERT_EQUAL(line, 1);
    CU_ASSERT_EQUAL(col, 1);
    /* truncated text does not read past its end */
    CU_ASSERT_EQUAL(dt_json_locate(text, 12, p1, 3, 0, &line, &col), -1);
}

static void test_read_file(void)
{
    char *dir = dt_test_tmpdir();
    char *path = dt_test_write_file(dir, "f.txt", "hello");
    char *text;
    size_t len;
    dt_err e;
    CU_ASSERT_EQUAL(dt_read_file(path, 100, &text, &len, &e), 0);
    CU_ASSERT_EQUAL(len, 5);
    CU_ASSERT_STRING_EQUAL(text, "hello");
    free(text);
    CU_ASSERT_EQUAL(dt_read_file(path, 4, &text, &len, &e), DT_EINVAL);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "at most 4"));
    char missing[1024];
    snprintf(missing, sizeof missing, "%s/missing.json", dir);
    CU_ASSERT_EQUAL(dt_read_file(missing, 100, &text, &len, &e), DT_ENOTFOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "missing.json"));
    CU_ASSERT_EQUAL(dt_read_file(dir, 100, &text, &len, &e), DT_EIO); /* a directory */
    free(path);
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"error helpers and exit codes", test_errors},
        {"JSON value locations", test_json_locate},
        {"file reads", test_read_file},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"common", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
