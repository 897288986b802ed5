/* Helpers shared by the CUnit suites: a main() runner, temporary
 * directories, and running the real `dtune` binary for end-to-end tests. */
#ifndef DT_TEST_H
#define DT_TEST_H

#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <jansson.h>

/* Registers the NULL-terminated suites, runs them verbosely and returns the
 * process exit code (0 only when every test passed and at least one ran). */
int dt_test_main(CU_SuiteInfo *suites);

/* Creates a fresh directory under $TMPDIR (or /tmp); returns a malloc'ed path. */
char *dt_test_tmpdir(void);
/* Removes a directory tree made by dt_test_tmpdir. */
void dt_test_rmtree(const char *path);
/* Writes text to dir/name; returns a malloc'ed full path. */
char *dt_test_write_file(const char *dir, const char *name, const char *text);

/* A file's contents (malloc'ed, NUL-terminated; "" if unreadable). */
char *dt_test_slurp(const char *path);

/* Result of running a command through /bin/sh. */
typedef struct {
    int exit_code;   /* exit status, or 128+signal when killed */
    char *out;       /* captured stdout (malloc'ed, NUL-terminated) */
    char *err;       /* captured stderr (malloc'ed, NUL-terminated) */
} dt_test_proc;

/* Runs `DTUNE_BIN <args>` (args is shell syntax) and captures its output. */
int dt_test_run_dtune(dt_test_proc *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void dt_test_proc_free(dt_test_proc *p);

/* Runs `DTUNE_BIN <args>` and parses its stdout as JSON: the value (caller
 * decrefs) when it exits 0, else NULL with the exit code and stderr printed.
 * *code receives the exit code. */
json_t *dt_test_run_dtune_json(int *code, const char *args);

#endif
