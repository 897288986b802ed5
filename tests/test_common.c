/* common/: error helpers, JSON value locations, file reads, DTUNE_LOG, lock
 * files. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/file.h"
#include "common/json_locate.h"
#include "common/lockfile.h"
#include "common/log.h"
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
    /* a directory is bad input (exit 2), not an I/O failure (issue: `dtune tune DIR` exited 3) */
    CU_ASSERT_EQUAL(dt_read_file(dir, 100, &text, &len, &e), DT_EINVAL);
    CU_ASSERT(strstr(e.msg, "not a regular file") != NULL);
    free(path);
    dt_test_rmtree(dir);
    free(dir);
}

/* Runs dt_log_init_from_env with DTUNE_LOG=value (NULL: unset); returns
 * what it wrote on stderr (malloc'ed). */
static char *init_log_with(const char *dir, const char *value)
{
    if (value)
        setenv("DTUNE_LOG", value, 1);
    else
        unsetenv("DTUNE_LOG");
    char path[1024];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    dt_log_init_from_env();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    return dt_test_slurp(path);
}

static void test_log_env(void)
{
    char *dir = dt_test_tmpdir();
    dt_log_level before = dt_log_get_level();
    dt_log_set_level(DT_LOG_WARN);

    /* a bad value: one warning naming it and the accepted ones; level kept */
    char *err = init_log_with(dir, "bogus");
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "DTUNE_LOG='bogus'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "error, warn, info, debug"));
    CU_ASSERT_EQUAL(dt_log_get_level(), DT_LOG_WARN);
    CU_ASSERT_PTR_NULL(getenv("DTUNE_LOG")); /* children do not repeat it */
    free(err);
    /* once per process */
    err = init_log_with(dir, "verbose");
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_EQUAL(dt_log_get_level(), DT_LOG_WARN);
    free(err);

    /* accepted values, any case, set the level silently */
    const char *ok[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        err = init_log_with(dir, ok[i]);
        CU_ASSERT_STRING_EQUAL(err, "");
        CU_ASSERT_EQUAL(dt_log_get_level(), (dt_log_level)i);
        free(err);
    }
    err = init_log_with(dir, "INFO");
    CU_ASSERT_EQUAL(dt_log_get_level(), DT_LOG_INFO);
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);
    /* unset or empty: nothing changes */
    dt_log_set_level(DT_LOG_ERROR);
    err = init_log_with(dir, NULL);
    CU_ASSERT_EQUAL(dt_log_get_level(), DT_LOG_ERROR);
    free(err);
    err = init_log_with(dir, "");
    CU_ASSERT_EQUAL(dt_log_get_level(), DT_LOG_ERROR);
    CU_ASSERT_STRING_EQUAL(err, "");
    free(err);

    unsetenv("DTUNE_LOG");
    dt_log_set_level(before);
    dt_test_rmtree(dir);
    free(dir);
}

static void test_lockfile(void)
{
    char *dir = dt_test_tmpdir();
    char path[1024];
    snprintf(path, sizeof path, "%s/x.db.lock", dir);
    dt_lockfile *l = NULL, *l2 = NULL;
    dt_err e;
    CU_ASSERT_EQUAL_FATAL(dt_lockfile_acquire(path, &l, NULL, &e), 0);
    char *text = dt_test_slurp(path);
    dt_lock_holder h;
    dt_lockfile_parse(text, &h);
    CU_ASSERT_EQUAL(h.pid, (long)getpid());
    CU_ASSERT(h.host[0] != '\0');
    CU_ASSERT(h.started[0] != '\0');
    free(text);

    /* another process is refused and told who holds it */
    pid_t child = fork();
    if (child == 0) {
        dt_lockfile *c = NULL;
        dt_lock_holder ch;
        dt_err ce;
        int rc = dt_lockfile_acquire(path, &c, &ch, &ce);
        char want[64];
        snprintf(want, sizeof want, "locked by pid %ld", (long)getppid());
        _exit(rc == DT_EBUSY && ch.pid == (long)getppid() && strstr(ce.msg, want) ? 0 : 1);
    }
    int st = 0;
    waitpid(child, &st, 0);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* released: taken again at once, by anyone */
    dt_lockfile_release(l);
    CU_ASSERT_EQUAL(dt_lockfile_acquire(path, &l2, NULL, &e), 0);
    dt_lockfile_release(l2);

    /* a holder killed with SIGKILL leaves the file, not the lock */
    child = fork();
    if (child == 0) {
        dt_lockfile *c = NULL;
        if (dt_lockfile_acquire(path, &c, NULL, NULL) == 0)
            pause();
        _exit(1);
    }
    int held = 0;
    for (int i = 0; i < 200 && !held; i++) {
        text = dt_test_slurp(path);
        dt_lockfile_parse(text, &h);
        held = h.pid == (long)child;
        free(text);
        if (!held)
            usleep(10000);
    }
    CU_ASSERT_TRUE(held);
    CU_ASSERT_EQUAL(dt_lockfile_acquire(path, &l2, &h, &e), DT_EBUSY);
    CU_ASSERT_EQUAL(h.pid, (long)child);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CU_ASSERT_EQUAL(dt_lockfile_acquire(path, &l2, NULL, &e), 0);
    dt_lockfile_release(l2);

    /* parsing is forgiving */
    dt_lockfile_parse("garbage\npid x\nhost a\001b\n", &h);
    CU_ASSERT_EQUAL(h.pid, 0);
    CU_ASSERT_STRING_EQUAL(h.host, "a b");
    dt_test_rmtree(dir);
    free(dir);
}

int main(void)
{
    CU_TestInfo tests[] = {
        {"error helpers and exit codes", test_errors},
        {"JSON value locations", test_json_locate},
        {"file reads", test_read_file},
        {"DTUNE_LOG values", test_log_env},
        {"lock files", test_lockfile},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {{"common", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return dt_test_main(suites);
}
